// The names of JavaScript functions V8 names in other ways than by a
// declaration (closures.js: a function expression assigned to a const, to
// a property, an arrow function, a class method, a function with no name)
// against V8's own CPU profiler: node --cpu-prof writes, as the workload
// exits, each function's name as V8 gives it ("" for none) with its
// script and start line. Every frame (or inlined Line) of those
// functions must carry V8's name ("(anonymous)" for ""), at least 20
// samples each.
package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNodeV8FunctionNames(t *testing.T) {
	requireRoot(t)
	js, _ := filepath.Abs(filepath.Join(runtimesDir, "closures.js"))
	starts := map[int64]bool{}
	for _, s := range []string{"const assigned = function", "obj.method = function", "const arrow = (n) =>",
		"\twork(n) {", "const nameless = [0].map(() => function"} {
		starts[lineOf(t, js, s)] = true
	}
	for _, n := range nodeBinaries() {
		n := n
		t.Run(n.name, func(t *testing.T) {
			requireExe(t, n.bin)
			dir := t.TempDir()
			cmd := exec.Command(n.bin, "--cpu-prof", "--cpu-prof-dir="+dir, js, "10")
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
			pid := cmd.Process.Pid
			time.Sleep(1500 * time.Millisecond)
			var from time.Time
			var cpu0 float64
			rec := recordUntil(t, func() { from = time.Now(); cpu0 = cpuSecondsOf(t, pid) }, func() {
				for time.Since(from) < 7*time.Second && cpuSecondsOf(t, pid)-cpu0 < 3 {
					time.Sleep(100 * time.Millisecond)
				}
			}, 8, 499)
			// V8's names: its profile, written as the workload exits
			select {
			case err := <-exited:
				exited <- err
				if err != nil {
					t.Fatalf("workload: %v", err)
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("workload still running")
			}
			v8names := v8ProfileNames(t, dir, js)
			for line := range starts {
				if _, ok := v8names[line]; !ok {
					t.Fatalf("V8's profile has no function of %s starting at line %d: %v", js, line, v8names)
				}
			}
			p := decodeFile(t, rec.Path).ByPID(pid)
			if p == nil {
				t.Fatalf("no samples of pid %d\n%s", pid, rec.Stderr)
			}
			count := map[int64]int{}
			var wrong []string
			for _, s := range p.Samples {
				seen := map[int64]bool{}
				for _, l := range jsLines(s) {
					if l.Filename != js || !starts[l.StartLine] {
						continue
					}
					want := v8names[l.StartLine]
					if want == "" {
						want = "(anonymous)"
					}
					if l.Name != want && len(wrong) < 5 {
						wrong = append(wrong, l.Name+" (V8: "+want+")")
					}
					if l.Name != want {
						count[-1]++
					}
					seen[l.StartLine] = true
				}
				for line := range seen {
					count[line]++
				}
			}
			t.Logf("V8's names by start line: %v; samples in each: %v", v8names, count)
			if count[-1] > 0 {
				t.Errorf("%d frames named otherwise than V8 names them: %s", count[-1], strings.Join(wrong, ", "))
			}
			for line := range starts {
				if count[line] < 20 {
					t.Errorf("%d samples in %q (line %d), want >= 20", count[line], v8names[line], line)
				}
			}
		})
	}
}

// v8ProfileNames: the function names of script js in the .cpuprofile node
// wrote to dir, by 1-based start line.
func v8ProfileNames(t *testing.T, dir, js string) map[int64]string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.cpuprofile"))
	if len(files) != 1 {
		t.Fatalf("node --cpu-prof wrote %d profiles to %s", len(files), dir)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var prof struct {
		Nodes []struct {
			CallFrame struct {
				FunctionName string `json:"functionName"`
				URL          string `json:"url"`
				LineNumber   int64  `json:"lineNumber"`
			} `json:"callFrame"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(raw, &prof); err != nil {
		t.Fatalf("%s: %v", files[0], err)
	}
	names := map[int64]string{}
	for _, n := range prof.Nodes {
		cf := n.CallFrame
		if strings.TrimPrefix(cf.URL, "file://") == js {
			names[cf.LineNumber+1] = cf.FunctionName
		}
	}
	return names
}
