-- The parca_columnar table access method (src/columnar/).
--
-- Stripe catalog: one row per stripe of every columnar table, keyed by
-- the storage id in the table's metapage (a new storage on TRUNCATE).
-- Small stripes keep their data inline here until compaction merges them.
CREATE TABLE parca.columnar_stripes (
    storage_id  bigint NOT NULL,
    first_row   bigint NOT NULL,        -- lowest row number in the stripe
    row_count   bigint NOT NULL,
    first_block bigint NOT NULL,        -- first data page; -1: data inline
    data_size   bigint NOT NULL,        -- bytes of chunk data
    directory   bytea NOT NULL,         -- row ranges, columns, chunks (min/max)
    inline_data bytea,                  -- the data of a small stripe
    PRIMARY KEY (storage_id, first_row)
);
-- Commits and compaction look for the inline stripes of a storage.
CREATE INDEX columnar_stripes_inline ON parca.columnar_stripes (storage_id, first_row)
    WHERE first_block < 0;
-- Chunks are compressed already.
ALTER TABLE parca.columnar_stripes ALTER directory SET STORAGE EXTERNAL;
ALTER TABLE parca.columnar_stripes ALTER inline_data SET STORAGE EXTERNAL;

-- Stack dictionaries (docs/columnar.md, "A table's stack dictionary"):
-- one row per segment, the stacks of a columnar table's stripes stored
-- once per table, which stripes refer to by entry number.  Laid out as
-- parca.columnar_stripes, with entry numbers for row numbers.
CREATE TABLE parca.columnar_dictionary (
    storage_id  bigint NOT NULL,
    first_entry bigint NOT NULL,        -- the segment's first entry number
    entry_count bigint NOT NULL,
    first_block bigint NOT NULL,        -- first data page; -1: data inline
    data_size   bigint NOT NULL,
    directory   bytea NOT NULL,         -- the entries' chunk and their ids' chunk
    inline_data bytea,                  -- the data of a small segment
    PRIMARY KEY (storage_id, first_entry)
);
ALTER TABLE parca.columnar_dictionary ALTER directory SET STORAGE EXTERNAL;
ALTER TABLE parca.columnar_dictionary ALTER inline_data SET STORAGE EXTERNAL;

CREATE SEQUENCE parca.columnar_storage_seq;

-- Per-table options; NULL: the parca.columnar_* setting.
CREATE TABLE parca.columnar_options (
    relid             oid PRIMARY KEY,
    stripe_rows       integer CHECK (stripe_rows BETWEEN 1000 AND 100000000),
    chunk_group_rows  integer CHECK (chunk_group_rows BETWEEN 100 AND 1000000),
    compression_level integer CHECK (compression_level BETWEEN 0 AND 19),
    -- VACUUM writes merged stripes in this order (of pass-by-value columns);
    -- a partition without it has its partitioned table's
    sort_by           text[] CHECK (cardinality(sort_by) <= 4),
    -- a timestamptz column: each transaction that writes rows logs their
    -- range of it in parca.columnar_write_log; a partition without it has
    -- its partitioned table's ('': none)
    log_by            text
);

CREATE FUNCTION parca_columnar_handler(internal) RETURNS table_am_handler
    AS 'MODULE_PATHNAME' LANGUAGE C;
CREATE ACCESS METHOD parca_columnar TYPE TABLE HANDLER parca_columnar_handler;
COMMENT ON ACCESS METHOD parca_columnar IS 'compressed column chunks with min/max skipping (parca)';

-- Merge a table's small (inline) stripes, then its partial stripes by size
-- ratio (docs/columnar.md); returns how many stripes were merged.
CREATE FUNCTION parca_columnar_compact(tbl regclass) RETURNS bigint
    AS 'MODULE_PATHNAME' LANGUAGE C STRICT;

-- Check that every stripe decodes and every count agrees; raises an
-- error (data_corrupted) naming the first problem.
CREATE FUNCTION parca_columnar_check(tbl regclass,
    OUT stripes bigint, OUT inline_stripes bigint, OUT rows bigint, OUT data_blocks bigint)
    AS 'MODULE_PATHNAME' LANGUAGE C STRICT;

-- One row per chunk: how each column of each chunk group is stored.
CREATE FUNCTION parca_columnar_chunks(tbl regclass,
    OUT stripe bigint, OUT inline boolean, OUT chunk_group integer, OUT attname text,
    OUT encoding text, OUT compressed boolean, OUT stored_bytes integer,
    OUT raw_bytes integer, OUT nulls integer, OUT min text, OUT max text)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C STRICT;

-- Not for everyone: chunks shows the min and max of every column, check
-- reads a whole table, compact rewrites its stripes.  A superuser grants
-- them; each also checks the table (SELECT for chunks and check, as for
-- VACUUM for compact).
REVOKE ALL ON FUNCTION parca_columnar_compact(regclass), parca_columnar_check(regclass),
    parca_columnar_chunks(regclass) FROM PUBLIC;
