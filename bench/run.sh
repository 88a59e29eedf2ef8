#!/usr/bin/env bash
# Runs every benchmark, bench/*.sh but this one, one after the other
# (`make bench`).  Each prints its own figures.
set -uo pipefail
cd "$(dirname "$0")"
status=0
for bench in *.sh; do
	[ "$bench" = run.sh ] && continue
	echo "=== bench/$bench"
	bash "$bench" || status=1
done
exit $status
