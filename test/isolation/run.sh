#!/usr/bin/env bash
# Sessions against each other, step by step (PostgreSQL's isolation
# tester): compaction of parca_columnar tables against other compactions,
# VACUUM, commits and readers; readers that read partitions directly
# (parca_query, the metastore's collection) against their drop.  Specs in
# specs/, expected outputs in expected/.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"

port=$(( ${PARCA_ISOLATION_TEST_PORT:-54471} + ${PARCA_TEST_PORT_OFFSET:-0} ))
pgxs_test=$(dirname "$(pg_config --pgxs)")/../test
work=$(mktemp -d /tmp/parca-isolation.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -r "$TEST_ROOT/isolation/specs" "$TEST_ROOT/isolation/expected" "$TEST_ROOT/regress/parca.conf" "$work/"
chown -R postgres: "$work"
specs=$(cd "$work/specs" && ls *.spec | sed 's/\.spec$//' | sort)
# shellcheck disable=SC2086
runuser -u postgres -- "$pgxs_test/isolation/pg_isolation_regress" \
	--inputdir="$work" --outputdir="$work" --temp-instance="$work/tmp_check" \
	--port="$port" --temp-config="$work/parca.conf" --load-extension=parca \
	--bindir="$(pg_config --bindir)" $specs | tee "$work/isolation.log" || true
[ -f "$work/regression.diffs" ] && cat "$work/regression.diffs"
for s in $specs; do
	check "isolation: $s" grep -qE "^(test| ) +$s +\.\.\. ok" "$work/isolation.log"
done
finish
