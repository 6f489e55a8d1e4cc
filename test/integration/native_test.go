// Native code as people ship it: lld/mold layouts and Rust release builds.
package integration

import (
	"debug/elf"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// nativeWorkload runs build/workloads/native/NAME with args.
func nativeWorkload(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(filepath.Join(buildDir(t), "workloads", "native", name), args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v (make workloads builds it)", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	return cmd
}

// processOf: every sample of pid running exe, over all its resources (a
// process may come in more than one ResourceProfiles, e.g. a first sample
// taken before its exec was seen).
func processOf(d *Decoded, pid int, exe string) *Process {
	var out *Process
	for _, p := range d.Processes {
		if v, ok := p.Attrs["process.pid"].(int64); !ok || int(v) != pid || p.Attrs["process.executable.name"] != exe {
			continue
		}
		if out == nil {
			out = &Process{Attrs: p.Attrs, Profile: p.Profile}
		}
		out.Samples = append(out.Samples, p.Samples...)
	}
	return out
}

// steadySamples: p without its samples of the first `skip` of recording.
func steadySamples(p *Process, skip time.Duration) *Process {
	var t0 uint64
	for i, s := range p.Samples {
		if i == 0 || s.TimeNs < t0 {
			t0 = s.TimeNs
		}
	}
	out := &Process{Attrs: p.Attrs, Profile: p.Profile}
	for _, s := range p.Samples {
		if s.TimeNs >= t0+uint64(skip) {
			out.Samples = append(out.Samples, s)
		}
	}
	return out
}

// nameHas: the function name is token, mangled or not (Rust's legacy
// mangling spells a path component as <len><name>).
func nameHas(name, token string) bool {
	return strings.Contains(name, token)
}

// shareTolerance: the bar in points for a share of want%, or three
// standard errors of n samples if the host left the workload too few
// samples for the bar to be meaningful (a busy 2-CPU machine).
func shareTolerance(bar, want, n float64) float64 {
	p := want / 100
	if se := 300 * math.Sqrt(p*(1-p)/n); se > bar {
		return se
	}
	return bar
}

// callGraphShares checks the 3:2:1 call graph of callgraph.c and
// rust_callgraph: each leaf called by its path function, and the share of
// samples under each leaf within tolerance points of the work ratio.
// Callers are judged on rooted stacks (the rooted share has its own bar:
// the first samples of a process may carry only the leaf while its
// tables load).
func callGraphShares(t *testing.T, what string, p *Process, pid int, tolerance float64) {
	t.Helper()
	callers := map[string]string{"leaf_heavy": "path_heavy", "leaf_medium": "path_medium", "leaf_light": "run_loop"}
	counts := map[string]int{}
	wrong := 0
	for _, s := range p.Samples {
		for leaf, caller := range callers {
			i := -1
			for k, f := range s.Frames {
				if nameHas(f.Function, leaf) {
					i = k
					break
				}
			}
			if i < 0 {
				continue
			}
			counts[leaf]++
			if !rooted(s, pid) {
				continue
			}
			if i+1 >= len(s.Frames) || !nameHas(s.Frames[i+1].Function, caller) {
				if wrong++; wrong <= 3 {
					t.Errorf("%s: %s not called by %s: %s", what, leaf, caller, s)
				}
			}
		}
	}
	n := float64(len(p.Samples))
	for leaf, want := range map[string]float64{"leaf_heavy": 50, "leaf_medium": 33.3, "leaf_light": 16.7} {
		got := 100 * float64(counts[leaf]) / n
		tol := shareTolerance(tolerance, want, n)
		t.Logf("%s: %s %.1f%% (want %.1f%% +- %.1f)", what, leaf, got, want, tol)
		if math.Abs(got-want) > tol {
			t.Errorf("%s: %s %.1f%% of samples, want %.1f%% +- %.1f", what, leaf, got, want, tol)
		}
	}
}

// C linked by lld and mold, and a default Cargo release build (rust-lld):
// the text segment's first page is shared with the read-only segment, so
// the mapping bias must come from the executable segment. >= 98% of
// stacks rooted, proportions within 3 points.
func TestLinkerLayoutsCallGraph(t *testing.T) {
	requireRoot(t)
	names := []string{"callgraph_lld", "callgraph_mold", "rust_callgraph"}
	cmds := make([]*exec.Cmd, len(names))
	// The workloads start once the profiler has read the host and built
	// the shared libraries' tables, so what is judged is their own
	// binaries' layout, not the profiler's start-up on a busy host.
	rec := recordWith(t, func() {
		time.Sleep(2 * time.Second)
		for i, n := range names {
			cmds[i] = nativeWorkload(t, n, "8")
		}
	}, 10, 997)
	d := decodeFile(t, rec.Path)
	for i, c := range cmds {
		pid := c.Process.Pid
		p := processOf(d, pid, filepath.Base(names[i]))
		if p == nil {
			t.Errorf("%s: no samples (pid %d)\n%s", names[i], pid, rec.Stderr)
			continue
		}
		t.Logf("%s: %d samples", names[i], len(p.Samples))
		if len(p.Samples) < 400 {
			t.Errorf("%s: only %d samples", names[i], len(p.Samples))
			continue
		}
		// The first second is start-up (every process on the host is
		// new to the profiler, samples keep their leaf while tables
		// load: TestShortLivedProcesses judges that); judge the rest.
		steady := steadySamples(p, time.Second)
		if share := rootedShare(t, steady, pid); share < 0.98 {
			t.Errorf("%s: only %.2f%% of samples rooted at _start, want >= 98%%", names[i], 100*share)
		}
		callGraphShares(t, names[i], steady, pid, 3)
	}
}

// nodeBinary is Node 20 or newer, or the test fails saying so.
func nodeBinary(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found: Node 20 or newer is needed for the V8 stack test")
	}
	out, err := exec.Command(path, "--version").Output()
	var major int
	if err != nil || len(out) < 2 || out[0] != 'v' {
		t.Fatalf("node --version: %q %v", out, err)
	}
	for _, c := range out[1:] {
		if c < '0' || c > '9' {
			break
		}
		major = 10*major + int(c-'0')
	}
	if major < 20 {
		t.Fatalf("node %s: need Node 20 or newer", strings.TrimSpace(string(out)))
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return resolved
}

// Node 20 without flags: V8's builtins (in the node binary's .text) have
// no CFI and JIT code none at all; the frame-pointer fallback carries the
// walk through them into node's C++ and down to main. >= 95% of the main
// thread's samples reach main of the node binary; every frame found by
// the frame pointer lies in a mapping and is marked.
func TestNodeStacksReachMain(t *testing.T) {
	requireRoot(t)
	node := nodeBinary(t)
	script, err := filepath.Abs("../workloads/node/busy.js")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script, "14")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	pid := cmd.Process.Pid
	// Past node's start-up, into the steady JavaScript loop.
	time.Sleep(time.Second)
	d := decodeFile(t, record(t, 6, 299, "--pid", itoa(pid)).Path)
	p := processOf(d, pid, filepath.Base(node))
	if p == nil {
		t.Fatalf("no samples for node")
	}
	main, total, fpFrames, builtins := 0, 0, 0, 0
	var bad []string
	for _, s := range p.Samples {
		if s.ThreadID != int64(pid) {
			continue // V8 platform and libuv threads start elsewhere
		}
		total++
		reached := false
		for _, f := range s.Frames {
			if f.Type != "native" {
				continue
			}
			// node's main is one `jmp node::Start(int, char**)`: that
			// tail call stands in for main on every stack (perf shows
			// the same).
			if f.Mapping == node && (f.Function == "main" || f.Function == "_ZN4node5StartEiPPc" ||
				f.Function == "node::Start(int, char**)") {
				reached = true
			}
			if f.Unwind == "frame_pointer" {
				fpFrames++
				if f.Mapping == "" {
					t.Errorf("frame-pointer frame outside any mapping: %s", s)
				}
			}
			if strings.HasPrefix(f.Function, "Builtins_") {
				builtins++
			}
		}
		if reached && rooted(s, pid) {
			main++
		} else if len(bad) < 5 {
			bad = append(bad, s.String())
		}
	}
	if total < 300 {
		t.Fatalf("only %d samples of node's main thread", total)
	}
	share := float64(main) / float64(total)
	t.Logf("%d of %d main-thread samples reach main (%.2f%%); %d frames by frame pointer, %d in builtins",
		main, total, 100*share, fpFrames, builtins)
	for _, b := range bad {
		t.Logf("does not reach main: %s", b)
	}
	if share < 0.95 {
		t.Errorf("only %.2f%% of node's samples reach main, want >= 95%%", 100*share)
	}
	if fpFrames == 0 || builtins == 0 {
		t.Errorf("no frames marked as found by the frame pointer (%d) or in V8 builtins (%d)", fpFrames, builtins)
	}
}

// C++ (templates, lambdas, std::sort) and Rust (legacy and v0 mangling):
// every named frame whose raw name is mangled comes back demangled in
// Function.name, with the raw name in Function.system_name.
func TestDemangledNames(t *testing.T) {
	requireRoot(t)
	type want struct {
		name string // a demangled name that must appear
	}
	cases := map[string]want{
		"cxx_templates":     {"workload::run_round(unsigned long)"},
		"rust_callgraph":    {"rust_callgraph::leaf_medium"},
		"rust_callgraph_v0": {"rust_callgraph::leaf_heavy::<rust_callgraph::Heavy>"},
	}
	var names []string
	var cmds []*exec.Cmd
	for n := range cases {
		names = append(names, n)
		cmds = append(cmds, nativeWorkload(t, n, "10"))
	}
	time.Sleep(300 * time.Millisecond)
	d := decodeFile(t, record(t, 5, 199).Path)
	for i, c := range cmds {
		p := processOf(d, c.Process.Pid, names[i])
		if p == nil {
			t.Errorf("%s: no samples", names[i])
			continue
		}
		mangled, demangled, plain := 0, 0, 0
		seen := false
		for _, s := range p.Samples {
			for _, f := range s.Frames {
				if f.Type != "native" || len(f.Lines) == 0 {
					continue
				}
				ln := f.Lines[0]
				if ln.Name == cases[names[i]].name {
					seen = true
				}
				raw := ln.SystemName
				if !strings.HasPrefix(raw, "_Z") && !strings.HasPrefix(raw, "_R") {
					plain++
					if ln.Name != raw {
						t.Errorf("%s: plain name %q shown as %q", names[i], raw, ln.Name)
					}
					continue
				}
				mangled++
				if ln.Name != raw && !strings.HasPrefix(ln.Name, "_Z") && !strings.HasPrefix(ln.Name, "_R") {
					demangled++
				} else if mangled-demangled <= 3 {
					t.Errorf("%s: %q not demangled", names[i], raw)
				}
			}
		}
		t.Logf("%s: %d samples, %d mangled frames, %d demangled, %d plain", names[i], len(p.Samples), mangled, demangled, plain)
		if mangled < len(p.Samples) || demangled != mangled {
			t.Errorf("%s: %d of %d mangled frames demangled (want all, and at least one per sample)", names[i], demangled, mangled)
		}
		if !seen {
			t.Errorf("%s: no frame named %q", names[i], cases[names[i]].name)
		}
	}
}

// goSymbols: the function symbols of an unstripped Go binary, sorted.
type goSym struct {
	addr, end uint64
	name      string
}

func goSymbols(t *testing.T, path string) []goSym {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var out []goSym
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 && s.Size != 0 {
			// Assembly functions carry their ABI in .symtab only
			// (runtime.goexit.abi0); Go's own tables omit it.
			out = append(out, goSym{s.Value, s.Value + s.Size, strings.TrimSuffix(s.Name, ".abi0")})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out
}

func goSymAt(syms []goSym, addr uint64) string {
	i := sort.Search(len(syms), func(i int) bool { return syms[i].addr > addr }) - 1
	if i >= 0 && addr < syms[i].end {
		return syms[i].name
	}
	return ""
}

// A Go binary built with -ldflags="-s -w" (no .symtab, no DWARF): names
// from .gopclntab, stacks from its SP-delta tables. Judged against the
// same build unstripped: >= 98% of frames named right, proportions within
// 3 points, Go frames typed "go", the Go build id on the mapping.
func TestStrippedGo(t *testing.T) {
	requireRoot(t)
	bin := filepath.Join(buildDir(t), "workloads", "native", "go_callgraph")
	truth := goSymbols(t, bin+"_syms")
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	if ef.Section(".symtab") != nil {
		t.Fatalf("%s has a .symtab: not stripped", bin)
	}
	var goBuildID string
	if sec := ef.Section(".note.go.buildid"); sec != nil {
		if b, err := sec.Data(); err == nil && len(b) > 16 {
			// namesz, descsz, type, "Go\0\0", desc
			n := int(b[4]) | int(b[5])<<8
			goBuildID = string(b[16 : 16+n])
		}
	}
	ef.Close()
	if goBuildID == "" {
		t.Fatalf("%s: no Go build id note", bin)
	}
	cmd := nativeWorkload(t, "go_callgraph", "12")
	pid := cmd.Process.Pid
	time.Sleep(300 * time.Millisecond)
	d := decodeFile(t, record(t, 8, 499, "--pid", itoa(pid)).Path)
	p := processOf(d, pid, "go_callgraph")
	if p == nil {
		t.Fatalf("no samples for the Go workload")
	}
	p = steadySamples(p, time.Second)
	frames, right, typed, withID, withLine := 0, 0, 0, 0, 0
	src, _ := filepath.Abs("../workloads/go_callgraph/main.go")
	mixFirst, mixLast := funcBody(t, src, "mix")
	mixIn := inlineTruth{callee: "main.mix", file: src, first: mixFirst, last: mixLast,
		callLine: map[string]int64{"main.leafHeavy": markLine(t, src, "heavy"),
			"main.leafMedium": markLine(t, src, "medium"), "main.leafLight": markLine(t, src, "light")}}
	var wrong []string
	for _, s := range p.Samples {
		user, afterSignal := 0, false
		for _, f := range s.Frames {
			if f.Type == "kernel" {
				continue
			}
			// The restorer (the kernel enters it, nothing calls it) and
			// the code a signal interrupted (its pc, from the signal
			// frame the restorer's row reads) are at exact pcs.
			restorer := f.Function == "runtime.sigreturn__sigaction"
			addr := f.Address
			if user > 0 && !afterSignal && !restorer {
				addr-- // a return address: the call is before it
			}
			afterSignal = restorer
			user++
			if f.Mapping != bin {
				continue
			}
			frames++
			if f.Type == "go" {
				typed++
			}
			if f.BuildIDGo == goBuildID {
				withID++
			}
			if len(f.Lines) > 0 && f.Lines[0].Filename != "" && f.Lines[0].Line > 0 {
				withLine++
				if strings.HasPrefix(f.Function, "main.") && f.Lines[0].Filename != src {
					t.Errorf("%s in %q, want %s", f.Function, f.Lines[0].Filename, src)
				}
			}
			if want := goSymAt(truth, addr); want != "" && outerName(f) == want {
				right++
			} else if len(wrong) < 5 {
				wrong = append(wrong, fmt.Sprintf("%#x: %q, want %q", f.Address, f.Function, want))
			}
		}
	}
	if frames < 1000 {
		t.Fatalf("only %d frames of the Go binary", frames)
	}
	t.Logf("%d samples, %d frames: %d named right, %d typed go, %d with the Go build id", len(p.Samples), frames, right, typed, withID)
	for _, w := range wrong {
		t.Logf("wrong: %s", w)
	}
	if float64(right) < 0.98*float64(frames) {
		t.Errorf("%.2f%% of frames named right, want >= 98%%", 100*float64(right)/float64(frames))
	}
	t.Logf("%d of %d frames with file and line", withLine, frames)
	if float64(withLine) < 0.95*float64(frames) {
		t.Errorf("%d of %d frames carry file and line from .gopclntab, want >= 95%%", withLine, frames)
	}
	if typed != frames || withID != frames {
		t.Errorf("%d of %d frames typed go, %d with build_id.go %q", typed, frames, withID, goBuildID)
	}
	// Whole stacks. A goroutine's bottom is runtime.goexit; a thread's
	// own stack (g0: the scheduler, sysmon) ends at runtime.mstart or
	// rt0_go, or where it was switched to: morestack, mcall (Go's own
	// traceback ends there too). A sample in the runtime's syscall
	// wrappers or its signal handler is no exception: the handler's
	// stack goes on through the signal frame into the goroutine.
	bottoms := map[string]bool{"runtime.goexit": true, "runtime.mstart": true,
		"runtime.rt0_go": true, "runtime.morestack": true, "runtime.mcall": true}
	rootedGo, whole, ofMain := 0, 0, 0
	for _, s := range p.Samples {
		n := len(s.Frames)
		if n == 0 {
			continue
		}
		bottom := s.Frames[n-1].Function
		if bottoms[bottom] {
			whole++
		} else if len(p.Samples)-whole < 10 {
			t.Logf("not whole: %s", s)
		}
		if indexOf(s.FunctionNames(), "main.main") >= 0 {
			ofMain++
			if bottom == "runtime.goexit" {
				rootedGo++
			}
		}
	}
	t.Logf("%d of %d stacks end at a stack's bottom; %d of %d with main.main end at runtime.goexit",
		whole, len(p.Samples), rootedGo, ofMain)
	if float64(whole) < 0.995*float64(len(p.Samples)) {
		t.Errorf("%d of %d stacks end at a stack's bottom, want >= 99.5%%", whole, len(p.Samples))
	}
	if float64(rootedGo) < 0.995*float64(ofMain) || float64(ofMain) < 0.9*float64(len(p.Samples)) {
		t.Errorf("%d of %d stacks with main.main end at runtime.goexit (of %d samples), want >= 99.5%%",
			rootedGo, ofMain, len(p.Samples))
	}
	// The call graph (Go names: main.leafHeavy <- main.pathHeavy ...),
	// by the functions the frames are in (mix is inlined into the
	// leaves: one Location, two Lines).
	counts := map[string]int{}
	inlined, leafFrames := 0, 0
	var wrongLeaf []string
	for _, s := range p.Samples {
		var names []string
		for _, f := range s.Frames {
			names = append(names, outerName(f))
			if n := len(f.Lines); n > 0 && strings.HasPrefix(f.Lines[n-1].Name, "main.leaf") {
				leafFrames++
				if mixIn.judge(f.Lines) {
					inlined++
				} else if len(wrongLeaf) < 10 {
					wrongLeaf = append(wrongLeaf, fmt.Sprintf("%+v", f.Lines))
				}
			}
		}
		for leaf, caller := range map[string]string{"main.leafHeavy": "main.pathHeavy", "main.leafMedium": "main.pathMedium", "main.leafLight": "main.runLoop"} {
			if i := indexOf(names, leaf); i >= 0 {
				counts[leaf]++
				if i+1 >= len(names) || names[i+1] != caller {
					t.Errorf("%s not called by %s: %s", leaf, caller, s)
				}
			}
		}
	}
	t.Logf("%d of %d leaf frames show main.mix inlined (a line of its body, then the call line)", inlined, leafFrames)
	if float64(inlined) < 0.95*float64(leafFrames) {
		t.Errorf("%d of %d leaf frames show main.mix inlined, want >= 95%%: %v", inlined, leafFrames, wrongLeaf)
	}
	n := float64(len(p.Samples))
	for leaf, want := range map[string]float64{"main.leafHeavy": 50, "main.leafMedium": 33.3, "main.leafLight": 16.7} {
		got := 100 * float64(counts[leaf]) / n
		tol := shareTolerance(3, want, n)
		t.Logf("%s: %.1f%% (want %.1f%% +- %.1f)", leaf, got, want, tol)
		if math.Abs(got-want) > tol {
			t.Errorf("%s: %.1f%% of samples, want %.1f%% +- %.1f", leaf, got, want, tol)
		}
	}
}

// Symbols kept apart from a stripped binary: MiniDebugInfo (Fedora's
// .gnu_debugdata), a .gnu_debuglink file beside the binary, and libc's
// debug file by build id (/usr/lib/debug/.build-id, libc6-dbg), which
// names the thread entry (start_thread, clone3) the stripped libc lacks.
func TestSeparateDebugInfo(t *testing.T) {
	requireRoot(t)
	if _, err := os.Stat("/usr/lib/debug/.build-id"); err != nil {
		t.Fatalf("no /usr/lib/debug/.build-id: libc6-dbg is needed (make deps installs it)")
	}
	bins := []string{"callgraph_minidebug", "debuglink/callgraph_debuglink"}
	var cmds []*exec.Cmd
	for _, b := range bins {
		cmds = append(cmds, nativeWorkload(t, b, "10"))
	}
	threads := startWorkload(t, "threads_nofp", "10")
	time.Sleep(300 * time.Millisecond)
	d := decodeFile(t, record(t, 6, 499).Path)
	for i, c := range cmds {
		bin := filepath.Join(buildDir(t), "workloads", "native", bins[i])
		p := processOf(d, c.Process.Pid, filepath.Base(bins[i]))
		if p == nil {
			t.Errorf("%s: no samples", bins[i])
			continue
		}
		p = steadySamples(p, time.Second)
		frames, named := 0, 0
		for _, s := range p.Samples {
			for _, f := range s.Frames {
				if f.Mapping == bin {
					frames++
					if f.Function != "" {
						named++
					}
				}
			}
		}
		t.Logf("%s: %d samples, %d of %d frames of the binary named", bins[i], len(p.Samples), named, frames)
		if frames < 100 || float64(named) < 0.95*float64(frames) {
			t.Errorf("%s: %d of %d frames named, want >= 95%%", bins[i], named, frames)
		}
		callGraphShares(t, bins[i], p, c.Process.Pid, 5)
	}
	p := processOf(d, threads.Process.Pid, "threads_nofp")
	if p == nil {
		t.Fatalf("threads_nofp: no samples")
	}
	workers, entry := 0, 0
	for _, s := range p.Samples {
		if s.ThreadID == int64(threads.Process.Pid) {
			continue
		}
		workers++
		names := s.FunctionNames()
		if indexOf(names, "start_thread") >= 0 {
			entry++
		} else if workers-entry <= 3 {
			t.Logf("no start_thread: %s", s)
		}
	}
	t.Logf("threads_nofp: %d of %d worker samples show start_thread", entry, workers)
	if workers < 100 || float64(entry) < 0.95*float64(workers) {
		t.Errorf("threads_nofp: %d of %d worker samples name libc's thread entry", entry, workers)
	}
}

// outerName: the function a frame's code is in (its last Line; the
// others are functions inlined there).
func outerName(f Frame) string {
	if len(f.Lines) == 0 {
		return ""
	}
	return f.Lines[len(f.Lines)-1].Name
}

// markLine: the line of "MARK:name" in a workload source.
func markLine(t *testing.T, src, name string) int64 {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`MARK:` + name + `\b`)
	for i, l := range strings.Split(string(raw), "\n") {
		if re.MatchString(l) {
			return int64(i + 1)
		}
	}
	t.Fatalf("no MARK:%s in %s", name, src)
	return 0
}

// A -O2 -g binary: every frame of it carries file and line from DWARF
// (>= 95%), and a loop inlined into two functions comes back as two
// Lines, the inlined function first with a line of its body (the loop's
// control or arithmetic: where the timer lands is the CPU's business),
// then the caller with the line of the call. In leaf_nested, mix is
// inlined into twice, itself inlined: three Lines, each caller at the line
// of its call (not the innermost call's line).
func TestDwarfLinesAndInlines(t *testing.T) {
	requireRoot(t)
	src, err := filepath.Abs("../workloads/inlined.c")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(buildDir(t), "workloads", "native", "inlined")
	mixFirst, mixLast := funcBody(t, src, "mix")
	calls := map[string]int64{"leaf_heavy": markLine(t, src, "call_heavy"), "leaf_light": markLine(t, src, "call_light")}
	mixIn := inlineTruth{callee: "mix", file: src, first: mixFirst, last: mixLast, callLine: calls}
	cmd := nativeWorkload(t, "inlined", "10")
	time.Sleep(300 * time.Millisecond)
	d := decodeFile(t, record(t, 6, 499, "--pid", itoa(cmd.Process.Pid)).Path)
	p := processOf(d, cmd.Process.Pid, "inlined")
	if p == nil {
		t.Fatalf("no samples")
	}
	p = steadySamples(p, time.Second)
	twiceCall, nestedCall := markLine(t, src, "twice_call"), markLine(t, src, "call_nested")
	frames, withLine, leafs, inlinedRight, nested, nestedRight := 0, 0, 0, 0, 0, 0
	var bad []string
	for _, s := range p.Samples {
		for _, f := range s.Frames {
			if f.Mapping != bin || len(f.Lines) == 0 {
				continue
			}
			outer := f.Lines[len(f.Lines)-1]
			// _start comes from the C library's crt1.o, which has no
			// DWARF in any program: judge the code built from the
			// program's own source.
			if outer.Name == "_start" {
				continue
			}
			frames++
			if outer.Filename == src && outer.Line > 0 {
				withLine++
			} else if len(bad) < 5 {
				bad = append(bad, fmt.Sprintf("%s: %+v", f.Function, f.Lines))
			}
			if outer.Name == "leaf_nested" {
				nested++
				l := f.Lines
				if len(l) == 3 && l[0].Name == "mix" && l[0].Filename == src &&
					l[0].Line >= mixFirst && l[0].Line <= mixLast &&
					l[1].Name == "twice" && l[1].Filename == src && l[1].Line == twiceCall &&
					l[2].Line == nestedCall {
					nestedRight++
				} else if len(bad) < 10 {
					bad = append(bad, fmt.Sprintf("nested: %+v", f.Lines))
				}
			}
			if _, ok := calls[outer.Name]; ok {
				leafs++
				if mixIn.judge(f.Lines) {
					inlinedRight++
				} else if len(bad) < 10 {
					bad = append(bad, fmt.Sprintf("leaf %s: %+v", outer.Name, f.Lines))
				}
			}
		}
	}
	t.Logf("%d frames of the binary, %d with file and line; %d leaf frames, %d as mix inlined at the call line; %d leaf_nested frames, %d as mix in twice in leaf_nested at both call lines",
		frames, withLine, leafs, inlinedRight, nested, nestedRight)
	for _, b := range bad {
		t.Logf("%s", b)
	}
	if frames < 300 || float64(withLine) < 0.95*float64(frames) {
		t.Errorf("%d of %d frames carry file and line, want >= 95%%", withLine, frames)
	}
	if leafs < 100 || float64(inlinedRight) < 0.95*float64(leafs) {
		t.Errorf("%d of %d leaf frames show mix inlined (want >= 95%%)", inlinedRight, leafs)
	}
	if nested < 100 || float64(nestedRight) < 0.95*float64(nested) {
		t.Errorf("%d of %d leaf_nested frames show the whole chain (want >= 95%%)", nestedRight, nested)
	}
}
