#!/usr/bin/env python3
"""Judge one arm64 CPython guest's console (guest_python.sh) against the
workload's own CPU time.

    judge_python.py KERNEL CONSOLE_LOG HOT_PY

hot.py runs hot_a and hot_b (70:30 of their work) and prints the CPU time
it spent in each; the guest prints the last line before and after the
recording, and once a second between (the truth is taken over the
judged samples' span). Judged: python3.11's samples from its first one with a cpython
frame on (the steady state: the walk program loads on demand when the
recorder finds the interpreter, seconds under emulation), which must come
within KNOWN_WITHIN of its samples' span, at least MIN_SAMPLES of them:
- at least PY_MIN of them carry cpython frames;
- every sample with a cpython hot_a frame has the call path
  <module>;main;work;hot_a (outermost first) in its cpython frames, hot_a's
  file is /py/hot.py and its line inside hot_a's body;
- hot_a's share of the samples in hot_a or hot_b is within SHARE_SIGMAS
  binomial standard deviations (at least SHARE_TOL points) of hot_a's share
  of their CPU time over the recording;
- at least ROOTED_MIN of them are rooted: their outermost native frame is
  _start or python3.11's ELF entry point (Debian strips _start) and
  Py_BytesMain is below the Python frames;
- the recording exits 0 and leaves nothing in bpffs.
Measured only: the samples whose hot_a frame has the evaluation loop
(_PyEval_EvalFrameDefault) below it.
"""
import base64
import gzip
import json
import re
import sys

kernel, path, hot_py = sys.argv[1], sys.argv[2], sys.argv[3]
KNOWN_WITHIN = 0.6
MIN_SAMPLES = 200
PY_MIN = 0.90
ROOTED_MIN = 0.90
# hot_a's share: within SHARE_SIGMAS standard deviations of the sampled
# share (binomial, from the samples counted), and never tighter than
# SHARE_TOL points.
SHARE_TOL = 5.0
SHARE_SIGMAS = 3.5
PATH_A = ["<module>", "main", "work", "hot_a"]
text = open(path, errors="replace").read().replace("\r", "")
problems = []


def section(name):
    m = re.search(r"^==== %s\n(.*?)(?=^==== )" % re.escape(name), text, re.S | re.M)
    return m.group(1) if m else None


def fail(msg):
    print(f"python {kernel} FAIL {msg} (see {path})")
    sys.exit(1)


m = re.search(r"^guest: record exit (\d+)", text, re.M)
if not m:
    fail("no result from the guest")
if m.group(1) != "0":
    problems.append(f"record exit {m.group(1)}")
release = re.search(r"^guest: (\S+) aarch64", text, re.M)
release = release.group(1) if release else "?"
m = re.search(r"^==== python pid (\d+)\n(.*?)(?=^==== )", text, re.S | re.M)
if not m:
    fail("no python section")
pid, info = int(m.group(1)), m.group(2)
entry = re.search(r"^entry 0x([0-9a-f]+)", info, re.M)
entry = int(entry.group(1), 16) if entry else None
times = {}
for k in ("start", "end"):
    t = re.search(r"^%s (.*)$" % k, info, re.M)
    try:
        times[k] = json.loads(t.group(1)) if t and t.group(1).strip() else {"a": 0.0, "b": 0.0}
    except ValueError:
        fail(f"hot.py printed {t.group(1)!r}")
cpu_a = times["end"]["a"] - times["start"]["a"]
cpu_b = times["end"]["b"] - times["start"]["b"]
if cpu_a + cpu_b <= 0:
    fail(f"hot.py ran no CPU time in the recording: {info!r}")
truth = 100.0 * cpu_a / (cpu_a + cpu_b)
src = open(hot_py).read().splitlines()
line_a = next(i + 1 for i, l in enumerate(src) if l.startswith("def hot_a"))


def samples():
    """(thread id, unix ns, frames) of pid's samples; frames outermost
    first, each (type, function, file, line, mapping, address)."""
    m = re.search(r"^==== otlp-json\.gz\.b64\n(.*?)(?=^==== )", text, re.S | re.M)
    if not m or not m.group(1).strip():
        return []
    out = []
    raw = gzip.decompress(base64.b64decode("".join(m.group(1).split()))).decode()
    for line in raw.splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        dic = d["dictionary"]
        strs, attrs = dic["stringTable"], dic.get("attributeTable", [])
        locs, funcs, maps = dic.get("locationTable", []), dic.get("functionTable", []), dic.get("mappingTable", [])
        stacks = dic.get("stackTable", [])

        def frame(li):
            loc = locs[li]
            typ = next((attrs[a].get("value", {}).get("stringValue") for a in loc.get("attributeIndices", [])
                        if strs[attrs[a].get("keyStrindex", 0)] == "profile.frame.type"), None)
            ln = (loc.get("lines") or [{}])[0]
            fn = funcs[ln["functionIndex"]] if "functionIndex" in ln else {}
            mp = maps[loc["mappingIndex"]] if loc.get("mappingIndex") else {}
            return (typ, strs[fn.get("nameStrindex", 0)], strs[fn.get("filenameStrindex", 0)],
                    int(ln.get("line", 0)), strs[mp.get("filenameStrindex", 0)], int(loc.get("address", 0)))

        for rp in d.get("resourceProfiles", []):
            res = {strs[a.get("keyStrindex", 0)]: a.get("value", {}).get("intValue")
                   for a in rp.get("resource", {}).get("attributes", [])}
            if int(res.get("process.pid") or 0) != pid:
                continue
            for sp in rp.get("scopeProfiles", []):
                for prof in sp.get("profiles", []):
                    for smp in prof.get("samples", []):
                        frames = [frame(li) for li in stacks[smp.get("stackIndex", 0)].get("locationIndices", [])]
                        frames.reverse()  # outermost first
                        for ts in smp.get("timestampsUnixNano", []):
                            out.append((int(ts), frames))
    return out


try:
    mine = sorted(samples(), key=lambda s: s[0])
except (ValueError, KeyError, IndexError, OSError, EOFError) as e:
    fail(f"the guest's otlp-json is unreadable: {e}")
first = mine[0][0] if mine else 0
# Steady state: from the first sample with a cpython frame on (the
# interpreter is then known to the kernel), which must come within
# KNOWN_WITHIN of the recording (measured: seconds under emulation; the
# recorder reads python3.11's 6 MB of symbols and CFI and loads the walk
# program first).
known = next((ts for ts, f in mine if any(x[0] == "cpython" for x in f)), None)
last = mine[-1][0] if mine else 0
if known is None:
    problems.append("no sample with a cpython frame")
elif known - first > KNOWN_WITHIN * (last - first):
    problems.append(f"the first cpython frame {(known - first) / 1e9:.1f} s into {(last - first) / 1e9:.1f} s of samples"
                    f" (want within {KNOWN_WITHIN:.0%})")
judged = [f for ts, f in mine if known is not None and ts >= known]
n = len(judged)
# The truth over the judged samples: hot.py's CPU times from its last line
# printed before the first judged sample (its snapshot of the second
# before) to its last line at the recording's end.
if known is not None:
    for m in re.finditer(r"^at (\d+) (\{.*\})$", info, re.M):
        if int(m.group(1)) + 1 <= known / 1e9:
            times["start"] = json.loads(m.group(2))
    cpu_a = times["end"]["a"] - times["start"]["a"]
    cpu_b = times["end"]["b"] - times["start"]["b"]
    if cpu_a + cpu_b <= 0:
        fail(f"hot.py ran no CPU time in the judged samples: {info!r}")
    truth = 100.0 * cpu_a / (cpu_a + cpu_b)
with_py = n_a = n_b = rooted = eval_below = 0
wrong = None
for frames in judged:
    py = [f for f in frames if f[0] == "cpython"]
    native = [f for f in frames if f[0] == "native"]
    names = [f[1] for f in py]
    if py:
        with_py += 1
    if "hot_a" in names:
        n_a += 1
        i = names.index("hot_a")
        a = py[i]
        if names[max(0, i - 3):i + 1] != PATH_A or a[2] != "/py/hot.py" or not line_a < a[3] <= line_a + 4:
            wrong = wrong or " ; ".join(f"{f[1]} {f[2]}:{f[3]}" for f in py)
        k = frames.index(a)
        if any(f[1] == "_PyEval_EvalFrameDefault" for f in frames[:k]):
            eval_below += 1
    elif "hot_b" in names:
        n_b += 1
    if native:
        out = native[0]
        at_entry = entry is not None and out[4].endswith("/python3.11") and 0 <= out[5] - entry < 64
        if (out[1] == "_start" or at_entry) and any(f[1] == "Py_BytesMain" for f in native):
            rooted += 1
share = 100.0 * n_a / (n_a + n_b) if n_a + n_b else 0.0
p = truth / 100.0
tol = max(SHARE_TOL, SHARE_SIGMAS * 100.0 * (p * (1 - p) / (n_a + n_b)) ** 0.5 if n_a + n_b else 100.0)
if n < MIN_SAMPLES:
    problems.append(f"only {n} judged samples of python3.11 (want >= {MIN_SAMPLES})")
else:
    if with_py < PY_MIN * n:
        problems.append(f"{with_py} of {n} samples carry cpython frames (want >= {PY_MIN:.0%})")
    if rooted < ROOTED_MIN * n:
        problems.append(f"{rooted} of {n} samples rooted (want >= {ROOTED_MIN:.0%})")
    if abs(share - truth) > tol:
        problems.append(f"hot_a {share:.1f}% of hot_a/hot_b samples, its CPU time {truth:.1f}% (want +- {tol:.1f})")
if wrong:
    problems.append(f"a hot_a sample off the path {';'.join(PATH_A)} or its lines: {wrong}")
bpffs = (section("bpffs") or "").split()
if bpffs:
    problems.append(f"left in bpffs: {' '.join(bpffs)}")
err = section("record.err") or ""
wrote = re.search(r"wrote (\d+) samples", err)
lost = re.search(r"; lost (\d+) ", err)
walk = re.search(r"^bpf: (cpython_walk\w*): processed (\d+) insns", err, re.M)
status = "ok  " if not problems else "FAIL"
print(f"python {kernel} {status} {release}: {wrote.group(1) if wrote else '?'} samples"
      f" ({lost.group(1) if lost else '?'} lost), python3.11 {len(mine)}, interpreter known after {((known or first) - first) / 1e9:.1f} s, judged {n}: cpython frames {with_py}/{n}"
      f" ({100.0 * with_py / n if n else 0:.1f}%), hot_a {share:.1f}% of {n_a + n_b} (CPU time {truth:.1f}% +- {tol:.1f}),"
      f" rooted {rooted}/{n} ({100.0 * rooted / n if n else 0:.1f}%), eval loop under hot_a {eval_below}/{n_a}"
      + (f"; {walk.group(1)} {walk.group(2)} insns" if walk else "")
      + ("" if not problems else "; " + "; ".join(problems)))
sys.exit(1 if problems else 0)
