#!/usr/bin/env bash
# Runs every test: installs dependencies, builds and installs the
# extension, the agent and the push server (make agent, make install-agent,
# make server, make install-server), runs the
# pg_regress suite against a temporary instance, then each end-to-end suite
# test/*/run.sh.  The last line counts every pg_regress test and every
# end-to-end check.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh
make -s -j2
make -s install
make -s -j2 agent
make -s install-agent
make -s -j2 server
make -s install-server

# PostgreSQL will not run as root, and the clone may live where the
# postgres user cannot read: pg_regress runs on a copy it owns.
work=$(mktemp -d /tmp/parca-regress.XXXXXX)
trap 'rm -rf "$work"' EXIT
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
	--load-extension=parca --bindir="$(pg_config --bindir)" $tests \
	| tee "$work/pg_regress.log" || status=1
if [ -f "$work/regress/regression.diffs" ]; then
	status=1
	head -n 400 "$work/regress/regression.diffs"
fi
passed=$(grep -cE '^(test| ) +[a-z0-9_]+ +\.\.\. ok' "$work/pg_regress.log" || true)
failed=$(grep -cE '\.\.\. FAILED' "$work/pg_regress.log" || true)
echo "pg_regress: $passed passed, $failed failed"

for suite in test/*/run.sh; do
	echo "=== $suite"
	bash "$suite" | tee "$work/suite.log" || status=1
	counts=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$work/suite.log" | tail -1 || true)
	if [ -z "$counts" ]; then
		echo "$suite printed no counts"
		failed=$((failed + 1))
		status=1
		continue
	fi
	passed=$((passed + ${counts%% passed*}))
	suite_failed=${counts#*, }
	failed=$((failed + ${suite_failed%% failed}))
done

echo "$passed passed, $failed failed"
exit $status
