#!/usr/bin/env python3
"""form_part.py BODY NAME OUT: writes the part NAME of the multipart/form-data
body BODY (as parca-server's --save-bodies saved it; the boundary is its
first line) to OUT, gunzipped if it is gzip.  Exit 1 if there is none."""
import gzip
import sys

body = open(sys.argv[1], "rb").read()
name = sys.argv[2].encode()
if not body.startswith(b"--"):
    sys.exit(1)
delim = b"\r\n" + body.split(b"\r\n", 1)[0]
for part in (b"\r\n" + body).split(delim)[1:]:
    if part.startswith(b"--"):
        break
    headers, _, data = part[2:].partition(b"\r\n\r\n")
    if b'name="' + name + b'"' in headers:
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        open(sys.argv[3], "wb").write(data)
        sys.exit(0)
sys.exit(1)
