#!/usr/bin/env bash
# parca-agent's overhead, side by side with perf record doing the same
# capture: 19 Hz per CPU, call stacks, every process, for 60 s while two
# busy loops keep both cores busy (PARCA_AGENT_BENCH_LOAD, below).
# Reports each one's CPU time as a share of one core and its peak
# resident memory, and the agent's samples written per second.  Needs
# root.  Targets: <= 0.5 % of one core, <= 32 MB.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$repo/test/lib.sh"

seconds=${PARCA_AGENT_BENCH_SECONDS:-60}
load=${PARCA_AGENT_BENCH_LOAD:-spin}
agent=$repo/agent/parca-agent
[ -x "$agent" ] || { echo "bench/agent.sh: build the agent first (make)" >&2; exit 1; }
command -v perf >/dev/null || { echo "bench/agent.sh: perf is missing (scripts/deps.sh)" >&2; exit 1; }

start_cluster "${PARCA_AGENT_BENCH_PORT:-54444}"
tmp=$(mktemp -d)
busy_pids=()
cleanup() {
	rm -f "$tmp/busy"			# the compile loops end after their compile
	for p in "${busy_pids[@]}"; do [ "$load" = compile ] || kill "$p" 2>/dev/null; done
	wait "${busy_pids[@]}" 2>/dev/null
	rm -rf "$tmp"
	stop_cluster
}
trap cleanup EXIT
gcc -O0 -g -fno-omit-frame-pointer -o "$tmp/workload" "$repo/test/agent/workload.c"
q "CREATE ROLE agent_bench LOGIN IN ROLE parca_agent" >/dev/null

# Two busy loops, one per core, for both runs: spinning in one process
# each, or (PARCA_AGENT_BENCH_LOAD=compile) compiling a small C file again
# and again, which starts a dozen short-lived programs a second.
touch "$tmp/busy"
for i in 1 2; do
	case $load in
	spin) "$tmp/workload" spin $((3 * seconds)) >/dev/null & ;;
	compile)
		(end=$((SECONDS + 3 * seconds))
		 while [ -e "$tmp/busy" ] && [ $SECONDS -lt $end ]; do
			gcc -O2 -g -c -o "$tmp/compiled$i.o" "$repo/test/agent/workload.c"
		 done) &
		;;
	*) echo "bench/agent.sh: PARCA_AGENT_BENCH_LOAD is spin or compile" >&2; exit 2 ;;
	esac
	busy_pids+=($!)
done
sleep 1

# report NAME RUSAGE-FILE: CPU share of one core and peak RSS.
report() {
	read -r user sys rss status <"$2"
	awk -v n="$1" -v u="$user" -v s="$sys" -v r="$rss" -v t="$seconds" 'BEGIN {
		printf "%-34s CPU %6.2f s (user %.2f, sys %.2f) = %5.2f %% of one core; peak RSS %6.1f MB\n",
			n, u + s, u, s, 100 * (u + s) / t, r / 1024 }'
}

python3 "$here/rusage.py" "$tmp/agent.rusage" "$agent" \
	--dsn "host=127.0.0.1 port=$PGPORT user=agent_bench dbname=postgres" \
	--duration "$seconds" 2>"$tmp/agent.log" &
wrapper=$!
# The steady state, without start-up (BTF, kallsyms, the first symbolization
# of every running program): CPU ticks from 10 s to 1 s before the end.
sleep 10
agent_pid=$(pgrep -P $wrapper)
ticks_at() { awk '{ print $14 + $15 }' "/proc/$agent_pid/stat"; }
t10=$(ticks_at)
sleep $((seconds - 11))
tend=$(ticks_at)
wait $wrapper
python3 "$here/rusage.py" "$tmp/perf.rusage" \
	perf record -F 19 -a -g -o "$tmp/perf.data" -- sleep "$seconds" 2>"$tmp/perf.log"
python3 "$here/rusage.py" "$tmp/report.rusage" \
	perf report -i "$tmp/perf.data" --stdio >/dev/null 2>&1

echo "both cores busy ($load), 19 Hz per CPU, $seconds s"
report "parca-agent (sample+symbolize+write)" "$tmp/agent.rusage"
awk -v a="$t10" -v b="$tend" -v t=$((seconds - 11)) -v hz="$(getconf CLK_TCK)" 'BEGIN {
	printf "%-34s CPU %6.2f s in %d s       = %5.2f %% of one core\n",
		"parca-agent, from 10 s to the end", (b - a) / hz, t, 100 * (b - a) / hz / t }'
report "perf record -F 19 -a -g" "$tmp/perf.rusage"
report "perf report (symbolize afterwards)" "$tmp/report.rusage"
read -r values rows <<<"$(q "SELECT coalesce(sum(value), 0), count(*) FROM parca.samples" | tr '|' ' ')"
awk -v v="$values" -v r="$rows" -v t="$seconds" 'BEGIN {
	printf "parca-agent wrote %d samples (%.1f/s) as %d rows (%.1f/s)\n", v, v / t, r, r / t }'
grep -o "done:.*" "$tmp/agent.log"
perf_samples=$(grep -o "([0-9]* samples)" "$tmp/perf.log" | tr -dc 0-9)
echo "perf record captured ${perf_samples:-?} samples ($(du -k "$tmp/perf.data" | cut -f1) kB of perf.data)"
