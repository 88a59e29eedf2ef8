-- Scrape configuration tables: defaults, URLs and labels, validation,
-- privileges.  (The worker itself is tested end to end in test/scrape.)
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS parca;
RESET client_min_messages;

-- A new job gets Parca's five default profiles.
INSERT INTO parca.scrape_jobs (job_name) VALUES ('api');
SELECT job_name, scrape_interval, scrape_timeout, scheme, path_prefix, params, file_sd_files
  FROM parca.scrape_jobs;
SELECT name, enabled, path, delta FROM parca.scrape_profiles ORDER BY name;

-- Endpoints: one per target and enabled profile; delta adds seconds=.
INSERT INTO parca.scrape_targets VALUES ('api', '10.0.0.1:6060', '{"env": "prod"}');
SELECT url, labels, profile, interval_ms, timeout_ms FROM parca.scrape_endpoints();

-- Path prefix, extra parameters (encoded, repeated), a custom profile,
-- a disabled default, https.
UPDATE parca.scrape_jobs
   SET path_prefix = '/app', scheme = 'https', scrape_interval = '15 s',
       params = '{"debug": "1", "tag": ["a b", "c&d"]}';
UPDATE parca.scrape_profiles SET enabled = false WHERE name <> 'process_cpu';
INSERT INTO parca.scrape_profiles (job_name, name, path, delta) VALUES ('api', 'fgprof', '/debug/fgprof', true);
SELECT url, labels->>'__name__' AS name, timeout_ms FROM parca.scrape_endpoints();
-- Inserting a profile the job has sets it.
INSERT INTO parca.scrape_profiles (job_name, name, enabled, path) VALUES ('api', 'memory', false, '/debug/pprof/heap');
SELECT name, enabled, path, delta FROM parca.scrape_profiles WHERE name = 'memory';

-- file_sd targets given by the worker join the static ones.
SELECT url, labels FROM parca.scrape_endpoints(
    '{"api": [{"address": "10.0.0.2:6060", "labels": {"team": "sd"}}]}')
 WHERE labels->>'__name__' = 'fgprof';

-- A disabled job has no endpoints.
UPDATE parca.scrape_jobs SET enabled = false;
SELECT count(*) FROM parca.scrape_endpoints();
UPDATE parca.scrape_jobs SET enabled = true;

-- Percent-encoding.
SELECT parca.scrape_url_encode('a b/c?d=é~_.-');

-- Validation.
INSERT INTO parca.scrape_jobs (job_name, scheme) VALUES ('ftp', 'ftp');
INSERT INTO parca.scrape_jobs (job_name, scrape_interval) VALUES ('fast', '100 ms');
INSERT INTO parca.scrape_jobs (job_name, path_prefix) VALUES ('prefix', 'app');
INSERT INTO parca.scrape_jobs (job_name, params) VALUES ('params', '{"a": 1}');
INSERT INTO parca.scrape_jobs (job_name) VALUES ('has space');
INSERT INTO parca.scrape_targets VALUES ('api', 'user@host:80');
INSERT INTO parca.scrape_targets VALUES ('api', 'host:80/path');
INSERT INTO parca.scrape_targets VALUES ('api', 'host:81', '{"bad-name": "x"}');
INSERT INTO parca.scrape_targets VALUES ('api', 'host:82', '{"__name__": "x"}');
INSERT INTO parca.scrape_targets VALUES ('api', 'host:83', '{"n": 1}');
INSERT INTO parca.scrape_targets VALUES ('nojob', 'host:80');
INSERT INTO parca.scrape_profiles (job_name, name, path) VALUES ('api', 'x', 'no-slash');
INSERT INTO parca.scrape_profiles (job_name, name, path) VALUES ('api', 'x', '/p?q=1');
-- A delta profile needs a timeout longer than the interval.
UPDATE parca.scrape_jobs SET scrape_timeout = '15 s' WHERE job_name = 'api';
BEGIN;
UPDATE parca.scrape_jobs SET scrape_timeout = '5 s' WHERE job_name = 'api';
UPDATE parca.scrape_profiles SET enabled = false WHERE delta;
COMMIT;
SELECT scrape_timeout FROM parca.scrape_jobs;

-- file_sd parsing.
SELECT * FROM parca.scrape_file_sd_targets(
    '[{"targets": ["a:1", "b:2"], "labels": {"env": "x", "__meta_zone": "z"}}, {"targets": ["c:3"]}]');
SELECT * FROM parca.scrape_file_sd_targets('{"targets": []}');
SELECT * FROM parca.scrape_file_sd_targets('[{"labels": {}}]');
SELECT * FROM parca.scrape_file_sd_targets('[{"targets": ["a/b:1"]}]');
SELECT * FROM parca.scrape_file_sd_targets('[{"targets": ["a:1"], "labels": {"1x": "y"}}]');
SELECT * FROM parca.scrape_file_sd_targets('not json');

-- Deleting a job deletes its targets and profiles.
DELETE FROM parca.scrape_jobs WHERE job_name = 'api';
SELECT (SELECT count(*) FROM parca.scrape_targets) AS targets,
       (SELECT count(*) FROM parca.scrape_profiles) AS profiles;

-- Privileges: only superusers and members of parca_scrape configure
-- scraping; naming file_sd files also needs pg_read_server_files.
CREATE ROLE scrape_nobody;
CREATE ROLE scrape_admin IN ROLE parca_scrape;
SET ROLE scrape_nobody;
INSERT INTO parca.scrape_jobs (job_name) VALUES ('sneaky');
SELECT * FROM parca.targets;
SELECT * FROM parca_scrape_import_yaml('scrape_configs: [{job_name: sneaky}]');
SET ROLE scrape_admin;
INSERT INTO parca.scrape_jobs (job_name) VALUES ('allowed');
INSERT INTO parca.scrape_targets VALUES ('allowed', 'localhost:6060');
UPDATE parca.scrape_profiles SET enabled = false WHERE job_name = 'allowed' AND name = 'mutex';
INSERT INTO parca.scrape_jobs (job_name, file_sd_files) VALUES ('files', '{/etc/passwd}');
UPDATE parca.scrape_jobs SET file_sd_files = '{/etc/passwd}' WHERE job_name = 'allowed';
SELECT count(*) FROM parca.targets;
RESET ROLE;
GRANT pg_read_server_files TO scrape_admin;
SET ROLE scrape_admin;
INSERT INTO parca.scrape_jobs (job_name, file_sd_files) VALUES ('files', '{/tmp/targets/*.json}');
RESET ROLE;
SELECT job_name, file_sd_files FROM parca.scrape_jobs ORDER BY 1;
DELETE FROM parca.scrape_jobs;
DROP ROLE scrape_nobody;
DROP ROLE scrape_admin;

-- No worker serves this database (parca.workers = off, test/regress/parca.conf,
-- so that no maintenance round runs between the statements of these tests):
-- its view has no targets, and parca.workers no row.
SELECT count(*) FROM parca.targets;
SELECT count(*) FROM parca.workers;
SHOW parca.workers;
SHOW parca.scrape_concurrency;
