-- The samples table.  Its definition lives here and nowhere else.
-- Stored with the parca_columnar access method (docs/columnar.md): rows
-- are appended, never updated; old time ranges go by TRUNCATE or by
-- dropping partitions.
CREATE TABLE parca.samples (
    time        timestamptz NOT NULL,   -- the profile's time
    series_id   bigint NOT NULL,        -- parca.series.id
    stack       stacktrace NOT NULL,
    value       bigint NOT NULL,
    period      bigint NOT NULL,        -- the profile's period, in the period unit
    duration    bigint NOT NULL,        -- the profile's duration in ns; 0 if none
    num_labels  jsonb                   -- the sample's numeric pprof labels, if any
) USING parca_columnar;
