#!/usr/bin/env bash
# The converters of pushed formats (server/jfr.c, server/otlp.c,
# server/profile_builder.c) against the other side's own readers:
#  - JFR: a real Java program (Workload.java) recorded by Debian's OpenJDK
#    (settings=profile, TLAB events on, three chunks), converted by
#    parca-convert, compared with what `jfr print --json` shows for the same
#    file (compare_jfr.py), each output opened by `go tool pprof`;
#  - OTLP: the pprof fixtures encoded as OTLP requests by Google's protobuf
#    runtime (make_otlp.py), protobuf and JSON, converted back: `go tool
#    pprof -raw` totals and `-top` per function equal to the original's;
#  - every output stored by parca_ingest_pprof (the server's check);
#  - hostile input: a clear error, no crash (the fuzzers, 60 s each under ASan).
# PARCA_PUSHFMT_FUZZ_SECONDS sets the fuzzing time (0: none).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/parca-pushfmt.XXXXXX)
chmod 755 "$tmp"
PY=/usr/bin/python3		# Debian's, with python3-protobuf
convert=$REPO_ROOT/server/parca-convert
fuzz_seconds=${PARCA_PUSHFMT_FUZZ_SECONDS:-60}

make -s -C "$REPO_ROOT/server" parca-convert >/dev/null || { echo "FAIL - make parca-convert"; exit 1; }
require_fixtures
protoc --python_out="$tmp" --proto_path="$REPO_ROOT/common/pprof" profile.proto &&
	protoc --python_out="$tmp" --proto_path="$REPO_ROOT/server" otlp.proto ||
	{ echo "FAIL - protoc (protobuf-compiler)"; exit 1; }

# results of a python checker: its ok/FAIL lines counted
count_lines() {
	local out=$1
	cat "$out"
	pass_count=$((pass_count + $(grep -c '^ok - ' "$out")))
	fail_count=$((fail_count + $(grep -c '^FAIL - ' "$out")))
}

# exit1_with RC OUTPUT PATTERN: a failure (exit 1) whose message matches PATTERN
exit1_with() {
	[ "$1" = 1 ] && grep -q "$3" <<< "$2"
}

# raw_total PROFILE [SAMPLE_INDEX]: the sum of a sample type's values (go tool pprof -raw)
raw_total() {
	go tool pprof -raw "$1" 2>/dev/null | awk -v col=$(( ${2:-0} + 1 )) '
		/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
		s { gsub(":", ""); if ($col ~ /^-?[0-9]+$/) t += $col }
		END { printf "%.0f\n", t }'
}

# opens PROFILE with go tool pprof
pprof_opens() {
	go tool pprof -raw "$1" >/dev/null 2>&1
}

start_cluster 54495

# ingest_all DIR: every profile of parca-convert's listing in DIR/list stored by parca_ingest_pprof
ingest_all() {
	local file name labels ok=0 bad=0 json
	while IFS=$'\t' read -r file name labels; do
		json=$(echo "$labels" | $PY -c 'import json,sys; l=sys.stdin.read().strip(); print(json.dumps(dict(kv.split("=",1) for kv in l.split(",")) if l else {}))')
		if q "SELECT parca_ingest_pprof(pg_read_binary_file('$file'), '$name', '$json')" >/dev/null 2>"$tmp/ingest.err"; then
			ok=$((ok + 1))
		else
			bad=$((bad + 1))
			echo "# $file: $(head -c 300 "$tmp/ingest.err")"
		fi
	done < "$1/list"
	[ "$bad" = 0 ] && [ "$ok" -gt 0 ]
}

# --- JFR ---
echo "# JFR: Workload.java under OpenJDK's flight recorder"
javac -d "$tmp/classes" "$here/Workload.java" || { echo "FAIL - javac"; exit 1; }
java -cp "$tmp/classes" \
	"-XX:StartFlightRecording=settings=profile,filename=$tmp/rec.jfr,jdk.ObjectAllocationInNewTLAB#enabled=true,jdk.ObjectAllocationOutsideTLAB#enabled=true" \
	Workload 6 >/dev/null 2>"$tmp/java.err"
check "the Java program recorded" test -s "$tmp/rec.jfr"
chunks=$(jfr summary "$tmp/rec.jfr" | awk '/Chunks:/ { print $2 }')
check "the recording has several chunks ($chunks)" test "${chunks:-0}" -ge 2
events=jdk.ExecutionSample,jdk.NativeMethodSample,jdk.ObjectAllocationInNewTLAB,jdk.ObjectAllocationOutsideTLAB,jdk.ObjectAllocationSample,jdk.JavaMonitorEnter,jdk.ThreadPark
jfr print --json --stack-depth 10000 --events "$events" "$tmp/rec.jfr" > "$tmp/rec.json"
mkdir -p "$tmp/jfr"
"$convert" "$tmp/rec.jfr" --jfr --out "$tmp/jfr" --thread-labels > "$tmp/jfr/list"
check "parca-convert reads the recording" test -s "$tmp/jfr/list"
$PY "$here/compare_jfr.py" "$tmp/rec.json" "$tmp/jfr" "$tmp" --threads > "$tmp/cmp.out" 2>&1 || echo "FAIL - compare_jfr.py: $(tail -3 "$tmp/cmp.out")" >> "$tmp/cmp.out"
count_lines "$tmp/cmp.out"
n=0
for f in "$tmp"/jfr/*.pb.gz; do
	pprof_opens "$f" && n=$((n + 1))
done
check_eq "go tool pprof opens every JFR profile" "$(ls "$tmp"/jfr/*.pb.gz | wc -l)" "$n"
check_eq "the profile types named as Pyroscope names JFR's" \
	"block memory memory memory mutex process_cpu wall" "$(cut -f2 "$tmp/jfr/list" | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')"
# the sampling period is the recording's own: settings=profile samples every 10 ms (the default 20 ms)
check_eq "the CPU profile's period is the recording's (profile.jfc: 10 ms)" "Period: 10000000" \
	"$(go tool pprof -raw "$tmp"/jfr/*-process_cpu.pb.gz 2>/dev/null | grep -m1 '^Period:')"
# the hot methods: spinHeavy does twice spinLight's work
top=$(go tool pprof -top "$tmp"/jfr/*-process_cpu.pb.gz 2>/dev/null | awk '$NF ~ /^Workload\.spin/ { print $NF; exit }')
check_eq "the hottest method is Workload.spinHeavy" "Workload.spinHeavy" "$top"
check "a stack deeper than JFR keeps is marked [truncated]" \
	sh -c "go tool pprof -top '$tmp'/jfr/*-process_cpu.pb.gz 2>/dev/null | grep -q '\[truncated\]'"
check "every JFR profile stored by parca_ingest_pprof" ingest_all "$tmp/jfr"
check_eq "the profile types in the database" \
	"block:contentions:count:block:count block:delay:nanoseconds:block:count memory:alloc_in_new_tlab_bytes:bytes:space:bytes memory:alloc_in_new_tlab_objects:count:space:bytes memory:alloc_outside_tlab_bytes:bytes:space:bytes memory:alloc_outside_tlab_objects:count:space:bytes memory:alloc_sample_bytes:bytes:space:bytes memory:alloc_sample_objects:count:space:bytes mutex:contentions:count:mutex:count mutex:delay:nanoseconds:mutex:count process_cpu:cpu:nanoseconds:cpu:nanoseconds wall:native:nanoseconds:wall:nanoseconds" \
	"$(q "SELECT string_agg(DISTINCT regexp_replace(profile_type, ':delta$', ''), ' ' ORDER BY regexp_replace(profile_type, ':delta$', '')) FROM parca.series")"

# a recording written by hand: every string encoding, a truncated stack
$PY "$here/tiny_jfr.py" "$tmp/tiny.jfr"
mkdir -p "$tmp/tiny"
"$convert" "$tmp/tiny.jfr" --jfr --out "$tmp/tiny" --thread-labels > "$tmp/tiny/list"
tiny_samples() {
	go tool pprof -traces "$1" 2>/dev/null | awk '
		/^-+\+-+$/ { if (stack != "") print value, thread, stack; stack = ""; value = ""; thread = ""; next }
		/thread_name:/ { thread = $2; next }
		NF >= 2 && value == "" && $1 ~ /^[0-9.]+m?s$/ { value = $1; stack = $2; next }
		NF == 1 && value != "" { stack = stack ";" $1 }
		END { if (stack != "") print value, thread, stack }' | sort
}
check_eq "a recording written by hand: UTF-8, Latin-1, UTF-16 and pooled strings, a truncated stack" \
	"$(printf '20ms Wörker-𝄞 demo.Hot.spin;[truncated]\n30ms Wörker-𝄞 demo.Hot.spin;demo.Hot.main')" \
	"$(tiny_samples "$tmp"/tiny/1-process_cpu.pb.gz)"

# an event refers to a constant two chunks back (as a JVM's may: its ids
# stay the same for its whole run; seen in a recording whose monitor events,
# blocked over a chunk's rotation, referred to a stack trace written so)
$PY "$here/tiny_jfr.py" "$tmp/tiny3.jfr" --three-chunks
mkdir -p "$tmp/tiny3"
"$convert" "$tmp/tiny3.jfr" --jfr --out "$tmp/tiny3" --thread-labels > "$tmp/tiny3/list"
check_eq "three chunks: the third chunk's events find the first chunk's constants" \
	"$(printf '40ms Wörker-𝄞 demo.Hot.spin;[truncated]\n60ms Wörker-𝄞 demo.Hot.spin;demo.Hot.main')" \
	"$(tiny_samples "$tmp"/tiny3/1-process_cpu.pb.gz)"

# damaged metadata: classes nested in a class, then its field (the parser
# once kept a pointer into its array of classes while the nested ones grew
# it: a use after free that the JFR fuzzer found; the file also seeds the
# fuzzer below, whose build has ASan)
$PY "$here/tiny_jfr.py" "$tmp/nested.jfr" --nested-class
mkdir -p "$tmp/nested"
"$convert" "$tmp/nested.jfr" --jfr --out "$tmp/nested" --thread-labels > "$tmp/nested/list"
check_eq "classes nested in a class: the recording reads as without them" \
	"$(tiny_samples "$tmp"/tiny/1-process_cpu.pb.gz)" \
	"$(tiny_samples "$tmp"/nested/1-process_cpu.pb.gz)"

# hostile recordings: truncated, a checkpoint chain that loops, absurd counts
head -c $(( $(stat -c %s "$tmp/rec.jfr") / 2 )) "$tmp/rec.jfr" > "$tmp/half.jfr"
out=$("$convert" "$tmp/half.jfr" --jfr --out "$tmp/x" 2>&1); rc=$?
check "a truncated recording: exit 1 with a clear error" exit1_with "$rc" "$out" "a truncated recording"
$PY - "$tmp/rec.jfr" "$tmp/loop.jfr" <<'EOF'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
size = struct.unpack(">q", d[8:16])[0]
# the chunk's constant pool offset pointed at the chunk header itself
d[16:24] = struct.pack(">q", 0)
open(sys.argv[2], "wb").write(d[:size])
EOF
out=$("$convert" "$tmp/loop.jfr" --jfr --out "$tmp/x" 2>&1); rc=$?
check "a constant pool offset outside the chunk: exit 1 naming it" exit1_with "$rc" "$out" "outside the chunk"
# a cycle of checkpoints: in a chunk with two or more, the one before the
# last points forward to the last again (else the only one points forward)
$PY - "$tmp/rec.jfr" "$tmp/cycle.jfr" <<'EOF'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())


def varint(pos):
    """JFR's varint: 7 bits a byte, the ninth byte 8 bits; its value, start and end"""
    v, start = 0, pos
    for i in range(8):
        b = d[pos]
        pos += 1
        v |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            return v, start, pos
    return v | d[pos] << 56, start, pos + 1


def delta_at(off):
    pos = off
    for _ in range(4):  # size, type, start time, duration
        _, _, pos = varint(pos)
    return varint(pos)


chunk, target = 0, None
while chunk < len(d):
    size, cp = struct.unpack(">qq", d[chunk + 8:chunk + 24])
    delta, start, end = delta_at(chunk + cp)
    if delta:
        prev = chunk + cp + delta - (1 << 64)
        _, start, end = delta_at(prev)
        target = (start, end, chunk + cp - prev)
        break
    if target is None:
        target = (start, end, 1)
    chunk += size
start, end, fwd = target
n = end - start
assert fwd < 1 << (7 * n)
d[start:end] = bytearray((fwd >> (7 * i)) & 0x7F | (0x80 if i < n - 1 else 0) for i in range(n))
open(sys.argv[2], "wb").write(d)
EOF
out=$("$convert" "$tmp/cycle.jfr" --jfr --out "$tmp/x" 2>&1); rc=$?
check "a cycle in the checkpoint chain: exit 1 naming it" exit1_with "$rc" "$out" "points forward"
out=$("$convert" "$tmp/rec.jfr" --jfr --out "$tmp/x" --max-bytes 100000 2>&1); rc=$?
check "a recording past the memory limit: exit 1 naming the limit" exit1_with "$rc" "$out" "more memory than the limit"

# --- OTLP ---
echo "# OTLP: fixtures encoded as ExportProfilesServiceRequest (protobuf and JSON)"
for fx in parca/profile-with-labels.pb.gz parca/alloc_objects.pb.gz parca/fib.pb.gz google-pprof/sample.cpu parca/labels.pb.gz; do
	src=$SHARED_TESTDATA/pprof/$fx
	base=$tmp/otlp-$(echo "$fx" | tr '/.' '__')
	if ! $PY "$here/make_otlp.py" "$src" "$base" "$tmp" 2>"$tmp/make.err"; then
		check "$fx: encoded as OTLP" false
		continue
	fi
	ntypes=$($PY -c "
import gzip, sys; sys.path.insert(0, '$tmp'); import profile_pb2
d = open('$src', 'rb').read(); d = gzip.decompress(d) if d[:2] == b'\x1f\x8b' else d
p = profile_pb2.Profile(); p.ParseFromString(d); print(len(p.sample_type))")
	for kind in otlp otlp-json; do
		ext=pb; [ "$kind" = otlp-json ] && ext=json
		mkdir -p "$base-$kind"
		if ! "$convert" "$base.$ext" --"$kind" --out "$base-$kind" > "$base-$kind/list" 2>"$tmp/conv.err"; then
			check "$fx ($kind): converted" false
			echo "# $(cat "$tmp/conv.err")"
			continue
		fi
		check_eq "$fx ($kind): one profile per sample type" "$ntypes" "$(wc -l < "$base-$kind/list")"
		i=0
		while IFS=$'\t' read -r file name labels; do
			want_raw=$(raw_total "$src" "$i")
			got_raw=$(raw_total "$file")
			check_eq "$fx ($kind) sample type $i: total (go tool pprof -raw)" "$want_raw" "$got_raw"
			want_top=$(go tool pprof -top -nodecount=1000000 -nodefraction=0 -edgefraction=0 -sample_index=$i "$src" 2>/dev/null | sed -n '/flat%/,$p' | sort | md5sum)
			got_top=$(go tool pprof -top -nodecount=1000000 -nodefraction=0 -edgefraction=0 "$file" 2>/dev/null | sed -n '/flat%/,$p' | sort | md5sum)
			check_eq "$fx ($kind) sample type $i: flat and cum per function (go tool pprof -top)" "$want_top" "$got_top"
			i=$((i + 1))
		done < "$base-$kind/list"
		check "$fx ($kind): labels from the resource and scope" grep -q "service_name=otlp-test,host_name=test-host,scope_attr=x" "$base-$kind/list"
		check "$fx ($kind): stored by parca_ingest_pprof" ingest_all "$base-$kind"
	done
	check "$fx: protobuf and JSON give the same profiles" sh -c "cd '$base-otlp' && for f in *.pb.gz; do cmp -s \"\$f\" '$base-otlp-json'/\"\$f\" || exit 1; done"
done
has_labels() {
	# (grep -c reads to the end: grep -q would stop the pipe early, a failure under pipefail)
	[ "$(go tool pprof -raw "$1" 2>/dev/null | grep -c ':\[')" -gt 0 ]
}
check "sample attributes are pprof labels" has_labels "$(ls "$tmp"/otlp-parca_labels_pb_gz-otlp/1-*.pb.gz)"

# hostile OTLP requests
printf '\x0a\xff\xff\xff\xff\x0f' > "$tmp/bad.pb"
out=$("$convert" "$tmp/bad.pb" --otlp --out "$tmp/x" 2>&1); rc=$?
check "a truncated protobuf request: exit 1 with a clear error" exit1_with "$rc" "$out" "or a truncated one"
$PY - "$tmp/deep.json" <<'EOF'
import sys
open(sys.argv[1], "w").write('{"resourceProfiles":' + "[" * 100000 + "]" * 100000 + "}")
EOF
out=$("$convert" "$tmp/deep.json" --otlp-json --out "$tmp/x" 2>&1); rc=$?
check "deeply nested JSON: exit 1, no crash" test "$rc" = 1
echo '{"resourceProfiles":[{"scopeProfiles":[{"profiles":[{"sampleType":{"typeStrindex":1},"samples":[{"stackIndex":7,"values":["1"]}]}]}]}],"dictionary":{"stringTable":["","cpu"]}}' > "$tmp/idx.json"
out=$("$convert" "$tmp/idx.json" --otlp-json --out "$tmp/x" 2>&1); rc=$?
check "a stack index past the table: exit 1 naming it" exit1_with "$rc" "$out" "refers to stack 7"

# sample and period types no selector could name ("cpu time", "nano:s", "wall{x}") are made nameable
echo '{"resourceProfiles":[{"scopeProfiles":[{"profiles":[{"sampleType":{"typeStrindex":1,"unitStrindex":2},"periodType":{"typeStrindex":3,"unitStrindex":2},"period":"1","samples":[{"stackIndex":1,"values":["5"]}]}]}]}],"dictionary":{"stringTable":["","cpu time","nano:s","wall{x}","f"],"functionTable":[{},{"nameStrindex":4}],"locationTable":[{},{"lines":[{"functionIndex":1}]}],"stackTable":[{},{"locationIndices":[1]}]}}' > "$tmp/odd.json"
mkdir -p "$tmp/odd"
"$convert" "$tmp/odd.json" --otlp-json --out "$tmp/odd" > "$tmp/odd/list"
check "a sample type with white space, ':' and braces: stored" ingest_all "$tmp/odd"
check_eq "... as cpu_time:cpu_time:nano_s:wall_x_:nano_s" "cpu_time:cpu_time:nano_s:wall_x_:nano_s" \
	"$(q "SELECT string_agg(DISTINCT regexp_replace(profile_type, ':delta$', ''), ' ') FROM parca.series WHERE profile_type LIKE 'cpu_time:%'")"

# --- fuzzing (libFuzzer, ASan, UBSan), seeded with the files above ---
if [ "$fuzz_seconds" -gt 0 ]; then
	if make -s -C "$REPO_ROOT/server" fuzz >/dev/null 2>"$tmp/fuzz-build.err"; then
		for f in jfr otlp otlp-json builder; do
			corpus=$tmp/corpus-$f
			mkdir -p "$corpus"
			cp "$here"/corpus/$f/* "$corpus"/ 2>/dev/null
			case $f in
				jfr) cp "$tmp/tiny.jfr" "$tmp/nested.jfr" "$tmp/rec.jfr" "$corpus/" ;;
				otlp) cp "$tmp"/otlp-*.pb "$corpus/" ;;
				otlp-json) cp "$tmp"/otlp-parca_fib*.json "$corpus/" ;;
			esac
			(cd "$tmp" && "$REPO_ROOT/server/fuzz/fuzz-$f" -max_total_time="$fuzz_seconds" -rss_limit_mb=1024 \
				-timeout=10 -max_len=1048576 "$corpus" > "$tmp/fuzz-$f.log" 2>&1)
			rc=$?
			check "fuzz-$f: $fuzz_seconds s, no crash, leak or timeout ($(grep -o 'Done [0-9]* runs' "$tmp/fuzz-$f.log" | head -1))" test "$rc" = 0
			[ "$rc" = 0 ] || tail -30 "$tmp/fuzz-$f.log"
		done
	else
		check "the fuzzers build (clang, libclang-rt-14-dev)" false
		cat "$tmp/fuzz-build.err"
	fi
fi

rm -rf "$tmp"
finish
