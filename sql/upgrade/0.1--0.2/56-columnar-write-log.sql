-- The write log (sql/21_columnar_write_log.sql, which
-- 56b-columnar-write-log.sql links to): a table's log_by column, whose
-- range over the rows each transaction writes is logged; parca.samples
-- logs by time, which the rollups (sql/46_rollups.sql) read.  After
-- 53-columnar-options.sql and 54-rollups.sql.
ALTER TABLE parca.columnar_options ADD COLUMN log_by text;
