-- parca_query (scaling, grouping, filters), parca_icicle, parca_top,
-- parca_diff, parca_flamegraph_svg and parca_query_range on a small
-- hand-made data set.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS parca;
RESET client_min_messages;

INSERT INTO parca.mappings VALUES (x'7100'::bigint, '', '/usr/bin/app'), (x'7101'::bigint, '', '/lib/libc.so.6');
INSERT INTO parca.functions VALUES
    (x'7201'::bigint, 'main', '', 'app.c', 1),
    (x'7202'::bigint, 'work', '', 'app.c', 10),
    (x'7203'::bigint, 'compute', '', 'app.c', 20),
    (x'7204'::bigint, 'helper', '', 'util.h', 5);
INSERT INTO parca.locations VALUES
    (x'7301'::bigint, x'7100'::bigint, 4096, ARRAY[x'7201'::bigint], '{3}', false),
    -- helper inlined into work: innermost first
    (x'7302'::bigint, x'7100'::bigint, 8192, ARRAY[x'7204'::bigint, x'7202'::bigint], '{6,12}', false),
    (x'7303'::bigint, x'7100'::bigint, 12288, ARRAY[x'7203'::bigint], '{22}', false),
    -- unsymbolized
    (x'7304'::bigint, x'7101'::bigint, 4660, '{}', '{}', false);
INSERT INTO parca.series (profile_type, labels) VALUES
    ('qtree:samples:count:cpu:nanoseconds:delta', '{"job": "api", "pid": "1", "qtest": "tree"}'),
    ('qtree:samples:count:cpu:nanoseconds:delta', '{"job": "api", "pid": "2", "qtest": "tree"}'),
    ('qtree:samples:count:cpu:nanoseconds:delta', '{"job": "db", "qtest": "tree"}');

-- Stacks, leaf first:
--   A main > work > helper > compute        B main > work > helper
--   C main > libc 0x1234                    D main
--   E main > work > helper > compute > compute (recursion)
CREATE TEMP TABLE stacks (name text, stack stacktrace);
INSERT INTO stacks VALUES
    ('A', '{0000000000007303,0000000000007302,0000000000007301}'),
    ('B', '{0000000000007302,0000000000007301}'),
    ('C', '{0000000000007304,0000000000007301}'),
    ('D', '{0000000000007301}'),
    ('E', '{0000000000007303,0000000000007303,0000000000007302,0000000000007301}');
INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
SELECT '2024-01-01 00:00:00+00'::timestamptz + t * interval '10 s', s.id, st.stack,
       (CASE st.name WHEN 'A' THEN 5 WHEN 'B' THEN 3 WHEN 'C' THEN 2 WHEN 'D' THEN 1 ELSE 4 END)
         * (1 + t) * (CASE s.labels->>'job' WHEN 'db' THEN 10 ELSE 1 END),
       10000000, 10000000000
FROM parca.series s, stacks st, generate_series(0, 2) t
WHERE s.labels->>'qtest' = 'tree';

CREATE TEMP TABLE q AS
SELECT parca_query('qtree:samples:count:cpu:nanoseconds:delta{job="api"}',
                   '2024-01-01 00:00:00+00', '2024-01-01 00:00:10+00') AS p;
-- samples:count is reported in the period unit: (15 + 30) * 2 series * 10 ms
SELECT parca_profile_type(p), parca_profile_period(p), parca_profile_stacks(p), parca_profile_total(p) FROM q;

-- the icicle: root first, inlined frames expanded, children by name
SELECT * FROM parca_icicle((SELECT p FROM q));

-- structure: one root, levels step by one, value = self + children (on
-- both sides of a diff), the total unchanged
CREATE FUNCTION icicle_check(p profile, max_nodes int DEFAULT 0) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    result text;
BEGIN
    CREATE TEMP TABLE rows (level int, value bigint, self bigint, vr bigint, sr bigint, label text, i bigint);
    -- a diff has the right columns; a plain profile is refused there
    BEGIN
        INSERT INTO rows SELECT * FROM parca_icicle_diff(p, max_nodes) WITH ORDINALITY;
    EXCEPTION WHEN invalid_parameter_value THEN
        INSERT INTO rows SELECT r.level, r.value, r.self, 0, 0, r.label, r.i
        FROM parca_icicle(p, max_nodes) WITH ORDINALITY AS r(level, value, self, label, i);
    END;
    WITH parents AS (
        SELECT c.i, c.level, c.value, c.self, c.vr, c.sr,
               (SELECT max(a.i) FROM rows a WHERE a.i < c.i AND a.level = c.level - 1) AS parent,
               lag(c.level) OVER (ORDER BY c.i) AS prev_level
        FROM rows c
    )
    SELECT concat_ws(', ',
        CASE WHEN (SELECT count(*) FROM rows WHERE level = 0) <> 1 THEN 'roots <> 1' END,
        CASE WHEN (SELECT label FROM rows WHERE i = 1) <> 'total' THEN 'first row not total' END,
        CASE WHEN EXISTS (SELECT 1 FROM parents WHERE i > 1 AND (level < 1 OR level > prev_level + 1)) THEN 'level jump' END,
        CASE WHEN EXISTS (SELECT 1 FROM parents x WHERE x.value <> x.self +
                 coalesce((SELECT sum(y.value) FROM parents y WHERE y.parent = x.i), 0)
                 OR x.vr <> x.sr + coalesce((SELECT sum(y.vr) FROM parents y WHERE y.parent = x.i), 0))
             THEN 'value <> self + children' END,
        CASE WHEN (SELECT sum(self) FROM rows) <> (SELECT value FROM rows WHERE i = 1)
               OR (SELECT sum(sr) FROM rows) <> (SELECT vr FROM rows WHERE i = 1) THEN 'self does not add up' END,
        CASE WHEN (SELECT value FROM rows WHERE i = 1) <> coalesce(parca_profile_total(p), 0)
             THEN 'total changed' END,
        'checked ' || (SELECT count(*) FROM rows) || ' rows')
    INTO result FROM (SELECT 1) AS one;
    DROP TABLE rows;
    RETURN result;
END
$$;
SELECT icicle_check(p) FROM q;
-- trimming folds the lightest subtrees into [trimmed] frames, under which
-- the functions shown keep their self: totals stay, and every function
-- named has the flat value parca_top gives it (what Grafana's top table sums)
SELECT icicle_check(p, 4) FROM q;
SELECT * FROM parca_icicle((SELECT p FROM q), 4);
SELECT n, icicle_check(p, n) FROM q, generate_series(1, 8) n;
SELECT n, count(*) AS functions_shown,
       count(*) FILTER (WHERE i.self IS DISTINCT FROM t.flat) AS self_differs
FROM q, generate_series(2, 8) n,
     LATERAL (SELECT label, sum(self) AS self FROM parca_icicle(p, n)
              WHERE label NOT IN ('total', '[trimmed]') GROUP BY label) i
     LEFT JOIN LATERAL (SELECT flat FROM parca_top(p) WHERE function = i.label) t ON true
WHERE i.label NOT LIKE '[libc.so.6] 0x%'
GROUP BY n ORDER BY n;
SELECT * FROM parca_icicle((SELECT p FROM q), -1);
-- a diff goes to parca_icicle_diff, a plain profile to parca_icicle
SELECT * FROM parca_icicle(parca_diff((SELECT p FROM q), (SELECT p FROM q)));
SELECT * FROM parca_icicle_diff((SELECT p FROM q));
-- nothing to draw: no rows
SELECT count(*) FROM parca_icicle(parca_query('qtree:samples:count:cpu:nanoseconds:delta', '2023-01-01', '2023-01-02'));
SELECT count(*) FROM parca_icicle(NULL), parca_icicle_diff(NULL);
-- sums that leave 64 bits are errors, not wraps (parca_profile_total says so too)
CREATE TEMP TABLE huge AS
SELECT parca_merge(s::stacktrace, v) AS p
FROM (VALUES ('{0000000000007301}', 9223372036854775807), ('{0000000000007303,0000000000007301}', 9223372036854775807)) t(s, v);
SELECT parca_profile_total(p) FROM huge;
SELECT * FROM huge, parca_icicle(p);
SELECT * FROM huge, parca_top(p);
SELECT length(parca_flamegraph_svg(p)) > 0 AS svg_drawn FROM huge;

-- top: flat/cum per function, recursion counted once in cum
SELECT * FROM parca_top((SELECT p FROM q));

-- the time range is inclusive; outside it, nothing
SELECT parca_profile_total(parca_query('qtree:samples:count:cpu:nanoseconds:delta', '2024-01-01 00:00:20+00', '2024-01-01 00:00:20+00'));
SELECT parca_profile_stacks(parca_query('qtree:samples:count:cpu:nanoseconds:delta', '2023-01-01', '2023-01-02'));

-- grouping: one root frame per label value
SELECT level, value, label FROM parca_icicle(parca_query('qtree:samples:count:cpu:nanoseconds:delta',
    '2024-01-01 00:00+00', '2024-01-02 00:00+00', group_by => '{job}')) WHERE level <= 1;
SELECT level, value, label FROM parca_icicle(parca_query('qtree:samples:count:cpu:nanoseconds:delta',
    '2024-01-01 00:00+00', '2024-01-02 00:00+00', group_by => '{job,pid}')) WHERE level <= 1;
-- group_by holds label names, at most 64 (counted before they are read); NULLs are left out
SELECT level, value, label FROM parca_icicle(parca_query('qtree:samples:count:cpu:nanoseconds:delta',
    '2024-01-01 00:00+00', '2024-01-02 00:00+00', group_by => '{job,NULL}')) WHERE level <= 1;
SELECT parca_query('qtree:samples:count:cpu:nanoseconds:delta', '2024-01-01', '2024-01-02',
                   group_by => array_fill('job'::text, ARRAY[65]));
SELECT parca_query('qtree:samples:count:cpu:nanoseconds:delta', '2024-01-01', '2024-01-02',
                   group_by => array_fill('job'::text, ARRAY[1000000]));
SELECT parca_query('qtree:samples:count:cpu:nanoseconds:delta', '2024-01-01', '2024-01-02',
                   group_by => ARRAY['job"} x']);
-- a group's frame quotes the values as a selector does: values with quotes
-- and commas make two frames, not one
INSERT INTO parca.series (profile_type, labels) VALUES
    ('qtree:quoted:count:cpu:nanoseconds', '{"qtest": "tree", "a": "x\", b=\"y", "b": "z"}'),
    ('qtree:quoted:count:cpu:nanoseconds', '{"qtest": "tree", "a": "x", "b": "y\", b=\"z"}');
INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
SELECT '2024-01-01 00:00:00+00', id, '{0000000000007301}', 1, 0, 0
FROM parca.series WHERE profile_type = 'qtree:quoted:count:cpu:nanoseconds';
SELECT level, value, label FROM parca_icicle(parca_query('qtree:quoted:count:cpu:nanoseconds',
    '2024-01-01 00:00+00', '2024-01-02 00:00+00', group_by => '{a,b}')) WHERE level = 1 ORDER BY label;

-- stack filters: function name substring (case-insensitive) or binary
SELECT parca_profile_total(parca_query('qtree:samples:count:cpu:nanoseconds:delta{job="db"}',
    '2024-01-01 00:00+00', '2024-01-02 00:00+00', keep_function => 'COMPUTE'));
SELECT parca_profile_total(parca_query('qtree:samples:count:cpu:nanoseconds:delta{job="db"}',
    '2024-01-01 00:00+00', '2024-01-02 00:00+00', drop_function => 'elp'));
SELECT parca_profile_total(parca_query('qtree:samples:count:cpu:nanoseconds:delta{job="db"}',
    '2024-01-01 00:00+00', '2024-01-02 00:00+00', keep_binary => 'libc'));
SELECT parca_profile_total(parca_query('qtree:samples:count:cpu:nanoseconds:delta{job="db"}',
    '2024-01-01 00:00+00', '2024-01-02 00:00+00', keep_function => 'main', drop_binary => 'LIBC.so'));

-- diff: against itself zero everywhere; relative scales the base
SELECT count(*) AS nonzero FROM parca_top(parca_diff((SELECT p FROM q), (SELECT p FROM q))) WHERE flat <> 0 OR cum <> 0;
-- in a diff value/self are the base side only, as Grafana's panel reads them
SELECT count(*) AS unbalanced FROM parca_icicle_diff(parca_diff((SELECT p FROM q), (SELECT p FROM q)))
WHERE value <> "valueRight" OR self <> "selfRight";
CREATE TEMP TABLE d AS
SELECT parca_query('qtree:samples:count:cpu:nanoseconds:delta{job="api"}', '2024-01-01 00:00:00+00', '2024-01-01 00:00:00+00') AS early,
       parca_query('qtree:samples:count:cpu:nanoseconds:delta{job="api"}', '2024-01-01 00:00:20+00', '2024-01-01 00:00:20+00') AS late;
SELECT level, value AS base, "valueRight" AS compared, label
FROM d, parca_icicle_diff(parca_diff(early, late)) WHERE level <= 2;
SELECT level, value AS base, "valueRight" AS compared, label
FROM d, parca_icicle_diff(parca_diff(early, late, absolute => true)) WHERE level <= 2;
SELECT function, flat, cum FROM d, parca_top(parca_diff(early, late, absolute => true));
SELECT parca_diff(parca_diff(early, late), late) FROM d;
INSERT INTO parca.series (profile_type, labels) VALUES ('qtree:alloc_space:bytes:space:bytes', '{"qtest": "tree"}');
INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
SELECT '2024-01-01 00:00:00+00', id, '{0000000000007301}', 4096, 524288, 0
FROM parca.series WHERE profile_type = 'qtree:alloc_space:bytes:space:bytes';
SELECT parca_diff(early, parca_query('qtree:alloc_space:bytes:space:bytes', '2024-01-01 00:00+00', '2024-01-01 00:00+00')) FROM d;
-- an empty side (a range without samples) compares with anything
SELECT parca_profile_stacks(parca_diff(early, parca_query('qtree:alloc_space:bytes:space:bytes', now(), now()))) FROM d;
SELECT icicle_check(parca_diff(early, late)) FROM d;
SELECT n, icicle_check(parca_diff(early, late), n) FROM d, generate_series(1, 8) n;

-- SVG: well-formed enough for an XML parser, one group per frame
SELECT xml_is_well_formed_document(parca_flamegraph_svg(p, 'a <test>')) AS well_formed,
       (length(s) - length(replace(s, '<g class="f"', ''))) / length('<g class="f"') AS frames,
       s LIKE '%a &lt;test&gt;%' AS title_escaped
FROM q, parca_flamegraph_svg(p, 'a <test>') s;
SELECT parca_flamegraph_svg(parca_diff(early, late)) LIKE '%compared%' AS diff_tooltips FROM d;

-- time series: per step and series, value and per-second rate
SELECT * FROM parca_query_range('qtree:samples:count:cpu:nanoseconds:delta', '2024-01-01 00:00:00+00',
                                '2024-01-01 00:00:30+00', '20 seconds');
SELECT * FROM parca_query_range('qtree:samples:count:cpu:nanoseconds:delta', '2024-01-01 00:00:00+00',
                                '2024-01-01 00:00:30+00', '1 minute', '{job}');
-- step and sum_by are checked first, and named
SELECT * FROM parca_query_range('qtree:samples:count:cpu:nanoseconds:delta', '2024-01-01', '2024-01-02', '0');
SELECT * FROM parca_query_range('qtree:samples:count:cpu:nanoseconds:delta', '2024-01-01', '2024-01-02', '-1 s');
SELECT * FROM parca_query_range('qtree:samples:count:cpu:nanoseconds:delta', '2024-01-01', '2024-01-02', '1 day -25 hours');
SELECT * FROM parca_query_range('qtree:samples:count:cpu:nanoseconds:delta', '2024-01-01', '2024-01-02', '1 month');
SELECT * FROM parca_query_range('qtree:samples:count:cpu:nanoseconds:delta', '2024-01-01', '2024-01-02', '1 hour',
                                array_fill('job'::text, ARRAY[65]));
SELECT * FROM parca_query_range('qtree:samples:count:cpu:nanoseconds:delta', '2024-01-01', '2024-01-02', '1 hour',
                                ARRAY['job"} x']);
-- an unbounded range: buckets aligned to 2000-01-01
SELECT "time", value FROM parca_query_range('qtree:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity',
                                            '1 day', '{}');

-- a type without :delta (heap in use): totals, no rate, no division by zero
SELECT * FROM parca_query_range('qtree:alloc_space:bytes:space:bytes', '2024-01-01 00:00:00+00',
                                '2024-01-01 00:01:00+00', '1 minute');

-- a period of 0 means unknown (Parca's own agent writes such profiles):
-- samples:count values stay counts, and the profile type says so
INSERT INTO parca.series (profile_type, labels) VALUES
    ('qtree:samples:count:cpu:nanoseconds', '{"qtest": "tree", "agent": "parca"}');
INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
SELECT '2024-01-01 00:00:00+00', s.id, st.stack, 2, 0, 0
FROM parca.series s, stacks st WHERE s.labels->>'agent' = 'parca' AND st.name IN ('A', 'B');
CREATE TEMP TABLE unknown_period AS
SELECT parca_query('qtree:samples:count:cpu:nanoseconds', '2024-01-01 00:00+00', '2024-01-01 00:01+00') AS p;
SELECT parca_profile_type(p), parca_profile_period(p), parca_profile_total(p) FROM unknown_period;
SELECT function, flat, cum FROM unknown_period, parca_top(p);
SELECT level, value, self, label FROM unknown_period, parca_icicle(p);
SELECT "time", value, per_second, profiles FROM parca_query_range('qtree:samples:count:cpu:nanoseconds',
    '2024-01-01 00:00:00+00', '2024-01-01 00:01:00+00', '1 minute');
SELECT parca_query_unit('qtree:samples:count:cpu:nanoseconds', '2024-01-01 00:00+00', '2024-01-01 00:01+00');
-- grouping takes the SQL merge: the same counts
SELECT parca_profile_total(parca_query('qtree:samples:count:cpu:nanoseconds', '2024-01-01 00:00+00',
                                       '2024-01-01 00:01+00', group_by => '{agent}'));
-- a range that mixes both scales what has a period and says so
INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
SELECT '2024-01-01 00:00:30+00', s.id, '{0000000000007301}', 1, 10000000, 10000000000
FROM parca.series s WHERE s.labels->>'agent' = 'parca';
SELECT parca_profile_type(p), parca_profile_total(p)
FROM parca_query('qtree:samples:count:cpu:nanoseconds', '2024-01-01 00:00+00', '2024-01-01 00:01+00') p;
SELECT parca_query_unit('qtree:samples:count:cpu:nanoseconds', '2024-01-01 00:00+00', '2024-01-01 00:01+00'),
       parca_query_unit('qtree:alloc_space:bytes:space:bytes', '-infinity', 'infinity'),
       parca_query_unit('{qtest="tree"}', '-infinity', 'infinity') AS several_types;

DROP FUNCTION icicle_check(profile, int);
-- parca.samples is columnar: rows go by TRUNCATE, not DELETE
TRUNCATE parca.samples;
DELETE FROM parca.series WHERE labels->>'qtest' = 'tree';
