#!/usr/bin/env bash
# parca-agent end to end, as root with eBPF: a known program's stacks,
# counts, kernel frames and labels arrive in PostgreSQL; a 30 s outage of
# the server loses nothing and stores nothing twice; a commit whose answer
# is lost is not stored twice either; the command line fails clearly.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

require_agent
start_cluster "${PARCA_AGENT_TEST_PORT:-54442}"
port=$PGPORT
proxy_port=$((port + 1))
tmp=$(mktemp -d)
cleanup() {
	[ -n "${proxy_pid:-}" ] && kill "$proxy_pid" 2>/dev/null
	[ -n "${debug_file:-}" ] && rm -f "$debug_file"
	rm -rf "$tmp"
	stop_cluster
}
trap cleanup EXIT

gcc -O0 -g -fno-omit-frame-pointer -o "$tmp/workload" "$TEST_ROOT/agent/workload.c"
g++ -O0 -g -fno-omit-frame-pointer -o "$tmp/workload_cpp" "$TEST_ROOT/agent/workload_cpp.cc"
# The same program stripped, its DWARF and symbols in a separate debug file
# where Debian puts them (a build id of its own, so nothing is shared with
# the unstripped one).
stripped_id=$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')
gcc -O0 -g -fno-omit-frame-pointer -Wl,--build-id=0x$stripped_id -o "$tmp/stripped" \
	"$TEST_ROOT/agent/workload.c"
debug_file=/usr/lib/debug/.build-id/${stripped_id:0:2}/${stripped_id:2}.debug
mkdir -p "$(dirname "$debug_file")"
objcopy --only-keep-debug "$tmp/stripped" "$debug_file"
strip --strip-all "$tmp/stripped"
q "CREATE ROLE agent_test LOGIN IN ROLE parca_agent" >/dev/null
dsn="host=127.0.0.1 port=$port user=agent_test dbname=postgres"
node=$(hostname)
type='parca_agent:samples:count:cpu:nanoseconds:delta'

# Each sample's stack as function names, leaf first, with its labels.
q "CREATE VIEW agent_stacks AS
SELECT sm.time, sm.series_id, sm.stack, sm.value, sm.period, sm.duration,
       se.labels, se.profile_type,
       $(stack_names sm.stack) AS names,
       (SELECT m.file FROM parca.locations l JOIN parca.mappings m ON m.id = l.mapping_id
         WHERE l.id = (parca_stack_location_ids(sm.stack))[1]) AS leaf_file,
       $(stack_names sm.stack user) AS user_names
  FROM parca.samples sm JOIN parca.series se ON se.id = sm.series_id" >/dev/null

# A sample of the spinning workload (main -> a -> b -> c -> spin) may
# legitimately differ from spin;c;b;a;main... only by: kernel frames on top
# (a system call, an interrupt, the scheduler: user_names leaves them
# out); spin's own time check, getrusage from cpu_seconds (inlined), on top;
# or being outside the work: the shell between fork and exec (its comm),
# the dynamic loader and libc starting the program or its exit, stacks
# that unwind completely without reaching main, and main printing its CPU
# time at the end (cpu_seconds, printf right above main).
spinning="user_names ~ '^(\\?;)?(getrusage[^;]*;)?(cpu_seconds;(spin;)?|spin;)c;b;a;main;'"
outside="labels->>'comm' <> 'workload' OR user_names IS NULL
         OR (labels->>'unwind' = 'complete'
             AND (user_names !~ '(^|;)main;' OR user_names ~ '(^|;)(cpu_seconds|printf);main;'))"

# --- the command line
"$agent" --help | grep -q -- '--flush-interval'
check "--help describes the options" [ $? -eq 0 ]
check_eq "--version" "parca-agent 0.1" "$("$agent" --version)"
"$agent" --frequency=abc >/dev/null 2>&1
check_eq "a bad value exits with status 2" 2 $?
"$agent" --label 'bad-name=x' 2>"$tmp/err" >/dev/null
check "a bad label name is refused" grep -q "invalid label name" "$tmp/err"

# (a copy the postgres user can reach wherever the clone lives)
chmod 755 "$tmp"
install -m 755 "$agent" "$tmp/parca-agent"
runuser -u postgres -- "$tmp/parca-agent" --offline --duration 1 >/dev/null 2>"$tmp/err"
check_eq "no privileges: exit status 1" 1 $?
check "no privileges: said clearly" grep -q "not allowed to load BPF programs" "$tmp/err"
# A kernel without BTF, as seen from a mount namespace that hides it.
unshare -m sh -c "mount -t tmpfs none /sys/kernel/btf && exec '$agent' --offline --duration 1" \
	>/dev/null 2>"$tmp/err"
check_eq "no BTF: exit status 1" 1 $?
check "no BTF: said clearly" grep -q "the kernel has no BTF" "$tmp/err"

# --- a frame-pointer program and a syscall-heavy one, both cores busy;
# the connection comes from the PG* variables
PGUSER=agent_test "$agent" --flush-interval 2 --label suite=agent --label 'quote=a "b"' \
	2>"$tmp/agent1.log" &
agent_pid=$!
agent_sampling "$tmp/agent1.log"
"$tmp/workload" spin 10 >"$tmp/spin.out" &
spin_pid=$!
"$tmp/workload" syscall 4 >"$tmp/sys.out" &
sys_pid=$!
"$tmp/workload_cpp" 2 &
cpp_pid=$!
"$tmp/stripped" spin 2 >/dev/null &
stripped_pid=$!
# a process that renames itself half way (PR_SET_NAME = 15), each half 1.5
# s of CPU time (not wall time: on a loaded machine it may wait its turn)
/usr/bin/python3 -c '
import ctypes, time
def burn(s):
    end = time.process_time() + s
    while time.process_time() < end:
        pass
burn(1.5)
ctypes.CDLL(None).prctl(15, b"renamed-burn", 0, 0, 0)
burn(1.5)' &
rename_pid=$!
wait $spin_pid $sys_pid $cpp_pid $stripped_pid $rename_pid
sleep 1
kill -INT $agent_pid
wait $agent_pid
check_eq "the agent exits cleanly on SIGINT after flushing" 0 $?
check "connected through the PG* variables" grep -q "connected to PostgreSQL 127.0.0.1:$port/postgres as agent_test" "$tmp/agent1.log"
grep -o "done: [0-9]* samples.*lost in a full ring buffer" "$tmp/agent1.log" | sed 's/^/# /'
spin_cpu=$(cat "$tmp/spin.out")
# (19 Hz for 1.5 CPU s: about 28 samples each side of the rename; the
# shell's between fork and exec, if any, are bash's, and so is one taken
# in exec itself after the new program is mapped, before the kernel names
# the process after it: python3's executable, bash's comm, as CI saw once)
check_eq "comm: a process that renamed itself is labelled by each name in turn (the one it has when sampled)" \
	"python3,renamed-burn" \
	"$(q "SELECT string_agg(DISTINCT labels->>'comm', ',' ORDER BY labels->>'comm') FROM agent_stacks
	      WHERE labels->>'pid' = '$rename_pid' AND labels->>'executable' LIKE '%/python3%'
	        AND labels->>'comm' <> 'bash'")"
sys_cpu=$(cat "$tmp/sys.out")

total=$(q "SELECT coalesce(sum(value), 0) FROM agent_stacks WHERE labels->>'pid' = '$spin_pid'")
working=$(q "SELECT coalesce(sum(value), 0) FROM agent_stacks WHERE labels->>'pid' = '$spin_pid' AND NOT ($outside)")
chain=$(q "SELECT coalesce(sum(value), 0) FROM agent_stacks WHERE labels->>'pid' = '$spin_pid'
           AND NOT ($outside) AND $spinning")
expected=$(awk -v c="$spin_cpu" 'BEGIN { printf "%.0f", c * 19 }')
echo "# spin: $total samples for $spin_cpu CPU s (19 Hz: $expected); $chain of the $working in main with the chain at the leaf"
q "SELECT '#   not the chain: ' || sum(value) || ' x ' || coalesce(labels->>'unwind', '-') || ': ' || left(names, 300)
   FROM agent_stacks WHERE labels->>'pid' = '$spin_pid' AND NOT ($outside) AND NOT coalesce($spinning, false)
   GROUP BY labels->>'unwind', names ORDER BY sum(value) DESC LIMIT 5"
check "spin: samples match 19 Hz x CPU seconds" near_expected "$total" "$expected"
check "spin: every sample in main is spin;c;b;a;main" [ "$working" -gt 0 -a "$chain" = "$working" ]
check "spin: the chain ends at _start, not [truncated]" \
	[ "$(q "SELECT count(*) FROM agent_stacks WHERE labels->>'pid' = '$spin_pid'
	         AND names ~ '^spin;c;b;a;main;__libc_start_call_main;__libc_start_main[^;]*;_start\$'")" -gt 0 ]
# (the agent sees the whole machine: only this process's functions)
check_eq "spin: source file and line of spin()" "$TEST_ROOT/agent/workload.c:spin:48" \
	"$(q "SELECT DISTINCT f.filename || ':' || f.name || ':' || f.start_line
	      FROM agent_stacks s, unnest(parca_stack_location_ids(s.stack)) AS u(id)
	      JOIN parca.locations l ON l.id = u.id
	      JOIN parca.functions f ON f.id = ANY (l.function_ids)
	      WHERE s.labels->>'pid' = '$spin_pid' AND f.name = 'spin'")"

# PIE and ASLR: spin's addresses are stored as offsets in the file, with
# the file's build id.
read -r sym size <<<"$(nm -S "$tmp/workload" | awk '$4 == "spin" { print "0x" $1, "0x" $2 }')"
while read -r seg off va _ filesz _; do
	if [ "$seg" = LOAD ] && (( sym >= va && sym < va + filesz )); then
		spin_lo=$((sym - va + off))
		spin_hi=$((spin_lo + size))
	fi
done < <(readelf -lW "$tmp/workload")
build_id=$(readelf -n "$tmp/workload" | awk '/Build ID/ { print $3 }')
check_eq "PIE: spin's leaf addresses are file offsets inside spin, in the file's mapping" \
	"$tmp/workload|$build_id|t" \
	"$(q "SELECT DISTINCT m.file, m.build_id, bool_and(l.address >= $spin_lo AND l.address < $spin_hi)
	      FROM agent_stacks s JOIN parca.locations l ON l.id = (parca_stack_location_ids(s.stack))[1]
	      JOIN parca.mappings m ON m.id = l.mapping_id
	      WHERE s.labels->>'pid' = '$spin_pid' AND s.names LIKE 'spin;%' GROUP BY 1, 2")"
check "separate debug file: a stripped program's stacks are named" \
	[ "$(q "SELECT count(*) FROM agent_stacks WHERE labels->>'pid' = '$stripped_pid'
	         AND names LIKE 'spin;c;b;a;main%'")" -gt 0 ]
check_eq "separate debug file: with source file and line" "$TEST_ROOT/agent/workload.c:spin:48" \
	"$(q "SELECT DISTINCT f.filename || ':' || f.name || ':' || f.start_line
	      FROM agent_stacks s, unnest(parca_stack_location_ids(s.stack)) AS u(id)
	      JOIN parca.locations l ON l.id = u.id
	      JOIN parca.functions f ON f.id = ANY (l.function_ids)
	      WHERE s.labels->>'pid' = '$stripped_pid' AND f.name = 'spin'")"
check_eq "C++: names demangled, system names as in the symbol table" \
	"parca_test::Spinner::spin(int)|_ZN10parca_test7Spinner4spinEi" \
	"$(q "SELECT DISTINCT f.name || '|' || f.system_name
	      FROM agent_stacks s, unnest(parca_stack_location_ids(s.stack)) AS u(id)
	      JOIN parca.locations l ON l.id = u.id
	      JOIN parca.functions f ON f.id = ANY (l.function_ids)
	      WHERE s.labels->>'pid' = '$cpp_pid' AND f.system_name LIKE '_ZN10parca_test%'")"

sys_total=$(q "SELECT coalesce(sum(value), 0) FROM agent_stacks WHERE labels->>'pid' = '$sys_pid'")
sys_kernel=$(q "SELECT coalesce(sum(value), 0) FROM agent_stacks WHERE labels->>'pid' = '$sys_pid'
                AND leaf_file = '[kernel.kallsyms]' AND names ~ '^[^;]*;.*do_syscall_64;.*;spin;c;b;a;main'")
expected=$(awk -v c="$sys_cpu" 'BEGIN { printf "%.0f", c * 19 }')
echo "# syscall: $sys_total samples for $sys_cpu CPU s (19 Hz: $expected), $sys_kernel with kernel frames over spin;c;b;a;main"
check "syscall: samples match 19 Hz x CPU seconds" near_expected "$sys_total" "$expected"
# (reading 64 kB from /dev/zero is nearly all kernel time: well over half)
check "syscall: most samples have kernel frames (do_syscall_64...) above the user chain" \
	awk -v k="$sys_kernel" -v t="$sys_total" 'BEGIN { exit !(t > 0 && k >= 0.5 * t) }'
check "shared library: frames in libc.so.6 are named (getrusage)" \
	[ "$(q "SELECT count(*) FROM agent_stacks s, unnest(parca_stack_location_ids(s.stack)) AS u(id)
	        JOIN parca.locations l ON l.id = u.id JOIN parca.mappings m ON m.id = l.mapping_id
	        JOIN parca.functions f ON f.id = ANY (l.function_ids)
	        WHERE s.labels->>'pid' IN ('$sys_pid', '$spin_pid') AND m.file LIKE '%/libc.so.6'
	          AND f.name LIKE '%getrusage%'")" -gt 0 ]

# (the series of most samples: a sample between fork and exec has the
# shell's thread name)
labels=$(q "SELECT labels FROM agent_stacks WHERE labels->>'pid' = '$spin_pid'
            GROUP BY labels ORDER BY sum(value) DESC LIMIT 1")
echo "# labels: $labels"
check_eq "labels: comm, pid, executable, thread_name, node, kernel_release, external" \
	"workload|$spin_pid|$tmp/workload|workload|$node|$(uname -r)|agent|a \"b\"" \
	"$(q "SELECT l->>'comm', l->>'pid', l->>'executable', l->>'thread_name',
	       l->>'node', l->>'kernel_release', l->>'suite', l->>'quote'
	      FROM (SELECT '$labels'::jsonb AS l) x")"
check_eq "profile type and period" "$type|52631578" \
	"$(q "SELECT DISTINCT profile_type, period FROM agent_stacks WHERE labels->>'pid' = '$spin_pid'")"
check "duration: the flush windows, about 2 s" [ "$(q "SELECT percentile_cont(0.5) WITHIN GROUP
	(ORDER BY duration) BETWEEN 1.9e9 AND 2.6e9 AND min(duration) > 0 AND max(duration) < 4e9
	FROM (SELECT DISTINCT time, duration FROM agent_stacks) w")" = t ]
check_eq "kernel mapping carries the kernel's build id or release" 1 \
	"$(q "SELECT count(*) FROM parca.mappings WHERE file = '[kernel.kallsyms]' AND build_id <> ''")"
check_eq "every stored location id is registered" 0 \
	"$(q "SELECT count(*) FROM (SELECT DISTINCT unnest(parca_stack_location_ids(stack)) AS id
	      FROM parca.samples) s LEFT JOIN parca.locations l USING (id) WHERE l.id IS NULL")"
# The agent's COPY into parca.samples is routed by time: the maintenance
# worker, started when the extension was created, makes today's partition
# and moves what arrived before it from the default partition
check "the maintenance worker made the partition of the agent's day" \
	wait_for 60 "SELECT count(*) > 0 FROM parca.partitions WHERE now() >= range_start AND now() < range_end"
check "the agent's rows are in it, none left in the default partition" \
	wait_for 60 "SELECT count(*) = 0 FROM parca.samples_default"
check_eq "the agent's rows are all in partitions of their time" 0 \
	"$(q "SELECT count(*) FROM parca.samples s JOIN parca.partitions p ON p.partition = s.tableoid
	      WHERE NOT (s.time >= p.range_start AND s.time < p.range_end)")"

# --- the metastore collected while the agent writes: the rows the agent
# knows it has sent (spin's locations, functions, mapping) are removed with
# the samples that named them, and spin goes on; what the agent writes
# after must name them again (docs/ingestion.md, the collection's protocol)
q "TRUNCATE parca.samples" >/dev/null
"$agent" --dsn "$dsn" --flush-interval 1 2>"$tmp/agent_gc.log" &
agent_pid=$!
agent_sampling "$tmp/agent_gc.log"
"$tmp/workload" spin 8 >/dev/null &
spin_pid=$!
check "metastore GC: spin's chain stored before the collection" \
	wait_for 60 "SELECT count(*) > 0 FROM agent_stacks WHERE labels->>'pid' = '$spin_pid' AND $spinning"
q "TRUNCATE parca.samples" >/dev/null
collected=$(q "SELECT locations FROM parca_metastore_gc()")
check "metastore GC: the collection removed the agent's locations" [ "${collected:-0}" -gt 0 ]
wait $spin_pid
sleep 2
kill -INT $agent_pid
wait $agent_pid
check_eq "metastore GC: the agent exits cleanly" 0 $?
check "metastore GC: the agent noticed the collection" grep -q "metastore was collected" "$tmp/agent_gc.log"
check "metastore GC: spin's chain stored after the collection, named" \
	[ "$(q "SELECT count(*) FROM agent_stacks WHERE labels->>'pid' = '$spin_pid' AND $spinning")" -gt 0 ]
check_eq "metastore GC: every location of a row stored after it is registered" 0 \
	"$(q "SELECT count(*) FROM (SELECT DISTINCT unnest(parca_stack_location_ids(stack)) AS id
	      FROM parca.samples) s LEFT JOIN parca.locations l USING (id) WHERE l.id IS NULL")"
check_eq "metastore GC: and every function and mapping of those locations" 0 \
	"$(q "SELECT count(*) FROM (SELECT DISTINCT unnest(parca_stack_location_ids(stack)) AS id
	      FROM parca.samples) s JOIN parca.locations l USING (id)
	      WHERE (l.mapping_id IS NOT NULL AND NOT EXISTS (SELECT FROM parca.mappings m WHERE m.id = l.mapping_id))
	         OR EXISTS (SELECT FROM unnest(l.function_ids) f(id)
	                    WHERE NOT EXISTS (SELECT FROM parca.functions fn WHERE fn.id = f.id))")"

# --- PostgreSQL down for 30 s while the agent runs
q "TRUNCATE parca.samples" >/dev/null
"$agent" --dsn "$dsn" --flush-interval 2 2>"$tmp/agent2.log" &
agent_pid=$!
agent_sampling "$tmp/agent2.log"
"$tmp/workload" spin 40 >"$tmp/spin2.out" &
spin_pid=$!
sleep 6
runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGDATA_DIR/data" -m fast -w stop >/dev/null
echo "# PostgreSQL stopped at $(date -u +%T)"
sleep 30
if runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGDATA_DIR/data" -l "$PGDATA_DIR/log" -w start >/dev/null; then
	echo "# PostgreSQL started at $(date -u +%T)"
else
	echo "# PostgreSQL did not start again:"
	tail -5 "$PGDATA_DIR/log"
fi
wait $spin_pid
sleep 1
kill -TERM $agent_pid
wait $agent_pid
agent_status=$?
check_eq "the agent exits cleanly on SIGTERM with its backlog written" 0 $agent_status
[ $agent_status = 0 ] || grep -vE '^#' "$tmp/agent2.log" | tail -5 | sed 's/^/# /' || true
spin_cpu=$(cat "$tmp/spin2.out")
total=$(q "SELECT coalesce(sum(value), 0) FROM agent_stacks WHERE labels->>'pid' = '$spin_pid'")
expected=$(awk -v c="$spin_cpu" 'BEGIN { printf "%.0f", c * 19 }')
echo "# outage: $total samples for $spin_cpu CPU s (19 Hz: $expected)"
check "outage: the agent logged the failure and the recovery" \
	grep -q "writing again" "$tmp/agent2.log"
check "outage: samples of the whole run arrived (19 Hz x CPU s)" \
	near_expected "$total" "$expected"
check_eq "outage: no sample stored twice" 0 \
	"$(q "SELECT count(*) FROM (SELECT time, series_id, stack FROM parca.samples
	      GROUP BY 1, 2, 3 HAVING count(*) > 1) d")"
check "outage: batches cover the outage (a sample every 2 s or so)" \
	[ "$(q "SELECT count(DISTINCT time) FROM agent_stacks WHERE labels->>'pid' = '$spin_pid'")" -ge 15 ]

# --- a commit whose answer is lost is retried without storing twice
q "TRUNCATE parca.samples" >/dev/null
python3 "$TEST_ROOT/agent/lose_ack_proxy.py" "$proxy_port" "$port" 2 >"$tmp/proxy.log" &
proxy_pid=$!
sleep 0.5
"$agent" --dsn "host=127.0.0.1 port=$proxy_port user=agent_test dbname=postgres" \
	--flush-interval 1 2>"$tmp/agent3.log" &
agent_pid=$!
agent_sampling "$tmp/agent3.log"
"$tmp/workload" spin 10 >"$tmp/spin3.out" &
spin_pid=$!
wait $spin_pid
sleep 3
kill -TERM $agent_pid
wait $agent_pid
check "lost ack: the proxy lost the answer to a COMMIT" grep -q "lost the answer" "$tmp/proxy.log"
check "lost ack: the retry found the batch stored" grep -q "already stored" "$tmp/agent3.log"
total=$(q "SELECT coalesce(sum(value), 0) FROM agent_stacks WHERE labels->>'pid' = '$spin_pid'")
expected=$(awk -v c="$(cat "$tmp/spin3.out")" 'BEGIN { printf "%.0f", c * 19 }')
echo "# lost ack: $total samples, 19 Hz x CPU s = $expected"
check "lost ack: counts match 19 Hz x CPU seconds (nothing doubled)" \
	near_expected "$total" "$expected"
check_eq "lost ack: no sample stored twice" 0 \
	"$(q "SELECT count(*) FROM (SELECT time, series_id, stack FROM parca.samples
	      GROUP BY 1, 2, 3 HAVING count(*) > 1) d")"
kill "$proxy_pid" 2>/dev/null
proxy_pid=

# --- sslmode: a server with SSL, a DSN that requires it.  A busy program
# gives the agent samples to write: an idle machine (as in CI) has none.
openssl req -new -x509 -days 1 -nodes -subj /CN=localhost -keyout "$PGDATA_DIR/data/server.key" \
	-out "$PGDATA_DIR/data/server.crt" >/dev/null 2>&1
chown postgres: "$PGDATA_DIR/data/server.key" "$PGDATA_DIR/data/server.crt"
chmod 600 "$PGDATA_DIR/data/server.key"
q "ALTER SYSTEM SET ssl = on" >/dev/null
q "SELECT pg_reload_conf()" >/dev/null
sleep 1
q "TRUNCATE parca.samples" >/dev/null
"$tmp/workload" spin 3 >/dev/null &
spin_pid=$!
"$agent" --dsn "$dsn sslmode=require" --flush-interval 1 --duration 3 2>"$tmp/agent5.log"
status=$?
wait $spin_pid
check_eq "sslmode=require: the agent ran and wrote" 0 $status
check "sslmode=require: the connection used SSL" grep -q "as agent_test (SSL TLS" "$tmp/agent5.log"
check "sslmode=require: samples arrived" [ "$(q "SELECT count(*) FROM parca.samples")" -gt 0 ]

# --- a server that is not there, and a backlog bound that overflows.  As
# above, a busy program makes sure there are batches to write.
"$tmp/workload" spin 4 >/dev/null &
spin_pid=$!
"$agent" --dsn "host=127.0.0.1 port=$proxy_port connect_timeout=1" --flush-interval 0.5 \
	--duration 3 --buffer-size 1 2>"$tmp/agent4.log"
status=$?
wait $spin_pid
check_eq "unwritten batches at exit: status 1" 1 $status
check "cannot connect: said clearly" grep -q "cannot connect to PostgreSQL" "$tmp/agent4.log"
check "overflow: oldest batches dropped and counted" grep -q "dropped the 1 oldest" "$tmp/agent4.log"

# --- issue 18: off-CPU time, Go's scheduler stack, labels and relabeling,
# a compile loop.  (About 40 s, and the first build of the Go program.)
gcc -O0 -g -fno-omit-frame-pointer -o "$tmp/offcpu" "$TEST_ROOT/agent/offcpu.c" -lpthread
(cd "$TEST_ROOT/agent/gowork" && GOFLAGS=-mod=mod go build -o "$tmp/gowork" .) ||
	echo "# the Go program did not build"
off_type='parca_agent:off_cpu:nanoseconds:off_cpu:nanoseconds:delta'
# off_cpu PID CONDITION: the off-CPU nanoseconds of a process's stacks meeting CONDITION
off_cpu() {
	q "SELECT coalesce(sum(value), 0) FROM agent_stacks WHERE profile_type = '$off_type'
	   AND labels->>'pid' = '$1' AND ($2)"
}
# within PCT ACTUAL EXPECTED: |actual - expected| <= PCT% of expected
within() {
	awk -v p="$1" -v a="$2" -v e="$3" 'BEGIN { d = a - e; if (d < 0) d = -d; exit !(e > 0 && d <= p / 100 * e) }'
}

# sampling LOG: wait until the agent of LOG samples (agent_sampling: it
# says so if that takes more than a minute), then a second more: until
# its first adjustment, off-CPU sampling times one wait in 64.
sampling() {
	agent_sampling "$1"
	sleep 1
}

# Every wait timed (the rate bound far above this machine's waits), only
# the test's programs kept (--relabel keep).
q "TRUNCATE parca.samples" >/dev/null
"$agent" --dsn "$dsn" --flush-interval 1 --off-cpu --off-cpu-rate 1000000 \
	--relabel 'keep:comm=~offcpu|gowork' 2>"$tmp/agent6.log" &
agent_pid=$!
sampling "$tmp/agent6.log"
# 8 s: at 19 Hz, a Go program that gets half a core on a loaded machine
# still leaves well over the 10 g0 samples its check needs
GOMAXPROCS=1 "$tmp/gowork" 8 &
go_pid=$!
"$tmp/offcpu" sleep 100 10 >"$tmp/sleep.out" &
sleep_pid=$!
wait $sleep_pid
"$tmp/offcpu" read 100 10 >"$tmp/read.out" &
read_pid=$!
wait $read_pid
"$tmp/offcpu" tail 100 10 >"$tmp/tail.out" &
tail_pid=$!
wait $tail_pid
"$tmp/offcpu" threads 8 1 2 >/dev/null &
threads_pid=$!
wait $threads_pid $go_pid
sleep 1.5
kill -INT $agent_pid
wait $agent_pid
check_eq "--off-cpu: the agent exits cleanly" 0 $?

# The waits, measured by the program around each system call, against the
# off-CPU time of its stacks through the waiting function.  No sampling
# here (a wait is timed with probability 1), so the two differ only by the
# system call's entry and exit and the wake-up (microseconds per 10 ms
# wait): 10% is room for a loaded machine's scheduling delays.
read -r slept _ <"$tmp/sleep.out"
in_sleep=$(off_cpu "$sleep_pid" "names ~ 'nanosleep;(.*;)?wait_in_nanosleep;main;'")
echo "# off-CPU, nanosleep: $in_sleep ns in wait_in_nanosleep's stacks, $slept ns waited"
check "off-CPU: nanosleep's waits, through wait_in_nanosleep, add up to the time waited within 10%" \
	within 10 "$in_sleep" "$slept"
read -r read_waited _ <"$tmp/read.out"
in_read=$(off_cpu "$read_pid" "names ~ 'pipe_read;(.*;)?read;wait_in_read;main;'")
echo "# off-CPU, read: $in_read ns in wait_in_read's stacks (kernel: pipe_read), $read_waited ns waited"
check "off-CPU: read's waits on the pipe, through wait_in_read, add up to the time waited within 10%" \
	within 10 "$in_read" "$read_waited"
# The system call is the last instruction nanosleep_at_cfi_end's CFI
# covers: its return address is outside, and only a lookup of the call
# itself finds the caller (a frame-pointer guess skips wait_in_tail).
read -r tail_waited _ <"$tmp/tail.out"
in_tail=$(off_cpu "$tail_pid" "names ~ 'nanosleep_at_cfi_end;wait_in_tail;main;'")
echo "# off-CPU, a system call at the end of its CFI: $in_tail ns through nanosleep_at_cfi_end;wait_in_tail;main, $tail_waited ns waited"
check "off-CPU: a wait in a system call that ends its function's CFI unwinds through its caller, within 10%" \
	within 10 "$in_tail" "$tail_waited"
check_eq "off-CPU: the profile type's period is one nanosecond" "1" \
	"$(q "SELECT DISTINCT period FROM agent_stacks WHERE profile_type = '$off_type'")"

# Labels: every sample a thread's and a CPU's.
check "labels: a thread_id per thread (8 waiting threads and the main one)" \
	[ "$(q "SELECT count(DISTINCT labels->>'thread_id') FROM agent_stacks
	         WHERE labels->>'pid' = '$threads_pid'")" -ge 8 ]
check_eq "labels: cpu is a CPU's number on every sample" 0 \
	"$(q "SELECT count(*) FROM agent_stacks WHERE coalesce(labels->>'cpu', '') !~ '^[0-9]+$'
	      OR CASE WHEN labels->>'cpu' ~ '^[0-9]+$' THEN (labels->>'cpu')::int >= $(nproc --all) END")"
check_eq "--relabel keep: only the kept programs' series" "gowork,offcpu" \
	"$(q "SELECT string_agg(DISTINCT labels->>'comm', ',' ORDER BY labels->>'comm') FROM agent_stacks")"
check "--relabel keep: the log counts the samples dropped" \
	grep -Eq "[1-9][0-9]* dropped by rules" "$tmp/agent6.log"

# Go: samples on the scheduler's stack (g0), under runtime.systemstack
# (ReadMemStats) or runtime.mcall (Gosched), go on to the goroutine's stack
# down to main.main.  Some g0 samples belong to no goroutine of main's
# (the garbage collector's workers, sysmon's preemptions), hence 80%.
g0=$(q "SELECT coalesce(sum(value), 0) FROM agent_stacks WHERE profile_type = '$type'
        AND labels->>'pid' = '$go_pid' AND names ~ 'runtime\.(systemstack|mcall)'")
g0_main=$(q "SELECT coalesce(sum(value), 0) FROM agent_stacks WHERE profile_type = '$type'
             AND labels->>'pid' = '$go_pid'
             AND names ~ 'runtime\.(systemstack|mcall)[^;]*;.*;main\.main;runtime\.main;runtime\.goexit'")
echo "# Go: $g0_main of $g0 samples on g0 reach main.main"
check "Go: >= 80% of the samples on g0 (systemstack, mcall) unwind to main.main" \
	awk -v a="$g0_main" -v t="$g0" 'BEGIN { exit !(t >= 10 && a >= 0.8 * t) }'
check "Go: both systemstack (ReadMemStats) and mcall (Gosched) reach main.main" \
	[ "$(q "SELECT count(DISTINCT substring(names from 'runtime\.(systemstack|mcall)'))
	        FROM agent_stacks WHERE labels->>'pid' = '$go_pid'
	        AND names ~ 'main\.(readStats|yield);main\.main'")" = 2 ]

# Sampled off-CPU: a bound of 100 samples a second per CPU, against 8
# threads waiting ~450 times a second each (and the machine's own waits),
# so a wait is timed with a probability p well below 1.  Each sampled wait
# counts 1/p times, so the sum estimates the time waited; its relative
# standard error for n waits is sqrt((1 - p) / (n p)): the expectation is
# 10% plus 4 standard errors, with p the smallest the agent logged.
q "TRUNCATE parca.samples" >/dev/null
"$agent" --dsn "$dsn" --flush-interval 1 --off-cpu --off-cpu-rate 100 --verbose \
	--relabel 'keep:comm=~offcpu' 2>"$tmp/agent7.log" &
agent_pid=$!
sampling "$tmp/agent7.log"
"$tmp/offcpu" threads 8 3 2 >"$tmp/threads.out" &
threads_pid=$!
wait $threads_pid
sleep 1.5
kill -INT $agent_pid
wait $agent_pid
read -r waited nwaits <"$tmp/threads.out"
estimate=$(off_cpu "$threads_pid" "names ~ 'wait_in_threads'")
p=$(grep -o "probability [0-9.e-]*" "$tmp/agent7.log" | awk '{ print $2 }' | sort -g | head -1)
sent=$(grep -o "off-CPU: [0-9]* waits of [0-9]* sampled ([0-9]* sent)" "$tmp/agent7.log" | tail -1 |
	awk -F'[ (]' '{ print $(NF - 1) }')
tolerance=$(awk -v p="$p" -v n="$nwaits" 'BEGIN { printf "%.1f", 10 + 400 * sqrt((1 - p) / (n * p)) }')
echo "# sampled off-CPU: $estimate ns estimated, $waited ns waited in $nwaits waits; p >= $p, tolerance $tolerance%; $sent samples sent"
check "sampled off-CPU: the estimate is within 10% + 4 standard errors of the time waited" \
	within "$tolerance" "$estimate" "$waited"
check "sampled off-CPU: the rate bound held (fewer samples sent than a third of the program's waits)" \
	awk -v s="$sent" -v n="$nwaits" 'BEGIN { exit !(s > 0 && s < n / 3) }'

# --- issue 15: a Go program's frames from its .gopclntab: function, file,
# line and inlined calls.  gohot, built without DWARF and symbols
# (-ldflags='-s -w'), writes its own CPU profile (the runtime names it from
# the same table) while the agent samples it: every location both have
# must have the same frames.  Each samples on its own, so only the hot
# loop's instructions (about a dozen, 3/4 of the time in main.mix, inlined
# into main.spin) are sure to be in both: 3 of them, at least one inlined,
# out of the 30 or more samples 4 s give at 19 Hz even at half a core.
(cd "$TEST_ROOT/agent/gohot" && GOFLAGS=-mod=mod go build -ldflags='-s -w' -o "$tmp/gohot" .) ||
	echo "# the Go program did not build"
"$agent" --dsn "$dsn" --flush-interval 1 --relabel 'keep:comm=~gohot' 2>"$tmp/agent_go.log" &
agent_pid=$!
sampling "$tmp/agent_go.log"
"$tmp/gohot" 4 "$tmp/gohot.prof"
sleep 1.5
kill -INT $agent_pid
wait $agent_pid
psql -X -qAt -F $'\t' -c "
	SELECT l.address, coalesce(u.pos, 0), coalesce(f.system_name, ''),
	       coalesce(f.filename, ''), coalesce(u.line, 0)
	FROM parca.locations l JOIN parca.mappings m ON m.id = l.mapping_id
	LEFT JOIN LATERAL unnest(l.function_ids, l.line_numbers) WITH ORDINALITY AS u(fid, line, pos) ON true
	LEFT JOIN parca.functions f ON f.id = u.fid
	WHERE m.file = '$tmp/gohot' ORDER BY 1, 2" >"$tmp/gohot.tsv"
out=$(python3 "$TEST_ROOT/symbolize/pprof_frames.py" --min 3 "$tmp/gohot.prof" "$tmp/gohot.tsv")
status=$?
echo "# Go frames: $(echo "$out" | tail -1)"
[ $status = 0 ] || echo "$out" | head -10 | sed 's/^/# /'
check "Go without DWARF: the agent's frames (function, file, line, inlined calls) are those of the program's own profile" \
	[ $status = 0 ]

# --- issue 15: debug information that arrives after the samples.  A
# stripped program whose debug file is not on this machine: its frames are
# stored unnamed; the debug file uploaded by SQL names them, for the
# samples stored before and for those stored after.  Both runs spin in
# spin;c;b;a;main all the time but for start-up and exit (the unstripped
# workload's spin check above finds every sample in main so), hence 80%;
# 2 s of CPU at 19 Hz give 38 samples, 10 with room for the ring's losses.
late_id=$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')
gcc -O0 -g -fno-omit-frame-pointer -Wl,--build-id=0x$late_id -o "$tmp/late" "$TEST_ROOT/agent/workload.c"
objcopy --only-keep-debug "$tmp/late" "$tmp/late.debug"
strip --strip-all "$tmp/late"
chmod 644 "$tmp/late.debug"
# spin_under_agent PROGRAM LOG [AGENT OPTIONS...]: PROGRAM spinning 2 s
# while the agent samples it (its programs only); prints PROGRAM's pid
spin_under_agent() {
	local prog=$1 log=$2 apid pid
	shift 2
	"$agent" --dsn "$dsn" --flush-interval 1 --relabel "keep:comm=~^${prog##*/}\$" "$@" \
		>/dev/null 2>"$log" &
	apid=$!
	sampling "$log"
	"$prog" spin 2 >/dev/null &
	pid=$!
	wait $pid
	sleep 1.5
	kill -INT $apid
	wait $apid
	echo "$pid $?"
}
# in_spin PID: "N of M": PID's samples through spin;c;b;a;main, of all
# (a row counts value samples)
in_spin() {
	q "SELECT coalesce(sum(value) FILTER (WHERE user_names ~ '(^|;)spin;c;b;a;main;'), 0) || ' of ' ||
	          coalesce(sum(value), 0)
	   FROM agent_stacks WHERE labels->>'pid' = '$1' AND profile_type = '$type'"
}
mostly() {
	awk -v n="$1" -v m="$3" 'BEGIN { exit !(m >= 10 && n >= 0.8 * m) }'
}
unnamed_in() {
	q "SELECT count(*) FROM parca.locations l JOIN parca.mappings m ON m.id = l.mapping_id
	   WHERE m.build_id = '$1' AND cardinality(l.function_ids) = 0"
}
read -r before_pid _ < <(spin_under_agent "$tmp/late" "$tmp/agent_late1.log")
read -r spun _ all < <(in_spin "$before_pid")
before_unnamed=$(unnamed_in "$late_id")
echo "# late debug information, before: $spun of $all samples named spin;c;b;a;main, $before_unnamed locations unnamed"
check "late debug information: first the stripped program's frames are stored unnamed" \
	test "$spun" = 0 -a "$all" -ge 10 -a "$before_unnamed" -gt 0
chmod 755 "$tmp"
named=$(q "SELECT parca_debuginfo_upload('$late_id', pg_read_binary_file('$tmp/late.debug'))")
check_eq "late debug information: the upload names every unnamed location" \
	"$before_unnamed 0" "$named $(unnamed_in "$late_id")"
read -r spun _ all < <(in_spin "$before_pid")
echo "# late debug information, samples stored before: $spun of $all through spin;c;b;a;main"
check "late debug information: the samples stored before are named (>= 80% spin;c;b;a;main)" \
	mostly "$spun" of "$all"
read -r after_pid _ < <(spin_under_agent "$tmp/late" "$tmp/agent_late2.log")
read -r spun _ all < <(in_spin "$after_pid")
echo "# late debug information, samples stored after: $spun of $all through spin;c;b;a;main"
check "late debug information: the samples stored after are named too (>= 80% spin;c;b;a;main)" \
	mostly "$spun" of "$all"
# addresses first seen in the second run arrive unnamed; the symbolizer
# worker names them at its next round (parca.symbolize_interval, 10 s)
wait_for 60 "SELECT count(*) = 0 FROM parca.locations l JOIN parca.mappings m ON m.id = l.mapping_id
             WHERE m.build_id = '$late_id' AND cardinality(l.function_ids) = 0"
check_eq "late debug information: locations first stored after the upload are named by the worker" \
	0 "$(unnamed_in "$late_id")"

# --upload-debuginfo: the stripped program whose debug file is on this
# machine (by build id).  Without parca_debuginfo the upload fails, logged
# and not fatal; with it the agent uploads the debug file once; when the
# database has it, not again.
uploaded_line="uploaded the debug information of build id $stripped_id"
read -r pid status < <(spin_under_agent "$tmp/stripped" "$tmp/agent_up1.log" --upload-debuginfo)
check "--upload-debuginfo without parca_debuginfo: the failure is logged" \
	grep -q "uploading debug information failed.*permission denied" "$tmp/agent_up1.log"
check "--upload-debuginfo without parca_debuginfo: the agent runs on, writes and exits cleanly" \
	test "$status" = 0 -a "$(q "SELECT count(*) FROM agent_stacks WHERE labels->>'pid' = '$pid'")" -gt 0
q "GRANT parca_debuginfo TO agent_test" >/dev/null
read -r pid status < <(spin_under_agent "$tmp/stripped" "$tmp/agent_up2.log" --upload-debuginfo)
check_eq "--upload-debuginfo: the debug file is uploaded once" 1 \
	"$(grep -c "$uploaded_line" "$tmp/agent_up2.log")"
check_eq "--upload-debuginfo: the database holds the debug file" "upload $(stat -c %s "$debug_file")" \
	"$(q "SELECT source || ' ' || octet_length(elf) FROM parca.debuginfo WHERE build_id = '$stripped_id'")"
read -r pid status < <(spin_under_agent "$tmp/stripped" "$tmp/agent_up3.log" --upload-debuginfo)
check_eq "--upload-debuginfo: not again once the database has it" "0 0" \
	"$status $(grep -c "$uploaded_line" "$tmp/agent_up3.log")"
q "REVOKE parca_debuginfo FROM agent_test" >/dev/null

# A compile loop, per-process and per-thread labels dropped: gcc, cc1 and
# as are there with whole stacks, and their series are bounded by the
# labels left (name, executable, cgroup, CPU, unwind outcome), not by the
# hundreds of processes.  A compile of a small file leaves gcc and as a
# few milliseconds each (a sample in ten compiles at 19 Hz), so each round
# also assembles a larger file (as: 60-90 ms) and has gcc read 4,000
# macro definitions and print the commands it would run (driver work
# alone, about 0.1 s).  Other programs of this machine may be compilers
# too: the loop's cgroup is this script's, named as the agent names it
# (the unified hierarchy's path unless it is the root, else the named
# systemd hierarchy's, else the first other one).
awk 'BEGIN { for (i = 0; i < 400; i++)
	printf "int f%d(int x) { int s = 0; for (int j = 0; j < x; j++) s += j * %d ^ (s >> 3); return s; }\n", i, i }' \
	>"$tmp/big.c"
gcc -O2 -g -S -o "$tmp/big.s" "$tmp/big.c"
defines=$(seq -f "-DMACRO_%g=1" 4000)
own_cgroup=$(awk -F: '$3 != "/" {
	rank = ($1 == "0" && $2 == "") ? 3 : ($2 == "name=systemd" ? 2 : 1)
	if (rank > best) { best = rank; path = $3 } } END { print path }' /proc/self/cgroup)
q "TRUNCATE parca.samples" >/dev/null
"$agent" --dsn "$dsn" --flush-interval 2 --label-drop=pid,thread_id 2>"$tmp/agent8.log" &
agent_pid=$!
sampling "$tmp/agent8.log"
loops=()
for i in 1 2; do
	(end=$((SECONDS + 8))
	 while [ $SECONDS -lt $end ]; do
		gcc -O2 -g -c -o "$tmp/compiled$i.o" "$TEST_ROOT/agent/workload.c"
		as -o "$tmp/big$i.o" "$tmp/big.s"
		gcc -### -c -x c /dev/null $defines >/dev/null 2>&1
		echo >>"$tmp/rounds"
	 done) &
	loops+=($!)
done
wait "${loops[@]}"
sleep 1
kill -INT $agent_pid
wait $agent_pid
grep -o "done: [0-9]* samples.*lost in a full ring buffer" "$tmp/agent8.log" | sed 's/^/# compile loop: /'
q "SELECT labels->>'comm', labels->>'cgroup', sum(value) FROM agent_stacks
   WHERE labels->>'comm' IN ('gcc', 'cc1', 'as') GROUP BY 1, 2" | sed 's/^/#   /'
ours="coalesce(labels->>'cgroup', '') = '$own_cgroup'"
check_eq "compile loop: no series has a pid or thread_id label" 0 \
	"$(q "SELECT count(*) FROM agent_stacks WHERE labels ? 'pid' OR labels ? 'thread_id'")"
for comm in gcc cc1 as; do
	n=$(q "SELECT coalesce(sum(value), 0) FROM agent_stacks WHERE labels->>'comm' = '$comm' AND $ours")
	whole=$(q "SELECT coalesce(sum(value), 0) FROM agent_stacks WHERE labels->>'comm' = '$comm' AND $ours
	           AND labels->>'unwind' = 'complete'")
	echo "# compile loop, $comm: $whole of $n samples with complete stacks"
	check "compile loop: $comm's samples are there, with complete stacks" [ "$whole" -gt 0 ]
done
# Whole means down to the program's _start (or the dynamic linker's,
# in its start-up); a process that exits before its mappings are looked
# up cannot be unwound, which a loaded machine's scheduling delays make
# happen, hence 70%.
n=$(q "SELECT coalesce(sum(value), 0) FROM agent_stacks WHERE labels->>'comm' IN ('gcc', 'cc1', 'as')
       AND labels ? 'unwind' AND $ours")
whole=$(q "SELECT coalesce(sum(value), 0) FROM agent_stacks WHERE labels->>'comm' IN ('gcc', 'cc1', 'as')
           AND labels->>'unwind' = 'complete' AND $ours")
check "compile loop: >= 70% of the compilers' user stacks are complete" \
	awk -v a="$whole" -v t="$n" 'BEGIN { exit !(t > 0 && a >= 0.7 * t) }'
rounds=$(wc -l <"$tmp/rounds")
series=$(q "SELECT count(DISTINCT series_id) FROM agent_stacks
            WHERE labels->>'comm' IN ('gcc', 'cc1', 'as') AND $ours")
echo "# compile loop: $rounds rounds ($((4 * rounds)) processes and more), $series series for gcc, cc1 and as"
check "compile loop: the compilers' series stay within 3 names x CPUs x 3 outcomes" \
	[ "$series" -le $((3 * $(nproc --all) * 3)) ]


# --- names that are not UTF-8: a program whose symbol for spin() is
# "sp\xffin" (no DWARF: the symbol table names it) and whose file name,
# hence comm, ends in \xfe, and a label value in Latin-1.  The agent
# repairs them as the extension repairs text (each bad byte becomes
# U+FFFD) before computing ids, so the batch is stored (the server accepts
# only valid text) and the function's id is the one the server computes
# for the repaired name (parca_store_functions checks).
bad_comm=$'bad\xfe'
gcc -O0 -fno-omit-frame-pointer -o "$tmp/plain" "$TEST_ROOT/agent/workload.c"
objcopy --redefine-sym spin=$'sp\xffin' "$tmp/plain" "$tmp/$bad_comm"
"$agent" --dsn "$dsn" --flush-interval 1 --label suite=utf8 --label $'latin1=caf\xe9' \
	2>"$tmp/agent9.log" &
agent_pid=$!
agent_sampling "$tmp/agent9.log"
"$tmp/$bad_comm" spin 2 >/dev/null
sleep 1
kill -INT $agent_pid
wait $agent_pid
check_eq "not UTF-8: the agent wrote everything" 0 $?
check "not UTF-8: no batch failed" sh -c "! grep -q 'writing a batch failed' '$tmp/agent9.log'"
check "not UTF-8: the symbol's name is stored repaired" \
	[ "$(q "SELECT count(*) FROM parca.functions WHERE name = E'sp\\uFFFDin'")" = 1 ]
check "not UTF-8: the label value is stored repaired" \
	[ "$(q "SELECT count(*) FROM parca.series WHERE labels->>'suite' = 'utf8'
	         AND labels->>'latin1' = E'caf\\uFFFD'")" -gt 0 ]
check "not UTF-8: the program's samples are there, under the repaired name" \
	[ "$(q "SELECT coalesce(sum(value), 0) FROM agent_stacks
	         WHERE labels->>'suite' = 'utf8' AND user_names ~ E'(^|;)sp\\uFFFDin;c;b;a;main;'")" -gt 0 ]
# (its comm, repaired too, unless the agent first saw the process as the
# shell that forked it)
q "SELECT '#   ' || sum(value) || ' samples of the program under comm ' || coalesce(labels->>'comm', '-')
   FROM agent_stacks WHERE labels->>'suite' = 'utf8' AND user_names ~ E'(^|;)sp\\uFFFDin;'
   GROUP BY labels->>'comm'"

# --- the write protocol's version, checked at connect: a database that
# speaks another version, then one older than the protocol, gets nothing
# written, and the log says why
q "CREATE OR REPLACE FUNCTION parca_write_protocol() RETURNS integer LANGUAGE sql AS 'SELECT 99'"
before=$(q "SELECT count(*) FROM parca.samples")
# (a workload, so that there are samples to write)
"$tmp/workload" spin 3 >/dev/null &
"$agent" --dsn "$dsn" --flush-interval 1 --duration 3 2>"$tmp/agent10.log"
check_eq "another protocol: batches left unwritten (exit status 1)" 1 $?
check "another protocol: said clearly" grep -q "speaks write protocol 99, this agent 1: refusing to write" "$tmp/agent10.log"
check_eq "another protocol: nothing stored" "$before" "$(q "SELECT count(*) FROM parca.samples")"
q "ALTER EXTENSION parca DROP FUNCTION parca_write_protocol(); DROP FUNCTION parca_write_protocol()"
"$tmp/workload" spin 3 >/dev/null &
"$agent" --dsn "$dsn" --flush-interval 1 --duration 3 2>"$tmp/agent11.log"
check_eq "an older extension: batches left unwritten (exit status 1)" 1 $?
check "an older extension: said to run ALTER EXTENSION parca UPDATE" \
	grep -q "older than this agent.*run ALTER EXTENSION parca UPDATE" "$tmp/agent11.log"
check_eq "an older extension: nothing stored" "$before" "$(q "SELECT count(*) FROM parca.samples")"

finish
