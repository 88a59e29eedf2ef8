#!/usr/bin/env bash
# parca-agent's cost of the PostgreSQL labels (docs/postgres.md): 50
# pgbench clients on a cluster of their own keep 50 backends busy (a
# lookup by primary key and a small sort, simple protocol: many short
# statements, the labels' worst case in series), and the agent runs three
# times over the same load, each for PARCA_POSTGRES_BENCH_SECONDS (60):
#   - with the labels (the default);
#   - with --label-drop=pg_query_id (the BPF reads stay, fewer series);
#   - with --no-postgres: no backend registered, nothing read, no labels.
# Reports each run's CPU as a share of one core, its peak resident memory,
# the samples and series it wrote, and the BPF program's time per sample
# (kernel BPF statistics, charged to the sampled programs).  Needs root.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$repo/test/lib.sh"

seconds=${PARCA_POSTGRES_BENCH_SECONDS:-60}
clients=${PARCA_POSTGRES_BENCH_CLIENTS:-50}
agent=$repo/agent/parca-agent
[ -x "$agent" ] || { echo "bench/postgres.sh: build the agent first (make agent)" >&2; exit 1; }

port=${PARCA_POSTGRES_BENCH_PORT:-54446}
start_cluster "$port" "shared_preload_libraries = 'parca,pg_stat_statements'" \
	"compute_query_id = on" "max_connections = 80"
tmp=$(mktemp -d)
chmod 755 "$tmp"
stats_before=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
	[ -n "${pgbench_pid:-}" ] && kill "$pgbench_pid" 2>/dev/null
	sysctl -qw kernel.bpf_stats_enabled="$stats_before"
	rm -rf "$tmp"
	stop_cluster
}
trap cleanup EXIT
q "CREATE ROLE agent_bench LOGIN IN ROLE parca_agent" >/dev/null
q "CREATE DATABASE pq" >/dev/null
psql -X -qAt -d pq -c "CREATE TABLE pq_numbers AS SELECT g AS id, random() AS v FROM generate_series(1, 200000) g;
	ALTER TABLE pq_numbers ADD PRIMARY KEY (id)" >/dev/null
psql -X -qAt -d pq -c "VACUUM ANALYZE" >/dev/null
cat >"$tmp/lookup.sql" <<'EOF'
\set id random(1, 200000)
SELECT v FROM pq_numbers WHERE id = :id;
EOF
cat >"$tmp/sort.sql" <<'EOF'
\set id random(1, 190000)
SELECT v FROM pq_numbers WHERE id BETWEEN :id AND :id + 2000 ORDER BY v LIMIT 1;
EOF
chmod 644 "$tmp"/*.sql
sysctl -qw kernel.bpf_stats_enabled=1
"$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$PGPORT" -c "$clients" -j 2 -T $((3 * seconds + 60)) \
	-f "$tmp/lookup.sql@4" -f "$tmp/sort.sql@1" pq >"$tmp/pgbench.out" 2>&1 &
pgbench_pid=$!
sleep 5

series() {
	q "SELECT count(*) FROM parca.series WHERE profile_type LIKE 'parca_agent:%'"
}

# run_agent NAME [OPTION]...: one run over the load, measured.
run_agent() {
	local name=$1; shift
	local before after wrapper agent_pid bpf values labelled
	before=$(series)
	q "TRUNCATE parca.samples" >/dev/null
	python3 "$here/rusage.py" "$tmp/agent.rusage" "$agent" "$@" \
		--dsn "host=127.0.0.1 port=$PGPORT user=agent_bench dbname=postgres" \
		--duration "$seconds" 2>"$tmp/agent.log" &
	wrapper=$!
	sleep $((seconds - 5))
	agent_pid=$(pgrep -P "$wrapper" | head -1)
	bpf=$(bpf_ns "$agent_pid")
	wait $wrapper
	after=$(series)
	read -r user sys rss status <"$tmp/agent.rusage"
	values=$(q "SELECT coalesce(sum(x.value), 0) FROM parca.samples x JOIN parca.series s ON s.id = x.series_id
	            WHERE s.labels ->> 'comm' = 'postgres'")
	labelled=$(q "SELECT coalesce(sum(x.value), 0) FROM parca.samples x JOIN parca.series s ON s.id = x.series_id
	              WHERE s.labels ? 'pg_backend_type'")
	awk -v n="$name" -v u="$user" -v s="$sys" -v r="$rss" -v t="$seconds" 'BEGIN {
		printf "%-36s CPU %6.2f s = %5.2f %% of one core; peak RSS %6.1f MB\n",
			n, u + s, 100 * (u + s) / t, r / 1024 }'
	awk -v v="$values" -v l="$labelled" -v s=$((after - before)) -v bpf="$bpf" 'BEGIN {
		split(bpf, x, " ");
		printf "  %d samples of postgres processes, %d with PostgreSQL labels; %d series created; BPF %.1f us per sample\n",
			v, l, s, (x[2] > 0 ? x[1] / x[2] / 1000 : 0) }'
}

echo "$clients pgbench clients busy (lookup and small sort), 19 Hz per CPU, $seconds s per run"
run_agent "labels"
run_agent "--label-drop=pg_query_id" --label-drop=pg_query_id
run_agent "--no-postgres" --no-postgres
kill "$pgbench_pid" 2>/dev/null
wait "$pgbench_pid" 2>/dev/null
pgbench_pid=
