-- Rollups of parca.samples (docs/rollups.md): per series and per
-- complete hour, the hour's merged profile, per complete day the day's
-- (merged from the hours) and per complete week the week's (merged from
-- the days), so that parca_query over a long range reads a few rows per
-- stack and week, day or hour instead of every sample row.  Kept by the maintenance worker (src/partitions.c) through
-- parca_maintain_rollups(); parca_rollup_hours() runs the same by hand.

-- Rollup settings, read through the library (src/rollups.c) so that they
-- are defined in a session that has not loaded it yet.
CREATE FUNCTION parca.rollup_settings(
    OUT enabled boolean, OUT retention_seconds bigint, OUT daily_retention_seconds bigint,
    OUT late_window_seconds bigint)
    AS 'MODULE_PATHNAME', 'parca_rollup_settings' LANGUAGE C STABLE STRICT;

-- The rollup rows: the columns of parca.samples, so that the same merge
-- (src/query/merge_scan.c) reads them.  One row per hour (day), series,
-- stack and period: time is the start of the hour (day, UTC), value the
-- sum of its values of that stack.  Grouping by period keeps the merge
-- exact: a samples:count value is reported times its period (and a
-- period of 0 keeps its count), and sum(value) x period equals the sum of
-- each value x period only within one period.  duration is 0 and
-- num_labels NULL: no merge reads them.  Late rows of an hour already
-- rolled up add rows for the same hour (parca.rollup_period), so an hour
-- may have several rows per stack; they add up to the hour's merge.
-- Partitioned by time (hours in weeks, days and weeks in 28 days:
-- parca.create_rollup_partition), so that retention drops them whole.
-- Weeks start on Thursdays, as 1970-01-01 did, so that each lies in one
-- 28-day partition (aligned to 1970-01-01).
CREATE TABLE parca.samples_hourly (LIKE parca.samples) PARTITION BY RANGE (time);
COMMENT ON TABLE parca.samples_hourly IS 'hourly rollups of parca.samples: per hour, series, stack and period, the summed value';
CREATE TABLE parca.samples_daily (LIKE parca.samples) PARTITION BY RANGE (time);
COMMENT ON TABLE parca.samples_daily IS 'daily rollups of parca.samples, from parca.samples_hourly: per day, series, stack and period, the summed value';
CREATE TABLE parca.samples_weekly (LIKE parca.samples) PARTITION BY RANGE (time);
COMMENT ON TABLE parca.samples_weekly IS 'weekly rollups of parca.samples (weeks from Thursday 00:00 UTC), from parca.samples_daily: per week, series, stack and period, the summed value';
-- VACUUM writes their merged stripes by series, then time, as parca.samples'
INSERT INTO parca.columnar_options (relid, sort_by)
SELECT t, '{series_id,time}' FROM unnest('{parca.samples_hourly,parca.samples_daily,parca.samples_weekly}'::regclass[]) t;

-- Every hour (day, week) rolled up, with the rows its source had then
-- (raw rows for an hour, rows of parca.samples_hourly for a day, of
-- parca.samples_daily for a week): an hour (day, week) here is read
-- from its rollups by parca_query.  The number of
-- rows tells late rows apart: one whose source has more rows now is
-- rolled up again.
CREATE TABLE parca.rollup_hours (
    start       timestamptz PRIMARY KEY,
    source_rows bigint NOT NULL,
    rolled_at   timestamptz NOT NULL DEFAULT pg_catalog.now()
);
CREATE TABLE parca.rollup_days (LIKE parca.rollup_hours INCLUDING ALL);
CREATE TABLE parca.rollup_weeks (LIKE parca.rollup_hours INCLUDING ALL);
SELECT pg_catalog.pg_extension_config_dump('parca.rollup_hours', '');
SELECT pg_catalog.pg_extension_config_dump('parca.rollup_days', '');
SELECT pg_catalog.pg_extension_config_dump('parca.rollup_weeks', '');

-- Per rolled-up hour and series, what parca_query_range needs of the
-- hour's profiles (sql/70_query.sql): how many there were, the sum of
-- their values (samples:count times the period where it is known, as
-- parca_query_range reports them) and of their durations (each profile's
-- largest).  Written with the hour's rollup (parca.rollup_period), from
-- its raw rows; kept as long as the hour is listed in parca.rollup_hours.
CREATE TABLE parca.profiles_hourly (
    start       timestamptz NOT NULL,
    series_id   bigint NOT NULL,
    profiles    bigint NOT NULL,
    value       numeric,
    duration    numeric,
    PRIMARY KEY (start, series_id)
);
SELECT pg_catalog.pg_extension_config_dump('parca.profiles_hourly', '');

-- The rows inserted into each partition of parca.samples, as the
-- statistics counted them (pg_stat_get_tuples_inserted) when the worker
-- last looked: a partition older than the late window whose count has
-- changed since got rows late (or the statistics were reset), and its
-- hours are looked at again.  Not dumped: a restored database starts
-- counting afresh.
CREATE TABLE parca.rollup_inserts_seen (
    relid       oid PRIMARY KEY,
    inserted    bigint NOT NULL
);

-- The three levels: what each is rolled up from, into, listed in, and
-- the length of its periods and partitions.
CREATE FUNCTION parca.rollup_level(level text,
    OUT source regclass, OUT target regclass, OUT list regclass,
    OUT width interval, OUT partition_seconds bigint)
    -- STABLE: the names resolve to the tables of this installation
    LANGUAGE plpgsql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    CASE level
        WHEN 'hour' THEN
            source := 'parca.samples'; target := 'parca.samples_hourly'; list := 'parca.rollup_hours';
            width := interval '1 hour'; partition_seconds := 7 * 86400;
        WHEN 'day' THEN
            source := 'parca.samples_hourly'; target := 'parca.samples_daily'; list := 'parca.rollup_days';
            width := interval '1 day'; partition_seconds := 28 * 86400;
        WHEN 'week' THEN
            source := 'parca.samples_daily'; target := 'parca.samples_weekly'; list := 'parca.rollup_weeks';
            width := interval '7 days'; partition_seconds := 28 * 86400;
        ELSE
            RAISE EXCEPTION 'unknown rollup level %', parca.message_quote(level) USING ERRCODE = 'invalid_parameter_value',
                HINT = 'The levels are hour, day and week.';
    END CASE;
END
$$;

-- Make the partition of a level's rollups that holds time t, if none
-- does, with parca.samples' columnar options.  Only the rollup functions
-- write the tables, one at a time (their advisory lock).
CREATE FUNCTION parca.create_rollup_partition(level text, t timestamptz) RETURNS regclass
    LANGUAGE plpgsql STRICT
    SET search_path = pg_catalog, pg_temp
    SET datestyle = 'ISO, YMD'
AS $$
DECLARE
    l record;
    lo timestamptz;
    name text;
    existing regclass;
BEGIN
    SELECT * INTO l FROM parca.rollup_level(level);
    IF NOT isfinite(t) THEN
        RAISE EXCEPTION 'no rollup partition is made for time %', t
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT partition INTO existing FROM parca.partition_ranges(l.target)
    WHERE range_start <= t AND t < range_end;
    IF existing IS NOT NULL THEN
        RETURN existing;
    END IF;
    lo := to_timestamp(floor(extract(epoch FROM t) / l.partition_seconds) * l.partition_seconds);
    name := (parse_ident(l.target::text))[2] || '_' || to_char(lo AT TIME ZONE 'UTC', 'YYYYMMDD');
    EXECUTE format('CREATE TABLE parca.%I (LIKE %s) USING parca_columnar', name, l.target);
    INSERT INTO parca.columnar_options (relid, stripe_rows, chunk_group_rows, compression_level)
    SELECT format('parca.%I', name)::regclass, o.stripe_rows, o.chunk_group_rows, o.compression_level
    FROM parca.columnar_options o WHERE o.relid = 'parca.samples'::regclass;
    EXECUTE format('ALTER TABLE %s ATTACH PARTITION parca.%I FOR VALUES FROM (%L) TO (%L)',
                   l.target, name, lo, lo + make_interval(secs => l.partition_seconds));
    RETURN format('parca.%I', name)::regclass;
END
$$;

-- Roll up the hour (day) that starts at t: the first time, its merge;
-- later, if its source has more rows than when it was rolled up (late
-- rows), the difference between its merge now and its rollup rows, so
-- that they add up to the merge again.  One whose source has fewer rows
-- than recorded has lost partitions to retention: its rollup stays as it
-- is.  One without rows is not recorded.  One with rollup rows but not
-- listed (the list emptied by hand) is rolled up by difference too.
-- Returns the rollup rows written, or -1 if there was nothing to do.
CREATE FUNCTION parca.rollup_period(level text, t timestamptz) RETURNS bigint
    LANGUAGE plpgsql STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    l record;
    t_end timestamptz;
    n bigint;
    prev bigint;
    written bigint := 0;
BEGIN
    SELECT * INTO l FROM parca.rollup_level(level);
    t_end := t + l.width;
    EXECUTE format('SELECT count(*) FROM %s WHERE time >= $1 AND time < $2', l.source)
        INTO n USING t, t_end;
    EXECUTE format('SELECT source_rows FROM %s WHERE start = $1', l.list) INTO prev USING t;
    IF n <= coalesce(prev, 0) THEN
        RETURN -1;
    END IF;
    PERFORM parca.create_rollup_partition(level, t);
    -- (rollup rows but not listed: the list was emptied by hand)
    IF prev IS NULL AND NOT EXISTS (SELECT FROM parca.samples_hourly WHERE level = 'hour' AND time = t)
                    AND NOT EXISTS (SELECT FROM parca.samples_daily WHERE level = 'day' AND time = t)
                    AND NOT EXISTS (SELECT FROM parca.samples_weekly WHERE level = 'week' AND time = t) THEN
        EXECUTE format('INSERT INTO %s (time, series_id, stack, value, period, duration, num_labels)
                        SELECT $1, series_id, stack, sum(value)::bigint, period, 0, NULL
                        FROM %s WHERE time >= $1 AND time < $2
                        GROUP BY series_id, stack, period
                        ORDER BY series_id', l.target, l.source)
            USING t, t_end;
        -- (a series' rows together: chunk groups skipped by series, runs of one id)
    ELSE
        -- the merge now, less what the rollup holds: the late rows' sums
        -- (and a stack they bring with a sum of 0, which the merge shows)
        EXECUTE format('INSERT INTO %s (time, series_id, stack, value, period, duration, num_labels)
                        SELECT $1, d.series_id, d.stack, sum(d.value)::bigint, d.period, 0, NULL
                        FROM (SELECT series_id, stack, value::numeric AS value, period, false AS rolled
                              FROM %s WHERE time >= $1 AND time < $2
                              UNION ALL
                              SELECT series_id, stack, -value::numeric, period, true
                              FROM %s WHERE time = $1) d
                        GROUP BY d.series_id, d.stack, d.period
                        HAVING sum(d.value) <> 0 OR NOT bool_or(d.rolled)
                        ORDER BY d.series_id', l.target, l.source, l.target)
            USING t, t_end;
    END IF;
    GET DIAGNOSTICS written = ROW_COUNT;
    IF level = 'hour' THEN
        -- the hour's profiles per series, all again (late rows may have
        -- made new profiles or joined old ones)
        DELETE FROM parca.profiles_hourly WHERE start = t;
        INSERT INTO parca.profiles_hourly (start, series_id, profiles, value, duration)
        SELECT t, p.series_id, count(*), sum(p.v), sum(p.d)
        FROM (SELECT x.series_id, x.time,
                     sum(CASE WHEN split_part(s.profile_type, ':', 2) = 'samples'
                               AND split_part(s.profile_type, ':', 3) = 'count' AND x.period > 0
                              THEN x.value::numeric * x.period ELSE x.value END) AS v,
                     max(x.duration) AS d
              FROM parca.samples x JOIN parca.series s ON s.id = x.series_id
              WHERE x.time >= t AND x.time < t_end
              GROUP BY x.series_id, x.time) p
        GROUP BY p.series_id;
    END IF;
    EXECUTE format('INSERT INTO %s (start, source_rows) VALUES ($1, $2)
                    ON CONFLICT (start) DO UPDATE SET source_rows = excluded.source_rows,
                                                      rolled_at = excluded.rolled_at', l.list)
        USING t, n;
    RETURN written;
END
$$;

-- The hours (days, weeks) whose source has rows in [start, stop), oldest
-- first.  Periods are aligned to 1970-01-01 00:00 UTC (a Thursday), as
-- the partitions are.
CREATE FUNCTION parca.rollup_candidates(level text, start timestamptz, stop timestamptz)
    RETURNS SETOF timestamptz
    LANGUAGE plpgsql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    l record;
BEGIN
    SELECT * INTO l FROM parca.rollup_level(level);
    RETURN QUERY EXECUTE format('SELECT DISTINCT date_bin($3, time, ''1970-01-01 00:00+00'') FROM %s
                                 WHERE time >= $1 AND time < $2 AND isfinite(time) ORDER BY 1', l.source)
        USING start, stop, l.width;
END
$$;

-- Roll up every complete hour of the weeks that [start, stop) meets,
-- then every complete day and week of them: those not rolled up yet,
-- and those with late rows.  (Whole weeks, so that a day or week is
-- never rolled up from some of its hours only.)  After a write of rows
-- older than parca.rollup_late_window, or where the maintenance worker
-- does not run.  Returns the hours, days and weeks rolled up (again) and
-- the rollup rows written.
CREATE FUNCTION parca_rollup_hours(start timestamptz, stop timestamptz,
    OUT hours integer, OUT days integer, OUT weeks integer, OUT rows bigint)
    LANGUAGE plpgsql STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    l text;
    t timestamptz;
    w bigint;
BEGIN
    hours := 0; days := 0; weeks := 0; rows := 0;
    IF NOT (SELECT enabled FROM parca.rollup_settings()) THEN
        RAISE NOTICE 'parca.rollups is off: nothing is rolled up';
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('parca.samples rollups'));
    IF NOT isfinite(least(stop, now())) OR start >= stop THEN
        RETURN;
    END IF;
    -- the weeks the range meets (weeks from 1970-01-01, a Thursday)
    IF isfinite(start) THEN
        start := date_bin('7 days', start, '1970-01-01 00:00+00');
    END IF;
    stop := date_bin('7 days', least(stop, now()) - interval '1 microsecond', '1970-01-01 00:00+00')
            + interval '7 days';
    -- hours, then days, then weeks (each from the level before, as it is
    -- then): each complete one
    FOREACH l IN ARRAY ARRAY['hour', 'day', 'week'] LOOP
        FOR t IN SELECT * FROM parca.rollup_candidates(l, start,
                     least(stop, date_bin((SELECT width FROM parca.rollup_level(l)), now(),
                                          '1970-01-01 00:00+00'))) LOOP
            w := parca.rollup_period(l, t);
            CONTINUE WHEN w < 0;
            CASE l WHEN 'hour' THEN hours := hours + 1;
                   WHEN 'day' THEN days := days + 1;
                   ELSE weeks := weeks + 1; END CASE;
            rows := rows + w;
        END LOOP;
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION parca_rollup_hours(timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION parca.rollup_period(text, timestamptz), parca.create_rollup_partition(text, timestamptz),
    parca.rollup_candidates(text, timestamptz, timestamptz) FROM PUBLIC;

-- One round of the maintenance worker: roll up the hours with rows
-- completed since the last hour rolled up (at most max_hours, oldest
-- first, so that a backlog is worked off over rounds) and look again at
-- those of the last parca.rollup_late_window for late rows, and at those
-- of older partitions that got rows since the last round; then the same
-- for days and weeks, up to the first hour with rows not rolled up; drop
-- the rollups older than parca.rollup_retention (hours) and
-- parca.rollup_daily_retention (days and weeks).  Returns the hours, days
-- and weeks rolled up and the partitions dropped.
CREATE FUNCTION parca_maintain_rollups(max_hours integer DEFAULT 168,
    OUT hours integer, OUT days integer, OUT weeks integer, OUT dropped integer)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    SET lock_timeout = '10s'
AS $$
DECLARE
    s record;
    t timestamptz;
    from_time timestamptz;
    until timestamptz;
    late_start timestamptz;
    -- periods with late rows, of the level being rolled up, and of the next
    late timestamptz[] := '{}';
    late_above timestamptz[];
    period_level text;
    lv record;
    last_start timestamptz;
    rolled_until timestamptz := date_bin('1 hour', now(), '1970-01-01 00:00+00');
    r record;
BEGIN
    hours := 0; days := 0; weeks := 0; dropped := 0;
    SELECT * INTO s FROM parca.rollup_settings();
    IF NOT s.enabled THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('parca.samples rollups'));
    from_time := least(coalesce((SELECT max(start) + interval '1 hour' FROM parca.rollup_hours), '-infinity'),
                       now() - make_interval(secs => s.late_window_seconds));
    FOR t IN SELECT * FROM parca.rollup_candidates('hour', from_time,
                                                   date_bin('1 hour', now(), '2000-01-01 00:00+00')) LOOP
        IF hours >= max_hours THEN
            -- (every hour with rows before this one is rolled up)
            rolled_until := t;
            EXIT;
        END IF;
        IF parca.rollup_period('hour', t) >= 0 THEN
            hours := hours + 1;
        END IF;
    END LOOP;

    -- late rows older than the late window: the partitions wholly older
    -- than it whose insert count changed since the last round (a count
    -- seen first is only noted: a partition leaving the window is looked
    -- at once, its count having grown since it was the current one)
    late_start := now() - make_interval(secs => s.late_window_seconds);
    FOR r IN SELECT p.partition, pg_stat_get_tuples_inserted(p.partition) AS inserted, i.inserted AS seen
             FROM parca.partition_ranges() p
             LEFT JOIN parca.rollup_inserts_seen i ON i.relid = p.partition
             WHERE NOT p.is_default
               AND (i.relid IS NULL OR p.range_end <= late_start)
               AND i.inserted IS DISTINCT FROM pg_stat_get_tuples_inserted(p.partition)
             ORDER BY p.range_start
    LOOP
        IF r.seen IS NOT NULL THEN
            FOR t IN EXECUTE format('SELECT DISTINCT date_bin(''1 hour'', time, ''2000-01-01 00:00+00'') FROM %s
                                     WHERE time < $1 ORDER BY 1', r.partition)
                USING date_bin('1 hour', now(), '2000-01-01 00:00+00')
            LOOP
                IF parca.rollup_period('hour', t) >= 0 THEN
                    hours := hours + 1;
                END IF;
                late := late || date_bin('1 day', t, '1970-01-01 00:00+00');
            END LOOP;
        END IF;
        INSERT INTO parca.rollup_inserts_seen (relid, inserted) VALUES (r.partition, r.inserted)
        ON CONFLICT (relid) DO UPDATE SET inserted = excluded.inserted;
    END LOOP;
    DELETE FROM parca.rollup_inserts_seen i
    WHERE NOT EXISTS (SELECT FROM parca.partition_ranges() p WHERE p.partition = i.relid);

    -- days whose hours are all rolled up: up to the first hour with rows
    -- not rolled up; then weeks, the same way, from the days.  Those that
    -- end in the late window again, and those with periods below rolled
    -- up again (late rows): they have more source rows now.
    FOREACH period_level IN ARRAY ARRAY['day', 'week'] LOOP
        SELECT * INTO lv FROM parca.rollup_level(period_level);
        EXECUTE format('SELECT max(start) FROM %s', lv.list) INTO last_start;
        from_time := least(coalesce(last_start + lv.width, '-infinity'),
                           now() - make_interval(secs => s.late_window_seconds));
        until := date_bin(lv.width, rolled_until, '1970-01-01 00:00+00');
        late_above := '{}';
        FOR t IN SELECT * FROM parca.rollup_candidates(period_level, from_time, until)
                 UNION
                 SELECT p FROM unnest(late) p WHERE p + lv.width <= until
                 ORDER BY 1
        LOOP
            CONTINUE WHEN parca.rollup_period(period_level, t) < 0;
            IF period_level = 'day' THEN
                days := days + 1;
            ELSE
                weeks := weeks + 1;
            END IF;
            -- (the week of a day rolled up, for the weeks' turn)
            late_above := late_above || date_bin('7 days', t, '1970-01-01 00:00+00');
        END LOOP;
        late := late_above;
    END LOOP;

    FOR r IN SELECT p.partition, p.range_start, p.range_end, l.list, l.retention
             FROM (VALUES ('hour', s.retention_seconds), ('day', s.daily_retention_seconds),
                          ('week', s.daily_retention_seconds)) v(level, retention)
             CROSS JOIN LATERAL (SELECT x.target, x.list, v.retention FROM parca.rollup_level(v.level) x) l
             CROSS JOIN LATERAL parca.partition_ranges(l.target) p
             WHERE l.retention > 0 AND p.range_end <= now() - make_interval(secs => l.retention)
             ORDER BY p.range_start
    LOOP
        EXECUTE format('DROP TABLE %s', r.partition);
        EXECUTE format('DELETE FROM %s WHERE start >= $1 AND start < $2', r.list)
            USING r.range_start, r.range_end;
        IF r.list = 'parca.rollup_hours'::regclass THEN
            DELETE FROM parca.profiles_hourly WHERE start >= r.range_start AND start < r.range_end;
        END IF;
        dropped := dropped + 1;
        RAISE LOG 'parca: dropped rollup partition % for [%, %): older than its retention',
            r.partition, r.range_start, r.range_end;
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION parca_maintain_rollups(integer) FROM PUBLIC;

-- The rollups kept: per partition of parca.samples_hourly,
-- parca.samples_daily and parca.samples_weekly its level, range, the
-- hours (days, weeks) rolled up in it, its rows (the planner's estimate)
-- and bytes.
CREATE VIEW parca.rollups AS
    SELECT v.level, p.partition, p.range_start, p.range_end,
           CASE v.level
               WHEN 'hour' THEN (SELECT pg_catalog.count(*) FROM parca.rollup_hours h
                                 WHERE h.start OPERATOR(pg_catalog.>=) p.range_start
                                   AND h.start OPERATOR(pg_catalog.<) p.range_end)
               WHEN 'day' THEN (SELECT pg_catalog.count(*) FROM parca.rollup_days d
                                WHERE d.start OPERATOR(pg_catalog.>=) p.range_start
                                  AND d.start OPERATOR(pg_catalog.<) p.range_end)
               ELSE (SELECT pg_catalog.count(*) FROM parca.rollup_weeks w
                     WHERE w.start OPERATOR(pg_catalog.>=) p.range_start
                       AND w.start OPERATOR(pg_catalog.<) p.range_end) END AS periods,
           greatest(c.reltuples, 0)::bigint AS rows_estimate,
           pg_catalog.pg_total_relation_size(p.partition) AS bytes
    FROM (VALUES ('hour', 'parca.samples_hourly'::regclass), ('day', 'parca.samples_daily'::regclass),
                 ('week', 'parca.samples_weekly'::regclass)) v(level, target)
    CROSS JOIN LATERAL parca.partition_ranges(v.target) p
    JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) p.partition;
COMMENT ON VIEW parca.rollups IS 'partitions of the hourly, daily and weekly rollups: range, periods rolled up, size';

-- For parca_query_range (sql/70_query.sql) over [start, stop] in steps
-- of step from origin, for the series ids: the rolled-up hours it reads
-- from parca.profiles_hourly instead of raw rows, those wholly within the
-- range and within one step, each as a row with a NULL series_id,
-- followed by their profiles' sums per series.  None when the caller may
-- not read them (parca.rollups off, no SELECT on parca.rollup_hours or
-- parca.profiles_hourly, row-level security on parca.samples, which the
-- sums of every series would not apply): then every part is read from raw
-- rows.  Raises parca_query's NOTICE when the part left to raw rows
-- reaches back past parca.retention.
CREATE FUNCTION parca.range_hours(ids bigint[], start timestamptz, stop timestamptz,
                                  step interval, origin timestamptz)
    RETURNS TABLE(hour timestamptz, series_id bigint, profiles bigint, value numeric, duration numeric)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    hours timestamptz[] := '{}';
    retention bigint;
    raw_from timestamptz;
BEGIN
    IF start IS NULL OR stop IS NULL OR start > stop THEN
        RETURN;
    END IF;
    IF ids IS NOT NULL AND step IS NOT NULL AND (SELECT enabled FROM parca.rollup_settings())
       AND has_table_privilege('parca.rollup_hours', 'SELECT')
       AND has_table_privilege('parca.profiles_hourly', 'SELECT')
       AND NOT row_security_active('parca.samples') THEN
        hours := ARRAY(SELECT h.start FROM parca.rollup_hours h
                       WHERE h.start >= range_hours.start
                         AND h.start + interval '1 hour' - interval '1 microsecond' <= stop
                         AND date_bin(step, h.start, origin)
                             = date_bin(step, h.start + interval '1 hour' - interval '1 microsecond', origin)
                       ORDER BY 1);
    END IF;
    SELECT retention_seconds INTO retention FROM parca.partition_settings();
    IF retention > 0 THEN
        -- the first instant read from raw rows
        SELECT min(lower(r)) INTO raw_from
        FROM unnest(tstzmultirange(tstzrange(range_hours.start, stop, '[]'))
                    - (SELECT coalesce(range_agg(tstzrange(h, h + interval '1 hour')), '{}')
                       FROM unnest(hours) h)) r;
        IF raw_from < now() - make_interval(secs => retention) THEN
            RAISE NOTICE USING
                MESSAGE = 'parca_query_range: part of the range is older than parca.retention and not in rollups: its raw samples may have been dropped',
                DETAIL = format('parca.retention keeps raw samples for %s; from %s the range is read from raw samples, not from whole hours kept in rollups.',
                                current_setting('parca.retention'), raw_from),
                HINT = 'Steps of whole hours within a range that starts and ends on whole hours are read from the hourly rollups, which parca.rollup_retention keeps.';
        END IF;
    END IF;
    IF cardinality(hours) > 0 THEN
        RETURN QUERY
            SELECT h, NULL::bigint, NULL::bigint, NULL::numeric, NULL::numeric FROM unnest(hours) h
            UNION ALL
            SELECT p.start, p.series_id, p.profiles, p.value, p.duration
            FROM parca.profiles_hourly p
            WHERE p.start = ANY (hours) AND p.series_id = ANY (ids);
    END IF;
END
$$;

-- For parca_query_unit (sql/70_query.sql): whether the rollups that
-- parca_query would read for [start, stop] (whole weeks, days and hours
-- within it) hold a row of the series ids with a known period, where the
-- caller may read them (as parca_query does: rollup_ranges.c).
CREATE FUNCTION parca.rollups_have_period(ids bigint[], start timestamptz, stop timestamptz)
    RETURNS boolean
    LANGUAGE plpgsql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    l record;
    hit boolean;
BEGIN
    IF NOT (SELECT enabled FROM parca.rollup_settings()) OR row_security_active('parca.samples') THEN
        RETURN false;
    END IF;
    FOR l IN SELECT * FROM unnest(ARRAY['hour', 'day', 'week']) v, parca.rollup_level(v) LOOP
        CONTINUE WHEN NOT has_table_privilege(l.target, 'SELECT') OR NOT has_table_privilege(l.list, 'SELECT');
        EXECUTE format('SELECT EXISTS (SELECT FROM %s x JOIN %s p ON p.start = x.time
                                       WHERE x.time >= $1 AND x.time + $3 - interval ''1 microsecond'' <= $2
                                         AND x.series_id = ANY ($4) AND x.period > 0)', l.target, l.list)
            INTO hit USING start, stop, l.width, ids;
        IF hit THEN
            RETURN true;
        END IF;
    END LOOP;
    RETURN false;
END
$$;
