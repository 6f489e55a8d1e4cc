package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// checkConformance applies the OTLP profiles rules that the profiling SIG's
// conformance checker (profcheck) enforces, written here because the module
// proxy refuses that module (403): at least one ResourceProfiles, each with a
// scope and a profile; every dictionary table starts with its zero value;
// string_table[0] == "" and no duplicate strings; every index in range;
// timestamps within [time, time+duration); attribute keys unique per owner.
// Stricter than profcheck: no string and no attribute that nothing refers to.
// It reads the raw tables through pdata's decoder (pprofile), which keeps
// them as they are on the wire.
func checkConformance(d pprofile.Profiles) error {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf(f, a...)) }
	dict := d.Dictionary()
	st, at := dict.StringTable(), dict.AttributeTable()
	ns, na := st.Len(), at.Len()
	strRef := make([]bool, ns)
	attrRef := make([]bool, na)
	str := func(where string, i int32) {
		if i < 0 || int(i) >= ns {
			bad("%s: string index %d out of [0,%d)", where, i, ns)
			return
		}
		strRef[i] = true
	}
	inRange := func(where string, i int32, n int) {
		if i < 0 || int(i) >= n {
			bad("%s: index %d out of [0,%d)", where, i, n)
		}
	}
	attrs := func(where string, idx pcommon.Int32Slice) {
		keys := map[string]bool{}
		for _, a := range idx.AsRaw() {
			if a <= 0 || int(a) >= na {
				bad("%s: attribute index %d out of [1,%d)", where, a, na)
				continue
			}
			attrRef[a] = true
			k := at.At(int(a)).KeyStrindex()
			str(where, k)
			if k >= 0 && int(k) < ns {
				if keys[st.At(int(k))] {
					bad("%s: duplicate key %q", where, st.At(int(k)))
				}
				keys[st.At(int(k))] = true
			}
		}
	}
	if ns == 0 || st.At(0) != "" {
		bad("string_table[0] must be \"\"")
	}
	seen := map[string]int{}
	for i, s := range st.AsRaw() {
		if j, ok := seen[s]; ok {
			bad("string_table[%d] %q duplicates [%d]", i, s, j)
		}
		seen[s] = i
	}
	mt, lt, ft, kt, stk := dict.MappingTable(), dict.LocationTable(), dict.FunctionTable(), dict.LinkTable(), dict.StackTable()
	if mt.Len() == 0 || lt.Len() == 0 || ft.Len() == 0 || kt.Len() == 0 || na == 0 || stk.Len() == 0 {
		bad("a dictionary table is empty: mappings %d locations %d functions %d links %d attributes %d stacks %d",
			mt.Len(), lt.Len(), ft.Len(), kt.Len(), na, stk.Len())
		return errors.Join(errs...)
	}
	if m := mt.At(0); m.MemoryStart() != 0 || m.MemoryLimit() != 0 || m.FileOffset() != 0 || m.FilenameStrindex() != 0 || m.AttributeIndices().Len() != 0 {
		bad("mapping_table[0] is not the zero value")
	}
	if l := lt.At(0); l.MappingIndex() != 0 || l.Address() != 0 || l.Lines().Len() != 0 || l.AttributeIndices().Len() != 0 {
		bad("location_table[0] is not the zero value")
	}
	if f := ft.At(0); f.NameStrindex() != 0 || f.SystemNameStrindex() != 0 || f.FilenameStrindex() != 0 || f.StartLine() != 0 {
		bad("function_table[0] is not the zero value")
	}
	if k := kt.At(0); !k.TraceID().IsEmpty() || !k.SpanID().IsEmpty() {
		bad("link_table[0] is not the zero value")
	}
	if a := at.At(0); a.KeyStrindex() != 0 || a.UnitStrindex() != 0 || a.Value().Type() != pcommon.ValueTypeEmpty {
		bad("attribute_table[0] is not the zero value")
	}
	if stk.At(0).LocationIndices().Len() != 0 {
		bad("stack_table[0] is not the zero value")
	}
	for i := 0; i < mt.Len(); i++ {
		m := mt.At(i)
		str(fmt.Sprintf("mapping[%d].filename", i), m.FilenameStrindex())
		attrs(fmt.Sprintf("mapping[%d]", i), m.AttributeIndices())
		if !(m.MemoryStart() == 0 && m.MemoryLimit() == 0) && m.MemoryStart() >= m.MemoryLimit() {
			bad("mapping[%d]: start %#x >= limit %#x", i, m.MemoryStart(), m.MemoryLimit())
		}
	}
	for i := 0; i < lt.Len(); i++ {
		l := lt.At(i)
		inRange(fmt.Sprintf("location[%d].mapping_index", i), l.MappingIndex(), mt.Len())
		attrs(fmt.Sprintf("location[%d]", i), l.AttributeIndices())
		for j := 0; j < l.Lines().Len(); j++ {
			inRange(fmt.Sprintf("location[%d].line.function_index", i), l.Lines().At(j).FunctionIndex(), ft.Len())
		}
	}
	for i := 0; i < ft.Len(); i++ {
		f := ft.At(i)
		str(fmt.Sprintf("function[%d].name", i), f.NameStrindex())
		str(fmt.Sprintf("function[%d].system_name", i), f.SystemNameStrindex())
		str(fmt.Sprintf("function[%d].filename", i), f.FilenameStrindex())
	}
	for i := 1; i < kt.Len(); i++ {
		if kt.At(i).TraceID().IsEmpty() || kt.At(i).SpanID().IsEmpty() {
			bad("link[%d] has an empty trace or span id", i)
		}
	}
	for i := 0; i < na; i++ {
		inRange(fmt.Sprintf("attribute[%d].key", i), at.At(i).KeyStrindex(), ns)
		inRange(fmt.Sprintf("attribute[%d].unit", i), at.At(i).UnitStrindex(), ns)
	}
	for i := 0; i < stk.Len(); i++ {
		for _, l := range stk.At(i).LocationIndices().AsRaw() {
			inRange(fmt.Sprintf("stack[%d]", i), l, lt.Len())
		}
	}
	rps := d.ResourceProfiles()
	if rps.Len() == 0 {
		bad("no ResourceProfiles")
	}
	for r := 0; r < rps.Len(); r++ {
		sps := rps.At(r).ScopeProfiles()
		if sps.Len() == 0 {
			bad("resource_profiles[%d] has no scope profiles", r)
		}
		for s := 0; s < sps.Len(); s++ {
			ps := sps.At(s).Profiles()
			if ps.Len() == 0 {
				bad("resource_profiles[%d] has a scope without profiles", r)
			}
			for k := 0; k < ps.Len(); k++ {
				p := ps.At(k)
				str("sample_type", p.SampleType().TypeStrindex())
				str("sample_type", p.SampleType().UnitStrindex())
				str("period_type", p.PeriodType().TypeStrindex())
				str("period_type", p.PeriodType().UnitStrindex())
				attrs("profile", p.AttributeIndices())
				t0 := uint64(p.Time())
				end := t0 + p.DurationNano()
				for i := 0; i < p.Samples().Len(); i++ {
					sm := p.Samples().At(i)
					inRange(fmt.Sprintf("sample[%d].stack_index", i), sm.StackIndex(), stk.Len())
					inRange(fmt.Sprintf("sample[%d].link_index", i), sm.LinkIndex(), kt.Len())
					attrs(fmt.Sprintf("sample[%d]", i), sm.AttributeIndices())
					if sm.Values().Len() == 0 && sm.TimestampsUnixNano().Len() == 0 {
						bad("sample[%d] has neither values nor timestamps", i)
					}
					for _, ts := range sm.TimestampsUnixNano().AsRaw() {
						if ts < t0 || ts >= end {
							bad("sample[%d]: timestamp %d outside [%d,%d)", i, ts, t0, end)
						}
					}
				}
			}
		}
	}
	for i := 1; i < ns; i++ {
		if !strRef[i] {
			bad("string_table[%d] %q is referenced by nothing", i, st.At(i))
		}
	}
	for i := 1; i < na; i++ {
		if !attrRef[i] {
			bad("attribute_table[%d] is referenced by nothing", i)
		}
	}
	if len(errs) > 10 {
		errs = append(errs[:10], fmt.Errorf("... and %d more", len(errs)-10))
	}
	return errors.Join(errs...)
}

func readProfilesData(t *testing.T, path string) pprofile.Profiles {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var u pprofile.ProtoUnmarshaler
	d, err := u.UnmarshalProfiles(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return d
}

// A whole-host recording with threads and native and kernel frames is
// conformant and carries no unreferenced dictionary entries.
func TestRecordingConformance(t *testing.T) {
	requireRoot(t)
	startWorkload(t, "threads_fp", "30")
	startWorkload(t, "syscalls_fp", "30")
	time.Sleep(200 * time.Millisecond)
	rec := record(t, 2, 99)
	d := readProfilesData(t, rec.Path)
	if err := checkConformance(d); err != nil {
		t.Fatalf("%s is not conformant:\n%v", rec.Path, err)
	}
	samples := d.SampleCount()
	t.Logf("%d resources, %d samples, %d strings, %d attributes", d.ResourceProfiles().Len(),
		samples, d.Dictionary().StringTable().Len(), d.Dictionary().AttributeTable().Len())
	if samples == 0 {
		t.Fatalf("no samples in a whole-host recording\n%s", rec.Stderr)
	}
}

// A recording that saw nothing (one sleeping process) is one profile of
// the host without samples, not a message without resources.
func TestEmptyRecordingIsConformant(t *testing.T) {
	requireRoot(t)
	sl := exec.Command("sleep", "60")
	if err := sl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sl.Process.Kill(); _, _ = sl.Process.Wait() })
	rec := record(t, 1, 99, "--pid", strconv.Itoa(sl.Process.Pid))
	d := readProfilesData(t, rec.Path)
	if err := checkConformance(d); err != nil {
		t.Fatalf("empty recording is not conformant:\n%v", err)
	}
	if d.ResourceProfiles().Len() != 1 {
		t.Fatalf("%d ResourceProfiles, want 1 (the host)", d.ResourceProfiles().Len())
	}
	rp := d.ResourceProfiles().At(0)
	p := rp.ScopeProfiles().At(0).Profiles().At(0)
	if n := p.Samples().Len(); n != 0 {
		t.Errorf("%d samples of a sleeping process", n)
	}
	host, _ := rp.Resource().Attributes().Get("host.name")
	if host.Str() == "" {
		t.Errorf("empty recording's resource has no host.name: %v", rp.Resource().Attributes().AsRaw())
	}
	if p.DurationNano() < 5e8 {
		t.Errorf("profile covers %d ns of a 1 s recording", p.DurationNano())
	}
}
