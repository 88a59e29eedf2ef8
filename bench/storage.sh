#!/usr/bin/env bash
# Storage of data as production sends it: simulated days of profiles, each
# its own parca_ingest_pprof call, in time order, next to the same rows
# bulk-loaded by one COPY.
#
# Every simulated day has BENCH_STORAGE_INTERVALS intervals (default 12);
# each interval one big profile (google-pprof/large.cpu: 20,430 stacks, two
# sample types, 40,860 rows, written on pages) from one of 4 instances, and
# BENCH_STORAGE_SMALL small ones (default 4: the parca/*.pb.gz fixtures in
# turn, 2 to 4,661 samples, inline stripes merged at commit), each with its
# time set to the interval (a time_nanos field appended to the protobuf: a
# parser keeps the last value of a field).  At the end of each day the
# bench runs VACUUM of the stripe catalog and of parca.samples (the free
# page list, compaction), as autovacuum does on its own (it is on too).
# BENCH_STORAGE_DAYS (default 30) days: 360 big and 1,440 small profiles,
# about 15 M rows; about 10 minutes on the 2-core development machine.
#
# Reported: per day, the ingest ms per profile (median, big and small),
# the VACUUM seconds, the metastore GC's ms after the day, the table's size and bytes per row, and the same
# without the unused pages (live: what the stripes take); at the end, side
# by side with the same rows bulk-loaded (one COPY of the rows, in the
# order they arrived, into the emptied parca.samples; (time, series) order
# made it 18 % bigger): bytes per row, parca_query
# rows/s over the big profiles' samples/count, dead stripe rows and unused pages left
# behind, and write amplification (bytes of WAL, and of WAL of the
# columnar data pages (the "Generic" records), per byte of the table).
#
# Retention: when `SHOW parca.retention` works (time partitions), the bench
# sets it to BENCH_STORAGE_RETENTION_DAYS (default 5) days.  The simulated
# days then start today, so that the worker's retention, on the real
# clock, drops none of them; after each simulated day the bench does what
# the maintenance worker will do on that day: parca_maintain_partitions()
# (partitions for the rows that came), then DROP of the partitions whose
# range ended more than the retention before the simulated clock
# (parca.partition_ranges()).  The table size per day then plateaus.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../test/lib.sh"
source "$here/lib/pushed_profiles.sh"
require_fixtures

days=${BENCH_STORAGE_DAYS:-30}
intervals=${BENCH_STORAGE_INTERVALS:-12}
small_per_interval=${BENCH_STORAGE_SMALL:-4}
retention_days=${BENCH_STORAGE_RETENTION_DAYS:-5}

start_cluster "${PARCA_BENCH_STORAGE_PORT:-54439}" "shared_buffers = 512MB" "max_wal_size = 8GB" \
	"checkpoint_timeout = 30min" "wal_keep_size = 32GB" "jit = off" "autovacuum_naptime = 10s"
work=$PGDATA_DIR/bench
mkdir "$work"
pushed_intervals=$intervals
pushed_small_per_interval=$small_per_interval
pushed_profiles_setup "$work"

# the tables holding parca.samples' rows: itself, or its partitions
leaves="(SELECT 'parca.samples'::regclass AS relid WHERE NOT EXISTS (SELECT FROM pg_partition_tree('parca.samples'))
	UNION ALL SELECT relid FROM pg_partition_tree('parca.samples') WHERE isleaf)"
# sizes: the table (every partition, indexes, TOAST) and its stripe rows
table_bytes() {
	q "SELECT (SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM $leaves l)
	        + (SELECT coalesce(sum(pg_column_size(s.*)), 0) FROM parca.columnar_stripes s)
	        + (SELECT coalesce(sum(pg_column_size(d.*)), 0) FROM parca.columnar_dictionary d)"
}
# the same without unused pages: the data pages of the stripes and of the
# stack dictionaries' segments, the metapages, the rows of both
# (columnar tables are only parca.samples' here)
live_bytes() {
	q "SELECT (SELECT coalesce(sum(ceil(data_size / $((8192 - 24)).0)), 0) * 8192 FROM
	           (SELECT data_size FROM parca.columnar_stripes WHERE first_block >= 0 UNION ALL
	            SELECT data_size FROM parca.columnar_dictionary WHERE first_block >= 0) p)
	        + (SELECT count(*) * 8192 FROM $leaves l)
	        + (SELECT coalesce(sum(pg_column_size(s.*)), 0) FROM parca.columnar_stripes s)
	        + (SELECT coalesce(sum(pg_column_size(d.*)), 0) FROM parca.columnar_dictionary d)"
}
wal_lsn() { q "SELECT pg_current_wal_insert_lsn()"; }
wal_bytes() { q "SELECT pg_wal_lsn_diff('$2', '$1')::bigint"; }
# bytes of WAL of the columnar data pages and metapages between two LSNs
generic_wal_bytes() {
	q "CHECKPOINT" >/dev/null
	runuser -u postgres -- "$PG_BIN/pg_waldump" -p "$PGDATA_DIR/data/pg_wal" -s "$1" -e "$2" --stats 2>/dev/null |
		sed 's/([^)]*)//g' | awk '$1 == "Generic" { print $5; found = 1 } END { if (!found) print 0 }'
}
per_second() { awk -v n="$1" -v ms="$2" 'BEGIN { printf "%.1f", n / ms / 1000 }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }

retention=false
if psql -X -qAt -c "SHOW parca.retention" >/dev/null 2>&1; then
	retention=true
	q "ALTER SYSTEM SET parca.retention = '${retention_days}d'" >/dev/null
	q "SELECT pg_reload_conf()" >/dev/null
	start="date_trunc('day', now())"
	echo "parca.retention = ${retention_days} days (simulated days from today on)"
else
	start="'2026-01-01 00:00:00+00'::timestamptz"
	echo "no parca.retention setting: no retention"
fi
t0=$(q "SELECT extract(epoch FROM $start)::bigint")
# the metastore's garbage collection after each day, as the worker runs it
# after dropping partitions (parca.metastore_gc = on)
gc=false
q "SELECT 'parca_metastore_gc'::regproc" >/dev/null 2>&1 && gc=true
timed_ms() { psql -X -qAt -c '\timing on' -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -n 1; }

echo "$days simulated days x $intervals intervals: 1 big (large.cpu) + $small_per_interval small profiles each, one parca_ingest_pprof call per profile"
printf '%4s %10s %9s %9s %9s %10s %8s %9s %8s %8s\n' day rows "big ms" "small ms" "vacuum s" "table MB" "B/row" \
	"live MB" "B/row" "gc ms"
lsn0=$(wal_lsn)
vacuum_wal=0
ingested=0
for d in $(seq 0 $((days - 1))); do
	sqlf=$work/day.sql
	pushed_day_sql "$work" $((t0 + d * 86400)) "$sqlf"
	psql -X -qAt -v ON_ERROR_STOP=1 -c '\timing on' -f "$sqlf" > "$work/day.out"
	big_ms=$(awk -F'|' '/^B\|/ { b = 1; next } /^S\|/ { b = 0; next } /^Time:/ && b { print $1 }' "$work/day.out" | sed 's/Time: \([0-9.]*\) ms.*/\1/' | median)
	small_ms=$(awk -F'|' '/^B\|/ { b = 1; next } /^S\|/ { b = 0; next } /^Time:/ && !b { print $1 }' "$work/day.out" | sed 's/Time: \([0-9.]*\) ms.*/\1/' | median)
	ingested=$((ingested + $(awk -F'|' '/^[BS]\|/ { n += $2 } END { print n + 0 }' "$work/day.out")))
	# the catalog first: the stripe rows merged away the day before go, and
	# VACUUM of the table then finds their pages free
	vlsn=$(wal_lsn)
	vs=$( { /usr/bin/time -f %e psql -X -q -c "VACUUM parca.columnar_stripes" -c "VACUUM parca.samples" >/dev/null; } 2>&1 )
	vacuum_wal=$((vacuum_wal + $(wal_bytes "$vlsn" "$(wal_lsn)")))
	if $retention; then
		q "SELECT parca_maintain_partitions()" >/dev/null
		for p in $(q "SELECT partition FROM parca.partition_ranges()
			WHERE NOT is_default AND range_end <= to_timestamp($t0 + ($d + 1 - $retention_days) * 86400)"); do
			q "DROP TABLE $p"
		done
	fi
	gc_ms=-
	$gc && gc_ms=$(timed_ms "SELECT * FROM parca_metastore_gc()")
	rows=$(q "SELECT count(*) FROM parca.samples")
	bytes=$(table_bytes)
	live=$(live_bytes)
	printf '%4d %10d %9s %9s %9s %10.1f %8.2f %9.1f %8.2f %8s\n' $((d + 1)) "$rows" "$big_ms" "$small_ms" "$vs" \
		"$(awk -v b="$bytes" 'BEGIN { print b / 1048576 }')" "$(awk -v b="$bytes" -v r="$rows" 'BEGIN { print b / r }')" \
		"$(awk -v b="$live" 'BEGIN { print b / 1048576 }')" "$(awk -v b="$live" -v r="$rows" 'BEGIN { print b / r }')" "$gc_ms"
done
lsn1=$(wal_lsn)

# what the rows take as they arrived, and what parca_query does on them
q "ANALYZE parca.samples" >/dev/null
type=$(q "SELECT profile_type FROM parca.series WHERE labels->>'job' = 'big' AND profile_type LIKE 'bench:samples:count:%' LIMIT 1")
selector="$type{job=\"big\"}"
ids=$(q "SELECT parca_series_ids('$selector')")
report() {
	local label=$1 wal=$2 generic=$3
	local rows bytes live qrows ms session_ms stripes inline blocks relblocks dead
	rows=$(q "SELECT count(*) FROM parca.samples")
	bytes=$(table_bytes)
	live=$(live_bytes)
	qrows=$(q "SELECT count(*) FROM parca.samples WHERE series_id = ANY ('$ids')")
	ms=$(best_ms "SELECT parca_profile_stacks(parca_query('$selector', '-infinity', 'infinity'))")
	session_ms=$(best_ms_session "SELECT parca_profile_stacks(parca_query('$selector', '-infinity', 'infinity'))")
	read -r stripes inline blocks <<<"$(q "SELECT sum(stripes), sum(inline_stripes), sum(data_blocks)
		FROM $leaves t, parca_columnar_check(t.relid)" | tr '|' ' ')"
	relblocks=$(q "SELECT sum(pg_relation_size(relid) / 8192 - 1) FROM $leaves t")
	dead=$(q "SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'parca.columnar_stripes'::regclass")
	printf '%-24s %10d %7.2f %7.2f %9s %9s %8s %7s %7s %6s %8.1f %8.1f\n' "$label" "$rows" \
		"$(awk -v b="$bytes" -v r="$rows" 'BEGIN { print b / r }')" \
		"$(awk -v b="$live" -v r="$rows" 'BEGIN { print b / r }')" "$(per_second "$qrows" "$ms")" \
		"$(per_second "$qrows" "$session_ms")" \
		"$stripes" "$inline" "$((relblocks - blocks))" "$dead" \
		"$(awk -v w="$wal" 'BEGIN { print w / 1048576 }')" "$(awk -v w="$generic" 'BEGIN { print w / 1048576 }')"
}
generic=$(generic_wal_bytes "$lsn0" "$lsn1")
wal=$(wal_bytes "$lsn0" "$lsn1")
echo
printf '%-24s %10s %7s %7s %9s %9s %8s %7s %7s %6s %8s %8s\n' "" rows "B/row" "live" "Mrows/s" "(pooled)" stripes inline \
	unused dead "WAL MB" "page MB"
report "profile by profile" "$wal" "$generic"
if $gc; then
	cached_ms=$(best_ms "SELECT * FROM parca_metastore_gc()")
	q "DELETE FROM parca.partition_references_cache" >/dev/null
	full_ms=$(timed_ms "SELECT * FROM parca_metastore_gc()")
	echo "metastore GC over $(q "SELECT count(*) FROM parca.samples") rows: $cached_ms ms with nothing new since the last one, $full_ms ms reading every partition (no cache)"
fi

q "COPY (SELECT * FROM parca.samples) TO '$work/bulk.bin' (FORMAT binary)"
q "TRUNCATE parca.samples"
q "VACUUM parca.columnar_stripes" >/dev/null
lsn2=$(wal_lsn)
q "COPY parca.samples FROM '$work/bulk.bin' (FORMAT binary)"
q "VACUUM parca.samples" >/dev/null
lsn3=$(wal_lsn)
q "ANALYZE parca.samples" >/dev/null
report "bulk-loaded (one COPY)" "$(wal_bytes "$lsn2" "$lsn3")" "$(generic_wal_bytes "$lsn2" "$lsn3")"
bulk=$(live_bytes)
echo "(rows ingested: $ingested.  B/row: the table's files (with indexes and TOAST) and its stripe rows; live:"
echo " without unused pages; Mrows/s: parca_query over the big profiles' samples/count (best of 3), each in a"
echo " new connection, and (pooled) in one connection after a first query (as a pool's); unused:"
echo " data pages no stripe uses (listed for reuse); dead: rows of parca.columnar_stripes; WAL MB: all WAL"
echo " written, page MB: of it the columnar pages' (generic WAL); load average $(cut -d' ' -f1 /proc/loadavg)"
echo " on $(nproc) cores)"
# Retention keeps the last days only: the WAL of every day ingested is
# divided by what every row ingested takes bulk-loaded (the kept rows'
# bytes per row bulk-loaded, times the rows ingested)
kept_rows=$(q "SELECT count(*) FROM parca.samples")
echo "write amplification, bytes of WAL per byte that the $ingested rows ingested take bulk-loaded"
echo " ($(awk -v b="$bulk" -v k="$kept_rows" -v n="$ingested" 'BEGIN { printf "%.1f", b / k * n / 1048576 }') MB, at the bytes per row of the kept rows bulk-loaded):"
awk -v w="$wal" -v g="$generic" -v v="$vacuum_wal" -v b="$bulk" -v k="$kept_rows" -v n="$ingested" 'BEGIN {
	a = b / k * n
	printf "  profile by profile: WAL %.1f (ingest %.1f, VACUUM merging %.1f), of it columnar pages %.1f\n",
		w / a, (w - v) / a, v / a, g / a }'
