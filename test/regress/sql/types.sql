-- The stacktrace, profile and location types, and the parca_merge aggregate.

-- stacktrace: text I/O, depth, ordering, operators
SELECT '{00000000000000ff, 1,2}'::stacktrace, parca_stack_depth('{1,2,3}'), '{}'::stacktrace;
SELECT parca_stack_location_ids('{ff,ffffffffffffffff}');
SELECT '{1,2}'::stacktrace = '{1,2}', '{1,2}'::stacktrace <> '{2,1}',
       '{1}'::stacktrace < '{1,2}', '{2}'::stacktrace > '{1,2}';
SELECT s::stacktrace FROM (VALUES ('{2}'), ('{1,2}'), ('{1}'), ('{}')) t(s) ORDER BY 1;
SELECT '{xyz}'::stacktrace;
SELECT '{1,2'::stacktrace;
SELECT '{11111111111111111}'::stacktrace;

-- btree and hash indexes, hash aggregation
CREATE TABLE st (stack stacktrace, value bigint);
INSERT INTO st SELECT ('{' || (i % 7) || ',' || (i % 3) || '}')::stacktrace, i FROM generate_series(1, 1000) i;
CREATE INDEX st_btree ON st (stack);
CREATE INDEX st_hash ON st USING hash (stack);
SET enable_seqscan = off;
SELECT count(*) FROM st WHERE stack = '{3,0}';
RESET enable_seqscan;
SET enable_sort = off;
SELECT stack, sum(value) FROM st GROUP BY stack ORDER BY sum(value) DESC LIMIT 3;
RESET enable_sort;

-- binary send/recv through COPY BINARY
CREATE TEMP TABLE st_copy (LIKE st);
COPY st TO '/tmp/parca_regress_st.bin' (FORMAT binary);
COPY st_copy FROM '/tmp/parca_regress_st.bin' (FORMAT binary);
SELECT count(*) FROM (SELECT * FROM st EXCEPT ALL SELECT * FROM st_copy) d;

-- parca_merge: sums per stack, ignores NULLs, NULL on no rows
SELECT parca_profile_stacks(p), parca_profile_total(p)
FROM (SELECT parca_merge(stack, value) p FROM st) m;
SELECT parca_merge(stack, value) IS NULL FROM st WHERE false;
SELECT parca_profile_total(parca_merge(s::stacktrace, v))
FROM (VALUES ('{1}', 5), ('{1}', NULL), (NULL, 7), ('{2}', 1)) t(s, v);

-- the same result with a parallel plan (partial aggregates serialized and combined)
ALTER TABLE st SET (parallel_workers = 2);
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET force_parallel_mode = on;
EXPLAIN (COSTS OFF) SELECT parca_merge(stack, value) FROM st;
SELECT parca_merge(stack, value)::text AS parallel_result FROM st \gset
RESET force_parallel_mode;
SET max_parallel_workers_per_gather = 0;
SELECT parca_merge(stack, value)::text = :'parallel_result' AS same_as_serial FROM st;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- overflow is an error, not a wrap
SELECT parca_merge(s::stacktrace, v)
FROM (VALUES ('{1}', 9223372036854775807), ('{1}', 1)) t(s, v);

-- the builder: stacks come out in order of their frames as unsigned
-- numbers, a stack before those it is a prefix of, whatever order they came
-- in; {1661} and {12d18} have the same 32-bit hash in the builder's table
-- (profile.c, stack_hash: if that hash changes, they are an ordinary pair)
-- and stay two stacks with their own sums
SELECT parca_profile_stacks(p), parca_profile_total(p), p
FROM (SELECT parca_merge(s::stacktrace, v) p
      FROM (VALUES ('{12d18}', 1), ('{ffffffffffffffff,1}', 2), ('{1661}', 4), ('{}', 8),
                   ('{1,2}', 16), ('{1}', 32), ('{1661}', 64), ('{1,2,3}', 128),
                   ('{12d18}', 256), ('{8000000000000000}', 512), ('{1,3}', 1024)) t(s, v)) m;

-- stacks alike for several frames, told apart deep, some ending where
-- others go on; out come {4,6,7,8,9,1} (1), {5,6,7} (2),
-- {5,6,7,8,2} (4), {5,6,7,8,9} (8), {5,6,7,8,9,0} (16), {5,6,7,8,9,1}
-- (32), {5,6,7,8,9,1,4} (64), {5,6,7,8,9,ffffffffffffffff} (128)
SELECT parca_profile_stacks(p), p
FROM (SELECT parca_merge(s::stacktrace, v) p
      FROM (VALUES ('{5,6,7,8,9,1,4}', 64), ('{5,6,7,8,9,ffffffffffffffff}', 128), ('{5,6,7}', 2),
                   ('{5,6,7,8,9,0}', 16), ('{4,6,7,8,9,1}', 1), ('{5,6,7,8,9}', 8),
                   ('{5,6,7,8,9,1}', 32), ('{5,6,7,8,2}', 4)) t(s, v)) m;

-- a running merge (a window) finishes the same builder after each row: the
-- order of stacks it keeps (profile_builder_sort) holds while only values
-- change (rows 3 and 5) and is made again when a stack is added
WITH t(n, s, v) AS (VALUES (1, '{3}', 1), (2, '{1}', 2), (3, '{3}', 4), (4, '{2,1}', 8),
                           (5, '{1}', 16), (6, '{2}', 32))
SELECT w.n, parca_profile_stacks(w.p),
       w.p::text = (SELECT parca_merge(t.s::stacktrace, t.v)::text FROM t WHERE t.n <= w.n) AS same_as_merge
FROM (SELECT n, parca_merge(s::stacktrace, v) OVER (ORDER BY n) p FROM t) w
ORDER BY w.n;

-- many stacks (a radix sort orders runs of 256 or more): 1,200 stacks of
-- three frames, their leaves among 3 values (300, 300 and 600 stacks),
-- the frames above random (md5), half of them at 2^63 or above; each
-- stack's value is its place in the order SQL gives them, comparing
-- frames as unsigned (bit(64)).  The profile lists the stacks in that
-- order if the value of its i-th stack (at byte 16 + 36 i: 4 bytes of
-- length, then the value) is i + 1.
CREATE TEMP TABLE many_stacks AS
SELECT n, format('{%s,%s,%s}', f0, f1, f2) AS s,
       row_number() OVER (ORDER BY ('x' || f0)::bit(64), ('x' || f1)::bit(64), ('x' || f2)::bit(64)) AS place
FROM (SELECT n, (ARRAY['5', 'ffffffffffffff00', '8000000000000000', '8000000000000000'])[1 + n % 4] AS f0,
             substr(md5(n::text), 1, 16) AS f1, substr(md5(n::text), 17, 16) AS f2
      FROM generate_series(1, 1200) n) f;
SELECT bool_and(get_byte(b, 16 + 36 * i + 4) + 256 * get_byte(b, 16 + 36 * i + 5) = i + 1) AS ordered,
       count(*) AS stacks
FROM (SELECT decode(substr(parca_merge(s::stacktrace, place)::text, 3), 'hex') AS b FROM many_stacks) m,
     generate_series(0, (length(b) - 16) / 36 - 1) i;
-- a window whose rows come 300 at a time (peers): each finish sorts 300
-- new stacks and places them among those it sorted before
SELECT w.g, parca_profile_stacks(w.p),
       w.p::text = (SELECT parca_merge(s::stacktrace, place)::text FROM many_stacks WHERE n / 300 <= w.g) AS same_as_merge
FROM (SELECT DISTINCT ON (n / 300) n / 300 AS g, parca_merge(s::stacktrace, place) OVER (ORDER BY n / 300) AS p
      FROM many_stacks ORDER BY n / 300) w
ORDER BY w.g;

-- profile text form round-trips; damaged values are refused
SELECT parca_merge(s::stacktrace, v)::text::profile::text = parca_merge(s::stacktrace, v)::text
FROM (VALUES ('{1,2}', 3), ('{3}', 4)) t(s, v);
SELECT parca_profile_total(parca_merge(s::stacktrace, v)::text::profile)
FROM (VALUES ('{1,2}', 3), ('{3}', 4)) t(s, v);
SELECT '\x0100'::profile;
SELECT '\x010000000000000000000000010000000500000003000000000000000100'::profile;

-- location: JSON text form, binary round trip
SELECT '{"address": "0x4a1b", "build_id": "ab12", "file": "/usr/bin/app",
         "lines": [{"function": "inlined", "filename": "a.c", "line": 3},
                   {"function": "outer", "system_name": "_Z5outerv", "filename": "a.c", "line": 9, "start_line": 1}]}'::location;
SELECT '{"address": 16}'::location;
SELECT '[1]'::location;
SELECT '{"lines": [1]}'::location;
SELECT '{"address": "zz"}'::location;
CREATE TEMP TABLE loc (l location);
INSERT INTO loc VALUES ('{"address": "0x10", "file": "/bin/x", "lines": [{"function": "f", "line": 1}]}');
COPY loc TO '/tmp/parca_regress_loc.bin' (FORMAT binary);
CREATE TEMP TABLE loc2 (l location);
COPY loc2 FROM '/tmp/parca_regress_loc.bin' (FORMAT binary);
SELECT l::text FROM loc2;

-- registering a location stores its mapping, functions and lines once
TRUNCATE parca.locations, parca.functions, parca.mappings;
SELECT parca_register_location('{"address": "0x10", "build_id": "b1", "file": "/bin/x",
    "lines": [{"function": "f", "filename": "x.c", "line": 3}]}') =
       parca_register_location('{"address": "0x10", "build_id": "b1", "file": "/bin/x",
    "lines": [{"function": "f", "filename": "x.c", "line": 3}]}') AS same_id;
SELECT (SELECT count(*) FROM parca.locations), (SELECT count(*) FROM parca.functions),
       (SELECT count(*) FROM parca.mappings);
SELECT parca_location(id) FROM parca.locations;
-- an unsymbolized location gains its lines when they arrive
SELECT parca_register_location('{"address": "0x20", "build_id": "b1", "file": "/bin/x"}') AS id \gset
SELECT parca_location(:id);
SELECT parca_register_location('{"address": "0x20", "build_id": "b1", "file": "/bin/x",
    "lines": [{"function": "g", "filename": "x.c", "line": 7}]}') = :id AS same_id;
SELECT parca_location(:id);
SELECT parca_register_location('{"address": "0x30", "build_id": "b1", "file": "/bin/x",
    "lines": [{"function": "h_inlined", "filename": "x.c", "line": 1}, {"function": "h", "filename": "x.c", "line": 2}]}') AS id2 \gset
SELECT depth, function, file, line, address, mapping, build_id, inlined
FROM parca_frames(('{' || to_hex(:id) || ',' || to_hex(:id2) || ',' || '1234}')::stacktrace);
