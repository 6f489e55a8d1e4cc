// SPDX-License-Identifier: Apache-2.0

package profilingmetricsconnector // import "github.com/libotelprofiler/libotelprofiler/ffi/profilingmetricsconnector"

import (
	"regexp"
)

// Runtime-specific metrics (samples.runtime.count, offcpu.runtime.time):
// questions every team asks of its runtime, answered by default. A sample
// counts once per (runtime, category) whose rule matches any frame of its
// stack (inclusive: the cost of the GC includes everything the GC calls),
// or its thread.
//
// Categories: gc, serialization.json, serialization.protobuf, ffi (a call
// from a managed runtime into native code: cgo, ctypes/cffi/libffi, JNI,
// V8 API callbacks and N-API).
const (
	catGC       = "gc"
	catJSON     = "serialization.json"
	catProtobuf = "serialization.protobuf"
	catFFI      = "ffi"
)

// runtimeRule attributes samples to a (runtime, category). runtime ""
// means: the type of the matching frame when it is a managed runtime's
// (go, jvm, ...), else the nearest managed frame below it in the stack
// (its caller: cpython for ctypes' ffi_call), else "native".
type runtimeRule struct {
	category, runtime string
	frame             matcher        // frames; unset when thread is set
	thread            *regexp.Regexp // the sample's thread.name
}

// The patterns name each runtime's own functions as this library emits
// them: Go's from pclntab (package path + name), HotSpot's as
// package.Class.method, native C++ demangled (v8::internal::Scavenger::...),
// CPython's with the module file in Function.filename.
var builtinRuntimeRules = func() []runtimeRule {
	re := regexp.MustCompile
	types := func(ts ...string) map[string]bool {
		m := map[string]bool{}
		for _, t := range ts {
			m[t] = true
		}
		return m
	}
	native := types("native")
	goTypes := types("go", "native") // Go frames are typed go; a Go binary's cgo side native
	return []runtimeRule{
		// --- GC ---
		// HotSpot: collection runs on the JVM's GC threads (and, for a
		// stop-the-world pause of the serial collector, the VM thread in
		// the collector's code).
		// Thread names are the kernel's comm: 15 bytes at most ("G1 Young
		// RemSet Sampling" reads "G1 Young RemSet").
		{category: catGC, runtime: "jvm", thread: re(`^(GC Thread#\d+|G1 (Conc#\d+|Refine#\d+|Main Marker|Service|Young RemSet.*)|ParGC Thread#\d+|Z(Worker|Driver|Director|Unmapper)\b.*|Shenandoah\b.*|Concurrent Mark.*)$`)},
		{category: catGC, runtime: "jvm", frame: matcher{frameTypes: native, shlib: re(`^libjvm$`),
			function: re(`^(G1CollectedHeap|G1YoungCollector|G1FullCollector|G1ConcurrentMark|ParallelScavengeHeap|PSScavenge|PSParallelCompact|SerialHeap|GenCollectedHeap|DefNewGeneration|TenuredGeneration|ZCollectedHeap|ZDriver|ShenandoahHeap|VM_G1\w*|VM_GC\w*|VM_ParallelGC\w*|VM_GenCollect\w*|VM_CollectForAllocation)::`)}},
		// Go: the background mark workers, mark assists, sweeping and
		// scavenging, and the runtime's GC entry points.
		{category: catGC, runtime: "go", frame: matcher{frameTypes: goTypes,
			function: re(`^runtime\.(GC|gc(BgMarkWorker|AssistAlloc1?|Drain\w*|Start|MarkDone|MarkTermination|Sweep|ResetMarkState|WriteBarrier\w*)|markroot\w*|scanobject|scanblock|scanstack|greyobject|bgsweep|sweepone|bgscavenge|wbBufFlush1?)$`)}},
		// CPython: the cyclic collector (gc_collect_main 3.8-3.12,
		// gc_collect_region/young/increment 3.13+, their callers).
		{category: catGC, runtime: "cpython", frame: matcher{frameTypes: native,
			function: re(`^(gc_collect\w*|_PyGC_Collect\w*|PyGC_Collect|_Py_RunGC|collect_with_callback|collect_generations|deduce_unreachable\w*|move_unreachable)$`)}},
		// V8: scavenger (young generation), mark-compact and minor
		// mark-sweep, concurrent and incremental marking, sweeping, Oilpan.
		{category: catGC, runtime: "v8js", frame: matcher{frameTypes: native,
			function: re(`^(v8::internal::(Scavenger|ScavengerCollector|ScavengeJob|MarkCompactCollector|MinorMarkCompactCollector|MinorMarkSweepCollector|MinorGCJob|ConcurrentMarking|IncrementalMarking|MarkingBarrier|Sweeper|ArrayBufferSweeper|MarkingVisitorBase|MainMarkingVisitor|ConcurrentMarkingVisitor|YoungGenerationMarkingVisitor|Heap::(CollectGarbage|CollectAllGarbage|CollectAllAvailableGarbage|PerformGarbageCollection|Scavenge|MarkCompact))|cppgc::internal::(Marker|MarkerBase|ConcurrentMarker|Sweeper|Compactor|Heap::CollectGarbage))\b`)}},
		{category: catGC, runtime: "ruby", frame: matcher{frameTypes: native,
			function: re(`^(gc_start|gc_marks\w*|gc_mark_\w+|gc_sweep\w*|garbage_collect\w*|gc_compact\w*|rb_gc|rb_gc_start)$`)}},
		{category: catGC, runtime: "php", frame: matcher{frameTypes: native,
			function: re(`^(zend_gc_collect_cycles|gc_collect_cycles|zif_gc_collect_cycles)$`)}},
		{category: catGC, runtime: "dotnet", frame: matcher{frameTypes: native,
			function: re(`^(WKS|SVR)::gc_heap::`)}},

		// --- JSON ---
		{category: catJSON, frame: matcher{frameTypes: goTypes,
			function: re(`^(encoding/json|github\.com/(json-iterator/go|goccy/go-json|bytedance/sonic|mailru/easyjson|segmentio/encoding/json|valyala/fastjson))\.`)}},
		{category: catJSON, frame: matcher{frameTypes: types("jvm"),
			function: re(`^(com\.fasterxml\.jackson|com\.google\.gson|org\.json|jakarta\.json|javax\.json|com\.alibaba\.fastjson2?|com\.squareup\.moshi)\.`)}},
		{category: catJSON, runtime: "cpython", frame: matcher{frameTypes: types("cpython"), file: re(`(^|/)json/(__init__|encoder|decoder|scanner)\.py$`)}},
		{category: catJSON, runtime: "cpython", frame: matcher{frameTypes: native, shlib: re(`^_json\.`)}},
		{category: catJSON, runtime: "cpython", frame: matcher{frameTypes: native,
			function: re(`^(encoder_listencode_\w+|encoder_call|scanstring_unicode|scan_once_unicode|_parse_object_unicode|_parse_array_unicode|py_encode_basestring\w*|py_scanstring|write_newline_indent)$`)}},
		{category: catJSON, runtime: "v8js", frame: matcher{frameTypes: native,
			function: re(`^v8::internal::(JsonStringifier|JsonParser|JsonParseInternalizer|JsonStringify|JsonParse|Builtin_Json\w*)\b`)}},
		{category: catJSON, runtime: "v8js", frame: matcher{frameTypes: types("v8js"), function: re(`^JSON\.(parse|stringify)$`)}},
		{category: catJSON, runtime: "ruby", frame: matcher{frameTypes: types("ruby"), function: re(`^JSON(::|\.)`)}},
		{category: catJSON, runtime: "ruby", frame: matcher{frameTypes: native, function: re(`^(generate_json\w*|cParser_parse|JSON_parse_\w+|convert_UTF8_to_JSON\w*)$`)}},
		{category: catJSON, runtime: "php", frame: matcher{frameTypes: native, function: re(`^(php_json_\w+|zif_json_encode|zif_json_decode)$`)}},
		{category: catJSON, runtime: "perl", frame: matcher{frameTypes: types("perl", "native"), function: re(`^(JSON::(PP|XS)::|Cpanel::JSON::XS::)`)}},
		{category: catJSON, frame: matcher{frameTypes: native, shlib: re(`^lib(jansson|json-c|cjson|yajl|simdjson|yyjson|jsoncpp)$`)}},
		{category: catJSON, frame: matcher{frameTypes: native,
			function: re(`^(nlohmann::|simdjson::|rapidjson::|Json::(Reader|Writer|Value|StyledWriter|FastWriter|StreamWriter|CharReader)|yyjson_\w+|cJSON_\w+|json_object_\w+|json_tokener_\w+|json_dumps|json_loads|json_dump\w*|json_load\w*)\b`)}},

		// --- protobuf ---
		{category: catProtobuf, frame: matcher{frameTypes: goTypes,
			function: re(`^(google\.golang\.org/protobuf/|github\.com/golang/protobuf/|github\.com/gogo/protobuf/|github\.com/planetscale/vtprotobuf/)`)}},
		{category: catProtobuf, frame: matcher{frameTypes: types("jvm"), function: re(`^com\.google\.protobuf\.`)}},
		{category: catProtobuf, runtime: "cpython", frame: matcher{frameTypes: types("cpython"), file: re(`(^|/)google/protobuf/`)}},
		{category: catProtobuf, runtime: "cpython", frame: matcher{frameTypes: native, function: re(`^PyUpb_\w+`)}},
		{category: catProtobuf, frame: matcher{frameTypes: native, shlib: re(`^(libprotobuf|libprotobuf-lite|libprotobuf-c|libupb)$`)}},
		{category: catProtobuf, frame: matcher{frameTypes: native,
			function: re(`^(google::protobuf::|protobuf_c_\w+|_?upb_\w+)`)}},

		// --- FFI: a managed runtime calling native code ---
		{category: catFFI, runtime: "go", frame: matcher{frameTypes: goTypes, function: re(`^runtime\.cgocall$`)}},
		{category: catFFI, runtime: "cpython", frame: matcher{frameTypes: native,
			function: re(`^(_ctypes_callproc|_call_function_pointer|_cffi_call_python|_cffi_f_\w+|cdata_call)$`)}},
		{category: catFFI, runtime: "v8js", frame: matcher{frameTypes: native,
			function: re(`^(v8::internal::(FunctionCallbackArguments::Call|Builtin_HandleApiCall\w*|MaybeCallApiCallback\w*)|Builtins_CallApiCallback\w*|v8impl::\w+|napi_\w+)\b`)}},
		{category: catFFI, runtime: "php", frame: matcher{frameTypes: native, function: re(`^(zend_ffi_\w+|zif_ffi_\w+)$`)}},
		// libffi, whoever calls it (ctypes, Ruby's fiddle/ffi, PHP's FFI):
		// the runtime is the caller's.
		{category: catFFI, frame: matcher{frameTypes: native, function: re(`^ffi_call(_unix64|_SYSV|_int|_go|_efi64|_win64)?$`)}},
		// JNI is found by adjacency, not by name: see jniBoundary.
	}
}()

// managedTypes are the frame types of runtimes that call native code
// through an FFI; "native" and "kernel" are not.
var managedTypes = map[string]bool{
	"go": true, "jvm": true, "cpython": true, "v8js": true, "ruby": true,
	"php": true, "perl": true, "dotnet": true, "beam": true,
}

// jniBoundary: a native frame outside libjvm called directly by a Java
// frame is a JNI native method (the JDK's own libjava, libnio, ... and
// applications' libraries alike; code in no shared object, such as the
// JVM's stubs, is not). callee is leafward of caller.
func jniBoundary(callee, caller *locInfo) bool {
	return caller.typ == "jvm" && callee.typ == "native" && callee.shlib != "" && callee.shlib != "libjvm"
}

// A location's and a thread's matches are bit sets of these rules.
func init() {
	if len(builtinRuntimeRules) >= 63 {
		panic("profilingmetricsconnector: more builtin runtime rules than bits in a match set")
	}
}
