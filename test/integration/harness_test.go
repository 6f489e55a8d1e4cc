// Running the built binaries: workloads, `otelprof record`, `otelprof top`.
package integration

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func buildDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("OTELPROF_BUILD")
	if dir == "" {
		dir = "../../build"
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(abs, "otelprof")); err != nil {
		t.Fatalf("otelprof not built in %s (run `make` first): %v", abs, err)
	}
	return abs
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("BPF integration tests must run as root (they load BPF programs); run `sudo make test`")
	}
}

// startWorkload runs build/workloads/NAME with args and returns its cmd.
func startWorkload(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(filepath.Join(buildDir(t), "workloads", name), args...)
	cmd.Stdout = nil
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	return cmd
}

type recording struct {
	Path   string
	Stderr string
}

// record runs `otelprof record` for the given seconds and frequency.
func record(t *testing.T, seconds, hz int, extra ...string) recording {
	t.Helper()
	return recordWith(t, nil, seconds, hz, extra...)
}

// recordWith calls onStart once sampling has started (otelprof prints its
// "recording" line after the BPF programs are attached).
func recordWith(t *testing.T, onStart func(), seconds, hz int, extra ...string) recording {
	t.Helper()
	out := filepath.Join(t.TempDir(), "profile.otlp")
	args := append([]string{"record", "--duration", strconv.Itoa(seconds),
		"--frequency", strconv.Itoa(hz), "--output", out}, extra...)
	cmd := exec.Command(filepath.Join(buildDir(t), "otelprof"), args...)
	var stderr bytes.Buffer
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	copied := make(chan struct{})
	go func() {
		r := bufio.NewReader(pipe)
		first := true
		for {
			line, err := r.ReadString('\n')
			stderr.WriteString(line)
			if first && onStart != nil && bytes.Contains([]byte(line), []byte("recording")) {
				onStart()
				first = false
			}
			if err != nil {
				_, _ = io.Copy(&stderr, r)
				break
			}
		}
		close(copied)
	}()
	go func() { <-copied; done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("otelprof record failed: %v\n%s", err, stderr.String())
		}
	case <-time.After(time.Duration(seconds+30) * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("otelprof record hung\n%s", stderr.String())
	}
	return recording{Path: out, Stderr: stderr.String()}
}
