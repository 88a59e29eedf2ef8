#!/usr/bin/env bash
# The main job on a local embedded default: builds and installs parca,
# starts the project's own PostgreSQL cluster (.parca/ under the project
# folder, port 54329, database "parca"), ingests the pprof fixtures and
# prints the hottest functions.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

bash scripts/deps.sh
make -s -j2
make -s install
. scripts/cluster.sh
cluster_start "$repo"

fixtures=$repo/../shared/testdata/pprof
stage=$(mktemp -d)
chmod 755 "$stage"
for f in "$fixtures"/parca/*.pb.gz "$fixtures"/parca/many/*.pb.gz "$fixtures"/google-pprof/large.cpu; do
	[ -f "$f" ] || continue
	cp "$f" "$stage/"
	name=$(basename "$f")
	job=fixtures
	rows=$(psql -X -qAt -c "SELECT parca_ingest_pprof(pg_read_binary_file('$stage/$name'), 'fixture', jsonb_build_object('job', '$job', 'file', '$name'))")
	echo "ingested $name: $rows sample rows"
done
rm -rf "$stage"

echo
echo "Hottest functions over everything stored (CPU profiles, by self time):"
psql -X -P pager=off -c "
WITH cpu AS (
    SELECT s.stack, s.value * s.period AS nanos
    FROM parca.samples s JOIN parca.series se ON se.id = s.series_id
    WHERE se.profile_type LIKE '%:samples:count:cpu:nanoseconds%'
), leaf AS (
    SELECT f.name AS function, sum(cpu.nanos) AS self_ns
    FROM cpu
    JOIN parca.locations l ON l.id = (parca_stack_location_ids(cpu.stack))[1]
    JOIN parca.functions f ON f.id = l.function_ids[1]
    GROUP BY 1
)
SELECT function,
       round(self_ns / 1e9, 2) AS self_seconds,
       round(100.0 * self_ns / sum(self_ns) OVER (), 2) AS percent
FROM leaf ORDER BY self_ns DESC LIMIT 15"
echo
echo "The cluster keeps running: psql -h 127.0.0.1 -p $PARCA_PORT -U postgres parca"
