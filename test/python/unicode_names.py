# Functions whose names are stored by CPython in each of its string
# layouts: latin-1 (größe, one byte a character), UCS-2 (函数) and UCS-4
# (𐐀, outside the BMP), for the CPU seconds given.
import sys
import time


def größe(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:
        sum(range(1000))


def 函数(seconds):
    größe(seconds)


def 𐐀(seconds):
    函数(seconds)


𐐀(float(sys.argv[1]))
