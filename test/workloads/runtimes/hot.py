# Two hot Python functions in a 70:30 split of work. Measures its own CPU
# time in each (time.thread_time) and prints, once a second,
# {"a": seconds in hot_a, "b": seconds in hot_b} as JSON lines.
import json
import sys
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


def main():
    end = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 10)
    a = b = 0.0
    nxt = time.monotonic() + 1
    while time.monotonic() < end:
        t = time.thread_time()
        hot_a(70000)
        m = time.thread_time()
        hot_b(30000)
        e = time.thread_time()
        a += m - t
        b += e - m
        if time.monotonic() >= nxt:
            print(json.dumps({"a": a, "b": b}), flush=True)
            nxt += 1


main()
