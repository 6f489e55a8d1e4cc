// SPDX-License-Identifier: Apache-2.0

package profilingreceiver // import "github.com/libotelprofiler/libotelprofiler/ffi/profilingreceiver"

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/libotelprofiler/libotelprofiler/ffi/internal/otelprof"
)

// Config is the configuration of the profiling receiver.
//
// Keys shared with the reference receiver (opentelemetry-ebpf-profiler's
// collector receiver, also registered as "profiling") keep its names. Keys of
// the reference that this receiver does not implement yet are still declared,
// so that a configuration written for the reference gets a precise message
// instead of confmap's generic "invalid keys"; Validate rejects them when they
// differ from the reference's default.
type Config struct {
	// SamplesPerSecond is the sampling frequency per CPU (otelprof_opts.frequency_hz).
	SamplesPerSecond int `mapstructure:"samples_per_second"`
	// ReporterInterval is the period between two otelprof_poll calls.
	ReporterInterval time.Duration `mapstructure:"reporter_interval"`
	// SendIdleFrames keeps samples taken on idle CPUs (OTELPROF_F_INCLUDE_IDLE).
	SendIdleFrames bool `mapstructure:"send_idle_frames"`

	// LibraryPath is the path of libotelprofiler.so. Empty: $OTELPROF_LIBRARY,
	// the collector executable's directory, then the standard library dirs.
	LibraryPath string `mapstructure:"library_path"`
	// PID restricts profiling to one process (tgid); 0 profiles the whole host.
	PID int `mapstructure:"pid"`
	// HostName overrides the host.name resource attribute (default: uname).
	HostName string `mapstructure:"host_name"`
	// RingbufKB is the BPF ring buffer size in KiB (0: sized by the library).
	RingbufKB uint32 `mapstructure:"ringbuf_kb"`
	// MaxFrames caps the user frames per sample (0: library default).
	MaxFrames uint32 `mapstructure:"max_frames"`

	// Reference receiver keys that are not supported yet (must keep their
	// default value).
	MonitorInterval        time.Duration `mapstructure:"monitor_interval"`
	ProbabilisticInterval  time.Duration `mapstructure:"probabilistic_interval"`
	ProbabilisticThreshold uint          `mapstructure:"probabilistic_threshold"`
	Tracers                string        `mapstructure:"tracers"`
	ClockSyncInterval      time.Duration `mapstructure:"clock_sync_interval"`
	SendErrorFrames        bool          `mapstructure:"send_error_frames"`
	VerboseMode            bool          `mapstructure:"verbose_mode"`
	OffCPUThreshold        float64       `mapstructure:"off_cpu_threshold"`
	IncludeEnvVars         string        `mapstructure:"include_env_vars"`
	ProbeLinks             []string      `mapstructure:"probe_links"`
	LoadProbe              bool          `mapstructure:"load_probe"`
	MapScaleFactor         uint          `mapstructure:"map_scale_factor"`
	GoLabelsScaleFactor    uint          `mapstructure:"go_labels_map_scale_factor"`
	BPFVerifierLogLevel    uint          `mapstructure:"bpf_verifier_log_level"`
	NoKernelVersionCheck   bool          `mapstructure:"no_kernel_version_check"`
	MaxGRPCRetries         uint32        `mapstructure:"max_grpc_retries"`
	MaxRPCMsgSize          int           `mapstructure:"max_rpc_msg_size"`
}

func createDefaultConfig() *Config {
	return &Config{
		SamplesPerSecond: otelprof.DefaultFrequency,
		ReporterInterval: 5 * time.Second,

		// Defaults of the reference receiver, accepted as "not set".
		MonitorInterval:        5 * time.Second,
		ProbabilisticInterval:  time.Minute,
		ProbabilisticThreshold: 100,
		Tracers:                "all",
		ClockSyncInterval:      3 * time.Minute,
	}
}

// unsupported maps the mapstructure key of each not-yet-supported reference
// option to the reason given to the user.
var unsupported = map[string]string{
	"monitor_interval":           "the library's counters are exported as receiver telemetry instead",
	"probabilistic_interval":     "probabilistic profiling is not implemented",
	"probabilistic_threshold":    "probabilistic profiling is not implemented",
	"tracers":                    "only native and kernel frames are unwound (no interpreter tracers)",
	"clock_sync_interval":        "timestamps come from the library's own clock conversion",
	"send_error_frames":          "error frames are not emitted",
	"verbose_mode":               "use the collector's service::telemetry::logs::level",
	"off_cpu_threshold":          "off-CPU profiling is not implemented",
	"include_env_vars":           "environment variables are not collected",
	"probe_links":                "uprobe links are not implemented",
	"load_probe":                 "uprobe links are not implemented",
	"map_scale_factor":           "BPF map sizes are chosen by the library (see ringbuf_kb)",
	"go_labels_map_scale_factor": "Go labels are not collected",
	"bpf_verifier_log_level":     "the verifier log is returned in the start error on failure",
	"no_kernel_version_check":    "the library does not check the kernel version, it probes features",
	"max_grpc_retries":           "this receiver does not export; configure an exporter instead",
	"max_rpc_msg_size":           "this receiver does not export; configure an exporter instead",
}

// Validate implements confmap.Validator.
func (c *Config) Validate() error {
	var errs []error
	if c.SamplesPerSecond < 1 || c.SamplesPerSecond > otelprof.MaxFrequency {
		errs = append(errs, fmt.Errorf("samples_per_second must be between 1 and %d, got %d",
			otelprof.MaxFrequency, c.SamplesPerSecond))
	}
	if c.ReporterInterval <= 0 {
		errs = append(errs, fmt.Errorf("reporter_interval must be positive, got %s", c.ReporterInterval))
	}
	if c.PID < 0 || int64(c.PID) > 1<<31-1 {
		errs = append(errs, fmt.Errorf("pid must be 0 (whole host) or a process id, got %d", c.PID))
	}
	if strings.IndexByte(c.HostName, 0) >= 0 {
		errs = append(errs, errors.New("host_name must not contain a NUL byte"))
	}
	if strings.IndexByte(c.LibraryPath, 0) >= 0 {
		errs = append(errs, errors.New("library_path must not contain a NUL byte"))
	}

	def := reflect.ValueOf(createDefaultConfig()).Elem()
	cur := reflect.ValueOf(c).Elem()
	t := cur.Type()
	for i := 0; i < t.NumField(); i++ {
		key := strings.Split(t.Field(i).Tag.Get("mapstructure"), ",")[0]
		reason, ok := unsupported[key]
		if !ok {
			continue
		}
		if !reflect.DeepEqual(cur.Field(i).Interface(), def.Field(i).Interface()) &&
			!(cur.Field(i).Kind() == reflect.Slice && cur.Field(i).Len() == 0) {
			errs = append(errs, fmt.Errorf("%s is not supported by this receiver yet (%s); remove it or set it to its default %s",
				key, reason, formatDefault(def.Field(i))))
		}
	}
	return errors.Join(errs...)
}

func formatDefault(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return fmt.Sprintf("%q", v.String())
	case reflect.Slice:
		return "[]"
	}
	return fmt.Sprint(v.Interface())
}
