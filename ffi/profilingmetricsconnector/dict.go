// SPDX-License-Identifier: Apache-2.0

package profilingmetricsconnector // import "github.com/libotelprofiler/libotelprofiler/ffi/profilingmetricsconnector"

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/libotelprofiler/libotelprofiler/ffi/internal/shlib"
)

// dict resolves dictionary indexes defensively: malformed input yields
// ok=false, never a panic.
type dict struct {
	d pprofile.ProfilesDictionary
}

func (x dict) str(i int32) string {
	t := x.d.StringTable()
	if i < 0 || int(i) >= t.Len() {
		return ""
	}
	return t.At(int(i))
}

// locInfo is what the classifications need of one location, resolved once
// per payload (not once per frame of every sample; see match).
type locInfo struct {
	ok    bool     // a known profile.frame.type
	typ   string   // profile.frame.type
	fn    string   // the first function name of its lines
	fns   []string // every function name of its lines (inlined ones first)
	files []string // their functions' file names
	shlib string   // shlib_name of its mapping ("" if not a shared object)
	class string   // samples.classification value ("" none)
	aggs  uint64   // user aggregations matching it (bit i: aggregations[i])
	rules uint64   // builtin frame rules matching it (bit i: builtinRuntimeRules[i])
}

// payload is one ConsumeProfiles call's view of its dictionary.
type payload struct {
	x       dict
	c       *compiled
	locs    []locInfo
	done    []bool
	threads map[int32]uint64     // attribute index -> thread rules matching its thread.name
	matches map[string][2]uint64 // what a location's matchers see -> its aggs, rules
}

func newPayload(d pprofile.ProfilesDictionary, c *compiled) *payload {
	n := d.LocationTable().Len()
	return &payload{x: dict{d}, c: c, locs: make([]locInfo, n), done: make([]bool, n), threads: map[int32]uint64{}, matches: map[string][2]uint64{}}
}

// loc returns the resolved location li (nil if out of range).
func (p *payload) loc(li int32) *locInfo {
	if li < 0 || int(li) >= len(p.locs) {
		return nil
	}
	l := &p.locs[li]
	if p.done[li] {
		return l
	}
	p.done[li] = true
	d := p.x.d
	loc := d.LocationTable().At(int(li))
	at := d.AttributeTable()
	for _, ai := range loc.AttributeIndices().All() {
		if ai < 0 || int(ai) >= at.Len() {
			continue
		}
		if kv := at.At(int(ai)); p.x.str(kv.KeyStrindex()) == frameTypeKey {
			l.typ = kv.Value().Str()
			break
		}
	}
	_, l.ok = frameTypeMetric[l.typ]
	ft := d.FunctionTable()
	for _, ln := range loc.Lines().All() {
		fi := ln.FunctionIndex()
		if fi <= 0 || int(fi) >= ft.Len() {
			continue
		}
		f := ft.At(int(fi))
		name := p.x.str(f.NameStrindex())
		if name == "" {
			continue
		}
		if l.fn == "" {
			l.fn = name
		}
		l.fns = append(l.fns, name)
		if file := p.x.str(f.FilenameStrindex()); file != "" {
			l.files = append(l.files, file)
		}
	}
	if mi := loc.MappingIndex(); mi > 0 && int(mi) < d.MappingTable().Len() {
		l.shlib = shlib.Name(p.x.str(d.MappingTable().At(int(mi)).FilenameStrindex()))
	}
	if l.fn != "" {
		l.class = classification(l.typ, l.fn)
	}
	l.aggs, l.rules = p.match(l)
	return l
}

// match returns the aggregations and builtin frame rules matching l. The
// result depends only on what the matchers see, which many locations share
// (a function's every sampled address is a location): it is kept per
// payload under that key, so each regular expression runs once per
// distinct function, not once per location.
func (p *payload) match(l *locInfo) (aggs, rules uint64) {
	var b strings.Builder
	b.WriteString(l.typ)
	b.WriteByte(0)
	b.WriteString(l.shlib)
	for _, f := range l.fns {
		b.WriteByte(1)
		b.WriteString(f)
	}
	for _, f := range l.files {
		b.WriteByte(2)
		b.WriteString(f)
	}
	key := b.String()
	if m, ok := p.matches[key]; ok {
		return m[0], m[1]
	}
	for i := range p.c.aggs {
		if p.c.aggs[i].m.matches(l) {
			aggs |= 1 << i
		}
	}
	for i := range builtinRuntimeRules {
		if r := &builtinRuntimeRules[i]; r.thread == nil && r.frame.matches(l) {
			rules |= 1 << i
		}
	}
	p.matches[key] = [2]uint64{aggs, rules}
	return aggs, rules
}

// threadRules returns the builtin thread rules matching a sample's
// thread.name (cached per attribute index).
func (p *payload) threadRules(s pprofile.Sample) uint64 {
	at := p.x.d.AttributeTable()
	for _, ai := range s.AttributeIndices().All() {
		if ai < 0 || int(ai) >= at.Len() {
			continue
		}
		if m, ok := p.threads[ai]; ok {
			if m != noThread {
				return m
			}
			continue
		}
		kv := at.At(int(ai))
		if p.x.str(kv.KeyStrindex()) != "thread.name" {
			p.threads[ai] = noThread
			continue
		}
		var m uint64
		name := kv.Value().AsString()
		for i := range builtinRuntimeRules {
			if r := &builtinRuntimeRules[i]; r.thread != nil && matchBounded(r.thread, name) {
				m |= 1 << i
			}
		}
		p.threads[ai] = m
		return m
	}
	return 0
}

// noThread marks an attribute that is not thread.name.
const noThread = ^uint64(0)
