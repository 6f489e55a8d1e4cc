// SPDX-License-Identifier: Apache-2.0

// Package fakelib builds testdata/fakelib/fakelib.c, a fake libotelprofiler
// implementing the C ABI without BPF, for tests.
package fakelib // import "github.com/libotelprofiler/libotelprofiler/ffi/internal/fakelib"

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"go.opentelemetry.io/collector/pdata/pprofile"
)

// Source returns the path of fakelib.c.
func Source() string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "..", "testdata", "fakelib", "fakelib.c")
}

// Build compiles the fake library into a fresh temporary directory, which is
// also its control directory (payload.bin, samples, start_error, poll_error,
// log). A missing C compiler fails the test: it is never skipped.
func Build(tb testing.TB) (lib, dir string) {
	tb.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		tb.Fatalf("a C compiler (cc) is required to build the fake libotelprofiler: %v", err)
	}
	dir = tb.TempDir()
	lib = filepath.Join(dir, "libotelprofiler.so")
	cmd := exec.Command(cc, "-shared", "-fPIC", "-O1", "-Wall", "-Werror",
		"-DFAKE_DIR=\""+dir+"\"", "-o", lib, Source())
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building the fake library: %v\n%s", err, out)
	}
	return lib, dir
}

// WritePayload serializes p as the payload every poll returns, reported as
// samples samples.
func WritePayload(tb testing.TB, dir string, p pprofile.Profiles, samples int) []byte {
	tb.Helper()
	m := pprofile.ProtoMarshaler{}
	b, err := m.MarshalProfiles(p)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "payload.bin"), b, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "samples"), []byte(strconv.Itoa(samples)+"\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	return b
}
