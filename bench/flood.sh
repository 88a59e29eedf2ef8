#!/usr/bin/env bash
# Hash flooding (docs/security.md, "hash tables of what users send"): a
# query over locations whose ids were ground to share a bucket under a
# fixed hash of 64-bit keys (the 16 low bits of id ^ id >> 32, as the
# symbol table's hash took them), side by side in one run with as many
# locations of ordinary ids.  N locations (BENCH_FLOOD_LOCATIONS, default
# 20,000; finding them takes about a minute of one core) of no mapping and
# no lines, one sample each, in a profile of their own per kind; each
# kind's parca_top of the merge, median of 5 in one session.  With keyed
# hashes the two take the same time; with the fixed one the crafted kind
# took 15 times as long at 20,000 (docs/security.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../test/lib.sh"
N=${BENCH_FLOOD_LOCATIONS:-20000}
start_cluster 54408
stage=$(mktemp -d)
chmod 755 "$stage"
trap 'stop_cluster; rm -rf "$stage"' EXIT

cc -O2 -I "$REPO_ROOT/common" -o "$stage/colliding_ids" "$TEST_ROOT/security/colliding_ids.c" \
	"$REPO_ROOT/common/ids/ids.c"
"$stage/colliding_ids" "$N" 16 >"$stage/crafted.txt"
# ordinary ids: addresses past the crafted ones, none of them crafted
seq $(($(tail -1 "$stage/crafted.txt") + 1)) $(($(tail -1 "$stage/crafted.txt") + N)) >"$stage/ordinary.txt"
for kind in crafted ordinary; do
	python3 "$TEST_ROOT/security/hostile_pprof.py" colliding_locations 0 "$stage/$kind.pb.gz" <"$stage/$kind.txt"
	chmod 644 "$stage/$kind.pb.gz"
	q "SELECT parca_ingest_pprof(pg_read_binary_file('$stage/$kind.pb.gz'), '$kind')" >/dev/null
done
bucket_share() {
	q "SELECT round(100.0 * max(n) / sum(n), 1) FROM (SELECT count(*) AS n FROM parca.locations
	   WHERE id IN (SELECT unnest(parca_stack_location_ids(stack)) FROM parca.samples sm
	                JOIN parca.series se ON se.id = sm.series_id WHERE se.profile_type LIKE '$1:%')
	   GROUP BY (id # (id >> 32)) & 65535) t"
}
median_ms() {
	{
		echo '\timing on'
		for _ in 0 1 2 3 4 5; do
			echo "SELECT count(*) FROM parca_top((SELECT parca_merge(stack, value) FROM parca.samples sm
			      JOIN parca.series se ON se.id = sm.series_id WHERE se.profile_type LIKE '$1:%'));"
		done
	} | psql -X -qAt | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -n 5 | sort -g | sed -n 3p
}
printf '%-60s %12s %s\n' "$N locations, one sample each" "parca_top" "largest share of one value of the 16 low bits"
for kind in crafted ordinary; do
	printf '%-60s %9s ms %s %%\n' "$kind ids" "$(median_ms "$kind")" "$(bucket_share "$kind")"
done
