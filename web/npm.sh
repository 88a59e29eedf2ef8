#!/usr/bin/env bash
# Installs the npm packages of a package.json/package-lock.json pair into a
# folder outside the tree keyed by the lock file (npm ci, once per lock;
# seconds after the first time), and prints that folder.
#
# usage: web/npm.sh DIR_WITH_PACKAGE_JSON [CACHE_ROOT]
#   CACHE_ROOT defaults to $PARCA_WEB_NPM_DIR or /tmp/parca-web-npm
set -euo pipefail
src=$(cd "$1" && pwd)
root=${2:-${PARCA_WEB_NPM_DIR:-/tmp/parca-web-npm}}
install=$root/$(sed -n 's/^  "name": "\(.*\)",$/\1/p' "$src/package.json" | head -1)-$(sha256sum "$src/package-lock.json" | cut -c1-16)
if [ ! -f "$install/.complete" ]; then
	rm -rf "$install"
	mkdir -p "$install"
	cp "$src/package.json" "$src/package-lock.json" "$install/"
	# peers are pinned in package.json; npm's own peer resolution would pull
	# the newest Grafana packages in beside them
	if ! (cd "$install" && npm ci --legacy-peer-deps --no-audit --no-fund --loglevel=error) >"$install/npm.log" 2>&1; then
		tail -n 20 "$install/npm.log" >&2
		echo "web/npm.sh: npm ci in $install failed" >&2
		exit 1
	fi
	touch "$install/.complete"
fi
echo "$install"
