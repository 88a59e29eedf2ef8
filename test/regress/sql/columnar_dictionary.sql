-- parca_columnar: a table's stack dictionary (docs/columnar.md, "A
-- table's stack dictionary"): stacks stored once per table in segments,
-- stripes refer to them by entry number; VACUUM merges small segments.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS parca;
RESET client_min_messages;

CREATE FUNCTION col_dict_stack(a int, b int) RETURNS stacktrace LANGUAGE sql AS
$$ SELECT ('{' || lpad(to_hex(a + 1), 16, '0') || ',' || lpad(to_hex(b + 7000), 16, '0') || '}')::stacktrace $$;
CREATE TABLE col_dict_heap (i int, st stacktrace);
CREATE TABLE col_dict (i int, st stacktrace) USING parca_columnar;
CREATE FUNCTION col_dict_segments(OUT segments bigint, OUT entries bigint, OUT ranges bigint)
LANGUAGE sql AS $$
SELECT count(*), sum(entry_count), sum(get_byte(directory, 16)) FROM parca.columnar_dictionary
WHERE storage_id = (SELECT max(storage_id) FROM parca.columnar_dictionary) $$;

-- twenty writes, each of 100 stacks of which 10 are new: twenty segments,
-- the first of 100 entries, the others of 10
DO $$ BEGIN FOR k IN 0..19 LOOP
  INSERT INTO col_dict_heap SELECT k * 1000 + g, col_dict_stack(g % 90 + k * 10, g % 3) FROM generate_series(0, 299) g;
  INSERT INTO col_dict SELECT * FROM col_dict_heap WHERE i / 1000 = k;
  COMMIT;
END LOOP; END $$;
SELECT * FROM col_dict_segments();
SELECT count(*) AS stacks, count(DISTINCT st) AS distinct_stacks FROM col_dict;
-- a write of known stacks writes no segment
INSERT INTO col_dict_heap SELECT 100000 + g, col_dict_stack(g % 90, g % 3) FROM generate_series(0, 299) g;
INSERT INTO col_dict SELECT * FROM col_dict_heap WHERE i >= 100000;
SELECT * FROM col_dict_segments();
-- VACUUM merges them by size ratio: the newest back, while a segment has
-- no more entries than the run before it; the numbers stay, in ranges
VACUUM col_dict;
SELECT * FROM col_dict_segments();
SELECT encoding, nulls AS entries, min, max FROM parca_columnar_chunks('col_dict')
WHERE stripe IS NULL AND chunk_group = -1 ORDER BY min::int;
SELECT count(*) FROM (SELECT * FROM col_dict EXCEPT ALL SELECT * FROM col_dict_heap) x;
SELECT count(*) FROM (SELECT * FROM col_dict_heap EXCEPT ALL SELECT * FROM col_dict) x;
SELECT stripes, rows FROM parca_columnar_check('col_dict');
-- once more: nothing new, nothing merged
VACUUM col_dict;
SELECT * FROM col_dict_segments();
-- writes after the merge find their stacks in the merged segment
INSERT INTO col_dict SELECT * FROM col_dict_heap WHERE i < 1000;
INSERT INTO col_dict_heap SELECT * FROM col_dict_heap WHERE i < 1000;
SELECT * FROM col_dict_segments();
SELECT count(*) FROM (SELECT * FROM col_dict EXCEPT ALL SELECT * FROM col_dict_heap) x;
SELECT count(*) FROM (SELECT * FROM col_dict_heap EXCEPT ALL SELECT * FROM col_dict) x;

-- numbers that a rolled-back write took are not used again: its stripe
-- (1,000 rows, written during the INSERT) and segment go, the next write
-- numbers its stacks past them, and (with more entries than the older
-- segment) is merged with it into one of two ranges
SELECT parca_columnar_set_options('col_dict', stripe_rows => 1000);
BEGIN;
INSERT INTO col_dict SELECT g, col_dict_stack(5000 + g % 50, 0) FROM generate_series(1, 1000) g;
SELECT * FROM col_dict_segments();
ROLLBACK;
INSERT INTO col_dict_heap SELECT 200000 + g, col_dict_stack(6000 + g % 800, 0) FROM generate_series(1, 1000) g;
INSERT INTO col_dict SELECT * FROM col_dict_heap WHERE i > 200000;
VACUUM col_dict;
SELECT * FROM col_dict_segments();
SELECT encoding, nulls AS entries, min, max FROM parca_columnar_chunks('col_dict')
WHERE stripe IS NULL AND chunk_group = -1 ORDER BY min::int;
SELECT count(*) FROM (SELECT * FROM col_dict EXCEPT ALL SELECT * FROM col_dict_heap) x;
SELECT count(*) FROM (SELECT * FROM col_dict_heap EXCEPT ALL SELECT * FROM col_dict) x;
SELECT stripes, rows FROM parca_columnar_check('col_dict');

-- TRUNCATE forgets the segments with the stripes
SELECT max(storage_id) AS old_storage FROM parca.columnar_dictionary \gset
TRUNCATE col_dict;
SELECT count(*) FROM parca.columnar_dictionary WHERE storage_id = :old_storage;
DROP TABLE col_dict, col_dict_heap;
DROP FUNCTION col_dict_stack(int, int), col_dict_segments();
