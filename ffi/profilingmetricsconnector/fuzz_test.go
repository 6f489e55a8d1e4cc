// SPDX-License-Identifier: Apache-2.0

package profilingmetricsconnector

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/libotelprofiler/libotelprofiler/ffi/internal/testprofiles"
)

// FuzzConsumeProfiles: a gateway's connector takes profiles from the
// network; whatever decodes must not panic, whatever the indexes say, and
// the series stay within their bound. Seeds: the test profiles.
// go test -fuzz=FuzzConsumeProfiles -fuzztime=60s ./profilingmetricsconnector/
func FuzzConsumeProfiles(f *testing.F) {
	m := pprofile.ProtoMarshaler{}
	off := testprofiles.New(map[string]any{}, 1)
	off.Add(testprofiles.Sample{Count: 1, Thread: "GC Thread#0", Stack: []testprofiles.Frame{{Type: "go", Function: "runtime.gcBgMarkWorker"}}})
	off.OffCPU().Add(testprofiles.Sample{Values: []int64{5, -3}, Stack: []testprofiles.Frame{{Type: "kernel", Function: "__x64_sys_futex"}}})
	for _, pd := range []pprofile.Profiles{testprofiles.Canned(1), testprofiles.JavaPayments(2), off.P} {
		b, err := m.MarshalProfiles(pd)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	cfg := createDefaultConfig()
	cfg.FlushInterval = 0
	cfg.Metrics = map[string]MetricConfig{"samples.frame_type": {Enabled: true}, "samples.classification": {Enabled: true}}
	cfg.Aggregations = []Aggregation{{Match: "main|payments", Label: "x"}, {Shlib: "^lib", Label: "y"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		u := pprofile.ProtoUnmarshaler{}
		pd, err := u.UnmarshalProfiles(data)
		if err != nil {
			return
		}
		sink := new(consumertest.MetricsSink)
		c, err := NewFactory().CreateProfilesToMetrics(context.Background(), connectortest.NewNopSettings(Type), cfg, sink)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Start(context.Background(), componenttest.NewNopHost())
		if err := c.ConsumeProfiles(context.Background(), pd); err != nil {
			t.Fatal(err)
		}
		_ = c.Shutdown(context.Background())
		for _, md := range sink.AllMetrics() {
			if n := md.DataPointCount(); n > maxSeries {
				t.Fatalf("%d points", n)
			}
		}
	})
}
