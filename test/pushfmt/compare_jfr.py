"""Compares parca-convert's profiles of a JFR recording with the JDK's own
reading of it (`jfr print --json`), event type by event type: the number of
events and the sum of their weight (allocation bytes, contention delay) per
top frame and per whole stack, and per thread when the profiles carry
thread_name labels.

A recording of several chunks: an event may refer to a stack trace written
in a chunk before its own, one or two back (a monitor event blocked over a
rotation).  The JDK's reader keeps the chunk before's constants only, and
resolves what those refer to only partly, so it prints a few such events
without a stack trace where parca-convert finds it.  So the counts may
exceed the JDK's by at most its events without a stack trace, and only by
stacks and frames that exist; with one chunk they are equal.

usage: compare_jfr.py JFR_JSON PROFILE_DIR PROFILE_PB2_DIR [--threads]
Prints "ok - ..." and "FAIL - ..." lines (run.sh counts them).
"""
import collections
import glob
import gzip
import json
import re
import sys

json_path, profile_dir, pb2_dir = sys.argv[1:4]
with_threads = "--threads" in sys.argv[4:]
sys.path.insert(0, pb2_dir)
import profile_pb2  # noqa: E402  (generated from common/pprof/profile.proto by run.sh)

# event type -> (sample types of its profile, the JSON field weighing it)
EVENTS = {
    "jdk.ExecutionSample": (("cpu",), None),
    "jdk.NativeMethodSample": (("native",), None),
    "jdk.ObjectAllocationInNewTLAB": (("alloc_in_new_tlab_objects", "alloc_in_new_tlab_bytes"), "tlabSize"),
    "jdk.ObjectAllocationOutsideTLAB": (("alloc_outside_tlab_objects", "alloc_outside_tlab_bytes"), "allocationSize"),
    "jdk.ObjectAllocationSample": (("alloc_sample_objects", "alloc_sample_bytes"), "weight"),
    "jdk.JavaMonitorEnter": (("contentions", "delay"), "duration"),
    "jdk.ThreadPark": (("contentions", "delay"), "duration"),
}
# JavaMonitorEnter and ThreadPark profiles have the same sample types: told apart by their period type
PERIOD_TYPE = {"jdk.JavaMonitorEnter": "mutex", "jdk.ThreadPark": "block"}

results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(("ok - " if ok else "FAIL - ") + name + ("" if ok else ": " + detail))


def iso_ns(d):
    """"PT0.210930886S" (what jfr prints for a duration) in nanoseconds"""
    m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d+))?S)?", d)
    h, mi, s, frac = m.groups()
    ns = ((int(h or 0) * 60 + int(mi or 0)) * 60 + int(s or 0)) * 10**9
    if frac:
        ns += int((frac + "000000000")[:9])
    return ns


def frame_name(f):
    return (f["method"]["type"]["name"] + "." + f["method"]["name"]).replace("/", ".")


def jfr_stack(st):
    frames = tuple("%s:%d" % (frame_name(f), f["lineNumber"]) for f in st["frames"])
    return frames + (("[truncated]:0",) if st["truncated"] else ())


# the JDK's side
with open(json_path) as fh:
    events = json.load(fh)["recording"]["events"]
expected = {}
stackless = collections.Counter()
for e in events:
    t = e["type"]
    if t in EVENTS and e["values"].get("stackTrace") is None:
        stackless[t] += 1
    if t not in EVENTS or e["values"].get("stackTrace") is None:
        continue
    v = e["values"]
    field = EVENTS[t][1]
    w = 0
    if field == "duration":
        w = iso_ns(v["duration"])
    elif field:
        w = int(v[field])
    thread = v.get("eventThread") or v.get("sampledThread")
    tname = (thread.get("javaName") or thread.get("osName")) if thread else None
    stack = jfr_stack(v["stackTrace"])
    exp = expected.setdefault(t, {"n": 0, "w": 0, "top": collections.Counter(), "topw": collections.Counter(),
                                  "stack": collections.Counter(), "stackw": collections.Counter(),
                                  "thread": collections.Counter()})
    exp["n"] += 1
    exp["w"] += w
    top = stack[0].rsplit(":", 1)[0] if stack else ""
    exp["top"][top] += 1
    exp["topw"][top] += w
    exp["stack"][stack] += 1
    exp["stackw"][stack] += w
    exp["thread"][tname] += 1

# our side: each profile by its sample types (and period type)
profiles = {}
for path in sorted(glob.glob(profile_dir + "/*.pb.gz")):
    p = profile_pb2.Profile()
    with gzip.open(path) as fh:
        p.ParseFromString(fh.read())
    s = p.string_table
    key = tuple(s[st.type] for st in p.sample_type)
    profiles.setdefault(key, []).append((path, p))


def our_side(t, p):
    s = p.string_table
    funcs = {f.id: s[f.name] for f in p.function}
    locs = {l.id: "%s:%d" % (funcs[l.line[0].function_id], l.line[0].line) for l in p.location}
    got = {"n": 0, "w": 0, "top": collections.Counter(), "topw": collections.Counter(),
           "stack": collections.Counter(), "stackw": collections.Counter(), "thread": collections.Counter()}
    for smp in p.sample:
        stack = tuple(locs[i] for i in smp.location_id)
        if t in ("jdk.ExecutionSample", "jdk.NativeMethodSample"):
            n, w = smp.value[0] // p.period, 0
            assert smp.value[0] % p.period == 0
        else:
            n, w = smp.value[0], smp.value[1]
        got["n"] += n
        got["w"] += w
        top = stack[0].rsplit(":", 1)[0] if stack else ""
        got["top"][top] += n
        got["topw"][top] += w
        got["stack"][stack] += n
        got["stackw"][stack] += w
        tname = None
        for lab in smp.label:
            if s[lab.key] == "thread_name":
                tname = s[lab.str]
        got["thread"][tname] += n
    return got


for t, (types, field) in EVENTS.items():
    exp = expected.get(t)
    cands = [(path, p) for path, p in profiles.get(types, [])
             if t not in PERIOD_TYPE or p.string_table[p.period_type.type] == PERIOD_TYPE[t]]
    if not exp:
        check("%s: no events, no profile" % t, not cands, "a profile for an event type the recording lacks")
        continue
    if len(cands) != 1:
        check("%s: one profile" % t, False, "%d profiles with sample types %s" % (len(cands), types))
        continue
    path, p = cands[0]
    got = our_side(t, p)
    slack = stackless[t]

    def same(a, b):
        """b (ours) equal to a (the JDK's), or above it by at most slack events in all"""
        if slack == 0:
            return a == b
        return not (a - b) and sum((b - a).values()) <= slack if isinstance(a, collections.Counter) else a <= b
    check("%s: %d events (%d without a stack trace)" % (t, exp["n"], slack),
          exp["n"] <= got["n"] <= exp["n"] + slack, "got %d" % got["n"])
    if field:
        check("%s: total %s %d" % (t, field, exp["w"]), same(exp["w"], got["w"]), "got %d" % got["w"])
    check("%s: events per top frame (%d methods)" % (t, len(exp["top"])), same(exp["top"], got["top"]),
          "differ: %s" % str((exp["top"] - got["top"]) + (got["top"] - exp["top"]))[:300])
    if field:
        check("%s: %s per top frame" % (t, field), all(got["topw"][k] >= v for k, v in exp["topw"].items()) and (slack or got["topw"] == exp["topw"]), "differ")
    check("%s: events per whole stack (%d stacks)" % (t, len(exp["stack"])), same(exp["stack"], got["stack"]),
          "differ: %s" % str(list(((exp["stack"] - got["stack"]) + (got["stack"] - exp["stack"])).items())[:2])[:400])
    if field:
        check("%s: %s per whole stack" % (t, field), all(got["stackw"][k] >= v for k, v in exp["stackw"].items()) and (slack or got["stackw"] == exp["stackw"]), "differ")
    if with_threads:
        check("%s: events per thread (%d threads)" % (t, len(exp["thread"])), same(exp["thread"], got["thread"]),
              "differ: %s" % str((exp["thread"] - got["thread"]) + (got["thread"] - exp["thread"]))[:300])

