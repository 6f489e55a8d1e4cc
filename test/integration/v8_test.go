// Node.js without flags: the kernel walks V8's frames (interpreted,
// baseline, optimized, builtin, stub, entry and exit) by the frame
// pointer and V8's frame markers, with the layout from the binary's own
// v8dbg_* symbols, and userspace names each JavaScript function from
// V8's heap: name, script and line. hot.js spends about 70/30 of its CPU
// in hot_a/hot_b and measures that itself (process.cpuUsage): the truth.
package integration

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The Node.js binaries judged: the system's (Node 20) and the newest of
// each major from the npm registry (make node-releases, cached under
// RUNTIME_CACHE). Each must exist: a missing one fails, never skips.
func nodeBinaries() []struct{ name, bin string } {
	cache := os.Getenv("OTELPROF_RUNTIME_CACHE")
	if cache == "" {
		cache = "/var/cache/otelprof-test"
	}
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	out := []struct{ name, bin string }{{"20-system", nodeBin}}
	for _, major := range []string{"18", "20", "22", "24", "26"} {
		out = append(out, struct{ name, bin string }{major,
			filepath.Join(cache, "node", major, "node_modules", "node-linux-"+arch, "bin", "node")})
	}
	return out
}

func TestNodeV8Frames(t *testing.T) {
	requireRoot(t)
	js, _ := filepath.Abs(filepath.Join(runtimesDir, "hot.js"))
	lineA := lineOf(t, js, "function hot_a")
	lineB := lineOf(t, js, "function hot_b")
	// each function's body: its lines up to the next one's
	bodies := map[string][2]int64{"hot_a": {lineA, lineB - 1},
		"hot_b": {lineB, lineOf(t, js, "const cpu") - 1}}
	for _, n := range nodeBinaries() {
		n := n
		t.Run(n.name, func(t *testing.T) {
			requireExe(t, n.bin)
			w := startRuntime(t, nil, n.bin, js, "60")
			p, truth := recordRuntime(t, w, 4.5)
			pid := int64(w.cmd.Process.Pid)
			// The process is found at its first sample; the binary's
			// symbols and layout are read then, and the walk program
			// loads: until the process is in the kernel (later on a
			// loaded machine, where file reads wait their turn) its
			// stacks are native only. Judged: the main thread's samples
			// from the first with JS frames on (the delay logged: the
			// recorder's CPU time, seconds of wall time on a loaded
			// host), at least 500 of them (judgeHot).
			isV8 := func(s Sample) bool {
				return hasFrame(s, func(f Frame) bool { return f.Type == "v8js" })
			}
			main, first := mainThreadFromFirstJS(t, p, pid)
			isJS := func(name string) func(Sample) bool {
				return func(s Sample) bool {
					return hasFrame(s, func(f Frame) bool { return f.Type == "v8js" && f.Function == name })
				}
			}
			judgeHot(t, &main, truth, 95, isV8, isJS("hot_a"), isJS("hot_b"))
			leaves := map[string]int{}
			for _, s := range main.Samples {
				for _, f := range s.Frames {
					if f.Type == "v8js" {
						leaves[f.Function]++
						break
					}
				}
			}
			t.Logf("innermost JS functions: %v", leaves)
			// While the node binary's unwind table is still being built
			// (over a second for its ~2M rows on a loaded machine) the
			// native walk stops at its first C++ frame below the
			// JavaScript ones: reaching node::Start is judged from the
			// first stack that does (its delay logged).
			reaches := func(s Sample) bool {
				return hasFrame(s, func(f Frame) bool { return strings.HasPrefix(f.Function, "node::Start(") })
			}
			firstStart := uint64(math.MaxUint64)
			for _, s := range main.Samples {
				if reaches(s) {
					firstStart = min(firstStart, s.TimeNs)
				}
			}
			if firstStart == math.MaxUint64 {
				var eg []string
				for i := 0; i < len(main.Samples) && i < 3; i++ {
					eg = append(eg, main.Samples[len(main.Samples)/2+i/2].String())
				}
				t.Fatalf("no stack reaches node::Start; e.g.\n%s", strings.Join(eg, "\n"))
			}
			t.Logf("first stack reaching node::Start %.2f s after the first sample", float64(firstStart-first)/1e9)
			var js0, unlined, noStart, unnamed int
			// hot_a's and hot_b's frames: with a line inside their body
			// (the line at the frame's pc), and without one (unknown)
			var inBody, hotFrames int
			var outside []string
			var noStartAt []float64
			var bad []string
			for _, s := range main.Samples {
				isJSSample := false
				for _, f := range s.Frames {
					if f.Type != "v8js" {
						continue
					}
					isJSSample = true
					l := f.Lines[0]
					if body, ok := bodies[l.Name]; ok {
						hotFrames++
						if l.Line >= body[0] && l.Line <= body[1] {
							inBody++
						} else if len(outside) < 3 {
							outside = append(outside, fmt.Sprintf("%+v", l))
						}
					}
					// the line at the pc may be unknown (0), never
					// outside the file; the function's start always known
					if l.StartLine <= 0 || l.Line < 0 {
						unlined++
						if len(bad) < 3 {
							bad = append(bad, fmt.Sprintf("%+v in %s", l, s.String()))
						}
					}
					want := map[string]int64{"hot_a": lineA, "hot_b": lineB}[l.Name]
					if want != 0 && (l.Filename != js || l.StartLine != want) {
						t.Fatalf("%s frame %+v, want file %s, start line %d", l.Name, l, js, want)
					}
				}
				if !isJSSample || s.TimeNs < firstStart {
					continue
				}
				js0++
				if !reaches(s) && unnamedBottom(s, n.bin) {
					// walked to the bottom, but the binary's symbols
					// are out (its symbol table is over the file
					// budget: node 26's 164k symbols on a busy host)
					unnamed++
					continue
				}
				if !reaches(s) {
					noStartAt = append(noStartAt, float64(s.TimeNs-firstStart)/1e9)
					noStart++
					if len(bad) < 6 {
						bad = append(bad, s.String())
					}
				}
			}
			t.Logf("%d main-thread samples with JS frames: %d JS frames without a line, %d stacks not reaching node::Start, %d ending in unnamed frames of node",
				js0, unlined, noStart, unnamed)
			if unnamed*5 > js0 {
				t.Errorf("%d of %d stacks end in unnamed frames of node", unnamed, js0)
			}
			if unlined > 0 {
				t.Errorf("%d JavaScript frames without a start line; e.g.\n%s", unlined, strings.Join(bad, "\n"))
			}
			t.Logf("hot_a/hot_b frames with the line at their pc inside their body: %d of %d; e.g. outside: %s",
				inBody, hotFrames, strings.Join(outside, ", "))
			if hotFrames == 0 || inBody*100 < hotFrames*95 {
				t.Errorf("%d of %d hot_a/hot_b frames have a line inside their body, want >= 95%%", inBody, hotFrames)
			}
			// a stack cut at the frame limit or a failed read may stop
			// short: at most 2%. (While node's big unwind table is
			// being built its frames go by frame pointer:
			// OTELPROF_RT_F_PENDING_FP.)
			if len(noStartAt) > 6 {
				noStartAt = append(noStartAt[:3], noStartAt[len(noStartAt)-3:]...)
			}
			t.Logf("stacks not reaching node::Start at (s after the first that did): %.2f", noStartAt)
			if noStart*50 > js0 {
				t.Errorf("%d of %d stacks with JS frames do not reach node::Start; e.g.\n%s",
					noStart, js0, strings.Join(bad, "\n"))
			}
			t.Run("interpreted", func(t *testing.T) { judgeInterpretedLine(t, n.bin) })
			t.Run("baseline", func(t *testing.T) { judgeBaselineLines(t, n.name, n.bin, js, bodies) })
			// the same call from baseline code (--always-sparkplug
			// compiles every function so before it first runs): the
			// frame's return address through the Code's offset table
			t.Run("baseline-call", func(t *testing.T) { judgeInterpretedLine(t, n.bin, "--always-sparkplug") })
		})
	}
}

// mainThreadFromFirstJS: pid's main-thread samples from its first with
// v8js frames on (before it the process's walk program is loading; the
// delay logged), and the time of its first sample. None with JS frames
// fails.
func mainThreadFromFirstJS(t *testing.T, p *Process, pid int64) (Process, uint64) {
	t.Helper()
	first, firstJS := uint64(math.MaxUint64), uint64(math.MaxUint64)
	for _, s := range p.Samples {
		if s.ThreadID != pid {
			continue
		}
		first = min(first, s.TimeNs)
		if hasFrame(s, func(f Frame) bool { return f.Type == "v8js" }) {
			firstJS = min(firstJS, s.TimeNs)
		}
	}
	if firstJS == math.MaxUint64 {
		t.Fatalf("no JS frames")
	}
	t.Logf("first JS frames %.2f s after the first sample", float64(firstJS-first)/1e9)
	main := *p
	main.Samples = nil
	for _, s := range p.Samples {
		if s.ThreadID == pid && s.TimeNs >= firstJS {
			main.Samples = append(main.Samples, s)
		}
	}
	return main, first
}

// judgeInterpretedLine: interp.js's interpreted() runs in Ignition for its
// whole activation (called once, no loop: see the workload) while it calls
// spin() at one line. Its frames, never the innermost (spin's is), must
// carry that line (the bytecode offset Ignition saved in the frame for the
// call, through the BytecodeArray's source position table) in >= 90% of
// them; the statements before and after it are calls on other lines, and
// the function's start line is another.
func judgeInterpretedLine(t *testing.T, bin string, flags ...string) {
	js, _ := filepath.Abs(filepath.Join(runtimesDir, "interp.js"))
	start := lineOf(t, js, "function interpreted")
	want := lineOf(t, js, "\tconst s = spin(seconds);")
	w := startRuntime(t, nil, bin, append(flags, js, "60")...)
	p, _ := recordRuntime(t, w, 3)
	pid := int64(w.cmd.Process.Pid)
	var main, frames, right int
	lines := map[int64]int{}
	for _, s := range p.Samples {
		if s.ThreadID != pid {
			continue
		}
		main++
		for _, f := range s.Frames {
			if f.Type != "v8js" || f.Function != "interpreted" {
				continue
			}
			l := f.Lines[0]
			if l.Filename != js || l.StartLine != start {
				t.Fatalf("interpreted frame %+v, want file %s, start line %d", l, js, start)
			}
			frames++
			lines[l.Line]++
			if l.Line == want {
				right++
			}
		}
	}
	t.Logf("%d main-thread samples, %d with an interpreted() frame: %d at its call's line %d (lines: %v)",
		main, frames, right, want, lines)
	if frames < 200 || right*10 < frames*9 {
		t.Errorf("%d of %d interpreted() frames at line %d, want >= 90%% of at least 200", right, frames, want)
	}
}

// judgeBaselineLines: hot.js with its functions kept in baseline
// (Sparkplug) code (--no-opt, and --no-maglev where there is Maglev: Node
// 20 on). A baseline frame's line comes from its Code's offset table
// walked with its bytecodes (each one's size from the binary's table):
// every hot_a/hot_b frame with a line must have it inside the function's
// body, and >= 90% of them must have one (without the walk none has;
// where the innermost pc is in a builtin without a frame of its own, the
// kernel takes the baseline code's pc from the return address the call
// left, found in the top two words of the stack or aarch64's link
// register: the rest, where it is not there, are at line 0).
func judgeBaselineLines(t *testing.T, name, bin, js string, bodies map[string][2]int64) {
	args := []string{"--no-opt", "--no-maglev", js, "60"}
	if name == "18" {
		args = args[1:] // V8 10: no Maglev, no flag
		args[0] = "--no-opt"
	}
	w := startRuntime(t, nil, bin, args...)
	p, _ := recordRuntime(t, w, 3)
	pid := int64(w.cmd.Process.Pid)
	var frames, lined, inBody int
	lines := map[string]int{}
	for _, s := range p.Samples {
		if s.ThreadID != pid {
			continue
		}
		for _, f := range s.Frames {
			if f.Type != "v8js" {
				continue
			}
			l := f.Lines[0]
			body, ok := bodies[l.Name]
			if !ok || l.Filename != js {
				continue
			}
			frames++
			lines[fmt.Sprintf("%s:%d", l.Name, l.Line)]++
			if l.Line == 0 {
				continue
			}
			lined++
			if l.Line >= body[0] && l.Line <= body[1] {
				inBody++
			}
		}
	}
	t.Logf("%d hot_a/hot_b frames in baseline code: %d with a line, %d of those inside the body (lines: %v)",
		frames, lined, inBody, lines)
	if frames < 200 || lined*10 < frames*9 {
		t.Errorf("%d of %d hot_a/hot_b frames with a line, want >= 90%% of at least 200", lined, frames)
	}
	if inBody != lined {
		t.Errorf("%d of %d hot_a/hot_b lines outside the function's body", lined-inBody, lined)
	}
}

// unnamedBottom: s's outermost frame is an unnamed address in bin (its
// symbols not loaded), after at least 8 native frames below the last JS
// one, as a walk that reached node::Start has.
func unnamedBottom(s Sample, bin string) bool {
	last := -1
	for i, f := range s.Frames {
		if f.Type == "v8js" {
			last = i
		}
	}
	n := len(s.Frames)
	return last >= 0 && n-last > 8 && strings.HasPrefix(s.Frames[n-1].Function, bin+"+0x")
}
