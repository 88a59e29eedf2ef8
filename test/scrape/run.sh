#!/usr/bin/env bash
# The scrape worker end to end: a real Go program serving net/http/pprof
# on local ports is scraped every 2 s.  Every enabled profile type must
# arrive with the right labels, and the merged CPU profile must hold the
# functions the program burns CPU in.  Misbehaving targets (down, hanging,
# garbage, endless body, gzip bomb, redirect to file:) are reported in
# parca.targets and store nothing, while the others go on.  Configuration
# changes, file_sd changes and a Parca YAML import take effect without a
# restart; pg_dump keeps the configuration; the worker survives
# invalidations of the metastore mid-ingest, stops on SIGTERM and comes
# back after that and after a crash.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

tmp=$(mktemp -d /tmp/parca-scrape-test.XXXXXX)
chmod 755 "$tmp"
target_pids=
cleanup() {
	if [ -n "$target_pids" ]; then
		kill $target_pids 2>/dev/null
		wait $target_pids 2>/dev/null
	fi
	stop_cluster
	rm -rf "$tmp"
}

# Build the target with Debian's Go, standard library only, in a clean env.
export HOME=$tmp GOCACHE=$tmp/gocache GOPATH=$tmp/gopath GOFLAGS= GO111MODULE=off
go build -o "$tmp/pprof_target" "$TEST_ROOT/scrape/pprof_target.go" || {
	echo "FAIL - could not build test/scrape/pprof_target.go"
	exit 1
}

PORT=${PARCA_SCRAPE_TEST_PORT:-54431}
# the HTTP ports move with the cluster port (PARCA_TEST_PORT_OFFSET, test/lib.sh)
HTTP=${PARCA_SCRAPE_TEST_HTTP_PORT:-$((18000 + ${PARCA_TEST_PORT_OFFSET:-0}))}
start_cluster "$PORT" "parca.max_profile_size = '4MB'"
trap cleanup EXIT

# Two processes: a process has one CPU profiler.
"$tmp/pprof_target" -port "$HTTP" >"$tmp/target-a.log" 2>&1 &
target_pids=$!
"$tmp/pprof_target" -port $((HTTP + 1)) >"$tmp/target-b.log" 2>&1 &
target_pids="$target_pids $!"
listening() {
	curl -sf -o /dev/null "http://$A/debug/pprof/" && curl -sf -o /dev/null "http://$B/debug/pprof/"
}
A=127.0.0.1:$HTTP
B=127.0.0.1:$((HTTP + 1))
DOWN=127.0.0.1:$((HTTP + 999))

# (the restored database below gets a scrape worker of its own)
worker_pid() {
	q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'parca scrape worker' AND datname = 'postgres'"
}
series_of() {
	q "SELECT string_agg(DISTINCT split_part(profile_type, ':', 1), ',' ORDER BY split_part(profile_type, ':', 1))
	   FROM parca.series WHERE labels @> '$1'"
}

for i in $(seq 50); do listening && break; sleep 0.2; done
check "the Go targets listen" listening

check_eq "no worker while no job is enabled" "" "$(worker_pid)"
q "INSERT INTO parca.scrape_jobs (job_name, scrape_interval) VALUES ('go', '2 s')"
q "INSERT INTO parca.scrape_targets VALUES ('go', '$A', '{\"env\": \"test\"}')"
q "INSERT INTO parca.scrape_profiles (job_name, name, path) VALUES ('go', 'heap', '/debug/pprof/heap')"
for bad in hang garbage endless bomb redirect; do
	q "INSERT INTO parca.scrape_jobs (job_name, scrape_interval, scrape_timeout, path_prefix)
	   VALUES ('$bad', '2 s', '3 s', '/$bad')"
	q "INSERT INTO parca.scrape_targets VALUES ('$bad', '$A')"
done
q "INSERT INTO parca.scrape_jobs (job_name, scrape_interval) VALUES ('down', '2 s')"
q "INSERT INTO parca.scrape_targets VALUES ('down', '$DOWN')"
q "UPDATE parca.scrape_profiles SET enabled = (name = 'goroutine')
   WHERE job_name IN ('hang', 'garbage', 'endless', 'bomb', 'redirect', 'down')"

check "every endpoint is listed (the first job started the worker)" \
	wait_for 60 "SELECT count(*) = 12 FROM parca.targets"
pid0=$(worker_pid)
check "the worker runs" test -n "$pid0"

# Within a few intervals every enabled profile type of A arrives.
check "all six profiles of the job arrive" \
	wait_for 60 "SELECT count(DISTINCT split_part(profile_type, ':', 1)) = 6
	             FROM parca.series WHERE labels @> '{\"job\": \"go\"}'"
check_eq "profile names of the job" "block,goroutine,heap,memory,mutex,process_cpu" \
	"$(series_of '{"job": "go", "instance": "'$A'", "env": "test"}')"
check_eq "every series is labelled job, instance, env and __name__ = its profile name" "0" \
	"$(q "SELECT count(*) FROM parca.series WHERE labels->>'job' = 'go'
	      AND (labels - 'job' - 'instance' - 'env' - '__name__' <> '{}'
	           OR labels->>'instance' <> '$A' OR labels->>'env' <> 'test'
	           OR labels->>'__name__' <> split_part(profile_type, ':', 1))")"
check_eq "the CPU profile is a delta profile" "2" \
	"$(q "SELECT count(*) FROM parca.series WHERE labels @> '{\"job\": \"go\"}'
	      AND profile_type IN ('process_cpu:samples:count:cpu:nanoseconds:delta',
	                           'process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta')")"
check "memory brings its four sample types" \
	test "$(q "SELECT count(*) FROM parca.series WHERE labels @> '{\"job\": \"go\"}'
	           AND profile_type LIKE 'memory:%'")" = 4
check "all profile targets of the job are up" \
	wait_for 60 "SELECT bool_and(health = 'up' AND last_error IS NULL) AND count(*) = 6
	             FROM parca.targets WHERE job = 'go'"

# The merged CPU profile holds the functions the program burns CPU in.
check "CPU samples cover at least two scrapes" \
	wait_for 60 "SELECT count(DISTINCT s.time) >= 2 FROM parca.samples s
	             JOIN parca.series se ON se.id = s.series_id
	             WHERE se.profile_type LIKE 'process_cpu:cpu:%'"
cpu_total=$(q "SELECT parca_profile_total(parca_merge(s.stack, s.value)) FROM parca.samples s
               JOIN parca.series se ON se.id = s.series_id WHERE se.profile_type LIKE 'process_cpu:cpu:%'")
cpu_burn=$(q "SELECT sum(s.value) FROM parca.samples s
              JOIN parca.series se ON se.id = s.series_id
              WHERE se.profile_type LIKE 'process_cpu:cpu:%'
                AND EXISTS (SELECT FROM unnest(parca_stack_location_ids(s.stack)) AS lid
                            JOIN parca.locations l ON l.id = lid
                            JOIN parca.functions f ON f.id = ANY (l.function_ids)
                            WHERE f.name IN ('main.burnPrimes', 'main.burnHashes'))")
for fn in main.burnPrimes main.burnHashes; do
	check "the merged CPU profile contains $fn" \
		test "$(q "SELECT count(*) > 0 FROM parca.functions WHERE name = '$fn'")" = t
done
echo "# CPU: ${cpu_burn:-0} of ${cpu_total:-0} ns in the burning functions"
check "most CPU time is in the burning functions" \
	test "${cpu_burn:-0}" -gt 0 -a $((${cpu_burn:-0} * 2)) -gt "${cpu_total:-1}"

# The dashboard's time series of every scraped type: a total per step, and
# a rate only for :delta types (heap, goroutine, block and mutex have no
# duration to divide by).
while IFS= read -r ptype; do
	if counts=$(q "SELECT count(*) > 0, count(per_second) > 0
	               FROM parca_query_range('$ptype{job=\"go\"}', now() - interval '1 hour', now(), '10 seconds')" 2>&1); then
		case "$ptype" in
			*:delta) check_eq "time series of $ptype: values and rates" "t|t" "$counts" ;;
			*) check_eq "time series of $ptype: values, no rate" "t|f" "$counts" ;;
		esac
	else
		check "time series of $ptype ($counts)" false
	fi
done < <(q "SELECT DISTINCT profile_type FROM parca.series WHERE labels->>'job' = 'go' ORDER BY 1")

# Misbehaving targets: down with the reason, nothing stored, others go on.
check "the down target is down with a connection error" \
	wait_for 60 "SELECT health = 'down' AND last_error LIKE '%connect%' FROM parca.targets WHERE job = 'down'"
check "the hanging target times out" \
	wait_for 60 "SELECT health = 'down' AND last_error = 'timeout after 3000 ms'
	             AND last_duration >= '3 s' FROM parca.targets WHERE job = 'hang'" ||
	q "SELECT * FROM parca.targets WHERE job = 'hang'"
check "garbage is refused by ingestion" \
	wait_for 60 "SELECT health = 'down' AND last_error LIKE 'ingest: %' FROM parca.targets WHERE job = 'garbage'"
check "an endless body is cut at parca.max_profile_size" \
	wait_for 60 "SELECT health = 'down' AND last_error LIKE 'response larger than parca.max_profile_size%'
	             FROM parca.targets WHERE job = 'endless'"
check "a gzip bomb is refused" \
	wait_for 60 "SELECT health = 'down' AND last_error LIKE 'gzip response would inflate to 67108864 bytes%'
	             FROM parca.targets WHERE job = 'bomb'"
check "a redirect to another scheme than http(s) is not followed" \
	wait_for 60 "SELECT health = 'down' AND last_error = 'redirect to \"file:///etc/passwd\" not followed (parca.scrape_redirects = same_origin)'
	             FROM parca.targets WHERE job = 'redirect'"
check_eq "nothing is stored for the misbehaving targets" "0" \
	"$(q "SELECT count(*) FROM parca.series WHERE labels->>'job' IN ('hang', 'garbage', 'endless', 'bomb', 'redirect', 'down')")"
t1=$(q "SELECT max(last_scrape) FROM parca.targets WHERE job = 'go' AND url LIKE '%goroutine'")
sleep 4.5
check "the good target was scraped again meanwhile" \
	test "$(q "SELECT max(last_scrape) > '$t1' FROM parca.targets WHERE job = 'go' AND url LIKE '%goroutine'")" = t
check "the good targets stay up" \
	test "$(q "SELECT bool_and(health = 'up') FROM parca.targets WHERE job = 'go'")" = t
# profiles are stored in batches of a second; a batch with garbage in it is
# stored again profile by profile
check "their profiles are stored meanwhile, though batched with garbage" \
	test "$(q "SELECT count(DISTINCT se.labels->>'__name__') >= 3 FROM parca.samples sa
	           JOIN parca.series se ON se.id = sa.series_id
	           WHERE se.labels->>'job' = 'go' AND sa.time >= '$t1'")" = t
logged_timeout() {
	grep -q 'parca scrape of .*/hang/.* failed: timeout' "$PGDATA_DIR/log" && return 0
	grep 'parca scrape of' "$PGDATA_DIR/log" >&2
	return 1
}
check "scrape failures are logged" logged_timeout
check_eq "the worker survived all of it" "$pid0" "$(worker_pid)"

# Configuration changes take effect without a restart.
q "UPDATE parca.scrape_profiles SET enabled = false WHERE job_name = 'go' AND name IN ('block', 'mutex', 'heap')"
q "INSERT INTO parca.scrape_targets VALUES ('go', '$B', '{\"env\": \"second\"}')"
q "DELETE FROM parca.scrape_jobs WHERE job_name IN ('hang', 'garbage', 'endless', 'bomb', 'redirect')"
# Meanwhile, invalidations of the metastore tables (autovacuum's ANALYZE
# sends them too; GRANT always does) arrive in the middle of ingesting the
# new target's new series.
invalidate_loop() {
	local end=$((SECONDS + 8))
	while [ $SECONDS -lt $end ]; do
		echo "GRANT SELECT ON parca.series, parca.locations TO parca_scrape;"
		echo "REVOKE SELECT ON parca.series, parca.locations FROM parca_scrape;"
	done | psql -X -q >/dev/null 2>&1
}
invalidate_loop &
invalidate_pid=$!
check "a configuration change is picked up" \
	wait_for 60 "SELECT count(*) = 7 FROM parca.targets"
check "the new target arrives" \
	wait_for 60 "SELECT count(DISTINCT split_part(profile_type, ':', 1)) = 3 FROM parca.series
	             WHERE labels @> '{\"instance\": \"$B\", \"env\": \"second\"}'"
check_eq "the new target has only the enabled profiles" "goroutine,memory,process_cpu" \
	"$(series_of '{"instance": "'$B'"}')"
wait $invalidate_pid
check_eq "no restart for that, nor for invalidations of the metastore meanwhile" "$pid0" "$(worker_pid)"

# file_sd: targets from a JSON file; a change of the file is picked up.
mkdir -p "$tmp/sd"
chmod 755 "$tmp/sd"
echo '[{"targets": ["'$B'"], "labels": {"team": "sd"}}]' >"$tmp/sd/a.json"
chmod 644 "$tmp/sd/a.json"
q "INSERT INTO parca.scrape_jobs (job_name, scrape_interval, file_sd_files) VALUES ('sd', '2 s', '{$tmp/sd/*.json}')"
q "UPDATE parca.scrape_profiles SET enabled = (name = 'goroutine') WHERE job_name = 'sd'"
check "a file_sd target is scraped with its labels" \
	wait_for 60 "SELECT count(*) = 1 FROM parca.series
	             WHERE labels = '{\"job\": \"sd\", \"instance\": \"$B\", \"team\": \"sd\", \"__name__\": \"goroutine\"}'"
echo '[{"targets": ["'$A'", "'$B'"], "labels": {"team": "sd2"}}]' >"$tmp/sd/a.json.new"
chmod 644 "$tmp/sd/a.json.new"
mv "$tmp/sd/a.json.new" "$tmp/sd/a.json"
check "a changed file_sd file is picked up" \
	wait_for 60 "SELECT count(*) = 2 FROM parca.targets WHERE job = 'sd' AND labels->>'team' = 'sd2'"
echo '[{"targets": ["'$DOWN'"]}]' >"$tmp/sd/b.json"
chmod 644 "$tmp/sd/b.json"
check "a new file matching the glob is picked up" \
	wait_for 60 "SELECT count(*) = 3 FROM parca.targets WHERE job = 'sd'"
echo 'not json' >"$tmp/sd/b.json"
sleep 3
check_eq "a broken file keeps its last good targets" "3" \
	"$(q "SELECT count(*) FROM parca.targets WHERE job = 'sd'")"
check "a broken file is reported" grep -q "file_sd file \"$tmp/sd/b.json\" ignored" "$PGDATA_DIR/log"
rm "$tmp/sd/b.json"
check "a removed file's targets go" \
	wait_for 60 "SELECT count(*) = 2 FROM parca.targets WHERE job = 'sd'"

# A Parca configuration file imported through SQL.
cat >"$tmp/parca.yaml" <<EOF
object_storage:
  bucket:
    type: "FILESYSTEM"
    config:
      directory: "./data"
scrape_configs:
  - job_name: "imported"
    scrape_interval: "2s"
    scrape_timeout: "5s"
    static_configs:
      - targets: [ '$B' ]
        labels:
          from: yaml
    profiling_config:
      pprof_config:
        memory:
          enabled: false
        block:
          enabled: false
        mutex:
          enabled: false
        process_cpu:
          enabled: false
        threads:
          path: /debug/pprof/threadcreate
EOF
chmod 644 "$tmp/parca.yaml"
check_eq "the YAML import names its job" "imported" \
	"$(q "SELECT * FROM parca_scrape_import_yaml(pg_read_file('$tmp/parca.yaml'))")"
check "the imported job's profiles arrive" \
	wait_for 60 "SELECT count(DISTINCT split_part(profile_type, ':', 1)) = 2 FROM parca.series
	             WHERE labels @> '{\"job\": \"imported\", \"from\": \"yaml\"}'"
check_eq "with the imported profiles only" "goroutine,threads" "$(series_of '{"job": "imported"}')"

# pg_dump keeps the scrape configuration (and restoring it does not clash
# with the default profiles its jobs are given again).
config_digest() {
	psql -X -qAt -v ON_ERROR_STOP=1 -d "$1" -c "
		SELECT md5(string_agg(r, ',' ORDER BY r)) FROM (
			SELECT j::text AS r FROM parca.scrape_jobs j
			UNION ALL SELECT t::text FROM parca.scrape_targets t
			UNION ALL SELECT p::text FROM parca.scrape_profiles p) x"
}
# restored with its workers off (docs/workers.md): its maintenance worker
# would make the day's partitions that the dump makes too
q "CREATE DATABASE restored"
q "ALTER DATABASE restored SET parca.workers = off"
pg_dump -d postgres >"$tmp/dump.sql"
psql -X -q -v ON_ERROR_STOP=1 -d restored -f "$tmp/dump.sql" >/dev/null 2>"$tmp/restore.err"
check "the dump restores without errors" test ! -s "$tmp/restore.err"
check_eq "with the same configuration" "$(config_digest postgres)" "$(config_digest restored)"
q "ALTER DATABASE restored RESET parca.workers"
check "the restored database gets its own scrape worker" \
	wait_for 60 "SELECT count(*) = 1 FROM pg_stat_activity WHERE datname = 'restored' AND backend_type = 'parca scrape worker'"
check_eq "beside this database's" "$pid0" "$(worker_pid)"
check "and is dropped with it while it runs" q "DROP DATABASE restored"

# Settings reload on SIGHUP: disabled, the worker scrapes nothing.
q "ALTER SYSTEM SET parca.scrape_enabled = off"
q "SELECT pg_reload_conf()" >/dev/null
check "parca.scrape_enabled = off empties the targets" \
	wait_for 60 "SELECT count(*) = 0 FROM parca.targets"
q "ALTER SYSTEM RESET parca.scrape_enabled"
q "SELECT pg_reload_conf()" >/dev/null
check "and on brings them back" \
	wait_for 60 "SELECT count(*) > 0 FROM parca.targets"
check_eq "still the same worker" "$pid0" "$(worker_pid)"

# SIGTERM: the worker stops at once (and, not at shutdown, comes back).
q "SELECT pg_terminate_backend($pid0)" >/dev/null
sleep 0.5
check "the worker stops promptly on SIGTERM" test -z "$(ps -o pid= -p "$pid0")"
check "the worker is restarted" \
	wait_for 60 "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'parca scrape worker'
	             AND datname = 'postgres'"
pid1=$(worker_pid)

# A crash: the postmaster resets and the worker comes back and scrapes.
kill -SEGV "$pid1"
sleep 2
check "the worker comes back after a crash" \
	wait_for 60 "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'parca scrape worker'
	             AND datname = 'postgres'"
check "and scrapes again" \
	wait_for 60 "SELECT count(*) > 0 AND bool_and(health = 'up') FROM parca.targets WHERE job = 'go'"
n1=$(q "SELECT count(*) FROM parca.samples")
sleep 3
check "samples keep arriving" test "$(q "SELECT count(*) FROM parca.samples")" -gt "$n1"

finish
