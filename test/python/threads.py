# Two threads, each in its own chain (worker_a -> spin_a, worker_b ->
# spin_b), for the CPU seconds given each; prints each thread's id as the
# kernel knows it ("a TID", "b TID"), then each thread's CPU time.
import sys
import threading
import time


def spin_a(seconds):
    start = time.thread_time()
    n = 0
    while time.thread_time() - start < seconds:
        n += sum(i * i for i in range(1000))
    return n


def spin_b(seconds):
    start = time.thread_time()
    n = 0
    while time.thread_time() - start < seconds:
        n += sum(i * 3 for i in range(1000))
    return n


def worker_a(seconds, ids):
    ids["a"] = threading.get_native_id()
    spin_a(seconds)


def worker_b(seconds, ids):
    ids["b"] = threading.get_native_id()
    spin_b(seconds)


def main(seconds):
    ids = {}
    threads = [threading.Thread(target=worker_a, args=(seconds, ids)),
               threading.Thread(target=worker_b, args=(seconds, ids))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"a {ids['a']}")
    print(f"b {ids['b']}")


if __name__ == "__main__":
    main(float(sys.argv[1]))
