#!/usr/bin/env bash
# The Grafana dashboard (docs/grafana/dashboards/parca.json) checked with
# Grafana's own published code (package.json pins Grafana 13.0's packages):
#  - every panel's and variable's query, interpolated by @grafana/scenes and
#    @grafana/sql for label values with . / ' " and \, several values,
#    "All" and an empty time range, runs against a real cluster and returns
#    exactly the selected series;
#  - the flame graph panel (@grafana/flamegraph) draws what panel 2 and the
#    diff panel 4 return: a plain graph and a diff, their data transform, top
#    table, tooltips and unit, compared with parca_top.
# The packages are installed from the registry into a cache outside the
# tree (PARCA_GRAFANA_NPM_DIR), once per package-lock.json: about 3 minutes
# the first time, seconds after.  The checks themselves take about a minute.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib.sh"

require_fixtures

install=${PARCA_GRAFANA_NPM_DIR:-/tmp/parca-grafana-npm}/$(sha256sum "$here/package-lock.json" | cut -c1-16)
if [ ! -f "$install/.complete" ]; then
	rm -rf "$install"
	mkdir -p "$install"
	cp "$here/package.json" "$here/package-lock.json" "$install/"
	# peers are pinned in package.json; npm's own peer resolution would pull
	# the newest Grafana packages in beside them
	if ! (cd "$install" && npm ci --legacy-peer-deps --no-audit --no-fund --loglevel=error) >"$install/npm.log" 2>&1; then
		tail -n 20 "$install/npm.log"
		echo "FAIL - npm ci of Grafana's packages"
		echo "0 passed, 1 failed"
		exit 1
	fi
	touch "$install/.complete"
fi

start_cluster "${PARCA_GRAFANA_TEST_PORT:-54461}"
work=$(mktemp -d /tmp/parca-grafana-test.XXXXXX)
trap 'stop_cluster; rm -rf "$work"' EXIT
node "$here/build.js" "$install" "$work" || { echo "FAIL - bundling Grafana's packages"; finish; exit 1; }

# the server reads the fixtures itself
copies=$PGDATA_DIR/fixtures
cp -r "$SHARED_TESTDATA/pprof" "$copies"
chown -R postgres: "$copies"

if ! TMPDIR=$work node "$here/run.js" "$work" "$work" "$REPO_ROOT/docs/grafana/dashboards/parca.json" "$copies" \
	> "$work/checks" 2> "$work/err"; then
	check "the checks ran ($(head -c 600 "$work/err"))" false
fi
check_tsv "$work/checks"
finish
