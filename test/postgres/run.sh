#!/usr/bin/env bash
# parca-agent on PostgreSQL backends, as root with eBPF (docs/postgres.md):
# their samples carry the statement they run (pg_query_id), their database,
# user and backend type, the wait event off the CPU, and parallel workers
# their leader's statement.  The oracle is the server's own
# pg_stat_statements and pg_stat_activity, with pgbench driving.
#
# Two clusters: "work" (pg_stat_statements, no parca), which the agent
# does not write to, runs pgbench with three statements of very different
# CPU cost (a sort of 200,000 rows, a hash join, a lookup by primary key),
# simple and prepared protocol at once, and a parallel query; the agent's
# own cluster runs a few statements too, whose database and user the agent
# names (the work cluster's keep their oids).  Then: an idle backend, the
# layout of the table in the agent (parca_postgres_layout not allowed),
# and a deliberately wrong layout, which the check must refuse.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

require_agent
port=${PARCA_POSTGRES_TEST_PORT:-54495}
start_cluster "$port" "shared_preload_libraries = 'parca,pg_stat_statements'" \
	"compute_query_id = on" "max_parallel_workers_per_gather = 0"
tmp=$(mktemp -d)
chmod 755 "$tmp"
work_port=$((port + ${PARCA_TEST_PORT_OFFSET:-0} + 1))
work_dir=$tmp/work
cleanup() {
	[ -n "${agent_pid:-}" ] && kill -INT "$agent_pid" 2>/dev/null
	runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$work_dir" -m immediate stop >/dev/null 2>&1
	rm -rf "$tmp"
	stop_cluster
}
trap cleanup EXIT

# The work cluster: pg_stat_statements, and no parallel query unless asked
# (the three statements' shares are compared with their own execution time).
mkdir "$work_dir" && chown postgres: "$work_dir" && chown postgres: "$tmp"
runuser -u postgres -- "$PG_BIN/initdb" -D "$work_dir" -A trust -U postgres >/dev/null
cat >>"$work_dir/postgresql.conf" <<EOF
port = $work_port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$tmp'
shared_preload_libraries = 'pg_stat_statements'
compute_query_id = on
pg_stat_statements.track_planning = on
max_parallel_workers_per_gather = 0
work_mem = '64MB'
fsync = off
EOF
runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$work_dir" -l "$tmp/work.log" -w start >/dev/null ||
	{ tail -5 "$tmp/work.log"; exit 1; }
wq() { psql -X -v ON_ERROR_STOP=1 -qAt -p "$work_port" -d "${2:-pq}" -c "$1"; }
wq "CREATE DATABASE pq" postgres >/dev/null
wq "CREATE EXTENSION pg_stat_statements;
    CREATE TABLE pq_numbers AS SELECT g AS id, random() AS v FROM generate_series(1, 200000) g;
    ALTER TABLE pq_numbers ADD PRIMARY KEY (id);
    CREATE TABLE pq_left AS SELECT g % 50000 AS k, g AS v FROM generate_series(1, 100000) g;
    CREATE TABLE pq_right AS SELECT g AS k FROM generate_series(1, 50000) g" >/dev/null
wq "VACUUM ANALYZE" >/dev/null
# The parallel query's statement: an expensive filter, so its workers work.
cat >"$tmp/parallel.sql" <<'EOF'
SELECT count(*) FROM pq_numbers WHERE md5(v::text) < '8';
EOF
cp "$TEST_ROOT"/postgres/{sort,join,lookup}.sql "$tmp/"
chmod 644 "$tmp"/*.sql

q "CREATE ROLE agent_test LOGIN IN ROLE parca_agent" >/dev/null
q "CREATE EXTENSION pg_stat_statements" >/dev/null
dsn="host=127.0.0.1 port=$PGPORT user=agent_test dbname=postgres"
cpu_type='parca_agent:samples:count:cpu:nanoseconds:delta'
# Samples per label set, on-CPU and off-CPU, for the checks below.
q "CREATE VIEW pg_samples AS
SELECT se.profile_type = '$cpu_type' AS on_cpu, se.labels, sum(sm.value)::bigint AS value
  FROM parca.samples sm JOIN parca.series se ON se.id = sm.series_id
 GROUP BY 1, 2" >/dev/null

# (every wait of 100 ms and more timed: the idle backend's, whatever else
# waits on this shared machine)
"$agent" --dsn "$dsn" --flush-interval 2 --frequency 97 --off-cpu --off-cpu-min 100ms --off-cpu-rate 100000 \
	2>"$tmp/agent.log" &
agent_pid=$!
agent_sampling "$tmp/agent.log" || exit 1
check "the agent read its cluster's layout from parca_postgres_layout()" \
	grep -q "layout of PostgreSQL 15 (build id [0-9a-f]*) from postgres's parca_postgres_layout()" "$tmp/agent.log"

wq "SELECT pg_stat_statements_reset()" >/dev/null
# An idle backend: it runs a statement (long enough to be sampled, which
# registers it with the BPF program), then waits for its client.
(echo "SELECT sum(g) FROM generate_series(1, 2000000) g;"; for i in 2 3 4; do sleep 4; echo "SELECT $i;"; done) |
	PGAPPNAME=pq_idle psql -X -q -h 127.0.0.1 -p "$work_port" -d pq >/dev/null &
idle_psql=$!
PGAPPNAME=pq_parallel PGOPTIONS="-c max_parallel_workers_per_gather=2 -c parallel_setup_cost=0 -c parallel_tuple_cost=0 -c min_parallel_table_scan_size=0" \
	"$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$work_port" -c 1 -T 15 -f "$tmp/parallel.sql" pq \
	>"$tmp/pgbench_parallel.out" 2>&1 &
parallel_pid=$!
PGAPPNAME=pq_simple "$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$work_port" -c 2 -T 15 -M simple \
	-f "$tmp/sort.sql@1" -f "$tmp/join.sql@2" -f "$tmp/lookup.sql@20" pq >"$tmp/pgbench_simple.out" 2>&1 &
simple_pid=$!
PGAPPNAME=pq_prepared "$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$work_port" -c 1 -T 15 -M prepared \
	-f "$tmp/sort.sql@1" -f "$tmp/join.sql@2" -f "$tmp/lookup.sql@20" pq >"$tmp/pgbench_prepared.out" 2>&1 &
prepared_pid=$!
# The pids of the work cluster's backends and parallel workers, as they run.
: >"$tmp/pids"
for i in $(seq 1 12); do
	wq "SELECT pid, coalesce(leader_pid, 0), backend_type, application_name FROM pg_stat_activity
	     WHERE datname = 'pq' AND pid <> pg_backend_pid()" >>"$tmp/pids" 2>/dev/null
	sleep 1
done
# A statement in the agent's own cluster (its database and user named).
# Its backend is new: the agent registers it from its first samples, so
# the statement burns 3 s of CPU whatever the machine's speed (a count of
# 3,000,000 rows, 0.2 s on a quiet machine, once ended before; run 7).
own_statement="SELECT count(*) FROM (SELECT g FROM (SELECT generate_series(1, 2000000000) AS g) s
	WHERE clock_timestamp() > statement_timestamp() + interval '3 s' LIMIT 1) x"
q "$own_statement" >/dev/null
wait $parallel_pid $simple_pid $prepared_pid $idle_psql
sleep 5
kill -INT $agent_pid
wait $agent_pid
agent_pid=
grep -q "layout refused" "$tmp/agent.log" && echo "# $(grep "layout refused" "$tmp/agent.log" | head -3)"

# The statements' ids, shares and backends, from the work cluster's own view.
wq "SELECT queryid, CASE WHEN query LIKE '%ORDER BY v DESC%' THEN 'sort'
                         WHEN query LIKE '%JOIN pq_right%' THEN 'join'
                         WHEN query LIKE '%WHERE id = \$1%' THEN 'lookup'
                         WHEN query LIKE '%md5(v::text)%' THEN 'parallel' END,
           calls, total_exec_time + total_plan_time
      FROM pg_stat_statements WHERE query ~ 'pq_numbers|pq_right'" >"$tmp/statements"
cat "$tmp/statements" | sed 's/^/# pg_stat_statements: /'
q "CREATE TABLE statements (query_id bigint, name text, calls bigint, time double precision)"
q "COPY statements FROM STDIN (DELIMITER '|')" <"$tmp/statements"
q "CREATE TABLE work_pids (pid int, leader int, backend_type text, app text)"
q "COPY work_pids FROM STDIN (DELIMITER '|')" <"$tmp/pids"
work_db_oid=$(wq "SELECT oid FROM pg_database WHERE datname = 'pq'")

# Every sample of the pgbench backends and their workers (by pid), on the CPU.
q "CREATE VIEW work_samples AS
SELECT s.labels, s.value FROM pg_samples s
 WHERE s.on_cpu AND (s.labels ->> 'pid')::int IN
       (SELECT pid FROM work_pids WHERE app LIKE 'pq\\_%' AND app <> 'pq_idle' OR leader <> 0)"
total=$(q "SELECT coalesce(sum(value), 0) FROM work_samples")
labelled=$(q "SELECT coalesce(sum(value), 0) FROM work_samples WHERE labels ? 'pg_query_id'")
echo "# pgbench backends: $labelled of $total on-CPU samples carry pg_query_id"
check "the pgbench backends were sampled (at least 200 samples)" test "$total" -ge 200
check "at least 90 % of the pgbench backends' samples carry a pg_query_id" \
	test $((labelled * 100)) -ge $((total * 90))
check_eq "every pg_query_id of theirs is one pg_stat_statements knows" 0 \
	"$(q "SELECT count(*) FROM work_samples w WHERE w.labels ? 'pg_query_id'
	        AND (w.labels ->> 'pg_query_id')::bigint NOT IN (SELECT query_id FROM statements)
	        AND w.value > 2")"
check_eq "their database is the work cluster's oid (not named: not the agent's cluster)" \
	"$work_db_oid" \
	"$(q "SELECT string_agg(DISTINCT labels ->> 'pg_database', ',') FROM work_samples")"
for app in pq_simple pq_prepared; do
	check_eq "the $app backends' samples carry the sort's and the join's ids" "join,sort" \
		"$(q "SELECT string_agg(DISTINCT st.name, ',' ORDER BY st.name)
		        FROM work_samples w JOIN statements st ON st.query_id = (w.labels ->> 'pg_query_id')::bigint
		       WHERE (w.labels ->> 'pid')::int IN (SELECT pid FROM work_pids WHERE app = '$app')
		         AND st.name IN ('sort', 'join')")"
done
check_eq "their backend type" "background worker,client backend" \
	"$(q "SELECT string_agg(DISTINCT labels ->> 'pg_backend_type', ',' ORDER BY labels ->> 'pg_backend_type') FROM work_samples")"

# Shares: each statement's share of the three statements' labelled samples
# against its share of their time in pg_stat_statements (execution and
# planning, as the samples count both).  With n samples, a share p has a
# binomial standard error sqrt(p(1-p)/n); 4 of them leave a false failure
# at about 1 in 15,000.  Beyond sampling, the two differ by what one counts
# and the other does not: execution time includes waiting for a CPU on
# this loaded 2-core machine, the same for every statement to the extent
# all three are CPU-bound, and samples include the CPU spent between
# statements' timers (protocol, the executor's start and end); 0.08 more
# allows for that, and still tells the statements apart (their shares
# differ by more than 0.2).
q "CREATE VIEW shares AS
WITH by_name AS (
    SELECT name, sum(time) AS time FROM statements GROUP BY name),
sampled AS (
    SELECT st.name, sum(w.value) AS samples
      FROM work_samples w JOIN statements st ON st.query_id = (w.labels ->> 'pg_query_id')::bigint
     WHERE st.name IN ('sort', 'join', 'lookup') AND NOT w.labels ? 'pg_parallel_worker'
     GROUP BY st.name)
SELECT st.name, s.samples::float8 / sum(s.samples) OVER () AS sample_share,
       st.time / sum(st.time) OVER () AS time_share, sum(s.samples) OVER () AS n
  FROM by_name st JOIN sampled s USING (name)"
q "SELECT name, round(sample_share::numeric, 3), round(time_share::numeric, 3), n FROM shares" |
	sed 's/^/# share: /'
check_eq "the three statements have samples" 3 "$(q "SELECT count(*) FROM shares")"
check_eq "each statement's share of samples agrees with its share of time (4 standard errors + 0.08)" "" \
	"$(q "SELECT string_agg(name, ',') FROM shares
	       WHERE abs(sample_share - time_share) > 4 * sqrt(time_share * (1 - time_share) / n) + 0.08")"

# Parallel workers carry their leader's statement and say they are workers.
parallel_id=$(awk -F'|' '$2 == "parallel" { print $1 }' "$tmp/statements")
worker_samples=$(q "SELECT coalesce(sum(value), 0) FROM work_samples w
                     WHERE (w.labels ->> 'pid')::int IN (SELECT pid FROM work_pids WHERE leader <> 0 AND leader <> pid)")
check "the parallel workers were sampled" test "$worker_samples" -ge 20
check_eq "their samples with a query id carry the leader's, and pg_parallel_worker" "$parallel_id|true" \
	"$(q "SELECT string_agg(DISTINCT (labels ->> 'pg_query_id') || '|' || (labels ->> 'pg_parallel_worker'), ',')
	        FROM work_samples w WHERE labels ? 'pg_query_id'
	         AND (w.labels ->> 'pid')::int IN (SELECT pid FROM work_pids WHERE leader <> 0 AND leader <> pid)")"
check_eq "no client backend is labelled a parallel worker" 0 \
	"$(q "SELECT count(*) FROM work_samples WHERE labels ? 'pg_parallel_worker'
	        AND labels ->> 'pg_backend_type' = 'client backend'")"

# The idle backend waited for its client: off-CPU, ClientRead, no query id.
idle_pid=$(awk -F'|' '$4 == "pq_idle" { print $1; exit }' "$tmp/pids")
q "SELECT on_cpu, value, labels - 'node' - 'kernel_release' - 'executable' - 'cgroup' FROM pg_samples WHERE labels ->> 'pid' = '$idle_pid'" | sed "s/^/# idle backend $idle_pid: /"
check "the idle backend has off-CPU samples" test \
	"$(q "SELECT count(*) FROM pg_samples WHERE NOT on_cpu AND labels ->> 'pid' = '$idle_pid'
	        AND labels ? 'pg_backend_type'")" -ge 1
check_eq "its samples while idle carry no pg_query_id, and wait in ClientRead" "Client:ClientRead|" \
	"$(q "SELECT string_agg(DISTINCT (labels ->> 'pg_wait_event') || '|' || coalesce(labels ->> 'pg_query_id', ''), ',')
	        FROM pg_samples WHERE NOT on_cpu AND labels ->> 'pid' = '$idle_pid' AND value > 2000000000")"

# The agent's own cluster: names, not oids.
check_eq "a backend of the agent's cluster is named: database and user" "postgres|postgres" \
	"$(q "SELECT string_agg(DISTINCT (labels ->> 'pg_database') || '|' || (labels ->> 'pg_user'), ',')
	        FROM pg_samples WHERE on_cpu AND labels ? 'pg_query_id'
	         AND labels ->> 'pg_query_id' IN (SELECT queryid::text FROM pg_stat_statements
	                                          WHERE query LIKE '%generate_series(\$1, \$2)%')")"

# parca_postgres_statements joins the profiles to pg_stat_statements.
check_eq "parca_postgres_statements ranks the agent's cluster's statement with its text" "1" \
	"$(q "SELECT count(*) FROM parca_postgres_statements(now() - interval '1 hour', now())
	       WHERE query LIKE '%generate_series(\$1, \$2)%' AND calls = 1 AND samples > 0")"
check_eq "parca_query with a pg_query_id selector" "t" \
	"$(q "SELECT parca_profile_total(parca_query('$cpu_type{pg_query_id=\"$parallel_id\"}',
	                                             now() - interval '1 hour', now())) > 0")"

# The table's layout of PostgreSQL 15 is the extension's (both from the
# same headers), and is what the agent uses when the cluster does not give
# it: oids for names then.
check_eq "the agent's table of PostgreSQL 15 agrees with parca_postgres_layout()" \
	"4|8|48|52|232|424|840" \
	"$(q "SELECT concat_ws('|', st_procpid, st_backend_type, st_databaseid, st_userid, st_state,
	                         st_query_id, proc_lock_group_leader) FROM parca_postgres_layout()")"
check_eq "parca_postgres_layout is parca_agent's only" "f" \
	"$(q "SELECT has_function_privilege('public', 'parca_postgres_layout()', 'execute')")"

q "REVOKE EXECUTE ON FUNCTION parca_postgres_layout() FROM parca_agent" >/dev/null
q "TRUNCATE parca.samples" >/dev/null
"$agent" --dsn "$dsn" --flush-interval 2 --frequency 97 --duration 16 --node table \
	2>"$tmp/agent_table.log" &
agent_pid=$!
agent_sampling "$tmp/agent_table.log" || exit 1
"$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$work_port" -c 1 -T 6 -f "$tmp/sort.sql" pq >/dev/null 2>&1
q "$own_statement" >/dev/null
wait $agent_pid
agent_pid=
check "without parca_postgres_layout the agent says so" \
	grep -q "has no parca_postgres_layout()" "$tmp/agent_table.log"
check "its own table's layout labels the work cluster's sort" test \
	"$(q "SELECT coalesce(sum(value), 0) FROM pg_samples WHERE labels ->> 'pg_query_id' =
	        '$(awk -F'|' '$2 == "sort" { print $1 }' "$tmp/statements")'")" -ge 20
check_eq "and the agent's own cluster gets oids" \
	"$(q "SELECT oid || '|' || 'postgres'::regrole::oid FROM pg_database WHERE datname = 'postgres'")" \
	"$(q "SELECT string_agg(DISTINCT (labels ->> 'pg_database') || '|' || (labels ->> 'pg_user'), ',') FROM pg_samples
	       WHERE labels ->> 'pg_query_id' IN (SELECT queryid::text FROM pg_stat_statements
	                                          WHERE query LIKE '%generate_series(\$1, \$2)%')")"

# A wrong layout is refused: no labels at all, never wrong ones.
q "GRANT EXECUTE ON FUNCTION parca_postgres_layout() TO parca_agent; TRUNCATE parca.samples" >/dev/null
PARCA_AGENT_TEST_PG_LAYOUT="st_procpid=16,st_state=236" \
	"$agent" --dsn "$dsn" --flush-interval 2 --frequency 97 --duration 10 --node wrong \
	2>"$tmp/agent_wrong.log" &
agent_pid=$!
agent_sampling "$tmp/agent_wrong.log" || exit 1
"$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$work_port" -c 1 -T 5 -f "$tmp/sort.sql" pq >/dev/null 2>&1
wait $agent_pid
agent_pid=
check "the wrong layout is refused, and logged" grep -q "layout refused (st_procpid" "$tmp/agent_wrong.log"
check "postgres processes were sampled" test \
	"$(q "SELECT coalesce(sum(value), 0) FROM pg_samples WHERE labels ->> 'comm' = 'postgres'")" -ge 20
check_eq "no sample carries a PostgreSQL label" 0 \
	"$(q "SELECT count(*) FROM pg_samples WHERE labels ? 'pg_backend_type' OR labels ? 'pg_query_id'")"

# --label-drop=pg_query_id leaves the statements out of the series.
q "TRUNCATE parca.samples" >/dev/null
"$agent" --dsn "$dsn" --flush-interval 2 --frequency 97 --duration 8 --label-drop=pg_query_id \
	2>"$tmp/agent_drop.log" &
agent_pid=$!
agent_sampling "$tmp/agent_drop.log" || exit 1
"$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$work_port" -c 1 -T 4 -f "$tmp/sort.sql" pq >/dev/null 2>&1
wait $agent_pid
agent_pid=
check "with --label-drop=pg_query_id the backends keep their other labels" test \
	"$(q "SELECT coalesce(sum(value), 0) FROM pg_samples WHERE labels ->> 'pg_backend_type' = 'client backend'")" -ge 10
check_eq "and no pg_query_id" 0 "$(q "SELECT count(*) FROM pg_samples WHERE labels ? 'pg_query_id'")"

finish
