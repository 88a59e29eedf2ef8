#!/usr/bin/env bash
# The web UI of parca-server (docs/web.md) against a real cluster with the
# fixtures ingested and a real parca-server:
#  - its API (server/ui_api.c): every endpoint's answer equals the SQL
#    function it wraps, run by psql; bad parameters, a bad selector, an
#    empty range and a database that is down are 4xx/5xx JSON naming the
#    problem; without credentials it refuses off loopback, and a user sees
#    only what its role may read (row-level security, docs/security.md);
#  - the UI itself (web/, `make web`) in Debian's headless chromium driven
#    by playwright-core (run.js): see run.js for its checks.  Screenshots of
#    every step are kept in test/web/artifacts/ (ignored by git).
# playwright-core is installed from the registry into a folder outside the
# tree keyed by package-lock.json (web/npm.sh), as the UI's own packages.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib.sh"

require_fixtures
server_bin=$REPO_ROOT/server/parca-server
port_base=$((${PARCA_WEB_TEST_PORT:-11070} + ${PARCA_TEST_PORT_OFFSET:-0}))
start_cluster "${PARCA_WEB_TEST_PG_PORT:-54481}"
export PGOPTIONS="-c client_min_messages=warning"
work=$(mktemp -d /tmp/parca-web-test.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	stop_cluster
	rm -rf "$work"
}
trap cleanup EXIT

# ---- the data: large.cpu, fib, the ten "many" profiles a few seconds
# apart, and a label value with quotes, dots and slashes
fixtures=$SHARED_TESTDATA/pprof
cp "$fixtures/google-pprof/large.cpu" "$fixtures/parca/fib.pb.gz" "$work/"
cp -r "$fixtures/parca/many" "$work/many"
chmod -R a+rX "$work"
ingest() {
	q "SELECT parca_ingest_pprof(pg_read_binary_file('$1'), '$2', '$3'::jsonb)" >/dev/null
}
ingest "$work/large.cpu" large '{"job": "large"}'
ingest "$work/fib.pb.gz" fib '{"job": "team"}'
ingest "$work/fib.pb.gz" fib '{"job": "v1.2/it'"''"'s \"quoted\""}'
for f in "$work"/many/*.pb.gz; do ingest "$f" many '{"job": "many"}'; done
large_type=large:samples:count:cpu:nanoseconds:delta

# ---- roles: the server's login may become ui_all (reads everything) and
# ui_team (row-level security: the series of job "team" only)
q "CREATE ROLE parca_server LOGIN NOINHERIT;
   CREATE ROLE ui_all NOLOGIN; CREATE ROLE ui_team NOLOGIN;
   GRANT USAGE ON SCHEMA parca TO ui_all, ui_team;
   GRANT SELECT ON parca.samples, parca.series, parca.locations, parca.functions, parca.mappings TO ui_all, ui_team;
   GRANT ui_all, ui_team TO parca_server;
   ALTER TABLE parca.samples ENABLE ROW LEVEL SECURITY;
   ALTER TABLE parca.series ENABLE ROW LEVEL SECURITY;
   CREATE POLICY all_samples ON parca.samples FOR SELECT TO ui_all USING (true);
   CREATE POLICY all_series ON parca.series FOR SELECT TO ui_all USING (true);
   CREATE POLICY team_series ON parca.series FOR SELECT TO ui_team USING (labels->>'job' = 'team');
   CREATE POLICY team_samples ON parca.samples FOR SELECT TO ui_team
       USING (series_id IN (SELECT id FROM parca.series WHERE labels->>'job' = 'team'))" >/dev/null
cat > "$work/auth" <<AUTH
bearer tok-all ui_all
basic alice s3cret ui_team
AUTH
chmod 600 "$work/auth"
dsn="host=127.0.0.1 port=$PGPORT user=parca_server dbname=postgres"

# start_server NAME LISTEN FLAGS...: parca-server in the background, its log
# in $work/NAME.log; waits until it answers /ready
start_server() {
	local name=$1 listen=$2 i
	shift 2
	"$server_bin" --listen "$listen" --dsn "$dsn" --web-root "$web_root" "$@" >"$work/$name.log" 2>&1 &
	pids+=($!)
	for i in $(seq 1 150); do
		[ "$(curl -s "http://127.0.0.1:${listen##*:}/ready")" = ready ] && return 0
		sleep 0.2
	done
	echo "# $name did not start: $(tail -c 400 "$work/$name.log")"
	return 1
}
# the UI as make install-server installs it, where the server looks by default
web_root=${PARCA_WEB_ROOT:-$(pg_config --sharedir)/parca/web}
A=http://127.0.0.1:$port_base
start_server anon "127.0.0.1:$port_base" --allow-anonymous --anonymous-reader-role ui_all

# api PATH?QUERY: the body, then the status on a line of its own
api() {
	curl -s -w '\n%{http_code}' "$A/api/$1"
}
# oneline TEXT: on one line, for grep
oneline() { tr '\n' ' ' <<<"$1"; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
sel() { python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
all="start=0&stop=4102444800000"

# ---- the API against SQL
out=$(api profile-types)
check_eq "profile-types: parca_profile_types()" "$(q "SELECT string_agg(t, ',' ORDER BY t) FROM parca_profile_types() t")" \
	"$(head -n -1 <<<"$out" | json "','.join(d['values'])")"
out=$(api "label-values?label=job")
check_eq "label-values: parca_label_values('job')" "$(q "SELECT string_agg(v, '|' ORDER BY v) FROM parca_label_values('job') v")" \
	"$(head -n -1 <<<"$out" | json "'|'.join(d['values'])")"
out=$(api "labels?selector=$(sel "$large_type{}")")
check_eq "labels: parca_labels of a selector" "job" "$(head -n -1 <<<"$out" | json "','.join(d['values'])")"
s=$(sel "$large_type{job=\"large\"}")
out=$(api "icicle?selector=$s&$all&max_nodes=50")
check_eq "icicle: at most max_nodes rows, the trimmed ones said so" "50 True" "$(head -n -1 <<<"$out" | json "len(d['label']), d['trimmed']" | tr -d '(),')"
check_eq "icicle: the rows of parca_icicle(parca_query(...), 50)" \
	"$(q "SELECT string_agg(level || ':' || value || ':' || self || ':' || label, '|' ORDER BY n)
	      FROM (SELECT i.*, row_number() OVER () n FROM parca_icicle(parca_query('$large_type{job=\"large\"}', '-infinity', 'infinity'), 50) i) x")" \
	"$(head -n -1 <<<"$out" | json "'|'.join(f'{a}:{b}:{c}:{e}' for a,b,c,e in zip(d['level'],d['value'],d['self'],d['label']))")"
out=$(api "icicle?selector=$s&$all")
check_eq "icicle: large.cpu untrimmed at the default max_nodes is not trimmed only if it fits" \
	"$(q "SELECT count(*) > 4096 FROM parca_icicle(parca_query('$large_type{job=\"large\"}', '-infinity', 'infinity'))")" \
	"$(head -n -1 <<<"$out" | json "str(d['trimmed']).lower()[0]")"
out=$(api "top?selector=$s&$all&limit=5")
check_eq "top: parca_top's five heaviest" \
	"$(q "SELECT string_agg(function || ':' || flat || ':' || cum, '|' ORDER BY flat DESC, cum DESC, function)
	      FROM (SELECT * FROM parca_top(parca_query('$large_type{job=\"large\"}', '-infinity', 'infinity')) ORDER BY flat DESC, cum DESC, function LIMIT 5) t")" \
	"$(head -n -1 <<<"$out" | json "'|'.join(f'{a}:{b}:{c}' for a,b,c in zip(d['function'],d['flat'],d['cum']))")"
curl -s -o "$work/got.pb.gz" "$A/api/pprof?selector=$s&$all"
check "pprof: go tool pprof reads the download, its total is the profile's" \
	grep -q "of $(q "SELECT round(parca_profile_total(parca_query('$large_type{job=\"large\"}', '-infinity', 'infinity')) / 1e9, 2)")s total" \
	<(go tool pprof -top "$work/got.pb.gz" 2>/dev/null)
many_type=many:alloc_space:bytes:space:bytes
m=$(sel "$many_type{job=\"many\"}")
out=$(api "range?selector=$m&$all&step=1")
check_eq "range: parca_query_range's points, one series" \
	"$(q "SELECT string_agg((extract(epoch FROM time) * 1000)::bigint || ':' || value || ':' || profiles, '|' ORDER BY time)
	      FROM parca_query_range('$many_type{job=\"many\"}', '-infinity', 'infinity', '1 second')")" \
	"$(head -n -1 <<<"$out" | json "'|'.join(f'{int(t)}:{(\"%d\" % v) if v == int(v) else repr(v)}:{n}' for t,v,n in d['series'][0]['points']) if len(d['series'])==1 else 'series: %d' % len(d['series'])")"
out=$(api "profiles?selector=$m&$all")
check_eq "profiles: parca_profiles' ids" \
	"$(q "SELECT string_agg(profile_id, ',' ORDER BY time) FROM parca_profiles('$many_type{job=\"many\"}', '-infinity', 'infinity')")" \
	"$(head -n -1 <<<"$out" | json "','.join(d['ids'])")"
id=$(head -n -1 <<<"$out" | json "d['ids'][3]")
out=$(api "icicle?profile=$id&max_nodes=100000")
check_eq "icicle of one profile: parca_icicle(parca_profile(id))" \
	"$(q "SELECT md5(string_agg(level || ':' || value || ':' || self || ':' || label, '|' ORDER BY n))
	      FROM (SELECT i.*, row_number() OVER () n FROM parca_icicle(parca_profile('$id'), 100000) i) x")" \
	"$(head -n -1 <<<"$out" | json "__import__('hashlib').md5('|'.join(f'{a}:{b}:{c}:{e}' for a,b,c,e in zip(d['level'],d['value'],d['self'],d['label'])).encode()).hexdigest()")"
ids=$(api "profiles?selector=$m&$all" | head -n -1 | json "d['ids'][0] + ' ' + d['ids'][9]")
out=$(api "diff?base_profile=${ids% *}&profile=${ids#* }&max_nodes=100000")
check_eq "diff: parca_icicle_diff(parca_diff(base, compared))" \
	"$(q "SELECT md5(string_agg(level || ':' || value || ':' || self || ':' || \"valueRight\" || ':' || \"selfRight\" || ':' || label, '|' ORDER BY n))
	      FROM (SELECT i.*, row_number() OVER () n FROM parca_icicle_diff(parca_diff(parca_profile('${ids% *}'), parca_profile('${ids#* }')), 100000) i) x")" \
	"$(head -n -1 <<<"$out" | json "__import__('hashlib').md5('|'.join(f'{a}:{b}:{c}:{r}:{t}:{e}' for a,b,c,r,t,e in zip(d['level'],d['value'],d['self'],d['valueRight'],d['selfRight'],d['label'])).encode()).hexdigest()")"
q_sel=$(sel "fib:samples:count:cpu:nanoseconds:delta{job=\"v1.2/it's \\\"quoted\\\"\"}")
out=$(api "icicle?selector=$q_sel&$all&max_nodes=10")
check_eq "a label value with quotes, dots and slashes selects its series" \
	"$(q "SELECT parca_profile_total(parca_query('fib:samples:count:cpu:nanoseconds:delta{job=\"v1.2/it''s \\\"quoted\\\"\"}', '-infinity', 'infinity'))")" \
	"$(head -n -1 <<<"$out" | json "d['total']")"

# ---- what is refused, and how
out=$(api "icicle?selector=$s&start=0&stop=1000")
check_eq "an empty range: 200, no rows, no type" "200 0 None" "$(tail -1 <<<"$out") $(head -n -1 <<<"$out" | json "len(d['label']), d['type']" | tr -d "(),'")"
out=$(api "icicle?selector=$(sel 'large{job=')&$all")
check "a bad selector: 400 with the parser's message ($(tr '\n' ' ' <<<"$out"))" \
	grep -q 'invalid selector.*"reason":"bad_query".* 400 $' <<<"$(oneline "$out")"
out=$(api "icicle?selector=$s&start=yesterday&stop=1")
check "a bad time: 400 naming the parameter" grep -q '"start must be milliseconds.* 400 $' <<<"$(oneline "$out")"
out=$(api "icicle?selector=$s&$all&max_nodes=0")
check "max_nodes out of bounds: 400" grep -q 'max_nodes must be.* 400 $' <<<"$(oneline "$out")"
out=$(api "icicle?$all")
check "a missing parameter: 400 naming it" grep -q 'the parameter selector is required.* 400 $' <<<"$(oneline "$out")"
long=$(python3 -c 'print("{job=~\"" + "a|" * 4200 + "large\"}")')
out=$(api "icicle?selector=$(sel "$large_type$long")&$all")
check "a selector longer than the server reads: 414, not a shorter selector" grep -q 'longer than the server reads.* 414 $' <<<"$(oneline "$out")"
out=$(api "nosuch")
check "an unknown API: 404" grep -q 'no such API.* 404 $' <<<"$(oneline "$out")"
out=$(curl -s -w '\n%{http_code}' -X POST "$A/api/labels")
check "POST to the API: 405" grep -q 'takes GET.* 405 $' <<<"$(oneline "$out")"
out=$(curl -s -w '\n%{http_code}' "$A/../../etc/passwd" --path-as-is)
check "a path outside the web root: 404" grep -q ' 404 $' <<<"$(oneline "$out")"

# ---- the UI's files gzipped (web/build.sh) to a client that takes gzip,
# plain to one that does not, the same bytes either way
if [ -f "$web_root/index.html" ]; then
	for f in index.html app.js; do
		curl -s -D "$work/plain.h" -o "$work/plain.body" "$A/$f"
		curl -s -D "$work/gz.h" -o "$work/gz.body" -H 'Accept-Encoding: gzip, deflate' "$A/$f"
		check "$f without Accept-Encoding: plain, the installed file" \
			cmp -s "$work/plain.body" "$web_root/$f"
		check "$f without Accept-Encoding: no Content-Encoding" \
			bash -c "! grep -qi '^content-encoding' '$work/plain.h'"
		check "$f to a client that takes gzip: Content-Encoding: gzip" grep -qi '^content-encoding: gzip' "$work/gz.h"
		check "$f gzipped: Vary: Accept-Encoding, its own Content-Type" \
			bash -c "grep -qi '^vary: accept-encoding' '$work/gz.h' && grep -i '^content-type' '$work/gz.h' | cmp -s - <(grep -i '^content-type' '$work/plain.h')"
		check "$f gzipped: the same bytes once decompressed" bash -c "gzip -dc '$work/gz.body' | cmp -s - '$work/plain.body'"
	done
	# minified JavaScript compresses three to four times: half is a wide margin
	check "app.js gzipped: less than half its size ($(stat -c %s "$work/gz.body") of $(stat -c %s "$work/plain.body") bytes)" \
		test "$(stat -c %s "$work/gz.body")" -lt $(($(stat -c %s "$work/plain.body") / 2))
	for ae in 'gzip;q=0' 'gzip;q=0.0, *' 'br' 'identity'; do
		curl -s -D "$work/h" -o "$work/body" -H "Accept-Encoding: $ae" "$A/app.js"
		check "app.js to Accept-Encoding: $ae: plain" \
			bash -c "! grep -qi '^content-encoding' '$work/h' && cmp -s '$work/body' '$web_root/app.js'"
	done
	curl -s -D "$work/h" -o /dev/null -H 'Accept-Encoding: br;q=1, *;q=0.5' "$A/app.js"
	check "app.js to Accept-Encoding: br;q=1, *;q=0.5: gzip" grep -qi '^content-encoding: gzip' "$work/h"
fi

# ---- credentials and roles
port_auth=$((port_base + 1))
start_server auth "0.0.0.0:$port_auth" --auth-file "$work/auth"
B=http://127.0.0.1:$port_auth
out=$(curl -s -w '\n%{http_code}' "$B/api/label-values?label=job")
check "off loopback, no credentials: 401" grep -q 'credentials are required.* 401 $' <<<"$(oneline "$out")"
out=$(curl -s -w '\n%{http_code}' -H 'Authorization: Bearer nope' "$B/api/label-values?label=job")
check "off loopback, unknown credentials: 401" grep -q ' 401 $' <<<"$(oneline "$out")"
out=$(curl -s -H 'Authorization: Bearer tok-all' "$B/api/label-values?label=job")
check_eq "a token of ui_all sees every series" "$(q "SELECT count(*) FROM parca_label_values('job')")" "$(json "len(d['values'])" <<<"$out")"
out=$(curl -s -u alice:s3cret "$B/api/label-values?label=job")
check_eq "alice (ui_team) sees only the series of job team" "team" "$(json "','.join(d['values'])" <<<"$out")"
out=$(curl -s -w '\n%{http_code}' -u alice:s3cret "$B/api/icicle?selector=$s&$all")
check "alice gets nothing of large.cpu: its type is unknown to her, as a type never stored ($(oneline "$out"))" \
	grep -q 'unknown profile type.* 400 $' <<<"$(oneline "$out")"
out=$(curl -s -u alice:s3cret "$B/api/icicle?selector=$(sel 'fib:samples:count:cpu:nanoseconds:delta{}')&$all")
check_eq "alice's merge of every fib series is team's alone" \
	"$(q "SELECT parca_profile_total(parca_query('fib:samples:count:cpu:nanoseconds:delta{job=\"team\"}', '-infinity', 'infinity'))")" \
	"$(json "d['total']" <<<"$out")"
"$server_bin" --listen "0.0.0.0:$((port_base + 2))" --dsn "$dsn" --allow-anonymous >"$work/refused.log" 2>&1
check "--allow-anonymous off loopback: refuses to start, saying why" grep -q 'needs --listen on a loopback address' "$work/refused.log"
"$server_bin" --listen "127.0.0.1:$((port_base + 2))" --dsn "$dsn" >"$work/refused2.log" 2>&1
check "no credentials and no --allow-anonymous: refuses to start, saying why" grep -q 'no credentials: give --auth-file' "$work/refused2.log"

# ---- the UI in chromium (run.js), the database down last
if [ -f "$web_root/index.html" ] && [ -z "${PARCA_WEB_API_ONLY:-}" ]; then
	if install=$(bash "$REPO_ROOT/web/npm.sh" "$here"); then
		mkdir -p "$here/artifacts"
		rm -f "$here"/artifacts/*.png
		if ! PARCA_WEB_STOP_DB="runuser -u postgres -- $PG_BIN/pg_ctl -D $PGDATA_DIR/data -m fast stop" \
			NODE_PATH=$install/node_modules node "$here/run.js" "$A" "$here/artifacts" "$B" \
			> "$work/checks" 2> "$work/err"; then
			check "the browser checks ran ($(head -c 600 "$work/err"))" false
			sed -n '/^the last API requests/,$p' "$work/err" | sed 's/^/# /'
		fi
		cp "$work/checks" "$work/err" "$here/artifacts/"
		check_tsv "$work/checks"
	else
		check "npm ci of playwright-core" false
	fi
else
	check "the web UI is installed ($web_root/index.html: make install-server)" test -f "$web_root/index.html"
fi

# (stopped by run.js already, unless it did not get there)
runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGDATA_DIR/data" -m fast stop >/dev/null 2>&1
out=$(api "label-values?label=job")
check "the database down: 503 JSON saying so ($(tr '\n' ' ' <<<"$out"))" \
	grep -q 'not reachable.*"reason":"database_unavailable".* 503 $' <<<"$(oneline "$out")"
finish
