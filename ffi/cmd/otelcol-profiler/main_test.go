// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/featuregate"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/libotelprofiler/libotelprofiler/ffi/internal/fakelib"
	"github.com/libotelprofiler/libotelprofiler/ffi/internal/testprofiles"
)

// configDir is absolute: some tests change the working directory.
var configDir = func() string {
	d, err := filepath.Abs(filepath.Join("..", "..", "..", "collector-config"))
	if err != nil {
		panic(err)
	}
	return d
}()

func init() {
	// What main does before building the command.
	if err := featuregate.GlobalRegistry().Set(profilesGate, true); err != nil {
		panic(err)
	}
}

func TestEmbeddedConfigInSync(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(configDir, "local.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, localYAML) {
		t.Fatal("cmd/otelcol-profiler/local.yaml differs from collector-config/local.yaml: " +
			"cp ../collector-config/local.yaml cmd/otelcol-profiler/local.yaml")
	}
}

func validate(t *testing.T, args ...string) error {
	t.Helper()
	cmd := otelcol.NewCommand(settings())
	cmd.SetArgs(withDefaultConfig(append([]string{"validate"}, args...)))
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	return cmd.Execute()
}

func TestValidateShippedConfigs(t *testing.T) {
	files := []string{"local.yaml", "agent.yaml", "gateway.yaml"}
	k8s, _ := filepath.Glob(filepath.Join(configDir, "k8s", "collector-config.yaml"))
	for _, f := range files {
		if err := validate(t, "--config", filepath.Join(configDir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	// Set by the DaemonSet from spec.nodeName.
	t.Setenv("K8S_NODE_NAME", "node-1")
	for _, f := range k8s {
		if err := validate(t, "--config", f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if len(k8s) == 0 {
		t.Error("collector-config/k8s/collector-config.yaml missing")
	}
	// The embedded default.
	if err := validate(t); err != nil {
		t.Errorf("embedded local.yaml: %v", err)
	}
}

func TestValidateRejects(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"unknown receiver key": "receivers: {profiling: {sampels_per_second: 9}}",
		"unsupported key":      "receivers: {profiling: {off_cpu_threshold: 0.5}}",
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".yaml")
		cfg := body + "\nexporters: {debug: {}}\nservice: {pipelines: {profiles: {receivers: [profiling], exporters: [debug]}}}\n"
		if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := validate(t, "--config", p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestDefaultConfigArgs(t *testing.T) {
	def := "--config=embedded:local.yaml"
	for _, tc := range []struct {
		in   []string
		want []string
	}{
		{nil, []string{def}},
		{[]string{"--feature-gates", "+x"}, []string{"--feature-gates", "+x", def}},
		{[]string{"validate"}, []string{"validate", def}},
		{[]string{"--config", "a.yaml"}, []string{"--config", "a.yaml"}},
		{[]string{"--config=a.yaml"}, []string{"--config=a.yaml"}},
		{[]string{"components"}, []string{"components"}},
		{[]string{"--help"}, []string{"--help"}},
	} {
		if got := withDefaultConfig(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("withDefaultConfig(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// runCollector runs the collector in-process with the given config URIs
// until stop returns true (or 20 s pass), then shuts it down.
func runCollector(t *testing.T, uris []string, stop func() bool) {
	t.Helper()
	set := settings()
	set.ConfigProviderSettings.ResolverSettings.URIs = uris
	set.SkipSettingGRPCLogger = true
	col, err := otelcol.NewCollector(set)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- col.Run(context.Background()) }()
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !stop() {
		select {
		case err := <-done:
			t.Fatalf("collector exited early: %v", err)
		case <-deadline:
			col.Shutdown()
			<-done
			t.Fatal("timed out")
		case <-tick.C:
		}
	}
	col.Shutdown()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("collector did not shut down within 10s")
	}
}

// readJSONLines decodes the complete (newline-terminated) lines of path; a
// line still being written is ignored.
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

func metricsIn(t *testing.T, path string) []pmetric.Metrics {
	t.Helper()
	u := &pmetric.JSONUnmarshaler{}
	out, err := readJSONLines(path, u.UnmarshalMetrics)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func metricNames(mds []pmetric.Metrics) map[string]bool {
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

func fastOverrides() []string {
	return []string{
		"yaml:receivers::profiling::reporter_interval: 100ms",
		"yaml:connectors::profilingmetrics::flush_interval: 100ms",
		"yaml:exporters::debug::verbosity: basic",
		"yaml:service::telemetry::metrics::level: none",
	}
}

// TestLocalPipelineWithFakeLibrary runs local.yaml (the embedded default)
// against the fake library: profiles and derived metrics reach ./out.
func TestLocalPipelineWithFakeLibrary(t *testing.T) {
	lib, dir := fakelib.Build(t)
	fakelib.WritePayload(t, dir, testprofiles.Canned(uint64(time.Now().UnixNano())), 3)
	t.Setenv("OTELPROF_LIBRARY", lib)
	work := t.TempDir()
	t.Chdir(work)
	profiles := filepath.Join(work, "out", "profiles.jsonl")
	metrics := filepath.Join(work, "out", "metrics.jsonl")
	uris := append([]string{embeddedScheme + ":" + embeddedName}, fastOverrides()...)
	runCollector(t, uris, func() bool {
		return len(profilesIn(t, profiles)) >= 2 && metricNames(metricsIn(t, metrics))["samples.kernel.count"]
	})
	ps := profilesIn(t, profiles)
	if ps[0].SampleCount() != 3 {
		t.Errorf("file exporter wrote %d samples, want 3", ps[0].SampleCount())
	}
	names := metricNames(metricsIn(t, metrics))
	for _, n := range []string{"samples.kernel.count", "samples.native.count", "samples.user.count"} {
		if !names[n] {
			t.Errorf("metric %s missing from %s: %v", n, metrics, names)
		}
	}
}

// TestAgentGatewayWithFakeLibrary runs agent.yaml and gateway.yaml in one
// process over a loopback port.
func TestAgentGatewayWithFakeLibrary(t *testing.T) {
	lib, dir := fakelib.Build(t)
	fakelib.WritePayload(t, dir, testprofiles.Canned(uint64(time.Now().UnixNano())), 3)
	t.Setenv("OTELPROF_LIBRARY", lib)
	t.Setenv("OTELPROF_GATEWAY_ENDPOINT", "127.0.0.1:24317")
	work := t.TempDir()
	t.Chdir(work)

	gwSet := settings()
	gwSet.ConfigProviderSettings.ResolverSettings.URIs = []string{
		"file:" + filepath.Join(configDir, "gateway.yaml"),
		"yaml:connectors::profilingmetrics::flush_interval: 100ms",
	}
	gwSet.SkipSettingGRPCLogger = true
	gw, err := otelcol.NewCollector(gwSet)
	if err != nil {
		t.Fatal(err)
	}
	gwDone := make(chan error, 1)
	go func() { gwDone <- gw.Run(context.Background()) }()
	defer func() {
		gw.Shutdown()
		if err := <-gwDone; err != nil {
			t.Error(err)
		}
	}()

	profiles := filepath.Join(work, "out", "gateway", "profiles.jsonl")
	metrics := filepath.Join(work, "out", "gateway", "metrics.jsonl")
	runCollector(t, []string{
		"file:" + filepath.Join(configDir, "agent.yaml"),
		"yaml:receivers::profiling::reporter_interval: 100ms",
	}, func() bool {
		return len(profilesIn(t, profiles)) >= 1 && metricNames(metricsIn(t, metrics))["samples.native.count"]
	})
	p := profilesIn(t, profiles)[0]
	res := p.ResourceProfiles().At(0).Resource().Attributes()
	if v, ok := res.Get("process.pid"); !ok || v.Int() != 4242 {
		t.Errorf("resource lost between agent and gateway: %v", res.AsRaw())
	}
}
