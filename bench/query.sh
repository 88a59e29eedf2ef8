#!/usr/bin/env bash
# Query benchmark: how fast parca_query merges sample rows, next to plain
# SQL `GROUP BY stack` over the same rows and to `go tool pprof -proto`
# merging equivalent pprof files; and how long parca_icicle takes on a
# merged profile of 20,430 distinct stacks (google-pprof/large.cpu).
#
# Data (BENCH_QUERY_DATA):
#   pprof      google-pprof/large.cpu ingested once, then its sample rows
#              copied BENCH_QUERY_COPIES times (default 100), each copy 10 s
#              later with values varied deterministically (x1, x2 or x3 by
#              copy and stack) -- the design brief's baseline data set, in
#              the heap samples table.
#   generator  bench/gen_samples.c (the columnar work's generator, when the
#              tree has it): BENCH_QUERY_ROWS rows (default 4,000,000) over
#              BENCH_QUERY_SERIES series (default 10), binary COPY.
# The default is generator when bench/gen_samples.c exists, else pprof.
# go tool pprof merges BENCH_QUERY_PPROF_FILES copies of large.cpu (default
# 20; it needs about 7 MB of memory per file).  After the heap figures the
# samples table is rewritten with ALTER TABLE ... SET ACCESS METHOD
# parca_columnar and parca_query is timed again (BENCH_QUERY_COLUMNAR=0
# skips that).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../test/lib.sh"

data=${BENCH_QUERY_DATA:-}
if [ -z "$data" ]; then
	if [ -f "$here/gen_samples.c" ]; then data=generator; else data=pprof; fi
fi
copies=${BENCH_QUERY_COPIES:-100}
gen_rows=${BENCH_QUERY_ROWS:-4000000}
gen_series=${BENCH_QUERY_SERIES:-10}
pprof_files=${BENCH_QUERY_PPROF_FILES:-20}
large=$SHARED_TESTDATA/pprof/google-pprof/large.cpu
[ -f "$large" ] || { echo "bench/query.sh: $large not found" >&2; exit 1; }

start_cluster "${PARCA_BENCH_QUERY_PORT:-54423}" "shared_buffers = 512MB" "max_wal_size = 4GB"
work=$(mktemp -d /tmp/parca-bench-query.XXXXXX)
trap 'stop_cluster; rm -rf "$work"' EXIT
cp "$large" "$PGDATA_DIR/large.cpu"
chown postgres: "$PGDATA_DIR/large.cpu"

per_second() { awk -v n="$1" -v ms="$2" 'BEGIN { printf "%.2f M rows/s", n / ms / 1000 }'; }

# parca.samples is partitioned by time: each partition has its own access method
set_access_method() {
	q "DO \$\$ DECLARE p regclass; BEGIN
		FOR p IN SELECT relid FROM pg_partition_tree('parca.samples') WHERE isleaf LOOP
			EXECUTE format('ALTER TABLE %s SET ACCESS METHOD $1', p);
		END LOOP; END \$\$" >/dev/null
}
# the heap figures first: parca.samples' partitions are parca_columnar, so back to heap
set_access_method heap
q "SELECT parca_ingest_pprof(pg_read_binary_file('$PGDATA_DIR/large.cpu'), 'bench', '{\"job\": \"large\"}')" >/dev/null
large_type=$(q "SELECT profile_type FROM parca.series WHERE labels->>'job' = 'large' AND profile_type LIKE 'bench:samples:count:%'")
case "$data" in
	pprof)
		q "INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
		   SELECT x.time + c * interval '10 s', x.series_id, x.stack,
		          x.value * (1 + (c + hashtext(x.stack::text)) % 3), x.period, x.duration
		   FROM parca.samples x, generate_series(1, $copies - 1) c" >/dev/null
		selector="$large_type{job=\"large\"}"
		;;
	generator)
		cc -O2 -o "$work/gen_samples" "$here/gen_samples.c" -lm
		q "INSERT INTO parca.series (profile_type, labels)
		   SELECT 'gen:samples:count:cpu:nanoseconds:delta', jsonb_build_object('instance', i::text)
		   FROM generate_series(1, $gen_series) i" >/dev/null
		# the generator numbers its series from 1: shift onto the ids just made
		first=$(q "SELECT min(id) FROM parca.series WHERE profile_type LIKE 'gen:%'")
		"$work/gen_samples" "$gen_rows" "$gen_series" |
			psql -X -q -c "BEGIN" -c "CREATE TEMP TABLE g (LIKE parca.samples)" \
				-c "COPY g FROM STDIN (FORMAT binary)" \
				-c "INSERT INTO parca.samples SELECT time, series_id + $first - 1, stack, value, period, duration, num_labels FROM g" \
				-c "COMMIT"
		selector='gen:samples:count:cpu:nanoseconds:delta'
		;;
	*) echo "bench/query.sh: BENCH_QUERY_DATA must be pprof or generator" >&2; exit 1 ;;
esac
# the rows into partitions of their own now (the maintenance worker would
# move them out of the default partition in the middle of the figures),
# and those partitions, made parca_columnar, to heap as well
q "SELECT parca_maintain_partitions()" >/dev/null
set_access_method heap
q "VACUUM ANALYZE parca.samples" >/dev/null

ids=$(q "SELECT parca_series_ids('$selector')")
rows=$(q "SELECT count(*) FROM parca.samples WHERE series_id = ANY ('$ids')")
total_rows=$(q "SELECT count(*) FROM parca.samples")
table_info() {
	q "SELECT string_agg(DISTINCT a.amname, '+') || ', ' || pg_size_pretty(sum(pg_table_size(t.relid)))
	   FROM pg_partition_tree('parca.samples') t JOIN pg_class c ON c.oid = t.relid
	   JOIN pg_am a ON a.oid = c.relam WHERE t.isleaf"
}
echo "data: $data; $rows rows selected by $selector, $total_rows rows in parca.samples ($(table_info))"

ms=$(best_ms "SELECT parca_profile_stacks(parca_query('$selector', '-infinity', 'infinity'))")
stacks=$(q "SELECT parca_profile_stacks(parca_query('$selector', '-infinity', 'infinity'))")
echo "parca_query:                $ms ms, $(per_second "$rows" "$ms") ($stacks distinct stacks)"
ms=$(best_ms "SELECT count(*) FROM (SELECT stack, sum(value * period) FROM parca.samples
              WHERE series_id = ANY ('$ids') AND time BETWEEN '-infinity' AND 'infinity' GROUP BY stack) s")
echo "SQL GROUP BY stack:         $ms ms, $(per_second "$rows" "$ms")"
ms=$(best_ms "SELECT parca_profile_stacks(parca_merge(stack, value * period)) FROM parca.samples
              WHERE series_id = ANY ('$ids') AND time BETWEEN '-infinity' AND 'infinity'")
echo "SQL parca_merge aggregate:  $ms ms, $(per_second "$rows" "$ms")"

if [ "${BENCH_QUERY_COLUMNAR:-1}" = 1 ]; then
	set_access_method parca_columnar
	q "VACUUM ANALYZE parca.samples" >/dev/null
	echo "parca.samples rewritten: $(table_info)"
	ms=$(best_ms "SELECT parca_profile_stacks(parca_query('$selector', '-infinity', 'infinity'))")
	echo "parca_query (columnar):     $ms ms, $(per_second "$rows" "$ms")"
	ms=$(best_ms "SELECT count(*) FROM (SELECT stack, sum(value * period) FROM parca.samples
	              WHERE series_id = ANY ('$ids') AND time BETWEEN '-infinity' AND 'infinity' GROUP BY stack) s")
	echo "SQL GROUP BY stack (col.):  $ms ms, $(per_second "$rows" "$ms")"
fi

files=()
for i in $(seq 1 "$pprof_files"); do files+=("$large"); done
pprof_rows=$(( pprof_files * $(q "SELECT count(*) FROM parca.samples x JOIN parca.series s ON s.id = x.series_id
	WHERE s.labels->>'job' = 'large' AND s.profile_type = '$large_type' AND x.time = (SELECT min(time) FROM parca.samples)") ))
/usr/bin/time -f "%e %M" -o "$work/time" go tool pprof -proto "${files[@]}" > "$work/merged.pb.gz" 2>/dev/null
read -r secs kb < "$work/time"
echo "go tool pprof -proto:       $pprof_files files of large.cpu, $pprof_rows samples: ${secs} s, $(per_second "$pprof_rows" "$(awk -v s="$secs" 'BEGIN { print s * 1000 }')"), $((kb / 1024)) MB resident"

q "CREATE TABLE bench_profile AS SELECT parca_query('$large_type{job=\"large\"}', '-infinity', (SELECT min(time) FROM parca.samples)) AS p" >/dev/null
echo "profile of large.cpu: $(q "SELECT parca_profile_stacks(p) FROM bench_profile") distinct stacks, $(q "SELECT count(*) FROM bench_profile, parca_icicle(p)") icicle nodes"
echo "parca_icicle:               $(best_ms "SELECT count(*) FROM bench_profile, parca_icicle(p)") ms"
echo "parca_icicle(p, 1000):      $(best_ms "SET client_min_messages = warning; SELECT count(*) FROM bench_profile, parca_icicle(p, 1000)") ms"
echo "parca_top:                  $(best_ms "SELECT count(*) FROM bench_profile, parca_top(p)") ms"
echo "parca_flamegraph_svg:       $(best_ms "SELECT length(parca_flamegraph_svg(p)) FROM bench_profile") ms"
