#!/usr/bin/env bash
# make bench: every bench/*.sh in turn (each starts what it needs).
set -euo pipefail
cd "$(dirname "$0")"
for b in *.sh; do
	[ "$b" = run.sh ] && continue
	echo "=== bench/$b"
	bash "$b"
done
