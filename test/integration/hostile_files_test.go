// Files a process maps to hurt the profiler that reads them: a FIFO where
// the maps line names a device (the open must not block), and ELF files
// that announce far more than they contain (memory must stay within the
// budget). The workloads are test/workloads/hostile/{mapspin,elfbomb}.c.
package integration

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startMapspin maps files executable (see mapspin.c) and spins for secs.
func startMapspin(t *testing.T, secs int, files ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(hostileBin(t, "mapspin"), append([]string{strconv.Itoa(secs)}, files...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line
	}()
	select {
	case l := <-ready:
		if strings.TrimSpace(l) != "ready" {
			t.Fatalf("mapspin did not get ready: %q", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("mapspin did not get ready within 10 s")
	}
	return cmd
}

// elfBombs writes the three memory bombs (sparse: 26 MB on disk in all).
func elfBombs(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	var files []string
	for _, mode := range []string{"manysyms", "overlap", "xnum"} {
		p := filepath.Join(dir, mode+".elf")
		if out, err := exec.Command(hostileBin(t, "elfbomb"), mode, p).CombinedOutput(); err != nil {
			t.Fatalf("elfbomb %s: %v\n%s", mode, err, out)
		}
		files = append(files, p)
	}
	return files
}

// A process maps /dev/zero executable and puts a FIFO at that path in its
// own mount namespace: the recording ends on time (the FIFO is never
// opened: it used to block in fifo_open forever), the refusal is counted,
// and the process's own samples still arrive.
func TestMappedFIFONeverBlocks(t *testing.T) {
	requireRoot(t)
	spin := startMapspin(t, 30, "fifo:/dev/zero")
	cpu0 := cpuSeconds(t, spin.Process.Pid)
	s := startSoak(t, "--pid", strconv.Itoa(spin.Process.Pid), "--duration", "3",
		"--poll-ms", "1000", "--frequency", "99")
	final, _ := s.finish(t, false)
	if final.num("files_refused") < 1 {
		t.Errorf("files_refused = %v, want >= 1 (the /dev/zero mapping)", final.num("files_refused"))
	}
	enoughSamples(t, final, cpuSeconds(t, spin.Process.Pid)-cpu0, 99)
}

// ELF files built to multiply what a loader allocates: 1.1M symbols
// sharing one 4000-byte name (once 4.3 GB of RSS), four .symtab sections
// over the same sparse 256 MiB (1.07 GB), 8M sections through extended
// numbering in 12 KiB on disk (2.1 GB). With the default budget (192 MiB)
// the recorder's peak RSS stays under budget + 64 MiB; the file that fits
// keeps its symbols, the hostile ones count as malformed.
func TestElfMemoryBombsStayInBudget(t *testing.T) {
	requireRoot(t)
	files := elfBombs(t)
	spin := startMapspin(t, 30, files...)
	cpu0 := cpuSeconds(t, spin.Process.Pid)
	s := startSoak(t, "--pid", strconv.Itoa(spin.Process.Pid), "--duration", "3",
		"--poll-ms", "1000", "--frequency", "99")
	final, _ := s.finish(t, false)
	const limitKB = (192 + 64) << 10
	if hwm := final.num("hwm_kb"); hwm > limitKB {
		t.Errorf("peak RSS %v kB, want <= %d kB (budget + 64 MiB)", hwm, limitKB)
	}
	if final.num("files_malformed") < 2 {
		t.Errorf("files_malformed = %v, want >= 2 (overlap, xnum)", final.num("files_malformed"))
	}
	// manysyms: 1.1M entries of 24 bytes, the name once.
	if used := final.num("budget_used_bytes"); used < 20<<20 || used > 40<<20 {
		t.Errorf("budget_used_bytes = %v, want the 1.1M symbols (~26 MB)", used)
	}
	enoughSamples(t, final, cpuSeconds(t, spin.Process.Pid)-cpu0, 99)
}

// enoughSamples: at least half of what the process's own CPU time (over
// the recording and a little after) is worth at hz.
func enoughSamples(t *testing.T, final soakLine, cpu float64, hz int) {
	t.Helper()
	if got := final.num("samples_received"); got < 0.5*cpu*float64(hz)-5 || got < 1 {
		t.Errorf("%v samples for %.2f s of the workload's CPU at %d Hz", got, cpu, hz)
	}
}

// A budget smaller than one file: that file is kept without symbols and
// counted, and memory stays under the small budget.
func TestElfSymbolsOverFileBudget(t *testing.T) {
	requireRoot(t)
	files := elfBombs(t)
	spin := startMapspin(t, 30, files[0])
	s := startSoak(t, "--pid", strconv.Itoa(spin.Process.Pid), "--duration", "2",
		"--poll-ms", "1000", "--frequency", "99", "--symbol-budget-mb", "16", "--file-budget-mb", "8")
	final, _ := s.finish(t, false)
	if final.num("files_over_budget") < 1 {
		t.Errorf("files_over_budget = %v, want >= 1", final.num("files_over_budget"))
	}
	if used := final.num("budget_used_bytes"); used > 16<<20 {
		t.Errorf("budget_used_bytes = %v, over the 16 MiB budget", used)
	}
	if hwm := final.num("hwm_kb"); hwm > (16+64)<<10 {
		t.Errorf("peak RSS %v kB, want <= %d kB", hwm, (16+64)<<10)
	}
}
