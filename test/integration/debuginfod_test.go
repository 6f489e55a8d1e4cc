// Debug files from debuginfod servers (opts.debuginfod_urls, off by
// default): a real server on loopback, and one that never answers.
package integration

import (
	"debug/elf"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// funcSyms: the function symbols of an unstripped file, by address.
type funcSym struct {
	addr, size uint64
	name       string
}

func funcSymbols(t *testing.T, path string) []funcSym {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var out []funcSym
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 && s.Size != 0 {
			out = append(out, funcSym{s.Value, s.Size, s.Name})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out
}

func symbolAt(syms []funcSym, addr uint64) string {
	i := sort.Search(len(syms), func(i int) bool { return syms[i].addr > addr }) - 1
	if i >= 0 && addr < syms[i].addr+syms[i].size {
		return syms[i].name
	}
	return ""
}

// freeLoopbackPort: a port nothing listens on now.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// startDebuginfod serves the ELF/DWARF files under dir (debuginfod -F) on
// a loopback port until the test ends; returns its URL once it serves
// buildID.
func startDebuginfod(t *testing.T, dir, buildID string) string {
	t.Helper()
	bin, err := exec.LookPath("debuginfod")
	if err != nil {
		t.Fatalf("debuginfod not found (make deps installs it): %v", err)
	}
	tmp := t.TempDir()
	for try := 0; try < 3; try++ {
		port := freeLoopbackPort(t)
		url := fmt.Sprintf("http://127.0.0.1:%d", port)
		cmd := exec.Command(bin, "-F", "-p", strconv.Itoa(port), "-d", filepath.Join(tmp, fmt.Sprintf("db%d.sqlite", try)), dir)
		logf, err := os.Create(filepath.Join(tmp, fmt.Sprintf("log%d", try)))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
			logf.Close()
		})
		// Ready when its first scan has indexed the file.
		client := &http.Client{Timeout: 2 * time.Second}
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			select {
			case <-exited:
				deadline = time.Time{}
				continue
			default:
			}
			resp, err := client.Get(url + "/buildid/" + buildID + "/debuginfo")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return url
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		raw, _ := os.ReadFile(logf.Name())
		t.Logf("debuginfod on port %d not ready (try %d):\n%s", port, try, raw)
		_ = cmd.Process.Kill()
	}
	t.Fatalf("debuginfod never served %s", buildID)
	return ""
}

var debuginfodStats = regexp.MustCompile(`debuginfod: (\d+) build ids asked, (\d+) debug files taken, (\d+) failed, (\d+) refused`)

// A stripped binary (no .symtab, no debuglink, no MiniDebugInfo) whose
// debug file only a loopback debuginfod server has: with the option on,
// >= 95% of its frames carry the name its unstripped build gives that
// address; with it off (the default), the same binary stays unnamed.
func TestDebuginfodNamesStrippedBinary(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(buildDir(t), "workloads", "native", "debuginfod")
	bin := filepath.Join(dir, "callgraph_dbgd")
	truth := funcSymbols(t, bin+".full")
	if len(truth) < 5 {
		t.Fatalf("%s.full: %d function symbols", bin, len(truth))
	}
	id := gnuBuildID(t, bin)
	if full := gnuBuildID(t, bin+".full"); full != id {
		t.Fatalf("build ids differ: %s vs %s", id, full)
	}
	url := startDebuginfod(t, filepath.Join(dir, "store"), id)

	judge := func(what string, extra ...string) (frames, named, right int, rec recording) {
		cmd := nativeWorkload(t, "debuginfod/callgraph_dbgd", "10")
		time.Sleep(300 * time.Millisecond)
		rec = record(t, 4, 199, append([]string{"--pid", itoa(cmd.Process.Pid)}, extra...)...)
		p := processOf(decodeFile(t, rec.Path), cmd.Process.Pid, "callgraph_dbgd")
		if p == nil {
			t.Fatalf("%s: no samples\n%s", what, rec.Stderr)
		}
		// The lookup runs after the first sample of the file: judge
		// the samples after it had a second.
		p = steadySamples(p, time.Second)
		var bad []string
		for _, s := range p.Samples {
			for i, f := range s.Frames {
				if f.Mapping != bin {
					continue
				}
				frames++
				want := symbolAt(truth, f.Address)
				if i > 0 && want != symbolAt(truth, f.Address-1) {
					// A return address: the call is before it.
					want = symbolAt(truth, f.Address-1)
				}
				if f.Function != "" {
					named++
				}
				if want != "" && f.Function == want {
					right++
				} else if len(bad) < 5 {
					bad = append(bad, fmt.Sprintf("%#x: %q, want %q", f.Address, f.Function, want))
				}
			}
		}
		t.Logf("%s: %d samples, %d frames of the binary, %d named, %d named right", what, len(p.Samples), frames, named, right)
		for _, b := range bad {
			t.Logf("%s: %s", what, b)
		}
		return
	}

	frames, _, right, rec := judge("debuginfod on", "--debuginfod="+url)
	if frames < 200 || float64(right) < 0.95*float64(frames) {
		t.Errorf("debuginfod on: %d of %d frames named right, want >= 95%%", right, frames)
	}
	m := debuginfodStats.FindStringSubmatch(rec.Stderr)
	if m == nil {
		t.Errorf("no debuginfod stats line:\n%s", rec.Stderr)
	} else if m[2] == "0" {
		t.Errorf("no debug file taken: %s", m[0])
	} else {
		t.Logf("%s", m[0])
	}

	frames, named, _, rec := judge("debuginfod off")
	if frames < 200 || float64(named) > 0.05*float64(frames) {
		t.Errorf("debuginfod off: %d of %d frames named, want none (the file has no symbols of its own)", named, frames)
	}
	if m := debuginfodStats.FindStringSubmatch(rec.Stderr); m != nil {
		t.Errorf("debuginfod off, yet: %s", m[0])
	}
}

// A server that accepts connections and never answers: the recording
// goes on, ends on time, and stop does not wait for the lookup (well
// under a second; the lookup's own deadline is 15 s).
func TestDebuginfodHungServerDoesNotStall(t *testing.T) {
	requireRoot(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, c) // held open, never read or answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})

	const seconds = 3
	cmd := nativeWorkload(t, "debuginfod/callgraph_dbgd", "10")
	time.Sleep(300 * time.Millisecond)
	var started time.Time
	rec := recordWith(t, func() { started = time.Now() }, seconds, 199,
		"--pid", itoa(cmd.Process.Pid), "--debuginfod=http://"+l.Addr().String())
	extra := time.Since(started) - seconds*time.Second
	t.Logf("recording ended %v after its %d s; %d connections to the hung server", extra, seconds, accepted.Load())
	if started.IsZero() {
		t.Fatalf("no recording line\n%s", rec.Stderr)
	}
	if extra > time.Second {
		t.Errorf("stop took %v after the recording's end, want < 1 s", extra)
	}
	if accepted.Load() == 0 {
		t.Errorf("the hung server was never asked (the test shows nothing)")
	}
	m := debuginfodStats.FindStringSubmatch(rec.Stderr)
	if m == nil || m[1] == "0" || m[2] != "0" {
		t.Errorf("want one lookup asked, none taken: %q\n%s", m, rec.Stderr)
	}
	// Sampling went on while the lookup hung: the last second has the
	// workload's samples.
	p := processOf(decodeFile(t, rec.Path), cmd.Process.Pid, "callgraph_dbgd")
	if p == nil {
		t.Fatalf("no samples\n%s", rec.Stderr)
	}
	last := steadySamples(p, time.Duration(seconds-1)*time.Second)
	t.Logf("%d samples, %d in the last second", len(p.Samples), len(last.Samples))
	if len(last.Samples) < 50 {
		t.Errorf("%d samples in the last second of %d (199 Hz, a busy process): sampling stalled", len(last.Samples), seconds)
	}
}
