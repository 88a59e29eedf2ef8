-- parca.samples is partitioned by time (sql/40_samples.sql): rows with no
-- partition land in the default one, parca_maintain_partitions() gives
-- them partitions of their own, makes those ahead, and drops those older
-- than parca.retention; every path reads and writes through them.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS parca;
RESET client_min_messages;
\getenv abs_srcdir PG_ABS_SRCDIR
\set alloc :abs_srcdir '/data/pprof/parca/alloc_objects.pb.gz'
TRUNCATE parca.samples, parca.series, parca.locations, parca.functions, parca.mappings;

SELECT relkind, pg_get_partkeydef(oid) FROM pg_class WHERE oid = 'parca.samples'::regclass;
SELECT partition, is_default, drop_after FROM parca.partitions;
SELECT amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
WHERE c.oid = 'parca.samples_default'::regclass;

-- no partition holds the profile's time (2020-12-17): the default one does
SELECT parca_ingest_pprof(pg_read_binary_file(:'alloc'), 'part', '{"job": "a"}') AS rows;
SELECT tableoid::regclass, count(*), min(time) FROM parca.samples GROUP BY 1;
SELECT parca_profile_total(parca_query('part:alloc_space:bytes:space:bytes', '-infinity', 'infinity')) AS total_before;

-- a row from far ahead, one at +infinity (which no partition can hold)
INSERT INTO parca.samples
SELECT '2200-01-01 12:00+00', series_id, stack, value, period, duration, num_labels
FROM parca.samples LIMIT 1;
INSERT INTO parca.samples
SELECT 'infinity', series_id, stack, value, period, duration, num_labels
FROM parca.samples LIMIT 1;

-- one round: the default partition's rows move to partitions of their own
-- (2020-12-17 and 2200-01-01), and today's and two ahead are made
SELECT * FROM parca_maintain_partitions();
SELECT tableoid::regclass, count(*) FROM parca.samples GROUP BY 1 ORDER BY 1;
SELECT count(*) AS partitions_from_now FROM parca.partitions
WHERE NOT is_default AND range_end > now();
SELECT range_start, range_end, range_end - range_start AS length
FROM parca.partitions WHERE partition = 'parca.samples_20201217'::regclass;
SELECT amname, count(*) FROM parca.partitions p
JOIN pg_class c ON c.oid = p.partition JOIN pg_am a ON a.oid = c.relam GROUP BY 1;
-- the same answer as before, read from the partition
SELECT parca_profile_total(parca_query('part:alloc_space:bytes:space:bytes', '-infinity', 'infinity')) AS total_after;
-- a second round has nothing to do
SELECT * FROM parca_maintain_partitions();

-- ingest now writes straight into the partition of the profile's time
SELECT parca_ingest_pprof(pg_read_binary_file(:'alloc'), 'part', '{"job": "b"}') AS rows;
SELECT tableoid::regclass, count(*) FROM parca.samples GROUP BY 1 ORDER BY 1;
-- and parca_query reads only the partitions its range meets: a range in
-- 2021 finds nothing, one around the profile finds both series
SELECT parca_profile_total(parca_query('part:alloc_space:bytes:space:bytes', '2021-01-01', '2021-02-01')) AS total_2021;
SELECT parca_profile_total(parca_query('part:alloc_space:bytes:space:bytes', '2020-12-17', '2020-12-18'))
     = 2 * parca_profile_total(parca_query('part:alloc_space:bytes:space:bytes{job="a"}', '2020-12-17', '2020-12-18'))
    AS both_series;
-- as the planner does
EXPLAIN (COSTS OFF) SELECT count(*) FROM parca.samples
WHERE time >= '2020-12-17' AND time < '2020-12-18';

-- options set on parca.samples apply to every partition, made later too
SELECT parca_columnar_set_options('parca.samples', chunk_group_rows => 2000);
SELECT count(*) FILTER (WHERE o.chunk_group_rows = 2000) = count(*) AS all_set
FROM parca.partitions p LEFT JOIN parca.columnar_options o ON o.relid = p.partition;

-- a shorter interval: a period cut short where it meets a partition
SET parca.partition_interval = '1h';
SELECT parca.create_partition('2020-12-16 23:30+00');
SELECT range_start, range_end FROM parca.partitions
WHERE partition = 'parca.samples_20201216_230000'::regclass;
SELECT parca.create_partition('2020-12-17 05:00+00') AS existing;
RESET parca.partition_interval;
SELECT parca.create_partition('infinity');
SELECT count(*) FILTER (WHERE o.chunk_group_rows = 2000) = count(*) AS all_set
FROM parca.partitions p LEFT JOIN parca.columnar_options o ON o.relid = p.partition;

-- retention drops whole partitions older than it, and the view says when
SET parca.retention = '30d';
SELECT count(*) FROM parca.partitions
WHERE drop_after = range_end + interval '30 days';
SELECT * FROM parca_maintain_partitions();
SELECT tableoid::regclass, count(*) FROM parca.samples GROUP BY 1 ORDER BY 1;
SELECT parca_profile_total(parca_query('part:alloc_space:bytes:space:bytes', '-infinity', 'infinity')) AS total_left;
RESET parca.retention;

-- upkeep is for superusers (or whom they grant it)
CREATE ROLE regress_parca_partitions;
SET ROLE regress_parca_partitions;
SELECT * FROM parca_maintain_partitions();
SELECT parca.create_partition(now());
RESET ROLE;
DROP ROLE regress_parca_partitions;
SHOW parca.retention;
SHOW parca.partition_interval;
-- the metastore's garbage collection: the series of the dropped day's
-- profiles go (their locations are those of the profile stored again)
SELECT parca_ingest_pprof(pg_read_binary_file(:'alloc'), 'part', '{"job": "c"}') AS rows;
SELECT (SELECT count(*) FROM parca.series) AS series, (SELECT count(*) > 0 FROM parca.locations) AS locations;
SELECT parca_metastore_generation() AS generation_before \gset
SELECT series, locations > 0 AS locations, functions > 0 AS functions, mappings >= 0 AS mappings
FROM parca_metastore_gc();
SELECT labels FROM parca.series ORDER BY id;
SELECT count(*) AS unresolved FROM (SELECT DISTINCT unnest(parca_stack_location_ids(stack)) AS id FROM parca.samples) u
LEFT JOIN parca.locations l USING (id) WHERE l.id IS NULL;
SELECT * FROM parca_metastore_gc();
SELECT parca_metastore_generation() - :generation_before AS collections_that_removed_rows;

-- parca_columnar_check and parca_columnar_compact take the table users know:
-- each of its partitions (all parca_columnar), summed
SELECT count(*) > 1 AS several_partitions_hold_rows FROM (SELECT DISTINCT tableoid FROM parca.samples) t;
SELECT rows = (SELECT count(*) FROM parca.samples) AS every_row_checked,
       rows = (SELECT sum((parca_columnar_check(partition)).rows) FROM parca.partitions) AS sum_of_partitions
FROM parca_columnar_check('parca.samples');
SELECT parca_columnar_compact('parca.samples') >= 0 AS compacted;
SELECT rows = (SELECT count(*) FROM parca.samples) AS every_row_after_compaction
FROM parca_columnar_check('parca.samples');

-- leave no dated partition behind (other tests' plans show the partitions)
DO $$
DECLARE p regclass;
BEGIN
    FOR p IN SELECT partition FROM parca.partitions WHERE NOT is_default LOOP
        EXECUTE format('DROP TABLE %s', p);
    END LOOP;
END
$$;
SELECT count(*) AS partitions_left FROM parca.partitions;
DELETE FROM parca.columnar_options;
TRUNCATE parca.samples, parca.series, parca.locations, parca.functions, parca.mappings;
