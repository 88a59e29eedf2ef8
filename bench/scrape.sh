#!/usr/bin/env bash
# The scrape worker under load: 200 targets (one Go program listening on
# 200 ports), all five default profiles every 10 s, for 5 minutes.
# Reports the worker's CPU as a share of one core, its resident memory,
# the sample rows stored per second and the spread of scrape durations.
#
#   BENCH_SCRAPE_TARGETS   number of targets (200)
#   BENCH_SCRAPE_SECONDS   measured time after a 30 s warm-up (300)
#   BENCH_SCRAPE_PORT      PostgreSQL port (54432)
#   BENCH_SCRAPE_HTTP      first HTTP port (18100)
set -uo pipefail
. "$(dirname "$0")/../test/lib.sh"

targets=${BENCH_SCRAPE_TARGETS:-200}
seconds=${BENCH_SCRAPE_SECONDS:-300}
port=${BENCH_SCRAPE_PORT:-54432}
http=${BENCH_SCRAPE_HTTP:-18100}

tmp=$(mktemp -d /tmp/parca-scrape-bench.XXXXXX)
target_pid=
cleanup() {
	[ -n "$target_pid" ] && kill "$target_pid" 2>/dev/null
	stop_cluster
	rm -rf "$tmp"
}
export HOME=$tmp GOCACHE=$tmp/gocache GOPATH=$tmp/gopath GOFLAGS= GO111MODULE=off
go build -o "$tmp/pprof_target" "$TEST_ROOT/scrape/pprof_target.go" || exit 1

start_cluster "$port"
trap cleanup EXIT
# One process serves every port; its CPU profiler is shared (-shared-cpu).
"$tmp/pprof_target" -port "$http" -ports "$targets" -shared-cpu -duty 0.05 >"$tmp/target.log" 2>&1 &
target_pid=$!
sleep 1
if ! kill -0 "$target_pid" 2>/dev/null; then
	echo "scrape bench: the pprof target did not start (ports $http-$((http + targets - 1)) in use?):"
	cat "$tmp/target.log"
	exit 1
fi

q "INSERT INTO parca.scrape_jobs (job_name) VALUES ('bench')"
q "INSERT INTO parca.scrape_targets (job_name, address)
   SELECT 'bench', '127.0.0.1:' || p FROM generate_series($http, $http + $targets - 1) p"
q "CREATE TABLE bench_scrapes (url text, profile text, last_scrape timestamptz, last_duration interval,
                               health text, last_error text, UNIQUE (url, last_scrape))"
snapshot() {
	q "INSERT INTO bench_scrapes SELECT url, labels->>'__name__', last_scrape, last_duration, health, last_error
	   FROM parca.targets WHERE last_scrape IS NOT NULL ON CONFLICT DO NOTHING"
}

# the first job starts the database's scrape worker (docs/workers.md)
for _ in $(seq 50); do
	pid=$(q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'parca scrape worker' AND datname = current_database()")
	[ -n "$pid" ] && break
	sleep 0.2
done
if [ -z "$pid" ]; then
	echo "scrape bench: no server or no scrape worker"
	exit 1
fi
echo "scrape bench: $targets targets x 5 profiles every 10 s; worker pid $pid; warm-up 30 s, then $seconds s"
sleep 30
snapshot
q "TRUNCATE bench_scrapes"

# fetch_profiles DIR: the current profile of every endpoint of one target
fetch_profiles() {
	mkdir -p "$1"
	for pair in memory:allocs block:block goroutine:goroutine mutex:mutex process_cpu:profile?seconds=1; do
		curl -sf "http://127.0.0.1:$http/debug/pprof/${pair#*:}" -o "$1/${pair%%:*}" ||
			echo "could not fetch ${pair#*:}"
	done
}
fetch_profiles "$tmp/replay/start"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
status_kb() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$pid/status"; }
clk=$(getconf CLK_TCK)
ticks0=$(cpu_ticks)
rows0=$(q "SELECT count(*) FROM parca.samples")
start=$(date +%s.%N)
start_ts=$(q "SELECT now()")
max_rss=0 max_anon=0
end=$((SECONDS + seconds))
while [ $SECONDS -lt $end ]; do
	sleep 2
	snapshot
	rss=$(status_kb VmRSS) anon=$(status_kb RssAnon)
	[ "$rss" -gt "$max_rss" ] && max_rss=$rss
	[ "$anon" -gt "$max_anon" ] && max_anon=$anon
done
ticks1=$(cpu_ticks)
rows1=$(q "SELECT count(*) FROM parca.samples")
stop=$(date +%s.%N)

elapsed=$(echo "$stop - $start" | bc -l)
printf "worker CPU: %.2f %% of one core\n" "$(echo "100 * ($ticks1 - $ticks0) / $clk / $elapsed" | bc -l)"
printf "worker resident memory: max VmRSS %.1f MB (max RssAnon %.1f MB; RssFile %.1f MB and RssShmem %.1f MB now: shared libraries and shared buffers)\n" \
	"$(echo "$max_rss / 1024" | bc -l)" "$(echo "$max_anon / 1024" | bc -l)" \
	"$(echo "$(status_kb RssFile) / 1024" | bc -l)" "$(echo "$(status_kb RssShmem) / 1024" | bc -l)"
printf "samples stored: %.0f rows/s (%d rows in %.0f s)\n" \
	"$(echo "($rows1 - $rows0) / $elapsed" | bc -l)" $((rows1 - rows0)) "$elapsed"
q "SELECT format('scrapes: %s in %s s (%s/s), %s failed', count(*), round($elapsed), round(count(*) / $elapsed, 1),
                 count(*) FILTER (WHERE health <> 'up'))
   FROM bench_scrapes WHERE last_scrape >= '$start_ts'"
echo "scrape duration spread (s), by profile:"
psql -X -c "SELECT profile, count(*) AS scrapes,
       round(min(extract(epoch FROM last_duration))::numeric, 4) AS min,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM last_duration))::numeric, 4) AS p50,
       round(percentile_cont(0.9) WITHIN GROUP (ORDER BY extract(epoch FROM last_duration))::numeric, 4) AS p90,
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM last_duration))::numeric, 4) AS p99,
       round(max(extract(epoch FROM last_duration))::numeric, 4) AS max
  FROM bench_scrapes WHERE last_scrape >= '$start_ts' GROUP BY profile ORDER BY profile"
q "SELECT 'errors: ' || string_agg(DISTINCT last_error, '; ') FROM bench_scrapes
   WHERE last_scrape >= '$start_ts' AND last_error IS NOT NULL"

# For comparison, ingestion alone without the worker's batching: the
# profiles of the start and of the end of the run (they grow as the program
# runs) ingested 25 times each by a backend, a transaction each, with the
# same labels; CPU time from /proc/self/stat.
fetch_profiles "$tmp/replay/end"
chmod -R a+rX "$tmp"
psql -X -qAt -v ON_ERROR_STOP=1 >"$tmp/replay.out" <<EOF
SET synchronous_commit = off;   -- as the worker has them
SET jit = off;
CREATE TEMP TABLE ticks (profile text, n int, ticks bigint);
CREATE FUNCTION pg_temp.cpu_ticks() RETURNS bigint LANGUAGE sql AS
\$\$ SELECT s[14]::bigint + s[15]::bigint FROM string_to_array(pg_read_file('/proc/self/stat'), ' ') s \$\$;
DO \$\$
DECLARE
    name text;
    data bytea;
    t0 bigint;
BEGIN
    FOREACH name IN ARRAY ARRAY['memory', 'block', 'goroutine', 'mutex', 'process_cpu'] LOOP
        t0 := pg_temp.cpu_ticks();
        FOR i IN 0..49 LOOP
            data := pg_read_binary_file('$tmp/replay/' || CASE WHEN i < 25 THEN 'start/' ELSE 'end/' END || name);
            PERFORM parca_ingest_pprof(data, name,
                jsonb_build_object('job', 'bench', 'instance', '127.0.0.1:' || ($http + i), '__name__', name));
            COMMIT;
        END LOOP;
        INSERT INTO ticks VALUES (name, 50, pg_temp.cpu_ticks() - t0);
        COMMIT;
    END LOOP;
END
\$\$;
SELECT sum(ticks::numeric / n) FROM ticks;
EOF
ticks_per_round=$(tail -n 1 "$tmp/replay.out")
# a round is one scrape of each of the five profiles: every target does one per 10 s
printf "for comparison, the same profiles stored by a backend one transaction each (no batching): %.2f %% of one core\n" \
	"$(echo "100 * $ticks_per_round / $clk * $targets / 10" | bc -l)"
backend_kb() { q "SELECT (regexp_match(pg_read_file('/proc/self/status'), '$1:\\s+(\\d+)'))[1]"; }
printf "for comparison, a fresh backend of this server: VmRSS %.1f MB, RssFile %.1f MB\n" \
	"$(echo "$(backend_kb VmRSS) / 1024" | bc -l)" "$(echo "$(backend_kb RssFile) / 1024" | bc -l)"
