// Java (HotSpot) without JVM flags: the kernel walks compiled and
// interpreted Java frames by the JVM's own layout (its VMStructs) and
// userspace names their methods. FibHash runs a fib thread and a SHA-256
// thread (about 60/40 of their CPU time); each is judged by its own CPU
// time (schedstat per thread).
package integration

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var jdks = []struct{ name, java string }{
	{"17", "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"},
	{"25", "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java"},
}

// javaFrame is the index of the first jvm frame with a Line of name
// (its own or one it inlined), and that Line; -1 if none.
func javaFrame(s Sample, name string) (int, *Line) {
	for i := range s.Frames {
		if s.Frames[i].Type != "jvm" {
			continue
		}
		for k := range s.Frames[i].Lines {
			if s.Frames[i].Lines[k].Name == name {
				return i, &s.Frames[i].Lines[k]
			}
		}
	}
	return -1, nil
}

// threadsNamed waits until pid has threads with these names (comm) and
// returns their tids.
func threadsNamed(t *testing.T, pid int, names ...string) map[string]int64 {
	t.Helper()
	// Judged on the JVM's own CPU time (start-up with an agent is seconds
	// of it, minutes of wall time on a loaded host), the wall clock
	// only as a last guard against a process that sleeps.
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) && cpuSecondsOf(t, pid) < 60 {
		out := map[string]int64{}
		dirs, _ := filepath.Glob("/proc/" + itoa(pid) + "/task/*/comm")
		for _, d := range dirs {
			raw, err := os.ReadFile(d)
			if err != nil {
				continue
			}
			comm := strings.TrimSpace(string(raw))
			for _, n := range names {
				if comm == n {
					var tid int64
					for _, c := range filepath.Base(filepath.Dir(d)) {
						tid = tid*10 + int64(c-'0')
					}
					out[n] = tid
				}
			}
		}
		if len(out) == len(names) {
			return out
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("pid %d has no threads %v after %.1f s of its CPU time", pid, names, cpuSecondsOf(t, pid))
	return nil
}

func TestJavaFrames(t *testing.T) {
	requireRoot(t)
	src, _ := filepath.Abs("../workloads/java/FibHash.java")
	fibLine := lineOf(t, src, "    static long fib(")
	digestLine := lineOf(t, src, "    static byte[] digest(")
	classes := filepath.Join(buildDir(t), "workloads", "java")
	for _, j := range jdks {
		j := j
		t.Run(j.name, func(t *testing.T) {
			requireExe(t, j.java)
			cmd := exec.Command(j.java, "-cp", classes, "FibHash", "60")
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
			pid := cmd.Process.Pid
			tids := threadsNamed(t, pid, "fib", "hash")
			time.Sleep(1500 * time.Millisecond) // the JIT compiles them first
			// ~4 s of their CPU: ~2000 samples
			rec, cpu0, cpu1 := recordJavaThreads(t, pid, []int64{tids["fib"], tids["hash"]}, 4, 40, 499)
			d := decodeFile(t, rec.Path)
			p := d.ByPID(pid)
			if p == nil {
				t.Fatalf("no samples of pid %d\n%s", pid, rec.Stderr)
			}
			fibCPU := cpu1[tids["fib"]] - cpu0[tids["fib"]]
			hashCPU := cpu1[tids["hash"]] - cpu0[tids["hash"]]
			judgeJava(t, p, tids["fib"], tids["hash"], 100*fibCPU/(fibCPU+hashCPU),
				src, fibLine, digestLine)
		})
	}
}

// recordJavaThreads records the whole host at hz until the threads tids
// of pid have used cpuSeconds of CPU between them (at most maxSeconds):
// judged by their own CPU time, not the wall clock. Returns the recording
// and the threads' CPU seconds at its start and end.
func recordJavaThreads(t *testing.T, pid int, tids []int64, cpuSeconds float64,
	maxSeconds, hz int) (recording, map[int64]float64, map[int64]float64) {
	t.Helper()
	var cpu0, cpu1 map[int64]float64
	var from time.Time
	used := func(c map[int64]float64) float64 {
		u := 0.0
		for _, tid := range tids {
			u += c[tid] - cpu0[tid]
		}
		return u
	}
	rec := recordUntil(t, func() { from = time.Now(); cpu0 = threadCPU(pid) }, func() {
		for time.Since(from) < time.Duration(maxSeconds-2)*time.Second {
			if used(threadCPU(pid)) > cpuSeconds {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		cpu1 = threadCPU(pid)
	}, maxSeconds, hz)
	return rec, cpu0, cpu1
}

func judgeJava(t *testing.T, p *Process, fibTid, hashTid int64, truth float64,
	src string, fibLine, digestLine int64) {
	t.Helper()
	// The process is found at its first sample; its JVM layout and
	// libjvm's big table and symbols are read then: until the layout is
	// in the kernel stacks are native only, and while libjvm's table is
	// still being built (a few hundred ms, over a second on a loaded
	// machine) they stop at libjvm. Judged: samples from the first with
	// Java frames on (the delay logged: it is the drain thread's CPU
	// time, seconds of wall time on a loaded host recorded whole), at
	// least 500 of them; the proportions over all of them.
	first, firstJava := uint64(math.MaxUint64), uint64(math.MaxUint64)
	for _, s := range p.Samples {
		if s.TimeNs < first {
			first = s.TimeNs
		}
		for _, f := range s.Frames {
			if f.Type == "jvm" && s.TimeNs < firstJava {
				firstJava = s.TimeNs
			}
		}
	}
	if firstJava == math.MaxUint64 {
		t.Fatalf("no Java frames")
	}
	t.Logf("first Java frames %.2f s after the first sample", float64(firstJava-first)/1e9)
	// libjvm's unwind table is built after its layout is read: until
	// then a stack stops at libjvm, without the native thread start
	// below run(). That part is judged from the first sample that has it
	// (its delay logged: ~0.3 s of the drain thread's CPU, 4 s of wall
	// time at a load of 25 on 2 CPUs), over at least 500 samples.
	firstNative := uint64(math.MaxUint64)
	for _, s := range p.Samples {
		if (s.ThreadID == fibTid || s.ThreadID == hashTid) && s.TimeNs < firstNative {
			r, _ := javaFrame(s, "java.lang.Thread.run")
			ts := frameNamed(s, "thread_native_entry(Thread*)")
			if r >= 0 && ts > r && frameNamed(s, "start_thread") > ts {
				firstNative = s.TimeNs
			}
		}
	}
	if firstNative == math.MaxUint64 {
		t.Fatalf("no stack with the JVM's native thread start below run()")
	}
	t.Logf("first native thread start below run() %.2f s after the first sample", float64(firstNative-first)/1e9)
	var nativeSteady int
	var nFib, nHash, steady, withJava, fibNamed, fibLined, digestNamed, digestLined, fibSteady, hashSteady, run, native int
	var bad []string
	for _, s := range p.Samples {
		if s.ThreadID != fibTid && s.ThreadID != hashTid {
			continue
		}
		if s.ThreadID == fibTid {
			nFib++
		} else {
			nHash++
		}
		if s.TimeNs < firstJava {
			continue
		}
		steady++
		java := false
		for _, f := range s.Frames {
			if f.Type == "jvm" {
				java = true
			}
		}
		if java {
			withJava++
		} else if len(bad) < 3 {
			bad = append(bad, s.String())
		}
		if s.ThreadID == fibTid {
			fibSteady++
			if _, f := javaFrame(s, "FibHash.fib"); f != nil {
				fibNamed++
				l := *f
				if l.Filename != "FibHash.java" || l.SystemName != "FibHash.fib(I)J" ||
					(l.Line != 0 && (l.Line <= fibLine || l.Line > fibLine+4)) {
					t.Fatalf("fib frame %+v, want FibHash.java, FibHash.fib(I)J, a line in its body (%d)", l, fibLine)
				}
				if l.Line != 0 {
					fibLined++
				}
			}
		} else {
			hashSteady++
			if _, f := javaFrame(s, "FibHash.digest"); f != nil {
				digestNamed++
				l := *f
				if l.Filename != "FibHash.java" || (l.Line != 0 && (l.Line <= digestLine || l.Line > digestLine+5)) {
					t.Fatalf("digest frame %+v, want FibHash.java and a line in its body (%d)", l, digestLine)
				}
				if l.Line != 0 {
					digestLined++
				}
			}
		}
		// run() of the thread's Runnable, and below it the JVM's own
		// native thread start
		r, _ := javaFrame(s, "java.lang.Thread.run")
		ts := frameNamed(s, "thread_native_entry(Thread*)")
		if r >= 0 {
			run++
		}
		if s.TimeNs >= firstNative {
			nativeSteady++
			if r >= 0 && ts > r && frameNamed(s, "start_thread") > ts {
				native++
			}
		}
	}
	if steady < 500 {
		t.Fatalf("only %d samples of the fib and hash threads", steady)
	}
	got := 100 * float64(nFib) / float64(nFib+nHash)
	t.Logf("%d samples (%d steady): %.1f%% with Java frames; fib %.1f%% (truth %.1f%%); fib named %d/%d (with a line %d), digest %d/%d (with a line %d); run() %.1f%%, native start below %.1f%% (of %d from the first that had it)",
		nFib+nHash, steady, 100*float64(withJava)/float64(steady), got, truth,
		fibNamed, fibSteady, fibLined, digestNamed, hashSteady, digestLined,
		100*float64(run)/float64(steady), 100*float64(native)/float64(nativeSteady), nativeSteady)
	// The target. Samples cut at libjvm while its table is
	// still being built keep their Java frames (without the native
	// start below them): the judged window opens with the first.
	const bar = 0.95
	if float64(withJava) < bar*float64(steady) {
		t.Errorf("%d of %d samples have Java frames, want >= 95%%; e.g.\n%s", withJava, steady, strings.Join(bad, "\n"))
	}
	if math.Abs(got-truth) > 3 {
		t.Errorf("fib: %.1f%% of samples, want %.1f%% +- 3 (own CPU time)", got, truth)
	}
	if float64(fibNamed) < bar*float64(fibSteady) {
		t.Errorf("only %d of %d fib-thread samples name FibHash.fib", fibNamed, fibSteady)
	}
	if float64(fibLined) < 0.90*float64(fibNamed) || float64(digestLined) < 0.90*float64(digestNamed) {
		t.Errorf("lines: fib %d of %d frames, digest %d of %d, want >= 90%%", fibLined, fibNamed, digestLined, digestNamed)
	}
	if float64(digestNamed) < 0.90*float64(hashSteady) {
		t.Errorf("only %d of %d hash-thread samples name FibHash.digest", digestNamed, hashSteady)
	}
	if float64(run) < bar*float64(steady) {
		t.Errorf("only %d of %d samples reach java.lang.Thread.run", run, steady)
	}
	if nativeSteady < 500 {
		t.Errorf("only %d samples from the first with the native thread start below run()", nativeSteady)
	} else if float64(native) < 0.95*float64(nativeSteady) {
		t.Errorf("only %d of %d samples (from the first that had it) have the JVM's native thread start below run()", native, nativeSteady)
	}
}

// TestJavaThreadContextAttributes: Java threads that publish OTEP 4947
// context with attributes (a JNI library, test/workloads/context/
// jni_publisher.c) and run Java code. A sample with HotSpot frames must
// carry its own thread's Link and attributes: the runtime's frames are
// appended to the sample after the walk, and the attributes must follow
// them, not be overwritten by them (before, such samples carried whatever
// an earlier sample had left in the per-CPU scratch as attributes).
func TestJavaThreadContextAttributes(t *testing.T) {
	requireRoot(t)
	j := jdks[0]
	requireExe(t, j.java)
	classes := filepath.Join(buildDir(t), "workloads", "java")
	lib := filepath.Join(buildDir(t), "workloads", "libotelctx_jni.so")
	cmd := exec.Command(j.java, "-cp", classes, "CtxJava", lib, "60")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	pid := cmd.Process.Pid
	tids := threadsNamed(t, pid, "ctx-0", "ctx-1")
	time.Sleep(1500 * time.Millisecond) // the JIT compiles fib first
	rec, _, _ := recordJavaThreads(t, pid, []int64{tids["ctx-0"], tids["ctx-1"]}, 3, 40, 499)
	d := decodeFile(t, rec.Path)
	p := d.ByPID(pid)
	if p == nil {
		t.Fatalf("no samples of pid %d\n%s", pid, rec.Stderr)
	}
	judged, right, noCtx := 0, 0, 0
	var bad []string
	for _, s := range p.Samples {
		i := -1
		switch s.ThreadID {
		case tids["ctx-0"]:
			i = 0
		case tids["ctx-1"]:
			i = 1
		}
		if i < 0 {
			continue
		}
		if f, _ := javaFrame(s, "CtxJava.fib"); f < 0 {
			continue
		}
		if s.TraceID == "" {
			// Before the process context and the thread's TLS are
			// found: counted, judged below.
			noCtx++
			continue
		}
		judged++
		wantTrace := strings.Repeat(fmt.Sprintf("%02x", i+1), 16)
		wantSpan := strings.Repeat(fmt.Sprintf("%02x", 0x80+i), 8)
		route, _ := s.Attrs["http.route"].(string)
		tenant, _ := s.Attrs["tenant.id"].(string)
		if s.TraceID == wantTrace && s.SpanID == wantSpan &&
			route == fmt.Sprintf("/route-%d", i) && tenant == fmt.Sprintf("tenant-%d", i) {
			right++
		} else if len(bad) < 5 {
			bad = append(bad, fmt.Sprintf("ctx-%d: trace %s span %s http.route %q tenant.id %q",
				i, s.TraceID, s.SpanID, route, tenant))
		}
	}
	t.Logf("%d samples with Java frames and a Link, %d right; %d without a Link (discovery)", judged, right, noCtx)
	if judged < 300 || noCtx > judged/4 {
		t.Fatalf("%d samples of the ctx threads with Java frames and a Link, %d without: too few to judge\n%s",
			judged, noCtx, rec.Stderr)
	}
	if right != judged {
		t.Errorf("%d of %d samples with Java frames carry their thread's Link and attributes; e.g. %v",
			right, judged, bad)
	}
}
