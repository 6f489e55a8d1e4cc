// SPDX-License-Identifier: Apache-2.0

// Package otelprof binds the C ABI of libotelprofiler (include/otelprofiler.h)
// through purego, so that the Go side builds and runs with CGO_ENABLED=0.
//
// Every function here mirrors one otelprof_* symbol. Pointers handed to the
// library point to Go memory that is kept alive with runtime.KeepAlive for the
// duration of the call; buffers the library hands back are copied into Go
// memory and released with otelprof_buffer_free before returning.
package otelprof // import "github.com/libotelprofiler/libotelprofiler/ffi/internal/otelprof"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/ebitengine/purego"
)

// LibraryName is the file name looked up in each candidate directory; the
// versioned soname is tried second.
const (
	LibraryName      = "libotelprofiler.so"
	LibrarySoname    = "libotelprofiler.so.0"
	LibraryEnv       = "OTELPROF_LIBRARY"
	FlagIncludeIdle  = 1 << 0 // OTELPROF_F_INCLUDE_IDLE
	DefaultFrequency = 19     // OTELPROF_DEFAULT_FREQUENCY_HZ
	MaxFrequency     = 10000
	MaxUserFrames    = 512 // OTELPROF_MAX_USER_FRAMES (ebpf/profiler_types.h)
	errbufLen        = 512
	expectedOptsSize = 96
	// Probabilistic profiling (otelprof_opts.probabilistic_*).
	MaxProbabilisticThreshold  = 100
	MinProbabilisticIntervalMs = 1000
	MaxProbabilisticIntervalMs = 300000
)

// Bits of Stats.KernelFallbacks (enum otelprof_kernel_fallback).
const (
	FallbackNoBPFLoop    = 1 << 0
	FallbackNoTaskPtRegs = 1 << 1
	FallbackPreallocMaps = 1 << 2
)

// cOpts mirrors struct otelprof_opts (LP64): sz @0, frequency_hz @8, pid @12,
// host_name @16, ringbuf_kb @24, flags @28, max_frames @32, reserved0 @36,
// symbol_budget_mb @40, file_budget_mb @44, btf_path @48, debuginfod_urls @56,
// max_frequency_hz @64, probabilistic_threshold @68,
// probabilistic_interval_ms @72, reserved1 @76, include_env_vars @80,
// off_cpu_threshold @88.
type cOpts struct {
	sz             uintptr
	frequencyHz    uint32
	pid            int32
	hostName       *byte
	ringbufKB      uint32
	flags          uint32
	maxFrames      uint32
	reserved0      uint32
	symbolBudgetMB uint32
	fileBudgetMB   uint32
	btfPath        *byte
	debuginfodURLs *byte

	maxFrequencyHz          uint32
	probabilisticThreshold  uint32
	probabilisticIntervalMs uint32
	reserved1               uint32
	includeEnvVars          *byte
	offCPU                  float64
}

// Stats and expectedStatsSize are generated from lib/agent/stats_fields.def,
// with a compile-time check of every field's offset (stats_gen.go).
//
//go:generate make -C ../../.. gen-stats

// cStats is struct otelprof_stats as the library fills it.
type cStats struct {
	sz uintptr
	Stats
}

// Compile-time layout checks (LP64 only: the header documents LP64 offsets).
var (
	_ = [1]struct{}{}[unsafe.Sizeof(cOpts{})-expectedOptsSize]
	_ = [1]struct{}{}[unsafe.Sizeof(cStats{})-expectedStatsSize]
	_ = [1]struct{}{}[unsafe.Offsetof(cOpts{}.hostName)-16]
	_ = [1]struct{}{}[unsafe.Offsetof(cOpts{}.maxFrames)-32]
	_ = [1]struct{}{}[unsafe.Offsetof(cOpts{}.symbolBudgetMB)-40]
	_ = [1]struct{}{}[unsafe.Offsetof(cOpts{}.btfPath)-48]
	_ = [1]struct{}{}[unsafe.Offsetof(cOpts{}.debuginfodURLs)-56]
	_ = [1]struct{}{}[unsafe.Offsetof(cOpts{}.maxFrequencyHz)-64]
	_ = [1]struct{}{}[unsafe.Offsetof(cOpts{}.probabilisticIntervalMs)-72]
	_ = [1]struct{}{}[unsafe.Offsetof(cOpts{}.includeEnvVars)-80]
	_ = [1]struct{}{}[unsafe.Offsetof(cOpts{}.offCPU)-88]
)

// Options are the start options; zero values mean "library default".
type Options struct {
	FrequencyHz uint32
	PID         int32
	HostName    string
	RingbufKB   uint32
	Flags       uint32
	MaxFrames   uint32
	// Memory for data derived from mapped files, MiB (0: library default).
	SymbolBudgetMB uint32
	FileBudgetMB   uint32
	// Kernel BTF file for kernels without /sys/kernel/btf/vmlinux.
	BTFPath string
	// debuginfod servers (URL prefixes separated by spaces); "" = off.
	DebuginfodURLs string
	// Ceiling of SetFrequency, Hz (0: what the ring buffer holds).
	MaxFrequencyHz uint32
	// Probabilistic profiling: threshold 1..100 (0 = 100, always on) and
	// interval in ms (0 = 60000).
	ProbabilisticThreshold  uint32
	ProbabilisticIntervalMs uint32
	// Environment variables copied onto each process's resource (names
	// separated by commas); "" = none.
	IncludeEnvVars string
	// Off-CPU: probability in [0, 1] that a switch-out is recorded; 0 = off.
	OffCPUThreshold float64
}

// Library is a loaded libotelprofiler.
type Library struct {
	Path string

	start      func(opts *cOpts, out *uintptr, errbuf *byte, errbufLen uintptr) int32
	poll       func(p uintptr, data **byte, size *uintptr) int32
	bufferFree func(data *byte)
	stop       func(p uintptr) int32
	closeFn    func(p uintptr)
	stats      func(p uintptr, st *cStats) int32
	errmsg     func(p uintptr) string
	version    func() string
	// otelprof_set_frequency (ABI node OTELPROF_0.2): nil in an older
	// library, which still loads.
	setFrequency func(p uintptr, hz uint32) int32
}

var (
	loadMu sync.Mutex
	loaded = map[string]*Library{}
)

// Load dlopens the library at path (once per path per process) and resolves
// every otelprof_* symbol. It never panics on a missing symbol.
func Load(path string) (*Library, error) {
	loadMu.Lock()
	defer loadMu.Unlock()
	if l, ok := loaded[path]; ok {
		return l, nil
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("cannot load %s: %w", path, err)
	}
	l := &Library{Path: path}
	syms := []struct {
		name string
		fn   any
	}{
		{"otelprof_start", &l.start},
		{"otelprof_poll", &l.poll},
		{"otelprof_buffer_free", &l.bufferFree},
		{"otelprof_stop", &l.stop},
		{"otelprof_close", &l.closeFn},
		{"otelprof_stats", &l.stats},
		{"otelprof_errmsg", &l.errmsg},
		{"otelprof_version", &l.version},
	}
	for _, s := range syms {
		addr, err := purego.Dlsym(h, s.name)
		if err != nil || addr == 0 {
			_ = purego.Dlclose(h)
			return nil, fmt.Errorf("%s is not a libotelprofiler: symbol %s missing", path, s.name)
		}
		purego.RegisterFunc(s.fn, addr)
	}
	if addr, err := purego.Dlsym(h, "otelprof_set_frequency"); err == nil && addr != 0 {
		purego.RegisterFunc(&l.setFrequency, addr)
	}
	loaded[path] = l
	return l, nil
}

// Version returns otelprof_version().
func (l *Library) Version() string { return l.version() }

// SearchPaths returns the candidate library paths in lookup order:
// configured path, $OTELPROF_LIBRARY, the running executable's directory,
// then the standard library directories. An explicit path (config or env)
// is the only candidate when set.
func SearchPaths(configured string) []string {
	if configured != "" {
		return []string{configured}
	}
	if env := os.Getenv(LibraryEnv); env != "" {
		return []string{env}
	}
	var dirs []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		d := filepath.Dir(exe)
		dirs = append(dirs, d, filepath.Join(d, "..", "lib"))
	}
	dirs = append(dirs, "/usr/local/lib", "/usr/local/lib64", "/usr/lib", "/usr/lib64")
	if triplet := multiarch(); triplet != "" {
		dirs = append(dirs, "/usr/local/lib/"+triplet, "/usr/lib/"+triplet, "/lib/"+triplet)
	}
	dirs = append(dirs, "/lib", "/lib64")
	var out []string
	seen := map[string]bool{}
	for _, d := range dirs {
		for _, n := range []string{LibraryName, LibrarySoname} {
			p := filepath.Clean(filepath.Join(d, n))
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

func multiarch() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64-linux-gnu"
	case "arm64":
		return "aarch64-linux-gnu"
	}
	return ""
}

// ErrNotFound is returned (wrapped) by Find when no candidate exists.
var ErrNotFound = errors.New("libotelprofiler not found")

// Find returns the first existing candidate of SearchPaths(configured), loaded.
func Find(configured string) (*Library, error) {
	cands := SearchPaths(configured)
	for _, p := range cands {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		return Load(p)
	}
	hint := "set library_path in the receiver config or " + LibraryEnv
	if configured != "" {
		hint = "check library_path in the receiver config"
	} else if os.Getenv(LibraryEnv) != "" {
		hint = "check " + LibraryEnv
	}
	return nil, fmt.Errorf("%w; looked in: %s (%s)", ErrNotFound, strings.Join(cands, ", "), hint)
}

// Profiler is a started otelprof handle.
type Profiler struct {
	lib *Library
	h   uintptr
}

// StartError is returned by Start when otelprof_start fails.
type StartError struct {
	Errno   syscall.Errno
	Message string
}

func (e *StartError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = e.Errno.Error()
	}
	return fmt.Sprintf("otelprof_start failed: %s (errno %d: %s)", msg, int(e.Errno), e.Errno.Error())
}

func (e *StartError) Unwrap() error { return e.Errno }

func cString(s string) ([]byte, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, errors.New("string contains a NUL byte")
	}
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b, nil
}

// Start calls otelprof_start.
func (l *Library) Start(o Options) (*Profiler, error) {
	opts := &cOpts{
		sz:          unsafe.Sizeof(cOpts{}),
		frequencyHz: o.FrequencyHz,
		pid:         o.PID,
		ringbufKB:   o.RingbufKB,
		flags:       o.Flags,
		maxFrames:   o.MaxFrames,

		symbolBudgetMB: o.SymbolBudgetMB,
		fileBudgetMB:   o.FileBudgetMB,

		maxFrequencyHz:          o.MaxFrequencyHz,
		probabilisticThreshold:  o.ProbabilisticThreshold,
		probabilisticIntervalMs: o.ProbabilisticIntervalMs,
		offCPU:                  o.OffCPUThreshold,
	}
	var host []byte
	if o.HostName != "" {
		var err error
		if host, err = cString(o.HostName); err != nil {
			return nil, fmt.Errorf("host name: %w", err)
		}
		opts.hostName = &host[0]
	}
	var btf []byte
	if o.BTFPath != "" {
		var err error
		if btf, err = cString(o.BTFPath); err != nil {
			return nil, fmt.Errorf("btf path: %w", err)
		}
		opts.btfPath = &btf[0]
	}
	var dbgd []byte
	if o.DebuginfodURLs != "" {
		var err error
		if dbgd, err = cString(o.DebuginfodURLs); err != nil {
			return nil, fmt.Errorf("debuginfod urls: %w", err)
		}
		opts.debuginfodURLs = &dbgd[0]
	}
	var envVars []byte
	if o.IncludeEnvVars != "" {
		var err error
		if envVars, err = cString(o.IncludeEnvVars); err != nil {
			return nil, fmt.Errorf("include env vars: %w", err)
		}
		opts.includeEnvVars = &envVars[0]
	}
	errbuf := make([]byte, errbufLen)
	var h uintptr
	rc := l.start(opts, &h, &errbuf[0], uintptr(len(errbuf)))
	runtime.KeepAlive(opts)
	runtime.KeepAlive(btf)
	runtime.KeepAlive(dbgd)
	runtime.KeepAlive(envVars)
	runtime.KeepAlive(host)
	runtime.KeepAlive(errbuf)
	if rc < 0 || h == 0 {
		if rc >= 0 {
			rc = -int32(syscall.EINVAL)
		}
		msg := string(errbuf)
		if i := strings.IndexByte(msg, 0); i >= 0 {
			msg = msg[:i]
		}
		return nil, &StartError{Errno: syscall.Errno(-rc), Message: strings.TrimSpace(msg)}
	}
	return &Profiler{lib: l, h: h}, nil
}

// Poll calls otelprof_poll and returns a Go copy of the payload (nil when
// there were no samples) and the sample count.
func (p *Profiler) Poll() ([]byte, int, error) {
	var data *byte
	var size uintptr
	rc := p.lib.poll(p.h, &data, &size)
	if rc < 0 {
		return nil, 0, p.errorf("otelprof_poll", rc)
	}
	if data == nil {
		return nil, int(rc), nil
	}
	out := make([]byte, size)
	copy(out, unsafe.Slice(data, size))
	p.lib.bufferFree(data)
	return out, int(rc), nil
}

// ErrNoSetFrequency: the loaded library predates otelprof_set_frequency.
var ErrNoSetFrequency = errors.New("the library has no otelprof_set_frequency (older than ABI 0.2)")

// SetFrequency calls otelprof_set_frequency: every CPU samples at hz from
// now on (1..the ceiling, Options.MaxFrequencyHz).
func (p *Profiler) SetFrequency(hz uint32) error {
	if p.lib.setFrequency == nil {
		return ErrNoSetFrequency
	}
	if rc := p.lib.setFrequency(p.h, hz); rc < 0 {
		return p.errorf("otelprof_set_frequency", rc)
	}
	return nil
}

// Stop calls otelprof_stop (idempotent).
func (p *Profiler) Stop() error {
	if rc := p.lib.stop(p.h); rc < 0 {
		return p.errorf("otelprof_stop", rc)
	}
	return nil
}

// Close calls otelprof_close; the Profiler must not be used afterwards.
func (p *Profiler) Close() {
	if p.h != 0 {
		p.lib.closeFn(p.h)
		p.h = 0
	}
}

// Stats calls otelprof_stats.
func (p *Profiler) Stats() (Stats, error) {
	st := &cStats{sz: unsafe.Sizeof(cStats{})}
	rc := p.lib.stats(p.h, st)
	runtime.KeepAlive(st)
	if rc < 0 {
		return Stats{}, p.errorf("otelprof_stats", rc)
	}
	return st.Stats, nil
}

func (p *Profiler) errorf(call string, rc int32) error {
	errno := syscall.Errno(-rc)
	msg := p.lib.errmsg(p.h)
	if msg == "" {
		return fmt.Errorf("%s: %w", call, errno)
	}
	return fmt.Errorf("%s: %s: %w", call, msg, errno)
}
