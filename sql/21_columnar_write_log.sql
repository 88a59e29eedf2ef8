-- The per-table options' setter, and the write log that a log_by option
-- turns on (the options table itself: sql/20_columnar.sql).  A part of its
-- own, so that the update from 0.1 runs this same file
-- (sql/upgrade/0.1--0.2/56b-columnar-write-log.sql links to it).

-- The write log: per transaction and table with a log_by column, the
-- range [lo, hi] of that column over the rows the transaction wrote into
-- it, named by relid, the table at the top of the partition tree written
-- (parca.samples for its partitions).  Written at commit, in the writing
-- transaction, so that an entry is there exactly when its rows are
-- (src/columnar/columnar_write_state.c).  Its reader takes entries away
-- as it takes in their rows: the rollups take those of parca.samples
-- (sql/46_rollups.sql).  Not dumped: restored rows are logged again.
CREATE TABLE parca.columnar_write_log (
    relid   oid NOT NULL,
    lo      timestamptz NOT NULL,
    hi      timestamptz NOT NULL
);
CREATE INDEX columnar_write_log_relid_lo ON parca.columnar_write_log (relid, lo);

-- Set a table's options (NULL leaves an option as it is).  They apply
-- to stripes written from now on.  Set on a partitioned table (such as
-- parca.samples), they apply to its partitions, and to those made later
-- by parca.create_partition.  sort_by: the columns (of a pass-by-value
-- type: bigint, timestamptz, ...) whose order VACUUM gives the rows of the
-- stripes it merges, if the table has no index; '{}' for none.  log_by:
-- the timestamptz column whose range over the rows each transaction
-- writes is logged in parca.columnar_write_log; '' for none.
CREATE FUNCTION parca_columnar_set_options(
    tbl regclass,
    compression_level integer DEFAULT NULL,
    stripe_rows integer DEFAULT NULL,
    chunk_group_rows integer DEFAULT NULL,
    sort_by text[] DEFAULT NULL,
    log_by text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    bad text;
BEGIN
    -- a Citus table's rows are written and merged on the workers, in
    -- shards of their own, which these options (this node's catalog)
    -- would not reach: refused rather than set where nothing reads them
    IF parca.is_citus_table(tbl) THEN
        RAISE EXCEPTION '% is a Citus table: its options would not reach its shards on the workers', tbl
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'parca''s table options are not carried to Citus shards (docs/scale-out.md).';
    END IF;
    IF log_by <> '' AND NOT EXISTS (SELECT FROM pg_attribute a
                                    WHERE a.attrelid = tbl AND a.attname = parca_columnar_set_options.log_by
                                      AND a.attnum > 0 AND NOT a.attisdropped
                                      AND a.atttypid = 'timestamptz'::regtype) THEN
        RAISE EXCEPTION 'log_by names %, which is no timestamptz column of %', parca.message_quote(log_by), tbl
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Log writes by a column of type timestamptz, or '''' for none.';
    END IF;
    SELECT coalesce(parca.message_quote(n), 'NULL') INTO bad
    FROM unnest(parca_columnar_set_options.sort_by) AS u(n)
    WHERE NOT EXISTS (SELECT FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
                      WHERE a.attrelid = tbl AND a.attname = u.n AND a.attnum > 0
                        AND NOT a.attisdropped AND t.typbyval)
    LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'sort_by names %, which is no column of % of a pass-by-value type', bad, tbl
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Order stripes by columns such as bigint or timestamptz ones.';
    END IF;
    INSERT INTO parca.columnar_options AS o
        SELECT t.relid, parca_columnar_set_options.stripe_rows,
               parca_columnar_set_options.chunk_group_rows,
               parca_columnar_set_options.compression_level, parca_columnar_set_options.sort_by,
               parca_columnar_set_options.log_by
        FROM (SELECT tbl UNION SELECT relid FROM pg_partition_tree(tbl)) AS t(relid)
    ON CONFLICT (relid) DO UPDATE SET
        stripe_rows = coalesce(EXCLUDED.stripe_rows, o.stripe_rows),
        chunk_group_rows = coalesce(EXCLUDED.chunk_group_rows, o.chunk_group_rows),
        compression_level = coalesce(EXCLUDED.compression_level, o.compression_level),
        sort_by = coalesce(EXCLUDED.sort_by, o.sort_by),
        log_by = coalesce(EXCLUDED.log_by, o.log_by);
END
$$;

-- Whether parca.columnar_write_log holds a write into tbl (a table with a
-- log_by column, or the partitioned table at the top of such tables)
-- whose log_by values meet [lo, hi], as the caller's snapshot sees it, or
-- the caller's transaction wrote such rows.  Needs SELECT on tbl.
CREATE FUNCTION parca_columnar_written(tbl regclass, lo timestamptz, hi timestamptz) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT;
