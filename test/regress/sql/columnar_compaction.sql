-- parca_columnar compaction: which commits compact, and what a rolled-back
-- or failing compaction leaves.  (Compaction against other sessions:
-- test/isolation; under load and crashes: test/stress.)
CREATE TABLE col_c (a int, b text) USING parca_columnar;

-- rows written inside released savepoints count for the commit's
-- compaction: the sixteenth one-row commit merges the sixteen stripes
DO $$ BEGIN FOR i IN 1..16 LOOP
    BEGIN
        INSERT INTO col_c VALUES (i, 'row ' || i);
    EXCEPTION WHEN division_by_zero THEN NULL;
    END;
    COMMIT;
END LOOP; END $$;
SELECT stripes, inline_stripes, rows FROM parca_columnar_check('col_c');

-- a commit whose writes were rolled back to a savepoint, or went with a
-- table dropped or rewritten as heap, looks for nothing to compact there
BEGIN;
SAVEPOINT a;
SAVEPOINT b;
INSERT INTO col_c VALUES (100, 'gone');
RELEASE b;
ROLLBACK TO a;
COMMIT;
BEGIN;
CREATE TABLE col_c_gone (a int) USING parca_columnar;
INSERT INTO col_c_gone VALUES (1);
DROP TABLE col_c_gone;
CREATE TABLE col_c_heap (a int) USING parca_columnar;
INSERT INTO col_c_heap VALUES (1);
ALTER TABLE col_c_heap SET ACCESS METHOD heap;
COMMIT;
SELECT * FROM col_c_heap;
DROP TABLE col_c_heap;
SELECT count(*) FROM col_c WHERE a = 100;

-- a compaction rolled back leaves the stripes as they were
INSERT INTO col_c VALUES (17, 'row 17');
BEGIN;
SELECT parca_columnar_compact('col_c');
SELECT stripes, rows FROM parca_columnar_check('col_c');
ROLLBACK;
SELECT stripes, rows FROM parca_columnar_check('col_c');
SELECT count(*), sum(a) FROM col_c;

-- a compaction that fails at commit is rolled back on its own: the commit
-- goes on, with a warning, and the stripes stay as they were
TRUNCATE col_c;
DO $$ BEGIN FOR i IN 1..15 LOOP
    INSERT INTO col_c VALUES (i, 'row ' || i);
    COMMIT;
END LOOP; END $$;
CREATE TEMP TABLE col_c_stripe AS
    SELECT storage_id, first_row, directory FROM parca.columnar_stripes
    WHERE storage_id = (SELECT max(storage_id) FROM parca.columnar_stripes)
    ORDER BY first_row LIMIT 1;
UPDATE parca.columnar_stripes s SET directory = '\x00'
    FROM col_c_stripe d WHERE (s.storage_id, s.first_row) = (d.storage_id, d.first_row);
INSERT INTO col_c VALUES (16, 'row 16');
UPDATE parca.columnar_stripes s SET directory = d.directory
    FROM col_c_stripe d WHERE (s.storage_id, s.first_row) = (d.storage_id, d.first_row);
SELECT count(*), sum(a) FROM col_c;
SELECT stripes, inline_stripes, rows FROM parca_columnar_check('col_c');
VACUUM col_c;
SELECT stripes, inline_stripes, rows FROM parca_columnar_check('col_c');

-- VACUUM writes a stripe of more than one chunk group on pages, however
-- small: every scan reads an inline stripe whole.  Sixteen commits of 100
-- rows merge at commit into a full stripe of 1,600 rows (16 groups) kept
-- inline, which VACUUM then moves; and two inline stripes of 150 rows
-- merge into one of 300 (3 groups), on pages.  (Autovacuum off on the
-- table: these 1,900 rows pass its insert threshold, and an autovacuum
-- between the writes and the checks would move the stripes first.)
TRUNCATE col_c;
ALTER TABLE col_c SET (autovacuum_enabled = false);
SELECT parca_columnar_set_options('col_c', stripe_rows => 1600, chunk_group_rows => 100);
DO $$ BEGIN FOR k IN 0..15 LOOP
    INSERT INTO col_c SELECT k * 100 + g, 'row' FROM generate_series(1, 100) g;
    COMMIT;
END LOOP; END $$;
SELECT stripes, inline_stripes, rows, data_blocks FROM parca_columnar_check('col_c');
INSERT INTO col_c SELECT 2000 + g, 'row' FROM generate_series(1, 150) g;
INSERT INTO col_c SELECT 3000 + g, 'row' FROM generate_series(1, 150) g;
SELECT stripes, inline_stripes, rows, data_blocks FROM parca_columnar_check('col_c');
VACUUM col_c;
SELECT stripes, inline_stripes, rows, data_blocks > 0 AS on_pages FROM parca_columnar_check('col_c');
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM col_c WHERE a BETWEEN 3001 AND 3010;
SELECT count(*), sum(a) FROM col_c;

DROP TABLE col_c;
