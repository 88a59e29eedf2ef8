#!/usr/bin/env bash
# Runs every benchmark: each bench/*.sh but this one, in name order.
set -uo pipefail
cd "$(dirname "$0")"
status=0
for b in *.sh; do
	[ "$b" = run.sh ] && continue
	echo "=== bench/$b"
	bash "$b" || status=1
done
exit $status
