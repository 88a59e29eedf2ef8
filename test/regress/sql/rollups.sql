-- Rollups (sql/46_rollups.sql, docs/rollups.md): parca_query reads whole
-- rolled-up weeks from parca.samples_weekly, whole rolled-up days from
-- parca.samples_daily, whole rolled-up hours from
-- parca.samples_hourly and the rest from raw rows; every answer must
-- equal the raw merge, stack for stack, which compare() checks by running
-- the same query with parca.rollups off.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS parca;
RESET client_min_messages;
-- the NOTICE about retention names times relative to now(): its DETAIL is left out
\set VERBOSITY terse
\getenv abs_srcdir PG_ABS_SRCDIR
\set cpu :abs_srcdir '/data/pprof/google-pprof/sample.cpu'
\set alloc :abs_srcdir '/data/pprof/parca/alloc_objects.pb.gz'
TRUNCATE parca.samples, parca.series, parca.locations, parca.functions, parca.mappings;

-- the icicle rows in order: equal icicles are equal stacks and values
CREATE FUNCTION pg_temp.icicle(p profile) RETURNS text[] LANGUAGE sql AS $$
    SELECT array_agg(format('%s %s %s %s', t.level, t.value, t.self, t.label) ORDER BY t.n)
    FROM parca_icicle(p) WITH ORDINALITY AS t(level, value, self, label, n)
$$;
CREATE FUNCTION pg_temp.icicle_diff(p profile) RETURNS text[] LANGUAGE sql AS $$
    SELECT array_agg(format('%s %s %s %s %s %s', t.level, t.value, t.self, t.vr, t.sr, t.label) ORDER BY t.n)
    FROM parca_icicle_diff(p) WITH ORDINALITY AS t(level, value, self, vr, sr, label, n)
$$;
-- the same query with rollups and without: the raw merge's size, and
-- whether the two are the same profile
CREATE FUNCTION pg_temp.compare(sel text, a timestamptz, b timestamptz, grp text[] DEFAULT NULL,
                                keep text DEFAULT NULL, dropf text DEFAULT NULL)
    RETURNS TABLE(stacks bigint, total bigint, same boolean) LANGUAGE plpgsql AS $$
DECLARE
    r profile;
    raw profile;
BEGIN
    PERFORM set_config('parca.rollups', 'on', true);
    r := parca_query(sel, a, b, grp, keep, dropf);
    PERFORM set_config('parca.rollups', 'off', true);
    raw := parca_query(sel, a, b, grp, keep, dropf);
    PERFORM set_config('parca.rollups', 'on', true);
    RETURN QUERY SELECT parca_profile_stacks(raw), parca_profile_total(raw),
        parca_profile_type(r) IS NOT DISTINCT FROM parca_profile_type(raw)
        AND parca_profile_period(r) IS NOT DISTINCT FROM parca_profile_period(raw)
        AND pg_temp.icicle(r) IS NOT DISTINCT FROM pg_temp.icicle(raw);
END
$$;

-- parca_query_range with rollups and without: its rows, its profiles,
-- and whether every row is the same (values to the last bit)
CREATE FUNCTION pg_temp.compare_range(sel text, a timestamptz, b timestamptz, step interval,
                                      sum_by text[] DEFAULT NULL)
    RETURNS TABLE(rows integer, profiles numeric, same boolean) LANGUAGE plpgsql AS $$
DECLARE
    r text[];
    raw text[];
    n numeric;
BEGIN
    PERFORM set_config('parca.rollups', 'on', true);
    r := ARRAY(SELECT q::text FROM parca_query_range(sel, a, b, step, sum_by) q);
    PERFORM set_config('parca.rollups', 'off', true);
    SELECT array_agg(q::text), sum(q.profiles) INTO raw, n FROM parca_query_range(sel, a, b, step, sum_by) q;
    PERFORM set_config('parca.rollups', 'on', true);
    RETURN QUERY SELECT cardinality(raw), n, r = raw;
END
$$;

-- two CPU series and a memory one, then copies of their rows every 7
-- minutes over 6 hours, with values, periods (also 0: unknown) and
-- seconds varied, copies exactly on the hour (a range's stop is
-- inclusive), and copies every 3 hours over the three days after
SELECT parca_ingest_pprof(pg_read_binary_file(:'cpu'), 'cpu', '{"job": "a"}') AS rows;
SELECT parca_ingest_pprof(pg_read_binary_file(:'cpu'), 'cpu', '{"job": "b", "zone": "z1"}') AS rows;
SELECT parca_ingest_pprof(pg_read_binary_file(:'alloc'), 'mem', '{"job": "c"}') AS rows;
CREATE TEMP TABLE orig AS SELECT * FROM parca.samples;
INSERT INTO parca.samples
SELECT '2017-09-29 20:00+00'::timestamptz + k * interval '7 minutes' + (k % 5) * interval '13 seconds',
       series_id, stack, value * (k % 3 + 1),
       CASE WHEN k % 4 = 0 THEN period * 2 WHEN k % 11 = 0 THEN 0 ELSE period END, duration, NULL
FROM orig, generate_series(1, 52) k;
INSERT INTO parca.samples
SELECT t, series_id, stack, value, period, duration, NULL
FROM orig, (VALUES ('2017-09-29 22:00+00'::timestamptz), ('2017-09-29 23:00+00')) v(t);
INSERT INTO parca.samples
SELECT '2017-09-30 00:00+00'::timestamptz + k * interval '3 hours' + interval '1 minute',
       series_id, stack, value * (k % 4 + 1), period, duration, NULL
FROM orig, generate_series(0, 23) k;

-- the rows move from the default partition into partitions of their days
SELECT created >= 5 AS created, moved_rows FROM parca_maintain_partitions();

-- nothing rolled up yet: every query reads raw rows
SELECT count(*) AS hours FROM parca.rollup_hours;
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity');

-- the worker's round rolls up every complete hour with rows, oldest
-- first, then every day whose hours are all rolled up, then every week
-- (from Thursday 00:00 UTC) whose days all are
SELECT * FROM parca_maintain_rollups(max_hours => 2);
SELECT * FROM parca_maintain_rollups(max_hours => 20);
SELECT * FROM parca_maintain_rollups();
SELECT * FROM parca_maintain_rollups();
SELECT start, generation FROM parca.rollup_hours ORDER BY start;
SELECT start, generation FROM parca.rollup_days ORDER BY start;
SELECT start, generation FROM parca.rollup_weeks ORDER BY start;
SELECT level, partition, range_start, range_end, periods FROM parca.rollups ORDER BY level, range_start;
SELECT amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
WHERE c.oid = 'parca.samples_hourly_20170928'::regclass;
-- fewer rows than raw: one per hour (day, week), series, stack and period
SELECT (SELECT count(*) FROM parca.samples_weekly) AS weekly_rows,
       (SELECT count(*) FROM parca.samples_daily) AS daily_rows,
       (SELECT count(*) FROM parca.samples_hourly) AS hourly_rows,
       (SELECT count(*) FROM parca.samples) AS raw_rows;
-- the sums are those of the raw rows, per hour, series and period, and
-- each level's those of the level below, per its periods
CREATE FUNCTION pg_temp.differing(source regclass, target regclass, width interval) RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM (
                        SELECT date_bin($1, time, ''1970-01-01 00:00+00'') AS t, series_id, period, sum(value) AS v
                        FROM %s GROUP BY 1, 2, 3) r
                    FULL JOIN (SELECT time AS t, series_id, period, sum(value) AS v FROM %s GROUP BY 1, 2, 3) u
                        USING (t, series_id, period)
                    WHERE r.v IS DISTINCT FROM u.v', source, target) INTO n USING width;
    RETURN n;
END
$$;
SELECT v AS level, pg_temp.differing(l.source, l.target, l.width) AS differing
FROM unnest(ARRAY['hour', 'day', 'week']) v, parca.rollup_level(v) l;

-- whole hours, ragged edges, a range within one hour, stops on the hour
-- (inclusive), the whole range
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 00:59:59.999999+00');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-29 23:00+00');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 20:13+00', '2017-09-30 02:29:59+00');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 22:10+00', '2017-09-29 22:50+00');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 22:00:00.000001+00', '2017-09-30 01:00+00');
-- days: whole, with hours and raw edges around them
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-30 00:00+00', '2017-10-01 23:59:59.999999+00');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:30+00', '2017-10-02 22:30+00');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-30 00:00+00', '2017-09-30 23:59:59+00');
SELECT * FROM pg_temp.compare('mem:alloc_space:bytes:space:bytes', '2017-09-29 12:00+00', '2017-10-03 12:00+00', '{job}');
-- weeks: whole (Thursday to Wednesday), with days, hours and raw edges
-- around them
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-28 00:00+00', '2017-10-04 23:59:59.999999+00');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-27 10:30+00', '2017-10-06 01:30+00');
SELECT * FROM pg_temp.compare('mem:alloc_space:bytes:space:bytes', '2017-09-27 00:00+00', '2017-10-05 00:00+00', '{job}');
-- parca_query_range: steps of whole hours from the hours' sums
-- (parca.profiles_hourly), steps that cut hours from raw rows, ragged
-- edges, grouping, other types
SELECT * FROM pg_temp.compare_range('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 20:00+00', '2017-09-30 06:00+00', '1 hour');
SELECT * FROM pg_temp.compare_range('cpu:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity', '1 day');
SELECT * FROM pg_temp.compare_range('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 20:00+00', '2017-09-30 06:00+00', '90 minutes');
SELECT * FROM pg_temp.compare_range('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 20:13+00', '2017-09-30 02:00+00', '20 minutes');
SELECT * FROM pg_temp.compare_range('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:30+00', '2 hours', '{job}');
SELECT * FROM pg_temp.compare_range('cpu:samples:count:cpu:nanoseconds:delta{job="b"}', '2017-09-29 21:00+00', '2017-09-30 02:30+00', '1 hour', '{}');
SELECT * FROM pg_temp.compare_range('cpu:cpu:nanoseconds:cpu:nanoseconds:delta', '2017-09-29 18:00+00', '2017-09-30 06:00+00', '6 hours');
SELECT * FROM pg_temp.compare_range('mem:alloc_space:bytes:space:bytes', '2017-09-29 00:00+00', '2017-10-01 00:00+00', '1 day');
-- other types: not a count (no scaling), memory
SELECT * FROM pg_temp.compare('cpu:cpu:nanoseconds:cpu:nanoseconds:delta', '2017-09-29 20:30+00', '2017-09-30 03:00+00');
SELECT * FROM pg_temp.compare('mem:alloc_space:bytes:space:bytes', '2017-09-29 20:30+00', '2017-09-30 03:00+00');
-- selectors, grouping, stack filters
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta{job="a"}', '2017-09-29 20:30+00', '2017-09-30 03:00+00');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta{job=~"a|b", zone!="z1"}', '2017-09-29 20:30+00', '2017-09-30 03:00+00');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta{job!~"b"}', '2017-09-29 20:30+00', '2017-09-30 03:00+00');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta{job="nobody"}', '2017-09-29 20:30+00', '2017-09-30 03:00+00');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 20:30+00', '2017-09-30 03:00+00', '{job}');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 20:30+00', '2017-09-30 03:00+00', '{zone,job}');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 20:30+00', '2017-09-30 03:00+00', NULL, 'runtime');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 20:30+00', '2017-09-30 03:00+00', NULL, NULL, 'runtime');
-- a diff of two ranges, through rollups and not
SELECT pg_temp.icicle_diff(parca_diff(parca_query('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-29 23:00+00'),
                                 parca_query('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 23:00+00', '2017-09-30 02:00+00')))
    = (SELECT pg_temp.icicle_diff(parca_diff(parca_query('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-29 23:00+00'),
                                        parca_query('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 23:00+00', '2017-09-30 02:00+00')))
       FROM set_config('parca.rollups', 'off', false)) AS same_diff;
RESET parca.rollups;

-- the rollups are read: a wrong rollup row changes the answer (and is
-- taken out again by the next late rows' delta, as any difference is)
INSERT INTO parca.samples_hourly
SELECT h.time, h.series_id, h.stack, 1000, h.period, 0, NULL
FROM parca.samples_hourly h JOIN parca.series s ON s.id = h.series_id
WHERE h.time = '2017-09-29 22:00+00' AND s.profile_type = 'cpu:samples:count:cpu:nanoseconds:delta' LIMIT 1;
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 00:59:59.999999+00');

-- late rows for hours already rolled up, long ago: the hours they were
-- written into (the write log says which) are read from raw rows at once,
-- and the next round rolls them up again, adding the late rows' sums, and
-- the days and weeks of those hours
INSERT INTO parca.samples
SELECT t, series_id, stack, value * 5, period, duration, NULL
FROM orig, (VALUES ('2017-09-29 22:30+00'::timestamptz), ('2017-10-01 05:10+00')) v(t);
SELECT lo, hi FROM parca.columnar_write_log WHERE relid = 'parca.samples'::regclass ORDER BY lo;
SELECT parca_columnar_written('parca.samples', '2017-09-29 22:00+00', '2017-09-29 22:59:59+00') AS hour_written,
       parca_columnar_written('parca.samples', '2017-09-29 23:00+00', '2017-09-29 23:59:59+00') AS next_hour_written;
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 00:59:59.999999+00');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-10-01 00:00+00', '2017-10-01 23:59:59.999999+00');
SELECT * FROM parca_maintain_rollups();
SELECT start, generation FROM parca.rollup_hours WHERE start = '2017-09-29 22:00+00';
SELECT count(*) AS log_left FROM parca.columnar_write_log;
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 00:59:59.999999+00');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-10-01 00:00+00', '2017-10-01 23:59:59.999999+00');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 00:00+00', '2017-10-03 23:59:59.999999+00');
SELECT * FROM pg_temp.compare_range('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 20:00+00', '2017-09-30 02:00+00', '1 hour');
-- by hand, over them: nothing left to do
SELECT * FROM parca_rollup_hours('2017-09-29 22:00+00', '2017-09-29 23:00+00');
SELECT * FROM parca_rollup_hours('2017-09-30 00:00+00', '2017-10-03 00:00+00');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-10-01 00:00+00', '2017-10-01 23:59:59.999999+00');
SELECT * FROM pg_temp.compare('mem:alloc_space:bytes:space:bytes', '-infinity', 'infinity', '{job}');
-- over everything: nothing is left to do
SELECT * FROM parca_rollup_hours('-infinity', 'infinity');
-- an hour taken off the list by hand is rolled up again by difference:
-- nothing is counted twice
DELETE FROM parca.rollup_hours WHERE start = '2017-09-29 23:00+00';
DELETE FROM parca.rollup_days WHERE start = '2017-10-01 00:00+00';
SELECT * FROM parca_rollup_hours('-infinity', 'infinity');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 00:59:59.999999+00');
-- a range that does not hold a whole hour rolls up nothing; an hour
-- that is not over yet is not rolled up
SELECT * FROM parca_rollup_hours('2017-09-29 22:10+00', '2017-09-29 23:10+00');
SELECT * FROM parca_rollup_hours(now() - interval '10 minutes', 'infinity');

-- rollups outlive raw rows: with the raw rows gone, whole hours are
-- still there, and a range whose edges reach past parca.retention says so
CREATE TEMP TABLE before AS
SELECT parca_query('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:59:59.999999+00') AS p;
CREATE TEMP TABLE range_before AS
SELECT q::text AS r FROM parca_query_range('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:59:59.999999+00', '1 hour', '{job}') q;
CREATE TEMP TABLE function_before AS
SELECT f::text AS r FROM parca_function_range('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:59:59.999999+00', '2 hours', 'main', 'contains') f;
TRUNCATE parca.samples;
SELECT * FROM parca_rollup_hours('-infinity', 'infinity');
SELECT pg_temp.icicle(parca_query('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:59:59.999999+00'))
       = pg_temp.icicle(p) AS same_without_raw FROM before;
-- parca_query_range (and parca_function_range, through it and
-- parca_query) from the sums of whole hours: the same rows
SELECT count(*) AS rows, count(*) FILTER (WHERE q.r IS NULL OR b.r IS NULL) AS differing
FROM (SELECT q::text AS r FROM parca_query_range('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:59:59.999999+00', '1 hour', '{job}') q) q
FULL JOIN range_before b USING (r);
SELECT count(*) AS rows, count(*) FILTER (WHERE f.r IS NULL OR b.r IS NULL) AS differing
FROM (SELECT f::text AS r FROM parca_function_range('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:59:59.999999+00', '2 hours', 'main', 'contains') f) f
FULL JOIN function_before b USING (r);
-- the unit, from the rollups' periods
SELECT parca_query_unit('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:59:59.999999+00') AS unit;
SET parca.rollups = off;
SELECT parca_query_unit('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:59:59.999999+00') AS unit_raw_only;
SELECT count(*) AS range_raw_only FROM parca_query_range('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:59:59.999999+00', '1 hour');
RESET parca.rollups;
-- steps that cut hours are read from raw rows
SELECT count(*) AS range_cut_hours FROM parca_query_range('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:59:59.999999+00', '25 minutes');
SET parca.retention = '30d';
SELECT parca_profile_total(parca_query('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:59:59.999999+00'))
       = parca_profile_total(p) AS whole_hours_quiet FROM before;
SELECT parca_profile_total(parca_query('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 20:30+00', '2017-09-30 03:00+00'))
       = parca_profile_total(p) AS ragged_says_so FROM before;
SELECT count(*) AS range_whole_hours_quiet FROM parca_query_range('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:59:59.999999+00', '1 hour');
SELECT count(*) AS range_ragged_says_so FROM parca_query_range('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 20:30+00', '2017-09-30 03:00+00', '1 hour');
SET parca.rollups = off;
SELECT parca_profile_total(parca_query('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:59:59.999999+00')) AS raw_only;
RESET parca.rollups;
RESET parca.retention;

-- parca.rollups off: nothing is rolled up
SET parca.rollups = off;
SELECT * FROM parca_rollup_hours('-infinity', 'infinity');
SELECT * FROM parca_maintain_rollups();
RESET parca.rollups;

-- hostile arguments
SELECT * FROM parca_rollup_hours(NULL, now());
SELECT * FROM parca_rollup_hours('infinity', '-infinity');
SELECT * FROM parca_rollup_hours('-infinity', '-infinity');
SELECT * FROM parca_maintain_rollups(max_hours => -1);
SELECT * FROM parca_maintain_rollups(NULL);
SELECT parca.create_rollup_partition('hour', 'infinity');
SELECT parca.create_rollup_partition('month', '2017-01-01 00:00+00');
SELECT * FROM parca.rollup_candidates('month', '-infinity', 'infinity');
SELECT parca.rollup_period('hour', NULL);
SELECT parca.rollup_period('year', now());
SELECT parca_profile_stacks(parca_query('cpu:samples:count:cpu:nanoseconds:delta', 'infinity', '-infinity')) AS reversed;
SELECT parca_profile_stacks(parca_query('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 22:00+00', '2017-09-29 22:00+00')) AS instant;

-- upkeep is for superusers (or whom they grant it); reading is not
-- (raw rows are gone: a reader who may not read the rollups sees none)
CREATE ROLE regress_parca_rollups;
GRANT USAGE ON SCHEMA parca TO regress_parca_rollups;
GRANT SELECT ON parca.samples, parca.series, parca.locations, parca.functions, parca.mappings
    TO regress_parca_rollups;
SET ROLE regress_parca_rollups;
SELECT * FROM parca_rollup_hours('-infinity', 'infinity');
SELECT * FROM parca_maintain_rollups();
SELECT parca_profile_stacks(parca_query('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:59:59.999999+00')) AS stacks;
SELECT count(*) AS range_rows FROM parca_query_range('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:59:59.999999+00', '1 hour');
SELECT parca_query_unit('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:59:59.999999+00') AS unit;
RESET ROLE;
GRANT SELECT ON parca.samples_hourly, parca.rollup_hours, parca.samples_daily, parca.rollup_days, parca.profiles_hourly
    TO regress_parca_rollups;
SET ROLE regress_parca_rollups;
SELECT parca_profile_stacks(parca_query('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:59:59.999999+00')) AS stacks;
SELECT count(*) AS range_rows FROM parca_query_range('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:59:59.999999+00', '1 hour');
SELECT parca_query_unit('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 02:59:59.999999+00') AS unit;
RESET ROLE;
DROP OWNED BY regress_parca_rollups;
DROP ROLE regress_parca_rollups;

-- retention of the rollups drops their partitions and what they listed,
-- each level on its own
SET parca.rollup_retention = '30d';
SELECT * FROM parca_maintain_rollups();
SELECT level, count(*) AS partitions FROM parca.rollups GROUP BY 1;
SELECT (SELECT count(*) FROM parca.rollup_hours) AS hours, (SELECT count(*) FROM parca.rollup_days) AS days,
       (SELECT count(*) FROM parca.rollup_weeks) AS weeks, (SELECT count(*) FROM parca.profiles_hourly) AS hour_sums;
SET parca.rollup_daily_retention = '30d';
SELECT * FROM parca_maintain_rollups();
SELECT count(*) AS partitions, (SELECT count(*) FROM parca.rollup_days) AS days,
       (SELECT count(*) FROM parca.rollup_weeks) AS weeks FROM parca.rollups;
RESET parca.rollup_retention;
RESET parca.rollup_daily_retention;
SHOW parca.rollups;
-- leave no dated partition behind (other tests' plans show the partitions)
CREATE FUNCTION pg_temp.drop_dated_partitions() RETURNS void LANGUAGE plpgsql AS $$
DECLARE p regclass;
BEGIN
    FOR p IN SELECT partition FROM parca.partitions WHERE NOT is_default LOOP
        EXECUTE format('DROP TABLE %s', p);
    END LOOP;
END
$$;
SELECT pg_temp.drop_dated_partitions();
SELECT * FROM parca_maintain_rollups();
-- Late rows in every shape (issue 25): the rollups agree with the raw
-- rows at all times, before the worker's next round and after it, and
-- keep the history of hours whose raw rows retention dropped.  Days of
-- about 45 days ago (from a Thursday, as weeks start), and today's hours.
TRUNCATE parca.samples_hourly, parca.samples_daily, parca.samples_weekly, parca.rollup_hours,
    parca.rollup_days, parca.rollup_weeks, parca.profiles_hourly;
-- parca_query, parca_query_range (steps of whole hours, and steps that
-- cut them) and parca_function_range, with rollups and without, under
-- one snapshot: whether they all agree
CREATE FUNCTION pg_temp.answers(sel text, a timestamptz, b timestamptz) RETURNS text
    LANGUAGE sql AS $$
    SELECT concat_ws(' | ', array_to_string(pg_temp.icicle(parca_query(sel, a, b)), ','),
        (SELECT string_agg(r::text, ',' ORDER BY r.time, r.series) FROM parca_query_range(sel, a, b, '1 hour') r),
        (SELECT string_agg(r::text, ',' ORDER BY r.time, r.series) FROM parca_query_range(sel, a, b, '100 minutes') r),
        (SELECT string_agg(f::text, ',' ORDER BY f.time, f.function)
         FROM parca_function_range(sel, a, b, '1 day', 'main', 'contains') f))
$$;
CREATE FUNCTION pg_temp.agree(sel text, a timestamptz, b timestamptz) RETURNS boolean
    LANGUAGE plpgsql AS $$
DECLARE
    with_rollups text;
    raw text;
BEGIN
    PERFORM set_config('parca.rollups', 'on', true);
    with_rollups := pg_temp.answers(sel, a, b);
    PERFORM set_config('parca.rollups', 'off', true);
    raw := pg_temp.answers(sel, a, b);
    PERFORM set_config('parca.rollups', 'on', true);
    RETURN with_rollups IS NOT DISTINCT FROM raw;
END
$$;
-- a worker's round: partitions (rows moved out of the default
-- partition, retention), then rollups
CREATE FUNCTION pg_temp.round() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM parca_maintain_partitions();
    PERFORM parca_maintain_rollups();
END
$$;
CREATE TEMP TABLE d AS
SELECT date_bin('7 days', now() - interval '45 days', '1970-01-01 00:00+00') AS w0,
       date_bin('1 hour', now() - interval '5 hours', '1970-01-01 00:00+00') AS h5;
-- days 0 to 9 from a Thursday, hours 9 to 11, but no row on day 2 (no
-- partition is made for it) and none at 15:00; today, two hours
INSERT INTO parca.samples
SELECT d.w0 + k * interval '1 day' + h * interval '1 hour' + interval '20 minutes',
       series_id, stack, value * ((k + h) % 3 + 1), period, duration, NULL
FROM orig, d, generate_series(0, 9) k, generate_series(9, 11) h WHERE k <> 2;
INSERT INTO parca.samples
SELECT d.h5 + k * interval '1 hour' + interval '10 minutes', series_id, stack, value, period, duration, NULL
FROM orig, d, generate_series(0, 1) k;
SELECT pg_temp.round();
SELECT (SELECT count(*) FROM parca.rollup_hours WHERE start < w0 + interval '14 days') AS hours,
       (SELECT count(*) FROM parca.rollup_days WHERE start < w0 + interval '14 days') AS days,
       (SELECT count(*) FROM parca.rollup_weeks WHERE start < w0 + interval '14 days') AS weeks
FROM d;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT pg_temp.agree('cpu:samples:count:cpu:nanoseconds:delta', w0, w0 + interval '14 days' - interval '1 microsecond') AS weeks,
       pg_temp.agree('mem:alloc_space:bytes:space:bytes', w0 - interval '1 day', w0 + interval '15 days') AS more
FROM d;
COMMIT;

-- a row on a day without a partition (in the default partition, moved
-- out by the round), inside a week rolled up: right at once and after
-- the round
INSERT INTO parca.samples
SELECT d.w0 + interval '2 days 10 hours 25 minutes', series_id, stack, value * 7, period, duration, NULL
FROM orig, d;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT pg_temp.agree('cpu:samples:count:cpu:nanoseconds:delta', w0, w0 + interval '7 days' - interval '1 microsecond') AS week,
       pg_temp.agree('cpu:samples:count:cpu:nanoseconds:delta', w0 + interval '2 days', w0 + interval '3 days' - interval '1 microsecond') AS day
FROM d;
COMMIT;
SELECT pg_temp.round();
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT pg_temp.agree('cpu:samples:count:cpu:nanoseconds:delta', w0, w0 + interval '7 days' - interval '1 microsecond') AS week,
       pg_temp.agree('mem:alloc_space:bytes:space:bytes', w0 - interval '3 hours', w0 + interval '9 days') AS around
FROM d;
COMMIT;

-- a new series in an empty hour (15:00) of a day rolled up
INSERT INTO parca.samples
SELECT d.w0 + interval '4 days 15 hours 5 minutes',
       parca_series_id('cpu:samples:count:cpu:nanoseconds:delta', '{"job": "late"}'),
       stack, value, period, duration, NULL
FROM orig, d WHERE series_id = (SELECT min(series_id) FROM orig);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT pg_temp.agree('cpu:samples:count:cpu:nanoseconds:delta', w0, w0 + interval '7 days' - interval '1 microsecond') AS week,
       pg_temp.agree('cpu:samples:count:cpu:nanoseconds:delta{job="late"}', w0, w0 + interval '14 days') AS series
FROM d;
COMMIT;
SELECT pg_temp.round();
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT pg_temp.agree('cpu:samples:count:cpu:nanoseconds:delta', w0, w0 + interval '7 days' - interval '1 microsecond') AS week,
       pg_temp.agree('cpu:samples:count:cpu:nanoseconds:delta{job="late"}', w0, w0 + interval '14 days') AS series
FROM d;
COMMIT;

-- late rows in today's hours, hours after they were rolled up
INSERT INTO parca.samples
SELECT d.h5 + interval '50 minutes', series_id, stack, value * 3, period, duration, NULL FROM orig, d;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT pg_temp.agree('cpu:samples:count:cpu:nanoseconds:delta', h5 - interval '1 hour', h5 + interval '3 hours') AS today FROM d;
COMMIT;
SELECT pg_temp.round();
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT pg_temp.agree('cpu:samples:count:cpu:nanoseconds:delta', h5 - interval '1 hour', h5 + interval '3 hours') AS today,
       pg_temp.agree('cpu:samples:count:cpu:nanoseconds:delta', h5, h5 + interval '1 hour' - interval '1 microsecond') AS hour
FROM d;
COMMIT;

-- retention drops the raw partitions of days 0 and 1: their hours keep
-- their rollups (sealed), and rows written into them later, however
-- many, are added to that history, never compared against rows gone
CREATE FUNCTION pg_temp.totals(sel text, a timestamptz, b timestamptz,
                               OUT total bigint, OUT range_value double precision, OUT profiles numeric)
    LANGUAGE sql AS $$
    SELECT parca_profile_total(parca_query(sel, a, b)),
           (SELECT sum(r.value) FROM parca_query_range(sel, a, b, '1 hour') r),
           (SELECT sum(r.profiles) FROM parca_query_range(sel, a, b, '1 hour') r)
$$;
CREATE TEMP TABLE sealed AS
SELECT t.* FROM d, pg_temp.totals('cpu:samples:count:cpu:nanoseconds:delta', w0, w0 + interval '2 days' - interval '1 microsecond') t;
SELECT total > 0 AS history FROM sealed;
SELECT set_config('parca.retention',
                  floor(extract(epoch FROM now() - (w0 + interval '2 days')) / 60) || 'min', false) <> '' AS retention
FROM d;
SELECT pg_temp.round();
SELECT count(*) AS raw_partitions_left FROM parca.partitions p, d
WHERE NOT p.is_default AND p.range_start < d.w0 + interval '2 days';
-- (the NOTICE: raw rows past retention)
SELECT t = s AS history_kept, (SELECT count(*) FROM parca.samples x, d WHERE x.time < d.w0 + interval '2 days') AS raw_rows
FROM d, sealed s, pg_temp.totals('cpu:samples:count:cpu:nanoseconds:delta', w0, w0 + interval '2 days' - interval '1 microsecond') t;
-- a backfill with fewer rows than the hour had, a new series in an
-- empty hour; then one with more rows than the hour had
CREATE TEMP TABLE backfill (total bigint, range_value double precision, profiles numeric);
-- a backfill's totals, from raw rows, as it is written; and whether the
-- rollups hold the history and every backfill
CREATE FUNCTION pg_temp.note_backfill() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('parca.rollups', 'off', true);
    INSERT INTO backfill
    SELECT t.* FROM d, pg_temp.totals('cpu:samples:count:cpu:nanoseconds:delta', w0, w0 + interval '2 days' - interval '1 microsecond') t;
    PERFORM set_config('parca.rollups', 'on', true);
END
$$;
CREATE FUNCTION pg_temp.history_and_backfills(OUT total boolean, OUT range_value boolean, OUT profiles boolean)
    LANGUAGE sql AS $$
    SELECT t.total = s.total + b.total, t.range_value = s.range_value + b.range_value, t.profiles = s.profiles + b.profiles
    FROM d, sealed s, (SELECT sum(total) AS total, sum(range_value) AS range_value, sum(profiles) AS profiles FROM backfill) b,
         pg_temp.totals('cpu:samples:count:cpu:nanoseconds:delta', w0, w0 + interval '2 days' - interval '1 microsecond') t
$$;
INSERT INTO parca.samples
SELECT d.w0 + interval '1 day 10 hours 40 minutes', series_id, stack, value, period, duration, NULL
FROM orig, d WHERE series_id = (SELECT min(series_id) FROM orig);
INSERT INTO parca.samples
SELECT d.w0 + interval '15 hours 30 minutes',
       parca_series_id('cpu:samples:count:cpu:nanoseconds:delta', '{"job": "backfill"}'),
       stack, value, period, duration, NULL
FROM orig, d WHERE series_id = (SELECT min(series_id) FROM orig);
SELECT pg_temp.note_backfill();
SELECT pg_temp.round();
SELECT * FROM pg_temp.history_and_backfills();
SELECT parca_profile_total(parca_query('cpu:samples:count:cpu:nanoseconds:delta{job="backfill"}', w0, w0 + interval '1 day'))
       = (SELECT sum(value * period) FROM orig WHERE series_id = (SELECT min(series_id) FROM orig)) AS new_series
FROM d;
INSERT INTO parca.samples
SELECT d.w0 + interval '1 day 10 hours' + k * interval '1 minute', series_id, stack, value, period, duration, NULL
FROM orig, d, generate_series(1, 4) k;
SELECT pg_temp.note_backfill();
SELECT pg_temp.round();
SELECT * FROM pg_temp.history_and_backfills();
-- by hand, before the round moves the rows out of the default partition
-- (and drops their new partition): more rows than the hour had
INSERT INTO parca.samples
SELECT d.w0 + interval '1 day 10 hours 50 minutes' + k * interval '1 second', series_id, stack, value, period, duration, NULL
FROM orig, d, generate_series(1, 3) k;
SELECT pg_temp.note_backfill();
SELECT hours, days, weeks FROM d, parca_rollup_hours(w0 + interval '1 day', w0 + interval '2 days');
SELECT pg_temp.round();
SELECT * FROM pg_temp.history_and_backfills();
-- the days and weeks above them hold the same
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT pg_temp.agree('cpu:samples:count:cpu:nanoseconds:delta', w0 + interval '2 days', w0 + interval '14 days' - interval '1 microsecond') AS after_them
FROM d;
COMMIT;
SET parca.rollups = off;
CREATE TEMP TABLE rest AS
SELECT parca_profile_total(parca_query('cpu:samples:count:cpu:nanoseconds:delta', w0 + interval '2 days',
                                       w0 + interval '14 days' - interval '1 microsecond')) AS total
FROM d;
RESET parca.rollups;
SELECT parca_profile_total(parca_query('cpu:samples:count:cpu:nanoseconds:delta', w0, w0 + interval '14 days' - interval '1 microsecond'))
       = s.total + b.total + r.total AS weeks
FROM d, sealed s, rest r, (SELECT sum(total) AS total FROM backfill) b;
RESET parca.rollups;
RESET parca.retention;
SELECT pg_temp.drop_dated_partitions();
TRUNCATE parca.samples_hourly, parca.samples_daily, parca.samples_weekly, parca.rollup_hours,
    parca.rollup_days, parca.rollup_weeks, parca.profiles_hourly;
DELETE FROM parca.columnar_write_log;

TRUNCATE parca.samples, parca.series, parca.locations, parca.functions, parca.mappings;
