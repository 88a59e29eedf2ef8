-- parca 0.1 to 0.2 (assembled from sql/upgrade/0.1--0.2/, in order; each
-- part takes a 0.1 database one step towards what a fresh 0.2 install
-- has, which test/upgrade checks with pg_dump).

\echo Use "ALTER EXTENSION parca UPDATE" to load this file. \quit
