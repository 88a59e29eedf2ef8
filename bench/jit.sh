#!/usr/bin/env bash
# parca-agent on JIT-compiled code (docs/agent.md, "JIT-compiled code"):
# 10 Node.js processes and 2 JVMs burning CPU (test/jit/chain.js,
# test/jit/Chain.java), the agent profiling the machine for
# PARCA_JIT_BENCH_SECONDS (60) in each of two setups, side by side with
# perf record -e cpu-clock -F 19 -a -g in the same run:
#   maps      node --perf-basic-prof --interpreted-frames-native-stack,
#             JVMs with -XX:+PreserveFramePointer asked for their maps
#             through their attach mechanism;
#   no maps   node without a flag ([node JIT]), JVMs with the agent's
#             --no-java-perfmap (their stacks end at the first JIT frame).
# Reports each run's CPU time as a share of one core and its peak
# resident memory, the samples and locations it wrote, what its JIT maps
# held.  Needs root.  Targets: <= 0.5 % of one core, <= 32 MB.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$repo/test/lib.sh"

seconds=${PARCA_JIT_BENCH_SECONDS:-60}
agent=$repo/agent/parca-agent
[ -x "$agent" ] || { echo "bench/jit.sh: build the agent first (make agent)" >&2; exit 1; }
for c in perf node java javac; do
	command -v $c >/dev/null || { echo "bench/jit.sh: $c is missing (scripts/deps.sh)" >&2; exit 1; }
done

start_cluster "${PARCA_JIT_BENCH_PORT:-54446}"
tmp=$(mktemp -d)
chmod 755 "$tmp"
# (V8 writes its logs, isolate-*-v8.log, in its working directory)
cd "$tmp"
targets=()
stop_targets() {
	kill "${targets[@]}" 2>/dev/null
	wait "${targets[@]}" 2>/dev/null
	for p in "${targets[@]}"; do rm -f "/tmp/perf-$p.map"; done
	targets=()
}
cleanup() {
	stop_targets
	rm -rf "$tmp"
	stop_cluster
}
trap cleanup EXIT
cp "$repo/test/jit/chain.js" "$tmp/"
javac -d "$tmp" "$repo/test/jit/Chain.java"
q "CREATE ROLE agent_bench LOGIN IN ROLE parca_agent" >/dev/null

# start_targets maps|nomaps: the 10 Node.js processes and 2 JVMs.
start_targets() {
	local node_flags=(--no-turbo-inlining) java_flags=()
	if [ "$1" = maps ]; then
		node_flags+=(--perf-basic-prof --interpreted-frames-native-stack)
		java_flags=(-XX:+PreserveFramePointer)
	fi
	for i in $(seq 10); do
		node "${node_flags[@]}" "$tmp/chain.js" 100000 >/dev/null &
		targets+=($!)
	done
	for i in 1 2; do
		java "${java_flags[@]}" "-XX:CompileCommand=dontinline,Chain::*" -XX:CompileCommand=quiet \
			-cp "$tmp" Chain 100000 >/dev/null &
		targets+=($!)
	done
	sleep 2
}

# report NAME RUSAGE-FILE: CPU share of one core and peak RSS.
report() {
	read -r user sys rss status <"$2"
	awk -v n="$1" -v u="$user" -v s="$sys" -v r="$rss" -v t="$seconds" 'BEGIN {
		printf "%-36s CPU %6.2f s = %5.2f %% of one core; peak RSS %6.1f MB\n",
			n, u + s, 100 * (u + s) / t, r / 1024 }'
}

# run NAME maps|nomaps [AGENT OPTION]...: the targets, the agent, then perf.
run() {
	local name=$1 setup=$2
	shift 2
	q "TRUNCATE parca.samples" >/dev/null
	start_targets "$setup"
	local wrapper agent_pid t10 tend
	python3 "$here/rusage.py" "$tmp/agent.rusage" "$agent" "$@" \
		--dsn "host=127.0.0.1 port=$PGPORT user=agent_bench dbname=postgres" \
		--duration "$seconds" 2>"$tmp/agent.log" &
	wrapper=$!
	# The agent, once the wrapper has started it: seconds on a loaded
	# machine, and pyenv's python3 starts helpers of its own first (read
	# at a fixed time, the steady state below was 0 on a loaded machine).
	agent_pid=
	for _ in $(seq 300); do
		for c in $(cat "/proc/$wrapper/task/$wrapper/children" 2>/dev/null); do
			[ "$(cat "/proc/$c/comm" 2>/dev/null)" = parca-agent ] && agent_pid=$c
		done
		[ -n "$agent_pid" ] && break
		sleep 0.1
	done
	# The steady state, without start-up (BTF, kallsyms, the first
	# symbolization of every program, the JVMs' first maps): CPU ticks
	# from 10 s after it started to 5 s before the end.
	sleep 10
	t10=$(awk '{ print $14 + $15 }' "/proc/$agent_pid/stat")
	sleep $((seconds - 15))
	tend=$(awk '{ print $14 + $15 }' "/proc/$agent_pid/stat")
	wait $wrapper
	report "parca-agent, $name" "$tmp/agent.rusage"
	awk -v a="$t10" -v b="$tend" -v t=$((seconds - 15)) -v hz="$(getconf CLK_TCK)" 'BEGIN {
		printf "  steady state (10 s to the end): %.2f s in %d s = %.2f %% of one core\n",
			(b - a) / hz, t, 100 * (b - a) / hz / t }'
	q "SELECT '  wrote ' || coalesce(sum(value), 0) || ' samples as ' || count(*) || ' rows'
	   FROM parca.samples"
	q "SELECT '  the targets'' stacks: ' || count(DISTINCT u.id) || ' distinct locations'
	   FROM parca.samples sm JOIN parca.series se ON se.id = sm.series_id
	   CROSS JOIN LATERAL unnest(parca_stack_location_ids(sm.stack)) AS u(id)
	   WHERE se.labels->>'comm' IN ('node', 'java')"
	grep -o "done:.*" "$tmp/agent.log" | sed 's/^/  /'
	python3 "$here/rusage.py" "$tmp/perf.rusage" \
		perf record -e cpu-clock -F 19 -a -g -o "$tmp/perf.data" -- sleep "$seconds" 2>"$tmp/perf.log"
	report "perf record -e cpu-clock -F 19 -a -g, $name" "$tmp/perf.rusage"
	stop_targets
}

echo "10 Node.js processes and 2 JVMs on 2 cores, 19 Hz per CPU, $seconds s per run"
run "maps" maps
run "no maps" nomaps --no-java-perfmap
