// SPDX-License-Identifier: Apache-2.0

// Package profilingmetricsconnector turns profiles into per-resource delta
// sample counts by leaf frame type, shared library, syscall and kernel area.
//
// It is a stand-in for Elastic's connector of the same type
// (github.com/elastic/opentelemetry-collector-components/connector/profilingmetricsconnector),
// which could not be resolved from the module proxy available to this
// project (see ffi/README.md). It emits the same metric names and attribute
// keys, so that dashboards built for the original work unchanged; the
// implementation is independent.
package profilingmetricsconnector // import "github.com/libotelprofiler/libotelprofiler/ffi/profilingmetricsconnector"

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/xconnector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.uber.org/zap"
)

// Type is the component type, the same as Elastic's connector.
var Type = component.MustNewType("profilingmetrics")

// ScopeName is the instrumentation scope of the emitted metrics.
const ScopeName = "github.com/libotelprofiler/libotelprofiler/ffi/profilingmetricsconnector"

// NewFactory returns the connector factory (profiles -> metrics).
func NewFactory() xconnector.Factory {
	return xconnector.NewFactory(
		Type,
		func() component.Config { return createDefaultConfig() },
		xconnector.WithProfilesToMetrics(createProfilesToMetrics, component.StabilityLevelDevelopment),
	)
}

func createProfilesToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (xconnector.Profiles, error) {
	return &conn{cfg: cfg.(*Config), logger: set.Logger, next: next, buckets: map[string]*bucket{}}, nil
}

// bucket holds the counts of one resource over the current window.
type bucket struct {
	resource pcommon.Resource
	counts   counts
}

type conn struct {
	cfg    *Config
	logger *zap.Logger
	next   consumer.Metrics

	mu          sync.Mutex
	buckets     map[string]*bucket
	windowStart pcommon.Timestamp

	stop chan struct{}
	done chan struct{}
}

func (c *conn) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

func (c *conn) Start(context.Context, component.Host) error {
	c.windowStart = pcommon.NewTimestampFromTime(time.Now())
	if c.cfg.FlushInterval <= 0 {
		return nil
	}
	c.stop = make(chan struct{})
	c.done = make(chan struct{})
	go func() {
		defer close(c.done)
		t := time.NewTicker(c.cfg.FlushInterval)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				c.flush(context.Background())
			}
		}
	}()
	return nil
}

func (c *conn) Shutdown(ctx context.Context) error {
	if c.stop != nil {
		close(c.stop)
		<-c.done
		c.stop = nil
	}
	return c.flush(ctx)
}

// resourceKey identifies a resource by its sorted attributes.
func resourceKey(r pcommon.Resource) string {
	type kv struct{ k, v string }
	var kvs []kv
	for k, v := range r.Attributes().All() {
		kvs = append(kvs, kv{k, v.AsString()})
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].k < kvs[j].k })
	var b strings.Builder
	for _, e := range kvs {
		b.WriteString(e.k)
		b.WriteByte(0)
		b.WriteString(e.v)
		b.WriteByte(0)
	}
	return b.String()
}

func (c *conn) ConsumeProfiles(ctx context.Context, pd pprofile.Profiles) error {
	x := dict{pd.Dictionary()}
	skipped := 0
	c.mu.Lock()
	for _, rp := range pd.ResourceProfiles().All() {
		key := resourceKey(rp.Resource())
		b := c.buckets[key]
		if b == nil {
			b = &bucket{resource: pcommon.NewResource(), counts: counts{}}
			rp.Resource().CopyTo(b.resource)
			c.buckets[key] = b
		}
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				if !isSampleCount(x, p) {
					continue
				}
				skipped += classifyProfile(x, p, b.counts)
			}
		}
	}
	c.mu.Unlock()
	if skipped > 0 {
		c.logger.Debug("samples without frame type information skipped", zap.Int("samples", skipped))
	}
	if c.cfg.FlushInterval <= 0 {
		return c.flush(ctx)
	}
	return nil
}

// isSampleCount reports whether p counts samples (sample_type samples/count),
// the only profile kind the metrics are defined for.
func isSampleCount(x dict, p pprofile.Profile) bool {
	st := p.SampleType()
	return x.str(st.TypeStrindex()) == "samples" && x.str(st.UnitStrindex()) == "count"
}

// flush sends the counts of the current window and starts a new one.
func (c *conn) flush(ctx context.Context) error {
	c.mu.Lock()
	buckets := c.buckets
	c.buckets = map[string]*bucket{}
	start := c.windowStart
	now := pcommon.NewTimestampFromTime(time.Now())
	c.windowStart = now
	c.mu.Unlock()

	md := pmetric.NewMetrics()
	keys := make([]string, 0, len(buckets))
	for k := range buckets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b := buckets[k]
		names := make([]string, 0, len(b.counts))
		for n := range b.counts {
			if c.cfg.enabled(n) {
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			continue
		}
		sort.Strings(names)
		rm := md.ResourceMetrics().AppendEmpty()
		b.resource.CopyTo(rm.Resource())
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName(ScopeName)
		for _, name := range names {
			def := metricByName[name]
			m := sm.Metrics().AppendEmpty()
			m.SetName(def.name)
			m.SetDescription(def.desc)
			m.SetUnit("1")
			sum := m.SetEmptySum()
			sum.SetIsMonotonic(true)
			sum.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
			for _, e := range sortedPoints(b.counts[name]) {
				dp := sum.DataPoints().AppendEmpty()
				dp.SetStartTimestamp(start)
				dp.SetTimestamp(now)
				dp.SetIntValue(e.n)
				putAttrs(dp.Attributes(), e.a)
			}
		}
	}
	if md.DataPointCount() == 0 {
		return nil
	}
	return c.next.ConsumeMetrics(ctx, md)
}

type point struct {
	a attrs
	n int64
}

func sortedPoints(m map[attrs]int64) []point {
	out := make([]point, 0, len(m))
	for a, n := range m {
		out = append(out, point{a, n})
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i].a, out[j].a
		return x.shlib+"\x00"+x.syscall+"\x00"+x.area+"\x00"+x.proto+"\x00"+x.io <
			y.shlib+"\x00"+y.syscall+"\x00"+y.area+"\x00"+y.proto+"\x00"+y.io
	})
	return out
}

func putAttrs(m pcommon.Map, a attrs) {
	for _, kv := range [...][2]string{
		{attrShlib, a.shlib}, {attrSyscall, a.syscall},
		{attrKernelArea, a.area}, {attrKernelProto, a.proto}, {attrKernelIO, a.io},
	} {
		if kv[1] != "" {
			m.PutStr(kv[0], kv[1])
		}
	}
}
