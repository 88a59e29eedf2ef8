-- The samples table.  Its definition lives here and nowhere else; the C
-- code knows its columns from src/metastore/samples_table.h (attribute numbers,
-- names, types), and agent/writer.c names them in its COPY: a change here
-- changes those too.
--
-- Partitioned by time (docs/columnar.md, "Time partitions"): every
-- partition is a parca_columnar table covering one period of
-- parca.partition_interval (a day by default, aligned to UTC), made ahead
-- of time by the maintenance worker (src/maintenance/partitions.c) and dropped whole
-- when parca.retention has passed.  Rows are appended, never updated.
-- A row for which no partition exists yet (a profile from long ago or
-- from the far future) lands in parca.samples_default, which the worker
-- empties into partitions of their own; so no write ever fails for want
-- of a partition.
CREATE TABLE parca.samples (
    time        timestamptz NOT NULL,   -- the profile's time
    series_id   bigint NOT NULL,        -- parca.series.id
    stack       stacktrace NOT NULL,
    value       bigint NOT NULL,
    period      bigint NOT NULL,        -- the profile's period, in the period unit
    duration    bigint NOT NULL,        -- the profile's duration in ns; 0 if none
    num_labels  jsonb                   -- the sample's numeric pprof labels, if any
) PARTITION BY RANGE (time);
CREATE TABLE parca.samples_default PARTITION OF parca.samples DEFAULT USING parca_columnar;
-- The partitions the worker makes are not members of the extension:
-- pg_dump writes each (definition and rows); the default partition is a
-- member and only its rows are dumped.
SELECT pg_catalog.pg_extension_config_dump('parca.samples_default', '');
-- VACUUM writes the rows of the stripes it merges by series, then time:
-- a query for some series then skips the other series' chunk groups
-- (docs/columnar.md, "Merging stripes on pages").  Every transaction that
-- writes rows logs their range of times (parca.columnar_write_log), which
-- the rollups take in (docs/rollups.md).
INSERT INTO parca.columnar_options (relid, sort_by, log_by)
VALUES ('parca.samples'::regclass, '{series_id,time}', 'time');
