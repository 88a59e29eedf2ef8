-- parca_profiles/parca_profile (one profile on its own),
-- parca_function_range (a function over time) and the sandwich view on a
-- small hand-made data set.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS parca;
RESET client_min_messages;
SET timezone = UTC;

INSERT INTO parca.mappings VALUES (x'7500'::bigint, '', '/usr/bin/vapp'), (x'7501'::bigint, '', '/lib/libv.so');
INSERT INTO parca.functions VALUES
    (x'7601'::bigint, 'vmain', '', 'v.c', 1),
    (x'7602'::bigint, 'vwork', '', 'v.c', 10),
    (x'7603'::bigint, 'vcompute', '', 'v.c', 20),
    (x'7604'::bigint, 'vhelper', '', 'v.h', 5);
INSERT INTO parca.locations VALUES
    (x'7701'::bigint, x'7500'::bigint, 4096, ARRAY[x'7601'::bigint], '{3}', false),
    -- vhelper inlined into vwork: innermost first
    (x'7702'::bigint, x'7500'::bigint, 8192, ARRAY[x'7604'::bigint, x'7602'::bigint], '{6,12}', false),
    (x'7703'::bigint, x'7500'::bigint, 12288, ARRAY[x'7603'::bigint], '{22}', false),
    (x'7704'::bigint, x'7501'::bigint, 4660, '{}', '{}', false);
INSERT INTO parca.series (profile_type, labels) VALUES
    ('qviews:samples:count:cpu:nanoseconds:delta', '{"job": "api", "qtest": "views"}'),
    ('qviews:samples:count:cpu:nanoseconds:delta', '{"job": "db", "qtest": "views"}');

-- Stacks, leaf first:
--   A vmain > vwork > vhelper > vcompute      B vmain > vwork > vhelper
--   C vmain > libv 0x1234                     D vmain
--   E vmain > vwork > vhelper > vcompute > vwork > vhelper > vcompute (recursion)
CREATE TEMP TABLE stacks (name text, stack stacktrace, v bigint);
INSERT INTO stacks VALUES
    ('A', '{0000000000007703,0000000000007702,0000000000007701}', 5),
    ('B', '{0000000000007702,0000000000007701}', 3),
    ('C', '{0000000000007704,0000000000007701}', 2),
    ('D', '{0000000000007701}', 1),
    ('E', '{0000000000007703,0000000000007702,0000000000007703,0000000000007702,0000000000007701}', 4);
-- Profiles of job "api": two within the same second (.100 and .600), and
-- one 20 s later; job "db" has one at .100 too.  Values grow with k.
CREATE TEMP TABLE profile_times (k int, t timestamptz);
INSERT INTO profile_times VALUES
    (1, '2024-02-01 00:00:00.100+00'), (2, '2024-02-01 00:00:00.600+00'), (3, '2024-02-01 00:00:20.000001+00');
INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
SELECT pt.t, s.id, st.stack, st.v * pt.k * (CASE s.labels->>'job' WHEN 'db' THEN 100 ELSE 1 END),
       10000000, 500000000
FROM parca.series s, stacks st, profile_times pt
WHERE s.labels->>'qtest' = 'views' AND (s.labels->>'job' = 'api' OR pt.k = 1);

\set sel '''qviews:samples:count:cpu:nanoseconds:delta{qtest="views"}'''
\set api '''qviews:samples:count:cpu:nanoseconds:delta{job="api"}'''

-- ---- individual profiles
-- one row per (series, time); the total in the period unit (15 * k * 10 ms)
SELECT time, series, total, samples, duration_ns, profile_id ~ '^[0-9]+@1706745600100000$' AS id_at_100ms
FROM parca_profiles(:sel, '2024-02-01', '2024-02-02') ORDER BY time, series;
-- each opens exactly: the same total, and only its own samples
SELECT p.series, p.time, parca_profile_total(parca_profile(p.profile_id)) = p.total AS same_total,
       parca_profile_stacks(parca_profile(p.profile_id)) AS stacks,
       parca_profile_type(parca_profile(p.profile_id)) AS type
FROM parca_profiles(:sel, '-infinity', 'infinity') p ORDER BY p.time, p.series;
-- the two profiles of the same second are different profiles
SELECT count(DISTINCT parca_profile_total(parca_profile(profile_id))) AS distinct_totals
FROM parca_profiles(:api, '2024-02-01 00:00:00', '2024-02-01 00:00:00.999999');
-- together the profiles are the merge of the range
SELECT sum(parca_profile_total(parca_profile(profile_id))) = parca_profile_total(parca_query(:sel, '-infinity', 'infinity'))
FROM parca_profiles(:sel, '-infinity', 'infinity');
-- the range is inclusive at both ends, as in parca_query
SELECT count(*) FROM parca_profiles(:api, '2024-02-01 00:00:00.1', '2024-02-01 00:00:00.6');
-- a time where the series has no profile: empty; an unknown series: NULL
SELECT parca_profile_stacks(parca_profile((SELECT min(id) FROM parca.series WHERE labels->>'qtest' = 'views') || '@1706745600100001'));
SELECT parca_profile('999999999@1706745600100000') IS NULL AS unknown_series;
-- ids that are not ids
SELECT parca_profile('12');
SELECT parca_profile('@12');
SELECT parca_profile('12@');
SELECT parca_profile('x@12');
SELECT parca_profile('12@1.5');
SELECT parca_profile('-3@12');
SELECT parca_profile('12@99999999999999999999');
SELECT parca_profile('12@9223372036854775807');
-- a long id is not read, and quoted 64 characters long
SELECT parca_profile(repeat('1', 10000000) || '@1');

-- ---- a function over time
-- vwork per 10 s: flat 0 (vhelper is inlined into it, innermost), cum in A, B, E
SELECT * FROM parca_function_range(:api, '2024-02-01', '2024-02-01 00:01', '10 s', 'vwork');
-- all functions: flat sums to the bucket total, which is parca_query_range's value
SELECT f.time, sum(f.flat) = min(f.total) AS flat_sums_to_total, min(f.total) = r.value AS total_is_range_value
FROM parca_function_range(:sel, '2024-02-01', '2024-02-01 00:01', '10 s', '', 'not_equal') f
JOIN parca_query_range(:sel, '2024-02-01', '2024-02-01 00:01', '10 s', '{}') r ON r.time = f.time
GROUP BY f.time, r.value ORDER BY 1;
-- every match kind
SELECT m, string_agg(DISTINCT function, ', ' ORDER BY function)
FROM unnest('{equal,not_equal,contains,not_contains,starts_with,not_starts_with}'::text[]) m,
     parca_function_range(:api, '-infinity', 'infinity', '1 day', 'vc', m)
GROUP BY m ORDER BY m;
-- bucket boundaries: [00:00:00.6, 00:00:20.000001) holds only the profile
-- at .6 (9 * 2 * 10 ms of vcompute), the next bucket starts at the third
SELECT time, flat, cum FROM parca_function_range(:api, '2024-02-01 00:00:00.6', 'infinity', '19.400001 s', 'vcompute');
SELECT * FROM parca_function_range(:api, '2024-02-01', '2024-02-02', '10 s', 'vwork', 'like');
SELECT * FROM parca_function_range(:api, '2024-02-01', '2024-02-02', '0 s', 'vwork');
SELECT count(*) FROM parca_function_range(:api, '2024-02-01', '2024-02-02', '10 s', 'nothing');

-- ---- sandwich
CREATE TEMP TABLE q AS SELECT parca_query(:api, '-infinity', 'infinity') AS p;
SELECT function, flat, cum FROM parca_top((SELECT p FROM q)) ORDER BY function;
-- vcompute is recursive in E: each stack counted once, both roots weigh its cum
SELECT * FROM parca_sandwich_callers((SELECT p FROM q), 'vcompute');
SELECT * FROM parca_sandwich_callees((SELECT p FROM q), 'vcompute');
SELECT * FROM parca_sandwich_callers((SELECT p FROM q), 'vwork');
SELECT * FROM parca_sandwich_callees((SELECT p FROM q), 'vwork');
-- unsymbolized frames by their label
SELECT * FROM parca_sandwich_callers((SELECT p FROM q), '[libv.so] 0x1234');
-- trimmed like the icicle: at most max_nodes rows, the root exact
SELECT * FROM parca_sandwich_callees((SELECT p FROM q), 'vmain', 3);
-- not in the profile, NULLs, bad arguments
SELECT count(*) FROM parca_sandwich_callers((SELECT p FROM q), 'nothing');
SELECT count(*) FROM parca_sandwich_callees(NULL, 'vwork');
SELECT count(*) FROM parca_sandwich_callees((SELECT p FROM q), NULL);
SELECT * FROM parca_sandwich_callees((SELECT p FROM q), 'vwork', -1);
SELECT * FROM parca_sandwich_callees(parca_diff((SELECT p FROM q), (SELECT p FROM q)), 'vwork');

-- ---- stack filters
-- per stack (×6 ×10 ms): A 300M, B 180M, C 120M, D 60M, E 240M
CREATE FUNCTION kept(f jsonb) RETURNS TABLE(total bigint, kept bigint, filtered_out bigint, stacks bigint)
LANGUAGE sql AS $$
    SELECT t.*, parca_profile_stacks(parca_filter((SELECT p FROM q), f))
    FROM parca_filter_totals((SELECT p FROM q), f) t
$$;
SELECT f, k.* FROM (VALUES
    ('[]'),
    ('[{"field": "function", "match": "equal", "value": "vcompute"}]'),       -- A, E
    ('[{"field": "function", "match": "not_equal", "value": "vcompute"}]'),   -- B, C, D
    ('[{"field": "function", "match": "contains", "value": "help"}]'),        -- inlined vhelper: A, B, E
    ('[{"field": "function", "match": "not_contains", "value": "help"}]'),    -- C, D
    ('[{"field": "function", "match": "starts_with", "value": "vc"}]'),       -- A, E
    ('[{"field": "function", "match": "not_starts_with", "value": "vc"}]'),   -- B, C, D
    ('[{"field": "function", "match": "contains", "value": "HELP"}]'),        -- case counts: none
    ('[{"field": "file", "match": "equal", "value": "v.h"}]'),                -- A, B, E
    ('[{"field": "file", "match": "not_equal", "value": "v.h"}]'),            -- C, D
    ('[{"field": "binary", "match": "equal", "value": "libv.so"}]'),          -- C
    ('[{"field": "binary", "match": "equal", "value": "/lib/libv.so"}]'),     -- the name, not the path: none
    ('[{"field": "binary", "match": "not_equal", "value": "libv.so"}]'),      -- A, B, D, E
    ('[{"field": "binary", "match": "starts_with", "value": "vapp"}]'),       -- every stack has vmain
    ('[{"field": "address", "match": "equal", "value": "0x1234"}]'),          -- C
    ('[{"field": "address", "match": "equal", "value": "4660"}]'),            -- C
    ('[{"field": "address", "match": "not_equal", "value": "0x1234"}]'),      -- A, B, D, E
    -- several at once: B
    ('[{"field": "function", "match": "contains", "value": "vwork"},
       {"field": "function", "match": "not_equal", "value": "vcompute"},
       {"field": "binary", "match": "not_equal", "value": "libv.so"}]')
) v(f), kept(v.f::jsonb) k;
-- a diff keeps both sides
SELECT parca_profile_total(parca_filter(parca_diff((SELECT p FROM q), (SELECT p FROM q), true),
                                        '[{"field": "function", "match": "equal", "value": "vmain"}]'));
-- filters that are not filters
SELECT parca_filter((SELECT p FROM q), '{}');
SELECT parca_filter((SELECT p FROM q), '"x"');
SELECT parca_filter((SELECT p FROM q), '[1]');
SELECT parca_filter((SELECT p FROM q), '[{"field": "function", "match": "equal"}]');
SELECT parca_filter((SELECT p FROM q), '[{"field": "function", "match": "equal", "value": "x", "more": 1}]');
SELECT parca_filter((SELECT p FROM q), '[{"field": "function", "match": "equal", "value": 1}]');
SELECT parca_filter((SELECT p FROM q), '[{"field": "name", "match": "equal", "value": "x"}]');
SELECT parca_filter((SELECT p FROM q), '[{"field": "function", "match": "like", "value": "x"}]');
SELECT parca_filter((SELECT p FROM q), '[{"field": "function", "match": "not_", "value": "x"}]');
SELECT parca_filter((SELECT p FROM q), '[{"field": "address", "match": "contains", "value": "12"}]');
SELECT parca_filter((SELECT p FROM q), '[{"field": "address", "match": "equal", "value": "0xZZ"}]');
SELECT parca_filter((SELECT p FROM q), '[{"field": "address", "match": "equal", "value": "-1"}]');
SELECT parca_filter((SELECT p FROM q), '[{"field": "address", "match": "equal", "value": "99999999999999999999"}]');
SELECT parca_filter(NULL, '[]') IS NULL, parca_filter((SELECT p FROM q), NULL) IS NULL;

-- ---- node_trim_threshold: nodes under that percentage of the total are
-- trimmed (every function keeps its self, as with max_nodes)
SELECT * FROM parca_icicle((SELECT p FROM q), 0, 30);
SELECT * FROM parca_icicle((SELECT p FROM q), 0, 100);
-- with max_nodes too, the stricter wins
SELECT count(*) FROM parca_icicle((SELECT p FROM q), 3, 1);
-- 0 trims nothing
SELECT count(*) = (SELECT count(*) FROM parca_icicle((SELECT p FROM q))) FROM parca_icicle((SELECT p FROM q), 0, 0);
SELECT * FROM parca_sandwich_callees((SELECT p FROM q), 'vwork', 0, 50);
SELECT * FROM parca_icicle_diff(parca_diff((SELECT p FROM q), (SELECT p FROM q)), 0, 50);
SELECT count(*) FROM parca_icicle((SELECT p FROM q), 0, -1);
SELECT count(*) FROM parca_icicle((SELECT p FROM q), 0, 100.5);
SELECT count(*) FROM parca_icicle((SELECT p FROM q), 0, 'NaN');
SELECT count(*) FROM parca_sandwich_callers((SELECT p FROM q), 'vwork', 0, -1);

-- ---- call graph (function granularity, as parca_top; unsymbolized per binary)
-- everything: vwork -> vhelper is an inlined call, vcompute -> vwork the recursion of E
SELECT * FROM parca_callgraph_nodes((SELECT p FROM q), 0, 0);
SELECT * FROM parca_callgraph_edges((SELECT p FROM q), 0, 0);
-- nodes under 50 % of the total dropped: [libv.so]
SELECT id, mainstat, secondarystat FROM parca_callgraph_nodes((SELECT p FROM q), 0.5, 0);
-- under 70 %: vcompute too; E's vhelper -> vwork goes through it (residual,
-- dotted), and A's leaf was vcompute: A gives no flat
SELECT source, target, mainstat, residual FROM parca_callgraph_edges((SELECT p FROM q), 0.7, 0);
-- edges under 30 % of the total dropped
SELECT source, target, mainstat FROM parca_callgraph_edges((SELECT p FROM q), 0, 0.3);
SELECT parca_callgraph_dot((SELECT p FROM q), 0.7, 0);
SELECT count(*) FROM parca_callgraph_nodes(NULL);
SELECT parca_callgraph_dot(NULL) IS NULL;
SELECT count(*) FROM parca_callgraph_nodes((SELECT p FROM q), 1.5);
SELECT count(*) FROM parca_callgraph_edges((SELECT p FROM q), 0, -0.1);
SELECT count(*) FROM parca_callgraph_edges(parca_diff((SELECT p FROM q), (SELECT p FROM q)));

-- ---- JIT: the functions the dashboard calls that read parca.samples (or
-- its rollups) run with jit = off, whatever the server's setting: their
-- work is C's, and their estimates passed the default JIT thresholds for
-- a few profiles (sql/70_query.sql; test/query counts what they compile)
SELECT p.oid::regprocedure AS function, coalesce('jit=off' = ANY (p.proconfig), false) AS jit_off
FROM pg_proc p
WHERE p.oid IN ('parca_query(text, timestamptz, timestamptz, text[], text, text, text, text)'::regprocedure,
                'parca_profile(text)'::regprocedure,
                'parca_profiles(text, timestamptz, timestamptz)'::regprocedure,
                'parca_query_range(text, timestamptz, timestamptz, interval, text[])'::regprocedure,
                'parca_function_range(text, timestamptz, timestamptz, interval, text, text)'::regprocedure,
                'parca_query_unit(text, timestamptz, timestamptz)'::regprocedure,
                'parca_profile_types(timestamptz, timestamptz)'::regprocedure,
                'parca_labels(text, timestamptz, timestamptz)'::regprocedure,
                'parca_label_values(text, text, timestamptz, timestamptz)'::regprocedure)
ORDER BY 1::text;
