-- What a plain role may do, what ingestion refuses to store, and the
-- bounds on parsing (docs/security.md).  The attacks that need more than
-- one session (a hostile database owner, the scrape worker) are in
-- test/security/run.sh.
TRUNCATE parca.samples, parca.series, parca.locations, parca.functions, parca.mappings;

-- Every SQL and PL/pgSQL function of the extension either runs with a
-- pinned search_path or is one of these, inlinable or called per row,
-- whose bodies name everything with its schema (test/security/run.sh calls
-- them with a search_path that shadows pg_catalog).
SELECT p.oid::regprocedure AS unpinned
FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
WHERE e.extname = 'parca' AND p.prolang IN (SELECT oid FROM pg_language WHERE lanname IN ('sql', 'plpgsql'))
  AND NOT coalesce('search_path=pg_catalog, pg_temp' = ANY (p.proconfig), false)
ORDER BY 1::text;
-- The columnar functions are not for PUBLIC, and check the table too.
CREATE ROLE regress_parca_plain;
CREATE ROLE regress_parca_reader;
GRANT USAGE ON SCHEMA parca TO regress_parca_plain, regress_parca_reader;
GRANT SELECT ON parca.samples TO regress_parca_reader;
GRANT EXECUTE ON FUNCTION parca_columnar_chunks(regclass), parca_columnar_check(regclass),
    parca_columnar_compact(regclass) TO regress_parca_reader;
SET ROLE regress_parca_plain;
SELECT count(*) FROM parca_columnar_chunks('parca.samples_default');
SELECT * FROM parca_columnar_check('parca.samples_default');
SELECT parca_columnar_compact('parca.samples_default');
SET ROLE regress_parca_reader;
-- the rights on parca.samples are not rights on its partitions, which
-- are read through it (where its row-level security applies)
SELECT count(*) FROM parca.samples_default;
SELECT count(*) FROM parca_columnar_chunks('parca.samples_default');
RESET ROLE;
GRANT SELECT ON parca.samples_default TO regress_parca_reader;
SET ROLE regress_parca_reader;
SELECT count(*) FROM parca_columnar_chunks('parca.samples_default');
-- a partitioned table has no chunks of its own
SELECT count(*) FROM parca_columnar_chunks('parca.samples');
SELECT * FROM parca_columnar_check('parca.samples_default');
-- compacting is for whoever may VACUUM the table
SELECT parca_columnar_compact('parca.samples_default');
-- min and max would show rows that row-level security hides
RESET ROLE;
ALTER TABLE parca.samples_default ENABLE ROW LEVEL SECURITY;
SET ROLE regress_parca_reader;
SELECT count(*) FROM parca_columnar_chunks('parca.samples_default');
RESET ROLE;
ALTER TABLE parca.samples_default DISABLE ROW LEVEL SECURITY;
-- Row-level security on the samples holds for the query functions too
-- (parca_query reads the table directly only when none applies).
\getenv abs_srcdir PG_ABS_SRCDIR
\set profile :abs_srcdir '/data/pprof/parca/profile1.pb.gz'
SELECT parca_ingest_pprof(pg_read_binary_file(:'profile'), 'rls', '{"job": "seen"}'),
       parca_ingest_pprof(pg_read_binary_file(:'profile'), 'rls', '{"job": "hidden"}');
GRANT SELECT ON parca.series, parca.locations, parca.functions, parca.mappings TO regress_parca_reader;
ALTER TABLE parca.samples ENABLE ROW LEVEL SECURITY;
CREATE POLICY regress_seen ON parca.samples FOR SELECT TO regress_parca_reader
    USING (series_id IN (SELECT id FROM parca.series WHERE labels->>'job' = 'seen'));
SET ROLE regress_parca_reader;
SELECT parca_profile_total(parca_query('rls:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity')) AS seen,
       parca_profile_total(parca_query('rls:samples:count:cpu:nanoseconds:delta{job="hidden"}', '-infinity', 'infinity')) AS hidden,
       (SELECT count(*) FROM parca_top(parca_query('rls:samples:count:cpu:nanoseconds:delta{job="hidden"}', '-infinity', 'infinity'))) AS hidden_functions;
RESET ROLE;
DROP POLICY regress_seen ON parca.samples;
ALTER TABLE parca.samples DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON parca.series, parca.locations, parca.functions, parca.mappings FROM regress_parca_reader;
TRUNCATE parca.samples, parca.series, parca.locations, parca.functions, parca.mappings;
-- bad relations: a clean error each
SELECT * FROM parca_columnar_check(4294967000);
SELECT * FROM parca_columnar_chunks(4294967000);
SELECT parca_columnar_compact(4294967000);
SELECT * FROM parca_columnar_check('parca.series');
SELECT * FROM parca_columnar_check('parca.series_pkey');
REVOKE ALL ON SCHEMA parca FROM regress_parca_plain, regress_parca_reader;
REVOKE ALL ON parca.samples, parca.samples_default FROM regress_parca_reader;
REVOKE ALL ON FUNCTION parca_columnar_chunks(regclass), parca_columnar_check(regclass),
    parca_columnar_compact(regclass) FROM regress_parca_reader;
DROP ROLE regress_parca_plain, regress_parca_reader;

-- Strings that name series must be valid text, and fields of profile
-- types must be nameable by a selector: refused, nothing stored.
-- (Profiles made by test/security/hostile_pprof.py's strings_profile.)
-- a label value with an invalid byte
SELECT parca_ingest_pprof('\x3200320363707532026e733206746872656164320277ff0a04080110021a060801280330042a080801100118012001220d080110011880202204080110072a080802100218022002220d080210011881202204080210072a080803100318032003220d080310011882202204080310072a080804100418042004220d08041001188320220408041007120a0801100a1a0408031004120a0802100b1a0408031004120a0803100c1a0408031004120a0804100d1a0408031004', 'p');
-- a label value with a NUL
SELECT parca_ingest_pprof('\x3200320363707532026e73320674687265616432036100620a04080110021a060801280330042a080801100118012001220d080110011880202204080110072a080802100218022002220d080210011881202204080210072a080803100318032003220d080310011882202204080310072a080804100418042004220d08041001188320220408041007120a0801100a1a0408031004120a0802100b1a0408031004120a0803100c1a0408031004120a0804100d1a0408031004', 'p');
-- a label name with an invalid byte
SELECT parca_ingest_pprof('\x3200320363707532026e73320274e93201760a04080110021a060801280330042a080801100118012001220d080110011880202204080110072a080802100218022002220d080210011881202204080210072a080803100318032003220d080310011882202204080310072a080804100418042004220d08041001188320220408041007120a0801100a1a0408031004120a0802100b1a0408031004120a0803100c1a0408031004120a0804100d1a0408031004', 'p');
-- a sample type with ':', '{', a NUL; a sample unit with '"', a space
SELECT parca_ingest_pprof('\x320032056370753a7832026e730a04080110021a060801280230022a080801100118012001220d080110011880202204080110072a080802100218022002220d0802100118812022040802100712040801100a12040802100b', 'p');
SELECT parca_ingest_pprof('\x3200320463707b7532026e730a04080110021a060801280230022a080801100118012001220d080110011880202204080110072a080802100218022002220d0802100118812022040802100712040801100a12040802100b', 'p');
SELECT parca_ingest_pprof('\x32003205637075007832026e730a04080110021a060801280230022a080801100118012001220d080110011880202204080110072a080802100218022002220d0802100118812022040802100712040801100a12040802100b', 'p');
SELECT parca_ingest_pprof('\x3200320363707532036e22730a04080110021a060801280230022a080801100118012001220d080110011880202204080110072a080802100218022002220d0802100118812022040802100712040801100a12040802100b', 'p');
SELECT parca_ingest_pprof('\x3200320363707532036e20730a04080110021a060801280230022a080801100118012001220d080110011880202204080110072a080802100218022002220d0802100118812022040802100712040801100a12040802100b', 'p');
-- a period type with an invalid byte
SELECT parca_ingest_pprof('\x3200320363707532026e733204ff6370750a04080110025a04080310021a060801280330042a080801100118012001220d080110011880202204080110072a080802100218022002220d080210011881202204080210072a080803100318032003220d0803100118822022040803100712040801100a12040802100b12040803100c', 'p');
SELECT count(*) AS nothing_stored FROM parca.series;
-- a label value with a tab and a control character is text: stored
SELECT parca_ingest_pprof('\x3200320363707532026e73320674687265616432097461620968657265010a04080110021a060801280330042a080801100118012001220d080110011880202204080110072a080802100218022002220d080210011881202204080210072a080803100318032003220d080310011882202204080310072a080804100418042004220d08041001188320220408041007120a0801100a1a0408031004120a0802100b1a0408031004120a0803100c1a0408031004120a0804100d1a0408031004', 'p');
SELECT profile_type, labels FROM parca.series;
-- a location is text already (its input function checks it): no NUL
SELECT parca_register_location('{"address": 1, "lines": [{"function": "a\u0000b"}]}');
-- writers that make series themselves are held to the same profile types
SELECT parca_series_id('a:b:c:d:e{x="y"}', '{}');
SELECT parca_series_id('a:b c:d:e:f', '{}');
SELECT parca_series_id(':b:c:d:e', '{}');
SELECT parca_series_id(E'a:b:c:d:e\x01', '{}');

-- Quadratic parsing, bounded: each of these took minutes before.  The
-- timeout turns a regression into an error instead of a hang; 20 s is a
-- hundred times what each takes on a loaded 2-core machine.
SET statement_timeout = '20s';
-- 1 MB to percent-encode (6.6 s for 100 kB before: quadratic)
SELECT length(parca.scrape_url_encode(repeat('é', 500000)));
SELECT parca.scrape_url_encode('a b/é~-._'), parca.scrape_url_encode('');
-- YAML nested 200,000 levels deep, in flow and in block style
SELECT * FROM parca_scrape_import_yaml(repeat('[', 200000));
SELECT * FROM parca_scrape_import_yaml('a: ' || repeat('{a: ', 200000));
SELECT * FROM parca_scrape_import_yaml(repeat('- ', 200000) || 'x');
-- 64 levels are fine
SELECT * FROM parca_scrape_import_yaml('scrape_configs: ' || repeat('[', 63) || repeat(']', 63));
-- larger than 16 MB
SELECT * FROM parca_scrape_import_yaml(repeat('#', 16 * 1024 * 1024 + 1));
-- a NUL from an escape is not text
SELECT * FROM parca_scrape_import_yaml(E'scrape_configs:\n  - job_name: "a\\0b"');
RESET statement_timeout;
