// SPDX-License-Identifier: Apache-2.0

package profilingreceiver // import "github.com/libotelprofiler/libotelprofiler/ffi/profilingreceiver"

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/libotelprofiler/libotelprofiler/ffi/internal/otelprof"
)

const (
	transport = "ebpf"
	format    = "otlp_proto"
	// finalPollLimit bounds the polls after otelprof_stop (poll returns what
	// was buffered, then 0).
	finalPollLimit = 16
)

type profilingReceiver struct {
	cfg      *Config
	set      receiver.Settings
	next     xconsumer.Profiles
	obsrecv  *receiverhelper.ObsReport
	unmarsh  pprofile.ProtoUnmarshaler
	statsReg metric.Registration

	mu   sync.Mutex // guards prof and the lifecycle fields below
	prof *otelprof.Profiler
	// handleMu protects the library handle against the telemetry callback,
	// which runs on the SDK's goroutine; closed is set under it.
	handleMu sync.RWMutex
	closed   bool
	stopCh   chan struct{}
	doneCh   chan struct{}
	shutdown bool
	// rate is the sampling rate now (rate.go).
	rateMu sync.Mutex
	rate   int
	// adaptive: the rules of cfg.Adaptive (nil: none); poll goroutine.
	adaptive *adaptive
}

func newReceiver(set receiver.Settings, cfg *Config, next xconsumer.Profiles) (*profilingReceiver, error) {
	obsrecv, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID:             set.ID,
		Transport:              transport,
		ReceiverCreateSettings: set,
	})
	if err != nil {
		return nil, err
	}
	return &profilingReceiver{cfg: cfg, set: set, next: next, obsrecv: obsrecv}, nil
}

// Start loads the library and starts sampling. With error_mode "propagate"
// (the default) errors are returned to the collector, which refuses to
// start; with "ignore" they are logged and the receiver stays idle.
func (r *profilingReceiver) Start(_ context.Context, _ component.Host) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.prof != nil {
		return errors.New("profiling receiver already started")
	}
	err := r.start()
	if err != nil && r.cfg.ErrorMode == errorModeIgnore {
		r.set.Logger.Error("profiling receiver not started (error_mode: ignore)", zap.Error(err))
		return nil
	}
	return err
}

func (r *profilingReceiver) start() error {
	lib, err := otelprof.Find(r.cfg.LibraryPath)
	if err != nil {
		return fmt.Errorf("profiling receiver: %w", err)
	}
	var flags uint32
	if r.cfg.SendIdleFrames {
		flags |= otelprof.FlagIncludeIdle
	}
	prof, err := lib.Start(otelprof.Options{
		FrequencyHz: uint32(r.cfg.SamplesPerSecond),
		PID:         int32(r.cfg.PID),
		HostName:    r.cfg.HostName,
		RingbufKB:   r.cfg.RingbufKB,
		Flags:       flags,
		MaxFrames:   r.cfg.MaxFrames,

		SymbolBudgetMB: r.cfg.SymbolBudgetMB,
		FileBudgetMB:   r.cfg.FileBudgetMB,
		BTFPath:        r.cfg.BTFPath,
		DebuginfodURLs: strings.Join(r.cfg.DebuginfodURLs, " "),

		MaxFrequencyHz:          uint32(r.cfg.MaxSamplesPerSecond),
		ProbabilisticThreshold:  uint32(r.cfg.ProbabilisticThreshold),
		ProbabilisticIntervalMs: uint32(r.cfg.ProbabilisticInterval.Milliseconds()),
		IncludeEnvVars:          r.cfg.IncludeEnvVars,
		OffCPUThreshold:         r.cfg.OffCPUThreshold,
	})
	if err != nil {
		return fmt.Errorf("profiling receiver: %s: %w", lib.Path, err)
	}
	r.handleMu.Lock()
	r.prof = prof
	r.handleMu.Unlock()
	r.rateMu.Lock()
	r.rate = r.cfg.SamplesPerSecond
	r.rateMu.Unlock()
	r.registerController()
	if limit := applyGoMemoryLimit(r.cfg.GoMemoryLimitMiB); limit > 0 {
		r.set.Logger.Info("Go memory limit set (no GOMEMLIMIT given; go_memory_limit_mib: -1 leaves it unset)",
			zap.Int64("bytes", limit))
	}
	r.set.Logger.Info("libotelprofiler started",
		zap.String("library", lib.Path),
		zap.String("version", lib.Version()),
		zap.Int("samples_per_second", r.cfg.SamplesPerSecond),
		zap.Int("pid", r.cfg.PID),
		zap.Duration("reporter_interval", r.cfg.ReporterInterval))
	if mallocArenasUnlimitedHere() {
		r.set.Logger.Warn("MALLOC_ARENA_MAX is not set: glibc keeps a malloc arena per thread that called the library, " +
			"tens of MiB more (set MALLOC_ARENA_MAX=1 in the collector's environment, as the DaemonSet does; docs/configuration.md)")
	}
	// What this kernel lacks and what the library does instead
	// (docs/kernels.md): visible at start-up, never a silent difference.
	if st, err := prof.Stats(); err == nil && st.KernelFallbacks != 0 {
		r.set.Logger.Warn("libotelprofiler runs kernel fallbacks (docs/kernels.md)",
			zap.Bool("no_bpf_loop", st.KernelFallbacks&otelprof.FallbackNoBPFLoop != 0),
			zap.Bool("no_task_pt_regs", st.KernelFallbacks&otelprof.FallbackNoTaskPtRegs != 0),
			zap.Bool("preallocated_maps", st.KernelFallbacks&otelprof.FallbackPreallocMaps != 0),
			zap.Uint64("max_frames", st.MaxFrames))
	}

	if err := r.registerStats(); err != nil {
		// Telemetry is best effort: never fail the pipeline for it.
		r.set.Logger.Warn("cannot register libotelprofiler counters", zap.Error(err))
	}

	if len(r.cfg.Adaptive.Rules) > 0 {
		a, err := newAdaptive(r.cfg.Adaptive, r.cfg.SamplesPerSecond, r.SetSamplesPerSecond,
			r.set.Logger, r.set.MeterProvider.Meter(ScopeName))
		if err != nil {
			r.set.Logger.Warn("cannot register the adaptive counters", zap.Error(err))
		}
		r.adaptive = a
	}

	r.stopCh = make(chan struct{})
	r.doneCh = make(chan struct{})
	go r.run(r.stopCh, r.doneCh)
	return nil
}

func (r *profilingReceiver) run(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTimer(r.nextInterval())
	defer t.Stop()
	// Deliveries are not cancelled by Shutdown: the pipeline downstream is
	// still running while receivers shut down, and the data is already paid for.
	ctx := context.Background()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			r.pollOnce(ctx)
			t.Reset(r.nextInterval())
		}
	}
}

// nextInterval is reporter_interval spread by reporter_jitter.
func (r *profilingReceiver) nextInterval() time.Duration {
	j := r.cfg.ReporterJitter
	d := float64(r.cfg.ReporterInterval) * (1 + j*(2*rand.Float64()-1))
	if d < float64(minReporterInterval) {
		d = float64(minReporterInterval)
	}
	return time.Duration(d)
}

// pollOnce polls the library once and delivers the payload; it reports
// whether a payload was delivered (false: empty or error).
func (r *profilingReceiver) pollOnce(ctx context.Context) bool {
	data, n, err := r.prof.Poll()
	if err != nil {
		r.set.Logger.Error("poll failed", zap.Error(err))
		return false
	}
	if data == nil {
		r.observe(ctx, nil)
		return false
	}
	ctx = r.obsrecv.StartProfilesOp(ctx)
	pd, err := r.unmarsh.UnmarshalProfiles(data)
	if err != nil {
		err = fmt.Errorf("decoding a %d-byte OTLP payload (%d samples) from libotelprofiler: %w", len(data), n, err)
		r.obsrecv.EndProfilesOp(ctx, format, n, err)
		r.set.Logger.Error("dropping payload", zap.Error(err))
		return false
	}
	r.observe(ctx, &pd)
	err = r.next.ConsumeProfiles(ctx, pd)
	r.obsrecv.EndProfilesOp(ctx, format, pd.SampleCount(), err)
	if err != nil {
		r.set.Logger.Error("next consumer refused profiles", zap.Int("samples", pd.SampleCount()), zap.Error(err))
	}
	return true
}

// observe hands a payload to the adaptive rules (Shutdown drops them
// before its final polls, which only deliver).
func (r *profilingReceiver) observe(ctx context.Context, pd *pprofile.Profiles) {
	if r.adaptive != nil {
		r.adaptive.observe(ctx, pd, time.Now())
	}
}

// Shutdown stops the poll loop, stops sampling, delivers what the library
// still buffered and frees the handle.
func (r *profilingReceiver) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.prof == nil || r.shutdown {
		return nil
	}
	r.shutdown = true
	r.unregisterController()
	close(r.stopCh)
	select {
	case <-r.doneCh:
	case <-ctx.Done():
		// A delivery is blocked downstream; the handle cannot be closed
		// under it. Stop sampling and leave the handle to the process exit.
		_ = r.prof.Stop()
		return fmt.Errorf("profiling receiver: shutdown: poll loop still delivering: %w", ctx.Err())
	}
	r.adaptive = nil // the poll goroutine is done
	var errs []error
	if err := r.prof.Stop(); err != nil {
		errs = append(errs, err)
	}
	for i := 0; i < finalPollLimit && ctx.Err() == nil; i++ {
		if !r.pollOnce(ctx) {
			break
		}
	}
	if r.statsReg != nil {
		if err := r.statsReg.Unregister(); err != nil {
			errs = append(errs, err)
		}
		r.statsReg = nil
	}
	r.handleMu.Lock()
	r.closed = true
	r.prof.Close()
	r.handleMu.Unlock()
	return errors.Join(errs...)
}

// statsMetric is one otelprof_stats field exported as a metric; the table,
// statsMetrics, is generated from lib/agent/stats_fields.def.
type statsMetric struct {
	name, desc, unit string
	gauge            bool
	get              func(*otelprof.Stats) uint64
}

// registerStats exports otelprof_stats as asynchronous instruments.
func (r *profilingReceiver) registerStats() error {
	meter := r.set.MeterProvider.Meter(ScopeName)
	defs := statsMetrics
	attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("receiver", r.set.ID.String())))
	obs := make([]metric.Observable, 0, len(defs))
	insts := make([]metric.Int64Observable, 0, len(defs))
	for _, d := range defs {
		name := "otelcol_receiver_profiling_" + d.name
		var (
			inst metric.Int64Observable
			err  error
		)
		if d.gauge {
			inst, err = meter.Int64ObservableGauge(name, metric.WithDescription(d.desc), metric.WithUnit(d.unit))
		} else {
			inst, err = meter.Int64ObservableCounter(name, metric.WithDescription(d.desc), metric.WithUnit(d.unit))
		}
		if err != nil {
			return err
		}
		obs = append(obs, inst)
		insts = append(insts, inst)
	}
	prof := r.prof
	reg, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		r.handleMu.RLock()
		if r.closed {
			r.handleMu.RUnlock()
			return nil
		}
		st, err := prof.Stats()
		r.handleMu.RUnlock()
		if err != nil {
			return err
		}
		for i, d := range defs {
			o.ObserveInt64(insts[i], int64(d.get(&st)), attrs)
		}
		return nil
	}, obs...)
	if err != nil {
		return err
	}
	r.statsReg = reg
	return nil
}
