-- Upkeep of parca.samples' time partitions (sql/40_samples.sql): the
-- settings, the partitions' ranges, making and dropping them, the
-- parca.partitions view.  The maintenance worker (src/maintenance/partitions.c)
-- calls parca_maintain_partitions().  Written to run again over itself
-- (CREATE OR REPLACE), so that the upgrade from 0.1 runs this same file
-- after sql/upgrade/0.1--0.2/50-partitions.sql.

-- Partition settings, read through the library so that they are defined
-- (and checked) even in a session that has not loaded it yet.
CREATE OR REPLACE FUNCTION parca.partition_settings(
    OUT interval_seconds bigint, OUT retention_seconds bigint, OUT premake integer)
    AS 'MODULE_PATHNAME', 'parca_partition_settings' LANGUAGE C STABLE STRICT;

-- Every partition of a table partitioned by time (parca.samples, or
-- parca.samples_hourly of sql/46_rollups.sql) with its time range, from
-- the catalog (pg_get_expr of the bound: MINVALUE/MAXVALUE read as
-- -infinity/infinity; the default partition has NULL bounds).
CREATE OR REPLACE FUNCTION parca.partition_ranges(parent regclass,
    OUT partition regclass, OUT range_start timestamptz, OUT range_end timestamptz,
    OUT is_default boolean)
    RETURNS SETOF record
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET datestyle = 'ISO, YMD'
AS $$
DECLARE
    r record;
    m text[];
BEGIN
    FOR r IN
        SELECT i.inhrelid::regclass AS part, pg_get_expr(c.relpartbound, c.oid) AS bound
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = parent
    LOOP
        partition := r.part;
        IF r.bound = 'DEFAULT' THEN
            range_start := NULL; range_end := NULL; is_default := true;
        ELSE
            m := regexp_match(r.bound, '^FOR VALUES FROM \((.*)\) TO \((.*)\)$');
            range_start := CASE m[1] WHEN 'MINVALUE' THEN '-infinity'::timestamptz
                                     WHEN 'MAXVALUE' THEN 'infinity'::timestamptz
                                     ELSE btrim(m[1], '''')::timestamptz END;
            range_end := CASE m[2] WHEN 'MINVALUE' THEN '-infinity'::timestamptz
                                   WHEN 'MAXVALUE' THEN 'infinity'::timestamptz
                                   ELSE btrim(m[2], '''')::timestamptz END;
            is_default := false;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;

-- The partitions of parca.samples.
CREATE OR REPLACE FUNCTION parca.partition_ranges(
    OUT partition regclass, OUT range_start timestamptz, OUT range_end timestamptz,
    OUT is_default boolean)
    RETURNS SETOF record
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM parca.partition_ranges('parca.samples') $$;

-- Make the partition that holds time t, if none does: the period of
-- parca.partition_interval around t (aligned to the Unix epoch, so days
-- start at 00:00 UTC), cut short where it meets a partition already
-- there (after the interval was changed).  Rows in the default
-- partition for its range must have been moved out first
-- (parca_maintain_partitions does).  Returns the partition.
CREATE OR REPLACE FUNCTION parca.create_partition(t timestamptz) RETURNS regclass
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    SET datestyle = 'ISO, YMD'
AS $$
DECLARE
    step bigint := (SELECT interval_seconds FROM parca.partition_settings());
    lo timestamptz;
    hi timestamptz;
    name text;
    existing regclass;
BEGIN
    IF NOT isfinite(t) THEN
        RAISE EXCEPTION 'no partition is made for time %', t
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT partition INTO existing FROM parca.partition_ranges()
    WHERE NOT is_default AND range_start <= t AND t < range_end;
    IF existing IS NOT NULL THEN
        RETURN existing;
    END IF;
    lo := to_timestamp(floor(extract(epoch FROM t) / step) * step);
    hi := lo + make_interval(secs => step);
    lo := greatest(lo, (SELECT max(range_end) FROM parca.partition_ranges()
                        WHERE NOT is_default AND range_end <= t));
    hi := least(hi, (SELECT min(range_start) FROM parca.partition_ranges()
                     WHERE NOT is_default AND range_start > t));
    name := 'samples_' || to_char(lo AT TIME ZONE 'UTC',
                                  CASE WHEN lo = date_trunc('day', lo AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                                       THEN 'YYYYMMDD' ELSE 'YYYYMMDD"_"HH24MISS' END);
    IF lo < '0001-01-01 00:00+00' THEN
        name := name || '_bc';
    END IF;
    -- Writers route a row by the partitions they saw when they opened
    -- parca.samples; one that saw none for t and waits for the default
    -- partition would write into it after the ATTACH below.  The lock
    -- waits for writers that are under way, holds new ones until commit
    -- (they then see the new partition), and lets readers through.
    LOCK TABLE ONLY parca.samples IN EXCLUSIVE MODE;
    EXECUTE format('CREATE TABLE parca.%I (LIKE parca.samples) USING parca_columnar', name);
    -- the options set on parca.samples (parca_columnar_set_options) apply to its partitions
    INSERT INTO parca.columnar_options (relid, stripe_rows, chunk_group_rows, compression_level)
    SELECT format('parca.%I', name)::regclass, o.stripe_rows, o.chunk_group_rows, o.compression_level
    FROM parca.columnar_options o WHERE o.relid = 'parca.samples'::regclass;
    EXECUTE format('ALTER TABLE parca.samples ATTACH PARTITION parca.%I FOR VALUES FROM (%L) TO (%L)',
                   name, lo, hi);
    RAISE LOG 'parca: made partition parca.% for [%, %)', name, lo, hi;
    RETURN format('parca.%I', name)::regclass;
END
$$;

-- Every row of a parca_columnar table deleted as MVCC deletes of its
-- stripes, which snapshots older than the deleting transaction still read
-- (TRUNCATE is not MVCC-safe, and columnar tables have no DELETE).  For
-- the move below; its owner only.  Returns the rows deleted.
CREATE OR REPLACE FUNCTION parca.columnar_delete_all_rows(tbl regclass) RETURNS bigint
    AS 'MODULE_PATHNAME', 'parca_columnar_delete_all_rows' LANGUAGE C STRICT;
REVOKE ALL ON FUNCTION parca.columnar_delete_all_rows(regclass) FROM PUBLIC;

-- Keep parca.samples' partitions: move the rows of the default partition
-- into partitions of their own, make the partitions of the current
-- period and of parca.partition_premake periods ahead, and drop those
-- whose whole range is older than parca.retention.  The maintenance
-- worker calls it every parca.maintenance_naptime; it may be called by
-- hand (or by cron) where the worker does not run.  Returns what it did.
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
REVOKE ALL ON FUNCTION parca_maintain_partitions() FROM PUBLIC;
REVOKE ALL ON FUNCTION parca.create_partition(timestamptz) FROM PUBLIC;

-- The partitions of parca.samples: range, rows (the planner's estimate,
-- kept by VACUUM and ANALYZE), bytes on disk (with the stripes kept
-- inline in parca.columnar_stripes until compaction, not counted), and
-- when retention will drop each (NULL: never).
CREATE OR REPLACE VIEW parca.partitions AS
    SELECT p.partition, p.range_start, p.range_end, p.is_default,
           greatest(c.reltuples, 0)::bigint AS rows_estimate,
           pg_catalog.pg_total_relation_size(p.partition) AS bytes,
           CASE WHEN s.retention_seconds > 0 AND NOT p.is_default
                THEN p.range_end OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => s.retention_seconds)
           END AS drop_after
    FROM parca.partition_ranges() p
    JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) p.partition
    CROSS JOIN parca.partition_settings() s;
COMMENT ON VIEW parca.partitions IS 'partitions of parca.samples: range, size, when retention drops them';
