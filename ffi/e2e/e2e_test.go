// SPDX-License-Identifier: Apache-2.0

// Package e2e runs the built collector with the real libotelprofiler.
//
// Environment:
//
//	OTELPROF_E2E_LIB        path of the real libotelprofiler.so (required to run)
//	OTELPROF_E2E_REQUIRED=1 fail instead of skipping when the test cannot run
//	OTELPROF_E2E_COLLECTOR  collector binary (default ../../build/otelcol-profiler,
//	                        built into a temporary directory if absent)
//
// Needs root (BPF) and a C compiler (for the workload).
package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

const runFor = 8 * time.Second

func required() bool { return os.Getenv("OTELPROF_E2E_REQUIRED") == "1" }

// skipOrFail skips the test, or fails it when OTELPROF_E2E_REQUIRED=1.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if required() {
		t.Fatalf("OTELPROF_E2E_REQUIRED=1 but "+format, args...)
	}
	t.Skipf(format, args...)
}

func library(t *testing.T) string {
	t.Helper()
	lib := os.Getenv("OTELPROF_E2E_LIB")
	if lib == "" {
		skipOrFail(t, "OTELPROF_E2E_LIB is not set (point it at build/libotelprofiler.so)")
	}
	abs, err := filepath.Abs(lib)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("OTELPROF_E2E_LIB=%s: %v", lib, err)
	}
	if os.Geteuid() != 0 {
		skipOrFail(t, "the end-to-end test needs root for BPF")
	}
	return abs
}

// collector is the binary `make collector` builds with ocb:
// $OTELPROF_E2E_COLLECTOR, else ../build/otelcol-profiler.
func collector(t *testing.T) string {
	t.Helper()
	c := os.Getenv("OTELPROF_E2E_COLLECTOR")
	if c == "" {
		c = filepath.Join("..", "..", "build", "otelcol-profiler")
	}
	abs, _ := filepath.Abs(c)
	if !fileExists(abs) {
		skipOrFail(t, "%s not found: run `make collector` first", abs)
	}
	return abs
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// workload compiles testdata/workload.c and starts it in the given mode.
func workload(t *testing.T, mode string) *exec.Cmd {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatalf("a C compiler (cc) is required for the workload: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "e2e-workload")
	if b, err := exec.Command(cc, "-O1", "-g", "-fno-omit-frame-pointer", "-o", bin, filepath.Join("testdata", "workload.c")).CombinedOutput(); err != nil {
		t.Fatalf("building the workload: %v\n%s", err, b)
	}
	cmd := exec.Command(bin, mode)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// proc is a running collector.
type proc struct {
	cmd       *exec.Cmd
	dir, name string
	done      chan struct{}
	err       error
}

// startCollector runs the collector with config in dir; stop it with stop.
func startCollector(t *testing.T, bin, dir, name, config string, env ...string) *proc {
	t.Helper()
	cfg := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: exec.Command(bin, "--feature-gates=+service.profilesSupport", "--config", cfg), dir: dir, name: name, done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.Env = append(os.Environ(), env...)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		log.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// alive fails the test if the collector exits within d (e.g. BPF start failure).
func (p *proc) alive(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-p.done:
		t.Fatalf("%s exited while it should be running (%v):\n%s", p.name, p.err, tail(p.dir, p.name))
	case <-time.After(d):
	}
}

// stop sends SIGINT and expects a clean exit within 10 s.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
		t.Fatalf("%s exited early (%v):\n%s", p.name, p.err, tail(p.dir, p.name))
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("%s: %v\n%s", p.name, p.err, tail(p.dir, p.name))
		}
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		t.Fatalf("%s did not stop within 10s of SIGINT\n%s", p.name, tail(p.dir, p.name))
	}
}

func tail(dir, name string) string {
	b, _ := os.ReadFile(filepath.Join(dir, name+".log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func jsonLines(t *testing.T, path string, each func([]byte) error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no output: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := each(sc.Bytes()); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

func readProfiles(t *testing.T, path string) []pprofile.Profiles {
	var out []pprofile.Profiles
	u := &pprofile.JSONUnmarshaler{}
	jsonLines(t, path, func(b []byte) error {
		p, err := u.UnmarshalProfiles(b)
		out = append(out, p)
		return err
	})
	return out
}

func readMetrics(t *testing.T, path string) []pmetric.Metrics {
	var out []pmetric.Metrics
	u := &pmetric.JSONUnmarshaler{}
	jsonLines(t, path, func(b []byte) error {
		m, err := u.UnmarshalMetrics(b)
		out = append(out, m)
		return err
	})
	return out
}

// stats summarizes profiles: sample weight per pid and, for one pid, the
// weight of stacks containing each function name.
type stats struct {
	perPID   map[int64]int64
	funcs    map[string]int64
	total    int64
	payloads int
}

func summarize(ps []pprofile.Profiles, pid int64) stats {
	s := stats{perPID: map[int64]int64{}, funcs: map[string]int64{}, payloads: len(ps)}
	for _, p := range ps {
		d := p.Dictionary()
		str := func(i int32) string {
			if i < 0 || int(i) >= d.StringTable().Len() {
				return ""
			}
			return d.StringTable().At(int(i))
		}
		for _, rp := range p.ResourceProfiles().All() {
			var rpid int64 = -1
			if v, ok := rp.Resource().Attributes().Get("process.pid"); ok {
				rpid = v.Int()
			}
			for _, sp := range rp.ScopeProfiles().All() {
				for _, pr := range sp.Profiles().All() {
					for _, smp := range pr.Samples().All() {
						w := int64(smp.TimestampsUnixNano().Len())
						if w == 0 {
							for _, v := range smp.Values().All() {
								w += v
							}
						}
						s.perPID[rpid] += w
						s.total += w
						if rpid != pid || int(smp.StackIndex()) >= d.StackTable().Len() {
							continue
						}
						seen := map[string]bool{}
						for _, li := range d.StackTable().At(int(smp.StackIndex())).LocationIndices().All() {
							if int(li) >= d.LocationTable().Len() {
								continue
							}
							for _, ln := range d.LocationTable().At(int(li)).Lines().All() {
								if fi := int(ln.FunctionIndex()); fi > 0 && fi < d.FunctionTable().Len() {
									seen[str(d.FunctionTable().At(fi).NameStrindex())] = true
								}
							}
						}
						for f := range seen {
							s.funcs[f] += w
						}
					}
				}
			}
		}
	}
	return s
}

// fileFrames counts the frames in the file whose path ends with suffix,
// of any process: with a function name, and without.
func fileFrames(ps []pprofile.Profiles, suffix string) (named, unnamed int) {
	for _, p := range ps {
		d := p.Dictionary()
		strs := d.StringTable()
		for _, rp := range p.ResourceProfiles().All() {
			for _, sp := range rp.ScopeProfiles().All() {
				for _, pr := range sp.Profiles().All() {
					for _, smp := range pr.Samples().All() {
						if int(smp.StackIndex()) >= d.StackTable().Len() {
							continue
						}
						for _, li := range d.StackTable().At(int(smp.StackIndex())).LocationIndices().All() {
							if int(li) >= d.LocationTable().Len() {
								continue
							}
							loc := d.LocationTable().At(int(li))
							mi := int(loc.MappingIndex())
							if mi <= 0 || mi >= d.MappingTable().Len() {
								continue
							}
							fi := int(d.MappingTable().At(mi).FilenameStrindex())
							if fi >= strs.Len() || !strings.HasSuffix(strs.At(fi), suffix) {
								continue
							}
							if loc.Lines().Len() > 0 {
								named++
							} else {
								unnamed++
							}
						}
					}
				}
			}
		}
	}
	return named, unnamed
}

// kernelSyscalls returns the weight of samples.kernel.count per syscall_name.
func kernelSyscalls(ms []pmetric.Metrics) (names map[string]bool, syscalls map[string]int64) {
	names, syscalls = map[string]bool{}, map[string]int64{}
	for _, md := range ms {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					names[m.Name()] = true
					if m.Name() != "samples.kernel.count" || m.Type() != pmetric.MetricTypeSum {
						continue
					}
					for _, dp := range m.Sum().DataPoints().All() {
						if v, ok := dp.Attributes().Get("syscall_name"); ok {
							syscalls[v.Str()] += dp.IntValue()
						}
					}
				}
			}
		}
	}
	return names, syscalls
}

func TestCollectorWithRealLibrary(t *testing.T) {
	lib := library(t)
	bin := collector(t)
	dir := t.TempDir()
	cpu := workload(t, "cpu")
	sys := workload(t, "syscall")

	config := fmt.Sprintf(`
receivers:
  profiling:
    samples_per_second: 99
    reporter_interval: 1s
    library_path: %s
connectors:
  profilingmetrics:
    flush_interval: 1s
exporters:
  file/profiles:
    path: %s
  file/metrics:
    path: %s
service:
  pipelines:
    profiles:
      receivers: [profiling]
      exporters: [file/profiles, profilingmetrics]
    metrics:
      receivers: [profilingmetrics]
      exporters: [file/metrics]
  telemetry:
    metrics:
      level: none
`, lib, filepath.Join(dir, "profiles.jsonl"), filepath.Join(dir, "metrics.jsonl"))
	col := startCollector(t, bin, dir, "collector", config)
	// Short runs of the collector's own binary (Go start-up, busy), for
	// the check of its frames below.
	stopRuns := make(chan struct{})
	runsDone := make(chan struct{})
	go func() {
		defer close(runsDone)
		for {
			select {
			case <-stopRuns:
				return
			default:
			}
			_ = exec.Command(bin, "components").Run()
		}
	}()
	col.alive(t, runFor)
	close(stopRuns)
	<-runsDone
	col.stop(t)

	ps := readProfiles(t, filepath.Join(dir, "profiles.jsonl"))
	s := summarize(ps, int64(cpu.Process.Pid))
	t.Logf("%d payloads, %d samples; cpu workload pid %d: %d samples; syscall workload pid %d: %d samples; hot %d cold %d",
		s.payloads, s.total, cpu.Process.Pid, s.perPID[int64(cpu.Process.Pid)], sys.Process.Pid,
		s.perPID[int64(sys.Process.Pid)], s.funcs["e2e_hot"], s.funcs["e2e_cold"])
	if s.payloads == 0 || s.total == 0 {
		t.Fatalf("no profiles written\n%s", tail(dir, "collector"))
	}
	// One CPU fully busy at 99 Hz for ~8 s is ~800 samples, but the
	// machine may be loaded (CI, parallel builds): demand 0.5 s of CPU.
	if got := s.perPID[int64(cpu.Process.Pid)]; got < 50 {
		t.Errorf("cpu workload: %d samples, want >= 50", got)
	}
	if s.perPID[int64(sys.Process.Pid)] == 0 {
		t.Errorf("syscall workload: no samples")
	}
	// Known call graph: e2e_hot runs three times as long as e2e_cold.
	hot, cold := s.funcs["e2e_hot"], s.funcs["e2e_cold"]
	if hot == 0 || cold == 0 {
		t.Errorf("workload functions not found in the stacks (e2e_hot %d, e2e_cold %d)", hot, cold)
	} else if r := float64(hot) / float64(cold); r < 1.5 || r > 6 {
		t.Errorf("e2e_hot/e2e_cold = %.2f, want about 3 (accepted 1.5..6)", r)
	}
	if s.funcs["e2e_loop"] == 0 || s.funcs["main"] == 0 {
		t.Errorf("callers missing from the stacks: e2e_loop %d, main %d", s.funcs["e2e_loop"], s.funcs["main"])
	}

	// The collector's binary is big: 127 MB, a 42 MB Go function table,
	// more than a file's symbol budget holds as a copy. Its functions are
	// named from the table read in place.
	named, unnamed := fileFrames(ps, "/otelcol-profiler")
	t.Logf("frames in the collector's binary: %d named, %d not", named, unnamed)
	if named < 100 || unnamed*50 > named+unnamed {
		t.Errorf("frames in the collector's binary: %d named, %d not (want >= 100, at most 2%% unnamed)", named, unnamed)
	}

	names, syscalls := kernelSyscalls(readMetrics(t, filepath.Join(dir, "metrics.jsonl")))
	t.Logf("metrics: %v; kernel samples by syscall: %v", names, syscalls)
	for _, n := range []string{"samples.user.count", "samples.native.count", "samples.kernel.count"} {
		if !names[n] {
			t.Errorf("metric %s missing", n)
		}
	}
	if syscalls["write"] == 0 {
		t.Errorf("no samples.kernel.count with syscall_name=write for the write(2) workload")
	}
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestAgentGatewayOverLoopback(t *testing.T) {
	lib := library(t)
	bin := collector(t)
	dir := t.TempDir()
	cpu := workload(t, "cpu")
	cfgDir, _ := filepath.Abs(filepath.Join("..", "..", "collector-config"))
	agentCfg, err := os.ReadFile(filepath.Join(cfgDir, "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	gatewayCfg, err := os.ReadFile(filepath.Join(cfgDir, "gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"OTELPROF_GATEWAY_ENDPOINT=" + freePort(t), "OTELPROF_LIBRARY=" + lib}
	gw := startCollector(t, bin, dir, "gateway", string(gatewayCfg), env...)
	time.Sleep(time.Second)
	agent := startCollector(t, bin, dir, "agent",
		strings.Replace(string(agentCfg), "reporter_interval: 5s", "reporter_interval: 1s", 1), env...)
	agent.alive(t, 6*time.Second)
	agent.stop(t)
	time.Sleep(500 * time.Millisecond)
	gw.stop(t)

	ps := readProfiles(t, filepath.Join(dir, "out", "gateway", "profiles.jsonl"))
	s := summarize(ps, int64(cpu.Process.Pid))
	t.Logf("gateway wrote %d payloads, %d samples (%d from the workload)", s.payloads, s.total, s.perPID[int64(cpu.Process.Pid)])
	if s.perPID[int64(cpu.Process.Pid)] == 0 {
		t.Fatalf("the workload's samples did not reach the gateway\nagent:\n%s\ngateway:\n%s", tail(dir, "agent"), tail(dir, "gateway"))
	}
	names, _ := kernelSyscalls(readMetrics(t, filepath.Join(dir, "out", "gateway", "metrics.jsonl")))
	if !names["samples.user.count"] {
		t.Errorf("gateway metrics lack samples.user.count: %v", names)
	}
}

// The receiver's off_cpu_threshold reaches the library: with every
// switch-out recorded, the payloads carry off-CPU profiles (sample type
// events/nanoseconds, one positive value per timestamp). The exact
// figures are judged by test/integration/offcpu_test.go.
func TestCollectorOffCPU(t *testing.T) {
	lib := library(t)
	bin := collector(t)
	dir := t.TempDir()
	sys := workload(t, "syscall")

	config := fmt.Sprintf(`
receivers:
  profiling:
    samples_per_second: 19
    reporter_interval: 1s
    off_cpu_threshold: 1
    library_path: %s
exporters:
  file/profiles:
    path: %s
service:
  pipelines:
    profiles:
      receivers: [profiling]
      exporters: [file/profiles]
  telemetry:
    metrics:
      level: none
`, lib, filepath.Join(dir, "profiles.jsonl"))
	col := startCollector(t, bin, dir, "collector", config)
	col.alive(t, 4*time.Second)
	col.stop(t)

	var offProfiles, events int
	var sysEvents int
	for _, p := range readProfiles(t, filepath.Join(dir, "profiles.jsonl")) {
		d := p.Dictionary()
		str := func(i int32) string {
			if i < 0 || int(i) >= d.StringTable().Len() {
				return ""
			}
			return d.StringTable().At(int(i))
		}
		for _, rp := range p.ResourceProfiles().All() {
			var pid int64 = -1
			if v, ok := rp.Resource().Attributes().Get("process.pid"); ok {
				pid = v.Int()
			}
			for _, sp := range rp.ScopeProfiles().All() {
				for _, pr := range sp.Profiles().All() {
					st := pr.SampleType()
					if str(st.TypeStrindex()) != "events" {
						continue
					}
					offProfiles++
					if str(st.UnitStrindex()) != "nanoseconds" {
						t.Errorf("off-CPU profile unit %q", str(st.UnitStrindex()))
					}
					for _, smp := range pr.Samples().All() {
						if smp.Values().Len() != smp.TimestampsUnixNano().Len() {
							t.Fatalf("off-CPU sample: %d values, %d timestamps", smp.Values().Len(), smp.TimestampsUnixNano().Len())
						}
						for _, v := range smp.Values().All() {
							if v <= 0 {
								t.Errorf("off-CPU value %d", v)
							}
							events++
							if pid == int64(sys.Process.Pid) {
								sysEvents++
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d off-CPU profiles, %d events, %d of the syscall workload", offProfiles, events, sysEvents)
	if offProfiles == 0 || events == 0 {
		t.Fatalf("no off-CPU profile with off_cpu_threshold 1\n%s", tail(dir, "collector"))
	}
}
