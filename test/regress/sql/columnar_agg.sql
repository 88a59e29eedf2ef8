-- parca_columnar: the Columnar Aggregate node (GROUP BY inside the scan).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS parca;
RESET client_min_messages;

CREATE TABLE col_agg_heap (time timestamptz, series_id bigint, stack stacktrace,
                           value bigint, period bigint, duration bigint, num_labels jsonb);
CREATE TABLE col_agg (LIKE col_agg_heap) USING parca_columnar;
SELECT parca_columnar_set_options('col_agg', chunk_group_rows => 1000, stripe_rows => 5000);
INSERT INTO col_agg_heap
SELECT '2024-01-01 00:00:00+00'::timestamptz + (i / 100) * interval '10 seconds',
       i % 7,
       CASE WHEN i % 101 = 0 THEN NULL
            ELSE ('{' || lpad(to_hex(i % 23 + 1), 16, '0') || ',' || lpad(to_hex(i % 5 + 1), 16, '0') || '}')::stacktrace END,
       CASE WHEN i % 13 = 0 THEN NULL ELSE i % 9 + 1 END,
       10000000, 0,
       CASE WHEN i % 3 = 0 THEN '{"bytes": 512}'::jsonb END
FROM generate_series(0, 19999) i;
-- one group's sum goes past the range of bigint
INSERT INTO col_agg_heap
SELECT '2024-01-01 00:00:00+00', 1, '{00000000000000ff}', 4611686018427387904, 1, 0, NULL
FROM generate_series(1, 10);
INSERT INTO col_agg SELECT * FROM col_agg_heap;

EXPLAIN (COSTS OFF)
SELECT stack, sum(value), count(*) FROM col_agg GROUP BY stack;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT stack, sum(value) FROM col_agg
WHERE time >= '2024-01-01 00:05:00+00' AND time < '2024-01-01 00:10:00+00' GROUP BY stack;

-- the same groups, sums and counts as the executor's own aggregation of
-- the same rows in a heap table (NULL keys, NULL values, bigint overflow)
SELECT count(*) FROM (
    (SELECT stack, sum(value), count(*) FROM col_agg GROUP BY stack
     EXCEPT ALL
     SELECT stack, sum(value), count(*) FROM col_agg_heap GROUP BY stack)
    UNION ALL
    (SELECT stack, sum(value), count(*) FROM col_agg_heap GROUP BY stack
     EXCEPT ALL
     SELECT stack, sum(value), count(*) FROM col_agg GROUP BY stack)) d;
SELECT stack, sum(value), count(*) FROM col_agg WHERE stack IS NULL OR stack = '{00000000000000ff}'
GROUP BY stack ORDER BY stack;
SELECT sum(value), count(*) FROM col_agg GROUP BY stack HAVING stack = '{00000000000000ff}';

-- with predicates, constants on either side, and a parameter
SELECT count(*), sum(s) FROM (
    SELECT stack, sum(value) AS s FROM col_agg
    WHERE time >= '2024-01-01 00:05:00+00' AND '2024-01-01 00:10:00+00' > time AND series_id = 3
    GROUP BY stack) x;
SET parca.columnar_enable_aggregate = off;
SELECT count(*), sum(s) FROM (
    SELECT stack, sum(value) AS s FROM col_agg
    WHERE time >= '2024-01-01 00:05:00+00' AND '2024-01-01 00:10:00+00' > time AND series_id = 3
    GROUP BY stack) x;
RESET parca.columnar_enable_aggregate;
PREPARE qa(timestamptz) AS SELECT count(*) FROM (SELECT stack, sum(value) FROM col_agg WHERE time < $1 GROUP BY stack) x;
SET plan_cache_mode = force_generic_plan;
EXECUTE qa('2024-01-01 00:00:10+00');
EXECUTE qa('2025-01-01 00:00:00+00');
RESET plan_cache_mode;
DEALLOCATE qa;

-- outputs the outer query does not use become constants
EXPLAIN (COSTS OFF)
SELECT count(*) FROM (SELECT stack, sum(value) FROM col_agg GROUP BY stack) x;
SELECT count(*) FROM (SELECT stack, sum(value) FROM col_agg GROUP BY stack) x;

-- grouping by jsonb
SELECT num_labels, count(*) FROM col_agg GROUP BY num_labels ORDER BY 1;

-- other shapes keep the executor's aggregation
EXPLAIN (COSTS OFF) SELECT stack, avg(value) FROM col_agg GROUP BY stack;
EXPLAIN (COSTS OFF) SELECT stack, series_id, sum(value) FROM col_agg GROUP BY stack, series_id;
EXPLAIN (COSTS OFF) SELECT series_id, sum(value) FROM col_agg GROUP BY series_id;
EXPLAIN (COSTS OFF) SELECT stack, sum(value) FROM col_agg WHERE value > 3 OR series_id = 1 GROUP BY stack;
