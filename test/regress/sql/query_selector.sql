-- Selectors: parsing, errors that point at the position, series matching.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS parca;
RESET client_min_messages;

INSERT INTO parca.series (profile_type, labels) VALUES
    ('qsel:alloc_space:bytes:space:bytes', '{"job": "api", "instance": "a:1", "qtest": "sel"}'),
    ('qsel:alloc_space:bytes:space:bytes', '{"job": "api", "instance": "b:2", "qtest": "sel"}'),
    ('qsel:alloc_space:bytes:space:bytes', '{"job": "db", "qtest": "sel"}'),
    ('qsel:samples:count:cpu:nanoseconds:delta', '{"job": "api", "qtest": "sel"}');

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

-- parca_query insists on a known profile type
SELECT parca_query('{job="api"}', now(), now());
SELECT parca_query('nosuch:samples:count:cpu:nanoseconds', now(), now());
SELECT parca_query(NULL, now(), now());
-- a known type with nothing in range: an empty profile
SELECT parca_profile_stacks(p), parca_profile_total(p), parca_profile_type(p)
FROM parca_query('qsel:alloc_space:bytes:space:bytes{job="api"}', now(), now()) p;
SELECT parca_profile_type(parca_query('qsel:samples:count:cpu:nanoseconds:delta', now(), now()));

-- discovery
SELECT * FROM parca_profile_types() WHERE parca_profile_types LIKE 'qsel:%';
SELECT * FROM parca_labels('qsel:alloc_space:bytes:space:bytes');
SELECT * FROM parca_label_values('instance', 'qsel:alloc_space:bytes:space:bytes{job="api"}');
SELECT * FROM parca_label_values('job', '{qtest="sel"}');
SELECT count(*) FROM parca_profile_types(now() - interval '1 hour', now()) WHERE parca_profile_types LIKE 'qsel:%';

DROP FUNCTION qsel(text);
DELETE FROM parca.series WHERE labels->>'qtest' = 'sel';
