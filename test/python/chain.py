# The known call chain test/python/run.sh profiles:
#   main -> handle_request -> parse -> hot_loop       (pure Python)
#   main -> handle_request -> compress -> zlib.compress (a C extension)
# for the seconds given (CPU time, measured by the program itself).
import sys
import time
import zlib

DATA = (bytes(range(256)) * 256 + b"parca" * 20000) * 4


def hot_loop(n):
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def compress(data):
    return zlib.compress(data, 9)


def parse(n):
    return hot_loop(n)


def handle_request(kind):
    if kind == "zlib":
        return len(compress(DATA))
    return parse(100000)


def main(seconds):
    start = time.process_time()
    requests = 0
    while time.process_time() - start < seconds:
        handle_request("zlib" if requests % 2 == 1 else "pure")
        requests += 1
    print(f"{time.process_time() - start:.3f}")


if __name__ == "__main__":
    main(float(sys.argv[1]))
