#!/usr/bin/env bash
# parca-server under load, side by side with its baseline in one run: the
# same profile (parca/alloc_objects.pb.gz, 9,368 sample rows) pushed to
# /ingest as pyroscope-go does (multipart) by 1, 8 and 64 concurrent clients
# (test/push/pushclient.go load), and stored by the same number of clients
# calling parca_ingest_pprof directly over libpq (bench/push_direct.c).
# Reports profiles and rows per second, p50/p99 latency, the ratio to
# direct SQL, and the server's CPU (share of one core) and resident memory
# (peak, VmHWM).  Targets: within 1.3x of direct SQL; <= 64 MB at 64 clients.
#
#   BENCH_PUSH_SECONDS   measured seconds per run (20)
#   BENCH_PUSH_CLIENTS   the concurrencies ("1 8 64")
#   BENCH_PUSH_WORKERS   the server's database connections (default: as many
#                        as clients, so that both sides store as many
#                        profiles at once; requests beyond them queue)
#   BENCH_PUSH_PORT      PostgreSQL port (54435)
#   BENCH_PUSH_HTTP      the server's port (18390)
set -uo pipefail
. "$(dirname "$0")/../test/lib.sh"

seconds=${BENCH_PUSH_SECONDS:-20}
concurrency=${BENCH_PUSH_CLIENTS:-1 8 64}
workers=${BENCH_PUSH_WORKERS:-}
port=${BENCH_PUSH_PORT:-54435}
http=${BENCH_PUSH_HTTP:-18390}
server_bin=$REPO_ROOT/server/parca-server
[ -x "$server_bin" ] || { echo "push bench: $server_bin is not built (make server)"; exit 1; }
require_fixtures

tmp=$(mktemp -d /tmp/parca-push-bench.XXXXXX)
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
	stop_cluster
	[ -n "${BENCH_PUSH_KEEP:-}" ] || rm -rf "$tmp"
}
export HOME=$tmp GOCACHE=$tmp/gocache GOFLAGS=
(cd "$tmp" && go build -o "$tmp/pushclient" "$TEST_ROOT/push/pushclient.go") || exit 1
cc -O2 -o "$tmp/push_direct" "$REPO_ROOT/bench/push_direct.c" -I"$(pg_config --includedir)" -lpq -lpthread || exit 1
# The fixture's own time is in 2020: rows of a day without a partition go
# to the default partition, which the maintenance worker empties under
# locks that would stall both sides for minutes.  So the profile gets
# the bench's start as its time (field 9 appended: the last one wins), the
# same bytes on both sides, gzipped as SDKs send them.
profile=$tmp/alloc_objects.pb.gz
chmod 755 "$tmp"
python3 - "$SHARED_TESTDATA/pprof/parca/alloc_objects.pb.gz" "$profile" <<'PY'
import gzip, sys, time
data = gzip.decompress(open(sys.argv[1], "rb").read())
t, field = time.time_ns(), b"\x48"
while t >= 0x80:
    field += bytes([t & 0x7f | 0x80])
    t >>= 7
open(sys.argv[2], "wb").write(gzip.compress(data + field + bytes([t])))
PY

start_cluster "$port" "max_connections = 200"
trap cleanup EXIT
# start_server WORKERS: a server of its own for each run
start_server() {
	"$server_bin" --listen "127.0.0.1:$http" --allow-anonymous --workers "$1" --max-connections-per-ip 1024 \
		--dsn "host=127.0.0.1 port=$PGPORT user=postgres dbname=postgres" >>"$tmp/server.log" 2>&1 &
	server_pid=$!
	for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$http/ready" && break; sleep 0.2; done
}
stop_server() {
	kill "$server_pid" && wait "$server_pid"
	server_pid=
}
rows=$(q "SELECT parca_ingest_pprof(pg_read_binary_file('$profile'), 'memory', '{\"service_name\": \"warm-up\"}')")
# warm both sides: the metastore holds the profile's locations from here on
start_server 4
"$tmp/pushclient" load -url "http://127.0.0.1:$http" -profile "$profile" -clients 4 -for 3s >/dev/null
stop_server

ticks() { awk '{print $14 + $15}' /proc/"$server_pid"/stat; }
hz=$(getconf CLK_TCK)
field() { sed -n "s/.* $1 \([0-9.]*\).*/\1/p" <<<" $2"; }

echo "parca-server against direct parca_ingest_pprof: parca/alloc_objects.pb.gz, $rows rows a profile, $seconds s a run, server workers ${workers:-= clients}, $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg)"
printf '%-8s %-8s %11s %12s %9s %9s %14s %10s %12s\n' clients path profiles/s rows/s p50_ms p99_ms "direct/server" server_cpu server_rss_mb
for c in $concurrency; do
	start_server "${workers:-$c}"
	t0=$(ticks)
	s=$("$tmp/pushclient" load -url "http://127.0.0.1:$http" -profile "$profile" -clients "$c" -for "${seconds}s")
	t1=$(ticks)
	rss=$(awk '/VmHWM/ {printf "%.1f", $2 / 1024}' /proc/"$server_pid"/status)
	stop_server
	d=$("$tmp/push_direct" "host=127.0.0.1 port=$PGPORT user=postgres dbname=postgres" "$profile" "$c" "$seconds")
	sp=$(awk -v n="$(field profiles "$s")" -v t="$(field seconds "$s")" 'BEGIN {printf "%.1f", n / t}')
	dp=$(awk -v n="$(field profiles "$d")" -v t="$(field seconds "$d")" 'BEGIN {printf "%.1f", n / t}')
	cpu=$(awk -v a="$t0" -v b="$t1" -v hz="$hz" -v t="$(field seconds "$s")" 'BEGIN {printf "%.1f%%", (b - a) / hz / t * 100}')
	printf '%-8s %-8s %11s %12.0f %9s %9s %14s %10s %12s\n' "$c" server "$sp" "$(awk -v p="$sp" -v r="$rows" 'BEGIN {print p * r}')" \
		"$(field p50_ms "$s")" "$(field p99_ms "$s")" "$(awk -v a="$dp" -v b="$sp" 'BEGIN {printf "%.2fx", a / b}')" "$cpu" "$rss"
	printf '%-8s %-8s %11s %12.0f %9s %9s %14s %10s %12s\n' "$c" direct "$dp" "$(awk -v p="$dp" -v r="$rows" 'BEGIN {print p * r}')" \
		"$(field p50_ms "$d")" "$(field p99_ms "$d")" "" "" ""
	[ "$(field failed "$s")" = 0 ] || echo "  ($(field failed "$s") requests through the server failed: $(grep '"msg":"request"' "$tmp/server.log" | grep -v '"status":200' | tail -1))"
done
echo "server_cpu: the server's CPU time as a share of one core; server_rss_mb: its peak resident memory (VmHWM) in that run"
