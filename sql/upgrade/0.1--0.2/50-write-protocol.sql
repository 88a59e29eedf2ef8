-- The write protocol (src/metastore/store.c): what parca-agent calls to store metastore rows.

CREATE FUNCTION parca_write_protocol() RETURNS integer
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION parca_write_protocol() IS
    'the version of the write protocol (parca_store_* and the ids) this server speaks';

CREATE FUNCTION parca_store_mappings(ids bigint[], build_ids text[], files text[])
    RETURNS void
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION parca_store_mappings(bigint[], text[], text[]) IS
    'store the mappings the metastore lacks, one per array position';

CREATE FUNCTION parca_store_functions(ids bigint[], names text[], system_names text[],
                                      filenames text[], start_lines bigint[])
    RETURNS void
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION parca_store_functions(bigint[], text[], text[], text[], bigint[]) IS
    'store the functions the metastore lacks, one per array position';

CREATE FUNCTION parca_store_locations(ids bigint[], mapping_ids bigint[], addresses bigint[],
                                      line_counts integer[], function_ids bigint[],
                                      line_numbers bigint[], is_folded boolean[] DEFAULT NULL)
    RETURNS void
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION parca_store_locations(bigint[], bigint[], bigint[], integer[], bigint[], bigint[], boolean[]) IS
    'store the locations the metastore lacks and add lines to stored ones that have none';

GRANT EXECUTE ON FUNCTION parca_write_protocol(),
    parca_store_mappings(bigint[], text[], text[]),
    parca_store_functions(bigint[], text[], text[], text[], bigint[]),
    parca_store_locations(bigint[], bigint[], bigint[], integer[], bigint[], bigint[], boolean[])
    TO parca_agent;
GRANT INSERT, SELECT (id) ON parca.mappings, parca.functions TO parca_agent;
GRANT INSERT, SELECT (id, function_ids), UPDATE (function_ids, line_numbers) ON parca.locations
    TO parca_agent;
