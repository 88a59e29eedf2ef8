-- Import of a Parca configuration file's scrape_configs.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS parca;
RESET client_min_messages;

SELECT * FROM parca_scrape_import_yaml($yaml$
object_storage:
  bucket:
    type: "FILESYSTEM"
    config:
      directory: "./data"
scrape_configs:
  - job_name: "default"
    scrape_interval: "1m30s"
    static_configs:
      - targets: [ '127.0.0.1:7070', 'api.internal:6060' ]
        labels:
          env: prod
      - targets: [ '127.0.0.1:7071' ]
  - job_name: tuned
    scrape_interval: 5s
    scrape_timeout: 7500ms
    scheme: https
    params:
      debug: ["1"]
      tenant: acme
    file_sd_configs:
      - files: [ '/etc/parca/targets/*.json' ]
        refresh_interval: 1m
    relabel_configs:
      - source_labels: [a]
    profiling_config:
      path_prefix: /pprof
      pprof_config:
        memory:
          enabled: false
        process_cpu:
          path: /debug/pprof/cpu
        fgprof:
          enabled: true
          path: /debug/fgprof
          delta: true
        heap:
          keep_sample_type:
            - type: inuse_space
$yaml$);

SELECT job_name, scrape_interval, scrape_timeout, scheme, path_prefix, params, file_sd_files
  FROM parca.scrape_jobs ORDER BY 1;
SELECT * FROM parca.scrape_targets ORDER BY 1, 2;
SELECT * FROM parca.scrape_profiles WHERE job_name = 'tuned' ORDER BY name;
SELECT url, timeout_ms FROM parca.scrape_endpoints('{"tuned": [{"address": "h:1", "labels": {}}]}')
 WHERE job_name = 'tuned' ORDER BY 1;

-- Importing a job that exists is an error unless replace is asked for.
SELECT * FROM parca_scrape_import_yaml('scrape_configs: [{job_name: default}]');
SELECT * FROM parca_scrape_import_yaml('scrape_configs: [{job_name: default, scrape_interval: 20s}]', replace => true);
SELECT job_name, scrape_interval,
       (SELECT count(*) FROM parca.scrape_targets t WHERE t.job_name = j.job_name) AS targets
  FROM parca.scrape_jobs j ORDER BY 1;

-- Errors name the problem and the line; nothing is half imported.
SELECT * FROM parca_scrape_import_yaml('scrape_configs: [ {job_name: x');
SELECT * FROM parca_scrape_import_yaml('debug_info: {}');
SELECT * FROM parca_scrape_import_yaml('');
SELECT * FROM parca_scrape_import_yaml('scrape_configs: [{scrape_interval: 10s}]');
SELECT * FROM parca_scrape_import_yaml('scrape_configs:
  - job_name: slow
    scrape_interval: 10 seconds');
SELECT * FROM parca_scrape_import_yaml('scrape_configs:
  - job_name: first
  - job_name: second
    scheme: ftp');
SELECT * FROM parca_scrape_import_yaml('scrape_configs:
  - job_name: short
    scrape_interval: 10s
    scrape_timeout: 5s');
SELECT * FROM parca_scrape_import_yaml('scrape_configs:
  - job_name: badlabels
    static_configs:
      - targets: [a:1]
        labels: {bad-name: x}');
SELECT * FROM parca_scrape_import_yaml('scrape_configs:
  - job_name: badbool
    profiling_config:
      pprof_config:
        memory: {enabled: maybe}');
SELECT job_name FROM parca.scrape_jobs ORDER BY 1;
DELETE FROM parca.scrape_jobs;
