#!/usr/bin/env bash
# Series benchmark: what a selector and the dashboard's discovery cost
# with few and with many series (docs/query.md, "What a selector costs").
# Two databases side by side, BENCH_SERIES_SMALL (default 10,000) and
# BENCH_SERIES_LARGE (default 1,000,000) series, shaped like the agent's
# under process churn: two profile types (on- and off-CPU, 4:1), 8 nodes,
# processes of 4 threads each with the agent's labels (comm, pid,
# executable, thread_name, thread_id, cpu, cgroup, systemd_unit,
# kernel_release, unwind), created over BENCH_SERIES_HOURS hours (default
# 10, so 100,000 new series an hour at 1 M) that end now, each with a
# sample row in the hour it was created.  Written one hour per
# transaction; the selected series also get three profiles of 100 stacks
# each in the last half hour.
#
# Timed (best of three, ms): parca_series_ids of a selector of 8 series,
# and of a regex over one label; parca_query of the 8 series' 3 profiles;
# discovery as the dashboard calls it (docs/grafana/dashboards/parca.json:
# the last hour), and without a time range, and with a selector; then the
# cost of new series as the agent makes them (parca_series_id and a sample
# row each, 10 series a transaction), per series.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../test/lib.sh"

small=${BENCH_SERIES_SMALL:-10000}
large=${BENCH_SERIES_LARGE:-1000000}
hours=${BENCH_SERIES_HOURS:-10}
new_series=${BENCH_SERIES_NEW:-2000}

start_cluster "${PARCA_BENCH_SERIES_PORT:-54419}" "shared_buffers = 512MB" "max_wal_size = 4GB" \
	"autovacuum = on"
trap 'stop_cluster' EXIT

cpu='parca_agent:samples:count:cpu:nanoseconds:delta'
off='parca_agent:off_cpu:nanoseconds:off_cpu:nanoseconds:delta'

# fill DB N: N series over $hours hours ending now; series i is thread i % 4
# of process i / 4
fill() {
	local db=$1 n=$2 per_hour=$(( $2 / hours ))
	q "CREATE DATABASE $db" >/dev/null
	PGDATABASE=$db q "CREATE EXTENSION parca" >/dev/null
	for h in $(seq 0 $(( hours - 1 ))); do
		PGDATABASE=$db q "
		WITH s AS (
			INSERT INTO parca.series (profile_type, labels)
			SELECT CASE WHEN (i / 4) % 5 = 4 THEN '$off' ELSE '$cpu' END,
			       jsonb_build_object(
			         'node', 'node-' || (i / 4) % 8,
			         'comm', 'comm' || (i / 4) % 300,
			         'pid', (1000 + i / 4)::text,
			         'executable', '/usr/bin/comm' || (i / 4) % 300,
			         'thread_name', 'comm' || (i / 4) % 300 || CASE WHEN i % 4 = 0 THEN '' ELSE '-w' || i % 4 END,
			         'thread_id', (1000 + i)::text,
			         'cpu', (i % 16)::text,
			         'cgroup', '/system.slice/svc' || (i / 4) % 40 || '.service',
			         'systemd_unit', 'svc' || (i / 4) % 40 || '.service',
			         'kernel_release', '6.1.0-18-amd64',
			         'unwind', CASE WHEN i % 3 = 0 THEN 'truncated' ELSE 'complete' END)
			FROM generate_series($h * $per_hour, ($h + 1) * $per_hour - 1) i
			RETURNING id)
		INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
		SELECT now() - interval '$hours hours' + interval '1 hour' * ($h + random()), id,
		       '{1,2,3}'::stacktrace, 1, 52631578, 10000000000
		FROM s" >/dev/null
	done
	# the selected series: 3 profiles of 100 stacks in the last half hour
	PGDATABASE=$db q "INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
		SELECT now() - interval '10 minutes' * p, s.id, ('{' || to_hex(k) || ',' || to_hex(k + 1) || ',7}')::stacktrace, k, 52631578, 10000000000
		FROM parca.series s, generate_series(1, 3) p, generate_series(1, 100) k
		WHERE s.id = ANY (parca_series_ids('$(selector_of "$n" | sed "s/'/''/g")'))" >/dev/null
	PGDATABASE=$db q "SELECT * FROM parca_maintain_partitions()" >/dev/null
	PGDATABASE=$db q "VACUUM ANALYZE" >/dev/null
}
# a selector of 8 series: the last two on-CPU processes (one in five is
# off-CPU), their 4 threads each, by name and pid
selector_of() {
	local p=$(( $1 / 4 - 1 ))
	(( p % 5 == 4 )) && p=$(( p - 1 ))
	local q=$(( p - 1 ))
	(( q % 5 == 4 )) && q=$(( q - 1 ))
	echo "$cpu{comm=~\"comm$(( p % 300 ))|comm$(( q % 300 ))\", pid=~\"$(( 1000 + p ))|$(( 1000 + q ))\"}"
}

t0=$SECONDS
fill small "$small"
t_small=$((SECONDS - t0))
t0=$SECONDS
fill large "$large"
t_large=$((SECONDS - t0))

range="now() - interval '1 hour', now()"
sel_small=$(selector_of "$small")
sel_large=$(selector_of "$large")
row() {
	local name=$1 sql_small=$2 sql_large=$3
	local a b ra rb
	ra=$(PGDATABASE=small q "$sql_small")
	rb=$(PGDATABASE=large q "$sql_large")
	a=$(PGDATABASE=small best_ms "$sql_small")
	b=$(PGDATABASE=large best_ms "$sql_large")
	printf '%-64s %10s %10s   %s | %s\n' "$name" "$a" "$b" "$ra" "$rb"
}
same() { row "$1" "$2" "$2"; }

echo "series: $small and $large ($hours hours of churn); filled in $t_small s and $t_large s"
echo "sizes (small | large): $(PGDATABASE=small q "SELECT pg_size_pretty(pg_total_relation_size('parca.series'))") | $(PGDATABASE=large q "SELECT pg_size_pretty(pg_total_relation_size('parca.series'))") parca.series with its indexes"
for t in label_values series_hours label_hours; do
	if [ "$(PGDATABASE=large q "SELECT to_regclass('parca.$t') IS NOT NULL")" = t ]; then
		echo "  parca.$t: $(PGDATABASE=small q "SELECT pg_size_pretty(pg_total_relation_size('parca.$t'))") | $(PGDATABASE=large q "SELECT pg_size_pretty(pg_total_relation_size('parca.$t'))")"
	fi
done
printf '%-64s %10s %10s   %s\n' "ms (best of 3)" "$small" "$large" "results (small | large)"
row "parca_series_ids, 8 series: {comm=~\"a|b\", pid=~\"c|d\"}" \
	"SELECT cardinality(parca_series_ids('$sel_small'))" "SELECT cardinality(parca_series_ids('$sel_large'))"
same "parca_series_ids, 4 series: {pid=\"1007\"}" "SELECT cardinality(parca_series_ids('$cpu{pid=\"1007\"}'))"
same "parca_series_ids, regex: {thread_id=~\"1234[0-9]\"}" \
	"SELECT cardinality(parca_series_ids('$cpu{thread_id=~\"1234[0-9]\"}'))"
same "parca_series_ids, no type: {thread_id=\"1234\"}" "SELECT cardinality(parca_series_ids('{thread_id=\"1234\"}'))"
row "parca_query of the 8 series, last hour (3 profiles)" \
	"SELECT parca_profile_total(parca_query('$sel_small', $range))" \
	"SELECT parca_profile_total(parca_query('$sel_large', $range))"
echo "discovery as the dashboard calls it (the last hour):"
same "  parca_profile_types(from, to)" "SELECT count(*) FROM parca_profile_types($range)"
same "  parca_labels(type, from, to)" "SELECT count(*) FROM parca_labels('$cpu', $range)"
same "  parca_label_values('comm', type, from, to)" "SELECT count(*) FROM parca_label_values('comm', '$cpu', $range)"
same "  parca_label_values('node', type, from, to)" "SELECT count(*) FROM parca_label_values('node', '$cpu', $range)"
echo "without a time range:"
same "  parca_profile_types()" "SELECT count(*) FROM parca_profile_types()"
same "  parca_labels(type)" "SELECT count(*) FROM parca_labels('$cpu')"
same "  parca_label_values('comm', type)" "SELECT count(*) FROM parca_label_values('comm', '$cpu')"
same "  parca_label_values('comm')" "SELECT count(*) FROM parca_label_values('comm')"
echo "with a selector:"
same "  parca_labels(type{comm=\"comm7\"}, from, to)" "SELECT count(*) FROM parca_labels('$cpu{comm=\"comm7\"}', $range)"
same "  parca_label_values('pid', type{comm=\"comm7\"}, from, to)" \
	"SELECT count(*) FROM parca_label_values('pid', '$cpu{comm=\"comm7\"}', $range)"
same "  parca_label_values('pid', type{comm=\"comm7\"})" \
	"SELECT count(*) FROM parca_label_values('pid', '$cpu{comm=\"comm7\"}')"
echo "many values (the answer is large):"
same "  parca_label_values('pid', type, from, to)" "SELECT count(*) FROM parca_label_values('pid', '$cpu', $range)"

# New series as the agent makes them: parca_series_id of each label set of
# a batch, then its sample rows, 10 series a transaction.
new_series_ms() {
	local db=$1 base=$2
	{
		echo '\timing on'
		for b in $(seq 0 $(( new_series / 10 - 1 ))); do
			echo "BEGIN;"
			echo "INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
			      SELECT now(), parca_series_id('$cpu', jsonb_build_object('node', 'node-new', 'comm', 'fresh',
			             'pid', ($base + $b)::text, 'thread_id', ($base + $b * 10 + i)::text, 'cpu', (i % 16)::text,
			             'kernel_release', '6.1.0-18-amd64', 'unwind', 'complete')),
			             '{1,2,3}'::stacktrace, 1, 52631578, 10000000000
			      FROM generate_series(0, 9) i;"
			echo "COMMIT;"
		done
	} | PGDATABASE=$db psql -X -qAt | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' |
		awk -v n="$new_series" '{ s += $1 } END { printf "%.3f", s / n }'
}
echo "new series as the agent makes them (ms a series, $new_series series, 10 a transaction):"
printf '%-64s %10s %10s\n' "  parca_series_id and a sample row" "$(new_series_ms small 10000000)" "$(new_series_ms large 20000000)"
