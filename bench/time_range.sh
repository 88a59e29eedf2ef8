#!/usr/bin/env bash
# What a 1 % time range of a day partition reads (issue 30, target 4), on
# rows as they arrive: a day of BENCH_TR_SERIES (default 10) series, each
# with a profile of BENCH_TR_ROWS (200) samples every BENCH_TR_STEP (60)
# seconds, each profile its own INSERT into parca.samples (a stripe each),
# the stacks those of google-pprof/large.cpu (pushed once into the same
# day first, which makes the partition); a VACUUM of the partition after
# every BENCH_TR_VACUUM (600) profiles, as autovacuum merges them (which
# is off on the partition, so that runs merge alike), and one at the end.
# Then ten 1 % ranges spread over the day, each
#   SELECT sum(value) FROM <partition> WHERE time >= a AND time < b
# and the data blocks (each page once) and chunk groups it reads (EXPLAIN
# ANALYZE) against the partition's (parca_columnar_check); parca_query's
# buffer reads of the partition and GROUP BY stack's data blocks for the
# same ranges (they read the table's stack dictionary too); and, for the
# other side of the layout, one series over the whole day.  Two days: one
# of sample counts, which compress, and one of values of high entropy,
# which are bit-packed and read only on the pages of the rows a range
# passes.  The order VACUUM writes merged stripes in decides it, that it
# writes them on pages, and what a scan reads of a chunk group a range
# cuts (docs/columnar.md, "Merging stripes on pages", "A 1 % time range").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../test/lib.sh"
. "$here/lib/pushed_profiles.sh"
require_fixtures
series=${BENCH_TR_SERIES:-10}
rows=${BENCH_TR_ROWS:-200}
step=${BENCH_TR_STEP:-60}
vacuum_every=${BENCH_TR_VACUUM:-600}
start_cluster 54409
stage=$(mktemp -d)
chmod 755 "$stage"
trap 'stop_cluster; rm -rf "$stage"' EXIT

pushed_profiles_setup "$stage"

# bench_day DAY VALUE LABEL: a day of the profiles from DAY on, each row's
# value the SQL expression VALUE (of the stack's number n and the day's
# second @t), into its own partition; then the ten ranges and the one series
bench_day() {
	local day=$1 value=$2 label=$3 part nstacks stripes total_rows total_blocks w from plan blocks groups skipped sum_blocks
	q "SELECT parca_ingest_pprof(pg_read_binary_file('$stage/big.pb') || bench_time_field(to_timestamp($day)), 'bench')" >/dev/null
	part=$(q "SELECT tableoid::regclass FROM parca.samples WHERE time = to_timestamp($day) LIMIT 1")
	# the bench's VACUUMs merge, at the same points in every run
	q "ALTER TABLE $part SET (autovacuum_enabled = false)" >/dev/null
	q "SET client_min_messages = warning; DROP TABLE IF EXISTS bench_stacks; CREATE TABLE bench_stacks AS SELECT row_number() OVER () AS n, stack FROM (SELECT DISTINCT stack FROM $part) s" >/dev/null
	nstacks=$(q "SELECT count(*) FROM bench_stacks")

	# the day's profiles, in time order, one INSERT each
	awk -v day="$day" -v series="$series" -v rows="$rows" -v step="$step" -v every="$vacuum_every" \
		-v part="$part" -v nstacks="$nstacks" -v value="$value" 'BEGIN {
		for (t = 0; t < 86400; t += step)
			for (s = 0; s < series; s++) {
				off = (s * 3701 + t / step * 13) % (nstacks - rows)
				v = value
				gsub(/@t/, t, v)
				printf "INSERT INTO parca.samples SELECT to_timestamp(%d), %d, stack, %s, 10000000, 10000000000, NULL FROM bench_stacks WHERE n > %d AND n <= %d;\n",
					day + t, 1000 + s, v, off, off + rows
				if (++pushed % every == 0)
					printf "VACUUM %s;\n", part
			}
		printf "VACUUM %s;\n", part
	}' >"$stage/day.sql"
	chmod 644 "$stage/day.sql"
	psql -X -qAt -v ON_ERROR_STOP=1 -f "$stage/day.sql" >/dev/null

	IFS='|' read -r stripes total_rows total_blocks < <(q "SELECT stripes, rows, data_blocks FROM parca_columnar_check('$part')")
	echo "$label"
	echo "$part: $total_rows rows in $stripes stripes, $total_blocks data blocks; $series series, a profile of $rows rows every $step s each"
	printf '%-28s %12s %14s\n' "1 % of the day from" "data blocks" "chunk groups"
	sum_blocks=0
	for w in 0 1 2 3 4 5 6 7 8 9; do
		from=$((day + w * 8640 + 431))
		plan=$(q "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
		          SELECT sum(value) FROM $part WHERE time >= to_timestamp($from) AND time < to_timestamp($((from + 864)))")
		blocks=$(sed -n 's/.*Data Blocks Read: \([0-9]*\).*/\1/p' <<<"$plan")
		groups=$(sed -n 's/.*Chunk Groups Read: \([0-9]*\).*/\1/p' <<<"$plan")
		skipped=$(sed -n 's/.*Chunk Groups Skipped: \([0-9]*\).*/\1/p' <<<"$plan")
		printf '%-28s %5s (%4s %%) %6s of %s\n' "$(q "SELECT to_timestamp($from)::time")" "$blocks" \
			"$(q "SELECT round(100.0 * $blocks / $total_blocks, 1)")" "$groups" "$((groups + skipped))"
		sum_blocks=$((sum_blocks + blocks))
	done
	echo "mean: $(q "SELECT round($sum_blocks / 10.0, 1)") data blocks, $(q "SELECT round(100.0 * $sum_blocks / 10 / $total_blocks, 1)") % of the partition's"
	sum_blocks=0
	for w in 0 1 2 3 4 5 6 7 8 9; do
		from=$((day + w * 8640 + 431))
		sum_blocks=$((sum_blocks + $(q "SELECT bench_query_reads('$part', to_timestamp($from), to_timestamp($((from + 864))))")))
	done
	echo "parca_query of the ten ranges, one thread: $(q "SELECT round($sum_blocks / 10.0, 1)") reads of the partition's buffers a range on average (each access: a page read again counts again)"
	sum_blocks=0
	for w in 0 1 2 3 4 5 6 7 8 9; do
		from=$((day + w * 8640 + 431))
		plan=$(q "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
		          SELECT stack, sum(value) FROM $part WHERE time >= to_timestamp($from) AND time < to_timestamp($((from + 864))) GROUP BY stack")
		sum_blocks=$((sum_blocks + $(sed -n 's/.*Data Blocks Read: \([0-9]*\).*/\1/p' <<<"$plan")))
	done
	echo "GROUP BY stack of the ten ranges: $(q "SELECT round($sum_blocks / 10.0, 1)") data blocks a range on average, $(q "SELECT round(100.0 * $sum_blocks / 10 / $total_blocks, 1)") % (with the pages of the table's stack dictionary that hold the stacks it returns)"
	plan=$(q "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
	          SELECT sum(value) FROM $part WHERE series_id = 1003")
	echo "one series over the whole day: $(sed -n 's/.*Data Blocks Read: \([0-9]*\).*/\1/p' <<<"$plan") data blocks," \
		"$(sed -n 's/.*Chunk Groups Read: \([0-9]*\).*/\1/p' <<<"$plan") chunk groups"
}

# the series, for parca_query; and the buffer reads of a partition that
# a parca_query of a range makes (in this backend: no parallel worker)
q "INSERT INTO parca.series (id, profile_type, labels) OVERRIDING SYSTEM VALUE
   SELECT 1000 + s, 'benchtr:alloc:bytes:space:bytes', jsonb_build_object('s', s::text)
   FROM generate_series(0, $series - 1) s" >/dev/null
q "CREATE FUNCTION bench_query_reads(part regclass, lo timestamptz, hi timestamptz) RETURNS bigint
   LANGUAGE plpgsql SET max_parallel_workers_per_gather = 0 SET parca.rollups = off AS \$\$
DECLARE before bigint := pg_stat_get_xact_blocks_fetched(part);
BEGIN
  PERFORM parca_query('benchtr:alloc:bytes:space:bytes', lo, hi - interval '1 microsecond');
  RETURN pg_stat_get_xact_blocks_fetched(part) - before;
END \$\$" >/dev/null
today=$(q "SELECT extract(epoch FROM date_trunc('day', now()))::bigint")
bench_day "$today" "1 + (n * 7 + @t) % 5" "sample counts (1 to 5, compressed):"
echo
bench_day $((today + 86400)) "(n::bigint * 2654435761 + @t::bigint * 40503) % 100000000" \
	"values of high entropy (27 bits that look random, bit-packed, stored as they are):"
