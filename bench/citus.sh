#!/usr/bin/env bash
# parca on Citus (docs/scale-out.md) against one server, on the same data
# in one run: a coordinator and two workers on loopback, and a database
# "single" without Citus on the coordinator's server.  Without Citus
# installed (no citus.control) it says so and measures nothing.
#
# Data: google-pprof/large.cpu ingested under BENCH_CITUS_SERIES label
# sets (default 4; 40,860 rows each: 20,430 stacks, two sample types),
# then copied to the BENCH_CITUS_DAYS - 1 days after it (default 30 days
# in all) by INSERT ... SELECT into daily partitions made ahead.
# Reported:
# - ingest rows/s of parca_ingest_pprof through a coordinator with one
#   worker (database w1) and with two (the distributed one), and into the
#   single node: the same calls, one database after the other;
# - the flame graph (parca_query) of 1 day and of all days, through the
#   coordinator and on the single node (best of 3 each);
# - from EXPLAIN ANALYZE of the pushed-down merge (citus.explain_all_tasks):
#   each task's rows merged and time (rows merged per worker task per
#   second: the workers share this machine's cores, so a task's time is
#   one node's work), and the bytes the workers sent the coordinator.
# Needs root (test/lib.sh starts the servers as postgres).
set -euo pipefail
cd "$(dirname "$0")/.."
source test/lib.sh
if [ ! -f "$(pg_config --sharedir)/extension/citus.control" ]; then
	echo "skipped: Citus is not installed"
	exit 0
fi
SERIES=${BENCH_CITUS_SERIES:-4}
DAYS=${BENCH_CITUS_DAYS:-30}
base_port=${PARCA_BENCH_CITUS_PORT:-54460}

start_citus_cluster "$base_port" "shared_buffers = 256MB" "jit = off" || exit 1
dirs=("${citus_dirs[@]}")
ports=("${citus_ports[@]}")
coordinator=${ports[0]}
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"$1\", $2 }"; }
echo "machine load: $(uptime | sed 's/.*load average/load average/')"

work=${dirs[0]}/fixtures
mkdir -p "$work"
cp "$SHARED_TESTDATA/pprof/google-pprof/large.cpu" "$work/"
chown -R postgres: "$work"
chmod 755 "${dirs[0]}"

# every database: w1 (coordinator + worker 1), postgres (+ both), single
for i in 0 1 2; do
	PGPORT=${ports[$i]} PGOPTIONS='-c client_min_messages=warning' q "CREATE DATABASE w1" >/dev/null
	for db in postgres w1; do
		PGPORT=${ports[$i]} PGDATABASE=$db PGOPTIONS='-c client_min_messages=warning' q "CREATE EXTENSION IF NOT EXISTS citus;
			CREATE EXTENSION IF NOT EXISTS parca" >/dev/null
	done
done
export PGPORT=$coordinator
PGOPTIONS='-c client_min_messages=warning' q "CREATE DATABASE single" >/dev/null
PGDATABASE=single q "CREATE EXTENSION parca" >/dev/null
q "ALTER SYSTEM SET citus.enable_unsafe_triggers = on" >/dev/null
q "SELECT pg_reload_conf()" >/dev/null
setup() {
	local db=$1 workers=$2 i
	PGDATABASE=$db q "SELECT citus_set_coordinator_host('127.0.0.1', $coordinator)" >/dev/null
	for i in $(seq 1 "$workers"); do
		PGDATABASE=$db q "SELECT citus_add_node('127.0.0.1', ${ports[$i]})" >/dev/null
	done
	PGDATABASE=$db q "SELECT create_reference_table(t) FROM unnest(ARRAY['parca.series', 'parca.locations',
		'parca.functions', 'parca.mappings']::regclass[]) t" >/dev/null
	PGDATABASE=$db q "SELECT create_distributed_table('parca.samples', 'series_id')" >/dev/null
}
setup w1 1
setup postgres 2
# large.cpu's samples are of 2022-10-18
day0=2022-10-18
for db in single w1 postgres; do
	PGDATABASE=$db q "SELECT count(parca.create_partition('$day0'::timestamptz + d * interval '1 day'))
		FROM generate_series(0, $DAYS - 1) d" >/dev/null
done

echo
echo "ingest: $SERIES parca_ingest_pprof calls of large.cpu, three rounds (the first writes the locations)"
ingest() {
	local db=$1 round=$2 t0 t1 rows
	t0=$(now)
	PGDATABASE=$db q "SELECT count(parca_ingest_pprof(pg_read_binary_file('$work/large.cpu'), 'cpu',
		jsonb_build_object('job', 'r$round-' || j))) FROM generate_series(1, $SERIES) j" >/dev/null
	t1=$(now)
	rows=$((SERIES * 40860))
	echo "  $(case $db in single) echo single;; w1) echo "Citus, 1 worker";; *) echo "Citus, 2 workers";; esac) round $round: $(calc "%.2f s, %.0f rows/s" "$t1 - $t0, $rows / ($t1 - $t0)")"
}
for round in 1 2 3; do
	for db in single w1 postgres; do
		ingest "$db" "$round"
	done
done

echo
echo "copying round 1's rows to $((DAYS - 1)) more days"
for db in single postgres; do
	t0=$(now)
	PGDATABASE=$db q "INSERT INTO parca.samples
		SELECT s.time + d * interval '1 day', s.series_id, s.stack, s.value, s.period, s.duration, s.num_labels
		FROM parca.samples s, generate_series(1, $DAYS - 1) d
		WHERE s.series_id IN (SELECT id FROM parca.series WHERE labels->>'job' LIKE 'r1-%')
		  AND s.time < '$day0'::timestamptz + interval '1 day'" >/dev/null
	echo "  $db: $(calc "%.1f s" "$(now) - $t0")"
	PGDATABASE=$db q "VACUUM ANALYZE parca.samples" >/dev/null
done

echo
selector='cpu:samples:count:cpu:nanoseconds:delta{job=~"r1-.*"}'
query() {
	local db=$1 stop=$2 best=999999 t0 t1 total
	for _ in 1 2 3; do
		t0=$(now)
		total=$(PGDATABASE=$db q "SELECT parca_profile_total(parca_query('$selector', '$day0', '$stop'))")
		t1=$(now)
		best=$(calc "%.3f" "($t1 - $t0) < $best ? ($t1 - $t0) : $best")
	done
	echo "$best s (total $total)"
}
one_day=$(q "SELECT '$day0'::timestamptz + interval '1 day' - interval '1 second'")
all_days=$(q "SELECT '$day0'::timestamptz + interval '$DAYS days' - interval '1 second'")
echo "parca_query, 1 day ($((SERIES * 20430)) rows merged):"
echo "  single: $(query single "$one_day")"
echo "  Citus, coordinator + 2 workers: $(query postgres "$one_day")"
echo "parca_query, $DAYS days ($((SERIES * 20430 * DAYS)) rows merged):"
echo "  single: $(query single "$all_days")"
echo "  Citus, coordinator + 2 workers: $(query postgres "$all_days")"

echo
ids=$(q "SELECT array_agg(id ORDER BY id) FROM parca.series WHERE profile_type = 'cpu:samples:count:cpu:nanoseconds:delta' AND labels->>'job' LIKE 'r1-%'")
plan=$(q "SET citus.explain_all_tasks = on;
	EXPLAIN (ANALYZE, VERBOSE, COSTS OFF)
	WITH s AS MATERIALIZED (SELECT series_id, parca_merge(stack, value) AS p FROM parca.samples
	                        WHERE time >= '$day0' AND time <= '$all_days' AND series_id = ANY ('$ids')
	                        GROUP BY series_id)
	SELECT parca_profile_total(parca.merge_profiles(s.p)) FROM s" | tail -n +2)
[ -n "${BENCH_CITUS_PLAN:-}" ] && echo "$plan" >"$BENCH_CITUS_PLAN"
echo "the pushed-down merge, $DAYS days (EXPLAIN ANALYZE, one line per worker task):"
# per task (one shard's series on its worker): the time of its
# aggregate (the first node under it), the rows of the (parallel) append
# of its partitions' scans (rows times loops), and the processes that
# shared the work (the parallel workers launched, and the leader)
awk '/->  Task/ { task++; first = 1; append = 1; procs[task] = 1 }
	task && first && /Aggregate \(actual time=/ { match($0, /actual time=[0-9.]+\.\.[0-9.]+/); split(substr($0, RSTART + 12, RLENGTH - 12), t, "\\.\\."); ms[task] = t[2]; first = 0 }
	task && append && /Append \(actual time=/ { match($0, /rows=[0-9]+ loops=[0-9]+/); split(substr($0, RSTART, RLENGTH), r, /[= ]/); rows[task] = r[2] * r[4]; append = 0 }
	task && /Workers Launched:/ && procs[task] == 1 { procs[task] = $NF + 1 }
	/Tuple data received from node:/ { sub(/.*node: /, ""); bytes[task] = $0 }
	task && /Node: host=/ { match($0, /port=[0-9]+/); node[task] = substr($0, RSTART + 5, RLENGTH - 5) }
	END { for (i = 1; i <= task; i++) if (rows[i] > 0)
		printf "  task %d (port %s): %d rows in %.2f s by %d processes: %.0f rows/s, %.0f rows/s a process; sent %s\n",
			i, node[i], rows[i], ms[i] / 1000, procs[i], rows[i] / (ms[i] / 1000), rows[i] / (ms[i] / 1000) / procs[i], bytes[i] }' <<<"$plan"
echo "  from the workers to the coordinator in all: $(grep -m1 'Tuple data received from nodes:' <<<"$plan" | sed 's/.*nodes: //')"
echo "  as rows, about $(calc "%.0f MB" "$(PGDATABASE=single q "SELECT sum(pg_column_size(stack) + 32) FROM parca.samples WHERE time >= '$day0' AND time <= '$all_days' AND series_id = ANY ('$ids')") / 1e6")"

echo
# On Citus the series index has no hours (the rows are written on the
# workers' shards): discovery over a range asks the shards for the
# distinct series of their rows in it (docs/scale-out.md)
echo "parca_profile_types(start, stop), best of 3:"
for stop in "$one_day" "$all_days"; do
	types="SELECT count(*) FROM parca_profile_types('$day0', '$stop')"
	echo "  to $stop: single $(PGDATABASE=single best_of_3 "$types") s, Citus $(best_of_3 "$types") s"
done
# The collection finds the references: on one server per partition, read
# again only when rows came to it; on Citus every shard's rows each time
echo "parca_metastore_gc() (nothing to collect), first and second run:"
gc="SELECT parca_metastore_gc()"
echo "  single: $(PGDATABASE=single seconds "$gc") s, $(PGDATABASE=single seconds "$gc") s"
echo "  Citus, coordinator + 2 workers: $(seconds "$gc") s, $(seconds "$gc") s"
