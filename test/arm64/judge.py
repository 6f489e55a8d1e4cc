#!/usr/bin/env python3
"""Judge one arm64 guest's console (guest.sh's output) against known truth.

    judge.py KERNEL CONSOLE_LOG

Asserted (exit 1 if not): the recording exits 0 and leaves nothing in
bpffs; callgraph_nofp's samples whose leaf is one of its three leaf
functions split 50/33/17 (its work ratio 3:2:1) within 10 points, from at
least 40 such samples (the leaf is the sampled pc: no unwinding needed);
some sample of syscalls_fp holds a named arm64 syscall-path kernel frame
(__arm64_sys_*, el0_svc, invoke_syscall). Measured only (the unwinder is
x86_64's so far, docs/arm64.md): the share of callgraph_nofp's (no frame
pointers) and syscalls_fp's (frame pointers) samples that reach main.
"""
import re
import sys

kernel, path = sys.argv[1], sys.argv[2]
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
cg = cg_main = sc = sc_kernel = sc_main = 0
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
        if frames[-1] in leaves:
            leaves[frames[-1]] += n
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
if sc_kernel == 0:
    problems.append("no named arm64 syscall frame in syscalls_fp's samples")
bpffs = (section("bpffs") or "").split()
if bpffs:
    problems.append(f"left in bpffs: {' '.join(bpffs)}")

status = "ok  " if not problems else "FAIL"
print(
    f"kernel {kernel} {status} {release}: {total} samples ({lost} lost) in {t1 - t0:.1f} s; "
    f"nofp leaves {shares[0]:.0f}/{shares[1]:.0f}/{shares[2]:.0f} ({in_leaves} of {cg}), "
    f"reaching main: nofp {cg_main}/{cg}, fp {sc_main}/{sc}; syscall kernel frames {sc_kernel}/{sc}; {bpf}"
    + ("" if not problems else "; " + "; ".join(problems))
)
sys.exit(1 if problems else 0)
