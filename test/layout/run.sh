#!/usr/bin/env bash
# The layers of the code (docs/development.md, "Layers"): every #include of
# the project's own headers goes from a layer to itself or to a layer it
# may call, and no other layer includes a layer's *_internal.h.  A file's
# layer is its folder: src/X/ is layer X, common/ (code shared with the
# agent and the server) is "common", agent/ and server/ are programs of
# their own; src/parca.c, the entry point, may include any layer's face.
# Reads the sources only: no cluster, no build.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$REPO_ROOT"

# LAYER: the layers it may include besides itself (keep in step with the
# table in docs/development.md)
declare -A may=(
	[common]=""
	[types]="common"
	[installation]=""
	[columnar]="common"
	[pprof]="types common"
	[metastore]="types installation columnar common"
	[ingest]="metastore types pprof installation common"
	[query]="metastore types installation columnar pprof maintenance common"
	[symbolize]="metastore types installation common"
	[workers]="installation"
	[maintenance]="symbolize workers installation types common"
	[scrape]="ingest workers installation types common"
	[agent]="common"
	[server]="common"
	[parca]="*"
)

# layer_of FILE: its layer
layer_of() {
	case $1 in
	src/parca.c) echo parca ;;
	src/*/*) local rest=${1#src/}; echo "${rest%%/*}" ;;
	common/*) echo common ;;
	agent/* | server/*) echo "${1%%/*}" ;;
	*) echo "" ;;
	esac
}

# header_layer FILE INCLUDE: the layer of the project's header that FILE's
# #include "INCLUDE" finds, or nothing for a header not of the project
# (PostgreSQL's, a library's, generated ones)
header_layer() {
	local dir=${1%/*} inc=$2
	if [ -f "$dir/$inc" ]; then layer_of "$dir/$inc"
	elif [ -f "src/$inc" ]; then layer_of "src/$inc"
	elif [ -f "common/$inc" ]; then echo common
	fi
}

problems=$(mktemp)
trap 'rm -f "$problems"' EXIT
files=0
while IFS= read -r f; do
	from=$(layer_of "$f")
	[ -n "$from" ] || continue
	files=$((files + 1))
	while IFS=: read -r line inc; do
		to=$(header_layer "$f" "$inc")
		[ -n "$to" ] || continue
		if [ "$to" != "$from" ] && [[ $inc == *_internal.h ]]; then
			echo "$f:$line: includes $inc, internal to layer $to" >> "$problems"
		elif [ "$to" != "$from" ] && [ "${may[$from]-}" != "*" ] &&
			[[ " ${may[$from]-} " != *" $to "* ]]; then
			echo "$f:$line: layer $from includes $inc of layer $to" >> "$problems"
		fi
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
		sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1:\2/')
done < <(git ls-files -co --exclude-standard -- 'src/*.[ch]' 'common/*.[ch]' 'agent/*.[ch]' 'server/*.[ch]')

check "the sources are found ($files files)" [ "$files" -gt 100 ]
check_eq "includes that cross a layer the wrong way" "" "$(cat "$problems")"
finish
