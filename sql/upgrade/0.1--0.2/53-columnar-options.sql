-- parca_columnar_set_options on a partitioned table reaches its
-- partitions, and sets sort_by: the order VACUUM gives merged stripes
-- (sql/20_columnar.sql); parca.samples' is series, then time.  The new
-- function is made with the write log's (56b-columnar-write-log.sql).
ALTER TABLE parca.columnar_options ADD COLUMN sort_by text[] CHECK (cardinality(sort_by) <= 4);
DROP FUNCTION parca_columnar_set_options(regclass, integer, integer, integer);

INSERT INTO parca.columnar_options AS o (relid, sort_by) VALUES ('parca.samples'::regclass, '{series_id,time}')
ON CONFLICT (relid) DO UPDATE SET sort_by = EXCLUDED.sort_by WHERE o.sort_by IS NULL;
