// SPDX-License-Identifier: Apache-2.0

package profilingmetricsconnector

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/libotelprofiler/libotelprofiler/ffi/internal/testprofiles"
)

// points flattens metrics to "name{k=v,...}" -> value.
func points(mds []pmetric.Metrics) map[string]int64 {
	out := map[string]int64{}
	for _, md := range mds {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					var dps pmetric.NumberDataPointSlice
					if m.Type() == pmetric.MetricTypeGauge {
						dps = m.Gauge().DataPoints()
					} else {
						dps = m.Sum().DataPoints()
					}
					for _, dp := range dps.All() {
						var kv []string
						for k, v := range dp.Attributes().All() {
							kv = append(kv, k+"="+v.AsString())
						}
						sort.Strings(kv)
						out[m.Name()+"{"+strings.Join(kv, ",")+"}"] += dp.IntValue()
					}
				}
			}
		}
	}
	return out
}

func TestClassification(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.FlushInterval = 0
	sink := new(consumertest.MetricsSink)
	c, err := NewFactory().CreateProfilesToMetrics(context.Background(), connectortest.NewNopSettings(Type), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	if err := c.ConsumeProfiles(context.Background(), testprofiles.Canned(1)); err != nil {
		t.Fatal(err)
	}
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := points(sink.AllMetrics())
	want := map[string]int64{
		"samples.kernel.count{kernel_area=network,kernel_io=write,kernel_proto=tcp,syscall_name=write}": 3,
		"samples.native.count{shlib_name=libssl}":                                                       2,
		"samples.native.count{}": 1,
		"samples.user.count{}":   3,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	md := sink.AllMetrics()[0]
	rm := md.ResourceMetrics().At(0)
	if v, ok := rm.Resource().Attributes().Get("process.pid"); !ok || v.Int() != 4242 {
		t.Errorf("resource not carried over: %v", rm.Resource().Attributes().AsRaw())
	}
	m := rm.ScopeMetrics().At(0).Metrics().At(0)
	if m.Type() != pmetric.MetricTypeSum || !m.Sum().IsMonotonic() ||
		m.Sum().AggregationTemporality() != pmetric.AggregationTemporalityDelta || m.Unit() != "1" {
		t.Errorf("metric shape: %s %v %v %q", m.Type(), m.Sum().IsMonotonic(), m.Sum().AggregationTemporality(), m.Unit())
	}
}

func TestKernelClasses(t *testing.T) {
	k := func(fns ...string) []testprofiles.Frame {
		var out []testprofiles.Frame
		for _, f := range fns {
			out = append(out, testprofiles.Frame{Type: "kernel", Function: f})
		}
		return append(out, testprofiles.Frame{Type: "native", Function: "main", File: "/bin/app"})
	}
	for _, tc := range []struct {
		stack []testprofiles.Frame
		want  string
	}{
		{k("futex_wait_queue", "__x64_sys_futex"), "kernel_area=synchronization,syscall_name=futex"},
		{k("tcp_v4_rcv", "tcp_sendmsg", "__x64_sys_write"), "kernel_area=network,kernel_io=write,kernel_proto=tcp,syscall_name=write"},
		{k("tcp_v4_rcv", "__x64_sys_read"), "kernel_area=network,kernel_io=read,kernel_proto=tcp,syscall_name=read"},
		{k("copy_user", "pipe_write", "ksys_write"), "kernel_area=ipc,kernel_io=write,syscall_name=write"},
		{k("clear_page", "do_anonymous_page", "handle_mm_fault", "exc_page_fault"), "kernel_area=memory"},
		{k("filemap_read", "__arm64_sys_pread64"), "kernel_area=disk,kernel_io=read,syscall_name=pread64"},
		{k("do_idle"), ""},
		// The walk stops at the syscall entry: frames above it do not count.
		{k("__x64_sys_getpid", "tcp_sendmsg"), "syscall_name=getpid"},
	} {
		b := testprofiles.New(map[string]any{}, 1)
		b.Add(testprofiles.Sample{Stack: tc.stack, Count: 1})
		cfg := createDefaultConfig()
		cfg.FlushInterval = 0
		sink := new(consumertest.MetricsSink)
		c, _ := NewFactory().CreateProfilesToMetrics(context.Background(), connectortest.NewNopSettings(Type), cfg, sink)
		_ = c.Start(context.Background(), componenttest.NewNopHost())
		if err := c.ConsumeProfiles(context.Background(), b.P); err != nil {
			t.Fatal(err)
		}
		_ = c.Shutdown(context.Background())
		got := points(sink.AllMetrics())
		key := "samples.kernel.count{" + tc.want + "}"
		if got[key] != 1 || len(got) != 1 {
			t.Errorf("stack %v: got %v, want %s", tc.stack, got, key)
		}
	}
}

func TestUnknownLeafIsSkipped(t *testing.T) {
	b := testprofiles.New(map[string]any{}, 1)
	b.Add(testprofiles.Sample{Count: 4, Stack: []testprofiles.Frame{{Type: "abap", Function: "x"}}})
	b.Add(testprofiles.Sample{Count: 1, Stack: []testprofiles.Frame{{Type: "go", Function: "main.main"}}})
	cfg := createDefaultConfig()
	cfg.FlushInterval = 0
	sink := new(consumertest.MetricsSink)
	c, _ := NewFactory().CreateProfilesToMetrics(context.Background(), connectortest.NewNopSettings(Type), cfg, sink)
	_ = c.Start(context.Background(), componenttest.NewNopHost())
	if err := c.ConsumeProfiles(context.Background(), b.P); err != nil {
		t.Fatal(err)
	}
	got := points(sink.AllMetrics())
	if got["samples.go.count{}"] != 1 || got["samples.user.count{}"] != 1 || len(got) != 2 {
		t.Fatalf("got %v", got)
	}
}

func TestFlushIntervalAggregates(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.FlushInterval = time.Hour
	cfg.Metrics = map[string]MetricConfig{"samples.user.count": {Enabled: false}}
	sink := new(consumertest.MetricsSink)
	c, _ := NewFactory().CreateProfilesToMetrics(context.Background(), connectortest.NewNopSettings(Type), cfg, sink)
	if err := c.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := c.ConsumeProfiles(context.Background(), testprofiles.Canned(uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(sink.AllMetrics()); n != 0 {
		t.Fatalf("%d batches sent before the window ended", n)
	}
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(sink.AllMetrics()); n != 1 {
		t.Fatalf("want one flush at shutdown, got %d", n)
	}
	got := points(sink.AllMetrics())
	if got["samples.native.count{shlib_name=libssl}"] != 6 {
		t.Errorf("aggregation: %v", got)
	}
	if _, ok := got["samples.user.count{}"]; ok {
		t.Errorf("disabled metric emitted: %v", got)
	}
}

func TestConfig(t *testing.T) {
	if err := componenttest.CheckConfigStruct(createDefaultConfig()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		raw  map[string]any
		want string
	}{
		{map[string]any{"flush_interval": "10s", "metrics": map[string]any{"samples.go.count": map[string]any{"enabled": false}, "samples.frame_type": map[string]any{"enabled": false}}}, ""},
		{map[string]any{"metrics": map[string]any{"samples.frame_type": map[string]any{"enabled": true}, "samples.classification": map[string]any{"enabled": true}}}, ""},
		{map[string]any{"metrics": map[string]any{"samples.nope.count": map[string]any{"enabled": true}}}, "samples.nope.count: unknown metric"},
		{map[string]any{"aggregations": []any{map[string]any{"match": "^x", "label": "x"}}}, ""},
		{map[string]any{"aggregations": []any{map[string]any{"shlib": "^libz$", "label": "zlib", "frame_types": []any{"native"}}}}, ""},
		{map[string]any{"aggregations": []any{map[string]any{"match": "^x("}}}, "aggregations[0]: label must be set"},
		{map[string]any{"aggregations": []any{map[string]any{"match": "^x(", "label": "x"}}}, "aggregations[0].match: error parsing regexp: missing closing )"},
		{map[string]any{"aggregations": []any{map[string]any{"label": "x"}}}, "aggregations[0] (label \"x\"): match (a regular expression on function names) or shlib must be set"},
		{map[string]any{"aggregations": []any{map[string]any{"match": "a", "label": "x", "frame_types": []any{"java"}}}}, "aggregations[0].frame_types: unknown frame type \"java\""},
		{map[string]any{"aggregations": []any{map[string]any{"match": strings.Repeat("a", 1025), "label": "x"}}}, "pattern of 1025 bytes, at most 1024"},
		{map[string]any{"aggregations": []any{map[string]any{"match": "(abcdefgh){1,900}", "label": "x"}}}, "instructions, at most 4096"},
		{map[string]any{"aggregations": []any{map[string]any{"match": "(a{1,1000}){1,1000}", "label": "x"}}}, "aggregations[0].match: error parsing regexp: invalid repeat count"},
		{map[string]any{"aggregations": func() []any {
			var a []any
			for i := 0; i < 65; i++ {
				a = append(a, map[string]any{"match": "x", "label": "x"})
			}
			return a
		}()}, "aggregations: 65 entries, at most 64"},
		{map[string]any{"flush_interval": "-1s"}, "flush_interval must not be negative"},
		{map[string]any{"flush_intervall": "1s"}, "invalid keys"},
	} {
		cfg := createDefaultConfig()
		err := confmap.NewFromStringMap(tc.raw).Unmarshal(cfg)
		if err == nil {
			err = confmap.Validate(cfg)
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.raw, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want %q", tc.raw, err, tc.want)
		}
	}
}

func TestHelpers(t *testing.T) {
	for in, want := range map[string]string{
		"__x64_sys_write": "write", "__arm64_sys_openat": "openat", "ksys_read": "read",
		"__x64_sys_": "", "do_sys_open": "", "__x64_sys_exit_group.cold": "exit_group",
	} {
		if got := syscallName(in); got != want {
			t.Errorf("syscallName(%q) = %q, want %q", in, got, want)
		}
	}
}
