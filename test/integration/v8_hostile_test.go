// A process that passes for V8 and lies (test/workloads/hostile/
// v8forged.c): absurd v8dbg_* constants, or a plausible layout over a
// heap of cycles, huge lengths, pointers to nowhere and words another
// thread keeps rewriting. The recorder must keep running, count the
// process (unknown, or its frames unreadable), keep its native stacks,
// and stay within its memory.
package integration

import (
	"bufio"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// recordMeasured records pid alone at hz until it has run cpu seconds
// (recordPIDForCPU) and returns the recording with the recorder's own peak
// RSS (kB) and CPU seconds.
func recordMeasured(t *testing.T, pid int, cpu float64, hz int) (recording, int64, float64) {
	t.Helper()
	rec := recordPIDForCPU(t, pid, cpu, hz)
	if rec.Usage == nil {
		t.Fatal("no resource usage of the recorder")
	}
	used := float64(rec.Usage.Utime.Nano()+rec.Usage.Stime.Nano()) / 1e9
	return rec, rec.Usage.Maxrss, used
}

var runtimeCounts = regexp.MustCompile(`(\d+) processes of a runtime \((\d+) with their own offsets, (\d+) unknown versions\), \d+ samples with runtime frames, \d+ unreadable frames, (\d+) unreadable code objects or methods`)

func TestNodeForgedV8(t *testing.T) {
	requireRoot(t)
	bin := hostileBin(t, "node_forged")
	for _, mode := range []string{"absurd", "lies"} {
		mode := mode
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(bin, mode, "90")
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			if l, _ := bufio.NewReader(out).ReadString('\n'); l != "ready\n" {
				t.Fatalf("node_forged did not start: %q", l)
			}
			pid := cmd.Process.Pid
			rec, rssKB, used := recordMeasured(t, pid, 3, 99)
			m := runtimeCounts.FindStringSubmatch(rec.Stderr)
			if m == nil {
				t.Fatalf("no runtime counts in the recorder's stats:\n%s", rec.Stderr)
			}
			found, unknown, frameErrs := m[2], m[3], m[4]
			t.Logf("recorder: peak RSS %d MiB, %.2f s CPU; V8 processes with a layout %s, unknown %s, functions unreadable %s",
				rssKB>>10, used, found, unknown, frameErrs)
			p := decodeFile(t, rec.Path).ByPID(pid)
			if p == nil {
				t.Fatalf("no samples of pid %d\n%s", pid, rec.Stderr)
			}
			var mainN, kept, v8js int
			names := map[string]int{}
			var bad []string
			for _, s := range p.Samples {
				for _, f := range s.Frames {
					if f.Type != "v8js" {
						continue
					}
					v8js++
					names[f.Function+" "+f.Lines[0].Filename+":"+strconv.FormatInt(f.Lines[0].Line, 10)]++
					for _, l := range f.Lines {
						for _, str := range []string{l.Name, l.Filename} {
							if !utf8.ValidString(str) || len(str) > 255 || strings.ContainsAny(str, "\x00\n") {
								t.Errorf("a v8js frame with a malformed name: %q", str)
							}
						}
						if l.Line < 0 || l.StartLine < 0 {
							t.Errorf("a v8js frame with a negative line: %+v", l)
						}
					}
				}
				if s.ThreadID != int64(pid) {
					continue
				}
				mainN++
				// the native stack: the work, below it the forged
				// frame's code, main at the bottom
				if hasFrame(s, nativeNamed("spin_work")) && hasFrame(s, nativeNamed("main")) {
					kept++
				} else if len(bad) < 4 {
					bad = append(bad, s.String())
				}
			}
			t.Logf("main thread: %d samples, %d with spin_work and main; %d v8js frames in the process: %v", mainN, kept, v8js, names)
			if mainN < 150 {
				t.Fatalf("only %d samples of the main thread", mainN)
			}
			if kept*100 < mainN*90 {
				t.Errorf("%d of %d main-thread samples keep the native stack (spin_work ... main), want >= 90%%; e.g.\n%s",
					kept, mainN, strings.Join(bad, "\n"))
			}
			switch mode {
			case "absurd":
				if unknown != "1" || found != "0" {
					t.Errorf("the absurd layout: %s unknown, %s with a layout; want 1, 0", unknown, found)
				}
				if v8js > 0 {
					t.Errorf("%d v8js frames from a process whose layout is unknown", v8js)
				}
			case "lies":
				if found != "1" || unknown != "0" {
					t.Errorf("the plausible layout: %s with a layout, %s unknown; want 1, 0", found, unknown)
				}
				if n, _ := strconv.Atoi(frameErrs); n == 0 {
					t.Errorf("no unreadable functions counted from a heap that lies")
				}
			}
			// the recorder's own memory: its baseline (~100 MiB with
			// node-sized tables around) and what naming may hold
			if rssKB > 256<<10 {
				t.Errorf("the recorder's peak RSS %d MiB, want <= 256 MiB", rssKB>>10)
			}
		})
	}
}
