-- parca_columnar_set_options on a partitioned table reaches its
-- partitions, and sets sort_by: the order VACUUM gives merged stripes
-- (sql/20_columnar.sql); parca.samples' is series, then time.
ALTER TABLE parca.columnar_options ADD COLUMN sort_by text[] CHECK (cardinality(sort_by) <= 4);
DROP FUNCTION parca_columnar_set_options(regclass, integer, integer, integer);

-- Set a table's options (NULL leaves an option as it is).  They apply
-- to stripes written from now on.  Set on a partitioned table (such as
-- parca.samples), they apply to its partitions, and to those made later
-- by parca.create_partition.  sort_by: the columns (of a pass-by-value
-- type: bigint, timestamptz, ...) whose order VACUUM gives the rows of the
-- stripes it merges, if the table has no index; '{}' for none.
CREATE FUNCTION parca_columnar_set_options(
    tbl regclass,
    compression_level integer DEFAULT NULL,
    stripe_rows integer DEFAULT NULL,
    chunk_group_rows integer DEFAULT NULL,
    sort_by text[] DEFAULT NULL) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    bad text;
BEGIN
    SELECT coalesce(quote_ident(n), 'NULL') INTO bad
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
               parca_columnar_set_options.compression_level, parca_columnar_set_options.sort_by
        FROM (SELECT tbl UNION SELECT relid FROM pg_partition_tree(tbl)) AS t(relid)
    ON CONFLICT (relid) DO UPDATE SET
        stripe_rows = coalesce(EXCLUDED.stripe_rows, o.stripe_rows),
        chunk_group_rows = coalesce(EXCLUDED.chunk_group_rows, o.chunk_group_rows),
        compression_level = coalesce(EXCLUDED.compression_level, o.compression_level),
        sort_by = coalesce(EXCLUDED.sort_by, o.sort_by);
END
$$;

INSERT INTO parca.columnar_options AS o (relid, sort_by) VALUES ('parca.samples'::regclass, '{series_id,time}')
ON CONFLICT (relid) DO UPDATE SET sort_by = EXCLUDED.sort_by WHERE o.sort_by IS NULL;
