-- parca_columnar: chunk group skipping by min/max, and column projection.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS parca;
RESET client_min_messages;

CREATE TABLE col_skip (LIKE parca.samples) USING parca_columnar;
SELECT parca_columnar_set_options('col_skip', chunk_group_rows => 1000, stripe_rows => 10000);
-- data pages rather than inline stripes (two, and one of the stack dictionary)
SET parca.columnar_inline_stripe_bytes = 0;
-- 20,000 rows in time order: 100 profiles of 200 rows, 10 s apart, 4 series
INSERT INTO col_skip
SELECT '2024-01-01 00:00:00+00'::timestamptz + (i / 200) * interval '10 seconds',
       (i / 200) % 4 + 1,
       ('{' || lpad(to_hex(i % 37 + 1), 16, '0') || '}')::stacktrace,
       i % 5 + 1, 10000000, 10000000000, NULL
FROM generate_series(0, 19999) i;
RESET parca.columnar_inline_stripe_bytes;
SELECT * FROM parca_columnar_check('col_skip');

-- the node, its columns and its chunk filter
EXPLAIN (COSTS OFF)
SELECT stack, sum(value) FROM col_skip
WHERE time >= '2024-01-01 00:01:00+00' AND time < '2024-01-01 00:02:00+00'
GROUP BY stack;

-- 6 profiles of 200 rows: 2 chunk groups of 20 read
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT sum(value) FROM col_skip
WHERE time >= '2024-01-01 00:01:00+00' AND time < '2024-01-01 00:02:00+00';
SELECT count(*), sum(value) FROM col_skip
WHERE time >= '2024-01-01 00:01:00+00' AND time < '2024-01-01 00:02:00+00';

-- every chunk group read: a page counts once however many of the 40
-- time and value chunks it holds, so no more than the table's data blocks
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT sum(value) FROM col_skip WHERE time >= '2024-01-01 00:00:00+00';

-- constant on the left, equality, BETWEEN, a stable expression
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM col_skip WHERE '2024-01-01 00:16:00+00' < time;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM col_skip WHERE time = '2024-01-01 00:05:00+00';
SELECT count(*) FROM col_skip WHERE time = '2024-01-01 00:05:00+00';
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM col_skip
WHERE time BETWEEN '2024-01-01 00:00:00+00'::timestamptz + interval '5 minutes'
              AND '2024-01-01 00:00:00+00'::timestamptz + interval '6 minutes';

-- a parameter (prepared statement with a generic plan)
SET plan_cache_mode = force_generic_plan;
PREPARE q(timestamptz) AS SELECT count(*) FROM col_skip WHERE time < $1;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
EXECUTE q('2024-01-01 00:00:30+00');
EXECUTE q('2024-01-01 00:00:30+00');
EXECUTE q('2024-01-01 00:10:00+00');
DEALLOCATE q;
RESET plan_cache_mode;

-- series_id: rows of one series are spread over every group, no skipping;
-- a value no group holds skips them all
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM col_skip WHERE series_id = 9;
SELECT count(*) FROM col_skip WHERE series_id = 2;

-- = ANY (array): groups holding none of the values are skipped
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM col_skip WHERE series_id = ANY ('{9,10}');
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM col_skip
WHERE time = ANY (ARRAY['2024-01-01 00:05:00+00'::timestamptz, '2024-01-01 00:15:00+00', NULL]);
SELECT count(*) FROM col_skip
WHERE time = ANY (ARRAY['2024-01-01 00:05:00+00'::timestamptz, '2024-01-01 00:15:00+00', NULL]);
SELECT count(*) FROM col_skip WHERE series_id = ANY ('{2,3,NULL}');
SELECT count(*) FROM col_skip WHERE series_id = ANY (NULL::bigint[]);
SELECT count(*) FROM col_skip WHERE series_id = ANY ('{}');

-- NULL comparisons match nothing
SELECT count(*) FROM col_skip WHERE time < NULL::timestamptz;

-- with the node off: same answer from the plain scan
SET parca.columnar_enable_custom_scan = off;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM col_skip WHERE time < '2024-01-01 00:00:30+00';
SELECT count(*), sum(value) FROM col_skip
WHERE time >= '2024-01-01 00:01:00+00' AND time < '2024-01-01 00:02:00+00';
RESET parca.columnar_enable_custom_scan;

-- joins and subqueries use the node on the inner side too
SELECT s.series_id, count(*)
FROM col_skip s JOIN (VALUES (1), (3)) v(id) ON s.series_id = v.id
WHERE s.time < '2024-01-01 00:01:00+00'
GROUP BY 1 ORDER BY 1;
