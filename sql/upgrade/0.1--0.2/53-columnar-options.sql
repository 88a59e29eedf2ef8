-- parca_columnar_set_options on a partitioned table reaches its
-- partitions (sql/20_columnar.sql).

-- Set a table's options (NULL leaves an option as it is).  They apply
-- to stripes written from now on.  Set on a partitioned table (such as
-- parca.samples), they apply to its partitions, and to those made later
-- by parca.create_partition.
CREATE OR REPLACE FUNCTION parca_columnar_set_options(
    tbl regclass,
    compression_level integer DEFAULT NULL,
    stripe_rows integer DEFAULT NULL,
    chunk_group_rows integer DEFAULT NULL) RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO parca.columnar_options AS o
        SELECT t.relid, stripe_rows, chunk_group_rows, compression_level
        FROM (SELECT tbl UNION SELECT relid FROM pg_partition_tree(tbl)) AS t(relid)
    ON CONFLICT (relid) DO UPDATE SET
        stripe_rows = coalesce(EXCLUDED.stripe_rows, o.stripe_rows),
        chunk_group_rows = coalesce(EXCLUDED.chunk_group_rows, o.chunk_group_rows),
        compression_level = coalesce(EXCLUDED.compression_level, o.compression_level);
$$;
