#!/usr/bin/env bash
# Runs every test: installs dependencies, builds and installs the
# extension and the agent, runs the pg_regress suite against a temporary
# instance, then each end-to-end suite test/*/run.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

bash scripts/deps.sh
make -s -j2
make -s install

# PostgreSQL will not run as root, and the clone may live where the
# postgres user cannot read: pg_regress runs on a copy it owns.
work=$(mktemp -d /tmp/parca-regress.XXXXXX)
cp -r test/regress "$work/"
mkdir -p "$work/regress/data"
cp -r ../shared/testdata/pprof "$work/regress/data/"
# A gzip bomb: 300 MB of zeros in a few hundred kB.
head -c 300000000 /dev/zero | gzip -1 > "$work/regress/data/bomb.gz"
chown -R postgres: "$work"
pg_regress=$(dirname "$(pg_config --pgxs)")/../test/regress/pg_regress
tests=$(cd test/regress/sql && ls *.sql | sed 's/\.sql$//' | sort)
status=0
runuser -u postgres -- "$pg_regress" \
	--inputdir="$work/regress" --outputdir="$work/regress" \
	--temp-instance="$work/tmp_check" --port="${PARCA_REGRESS_PORT:-54391}" \
	--temp-config="$work/regress/parca.conf" \
	--load-extension=parca --bindir="$(pg_config --bindir)" $tests || status=1
if [ $status -ne 0 ] && [ -f "$work/regress/regression.diffs" ]; then
	head -n 300 "$work/regress/regression.diffs"
fi
regress_summary=$(grep -Eo '(All [0-9]+ tests passed|[0-9]+ of [0-9]+ tests failed)' "$work/regress/regression.out" 2>/dev/null || true)

suites_passed=0
suites_failed=0
for suite in test/*/run.sh; do
	echo "=== $suite"
	if bash "$suite"; then
		suites_passed=$((suites_passed + 1))
	else
		suites_failed=$((suites_failed + 1))
		status=1
	fi
done

echo "pg_regress: ${regress_summary:-did not run}"
echo "end-to-end suites: $suites_passed passed, $suites_failed failed"
rm -rf "$work"
exit $status
