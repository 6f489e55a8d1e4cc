// Helpers that decode what otelprof writes with the collector's own pdata
// unmarshaler (an independent decoder) and flatten it for assertions.
package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// Frame is one resolved location of a sample stack, leaf first.
type Frame struct {
	Function  string // Lines[0]'s name (the innermost inlined function)
	Mapping   string
	Type      string // profile.frame.type
	Address   uint64
	BuildID   string
	BuildIDGo string // process.executable.build_id.go of the mapping
	Unwind    string // otelprof.unwind.method ("frame_pointer" or "")
	Lines     []Line // innermost first
}

// Line is one Line of a Location with its Function.
type Line struct {
	Name, SystemName, Filename string
	Line                       int64
	StartLine                  int64 // Function.start_line
}

// Sample is one decoded sample (one timestamp of a merged OTLP sample).
type Sample struct {
	Frames     []Frame
	ThreadID   int64
	ThreadName string
	CPU        int64
	TimeNs     uint64
	// The sample's Link (OTEP 4947 thread context), hex; "" if none.
	TraceID string
	SpanID  string
	// Every sample attribute, including thread.id etc. above.
	Attrs map[string]any
	// Off-CPU events (a Profile of sample type events/nanoseconds):
	// the nanoseconds this event's thread was off CPU.
	OffCPUNs int64
}

// Process is one ResourceProfiles.
type Process struct {
	Attrs   map[string]any
	Samples []Sample         // the CPU profile's
	Profile pprofile.Profile // the CPU profile
	// The off-CPU profile's events and the profile, if there is one.
	OffCPU        []Sample
	OffCPUProfile *pprofile.Profile
}

type Decoded struct {
	Data      pprofile.Profiles
	Processes []*Process
}

func (d *Decoded) ByPID(pid int) *Process {
	for _, p := range d.Processes {
		if v, ok := p.Attrs["process.pid"].(int64); ok && int(v) == pid {
			return p
		}
	}
	return nil
}

// ByPIDName is the process with that pid running that executable: a pid
// sampled between fork and exec has a second resource under its parent's
// name (the pre-exec image).
func (d *Decoded) ByPIDName(pid int, exe string) *Process {
	for _, p := range d.Processes {
		if v, ok := p.Attrs["process.pid"].(int64); ok && int(v) == pid &&
			p.Attrs["process.executable.name"] == exe {
			return p
		}
	}
	return nil
}

func (d *Decoded) TotalSamples() int {
	n := 0
	for _, p := range d.Processes {
		n += len(p.Samples)
	}
	return n
}

func attrValue(v pcommon.Value) any {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		return v.Int()
	case pcommon.ValueTypeStr:
		return v.Str()
	default:
		return v.AsString()
	}
}

// decodeFile unmarshals an OTLP ProfilesData file and checks the
// dictionary invariants every producer must keep.
func decodeFile(t *testing.T, path string) *Decoded {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var um pprofile.ProtoUnmarshaler
	data, err := um.UnmarshalProfiles(raw)
	if err != nil {
		t.Fatalf("pdata cannot decode %s: %v", path, err)
	}
	dict := data.Dictionary()
	strs := dict.StringTable()
	if strs.Len() == 0 || strs.At(0) != "" {
		t.Fatalf("string_table[0] must be \"\"")
	}
	seen := map[string]bool{}
	for i := 0; i < strs.Len(); i++ {
		// Protobuf strings must be UTF-8 (Collector exporters reject or
		// mangle others); names and paths come from hostile bytes.
		if !utf8.ValidString(strs.At(i)) {
			t.Fatalf("string_table[%d] is not UTF-8: %q", i, strs.At(i))
		}
		if seen[strs.At(i)] {
			t.Fatalf("duplicate string %q in string_table", strs.At(i))
		}
		seen[strs.At(i)] = true
	}
	str := func(i int32) string {
		if i < 0 || int(i) >= strs.Len() {
			t.Fatalf("string index %d out of range", i)
		}
		return strs.At(int(i))
	}
	for name, n := range map[string]int{
		"mapping": dict.MappingTable().Len(), "location": dict.LocationTable().Len(),
		"function": dict.FunctionTable().Len(), "link": dict.LinkTable().Len(),
		"attribute": dict.AttributeTable().Len(), "stack": dict.StackTable().Len(),
	} {
		if n == 0 {
			t.Fatalf("%s_table has no zero entry 0", name)
		}
	}
	if l := dict.LocationTable().At(0); l.Address() != 0 || l.MappingIndex() != 0 || l.Lines().Len() != 0 {
		t.Fatalf("location_table[0] is not the zero value")
	}
	if l := dict.LinkTable().At(0); !l.TraceID().IsEmpty() || !l.SpanID().IsEmpty() {
		t.Fatalf("link_table[0] is not the zero value")
	}
	links := map[string]bool{}
	for i := 1; i < dict.LinkTable().Len(); i++ {
		l := dict.LinkTable().At(i)
		k := l.TraceID().String() + l.SpanID().String()
		if links[k] {
			t.Fatalf("duplicate link %s in link_table", k)
		}
		links[k] = true
	}
	if f := dict.FunctionTable().At(0); f.NameStrindex() != 0 {
		t.Fatalf("function_table[0] is not the zero value")
	}
	attrs := dict.AttributeTable()
	attr := func(i int32) (string, any) {
		if i <= 0 || int(i) >= attrs.Len() {
			t.Fatalf("attribute index %d out of range", i)
		}
		a := attrs.At(int(i))
		return str(a.KeyStrindex()), attrValue(a.Value())
	}

	out := &Decoded{Data: data}
	for r := 0; r < data.ResourceProfiles().Len(); r++ {
		rp := data.ResourceProfiles().At(r)
		p := &Process{Attrs: map[string]any{}}
		rp.Resource().Attributes().Range(func(k string, v pcommon.Value) bool {
			if v.Type() == pcommon.ValueTypeStr && !utf8.ValidString(v.Str()) {
				t.Fatalf("resource attribute %s is not UTF-8: %q", k, v.Str())
			}
			p.Attrs[k] = attrValue(v)
			return true
		})
		for s := 0; s < rp.ScopeProfiles().Len(); s++ {
			sp := rp.ScopeProfiles().At(s)
			for pi := 0; pi < sp.Profiles().Len(); pi++ {
				prof := sp.Profiles().At(pi)
				st := prof.SampleType()
				offcpu := str(st.TypeStrindex()) == "events" && str(st.UnitStrindex()) == "nanoseconds"
				if offcpu {
					if p.OffCPUProfile != nil {
						t.Fatalf("two off-CPU profiles in one resource")
					}
					p.OffCPUProfile = &prof
				} else {
					p.Profile = prof
				}
				start := uint64(prof.Time())
				end := start + prof.DurationNano()
				for i := 0; i < prof.Samples().Len(); i++ {
					smp := prof.Samples().At(i)
					base := Sample{Attrs: map[string]any{}}
					if li := smp.LinkIndex(); li != 0 {
						if li < 0 || int(li) >= dict.LinkTable().Len() {
							t.Fatalf("sample link index %d out of range", li)
						}
						l := dict.LinkTable().At(int(li))
						base.TraceID = l.TraceID().String()
						base.SpanID = l.SpanID().String()
					}
					for _, ai := range smp.AttributeIndices().AsRaw() {
						k, v := attr(ai)
						if _, dup := base.Attrs[k]; dup {
							t.Fatalf("sample attribute %q twice", k)
						}
						base.Attrs[k] = v
						switch k {
						case "thread.id":
							base.ThreadID = v.(int64)
						case "thread.name":
							base.ThreadName = v.(string)
						case "cpu.logical_number":
							base.CPU = v.(int64)
						}
					}
					si := smp.StackIndex()
					if si <= 0 || int(si) >= dict.StackTable().Len() {
						t.Fatalf("sample stack index %d out of range", si)
					}
					for _, li := range dict.StackTable().At(int(si)).LocationIndices().AsRaw() {
						if li <= 0 || int(li) >= dict.LocationTable().Len() {
							t.Fatalf("location index %d out of range", li)
						}
						loc := dict.LocationTable().At(int(li))
						f := Frame{Address: loc.Address()}
						for li := 0; li < loc.Lines().Len(); li++ {
							ln := loc.Lines().At(li)
							fi := ln.FunctionIndex()
							if fi < 0 || int(fi) >= dict.FunctionTable().Len() {
								t.Fatalf("function index %d out of range", fi)
							}
							fn := dict.FunctionTable().At(int(fi))
							f.Lines = append(f.Lines, Line{
								Name: str(fn.NameStrindex()), SystemName: str(fn.SystemNameStrindex()),
								Filename: str(fn.FilenameStrindex()), Line: ln.Line(),
								StartLine: fn.StartLine(),
							})
						}
						if len(f.Lines) > 0 {
							f.Function = f.Lines[0].Name
						}
						if mi := loc.MappingIndex(); mi > 0 {
							m := dict.MappingTable().At(int(mi))
							f.Mapping = str(m.FilenameStrindex())
							for _, ai := range m.AttributeIndices().AsRaw() {
								switch k, v := attr(ai); k {
								case "process.executable.build_id.gnu":
									f.BuildID = v.(string)
								case "process.executable.build_id.go":
									f.BuildIDGo = v.(string)
								}
							}
						}
						for _, ai := range loc.AttributeIndices().AsRaw() {
							switch k, v := attr(ai); k {
							case "profile.frame.type":
								f.Type = v.(string)
							case "otelprof.unwind.method":
								f.Unwind = v.(string)
							}
						}
						base.Frames = append(base.Frames, f)
					}
					ts := smp.TimestampsUnixNano().AsRaw()
					if len(ts) == 0 {
						t.Fatalf("sample without timestamps")
					}
					if smp.Values().Len() != 0 && smp.Values().Len() != len(ts) {
						t.Fatalf("values and timestamps differ in length")
					}
					if offcpu && smp.Values().Len() != len(ts) {
						t.Fatalf("off-CPU sample with %d values for %d timestamps", smp.Values().Len(), len(ts))
					}
					for i, tsv := range ts {
						if tsv < start || tsv >= end {
							t.Fatalf("timestamp %d outside [%d, %d)", tsv, start, end)
						}
						s := base
						s.TimeNs = tsv
						if offcpu {
							s.OffCPUNs = smp.Values().At(i)
							p.OffCPU = append(p.OffCPU, s)
						} else {
							p.Samples = append(p.Samples, s)
						}
					}
				}
			}
		}
		out.Processes = append(out.Processes, p)
	}
	return out
}

func (s Sample) FunctionNames() []string {
	names := make([]string, len(s.Frames))
	for i, f := range s.Frames {
		names[i] = f.Function
	}
	return names
}

func (s Sample) String() string {
	var b strings.Builder
	for i, f := range s.Frames {
		if i > 0 {
			b.WriteString(" <- ")
		}
		if f.Function != "" {
			b.WriteString(f.Function)
		} else {
			fmt.Fprintf(&b, "%s+%#x", f.Mapping, f.Address)
		}
	}
	return b.String()
}

func indexOf(names []string, want string) int {
	for i, n := range names {
		if n == want {
			return i
		}
	}
	return -1
}
