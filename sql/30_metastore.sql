-- The metastore: mappings, functions and locations, each stored once.
-- Ids are content hashes (src/ids/ids.c), so every writer computes the
-- same id for the same thing and a stack can name its locations before
-- they are registered.

-- Whether text is valid in the database encoding.  PostgreSQL checks what
-- arrives through libpq, except a text-format COPY whose client_encoding is
-- SQL_ASCII; text that is not valid makes a pg_dump that does not restore,
-- so the names (few rows, each written once) are checked by the tables.
CREATE FUNCTION parca.text_is_valid(text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'parca_text_is_valid' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Text quoted for an error message: "whole" when short, else its first 64
-- characters, "..." and its length, so that a message names a bad
-- argument without echoing megabytes of it (src/types/valid_text.c).
CREATE FUNCTION parca.message_quote(text) RETURNS text
    AS 'MODULE_PATHNAME', 'parca_message_quote' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TABLE parca.mappings (
    id          bigint PRIMARY KEY,
    build_id    text NOT NULL CHECK (parca.text_is_valid(build_id)),    -- '' when unknown
    file        text NOT NULL CHECK (parca.text_is_valid(file))         -- '' when unknown
);

CREATE TABLE parca.functions (
    id          bigint PRIMARY KEY,
    name        text NOT NULL CHECK (parca.text_is_valid(name)),
    system_name text NOT NULL CHECK (parca.text_is_valid(system_name)),
    filename    text NOT NULL CHECK (parca.text_is_valid(filename)),
    start_line  bigint NOT NULL
);

-- A location's lines, innermost (inlined) first: function_ids[i] at
-- line_numbers[i].  Unsymbolized locations have empty arrays and keep
-- their mapping and normalized address for later symbolization.
CREATE TABLE parca.locations (
    id           bigint PRIMARY KEY,
    mapping_id   bigint,                -- NULL: the profile gave no mapping
    address      bigint NOT NULL,       -- normalized to the mapped file
    function_ids bigint[] NOT NULL,
    line_numbers bigint[] NOT NULL,
    is_folded    boolean NOT NULL DEFAULT false
);

-- A series: one profile type and one label set.
CREATE TABLE parca.series (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    profile_type text NOT NULL CHECK (parca.text_is_valid(profile_type)),
                                        -- name:sample_type:sample_unit:period_type:period_unit[:delta]
    labels       jsonb NOT NULL CHECK (parca.text_is_valid(labels::text)),
                                        -- {"label": "value", ...}
    UNIQUE (profile_type, labels)
);

-- Extension tables are left out of pg_dump unless marked: these hold data.
SELECT pg_catalog.pg_extension_config_dump('parca.mappings', '');
SELECT pg_catalog.pg_extension_config_dump('parca.functions', '');
SELECT pg_catalog.pg_extension_config_dump('parca.locations', '');
SELECT pg_catalog.pg_extension_config_dump('parca.series', '');
SELECT pg_catalog.pg_extension_config_dump('parca.series_id_seq', '');
