// The sampling rate at run time (otelprof_set_frequency) and probabilistic
// profiling, through the ABI (abi_soak), judged against the workload's own
// CPU time (schedstat) and the samples the payloads carry.
package integration

import (
	"math"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"
)

// soakSample is one timestamp of a decoded payload: which process, and the
// period of the Profile it came in.
type soakSample struct {
	pid      int64
	periodNs int64
	unixNs   uint64
}

// soakSamples decodes every poll payload abi_soak wrote to dir; each must be
// conformant.
func soakSamples(t *testing.T, dir string) []soakSample {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "poll-*.otlp"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no payloads in %s: %v", dir, err)
	}
	var out []soakSample
	for _, f := range files {
		d := readProfilesData(t, f)
		if err := checkConformance(d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i := 0; i < d.ResourceProfiles().Len(); i++ {
			rp := d.ResourceProfiles().At(i)
			pid := int64(-1)
			if v, ok := rp.Resource().Attributes().Get("process.pid"); ok {
				pid = v.Int()
			}
			for j := 0; j < rp.ScopeProfiles().Len(); j++ {
				profs := rp.ScopeProfiles().At(j).Profiles()
				for k := 0; k < profs.Len(); k++ {
					out = append(out, profileSamples(pid, profs.At(k))...)
				}
			}
		}
	}
	return out
}

func profileSamples(pid int64, p pprofile.Profile) []soakSample {
	var out []soakSample
	for i := 0; i < p.Samples().Len(); i++ {
		ts := p.Samples().At(i).TimestampsUnixNano()
		for k := 0; k < ts.Len(); k++ {
			out = append(out, soakSample{pid, p.Period(), ts.At(k)})
		}
	}
	return out
}

// soakEvents reads abi_soak's lines until it exits; returns the first line
// of each event and the "final" line.
func soakEvents(t *testing.T, s *soak, timeout time.Duration) map[string]soakLine {
	t.Helper()
	ev := map[string]soakLine{}
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				if err := <-s.done; err != nil {
					t.Fatalf("abi_soak: %v\n%s", err, s.stderr)
				}
				if ev["final"] == nil {
					t.Fatalf("abi_soak ended without a final line\n%s", s.stderr)
				}
				return ev
			}
			if _, seen := ev[l.event()]; !seen {
				ev[l.event()] = l
			}
		case <-deadline:
			t.Fatalf("abi_soak did not finish within %v\n%s", timeout, s.stderr)
		}
	}
}

func noLosses(t *testing.T, final soakLine) {
	t.Helper()
	for _, k := range []string{"samples_lost", "bpf_lost", "task_events_lost", "samples_dropped_at_stop",
		"add_errors", "events_malformed", "perf_ioctl_errors"} {
		if final.num(k) != 0 {
			t.Errorf("%s = %v, want 0", k, final.num(k))
		}
	}
}

// A rate change from 19 to 99 Hz at run time: the workload's samples per
// CPU second follow within 10%, in the second after the change and over
// each phase; each sample sits in the Profile whose period is the rate it
// was taken at (a 99 Hz sample weighted as a 19 Hz one would count 5x the
// CPU time); nothing is lost.
func TestRateChangeAtRunTime(t *testing.T) {
	requireRoot(t)
	wl := startWorkload(t, "callgraph_fp", "30")
	pid := wl.Process.Pid
	time.Sleep(300 * time.Millisecond)
	dir := t.TempDir()
	s := startSoak(t, "--pid", strconv.Itoa(pid), "--frequency", "19", "--max-frequency", "200",
		"--set-frequency-at", "8:99", "--duration", "15", "--poll-ms", "1000", "--out-dir", dir)
	ev := soakEvents(t, s, 60*time.Second)
	for _, e := range []string{"started", "set_frequency", "mark", "stopping"} {
		if ev[e] == nil {
			t.Fatalf("no %q line from abi_soak\n%s", e, s.stderr)
		}
	}
	if ev["set_frequency"].num("rc") != 0 {
		t.Fatalf("otelprof_set_frequency failed: %v\n%s", ev["set_frequency"], s.stderr)
	}
	final := ev["final"]
	noLosses(t, final)
	if final.num("frequency_changes") != 1 || final.num("sampling_frequency_hz") != 99 {
		t.Errorf("stats: %v changes, %v Hz; want 1 change, 99 Hz", final.num("frequency_changes"), final.num("sampling_frequency_hz"))
	}

	cpu := func(e string) float64 { return ev[e].num("target_cpu_ns") / 1e9 }
	at := func(e string) uint64 { return uint64(ev[e].num("unix_ns")) }
	p19, p99 := int64(1e9)/19, int64(1e9)/99
	var n19, n99, next int
	var late19, early99 []uint64
	for _, x := range soakSamples(t, dir) {
		if x.pid != int64(pid) {
			continue
		}
		switch x.periodNs {
		case p19:
			n19++
			if x.unixNs > at("set_frequency") {
				late19 = append(late19, x.unixNs)
			}
		case p99:
			n99++
			if x.unixNs < at("set_frequency")-50e6 {
				early99 = append(early99, x.unixNs)
			}
			if x.unixNs >= at("set_frequency") && x.unixNs < at("mark") {
				next++
			}
		default:
			t.Fatalf("a sample in a Profile of period %d ns (want %d or %d)", x.periodNs, p19, p99)
		}
	}
	// The change is stamped after the last CPU took it: a 19 Hz sample
	// cannot be later, a 99 Hz one cannot be much earlier.
	if len(late19) > 0 || len(early99) > 0 {
		t.Errorf("samples weighted at the wrong rate: %d at 19 Hz after the change, %d at 99 Hz before it", len(late19), len(early99))
	}
	c19 := cpu("set_frequency") - cpu("started")
	c99 := cpu("stopping") - cpu("set_frequency")
	cNext := cpu("mark") - cpu("set_frequency")
	r19, r99, rNext := float64(n19)/c19, float64(n99)/c99, float64(next)/cNext
	t.Logf("19 Hz phase: %d samples / %.3f CPU s = %.2f/s; 99 Hz phase: %d / %.3f = %.2f/s; second after the change: %d / %.3f = %.2f/s",
		n19, c19, r19, n99, c99, r99, next, cNext, rNext)
	if c19 < 4 || c99 < 4 || cNext < 0.5 {
		t.Fatalf("the workload ran too little to judge (%.2f, %.2f, %.2f CPU s): host overloaded?", c19, c99, cNext)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"19 Hz phase", r19, 19}, {"99 Hz phase", r99, 99}, {"second after the change", rNext, 99}} {
		if math.Abs(c.got-c.want) > 0.1*c.want {
			t.Errorf("%s: %.2f samples per CPU second, want %v +- 10%%", c.name, c.got, c.want)
		}
	}
}

// Probabilistic profiling, threshold 50, interval 1 s (the reference's
// meaning: a draw per interval turns sampling on or off for all of it).
// Judged from the samples: every interval of a whole-host recording (with
// a busy workload) either has samples or nothing from any process, on in
// 50 +- 15% of 100 intervals (a fair coin leaves that range with p < 0.3%),
// and the kernel took samples (idle ones included) only while on: its
// count matches the on time, not the recording's.
func TestProbabilisticProfiling(t *testing.T) {
	requireRoot(t)
	const intervals = 100
	wl := startWorkload(t, "callgraph_fp", strconv.Itoa(intervals+20))
	pid := wl.Process.Pid
	dir := t.TempDir()
	s := startSoak(t, "--frequency", "99", "--probabilistic-threshold", "50",
		"--probabilistic-interval-ms", "1000", "--cpu-of", strconv.Itoa(pid),
		"--duration", strconv.Itoa(intervals)+".5", "--poll-ms", "2000", "--out-dir", dir)
	ev := soakEvents(t, s, (intervals+60)*time.Second)
	final := ev["final"]
	noLosses(t, final)
	t0 := uint64(ev["started"].num("unix_ns"))
	cpu := (ev["stopping"].num("target_cpu_ns") - ev["started"].num("target_cpu_ns")) / 1e9
	if cpu < 0.5*intervals {
		t.Fatalf("the workload ran %.1f CPU s of %d: host overloaded?", cpu, intervals)
	}

	// The draw is made when the drain thread wakes on the interval's
	// timer: on a loaded host (2 CPUs shared with builds) that can be
	// tens of ms after the boundary, so an interval is judged by its
	// last 750 ms; the first 250 ms are only reported.
	total := make([]int, intervals) // every process's samples, judged part
	busy := make([]int, intervals)  // the workload's, judged part
	spill := make([]int, intervals) // every process's, first 250 ms
	for _, x := range soakSamples(t, dir) {
		if x.unixNs < t0 {
			continue
		}
		k := int((x.unixNs - t0) / 1e9)
		if k >= intervals {
			continue
		}
		if (x.unixNs-t0)%1e9 < 250e6 {
			spill[k]++
			continue
		}
		total[k]++
		if x.pid == int64(pid) {
			busy[k]++
		}
	}
	var on, off []int
	var unclear []string
	var late []string // off intervals with samples in their first 250 ms
	for k := 0; k < intervals; k++ {
		switch {
		case total[k] >= 30:
			on = append(on, k)
		case total[k] <= 2:
			off = append(off, k)
			if spill[k] > 4 {
				late = append(late, strconv.Itoa(k)+":"+strconv.Itoa(spill[k]))
			}
		default:
			unclear = append(unclear, strconv.Itoa(k)+":"+strconv.Itoa(total[k])+"/"+strconv.Itoa(busy[k]))
		}
	}
	t.Logf("on %d, off %d, unclear %v of %d intervals; the library drew on %v, off %v; off intervals sampled at their start (interval:samples in 250 ms) %v",
		len(on), len(off), unclear, intervals, final.num("probabilistic_intervals_on"), final.num("probabilistic_intervals_off"), late)
	if len(unclear) > 2 {
		t.Errorf("intervals neither sampled nor silent in their last 750 ms (interval:samples/of the workload): %v", unclear)
	}
	frac := float64(len(on)) / intervals
	if frac < 0.35 || frac > 0.65 {
		t.Errorf("profiling on in %.0f%% of intervals, want 50 +- 15%%", 100*frac)
	}
	// The library's own count of draws agrees with what the samples show,
	// give or take the draws after the judged intervals: the soak stops at
	// its next poll after the duration (up to --poll-ms later), and every
	// interval begun by then was drawn too.
	drawnOn := final.num("probabilistic_intervals_on")
	after := math.Ceil((ev["stopping"].num("unix_ns")-float64(t0))/1e9) - intervals
	if after < 1 {
		after = 1
	}
	if math.Abs(drawnOn-float64(len(on))) > after+float64(len(unclear)) {
		t.Errorf("the library drew %v intervals on, the samples show %d (%v intervals began after the judged ones)", drawnOn, len(on), after)
	}
	// Not taken, rather than dropped: every CPU's tick in an on interval
	// is a sample received or an idle one skipped in the kernel; none in
	// an off one.
	ncpu := ev["started"].num("ncpu")
	ticks := final.num("samples_received") + final.num("samples_idle")
	onSeconds := drawnOn
	want := ncpu * 99 * onSeconds
	t.Logf("kernel samples %v (received %v, idle %v), %v CPUs x 99 Hz x %v s on = %.0f; always on would be %.0f",
		ticks, final.num("samples_received"), final.num("samples_idle"), ncpu, onSeconds, want, ncpu*99*float64(intervals))
	if math.Abs(ticks-want) > 0.15*want {
		t.Errorf("the kernel took %v samples, want %.0f +- 15%% (on %v s of %d)", ticks, want, onSeconds, intervals)
	}
}
