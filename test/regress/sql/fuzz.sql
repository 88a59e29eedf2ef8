-- Every SQL-callable function of the extension, found in pg_proc through
-- pg_depend (so a new function is covered without touching this file),
-- called with NULLs and extreme values: empty and garbage text and bytea,
-- huge, negative and zero numbers, infinite times, empty and odd arrays,
-- empty, diff and overflowing profiles, and hostile text of 64 kB (runs
-- of quotes, backslashes, brackets, 4-byte and control characters;
-- selectors past their limits, with a regex too complex to compile, a
-- huge value, no end).  Each call runs in a subtransaction that is always
-- rolled back.  The server must stay up (same postmaster start time
-- afterwards) and every error must be a clean one: no SQLSTATE of class XX
-- (internal error), and short: message, detail, hint and context together
-- at most 16 kB (an error quotes 64 characters of an argument; a context
-- may show the extension's statements).  test/fuzz/run.sh calls every
-- function with hostile arguments of parca.max_profile_size, bounding time
-- and memory.
\getenv abs_srcdir PG_ABS_SRCDIR
\set one_stack :abs_srcdir '/data/pprof/parca/single-stack.pb.gz'
\set profile1 :abs_srcdir '/data/pprof/parca/profile1.pb.gz'
SELECT pg_postmaster_start_time() AS started \gset
TRUNCATE parca.samples, parca.series, parca.locations, parca.functions, parca.mappings;
SELECT parca_ingest_pprof(pg_read_binary_file(:'profile1'), 'fuzz', '{"job": "fuzz"}') > 0 AS ingested;

-- Values per argument type, as SQL expressions; the first is an ordinary one.
CREATE TEMP TABLE fuzz_values (type regtype, expr text, n serial);
INSERT INTO fuzz_values (type, expr) VALUES
    ('text', $$'fuzz:samples:count:cpu:nanoseconds:delta{job="fuzz"}'$$),
    ('text', 'NULL'), ('text', $$''$$), ('text', $$'garbage'$$), ('text', $$repeat('x{', 50000)$$),
    ('text', $$'{'$$), ('text', $$E'\\'$$), ('text', $$'fuzz:samples:count:cpu:nanoseconds:delta{job=~"("}'$$),
    ('text', $$'{job=~".*"}'$$), ('text', $$'{job=~"a\\.b\\/c\\"}'$$), ('text', $$'-1'$$),
    ('text', $$'99999999999999999999'$$), ('text', $$'key: [unclosed'$$),
    ('text', $$repeat('"', 65536)$$), ('text', $$repeat(E'\\', 65536)$$), ('text', $$repeat('(', 65536)$$),
    ('text', $$repeat(U&'\+01F600', 16384)$$),
    ('text', $$repeat((SELECT string_agg(chr(c), '') FROM generate_series(1, 31) c), 2114)$$),
    ('text', $$repeat('1', 65536) || '@1'$$), ('text', $$repeat('a', 65536) || ':b:c:d:e{}'$$),
    ('text', $$'fuzz:samples:count:cpu:nanoseconds:delta{' || repeat('job="fuzz", ', 65) || '}'$$),
    ('text', $$'fuzz:samples:count:cpu:nanoseconds:delta{' || repeat('job=~"fuzz", ', 17) || '}'$$),
    ('text', $$'fuzz:samples:count:cpu:nanoseconds:delta{job=~"' || repeat('a', 16385) || '"}'$$),
    ('text', $$'fuzz:samples:count:cpu:nanoseconds:delta{job=~"(((((((a{1,255}){1,255}){1,255}){1,255}){1,255}){1,255}){1,255})"}'$$),
    ('text', $$'fuzz:samples:count:cpu:nanoseconds:delta{job="' || repeat(E'\\"', 32768) || '"}'$$),
    ('text', $$'fuzz:samples:count:cpu:nanoseconds:delta{job="' || repeat('x', 65536)$$),
    ('bytea', $$pg_read_binary_file('$$ || :'one_stack' || $$')$$),
    ('bytea', 'NULL'), ('bytea', $$'\x'$$), ('bytea', $$'\x00'$$), ('bytea', $$'\x1f8b0800'$$),
    ('bytea', $$'\x0a0208011a'$$), ('bytea', $$decode(repeat('ff', 4096), 'hex')$$),
    ('integer', '10'), ('integer', 'NULL'), ('integer', '0'), ('integer', '-1'), ('integer', '1'),
    ('integer', '2147483647'), ('integer', '(-2147483647 - 1)'),
    ('bigint', '10'), ('bigint', 'NULL'), ('bigint', '0'), ('bigint', '-1'),
    ('bigint', '9223372036854775807'), ('bigint', '(-9223372036854775807 - 1)'),
    ('double precision', '1'), ('double precision', 'NULL'), ('double precision', '0'),
    ('double precision', '-1'), ('double precision', '100'), ('double precision', '1e-300'),
    ('double precision', $$'NaN'$$), ('double precision', $$'Infinity'$$),
    ('boolean', 'false'), ('boolean', 'NULL'), ('boolean', 'true'),
    ('timestamptz', $$'-infinity'$$), ('timestamptz', 'NULL'), ('timestamptz', $$'infinity'$$),
    ('timestamptz', $$'4713-01-01 00:00+00 BC'$$), ('timestamptz', $$'294276-12-31 00:00+00'$$),
    ('timestamptz', 'now()'),
    ('interval', $$'1 minute'$$), ('interval', 'NULL'), ('interval', $$'0'$$), ('interval', $$'-1 s'$$),
    ('interval', $$'1 microsecond'$$), ('interval', $$'1 month'$$), ('interval', $$'178000000 years'$$),
    ('text[]', $$'{job}'$$), ('text[]', 'NULL'), ('text[]', $$'{}'$$), ('text[]', $$'{NULL}'$$),
    ('text[]', $$'{""}'$$), ('text[]', $$'{"a\"b", "x y", "\\"}'$$), ('text[]', $$array_fill('x'::text, ARRAY[10000])$$),
    ('text[]', $$ARRAY['job"} x']$$), ('text[]', $$ARRAY[repeat('x', 65536)]$$), ('text[]', $$array_fill('job'::text, ARRAY[65])$$),
    ('bigint[]', $$'{1}'$$), ('bigint[]', 'NULL'), ('bigint[]', $$'{}'$$), ('bigint[]', $$'{NULL}'$$),
    ('bigint[]', $$'{{1,2},{3,4}}'$$), ('bigint[]', $$'{-1,9223372036854775807}'$$),
    ('bigint[]', $$array_fill(7::bigint, ARRAY[10000])$$),
    ('integer[]', $$'{1}'$$), ('integer[]', 'NULL'), ('integer[]', $$'{}'$$), ('integer[]', $$'{-1}'$$),
    ('integer[]', $$'{2147483647}'$$), ('integer[]', $$'{NULL}'$$),
    ('boolean[]', $$'{false}'$$), ('boolean[]', 'NULL'), ('boolean[]', $$'{}'$$), ('boolean[]', $$'{NULL,true}'$$),
    ('jsonb', $$'{"job": "fuzz"}'$$), ('jsonb', 'NULL'), ('jsonb', $$'{}'$$), ('jsonb', $$'[]'$$),
    ('jsonb', $$'null'$$), ('jsonb', $$'1'$$), ('jsonb', $$'"s"'$$), ('jsonb', $$'{"a": {"b": 1}}'$$),
    ('jsonb', $$'{"a": null}'$$), ('jsonb', $$'{"__name__": "x", "": "y"}'$$),
    ('jsonb', $$'[{"field": "address", "match": "not_equal", "value": "0x1"}]'$$),
    ('jsonb', $$(repeat('[', 2000) || repeat(']', 2000))::jsonb$$), ('jsonb', $$jsonb_build_object(repeat('x', 65536), 'v')$$),
    ('jsonb', $$jsonb_build_object('job', repeat('x', 65536))$$),
    ('jsonb', $$jsonb_build_array(jsonb_build_object('field', repeat('f', 65536), 'match', 'equal', 'value', 'x'))$$),
    ('cstring', $$'{}'$$), ('cstring', 'NULL'), ('cstring', $$''$$), ('cstring', $$'garbage'$$),
    ('cstring', $$'{'$$), ('cstring', $$'\x'$$), ('cstring', $$'\xzz'$$), ('cstring', $$'\x01'$$),
    ('cstring', $$'\x0101000000000000000000000000ffffffff'$$), ('cstring', $$'{1,2,}'$$),
    ('cstring', $$'\x0100020000000000000000000000000080ff'$$),
    ('cstring', $$'{18446744073709551616}'$$), ('cstring', $$'{"lines": 1, "address": "0xzz"}'$$),
    ('internal', 'NULL'),
    ('regclass', $$'parca.samples'$$), ('regclass', 'NULL'), ('regclass', $$'pg_class'$$),
    ('regclass', $$'parca.series'$$), ('regclass', '0'), ('regclass', $$'parca.columnar_stripes'$$),
    ('regclass[]', 'NULL'), ('regclass[]', $$'{}'$$), ('regclass[]', $$'{parca.samples_default,NULL}'$$),
    ('regclass[]', $$'{parca.samples,pg_class,0}'$$), ('regclass[]', $$ARRAY[4294967000]::oid[]::regclass[]$$),
    ('regclass[]', $$'{{parca.samples_default},{parca.samples_default}}'$$),
    ('tid[]', $$'{}'$$), ('tid[]', 'NULL'), ('tid[]', $$'{"(0,1)",NULL}'$$), ('tid[]', $$'{"(4294967295,65535)"}'$$),
    ('timestamptz[]', $$'{2017-01-01 00:00+00}'$$), ('timestamptz[]', 'NULL'), ('timestamptz[]', $$'{}'$$),
    ('timestamptz[]', $$'{-infinity,infinity,NULL}'$$), ('timestamptz[]', $$'{4713-01-01 00:00+00 BC,294276-12-31 00:00+00}'$$),
    ('tstzmultirange', $$'{[-infinity,infinity]}'$$), ('tstzmultirange', 'NULL'), ('tstzmultirange', $$'{}'$$),
    ('tstzmultirange', $$'{[2017-01-01 00:00+00,2017-01-02 00:00+00), [294276-12-30 00:00+00,infinity)}'$$),
    ('parca.range_selected[]', 'NULL'), ('parca.range_selected[]', $$'{}'$$), ('parca.range_selected[]', $$'{NULL,"(,,,)"}'$$),
    ('parca.range_selected[]', $$'{"(1,t,t,{})","(1,f,t,null)","(-1,t,f,[])"}'$$),
    ('parca.range_part[]', 'NULL'), ('parca.range_part[]', $$'{}'$$), ('parca.range_part[]', $$'{NULL,"(,,,,)"}'$$),
    ('parca.range_part[]', $$'{"(infinity,1,1e300,0,-1)","(infinity,1,-1e300,0,1)","(2017-01-01,-1,1,1,1)"}'$$),
    ('stacktrace', '(SELECT stack FROM parca.samples LIMIT 1)'), ('stacktrace', 'NULL'),
    ('stacktrace', $$'{}'$$), ('stacktrace', $$'{0000000000000001}'$$),
    ('stacktrace', $$('{' || array_to_string(array_fill('ffffffffffffffff'::text, ARRAY[1000]), ',') || '}')::stacktrace$$),
    ('location', '(SELECT parca_location(id) FROM parca.locations LIMIT 1)'), ('location', 'NULL'),
    ('location', $$'{}'$$), ('location', $$'{"address": "0xffffffffffffffff", "lines": [{"function": ""}]}'$$),
    ('profile', $$parca_query('fuzz:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity')$$),
    ('profile', 'NULL'),
    ('profile', $$parca_query('fuzz:samples:count:cpu:nanoseconds:delta', '2000-01-01 00:00+00', '2000-01-01 00:00+00')$$),
    ('profile', $$(SELECT parca_merge(stack, value) FROM parca.samples WHERE false)$$),
    ('profile', $$parca_diff(parca_query('fuzz:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity'),
                             parca_query('fuzz:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity'))$$),
    ('profile', $$(SELECT parca_merge(s::stacktrace, 9223372036854775807)
                   FROM unnest(ARRAY['{0000000000000001}', '{0000000000000002,0000000000000001}']) s)$$),
    ('profile', $$(SELECT parca_merge(s, (-9223372036854775807 - 1)) FROM (SELECT stack AS s FROM parca.samples LIMIT 1) x)$$);

-- Each call: all arguments ordinary, all NULL, and each argument through
-- its values with the others ordinary.
CREATE TEMP TABLE fuzz_calls (fn regprocedure, kind "char", args text);
DO $$
DECLARE
    f record;
    i int;
    v record;
    ordinary text[];
    nulls text[];
    a text[];
BEGIN
    FOR f IN
        SELECT p.oid::regprocedure AS fn, p.prokind,
               (SELECT array_agg(t::regtype ORDER BY o) FROM unnest(p.proargtypes) WITH ORDINALITY AS u(t, o)) AS types
        FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
        JOIN pg_extension e ON e.oid = d.refobjid AND d.deptype = 'e' AND e.extname = 'parca'
        -- in one order, so that the NOTICEs of the calls come in one order
        ORDER BY p.oid::regprocedure::text
    LOOP
        ordinary := '{}';
        nulls := '{}';
        FOR i IN 1 .. coalesce(array_length(f.types, 1), 0) LOOP
            ordinary := ordinary || coalesce((SELECT format('(%s)::%s', expr, type) FROM fuzz_values
                                              WHERE type = f.types[i] ORDER BY n LIMIT 1),
                                             'no values for type ' || f.types[i]);
            nulls := nulls || format('NULL::%s', f.types[i]);
        END LOOP;
        INSERT INTO fuzz_calls VALUES (f.fn, f.prokind, array_to_string(ordinary, ', ')),
                                      (f.fn, f.prokind, array_to_string(nulls, ', '));
        FOR i IN 1 .. coalesce(array_length(f.types, 1), 0) LOOP
            FOR v IN SELECT expr FROM fuzz_values WHERE type = f.types[i] ORDER BY n OFFSET 1 LOOP
                a := ordinary;
                a[i] := format('(%s)::%s', v.expr, f.types[i]);
                INSERT INTO fuzz_calls VALUES (f.fn, f.prokind, array_to_string(a, ', '));
            END LOOP;
        END LOOP;
    END LOOP;
END
$$;
SELECT count(*) FILTER (WHERE args LIKE '%no values for type%') AS types_without_values FROM fuzz_calls;
SELECT DISTINCT fn, args FROM fuzz_calls WHERE args LIKE '%no values for type%';

CREATE TEMP TABLE fuzz_results (fn regprocedure, args text, state text, message text, error_length int);
DO $$
DECLARE
    c record;
    sql text;
    state text;
    message text;
    detail text;
    hint text;
    context text;
BEGIN
    FOR c IN SELECT * FROM fuzz_calls LOOP
        sql := CASE c.kind
            -- an aggregate over one row, over three and over none
            WHEN 'a' THEN format('SELECT %1$s(%2$s), (SELECT %1$s(%2$s) FROM generate_series(1, 3)), '
                                 '(SELECT %1$s(%2$s) FROM generate_series(1, 0))',
                                 (c.fn::regproc)::text, c.args)
            ELSE format('SELECT count(*) FROM %s(%s)', (c.fn::regproc)::text, c.args) END;
        BEGIN
            EXECUTE sql;
            RAISE SQLSTATE 'ZZ000';     -- success, but roll back what it did
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
                detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT, context = PG_EXCEPTION_CONTEXT;
        END;
        INSERT INTO fuzz_results VALUES (c.fn, c.args, state, left(message, 200),
                                         octet_length(concat(message, detail, hint, context)));
    END LOOP;
END
$$;

-- every function was called, and many calls succeeded (not all refused)
SELECT count(DISTINCT fn) = (SELECT count(DISTINCT fn) FROM fuzz_calls) AS every_function,
       count(*) >= 800 AS calls, count(*) FILTER (WHERE state = 'ZZ000') >= 400 AS succeeded
FROM fuzz_results;
-- no internal errors
SELECT fn, left(args, 120) AS args, state, message FROM fuzz_results WHERE state LIKE 'XX%' ORDER BY 1, 2;
-- no long errors
SELECT fn, left(args, 120) AS args, state, message, error_length FROM fuzz_results
WHERE state <> 'ZZ000' AND error_length > 16384 ORDER BY 1, 2;
-- the documented export over no rows: NULL, not a crash
SELECT parca_pprof(parca_merge(stack, value), 'fuzz:samples:count:cpu:nanoseconds', 1) IS NULL AS no_rows_no_pprof
FROM parca.samples WHERE false;
-- still the same server
SELECT pg_postmaster_start_time() = :'started' AS same_server;
-- the calls were rolled back, but they drew series ids: later tests count from 1
TRUNCATE parca.samples, parca.series, parca.locations, parca.functions, parca.mappings RESTART IDENTITY;
