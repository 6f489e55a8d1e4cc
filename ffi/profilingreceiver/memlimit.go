// SPDX-License-Identifier: Apache-2.0

package profilingreceiver // import "github.com/libotelprofiler/libotelprofiler/ffi/profilingreceiver"

import (
	"math"
	"os"
	"runtime/debug"
)

// defaultGoMemoryLimitMiB is the Go runtime's soft memory limit the
// receiver sets when nothing else set one (go_memory_limit_mib: 0). Without
// a limit the Go heap grows to twice its live size between collections
// (GOGC=100), and each poll's pdata is garbage by the next: a host whose
// payloads are big would keep twice the biggest. Measured at 19 Hz the
// heap of a profiles-only collector lives at 6-7 MB with a 13-15 MB goal
// (docs/performance.md, "The collector path"), so 64 MiB caps that growth
// with room to spare and leaves the runtime alone otherwise. The
// library's own memory (C, outside the Go heap) does not count against it.
const defaultGoMemoryLimitMiB = 64

// applyGoMemoryLimit sets the Go runtime's soft memory limit to mib MiB
// unless the process already has one: GOMEMLIMIT in its environment (even
// "off"), or a limit set by an earlier caller. mib < 0: leave the runtime
// alone. It returns the limit it set in bytes (0: none).
func applyGoMemoryLimit(mib int) int64 {
	if mib < 0 {
		return 0
	}
	if mib == 0 {
		mib = defaultGoMemoryLimitMiB
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return 0
	}
	// SetMemoryLimit(-1) reads the limit without changing it.
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return 0
	}
	limit := int64(mib) << 20
	debug.SetMemoryLimit(limit)
	return limit
}
