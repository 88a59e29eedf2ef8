-- parca_icicle, parca_icicle_diff, the sandwich and the SVG of every fixture
-- (ingested by test/query/run.sh as 'fx' with the label fixture) at many
-- max_nodes and node_trim_threshold, as md5 of their rows: test/query/run.sh
-- compares them with icicle_reference.tsv, written by the build before the
-- icicle's rewrite (issue 29), so that a faster tree stays the same tree.
SET client_min_messages = warning;
CREATE TEMP TABLE gp AS
SELECT s.f, s.t, parca_query(format('%s{fixture=%s}', s.t, to_json(s.f)), '-infinity', 'infinity') AS p
  FROM (SELECT DISTINCT labels->>'fixture' AS f, profile_type AS t FROM parca.series) s;
CREATE TEMP TABLE gargs (n int, th float8);
INSERT INTO gargs VALUES (0,0),(1,0),(2,0),(3,0),(5,0),(10,0),(30,0),(100,0),(1000,0),(4200,0),(16800,0),(67000,0),
  (0,0.1),(0,1),(0,5),(100,0.1),(4200,0.5),(67000,0.01);
SELECT 'icicle', gp.f, gp.t, a.n, a.th,
       (SELECT md5(coalesce(string_agg(concat_ws('|', i.level, i.value, i.self, i.label), E'\n' ORDER BY i.o), ''))
          FROM parca_icicle(gp.p, a.n, a.th) WITH ORDINALITY i(level, value, self, label, o))
  FROM gp, gargs a ORDER BY 2, 3, 4, 5;
CREATE TEMP TABLE gd AS
SELECT d.t, d.fa, d.fb, ab, parca_diff(a.p, b.p, ab) AS p
  FROM (SELECT t, min(f) fa, max(f) fb FROM gp GROUP BY t HAVING count(*) > 1) d
  JOIN gp a ON a.t = d.t AND a.f = d.fa JOIN gp b ON b.t = d.t AND b.f = d.fb, (VALUES (false), (true)) v(ab);
SELECT 'diff', gd.fa || ' ' || gd.fb || ' ' || gd.ab, gd.t, a.n, a.th,
       (SELECT md5(coalesce(string_agg(concat_ws('|', i.level, i.value, i.self, i."valueRight", i."selfRight", i.label), E'\n' ORDER BY i.o), ''))
          FROM parca_icicle_diff(gd.p, a.n, a.th) WITH ORDINALITY i(level, value, self, "valueRight", "selfRight", label, o))
  FROM gd, gargs a ORDER BY 2, 3, 4, 5;
CREATE TEMP TABLE gs AS
SELECT gp.*, (SELECT function FROM parca_top(gp.p) ORDER BY flat DESC, function LIMIT 1) fn FROM gp;
SELECT 'sandwich', gs.f, gs.t, a.n, a.th,
       (SELECT md5(coalesce(string_agg(concat_ws('|', i.level, i.value, i.self, i.label), E'\n' ORDER BY i.o), ''))
          FROM parca_sandwich_callers(gs.p, gs.fn, a.n, a.th) WITH ORDINALITY i(level, value, self, label, o)),
       (SELECT md5(coalesce(string_agg(concat_ws('|', i.level, i.value, i.self, i.label), E'\n' ORDER BY i.o), ''))
          FROM parca_sandwich_callees(gs.p, gs.fn, a.n, a.th) WITH ORDINALITY i(level, value, self, label, o))
  FROM gs, gargs a WHERE gs.fn IS NOT NULL AND a.n IN (0, 2, 10, 100, 1000, 4200) ORDER BY 2, 3, 4, 5;
SELECT 'svg', gp.f, gp.t, md5(parca_flamegraph_svg(gp.p)) FROM gp ORDER BY 2, 3;
