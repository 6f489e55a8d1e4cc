#!/usr/bin/env python3
"""Judge the arm64 interpreter guest's console (guest_interp.sh): each
RUNTIME's recording against its workload's own CPU time, one line each.

    judge_interp.py KERNEL CONSOLE_LOG RUNTIME...

Each runtime is an entry interp/RUNTIME.conf (its frame type, hot
functions' names, files and lines, call path, root). Its workload runs
hot_a and hot_b (70:30 of their work) and prints the CPU time it spent in
each; the guest prints its last line before and after the recording, and
once a second between (the truth is taken over the judged samples' span).
Judged: the main thread's samples from the later of its first one with a
runtime frame on (the walk program loads on demand when the recorder
finds the interpreter, seconds under emulation) and its first rooted one
(the interpreter's unwind tables loaded: before, a stack copy cannot
reach main), the steady state, which must come within KNOWN_WITHIN of its
samples' span, at least MIN_SAMPLES of them:
- at least RT_MIN of them carry runtime frames (FRAME);
- every sample with a HOT_A frame has PATH_A below it in its runtime
  frames (outermost first, in order), and HOT_A's and HOT_B's files and
  lines are theirs (the line the function's def line or one of the
  BODY lines after it; line 0, unknown, in at most 5% of them: a frame
  caught entering or leaving, as the x86_64 tests allow);
- at least half of them are in HOT_A or HOT_B, and HOT_A's share of
  those is within SHARE_SIGMAS
  binomial standard deviations (at least SHARE_TOL points) of hot_a's
  share of their CPU time over the recording;
- at least ROOTED_MIN of them are rooted: their outermost native frame is
  _start or the interpreter's ELF entry point (Debian strips _start) and
  ROOT_FN is among the native frames;
- the recording exits 0 and leaves nothing in bpffs.
Measured only: the samples whose HOT_A frame has LOOP_FN (the
interpreter loop) below it.
"""
import base64
import gzip
import json
import os
import re
import shlex
import sys

KNOWN_WITHIN = 0.6
MIN_SAMPLES = 200
RT_MIN = 0.90
ROOTED_MIN = 0.90
SHARE_TOL = 5.0
SHARE_SIGMAS = 3.5
HERE = os.path.dirname(os.path.abspath(__file__))


def entry_conf(rt):
    """interp/RT.conf's KEY="value" lines."""
    conf = {}
    for line in open(os.path.join(HERE, "interp", rt + ".conf")):
        m = re.match(r'^([A-Z_]+)=(.*)$', line.strip())
        if m:
            conf[m.group(1)] = " ".join(shlex.split(m.group(2)))
    return conf


def def_line(spec):
    """"FILE:PREFIX" -> (guest path, line of PREFIX in the workload)."""
    name, prefix = spec.split(":", 1)
    src = open(os.path.join(HERE, "..", "workloads", "runtimes", name)).read().splitlines()
    return "/w/" + name, next(i + 1 for i, l in enumerate(src) if l.startswith(prefix))


def samples(text, rt, pid):
    """(unix ns, frames) of pid's main thread; frames outermost first,
    each (type, function, file, line, mapping, address)."""
    m = re.search(r"^==== %s otlp-json\.gz\.b64\n(.*?)(?=^==== |^guest: )" % rt, text, re.S | re.M)
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

        def attr(indices, key):
            for a in indices:
                if strs[attrs[a].get("keyStrindex", 0)] == key:
                    v = attrs[a].get("value", {})
                    return v.get("stringValue", v.get("intValue"))
            return None

        def frame(li):
            loc = locs[li]
            ln = (loc.get("lines") or [{}])[0]
            fn = funcs[ln["functionIndex"]] if "functionIndex" in ln else {}
            mp = maps[loc["mappingIndex"]] if loc.get("mappingIndex") else {}
            return (attr(loc.get("attributeIndices", []), "profile.frame.type"), strs[fn.get("nameStrindex", 0)],
                    strs[fn.get("filenameStrindex", 0)], int(ln.get("line", 0)),
                    strs[mp.get("filenameStrindex", 0)], int(loc.get("address", 0)))

        for rp in d.get("resourceProfiles", []):
            res = {strs[a.get("keyStrindex", 0)]: a.get("value", {}).get("intValue")
                   for a in rp.get("resource", {}).get("attributes", [])}
            if int(res.get("process.pid") or 0) != pid:
                continue
            for sp in rp.get("scopeProfiles", []):
                for prof in sp.get("profiles", []):
                    for smp in prof.get("samples", []):
                        tid = attr(smp.get("attributeIndices", []), "thread.id")
                        if tid is not None and int(tid) != pid:
                            continue
                        frames = [frame(li) for li in stacks[smp.get("stackIndex", 0)].get("locationIndices", [])]
                        frames.reverse()  # outermost first
                        for ts in smp.get("timestampsUnixNano", []):
                            out.append((int(ts), frames))
    return out


def below_in_order(names, path):
    """path (outermost first) is a subsequence of names."""
    it = iter(names)
    return all(any(n == p for n in it) for p in path)


def judge(kernel, path, text, rt):
    c = entry_conf(rt)
    problems = []

    def fail(msg):
        print(f"{rt} {kernel} FAIL {msg} (see {path})")
        return False

    m = re.search(r"^guest: %s record exit (\d+)" % rt, text, re.M)
    if not m:
        return fail("no result from the guest")
    if m.group(1) != "0":
        problems.append(f"record exit {m.group(1)}")
    release = re.search(r"^guest: (\S+) aarch64", text, re.M)
    release = release.group(1) if release else "?"
    m = re.search(r"^==== %s pid (\d+)\n(.*?)(?=^==== |^guest: )" % rt, text, re.S | re.M)
    if not m:
        return fail(f"no {rt} section")
    pid, info = int(m.group(1)), m.group(2)
    ka, kb = c["KEYS"].split()
    entry = re.search(r"^entry 0x([0-9a-f]+)", info, re.M)
    entry = int(entry.group(1), 16) if entry else None
    times = {}
    for k in ("start", "end"):
        t = re.search(r"^%s (.*)$" % k, info, re.M)
        try:
            times[k] = json.loads(t.group(1)) if t and t.group(1).strip() else {ka: 0.0, kb: 0.0}
        except ValueError:
            return fail(f"the workload printed {t.group(1)!r}")
    file_a, line_a = def_line(c["DEF_A"])
    file_b, line_b = def_line(c["DEF_B"])
    body = int(c["BODY"])
    path_a = c["PATH_A"].split(";")
    try:
        mine = sorted(samples(text, rt, pid), key=lambda s: s[0])
    except (ValueError, KeyError, IndexError, OSError, EOFError) as e:
        return fail(f"the guest's otlp-json is unreadable: {e}")
    def is_rooted(frames):
        native = [f for f in frames if f[0] == "native"]
        if not native:
            return False
        out = native[0]
        at_entry = entry is not None and out[4] == c["BIN"] and 0 <= out[5] - entry < 64
        return (out[1] == "_start" or at_entry) and any(f[1] == c["ROOT_FN"] for f in native)

    first = mine[0][0] if mine else 0
    last = mine[-1][0] if mine else 0
    # Steady state: the interpreter known to the kernel (its walk program
    # loaded) and its native unwind tables loaded (the first rooted
    # sample: before that a sample is a stack copy, which cannot reach
    # main from deep in the interpreter, e.g. php's ~14 KiB between
    # execute_ex and main; as the x86_64 PHP test does).
    known = next((ts for ts, f in mine if any(x[0] == c["FRAME"] for x in f)), None)
    rooted_from = next((ts for ts, f in mine if is_rooted(f)), None)
    if known is None:
        problems.append(f"no sample with a {c['FRAME']} frame")
    elif rooted_from is None:
        problems.append("no rooted sample")
    else:
        known = max(known, rooted_from)
        if known - first > KNOWN_WITHIN * (last - first):
            problems.append(f"the first rooted sample with a {c['FRAME']} frame {(known - first) / 1e9:.1f} s into"
                            f" {(last - first) / 1e9:.1f} s of samples (want within {KNOWN_WITHIN:.0%})")
    if rooted_from is None:
        known = None
    judged = [f for ts, f in mine if known is not None and ts >= known]
    n = len(judged)
    # the truth over the judged samples: the workload's CPU times from its
    # last line printed before the first judged sample (its snapshot of
    # the second before) to its last line at the recording's end
    if known is not None:
        for m in re.finditer(r"^at (\d+) (\{.*\})$", info, re.M):
            if int(m.group(1)) + 1 <= known / 1e9:
                times["start"] = json.loads(m.group(2))
    cpu_a = times["end"][ka] - times["start"][ka]
    cpu_b = times["end"][kb] - times["start"][kb]
    if cpu_a + cpu_b <= 0:
        return fail(f"the workload ran no CPU time in the judged samples: {info[:400]!r}")
    truth = 100.0 * cpu_a / (cpu_a + cpu_b)
    with_rt = n_a = n_b = rooted = loop_below = unlined = 0
    wrong = None
    names_seen = {}
    for frames in judged:
        rtf = [f for f in frames if f[0] == c["FRAME"]]
        native = [f for f in frames if f[0] == "native"]
        names = [f[1] for f in rtf]
        if rtf:
            with_rt += 1
            names_seen[rtf[-1][1]] = names_seen.get(rtf[-1][1], 0) + 1
        for hot, fl, ln in ((c["HOT_A"], file_a, line_a), (c["HOT_B"], file_b, line_b)):
            if hot not in names:
                continue
            i = names.index(hot)
            h = rtf[i]
            # the def line is the function's own too (CPython 3.11's
            # RESUME at entry)
            ok = h[2] == fl and ln <= h[3] <= ln + body
            # a frame caught entering or leaving: its own file, line
            # unknown (0), as the x86_64 tests allow (up to 5%)
            if h[2] == fl and h[3] == 0:
                unlined += 1
                ok = True
            if hot == c["HOT_A"]:
                n_a += 1
                ok = ok and below_in_order(names[:i + 1], path_a)
                if any(f[1] == c["LOOP_FN"] for f in frames[:frames.index(h)]):
                    loop_below += 1
            else:
                n_b += 1
            if not ok:
                wrong = wrong or f"{hot}: " + " ; ".join(f"{f[1]} {f[2]}:{f[3]}" for f in rtf)
            break
        if is_rooted(frames):
            rooted += 1
    share = 100.0 * n_a / (n_a + n_b) if n_a + n_b else 0.0
    p = truth / 100.0
    tol = max(SHARE_TOL, SHARE_SIGMAS * 100.0 * (p * (1 - p) / (n_a + n_b)) ** 0.5 if n_a + n_b else 100.0)
    if n < MIN_SAMPLES:
        problems.append(f"only {n} judged samples of the main thread (want >= {MIN_SAMPLES})")
    else:
        if with_rt < RT_MIN * n:
            problems.append(f"{with_rt} of {n} samples carry {c['FRAME']} frames (want >= {RT_MIN:.0%})")
        if rooted < ROOTED_MIN * n:
            problems.append(f"{rooted} of {n} samples rooted (want >= {ROOTED_MIN:.0%})")
        if abs(share - truth) > tol:
            problems.append(f"hot_a {share:.1f}% of hot_a/hot_b samples, its CPU time {truth:.1f}% (want +- {tol:.1f})")
        if n_a + n_b < 0.5 * n:
            top = sorted(names_seen.items(), key=lambda kv: -kv[1])[:4]
            problems.append(f"only {n_a + n_b} of {n} samples in {c['HOT_A']} or {c['HOT_B']} (innermost: {top})")
    if unlined > 0.05 * (n_a + n_b):
        problems.append(f"{unlined} of {n_a + n_b} hot frames without a line (want <= 5%)")
    if wrong:
        problems.append(f"a hot frame off its path {c['PATH_A']} or its file and lines: {wrong}")
    bpffs = re.search(r"^==== %s bpffs\n(.*?)(?=^==== |^guest: )" % rt, text, re.S | re.M)
    if bpffs and bpffs.group(1).split():
        problems.append(f"left in bpffs: {' '.join(bpffs.group(1).split())}")
    err = re.search(r"^==== %s record\.err\n(.*?)(?=^==== |^guest: )" % rt, text, re.S | re.M)
    err = err.group(1) if err else ""
    wrote = re.search(r"wrote (\d+) samples", err)
    lost = re.search(r"; lost (\d+) ", err)
    walk = re.search(r"^bpf: (%s_walk\w*): processed (\d+) insns" % c["FRAME"], err, re.M)
    status = "ok  " if not problems else "FAIL"
    print(f"{rt} {kernel} {status} {release}: {wrote.group(1) if wrote else '?'} samples"
          f" ({lost.group(1) if lost else '?'} lost), main thread {len(mine)}, steady after"
          f" {((known or first) - first) / 1e9:.1f} s, judged {n}: {c['FRAME']} frames {with_rt}/{n}"
          f" ({100.0 * with_rt / n if n else 0:.1f}%), hot_a {share:.1f}% of {n_a + n_b} (CPU time {truth:.1f}%"
          f" +- {tol:.1f}), rooted {rooted}/{n} ({100.0 * rooted / n if n else 0:.1f}%),"
          f" {c['LOOP_FN']} under hot_a {loop_below}/{n_a}, hot frames without a line {unlined}"
          + (f"; {walk.group(1)} {walk.group(2)} insns" if walk else "")
          + ("" if not problems else "; " + "; ".join(problems)))
    return not problems


def main():
    kernel, path = sys.argv[1], sys.argv[2]
    text = open(path, errors="replace").read().replace("\r", "")
    ok = True
    for rt in sys.argv[3:]:
        ok = judge(kernel, path, text, rt) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
