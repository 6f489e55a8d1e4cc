// CPU hotplug: a CPU offline when the profiler starts, or taken offline and
// brought back while it runs (quickly enough that only the kernel's uevent
// tells), is sampled again within a second of coming online. Toggles
// /sys/devices/system/cpu/cpu1/online (root; the CPU is always brought
// back).
package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"
)

const hotplugCPU = 1

func setCPUOnline(t *testing.T, on bool) uint64 {
	t.Helper()
	v := "0"
	if on {
		v = "1"
	}
	p := "/sys/devices/system/cpu/cpu" + strconv.Itoa(hotplugCPU) + "/online"
	if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
		t.Fatalf("cannot set %s to %s: %v", p, v, err)
	}
	return uint64(time.Now().UnixNano())
}

func TestCPUHotplug(t *testing.T) {
	requireRoot(t)
	if _, err := os.Stat("/sys/devices/system/cpu/cpu1/online"); err != nil {
		t.Fatalf("this test needs a second, hot-pluggable CPU: %v", err)
	}
	t.Cleanup(func() { setCPUOnline(t, true) })
	setCPUOnline(t, false)
	polls := t.TempDir()
	s := startSoak(t, "--frequency", "99", "--poll-ms", "500", "--duration", "7", "--out-dir", polls)
	if l := s.next(t, 30*time.Second); l.event() != "started" {
		t.Fatalf("abi_soak: first line %v", l)
	}
	// In steady state: the first poll has drained the start-up burst.
	if l := s.next(t, 30*time.Second); l.event() != "poll" {
		t.Fatalf("abi_soak: second line %v", l)
	}
	// Offline at start, online now: a spinner pinned to it keeps it busy.
	t1 := setCPUOnline(t, true)
	spin := exec.Command("taskset", "-c", strconv.Itoa(hotplugCPU), hostileBin(t, "mapspin"), "6")
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = spin.Process.Kill(); _, _ = spin.Process.Wait() })
	time.Sleep(2500 * time.Millisecond)
	// A flap shorter than the profiler's look at the online mask.
	setCPUOnline(t, false)
	time.Sleep(150 * time.Millisecond)
	t2 := setCPUOnline(t, true)
	if out, err := exec.Command("taskset", "-p", "-c", strconv.Itoa(hotplugCPU), strconv.Itoa(spin.Process.Pid)).CombinedOutput(); err != nil {
		t.Fatalf("re-pin: %v\n%s", err, out)
	}
	final, _ := s.finish(t, false)

	files, _ := filepath.Glob(filepath.Join(polls, "poll-*.otlp"))
	var onCPU []uint64
	for _, f := range files {
		for _, p := range decodeFile(t, f).Processes {
			for _, smp := range p.Samples {
				if smp.CPU == hotplugCPU {
					onCPU = append(onCPU, smp.TimeNs)
				}
			}
		}
	}
	sort.Slice(onCPU, func(i, j int) bool { return onCPU[i] < onCPU[j] })
	first := func(after uint64) (uint64, bool) {
		for _, ts := range onCPU {
			if ts >= after {
				return ts, true
			}
		}
		return 0, false
	}
	for _, c := range []struct {
		what string
		at   uint64
	}{{"offline at start, then online", t1}, {"offline and back within 150 ms", t2}} {
		ts, ok := first(c.at)
		if !ok {
			t.Errorf("%s: cpu %d never sampled afterwards (%d samples on it in all)", c.what, hotplugCPU, len(onCPU))
			continue
		}
		delay := time.Duration(ts - c.at)
		t.Logf("%s: first sample on cpu %d %v later", c.what, hotplugCPU, delay)
		if delay > time.Second {
			t.Errorf("%s: first sample on cpu %d only %v later, want within 1 s", c.what, hotplugCPU, delay)
		}
	}
	if final.num("cpus_onlined") < 2 {
		t.Errorf("cpus_onlined = %v, want >= 2", final.num("cpus_onlined"))
	}
}
