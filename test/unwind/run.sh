#!/usr/bin/env bash
# parca-agent on code built without frame pointers (CFI unwinding, see
# docs/agent.md): full chains through our -O2 -fomit-frame-pointer code,
# libc's qsort with a callback (also from a frame-pointer build: a mixed
# stack) and libz's deflate, down to _start; a signal handler's stack
# through the signal frame; a thread's down to its start; samples in PLT
# stubs; 300 ms programs present and symbolized; samples in a file a
# program first runs in its last moments, handled after it exited; a
# 200-deep recursion cut at 127 frames and marked truncated; the outcome
# label; and the share of samples whose stacks perf --call-graph dwarf (an
# independent unwinder) agrees with.  Every sample of a workload must unwind as expected, except
# what may legitimately differ (see "What may legitimately differ" below).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

require_agent
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
       $(stack_names sm.stack) AS names,
       (SELECT string_agg(m.file || '@' || l.address, ';' ORDER BY u.pos)
          FROM unnest(parca_stack_location_ids(sm.stack)) WITH ORDINALITY AS u(id, pos)
          JOIN parca.locations l ON l.id = u.id
          JOIN parca.mappings m ON m.id = l.mapping_id
         WHERE m.file <> '[kernel.kallsyms]') AS user_frames,
       (SELECT count(*) FROM unnest(parca_stack_location_ids(sm.stack)) AS u(id)
          JOIN parca.locations l ON l.id = u.id
          JOIN parca.mappings m ON m.id = l.mapping_id
         WHERE m.file <> '[kernel.kallsyms]') AS nuser,
       $(stack_names sm.stack user) AS user_names
  FROM parca.samples sm JOIN parca.series se ON se.id = sm.series_id" >/dev/null

# samples PID [CONDITION]: the samples of a process (meeting CONDITION)
samples() {
	q "SELECT coalesce(sum(value), 0) FROM stacks WHERE labels->>'pid' = '$1' AND (${2:-true})"
}

# What may legitimately differ from a workload's stack, so that the checks
# below can ask for every other sample:
# - kernel frames on top of the user stack: a sample taken in a system call,
#   an interrupt or the scheduler (more of them on a loaded machine); the
#   checks look at user_names, the user frames alone;
# - the workload's own time check on top: spin() and the loops call
#   clock_gettime (workload.c: getrusage) through the PLT every 100,000
#   iterations, from cpu_seconds inlined into the caller; a sample there has
#   the libc function (and its unnamed syscall stub) above the caller, whose
#   frame is named cpu_seconds, with or without its own name;
spinning='(\?;)?(clock_gettime[^;]*;)?(cpu_seconds;(spin;)?|spin;)'
# - the program outside its work: the shell between fork and exec (its
#   comm), the dynamic loader and libc starting the program, its exit, whose
#   stacks unwind completely but never reach main (nor a thread's start);
#   main's own code, which reads its arguments before the work (its first
#   write to a static variable faults its page in, in the kernel under
#   main: a sample caught one in CI); and main printing its CPU time at the
#   end (cpu_seconds, printf right above main). A few ms of CPU time, a
#   sample now and then at 19 Hz. They are left out if they unwound
#   completely; a failed or truncated stack always counts.
outside="labels->>'comm' NOT IN ('nofp', 'workload', 'withfp') OR nuser = 0
         OR (labels->>'unwind' = 'complete'
             AND (coalesce(user_names, '') !~ '(^|;)(main|start_thread);'
                  OR user_names ~ '^main;__libc_start_call_main;'
                  OR user_names ~ '(^|;)(cpu_seconds|printf);main;__libc_start_call_main;'))"
# every PID MATCH [EMPTY_OK]: MATCH holds for all samples of PID but those
# outside, and there is one at least unless EMPTY_OK is given; the others
# are printed (to see what a failure is made of)
every() {
	local all good
	all=$(samples "$1" "NOT ($outside)")
	good=$(samples "$1" "NOT ($outside) AND ($2)")
	q "SELECT '#   not matching: ' || sum(value) || ' x ' || coalesce(labels->>'unwind', '-') || ', '
	          || nuser || ' user frames: '
	          || left(regexp_replace(coalesce(names, ''), '(recurse;)+', 'recurse;...;'), 300)
	   FROM stacks WHERE labels->>'pid' = '$1' AND NOT ($outside) AND NOT coalesce($2, false)
	   GROUP BY labels->>'unwind', nuser, names ORDER BY sum(value) DESC LIMIT 5"
	echo "#   $good of $all samples (of $(samples "$1") in all) match"
	# none left to judge: show what the samples held (all counted outside)
	[ "$all" -gt 0 ] || q "SELECT '#   outside: ' || sum(value) || ' x ' || coalesce(labels->>'comm', '-') || ', '
	          || coalesce(labels->>'unwind', '-') || ', ' || nuser || ' user frames: ' || left(coalesce(names, ''), 300)
	   FROM stacks WHERE labels->>'pid' = '$1'
	   GROUP BY labels->>'comm', labels->>'unwind', nuser, names ORDER BY sum(value) DESC LIMIT 5"
	{ [ "$all" -gt 0 ] || [ -n "${3:-}" ]; } && [ "$good" = "$all" ]
}
# more_than_half PART TOTAL
more_than_half() {
	[ "$2" -gt 0 ] && [ $(($1 * 2)) -gt "$2" ]
}
# libc's names: from its debug file's DWARF or symbol table (then
# __libc_start_main@@GLIBC_2.34, msort_with_tmp.part.0): regular expressions
root="main;__libc_start_call_main;__libc_start_main[^;]*;_start"

"$agent" --dsn "$dsn" --flush-interval 2 --verbose 2>"$tmp/agent.log" &
agent_pid=$!
agent_sampling "$tmp/agent.log"

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
short_pids=
late_pids=
for i in 1 2 3 4 5; do
	"$tmp/nofp" short 300 >/dev/null &
	short_pids="$short_pids $!"
	"$tmp/nofp" late 300 >/dev/null &
	late_pids="$late_pids $!"
	wait $late_pids
done
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
echo "# -fomit-frame-pointer chain, spin;c;b;a;$root:"
check "no frame pointers: every sample has the full chain down to _start" \
	every "$chain_pid" "labels->>'unwind' = 'complete'
	                    AND user_names ~ '^(\\?;)?(getrusage[^;]*;)?(cpu_seconds;(spin;)?|spin;)c;b;a;$root\$'"
check "no frame pointers: samples match 19 Hz x CPU seconds" \
	near_expected "$(samples "$chain_pid")" "$(awk -v c="$(cat "$tmp/chain.out")" 'BEGIN { printf "%.0f", c * 19 }')"
check_eq "no frame pointers: outcome label complete on the chain's samples" "complete" \
	"$(q "SELECT string_agg(DISTINCT labels->>'unwind', ',') FROM stacks
	      WHERE labels->>'pid' = '$chain_pid' AND names ~ '^spin;c;b;a;$root\$'")"

# --- libc's qsort calling back into our code.  Filling the array between
# sorts is a few % of the time: most samples, not all, are in the sort.
total=$(samples "$qsort_pid" "NOT ($outside)")
through=$(samples "$qsort_pid" "user_names ~ '^[^;]*(;[^;]*)*;msort_with_tmp[^;]*;(.*;)?sort_loop;$root\$'")
callback=$(samples "$qsort_pid" "user_names ~ '^compare;msort_with_tmp[^;]*;(.*;)?sort_loop;$root\$'")
echo "# qsort: $through of $total samples run from libc's msort_with_tmp through sort_loop to _start, $callback with the callback compare on top"
check "qsort: every sample unwinds through sort_loop;main to _start" \
	every "$qsort_pid" "labels->>'unwind' = 'complete' AND user_names ~ '(^|;)sort_loop;$root\$'"
check "qsort: most samples go from libc's sort through sort_loop;main" more_than_half "$through" "$total"
check "qsort: the callback's stacks run compare;msort_with_tmp;...;sort_loop;main" [ "$callback" -gt 0 ]

# --- mixed: a frame-pointer program, libc without them, the callback with them
total=$(samples "$mixed_pid" "NOT ($outside)")
callback=$(samples "$mixed_pid" "user_names ~ '^compare;msort_with_tmp[^;]*;(.*;)?sort_loop;$root\$'")
through=$(samples "$mixed_pid" "user_names ~ ';msort_with_tmp[^;]*;(.*;)?sort_loop;$root\$'")
echo "# mixed: $through of $total samples of the frame-pointer build go through libc to _start, $callback from the callback"
check "mixed: every sample unwinds through sort_loop;main to _start" \
	every "$mixed_pid" "labels->>'unwind' = 'complete' AND user_names ~ '(^|;)sort_loop;$root\$'"
check "mixed: most samples go from libc through sort_loop;main" more_than_half "$through" "$total"
check "mixed: the callback (frame pointers) over libc (none) over sort_loop (frame pointers)" \
	[ "$callback" -gt 0 ]

# --- zlib's deflate (libz, no frame pointers, no debug information); making
# the input and deflateInit/End are a few % of the time
total=$(samples "$deflate_pid" "NOT ($outside)")
inlib=$(q "SELECT coalesce(sum(value), 0) FROM stacks WHERE labels->>'pid' = '$deflate_pid'
           AND user_frames LIKE '%libz.so%' AND user_names ~ ';deflate;compress_loop;$root\$'")
echo "# deflate: $inlib of $total samples run from libz through deflate;compress_loop to _start"
check "deflate: every sample unwinds through compress_loop;main to _start" \
	every "$deflate_pid" "labels->>'unwind' = 'complete' AND user_names ~ '(^|;)compress_loop;$root\$'"
check "deflate: most samples go from libz through deflate;compress_loop;main" more_than_half "$inlib" "$total"

# --- a signal handler: through the signal frame to the interrupted code
# (a sample may find the handler re-arming its timer in setitimer, called
# from arm_timer, which the symbolizer names where the compiler inlined it)
handler=$(samples "$signal_pid" "user_names LIKE 'handler;%'")
echo "# signal: $handler samples in the handler"
check "signal: every sample, in the handler through the signal frame, reaches _start" \
	every "$signal_pid" "labels->>'unwind' = 'complete'
	                     AND user_names ~ '^((setitimer;)?(arm_timer;)?handler;__restore_rt;)?$spinning(spin_outer;)?$root\$'"
check "signal: samples in the handler" [ "$handler" -gt 0 ]

# --- a thread: down to the thread start (the main thread only creates it)
echo "# thread: spin;worker;start_thread;__clone3"
check "thread: every sample of the thread ends at the thread start (clone3)" \
	every "$thread_pid" "labels->>'unwind' = 'complete'
	                     AND (user_names ~ '^${spinning}worker;start_thread;(__)?clone3\$'
	                          OR user_names ~ '(^|;)$root\$')"
check "thread: samples in the thread" \
	[ "$(samples "$thread_pid" "user_names ~ 'worker;start_thread;(__)?clone3\$'")" -gt 0 ]

# --- PLT stubs: samples in the stub (its file offsets, from readelf) unwind
# through it (the stub's CFI is an expression on the pc)
read -r plt_start plt_size < <(readelf -SW "$tmp/nofp" | awk '$2 == ".plt" { print $5, $6 }')
plt_start=$((16#$plt_start))
plt_size=$((16#$plt_size))
in_stub=$(samples "$plt_pid" "substring(split_part(user_frames, ';', 1) from '@([0-9]+)$')::bigint
                               BETWEEN $plt_start AND $plt_start + $plt_size - 1
                             AND user_names ~ '(^|;)plt_loop;$root\$'")
echo "# plt: $in_stub samples in the PLT stub"
check "plt: every sample completes through plt_loop;main" \
	every "$plt_pid" "labels->>'unwind' = 'complete' AND user_names ~ '(^|;)plt_loop;$root\$'"
check "plt: samples in the PLT stub unwind to main too" [ "$in_stub" -gt 0 ]

# --- 300 ms programs, five of them: each gives 5.7 samples on average, the
# five at least 10 but with a chance below 1e-4 (Poisson, mean 28.5)
total=0
for pid in $short_pids; do
	total=$((total + $(samples "$pid" "NOT ($outside)")))
done
echo "# 300 ms programs: $total samples in main"
check "short-lived: present (>= 10 samples of the five)" [ "$total" -ge 10 ]
for pid in $short_pids; do
	# (one 300 ms program may have all its few samples outside main: the
	# five together are held to 10 samples above)
	every "$pid" "labels->>'unwind' = 'complete' AND user_names ~ '^${spinning}$root\$'" empty_ok ||
		short_bad=1
done
check "short-lived: every sample symbolized, spin;main;... to _start" [ -z "${short_bad:-}" ]

# --- programs that run the dynamic loader's code (dlsym) only in their
# last 150 ms: samples there reach the agent after the program exited, as
# the agent polls the ring every 200 ms.  Their mappings are known all the
# same, listed at the program's first sample; a sample whose first pc found
# no mapping would have no user frame, so "failed" is counted here outside
# every()'s filter, of the programs with a complete sample: a program whose
# first sample the agent handled only after its exit (an agent stalled for
# all its 450 ms of CPU, by a long flush on a loaded machine) was never
# listed, and every sample of it fails, which is not what this checks.  In
# ld.so: 5 x 100 ms at 19 Hz, mean 9.5 samples, none with a chance below
# 1e-4.
late_ld=0
late_failed=0
late_unlisted=0
for pid in $late_pids; do
	every "$pid" "labels->>'unwind' = 'complete' AND user_names ~ '(^|;)(lookup_loop|spin);$root\$'" empty_ok ||
		late_bad=1
	late_ld=$((late_ld + $(samples "$pid" "labels->>'unwind' = 'complete' AND user_frames LIKE '%/ld-linux-x86-64.so.2@%'")))
	if [ "$(samples "$pid" "labels->>'unwind' = 'complete'")" -gt 0 ]; then
		late_failed=$((late_failed + $(samples "$pid" "labels->>'comm' = 'nofp' AND labels->>'unwind' <> 'complete'")))
	else
		late_unlisted=$((late_unlisted + 1))
	fi
done
echo "# dynamic loader at the end: $late_ld samples in ld.so, $late_failed not complete" \
	"($late_unlisted programs without a complete sample left out)"
check "late: every sample unwinds through lookup_loop or spin;main to _start" [ -z "${late_bad:-}" ]
check "late: the dynamic loader's samples, handled after the exit, unwind" [ "$late_ld" -gt 0 ]
check_eq "late: no sample of theirs failed or was truncated" 0 "$late_failed"

# --- 200-deep recursion: cut at 127 user frames and marked
echo "# recursion: spin + recurse... + [truncated], 127 user frames, labelled truncated"
check "recursion: every sample stops at 127 frames, marked truncated" \
	every "$recurse_pid" "nuser = 127 AND labels->>'unwind' = 'truncated'
	                      AND user_names ~ '^$spinning(recurse;)+\\[truncated\\]\$'"

# --- deeper than the stack copy (100 frames of 200 bytes and more, built
# with frame pointers): the CFI walk runs out of copy and goes on along the
# frame pointers to main and libc's caller of main, where they end (libc
# has none), a complete stack.  The program spends its time at the bottom;
# a sample in the descent (microseconds) has fewer deep frames.
deep_root="main;__libc_start_call_main(;__libc_start_main[^;]*;_start)?"
through=$(samples "$deep_pid" "user_names ~ '^$spinning(deep;){100}$deep_root\$'")
echo "# deep: $through samples run spin + 100 x deep + main, by frame pointers past the copy"
check "deeper than the copy: every sample reaches main by frame pointers, complete" \
	every "$deep_pid" "labels->>'unwind' = 'complete'
	                   AND user_names ~ '^($spinning(deep;){100}|(deep;){1,100})$deep_root\$'"
check "deeper than the copy: samples at the bottom, 100 deep" [ "$through" -gt 0 ]

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
	# (the program's start and exit left out: perf, starting it itself, may
	# sample them otherwise or not at all)
	q "SELECT value, user_frames FROM stacks WHERE labels->>'pid' = '$pid' AND user_frames IS NOT NULL
	   AND NOT ($outside)" | tr '|' '\t' >"$tmp/$name.agent"
	read -r exact edges total perf_total < <(python3 "$TEST_ROOT/unwind/compare.py" \
		"$tmp/$name.perf" "$tmp/$name.agent" 2>"$tmp/$name.diff")
	[ $name = qsort ] || head -5 "$tmp/$name.diff" | sed 's/^/#   /' 
	echo "# perf agreement, $name: of $total agent samples, $exact% have unwound frames (past the sampled pc) perf also saw in its $perf_total samples, $edges% have only caller-callee pairs and a bottom perf saw"
	# perf takes some 2,000 samples of each loop at 499 Hz: a path of the
	# agent's that perf did not see must be rarer than about 1 in 700, and
	# such paths are well under 5% of these loops' samples
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
