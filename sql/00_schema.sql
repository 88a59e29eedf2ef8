-- parca for PostgreSQL, install script.
-- Assembled by the Makefile from the numbered parts in sql/; each part
-- belongs to one concern of src/.

\echo Use "CREATE EXTENSION parca" to load this file. \quit

-- SQL and PL/pgSQL function bodies are parsed when they run, with the
-- caller's search_path, where anyone who may create objects in a schema
-- ahead of pg_catalog (or in public, which the database owner owns) could
-- put an operator or function of their own.  So every such function here
-- either runs with SET search_path = pg_catalog, pg_temp and names the
-- extension's objects with their schema, or, if the planner inlines it
-- (which SET prevents) or it is called per row (SET costs some 13,000
-- instructions a call), names everything with its schema, operators
-- included: OPERATOR(pg_catalog.=).  See docs/security.md.

CREATE SCHEMA parca;
COMMENT ON SCHEMA parca IS 'parca: metastore, series and samples of stored profiles';
