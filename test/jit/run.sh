#!/usr/bin/env bash
# parca-agent on JIT-compiled code, as root with eBPF (docs/agent.md,
# "JIT-compiled code"):
# - Node.js with --perf-basic-prof: its samples carry the chain of its
#   JavaScript functions in order, named from the perf map V8 writes
#   (function, file, line);
# - Node.js without a map: its JIT code is one "[node JIT]" frame, not a
#   location per address;
# - Java (JVMs of nobody's): the agent gets each JVM's perf map through the
#   JVM's attach mechanism (jcmd Compiler.perfmap), with
#   -XX:+PreserveFramePointer its samples carry the chain of its methods,
#   without it they are labelled java_frame_pointers="false" and end at
#   their first JIT frame (no broken stacks); with --no-java-perfmap a JVM
#   is not asked (its JIT code is one "[java JIT]" frame); code a JVM
#   compiles late (test/jit/Phases.java) is named within its phase;
# - jitdump: test/jit/minijit.c, a tiny JIT that logs its code in a
#   jitdump file (code loads with a line table, a move), has its frames
#   named with their lines;
# - hostile maps (Node.js processes running as nobody, maps written by
#   the test): garbage and truncated lines, a symbolic link, a map owned by
#   another user, a huge map, a map rewritten while read, processes that
#   exit at once: nothing is named from what must not be read, the agent's
#   memory stays bounded, and it exits cleanly.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

require_agent
node=$(command -v node || true)
if [ -z "$node" ]; then
	echo "# skipped: node (Debian's nodejs, scripts/deps.sh) is not installed"
	finish
	exit $?
fi
start_cluster "${PARCA_JIT_TEST_PORT:-54475}"
tmp=$(mktemp -d)
chmod 755 "$tmp"
# (V8 writes its logs, isolate-*-v8.log, in its working directory)
cd "$tmp"
maps=()
cleanup() {
	rm -rf "$tmp"
	rm -f "${maps[@]}"
	stop_cluster
}
trap cleanup EXIT

q "CREATE ROLE agent_test LOGIN IN ROLE parca_agent" >/dev/null
dsn="host=127.0.0.1 port=$PGPORT user=agent_test dbname=postgres"
q "CREATE VIEW agent_stacks AS
SELECT sm.stack, sm.value, sm.time, se.labels, $(stack_names sm.stack user) AS user_names
  FROM parca.samples sm JOIN parca.series se ON se.id = sm.series_id
 WHERE se.profile_type = 'parca_agent:samples:count:cpu:nanoseconds:delta'" >/dev/null
# Every frame of every sample: its function and mapping (NULL: none, as
# JIT frames and Python frames have).
q "CREATE VIEW frames AS
SELECT s.labels->>'pid' AS pid, s.value, l.id AS location_id, m.file AS mapping,
       f.name, f.system_name, f.filename, f.start_line
  FROM agent_stacks s
  CROSS JOIN LATERAL unnest(parca_stack_location_ids(s.stack)) AS u(id)
  JOIN parca.locations l ON l.id = u.id
  LEFT JOIN parca.mappings m ON m.id = l.mapping_id
  LEFT JOIN parca.functions f ON f.id = l.function_ids[1]" >/dev/null

# samples WHERE: how many samples of agent_stacks match WHERE.
samples() {
	q "SELECT coalesce(sum(value), 0) FROM agent_stacks WHERE $1"
}
# at_least PERCENT COUNT TOTAL: COUNT is at least PERCENT % of TOTAL, of
# more than 20 samples.
at_least() {
	awk -v p="$1" -v c="$2" -v t="$3" 'BEGIN { exit !(t > 20 && c >= p / 100 * t) }'
}

cp "$TEST_ROOT/jit/chain.js" "$tmp/chain.js"
chmod 644 "$tmp/chain.js"
chain_js=$tmp/chain.js
# Interpreted functions run in V8's interpreter trampoline unless each gets
# its own copy (--interpreted-frames-native-stack), which the map names;
# TurboFan would inline the small callers into hotLoop (--no-turbo-inlining).
node_map=(--perf-basic-prof --interpreted-frames-native-stack --no-turbo-inlining)

cc -O1 -fno-omit-frame-pointer -o "$tmp/minijit" "$TEST_ROOT/jit/minijit.c"
mkdir "$tmp/dumps"
chown nobody "$tmp/dumps"
java=$(command -v java || true)
javac=$(command -v javac || true)
if [ -n "$javac" ]; then
	"$javac" -d "$tmp" "$TEST_ROOT/jit/Chain.java"
	chmod 644 "$tmp"/*.class
fi
# The JVM's own inlining would make the small callers part of hotLoop.
# main stays interpreted: its loop is compiled on stack late, on a loaded
# machine 9.5 s and 15 s after the callers (-XX:+PrintCompilation), well
# inside the window measured below, and its new code is [java JIT] until
# the agent next asks for the map, up to a minute later by design.
java_args=(-XX:CompileCommand=quiet "-XX:CompileCommand=dontinline,Chain::*"
	"-XX:CompileCommand=exclude,Chain::main" -cp "$tmp" Chain)

# jit_ranges PID: the process's anonymous executable mappings ("START END").
jit_ranges() {
	awk 'NF == 5 && $2 ~ /x/ && $5 == 0 { split($1, r, "-"); print r[1], r[2] }' "/proc/$1/maps"
}
# map_lines PID NAME: perf map lines naming every 4 kB of them NAME.
map_lines() {
	local s e a
	jit_ranges "$1" | while read -r s e; do
		for ((a = 16#$s; a < 16#$e && a < 16#$s + 4096 * 4096; a += 4096)); do
			printf '%x 1000 %s\n' "$a" "$2"
		done
	done
}
# as_nobody PROGRAM ARGS... &: a program as nobody, in place of the
# background subshell (so that $! is the program's pid).
as_nobody() {
	exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}
# wait_jit PID: until the process has JIT code.
wait_jit() {
	local i
	for i in $(seq 1 100); do
		[ -n "$(jit_ranges "$1" 2>/dev/null)" ] && return 0
		sleep 0.1
	done
	return 1
}

"$agent" --dsn "$dsn" --flush-interval 2 2>"$tmp/agent.log" &
agent_pid=$!
agent_sampling "$tmp/agent.log"

# --- the chain with a map, and without; the JVMs
# perf samples it too, at 499 Hz, by frame pointers, naming its JIT code
# from the same map.  On the CPU clock, as the agent samples: a machine
# whose virtual PMU says it has "cycles" may never deliver one of them.
# perf starts it (a shell that notes its pid and becomes node): perf
# attached by pid (-p) to a running process recorded no sample at all, now
# and then, on a loaded machine, while perf starting its command recorded
# as always in the same minute.
perf record -q -e cpu-clock -g -F 499 -o "$tmp/perf.data" -- \
	sh -c 'echo $$ >"$0"; exec "$@"' "$tmp/mapped.pid" "$node" "${node_map[@]}" "$chain_js" 8 \
	>/dev/null 2>"$tmp/perf.log" &
perf_pid=$!
for i in $(seq 1 100); do
	[ -s "$tmp/mapped.pid" ] && break
	sleep 0.1
done
mapped_pid=$(cat "$tmp/mapped.pid")
maps+=("/tmp/perf-$mapped_pid.map")
"$node" --no-turbo-inlining "$chain_js" 8 >/dev/null &
unmapped_pid=$!
jvm_pids=()
if [ -n "$javac" ]; then
	as_nobody "$java" -XX:+PreserveFramePointer "${java_args[@]}" 12 >"$tmp/jfp.out" &
	jfp_pid=$!
	as_nobody "$java" "${java_args[@]}" 12 >"$tmp/jnofp.out" &
	jnofp_pid=$!
	jvm_pids=("$jfp_pid" "$jnofp_pid")
	maps+=("/tmp/perf-$jfp_pid.map" "/tmp/perf-$jnofp_pid.map")
	# the time each said it was warm
	for out in jfp jnofp; do
		(
			for i in $(seq 1 600); do
				grep -q warm "$tmp/$out.out" 2>/dev/null && break
				sleep 0.1
			done
			date +%s.%N >"$tmp/$out.warm"
		) &
	done
fi
as_nobody "$tmp/minijit" "$tmp/dumps" 4 >/dev/null &
minijit_pid=$!
wait $perf_pid $unmapped_pid $minijit_pid

# --- hostile maps, each for a Node.js process of nobody's without a map of
# its own: the test writes what the agent finds as /tmp/perf-PID.map
as_nobody "$node" "$chain_js" 4 >/dev/null &
covered_pid=$!
as_nobody "$node" "$chain_js" 4 >/dev/null &
link_pid=$!
as_nobody "$node" "$chain_js" 4 >/dev/null &
owner_pid=$!
as_nobody "$node" "$chain_js" 4 >/dev/null &
huge_pid=$!
as_nobody "$node" "$chain_js" 4 >/dev/null &
flip_pid=$!
hostile=("$covered_pid" "$link_pid" "$owner_pid" "$huge_pid" "$flip_pid")
for pid in "${hostile[@]}"; do
	maps+=("/tmp/perf-$pid.map")
	wait_jit "$pid" || echo "# pid $pid has no JIT code"
done
# A map of the user's that names the code, among garbage lines, a line too
# long to keep (100 kB), lines without a name or size, and a last line not
# finished yet (no newline): only the whole, well-formed lines name.
{
	echo "garbage line"
	echo "zzzz 10 GARBAGE_HEX"
	echo "1000 GARBAGE_NO_SIZE"
	echo "2000 10"
	head -c 100000 /dev/zero | tr '\0' 'x'
	echo
	map_lines "$covered_pid" "JS:*covered /srv/app/covered.js:7:3"
	printf '%s' "$(map_lines "$covered_pid" "PARTIAL" | head -1)"
} >"$tmp/covered.map"
install -o nobody -m 644 "$tmp/covered.map" "/tmp/perf-$covered_pid.map"
# A symbolic link to a map of nobody's: not followed.
map_lines "$link_pid" "EVIL_LINK" >"$tmp/link.map"
chown nobody "$tmp/link.map"
ln -sf "$tmp/link.map" "/tmp/perf-$link_pid.map"
# A map of another user's (postgres) for a process of nobody's: ignored.
map_lines "$owner_pid" "EVIL_OWNER" >"$tmp/owner.map"
install -o postgres -m 644 "$tmp/owner.map" "/tmp/perf-$owner_pid.map"
# 64 MB of lines naming other addresses, then the code's: read up to the
# per-process bound (2 MB of names), never further.
{
	awk 'BEGIN { for (i = 0; i < 1600000; i++) printf "%x 10 JS:*filler /srv/app/filler.js:1:1\n", 4096 + i * 16 }'
	map_lines "$huge_pid" "EVIL_BEYOND_BOUND"
} >"$tmp/huge.map"
install -o nobody -m 644 "$tmp/huge.map" "/tmp/perf-$huge_pid.map"
rm -f "$tmp/huge.map"
# A map rewritten in place, over and over, while the agent reads it:
# names are whole ones (FLIP_A or FLIP_B), never torn.
map_lines "$flip_pid" "FLIP_A" >"$tmp/flip_a.map"
map_lines "$flip_pid" "FLIP_B" >"$tmp/flip_b.map"
(
	while kill -0 "$flip_pid" 2>/dev/null; do
		cat "$tmp/flip_a.map" >"/tmp/perf-$flip_pid.map"
		sleep 0.05
		cat "$tmp/flip_b.map" >"/tmp/perf-$flip_pid.map"
		sleep 0.05
	done
) &
flipper=$!
# Processes that exit while their maps are read.
for i in 1 2 3 4 5 6; do
	"$node" "${node_map[@]}" "$chain_js" 0.3 >/dev/null &
	maps+=("/tmp/perf-$!.map")
	wait $!
done
wait "${hostile[@]}" $flipper "${jvm_pids[@]}"
sleep 1
kill -INT $agent_pid
wait $agent_pid
check_eq "the agent exits cleanly on SIGINT after flushing" 0 $?
grep -o "done: [0-9]* samples.*lost in a full ring buffer" "$tmp/agent.log" | sed 's/^/# /'

# --- Node.js with --perf-basic-prof: the chain, named with file and line
# What may lack the chain: Node.js starting (before main: loading its CA
# certificates, about 0.25 CPU seconds, 5 samples) and exiting, main's own
# CPU time check (process.cpuUsage, native frames above main), samples
# taken before V8 logged new code (the map is read again at most once a
# second: that code is "[node JIT]" until then), and unwinding failures in
# Node's native part.  Under 10 of the ~150 samples 8 CPU seconds give at
# 19 Hz, whatever the load (it is CPU time); 90 % leaves room for a few more.
chain="(^|;)hotLoop;parse;handleRequest;main;"
total=$(samples "labels->>'pid' = '$mapped_pid'")
chained=$(samples "labels->>'pid' = '$mapped_pid'
             AND user_names ~ '$chain'")
echo "# node --perf-basic-prof: $chained of $total samples carry main -> handleRequest -> parse -> hotLoop"
q "SELECT '#   not the chain: ' || sum(value) || ' x ' || coalesce(labels->>'unwind', '-') || ': ' || left(user_names, 300)
   FROM agent_stacks WHERE labels->>'pid' = '$mapped_pid' AND user_names !~ '$chain'
   GROUP BY labels->>'unwind', user_names ORDER BY sum(value) DESC LIMIT 5"
check "node --perf-basic-prof: >= 90 % of the samples carry main -> handleRequest -> parse -> hotLoop" \
	at_least 90 "$chained" "$total"
for f in hotLoop:8 parse:15 handleRequest:19 main:23; do
	check_eq "node --perf-basic-prof: ${f%:*} is named with its file and line" "$chain_js:${f#*:}" \
		"$(q "SELECT string_agg(DISTINCT filename || ':' || start_line, ',') FROM frames
		      WHERE pid = '$mapped_pid' AND name = '${f%:*}'")"
done
check_eq "node --perf-basic-prof: JIT frames are in no mapping (identified by name, file and line)" 0 \
	"$(q "SELECT count(*) FROM frames WHERE pid = '$mapped_pid' AND name = 'hotLoop' AND mapping IS NOT NULL")"
q "SELECT '#   hotLoop as V8 names it: ' || string_agg(DISTINCT system_name, ', ') FROM frames
   WHERE pid = '$mapped_pid' AND name = 'hotLoop'"

# Oracle: perf, pair by pair.  Of the agent's samples whose leaf is named
# JIT code, the chain of JIT frames from the leaf (names as V8 wrote them):
# did perf see that chain, and each of its (callee, caller) pairs?  perf
# takes some 4,000 samples of the ~150 the agent takes, of a program with a
# handful of distinct chains (hotLoop in each tier under the same callers):
# a chain of the agent's that perf never saw is a wrong one.  Samples with
# a [node JIT] frame (code the map did not name yet when the agent read
# it) are left out: not named is not misnamed.
perf script -i "$tmp/perf.data" -F pid,ip,sym,dso --no-inline >"$tmp/perf.txt" 2>"$tmp/perf_script.log"
q "SELECT sum(value) || E'\t' || frames FROM (
     SELECT s.value, (SELECT string_agg(CASE WHEN l.mapping_id IS NULL THEN 'J:' || f.system_name ELSE 'N' END,
                                        chr(31) ORDER BY u.pos)
                        FROM unnest(parca_stack_location_ids(s.stack)) WITH ORDINALITY AS u(id, pos)
                        JOIN parca.locations l ON l.id = u.id
                        LEFT JOIN parca.mappings m ON m.id = l.mapping_id
                        LEFT JOIN parca.functions f ON f.id = l.function_ids[1]
                       WHERE m.file IS DISTINCT FROM '[kernel.kallsyms]') AS frames
       FROM agent_stacks s WHERE s.labels->>'pid' = '$mapped_pid') x
    WHERE frames NOT LIKE '%[node JIT]%' GROUP BY frames" >"$tmp/agent.txt"
read -r exact edges compared perf_total < <(python3 "$TEST_ROOT/jit/perf_compare.py" \
	"$tmp/perf.txt" "$tmp/agent.txt" 2>"$tmp/perf_compare.err")
echo "# perf agreement: of $compared agent samples with a named JIT leaf, $exact% have a JIT chain perf saw in its $perf_total samples, $edges% only pairs perf saw"
sed 's/^/#   /' "$tmp/perf_compare.err" | head -5
if [ "${perf_total:-0}" = 0 ]; then
	sed 's/^/#   perf record: /' "$tmp/perf.log" | head -5
	sed 's/^/#   perf script: /' "$tmp/perf_script.log" | head -5
	echo "#   perf script: $(grep -c '^ *[0-9]' "$tmp/perf.txt") lines of samples; the map: $(ls -l "/tmp/perf-$mapped_pid.map" 2>&1)"
	grep -A4 -m3 . "$tmp/perf.txt" | sed 's/^/#   perf script: /'
fi
check "perf agreement: >= 95 % of the JIT chains are ones perf saw" \
	awk -v e="$exact" -v n="$compared" 'BEGIN { exit !(n > 20 && e >= 95) }'
check "perf agreement: >= 95 % of the JIT chains have only pairs perf saw" \
	awk -v e="$edges" -v n="$compared" 'BEGIN { exit !(n > 20 && e >= 95) }'

# --- Node.js without a map: [node JIT], one location, no address-keyed ones
total=$(samples "labels->>'pid' = '$unmapped_pid'")
jit=$(samples "labels->>'pid' = '$unmapped_pid'
         AND user_names ~ '(^|;)\[node JIT\](;|$)'")
echo "# node without a map: $jit of $total samples in [node JIT]"
check "node without a map: its JIT code is [node JIT] (>= 90 % of its samples)" \
	at_least 90 "$jit" "$total"
check_eq "node without a map: no location in anonymous memory (one per address)" 0 \
	"$(q "SELECT count(DISTINCT location_id) FROM frames WHERE pid = '$unmapped_pid' AND mapping = '[anon]'")"
check_eq "node without a map: its JIT code is one location" "[node JIT]" \
	"$(q "SELECT string_agg(DISTINCT name, ',') FROM frames WHERE pid = '$unmapped_pid' AND mapping IS NULL
	      AND name NOT IN ('[truncated]')")"
check_eq "node without a map: a run of JIT frames is one frame" 0 \
	"$(q "SELECT count(*) FROM agent_stacks WHERE labels->>'pid' = '$unmapped_pid'
	      AND user_names ~ '\[node JIT\];\[node JIT\]'")"
locs_mapped=$(q "SELECT count(DISTINCT location_id) FROM frames WHERE pid = '$mapped_pid'")
locs_unmapped=$(q "SELECT count(DISTINCT location_id) FROM frames WHERE pid = '$unmapped_pid'")
echo "# distinct locations: $locs_mapped with a map, $locs_unmapped without"

# --- jitdump
check "minijit: its jitdump file is found in its mappings" \
	grep -q "pid $minijit_pid (minijit): JIT code named by its jitdump file" "$tmp/agent.log"
# What may lack the chain: the process's start and the CPU time checks
# between calls (native frames), a few of ~75 samples.
total=$(samples "labels->>'pid' = '$minijit_pid'")
chained=$(samples "labels->>'pid' = '$minijit_pid'
             AND user_names ~ '^inner_loop;outer_call;main;'")
echo "# minijit: $chained of $total samples carry main -> outer_call -> inner_loop (before and after the move)"
check "minijit: >= 90 % of the samples carry main -> outer_call -> inner_loop, moved or not" \
	at_least 90 "$chained" "$total"
check_eq "minijit: inner_loop's frames are at its loop's line (its line table)" "/srv/jit/inner.src:10:11" \
	"$(q "SELECT string_agg(DISTINCT f.filename || ':' || f.start_line || ':' || l.line_numbers[1], ',')
	      FROM parca.locations l JOIN parca.functions f ON f.id = l.function_ids[1]
	     WHERE f.name = 'inner_loop' AND l.id IN (SELECT location_id FROM frames WHERE pid = '$minijit_pid')")"

# --- Java
if [ -z "$javac" ]; then
	echo "# skipped: Java (openjdk-17-jdk-headless, scripts/deps.sh) is not installed"
else
	check "JVM with -XX:+PreserveFramePointer: its perf map came through its attach mechanism" \
		grep -q "pid $jfp_pid: JVM: perf map written on request (Compiler.perfmap), -XX:+PreserveFramePointer" "$tmp/agent.log"
	check "JVM without -XX:+PreserveFramePointer: its perf map came through its attach mechanism, its flags too" \
		grep -q "pid $jnofp_pid: JVM: perf map written on request (Compiler.perfmap), without -XX:+PreserveFramePointer" "$tmp/agent.log"
	check_eq "the JVM wrote the map as its own user" nobody "$(stat -c %U "/tmp/perf-$jfp_pid.map" 2>&1)"
	# The samples of the thread running main once the JVM is warm (its
	# methods compiled, and a second for the agent to ask for the map
	# again) and after the first interval it may have been in; before,
	# frames are Interpreter or [java JIT] while the map lacks them.
	# What else may lack the chain: main's CPU time check (native frames
	# above main), unwinding failures in the JVM's native part, a few of
	# the ~150 samples 8 CPU seconds give.
	main_after_warm() {
		echo "labels->>'pid' = '$1' AND labels->>'thread_name' = 'java'
		      AND time > to_timestamp($(cat "$tmp/$2.warm" 2>/dev/null || echo 0) + 3)"
	}
	jchain="(^|;)Chain\.hotLoop;Chain\.parse;Chain\.handleRequest;(Chain\.main|Interpreter);"
	total=$(samples "$(main_after_warm $jfp_pid jfp)")
	chained=$(samples "$(main_after_warm $jfp_pid jfp)
	             AND user_names ~ '$jchain'")
	echo "# JVM with -XX:+PreserveFramePointer: $chained of $total samples carry main -> handleRequest -> parse -> hotLoop"
	q "SELECT '#   not the chain: ' || sum(value) || ' x ' || coalesce(labels->>'unwind', '-') || ': ' || left(user_names, 300)
	   FROM agent_stacks WHERE $(main_after_warm $jfp_pid jfp) AND user_names !~ '$jchain'
	   GROUP BY labels->>'unwind', user_names ORDER BY sum(value) DESC LIMIT 5"
	check "JVM with -XX:+PreserveFramePointer: >= 90 % of the samples carry main -> handleRequest -> parse -> hotLoop" \
		at_least 90 "$chained" "$total"
	check_eq "JVM with -XX:+PreserveFramePointer: no label java_frame_pointers" 0 \
		"$(q "SELECT count(*) FROM agent_stacks WHERE labels->>'pid' = '$jfp_pid' AND labels ? 'java_frame_pointers'")"
	# JIT code's names in the map; not libjvm's native StubRoutines::...
	jit_names="(Chain\.[a-zA-Z]*|Interpreter|\[java JIT\]|StubRoutines[^;:]*|I2C/C2I adapters)"
	total=$(samples "$(main_after_warm $jnofp_pid jnofp)")
	leaf=$(samples "$(main_after_warm $jnofp_pid jnofp)
	          AND user_names ~ '^Chain\.hotLoop;\[truncated\]$' AND labels->>'java_frame_pointers' = 'false'")
	echo "# JVM without -XX:+PreserveFramePointer: $leaf of $total samples are Chain.hotLoop;[truncated], labelled"
	check "JVM without -XX:+PreserveFramePointer: >= 80 % of the samples are its leaf JIT frame (hotLoop), labelled java_frame_pointers=false" \
		at_least 80 "$leaf" "$total"
	check_eq "JVM without -XX:+PreserveFramePointer: no stack goes on below a JIT frame" 0 \
		"$(samples "labels->>'pid' = '$jnofp_pid'
		      AND user_names ~ '(^|;)$jit_names;' AND user_names !~ '(^|;)$jit_names;\[truncated\]$'")"
	q "SELECT '#   below a JIT frame: ' || sum(value) || ': ' || left(user_names, 300) FROM agent_stacks
	   WHERE labels->>'pid' = '$jnofp_pid' AND user_names ~ '(^|;)$jit_names;'
	     AND user_names !~ '(^|;)$jit_names;\[truncated\]$' GROUP BY user_names LIMIT 3"
fi

# --- --no-java-perfmap: a JVM is not asked; without a map its JIT code is
# [java JIT], and without -XX:+PreserveFramePointer on its command line it
# is taken as without it
if [ -n "$javac" ]; then
	"$agent" --dsn "$dsn" --flush-interval 2 --no-java-perfmap 2>"$tmp/agent2.log" &
	agent_pid=$!
	agent_sampling "$tmp/agent2.log"
	as_nobody "$java" "${java_args[@]}" 3 >/dev/null &
	jquiet_pid=$!
	maps+=("/tmp/perf-$jquiet_pid.map")
	wait $jquiet_pid
	sleep 1
	kill -INT $agent_pid
	wait $agent_pid
	check_eq "--no-java-perfmap: the agent exits cleanly" 0 $?
	check "--no-java-perfmap: the JVM was not asked for its map" \
		test ! -e "/tmp/perf-$jquiet_pid.map" -a ! -e "/tmp/.java_pid$jquiet_pid"
	total=$(samples "labels->>'pid' = '$jquiet_pid' AND labels->>'thread_name' = 'java'")
	leaf=$(samples "labels->>'pid' = '$jquiet_pid' AND labels->>'thread_name' = 'java'
	                AND user_names ~ '^\[java JIT\];\[truncated\]$' AND labels->>'java_frame_pointers' = 'false'")
	echo "# --no-java-perfmap: $leaf of $total samples of its main thread are [java JIT];[truncated], labelled"
	check "--no-java-perfmap: >= 80 % of its main thread's samples are [java JIT];[truncated], labelled" \
		at_least 80 "$leaf" "$total"
fi

# --- code a JVM compiles late: test/jit/Phases.java starts a method nothing
# called before every 2.5 CPU seconds, 8 times; the JVM compiles each
# within 20 ms of its start (-XX:+PrintCompilation).  Each ask's map names
# the code that missed, so the agent asks again a second after, however
# many times it asked before.  (When each ask doubled the wait, up to a
# minute, whatever it named, 66 of 316 samples from phase 2 on were named,
# 21 %; the phases after the fourth ask waited 8 s and more.)  Of each
# phase's samples, those before its ask's map is read are [java JIT]: 11
# of 302 with this agent, about 2 a phase (a tenth of a second), while a
# clean-clone CI run loaded the machine; 70 % leaves each phase 0.75 s
# for the attach thread and the JVM writing its map at a safepoint.
# Samples are counted from the first profile (2 s each) that starts after
# phase 2 does.
if [ -n "$javac" ]; then
	"$javac" -d "$tmp" "$TEST_ROOT/jit/Phases.java"
	chmod 644 "$tmp"/*.class
	"$agent" --dsn "$dsn" --flush-interval 2 2>"$tmp/agent3.log" &
	agent_pid=$!
	agent_sampling "$tmp/agent3.log"
	as_nobody "$java" -XX:CompileCommand=quiet "-XX:CompileCommand=exclude,Phases::main" \
		"-XX:CompileCommand=exclude,Phases::run" -cp "$tmp" Phases 8 2.5 >"$tmp/phases.out" &
	phases_pid=$!
	maps+=("/tmp/perf-$phases_pid.map")
	wait $phases_pid
	sleep 1
	kill -INT $agent_pid
	wait $agent_pid
	check_eq "late-compiled code: the agent exits cleanly" 0 $?
	from=$(awk '$1 == "phase" && $2 == 2 { print $3 }' "$tmp/phases.out")
	late="labels->>'pid' = '$phases_pid' AND labels->>'thread_name' = 'java'
	      AND time >= to_timestamp(${from:-0})"
	total=$(samples "$late AND user_names ~ '^(Phases\.phase[0-9]|\[java JIT\]);'")
	named=$(samples "$late AND user_names ~ '^Phases\.phase[0-9];'")
	echo "# late-compiled code: $named of $total samples from phase 2 on name their phase's method"
	q "SELECT '#   ' || to_char(time, 'HH24:MI:SS') || ' ' || split_part(user_names, ';', 1) || ' ' || sum(value)
	   FROM agent_stacks WHERE labels->>'pid' = '$phases_pid' AND labels->>'thread_name' = 'java'
	   GROUP BY time, split_part(user_names, ';', 1) ORDER BY time, split_part(user_names, ';', 1)"
	check "late-compiled code: >= 70 % of the samples from phase 2 on name their phase's method" \
		at_least 70 "$named" "$total"
fi

# --- hostile maps
named_in() {
	q "SELECT coalesce(string_agg(DISTINCT name, ',' ORDER BY name), '') FROM frames
	   WHERE pid = '$1' AND mapping IS NULL AND name <> '[truncated]'"
}
named=$(named_in "$covered_pid")
check "a map with garbage lines: its whole lines name the code ($named)" \
	test "${named#\[node JIT\],}" = covered
check_eq "a map with garbage lines: covered is named with its file and line" "/srv/app/covered.js:7" \
	"$(q "SELECT string_agg(DISTINCT filename || ':' || start_line, ',') FROM frames WHERE name = 'covered'")"
check_eq "a symbolic link is not followed" "[node JIT]" "$(named_in "$link_pid")"
check_eq "a map owned by another user is ignored" "[node JIT]" "$(named_in "$owner_pid")"
check_eq "a huge map is read up to the bound only" "[node JIT]" "$(named_in "$huge_pid")"
check "a huge map: the agent says its names reached the bound" \
	grep -q "pid $huge_pid (node): its JIT code's names reached the bound of 2 MB" "$tmp/agent.log"
check_eq "a huge map: no other map reached it" "pid $huge_pid" \
	"$(grep -o "pid [0-9]* ([a-z]*): its JIT code's names reached the bound" "$tmp/agent.log" | cut -d' ' -f1,2 | sort -u)"
echo "# the rewritten map named: $(named_in "$flip_pid")"
check "a map rewritten while read names with whole names only" \
	test -z "$(named_in "$flip_pid" | tr ',' '\n' | grep -vx -e '\[node JIT\]' -e FLIP_A -e FLIP_B)"
check_eq "nothing anywhere is named from what must not be read" 0 \
	"$(q "SELECT count(*) FROM parca.functions
	      WHERE name ~ '^(EVIL|PARTIAL|GARBAGE|filler|xxxx)' OR system_name ~ '^(EVIL|PARTIAL|GARBAGE|xxxx)'")"
grep -o "pid $huge_pid (node): .*" "$tmp/agent.log" | sed 's/^/# /'
# The agent alone peaks near 30 MB on this machine; the huge map's 1.6
# million lines held whole would add over 64 MB, the bound 2 MB.
peak=$(grep -o "done: memory: .*peak [0-9.]* MB" "$tmp/agent.log" | grep -o "peak [0-9.]*" | cut -d' ' -f2)
echo "# agent resident peak: $peak MB"
check "the agent's memory stays bounded with a 64 MB map (peak < 60 MB)" \
	awk -v p="${peak:-999}" 'BEGIN { exit !(p < 60) }'

finish
