#!/usr/bin/env bash
# The main job on a local embedded default: builds and installs parca,
# starts the project's own PostgreSQL cluster (.parca/ under the project
# folder, port 54329, database "parca"), ingests the pprof fixtures and
# prints the hottest functions; then profiles this machine for 20 s with
# parca-agent and prints its hottest functions.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

bash scripts/deps.sh
make -s -j2
make -s install
make -s -j2 agent
make -s install-agent
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
echo "Hottest functions of the CPU profiles stored (go tool pprof -top order):"
psql -X -P pager=off -c "
SELECT function, round(flat / 1e9, 2) AS flat_s, round(flat_percent::numeric, 2) AS flat_pct,
       round(cum / 1e9, 2) AS cum_s, round(cum_percent::numeric, 2) AS cum_pct
FROM parca_top(parca_query('fixture:cpu:nanoseconds:cpu:nanoseconds:delta{job=\"fixtures\"}',
                           '-infinity', 'infinity'))
ORDER BY flat DESC LIMIT 15"
echo
echo "Profiling this machine with parca-agent (eBPF, 19 Hz per CPU) for 20 s..."
"$repo/agent/parca-agent" --duration 20 --flush-interval 10 2>&1 | grep -E "error|done:" || true
echo "Hottest functions on this machine in the last minute (parca-agent):"
psql -X -P pager=off -c "
SELECT function, round(flat / 1e9, 2) AS flat_s, round(flat_percent::numeric, 2) AS flat_pct,
       round(cum / 1e9, 2) AS cum_s, round(cum_percent::numeric, 2) AS cum_pct
FROM parca_top(parca_query('parca_agent:samples:count:cpu:nanoseconds:delta',
                           now() - interval '1 min', now()))
ORDER BY flat DESC LIMIT 15"
echo
echo "The cluster keeps running: psql -h 127.0.0.1 -p $PARCA_PORT -U postgres parca"
