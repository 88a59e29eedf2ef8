#!/usr/bin/env bash
# `make web`: installs the UI's npm packages (web/npm.sh, outside the tree),
# checks its types (tsc; esbuild only strips them) and bundles it into
# web/dist/ (web/build.js), with a gzipped copy of each text file beside it
# (FILE.gz), which parca-server sends to browsers that take gzip.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
install=$(bash "$here/npm.sh" "$here")
# web/tsconfig.json, with the packages found in the install folder
cat > "$install/tsconfig.json" <<EOF
{ "extends": "$here/tsconfig.json", "include": ["$here/src"],
  "compilerOptions": { "baseUrl": "$install", "paths": { "*": ["node_modules/@types/*", "node_modules/*"] } } }
EOF
node "$install/node_modules/typescript/bin/tsc" -p "$install/tsconfig.json"
out=${1:-$here/dist}
node "$here/build.js" "$install" "$out"
# -n: no name or time inside, so that the same build gives the same bytes
find "$out" -type f \( -name '*.js' -o -name '*.css' -o -name '*.html' -o -name '*.svg' -o -name '*.map' \) \
	-exec gzip -9 -n -k -f {} +
