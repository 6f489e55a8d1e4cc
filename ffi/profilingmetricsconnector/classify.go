// SPDX-License-Identifier: Apache-2.0

package profilingmetricsconnector // import "github.com/libotelprofiler/libotelprofiler/ffi/profilingmetricsconnector"

import (
	"strings"
)

// kernelClass is one kernel activity class; the order of kernelClasses is
// the priority order (earlier wins when frames of a stack match several).
type kernelClass struct {
	area, proto, io string
	prefixes        []string // function name starts with one of these
	contains        []string // or contains one of these
}

var kernelClasses = []kernelClass{
	{area: "network", proto: "tcp", io: "read", prefixes: []string{"tcp_recvmsg", "tcp_read", "tcp_rcv", "tcp_v4_rcv", "tcp_v6_rcv"}},
	{area: "network", proto: "tcp", io: "write", prefixes: []string{"tcp_sendmsg", "tcp_transmit", "tcp_write", "tcp_push", "tcp_sendpage"}},
	{area: "network", proto: "udp", io: "read", prefixes: []string{"udp_recvmsg", "udp_read", "udp_rcv", "udp_v4_rcv", "udp_v6_rcv"}},
	{area: "network", proto: "udp", io: "write", prefixes: []string{"udp_sendmsg", "udp_write", "udp_push", "udp_sendpage"}},
	{area: "ipc", io: "read", prefixes: []string{"pipe_read", "eventfd_read", "unix_stream_read_generic", "unix_stream_recvmsg"}},
	{area: "ipc", io: "write", prefixes: []string{"pipe_write", "eventfd_write", "unix_stream_write_generic", "unix_stream_sendmsg"}},
	{area: "network", proto: "other", io: "read", prefixes: []string{"sock_recvmsg", "__sock_recvmsg", "sock_read_iter"}},
	{area: "network", proto: "other", io: "write", prefixes: []string{"sock_sendmsg", "__sock_sendmsg", "sock_write_iter"}},
	{area: "disk", io: "read", prefixes: []string{"ext4_file_read_iter", "xfs_file_read_iter", "btrfs_file_read_iter", "filemap_read", "generic_file_read_iter"}},
	{area: "disk", io: "write", prefixes: []string{"ext4_file_write_iter", "xfs_file_write_iter", "btrfs_file_write_iter", "filemap_write", "generic_file_write_iter", "writeback_sb_inodes"}},
	{area: "memory", prefixes: []string{"do_mmap", "do_anonymous_page", "handle_mm_fault", "alloc_pages", "free_pages"}, contains: []string{"do_munmap", "mmap_", "madvise"}},
	{area: "synchronization", prefixes: []string{"schedule", "wake_up_", "wake_q_"}, contains: []string{"futex", "__schedule"}},
}

func (k *kernelClass) matches(fn string) bool {
	for _, p := range k.prefixes {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	for _, c := range k.contains {
		if strings.Contains(fn, c) {
			return true
		}
	}
	return false
}

// syscallName extracts "write" from __x64_sys_write, __arm64_sys_write or
// ksys_write: the word characters after the prefix ("" if fn is not a
// syscall entry point).
func syscallName(fn string) string {
	for _, p := range []string{"__x64_sys_", "__arm64_sys_", "ksys_"} {
		if rest, ok := strings.CutPrefix(fn, p); ok {
			n := 0
			for n < len(rest) && isWordByte(rest[n]) {
				n++
			}
			if n > 0 {
				return rest[:n]
			}
		}
	}
	return ""
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// classification is the samples.classification value of a frame: the Go
// package of a go frame (github.com/x/y for github.com/x/y.(*T).M), the
// class of a jvm frame (pkg.Class for pkg.Class.method, as the library
// names them; a "ret pkg.Class.method(args)" form is accepted too).
func classification(typ, fn string) string {
	switch typ {
	case "go":
		slash := strings.LastIndexByte(fn, '/')
		if dot := strings.IndexByte(fn[slash+1:], '.'); dot >= 0 {
			return fn[:slash+1+dot]
		}
		return fn
	case "jvm":
		if i := strings.IndexByte(fn, '('); i >= 0 {
			fn = fn[:i]
		}
		fn = strings.TrimSpace(fn)
		if i := strings.LastIndexByte(fn, ' '); i >= 0 {
			fn = fn[i+1:]
		}
		if i := strings.LastIndexByte(fn, '.'); i > 0 {
			return fn[:i]
		}
		return fn
	}
	return ""
}

// attrs is the attribute tuple of one data point ("" = absent).
type attrs struct {
	shlib, syscall, area, proto, io     string
	frameType, classification, typeUnit string
	runtime, category                   string
}

// leafAttrs classifies a stack by its leaf frame (self): the frame type,
// the library of a native leaf, and for a kernel leaf the syscall and the
// kernel class found between the leaf and the syscall entry. ok is false
// when the leaf has no known frame type.
func leafAttrs(p *payload, stack []int32) (typ string, a attrs, ok bool) {
	if len(stack) == 0 {
		return "", a, false
	}
	leaf := p.loc(stack[0])
	if leaf == nil || !leaf.ok {
		return "", a, false
	}
	if leaf.typ != "kernel" {
		if leaf.typ == "native" {
			a.shlib = leaf.shlib
		}
		return leaf.typ, a, true
	}
	// Walk the kernel part of the stack from the leaf up to the syscall
	// entry; keep the highest-priority class seen on the way.
	best := len(kernelClasses)
	for _, li := range stack {
		f := p.loc(li)
		if f == nil || f.typ != "kernel" {
			break
		}
		if f.fn == "" {
			continue
		}
		for ci := 0; ci < best; ci++ {
			if kernelClasses[ci].matches(f.fn) {
				best = ci
				break
			}
		}
		if a.syscall = syscallName(f.fn); a.syscall != "" {
			break
		}
	}
	if best < len(kernelClasses) {
		k := kernelClasses[best]
		// A write(2) on a TCP socket can process incoming segments on the
		// way down; the syscall decides the direction.
		if a.syscall == "write" && k.area == "network" && k.proto == "tcp" && k.io == "read" {
			k.io = "write"
		}
		a.area, a.proto, a.io = k.area, k.proto, k.io
	}
	return "kernel", a, true
}
