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
	})
	if err != nil {
		return fmt.Errorf("profiling receiver: %s: %w", lib.Path, err)
	}
	r.prof = prof
	r.set.Logger.Info("libotelprofiler started",
		zap.String("library", lib.Path),
		zap.String("version", lib.Version()),
		zap.Int("samples_per_second", r.cfg.SamplesPerSecond),
		zap.Int("pid", r.cfg.PID),
		zap.Duration("reporter_interval", r.cfg.ReporterInterval))
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
	err = r.next.ConsumeProfiles(ctx, pd)
	r.obsrecv.EndProfilesOp(ctx, format, pd.SampleCount(), err)
	if err != nil {
		r.set.Logger.Error("next consumer refused profiles", zap.Int("samples", pd.SampleCount()), zap.Error(err))
	}
	return true
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
	close(r.stopCh)
	select {
	case <-r.doneCh:
	case <-ctx.Done():
		// A delivery is blocked downstream; the handle cannot be closed
		// under it. Stop sampling and leave the handle to the process exit.
		_ = r.prof.Stop()
		return fmt.Errorf("profiling receiver: shutdown: poll loop still delivering: %w", ctx.Err())
	}
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

// registerStats exports otelprof_stats as asynchronous instruments.
func (r *profilingReceiver) registerStats() error {
	meter := r.set.MeterProvider.Meter(ScopeName)
	type counter struct {
		name, desc, unit string
		gauge            bool
		get              func(*otelprof.Stats) uint64
	}
	defs := []counter{
		{"samples_received", "Samples read from the BPF ring buffer", "{sample}", false, func(s *otelprof.Stats) uint64 { return s.SamplesReceived }},
		{"samples_lost", "Samples dropped in the kernel (ring buffer full)", "{sample}", false, func(s *otelprof.Stats) uint64 { return s.SamplesLost }},
		{"samples_idle", "Idle-CPU samples skipped in the kernel", "{sample}", false, func(s *otelprof.Stats) uint64 { return s.SamplesIdle }},
		{"samples_encoded", "Samples handed out by otelprof_poll", "{sample}", false, func(s *otelprof.Stats) uint64 { return s.SamplesEncoded }},
		{"kernel_stack_errors", "Kernel stacks that could not be taken", "{error}", false, func(s *otelprof.Stats) uint64 { return s.KernelStackErrors }},
		{"user_stack_errors", "User stacks that could not be taken", "{error}", false, func(s *otelprof.Stats) uint64 { return s.UserStackErrors }},
		{"proc_scan_errors", "/proc entries that could not be read", "{error}", false, func(s *otelprof.Stats) uint64 { return s.ProcScanErrors }},
		{"files_malformed", "Mapped files skipped as malformed ELF", "{file}", false, func(s *otelprof.Stats) uint64 { return s.FilesMalformed }},
		{"files_loaded", "ELF files whose symbols were loaded", "{file}", false, func(s *otelprof.Stats) uint64 { return s.FilesLoaded }},
		{"polls", "Successful otelprof_poll calls", "{call}", false, func(s *otelprof.Stats) uint64 { return s.Polls }},
		{"bytes_encoded", "OTLP bytes handed out", "By", false, func(s *otelprof.Stats) uint64 { return s.BytesEncoded }},
		{"processes_tracked", "Processes currently known", "{process}", true, func(s *otelprof.Stats) uint64 { return s.ProcessesTracked }},
		{"symbol_memory", "Memory held by symbol tables", "By", true, func(s *otelprof.Stats) uint64 { return s.SymbolMemoryBytes }},
		{"unwind_complete", "User stacks unwound to the root", "{stack}", false, func(s *otelprof.Stats) uint64 { return s.UnwindComplete }},
		{"unwind_truncated", "User stacks cut at max_frames", "{stack}", false, func(s *otelprof.Stats) uint64 { return s.UnwindTruncated }},
		{"unwind_err_rule", "User stacks stopped at a pc without a usable unwind rule", "{stack}", false, func(s *otelprof.Stats) uint64 { return s.UnwindErrRule }},
		{"unwind_err_read", "User stacks stopped at unreadable stack memory", "{stack}", false, func(s *otelprof.Stats) uint64 { return s.UnwindErrRead }},
		{"unwind_err_loop", "User stacks stopped because sp went backwards", "{stack}", false, func(s *otelprof.Stats) uint64 { return s.UnwindErrLoop }},
		{"unwind_no_mapping", "User stacks stopped at a pc outside known code", "{stack}", false, func(s *otelprof.Stats) uint64 { return s.UnwindNoMapping }},
		{"stack_copies", "Samples unwound in userspace from a stack copy", "{sample}", false, func(s *otelprof.Stats) uint64 { return s.StackCopies }},
		{"unwind_pending", "Samples with the leaf frame only (tables loading)", "{sample}", false, func(s *otelprof.Stats) uint64 { return s.UnwindPending }},
		{"unwind_files", "Files with unwind tables in the kernel", "{file}", true, func(s *otelprof.Stats) uint64 { return s.UnwindFiles }},
		{"unwind_map_memory", "Kernel memory of unwind tables", "By", true, func(s *otelprof.Stats) uint64 { return s.UnwindMapBytes }},
		{"unwind_table_errors", "Files whose CFI could not be used", "{file}", false, func(s *otelprof.Stats) uint64 { return s.UnwindTableErrors }},
		{"task_events_lost", "Exec/exit/mmap notifications dropped in the kernel", "{event}", false, func(s *otelprof.Stats) uint64 { return s.TaskEventsLost }},
		{"pid_reuses", "Samples of a new process under a known pid", "{process}", false, func(s *otelprof.Stats) uint64 { return s.PidReuses }},
		{"ctx_samples", "Samples carrying a thread context (trace/span link)", "{sample}", false, func(s *otelprof.Stats) uint64 { return s.CtxSamples }},
		{"ctx_read_errors", "Thread contexts that could not be read", "{error}", false, func(s *otelprof.Stats) uint64 { return s.CtxReadErrors }},
		{"ctx_process_errors", "Malformed or unreadable process contexts", "{error}", false, func(s *otelprof.Stats) uint64 { return s.CtxProcessErrors }},
		{"ctx_attrs_dropped", "Thread-context attributes dropped", "{attribute}", false, func(s *otelprof.Stats) uint64 { return s.CtxAttrsDropped }},
		{"files_refused", "Mapped paths not opened: not a regular file", "{file}", false, func(s *otelprof.Stats) uint64 { return s.FilesRefused }},
		{"files_over_budget", "Files kept without symbols: over the per-file budget", "{file}", false, func(s *otelprof.Stats) uint64 { return s.FilesOverBudget }},
		{"budget_evictions", "Files whose symbols were dropped to stay in the budget", "{file}", false, func(s *otelprof.Stats) uint64 { return s.BudgetEvictions }},
		{"budget_used", "Memory charged to the symbol budget", "By", true, func(s *otelprof.Stats) uint64 { return s.BudgetUsedBytes }},
		{"ctx_attrs_denied", "Published process-context attributes dropped: namespace owned by the profiler", "{attribute}", false, func(s *otelprof.Stats) uint64 { return s.CtxAttrsDenied }},
		{"cpus_onlined", "CPUs that came online while running", "{cpu}", false, func(s *otelprof.Stats) uint64 { return s.CPUsOnlined }},
		{"samples_dropped_at_stop", "Samples still in the ring buffer when stop's deadline came", "{sample}", false, func(s *otelprof.Stats) uint64 { return s.SamplesDroppedAtStop }},
		{"add_errors", "Samples, links or context attributes the profile could not take (out of memory, a table full)", "{error}", false, func(s *otelprof.Stats) uint64 { return s.AddErrors }},
		{"unwind_over_budget", "Unwind tables not built because their scratch exceeded the file's memory budget (frame pointers instead)", "{file}", false, func(s *otelprof.Stats) uint64 { return s.UnwindOverBudget }},
		{"budget_reloads", "Evicted files read again because a sample needed their symbols", "{file}", false, func(s *otelprof.Stats) uint64 { return s.BudgetReloads }},
		{"demangle_refused", "Symbol names left raw as hostile (demangled form over 8 KiB, or deep Rust v0 nesting)", "{name}", false, func(s *otelprof.Stats) uint64 { return s.DemangleRefused }},
		{"unwind_procs_errors", "Processes whose mappings could not be written to the kernel (frame pointers only)", "{process}", false, func(s *otelprof.Stats) uint64 { return s.UnwindProcsErrors }},
		{"unwind_rows_unrepresentable", "CFI rows the kernel walk cannot follow (the walk stops there) or that are left out (code above 4 GiB of file vaddr)", "{row}", false, func(s *otelprof.Stats) uint64 { return s.UnwindRowsUnrepresentable }},
		{"unwind_big_refused", "Processes whose extra mappings did not fit the shared array (first ones kept)", "{process}", false, func(s *otelprof.Stats) uint64 { return s.UnwindBigRefused }},
		{"file_loads_retried", "Big files whose read was put off because the loader's queue was full (read at a later pass)", "{file}", false, func(s *otelprof.Stats) uint64 { return s.FileLoadsRetried }},
		{"apm_channels", "Elastic APM agent sockets connected and registered with", "{socket}", false, func(s *otelprof.Stats) uint64 { return s.APMChannels }},
		{"apm_messages_sent", "Stack-trace correlations sent to Elastic APM agents", "{message}", false, func(s *otelprof.Stats) uint64 { return s.APMMessagesSent }},
		{"apm_messages_dropped", "Stack-trace correlations not delivered to Elastic APM agents", "{message}", false, func(s *otelprof.Stats) uint64 { return s.APMMessagesDropped }},
		{"apm_sockets_refused", "Elastic APM agent socket paths refused (not a socket, other owner, unreachable)", "{socket}", false, func(s *otelprof.Stats) uint64 { return s.APMSocketsRefused }},
		{"debuginfod_lookups", "Build ids asked of debuginfod servers", "{file}", false, func(s *otelprof.Stats) uint64 { return s.DebuginfodLookups }},
		{"debuginfod_hits", "Debug files fetched from debuginfod servers and their symbols taken", "{file}", false, func(s *otelprof.Stats) uint64 { return s.DebuginfodHits }},
		{"debuginfod_failures", "debuginfod lookups not found, timed out, or not an ELF of that build id", "{file}", false, func(s *otelprof.Stats) uint64 { return s.DebuginfodFailures }},
		{"debuginfod_refused", "debuginfod lookups not made (queue full) or debug files not taken (too big, over budget)", "{file}", false, func(s *otelprof.Stats) uint64 { return s.DebuginfodRefused }},
		{"jit_over_budget", "JIT symbols (perf map lines, jitdump records) not kept for the memory budget", "{entry}", false, func(s *otelprof.Stats) uint64 { return s.JitOverBudget }},
		{"events_malformed", "Ring buffer records skipped: sizes or counts that do not hold together", "{record}", false, func(s *otelprof.Stats) uint64 { return s.EventsMalformed }},
	}
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
