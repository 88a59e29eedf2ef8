-- parca_columnar: TRUNCATE, VACUUM and compaction, indexes, ANALYZE,
-- table rewrites, DROP, bounded write memory, what is not supported.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS parca;
RESET client_min_messages;

CREATE TABLE col_m (a int, b text) USING parca_columnar;
INSERT INTO col_m SELECT i, 'v' || (i % 10) FROM generate_series(1, 1000) i;

-- TRUNCATE, and a rolled-back TRUNCATE
BEGIN;
TRUNCATE col_m;
SELECT count(*) FROM col_m;
ROLLBACK;
SELECT count(*) FROM col_m;
TRUNCATE col_m;
SELECT count(*) FROM col_m;
SELECT * FROM parca_columnar_check('col_m');
BEGIN;
INSERT INTO col_m VALUES (1, 'before');
TRUNCATE col_m;
INSERT INTO col_m VALUES (2, 'after');
COMMIT;
SELECT * FROM col_m;

-- small transactions make small inline stripes; VACUUM merges them
TRUNCATE col_m;
INSERT INTO col_m VALUES (1, 'a');
INSERT INTO col_m VALUES (2, 'b');
INSERT INTO col_m VALUES (3, 'c');
SELECT * FROM parca_columnar_check('col_m');
CREATE INDEX col_m_a ON col_m (a);
VACUUM col_m;
SELECT * FROM parca_columnar_check('col_m');
SELECT * FROM col_m ORDER BY a;
-- index entries still find their rows after the merge
SET enable_seqscan = off;
SET parca.columnar_enable_custom_scan = off;
EXPLAIN (COSTS OFF) SELECT * FROM col_m WHERE a = 2;
SELECT * FROM col_m WHERE a = 2;
RESET enable_seqscan;
RESET parca.columnar_enable_custom_scan;

-- many small commits are merged at commit, without VACUUM
TRUNCATE col_m;
SELECT parca_columnar_set_options('col_m', stripe_rows => 1000);
DO $$ BEGIN FOR i IN 1..40 LOOP
    INSERT INTO col_m SELECT g, 'small' FROM generate_series(i * 100, i * 100 + 99) g;
    COMMIT;
END LOOP; END $$;
SELECT stripes < 10 AS few_stripes, rows FROM parca_columnar_check('col_m');
SELECT parca_columnar_compact('col_m') >= 0 AS compacted;
SELECT count(*), count(DISTINCT a), min(a), max(a) FROM col_m;

-- compaction merges stripes of similar size: 16 one-row stripes become a
-- 16-row stripe, which later one-row commits leave alone (rows are not
-- rewritten with every new batch); VACUUM merges everything
CREATE TABLE col_tier (a int, b text) USING parca_columnar;
DO $$ BEGIN FOR i IN 1..50 LOOP
    INSERT INTO col_tier VALUES (i, 'one');
    COMMIT;
END LOOP; END $$;
SELECT min, max FROM parca_columnar_chunks('col_tier') WHERE attname = 'a' ORDER BY stripe;
VACUUM col_tier;
SELECT min, max FROM parca_columnar_chunks('col_tier') WHERE attname = 'a' ORDER BY stripe;
SELECT * FROM parca_columnar_check('col_tier');
-- a merge bigger than the write memory allows makes stripes of what fits,
-- stored for good (on pages), so that they are not merged again and again
SET parca.columnar_write_memory = '1MB';
CREATE TABLE col_tier_mem (a int, b text) USING parca_columnar;
DO $$ BEGIN FOR i IN 1..16 LOOP
    INSERT INTO col_tier_mem SELECT g, 'row' FROM generate_series(i * 3000, i * 3000 + 2999) g;
    COMMIT;
END LOOP; END $$;
SELECT * FROM parca_columnar_check('col_tier_mem');
INSERT INTO col_tier_mem VALUES (0, 'one more');
SELECT stripes, inline_stripes, rows FROM parca_columnar_check('col_tier_mem');
RESET parca.columnar_write_memory;
DROP TABLE col_tier, col_tier_mem;

-- btree indexes: unique, on an expression, partial; index scans
CREATE TABLE col_idx (id int8, k text, v int) USING parca_columnar;
INSERT INTO col_idx SELECT i, 'k' || i, i % 100 FROM generate_series(1, 30000) i;
CREATE UNIQUE INDEX col_idx_id ON col_idx (id);
CREATE INDEX col_idx_lower ON col_idx (lower(k));
CREATE INDEX col_idx_part ON col_idx (v) WHERE v = 7;
INSERT INTO col_idx VALUES (30000, 'dup', 0);
INSERT INTO col_idx VALUES (30001, 'K30001', 7);
SET enable_seqscan = off;
SET parca.columnar_enable_custom_scan = off;
EXPLAIN (COSTS OFF) SELECT * FROM col_idx WHERE id = 12345;
SELECT * FROM col_idx WHERE id = 12345;
SELECT * FROM col_idx WHERE lower(k) = 'k30001';
SELECT count(*) FROM col_idx WHERE v = 7;
SELECT * FROM col_idx WHERE id BETWEEN 29998 AND 30005 ORDER BY id;
BEGIN;
INSERT INTO col_idx VALUES (40000, 'new', 1);
SELECT * FROM col_idx WHERE id = 40000;
ROLLBACK;
SELECT * FROM col_idx WHERE id = 40000;
RESET enable_seqscan;
RESET parca.columnar_enable_custom_scan;
-- a concurrent index build is not supported
CREATE INDEX CONCURRENTLY col_idx_cc ON col_idx (v);
-- a parallel build, what CREATE INDEX plans for a table over
-- min_parallel_table_scan_size: the leader reads every row (in parallel
-- mode), its worker none, and the index holds each row once
SET min_parallel_table_scan_size = 0;
SET max_parallel_maintenance_workers = 1;
SET maintenance_work_mem = '256MB';
CREATE INDEX col_idx_par ON col_idx (v, id);
RESET min_parallel_table_scan_size;
RESET max_parallel_maintenance_workers;
RESET maintenance_work_mem;
SET enable_seqscan = off;
SET parca.columnar_enable_custom_scan = off;
EXPLAIN (COSTS OFF) SELECT count(*), count(DISTINCT id) FROM col_idx WHERE v >= 0;
SELECT count(*), count(DISTINCT id) FROM col_idx WHERE v >= 0;
RESET enable_seqscan;
RESET parca.columnar_enable_custom_scan;
DROP INDEX col_idx_par;

-- ANALYZE samples rows and fills the statistics
ANALYZE col_idx;
SELECT reltuples BETWEEN 25000 AND 35000 AS reltuples_ok
FROM pg_class WHERE relname = 'col_idx';
SELECT attname, n_distinct <> 0 AS has_ndistinct
FROM pg_stats WHERE tablename = 'col_idx' ORDER BY attname;

-- rewrites: added columns with defaults, type changes, VACUUM FULL, CLUSTER
ALTER TABLE col_m ADD COLUMN c int DEFAULT 7;
SELECT c, count(*) FROM col_m GROUP BY c;
ALTER TABLE col_m ALTER COLUMN a TYPE int8;
ALTER TABLE col_m DROP COLUMN b;
INSERT INTO col_m VALUES (1, 1);
SELECT count(*), sum(a), sum(c) FROM col_m;
VACUUM FULL col_m;
SELECT count(*), sum(a), sum(c) FROM col_m;
CLUSTER col_idx USING col_idx_id;
SELECT count(*), sum(id) FROM col_idx;
SELECT * FROM parca_columnar_check('col_idx');
ALTER TABLE col_m SET ACCESS METHOD heap;
SELECT count(*), sum(a), sum(c) FROM col_m;
ALTER TABLE col_m SET ACCESS METHOD parca_columnar;
SELECT count(*), sum(a), sum(c) FROM col_m;

-- bounded write memory: a buffer past parca.columnar_write_memory is
-- written out as a stripe, however many rows the statement brings
CREATE TABLE col_mem (a int8, t text) USING parca_columnar;
SET parca.columnar_write_memory = '1MB';
INSERT INTO col_mem SELECT i, md5(i::text) FROM generate_series(1, 100000) i;
RESET parca.columnar_write_memory;
SELECT stripes > 3 AS several_stripes, rows FROM parca_columnar_check('col_mem');

-- DROP forgets the stripes
SELECT count(*) > 0 AS has_stripes FROM parca.columnar_stripes;
CREATE TABLE col_drop (a int) USING parca_columnar;
INSERT INTO col_drop SELECT generate_series(1, 10);
SELECT count(*) INTO TEMP before_drop FROM parca.columnar_stripes;
DROP TABLE col_drop;
SELECT (SELECT count FROM before_drop) - count(*) AS forgotten FROM parca.columnar_stripes;

-- temporary tables work; unlogged ones do not
CREATE TEMP TABLE col_temp (a int) USING parca_columnar;
INSERT INTO col_temp SELECT generate_series(1, 100);
SELECT sum(a) FROM col_temp;
CREATE UNLOGGED TABLE col_unlogged (a int) USING parca_columnar;

-- not supported, with a clear error
UPDATE col_idx SET v = 1 WHERE id = 1;
DELETE FROM col_idx WHERE id = 1;
SELECT * FROM col_idx WHERE id = 1 FOR UPDATE;
INSERT INTO col_idx VALUES (1, 'x', 1) ON CONFLICT DO NOTHING;
INSERT INTO col_idx VALUES (50000, 'x', 1) ON CONFLICT DO NOTHING;
SELECT count(*) FROM col_idx TABLESAMPLE SYSTEM (10);
SELECT parca_columnar_check('pg_class');

-- A partitioned table: its parca_columnar partitions, however deep, each
-- checked or compacted and summed; a partition of another access method is
-- skipped with a notice, one the user may not compact with a warning.
CREATE TABLE col_parted (a int, b text) PARTITION BY RANGE (a);
CREATE TABLE col_parted_1 PARTITION OF col_parted FOR VALUES FROM (0) TO (100) USING parca_columnar;
CREATE TABLE col_parted_2 PARTITION OF col_parted FOR VALUES FROM (100) TO (200) PARTITION BY RANGE (a);
CREATE TABLE col_parted_2a PARTITION OF col_parted_2 FOR VALUES FROM (100) TO (200) USING parca_columnar;
CREATE TABLE col_parted_heap PARTITION OF col_parted FOR VALUES FROM (200) TO (300) USING heap;
INSERT INTO col_parted SELECT i % 300, 'v' FROM generate_series(1, 3000) i;
INSERT INTO col_parted SELECT i % 200, 'w' FROM generate_series(1, 200) i;
INSERT INTO col_parted SELECT i % 200, 'x' FROM generate_series(1, 200) i;
SELECT count(*) FROM col_parted WHERE a < 200;
SELECT stripes, inline_stripes, rows FROM parca_columnar_check('col_parted');
SELECT stripes, inline_stripes, rows FROM parca_columnar_check('col_parted_2');
SELECT parca_columnar_compact('col_parted');
SELECT stripes, inline_stripes, rows FROM parca_columnar_check('col_parted');
SELECT count(*), count(DISTINCT b) FROM col_parted;
CREATE TABLE col_parted_empty (a int) PARTITION BY RANGE (a);
SELECT * FROM parca_columnar_check('col_parted_empty');
SELECT parca_columnar_compact('col_parted_empty');
CREATE ROLE regress_col_parted;
ALTER TABLE col_parted OWNER TO regress_col_parted;
GRANT EXECUTE ON FUNCTION parca_columnar_compact(regclass), parca_columnar_check(regclass) TO regress_col_parted;
SET ROLE regress_col_parted;
SELECT rows FROM parca_columnar_check('col_parted');
SELECT parca_columnar_compact('col_parted');
RESET ROLE;
DROP TABLE col_parted, col_parted_empty;
REVOKE EXECUTE ON FUNCTION parca_columnar_compact(regclass), parca_columnar_check(regclass) FROM regress_col_parted;
DROP ROLE regress_col_parted;
