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

-- structure: one root, levels step by one, value = self + children
CREATE FUNCTION icicle_check(p profile, max_nodes int DEFAULT 0) RETURNS text LANGUAGE sql AS $$
    WITH rows AS (
        SELECT * FROM parca_icicle(p, max_nodes) WITH ORDINALITY AS r(level, value, self, vr, sr, label, i)
    ), parents AS (
        SELECT c.i, c.level, c.value, c.self,
               (SELECT max(a.i) FROM rows a WHERE a.i < c.i AND a.level = c.level - 1) AS parent,
               lag(c.level) OVER (ORDER BY c.i) AS prev_level
        FROM rows c
    )
    SELECT concat_ws(', ',
        CASE WHEN (SELECT count(*) FROM rows WHERE level = 0) <> 1 THEN 'roots <> 1' END,
        CASE WHEN (SELECT label FROM rows WHERE i = 1) <> 'total' THEN 'first row not total' END,
        CASE WHEN EXISTS (SELECT 1 FROM parents WHERE i > 1 AND (level < 1 OR level > prev_level + 1)) THEN 'level jump' END,
        CASE WHEN EXISTS (SELECT 1 FROM parents x WHERE x.value <> x.self +
                 coalesce((SELECT sum(y.value) FROM parents y WHERE y.parent = x.i), 0)) THEN 'value <> self + children' END,
        CASE WHEN (SELECT sum(self) FROM rows) <> (SELECT value FROM rows WHERE i = 1) THEN 'self does not add up' END,
        CASE WHEN (SELECT value - coalesce(vr, 0) FROM rows WHERE i = 1) <> coalesce(parca_profile_total(p), 0)
             THEN 'total changed' END,
        'checked ' || (SELECT count(*) FROM rows) || ' rows')
$$;
SELECT icicle_check(p) FROM q;
-- trimming folds the smallest nodes into their parents, totals stay
SELECT icicle_check(p, 4) FROM q;
SELECT * FROM parca_icicle((SELECT p FROM q), 4);
SELECT icicle_check(p, 1) FROM q;
SELECT * FROM parca_icicle((SELECT p FROM q), -1);

-- top: flat/cum per function, recursion counted once in cum
SELECT * FROM parca_top((SELECT p FROM q));

-- the time range is inclusive; outside it, nothing
SELECT parca_profile_total(parca_query('qtree:samples:count:cpu:nanoseconds:delta', '2024-01-01 00:00:20+00', '2024-01-01 00:00:20+00'));
SELECT parca_profile_stacks(parca_query('qtree:samples:count:cpu:nanoseconds:delta', '2023-01-01', '2023-01-02'));

-- grouping: one root frame per label value
SELECT level, value, label FROM parca_icicle(parca_query('qtree:samples:count:cpu:nanoseconds:delta',
    '2024-01-01', '2024-01-02', group_by => '{job}')) WHERE level <= 1;
SELECT level, value, label FROM parca_icicle(parca_query('qtree:samples:count:cpu:nanoseconds:delta',
    '2024-01-01', '2024-01-02', group_by => '{job,pid}')) WHERE level <= 1;

-- stack filters: function name substring (case-insensitive) or binary
SELECT parca_profile_total(parca_query('qtree:samples:count:cpu:nanoseconds:delta{job="db"}',
    '2024-01-01', '2024-01-02', keep_function => 'COMPUTE'));
SELECT parca_profile_total(parca_query('qtree:samples:count:cpu:nanoseconds:delta{job="db"}',
    '2024-01-01', '2024-01-02', drop_function => 'elp'));
SELECT parca_profile_total(parca_query('qtree:samples:count:cpu:nanoseconds:delta{job="db"}',
    '2024-01-01', '2024-01-02', keep_binary => 'libc'));
SELECT parca_profile_total(parca_query('qtree:samples:count:cpu:nanoseconds:delta{job="db"}',
    '2024-01-01', '2024-01-02', keep_function => 'main', drop_binary => 'LIBC.so'));

-- diff: against itself zero everywhere; relative scales the base
SELECT count(*) AS nonzero FROM parca_top(parca_diff((SELECT p FROM q), (SELECT p FROM q))) WHERE flat <> 0 OR cum <> 0;
SELECT count(*) AS unbalanced FROM parca_icicle(parca_diff((SELECT p FROM q), (SELECT p FROM q)))
WHERE value <> 2 * "valueRight" OR self <> 2 * "selfRight";
CREATE TEMP TABLE d AS
SELECT parca_query('qtree:samples:count:cpu:nanoseconds:delta{job="api"}', '2024-01-01 00:00:00+00', '2024-01-01 00:00:00+00') AS early,
       parca_query('qtree:samples:count:cpu:nanoseconds:delta{job="api"}', '2024-01-01 00:00:20+00', '2024-01-01 00:00:20+00') AS late;
SELECT level, value - "valueRight" AS base, "valueRight" AS compared, label
FROM d, parca_icicle(parca_diff(early, late)) WHERE level <= 2;
SELECT level, value - "valueRight" AS base, "valueRight" AS compared, label
FROM d, parca_icicle(parca_diff(early, late, absolute => true)) WHERE level <= 2;
SELECT function, flat, cum FROM d, parca_top(parca_diff(early, late, absolute => true));
SELECT parca_diff(parca_diff(early, late), late) FROM d;
INSERT INTO parca.series (profile_type, labels) VALUES ('qtree:alloc_space:bytes:space:bytes', '{"qtest": "tree"}');
SELECT parca_diff(early, parca_query('qtree:alloc_space:bytes:space:bytes', now(), now())) FROM d;
SELECT icicle_check(parca_diff(early, late)) FROM d;

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
-- an unbounded range: buckets aligned to 2000-01-01
SELECT "time", value FROM parca_query_range('qtree:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity',
                                            '1 day', '{}');

DROP FUNCTION icicle_check(profile, int);
-- parca.samples is columnar: rows go by TRUNCATE, not DELETE
TRUNCATE parca.samples;
DELETE FROM parca.series WHERE labels->>'qtest' = 'tree';
