-- parca_columnar: every supported type, NULLs, and every encoding.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS parca;
RESET client_min_messages;

CREATE TABLE col_types_heap (
    id      int8,
    i2      int2,
    i4      int4,
    f4      float4,
    f8      float8,
    b       bool,
    d       date,
    ts      timestamptz,
    t       text,
    ba      bytea,
    j       jsonb,
    st      stacktrace,
    n       numeric,
    u       uuid,
    iv      interval,
    c       "char"
);
CREATE TABLE col_types (LIKE col_types_heap) USING parca_columnar;

INSERT INTO col_types_heap
SELECT i,
       (i % 300 - 150)::int2,
       CASE WHEN i % 10 = 0 THEN NULL ELSE i * 7 END,
       (i / 4.0)::float4,
       CASE WHEN i % 17 = 0 THEN 'NaN'::float8 ELSE i / 3.0 END,
       CASE WHEN i % 5 = 0 THEN NULL ELSE i % 2 = 0 END,
       '2024-01-01'::date + i / 100,
       '2024-01-01 00:00:00+00'::timestamptz + (i / 50) * interval '10 seconds',
       CASE WHEN i % 7 = 0 THEN NULL ELSE 'label-' || (i % 13) END,
       decode(md5(i::text), 'hex'),
       jsonb_build_object('job', 'job' || (i % 3), 'instance', '10.0.0.' || (i % 4)),
       ('{' || lpad(to_hex(i % 9 + 1), 16, '0') || ',' || lpad(to_hex(i % 4 + 100), 16, '0')
            || ',00000000000000ff}')::stacktrace,
       i * 1.5,
       md5((i % 50)::text)::uuid,
       (i % 20) * interval '1 minute 1 second',
       chr(65 + i % 26)::"char"
FROM generate_series(1, 25000) i;
INSERT INTO col_types_heap (id) VALUES (NULL);

INSERT INTO col_types SELECT * FROM col_types_heap;

-- the same rows, both ways
SELECT count(*) FROM (SELECT * FROM col_types EXCEPT ALL SELECT * FROM col_types_heap) x;
SELECT count(*) FROM (SELECT * FROM col_types_heap EXCEPT ALL SELECT * FROM col_types) x;
SELECT count(*), count(i4), count(t), count(b), sum(i4), sum(n), min(ts), max(ts),
       count(DISTINCT st), count(DISTINCT j), count(DISTINCT u)
FROM col_types;
SELECT * FROM col_types WHERE id IN (1, 2, 10) OR id IS NULL ORDER BY id;

-- the stored form
SELECT * FROM parca_columnar_check('col_types');
SELECT attname, encoding, nulls, min, max
FROM parca_columnar_chunks('col_types')
WHERE stripe = 0 AND chunk_group IN (-1, 0)
ORDER BY attname, chunk_group;

-- each integer encoding wins where it should
CREATE TABLE col_enc (
    seq      int8,      -- 1, 2, 3: runs of equal deltas
    square   int8,      -- i * i: constant delta of delta
    jitter   int8,      -- steps of 3 to 7: small deltas
    small    int4,      -- 0 .. 12 in no order: bit-packed
    constant int4,      -- one run
    nothing  int4,      -- all NULL
    label    text,      -- few values: dictionary
    uniq     text       -- all different: plain
) USING parca_columnar;
INSERT INTO col_enc
SELECT i, i::int8 * i, i * 5 + (i * 7919) % 3, (i * 7919) % 13, 42, NULL,
       'l' || (i % 5), 'u' || i
FROM generate_series(1, 5000) i;
SELECT attname, encoding, compressed
FROM parca_columnar_chunks('col_enc')
WHERE chunk_group = 0
ORDER BY attname;
SELECT sum(seq), sum(square), sum(jitter), sum(small), sum(constant), count(nothing),
       count(DISTINCT label), count(DISTINCT uniq)
FROM col_enc;

-- bit-packed values of every width: chunk group g (101 rows, so that no
-- group ends on a whole byte) holds values below 2^(g + 1), its maximum
-- among them; widths above 56 are stored as whole 64-bit words
SET parca.columnar_chunk_group_rows = 101;
CREATE TABLE col_widths_heap AS
SELECT g, r, CASE WHEN r = 0 THEN (2::numeric ^ (g + 1) - 1)::int8
                  ELSE ('x' || left(md5(g || ':' || r), 16))::bit(64)::int8
                       & (2::numeric ^ (g + 1) - 1)::int8 END AS v
FROM generate_series(0, 61) g, generate_series(0, 100) r;
CREATE TABLE col_widths (LIKE col_widths_heap) USING parca_columnar;
INSERT INTO col_widths SELECT * FROM col_widths_heap ORDER BY g, r;
RESET parca.columnar_chunk_group_rows;
SELECT encoding, count(*), min(raw_bytes), max(raw_bytes)
FROM parca_columnar_chunks('col_widths') WHERE attname = 'v' GROUP BY encoding;
SELECT count(*) FROM (SELECT * FROM col_widths EXCEPT ALL SELECT * FROM col_widths_heap) x;
SELECT count(*) FROM (SELECT * FROM col_widths_heap EXCEPT ALL SELECT * FROM col_widths) x;

-- zstd level per table; level 0 stores chunks as encoded
SELECT parca_columnar_set_options('col_enc', compression_level => 0);
INSERT INTO col_enc SELECT * FROM col_enc;
SELECT bool_or(compressed) AS any_compressed
FROM parca_columnar_chunks('col_enc') WHERE stripe > 0;
SELECT stripe_rows, chunk_group_rows, compression_level
FROM parca.columnar_options WHERE relid = 'col_enc'::regclass;

-- empty strings, empty stacks, wide values
CREATE TABLE col_edge (t text, st stacktrace, big text) USING parca_columnar;
INSERT INTO col_edge VALUES ('', '{}', repeat('x', 100000)), (NULL, NULL, NULL),
    ('a', '{0000000000000001}', repeat('y', 3));
SELECT t, st, length(big) FROM col_edge ORDER BY t NULLS LAST;

-- stack dictionaries as word tables (dictionary(words)): values of whole
-- 8-byte words made of few distinct ones.  A stacktrace column keeps its
-- stacks in the table's stack dictionary (parca_columnar_chunks' rows of
-- stripe NULL), each stripe their entry numbers there.  3,000 stacks of 12 to 40
-- frames out of 600 location ids (two-byte indexes), each stack in 4 rows;
-- col_types above has one-byte indexes (14 words), and 20,000 stacks of
-- 10 frames out of 70,000 (each in about 3 stacks) need three-byte indexes
CREATE FUNCTION col_words_stack(ids int8[]) RETURNS stacktrace LANGUAGE sql AS
$$ SELECT ('{' || string_agg(lpad(to_hex(hashint8extended(id, 7)), 16, '0'), ',') || '}')::stacktrace
   FROM unnest(ids) id $$;
CREATE TABLE col_words_heap AS
SELECT i, s, col_words_stack(ARRAY(SELECT CASE WHEN f < 4 THEN (s * 7 + f) % 600
                                              ELSE (f * 13 + s % 40) % 600 END
                                   FROM generate_series(0, 11 + s % 29) f)) AS st
FROM generate_series(1, 12000) i, LATERAL (SELECT i % 3000 AS s) x;
CREATE TABLE col_words (LIKE col_words_heap) USING parca_columnar;
INSERT INTO col_words SELECT * FROM col_words_heap;
SELECT encoding, nulls AS entries, raw_bytes < 3000 * (1 + 26 * 8) / 3 AS third_of_plain
FROM parca_columnar_chunks('col_words') WHERE stripe IS NULL AND chunk_group = -1;
SELECT encoding, nulls AS entries
FROM parca_columnar_chunks('col_words') WHERE attname = 'st' AND chunk_group = -1;
-- beside the word dictionary, the 64-bit id of each entry (format version
-- 3), stored as they are; the plain column i has none
SELECT attname, encoding, nulls AS entries, stored_bytes = 8 * nulls AS eight_bytes_each, compressed
FROM parca_columnar_chunks('col_words') WHERE chunk_group = -2;
SELECT count(*) FROM (SELECT * FROM col_words EXCEPT ALL SELECT * FROM col_words_heap) x;
SELECT count(*) FROM (SELECT * FROM col_words_heap EXCEPT ALL SELECT * FROM col_words) x;
SELECT stripes, rows FROM parca_columnar_check('col_words');

CREATE TABLE col_words_wide_heap AS
SELECT i, col_words_stack(ARRAY(SELECT (i % 20000 + f * 7000) % 70000 FROM generate_series(0, 9) f)) AS st
FROM generate_series(1, 40000) i;
CREATE TABLE col_words_wide (LIKE col_words_wide_heap) USING parca_columnar;
INSERT INTO col_words_wide SELECT * FROM col_words_wide_heap;
SELECT encoding, nulls AS entries, raw_bytes
FROM parca_columnar_chunks('col_words_wide') WHERE stripe IS NULL AND chunk_group = -1;
SELECT count(*) FROM (SELECT * FROM col_words_wide EXCEPT ALL SELECT * FROM col_words_wide_heap) x;
SELECT count(*) FROM (SELECT * FROM col_words_wide_heap EXCEPT ALL SELECT * FROM col_words_wide) x;
DROP TABLE col_words_wide, col_words_wide_heap;

-- through compaction: stripes of a third of the rows each (each with a
-- segment of its new stacks), merged into one that refers to the same
-- entries; the segments are merged too, the same entries in one
TRUNCATE col_words;
INSERT INTO col_words SELECT * FROM col_words_heap WHERE i % 3 = 0;
INSERT INTO col_words SELECT * FROM col_words_heap WHERE i % 3 = 1;
INSERT INTO col_words SELECT * FROM col_words_heap WHERE i % 3 = 2;
SELECT count(*) AS stripes, string_agg(DISTINCT encoding, ',') AS encodings
FROM parca_columnar_chunks('col_words') WHERE attname = 'st' AND chunk_group = -1;
SELECT count(*) AS segments, sum(nulls) AS entries, string_agg(DISTINCT encoding, ',')
FROM parca_columnar_chunks('col_words') WHERE stripe IS NULL AND chunk_group = -1;
SELECT parca_columnar_compact('col_words') > 0 AS merged;
SELECT count(*) AS stripes, string_agg(DISTINCT encoding, ',') AS encodings
FROM parca_columnar_chunks('col_words') WHERE attname = 'st' AND chunk_group = -1;
SELECT count(*) AS segments, sum(nulls) AS entries
FROM parca_columnar_chunks('col_words') WHERE stripe IS NULL AND chunk_group = -1;
SELECT count(*) FROM (SELECT * FROM col_words EXCEPT ALL SELECT * FROM col_words_heap) x;
SELECT count(*) FROM (SELECT * FROM col_words_heap EXCEPT ALL SELECT * FROM col_words) x;
SELECT stripes, rows FROM parca_columnar_check('col_words');

-- the plain dictionary stays where words do not pay: values not of whole
-- 8-byte words (text of 9 bytes), stacks whose frames are all different
-- (each word in one stack only: the table would be as big as the values),
-- and text of 8 bytes (few rows: a table of 8-byte words and an index per
-- word is bigger than a varint length per value)
CREATE TABLE col_words_plain (t9 text, t8 text, st stacktrace) USING parca_columnar;
INSERT INTO col_words_plain
SELECT 'text-' || lpad((i % 500)::text, 4, '0'), 'te' || lpad((i % 500)::text, 6, '0'),
       col_words_stack(ARRAY[(i % 500) * 3, (i % 500) * 3 + 1, (i % 500) * 3 + 2])
FROM generate_series(1, 2000) i;
SELECT attname, encoding, nulls AS entries
FROM parca_columnar_chunks('col_words_plain') WHERE chunk_group = -1 ORDER BY attname;
SELECT count(DISTINCT t9), count(DISTINCT t8), count(DISTINCT st) FROM col_words_plain;

-- a damaged word dictionary is refused, not misread: a segment of the
-- table's stack dictionary kept inline and stored as encoded (level 0),
-- whose dictionary chunk (the first chunk of its data) starts with the counts of distinct words (14) and of
-- all words (108), one-byte varints, then the 14 words, a word count per
-- stack (36 stacks of 3), then the 108 one-byte indexes
CREATE TABLE col_words_bad (st stacktrace) USING parca_columnar;
SELECT parca_columnar_set_options('col_words_bad', compression_level => 0);
INSERT INTO col_words_bad SELECT st FROM col_types WHERE st IS NOT NULL;
SELECT inline, encoding, compressed, nulls AS entries, raw_bytes
FROM parca_columnar_chunks('col_words_bad') WHERE chunk_group = -1;
CREATE TEMP TABLE col_words_bad_stripe AS
    SELECT storage_id, first_entry, inline_data FROM parca.columnar_dictionary
    WHERE storage_id = (SELECT max(storage_id) FROM parca.columnar_dictionary);
SELECT get_byte(inline_data, 0) AS nwords, get_byte(inline_data, 1) AS total,
       get_byte(inline_data, 2 + 14 * 8) AS first_count
FROM col_words_bad_stripe;
CREATE FUNCTION col_words_damage(pos int, b int) RETURNS void LANGUAGE sql AS $$
UPDATE parca.columnar_dictionary s SET inline_data = set_byte(d.inline_data, pos, b)
    FROM col_words_bad_stripe d
    WHERE (s.storage_id, s.first_entry) = (d.storage_id, d.first_entry) $$;
-- a table past the bytes
SELECT col_words_damage(0, 127);
SELECT count(DISTINCT st) FROM col_words_bad;
-- a stack of more words than there are indexes
SELECT col_words_damage(2 + 14 * 8, 120);
SELECT count(DISTINCT st) FROM col_words_bad;
-- a stack of one word fewer: an index left over
SELECT col_words_damage(2 + 14 * 8, 2);
SELECT count(DISTINCT st) FROM col_words_bad;
-- more words in all than the bytes hold
SELECT col_words_damage(1, 127);
SELECT count(DISTINCT st) FROM col_words_bad;
-- an index past the table (the last byte of the chunk)
SELECT col_words_damage(2 + 14 * 8 + 36 + 108 - 1, 14);
SELECT count(DISTINCT st) FROM col_words_bad;
-- the check sees every one of them by its checksum; undamaged, it passes
SELECT stripes FROM parca_columnar_check('col_words_bad');
UPDATE parca.columnar_dictionary s SET inline_data = d.inline_data
    FROM col_words_bad_stripe d WHERE (s.storage_id, s.first_entry) = (d.storage_id, d.first_entry);
SELECT count(*), count(DISTINCT st) FROM col_words_bad;
SELECT stripes, inline_stripes, rows FROM parca_columnar_check('col_words_bad');
-- a stripe that refers to an entry its table's dictionary lacks is
-- refused: its entry numbers' chunk (the first of its data, delta_rle:
-- the first number in 8 bytes) made to start at 127 of 36
CREATE TEMP TABLE col_words_bad_entries AS
    SELECT storage_id, first_row, inline_data FROM parca.columnar_stripes
    WHERE storage_id = (SELECT max(storage_id) FROM parca.columnar_dictionary);
UPDATE parca.columnar_stripes s SET inline_data = set_byte(d.inline_data, 0, 127)
    FROM col_words_bad_entries d WHERE (s.storage_id, s.first_row) = (d.storage_id, d.first_row);
SELECT count(DISTINCT st) FROM col_words_bad;
UPDATE parca.columnar_stripes s SET inline_data = d.inline_data
    FROM col_words_bad_entries d WHERE (s.storage_id, s.first_row) = (d.storage_id, d.first_row);
SELECT count(*), count(DISTINCT st) FROM col_words_bad;
DROP TABLE col_words, col_words_heap, col_words_plain, col_words_bad;
DROP FUNCTION col_words_stack(int8[]), col_words_damage(int, int);

-- a dictionary index past the dictionary is refused, in each integer
-- encoding the writer picks for indexes (checked as they are decoded):
-- stripes kept inline and stored as encoded, whose index chunk follows the
-- dictionary chunk; 'for' starts with its minimum (8 bytes), 'rle' with
-- its first value (a zigzag varint), 'delta_rle' with its first value (8
-- bytes), then the first run's difference (a zigzag varint)
CREATE TEMP TABLE col_idx_stripe (tbl regclass, storage_id bigint, first_row bigint,
                                   inline_data bytea, at int, encoding text);
CREATE FUNCTION col_idx_made(tbl regclass) RETURNS void LANGUAGE sql AS $$
INSERT INTO col_idx_stripe
    SELECT tbl, storage_id, first_row, inline_data,
           (SELECT stored_bytes FROM parca_columnar_chunks(tbl) WHERE chunk_group = -1),
           (SELECT encoding FROM parca_columnar_chunks(tbl) WHERE chunk_group = 0)
    FROM parca.columnar_stripes
    WHERE storage_id = (SELECT max(storage_id) FROM parca.columnar_stripes) $$;
CREATE FUNCTION col_idx_damage(t regclass, pos int, b int) RETURNS void LANGUAGE sql AS $$
UPDATE parca.columnar_stripes s SET inline_data = set_byte(d.inline_data, d.at + pos, b)
    FROM col_idx_stripe d
    WHERE d.tbl = t AND (s.storage_id, s.first_row) = (d.storage_id, d.first_row) $$;
CREATE TABLE col_idx_for (t text) USING parca_columnar;
SELECT parca_columnar_set_options('col_idx_for', compression_level => 0);
INSERT INTO col_idx_for SELECT (ARRAY['a', 'b', 'c'])[1 + i % 3] FROM generate_series(0, 29) i;
SELECT col_idx_made('col_idx_for');
CREATE TABLE col_idx_rle (t text) USING parca_columnar;
SELECT parca_columnar_set_options('col_idx_rle', compression_level => 0);
INSERT INTO col_idx_rle SELECT (ARRAY['a', 'b', 'c'])[1 + i / 10] FROM generate_series(0, 29) i;
SELECT col_idx_made('col_idx_rle');
CREATE TABLE col_idx_delta (t text) USING parca_columnar;
SELECT parca_columnar_set_options('col_idx_delta', compression_level => 0);
INSERT INTO col_idx_delta SELECT 'v' || i % 10 FROM generate_series(0, 29) i;
SELECT col_idx_made('col_idx_delta');
SELECT tbl, encoding, at FROM col_idx_stripe ORDER BY tbl;
SELECT count(DISTINCT t) FROM col_idx_for;
-- 'for': a minimum of 100
SELECT col_idx_damage('col_idx_for', 0, 100);
SELECT count(DISTINCT t) FROM col_idx_for;
-- 'rle': a first value of 10
SELECT col_idx_damage('col_idx_rle', 0, 20);
SELECT count(DISTINCT t) FROM col_idx_rle;
-- 'delta_rle': a first difference of 10, from 0 to 10 of 10 entries
SELECT col_idx_damage('col_idx_delta', 8, 20);
SELECT count(DISTINCT t) FROM col_idx_delta;
-- (a run is checked at its two ends) the first run of 9 differences of 1
-- made 12 long: from 1 to 12; the second run's difference of -9 made -10:
-- from 9 to -1
SELECT col_idx_damage('col_idx_delta', 9, 12);
SELECT count(DISTINCT t) FROM col_idx_delta;
SELECT col_idx_damage('col_idx_delta', 10, 19);
SELECT count(DISTINCT t) FROM col_idx_delta;
-- undamaged, each reads
UPDATE parca.columnar_stripes s SET inline_data = d.inline_data
    FROM col_idx_stripe d WHERE (s.storage_id, s.first_row) = (d.storage_id, d.first_row);
SELECT (SELECT count(DISTINCT t) FROM col_idx_for) AS for_entries,
       (SELECT count(DISTINCT t) FROM col_idx_rle) AS rle_entries,
       (SELECT count(DISTINCT t) FROM col_idx_delta) AS delta_entries;
DROP TABLE col_idx_for, col_idx_rle, col_idx_delta;
DROP FUNCTION col_idx_made(regclass), col_idx_damage(regclass, int, int);
