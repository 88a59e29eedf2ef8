#!/usr/bin/env python3
"""Run a command and report its CPU time and peak resident memory.

usage: rusage.py OUTFILE COMMAND [ARG]...
Writes "user_s sys_s maxrss_kb exit_status" to OUTFILE.
"""
import resource
import subprocess
import sys

out = sys.argv[1]
status = subprocess.call(sys.argv[2:])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out, "w") as f:
    f.write("%.3f %.3f %d %d\n" % (r.ru_utime, r.ru_stime, r.ru_maxrss, status))
