#!/usr/bin/env bash
# The views of docs/query.md ("More views") on google-pprof/large.cpu
# (20,430 distinct stacks), each next to go tool pprof producing the same
# view from the same file:
#   - listing the profiles of a selector (BENCH_VIEWS_COPIES copies of
#     large.cpu, default 10, 10 s apart in one series) and opening one
#     (parca_profile), against go tool pprof -proto reading and writing it;
#   - a function over time: flat/cum of main.next per 10 s over those
#     copies (one bucket each), against go tool pprof -top on each file;
#   - the dashboard's time series (parca_query_range) over those copies,
#     and over three profiles among the merge's rows below, with
#     PostgreSQL's default jit = on and with jit = off (the query
#     functions turn it off for themselves: the same times);
#   - the sandwich of main.next and of time.Now (both trees) on the merged
#     profile of one copy, against go tool pprof -peek (its callers and
#     callees, one level: the nearest view pprof has);
#   - stack filters: parca_top of the profile without the stacks through
#     time.Now, and of those through sync.(*Mutex).Unlock, against
#     go tool pprof -top -ignore / -focus;
#   - parca_icicle with node_trim_threshold 1 % against untrimmed (pprof
#     has no icicle: -nodefraction trims its graph outputs);
#   - the call graph (nodes and edges, and DOT) at pprof's default
#     fractions and untrimmed, against go tool pprof -dot;
#   - parca_query grouped by a label of 10 values (the rows of the 10
#     profiles again, in 10 series) against the same ungrouped, and the
#     SQL merge grouped by series that grouping ran before.
# Times are the best of three.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../test/lib.sh"

copies=${BENCH_VIEWS_COPIES:-10}
large=$SHARED_TESTDATA/pprof/google-pprof/large.cpu
[ -f "$large" ] || { echo "bench/views.sh: $large not found" >&2; exit 1; }

start_cluster "${PARCA_BENCH_VIEWS_PORT:-54426}" "shared_buffers = 512MB" "max_wal_size = 4GB"
work=$(mktemp -d /tmp/parca-bench-views.XXXXXX)
trap 'stop_cluster; rm -rf "$work"' EXIT
cp "$large" "$PGDATA_DIR/large.cpu"
chown postgres: "$PGDATA_DIR/large.cpu"

# best_cmd_ms COMMAND...: the best of three runs of a command, in milliseconds
best_cmd_ms() {
	local best=""
	for _ in 1 2 3; do
		local s
		/usr/bin/time -f "%e" -o "$work/time" "$@" > /dev/null 2>&1
		s=$(cat "$work/time")
		if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$s; fi
	done
	awk -v s="$best" 'BEGIN { printf "%.0f", s * 1000 }'
}

q "SELECT parca_ingest_pprof(pg_read_binary_file('$PGDATA_DIR/large.cpu'), 'bench', '{\"job\": \"large\"}')" >/dev/null
large_type=$(q "SELECT profile_type FROM parca.series WHERE labels->>'job' = 'large' AND profile_type LIKE 'bench:samples:count:%'")
# more copies of the profile, 10 s apart, as further ingestions would write them
q "INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
   SELECT x.time + c * interval '10 s', x.series_id, x.stack, x.value, x.period, x.duration
   FROM parca.samples x, generate_series(1, $copies - 1) c" >/dev/null
# the rows into their partition now: the maintenance worker moving them
# during a measurement could change what it measures
q "SELECT * FROM parca_maintain_partitions()" >/dev/null
q "VACUUM ANALYZE parca.samples" >/dev/null
sel="$large_type{job=\"large\"}"
first=$(q "SELECT min(time) FROM parca.samples")
id=$(q "SELECT profile_id FROM parca_profiles('$sel', '-infinity', 'infinity') ORDER BY time LIMIT 1")
q "CREATE TABLE bench_profile AS SELECT parca_profile('$id') AS p" >/dev/null
echo "large.cpu x $copies: $(q "SELECT count(*) FROM parca.samples") rows; one profile: $(q "SELECT parca_profile_stacks(p) FROM bench_profile") distinct stacks"

echo "parca_profiles ($copies profiles):      $(best_ms "SELECT count(*) FROM parca_profiles('$sel', '-infinity', 'infinity')") ms"
echo "parca_profile (open one):           $(best_ms "SELECT parca_profile_stacks(parca_profile('$id'))") ms"
echo "go tool pprof -proto (one file):    $(best_cmd_ms go tool pprof -proto "$large") ms"

echo "parca_function_range main.next ($copies buckets): $(best_ms "SELECT count(*) FROM parca_function_range('$sel', '$first', 'infinity', '10 s', 'main.next')") ms"
echo "go tool pprof -top, $copies files:       $(best_cmd_ms bash -c "for _ in \$(seq $copies); do go tool pprof -top '$large'; done") ms"
# the dashboard's time series, with PostgreSQL's default jit = on (the
# query functions set jit = off for themselves, sql/70_query.sql) and off
qr="SELECT count(*) FROM parca_query_range('$sel', '$first', 'infinity', '10 s')"
echo "parca_query_range ($copies profiles by 10 s): $(best_ms "$qr" on) ms with jit = on, $(best_ms "$qr") ms with jit = off"

for fn in main.next time.Now; do
	re="^$(sed 's/[][\.*^$()+?{}|]/\\&/g' <<<"$fn")\$"
	echo "$fn: callers $(q "SELECT count(*) FROM bench_profile, parca_sandwich_callers(p, '$fn')") nodes, callees $(q "SELECT count(*) FROM bench_profile, parca_sandwich_callees(p, '$fn')") nodes"
	echo "  parca_sandwich_callers:           $(best_ms "SELECT count(*) FROM bench_profile, parca_sandwich_callers(p, '$fn')") ms"
	echo "  parca_sandwich_callees:           $(best_ms "SELECT count(*) FROM bench_profile, parca_sandwich_callees(p, '$fn')") ms"
	echo "  go tool pprof -peek:              $(best_cmd_ms go tool pprof -peek "$re" -nodefraction=0 -edgefraction=0 "$large") ms"
done

echo "parca_top(parca_filter(p, not_equal time.Now)): $(best_ms "SELECT count(*) FROM bench_profile, parca_top(parca_filter(p, '[{\"field\": \"function\", \"match\": \"not_equal\", \"value\": \"time.Now\"}]'))") ms"
echo "go tool pprof -top -ignore=^time.Now\$:       $(best_cmd_ms go tool pprof -top '-ignore=^time\.Now$' "$large") ms"
echo "parca_top(parca_filter(p, equal sync.(*Mutex).Unlock)): $(best_ms "SELECT count(*) FROM bench_profile, parca_top(parca_filter(p, '[{\"field\": \"function\", \"match\": \"equal\", \"value\": \"sync.(*Mutex).Unlock\"}]'))") ms"
echo "go tool pprof -top -focus=^sync...Unlock\$:   $(best_cmd_ms go tool pprof -top '-focus=^sync\.\(\*Mutex\)\.Unlock$' "$large") ms"
echo "parca_icicle(p):                    $(best_ms "SELECT count(*) FROM bench_profile, parca_icicle(p)") ms"
echo "parca_icicle(p, 0, 1) ($(q "SET client_min_messages = warning; SELECT count(*) FROM bench_profile, parca_icicle(p, 0, 1)") rows): $(best_ms "SET client_min_messages = warning; SELECT count(*) FROM bench_profile, parca_icicle(p, 0, 1)") ms"

# the call graph at pprof's default fractions, and whole
for fractions in "0.005, 0.001" "0, 0"; do
	echo "call graph ($fractions): $(q "SELECT count(*) FROM bench_profile, parca_callgraph_nodes(p, $fractions)") nodes, $(q "SELECT count(*) FROM bench_profile, parca_callgraph_edges(p, $fractions)") edges"
	echo "  parca_callgraph_nodes + _edges:   $(best_ms "SELECT (SELECT count(*) FROM bench_profile, parca_callgraph_nodes(p, $fractions)) + (SELECT count(*) FROM bench_profile, parca_callgraph_edges(p, $fractions))") ms"
	echo "  parca_callgraph_dot:              $(best_ms "SELECT length(parca_callgraph_dot(p, $fractions)) FROM bench_profile") ms"
	read -r nf ef <<<"${fractions/,/}"
	echo "  go tool pprof -dot:               $(best_cmd_ms go tool pprof -dot -nodefraction="$nf" -edgefraction="$ef" -nodecount=1000000 "$large") ms"
done

# grouping: the same rows in 10 series, one per instance
q "INSERT INTO parca.series (profile_type, labels)
   SELECT '$large_type', jsonb_build_object('job', 'grouped', 'instance', i::text) FROM generate_series(1, 10) i" >/dev/null
q "INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
   SELECT x.time, n.id, x.stack, x.value, x.period, x.duration
   FROM parca.samples x JOIN parca.series n ON n.labels->>'job' = 'grouped'
        AND (n.labels->>'instance')::int = 1 + extract(epoch FROM x.time - '$first'::timestamptz)::int / 10
   WHERE x.series_id = (SELECT id FROM parca.series WHERE labels->>'job' = 'large' AND profile_type = '$large_type')" >/dev/null
q "SELECT * FROM parca_maintain_partitions()" >/dev/null
q "VACUUM ANALYZE parca.samples" >/dev/null
gsel="$large_type{job=\"grouped\"}"
gids=$(q "SELECT parca_series_ids('$gsel')")
echo "grouped data: $(q "SELECT count(*) FROM parca.samples WHERE series_id = ANY ('$gids')") rows in 10 series"
echo "parca_query, not grouped:           $(best_ms "SELECT parca_profile_stacks(parca_query('$gsel', '-infinity', 'infinity'))") ms"
echo "parca_query group_by instance:      $(best_ms "SELECT parca_profile_stacks(parca_query('$gsel', '-infinity', 'infinity', group_by => '{instance}'))") ms"
echo "SQL parca_merge GROUP BY series (the merge part of the SQL path): $(best_ms "SELECT count(*) FROM (SELECT parca_merge(stack, value * period) FROM parca.samples
	WHERE series_id = ANY ('$gids') AND time BETWEEN '-infinity' AND 'infinity' GROUP BY series_id) s") ms"

# The views on a merge of BENCH_VIEWS_MERGE_ROWS rows (default 10 M; 0
# skips): as a user asks for them over a long range, parca_query merging the
# rows and the view reading the merged profile in one statement.  The rows
# arrive as production sends them: each copy of large.cpu's samples/count
# rows (20,430) in a transaction of its own, 10 s after the one before, in a
# series of their own; then VACUUM merges the stripes, as autovacuum does.
# go tool pprof gets the same data as the copies' files: it merges them
# once (-proto, timed), then makes each view from the merged file.
merge_rows=${BENCH_VIEWS_MERGE_ROWS:-10000000}
if [ "$merge_rows" -gt 0 ]; then
	base=$(q "SELECT id FROM parca.series WHERE labels->>'job' = 'large' AND profile_type = '$large_type'")
	per_copy=$(q "SELECT count(*) FROM parca.samples WHERE series_id = $base AND time = '$first'")
	mcopies=$(( (merge_rows + per_copy - 1) / per_copy ))
	q "INSERT INTO parca.series (profile_type, labels) VALUES ('$large_type', '{\"job\": \"merged\"}')" >/dev/null
	msel="$large_type{job=\"merged\"}"
	q "DO \$\$ DECLARE m bigint := (SELECT id FROM parca.series WHERE labels->>'job' = 'merged'); BEGIN
		FOR c IN 0 .. $mcopies - 1 LOOP
			INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
			SELECT x.time + interval '1 day' + c * interval '10 s', m, x.stack, x.value, x.period, x.duration
			FROM parca.samples x WHERE x.series_id = $base AND x.time = '$first';
			COMMIT;
		END LOOP; END \$\$" >/dev/null
	q "SELECT * FROM parca_maintain_partitions()" >/dev/null
	q "VACUUM ANALYZE parca.samples" >/dev/null
	mids=$(q "SELECT parca_series_ids('$msel')")
	echo
	echo "merge of $(q "SELECT count(*) FROM parca.samples WHERE series_id = ANY ('$mids')") rows: large.cpu's samples/count x $mcopies, one transaction each"
	mq="parca_query('$msel', '-infinity', 'infinity')"
	mfirst=$(q "SELECT min(time) FROM parca.samples WHERE series_id = ANY ('$mids')")
	files=()
	for _ in $(seq "$mcopies"); do files+=("$large"); done
	/usr/bin/time -f "%e %M" -o "$work/time" go tool pprof -proto "${files[@]}" > "$work/merged.pb.gz" 2>/dev/null
	read -r merge_s merge_kb < "$work/time"
	echo "  the merge alone: parca_query                   $(best_ms "SELECT parca_profile_stacks($mq)") ms"
	echo "                   go tool pprof -proto ($mcopies files) $(awk -v s="$merge_s" 'BEGIN { printf "%.0f", s * 1000 }') ms, $((merge_kb / 1024)) MB (once)"
	echo "  then each view: parca's (merge and view in one statement), go tool pprof's (on the merged file, add the merge above):"
	mergedf=$work/merged.pb.gz
	echo "  parca_sandwich_callers main.next  $(best_ms "SELECT count(*) FROM parca_sandwich_callers($mq, 'main.next')") ms"
	echo "  parca_sandwich_callees main.next  $(best_ms "SELECT count(*) FROM parca_sandwich_callees($mq, 'main.next')") ms"
	echo "    go tool pprof -peek main.next:  $(best_cmd_ms go tool pprof -peek '^main\.next$' -nodefraction=0 -edgefraction=0 "$mergedf") ms"
	echo "  parca_top(parca_filter(not_equal time.Now)): $(best_ms "SELECT count(*) FROM parca_top(parca_filter($mq, '[{\"field\": \"function\", \"match\": \"not_equal\", \"value\": \"time.Now\"}]'))") ms"
	echo "    go tool pprof -top -ignore:     $(best_cmd_ms go tool pprof -top '-ignore=^time\.Now$' "$mergedf") ms"
	echo "  parca_icicle, node_trim_threshold 1 %: $(best_ms "SET client_min_messages = warning; SELECT count(*) FROM parca_icicle($mq, 0, 1)") ms"
	echo "  parca_callgraph_nodes + _edges (0.005, 0.001): $(best_ms "WITH p AS MATERIALIZED (SELECT $mq AS p) SELECT (SELECT count(*) FROM p, parca_callgraph_nodes(p.p)) + (SELECT count(*) FROM p, parca_callgraph_edges(p.p))") ms"
	echo "  parca_callgraph_dot (0.005, 0.001): $(best_ms "SELECT length(parca_callgraph_dot($mq))") ms"
	echo "    go tool pprof -dot:             $(best_cmd_ms go tool pprof -dot -nodefraction=0.005 -edgefraction=0.001 -nodecount=1000000 "$mergedf") ms"
	# three profiles in a partition of the merged rows: the issue's dashboard
	# call, with PostgreSQL's default jit = on and with jit = off
	qr="SELECT count(*) FROM parca_query_range('$msel', '$mfirst', '$mfirst'::timestamptz + interval '25 s', '10 s')"
	echo "  parca_query_range, 3 profiles by 10 s: $(best_ms "$qr" on) ms with jit = on, $(best_ms "$qr") ms with jit = off"
	echo "  parca_function_range main.next ($mcopies buckets of 10 s): $(best_ms "SELECT count(*) FROM parca_function_range('$msel', '$mfirst', 'infinity', '10 s', 'main.next')") ms"
	echo "    go tool pprof -top on each of the $mcopies files: about $(awk -v t="$(best_cmd_ms go tool pprof -top "$large")" -v n="$mcopies" 'BEGIN { printf "%.0f", t * n }') ms (one file's best of three, x $mcopies)"
fi
