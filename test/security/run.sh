#!/usr/bin/env bash
# Attacks on the extension, as docs/security.md describes its defences:
#  - a hostile database owner puts a schema that shadows pg_catalog first
#    in the database's search_path and waits for its workers (maintenance
#    and scrape, superuser sessions, which the launcher starts in every
#    database with the extension) and for a superuser calling the
#    extension's functions; no call may reach the owner's code, and the
#    owner must not become a superuser;
#  - a parca_scrape member with the same trick in their own session tries
#    to make the worker read a file (file_sd) without pg_read_server_files;
#  - a scrape target redirects the worker to another port, or serves a
#    profile that decodes to far more than its size;
#  - profiles under every size limit that decode to gigabytes (empty
#    samples, long repeated fields, unknown fields, deep nesting): the
#    backend's peak memory must follow from parca.max_profile_size;
#  - locations whose ids were ground to share a hash bucket under a fixed
#    hash of 64-bit keys: a query's tables must still spread them;
#  - names with invalid UTF-8, NULs, control characters and 1 MB lengths:
#    stored repaired, and pg_dump + pg_restore round-trips them; INSERT and
#    COPY of such names (parca-agent's way) are refused by the server;
#  - a reader restricted to some series by row-level security on
#    parca.samples, with the grants docs/security.md lists and SELECT on
#    every table of schema parca, reads no row of the other series from
#    the rollups, their partitions or the raw partitions, and still gets
#    the right answers; an unrestricted reader gets the rollups.
# About 40 s.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

tmp=$(mktemp -d /tmp/parca-security-test.XXXXXX)
chmod 755 "$tmp"
http_pids=
cleanup() {
	if [ -n "$http_pids" ]; then
		kill $http_pids 2>/dev/null
		wait $http_pids 2>/dev/null
	fi
	stop_cluster
	rm -rf "$tmp"
}

PORT=${PARCA_SECURITY_TEST_PORT:-54461}
# HTTP ports move with the cluster port (PARCA_TEST_PORT_OFFSET, test/lib.sh)
HTTP=${PARCA_SECURITY_TEST_HTTP_PORT:-$((18060 + ${PARCA_TEST_PORT_OFFSET:-0}))}
LIMIT_MB=16
# (pg_stat_statements shows which way parca_query merges the rollups)
start_cluster "$PORT" "parca.max_profile_size = '${LIMIT_MB}MB'" \
	"shared_preload_libraries = 'parca, pg_stat_statements'" "pg_stat_statements.track = all"
trap cleanup EXIT

here=$TEST_ROOT/security
fixture=$SHARED_TESTDATA/pprof/parca/profile1.pb.gz
limit=$((LIMIT_MB * 1024 * 1024))
for kind in empty_samples one_value_samples labelled_samples long_stacks unknown_fields many_lines nested; do
	python3 "$here/hostile_pprof.py" "$kind" "$limit" "$tmp/$kind.pb.gz"
done
# at the default limit (64 MB) too: 16 KB of gzip
python3 "$here/hostile_pprof.py" empty_samples $((64 * 1024 * 1024)) "$tmp/empty_samples_64.pb.gz"
python3 "$here/hostile_pprof.py" hostile_strings 0 "$tmp/hostile_strings.pb.gz"
cc -O2 -I "$REPO_ROOT/common" -o "$tmp/colliding_ids" "$here/colliding_ids.c" "$REPO_ROOT/common/ids/ids.c"
"$tmp/colliding_ids" 2000 14 | python3 "$here/hostile_pprof.py" colliding_locations 0 "$tmp/colliding.pb.gz"
cp "$fixture" "$tmp/good.pb.gz"
chmod 644 "$tmp"/*.pb.gz

# Two HTTP targets: A serves profiles and redirects, B logs whether anyone
# came (a redirect to B is one to another port of the same host).
A=127.0.0.1:$HTTP
B=127.0.0.1:$((HTTP + 1))
python3 "$here/http_target.py" "$HTTP" "$tmp/good.pb.gz" "$tmp/empty_samples.pb.gz" $((HTTP + 1)) "$tmp/a.log" &
http_pids=$!
python3 "$here/http_target.py" $((HTTP + 1)) "$tmp/good.pb.gz" "$tmp/empty_samples.pb.gz" "$HTTP" "$tmp/b.log" &
http_pids="$http_pids $!"


# wait_for SECONDS SQL: until SQL (in victim) returns t; returns 1 on timeout.
wait_for() {
	local deadline=$((SECONDS + $1))
	while [ $SECONDS -lt $deadline ]; do
		[ "$(qv "$2" 2>/dev/null)" = t ] && return 0
		sleep 0.5
	done
	return 1
}
# qv SQL: as postgres in victim, with a search_path of our own choosing
# (the database's own is the owner's trap)
qv() {
	PGOPTIONS="-c search_path=pg_catalog,public" psql -X -v ON_ERROR_STOP=1 -qAt -d victim -c "$1"
}
# qm SQL: as mallory in victim, likewise
qm() {
	PGOPTIONS="-c search_path=pg_catalog,public" psql -X -v ON_ERROR_STOP=1 -qAt -U mallory -d victim -c "$1"
}
worker_pid() {
	q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'parca ${1:-scrape} worker' AND datname = 'victim'"
}
status_kb() {
	awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"
}
for i in $(seq 50); do
	curl -sf -o /dev/null "http://$A/good/x" && curl -sf -o /dev/null "http://$B/good/x" && break
	sleep 0.2
done
: >"$tmp/a.log"
: >"$tmp/b.log"

# --- A hostile database owner --------------------------------------------
q "CREATE ROLE mallory LOGIN"
q "GRANT parca_scrape TO mallory"
q "CREATE DATABASE victim OWNER mallory"
psql -X -qAt -v ON_ERROR_STOP=1 -d victim -c "CREATE EXTENSION parca"
PGOPTIONS="-c search_path=pg_catalog" psql -X -q -v ON_ERROR_STOP=1 -U mallory -d victim \
	-f "$here/shadow.sql" >/dev/null
check "the owner's schema shadows pg_catalog's operators and functions" \
	test "$(qm "SELECT count(*) > 3000 FROM pg_proc WHERE pronamespace = 'evil'::regnamespace")" = t
# the owner's trap works: a superuser who resolves "=" through it is had
q "CREATE DATABASE trial OWNER mallory"
PGOPTIONS="-c search_path=pg_catalog" psql -X -q -v ON_ERROR_STOP=1 -U mallory -d trial \
	-f "$here/shadow.sql" >/dev/null
psql -X -qAt -d trial -c "SET search_path = evil, pg_catalog; SELECT 1 = 1" >/dev/null
check_eq "(the trap works on a careless superuser)" "t" \
	"$(q "SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'")"
q "ALTER ROLE mallory NOSUPERUSER"
q "DROP DATABASE trial"
qm "ALTER DATABASE victim SET search_path = evil, pg_catalog, public"

# The same trick in the owner's own session, to name a file for the
# worker to read without pg_read_server_files.
echo '[{"targets": ["'$A'"], "labels": {"secret": "s3cr3t"}}]' >"$tmp/secret.json"
chown postgres: "$tmp/secret.json"
chmod 600 "$tmp/secret.json"
leak=$(psql -X -qAt -U mallory -d victim -c "SET search_path = evil, pg_catalog, public;
	INSERT INTO parca.scrape_jobs (job_name, file_sd_files) VALUES ('leak', '{$tmp/secret.json}')" 2>&1)
check "a parca_scrape member cannot name a file_sd file through a shadowed pg_has_role" \
	grep -q 'permission denied to set file_sd_files of scrape job "leak"' <<<"$leak"
check_eq "no such job exists" "0" "$(qv "SELECT count(*) FROM parca.scrape_jobs WHERE job_name = 'leak'")"

# The maintenance worker, which the launcher started when the extension was
# created, connects again (it comes back 5 s after it ends), now with the
# database's search_path; then mallory configures a target, as a
# parca_scrape member may, and the scrape worker starts with it in force.
pid0=$(worker_pid maintenance)
check "the maintenance worker runs in the owner's database" test -n "$pid0"
[ -n "$pid0" ] && q "SELECT pg_terminate_backend($pid0)" >/dev/null
new_worker() {
	local deadline=$((SECONDS + 30)) pid
	while [ $SECONDS -lt $deadline ]; do
		pid=$(worker_pid "$1")
		[ -n "$pid" ] && [ "$pid" != "$2" ] && return 0
		sleep 0.5
	done
	return 1
}
check "it connects again, with the owner's search_path in force" new_worker maintenance "$pid0"
check_eq "no scrape worker there yet: no job" "" "$(worker_pid)"
qm "INSERT INTO parca.scrape_jobs (job_name, scrape_interval, path_prefix) VALUES ('good', '1 s', '/good')"
qm "INSERT INTO parca.scrape_targets (job_name, address) VALUES ('good', '$A')"
qm "UPDATE parca.scrape_profiles SET enabled = (name = 'goroutine') WHERE job_name = 'good'"
check "the owner's job starts the scrape worker, with the owner's search_path in force" new_worker scrape ""
q "SELECT pg_reload_conf()" >/dev/null		# and a maintenance round, now
check "the worker scrapes the target and stores its profiles" \
	wait_for 60 "SELECT count(*) > 0 FROM parca.samples s JOIN parca.series se ON se.id = s.series_id
	             WHERE se.labels->>'job' = 'good'"
sleep 3
check_eq "no call of the worker reached the owner's code" "" \
	"$(qv "SELECT string_agg(DISTINCT what || ' in ' || query, ', ') FROM evil.calls WHERE session_role <> 'mallory'")"
check_eq "the owner is no superuser" "f" "$(q "SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'")"

# A superuser in the owner's database who writes their own statements with
# every name qualified: whatever the functions do inside (SQL and PL/pgSQL
# bodies, triggers, CHECK constraints, C code's statements) must not reach
# the owner's code.
cat >"$tmp/calls.sql" <<EOF
SELECT public.parca_ingest_pprof(pg_catalog.pg_read_binary_file('$tmp/good.pb.gz'), 'su', '{"job": "su"}');
SELECT public.parca_series_id('a:b:c:d:e', '{"k": "v"}');
SELECT public.parca_register_location('{"address": "0x10", "build_id": "ab", "file": "/bin/x", "lines": [{"function": "f", "line": 3}]}');
SELECT public.parca_register_location('{"address": "0x20", "file": "/bin/x"}');
SELECT public.parca_register_location('{"address": "0x20", "file": "/bin/x", "lines": [{"function": "g"}]}');
SELECT * FROM public.parca_profile_types();
SELECT * FROM public.parca_profile_types('-infinity', 'infinity');
SELECT * FROM public.parca_labels();
SELECT * FROM public.parca_labels('{job="su"}', '-infinity', 'infinity');
SELECT * FROM public.parca_label_values('job');
SELECT * FROM public.parca_label_values('job', '{}', '-infinity', 'infinity');
SELECT * FROM public.parca_series('{job=~"s.*"}');
SELECT public.parca_series_ids('{job!="x"}');
SELECT public.parca_profile_total(public.parca_query('su:samples:count:cpu:nanoseconds:delta{job="su"}', '-infinity', 'infinity'));
SELECT public.parca_profile_total(public.parca_query('su:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity', group_by => '{job}'));
SELECT public.parca_profile_total(public.parca_query('su:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity', keep_function => 'main', drop_binary => 'x'));
SELECT * FROM public.parca_query_range('su:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity', '1 hour');
SELECT * FROM public.parca_query_range('su:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity', '1 hour', '{job}');
SELECT * FROM public.parca_top(public.parca_query('su:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity'));
SELECT * FROM public.parca_icicle(public.parca_query('su:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity'));
SELECT pg_catalog.length(public.parca_flamegraph_svg(public.parca_query('su:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity')));
SELECT pg_catalog.length(public.parca_pprof(public.parca_query('su:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity')));
SELECT public.parca_profile_total(public.parca_diff(public.parca_query('su:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity'),
                                                    public.parca_query('su:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity')));
SELECT public.parca_profile_total(public.parca_merge(stack, value)) FROM parca.samples;
SELECT * FROM public.parca_location((SELECT id FROM parca.locations LIMIT 1));
SELECT * FROM public.parca_frames((SELECT stack FROM parca.samples LIMIT 1));
SELECT public.parca_labels_text('{"a": "b"}');
SELECT * FROM public.parca_columnar_check('parca.samples_default');
SELECT * FROM public.parca_columnar_chunks('parca.samples_default') LIMIT 1;
SELECT public.parca_columnar_compact('parca.samples_default');
SELECT * FROM public.parca_maintain_partitions();
SELECT * FROM parca.partitions;
SELECT parca.create_partition('2001-02-03');
SELECT public.parca_columnar_set_options('parca.samples', compression_level => 3);
SELECT * FROM public.parca_scrape_import_yaml('scrape_configs:
  - job_name: imported
    scrape_interval: 1m
    params: {a: [b]}
    static_configs: [{targets: ["127.0.0.1:1"], labels: {x: y}}]
    profiling_config: {pprof_config: {memory: {enabled: false}, fgprof: {path: /x, delta: true}}}', true);
INSERT INTO parca.scrape_jobs (job_name, params) VALUES ('su', '{"a": ["b c", "d"]}');
INSERT INTO parca.scrape_targets (job_name, address, labels) VALUES ('su', '127.0.0.1:1', '{"l": "v"}');
INSERT INTO parca.scrape_profiles (job_name, name, path, delta) VALUES ('su', 'memory', '/m', true);
UPDATE parca.scrape_jobs SET scrape_timeout = '20 s' WHERE job_name OPERATOR(pg_catalog.=) 'su';
SELECT * FROM parca.scrape_endpoints('{"su": [{"address": "127.0.0.1:2", "labels": {}}]}');
SELECT * FROM parca.scrape_file_sd_targets('[{"targets": ["127.0.0.1:3"], "labels": {"a": "b", "__x": "y"}}]');
SELECT parca.scrape_url_encode('a b/é');
SELECT * FROM parca.targets;
DELETE FROM parca.scrape_jobs WHERE job_name OPERATOR(pg_catalog.=) ANY ('{su,imported}');
EOF
# each call takes well under a second; the timeout keeps a call that loops
# (on a twin's NULL, say) from holding up the suite
PGOPTIONS="-c statement_timeout=120s" psql -X -d victim -f "$tmp/calls.sql" >"$tmp/calls.out" 2>&1
check "a superuser's calls of every function run in the owner's database without error" \
	bash -c "! grep -q ERROR '$tmp/calls.out'" || grep -m3 -A3 ERROR "$tmp/calls.out"
check_eq "and none of them reached the owner's code" "" \
	"$(qv "SELECT string_agg(DISTINCT what || ' in ' || query, ', ') FROM evil.calls WHERE session_role <> 'mallory'")"
check_eq "the owner is still no superuser" "f" "$(q "SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'")"

# --- Privileges of a plain login role -------------------------------------
q "CREATE ROLE plain LOGIN"
qp() {
	PGOPTIONS="-c search_path=pg_catalog,public" psql -X -qAt -U plain -d victim -c "$1" 2>&1
}
samples=$(qv "SELECT 'parca.samples'::regclass::oid")
for f in parca_columnar_chunks parca_columnar_check parca_columnar_compact; do
	check "a plain role cannot run $f" grep -q "permission denied for function $f" \
		<<<"$(qp "SELECT * FROM $f($samples)")"
done
check "nor read samples through parca_query" grep -q "permission denied" \
	<<<"$(qp "SELECT parca_query('su:samples:count:cpu:nanoseconds:delta', '-infinity', 'infinity')")"
check "nor store a profile" grep -q "permission denied" \
	<<<"$(qp "SELECT parca_ingest_pprof('\\x0a040801100212060a0101120105220208013200320363707532026e73', 'p')")"
check "nor read the scrape targets" grep -q "permission denied" <<<"$(qp "SELECT * FROM parca.targets")"

# --- Redirects --------------------------------------------------------------
for r in redirect_same redirect_other; do
	qv "INSERT INTO parca.scrape_jobs (job_name, scrape_interval, path_prefix) VALUES ('$r', '1 s', '/$r')"
	qv "INSERT INTO parca.scrape_targets (job_name, address) VALUES ('$r', '$A')"
	qv "UPDATE parca.scrape_profiles SET enabled = (name = 'goroutine') WHERE job_name = '$r'"
done
check "a redirect to the target's own origin is followed" \
	wait_for 60 "SELECT health = 'up' FROM parca.targets WHERE job = 'redirect_same'"
check "a redirect to another port is not (parca.scrape_redirects = same_origin)" \
	wait_for 60 "SELECT health = 'down' AND last_error LIKE 'redirect to \"http://$B/good/%\" not followed (parca.scrape_redirects = same_origin)'
	             FROM parca.targets WHERE job = 'redirect_other'"
check_eq "the other port never heard from the worker" "0" "$(wc -l <"$tmp/b.log")"
q "ALTER SYSTEM SET parca.scrape_redirects = 'none'"
q "SELECT pg_reload_conf()" >/dev/null
check "with none, not even to the same origin" \
	wait_for 60 "SELECT health = 'down' AND last_error LIKE 'redirect to \"http://$A/good/%\" not followed (parca.scrape_redirects = none)'
	             FROM parca.targets WHERE job = 'redirect_same'"
q "ALTER SYSTEM SET parca.scrape_redirects = 'any'"
q "SELECT pg_reload_conf()" >/dev/null
check "with any, to another port too" \
	wait_for 60 "SELECT health = 'up' FROM parca.targets WHERE job = 'redirect_other'"
check "where the other port saw the worker" test "$(wc -l <"$tmp/b.log")" -gt 0
q "ALTER SYSTEM RESET parca.scrape_redirects"
q "SELECT pg_reload_conf()" >/dev/null
qv "DELETE FROM parca.scrape_jobs WHERE job_name LIKE 'redirect%'"

# --- Memory -----------------------------------------------------------------
# A backend's peak (VmHWM) while it refuses a profile that decodes to far
# more than its size.  Decompressed bytes and decoded form together are
# held to parca.max_profile_size (L), and the inflated bytes are freed
# before the profile is processed, so the peak may grow by L plus what a
# backend allocates anyway: the compressed input (at most 40 kB here, held
# twice), zlib's state (under 64 kB), protobuf-c's 16 kB of stack and the
# executor's state, and the pages of shared buffers and catalog caches that
# the call touches (a warm-up ingest in the same session touches them
# first).  8 MB covers all of that several times over; without the budget
# each of these profiles took 100 MB to 1.5 GB.
margin_kb=$((8 * 1024))
# peak_kb FILE LIMIT_BYTES: the peak growth in kB, and the error, on stdout
peak_kb() {
	psql -X -qAt -v ON_ERROR_STOP=0 -d postgres <<EOF 2>&1
SET parca.max_profile_size = $2;
SELECT parca_ingest_pprof(pg_read_binary_file('$fixture'), 'warmup') > 0 AS warm \gset
SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\s+(\d+)') AS before \gset
SELECT parca_ingest_pprof(pg_read_binary_file('$1'), 'bomb');
SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\s+(\d+)')::bigint - :before AS grew_kb;
EOF
}
for kind in empty_samples one_value_samples labelled_samples long_stacks unknown_fields many_lines nested; do
	out=$(peak_kb "$tmp/$kind.pb.gz" "$limit")
	grew=$(tail -1 <<<"$out")
	echo "# $kind: $(stat -c %s "$tmp/$kind.pb.gz") bytes of gzip, peak grew by $grew kB"
	if [ "$kind" = nested ]; then
		# protobuf-c keeps an unknown field whole (one allocation): nothing to refuse
		check "$kind: stored" grep -q '^0$' <<<"$out"
	else
		check "$kind: refused for its decoded size" \
			grep -q "profile needs more than parca.max_profile_size ($limit bytes) of memory to decode" <<<"$out"
	fi
	check "$kind: the backend's peak grew by at most the limit + 8 MB" \
		test "${grew:-999999999}" -le $((limit / 1024 + margin_kb))
done
out=$(peak_kb "$tmp/empty_samples_64.pb.gz" $((64 * 1024 * 1024)))
grew=$(tail -1 <<<"$out")
echo "# empty samples at the default limit: $(stat -c %s "$tmp/empty_samples_64.pb.gz") bytes of gzip, peak grew by $grew kB"
check "at the default limit of 64 MB too" test "${grew:-999999999}" -le $((64 * 1024 + margin_kb))

# The worker: a target serves the empty samples bomb.  The worker's peak
# grows by the same bound; afterwards it gives the memory back (its private
# memory, RssAnon, is back within 8 MB of what it was before).
pid=$(worker_pid)
hwm0=$(status_kb "$pid" VmHWM)
anon0=$(status_kb "$pid" RssAnon)
qv "INSERT INTO parca.scrape_jobs (job_name, scrape_interval, path_prefix) VALUES ('bomb', '1 s', '/bomb')"
qv "INSERT INTO parca.scrape_targets (job_name, address) VALUES ('bomb', '$A')"
qv "UPDATE parca.scrape_profiles SET enabled = (name = 'goroutine') WHERE job_name = 'bomb'"
check "the worker refuses the bomb" \
	wait_for 60 "SELECT health = 'down' AND last_error LIKE 'ingest: profile needs more than parca.max_profile_size%'
	             FROM parca.targets WHERE job = 'bomb'"
sleep 3		# a few more of them
qv "DELETE FROM parca.scrape_jobs WHERE job_name = 'bomb'"
sleep 2
hwm1=$(status_kb "$pid" VmHWM)
anon1=$(status_kb "$pid" RssAnon)
echo "# worker: VmHWM $hwm0 -> $hwm1 kB, RssAnon $anon0 -> $anon1 kB"
check_eq "still the same worker" "$pid" "$(worker_pid)"
check "the worker's peak grew by at most the limit + 8 MB" test $((hwm1 - hwm0)) -le $((limit / 1024 + margin_kb))
check "and it gave the memory back" test "$anon1" -le $((anon0 + margin_kb))

# --- Row-level security and the rollups -----------------------------------
# Two series, one hidden from the reader by a policy on parca.samples;
# their hours, days and weeks rolled up.
q "CREATE DATABASE rls"
qr() {
	PGOPTIONS="-c parca.rollups=on ${PGOPTIONS:-}" psql -X -v ON_ERROR_STOP=1 -qAt -d rls -U "${2:-postgres}" -c "$1" 2>&1
}
qr "CREATE EXTENSION parca; CREATE EXTENSION pg_stat_statements" >/dev/null
qr "SELECT parca_ingest_pprof(pg_read_binary_file('$tmp/good.pb.gz'), 'rls', '{\"job\": \"seen\"}'),
           parca_ingest_pprof(pg_read_binary_file('$tmp/good.pb.gz'), 'rls', '{\"job\": \"hidden\"}')" >/dev/null
# (the rows moved out of the default partition first, as the database's
# maintenance worker would do at any moment: the tables below stay put)
qr "SELECT parca_maintain_partitions()" >/dev/null
qr "SELECT * FROM parca_rollup_hours('-infinity', now())" >/dev/null
q "CREATE ROLE restricted LOGIN"
q "CREATE ROLE unrestricted LOGIN BYPASSRLS"
for r in restricted unrestricted; do
	qr "GRANT USAGE ON SCHEMA parca TO $r;
	    GRANT SELECT ON parca.samples, parca.series, parca.locations, parca.functions, parca.mappings,
	        parca.samples_hourly, parca.rollup_hours, parca.samples_daily, parca.rollup_days,
	        parca.samples_weekly, parca.rollup_weeks, parca.profiles_hourly TO $r;
	    GRANT SELECT ON ALL TABLES IN SCHEMA parca TO $r"
done
qr "ALTER TABLE parca.samples ENABLE ROW LEVEL SECURITY;
    CREATE POLICY seen ON parca.samples FOR SELECT TO restricted, unrestricted
        USING (series_id IN (SELECT id FROM parca.series WHERE labels->>'job' = 'seen'))"
# every table with rows of a series: parca.samples' partitions, the
# rollups, their partitions, the hours' sums
tables=$(qr "SELECT string_agg(c.oid::regclass::text, ' ' ORDER BY c.oid::regclass::text)
             FROM pg_class c
             WHERE c.relnamespace = 'parca'::regnamespace AND c.relkind IN ('r', 'p')
               AND EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'series_id')
               AND c.relname NOT IN ('samples', 'series', 'agent_batches')")
hidden_rows() { # hidden_rows ROLE: tables (with their count) where ROLE reads rows of the hidden series
	local t n out=""
	for t in $tables; do
		n=$(qr "SELECT count(*) FROM $t WHERE series_id IN (SELECT id FROM parca.series WHERE labels->>'job' = 'hidden')" "$1")
		[ "$n" = 0 ] || out="$out $t:$n"
	done
	echo "${out# }"
}
echo "# rows of the hidden series: $(hidden_rows postgres)"
# (tables with a count of rows, not an error)
readable() { tr ' ' '\n' | grep -c ':[0-9][0-9]*$'; }
check "a superuser reads rows of the hidden series in the rollups, their partitions and the raw partition" \
	test "$(hidden_rows postgres | readable)" -ge 8
check_eq "the restricted reader reads none, from any of them" "" "$(hidden_rows restricted)"
check_eq "nor the periods rolled up, with rows of every series" "0/0/0" \
	"$(qr "SELECT (SELECT count(*) FROM parca.rollup_hours) || '/' || (SELECT count(*) FROM parca.rollup_days)
	           || '/' || (SELECT count(*) FROM parca.rollup_weeks)" restricted)"
sel="rls:samples:count:cpu:nanoseconds:delta"
total() { # total SELECTOR ROLE [rollups]: parca_query's total over all time
	PGOPTIONS="-c parca.rollups=${3:-on}" qr "SELECT coalesce(parca_profile_total(parca_query('$1', '-infinity', 'infinity')), 0)
	                                            || '/' || parca_profile_stacks(parca_query('$1', '-infinity', 'infinity'))" "$2"
}
raw_seen=$(total "$sel{job=\"seen\"}" postgres off)
check "(the rollups hold the merge: the same answer through them)" test "$(total "$sel{job=\"seen\"}" postgres)" = "$raw_seen"
check_eq "the restricted reader's parca_query of every series is the seen one's" "$raw_seen" "$(total "$sel" restricted)"
check_eq "and of the hidden one, empty" "0/0" "$(total "$sel{job=\"hidden\"}" restricted)"
range() { # range ROLE ROLLUPS JOBS: parca_query_range by job, per hour, of the jobs (a regex)
	PGOPTIONS="-c parca.rollups=$2" qr "SELECT string_agg(time || ' ' || series || ' ' || value || ' ' || profiles, ', '
	                                                      ORDER BY time, series)
	                                   FROM parca_query_range('$sel', '-infinity', 'infinity', '1 hour', '{job}')
	                                   WHERE labels->>'job' ~ '$3'" "$1"
}
check_eq "and its parca_query_range, the seen series' alone" "$(range postgres off seen)" "$(range restricted on .)"
# A reader whom parca.samples' policies do not restrict reads the rollups,
# and parca_query merges them directly, as from parca.samples, not through
# SQL statements of parca_merge (which pg_stat_statements would show)
check "a reader that bypasses row-level security reads the rollups" test "$(hidden_rows unrestricted | readable)" -ge 8
raw_all=$(total "$sel" postgres off)
check_eq "and gets the same answer through them" "$raw_all" "$(total "$sel" unrestricted)"
qr "ALTER TABLE parca.samples DISABLE ROW LEVEL SECURITY"
# (a partition is read through its parent, whose policies apply: the
# partitions' own row-level security shows them to no one else)
check_eq "so does the reader once no row-level security applies to parca.samples, through the parents" \
	"$(hidden_rows postgres | tr ' ' '\n' | grep -v -e '_[0-9]\{8\}:' -e '^parca.samples_default:' | xargs)" \
	"$(hidden_rows restricted)"
qr "SELECT pg_stat_statements_reset()" >/dev/null
check_eq "with the same answer" "$raw_all" "$(total "$sel" restricted)"
check_eq "merged directly from the rollups" "" \
	"$(qr "SELECT string_agg(query, '; ') FROM pg_stat_statements
	       WHERE userid = 'restricted'::regrole AND query ~ 'parca_merge\(.* FROM parca\.samples_(hourly|daily|weekly)'")"
check "(statements of the reader's are seen)" test "$(qr "SELECT count(*) FROM pg_stat_statements
	                                                      WHERE userid = 'restricted'::regrole")" -gt 0

# --- Ids crafted to share a hash bucket ---------------------------------------
# A role allowed to ingest computes ids as the extension does (common/ids),
# so it can send locations whose ids agree in the low bits that a fixed hash
# of 64-bit keys buckets them by; every query that names them would then
# probe one chain as long as the table.  The tables are keyed by a random
# key per process (src/types/table_hash.h): the symbol table's own
# statistics (simplehash's, written at LOG when DEBUG2 is wanted) give the
# most ids that share a bucket.  2,000 ids in its 8,192 buckets: a bucket
# holds Poisson(0.24) of them, and one with 12 or more has a probability
# under 1e-12; the fixed hash put all 2,000 in one.
q "CREATE DATABASE flood"
psql -X -qAt -v ON_ERROR_STOP=1 -d flood -c "CREATE EXTENSION parca"
qf() {
	psql -X -v ON_ERROR_STOP=1 -qAt -d flood -c "$1"
}
check_eq "2,000 locations crafted to share a bucket are stored" "2000" \
	"$(qf "SELECT parca_ingest_pprof(pg_read_binary_file('$tmp/colliding.pb.gz'), 'flood')")"
check_eq "(their ids agree in the low 14 bits of id ^ id >> 32)" "2000 1" \
	"$(qf "SELECT count(*) || ' ' || count(DISTINCT (id # (id >> 32)) & 16383) FROM parca.locations")"
stat=$(psql -X -qAt -d flood 2>&1 <<'EOF'
SET client_min_messages = debug2;
SELECT count(*) FROM parca_top((SELECT parca_merge(stack, value) FROM parca.samples));
EOF
)
members=$(sed -n 's/.*members: \([0-9]*\),.*max_collisions: \([0-9]*\),.*/\1 \2/p' <<<"$stat" | tail -1)
check_eq "a query's symbol table holds them" "2000" "${members% *}"
echo "# the most of them in one bucket: $((${members#* } + 1))"
check "at most 11 of them share a bucket" test "${members#* }" -le 10

# --- Names that are not text ------------------------------------------------
q "CREATE DATABASE strings"
psql -X -qAt -v ON_ERROR_STOP=1 -d strings -c "CREATE EXTENSION parca"
qs() {
	psql -X -v ON_ERROR_STOP=1 -qAt -d "${2:-strings}" -c "$1"
}
check_eq "a profile with hostile names is stored" "13" \
	"$(qs "SELECT parca_ingest_pprof(pg_read_binary_file('$tmp/hostile_strings.pb.gz'), 'names', '{\"job\": \"names\"}')")"
# each byte that does not start a character, and each NUL, is one U+FFFD
check "its invalid bytes and NULs became U+FFFD, one each" \
	test "$(qs "SELECT array_agg(name ORDER BY name) = ARRAY[
	              E'caf\uFFFD_latin1', E'lone\uFFFDcontinuation', E'nul\uFFFDinside', E'overlong\uFFFD\uFFFD',
	              E'surrogate\uFFFD\uFFFD\uFFFD', E'truncated\uFFFD\uFFFD', E'\uFFFD\uFFFD\x01\uFFFD',
	              E'\uFFFD\uFFFD/usr/lib/libweird.so']
	            FROM parca.functions WHERE strpos(name, E'\uFFFD') > 0")" = t
check_eq "control characters, valid UTF-8 and a 1 MB name are kept" "3" \
	"$(qs "SELECT count(*) FROM parca.functions WHERE name IN (E'ctl\x01\x1f\x7f\ttab\nnewline', 'valid € euro')
	       OR (name LIKE 'long\_x%' AND length(name) = 1048581)")"
check "the mapping's file and build id too" \
	test "$(qs "SELECT bool_and(file = E'caf\uFFFD_latin1' AND build_id = E'lone\uFFFDcontinuation') FROM parca.mappings")" = t
check "and the numeric label's name and unit" \
	test "$(qs "SELECT bool_and(num_labels = jsonb_build_object(E'\uFFFD\uFFFD/usr/lib/libweird.so',
	                                     jsonb_build_object('value', 42, 'unit', E'\uFFFD\uFFFD\x01\uFFFD')))
	            FROM parca.samples")" = t
# Writers that INSERT or COPY names themselves (parca-agent) send them
# through libpq: the server checks them against the database encoding,
# whatever client_encoding says, but for a text COPY that says SQL_ASCII,
# which the tables' CHECK constraints stop.
bad_insert=$(printf "INSERT INTO parca.functions VALUES (1, 'bad\xff', '', '', 0)")
check "an INSERT of a name that is not UTF-8 is refused" grep -q 'invalid byte sequence for encoding "UTF8": 0xff' \
	<<<"$(PGCLIENTENCODING=SQL_ASCII psql -X -qAt -d strings -c "$bad_insert" 2>&1)"
check "so is a COPY of one" grep -q 'violates check constraint "functions_name_check"' \
	<<<"$(printf '2\tbad\xff\t\t\t0\n' | PGCLIENTENCODING=SQL_ASCII psql -X -qAt -d strings \
		-c "COPY parca.functions FROM STDIN" 2>&1)"
check "and of labels" grep -q 'violates check constraint "series_labels_check"' \
	<<<"$(printf 'x:a:b:c:d\t{"a": "b\xff"}\n' | PGCLIENTENCODING=SQL_ASCII psql -X -qAt -d strings \
		-c "COPY parca.series (profile_type, labels) FROM STDIN" 2>&1)"

pg_dump -Fc -d strings -f "$tmp/strings.dump"
# restored with its workers off (docs/workers.md): the maintenance worker
# would make the day's partitions that the dump makes too
q "CREATE DATABASE restored"
q "ALTER DATABASE restored SET parca.workers = off"
pg_restore -d restored "$tmp/strings.dump" 2>"$tmp/restore.err"
check "pg_restore restores the dump without errors" test ! -s "$tmp/restore.err" || head -5 "$tmp/restore.err"
digest="SELECT md5(string_agg(x, ',' ORDER BY x)) FROM (
	SELECT f::text AS x FROM parca.functions f UNION ALL SELECT m::text FROM parca.mappings m
	UNION ALL SELECT l::text FROM parca.locations l UNION ALL SELECT s::text FROM parca.series s
	UNION ALL SELECT (parca_profile_total(parca_merge(stack, value)), count(*))::text FROM parca.samples) t"
check_eq "with every name, location, series and sample" "$(qs "$digest")" "$(qs "$digest" restored)"

finish
