-- The series index (src/metastore/series_index.c; docs/data-model.md, "Finding
-- series"): what selectors and discovery read instead of every series.
-- Kept by a trigger on parca.series and by every insert into a partition
-- of parca.samples, in the writer's transaction, as the tables' owner
-- (writers need no rights on them, and can forge nothing in them).  No
-- unique constraint: concurrent writers never wait on each other here; a
-- row two of them add at once is there twice, and readers take distinct
-- values.  Not dumped: restoring parca.series and parca.samples fills
-- them again.

-- A series' labels as 64-bit keys, one per label: a hash of (profile
-- type, name, value as ->> gives it), for the GIN index that a
-- selector's equality and regex matchers look their series up in.
CREATE FUNCTION parca.series_label_keys(profile_type text, labels jsonb) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'parca_series_label_keys' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE INDEX series_label_keys ON parca.series
    USING gin (parca.series_label_keys(profile_type, labels)) WITH (fastupdate = off);

-- Every (profile type, label name, value) that a stored series has: the
-- values a regex matcher chooses among (text_pattern_ops: a regex with a
-- literal prefix reads the values with that prefix), and discovery
-- without a time range.  Labels whose value is JSON null are left out.
CREATE TABLE parca.label_values (
    profile_type text NOT NULL,
    name         text NOT NULL,
    value        text NOT NULL
);
CREATE INDEX label_values_type_name_value ON parca.label_values (profile_type, name, value text_pattern_ops);

-- The hours (UTC) in which each series got sample rows, and per hour the
-- label values of those series (name NULL: the profile type itself):
-- discovery over a time range, which counts the hours the range meets.
-- parca.series_hour(t) is the start of the hour that holds t.
-- Rows of hours that no partition of parca.samples holds any more go
-- with parca_metastore_gc().
CREATE FUNCTION parca.series_hour(t timestamptz) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'parca_series_hour' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE TABLE parca.series_hours (
    series_id    bigint NOT NULL,
    hour         timestamptz NOT NULL
);
CREATE INDEX series_hours_series_hour ON parca.series_hours (series_id, hour);
CREATE INDEX series_hours_hour ON parca.series_hours USING brin (hour);
CREATE TABLE parca.label_hours (
    profile_type text NOT NULL,
    name         text,
    hour         timestamptz NOT NULL,
    value        text
);
CREATE INDEX label_hours_type_name_hour_value ON parca.label_hours (profile_type, name, hour, value);
CREATE INDEX label_hours_hour ON parca.label_hours USING brin (hour);
-- They tell which label values exist and which series had rows when, of
-- every series: as the rollups (sql/47_row_security.sql), they show rows
-- only to roles that the row-level security of the tables they come from
-- (parca.series; parca.samples for the hours) does not restrict, whatever
-- is granted.  Selectors and discovery read them as their owner, only for
-- such callers (src/metastore/series_index.c).  (The names as text: parca.samples
-- is made after them.)
ALTER TABLE parca.label_values ENABLE ROW LEVEL SECURITY;
CREATE POLICY parca_unrestricted_readers ON parca.label_values
    USING ((SELECT NOT pg_catalog.row_security_active('parca.series'::pg_catalog.text)));
ALTER TABLE parca.series_hours ENABLE ROW LEVEL SECURITY;
CREATE POLICY parca_unrestricted_readers ON parca.series_hours
    USING ((SELECT NOT pg_catalog.row_security_active('parca.samples'::pg_catalog.text)
                   AND NOT pg_catalog.row_security_active('parca.series'::pg_catalog.text)));
ALTER TABLE parca.label_hours ENABLE ROW LEVEL SECURITY;
CREATE POLICY parca_unrestricted_readers ON parca.label_hours
    USING ((SELECT NOT pg_catalog.row_security_active('parca.samples'::pg_catalog.text)
                   AND NOT pg_catalog.row_security_active('parca.series'::pg_catalog.text)));

CREATE FUNCTION parca.series_index_trigger() RETURNS trigger
    AS 'MODULE_PATHNAME', 'parca_series_index_trigger' LANGUAGE C;
CREATE TRIGGER series_index_insert AFTER INSERT ON parca.series
    FOR EACH ROW EXECUTE FUNCTION parca.series_index_trigger();
CREATE TRIGGER series_index_update AFTER UPDATE ON parca.series
    REFERENCING OLD TABLE AS gone NEW TABLE AS came
    FOR EACH STATEMENT EXECUTE FUNCTION parca.series_index_trigger();
CREATE TRIGGER series_index_delete AFTER DELETE ON parca.series
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION parca.series_index_trigger();
CREATE TRIGGER series_index_truncate AFTER TRUNCATE ON parca.series
    FOR EACH STATEMENT EXECUTE FUNCTION parca.series_index_trigger();

-- Builds the index again from parca.series and parca.samples (after a
-- restore of their rows with triggers disabled; the update from 0.1).
CREATE FUNCTION parca_series_index_rebuild() RETURNS void
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT;
REVOKE ALL ON FUNCTION parca_series_index_rebuild() FROM PUBLIC;
COMMENT ON FUNCTION parca_series_index_rebuild() IS
    'build the series index (label values, series hours) again from parca.series and parca.samples';
