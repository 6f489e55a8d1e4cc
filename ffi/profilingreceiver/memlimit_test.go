// SPDX-License-Identifier: Apache-2.0

package profilingreceiver

import (
	"math"
	"os"
	"runtime/debug"
	"testing"
)

// unsetEnv removes key for the test, restoring it afterwards.
func unsetEnv(t *testing.T, key string) {
	t.Helper()
	old, had := os.LookupEnv(key)
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if had {
			_ = os.Setenv(key, old)
		}
	})
}

// The receiver sets the Go memory limit only where nothing else did.
func TestGoMemoryLimitOnlyWhenUnset(t *testing.T) {
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) })

	unsetEnv(t, "GOMEMLIMIT")
	debug.SetMemoryLimit(math.MaxInt64)
	if got := applyGoMemoryLimit(0); got != defaultGoMemoryLimitMiB<<20 {
		t.Errorf("no limit anywhere: set %d, want the default %d", got, defaultGoMemoryLimitMiB<<20)
	}
	if got := debug.SetMemoryLimit(-1); got != defaultGoMemoryLimitMiB<<20 {
		t.Errorf("runtime limit %d after the default", got)
	}
	if got := applyGoMemoryLimit(100); got != 0 || debug.SetMemoryLimit(-1) != defaultGoMemoryLimitMiB<<20 {
		t.Errorf("a limit already set was replaced (set %d)", got)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	if got := applyGoMemoryLimit(100); got != 100<<20 {
		t.Errorf("go_memory_limit_mib 100: set %d", got)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	if got := applyGoMemoryLimit(-1); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("go_memory_limit_mib -1 set a limit (%d)", got)
	}

	// GOMEMLIMIT in the environment, even "off", is the user's choice.
	t.Setenv("GOMEMLIMIT", "off")
	if got := applyGoMemoryLimit(0); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("GOMEMLIMIT=off: set %d", got)
	}
}
