#!/usr/bin/env bash
# parca-server with real clients and hostile ones (docs/push.md):
#  - a real Go program's CPU and heap profiles uploaded the way pyroscope-go's
#    upstream/remote uploads them (multipart, sample_type_config, the older
#    SDKs' prev_profile), through the Push API in protobuf and JSON, gzipped
#    or not: each stored profile equal to the one sent, per function, by
#    `go tool pprof -top` (test/pprof/compare_top.py);
#  - @pyroscope/nodejs (npm) profiling a Node.js program with known hot
#    functions: its wall and heap uploads, captured on the wire with
#    --save-bodies, equal to what is stored; the hot functions lead parca_top;
#  - bearer tokens and basic auth mapped to roles, TLS, X-Scope-OrgID, the
#    database stopped and started again, one transaction per request;
#  - hostile input on every endpoint, slow clients, memory, a graceful stop.
# Ports: the cluster at 54491 + PARCA_TEST_PORT_OFFSET, the servers at
# 19001.. + PARCA_TEST_PORT_OFFSET.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib.sh"

require_fixtures
server_bin=$REPO_ROOT/server/parca-server
if [ ! -x "$server_bin" ]; then
	echo "FAIL - $server_bin is not built (make server)"
	echo "0 passed, 1 failed"
	exit 1
fi
export HOME=${HOME:-/root} GOFLAGS= GOCACHE=${GOCACHE:-/tmp/parca-push-gocache}
work=$(mktemp -d /tmp/parca-push-test.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	stop_cluster
	[ -n "${PARCA_PUSH_KEEP:-}" ] || rm -rf "$work"
}
start_cluster "${PARCA_PUSH_TEST_PORT:-54491}"
trap cleanup EXIT	# (after start_cluster, whose own trap this replaces)
port_base=$((19000 + ${PARCA_TEST_PORT_OFFSET:-0}))
client=$work/pushclient
(cd "$work" && go build -o "$client" "$here/pushclient.go") || { echo "FAIL - building pushclient"; finish; exit 1; }

# Roles (docs/push.md, "Roles"): the server logs in as parca_server, which
# inherits nothing and may SET ROLE to push_a (a parca_push member), push_b
# (no rights); push_c is a parca_push member the server may not become.
q "CREATE ROLE parca_server LOGIN NOINHERIT;
   CREATE ROLE push_a NOLOGIN IN ROLE parca_push;
   CREATE ROLE push_b NOLOGIN;
   CREATE ROLE push_c NOLOGIN IN ROLE parca_push;
   GRANT push_a, push_b TO parca_server" >/dev/null
cat > "$work/auth" <<AUTH
# tokens and users of the test, each with its role
bearer tok-a push_a
bearer tok-b push_b
bearer tok-c push_c
basic alice s3cret push_a
AUTH
chmod 600 "$work/auth"
dsn="host=127.0.0.1 port=$PGPORT user=parca_server dbname=postgres"

# start_server NAME PORT FLAGS...: runs parca-server in the background,
# its log in $work/NAME.log; waits until /ready answers 200 (503 until its
# workers have connected to the database: seconds on a loaded machine)
start_server() {
	local name=$1 port=$2 scheme=http i
	shift 2
	case " $* " in *" --tls-cert "*) scheme=https ;; esac
	"$server_bin" --listen "127.0.0.1:$port" --dsn "$dsn" "$@" >"$work/$name.log" 2>&1 &
	eval "${name}_pid=$!"
	pids+=($!)
	for i in $(seq 1 150); do
		curl -skf -o /dev/null "$scheme://127.0.0.1:$port/ready" && return 0
		sleep 0.2
	done
	echo "# $name did not start: $(tail -c 400 "$work/$name.log")"
	return 1
}

# same_as_sent NAME SENT WHERE: for every sample type of the pprof file
# SENT, the stored series (WHERE, on parca.series se) hold the same total and
# the same per-function flat and cum values, by go tool pprof
same_as_sent() {
	local name=$1 sent=$2 where=$3 types t i=0
	types=$(go tool pprof -raw "$sent" 2>/dev/null | sed -n '/^Samples:/{n;p;q}')
	check "$name: the sent profile has sample types ($types)" test -n "$types"
	for t in $types; do
		local st=${t%%/*} want=$work/want.$$.$i got=$work/got.$$.$i
		go tool pprof -top -nodecount=1000000 -nodefraction=0 -sample_index=$i "$sent" >"$want" 2>/dev/null
		go tool pprof -raw "$sent" >"$want.raw" 2>/dev/null
		export_pprof "$where AND split_part(se.profile_type, ':', 2) = '$st'" "$got.pb.gz"
		go tool pprof -top -nodecount=1000000 -nodefraction=0 "$got.pb.gz" >"$got" 2>/dev/null
		go tool pprof -raw "$got.pb.gz" >"$got.raw" 2>/dev/null
		check "$name [$t]: stored = sent, per function (go tool pprof -top)" \
			python3 "$TEST_ROOT/pprof/compare_top.py" "$want" "$got" "$want.raw" "$got.raw" $i
		i=$((i + 1))
	done
}

rows_total() {
	q "SELECT count(*) || '/' || coalesce(sum(value), 0) FROM parca.samples"
}

A=http://127.0.0.1:$((port_base + 1))
auth=(-H 'Authorization: Bearer tok-a')
start_server a $((port_base + 1)) --auth-file "$work/auth" --save-bodies "$work/bodies" \
	--max-body-size 4MB --max-profile-size 8MB --max-memory 32MB --workers 2 --request-timeout 20
mkdir -p "$work/bodies"

########## a real Go program, uploaded as pyroscope-go does
"$client" profile -cpu "$work/cpu.pprof" -heap "$work/heap.pprof" -heap0 "$work/heap0.pprof" -seconds 3
now=$(date +%s%N)
out=$("$client" gosdk -url "$A" -token tok-a -name 'goapp{env=test,__session_id__=5f1e,otel.scope.name=com.grafana.pyroscope/go}' \
	-profile "$work/cpu.pprof" -from $((now - 3000000000)) -until "$now" -units samples -aggregation sum)
check_eq "gosdk cpu upload" "200 " "$out"
check_eq "gosdk cpu: profile types named as Pyroscope names them" \
	"process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta process_cpu:samples:count:cpu:nanoseconds:delta" \
	"$(q "SELECT string_agg(profile_type, ' ' ORDER BY profile_type) FROM parca.series WHERE labels->>'service_name' = 'goapp'")"
check_eq "gosdk cpu: labels (tags, service_name, pyroscope_spy; no __session_id__; otel.scope.name as otel_scope_name)" \
	'{"env": "test", "service_name": "goapp", "pyroscope_spy": "gospy", "otel_scope_name": "com.grafana.pyroscope/go"}' \
	"$(q "SELECT DISTINCT labels FROM parca.series WHERE labels->>'service_name' = 'goapp'")"
check_eq "gosdk cpu: parca_profile_types() lists them" "2" \
	"$(q "SELECT count(*) FROM parca_profile_types() t WHERE t::text LIKE 'process_cpu:%'")"
same_as_sent "gosdk cpu" "$work/cpu.pprof" "se.labels->>'service_name' = 'goapp'"
# (their order is not asserted: on a loaded machine a 3 s profile has few
# samples, and runtime.asyncPreempt, called in the hot loops, takes many)
check_eq "gosdk cpu: a selector finds the hot functions in parca_top" "main.hotA main.hotB" \
	"$(q "SELECT string_agg(function, ' ' ORDER BY function) FROM parca_top(parca_query('process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta{service_name=\"goapp\"}', now() - interval '1 hour', now() + interval '1 hour')) WHERE function LIKE 'main.hot%' AND cum > 0")"

heapcfg='{"alloc_objects":{"units":"objects"},"alloc_space":{"units":"bytes"},"inuse_space":{"units":"bytes","aggregation":"average"},"inuse_objects":{"units":"objects","aggregation":"average"}}'
out=$("$client" gosdk -url "$A" -token tok-a -name 'goheap{env=test}' -profile "$work/heap.pprof" \
	-config "$heapcfg" -from $((now - 3000000000)) -until "$now")
check_eq "gosdk heap upload with sample_type_config" "200 " "$out"
check_eq "gosdk heap: memory types" \
	"memory:alloc_objects:count:space:bytes memory:alloc_space:bytes:space:bytes memory:inuse_objects:count:space:bytes memory:inuse_space:bytes:space:bytes" \
	"$(q "SELECT string_agg(profile_type, ' ' ORDER BY profile_type) FROM parca.series WHERE labels->>'service_name' = 'goheap'")"
same_as_sent "gosdk heap" "$work/heap.pprof" "se.labels->>'service_name' = 'goheap'"

# the older SDKs: a cumulative heap profile and the one before it
out=$("$client" gosdk -url "$A" -token tok-a -name 'goprev' -profile "$work/heap.pprof" -prev "$work/heap0.pprof" \
	-config '{"alloc_objects":{"units":"objects","cumulative":true},"alloc_space":{"units":"bytes","cumulative":true},"inuse_space":{"units":"bytes","aggregation":"average"},"inuse_objects":{"units":"objects","aggregation":"average"}}' \
	-from $((now - 3000000000)) -until "$now")
check_eq "prev_profile upload" "200 " "$out"
raw_sum() { # FILE INDEX: the signed total of one sample type
	go tool pprof -raw "$1" 2>/dev/null | awk -v i="$2" '/^Samples:/ {s = 1; getline; next} /^Locations/ {s = 0} s && $0 ~ /^ *-?[0-9]+( +-?[0-9]+)*:/ {sub(/:.*/, ""); split($0, v, " "); t += v[i + 1]} END {print t + 0}'
}
for i in 0 1; do
	st=$(go tool pprof -raw "$work/heap.pprof" 2>/dev/null | sed -n '/^Samples:/{n;p;q}' | awk -v i=$((i + 1)) '{print $i}')
	st=${st%%/*}
	check_eq "prev_profile: stored $st = profile - prev_profile" \
		"$(($(raw_sum "$work/heap.pprof" $i) - $(raw_sum "$work/heap0.pprof" $i)))" \
		"$(q "SELECT coalesce(sum(s.value), 0) FROM parca.samples s JOIN parca.series se ON se.id = s.series_id WHERE se.labels->>'service_name' = 'goprev' AND split_part(se.profile_type, ':', 2) = '$st'")"
done
check_eq "prev_profile: inuse_space (not cumulative) stored as sent" "$(raw_sum "$work/heap.pprof" 3)" \
	"$(q "SELECT coalesce(sum(s.value), 0) FROM parca.samples s JOIN parca.series se ON se.id = s.series_id WHERE se.labels->>'service_name' = 'goprev' AND split_part(se.profile_type, ':', 2) = 'inuse_space'")"

########## the Push API
for fmt in proto json; do
	for z in "" -gzip; do
		svc=push-$fmt${z:+-gz}
		out=$("$client" push -url "$A" -token tok-a -format $fmt $z \
			-labels "__name__=process_cpu,service_name=$svc,__delta__=false,region=eu" -profile "$work/cpu.pprof" \
			-labels "__name__=memory,service_name=$svc" -profile "$work/heap.pprof")
		if [ $fmt = json ]; then want='200 {}'; else want='200 '; fi
		check_eq "Push API ($fmt${z:+, gzip}): two series" "$want" "$out"
		same_as_sent "Push API ($fmt${z:+, gzip}) cpu" "$work/cpu.pprof" \
			"se.labels->>'service_name' = '$svc' AND se.profile_type LIKE 'process_cpu:%'"
		same_as_sent "Push API ($fmt${z:+, gzip}) heap" "$work/heap.pprof" \
			"se.labels->>'service_name' = '$svc' AND se.profile_type LIKE 'memory:%'"
	done
done
check_eq "Push API: labels (no __delta__, __name__ is the type's name)" '{"region": "eu", "service_name": "push-proto"}' \
	"$(q "SELECT DISTINCT labels FROM parca.series WHERE labels->>'service_name' = 'push-proto' AND profile_type LIKE 'process_cpu:%'")"

########## @pyroscope/nodejs, the real SDK, profiling a real Node.js program
# (npm ci into test/push/node_modules, which git ignores)
if [ ! -f "$here/node_modules/.package-lock.json" ] || ! cmp -s "$here/package-lock.json" "$here/node_modules/.lock-installed"; then
	(cd "$here" && npm ci --no-audit --no-fund --loglevel=error >"$work/npm.log" 2>&1) &&
		cp "$here/package-lock.json" "$here/node_modules/.lock-installed"
fi
check "npm ci of @pyroscope/nodejs ($(tail -c 300 "$work/npm.log" 2>/dev/null))" test -d "$here/node_modules/@pyroscope/nodejs"
rm -f "$work"/bodies/*
node "$here/nodeapp.js" "$A" tok-a 10 >"$work/node.log" 2>&1
check "the Node.js program ran ($(tail -c 300 "$work/node.log"))" test $? = 0
mkdir -p "$work/node/wall" "$work/node/heap"
n=0
for b in "$work"/bodies/*-ingest.body; do
	[ -f "$b" ] || continue
	# (0.6.4 sends the gzipped pprof as the whole body, format=pprof; the
	# SDK's newer source sends a multipart "profile": either is read)
	python3 "$here/form_part.py" "$b" profile "$work/node/p" || cp "$b" "$work/node/p"
	n=$((n + 1))
	if go tool pprof -raw "$work/node/p" 2>/dev/null | sed -n '/^Samples:/{n;p;q}' | grep -q wall; then
		mv "$work/node/p" "$work/node/wall/$n.pb"
	else
		mv "$work/node/p" "$work/node/heap/$n.pb"
	fi
done
check "the SDK uploaded wall profiles ($(ls "$work/node/wall" | wc -l)) and heap profiles ($(ls "$work/node/heap" | wc -l)), captured on the wire" \
	test "$(ls "$work/node/wall" | wc -l)" -ge 2 -a "$(ls "$work/node/heap" | wc -l)" -ge 2
check "every upload was stored (the log has no failed /ingest)" \
	test "$(grep '"path":"/ingest"' "$work/a.log" | grep -c '"status":200')" -ge "$n"
check_eq "nodejs: labels (tags, otel.* made label names)" \
	'{"env": "test", "service_name": "nodeapp", "pyroscope_spy": "nodespy", "otel_scope_name": "com.grafana.pyroscope/nodejs", "otel_scope_version": "0.6.4", "process_runtime_name": "nodejs", "process_runtime_version": "'"$(node -p process.versions.node)"'"}' \
	"$(q "SELECT DISTINCT labels FROM parca.series WHERE labels->>'service_name' = 'nodeapp' AND profile_type LIKE 'wall:%'")"
check_eq "nodejs: profile types" \
	"memory:inuse_objects:count:inuse_space:bytes memory:inuse_space:bytes:inuse_space:bytes wall:samples:count:wall:nanoseconds:delta wall:wall:nanoseconds:wall:nanoseconds:delta" \
	"$(q "SELECT string_agg(profile_type, ' ' ORDER BY profile_type) FROM parca.series WHERE labels->>'service_name' = 'nodeapp'")"
for kind in wall heap; do
	go tool pprof -proto "$work/node/$kind"/*.pb > "$work/node/$kind.merged.pb.gz" 2>/dev/null
	if [ $kind = wall ]; then where="se.profile_type LIKE 'wall:%'"; else where="se.profile_type LIKE 'memory:%'"; fi
	same_as_sent "nodejs $kind (all uploads)" "$work/node/$kind.merged.pb.gz" "se.labels->>'service_name' = 'nodeapp' AND $where"
done
wall_type=$(q "SELECT profile_type FROM parca.series WHERE labels->>'service_name' = 'nodeapp' AND profile_type LIKE 'wall:wall:%' LIMIT 1")
# (the SDK names a function file:name:line)
check_eq "nodejs: hotMultiply then hotHash lead parca_top of $wall_type" "nodeapp.js:hotMultiply nodeapp.js:hotHash" \
	"$(q "SELECT string_agg(regexp_replace(function, '^.*/([^/]*):[0-9]+$', '\\1'), ' ' ORDER BY flat DESC) FROM (SELECT function, flat FROM parca_top(parca_query('$wall_type{service_name=\"nodeapp\"}', now() - interval '1 hour', now() + interval '1 hour')) ORDER BY flat DESC LIMIT 2) t")"

python3 -c 'import sys; sys.stdout.write("{\"series\":" + "[" * 100000 + "]" * 100000 + "}")' > "$work/deep.json"

########## JFR: a real Java program recorded by Debian's OpenJDK, pushed as
# pyroscope-java's PyroscopeExporter pushes it (multipart "jfr", gzipped,
# format=jfr and its query parameters), stored equal to what the JFR reader
# makes of the same file (parca-convert)
make -s -C "$REPO_ROOT/server" parca-convert >/dev/null 2>&1
if javac -d "$work/classes" "$TEST_ROOT/pushfmt/Workload.java" 2>"$work/javac.err" &&
	java -cp "$work/classes" "-XX:StartFlightRecording=settings=profile,filename=$work/rec.jfr,jdk.ObjectAllocationInNewTLAB#enabled=true" \
		Workload 4 >/dev/null 2>"$work/java.err"; then
	check "the Java program recorded" test -s "$work/rec.jfr"
else
	check "the Java program recorded ($(head -c 300 "$work/javac.err" "$work/java.err"))" false
fi
t0=$(date +%s)
out=$("$client" jfr -url "$A" -token tok-a -name 'javaapp{env=test}' -jfr "$work/rec.jfr" -from $((t0 - 4)) -until "$t0")
check_eq "JFR, multipart and gzipped as the Java SDK sends it: 200" "200 " "$out"
out=$("$client" jfr -url "$A" -token tok-a -name 'javaraw' -jfr "$work/rec.jfr" -raw -gzip=false -from $((t0 - 4)) -until "$t0")
check_eq "JFR as the whole body, not gzipped: 200" "200 " "$out"
mkdir -p "$work/jfr"
"$REPO_ROOT/server/parca-convert" "$work/rec.jfr" --jfr --out "$work/jfr" > "$work/jfr/list" 2>"$work/convert.err"
check "parca-convert reads the same recording ($(head -c 200 "$work/convert.err"))" test -s "$work/jfr/list"
check_eq "JFR: the profiles stored are the reader's, by name" \
	"$(cut -f2 "$work/jfr/list" | LC_ALL=C sort -u | tr '\n' ' ')" \
	"$(q "SELECT string_agg(DISTINCT split_part(profile_type, ':', 1), ' ' ORDER BY split_part(profile_type, ':', 1)) FROM parca.series WHERE labels->>'service_name' = 'javaapp'") "
while IFS=$'\t' read -r file name labels; do
	same_as_sent "JFR $(basename "$file")" "$file" \
		"se.labels->>'service_name' = 'javaapp' AND se.profile_type LIKE '$name:%'"
done < "$work/jfr/list"
check_eq "JFR: labels (the name's, service_name, pyroscope_spy)" '{"env": "test", "service_name": "javaapp", "pyroscope_spy": "javaspy"}' \
	"$(q "SELECT DISTINCT labels FROM parca.series WHERE labels->>'service_name' = 'javaapp' LIMIT 1")"
check_eq "JFR: the raw push stored the same types" \
	"$(q "SELECT string_agg(profile_type, ' ' ORDER BY profile_type) FROM parca.series WHERE labels->>'service_name' = 'javaapp'")" \
	"$(q "SELECT string_agg(profile_type, ' ' ORDER BY profile_type) FROM parca.series WHERE labels->>'service_name' = 'javaraw'")"

########## OpenTelemetry profiles: the Go program's profiles encoded as
# ExportProfilesServiceRequest by Google's protobuf runtime
# (test/pushfmt/make_otlp.py: no component that encodes OTLP profiles is
# packaged for Debian or npm), protobuf and JSON, gzipped or not
PY=/usr/bin/python3		# Debian's, with python3-protobuf
if protoc --python_out="$work" --proto_path="$REPO_ROOT/common/pprof" profile.proto &&
	protoc --python_out="$work" --proto_path="$REPO_ROOT/server" otlp.proto &&
	$PY "$TEST_ROOT/pushfmt/make_otlp.py" "$work/cpu.pprof" "$work/otlp-cpu" "$work" 2>"$work/make_otlp.err"; then
	check "OTLP requests made" test -s "$work/otlp-cpu.pb" -a -s "$work/otlp-cpu.json"
else
	check "OTLP requests made ($(head -c 300 "$work/make_otlp.err"))" false
fi
n=0
for v in "pb application/x-protobuf /v1development/profiles" "json application/json /v1development/profiles" \
	"pb application/x-protobuf /v1/profiles" "json application/json /v1/profiles"; do
	set -- $v
	for z in "" gzip; do
		n=$((n + 1))
		if [ -n "$z" ]; then gzip -c "$work/otlp-cpu.$1" > "$work/otlp.body"; else cp "$work/otlp-cpu.$1" "$work/otlp.body"; fi
		out=$(curl -s -w ' %{http_code}' "${auth[@]}" -H "Content-Type: $2" ${z:+-H "Content-Encoding: gzip"} \
			-H "X-Scope-OrgID: otlp-$n" --data-binary @"$work/otlp.body" "$A$3" | od -An -c | tr -s ' ' | tr -d '\n')
		check "OTLP $3 ($2${z:+, gzip}): 200 (${out:0:60})" grep -q '2 0 0$' <<<"$out"
		same_as_sent "OTLP $3 ($2${z:+, gzip})" "$work/cpu.pprof" "se.labels->>'tenant' = 'otlp-$n'"
	done
done
check_eq "OTLP: labels (resource and scope attributes made label names, tenant)" \
	'{"tenant": "otlp-1", "host_name": "test-host", "scope_attr": "x", "service_name": "otlp-test"}' \
	"$(q "SELECT DISTINCT labels FROM parca.series WHERE labels->>'tenant' = 'otlp-1' LIMIT 1")"
before=$(rows_total)
head -c $(($(stat -c %s "$work/otlp-cpu.pb") / 2)) "$work/otlp-cpu.pb" > "$work/otlp-cut.pb"
out=$(curl -s -o "$work/otlp.resp" -w '%{http_code}' "${auth[@]}" -H "Content-Type: application/x-protobuf" \
	--data-binary @"$work/otlp-cut.pb" "$A/v1development/profiles")
check_eq "OTLP truncated: 400 with a google.rpc.Status (code 3: field 1, varint)" "400 08 03" \
	"$out $(head -c 2 "$work/otlp.resp" | od -An -tx1 | tr -s ' ' | sed 's/^ //')"
out=$(curl -s -w ' %{http_code}' "${auth[@]}" -H "Content-Type: application/json" --data-binary @"$work/deep.json" "$A/v1development/profiles")
check "OTLP JSON nested 100000 deep: 400 with a JSON Status ($(head -c 120 <<<"$out"))" grep -q '^{"code":3,"message":.* 400$' <<<"$out"
check_eq "OTLP: the refused requests stored nothing" "$before" "$(rows_total)"

########## credentials and roles
before=$(rows_total)
out=$("$client" push -url "$A" -labels "__name__=process_cpu,service_name=noauth" -profile "$work/cpu.pprof")
check "no credentials: 401 unauthenticated (Connect's error JSON)" \
	grep -q '^401 {"code":"unauthenticated"' <<<"$out"
out=$("$client" push -url "$A" -token wrong -labels "__name__=process_cpu,service_name=noauth" -profile "$work/cpu.pprof")
check "a wrong token: 401" grep -q '^401 ' <<<"$out"
out=$("$client" gosdk -url "$A" -user alice -password wrong -name noauth -profile "$work/cpu.pprof")
check "a wrong password: 401" grep -q '^401 ' <<<"$out"
out=$("$client" push -url "$A" -token tok-b -labels "__name__=process_cpu,service_name=noauth" -profile "$work/cpu.pprof")
check "a token whose role lacks the rights: 403 permission_denied ($out)" \
	grep -q '^403 {"code":"permission_denied".*push_b' <<<"$out"
out=$("$client" push -url "$A" -token tok-c -labels "__name__=process_cpu,service_name=noauth" -profile "$work/cpu.pprof")
check "a token whose role the server may not become: 403 ($out)" grep -q '^403 ' <<<"$out"
check_eq "refused credentials stored nothing" "$before" "$(rows_total)"
out=$("$client" gosdk -url "$A" -user alice -password s3cret -name 'basic{env=test}' -profile "$work/cpu.pprof")
check_eq "basic auth: 200" "200 " "$out"
check "the request log names the role written as" grep -q '"user":"alice","role":"push_a"' "$work/a.log"
out=$("$client" gosdk -url "$A" -token tok-a -tenant team-x -name 'tenanted{tenant=claimed}' -profile "$work/cpu.pprof")
check_eq "X-Scope-OrgID: stored as the label tenant, over a tag of that name" "team-x" \
	"$(q "SELECT DISTINCT labels->>'tenant' FROM parca.series WHERE labels->>'service_name' = 'tenanted'")"

########## one transaction per request
before=$(rows_total)
gunzip -c "$work/cpu.pprof" > "$work/whole.pprof"
head -c $(($(stat -c %s "$work/whole.pprof") / 2)) "$work/whole.pprof" > "$work/cut.pprof"
out=$("$client" push -url "$A" -token tok-a -labels "__name__=process_cpu,service_name=half" -profile "$work/cpu.pprof" \
	-labels "__name__=process_cpu,service_name=half2" -profile "$work/cut.pprof")
check "a request whose second profile is bad: 400 invalid_argument naming it ($out)" \
	grep -q '^400 {"code":"invalid_argument","message":"profile 2 of 2' <<<"$out"
check_eq "... and nothing of it is stored" "$before" "$(rows_total)"
check_eq "... not even its first series' samples" "0" \
	"$(q "SELECT count(*) FROM parca.samples s JOIN parca.series se ON se.id = s.series_id WHERE se.labels->>'service_name' LIKE 'half%'")"

########## from/until in every unit Pyroscope reads
"$client" notime -in "$work/cpu.pprof" -out "$work/notime.pprof"
for u in "1700000000 s" "1700000000123 ms" "1700000000123456 us" "1700000000123456789 ns"; do
	from=${u% *}
	out=$(curl -s -w '%{http_code}' -H 'Authorization: Bearer tok-a' --data-binary @"$work/notime.pprof" \
		"$A/ingest?name=units-${u#* }&format=pprof&from=$from&until=$((from + 10))")
	check_eq "from in ${u#* } (a profile without its own time): 200" "200" "$out"
done
check_eq "from in s, ms, µs, ns: the profile's time" \
	"units-ms 1700000000123 units-ns 1700000000123 units-s 1700000000000 units-us 1700000000123" \
	"$(q "SELECT string_agg(DISTINCT se.labels->>'service_name' || ' ' || (extract(epoch FROM s.time) * 1000)::bigint, ' ') FROM parca.samples s JOIN parca.series se ON se.id = s.series_id WHERE se.labels->>'service_name' LIKE 'units-%'")"
out=$(curl -s -w ' %{http_code}' -H 'Authorization: Bearer tok-a' --data-binary @"$work/notime.pprof" "$A/ingest?name=x&format=pprof&from=yesterday" | tr '\n' ' ')
check "from that is no time: 400 naming it ($out)" grep -q '^from: .* 400$' <<<"$out"

########## folded stacks: groups (the default), folded, lines
printf 'main;work;spin 30\nmain;work;idle 10\r\nmain;io 5\na;line;without;a;count\n\n' > "$work/groups.txt"
out=$(curl -s -w '%{http_code}' "${auth[@]}" --data-binary @"$work/groups.txt" \
	"$A/ingest?name=folded-app.cpu%7Benv%3Dtest%7D&sampleRate=100&from=1700000100&until=1700000110&spyName=rbspy")
check_eq "groups (the default format), .cpu with sampleRate 100: 200" "200" "$out"
ft=$(q "SELECT profile_type FROM parca.series WHERE labels->>'service_name' = 'folded-app'")
check_eq "groups: counts become CPU time (period 1e9/sampleRate), a delta over from..until" \
	"process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta" "$ft"
check "groups: parca_profile_types() lists it" test "$(q "SELECT count(*) FROM parca_profile_types() t WHERE t::text = '$ft'")" = 1
check_eq "groups: per-function flat and cum (count x 10 ms)" "idle 100000000 100000000|io 50000000 50000000|main 0 450000000|spin 300000000 300000000|work 0 400000000" \
	"$(q "SELECT string_agg(function || ' ' || flat || ' ' || cum, '|' ORDER BY function) FROM parca_top(parca_query('$ft{service_name=\"folded-app\", env=\"test\"}', '2023-11-14', '2023-11-15'))")"
check_eq "groups: the time is from, the duration until - from" "1700000100 10000000000" \
	"$(q "SELECT DISTINCT extract(epoch FROM s.time)::bigint || ' ' || s.duration FROM parca.samples s JOIN parca.series se ON se.id = s.series_id WHERE se.labels->>'service_name' = 'folded-app'")"
printf 'a;b\na;b\na;c\na;b\n' > "$work/lines.txt"
out=$(curl -s -w '%{http_code}' "${auth[@]}" --data-binary @"$work/lines.txt" "$A/ingest?name=lines-app.alloc_objects&format=lines&aggregationType=average")
check_eq "lines: 200" "200" "$out"
lt=$(q "SELECT profile_type FROM parca.series WHERE labels->>'service_name' = 'lines-app'")
check_eq "lines, .alloc_objects, average: a memory gauge, a line a sample" "memory:alloc_objects:count::" "$lt"
check_eq "lines: a selector finds it, each line one sample" "b 3|c 1" \
	"$(q "SELECT string_agg(function || ' ' || flat, '|' ORDER BY function) FROM parca_top(parca_query('$lt{service_name=\"lines-app\"}', now() - interval '1 hour', now() + interval '1 hour')) WHERE flat > 0")"
out=$(curl -s -w '%{http_code}' "${auth[@]}" --data-binary @"$work/groups.txt" "$A/ingest?name=folded2.wall&format=folded&sampleRate=0")
check_eq "format=folded, .wall without a sample rate or a range: counts, no duration" "200 wall:samples:count::" \
	"$out $(q "SELECT profile_type FROM parca.series WHERE labels->>'service_name' = 'folded2'")"
out=$(curl -s -w ' %{http_code}' "${auth[@]}" --data-binary $'a;b 1\na;c x\n' "$A/ingest?name=bad.cpu" | tr '\n' ' ')
check "groups: a count that is not a number: 400 naming the line ($out)" grep -q '^line 2: .* 400$' <<<"$out"
out=$(curl -s -w ' %{http_code}' "${auth[@]}" --data-binary @"$work/groups.txt" "$A/ingest?name=bad.nosuchtype" | tr '\n' ' ')
check "groups: an unknown type suffix: 400 naming it ($out)" grep -q 'unknown profile type "nosuchtype".* 400$' <<<"$out"
out=$(curl -s -w '%{http_code}' "${auth[@]}" --data-binary '' "$A/ingest?name=empty.cpu")
check_eq "groups: an empty body is a valid one and stores nothing" "200 0" \
	"$out $(q "SELECT count(*) FROM parca.series WHERE labels->>'service_name' = 'empty'")"

########## TLS (libmicrohttpd with GnuTLS)
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/tls.key" -out "$work/tls.crt" -days 2 \
	-subj /CN=localhost -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" >/dev/null 2>&1
T=https://127.0.0.1:$((port_base + 2))
start_server t $((port_base + 2)) --auth-file "$work/auth" --tls-cert "$work/tls.crt" --tls-key "$work/tls.key" \
	--request-timeout 3
out=$(curl -s -w '%{http_code}' --cacert "$work/tls.crt" -H 'Authorization: Bearer tok-a' \
	--data-binary @"$work/cpu.pprof" "$T/ingest?name=tls-app&format=pprof")
check_eq "TLS: curl trusting the server's certificate: 200" "200" "$out"
check_eq "TLS: the profile is stored" "2" "$(q "SELECT count(*) FROM parca.series WHERE labels->>'service_name' = 'tls-app'")"
out=$("$client" push -url "$T" -cacert "$work/tls.crt" -token tok-a -labels "__name__=process_cpu,service_name=tls-push" -profile "$work/cpu.pprof")
check_eq "TLS: the Push API from Go's TLS client: 200" "200 " "$out"
check "TLS: a client that does not trust the certificate fails" \
	test "$(curl -s -o /dev/null -w '%{http_code}' "$T/ready")" = 000
check "TLS: plain HTTP on the TLS port gets no HTTP answer" \
	test "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((port_base + 2))/ready")" = 000

########## the database slow, stopped, started again
psql -X -q -c "BEGIN; LOCK TABLE parca.samples IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(6); COMMIT" >/dev/null 2>&1 &
lock_pid=$!
sleep 1
before=$(date +%s)
out=$(curl -s -D "$work/h" -w ' %{http_code}' --cacert "$work/tls.crt" -H 'Authorization: Bearer tok-a' \
	--data-binary @"$work/cpu.pprof" "$T/ingest?name=slow-db&format=pprof")
check "the database slower than --request-timeout: 503 ($out)" grep -q ' 503$' <<<"$out"
check "... with Retry-After" grep -qi '^retry-after: [0-9]' "$work/h"
wait $lock_pid
check_eq "... and nothing of it is stored" "0" "$(q "SELECT count(*) FROM parca.series WHERE labels->>'service_name' = 'slow-db'")"

runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGDATA_DIR/data" -m fast stop >/dev/null
out=$("$client" push -url "$A" -token tok-a -labels "__name__=process_cpu,service_name=db-down" -profile "$work/cpu.pprof")
check "the database stopped: Push API 503 unavailable with Retry-After ($out)" \
	grep -q '^503 retry-after=[0-9]* {"code":"unavailable"' <<<"$out"
out=$("$client" gosdk -url "$A" -token tok-a -name db-down -profile "$work/cpu.pprof")
check "the database stopped: /ingest 503 with Retry-After ($out)" grep -q '^503 retry-after=[0-9]' <<<"$out"
for i in $(seq 1 40); do
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$A/ready")" = 503 ] && break
	sleep 0.5
done
check "the database stopped: /ready 503" test "$(curl -s -o /dev/null -w '%{http_code}' "$A/ready")" = 503
restart_cluster
out=$("$client" push -url "$A" -token tok-a -labels "__name__=process_cpu,service_name=db-back" -profile "$work/cpu.pprof")
check_eq "the database back: the next request is stored (its worker connects anew)" "200 " "$out"
for i in $(seq 1 40); do
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$A/ready")" = 200 ] && break
	sleep 0.5
done
check "the database back: /ready 200" test "$(curl -s -o /dev/null -w '%{http_code}' "$A/ready")" = 200
check_eq "the database back: nothing of the refused requests, the new one stored" "0 2" \
	"$(q "SELECT count(*) FILTER (WHERE labels->>'service_name' = 'db-down') || ' ' || count(*) FILTER (WHERE labels->>'service_name' = 'db-back') FROM parca.series")"

########## hostile input on every endpoint: a clear 4xx, no crash, nothing stored
head -c 300000000 /dev/zero | gzip -1 > "$work/bomb.gz"
head -c 5000000 /dev/urandom > "$work/big"
gunzip -c "$work/cpu.pprof" > "$work/cpu.plain"
head -c $(($(stat -c %s "$work/cpu.pprof") / 2)) "$work/cpu.pprof" > "$work/cut.gz"
python3 -c 'import sys; sys.stdout.write("{\"series\":[" + "1," * 1500000 + "1]}")' > "$work/wide.json"
printf '{"series":[{"labels":[{"name":"__name__","value":"process_cpu"},{"name":"x","value":"\xff"}],"samples":[]}]}' > "$work/badutf8.json"
before=$(rows_total)
# hostile NAME EXPECTED-STATUS EXPECTED-TEXT CURL-ARGS...: the answer's status and a piece of
# its text; hostile_any: the text an extended regular expression of alternatives
hostile_grep() {
	local mode=$1 name=$2 status=$3 text=$4 out
	shift 4
	out=$(curl -s -m 60 -w '\n%{http_code}' "${auth[@]}" "$@" 2>/dev/null)
	check "hostile: $name: $status, \"$text\" ($(head -c 160 <<<"$out" | tr '\n' ' '))" \
		test "$(tail -n 1 <<<"$out")" = "$status" -a "$(grep -c "$mode" -- "$text" <<<"$out")" -ge 1
}
hostile() { hostile_grep -F "$@"; }
hostile_any() { hostile_grep -E "$@"; }
hostile "/ingest truncated gzip pprof" 400 "truncated or damaged gzip" --data-binary @"$work/cut.gz" "$A/ingest?name=h&format=pprof"
# (the profile is a real program's, so where half its bytes end varies: at a
# field's boundary the rest decodes and the references into what is cut
# off are refused instead; both are the decoder naming the damage)
hostile_any "/ingest truncated plain pprof" 400 "not a pprof protocol buffer|refers to|has [0-9]+ entries" --data-binary @<(head -c $(($(stat -c %s "$work/cpu.plain") / 2 + 1)) "$work/cpu.plain") "$A/ingest?name=h&format=pprof"
hostile "/ingest random bytes as pprof" 400 "not a pprof" --data-binary @<(head -c 100000 "$work/big") "$A/ingest?name=h&format=pprof"
hostile "/ingest larger than --max-body-size (Content-Length)" 413 "larger than the limit" --data-binary @"$work/big" "$A/ingest?name=h"
hostile "/ingest gzip bomb" 413 "once decompressed" --data-binary @"$work/bomb.gz" "$A/ingest?name=h&format=pprof"
hostile "/ingest gzip bomb in the multipart profile" 413 "once decompressed" -F "profile=@$work/bomb.gz" "$A/ingest?name=h"
hostile "/ingest gzip bomb as prev_profile" 413 "once decompressed" -F "profile=@$work/cpu.pprof" -F "prev_profile=@$work/bomb.gz" "$A/ingest?name=h"
hostile "/ingest multipart without a boundary" 400 "boundary" -H 'Content-Type: multipart/form-data' --data-binary @"$work/cpu.pprof" "$A/ingest?name=h"
hostile "/ingest multipart without a profile part" 400 'no "profile" part' -F "other=@$work/cpu.pprof" "$A/ingest?name=h"
hostile "/ingest multipart cut short" 400 "truncated or malformed" -H 'Content-Type: multipart/form-data; boundary=xyz' --data-binary $'--xyz\r\nContent-Disposition: form-data; name="profile"\r\n\r\nabc' "$A/ingest?name=h"
hostile "/ingest sample_type_config nested deep" 400 "sample_type_config" -F "profile=@$work/cpu.pprof" -F "sample_type_config=@$work/deep.json" "$A/ingest?name=h"
hostile "/ingest a tag value that is not UTF-8" 400 "not valid UTF-8" --data-binary @"$work/cpu.pprof" "$A/ingest?name=h%7Bk%3D%FF%7D&format=pprof"
hostile "/ingest a tag name with a quote" 400 "tag name" --data-binary @"$work/cpu.pprof" "$A/ingest?name=h%7Bk%22%3Dv%7D&format=pprof"
hostile "/ingest unclosed tags" 400 "closing" --data-binary @"$work/cpu.pprof" "$A/ingest?name=h%7Bk%3Dv&format=pprof"
hostile "/ingest a tag value longer than 1 kB" 400 "too long" --data-binary @"$work/cpu.pprof" "$A/ingest?name=h%7Bk%3D$(head -c 2000 /dev/zero | tr '\0' v)%7D&format=pprof"
hostile "/ingest an unknown format" 400 "not supported" --data-binary @"$work/cpu.pprof" "$A/ingest?name=h&format=trie"
hostile "/ingest an unknown Content-Encoding" 415 "Content-Encoding" -H 'Content-Encoding: br' --data-binary @"$work/cpu.pprof" "$A/ingest?name=h&format=pprof"
hostile "/ingest without a name" 400 "name parameter is missing" --data-binary @"$work/cpu.pprof" "$A/ingest?format=pprof"
hostile "/ingest by GET" 405 "takes POST" "$A/ingest?name=h"
hostile "Push: random bytes" 400 "not a PushRequest" -H 'Content-Type: application/proto' --data-binary @<(head -c 100000 "$work/big") "$A/push.v1.PusherService/Push"
hostile "Push: a wrong Content-Type" 415 "Content-Type" -H 'Content-Type: text/plain' --data-binary @"$work/cpu.pprof" "$A/push.v1.PusherService/Push"
hostile "Push: a gzip bomb as Content-Encoding" 400 "once decompressed" -H 'Content-Type: application/proto' -H 'Content-Encoding: gzip' --data-binary @"$work/bomb.gz" "$A/push.v1.PusherService/Push"
hostile "Push: JSON nested 100000 deep" 400 "invalid_argument" -H 'Content-Type: application/json' --data-binary @"$work/deep.json" "$A/push.v1.PusherService/Push"
hostile "Push: JSON of 1.5 million values" 400 "more than 65536 values" -H 'Content-Type: application/json' --data-binary @"$work/wide.json" "$A/push.v1.PusherService/Push"
hostile "Push: JSON that is not UTF-8" 400 "not valid UTF-8" -H 'Content-Type: application/json' --data-binary @"$work/badutf8.json" "$A/push.v1.PusherService/Push"
hostile "Push: truncated JSON" 400 "invalid_argument" -H 'Content-Type: application/json' --data-binary '{"series":[{"labels":[' "$A/push.v1.PusherService/Push"
hostile "Push: rawProfile not base64" 400 "not base64" -H 'Content-Type: application/json' --data-binary '{"series":[{"labels":[{"name":"__name__","value":"p"}],"samples":[{"rawProfile":"@@@"}]}]}' "$A/push.v1.PusherService/Push"
hostile "Push: a series without __name__" 400 "no __name__" -H 'Content-Type: application/json' --data-binary '{"series":[{"labels":[],"samples":[{"rawProfile":"AAAA"}]}]}' "$A/push.v1.PusherService/Push"
hostile "OTLP: a wrong Content-Type" 415 "Content-Type" -H 'Content-Type: text/plain' --data-binary @"$work/cpu.pprof" "$A/v1development/profiles"
hostile "OTLP: a gzip bomb as Content-Encoding" 413 "" -H 'Content-Type: application/x-protobuf' -H 'Content-Encoding: gzip' --data-binary @"$work/bomb.gz" "$A/v1development/profiles"
hostile "a path that is none" 404 "no such endpoint" "$A/v2/profiles"
# a parameter longer than the server reads (8 kB), even one it ignores, or
# one too many: refused whole, never stored as if cut short (issue 29)
long_value=$(head -c 9000 /dev/zero | tr '\0' v)
hostile_any "/ingest a parameter longer than 8 kB" 414 'parameter .{1,2}spyName.{1,2} is longer than the server reads' \
	--data-binary @"$work/cpu.pprof" "$A/ingest?name=h&format=pprof&spyName=$long_value"
hostile_any "/ingest a name longer than 8 kB" 414 'parameter .{1,2}name.{1,2} is longer' \
	--data-binary @"$work/cpu.pprof" "$A/ingest?name=h$long_value&format=pprof"
hostile "/ingest 40 parameters" 414 "more than 32 parameters" \
	--data-binary @"$work/cpu.pprof" "$A/ingest?name=h&format=pprof$(for i in $(seq 1 38); do printf '&p%d=1' "$i"; done)"
hostile "Push: a parameter longer than 8 kB" 400 "longer than the server reads" -H 'Content-Type: application/proto' \
	--data-binary @"$work/cpu.pprof" "$A/push.v1.PusherService/Push?x=$long_value"
out=$("$client" push -url "$A" -token tok-a -labels "__name__=process_cpu,service_name=$(printf 'x\xff')" -profile "$work/cpu.pprof")
check "hostile: Push proto with a label value that is not UTF-8: 400 ($out)" grep -q '^400 .*not valid UTF-8' <<<"$out"
out=$(curl -s -m 60 -w '%{http_code}' "${auth[@]}" -H 'Transfer-Encoding: chunked' --data-binary @"$work/big" "$A/ingest?name=h&format=pprof" 2>/dev/null)
# (libmicrohttpd cannot answer in the middle of a body: the connection is
# closed, after curl's "100 Continue")
check "hostile: a chunked body past --max-body-size: the connection closed ($out)" \
	grep -qE '^(000|100)?$' <<<"$out"
check_eq "hostile: nothing stored" "$before" "$(rows_total)"
check "hostile: the server still answers" test "$(curl -s -o /dev/null -w '%{http_code}' "$A/ready")" = 200
# Memory: what the limits allow at most: --max-memory 32MB of bodies held,
# and for each of the 2 workers a decompressed body, a plain copy of a
# profile and what decoding one may take, each at most --max-profile-size
# 8MB, besides some 16 MB of the program's own: 96 MB.  A bomb inflated
# unbounded takes 300 MB; the 3 MB JSON of 1.5 million values, parsed by
# json-c unchecked, 116 MB on its own
hwm=$(awk '/VmHWM/ {print $2}' /proc/$a_pid/status)
check "hostile: the server's peak memory stayed within its limits (VmHWM ${hwm} kB <= 96 MB)" test "$hwm" -le 98304

########## slow clients (slowloris) do not keep a good client out
"$client" slowloris -addr "127.0.0.1:$((port_base + 1))" -source 127.0.0.2 -conns 150 -interval 1s -for 30s \
	>"$work/slowloris.out" 2>&1 &
slow_pid=$!
sleep 3
good=0
for i in 1 2 3 4 5; do
	out=$("$client" gosdk -url "$A" -token tok-a -name 'good-client' -profile "$work/cpu.pprof")
	[ "$out" = "200 " ] && good=$((good + 1))
done
check_eq "slowloris (150 connections from 127.0.0.2, a byte a second): a good client is served" "5" "$good"
check "slowloris: its connections are open while the good client is served" kill -0 $slow_pid
kill $slow_pid 2>/dev/null
wait $slow_pid 2>/dev/null

########## /metrics
curl -s "$A/metrics" > "$work/metrics"
check "metrics: profiles stored by /ingest" grep -qE '^parca_server_profiles_total\{endpoint="ingest"\} [1-9]' "$work/metrics"
check "metrics: rows" grep -qE '^parca_server_rows_total\{endpoint="push"\} [1-9]' "$work/metrics"
check "metrics: errors by reason" grep -qE '^parca_server_errors_total\{endpoint="ingest",reason="profile_too_large"\} [1-9]' "$work/metrics"
check "metrics: requests by status" grep -qE '^parca_server_requests_total\{endpoint="push",code="401"\} [1-9]' "$work/metrics"
check "metrics: the latency histogram" grep -qE '^parca_server_request_duration_seconds_bucket\{endpoint="ingest",le="\+Inf"\} [1-9]' "$work/metrics"
check "metrics: the database is up" grep -qE '^parca_server_database_up 1$' "$work/metrics"
check "logs: one JSON object a line" python3 -c 'import json, sys; [json.loads(l) for l in open(sys.argv[1])]' "$work/a.log"

########## a config file, and the graceful stop (SIGTERM drains)
cat > "$work/server.conf" <<CONF
# parca-server's settings: the flags' names
listen = 127.0.0.1:$((port_base + 3))
dsn = "$dsn"
auth-file = $work/auth
workers = 1
drain-timeout = 30
CONF
"$server_bin" --config "$work/server.conf" >"$work/g.log" 2>&1 &
g_pid=$!
pids+=($g_pid)
for i in $(seq 1 150); do curl -sf -o /dev/null "http://127.0.0.1:$((port_base + 3))/ready" && break; sleep 0.2; done
check "config file: the server listens where it says" test "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((port_base + 3))/ready")" = 200
large=$SHARED_TESTDATA/pprof/google-pprof/large.cpu
curl -s -o "$work/slow.out" -w '%{http_code}' --limit-rate 200k "${auth[@]}" --data-binary @"$large" \
	"http://127.0.0.1:$((port_base + 3))/ingest?name=drained&format=pprof" > "$work/slow.status" &
curl_pid=$!
sleep 1
kill -TERM $g_pid
wait $curl_pid
check_eq "SIGTERM during a slow upload: the upload finishes and is answered" "200" "$(cat "$work/slow.status")"
wait $g_pid
check_eq "SIGTERM: the server exits 0 once drained" "0" "$?"
check "SIGTERM: its profile is stored" test "$(q "SELECT count(*) FROM parca.series WHERE labels->>'service_name' = 'drained'")" -ge 1
check "SIGTERM: the log says so" grep -q '"msg":"stopped"' "$work/g.log"

finish
