// PHP (Zend engine) frames without flags or debug symbols: the kernel
// walks the executor's zend_execute_data chain and userspace names each
// frame (Class::method, file, line); judged against the workload's own
// CPU time in its two hot functions.
package integration

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	php82       = "/usr/bin/php8.2"        // Debian 12's php-cli (make deps)
	phpChrootIn = "/tmp/otelprof-php-test" // the workload's folder inside the root
)

// phpScript is hot.php's absolute path (its hot_lib.php beside it).
func phpScript(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(runtimesDir, "hot.php"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// phpFrame is the first php frame of s named name, or nil.
func phpFrame(s Sample, name string) (int, *Frame) {
	for i := range s.Frames {
		if s.Frames[i].Type == "php" && s.Frames[i].Function == name {
			return i, &s.Frames[i]
		}
	}
	return -1, nil
}

// copyPHPWorkload puts hot.php and hot_lib.php into the Debian 13 root
// (make trixie-root builds it) and returns the script's path inside it.
func copyPHPWorkload(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(trixieRoot(t), "usr/bin/php8.4")); err != nil {
		t.Fatalf("the Debian 13 root with php8.4 is needed (make trixie-root): %v", err)
	}
	dir := filepath.Join(trixieRoot(t), phpChrootIn)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"hot.php", "hot_lib.php"} {
		b, err := os.ReadFile(filepath.Join(runtimesDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
		// the source's modification time: opcache does not cache (nor
		// JIT) a file modified in the last 2 s
		// (opcache.file_update_protection)
		st, err := os.Stat(filepath.Join(runtimesDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(dir, f), st.ModTime(), st.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(phpChrootIn, "hot.php")
}

// Debian 12's php 8.2 on the host and Debian 13's php 8.4 in its root
// (under chroot, as a container would run it).
func TestPHPFrames(t *testing.T) {
	requireRoot(t)
	host := phpScript(t)
	lineA := lineOf(t, host, "    public function hot_a")
	lineB := lineOf(t, filepath.Join(runtimesDir, "hot_lib.php"), "function hot_b")
	lineStep := lineOf(t, host, "    public function step")
	// 8.2-opcache: opcache on (as PHP-FPM runs by default): functions
	// and strings in its shared memory, the optimizer's oplines.
	// 8.2-jit, 8.4-jit: opcache's tracing JIT: the PHP frames stay
	// whole, and the native walk gets through the JIT code (in the VM's
	// own frame: execute_ex's CFI) to main; the innermost frame's line is
	// unknown there (0), never another function's.
	// 8.2-embed: the embed SAPI (libphp8.2.so) in a program of ours
	// (test/workloads/runtimes/php_embed.c): the engine is in a library
	// of a program that is not php.
	for _, v := range []string{"8.2", "8.2-opcache", "8.2-jit", "8.2-embed", "8.4", "8.4-jit"} {
		v := v
		t.Run(v, func(t *testing.T) {
			var w *runtimeWorkload
			script := host
			if v == "8.2" {
				requireExe(t, php82)
				w = startRuntime(t, nil, php82, script, "60")
			} else if v == "8.2-opcache" {
				requireExe(t, php82)
				w = startRuntime(t, nil, php82, "-d", "opcache.enable_cli=1", script, "60")
			} else if v == "8.2-jit" {
				requireExe(t, php82)
				w = startRuntime(t, nil, php82, "-d", "opcache.enable_cli=1", "-d", "opcache.jit=tracing",
					"-d", "opcache.jit_buffer_size=64M", script, "60")
			} else if v == "8.2-embed" {
				w = startRuntime(t, nil, filepath.Join(buildDir(t), "workloads", "php_embed"), script, "60")
			} else if v == "8.4-jit" {
				script = copyPHPWorkload(t)
				w = startRuntime(t, nil, "/usr/sbin/chroot", trixieRoot(t), "php8.4", "-d", "opcache.enable_cli=1",
					"-d", "opcache.jit=tracing", "-d", "opcache.jit_buffer_size=64M", script, "60")
			} else {
				script = copyPHPWorkload(t)
				w = startRuntime(t, nil, "/usr/sbin/chroot", trixieRoot(t), "php8.4", script, "60")
			}
			p, truth := recordRuntime(t, w, 5)
			judgePHP(t, w, p, truth, script, lineA, lineB, lineStep, strings.HasSuffix(v, "-jit"))
		})
	}
}

func judgePHP(t *testing.T, w *runtimeWorkload, p *Process, truth float64, script string, lineA, lineB, lineStep int64, jit bool) {
	t.Helper()
	pid := w.cmd.Process.Pid
	lib := filepath.Join(filepath.Dir(script), "hot_lib.php")
	var withPHP, nA, nB, below, rootedN, n, bodyA, bodyB, inJIT int
	linesA, linesB := map[int64]int{}, map[int64]int{}
	innerOther := map[string]int{} // innermost PHP frame of samples in neither hot function
	var unrooted []string
	var bad []string
	// A process already running when recording starts is found at its
	// first sample; until the kernel knows it its stacks are native only.
	// The steady state is judged.
	// Until the kernel has the binary's unwind table (built on the
	// loader thread: seconds for a 6 MB binary on a loaded machine), a
	// sample is a stack copy, which cannot reach main: php's frames
	// between execute_ex and main take ~14 KiB, more than a copy holds.
	// So the window starts at the later of 1 s after the first sample
	// and the first rooted one (none: 1 s).
	first, firstRooted := uint64(math.MaxUint64), uint64(math.MaxUint64)
	for _, s := range p.Samples {
		if s.TimeNs < first {
			first = s.TimeNs
		}
		if s.TimeNs < firstRooted && rooted(s, pid) {
			firstRooted = s.TimeNs
		}
	}
	from := first + 1e9
	if firstRooted != math.MaxUint64 && firstRooted > from {
		from = firstRooted
	}
	t.Logf("judged from %.1f s after the first sample", float64(from-first)/1e9)
	for _, s := range p.Samples {
		if s.TimeNs < from {
			continue
		}
		n++
		i, a := phpFrame(s, "Hot::hot_a")
		ib, b := phpFrame(s, "hot_b")
		_, wk := phpFrame(s, "work")
		_, mn := phpFrame(s, "{main}")
		if wk != nil && mn != nil {
			withPHP++
		} else if len(bad) < 3 {
			bad = append(bad, s.String())
		}
		top := -1
		if a == nil && b == nil {
			for _, f := range s.Frames {
				if f.Type == "php" {
					innerOther[f.Function]++
					break
				}
			}
		}
		switch {
		case a != nil:
			nA++
			top = i
			l := a.Lines[0]
			linesA[l.Line]++
			// a line in the function, or 0 (unknown): never another's
			if l.Filename != script || l.StartLine != lineA || (l.Line != 0 && (l.Line < lineA || l.Line > lineA+5)) {
				t.Fatalf("Hot::hot_a frame %+v, want %s, start line %d, line in its body", l, script, lineA)
			}
			if l.Line > lineA {
				bodyA++
			}
			j, st := phpFrame(s, "Runner::step")
			if st == nil || j < i || st.Lines[0].StartLine != lineStep || st.Lines[0].Line <= lineStep ||
				st.Lines[0].Line > lineStep+4 {
				t.Fatalf("Hot::hot_a not called by Runner::step at its line: %s", s)
			}
		case b != nil:
			nB++
			top = ib
			l := b.Lines[0]
			linesB[l.Line]++
			if l.Filename != lib || l.StartLine != lineB || (l.Line != 0 && (l.Line < lineB || l.Line > lineB+5)) {
				t.Fatalf("hot_b frame %+v, want %s, start line %d, line in its body", l, lib, lineB)
			}
			if l.Line > lineB {
				bodyB++
			}
		}
		// the executor's loop below the PHP frames, rooted as usual
		if ev := frameNamed(s, "execute_ex"); top >= 0 && ev > top {
			below++
		}
		// a native frame in opcache's JIT buffer (its shared memory:
		// anonymous code, no file)
		for _, f := range s.Frames {
			if top >= 0 && f.Type == "native" && (strings.HasPrefix(f.Mapping, "/dev/zero") || f.Mapping == "[anon]") {
				inJIT++
				break
			}
		}
		if rooted(s, pid) {
			rootedN++
		} else if len(unrooted) < 3 {
			unrooted = append(unrooted, s.String())
		}
	}
	if n < 500 {
		t.Fatalf("only %d samples of the workload", n)
	}
	if nA+nB == 0 {
		t.Fatalf("no sample in Hot::hot_a or hot_b; e.g.\n%s", strings.Join(bad, "\n"))
	}
	got := 100 * float64(nA) / float64(nA+nB)
	t.Logf("%d samples: %.1f%% with PHP frames down to {main}; Hot::hot_a %.1f%% (truth %.1f%%), hot_b %.1f%% (truth %.1f%%); over execute_ex %d of %d; rooted %.1f%%",
		n, 100*float64(withPHP)/float64(n), got, truth, 100-got, 100-truth, below, nA+nB, 100*float64(rootedN)/float64(n))
	t.Logf("Hot::hot_a's lines (start %d): %v; hot_b's (start %d): %v; hot samples in JIT code: %d; the innermost PHP frame of the other samples: %v", lineA, linesA, lineB, linesB, inJIT, innerOther)
	// With the JIT on, the hot loops run as JIT code: the walk must get
	// through it (else this judges the interpreter again).
	if jit && inJIT < (nA+nB)/2 {
		t.Errorf("only %d of %d hot samples in JIT code, want >= half", inJIT, nA+nB)
	}
	// The running line of the innermost frame (the VM's opline
	// register), not the signature's nor the last one stored. JIT code
	// keeps no opline anywhere a sampler can read it: line 0 (unknown),
	// checked above never to be another function's.
	if !jit && (bodyA < nA*95/100 || bodyB < nB*95/100) {
		t.Errorf("lines inside the hot functions' bodies: Hot::hot_a %d of %d, hot_b %d of %d, want >= 95%%", bodyA, nA, bodyB, nB)
	}
	if float64(withPHP) < 0.95*float64(n) {
		t.Errorf("%d of %d samples have PHP frames down to {main}, want >= 95%%; e.g.\n%s", withPHP, n, strings.Join(bad, "\n"))
	}
	if math.Abs(got-truth) > 3 {
		t.Errorf("Hot::hot_a: %.1f%% of samples, want %.1f%% +- 3 (own CPU time)", got, truth)
	}
	if below < (nA+nB)*95/100 {
		t.Errorf("only %d of %d hot samples have execute_ex below their PHP frames", below, nA+nB)
	}
	if float64(rootedN) < 0.95*float64(n) {
		t.Errorf("only %d of %d samples keep their native frames rooted; e.g.\n%s", rootedN, n, strings.Join(unrooted, "\n"))
	}
}

// A version without a layout (Debian's php 8.2 with its version string
// made 8.9: the same binary, so the walk would read it right and only the
// unknown version keeps it out) is reported once and its samples keep
// their native stacks.
func TestPHPUnknownVersion(t *testing.T) {
	requireRoot(t)
	requireExe(t, php82)
	raw, err := os.ReadFile(php82)
	if err != nil {
		t.Fatal(err)
	}
	from := []byte("X-Powered-By: PHP/8.2.")
	if bytes.Count(raw, from) != 1 {
		t.Fatalf("%s: want one %q", php82, from)
	}
	bin := filepath.Join(t.TempDir(), "php8.9")
	if err := os.WriteFile(bin, bytes.Replace(raw, from, []byte("X-Powered-By: PHP/8.9."), 1), 0o755); err != nil {
		t.Fatal(err)
	}
	w := startRuntime(t, nil, bin, phpScript(t), "30")
	time.Sleep(500 * time.Millisecond)
	pid := w.cmd.Process.Pid
	rec := record(t, 6, 199, "--pid", itoa(pid))
	if !strings.Contains(rec.Stderr, "1 unknown versions)") {
		t.Errorf("the unknown version is not reported once:\n%s", rec.Stderr)
	}
	p := decodeFile(t, rec.Path).ByPID(pid)
	// 100: a tenth of a CPU on a loaded machine is enough for the shape
	if p == nil || len(p.Samples) < 100 {
		t.Fatalf("too few samples of pid %d", pid)
	}
	n := 0
	var bad []string
	for _, s := range p.Samples {
		for _, f := range s.Frames {
			if f.Type == "php" {
				t.Fatalf("a php frame from an unknown version: %s", s)
			}
		}
		if frameNamed(s, "execute_ex") >= 0 && rooted(s, pid) {
			n++
		} else if len(bad) < 3 {
			bad = append(bad, s.String())
		}
	}
	t.Logf("%d of %d samples native and rooted", n, len(p.Samples))
	if n < len(p.Samples)*90/100 {
		t.Errorf("only %d of %d samples keep whole native stacks; e.g.\n%s", n, len(p.Samples), strings.Join(bad, "\n"))
	}
}
