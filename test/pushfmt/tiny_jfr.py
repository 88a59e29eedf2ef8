"""Writes a small JFR recording (one chunk, format 2.1) by hand: a metadata
event describing a few types, one checkpoint event with their constant
pools, and jdk.ExecutionSample events.  Its strings use every encoding the
format has: UTF-8, Latin-1, UTF-16 code units (with a surrogate pair) and a
reference into the string pool.  One stack is marked truncated.  It seeds
the JFR fuzzer with something small, and the test checks what parca-convert
makes of it (the JDK's own reader wants more of the JDK's types than these
few, so the real recording is the one compared with `jfr print`).

usage: tiny_jfr.py OUT [--three-chunks] [--nested-class]
Expected: demo.Hot.spin:10 <- demo.Hot.main:20 three times, demo.Hot.spin:11
<- [truncated] twice, all on the thread "Wörker-𝄞" (OS name "café").

With --three-chunks, two chunks of the same metadata follow: the second
without events, the third with the same events again, and both with no
constants of their own.  The third chunk's events refer to constants of the
first, two chunks back, as a JVM's events do when their stack trace was
written before the chunk before theirs began (the JVM's ids stay the same
for its whole run): each sample counts twice.

With --nested-class, the metadata also holds a class whose children are
eight classes and then a field: damaged metadata that must read as the
recording without it.
"""
import struct
import sys


def varint(v, width=None):
    """LEB128 as JFR writes it (the ninth byte holds 8 bits); padded to width bytes"""
    v &= (1 << 64) - 1
    out = bytearray()
    for _ in range(8):
        if v < 0x80 and (width is None or len(out) + 1 >= width):
            out.append(v)
            return bytes(out)
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def utf8(s):
    b = s.encode()
    return b"\x03" + varint(len(b)) + b


def latin1(s):
    b = s.encode("latin-1")
    return b"\x05" + varint(len(b)) + b


def utf16(s):
    units = s.encode("utf-16-le")
    codes = [units[i] | units[i + 1] << 8 for i in range(0, len(units), 2)]
    return b"\x04" + varint(len(codes)) + b"".join(varint(c) for c in codes)


def pool_ref(key):
    return b"\x02" + varint(key)


def event(type_id, body):
    payload = varint(type_id) + body
    return varint(4 + len(payload), width=4) + payload


# metadata: a string table and the element tree
strings = []


def s(text):
    if text not in strings:
        strings.append(text)
    return varint(strings.index(text))


def element(name, attrs=(), children=()):
    out = s(name) + varint(len(attrs))
    for k, v in attrs:
        out += s(k) + s(v)
    out += varint(len(children))
    for c in children:
        out += c
    return out


def field(name, type_id, cp=False, array=False):
    attrs = [("name", name), ("class", str(type_id))]
    if cp:
        attrs.append(("constantPool", "true"))
    if array:
        attrs.append(("dimension", "1"))
    return element("field", attrs)


def cls(type_id, name, fields=(), super_type=None):
    attrs = [("name", name), ("id", str(type_id))]
    if super_type:
        attrs.append(("superType", super_type))
    return element("class", attrs, fields)


LONG, INT, BOOLEAN, STRING, THREAD, SYMBOL, CLASS, METHOD, FRAME, STACK, SAMPLE = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20
classes = [
    cls(LONG, "long"), cls(INT, "int"), cls(BOOLEAN, "boolean"), cls(STRING, "java.lang.String"),
    cls(THREAD, "java.lang.Thread", [field("osName", STRING), field("javaName", STRING)]),
    cls(SYMBOL, "jdk.types.Symbol", [field("string", STRING)]),
    cls(CLASS, "java.lang.Class", [field("name", SYMBOL, cp=True)]),
    cls(METHOD, "jdk.types.Method", [field("type", CLASS, cp=True), field("name", SYMBOL, cp=True)]),
    cls(FRAME, "jdk.types.StackFrame", [field("method", METHOD, cp=True), field("lineNumber", INT)]),
    cls(STACK, "jdk.types.StackTrace", [field("truncated", BOOLEAN), field("frames", FRAME, array=True)]),
    cls(SAMPLE, "jdk.ExecutionSample", [field("startTime", LONG), field("sampledThread", THREAD, cp=True),
                                        field("stackTrace", STACK, cp=True)], super_type="jdk.jfr.Event"),
]
if "--nested-class" in sys.argv[2:]:
    # damaged metadata: a class whose children are classes, then a field
    # (the parser's array of classes grows under the outer class)
    classes.append(cls(30, "demo.Outer", [cls(31 + i, "demo.Inner%d" % i) for i in range(8)] +
                       [field("x", LONG)]))
tree = element("root", children=[element("metadata", children=classes),
                                 element("region", [("locale", "en_US"), ("gmtOffset", "0")])])
meta_body = varint(0) + varint(0) + varint(1) + varint(len(strings)) + b"".join(utf8(t) for t in strings) + tree

# constant pools: type, count, then key and value of each
pools = [
    (STRING, [(1, utf8("main"))]),
    (THREAD, [(1, latin1("café") + utf16("Wörker-𝄞"))]),
    (SYMBOL, [(1, utf8("demo/Hot")), (2, utf8("spin")), (3, pool_ref(1))]),
    (CLASS, [(1, varint(1))]),
    (METHOD, [(1, varint(1) + varint(2)), (2, varint(1) + varint(3))]),
    (STACK, [(1, b"\x00" + varint(2) + varint(1) + varint(10) + varint(2) + varint(20)),
             (2, b"\x01" + varint(1) + varint(1) + varint(11))]),
]
TICKS = 1_000_000_000
START_NS = 1_700_000_000_000_000_000
CHUNK_NS = 10_000_000_000


def chunk(events, pools, start_ns):
    cp_body = varint(0) + varint(0) + varint(0) + b"\x00" + varint(len(pools))
    for type_id, entries in pools:
        cp_body += varint(type_id) + varint(len(entries))
        for key, value in entries:
            cp_body += varint(key) + value
    metadata = event(0, meta_body)
    checkpoint = event(1, cp_body)
    meta_off = 68 + len(events)
    cp_off = meta_off + len(metadata)
    size = cp_off + len(checkpoint)
    header = b"FLR\x00" + struct.pack(">HHqqqqqqqI", 2, 1, size, cp_off, meta_off, start_ns, CHUNK_NS,
                                      0, TICKS, 1)
    return header + events + metadata + checkpoint


events = b"".join(event(SAMPLE, varint(1000 + i) + varint(1) + varint(1 if i < 3 else 2)) for i in range(5))
recording = chunk(events, pools, START_NS)
if "--three-chunks" in sys.argv[2:]:
    recording += chunk(b"", [], START_NS + CHUNK_NS) + chunk(events, [], START_NS + 2 * CHUNK_NS)
open(sys.argv[1], "wb").write(recording)
