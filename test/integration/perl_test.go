// Perl: the kernel walks the running interpreter's context stack (no
// flags, no debug symbols); its subs are named Pkg::sub with the file and
// line of their current statement, above the op loop that ran them, on
// Debian 12's perl 5.36 (the host) and Debian 13's perl 5.40 (its root
// file system, run under chroot as a container would run it).
package integration

import (
	"debug/elf"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// perlVersion runs hot.pl with one Perl: bin and its leading args, and
// the script's path as that Perl sees it (host, for the profile's file
// names) and as the host sees it (to write it there).
type perlVersion struct {
	name     string
	root     string // "" on the host, else the chroot it runs in
	script   string // the path Perl sees
	bin      string // on the host: the perl run
	threaded bool   // built with ithreads
}

// The Perls judged: Debian 12's and 13's (threaded builds) and 5.36 built
// without threads, as the official perl container images are (make
// perl-nothreads, cached under RUNTIME_CACHE: missing, it fails).
func perlVersions(t *testing.T) []perlVersion {
	t.Helper()
	host, _ := filepath.Abs(filepath.Join(runtimesDir, "hot.pl"))
	cache := os.Getenv("OTELPROF_RUNTIME_CACHE")
	if cache == "" {
		cache = "/var/cache/otelprof-test"
	}
	return []perlVersion{
		{"debian12-5.36", "", host, "/usr/bin/perl", true},
		{"debian13-5.40", "trixie", "/tmp/otelprof-perl-test/hot.pl", "", true},
		{"built-5.36-nothreads", "", host, filepath.Join(cache, "perl-5.36.0-nothreads", "bin", "perl"), false},
	}
}

// start runs hot.pl with args; in the chroot the script is copied in
// first (and the directory removed at the end).
func (v perlVersion) start(t *testing.T, args ...string) *runtimeWorkload {
	t.Helper()
	host, _ := filepath.Abs(filepath.Join(runtimesDir, "hot.pl"))
	if v.root == "" {
		requireExe(t, v.bin)
		return startRuntime(t, nil, v.bin, append([]string{host}, args...)...)
	}
	root := trixieRoot(t)
	dir := filepath.Join(root, filepath.Dir(v.script))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	raw, err := os.ReadFile(host)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, v.script), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return startRuntime(t, nil, "/usr/sbin/chroot", append([]string{root, "perl", v.script}, args...)...)
}

// hostPath is where a file Perl sees at path is on the host.
func (v perlVersion) hostPath(t *testing.T, path string) string {
	if v.root == "" {
		return path
	}
	return filepath.Join(trixieRoot(t), path)
}

// perlFrame is the first perl frame of s named name, and its index.
func perlFrame(s Sample, name string) (int, *Frame) {
	for i := range s.Frames {
		if s.Frames[i].Type == "perl" && s.Frames[i].Function == name {
			return i, &s.Frames[i]
		}
	}
	return -1, nil
}

// leafPerl is the innermost perl frame of s, or nil.
func leafPerl(s Sample) *Frame {
	_, f := firstFrame(s, "perl")
	return f
}

func firstFrame(s Sample, typ string) (int, *Frame) {
	for i := range s.Frames {
		if s.Frames[i].Type == typ {
			return i, &s.Frames[i]
		}
	}
	return -1, nil
}

// Two hot subs at 70/30 of the main thread's own CPU time, in package
// Hot, called through work and round: nearly every sample carries perl
// frames, hot_a's share matches the CPU time, every frame has its file
// and the line it is at, and the native stack below stays whole.
func TestPerlFrames(t *testing.T) {
	requireRoot(t)
	src, _ := filepath.Abs(filepath.Join(runtimesDir, "hot.pl"))
	lineA := lineOf(t, src, "sub hot_a")
	lineB := lineOf(t, src, "sub hot_b")
	callA := lineOf(t, src, "    hot_a(int(700000 * $k));")
	callRound := lineOf(t, src, "        round(\\%acc);")
	callWork := lineOf(t, src, "    Hot::work($seconds);")
	for _, v := range perlVersions(t) {
		v := v
		t.Run(v.name, func(t *testing.T) {
			w := v.start(t, "60")
			p, truth := recordRuntime(t, w, 5)
			pid := w.cmd.Process.Pid
			ss := steadySamples(p, 2*time.Second).Samples
			if len(ss) < 500 {
				t.Fatalf("only %d samples of the workload", len(ss))
			}
			var withPerl, nA, nB, below, rootedN, unknownLine int
			var bad, unrooted []string
			for _, s := range ss {
				if leafPerl(s) != nil {
					withPerl++
				} else if len(bad) < 3 {
					bad = append(bad, s.String())
				}
				i, a := perlFrame(s, "Hot::hot_a")
				_, b := perlFrame(s, "Hot::hot_b")
				if a != nil {
					nA++
					l := a.Lines[0]
					// entering or leaving: its own file, no line
					if l.Line == 0 && l.Filename == v.script {
						unknownLine++
					} else if l.Filename != v.script || l.Line <= lineA || l.Line > lineA+6 {
						t.Fatalf("Hot::hot_a at %s:%d, want %s, a line of its body (after %d)\n%s", l.Filename, l.Line, v.script, lineA, s)
					}
					// its callers, each at the statement that called in
					j, r := perlFrame(s, "Hot::round")
					k, wk := perlFrame(s, "Hot::work")
					m, mn := perlFrame(s, "main")
					if r == nil || wk == nil || mn == nil || !(i < j && j < k && k < m) {
						t.Fatalf("Hot::hot_a not under round, work and main: %s", s)
					}
					if r.Lines[0].Line != callA || wk.Lines[0].Line != callRound || mn.Lines[0].Line != callWork ||
						r.Lines[0].Filename != v.script || mn.Lines[0].Filename != v.script {
						t.Fatalf("callers' lines %s:%d %d %d, want %s:%d %d %d", r.Lines[0].Filename, r.Lines[0].Line,
							wk.Lines[0].Line, mn.Lines[0].Line, v.script, callA, callRound, callWork)
					}
					// the op loop below them, the native stack rooted
					if n := frameNamed(s, "Perl_runops_standard"); n > m {
						below++
					}
				} else if b != nil {
					nB++
					if l := b.Lines[0]; l.Line != 0 && (l.Line <= lineB || l.Line > lineB+6) {
						t.Fatalf("Hot::hot_b at line %d, want its body (after %d)", l.Line, lineB)
					}
				}
				if rooted(s, pid) {
					rootedN++
				} else if len(unrooted) < 3 {
					unrooted = append(unrooted, s.String())
				}
			}
			n := len(ss)
			got := 100 * float64(nA) / float64(nA+nB)
			t.Logf("%d samples: %.1f%% with perl frames; Hot::hot_a %.1f%% (truth %.1f%%), hot_b %.1f%% (truth %.1f%%); op loop below hot_a %d of %d; rooted %.1f%%",
				n, 100*float64(withPerl)/float64(n), got, truth, 100-got, 100-truth, below, nA, 100*float64(rootedN)/float64(n))
			if float64(withPerl) < 0.95*float64(n) {
				t.Errorf("%d of %d samples have perl frames, want >= 95%%; e.g.\n%s", withPerl, n, strings.Join(bad, "\n"))
			}
			t.Logf("Hot::hot_a entering or leaving (no line): %d of %d", unknownLine, nA)
			if len(unrooted) > 0 {
				t.Logf("not rooted, e.g. %s", unrooted[0])
			}
			if unknownLine > nA/20 {
				t.Errorf("%d of %d Hot::hot_a samples without a line, want < 5%%", unknownLine, nA)
			}
			if nA+nB < n/2 {
				t.Errorf("only %d of %d samples in hot_a or hot_b", nA+nB, n)
			}
			if math.Abs(got-truth) > 3 {
				t.Errorf("Hot::hot_a: %.1f%% of samples, want %.1f%% +- 3 (own CPU time)", got, truth)
			}
			if below < nA*95/100 {
				t.Errorf("only %d of %d hot_a samples have Perl_runops_standard below main", below, nA)
			}
			if float64(rootedN) < 0.95*float64(n) {
				t.Errorf("only %d of %d samples keep their native frames rooted; e.g.\n%s", rootedN, n, strings.Join(unrooted, "\n"))
			}
		})
	}
}

// Two ithreads, each with its own interpreter and its own hot sub: every
// thread's samples name that thread's sub, never the other's.
func TestPerlThreadFrames(t *testing.T) {
	requireRoot(t)
	for _, v := range perlVersions(t) {
		v := v
		if !v.threaded {
			continue // no ithreads to judge in a non-threaded build
		}
		t.Run(v.name, func(t *testing.T) {
			tidFile := filepath.Join(filepath.Dir(v.script), "tids-"+strconv.Itoa(os.Getpid()))
			w := v.start(t, "40", "thread", tidFile)
			hostTids := v.hostPath(t, tidFile)
			t.Cleanup(func() { os.Remove(hostTids) })
			tids := map[string]int64{}
			for deadline := time.Now().Add(10 * time.Second); len(tids) < 2 && time.Now().Before(deadline); {
				time.Sleep(100 * time.Millisecond)
				raw, _ := os.ReadFile(hostTids)
				for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
					if f := strings.Fields(l); len(f) == 2 {
						if id, err := strconv.ParseInt(f[1], 10, 64); err == nil {
							tids[f[0]] = id
						}
					}
				}
			}
			if tids["a"] == 0 || tids["b"] == 0 {
				t.Fatalf("the threads did not report their ids: %v", tids)
			}
			time.Sleep(time.Second)
			pid := w.cmd.Process.Pid
			// until each thread ran 2 s of CPU (~400 samples) in the
			// judged part (from 2 s after the first sample on: see
			// steadySamples below), however loaded the machine
			cpu0 := map[string]float64{}
			rec := recordUntil(t, func() {}, func() {
				time.Sleep(2500 * time.Millisecond)
				for which, tid := range tids {
					cpu0[which] = threadCPU(pid)[tid]
				}
				for start := time.Now(); time.Since(start) < 21*time.Second; time.Sleep(100 * time.Millisecond) {
					c := threadCPU(pid)
					if c[tids["a"]]-cpu0["a"] >= 2 && c[tids["b"]]-cpu0["b"] >= 2 {
						break
					}
				}
			}, 25, 199)
			p := decodeFile(t, rec.Path).ByPID(pid)
			if p == nil {
				t.Fatalf("no samples of pid %d\n%s", pid, rec.Stderr)
			}
			own := map[string]int{}
			all := map[string]int{}
			var bad []string
			for _, s := range steadySamples(p, 2*time.Second).Samples {
				for which, tid := range tids {
					if s.ThreadID != tid {
						continue
					}
					all[which]++
					want := "Hot::spin_" + which
					if f := leafPerl(s); f != nil && f.Function == want {
						if _, th := perlFrame(s, "Hot::__ANON__"); th != nil {
							own[which]++
						}
					} else if len(bad) < 4 {
						bad = append(bad, which+": "+s.String())
					}
				}
			}
			t.Logf("thread a: %d of %d samples name Hot::spin_a; thread b: %d of %d name Hot::spin_b", own["a"], all["a"], own["b"], all["b"])
			for _, which := range []string{"a", "b"} {
				if all[which] < 200 {
					t.Fatalf("only %d samples of thread %s", all[which], which)
				}
				if float64(own[which]) < 0.95*float64(all[which]) {
					t.Errorf("thread %s: %d of %d samples name its own sub (under its thread's entry sub), want >= 95%%; e.g.\n%s",
						which, own[which], all[which], strings.Join(bad, "\n"))
				}
			}
		})
	}
}

// A Perl without a known layout (Debian's perl with its PL_version byte
// changed to 99: Perl itself never reads it) is reported once and its
// samples keep their native stacks, with no perl frame.
func TestPerlUnknownVersion(t *testing.T) {
	requireRoot(t)
	requireExe(t, "/usr/bin/perl")
	bin := filepath.Join(t.TempDir(), "perl")
	raw, err := os.ReadFile("/usr/bin/perl")
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open("/usr/bin/perl")
	if err != nil {
		t.Fatal(err)
	}
	syms, err := ef.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	patched := false
	for _, s := range syms {
		if s.Name != "PL_version" {
			continue
		}
		for _, p := range ef.Progs {
			if p.Type == elf.PT_LOAD && s.Value >= p.Vaddr && s.Value < p.Vaddr+p.Filesz {
				off := s.Value - p.Vaddr + p.Off
				if raw[off] != 36 {
					t.Fatalf("PL_version is %d, want 36", raw[off])
				}
				raw[off] = 99
				patched = true
			}
		}
	}
	ef.Close()
	if !patched {
		t.Fatal("no PL_version in /usr/bin/perl")
	}
	if err := os.WriteFile(bin, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	src, _ := filepath.Abs(filepath.Join(runtimesDir, "hot.pl"))
	w := startRuntime(t, nil, bin, src, "30")
	time.Sleep(500 * time.Millisecond)
	pid := w.cmd.Process.Pid
	rec := record(t, 6, 199, "--pid", itoa(pid))
	if !strings.Contains(rec.Stderr, "(0 with their own offsets, 1 unknown versions)") {
		t.Errorf("the unknown version is not reported once:\n%s", rec.Stderr)
	}
	p := decodeFile(t, rec.Path).ByPID(pid)
	// 100: a tenth of a CPU on a loaded machine is enough for the shape
	if p == nil || len(p.Samples) < 100 {
		t.Fatalf("too few samples of pid %d", pid)
	}
	n := 0
	for _, s := range p.Samples {
		if leafPerl(s) != nil {
			t.Fatalf("a perl frame from an unknown version: %s", s)
		}
		if frameNamed(s, "Perl_runops_standard") >= 0 && rooted(s, pid) {
			n++
		}
	}
	t.Logf("%d of %d samples native and rooted", n, len(p.Samples))
	if n < len(p.Samples)*90/100 {
		t.Errorf("only %d of %d samples keep whole native stacks", n, len(p.Samples))
	}
}
