#!/usr/bin/env bash
# JFR reading speed: parca-convert (server/jfr.c, the reader parca-server
# uses) against the JDK's own `jfr` tool on the same recording, a real one
# of test/pushfmt/Workload.java (settings=profile, TLAB events on, the
# allocation samples less throttled and the sampling period 1 ms, so that
# the recording is some MB and the JVM's start-up (in every `jfr` run) does
# not hide the reading).  The JDK
# reads the same seven event types: `jfr print --json --events` (every field
# of each event, as text) and `jfr summary` (event headers only: a lower
# bound for any reader).  Best of BENCH_JFR_RUNS runs each; MB/s of the
# recording and events/s of the types read.
#   BENCH_JFR_SECONDS (30): how long the Java program runs
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${BENCH_JFR_SECONDS:-30}
runs=${BENCH_JFR_RUNS:-3}
tmp=$(mktemp -d /tmp/parca-bench-jfr.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

make -s -C "$root/server" parca-convert >/dev/null
javac -d "$tmp/classes" "$root/test/pushfmt/Workload.java"
java -cp "$tmp/classes" \
	"-XX:StartFlightRecording=settings=profile,filename=$tmp/rec.jfr,jdk.ObjectAllocationInNewTLAB#enabled=true,jdk.ObjectAllocationOutsideTLAB#enabled=true,jdk.ObjectAllocationSample#throttle=20000/s,jdk.ExecutionSample#period=1ms,jdk.NativeMethodSample#period=1ms" \
	Workload "$secs" >/dev/null 2>&1
events=jdk.ExecutionSample,jdk.NativeMethodSample,jdk.ObjectAllocationInNewTLAB,jdk.ObjectAllocationOutsideTLAB,jdk.ObjectAllocationSample,jdk.JavaMonitorEnter,jdk.ThreadPark
bytes=$(stat -c %s "$tmp/rec.jfr")
nevents=$(jfr summary "$tmp/rec.jfr" | awk -v want="$events" '
	BEGIN { n = split(want, w, ","); for (i = 1; i <= n; i++) t[w[i]] = 1 }
	($1 in t) { s += $2 } END { print s + 0 }')
chunks=$(jfr summary "$tmp/rec.jfr" | awk '/Chunks:/ { print $2 }')
echo "recording: $bytes bytes, $chunks chunks, $nevents events of the $(echo "$events" | tr ',' '\n' | wc -l) types read"

# best wall seconds of a command over $runs runs
best() {
	local b="" t s e
	for _ in $(seq 1 "$runs"); do
		s=$(date +%s.%N)
		"$@" >/dev/null 2>&1
		e=$(date +%s.%N)
		t=$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f", e - s }')
		if [ -z "$b" ] || awk -v a="$t" -v b="$b" 'BEGIN { exit !(a < b) }'; then b=$t; fi
	done
	echo "$b"
}

report() {
	awk -v name="$1" -v s="$2" -v bytes="$bytes" -v n="$nevents" 'BEGIN {
		if (s <= 0) s = 0.001
		printf "%-44s %7.2f s  %8.1f MB/s  %10.0f events/s\n", name, s, bytes / s / 1e6, n / s }'
}

report "parca-convert --jfr (7 profiles written)" "$(best "$root/server/parca-convert" "$tmp/rec.jfr" --jfr --out "$tmp/out")"
report "parca-convert --jfr --thread-labels" "$(best "$root/server/parca-convert" "$tmp/rec.jfr" --jfr --thread-labels --out "$tmp/out")"
report "jfr print --json --events (same types)" "$(best jfr print --json --events "$events" "$tmp/rec.jfr")"
report "jfr print --events (text, same types)" "$(best jfr print --events "$events" "$tmp/rec.jfr")"
report "jfr summary (event headers only)" "$(best jfr summary "$tmp/rec.jfr")"
