// SPDX-License-Identifier: Apache-2.0

package profilingreceiver // import "github.com/libotelprofiler/libotelprofiler/ffi/profilingreceiver"

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/confmap"

	"github.com/libotelprofiler/libotelprofiler/ffi/internal/otelprof"
)

// Config is the configuration of the profiling receiver.
//
// Every key of the reference receiver (opentelemetry-ebpf-profiler's
// collector receiver, also registered as "profiling") is accepted by name
// (reference_keys.go): those this receiver implements work the same way, the
// others are accepted at the reference's default and rejected otherwise, with
// the reason.
type Config struct {
	// SamplesPerSecond is the sampling frequency per CPU (otelprof_opts.frequency_hz).
	SamplesPerSecond int `mapstructure:"samples_per_second"`
	// ReporterInterval is the period between two otelprof_poll calls.
	ReporterInterval time.Duration `mapstructure:"reporter_interval"`
	// ReporterJitter spreads each period uniformly over
	// [interval*(1-jitter), interval*(1+jitter)], so that a fleet started
	// together does not report in step (0 disables; at most 1).
	ReporterJitter float64 `mapstructure:"reporter_jitter"`
	// SendIdleFrames keeps samples taken on idle CPUs (OTELPROF_F_INCLUDE_IDLE).
	SendIdleFrames bool `mapstructure:"send_idle_frames"`
	// ErrorMode is what a failing Start does: "propagate" (the collector
	// refuses to start) or "ignore" (logged; the receiver delivers nothing).
	ErrorMode string `mapstructure:"error_mode"`

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
	// SymbolBudgetMB caps the memory of everything derived from mapped
	// files (symbols, strings, unwind scratch), MiB (0: 192). The least
	// recently sampled files lose their symbols first.
	SymbolBudgetMB uint32 `mapstructure:"symbol_budget_mb"`
	// FileBudgetMB caps one file's share, MiB (0: 64); a file over it is
	// kept without symbols.
	FileBudgetMB uint32 `mapstructure:"file_budget_mb"`
	// GoMemoryLimitMiB is the Go runtime's soft memory limit set at Start
	// when the process has none (no GOMEMLIMIT in its environment, no
	// limit set by other code): 0 = 64 MiB, -1 = leave the runtime alone
	// (memlimit.go).
	GoMemoryLimitMiB int `mapstructure:"go_memory_limit_mib"`
	// BTFPath is a BTF file of the running kernel (e.g. from BTFHub), for
	// kernels without /sys/kernel/btf/vmlinux (otelprof_opts.btf_path).
	BTFPath string `mapstructure:"btf_path"`
	// DebuginfodURLs are debuginfod servers to fetch debug files from, by
	// build id, for files whose symbols no local lookup found
	// (otelprof_opts.debuginfod_urls). Empty (the default): off, no
	// network connection is made.
	DebuginfodURLs []string `mapstructure:"debuginfod_urls"`
	// MaxSamplesPerSecond is the ceiling of SetSamplesPerSecond
	// (RateController, rate.go; otelprof_opts.max_frequency_hz). 0: the
	// rate whose 250 ms fill the library's ring buffer, at most 256 Hz,
	// at least samples_per_second.
	MaxSamplesPerSecond int `mapstructure:"max_samples_per_second"`
	// Adaptive ramps the rate up while a profile-derived metric is over
	// a threshold (adaptive.go); no rules: off.
	Adaptive AdaptiveConfig `mapstructure:"adaptive"`
	// OffCPUThreshold is the reference's key: the probability, in [0, 1],
	// that a thread's switch-out is recorded with its stack and the time
	// until it runs again (otelprof_opts.off_cpu_threshold), emitted as a
	// Profile of its own per process (sample type events/nanoseconds). 0
	// (the default): off, no scheduler hook is loaded.
	OffCPUThreshold float64 `mapstructure:"off_cpu_threshold"`

	referenceKeys `mapstructure:",squash"`
}

const (
	errorModePropagate = "propagate"
	errorModeIgnore    = "ignore"

	// minReporterInterval keeps a mistyped interval from polling non-stop.
	minReporterInterval = 10 * time.Millisecond
	// minRingbufKB: a stack copy of a process not yet known is 8 KiB; a
	// ring that holds fewer than eight of them loses every start-up burst.
	minRingbufKB = 64
	maxRingbufKB = 1 << 20 // the library's limit
	// The library's limits on debuginfod servers (lib/filestore/debuginfod.h).
	maxDebuginfodURLs   = 8
	maxDebuginfodURLLen = 1024
)

func createDefaultConfig() *Config {
	return &Config{
		SamplesPerSecond: otelprof.DefaultFrequency,
		ReporterInterval: 5 * time.Second,
		ReporterJitter:   0.2,
		ErrorMode:        errorModePropagate,
		referenceKeys:    referenceDefaults(),
	}
}

// durationKeys are decoded as time.Duration: a bare number there would be
// taken as nanoseconds (`reporter_interval: 5` = 5 ns polls non-stop).
func durationKeys() []string {
	var keys []string
	t := reflect.TypeOf(Config{})
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("mapstructure"), ",")
			if len(tag) > 1 && tag[1] == "squash" {
				walk(f.Type)
				continue
			}
			if f.Type == reflect.TypeOf(time.Duration(0)) {
				keys = append(keys, tag[0])
			}
		}
	}
	walk(t)
	return keys
}

// Unmarshal implements confmap.Unmarshaler: it rejects durations without a
// unit before decoding.
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	for _, key := range durationKeys() {
		switch v := conf.Get(key).(type) {
		case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
			return fmt.Errorf("%s: %v has no unit; write a duration such as %vs or %vms", key, v, v, v)
		case string:
			if _, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				return fmt.Errorf("%s: %q has no unit; write a duration such as %ss or %sms", key, v, v, v)
			}
		}
	}
	return conf.Unmarshal(c)
}

// Validate implements confmap.Validator. It rejects everything Start
// (otelprof_start) would reject, so `otelcol validate` finds it.
func (c *Config) Validate() error {
	var errs []error
	if c.SamplesPerSecond < 1 || c.SamplesPerSecond > otelprof.MaxFrequency {
		errs = append(errs, fmt.Errorf("samples_per_second must be between 1 and %d, got %d",
			otelprof.MaxFrequency, c.SamplesPerSecond))
	}
	if c.GoMemoryLimitMiB < -1 {
		errs = append(errs, fmt.Errorf("go_memory_limit_mib must be -1 (leave the Go runtime alone), 0 (default) or a size in MiB, got %d", c.GoMemoryLimitMiB))
	}
	if c.ReporterInterval < minReporterInterval {
		errs = append(errs, fmt.Errorf("reporter_interval must be at least %s, got %s", minReporterInterval, c.ReporterInterval))
	}
	if c.ReporterJitter < 0 || c.ReporterJitter > 1 {
		errs = append(errs, fmt.Errorf("reporter_jitter must be in [0, 1], got %v", c.ReporterJitter))
	}
	if c.ErrorMode != errorModePropagate && c.ErrorMode != errorModeIgnore {
		errs = append(errs, fmt.Errorf("error_mode must be %q or %q, got %q", errorModePropagate, errorModeIgnore, c.ErrorMode))
	}
	if c.PID < 0 || int64(c.PID) > 1<<31-1 {
		errs = append(errs, fmt.Errorf("pid must be 0 (whole host) or a process id, got %d", c.PID))
	} else if c.PID > 0 {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", c.PID)); err != nil {
			errs = append(errs, fmt.Errorf("pid %d: no such process on this host (%v); 0 profiles the whole host", c.PID, err))
		}
	}
	if c.RingbufKB != 0 && (c.RingbufKB < minRingbufKB || c.RingbufKB > maxRingbufKB) {
		errs = append(errs, fmt.Errorf("ringbuf_kb must be 0 (sized by the library) or between %d and %d, got %d",
			minRingbufKB, maxRingbufKB, c.RingbufKB))
	}
	if c.MaxFrames > otelprof.MaxUserFrames {
		errs = append(errs, fmt.Errorf("max_frames must be 0 (library default) or at most %d, got %d",
			otelprof.MaxUserFrames, c.MaxFrames))
	}
	if strings.IndexByte(c.HostName, 0) >= 0 {
		errs = append(errs, errors.New("host_name must not contain a NUL byte"))
	}
	if strings.IndexByte(c.LibraryPath, 0) >= 0 {
		errs = append(errs, errors.New("library_path must not contain a NUL byte"))
	}
	if c.SymbolBudgetMB != 0 && c.FileBudgetMB > c.SymbolBudgetMB {
		errs = append(errs, fmt.Errorf("file_budget_mb (%d) must not exceed symbol_budget_mb (%d)",
			c.FileBudgetMB, c.SymbolBudgetMB))
	}
	// Written so that NaN is refused too.
	if !(c.OffCPUThreshold >= 0 && c.OffCPUThreshold <= 1) {
		errs = append(errs, fmt.Errorf("off_cpu_threshold must be a probability in [0, 1] (0 = off), got %v", c.OffCPUThreshold))
	}
	if len(c.DebuginfodURLs) > maxDebuginfodURLs {
		errs = append(errs, fmt.Errorf("debuginfod_urls: at most %d servers, got %d", maxDebuginfodURLs, len(c.DebuginfodURLs)))
	}
	for _, u := range c.DebuginfodURLs {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") ||
			strings.ContainsAny(u, " \t\r\n\x00") || len(u) >= maxDebuginfodURLLen {
			errs = append(errs, fmt.Errorf("debuginfod_urls: %q is not an http:// or https:// URL (without spaces, under %d bytes)", u, maxDebuginfodURLLen))
		}
	}

	if c.MaxSamplesPerSecond != 0 && (c.MaxSamplesPerSecond < c.SamplesPerSecond || c.MaxSamplesPerSecond > otelprof.MaxFrequency) {
		errs = append(errs, fmt.Errorf("max_samples_per_second must be 0 (sized by the library) or between samples_per_second (%d) and %d, got %d",
			c.SamplesPerSecond, otelprof.MaxFrequency, c.MaxSamplesPerSecond))
	}
	errs = append(errs, c.Adaptive.validate(c.SamplesPerSecond, c.MaxSamplesPerSecond)...)
	errs = append(errs, c.validateImplementedReferenceKeys()...)
	errs = append(errs, c.referenceKeys.validate()...)
	return errors.Join(errs...)
}
