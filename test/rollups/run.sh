#!/usr/bin/env bash
# The rollups against the raw rows, at random (docs/rollups.md): profiles
# over 16 days up to now, rolled up; then steps of random late writes
# (rows into hours rolled up, into empty hours, of new series, on days
# without a partition, into today's hours, into days that retention
# dropped, one transaction writing far-apart times, COPY, by hand
# parca_rollup_hours) interleaved with what the maintenance worker runs
# (parca_maintain_partitions, then parca_maintain_rollups) and with
# retention advancing a day at a time, then over a week of hourly
# rollups.  After each step, random ranges are read with rollups and
# without in one REPEATABLE READ snapshot (parca_query: total and stacks;
# parca_query_range; parca_function_range), where raw rows are kept; and
# where they are not, the rollups must hold every row ever written
# (rt.ledger), for ranges of whole hours (whole days where the hourly
# rollups are dropped), once a round has run since the last write there.
#
# PARCA_ROLLUPS_SEED (default 1) fixes the random choices: a failure names
# it and its step, and happens again with it.  PARCA_ROLLUPS_STEPS
# (default 40) sets the number of steps; about 3 minutes on a loaded
# 2-core machine.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
require_fixtures

SEED=${PARCA_ROLLUPS_SEED:-1}
STEPS=${PARCA_ROLLUPS_STEPS:-40}
echo "# seed $SEED (PARCA_ROLLUPS_SEED), $STEPS steps"

# (the worker makes its partitions once, then sleeps: the rounds are
# called here, where the steps want them)
start_cluster "${PARCA_ROLLUPS_TEST_PORT:-54487}" "parca.rollups = on" \
	"parca.maintenance_naptime = 86400" "jit = off" "client_min_messages = warning"
work=$PGDATA_DIR/fixtures
mkdir -p "$work"
cp "$SHARED_TESTDATA/pprof/google-pprof/sample.cpu" "$SHARED_TESTDATA/pprof/parca/alloc_objects.pb.gz" "$work/"
chown -R postgres: "$work"

cpu='cpu:samples:count:cpu:nanoseconds:delta'
q "CREATE SCHEMA rt"
q "SELECT parca_ingest_pprof(pg_read_binary_file('$work/sample.cpu'), 'cpu', '{\"job\": \"a\"}'),
          parca_ingest_pprof(pg_read_binary_file('$work/sample.cpu'), 'cpu', '{\"job\": \"b\"}'),
          parca_ingest_pprof(pg_read_binary_file('$work/alloc_objects.pb.gz'), 'mem', '{\"job\": \"c\"}')" >/dev/null
q "CREATE TABLE rt.orig AS SELECT * FROM parca.samples" >/dev/null
q "TRUNCATE parca.samples; DELETE FROM parca.columnar_write_log" >/dev/null
# every row written into parca.samples, in the same transaction
q "CREATE TABLE rt.ledger (LIKE parca.samples)"
# day 0 is a Thursday (weeks start on one) 16 to 22 days ago; the hours
# of today before the current one
q "CREATE TABLE rt.t AS SELECT date_bin('7 days', now() - interval '16 days', '1970-01-01 00:00+00') AS day0,
                               date_bin('1 hour', now(), '1970-01-01 00:00+00') AS now_hour"
day0=$(q "SELECT day0 FROM rt.t")
now_hour=$(q "SELECT now_hour FROM rt.t")
days=$(q "SELECT (extract(epoch FROM now_hour - day0) / 86400)::int FROM rt.t")
# rows of the fixtures at time t, values times mult: every series, or
# those of job a as the series of another job
q "CREATE FUNCTION rt.rows(t timestamptz, mult integer, job text) RETURNS SETOF parca.samples
       LANGUAGE sql AS \$\$
    SELECT t, CASE WHEN job IS NULL THEN o.series_id
                   ELSE parca_series_id('$cpu', jsonb_build_object('job', job)) END,
           o.stack, o.value * mult, o.period, o.duration, NULL::jsonb
    FROM rt.orig o
    WHERE job IS NULL OR o.series_id = (SELECT min(x.series_id) FROM rt.orig x
                                        JOIN parca.series s ON s.id = x.series_id
                                        WHERE s.labels ->> 'job' = 'a')
\$\$"
q "CREATE FUNCTION rt.put(t timestamptz, mult integer, job text DEFAULT NULL) RETURNS void
       LANGUAGE sql AS \$\$
    INSERT INTO rt.ledger SELECT * FROM rt.rows(t, mult, job);
    INSERT INTO parca.samples SELECT * FROM rt.rows(t, mult, job);
\$\$"
# what parca_query, parca_query_range and parca_function_range answer,
# and whether they answer the same with rollups and without
q "CREATE FUNCTION rt.answers(sel text, a timestamptz, b timestamptz, step interval) RETURNS text
       LANGUAGE sql AS \$\$
    SELECT concat_ws(' ', parca_profile_total(p), parca_profile_stacks(p),
                     md5((SELECT string_agg(format('%s %s %s %s', t.level, t.value, t.self, t.label), ',' ORDER BY t.n)
                          FROM parca_icicle(p) WITH ORDINALITY AS t(level, value, self, label, n))),
                     md5((SELECT string_agg(r::text, ',' ORDER BY r.time, r.series)
                          FROM parca_query_range(sel, a, b, step) r)),
                     md5((SELECT string_agg(f::text, ',' ORDER BY f.time, f.function)
                          FROM parca_function_range(sel, a, b, '1 day', 'main', 'contains') f)))
    FROM parca_query(sel, a, b) p
\$\$"
q "CREATE FUNCTION rt.differs(sel text, a timestamptz, b timestamptz, step interval) RETURNS text
       LANGUAGE plpgsql AS \$\$
DECLARE
    with_rollups text;
    raw text;
BEGIN
    PERFORM set_config('parca.rollups', 'on', true);
    with_rollups := rt.answers(sel, a, b, step);
    PERFORM set_config('parca.rollups', 'off', true);
    raw := rt.answers(sel, a, b, step);
    PERFORM set_config('parca.rollups', 'on', true);
    RETURN CASE WHEN with_rollups IS DISTINCT FROM raw THEN with_rollups || ' <> raw ' || raw END;
END
\$\$"
# the total of every row written into [a, b], samples:count in the
# period unit, as parca_query gives it
q "CREATE FUNCTION rt.ledger_total(sel text, a timestamptz, b timestamptz) RETURNS numeric
       LANGUAGE sql AS \$\$
    SELECT coalesce(sum(CASE WHEN split_part(s.profile_type, ':', 2) = 'samples'
                              AND split_part(s.profile_type, ':', 3) = 'count' AND l.period > 0
                             THEN l.value * l.period ELSE l.value END), 0)
    FROM rt.ledger l JOIN parca_series(sel) s ON s.id = l.series_id
    WHERE l.time BETWEEN a AND b
\$\$"

# a worker's round, each function in a transaction of its own, with the
# retention of the moment (parca.retention, parca.rollup_retention: set
# here, not in the configuration, whose reload would wake the worker)
retention=0
rollup_retention=0
round() {
	psql -X -qAt -v ON_ERROR_STOP=1 -c "SET parca.retention = '${retention}min'" \
		-c "SET parca.rollup_retention = '${rollup_retention}min'" \
		-c "SELECT parca_maintain_partitions()" -c "SELECT parca_maintain_rollups()" >/dev/null
	rounds=$((rounds + 1))
}
# rand N: a number in [0, N), the next of the seed's sequence.  Calls
# run in subshells ($(rand N)), where bash reseeds RANDOM: the position
# in the sequence is kept in a file, and the number is a hash of it.
rand_file=$(mktemp /tmp/parca-rollups-rand.XXXXXX)
echo 0 > "$rand_file"
rand() {
	local n x
	n=$(<"$rand_file")
	echo $((n + 1)) > "$rand_file"
	x=$(( (SEED * 1000003 + n) & 0xffffffff ))
	x=$(( ((x ^ (x >> 16)) * 0x45d9f3b) & 0xffffffff ))
	x=$(( ((x ^ (x >> 16)) * 0x45d9f3b) & 0xffffffff ))
	echo $(( (x ^ (x >> 16)) % $1 ))
}
# a time: day d (from day0), hour h, minute m
at() { echo "'$day0'::timestamptz + interval '$1 days $2 hours $3 minutes'"; }

# the first load: 6 random hours a day, no row on 3 days (no partition
# is made for them), and on today's hours
gaps=" $(( 1 + $(rand 4) )) $(( 7 + $(rand 4) )) $(( 11 + $(rand 3) )) "
for d in $(seq 0 $((days - 1))); do
	case "$gaps" in *" $d "*) continue ;; esac
	for _ in 1 2 3 4 5 6; do
		q "SELECT rt.put($(at "$d" "$(rand 24)" "$(rand 60)"), $(( 1 + $(rand 5) )))" >/dev/null
	done
done
hours_today=$(q "SELECT extract(hour FROM now_hour AT TIME ZONE 'UTC')::int FROM rt.t")
for h in $(seq 0 $((hours_today - 1))); do
	[ "$(rand 2)" = 0 ] && q "SELECT rt.put($(at "$days" "$h" "$(rand 60)"), 2)" >/dev/null
done
rounds=0
round
round
echo "# $(q "SELECT count(*) FROM rt.ledger") rows from $day0; gap days:$gaps; rolled up: $(q "SELECT count(*) FROM parca.rollup_hours") hours, $(q "SELECT count(*) FROM parca.rollup_days") days, $(q "SELECT count(*) FROM parca.rollup_weeks") weeks"

kept_from=0          # the first day whose raw rows retention keeps
hourly_from=0        # the first day whose hourly rollups are kept
sealed_written=false # rows written into dropped days since the last round
comparisons=0
describe() { echo "seed $SEED, step $step ($op)"; }

# compare SEL A B STEP: rollups on and off agree, in one snapshot
compare() {
	local out
	out=$(psql -X -qAt -v ON_ERROR_STOP=1 -c "BEGIN ISOLATION LEVEL REPEATABLE READ" \
		-c "SELECT rt.differs('$1', $2, $3, '$4')" -c "COMMIT" 2>&1) || out="error: $out"
	comparisons=$((comparisons + 1))
	if [ -z "$out" ]; then
		pass_count=$((pass_count + 1))
	else
		fail_count=$((fail_count + 1))
		echo "FAIL - $(describe): $1 [$2, $3] by $4: $out"
	fi
}
# kept SEL A B: the rollups hold every row written into [a, b]
kept() {
	local out
	out=$(q "SELECT format('%s %s', parca_profile_total(parca_query('$1', $2, $3)), rt.ledger_total('$1', $2, $3))" 2>&1) || true
	comparisons=$((comparisons + 1))
	if [ "${out% *}" = "${out#* }" ]; then
		pass_count=$((pass_count + 1))
	else
		fail_count=$((fail_count + 1))
		echo "FAIL - $(describe): history of $1 [$2, $3]: rollups and written (total): $out"
	fi
}

for step in $(seq 1 "$STEPS"); do
	live=$(( kept_from + $(rand $(( days - kept_from ))) ))
	op=$(rand 10)
	case $op in
	0 | 1) # late rows into an hour, most likely rolled up
		q "SELECT rt.put($(at "$live" "$(rand 24)" "$(rand 60)"), $(( 1 + $(rand 7) )))" >/dev/null ;;
	2) # a new series, in any hour
		q "SELECT rt.put($(at "$live" "$(rand 24)" "$(rand 60)"), 3, 'new$step')" >/dev/null ;;
	3) # a day without a partition (in the default partition until a round)
		for g in $gaps; do
			[ "$g" -ge "$kept_from" ] && { q "SELECT rt.put($(at "$g" "$(rand 24)" "$(rand 60)"), 2)" >/dev/null; break; }
		done ;;
	4) # today's hours
		[ "$hours_today" -gt 0 ] && q "SELECT rt.put($(at "$days" "$(rand "$hours_today")" "$(rand 60)"), 5)" >/dev/null ;;
	5) # a day retention dropped (or a live one while none is)
		if [ "$kept_from" -gt 0 ]; then d=$(rand "$kept_from"); else d=$live; fi
		q "SELECT rt.put($(at "$d" "$(rand 24)" "$(rand 60)"), 4, CASE WHEN $(rand 2) = 0 THEN 'late$step' END)" >/dev/null
		[ "$kept_from" -gt 0 ] && sealed_written=true ;;
	6) # one transaction, two days apart
		q "BEGIN; SELECT rt.put($(at "$live" "$(rand 24)" 5), 1); SELECT rt.put($(at "$(( live > kept_from + 2 ? live - 2 : days - 1 ))" "$(rand 24)" 55), 1); COMMIT" >/dev/null ;;
	7) # COPY, as the agent writes
		t=$(at "$live" "$(rand 24)" "$(rand 60)")
		q "INSERT INTO rt.ledger SELECT * FROM rt.rows($t, 6, NULL)"
		psql -X -qAt -v ON_ERROR_STOP=1 -c "COPY (SELECT * FROM rt.rows($t, 6, NULL)) TO STDOUT (FORMAT binary)" |
			psql -X -q -v ON_ERROR_STOP=1 -c "COPY parca.samples FROM STDIN (FORMAT binary)" ;;
	8) # by hand, over a few days
		q "SELECT rt.put($(at "$live" "$(rand 24)" "$(rand 60)"), 2)" >/dev/null
		q "SELECT parca_rollup_hours($(at "$live" 0 0) - interval '2 days', $(at "$live" 0 0) + interval '1 day')" >/dev/null ;;
	9) # retention: one more day dropped, then (after a week) the hourly
		# rollups of the first week
		if [ "$kept_from" -lt 8 ]; then
			kept_from=$((kept_from + 1))
			retention=$(q "SELECT floor(extract(epoch FROM now() - ($(at "$kept_from" 0 0))) / 60) FROM rt.t")
			if [ "$kept_from" -ge 7 ] && [ "$hourly_from" = 0 ]; then
				hourly_from=7
				rollup_retention=$(q "SELECT floor(extract(epoch FROM now() - ($(at 7 0 0))) / 60) FROM rt.t")
			fi
			round
			sealed_written=false
		fi ;;
	esac
	if [ "$(rand 5)" -lt 3 ]; then
		round
		sealed_written=false
	fi

	# random ranges where raw rows are kept: ragged or on whole hours,
	# days or weeks
	for _ in 1 2 3 4; do
		a=$(( kept_from + $(rand $(( days + 1 - kept_from ))) ))
		len=$(( $(rand 4) == 0 ? 7 + $(rand 8) : $(rand 3) ))
		b=$(( a + len )); [ "$b" -gt "$days" ] && b=$days
		# (on one day, the end hour is not before the start's)
		h1=$(rand 24); h2=$(rand 24)
		[ "$a" = "$b" ] && [ "$h2" -lt "$h1" ] && { h=$h1; h1=$h2; h2=$h; }
		case $(rand 3) in
		0) lo=$(at "$a" "$h1" "$(rand 60)"); hi="$(at "$b" "$h2" "$(rand 60)") + interval '$(( 60 + $(rand 90) )) minutes'" ;;
		1) lo=$(at "$a" "$h1" 0); hi="$(at "$b" "$h2" 0) + interval '3 hours' - interval '1 microsecond'" ;;
		*) lo="date_bin('7 days', $(at "$a" 0 0), '1970-01-01 00:00+00')"; hi="$(at "$b" 0 0) + interval '1 day' - interval '1 microsecond'" ;;
		esac
		case $(rand 4) in 0) s=$cpu ;; 1) s="$cpu{job=\"b\"}" ;; 2) s='mem:alloc_space:bytes:space:bytes' ;; *) s="$cpu{job=~\"new.*|late.*\"}" ;; esac
		case $(rand 3) in 0) st='1 hour' ;; 1) st='2 hours' ;; *) st='1 day' ;; esac
		# (where rows were dropped, the range starts after them)
		lo="greatest($lo, $(at "$kept_from" 0 0))"
		compare "$s" "$lo" "$hi" "$st"
	done
	# and where they are not: whole hours (whole days where the hourly
	# rollups are gone too), once a round has taken in the rows written
	if [ "$kept_from" -gt 0 ] && [ "$sealed_written" = false ]; then
		a=$(rand $(( kept_from + 1 )))
		if [ "$a" -lt "$hourly_from" ]; then
			lo=$(at "$a" 0 0); hi="$(at "$(( a + 1 + $(rand 3) ))" 0 0) - interval '1 microsecond'"
		else
			b=$(( a + $(rand 3) )); h1=$(rand 24); h2=$(rand 24)
			[ "$a" = "$b" ] && [ "$h2" -lt "$h1" ] && { h=$h1; h1=$h2; h2=$h; }
			lo=$(at "$a" "$h1" 0); hi="$(at "$b" "$h2" 0) + interval '1 hour' - interval '1 microsecond'"
		fi
		kept "$cpu" "$lo" "$hi"
		kept 'mem:alloc_space:bytes:space:bytes' "$lo" "$hi"
	fi
done

round
echo "# $rounds rounds; raw rows kept from day $kept_from, hourly rollups from day $hourly_from;" \
	"$(q "SELECT count(*) FROM parca.rollup_hours WHERE generation > 0") hours and" \
	"$(q "SELECT count(*) FROM parca.rollup_days WHERE generation > 0") days sealed;" \
	"$(q "SELECT count(*) FROM parca.columnar_write_log") entries left in the write log"
echo "# $comparisons comparisons, $fail_count failed"
rm -f "$rand_file"
finish
