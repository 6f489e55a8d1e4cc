// SPDX-License-Identifier: Apache-2.0

package profilingreceiver // import "github.com/libotelprofiler/libotelprofiler/ffi/profilingreceiver"

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/libotelprofiler/libotelprofiler/ffi/internal/shlib"
)

// AdaptiveConfig ramps the sampling rate up while a profile-derived metric
// is over a threshold, then back to samples_per_second.
type AdaptiveConfig struct {
	Rules []AdaptiveRule `mapstructure:"rules"`
	// CPUBudget bounds a ramp: the collector process's CPU time per wall
	// second (1 = one CPU) while ramped; over it the ramp ends at once.
	// 0: 0.05.
	CPUBudget float64 `mapstructure:"cpu_budget"`
}

// AdaptiveRule is one metric, threshold and ramp.
type AdaptiveRule struct {
	Name string `mapstructure:"name"`
	// Metric is the connector's metric the rule computes from each
	// payload: samples.native.count, with shlib_name (the leaf frame's
	// library, "libz" for libz.so.1).
	Metric    string `mapstructure:"metric"`
	ShlibName string `mapstructure:"shlib_name"`
	// GroupBy is what must cross the threshold: the host (every sample),
	// one service (service.name) or one process (process.pid).
	GroupBy string `mapstructure:"group_by"`
	// Threshold is CPU of that class, in CPUs: samples x period / wall
	// time of the window (independent of the rate).
	Threshold float64 `mapstructure:"threshold"`
	// SamplesPerSecond is the rate of the ramp (<= max_samples_per_second).
	SamplesPerSecond int `mapstructure:"samples_per_second"`
	// Duration: the ramp lasts this long after the last window over the
	// threshold.
	Duration time.Duration `mapstructure:"duration"`
}

const (
	metricNativeCount = "samples.native.count"
	defaultCPUBudget  = 0.05
	frameTypeKey      = "profile.frame.type"
)

func (c AdaptiveConfig) validate(baseline, ceiling int) []error {
	var errs []error
	if c.CPUBudget < 0 || c.CPUBudget > 64 {
		errs = append(errs, fmt.Errorf("adaptive.cpu_budget must be in [0, 64] CPUs, got %v", c.CPUBudget))
	}
	names := map[string]bool{}
	for i, r := range c.Rules {
		id := fmt.Sprintf("adaptive.rules[%d]", i)
		if r.Name == "" || names[r.Name] {
			errs = append(errs, fmt.Errorf("%s: name must be set and unique, got %q", id, r.Name))
		}
		names[r.Name] = true
		if r.Metric != metricNativeCount {
			errs = append(errs, fmt.Errorf("%s: metric %q is not supported (only %s with shlib_name)", id, r.Metric, metricNativeCount))
		}
		if r.ShlibName == "" {
			errs = append(errs, fmt.Errorf("%s: shlib_name must be set (e.g. libz)", id))
		}
		switch r.GroupBy {
		case "host", "service", "process":
		default:
			errs = append(errs, fmt.Errorf("%s: group_by must be host, service or process, got %q", id, r.GroupBy))
		}
		if r.Threshold <= 0 {
			errs = append(errs, fmt.Errorf("%s: threshold must be > 0 CPUs, got %v", id, r.Threshold))
		}
		if r.SamplesPerSecond <= baseline || (ceiling > 0 && r.SamplesPerSecond > ceiling) || r.SamplesPerSecond > 10000 {
			errs = append(errs, fmt.Errorf("%s: samples_per_second must be above samples_per_second (%d) and at most max_samples_per_second, got %d",
				id, baseline, r.SamplesPerSecond))
		}
		if r.Duration < time.Second {
			errs = append(errs, fmt.Errorf("%s: duration must be at least 1s, got %s", id, r.Duration))
		}
	}
	return errs
}

// adaptive is the rules' state; used by the poll goroutine only.
type adaptive struct {
	cfg      AdaptiveConfig
	baseline int
	set      func(hz int) error
	log      *zap.Logger
	until    []time.Time // per rule: ramped until then (zero: not)
	// lastOver: when a rule last crossed its threshold (Unix ns), for
	// whoever judges a ramp's length from outside the poll goroutine.
	lastOver atomic.Int64
	cool     []time.Time // per rule: no ramp before (after a cut)
	lastAt   time.Time
	lastCPU  time.Duration
	rate     int
	ramps    metric.Int64Counter
	cut      metric.Int64Counter
	failures metric.Int64Counter
}

func newAdaptive(cfg AdaptiveConfig, baseline int, set func(int) error, log *zap.Logger, meter metric.Meter) (*adaptive, error) {
	if cfg.CPUBudget == 0 {
		cfg.CPUBudget = defaultCPUBudget
	}
	a := &adaptive{cfg: cfg, baseline: baseline, set: set, log: log, until: make([]time.Time, len(cfg.Rules)),
		cool: make([]time.Time, len(cfg.Rules)), rate: baseline}
	var err1, err2, err3 error
	a.ramps, err1 = meter.Int64Counter("otelcol_receiver_profiling_adaptive_ramps",
		metric.WithDescription("Sampling-rate ramps started by an adaptive rule"), metric.WithUnit("{ramp}"))
	a.cut, err2 = meter.Int64Counter("otelcol_receiver_profiling_adaptive_ramps_cut",
		metric.WithDescription("Ramps ended early: the collector's CPU time over adaptive.cpu_budget"), metric.WithUnit("{ramp}"))
	a.failures, err3 = meter.Int64Counter("otelcol_receiver_profiling_adaptive_rate_errors",
		metric.WithDescription("Rate changes the library refused"), metric.WithUnit("{error}"))
	return a, errors.Join(err1, err2, err3)
}

// processCPU is the collector's CPU time (user + system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// observe evaluates every rule on one payload (nil: nothing was sampled)
// polled at now, and moves the rate.
func (a *adaptive) observe(ctx context.Context, pd *pprofile.Profiles, now time.Time) {
	cpu := processCPU()
	wall := now.Sub(a.lastAt)
	first := a.lastAt.IsZero()
	cpuUsed := cpu - a.lastCPU
	a.lastAt, a.lastCPU = now, cpu
	if first || wall <= 0 {
		return
	}
	for i, r := range a.cfg.Rules {
		var worst float64
		var who string
		if pd != nil {
			for g, ns := range classCPU(*pd, r) {
				if c := float64(ns) / float64(wall); c > worst {
					worst, who = c, g
				}
			}
		}
		if worst < r.Threshold || now.Before(a.cool[i]) {
			continue
		}
		if a.until[i].IsZero() || !now.Before(a.until[i]) {
			a.ramps.Add(ctx, 1, metric.WithAttributes(attribute.String("rule", r.Name)))
			a.log.Info("adaptive ramp",
				zap.String("rule", r.Name), zap.String("group", who),
				zap.Float64("cpus", worst), zap.Float64("threshold", r.Threshold),
				zap.Int("samples_per_second", r.SamplesPerSecond), zap.Duration("for", r.Duration))
		}
		a.until[i] = now.Add(r.Duration)
		a.lastOver.Store(now.UnixNano())
	}
	want := a.baseline
	for i, r := range a.cfg.Rules {
		if !a.until[i].IsZero() && now.Before(a.until[i]) && r.SamplesPerSecond > want {
			want = r.SamplesPerSecond
		}
	}
	// The budget: a ramp that makes the collector spend more than it is
	// allowed ends now, whatever its rules say, and its rules wait their
	// duration before they ramp again.
	if a.rate > a.baseline && float64(cpuUsed)/float64(wall) > a.cfg.CPUBudget {
		a.cut.Add(ctx, 1)
		a.log.Warn("adaptive ramp cut: over the CPU budget",
			zap.Float64("cpus", float64(cpuUsed)/float64(wall)), zap.Float64("cpu_budget", a.cfg.CPUBudget))
		for i, r := range a.cfg.Rules {
			if !a.until[i].IsZero() {
				a.cool[i] = now.Add(r.Duration)
			}
			a.until[i] = time.Time{}
		}
		want = a.baseline
	}
	if want == a.rate {
		return
	}
	if err := a.set(want); err != nil {
		a.failures.Add(ctx, 1)
		a.log.Error("adaptive rate change refused", zap.Int("samples_per_second", want), zap.Error(err))
		return
	}
	if want == a.baseline {
		a.log.Info("adaptive ramp over: back to baseline", zap.Int("samples_per_second", want))
	}
	a.rate = want
}

// classCPU is, per group of the rule, the CPU time (ns) of the samples
// whose leaf frame is native code in the rule's library: timestamps x the
// period of their Profile.
func classCPU(pd pprofile.Profiles, r AdaptiveRule) map[string]int64 {
	out := map[string]int64{}
	d := pd.Dictionary()
	strs, locs, maps, attrs, stacks := d.StringTable(), d.LocationTable(), d.MappingTable(), d.AttributeTable(), d.StackTable()
	str := func(i int32) string {
		if i < 0 || int(i) >= strs.Len() {
			return ""
		}
		return strs.At(int(i))
	}
	inLib := func(li int32) bool {
		if li <= 0 || int(li) >= locs.Len() {
			return false
		}
		loc := locs.At(int(li))
		native := false
		for _, ai := range loc.AttributeIndices().All() {
			if ai > 0 && int(ai) < attrs.Len() && str(attrs.At(int(ai)).KeyStrindex()) == frameTypeKey {
				native = attrs.At(int(ai)).Value().Str() == "native"
			}
		}
		mi := loc.MappingIndex()
		if !native || mi <= 0 || int(mi) >= maps.Len() {
			return false
		}
		return shlib.Name(str(maps.At(int(mi)).FilenameStrindex())) == r.ShlibName
	}
	for i := 0; i < pd.ResourceProfiles().Len(); i++ {
		rp := pd.ResourceProfiles().At(i)
		group := "host"
		switch r.GroupBy {
		case "service":
			v, ok := rp.Resource().Attributes().Get("service.name")
			if !ok {
				continue
			}
			group = v.AsString()
		case "process":
			v, ok := rp.Resource().Attributes().Get("process.pid")
			if !ok {
				continue
			}
			group = v.AsString()
		}
		for j := 0; j < rp.ScopeProfiles().Len(); j++ {
			profs := rp.ScopeProfiles().At(j).Profiles()
			for k := 0; k < profs.Len(); k++ {
				p := profs.At(k)
				for s := 0; s < p.Samples().Len(); s++ {
					smp := p.Samples().At(s)
					si := smp.StackIndex()
					if si <= 0 || int(si) >= stacks.Len() {
						continue
					}
					li := stacks.At(int(si)).LocationIndices()
					if li.Len() == 0 || !inLib(li.At(0)) {
						continue
					}
					n := int64(smp.TimestampsUnixNano().Len())
					if n == 0 {
						n = 1
					}
					out[group] += n * p.Period()
				}
			}
		}
	}
	return out
}
