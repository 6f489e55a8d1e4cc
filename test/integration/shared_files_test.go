// Identical files under other identities (a copy, another root's layer)
// are kept once: the recorder reads the symbols and unwind table of the
// first, finds the others' bytes equal (lib/files/file_table.c) and names
// their frames from it, each with its own mapping path.
package integration

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var sharedRe = regexp.MustCompile(`identical files: (\d+) kept once`)

// copyFile copies src to dst (a new inode), executable.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func startCmd(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	return cmd
}

// The same binary run from its build path, from a copy and from a copy in
// the Debian 13 root (chroot): with sharing, the two copies are found to
// be the first's bytes (files_shared >= 2) and every process's frames are
// named with its own mapping path; with OTELPROF_SHARE_FILES=0 nothing is
// shared and the frames are named the same.
func TestIdenticalFilesLoadedOnce(t *testing.T) {
	requireRoot(t)
	root := trixieRoot(t)
	exe := filepath.Join(buildDir(t), "workloads", "callgraph_fp")
	cp := filepath.Join(t.TempDir(), "callgraph_fp")
	copyFile(t, exe, cp)
	inRoot, err := os.MkdirTemp(filepath.Join(root, "tmp"), "otelprof-share-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(inRoot) })
	copyFile(t, exe, filepath.Join(inRoot, "callgraph_fp"))
	rootPath := "/" + strings.TrimPrefix(filepath.Join(inRoot, "callgraph_fp"), root+"/")

	for _, share := range []bool{true, false} {
		t.Run("share="+strconv.FormatBool(share), func(t *testing.T) {
			if !share {
				t.Setenv("OTELPROF_SHARE_FILES", "0")
			}
			procs := map[int]string{} // pid -> the path its mapping must name
			procs[startCmd(t, exe, "60").Process.Pid] = exe
			procs[startCmd(t, cp, "60").Process.Pid] = cp
			// maps names it as we see it, not as the chroot does.
			procs[startCmd(t, "chroot", root, rootPath, "60").Process.Pid] = filepath.Join(inRoot, "callgraph_fp")
			time.Sleep(300 * time.Millisecond)
			pids := make([]int, 0, len(procs))
			for pid := range procs {
				pids = append(pids, pid)
			}
			// Until each has run 1 s of CPU while sampling (at most
			// 40 s): the counts below are judged against that, not
			// against wall time, on a loaded host.
			const hz, wantCPU = 99, 1.0
			cpu0, cpu := map[int]float64{}, map[int]float64{}
			var from time.Time
			rec := recordUntil(t, func() {
				from = time.Now()
				for _, pid := range pids {
					cpu0[pid] = cpuSecondsOf(t, pid)
				}
			}, func() {
				for time.Since(from) < 40*time.Second {
					done := true
					for _, pid := range pids {
						cpu[pid] = cpuSecondsOf(t, pid) - cpu0[pid]
						done = done && cpu[pid] >= wantCPU
					}
					if done {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
			}, 45, hz)
			n := 0
			if m := sharedRe.FindStringSubmatch(rec.Stderr); m != nil {
				n, _ = strconv.Atoi(m[1])
			}
			t.Logf("files shared: %d", n)
			if share && n < 2 {
				t.Errorf("files_shared = %d, want >= 2 (the copy and the copy in the root)\n%s", n, rec.Stderr)
			}
			if !share && n != 0 {
				t.Errorf("files_shared = %d with OTELPROF_SHARE_FILES=0, want 0\n%s", n, rec.Stderr)
			}
			d := decodeFile(t, rec.Path)
			for pid, path := range procs {
				p := d.ByPID(pid)
				if p == nil {
					t.Errorf("pid %d (%s): no samples", pid, path)
					continue
				}
				named, wrongPath := 0, 0
				for _, s := range p.Samples {
					for _, f := range s.Frames {
						if f.Type == "native" && strings.HasPrefix(f.Function, "leaf_") {
							named++
							if f.Mapping != path {
								wrongPath++
							}
							break
						}
					}
				}
				// Judged against the process's own CPU time: the
				// three share 2 CPUs with whatever else runs.
				want := 0.8 * cpu[pid] * hz
				t.Logf("pid %d (%s): %d samples, %d with a named leaf, CPU %.2f s", pid, path, len(p.Samples), named, cpu[pid])
				if float64(named) < want {
					t.Errorf("pid %d (%s): %d samples name a leaf_* function, want >= %.0f (80%% of its CPU x Hz)", pid, path, named, want)
				}
				if wrongPath > 0 {
					t.Errorf("pid %d: %d leaf frames name another mapping path, want %s", pid, wrongPath, path)
				}
			}
		})
	}
}
