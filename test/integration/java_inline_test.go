// Java methods the JIT inlined: Inline's work() inlines step() and
// mix(), and mix calls leaf(), too big to inline. A sample in leaf has
// below it work's compiled frame, one Location whose Lines are the
// inlined chain from the compiled method's debug info, innermost first:
// mix at its call of leaf, step at its call of mix, work at its call of
// step (the lines from the source file). No JVM flags.
package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestJavaInlined(t *testing.T) {
	requireRoot(t)
	src, _ := filepath.Abs("../workloads/java/Inline.java")
	want := []struct {
		name string
		line int64
	}{
		{"Inline.mix", lineOf(t, src, "        return leaf(x) + 1;")},
		{"Inline.step", lineOf(t, src, "        return mix(x + i) ^ i;")},
		{"Inline.work", lineOf(t, src, "            x = step(x, i);")},
	}
	calls := map[string]struct {
		callee string
		line   int64
	}{
		"Inline.step":          {"Inline.mix", want[1].line},
		"Inline.work":          {"Inline.step", want[2].line},
		"Inline.lambda$main$0": {"Inline.work", lineOf(t, src, "                x = work(x);")},
	}
	classes := filepath.Join(buildDir(t), "workloads", "java")
	for _, j := range jdks {
		j := j
		t.Run(j.name, func(t *testing.T) {
			requireExe(t, j.java)
			cmd := exec.Command(j.java, "-cp", classes, "Inline", "60")
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
			pid := cmd.Process.Pid
			tid := threadsNamed(t, pid, "inline")["inline"]
			// C1 then C2 compile work (with step and mix inlined)
			// within its first second of CPU
			time.Sleep(1500 * time.Millisecond)
			// ~3 s of its CPU: ~1500 samples
			rec, _, _ := recordJavaThreads(t, pid, []int64{tid}, 3, 30, 499)
			d := decodeFile(t, rec.Path)
			p := d.ByPID(pid)
			if p == nil {
				t.Fatalf("no samples of pid %d\n%s", pid, rec.Stderr)
			}
			var first uint64
			for _, s := range p.Samples {
				for _, f := range s.Frames {
					if f.Type == "jvm" && (first == 0 || s.TimeNs < first) {
						first = s.TimeNs
					}
				}
			}
			if first == 0 {
				t.Fatalf("no Java frames")
			}
			// judged from 1 s after the first Java frame (the
			// process's symbols are built by then)
			var inLeaf, chained, other int
			var bad []string
			for _, s := range p.Samples {
				if s.ThreadID != tid || s.TimeNs < first+1e9 {
					continue
				}
				for i, f := range s.Frames {
					if f.Type != "jvm" {
						continue
					}
					// every inlined Location names the right
					// chain: never a wrong method or line
					if len(f.Lines) > 1 && strings.HasPrefix(f.Lines[0].Name, "Inline.") && !edgesRight(f, calls) {
						t.Fatalf("inlined frame %s: not a call chain of Inline.java", lines(f))
					}
					if f.Function != "Inline.leaf" || i+1 >= len(s.Frames) {
						continue
					}
					inLeaf++
					if c := s.Frames[i+1]; c.Type == "jvm" && chainIs(c, want) {
						chained++
					} else {
						other++
						if len(bad) < 3 {
							bad = append(bad, s.String())
						}
					}
					break
				}
			}
			t.Logf("%d samples in leaf (from 1 s after the first Java frame): %d with the inlined chain mix -> step -> work below (%.1f%%), %d without",
				inLeaf, chained, 100*float64(chained)/float64(max(inLeaf, 1)), other)
			if inLeaf < 500 {
				t.Fatalf("only %d samples in Inline.leaf", inLeaf)
			}
			if float64(chained) < 0.95*float64(inLeaf) {
				t.Errorf("%d of %d leaf samples have the inlined chain below, want >= 95%%; e.g.\n%s",
					chained, inLeaf, strings.Join(bad, "\n"))
			}
		})
	}
}

// chainIs: f's Lines start with want (names, file and lines); below
// them only the thread's lambda, which may inline work in turn.
func chainIs(f Frame, want []struct {
	name string
	line int64
}) bool {
	if len(f.Lines) < len(want) {
		return false
	}
	for k, l := range f.Lines {
		if l.Filename != "Inline.java" {
			return false
		}
		if k >= len(want) {
			if l.Name != "Inline.lambda$main$0" || k != len(want) {
				return false
			}
		} else if l.Name != want[k].name || l.Line != want[k].line {
			return false
		}
	}
	return true
}

// edgesRight: every Line after the first is the caller of the one
// before it, at the line of its call (callee -> caller's call line).
func edgesRight(f Frame, calls map[string]struct {
	callee string
	line   int64
}) bool {
	for k := 1; k < len(f.Lines); k++ {
		c, ok := calls[f.Lines[k].Name]
		if !ok || c.callee != f.Lines[k-1].Name || c.line != f.Lines[k].Line ||
			f.Lines[k].Filename != "Inline.java" {
			return false
		}
	}
	return true
}

func lines(f Frame) string {
	var b strings.Builder
	for _, l := range f.Lines {
		fmt.Fprintf(&b, "[%s %s:%d] ", l.Name, l.Filename, l.Line)
	}
	return b.String()
}
