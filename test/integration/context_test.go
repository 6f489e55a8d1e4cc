// Trace correlation end to end. The workloads in test/workloads/context/
// publish thread context (OTEP 4947) under every TLS access model, process
// context (OTEP 4719) and Elastic v1 correlation data while they burn CPU,
// and print (JSON lines) every thread's intervals: which trace/span and
// attributes were live from when to when. Samples recorded meanwhile must
// carry exactly that context. The publishers themselves are checked first
// without the profiler (relocations, what they put in memory), so that a
// failure further down points at the profiler.
package integration

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	ctxHz      = 99
	ctxSeconds = 8
	// Samples this close to a context switch are not judged: the switch
	// and the timestamp are each a few microseconds apart from the
	// printed interval bounds.
	ctxMargin = uint64(10 * time.Millisecond)
	// From a process's first sample (or the moment its context became
	// readable) to its first sample with a Link: discovery time.
	ctxMaxWarmup = 2 * time.Second
	// Late publications and updates of the process context.
	ctxPickup = 3 * time.Second
	// Samples judged for the whole resource (all threads).
	ctxMinSamples = 100
	// Each thread gets >= ctxDelivered of the samples its own CPU time
	// while sampling was on calls for (schedstat x Hz): a loaded host
	// starves the workload, never the count of what it ran. And judged
	// samples each context thread must have in and out of context, each
	// thread without context in all: the test cannot pass on a handful.
	ctxDelivered = 0.80
	ctxMinInCtx  = 20
	ctxMinNone   = 3
	ctxMinNoCtx  = 20
	ctxShare     = 0.99
)

// ctxEvent is one line of a context workload's stdout.
type ctxEvent struct {
	Event         string            `json:"event"`
	Pid           int               `json:"pid"`
	Tid           int64             `json:"tid"`
	Name          string            `json:"name"`
	Strategy      string            `json:"strategy"`
	TLSOffset     int64             `json:"tls_offset"`
	TLS           string            `json:"tls"`
	Variant       string            `json:"variant"`
	Mode          string            `json:"mode"`
	Path          string            `json:"path"`
	UnixNs        uint64            `json:"unix_ns"`
	StartNs       uint64            `json:"start_ns"`
	EndNs         uint64            `json:"end_ns"`
	TraceID       string            `json:"trace_id"`
	SpanID        string            `json:"span_id"`
	Attrs         map[string]string `json:"attrs"`
	Dropped       []string          `json:"dropped"`
	Kind          string            `json:"kind"`
	Update        bool              `json:"update"`
	PublishedAt   uint64            `json:"published_at_ns"`
	Address       string            `json:"address"`
	Named         bool              `json:"named"`
	Resource      map[string]string `json:"resource"`
	KeyMap        []string          `json:"key_map"`
	SchemaVersion string            `json:"schema_version"`
	ServiceName   string            `json:"service_name"`
	Environment   string            `json:"environment"`
	SocketPath    string            `json:"socket_path"`
	Messages      int               `json:"messages"`
	Registrations int               `json:"registrations"`
	Correlations  int               `json:"correlations"`
	Malformed     int               `json:"malformed"`
	FirstIsReg    bool              `json:"first_is_registration"`
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// ctxWorkload is a running context workload and what it printed so far.
type ctxWorkload struct {
	name    string
	cmd     *exec.Cmd
	pid     int
	stderr  lockedBuffer
	mu      sync.Mutex
	events  []ctxEvent
	junk    []string
	exited  chan struct{}
	waitErr error
}

// launchCtx starts build/workloads/NAME; it does not touch t, so that it
// can run in recordWith's callback goroutine.
func launchCtx(bin, name string, env []string, args ...string) (*ctxWorkload, error) {
	w := &ctxWorkload{name: name, exited: make(chan struct{})}
	w.cmd = exec.Command(filepath.Join(bin, "workloads", name), args...)
	w.cmd.Env = append(os.Environ(), env...)
	w.cmd.Stderr = &w.stderr
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := w.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	w.pid = w.cmd.Process.Pid
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			var ev ctxEvent
			line := sc.Text()
			w.mu.Lock()
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				w.junk = append(w.junk, line)
			} else {
				w.events = append(w.events, ev)
			}
			w.mu.Unlock()
		}
		w.waitErr = w.cmd.Wait()
		close(w.exited)
	}()
	return w, nil
}

func startCtx(t *testing.T, env []string, name string, args ...string) *ctxWorkload {
	t.Helper()
	w, err := launchCtx(buildDir(t), name, env, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.kill)
	return w
}

func (w *ctxWorkload) kill() {
	select {
	case <-w.exited:
	default:
		_ = w.cmd.Process.Kill()
		<-w.exited
	}
}

func (w *ctxWorkload) all(event string) []ctxEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []ctxEvent
	for _, e := range w.events {
		if e.Event == event {
			out = append(out, e)
		}
	}
	return out
}

// one is the single event of that kind (the first if several).
func (w *ctxWorkload) one(t *testing.T, event string) ctxEvent {
	t.Helper()
	evs := w.all(event)
	if len(evs) == 0 {
		t.Fatalf("%s printed no %q event; stderr:\n%s", w.name, event, w.stderr.String())
	}
	return evs[0]
}

// waitEvents waits until the workload printed n events of that kind.
func (w *ctxWorkload) waitEvents(t *testing.T, event string, n int, timeout time.Duration) []ctxEvent {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if evs := w.all(event); len(evs) >= n {
			return evs
		}
		select {
		case <-w.exited:
			t.Fatalf("%s exited (%v) before printing %d %q events; stderr:\n%s", w.name, w.waitErr, n, event, w.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s printed no %q event within %v; stderr:\n%s", w.name, event, timeout, w.stderr.String())
		}
	}
}

// stop ends the workload (SIGTERM: it prints its last intervals) and
// checks that it ran without error.
func (w *ctxWorkload) stop(t *testing.T) {
	t.Helper()
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.exited:
	case <-time.After(15 * time.Second):
		w.kill()
		t.Fatalf("%s did not stop on SIGTERM", w.name)
	}
	if w.waitErr != nil {
		t.Fatalf("%s failed: %v; stderr:\n%s", w.name, w.waitErr, w.stderr.String())
	}
	if len(w.junk) > 0 {
		t.Fatalf("%s printed lines that are not JSON: %q", w.name, w.junk)
	}
	if len(w.all("exit")) != 1 {
		t.Fatalf("%s has no exit event", w.name)
	}
}

// ctxThreads: threads with context (by tid) and those without.
func (w *ctxWorkload) threads() (withCtx map[int64]ctxEvent, without map[int64]ctxEvent) {
	withCtx, without = map[int64]ctxEvent{}, map[int64]ctxEvent{}
	for _, e := range w.all("thread") {
		if e.Strategy == "none" {
			without[e.Tid] = e
		} else {
			withCtx[e.Tid] = e
		}
	}
	return
}

func (w *ctxWorkload) intervals() map[int64][]ctxEvent {
	out := map[int64][]ctxEvent{}
	for _, e := range w.all("interval") {
		out[e.Tid] = append(out[e.Tid], e)
	}
	for _, ivs := range out {
		sort.Slice(ivs, func(i, j int) bool { return ivs[i].StartNs < ivs[j].StartNs })
	}
	return out
}

// ---- the publishers, without the profiler ----

type dynReloc struct {
	Type    elf.R_X86_64
	Sym     string
	Section string
}

// dynRelocs: every relocation against .dynsym, from every SHT_RELA
// section (GNU ld puts R_X86_64_TLSDESC in .rela.plt, lld in .rela.dyn).
func dynRelocs(t *testing.T, f *elf.File) []dynReloc {
	t.Helper()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatalf("dynamic symbols: %v", err)
	}
	var out []dynReloc
	for _, sec := range f.Sections {
		if sec.Type != elf.SHT_RELA || int(sec.Link) >= len(f.Sections) ||
			f.Sections[sec.Link].Type != elf.SHT_DYNSYM {
			continue
		}
		data, err := sec.Data()
		if err != nil {
			t.Fatalf("%s: %v", sec.Name, err)
		}
		for off := 0; off+24 <= len(data); off += 24 {
			info := f.ByteOrder.Uint64(data[off+8:])
			r := dynReloc{Type: elf.R_X86_64(info & 0xffffffff), Section: sec.Name}
			if si := info >> 32; si > 0 && int(si) <= len(syms) {
				r.Sym = syms[si-1].Name
			}
			out = append(out, r)
		}
	}
	return out
}

func dynSym(t *testing.T, f *elf.File, name string) *elf.Symbol {
	t.Helper()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatalf("dynamic symbols: %v", err)
	}
	for i := range syms {
		if syms[i].Name == name && syms[i].Section != elf.SHN_UNDEF {
			return &syms[i]
		}
	}
	return nil
}

var tlsRelocTypes = map[elf.R_X86_64]bool{
	elf.R_X86_64_TLSDESC: true, elf.R_X86_64_DTPMOD64: true,
	elf.R_X86_64_DTPOFF64: true, elf.R_X86_64_TPOFF64: true,
	elf.R_X86_64_TPOFF32: true,
}

// Each build carries the TLS access model its name promises. A compiler
// or linker that picks another model silently would make the tests below
// test something else.
func TestContextPublisherRelocations(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Fatalf("relocation expectations are written for x86_64 (GOARCH %s)", runtime.GOARCH)
	}
	dir := filepath.Join(buildDir(t), "workloads")
	cases := []struct {
		file, sym string
		want      []elf.R_X86_64 // relocations against sym, exactly these types
	}{
		{"libotelctx_tlsdesc.so", "otel_thread_ctx_v1", []elf.R_X86_64{elf.R_X86_64_TLSDESC}},
		{"libotelctx_gd.so", "otel_thread_ctx_v1", []elf.R_X86_64{elf.R_X86_64_DTPMOD64, elf.R_X86_64_DTPOFF64}},
		{"libotelctx_ie.so", "otel_thread_ctx_v1", []elf.R_X86_64{elf.R_X86_64_TPOFF64}},
		{"elastic-jvmti-linux-x64.so", "elastic_apm_profiling_correlation_tls_v1", []elf.R_X86_64{elf.R_X86_64_TLSDESC}},
		// local-exec: resolved at link time, no dynamic relocation.
		{"ctx_exe_le", "otel_thread_ctx_v1", nil},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			f, err := elf.Open(filepath.Join(dir, c.file))
			if err != nil {
				t.Fatalf("%v (run `make workloads`)", err)
			}
			defer f.Close()
			s := dynSym(t, f, c.sym)
			if s == nil {
				t.Fatalf("%s: %s is not defined in .dynsym", c.file, c.sym)
			}
			if elf.ST_TYPE(s.Info) != elf.STT_TLS || s.Size != 8 || elf.ST_BIND(s.Info) != elf.STB_GLOBAL {
				t.Errorf("%s: %s is %v %v size %d, want a GLOBAL TLS symbol of 8 bytes",
					c.file, c.sym, elf.ST_TYPE(s.Info), elf.ST_BIND(s.Info), s.Size)
			}
			got := map[elf.R_X86_64]int{}
			var all []string
			for _, r := range dynRelocs(t, f) {
				if r.Sym == c.sym || (c.want == nil && tlsRelocTypes[r.Type]) {
					got[r.Type]++
					all = append(all, fmt.Sprintf("%v %s (%s)", r.Type, r.Sym, r.Section))
				}
			}
			t.Logf("%s: %s relocations: %v", c.file, c.sym, all)
			want := map[elf.R_X86_64]bool{}
			for _, ty := range c.want {
				want[ty] = true
				if got[ty] == 0 {
					t.Errorf("%s: no %v for %s: the TLS model changed (got %v)", c.file, ty, c.sym, all)
				}
			}
			for ty := range got {
				if !want[ty] {
					t.Errorf("%s: unexpected %v for %s (got %v)", c.file, ty, c.sym, all)
				}
			}
			if c.want == nil && f.Type != elf.ET_DYN {
				t.Errorf("%s: want a PIE executable, got %v", c.file, f.Type)
			}
		})
	}
	t.Run("elastic process storage", func(t *testing.T) {
		f, err := elf.Open(filepath.Join(dir, "elastic-jvmti-linux-x64.so"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		s := dynSym(t, f, "elastic_apm_profiling_correlation_process_storage_v1")
		if s == nil || elf.ST_TYPE(s.Info) != elf.STT_OBJECT || s.Size != 8 {
			t.Fatalf("elastic_apm_profiling_correlation_process_storage_v1 is not an 8-byte data symbol: %+v", s)
		}
	})
	for _, c := range []struct{ exe, lib string }{
		{"ctx_linked_tlsdesc", "libotelctx_tlsdesc.so"}, {"ctx_linked_ie", "libotelctx_ie.so"},
	} {
		f, err := elf.Open(filepath.Join(dir, c.exe))
		if err != nil {
			t.Fatal(err)
		}
		libs, _ := f.ImportedLibraries()
		if !containsStr(libs, c.lib) {
			t.Errorf("%s does not link %s at start-up (DT_NEEDED %v)", c.exe, c.lib, libs)
		}
		if dynSym(t, f, "otel_thread_ctx_v1") != nil {
			t.Errorf("%s defines otel_thread_ctx_v1 itself", c.exe)
		}
		f.Close()
	}
}

func containsStr(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ctxCase is one way of publishing thread context.
type ctxCase struct {
	name    string
	bin     string
	args    []string // besides --lib, which libArg adds
	lib     string   // dlopen'd publisher, "" for linked builds
	env     []string
	variant string // what the publisher reports
	wantTLS string // where the workload found its TLS slot
}

func (c ctxCase) argv(bin string, extra ...string) []string {
	var a []string
	if c.lib != "" {
		flag := "--lib"
		if c.variant == "elastic" {
			flag = "--elastic"
		}
		a = append(a, flag, filepath.Join(bin, "workloads", c.lib))
	}
	return append(append(a, c.args...), extra...)
}

var (
	ctxLinkedTLSDESC = ctxCase{name: "linked TLSDESC", bin: "ctx_linked_tlsdesc", variant: "tlsdesc", wantTLS: "static"}
	ctxDlopenTLSDESC = ctxCase{name: "dlopen TLSDESC", bin: "ctx_dlopen", lib: "libotelctx_tlsdesc.so", variant: "tlsdesc", wantTLS: "static"}
	ctxDlopenDynamic = ctxCase{name: "dlopen TLSDESC, dynamic TLS", bin: "ctx_dlopen", lib: "libotelctx_tlsdesc.so",
		env: []string{"GLIBC_TUNABLES=glibc.rtld.optional_static_tls=0"}, variant: "tlsdesc", wantTLS: "dynamic"}
	ctxDlopenGD      = ctxCase{name: "dlopen legacy GD", bin: "ctx_dlopen", lib: "libotelctx_gd.so", variant: "gd", wantTLS: "dynamic"}
	ctxLinkedIE      = ctxCase{name: "linked initial-exec", bin: "ctx_linked_ie", variant: "ie", wantTLS: "static"}
	ctxExeLE         = ctxCase{name: "executable local-exec", bin: "ctx_exe_le", variant: "le", wantTLS: "static"}
	ctxElastic       = ctxCase{name: "Elastic v1", bin: "ctx_dlopen", lib: "elastic-jvmti-linux-x64.so", variant: "elastic", wantTLS: "static"}
	ctxAllCases      = []ctxCase{ctxLinkedTLSDESC, ctxDlopenTLSDESC, ctxDlopenDynamic, ctxDlopenGD, ctxLinkedIE, ctxExeLE, ctxElastic}
	ctxSchemaVersion = "tlsdesc_v1_dev"
)

// ---- reading the publisher's memory from outside, as a profiler would ----

type procMem struct{ f *os.File }

func openMem(t *testing.T, pid int) procMem {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatalf("open /proc/%d/mem: %v", pid, err)
	}
	t.Cleanup(func() { f.Close() })
	return procMem{f}
}

func (m procMem) read(t *testing.T, addr uint64, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := m.f.ReadAt(b, int64(addr)); err != nil {
		t.Fatalf("read %d bytes at %#x: %v", n, addr, err)
	}
	return b
}

// mapsLine is the /proc/PID/maps line that contains addr.
func mapsLine(t *testing.T, pid int, addr uint64) string {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		var lo, hi uint64
		if _, err := fmt.Sscanf(l, "%x-%x", &lo, &hi); err == nil && addr >= lo && addr < hi {
			return l
		}
	}
	return ""
}

// pbField is one field of a protobuf message (varint or length-delimited).
type pbField struct {
	num   int
	wire  int
	value uint64
	bytes []byte
}

func pbParse(b []byte) ([]pbField, error) {
	var out []pbField
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[n:]
		f := pbField{num: int(key >> 3), wire: int(key & 7)}
		switch f.wire {
		case 0:
			f.value, n = binary.Uvarint(b)
			if n <= 0 {
				return nil, errors.New("bad varint")
			}
			b = b[n:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return nil, errors.New("bad length")
			}
			f.bytes = b[n : n+int(l)]
			b = b[n+int(l):]
		default:
			return nil, fmt.Errorf("unexpected wire type %d", f.wire)
		}
		out = append(out, f)
	}
	return out, nil
}

// pbKeyValue decodes a KeyValue with a string or string-array value.
func pbKeyValue(b []byte) (key string, str string, arr []string, err error) {
	fs, err := pbParse(b)
	if err != nil {
		return
	}
	for _, f := range fs {
		switch f.num {
		case 1:
			key = string(f.bytes)
		case 2:
			var any []pbField
			if any, err = pbParse(f.bytes); err != nil {
				return
			}
			for _, a := range any {
				switch a.num {
				case 1:
					str = string(a.bytes)
				case 5:
					var vals []pbField
					if vals, err = pbParse(a.bytes); err != nil {
						return
					}
					for _, v := range vals {
						var sv []pbField
						if sv, err = pbParse(v.bytes); err != nil {
							return
						}
						for _, s := range sv {
							if s.num == 1 {
								arr = append(arr, string(s.bytes))
							}
						}
					}
				}
			}
		}
	}
	return
}

// readProcessContext follows the OTEP 4719 reading protocol on the header
// at addr and decodes the ProcessContext payload.
func readProcessContext(t *testing.T, pid int, addr uint64) (resource map[string]string, extra map[string]any, publishedAt uint64) {
	t.Helper()
	m := openMem(t, pid)
	h := m.read(t, addr, 32)
	if string(h[:8]) != "OTEL_CTX" || binary.LittleEndian.Uint32(h[8:]) != 2 {
		t.Fatalf("header at %#x: %q version %d", addr, h[:8], binary.LittleEndian.Uint32(h[8:]))
	}
	size := binary.LittleEndian.Uint32(h[12:])
	publishedAt = binary.LittleEndian.Uint64(h[16:])
	payload := binary.LittleEndian.Uint64(h[24:])
	if publishedAt == 0 || size == 0 || payload == 0 {
		t.Fatalf("header at %#x not published: size %d at %#x, published_at %d", addr, size, payload, publishedAt)
	}
	body := m.read(t, payload, int(size))
	if again := binary.LittleEndian.Uint64(m.read(t, addr+16, 8)); again != publishedAt {
		t.Fatalf("process context changed while read")
	}
	fs, err := pbParse(body)
	if err != nil {
		t.Fatalf("payload: %v", err)
	}
	resource, extra = map[string]string{}, map[string]any{}
	for _, f := range fs {
		switch f.num {
		case 1:
			rfs, err := pbParse(f.bytes)
			if err != nil {
				t.Fatalf("resource: %v", err)
			}
			for _, rf := range rfs {
				if rf.num == 1 {
					k, v, _, err := pbKeyValue(rf.bytes)
					if err != nil {
						t.Fatalf("resource attribute: %v", err)
					}
					resource[k] = v
				}
			}
		case 2:
			k, v, arr, err := pbKeyValue(f.bytes)
			if err != nil {
				t.Fatalf("attribute: %v", err)
			}
			if arr != nil {
				extra[k] = arr
			} else {
				extra[k] = v
			}
		}
	}
	return
}

// checkProcessContextMemory: what the workload says it published is in
// its memory, where and how the OTEP says.
func checkProcessContextMemory(t *testing.T, w *ctxWorkload, pc ctxEvent) {
	t.Helper()
	addr, err := strconv.ParseUint(strings.TrimPrefix(pc.Address, "0x"), 16, 64)
	if err != nil {
		t.Fatalf("address %q: %v", pc.Address, err)
	}
	line := mapsLine(t, w.pid, addr)
	switch {
	case pc.Kind == "memfd" && !strings.Contains(line, "/memfd:OTEL_CTX"):
		t.Errorf("memfd process context mapping: %q", line)
	case pc.Kind == "anon" && pc.Named && !strings.HasSuffix(line, "[anon:OTEL_CTX]"):
		t.Errorf("anon process context mapping: %q", line)
	case pc.Kind == "anon_shmem" && pc.Named && !strings.HasSuffix(line, "[anon_shmem:OTEL_CTX]"):
		t.Errorf("anon_shmem process context mapping: %q", line)
	case pc.Kind != "memfd" && !pc.Named:
		t.Logf("kernel refused to name the %s mapping (CONFIG_ANON_VMA_NAME unset?): %q", pc.Kind, line)
	}
	res, extra, at := readProcessContext(t, w.pid, addr)
	if at != pc.PublishedAt {
		t.Errorf("published_at_ns %d in memory, workload printed %d", at, pc.PublishedAt)
	}
	for k, v := range pc.Resource {
		if res[k] != v {
			t.Errorf("resource %s = %q in memory, want %q", k, res[k], v)
		}
	}
	if len(res) != len(pc.Resource) {
		t.Errorf("resource in memory %v, workload printed %v", res, pc.Resource)
	}
	if extra["threadlocal.schema_version"] != ctxSchemaVersion {
		t.Errorf("threadlocal.schema_version = %v", extra["threadlocal.schema_version"])
	}
	if km, _ := extra["threadlocal.attribute_key_map"].([]string); strings.Join(km, ",") != strings.Join(pc.KeyMap, ",") {
		t.Errorf("threadlocal.attribute_key_map = %v, want %v", extra["threadlocal.attribute_key_map"], pc.KeyMap)
	}
}

// checkElasticMemory reads the Elastic process storage through the
// exported pointer, as the profiler does.
func checkElasticMemory(t *testing.T, w *ctxWorkload, lib string, ep ctxEvent) {
	t.Helper()
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := dynSym(t, f, "elastic_apm_profiling_correlation_process_storage_v1")
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", w.pid))
	if err != nil {
		t.Fatal(err)
	}
	var base uint64
	for _, l := range strings.Split(string(raw), "\n") {
		var lo, hi, off uint64
		var perms string
		if _, err := fmt.Sscanf(l, "%x-%x %s %x", &lo, &hi, &perms, &off); err == nil && off == 0 && strings.HasSuffix(l, lib) {
			base = lo
			break
		}
	}
	if base == 0 {
		t.Fatalf("%s not mapped", lib)
	}
	m := openMem(t, w.pid)
	ptr := binary.LittleEndian.Uint64(m.read(t, base+s.Value, 8))
	if ptr == 0 {
		t.Fatalf("process storage pointer is NULL")
	}
	b := m.read(t, ptr, 2+3*4+256)
	if minor := binary.LittleEndian.Uint16(b); minor != 1 {
		t.Errorf("process storage minor %d", minor)
	}
	b = b[2:]
	var strs []string
	for i := 0; i < 3; i++ {
		n := binary.LittleEndian.Uint32(b)
		if int(n) > len(b)-4 {
			t.Fatalf("process storage string %d: length %d", i, n)
		}
		strs = append(strs, string(b[4:4+n]))
		b = b[4+n:]
	}
	if strs[0] != ep.ServiceName || strs[1] != ep.Environment || strs[2] != ep.SocketPath {
		t.Errorf("process storage %q, workload printed %q %q %q", strs, ep.ServiceName, ep.Environment, ep.SocketPath)
	}
}

// checkIntervals: the workload's own account is consistent (each context
// thread went through every pattern, back to back).
func checkIntervals(t *testing.T, w *ctxWorkload) {
	t.Helper()
	withCtx, without := w.threads()
	ivs := w.intervals()
	if len(withCtx) < 1 || len(without) != 1 {
		t.Fatalf("%d context threads, %d without", len(withCtx), len(without))
	}
	seen := map[string]bool{}
	for tid := range withCtx {
		list := ivs[tid]
		if len(list) < 6 {
			t.Errorf("thread %d: only %d intervals", tid, len(list))
			continue
		}
		none := 0
		for i, iv := range list {
			if iv.EndNs < iv.StartNs {
				t.Errorf("thread %d: interval ends before it starts", tid)
			}
			// Between two intervals the thread prints and switches;
			// it may also be preempted there (4 busy threads).
			if i > 0 && (iv.StartNs < list[i-1].EndNs || iv.StartNs-list[i-1].EndNs > uint64(time.Second)) {
				t.Errorf("thread %d: interval %d starts %v after the previous one ended", tid, i, time.Duration(iv.StartNs-list[i-1].EndNs))
			}
			if iv.TraceID == "" {
				none++
				continue
			}
			if len(iv.TraceID) != 32 || len(iv.SpanID) != 16 || seen[iv.TraceID+iv.SpanID] {
				t.Errorf("thread %d: bad or repeated ids %s %s", tid, iv.TraceID, iv.SpanID)
			}
			seen[iv.TraceID+iv.SpanID] = true
		}
		if none < 2 {
			t.Errorf("thread %d: %d intervals without context", tid, none)
		}
	}
}

// Without the profiler: every workload build runs, publishes where the
// specs say, with the TLS placement (static or dynamic) its test claims,
// and prints a consistent account. Failures here are the workload's.
func TestContextWorkloadSelfCheck(t *testing.T) {
	requireRoot(t) // reads /proc/PID/mem
	bin := buildDir(t)
	type run struct {
		ctxCase
		extra   []string
		signals bool // --dlopen-on-signal --proc-ctx-on-signal
	}
	runs := []run{}
	for _, c := range ctxAllCases {
		runs = append(runs, run{ctxCase: c})
	}
	for _, kind := range []string{"anon", "anon_shmem"} {
		c := ctxDlopenTLSDESC
		c.name = "process context " + kind
		runs = append(runs, run{ctxCase: c, extra: []string{"--proc-ctx", kind}})
	}
	late := ctxDlopenTLSDESC
	late.name = "late process context and update"
	runs = append(runs, run{ctxCase: late, extra: []string{"--proc-ctx-delay-ms", "300", "--proc-ctx-update-ms", "700"}})
	delayed := ctxDlopenTLSDESC
	delayed.name = "late dlopen"
	runs = append(runs, run{ctxCase: delayed, extra: []string{"--dlopen-delay-ms", "300"}})
	signalled := ctxDlopenTLSDESC
	signalled.name = "dlopen, publication and update on signals"
	runs = append(runs, run{ctxCase: signalled, extra: []string{"--dlopen-on-signal", "--proc-ctx-on-signal"}, signals: true})

	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			w := startCtx(t, r.env, r.bin, r.argv(bin, r.extra...)...)
			w.waitEvents(t, "ready", 1, 10*time.Second)
			if r.signals {
				time.Sleep(200 * time.Millisecond)
				if len(w.all("library")) != 0 || len(w.all("process_context")) != 0 {
					t.Fatalf("published before the signals")
				}
				_ = w.cmd.Process.Signal(syscall.SIGUSR2)
				w.waitEvents(t, "library", 1, 10*time.Second)
				_ = w.cmd.Process.Signal(syscall.SIGUSR1)
				w.waitEvents(t, "process_context", 1, 10*time.Second)
				_ = w.cmd.Process.Signal(syscall.SIGUSR1) // the update
			}
			threads := w.waitEvents(t, "thread", 4, 10*time.Second)
			lib := w.one(t, "library")
			if lib.Variant != r.variant {
				t.Errorf("publisher variant %q, want %q", lib.Variant, r.variant)
			}
			for _, th := range threads {
				if th.Strategy != "none" && th.TLS != r.wantTLS {
					t.Errorf("thread %d (%s): TLS slot at %d from the thread pointer (%s), want %s TLS",
						th.Tid, th.Name, th.TLSOffset, th.TLS, r.wantTLS)
				}
			}
			if r.variant == "elastic" {
				checkElasticMemory(t, w, filepath.Join(bin, "workloads", r.lib), w.one(t, "elastic_process"))
			} else {
				want := 1
				if r.signals || containsStr(r.extra, "--proc-ctx-update-ms") {
					want = 2
				}
				pcs := w.waitEvents(t, "process_context", want, 10*time.Second)
				pc := pcs[len(pcs)-1]
				if want == 2 && (!pc.Update || pc.Resource["service.version"] != "2.0.0" || pc.PublishedAt == pcs[0].PublishedAt) {
					t.Errorf("update: %+v", pc)
				}
				checkProcessContextMemory(t, w, pc)
			}
			time.Sleep(2 * time.Second)
			w.stop(t)
			checkIntervals(t, w)
			if r.variant == "elastic" {
				if s := w.one(t, "elastic_socket"); s.Messages != 0 {
					t.Errorf("%d messages on the Elastic socket without a profiler", s.Messages)
				}
			}
		})
	}
}

// ---- judging a recording ----

// processesFor: every ResourceProfiles of that pid (a profiler may split a
// process whose resource changed).
func processesFor(d *Decoded, pid int) []*Process {
	var out []*Process
	for _, p := range d.Processes {
		if v, ok := p.Attrs["process.pid"].(int64); ok && int(v) == pid {
			out = append(out, p)
		}
	}
	return out
}

func samplesOf(procs []*Process) []Sample {
	var out []Sample
	for _, p := range procs {
		out = append(out, p.Samples...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TimeNs < out[j].TimeNs })
	return out
}

type ctxJudge struct {
	keyMap    []string // context attribute names (nil: Elastic, no attributes)
	wantTLS   string
	from      uint64 // unix ns the context became readable (0: always)
	maxWarmup time.Duration
	log       string // otelprof's stderr, for failures
	note      string // context for failures
	// Judged samples each thread needs where its CPU time is not known
	// (the kernel matrix's emulated guests; 0: judge by cpu).
	minSamples int
	// CPU seconds of each thread while the profiler sampled (schedstat)
	cpu map[int64]float64
}

func short(s string) string {
	if len(s) > 24 {
		return fmt.Sprintf("%s...(%d bytes)", s[:16], len(s))
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// ctxMismatch is why sample s does not carry interval iv's context ("" if
// it does): the Link, each attribute of the key map, dropped entries.
func ctxMismatch(s Sample, iv ctxEvent, keyMap []string) string {
	var why []string
	if s.TraceID != iv.TraceID || s.SpanID != iv.SpanID {
		why = append(why, fmt.Sprintf("link %s/%s, want %s/%s", orNone(s.TraceID), orNone(s.SpanID), orNone(iv.TraceID), orNone(iv.SpanID)))
	}
	for _, k := range keyMap {
		want, ok := iv.Attrs[k]
		v, has := s.Attrs[k]
		got, isStr := v.(string)
		switch {
		case ok && !has:
			why = append(why, fmt.Sprintf("%s missing (want %q)", k, short(want)))
		case ok && (!isStr || got != want):
			why = append(why, fmt.Sprintf("%s = %v, want %q", k, short(fmt.Sprint(v)), short(want)))
		case !ok && has:
			why = append(why, fmt.Sprintf("%s = %v, want none", k, short(fmt.Sprint(v))))
		}
	}
	for _, d := range iv.Dropped {
		for k, v := range s.Attrs {
			if v == d {
				why = append(why, fmt.Sprintf("out-of-range entry %q kept as %s", short(d), k))
			}
		}
	}
	return strings.Join(why, "; ")
}

func hasAnyKey(s Sample, keys []string) bool {
	for _, k := range keys {
		if _, ok := s.Attrs[k]; ok {
			return true
		}
	}
	return false
}

func findInterval(ivs []ctxEvent, ts uint64) (ctxEvent, bool) {
	for _, iv := range ivs {
		if ts >= iv.StartNs+ctxMargin && ts+ctxMargin <= iv.EndNs {
			return iv, true
		}
	}
	return ctxEvent{}, false
}

type threadTally struct {
	judged, good, inCtx, inCtxGood, none, noneGood, warm, gap int
	bad                                                       []string
}

// judgeThreadContext: per thread, >= 99% of the samples inside an interval
// carry exactly its context; the thread without context never does.
func judgeThreadContext(t *testing.T, w *ctxWorkload, procs []*Process, j ctxJudge) {
	t.Helper()
	samples := samplesOf(procs)
	if len(samples) == 0 {
		t.Fatalf("no samples for pid %d\n%s", w.pid, j.log)
	}
	withCtx, without := w.threads()
	ivs := w.intervals()
	for tid, th := range withCtx {
		if j.wantTLS != "" && th.TLS != j.wantTLS {
			t.Errorf("thread %d found its TLS slot %d bytes from the thread pointer (%s TLS), this test is about %s TLS",
				tid, th.TLSOffset, th.TLS, j.wantTLS)
		}
	}

	// Discovery: samples before the context is fully readable (a Link
	// and, with a key map, named attributes, at or after j.from) are not
	// judged: the profiler learns the process, its libraries, their TLS
	// and its process context first. That must not take long.
	var firstLinked, cutoff uint64
	for _, s := range samples {
		if s.TimeNs < j.from || s.TraceID == "" {
			continue
		}
		if firstLinked == 0 {
			firstLinked = s.TimeNs
		}
		if j.keyMap == nil || hasAnyKey(s, j.keyMap) {
			cutoff = s.TimeNs
			break
		}
	}
	if firstLinked == 0 {
		t.Fatalf("none of the %d samples of pid %d carries a Link: the thread context was not read%s\notelprof:\n%s",
			len(samples), w.pid, j.note, j.log)
	}
	if cutoff == 0 {
		t.Fatalf("samples of pid %d carry Links but none an attribute named by the key map %v: the process context's threadlocal.attribute_key_map was not applied%s\notelprof:\n%s",
			w.pid, j.keyMap, j.note, j.log)
	}
	base := samples[0].TimeNs
	if j.from > base {
		base = j.from
	}
	if cutoff > base && time.Duration(cutoff-base) > j.maxWarmup {
		t.Errorf("first sample with the whole context %v after it became readable (process's first sample or publication), want <= %v%s",
			time.Duration(cutoff-base), j.maxWarmup, j.note)
	}

	minSamples, minNone, minNoCtx, minKind := ctxMinInCtx, ctxMinNone, ctxMinNoCtx, 5
	if j.minSamples > 0 {
		minSamples, minNone, minNoCtx, minKind = j.minSamples, max(j.minSamples/10, 1), j.minSamples, max(j.minSamples/20, 1)
	}
	tally := map[int64]*threadTally{}
	var others, othersLinked int
	kinds := map[string]int{}
	for _, s := range samples {
		tid := s.ThreadID
		if _, ok := withCtx[tid]; ok {
			tt := tally[tid]
			if tt == nil {
				tt = &threadTally{}
				tally[tid] = tt
			}
			iv, ok := findInterval(ivs[tid], s.TimeNs)
			if !ok {
				tt.gap++
				continue
			}
			if s.TimeNs < cutoff {
				tt.warm++
				continue
			}
			tt.judged++
			why := ctxMismatch(s, iv, j.keyMap)
			if iv.TraceID != "" {
				tt.inCtx++
			} else {
				tt.none++
			}
			if why == "" {
				tt.good++
				if iv.TraceID != "" {
					tt.inCtxGood++
					switch {
					case len(iv.Dropped) > 0 && len(iv.Attrs) < 3:
						kinds["with an out-of-range key"]++
					case len(iv.Dropped) > 0:
						kinds["640-byte record"]++
					case len(iv.Attrs) > 0:
						kinds["with attributes"]++
					default:
						kinds["without attributes"]++
					}
				} else {
					tt.noneGood++
				}
			} else if len(tt.bad) < 6 {
				tt.bad = append(tt.bad, fmt.Sprintf("at +%v of [%d, %d]: %s",
					time.Duration(s.TimeNs-iv.StartNs), iv.StartNs, iv.EndNs, why))
			}
			continue
		}
		if _, ok := without[tid]; ok {
			tt := tally[tid]
			if tt == nil {
				tt = &threadTally{}
				tally[tid] = tt
			}
			tt.judged++
			tt.none++
			if why := ctxMismatch(s, ctxEvent{}, j.keyMap); why == "" {
				tt.good++
				tt.noneGood++
			} else if len(tt.bad) < 6 {
				tt.bad = append(tt.bad, why)
			}
			continue
		}
		others++
		if s.TraceID != "" {
			othersLinked++
		}
	}
	t.Logf("pid %d: %d samples, whole context %v after it became readable; correct samples by kind of interval: %v",
		w.pid, len(samples), time.Duration(max(cutoff, base)-base), kinds)
	// Every sample of a thread against what its CPU time calls for:
	// samples lost between the kernel and the file would show here.
	perThread := map[int64]int{}
	for _, s := range samples {
		perThread[s.ThreadID]++
	}
	judged := func(tid int64, name string) {
		cpu, ok := j.cpu[tid]
		if !ok && j.cpu == nil && j.minSamples > 0 {
			return // judged by count alone
		}
		if !ok {
			t.Errorf("thread %d (%s): its CPU time while sampling was not measured", tid, name)
			return
		}
		want := cpu * ctxHz
		t.Logf("thread %d %s: %d samples for %.2f s of CPU x %d Hz = %.0f (%.0f%%)",
			tid, name, perThread[tid], cpu, ctxHz, want, 100*float64(perThread[tid])/math.Max(want, 1))
		if float64(perThread[tid]) < ctxDelivered*want {
			t.Errorf("thread %d (%s): %d samples, want >= %.0f%% of its %.2f s of CPU x %d Hz = %.0f%s",
				tid, name, perThread[tid], 100*ctxDelivered, cpu, ctxHz, want, j.note)
		}
	}
	for tid, th := range withCtx {
		judged(tid, th.Name)
	}
	for tid, th := range without {
		judged(tid, th.Name)
	}
	for tid, th := range withCtx {
		tt := tally[tid]
		if tt == nil {
			t.Errorf("thread %d (%s): no samples%s", tid, th.Name, j.note)
			continue
		}
		share := float64(tt.good) / float64(max(tt.judged, 1))
		t.Logf("thread %d %s (%s, %s TLS at %d): %d judged, %d right (%.2f%%): %d/%d in context, %d/%d without; %d near a switch, %d in discovery",
			tid, th.Name, th.Strategy, th.TLS, th.TLSOffset, tt.judged, tt.good, 100*share,
			tt.inCtxGood, tt.inCtx, tt.noneGood, tt.none, tt.gap, tt.warm)
		if tt.inCtx < minSamples || tt.none < minNone {
			t.Errorf("thread %d: only %d samples in context and %d without were judged (want >= %d and >= %d)",
				tid, tt.inCtx, tt.none, minSamples, minNone)
		}
		if share < ctxShare {
			t.Errorf("thread %d (%s): %.2f%% of samples carry their interval's context, want >= %.0f%%%s; first wrong:\n  %s",
				tid, th.Name, 100*share, 100*ctxShare, j.note, strings.Join(tt.bad, "\n  "))
		}
	}
	for tid, th := range without {
		tt := tally[tid]
		if tt == nil || tt.judged < minNoCtx {
			t.Errorf("thread %d (%s, never has context): too few samples (%v)", tid, th.Name, tt)
			continue
		}
		t.Logf("thread %d %s (no context): %d samples, %d without context", tid, th.Name, tt.judged, tt.good)
		if tt.good != tt.judged {
			t.Errorf("thread %d never has context, yet %d of its %d samples carry some: %s",
				tid, tt.judged-tt.good, tt.judged, strings.Join(tt.bad, "; "))
		}
	}
	if othersLinked > 0 {
		t.Errorf("%d of %d samples of other threads (main) carry a Link", othersLinked, others)
	}
	if j.keyMap != nil {
		for _, k := range []string{"with attributes", "with an out-of-range key", "640-byte record", "without attributes"} {
			if kinds[k] < minKind {
				t.Errorf("only %d correct samples in intervals %s", kinds[k], k)
			}
		}
	}
}

// judgeResource: every sample of pid from `from` on belongs to a resource
// with all of want; no resource of pid has threadlocal.* attributes.
func judgeResource(t *testing.T, procs []*Process, want map[string]string, from uint64, what string) {
	t.Helper()
	n, good := 0, 0
	for _, p := range procs {
		var shown []string
		for k, v := range p.Attrs {
			if strings.HasPrefix(k, "threadlocal.") {
				t.Errorf("resource carries the process context's coordination attribute %s = %v", k, v)
			}
			if _, ok := want[k]; ok || strings.HasPrefix(k, "service.") || strings.HasPrefix(k, "deployment.") {
				shown = append(shown, fmt.Sprintf("%s=%v", k, v))
			}
		}
		sort.Strings(shown)
		match := true
		for k, v := range want {
			if got, ok := p.Attrs[k].(string); !ok || got != v {
				match = false
			}
		}
		pn := 0
		for _, s := range p.Samples {
			if s.TimeNs >= from {
				pn++
			}
		}
		n += pn
		if match {
			good += pn
		}
		t.Logf("resource with %d samples (%d judged) %v", len(p.Samples), pn, shown)
	}
	if n < ctxMinSamples {
		t.Fatalf("only %d samples after %s to judge the resource", n, what)
	}
	if good != n {
		t.Errorf("%d of %d samples taken after %s are not on a resource with %v", n-good, n, what, want)
	}
}

// ---- the tests ----

// runPublished: the workload publishes before the profiler starts.
func runPublished(t *testing.T, c ctxCase) {
	requireRoot(t)
	w := startWaiting(t, c, 4)
	rec, _, cpu := recordSignalling(t, w, ctxSeconds, 0, 0)
	w.stop(t)
	lib := w.one(t, "library")
	if lib.Variant != c.variant {
		t.Fatalf("publisher variant %q, want %q", lib.Variant, c.variant)
	}
	d := decodeFile(t, rec.Path)
	procs := processesFor(d, w.pid)
	if len(procs) == 0 {
		t.Fatalf("no samples for pid %d\n%s", w.pid, rec.Stderr)
	}
	var keyMap []string
	var want map[string]string
	if c.variant == "elastic" {
		ep := w.one(t, "elastic_process")
		want = map[string]string{"service.name": ep.ServiceName, "deployment.environment.name": ep.Environment}
	} else {
		pc := w.one(t, "process_context")
		keyMap, want = pc.KeyMap, pc.Resource
	}
	if c.variant == "elastic" {
		// The agent's return channel (docs/context-publishing.md): this
		// publisher reads its socket only at exit, so it holds the
		// first few datagrams: the registration, then correlations,
		// each well-formed. (What the agent makes of them:
		// TestJavaElasticAPM, with the real agent.)
		if s := w.one(t, "elastic_socket"); !s.FirstIsReg || s.Correlations == 0 || s.Malformed != 0 {
			t.Errorf("Elastic agent's socket %s: %d messages, first a registration: %v, %d correlations, %d malformed",
				s.Path, s.Messages, s.FirstIsReg, s.Correlations, s.Malformed)
		}
	}
	first := samplesOf(procs)[0].TimeNs
	judgeResource(t, procs, want, first+uint64(ctxMaxWarmup), "discovery")
	judgeThreadContext(t, w, procs, ctxJudge{keyMap: keyMap, wantTLS: c.wantTLS, maxWarmup: ctxMaxWarmup,
		log: rec.Stderr, note: " [" + c.name + "]", cpu: cpu})
}

// TLSDESC library linked at start-up: static TLS, TLSDESC descriptor.
func TestThreadContextLinkedTLSDESC(t *testing.T) { runPublished(t, ctxLinkedTLSDESC) }

// TLSDESC library dlopen'd after the threads started: glibc puts it in
// the static TLS surplus.
func TestThreadContextDlopenTLSDESCStaticTLS(t *testing.T) { runPublished(t, ctxDlopenTLSDESC) }

// The same with no static TLS surplus: dynamic TLS through the DTV.
func TestThreadContextDlopenTLSDESCDynamicTLS(t *testing.T) { runPublished(t, ctxDlopenDynamic) }

// Legacy general-dynamic (DTPMOD64/DTPOFF64) library, dlopen'd: DTV.
func TestThreadContextDlopenGeneralDynamic(t *testing.T) { runPublished(t, ctxDlopenGD) }

// Initial-exec (TPOFF64) library linked at start-up.
func TestThreadContextLinkedInitialExec(t *testing.T) { runPublished(t, ctxLinkedIE) }

// The executable defines and exports the symbol itself (local-exec).
func TestThreadContextExecutableLocalExec(t *testing.T) { runPublished(t, ctxExeLE) }

// Elastic v1 (elastic-jvmti-linux-*.so): Links, service.name and
// environment; nothing sent back over the agent's socket.
func TestElasticV1Correlation(t *testing.T) { runPublished(t, ctxElastic) }

// A memfd process context published before the profiler starts, in a
// process without any thread-context publisher: its resource attributes,
// and no Link. (Every thread-context test above also checks its memfd
// process context and the key map that names the thread attributes.)
func TestProcessContextMemfd(t *testing.T) {
	requireRoot(t)
	w := startWaiting(t, ctxCase{bin: "ctx_dlopen"}, 1, "--proc-ctx", "memfd")
	pc := w.one(t, "process_context")
	rec := record(t, ctxSeconds, ctxHz, "--pid", itoa(w.pid))
	w.stop(t)
	procs := processesFor(decodeFile(t, rec.Path), w.pid)
	if len(procs) == 0 {
		t.Fatalf("no samples for pid %d\n%s", w.pid, rec.Stderr)
	}
	samples := samplesOf(procs)
	judgeResource(t, procs, pc.Resource, samples[0].TimeNs+uint64(ctxMaxWarmup), "discovery")
	for _, s := range samples {
		if why := ctxMismatch(s, ctxEvent{}, pc.KeyMap); why != "" {
			t.Errorf("sample of a process without thread context: %s", why)
			break
		}
	}
}

// A memfd process context published after the profiler started, by a
// publisher that never calls prctl: the memfd_create("OTEL_CTX") it makes
// is the only signal. It must be picked up within a second. Published 4 s
// in: after the periodic search for unannounced mappings has looked once
// (3 s after first sight) and long before it looks again (6 s later), so
// only the memfd_create event can find it in time.
func TestProcessContextMemfdLateWithoutPrctl(t *testing.T) {
	requireRoot(t)
	w := startWaiting(t, ctxCase{bin: "ctx_dlopen"}, 1, "--proc-ctx", "memfd", "--proc-ctx-on-signal", "--proc-ctx-no-prctl")
	rec, start, _ := recordSignalling(t, w, ctxSeconds, 4*time.Second, syscall.SIGUSR1)
	w.stop(t)
	pc := w.one(t, "process_context")
	if pc.UnixNs <= start {
		t.Fatalf("published at %d, before the recording started at %d", pc.UnixNs, start)
	}
	procs := processesFor(decodeFile(t, rec.Path), w.pid)
	if len(procs) == 0 {
		t.Fatalf("no samples for pid %d\n%s", w.pid, rec.Stderr)
	}
	judgeResource(t, procs, pc.Resource, pc.UnixNs+uint64(time.Second), "publication + 1s")
}

// recordSignalling records pid w and sends sig to it `after` into the
// recording (none if sig is 0), so that what the signal triggers surely
// happens while the profiler runs. It returns the recording, when it
// started (unix ns) and each thread's CPU seconds while it sampled.
func recordSignalling(t *testing.T, w *ctxWorkload, seconds int, after time.Duration, sig syscall.Signal) (recording, uint64, map[int64]float64) {
	t.Helper()
	var started uint64
	var mu sync.Mutex
	var cpu0, cpu1 map[int64]float64
	rec := recordWith(t, func() {
		started = uint64(time.Now().UnixNano())
		c := threadCPU(w.pid)
		mu.Lock()
		cpu0 = c
		mu.Unlock()
		if sig != 0 {
			time.AfterFunc(after, func() { _ = w.cmd.Process.Signal(sig) })
		}
		// the end of sampling, not of writing the file
		time.AfterFunc(time.Duration(seconds)*time.Second, func() {
			c := threadCPU(w.pid)
			mu.Lock()
			cpu1 = c
			mu.Unlock()
		})
		// --apm-agents: this recorder stands for the host's profiler,
		// which answers an Elastic agent (the CLI does only if asked)
	}, seconds, ctxHz, "--pid", itoa(w.pid), "--apm-agents")
	if started == 0 {
		t.Fatalf("otelprof never said it was recording:\n%s", rec.Stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if cpu1 == nil {
		cpu1 = threadCPU(w.pid)
	}
	cpu := map[int64]float64{}
	for tid, c := range cpu1 {
		cpu[tid] = c - cpu0[tid]
	}
	return rec, started, cpu
}

// threadCPU is the CPU seconds of each thread of pid so far (schedstat).
func threadCPU(pid int) map[int64]float64 {
	out := map[int64]float64{}
	dirs, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	for _, d := range dirs {
		tid, err := strconv.ParseInt(filepath.Base(filepath.Dir(d)), 10, 64)
		raw, err2 := os.ReadFile(d)
		if err != nil || err2 != nil {
			continue
		}
		if f := strings.Fields(string(raw)); len(f) > 0 {
			ns, _ := strconv.ParseFloat(f[0], 64)
			out[tid] = ns / 1e9
		}
	}
	return out
}

// startWaiting starts a context workload and waits until its threads run.
func startWaiting(t *testing.T, c ctxCase, threads int, extra ...string) *ctxWorkload {
	t.Helper()
	w := startCtx(t, c.env, c.bin, c.argv(buildDir(t), extra...)...)
	w.waitEvents(t, "ready", 1, 10*time.Second)
	w.waitEvents(t, "thread", threads, 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	return w
}

// The publisher is dlopen'd while the profiler runs (SIGUSR2 1.5 s into
// the recording); the threads existed before.
func TestThreadContextDlopenWhileRecording(t *testing.T) {
	requireRoot(t)
	w := startWaiting(t, ctxDlopenTLSDESC, 1, "--dlopen-on-signal")
	rec, started, cpu := recordSignalling(t, w, ctxSeconds+2, 1500*time.Millisecond, syscall.SIGUSR2)
	w.stop(t)
	lib := w.one(t, "library")
	if lib.UnixNs <= started {
		t.Fatalf("the library was loaded before the profiler ran (%d <= %d)", lib.UnixNs, started)
	}
	pc := w.one(t, "process_context")
	procs := processesFor(decodeFile(t, rec.Path), w.pid)
	judgeThreadContext(t, w, procs, ctxJudge{keyMap: pc.KeyMap, wantTLS: "static", from: lib.UnixNs,
		maxWarmup: ctxMaxWarmup, log: rec.Stderr, note: " [dlopen 1.5 s into the recording]", cpu: cpu})
}

// Anonymous process-context mappings, published after the profiler
// started (SIGUSR1 1.5 s into the recording). Where the kernel cannot name
// them (CONFIG_ANON_VMA_NAME unset), /proc/PID/maps does not show
// [anon:OTEL_CTX]: only the prctl(PR_SET_VMA) call the profiler watches
// tells where the context is.
func TestProcessContextAnon(t *testing.T) {
	requireRoot(t)
	for _, kind := range []string{"anon", "anon_shmem"} {
		t.Run(kind, func(t *testing.T) {
			w := startWaiting(t, ctxDlopenTLSDESC, 4, "--proc-ctx", kind, "--proc-ctx-on-signal")
			rec, started, cpu := recordSignalling(t, w, ctxSeconds+2, 1500*time.Millisecond, syscall.SIGUSR1)
			w.stop(t)
			pc := w.one(t, "process_context")
			if pc.UnixNs <= started {
				t.Fatalf("published before the profiler ran (%d <= %d)", pc.UnixNs, started)
			}
			note := fmt.Sprintf(" [%s mapping at %s, published 1.5 s into the recording", kind, pc.Address)
			if !pc.Named {
				note += "; this kernel refused to name it, so it is not in /proc/PID/maps as [" + kind + ":OTEL_CTX]: only the prctl arguments locate it"
			}
			note += "]"
			t.Logf("%s", note)
			procs := processesFor(decodeFile(t, rec.Path), w.pid)
			if len(procs) == 0 {
				t.Fatalf("no samples for pid %d\n%s", w.pid, rec.Stderr)
			}
			judgeResource(t, procs, pc.Resource, pc.UnixNs+uint64(ctxPickup), "publication + "+ctxPickup.String()+note)
			judgeThreadContext(t, w, procs, ctxJudge{keyMap: pc.KeyMap, wantTLS: "static", from: pc.UnixNs,
				maxWarmup: ctxPickup, log: rec.Stderr, note: note, cpu: cpu})
		})
	}
}

// A memfd process context published after the profiler started (SIGUSR1
// 1.5 s into a first recording), then updated (service.version 1.0.0 ->
// 2.0.0, SIGUSR1 1.5 s into a second recording).
func TestProcessContextLateAndUpdate(t *testing.T) {
	requireRoot(t)
	w := startWaiting(t, ctxDlopenTLSDESC, 4, "--proc-ctx-on-signal")
	recA, startA, cpuA := recordSignalling(t, w, ctxSeconds, 1500*time.Millisecond, syscall.SIGUSR1)
	endA := uint64(time.Now().UnixNano())
	recB, startB, cpuB := recordSignalling(t, w, 10, 1500*time.Millisecond, syscall.SIGUSR1)
	w.stop(t)
	pcs := w.all("process_context")
	if len(pcs) != 2 || pcs[0].Update || !pcs[1].Update {
		t.Fatalf("want a publication and an update, got %+v", pcs)
	}
	pub, upd := pcs[0], pcs[1]
	if pub.UnixNs <= startA || pub.UnixNs >= endA || upd.UnixNs <= startB {
		t.Fatalf("publication at %d not within the first recording [%d, %d], or update at %d before the second started at %d",
			pub.UnixNs, startA, endA, upd.UnixNs, startB)
	}
	if upd.Resource["service.version"] != "2.0.0" || pub.Resource["service.version"] != "1.0.0" {
		t.Fatalf("service.version %q then %q", pub.Resource["service.version"], upd.Resource["service.version"])
	}

	t.Run("publication", func(t *testing.T) {
		procs := processesFor(decodeFile(t, recA.Path), w.pid)
		if len(procs) == 0 {
			t.Fatalf("no samples for pid %d\n%s", w.pid, recA.Stderr)
		}
		judgeResource(t, procs, pub.Resource, pub.UnixNs+uint64(ctxPickup), "publication + "+ctxPickup.String())
		judgeThreadContext(t, w, procs, ctxJudge{keyMap: pub.KeyMap, wantTLS: "static", from: pub.UnixNs,
			maxWarmup: ctxPickup, log: recA.Stderr, note: " [process context published 1.5 s into the recording]", cpu: cpuA})
	})
	t.Run("update", func(t *testing.T) {
		procs := processesFor(decodeFile(t, recB.Path), w.pid)
		if len(procs) == 0 {
			t.Fatalf("no samples for pid %d\n%s", w.pid, recB.Stderr)
		}
		judgeResource(t, procs, upd.Resource, upd.UnixNs+uint64(ctxPickup), "update + "+ctxPickup.String())
		judgeThreadContext(t, w, procs, ctxJudge{keyMap: upd.KeyMap, wantTLS: "static", maxWarmup: ctxMaxWarmup,
			log: recB.Stderr, note: " [second recording, process context updated during it]", cpu: cpuB})
	})
}

// A process in no container publishes container.id, k8s.pod.name,
// host.name, process.executable.name and thread.name in its process
// context (k8sattributes associates pods by container.id: it would pass
// for another pod). What the profiler derives itself wins, and identity
// it cannot prove is dropped: none of the claims reach the resource, the
// legitimate service attributes do.
func TestProcessContextCannotSpoofIdentity(t *testing.T) {
	requireRoot(t)
	w := startWaiting(t, ctxCase{bin: "ctx_dlopen"}, 1, "--proc-ctx", "memfd", "--proc-ctx-spoof")
	pc := w.one(t, "process_context")
	if pc.Resource["k8s.pod.name"] != "someone-elses-pod" {
		t.Fatalf("the workload did not publish the spoofed keys: %v", pc.Resource)
	}
	rec := record(t, ctxSeconds, ctxHz, "--pid", itoa(w.pid))
	w.stop(t)
	procs := processesFor(decodeFile(t, rec.Path), w.pid)
	if len(procs) == 0 {
		t.Fatalf("no samples for pid %d\n%s", w.pid, rec.Stderr)
	}
	withService := 0
	for _, p := range procs {
		for _, k := range []string{"container.id", "k8s.pod.name", "thread.name"} {
			if v, ok := p.Attrs[k]; ok {
				t.Errorf("resource carries the published %s = %v", k, v)
			}
		}
		if v := p.Attrs["host.name"]; v == "not-this-host" {
			t.Errorf("resource carries the published host.name")
		}
		if v := p.Attrs["process.executable.name"]; v != "ctx_dlopen" {
			t.Errorf("process.executable.name = %v, want ctx_dlopen", v)
		}
		if p.Attrs["service.name"] == "otelprof-ctx-test" {
			withService++
		}
		for _, s := range p.Samples {
			if s.ThreadName == "not-my-thread" {
				t.Fatalf("a sample carries the published thread.name")
			}
		}
	}
	if withService == 0 {
		t.Errorf("the legitimate service.name never reached a resource")
	}
}
