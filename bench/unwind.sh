#!/usr/bin/env bash
# parca-agent's overhead with CFI unwinding (the default: a copy of the user
# stack with every sample, unwound in the agent) next to
# --frame-pointers-only, at 19 Hz per CPU, while both cores run code built
# without frame pointers (libc's qsort, called from -O2 -fomit-frame-pointer
# code), for 60 s each.  Reports the agent's CPU time as a share of one core
# (whole run, and steady state from 10 s on), its peak resident memory, the
# unwind outcomes, and the BPF program's own time per sample (kernel BPF
# statistics; the kernel charges it to the sampled processes, not to the
# agent).  Needs root.  Targets: <= 1 % of one core, <= 64 MB.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$repo/test/lib.sh"

seconds=${PARCA_UNWIND_BENCH_SECONDS:-60}
agent=$repo/agent/parca-agent
[ -x "$agent" ] || { echo "bench/unwind.sh: build the agent first (make agent)" >&2; exit 1; }

start_cluster "${PARCA_UNWIND_BENCH_PORT:-54455}"
tmp=$(mktemp -d)
busy_pids=()
stats_before=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
	for p in "${busy_pids[@]}"; do kill "$p" 2>/dev/null; done
	sysctl -qw kernel.bpf_stats_enabled="$stats_before"
	rm -rf "$tmp"
	stop_cluster
}
trap cleanup EXIT
gcc -O2 -g -fomit-frame-pointer -o "$tmp/nofp" "$repo/test/unwind/nofp.c" -lz -lpthread
q "CREATE ROLE agent_bench LOGIN IN ROLE parca_agent" >/dev/null
sysctl -qw kernel.bpf_stats_enabled=1

# Two no-frame-pointer busy loops, one per core, for both runs.
for i in 1 2; do
	"$tmp/nofp" qsort $((3 * seconds)) >/dev/null &
	busy_pids+=($!)
done
sleep 1

# run NAME [AGENT OPTION]...: one 60 s run, and its line of figures.
run() {
	local name=$1; shift
	q "TRUNCATE parca.samples" >/dev/null
	python3 "$here/rusage.py" "$tmp/$name.rusage" "$agent" "$@" \
		--dsn "host=127.0.0.1 port=$PGPORT user=agent_bench dbname=postgres" \
		--duration "$seconds" 2>"$tmp/$name.log" &
	local wrapper=$!
	sleep 10
	local pid
	pid=$(cat "/proc/$wrapper/task/$wrapper/children" | awk '{ print $1 }')
	local t10
	t10=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
	sleep $((seconds - 11))
	local tend
	tend=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
	local bpf
	bpf=$(bpf_ns "$pid")
	wait $wrapper
	read -r user sys rss status <"$tmp/$name.rusage"
	awk -v n="$name" -v u="$user" -v s="$sys" -v r="$rss" -v t="$seconds" \
		-v a="$t10" -v b="$tend" -v st=$((seconds - 11)) -v hz="$(getconf CLK_TCK)" \
		-v bpf="$bpf" 'BEGIN {
		split(bpf, x, " ");
		printf "%-22s CPU %5.2f s = %5.2f %% of one core (steady state %5.2f %%); peak RSS %5.1f MB; BPF %.1f us per sample\n",
			n, u + s, 100 * (u + s) / t, 100 * (b - a) / hz / st, r / 1024,
			(x[2] > 0 ? x[1] / x[2] / 1000 : 0) }'
	echo "    $(grep -o "done:.*samples ([^)]*)" "$tmp/$name.log")"
}

echo "both cores busy in no-frame-pointer code (qsort), 19 Hz per CPU, $seconds s per run"
run "CFI unwinding"
run "frame pointers only" --frame-pointers-only
