# Shared helpers for the end-to-end suites (sourced by test/*/run.sh).
#
# Each suite starts its own throwaway cluster as the postgres user, with
# the library preloaded, on a port of its own, and tears it down on exit.

PG_BIN=$(pg_config --bindir)
TEST_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$TEST_ROOT/.." && pwd)
SHARED_TESTDATA=$(cd "$REPO_ROOT/../shared/testdata" 2>/dev/null && pwd || true)

pass_count=0
fail_count=0

# stack_names STACK [user]: SQL giving the function names of the stack
# expression STACK (inlined functions too), leaf first, ';'-separated,
# '?' for a frame without a name; with "user", without the kernel's frames.
stack_names() {
	local only_user=true
	[ "${2:-}" = user ] && only_user="m.file IS DISTINCT FROM '[kernel.kallsyms]'"
	echo "(SELECT string_agg(coalesce(f.name, '?'), ';' ORDER BY u.pos, fl.lpos)
	   FROM unnest(parca_stack_location_ids($1)) WITH ORDINALITY AS u(id, pos)
	   LEFT JOIN parca.locations l ON l.id = u.id
	   LEFT JOIN parca.mappings m ON m.id = l.mapping_id
	   LEFT JOIN LATERAL unnest(l.function_ids) WITH ORDINALITY AS fl(fid, lpos) ON true
	   LEFT JOIN parca.functions f ON f.id = fl.fid
	  WHERE $only_user)"
}

# export_pprof SQL-WHERE FILE: merged samples of the series matching
# SQL-WHERE (on parca.series se) as the gzipped pprof parca_pprof exports
export_pprof() {
	psql -X -qAt -v ON_ERROR_STOP=1 -c "
		SELECT pg_catalog.translate(encode(parca_pprof(parca_merge(s.stack, s.value),
		       min(se.profile_type), max(s.period)), 'base64'), E'\n', '')
		FROM parca.samples s JOIN parca.series se ON se.id = s.series_id
		WHERE $1" | base64 -d > "$2"
}

# wait_for SECONDS SQL: until SQL returns t; returns 1 on timeout.  What
# the suites wait for (a worker's round, a scrape) takes a second or two on
# a quiet machine and many more on a CI machine shared with other jobs;
# they wait 60 s, which costs nothing when it comes sooner.
wait_for() {
	local deadline=$((SECONDS + $1))
	while [ $SECONDS -lt $deadline ]; do
		[ "$(q "$2" 2>/dev/null)" = t ] && return 0
		sleep 0.5
	done
	return 1
}

# agent_sampling LOG: waits until parca-agent, started with its stderr in
# LOG, says it samples (loading its BPF program takes longer on a loaded
# machine than any fixed pause); fails after a minute
agent_sampling() {
	local i
	for i in $(seq 1 600); do
		grep -q "sampling [0-9]* CPUs" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "# parca-agent did not start sampling: $(tail -c 300 "$1")"
	return 1
}

# require_agent: sets agent to the built parca-agent; exits (a failed
# suite) unless it is there
require_agent() {
	agent=$REPO_ROOT/agent/parca-agent
	if [ ! -x "$agent" ]; then
		echo "FAIL - $agent is not built"
		exit 1
	fi
}

# require_fixtures: exits (a failed suite) unless ../shared/testdata/pprof is there
require_fixtures() {
	if [ -z "$SHARED_TESTDATA" ] || [ ! -d "$SHARED_TESTDATA/pprof" ]; then
		echo "FAIL - fixtures not found (expected ../shared/testdata next to the repository)"
		exit 1
	fi
}

# start_cluster PORT [extra postgresql.conf lines...]
# Sets PGDATA_DIR, PGPORT, PGHOST, PGUSER, PGDATABASE for psql calls.
start_cluster() {
	# PARCA_TEST_PORT_OFFSET moves every suite's port, to run beside another run.
	local port=$(( $1 + ${PARCA_TEST_PORT_OFFSET:-0} )); shift
	PGDATA_DIR=$(mktemp -d /tmp/parca-test-pg.XXXXXX)
	chown postgres: "$PGDATA_DIR"
	runuser -u postgres -- "$PG_BIN/initdb" -D "$PGDATA_DIR/data" -A trust -U postgres >/dev/null
	{
		echo "port = $port"
		echo "listen_addresses = '127.0.0.1'"
		echo "unix_socket_directories = '$PGDATA_DIR'"
		echo "shared_preload_libraries = 'parca'"
		echo "fsync = off"
		# Rollups off unless a suite asks for them: the other suites
		# check raw merges, and need no rollup rounds beside them
		case " $* " in
			*parca.rollups*) ;;
			*) echo "parca.rollups = off" ;;
		esac
		for line in "$@"; do echo "$line"; done
	} >> "$PGDATA_DIR/data/postgresql.conf"
	# the port may be held, up to a minute (TIME_WAIT), as the local end of
	# some client's connection: the 54xxx ports are in the ephemeral range
	local try
	for try in $(seq 1 40); do
		runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGDATA_DIR/data" -l "$PGDATA_DIR/log" -w start \
			>/dev/null 2>&1 && break
		[ "$try" = 40 ] && { tail -5 "$PGDATA_DIR/log" >&2; return 1; }
		sleep 2
	done
	export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres PGDATABASE=postgres
	trap stop_cluster EXIT
	q "CREATE EXTENSION parca" >/dev/null
}

stop_cluster() {
	if [ -n "${PGDATA_DIR:-}" ] && [ -d "$PGDATA_DIR/data" ]; then
		runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGDATA_DIR/data" -m immediate stop >/dev/null 2>&1 || true
		rm -rf "$PGDATA_DIR"
	fi
}

# start_citus_cluster BASE_PORT [extra postgresql.conf lines...]: three
# servers made by start_cluster, on BASE_PORT to BASE_PORT + 2 (a Citus
# coordinator and its two workers to be, docs/scale-out.md), each with
# Citus loaded first (Citus requires it) and created in its database
# postgres; parca's workers off, so that partitions and rollups are made
# at known points.  Sets citus_dirs and citus_ports (the coordinator's
# first) and a trap that stops them all (stop_citus_cluster); returns 1,
# those started stopped again, if one does not start.
start_citus_cluster() {
	local base=$1 i
	shift
	citus_dirs=()
	citus_ports=()
	for i in 0 1 2; do
		if ! start_cluster $((base + i)) "shared_preload_libraries = 'citus,parca'" "parca.workers = off" \
			"max_connections = 60" "$@"; then
			stop_citus_cluster
			return 1
		fi
		citus_dirs+=("$PGDATA_DIR")
		citus_ports+=("$PGPORT")
		# (after start_cluster, which sets a trap for its one server)
		trap stop_citus_cluster EXIT
		q "CREATE EXTENSION citus" >/dev/null
	done
}

stop_citus_cluster() {
	local d
	for d in "${citus_dirs[@]}"; do
		PGDATA_DIR=$d stop_cluster
	done
}

# kill_cluster: kill -9 of the postmaster and its children (a crash).
kill_cluster() {
	local pm children p
	pm=$(head -1 "$PGDATA_DIR/data/postmaster.pid")
	# the postmaster stopped first, so that it forks no child after the list
	# is taken; then its children (by parent pid: only ours) at once, so
	# that no backend goes on to commit, and only then the postmaster: a
	# backend that outlived it by a moment would see it gone (a parallel
	# query's leader then logs "AbortTransaction while in ABORT state" as it
	# waits for its workers), which no crash of the machine does
	kill -STOP "$pm" 2>/dev/null || true
	children=$(pgrep -P "$pm" || true)
	# shellcheck disable=SC2086
	kill -9 $children 2>/dev/null || true
	kill -9 "$pm" 2>/dev/null || true
	for p in $pm $children; do
		while kill -0 "$p" 2>/dev/null; do sleep 0.1; done
	done
	sleep 1
}

# restart_cluster: start the cluster of start_cluster again (after a crash).
restart_cluster() {
	local try
	# (see start_cluster: the port may be held for a while by a client)
	for try in $(seq 1 40); do
		runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGDATA_DIR/data" -l "$PGDATA_DIR/log" -w start \
			>/dev/null 2>&1 && return 0
		sleep 2
	done
	tail -5 "$PGDATA_DIR/log"
	return 1
}

# q SQL: run SQL, print unaligned tuples only; fails the shell on error.
q() {
	psql -X -v ON_ERROR_STOP=1 -qAt -c "$1"
}

# check NAME CONDITION-COMMAND...: record a pass or a failure.
check() {
	local name=$1; shift
	if "$@"; then
		pass_count=$((pass_count + 1))
		echo "ok - $name"
	else
		fail_count=$((fail_count + 1))
		echo "FAIL - $name"
	fi
}

# check_eq NAME EXPECTED ACTUAL
check_eq() {
	if [ "$2" == "$3" ]; then
		pass_count=$((pass_count + 1))
		echo "ok - $1"
	else
		fail_count=$((fail_count + 1))
		echo "FAIL - $1: expected [$2], got [$3]"
	fi
}

# check_tsv FILE: a check_eq for each "name<TAB>expected<TAB>actual" line
# of FILE (what the browser suites' node scripts print)
check_tsv() {
	local name expected actual
	while IFS=$'\t' read -r name expected actual; do
		check_eq "$name" "$expected" "$actual"
	done < "$1"
}

# near_expected ACTUAL EXPECTED: a count of profiler samples against its
# expectation (19 Hz x CPU seconds for parca-agent).  Which timer ticks find
# a program running varies with the load: the count is binomial, with a
# variance below its mean, and stays within four standard deviations.
near_expected() {
	awk -v a="$1" -v e="$2" 'BEGIN { d = a - e; if (d < 0) d = -d; exit !(e > 0 && d <= 4 * sqrt(e)) }'
}

# metastore_resolves: what the stored rows name that the metastore lacks,
# "series|locations|functions|mappings" (0|0|0|0: every stored row
# resolves: its series, every location of its stack, every function and
# mapping of those locations)
metastore_resolves() {
	q "SELECT
	  (SELECT count(*) FROM parca.samples s LEFT JOIN parca.series se ON se.id = s.series_id WHERE se.id IS NULL)
	  || '|' || (SELECT count(*) FROM (SELECT DISTINCT unnest(parca_stack_location_ids(stack)) AS id FROM parca.samples) u
	             LEFT JOIN parca.locations l USING (id) WHERE l.id IS NULL)
	  || '|' || (SELECT count(*) FROM (SELECT DISTINCT unnest(function_ids) AS id FROM parca.locations) u
	             LEFT JOIN parca.functions f USING (id) WHERE f.id IS NULL)
	  || '|' || (SELECT count(*) FROM parca.locations l LEFT JOIN parca.mappings m ON m.id = l.mapping_id
	             WHERE l.mapping_id IS NOT NULL AND m.id IS NULL)"
}

# gc_under_writers DIR SECONDS EMPTYING-SQL FIXTURE...: the metastore's
# garbage collection while profiles are stored, for SECONDS.  Two writers
# (one psql each, so that its backend's metastore cache lives across
# calls) store the FIXTUREs (files in DIR) over and over; a collector
# runs EMPTYING-SQL and parca_metastore_gc() in one transaction, again and
# again (the writers, held off by the lock, find their cached ids gone
# when they go on); it takes parca.samples first, as the collection takes
# it, so that no writer holds it while waiting for what EMPTYING-SQL
# empties.  Then checks that no writer failed, nor the collector (but for
# its lock timeouts), that collections removed ids and writers stored
# rows, and that every stored row resolves.
gc_under_writers() {
	local dir=$1 seconds=$2 emptying=$3 w1 w2 c
	shift 3
	rm -f "$dir/stop" "$dir"/err.* "$dir/collected"
	gc_writer() {
		local name=$1 n=0 f
		shift
		{
			while [ ! -e "$dir/stop" ] && [ $n -lt 400 ]; do
				for f in "$@"; do
					echo "SELECT parca_ingest_pprof(pg_read_binary_file('$dir/$f'), 'gc', '{\"f\": \"$f\", \"w\": \"$name\", \"n\": \"$((n % 3))\"}');"
				done
				n=$((n + 1))
			done
		} | psql -X -qAt -v ON_ERROR_STOP=0 >/dev/null 2>>"$dir/err.$name" || true
	}
	gc_collector() {
		local n=0
		while [ ! -e "$dir/stop" ]; do
			psql -X -qAt -c "BEGIN; LOCK TABLE parca.samples IN SHARE MODE; $emptying;
				SELECT * FROM parca_metastore_gc(); COMMIT" >>"$dir/collected" 2>>"$dir/err.collector" || true
			n=$((n + 1))
			sleep 0.$((RANDOM % 5))
		done
		echo "$n" > "$dir/collections"
	}
	gc_writer a "$@" & w1=$!
	gc_writer b "$@" & w2=$!
	gc_collector & c=$!
	sleep "$seconds"
	touch "$dir/stop"
	wait "$w1" "$w2" "$c" || true
	check_eq "no writer saw an error" "" "$(cat "$dir"/err.a "$dir"/err.b 2>/dev/null | grep -E 'ERROR' | head -3)"
	check_eq "nor the collector (but its lock timeouts)" "" \
		"$(grep -E 'ERROR' "$dir/err.collector" 2>/dev/null | grep -v 'lock timeout' | head -3)"
	check "collections ran ($(cat "$dir/collections") of them) and removed ids" \
		test "$(awk -F'|' '{s += $1 + $2} END {print s + 0}' "$dir/collected")" -gt 0
	check "writers stored profiles meanwhile" test "$(q "SELECT count(*) FROM parca.samples")" -gt 0
	check_eq "every stored row resolves: series, locations, functions, mappings" "0|0|0|0" "$(metastore_resolves)"
}

# best_ms SQL [JIT]: the best of three runs of SQL, in milliseconds, with
# jit = JIT (default off; on is PostgreSQL's default) (for bench/)
best_ms() {
	local best=""
	for _ in 1 2 3; do
		local ms
		ms=$(psql -X -qAt -c "SET jit = ${2:-off}" -c '\timing on' -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -n 1)
		if [ -z "$best" ] || awk -v a="$ms" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$ms; fi
	done
	echo "$best"
}
# best_ms_session SQL: the best of three runs of SQL in one session after a
# first one, in milliseconds: a connection that has served queries before,
# as a pool's (Grafana's) does (for bench/)
best_ms_session() {
	{ echo "SET jit = off;"; echo '\timing on'; for _ in 1 2 3 4; do echo "$1;"; done; } |
		psql -X -qAt | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -n 3 | sort -g | head -n 1
}
# seconds SQL: the wall time of one run of SQL, in seconds (for bench/)
seconds() {
	local t0 t1
	t0=$(date +%s.%N)
	q "$1" >/dev/null
	t1=$(date +%s.%N)
	awk "BEGIN { printf \"%.3f\", $t1 - $t0 }"
}
# best_of_3 SQL: the best of three runs of SQL, in seconds (for bench/)
best_of_3() {
	local best=999999 t
	for _ in 1 2 3; do
		t=$(seconds "$1")
		best=$(awk "BEGIN { print ($t < $best) ? $t : $best }")
	done
	echo "$best"
}
# bpf_ns PID: run time (ns) and count of the (first) BPF program process
# PID loaded, from the kernel's BPF statistics (for bench/: they count only
# while kernel.bpf_stats_enabled is 1)
bpf_ns() {
	local id
	id=$(grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{ print $2; exit }')
	bpftool prog show id "${id:-0}" -j 2>/dev/null |
		python3 -c 'import json, sys; p = json.load(sys.stdin); print(p.get("run_time_ns", 0), p.get("run_cnt", 0))' ||
		echo 0 0
}
# finish: print the suite's counts; exit status says whether all passed.
finish() {
	echo "$pass_count passed, $fail_count failed"
	[ "$fail_count" -eq 0 ]
}
