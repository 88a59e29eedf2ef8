#!/usr/bin/env python3
"""Writes hostile pprof profiles for test/security/run.sh.

    hostile_pprof.py KIND SIZE OUT

KIND is one of the profiles below; SIZE is the size in bytes the encoded
(plain) profile should come close to without passing (ignored by
hostile_strings and colliding_locations); OUT ends in .gz for a gzipped
file.  The encoding is written by hand (protobuf wire format,
profile.proto's field numbers) so that it can hold what a real encoder
never writes.
"""
import gzip
import sys


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, payload):
    """A length-delimited field."""
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def vfield(num, n):
    """A varint field."""
    return varint(num << 3) + varint(n)


# Profile: 1 sample_type, 2 sample, 3 mapping, 4 location, 5 function,
# 6 string_table, 11 period_type.  ValueType: 1 type, 2 unit.  Sample:
# 1 location_id, 2 value, 3 label.  Label: 1 key, 2 str, 3 num.
# Location: 1 id, 2 mapping_id, 3 address, 4 line.  Line: 1 function_id.
# Function: 1 id, 2 name.
HEADER = (field(6, b"") + field(6, b"cpu") + field(6, b"ns") + field(6, b"k")
          + field(6, b"v") + field(1, vfield(1, 1) + vfield(2, 2))
          + field(5, vfield(1, 1) + vfield(2, 1))
          + field(4, vfield(1, 1) + field(4, vfield(1, 1))))


def repeat_to(size, head, unit):
    count = max((size - len(head)) // len(unit), 0)
    return head + unit * count


def empty_samples(size):
    # 2 bytes each on the wire, a struct and a pointer each decoded
    return repeat_to(size, HEADER, field(2, b""))


def one_value_samples(size):
    # valid samples: location 1, value 1
    return repeat_to(size, HEADER, field(2, vfield(1, 1) + vfield(2, 1)))


def labelled_samples(size):
    # each sample with 8 string labels k="v": a struct per label
    label = field(3, vfield(1, 3) + vfield(2, 4))
    return repeat_to(size, HEADER, field(2, vfield(1, 1) + vfield(2, 1) + label * 8))


def long_stacks(size):
    # few samples, each with a long unpacked list of location ids (2 bytes
    # on the wire, 8 decoded)
    per_sample = min(size // 16, 1 << 20)
    sample = field(2, vfield(2, 1) + vfield(1, 1) * per_sample)
    return repeat_to(size, HEADER, sample)


def unknown_fields(size):
    # fields profile.proto does not know: protobuf-c keeps each one
    return repeat_to(size, HEADER, vfield(100, 1))


def many_lines(size):
    # locations with many empty lines each
    loc_count = 1000
    lines = max((size // loc_count) // 2 - 8, 1)
    locs = b"".join(field(4, vfield(1, i + 2) + field(4, b"") * lines) for i in range(loc_count))
    return HEADER + locs


def nested(size):
    # an unknown length-delimited field in one in one ... (built from the
    # inside out), 2 MB at most: protobuf-c keeps an unknown field whole
    prefixes = []
    inner = 0
    budget = min(size, 2 << 20) - len(HEADER)
    while True:
        prefix = varint(100 << 3 | 2) + varint(inner)
        if inner + len(prefix) > budget:
            break
        prefixes.append(prefix)
        inner += len(prefix)
    return HEADER + b"".join(reversed(prefixes))


def strings_profile(strings, sample_type=(1, 2), period_type=None, labels=(), num_label=None):
    """A small valid profile: the given string table (after ""), a function
    named by each string, one mapping (file: string 3, build id: string 4),
    a sample per function with the labels (key, str) and the numeric label
    (key, unit), if given."""
    table = [b""] + list(strings)
    out = b"".join(field(6, t) for t in table)
    out += field(1, vfield(1, sample_type[0]) + vfield(2, sample_type[1]))
    if period_type:
        out += field(11, vfield(1, period_type[0]) + vfield(2, period_type[1]))
    out += field(3, vfield(1, 1) + vfield(5, min(3, len(strings))) + vfield(6, min(4, len(strings))))
    nfun = len(strings)
    for i in range(nfun):
        out += field(5, vfield(1, i + 1) + vfield(2, i + 1) + vfield(3, i + 1) + vfield(4, i + 1))
        out += field(4, vfield(1, i + 1) + vfield(2, 1) + vfield(3, 0x1000 + i)
                     + field(4, vfield(1, i + 1) + vfield(2, 7)))
    label_bytes = b"".join(field(3, vfield(1, k) + vfield(2, v)) for k, v in labels)
    if num_label:
        label_bytes += field(3, vfield(1, num_label[0]) + vfield(3, 42) + vfield(4, num_label[1]))
    for i in range(nfun):
        out += field(2, vfield(1, i + 1) + vfield(2, 10 + i) + label_bytes)
    return out


# Names a profiler could meet in symbol tables and file systems: not UTF-8
# (Latin-1, a lone continuation byte, a truncated sequence, a surrogate, an
# overlong form), NUL, control characters, and a 1 MB name.
HOSTILE_NAMES = [
    b"cpu", b"ns", b"caf\xe9_latin1", b"lone\x80continuation", b"truncated\xe2\x82",
    b"surrogate\xed\xa0\x80", b"overlong\xc0\xaf", b"nul\x00inside", b"ctl\x01\x1f\x7f\ttab\nnewline",
    b"\xff\xfe/usr/lib/libweird.so", b"\xba\xdb\x01\xd0", b"valid \xe2\x82\xac euro",
    b"long_" + b"x" * (1 << 20),
]


def hostile_strings(size):
    # string 3 (Latin-1) also names the mapping's file, string 4 its build
    # id; string 10 is the key of a numeric label with unit string 11
    return strings_profile(HOSTILE_NAMES, num_label=(10, 11))


def colliding_locations(size):
    # a sample for each address read from stdin (colliding_ids' output),
    # each at its own location of no mapping and no lines; SIZE is unused
    addresses = [int(line) for line in sys.stdin if line.strip()]
    out = field(6, b"") + field(6, b"cpu") + field(6, b"nanoseconds")
    out += field(1, vfield(1, 1) + vfield(2, 2))
    for i, address in enumerate(addresses):
        out += field(4, vfield(1, i + 1) + vfield(3, address))
    for i in range(len(addresses)):
        out += field(2, vfield(1, i + 1) + vfield(2, 1))
    return out


KINDS = {
    "empty_samples": empty_samples,
    "one_value_samples": one_value_samples,
    "labelled_samples": labelled_samples,
    "long_stacks": long_stacks,
    "unknown_fields": unknown_fields,
    "many_lines": many_lines,
    "nested": nested,
    "hostile_strings": hostile_strings,
    "colliding_locations": colliding_locations,
}


def main():
    kind, size, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    data = KINDS[kind](size)
    if out.endswith(".gz"):
        data = gzip.compress(data, 9)
    with open(out, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
