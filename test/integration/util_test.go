package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func itoa(i int) string { return strconv.Itoa(i) }

// cpuSeconds is utime+stime of a process, from /proc/PID/stat.
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	// fields[0] is field 3 (state): utime is field 14, stime field 15.
	ut, _ := strconv.ParseFloat(fields[11], 64)
	st, _ := strconv.ParseFloat(fields[12], 64)
	return (ut + st) / 100 // USER_HZ is 100 on Linux
}

// trixieRoot is the Debian 13 root with its runtimes (make trixie-root
// builds it; test-integration passes OTELPROF_TRIXIE_ROOT).
func trixieRoot(t *testing.T) string {
	t.Helper()
	root := os.Getenv("OTELPROF_TRIXIE_ROOT")
	if root == "" {
		root = "/var/cache/otelprof-test/trixie-root"
	}
	if _, err := os.Stat(filepath.Join(root, ".ok")); err != nil {
		t.Fatalf("no Debian 13 root at %s (make trixie-root builds it): %v", root, err)
	}
	return root
}
