#!/usr/bin/env bash
# parca on Citus (docs/scale-out.md), against an installed Citus: a
# coordinator and two workers on loopback, shared_preload_libraries =
# 'citus,parca'.  parca.samples (its time partitions with it) is
# distributed by series_id, the metastore made reference tables; the same
# profiles are stored in a database of the coordinator's server without
# Citus, and every query must give there and through the coordinator the
# same answer.  A worker stopped under a query must make it fail, not
# answer with the other worker's half.  Without Citus (no citus.control),
# the suite says it is skipped and counts nothing as passed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib.sh"

if [ ! -f "$(pg_config --sharedir)/extension/citus.control" ]; then
	echo "skipped: Citus is not installed"
	finish
	exit
fi
require_fixtures

# --- the cluster ------------------------------------------------------------
# Three servers made by start_cluster, each with Citus loaded first (Citus
# requires it); the maintenance workers stay off, so that partitions and
# rollups are made here, by hand, at known points.
base_port=${PARCA_CITUS_TEST_PORT:-55000}
node_dirs=()
node_ports=()
stop_nodes() {
	local d
	for d in "${node_dirs[@]}"; do
		PGDATA_DIR=$d stop_cluster
	done
}
for i in 0 1 2; do
	if ! start_cluster $((base_port + i)) "shared_preload_libraries = 'citus,parca'" \
		"parca.workers = off" "max_connections = 60"; then
		check "server $i starts with citus and parca loaded" false
		stop_nodes
		finish
		exit
	fi
	node_dirs+=("$PGDATA_DIR")
	node_ports+=("$PGPORT")
	q "CREATE EXTENSION citus" >/dev/null
done
trap stop_nodes EXIT
coordinator=${node_ports[0]}
export PGPORT=$coordinator
# qc SQL: on the coordinator's distributed database; qs SQL: the same SQL
# in the single-node database beside it
qc() { q "$1"; }
qs() { PGDATABASE=single q "$1"; }

q "SELECT citus_set_coordinator_host('127.0.0.1', $coordinator)" >/dev/null
for i in 1 2; do
	q "SELECT citus_add_node('127.0.0.1', ${node_ports[$i]})" >/dev/null
done
check_eq "two workers are active" 2 "$(q "SELECT count(*) FROM citus_get_active_worker_nodes()")"
PGOPTIONS='-c client_min_messages=warning' q "CREATE DATABASE single" >/dev/null
qs "CREATE EXTENSION parca" >/dev/null

# --- the same profiles in both ----------------------------------------------
work=${node_dirs[0]}/fixtures
mkdir -p "$work"
cp "$SHARED_TESTDATA/pprof/google-pprof/large.cpu" "$SHARED_TESTDATA/pprof/google-pprof/sample.cpu" \
	"$SHARED_TESTDATA/pprof/parca/alloc_objects.pb.gz" "$work/"
chown -R postgres: "$work"
chmod 755 "${node_dirs[0]}"

# the profiles' days have partitions before anything is written (the
# default partition's rows are not moved on Citus yet: docs/scale-out.md)
partitions_for_fixtures() {
	"$1" "SELECT count(parca.create_partition(t)) FROM (VALUES
		('2017-09-29'::timestamptz), ('2022-10-18')) v(t)" >/dev/null
}
partitions_for_fixtures qs

# parca.series has triggers (the series index, sql/31_series_index.sql):
# Citus distributes a table with triggers only when told to, and then
# fires them on each placement
q "ALTER SYSTEM SET citus.enable_unsafe_triggers = on" >/dev/null
q "SELECT pg_reload_conf()" >/dev/null
distribute() {
	q "SELECT create_reference_table(t) FROM unnest(ARRAY['parca.series', 'parca.locations',
		'parca.functions', 'parca.mappings']::regclass[]) t" >/dev/null &&
	q "SELECT create_distributed_table('parca.samples', 'series_id')" >/dev/null
}
check "the metastore made reference tables, parca.samples distributed by series_id" distribute
partitions_for_fixtures qc
check_eq "parca.samples' partitions are distributed with it" \
	"$(q "SELECT count(*) FROM pg_inherits WHERE inhparent = 'parca.samples'::regclass")" \
	"$(q "SELECT count(*) FROM pg_dist_partition p JOIN pg_inherits i ON i.inhrelid = p.logicalrelid
	      WHERE i.inhparent = 'parca.samples'::regclass AND p.partmethod = 'h'")"

ingest_fixtures() {
	"$1" "SELECT parca_ingest_pprof(pg_read_binary_file('$work/large.cpu'), 'cpu', '{\"job\": \"a\"}'),
	             parca_ingest_pprof(pg_read_binary_file('$work/sample.cpu'), 'cpu', '{\"job\": \"b\"}'),
	             parca_ingest_pprof(pg_read_binary_file('$work/large.cpu'), 'cpu', '{\"job\": \"c\", \"x\": \"1\"}'),
	             parca_ingest_pprof(pg_read_binary_file('$work/alloc_objects.pb.gz'), 'mem', '{\"job\": \"d\"}')" >/dev/null
}
check "parca_ingest_pprof on the single node" ingest_fixtures qs
check "parca_ingest_pprof through the coordinator" ingest_fixtures qc

rows_single=$(qs "SELECT count(*) FROM parca.samples")
check "profiles stored on the single node" test "$rows_single" -gt 0
check_eq "sample rows through the coordinator" "$rows_single" "$(qc "SELECT count(*) FROM parca.samples")"
check "sample rows in shards on both workers" test "$(q "SELECT count(DISTINCT c.nodeport)
	FROM run_command_on_shards('parca.samples', 'SELECT count(*) FROM %s') r JOIN pg_dist_placement USING (shardid) JOIN pg_dist_node c USING (groupid)
	WHERE r.success AND r.result::bigint > 0")" = 2

# parca-agent's COPY (binary, as agent/writer.c sends it): the rows of the
# first hour of the profiles again an hour later, copied out of the single
# node and into both (the same series ids: both assigned them in the same
# order)
check_eq "the same series ids in both" "$(qs "SELECT string_agg(id || labels::text, ',' ORDER BY id) FROM parca.series")" \
	"$(qc "SELECT string_agg(id || labels::text, ',' ORDER BY id) FROM parca.series")"
copy_out="COPY (SELECT time + interval '1 hour', series_id, stack, value, period, duration FROM parca.samples) TO STDOUT (FORMAT binary)"
copy_in="COPY parca.samples (time, series_id, stack, value, period, duration) FROM STDIN (FORMAT binary)"
PGDATABASE=single psql -X -qc "$copy_out" >"$work/copy.bin"
copy_both() { PGDATABASE=single psql -X -qc "$copy_in" <"$work/copy.bin" && psql -X -qc "$copy_in" <"$work/copy.bin"; }
check "parca-agent's binary COPY through the coordinator" copy_both
check_eq "rows after the COPY" "$(qs "SELECT count(*) FROM parca.samples")" "$(qc "SELECT count(*) FROM parca.samples")"

# --- queries: the same answer on both -----------------------------------------
# same NAME SQL: SQL's output is the same in both databases (and not empty)
same() {
	local single dist
	single=$(qs "$2" 2>&1)
	dist=$(qc "$2" 2>&1)
	if [ -z "$single" ] || grep -q ERROR <<<"$single"; then
		check_eq "$1: the single node's answer" "an answer" "$(echo "$single" | head -c 300)"
	else
		check_eq "$1" "$(echo "$single" | head -c 300)" "$(echo "$dist" | head -c 300)"
	fi
}
range="'2000-01-01', '2030-01-01'"
same "parca_query: the profile's totals" \
	"SELECT parca_profile_total(p), parca_profile_stacks(p), parca_profile_type(p), parca_profile_period(p)
	 FROM parca_query('cpu:samples:count:cpu:nanoseconds:delta{job=~\"a|b|c\"}', $range) p"
same "parca_query: the same profile (its pprof)" \
	"SELECT md5(parca_pprof(parca_query('cpu:samples:count:cpu:nanoseconds:delta{job=~\"a|c\"}', $range)))"
same "parca_query of one series" \
	"SELECT md5(parca_pprof(parca_query('cpu:samples:count:cpu:nanoseconds:delta{job=\"b\"}', $range)))"
same "parca_query with group_by" \
	"SELECT md5(parca_pprof(parca_query('cpu:samples:count:cpu:nanoseconds:delta{}', $range, '{job}')))"
same "parca_query with a stack filter" \
	"SELECT md5(parca_pprof(parca_query('cpu:samples:count:cpu:nanoseconds:delta{}', $range,
	                                     keep_function => 'runtime')))"
same "parca_query_range" \
	"SELECT * FROM parca_query_range('cpu:samples:count:cpu:nanoseconds:delta{}', $range, '1 day')"
same "parca_query_range with sum_by" \
	"SELECT * FROM parca_query_range('cpu:samples:count:cpu:nanoseconds:delta{}', $range, '1 day', '{x}')"
same "parca_top" \
	"SELECT * FROM parca_top(parca_query('cpu:samples:count:cpu:nanoseconds:delta{}', $range)) LIMIT 50"
same "parca_icicle" \
	"SELECT md5(string_agg(i::text, E'\n')) FROM parca_icicle(parca_query('cpu:samples:count:cpu:nanoseconds:delta{}', $range)) i"
same "parca_diff" \
	"SELECT md5(string_agg(i::text, E'\n')) FROM parca_icicle_diff(parca_diff(
		parca_query('cpu:samples:count:cpu:nanoseconds:delta{job=\"a\"}', $range),
		parca_query('cpu:samples:count:cpu:nanoseconds:delta{job=\"b\"}', $range))) i"
same "parca_profile_types, parca_labels" \
	"SELECT (SELECT string_agg(t, ',' ORDER BY t) FROM parca_profile_types() t),
	        (SELECT string_agg(l, ',' ORDER BY l) FROM parca_labels() l)"

# --- what runs where ---------------------------------------------------------
plan=$(qc "EXPLAIN (VERBOSE, COSTS OFF) SELECT series_id, parca_merge(stack, value) FROM parca.samples
	   WHERE series_id = ANY ('{1,2,3}') GROUP BY series_id")
check "the merge grouped by series runs on the workers" grep -q "parca_merge" <<<"$(grep -A100 'Task Count' <<<"$plan")"

# --- the metastore's garbage collection: not on Citus yet ---------------------
# It reads each partition's references; on the coordinator a partition is
# an empty shell, which refers to nothing: it must refuse, not collect
# every location.
counts="SELECT (SELECT count(*) FROM parca.series), (SELECT count(*) FROM parca.locations)"
before=$(qc "$counts")
check "parca_metastore_gc refuses on Citus" grep -q "Citus shards" <<<"$(qc "SELECT parca_metastore_gc()" 2>&1)"
check_eq "the metastore is kept whole" "$before" "$(qc "$counts")"

# --- a worker stopped under queries -----------------------------------------
# Queries run one after the other in one session while the second worker
# is stopped: each must give the whole profile or fail, never the first
# worker's half.  The first runs before the stop, a later one after it.
total=$(qs "SELECT parca_profile_total(parca_query('cpu:samples:count:cpu:nanoseconds:delta{}', $range))")
(sleep 3; runuser -u postgres -- "$PG_BIN/pg_ctl" -D "${node_dirs[2]}/data" -m immediate stop >/dev/null 2>&1) &
stopper=$!
out=$(for _ in $(seq 1 30); do
	echo "SELECT 'total ' || parca_profile_total(parca_query('cpu:samples:count:cpu:nanoseconds:delta{}', $range));"
	echo "SELECT pg_sleep(0.2);"
done | psql -X -qAt 2>&1)
wait $stopper
check "queries before the stop give the whole profile" grep -qx "total $total" <<<"$out"
check "queries after the stop fail" grep -q "ERROR" <<<"$out"
check_eq "no query gives a partial profile" "" "$(grep '^total ' <<<"$out" | grep -vx "total $total")"

finish
