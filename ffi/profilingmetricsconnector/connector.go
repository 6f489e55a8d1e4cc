// SPDX-License-Identifier: Apache-2.0

// Package profilingmetricsconnector turns profiles into per-resource
// metrics: delta sample counts by leaf frame type, shared library, syscall
// and kernel area (self); user-defined aggregations, frame types and
// classifications counted inclusively (a frame anywhere in the stack);
// runtime activities (GC, serialization, FFI); and off-CPU time from the
// off-CPU profile with the same classification.
//
// It is a stand-in for Elastic's connector of the same type
// (github.com/elastic/opentelemetry-collector-components/connector/profilingmetricsconnector),
// which could not be resolved from the module proxy available to this
// project (see ffi/README.md). It accepts the same configuration and emits
// the same metric names and attribute keys, so that configurations and
// dashboards built for the original work unchanged; the implementation is
// independent.
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

// ScopeName is the instrumentation scope name of every emitted metric
// (Elastic's connector uses its own module path the same way).
const ScopeName = "github.com/libotelprofiler/libotelprofiler/ffi/profilingmetricsconnector"

// Bounds on what a flush window holds: past them a data point's counts
// are dropped (counted, logged at the flush) rather than memory growing
// with what the profiles contain (classifications, labels, libraries).
const (
	maxSeriesPerResource = 2000
	maxSeries            = 50000
)

// NewFactory returns the connector factory (profiles -> metrics).
func NewFactory() xconnector.Factory {
	return xconnector.NewFactory(
		Type,
		func() component.Config { return createDefaultConfig() },
		xconnector.WithProfilesToMetrics(createProfilesToMetrics, component.StabilityLevelDevelopment),
	)
}

func createProfilesToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (xconnector.Profiles, error) {
	c := cfg.(*Config)
	comp, err := compile(c) // Validate ran already; a direct caller gets the error here
	if err != nil {
		return nil, err
	}
	return &conn{cfg: c, comp: comp, logger: set.Logger, next: next, buckets: map[string]*bucket{}}, nil
}

// seriesKey is one data point of one metric.
type seriesKey struct {
	def metricDef
	a   attrs
}

// bucket holds the counts of one resource over the current window, and
// the time range of the profiles they came from.
type bucket struct {
	resource   pcommon.Resource
	series     map[seriesKey]int64
	start, end pcommon.Timestamp
	owner      *conn
}

func (b *bucket) add(def metricDef, a attrs, n int64) {
	if n <= 0 || !b.owner.cfg.enabled(def) {
		return
	}
	k := seriesKey{def, a}
	if _, ok := b.series[k]; !ok {
		if len(b.series) >= maxSeriesPerResource || b.owner.nSeries >= maxSeries {
			b.owner.dropped += n
			return
		}
		b.owner.nSeries++
	}
	b.series[k] += n
}

// cover extends the bucket's time range by one profile's.
func (b *bucket) cover(start, end pcommon.Timestamp) {
	if b.start == 0 || start < b.start {
		b.start = start
	}
	if end > b.end {
		b.end = end
	}
}

type conn struct {
	cfg    *Config
	comp   *compiled
	logger *zap.Logger
	next   consumer.Metrics

	mu      sync.Mutex
	buckets map[string]*bucket
	nSeries int   // over every bucket
	dropped int64 // counts dropped over the bounds this window

	stop chan struct{}
	done chan struct{}
}

func (c *conn) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

func (c *conn) Start(context.Context, component.Host) error {
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
				if err := c.flush(context.Background()); err != nil {
					c.logger.Warn("sending profile metrics failed", zap.Error(err))
				}
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
	p := newPayload(pd.Dictionary(), c.comp)
	stacks := pd.Dictionary().StackTable()
	skipped := 0
	c.mu.Lock()
	for _, rp := range pd.ResourceProfiles().All() {
		key := resourceKey(rp.Resource())
		b := c.buckets[key]
		if b == nil {
			b = &bucket{resource: pcommon.NewResource(), series: map[seriesKey]int64{}, owner: c}
			rp.Resource().CopyTo(b.resource)
			c.buckets[key] = b
		}
		for _, sp := range rp.ScopeProfiles().All() {
			for _, prof := range sp.Profiles().All() {
				kind, typeUnit := kindOf(p.x, prof)
				if kind == kindOther {
					continue
				}
				sc := sampleCounter{p: p, kind: kind, typeUnit: typeUnit, out: b}
				last := prof.Time()
				for _, s := range prof.Samples().All() {
					for _, ts := range s.TimestampsUnixNano().All() {
						last = max(last, pcommon.Timestamp(ts))
					}
					si := s.StackIndex()
					if si < 0 || int(si) >= stacks.Len() {
						skipped++
						continue
					}
					if !sc.count(s, stacks.At(int(si)).LocationIndices().AsRaw(), weight(kind, s)) {
						skipped++
					}
				}
				// The points' times are the profiles' (not the flush's):
				// from the earliest profile start to the latest end.
				end := prof.Time() + pcommon.Timestamp(prof.DurationNano())
				if prof.DurationNano() == 0 {
					end = last
				}
				if prof.Samples().Len() > 0 {
					b.cover(prof.Time(), end)
				}
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

// flush sends the counts of the current window and starts a new one.
func (c *conn) flush(ctx context.Context) error {
	c.mu.Lock()
	buckets, dropped := c.buckets, c.dropped
	c.buckets, c.nSeries, c.dropped = map[string]*bucket{}, 0, 0
	c.mu.Unlock()
	if dropped > 0 {
		c.logger.Warn("profile metrics over the series bound: counts dropped",
			zap.Int64("weight", dropped), zap.Int("max_series_per_resource", maxSeriesPerResource), zap.Int("max_series", maxSeries))
	}

	md := pmetric.NewMetrics()
	keys := make([]string, 0, len(buckets))
	for k := range buckets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b := buckets[k]
		if len(b.series) == 0 {
			continue
		}
		byMetric := map[string][]point{}
		defs := map[string]metricDef{}
		for sk, n := range b.series {
			byMetric[sk.def.name] = append(byMetric[sk.def.name], point{sk.a, n})
			defs[sk.def.name] = sk.def
		}
		names := make([]string, 0, len(byMetric))
		for n := range byMetric {
			names = append(names, n)
		}
		sort.Strings(names)
		rm := md.ResourceMetrics().AppendEmpty()
		b.resource.CopyTo(rm.Resource())
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName(ScopeName)
		for _, name := range names {
			def := defs[name]
			m := sm.Metrics().AppendEmpty()
			m.SetName(def.name)
			m.SetDescription(def.desc)
			m.SetUnit(def.unit)
			var dps pmetric.NumberDataPointSlice
			if def.kind == kindGauge {
				dps = m.SetEmptyGauge().DataPoints()
			} else {
				sum := m.SetEmptySum()
				sum.SetIsMonotonic(true)
				sum.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
				dps = sum.DataPoints()
			}
			pts := byMetric[name]
			sort.Slice(pts, func(i, j int) bool { return pts[i].a.less(pts[j].a) })
			for _, e := range pts {
				dp := dps.AppendEmpty()
				dp.SetStartTimestamp(b.start)
				dp.SetTimestamp(b.end)
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

func (a attrs) fields() [10][2]string {
	return [...][2]string{
		{attrShlib, a.shlib}, {attrSyscall, a.syscall},
		{attrKernelArea, a.area}, {attrKernelProto, a.proto}, {attrKernelIO, a.io},
		{attrFrameType, a.frameType}, {attrClassification, a.classification}, {attrTypeUnit, a.typeUnit},
		{attrRuntime, a.runtime}, {attrCategory, a.category},
	}
}

func (a attrs) less(b attrs) bool {
	x, y := a.fields(), b.fields()
	for i := range x {
		if x[i][1] != y[i][1] {
			return x[i][1] < y[i][1]
		}
	}
	return false
}

func putAttrs(m pcommon.Map, a attrs) {
	for _, kv := range a.fields() {
		if kv[1] != "" {
			m.PutStr(kv[0], kv[1])
		}
	}
}
