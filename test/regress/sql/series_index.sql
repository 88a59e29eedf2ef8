-- The series index (sql/30_metastore.sql, src/metastore/series_index.c): selectors
-- and discovery answer exactly as the plain evaluation over parca.series
-- and parca.samples did, read only the series they match, and the index
-- follows every change of the series and samples.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS parca;
RESET client_min_messages;
TRUNCATE parca.samples, parca.series;
SELECT setseed(0.25);

-- Random label sets over three profile types: values that selectors,
-- regexes, SQL and JSON quote, empty values, absent labels.
CREATE TABLE pool (i int, v text);
INSERT INTO pool VALUES (0, ''), (1, 'a'), (2, 'a.b'), (3, 'a/b'), (4, 'it''s'), (5, 'say "hi"'),
    (6, 'C:\temp'), (7, 'x y'), (8, 'ünï'), (9, 'a|b'), (10, '.*'), (11, 'ab'), (12, 'A');
CREATE TABLE names (i int, n text);
INSERT INTO names VALUES (0, 'job'), (1, 'instance'), (2, 'pod'), (3, 'path');
CREATE FUNCTION pick(a text[]) RETURNS text LANGUAGE sql VOLATILE AS $$
    SELECT a[1 + floor(random() * cardinality(a))::int]
$$;
INSERT INTO parca.series (profile_type, labels)
SELECT DISTINCT t, labels FROM (
    SELECT pick(ARRAY['sidx:a:b:c:d', 'sidx:e:f:g:h:delta', 'sidx2:a:b:c:d']) AS t,
           (SELECT coalesce(jsonb_object_agg(n, pick(ARRAY(SELECT v FROM pool ORDER BY i))), '{}')
            FROM names WHERE random() < 0.7 + g * 0) AS labels
    FROM generate_series(1, 1500) g) x;
SELECT count(*) > 1000 AS many_series FROM parca.series WHERE profile_type LIKE 'sidx%';

-- The plain evaluation: every matcher as coalesce(labels ->> name, '') op value.
CREATE FUNCTION plain_ids(ptype text, m jsonb) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    q text := 'SELECT coalesce(array_agg(id ORDER BY id), ''{}'') FROM parca.series WHERE true';
    r jsonb;
    result bigint[];
BEGIN
    IF ptype IS NOT NULL THEN
        q := q || format(' AND profile_type = %L', ptype);
    END IF;
    FOR r IN SELECT * FROM jsonb_array_elements(m) LOOP
        q := q || format(' AND coalesce(labels ->> %L, '''') %s %L', r->>'n',
                         CASE r->>'op' WHEN '=' THEN '=' WHEN '!=' THEN '<>' WHEN '=~' THEN '~' ELSE '!~' END,
                         CASE WHEN r->>'op' IN ('=~', '!~') THEN '^(?:' || (r->>'v') || ')$' ELSE r->>'v' END);
    END LOOP;
    EXECUTE q INTO result;
    RETURN result;
END $$;
-- A selector's text: each value quoted, its backslashes and quotes escaped.
CREATE FUNCTION selector_text(ptype text, m jsonb) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(ptype, '') || '{' || coalesce(string_agg(r->>'n' || (r->>'op') || '"' ||
           replace(replace(replace(r->>'v', E'\\', E'\\\\'), '"', E'\\"'), E'\n', E'\\n') || '"', ', '), '') || '}'
    FROM jsonb_array_elements(m) r
$$;

-- Random selectors of every matcher kind: equality with values of the
-- pool (the empty one: the series without the label), regexes that are
-- plain alternatives (as parca_selector writes them), that match the
-- empty string, that list many values; negations; no profile type.
CREATE TABLE regexes (i int, re text);
INSERT INTO regexes VALUES (0, 'a.*'), (1, '.*'), (2, ''), (3, 'a\.b'), (4, 'a|b'), (5, 'x y|a/b'),
    (6, '[a-c].*'), (7, 'it.s'), (8, '.+'), (9, 'C:\\temp'), (10, 'a\.b|a\/b|say "hi"'), (11, 'a\|b'),
    (12, '[[:upper:]]'), (13, 'A|'), (14, 'ünï|\.\*');
CREATE TABLE selectors AS
SELECT g, CASE WHEN random() < 0.15 THEN NULL
               ELSE pick(ARRAY['sidx:a:b:c:d', 'sidx:e:f:g:h:delta', 'sidx2:a:b:c:d', 'sidx:none:b:c:d']) END AS ptype,
       (SELECT coalesce(jsonb_agg(jsonb_build_object('n', n, 'op', op,
                                                     'v', CASE WHEN op IN ('=~', '!~') THEN pick(ARRAY(SELECT re FROM regexes ORDER BY i))
                                                               ELSE pick(ARRAY(SELECT v FROM pool ORDER BY i)) END)), '[]')
        FROM (SELECT pick(ARRAY(SELECT n FROM names ORDER BY i)) AS n, pick(ARRAY['=', '=', '=~', '=~', '!=', '!~']) AS op
              FROM generate_series(1, floor(random() * 4 + g * 0)::int) k) ms) AS m
FROM generate_series(1, 600) g;
SELECT count(*) AS selectors,
       count(*) FILTER (WHERE cardinality(plain_ids(ptype, m)) > 0) AS matching_some,
       count(*) FILTER (WHERE m @> '[{"op": "="}]') AS with_equality,
       count(*) FILTER (WHERE m @> '[{"op": "=~"}]') AS with_regex,
       count(*) FILTER (WHERE m @> '[{"op": "!="}]' OR m @> '[{"op": "!~"}]') AS with_negation
FROM selectors;
ALTER TABLE selectors ADD COLUMN plain bigint[];
UPDATE selectors SET plain = plain_ids(ptype, m);
-- the same series as the plain evaluation, selector by selector
SELECT s.g, selector_text(s.ptype, s.m) AS selector, s.plain, parca_series_ids(selector_text(s.ptype, s.m)) AS indexed
FROM selectors s
WHERE s.plain IS DISTINCT FROM parca_series_ids(selector_text(s.ptype, s.m));

-- Discovery without a time range: the labels and values of the series
-- matched, as parca.series has them.
SELECT s.g, selector_text(s.ptype, s.m) AS selector
FROM selectors s
WHERE ARRAY(SELECT parca_labels(selector_text(s.ptype, s.m)))
      IS DISTINCT FROM ARRAY(SELECT DISTINCT k FROM parca.series se, jsonb_object_keys(se.labels) k
                             WHERE se.id = ANY (s.plain) ORDER BY 1)
   OR ARRAY(SELECT parca_label_values('job', selector_text(s.ptype, s.m)))
      IS DISTINCT FROM ARRAY(SELECT DISTINCT se.labels ->> 'job' FROM parca.series se
                             WHERE se.id = ANY (s.plain) AND se.labels ? 'job' ORDER BY 1);
-- a type's labels, every type's
SELECT t, ARRAY(SELECT parca_labels(t)) = ARRAY(SELECT DISTINCT k FROM parca.series, jsonb_object_keys(labels) k
                                                WHERE t IN (profile_type, '{}') ORDER BY 1) AS labels_same,
       ARRAY(SELECT parca_label_values('pod', t)) = ARRAY(SELECT DISTINCT labels ->> 'pod' FROM parca.series
                                                          WHERE t IN (profile_type, '{}') AND labels ? 'pod' ORDER BY 1) AS values_same
FROM unnest(ARRAY['sidx:a:b:c:d', 'sidx:e:f:g:h:delta', 'sidx2:a:b:c:d', 'sidx:none:b:c:d', '{}']) t;
SELECT ARRAY(SELECT parca_profile_types()) = ARRAY(SELECT DISTINCT profile_type FROM parca.series ORDER BY 1) AS types_same;

-- Discovery over a time range.  Sample rows of about half the series, in
-- hours of 2024-03-01 (some at an hour's first and last microsecond).
CREATE TABLE sampled AS
SELECT id, timestamptz '2024-03-01 00:00+00' + floor(random() * 6 + id * 0) * interval '1 hour'
           + pick(ARRAY['0', '1 hour - 1 microsecond', '17 minutes'])::interval AS time
FROM parca.series WHERE random() < 0.5;
INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
SELECT time, id, '{}', 1, 1, 0 FROM sampled;
-- the index has the hours of exactly those rows
SELECT (SELECT count(*) FROM parca.series_hours a JOIN parca.series s ON s.id = a.series_id WHERE s.profile_type LIKE 'sidx%')
       = (SELECT count(DISTINCT (id, date_trunc('hour', time AT TIME ZONE 'UTC'))) FROM sampled) AS hours_recorded;
CREATE FUNCTION plain_labels(ids bigint[], start timestamptz, stop timestamptz, label text DEFAULT NULL)
RETURNS text[] LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN label IS NULL
        THEN ARRAY(SELECT DISTINCT k FROM parca.series s, jsonb_object_keys(s.labels) k
                   WHERE s.id = ANY (ids)
                     AND s.id IN (SELECT series_id FROM parca.samples WHERE time >= start AND time <= stop) ORDER BY 1)
        ELSE ARRAY(SELECT DISTINCT s.labels ->> label FROM parca.series s
                   WHERE s.id = ANY (ids) AND s.labels ? label
                     AND s.id IN (SELECT series_id FROM parca.samples WHERE time >= start AND time <= stop) ORDER BY 1) END
$$;
-- Ranges of whole hours ([h, h + n hours - 1 microsecond]) count the same
-- series as the sample rows do; other ranges count the series of the
-- hours they meet: never fewer.
CREATE TABLE ranges AS
SELECT g, start, CASE WHEN g % 2 = 0 THEN start + n * interval '1 hour' - interval '1 microsecond'
                      ELSE start + (random() * 200 + g * 0) * interval '1 minute' END AS stop
FROM (SELECT g, timestamptz '2024-02-29 23:00+00' + floor(random() * 8 + g * 0) * interval '1 hour'
                + CASE WHEN g % 2 = 0 THEN interval '0' ELSE random() * 59 * interval '1 minute' END AS start,
             1 + floor(random() * 3 + g * 0) AS n
      FROM generate_series(1, 16) g) r;
SELECT count(*) FILTER (WHERE NOT same_labels) AS labels_differ, count(*) FILTER (WHERE NOT same_values) AS values_differ,
       count(*) FILTER (WHERE NOT more_labels) AS labels_missing, count(*) FILTER (WHERE NOT more_values) AS values_missing,
       count(*) FILTER (WHERE cardinality(plain_names) > 0) AS cases_with_labels, count(*) AS cases
FROM (SELECT (r.g % 2 = 1 OR indexed = plain_names) AS same_labels, indexed @> plain_names AS more_labels, plain_names,
             (r.g % 2 = 1 OR indexed_values = plain_values) AS same_values, indexed_values @> plain_values AS more_values
      FROM ranges r, (SELECT ptype, m, plain FROM selectors WHERE g <= 12
                      UNION ALL SELECT t, '[]', plain_ids(t, '[]') FROM unnest(ARRAY['sidx:a:b:c:d', 'sidx2:a:b:c:d', NULL]) t) s,
           LATERAL (SELECT ARRAY(SELECT parca_labels(selector_text(s.ptype, s.m), r.start, r.stop)) AS indexed,
                           plain_labels(s.plain, r.start, r.stop) AS plain_names,
                           ARRAY(SELECT parca_label_values('job', selector_text(s.ptype, s.m), r.start, r.stop)) AS indexed_values,
                           plain_labels(s.plain, r.start, r.stop, 'job') AS plain_values) c) x;
SELECT count(*) FILTER (WHERE NOT (r.g % 2 = 1 OR indexed = plain)) AS types_differ,
       count(*) FILTER (WHERE NOT indexed @> plain) AS types_missing, count(*) AS cases
FROM ranges r,
     LATERAL (SELECT ARRAY(SELECT parca_profile_types(r.start, r.stop)) AS indexed,
                     ARRAY(SELECT DISTINCT profile_type FROM parca.series
                           WHERE id IN (SELECT series_id FROM parca.samples WHERE time >= r.start AND time <= r.stop)
                           ORDER BY 1) AS plain) c;
-- a range that ends before it starts holds nothing; the edges of an hour
SELECT count(*) FROM parca_labels('sidx:a:b:c:d', '2024-03-01 03:00+00', '2024-03-01 02:00+00');
SELECT count(*) FROM parca_label_values('job', 'sidx:a:b:c:d', '2024-03-01 03:00+00', '2024-03-01 02:00+00');
SELECT count(*) FROM parca_profile_types('2024-03-01 03:00+00', '2024-03-01 02:00+00');
SELECT ARRAY(SELECT parca_label_values('job', 'sidx:a:b:c:d', '2024-03-01 06:00+00', 'infinity')) AS after_the_last_hour,
       ARRAY(SELECT parca_label_values('job', 'sidx:a:b:c:d', '-infinity', '2024-02-29 23:59:59.999999+00')) AS before_the_first;

-- Read only what matches: a selector of a few series among many reads
-- those rows of parca.series (counted by the statistics of this
-- transaction), and discovery of a type reads none.
INSERT INTO parca.series (profile_type, labels)
SELECT 'sidx_many:a:b:c:d', jsonb_build_object('node', 'n' || (g % 4), 'comm', 'c' || (g % 50),
                                               'pid', (g / 4)::text, 'thread_id', g::text)
FROM generate_series(1, 20000) g;
INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
SELECT '2024-03-01 12:00+00', id, '{}', 1, 1, 0 FROM parca.series
WHERE profile_type = 'sidx_many:a:b:c:d' AND (labels ->> 'thread_id')::int <= 100;
ANALYZE parca.series;
CREATE FUNCTION series_rows_read(query text) RETURNS TABLE (result bigint, rows_read bigint) LANGUAGE plpgsql AS $$
DECLARE
    before bigint;
BEGIN
    SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) INTO before
    FROM pg_stat_xact_user_tables WHERE relid = 'parca.series'::regclass;
    EXECUTE query INTO result;
    SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) - before INTO rows_read
    FROM pg_stat_xact_user_tables WHERE relid = 'parca.series'::regclass;
    RETURN NEXT;
END $$;
SELECT q, r.result, r.rows_read <= 20 AS few_rows_read
FROM unnest(ARRAY[
    $$SELECT cardinality(parca_series_ids('sidx_many:a:b:c:d{pid="1234"}'))$$,
    $$SELECT cardinality(parca_series_ids('sidx_many:a:b:c:d{comm="c7", pid=~"10[0-9]"}'))$$,
    $$SELECT cardinality(parca_series_ids('sidx_many:a:b:c:d{pid=~"1234|4321|99999", thread_id!="4936"}'))$$,
    $$SELECT cardinality(parca_series_ids('{pid="1234", node="n0"}'))$$,
    $$SELECT cardinality(parca_series_ids('sidx_many:a:b:c:d{thread_id=~"1234[0-9]", node!~"n[12]"}'))$$,
    $$SELECT count(*) FROM parca_labels('sidx_many:a:b:c:d')$$,
    $$SELECT count(*) FROM parca_label_values('comm', 'sidx_many:a:b:c:d')$$,
    $$SELECT count(*) FROM parca_label_values('pid', 'sidx_many:a:b:c:d{thread_id="77"}')$$,
    $$SELECT count(*) FROM parca_labels('sidx_many:a:b:c:d', '2024-03-01', '2024-03-02')$$,
    $$SELECT count(*) FROM parca_label_values('pid', 'sidx_many:a:b:c:d', '2024-03-01', '2024-03-02')$$,
    $$SELECT count(*) FROM parca_label_values('pid', 'sidx_many:a:b:c:d{thread_id=~"5[0-4]"}', '2024-03-01', '2024-03-02')$$,
    $$SELECT count(*) FROM parca_profile_types('2024-03-01', '2024-03-02')$$]) q,
     series_rows_read(q) r;
-- only negative matchers, or a regex matching the empty string: the
-- type's series are read
SELECT r.result, r.rows_read >= 20000 AS type_read
FROM series_rows_read($$SELECT cardinality(parca_series_ids('sidx_many:a:b:c:d{pid!="1", comm=~"c1|"}'))$$) r;

-- The index follows the series: values of series removed go when no
-- series has them, values of a subtransaction rolled back are not kept.
SELECT parca_series_id('sidx3:a:b:c:d', '{"job": "keep", "only": "one"}') > 0 AS stored,
       parca_series_id('sidx3:a:b:c:d', '{"job": "keep"}') > 0 AS stored;
SELECT name, value FROM parca.label_values WHERE profile_type = 'sidx3:a:b:c:d' ORDER BY 1, 2;
DELETE FROM parca.series WHERE profile_type = 'sidx3:a:b:c:d' AND labels ? 'only';
SELECT name, value FROM parca.label_values WHERE profile_type = 'sidx3:a:b:c:d' ORDER BY 1, 2;
BEGIN;
SAVEPOINT s;
SELECT parca_series_id('sidx3:a:b:c:d', '{"job": "gone"}') > 0 AS stored;
ROLLBACK TO SAVEPOINT s;
SELECT parca_series_id('sidx3:a:b:c:d', '{"job": "kept"}') > 0 AS stored;
COMMIT;
SELECT name, value FROM parca.label_values WHERE profile_type = 'sidx3:a:b:c:d' ORDER BY 1, 2;
SELECT * FROM parca_label_values('job', 'sidx3:a:b:c:d');
-- a series changed in place: its old values go, its new ones come
UPDATE parca.series SET labels = '{"job": "changed"}' WHERE profile_type = 'sidx3:a:b:c:d' AND labels ->> 'job' = 'kept';
SELECT * FROM parca_label_values('job', 'sidx3:a:b:c:d');
SELECT * FROM parca_series_ids('sidx3:a:b:c:d{job="kept"}');
SELECT cardinality(parca_series_ids('sidx3:a:b:c:d{job="changed"}'));
-- rows into a partition of parca.samples in a subtransaction rolled back
-- leave no hour; those of the transaction do
BEGIN;
SAVEPOINT s;
INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
SELECT '2024-03-02 05:30+00', id, '{}', 1, 1, 0 FROM parca.series WHERE profile_type = 'sidx3:a:b:c:d';
ROLLBACK TO SAVEPOINT s;
INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
SELECT '2024-03-02 07:59:59.999999+00', id, '{}', 1, 1, 0 FROM parca.series WHERE profile_type = 'sidx3:a:b:c:d';
COMMIT;
SELECT a.hour, count(*) FROM parca.series_hours a JOIN parca.series s ON s.id = a.series_id
WHERE s.profile_type = 'sidx3:a:b:c:d' GROUP BY 1 ORDER BY 1;
SELECT * FROM parca_profile_types('2024-03-02 07:00+00', '2024-03-02 08:00+00');
SELECT * FROM parca_label_values('job', '{}', '2024-03-02 07:00+00', '2024-03-02 08:00+00');

-- Built again from the tables, the index holds what it held (rows of
-- series that are gone aside: nothing reads them).
CREATE TABLE before_values AS SELECT DISTINCT * FROM parca.label_values;
CREATE TABLE before_hours AS SELECT DISTINCT a.* FROM parca.series_hours a JOIN parca.series s ON s.id = a.series_id;
CREATE TABLE before_label_hours AS SELECT DISTINCT * FROM parca.label_hours;
SELECT parca_series_index_rebuild();
SELECT (SELECT count(*) FROM (SELECT DISTINCT * FROM parca.label_values EXCEPT SELECT * FROM before_values) x) AS values_added,
       (SELECT count(*) FROM (SELECT * FROM before_values EXCEPT SELECT * FROM parca.label_values) x) AS values_lost,
       (SELECT count(*) FROM (SELECT a.* FROM parca.series_hours a JOIN parca.series s ON s.id = a.series_id
                              EXCEPT SELECT * FROM before_hours) x) AS hours_added,
       (SELECT count(*) FROM (SELECT * FROM before_hours EXCEPT SELECT * FROM parca.series_hours) x) AS hours_lost,
       (SELECT count(*) FROM (SELECT * FROM parca.label_hours EXCEPT SELECT * FROM before_label_hours) x) AS label_hours_added,
       (SELECT count(*) FROM (SELECT * FROM before_label_hours EXCEPT SELECT * FROM parca.label_hours) x) AS label_hours_lost;

-- The tables are the index's: nobody but their owner writes or reads them,
-- and a writer needs no right on them.
CREATE ROLE regress_sidx_writer;
GRANT USAGE ON SCHEMA parca TO regress_sidx_writer;
GRANT SELECT, INSERT ON parca.series TO regress_sidx_writer;
GRANT INSERT ON parca.samples TO regress_sidx_writer;
GRANT EXECUTE ON FUNCTION parca_series_id(text, jsonb) TO regress_sidx_writer;
SET ROLE regress_sidx_writer;
SELECT count(*) FROM parca.label_values;
INSERT INTO parca.label_hours VALUES ('forged', 'job', now(), 'x');
INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
SELECT '2024-03-03 01:00+00', parca_series_id('sidx4:a:b:c:d', '{"job": "by writer"}'), '{}', 1, 1, 0;
-- a reader that may read parca.series: discovery without a range
SELECT * FROM parca_label_values('job', 'sidx4:a:b:c:d');
-- but not parca.samples: over a range, what its own reads find
SELECT * FROM parca_label_values('job', 'sidx4:a:b:c:d', '2024-03-03', '2024-03-04');
RESET ROLE;
SELECT * FROM parca_label_values('job', 'sidx4:a:b:c:d', '2024-03-03', '2024-03-04');
-- row-level security on parca.series: the caller's own reads answer
CREATE ROLE regress_sidx_reader;
GRANT USAGE ON SCHEMA parca TO regress_sidx_reader;
GRANT SELECT ON parca.series, parca.samples TO regress_sidx_reader;
ALTER TABLE parca.series ENABLE ROW LEVEL SECURITY;
CREATE POLICY sidx_only_kept ON parca.series TO regress_sidx_reader USING (labels ->> 'job' <> 'by writer');
SET ROLE regress_sidx_reader;
SELECT * FROM parca_label_values('job', 'sidx4:a:b:c:d');
SELECT * FROM parca_label_values('job', 'sidx4:a:b:c:d', '2024-03-03', '2024-03-04');
SELECT * FROM parca_labels('sidx4:a:b:c:d');
SELECT * FROM parca_profile_types();
RESET ROLE;
DROP POLICY sidx_only_kept ON parca.series;
ALTER TABLE parca.series DISABLE ROW LEVEL SECURITY;

-- TRUNCATE empties the index with the series
BEGIN;
TRUNCATE parca.samples, parca.series;
SELECT (SELECT count(*) FROM parca.label_values) + (SELECT count(*) FROM parca.series_hours)
       + (SELECT count(*) FROM parca.label_hours) AS index_rows;
ROLLBACK;

-- NULL arguments
SELECT count(*) FROM parca_label_values(NULL);
SELECT count(*) FROM parca_labels(NULL) WHERE parca_labels LIKE 'xyz%';
SELECT count(*) FROM parca_profile_types(NULL, now());
SELECT parca.series_label_keys('t', '{"a": "b", "n": 1, "z": null}') = ARRAY[
           (parca.series_label_keys('t', '{"a": "b"}'))[1], (parca.series_label_keys('t', '{"n": "1"}'))[1]] AS keys_as_text,
       parca.series_label_keys('t', '[1, 2]') AS not_an_object;

TRUNCATE parca.samples, parca.series;
DROP OWNED BY regress_sidx_writer;
DROP ROLE regress_sidx_writer;
DROP OWNED BY regress_sidx_reader;
DROP ROLE regress_sidx_reader;
DROP FUNCTION pick(text[]), series_rows_read(text), plain_labels(bigint[], timestamptz, timestamptz, text),
    selector_text(text, jsonb), plain_ids(text, jsonb);
DROP TABLE pool, names, regexes, selectors, sampled, ranges, before_values, before_hours, before_label_hours;
