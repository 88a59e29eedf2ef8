#!/usr/bin/env bash
# parca-agent's overhead, side by side with perf record doing the same
# capture: 19 Hz per CPU, call stacks, every process, for 60 s while both
# cores are kept busy (PARCA_AGENT_BENCH_LOAD, below).  The agent runs
# twice: with its default labels, and with the per-process and per-thread
# labels dropped (--label-drop=pid,thread_id, the bounded configuration of
# docs/agent.md).  Reports each run's CPU time as a share of one core and
# its peak resident memory, the agent's samples written per second and the
# series it created (and at that rate, per hour: an upper bound where the
# series stop growing once every program has its own), and the BPF
# program's time per sample (kernel BPF statistics: charged to the sampled
# programs, not to the agent).  PARCA_AGENT_BENCH_BASELINE=PATH adds a run
# of another build of the agent (default labels) in the same conditions,
# e.g. the one before a change.  Needs root.
# Targets: <= 0.5 % of one core, <= 32 MB.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$repo/test/lib.sh"

seconds=${PARCA_AGENT_BENCH_SECONDS:-60}
load=${PARCA_AGENT_BENCH_LOAD:-spin}
agent=$repo/agent/parca-agent
[ -x "$agent" ] || { echo "bench/agent.sh: build the agent first (make agent)" >&2; exit 1; }
command -v perf >/dev/null || { echo "bench/agent.sh: perf is missing (scripts/deps.sh)" >&2; exit 1; }

start_cluster "${PARCA_AGENT_BENCH_PORT:-54444}"
tmp=$(mktemp -d)
busy_pids=()
stats_before=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
	rm -f "$tmp/busy"			# the compile loops end after their compile
	for p in "${busy_pids[@]}"; do [ "$load" = compile ] || kill "$p" 2>/dev/null; done
	wait "${busy_pids[@]}" 2>/dev/null
	sysctl -qw kernel.bpf_stats_enabled="$stats_before"
	rm -rf "$tmp"
	stop_cluster
}
trap cleanup EXIT
gcc -O0 -g -fno-omit-frame-pointer -o "$tmp/workload" "$repo/test/agent/workload.c"
gcc -O2 -o "$tmp/forkexec" "$here/forkexec.c"
q "CREATE ROLE agent_bench LOGIN IN ROLE parca_agent" >/dev/null
sysctl -qw kernel.bpf_stats_enabled=1

# Both cores busy for the three runs (two agent runs and perf's):
#   spin      a program spinning on each core;
#   compile   compiling a small C file again and again on each core: a
#             dozen short-lived programs a second (gcc, cc1, as);
#   forkexec  200 fork+exec a second, each child spinning 8 ms of CPU
#             time: nearly every sample comes from a process the agent has
#             not seen (the rate achieved is printed: a loaded machine
#             starves the parent);
#   python    a Python service on each core (Debian's python3.11 running
#             test/python/chain.py: pure Python and zlib), whose samples
#             the agent unwinds as Python.
touch "$tmp/busy"
busy_seconds=$((4 * seconds))
case $load in
spin | compile | python)
	for i in 1 2; do
		if [ "$load" = spin ]; then
			"$tmp/workload" spin $busy_seconds >/dev/null &
		elif [ "$load" = python ]; then
			/usr/bin/python3.11 "$repo/test/python/chain.py" $busy_seconds >/dev/null &
		else
			(end=$((SECONDS + busy_seconds))
			 while [ -e "$tmp/busy" ] && [ $SECONDS -lt $end ]; do
				gcc -O2 -g -c -o "$tmp/compiled$i.o" "$repo/test/agent/workload.c"
			 done) &
		fi
		busy_pids+=($!)
	done
	;;
forkexec)
	"$tmp/forkexec" 200 $busy_seconds "$tmp/workload" spin 0.008 >"$tmp/forkexec.out" &
	busy_pids+=($!)
	;;
*) echo "bench/agent.sh: PARCA_AGENT_BENCH_LOAD is spin, compile, forkexec or python" >&2; exit 2 ;;
esac
sleep 1

# child_of PID: the pid of PID's child (the agent under rusage.py), from
# the kernel's list of its children: pgrep, which scans /proc, can miss it
# while hundreds of processes a second come and go.
child_of() {
	local c=""
	for try in $(seq 50); do
		read -r c _ <"/proc/$1/task/$1/children" 2>/dev/null && [ -n "$c" ] && break
		sleep 0.1
	done
	echo "$c"
}

# report NAME RUSAGE-FILE: CPU share of one core and peak RSS.
report() {
	read -r user sys rss status <"$2"
	awk -v n="$1" -v u="$user" -v s="$sys" -v r="$rss" -v t="$seconds" 'BEGIN {
		printf "%-40s CPU %6.2f s (user %.2f, sys %.2f) = %5.2f %% of one core; peak RSS %6.1f MB\n",
			n, u + s, u, s, 100 * (u + s) / t, r / 1024 }'
}
series() {
	q "SELECT count(*) FROM parca.series WHERE profile_type LIKE 'parca_agent:%'"
}

# run_agent NAME [OPTION]...: one agent run ($agent_binary, default
# $agent); its CPU, memory, samples and series.
run_agent() {
	local name=$1; shift
	local before after wrapper agent_pid t10 tend values rows bpf
	before=$(series)
	q "TRUNCATE parca.samples" >/dev/null
	python3 "$here/rusage.py" "$tmp/agent.rusage" "${agent_binary:-$agent}" "$@" \
		--dsn "host=127.0.0.1 port=$PGPORT user=agent_bench dbname=postgres" \
		--duration "$seconds" 2>"$tmp/agent.log" &
	wrapper=$!
	# The steady state, without start-up (BTF, kallsyms, the first
	# symbolization of every running program): CPU ticks from 10 s to 5 s
	# before the end (the agent's --duration counts from its own start,
	# which comes later than the wrapper's on a loaded machine).
	sleep 10
	agent_pid=$(child_of $wrapper)
	t10=$(awk '{ print $14 + $15 }' "/proc/$agent_pid/stat")
	sleep $((seconds - 15))
	tend=$(awk '{ print $14 + $15 }' "/proc/$agent_pid/stat")
	bpf=$(bpf_ns "$agent_pid")
	wait $wrapper
	after=$(series)
	report "parca-agent, $name" "$tmp/agent.rusage"
	awk -v a="$t10" -v b="$tend" -v t=$((seconds - 15)) -v hz="$(getconf CLK_TCK)" 'BEGIN {
		printf "%-40s CPU %6.2f s in %d s       = %5.2f %% of one core\n",
			"  from 10 s to the end", (b - a) / hz, t, 100 * (b - a) / hz / t }'
	read -r values rows <<<"$(q "SELECT coalesce(sum(value), 0), count(*) FROM parca.samples" | tr '|' ' ')"
	awk -v v="$values" -v r="$rows" -v t="$seconds" -v s=$((after - before)) 'BEGIN {
		printf "  wrote %d samples (%.1f/s) as %d rows (%.1f/s); created %d series (%.0f an hour at that rate)\n",
			v, v / t, r, r / t, s, s * 3600 / t }'
	awk -v bpf="$bpf" 'BEGIN { split(bpf, x, " ");
		printf "  BPF %.1f us per sample\n", (x[2] > 0 ? x[1] / x[2] / 1000 : 0) }'
	grep -o "done:.*" "$tmp/agent.log" | sed 's/^/  /'
}

echo "both cores busy ($load), 19 Hz per CPU, $seconds s per run"
run_agent "default labels"
run_agent "--label-drop=pid,thread_id" --label-drop=pid,thread_id
if [ -n "${PARCA_AGENT_BENCH_BASELINE:-}" ]; then
	agent_binary=$PARCA_AGENT_BENCH_BASELINE run_agent "baseline, default labels"
fi
python3 "$here/rusage.py" "$tmp/perf.rusage" \
	perf record -e cpu-clock -F 19 -a -g -o "$tmp/perf.data" -- sleep "$seconds" 2>"$tmp/perf.log"
python3 "$here/rusage.py" "$tmp/report.rusage" \
	perf report -i "$tmp/perf.data" --stdio >/dev/null 2>&1
report "perf record -e cpu-clock -F 19 -a -g" "$tmp/perf.rusage"
report "perf report (symbolize afterwards)" "$tmp/report.rusage"
perf_samples=$(grep -o "([0-9]* samples)" "$tmp/perf.log" | tr -dc 0-9)
echo "perf record captured ${perf_samples:-?} samples ($(du -k "$tmp/perf.data" | cut -f1) kB of perf.data)"
if [ "$load" = forkexec ]; then
	kill "${busy_pids[@]}" 2>/dev/null
	wait "${busy_pids[@]}" 2>/dev/null
	busy_pids=()
	echo "the fork+exec loop started $(cat "$tmp/forkexec.out") processes a second"
fi
