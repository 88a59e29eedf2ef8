#!/usr/bin/env bash
# The background workers, as a user gets them: shared_preload_libraries =
# 'parca' and no parca setting, the extension created in databases of the
# user's own.  Each such database gets its workers within seconds: its rows
# move out of the default partition into day partitions, retention and
# rollups run there, its scrape jobs are scraped (a real Go program serving
# net/http/pprof) and its locations symbolized; two databases at once;
# DROP EXTENSION stops them; DROP DATABASE, RENAME and CREATE DATABASE ...
# TEMPLATE succeed while they run, and a user who may not drop the
# database cannot stop them; a worker that keeps dying is started again
# later each time, and the launcher itself comes back; with
# max_worker_processes too low, a WARNING names the database that waits,
# the others keep working, and the one waiting starts when a slot frees.
#
# Maintenance rounds are parca.maintenance_naptime (60 s) apart: the suite
# starts one at once with a reload (SIGHUP sets the worker's latch).
# About three minutes.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
require_fixtures

tmp=$(mktemp -d /tmp/parca-workers-test.XXXXXX)
chmod 755 "$tmp"
target_pid=
cleanup() {
	[ -n "$target_pid" ] && kill "$target_pid" 2>/dev/null && wait "$target_pid" 2>/dev/null
	stop_cluster
	rm -rf "$tmp"
}
trap cleanup EXIT

# A scrape target: the Go program of test/scrape, standard library only.
export HOME=$tmp GOCACHE=$tmp/gocache GOPATH=$tmp/gopath GOFLAGS= GO111MODULE=off
go build -o "$tmp/pprof_target" "$TEST_ROOT/scrape/pprof_target.go" || {
	echo "FAIL - could not build test/scrape/pprof_target.go"
	exit 1
}
HTTP=${PARCA_WORKERS_TEST_HTTP_PORT:-$((18120 + ${PARCA_TEST_PORT_OFFSET:-0}))}
"$tmp/pprof_target" -port "$HTTP" >"$tmp/target.log" 2>&1 &
target_pid=$!

# Every parca setting at its default: start_cluster turns rollups off
# unless a line names parca.rollups, which this comment does.
start_cluster "${PARCA_WORKERS_TEST_PORT:-54491}" "# parca.rollups and every other parca setting: defaults"
trap cleanup EXIT
# fixtures the server reads itself
cp -r "$SHARED_TESTDATA/pprof/parca/profile1.pb.gz" "$SHARED_TESTDATA/pprof/parca-symbolizer" "$tmp/"
chown -R postgres: "$tmp/profile1.pb.gz" "$tmp/parca-symbolizer"

qd() { psql -X -v ON_ERROR_STOP=1 -qAt -d "$1" -c "$2"; }
# wait_in DB SECONDS SQL: until SQL returns t in DB
wait_in() {
	local deadline=$((SECONDS + $2))
	while [ $SECONDS -lt $deadline ]; do
		[ "$(qd "$1" "$3" 2>/dev/null)" = t ] && return 0
		sleep 0.5
	done
	return 1
}
# round_until DB SECONDS SQL: maintenance rounds (a reload starts one in
# every database) until SQL returns t in DB
round_until() {
	local deadline=$((SECONDS + $2))
	while [ $SECONDS -lt $deadline ]; do
		q "SELECT pg_reload_conf()" >/dev/null
		sleep 1
		[ "$(qd "$1" "$3" 2>/dev/null)" = t ] && return 0
	done
	return 1
}
# the parca processes connected to DB, by type
backends_of() {
	q "SELECT coalesce(string_agg(backend_type, ',' ORDER BY backend_type), '') FROM pg_stat_activity
	   WHERE datname = '$1' AND backend_type LIKE 'parca %'"
}
pid_of() {
	q "SELECT pid FROM pg_stat_activity WHERE datname = '$1' AND backend_type = 'parca $2 worker'"
}
launcher_pid() { q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'parca launcher'"; }
running() { echo "SELECT count(*) = 1 FROM parca.workers WHERE database = '$1' AND worker = '$2' AND state = 'running'"; }
default_rows() { qd "$1" "SELECT count(*) FROM ONLY parca.samples_default"; }
ingest() { qd "$1" "SELECT parca_ingest_pprof(pg_read_binary_file('$tmp/profile1.pb.gz'), 'cpu', '{\"db\": \"$1\"}')"; }

check_eq "no parca setting in the server's configuration" "" \
	"$(q "SELECT string_agg(name, ',') FROM pg_settings WHERE name LIKE 'parca.%' AND source <> 'default'")"
launcher0=$(launcher_pid)
check "the launcher runs" test -n "$launcher0"

# --- a database of the user's own ----------------------------------------
q "CREATE DATABASE app"
qd app "CREATE EXTENSION parca"
check "CREATE EXTENSION in a new database starts its maintenance worker within seconds" \
	wait_in app 15 "$(running app maintenance)"
check_eq "it is connected to that database" "parca maintenance worker" "$(backends_of app)"
check "and makes its partitions" \
	wait_in app 15 "SELECT count(*) >= 3 FROM parca.partitions WHERE NOT is_default"

# rows of a day without a partition land in the default partition, and move
rows=$(ingest app)
check "an ingested profile lands in the default partition (its day has no partition)" \
	test "$(default_rows app)" = "$rows" -a "$rows" -gt 0
check "a round moves its rows out of the default partition" \
	round_until app 30 "SELECT count(*) = 0 FROM ONLY parca.samples_default"
check_eq "into a day partition of parca_columnar" "$rows|parca_columnar" \
	"$(qd app "SELECT count(*) || '|' || string_agg(DISTINCT a.amname, ',') FROM parca.samples s
	          JOIN pg_class c ON c.oid = s.tableoid JOIN pg_am a ON a.oid = c.relam
	          JOIN parca.partitions p ON p.partition = s.tableoid::regclass WHERE NOT p.is_default")"

# rollups: rows of a past hour (copies of the profile's, two hours ago)
qd app "INSERT INTO parca.samples SELECT date_trunc('hour', now()) - interval '2 hours' + interval '10 minutes',
        series_id, stack, value, period, duration, num_labels FROM parca.samples"
check "rollups run there: the hour is rolled up" \
	round_until app 30 "SELECT count(*) > 0 FROM parca.samples_hourly
	                    WHERE time = date_trunc('hour', now()) - interval '2 hours'"

# symbolization: debug information first, the profile afterwards
b2=2d6912fd3dd64542f6f6294f4bf9cb6c265b3085
unnamed_sql="SELECT count(*) FROM parca.locations l JOIN parca.mappings m ON m.id = l.mapping_id
             WHERE m.build_id = '$b2' AND cardinality(l.function_ids) = 0"
qd app "SELECT parca_debuginfo_upload('$b2', pg_read_binary_file('$tmp/parca-symbolizer/$b2/debuginfo'))" >/dev/null
qd app "SELECT parca_ingest_pprof(pg_read_binary_file('$tmp/parca-symbolizer/profile.pb.gz'), 'process_cpu', '{}')" >/dev/null
check "the profile arrives with locations to name" test "$(qd app "$unnamed_sql")" -gt 0
check "the symbolizer names them there (parca.symbolize_interval = 10 s)" \
	wait_in app 60 "SELECT ($unnamed_sql) = 0"

# scraping: no scrape worker while no job is enabled, one for the job
check_eq "no scrape worker without a scrape job" "" "$(pid_of app scrape)"
qd app "INSERT INTO parca.scrape_jobs (job_name, scrape_interval) VALUES ('go', '2 s')"
qd app "INSERT INTO parca.scrape_targets VALUES ('go', '127.0.0.1:$HTTP')"
qd app "UPDATE parca.scrape_profiles SET enabled = (name = 'goroutine') WHERE job_name = 'go'"
check "a scrape job starts the database's scrape worker" wait_in app 15 "$(running app scrape)"
check "its target is scraped and stored there" \
	wait_in app 30 "SELECT count(*) > 0 FROM parca.samples s JOIN parca.series se ON se.id = s.series_id
	                WHERE se.labels->>'job' = 'go'"
check "parca.targets there shows it up" \
	wait_in app 15 "SELECT health = 'up' FROM parca.targets WHERE job = 'go'"
check_eq "another database's parca.targets does not" "0" "$(q "SELECT count(*) FROM parca.targets")"
qd app "UPDATE parca.scrape_jobs SET enabled = false"
check "with no job enabled the scrape worker ends" \
	wait_in app 15 "SELECT count(*) = 0 FROM pg_stat_activity WHERE datname = 'app' AND backend_type = 'parca scrape worker'"
qd app "UPDATE parca.scrape_jobs SET enabled = true"
check "and comes back when one is" wait_in app 15 "$(running app scrape)"

# --- two databases at once ----------------------------------------------
q "CREATE DATABASE app2"
qd app2 "CREATE EXTENSION parca"
check "a second database gets its own maintenance worker" wait_in app2 15 "$(running app2 maintenance)"
check_eq "both are served at once" "app:maintenance,app:scrape,app2:maintenance" \
	"$(q "SELECT string_agg(database || ':' || worker, ',' ORDER BY database, worker) FROM parca.workers
	      WHERE database LIKE 'app%' AND state = 'running'")"
rows2=$(ingest app2)
check "the second database's rows move out of its default partition" \
	round_until app2 30 "SELECT count(*) = 0 FROM ONLY parca.samples_default"
check_eq "with all of them" "$rows2" "$(qd app2 "SELECT count(*) FROM parca.samples")"

# a setting for one database: retention in app2 only (its workers start
# again to read it); the fixture's day is long past
app2_pid=$(pid_of app2 maintenance)
old_in_app=$(qd app "SELECT count(*) FROM parca.samples WHERE time < now() - interval '3 days'")
q "ALTER DATABASE app2 SET parca.retention = '3d'"
check "ALTER DATABASE ... SET parca.* starts the database's workers again" \
	wait_in app2 15 "SELECT count(*) = 1 FROM pg_stat_activity WHERE datname = 'app2'
	                 AND backend_type = 'parca maintenance worker' AND pid <> ${app2_pid:-0}"
check "retention runs there: the old day's partition is dropped" \
	round_until app2 30 "SELECT count(*) = 0 FROM parca.samples"
check_eq "and not in a database without the setting" "$old_in_app" \
	"$(qd app "SELECT count(*) FROM parca.samples WHERE time < now() - interval '3 days'")"

# --- DROP EXTENSION ------------------------------------------------------
qd app2 "DROP EXTENSION parca"
check "DROP EXTENSION stops the database's workers" \
	wait_in app2 20 "SELECT count(*) = 0 FROM pg_stat_activity WHERE datname = 'app2' AND backend_type LIKE 'parca %'"
check_eq "and parca.workers no longer lists it" "0" "$(q "SELECT count(*) FROM parca.workers WHERE database = 'app2'")"
qd app2 "CREATE EXTENSION parca"
check "CREATE EXTENSION again brings them back" wait_in app2 15 "$(running app2 maintenance)"

# --- the database's DDL while its workers run ----------------------------
q "CREATE ROLE eve LOGIN"
m0=$(pid_of app maintenance)
s0=$(pid_of app scrape)
check "(the database's maintenance and scrape workers run)" test -n "$m0" -a -n "$s0"
check "a user who may not drop the database gets the usual error" \
	sh -c "psql -X -qAt -U eve -d postgres -c 'DROP DATABASE app' 2>&1 | grep -q 'must be owner of database app'"
check_eq "and has not stopped its workers" "$m0 $s0" "$(pid_of app maintenance) $(pid_of app scrape)"
check "ALTER DATABASE ... RENAME TO while the workers run" q "ALTER DATABASE app RENAME TO app_renamed"
check "its workers come back, under the new name" wait_in app_renamed 20 "$(running app_renamed maintenance)"
check "CREATE DATABASE ... TEMPLATE of it while they run" q "CREATE DATABASE app_copy TEMPLATE app_renamed"
check "the copy, which has the extension, is served too" wait_in app_copy 20 "$(running app_copy maintenance)"
check "the template's workers come back" wait_in app_renamed 20 "$(running app_renamed scrape)"
check "DROP DATABASE while its maintenance and scrape workers run" q "DROP DATABASE app_renamed"
check_eq "its workers are gone" "0" "$(q "SELECT count(*) FROM parca.workers WHERE database = 'app_renamed'")"
check "DROP DATABASE ... WITH (FORCE) too" q "DROP DATABASE app_copy WITH (FORCE)"

# --- parca.workers = off for one database -------------------------------
q "ALTER DATABASE app2 SET parca.workers = off"
check "parca.workers = off for a database stops its workers" \
	wait_in app2 20 "SELECT count(*) = 0 FROM pg_stat_activity WHERE datname = 'app2' AND backend_type LIKE 'parca %'"
q "ALTER DATABASE app2 RESET parca.workers"
check "and RESET brings them back" wait_in app2 20 "$(running app2 maintenance)"

# --- failures: no loop --------------------------------------------------
for i in 1 2 3; do
	p=$(pid_of app2 maintenance)
	q "SELECT pg_terminate_backend($p)" >/dev/null
	wait_in app2 60 "SELECT count(*) = 1 FROM pg_stat_activity WHERE datname = 'app2'
	                 AND backend_type = 'parca maintenance worker' AND pid <> $p" || break
done
check_eq "a worker that dies again and again is started later each time" "5 10 20" \
	"$(grep -o 'parca maintenance worker of database "app2" ended unexpectedly; starting it again in [0-9]* s' "$PGDATA_DIR/log" |
	   awk '{print $(NF-1)}' | tail -3 | tr '\n' ' ' | sed 's/ $//')"
check_eq "the launcher is the one it was" "$launcher0" "$(launcher_pid)"
q "SELECT pg_terminate_backend($launcher0)" >/dev/null
check "the launcher comes back after it ended (10 s)" \
	wait_in app2 60 "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'parca launcher' AND pid <> $launcher0"
check "and so do the workers" wait_in app2 30 "$(running app2 maintenance)"

# --- max_worker_processes too low ---------------------------------------
for d in w1 w2 w3; do
	q "CREATE DATABASE $d"
	qd $d "CREATE EXTENSION parca"
done
# databases with the extension: postgres, app2, w1, w2, w3; slots: the
# launcher, PostgreSQL's logical replication launcher and three (no
# parallel query takes one meanwhile)
q "ALTER SYSTEM SET max_worker_processes = 5"
q "ALTER SYSTEM SET max_parallel_workers_per_gather = 0"
runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGDATA_DIR/data" -m fast -w stop >/dev/null
restart_cluster
launcher1=$(launcher_pid)
waiting_sql="SELECT count(*) FROM parca.workers WHERE state = 'waiting' AND note LIKE '%max_worker_processes = 5%'"
check "with too few slots, a worker waits, and says why" \
	wait_in postgres 30 "SELECT ($waiting_sql) = 2"
check "a WARNING names the database and the setting to raise" \
	grep -q 'WARNING:  parca: no background worker slot free for the parca maintenance worker of database "' "$PGDATA_DIR/log"
check "its hint says how" grep -q 'HINT:  Raise max_worker_processes (now 5' "$PGDATA_DIR/log"
served=$(q "SELECT string_agg(database, ' ' ORDER BY database) FROM parca.workers WHERE state = 'running'")
check_eq "the others keep working: three databases served" "3" "$(wc -w <<<"$served")"
one=$(awk '{print $NF}' <<<"$served")
rows3=$(ingest "$one")
check "a served database's rows still move out of its default partition" \
	round_until "$one" 30 "SELECT count(*) = 0 FROM ONLY parca.samples_default"
waiting=$(q "SELECT string_agg(database, ' ') FROM parca.workers WHERE state = 'waiting'")
q "DROP DATABASE $one"
check "a waiting database gets the slot freed" \
	wait_in postgres 30 "SELECT ($waiting_sql) = 1 AND count(*) = 3 FROM parca.workers WHERE state = 'running'"
check_eq "the launcher is the one it was" "$launcher1" "$(launcher_pid)"
echo "# served $served; waiting $waiting; $rows3 rows moved in $one"

finish
