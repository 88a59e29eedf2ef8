-- Maintenance on Citus (docs/scale-out.md): the default partition's rows
-- moved out of its shards (TRUNCATE, which Citus runs on them), the
-- rollups and retention without a write log on the workers,
-- parca_query_range reading the rollups there too (its points from one
-- function on both paths), and table options refused on a Citus table
-- (they would not reach its shards).  Subqueries name a
-- column (Citus refuses a subquery that selects none over a distributed
-- or reference table).

CREATE OR REPLACE FUNCTION parca_columnar_set_options(
    tbl regclass,
    compression_level integer DEFAULT NULL,
    stripe_rows integer DEFAULT NULL,
    chunk_group_rows integer DEFAULT NULL,
    sort_by text[] DEFAULT NULL,
    log_by text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    bad text;
BEGIN
    -- a Citus table's rows are written and merged on the workers, in
    -- shards of their own, which these options (this node's catalog)
    -- would not reach: refused rather than set where nothing reads them
    IF parca.is_citus_table(tbl) THEN
        RAISE EXCEPTION '% is a Citus table: its options would not reach its shards on the workers', tbl
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'parca''s table options are not carried to Citus shards (docs/scale-out.md).';
    END IF;
    IF log_by <> '' AND NOT EXISTS (SELECT FROM pg_attribute a
                                    WHERE a.attrelid = tbl AND a.attname = parca_columnar_set_options.log_by
                                      AND a.attnum > 0 AND NOT a.attisdropped
                                      AND a.atttypid = 'timestamptz'::regtype) THEN
        RAISE EXCEPTION 'log_by names %, which is no timestamptz column of %', parca.message_quote(log_by), tbl
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Log writes by a column of type timestamptz, or '''' for none.';
    END IF;
    SELECT coalesce(parca.message_quote(n), 'NULL') INTO bad
    FROM unnest(parca_columnar_set_options.sort_by) AS u(n)
    WHERE NOT EXISTS (SELECT FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
                      WHERE a.attrelid = tbl AND a.attname = u.n AND a.attnum > 0
                        AND NOT a.attisdropped AND t.typbyval)
    LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'sort_by names %, which is no column of % of a pass-by-value type', bad, tbl
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Order stripes by columns such as bigint or timestamptz ones.';
    END IF;
    INSERT INTO parca.columnar_options AS o
        SELECT t.relid, parca_columnar_set_options.stripe_rows,
               parca_columnar_set_options.chunk_group_rows,
               parca_columnar_set_options.compression_level, parca_columnar_set_options.sort_by,
               parca_columnar_set_options.log_by
        FROM (SELECT tbl UNION SELECT relid FROM pg_partition_tree(tbl)) AS t(relid)
    ON CONFLICT (relid) DO UPDATE SET
        stripe_rows = coalesce(EXCLUDED.stripe_rows, o.stripe_rows),
        chunk_group_rows = coalesce(EXCLUDED.chunk_group_rows, o.chunk_group_rows),
        compression_level = coalesce(EXCLUDED.compression_level, o.compression_level),
        sort_by = coalesce(EXCLUDED.sort_by, o.sort_by),
        log_by = coalesce(EXCLUDED.log_by, o.log_by);
END
$$;

CREATE OR REPLACE FUNCTION parca_maintain_partitions(
    OUT created integer, OUT moved_rows bigint, OUT dropped integer)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    SET datestyle = 'ISO, YMD'
    -- DDL waits for queries on the table; waiting long would queue every
    -- ingest behind it, so give up and try again next time
    SET lock_timeout = '10s'
AS $$
DECLARE
    s record;
    r record;
    parts integer;
    doomed regclass[];
    part regclass;
BEGIN
    created := 0; moved_rows := 0; dropped := 0;
    SELECT * INTO s FROM parca.partition_settings();
    -- one maintainer at a time (the worker, or someone by hand)
    PERFORM pg_advisory_xact_lock(hashtext('parca.samples partitions'));
    -- retention may drop partitions (step 3), whose rows go to the
    -- rollups first: the rollups' lock before any table's, as the rollups
    -- take it (sql/46_rollups.sql)
    IF s.retention_seconds > 0
       AND (EXISTS (SELECT 1 FROM parca.partition_ranges() p
                    WHERE NOT p.is_default AND p.range_end <= now() - make_interval(secs => s.retention_seconds))
            OR EXISTS (SELECT 1 FROM parca.samples_default WHERE isfinite(time))) THEN
        PERFORM pg_advisory_xact_lock(hashtext('parca.samples rollups'));
    END IF;
    SELECT count(*) INTO parts FROM parca.partition_ranges() WHERE NOT is_default;

    -- 1. rows in the default partition get partitions of their own.  Its
    -- rows are copied, deleted there as MVCC deletes (columnar tables
    -- have no DELETE), and inserted again through parca.samples: those
    -- of time +-infinity, which no partition holds, back into it.
    -- parca.samples is locked first (the order writers lock in:
    -- create_partition), against readers too, until the commit: a
    -- statement that listed the partitions before the commit would not
    -- know the new ones, so it waits, lists them after, and its snapshot
    -- then sees the rows in them.  A snapshot taken before the commit
    -- (REPEATABLE READ, pg_dump, a statement that reaches parca.samples
    -- inside a function) still sees them in the default partition and not
    -- in the new ones, as TRUNCATE would not let it.  Rare: rows come to
    -- the default partition only for times no partition was made for.
    IF EXISTS (SELECT 1 FROM parca.samples_default WHERE isfinite(time)) THEN
        LOCK TABLE ONLY parca.samples IN ACCESS EXCLUSIVE MODE;
        LOCK TABLE parca.samples_default IN EXCLUSIVE MODE;
        CREATE TEMP TABLE parca_default_rows ON COMMIT DROP AS
            SELECT * FROM parca.samples_default;
        IF parca.is_citus_table('parca.samples_default') THEN
            -- on Citus the rows are in the shards, and the coordinator's
            -- table an empty shell, which the MVCC delete would leave the
            -- rows beside; TRUNCATE, which Citus runs on the shards in
            -- this transaction, empties them (a snapshot taken before the
            -- commit no longer sees the rows there: docs/scale-out.md)
            TRUNCATE parca.samples_default;
        ELSE
            PERFORM parca.columnar_delete_all_rows('parca.samples_default');
        END IF;
        FOR r IN SELECT DISTINCT to_timestamp(floor(extract(epoch FROM d.time) / s.interval_seconds)
                                              * s.interval_seconds) AS t
                 FROM parca_default_rows d WHERE isfinite(d.time)
        LOOP
            PERFORM parca.create_partition(r.t);
        END LOOP;
        INSERT INTO parca.samples SELECT * FROM parca_default_rows;
        SELECT count(*) INTO moved_rows FROM parca_default_rows WHERE isfinite(time);
        DROP TABLE parca_default_rows;
        RAISE LOG 'parca: moved % rows from parca.samples_default into partitions', moved_rows;
    END IF;

    -- 2. the current period and those ahead
    FOR i IN 0 .. s.premake LOOP
        PERFORM parca.create_partition(now() + make_interval(secs => i * s.interval_seconds));
    END LOOP;

    -- 3. retention.  The rows written into the partitions since the
    -- rollups last looked are rolled up first, and the rollups of their
    -- hours keep what the rows held (parca.rollup_before_retention,
    -- docs/rollups.md); writers are held off from here to the end of the
    -- transaction (readers are not), so that no row slips in between.
    IF s.retention_seconds > 0 THEN
        SELECT array_agg(p.partition) INTO doomed FROM parca.partition_ranges() p
        WHERE NOT p.is_default AND p.range_end <= now() - make_interval(secs => s.retention_seconds);
        IF doomed IS NOT NULL THEN
            LOCK TABLE ONLY parca.samples IN EXCLUSIVE MODE;
            FOREACH part IN ARRAY doomed LOOP
                EXECUTE format('LOCK TABLE %s IN EXCLUSIVE MODE', part);
            END LOOP;
            PERFORM parca.rollup_before_retention(doomed);
        END IF;
        FOR r IN SELECT p.partition, p.range_start, p.range_end FROM parca.partition_ranges() p
                 WHERE p.partition = ANY (doomed)
                 ORDER BY p.range_start
        LOOP
            EXECUTE format('DROP TABLE %s', r.partition);
            dropped := dropped + 1;
            RAISE LOG 'parca: dropped partition % for [%, %): older than parca.retention',
                r.partition, r.range_start, r.range_end;
        END LOOP;
    END IF;
    SELECT count(*) - parts + dropped INTO created FROM parca.partition_ranges() WHERE NOT is_default;
END
$$;

CREATE OR REPLACE FUNCTION parca.profile_sums(t timestamptz, t_end timestamptz,
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

CREATE OR REPLACE FUNCTION parca.rollup_period(level text, t timestamptz) RETURNS bigint
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

CREATE OR REPLACE FUNCTION parca_rollup_hours(start timestamptz, stop timestamptz,
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

CREATE OR REPLACE FUNCTION parca.rollup_before_retention(doomed regclass[]) RETURNS void
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

CREATE OR REPLACE FUNCTION parca_maintain_rollups(max_hours integer DEFAULT 168,
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

CREATE OR REPLACE FUNCTION parca.rollups_have_period(ids bigint[], start timestamptz, stop timestamptz)
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

-- parca_query_range's points from its sums per step and series (both
-- of its paths, below, end here): per step and label set (key), the sum
-- of the values, the rate where every series is a delta profile type with
-- durations, and the profiles.
CREATE TYPE parca.range_series AS (bucket timestamptz, key jsonb, value numeric, duration numeric,
                                   is_delta boolean, profiles numeric);
CREATE FUNCTION parca.range_points(sums parca.range_series[])
    RETURNS TABLE("time" timestamptz, series text, labels jsonb, value double precision,
                  per_second double precision, profiles bigint)
    LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT p.bucket, @extschema@.parca_labels_text(p.key), p.key, pg_catalog.sum(p.value)::double precision,
           -- the aggregate runs whatever CASE decides: it must not divide by 0
           CASE WHEN pg_catalog.bool_and(p.is_delta AND p.duration OPERATOR(pg_catalog.>) 0)
                THEN pg_catalog.sum(p.value::double precision OPERATOR(pg_catalog./) (p.duration OPERATOR(pg_catalog./) 1e9))
                         FILTER (WHERE p.duration OPERATOR(pg_catalog.>) 0) END,
           pg_catalog.sum(p.profiles)::bigint
    FROM pg_catalog.unnest(sums) p
    GROUP BY p.bucket, p.key
    ORDER BY 1, 2
$$;

CREATE OR REPLACE FUNCTION parca.query_range_local(selector text, start timestamptz, stop timestamptz,
                                        step interval, sum_by text[])
    RETURNS TABLE("time" timestamptz, series text, labels jsonb, value double precision,
                  per_second double precision, profiles bigint)
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    WITH args AS (
        -- the arguments checked first: the hours below are read with them
        -- (sum_by read once, checked)
        SELECT parca.range_arguments(step, sum_by) AS sum_by
    ), sel AS (
        SELECT s.id, s.profile_type OPERATOR(pg_catalog.~~) '%:delta' AS is_delta,
               pg_catalog.split_part(s.profile_type, ':', 2) OPERATOR(pg_catalog.=) 'samples'
               AND pg_catalog.split_part(s.profile_type, ':', 3) OPERATOR(pg_catalog.=) 'count' AS scaled,
               CASE WHEN a.sum_by IS NULL THEN s.labels
                    ELSE (SELECT coalesce(pg_catalog.jsonb_object_agg(k, s.labels OPERATOR(pg_catalog.->) k), '{}')
                          FROM pg_catalog.unnest(a.sum_by) k WHERE s.labels OPERATOR(pg_catalog.?) k) END AS key
        FROM @extschema@.parca_series(selector) s, args a
    ), ids AS (
        -- (as arrays: the planner sees a few series, not a table of them)
        SELECT pg_catalog.array_agg(sel.id) AS id, pg_catalog.array_agg(sel.scaled) AS scaled FROM sel
    ), origin AS (
        SELECT CASE WHEN pg_catalog.isfinite(start) THEN start ELSE '2000-01-01' END AS o FROM args
    ), hours AS MATERIALIZED (
        SELECT h.* FROM origin, parca.range_hours((SELECT ids.id FROM ids), start, stop, step, origin.o) h
    ), raw_parts AS (
        -- [start, stop] less the hours read from their sums, each part as
        -- [lo, hi] (to the microsecond, as timestamps go)
        SELECT CASE WHEN pg_catalog.lower_inc(r) THEN pg_catalog.lower(r)
                    ELSE pg_catalog.lower(r) OPERATOR(pg_catalog.+) interval '1 microsecond' END AS lo,
               CASE WHEN pg_catalog.upper_inc(r) THEN pg_catalog.upper(r)
                    ELSE pg_catalog.upper(r) OPERATOR(pg_catalog.-) interval '1 microsecond' END AS hi
        FROM pg_catalog.unnest(
            pg_catalog.tstzmultirange(pg_catalog.tstzrange(start, stop, '[]'))
            OPERATOR(pg_catalog.-) (SELECT coalesce(pg_catalog.range_agg(pg_catalog.tstzrange(h.hour, h.hour OPERATOR(pg_catalog.+) interval '1 hour')),
                                                    '{}')
                                    FROM hours h WHERE h.series_id IS NULL)) r
        WHERE start OPERATOR(pg_catalog.<=) stop
    ), per_profile AS (
        -- (a part at a time: its bounds reach the scan of its partitions)
        SELECT x.* FROM raw_parts p CROSS JOIN LATERAL (
            SELECT pg_catalog.date_bin(step, x.time, (SELECT o FROM origin)) AS bucket,
                   x.series_id, x.time,
                   pg_catalog.sum(CASE WHEN s.scaled AND x.period OPERATOR(pg_catalog.>) 0  -- 0: unknown, the count stays
                                       THEN x.value OPERATOR(pg_catalog.*) x.period ELSE x.value END) AS v,
                   pg_catalog.max(x.duration) AS d
            FROM parca.samples x
            JOIN ROWS FROM (pg_catalog.unnest((SELECT ids.id FROM ids)),
                            pg_catalog.unnest((SELECT ids.scaled FROM ids))) AS s(id, scaled)
                ON s.id OPERATOR(pg_catalog.=) x.series_id
            WHERE x.time OPERATOR(pg_catalog.>=) p.lo AND x.time OPERATOR(pg_catalog.<=) p.hi
            GROUP BY 1, 2, 3) x
    ), per_part AS (
        SELECT p.bucket, p.series_id, pg_catalog.sum(p.v) AS v, pg_catalog.sum(p.d) AS d,
               pg_catalog.count(*) AS profiles
        FROM per_profile p
        GROUP BY p.bucket, p.series_id
        UNION ALL
        SELECT pg_catalog.date_bin(step, h.hour, (SELECT o FROM origin)), h.series_id, h.value, h.duration, h.profiles
        FROM hours h WHERE h.series_id IS NOT NULL
    ), per_series AS (
        SELECT p.bucket, sel.key, pg_catalog.sum(p.v) AS v, pg_catalog.sum(p.d) AS d,
               pg_catalog.bool_and(sel.is_delta) AS is_delta, pg_catalog.sum(p.profiles) AS profiles
        FROM per_part p JOIN sel ON sel.id OPERATOR(pg_catalog.=) p.series_id
        GROUP BY p.bucket, sel.key, p.series_id
    )
    SELECT r.* FROM parca.range_points(ARRAY(SELECT p::parca.range_series FROM per_series p)) r
$$;

CREATE OR REPLACE FUNCTION parca_query_range(selector text, start timestamptz, stop timestamptz,
                                  step interval, sum_by text[] DEFAULT NULL)
    RETURNS TABLE("time" timestamptz, series text, labels jsonb, value double precision,
                  per_second double precision, profiles bigint)
    -- PL/pgSQL: Citus plans the statements of a SQL function with their
    -- parameters unbound, which it cannot distribute (docs/scale-out.md)
    LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
    sb text[];
    ids bigint[];
    scaled_ids bigint[];
BEGIN
    -- the arguments checked first, whatever reads the rows
    sb := parca.range_arguments(step, sum_by);
    IF parca.is_citus_table('parca.samples') THEN
    DECLARE
        origin timestamptz;
        rolled timestamptz[];
        raw tstzmultirange;
        h_bucket timestamptz[];
        h_series bigint[];
        h_value numeric[];
        h_duration numeric[];
        h_profiles bigint[];
    BEGIN
        -- On Citus: the hours kept in the rollups (coordinator-local
        -- tables) read from there, as on one server; the raw rows of the
        -- rest of the range summed per profile on the workers (the group
        -- holds series_id, the distribution column), the rest here.
        SELECT pg_catalog.array_agg(s.id),
               pg_catalog.array_agg(s.id) FILTER (WHERE pg_catalog.split_part(s.profile_type, ':', 2) = 'samples'
                                                  AND pg_catalog.split_part(s.profile_type, ':', 3) = 'count')
        INTO ids, scaled_ids
        FROM @extschema@.parca_series(selector) s;
        origin := CASE WHEN pg_catalog.isfinite(start) THEN start ELSE '2000-01-01' END;
        SELECT pg_catalog.array_agg(h.hour) FILTER (WHERE h.series_id IS NULL),
               pg_catalog.array_agg(pg_catalog.date_bin(step, h.hour, origin)) FILTER (WHERE h.series_id IS NOT NULL),
               pg_catalog.array_agg(h.series_id) FILTER (WHERE h.series_id IS NOT NULL),
               pg_catalog.array_agg(h.value) FILTER (WHERE h.series_id IS NOT NULL),
               pg_catalog.array_agg(h.duration) FILTER (WHERE h.series_id IS NOT NULL),
               pg_catalog.array_agg(h.profiles) FILTER (WHERE h.series_id IS NOT NULL)
        INTO rolled, h_bucket, h_series, h_value, h_duration, h_profiles
        FROM parca.range_hours(ids, start, stop, step, origin) h;
        raw := pg_catalog.tstzmultirange(pg_catalog.tstzrange(start, stop, '[]'))
               OPERATOR(pg_catalog.-) (SELECT coalesce(pg_catalog.range_agg(pg_catalog.tstzrange(h, h OPERATOR(pg_catalog.+) interval '1 hour')), '{}')
                                       FROM pg_catalog.unnest(rolled) h);
        RETURN QUERY
        WITH sel AS (
            SELECT s.id, s.profile_type OPERATOR(pg_catalog.~~) '%:delta' AS is_delta,
                   CASE WHEN sb IS NULL THEN s.labels
                        ELSE (SELECT coalesce(pg_catalog.jsonb_object_agg(k, s.labels OPERATOR(pg_catalog.->) k), '{}')
                              FROM pg_catalog.unnest(sb) k WHERE s.labels OPERATOR(pg_catalog.?) k) END AS key
            FROM @extschema@.parca_series(selector) s
        ), per_profile AS (
            SELECT pg_catalog.date_bin(step, x.time, origin) AS bucket, x.series_id,
                   pg_catalog.sum(CASE WHEN x.series_id OPERATOR(pg_catalog.=) ANY (scaled_ids)
                                            AND x.period OPERATOR(pg_catalog.>) 0
                                       THEN x.value OPERATOR(pg_catalog.*) x.period ELSE x.value END) AS v,
                   pg_catalog.max(x.duration) AS d
            FROM parca.samples x
            WHERE x.series_id OPERATOR(pg_catalog.=) ANY (ids)
              AND x.time OPERATOR(pg_catalog.>=) start AND x.time OPERATOR(pg_catalog.<=) stop
              AND raw OPERATOR(pg_catalog.@>) x.time
            GROUP BY 1, 2, x.time
        ), per_part AS (
            SELECT p.bucket, p.series_id, pg_catalog.sum(p.v) AS v, pg_catalog.sum(p.d) AS d,
                   pg_catalog.count(*) AS profiles
            FROM per_profile p
            GROUP BY p.bucket, p.series_id
            UNION ALL
            SELECT * FROM ROWS FROM (pg_catalog.unnest(h_bucket), pg_catalog.unnest(h_series),
                                     pg_catalog.unnest(h_value), pg_catalog.unnest(h_duration),
                                     pg_catalog.unnest(h_profiles))
        ), per_series AS (
            SELECT p.bucket, sel.key, pg_catalog.sum(p.v) AS v, pg_catalog.sum(p.d) AS d,
                   pg_catalog.bool_and(sel.is_delta) AS is_delta, pg_catalog.sum(p.profiles) AS profiles
            FROM per_part p JOIN sel ON sel.id OPERATOR(pg_catalog.=) p.series_id
            GROUP BY p.bucket, sel.key, p.series_id
        )
        SELECT r.* FROM parca.range_points(ARRAY(SELECT p::parca.range_series FROM per_series p)) r;
        RETURN;
    END;
    END IF;
    RETURN QUERY SELECT * FROM parca.query_range_local(selector, start, stop, step, sum_by);
END
$$;
