# Two hot Python functions in a 70:30 split of work, and a little hashing
# (a C extension called from Python). Measures its own CPU time in hot_a
# and hot_b (time.thread_time) and prints, once a second,
# {"a": seconds in hot_a, "b": seconds in hot_b} as JSON lines.
#   hot.py SECONDS [thread]   (thread: the work runs in a second thread)
import hashlib
import json
import sys
import threading
import time


def hot_a(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def hot_b(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def hash_c(n):
    h = b"x" * 4096
    for _ in range(n):
        h = hashlib.sha256(h * 16).digest() * 128
    return h


def work():
    end = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 10)
    a = b = 0.0
    nxt = time.monotonic() + 1
    while time.monotonic() < end:
        t = time.thread_time()
        hot_a(70000)
        m = time.thread_time()
        hot_b(30000)
        e = time.thread_time()
        hash_c(2)
        a += m - t
        b += e - m
        if time.monotonic() >= nxt:
            print(json.dumps({"a": a, "b": b}), flush=True)
            nxt += 1


def main():
    if len(sys.argv) > 2 and sys.argv[2] == "thread":
        t = threading.Thread(target=work, name="worker")
        t.start()
        t.join()
    else:
        work()


main()
