// Judging a sample in inlined code by what the product controls: the
// inlined function, its file, a line of its body, and the caller with
// the line of the call. Which instruction of a hot loop the timer lands
// on (the loop's control or its arithmetic) depends on the CPU's
// pipeline, so no test may want one line of the loop.
package integration

import (
	"debug/dwarf"
	"debug/elf"
	"debug/gosym"
	"path/filepath"
	"testing"
)

// inlineTruth: what a Location in callee-inlined-into-caller must say.
type inlineTruth struct {
	callee      string
	file        string
	first, last int64            // the callee's body, both lines included
	callLine    map[string]int64 // caller -> the line of its call
}

// funcBody: the lines between "MARK:name_begin" and "MARK:name_end".
func funcBody(t *testing.T, src, name string) (int64, int64) {
	t.Helper()
	first, last := markLine(t, src, name+"_begin"), markLine(t, src, name+"_end")
	if last <= first {
		t.Fatalf("%s: MARK:%s_end (%d) not after MARK:%s_begin (%d)", src, name, last, name, first)
	}
	return first, last
}

// judge: lines (innermost first) are exactly the callee at a line of its
// body, in its file, inlined into a known caller at that caller's call.
func (w inlineTruth) judge(lines []Line) bool {
	if len(lines) != 2 {
		return false
	}
	in, caller := lines[0], lines[1]
	call, ok := w.callLine[caller.Name]
	return ok && in.Name == w.callee && in.Filename == w.file &&
		in.Line >= w.first && in.Line <= w.last && caller.Line == call
}

// The judge on every pc of the real binaries' inlined loops: the Go
// workload's pclntab and the C workload's DWARF line table give each
// instruction's line; there are loop-control and arithmetic lines among
// them, and a frame at any of them passes. Frames the product must never
// give (another function, a line outside the body, a wrong call line,
// no caller) fail.
func TestInlineJudgeOnEveryLoopPC(t *testing.T) {
	t.Run("go", func(t *testing.T) {
		src, _ := filepath.Abs("../workloads/go_callgraph/main.go")
		first, last := funcBody(t, src, "mix")
		w := inlineTruth{callee: "main.mix", file: src, first: first, last: last,
			callLine: map[string]int64{"main.leafHeavy": markLine(t, src, "heavy")}}
		bin := filepath.Join(buildDir(t), "workloads", "native", "go_callgraph_syms")
		lines := goInlinedLines(t, bin, "main.leafHeavy", src, first, last)
		judgeEveryLine(t, w, "main.leafHeavy", lines)
	})
	t.Run("c", func(t *testing.T) {
		src, _ := filepath.Abs("../workloads/inlined.c")
		first, last := funcBody(t, src, "mix")
		w := inlineTruth{callee: "mix", file: src, first: first, last: last,
			callLine: map[string]int64{"leaf_heavy": markLine(t, src, "call_heavy")}}
		bin := filepath.Join(buildDir(t), "workloads", "native", "inlined")
		lines := dwarfLinesOf(t, bin, "leaf_heavy", src, first, last)
		judgeEveryLine(t, w, "leaf_heavy", lines)
	})
}

// judgeEveryLine: lines are the distinct body lines the binary's pcs of
// the inlined loop map to; it needs the loop's control and arithmetic
// on different lines (at least two), and each passes the judge.
func judgeEveryLine(t *testing.T, w inlineTruth, caller string, lines map[int64]int) {
	t.Helper()
	if len(lines) < 2 {
		t.Fatalf("the inlined loop's pcs map to %v: want its control and its arithmetic on two lines", lines)
	}
	call := w.callLine[caller]
	for line, pcs := range lines {
		if !w.judge([]Line{{Name: w.callee, Filename: w.file, Line: line}, {Name: caller, Line: call}}) {
			t.Errorf("%d pcs at %s:%d inlined into %s: judged wrong", pcs, w.file, line, caller)
		}
	}
	t.Logf("%d lines of the inlined loop, all judged right: %v", len(lines), lines)
	bad := map[string][]Line{
		"other callee":         {{Name: "main.other", Filename: w.file, Line: w.first + 1}, {Name: caller, Line: call}},
		"line before the body": {{Name: w.callee, Filename: w.file, Line: w.first - 1}, {Name: caller, Line: call}},
		"line after the body":  {{Name: w.callee, Filename: w.file, Line: w.last + 1}, {Name: caller, Line: call}},
		"other file":           {{Name: w.callee, Filename: "/other.c", Line: w.first + 1}, {Name: caller, Line: call}},
		"wrong call line":      {{Name: w.callee, Filename: w.file, Line: w.first + 1}, {Name: caller, Line: call + 1}},
		"unknown caller":       {{Name: w.callee, Filename: w.file, Line: w.first + 1}, {Name: "main.nobody", Line: call}},
		"no caller":            {{Name: w.callee, Filename: w.file, Line: w.first + 1}},
	}
	for what, l := range bad {
		if w.judge(l) {
			t.Errorf("%s: judged right: %+v", what, l)
		}
	}
}

// goInlinedLines: the lines in [first, last] of src that fn's pcs map to
// (the pclntab gives each instruction's innermost inlined position),
// counted by pc. fn's own lines (its prologue, the call) are not the loop.
func goInlinedLines(t *testing.T, bin, fn, src string, first, last int64) map[int64]int {
	t.Helper()
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	pcln, err := ef.Section(".gopclntab").Data()
	if err != nil {
		t.Fatal(err)
	}
	text := ef.Section(".text").Addr
	table, err := gosym.NewTable(nil, gosym.NewLineTable(pcln, text))
	if err != nil {
		t.Fatal(err)
	}
	f := table.LookupFunc(fn)
	if f == nil {
		t.Fatalf("%s: no %s", bin, fn)
	}
	out := map[int64]int{}
	for pc := f.Entry; pc < f.End; pc++ {
		if file, line, _ := table.PCToLine(pc); file == src && int64(line) >= first && int64(line) <= last {
			out[int64(line)]++
		}
	}
	return out
}

// dwarfLinesOf: the lines in [first, last] of src that the DWARF line
// table gives the instructions of fn, counted by row.
func dwarfLinesOf(t *testing.T, bin, fn, src string, first, last int64) map[int64]int {
	t.Helper()
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var lo, hi uint64
	for _, s := range syms {
		if s.Name == fn {
			lo, hi = s.Value, s.Value+s.Size
		}
	}
	if hi == 0 {
		t.Fatalf("%s: no symbol %s", bin, fn)
	}
	d, err := ef.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]int{}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(e)
		if err != nil || lr == nil {
			continue
		}
		var le dwarf.LineEntry
		for lr.Next(&le) == nil {
			if le.Address >= lo && le.Address < hi && le.File != nil && le.File.Name == src &&
				int64(le.Line) >= first && int64(le.Line) <= last {
				out[int64(le.Line)]++
			}
		}
		r.SkipChildren()
	}
	return out
}
