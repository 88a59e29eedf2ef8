-- Hourly rollups of parca.samples (docs/rollups.md): per series and per
-- complete hour, the hour's merged profile, so that parca_query over a
-- long range reads a few rows per stack and hour instead of every sample
-- row.  Kept by the maintenance worker (src/partitions.c) through
-- parca_maintain_rollups(); parca_rollup_hours() runs the same by hand.

-- Rollup settings, read through the library (src/rollups.c) so that they
-- are defined in a session that has not loaded it yet.
CREATE FUNCTION parca.rollup_settings(
    OUT enabled boolean, OUT retention_seconds bigint, OUT late_window_seconds bigint)
    AS 'MODULE_PATHNAME', 'parca_rollup_settings' LANGUAGE C STABLE STRICT;

-- The rollup rows: the columns of parca.samples, so that the same merge
-- (src/query/merge_scan.c) reads them.  One row per hour, series, stack
-- and period: time is the start of the hour, value the sum of the hour's
-- values of that stack.  Grouping by period keeps the merge exact: a
-- samples:count value is reported times its period (and a period of 0
-- keeps its count), and sum(value) x period equals the sum of each
-- value x period only within one period.  duration is 0 and num_labels
-- NULL: no merge reads them.  A late row of an hour already rolled up
-- adds rows for the same hour (parca.rollup_hour), so an hour may have
-- several rows per stack; they add up to the hour's merge.
-- Partitioned by time in weeks (parca.create_rollup_partition), so that
-- parca.rollup_retention drops them whole.
CREATE TABLE parca.samples_hourly (LIKE parca.samples) PARTITION BY RANGE (time);
COMMENT ON TABLE parca.samples_hourly IS 'hourly rollups of parca.samples: per hour, series, stack and period, the summed value';

-- Every hour looked at, with the raw rows it had then: an hour here is
-- read from parca.samples_hourly by parca_query (an hour with 0 rows
-- has no rollup rows).  The number of rows tells late rows apart: an
-- hour that has more rows now is rolled up again.
CREATE TABLE parca.rollup_hours (
    hour        timestamptz PRIMARY KEY,
    raw_rows    bigint NOT NULL,
    rolled_at   timestamptz NOT NULL DEFAULT pg_catalog.now()
);
SELECT pg_catalog.pg_extension_config_dump('parca.rollup_hours', '');

-- Make the week partition of parca.samples_hourly that holds time t, if
-- none does, with parca.samples' columnar options.  Only the rollup
-- functions write the table, one at a time (their advisory lock).
CREATE FUNCTION parca.create_rollup_partition(t timestamptz) RETURNS regclass
    LANGUAGE plpgsql STRICT
    SET search_path = pg_catalog, pg_temp
    SET datestyle = 'ISO, YMD'
AS $$
DECLARE
    week constant bigint := 7 * 86400;
    lo timestamptz;
    name text;
    existing regclass;
BEGIN
    IF NOT isfinite(t) THEN
        RAISE EXCEPTION 'no rollup partition is made for time %', t
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT partition INTO existing FROM parca.partition_ranges('parca.samples_hourly')
    WHERE range_start <= t AND t < range_end;
    IF existing IS NOT NULL THEN
        RETURN existing;
    END IF;
    lo := to_timestamp(floor(extract(epoch FROM t) / week) * week);
    name := 'samples_hourly_' || to_char(lo AT TIME ZONE 'UTC', 'YYYYMMDD');
    EXECUTE format('CREATE TABLE parca.%I (LIKE parca.samples_hourly) USING parca_columnar', name);
    INSERT INTO parca.columnar_options (relid, stripe_rows, chunk_group_rows, compression_level)
    SELECT format('parca.%I', name)::regclass, o.stripe_rows, o.chunk_group_rows, o.compression_level
    FROM parca.columnar_options o WHERE o.relid = 'parca.samples'::regclass;
    EXECUTE format('ALTER TABLE parca.samples_hourly ATTACH PARTITION parca.%I FOR VALUES FROM (%L) TO (%L)',
                   name, lo, lo + make_interval(secs => week));
    RETURN format('parca.%I', name)::regclass;
END
$$;

-- Roll up hour h (its start): the first time, its merge; later, if it
-- has more raw rows than when it was rolled up (late rows), the
-- difference between its merge now and its rollup rows, so that they add
-- up to the merge again.  An hour with fewer raw rows than recorded has
-- lost partitions to parca.retention: its rollup stays as it is.  An hour
-- without rows is not recorded.  An hour with rollup rows but not listed
-- (parca.rollup_hours emptied by hand) is rolled up by difference too.  Returns the rollup rows written, or -1
-- if there was nothing to do.
CREATE FUNCTION parca.rollup_hour(h timestamptz) RETURNS bigint
    LANGUAGE plpgsql STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    h_end constant timestamptz := h + interval '1 hour';
    n bigint;
    prev bigint;
    written bigint := 0;
BEGIN
    SELECT count(*) INTO n FROM parca.samples WHERE time >= h AND time < h_end;
    SELECT raw_rows INTO prev FROM parca.rollup_hours WHERE hour = h;
    IF n <= coalesce(prev, 0) THEN
        RETURN -1;
    END IF;
    PERFORM parca.create_rollup_partition(h);
    -- (rollup rows of an hour not listed: the list was emptied by hand)
    IF prev IS NULL AND NOT EXISTS (SELECT FROM parca.samples_hourly WHERE time = h) THEN
        INSERT INTO parca.samples_hourly (time, series_id, stack, value, period, duration, num_labels)
        SELECT h, series_id, stack, sum(value)::bigint, period, 0, NULL
        FROM parca.samples WHERE time >= h AND time < h_end
        GROUP BY series_id, stack, period
        -- a series' rows together: chunk groups skipped by series, runs of one id
        ORDER BY series_id;
    ELSE
        -- the merge now, less what the rollup holds: the late rows' sums
        -- (and a stack they bring with a sum of 0, which the merge shows)
        INSERT INTO parca.samples_hourly (time, series_id, stack, value, period, duration, num_labels)
        SELECT h, d.series_id, d.stack, sum(d.value)::bigint, d.period, 0, NULL
        FROM (SELECT series_id, stack, value::numeric AS value, period, false AS rolled
              FROM parca.samples WHERE time >= h AND time < h_end
              UNION ALL
              SELECT series_id, stack, -value::numeric, period, true
              FROM parca.samples_hourly WHERE time = h) d
        GROUP BY d.series_id, d.stack, d.period
        HAVING sum(d.value) <> 0 OR NOT bool_or(d.rolled)
        ORDER BY d.series_id;
    END IF;
    GET DIAGNOSTICS written = ROW_COUNT;
    INSERT INTO parca.rollup_hours (hour, raw_rows) VALUES (h, n)
    ON CONFLICT (hour) DO UPDATE SET raw_rows = excluded.raw_rows, rolled_at = excluded.rolled_at;
    RETURN written;
END
$$;

-- The hours with raw rows in [start, stop), oldest first.
CREATE FUNCTION parca.raw_hours(start timestamptz, stop timestamptz) RETURNS SETOF timestamptz
    LANGUAGE sql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT DISTINCT date_bin('1 hour', time, '2000-01-01 00:00+00') FROM parca.samples
    WHERE time >= start AND time < stop AND isfinite(time) ORDER BY 1
$$;

-- Roll up every complete hour in [start, stop) (each that starts there):
-- those not rolled up yet, and those with late rows.  For a backfill, or
-- where the maintenance worker does not run.  Returns the hours rolled up
-- (again) and the rollup rows written.
CREATE FUNCTION parca_rollup_hours(start timestamptz, stop timestamptz,
    OUT hours integer, OUT rows bigint)
    LANGUAGE plpgsql STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    h timestamptz;
    w bigint;
BEGIN
    hours := 0; rows := 0;
    IF NOT (SELECT enabled FROM parca.rollup_settings()) THEN
        RAISE NOTICE 'parca.rollups is off: nothing is rolled up';
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('parca.samples rollups'));
    -- the end of the last complete hour in the range
    stop := least(stop, now());
    IF NOT isfinite(stop) THEN
        RETURN;
    END IF;
    stop := date_bin('1 hour', stop, '2000-01-01 00:00+00');
    FOR h IN SELECT * FROM parca.raw_hours(start, stop) LOOP
        -- an hour that starts before start is not wholly in the range
        CONTINUE WHEN h < start;
        w := parca.rollup_hour(h);
        IF w >= 0 THEN
            hours := hours + 1;
            rows := rows + w;
        END IF;
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION parca_rollup_hours(timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION parca.rollup_hour(timestamptz), parca.create_rollup_partition(timestamptz),
    parca.raw_hours(timestamptz, timestamptz) FROM PUBLIC;

-- One round of the maintenance worker: roll up the hours with rows
-- completed since the last hour rolled up (at most max_hours, oldest
-- first, so that a backlog is worked off over rounds), look again at the
-- hours of the last parca.rollup_late_window for late rows, and drop the
-- rollups older than parca.rollup_retention.  Returns the hours rolled
-- up and the partitions dropped.
CREATE FUNCTION parca_maintain_rollups(max_hours integer DEFAULT 168,
    OUT hours integer, OUT dropped integer)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    SET lock_timeout = '10s'
AS $$
DECLARE
    s record;
    h timestamptz;
    from_hour timestamptz;
    r record;
BEGIN
    hours := 0; dropped := 0;
    SELECT * INTO s FROM parca.rollup_settings();
    IF NOT s.enabled THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('parca.samples rollups'));
    from_hour := least(coalesce((SELECT max(hour) + interval '1 hour' FROM parca.rollup_hours), '-infinity'),
                       now() - make_interval(secs => s.late_window_seconds));
    FOR h IN SELECT * FROM parca.raw_hours(from_hour, date_bin('1 hour', now(), '2000-01-01 00:00+00')) LOOP
        EXIT WHEN hours >= max_hours;
        IF parca.rollup_hour(h) >= 0 THEN
            hours := hours + 1;
        END IF;
    END LOOP;

    IF s.retention_seconds > 0 THEN
        FOR r IN SELECT p.partition, p.range_start, p.range_end
                 FROM parca.partition_ranges('parca.samples_hourly') p
                 WHERE p.range_end <= now() - make_interval(secs => s.retention_seconds)
                 ORDER BY p.range_start
        LOOP
            EXECUTE format('DROP TABLE %s', r.partition);
            DELETE FROM parca.rollup_hours WHERE hour >= r.range_start AND hour < r.range_end;
            dropped := dropped + 1;
            RAISE LOG 'parca: dropped rollup partition % for [%, %): older than parca.rollup_retention',
                r.partition, r.range_start, r.range_end;
        END LOOP;
    END IF;
END
$$;
REVOKE ALL ON FUNCTION parca_maintain_rollups(integer) FROM PUBLIC;

-- The rollups kept: per partition of parca.samples_hourly its range, the
-- hours rolled up in it, its rows (the planner's estimate) and bytes.
CREATE VIEW parca.rollups AS
    SELECT p.partition, p.range_start, p.range_end,
           (SELECT pg_catalog.count(*) FROM parca.rollup_hours h
            WHERE h.hour OPERATOR(pg_catalog.>=) p.range_start
              AND h.hour OPERATOR(pg_catalog.<) p.range_end) AS hours,
           greatest(c.reltuples, 0)::bigint AS rows_estimate,
           pg_catalog.pg_total_relation_size(p.partition) AS bytes
    FROM parca.partition_ranges('parca.samples_hourly') p
    JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) p.partition;
COMMENT ON VIEW parca.rollups IS 'partitions of parca.samples_hourly: range, hours rolled up, size';
