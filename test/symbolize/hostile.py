#!/usr/bin/env python3
"""Write hostile variants of an ELF file: hostile.py ELF OUTDIR SEED COUNT.

- every truncation at a step through the file (headers, sections, DWARF cut
  anywhere);
- header fields set to extremes: section header offset, count, string
  table index, program header offset and count;
- each section's offset, size, link and entry size set to extremes, and
  each section marked compressed with a header that claims 2^40 bytes
  (a decompression bomb);
- a Go program's .gopclntab header words (counts, the text start, the
  offsets of its tables) set to extremes;
- COUNT copies with 1 to 64 random bytes changed (seeded: the same files
  every run), half of them inside the DWARF sections, where libdw parses,
  and the .gopclntab, which common/gopclntab/ parses.
Prints the number of files written.
"""
import os
import random
import struct
import sys

src, outdir, seed, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
data = open(src, "rb").read()
os.makedirs(outdir, exist_ok=True)
n = 0


def write(b):
    global n
    with open(os.path.join(outdir, f"{n:05d}.elf"), "wb") as f:
        f.write(b)
    n += 1


def put(b, off, fmt, *values):
    b = bytearray(b)
    struct.pack_into(fmt, b, off, *values)
    return bytes(b)


# ELF64 little-endian header fields
E_PHOFF, E_SHOFF, E_PHNUM, E_SHNUM, E_SHSTRNDX = 0x20, 0x28, 0x38, 0x3C, 0x3E
shoff = struct.unpack_from("<Q", data, E_SHOFF)[0]
shnum = struct.unpack_from("<H", data, E_SHNUM)[0]

step = max(1, len(data) // 200)
for cut in list(range(0, len(data), step)) + [len(data) - 1]:
    write(data[:cut])

for off, fmt, values in [(E_SHOFF, "<Q", [0, len(data), 2**63, 2**64 - 1]),
                         (E_SHNUM, "<H", [0, 0xFFFF]),
                         (E_SHSTRNDX, "<H", [0, shnum, 0xFFFF]),
                         (E_PHOFF, "<Q", [len(data), 2**64 - 64]),
                         (E_PHNUM, "<H", [0xFFFF])]:
    for v in values:
        write(put(data, off, fmt, v))

shstr = struct.unpack_from("<Q", data, shoff + struct.unpack_from("<H", data, E_SHSTRNDX)[0] * 64 + 24)[0]
dwarf = []
for i in range(1, shnum):
    sh = shoff + i * 64
    # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info, sh_addralign, sh_entsize
    name, typ, flags, _, offset, size = struct.unpack_from("<IIQQQQ", data, sh)
    if typ != 8 and size > 0 and data[shstr + name:].startswith(b".debug_"):
        dwarf.append((offset, size))
    if typ != 8 and size >= 72 and data[shstr + name:].startswith(b".gopclntab\0"):
        dwarf.append((offset, size))
        # its header: magic, pad, quantum, pointer size, then eight words
        for word in range(8, 72, 8):
            for v in [0, 1, size, 2**31, 2**63, 2**64 - 1]:
                write(put(data, offset + word, "<Q", v))
    for field, fmt, values in [(24, "<Q", [len(data), 2**64 - 1]), (32, "<Q", [2**40, 2**64 - 1]),
                               (40, "<I", [0xFFFF, shnum]), (56, "<Q", [0, 1, 2**63])]:
        for v in values:
            write(put(data, sh + field, fmt, v))
    if typ != 8 and size >= 24:
        # SHF_COMPRESSED with an Elf64_Chdr: ELFCOMPRESS_ZLIB, 2^40 bytes
        b = put(data, sh + 8, "<Q", flags | 0x800)
        write(put(b, offset, "<IIQQ", 1, 0, 2**40, 1))

rng = random.Random(seed)
for k in range(count):
    b = bytearray(data)
    for _ in range(rng.randint(1, 64)):
        if k % 2 and dwarf:
            offset, size = rng.choice(dwarf)
            pos = offset + rng.randrange(size)
        else:
            pos = rng.randrange(len(b))
        if pos < len(b):
            b[pos] = rng.randrange(256)
    write(bytes(b))
print(n)
