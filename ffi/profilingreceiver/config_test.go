// SPDX-License-Identifier: Apache-2.0

package profilingreceiver

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
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
		"reporter_jitter":    0.5,
		"send_idle_frames":   true,
		"error_mode":         "ignore",
		"library_path":       "/opt/lib/libotelprofiler.so",
		"pid":                os.Getpid(),
		"host_name":          "node-1",
		"ringbuf_kb":         1024,
		"max_frames":         64,
		"symbol_budget_mb":   96,
		"file_budget_mb":     16,
		"debuginfod_urls":    []any{"http://127.0.0.1:8002", "https://debuginfod.debian.net"},
		"off_cpu_threshold":  0.25,
		// Reference keys at their reference default are accepted.
		"tracers":                 "all",
		"probabilistic_threshold": 100,
		"probabilistic_interval":  "1m",
		"max_grpc_retries":        5,
		"max_rpc_msg_size":        32 << 20,
		// Runtimes with no unwinder here: nothing to switch off.
		"interpreters":            map[string]any{"perl": map[string]any{"disabled": true}, "python": map[string]any{"disabled": false}},
		"no_kernel_version_check": true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SamplesPerSecond != 99 || cfg.ReporterInterval != 2*time.Second || !cfg.SendIdleFrames ||
		cfg.PID != os.Getpid() || cfg.HostName != "node-1" || cfg.RingbufKB != 1024 || cfg.MaxFrames != 64 ||
		cfg.ReporterJitter != 0.5 || cfg.ErrorMode != "ignore" || !cfg.Interpreters.Perl.Disabled ||
		cfg.SymbolBudgetMB != 96 || cfg.FileBudgetMB != 16 || cfg.OffCPUThreshold != 0.25 ||
		!reflect.DeepEqual(cfg.DebuginfodURLs, []string{"http://127.0.0.1:8002", "https://debuginfod.debian.net"}) {
		t.Fatalf("unexpected config: %+v", cfg)
	}
}

// The reference receiver's keys, all at the reference's defaults, load and
// validate unchanged (testdata/reference-defaults.yaml).
func TestReferenceDefaultsAccepted(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "reference-defaults.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	if err := cm.Unmarshal(cfg); err != nil {
		t.Fatalf("reference defaults do not load: %v", err)
	}
	if err := confmap.Validate(cfg); err != nil {
		t.Fatalf("reference defaults do not validate: %v", err)
	}
	if cfg.SamplesPerSecond != 20 {
		t.Errorf("samples_per_second = %d, want the file's 20", cfg.SamplesPerSecond)
	}
	// Every key of the reference's Config is in the file.
	for _, k := range []string{"reporter_interval", "reporter_jitter", "monitor_interval", "samples_per_second",
		"frame_cache_size", "probabilistic_interval", "probabilistic_threshold", "interpreters", "clock_sync_interval",
		"send_error_frames", "send_idle_frames", "filter_min_process_age", "verbose_mode", "off_cpu_threshold",
		"include_env_vars", "map_scale_factor", "bpf_verifier_log_level", "no_kernel_version_check",
		"max_grpc_retries", "max_rpc_msg_size", "bpf_fs_root", "error_mode", "obi_process_ctx",
		"pid_namespace_translation", "pin_cpu_ids", "probes"} {
		if !cm.IsSet(k) {
			t.Errorf("reference key %s missing from testdata/reference-defaults.yaml", k)
		}
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
		{"zero interval", map[string]any{"reporter_interval": "0s"}, "reporter_interval must be at least 10ms"},
		{"interval without unit", map[string]any{"reporter_interval": 5}, "reporter_interval: 5 has no unit"},
		{"interval string without unit", map[string]any{"reporter_interval": "5"}, `reporter_interval: "5" has no unit`},
		{"reference duration without unit", map[string]any{"monitor_interval": 5}, "monitor_interval: 5 has no unit"},
		{"jitter", map[string]any{"reporter_jitter": 1.5}, "reporter_jitter must be in [0, 1]"},
		{"go memory limit", map[string]any{"go_memory_limit_mib": -2}, "go_memory_limit_mib must be -1"},
		{"error mode", map[string]any{"error_mode": "panic"}, `error_mode must be "propagate" or "ignore"`},
		{"negative pid", map[string]any{"pid": -1}, "pid must be 0"},
		{"missing pid", map[string]any{"pid": 1<<31 - 2}, "no such process on this host"},
		{"ringbuf too small", map[string]any{"ringbuf_kb": 4}, "ringbuf_kb must be 0 (sized by the library) or between 64 and 1048576"},
		{"ringbuf too large", map[string]any{"ringbuf_kb": 1<<20 + 1}, "ringbuf_kb must be 0"},
		{"max frames", map[string]any{"max_frames": 513}, "max_frames must be 0 (library default) or at most 512"},
		{"nul host", map[string]any{"host_name": "a\x00b"}, "host_name must not contain a NUL byte"},
		{"debuginfod scheme", map[string]any{"debuginfod_urls": []any{"ftp://x"}}, `debuginfod_urls: "ftp://x" is not an http:// or https:// URL`},
		{"debuginfod space", map[string]any{"debuginfod_urls": []any{"http://a http://b"}}, "debuginfod_urls: \"http://a http://b\" is not"},
		{"debuginfod many", map[string]any{"debuginfod_urls": []any{"http://1", "http://2", "http://3", "http://4", "http://5", "http://6", "http://7", "http://8", "http://9"}}, "debuginfod_urls: at most 8 servers, got 9"},
		{"probabilistic threshold 0", map[string]any{"probabilistic_threshold": 0}, "probabilistic_threshold must be between 1 and 100 (100: always on), got 0"},
		{"probabilistic threshold 101", map[string]any{"probabilistic_threshold": 101}, "probabilistic_threshold must be between 1 and 100"},
		{"probabilistic interval short", map[string]any{"probabilistic_interval": "500ms"}, "probabilistic_interval must be between 1s and 5m0s in whole milliseconds, got 500ms"},
		{"probabilistic interval long", map[string]any{"probabilistic_interval": "6m"}, "probabilistic_interval must be between 1s and 5m0s"},
		{"probabilistic interval no unit", map[string]any{"probabilistic_interval": 60}, "probabilistic_interval: 60 has no unit"},
		{"env vars empty name", map[string]any{"include_env_vars": "A,,B"}, `include_env_vars: "" is not an environment variable name`},
		{"env vars equals", map[string]any{"include_env_vars": "A=1"}, `include_env_vars: "A=1" is not`},
		{"env vars many", map[string]any{"include_env_vars": "A,B,C,D,E,F,G,H,I,J,K,L,M,N,O,P,Q"}, "include_env_vars: at most 16 names, got 17"},
		{"adaptive metric", map[string]any{"max_samples_per_second": 200, "adaptive": map[string]any{"rules": []any{map[string]any{"name": "z", "metric": "samples.user.count", "shlib_name": "libz", "group_by": "host", "threshold": 0.1, "samples_per_second": 99, "duration": "30s"}}}}, `adaptive.rules[0]: metric "samples.user.count" is not supported`},
		{"adaptive over ceiling", map[string]any{"max_samples_per_second": 50, "adaptive": map[string]any{"rules": []any{map[string]any{"name": "z", "metric": "samples.native.count", "shlib_name": "libz", "group_by": "pod", "threshold": 0.1, "samples_per_second": 99, "duration": "30s"}}}}, "adaptive.rules[0]: samples_per_second must be above samples_per_second (19) and at most max_samples_per_second, got 99"},
		{"adaptive group", map[string]any{"adaptive": map[string]any{"rules": []any{map[string]any{"name": "z", "metric": "samples.native.count", "shlib_name": "libz", "group_by": "pod", "threshold": 0.1, "samples_per_second": 99, "duration": "30s"}}}}, `group_by must be host, service or process, got "pod"`},
		{"max rate below rate", map[string]any{"samples_per_second": 99, "max_samples_per_second": 50}, "max_samples_per_second must be 0 (sized by the library) or between samples_per_second (99) and 10000, got 50"},
		{"off cpu above 1", map[string]any{"off_cpu_threshold": 1.5}, "off_cpu_threshold must be a probability in [0, 1] (0 = off), got 1.5"},
		{"off cpu negative", map[string]any{"off_cpu_threshold": -0.1}, "off_cpu_threshold must be a probability in [0, 1] (0 = off), got -0.1"},
		{"off cpu nan", map[string]any{"off_cpu_threshold": math.NaN()}, "off_cpu_threshold must be a probability in [0, 1] (0 = off), got NaN"},
		{"tracers", map[string]any{"tracers": "python,hotspot"}, `tracers is not supported by this receiver (replaced by ` + "`interpreters`" + ` in the reference; use that key); remove it or set it to the reference's default "all"`},
		{"python off", map[string]any{"interpreters": map[string]any{"python": map[string]any{"disabled": true}}}, "interpreters.python.disabled is not supported by this receiver"},
		{"hotspot off", map[string]any{"interpreters": map[string]any{"hotspot": map[string]any{"disabled": true}}}, "interpreters.hotspot.disabled is not supported by this receiver"},
		{"probe links", map[string]any{"probe_links": []any{"/bin/x:main"}}, "probe_links is not supported"},
		{"probes", map[string]any{"probes": []any{map[string]any{"type": "kprobe", "symbol": "vfs_open"}}}, "probes is not supported"},
		{"verbose", map[string]any{"verbose_mode": true}, "verbose_mode is not supported"},
		{"grpc", map[string]any{"max_grpc_retries": 3}, "max_grpc_retries is not supported"},
		{"frame cache", map[string]any{"frame_cache_size": 2048}, "frame_cache_size is not supported"},
		{"pin cpus", map[string]any{"pin_cpu_ids": "0-1"}, "pin_cpu_ids is not supported"},
		{"bpffs", map[string]any{"bpf_fs_root": "/mnt/bpf"}, "bpf_fs_root is not supported"},
		{"min age", map[string]any{"filter_min_process_age": "1s"}, "filter_min_process_age is not supported"},
		{"unknown interpreter", map[string]any{"interpreters": map[string]any{"cobol": map[string]any{"disabled": true}}}, "cobol"},
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

// The implemented reference keys take their values (not only the default).
func TestImplementedReferenceKeys(t *testing.T) {
	cfg, err := load(t, map[string]any{
		"probabilistic_threshold": 50,
		"probabilistic_interval":  "1s",
		"include_env_vars":        "DEPLOY_ENV,HOME",
		"max_samples_per_second":  250,
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ProbabilisticThreshold != 50 || cfg.ProbabilisticInterval != time.Second ||
		cfg.IncludeEnvVars != "DEPLOY_ENV,HOME" || cfg.MaxSamplesPerSecond != 250 {
		t.Fatalf("decoded %+v", cfg)
	}
}

func TestAllReasonsUsed(t *testing.T) {
	// Every reference key not always accepted has a reason, and every
	// reason names a field (catches typos).
	keys := map[string]bool{}
	rt := reflect.TypeOf(referenceKeys{})
	for i := 0; i < rt.NumField(); i++ {
		k := strings.Split(rt.Field(i).Tag.Get("mapstructure"), ",")[0]
		keys[k] = true
		if referenceReasons[k] == "" && !alwaysAccepted[k] {
			t.Errorf("reference key %q has no reason", k)
		}
	}
	for k := range referenceReasons {
		if !keys[k] {
			t.Errorf("reason for %q, which is not a field", k)
		}
	}
}
