-- parca_query reads a parca_columnar samples table directly (merge_scan.c);
-- it must give what the SQL merge gives: parca_merge over the same rows.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS parca;
RESET client_min_messages;
\getenv abs_srcdir PG_ABS_SRCDIR
\set fib :abs_srcdir '/data/pprof/parca/fib.pb.gz'
\set alloc :abs_srcdir '/data/pprof/parca/alloc_objects.pb.gz'

-- small chunk groups, so that a time range cuts through groups
SELECT parca_columnar_set_options('parca.samples', chunk_group_rows => 1000);
SELECT parca_ingest_pprof(pg_read_binary_file(:'fib'), 'qmerge', '{"run": "a"}') > 0 AS stored;
SELECT parca_ingest_pprof(pg_read_binary_file(:'alloc'), 'qmerge', '{"run": "a"}') > 0 AS stored;
SELECT parca_ingest_pprof(pg_read_binary_file(:'alloc'), 'qmerge', '{"run": "b"}') > 0 AS stored;
-- copies of those rows a second apart, in a stripe of their own, the
-- sample types of a stack side by side
INSERT INTO parca.samples
SELECT '2024-05-01 00:00+00'::timestamptz + (row_number() OVER (ORDER BY s.stack, s.series_id, s.value)) * interval '1 s',
       s.series_id, s.stack, s.value + 1, s.period, s.duration, s.num_labels
FROM parca.samples s JOIN parca.series se ON se.id = s.series_id
WHERE se.profile_type LIKE 'qmerge:%';

-- The SQL merge of the same selection, and how many icicle nodes differ
-- (a diff's value is the sum of both sides, valueRight the compared one).
CREATE FUNCTION qmerge_check(sel text, t0 timestamptz, t1 timestamptz, scale boolean,
                             OUT stacks bigint, OUT total bigint, OUT differing_nodes bigint)
LANGUAGE sql AS $$
  WITH q AS (SELECT parca_query(sel, t0, t1) AS p),
       s AS (SELECT parca_merge(stack, CASE WHEN scale THEN value * period ELSE value END) AS p
             FROM parca.samples WHERE time BETWEEN t0 AND t1
             AND series_id = ANY (parca_series_ids(sel)))
  SELECT parca_profile_stacks(q.p), parca_profile_total(q.p),
         (SELECT count(*) FROM parca_icicle_diff(parca_diff(s.p, q.p, true)) i
          WHERE i.value <> i."valueRight" OR i.self <> i."selfRight")
  FROM q, s
$$;
SELECT profile_type FROM parca.series WHERE profile_type LIKE 'qmerge:%' GROUP BY 1 ORDER BY 1;
-- everything; samples:count is scaled by the period
SELECT * FROM qmerge_check('qmerge:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity', true);
SELECT * FROM qmerge_check('qmerge:alloc_space:bytes:space:bytes', '-infinity', 'infinity', false);
-- one series of two
SELECT * FROM qmerge_check('qmerge:alloc_space:bytes:space:bytes{run="b"}', '-infinity', 'infinity', false);
-- a range that cuts through chunk groups of the copies
SELECT * FROM qmerge_check('qmerge:alloc_space:bytes:space:bytes',
                           '2024-05-01 00:00:30+00', '2024-05-01 01:00+00', false);
SELECT * FROM qmerge_check('qmerge:alloc_space:bytes:space:bytes',
                           '-infinity', '2024-05-01 02:00+00', false);
-- nothing in range: an empty profile
SELECT * FROM qmerge_check('qmerge:alloc_space:bytes:space:bytes', '2000-01-01', '2000-01-02', false);
-- rows of this transaction's earlier statements count, buffered or not
BEGIN;
INSERT INTO parca.samples
SELECT '2024-06-01 00:00+00', s.series_id, s.stack, 7, s.period, s.duration, NULL
FROM parca.samples s JOIN parca.series se ON se.id = s.series_id
WHERE se.profile_type LIKE 'qmerge:alloc_space:%' AND s.time < '2024-05-01';
SELECT * FROM qmerge_check('qmerge:alloc_space:bytes:space:bytes',
                           '2024-06-01 00:00+00', '2024-06-01 00:00+00', false);
ROLLBACK;
-- Chunk groups of one series asked for pass whole: every row counts, with
-- no list of them, unless its value (or, scaled, its period) is NULL,
-- which adds nothing, as in SQL; so does a NULL stack.  parca.samples'
-- columns are NOT NULL, but the merge keeps SQL's rule for any table it
-- reads: here the constraints are dropped for one transaction.  The rows
-- are copies of one series of each type, each type's in a time range of
-- its own.
BEGIN;
ALTER TABLE parca.samples ALTER COLUMN value DROP NOT NULL, ALTER COLUMN period DROP NOT NULL,
                          ALTER COLUMN stack DROP NOT NULL;
-- copies from day0 on of run b's alloc_space rows, or of samples:count's
-- (scaled), with NULL stacks, values and scaled periods or without
CREATE FUNCTION qmerge_copy(day0 timestamptz, scaled boolean, with_nulls boolean) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO parca.samples
  SELECT day0 + n * interval '1 s', series_id,
         CASE WHEN with_nulls AND n % 11 = 0 THEN NULL ELSE stack END,
         CASE WHEN with_nulls AND n % 5 = 0 THEN NULL ELSE value END,
         CASE WHEN (with_nulls OR NOT scaled) AND n % 7 = 0 THEN NULL ELSE period END, duration, NULL
  FROM (SELECT s.*, row_number() OVER () AS n
        FROM parca.samples s JOIN parca.series se ON se.id = s.series_id
        WHERE CASE WHEN scaled THEN se.profile_type = 'qmerge:samples:count:cpu:nanoseconds:delta'
                   ELSE se.labels->>'run' = 'b' AND se.profile_type LIKE 'qmerge:alloc_space:%' END
        AND s.time < '2024-05-01') c
$$;
SELECT qmerge_copy('2024-07-01 00:00+00', false, true);
SELECT qmerge_copy('2024-07-02 00:00+00', true, true);
-- (ranges that are not whole hours: raw rows, not the rollups)
SELECT * FROM qmerge_check('qmerge:alloc_space:bytes:space:bytes', '2024-07-01 00:00:00.5+00',
                           '2024-07-01 23:59:59.5+00', false);
SELECT * FROM qmerge_check('qmerge:alloc_space:bytes:space:bytes{run="b"}', '-infinity', 'infinity', false);
SELECT * FROM qmerge_check('qmerge:samples:count:cpu:nanoseconds:delta', '2024-07-02 00:00:00.5+00',
                           '2024-07-02 23:59:59.5+00', true);
-- without NULL values: NULL periods (unscaled), or none (scaled)
SELECT qmerge_copy('2024-07-04 00:00+00', false, false);
SELECT qmerge_copy('2024-07-05 00:00+00', true, false);
SELECT * FROM qmerge_check('qmerge:alloc_space:bytes:space:bytes', '2024-07-04 00:00:00.5+00',
                           '2024-07-04 23:59:59.5+00', false);
SELECT * FROM qmerge_check('qmerge:samples:count:cpu:nanoseconds:delta', '2024-07-05 00:00:00.5+00',
                           '2024-07-05 23:59:59.5+00', true);
-- a sum that leaves 64 bits is an error there too, as is a value times
-- its period that does
SAVEPOINT s;
INSERT INTO parca.samples
SELECT '2024-07-06 00:00+00', series_id, stack, v, period, duration, NULL
FROM (SELECT s.* FROM parca.samples s JOIN parca.series se ON se.id = s.series_id
      WHERE se.labels->>'run' = 'b' AND se.profile_type LIKE 'qmerge:alloc_space:%'
      AND s.time < '2024-05-01' LIMIT 1) one, (VALUES (9223372036854775807), (1)) v(v);
SELECT parca_profile_stacks(parca_query('qmerge:alloc_space:bytes:space:bytes{run="b"}',
                                        '2024-07-05 23:59:59.5+00', '2024-07-06 00:00:00.5+00'));
ROLLBACK TO s;
INSERT INTO parca.samples
SELECT '2024-07-06 00:00+00', series_id, stack, 4611686018427387904, 2, duration, NULL
FROM parca.samples s JOIN parca.series se ON se.id = s.series_id
WHERE se.profile_type = 'qmerge:samples:count:cpu:nanoseconds:delta'
AND s.time < '2024-05-01' LIMIT 1;
SELECT parca_profile_stacks(parca_query('qmerge:samples:count:cpu:nanoseconds:delta',
                                        '2024-07-05 23:59:59.5+00', '2024-07-06 00:00:00.5+00'));
ROLLBACK;
-- a merge that an error stops half way (that overflow, in the rows this
-- transaction buffered, read after every stripe's chunks and
-- dictionaries: the path of a cancel) leaves the session's next merges
-- whole: the buffers the failed scans held come back with their memory
-- (columnar_scratch.c), and the next scans decode into them afresh
BEGIN;
INSERT INTO parca.samples
SELECT '2024-07-06 00:00+00', series_id, stack, 4611686018427387904, 2, duration, NULL
FROM parca.samples s JOIN parca.series se ON se.id = s.series_id
WHERE se.profile_type = 'qmerge:samples:count:cpu:nanoseconds:delta'
AND s.time < '2024-05-01' LIMIT 1;
SELECT parca_profile_stacks(parca_query('qmerge:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity'));
ROLLBACK;
SELECT * FROM qmerge_check('qmerge:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity', true);
SELECT * FROM qmerge_check('qmerge:alloc_space:bytes:space:bytes', '-infinity', 'infinity', false);
-- grouping reads the table directly too, every group in the same pass:
-- under each group's root frame are exactly the stacks and values of a
-- query of that group's series alone
CREATE FUNCTION qmerge_group_check(ptype text, t0 timestamptz, t1 timestamptz,
                                   OUT run text, OUT stacks bigint, OUT total bigint, OUT differing_functions bigint)
RETURNS SETOF record LANGUAGE sql AS $$
  WITH g AS (SELECT parca_query(ptype, t0, t1, group_by => '{run}') AS p),
       runs AS (SELECT DISTINCT labels->>'run' AS run FROM parca.series WHERE profile_type = ptype),
       sides AS (SELECT r.run,
                        parca_filter(g.p, jsonb_build_array(jsonb_build_object(
                            'field', 'function', 'match', 'equal', 'value', format('run="%s"', r.run)))) AS grouped,
                        parca_query(format('%s{run="%s"}', ptype, r.run), t0, t1) AS alone
                 FROM g, runs r)
  SELECT run, parca_profile_stacks(grouped), parca_profile_total(grouped),
         (SELECT count(*) FROM ((SELECT function, flat, cum FROM parca_top(grouped) WHERE function <> format('run="%s"', run)
                                 EXCEPT SELECT function, flat, cum FROM parca_top(alone))
                                UNION ALL
                                (SELECT function, flat, cum FROM parca_top(alone)
                                 EXCEPT SELECT function, flat, cum FROM parca_top(grouped))) d)
  FROM sides ORDER BY 1
$$;
-- the group frames are registered by a first grouped query: parca_filter
-- reads the metastore as the statement found it
SELECT parca_profile_stacks(parca_query('qmerge:alloc_space:bytes:space:bytes', '-infinity', 'infinity',
                                        group_by => '{run}')) > 0 AS merged;
SELECT * FROM qmerge_group_check('qmerge:alloc_space:bytes:space:bytes', '-infinity', 'infinity');
SELECT * FROM qmerge_group_check('qmerge:alloc_space:bytes:space:bytes',
                                 '2024-05-01 00:00:30+00', '2024-05-01 01:00+00');
SELECT * FROM qmerge_group_check('qmerge:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity');
-- and the grouped total is the ungrouped one
SELECT parca_profile_total(parca_query('qmerge:alloc_space:bytes:space:bytes', '-infinity', 'infinity',
                                       group_by => '{run}')) =
       parca_profile_total(parca_query('qmerge:alloc_space:bytes:space:bytes', '-infinity', 'infinity'))
       AS same_total;
-- Each partition numbers its stack dictionary's entries from 0, so an
-- entry number is another stack in each: here the same stacks in reverse
-- order, with other values.  The first day has a second stripe of the
-- stacks in the other order, and of stacks new to it.  parca_query takes a
-- stack's number once per table, by its entry there (merge_scan.c), and
-- must start afresh in each.
SELECT count(*) AS made FROM (SELECT parca.create_partition('2024-08-01 00:00+00')
                              UNION ALL SELECT parca.create_partition('2024-08-02 00:00+00')) p;
CREATE FUNCTION qmerge_copy_ordered(day0 timestamptz, types text, descending boolean, times int)
RETURNS void LANGUAGE sql AS $$
  INSERT INTO parca.samples
  SELECT day0 + n * interval '1 s', series_id, stack, value * times, period, duration, NULL
  FROM (SELECT s.*, row_number() OVER (ORDER BY CASE WHEN descending THEN NULL ELSE s.stack END,
                                                s.stack DESC, s.series_id, s.value) AS n
        FROM parca.samples s JOIN parca.series se ON se.id = s.series_id
        WHERE se.profile_type LIKE types AND s.time < '2024-05-01') c
  ORDER BY n
$$;
SELECT qmerge_copy_ordered('2024-08-01 00:00+00', 'qmerge:alloc_space:%', false, 1);
SELECT qmerge_copy_ordered('2024-08-02 00:00+00', 'qmerge:alloc_space:%', true, 3);
SELECT qmerge_copy_ordered('2024-08-01 06:00+00', 'qmerge:%', true, 5);
SELECT count(DISTINCT tableoid) AS partitions, count(*) > 0 AS copied FROM parca.samples
WHERE time >= '2024-08-01';
SELECT * FROM qmerge_check('qmerge:alloc_space:bytes:space:bytes', '2024-08-01 00:00:00.5+00',
                           '2024-08-02 23:59:59.5+00', false);
SELECT * FROM qmerge_check('qmerge:samples:count:cpu:nanoseconds:delta', '2024-08-01 00:00:00.5+00',
                           '2024-08-02 23:59:59.5+00', true);
SELECT * FROM qmerge_group_check('qmerge:alloc_space:bytes:space:bytes', '2024-08-01 00:00:00.5+00',
                                 '2024-08-02 23:59:59.5+00');
-- A chunk group whose rows share their period is added in one pass
-- (merge_scan.c), each row's value times that period; rows of one group
-- with two periods are each scaled by their own.  Stacks of the count
-- series, value 3: at 00:00 with periods 5 and 7 interleaved, at 01:00
-- (a stripe of its own) with period 5 alone.
SELECT count(*) AS made FROM (SELECT parca.create_partition('2024-08-03 00:00+00')) p;
CREATE FUNCTION qmerge_copy_periods(t timestamptz, periods int[]) RETURNS void LANGUAGE sql AS $$
  INSERT INTO parca.samples
  SELECT t, s.series_id, s.stack, 3, p, s.duration, NULL
  FROM (SELECT s.* FROM parca.samples s JOIN parca.series se ON se.id = s.series_id
        WHERE se.profile_type = 'qmerge:samples:count:cpu:nanoseconds:delta' AND s.time < '2024-05-01'
        ORDER BY s.stack LIMIT 10) s, unnest(periods) p
  ORDER BY s.stack, p
$$;
SELECT qmerge_copy_periods('2024-08-03 00:00+00', '{5,7}');
SELECT qmerge_copy_periods('2024-08-03 01:00+00', '{5}');
SELECT chunk_group, min, max FROM parca_columnar_chunks('parca.samples_20240803')
WHERE attname = 'period' ORDER BY stripe, chunk_group;
SELECT * FROM qmerge_check('qmerge:samples:count:cpu:nanoseconds:delta', '2024-08-03 00:00+00',
                           '2024-08-03 00:00+00', true);
SELECT * FROM qmerge_check('qmerge:samples:count:cpu:nanoseconds:delta', '2024-08-03 01:00+00',
                           '2024-08-03 01:00+00', true);
SELECT * FROM qmerge_check('qmerge:samples:count:cpu:nanoseconds:delta', '2024-08-03 00:00+00',
                           '2024-08-03 23:00+00', true);
DROP FUNCTION qmerge_copy_ordered, qmerge_copy_periods;
DROP TABLE parca.samples_20240801, parca.samples_20240802, parca.samples_20240803;
DROP FUNCTION qmerge_group_check;
-- (parca.samples' options as installed: its sort order and write log)
UPDATE parca.columnar_options SET chunk_group_rows = NULL WHERE relid = 'parca.samples'::regclass;
DROP FUNCTION qmerge_check;
