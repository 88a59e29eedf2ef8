# Waits off the CPU in time.sleep (native) under napper <- outer, for the
# seconds given.
import sys
import time


def napper(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.05)


def outer(seconds):
    napper(seconds)


outer(float(sys.argv[1]))
