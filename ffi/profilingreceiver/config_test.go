// SPDX-License-Identifier: Apache-2.0

package profilingreceiver

import (
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
)

func load(t *testing.T, raw map[string]any) (*Config, error) {
	t.Helper()
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	if err := confmap.NewFromStringMap(raw).Unmarshal(cfg); err != nil {
		return nil, err
	}
	return cfg, confmap.Validate(cfg)
}

func TestConfigStruct(t *testing.T) {
	if err := componenttest.CheckConfigStruct(NewFactory().CreateDefaultConfig()); err != nil {
		t.Fatal(err)
	}
}

func TestDefaults(t *testing.T) {
	cfg, err := load(t, map[string]any{})
	if err != nil {
		t.Fatalf("default config must validate: %v", err)
	}
	if cfg.SamplesPerSecond != 19 || cfg.ReporterInterval != 5*time.Second || cfg.PID != 0 ||
		cfg.LibraryPath != "" || cfg.SendIdleFrames {
		t.Fatalf("unexpected defaults: %+v", cfg)
	}
}

func TestSupportedKeys(t *testing.T) {
	cfg, err := load(t, map[string]any{
		"samples_per_second": 99,
		"reporter_interval":  "2s",
		"send_idle_frames":   true,
		"library_path":       "/opt/lib/libotelprofiler.so",
		"pid":                123,
		"host_name":          "node-1",
		"ringbuf_kb":         1024,
		"max_frames":         64,
		// Reference keys at their reference default are accepted.
		"tracers":                 "all",
		"probabilistic_threshold": 100,
		"probabilistic_interval":  "1m",
		"off_cpu_threshold":       0,
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SamplesPerSecond != 99 || cfg.ReporterInterval != 2*time.Second || !cfg.SendIdleFrames ||
		cfg.PID != 123 || cfg.HostName != "node-1" || cfg.RingbufKB != 1024 || cfg.MaxFrames != 64 {
		t.Fatalf("unexpected config: %+v", cfg)
	}
}

func TestRejected(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  map[string]any
		want string
	}{
		{"unknown key", map[string]any{"sampels_per_second": 20}, "invalid keys: sampels_per_second"},
		{"zero frequency", map[string]any{"samples_per_second": 0}, "samples_per_second must be between 1 and 10000"},
		{"huge frequency", map[string]any{"samples_per_second": 20000}, "samples_per_second must be between 1 and 10000"},
		{"bad interval", map[string]any{"reporter_interval": "0s"}, "reporter_interval must be positive"},
		{"negative pid", map[string]any{"pid": -1}, "pid must be 0"},
		{"nul host", map[string]any{"host_name": "a\x00b"}, "host_name must not contain a NUL byte"},
		{"off cpu", map[string]any{"off_cpu_threshold": 0.5}, "off_cpu_threshold is not supported by this receiver yet (off-CPU profiling is not implemented)"},
		{"probabilistic threshold", map[string]any{"probabilistic_threshold": 50}, "probabilistic_threshold is not supported"},
		{"probabilistic interval", map[string]any{"probabilistic_interval": "2m"}, "probabilistic_interval is not supported"},
		{"tracers", map[string]any{"tracers": "python,hotspot"}, `tracers is not supported by this receiver yet (only native and kernel frames are unwound (no interpreter tracers)); remove it or set it to its default "all"`},
		{"probe links", map[string]any{"probe_links": []any{"/bin/x:main"}}, "probe_links is not supported"},
		{"verbose", map[string]any{"verbose_mode": true}, "verbose_mode is not supported"},
		{"grpc", map[string]any{"max_grpc_retries": 3}, "max_grpc_retries is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.raw)
			if err == nil {
				t.Fatalf("config %v accepted", tc.raw)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestAllReasonsUsed(t *testing.T) {
	// Every unsupported key must map to a Config field (catches typos).
	cfg := createDefaultConfig()
	for key := range unsupported {
		found := false
		for _, f := range fieldsOf(cfg) {
			if f == key {
				found = true
			}
		}
		if !found {
			t.Errorf("unsupported key %q has no Config field", key)
		}
	}
}
