-- Row-level security of the tables that hold every series together: the
-- partitions of parca.samples and of the rollups, and the rollups
-- (sql/46_rollups.sql) themselves (docs/security.md, "Row-level
-- security").  An administrator may restrict readers to some series with
-- policies on parca.samples; these tables must not show them the others.
-- (Also the update from 0.1, sql/upgrade/0.1--0.2/59-row-security.sql:
-- the trigger is made first, so that the ALTER TABLEs of the parents
-- after it reach the partitions a database already has.)

-- Policies apply to the table a query names: a query through
-- parca.samples (or a rollup) applies its policies to the rows of every
-- partition, but one that names a partition applies the partition's.  So
-- every partition has row-level security without a policy: only its
-- owner and superusers read it directly (a GRANT SELECT ON ALL TABLES IN
-- SCHEMA parca opens nothing), everyone else through its parent.  The
-- maintenance worker makes partitions as it goes (parca.create_partition,
-- parca.create_rollup_partition): this event trigger enables it on each,
-- after the DDL that attached it (an ALTER TABLE of the parent, or a
-- CREATE TABLE ... PARTITION OF).  It runs on every CREATE and ALTER TABLE
-- of the database and returns at once for any other table.  (So a
-- superuser may still disable it on a partition.)
CREATE FUNCTION parca.partitions_row_security() RETURNS event_trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    parents oid[] := ARRAY['parca.samples'::regclass, 'parca.samples_hourly'::regclass,
                           'parca.samples_daily'::regclass, 'parca.samples_weekly'::regclass];
    p regclass;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_event_trigger_ddl_commands() c
                   WHERE c.objid = ANY (parents)
                      OR (c.command_tag = 'CREATE TABLE'
                          AND EXISTS (SELECT FROM pg_inherits i
                                      WHERE i.inhrelid = c.objid AND i.inhparent = ANY (parents)))) THEN
        RETURN;
    END IF;
    -- (those the user may alter; its own ALTER TABLE names a partition)
    FOR p IN
        SELECT i.inhrelid::regclass
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = ANY (parents) AND NOT c.relrowsecurity AND pg_has_role(c.relowner, 'USAGE')
    LOOP
        EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', p);
    END LOOP;
END
$$;
CREATE EVENT TRIGGER parca_partitions_row_security ON ddl_command_end
    WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE')
    EXECUTE FUNCTION parca.partitions_row_security();
-- the default partition, made before the trigger
ALTER TABLE parca.samples_default ENABLE ROW LEVEL SECURITY;

-- The rollups sum every series and know nothing of parca.samples'
-- policies, so their rows are shown only to roles that parca.samples'
-- row-level security does not restrict; the query functions skip the
-- rollups for the others and read raw rows through parca.samples'
-- policies.  The condition does not depend on the row: as a scalar
-- subquery it is evaluated once per query (an InitPlan), and each row
-- costs a parameter's test.  The owner (the superuser who created the
-- extension, as whom the maintenance worker writes the rollups) and
-- superusers are not subject to it.  The direct merge of parca_query
-- (src/query/merge_scan.c) reads a table whose only policy is this one,
-- named so in src/metastore/samples_table.h, as the policy would.
ALTER TABLE parca.samples_hourly ENABLE ROW LEVEL SECURITY;
CREATE POLICY parca_unrestricted_readers ON parca.samples_hourly
    USING ((SELECT NOT pg_catalog.row_security_active('parca.samples'::pg_catalog.regclass)));
ALTER TABLE parca.samples_daily ENABLE ROW LEVEL SECURITY;
CREATE POLICY parca_unrestricted_readers ON parca.samples_daily
    USING ((SELECT NOT pg_catalog.row_security_active('parca.samples'::pg_catalog.regclass)));
ALTER TABLE parca.samples_weekly ENABLE ROW LEVEL SECURITY;
CREATE POLICY parca_unrestricted_readers ON parca.samples_weekly
    USING ((SELECT NOT pg_catalog.row_security_active('parca.samples'::pg_catalog.regclass)));
-- per hour and series, the sums parca_query_range reads
ALTER TABLE parca.profiles_hourly ENABLE ROW LEVEL SECURITY;
CREATE POLICY parca_unrestricted_readers ON parca.profiles_hourly
    USING ((SELECT NOT pg_catalog.row_security_active('parca.samples'::pg_catalog.regclass)));
-- the periods rolled up, with the rows of every series they had
ALTER TABLE parca.rollup_hours ENABLE ROW LEVEL SECURITY;
CREATE POLICY parca_unrestricted_readers ON parca.rollup_hours
    USING ((SELECT NOT pg_catalog.row_security_active('parca.samples'::pg_catalog.regclass)));
ALTER TABLE parca.rollup_days ENABLE ROW LEVEL SECURITY;
CREATE POLICY parca_unrestricted_readers ON parca.rollup_days
    USING ((SELECT NOT pg_catalog.row_security_active('parca.samples'::pg_catalog.regclass)));
ALTER TABLE parca.rollup_weeks ENABLE ROW LEVEL SECURITY;
CREATE POLICY parca_unrestricted_readers ON parca.rollup_weeks
    USING ((SELECT NOT pg_catalog.row_security_active('parca.samples'::pg_catalog.regclass)));
