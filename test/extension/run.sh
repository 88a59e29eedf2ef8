#!/usr/bin/env bash
# The extension without shared_preload_libraries: CREATE EXTENSION,
# ingestion, queries and export work; only the workers' views say what
# they need.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

# A later line wins: the cluster starts without the library preloaded.
start_cluster 54405 "shared_preload_libraries = ''"
tmp=$(mktemp -d)
chmod 755 "$tmp"
cp "$SHARED_TESTDATA/pprof/parca/profile1.pb.gz" "$tmp/p.gz"
chmod 644 "$tmp/p.gz"

check_eq "not preloaded" "" "$(q "SHOW shared_preload_libraries")"
check_eq "the extension is created" "parca" "$(q "SELECT extname FROM pg_extension WHERE extname = 'parca'")"
check_eq "ingestion works" "64" \
	"$(q "SELECT parca_ingest_pprof(pg_read_binary_file('$tmp/p.gz'), 'cpu')")"
check_eq "queries work" "t" \
	"$(q "SELECT parca_profile_total(parca_query('cpu:cpu:nanoseconds:cpu:nanoseconds:delta', '-infinity', 'infinity')) > 0")"
check_eq "export works" "t" \
	"$(q "SELECT length(parca_pprof(parca_query('cpu:cpu:nanoseconds:cpu:nanoseconds:delta', '-infinity', 'infinity'))) > 100")"
check "scrape configuration can be edited" q "INSERT INTO parca.scrape_jobs (job_name) VALUES ('later')"
check "parca.targets says the worker needs preloading" \
	sh -c "psql -X -qAt -c 'SELECT * FROM parca.targets' 2>&1 | grep -q 'shared_preload_libraries'"
check "so does parca.workers" \
	sh -c "psql -X -qAt -c 'SELECT * FROM parca.workers' 2>&1 | grep -q 'need parca in shared_preload_libraries'"
check_eq "and no background worker runs" "0" \
	"$(q "SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'parca %'")"

rm -rf "$tmp"
finish
