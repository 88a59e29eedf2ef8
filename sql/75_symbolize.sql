-- Symbolization in the database (docs/symbolization.md): debug information
-- stored by build id, and the functions that name the locations of that
-- build id from it.

-- One ELF file per build id: the program, or its separate debug file.
CREATE TABLE parca.debuginfo (
    build_id      text PRIMARY KEY
                  CHECK (build_id OPERATOR(pg_catalog.~) '^[0-9a-fA-F]+$'
                         AND pg_catalog.length(build_id) OPERATOR(pg_catalog.<=) 1024),
    elf           bytea NOT NULL,
    source        text NOT NULL CHECK (source OPERATOR(pg_catalog.=) ANY (ARRAY['upload', 'debuginfod'])),
    stored_at     timestamptz NOT NULL DEFAULT pg_catalog.now(),
    symbolized_at timestamptz,          -- the last run over its locations; 'infinity': not read again (src/symbolize/guard.c)
    unnamed       bigint                -- locations that run left unnamed
);
-- Already compressed or not worth it: stored out of line as they are.
ALTER TABLE parca.debuginfo ALTER COLUMN elf SET STORAGE EXTERNAL;

-- Build ids that no debuginfod server had, so that the worker does not ask
-- again before parca.debuginfod_retry has passed.
CREATE TABLE parca.debuginfo_missing (
    build_id   text PRIMARY KEY,
    checked_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    error      text NOT NULL
);

-- The locations that still wait for names, found without reading the rest.
CREATE INDEX locations_unsymbolized ON parca.locations (mapping_id)
    WHERE pg_catalog.cardinality(function_ids) OPERATOR(pg_catalog.=) 0;

SELECT pg_catalog.pg_extension_config_dump('parca.debuginfo', '');
SELECT pg_catalog.pg_extension_config_dump('parca.debuginfo_missing', '');

CREATE FUNCTION parca_debuginfo_upload(build_id text, elf bytea) RETURNS bigint
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION parca_debuginfo_upload(text, bytea) IS
    'store the ELF file (program or separate debug file) of this build id and name its locations; returns how many were named';

CREATE FUNCTION parca_symbolize(build_id text) RETURNS bigint
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION parca_symbolize(text) IS
    'name the unnamed locations of this build id from its stored debug information; returns how many were named';

-- Who may store debug information (it names every frame of that build id
-- for every reader) and run symbolization.  Roles belong to the cluster.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) 'parca_debuginfo') THEN
        CREATE ROLE parca_debuginfo NOLOGIN;
    END IF;
END
$$;
REVOKE ALL ON FUNCTION parca_debuginfo_upload(text, bytea) FROM PUBLIC;
REVOKE ALL ON FUNCTION parca_symbolize(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION parca_debuginfo_upload(text, bytea) TO parca_debuginfo;
GRANT EXECUTE ON FUNCTION parca_symbolize(text) TO parca_debuginfo;
GRANT USAGE ON SCHEMA parca TO parca_debuginfo;
GRANT SELECT, INSERT, UPDATE, DELETE ON parca.debuginfo TO parca_debuginfo;
GRANT SELECT, INSERT, UPDATE, DELETE ON parca.debuginfo_missing TO parca_debuginfo;
GRANT SELECT ON parca.mappings TO parca_debuginfo;
GRANT SELECT, INSERT ON parca.functions TO parca_debuginfo;
GRANT SELECT, UPDATE ON parca.locations TO parca_debuginfo;
