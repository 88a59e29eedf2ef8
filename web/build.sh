#!/usr/bin/env bash
# `make web`: installs the UI's npm packages (web/npm.sh, outside the tree)
# and bundles the UI into web/dist/ (web/build.js).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
install=$(bash "$here/npm.sh" "$here")
node "$here/build.js" "$install" "${1:-$here/dist}"
