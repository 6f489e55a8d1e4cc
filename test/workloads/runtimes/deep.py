# A Python stack DEPTH frames deep, busy at its leaf, for SECONDS
# (benchmark of the interpreter walk).   deep.py SECONDS DEPTH
import sys
import time


def down(n, end):
    if n > 1:
        return down(n - 1, end)
    s = 0
    while time.monotonic() < end:
        for i in range(10000):
            s += i
    return s


down(int(sys.argv[2]), time.monotonic() + float(sys.argv[1]))
