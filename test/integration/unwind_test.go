// .eh_frame unwinding in the kernel: workloads built without frame
// pointers must come back with whole stacks, rooted at _start (main
// thread) or at the thread entry in libc (other threads).
package integration

import (
	"bufio"
	"debug/elf"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rooted reports whether a sample's user stack ends at the program entry
// (main thread) or at libc's thread entry (other threads).
func rooted(s Sample, pid int) bool {
	var user []Frame
	for _, f := range s.Frames {
		if f.Type == "native" {
			user = append(user, f)
		}
	}
	if len(user) == 0 {
		return false
	}
	last := user[len(user)-1]
	if s.ThreadID == int64(pid) {
		// Stripped binaries (Debian's) have no _start symbol: the
		// outermost frame must then sit at the ELF entry point.
		return last.Function == "_start" || atEntry(last)
	}
	return strings.HasSuffix(last.Mapping, "/libc.so.6")
}

var entryCache = map[string]uint64{}

// atEntry: f is within the first bytes of its file's entry point (_start).
func atEntry(f Frame) bool {
	e, ok := entryCache[f.Mapping]
	if !ok {
		if ef, err := elf.Open(f.Mapping); err == nil {
			e = ef.Entry
			ef.Close()
		}
		entryCache[f.Mapping] = e
	}
	return e != 0 && f.Address >= e && f.Address < e+64
}

func rootedShare(t *testing.T, p *Process, pid int) float64 {
	t.Helper()
	n := 0
	var bad []string
	for _, s := range p.Samples {
		if rooted(s, pid) {
			n++
		} else if len(bad) < 5 {
			bad = append(bad, s.String())
		}
	}
	share := float64(n) / float64(len(p.Samples))
	t.Logf("%d of %d samples rooted (%.2f%%)", n, len(p.Samples), 100*share)
	for _, b := range bad {
		t.Logf("not rooted: %s", b)
	}
	return share
}

func TestNoFramePointerCallGraph(t *testing.T) {
	requireRoot(t)
	wl := startWorkload(t, "callgraph_nofp", "90")
	time.Sleep(300 * time.Millisecond)
	// 299 Hz: ~1500 samples keep the proportions' noise near 1.3 points.
	d := decodeFile(t, recordPIDForCPU(t, wl.Process.Pid, 5, 299).Path)
	p := d.ByPID(wl.Process.Pid)
	if p == nil || len(p.Samples) < 500 {
		t.Fatalf("too few samples: %v", p)
	}
	if share := rootedShare(t, p, wl.Process.Pid); share < 0.99 {
		t.Errorf("only %.2f%% of samples rooted at _start, want >= 99%%", 100*share)
	}
	counts := map[string]int{}
	for _, s := range p.Samples {
		names := s.FunctionNames()
		for _, leaf := range []string{"leaf_heavy", "leaf_medium", "leaf_light"} {
			if i := indexOf(names, leaf); i >= 0 {
				counts[leaf]++
				want := map[string]string{"leaf_heavy": "path_heavy", "leaf_medium": "path_medium", "leaf_light": "run_loop"}[leaf]
				if i+1 >= len(names) || names[i+1] != want {
					t.Errorf("%s not called by %s: %s", leaf, want, s)
				}
			}
		}
	}
	n := float64(len(p.Samples))
	for fn, want := range map[string]float64{"leaf_heavy": 50, "leaf_medium": 33.3, "leaf_light": 16.7} {
		got := 100 * float64(counts[fn]) / n
		t.Logf("%s: %.1f%% (want %.1f%%)", fn, got, want)
		if math.Abs(got-want) > 5 {
			t.Errorf("%s: %.1f%%, want %.1f%% +- 5", fn, got, want)
		}
	}
}

// 300 frames of recursion through a shared library without frame
// pointers: every frame comes back.
func TestDeepRecursionThroughSharedLibrary(t *testing.T) {
	requireRoot(t)
	const depth = 300
	wl := startWorkload(t, "deep_recursion", "90", itoa(depth))
	time.Sleep(300 * time.Millisecond)
	rec := recordPIDForCPU(t, wl.Process.Pid, 4, 99)
	d := decodeFile(t, rec.Path)
	p := d.ByPID(wl.Process.Pid)
	if p == nil || len(p.Samples) < 150 {
		t.Fatalf("too few samples")
	}
	whole, inLeaf := 0, 0
	for _, s := range p.Samples {
		names := s.FunctionNames()
		if indexOf(names, "recurse_leaf") < 0 {
			continue
		}
		inLeaf++
		n := 0
		for _, f := range names {
			if f == "recurse_down" {
				n++
			}
		}
		if n == depth+1 && indexOf(names, "run_deep") > 0 && indexOf(names, "main") > 0 && rooted(s, wl.Process.Pid) {
			whole++
		} else if inLeaf-whole <= 3 {
			var rest []string
			for _, f := range s.Frames {
				if f.Function != "recurse_down" {
					rest = append(rest, fmt.Sprintf("%s@%s", f.Function, filepath.Base(f.Mapping)))
				}
			}
			t.Logf("partial: %d recurse_down frames, %d frames, rooted %v; the others: %v", n, len(names), rooted(s, wl.Process.Pid), rest)
		}
	}
	// A walk the kernel stopped at a user stack read that failed (seen
	// under load: 2 of 56 samples in one run, one frame short of _start)
	// is counted by the recorder as such: those may be partial, up to 2%.
	readStops := 0
	if m := regexp.MustCompile(`stopped \(rule \d+, read (\d+)`).FindStringSubmatch(rec.Stderr); m != nil {
		readStops, _ = strconv.Atoi(m[1])
	}
	t.Logf("%d of %d leaf samples whole (%d frames deep); %d walks stopped at a failed read", whole, inLeaf, depth+5, readStops)
	if float64(readStops) > 0.02*float64(inLeaf) {
		t.Errorf("%d walks stopped at a failed read of %d samples, want <= 2%%", readStops, inLeaf)
	}
	if inLeaf < 100 || float64(whole+readStops) < 0.99*float64(inLeaf) {
		t.Errorf("%d of %d samples in recurse_leaf have all %d recursion frames; the recorder:\n%s", whole, inLeaf, depth+1, rec.Stderr)
	}
}

// Hot loops inside Debian's libc (no frame pointers) and callbacks from
// libc's qsort back into the program.
func TestLibcHotLoops(t *testing.T) {
	requireRoot(t)
	wl := startWorkload(t, "libc_hot", "90")
	time.Sleep(300 * time.Millisecond)
	d := decodeFile(t, recordPIDForCPU(t, wl.Process.Pid, 4, 99).Path)
	p := d.ByPID(wl.Process.Pid)
	if p == nil || len(p.Samples) < 150 {
		t.Fatalf("too few samples")
	}
	if share := rootedShare(t, p, wl.Process.Pid); share < 0.99 {
		t.Errorf("only %.2f%% rooted", 100*share)
	}
	inLibc, cmp := 0, 0
	for _, s := range p.Samples {
		names := s.FunctionNames()
		if len(s.Frames) > 0 && strings.HasSuffix(s.Frames[0].Mapping, "libc.so.6") {
			inLibc++
		}
		if i := indexOf(names, "compare_ints"); i >= 0 {
			cmp++
			// Debian's qsort tail-calls qsort_r.
			q := indexOf(names, "qsort_r")
			if q < 0 {
				q = indexOf(names, "qsort")
			}
			if q < i || indexOf(names, "sort_round") != q+1 {
				t.Errorf("compare_ints not under qsort <- sort_round: %s", s)
			}
		}
	}
	t.Logf("%d samples with the leaf in libc, %d in compare_ints", inLibc, cmp)
	if inLibc < len(p.Samples)/5 || cmp < len(p.Samples)/10 {
		t.Errorf("workload did not spend time where expected")
	}
}

// Samples inside a signal handler continue through the signal frame into
// the interrupted code.
func TestSignalHandlerStacks(t *testing.T) {
	requireRoot(t)
	wl := startWorkload(t, "signals", "90")
	time.Sleep(300 * time.Millisecond)
	d := decodeFile(t, recordPIDForCPU(t, wl.Process.Pid, 4, 99).Path)
	p := d.ByPID(wl.Process.Pid)
	if p == nil {
		t.Fatalf("no samples")
	}
	inHandler, through := 0, 0
	restorer := map[string]int{}
	for _, s := range p.Samples {
		names := s.FunctionNames()
		h := indexOf(names, "on_sigprof")
		if h < 0 {
			continue
		}
		inHandler++
		// The frame the handler returns to is the restorer the kernel
		// entered it from, named as itself (its pc is exact, not a
		// return address: pc - 1 is in the function before it).
		if h+1 < len(names) && names[h+1] != "__restore_rt" {
			restorer[names[h+1]]++
		}
		if indexOf(names, "main") > h && rooted(s, wl.Process.Pid) {
			through++
		} else if inHandler-through <= 3 {
			t.Logf("handler stack cut: %s", s)
		}
	}
	t.Logf("%d handler samples, %d reach main through the signal frame", inHandler, through)
	if len(restorer) > 0 {
		t.Errorf("the handler's caller is not __restore_rt: %v", restorer)
	}
	if inHandler < 10 || float64(through) < 0.99*float64(inHandler) {
		t.Errorf("%d of %d handler samples reach main", through, inHandler)
	}
	if share := rootedShare(t, p, wl.Process.Pid); share < 0.99 {
		t.Errorf("only %.2f%% rooted", 100*share)
	}
}

func TestThreadsWithoutFramePointers(t *testing.T) {
	requireRoot(t)
	wl := startWorkload(t, "threads_nofp", "90")
	time.Sleep(300 * time.Millisecond)
	d := decodeFile(t, recordPIDForCPU(t, wl.Process.Pid, 3, 99).Path)
	p := d.ByPID(wl.Process.Pid)
	if p == nil || len(p.Samples) < 100 {
		t.Fatalf("too few samples")
	}
	if share := rootedShare(t, p, wl.Process.Pid); share < 0.99 {
		t.Errorf("only %.2f%% of thread samples end at the thread entry", 100*share)
	}
	roots := map[uint64]int{}
	for _, s := range p.Samples {
		if !rooted(s, wl.Process.Pid) {
			continue // counted above (leaf-only while tables load)
		}
		names := s.FunctionNames()
		if indexOf(names, "thread_main") < 0 {
			t.Errorf("thread sample without thread_main: %s", s)
			continue
		}
		roots[s.Frames[len(s.Frames)-1].Address]++
	}
	if len(roots) != 1 {
		t.Errorf("thread stacks end at %d different places: %v", len(roots), roots)
	}
}

// Processes that live 100 ms are not lost: their samples come back with
// whole stacks even though they are gone before the next scan.
func TestShortLivedProcesses(t *testing.T) {
	requireRoot(t)
	const children = 20
	bin := buildDir(t)
	rec := make(chan recording, 1)
	var out []byte
	var err error
	go func() { rec <- record(t, 5, 99) }()
	time.Sleep(1500 * time.Millisecond) // recorder running
	cmd := exec.Command(filepath.Join(bin, "workloads", "spawner"), itoa(children), filepath.Join(bin, "workloads", "callgraph_nofp"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if out, err = cmd.Output(); err != nil {
		t.Fatalf("spawner: %v", err)
	}
	var cpu float64
	if _, err := fmt.Sscanf(strings.TrimSpace(stderr.String()), "children_cpu_seconds %f", &cpu); err != nil {
		t.Fatalf("spawner stderr %q: %v", stderr.String(), err)
	}
	d := decodeFile(t, (<-rec).Path)
	pids := strings.Fields(string(out))
	if len(pids) != children {
		t.Fatalf("spawner printed %d pids", len(pids))
	}
	seen, samples, whole, preExec, inLd := 0, 0, 0, 0, 0
	for _, ps := range pids {
		pid, _ := strconv.Atoi(ps)
		// Samples taken between fork and exec belong to the parent's
		// image and come back as a resource named after it.
		if pre := d.ByPIDName(pid, "spawner"); pre != nil {
			preExec += len(pre.Samples)
		}
		p := d.ByPID(pid)
		if p == nil {
			continue
		}
		if p = d.ByPIDName(pid, "callgraph_nofp"); p == nil {
			t.Errorf("child %d has samples but none as callgraph_nofp", pid)
			continue
		}
		seen++
		for _, s := range p.Samples {
			samples++
			// Before main: still in the dynamic loader (under load a
			// child spends longer relocating), whole when rooted at
			// its entry point.
			loader := inLoader(s)
			if loader {
				inLd++
			}
			if rooted(s, pid) && (loader || indexOf(s.FunctionNames(), "main") >= 0) {
				whole++
			} else if samples-whole <= 5 {
				t.Logf("not whole: %s", s)
			}
		}
	}
	if preExec > children {
		t.Errorf("%d pre-exec samples for %d children: exec events are being missed", preExec, children)
	}
	// What the children really ran: on a loaded host less than 100 ms.
	expected := int(cpu * 99)
	t.Logf("%d of %d children seen, %d samples (children CPU %.2f s x 99 Hz = %d), %d whole (%d in the dynamic loader), %d pre-exec", seen, children, samples, cpu, expected, whole, inLd, preExec)
	if seen < children*9/10 {
		t.Errorf("only %d of %d short-lived children have samples", seen, children)
	}
	if samples < expected*7/10 {
		t.Errorf("%d samples from children, want >= 70%% of %d", samples, expected)
	}
	// Known gap (docs/unwinding.md): a process that lives less than the
	// drain thread's delay in reading its exec event loses its mappings
	// (pid and name stay right). With table builds off the drain thread
	// the delay here is under ~100 ms and 98.9-99.5% of child samples
	// come back whole (it was 88.6-95% while libraries' tables were built
	// inline); 95% allows one child of twenty to be missed.
	if float64(whole) < 0.95*float64(samples) {
		t.Errorf("only %d of %d child samples whole", whole, samples)
	}
}

// inLoader: every user frame of s is in the dynamic loader (ld.so), as
// before main.
func inLoader(s Sample) bool {
	n := 0
	for _, f := range s.Frames {
		if f.Type != "native" {
			continue
		}
		if !strings.HasPrefix(filepath.Base(f.Mapping), "ld-linux") {
			return false
		}
		n++
	}
	return n > 0
}

// Side by side with `perf record --call-graph dwarf`: perf copies 8 KiB of
// stack per sample, so the 300-deep recursion comes back cut; ours whole.
func TestCompareWithPerfDwarf(t *testing.T) {
	requireRoot(t)
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Fatalf("perf (linux-perf) is needed for the comparison")
	}
	const depth = 300
	wl := startWorkload(t, "deep_recursion", "20", itoa(depth))
	time.Sleep(300 * time.Millisecond)
	data := filepath.Join(t.TempDir(), "perf.data")
	if out, err := exec.Command(perf, "record", "-q", "-F", "99", "--call-graph", "dwarf", "-p", itoa(wl.Process.Pid), "-o", data, "--", "sleep", "3").CombinedOutput(); err != nil {
		t.Fatalf("perf record: %v\n%s", err, out)
	}
	script := exec.Command(perf, "script", "-i", data)
	stdout, _ := script.StdoutPipe()
	if err := script.Start(); err != nil {
		t.Fatal(err)
	}
	perfSamples, perfWhole := 0, 0
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n, hasMain := 0, false
	flush := func() {
		if n > 0 {
			perfSamples++
			if hasMain {
				perfWhole++
			}
		}
		n, hasMain = 0, false
	}
	// Default format: a header line per sample, then one indented line
	// per frame ("addr sym+off (dso)"), then a blank line.
	for sc.Scan() {
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		if line == "" {
			flush()
			continue
		}
		if raw[0] != ' ' && raw[0] != '\t' {
			continue // sample header
		}
		n++
		if f := strings.Fields(line); len(f) >= 2 && strings.HasPrefix(f[1], "main+") {
			hasMain = true
		}
	}
	flush()
	_ = script.Wait()

	d := decodeFile(t, record(t, 3, 99, "--pid", itoa(wl.Process.Pid)).Path)
	p := d.ByPID(wl.Process.Pid)
	if p == nil {
		t.Fatal("no samples")
	}
	ours := 0
	for _, s := range p.Samples {
		if indexOf(s.FunctionNames(), "main") >= 0 {
			ours++
		}
	}
	oursShare := float64(ours) / float64(len(p.Samples))
	perfShare := float64(perfWhole) / math.Max(1, float64(perfSamples))
	t.Logf("reaching main: libotelprofiler %d/%d (%.1f%%), perf --call-graph dwarf %d/%d (%.1f%%)",
		ours, len(p.Samples), 100*oursShare, perfWhole, perfSamples, 100*perfShare)
	fmt.Fprintf(os.Stderr, "unwind comparison (depth %d): ours %.1f%%, perf dwarf %.1f%%\n", depth, 100*oursShare, 100*perfShare)
	if perfSamples < 50 {
		t.Fatalf("perf recorded only %d samples", perfSamples)
	}
	if oursShare < 0.99 {
		t.Errorf("ours: only %.1f%% reach main", 100*oursShare)
	}
	if oursShare <= perfShare {
		t.Errorf("expected perf's 8 KiB stack copies to cut this recursion: perf %.1f%% vs ours %.1f%%", 100*perfShare, 100*oursShare)
	}
}

// System binaries from Debian packages (PIE, no frame pointers, no debug
// symbols): perl's interpreter loop in libperl and gzip's compressor.
func TestDebianSystemBinaries(t *testing.T) {
	requireRoot(t)
	data := filepath.Join(t.TempDir(), "data")
	if out, err := exec.Command("sh", "-c", "head -c 20000000 /dev/urandom > "+data).CombinedOutput(); err != nil {
		t.Fatalf("make data: %v %s", err, out)
	}
	cases := []struct {
		name string
		cmd  []string
	}{
		{"perl", []string{"perl", "-e", "my $e = time + 8; my $x = 0; while (time < $e) { $x = sqrt($x + 1) for 1..1000 }"}},
		{"gzip", []string{"sh", "-c", "end=$(($(date +%s)+8)); while [ $(date +%s) -lt $end ]; do gzip -9 -c " + data + " > /dev/null; done"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bin, err := exec.LookPath(c.name)
			if err != nil {
				t.Fatalf("%s not installed", c.name)
			}
			cmd := exec.Command(c.cmd[0], c.cmd[1:]...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() }()
			time.Sleep(500 * time.Millisecond)
			d := decodeFile(t, record(t, 4, 99).Path)
			total, good := 0, 0
			var bad []string
			for _, p := range d.Processes {
				if p.Attrs["process.executable.path"] != bin && p.Attrs["process.executable.name"] != c.name {
					continue
				}
				pid := int(p.Attrs["process.pid"].(int64))
				for _, s := range p.Samples {
					// Taken while the process exits: its address
					// space is being torn down, no user stack is left
					// to read.
					if indexOf(s.FunctionNames(), "do_exit") >= 0 {
						continue
					}
					total++
					if rooted(s, pid) {
						good++
					} else if len(bad) < 3 {
						bad = append(bad, s.String())
					}
				}
			}
			t.Logf("%s: %d of %d samples rooted at _start", c.name, good, total)
			for _, b := range bad {
				t.Logf("not rooted: %s", b)
			}
			// Whole-host recording: the first sample of each new
			// process is unwound from a stack copy in userspace.
			if total < 100 || float64(good) < 0.98*float64(total) {
				t.Errorf("%s: %d of %d samples rooted", c.name, good, total)
			}
		})
	}
}
