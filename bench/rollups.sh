#!/usr/bin/env bash
# Long ranges through the rollups (docs/rollups.md), side by side with
# the raw merge in one run, on the issue's fleet: BENCH_ROLLUPS_SERIES
# series (default 200) of one CPU profile type, each taking a profile
# every BENCH_ROLLUPS_SECONDS (default 10) of BENCH_ROLLUPS_SAMPLES
# samples (default 200, about 105 distinct stacks: bench/gen_samples.c,
# 4,000 stacks whose popularity drifts from profile to profile, so that an
# hour holds most of them).
#
# A month of that fleet is 5.5 billion raw rows, more than this loaded
# 2-core machine loads in a bench run.  So:
# 1. BENCH_ROLLUPS_HOURS hours (default 3, from 2026-01-01 00:00 UTC) of
#    raw rows are bulk-loaded (one binary COPY into the day partitions of
#    parca.samples; ingestion profile by profile is bench/storage.sh's
#    subject) and rolled up by what the worker runs, parca_rollup_hours(),
#    in one backend whose CPU time (/proc/PID/stat) is read before and
#    after: hours, the day and the week.  Over them, the flame graph, a
#    diff of the two halves and a range with ragged edges, each from raw
#    rows (parca.rollups = off) and through the rollups, with the answers
#    compared byte for byte (a profile's samples are sorted, so equal
#    merges are equal bytes).
# 2. The month is made of GENERATED COPIES: the first day's daily rollup
#    (the merge of the loaded hours; about as many rows as a whole day's,
#    each series' hour already holding nearly all its stacks) copied to
#    the 29 days after, with their own times, listed as rolled up; then
#    the weeks rolled up from those days as the worker does (CPU read the
#    same way).  Over them, the month and a diff of two weeks through the
#    rollups; from raw rows these are not loadable, and the raw figures
#    beside them are the loaded hours' raw times scaled by the hours read
#    (720 for the month, 336 for two weeks): marked "scaled".
set -euo pipefail
cd "$(dirname "$0")/.."

SERIES=${BENCH_ROLLUPS_SERIES:-200}
SECONDS_PER_PROFILE=${BENCH_ROLLUPS_SECONDS:-10}
SAMPLES=${BENCH_ROLLUPS_SAMPLES:-200}
HOURS=${BENCH_ROLLUPS_HOURS:-3}
if [ "$HOURS" -gt 24 ]; then
	echo "BENCH_ROLLUPS_HOURS: at most 24 (the month is made of the first day's copies)" >&2
	exit 2
fi
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
calc() { awk "BEGIN { printf \"$1\", $2 }"; }
echo "machine load: $(uptime | sed 's/.*load average/load average/')"

# gen_samples starts at 2026-01-01 00:00 UTC (a Thursday: weeks, aligned
# to 1970-01-01, start on it); series ids 1..SERIES
first='2026-01-01 00:00+00'
last=$(q "SELECT '$first'::timestamptz + make_interval(secs => $profiles * $SECONDS_PER_PROFILE) - interval '1 microsecond'")
half=$(q "SELECT '$first'::timestamptz + make_interval(secs => $profiles * $SECONDS_PER_PROFILE / 2)")
q "INSERT INTO parca.series (profile_type, labels)
   SELECT 'cpu:samples:count:cpu:nanoseconds:delta', jsonb_build_object('instance', 'host-' || i)
   FROM generate_series(1, $SERIES) i" >/dev/null
q "SELECT parca.create_partition(d) FROM generate_series('$first'::timestamptz, '$last', interval '1 day') d" >/dev/null

echo "fleet: $SERIES series, a profile every $SECONDS_PER_PROFILE s of $SAMPLES samples; $HOURS hours loaded"
t0=$(now)
"$work/gen_samples" 4000000000 "$SERIES" "$SECONDS_PER_PROFILE" "$SAMPLES" "$profiles" |
	psql -X -q -v ON_ERROR_STOP=1 -c "COPY parca.samples FROM STDIN WITH (format binary)"
t1=$(now)
q "VACUUM ANALYZE parca.samples" >/dev/null
raw_rows=$(q "SELECT count(*) FROM parca.samples")
echo "loaded $raw_rows rows by COPY in $(calc %.1f "$t1 - $t0") s (generation included)"

# run_timed NAME SQL: runs SQL in one backend; prints the backend's CPU
# seconds and the wall seconds it took; its output is in $work/NAME.out
cpu_s() { awk '{ printf "%.2f", ($14 + $15) / '"$(getconf CLK_TCK)"' }' "/proc/$1/stat"; }
run_timed() {
	local job pid cpu0 cpu1 t0 t1
	rm -f "$work/pid"
	printf '%s\n' "SET parca.rollups = on;" "SELECT pg_backend_pid() AS pid \\gset" "\\o $work/pid" \
		"SELECT :pid;" "\\o" "SELECT pg_sleep(2);" "$2" "SELECT pg_sleep(2);" > "$work/$1.sql"
	chmod 644 "$work/$1.sql"
	psql -X -q -At -f "$work/$1.sql" > "$work/$1.out" &
	job=$!
	while [ ! -s "$work/pid" ]; do sleep 0.2; done
	sleep 1
	pid=$(tr -d ' \n' < "$work/pid")
	cpu0=$(cpu_s "$pid")
	t0=$(now)
	sleep 1.5
	while [ "$(q "SELECT wait_event FROM pg_stat_activity WHERE pid = $pid")" != "PgSleep" ]; do sleep 0.2; done
	t1=$(now)
	cpu1=$(cpu_s "$pid")
	wait "$job"
	echo "$(calc %.2f "$cpu1 - $cpu0") $(calc %.1f "$t1 - $t0 - 1.5")"
}

# 1. the loaded hours, rolled up as the worker would: hours, the day, the week
read -r roll_cpu roll_wall <<< "$(run_timed rollup "SELECT * FROM parca_rollup_hours('-infinity', 'infinity');")"
echo "rolled up (hours|days|weeks|rows): $(sed -n 2p "$work/rollup.out")"
echo "rolling up $HOURS hours of $SERIES series: $roll_wall s, backend CPU $roll_cpu s" \
	"= $(calc %.2f "$roll_cpu / $HOURS") s per hour of data = $(calc %.2f "$roll_cpu * 100 / ($HOURS * 3600)") % of one core"
q "VACUUM ANALYZE parca.samples_hourly, parca.samples_daily" >/dev/null

bytes() { q "SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree('$1') WHERE isleaf"; }
raw_bytes=$(bytes parca.samples)
hourly_rows=$(q "SELECT count(*) FROM parca.samples_hourly")
hourly_bytes=$(bytes parca.samples_hourly)
day_rows=$(q "SELECT count(*) FROM parca.samples_daily")
day_bytes=$(bytes parca.samples_daily)
sums_bytes=$(q "SELECT pg_total_relation_size('parca.profiles_hourly')")
# a row of the hours' sums as stored: its columns, tuple header and line
# pointer (28 bytes), its primary key's index entry (16 + 16 bytes)
sums_row_bytes=$(q "SELECT round(avg(pg_column_size(p.*)) + 28 + 32) FROM parca.profiles_hourly p")
printf 'space of the %s hours: raw %s rows, %.1f MB; hourly %s rows (%s per series and hour), %.1f MB (%.1f %% of raw); the day %s rows (%s per series), %.1f MB; the hours'"'"' sums %s rows, %.0f kB\n' \
	"$HOURS" "$raw_rows" "$(calc %f "$raw_bytes / 1e6")" "$hourly_rows" "$(( hourly_rows / HOURS / SERIES ))" \
	"$(calc %f "$hourly_bytes / 1e6")" "$(calc %f "100 * $hourly_bytes / $raw_bytes")" \
	"$day_rows" "$(( day_rows / SERIES ))" "$(calc %f "$day_bytes / 1e6")" \
	"$(q "SELECT count(*) FROM parca.profiles_hourly")" "$(calc %f "$sums_bytes / 1e3")"

sel='cpu:samples:count:cpu:nanoseconds:delta'
row() { printf '%-44s %10s %10s %8s  %s\n' "$@"; }
# compare LABEL EXPR: EXPR's time from raw rows and through rollups (best
# of 3, the profile made and its stacks counted), and whether both are
# the same bytes; sets raw_s
compare() {
	local sql="SELECT parca_profile_stacks($2)" rollup_s same
	raw_s=$(best_of_3 "SET parca.rollups = off; $sql")
	rollup_s=$(best_of_3 "SET parca.rollups = on; $sql")
	sql="SELECT md5(($2)::text)"
	same=$([ "$(q "SET parca.rollups = off; $sql" | tail -1)" = "$(q "SET parca.rollups = on; $sql" | tail -1)" ] && echo yes || echo NO)
	row "$1" "$raw_s" "$rollup_s" "$(calc %.1fx "$raw_s / $rollup_s")" "$same"
}
row query raw_s rollup_s speedup same
compare "flame graph, the $HOURS hours" "parca_query('$sel', '$first', '$last')"
raw_flame_s=$raw_s
compare "diff of the two halves" "parca_diff(parca_query('$sel', '$first', '$half'), parca_query('$sel', '$half', '$last'))"
raw_diff_s=$raw_s
# a range with ragged edges: 10 minutes in, 10 minutes short
compare "flame graph, ragged edges" \
	"parca_query('$sel', '$first'::timestamptz + interval '10 min', '$last'::timestamptz - interval '10 min')"

# the time series (Grafana's panel), by hour: from the hours' sums
range="parca_query_range('$sel', '$first', '$last', '1 hour')"
raw_s=$(best_of_3 "SET parca.rollups = off; SELECT count(*) FROM $range")
rollup_s=$(best_of_3 "SET parca.rollups = on; SELECT count(*) FROM $range")
sql="SELECT md5(string_agg(r::text, ',' ORDER BY r.time, r.series)) FROM $range r"
same=$([ "$(q "SET parca.rollups = off; $sql" | tail -1)" = "$(q "SET parca.rollups = on; $sql" | tail -1)" ] && echo yes || echo NO)
row "parca_query_range, the $HOURS hours by hour" "$raw_s" "$rollup_s" "$(calc %.1fx "$raw_s / $rollup_s")" "$same"

# the worker's round (parca_maintain_rollups): with nothing new, then
# after one late profile (one series, its samples) written into the
# second hour, which is rolled up again with its day and week
run_timed round0 "SELECT * FROM parca_maintain_rollups();" >/dev/null
read -r idle_cpu idle_wall <<< "$(run_timed round1 "SELECT * FROM parca_maintain_rollups();")"
q "INSERT INTO parca.samples
   SELECT time + interval '5 seconds', series_id, stack, value, period, duration, num_labels FROM parca.samples
   WHERE series_id = 1 AND time = (SELECT min(time) FROM parca.samples
                                   WHERE series_id = 1 AND time >= '$first'::timestamptz + interval '1 hour');
   SELECT pg_stat_force_next_flush()" >/dev/null
read -r late_cpu late_wall <<< "$(run_timed round2 "SELECT * FROM parca_maintain_rollups();")"
echo "a worker round with nothing new: $idle_wall s, backend CPU $idle_cpu s;" \
	"after a late profile in the second hour: $late_wall s, backend CPU $late_cpu s" \
	"(hours|days|weeks|dropped: $(sed -n 2p "$work/round2.out"))"
compare "flame graph, the $HOURS hours, after the late profile" "parca_query('$sel', '$first', '$last')"

# 2. the month, of generated copies of the first day's rollup
t0=$(now)
q "DO \$\$
BEGIN
    FOR k IN 1..29 LOOP
        PERFORM parca.create_rollup_partition('day', '$first'::timestamptz + k * interval '1 day');
        -- (in the day's order: a series' rows together, as rollups are written)
        INSERT INTO parca.samples_daily
        SELECT time + k * interval '1 day', series_id, stack, value, period, duration, num_labels
        FROM parca.samples_daily WHERE time = '$first';
        INSERT INTO parca.rollup_days (start) VALUES ('$first'::timestamptz + k * interval '1 day');
    END LOOP;
END
\$\$" >/dev/null
t1=$(now)
echo "GENERATED: 29 copies of the first day's daily rollup, as the days after it, in $(calc %.1f "$t1 - $t0") s"
q "TRUNCATE parca.samples_weekly, parca.rollup_weeks" >/dev/null
read -r week_cpu week_wall <<< "$(run_timed weeks "SELECT count(*) FROM generate_series(0, 4) k, parca.rollup_period('week', '$first'::timestamptz + k * interval '7 days');")"
echo "rolling up the 30 days into 5 weeks (the last one of 2 days): $week_wall s, backend CPU $week_cpu s" \
	"= $(calc %.2f "$week_cpu * 7 / 30") s per week of data = $(calc %.4f "$week_cpu * 100 / (30 * 86400)") % of one core"
q "VACUUM ANALYZE parca.samples_daily, parca.samples_weekly" >/dev/null

stop_month=$(q "SELECT '$first'::timestamptz + interval '30 days' - interval '1 microsecond'")
weekly_rows=$(q "SELECT count(*) FROM parca.samples_weekly WHERE time < '$first'::timestamptz + interval '28 days'")
daily_rows=$(q "SELECT count(*) FROM parca.samples_daily WHERE time >= '$first'::timestamptz + interval '28 days'")
month="parca_query('$sel', '$first', '$stop_month')"
month_s=$(best_of_3 "SET parca.rollups = on; SELECT parca_profile_stacks($month)")
# the same month through days only: the weeks taken off the list for the query
days_only() { echo "BEGIN; DELETE FROM parca.rollup_weeks; SET LOCAL parca.rollups = on; $1; ROLLBACK"; }
month_days_s=$(best_of_3 "$(days_only "SELECT parca_profile_stacks($month)")")
same_levels=$([ "$(q "SET parca.rollups = on; SELECT md5($month::text)" | tail -1)" = \
	"$(q "$(days_only "SELECT md5($month::text)")" | tail -1)" ] && echo yes || echo NO)
# the copies are of the first day: the month's total is 30 of its totals
total_ok=$([ "$(q "SET parca.rollups = on; SELECT parca_profile_total($month) = 30 * parca_profile_total(parca_query('$sel', '$first', '$first'::timestamptz + interval '1 day' - interval '1 microsecond'))" | tail -1)" = t ] && echo yes || echo NO)
echo "the month (30 days, $SERIES series) reads $weekly_rows weekly rows (4 weeks) and $daily_rows daily rows (2 days)" \
	"= $(calc %.2f "($weekly_rows + $daily_rows) / 1e6") M rows, $(calc %.1f "($weekly_rows + $daily_rows) / $month_s / 1e6") M rows/s;" \
	"through days only: $(q "SELECT count(*) FROM parca.samples_daily") daily rows"
row query raw_s rollup_s speedup "same"
row "flame graph, the month (GENERATED)" "$(calc %.1f "$raw_flame_s * 720 / $HOURS")~" \
	"$month_s" "$(calc %.0fx "$raw_flame_s * 720 / $HOURS / $month_s")~" "weeks = days only: $same_levels; total = 30 x the day's: $total_ok"
row "the month through days only (no weeks)" "" "$month_days_s" "" ""
week() { echo "parca_query('$sel', '$first'::timestamptz + interval '$1 days', '$first'::timestamptz + interval '$(( $1 + 7 )) days' - interval '1 microsecond')"; }
diff_s=$(best_of_3 "SET parca.rollups = on; SELECT parca_profile_stacks(parca_diff($(week 0), $(week 7)))")
row "diff of two weeks, Thu-Wed (GENERATED)" "$(calc %.1f "$raw_diff_s * 336 / $HOURS")~" \
	"$diff_s" "$(calc %.0fx "$raw_diff_s * 336 / $HOURS / $diff_s")~" ""
# Monday weeks: from daily rollups, the weekly ones being Thursday's
diff_mon_s=$(best_of_3 "SET parca.rollups = on; SELECT parca_profile_stacks(parca_diff($(week 4), $(week 11)))")
row "diff of two weeks, Mon-Sun (GENERATED)" "$(calc %.1f "$raw_diff_s * 336 / $HOURS")~" \
	"$diff_mon_s" "$(calc %.0fx "$raw_diff_s * 336 / $HOURS / $diff_mon_s")~" ""
echo "(~: scaled from the loaded hours' raw time by the hours read, not measured: the month's raw rows are not loadable here)"

daily_bytes=$(bytes parca.samples_daily)
weekly_bytes=$(bytes parca.samples_weekly)
printf 'space for the month of %s series: raw %.0f MB (scaled); hourly %.0f MB (scaled); hour sums %s rows, %.1f MB (%s bytes a row); daily %.0f MB; weekly %.0f MB (%s rows per series and week)\n' \
	"$SERIES" "$(calc %f "$raw_bytes * 720 / $HOURS / 1e6")" "$(calc %f "$hourly_bytes * 720 / $HOURS / 1e6")" \
	"$(( SERIES * 720 ))" "$(calc %f "$SERIES * 720 * $sums_row_bytes / 1e6")" "$sums_row_bytes" \
	"$(calc %f "$daily_bytes / 1e6")" "$(calc %f "$weekly_bytes / 1e6")" "$(( weekly_rows / 4 / SERIES ))"
printf 'worker CPU to keep them for %s series: %.2f %% of one core (hours and days, from the loaded hours) + %.4f %% (weeks)\n' \
	"$SERIES" "$(calc %f "$roll_cpu * 100 / ($HOURS * 3600)")" "$(calc %f "$week_cpu * 100 / (30 * 86400)")"
