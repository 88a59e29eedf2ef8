-- parca_columnar: VACUUM writes the stripes it merges in the order of the
-- table's sort_by columns (parca_columnar_set_options), rows that tie in
-- the order they came, dictionaries numbered as the reordered rows use
-- them; not for a table with an index (its entries name rows by number),
-- and not by parca_columnar_compact (whose lock lets an index be built
-- meanwhile).  parca.samples is ordered by series, then time.
-- (Under concurrent writers, readers and crashes: test/stress.)
SET parca.columnar_inline_stripe_bytes = 0;  -- every stripe on pages, as a big ingest
-- (autovacuum off on the tables: an autovacuum would reorder them before
-- the statements that show the order they came in)
CREATE PROCEDURE col_ord_fill(tbl regclass) LANGUAGE plpgsql AS $$
BEGIN
    -- five writes (a stripe each), each of rows of four series in turn,
    -- some series NULL
    FOR i IN 0..4 LOOP
        EXECUTE format($q$INSERT INTO %s
            SELECT CASE WHEN g %% 97 = 0 THEN NULL ELSE g %% 4 END,
                   '2024-05-01 00:00+00'::timestamptz + (%s * 1000 + g / 4) * interval '1 s',
                   'stack ' || (g * 7919 %% 301), g
            FROM generate_series(0, 1999) g$q$, tbl, i);
        COMMIT;
    END LOOP;
END $$;
-- rows out of order as a scan returns them: series ascending (NULL
-- last), time ascending in the first series, descending in the second,
-- and so on (the serpentine order of VACUUM's merges)
CREATE FUNCTION col_ord_inversions(tbl regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE format($q$SELECT count(*) FILTER (WHERE r > 1 AND ((s IS NULL, s) < (ps IS NULL, ps) OR
                                                   s IS NOT DISTINCT FROM ps AND
                                                   CASE WHEN run %% 2 = 1 THEN t < pt ELSE t > pt END))
        FROM (SELECT r, s, t, run, lag(s) OVER w AS ps, lag(t) OVER w AS pt
              FROM (SELECT s, t, r, dense_rank() OVER (ORDER BY s NULLS LAST) AS run
                    FROM (SELECT s, t, row_number() OVER () AS r FROM %s) x) y
              WINDOW w AS (ORDER BY r)) z$q$, tbl) INTO n;
    RETURN n;
END $$;
-- chunk groups holding more than one series
CREATE FUNCTION col_ord_mixed_groups(tbl regclass) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM parca_columnar_chunks(tbl)
    WHERE attname = 's' AND (min IS DISTINCT FROM max OR nulls > 0 AND min IS NOT NULL)
$$;

CREATE TABLE col_ord (s bigint, t timestamptz, k text, v bigint) USING parca_columnar
    WITH (autovacuum_enabled = false);
SELECT parca_columnar_set_options('col_ord', stripe_rows => 100000, chunk_group_rows => 500,
                                  sort_by => '{s,t}');
CALL col_ord_fill('col_ord');
CREATE TEMP TABLE col_ord_heap AS SELECT * FROM col_ord;
SELECT col_ord_inversions('col_ord') > 0 AS unordered, col_ord_mixed_groups('col_ord') AS mixed_groups;
VACUUM col_ord;
-- one stripe, every row as before, in serpentine order: only the groups
-- where a series ends hold two
SELECT stripes, rows FROM parca_columnar_check('col_ord');
SELECT count(*) FROM (SELECT * FROM col_ord EXCEPT ALL SELECT * FROM col_ord_heap) d;
SELECT count(*) FROM (SELECT * FROM col_ord_heap EXCEPT ALL SELECT * FROM col_ord) d;
SELECT col_ord_inversions('col_ord') AS inversions, col_ord_mixed_groups('col_ord') AS mixed_groups;
-- a query for one series reads its groups only
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*), sum(v) FROM col_ord WHERE s = 2;
SELECT count(*), sum(v) FROM col_ord WHERE s = 2;
SELECT count(*), sum(v) FROM col_ord_heap WHERE s = 2;
-- a time range: where two series meet, a group holds the end of one and
-- the start of the next at the same end of the time range, and is skipped
-- as the groups inside a series are: 5 groups read (in plain (series,
-- time) order, 8: such a group spans the whole range)
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*), sum(v) FROM col_ord
WHERE t >= '2024-05-01 00:35+00' AND t < '2024-05-01 00:40+00';
SELECT count(*), sum(v) FROM col_ord
WHERE t >= '2024-05-01 00:35+00' AND t < '2024-05-01 00:40+00';
SELECT count(*), sum(v) FROM col_ord_heap
WHERE t >= '2024-05-01 00:35+00' AND t < '2024-05-01 00:40+00';

-- with an index, VACUUM merges but keeps every row's number: the index
-- still finds the rows
CREATE TABLE col_ord_ix (s bigint, t timestamptz, k text, v bigint) USING parca_columnar
    WITH (autovacuum_enabled = false);
CREATE INDEX ON col_ord_ix (v);
SELECT parca_columnar_set_options('col_ord_ix', stripe_rows => 100000, chunk_group_rows => 500,
                                  sort_by => '{s,t}');
CALL col_ord_fill('col_ord_ix');
VACUUM col_ord_ix;
SELECT stripes, rows FROM parca_columnar_check('col_ord_ix');
SELECT col_ord_inversions('col_ord_ix') > 0 AS unordered;
SET enable_seqscan = off;
SET parca.columnar_enable_custom_scan = off;
SELECT count(*), sum(v), count(DISTINCT k) FROM col_ord_ix WHERE v BETWEEN 100 AND 1099;
RESET enable_seqscan;
RESET parca.columnar_enable_custom_scan;
SELECT count(*), sum(v), count(DISTINCT k) FROM col_ord_heap WHERE v BETWEEN 100 AND 1099;

-- parca_columnar_compact merges without reordering
CREATE TABLE col_ord_c (s bigint, t timestamptz, k text, v bigint) USING parca_columnar
    WITH (autovacuum_enabled = false);
SELECT parca_columnar_set_options('col_ord_c', stripe_rows => 100000, chunk_group_rows => 500,
                                  sort_by => '{s,t}');
CALL col_ord_fill('col_ord_c');
SELECT parca_columnar_compact('col_ord_c') AS merged;
SELECT col_ord_inversions('col_ord_c') > 0 AS unordered;
-- '{}' turns the order off
SELECT parca_columnar_set_options('col_ord_c', sort_by => '{}');
CALL col_ord_fill('col_ord_c');
VACUUM col_ord_c;
SELECT stripes, rows FROM parca_columnar_check('col_ord_c');
SELECT col_ord_inversions('col_ord_c') > 0 AS unordered;

-- sort_by names columns of a pass-by-value type, at most four
\set VERBOSITY terse
SELECT parca_columnar_set_options('col_ord', sort_by => '{nosuch}');
SELECT parca_columnar_set_options('col_ord', sort_by => '{k}');
SELECT parca_columnar_set_options('col_ord', sort_by => '{s,NULL}');
SELECT parca_columnar_set_options('col_ord', sort_by => '{s,t,v,s,t}');
\set VERBOSITY default
SELECT sort_by FROM parca.columnar_options WHERE relid = 'col_ord'::regclass;

-- parca.samples: by series, then time (serpentine), in every partition
SELECT sort_by FROM parca.columnar_options WHERE relid = 'parca.samples'::regclass;
INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
SELECT '2024-05-02 00:00+00'::timestamptz + (g / 3) * interval '1 s', 1000 + g % 3, '{}', g, 1, 0
FROM generate_series(0, 2999) g;
INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
SELECT '2024-05-02 00:00+00'::timestamptz + (g / 3) * interval '1 s', 1000 + g % 3, '{}', g, 1, 0
FROM generate_series(3000, 5999) g;
VACUUM parca.samples;
SELECT count(*) AS partitions, sum(c.stripes) AS stripes, sum(c.rows) AS rows
FROM pg_partition_tree('parca.samples') p, parca_columnar_check(p.relid) c WHERE p.isleaf AND c.rows > 0;
SELECT count(*) FILTER (WHERE series_id < ps OR series_id = ps AND
                              CASE WHEN run % 2 = 1 THEN time < pt ELSE time > pt END) AS inversions,
       count(DISTINCT series_id) AS series
FROM (SELECT series_id, time, dense_rank() OVER (ORDER BY series_id) AS run,
             lag(series_id) OVER (ORDER BY r) AS ps, lag(time) OVER (ORDER BY r) AS pt
      FROM (SELECT series_id, time, row_number() OVER () AS r FROM parca.samples) x) y;
TRUNCATE parca.samples;

DROP TABLE col_ord, col_ord_ix, col_ord_c;
DROP PROCEDURE col_ord_fill(regclass);
DROP FUNCTION col_ord_inversions(regclass), col_ord_mixed_groups(regclass);
