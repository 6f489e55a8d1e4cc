// The BPF programs: each runtime's walk is its own program, verified on
// its own and loaded only where that runtime runs; every program stays
// within 60% of its kernel's verifier limit (the figures the CLI prints
// with OTELPROF_DEBUG_BPF_LOG=stats, one line per loaded program:
// "bpf: NAME: processed N insns (limit L) ... (object loaded in T ms)").
package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

var progStatRe = regexp.MustCompile(`(?m)^bpf: (\w+): processed (\d+) insns \(limit (\d+)\)`)

// progInsns: program -> {processed, limit}, from a CLI log.
func progInsns(log string) map[string][2]int {
	out := map[string][2]int{}
	for _, m := range progStatRe.FindAllStringSubmatch(log, -1) {
		n, _ := strconv.Atoi(m[2])
		l, _ := strconv.Atoi(m[3])
		out[m[1]] = [2]int{n, l}
	}
	return out
}

// The programs a sampler with every runtime loaded and off-CPU on
// (offCPUFlag) has: the native sample (one program with bpf_loop, two
// without), its finish, the task events, each runtime's walk and the
// off-CPU switch program (with its chained walk without bpf_loop) in the
// matching variant.
// runtimeWalks: every runtime's walk program, by its bpf_loop name (the
// bounded variant adds "_bounded").
var runtimeWalks = []string{"cpython_walk", "hotspot_walk", "perl_walk", "php_walk", "ruby_walk", "v8_walk"}

func wantPrograms(bpfLoop bool) []string {
	if bpfLoop {
		return append([]string{"on_cpu_sample", "on_cpu_sample_finish", "on_exec", "on_fork", "on_exit", "off_cpu_switch"},
			runtimeWalks...)
	}
	want := []string{"on_cpu_sample_chained", "on_cpu_sample_walk", "on_cpu_sample_finish", "on_exec", "on_fork", "on_exit",
		"off_cpu_switch_chained", "off_cpu_walk"}
	for _, w := range runtimeWalks {
		want = append(want, w+"_bounded")
	}
	return want
}

// offCPUFlag loads the off-CPU programs for wantPrograms at a threshold
// low enough not to load the host (test/kernels/guest.sh passes the same).
var offCPUFlag = []string{"--off-cpu-threshold", "0.01"}

// judgeProgramBudget: every wanted program was verified, within 60% of
// the limit; returns the summary ("max 9% hotspot_walk_bounded").
func judgeProgramBudget(t *testing.T, log string, want []string) string {
	t.Helper()
	got := progInsns(log)
	worst, worstName := 0.0, ""
	var names []string
	for name := range got {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := got[name]
		share := float64(v[0]) / float64(v[1])
		t.Logf("%-24s %7d of %d verifier instructions (%.1f%%)", name, v[0], v[1], 100*share)
		if share > worst {
			worst, worstName = share, name
		}
		if share > 0.6 {
			t.Errorf("%s: %d of %d instructions: above 60%% of the verifier's limit", name, v[0], v[1])
		}
	}
	for _, name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("program %s not loaded (or no verifier figures); log:\n%s", name, log)
		}
	}
	return fmt.Sprintf("insns max %.0f%% %s", 100*worst, worstName)
}

// On this kernel, every program with every runtime loaded (forced), with
// and without bpf_loop.
func TestBPFProgramsWithinBudget(t *testing.T) {
	requireRoot(t)
	for _, fallback := range []string{"", "bpf_loop"} {
		args := append([]string{"record", "--duration", "2", "--frequency", "19", "--output", t.TempDir() + "/p.otlp"}, offCPUFlag...)
		cmd := exec.Command(filepath.Join(buildDir(t), "otelprof"), args...)
		cmd.Env = append(os.Environ(), "OTELPROF_LOAD_RUNTIMES=all", "OTELPROF_DEBUG_BPF_LOG=stats")
		if fallback != "" {
			cmd.Env = append(cmd.Env, "OTELPROF_KERNEL_FALLBACK="+fallback)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("record (fallback %q): %v\n%s", fallback, err, out)
		}
		t.Logf("fallback %q: %s", fallback, judgeProgramBudget(t, string(out), wantPrograms(fallback == "")))
	}
}

// A runtime's program is verified only where that runtime runs: a
// recording of a C program loads none; one of a process of a runtime
// loads that runtime's walk and no other.
func TestRuntimeProgramsLoadedOnDemand(t *testing.T) {
	requireRoot(t)
	requireExe(t, python312)
	requireExe(t, jdks[0].java)
	requireExe(t, "/usr/bin/perl")
	requireExe(t, nodeBin)
	py, _ := filepath.Abs(filepath.Join(runtimesDir, "hot.py"))
	js, _ := filepath.Abs(filepath.Join(runtimesDir, "hot.js"))
	pl, _ := filepath.Abs(filepath.Join(runtimesDir, "hot.pl"))
	classes := filepath.Join(buildDir(t), "workloads", "java")
	java := func() *exec.Cmd {
		cmd := exec.Command(jdks[0].java, "-cp", classes, "FibHash", "20")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
		return cmd
	}
	cases := []struct {
		name  string
		start func() *exec.Cmd
		want  string // its runtime's walk ("": none); every other is refused
	}{
		{"native", func() *exec.Cmd { return startWorkload(t, "callgraph_nofp", "20") }, ""},
		{"cpython", func() *exec.Cmd { return startRuntime(t, nil, python312, py, "20").cmd }, "cpython_walk"},
		{"jvm", java, "hotspot_walk"},
		{"perl", func() *exec.Cmd { return startRuntime(t, nil, "/usr/bin/perl", pl, "20").cmd }, "perl_walk"},
		{"php", func() *exec.Cmd { return startRuntime(t, nil, php82, phpScript(t), "20").cmd }, "php_walk"},
		{"ruby", func() *exec.Cmd { w, _ := startRuby(t, "", nil, "20"); return w.cmd }, "ruby_walk"},
		{"node", func() *exec.Cmd { return startRuntime(t, nil, nodeBin, js, "20").cmd }, "v8_walk"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := c.start()
			// the JVM maps libjvm and fills its tables in its first
			// second
			time.Sleep(1500 * time.Millisecond)
			cmd := exec.Command(filepath.Join(buildDir(t), "otelprof"), "record", "--duration", "3", "--frequency", "99", "--pid", itoa(w.Process.Pid),
				"--output", t.TempDir()+"/p.otlp")
			cmd.Env = append(os.Environ(), "OTELPROF_DEBUG_BPF_LOG=stats")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("record: %v\n%s", err, out)
			}
			got := progInsns(string(out))
			if _, ok := got["on_cpu_sample"]; !ok {
				t.Fatalf("no figures for on_cpu_sample: %s", out)
			}
			for _, p := range runtimeWalks {
				_, ok := got[p]
				if p == c.want && !ok {
					t.Errorf("%s not loaded for a %s process:\n%s", p, c.name, out)
				}
				if p != c.want && ok {
					t.Errorf("%s loaded, but no process of its runtime was recorded:\n%s", p, strings.TrimSpace(string(out)))
				}
			}
		})
	}
}
