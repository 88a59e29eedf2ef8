-- Rollups of parca.samples (docs/rollups.md): per series and per
-- complete hour, the hour's merged profile, per complete day the day's
-- (merged from the hours) and per complete week the week's (merged from
-- the days), so that parca_query over a long range reads a few rows per
-- stack and week, day or hour instead of every sample row.  Kept by the maintenance worker (src/maintenance/partitions.c) through
-- parca_maintain_rollups(); parca_rollup_hours() runs the same by hand.
-- What changed since a period was rolled up is read from the write log
-- that every transaction writing into parca.samples adds to
-- (parca.columnar_write_log, sql/21_columnar_write_log.sql).

-- Rollup settings, read through the library (src/maintenance/rollups.c) so that they
-- are defined in a session that has not loaded it yet.
CREATE FUNCTION parca.rollup_settings(
    OUT enabled boolean, OUT retention_seconds bigint, OUT daily_retention_seconds bigint)
    AS 'MODULE_PATHNAME', 'parca_rollup_settings' LANGUAGE C STABLE STRICT;

-- The rollup rows: the columns of parca.samples, so that the same merge
-- (src/query/merge_scan.c) reads them.  One row per hour (day), series,
-- stack and period: time is the start of the hour (day, UTC), value the
-- sum of its values of that stack.  Grouping by period keeps the merge
-- exact: a samples:count value is reported times its period (and a
-- period of 0 keeps its count), and sum(value) x period equals the sum of
-- each value x period only within one period.  No merge reads duration
-- or num_labels: num_labels is NULL, and duration holds the generation
-- of the period the row was written in (parca.rollup_hours).  Late rows
-- of an hour already rolled up add rows for the same hour
-- (parca.rollup_period), so an hour may have several rows per stack; they
-- add up to the hour's merge.
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

-- Every hour (day, week) rolled up: one here is read from its rollups by
-- parca_query, unless rows were written into it since (entries of
-- parca.columnar_write_log meet it) and its generation is 0.  The
-- generation counts the times its source rows (raw rows for an hour,
-- rows of parca.samples_hourly for a day, of parca.samples_daily for a
-- week) were dropped by retention (parca.rollup_seal): the rollup rows of
-- older generations hold history that the source no longer has, and
-- rolling the period up again compares the source with the rows of the
-- current generation only (parca.rollup_period).
CREATE TABLE parca.rollup_hours (
    start       timestamptz PRIMARY KEY,
    generation  bigint NOT NULL DEFAULT 0,
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
-- its raw rows, per generation of the hour (the profiles written since
-- retention dropped its raw rows: each generation's sums are added);
-- kept as long as the hour is listed in parca.rollup_hours.
CREATE TABLE parca.profiles_hourly (
    start       timestamptz NOT NULL,
    series_id   bigint NOT NULL,
    profiles    bigint NOT NULL,
    value       numeric,
    duration    numeric,
    generation  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (start, series_id, generation)
);
SELECT pg_catalog.pg_extension_config_dump('parca.profiles_hourly', '');

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

-- The profiles of [t, t_end) per series, less those in [skip_lo,
-- skip_hi): how many, the sum of their values (samples:count times the
-- period where it is known, as parca_query_range reports them) and of
-- their durations (each profile's largest).
CREATE FUNCTION parca.profile_sums(t timestamptz, t_end timestamptz,
                                   skip_lo timestamptz, skip_hi timestamptz)
    RETURNS TABLE(series_id bigint, profiles bigint, value numeric, duration numeric)
    -- PL/pgSQL: Citus plans a SQL function's statements with their
    -- parameters unbound, which it cannot distribute (docs/scale-out.md)
    LANGUAGE plpgsql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY
    SELECT p.series_id, count(*), sum(p.v), sum(p.d)
    FROM (SELECT x.series_id, x.time,
                 sum(CASE WHEN split_part(s.profile_type, ':', 2) = 'samples'
                           AND split_part(s.profile_type, ':', 3) = 'count' AND x.period > 0
                          THEN x.value::numeric * x.period ELSE x.value END) AS v,
                 max(x.duration) AS d
          FROM parca.samples x JOIN parca.series s ON s.id = x.series_id
          WHERE x.time >= t AND x.time < t_end AND NOT (x.time >= skip_lo AND x.time < skip_hi)
          GROUP BY x.series_id, x.time) p
    GROUP BY p.series_id;
END
$$;

-- Roll up the hour (day, week) that starts at t, in its generation g
-- (parca.rollup_hours): the first time, its source's merge, tagged g (in
-- duration); again (rows were written into it since), the difference
-- between its source's merge now and its rollup rows of generation g,
-- so that they add up to the merge again, and the history of older
-- generations stays.  One without source rows is left as it is, and not
-- recorded if it was not.  Returns the rollup rows written, or -1 if
-- there was nothing to roll up.
CREATE FUNCTION parca.rollup_period(level text, t timestamptz) RETURNS bigint
    LANGUAGE plpgsql STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    l record;
    t_end timestamptz;
    g bigint;
    has_rows boolean;
    has_rollup boolean;
    written bigint := 0;
BEGIN
    SELECT * INTO l FROM parca.rollup_level(level);
    t_end := t + l.width;
    EXECUTE format('SELECT generation FROM %s WHERE start = $1', l.list) INTO g USING t;
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s WHERE time >= $1 AND time < $2)', l.source)
        INTO has_rows USING t, t_end;
    IF NOT has_rows THEN
        RETURN -1;
    END IF;
    g := coalesce(g, 0);
    PERFORM parca.create_rollup_partition(level, t);
    -- (rollup rows of the generation but not listed: the list was emptied by hand)
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s WHERE time = $1 AND duration = $2)', l.target)
        INTO has_rollup USING t, g;
    IF NOT has_rollup THEN
        EXECUTE format('INSERT INTO %s (time, series_id, stack, value, period, duration, num_labels)
                        SELECT $1, series_id, stack, sum(value)::bigint, period, $3, NULL
                        FROM %s WHERE time >= $1 AND time < $2
                        GROUP BY series_id, stack, period
                        ORDER BY series_id', l.target, l.source)
            USING t, t_end, g;
        -- (a series' rows together: chunk groups skipped by series, runs of one id)
    ELSE
        -- the merge now, less what the rollup of this generation holds: the
        -- late rows' sums (and a stack they bring with a sum of 0, which
        -- the merge shows)
        EXECUTE format('INSERT INTO %s (time, series_id, stack, value, period, duration, num_labels)
                        SELECT $1, d.series_id, d.stack, sum(d.value)::bigint, d.period, $3, NULL
                        FROM (SELECT series_id, stack, value::numeric AS value, period, false AS rolled
                              FROM %s WHERE time >= $1 AND time < $2
                              UNION ALL
                              SELECT series_id, stack, -value::numeric, period, true
                              FROM %s WHERE time = $1 AND duration = $3) d
                        GROUP BY d.series_id, d.stack, d.period
                        HAVING sum(d.value) <> 0 OR NOT bool_or(d.rolled)
                        ORDER BY d.series_id', l.target, l.source, l.target)
            USING t, t_end, g;
    END IF;
    GET DIAGNOSTICS written = ROW_COUNT;
    IF level = 'hour' THEN
        -- the hour's profiles per series, all those of the generation
        -- again (late rows may have made new profiles or joined old ones)
        DELETE FROM parca.profiles_hourly WHERE start = t AND generation = g;
        INSERT INTO parca.profiles_hourly (start, series_id, profiles, value, duration, generation)
        SELECT t, p.series_id, p.profiles, p.value, p.duration, g
        FROM parca.profile_sums(t, t_end, t, t) p;
    END IF;
    EXECUTE format('INSERT INTO %s (start, generation) VALUES ($1, $2)
                    ON CONFLICT (start) DO UPDATE SET rolled_at = excluded.rolled_at', l.list)
        USING t, g;
    RETURN written;
END
$$;

-- The source rows of level's periods in [lo, hi) are about to be dropped
-- by retention (a partition of the level below): each period listed
-- that meets [lo, hi) gets its next generation, so that rows written into
-- it later are added to its rollup (which holds its history) rather than
-- compared with rows that are gone.  A period reaching past [lo, hi)
-- keeps its source rows there: their sums move from the old generation's
-- rollup rows to the new one's, so that the new generation holds exactly
-- the source rows left.  Returns the periods sealed.
CREATE FUNCTION parca.rollup_seal(level text, lo timestamptz, hi timestamptz) RETURNS integer
    LANGUAGE plpgsql STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    l record;
    r record;
    sealed integer := 0;
BEGIN
    SELECT * INTO l FROM parca.rollup_level(level);
    FOR r IN EXECUTE format('SELECT start, generation FROM %s WHERE start < $2 AND start + $3 > $1
                             ORDER BY start', l.list)
        USING lo, hi, l.width
    LOOP
        IF r.start < lo OR r.start + l.width > hi THEN
            EXECUTE format('INSERT INTO %s (time, series_id, stack, value, period, duration, num_labels)
                            SELECT $1, x.series_id, x.stack, g.sign * sum(x.value)::bigint, x.period, g.generation, NULL
                            FROM %s x, (VALUES (-1, $5), (1, $5 + 1)) g(sign, generation)
                            WHERE x.time >= $1 AND x.time < $1 + $2 AND NOT (x.time >= $3 AND x.time < $4)
                            GROUP BY x.series_id, x.stack, x.period, g.sign, g.generation
                            ORDER BY x.series_id', l.target, l.source)
                USING r.start, l.width, lo, hi, r.generation;
            IF level = 'hour' THEN
                INSERT INTO parca.profiles_hourly AS p (start, series_id, profiles, value, duration, generation)
                SELECT r.start, q.series_id, g.sign * q.profiles, g.sign * q.value, g.sign * q.duration,
                       g.generation
                FROM parca.profile_sums(r.start, r.start + l.width, lo, hi) q,
                     (VALUES (-1, r.generation), (1, r.generation + 1)) g(sign, generation)
                ON CONFLICT (start, series_id, generation) DO UPDATE
                    SET profiles = p.profiles + excluded.profiles, value = p.value + excluded.value,
                        duration = p.duration + excluded.duration;
                DELETE FROM parca.profiles_hourly WHERE start = r.start AND profiles = 0;
            END IF;
        END IF;
        EXECUTE format('UPDATE %s SET generation = generation + 1 WHERE start = $1', l.list) USING r.start;
        sealed := sealed + 1;
    END LOOP;
    RETURN sealed;
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

-- The entries of parca.samples in the write log that meet [start, stop]
-- (all of them by default): their row ids and the times they cover.
-- (PL/pgSQL: the upgrade from 0.1 makes the log after this function.)
CREATE FUNCTION parca.rollup_log(start timestamptz DEFAULT '-infinity', stop timestamptz DEFAULT 'infinity',
                                 OUT entries tid[], OUT written tstzmultirange)
    LANGUAGE plpgsql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    SELECT coalesce(array_agg(w.ctid), '{}'), coalesce(range_agg(tstzrange(w.lo, w.hi, '[]')), '{}')
    INTO entries, written
    FROM parca.columnar_write_log w
    WHERE w.relid = 'parca.samples'::regclass AND w.lo <= rollup_log.stop AND w.hi >= rollup_log.start;
END
$$;

-- Take the entries away from the write log, and put back the part of
-- written (the times they cover) within keep, widened to whole hours and
-- merged, as entries of this transaction: what is left to do.  (Widened,
-- entries written one per transaction come back as a few.)
CREATE FUNCTION parca.rollup_log_keep(entries tid[], written tstzmultirange, keep tstzmultirange)
    RETURNS void
    LANGUAGE plpgsql STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM parca.columnar_write_log WHERE ctid = ANY (entries);
    INSERT INTO parca.columnar_write_log (relid, lo, hi)
    SELECT 'parca.samples'::regclass, lower(k), upper(k) - interval '1 microsecond'
    FROM unnest((SELECT range_agg(tstzrange(date_bin('1 hour', lower(r), '1970-01-01 00:00+00'),
                                            date_bin('1 hour', CASE WHEN upper_inc(r) THEN upper(r)
                                                                    ELSE upper(r) - interval '1 microsecond' END,
                                                     '1970-01-01 00:00+00') + interval '1 hour'))
                 FROM unnest(written * keep) r
                 WHERE isfinite(lower(r)) AND isfinite(upper(r)))) k;
END
$$;

-- Roll up the periods of a level, in order (parca.rollup_period): how
-- many had source rows, the rollup rows written, and those whose rollup
-- changed (whose period above is to be rolled up again: one that did not
-- change leaves it as it is).
CREATE FUNCTION parca.rollup_periods(level text, periods timestamptz[],
    OUT rolled integer, OUT rows bigint, OUT changed timestamptz[])
    LANGUAGE plpgsql STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t timestamptz;
    w bigint;
BEGIN
    rolled := 0; rows := 0; changed := '{}';
    FOREACH t IN ARRAY periods LOOP
        w := parca.rollup_period(level, t);
        CONTINUE WHEN coalesce(w, -1) < 0;
        rolled := rolled + 1;
        rows := rows + w;
        IF w > 0 THEN
            changed := changed || t;
        END IF;
    END LOOP;
END
$$;

-- Roll up what changed: the hours that rows were written into since they
-- were rolled up (or that were never rolled up, before the last one that
-- was), as the write log says, at most max_dirty of them, oldest first;
-- the hours after the last one rolled up (completed since, and on the
-- first round every hour with raw rows, those written before the write
-- log was kept included), at most max_forward; then the days, and the
-- weeks, above a period rolled up that are listed already or whose
-- periods below are all rolled up now, and those after the last one
-- listed whose periods below are all rolled up.  NULL: no limit.  Takes
-- the entries of parca.samples out of the write log, putting back the
-- parts left to do: the hours beyond the limits.  (The parts in hours
-- after the last one rolled up are left to the rounds that roll those up
-- for the first time: no period rolled up holds them.)  The caller holds
-- the rollups' lock.
CREATE FUNCTION parca.rollup_changes(max_dirty integer, max_forward integer,
    OUT hours integer, OUT days integer, OUT weeks integer, OUT rows bigint)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    now_hour timestamptz := date_bin('1 hour', now(), '1970-01-01 00:00+00');
    frontier timestamptz;
    pending record;
    r tstzrange;
    todo timestamptz[] := '{}';
    dirty_until timestamptz := 'infinity';
    rolled_until timestamptz := now_hour;
    done record;
    -- the periods whose rollup changed, of the level below the one rolled up
    changed timestamptz[];
    level text;
    lv record;
    last_start timestamptz;
    until timestamptz;
BEGIN
    -- the first hour never seen: the one after the last rolled up
    frontier := coalesce((SELECT max(start) + interval '1 hour' FROM parca.rollup_hours), '-infinity');
    -- the log first: an entry read now was committed before the rows
    -- below are read, so they hold what it logged
    SELECT * INTO pending FROM parca.rollup_log();

    -- the hours before the frontier with rows written into them, oldest
    -- first, at most max_dirty: from the first one over it, dirty_until,
    -- they are the next rounds'
    FOR r IN SELECT x FROM unnest(pending.written * tstzmultirange(tstzrange('-infinity', frontier))) x LOOP
        todo := todo || ARRAY(SELECT parca.rollup_candidates('hour', lower(r),
                                                             least(upper(r) + interval '1 microsecond', frontier)));
    END LOOP;
    todo := ARRAY(SELECT DISTINCT h FROM unnest(todo) h ORDER BY 1);
    -- (greatest() ignores a NULL: no limit is tested as such)
    IF max_dirty IS NOT NULL AND cardinality(todo) > greatest(max_dirty, 0) THEN
        dirty_until := todo[greatest(max_dirty, 0) + 1];
        todo := todo[1:greatest(max_dirty, 0)];
    END IF;
    SELECT * INTO done FROM parca.rollup_periods('hour', todo);
    hours := done.rolled;
    rows := done.rows;
    changed := done.changed;

    -- the hours never seen, oldest first, at most max_forward: every hour
    -- with rows before rolled_until is rolled up then
    IF max_forward <= 0 THEN
        rolled_until := least(frontier, now_hour);
    ELSE
        todo := ARRAY(SELECT c FROM parca.rollup_candidates('hour', frontier, now_hour) c ORDER BY 1);
        IF cardinality(todo) > max_forward THEN
            rolled_until := todo[max_forward + 1];
            todo := todo[1:max_forward];
        END IF;
        SELECT * INTO done FROM parca.rollup_periods('hour', todo);
        hours := hours + done.rolled;
        rows := rows + done.rows;
        changed := changed || done.changed;
    END IF;

    -- days from the hours, then weeks from the days, each from the level
    -- below as it is now: those above a period that changed, if listed
    -- (by difference) or if their periods below are all rolled up now
    -- (before until), and those after the last one listed, up to until
    FOREACH level IN ARRAY ARRAY['day', 'week'] LOOP
        SELECT * INTO lv FROM parca.rollup_level(level);
        EXECUTE format('SELECT max(start) FROM %s', lv.list) INTO last_start;
        until := CASE WHEN isfinite(rolled_until)
                      THEN date_bin(lv.width, rolled_until, '1970-01-01 00:00+00') ELSE rolled_until END;
        EXECUTE format('SELECT coalesce(array_agg(x.t ORDER BY x.t), ''{}'')
                        FROM (SELECT c AS t FROM parca.rollup_candidates($1, $2, $3) c
                              UNION
                              SELECT date_bin($4, p, ''1970-01-01 00:00+00'') FROM unnest($5) p) x
                        WHERE x.t + $4 <= $3 OR EXISTS (SELECT FROM %s l WHERE l.start = x.t)', lv.list)
            INTO todo USING level, coalesce(last_start + lv.width, '-infinity'), until, lv.width, changed;
        SELECT * INTO done FROM parca.rollup_periods(level, todo);
        IF level = 'day' THEN
            days := done.rolled;
        ELSE
            weeks := done.rolled;
        END IF;
        rows := rows + done.rows;
        changed := done.changed;
    END LOOP;

    PERFORM parca.rollup_log_keep(pending.entries, pending.written,
        tstzmultirange(tstzrange(dirty_until, greatest(dirty_until, frontier)),
                       tstzrange(rolled_until, greatest(rolled_until, now_hour))));
END
$$;

-- Roll up every complete hour of the weeks that [start, stop) meets
-- that is not rolled up yet or that rows were written into since it was
-- (the write log), then every complete day and week of them, the same
-- way from the level below.  (Whole weeks, so that a day or week is
-- never rolled up from some of its hours only.)  Where the maintenance
-- worker does not run, or to catch up with a backlog at once.  Returns
-- the hours, days and weeks rolled up (again) and the rollup rows
-- written.
CREATE FUNCTION parca_rollup_hours(start timestamptz, stop timestamptz,
    OUT hours integer, OUT days integer, OUT weeks integer, OUT rows bigint)
    LANGUAGE plpgsql STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    now_hour timestamptz := date_bin('1 hour', now(), '1970-01-01 00:00+00');
    pending record;
    level text;
    lv record;
    todo timestamptz[];
    done record;
    changed timestamptz[] := '{}';
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
    -- (the log first, as parca.rollup_changes reads it)
    SELECT * INTO pending FROM parca.rollup_log(start, stop);
    IF parca.is_citus_table('parca.samples') THEN
        -- on Citus the rows are written on the workers' shards, which
        -- keep no write log (docs/scale-out.md): any hour of the range
        -- may have changed, and is rolled up again (by difference)
        pending.written := tstzmultirange(tstzrange(start, stop));
    END IF;
    -- hours, then days, then weeks (each from the level before, as it is
    -- then): each complete one not rolled up, or changed since (the log
    -- meets the hour; a day's hour, a week's day, changed)
    FOREACH level IN ARRAY ARRAY['hour', 'day', 'week'] LOOP
        SELECT * INTO lv FROM parca.rollup_level(level);
        EXECUTE format('SELECT coalesce(array_agg(c ORDER BY c), ''{}'')
                        FROM parca.rollup_candidates($1, $2, $3) c
                        WHERE NOT EXISTS (SELECT FROM %s l WHERE l.start = c)
                           OR CASE WHEN $1 = ''hour'' THEN $4 && tstzrange(c, c + $5)
                                   ELSE EXISTS (SELECT FROM unnest($6) p
                                                WHERE date_bin($5, p, ''1970-01-01 00:00+00'') = c) END', lv.list)
            INTO todo
            USING level, start, least(stop, date_bin(lv.width, now(), '1970-01-01 00:00+00')),
                  pending.written, lv.width, changed;
        SELECT * INTO done FROM parca.rollup_periods(level, todo);
        CASE level WHEN 'hour' THEN hours := done.rolled;
                   WHEN 'day' THEN days := done.rolled;
                   ELSE weeks := done.rolled; END CASE;
        rows := rows + done.rows;
        changed := done.changed;
    END LOOP;
    -- what the log said of the range is taken in
    PERFORM parca.rollup_log_keep(pending.entries, pending.written,
        tstzmultirange(tstzrange('-infinity', start), tstzrange(least(stop, now_hour), 'infinity')));
END
$$;
REVOKE ALL ON FUNCTION parca_rollup_hours(timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION parca.rollup_period(text, timestamptz), parca.create_rollup_partition(text, timestamptz),
    parca.rollup_candidates(text, timestamptz, timestamptz), parca.rollup_seal(text, timestamptz, timestamptz),
    parca.rollup_log(timestamptz, timestamptz), parca.rollup_log_keep(tid[], tstzmultirange, tstzmultirange),
    parca.rollup_changes(integer, integer), parca.rollup_periods(text, timestamptz[]),
    parca.profile_sums(timestamptz, timestamptz, timestamptz, timestamptz)
    FROM PUBLIC;

-- Before retention drops partitions of parca.samples (sql/41_partitions.sql;
-- the caller holds them and parca.samples locked against writers): the
-- rows written into them since the rollups last looked are rolled up
-- (with parca.rollups on), and each of their hours rolled up is sealed,
-- so that its rollup keeps the history their rows leave.
CREATE FUNCTION parca.rollup_before_retention(doomed regclass[]) RETURNS void
    LANGUAGE plpgsql STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p record;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('parca.samples rollups'));
    IF (SELECT enabled FROM parca.rollup_settings()) THEN
        IF parca.is_citus_table('parca.samples') THEN
            -- no write log on Citus's shards: every hour of the doomed
            -- partitions is rolled up (again), and its day and week
            FOR p IN SELECT r.range_start, r.range_end FROM parca.partition_ranges() r
                     WHERE r.partition = ANY (doomed) ORDER BY r.range_start LOOP
                PERFORM @extschema@.parca_rollup_hours(p.range_start, p.range_end);
            END LOOP;
        ELSE
            PERFORM parca.rollup_changes(NULL, 0);
        END IF;
    END IF;
    FOR p IN SELECT r.range_start, r.range_end FROM parca.partition_ranges() r
             WHERE r.partition = ANY (doomed) ORDER BY r.range_start LOOP
        PERFORM parca.rollup_seal('hour', p.range_start, p.range_end);
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION parca.rollup_before_retention(regclass[]) FROM PUBLIC;

-- One round of the maintenance worker: roll up what changed
-- (parca.rollup_changes: the hours the write log names, and those
-- completed since the last one rolled up, at most max_hours of each,
-- oldest first, so that a backlog is worked off over rounds; then their
-- days and weeks); drop the rollups older than parca.rollup_retention
-- (hours) and parca.rollup_daily_retention (days and weeks) once the
-- level below has no rows there.  With parca.rollups off, only keeps the
-- write log from growing.  Returns the hours, days and weeks rolled up
-- and the partitions dropped.
CREATE FUNCTION parca_maintain_rollups(max_hours integer DEFAULT 168,
    OUT hours integer, OUT days integer, OUT weeks integer, OUT dropped integer)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    SET lock_timeout = '10s'
AS $$
DECLARE
    s record;
    c record;
    pending record;
    r record;
    below_has_rows boolean;
BEGIN
    hours := 0; days := 0; weeks := 0; dropped := 0;
    SELECT * INTO s FROM parca.rollup_settings();
    PERFORM pg_advisory_xact_lock(hashtext('parca.samples rollups'));
    IF NOT s.enabled THEN
        -- nothing is rolled up, but the write log is not to grow without
        -- end: its entries are put back merged by hour, but for those of
        -- hours not over yet, which no period rolled up holds (the first
        -- round with rollups on rolls them up)
        SELECT * INTO pending FROM parca.rollup_log();
        PERFORM parca.rollup_log_keep(pending.entries, pending.written,
            tstzmultirange(tstzrange('-infinity', date_bin('1 hour', now(), '1970-01-01 00:00+00'))));
        RETURN;
    END IF;
    SELECT * INTO c FROM parca.rollup_changes(max_hours, max_hours);
    hours := c.hours; days := c.days; weeks := c.weeks;

    FOR r IN SELECT p.partition, p.range_start, p.range_end, v.above, l.source, l.list
             FROM (VALUES (1, 'hour', s.retention_seconds, 'day'), (2, 'day', s.daily_retention_seconds, 'week'),
                          (3, 'week', s.daily_retention_seconds, NULL)) v(n, level, retention, above)
             CROSS JOIN LATERAL parca.rollup_level(v.level) l
             CROSS JOIN LATERAL parca.partition_ranges(l.target) p
             WHERE v.retention > 0 AND p.range_end <= now() - make_interval(secs => v.retention)
             ORDER BY p.range_start, v.n
    LOOP
        -- (kept while the level below has rows there: an hour (day) rolled
        -- up again from them would bring what its day (week) holds already)
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s WHERE time >= $1 AND time < $2)', r.source)
            INTO below_has_rows USING r.range_start, r.range_end;
        CONTINUE WHEN below_has_rows;
        -- the days (weeks) above keep what the dropped rows held
        IF r.above IS NOT NULL THEN
            PERFORM parca.rollup_seal(r.above, r.range_start, r.range_end);
        END IF;
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
        -- (an hour that rows were written into since it was rolled up is
        -- read from raw rows, unless retention dropped its raw rows:
        -- parca_query does the same, src/query/rollup_ranges.c)
        hours := ARRAY(SELECT h.start FROM parca.rollup_hours h
                       WHERE h.start >= range_hours.start
                         AND h.start + interval '1 hour' - interval '1 microsecond' <= stop
                         AND date_bin(step, h.start, origin)
                             = date_bin(step, h.start + interval '1 hour' - interval '1 microsecond', origin)
                         AND (h.generation > 0
                              OR NOT @extschema@.parca_columnar_written('parca.samples', h.start,
                                                                        h.start + interval '1 hour' - interval '1 microsecond'))
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
            -- (the sums of each generation of the hour)
            SELECT p.start, p.series_id, sum(p.profiles)::bigint, sum(p.value), sum(p.duration)
            FROM parca.profiles_hourly p
            WHERE p.start = ANY (hours) AND p.series_id = ANY (ids)
            GROUP BY p.start, p.series_id;
    END IF;
END
$$;

-- For parca_query_unit (sql/70_query.sql): whether the rollups that
-- parca_query would read for [start, stop] (whole weeks, days and hours
-- within it) hold a row of the series ids with a known period, where the
-- caller may read them (as parca_query does: rollup_ranges.c).  (Periods
-- that parca_query reads from the level below, rows having been written
-- into them since, are not told apart: their rollup rows of generation 0
-- come from raw rows that are still there, which parca_query_unit reads.)
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
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s x JOIN %s p ON p.start = x.time
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
