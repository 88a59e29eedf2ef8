-- parca_ingest_pprof: what it stores, and what it refuses.
\getenv abs_srcdir PG_ABS_SRCDIR
\set alloc :abs_srcdir '/data/pprof/parca/alloc_objects.pb.gz'
\set labels :abs_srcdir '/data/pprof/parca/profile-with-labels.pb.gz'
\set bomb :abs_srcdir '/data/bomb.gz'
TRUNCATE parca.samples, parca.series, parca.locations, parca.functions, parca.mappings;

-- one profile type per sample type; rows only for non-zero values
SELECT parca_ingest_pprof(pg_read_binary_file(:'alloc'), 'memory', '{"job": "api", "instance": "10.0.0.1:6060"}');
SELECT profile_type, labels, count(*), sum(value), min(period), min(duration), min(time)
FROM parca.samples s JOIN parca.series se ON se.id = s.series_id
GROUP BY 1, 2 ORDER BY 1;
-- numeric labels are kept per sample
SELECT num_labels FROM parca.samples WHERE num_labels IS NOT NULL GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 3;
-- addresses normalized to the file: 0x934840 in the mapping 0x400000-0x162d000 at offset 0
SELECT l.address = x'534840'::bigint AS normalized, f.name
FROM parca.locations l JOIN parca.functions f ON f.id = l.function_ids[1]
WHERE f.name = 'k8s.io/apimachinery/pkg/util/net.CloneHeader' ORDER BY 1;

-- pprof string labels join the series labels (sanitized names; caller wins)
SELECT parca_ingest_pprof(pg_read_binary_file(:'labels'), 'process_cpu', '{"job": "x"}');
SELECT profile_type, labels FROM parca.series WHERE labels->>'job' = 'x' ORDER BY 2::text LIMIT 4;

-- the same profile again: values double, no new metadata
SELECT count(*) AS locations FROM parca.locations \gset
SELECT parca_ingest_pprof(pg_read_binary_file(:'alloc'), 'memory', '{"job": "api", "instance": "10.0.0.1:6060"}');
SELECT count(*) = :locations AS no_new_locations FROM parca.locations;
SELECT count(DISTINCT series_id), count(*) FROM parca.samples;

-- bad arguments
SELECT parca_ingest_pprof(pg_read_binary_file(:'alloc'), 'bad:name');
SELECT parca_ingest_pprof(pg_read_binary_file(:'alloc'), '');
SELECT parca_ingest_pprof(pg_read_binary_file(:'alloc'), 'm', '{"1bad": "x"}');
SELECT parca_ingest_pprof(pg_read_binary_file(:'alloc'), 'm', '{"ok": 1}');
SELECT parca_ingest_pprof(pg_read_binary_file(:'alloc'), 'm', '[]');
SELECT parca_ingest_pprof(NULL, 'm');

-- malformed profiles: a clear error each, and nothing stored
SELECT count(*) AS rows_before FROM parca.samples \gset
-- empty
SELECT parca_ingest_pprof('', 'm');
-- random bytes
SELECT parca_ingest_pprof('\xdeadbeefcafebabe0123456789', 'm');
-- truncated gzip
SELECT parca_ingest_pprof(substring(pg_read_binary_file(:'alloc') from 1 for 5000), 'm');
-- a minimal valid profile: sample_type {1,2}, a sample at location 1 with value 5, location 1, strings "", "cpu", "ns"
SELECT parca_ingest_pprof('\x0a040801100212060a0101120105220208013200320363707532026e73', 'valid');
-- truncated protobuf (the last string cut short)
SELECT parca_ingest_pprof('\x0a040801100212060a0101120105220208013200320363707532026e', 'm');
-- string index out of range
SELECT parca_ingest_pprof('\x0a040809100212060a0101120105220208013200320363707532026e73', 'm');
-- location id that does not exist
SELECT parca_ingest_pprof('\x0a040801100212060a0107120105220208013200320363707532026e73', 'm');
-- sample with the wrong number of values
SELECT parca_ingest_pprof('\x0a040801100212070a010112020506220208013200320363707532026e73', 'm');
-- string table not starting with ""
SELECT parca_ingest_pprof('\x0a040801100212060a010112010522020801320161320363707532026e73', 'm');
-- a gzip bomb (300 MB of zeros) stops at parca.max_profile_size
SELECT parca_ingest_pprof(pg_read_binary_file(:'bomb'), 'm');
-- the limit applies to plain input too
SET parca.max_profile_size = '16kB';
SELECT parca_ingest_pprof(pg_read_binary_file(:'alloc'), 'm');
SELECT parca_ingest_pprof(decode(repeat('00', 20000), 'hex'), 'm');
RESET parca.max_profile_size;
SELECT count(*) - :rows_before AS rows_added FROM parca.samples;
SELECT profile_type FROM parca.series WHERE profile_type LIKE 'm:%' OR profile_type LIKE 'valid:%';

-- an error inside a transaction leaves nothing, and the cache forgets it
BEGIN;
SELECT parca_ingest_pprof(pg_read_binary_file(:'labels'), 'rolled_back');
ROLLBACK;
SELECT count(*) FROM parca.series WHERE profile_type LIKE 'rolled_back:%';
SELECT parca_ingest_pprof(pg_read_binary_file(:'labels'), 'rolled_back') > 0 AS stored_again;
SELECT count(*) > 0 AS series_exist FROM parca.series WHERE profile_type LIKE 'rolled_back:%';
-- metadata rolled back with a savepoint is registered again
TRUNCATE parca.samples, parca.series, parca.locations, parca.functions, parca.mappings;
BEGIN;
SAVEPOINT s;
SELECT parca_ingest_pprof(pg_read_binary_file(:'labels'), 'sp');
ROLLBACK TO s;
SELECT parca_ingest_pprof(pg_read_binary_file(:'labels'), 'sp');
COMMIT;
SELECT count(*) = (SELECT count(DISTINCT l) FROM parca.samples, unnest(parca_stack_location_ids(stack)) l)
       AS every_location_stored
FROM parca.locations;

-- series ids for writers that COPY samples themselves
SELECT parca_series_id('parca_agent:samples:count:cpu:nanoseconds:delta', '{"node": "a"}') =
       parca_series_id('parca_agent:samples:count:cpu:nanoseconds:delta', '{"node": "a"}') AS same;
SELECT parca_series_id('not-a-type', '{}');
SELECT parca_series_id('a:b:c:d:e:notdelta', '{}');

-- How rows reach parca.samples: straight to the access method as the
-- extension made the table, by an INSERT statement once it has a trigger;
-- both store the same rows.  An index and a CHECK constraint hold either way.
TRUNCATE parca.samples, parca.series, parca.locations, parca.functions, parca.mappings;
CREATE INDEX samples_series_idx ON parca.samples (series_id);
SELECT parca_ingest_pprof(pg_read_binary_file(:'alloc'), 'direct');
CREATE TABLE trigger_calls (n bigint);
CREATE FUNCTION count_sample_rows() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN INSERT INTO trigger_calls SELECT count(*) FROM new_rows; RETURN NULL; END $$;
CREATE TRIGGER count_rows AFTER INSERT ON parca.samples
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION count_sample_rows();
SELECT parca_ingest_pprof(pg_read_binary_file(:'alloc'), 'by_statement');
SELECT n AS trigger_saw FROM trigger_calls;
SELECT split_part(se.profile_type, ':', 1) AS path, count(*), sum(value),
       count(num_labels) AS with_num_labels, count(DISTINCT stack) AS stacks
FROM parca.samples s JOIN parca.series se ON se.id = s.series_id
GROUP BY 1 ORDER BY 1;
DROP TRIGGER count_rows ON parca.samples;
-- the index has every row of both paths
SET enable_seqscan = off;
SET parca.columnar_enable_custom_scan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM parca.samples WHERE series_id = ANY (SELECT id FROM parca.series);
SELECT count(*) AS found_by_index FROM parca.samples WHERE series_id = ANY (SELECT id FROM parca.series);
RESET enable_seqscan;
RESET parca.columnar_enable_custom_scan;
DROP INDEX parca.samples_series_idx;
-- a CHECK constraint refuses the profile and nothing of it stays
ALTER TABLE parca.samples ADD CONSTRAINT small_values CHECK (value < 1000000) NOT VALID;
\set VERBOSITY terse
SELECT parca_ingest_pprof(pg_read_binary_file(:'alloc'), 'checked');
\set VERBOSITY default
ALTER TABLE parca.samples DROP CONSTRAINT small_values;
SELECT count(*) AS checked_rows FROM parca.samples s JOIN parca.series se ON se.id = s.series_id
WHERE se.profile_type LIKE 'checked:%';
-- a role that may write the metastore but not parca.samples is refused
CREATE ROLE metastore_writer;
GRANT USAGE ON SCHEMA parca TO metastore_writer;
GRANT SELECT, INSERT, UPDATE ON parca.mappings, parca.functions, parca.locations, parca.series
    TO metastore_writer;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA parca TO metastore_writer;
SELECT pg_read_binary_file(:'alloc') AS alloc_bytes \gset
SET ROLE metastore_writer;
SELECT parca_ingest_pprof(:'alloc_bytes', 'direct');
RESET ROLE;
DROP OWNED BY metastore_writer;
DROP ROLE metastore_writer;
