// `otelprof record --output` in a directory other users can write to:
// planted symlinks, a path that cannot be written, a full disk, SIGHUP.
package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runRecord runs `otelprof record` with args and returns its exit code
// and stderr; onLine sees every stderr line as it comes.
func runRecord(t *testing.T, onLine func(cmd *exec.Cmd, line string), args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(buildDir(t), "otelprof"), append([]string{"record"}, args...)...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	lines := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		var line []byte
		for {
			n, err := pipe.Read(buf)
			for _, c := range buf[:n] {
				stderr.WriteByte(c)
				line = append(line, c)
				if c == '\n' {
					if onLine != nil {
						onLine(cmd, string(line))
					}
					line = line[:0]
				}
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() { <-lines; done <- cmd.Wait() }()
	select {
	case err := <-done:
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("otelprof record: %v", err)
		}
		return code, stderr.String()
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("otelprof record hung\n%s", stderr.String())
	}
	return -1, ""
}

func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".otelprof-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

// Another user plants a symlink at the output path pointing at a file
// only root may write: the file is untouched, the symlink is replaced by
// the profile, which is private (0600: it holds whole-host data).
func TestRecordOutputReplacesPlantedSymlink(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("root only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "profile.otlp")
	if err := os.Symlink(victim, out); err != nil {
		t.Fatal(err)
	}
	// A busy process of our own: an idle host gives no samples in 1 s.
	startWorkload(t, "callgraph_fp", "10")
	code, stderr := runRecord(t, nil, "--duration", "1", "--frequency", "99", "--output", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(victim); string(b) != "root only\n" {
		t.Errorf("the symlink's target was written (%d bytes)", len(b))
	}
	st, err := os.Lstat(out)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
		t.Errorf("output is %v, want a regular file 0600", st.Mode())
	}
	if d := decodeFile(t, out); d.TotalSamples() == 0 {
		t.Error("no samples in the output")
	}
	noTempFiles(t, dir)
}

// A path that cannot be written fails before recording starts.
func TestRecordOutputBadPathFailsAtOnce(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	for _, out := range []string{filepath.Join(dir, "missing", "p.otlp"), dir + "/"} {
		code, stderr := runRecord(t, nil, "--duration", "600", "--output", out)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1\n%s", out, code, stderr)
		}
		if strings.Contains(stderr, "recording") {
			t.Errorf("%s: started recording before failing:\n%s", out, stderr)
		}
		if !strings.Contains(stderr, out) {
			t.Errorf("%s: message does not name the path:\n%s", out, stderr)
		}
	}
}

// A full disk: an error, no (truncated) file at the target, no temporary
// file left; a file already at the target keeps its content.
func TestRecordOutputFullDisk(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8k"); err != nil {
		t.Fatalf("mount a small tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	old := filepath.Join(dir, "old.otlp")
	if err := os.WriteFile(old, []byte("previous"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A busy workload makes the profile far larger than the 8 KiB disk
	// whatever else the host runs (an idle host gives a few hundred bytes).
	busy := startWorkload(t, "callgraph_nofp", "10")
	pid := itoa(busy.Process.Pid)
	for _, out := range []string{filepath.Join(dir, "new.otlp"), old} {
		code, stderr := runRecord(t, nil, "--duration", "2", "--frequency", "499", "--pid", pid, "--output", out)
		if code != 1 || !strings.Contains(stderr, "No space left") {
			t.Errorf("%s: exit %d, want 1 with ENOSPC\n%s", out, code, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new.otlp")); !os.IsNotExist(err) {
		t.Errorf("a file was left at the target: %v", err)
	}
	if b, _ := os.ReadFile(old); string(b) != "previous" {
		t.Errorf("the existing file was changed (%d bytes)", len(b))
	}
	noTempFiles(t, dir)
}

// SIGHUP (the terminal went away) stops the recording like SIGTERM: the
// file is written.
func TestRecordSIGHUPWritesFile(t *testing.T) {
	requireRoot(t)
	out := filepath.Join(t.TempDir(), "p.otlp")
	startWorkload(t, "callgraph_fp", "10")
	code, stderr := runRecord(t, func(cmd *exec.Cmd, line string) {
		if strings.Contains(line, "recording") {
			time.Sleep(time.Second)
			_ = cmd.Process.Signal(syscall.SIGHUP)
		}
	}, "--duration", "600", "--frequency", "99", "--output", out)
	if code != 0 {
		t.Fatalf("exit %d after SIGHUP\n%s", code, stderr)
	}
	if d := decodeFile(t, out); d.TotalSamples() == 0 {
		t.Error("no samples in the output")
	}
}
