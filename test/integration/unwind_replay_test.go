// The shared native walk (ebpf/unwind_walk.h) replayed over stacks
// captured from running workloads (build/tools/unwind_replay): each
// capture stops a thread with ptrace, copies its registers, stack and
// executable mappings, and records gdb's backtrace of the same stopped
// thread as the truth; the replay builds the product's unwind tables for
// the mapped files, walks the copy and must give gdb's frames, pc for pc,
// down to the outermost frame.
package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func unwindReplayTool(t *testing.T) string {
	t.Helper()
	tool := filepath.Join(buildDir(t), "tools", "unwind_replay")
	if _, err := os.Stat(tool); err != nil {
		t.Fatalf("unwind_replay not built (make tools): %v", err)
	}
	if _, err := exec.LookPath("gdb"); err != nil {
		t.Fatalf("gdb is the truth for these captures; install it (make deps): %v", err)
	}
	return tool
}

// captureReplay captures tid of pid with gdb's frames and replays it
// against them; returns the replay's output.
func captureReplay(t *testing.T, tool string, pid, tid int) (string, error) {
	t.Helper()
	capFile := filepath.Join(t.TempDir(), "stack.cap")
	out, err := exec.Command(tool, "capture", "--gdb", "--tid", itoa(tid), "-o", capFile, itoa(pid)).CombinedOutput()
	if err != nil {
		t.Fatalf("capture %d/%d: %v\n%s", pid, tid, err, out)
	}
	rep, err := exec.Command(tool, "replay", "--expect", capFile).CombinedOutput()
	return string(rep), err
}

func TestUnwindReplayMatchesGdb(t *testing.T) {
	requireRoot(t)
	tool := unwindReplayTool(t)
	cases := []struct {
		name string
		args []string
		seen string // in at least one replay (a path worth judging)
	}{
		{"callgraph_nofp", []string{"60"}, ""},
		{"deep_recursion", []string{"60", "100"}, ""},
		{"threads_nofp", []string{"60"}, ""},
		{"native/callgraph_lld", []string{"60"}, ""},
		{"native/callgraph_mold", []string{"60"}, ""},
		{"native/rust_callgraph", []string{"60"}, ""},
		{"native/cxx_templates", []string{"60"}, ""},
		{"noreturn_call", []string{"60"}, ""},
		// Through a signal frame, mostly from the vDSO (its image is in
		// the capture: it has no file).
		{"signal_spin", []string{"60"}, "[vdso]"},
	}
	// At least minRounds; a case that names a path worth judging goes on
	// until a capture took it (a stop lands where the thread happens to
	// be: the vDSO is most of signal_spin's time, not all of it).
	const minRounds, maxRounds = 4, 40
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, "/", "_"), func(t *testing.T) {
			wl := startWorkload(t, c.name, c.args...)
			pid := wl.Process.Pid
			time.Sleep(300 * time.Millisecond) // past the loader
			replays, seen := 0, c.seen == ""
			for r := 0; r < maxRounds && (r < minRounds || !seen); r++ {
				tasks, err := os.ReadDir("/proc/" + itoa(pid) + "/task")
				if err != nil {
					t.Fatal(err)
				}
				for _, task := range tasks {
					tid, err := strconv.Atoi(task.Name())
					if err != nil {
						t.Fatal(err)
					}
					out, err := captureReplay(t, tool, pid, tid)
					if err != nil {
						t.Fatalf("round %d, tid %d: the walk differs from gdb: %v\n%s", r, tid, err, out)
					}
					// Both sides whole: gdb's chain (the expected
					// frames) and the walk reached the outermost frame.
					if !strings.Contains(out, "complete (reached the outermost frame)") {
						t.Fatalf("round %d, tid %d: walk not complete\n%s", r, tid, out)
					}
					replays++
					seen = seen || strings.Contains(out, c.seen)
					if r == 0 && tid == pid {
						t.Logf("%s", out)
					}
				}
				time.Sleep(70 * time.Millisecond)
			}
			if !seen {
				t.Fatalf("no replay went through %q", c.seen)
			}
			t.Logf("%s: %d captures replayed, each equal to gdb's frames", c.name, replays)
		})
	}
}

// A replay refuses a file that is not the captured one, and a broken
// capture file, with a message and a non-zero exit.
func TestUnwindReplayRefuses(t *testing.T) {
	requireRoot(t)
	tool := unwindReplayTool(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "callgraph_copy")
	data, err := os.ReadFile(filepath.Join(buildDir(t), "workloads", "callgraph_nofp"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	wl := exec.Command(bin, "30")
	if err := wl.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = wl.Process.Kill(); _, _ = wl.Process.Wait() }()
	time.Sleep(200 * time.Millisecond)
	capFile := filepath.Join(dir, "stack.cap")
	if out, err := exec.Command(tool, "capture", "-o", capFile, itoa(wl.Process.Pid)).CombinedOutput(); err != nil {
		t.Fatalf("capture: %v\n%s", err, out)
	}
	if out, err := exec.Command(tool, "replay", capFile).CombinedOutput(); err != nil {
		t.Fatalf("replay of the unchanged file: %v\n%s", err, out)
	}
	// A file of the same path, changed (rebuilt, upgraded): refused.
	_ = wl.Process.Kill()
	_, _ = wl.Process.Wait()
	if err := os.WriteFile(bin, append(data, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "replay", capFile).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not the captured file") {
		t.Fatalf("replay against a changed file: want a refusal, got %v\n%s", err, out)
	}
	// No expected frames recorded: --expect has nothing to judge by.
	out, err = exec.Command(tool, "replay", "--expect", capFile).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no expected frames") {
		t.Fatalf("--expect without frames: want an error, got %v\n%s", err, out)
	}
	// Truncated captures: a message naming what is missing and where.
	raw, err := os.ReadFile(capFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []struct {
		n    int
		want string
	}{
		{40, "truncated at byte 40: rbp needs 8 bytes, 0 left"},
		{len(raw) - 1, "truncated at byte"},
	} {
		if err := os.WriteFile(capFile, raw[:cut.n], 0o644); err != nil {
			t.Fatal(err)
		}
		out, err = exec.Command(tool, "replay", capFile).CombinedOutput()
		if err == nil || !strings.Contains(string(out), cut.want) {
			t.Fatalf("capture cut to %d bytes: want %q, got %v\n%s", cut.n, cut.want, err, out)
		}
	}
}
