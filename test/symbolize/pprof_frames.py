#!/usr/bin/env python3
"""Compare the frames the database gave a mapping's locations with those of a
symbolized pprof profile of the same program (a Go program's own CPU
profile: the runtime names its frames from its .gopclntab).

usage: pprof_frames.py [--all] [--min N] PPROF FRAMES_TSV

PPROF is read with `go tool pprof -raw`: each location's address, its
mapping's start and offset, and its lines (function, file, line; inlined
ones first).  The address normalized as the writer does (address - mapping
start + mapping offset) names the same location as FRAMES_TSV, what the
database stored: normalized address, position (1 = innermost), system name,
file, line; a location without lines has one line with position 0.

Every location that both have must have the same frames, function, file and
line each.  With --all every location of the profile must be stored (the
database was given the profile's addresses); without it, the database's
locations are a sample of their own (the agent's) and at least N (--min, 1)
must be in the profile, among them one with inlined frames.  Prints one line
per difference, then a summary; exits 1 on any difference.
"""
import argparse
import re
import subprocess
import sys


def read_raw(text):
    """The locations of `go tool pprof -raw` output: {(mapping, normalized
    address): [(function, file, line), ...] innermost first}, and {(mapping,
    normalized address): address} of the samples' leaves.  An address is
    normalized as the writer does: address - mapping start + mapping offset."""
    section = None
    locs = {}
    mappings = {}
    cur = None
    leaf_ids = set()
    for line in text.splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
            continue
        if section == "Samples:":
            m = re.match(r"\s+[\d ]+: (\d+)", line)
            if m:
                leaf_ids.add(int(m.group(1)))
        elif section == "Locations":
            m = re.match(r"\s*(\d+): (0x[0-9a-f]+) M=(\d+) ?(.*)$", line)
            if m:
                cur = []
                locs[int(m.group(1))] = (int(m.group(3)), int(m.group(2), 16), cur)
                rest = m.group(4)
            elif cur is not None:
                rest = line.strip()
            else:
                continue
            m = re.match(r"(.*) (\S*):(\d+) s=\d+", rest)
            if m:
                cur.append((m.group(1), m.group(2), int(m.group(3))))
        elif section == "Mappings":
            m = re.match(r"(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) ", line)
            if m:
                mappings[int(m.group(1))] = (int(m.group(2), 16), int(m.group(4), 16))
    frames = {}
    leaves = {}
    for lid, (mid, addr, lines) in locs.items():
        if mid not in mappings:
            continue
        start, offset = mappings[mid]
        key = (mid, addr - start + offset)
        frames[key] = lines
        if lid in leaf_ids:
            leaves[key] = addr
    return frames, leaves


def pprof_frames(pprof):
    out = subprocess.run(["go", "tool", "pprof", "-raw", pprof], capture_output=True,
                         text=True, check=True).stdout
    return {addr: lines for (_, addr), lines in read_raw(out)[0].items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--min", type=int, default=1)
    ap.add_argument("pprof")
    ap.add_argument("tsv")
    a = ap.parse_args()
    db = {}
    with open(a.tsv) as f:
        for line in f:
            addr, pos, fn, file, ln = line.rstrip("\n").split("\t")
            frames = db.setdefault(int(addr), [])
            if int(pos) > 0:
                frames.append((fn, file, int(ln)))
    want = pprof_frames(a.pprof)
    diffs = 0
    if a.all:
        for addr in sorted(want.keys() - db.keys()):
            print(f"DIFF {addr:#x}: in the profile, not stored in the database")
            diffs += 1
    common = sorted(want.keys() & db.keys())
    inlined = 0
    for addr in common:
        inlined += len(want[addr]) > 1
        if db[addr] != want[addr]:
            print(f"DIFF {addr:#x}: database {db[addr]}, pprof {want[addr]}")
            diffs += 1
    if not a.all and (len(common) < a.min or inlined == 0):
        print(f"DIFF: {len(common)} locations in both (at least {a.min} wanted), "
              f"{inlined} with inlined frames (at least 1 wanted)")
        diffs += 1
    print(f"{len(common)} locations compared ({inlined} with inlined frames), "
          f"{len(db)} stored, {len(want)} in the profile, {diffs} differences")
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()
