#!/usr/bin/env bash
# The web UI drawing google-pprof/large.cpu (20,430 stacks; a call tree of
# 425,052 nodes) in headless chromium, through parca-server (bench/web.js):
# the page opened to the flame graph on screen, the icicle request, and the
# drawing, at the number of nodes the page asks for (parca_icicle's
# max_nodes, from its width: 1400 px) and at 4 times as many (the
# "More nodes" button).  Target: drawn in under a second.
#
#   BENCH_WEB_RUNS   page loads per case (3)
#   BENCH_WEB_PORT   PostgreSQL port (54436); BENCH_WEB_HTTP the server's (18391)
set -uo pipefail
. "$(dirname "$0")/../test/lib.sh"

runs=${BENCH_WEB_RUNS:-3}
http=${BENCH_WEB_HTTP:-18391}
server_bin=$REPO_ROOT/server/parca-server
web_root=${PARCA_WEB_ROOT:-$(pg_config --sharedir)/parca/web}
[ -x "$server_bin" ] || { echo "web bench: $server_bin is not built (make server)"; exit 1; }
[ -f "$web_root/index.html" ] || { echo "web bench: the UI is not installed in $web_root (make install-server)"; exit 1; }
require_fixtures
install=$(bash "$REPO_ROOT/web/npm.sh" "$TEST_ROOT/web") || exit 1

tmp=$(mktemp -d /tmp/parca-web-bench.XXXXXX)
chmod 755 "$tmp"
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
	stop_cluster
	rm -rf "$tmp"
}
start_cluster "${BENCH_WEB_PORT:-54436}"
trap cleanup EXIT
cp "$SHARED_TESTDATA/pprof/google-pprof/large.cpu" "$tmp/"
chmod 644 "$tmp/large.cpu"
q "SELECT parca_ingest_pprof(pg_read_binary_file('$tmp/large.cpu'), 'large', '{\"job\": \"large\"}')" >/dev/null
"$server_bin" --listen "127.0.0.1:$http" --allow-anonymous --web-root "$web_root" \
	--dsn "host=127.0.0.1 port=$PGPORT user=postgres dbname=postgres" >"$tmp/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do [ "$(curl -s "http://127.0.0.1:$http/ready")" = ready ] && break; sleep 0.1; done
echo "large.cpu: $(q "SELECT parca_profile_stacks(parca_query('large:samples:count:cpu:nanoseconds:delta{}', '-infinity', 'infinity'))") stacks, $(q "SELECT count(*) FROM parca_icicle(parca_query('large:samples:count:cpu:nanoseconds:delta{}', '-infinity', 'infinity'))") nodes in its call tree"
# the statement alone in psql, at the page's own max_nodes, 4 and 16 times
# as many, and without a limit (0)
for n in 4200 16800 67000 0; do
	echo "parca_icicle(parca_query(...), $n) in psql, for comparison: $(best_ms "SET client_min_messages = warning; SELECT count(*) FROM parca_icicle(parca_query('large:samples:count:cpu:nanoseconds:delta{}', '-infinity', 'infinity'), $n)") ms best of 3"
done
view="http://127.0.0.1:$http/?type=large%3Asamples%3Acount%3Acpu%3Ananoseconds%3Adelta&from=0"
for factor in 1 4; do
	echo "--- max_nodes: the page's own × $factor"
	NODE_PATH=$install/node_modules node "$REPO_ROOT/bench/web.js" "$view&nodes=$factor" "$runs" ||
		echo "web bench: the browser run failed"
done
