#!/usr/bin/env python3
"""Compare the frames the database gave a profile's locations with eu-addr2line.

usage: compare.py PPROF DEBUGINFO BUILD_ID FRAMES_TSV

PPROF is the profile as ingested ("-": none, compare what is stored); its locations in the mapping of BUILD_ID
are read with `go tool pprof -raw` (address, mapping start and offset).
FRAMES_TSV is what the database stored for that mapping, one line per
frame: normalized address, position (1 = innermost), system name, file,
line; a location without lines has one line with position 0.

For each pprof location the address is normalized as the writer does
(address - mapping start + mapping offset), must be a location stored in
the database, and is turned into the ELF virtual address through
DEBUGINFO's PT_LOAD program headers (read with eu-readelf -l); then the
frames are compared with `eu-addr2line -f -i -a -e DEBUGINFO`.

elfutils 0.188 (Debian 12) finds no compilation unit in DWARF without
.debug_aranges, which Go never writes: eu-addr2line then answers from the
symbol table only (a function, "??:0").  For those addresses the frames
are compared with LLVM's llvm-symbolizer, a DWARF reader of its own, and
eu-addr2line's function must still be the outermost frame (the function
that holds the address).  eu-addr2line names an address by the closest
symbol of any kind: a data object (an address in runtime.pclntab) is taken
for "unknown", as it names no code.

A Go program without DWARF is named from its .gopclntab: Go's own reader of
it, `go tool addr2line` (debug/gosym), names the function that holds the
address and the file and line of the innermost (inlined) position there;
they must be the outermost frame's function and the innermost frame's file
and line.  (The inlined frames between are checked against go tool pprof in
test/agent/run.sh.)  Prints one line per difference, then a summary; exits 1
on any difference.
"""
import re
import subprocess
import sys


def pprof_locations(pprof, build_id):
    out = subprocess.run(["go", "tool", "pprof", "-raw", pprof], capture_output=True,
                         text=True, check=True).stdout
    section = None
    locs = {}
    mappings = {}
    for line in out.splitlines():
        if line in ("Locations", "Mappings"):
            section = line
            continue
        if section == "Locations":
            m = re.match(r"\s*\d+: (0x[0-9a-f]+) M=(\d+)", line)
            if m:
                locs.setdefault(int(m.group(2)), set()).add(int(m.group(1), 16))
        elif section == "Mappings":
            m = re.match(r"(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) \S+ ([0-9a-f]+)", line)
            if m:
                mappings[int(m.group(1))] = (int(m.group(2), 16), int(m.group(4), 16), m.group(5))
    out = set()
    for mid, (start, offset, bid) in mappings.items():
        if bid == build_id:
            out |= {a - start + offset for a in locs.get(mid, ())}
    return out


def load_segments(elf):
    out = subprocess.run(["eu-readelf", "-l", elf], capture_output=True, text=True,
                         check=True).stdout
    segs = []
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            segs.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))  # offset, vaddr, filesz
    sections = subprocess.run(["eu-readelf", "-S", "-W", elf], capture_output=True, text=True,
                              check=True).stdout
    if ".gopclntab" in sections and not any(
            re.search(r"\sPROGBITS\s.*\s[A-Z]*X[A-Z]*\s", line) for line in sections.splitlines()):
        # A Go program's debug file without its code (no executable
        # PROGBITS section): its segments lost their offsets and sizes, and
        # the program lies at its addresses less the image base.
        base = min(v for _, v, _ in segs) & ~0xfff
        return [(0, base, 1 << 62)]
    return segs


def vaddr_of(segs, offset):
    for off, vaddr, filesz in segs:
        if off <= offset < off + filesz:
            return vaddr + offset - off
    return None


def split_file_line(s):
    # "file:line" or, from llvm-symbolizer, "file:line:column"
    parts = s.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return parts[0], int(parts[1])
    parts = s.rsplit(":", 1)
    return parts[0], int(parts[1]) if len(parts) == 2 and parts[1].isdigit() else 0


def function_symbols(elf):
    out = subprocess.run(["eu-readelf", "-s", elf], capture_output=True, text=True).stdout
    return {f[7] for f in (line.split() for line in out.splitlines())
            if len(f) >= 8 and f[3] in ("FUNC", "GNU_IFUNC")}


def eu_addr2line(elf, addrs):
    out = subprocess.run(["eu-addr2line", "-f", "-i", "-a", "-e", elf] + [hex(a) for a in addrs],
                         capture_output=True, text=True).stdout.splitlines()
    res = {}
    cur = None
    i = 0
    while i < len(out):
        if re.fullmatch(r"0x[0-9a-f]+", out[i]):
            cur = int(out[i], 16)
            res[cur] = []
            i += 1
            continue
        # the innermost of inlined frames reads "leaf inlined at FILE:L:C in main"
        fn = re.sub(r" inlined at .* in \S+$", "", out[i])
        file, line = split_file_line(out[i + 1])
        res[cur].append((fn, file, line))
        i += 2
    return res


def llvm_symbolizer(elf, addrs):
    out = subprocess.run(["llvm-symbolizer", "--obj=" + elf, "-f", "-i", "--no-demangle"]
                         + [hex(a) for a in addrs], capture_output=True, text=True).stdout
    blocks = out.split("\n\n")
    res = {}
    for a, block in zip(addrs, blocks):
        lines = block.strip("\n").splitlines()
        res[a] = [(lines[j], *split_file_line(lines[j + 1])) for j in range(0, len(lines) - 1, 2)]
    return res


def go_addr2line(elf, addrs):
    out = subprocess.run(["go", "tool", "addr2line", elf], input="".join(f"{a:#x}\n" for a in addrs),
                         capture_output=True, text=True).stdout.splitlines()
    if len(out) != 2 * len(addrs):
        return {}
    return {a: (out[2 * i], *split_file_line(out[2 * i + 1])) for i, a in enumerate(addrs)
            if out[2 * i] != "?"}


def known(frames):
    return bool(frames) and frames[0][0] != "??"


def has_lines(frames):
    return known(frames) and frames[0][1] != "??"


def main():
    pprof, elf, build_id, tsv = sys.argv[1:5]
    db = {}
    with open(tsv) as f:
        for line in f:
            addr, pos, fn, file, ln = line.rstrip("\n").split("\t")
            frames = db.setdefault(int(addr), [])
            if int(pos) > 0:
                frames.append((fn, file, int(ln)))
    wanted = set(db) if pprof == "-" else pprof_locations(pprof, build_id)
    segs = load_segments(elf)
    diffs = 0
    for a in sorted(wanted - db.keys()):
        print(f"DIFF {a:#x}: in the profile, not stored in the database")
        diffs += 1
    addrs = sorted(a for a in wanted & db.keys() if vaddr_of(segs, a) is not None)
    vaddrs = [vaddr_of(segs, a) for a in addrs]
    eu = eu_addr2line(elf, vaddrs)
    llvm = llvm_symbolizer(elf, vaddrs)
    functions = function_symbols(elf)
    go = go_addr2line(elf, vaddrs) if ".gopclntab" in subprocess.run(
        ["eu-readelf", "-S", elf], capture_output=True, text=True).stdout else {}
    compared = named = by_eu = by_llvm = by_go = not_code = 0
    for a, v in zip(addrs, vaddrs):
        got = db[a]
        oracle = eu.get(v, [])
        # both name an address by the closest symbol of any kind (llvm-symbolizer
        # adds the symbol's file, line 0); a data object such as
        # runtime.pclntab does not name code
        if known(oracle) and oracle[0][0] not in functions and all(f[2] == 0 for f in oracle):
            not_code += 1
            oracle = []
            llvm[v] = []
        source = "eu-addr2line"
        if not has_lines(oracle) and has_lines(llvm.get(v, [])):
            # eu-addr2line found no unit: its symbol-table answer must be the
            # outermost frame, llvm-symbolizer gives the frames
            if known(oracle) and (not got or got[-1][0] != oracle[0][0]):
                print(f"DIFF {v:#x}: eu-addr2line's function {oracle[0][0]!r}, "
                      f"outermost frame {got[-1][0] if got else None!r}")
                diffs += 1
            oracle = llvm[v]
            source = "llvm-symbolizer"
        if not has_lines(oracle) and v in go:
            fn, file, line = go[v]
            compared += 1
            named += bool(got)
            by_go += 1
            if not got or got[-1][0] != fn or got[0][1:] != (file, line):
                print(f"DIFF {v:#x} (go tool addr2line): database {got}, expected {fn} "
                      f"outermost and {file}:{line} innermost")
                diffs += 1
            continue
        if not known(oracle):
            oracle = []
        want = [(fn, "" if file == "??" else file, line) for fn, file, line in oracle]
        compared += max(len(want), 1)
        named += bool(got)
        if want:
            by_eu += source == "eu-addr2line"
            by_llvm += source == "llvm-symbolizer"
        if got != want:
            print(f"DIFF {v:#x} ({source}): database {got}, expected {want}")
            diffs += 1
    print(f"{len(addrs)} locations, {named} named, {compared} frames compared "
          f"({by_eu} locations by eu-addr2line, {by_llvm} by llvm-symbolizer, "
          f"{by_go} by go tool addr2line, "
          f"{not_code} in data objects), {diffs} differences")
    sys.exit(1 if diffs else 0)


main()
