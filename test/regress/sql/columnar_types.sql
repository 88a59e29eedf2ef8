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
