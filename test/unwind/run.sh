#!/usr/bin/env bash
# parca-agent on code built without frame pointers (CFI unwinding, see
# docs/agent.md): full chains through our -O2 -fomit-frame-pointer code,
# libc's qsort with a callback (also from a frame-pointer build: a mixed
# stack) and libz's deflate, down to _start; a signal handler's stack
# through the signal frame; a thread's down to its start; samples in PLT
# stubs; a 300 ms program present and symbolized; a 200-deep recursion cut
# at 127 frames and marked truncated; the outcome label; and the share of
# samples whose stacks perf --call-graph dwarf (an independent unwinder)
# agrees with.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

agent=$REPO_ROOT/agent/parca-agent
if [ ! -x "$agent" ]; then
	echo "FAIL - $agent is not built"
	exit 1
fi
start_cluster "${PARCA_UNWIND_TEST_PORT:-54451}"
tmp=$(mktemp -d)
cleanup() {
	rm -rf "$tmp"
	stop_cluster
}
trap cleanup EXIT

cflags="-O2 -g -fomit-frame-pointer"
gcc $cflags -o "$tmp/workload" "$TEST_ROOT/agent/workload.c"
gcc $cflags -o "$tmp/nofp" "$TEST_ROOT/unwind/nofp.c" -lz -lpthread
# the same with frame pointers, for a mixed stack (ours, libc's, ours)
gcc -O2 -g -fno-omit-frame-pointer -o "$tmp/withfp" "$TEST_ROOT/unwind/nofp.c" -lz -lpthread
q "CREATE ROLE agent_test LOGIN IN ROLE parca_agent" >/dev/null
dsn="host=127.0.0.1 port=$PGPORT user=agent_test dbname=postgres"

# Each sample's stack as function names (inlined ones too), leaf first,
# and its user frames as FILE@ADDRESS for the comparison with perf.
q "CREATE VIEW stacks AS
SELECT sm.value, se.labels,
       (SELECT string_agg(coalesce(f.name, '?'), ';' ORDER BY u.pos, fl.lpos)
          FROM unnest(parca_stack_location_ids(sm.stack)) WITH ORDINALITY AS u(id, pos)
          LEFT JOIN parca.locations l ON l.id = u.id
          LEFT JOIN LATERAL unnest(l.function_ids) WITH ORDINALITY AS fl(fid, lpos) ON true
          LEFT JOIN parca.functions f ON f.id = fl.fid) AS names,
       (SELECT string_agg(m.file || '@' || l.address, ';' ORDER BY u.pos)
          FROM unnest(parca_stack_location_ids(sm.stack)) WITH ORDINALITY AS u(id, pos)
          JOIN parca.locations l ON l.id = u.id
          JOIN parca.mappings m ON m.id = l.mapping_id
         WHERE m.file <> '[kernel.kallsyms]') AS user_frames,
       (SELECT count(*) FROM unnest(parca_stack_location_ids(sm.stack)) AS u(id)
          JOIN parca.locations l ON l.id = u.id
          JOIN parca.mappings m ON m.id = l.mapping_id
         WHERE m.file <> '[kernel.kallsyms]') AS nuser
  FROM parca.samples sm JOIN parca.series se ON se.id = sm.series_id" >/dev/null

# samples PID [CONDITION]: the samples of a process (meeting CONDITION)
samples() {
	q "SELECT coalesce(sum(value), 0) FROM stacks WHERE labels->>'pid' = '$1' AND (${2:-true})"
}
# at_least PCT PART TOTAL: PART >= PCT% of TOTAL (and TOTAL > 0)
at_least() {
	awk -v p="$1" -v a="$2" -v t="$3" 'BEGIN { exit !(t > 0 && a >= p / 100 * t) }'
}
# libc's names: from its debug file's DWARF or symbol table (then
# __libc_start_main@@GLIBC_2.34, msort_with_tmp.part.0): regular expressions
root="main;__libc_start_call_main;__libc_start_main[^;]*;_start"

"$agent" --dsn "$dsn" --flush-interval 2 --verbose 2>"$tmp/agent.log" &
agent_pid=$!
sleep 2

# perf samples the same processes at 499 Hz with its own DWARF unwinder.
perfrec() {
	local name=$1; shift
	perf record -q -e cpu-clock -F 499 --call-graph dwarf,16384 -o "$tmp/$name.data" -- "$@" \
		>"$tmp/$name.out" 2>"$tmp/$name.perf.log"
}
perfrec chain "$tmp/workload" spin 4 &
chain_job=$!
perfrec qsort "$tmp/nofp" qsort 4 &
qsort_job=$!
wait $chain_job $qsort_job
perfrec deflate "$tmp/nofp" deflate 4 &
deflate_job=$!
"$tmp/nofp" recurse 3 >/dev/null &
recurse_pid=$!
wait $deflate_job $recurse_pid
"$tmp/nofp" signal 4 >/dev/null &
signal_pid=$!
"$tmp/nofp" thread 2 >/dev/null &
thread_pid=$!
wait $signal_pid $thread_pid
"$tmp/nofp" plt 3 >/dev/null &
plt_pid=$!
"$tmp/withfp" qsort 3 >/dev/null &
mixed_pid=$!
wait $plt_pid $mixed_pid
"$tmp/nofp" short 300 >/dev/null &
short_pid=$!
wait $short_pid
"$tmp/withfp" deep 3 >/dev/null &
deep_pid=$!
wait $deep_pid
sleep 1
kill -INT $agent_pid
wait $agent_pid
check_eq "the agent exits cleanly" 0 $?

pid_of() {
	perf script -i "$tmp/$1.data" -F pid 2>/dev/null | head -1 | tr -d ' '
}
chain_pid=$(pid_of chain)
qsort_pid=$(pid_of qsort)
deflate_pid=$(pid_of deflate)

# --- the agent's test program without frame pointers: the full chain
total=$(samples "$chain_pid")
full=$(samples "$chain_pid" "names ~ '^spin;c;b;a;$root\$'")
echo "# -fomit-frame-pointer chain: $full of $total samples are spin;c;b;a;$root"
check "no frame pointers: >= 90% of samples have the full chain down to _start" \
	at_least 90 "$full" "$total"
check "no frame pointers: samples match 19 Hz x CPU seconds within 20%" \
	awk -v a="$total" -v c="$(cat "$tmp/chain.out")" 'BEGIN { e = c * 19; d = a - e; if (d < 0) d = -d; exit !(e > 0 && d <= 0.2 * e) }'
check_eq "no frame pointers: outcome label complete on the chain's samples" "complete" \
	"$(q "SELECT string_agg(DISTINCT labels->>'unwind', ',') FROM stacks
	      WHERE labels->>'pid' = '$chain_pid' AND names ~ '^spin;c;b;a;$root\$'")"

# --- libc's qsort calling back into our code
total=$(samples "$qsort_pid")
through=$(samples "$qsort_pid" "names ~ '^[^;]*(;[^;]*)*;msort_with_tmp[^;]*;(.*;)?sort_loop;$root\$'")
callback=$(samples "$qsort_pid" "names ~ '^compare;msort_with_tmp[^;]*;(.*;)?sort_loop;$root\$'")
echo "# qsort: $through of $total samples run from libc's msort_with_tmp through sort_loop to _start, $callback with the callback compare on top"
check "qsort: >= 80% of samples go from libc through sort_loop;main to _start" \
	at_least 80 "$through" "$total"
check "qsort: the callback's stacks run compare;msort_with_tmp;...;sort_loop;main" [ "$callback" -gt 0 ]

# --- mixed: a frame-pointer program, libc without them, the callback with them
total=$(samples "$mixed_pid" "labels ? 'unwind'")
callback=$(samples "$mixed_pid" "names ~ '^compare;msort_with_tmp[^;]*;(.*;)?sort_loop;$root\$'")
through=$(samples "$mixed_pid" "names ~ ';msort_with_tmp[^;]*;(.*;)?sort_loop;$root\$'")
echo "# mixed: $through of $total samples of the frame-pointer build go through libc to _start, $callback from the callback"
check "mixed: >= 80% of samples go from libc through sort_loop;main to _start" \
	at_least 80 "$through" "$total"
check "mixed: the callback (frame pointers) over libc (none) over sort_loop (frame pointers)" \
	[ "$callback" -gt 0 ]

# --- zlib's deflate (libz, no frame pointers, no debug information)
total=$(samples "$deflate_pid")
inlib=$(q "SELECT coalesce(sum(value), 0) FROM stacks WHERE labels->>'pid' = '$deflate_pid'
           AND user_frames LIKE '%libz.so%' AND names ~ ';deflate;compress_loop;$root\$'")
echo "# deflate: $inlib of $total samples run from libz through deflate;compress_loop to _start"
check "deflate: >= 80% of samples go from libz through deflate;compress_loop;main to _start" \
	at_least 80 "$inlib" "$total"

# --- a signal handler: through the signal frame to the interrupted code
through=$(samples "$signal_pid" "names ~ '^handler;__restore_rt;spin;spin_outer;$root\$'")
handler=$(samples "$signal_pid" "names LIKE 'handler;%'")
echo "# signal: $through of $handler samples in the handler go through __restore_rt to spin;spin_outer;main"
check "signal: >= 90% of the handler's samples go through the signal frame to _start" \
	at_least 90 "$through" "$handler"

# --- a thread: down to the thread start
total=$(samples "$thread_pid" "labels->>'unwind' IS NOT NULL")
through=$(samples "$thread_pid" "names ~ '(^|;)spin;worker;start_thread;(__)?clone3\$'")
echo "# thread: $through of $total samples run spin;worker;start_thread;__clone3"
check "thread: >= 90% of samples end at the thread start (clone3)" at_least 90 "$through" "$total"

# --- PLT stubs: samples in the stub (its file offsets, from readelf) unwind
# through it (the stub's CFI is an expression on the pc)
read -r plt_start plt_size < <(readelf -SW "$tmp/nofp" | awk '$2 == ".plt" { print $5, $6 }')
plt_start=$((16#$plt_start))
plt_size=$((16#$plt_size))
total=$(samples "$plt_pid")
complete=$(samples "$plt_pid" "names ~ '(^|;)plt_loop;$root\$' AND labels->>'unwind' = 'complete'")
in_stub=$(samples "$plt_pid" "substring(split_part(user_frames, ';', 1) from '@([0-9]+)$')::bigint
                               BETWEEN $plt_start AND $plt_start + $plt_size - 1
                             AND names ~ '(^|;)plt_loop;$root\$'")
echo "# plt: $complete of $total samples complete through plt_loop;main, $in_stub of them in the PLT stub"
check "plt: >= 95% of samples complete through plt_loop;main" at_least 95 "$complete" "$total"
check "plt: samples in the PLT stub unwind to main too" [ "$in_stub" -gt 0 ]

# --- a 300 ms program (its pid's samples before the exec are the shell's;
# those in its exit, after its memory is gone, have no user stack)
total=$(samples "$short_pid" "labels->>'comm' = 'nofp' AND labels ? 'unwind'")
named=$(samples "$short_pid" "labels->>'comm' = 'nofp' AND names ~ '(^|;)spin;$root\$'")
echo "# 300 ms program: $total samples, $named with spin;$root (kernel frames above allowed)"
q "SELECT value, labels->>'comm', names FROM stacks WHERE labels->>'pid' = '$short_pid'" | sed 's/^/#   /'
# (one may land in the dynamic loader's start-up)
short_ok() { [ "$total" -ge 3 ] && at_least 80 "$named" "$total"; }
check "short-lived: present and symbolized (>= 3 samples, >= 80% spin;main;...)" short_ok

# --- 200-deep recursion: cut at 127 frames and marked
total=$(samples "$recurse_pid")
cut=$(samples "$recurse_pid" "nuser = 127 AND names ~ '^spin;(recurse;){126}\\[truncated\\]\$'
                              AND labels->>'unwind' = 'truncated'")
echo "# recursion: $cut of $total samples are spin + 126 x recurse + [truncated], labelled truncated"
check "recursion: >= 90% of samples stop at 127 frames, marked truncated" \
	at_least 90 "$cut" "$total"

# --- deeper than the stack copy (100 frames of 200 bytes and more, built
# with frame pointers): the CFI walk runs out of copy and goes on along the
# frame pointers, to main.  The program spends its time at the bottom;
# a sample misses the chain only in the descent (microseconds) or where
# the stack could not be read, hence 90%.
total=$(samples "$deep_pid")
through=$(samples "$deep_pid" "names ~ '(^|;)spin;(deep;){100}main;__libc_start_call_main'
                               AND labels->>'unwind' = 'complete'")
echo "# deep: $through of $total samples run spin + 100 x deep + main, by frame pointers past the copy"
check "deeper than the copy: >= 90% of samples reach main by frame pointers, complete" \
	at_least 90 "$through" "$total"

# --- PLT stubs are named for what they jump to, through the agent's own
# symbolizer on the stubs' offsets (objdump names them too), and so are
# the samples that landed in one
plt_offset() {
	local va
	va=$(objdump -d "$tmp/nofp" | awk -v s="<$1@plt>:" '$2 == s { print "0x" $1 }')
	while read -r seg off addr _ filesz _; do
		if [ "$seg" = LOAD ] && (( va >= addr && va < addr + filesz )); then
			printf '%#x' $((va - addr + off))
		fi
	done < <(readelf -lW "$tmp/nofp")
}
zv=$(plt_offset zlibVersion)
qs=$(plt_offset qsort)
check_eq "PLT: the stubs are named target@plt" "$zv zlibVersion@plt|$qs qsort@plt" \
	"$("$agent" --symbolize "$tmp/nofp" "$zv" "$qs" | paste -sd'|')"
check_eq "PLT: the samples in the stub are zlibVersion@plt's" "$in_stub" \
	"$(samples "$plt_pid" "names ~ '(^|;)zlibVersion@plt;plt_loop;$root\$'")"

# --- outcomes in the log and as a label
check "the log counts complete, truncated and failed stacks" \
	grep -Eq "[0-9]+ complete, [0-9]+ truncated, [0-9]+ failed" "$tmp/agent.log"
echo "# outcomes: $(q "SELECT string_agg(o || ' ' || n, ', ') FROM (SELECT labels->>'unwind' AS o, sum(value) AS n
                        FROM stacks GROUP BY 1 ORDER BY 1) s")"

# --- agreement with perf --call-graph dwarf, sample by sample
for name in chain qsort deflate; do
	pid=$(pid_of $name)
	perf script -i "$tmp/$name.data" -F pid,ip,dso --no-inline >"$tmp/$name.perf" 2>/dev/null
	q "SELECT value, user_frames FROM stacks WHERE labels->>'pid' = '$pid' AND user_frames IS NOT NULL" |
		tr '|' '\t' >"$tmp/$name.agent"
	read -r exact edges total perf_total < <(python3 "$TEST_ROOT/unwind/compare.py" \
		"$tmp/$name.perf" "$tmp/$name.agent" 2>"$tmp/$name.diff")
	[ $name = qsort ] || head -5 "$tmp/$name.diff" | sed 's/^/#   /' 
	echo "# perf agreement, $name: of $total agent samples, $exact% have unwound frames (past the sampled pc) perf also saw in its $perf_total samples, $edges% have only caller-callee pairs and a bottom perf saw"
	if [ $name = qsort ]; then
		# 2^17 paths through msort_with_tmp's recursion: whole stacks rarely repeat
		check "perf agreement, $name: >= 95% of samples agree pair by pair" \
			awk -v s="$edges" 'BEGIN { exit !(s >= 95) }'
	else
		check "perf agreement, $name: >= 95% of samples have unwound frames perf saw" \
			awk -v s="$exact" 'BEGIN { exit !(s >= 95) }'
	fi
done

finish
