// SPDX-License-Identifier: Apache-2.0

// Package testprofiles builds small, well-formed OTLP profiles for tests,
// shaped like what libotelprofiler emits (sample_type samples/count,
// per-sample timestamps, profile.frame.type on every location, function
// names on kernel frames, mapping file names on native frames).
package testprofiles // import "github.com/libotelprofiler/libotelprofiler/ffi/internal/testprofiles"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// Frame is one stack frame, leaf first in a stack.
type Frame struct {
	Type     string // profile.frame.type: native, kernel, go, ...
	Function string // function name ("" = none)
	File     string // mapping file name for native frames ("" = no mapping)
	Source   string // the function's file name (CPython's module, a Java class's source)
}

// Sample is one stack with its timestamps count.
type Sample struct {
	Stack  []Frame
	Count  int     // number of timestamps
	Values []int64 // one value per timestamp (off-CPU nanoseconds); sets Count when it is 0
	Thread string  // thread.name sample attribute ("" = none)
}

// Builder accumulates dictionary tables, deduplicating entries.
type Builder struct {
	P       pprofile.Profiles
	dict    pprofile.ProfilesDictionary
	strs    map[string]int32
	funcs   map[string]int32
	maps    map[string]int32
	attrs   map[string]int32
	locs    map[Frame]int32
	scope   pprofile.ScopeProfiles
	profile pprofile.Profile
}

// New returns a builder with one resource (the given attributes) holding one
// profile starting at start (unix ns).
func New(resAttrs map[string]any, start uint64) *Builder {
	b := &Builder{
		P:     pprofile.NewProfiles(),
		strs:  map[string]int32{},
		funcs: map[string]int32{},
		maps:  map[string]int32{},
		attrs: map[string]int32{},
		locs:  map[Frame]int32{},
	}
	b.dict = b.P.Dictionary()
	// Entry 0 of every table is the zero value.
	b.str("")
	b.dict.MappingTable().AppendEmpty()
	b.dict.LocationTable().AppendEmpty()
	b.dict.FunctionTable().AppendEmpty()
	b.dict.LinkTable().AppendEmpty()
	b.dict.AttributeTable().AppendEmpty()
	b.dict.StackTable().AppendEmpty()

	rp := b.P.ResourceProfiles().AppendEmpty()
	_ = rp.Resource().Attributes().FromRaw(resAttrs)
	b.scope = rp.ScopeProfiles().AppendEmpty()
	b.scope.Scope().SetName("libotelprofiler")
	b.profile = b.scope.Profiles().AppendEmpty()
	b.profile.SampleType().SetTypeStrindex(b.str("samples"))
	b.profile.SampleType().SetUnitStrindex(b.str("count"))
	b.profile.PeriodType().SetTypeStrindex(b.str("cpu"))
	b.profile.PeriodType().SetUnitStrindex(b.str("nanoseconds"))
	b.profile.SetPeriod(1_000_000_000 / 19)
	b.profile.SetTime(pcommon.Timestamp(start))
	b.profile.SetDurationNano(1e9)
	return b
}

// OffCPU starts a second Profile in the same scope, shaped like the
// library's off-CPU one (sample type events/nanoseconds, no period), over
// the same time range; later Adds go to it.
func (b *Builder) OffCPU() *Builder {
	start, dur := b.profile.Time(), b.profile.DurationNano()
	b.profile = b.scope.Profiles().AppendEmpty()
	b.profile.SampleType().SetTypeStrindex(b.str("events"))
	b.profile.SampleType().SetUnitStrindex(b.str("nanoseconds"))
	b.profile.SetTime(start)
	b.profile.SetDurationNano(dur)
	return b
}

func (b *Builder) threadAttr(name string) int32 {
	key := "thread.name\x00" + name
	if i, ok := b.attrs[key]; ok {
		return i
	}
	i := int32(b.dict.AttributeTable().Len())
	a := b.dict.AttributeTable().AppendEmpty()
	a.SetKeyStrindex(b.str("thread.name"))
	a.Value().SetStr(name)
	b.attrs[key] = i
	return i
}

func (b *Builder) str(s string) int32 {
	if i, ok := b.strs[s]; ok {
		return i
	}
	i := int32(b.dict.StringTable().Len())
	b.dict.StringTable().Append(s)
	b.strs[s] = i
	return i
}

func (b *Builder) frameTypeAttr(t string) int32 {
	if i, ok := b.attrs[t]; ok {
		return i
	}
	i := int32(b.dict.AttributeTable().Len())
	a := b.dict.AttributeTable().AppendEmpty()
	a.SetKeyStrindex(b.str("profile.frame.type"))
	a.Value().SetStr(t)
	b.attrs[t] = i
	return i
}

func (b *Builder) location(f Frame) int32 {
	if i, ok := b.locs[f]; ok {
		return i
	}
	i := int32(b.dict.LocationTable().Len())
	loc := b.dict.LocationTable().AppendEmpty()
	loc.SetAddress(uint64(0x1000 + 0x10*i))
	loc.AttributeIndices().Append(b.frameTypeAttr(f.Type))
	if f.File != "" {
		mi, ok := b.maps[f.File]
		if !ok {
			mi = int32(b.dict.MappingTable().Len())
			m := b.dict.MappingTable().AppendEmpty()
			m.SetFilenameStrindex(b.str(f.File))
			m.SetMemoryStart(0x400000)
			m.SetMemoryLimit(0x500000)
			b.maps[f.File] = mi
		}
		loc.SetMappingIndex(mi)
	}
	if f.Function != "" {
		fi, ok := b.funcs[f.Function+"\x00"+f.Source]
		if !ok {
			fi = int32(b.dict.FunctionTable().Len())
			fn := b.dict.FunctionTable().AppendEmpty()
			fn.SetNameStrindex(b.str(f.Function))
			if f.Source != "" {
				fn.SetFilenameStrindex(b.str(f.Source))
			}
			b.funcs[f.Function+"\x00"+f.Source] = fi
		}
		loc.Lines().AppendEmpty().SetFunctionIndex(fi)
	}
	b.locs[f] = i
	return i
}

// Add appends a sample; timestamps are spread over the profile's duration.
func (b *Builder) Add(s Sample) *Builder {
	st := b.dict.StackTable().AppendEmpty()
	for _, f := range s.Stack {
		st.LocationIndices().Append(b.location(f))
	}
	smp := b.profile.Samples().AppendEmpty()
	smp.SetStackIndex(int32(b.dict.StackTable().Len() - 1))
	if s.Thread != "" {
		smp.AttributeIndices().Append(b.threadAttr(s.Thread))
	}
	n := s.Count
	if n == 0 {
		n = len(s.Values)
	}
	for k := 0; k < n; k++ {
		smp.TimestampsUnixNano().Append(uint64(b.profile.Time()) + uint64(k)*1000)
	}
	smp.Values().FromRaw(s.Values)
	return b
}

// Canned returns a profile with a syscall-heavy kernel sample (3 counts:
// tcp_sendmsg <- __x64_sys_write <- libc write), a native libssl sample
// (2 counts) and a native main-executable sample (1 count).
func Canned(start uint64) pprofile.Profiles {
	b := New(map[string]any{"host.name": "fakehost", "process.pid": int64(4242), "process.executable.name": "app"}, start)
	b.Add(Sample{Count: 3, Stack: []Frame{
		{Type: "kernel", Function: "tcp_sendmsg"},
		{Type: "kernel", Function: "__x64_sys_write"},
		{Type: "native", Function: "write", File: "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		{Type: "native", Function: "main", File: "/usr/bin/app"},
	}})
	b.Add(Sample{Count: 2, Stack: []Frame{
		{Type: "native", Function: "SSL_write", File: "/usr/lib/x86_64-linux-gnu/libssl.so.3"},
		{Type: "native", Function: "main", File: "/usr/bin/app"},
	}})
	b.Add(Sample{Count: 1, Stack: []Frame{
		{Type: "native", Function: "main", File: "/usr/bin/app"},
	}})
	return b.P
}

// JavaPayments is a known JVM workload for the aggregations of Elastic's
// README (^com\.example\.payments\. and ^com\.example\.auth\.): 5 samples
// in the payment path, 3 in token verification called from it (its leaf
// SHA-256 in libcrypto), 2 in the web handler only. Inclusively:
// payments 8, authentication 3; by leaf: jvm 7, native libcrypto 3.
func JavaPayments(start uint64) pprofile.Profiles {
	jvm := func(fn string) Frame { return Frame{Type: "jvm", Function: fn} }
	thread := Frame{Type: "native", Function: "start_thread", File: "/usr/lib/x86_64-linux-gnu/libc.so.6"}
	b := New(map[string]any{"process.pid": int64(77), "service.name": "shop"}, start)
	b.Add(Sample{Count: 5, Stack: []Frame{
		jvm("com.example.payments.Ledger.post"), jvm("com.example.payments.Api.charge"),
		jvm("com.example.web.Handler.serve"), thread}})
	b.Add(Sample{Count: 3, Stack: []Frame{
		{Type: "native", Function: "sha256_block_data_order", File: "/usr/lib/x86_64-linux-gnu/libcrypto.so.3"},
		jvm("com.example.auth.Token.verify"), jvm("com.example.payments.Api.charge"),
		jvm("com.example.web.Handler.serve"), thread}})
	b.Add(Sample{Count: 2, Stack: []Frame{jvm("com.example.web.Handler.serve"), thread}})
	return b.P
}
