-- parca.samples logs its writes by time (56b-columnar-write-log.sql), as
-- sql/40_samples.sql sets for a fresh install.
UPDATE parca.columnar_options SET log_by = 'time' WHERE relid = 'parca.samples'::regclass;
