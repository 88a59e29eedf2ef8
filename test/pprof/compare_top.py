#!/usr/bin/env python3
"""Compares an original profile with its round trip through parca.

Arguments: want.top got.top want.raw got.raw INDEX, where *.top are
`go tool pprof -top` outputs and *.raw are `go tool pprof -raw` outputs,
and INDEX is the sample type's position in want.raw (got.raw has one).
Checks the signed total of the values, and per function the flat and cum
values.  (The total in -top's header sums absolute values, which merging
a stack's positive and negative delta samples changes, so the signed
total from -raw is what is compared.)  Prints the differences; exit 1 if
any."""
import re
import sys

SAMPLE = re.compile(r"^\s*(-?\d+(?:\s+-?\d+)*):")


def parse_top(path):
    rows = {}
    with open(path) as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[1].endswith("%") and parts[4].endswith("%"):
                rows[parts[5].rstrip("\n")] = (parts[0], parts[3])
    return rows


def raw_total(path, index):
    """Sum of one value column over the Samples section of -raw output."""
    total = 0
    in_samples = False
    with open(path) as f:
        for line in f:
            if line.startswith("Samples:"):
                in_samples = True
            elif line.startswith(("Locations", "Mappings")):
                in_samples = False
            elif in_samples:
                m = SAMPLE.match(line)
                if m:
                    total += int(m.group(1).split()[index])
    return total


want_top, got_top, want_raw, got_raw, index = sys.argv[1:6]
problems = []
want_total = raw_total(want_raw, int(index))
got_total = raw_total(got_raw, 0)
if want_total != got_total:
    problems.append(f"total: want {want_total}, got {got_total}")
want = parse_top(want_top)
got = parse_top(got_top)
for name in sorted(set(want) | set(got)):
    if want.get(name) != got.get(name):
        problems.append(f"{name}: want flat,cum {want.get(name)}, got {got.get(name)}")
for p in problems[:20]:
    print("   ", p)
sys.exit(1 if problems else 0)
