-- Rollups of parca.samples (docs/rollups.md): per series and per
-- complete hour, the hour's merged profile, and per complete day, the
-- day's (merged from the hours), so that parca_query over a long range
-- reads a few rows per stack and day or hour instead of every sample
-- row.  Kept by the maintenance worker (src/partitions.c) through
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
-- Partitioned by time (hours in weeks, days in 28 days:
-- parca.create_rollup_partition), so that retention drops them whole.
CREATE TABLE parca.samples_hourly (LIKE parca.samples) PARTITION BY RANGE (time);
COMMENT ON TABLE parca.samples_hourly IS 'hourly rollups of parca.samples: per hour, series, stack and period, the summed value';
CREATE TABLE parca.samples_daily (LIKE parca.samples) PARTITION BY RANGE (time);
COMMENT ON TABLE parca.samples_daily IS 'daily rollups of parca.samples, from parca.samples_hourly: per day, series, stack and period, the summed value';

-- Every hour (day) rolled up, with the rows its source had then (raw
-- rows for an hour, rows of parca.samples_hourly for a day): an hour
-- (day) here is read from its rollups by parca_query.  The number of
-- rows tells late rows apart: one whose source has more rows now is
-- rolled up again.
CREATE TABLE parca.rollup_hours (
    start       timestamptz PRIMARY KEY,
    source_rows bigint NOT NULL,
    rolled_at   timestamptz NOT NULL DEFAULT pg_catalog.now()
);
CREATE TABLE parca.rollup_days (LIKE parca.rollup_hours INCLUDING ALL);
SELECT pg_catalog.pg_extension_config_dump('parca.rollup_hours', '');
SELECT pg_catalog.pg_extension_config_dump('parca.rollup_days', '');

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

-- The two levels: what each is rolled up from, into, listed in, and the
-- length of its periods and partitions.
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
        ELSE
            RAISE EXCEPTION 'unknown rollup level "%"', level USING ERRCODE = 'invalid_parameter_value',
                HINT = 'The levels are hour and day.';
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
                    AND NOT EXISTS (SELECT FROM parca.samples_daily WHERE level = 'day' AND time = t) THEN
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
    EXECUTE format('INSERT INTO %s (start, source_rows) VALUES ($1, $2)
                    ON CONFLICT (start) DO UPDATE SET source_rows = excluded.source_rows,
                                                      rolled_at = excluded.rolled_at', l.list)
        USING t, n;
    RETURN written;
END
$$;

-- The hours (days) whose source has rows in [start, stop), oldest first.
CREATE FUNCTION parca.rollup_candidates(level text, start timestamptz, stop timestamptz)
    RETURNS SETOF timestamptz
    LANGUAGE plpgsql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    l record;
BEGIN
    SELECT * INTO l FROM parca.rollup_level(level);
    RETURN QUERY EXECUTE format('SELECT DISTINCT date_bin($3, time, ''2000-01-01 00:00+00'') FROM %s
                                 WHERE time >= $1 AND time < $2 AND isfinite(time) ORDER BY 1', l.source)
        USING start, stop, l.width;
END
$$;

-- Roll up every complete hour that starts in [start, stop), then every
-- complete day that the range meets: those not rolled up yet, and those
-- with late rows.  After a write of rows older than
-- parca.rollup_late_window, or where the maintenance worker does not run.  Returns the hours and days rolled up (again) and the
-- rollup rows written.
CREATE FUNCTION parca_rollup_hours(start timestamptz, stop timestamptz,
    OUT hours integer, OUT days integer, OUT rows bigint)
    LANGUAGE plpgsql STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t timestamptz;
    w bigint;
    until timestamptz;
BEGIN
    hours := 0; days := 0; rows := 0;
    IF NOT (SELECT enabled FROM parca.rollup_settings()) THEN
        RAISE NOTICE 'parca.rollups is off: nothing is rolled up';
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('parca.samples rollups'));
    stop := least(stop, now());
    IF NOT isfinite(stop) THEN
        RETURN;
    END IF;
    -- hours: each complete one that starts in the range
    FOR t IN SELECT * FROM parca.rollup_candidates('hour', start,
                                                   date_bin('1 hour', stop, '2000-01-01 00:00+00')) LOOP
        CONTINUE WHEN t < start;
        w := parca.rollup_period('hour', t);
        IF w >= 0 THEN
            hours := hours + 1;
            rows := rows + w;
        END IF;
    END LOOP;
    -- days: each complete one that the range meets, whose hours may have
    -- changed
    until := least(date_bin('1 day', stop - interval '1 microsecond', '2000-01-01 00:00+00') + interval '1 day',
                   date_bin('1 day', now(), '2000-01-01 00:00+00'));
    IF isfinite(start) THEN
        start := date_bin('1 day', start, '2000-01-01 00:00+00');
    END IF;
    FOR t IN SELECT * FROM parca.rollup_candidates('day', start, until) LOOP
        w := parca.rollup_period('day', t);
        IF w >= 0 THEN
            days := days + 1;
            rows := rows + w;
        END IF;
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
-- for days, up to the last hour rolled up; drop the rollups older than
-- parca.rollup_retention (hours) and parca.rollup_daily_retention (days).
-- Returns the hours and days rolled up and the partitions dropped.
CREATE FUNCTION parca_maintain_rollups(max_hours integer DEFAULT 168,
    OUT hours integer, OUT days integer, OUT dropped integer)
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
    late_days timestamptz[] := '{}';
    r record;
BEGIN
    hours := 0; days := 0; dropped := 0;
    SELECT * INTO s FROM parca.rollup_settings();
    IF NOT s.enabled THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('parca.samples rollups'));
    from_time := least(coalesce((SELECT max(start) + interval '1 hour' FROM parca.rollup_hours), '-infinity'),
                       now() - make_interval(secs => s.late_window_seconds));
    FOR t IN SELECT * FROM parca.rollup_candidates('hour', from_time,
                                                   date_bin('1 hour', now(), '2000-01-01 00:00+00')) LOOP
        EXIT WHEN hours >= max_hours;
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
                late_days := late_days || date_bin('1 day', t, '2000-01-01 00:00+00');
            END LOOP;
        END IF;
        INSERT INTO parca.rollup_inserts_seen (relid, inserted) VALUES (r.partition, r.inserted)
        ON CONFLICT (relid) DO UPDATE SET inserted = excluded.inserted;
    END LOOP;
    DELETE FROM parca.rollup_inserts_seen i
    WHERE NOT EXISTS (SELECT FROM parca.partition_ranges() p WHERE p.partition = i.relid);

    -- days whose hours are all rolled up: up to the last hour rolled up
    -- (a day with late rows in the window has more hourly rows: again)
    from_time := least(coalesce((SELECT max(start) + interval '1 day' FROM parca.rollup_days), '-infinity'),
                       now() - make_interval(secs => s.late_window_seconds));
    until := date_bin('1 day', (SELECT max(start) + interval '1 hour' FROM parca.rollup_hours),
                      '2000-01-01 00:00+00');
    FOR t IN SELECT * FROM parca.rollup_candidates('day', from_time, until)
             UNION
             SELECT d FROM unnest(late_days) d WHERE d + interval '1 day' <= until
             ORDER BY 1
    LOOP
        IF parca.rollup_period('day', t) >= 0 THEN
            days := days + 1;
        END IF;
    END LOOP;

    FOR r IN SELECT p.partition, p.range_start, p.range_end, l.list, l.retention
             FROM (VALUES ('hour', s.retention_seconds), ('day', s.daily_retention_seconds)) v(level, retention)
             CROSS JOIN LATERAL (SELECT x.target, x.list, v.retention FROM parca.rollup_level(v.level) x) l
             CROSS JOIN LATERAL parca.partition_ranges(l.target) p
             WHERE l.retention > 0 AND p.range_end <= now() - make_interval(secs => l.retention)
             ORDER BY p.range_start
    LOOP
        EXECUTE format('DROP TABLE %s', r.partition);
        EXECUTE format('DELETE FROM %s WHERE start >= $1 AND start < $2', r.list)
            USING r.range_start, r.range_end;
        dropped := dropped + 1;
        RAISE LOG 'parca: dropped rollup partition % for [%, %): older than its retention',
            r.partition, r.range_start, r.range_end;
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION parca_maintain_rollups(integer) FROM PUBLIC;

-- The rollups kept: per partition of parca.samples_hourly and
-- parca.samples_daily its level, range, the hours (days) rolled up in
-- it, its rows (the planner's estimate) and bytes.
CREATE VIEW parca.rollups AS
    SELECT v.level, p.partition, p.range_start, p.range_end,
           CASE v.level
               WHEN 'hour' THEN (SELECT pg_catalog.count(*) FROM parca.rollup_hours h
                                 WHERE h.start OPERATOR(pg_catalog.>=) p.range_start
                                   AND h.start OPERATOR(pg_catalog.<) p.range_end)
               ELSE (SELECT pg_catalog.count(*) FROM parca.rollup_days d
                     WHERE d.start OPERATOR(pg_catalog.>=) p.range_start
                       AND d.start OPERATOR(pg_catalog.<) p.range_end) END AS periods,
           greatest(c.reltuples, 0)::bigint AS rows_estimate,
           pg_catalog.pg_total_relation_size(p.partition) AS bytes
    FROM (VALUES ('hour', 'parca.samples_hourly'::regclass), ('day', 'parca.samples_daily'::regclass)) v(level, target)
    CROSS JOIN LATERAL parca.partition_ranges(v.target) p
    JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) p.partition;
COMMENT ON VIEW parca.rollups IS 'partitions of the hourly and daily rollups: range, hours or days rolled up, size';
