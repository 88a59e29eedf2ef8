#!/usr/bin/env bash
# The metastore's garbage collection (parca_metastore_gc, sql/45_metastore_gc.sql)
# while profiles are ingested: two sessions store the fixtures over and
# over (each a long-lived backend whose metastore cache stays warm between
# its calls), while a third empties a partition now and then and collects
# the garbage.  Afterwards every stored row still resolves: its series,
# every location of its stack, every function and mapping of those
# locations exist.  About 40 s.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
require_fixtures

SECONDS_OF_LOAD=${PARCA_GC_TEST_SECONDS:-25}
start_cluster "${PARCA_GC_TEST_PORT:-54471}" "parca.rollups = on"
work=$PGDATA_DIR/gc
mkdir -p "$work"
cp "$SHARED_TESTDATA"/pprof/parca/*.pb.gz "$SHARED_TESTDATA"/pprof/google-pprof/heap "$work/" 2>/dev/null || true
chown -R postgres: "$work"

# every fixture once, then partitions of their own for their days
fixtures=$(cd "$work" && ls | grep -v '^stop$')
for f in $fixtures; do
	q "SELECT parca_ingest_pprof(pg_read_binary_file('$work/$f'), 'gc', '{\"f\": \"$f\"}')" >/dev/null 2>&1 || true
done
q "SELECT * FROM parca_maintain_partitions()" >/dev/null
check "the fixtures are in several partitions" test "$(q "SELECT count(DISTINCT tableoid) FROM parca.samples")" -ge 3
# the mappings of a profile that no location uses are garbage at once
q "SELECT * FROM parca_metastore_gc()" >/dev/null
check_eq "a collection with nothing to collect removes nothing" "0|0|0|0" "$(q "SELECT * FROM parca_metastore_gc()")"


# The references cache: a partition is read again only when rows came to
# it.  A collection with no new rows rewrites no cache entry.  A fixture
# that no row of a partition already read comes from is then written into
# it (its time set to that partition's: a time_nanos field appended, the
# last one wins), and every other partition emptied: if the collection
# went by the cache alone, the new rows' locations would be taken for
# garbage.
cache_rows() {
	q "SELECT string_agg(partition::regclass || ':' || xmin, ',' ORDER BY partition)
	   FROM parca.partition_references_cache"
}
check "the collection keeps every columnar partition's references" \
	test "$(q "SELECT count(*) FROM parca.partition_references_cache")" -ge 3
cached=$(cache_rows)
q "SELECT * FROM parca_metastore_gc()" >/dev/null
check_eq "a collection with no new rows reads no partition again" "$cached" "$(cache_rows)"
read -r late_part late_time <<<"$(q "SELECT tableoid::regclass, min(time) FROM parca.samples
	WHERE tableoid <> 'parca.samples_default'::regclass GROUP BY 1 ORDER BY 1 LIMIT 1" | tr '|' ' ')"
late=$(q "SELECT se.labels->>'f' FROM parca.samples s JOIN parca.series se ON se.id = s.series_id
	GROUP BY 1 HAVING bool_and(s.tableoid <> '$late_part'::regclass) ORDER BY 1 LIMIT 1")
# plain protobuf: a field appended to gzip data would not be read
gzip -dcf "$work/$late" > "$work/late.pb"
chown postgres: "$work/late.pb"
psql -X -qAt -v ON_ERROR_STOP=1 -c "CREATE FUNCTION pg_temp.time_field(t timestamptz) RETURNS bytea LANGUAGE plpgsql AS \$\$
DECLARE v bigint := (extract(epoch FROM t) * 1e9)::bigint; out bytea := '\\x48';
BEGIN
  LOOP
    IF v < 128 THEN RETURN out || set_byte('\\x00'::bytea, 0, v::int); END IF;
    out := out || set_byte('\\x00'::bytea, 0, (v % 128 + 128)::int);
    v := v / 128;
  END LOOP;
END \$\$" -c "SELECT parca_ingest_pprof(pg_read_binary_file('$work/late.pb') || pg_temp.time_field('$late_time'),
	'gc_late', '{}')" >/dev/null
check "the late profile ($late) went into a partition already read ($late_part)" \
	test "$(q "SELECT count(*) FROM parca.samples s JOIN parca.series se ON se.id = s.series_id
	           WHERE se.profile_type LIKE 'gc_late:%' AND s.tableoid = '$late_part'::regclass")" -gt 0
q "DO \$\$ DECLARE p regclass; BEGIN
	FOR p IN SELECT partition FROM parca.partitions WHERE partition <> '$late_part'::regclass LOOP
		EXECUTE format('TRUNCATE %s', p);
	END LOOP; END \$\$"
q "SELECT * FROM parca_metastore_gc()" >/dev/null
check "the collection read that partition again" \
	test "$(q "SELECT xmin FROM parca.partition_references_cache WHERE partition = '$late_part'::regclass")" \
	!= "$(echo "$cached" | tr ',' '\n' | grep "^$late_part:" | cut -d: -f2)"
check_eq "and every stored row resolves, the late profile's too" "0|0|0|0" "$(metastore_resolves)"

# writers and a collector at once (test/lib.sh): the collector empties a
# partition and collects
# shellcheck disable=SC2086
gc_under_writers "$work" "$SECONDS_OF_LOAD" "DO \$\$ BEGIN EXECUTE (SELECT format('TRUNCATE %s', partition)
	FROM parca.partitions WHERE NOT is_default ORDER BY random() LIMIT 1); END \$\$" $fixtures
# the series index (sql/30_metastore.sql) followed the series the
# collections removed: it lists exactly the label values of the series
# left, and no hours of a series gone
series_index_consistent() {
	q "SELECT (SELECT count(*) FROM (SELECT s.profile_type, e.key, e.value FROM parca.series s, jsonb_each_text(s.labels) e
	                                  EXCEPT SELECT profile_type, name, value FROM parca.label_values) x)
	  || '|' || (SELECT count(*) FROM (SELECT profile_type, name, value FROM parca.label_values
	                                  EXCEPT SELECT s.profile_type, e.key, e.value FROM parca.series s, jsonb_each_text(s.labels) e) x)
	  || '|' || (SELECT count(*) FROM parca.series_hours a LEFT JOIN parca.series s ON s.id = a.series_id WHERE s.id IS NULL)"
}
check_eq "the series index holds the label values of the series left, and no hours of those gone" "0|0|0" \
	"$(series_index_consistent)"
# rollups outlive the raw rows (docs/rollups.md): with the raw rows gone,
# a collection keeps the series and locations the rollups name (the
# maintenance worker may have rolled up some hours already; the rest now)
q "SELECT * FROM parca_rollup_hours('-infinity', 'infinity')" >/dev/null
q "TRUNCATE parca.samples"
q "SELECT * FROM parca_metastore_gc()" >/dev/null
check_eq "the rollups' rows resolve after a collection without raw rows: series, locations" "0|0" \
	"$(q "SELECT (SELECT count(*) FROM parca.samples_hourly s LEFT JOIN parca.series se ON se.id = s.series_id
	              WHERE se.id IS NULL)
	  || '|' || (SELECT count(*) FROM (SELECT DISTINCT unnest(parca_stack_location_ids(stack)) AS id
	                                   FROM parca.samples_hourly) u
	             LEFT JOIN parca.locations l USING (id) WHERE l.id IS NULL)")"
check "and some are there to resolve" test "$(q "SELECT count(*) FROM parca.samples_hourly")" -gt 0
# ids a collection removed come back when a profile names them again
q "TRUNCATE parca.samples_hourly, parca.samples_daily, parca.samples_weekly, parca.rollup_hours,
	parca.rollup_days, parca.rollup_weeks, parca.profiles_hourly"
q "SELECT * FROM parca_metastore_gc()" >/dev/null
check_eq "after everything is collected, the metastore is empty" "0|0|0|0" \
	"$(q "SELECT (SELECT count(*) FROM parca.series) || '|' || (SELECT count(*) FROM parca.locations)
		|| '|' || (SELECT count(*) FROM parca.functions) || '|' || (SELECT count(*) FROM parca.mappings)")"
f1=$(echo "$fixtures" | head -1)
{
	echo "SELECT parca_ingest_pprof(pg_read_binary_file('$work/$f1'), 'gc', '{}');"
	echo "SELECT * FROM parca_metastore_gc();"
	echo "SELECT parca_ingest_pprof(pg_read_binary_file('$work/$f1'), 'gc', '{}');"
} > "$work/again.sql"
# a session whose cache knows the ids while another collects them
psql -X -qAt -c "SELECT parca_ingest_pprof(pg_read_binary_file('$work/$f1'), 'gc', '{}')" \
	-c "TRUNCATE parca.samples" -c "SELECT pg_sleep(0)" >/dev/null
psql -X -qAt -f "$work/again.sql" >/dev/null
check_eq "a warm session's ids, collected and named again, resolve" "0|0|0|0" "$(metastore_resolves)"
check "and are stored" test "$(q "SELECT count(*) FROM parca.locations")" -gt 0
# A location registered in a session whose cache then knows it, collected
# by another session (no row names it), and registered again by the first:
# its cache must have been emptied by the collection, or the location
# would be taken as stored and never written again.  (Removing rows of
# parca.samples empties the caches too, so only this order shows it.)
loc='{"address": "0x10", "file": "/bin/gc", "lines": [{"function": "collected"}]}'
coproc session { psql -X -qAtn 2>&1; }
echo "SELECT parca_register_location('$loc');" >&"${session[1]}"
read -r loc_id <&"${session[0]}"
check_eq "collected: the location nothing names" "1" "$(q "SELECT locations FROM parca_metastore_gc()")"
echo "SELECT parca_register_location('$loc');" >&"${session[1]}"
read -r loc_again <&"${session[0]}"
echo '\q' >&"${session[1]}"
check_eq "registered again by the session that had it cached, it is stored again" "$loc_id|1|1" \
	"$loc_again|$(q "SELECT count(*) FROM parca.locations WHERE id = $loc_id")|$(q "SELECT count(*) FROM parca.functions f JOIN parca.locations l ON f.id = ANY (l.function_ids) WHERE l.id = $loc_id")"
# Retention drops the fixtures' partitions (their days are long past):
# the collection after it forgets the series index's hours of them
check "the series index has hours of the fixtures' days" \
	test "$(q "SELECT count(*) FROM parca.label_hours WHERE hour < now() - interval '2 days'")" -gt 0
q "SET parca.retention = '1d'; SELECT * FROM parca_maintain_partitions()" >/dev/null
q "SELECT * FROM parca_metastore_gc()" >/dev/null
check_eq "after retention and a collection, the index has no hours of the partitions dropped" "0|0" \
	"$(q "SELECT (SELECT count(*) FROM parca.series_hours WHERE hour < now() - interval '2 days')
	      || '|' || (SELECT count(*) FROM parca.label_hours WHERE hour < now() - interval '2 days')")"
check_eq "and the label values of the series left" "0|0|0" "$(series_index_consistent)"
finish
