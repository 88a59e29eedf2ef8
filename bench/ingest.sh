#!/usr/bin/env bash
# Ingest speed and storage of parca_ingest_pprof on the Go heap profile
# parca/alloc_objects.pb.gz (4,661 samples, 4 sample types):
#  - cold: empty metastore, new session;
#  - warm, same session: its locations known to the backend;
#  - warm, new session: known to the database, not to the backend;
#  - bytes per sample row with the profile stored 100 times at different times.
set -euo pipefail
. "$(dirname "$0")/../test/lib.sh"
start_cluster 54403 "shared_buffers = 256MB" "max_wal_size = 4GB"
file=$SHARED_TESTDATA/pprof/parca/alloc_objects.pb.gz
stage=$(mktemp -d)
chmod 755 "$stage"
cp "$file" "$stage/p.gz"
gzip -dc "$file" > "$stage/p.pb"

# median ms of n calls of SQL, each its own statement and transaction
timed() {
	local n=$1 sql=$2
	for i in $(seq "$n"); do echo "SELECT $sql;"; done |
		psql -X -q -v ON_ERROR_STOP=1 -c '\timing on' -f - |
		sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | sort -n |
		awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
reset_store() {
	q "TRUNCATE parca.samples, parca.series, parca.locations, parca.functions, parca.mappings"
}
ingest="parca_ingest_pprof(pg_read_binary_file('$stage/p.gz'), 'memory', '{\"job\": \"bench\"}')"

cold=()
for i in 1 2 3 4 5; do
	reset_store
	cold+=("$(timed 1 "$ingest")")
done
cold_ms=$(printf '%s\n' "${cold[@]}" | sort -n | sed -n 3p)
reset_store
q "SELECT $ingest" >/dev/null
warm_ms=$(timed 20 "$ingest")
# CPU time of the backend per warm call (utime + stime from /proc), which
# other load on the machine hardly changes, unlike wall time.
ticks=$(getconf CLK_TCK)
{
	echo "SELECT pg_backend_pid() AS pid \\gset"
	echo "\\setenv BACKEND_PID :pid"
	echo "SELECT $ingest;"
	echo "\\! awk '{ print \$14 + \$15 }' /proc/\$BACKEND_PID/stat > $stage/cpu0"
	for i in $(seq 50); do echo "SELECT $ingest;"; done
	echo "\\! awk '{ print \$14 + \$15 }' /proc/\$BACKEND_PID/stat > $stage/cpu1"
} | psql -X -q -v ON_ERROR_STOP=1 -f - >/dev/null
warm_cpu_ms=$(awk -v a="$(cat "$stage/cpu0")" -v b="$(cat "$stage/cpu1")" -v t="$ticks" \
	'BEGIN { printf "%.2f", (b - a) * 1000 / t / 50 }')
new_session=()
for i in 1 2 3 4 5; do
	new_session+=("$(timed 1 "$ingest")")
done
new_session_ms=$(printf '%s\n' "${new_session[@]}" | sort -n | sed -n 3p)

# 100 copies at different times: a time_nanos field appended to the plain
# protobuf overrides the first (protobuf keeps the last value of a field).
reset_store
q "CREATE FUNCTION parca_bench_varint(v bigint) RETURNS bytea LANGUAGE plpgsql AS \$\$
DECLARE out bytea := ''; BEGIN
  LOOP
    IF v < 128 THEN RETURN out || set_byte('\\x00'::bytea, 0, v::int); END IF;
    out := out || set_byte('\\x00'::bytea, 0, (v % 128 + 128)::int);
    v := v / 128;
  END LOOP; END \$\$" >/dev/null
for i in $(seq 100); do
	echo "SELECT parca_ingest_pprof(pg_read_binary_file('$stage/p.pb') || '\\x48'::bytea || parca_bench_varint(1608199718549304626 + $i * 10000000000), 'memory', '{\"job\": \"bench\"}');"
done | psql -X -q -v ON_ERROR_STOP=1 -f - >/dev/null
q "VACUUM ANALYZE parca.samples" >/dev/null
# parca.samples is partitioned: its size and access method are its leaves'
read -r rows bytes times <<<"$(q "SELECT count(*), (SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('parca.samples')),
                                         count(DISTINCT time) FROM parca.samples" | tr '|' ' ')"
am=$(q "SELECT string_agg(DISTINCT a.amname, '+') FROM pg_partition_tree('parca.samples') t
        JOIN pg_class c ON c.oid = t.relid JOIN pg_am a ON a.oid = c.relam WHERE t.isleaf")

echo "parca_ingest_pprof, parca/alloc_objects.pb.gz (4,661 samples x 4 types, 9,368 rows):"
printf '  %-44s %8s ms\n' "cold (empty metastore, new session)" "$cold_ms"
printf '  %-44s %8s ms   (target <= 10; Parca normalizer ~29)\n' "warm (locations known, same session)" "$warm_ms"
printf '  %-44s %8s ms\n' "warm (locations known, new session)" "$new_session_ms"
printf '  %-44s %8s ms   (backend CPU time, 50 calls)\n' "warm, CPU time per call" "$warm_cpu_ms"
echo "  (wall times include waiting for a CPU: load average $(cut -d' ' -f1 /proc/loadavg) on $(nproc) cores)"
echo "storage, the profile 100 times at $times distinct times (samples table: ${am:-heap}):"
printf '  %s rows, %s bytes, %s bytes/row\n' "$rows" "$bytes" "$(( bytes / rows ))"
rm -rf "$stage"
