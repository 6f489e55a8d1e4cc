// End-to-end: real BPF sampling of workloads with known call graphs.
package integration

import (
	"bytes"
	"debug/elf"
	"encoding/hex"
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

func gnuBuildID(t *testing.T, path string) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		data := make([]byte, p.Filesz)
		if _, err := p.ReadAt(data, 0); err != nil {
			t.Fatal(err)
		}
		for len(data) >= 12 {
			nsz := int(f.ByteOrder.Uint32(data[0:]))
			dsz := int(f.ByteOrder.Uint32(data[4:]))
			typ := f.ByteOrder.Uint32(data[8:])
			off := 12 + (nsz+3)&^3
			if off+dsz > len(data) {
				break
			}
			if typ == 3 && nsz == 4 && string(data[12:15]) == "GNU" {
				return hex.EncodeToString(data[off : off+dsz])
			}
			data = data[off+(dsz+3)&^3:]
		}
	}
	return ""
}

// The walking-skeleton acceptance test: a whole-host recording returns,
// for a frame-pointer workload, >= 80% of seconds x Hz samples, the known
// proportions, leaf-first stacks rooted at main, and process attributes.
func TestRecordKnownCallGraph(t *testing.T) {
	requireRoot(t)
	// 199 Hz: ~1200 samples keep the proportions' noise near 1.5 points.
	const seconds, hz = 6, 199
	wl := startWorkload(t, "callgraph_fp", "12")
	time.Sleep(300 * time.Millisecond)
	cpu, rec := recordCPU(t, wl.Process.Pid, seconds, hz)
	d := decodeFile(t, rec.Path)
	p := d.ByPID(wl.Process.Pid)
	if p == nil {
		t.Fatalf("no ResourceProfiles for workload pid %d (%d processes)\n%s", wl.Process.Pid, len(d.Processes), rec.Stderr)
	}

	// On a quiet host the workload owns a CPU: seconds x Hz samples.
	// Where other load steals CPU, what the workload really ran (its
	// utime+stime while sampling was on) is the truth to compare with.
	expected := seconds * hz
	byCPU := cpu * hz
	t.Logf("%d samples; seconds x Hz = %d; workload CPU %.2f s x Hz = %.0f", len(p.Samples), expected, cpu, byCPU)
	if float64(len(p.Samples)) < 0.80*math.Min(float64(expected), byCPU) {
		t.Errorf("got %d samples for the workload, want >= 80%% of min(%d, %.0f)\n%s", len(p.Samples), expected, byCPU, rec.Stderr)
	}
	if len(p.Samples) > expected*110/100 {
		t.Errorf("got %d samples for a single-threaded workload, more than %d x 1.1", len(p.Samples), expected)
	}

	// Resource attributes.
	exe := filepath.Join(buildDir(t), "workloads", "callgraph_fp")
	if got := p.Attrs["process.executable.name"]; got != "callgraph_fp" {
		t.Errorf("process.executable.name = %v", got)
	}
	if got := p.Attrs["process.executable.path"]; got != exe {
		t.Errorf("process.executable.path = %v, want %s", got, exe)
	}
	if h, _ := p.Attrs["host.name"].(string); h == "" {
		t.Errorf("host.name missing")
	}

	// Profile-level fields.
	prof := p.Profile
	strs := d.Data.Dictionary().StringTable()
	if strs.At(int(prof.SampleType().TypeStrindex())) != "samples" || strs.At(int(prof.SampleType().UnitStrindex())) != "count" {
		t.Errorf("sample_type is not samples/count")
	}
	if strs.At(int(prof.PeriodType().TypeStrindex())) != "cpu" || strs.At(int(prof.PeriodType().UnitStrindex())) != "nanoseconds" {
		t.Errorf("period_type is not cpu/nanoseconds")
	}
	if prof.Period() != int64(1000000000/hz) {
		t.Errorf("period = %d, want %d", prof.Period(), 1000000000/hz)
	}

	// Proportions and stack shape.
	counts := map[string]int{}
	rooted := 0
	buildID := gnuBuildID(t, exe)
	for _, s := range p.Samples {
		if s.ThreadID != int64(wl.Process.Pid) {
			t.Fatalf("thread.id %d in a single-threaded process %d", s.ThreadID, wl.Process.Pid)
		}
		if s.ThreadName != "callgraph_fp" {
			t.Fatalf("thread.name = %q", s.ThreadName)
		}
		if s.CPU < 0 || s.CPU > 4096 {
			t.Fatalf("cpu.logical_number = %d", s.CPU)
		}
		names := s.FunctionNames()
		for _, f := range s.Frames {
			if f.Type != "native" && f.Type != "kernel" {
				t.Fatalf("frame without profile.frame.type: %+v", f)
			}
			if f.Type == "native" && f.Function == "leaf_heavy" {
				if f.Mapping != exe {
					t.Errorf("mapping filename %q, want %q", f.Mapping, exe)
				}
				if f.BuildID != buildID {
					t.Errorf("build id %q, want %q", f.BuildID, buildID)
				}
			}
		}
		leaf := ""
		for _, f := range s.Frames {
			if f.Type == "native" {
				leaf = f.Function
				break
			}
		}
		counts[leaf]++
		m, r := indexOf(names, "main"), indexOf(names, "run_loop")
		if m > 0 && r >= 0 && r < m {
			rooted++
		}
		if i := indexOf(names, "leaf_heavy"); i >= 0 {
			if j := indexOf(names, "path_heavy"); j != i+1 || r != j+1 {
				t.Errorf("leaf_heavy stack not leaf-first: %s", s)
			}
		}
		if i := indexOf(names, "leaf_light"); i >= 0 && r != i+1 {
			t.Errorf("leaf_light must be called by run_loop: %s", s)
		}
	}
	n := float64(len(p.Samples))
	if float64(rooted) < 0.95*n {
		t.Errorf("only %d of %d samples have run_loop <- main", rooted, len(p.Samples))
	}
	// Work ratio 3:2:1; the loop's own overhead (clock_gettime) is small.
	for fn, want := range map[string]float64{"leaf_heavy": 50, "leaf_medium": 33.3, "leaf_light": 16.7} {
		got := 100 * float64(counts[fn]) / n
		if math.Abs(got-want) > 5 {
			t.Errorf("%s: %.1f%% of samples, want %.1f%% +- 5", fn, got, want)
		}
		t.Logf("%s: %.1f%% (want %.1f%%)", fn, got, want)
	}
}

var syscallRe = regexp.MustCompile(`^(?:__x64_sys|__arm64_sys|ksys)_(\w+)`)

// Kernel frames come first (leaf), named from kallsyms, typed "kernel".
func TestKernelFramesForSyscalls(t *testing.T) {
	requireRoot(t)
	wl := startWorkload(t, "syscalls_fp", "10")
	time.Sleep(300 * time.Millisecond)
	u0, s0 := userSystemTicks(t, wl.Process.Pid)
	rec := record(t, 4, 99)
	u1, s1 := userSystemTicks(t, wl.Process.Pid)
	d := decodeFile(t, rec.Path)
	p := d.ByPID(wl.Process.Pid)
	if p == nil {
		t.Fatalf("no profile for syscalls workload")
	}
	withKernel, withSyscall := 0, 0
	sysNames := map[string]int{}
	for _, s := range p.Samples {
		inKernel := true
		hasK := false
		for _, f := range s.Frames {
			if f.Type == "kernel" {
				if !inKernel {
					t.Fatalf("kernel frame after a native frame: %s", s)
				}
				if f.Function == "" {
					t.Errorf("unnamed kernel frame at %#x", f.Address)
				}
				hasK = true
				if m := syscallRe.FindStringSubmatch(f.Function); m != nil {
					sysNames[m[1]]++
				}
			} else {
				inKernel = false
			}
		}
		if hasK {
			withKernel++
			for _, f := range s.Frames {
				if syscallRe.MatchString(f.Function) {
					withSyscall++
					break
				}
			}
		}
	}
	// The truth: the kernel's own user/system split of the workload
	// over the recording (how much of its time is in syscalls depends
	// on the machine: 42% on a nested VM, more on others).
	sysShare := float64(s1-s0) / float64(u1-u0+s1-s0)
	share := float64(withKernel) / float64(len(p.Samples))
	t.Logf("%d samples, %d with kernel frames (%.0f%%; system time %.0f%%), %d with a syscall frame: %v",
		len(p.Samples), withKernel, 100*share, 100*sysShare, withSyscall, sysNames)
	if math.IsNaN(sysShare) || sysShare < 0.2 || math.Abs(share-sysShare) > 0.15 {
		t.Errorf("%d of %d samples of a syscall-bound workload have kernel frames (%.0f%%), want its system-time share %.0f%% +- 15 (and at least 20%%)",
			withKernel, len(p.Samples), 100*share, 100*sysShare)
	}
	if sysNames["write"] == 0 {
		t.Errorf("no __x64_sys_write / ksys_write frame found: %v", sysNames)
	}
	// The user part of syscall stacks is still rooted in main.
	rooted := 0
	for _, s := range p.Samples {
		if indexOf(s.FunctionNames(), "main") >= 0 {
			rooted++
		}
	}
	if rooted < len(p.Samples)*9/10 {
		t.Errorf("only %d of %d samples reach main", rooted, len(p.Samples))
	}
}

// Per-thread attributes: thread.id and thread.name match the thread's work.
func TestThreadAttributes(t *testing.T) {
	requireRoot(t)
	const hz = 99
	wl := startWorkload(t, "threads_fp", "8")
	time.Sleep(400 * time.Millisecond)
	cpu, rec := recordCPU(t, wl.Process.Pid, 3, hz)
	d := decodeFile(t, rec.Path)
	p := d.ByPID(wl.Process.Pid)
	if p == nil {
		t.Fatalf("no profile for threads workload")
	}
	tids := map[string]map[int64]bool{}
	right, total := 0, 0
	for _, s := range p.Samples {
		if tids[s.ThreadName] == nil {
			tids[s.ThreadName] = map[int64]bool{}
		}
		tids[s.ThreadName][s.ThreadID] = true
		names := s.FunctionNames()
		switch s.ThreadName {
		case "worker-a":
			total++
			if indexOf(names, "work_a") >= 0 {
				right++
			}
		case "worker-b":
			total++
			if indexOf(names, "work_b") >= 0 {
				right++
			}
		}
	}
	if len(tids["worker-a"]) != 1 || len(tids["worker-b"]) != 1 {
		t.Fatalf("want one tid per named worker, got %v", tids)
	}
	for a := range tids["worker-a"] {
		if tids["worker-b"][a] || a == int64(wl.Process.Pid) {
			t.Errorf("worker-a tid %d is not distinct", a)
		}
	}
	// How many the workers' CPU time calls for, not seconds x Hz: on a
	// loaded host they run less (the main thread only waits).
	expected := cpu * hz
	t.Logf("%d of %d worker samples in their thread's function; %.0f expected from the process's CPU time (%.2f s)",
		right, total, expected, cpu)
	if float64(total) < 0.8*expected || total < 20 || float64(right) < 0.95*float64(total) {
		t.Errorf("%d of %d worker samples are in their thread's function, %.0f expected from its CPU time",
			right, total, expected)
	}
}

// --pid restricts the recording to one process.
func TestPidFilter(t *testing.T) {
	requireRoot(t)
	wl := startWorkload(t, "callgraph_fp", "6")
	other := startWorkload(t, "syscalls_fp", "6")
	time.Sleep(300 * time.Millisecond)
	rec := record(t, 2, 99, "--pid", itoa(wl.Process.Pid))
	d := decodeFile(t, rec.Path)
	if len(d.Processes) != 1 || d.ByPID(wl.Process.Pid) == nil {
		t.Fatalf("--pid %d gave %d processes", wl.Process.Pid, len(d.Processes))
	}
	if d.ByPID(other.Process.Pid) != nil {
		t.Fatalf("other process leaked into a --pid recording")
	}
}

// `otelprof top` shows the heaviest function first.
func TestTopCommand(t *testing.T) {
	requireRoot(t)
	wl := startWorkload(t, "callgraph_fp", "6")
	time.Sleep(300 * time.Millisecond)
	rec := record(t, 3, 99, "--pid", itoa(wl.Process.Pid))
	out, err := exec.Command(filepath.Join(buildDir(t), "otelprof"), "top", rec.Path, "--limit", "5").CombinedOutput()
	if err != nil {
		t.Fatalf("top: %v\n%s", err, out)
	}
	lines := strings.Split(string(out), "\n")
	var firstSelf string
	for i, l := range lines {
		if strings.Contains(l, "self%") && i+1 < len(lines) {
			firstSelf = lines[i+1]
			break
		}
	}
	if !strings.HasSuffix(strings.TrimSpace(firstSelf), "leaf_heavy") {
		t.Fatalf("top self entry is %q, want leaf_heavy\n%s", firstSelf, out)
	}
	if !strings.Contains(string(out), "main") {
		t.Fatalf("main missing from totals\n%s", out)
	}
}

// Clear errors and exit codes for bad input and missing privileges.
func TestCLIErrors(t *testing.T) {
	bin := filepath.Join(buildDir(t), "otelprof")
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"record", "--duration", "x", "--output", "/tmp/x"}, 2, "invalid value for --duration"},
		{[]string{"record", "--duration", "1"}, 2, "needs --output"},
		{[]string{"record", "--frequency", "0", "--output", "/tmp/x"}, 2, "invalid value for --frequency"},
		{[]string{"bogus"}, 2, "unknown command"},
		{[]string{"top", "/nonexistent/file"}, 1, "cannot read"},
		{[]string{"top", "/etc/passwd"}, 1, "not an OTLP ProfilesData"},
	}
	for _, c := range cases {
		out, err := exec.Command(bin, c.args...).CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != c.code || !strings.Contains(string(out), c.msg) {
			t.Errorf("%v: exit %v, output %q; want exit %d with %q", c.args, err, out, c.code, c.msg)
		}
	}
	// Without privileges: a clear one-line error, exit 1.
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatalf("setpriv (util-linux) is needed for the unprivileged test")
	}
	out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		"--inh-caps=-all", "--bounding-set=-all", bin, "record", "--duration", "1",
		"--output", "/tmp/otelprof-unpriv.otlp").CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "CAP_BPF") {
		t.Errorf("unprivileged start: %v %q; want exit 1 naming CAP_BPF", err, out)
	}
	if strings.Count(strings.TrimSpace(string(out)), "\n") != 0 {
		t.Errorf("error is not one line: %q", out)
	}
}

// userSystemTicks is the user and system time of pid so far, in clock
// ticks (/proc/PID/stat fields 14 and 15; the comm field may hold spaces,
// so the fields are counted from its closing parenthesis).
func userSystemTicks(t *testing.T, pid int) (int64, int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("read stat of %d: %v", pid, err)
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		t.Fatalf("stat of %d: %q", pid, b)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("stat of %d: utime %q stime %q", pid, f[11], f[12])
	}
	return u, s
}
