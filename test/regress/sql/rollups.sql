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
SELECT start, source_rows FROM parca.rollup_hours ORDER BY start;
SELECT start, source_rows FROM parca.rollup_days ORDER BY start;
SELECT start, source_rows FROM parca.rollup_weeks ORDER BY start;
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

-- late rows for hours already rolled up, long before the late window:
-- the hours differ until the next round, which sees their partitions'
-- insert counts grown and rolls them up again, adding the late rows'
-- sums, and the days of those hours, which have more hourly rows now
INSERT INTO parca.samples
SELECT t, series_id, stack, value * 5, period, duration, NULL
FROM orig, (VALUES ('2017-09-29 22:30+00'::timestamptz), ('2017-10-01 05:10+00')) v(t);
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-09-29 21:00+00', '2017-09-30 00:59:59.999999+00');
SELECT * FROM pg_temp.compare('cpu:samples:count:cpu:nanoseconds:delta', '2017-10-01 00:00+00', '2017-10-01 23:59:59.999999+00');
-- (the statistics reach the shared counts when this session is idle next)
SELECT pg_stat_force_next_flush();
SELECT * FROM parca_maintain_rollups();
SELECT start, source_rows FROM parca.rollup_hours WHERE start = '2017-09-29 22:00+00';
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
SHOW parca.rollup_late_window;
-- leave no dated partition behind (other tests' plans show the partitions)
DO $$
DECLARE p regclass;
BEGIN
    FOR p IN SELECT partition FROM parca.partitions WHERE NOT is_default LOOP
        EXECUTE format('DROP TABLE %s', p);
    END LOOP;
END
$$;
SELECT * FROM parca_maintain_rollups();
SELECT count(*) AS seen_left FROM parca.rollup_inserts_seen;
TRUNCATE parca.samples, parca.series, parca.locations, parca.functions, parca.mappings;
