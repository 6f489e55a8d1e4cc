package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A cgo binary as shipped (externally linked by gcc, stripped). Go 1.26
// leaves the function table's text start out and the C start-up code
// comes before the Go text, so the table's offsets count from
// moduledata.text, not from .text. The C function runs on the thread's g0
// stack, where asmcgocall moved sp; its callers are on the goroutine's
// stack, found by asmcgocall's frame pointer. Judged against the same
// build unstripped: every named frame of the binary named right, every Go
// frame named, and the C leaf's samples whole from runtime.goexit down.
func TestStrippedGoCgo(t *testing.T) {
	requireRoot(t)
	bin := filepath.Join(buildDir(t), "workloads", "native", "go_cgo")
	truth := goSymbols(t, bin+"_syms")
	cmd := nativeWorkload(t, "go_cgo", "12")
	pid := cmd.Process.Pid
	time.Sleep(300 * time.Millisecond)
	d := decodeFile(t, record(t, 6, 199, "--pid", itoa(pid)).Path)
	p := processOf(d, pid, "go_cgo")
	if p == nil {
		t.Fatalf("no samples for the cgo workload")
	}
	p = steadySamples(p, time.Second)
	// From the root: the goroutine, its call of C, the stack switch, the
	// C function.
	path := []string{"runtime.goexit", "runtime.main", "main.main", "main.loop", "main.callC",
		"runtime.cgocall", "runtime.asmcgocall", "spin_c"}
	var goFrames, goNamed, misnamed, inC, whole int
	var wrong, cut []string
	for _, s := range p.Samples {
		user := 0
		var names []string // the truth's, leaf first
		for _, f := range s.Frames {
			if f.Type == "kernel" {
				continue
			}
			addr := f.Address
			if user > 0 {
				addr-- // a return address: the call is before it
			}
			user++
			if f.Mapping != bin {
				names = append(names, "")
				continue
			}
			want := goSymAt(truth, addr)
			names = append(names, want)
			if strings.Contains(want, ".") { // a Go function
				goFrames++
				if outerName(f) == want {
					goNamed++
				}
			}
			if f.Function != "" && outerName(f) != want {
				misnamed++
				if len(wrong) < 5 {
					wrong = append(wrong, fmt.Sprintf("%#x: %q, want %q", f.Address, f.Function, want))
				}
			}
		}
		if len(names) == 0 || names[0] != "spin_c" {
			continue
		}
		inC++
		at := len(names) - 1
		for _, w := range path {
			for at >= 0 && names[at] != w {
				at--
			}
		}
		if at >= 0 && names[len(names)-1] == "runtime.goexit" {
			whole++
		} else if len(cut) < 3 {
			cut = append(cut, s.String())
		}
	}
	t.Logf("%d samples: %d in spin_c, %d of those whole from runtime.goexit through asmcgocall; %d of %d Go frames named, %d frames misnamed",
		len(p.Samples), inC, whole, goNamed, goFrames, misnamed)
	for _, w := range wrong {
		t.Logf("misnamed: %s", w)
	}
	if len(p.Samples) < 300 || inC*10 < len(p.Samples)*8 {
		t.Fatalf("%d of %d samples in spin_c, want >= 80%% of >= 300", inC, len(p.Samples))
	}
	if misnamed > 0 || goNamed*100 < goFrames*99 {
		t.Errorf("%d frames misnamed, %d of %d Go frames named right (want none misnamed, >= 99%% named)", misnamed, goNamed, goFrames)
	}
	if whole*100 < inC*95 {
		t.Errorf("%d of %d samples in spin_c whole from runtime.goexit through asmcgocall, want >= 95%%; e.g.\n%s",
			whole, inC, strings.Join(cut, "\n"))
	}
}
