// SPDX-License-Identifier: Apache-2.0

package profilingmetricsconnector // import "github.com/libotelprofiler/libotelprofiler/ffi/profilingmetricsconnector"

import (
	"path"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/pprofile"
)

// Metric names and the attribute keys are those of Elastic's
// profilingmetrics connector, so that dashboards built on it work unchanged.
const (
	attrShlib       = "shlib_name"
	attrSyscall     = "syscall_name"
	attrKernelArea  = "kernel_area"
	attrKernelProto = "kernel_proto"
	attrKernelIO    = "kernel_io"

	frameTypeKey = "profile.frame.type"
)

type metricDef struct {
	name, desc string
}

var (
	metricUser   = metricDef{"samples.user.count", "Number of samples executing userspace code (self)"}
	metricKernel = metricDef{"samples.kernel.count", "Number of samples executing kernel code (self)"}

	// frameTypeMetric maps each profile.frame.type value to its metric.
	frameTypeMetric = map[string]metricDef{
		"kernel":  metricKernel,
		"native":  {"samples.native.count", "Number of samples executing native code (self)"},
		"jvm":     {"samples.jvm.count", "Number of samples executing HotSpot code (self)"},
		"cpython": {"samples.cpython.count", "Number of samples executing Python code (self)"},
		"go":      {"samples.go.count", "Number of samples executing Go code (self)"},
		"v8js":    {"samples.v8js.count", "Number of samples executing V8 JS code (self)"},
		"php":     {"samples.php.count", "Number of samples executing PHP code (self)"},
		"perl":    {"samples.perl.count", "Number of samples executing Perl code (self)"},
		"ruby":    {"samples.ruby.count", "Number of samples executing Ruby code (self)"},
		"dotnet":  {"samples.dotnet.count", "Number of samples executing Dotnet code (self)"},
		"rust":    {"samples.rust.count", "Number of samples executing Rust code (self)"},
		"beam":    {"samples.beam.count", "Number of samples executing Beam code (self)"},
	}

	metricByName = func() map[string]metricDef {
		m := map[string]metricDef{metricUser.name: metricUser}
		for _, d := range frameTypeMetric {
			m[d.name] = d
		}
		return m
	}()
)

func knownMetricNames() []string {
	out := make([]string, 0, len(metricByName))
	for n := range metricByName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

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

// shlibName returns the library name of a mapping file: "libssl" for
// /usr/lib/libssl.so.3; "" if the file is not a shared object.
func shlibName(file string) string {
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

// attrs is the attribute tuple of one data point.
type attrs struct {
	shlib, syscall, area, proto, io string
}

// frame is the resolved view of one location.
type frame struct {
	typ, fn, file string
}

// dict resolves dictionary indexes defensively: malformed input yields
// ok=false, never a panic.
type dict struct {
	d pprofile.ProfilesDictionary
}

func (x dict) str(i int32) string {
	t := x.d.StringTable()
	if i < 0 || int(i) >= t.Len() {
		return ""
	}
	return t.At(int(i))
}

func (x dict) frame(li int32) (frame, bool) {
	locs := x.d.LocationTable()
	if li < 0 || int(li) >= locs.Len() {
		return frame{}, false
	}
	loc := locs.At(int(li))
	var f frame
	at := x.d.AttributeTable()
	for _, ai := range loc.AttributeIndices().All() {
		if ai < 0 || int(ai) >= at.Len() {
			continue
		}
		kv := at.At(int(ai))
		if x.str(kv.KeyStrindex()) == frameTypeKey {
			f.typ = kv.Value().Str()
			break
		}
	}
	if _, ok := frameTypeMetric[f.typ]; !ok {
		return frame{}, false
	}
	switch f.typ {
	case "kernel":
		ft := x.d.FunctionTable()
		for _, ln := range loc.Lines().All() {
			if fi := ln.FunctionIndex(); fi > 0 && int(fi) < ft.Len() {
				if f.fn = x.str(ft.At(int(fi)).NameStrindex()); f.fn != "" {
					break
				}
			}
		}
	case "native":
		mt := x.d.MappingTable()
		if mi := loc.MappingIndex(); mi > 0 && int(mi) < mt.Len() {
			f.file = x.str(mt.At(int(mi)).FilenameStrindex())
		}
	}
	return f, true
}

// counts accumulates sample counts per metric and attribute tuple.
type counts map[string]map[attrs]int64

func (c counts) add(metric string, a attrs, n int64) {
	m := c[metric]
	if m == nil {
		m = map[attrs]int64{}
		c[metric] = m
	}
	m[a] += n
}

// classifySample attributes one sample (weight n) to the leaf frame's
// metrics. It returns false if the leaf frame has no known frame type.
func classifySample(x dict, stack []int32, n int64, out counts) bool {
	if len(stack) == 0 {
		return false
	}
	leaf, ok := x.frame(stack[0])
	if !ok {
		return false
	}
	if leaf.typ != "kernel" {
		out.add(metricUser.name, attrs{}, n)
		var a attrs
		if leaf.typ == "native" {
			a.shlib = shlibName(leaf.file)
		}
		out.add(frameTypeMetric[leaf.typ].name, a, n)
		return true
	}

	// Kernel leaf: walk the kernel part of the stack from the leaf up to the
	// syscall entry; keep the highest-priority class seen on the way.
	best := len(kernelClasses)
	var sys string
	for i, li := range stack {
		f := leaf
		if i > 0 {
			if f, ok = x.frame(li); !ok || f.typ != "kernel" {
				break
			}
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
		if sys = syscallName(f.fn); sys != "" {
			break
		}
	}
	a := attrs{syscall: sys}
	if best < len(kernelClasses) {
		k := kernelClasses[best]
		// A write(2) on a TCP socket can process incoming segments on the
		// way down; the syscall decides the direction.
		if sys == "write" && k.area == "network" && k.proto == "tcp" && k.io == "read" {
			k.io = "write"
		}
		a.area, a.proto, a.io = k.area, k.proto, k.io
	}
	out.add(metricKernel.name, a, n)
	return true
}

// classifyProfile adds the counts of every sample of p to out and returns
// the number of samples skipped for lack of frame information.
func classifyProfile(x dict, p pprofile.Profile, out counts) (skipped int) {
	st := x.d.StackTable()
	for _, s := range p.Samples().All() {
		n := int64(s.TimestampsUnixNano().Len())
		if n == 0 {
			n = 1
		}
		si := s.StackIndex()
		if si < 0 || int(si) >= st.Len() {
			skipped++
			continue
		}
		if !classifySample(x, st.At(int(si)).LocationIndices().AsRaw(), n, out) {
			skipped++
		}
	}
	return skipped
}
