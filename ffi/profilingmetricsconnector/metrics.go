// SPDX-License-Identifier: Apache-2.0

package profilingmetricsconnector // import "github.com/libotelprofiler/libotelprofiler/ffi/profilingmetricsconnector"

import "sort"

// Metric names and attribute keys of Elastic's profilingmetrics connector
// are kept, so that dashboards built on it work unchanged; the runtime and
// off-CPU metrics are this connector's own.
const (
	attrShlib          = "shlib_name"
	attrSyscall        = "syscall_name"
	attrKernelArea     = "kernel_area"
	attrKernelProto    = "kernel_proto"
	attrKernelIO       = "kernel_io"
	attrFrameType      = "frame_type"
	attrClassification = "classification"
	attrTypeUnit       = "profile.type_unit"
	attrRuntime        = "runtime"
	attrCategory       = "category"

	frameTypeKey = "profile.frame.type"
)

type metricKind int

const (
	kindSum   metricKind = iota // delta, monotonic
	kindGauge                   // Elastic's shape for the frame metrics
)

type metricDef struct {
	name, desc, unit string
	kind             metricKind
	enabled          bool // by default
}

var (
	metricUser   = metricDef{name: "samples.user.count", desc: "Number of samples executing userspace code (self)", unit: "1", enabled: true}
	metricKernel = metricDef{name: "samples.kernel.count", desc: "Number of samples executing kernel code (self)", unit: "1", enabled: true}

	// frameTypeMetric maps each profile.frame.type value to its metric.
	frameTypeMetric = map[string]metricDef{
		"kernel":  metricKernel,
		"native":  {name: "samples.native.count", desc: "Number of samples executing native code (self)", unit: "1", enabled: true},
		"jvm":     {name: "samples.jvm.count", desc: "Number of samples executing HotSpot code (self)", unit: "1", enabled: true},
		"cpython": {name: "samples.cpython.count", desc: "Number of samples executing Python code (self)", unit: "1", enabled: true},
		"go":      {name: "samples.go.count", desc: "Number of samples executing Go code (self)", unit: "1", enabled: true},
		"v8js":    {name: "samples.v8js.count", desc: "Number of samples executing V8 JS code (self)", unit: "1", enabled: true},
		"php":     {name: "samples.php.count", desc: "Number of samples executing PHP code (self)", unit: "1", enabled: true},
		"perl":    {name: "samples.perl.count", desc: "Number of samples executing Perl code (self)", unit: "1", enabled: true},
		"ruby":    {name: "samples.ruby.count", desc: "Number of samples executing Ruby code (self)", unit: "1", enabled: true},
		"dotnet":  {name: "samples.dotnet.count", desc: "Number of samples executing Dotnet code (self)", unit: "1", enabled: true},
		"rust":    {name: "samples.rust.count", desc: "Number of samples executing Rust code (self)", unit: "1", enabled: true},
		"beam":    {name: "samples.beam.count", desc: "Number of samples executing Beam code (self)", unit: "1", enabled: true},
	}

	// Inclusive metrics, per profile kind (profile.type_unit samples_count
	// or events_nanoseconds): the value is the profile's weight (samples,
	// or off-CPU nanoseconds) of the samples with at least one such frame.
	metricFrameType = metricDef{name: "samples.frame_type", kind: kindGauge, unit: "1",
		desc: "Weight of the samples with at least one frame of the type (inclusive)"}
	metricClassification = metricDef{name: "samples.classification", kind: kindGauge, unit: "1",
		desc: "Weight of the samples with at least one frame of the Go package or JVM class (inclusive)"}
	metricCustom = metricDef{name: "samples.custom_aggregation", kind: kindGauge, unit: "1", enabled: true,
		desc: "Weight of the samples with at least one frame matching the aggregation (inclusive)"}

	metricRuntime = metricDef{name: "samples.runtime.count", unit: "1", enabled: true,
		desc: "Number of samples in a runtime activity (GC, serialization, FFI), anywhere in the stack (inclusive)"}
	metricOffCPU = metricDef{name: "offcpu.time", unit: "ns", enabled: true,
		desc: "Off-CPU time by the leaf frame's classification (self)"}
	metricOffCPURuntime = metricDef{name: "offcpu.runtime.time", unit: "ns", enabled: true,
		desc: "Off-CPU time in a runtime activity (GC, serialization, FFI), anywhere in the stack (inclusive)"}

	metricByName = func() map[string]metricDef {
		m := map[string]metricDef{}
		for _, d := range []metricDef{metricUser, metricFrameType, metricClassification, metricCustom,
			metricRuntime, metricOffCPU, metricOffCPURuntime} {
			m[d.name] = d
		}
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
