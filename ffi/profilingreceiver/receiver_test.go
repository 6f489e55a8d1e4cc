// SPDX-License-Identifier: Apache-2.0

package profilingreceiver

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/collector/receiver/xreceiver"

	"github.com/libotelprofiler/libotelprofiler/ffi/internal/fakelib"
	"github.com/libotelprofiler/libotelprofiler/ffi/internal/otelprof"
	"github.com/libotelprofiler/libotelprofiler/ffi/internal/testprofiles"
)

func fakeLib(t *testing.T) (lib, dir string) { return fakelib.Build(t) }

func writePayload(t *testing.T, dir string, p pprofile.Profiles) []byte {
	return fakelib.WritePayload(t, dir, p, 3)
}

func readLog(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func newTestReceiver(t *testing.T, cfg *Config, tt *componenttest.Telemetry) (xreceiver.Profiles, *consumertest.ProfilesSink) {
	t.Helper()
	set := receivertest.NewNopSettings(Type)
	if tt != nil {
		set.TelemetrySettings = tt.NewTelemetrySettings()
	}
	sink := new(consumertest.ProfilesSink)
	r, err := NewFactory().CreateProfiles(context.Background(), set, cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	return r, sink
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLifecycleDeliversDecodedProfiles(t *testing.T) {
	lib, dir := fakeLib(t)
	want := testprofiles.Canned(1_700_000_000_000_000_000)
	writePayload(t, dir, want)

	cfg := createDefaultConfig()
	cfg.LibraryPath = lib
	cfg.SamplesPerSecond = 99
	cfg.ReporterInterval = 20 * time.Millisecond
	cfg.PID = 1234
	cfg.HostName = "node-7"
	cfg.SendIdleFrames = true
	cfg.MaxFrames = 64
	cfg.SymbolBudgetMB = 32
	cfg.FileBudgetMB = 8
	cfg.BTFPath = "/boot/vmlinux.btf"
	cfg.DebuginfodURLs = []string{"http://127.0.0.1:1", "https://debuginfod.example/"}
	cfg.OffCPUThreshold = 0.25
	cfg.RingbufKB = 512
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tt.Shutdown(context.Background()) })
	r, sink := newTestReceiver(t, cfg, tt)

	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two payloads", func() bool { return len(sink.AllProfiles()) >= 2 })

	// Library counters are exported while running.
	m, err := tt.GetMetric("otelcol_receiver_profiling_samples_lost")
	if err != nil {
		t.Fatalf("library counters not exported: %v", err)
	}
	if m.Unit != "{sample}" {
		t.Errorf("unit %q", m.Unit)
	}

	before := len(sink.AllProfiles())
	t0 := time.Now()
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("shutdown took %s", d)
	}
	if got := len(sink.AllProfiles()); got != before+1 {
		t.Errorf("final poll after stop: %d payloads before shutdown, %d after, want one more", before, got)
	}

	for i, got := range sink.AllProfiles() {
		if got.SampleCount() != want.SampleCount() {
			t.Fatalf("payload %d: %d samples, want %d", i, got.SampleCount(), want.SampleCount())
		}
		if !reflect.DeepEqual(got.Dictionary().StringTable().AsRaw(), want.Dictionary().StringTable().AsRaw()) {
			t.Fatalf("payload %d: string table differs", i)
		}
		res := got.ResourceProfiles().At(0).Resource().Attributes()
		if v, ok := res.Get("process.pid"); !ok || v.Int() != 4242 {
			t.Fatalf("payload %d: resource %v", i, res.AsRaw())
		}
		smp := got.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0).Samples().At(0)
		if smp.TimestampsUnixNano().Len() != 3 {
			t.Fatalf("payload %d: first sample has %d timestamps", i, smp.TimestampsUnixNano().Len())
		}
	}

	log := readLog(t, dir)
	if !strings.HasPrefix(log[0], "start sz=96 freq=99 pid=1234 host=node-7 ringbuf_kb=512 flags=1 max_frames=64 reserved=0 symbol_budget_mb=32 file_budget_mb=8 btf=/boot/vmlinux.btf debuginfod=http://127.0.0.1:1 https://debuginfod.example/ max_freq=0 prob=100/60000ms env=(null) off_cpu=0.25") {
		t.Errorf("opts not passed as documented: %q", log[0])
	}
	tail := strings.Join(log[len(log)-4:], "|")
	if !strings.HasPrefix(tail, "stop|poll ") || !strings.Contains(tail, " final|poll empty|close") {
		t.Errorf("shutdown sequence: %q", tail)
	}

	// obsreport counted the accepted samples.
	acc, err := tt.GetMetric("otelcol_receiver_accepted_profile_samples")
	if err != nil {
		t.Fatalf("obsreport metric missing: %v", err)
	}
	if acc.Name == "" {
		t.Fatal("empty metric")
	}
}

// Another component changes the rate through Controller(id); the options
// carry the ceiling, the probabilistic keys and the env var names.
func TestRateControllerAndNewOptions(t *testing.T) {
	lib, dir := fakeLib(t)
	writePayload(t, dir, testprofiles.Canned(1_700_000_000_000_000_000))
	cfg := createDefaultConfig()
	cfg.LibraryPath = lib
	cfg.ReporterInterval = time.Hour
	cfg.MaxSamplesPerSecond = 500
	cfg.ProbabilisticThreshold = 50
	cfg.ProbabilisticInterval = 2 * time.Second
	cfg.IncludeEnvVars = "DEPLOY_ENV,HOME"
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tt.Shutdown(context.Background()) })
	r, _ := newTestReceiver(t, cfg, tt)
	id := r.(*profilingReceiver).set.ID
	if _, ok := Controller(id); ok {
		t.Fatal("a controller before Start")
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	rc, ok := Controller(id)
	if !ok {
		t.Fatal("no controller for the started receiver")
	}
	if got := rc.SamplesPerSecond(); got != 19 {
		t.Fatalf("rate %d at start, want 19", got)
	}
	if err := rc.SetSamplesPerSecond(99); err != nil {
		t.Fatal(err)
	}
	if got := rc.SamplesPerSecond(); got != 99 {
		t.Fatalf("rate %d after the change, want 99", got)
	}
	// The library's refusal comes back with its message; the rate stays.
	err := rc.SetSamplesPerSecond(5000)
	if err == nil || !strings.Contains(err.Error(), "out of range (1..1000)") {
		t.Fatalf("refusal: %v", err)
	}
	if got := rc.SamplesPerSecond(); got != 99 {
		t.Fatalf("rate %d after a refused change, want 99", got)
	}
	if err := rc.SetSamplesPerSecond(0); err == nil {
		t.Fatal("0 Hz accepted")
	}
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := Controller(id); ok {
		t.Fatal("a controller after Shutdown")
	}
	if err := rc.SetSamplesPerSecond(19); !errors.Is(err, errNotRunning) {
		t.Fatalf("after shutdown: %v", err)
	}
	log := strings.Join(readLog(t, dir), "|")
	if !strings.Contains(log, "max_freq=500 prob=50/2000ms env=DEPLOY_ENV,HOME") ||
		!strings.Contains(log, "|set_frequency 99|set_frequency 5000|") {
		t.Fatalf("library calls: %q", log)
	}
}

func TestStartErrorCarriesErrbuf(t *testing.T) {
	lib, dir := fakeLib(t)
	msg := "needs CAP_BPF and CAP_PERFMON (run as root)"
	if err := os.WriteFile(filepath.Join(dir, "start_error"), []byte(msg+"\nsecond line ignored\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := createDefaultConfig()
	cfg.LibraryPath = lib
	r, _ := newTestReceiver(t, cfg, nil)
	err := r.Start(context.Background(), componenttest.NewNopHost())
	if err == nil {
		t.Fatal("start succeeded")
	}
	if !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), "errno 1") {
		t.Fatalf("start error does not carry the library message: %v", err)
	}
	if strings.Contains(err.Error(), "second line") {
		t.Fatalf("errbuf read past the first line: %v", err)
	}
	// Shutdown after a failed start is a no-op.
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestLibraryNotFound(t *testing.T) {
	t.Setenv(otelprof.LibraryEnv, "")
	cfg := createDefaultConfig()
	cfg.LibraryPath = "/nonexistent/dir/libotelprofiler.so"
	r, _ := newTestReceiver(t, cfg, nil)
	err := r.Start(context.Background(), componenttest.NewNopHost())
	if err == nil || !strings.Contains(err.Error(), "libotelprofiler not found; looked in: /nonexistent/dir/libotelprofiler.so") {
		t.Fatalf("unexpected error: %v", err)
	}

	// Without a configured path the search list names every place tried.
	paths := otelprof.SearchPaths("")
	exe, _ := os.Executable()
	if len(paths) < 4 || !strings.HasPrefix(paths[0], filepath.Dir(exe)) {
		t.Fatalf("search order does not start beside the executable: %v", paths)
	}
	joined := strings.Join(paths, " ")
	for _, d := range []string{"/usr/local/lib/libotelprofiler.so", "/usr/lib/libotelprofiler.so"} {
		if !strings.Contains(joined, d) {
			t.Errorf("search list lacks %s: %v", d, paths)
		}
	}
}

// error_mode: ignore logs a failed Start and leaves the collector running.
func TestErrorModeIgnore(t *testing.T) {
	t.Setenv(otelprof.LibraryEnv, "")
	cfg := createDefaultConfig()
	cfg.LibraryPath = "/nonexistent/dir/libotelprofiler.so"
	cfg.ErrorMode = errorModeIgnore
	r, _ := newTestReceiver(t, cfg, nil)
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatalf("error_mode ignore: Start returned %v", err)
	}
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// reporter_jitter spreads the poll period over [1-j, 1+j] x interval.
func TestReporterJitter(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.ReporterInterval = time.Second
	cfg.ReporterJitter = 0.5
	r := &profilingReceiver{cfg: cfg}
	lo, hi := time.Hour, time.Duration(0)
	for i := 0; i < 2000; i++ {
		d := r.nextInterval()
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo < 500*time.Millisecond || hi > 1500*time.Millisecond || lo > 600*time.Millisecond || hi < 1400*time.Millisecond {
		t.Errorf("jittered intervals span [%s, %s], want about [500ms, 1.5s]", lo, hi)
	}
	cfg.ReporterJitter = 0
	if d := r.nextInterval(); d != time.Second {
		t.Errorf("no jitter: %s", d)
	}
}

func TestLibraryFromEnv(t *testing.T) {
	lib, dir := fakeLib(t)
	writePayload(t, dir, testprofiles.Canned(1))
	t.Setenv(otelprof.LibraryEnv, lib)
	cfg := createDefaultConfig()
	cfg.ReporterInterval = time.Hour // only the final poll delivers
	r, sink := newTestReceiver(t, cfg, nil)
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 500*time.Millisecond {
		t.Errorf("shutdown with a 1h reporter_interval took %s", d)
	}
	if n := len(sink.AllProfiles()); n != 1 {
		t.Fatalf("want the final drained payload only, got %d payloads", n)
	}
	if !strings.HasPrefix(readLog(t, dir)[0], "start sz=96 freq=19 pid=0 host=(null) ringbuf_kb=0 flags=0 max_frames=0 reserved=0 symbol_budget_mb=0 file_budget_mb=0 btf=(null) debuginfod=(null) max_freq=0 prob=100/60000ms env=(null) off_cpu=0") {
		t.Errorf("defaults not passed as zero: %v", readLog(t, dir)[0])
	}
}

func TestPollErrorKeepsRunning(t *testing.T) {
	lib, dir := fakeLib(t)
	writePayload(t, dir, testprofiles.Canned(1))
	perr := filepath.Join(dir, "poll_error")
	if err := os.WriteFile(perr, []byte("encoder out of memory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := createDefaultConfig()
	cfg.LibraryPath = lib
	cfg.ReporterInterval = 10 * time.Millisecond
	r, sink := newTestReceiver(t, cfg, nil)
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a failed poll", func() bool { return strings.Contains(strings.Join(readLog(t, dir), "\n"), "poll error") })
	if err := os.Remove(perr); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a payload after the error", func() bool { return len(sink.AllProfiles()) > 0 })
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestGarbagePayloadIsDropped(t *testing.T) {
	lib, dir := fakeLib(t)
	if err := os.WriteFile(filepath.Join(dir, "payload.bin"), []byte{0xff, 0xff, 0xff}, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := createDefaultConfig()
	cfg.LibraryPath = lib
	cfg.ReporterInterval = 10 * time.Millisecond
	r, sink := newTestReceiver(t, cfg, nil)
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two polls", func() bool { return strings.Count(strings.Join(readLog(t, dir), "\n"), "poll 3 bytes") >= 2 })
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(sink.AllProfiles()); n != 0 {
		t.Fatalf("garbage delivered as %d payloads", n)
	}
}

func TestRealLibraryIfBuilt(t *testing.T) {
	lib := filepath.Join("..", "..", "build", "libotelprofiler.so")
	if _, err := os.Stat(lib); err != nil {
		t.Skip("build/libotelprofiler.so not built; the lead's tests cover it")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for BPF")
	}
	abs, _ := filepath.Abs(lib)
	cfg := createDefaultConfig()
	cfg.LibraryPath = abs
	cfg.SamplesPerSecond = 99
	cfg.ReporterInterval = 500 * time.Millisecond
	r, sink := newTestReceiver(t, cfg, nil)
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	go func() { // keep a CPU busy
		x := 0
		for {
			select {
			case <-stop:
				return
			default:
				x++
			}
		}
	}()
	time.Sleep(2 * time.Second)
	close(stop)
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sink.SampleCount() == 0 {
		t.Fatal("no samples from the real library")
	}
	t.Logf("real library: %d payloads, %d samples", len(sink.AllProfiles()), sink.SampleCount())
}

func TestNotALibotelprofiler(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatalf("cc required: %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "other.c")
	lib := filepath.Join(dir, "libother.so")
	if err := os.WriteFile(src, []byte("const char *otelprof_version(void) { return \"9\"; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	cfg := createDefaultConfig()
	cfg.LibraryPath = lib
	r, _ := newTestReceiver(t, cfg, nil)
	err = r.Start(context.Background(), componenttest.NewNopHost())
	if err == nil || !strings.Contains(err.Error(), "is not a libotelprofiler: symbol otelprof_start missing") {
		t.Fatalf("unexpected error: %v", err)
	}

	// A file that is not a shared object at all.
	junk := filepath.Join(dir, "libotelprofiler.so")
	if err := os.WriteFile(junk, []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.LibraryPath = junk
	r, _ = newTestReceiver(t, cfg, nil)
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err == nil || !strings.Contains(err.Error(), "cannot load "+junk) {
		t.Fatalf("unexpected error: %v", err)
	}
}

// adaptivePayload is one window of 20 samples (19 Hz) whose leaf is native
// code in file.
func adaptivePayload(t *testing.T, dir, file string) {
	t.Helper()
	b := testprofiles.New(map[string]any{"process.pid": int64(77), "service.name": "zipper"}, 1_700_000_000_000_000_000)
	b.Add(testprofiles.Sample{Count: 20, Stack: []testprofiles.Frame{
		{Type: "native", Function: "deflate_slow", File: file},
		{Type: "native", Function: "main", File: "/usr/bin/zipper"},
	}})
	writePayload(t, dir, b.P)
}

// An adaptive rule on samples.native.count{shlib_name=libz}: windows with
// libz at the leaf ramp the rate to the rule's, windows without bring it
// back to samples_per_second after the rule's duration; each ramp is
// counted. A CPU budget the collector exceeds cuts the ramp and holds the
// rule off for its duration.
func TestAdaptiveRamp(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget float64
	}{{"within budget", 8}, {"over budget", 1e-9}} {
		t.Run(tc.name, func(t *testing.T) {
			lib, dir := fakeLib(t)
			adaptivePayload(t, dir, "/usr/lib/x86_64-linux-gnu/libc.so.6")
			cfg := createDefaultConfig()
			cfg.LibraryPath = lib
			cfg.ReporterInterval = 50 * time.Millisecond
			cfg.ReporterJitter = 0
			cfg.MaxSamplesPerSecond = 500
			cfg.Adaptive = AdaptiveConfig{CPUBudget: tc.budget, Rules: []AdaptiveRule{{
				Name: "zlib", Metric: "samples.native.count", ShlibName: "libz", GroupBy: "service",
				Threshold: 0.5, SamplesPerSecond: 99, Duration: time.Second,
			}}}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			tt := componenttest.NewTelemetry()
			t.Cleanup(func() { _ = tt.Shutdown(context.Background()) })
			r, _ := newTestReceiver(t, cfg, tt)
			if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
				t.Fatal(err)
			}
			rc, _ := Controller(r.(*profilingReceiver).set.ID)
			time.Sleep(300 * time.Millisecond)
			if got := rc.SamplesPerSecond(); got != 19 {
				t.Fatalf("ramped without libz: %d", got)
			}
			adaptivePayload(t, dir, "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13")
			if tc.budget > 1 {
				waitFor(t, "the ramp to 99", func() bool { return rc.SamplesPerSecond() == 99 })
				adaptivePayload(t, dir, "/usr/lib/x86_64-linux-gnu/libc.so.6")
				t0 := time.Now()
				waitFor(t, "back to 19", func() bool { return rc.SamplesPerSecond() == 19 })
				if d := time.Since(t0); d < 800*time.Millisecond {
					t.Errorf("back to baseline after %s, before the rule's 1s", d)
				}
			} else {
				waitFor(t, "a ramp cut", func() bool {
					l := strings.Join(readLog(t, dir), "|")
					i := strings.Index(l, "set_frequency 99")
					return i >= 0 && strings.Contains(l[i:], "set_frequency 19")
				})
				// libz is still at the leaf: the rule waits its 1 s.
				time.Sleep(600 * time.Millisecond)
			}
			if err := r.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			log := strings.Join(readLog(t, dir), "|")
			if n := strings.Count(log, "set_frequency 99"); n != 1 {
				t.Errorf("%d ramps in %q, want 1 (a cut rule waits its duration)", n, log)
			}
			m, err := tt.GetMetric("otelcol_receiver_profiling_adaptive_ramps")
			if err != nil {
				t.Fatalf("ramps not counted: %v", err)
			}
			_ = m
			if tc.budget < 1 {
				if _, err := tt.GetMetric("otelcol_receiver_profiling_adaptive_ramps_cut"); err != nil {
					t.Fatalf("cut not counted: %v", err)
				}
			}
		})
	}
}
