#!/usr/bin/env bash
# Heap vs parca_columnar on realistic CPU samples, side by side in one run.
#
# Data: bench/gen_samples.c (deterministic): BENCH_ROWS rows (default 10 M)
# of 50 series of 10-second profiles, stacks of depth 5-60 drawn from a
# skewed, drifting distribution over 4,000 stacks.  Both tables have the
# shape of parca.samples.  Reported for each: bytes per row, COPY rows/s
# (binary COPY from a file in memory), "SELECT stack, sum(value) ... GROUP
# BY stack" time, and queries over 1 % of the time range (time and blocks
# read): the same GROUP BY stack, and a per-series sum that does not read
# stacks.  Queries run three times; the best time counts.
set -euo pipefail
cd "$(dirname "$0")/.."

ROWS=${BENCH_ROWS:-10000000}
source test/lib.sh
work=$(mktemp -d /tmp/parca-bench.XXXXXX)
datadir=/dev/shm
[ -d "$datadir" ] && [ -w "$datadir" ] || datadir=$work
data=$(mktemp "$datadir/parca-bench-samples.XXXXXX")

cc -O2 -o "$work/gen_samples" bench/gen_samples.c -lm
echo "generating $ROWS rows..."
"$work/gen_samples" "$ROWS" 50 > "$data"
chmod 644 "$data"

start_cluster "${PARCA_BENCH_PORT:-54415}" "shared_buffers = 2GB" "work_mem = 256MB" \
	"max_wal_size = 8GB" "checkpoint_timeout = 30min" "max_parallel_workers_per_gather = 0" "jit = off"
cleanup() {
	stop_cluster
	rm -rf "$work" "$data"
}
trap cleanup EXIT
q "CREATE TABLE bench_heap (LIKE parca.samples)"
q "CREATE TABLE bench_columnar (LIKE parca.samples) USING parca_columnar"

declare -A copy_s bpr group_s range_s range_blocks total_blocks series_s series_blocks
for t in heap columnar; do
	q "CHECKPOINT"
	copy_s[$t]=$(seconds "COPY bench_$t FROM '$data' WITH (format binary)")
	q "VACUUM ANALYZE bench_$t"
done
rows=$(q "SELECT count(*) FROM bench_columnar")
[ "$rows" = "$(q "SELECT count(*) FROM bench_heap")" ] || { echo "row counts differ" >&2; exit 1; }
q "SELECT rows FROM parca_columnar_check('bench_columnar')" >/dev/null

bpr[heap]=$(q "SELECT round(pg_total_relation_size('bench_heap')::numeric / $rows, 2)")
# the columnar table's pages plus its rows in parca.columnar_stripes
bpr[columnar]=$(q "SELECT round((pg_total_relation_size('bench_columnar') +
	(SELECT sum(pg_column_size(s.*)) FROM parca.columnar_stripes s))::numeric / $rows, 2)")

# the agent's path: binary COPY into parca.samples, routed to the day
# partition of the rows (its write log and series index kept as for any
# write); then emptied, so that the sizes above and below are the tables'
q "SELECT parca.create_partition(min(time)) FROM bench_columnar" >/dev/null
q "CHECKPOINT"
copy_s[partition]=$(seconds "COPY parca.samples FROM '$data' WITH (format binary)")
[ "$rows" = "$(q "SELECT count(*) FROM parca.samples")" ] || { echo "row counts differ (parca.samples)" >&2; exit 1; }
q "TRUNCATE parca.samples"

group="SELECT stack, sum(value) FROM bench_T GROUP BY stack"
read -r tmin tspan <<<"$(q "SELECT extract(epoch FROM min(time)), extract(epoch FROM max(time) - min(time)) FROM bench_heap" | tr '|' ' ')"
from="to_timestamp($tmin + $tspan * 0.5)"
to="to_timestamp($tmin + $tspan * 0.51)"
range="SELECT stack, sum(value) FROM bench_T WHERE time >= $from AND time < $to GROUP BY stack"
range_rows=$(q "SELECT count(*) FROM bench_heap WHERE time >= $from AND time < $to")
series="SELECT series_id, sum(value) FROM bench_T WHERE time >= $from AND time < $to GROUP BY series_id"

for t in heap columnar; do
	group_s[$t]=$(best_of_3 "${group//bench_T/bench_$t}")
	range_s[$t]=$(best_of_3 "${range//bench_T/bench_$t}")
	series_s[$t]=$(best_of_3 "${series//bench_T/bench_$t}")
	total_blocks[$t]=$(q "SELECT pg_relation_size('bench_$t') / 8192")
done
# blocks the 1 % query reads: the heap scans every block; the columnar
# scan reports the data blocks it read
heap_blocks() {
	psql -X -qAt -c "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${1//bench_T/bench_heap}" |
		grep -o '"Shared Hit Blocks": [0-9]*\|"Shared Read Blocks": [0-9]*' | head -2 | awk '{s += $NF} END {print s}'
}
columnar_blocks() {
	psql -X -qAt -c "EXPLAIN (ANALYZE, FORMAT JSON) ${1//bench_T/bench_columnar}" |
		grep -o '"Data Blocks Read": [0-9]*' | awk '{s += $NF} END {print s}'
}
range_blocks[heap]=$(heap_blocks "$range")
range_blocks[columnar]=$(columnar_blocks "$range")
series_blocks[heap]=$(heap_blocks "$series")
series_blocks[columnar]=$(columnar_blocks "$series")

ratio() { awk "BEGIN { printf \"%.2f\", $1 / $2 }"; }
pct() { awk "BEGIN { printf \"%.2f\", 100 * $1 / $2 }"; }
echo
echo "parca_columnar benchmark: $rows rows, 50 series, 1 % range = $range_rows rows"
printf "%-34s %14s %14s %10s  %s\n" "" heap parca_columnar ratio target
printf "%-34s %14s %14s %10s  %s\n" "bytes per row" "${bpr[heap]}" "${bpr[columnar]}" \
	"$(ratio "${bpr[heap]}" "${bpr[columnar]}")x" ">= 30x smaller"
printf "%-34s %14.0f %14.0f %10s  %s\n" "COPY rows/s" "$(ratio "$rows" "${copy_s[heap]}")" \
	"$(ratio "$rows" "${copy_s[columnar]}")" "$(ratio "${copy_s[heap]}" "${copy_s[columnar]}")x" ">= 1,000,000 rows/s"
printf "%-34s %14s %14.0f %10s  %s\n" "  into a partition of parca.samples" "" \
	"$(ratio "$rows" "${copy_s[partition]}")" "$(ratio "${copy_s[heap]}" "${copy_s[partition]}")x" "2x heap"
printf "%-34s %14.3f %14.3f %10s  %s\n" "GROUP BY stack, s" "${group_s[heap]}" "${group_s[columnar]}" \
	"$(ratio "${group_s[heap]}" "${group_s[columnar]}")x" ">= 3x faster"
printf "%-34s %14.3f %14.3f %10s\n" "1 % time range GROUP BY stack, s" "${range_s[heap]}" "${range_s[columnar]}" \
	"$(ratio "${range_s[heap]}" "${range_s[columnar]}")x"
printf "%-34s %13s%% %13s%% %10s  %s\n" "  blocks read" \
	"$(pct "${range_blocks[heap]}" "${total_blocks[heap]}")" \
	"$(pct "${range_blocks[columnar]}" "${total_blocks[columnar]}")" "" "< 2 % of the table"
printf "%-34s %14.3f %14.3f %10s\n" "1 % time range sum by series, s" "${series_s[heap]}" "${series_s[columnar]}" \
	"$(ratio "${series_s[heap]}" "${series_s[columnar]}")x"
printf "%-34s %13s%% %13s%% %10s  %s\n" "  blocks read" \
	"$(pct "${series_blocks[heap]}" "${total_blocks[heap]}")" \
	"$(pct "${series_blocks[columnar]}" "${total_blocks[columnar]}")" "" "< 2 % of the table"
echo "(table blocks: heap ${total_blocks[heap]}, columnar ${total_blocks[columnar]}; blocks read by the" \
	"1 % queries: heap ${range_blocks[heap]} and ${series_blocks[heap]}," \
	"columnar ${range_blocks[columnar]} and ${series_blocks[columnar]})"
