#!/usr/bin/env bash
# Long ranges through the rollups (docs/rollups.md), side by side with
# the raw merge in one run: a simulated fleet, its flame graph over the
# whole range, a diff of its two halves and a range with ragged edges,
# each from raw rows (parca.rollups = off) and through the rollups, with
# the answers compared byte for byte (a profile's samples are sorted, so
# equal merges are equal bytes); the space the rollups take beside the
# raw rows; and the CPU spent keeping them.
#
# The fleet: BENCH_ROLLUPS_SERIES series (default 20) of one CPU profile
# type, each taking a profile every BENCH_ROLLUPS_SECONDS (default 10) of
# BENCH_ROLLUPS_SAMPLES samples (default 200, about 105 distinct stacks:
# bench/gen_samples.c, 4,000 stacks whose popularity drifts from profile
# to profile, so that an hour holds most of them), for
# BENCH_ROLLUPS_HOURS hours (default 36, from 2026-01-01 00:00 UTC: a
# whole day and half of the next, 27 M rows).  The issue's fleet, 200
# series for 30 days, is 10 x 20 times that (5.5 billion rows), more than
# this loaded 2-core machine loads in a bench run.  So the month is
# computed from its parts: through rollups it reads 30 days of daily rows
# (the first day's query, less a query's fixed cost, that of a range
# without rows, 30 times), from raw rows 720 hours of rows (the whole
# range's time x 720 / hours); both grow linearly with the series.  The
# rows are bulk-loaded by one binary COPY into the day partitions of
# parca.samples (made first); ingestion profile by profile is
# bench/storage.sh's subject.  Rolling up is measured by running what
# the worker runs, parca_rollup_hours() over everything, in one backend
# whose CPU time (/proc/PID/stat) is read before and after.
set -euo pipefail
cd "$(dirname "$0")/.."

SERIES=${BENCH_ROLLUPS_SERIES:-20}
SECONDS_PER_PROFILE=${BENCH_ROLLUPS_SECONDS:-10}
SAMPLES=${BENCH_ROLLUPS_SAMPLES:-200}
HOURS=${BENCH_ROLLUPS_HOURS:-36}
profiles=$(( HOURS * 3600 / SECONDS_PER_PROFILE ))
source test/lib.sh
work=$(mktemp -d /tmp/parca-bench-rollups.XXXXXX)
chmod 755 "$work"
cc -O2 -o "$work/gen_samples" bench/gen_samples.c -lm

start_cluster "${PARCA_BENCH_ROLLUPS_PORT:-54417}" "shared_buffers = 1GB" "work_mem = 256MB" \
	"max_wal_size = 8GB" "checkpoint_timeout = 30min" "jit = off" \
	"parca.maintenance_naptime = 3600" "parca.rollups = off"
cleanup() {
	stop_cluster
	rm -rf "$work"
}
trap cleanup EXIT
now() { date +%s.%N; }

# gen_samples starts at 2026-01-01 00:00 UTC; series ids 1..SERIES
first='2026-01-01 00:00+00'
last=$(q "SELECT '$first'::timestamptz + make_interval(secs => $profiles * $SECONDS_PER_PROFILE) - interval '1 microsecond'")
half=$(q "SELECT '$first'::timestamptz + make_interval(secs => $profiles * $SECONDS_PER_PROFILE / 2)")
q "INSERT INTO parca.series (profile_type, labels)
   SELECT 'cpu:samples:count:cpu:nanoseconds:delta', jsonb_build_object('instance', 'host-' || i)
   FROM generate_series(1, $SERIES) i" >/dev/null
q "SELECT parca.create_partition(d) FROM generate_series('$first'::timestamptz, '$last', interval '1 day') d" >/dev/null

echo "fleet: $SERIES series, a profile every $SECONDS_PER_PROFILE s of $SAMPLES samples, $HOURS hours"
t0=$(now)
"$work/gen_samples" 4000000000 "$SERIES" "$SECONDS_PER_PROFILE" "$SAMPLES" "$profiles" |
	psql -X -q -v ON_ERROR_STOP=1 -c "COPY parca.samples FROM STDIN WITH (format binary)"
t1=$(now)
q "VACUUM ANALYZE parca.samples" >/dev/null
raw_rows=$(q "SELECT count(*) FROM parca.samples")
echo "loaded $raw_rows rows by COPY in $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s (generation included)"

# rolling up, as the worker's rounds would, in one backend
cpu_s() { awk '{ printf "%.2f", ($14 + $15) / '"$(getconf CLK_TCK)"' }' "/proc/$1/stat"; }
cat > "$work/rollup.sql" <<EOF
SET parca.rollups = on;
SELECT pg_backend_pid() AS pid \gset
\o $work/pid
SELECT :pid;
\o
SELECT pg_sleep(2);
SELECT * FROM parca_rollup_hours('-infinity', 'infinity');
SELECT pg_sleep(2);
EOF
chmod 644 "$work/rollup.sql"
psql -X -q -At -f "$work/rollup.sql" > "$work/rollup.out" &
rollup_job=$!
while [ ! -s "$work/pid" ]; do sleep 0.2; done
sleep 1
pid=$(tr -d ' \n' < "$work/pid")
cpu0=$(cpu_s "$pid")
t0=$(now)
sleep 1.5
while [ "$(q "SELECT wait_event FROM pg_stat_activity WHERE pid = $pid")" != "PgSleep" ]; do sleep 0.2; done
t1=$(now)
cpu1=$(cpu_s "$pid")
wait "$rollup_job"
rollup_cpu=$(awk "BEGIN { printf \"%.2f\", $cpu1 - $cpu0 }")
rollup_rows=$(q "SELECT count(*) FROM parca.samples_hourly")
daily_rows=$(q "SELECT count(*) FROM parca.samples_daily")
days=$(q "SELECT count(*) FROM parca.rollup_days")
echo "rollups: $HOURS hours and $days days in $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 - 1.5 }") s, backend CPU $rollup_cpu s" \
	"= $(awk "BEGIN { printf \"%.0f\", $rollup_cpu * 1000 / $HOURS }") ms per hour of data" \
	"= $(awk "BEGIN { printf \"%.3f\", $rollup_cpu * 100 / ($HOURS * 3600) }") % of one core"
q "VACUUM ANALYZE parca.samples_hourly, parca.samples_daily" >/dev/null

raw_bytes=$(q "SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('parca.samples') WHERE isleaf")
rollup_bytes=$(q "SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('parca.samples_hourly') WHERE isleaf")
daily_bytes=$(q "SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree('parca.samples_daily') WHERE isleaf")
inline=$(q "SELECT count(*) FROM parca.columnar_stripes WHERE first_block < 0")
printf 'space: raw %s rows, %.1f MB; hourly %s rows, %.1f MB (%.1f %% of raw; %s rows per hour); daily %s rows, %.1f MB (%s days); %s stripes inline\n' \
	"$raw_rows" "$(awk "BEGIN { print $raw_bytes / 1e6 }")" "$rollup_rows" "$(awk "BEGIN { print $rollup_bytes / 1e6 }")" \
	"$(awk "BEGIN { print 100 * $rollup_bytes / $raw_bytes }")" "$(( rollup_rows / HOURS ))" \
	"$daily_rows" "$(awk "BEGIN { print $daily_bytes / 1e6 }")" "$days" "$inline"

sel='cpu:samples:count:cpu:nanoseconds:delta'
# timed: the profile made (its stacks counted); compared: its bytes
flame="parca_query('$sel', '$first', '$last')"
diff="parca_diff(parca_query('$sel', '$first', '$half'), parca_query('$sel', '$half', '$last'))"
# a range with ragged edges: 10 minutes in, 10 minutes short
ragged="parca_query('$sel', '$first'::timestamptz + interval '10 min', '$last'::timestamptz - interval '10 min')"
printf '%-34s %10s %10s %8s  %s\n' query raw_s rollup_s speedup same
for name in flame diff ragged; do
	sql="SELECT parca_profile_stacks(${!name})"
	raw_s=$(best_of_3 "SET parca.rollups = off; $sql")
	rollup_s=$(best_of_3 "SET parca.rollups = on; $sql")
	sql="SELECT md5(${!name}::text)"
	same=$([ "$(q "SET parca.rollups = off; $sql" | tail -1)" = "$(q "SET parca.rollups = on; $sql" | tail -1)" ] && echo yes || echo NO)
	case $name in
		flame) label="flame graph, $HOURS h";;
		diff) label="diff of the two halves";;
		ragged) label="flame graph, ragged edges";;
	esac
	printf '%-34s %10s %10s %7.1fx  %s\n' "$label" "$raw_s" "$rollup_s" "$(awk "BEGIN { print $raw_s / $rollup_s }")" "$same"
done
# the month, from the parts it is made of: a month through rollups reads
# 30 days' daily rows (a query's fixed cost, that of a range without
# rows, once); from raw rows, 720 hours' rows
empty_s=$(best_of_3 "SET parca.rollups = on; SELECT parca_profile_stacks(parca_query('$sel', '2025-01-01', '2025-01-02'))")
day_s=$(best_of_3 "SET parca.rollups = on; SELECT parca_profile_stacks(parca_query('$sel', '$first', '$first'::timestamptz + interval '1 day' - interval '1 microsecond'))")
raw_whole_s=$(best_of_3 "SET parca.rollups = off; SELECT parca_profile_stacks($flame)")
echo "through rollups: an empty range $empty_s s, the first day $day_s s;" \
	"the month (30 days) of these $SERIES series: rollups $(awk "BEGIN { printf \"%.2f\", $empty_s + ($day_s - $empty_s) * 30 }") s," \
	"raw $(awk "BEGIN { printf \"%.1f\", $raw_whole_s * 720 / $HOURS }") s"
