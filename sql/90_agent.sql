-- The eBPF agent's side (parca-agent, in agent/).
--
-- Each batch the agent writes is one transaction that first records
-- (node, batch_id) here; a batch retried after a lost commit
-- acknowledgement finds its record and is not stored twice.  The agent
-- writes its batches in order and deletes its older records as it goes,
-- so the table holds about one row per node.
CREATE TABLE parca.agent_batches (
    node        text NOT NULL,          -- the agent's node label
    batch_id    bigint NOT NULL,        -- increasing per node
    PRIMARY KEY (node, batch_id)
);

-- parca_agent: the rights parca-agent needs and no more.  A group role
-- (NOLOGIN); grant it to the login role the agent uses:
--   CREATE ROLE agent LOGIN PASSWORD '...' IN ROLE parca_agent;
-- Roles belong to the cluster, so a second database's CREATE EXTENSION
-- reuses the role.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) 'parca_agent') THEN
        CREATE ROLE parca_agent NOLOGIN;
    END IF;
END
$$;
COMMENT ON TABLE parca.agent_batches IS 'batches written by parca-agent, for idempotent retries';
GRANT USAGE ON SCHEMA parca TO parca_agent;
GRANT INSERT ON parca.samples TO parca_agent;
-- The write protocol (sql/50_ingest.sql) runs as its caller: it looks the
-- ids up, inserts what is missing (INSERT ... ON CONFLICT (id) reads the
-- conflicting id) and adds lines to a stored location that has none.
GRANT EXECUTE ON FUNCTION parca_write_protocol(),
    parca_store_mappings(bigint[], text[], text[]),
    parca_store_functions(bigint[], text[], text[], text[], bigint[]),
    parca_store_locations(bigint[], bigint[], bigint[], integer[], bigint[], bigint[], boolean[])
    TO parca_agent;
GRANT INSERT, SELECT (id) ON parca.mappings, parca.functions TO parca_agent;
GRANT INSERT, SELECT (id, function_ids), UPDATE (function_ids, line_numbers) ON parca.locations
    TO parca_agent;
-- parca_series_id() looks the series up and inserts it if new, as its caller.
GRANT SELECT, INSERT ON parca.series TO parca_agent;
GRANT SELECT, INSERT, DELETE ON parca.agent_batches TO parca_agent;
GRANT EXECUTE ON FUNCTION parca_series_id(text, jsonb) TO parca_agent;
