#!/usr/bin/env bash
# Runs every benchmark bench/*.sh (but this one), one after the other.
set -uo pipefail
cd "$(dirname "$0")"
status=0
for b in *.sh; do
	[ "$b" = run.sh ] && continue
	echo "=== bench/$b"
	bash "$b" || status=1
done
exit $status
