// SPDX-License-Identifier: Apache-2.0

package profilingreceiver // import "github.com/libotelprofiler/libotelprofiler/ffi/profilingreceiver"

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// referenceKeys are the keys of the reference receiver's configuration
// (opentelemetry-ebpf-profiler collector/config) that this receiver does not
// implement, plus keys the reference used to have (tracers, probe_links,
// load_probe, go_labels_map_scale_factor), so that a configuration written
// for the reference loads by name. Each is accepted at the reference's
// default (referenceDefaults); any other value is rejected with the reason
// in referenceReasons. reporter_interval, reporter_jitter,
// samples_per_second, send_idle_frames, error_mode and off_cpu_threshold
// are implemented (Config).
type referenceKeys struct {
	MonitorInterval         time.Duration `mapstructure:"monitor_interval"`
	FrameCacheSize          uint          `mapstructure:"frame_cache_size"`
	ProbabilisticInterval   time.Duration `mapstructure:"probabilistic_interval"`
	ProbabilisticThreshold  uint          `mapstructure:"probabilistic_threshold"`
	Interpreters            Interpreters  `mapstructure:"interpreters"`
	ClockSyncInterval       time.Duration `mapstructure:"clock_sync_interval"`
	SendErrorFrames         bool          `mapstructure:"send_error_frames"`
	FilterMinProcessAge     time.Duration `mapstructure:"filter_min_process_age"`
	VerboseMode             bool          `mapstructure:"verbose_mode"`
	IncludeEnvVars          string        `mapstructure:"include_env_vars"`
	MapScaleFactor          uint          `mapstructure:"map_scale_factor"`
	BPFVerifierLogLevel     uint          `mapstructure:"bpf_verifier_log_level"`
	NoKernelVersionCheck    bool          `mapstructure:"no_kernel_version_check"`
	MaxGRPCRetries          uint32        `mapstructure:"max_grpc_retries"`
	MaxRPCMsgSize           int           `mapstructure:"max_rpc_msg_size"`
	BPFFSRoot               string        `mapstructure:"bpf_fs_root"`
	OBIProcessCtx           bool          `mapstructure:"obi_process_ctx"`
	PIDNamespaceTranslation bool          `mapstructure:"pid_namespace_translation"`
	PinCPUIDs               string        `mapstructure:"pin_cpu_ids"`
	Probes                  []Probe       `mapstructure:"probes"`

	// Keys of earlier reference releases.
	Tracers             string   `mapstructure:"tracers"`
	ProbeLinks          []string `mapstructure:"probe_links"`
	LoadProbe           bool     `mapstructure:"load_probe"`
	GoLabelsScaleFactor uint     `mapstructure:"go_labels_map_scale_factor"`
}

// Probe is one entry of the reference's `probes` list (type plus
// probe-specific keys); this receiver has none to attach.
type Probe struct {
	Type   string         `mapstructure:"type"`
	Config map[string]any `mapstructure:",remain"`
}

// Interpreters mirrors the reference's `interpreters` block, where each
// interpreter unwinder can be disabled. The library's CPython and HotSpot
// unwinders are always on (they cost nothing in processes without that
// runtime), so disabling python or hotspot is refused (validateInterpreters)
// rather than silently ignored; the other runtimes have no unwinder here
// to switch off (their JIT maps and Go's pclntab are read as symbols), so
// their settings change nothing and are accepted.
type Interpreters struct {
	Python  InterpreterToggle `mapstructure:"python"`
	Perl    InterpreterToggle `mapstructure:"perl"`
	PHP     InterpreterToggle `mapstructure:"php"`
	Hotspot InterpreterToggle `mapstructure:"hotspot"`
	Ruby    RubyInterpreter   `mapstructure:"ruby"`
	V8      InterpreterToggle `mapstructure:"v8"`
	Dotnet  InterpreterToggle `mapstructure:"dotnet"`
	Go      GoInterpreter     `mapstructure:"go"`
	BEAM    InterpreterToggle `mapstructure:"beam"`
	LuaJIT  InterpreterToggle `mapstructure:"luajit"`
}

// InterpreterToggle is the reference's per-interpreter base setting.
type InterpreterToggle struct {
	Disabled bool `mapstructure:"disabled"`
}

// GoInterpreter is the reference's Go setting.
type GoInterpreter struct {
	Disabled      bool              `mapstructure:"disabled"`
	Labels        InterpreterToggle `mapstructure:"labels"`
	Symbolization InterpreterToggle `mapstructure:"symbolization"`
}

// RubyInterpreter is the reference's Ruby setting.
type RubyInterpreter struct {
	Disabled         bool `mapstructure:"disabled"`
	SkipNativeResume bool `mapstructure:"skip_native_resume"`
}

// referenceDefaults are the reference receiver's defaults
// (collector/factory_linux.go defaultConfig).
func referenceDefaults() referenceKeys {
	return referenceKeys{
		MonitorInterval:        5 * time.Second,
		FrameCacheSize:         16384,
		ProbabilisticInterval:  time.Minute,
		ProbabilisticThreshold: 100,
		ClockSyncInterval:      3 * time.Minute,
		MaxGRPCRetries:         5,
		MaxRPCMsgSize:          32 << 20,
		BPFFSRoot:              "/sys/fs/bpf/",
		Tracers:                "all",
	}
}

// referenceReasons: why a non-default value of each key is refused. Keys
// missing here accept any value (see alwaysAccepted).
var referenceReasons = map[string]string{
	"monitor_interval":           "the library's counters are exported as receiver telemetry (otelcol_receiver_profiling_*) instead",
	"frame_cache_size":           "symbolized frames are kept per mapped file by the library, not in a frame cache",
	"clock_sync_interval":        "timestamps come from the library's own boot-to-wall-clock conversion, refreshed every poll",
	"send_error_frames":          "error frames are not emitted; unwinding failures are counted in otelcol_receiver_profiling_unwind_*",
	"filter_min_process_age":     "every process is profiled from its first sample",
	"verbose_mode":               "use the collector's service::telemetry::logs::level",
	"map_scale_factor":           "BPF map sizes are chosen by the library (see ringbuf_kb)",
	"bpf_verifier_log_level":     "the verifier log is returned in the start error when loading fails",
	"max_grpc_retries":           "this receiver does not export; configure retries on an exporter",
	"max_rpc_msg_size":           "this receiver does not export; configure the size on an exporter",
	"bpf_fs_root":                "no BPF objects are pinned",
	"obi_process_ctx":            "process context is read from OTEP 4719 publications (/memfd:OTEL_CTX) only",
	"pid_namespace_translation":  "process.pid is always the host's pid",
	"pin_cpu_ids":                "every online CPU is sampled",
	"probes":                     "no probes can be attached (kprobes and uprobes are not used)",
	"tracers":                    "replaced by `interpreters` in the reference; use that key",
	"probe_links":                "uprobe links are not implemented",
	"load_probe":                 "uprobe links are not implemented",
	"go_labels_map_scale_factor": "Go labels are not collected",
}

// alwaysAccepted keys are not compared with the reference's default:
// interpreters (checked by validateInterpreters) and
// no_kernel_version_check (the library probes kernel features, it never
// checks the version: every value means the same).
var alwaysAccepted = map[string]bool{
	"interpreters":            true,
	"no_kernel_version_check": true,
	// implemented, checked by validateImplementedReferenceKeys
	"probabilistic_interval":  true,
	"probabilistic_threshold": true,
	"include_env_vars":        true,
}

func (k referenceKeys) validate() []error {
	errs := k.Interpreters.validate()
	def := reflect.ValueOf(referenceDefaults())
	cur := reflect.ValueOf(k)
	t := cur.Type()
	for i := 0; i < t.NumField(); i++ {
		key := strings.Split(t.Field(i).Tag.Get("mapstructure"), ",")[0]
		if alwaysAccepted[key] {
			continue
		}
		a, b := cur.Field(i), def.Field(i)
		if a.Kind() == reflect.Slice && a.Len() == 0 && b.Len() == 0 {
			continue
		}
		if reflect.DeepEqual(a.Interface(), b.Interface()) {
			continue
		}
		errs = append(errs, fmt.Errorf("%s is not supported by this receiver (%s); remove it or set it to the reference's default %s",
			key, referenceReasons[key], formatDefault(b)))
	}
	return errs
}

func formatDefault(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return fmt.Sprintf("%q", v.String())
	case reflect.Slice:
		return "[]"
	}
	if d, ok := v.Interface().(time.Duration); ok {
		return d.String()
	}
	return fmt.Sprint(v.Interface())
}

// validate refuses switching off an unwinder the library cannot switch off.
func (in Interpreters) validate() []error {
	var errs []error
	for _, x := range []struct {
		name     string
		disabled bool
	}{{"python", in.Python.Disabled}, {"hotspot", in.Hotspot.Disabled}} {
		if x.disabled {
			errs = append(errs, fmt.Errorf("interpreters.%s.disabled is not supported by this receiver "+
				"(the library's CPython and HotSpot unwinders are always on; a process without that runtime costs nothing); remove it", x.name))
		}
	}
	return errs
}
