// Off-CPU time (opts.off_cpu_threshold, `otelprof record
// --off-cpu-threshold`): judged against what the workload measured of
// its own blocking calls and CPU time.
package integration

import (
	"bytes"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// schedulerPrograms lists the loaded BPF programs named off_cpu*
// (bpftool shows names cut at 15 bytes).
func schedulerPrograms(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("bpftool", "prog", "show").Output()
	if err != nil {
		t.Fatalf("bpftool prog show: %v", err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "name" && strings.HasPrefix(f[i+1], "off_cpu") {
				names = append(names, f[i+1])
			}
		}
	}
	return names
}

type offcpuTruth struct {
	sleepNs, pipeNs, cpuNs int64
	tid                    int64
	start, end             uint64 // the measured rounds, unix ns
}

// TestOffCPUTimePerStack: offcpu_mix's main thread sleeps ~50% in
// nanosleep, blocks ~25% on a pipe and burns ~25%. With every switch-out
// recorded (threshold 1), the off-CPU time under each blocking function
// is within 5% of what the workload measured around the call, its
// kernel frames are the call's, and the CPU profile still matches the
// thread's CPU time.
func TestOffCPUTimePerStack(t *testing.T) {
	requireRoot(t)
	// 40 rounds of ~100 ms after 20 of warm-up: ~6 s on a quiet host;
	// the recording leaves room for a loaded one.
	const seconds, hz, rounds, warmup = 15, 99, 40, 20
	var (
		mu      sync.Mutex
		wl      *exec.Cmd
		stdout  bytes.Buffer
		progs   []string
		started = make(chan struct{})
		recEnd  time.Time // when sampling stops
	)
	rec := recordWith(t, func() {
		mu.Lock()
		defer mu.Unlock()
		recEnd = time.Now().Add(seconds * time.Second)
		progs = schedulerPrograms(t)
		wl = exec.Command(filepath.Join(buildDir(t), "workloads", "offcpu_mix"), fmt.Sprint(rounds), fmt.Sprint(warmup))
		wl.Stdout = &stdout
		if err := wl.Start(); err != nil {
			t.Errorf("start offcpu_mix: %v", err)
		}
		close(started)
	}, seconds, hz, "--off-cpu-threshold", "1")
	<-started
	mu.Lock()
	defer mu.Unlock()
	if wl.Process == nil {
		t.FailNow()
	}
	if err := wl.Wait(); err != nil {
		t.Fatalf("offcpu_mix: %v", err)
	}
	if len(progs) == 0 {
		t.Errorf("no off_cpu* program loaded while recording with --off-cpu-threshold 1")
	}
	var truth offcpuTruth
	if _, err := fmt.Sscanf(stdout.String(), "sleep_ns=%d pipe_ns=%d cpu_ns=%d tid=%d start_ns=%d end_ns=%d",
		&truth.sleepNs, &truth.pipeNs, &truth.cpuNs, &truth.tid, &truth.start, &truth.end); err != nil {
		t.Fatalf("offcpu_mix output %q: %v", stdout.String(), err)
	}
	t.Logf("truth: sleep %.3f s, pipe %.3f s, CPU %.3f s (tid %d)", float64(truth.sleepNs)/1e9,
		float64(truth.pipeNs)/1e9, float64(truth.cpuNs)/1e9, truth.tid)
	// Every measured round must lie inside the recording.
	if end := time.Unix(0, int64(truth.end)); !end.Before(recEnd.Add(-500 * time.Millisecond)) {
		t.Fatalf("the workload's measured rounds ended at %s, the recording at %s: the host is too loaded for this test",
			end.Format(time.StampMilli), recEnd.Format(time.StampMilli))
	}

	// The file with its second profile per process is still conformant.
	if err := checkConformance(readProfilesData(t, rec.Path)); err != nil {
		t.Errorf("%s is not conformant:\n%v", rec.Path, err)
	}
	d := decodeFile(t, rec.Path)
	p := d.ByPIDName(wl.Process.Pid, "offcpu_mix")
	if p == nil {
		t.Fatalf("no resource for offcpu_mix (pid %d)\n%s", wl.Process.Pid, rec.Stderr)
	}
	// The process table may give one process two resources (an event
	// it could not tie to the entry it has: see ByPIDName); the truth
	// is the thread's, so judge them together.
	pidCPU := len(p.Samples) // every resource of the pid: what top counts
	for _, q := range d.Processes {
		if q == p || q.Attrs["process.pid"] != p.Attrs["process.pid"] {
			continue
		}
		pidCPU += len(q.Samples)
		t.Logf("a second resource for pid %d: %v, %d CPU samples, %d off-CPU events", wl.Process.Pid, q.Attrs, len(q.Samples), len(q.OffCPU))
		if q.Attrs["process.executable.name"] == "offcpu_mix" {
			p.Samples = append(p.Samples, q.Samples...)
			p.OffCPU = append(p.OffCPU, q.OffCPU...)
		}
	}
	if p.OffCPUProfile == nil {
		t.Fatalf("no off-CPU profile for offcpu_mix\n%s", rec.Stderr)
	}
	if pt := p.OffCPUProfile.PeriodType(); pt.TypeStrindex() != 0 || p.OffCPUProfile.Period() != 0 {
		t.Errorf("off-CPU profile has a period: type %d, period %d", pt.TypeStrindex(), p.OffCPUProfile.Period())
	}

	// Off-CPU time of the main thread under each blocking function in
	// the measured rounds (switched out within them: the warm-up rounds
	// ran while the profiler loaded the process's tables), and whether
	// the kernel frames are the call's.
	measured := func(s Sample) bool {
		return s.ThreadID == truth.tid && s.TimeNs >= truth.start && s.TimeNs <= truth.end
	}
	var sleepNs, pipeNs int64
	var sleepEv, pipeEv, sleepKernel, pipeKernel int
	has := func(s Sample, sub string) bool {
		for _, f := range s.Frames {
			if f.Type == "kernel" && strings.Contains(f.Function, sub) {
				return true
			}
		}
		return false
	}
	for _, s := range p.OffCPU {
		if !measured(s) {
			continue
		}
		names := s.FunctionNames()
		switch {
		// Events over 1 ms are the blocking calls (shorter ones:
		// preemptions, e.g. after the write that wakes the helper).
		case indexOf(names, "sleep_half") >= 0:
			sleepNs += s.OffCPUNs
			if s.OffCPUNs > 1e6 {
				sleepEv++
				if has(s, "nanosleep") {
					sleepKernel++
				}
			}
		case indexOf(names, "pipe_wait_quarter") >= 0:
			pipeNs += s.OffCPUNs
			if s.OffCPUNs > 1e6 {
				pipeEv++
				if has(s, "pipe_read") {
					pipeKernel++
				}
			}
		default:
			if s.OffCPUNs > 20e6 {
				t.Logf("other off-CPU event of %.1f ms: %s", float64(s.OffCPUNs)/1e6, s.String())
			}
		}
	}
	t.Logf("off-CPU: sleep_half %.3f s in %d events, pipe_wait_quarter %.3f s in %d events",
		float64(sleepNs)/1e9, sleepEv, float64(pipeNs)/1e9, pipeEv)
	within := func(what string, got, want int64) {
		if want <= 0 || math.Abs(float64(got-want)) > 0.05*float64(want) {
			t.Errorf("%s: %.3f s off CPU, the workload measured %.3f s (more than 5%% apart)",
				what, float64(got)/1e9, float64(want)/1e9)
		}
	}
	within("sleep_half", sleepNs, truth.sleepNs)
	within("pipe_wait_quarter", pipeNs, truth.pipeNs)
	if sleepEv < rounds*9/10 || pipeEv < rounds*9/10 {
		t.Errorf("%d sleep and %d pipe events over 1 ms, want >= %d each", sleepEv, pipeEv, rounds*9/10)
	}
	if sleepKernel < sleepEv*9/10 || pipeKernel < pipeEv*9/10 {
		t.Errorf("kernel frames: %d of %d sleep events under *nanosleep*, %d of %d pipe events under pipe_read",
			sleepKernel, sleepEv, pipeKernel, pipeEv)
	}

	// The CPU profile is as without off-CPU: the main thread's samples
	// by its CPU time, burn_quarter in nearly all of them.
	var onMain, onBurn int
	for _, s := range p.Samples {
		if !measured(s) {
			continue
		}
		onMain++
		if indexOf(s.FunctionNames(), "burn_quarter") >= 0 {
			onBurn++
		}
	}
	byCPU := float64(truth.cpuNs) / 1e9 * hz
	t.Logf("CPU profile: %d samples of the main thread (CPU time x Hz = %.0f), %d in burn_quarter", onMain, byCPU, onBurn)
	if float64(onMain) < 0.80*byCPU || float64(onMain) > 1.15*byCPU+3 {
		t.Errorf("main thread: %d CPU samples, its CPU time calls for %.0f", onMain, byCPU)
	}
	if onBurn < onMain*9/10 {
		t.Errorf("only %d of %d CPU samples in burn_quarter", onBurn, onMain)
	}
	// otelprof top (and convert, report) read the CPU profile only:
	// off-CPU values are nanoseconds, not samples.
	top, err := exec.Command(filepath.Join(buildDir(t), "otelprof"), "top", rec.Path,
		"--pid", fmt.Sprint(wl.Process.Pid), "--limit", "1").Output()
	if err != nil {
		t.Fatalf("otelprof top: %v", err)
	}
	var topTotal int
	fmt.Sscanf(string(top), "%d samples", &topTotal)
	if topTotal != pidCPU {
		t.Errorf("otelprof top counts %d samples for offcpu_mix's pid, its CPU profiles have %d", topTotal, pidCPU)
	}
	if !strings.Contains(rec.Stderr, "off-CPU: 1 program attached") {
		t.Errorf("summary has no off-CPU line:\n%s", rec.Stderr)
	}
}

// TestOffCPUOffLoadsNoSchedulerProgram: without the option (threshold 0,
// the default) no scheduler program is loaded and no off-CPU profile is
// written.
func TestOffCPUOffLoadsNoSchedulerProgram(t *testing.T) {
	requireRoot(t)
	var progs []string
	done := make(chan struct{})
	wl := startWorkload(t, "offcpu_mix", "20", "0")
	rec := recordWith(t, func() {
		// Give the library's load time to finish, then look.
		time.Sleep(300 * time.Millisecond)
		progs = schedulerPrograms(t)
		close(done)
	}, 2, 99)
	<-done
	if len(progs) != 0 {
		t.Errorf("scheduler programs loaded with off-CPU off: %v", progs)
	}
	d := decodeFile(t, rec.Path)
	for _, p := range d.Processes {
		if p.OffCPUProfile != nil {
			t.Errorf("off-CPU profile for pid %v with off-CPU off", p.Attrs["process.pid"])
		}
	}
	if p := d.ByPIDName(wl.Process.Pid, "offcpu_mix"); p == nil || len(p.Samples) == 0 {
		t.Errorf("no CPU samples of offcpu_mix: the recording did not run\n%s", rec.Stderr)
	}
	if strings.Contains(rec.Stderr, "off-CPU:") {
		t.Errorf("off-CPU counters non-zero with off-CPU off:\n%s", rec.Stderr)
	}
}

// TestOffCPUThresholdRefused: a threshold outside [0, 1] is a usage error.
func TestOffCPUThresholdRefused(t *testing.T) {
	for _, v := range []string{"1.5", "-0.1", "nan", "x"} {
		out, err := exec.Command(filepath.Join(buildDir(t), "otelprof"), "record", "-d", "1",
			"-o", filepath.Join(t.TempDir(), "p.otlp"), "--off-cpu-threshold", v).CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "--off-cpu-threshold") {
			t.Errorf("--off-cpu-threshold %s: %v, %q; want exit 2 naming the option", v, err, out)
		}
	}
}

// TestOffCPUFollowsProbabilisticIntervals: with probabilistic profiling
// (50%, 1 s intervals) no switch-out is recorded in an off interval: every
// off-CPU event lies within 400 ms of a CPU sample of the busy workload,
// which runs on a CPU throughout (an off interval has none for 1 s).
func TestOffCPUFollowsProbabilisticIntervals(t *testing.T) {
	requireRoot(t)
	busy := startWorkload(t, "callgraph_nofp", "30")
	mix := startWorkload(t, "offcpu_mix", "200", "0")
	rec := record(t, 12, 99, "--off-cpu-threshold", "1", "--probabilistic-threshold", "50",
		"--probabilistic-interval", "1")
	d := decodeFile(t, rec.Path)
	var cpuTimes []uint64
	for _, p := range d.Processes {
		if p.Attrs["process.pid"] == int64(busy.Process.Pid) {
			for _, s := range p.Samples {
				cpuTimes = append(cpuTimes, s.TimeNs)
			}
		}
	}
	sort.Slice(cpuTimes, func(i, j int) bool { return cpuTimes[i] < cpuTimes[j] })
	if len(cpuTimes) < 100 {
		t.Fatalf("%d CPU samples of the busy workload\n%s", len(cpuTimes), rec.Stderr)
	}
	// Off intervals show as missing samples: the busy workload runs on a
	// CPU all through the recording, so each off second takes about 99
	// of the 12 x 99 an always-on recording gives. (Not as gaps between
	// samples only: off intervals before the first or after the last on
	// one leave none.)
	offSeconds := 12 - float64(len(cpuTimes))/99
	gaps := 0
	for i := 1; i < len(cpuTimes); i++ {
		if cpuTimes[i]-cpuTimes[i-1] > 900e6 {
			gaps++
		}
	}
	near := func(ts uint64) bool {
		i := sort.Search(len(cpuTimes), func(i int) bool { return cpuTimes[i] >= ts })
		for _, j := range []int{i - 1, i} {
			if j >= 0 && j < len(cpuTimes) {
				d := int64(cpuTimes[j]) - int64(ts)
				if d < 0 {
					d = -d
				}
				if d < 400e6 {
					return true
				}
			}
		}
		return false
	}
	var events, far int
	for _, p := range d.Processes {
		if p.Attrs["process.pid"] != int64(mix.Process.Pid) {
			continue
		}
		for _, s := range p.OffCPU {
			events++
			if !near(s.TimeNs) {
				far++
			}
		}
	}
	t.Logf("%d CPU samples of the busy workload (about %.1f s off), %d gaps over 900 ms between them; %d off-CPU events of offcpu_mix, %d over 400 ms from any CPU sample",
		len(cpuTimes), offSeconds, gaps, events, far)
	if offSeconds < 1.5 {
		t.Fatalf("no off interval in 12 draws at 50%% (%d samples of a busy thread): cannot judge\n%s", len(cpuTimes), rec.Stderr)
	}
	if events == 0 {
		t.Fatalf("no off-CPU events in the on intervals\n%s", rec.Stderr)
	}
	if far > 0 {
		t.Errorf("%d of %d off-CPU events recorded in off intervals", far, events)
	}
}
