#!/usr/bin/env bash
# pprof in and out: every fixture ingests, and for each of its sample
# types the merged profile exported by parca_pprof reads in go tool pprof
# with the same total and the same per-function flat and cum values as
# the original.  Also: ingesting twice doubles values and adds no
# metadata; files that are not profiles fail cleanly.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

start_cluster 54401
export HOME=${HOME:-/root} GOCACHE=$(mktemp -d) GOFLAGS=
tmp=$(mktemp -d)
chmod 755 "$tmp"
fixtures=$SHARED_TESTDATA/pprof
cp -r "$fixtures" "$tmp/pprof"
chmod -R a+rX "$tmp/pprof"

is_profile() {
	case "$1" in
	*.stripped.pprof | */debuginfo | */metadata | *basic-cpp-no-fp-with-debuginfo | *sample.bin | *README.md) return 1 ;;
	esac
	return 0
}

n=0
for f in $(cd "$tmp/pprof" && find . -type f | sed 's|^\./||' | sort); do
	path="$tmp/pprof/$f"
	if ! is_profile "$f"; then
		# Not profiles, or for a later issue: an error or success, never a crash.
		psql -X -qAt -c "SELECT parca_ingest_pprof(pg_read_binary_file('$path'), 'other')" >/dev/null 2>&1
		check "not a crash: $f" q "SELECT 1"
		continue
	fi
	n=$((n + 1))
	rows=$(q "SELECT parca_ingest_pprof(pg_read_binary_file('$path'), 'fixture', '{\"fixture\": \"$f\"}')")
	check "ingest $f ($rows rows)" test -n "$rows"
	types=$(go tool pprof -raw "$path" 2>/dev/null | sed -n '/^Samples:/{n;p;q}')
	i=0
	for t in $types; do
		name=${t%%/*}
		want="$tmp/want.$n.$i"
		got="$tmp/got.$n.$i"
		go tool pprof -top -nodecount=1000000 -nodefraction=0 -sample_index=$i "$path" >"$want" 2>/dev/null
		go tool pprof -raw "$path" >"$want.raw" 2>/dev/null
		where="se.labels->>'fixture' = '$f' AND split_part(se.profile_type, ':', 2) = '$name'"
		if [ "$(q "SELECT count(*) FROM parca.samples s JOIN parca.series se ON se.id = s.series_id WHERE $where")" = 0 ]; then
			# Every value of this type is zero: nothing is stored.
			check "$f [$t]: all zero" grep -q "of 0 total" "$want"
		else
			export_pprof "$where" "$got.pb.gz"
			go tool pprof -top -nodecount=1000000 -nodefraction=0 "$got.pb.gz" >"$got" 2>/dev/null
			go tool pprof -raw "$got.pb.gz" >"$got.raw" 2>/dev/null
			check "$f [$t]: same total and per-function flat/cum as go tool pprof" \
				python3 "$TEST_ROOT/pprof/compare_top.py" "$want" "$got" "$want.raw" "$got.raw" $i
		fi
		i=$((i + 1))
	done
done
check "fixtures found" test "$n" -ge 15

# Ingesting the same file again doubles the values, adds no metadata.
f=parca/alloc_objects.pb.gz
before=$(q "SELECT (SELECT count(*) FROM parca.locations), (SELECT count(*) FROM parca.functions), (SELECT count(*) FROM parca.mappings), (SELECT sum(value) FROM parca.samples s JOIN parca.series se ON se.id = s.series_id WHERE se.labels->>'fixture' = '$f')")
q "SELECT parca_ingest_pprof(pg_read_binary_file('$tmp/pprof/$f'), 'fixture', '{\"fixture\": \"$f\"}')" >/dev/null
after=$(q "SELECT (SELECT count(*) FROM parca.locations), (SELECT count(*) FROM parca.functions), (SELECT count(*) FROM parca.mappings), (SELECT (sum(value) / 2)::bigint FROM parca.samples s JOIN parca.series se ON se.id = s.series_id WHERE se.labels->>'fixture' = '$f')")
check_eq "second ingest: same metadata counts, doubled values" "$before" "$after"

# A new session (cold cache) ingesting known locations writes no metadata.
check_eq "cold-cache ingest adds no locations" "$(q "SELECT count(*) FROM parca.locations")" \
	"$(q "SELECT parca_ingest_pprof(pg_read_binary_file('$tmp/pprof/$f'), 'again') > 0; SELECT count(*) FROM parca.locations" | tail -1)"

# pg_dump / pg_restore keeps the profiles: samples, series and metastore.
# The fixtures' rows are moved out of the default partition first, so that
# the dump holds columnar partitions (a dump under a move: test/columnar).
q "SELECT parca_maintain_partitions()" >/dev/null
check_eq "pg_dump/pg_restore: the rows are in day partitions" 0 "$(q "SELECT count(*) FROM parca.samples_default")"
summary="SELECT (SELECT count(*) FROM parca.samples), (SELECT sum(value) FROM parca.samples),
                (SELECT count(*) FROM parca.series), (SELECT count(*) FROM parca.locations),
                (SELECT count(*) FROM parca.functions), (SELECT count(*) FROM parca.mappings),
                (SELECT parca_profile_total(parca_query('fixture:cpu:nanoseconds:cpu:nanoseconds:delta',
                                                        '-infinity', 'infinity')))"
before=$(q "$summary")
"$PG_BIN/pg_dump" -Fc -f "$tmp/dump" postgres
# restored with its workers off (docs/workers.md): its maintenance worker
# would make the day's partitions that the dump makes too
q "CREATE DATABASE restored" >/dev/null
q "ALTER DATABASE restored SET parca.workers = off"
"$PG_BIN/pg_restore" -d restored "$tmp/dump" 2>"$tmp/restore.log"
check_eq "pg_dump/pg_restore: same samples, series and metastore" "$before" \
	"$(PGDATABASE=restored q "$summary")"
check_eq "pg_dump/pg_restore: a new series continues the sequence" "t" \
	"$(PGDATABASE=restored q "SELECT parca_series_id('x:a:b:c:d', '{}') > (SELECT max(id) FROM parca.series WHERE profile_type <> 'x:a:b:c:d')")"

rm -rf "$tmp" "$GOCACHE"
finish
