#!/usr/bin/env bash
# parca_query's merge against a peer (issue 30): the same rows merged by
# parca_query and grouped by DuckDB (npm @duckdb/node-api, installed here
# into bench/duckdb/node_modules, which git ignores) by a precomputed
# 64-bit stack id, each with 1 and 2 threads, in one run.
#
# The rows: BENCH_MERGE_DAYS (default 30) simulated days of
# BENCH_MERGE_INTERVALS (default 4) profiles of google-pprof/large.cpu a
# day, each its own parca_ingest_pprof call (bench/lib/pushed_profiles.sh,
# bench/storage.sh's loader; BENCH_MERGE_SMALL small profiles beside each,
# default 0), VACUUM after each day as autovacuum would, so one day
# partition a day; parca_query merges the big profiles' samples/count
# (120 x 20,430 = 2.45 M rows by default).  Then the same rows, their
# times squeezed into one day, bulk-loaded by one COPY: one partition.
# DuckDB reads the same rows (stack id = stacktrace_hash_extended(stack,
# 0), value, period) exported once to CSV, into a table in memory, and
# runs SELECT stack_id, sum(value * period) ... GROUP BY stack_id.
#
# Every figure is the median of BENCH_MERGE_ROUNDS (default 5) rounds of
# BENCH_MERGE_RUNS (default 7) runs, each round after a first run, warm:
# parca_query in one session, with max_parallel_workers_per_gather = 0 (1
# thread) and 1 (2 threads), and 1 with min_parallel_table_scan_size = 0
# (a worker whatever the rows); DuckDB with 1 and 2 threads.  Within a
# round each setting of each takes its turn, DuckDB's between
# parca_query's (in both shapes), so that a machine whose speed drifts
# over the minutes of a run (a shared one's does, by 20 % or more) slows
# both alike.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../test/lib.sh"
source "$here/lib/pushed_profiles.sh"
require_fixtures

days=${BENCH_MERGE_DAYS:-30}
pushed_intervals=${BENCH_MERGE_INTERVALS:-4}
pushed_small_per_interval=${BENCH_MERGE_SMALL:-0}
runs=${BENCH_MERGE_RUNS:-7}
rounds=${BENCH_MERGE_ROUNDS:-5}

# DuckDB first: a bench that cannot compare should fail before loading
npm_log=$(mktemp /tmp/parca-bench-merge-npm.XXXXXX)
(cd "$here/duckdb" && npm ci --no-audit --no-fund --loglevel=error >"$npm_log" 2>&1) || {
	tail -n 20 "$npm_log" >&2
	echo "bench/merge.sh: npm ci of @duckdb/node-api failed" >&2
	exit 1
}
rm -f "$npm_log"

start_cluster "${PARCA_BENCH_MERGE_PORT:-54457}" "shared_buffers = 512MB" "max_wal_size = 8GB" \
	"checkpoint_timeout = 30min" "jit = off" "max_parallel_workers = 8"
work=$PGDATA_DIR/bench
mkdir "$work"
pushed_profiles_setup "$work"

t0=$(q "SELECT extract(epoch FROM date_trunc('day', now()))::bigint")
for d in $(seq 0 $((days - 1))); do
	pushed_day_sql "$work" $((t0 + d * 86400)) "$work/day.sql"
	psql -X -qAt -v ON_ERROR_STOP=1 -f "$work/day.sql" >/dev/null
	q "VACUUM parca.columnar_stripes" >/dev/null
	q "VACUUM parca.samples" >/dev/null
	q "SELECT parca_maintain_partitions()" >/dev/null
done
q "VACUUM ANALYZE parca.samples" >/dev/null

type=$(q "SELECT profile_type FROM parca.series WHERE labels->>'job' = 'big' AND profile_type LIKE 'bench:samples:count:%' LIMIT 1")
selector="$type{job=\"big\"}"
ids=$(q "SELECT parca_series_ids('$selector')")
rows=$(q "SELECT count(*) FROM parca.samples WHERE series_id = ANY ('$ids')")
query="SELECT parca_profile_stacks(parca_query('$selector', '-infinity', 'infinity'))"
stacks=$(q "$query")

# The same rows for DuckDB, exported once and loaded by one process that
# stays for the whole run (bench/duckdb/group.js), answering on its input.
q "COPY (SELECT stacktrace_hash_extended(stack, 0), value, period FROM parca.samples
	WHERE series_id = ANY ('$ids')) TO '$work/rows.csv' (FORMAT csv)"
coproc DUCKDB { node "$here/duckdb/group.js" "$work/rows.csv"; }
duckdb_out=${DUCKDB[0]} duckdb_in=${DUCKDB[1]} duckdb_pid=$DUCKDB_PID
read -r groups <&"$duckdb_out"
duckdb_version=$(node -e "console.log(require('$here/duckdb/node_modules/@duckdb/node-api/package.json').version)")

# parca_runs SQL WORKERS [SETTING]: the times of $runs runs of SQL in one
# session after a first one, with max_parallel_workers_per_gather = WORKERS
# (and SETTING, an SQL SET)
parca_runs() {
	{ echo "SET max_parallel_workers_per_gather = $2;"; echo "${3:-}"; echo '\timing on'
	  for _ in $(seq 0 "$runs"); do echo "$1;"; done; } |
		psql -X -qAt | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -n "$runs" | tr '\n' ' '
}
# duckdb_runs THREADS: the times of $runs runs of DuckDB's grouping
duckdb_runs() {
	local times
	echo "$1 $runs" >&"$duckdb_in"
	read -r times <&"$duckdb_out"
	echo "$times"
}
# rounds SHAPE: $rounds rounds of every setting in turn, each run's time
# appended to $work/times.SHAPE.SETTING (DuckDB's to $work/times.duckdb.*)
rounds() {
	for _ in $(seq "$rounds"); do
		parca_runs "$query" 0 >> "$work/times.$1.one"
		duckdb_runs 1 >> "$work/times.duckdb.one"
		parca_runs "$query" 1 >> "$work/times.$1.two"
		duckdb_runs 2 >> "$work/times.duckdb.two"
		parca_runs "$query" 1 "SET min_parallel_table_scan_size = 0;" >> "$work/times.$1.forced"
	done
}
median() { tr -s ' ' '\n' < "$1" | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
per_second() { awk -v n="$rows" -v ms="$1" 'BEGIN { printf "%.1f", n / ms / 1000 }'; }
line() { printf '%-34s %9s ms %7s M rows/s %9s ms %7s M rows/s\n' "$1" "$2" "$(per_second "$2")" "$3" "$(per_second "$3")"; }
# below 2 M rows (a quarter of min_parallel_table_scan_size's bytes) the
# merge starts no worker: "2 threads" is then one process (with fewer
# BENCH_MERGE_DAYS), and the line after has the merge with a worker at
# any size
parca_lines() {
	local forced
	line "$1" "$(median "$work/times.$2.one")" "$(median "$work/times.$2.two")"
	forced=$(median "$work/times.$2.forced")
	printf '%-34s %30s %9s ms %7s M rows/s\n' "  with a worker at any size" "" "$forced" "$(per_second "$forced")"
}
partitions() { q "SELECT count(*) FROM parca.partition_ranges() p WHERE (SELECT count(*) > 0 FROM parca.samples s WHERE s.tableoid = p.partition::regclass)"; }

days_label="parca_query, $(partitions) day partitions"
rounds days
md5_days=$(q "SELECT md5(parca_query('$selector', '-infinity', 'infinity')::text)")

# one partition: the same rows, their times squeezed into the first day
q "COPY (SELECT to_timestamp($t0) + (time - to_timestamp($t0)) / $days, series_id, stack, value, period,
	duration, num_labels FROM parca.samples) TO '$work/one.bin' (FORMAT binary)"
q "TRUNCATE parca.samples"
q "COPY parca.samples (time, series_id, stack, value, period, duration, num_labels) FROM '$work/one.bin' (FORMAT binary)"
q "SELECT parca_maintain_partitions()" >/dev/null
q "VACUUM ANALYZE parca.samples" >/dev/null
one_label="parca_query, $(partitions) partition (one COPY)"
rounds one
md5_one=$(q "SELECT md5(parca_query('$selector', '-infinity', 'infinity')::text)")
exec {duckdb_in}>&-
wait "$duckdb_pid"

echo "$rows rows: $((days * pushed_intervals)) profiles of large.cpu (samples/count), one parca_ingest_pprof call each, $stacks distinct stacks"
printf '%-34s %30s %30s\n' "" "1 thread" "2 threads"
parca_lines "$days_label" days
parca_lines "$one_label" one
line "DuckDB $duckdb_version, same rows" "$(median "$work/times.duckdb.one")" "$(median "$work/times.duckdb.two")"
[ "$groups" = "$stacks" ] || echo "bench/merge.sh: DuckDB found $groups stack ids, parca_query $stacks stacks" >&2
[ "$md5_one" = "$md5_days" ] || echo "bench/merge.sh: parca_query's answers differ between the two shapes" >&2
echo "parca_query's answer (both shapes): md5 $md5_days of the encoded profile"
echo "(medians of $rounds rounds of $runs runs after a first, warm, the settings and DuckDB in turn in each round;"
echo " parca_query in one session with max_parallel_workers_per_gather 0 and 1; DuckDB in memory with SET threads"
echo " 1 and 2, its runs pooled over both shapes; load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores)"
