#!/usr/bin/env python3
"""Run a command and report its CPU time and peak resident memory.

usage: rusage.py OUTFILE COMMAND [ARG]...
Writes the command's pid to OUTFILE.pid when it starts (pgrep can miss it
on a machine that starts hundreds of processes a second), then
"user_s sys_s maxrss_kb exit_status" to OUTFILE.
"""
import resource
import subprocess
import sys

out = sys.argv[1]
child = subprocess.Popen(sys.argv[2:])
with open(out + ".pid", "w") as f:
    f.write("%d\n" % child.pid)
status = child.wait()
r = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out, "w") as f:
    f.write("%.3f %.3f %d %d\n" % (r.ru_utime, r.ru_stime, r.ru_maxrss, status))
