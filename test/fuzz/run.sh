#!/usr/bin/env bash
# Hostile arguments as large as parca.max_profile_size: every function of
# the extension, each text, bytea, jsonb and array argument in turn
# (test/fuzz/calls.sql: long runs of one character, random characters,
# selectors with a huge value, too many matchers, huge regexes, deep
# nesting...), each call in a backend of its own, which must
#  - end in time: within 10 s + 2 s per MB of the argument
#    (statement_timeout).  Every function is linear in its input or
#    refuses it early: a pass over a MB takes milliseconds, so the bound
#    leaves a hundredfold for a loaded machine, while a quadratic pass over
#    16 MB would take hours;
#  - stay within memory: the backend's peak (VmHWM, reset through
#    /proc/self/clear_refs before the statement) may grow by what making
#    the argument alone makes it grow (the same expression without the
#    call, in a backend of its own: PostgreSQL holds such a value 2 to 4
#    times) plus 32 MB plus 8 bytes per byte of the argument.  A function
#    may hold it some seven times more: its own copy (a C string), the
#    parsed value (a profile type: the string and its fields), an SQL
#    statement's parameter and the planner's constant of it, the copy of a
#    call the planner rewrites (parca_series_ids in FROM), and an SQL or
#    PL/pgSQL function passes it on through statements of its own.  32 MB
#    is what a first call may cost before any argument (caches, plans, a
#    regex compiled up to its size limit).  What grows faster fails: the
#    selectors of issue 25 took 15 times a 50 MB value, and 200 times 15 MB
#    of matchers;
#  - answer with a short error, if any: message, detail, hint and context
#    together at most 16 kB (messages quote 64 characters of an argument;
#    a context may show the extension's own SQL statements);
#  - not be an internal error (SQLSTATE XX...; but XX001, data_corrupted,
#    is what parca_ingest_pprof documents for a pprof it cannot decode:
#    docs/ingestion.md), and not crash the server.
# PARCA_FUZZ_MAX_MB (default 16) sets parca.max_profile_size and the size;
# PARCA_FUZZ_FUNCTIONS (a regular expression) keeps the functions it
# matches.  About 15 minutes at 16 on a busy 2-core machine.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
require_fixtures

MAX_MB=${PARCA_FUZZ_MAX_MB:-16}
# (JIT compiles a costly plan in 0.1 to 1 s and 50 to 100 MB, whatever its
# arguments: what is measured here is what the arguments cost)
start_cluster "${PARCA_FUZZ_TEST_PORT:-54485}" "parca.max_profile_size = '${MAX_MB}MB'" "jit = off"
tmp=$(mktemp -d /tmp/parca-fuzz-test.XXXXXX)
chmod 755 "$tmp"
trap 'stop_cluster; [ -n "${PARCA_FUZZ_KEEP:-}" ] || rm -rf "$tmp"' EXIT

cp "$SHARED_TESTDATA/pprof/parca/profile1.pb.gz" "$tmp/"
chmod 644 "$tmp/profile1.pb.gz"
q "SELECT parca_ingest_pprof(pg_read_binary_file('$tmp/profile1.pb.gz'), 'fuzz', '{\"job\": \"fuzz\"}')" >/dev/null
started=$(q "SELECT pg_postmaster_start_time()")
psql -X -q -v ON_ERROR_STOP=1 -v bytes=$((MAX_MB * 1024 * 1024)) -f "$TEST_ROOT/fuzz/calls.sql" >/dev/null ||
	{ echo "FAIL - test/fuzz/calls.sql"; exit 1; }
q "DELETE FROM fuzz.calls WHERE fn !~ '${PARCA_FUZZ_FUNCTIONS:-.}'" >/dev/null
echo "# $(q "SELECT count(*) FROM fuzz.calls") calls of $(q "SELECT count(DISTINCT fn) FROM fuzz.calls") functions, arguments of $MAX_MB MB"

# Each statement in a backend of its own: one psql reconnects (\c) for
# each, prints "TABLE N peak_growth_kB ms" after it, and marks on stderr
# where its errors start.
script() { # script TABLE N...: the psql script that runs statements N... of fuzz.TABLE
	local t=$1 n
	shift
	for n in "$@"; do
		cat <<EOF
\c
\warn @@ $t $n
SELECT call FROM fuzz.$t WHERE n = $n \gset
COPY (SELECT 5) TO '/proc/self/clear_refs';
SELECT substring(pg_read_file('/proc/self/status') from 'VmRSS:\s+(\d+)') AS rss0,
       clock_timestamp() AS t0 \gset
BEGIN;
SET LOCAL statement_timeout = $((10000 + 2000 * MAX_MB));
\o /dev/null
:call;
\o
ROLLBACK;
SELECT '$t', $n, substring(pg_read_file('/proc/self/status') from 'VmHWM:\s+(\d+)')::bigint - :rss0,
       (extract(epoch FROM clock_timestamp() - :'t0') * 1000)::bigint;
EOF
	done
}
{
	script baselines $(q "SELECT n FROM fuzz.baselines WHERE (kind, type) IN (SELECT kind, type FROM fuzz.calls) ORDER BY n")
	script calls $(q "SELECT n FROM fuzz.calls ORDER BY n")
} | psql -X -qAt -F ' ' -v VERBOSITY=verbose >"$tmp/measured" 2>"$tmp/errors"
# per statement: the bytes of its errors and the SQLSTATE of the first
# (a verbose message starts with it); then "TABLE N grew_kB ms bytes state"
awk '/^@@ / { k = $2 " " $3; bytes[k] = 0; state[k] = "ok"; next }
     k != "" { bytes[k] += length($0) + 1 }
     k != "" && state[k] == "ok" && match($0, /^ERROR:  [0-9A-Z][0-9A-Z][0-9A-Z][0-9A-Z][0-9A-Z]:/) {
         state[k] = substr($0, 9, 5) }
     END { for (k in bytes) print k, bytes[k], state[k] }' "$tmp/errors" >"$tmp/errs"
awk 'NR == FNR { m[$1 " " $2] = $3 " " $4; next }
     { print $1, $2, ($1 " " $2 in m) ? m[$1 " " $2] : "- -", $3, $4 }' "$tmp/measured" "$tmp/errs" >"$tmp/results"
chmod 644 "$tmp/results"
q "CREATE TABLE fuzz.results (tbl text, n bigint, grew_kb bigint, ms bigint, err_bytes bigint, state text)"
q "COPY fuzz.results FROM '$tmp/results' WITH (DELIMITER ' ', NULL '-')" >/dev/null
q "CREATE VIEW fuzz.outcomes AS
   SELECT c.*, r.grew_kb, r.ms, r.err_bytes, r.state, b.grew_kb AS argument_kb
   FROM fuzz.calls c LEFT JOIN fuzz.results r ON r.tbl = 'calls' AND r.n = c.n
   LEFT JOIN fuzz.baselines bl ON (bl.kind, bl.type) = (c.kind, c.type)
   LEFT JOIN fuzz.results b ON b.tbl = 'baselines' AND b.n = bl.n" >/dev/null

# outcomes CONDITION: how many calls meet it, and (on stderr) up to 20 of them
outcomes() {
	q "SELECT fn || ' arg ' || arg || ' ' || kind || ': grew ' || coalesce(grew_kb::text, '-')
	          || ' kB (the argument alone ' || coalesce(argument_kb::text, '-') || '), '
	          || coalesce(ms::text, '-') || ' ms, error of ' || coalesce(err_bytes::text, '-') || ' bytes, '
	          || coalesce(state, '-')
	   FROM fuzz.outcomes WHERE $1 ORDER BY n" | sed 's/^/#   /' | head -20 >&2
	q "SELECT count(*) FROM fuzz.outcomes WHERE $1"
}
check_eq "the calls were made (every function with such an argument, each kind)" 0 \
	"$(outcomes "grew_kb IS NULL OR argument_kb IS NULL")"
check_eq "every call within its memory bound" 0 \
	"$(outcomes "grew_kb > argument_kb + 32768 + 8 * bytes / 1024")"
check_eq "every call within its time bound" 0 "$(outcomes "state = '57014'")"
check_eq "every error short" 0 "$(outcomes "err_bytes > 16384")"
check_eq "no internal error" 0 "$(outcomes "state LIKE 'XX%' AND NOT (state = 'XX001' AND fn LIKE 'parca_ingest_pprof(%' AND arg = 1)")"
check_eq "the same server" "$started" "$(q "SELECT pg_postmaster_start_time()")"

# --- Selectors at their limits, under a statement_timeout ------------------
# timed SQL: "SQLSTATE seconds peak_growth_kB" of SQL (one statement) in a
# new backend with a statement_timeout of 1 s
timed() {
	psql -X -qAt -v VERBOSITY=verbose 2>"$tmp/timed.err" <<EOF
COPY (SELECT 5) TO '/proc/self/clear_refs';
SELECT substring(pg_read_file('/proc/self/status') from 'VmRSS:\s+(\d+)') AS rss0, clock_timestamp() AS t0 \gset
SET statement_timeout = '1s';
\o /dev/null
$1;
\o
RESET statement_timeout;
SELECT extract(epoch FROM clock_timestamp() - :'t0')::numeric(10, 1),
       substring(pg_read_file('/proc/self/status') from 'VmHWM:\s+(\d+)')::bigint - :rss0;
EOF
}
state() { sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p' "$tmp/timed.err" | head -1; }
# The issue's selector of a million matchers (15 MB of text) took a
# backend to 3.3 GB and was cancelled 12 s after its 5 s statement_timeout:
# now refused at its 65th matcher, at once, before the rest is read.
read -r secs kb <<<"$(timed "SELECT parca_series_ids('{' || repeat('job=\"fuzz\", ', 1000000) || '}')" | tr '|' ' ')"
echo "# a million matchers: $(state) after $secs s, peak grew by $kb kB"
check_eq "a million matchers: refused by the limit" "54000" "$(state)"
check "before the timeout, in the memory of its text and little more (32 MB)" \
	awk -v s="$secs" -v kb="$kb" 'BEGIN { exit !(s < 1 && kb < 3 * 15 * 1024 + 32768) }'
# What the limits let through may still take long: a regex of 16 kB (an
# alternation of 800 patterns) that is not a list of literal values (those
# are looked up in the series index's keys, a regex compiled and no value
# matched) is matched against every value of the label in
# parca.label_values, some 0.2 to 0.3 ms a value on a 2-core machine when
# each value follows one of the patterns for a while: over 200,000 values
# 35 to 55 s, many times the timeout and its 4 s of slack, so that only a
# scan that checks for interrupts can pass.
# A statement_timeout cancels it: the executor checks for interrupts at
# each value, PostgreSQL's regex engine within a match, the selector's
# parser at each character.  The cancel must come within 4 s of the
# timeout (a loaded machine may keep a process off the CPU that long).
q "INSERT INTO parca.series (profile_type, labels)
   SELECT 'slow:a:b:c:d', jsonb_build_object('job', 'v' || (g % 800) || 'abcdefghijkX' || g)
   FROM generate_series(1, 200000) g" >/dev/null
regex="(SELECT string_agg('v' || k || 'abcdefghijkl.*', '|') FROM generate_series(1, 800) k)"
read -r secs kb <<<"$(timed "SELECT parca_series_ids('slow:a:b:c:d{job=~\"' || $regex || '\"}')" | tr '|' ' ')"
echo "# 200,000 series against a regex of 16 kB: $(state) after $secs s"
check_eq "a long selector evaluation: cancelled by the statement_timeout" "57014" "$(state)"
check "within 4 s of it" awk -v s="$secs" 'BEGIN { exit !(s < 1 + 4) }'
read -r secs kb <<<"$(timed "SELECT parca_query('slow:a:b:c:d{job=~\"' || $regex || '\"}', '-infinity', 'infinity',
                                                   group_by => '{job}')" | tr '|' ' ')"
check_eq "so is parca_query's" "57014" "$(state)"
check "within 4 s of it too" awk -v s="$secs" 'BEGIN { exit !(s < 1 + 4) }' 
q "SELECT '# most memory beyond the argument''s: ' || fn || ' arg ' || arg || ' ' || kind || ', '
          || grew_kb - argument_kb || ' kB; slowest: '
          || (SELECT fn || ' arg ' || arg || ' ' || kind || ', ' || ms || ' ms' FROM fuzz.outcomes
              ORDER BY ms DESC NULLS LAST LIMIT 1)
   FROM fuzz.outcomes ORDER BY grew_kb - argument_kb DESC NULLS LAST LIMIT 1"

finish
