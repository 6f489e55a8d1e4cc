"""Judge Go in one arm64 guest's console (judge.py calls this).

go_callgraph (test/workloads/go_callgraph: work 3:2:1 in main.leafHeavy,
main.leafMedium, main.leafLight; cross-compiled without cgo and stripped,
so its stacks come from .gopclntab's SP-delta tables and its names from
.gopclntab) runs through the recording. Its samples (all threads) are
judged from its first rooted stack on, in the last GO_JUDGED_S of the
recording: under emulation the recorder reads the binary's symbols and
builds its tables seconds in (measured, and at most GO_MAX_DELAY_S after
the process's first sample); before that its stacks are its leaf only.
Asserted:
- at least GO_MIN_SAMPLES judged samples, at least GO_ROOTED_MIN of them
  rooted: at runtime.goexit, the bottom of every goroutine, at
  runtime.mstart or runtime.rt0_go, the bottom of a thread's own stack
  (g0: sysmon, the scheduler), or at runtime.mcall or runtime.morestack, which move a
  goroutine onto g0's stack by writing sp (Go's own traceback ends there
  too: SPWrite);
- at least GO_ROOTED_MIN of those in its leaf functions reach
  runtime.main, and each of those has the call path from runtime.main to
  its leaf frame for frame (runtime.main;main.main;main.runLoop;
  main.pathHeavy;main.leafHeavy, ...; main.mix, inlined, may follow);
- the leaf functions' shares 50/33/17 within GO_SHARE_POINTS, from at
  least GO_MIN_LEAVES samples;
- every go-typed frame is named.
"""
import re

from judge_node import pid_samples

GO_ROOTS = ("runtime.goexit", "runtime.mstart", "runtime.rt0_go", "runtime.mcall", "runtime.morestack")
GO_ROOTED_MIN = 0.95
GO_MIN_SAMPLES = 80
GO_MIN_LEAVES = 60
GO_SHARE_POINTS = 10.0
GO_MAX_DELAY_S = 25
GO_JUDGED_S = 20
# Below runtime.main, root first.
GO_TRUTH = {
    "main.leafHeavy": ["runtime.main", "main.main", "main.runLoop", "main.pathHeavy", "main.leafHeavy"],
    "main.leafMedium": ["runtime.main", "main.main", "main.runLoop", "main.pathMedium", "main.leafMedium"],
    "main.leafLight": ["runtime.main", "main.main", "main.runLoop", "main.leafLight"],
}
GO_WORK = {"main.leafHeavy": 50.0, "main.leafMedium": 33.3, "main.leafLight": 16.7}


def judge_go(text):
    """(problems, one-line summary) of go_callgraph in the console text."""
    m = re.search(r"^==== go_callgraph pid (\d+)$", text, re.M)
    if not m:
        return ["go_callgraph: no pid"], "go -"
    try:
        samples = sorted(pid_samples(text, int(m.group(1)), main_thread=False))
    except (ValueError, KeyError, IndexError, OSError, EOFError) as e:
        return [f"go_callgraph: the guest's otlp-json is unreadable: {e}"], "go -"
    if not samples:
        return ["go_callgraph: no samples"], "go -"

    def user(fr):
        """Function names root first, the kernel's left out."""
        return [f[1] for f in reversed(fr) if f[0] != "kernel"]

    rooted = [bool(user(fr)) and user(fr)[0] in GO_ROOTS for _, fr in samples]
    k = next((i for i, r in enumerate(rooted) if r), None)
    if k is None:
        return [f"go_callgraph: no rooted stack in {len(samples)} samples, e.g. "
                + ";".join(user(samples[len(samples) // 2][1]))], "go -"
    delay = (samples[k][0] - samples[0][0]) / 1e9
    probs = []
    if delay > GO_MAX_DELAY_S:
        probs.append(f"go_callgraph: the first rooted stack {delay:.1f} s after its first sample"
                     f" (want <= {GO_MAX_DELAY_S} s)")
    since = max(samples[k][0], samples[-1][0] - GO_JUDGED_S * 10**9)
    k = next(i for i, (ts, _) in enumerate(samples) if ts >= since)
    judged = samples[k:]
    n = len(judged)
    nrooted = sum(rooted[k:])
    leaves = dict.fromkeys(GO_TRUTH, 0)
    at_main = wrong = frames = unnamed = 0
    example = None
    for i, (_, fr) in enumerate(judged):
        names = user(fr)
        for f in fr:
            if f[0] == "go":
                frames += 1
                unnamed += 0 if f[1] else 1
        leaf = next((f for f in reversed(names) if f in GO_TRUTH), None)
        if not leaf:
            if not rooted[k + i] and example is None:
                example = ";".join(names)
            continue
        leaves[leaf] += 1
        if "runtime.main" not in names:
            example = example or ";".join(names)
            continue
        at_main += 1
        if names[names.index("runtime.main"):names.index(leaf) + 1] != GO_TRUTH[leaf]:
            wrong += 1
            example = example or ";".join(names)
    nleaves = sum(leaves.values())
    shares = {f: 100.0 * c / nleaves if nleaves else 0.0 for f, c in leaves.items()}
    if n < GO_MIN_SAMPLES:
        probs.append(f"go_callgraph: {n} samples judged (want >= {GO_MIN_SAMPLES})")
    if nrooted < GO_ROOTED_MIN * n:
        probs.append(f"go_callgraph: {nrooted} of {n} samples rooted at {' or '.join(GO_ROOTS)}"
                     f" (want >= {GO_ROOTED_MIN:.0%}), e.g. {example}")
    if at_main < GO_ROOTED_MIN * nleaves:
        probs.append(f"go_callgraph: {at_main} of {nleaves} samples in its leaves reach runtime.main"
                     f" (want >= {GO_ROOTED_MIN:.0%}), e.g. {example}")
    if wrong:
        probs.append(f"go_callgraph: {wrong} samples with a wrong path below runtime.main, e.g. {example}")
    if nleaves < GO_MIN_LEAVES:
        probs.append(f"go_callgraph: {nleaves} samples in its leaf functions (want >= {GO_MIN_LEAVES})")
    else:
        for f, want in GO_WORK.items():
            if abs(shares[f] - want) > GO_SHARE_POINTS:
                probs.append(f"go_callgraph: {f} {shares[f]:.1f}% (want {want} +- {GO_SHARE_POINTS:.0f})")
    if unnamed:
        probs.append(f"go_callgraph: {unnamed} of {frames} go frames unnamed")
    if not frames:
        probs.append("go_callgraph: no go-typed frames")
    return probs, (f"go: rooted {nrooted}/{n} ({100.0 * nrooted / n:.1f}%; first rooted stack {delay:.1f} s"
                   f" after its first sample, judged the last {(judged[-1][0] - judged[0][0]) / 1e9:.0f} s),"
                   f" leaves {'/'.join(f'{shares[f]:.0f}' for f in GO_TRUTH)} ({nleaves}),"
                   f" runtime.main {at_main}/{nleaves}, {wrong} wrong paths, {frames - unnamed}/{frames} go frames named")
