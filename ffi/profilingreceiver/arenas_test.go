// SPDX-License-Identifier: Apache-2.0

package profilingreceiver

import "testing"

func TestMallocArenasUnlimited(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, true},
		{map[string]string{"MALLOC_ARENA_MAX": "1"}, false},
		{map[string]string{"MALLOC_ARENA_MAX": ""}, true},
		{map[string]string{"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}, false},
		{map[string]string{"GLIBC_TUNABLES": "glibc.malloc.tcache_count=0:glibc.malloc.arena_max=1"}, false},
		{map[string]string{"GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"}, true},
		{map[string]string{"GLIBC_TUNABLES": "glibc.malloc.arena_test=1"}, true},
	} {
		lookup := func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
		if got := mallocArenasUnlimited(lookup); got != c.want {
			t.Errorf("%v: %v, want %v", c.env, got, c.want)
		}
	}
}
