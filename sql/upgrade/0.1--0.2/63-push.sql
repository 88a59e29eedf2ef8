-- The push server's role, parca_push (sql/92_push.sql; parca-server, in server/).
--
-- parca_push: the rights parca-server needs to store a pushed profile and
-- no more (parca_ingest_pprof as its caller).  A group role (NOLOGIN):
-- parca-server logs in as a role of its own that may SET ROLE to each role
-- its credentials name, and each of those is a member of parca_push:
--   CREATE ROLE parca_server LOGIN NOINHERIT PASSWORD '...';
--   CREATE ROLE push_team_a NOLOGIN IN ROLE parca_push;
--   GRANT push_team_a TO parca_server;
-- (docs/push.md, "Roles").  Roles belong to the cluster, so a second
-- database's CREATE EXTENSION reuses the role.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) 'parca_push') THEN
        CREATE ROLE parca_push NOLOGIN;
    END IF;
END
$$;
-- parca_ingest_pprof writes as its caller: the metastore's INSERT ... ON
-- CONFLICT (id) reads the ids, a location that gains lines is updated,
-- the series is looked up and inserted if new, the rows are inserted.
GRANT USAGE ON SCHEMA parca TO parca_push;
GRANT EXECUTE ON FUNCTION parca_ingest_pprof(bytea, text, jsonb) TO parca_push;
GRANT INSERT ON parca.samples TO parca_push;
GRANT SELECT, INSERT ON parca.series TO parca_push;
GRANT INSERT, SELECT (id) ON parca.mappings, parca.functions TO parca_push;
GRANT INSERT, SELECT (id, function_ids), UPDATE (function_ids, line_numbers) ON parca.locations
    TO parca_push;
