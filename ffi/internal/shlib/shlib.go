// SPDX-License-Identifier: Apache-2.0

// Package shlib names a shared library the way the profilingmetrics
// connector's shlib_name attribute does, so that the connector and the
// receiver's adaptive rules agree on "libz" for /usr/lib/.../libz.so.1.
package shlib // import "github.com/libotelprofiler/libotelprofiler/ffi/internal/shlib"

import (
	"path"
	"strings"
)

// Name returns the library name of a mapping file: the base name up to
// its last ".so" ("libssl" for /usr/lib/libssl.so.3), "" if the file is
// not a shared object (an executable, "[vdso]", "").
func Name(file string) string {
	base := path.Base(file)
	if file == "" || base == "." || base == "/" {
		return ""
	}
	i := strings.LastIndex(base, ".so")
	if i <= 0 {
		return ""
	}
	return base[:i]
}
