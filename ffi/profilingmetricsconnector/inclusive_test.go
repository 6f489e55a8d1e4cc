// SPDX-License-Identifier: Apache-2.0

package profilingmetricsconnector

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/libotelprofiler/libotelprofiler/ffi/internal/testprofiles"
)

// run feeds the payloads through a connector with cfg and returns what it
// sent at shutdown.
func run(t *testing.T, cfg *Config, pds ...pprofile.Profiles) []pmetric.Metrics {
	t.Helper()
	if err := confmap.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	sink := new(consumertest.MetricsSink)
	c, err := NewFactory().CreateProfilesToMetrics(context.Background(), connectortest.NewNopSettings(Type), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	for _, pd := range pds {
		if err := c.ConsumeProfiles(context.Background(), pd); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return sink.AllMetrics()
}

// only keeps the points of the named metrics.
func only(got map[string]int64, names ...string) map[string]int64 {
	out := map[string]int64{}
	for k, v := range got {
		for _, n := range names {
			if len(k) > len(n) && k[:len(n)+1] == n+"{" {
				out[k] = v
			}
		}
	}
	return out
}

func assertPoints(t *testing.T, got, want map[string]int64) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected %s = %d", k, v)
		}
	}
}

var (
	libc     = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	libjvm   = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"
	threadFr = testprofiles.Frame{Type: "native", Function: "start_thread", File: libc}
)

func jvm(fn string) testprofiles.Frame { return testprofiles.Frame{Type: "jvm", Function: fn} }

// TestElasticReadmeConfig: the configuration of Elastic's README, loaded
// from the file verbatim, gives the expected series on a known workload.
func TestElasticReadmeConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "elastic-readme-full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := cm.Sub("connectors::profilingmetrics")
	if err != nil {
		t.Fatal(err)
	}
	cfg := createDefaultConfig()
	if err := sub.Unmarshal(cfg); err != nil {
		t.Fatal(err)
	}
	const start = 1_700_000_000_000_000_000
	mds := run(t, cfg, testprofiles.JavaPayments(start))
	got := points(mds)
	assertPoints(t, only(got, "samples.custom_aggregation", "samples.frame_type", "samples.classification"), map[string]int64{
		// Inclusive: a sample counts once when a matching frame is anywhere
		// in its stack (payments: 5 + 3; authentication: 3).
		"samples.custom_aggregation{frame_type=payments,profile.type_unit=samples_count}":       8,
		"samples.custom_aggregation{frame_type=authentication,profile.type_unit=samples_count}": 3,
	})
	assertPoints(t, only(got, "samples.jvm.count", "samples.native.count", "samples.user.count", "samples.kernel.count"), map[string]int64{
		"samples.jvm.count{}":                        7,
		"samples.native.count{shlib_name=libcrypto}": 3,
		"samples.user.count{}":                       10,
	})
	// Shape and times: Elastic's gauge, the profile's time range.
	var seen bool
	for _, md := range mds {
		rm := md.ResourceMetrics().At(0)
		if n := rm.ScopeMetrics().At(0).Scope().Name(); n != ScopeName {
			t.Errorf("scope %q", n)
		}
		for _, m := range rm.ScopeMetrics().At(0).Metrics().All() {
			if m.Name() != "samples.custom_aggregation" {
				continue
			}
			seen = true
			if m.Type() != pmetric.MetricTypeGauge || m.Unit() != "1" {
				t.Errorf("samples.custom_aggregation: %s %q", m.Type(), m.Unit())
			}
			dp := m.Gauge().DataPoints().At(0)
			if dp.StartTimestamp() != start || dp.Timestamp() != start+1e9 {
				t.Errorf("times %d..%d, want the profile's %d..%d", dp.StartTimestamp(), dp.Timestamp(), uint64(start), uint64(start+1e9))
			}
		}
	}
	if !seen {
		t.Fatal("no samples.custom_aggregation")
	}
}

// TestInclusiveAndOptionalMetrics: frame types and classifications count
// a sample once per value found anywhere in its stack, recursion included.
func TestInclusiveAndOptionalMetrics(t *testing.T) {
	b := testprofiles.New(map[string]any{}, 1)
	g := func(fn string) testprofiles.Frame { return testprofiles.Frame{Type: "go", Function: fn} }
	b.Add(testprofiles.Sample{Count: 4, Stack: []testprofiles.Frame{
		g("github.com/acme/calc.(*Tree).walk"), g("github.com/acme/calc.(*Tree).walk"), g("github.com/acme/calc.(*Tree).walk"),
		g("main.main"), g("runtime.main")}})
	b.Add(testprofiles.Sample{Count: 1, Stack: []testprofiles.Frame{
		{Type: "kernel", Function: "clear_page"}, {Type: "kernel", Function: "handle_mm_fault"},
		g("runtime.mallocgc"), g("main.main"), g("runtime.main")}})
	b.Add(testprofiles.Sample{Count: 2, Stack: []testprofiles.Frame{
		jvm("java.util.HashMap.get"), jvm("com.example.Cache.lookup"), jvm("com.example.Cache.lookup"), threadFr}})
	cfg := createDefaultConfig()
	cfg.FlushInterval = 0
	cfg.Metrics = map[string]MetricConfig{"samples.frame_type": {Enabled: true}, "samples.classification": {Enabled: true}}
	cfg.Aggregations = []Aggregation{
		{Match: `^github\.com/acme/calc\.`, Label: "calc"},
		{Match: `\.walk$`, Label: "calc"}, // same label: still once per sample
		{Match: `^main\.`, Label: "main", FrameTypes: []string{"go"}},
		{Match: `^main\.`, Label: "main-jvm-only", FrameTypes: []string{"jvm"}},
		{Shlib: `^libc$`, Label: "libc"},
	}
	got := points(run(t, cfg, b.P))
	assertPoints(t, only(got, "samples.frame_type", "samples.classification", "samples.custom_aggregation"), map[string]int64{
		"samples.frame_type{frame_type=go,profile.type_unit=samples_count}":                                         5,
		"samples.frame_type{frame_type=kernel,profile.type_unit=samples_count}":                                     1,
		"samples.frame_type{frame_type=jvm,profile.type_unit=samples_count}":                                        2,
		"samples.frame_type{frame_type=native,profile.type_unit=samples_count}":                                     2,
		"samples.classification{classification=github.com/acme/calc,frame_type=go,profile.type_unit=samples_count}": 4,
		"samples.classification{classification=main,frame_type=go,profile.type_unit=samples_count}":                 5,
		"samples.classification{classification=runtime,frame_type=go,profile.type_unit=samples_count}":              5,
		"samples.classification{classification=java.util.HashMap,frame_type=jvm,profile.type_unit=samples_count}":   2,
		"samples.classification{classification=com.example.Cache,frame_type=jvm,profile.type_unit=samples_count}":   2,
		"samples.custom_aggregation{frame_type=calc,profile.type_unit=samples_count}":                               4,
		"samples.custom_aggregation{frame_type=main,profile.type_unit=samples_count}":                               5,
		"samples.custom_aggregation{frame_type=libc,profile.type_unit=samples_count}":                               2,
	})
	// Off by default (Elastic's defaults): nothing of them without the toggle.
	cfg = createDefaultConfig()
	cfg.FlushInterval = 0
	if n := only(points(run(t, cfg, b.P)), "samples.frame_type", "samples.classification"); len(n) != 0 {
		t.Errorf("optional metrics emitted by default: %v", n)
	}
}

func TestClassificationNames(t *testing.T) {
	for _, tc := range []struct{ typ, fn, want string }{
		{"go", "github.com/acme/calc.(*Tree).walk", "github.com/acme/calc"},
		{"go", "main.main", "main"},
		{"go", "encoding/json.Marshal", "encoding/json"},
		{"go", "noPackage", "noPackage"},
		{"jvm", "com.example.Cache.lookup", "com.example.Cache"},
		{"jvm", "void com.example.Cache.lookup(java.lang.String)", "com.example.Cache"},
		{"jvm", "run", "run"},
		{"native", "memcpy", ""},
	} {
		if got := classification(tc.typ, tc.fn); got != tc.want {
			t.Errorf("classification(%s, %q) = %q, want %q", tc.typ, tc.fn, got, tc.want)
		}
	}
}

// TestRuntimeMetrics: each runtime's GC, serialization and FFI, known
// stacks with exact counts; on by default.
func TestRuntimeMetrics(t *testing.T) {
	n := func(fn, file string) testprofiles.Frame {
		return testprofiles.Frame{Type: "native", Function: fn, File: file}
	}
	g := func(fn string) testprofiles.Frame { return testprofiles.Frame{Type: "go", Function: fn} }
	py := func(fn, file string) testprofiles.Frame {
		return testprofiles.Frame{Type: "cpython", Function: fn, Source: file}
	}
	libpython := "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"
	node := "/usr/bin/node"
	b := testprofiles.New(map[string]any{}, 1)
	// Go: background mark worker, and an assist inside an allocation.
	b.Add(testprofiles.Sample{Count: 3, Stack: []testprofiles.Frame{g("runtime.scanobject"), g("runtime.gcDrain"), g("runtime.gcBgMarkWorker"), g("runtime.goexit")}})
	b.Add(testprofiles.Sample{Count: 2, Stack: []testprofiles.Frame{g("runtime.gcAssistAlloc"), g("runtime.mallocgc"), g("encoding/json.Marshal"), g("main.handle")}})
	// Go: JSON, protobuf, cgo.
	b.Add(testprofiles.Sample{Count: 4, Stack: []testprofiles.Frame{g("encoding/json.(*encodeState).string"), g("encoding/json.Marshal"), g("main.handle")}})
	b.Add(testprofiles.Sample{Count: 1, Stack: []testprofiles.Frame{g("google.golang.org/protobuf/internal/impl.(*MessageInfo).marshal"), g("main.handle")}})
	b.Add(testprofiles.Sample{Count: 6, Stack: []testprofiles.Frame{n("deflate", "/usr/lib/x86_64-linux-gnu/libz.so.1"), g("runtime.asmcgocall"), g("runtime.cgocall"), g("main.compress")}})
	// HotSpot: a GC thread (named) and the VM thread in a collector.
	b.Add(testprofiles.Sample{Count: 7, Thread: "GC Thread#1", Stack: []testprofiles.Frame{n("G1ParScanThreadState::trim_queue_partially()", libjvm), n("WorkerThread::run()", libjvm), threadFr}})
	b.Add(testprofiles.Sample{Count: 1, Thread: "G1 Young RemSet", Stack: []testprofiles.Frame{n("G1YoungRemSetSamplingClosure::do_heap_region(HeapRegion*)", libjvm), threadFr}}) // comm: 15 bytes
	b.Add(testprofiles.Sample{Count: 2, Thread: "VM Thread", Stack: []testprofiles.Frame{n("memmove", libc), n("G1FullCollector::collect()", libjvm), n("VMThread::run()", libjvm), threadFr}})
	// HotSpot: Jackson, protobuf-java, JNI into libzip (JDK) and into the
	// JVM itself (not FFI).
	b.Add(testprofiles.Sample{Count: 5, Thread: "main", Stack: []testprofiles.Frame{jvm("com.fasterxml.jackson.core.json.WriterBasedJsonGenerator.writeString"), jvm("com.example.Api.render"), threadFr}})
	b.Add(testprofiles.Sample{Count: 1, Thread: "main", Stack: []testprofiles.Frame{jvm("com.google.protobuf.CodedOutputStream.writeUInt32NoTag"), jvm("com.example.Api.render"), threadFr}})
	b.Add(testprofiles.Sample{Count: 3, Thread: "main", Stack: []testprofiles.Frame{n("inflate", "/usr/lib/jvm/java-17-openjdk-amd64/lib/libzip.so"), jvm("java.util.zip.Inflater.inflateBytesBytes"), jvm("com.example.Api.render"), threadFr}})
	b.Add(testprofiles.Sample{Count: 2, Thread: "main", Stack: []testprofiles.Frame{n("JVM_ArrayCopy", libjvm), jvm("java.lang.System.arraycopy"), threadFr}})
	// CPython: the cyclic GC, json (module and C accelerator), ctypes
	// through libffi.
	b.Add(testprofiles.Sample{Count: 4, Stack: []testprofiles.Frame{n("visit_decref", libpython), n("gc_collect_main", libpython), n("_PyObject_GC_Alloc", libpython), py("work", "/app/main.py")}})
	b.Add(testprofiles.Sample{Count: 3, Stack: []testprofiles.Frame{py("JSONEncoder.iterencode", "/usr/lib/python3.11/json/encoder.py"), py("dumps", "/usr/lib/python3.11/json/__init__.py"), py("work", "/app/main.py")}})
	b.Add(testprofiles.Sample{Count: 2, Stack: []testprofiles.Frame{n("encoder_listencode_dict", "/usr/lib/python3.11/lib-dynload/_json.cpython-311-x86_64-linux-gnu.so"), py("JSONEncoder.iterencode", "/usr/lib/python3.11/json/encoder.py"), py("work", "/app/main.py")}})
	b.Add(testprofiles.Sample{Count: 5, Stack: []testprofiles.Frame{n("crc32", "/usr/lib/x86_64-linux-gnu/libz.so.1"), n("ffi_call_unix64", "/usr/lib/x86_64-linux-gnu/libffi.so.8"), n("ffi_call_int", "/usr/lib/x86_64-linux-gnu/libffi.so.8"), n("_ctypes_callproc", "/usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so"), py("checksum", "/app/main.py")}})
	// V8: scavenger and the concurrent marker, JSON.stringify's C++.
	b.Add(testprofiles.Sample{Count: 6, Thread: "node", Stack: []testprofiles.Frame{n("v8::internal::Scavenger::ScavengePage(v8::internal::MemoryChunk*)", node), n("v8::internal::ScavengerCollector::JobTask::Run(v8::JobDelegate*)", node)}})
	b.Add(testprofiles.Sample{Count: 2, Thread: "V8 DefaultWorke", Stack: []testprofiles.Frame{n("v8::internal::ConcurrentMarking::RunMajor(v8::JobDelegate*, v8::base::EnumSet<v8::internal::CodeFlushMode, int>, unsigned int, bool)", node)}})
	b.Add(testprofiles.Sample{Count: 3, Thread: "node", Stack: []testprofiles.Frame{n("v8::internal::JsonStringifier::Serialize_<false>(v8::internal::Handle<v8::internal::Object>, bool, v8::internal::Handle<v8::internal::Object>)", node), {Type: "v8js", Function: "render"}}})
	// No runtime activity at all.
	b.Add(testprofiles.Sample{Count: 9, Stack: []testprofiles.Frame{n("memcpy", libc), n("main", "/usr/bin/app")}})

	cfg := createDefaultConfig()
	cfg.FlushInterval = 0
	got := only(points(run(t, cfg, b.P)), "samples.runtime.count")
	assertPoints(t, got, map[string]int64{
		"samples.runtime.count{category=gc,runtime=go}":                      5,
		"samples.runtime.count{category=serialization.json,runtime=go}":      6,
		"samples.runtime.count{category=serialization.protobuf,runtime=go}":  1,
		"samples.runtime.count{category=ffi,runtime=go}":                     6,
		"samples.runtime.count{category=gc,runtime=jvm}":                     10,
		"samples.runtime.count{category=serialization.json,runtime=jvm}":     5,
		"samples.runtime.count{category=serialization.protobuf,runtime=jvm}": 1,
		"samples.runtime.count{category=ffi,runtime=jvm}":                    3,
		"samples.runtime.count{category=gc,runtime=cpython}":                 4,
		"samples.runtime.count{category=serialization.json,runtime=cpython}": 5,
		"samples.runtime.count{category=ffi,runtime=cpython}":                5,
		"samples.runtime.count{category=gc,runtime=v8js}":                    8,
		"samples.runtime.count{category=serialization.json,runtime=v8js}":    3,
	})
	cfg.Metrics = map[string]MetricConfig{"samples.runtime.count": {Enabled: false}}
	if n := only(points(run(t, cfg, b.P)), "samples.runtime.count"); len(n) != 0 {
		t.Errorf("disabled, still emitted: %v", n)
	}
}

// TestOffCPUMetrics: the off-CPU profile (events/nanoseconds) gets the
// same classification, weighted by its nanoseconds, beside the on-CPU one.
func TestOffCPUMetrics(t *testing.T) {
	k := func(fn string) testprofiles.Frame { return testprofiles.Frame{Type: "kernel", Function: fn} }
	g := func(fn string) testprofiles.Frame { return testprofiles.Frame{Type: "go", Function: fn} }
	b := testprofiles.New(map[string]any{"process.pid": int64(9)}, 1000)
	b.Add(testprofiles.Sample{Count: 2, Stack: []testprofiles.Frame{g("main.spin"), g("main.main")}})
	b.OffCPU()
	b.Add(testprofiles.Sample{Values: []int64{500_000_000, 250_000_000}, Stack: []testprofiles.Frame{
		k("__schedule"), k("schedule"), k("do_nanosleep"), k("hrtimer_nanosleep"), k("__x64_sys_clock_nanosleep"),
		g("runtime.usleep"), g("main.wait"), g("main.main")}})
	b.Add(testprofiles.Sample{Values: []int64{250_000_000}, Stack: []testprofiles.Frame{
		k("__schedule"), k("schedule"), k("pipe_read"), k("vfs_read"), k("ksys_read"),
		g("syscall.read"), g("main.block"), g("main.main")}})
	b.Add(testprofiles.Sample{Values: []int64{40_000_000}, Stack: []testprofiles.Frame{
		k("__schedule"), k("schedule"), k("futex_wait_queue"), k("__x64_sys_futex"),
		g("runtime.futex"), g("runtime.gcBgMarkWorker")}})
	cfg := createDefaultConfig()
	cfg.FlushInterval = 0
	cfg.Metrics = map[string]MetricConfig{"samples.frame_type": {Enabled: true}}
	cfg.Aggregations = []Aggregation{{Match: `^main\.(wait|block)$`, Label: "blocking"}}
	got := points(run(t, cfg, b.P))
	assertPoints(t, only(got, "offcpu.time", "offcpu.runtime.time", "samples.custom_aggregation", "samples.frame_type"), map[string]int64{
		"offcpu.time{frame_type=kernel,kernel_area=synchronization,syscall_name=clock_nanosleep}": 750_000_000,
		"offcpu.time{frame_type=kernel,kernel_area=ipc,kernel_io=read,syscall_name=read}":         250_000_000,
		"offcpu.time{frame_type=kernel,kernel_area=synchronization,syscall_name=futex}":           40_000_000,
		"offcpu.runtime.time{category=gc,runtime=go}":                                             40_000_000,
		"samples.custom_aggregation{frame_type=blocking,profile.type_unit=events_nanoseconds}":    1_000_000_000,
		"samples.frame_type{frame_type=go,profile.type_unit=events_nanoseconds}":                  1_040_000_000,
		"samples.frame_type{frame_type=kernel,profile.type_unit=events_nanoseconds}":              1_040_000_000,
		"samples.frame_type{frame_type=go,profile.type_unit=samples_count}":                       2,
	})
	// The on-CPU leaf metrics see the on-CPU profile only.
	assertPoints(t, only(got, "samples.go.count", "samples.user.count", "samples.kernel.count"), map[string]int64{
		"samples.go.count{}": 2, "samples.user.count{}": 2,
	})
}

// TestTimestampsFromProfiles: a window's points span its profiles' times,
// whenever the flush happens.
func TestTimestampsFromProfiles(t *testing.T) {
	cfg := createDefaultConfig() // 30 s window: one flush, at shutdown
	const t0 = 1_600_000_000_000_000_000
	mds := run(t, cfg, testprofiles.Canned(t0), testprofiles.Canned(t0+2e9), testprofiles.Canned(t0+1e9))
	if len(mds) != 1 {
		t.Fatalf("%d flushes", len(mds))
	}
	for _, m := range mds[0].ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().All() {
		for _, dp := range m.Sum().DataPoints().All() {
			if dp.StartTimestamp() != t0 || dp.Timestamp() != t0+3e9 {
				t.Errorf("%s: %d..%d, want %d..%d", m.Name(), dp.StartTimestamp(), dp.Timestamp(), uint64(t0), uint64(t0+3e9))
			}
		}
	}
}

// TestSeriesBounded: classifications past the bound are dropped, not kept.
func TestSeriesBounded(t *testing.T) {
	b := testprofiles.New(map[string]any{}, 1)
	for i := 0; i < maxSeriesPerResource+500; i++ {
		b.Add(testprofiles.Sample{Count: 1, Stack: []testprofiles.Frame{{Type: "go", Function: fmt.Sprintf("example.com/p%d.F", i)}}})
	}
	cfg := createDefaultConfig()
	cfg.Metrics = map[string]MetricConfig{"samples.classification": {Enabled: true}}
	got := points(run(t, cfg, b.P))
	if len(got) != maxSeriesPerResource {
		t.Errorf("%d series, want the bound %d", len(got), maxSeriesPerResource)
	}
	// The leaf metrics came first: they are kept.
	if got["samples.go.count{}"] != int64(maxSeriesPerResource+500) {
		t.Errorf("samples.go.count = %d", got["samples.go.count{}"])
	}
}

// TestMalformedInput: indexes out of range are skipped, never a panic.
func TestMalformedInput(t *testing.T) {
	b := testprofiles.New(map[string]any{}, 1)
	b.Add(testprofiles.Sample{Count: 1, Thread: "GC Thread#0", Stack: []testprofiles.Frame{{Type: "go", Function: "main.main"}}})
	pd := b.P
	st := pd.Dictionary().StackTable().At(1)
	st.LocationIndices().Append(9999, -5)
	smp := pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0).Samples().AppendEmpty()
	smp.SetStackIndex(12345)
	smp.AttributeIndices().Append(777)
	cfg := createDefaultConfig()
	cfg.Metrics = map[string]MetricConfig{"samples.classification": {Enabled: true}, "samples.frame_type": {Enabled: true}}
	cfg.Aggregations = []Aggregation{{Match: "main", Label: "m"}}
	got := points(run(t, cfg, pd))
	if got["samples.go.count{}"] != 1 || got["samples.runtime.count{category=gc,runtime=jvm}"] != 1 {
		t.Errorf("got %v", got)
	}
}
