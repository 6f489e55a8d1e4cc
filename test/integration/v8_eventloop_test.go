// Node.js from its event loop and its threads, without flags: callbacks
// of timers, promises and an HTTP server on loopback are reached through
// libuv's loop (uv_run, uv__run_timers, uv__io_poll, ...) and named as
// the JavaScript functions they are; worker_threads name each thread's
// own function. The workloads (test/workloads/runtimes/async.js,
// http.js, worker.js) measure their own CPU time in each callback, or
// spin in one function per thread: the truth the samples are judged by.
package integration

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// frameAt is the index of the first frame matching, -1 if none.
func frameAt(s Sample, match func(Frame) bool) int {
	for i, f := range s.Frames {
		if match(f) {
			return i
		}
	}
	return -1
}

func jsNamed(name string) func(Frame) bool {
	return func(f Frame) bool { return f.Type == "v8js" && f.Function == name }
}

func nativeNamed(names ...string) func(Frame) bool {
	return func(f Frame) bool {
		if f.Type != "native" {
			return false
		}
		for _, n := range names {
			if f.Function == n || strings.HasPrefix(f.Function, n+"(") {
				return true
			}
		}
		return false
	}
}

// threadFromFirstJS: tid's samples from its first with a JS frame on,
// which must come within the first quarter of its samples (the process
// is found and its walk program loaded at its first sample; on a loaded
// host that takes a while of wall time, judged here in its own CPU).
func threadFromFirstJS(t *testing.T, p *Process, tid int64) []Sample {
	t.Helper()
	var all []Sample
	for _, s := range p.Samples {
		if s.ThreadID == tid {
			all = append(all, s)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].TimeNs < all[j].TimeNs })
	for i, s := range all {
		if hasFrame(s, func(f Frame) bool { return f.Type == "v8js" }) {
			t.Logf("thread %d: first JS frames at its sample %d of %d, %.2f s after its first",
				tid, i, len(all), float64(s.TimeNs-all[0].TimeNs)/1e9)
			if i*4 > len(all) {
				t.Fatalf("thread %d: no JS frames in the first quarter of its %d samples", tid, len(all))
			}
			return all[i:]
		}
	}
	t.Fatalf("thread %d: no JS frames in its %d samples", tid, len(all))
	return nil
}

// judgeLoopCallbacks judges the main thread of a Node process whose
// callbacks nameA and nameB ran truthA:100-truthA of their CPU time (the
// workload's own measure): their shares within 3 points, and each
// sample in one of them reaching it through libuv: below its JS frame
// one of via[name] (the libuv function that runs that kind of
// callback), below that uv_run, and node::Start at the bottom. Stacks
// are judged from the first that reaches node::Start (node's big unwind
// table may still be in the making before), which must come in the
// first quarter of the samples.
func judgeLoopCallbacks(t *testing.T, p *Process, pid int64, truthA float64, nameA, nameB string, via map[string][]string) {
	t.Helper()
	main := *p
	main.Samples = threadFromFirstJS(t, p, pid)
	isJS := func(s Sample) bool {
		return hasFrame(s, func(f Frame) bool { return f.Type == "v8js" })
	}
	inA := func(s Sample) bool { return hasFrame(s, jsNamed(nameA)) }
	inB := func(s Sample) bool { return hasFrame(s, jsNamed(nameB)) }
	// JS frames on the main thread: the callbacks, node's own JS around
	// them; the rest is native work of the loop (polling, the HTTP
	// parser, writes) with no JS below.
	judgeHot(t, &main, truthA, 50, isJS, inA, inB)
	start := nativeNamed("node::Start")
	first, firstAt := uint64(math.MaxUint64), 0
	for i, s := range main.Samples {
		if hasFrame(s, start) {
			first, firstAt = s.TimeNs, i
			break
		}
	}
	if first == math.MaxUint64 || firstAt*4 > len(main.Samples) {
		t.Fatalf("no stack reaches node::Start in the first quarter of the main thread's samples")
	}
	inners := map[string]int{}
	for _, name := range []string{nameA, nameB} {
		var n, ok int
		var bad []string
		for _, s := range main.Samples {
			js := frameAt(s, jsNamed(name))
			if js < 0 || s.TimeNs < first {
				continue
			}
			n++
			// the innermost JS frame: the callback itself, or what
			// it calls (Math.sqrt is a builtin, shown native)
			if in := frameAt(s, func(f Frame) bool { return f.Type == "v8js" }); in >= 0 {
				inners[s.Frames[in].Function]++
			}
			below := s.Frames[js:]
			loop := frameAt(Sample{Frames: below}, nativeNamed(via[name]...))
			run := frameAt(Sample{Frames: below}, nativeNamed("uv_run"))
			if loop >= 0 && run > loop && hasFrame(Sample{Frames: below}, start) {
				ok++
			} else if len(bad) < 4 {
				bad = append(bad, s.String())
			}
		}
		t.Logf("%s: %d of %d samples reach it through %v, uv_run and node::Start", name, ok, n, via[name])
		if n < 100 {
			t.Errorf("%s: only %d samples; innermost JS frames of all the main thread's samples: %v; e.g.\n%s",
				name, n, innermostJS(main.Samples), strings.Join(sampleStrings(main.Samples, isJS, 4), "\n"))
			continue
		}
		if ok*100 < n*95 {
			t.Errorf("%s: %d of %d samples reach it through %v, uv_run and node::Start, want >= 95%%; e.g.\n%s",
				name, ok, n, via[name], strings.Join(bad, "\n"))
		}
	}
	t.Logf("innermost JS frames of those samples: %v", inners)
}

// innermostJS counts samples by the name of their innermost v8js frame.
func innermostJS(samples []Sample) map[string]int {
	m := map[string]int{}
	for _, s := range samples {
		if in := frameAt(s, func(f Frame) bool { return f.Type == "v8js" }); in >= 0 {
			m[s.Frames[in].Function]++
		}
	}
	return m
}

// sampleStrings is up to max samples that match, printed.
func sampleStrings(samples []Sample, match func(Sample) bool, max int) []string {
	var out []string
	for _, s := range samples {
		if len(out) < max && match(s) {
			out = append(out, s.String())
		}
	}
	return out
}

// recordMainThread is recordRuntime judged on the main thread's own CPU
// time (schedstat), not the process's: node's helper threads (GC,
// concurrent compilation) take a share of it that differs between
// versions.
// Records at 499 Hz until the main thread has run cpuSeconds (at most
// 60 s) and returns the process and the workload's hot_a share.
func recordMainThread(t *testing.T, w *runtimeWorkload, cpuSeconds float64) (*Process, float64) {
	t.Helper()
	const hz, maxSeconds = 499, 60
	time.Sleep(1500 * time.Millisecond)
	pid := w.cmd.Process.Pid
	mainCPU := func() float64 { return threadCPU(pid)[int64(pid)] }
	var from, to time.Time
	var cpu0, got float64
	// --pid: on a loaded host a whole-host recorder at 499 Hz is itself
	// a load that starves the workload it judges
	rec := recordUntil(t, func() { from = time.Now(); cpu0 = mainCPU() }, func() {
		for time.Since(from) < (maxSeconds-2)*time.Second && mainCPU()-cpu0 < cpuSeconds {
			time.Sleep(100 * time.Millisecond)
		}
		to, got = time.Now(), mainCPU()-cpu0
	}, maxSeconds, hz, "--pid", itoa(pid))
	p := decodeFile(t, rec.Path).ByPID(pid)
	if p == nil {
		t.Fatalf("no samples of pid %d\n%s", pid, rec.Stderr)
	}
	n := 0
	for _, s := range p.Samples {
		if s.ThreadID == int64(pid) {
			n++
		}
	}
	t.Logf("recorded %.1f s, main thread CPU %.2f s: %d samples of it (%.0f%% of its CPU time at %d Hz); %s",
		to.Sub(from).Seconds(), got, n, 100*float64(n)/(got*hz), hz, wroteLine(rec.Stderr))
	return p, w.shareA(t, from, to)
}

// wroteLine is the recorder's summary line (samples written, lost).
func wroteLine(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "wrote") {
			return strings.TrimSpace(l)
		}
	}
	return "(no summary line)"
}

func TestNodeAsyncCallbacks(t *testing.T) {
	requireRoot(t)
	js, _ := filepath.Abs(filepath.Join(runtimesDir, "async.js"))
	for _, n := range nodeBinaries() {
		n := n
		t.Run(n.name, func(t *testing.T) {
			requireExe(t, n.bin)
			w := startRuntime(t, nil, n.bin, js, "90")
			p, truth := recordMainThread(t, w, 3)
			// setTimeout's callbacks run from libuv's timers; the
			// async function resumes in the microtasks drained after
			// each setImmediate callback (libuv's check phase)
			judgeLoopCallbacks(t, p, int64(w.cmd.Process.Pid), truth, "onTimer", "promiseStep",
				map[string][]string{"onTimer": {"uv__run_timers"}, "promiseStep": {"uv__run_check"}})
		})
	}
}

// loadHTTP sends GET /a and /b in turn on 4 keep-alive connections
// until stop is closed; the count of answered requests.
func loadHTTP(port int, stop chan struct{}) *atomic.Int64 {
	var done atomic.Int64
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: 30 * time.Second}
	for c := 0; c < 4; c++ {
		go func(c int) {
			for k := c; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				path := []string{"/a", "/b"}[k%2]
				resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
				if err != nil {
					time.Sleep(50 * time.Millisecond) // not listening yet
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				done.Add(1)
			}
		}(c)
	}
	return &done
}

func TestNodeHTTPServer(t *testing.T) {
	requireRoot(t)
	js, _ := filepath.Abs(filepath.Join(runtimesDir, "http.js"))
	for _, n := range nodeBinaries() {
		n := n
		t.Run(n.name, func(t *testing.T) {
			requireExe(t, n.bin)
			port := freeLoopbackPort(t)
			w := startRuntime(t, nil, n.bin, js, itoa(port), "90")
			stop := make(chan struct{})
			var once sync.Once
			defer once.Do(func() { close(stop) })
			done := loadHTTP(port, stop)
			p, truth := recordMainThread(t, w, 3)
			once.Do(func() { close(stop) })
			t.Logf("%d requests answered", done.Load())
			// the handlers run from the HTTP parser, on data libuv
			// read from the socket in its poll phase
			judgeLoopCallbacks(t, p, int64(w.cmd.Process.Pid), truth, "handleA", "handleB",
				map[string][]string{"handleA": {"uv__io_poll"}, "handleB": {"uv__io_poll"}})
		})
	}
}

// Each thread's samples name its own function, never the other's: the
// worker is the process's busiest thread besides the main one.
func TestNodeWorkerThreads(t *testing.T) {
	requireRoot(t)
	js, _ := filepath.Abs(filepath.Join(runtimesDir, "worker.js"))
	for _, n := range nodeBinaries() {
		n := n
		t.Run(n.name, func(t *testing.T) {
			requireExe(t, n.bin)
			w := startRuntime(t, nil, n.bin, js)
			pid := w.cmd.Process.Pid
			time.Sleep(1500 * time.Millisecond)
			// until the main thread and the busiest other one (the
			// worker) have each run 2.5 s of CPU while sampling:
			// ~1250 samples each at 499 Hz (a loaded host delivered a fifth of them here)
			var c0 map[int64]float64
			busiest := func(c map[int64]float64) (int64, float64) {
				var tid int64
				best := -1.0
				for k, v := range c {
					if k != int64(pid) && v-c0[k] > best {
						tid, best = k, v-c0[k]
					}
				}
				return tid, best
			}
			rec := recordUntil(t, func() { c0 = threadCPU(pid) }, func() {
				from := time.Now()
				for time.Since(from) < 58*time.Second {
					c := threadCPU(pid)
					if _, w := busiest(c); w >= 2.5 && c[int64(pid)]-c0[int64(pid)] >= 2.5 {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
			}, 60, 499, "--pid", itoa(pid))
			t.Logf("%s", wroteLine(rec.Stderr))
			cpu := threadCPU(pid)
			worker, wcpu := busiest(cpu)
			if worker == 0 || wcpu < 0.5 {
				t.Fatalf("no worker thread with half a second of CPU while sampling: %v", cpu)
			}
			p := decodeFile(t, rec.Path).ByPID(pid)
			if p == nil {
				t.Fatalf("no samples of pid %d\n%s", pid, rec.Stderr)
			}
			for _, th := range []struct {
				tid        int64
				own, other string
			}{{int64(pid), "mainHot", "workerHot"}, {worker, "workerHot", "mainHot"}} {
				samples := threadFromFirstJS(t, p, th.tid)
				var own, other int
				var bad []string
				for _, s := range samples {
					if hasFrame(s, jsNamed(th.own)) {
						own++
					} else if len(bad) < 4 {
						bad = append(bad, s.String())
					}
					if hasFrame(s, jsNamed(th.other)) {
						other++
					}
				}
				t.Logf("thread %d (%.2f s CPU in all): %d samples, %d in %s, %d in %s",
					th.tid, cpu[th.tid], len(samples), own, th.own, other, th.other)
				if len(samples) < 200 {
					t.Errorf("thread %d: only %d samples", th.tid, len(samples))
					continue
				}
				if own*100 < len(samples)*95 {
					t.Errorf("thread %d: %d of %d samples in %s, want >= 95%%; e.g.\n%s",
						th.tid, own, len(samples), th.own, strings.Join(bad, "\n"))
				}
				if other > 0 {
					t.Errorf("thread %d: %d samples name the other thread's %s", th.tid, other, th.other)
				}
			}
		})
	}
}
