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
	"sync"
	"syscall"
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
	// The recorder's own usage (peak RSS, CPU), where recordUntil ran it.
	Usage *syscall.Rusage
}

// record runs `otelprof record` for the given seconds and frequency.
func record(t *testing.T, seconds, hz int, extra ...string) recording {
	t.Helper()
	return recordWith(t, nil, seconds, hz, extra...)
}

// recordCPU records (whole host) and returns the CPU seconds pid ran while
// sampling was on: from otelprof's "recording" line to `seconds` later,
// not to when the file is written (the final drain and encode, seconds
// under ASan on a loaded host, sample nothing).
func recordCPU(t *testing.T, pid, seconds, hz int, extra ...string) (float64, recording) {
	t.Helper()
	cpu, rec := recordCPUs(t, []int{pid}, seconds, hz, extra...)
	return cpu[pid], rec
}

// recordCPUs is recordCPU for several processes.
func recordCPUs(t *testing.T, pids []int, seconds, hz int, extra ...string) (map[int]float64, recording) {
	t.Helper()
	var mu sync.Mutex
	cpu0, cpu1 := map[int]float64{}, map[int]float64{}
	ended := false
	snap := func(into map[int]float64) {
		for _, pid := range pids {
			c := cpuSecondsOf(t, pid)
			mu.Lock()
			into[pid] = c
			mu.Unlock()
		}
	}
	rec := recordWith(t, func() {
		snap(cpu0)
		time.AfterFunc(time.Duration(seconds)*time.Second, func() {
			snap(cpu1)
			mu.Lock()
			ended = true
			mu.Unlock()
		})
	}, seconds, hz, extra...)
	after := map[int]float64{}
	snap(after)
	mu.Lock()
	defer mu.Unlock()
	out := map[int]float64{}
	for _, pid := range pids {
		end := after[pid]
		if ended {
			end = cpu1[pid]
		}
		out[pid] = end - cpu0[pid]
		t.Logf("pid %d: %.2f s of CPU while sampling, %.2f s more until the file was written", pid, out[pid], after[pid]-end)
	}
	return out, rec
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
