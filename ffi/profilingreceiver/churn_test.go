// SPDX-License-Identifier: Apache-2.0

package profilingreceiver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/libotelprofiler/libotelprofiler/ffi/internal/otelprof"
)

// realBuild is the build directory with the real library and the test
// workloads (OTELPROF_BUILD, else ../../build), or skips without them.
func realBuild(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("OTELPROF_BUILD")
	if dir == "" {
		dir = filepath.Join("..", "..", "build")
	}
	dir, _ = filepath.Abs(dir)
	for _, f := range []string{"libotelprofiler.so", "workloads/many_libs", "workloads/libtiny.so", "workloads/churn"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Skipf("%s not built (make all workloads); the lead's tests cover it", f)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for BPF")
	}
	return dir
}

// startChurn runs what issue 10 measured a 43 s collector shutdown under:
// one process loading 3000 distinct small libraries, one mapping and
// unmapping an executable page ~200 times a second beside 20,000
// mappings. Both are killed at the end of the test.
func startChurn(t *testing.T, build string, libs []string) {
	t.Helper()
	w := filepath.Join(build, "workloads")
	for _, c := range []*exec.Cmd{
		exec.Command(filepath.Join(w, "many_libs"), append([]string{"30"}, libs...)...),
		exec.Command(filepath.Join(w, "churn"), "mmap", "30"),
	} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		c := c
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
}

func copyTinyLibs(t *testing.T, build string, n int) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(build, "workloads", "libtiny.so"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	libs := make([]string, n)
	for i := range libs {
		libs[i] = filepath.Join(dir, fmt.Sprintf("libtiny-%05d.so", i))
		// A trailer the loader ignores makes each copy's bytes its own
		// (identical files are kept once: the churn is of distinct ones).
		if err := os.WriteFile(libs[i], append(raw[:len(raw):len(raw)], fmt.Sprintf("copy %05d\n", i)...), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return libs
}

// Under that churn the receiver's Shutdown returns within its context's
// deadline (5 s, without error: the poll loop ended and the handle was
// closed), and otelprof_stop, called through the same bindings while the
// receiver's kind of poll loop runs, returns within 1 s. Shutdown once
// took 43 s here, longer than a DaemonSet's 30 s grace period.
func TestShutdownUnderChurn(t *testing.T) {
	build := realBuild(t)
	libs := copyTinyLibs(t, build, 3000)
	lib := filepath.Join(build, "libotelprofiler.so")

	t.Run("receiver", func(t *testing.T) {
		startChurn(t, build, libs)
		cfg := createDefaultConfig()
		cfg.LibraryPath = lib
		cfg.SamplesPerSecond = 99
		cfg.ReporterInterval = 500 * time.Millisecond
		r, sink := newTestReceiver(t, cfg, nil)
		if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second) // while the libraries load
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		t0 := time.Now()
		err := r.Shutdown(ctx)
		took := time.Since(t0)
		t.Logf("Shutdown returned after %.3f s (%v); %d payloads, %d samples delivered",
			took.Seconds(), err, len(sink.AllProfiles()), sink.SampleCount())
		if err != nil {
			t.Errorf("Shutdown: %v, want nil within the 5 s deadline", err)
		}
		if took > 5*time.Second {
			t.Errorf("Shutdown took %.3f s, want <= 5 s", took.Seconds())
		}
		if sink.SampleCount() == 0 {
			t.Errorf("no samples delivered before the shutdown")
		}
	})

	t.Run("otelprof_stop", func(t *testing.T) {
		startChurn(t, build, libs)
		l, err := otelprof.Load(lib)
		if err != nil {
			t.Fatal(err)
		}
		p, err := l.Start(otelprof.Options{FrequencyHz: 99})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		stop := make(chan struct{})
		polled := make(chan error, 1)
		go func() { // the receiver's loop: a poll every 500 ms
			tick := time.NewTicker(500 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					polled <- nil
					return
				case <-tick.C:
					if _, _, err := p.Poll(); err != nil {
						polled <- err
						return
					}
				}
			}
		}()
		time.Sleep(3 * time.Second)
		t0 := time.Now()
		err = p.Stop()
		took := time.Since(t0)
		close(stop)
		if perr := <-polled; perr != nil {
			t.Errorf("poll: %v", perr)
		}
		st, _ := p.Stats()
		t.Logf("otelprof_stop returned after %.1f ms (%v); longest drain-thread hold %.1f ms, %d samples, %d dropped at stop",
			float64(took.Microseconds())/1000, err, float64(st.DrainMaxHoldNs)/1e6, st.SamplesReceived, st.SamplesDroppedAtStop)
		if err != nil {
			t.Errorf("otelprof_stop: %v", err)
		}
		if took > time.Second {
			t.Errorf("otelprof_stop took %.3f s, want <= 1 s", took.Seconds())
		}
	})
}
