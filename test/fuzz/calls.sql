-- The calls of test/fuzz/run.sh: every SQL-callable function of the
-- extension (found through pg_depend, so a new one is covered by itself)
-- with each of its text, bytea, jsonb and array arguments in turn made
-- hostile, of :bytes bytes, the others ordinary (smaller hostile values
-- are test/regress/sql/fuzz.sql's).  Every
-- value is made by the server (the statement stays short): what the
-- backend holds is the value once, and what the function makes of it.
-- They go to fuzz.calls, numbered; fuzz.baselines makes each hostile
-- value without a call, to tell what a call costs beyond its argument.

-- An ordinary value for each argument, by name, else by type: the other
-- arguments are ones a user would pass, so that a hostile one reaches as
-- deep as it can.
CREATE TEMP TABLE fuzz_ordinary (name text, type regtype, expr text);
INSERT INTO fuzz_ordinary VALUES
    ('selector', 'text', $$'fuzz:samples:count:cpu:nanoseconds:delta{job="fuzz"}'$$),
    ('profile_type', 'text', $$'fuzz:samples:count:cpu:nanoseconds:delta'$$),
    ('label', 'text', $$'job'$$), ('matchers', 'text', $$'job="fuzz"'$$),
    ('match', 'text', $$'contains'$$), ('function_name', 'text', $$'main'$$),
    ('function', 'text', $$'main'$$), ('name', 'text', $$'fuzz'$$),
    ('level', 'text', $$'hour'$$), ('profile_id', 'text', $$'1@0'$$),
    ('build_id', 'text', $$'2d6912fd3dd64542f6f6294f4bf9cb6c265b3085'$$),
    ('config', 'text', $$'scrape_configs: []'$$), ('title', 'text', $$'fuzz'$$),
    (NULL, 'text', $$'fuzz'$$),
    ('labels', 'jsonb', $$'{"job": "fuzz"}'$$), ('filters', 'jsonb', $$'[]'$$),
    (NULL, 'jsonb', $$'{}'$$),
    ('label_values', 'text[]', $$'{fuzz}'$$), ('group_by', 'text[]', $$'{job}'$$),
    ('sum_by', 'text[]', $$'{job}'$$), (NULL, 'text[]', $$'{}'$$),
    (NULL, 'bigint[]', $$'{1}'$$), (NULL, 'integer[]', $$'{1}'$$), (NULL, 'boolean[]', $$'{false}'$$),
    (NULL, 'regclass[]', $$'{parca.samples_default}'$$),
    (NULL, 'bytea', $$'\x'$$), (NULL, 'cstring', $$'{}'$$),
    (NULL, 'bigint', '1'), (NULL, 'integer', '10'), (NULL, 'double precision', '0'),
    (NULL, 'boolean', 'false'), (NULL, 'regclass', $$'parca.samples'$$),
    ('start', 'timestamptz', $$'-infinity'$$), ('stop', 'timestamptz', $$'infinity'$$),
    (NULL, 'timestamptz', 'now()'), (NULL, 'interval', $$'1 hour'$$),
    (NULL, 'stacktrace', $$'{0000000000000001}'$$),
    (NULL, 'location', $$'{"address": "0x1", "lines": [{"function": "f"}]}'$$),
    (NULL, 'profile', $$parca_query('fuzz:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity')$$);

-- Hostile values: %1$s is the size in bytes (about).  Text: long runs of one
-- character (letters, quotes, backslashes, each bracket, 4-byte and
-- combining characters, control characters), a block of random characters
-- repeated (binary without NULs, as text must be), and selector-, id- and
-- YAML-shaped text that each parser takes far in.
CREATE TEMP TABLE fuzz_hostile (kind text, type regtype, expr text);
INSERT INTO fuzz_hostile VALUES
    ('letters', 'text', $$repeat('x', %1$s)$$),
    ('quotes', 'text', $$repeat('"', %1$s)$$),
    ('backslashes', 'text', $$repeat(E'\\', %1$s)$$),
    ('braces', 'text', $$repeat('{', %1$s)$$),
    ('parentheses', 'text', $$repeat('(', %1$s)$$),
    ('brackets', 'text', $$repeat('[', %1$s)$$),
    ('astral', 'text', $$repeat(U&'\+01F600', %1$s / 4)$$),
    ('combining', 'text', $$'e' || repeat(U&'\0301', %1$s / 2)$$),
    ('controls', 'text', $$repeat((SELECT string_agg(chr(c), '') FROM generate_series(1, 31) c), %1$s / 31)$$),
    ('random', 'text', $$repeat((SELECT string_agg(chr(CASE WHEN c BETWEEN 55296 AND 57343 THEN 65 ELSE c END), '')
                                 FROM (SELECT 1 + abs(hashint4(g)) %% 1114111 AS c FROM generate_series(1, 4096) g) r),
                                %1$s / 16384)$$),
    ('matchers', 'text', $$'fuzz:samples:count:cpu:nanoseconds:delta{' || repeat('job="fuzz",', %1$s / 11) || '}'$$),
    ('value', 'text', $$'fuzz:samples:count:cpu:nanoseconds:delta{job="' || repeat('x', %1$s) || '"}'$$),
    ('escapes', 'text', $$'fuzz:samples:count:cpu:nanoseconds:delta{job="' || repeat(E'\\"', %1$s / 2) || '"}'$$),
    ('unterminated', 'text', $$'fuzz:samples:count:cpu:nanoseconds:delta{job="' || repeat('x', %1$s)$$),
    ('regex_nesting', 'text', $$'fuzz:samples:count:cpu:nanoseconds:delta{job=~"' || repeat('(a|', %1$s / 4) || repeat(')', %1$s / 4) || '"}'$$),
    ('regex_alternatives', 'text', $$'fuzz:samples:count:cpu:nanoseconds:delta{job=~"' || repeat('fuzz.pb|', %1$s / 8) || 'x"}'$$),
    ('regex_repetition', 'text', $$'fuzz:samples:count:cpu:nanoseconds:delta{job=~"' || repeat('(x+x+)+y', %1$s / 8) || '"}'$$),
    ('type', 'text', $$repeat('a', %1$s) || ':b:c:d:e{}'$$),
    ('colons', 'text', $$repeat('a:', %1$s / 2)$$),
    ('profile_id', 'text', $$repeat('1', %1$s) || '@1'$$),
    ('yaml_nesting', 'text', $$'scrape_configs: ' || repeat('[', %1$s / 2) || repeat(']', %1$s / 2)$$),
    ('yaml_jobs', 'text', $$'scrape_configs:' || repeat(E'\n- job_name: ' || repeat('j', 64), %1$s / 80)$$),
    -- arrays: many names, one huge name, names that are no label names, NULLs
    ('many', 'text[]', $$array_fill('job'::text, ARRAY[%1$s / 4])$$),
    ('huge', 'text[]', $$ARRAY[repeat('x', %1$s)]$$),
    ('not_names', 'text[]', $$array_fill('job"} x'::text, ARRAY[%1$s / 8])$$),
    ('nulls', 'text[]', $$array_fill(NULL::text, ARRAY[%1$s / 8])$$),
    ('many', 'bigint[]', $$array_fill(1::bigint, ARRAY[%1$s / 8])$$),
    ('extreme', 'bigint[]', $$array_fill(9223372036854775807::bigint, ARRAY[%1$s / 8])$$),
    ('many', 'integer[]', $$array_fill(1, ARRAY[%1$s / 4])$$),
    ('many', 'boolean[]', $$array_fill(true, ARRAY[%1$s])$$),
    -- jsonb: deep nesting (the parser refuses it at its stack limit), many
    -- keys, a huge key and a huge value, many filters
    ('nesting', 'jsonb', $$(repeat('[', %1$s / 2) || repeat(']', %1$s / 2))::jsonb$$),
    ('keys', 'jsonb', $$(SELECT jsonb_object_agg(g || repeat('k', 250), 'v') FROM generate_series(1, %1$s / 256) g)$$),
    ('huge_value', 'jsonb', $$jsonb_build_object('job', repeat('x', %1$s))$$),
    ('huge_key', 'jsonb', $$jsonb_build_object(repeat('x', %1$s), 'v')$$),
    ('filters', 'jsonb', $$(SELECT jsonb_agg(jsonb_build_object('field', 'function', 'match', 'contains',
                                                          'value', g || repeat('x', 1000)))
                            FROM generate_series(1, %1$s / 1024) g)$$),
    -- bytea: 64 kB of random bytes repeated, 0xff, a gzip header before zeros
    ('random', 'bytea', $$(SELECT decode(repeat(string_agg(md5(g::text), ''), %1$s / 65536), 'hex')
                           FROM generate_series(1, 4096) g)$$),
    ('ff', 'bytea', $$decode(repeat('ff', %1$s), 'hex')$$),
    ('gzip', 'bytea', $$'\x1f8b0800'::bytea || decode(repeat('00', %1$s), 'hex')$$);
-- cstring arguments (type input functions) take the text values
INSERT INTO fuzz_hostile SELECT kind, 'cstring', '(' || expr || ')::cstring' FROM fuzz_hostile WHERE type = 'text'::regtype;

CREATE TEMP TABLE fuzz_functions AS
SELECT p.oid::regprocedure AS fn, p.oid::regproc AS name, p.prokind, p.proretset,
       (SELECT array_agg(t::regtype ORDER BY o) FROM unnest(p.proargtypes) WITH ORDINALITY AS u(t, o)) AS types,
       p.proargnames[1:p.pronargs] AS names
FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
JOIN pg_extension e ON e.oid = d.refobjid AND d.deptype = 'e' AND e.extname = 'parca'
-- internal arguments are the server's own (aggregate states, planner
-- support, binary input), not the caller's
WHERE NOT 'internal'::regtype = ANY (p.proargtypes::oid[]::regtype[]) AND p.prokind = 'f';

CREATE SCHEMA fuzz;
CREATE TABLE fuzz.calls AS
SELECT row_number() OVER (ORDER BY f.fn::text, i, h.kind) AS n, f.fn::text AS fn, i AS arg, h.kind,
       h.type::text AS type, :bytes::bigint AS bytes,
       -- (a set in FROM; a value in the target list, where it is not
       -- copied into a tuplestore first)
       format(CASE WHEN f.proretset THEN 'SELECT count(*) FROM %s(%s)' ELSE 'SELECT %s(%s) IS NULL' END, f.name,
              (SELECT string_agg(CASE WHEN j = i THEN format('(' || h.expr || ')::%s', :bytes::bigint, f.types[j])
                                      ELSE format('(%s)::%s',
                                                  (SELECT o.expr FROM fuzz_ordinary o
                                                   WHERE o.type = f.types[j] AND (o.name = f.names[j] OR o.name IS NULL)
                                                   ORDER BY o.name IS NULL LIMIT 1), f.types[j]) END,
                                 ', ' ORDER BY j)
               FROM generate_series(1, array_length(f.types, 1)) j)) AS call
FROM fuzz_functions f CROSS JOIN generate_series(1, coalesce(array_length(f.types, 1), 0)) i
JOIN fuzz_hostile h ON h.type = f.types[i];


CREATE TABLE fuzz.baselines AS
SELECT row_number() OVER (ORDER BY h.kind, h.type::text) AS n, h.kind, h.type::text AS type,
       format('SELECT (' || h.expr || ')::%s IS NULL', :bytes::bigint, h.type) AS call
FROM fuzz_hostile h;
