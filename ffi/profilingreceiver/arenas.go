// SPDX-License-Identifier: Apache-2.0

package profilingreceiver // import "github.com/libotelprofiler/libotelprofiler/ffi/profilingreceiver"

import (
	"os"
	"strings"
)

// mallocArenasUnlimited says whether glibc may give each thread of this
// process a malloc arena of its own. The library limits glibc to one arena
// when it starts, but in the Collector the Go threads that call it have
// taken arenas before: six of them held 44 MiB of the collector's 67 MiB
// anonymous memory, one held 24 (docs/performance.md, "Real host: one
// malloc arena"). Only the environment, read by glibc at process start,
// prevents that: MALLOC_ARENA_MAX (not empty), or arena_max in
// GLIBC_TUNABLES.
func mallocArenasUnlimited(lookup func(string) (string, bool)) bool {
	if v, _ := lookup("MALLOC_ARENA_MAX"); v != "" {
		return false
	}
	t, _ := lookup("GLIBC_TUNABLES")
	return !strings.Contains(t, "glibc.malloc.arena_max=")
}

func mallocArenasUnlimitedHere() bool { return mallocArenasUnlimited(os.LookupEnv) }
