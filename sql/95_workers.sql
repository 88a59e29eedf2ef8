-- The background workers (src/workers/, docs/workers.md): the launcher
-- starts, in every database that has the extension, its maintenance
-- worker, and its scrape worker where a scrape job is enabled.  One row per
-- worker the launcher wants running, in every database of the server.
CREATE FUNCTION parca.worker_states(
    OUT database text, OUT worker text, OUT pid integer, OUT state text,
    OUT since timestamptz, OUT note text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'parca_worker_states' LANGUAGE C STRICT;

CREATE VIEW parca.workers AS
    SELECT database, worker, pid, state, since, note FROM parca.worker_states();
COMMENT ON VIEW parca.workers IS 'the parca background workers of every database: running, starting, waiting for a worker slot, restarting';
