"""Encodes a pprof profile as an OpenTelemetry ExportProfilesServiceRequest
(profiles/v1development as of opentelemetry-proto v1.10.0), with Google's
protobuf runtime: one OTLP profile per sample type, the locations,
functions, mappings, stacks, strings and attributes in the request's
dictionary, string labels as sample attributes.  Writes OUT.pb (protobuf)
and OUT.json (OTLP/JSON through protobuf's json_format: lowerCamelCase,
64-bit integers as strings).

usage: make_otlp.py PPROF OUT PB2_DIR
No OpenTelemetry component that encodes profiles is packaged for Debian or
npm; the request is built from the .proto's field numbers by protobuf's own
encoder, so that only the mapping below is ours.
"""
import gzip
import sys

pprof_path, out, pb2_dir = sys.argv[1:4]
sys.path.insert(0, pb2_dir)
from google.protobuf import json_format  # noqa: E402
import otlp_pb2  # noqa: E402
import profile_pb2  # noqa: E402

data = open(pprof_path, "rb").read()
if data[:2] == b"\x1f\x8b":
    data = gzip.decompress(data)
src = profile_pb2.Profile()
src.ParseFromString(data)
s = src.string_table

req = otlp_pb2.ExportProfilesServiceRequest()
d = req.dictionary
strings = {}


def sidx(text):
    if text not in strings:
        strings[text] = len(d.string_table)
        d.string_table.append(text)
    return strings[text]


# index 0 of every table is the zero value
sidx("")
d.mapping_table.add()
d.location_table.add()
d.function_table.add()
d.attribute_table.add()
d.stack_table.add()

mapping_idx = {}
for m in src.mapping:
    mapping_idx[m.id] = len(d.mapping_table)
    om = d.mapping_table.add()
    om.memory_start, om.memory_limit, om.file_offset = m.memory_start, m.memory_limit, m.file_offset
    om.filename_strindex = sidx(s[m.filename])
function_idx = {}
for f in src.function:
    function_idx[f.id] = len(d.function_table)
    of = d.function_table.add()
    of.name_strindex = sidx(s[f.name])
    of.system_name_strindex = sidx(s[f.system_name])
    of.filename_strindex = sidx(s[f.filename])
    of.start_line = f.start_line
location_idx = {}
for loc in src.location:
    location_idx[loc.id] = len(d.location_table)
    ol = d.location_table.add()
    ol.mapping_index = mapping_idx.get(loc.mapping_id, 0)
    ol.address = loc.address
    for ln in loc.line:
        oline = ol.lines.add()
        oline.function_index = function_idx[ln.function_id]
        oline.line = ln.line
stack_idx = {}
attr_idx = {}

rp = req.resource_profiles.add()
kv = rp.resource.attributes.add()
kv.key = "service.name"
kv.value.string_value = "otlp-test"
kv = rp.resource.attributes.add()
kv.key = "host.name"
kv.value.string_value = "test-host"
sp = rp.scope_profiles.add()
sp.scope.name = "make_otlp"
kv = sp.scope.attributes.add()
kv.key = "scope.attr"
kv.value.string_value = "x"

for ti, st in enumerate(src.sample_type):
    p = sp.profiles.add()
    p.sample_type.type_strindex = sidx(s[st.type])
    p.sample_type.unit_strindex = sidx(s[st.unit])
    if src.HasField("period_type"):
        p.period_type.type_strindex = sidx(s[src.period_type.type])
        p.period_type.unit_strindex = sidx(s[src.period_type.unit])
    p.period = src.period
    p.time_unix_nano = src.time_nanos
    p.duration_nano = src.duration_nanos
    for smp in src.sample:
        key = tuple(smp.location_id)
        if key not in stack_idx:
            stack_idx[key] = len(d.stack_table)
            d.stack_table.add().location_indices.extend(location_idx[i] for i in key)
        os_ = p.samples.add()
        os_.stack_index = stack_idx[key]
        os_.values.append(smp.value[ti])
        for lab in smp.label:
            akey = (s[lab.key], s[lab.str], lab.num, s[lab.num_unit])
            if akey not in attr_idx:
                attr_idx[akey] = len(d.attribute_table)
                a = d.attribute_table.add()
                a.key_strindex = sidx(s[lab.key])
                if lab.str:
                    a.value.string_value = s[lab.str]
                else:
                    a.value.int_value = lab.num
                    a.unit_strindex = sidx(s[lab.num_unit])
            os_.attribute_indices.append(attr_idx[akey])

open(out + ".pb", "wb").write(req.SerializeToString())
open(out + ".json", "w").write(json_format.MessageToJson(req))
