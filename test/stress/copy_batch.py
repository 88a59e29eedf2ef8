#!/usr/bin/env python3
"""copy_batch.py SERIES_ID BATCH: the rows of one stress-test COPY batch, in
COPY's binary format, for the columns (time, series_id, stack, value,
period, duration) of parca.samples, as the agent writes them (agent/writer.c).

Batch b is at 2024-01-01 00:00:00 UTC + b seconds and holds batch_rows(b)
rows whose values add up to batch_sum(b); run.sh computes the same in SQL
(stress.copy_expect) to check every batch it finds.
"""
import struct
import sys

# 2024-01-01 00:00:00 UTC in microseconds since 2000-01-01 (PostgreSQL's epoch)
BASE_US = (1704067200 - 946684800) * 1000000
PERIOD = 1
DURATION = 10 * 1000000000


def batch_rows(b):
    # now and then a batch large enough for a stripe on pages of its own
    return 60000 if b % 50 == 0 else 1 + (b * 7919) % 2500


def row_value(b, i):
    return b * 10 + i % 10 + 1


def main():
    series_id, b = int(sys.argv[1]), int(sys.argv[2])
    out = bytearray(b"PGCOPY\n\xff\r\n\x00")
    out += struct.pack(">ii", 0, 0)
    t = BASE_US + b * 1000000
    for i in range(batch_rows(b)):
        frames = (1000 + i % 37, 2000 + i % 5, 3000)
        out += struct.pack(">h", 6)
        out += struct.pack(">iq", 8, t)
        out += struct.pack(">iq", 8, series_id)
        out += struct.pack(">ii", 4 + 8 * len(frames), len(frames))
        out += struct.pack(">%dq" % len(frames), *frames)
        out += struct.pack(">iq", 8, row_value(b, i))
        out += struct.pack(">iq", 8, PERIOD)
        out += struct.pack(">iq", 8, DURATION)
    out += struct.pack(">h", -1)
    try:
        sys.stdout.buffer.write(out)
        sys.stdout.flush()
    except BrokenPipeError:
        # psql is gone (the server crashed): the batch is simply not written
        sys.stderr.close()
        sys.exit(1)


if __name__ == "__main__":
    main()
