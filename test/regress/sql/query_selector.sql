-- Selectors: parsing, errors that point at the position, series matching.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS parca;
RESET client_min_messages;

INSERT INTO parca.series (profile_type, labels) VALUES
    ('qsel:alloc_space:bytes:space:bytes', '{"job": "api", "instance": "a:1", "qtest": "sel"}'),
    ('qsel:alloc_space:bytes:space:bytes', '{"job": "api", "instance": "b:2", "qtest": "sel"}'),
    ('qsel:alloc_space:bytes:space:bytes', '{"job": "db", "qtest": "sel"}'),
    ('qsel:samples:count:cpu:nanoseconds:delta', '{"job": "api", "qtest": "sel"}'),
    -- label values that regexes, selectors and SQL quote
    ('qsel:inuse_space:bytes:space:bytes', '{"job": "fib.pb.gz", "qtest": "sel"}'),
    ('qsel:inuse_space:bytes:space:bytes', '{"job": "fibXpbXgz", "qtest": "sel"}'),
    ('qsel:inuse_space:bytes:space:bytes', '{"job": "/usr/bin/a+b", "qtest": "sel"}'),
    ('qsel:inuse_space:bytes:space:bytes', '{"job": "it''s \"q\" \\ (a|b) [c] {d} ^$*?", "qtest": "sel"}'),
    ('qsel:inuse_space:bytes:space:bytes', '{"job": "", "qtest": "sel"}');

CREATE FUNCTION qsel(sel text) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(coalesce(labels->>'job', '-') || '/' || coalesce(labels->>'instance', '-'), ' '
                               ORDER BY labels->>'job', labels->>'instance'), '(none)')
    FROM parca_series(sel) WHERE labels->>'qtest' = 'sel'
$$;

-- matchers
SELECT qsel('qsel:alloc_space:bytes:space:bytes');
SELECT qsel('qsel:alloc_space:bytes:space:bytes{}');
SELECT qsel('qsel:alloc_space:bytes:space:bytes{job="api"}');
SELECT qsel('qsel:alloc_space:bytes:space:bytes{job!="api"}');
SELECT qsel('qsel:alloc_space:bytes:space:bytes{instance=~"a.*"}');
SELECT qsel('qsel:alloc_space:bytes:space:bytes{instance=~"a"}');     -- anchored: no match
SELECT qsel('qsel:alloc_space:bytes:space:bytes{instance!~"a.*"}');
SELECT qsel('qsel:alloc_space:bytes:space:bytes{instance=""}');       -- absent label
SELECT qsel('qsel:alloc_space:bytes:space:bytes{instance!=""}');
SELECT qsel('  qsel:alloc_space:bytes:space:bytes { job = ''api'' , instance = `b:2` , } ');
SELECT qsel('{job="api"}');                                            -- no profile type
SELECT qsel('qsel:samples:count:cpu:nanoseconds:delta');
SELECT qsel('qsel:samples:count:cpu:nanoseconds{job="api"}');         -- without :delta: another type
SELECT qsel('{job="a\"b"}');

-- malformed selectors: errors say where
SELECT qsel('qsel:alloc_space:bytes:space');
SELECT qsel('qsel:alloc_space:bytes:space:bytes:cumulative');
SELECT qsel('qsel:alloc_space:bytes:space:bytes:delta:x');
SELECT qsel(':alloc_space:bytes:space:bytes');
SELECT qsel('qsel:alloc_space:bytes:space:bytes{job="api"');
SELECT qsel('qsel:alloc_space:bytes:space:bytes{job"api"}');
SELECT qsel('qsel:alloc_space:bytes:space:bytes{job=api}');
SELECT qsel('qsel:alloc_space:bytes:space:bytes{job="api}');
SELECT qsel('qsel:alloc_space:bytes:space:bytes{1job="api"}');
SELECT qsel('qsel:alloc_space:bytes:space:bytes{job="api" instance="a"}');
SELECT qsel('qsel:alloc_space:bytes:space:bytes{job="api"} x');
SELECT qsel('qsel:alloc space:bytes:space:bytes');
SELECT qsel('qsel:alloc_space:bytes:space:bytes{job=~"a("}');
SELECT qsel('{job="\q"}');
-- in a regex an escape the string does not know is the regex's (RE2, and
-- what Grafana's ${var:regex} writes): \. matches a dot, \/ a slash
SELECT qsel('qsel:inuse_space:bytes:space:bytes{job=~"fib\.pb\.gz"}');
SELECT qsel('qsel:inuse_space:bytes:space:bytes{job=~"(fib\.pb\.gz|\/usr\/bin\/a\+b)"}');
SELECT qsel('qsel:inuse_space:bytes:space:bytes{job!~"fib\.pb\.gz"}');
SELECT qsel('qsel:inuse_space:bytes:space:bytes{job=~"fib\\.pb\\.gz"}');  -- Prometheus' double escape
SELECT qsel('qsel:inuse_space:bytes:space:bytes{job=~"fib\qx"}');
SELECT qsel('qsel:inuse_space:bytes:space:bytes{job=~"fib\');
-- an error quotes 64 characters of the selector, and of the place of the error
SELECT qsel('qsel:alloc_space:bytes:space:bytes{job="' || repeat('x', 100000) || '"');
SELECT qsel(repeat('a', 100000) || ':b:c:d:e');

-- what a selector may hold: 64 matchers, 16 of them regexes of 16 kB each
SELECT qsel('{' || repeat('job="api", ', 64) || '}');
SELECT qsel('{' || repeat('job="api", ', 65) || '}');
SELECT qsel('{' || repeat('a="", ', 100000) || '}');
-- and at most 1 MB (a label set is at most that: a longer value matches nothing, or everything)
SELECT qsel('{' || repeat('job="api", ', 1000000) || '}');
SELECT qsel('{job!="' || repeat('x', 1048576) || '"}');
SELECT qsel('{' || repeat('job=~"api", ', 16) || '}');
SELECT qsel('{' || repeat('job=~"api", ', 17) || '}');
SELECT qsel('{job=~"' || repeat('a', 16384) || '"}');
SELECT qsel('{job=~"' || repeat('a', 16385) || '"}');
-- (the length is that of the regex, not of its quoted form)
SELECT qsel('{job=~"' || repeat('\\', 16384) || '"}');
-- a short regex too complex to compile is PostgreSQL's error, at its place
SELECT qsel('{job=~"(((((((a{1,255}){1,255}){1,255}){1,255}){1,255}){1,255}){1,255})"}');
-- a value as long as a label set allows
SELECT qsel('{job="' || repeat('x', 1000000) || '"}');

-- parca_selector: the parts of a selector, each value quoted
SELECT parca_selector('qsel:inuse_space:bytes:space:bytes', 'job', ARRAY['fib.pb.gz']);
SELECT parca_selector('qsel:inuse_space:bytes:space:bytes', 'job', ARRAY['fib.pb.gz', '/usr/bin/a+b'], 'qtest="sel", ');
SELECT parca_selector('qsel:inuse_space:bytes:space:bytes', 'job', ARRAY[NULL], 'qtest="sel"');  -- All
SELECT parca_selector('qsel:inuse_space:bytes:space:bytes', '', ARRAY['x']);
SELECT parca_selector('', 'job', ARRAY['x']) IS NULL AS no_type, parca_selector(NULL) IS NULL AS null_type,
       parca_selector('qsel:inuse_space:bytes:space:bytes', 'job', '{}') IS NULL AS no_values;
-- every part is checked, none pasted as it comes: a label name that is
-- not one (it would add matchers), a profile type that does not parse,
-- matchers that are not matchers, all named in the error
SELECT parca_selector('a:b:c:d:e', 'job"} x', ARRAY['v']);
SELECT parca_selector('a:b:c:d:e', 'job="x", y', ARRAY['v']);
SELECT parca_selector('a:b:c:d:e{job="x"}', 'job', ARRAY['v']);
SELECT parca_selector('a:b:c:d:e job', 'job', ARRAY['v']);
SELECT parca_selector('a:b:c:d', 'job', ARRAY['v']);
SELECT parca_selector('a:b:c:d:e', 'job', ARRAY['v'], 'x="y"} z');
SELECT parca_selector('a:b:c:d:e', 'job', ARRAY['v'], 'x="y"}, {z="1"');
SELECT parca_selector('a:b:c:d:e', 'job', ARRAY['v'], 'x');
-- values with quotes and backslashes stay values
SELECT parca_selector('a:b:c:d:e', 'job', ARRAY['x"} y', E'a\\b']);
SELECT parca_selector('a:b:c:d:e', 'job', ARRAY['x", y="z']);
-- within a selector's limits, all parts together
SELECT length(parca_selector('a:b:c:d:e', 'job', ARRAY['v'], repeat('x="y", ', 63)));
SELECT parca_selector('a:b:c:d:e', 'job', ARRAY['v'], repeat('x="y", ', 64));
SELECT parca_selector('a:b:c:d:e', 'job', ARRAY['v', 'w'], repeat('x=~"y", ', 16));
SELECT parca_selector('a:b:c:d:e', 'job', array_fill('v'::text, ARRAY[20000]));
SELECT parca_selector('a:b:c:d:e', 'job', array_fill('value'::text, ARRAY[3000]));
SELECT length(parca_selector('a:b:c:d:e', 'job', ARRAY[repeat('v', 1000000)]));
-- each value, alone and with the others, selects exactly its series
SELECT labels->>'job' AS value, qsel(parca_selector('qsel:inuse_space:bytes:space:bytes', 'job', ARRAY[labels->>'job'])) AS alone
FROM parca.series WHERE profile_type = 'qsel:inuse_space:bytes:space:bytes' ORDER BY 1;
SELECT qsel(parca_selector('qsel:inuse_space:bytes:space:bytes', 'job',
                           (SELECT array_agg(labels->>'job') FROM parca.series
                            WHERE profile_type = 'qsel:inuse_space:bytes:space:bytes' AND labels->>'job' NOT LIKE 'fib%')));

-- parca_query insists on a known profile type
SELECT parca_query('{job="api"}', now(), now());
SELECT parca_query('nosuch:samples:count:cpu:nanoseconds', now(), now());
SELECT parca_query(NULL, now(), now());
-- a known type with nothing in range: an empty profile
SELECT parca_profile_stacks(p), parca_profile_total(p), parca_profile_type(p)
FROM parca_query('qsel:alloc_space:bytes:space:bytes{job="api"}', now(), now()) p;
SELECT parca_profile_type(parca_query('qsel:samples:count:cpu:nanoseconds:delta', now(), now()));

-- parca_series_ids where people write it, over the samples table: the
-- selector is evaluated once (an InitPlan), not for every row
CREATE FUNCTION plan_of(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        RETURN NEXT line;
    END LOOP;
END
$$;
SELECT count(*) FILTER (WHERE line ~ 'InitPlan') AS initplans,
       count(*) FILTER (WHERE line ~ 'parca_series_ids') AS calls_per_row
FROM plan_of($$SELECT count(*) FROM parca.samples
               WHERE series_id = ANY (parca_series_ids('qsel:alloc_space:bytes:space:bytes{job="api"}'))$$) AS line;
SELECT count(*) FILTER (WHERE line ~ 'InitPlan') AS initplans,
       count(*) FILTER (WHERE line ~ 'parca_series_ids') AS calls_per_row
FROM plan_of($$SELECT s.labels FROM parca.samples x JOIN parca.series s ON s.id = x.series_id
               WHERE x.series_id = ANY (parca_series_ids('{job="api"}')) AND x.time > now() - interval '1 hour'$$) AS line;
-- a selector that depends on the row stays a per-row call
SELECT count(*) FILTER (WHERE line ~ 'InitPlan') AS initplans,
       count(*) FILTER (WHERE line ~ 'parca_series_ids') AS calls_per_row
FROM plan_of($$SELECT s.id FROM parca.series s WHERE s.id = ANY (parca_series_ids(s.labels->>'job'))$$) AS line;
-- and the same answers
SELECT count(*) FROM parca.series WHERE id = ANY (parca_series_ids('{qtest="sel", job=~"a.*"}'));
PREPARE by_selector(text) AS SELECT count(*) FROM parca.series WHERE id = ANY (parca_series_ids($1));
EXECUTE by_selector('{qtest="sel", job="db"}');
DEALLOCATE by_selector;
DROP FUNCTION plan_of(text);

-- discovery
SELECT * FROM parca_profile_types() WHERE parca_profile_types LIKE 'qsel:%';
SELECT * FROM parca_labels('qsel:alloc_space:bytes:space:bytes');
SELECT * FROM parca_label_values('instance', 'qsel:alloc_space:bytes:space:bytes{job="api"}');
SELECT * FROM parca_label_values('job', '{qtest="sel"}');
SELECT count(*) FROM parca_profile_types(now() - interval '1 hour', now()) WHERE parca_profile_types LIKE 'qsel:%';
-- (in C since the series index: the selector's 1 MB holds for them too)
SELECT * FROM parca_labels('{job!="' || repeat('x', 1048576) || '"}');
SELECT * FROM parca_label_values('job', '{job!="' || repeat('x', 1048576) || '"}', now() - interval '1 hour', now());

-- A type that ingestion stores can be named by a selector, whatever
-- characters its fields hold: a pprof whose sample type and unit hold
-- + [ ] = , ! ~ ' and non-ASCII letters (made by exporting a stored
-- profile under that type), ingested and selected again.
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixture :abs_srcdir '/data/pprof/parca/profile1.pb.gz'
SELECT parca_ingest_pprof(pg_read_binary_file(:'fixture'), 'qsel_src', '{"qtest": "odd"}') > 0 AS stored;
SELECT parca_ingest_pprof(parca_pprof(parca_merge(s.stack, s.value),
                                      $$x:cpu+[ü]=,!~'é:nanö:wall:ns$$, 1), 'qsel+Ü[1]', '{"qtest": "odd"}') > 0 AS stored
FROM parca.samples s JOIN parca.series se ON se.id = s.series_id
WHERE se.labels->>'qtest' = 'odd' AND se.profile_type LIKE 'qsel\_src:%' AND se.profile_type LIKE '%:cpu:%';
SELECT * FROM parca_profile_types() WHERE parca_profile_types LIKE 'qsel+%';
SELECT count(*) FROM parca_series($$qsel+Ü[1]:cpu+[ü]=,!~'é:nanö:wall:ns{qtest="odd"}$$);
SELECT parca_profile_total(parca_query($$qsel+Ü[1]:cpu+[ü]=,!~'é:nanö:wall:ns{qtest="odd"}$$, '-infinity', 'infinity'))
     = (SELECT sum(s.value) FROM parca.samples s JOIN parca.series se ON se.id = s.series_id
        WHERE se.labels->>'qtest' = 'odd' AND se.profile_type LIKE 'qsel\_src:%' AND se.profile_type LIKE '%:cpu:%')
    AS same_total;
-- what ingestion refuses a selector refuses too, at the character
SELECT qsel('qsel:cpu:n"s:cpu:nanoseconds');
-- and parca_pprof takes only a profile type as the type of its pprof
SELECT parca_pprof(parca_query($$qsel+Ü[1]:cpu+[ü]=,!~'é:nanö:wall:ns$$, '-infinity', 'infinity'), 'not-a-type');

DROP FUNCTION qsel(text);
DELETE FROM parca.series WHERE labels->>'qtest' = 'sel';
