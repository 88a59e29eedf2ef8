-- parca for PostgreSQL, install script.
-- Assembled by the Makefile from the numbered parts in sql/; each part
-- belongs to one concern of src/.

\echo Use "CREATE EXTENSION parca" to load this file. \quit

CREATE SCHEMA parca;
COMMENT ON SCHEMA parca IS 'parca: metastore, series and samples of stored profiles';
