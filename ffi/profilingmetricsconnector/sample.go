// SPDX-License-Identifier: Apache-2.0

package profilingmetricsconnector // import "github.com/libotelprofiler/libotelprofiler/ffi/profilingmetricsconnector"

import (
	"math/bits"

	"go.opentelemetry.io/collector/pdata/pprofile"
)

// profileKind is what a Profile's samples weigh.
type profileKind int

const (
	kindOther  profileKind = iota // not counted
	kindOnCPU                     // samples/count: a sample weighs its timestamps
	kindOffCPU                    // events/nanoseconds: a sample weighs the sum of its values
)

func kindOf(x dict, p pprofile.Profile) (profileKind, string) {
	st := p.SampleType()
	typ, unit := x.str(st.TypeStrindex()), x.str(st.UnitStrindex())
	switch {
	case typ == "samples" && unit == "count":
		return kindOnCPU, typ + "_" + unit
	case typ == "events" && unit == "nanoseconds":
		return kindOffCPU, typ + "_" + unit
	}
	return kindOther, typ + "_" + unit
}

// weight is a sample's weight in its profile's unit.
func weight(kind profileKind, s pprofile.Sample) int64 {
	if kind == kindOffCPU {
		var ns int64
		for _, v := range s.Values().All() {
			if v > 0 {
				ns += v
			}
		}
		return ns
	}
	if n := int64(s.TimestampsUnixNano().Len()); n > 0 {
		return n
	}
	return 1
}

// sampleCounter adds one sample's metrics to a bucket.
type sampleCounter struct {
	p        *payload
	kind     profileKind
	typeUnit string
	out      *bucket
}

// count adds a sample of weight w; it returns false if its leaf frame has
// no known frame type (the leaf metrics skip it; the inclusive ones still
// count what they find in its stack).
func (sc *sampleCounter) count(s pprofile.Sample, stack []int32, w int64) bool {
	c, out := sc.p.c, sc.out
	typ, a, ok := leafAttrs(sc.p, stack)
	if ok {
		switch {
		case sc.kind == kindOffCPU:
			a.frameType = typ
			out.add(metricOffCPU, a, w)
		case typ == "kernel":
			out.add(metricKernel, a, w)
		default:
			out.add(metricUser, attrs{}, w)
			out.add(frameTypeMetric[typ], a, w)
		}
	}

	// Inclusive metrics: each value counts once per sample however many
	// frames of the stack have it (recursion does not inflate it).
	if c.frameTypes {
		var seen [16]string // more than the known frame types (l.ok)
		n := 0
		for _, li := range stack {
			if l := sc.p.loc(li); l != nil && l.ok && !contains(seen[:n], l.typ) {
				seen[n] = l.typ
				n++
				out.add(metricFrameType, attrs{frameType: l.typ, typeUnit: sc.typeUnit}, w)
			}
		}
	}
	if c.classification {
		seen := map[[2]string]bool{}
		for _, li := range stack {
			if l := sc.p.loc(li); l != nil && l.class != "" && !seen[[2]string{l.typ, l.class}] {
				seen[[2]string{l.typ, l.class}] = true
				out.add(metricClassification, attrs{classification: l.class, frameType: l.typ, typeUnit: sc.typeUnit}, w)
			}
		}
	}
	if c.custom && len(c.aggs) > 0 {
		var m uint64
		for _, li := range stack {
			if l := sc.p.loc(li); l != nil {
				m |= l.aggs
			}
		}
		// Aggregations sharing a label count a sample once.
		var labels uint64
		for m != 0 {
			i := bits.TrailingZeros64(m)
			m &^= 1 << i
			labels |= 1 << c.aggs[i].labelIdx
		}
		for labels != 0 {
			i := bits.TrailingZeros64(labels)
			labels &^= 1 << i
			out.add(metricCustom, attrs{frameType: c.labels[i], typeUnit: sc.typeUnit}, w)
		}
	}
	if c.runtime {
		def := metricRuntime
		if sc.kind == kindOffCPU {
			def = metricOffCPURuntime
		}
		for rc := range sc.runtimeActivities(s, stack) {
			out.add(def, attrs{runtime: rc[0], category: rc[1]}, w)
		}
	}
	return ok
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// runtimeActivities is the set of (runtime, category) a sample is in.
func (sc *sampleCounter) runtimeActivities(s pprofile.Sample, stack []int32) map[[2]string]bool {
	set := map[[2]string]bool{}
	for m := sc.p.threadRules(s); m != 0; {
		i := bits.TrailingZeros64(m)
		m &^= 1 << i
		r := &builtinRuntimeRules[i]
		set[[2]string{r.runtime, r.category}] = true
	}
	// Rules without a runtime take the matching frame's, if managed, or
	// the nearest managed caller's (rootward), resolved as the walk goes.
	var pending []string
	for i, li := range stack {
		l := sc.p.loc(li)
		if l == nil {
			continue
		}
		if managedTypes[l.typ] {
			for _, cat := range pending {
				set[[2]string{l.typ, cat}] = true
			}
			pending = pending[:0]
		}
		for m := l.rules; m != 0; {
			j := bits.TrailingZeros64(m)
			m &^= 1 << j
			r := &builtinRuntimeRules[j]
			switch {
			case r.runtime != "":
				set[[2]string{r.runtime, r.category}] = true
			case managedTypes[l.typ]:
				set[[2]string{l.typ, r.category}] = true
			default:
				pending = append(pending, r.category)
			}
		}
		if i+1 < len(stack) {
			if caller := sc.p.loc(stack[i+1]); caller != nil && jniBoundary(l, caller) {
				set[[2]string{"jvm", catFFI}] = true
			}
		}
	}
	for _, cat := range pending {
		set[[2]string{"native", cat}] = true
	}
	return set
}
