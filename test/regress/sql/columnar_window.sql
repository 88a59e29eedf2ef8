-- parca_columnar: of a chunk group that the WHERE clause does not pass
-- whole, a scan reads the other columns only for the rows from the first
-- to the last it passes (columnar_read_row_window): a bit-packed column of
-- high entropy is read only on the pages that hold those rows.  Only when
-- every qual is a chunk predicate (the quals then drop every other row).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS parca;
RESET client_min_messages;

CREATE TABLE col_win (time timestamptz, v bigint, w integer, n bigint, s text)
USING parca_columnar;
SELECT parca_columnar_set_options('col_win', chunk_group_rows => 10000, stripe_rows => 40000);
SET parca.columnar_inline_stripe_bytes = 0;
-- 40,000 rows 1 s apart in 4 chunk groups: v of 30 bits that look random,
-- w of 16 (negative too), n with NULLs in the last group
INSERT INTO col_win
SELECT '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 second',
       (i::bigint * 2654435761) % 1073741824,
       ((i::bigint * 40503) % 65536)::integer - 32768,
       CASE WHEN i >= 30000 AND i % 7 = 0 THEN NULL ELSE (i::bigint * 2654435761) % 1000003 END,
       'r' || i % 13
FROM generate_series(0, 39999) i;
RESET parca.columnar_inline_stripe_bytes;
CREATE TABLE heap_win USING heap AS SELECT * FROM col_win;
-- v's chunks: bit-packed, not compressed, 37.5 kB (5 pages) each
SELECT chunk_group, encoding, compressed, stored_bytes FROM parca_columnar_chunks('col_win')
WHERE attname = 'v' ORDER BY chunk_group;

-- 100 rows of group 1: its time chunk's page and the one or two of v's that
-- hold the 100 rows, not v's five
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT sum(v) FROM col_win
WHERE time >= '2024-01-01 04:10:00+00' AND time < '2024-01-01 04:11:40+00';
SELECT count(*), sum(v) FROM col_win
WHERE time >= '2024-01-01 04:10:00+00' AND time < '2024-01-01 04:11:40+00';
-- the same with a qual that is not a chunk predicate: v is read whole
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT sum(v) FROM col_win
WHERE time >= '2024-01-01 04:10:00+00' AND time < '2024-01-01 04:11:40+00' AND v % 2 = 0;
-- Columnar Aggregate reads as little
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT s, sum(v) FROM col_win
WHERE time >= '2024-01-01 04:10:00+00' AND time < '2024-01-01 04:11:40+00' GROUP BY s;
-- no row between two rows' times: only the time chunk is read
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT sum(v) FROM col_win
WHERE time > '2024-01-01 04:10:00.2+00' AND time < '2024-01-01 04:10:00.7+00';

-- answers equal the heap's: ranges of 0 to 3,000 s from anywhere (the edges
-- of groups, ranges over two groups, between rows), through the plain
-- aggregate over the scan, Columnar Aggregate (GROUP BY s), rows returned
-- one by one, predicates on two columns, and a qual that is not one
CREATE FUNCTION win_differences(queries text[]) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  differ int := 0;
  a text;
  b text;
  q text;
  lo numeric;
  len numeric;
BEGIN
  FOR k IN 0 .. 149 LOOP
    lo := (k * 7919) % 40500 - 200 + (k % 3) * 0.5;
    len := CASE k % 5 WHEN 0 THEN 0.3 WHEN 1 THEN 1 WHEN 2 THEN 100 WHEN 3 THEN 999 ELSE 3000 END;
    FOREACH q IN ARRAY queries LOOP
      q := replace(replace(q, '$lo', quote_literal('2024-01-01 00:00:00+00'::timestamptz + lo * interval '1 second')),
                   '$hi', quote_literal('2024-01-01 00:00:00+00'::timestamptz + (lo + len) * interval '1 second'));
      EXECUTE format(q, 'col_win') INTO a;
      EXECUTE format(q, 'heap_win') INTO b;
      IF a IS DISTINCT FROM b THEN
        differ := differ + 1;
        RAISE NOTICE 'differs: % (% against %)', format(q, 'col_win'), a, b;
      END IF;
    END LOOP;
  END LOOP;
  RETURN differ;
END $$;
SELECT win_differences(ARRAY[
  'SELECT count(*) || '' '' || sum(v) || '' '' || sum(w) || '' '' || count(n) || '' '' || coalesce(sum(n), 0) FROM %I WHERE time >= $lo AND time < $hi',
  'SELECT string_agg(s || '':'' || sv || '':'' || sw, '','' ORDER BY s) FROM (SELECT s, sum(v) sv, sum(n) sw FROM %I WHERE time >= $lo AND time <= $hi GROUP BY s) g',
  'SELECT md5(string_agg(v || '','' || w || '','' || coalesce(n, -1) || s, '';'' ORDER BY time)) FROM %I WHERE $lo <= time AND time < $hi',
  'SELECT count(*) || '' '' || sum(v) FROM %I WHERE time >= $lo AND time < $hi AND w > 0',
  'SELECT count(*) || '' '' || sum(w) FROM %I WHERE time >= $lo AND time < $hi AND v %% 3 = 0']);

DROP FUNCTION win_differences(text[]);
DROP TABLE col_win, heap_win;

-- parca_query's merge reads values the same way (the window of its time
-- range, columnar_read_row_window by time): one series of 40,000 values
-- of high entropy, 8 a second, moved onto pages by VACUUM; its totals over
-- ranges that cut chunk groups equal SQL's sums
INSERT INTO parca.series (profile_type, labels)
VALUES ('qwin:alloc:bytes:space:bytes', '{"qtest": "window"}');
INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
SELECT '2024-03-01 00:00:00+00'::timestamptz + (i / 8) * interval '1 second', s.id, '{}',
       (i::bigint * 2654435761) % 1073741824, 1, 0
FROM parca.series s, generate_series(0, 39999) i WHERE s.labels->>'qtest' = 'window';
VACUUM parca.samples;
SELECT c.inline_stripes, c.rows
FROM pg_partition_tree('parca.samples') p, parca_columnar_check(p.relid) c
WHERE p.isleaf AND c.rows > 0;
SELECT count(*) AS ranges,
       count(*) FILTER (WHERE coalesce(parca_profile_total(parca_query('qwin:alloc:bytes:space:bytes{qtest="window"}', lo, hi)), 0)
                              IS DISTINCT FROM
                              (SELECT coalesce(sum(value), 0) FROM parca.samples
                               WHERE time >= lo AND time <= hi)) AS totals_differ
FROM (SELECT '2024-03-01 00:00:00+00'::timestamptz + (k * 173 % 5200 - 100) * interval '1 second' AS lo,
             '2024-03-01 00:00:00+00'::timestamptz + (k * 173 % 5200 - 100 + k % 7 * 150) * interval '1 second' AS hi
      FROM generate_series(0, 59) k) r;
TRUNCATE parca.samples;
DELETE FROM parca.series WHERE labels->>'qtest' = 'window';
