-- parca_columnar: the buffers a scan reads into (chunk bytes, dictionaries,
-- decoded chunk groups) are kept by the backend from one scan to the
-- next, up to parca.columnar_scan_cache (columnar_scratch.c).  A scan
-- that an error ends gives them back; two scans open at once never share
-- one; what is kept stays under the setting.
SET parca.columnar_inline_stripe_bytes = 0;
CREATE TABLE col_sc (t int, s text, v bigint) USING parca_columnar;
SELECT parca_columnar_set_options('col_sc', stripe_rows => 20000, chunk_group_rows => 3000);
-- three stripes of 20,000 rows, each with a dictionary of 4,000 texts
-- (about 250 kB decoded) and chunk groups of 3,000 rows (the last of
-- each stripe shorter)
INSERT INTO col_sc SELECT g, repeat('frame;', 8) || (g % 4000), g * 7 FROM generate_series(0, 59999) g;
CREATE TEMP TABLE col_sc_heap AS SELECT * FROM col_sc;
SELECT count(*) AS stripes FROM parca.columnar_stripes
WHERE storage_id = (SELECT max(storage_id) FROM parca.columnar_stripes);
CREATE FUNCTION col_sc_kept() RETURNS bigint LANGUAGE sql AS $$
    SELECT coalesce(sum(total_bytes), 0) FROM pg_backend_memory_contexts
    WHERE name = 'parca_columnar scan buffers'
$$;

-- read the same as the heap copy, scan after scan
SELECT count(*), sum(v), sum(length(s)), count(DISTINCT s) FROM col_sc;
SELECT count(*), sum(v), sum(length(s)), count(DISTINCT s) FROM col_sc_heap;
SELECT count(*), sum(v), sum(length(s)) FROM col_sc WHERE t >= 30000;
SELECT count(*) FROM (SELECT * FROM col_sc EXCEPT ALL SELECT * FROM col_sc_heap) d;

-- an error half way through a scan (the same path as a cancel): the
-- next scan in the session reads correctly, and the buffers came back:
-- ten more such errors take no more memory than one
SELECT sum(v / (t - 30000)) FROM col_sc;
SELECT count(*), sum(v), sum(length(s)) FROM col_sc;
CREATE TEMP TABLE col_sc_after_one AS SELECT col_sc_kept() AS bytes;
SELECT bytes > 0 AS kept FROM col_sc_after_one;
SELECT sum(v / (t - 30000)) FROM col_sc;
SELECT sum(v / (t - 30000)) FROM col_sc;
SELECT sum(v / (t - 30000)) FROM col_sc;
SELECT sum(v / (t - 30000)) FROM col_sc;
SELECT sum(v / (t - 30000)) FROM col_sc;
SELECT sum(v / (t - 30000)) FROM col_sc;
SELECT sum(v / (t - 30000)) FROM col_sc;
SELECT sum(v / (t - 30000)) FROM col_sc;
SELECT sum(v / (t - 30000)) FROM col_sc;
SELECT sum(v / (t - 30000)) FROM col_sc;
SELECT col_sc_kept() = bytes AS no_growth FROM col_sc_after_one;
-- so does a transaction that an error aborts, with a cursor left open
BEGIN;
DECLARE c CURSOR FOR SELECT t, s FROM col_sc;
FETCH 2 FROM c;
SELECT 1 / 0;
ROLLBACK;
SELECT col_sc_kept() = bytes AS no_growth FROM col_sc_after_one;
SELECT count(*), sum(v), sum(length(s)) FROM col_sc;

-- two scans open at once, interleaved: for each outer row, the inner
-- table is scanned again (a nested loop), while the outer scan's group
-- and dictionary stay in use; a shared buffer would mix their values
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
CREATE TABLE col_sc2 (t int, s text) USING parca_columnar;
INSERT INTO col_sc2 SELECT g, repeat('other;', 8) || (g % 300) FROM generate_series(0, 2999) g;
CREATE TEMP TABLE col_sc2_heap AS SELECT * FROM col_sc2;
SELECT count(*), sum(length(a.s) + length(b.s)), count(DISTINCT a.s || b.s)
FROM col_sc a JOIN col_sc2 b ON a.t % 3000 = b.t AND right(a.s, 2) = right(b.s, 2)
WHERE a.t % 997 = 0;
SELECT count(*), sum(length(a.s) + length(b.s)), count(DISTINCT a.s || b.s)
FROM col_sc_heap a JOIN col_sc2_heap b ON a.t % 3000 = b.t AND right(a.s, 2) = right(b.s, 2)
WHERE a.t % 997 = 0;
-- the same table twice, one scan per side
-- (the inner side reads one chunk group of the first stripe, the outer
-- side the other stripes)
SELECT count(*), sum(a.v - b.v), count(DISTINCT a.s || b.s)
FROM col_sc a JOIN col_sc b ON b.t = a.t - 20001 WHERE a.t % 499 = 0 AND b.t < 3000;
SELECT count(*), sum(a.v - b.v), count(DISTINCT a.s || b.s)
FROM col_sc_heap a JOIN col_sc_heap b ON b.t = a.t - 20001 WHERE a.t % 499 = 0 AND b.t < 3000;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;

-- what is kept stays under the setting (plus the context's own first
-- block, 8 kB, and the blocks' headers); 0 keeps nothing, and scans read
-- the same
SET parca.columnar_scan_cache = '256kB';
SELECT count(*), sum(v), sum(length(s)) FROM col_sc;
SELECT col_sc_kept() <= 256 * 1024 + 16384 AS under_cap;
SET parca.columnar_scan_cache = 0;
SELECT count(*), sum(v), sum(length(s)) FROM col_sc;
SELECT col_sc_kept() <= 8192 AS nothing_kept;
RESET parca.columnar_scan_cache;

DROP TABLE col_sc, col_sc2;
DROP FUNCTION col_sc_kept();
