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
# A coordinator and two workers (test/lib.sh); the maintenance workers stay
# off, so that partitions and rollups are made here, by hand, at known
# points (until the section on the background workers).
if ! start_citus_cluster "${PARCA_CITUS_TEST_PORT:-55000}"; then
	check "the servers start with citus and parca loaded" false
	finish
	exit
fi
node_dirs=("${citus_dirs[@]}")
node_ports=("${citus_ports[@]}")
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

# the profiles' days have partitions before anything is written
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
# same NAME SQL [WRAPPER]: SQL's output is the same in both databases (and
# not empty), each run by WRAPPER (a command that runs its arguments) if given
same() {
	local single dist
	single=$(${3:-} qs "$2" 2>&1)
	dist=$(${3:-} qc "$2" 2>&1)
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

# Discovery over a time range (what Grafana's variables ask): on Citus the
# series with rows in the range are found on the shards.  Ranges of each
# fixture's day, of a day without rows, and of everything.
days="('2017-09-29'::timestamptz, '2017-09-30'::timestamptz), ('2022-10-18', '2022-10-19'), ('2019-01-01', '2019-01-02'), ($range)"
listed() { echo "coalesce((SELECT string_agg(x::text, ',' ORDER BY x::text) FROM $1 x), '-')"; }
same "parca_profile_types over time ranges" \
	"SELECT $(listed "parca_profile_types(d.start, d.stop)") FROM (VALUES $days) d(start, stop)"
same "parca_labels over time ranges" \
	"SELECT $(listed "parca_labels('{}', d.start, d.stop)"),
	        $(listed "parca_labels('cpu:samples:count:cpu:nanoseconds:delta{}', d.start, d.stop)"),
	        $(listed "parca_labels('cpu:samples:count:cpu:nanoseconds:delta{job=~\"a|b\"}', d.start, d.stop)")
	 FROM (VALUES $days) d(start, stop)"
same "parca_label_values over time ranges" \
	"SELECT $(listed "parca_label_values('job', '{}', d.start, d.stop)"),
	        $(listed "parca_label_values('job', 'cpu:samples:count:cpu:nanoseconds:delta{x=\"1\"}', d.start, d.stop)"),
	        $(listed "parca_label_values('x', 'cpu:samples:count:cpu:nanoseconds:delta{}', d.start, d.stop)")
	 FROM (VALUES $days) d(start, stop)"

# --- partitions, retention and rollups: the same on both --------------------
# (qm: with the rollups on, and a retention of 5 years, 2,628,000 minutes:
# the fixtures' 2017 day and the rows moved 6 years back are older)
qm() { PGOPTIONS='-c parca.rollups=on -c parca.retention=2628000' "$@"; }
# Rows of a day without a partition go to the default partition; the
# maintenance moves them into a partition of their own.  On Citus the
# default partition's rows are in its shards: they must move, not stay
# beside their copies.
to_default="INSERT INTO parca.samples SELECT time + interval '30 days', series_id, stack, value, period, duration, num_labels
	FROM parca.samples WHERE time >= '2022-10-18' AND time < '2022-10-19'"
qs "$to_default" >/dev/null
qc "$to_default" >/dev/null
same "rows in the default partition" "SELECT count(*) FROM parca.samples_default"
same "parca_maintain_partitions moves the default partition's rows" \
	"SELECT moved_rows FROM parca_maintain_partitions()"
same "sample rows after the move (none twice)" "SELECT count(*), sum(value) FROM parca.samples"
check_eq "the default partition is empty after the move" 0 "$(qc "SELECT count(*) FROM parca.samples_default")"
same "parca_query over the moved day" \
	"SELECT md5(parca_pprof(parca_query('cpu:samples:count:cpu:nanoseconds:delta{}', '2022-11-17', '2022-11-18')))"

# Rollups by hand, then queries that read them (whole hours, days)
rolled="'2022-10-01', '2022-12-01'"
same "parca_rollup_hours" "SELECT * FROM parca_rollup_hours($rolled)" qm
same "the hourly rollups" "SELECT count(*), sum(value) FROM parca.samples_hourly"
same "the daily rollups" "SELECT count(*), sum(value) FROM parca.samples_daily"
same "parca_query over rolled-up hours and days" \
	"SELECT md5(parca_pprof(parca_query('cpu:samples:count:cpu:nanoseconds:delta{}', $rolled)))" qm
same "parca_query_range over rolled-up hours" \
	"SELECT md5(string_agg(r::text, ',')), count(*) FROM parca_query_range('cpu:samples:count:cpu:nanoseconds:delta{}', $rolled, '1 hour', '{job}') r" qm
same "parca_query_range over rolled-up and raw hours" \
	"SELECT md5(string_agg(r::text, ',')), count(*) FROM parca_query_range('cpu:samples:count:cpu:nanoseconds:delta{}', '2022-10-18 05:30', '2022-11-20 17:10', '1 day') r" qm
# rows written late into an hour rolled up: rolled up again, by difference
late="INSERT INTO parca.samples SELECT time + interval '1 minute', series_id, stack, value, period, duration, num_labels
	FROM parca.samples WHERE time >= '2022-10-18' AND time < '2022-10-19' AND series_id = (SELECT min(id) FROM parca.series)"
qs "$late" >/dev/null
qc "$late" >/dev/null
# (on Citus every hour of the range is rolled up again, there being no
# write log: the same rollup rows are written, for more hours looked at)
same "parca_rollup_hours after late rows: the rollup rows written" "SELECT rows FROM parca_rollup_hours($rolled)" qm
same "parca_query_range after late rows rolled up" \
	"SELECT md5(string_agg(r::text, ',')), count(*) FROM parca_query_range('cpu:samples:count:cpu:nanoseconds:delta{}', $rolled, '1 hour') r" qm

# Retention: rows moved 6 years back (into the default partition, moved
# out by the maintenance) and the 2017 day are older than it; their hours
# are rolled up before their partitions are dropped, as on one server
to_past="INSERT INTO parca.samples SELECT time - interval '6 years', series_id, stack, value, period, duration, num_labels
	FROM parca.samples WHERE time >= '2022-10-18' AND time < '2022-10-19'"
qs "$to_past" >/dev/null
qc "$to_past" >/dev/null
same "retention: partitions made and dropped, rows moved" "SELECT * FROM parca_maintain_partitions()" qm
same "the partitions left" "SELECT string_agg(partition::text, ',' ORDER BY partition::text) FROM parca.partition_ranges()"
same "sample rows after retention" "SELECT count(*), sum(value) FROM parca.samples"
same "the hourly rollups keep the dropped rows' hours" "SELECT count(*), sum(value) FROM parca.samples_hourly"
same "parca_query over the dropped partitions (from the rollups)" \
	"SELECT md5(parca_pprof(parca_query('cpu:samples:count:cpu:nanoseconds:delta{}', '2016-10-01', '2016-11-01')))" qm
same "parca_query_range over the dropped partitions" \
	"SELECT md5(string_agg(r::text, ',')), count(*) FROM parca_query_range('cpu:samples:count:cpu:nanoseconds:delta{}', '2016-10-01', '2016-11-01', '1 hour', '{job}') r" qm

# --- what runs where ---------------------------------------------------------
plan=$(qc "EXPLAIN (VERBOSE, COSTS OFF) SELECT series_id, parca_merge(stack, value) FROM parca.samples
	   WHERE series_id = ANY ('{1,2,3}') GROUP BY series_id")
check "the merge grouped by series runs on the workers" grep -q "parca_merge" <<<"$(grep -A100 'Task Count' <<<"$plan")"

# --- the metastore's garbage collection --------------------------------------
# Garbage in both: a profile of another program (its own series, locations,
# functions, mappings) stored into the default partition, which is then
# emptied.  The collection finds the references on the workers' shards; it
# must remove what the single node's removes, and keep what the rows
# (and the rollups) name.
cp "$SHARED_TESTDATA/pprof/parca/fib.pb.gz" "$work/" && chown postgres: "$work/fib.pb.gz"
garbage="SELECT parca_ingest_pprof(pg_read_binary_file('$work/fib.pb.gz'), 'fib', '{\"job\": \"gone\"}')"
qs "$garbage" >/dev/null
qc "$garbage" >/dev/null
same "the profile to collect is in the default partition" "SELECT count(*) FROM parca.samples_default"
qs "TRUNCATE parca.samples_default" >/dev/null
qc "TRUNCATE parca.samples_default" >/dev/null
collected_single=$(qs "SELECT * FROM parca_metastore_gc()")
check "the single node's collection removes series, locations, functions and mappings" \
	awk -F'|' '{ exit !($1 > 0 && $2 > 0 && $3 > 0 && $4 > 0) }' <<<"$collected_single"
check_eq "parca_metastore_gc on Citus removes as many" "$collected_single" "$(qc "SELECT * FROM parca_metastore_gc()" 2>&1)"
ids_of() { echo "(SELECT count(*) || ' ' || md5(string_agg(id::text, ',' ORDER BY id)) FROM parca.$1)"; }
same "the metastore left: the same ids" \
	"SELECT $(ids_of series), $(ids_of locations), $(ids_of functions), $(ids_of mappings)"
same "the series index's label values left" \
	"SELECT count(*), md5(string_agg(concat_ws('|', profile_type, name, value), ',' ORDER BY profile_type, name, value))
	 FROM parca.label_values"
same "the queries after the collection" \
	"SELECT md5(parca_pprof(parca_query('cpu:samples:count:cpu:nanoseconds:delta{}', $range)))"
check_eq "every stored row resolves after the collection" "0|0|0|0" "$(metastore_resolves)"
check_eq "a second collection finds nothing" "0|0|0|0" "$(qc "SELECT * FROM parca_metastore_gc()")"

# Writers and the collection at once, as test/gc does on one server: two
# writers (one session each, whose metastore caches live across calls)
# store profiles into the default partition while a collector empties it
# and collects, holding parca.samples as the collection does.  The
# collection's lock reaches every writer through the coordinator: no
# writer may fail, and every row stored must resolve.
gc_under_writers "$work" "${PARCA_CITUS_GC_SECONDS:-15}" "TRUNCATE parca.samples_default" fib.pb.gz sample.cpu
# the rest of the suite compares with the single node: the writers' rows go
qc "TRUNCATE parca.samples_default" >/dev/null
qc "SELECT parca_metastore_gc()" >/dev/null

# --- parca's table options (parca.columnar_options) --------------------------
# They are this node's catalog: set on the coordinator they would not
# reach the shards on the workers, so setting them on a Citus table is
# refused, and changes nothing; on the single node they are set.
options="SELECT string_agg(relid::regclass || ' ' || coalesce(sort_by::text, '-'), ',' ORDER BY relid::regclass::text)
	FROM parca.columnar_options"
set_options="SELECT parca_columnar_set_options('parca.samples', sort_by => '{time}')"
options_before=$(qc "$options")
check "parca_columnar_set_options on the single node" eval 'qs "$set_options" >/dev/null'
check "parca_columnar_set_options refuses a Citus table" \
	grep -q "is a Citus table: its options would not reach its shards" <<<"$(qc "$set_options" 2>&1)"
check_eq "the coordinator's table options are unchanged" "$options_before" "$(qc "$options")"

# --- what src/installation/citus.c caches ---------------------------------------------------
# Whether a table is Citus's is cached per session, and forgotten when
# Citus changes its metadata: the answers follow a table distributed and
# undistributed in the session that does it, and in another session that
# asked before (the sessions wait for each other: the first distributes
# after the other's first answer, and undistributes after its second).
q "CREATE TABLE parca_cache_check (a int); CREATE TABLE parca_cache_asked (a int)" >/dev/null
wait_in_sql() { echo "DO \$\$ BEGIN FOR i IN 1 .. 600 LOOP EXIT WHEN $1; PERFORM pg_sleep(0.1); END LOOP; END \$\$;"; }
(echo "SELECT 'before ' || parca.is_citus_table('parca_cache_check');
       INSERT INTO parca_cache_asked VALUES (1);
       $(wait_in_sql "EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'parca_cache_check'::regclass)")
       SELECT 'after ' || parca.is_citus_table('parca_cache_check');
       INSERT INTO parca_cache_asked VALUES (2);" | psql -X -qAt >"$work/other.out" 2>&1) &
other=$!
cache_out=$(echo "$(wait_in_sql "EXISTS (SELECT 1 FROM parca_cache_asked)")
	SELECT 'before ' || parca.is_citus_table('parca_cache_check');
	SELECT create_distributed_table('parca_cache_check', 'a') IS NULL;
	SELECT 'distributed ' || parca.is_citus_table('parca_cache_check');
	$(wait_in_sql "EXISTS (SELECT 1 FROM parca_cache_asked WHERE a = 2)")
	SELECT undistribute_table('parca_cache_check') IS NULL;
	SELECT 'undistributed ' || parca.is_citus_table('parca_cache_check');" |
	PGOPTIONS='-c client_min_messages=warning' psql -X -qAt 2>&1)
wait $other
check_eq "parca.is_citus_table follows create_distributed_table and undistribute_table" \
	"before false,distributed true,undistributed false" \
	"$(grep -E '^(before|distributed|undistributed) ' <<<"$cache_out" | paste -sd,)"
check_eq "another session's cached answer follows too" "before false,after true" \
	"$(grep -E '^(before|after) ' "$work/other.out" | paste -sd,)"
q "DROP TABLE parca_cache_check, parca_cache_asked" >/dev/null

# --- the ingest's path on Citus ---------------------------------------------
# parca_ingest_pprof writes straight into a plain partition's storage
# (src/ingest/samples_insert.c); on Citus it must send the rows through Citus
# because the table is Citus's, not because of a trigger Citus happens to
# put on the coordinator's shell: without Citus's truncate triggers there
# the rows must still reach the shards.
# (on the coordinator only: the shards have no such triggers)
q "SELECT 'SET citus.enable_ddl_propagation = off;' UNION ALL
   SELECT format('DROP TRIGGER %I ON %s;', t.tgname, t.tgrelid::regclass) FROM pg_trigger t
   WHERE t.tgname LIKE 'truncate_trigger%' AND t.tgrelid <> 'parca.samples_default'::regclass
     AND (t.tgrelid = 'parca.samples'::regclass
          OR t.tgrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'parca.samples'::regclass))" |
	psql -X -q >/dev/null
check_eq "Citus's truncate triggers dropped from the coordinator's parca.samples" 0 \
	"$(q "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'parca.samples'::regclass")"
ingest_e="SELECT parca_ingest_pprof(pg_read_binary_file('$work/large.cpu'), 'cpu', '{\"job\": \"e\"}')"
qs "$ingest_e" >/dev/null
qc "$ingest_e" >/dev/null
same "sample rows after an ingest without Citus's triggers" "SELECT count(*), sum(value) FROM parca.samples"

# --- the background workers -------------------------------------------------
# With the workers on everywhere (as after CREATE EXTENSION, with no other
# setting) the coordinator's maintenance worker moves the default
# partition's rows and rolls new hours up, and its scrape worker stores a
# real Go program's profiles, as the single node's do; on the worker
# nodes parca's workers must leave the shards to the coordinator (no
# partitions made, no rows moved, nothing rolled up there).
# First everything rolled up by hand on both (the single node's write log
# is emptied), then rows of the hour before last and of ten days ago (no
# partition there: the default one) are written.
qm qs "SELECT parca_rollup_hours('2000-01-01', now())" >/dev/null
qm qc "SELECT parca_rollup_hours('2000-01-01', now())" >/dev/null
recent_hour=$(qs "SELECT date_bin('1 hour', now(), '1970-01-01 00:00+00') - interval '2 hours'")
recent="INSERT INTO parca.samples SELECT '$recent_hour'::timestamptz + (time - date_bin('1 hour', time, '1970-01-01 00:00+00')),
	series_id, stack, value, period, duration, num_labels
	FROM parca.samples WHERE time >= '2022-10-18' AND time < '2022-10-19'
	UNION ALL
	SELECT '$recent_hour'::timestamptz - interval '10 days' + (time - date_bin('1 hour', time, '1970-01-01 00:00+00')),
	series_id, stack, value, period, duration, num_labels
	FROM parca.samples WHERE time >= '2022-10-18' AND time < '2022-10-19'"
qs "$recent" >/dev/null
qc "$recent" >/dev/null
same "rows for the maintenance worker in the default partition" "SELECT count(*), sum(value) FROM parca.samples_default"
partitions_here="SELECT string_agg(inhrelid::regclass::text, ',' ORDER BY inhrelid::regclass::text)
	FROM pg_inherits WHERE inhparent = 'parca.samples'::regclass"

# the scrape worker's target: test/scrape's Go program, its heap profile
# scraped into both databases
scrape_tmp=$(mktemp -d /tmp/parca-citus-scrape.XXXXXX)
scrape_http=$((18500 + ${PARCA_TEST_PORT_OFFSET:-0}))
if HOME=$scrape_tmp GOCACHE=$scrape_tmp/gocache GOPATH=$scrape_tmp/gopath GOFLAGS= GO111MODULE=off \
	go build -o "$scrape_tmp/pprof_target" "$TEST_ROOT/scrape/pprof_target.go"; then
	"$scrape_tmp/pprof_target" -port "$scrape_http" >"$scrape_tmp/target.log" 2>&1 &
	scrape_pid=$!
else
	check "test/scrape/pprof_target.go builds" false
	scrape_pid=
fi
scrape_job="INSERT INTO parca.scrape_jobs (job_name, scrape_interval) VALUES ('citus', '1 s');
	INSERT INTO parca.scrape_targets VALUES ('citus', '127.0.0.1:$scrape_http', '{\"env\": \"citus\"}');
	UPDATE parca.scrape_profiles SET enabled = (name = 'memory') WHERE job_name = 'citus'"
qs "$scrape_job" >/dev/null
qc "$scrape_job" >/dev/null

# the symbolizer's work: debug information uploaded into both first, then
# a profile of its program stored without names, whose locations the
# maintenance worker's symbolizer (the role parca_debuginfo) must name
# (parca.locations is a reference table: Citus writes it on every node)
sym_build=2d6912fd3dd64542f6f6294f4bf9cb6c265b3085
cp "$SHARED_TESTDATA/pprof/parca-symbolizer/$sym_build/debuginfo" "$work/sym.debug"
cp "$SHARED_TESTDATA/pprof/parca-symbolizer/profile.pb.gz" "$work/sym.pb.gz"
chown postgres: "$work/sym.debug" "$work/sym.pb.gz"
sym_store="SELECT parca_debuginfo_upload('$sym_build', pg_read_binary_file('$work/sym.debug'));
	SELECT parca_ingest_pprof(pg_read_binary_file('$work/sym.pb.gz'), 'process_cpu', '{\"job\": \"sym\"}') IS NULL"
qs "$sym_store" >/dev/null
qc "$sym_store" >/dev/null
sym_unnamed="SELECT count(*) FROM parca.locations l JOIN parca.mappings m ON m.id = l.mapping_id
	WHERE m.build_id = '$sym_build' AND cardinality(l.function_ids) = 0"
check_eq "locations for the symbolizer, unnamed in both" "$(qs "$sym_unnamed") $(qs "$sym_unnamed")" \
	"$(qs "$sym_unnamed") $(qc "$sym_unnamed")"
check "there are some" test "$(qs "$sym_unnamed")" -gt 0

for i in 0 1 2; do
	for setting in "parca.workers = on" "parca.rollups = on" "parca.maintenance_naptime = 1" \
		"parca.symbolize_interval = 1"; do
		PGPORT=${node_ports[$i]} q "ALTER SYSTEM SET $setting" >/dev/null
	done
	PGPORT=${node_ports[$i]} q "SELECT pg_reload_conf()" >/dev/null
done
maintained="SELECT NOT EXISTS (SELECT 1 FROM parca.samples_default)
	AND EXISTS (SELECT 1 FROM parca.rollup_hours WHERE start = '$recent_hour')
	AND EXISTS (SELECT 1 FROM parca.rollup_hours WHERE start = '$recent_hour'::timestamptz - interval '10 days')"
check "the single node's maintenance worker moves the rows and rolls the hours up" \
	eval 'PGDATABASE=single wait_for 120 "$maintained"'
check "the coordinator's maintenance worker does too" wait_for 120 "$maintained"
scraped="SELECT count(*) = 4 FROM parca.series WHERE labels->>'job' = 'citus'"
check "the single node's scrape worker stores the Go program's heap profile" \
	eval 'PGDATABASE=single wait_for 60 "$scraped"'
check "the coordinator's scrape worker does too" wait_for 60 "$scraped"
named="SELECT NOT EXISTS ($sym_unnamed HAVING count(*) > 0)"
check "the single node's symbolizer names the locations" eval 'PGDATABASE=single wait_for 60 "$named"'
check "the coordinator's symbolizer does too" wait_for 60 "$named"
check_eq "and its symbolizer logged no failure" "" "$(grep -h "parca symbolizer: " "${node_dirs[0]}/log" | head -3)"
idle_on_worker_nodes() {
	local i
	for i in 1 2; do
		for _ in $(seq 1 100); do grep -q "is a Citus worker node" "${node_dirs[$i]}/log" && break; sleep 0.2; done
		grep -q "is a Citus worker node" "${node_dirs[$i]}/log" || return 1
	done
}
check "the worker nodes' maintenance workers say they leave the tables to the coordinator" idle_on_worker_nodes
# (a few rounds of theirs go by)
sleep 3
for i in 0 1 2; do
	PGPORT=${node_ports[$i]} q "ALTER SYSTEM SET parca.workers = off" >/dev/null
	PGPORT=${node_ports[$i]} q "SELECT pg_reload_conf()" >/dev/null
done
[ -n "$scrape_pid" ] && kill "$scrape_pid" 2>/dev/null
wait $scrape_pid 2>/dev/null
rm -rf "$scrape_tmp"

same "the partitions after the maintenance worker's rounds" \
	"SELECT string_agg(partition::text, ',' ORDER BY partition::text) FROM parca.partition_ranges()"
same "the rows the maintenance worker moved (none twice, none lost)" \
	"SELECT count(*), sum(value) FROM parca.samples WHERE time >= '$recent_hour'::timestamptz - interval '10 days'
	   AND time < '$recent_hour'::timestamptz + interval '1 hour'"
same "the hours the maintenance worker rolled up" \
	"SELECT string_agg(start::text, ',' ORDER BY start) FROM parca.rollup_hours WHERE start >= '$recent_hour'::timestamptz - interval '10 days'"
same "their rollups" \
	"SELECT count(*), sum(value) FROM parca.samples_hourly WHERE time >= '$recent_hour'::timestamptz - interval '10 days'"
same "parca_query over the hours the worker rolled up" \
	"SELECT md5(parca_pprof(parca_query('cpu:samples:count:cpu:nanoseconds:delta{}',
	   '$recent_hour'::timestamptz - interval '10 days', '$recent_hour'::timestamptz + interval '1 hour')))"
same "the frames the symbolizer named" \
	"SELECT md5(string_agg(l.address || ' ' || f.system_name || ' ' || f.filename || ' ' || l.line_numbers::text,
	   ',' ORDER BY l.address, f.system_name))
	 FROM parca.locations l JOIN parca.mappings m ON m.id = l.mapping_id, unnest(l.function_ids) u(fid)
	 JOIN parca.functions f ON f.id = u.fid WHERE m.build_id = '$sym_build'"
same "the scrape worker's series" \
	"SELECT string_agg(profile_type || ' ' || labels::text, ',' ORDER BY profile_type) FROM parca.series
	 WHERE labels->>'job' = 'citus'"
check "the scraped profiles are stored in the shards, and merge" \
	test "$(qc "SELECT parca_profile_total(parca_query('memory:inuse_space:bytes:space:bytes{job=\"citus\"}', now() - interval '1 day', now()))")" -gt 0
# (the coordinator's partitions reach the worker nodes with Citus's metadata)
check_eq "the worker nodes made no partitions of their own" "$(q "$partitions_here") $(q "$partitions_here")" \
	"$(for i in 1 2; do PGPORT=${node_ports[$i]} q "$partitions_here"; done | paste -sd' ')"
check_eq "nor rolled anything up" "0,0" \
	"$(for i in 1 2; do PGPORT=${node_ports[$i]} q "SELECT count(*) FROM parca.rollup_hours"; done | paste -sd,)"
check_eq "nor did their maintenance fail" "" \
	"$(grep -h "parca maintenance worker: .* failed" "${node_dirs[1]}/log" "${node_dirs[2]}/log" | head -3)"

check_eq "no server process crashed" "" \
	"$(grep -h "terminated by signal" "${node_dirs[0]}/log" "${node_dirs[1]}/log" "${node_dirs[2]}/log" | head -3)"

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
