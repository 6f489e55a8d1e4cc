// SPDX-License-Identifier: Apache-2.0

package profilingreceiver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
)

// The target with the real library (root, build/libotelprofiler.so,
// as TestRealLibraryIfBuilt): a rule on samples.native.count{shlib_name=libz}
// ramps 19 -> 99 Hz when a zlib workload starts, the payloads then carry
// 99 Hz profiles, and the rate is back at 19 Hz after the workload stops.
func TestAdaptiveRealLibrary(t *testing.T) {
	lib := filepath.Join("..", "..", "build", "libotelprofiler.so")
	if _, err := os.Stat(lib); err != nil {
		t.Skip("build/libotelprofiler.so not built; the lead's tests cover it")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for BPF")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 (with its zlib module on libz.so) is needed for the zlib workload: %v", err)
	}
	abs, _ := filepath.Abs(lib)
	cfg := createDefaultConfig()
	cfg.LibraryPath = abs
	cfg.ReporterInterval = 500 * time.Millisecond
	cfg.ReporterJitter = 0
	cfg.MaxSamplesPerSecond = 200
	cfg.Adaptive = AdaptiveConfig{CPUBudget: 4, Rules: []AdaptiveRule{{
		Name: "zlib", Metric: metricNativeCount, ShlibName: "libz", GroupBy: "process",
		Threshold: 0.3, SamplesPerSecond: 99, Duration: 2 * time.Second,
	}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	r, sink := newTestReceiver(t, cfg, nil)
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Shutdown(context.Background()) }()
	rc, _ := Controller(r.(*profilingReceiver).set.ID)
	time.Sleep(1500 * time.Millisecond)
	if got := rc.SamplesPerSecond(); got != 19 {
		t.Fatalf("ramped before the zlib workload: %d Hz", got)
	}
	w := exec.Command(py, "-c", "import os, zlib\nd = os.urandom(1 << 16)\nwhile True:\n    zlib.compress(d, 9)\n")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Process.Kill(); _, _ = w.Process.Wait() }()
	t0 := time.Now()
	deadline := time.Now().Add(10 * time.Second)
	for rc.SamplesPerSecond() != 99 {
		if time.Now().After(deadline) {
			t.Fatalf("no ramp within 10 s of the zlib workload's start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("ramped to 99 Hz %s after the zlib workload started", time.Since(t0).Round(time.Millisecond))
	time.Sleep(1500 * time.Millisecond)
	_ = w.Process.Kill()
	_, _ = w.Process.Wait()
	t1 := time.Now()
	deadline = time.Now().Add(10 * time.Second)
	for rc.SamplesPerSecond() != 19 {
		if time.Now().After(deadline) {
			t.Fatalf("still at %d Hz 10 s after the zlib workload stopped", rc.SamplesPerSecond())
		}
		time.Sleep(20 * time.Millisecond)
	}
	back := time.Since(t1)
	// The ramp lasts the rule's duration from the last poll that saw the
	// workload over its threshold, which may be a poll interval or more
	// (on a loaded host) before the kill.
	sinceOver := time.Since(time.Unix(0, r.(*profilingReceiver).adaptive.lastOver.Load()))
	t.Logf("back to 19 Hz %s after the zlib workload stopped, %s after the rule last fired (rule duration 2s)",
		back.Round(time.Millisecond), sinceOver.Round(time.Millisecond))
	if sinceOver < 2*time.Second {
		t.Errorf("back to baseline %s after the rule last fired, before the rule's 2 s", sinceOver)
	}
	// The ramp's samples came with their rate.
	var p99 bool
	for _, pd := range sink.AllProfiles() {
		for i := 0; i < pd.ResourceProfiles().Len(); i++ {
			sps := pd.ResourceProfiles().At(i).ScopeProfiles()
			for j := 0; j < sps.Len(); j++ {
				for k := 0; k < sps.At(j).Profiles().Len(); k++ {
					if sps.At(j).Profiles().At(k).Period() == 1_000_000_000/99 {
						p99 = true
					}
				}
			}
		}
	}
	if !p99 {
		t.Error("no profile with the 99 Hz period during the ramp")
	}
}
