#!/usr/bin/env python3
"""Compare every function's flat and cum of a profile the database named
with pprof's own symbolization of the same profile from the same ELF file.

usage: pprof_functions.py [--google PPROF] PROFILE DEBUGINFO BUILD_ID OURS

PROFILE is the profile as ingested, without names; DEBUGINFO the ELF file
uploaded for its mapping of BUILD_ID; OURS the profile the database wrote
back (parca_pprof) once it had named the locations.

pprof finds a local file for a mapping by name, and takes it only if the
file's build id is the mapping's: Go's is a note pprof does not read, so a
copy of PROFILE without the build id is symbolized, with DEBUGINFO under
the mapping's file name in PPROF_BINARY_PATH.

`go tool pprof -symbolize=force` names each address with one frame: the
function that holds it, with the file and line of the innermost inlined
call there (cmd/pprof reads .gopclntab, else DWARF, and does not report
inlined calls).  At an address in inlined code it names the enclosing
function at a line of the inlined callee: that is its known difference with
the database, which names the inlined calls too.  So:
  - every location: go tool pprof's function is the database's outermost
    frame, and its file and line the database's innermost;
  - every function's flat and cum, exactly, with the database's inlined
    frames folded into the function that holds them (-noinlines);
  - the leaf addresses in inlined code, where flat moves from the enclosing
    function to the inlined one, are listed as known differences.
With --google, the standalone pprof (github.com/google/pprof, which names
inlined calls through llvm-symbolizer, from DWARF) must give every
function's flat and cum exactly as the database, inlined frames included.

Values are compared in the database's unit: sample counts (the profiles'
"samples" type) times the period.  Prints one line per difference, then a
summary; exits 1 on any difference.
"""
import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile

from pprof_frames import read_raw

TOP = ["-top", "-nodecount=1000000", "-nodefraction=0", "-edgefraction=0", "-unit=ns"]


def raw(cmd, path, env=None):
    return subprocess.run(cmd + ["-raw", path], capture_output=True, text=True, check=True,
                          env=env).stdout


def header(text):
    period = re.search(r"^Period: (\d+)$", text, re.M)
    return int(period.group(1)) if period else 1


def mapping_of(text, build_id):
    """The id and file of the mapping of build_id in -raw output, or None."""
    m = re.search(r"^(\d+): \S+ (\S+) " + re.escape(build_id) + r"( |$)", text, re.M)
    return (int(m.group(1)), m.group(2)) if m else None


def top(cmd, path, scale=1, env=None):
    """{function: (flat, cum)} of pprof's -top, in ns."""
    out = subprocess.run(cmd + TOP + [path], capture_output=True, text=True, check=True,
                         env=env).stdout
    table = {}
    started = False
    for line in out.splitlines():
        if re.match(r"\s*flat\s+flat%", line):
            started = True
            continue
        if not started:
            continue
        f = line.split(None, 5)
        if len(f) < 6:
            continue
        # one row a function; pprof notes whether its callers inlined it
        name = re.sub(r" \((partial-)?inline\)$", "", f[5])
        table[name] = tuple(int(float(v.removesuffix("ns")) * scale) for v in (f[0], f[3]))
    return table


def compare(label, want, got):
    diffs = 0
    for name in sorted(want.keys() | got.keys()):
        w = want.get(name, (0, 0))
        g = got.get(name, (0, 0))
        if w != g:
            print(f"DIFF {label}: {name}: pprof flat {w[0]} cum {w[1]}, database flat {g[0]} cum {g[1]}")
            diffs += 1
    return diffs


def without_build_id(src, build_id, dst):
    """PROFILE with its string table's build id made empty (the field as it is, re-encoded)."""
    def varint(b, i):
        v = s = 0
        while True:
            c = b[i]
            i += 1
            v |= (c & 0x7f) << s
            s += 7
            if c < 0x80:
                return v, i

    def encode(v):
        out = bytearray()
        while True:
            c = v & 0x7f
            v >>= 7
            if v == 0:
                out.append(c)
                return bytes(out)
            out.append(c | 0x80)

    data = open(src, "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    want = build_id.encode()
    out = bytearray()
    i = 0
    while i < len(data):
        start = i
        key, i = varint(data, i)
        kind = key & 7
        if kind == 0:
            _, i = varint(data, i)
        elif kind == 1:
            i += 8
        elif kind == 5:
            i += 4
        elif kind == 2:
            n, j = varint(data, i)
            i = j + n
            # Profile.string_table is field 6
            if key >> 3 == 6 and data[j:i] == want:
                out += encode(key) + encode(0)
                continue
        else:
            sys.exit(f"{src}: not a profile (wire type {kind})")
        out += data[start:i]
    with open(dst, "wb") as f:
        f.write(gzip.compress(bytes(out)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--google")
    ap.add_argument("profile")
    ap.add_argument("debuginfo")
    ap.add_argument("build_id")
    ap.add_argument("ours")
    a = ap.parse_args()
    go = ["go", "tool", "pprof"]
    original = raw(go, a.profile)
    period = header(original)
    mapping = mapping_of(original, a.build_id)
    ours_text = raw(go, a.ours)
    our_mapping = mapping_of(ours_text, a.build_id)
    if not mapping or not our_mapping:
        sys.exit(f"{a.profile}, {a.ours}: no mapping of build id {a.build_id}")
    work = tempfile.mkdtemp(prefix="pprof-functions.")
    try:
        shutil.copy(a.debuginfo, os.path.join(work, os.path.basename(mapping[1])))
        copy = os.path.join(work, "profile.pb.gz")
        without_build_id(a.profile, a.build_id, copy)
        env = dict(os.environ, PPROF_BINARY_PATH=work)
        force = ["-symbolize=force", "-sample_index=samples"]
        diffs = 0

        # every location: one frame, the function holding the address at the innermost position
        named, leaves = read_raw(raw(go + force, copy, env))
        our_frames, _ = read_raw(ours_text)
        known = []
        compared = 0
        for (mid, addr), lines in sorted(named.items()):
            if mid != mapping[0] or not lines:
                continue
            compared += 1
            got = our_frames.get((our_mapping[0], addr), [])
            if not got or got[-1][0] != lines[0][0] or got[0][1:] != lines[0][1:]:
                print(f"DIFF {addr:#x}: go tool pprof {lines[0]}, database {got}")
                diffs += 1
            elif len(got) > 1 and (mid, addr) in leaves:
                known.append((leaves[(mid, addr)], lines[0], got))

        # every function, with the database's inlined frames folded
        want = top(go + force, copy, period, env)
        diffs += compare("go tool pprof, inlined frames folded", want, top(go + ["-noinlines"], a.ours))
        ours = top(go, a.ours)
        moved = sorted(n for n in want.keys() & ours.keys() if want[n][0] != ours[n][0])
        for addr, theirs, got in known:
            print(f"# known: {addr:#x} is in inlined code; go tool pprof names it "
                  f"{theirs[0]} {theirs[1]}:{theirs[2]}, the database "
                  + " <- ".join(f"{f} {p}:{n}" for f, p, n in got))
        summary = (f"{compared} locations and {len(want)} functions as go tool pprof names them; "
                   f"{len(known)} leaf addresses in inlined code move flat of {len(moved)} functions "
                   f"({', '.join(moved)})")
        if a.google:
            theirs = top([a.google] + force, copy, period, env)
            diffs += compare("google pprof", theirs, ours)
            summary += f"; {len(theirs)} functions as google/pprof names them, inlined calls included"
        print(f"{summary}; {diffs} differences")
        sys.exit(1 if diffs else 0)
    finally:
        shutil.rmtree(work)


main()
