#!/usr/bin/env python3
"""Judge one arm64 guest's console (guest.sh's output) against known truth.

    judge.py KERNEL CONSOLE_LOG

Asserted (exit 1 if not): the recording exits 0 and leaves nothing in
bpffs; callgraph_nofp's samples whose leaf is one of its three leaf
functions split 50/33/17 (its work ratio 3:2:1) within 10 points, from at
least 40 such samples (the leaf is the sampled pc: no unwinding needed);
some sample of syscalls_fp holds a named arm64 syscall-path kernel frame
(__arm64_sys_*, el0_svc, invoke_syscall). callgraph_nofp (no frame
pointers: unwound by its aarch64 CFI) and callgraph_pac (the same with
return addresses signed by pointer authentication, which the guest CPU
must have: `paca`) each reach main in at least NOFP_MAIN_MIN of their
samples, and every one of their samples that holds a leaf function and
reaches main has the program's call path from main to that leaf, frame
for frame (main;run_loop;path_heavy;leaf_heavy, ...).
go_callgraph (Go, stripped, no cgo): judge_go.py.
Every BPF program the recorder loads (all runtimes forced: bpf_loop
kernels load on_cpu_sample, older ones the chained pair) is verified
within 60% of the verifier's instruction limit (BPF_LOG_STATS lines). The
samples that miss main are the first ones of the process, taken before its
tables are in the kernel (leaf only). Measured only: the share of
syscalls_fp's (frame pointers) samples that reach main.
Trace correlation (TLS variant I): ctx_linked_tlsdesc (R_AARCH64_TLSDESC,
static TLS above the thread pointer) and ctx_exe_le (local-exec in the
executable) each stop cleanly with their context thread's TLS static;
every sample of theirs that carries a Link carries the trace and span
their thread published at that time (none wrong, none on the thread that
publishes nothing), at least CTX_MIN_LINKED such samples, and after the
first one at least CTX_MIN_SHARE of the context thread's samples taken
inside an interval with context are linked. Samples within CTX_EDGE_NS of
an interval's ends are not judged (the workload's clock read and its
store to the record are not one instant).
"""
import base64
import gzip
import json
import re
import sys

from judge_go import judge_go
from judge_node import judge_node

kernel, path = sys.argv[1], sys.argv[2]
NOFP_MAIN_MIN = 0.90
CTX_MIN_LINKED = 10
CTX_MIN_SHARE = 0.80
CTX_EDGE_NS = 20_000_000
# callgraph.c's call graph below main.
TRUTH = {
    "leaf_heavy": ["main", "run_loop", "path_heavy", "leaf_heavy"],
    "leaf_medium": ["main", "run_loop", "path_medium", "leaf_medium"],
    "leaf_light": ["main", "run_loop", "leaf_light"],
}
text = open(path, errors="replace").read().replace("\r", "")


def section(name):
    m = re.search(r"^==== %s\n(.*?)(?=^==== )" % re.escape(name), text, re.S | re.M)
    return m.group(1) if m else None


problems = []
m = re.search(r"^guest: record exit (\d+), ([\d.]+) -> ([\d.]+) s uptime", text, re.M)
if not m:
    print(f"kernel {kernel} FAIL no result from the guest (see {path})")
    sys.exit(1)
rc, t0, t1 = int(m.group(1)), float(m.group(2)), float(m.group(3))
if rc != 0:
    problems.append(f"record exit {rc}")
release = re.search(r"^guest: (\S+) aarch64", text, re.M)
release = release.group(1) if release else "?"
err = section("record.err") or ""
wrote = re.search(r"wrote (\d+) samples", err)
total = int(wrote.group(1)) if wrote else 0
lost = re.search(r"; lost (\d+) ", err)
lost = int(lost.group(1)) if lost else 0

leaves = {"leaf_heavy": 0, "leaf_medium": 0, "leaf_light": 0}
cg = cg_main = cg_wrong = sc = sc_kernel = sc_main = 0
wrong_example = None
# The same for callgraph_pac: samples, reaching main, wrong paths.
pac = {"n": 0, "main": 0, "wrong": 0}
# signal_spin: samples in its handler, those whose stack crosses the
# signal frame down to main (main ... run ... on_usr1).
sig = {"n": 0, "whole": 0}
sig_example = None


def wrong_path(frames):
    """A sample with a leaf function that reaches main, on another path."""
    # Kernel frames (an interrupt in the leaf) follow the user ones.
    leaf = next((f for f in reversed(frames) if f in TRUTH), None)
    if not leaf or "main" not in frames:
        return False
    return frames[frames.index("main"):frames.index(leaf) + 1] != TRUTH[leaf]


for line in (section("folded") or "").splitlines():
    stack, _, n = line.rpartition(" ")
    if not n.isdigit():
        continue
    n = int(n)
    frames = stack.split(";")
    if frames[0] == "callgraph_nofp":
        cg += n
        if "main" in frames[1:]:
            cg_main += n
        if wrong_path(frames[1:]):
            cg_wrong += n
            wrong_example = wrong_example or stack
        if frames[-1] in leaves:
            leaves[frames[-1]] += n
    elif frames[0] == "callgraph_pac":
        pac["n"] += n
        pac["main"] += n if "main" in frames[1:] else 0
        if wrong_path(frames[1:]):
            pac["wrong"] += n
            wrong_example = wrong_example or stack
    elif frames[0] == "signal_spin":
        if "on_usr1" in frames:
            sig["n"] += n
            h = frames.index("on_usr1")
            if "main" in frames[:h] and "run" in frames[frames.index("main"):h]:
                sig["whole"] += n
            elif sig_example is None:
                sig_example = stack
    elif frames[0] == "syscalls_fp":
        sc += n
        if "main" in frames[1:]:
            sc_main += n
        if any(f.startswith("__arm64_sys_") or f in ("el0_svc", "invoke_syscall") for f in frames):
            sc_kernel += n

# Measured: BPF time per sample of the perf_event programs, under TCG
# (emulated: says nothing about a real CPU's cost).
run_ns = run_cnt = 0
for m in re.finditer(r"^bpf-prog run_time_ns:(\d+) run_cnt:(\d+)", section("bpf_stats") or "", re.M):
    run_ns += int(m.group(1))
    run_cnt += int(m.group(2))
bpf = f"BPF {run_ns / run_cnt / 1000:.0f} us/sample emulated ({run_cnt} runs)" if run_cnt else "BPF time not read"

in_leaves = sum(leaves.values())
shares = [100.0 * leaves[k] / in_leaves if in_leaves else 0 for k in ("leaf_heavy", "leaf_medium", "leaf_light")]
if in_leaves < 40:
    problems.append(f"only {in_leaves} callgraph samples in its leaf functions")
else:
    for got, want, k in zip(shares, (50.0, 33.3, 16.7), ("heavy", "medium", "light")):
        if abs(got - want) > 10:
            problems.append(f"leaf_{k} {got:.0f}% (want {want:.0f} +- 10)")
if cg == 0 or cg_main < NOFP_MAIN_MIN * cg:
    problems.append(f"callgraph_nofp reaches main in {cg_main} of {cg} samples (want >= {NOFP_MAIN_MIN:.0%})")
if pac["n"] == 0 or pac["main"] < NOFP_MAIN_MIN * pac["n"]:
    problems.append(f"callgraph_pac reaches main in {pac['main']} of {pac['n']} samples (want >= {NOFP_MAIN_MIN:.0%})")
if pac["wrong"]:
    problems.append(f"{pac['wrong']} callgraph_pac samples with a wrong path below main")
if sig["n"] == 0 or sig["whole"] < NOFP_MAIN_MIN * sig["n"]:
    problems.append(f"signal_spin: {sig['whole']} of {sig['n']} handler samples cross the signal frame to main"
                    f" (want >= {NOFP_MAIN_MIN:.0%}), e.g. {sig_example}")
if not re.search(r"^guest: pointer authentication: paca", text, re.M):
    problems.append("the guest CPU has no pointer authentication: callgraph_pac signs nothing")
if cg_wrong:
    problems.append(f"{cg_wrong} callgraph_nofp samples with a wrong path below main, e.g. {wrong_example}")
if sc_kernel == 0:
    problems.append("no named arm64 syscall frame in syscalls_fp's samples")
# Verifier figures: every program within 60% of its limit.
progs = {m.group(1): (int(m.group(2)), int(m.group(3)))
         for m in re.finditer(r"^bpf: (\w+): processed (\d+) insns \(limit (\d+)\)", err, re.M)}
want = (["on_cpu_sample_chained", "on_cpu_sample_walk", "cpython_walk_bounded", "hotspot_walk_bounded"]
        if "on_cpu_sample_chained" in progs else ["on_cpu_sample", "cpython_walk", "hotspot_walk"])
want += ["on_cpu_sample_finish", "on_exec", "on_fork", "on_exit"]
for name in want:
    if name not in progs:
        problems.append(f"no verifier figures for {name}")
worst = max(progs.items(), key=lambda kv: kv[1][0] / kv[1][1], default=None)
for name, (n, limit) in progs.items():
    if n > 0.6 * limit:
        problems.append(f"{name}: {n} of {limit} verifier instructions (> 60%)")
insns = "insns " + ", ".join(f"{k} {v[0]}" for k, v in sorted(progs.items()))
if worst:
    insns += f" (max {100.0 * worst[1][0] / worst[1][1]:.0f}% {worst[0]})"
bpffs = (section("bpffs") or "").split()
if bpffs:
    problems.append(f"left in bpffs: {' '.join(bpffs)}")



def otlp_samples():
    """(pid, thread id, unix ns, (trace, span) or None) of every sample."""
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
        strs, attrs, links = dic["stringTable"], dic.get("attributeTable", []), dic.get("linkTable", [])

        def attr(i):
            a = attrs[i]
            v = a.get("value", {})
            return strs[a.get("keyStrindex", 0)], v.get("intValue", v.get("stringValue"))

        for rp in d.get("resourceProfiles", []):
            res = {strs[a.get("keyStrindex", 0)]: a.get("value", {}).get("intValue")
                   for a in rp.get("resource", {}).get("attributes", [])}
            pid = int(res.get("process.pid") or 0)
            for sp in rp.get("scopeProfiles", []):
                for prof in sp.get("profiles", []):
                    for smp in prof.get("samples", []):
                        tid = next((int(v) for k, v in map(attr, smp.get("attributeIndices", []))
                                    if k == "thread.id"), 0)
                        li = smp.get("linkIndex", 0)
                        link = (links[li].get("traceId", ""), links[li].get("spanId", "")) if li else None
                        for ts in smp.get("timestampsUnixNano", []):
                            out.append((pid, tid, int(ts), link))
    return out


def judge_ctx(name, samples):
    """Problems and a summary of one context workload (see the docstring)."""
    m = re.search(r"^==== %s pid (\d+)\n(.*?)(?=^==== )" % re.escape(name), text, re.S | re.M)
    if not m:
        return [f"{name}: no output"], f"{name} -"
    pid, events = int(m.group(1)), []
    for line in m.group(2).splitlines():
        if line.startswith("{"):
            try:
                events.append(json.loads(line))
            except ValueError:
                return [f"{name} printed {line!r}"], f"{name} -"
    probs = []
    if sum(e["event"] == "exit" for e in events) != 1:
        probs.append(f"{name} did not stop cleanly: {m.group(2)[-300:]!r}")
    ctx_tids = {e["tid"]: e for e in events if e["event"] == "thread" and e.get("strategy") != "none"}
    noctx = {e["tid"] for e in events if e["event"] == "thread" and e.get("strategy") == "none"}
    for tid, e in ctx_tids.items():
        if e.get("tls") != "static":
            probs.append(f"{name}: thread {tid} TLS {e.get('tls')} at {e.get('tls_offset')} (want static)")
    ivs = {}
    for e in events:
        if e["event"] == "interval":
            ivs.setdefault(e["tid"], []).append(e)
    linked = wrong = missed = on_noctx = total = 0
    first = None
    example = None
    mine = sorted((s for s in samples if s[0] == pid), key=lambda s: s[2])
    for _, tid, ts, link in mine:
        total += 1
        if tid in noctx:
            on_noctx += 1 if link else 0
            continue
        iv = next((i for i in ivs.get(tid, []) if i["start_ns"] <= ts <= i["end_ns"]), None)
        if iv is None or ts - iv["start_ns"] < CTX_EDGE_NS or iv["end_ns"] - ts < CTX_EDGE_NS:
            continue
        want = (iv["trace_id"], iv["span_id"]) if iv["trace_id"] else None
        if link:
            first = first or ts
            if link != want:
                wrong += 1
                example = example or f"{link} at {ts}, published {want}"
            else:
                linked += 1
        elif want and first:
            missed += 1
    if wrong:
        probs.append(f"{name}: {wrong} samples with another trace/span than published, e.g. {example}")
    if on_noctx:
        probs.append(f"{name}: {on_noctx} samples of the thread without context carry a Link")
    if linked < CTX_MIN_LINKED:
        probs.append(f"{name}: {linked} samples linked to the published trace (want >= {CTX_MIN_LINKED})")
    elif linked < CTX_MIN_SHARE * (linked + missed):
        probs.append(f"{name}: {linked} of {linked + missed} samples in a published context linked"
                     f" (want >= {CTX_MIN_SHARE:.0%})")
    offs = ",".join(str(e.get("tls_offset")) for e in ctx_tids.values())
    return probs, (f"{name} linked {linked}/{linked + missed} ({wrong} wrong; {total} samples;"
                   f" tp{'+' if not offs.startswith('-') else ''}{offs})")


try:
    all_samples = otlp_samples()
except (ValueError, KeyError, IndexError, OSError, EOFError) as e:
    all_samples = []
    problems.append(f"the guest's otlp-json is unreadable: {e}")
ctx_notes = []
for name in ("ctx_tlsdesc", "ctx_le"):
    p, note = judge_ctx(name, all_samples)
    problems += p
    ctx_notes.append(note)

# Node.js (V8): judge_node.py.
node_problems, node_note = judge_node(text, progs)
problems += node_problems
ctx_notes.append(node_note)
# Go: judge_go.py.
go_problems, go_note = judge_go(text)
problems += go_problems
ctx_notes.append(go_note)

status = "ok  " if not problems else "FAIL"
print(
    f"kernel {kernel} {status} {release}: {total} samples ({lost} lost) in {t1 - t0:.1f} s; "
    f"nofp leaves {shares[0]:.0f}/{shares[1]:.0f}/{shares[2]:.0f} ({in_leaves} of {cg}), "
    f"reaching main: nofp {cg_main}/{cg} ({100.0 * cg_main / cg if cg else 0:.1f}%, {cg_wrong} wrong paths), "
    f"pac {pac['main']}/{pac['n']} ({100.0 * pac['main'] / pac['n'] if pac['n'] else 0:.1f}%, {pac['wrong']} wrong paths), "
    f"signal frame to main {sig['whole']}/{sig['n']}, fp {sc_main}/{sc}; syscall kernel frames {sc_kernel}/{sc}; "
    f"{'; '.join(ctx_notes)}; {bpf}; {insns}"
    + ("" if not problems else "; " + "; ".join(problems))
)
sys.exit(1 if problems else 0)
