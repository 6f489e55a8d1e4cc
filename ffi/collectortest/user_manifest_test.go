// SPDX-License-Identifier: Apache-2.0

package collectortest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUserManifestBuilds builds a collector the way a user would: an ocb
// manifest naming only the receiver module (plus the OTLP exporter, as in
// the reference's example pipeline; the builder's default config
// providers), with
// the one local path a user of an unpublished module needs, no replaces
// and no extra flags. The builder is $OTELPROF_BUILDER (make installs it).
// Against the module graph that pulled the legacy root module
// go.opentelemetry.io/collector v0.160.0 this fails: "internal/statusutil:
// ambiguous import" (otlpexporter imports it).
func TestUserManifestBuilds(t *testing.T) {
	builder := os.Getenv("OTELPROF_BUILDER")
	if builder == "" {
		t.Fatal("OTELPROF_BUILDER is not set: run `make test-go` (it installs the builder)")
	}
	ffi, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "dist")
	manifest := `dist:
  name: my-otelcol
  description: a user's collector with the profiling receiver
  output_path: ` + out + `
receivers:
  - gomod: github.com/libotelprofiler/libotelprofiler/ffi v0.0.0
    import: github.com/libotelprofiler/libotelprofiler/ffi/profilingreceiver
    path: ` + ffi + `
exporters:
  - gomod: go.opentelemetry.io/collector/exporter/otlpexporter v0.165.0
`
	mf := filepath.Join(dir, "manifest.yaml")
	if err := os.WriteFile(mf, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(builder, "--config", mf)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	t0 := time.Now()
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ocb failed on a manifest naming only the receiver: %v\n%s", err, b)
	}
	t.Logf("built in %.0f s", time.Since(t0).Seconds())
	gomod, err := os.ReadFile(filepath.Join(out, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(gomod), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "replace ") && !strings.Contains(l, "libotelprofiler/ffi") {
			t.Errorf("generated go.mod needs a replace beyond the local module: %s", l)
		}
		if strings.Contains(l, "go.opentelemetry.io/collector v") {
			t.Errorf("legacy root collector module in the graph: %s", l)
		}
	}
	bin := filepath.Join(out, "my-otelcol")
	got, err := exec.Command(bin, "components").CombinedOutput()
	if err != nil || !strings.Contains(string(got), "name: profiling\n") {
		t.Fatalf("components: %v\n%s", err, got)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("receivers: {profiling: {}}\nexporters: {otlp_grpc: {endpoint: \"127.0.0.1:4317\"}}\n"+
		"service: {pipelines: {profiles: {receivers: [profiling], exporters: [otlp_grpc]}}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := exec.Command(bin, "validate", profilesGate, "--config", cfg).CombinedOutput(); err != nil {
		t.Fatalf("validate: %v\n%s", err, got)
	}
}
