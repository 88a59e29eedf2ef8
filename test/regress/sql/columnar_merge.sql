-- parca_columnar: merging stripes written on pages (VACUUM,
-- parca_columnar_compact): by size ratio, with their rows and row
-- numbers; stripes cut short by the write memory left alone; the pages of
-- merged-away and rolled-back stripes reused, a free tail given back, a
-- last stripe moved down into free pages before it.
-- (Against other sessions: test/isolation; under load and crashes:
-- test/stress.)
SET parca.columnar_inline_stripe_bytes = 0;  -- every stripe on pages, as a big ingest
CREATE TABLE col_mg (t int, s text, v bigint) USING parca_columnar;
CREATE INDEX col_mg_t ON col_mg (t);
SELECT parca_columnar_set_options('col_mg', stripe_rows => 10000, chunk_group_rows => 1000);
CREATE FUNCTION col_mg_stripes() RETURNS TABLE (first_row bigint, row_count bigint, on_pages boolean)
LANGUAGE sql AS $$
    SELECT first_row, row_count, first_block >= 0 FROM parca.columnar_stripes
    WHERE storage_id = (SELECT max(storage_id) FROM parca.columnar_stripes) ORDER BY first_row
$$;

-- eight writes of 1,000 rows each, one stripe on pages each
DO $$ BEGIN FOR i IN 0..7 LOOP
    INSERT INTO col_mg SELECT i * 1000 + g, 'stack ' || (g % 37), g FROM generate_series(1, 1000) g;
    COMMIT;
END LOOP; END $$;
SELECT count(*) AS stripes, sum(row_count) AS rows, bool_and(on_pages) AS on_pages FROM col_mg_stripes();
CREATE TEMP TABLE col_mg_before AS SELECT t, s, v FROM col_mg;

-- VACUUM merges them into one stripe, keeping every row and its row
-- number: the index finds each row as the sequential scan does
VACUUM col_mg;
SELECT * FROM col_mg_stripes();
SELECT stripes, inline_stripes, rows FROM parca_columnar_check('col_mg');
SELECT count(*) FROM (SELECT * FROM col_mg EXCEPT SELECT * FROM col_mg_before) d;
SET enable_seqscan = off;
SET parca.columnar_enable_custom_scan = off;
SELECT count(*), sum(v) FROM col_mg WHERE t BETWEEN 2500 AND 6499;
RESET enable_seqscan;
RESET parca.columnar_enable_custom_scan;
SELECT count(*), sum(v) FROM col_mg WHERE t BETWEEN 2500 AND 6499;

-- size ratio: a new stripe much smaller than the merged one is not merged
-- into it (that would rewrite 8,000 rows for 1,000) ...
INSERT INTO col_mg SELECT 8000 + g, 'stack ' || (g % 37), g FROM generate_series(1, 1000) g;
SELECT parca_columnar_compact('col_mg');
SELECT * FROM col_mg_stripes();
-- ... until the newer stripes have as many rows: then all of them are,
-- into a full stripe of 10,000 rows and the rest
DO $$ BEGIN FOR i IN 9..15 LOOP
    INSERT INTO col_mg SELECT i * 1000 + g, 'stack ' || (g % 37), g FROM generate_series(1, 1000) g;
    COMMIT;
END LOOP; END $$;
SELECT parca_columnar_compact('col_mg');
SELECT * FROM col_mg_stripes();
SELECT count(*), count(DISTINCT t), sum(v) FROM col_mg;

-- the pages of the merged-away stripes are free once their rows have
-- gone from the catalog (VACUUM of it, here with no snapshot that could
-- still see them), and the next VACUUM of the table lists them: new
-- stripes go there, the table does not grow
VACUUM parca.columnar_stripes;
VACUUM col_mg;
CREATE TEMP TABLE col_mg_size AS SELECT pg_relation_size('col_mg') AS bytes;
DO $$ BEGIN FOR i IN 16..18 LOOP
    INSERT INTO col_mg SELECT i * 1000 + g, 'stack ' || (g % 37), g FROM generate_series(1, 1000) g;
    COMMIT;
END LOOP; END $$;
SELECT pg_relation_size('col_mg') = bytes AS same_size FROM col_mg_size;
SELECT stripes, inline_stripes, rows FROM parca_columnar_check('col_mg');
-- so do the pages of a rolled-back write
BEGIN;
INSERT INTO col_mg SELECT 200000 + g, 'rolled back', g FROM generate_series(1, 5000) g;
ROLLBACK;
VACUUM parca.columnar_stripes;
VACUUM col_mg;
UPDATE col_mg_size SET bytes = pg_relation_size('col_mg');
INSERT INTO col_mg SELECT 300000 + g, 'stack ' || (g % 37), g FROM generate_series(1, 4000) g;
SELECT pg_relation_size('col_mg') = bytes AS same_size FROM col_mg_size;
SELECT stripes, inline_stripes, rows FROM parca_columnar_check('col_mg');
SELECT count(*) FROM col_mg WHERE s = 'rolled back';

-- a merge whose dictionary outgrows the write memory cuts its stripes
-- short; they are final, never merged again (each VACUUM would otherwise
-- rewrite them to the same)
TRUNCATE col_mg;
SELECT parca_columnar_set_options('col_mg', stripe_rows => 100000);
DO $$ BEGIN FOR i IN 0..3 LOOP
    INSERT INTO col_mg SELECT i * 3000 + g, repeat(md5((i * 3000 + g)::text), 8), g
    FROM generate_series(1, 3000) g;
    COMMIT;
END LOOP; END $$;
SET parca.columnar_write_memory = '1MB';
SELECT parca_columnar_compact('col_mg') > 0 AS merged;
SELECT count(*) > 1 AS cut_short, sum(row_count) AS rows FROM col_mg_stripes();
SELECT parca_columnar_compact('col_mg') AS merged_again;
SELECT stripes, inline_stripes, rows FROM parca_columnar_check('col_mg');
RESET parca.columnar_write_memory;

-- a free tail, here the pages of a rolled-back write, is given back
TRUNCATE col_mg;
INSERT INTO col_mg SELECT g, 'stack ' || (g % 37), g FROM generate_series(1, 1000) g;
UPDATE col_mg_size SET bytes = pg_relation_size('col_mg');
BEGIN;
SAVEPOINT a;
INSERT INTO col_mg SELECT g, repeat(md5(g::text), 4), g FROM generate_series(1, 5000) g;
RELEASE a;  -- written: a stripe on pages
ROLLBACK;
SELECT pg_relation_size('col_mg') > bytes AS grown FROM col_mg_size;
VACUUM parca.columnar_stripes;
VACUUM col_mg;
SELECT pg_relation_size('col_mg') = bytes AS given_back FROM col_mg_size;
SELECT stripes, inline_stripes, rows FROM parca_columnar_check('col_mg');

-- the pages a last merge freed before its merged stripe (as in a time
-- partition written no more): VACUUM moves the stripe down into them, and
-- a later VACUUM gives the old pages, now the tail, back
TRUNCATE col_mg;
DO $$ BEGIN FOR i IN 0..5 LOOP
    INSERT INTO col_mg SELECT i * 1000 + g, repeat(md5((i * 1000 + g)::text), 2), g
    FROM generate_series(1, 1000) g;
    COMMIT;
END LOOP; END $$;
VACUUM col_mg;
SELECT count(*) AS stripes, sum(row_count) AS rows FROM col_mg_stripes();
UPDATE col_mg_size SET bytes = pg_relation_size('col_mg');
CREATE TEMP TABLE col_mg_sums AS SELECT count(*) AS n, sum(v) AS v, sum(t) AS t, count(DISTINCT s) AS s FROM col_mg;
VACUUM parca.columnar_stripes;
VACUUM col_mg;
VACUUM parca.columnar_stripes;
VACUUM col_mg;
SELECT pg_relation_size('col_mg') < bytes / 2 AS given_back FROM col_mg_size;
SELECT stripes, inline_stripes, rows FROM parca_columnar_check('col_mg');
SELECT (SELECT count(*) AS n FROM col_mg) = n AS same_rows,
       (SELECT sum(v) FROM col_mg) = v AND (SELECT sum(t) FROM col_mg) = t AS same_sums,
       (SELECT count(DISTINCT s) FROM col_mg) = s AS same_strings
FROM col_mg_sums;
-- and no further VACUUM moves it again
UPDATE col_mg_size SET bytes = pg_relation_size('col_mg');
VACUUM parca.columnar_stripes;
VACUUM col_mg;
SELECT pg_relation_size('col_mg') = bytes AS same_size, count(*) AS stripes FROM col_mg_size, col_mg_stripes() GROUP BY bytes;

DROP TABLE col_mg;
DROP FUNCTION col_mg_stripes();
RESET parca.columnar_inline_stripe_bytes;
