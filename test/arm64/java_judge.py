#!/usr/bin/env python3
"""Judge the arm64 Java guest's console (java_guest.sh's output).

    java_judge.py KERNEL CONSOLE_LOG

FibHash runs a fib thread (FibHash.fib) and a hash thread (FibHash.digest,
SHA-256); truth is each thread's own CPU time over a window of the
recording (schedstat, read in the guest at the window's ends, printed
with their unix second). Judged ("steady"): the two threads' samples
inside that window, which opens LEAD s after the recorder started, once
it has read the JVM (the first jvm frame must come before). Asserted (exit 1 if
not): the recording exits 0 and leaves nothing in bpffs; at least
MIN_STEADY steady samples; at least JVM_MIN of them carry jvm frames;
the share of steady samples naming FibHash.fib (the fib thread runs
nothing else) and the hash thread's share each within TOLERANCE points of
the fib and hash threads' shares of their CPU time; at least DIGEST_MIN of
the hash thread's samples name FibHash.digest (the rest: its sleep's
system calls and the JIT's events, whose CPU time counts for the thread); at least ROOTED_MIN of them reach
java.lang.Thread.run (rooted: the walk crossed every Java frame between
the leaf and the thread's entry); at least LINES_MIN of the frames of the
two lambdas (interpreted: each runs once) carry the line of their call in
FibHash.java (read through the interpreter frame's bcp slot).
"""
import base64
import gzip
import json
import os
import re
import sys

kernel, path = sys.argv[1], sys.argv[2]
MIN_STEADY = 200
JVM_MIN = 0.90
TOLERANCE = 5.0
ROOTED_MIN = 0.90
DIGEST_MIN = 0.80
LINES_MIN = 0.90
text = open(path, errors="replace").read().replace("\r", "")
problems = []
source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads", "java", "FibHash.java")
src_lines = open(source).read().splitlines()
# lambda$main$0 calls fibLoop(until), lambda$main$1 hashLoop(until).
LAMBDA_LINES = {
    "FibHash.lambda$main$0": next(i + 1 for i, ln in enumerate(src_lines) if "() -> fibLoop(until)" in ln),
    "FibHash.lambda$main$1": next(i + 1 for i, ln in enumerate(src_lines) if ln.strip() == "hashLoop(until);"),
}


def section(name):
    m = re.search(r"^==== %s\n(.*?)(?=^==== )" % re.escape(name), text, re.S | re.M)
    return m.group(1) if m else None


def grab(pattern, what):
    m = re.search(pattern, text, re.M)
    if not m:
        problems.append(f"no {what} on the console")
    return m


m = grab(r"^guest: record exit (\d+)", "record exit")
if m and m.group(1) != "0":
    problems.append(f"otelprof record exit {m.group(1)}")
bpffs = (section("bpffs") or "").split()
if section("bpffs") is None:
    problems.append("no bpffs listing")
elif bpffs:
    problems.append(f"left in bpffs: {' '.join(bpffs)}")
tids = grab(r"^tids fib (\d+) hash (\d+) pid (\d+)", "thread ids")
c0 = grab(r"^cpu0 fib (\d+) hash (\d+) at (\d+)", "CPU times before")
c1 = grab(r"^cpu1 fib (\d+) hash (\d+) at (\d+)", "CPU times after")
# The window's ends in whole unix seconds: each read was within the second
# after, so the samples judged are those from half a second into each.
win0 = (int(c0.group(3)) * 10**9 + 5 * 10**8) if c0 else 0
win1 = (int(c1.group(3)) * 10**9 + 5 * 10**8) if c1 else 0
fib_tid, hash_tid, pid = (int(x) for x in tids.groups()) if tids else (0, 0, 0)
fib_cpu = int(c1.group(1)) - int(c0.group(1)) if c0 and c1 else 0
hash_cpu = int(c1.group(2)) - int(c0.group(2)) if c0 and c1 else 0
truth_fib = 100.0 * fib_cpu / (fib_cpu + hash_cpu) if fib_cpu + hash_cpu > 0 else 0.0


def samples():
    """(thread id, unix ns, [(frame type, function name, line)] leaf first) of pid's samples."""
    b64 = section("otlp-json.gz.b64")
    if not b64 or not b64.strip():
        return []
    out = []
    raw = gzip.decompress(base64.b64decode("".join(b64.split()))).decode()
    for line in raw.splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        dic = d["dictionary"]
        strs, attrs = dic["stringTable"], dic.get("attributeTable", [])
        stacks, locs, funcs = dic.get("stackTable", []), dic.get("locationTable", []), dic.get("functionTable", [])

        def attr(i):
            a = attrs[int(i)]
            v = a.get("value", {})
            return strs[int(a.get("keyStrindex", 0))], v.get("intValue", v.get("stringValue"))

        def frames(si):
            fr = []
            for li in stacks[si].get("locationIndices", []) if si < len(stacks) else []:
                loc = locs[int(li)]
                ftype = next((v for k, v in map(attr, loc.get("attributeIndices", [])) if k == "profile.frame.type"), "")
                lines = loc.get("lines", []) or [{}]
                for ln in lines:
                    fn = funcs[int(ln.get("functionIndex", 0))]
                    fr.append((ftype, strs[int(fn.get("nameStrindex", 0))], int(ln.get("line", 0))))
            return fr

        for rp in d.get("resourceProfiles", []):
            res = dict(map(lambda a: (strs[int(a.get("keyStrindex", 0))], a.get("value", {}).get("intValue")),
                           rp.get("resource", {}).get("attributes", [])))
            if int(res.get("process.pid") or 0) != pid:
                continue
            for sp in rp.get("scopeProfiles", []):
                for prof in sp.get("profiles", []):
                    for smp in prof.get("samples", []):
                        tid = next((int(v) for k, v in map(attr, smp.get("attributeIndices", []))
                                    if k == "thread.id"), 0)
                        fr = frames(int(smp.get("stackIndex", 0)))
                        for ts in smp.get("timestampsUnixNano", []):
                            out.append((tid, int(ts), fr))
    return out


try:
    all_samples = samples()
except (ValueError, KeyError, IndexError, OSError, EOFError) as e:
    all_samples = []
    problems.append(f"the guest's otlp-json is unreadable: {e}")
hot = [s for s in all_samples if s[0] in (fib_tid, hash_tid)]
java_times = [ts for _, ts, fr in hot if any(t == "jvm" for t, _, _ in fr)]
first_java = min(java_times) if java_times else None
first = min((ts for _, ts, _ in hot), default=None)
steady = [s for s in hot if win0 <= s[1] < win1]
if first_java is None or first_java > win0:
    problems.append("no jvm frame before the judged window opened"
                    + (f" ({(first_java - win0) / 1e9:.1f} s late)" if first_java else ""))
n = len(steady)


def count(pred):
    return sum(1 for s in steady if pred(s))


n_hash = count(lambda s: s[0] == hash_tid)
with_jvm = count(lambda s: any(t == "jvm" for t, _, _ in s[2]))
fib_named = count(lambda s: any(t == "jvm" and f.startswith("FibHash.fib") for t, f, _ in s[2]))
digest_named = count(lambda s: any(t == "jvm" and f.startswith("FibHash.digest") for t, f, _ in s[2]))
rooted = count(lambda s: any(t == "jvm" and f.startswith("java.lang.Thread.run") for t, f, _ in s[2]))
# The lambdas run once, in the interpreter: their line comes from the
# interpreter frame's bcp slot (frame_aarch64.hpp's layout).
lambda_frames = [(f, ln) for s in steady for t, f, ln in s[2] if t == "jvm" and f in LAMBDA_LINES]
lambda_exact = sum(1 for f, ln in lambda_frames if ln == LAMBDA_LINES[f])
pct = (lambda k: 100.0 * k / n) if n else (lambda k: 0.0)
if n < MIN_STEADY:
    problems.append(f"only {n} steady samples of the fib and hash threads (want >= {MIN_STEADY})")
else:
    if with_jvm < JVM_MIN * n:
        bad = [";".join(f for _, f, _ in reversed(s[2])) for s in steady if not any(t == "jvm" for t, _, _ in s[2])][:2]
        problems.append(f"jvm frames in {pct(with_jvm):.1f}% (want >= {100 * JVM_MIN:.0f}%), e.g. {bad}")
    if abs(pct(fib_named) - truth_fib) > TOLERANCE:
        problems.append(f"FibHash.fib {pct(fib_named):.1f}%, truth {truth_fib:.1f}% +- {TOLERANCE:.0f}")
    if abs(pct(n_hash) - (100.0 - truth_fib)) > TOLERANCE:
        problems.append(f"hash thread {pct(n_hash):.1f}% of the samples, truth {100.0 - truth_fib:.1f}% +- {TOLERANCE:.0f}")
    if digest_named < DIGEST_MIN * n_hash:
        problems.append(f"FibHash.digest in {digest_named} of the hash thread's {n_hash} samples"
                        f" (want >= {100 * DIGEST_MIN:.0f}%)")
    if rooted < ROOTED_MIN * n:
        problems.append(f"Thread.run reached in {pct(rooted):.1f}% (want >= {100 * ROOTED_MIN:.0f}%)")
    if lambda_exact < LINES_MIN * len(lambda_frames) or not lambda_frames:
        wrong = sorted(set((f, ln) for f, ln in lambda_frames if ln != LAMBDA_LINES[f]))[:4]
        problems.append(f"interpreted lambda frames on their call's line: {lambda_exact} of {len(lambda_frames)}"
                        f" (want >= {100 * LINES_MIN:.0f}%; lines {LAMBDA_LINES}, e.g. {wrong})")
m = re.search(r"^otelprof: wrote \d+ samples .*?; lost (\d+)", text, re.M)
lost = m.group(1) if m else "?"
m = re.search(r"^guest: (\S+) aarch64", text, re.M)
release = m.group(1) if m else "?"
delay = (first_java - first) / 1e9 if first_java is not None and first is not None else -1
status = "ok  " if not problems else "FAIL"
print(
    f"java kernel {kernel} {status} {release}: {len(hot)} samples of fib+hash ({lost} of all lost; {n} in the window, first jvm frame "
    f"{delay:.1f} s after the first sample): jvm frames {pct(with_jvm):.1f}%, FibHash.fib {pct(fib_named):.1f}% "
    f"(CPU truth {truth_fib:.1f}%), hash thread {pct(n_hash):.1f}% (truth {100.0 - truth_fib:.1f}%) "
    f"naming FibHash.digest in {100.0 * digest_named / n_hash if n_hash else 0:.1f}%, "
    f"rooted at Thread.run {pct(rooted):.1f}%; interpreted lambdas on the call's line {lambda_exact}/{len(lambda_frames)}"
    + ("" if not problems else "; " + "; ".join(problems))
)
sys.exit(1 if problems else 0)
