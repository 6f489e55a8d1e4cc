// SPDX-License-Identifier: Apache-2.0

package collectortest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/libotelprofiler/libotelprofiler/ffi/internal/fakelib"
	"github.com/libotelprofiler/libotelprofiler/ffi/internal/testprofiles"
)

// configDir is absolute: the collectors run in temporary directories.
var configDir = func() string {
	d, err := filepath.Abs(filepath.Join("..", "..", "collector-config"))
	if err != nil {
		panic(err)
	}
	return d
}()

const profilesGate = "--feature-gates=+service.profilesSupport"

// collector is the binary under test: $OTELPROF_COLLECTOR (make test-go
// sets it to build/otelcol-profiler). Missing is a failure, not a skip.
func collector(t *testing.T) string {
	t.Helper()
	p := os.Getenv("OTELPROF_COLLECTOR")
	if p == "" {
		t.Fatal("OTELPROF_COLLECTOR is not set: run `make test-go` (it builds the collector with ocb first)")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("OTELPROF_COLLECTOR=%s: %v", p, err)
	}
	return p
}

func validate(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(collector(t), append([]string{"validate", profilesGate}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestValidateShippedConfigs(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(configDir, "*.yaml"))
	k8s, _ := filepath.Glob(filepath.Join(configDir, "k8s", "*config.yaml"))
	n := 0
	for _, f := range append(files, k8s...) {
		if filepath.Base(f) == "manifest.yaml" {
			continue
		}
		n++
		cmd := exec.Command(collector(t), "validate", profilesGate, "--config", f)
		// Set by the DaemonSet from spec.nodeName.
		cmd.Env = append(os.Environ(), "K8S_NODE_NAME=node-1", "BACKEND_ENDPOINT=backend:4317")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", f, err, out)
		}
	}
	if n < 5 {
		t.Errorf("only %d configs found in %s", n, configDir)
	}
}

func TestValidateRejects(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"unknown receiver key":  "receivers: {profiling: {sampels_per_second: 9}}",
		"unsupported key":       "receivers: {profiling: {map_scale_factor: 2}}",
		"off_cpu_threshold > 1": "receivers: {profiling: {off_cpu_threshold: 1.5}}",
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".yaml")
		cfg := body + "\nexporters: {debug: {}}\nservice: {pipelines: {profiles: {receivers: [profiling], exporters: [debug]}}}\n"
		if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := validate(t, "--config", p); err == nil {
			t.Errorf("%s: accepted\n%s", name, out)
		}
	}
}

// TestComponents: the manifest's components are all in the build.
func TestComponents(t *testing.T) {
	out, err := exec.Command(collector(t), "components").CombinedOutput()
	if err != nil {
		t.Fatalf("components: %v\n%s", err, out)
	}
	for _, c := range []string{"profiling", "otlp", "memory_limiter", "resource_detection", "k8s_attributes",
		"transform", "otlp_grpc", "otlp_http", "debug", "file", "profilingmetrics", "health_check", "pprof", "zpages"} {
		if !bytes.Contains(out, []byte("name: "+c+"\n")) {
			t.Errorf("component %s missing from `components`", c)
		}
	}
}

// running is a collector process with its output captured.
type running struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan error
}

func start(t *testing.T, dir string, env []string, uris ...string) *running {
	t.Helper()
	args := []string{profilesGate}
	for _, u := range uris {
		args = append(args, "--config", u)
	}
	r := &running{cmd: exec.Command(collector(t), args...), done: make(chan error, 1)}
	r.cmd.Dir = dir
	r.cmd.Env = append(os.Environ(), env...)
	r.cmd.Stdout = &r.out
	r.cmd.Stderr = &r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop sends SIGTERM and waits up to 15 s for a clean exit.
func (r *running) stop(t *testing.T) {
	if r.cmd.ProcessState != nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("collector exited with %v\n%s", err, r.out.String())
		}
	case <-time.After(15 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
		t.Errorf("collector did not stop within 15 s of SIGTERM\n%s", r.out.String())
	}
}

// waitFor polls cond until it holds, the collector exits, or 30 s pass.
func (r *running) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		select {
		case err := <-r.done:
			r.done <- err
			t.Fatalf("collector exited before %s: %v\n%s", what, err, r.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s\n%s", what, r.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readJSONLines decodes the complete (newline-terminated) lines of path.
func readJSONLines[T any](path string, unmarshal func([]byte) (T, error)) ([]T, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil
	}
	var out []T
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		v, err := unmarshal(line)
		if err != nil {
			return out, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func profilesIn(t *testing.T, path string) []pprofile.Profiles {
	t.Helper()
	u := &pprofile.JSONUnmarshaler{}
	out, err := readJSONLines(path, u.UnmarshalProfiles)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func metricNames(t *testing.T, path string) map[string]bool {
	t.Helper()
	u := &pmetric.JSONUnmarshaler{}
	mds, err := readJSONLines(path, u.UnmarshalMetrics)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, md := range mds {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					out[m.Name()] = true
				}
			}
		}
	}
	return out
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestLocalPipelineWithFakeLibrary runs local.yaml against the fake
// library: profiles and derived metrics reach ./out.
func TestLocalPipelineWithFakeLibrary(t *testing.T) {
	lib, dir := fakelib.Build(t)
	fakelib.WritePayload(t, dir, testprofiles.Canned(uint64(time.Now().UnixNano())), 3)
	work := t.TempDir()
	r := start(t, work, []string{"OTELPROF_LIBRARY=" + lib},
		"file:"+filepath.Join(configDir, "local.yaml"),
		"yaml:receivers::profiling::reporter_interval: 100ms",
		"yaml:exporters::debug::verbosity: basic",
		"yaml:service::telemetry::metrics::level: none")
	profiles := filepath.Join(work, "out", "profiles.jsonl")
	metrics := filepath.Join(work, "out", "metrics.jsonl")
	r.waitFor(t, "profiles and metrics", func() bool {
		return len(profilesIn(t, profiles)) >= 2 && metricNames(t, metrics)["samples.kernel.count"]
	})
	if n := profilesIn(t, profiles)[0].SampleCount(); n != 3 {
		t.Errorf("file exporter wrote %d samples, want 3", n)
	}
	names := metricNames(t, metrics)
	for _, n := range []string{"samples.kernel.count", "samples.native.count", "samples.user.count"} {
		if !names[n] {
			t.Errorf("metric %s missing from %s: %v", n, metrics, names)
		}
	}
}

// TestAgentGatewayWithFakeLibrary runs agent.yaml and gateway.yaml as two
// processes over a loopback port; the agent's health_check answers.
func TestAgentGatewayWithFakeLibrary(t *testing.T) {
	lib, dir := fakelib.Build(t)
	fakelib.WritePayload(t, dir, testprofiles.Canned(uint64(time.Now().UnixNano())), 3)
	work := t.TempDir()
	gwAddr := freePort(t)
	env := []string{"OTELPROF_LIBRARY=" + lib, "OTELPROF_GATEWAY_ENDPOINT=" + gwAddr,
		"OTELPROF_GATEWAY_HEALTH_ENDPOINT=" + freePort(t)}
	start(t, work, env, "file:"+filepath.Join(configDir, "gateway.yaml"),
		"yaml:connectors::profilingmetrics::flush_interval: 100ms")
	health := freePort(t)
	agent := start(t, work, append(env, "OTELPROF_AGENT_HEALTH_ENDPOINT="+health),
		"file:"+filepath.Join(configDir, "agent.yaml"),
		"yaml:receivers::profiling::reporter_interval: 100ms")
	profiles := filepath.Join(work, "out", "gateway", "profiles.jsonl")
	metrics := filepath.Join(work, "out", "gateway", "metrics.jsonl")
	agent.waitFor(t, "profiles at the gateway", func() bool {
		return len(profilesIn(t, profiles)) >= 1 && metricNames(t, metrics)["samples.native.count"]
	})
	res := profilesIn(t, profiles)[0].ResourceProfiles().At(0).Resource().Attributes()
	if v, ok := res.Get("process.pid"); !ok || v.Int() != 4242 {
		t.Errorf("resource lost between agent and gateway: %v", res.AsRaw())
	}
	resp, err := http.Get("http://" + health + "/")
	if err != nil {
		t.Fatalf("health_check: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("health_check answered %d", resp.StatusCode)
	}
}

// TestReferenceDefaultsRun: the reference receiver's configuration with
// every key at its default (profilingreceiver/testdata) validates and runs,
// in the shape of the reference's own example (profiling -> one exporter).
func TestReferenceDefaultsRun(t *testing.T) {
	keys, err := os.ReadFile(filepath.Join("..", "profilingreceiver", "testdata", "reference-defaults.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("receivers:\n  profiling:\n")
	for _, l := range strings.Split(string(keys), "\n") {
		if strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "#") {
			b.WriteString("    " + l + "\n")
		}
	}
	b.WriteString("exporters:\n  file:\n    path: ./out/profiles.jsonl\n    create_directory: true\n" +
		"service:\n  pipelines:\n    profiles:\n      receivers: [profiling]\n      exporters: [file]\n")
	work := t.TempDir()
	cfg := filepath.Join(work, "reference.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := validate(t, "--config", cfg); err != nil {
		t.Fatalf("the reference's defaults do not validate: %v\n%s\n%s", err, out, b.String())
	}
	lib, dir := fakelib.Build(t)
	fakelib.WritePayload(t, dir, testprofiles.Canned(uint64(time.Now().UnixNano())), 3)
	// reporter_interval 5s (the reference's default) with 20% jitter: the
	// first payload arrives within 6 s.
	r := start(t, work, []string{"OTELPROF_LIBRARY=" + lib}, "file:"+cfg)
	profiles := filepath.Join(work, "out", "profiles.jsonl")
	r.waitFor(t, "profiles from the reference's configuration", func() bool { return len(profilesIn(t, profiles)) >= 1 })
}
