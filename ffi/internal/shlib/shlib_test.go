// SPDX-License-Identifier: Apache-2.0

package shlib

import "testing"

func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/lib/x86_64-linux-gnu/libssl.so.3": "libssl",
		"libc.so.6":                             "libc",
		"/usr/bin/app":                          "",
		"":                                      "",
		"/":                                     "",
		"[vdso]":                                "",
		".so":                                   "",
		"/lib/ld-linux-x86-64.so.2":             "ld-linux-x86-64",
		"/usr/lib/python3.11/lib-dynload/_json.cpython-311-x86_64-linux-gnu.so": "_json.cpython-311-x86_64-linux-gnu",
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
}
