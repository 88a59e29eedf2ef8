-- parca.samples becomes partitioned by time (sql/40_samples.sql).  The
-- 0.1 table, columnar and populated, is kept as it is, without copying a
-- row: renamed, it becomes one partition covering everything from the
-- beginning of time to the end of the day (UTC) of its newest row, and a
-- new partitioned parca.samples with a default partition takes its place.
-- Rows at +infinity, which no bounded partition can hold, stop the
-- upgrade with a message.  Attaching scans the old table once to check
-- its rows against the range (a read of the time column).
--
-- The upgrade script continues with sql/41_partitions.sql (the functions
-- and the view, written to run again over themselves: part 51) and, in
-- part 56b, the new parca_columnar_set_options of
-- sql/21_columnar_write_log.sql.
DO $$
DECLARE
    old_acl aclitem[];
    newest timestamptz;
    upper_bound timestamptz;
    name text;
    r record;
BEGIN
    IF EXISTS (SELECT FROM parca.samples x WHERE x.time OPERATOR(pg_catalog.=) 'infinity'::pg_catalog.timestamptz) THEN
        RAISE EXCEPTION 'parca.samples has rows at time infinity, which no time partition can hold'
            USING HINT = 'Copy them elsewhere and TRUNCATE parca.samples, or give them a finite time, then update again.';
    END IF;
    SELECT c.relacl INTO old_acl FROM pg_catalog.pg_class c
    WHERE c.oid OPERATOR(pg_catalog.=) 'parca.samples'::pg_catalog.regclass;
    IF EXISTS (SELECT FROM pg_catalog.pg_policy p
               WHERE p.polrelid OPERATOR(pg_catalog.=) 'parca.samples'::pg_catalog.regclass)
       OR EXISTS (SELECT FROM pg_catalog.pg_trigger t
                  WHERE t.tgrelid OPERATOR(pg_catalog.=) 'parca.samples'::pg_catalog.regclass) THEN
        RAISE WARNING 'the row-level security policies and triggers of parca.samples stay on its old rows'
            USING HINT = 'Create them again on the new parca.samples.';
    END IF;

    ALTER TABLE parca.samples RENAME TO samples_0_1;
    CREATE TABLE parca.samples (
        time        timestamptz NOT NULL,
        series_id   bigint NOT NULL,
        stack       stacktrace NOT NULL,
        value       bigint NOT NULL,
        period      bigint NOT NULL,
        duration    bigint NOT NULL,
        num_labels  jsonb
    ) PARTITION BY RANGE (time);
    CREATE TABLE parca.samples_default PARTITION OF parca.samples DEFAULT USING parca_columnar;
    PERFORM pg_catalog.pg_extension_config_dump('parca.samples_default', '');

    -- rights as they were, on the new table
    FOR r IN SELECT a.grantee, a.privilege_type FROM pg_catalog.aclexplode(old_acl) a
             WHERE a.grantee OPERATOR(pg_catalog.<>) (SELECT c.relowner FROM pg_catalog.pg_class c
                                                      WHERE c.oid OPERATOR(pg_catalog.=) 'parca.samples_0_1'::pg_catalog.regclass)
    LOOP
        EXECUTE pg_catalog.format('GRANT %s ON parca.samples TO %s', r.privilege_type,
            CASE WHEN r.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(r.grantee)) END);
    END LOOP;
    UPDATE parca.columnar_options o SET relid = 'parca.samples'::pg_catalog.regclass
    WHERE o.relid OPERATOR(pg_catalog.=) 'parca.samples_0_1'::pg_catalog.regclass;

    SELECT pg_catalog.max(x.time) INTO newest FROM parca.samples_0_1 x;
    -- the old table is data now, not part of the extension: pg_dump
    -- writes it as it writes every partition
    ALTER EXTENSION parca DROP TABLE parca.samples_0_1;
    IF newest IS NULL THEN
        DROP TABLE parca.samples_0_1;
    ELSE
        upper_bound := pg_catalog.date_trunc('day', newest AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                       OPERATOR(pg_catalog.+) '1 day'::pg_catalog.interval;
        name := 'samples_until_' || pg_catalog.to_char(upper_bound AT TIME ZONE 'UTC', 'YYYYMMDD');
        EXECUTE pg_catalog.format('ALTER TABLE parca.samples_0_1 RENAME TO %I', name);
        EXECUTE pg_catalog.format('ALTER TABLE parca.samples ATTACH PARTITION parca.%I FOR VALUES FROM (MINVALUE) TO (%L)',
                                  name, upper_bound);
    END IF;
END
$$;
