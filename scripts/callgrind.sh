#!/usr/bin/env bash
# Instructions executed by a fixed workload, counted by valgrind's
# callgrind: the way to compare two builds on a loaded machine, where wall
# time is noise.  Run it once per build (each installed in turn, e.g. in
# two `tools/isolate` namespaces) and compare the lines.
#
# Workloads, each on a fresh copy of one prepared cluster, run by a
# single-user backend under callgrind; a run with no statement gives the
# cost of starting and stopping the backend, which is taken off the others:
#   copy     binary COPY of CALLGRIND_ROWS generated rows (bench/gen_samples.c,
#            default 300,000) into a parca_columnar table;
#   commits  200 INSERTs of 500 of those rows, each its own transaction
#            (inline stripes, compaction at commit);
#   ingest   parca_ingest_pprof of parca/alloc_objects.pb.gz, once cold,
#            then 10 times warm;
#   query    parca_query over the generated rows in parca.samples, 3 times;
#   series   200 new series as the agent makes them, among CALLGRIND_SERIES
#            (default 100,000) agent-like ones: parca_series_id and a sample
#            row each, 10 a transaction.
# Prints "workload instructions" lines.
#
# usage: scripts/callgrind.sh [OUTDIR]   (OUTDIR keeps the callgrind files)
set -euo pipefail
cd "$(dirname "$0")/.."
source test/lib.sh

rows=${CALLGRIND_ROWS:-300000}
series=${CALLGRIND_SERIES:-100000}
out=${1:-}
work=$(mktemp -d /tmp/parca-callgrind.XXXXXX)
chown postgres: "$work"
trap 'stop_cluster; rm -rf "$work"' EXIT

cc -O2 -o "$work/gen_samples" bench/gen_samples.c -lm
"$work/gen_samples" "$rows" 50 > "$work/samples.bin"
cp "$SHARED_TESTDATA/pprof/parca/alloc_objects.pb.gz" "$work/p.gz"
chmod 644 "$work/samples.bin" "$work/p.gz"

# the prepared cluster: the generated rows in a heap table g and, shifted
# onto series of their own, in parca.samples
start_cluster 54471 "autovacuum = off" "max_wal_size = 4GB"
q "CREATE TABLE g (LIKE parca.samples)"
q "COPY g FROM '$work/samples.bin' (FORMAT binary)"
q "CREATE TABLE c (LIKE parca.samples) USING parca_columnar"
q "CREATE TABLE g_numbered AS SELECT row_number() OVER () AS n, * FROM g LIMIT 100000"
q "CREATE INDEX ON g_numbered (n)"
q "INSERT INTO parca.series (profile_type, labels)
   SELECT 'gen:samples:count:cpu:nanoseconds:delta', jsonb_build_object('instance', i::text)
   FROM generate_series(1, 50) i"
first=$(q "SELECT min(id) FROM parca.series")
q "INSERT INTO parca.samples SELECT time, series_id + $first - 1, stack, value, period, duration,
   num_labels FROM g"
q "INSERT INTO parca.series (profile_type, labels)
   SELECT 'parca_agent:samples:count:cpu:nanoseconds:delta',
          jsonb_build_object('node', 'node-' || (i / 4) % 8, 'comm', 'comm' || (i / 4) % 300,
                             'pid', (1000 + i / 4)::text, 'thread_id', (1000 + i)::text, 'cpu', (i % 16)::text,
                             'kernel_release', '6.1.0-18-amd64', 'unwind', 'complete')
   FROM generate_series(0, $series - 1) i"
q "VACUUM ANALYZE"
q "CHECKPOINT"
runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGDATA_DIR/data" -m fast -w stop >/dev/null
cp -a "$PGDATA_DIR/data" "$work/base"

ingest="SELECT parca_ingest_pprof(pg_read_binary_file('$work/p.gz'), 'memory', '{\"job\": \"cg\"}');"
declare -A sql
sql[copy]="COPY c FROM '$work/samples.bin' (FORMAT binary);"
sql[commits]=$(for i in $(seq 0 199); do
	echo "INSERT INTO c SELECT time, series_id, stack, value, period, duration, num_labels FROM g_numbered WHERE n > $((i * 500)) AND n <= $((i * 500 + 500));"
done)
sql[ingest]=$(for i in $(seq 0 10); do echo "$ingest"; done)
sql[query]=$(for i in 1 2 3; do
	echo "SELECT parca_profile_stacks(parca_query('gen:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity'));"
done)

sql[series]=$(for b in $(seq 0 19); do
	echo "BEGIN;"
	# (one line: the single-user backend ends a statement at a newline)
	echo "INSERT INTO parca.samples (time, series_id, stack, value, period, duration)" \
		"SELECT now(), parca_series_id('parca_agent:samples:count:cpu:nanoseconds:delta'," \
		"jsonb_build_object('node', 'node-new', 'comm', 'fresh', 'pid', ($b + 9000000)::text," \
		"'thread_id', ($b * 10 + i + 9000000)::text, 'cpu', (i % 16)::text," \
		"'kernel_release', '6.1.0-18-amd64', 'unwind', 'complete'))," \
		"'{1,2,3}'::stacktrace, 1, 52631578, 10000000000 FROM generate_series(0, 9) i;"
	echo "COMMIT;"
done)

sql[empty]=""
for w in empty copy commits ingest query series; do
	rm -rf "$work/run"
	cp -a "$work/base" "$work/run"
	printf '%s\n' "${sql[$w]}" > "$work/$w.sql"
	runuser -u postgres -- valgrind --tool=callgrind --callgrind-out-file="$work/$w.callgrind" \
		"$PG_BIN/postgres" --single -D "$work/run" postgres < "$work/$w.sql" \
		> "$work/$w.log" 2>&1 || { tail -20 "$work/$w.log" >&2; exit 1; }
	if grep -q 'ERROR' "$work/$w.log"; then
		grep -m5 ERROR "$work/$w.log" >&2
		exit 1
	fi
	total=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$work/$w.callgrind")
	if [ "$w" = empty ]; then base_ir=$total; else echo "$w $((total - base_ir))"; fi
	[ -n "$out" ] && mkdir -p "$out" && cp "$work/$w.callgrind" "$out/"
done
