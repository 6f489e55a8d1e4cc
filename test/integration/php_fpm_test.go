// PHP-FPM: two workers of one pool, each running its own request, each
// with its own frames (one executor per worker process).
package integration

import (
	"encoding/binary"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const phpFPM82 = "/usr/sbin/php-fpm8.2" // php8.2-fpm (make deps)

// fcgiRecord is one FastCGI record of request 1.
func fcgiRecord(typ byte, content []byte) []byte {
	h := []byte{1, typ, 0, 1, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(h[4:], uint16(len(content)))
	return append(h, content...)
}

// fcgiStart sends one FastCGI request for script (the response is not
// read: the request runs while the test records); the connection stays
// open until the test ends.
func fcgiStart(t *testing.T, sock, script, query string) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("connect %s: %v", sock, err)
	}
	t.Cleanup(func() { c.Close() })
	var params []byte
	for _, kv := range [][2]string{{"SCRIPT_FILENAME", script}, {"QUERY_STRING", query},
		{"REQUEST_METHOD", "GET"}, {"SERVER_PROTOCOL", "HTTP/1.1"}} {
		params = append(params, byte(len(kv[0])), byte(len(kv[1])))
		params = append(params, kv[0]...)
		params = append(params, kv[1]...)
	}
	var msg []byte
	msg = append(msg, fcgiRecord(1, []byte{0, 1, 0, 0, 0, 0, 0, 0})...) // BEGIN_REQUEST, responder
	msg = append(msg, fcgiRecord(4, params)...)
	msg = append(msg, fcgiRecord(4, nil)...)
	msg = append(msg, fcgiRecord(5, nil)...) // empty stdin
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
}

// The workers of pid's pool (its children).
func fpmWorkers(t *testing.T, master int) []int {
	t.Helper()
	raw, err := os.ReadFile("/proc/" + itoa(master) + "/task/" + itoa(master) + "/children")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(raw)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// Debian 12's php8.2-fpm on the host, Debian 13's php-fpm8.4 in its root
// (under chroot).
func TestPHPFPMWorkers(t *testing.T) {
	requireRoot(t)
	for _, v := range []string{"8.2", "8.4"} {
		v := v
		t.Run(v, func(t *testing.T) { fpmWorkersJudged(t, v) })
	}
}

func fpmWorkersJudged(t *testing.T, v string) {
	// dir: the pool's files as the host sees them; in: as FPM sees them
	var dir, in string
	var cmd []string
	if v == "8.2" {
		requireExe(t, phpFPM82)
		dir = t.TempDir()
		in = dir
		cmd = []string{phpFPM82}
	} else {
		copyPHPWorkload(t)
		in = filepath.Join(phpChrootIn, "fpm84")
		dir = filepath.Join(trixieRoot(t), in)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		cmd = []string{"/usr/sbin/chroot", trixieRoot(t), "php-fpm8.4"}
	}
	for _, x := range []string{"a", "b"} {
		b, err := os.ReadFile(filepath.Join(runtimesDir, "fpm_"+x+".php"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "fpm_"+x+".php"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(dir, "fpm.sock")
	_ = os.Remove(sock) // a run killed before its cleanup
	conf := filepath.Join(dir, "fpm.conf")
	if err := os.WriteFile(conf, []byte(`[global]
error_log = `+in+`/fpm.log
daemonize = no
[pool]
listen = `+in+`/fpm.sock
pm = static
pm.max_children = 2
request_terminate_timeout = 60
`), 0o644); err != nil {
		t.Fatal(err)
	}
	fpm := exec.Command(cmd[0], append(cmd[1:], "-F", "-R", "-n", "-y", filepath.Join(in, "fpm.conf"))...)
	if err := fpm.Start(); err != nil {
		t.Fatal(err)
	}
	var workers []int
	t.Cleanup(func() {
		// the workers first: a killed master leaves them running
		for _, w := range workers {
			_ = syscall.Kill(w, syscall.SIGKILL)
		}
		_ = fpm.Process.Kill()
		_, _ = fpm.Process.Wait()
	})
	// The master listens before it forks its workers: wait for both
	// the socket and the pool's two children.
	for i := 0; i < 200; i++ {
		_, err := os.Stat(sock)
		workers = fpmWorkers(t, fpm.Process.Pid)
		if err == nil && len(workers) == 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(workers) != 2 {
		t.Fatalf("want 2 workers, have %v", workers)
	}
	for _, x := range []string{"a", "b"} {
		fcgiStart(t, sock, filepath.Join(in, "fpm_"+x+".php"), "s=30")
		time.Sleep(200 * time.Millisecond) // the first worker takes it
	}
	time.Sleep(1500 * time.Millisecond)
	rec := record(t, 8, 199)
	d := decodeFile(t, rec.Path)
	seen := map[string]int{}
	for _, pid := range workers {
		p := d.ByPID(pid)
		// 60: a loaded 2-CPU machine gives each worker a fraction of
		// a CPU; enough for the judgement below
		if p == nil || len(p.Samples) < 60 {
			log, _ := os.ReadFile(filepath.Join(dir, "fpm.log"))
			t.Fatalf("too few samples of worker %d (%v); fpm log:\n%s", pid, p != nil, log)
		}
		// Workers running when recording starts are found at their
		// first sample: judged from 1 s after it (as TestPHPFrames).
		first, n := ^uint64(0), 0
		for _, s := range p.Samples {
			if s.TimeNs < first {
				first = s.TimeNs
			}
		}
		count, inBody := map[string]int{}, map[string]int{}
		for _, s := range p.Samples {
			if s.TimeNs < first+1e9 {
				continue
			}
			n++
			for _, name := range []string{"fpm_hot_a", "fpm_hot_b"} {
				if _, f := phpFrame(s, name); f != nil {
					count[name]++
					if !strings.HasSuffix(f.Lines[0].Filename, "/fpm_"+name[len(name)-1:]+".php") {
						t.Errorf("worker %d: %s in %s", pid, name, f.Lines[0].Filename)
					}
					// the running line: inside the body, below
					// the signature (start line)
					if l := f.Lines[0]; l.Line > l.StartLine && l.Line <= l.StartLine+5 {
						inBody[name]++
					}
				}
			}
		}
		t.Logf("worker %d: %d samples from 1 s after its first, %v, lines inside the body %v", pid, n, count, inBody)
		if len(count) != 1 {
			t.Errorf("worker %d: want the frames of one request, have %v", pid, count)
		}
		for name, c := range count {
			if c < n*95/100 {
				t.Errorf("worker %d: %s in %d of %d samples, want >= 95%%", pid, name, c, n)
			}
			if inBody[name] < c*95/100 {
				t.Errorf("worker %d: %s at a line inside its body in %d of %d samples, want >= 95%%", pid, name, inBody[name], c)
			}
			seen[name]++
		}
	}
	if seen["fpm_hot_a"] != 1 || seen["fpm_hot_b"] != 1 {
		t.Errorf("each request in its own worker: %v", seen)
	}
}
