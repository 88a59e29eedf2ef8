-- parca_columnar: transactions, savepoints, reading one's own writes.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS parca;
RESET client_min_messages;

CREATE TABLE col_tx (a int, b text) USING parca_columnar;

-- a rolled-back insert leaves nothing
BEGIN;
INSERT INTO col_tx SELECT i, 'x' FROM generate_series(1, 20000) i;
SELECT count(*) FROM col_tx;
ROLLBACK;
SELECT count(*) FROM col_tx;

-- a rolled-back COPY leaves nothing
BEGIN;
COPY col_tx FROM stdin;
1	one
2	two
\.
SELECT * FROM col_tx ORDER BY a;
ROLLBACK;
SELECT count(*) FROM col_tx;

-- a committed COPY stays
COPY col_tx FROM stdin;
1	one
2	two
\.
SELECT * FROM col_tx ORDER BY a;

-- savepoints: rolled back rows go, released ones stay
BEGIN;
INSERT INTO col_tx VALUES (3, 'three');
SAVEPOINT s1;
INSERT INTO col_tx VALUES (4, 'four');
ROLLBACK TO s1;
INSERT INTO col_tx VALUES (5, 'five');
SAVEPOINT s2;
INSERT INTO col_tx VALUES (6, 'six');
RELEASE s2;
SAVEPOINT s3;
INSERT INTO col_tx VALUES (7, 'seven');
SELECT a FROM col_tx ORDER BY a;
ROLLBACK TO s3;
COMMIT;
SELECT * FROM col_tx ORDER BY a;

-- a released savepoint inside an aborted transaction goes too
BEGIN;
SAVEPOINT s;
INSERT INTO col_tx VALUES (8, 'eight');
RELEASE s;
ROLLBACK;
SELECT count(*) FROM col_tx WHERE a = 8;

-- errors caught in PL/pgSQL (subtransactions)
DO $$
BEGIN
    FOR i IN 10..12 LOOP
        BEGIN
            INSERT INTO col_tx VALUES (i, 'loop');
            IF i = 11 THEN
                RAISE EXCEPTION 'skip %', i;
            END IF;
        EXCEPTION WHEN raise_exception THEN
            NULL;
        END;
    END LOOP;
END $$;
SELECT a FROM col_tx WHERE b = 'loop' ORDER BY a;

-- a statement sees the rows of earlier statements, not its own
BEGIN;
INSERT INTO col_tx SELECT a + 100, b FROM col_tx;
INSERT INTO col_tx SELECT a + 1000, b FROM col_tx;
SELECT count(*), count(*) FILTER (WHERE a > 1000) FROM col_tx;
COMMIT;
SELECT count(*) FROM col_tx;

-- ... also when it reads its table through an index, which finds the
-- statement's own rows as they are inserted (their row numbers follow
-- those of the rows buffered before, in one range): an index fetch must
-- not find them, nor read past the rows it sees (it crashed the backend)
CREATE TABLE col_tx_idx (a int, b text) USING parca_columnar;
CREATE INDEX ON col_tx_idx (a);
BEGIN;
INSERT INTO col_tx_idx SELECT g, 'row ' || g FROM generate_series(1, 5000) g;
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
SET LOCAL parca.columnar_enable_custom_scan = off;
EXPLAIN (COSTS OFF) INSERT INTO col_tx_idx SELECT a + 100000, b FROM col_tx_idx WHERE a > 0;
INSERT INTO col_tx_idx SELECT a + 100000, b FROM col_tx_idx WHERE a > 0;
SELECT count(*), count(*) FILTER (WHERE a > 100000), count(DISTINCT b) FROM col_tx_idx;
COMMIT;
SELECT count(*), min(a), max(a) FROM col_tx_idx;
SELECT * FROM parca_columnar_check('col_tx_idx');

-- CREATE TABLE AS and a table created and filled in one transaction
BEGIN;
CREATE TABLE col_ctas USING parca_columnar AS SELECT * FROM col_tx WHERE a < 100;
INSERT INTO col_ctas VALUES (99, 'ninety-nine');
SELECT count(*) FROM col_ctas;
COMMIT;
SELECT count(*) FROM col_ctas;
SELECT * FROM parca_columnar_check('col_ctas');

SELECT * FROM parca_columnar_check('col_tx');
