#!/usr/bin/env bash
# Seed corpora for the fuzzers, made from this host at test time.
#   test/fuzz/corpus.sh OUT_DIR
set -euo pipefail
out=$1
mkdir -p "$out"/{proc,kallsyms,elf_symbols,elf_file,cfi,context,jit,demangle,go_pclntab,xz,cpython,top,dwarf_lines,utf8,unwind_copy,hotspot,unwind_capture,environ,perl,php,ruby,v8,dynsym}
i=0
for pid in $(ls /proc | grep -E '^[0-9]+$' | head -20); do
	{ printf '\0'; cat "/proc/$pid/maps"; } > "$out/proc/maps-$pid" 2>/dev/null || true
	{ printf '\1'; cat "/proc/$pid/stat"; } > "$out/proc/stat-$pid" 2>/dev/null || true
	{ printf '\2'; cat "/proc/$pid/cgroup"; } > "$out/proc/cgroup-$pid" 2>/dev/null || true
done
printf '\2%s' "0::/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope" > "$out/proc/cgroup-docker"
head -c 200000 /proc/kallsyms > "$out/kallsyms/head"
grep '\[' /proc/kallsyms | head -2000 > "$out/kallsyms/modules" || true
# Small real ELF files (whole files: section headers sit at the end).
find /usr/bin /usr/lib/x86_64-linux-gnu -maxdepth 1 -type f -size -48k 2>/dev/null |
	while read -r f; do
		if [ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
			cp "$f" "$out/elf_symbols/$(basename "$f")"
			cp "$f" "$out/cfi/$(basename "$f")"
			i=$((i + 1))
			[ "$i" -ge 40 ] && break
		fi
	done
true
# aarch64 files (TLS variant I, aarch64 CFI): a few of Debian's arm64
# libraries (make arm64-deps) and the arm64 context publishers (the
# TLSDESC library, the local-exec executable) where make test-arm64 built
# them (OUT is BUILD/fuzz/corpus).
a64=$(dirname "$(dirname "$out")")/arm64/workloads
i=0
{ ls "$a64"/libotelctx_tlsdesc.so "$a64"/ctx_exe_le 2>/dev/null || true
  find /usr/lib/aarch64-linux-gnu -maxdepth 1 -type f -name '*.so*' -size -48k 2>/dev/null | head -100 || true; } |
	while read -r f; do
		if [ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
			cp "$f" "$out/elf_symbols/a64-$(basename "$f")"
			cp "$f" "$out/cfi/a64-$(basename "$f")"
			i=$((i + 1))
			[ "$i" -ge 12 ] && break
		fi
	done
true
# Environments: this host's processes', a hostile value, no final NUL.
for pid in $(ls /proc | grep -E '^[0-9]+$' | head -10); do
	cat "/proc/$pid/environ" > "$out/environ/env-$pid" 2>/dev/null || true
done
printf 'HOME=/root\0A=\033[31m\0DEPLOY_ENV=canary\0' > "$out/environ/hostile"
printf 'A=1\0X=unterminated' > "$out/environ/no-nul"
# UTF-8: valid text, a truncated sequence, an overlong form, a surrogate.
printf 'h\xc3\xa9llo \xe2\x82\xac' > "$out/utf8/valid"
printf 'ab\xe2\x82' > "$out/utf8/truncated"
printf '\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80' > "$out/utf8/invalid"
# Process context: a ProcessContext payload (service.name, service.version,
# threadlocal.attribute_key_map), the same behind an OTEL_CTX header at
# 0x10000 with its payload at 0x10020, and an Elastic v1 storage block.
pc='\x0a\x38\x0a\x1a\x0a\x0c\x73\x65\x72\x76\x69\x63\x65\x2e\x6e\x61\x6d\x65\x12\x0a\x0a\x08\x63\x68\x65\x63\x6b\x6f\x75\x74\x0a\x1a\x0a\x0f\x73\x65\x72\x76\x69\x63\x65\x2e\x76\x65\x72\x73\x69\x6f\x6e\x12\x07\x0a\x05\x31\x2e\x32\x2e\x33\x12\x3c\x0a\x1d\x74\x68\x72\x65\x61\x64\x6c\x6f\x63\x61\x6c\x2e\x61\x74\x74\x72\x69\x62\x75\x74\x65\x5f\x6b\x65\x79\x5f\x6d\x61\x70\x12\x1b\x2a\x19\x0a\x0c\x0a\x0a\x68\x74\x74\x70\x2e\x72\x6f\x75\x74\x65\x0a\x09\x0a\x07\x75\x73\x65\x72\x2e\x69\x64\x12\x2e\x0a\x1a\x74\x68\x72\x65\x61\x64\x6c\x6f\x63\x61\x6c\x2e\x73\x63\x68\x65\x6d\x61\x5f\x76\x65\x72\x73\x69\x6f\x6e\x12\x10\x0a\x0e\x74\x6c\x73\x64\x65\x73\x63\x5f\x76\x31\x5f\x64\x65\x76'
printf "\\x00$pc" > "$out/context/payload"
printf "\\x02OTEL_CTX\\x02\\x00\\x00\\x00\\xa8\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x20\\x00\\x01\\x00\\x00\\x00\\x00\\x00$pc" > "$out/context/header"
printf "\\x01\\x01\\x00\\x03\\x00\\x00\\x00svc\\x04\\x00\\x00\\x00prod\\x05\\x00\\x00\\x00/sock" > "$out/context/elastic"
# OTEP 4947 thread attributes: http.route=/pay!, user.id=42.
printf '\x04\x00\x05/pay!\x02\x0242' > "$out/context/attrs"
# /proc/PID/status, for the Elastic APM socket's owner check.
printf '\x05Name:\tjava\nUid:\t1000\t1001\t1000\t1000\n' > "$out/context/status"
# JIT symbols: a perf map (first byte even: perf map, split mid-file) and a
# jitdump with one JIT_CODE_LOAD and one JIT_CODE_MOVE (first byte odd).
printf '\x40%s\n%s\n%s\n' "7f0000001000 40 JS:*hot_a /tmp/x.js:1:15" \
	"7f0000002000 2e4 py::hot_b:/tmp/x.py" "1234 10 LazyCompile:~run node:internal/main:3" > "$out/jit/perf-map"
le32() { printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)); }
le64() { le32 $(($1 & 0xffffffff)); le32 $(($1 >> 32)); }
{
	printf '\x41'
	# header: magic, version, size, elf_mach, pad, pid, timestamp, flags
	printf "DTiJ$(le32 1)$(le32 40)$(le32 62)$(le32 0)$(le32 1)$(le64 0)$(le64 0)"
	# JIT_CODE_LOAD: id, size, time, pid, tid, vma, code_addr, code_size, index, name, code
	printf "$(le32 0)$(le32 73)$(le64 0)$(le32 1)$(le32 1)$(le64 4096)$(le64 4096)$(le64 64)$(le64 0)JS:*a /a.js:1:1\\x00\\xcc"
	# JIT_CODE_MOVE: id, size, time, pid, tid, vma, old, new, code_size, index
	printf "$(le32 1)$(le32 64)$(le64 0)$(le32 1)$(le32 1)$(le64 12288)$(le64 4096)$(le64 12288)$(le64 64)$(le64 0)"
} > "$out/jit/jitdump"
# fuzz_elf_file: the same ELF files as u64 apparent size || bytes; and the
# stack-copy unwinder: registers in the file mapping, two rows (CFA = sp +
# 8), a stack whose return address leads into the no-CFI mapping.
for f in "$out"/elf_symbols/*; do
	{ printf "$(le64 "$(stat -c %s "$f")")"; cat "$f"; } > "$out/elf_file/$(basename "$f")"
done
{
	printf "$(le64 16)$(le64 $((0x7ffc0000)))$(le64 $((0x7ffc0100)))\\x02\\x00"
	printf "$(le32 0)$(le32 8)\\x00\\x00\\x01\\x00$(le32 256)$(le32 8)\\x00\\x00\\x01\\x00"
	printf "$(le64 $((0x400050)))$(le64 $((0x7f0000000010)))$(le64 0)$(le64 0)"
} > "$out/unwind_copy/seed"
# Mangled C++ names (libstdc++'s exports) and Rust names of both schemes.
nm -D --defined-only /usr/lib/x86_64-linux-gnu/libstdc++.so.6 2>/dev/null | awk '$3 ~ /^_Z/ {print $3}' |
	head -300 | split -l 1 - "$out/demangle/cxx-" || true
printf '%s' '_ZN14rust_callgraph10leaf_heavy17h0123456789abcdefE' > "$out/demangle/rust-legacy"
printf '%s' '_RINvCsgFoJDcoYc6c_14rust_callgraph10leaf_heavyNtB2_5HeavyEB2_' > "$out/demangle/rust-v0"
# Go function tables: the go tool's own .gopclntab (a Go binary).
gobin=$(command -v go || true)
if [ -n "$gobin" ]; then
	objcopy -O binary --only-section=.gopclntab "$(readlink -f "$gobin")" "$out/go_pclntab/go-tool" 2>/dev/null || true
	head -c 65536 "$out/go_pclntab/go-tool" > "$out/go_pclntab/go-tool-head" 2>/dev/null || true
fi
# MiniDebugInfo: a small ELF, xz-compressed as .gnu_debugdata is.
for f in "$out"/elf_symbols/*; do
	xz -c "$f" > "$out/xz/$(basename "$f").xz" 2>/dev/null || true
	break
done
# CPython: a 3.9 lnotab, a 3.11 location table, a compact ASCII str (3.12).
printf '\x00\x01\x06\x01\x08\x02' > "$out/cpython/lnotab"
printf '\x02\x01\xe8\x02\xda\x04\x09\x99\x05\xf8\xf1\x44\x01\x00\x01\x02' > "$out/cpython/locations"
{ printf '\x03\x00'; head -c 16 /dev/zero; printf '\x05\x00\x00\x00\x00\x00\x00\x00'; head -c 8 /dev/zero; printf '\x64\x00\x00\x00\x00\x00\x00\x00hot_a'; } > "$out/cpython/str"
# otelprof top/convert: an empty recording (host resource, one profile) as
# protobuf, and a small OTLP/JSON line with a stack, a link and the
# string-table forms of resource attributes.
printf '%b' '\x0a\x65\x0a\x13\x0a\x11\x0a\x09\x68\x6f\x73\x74\x2e\x6e\x61\x6d\x65\x12\x04\x0a\x02\x76\x6d\x12\x4e\x0a\x18\x0a\x0f\x6c\x69\x62\x6f\x74\x65\x6c\x70\x72\x6f\x66\x69\x6c\x65\x72\x12\x05\x30\x2e\x31\x2e\x30\x12\x32\x0a\x04\x08\x01\x10\x02\x19\xa2\x78\x5c\x4f\xf1\xcb\xed\x18\x20\x8d\x90\x98\xfa\x03\x2a\x04\x08\x03\x10\x04\x30\x92\xc2\xe8\x04\x3a\x10\xe1\xf0\x74\xbc\xbd\xef\x35\x10\x96\x12\x2e\xde\x77\x1f\xeb\x29\x12\x30\x0a\x00\x12\x00\x1a\x00\x22\x00\x2a\x00\x2a\x07\x73\x61\x6d\x70\x6c\x65\x73\x2a\x05\x63\x6f\x75\x6e\x74\x2a\x03\x63\x70\x75\x2a\x0b\x6e\x61\x6e\x6f\x73\x65\x63\x6f\x6e\x64\x73\x32\x00\x3a\x00' > "$out/top/empty.otlp"
cat > "$out/top/small.jsonl" <<'JSON'
{"resourceProfiles":[{"resource":{"attributes":[{"keyStrindex":6,"value":{"intValue":"42"}},{"key":"process.executable.name","value":{"stringValue":"app"}}]},"scopeProfiles":[{"scope":{"name":"s"},"profiles":[{"sampleType":{"typeStrindex":1,"unitStrindex":2},"periodType":{"typeStrindex":3,"unitStrindex":4},"period":"10000000","timeUnixNano":"1","durationNano":"100","samples":[{"stackIndex":1,"attributeIndices":[1],"linkIndex":1,"timestampsUnixNano":["5","6"]},{"stackIndex":1,"values":["3"]}]}]}]}],"dictionary":{"mappingTable":[{},{"memoryStart":"4096","memoryLimit":"8192","filenameStrindex":5}],"locationTable":[{},{"mappingIndex":1,"address":"4660","lines":[{"functionIndex":1,"line":"7"},{"functionIndex":2}]},{"mappingIndex":1,"address":"4661"}],"functionTable":[{},{"nameStrindex":7},{"nameStrindex":8,"systemNameStrindex":8}],"linkTable":[{},{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708"}],"stringTable":["","samples","count","cpu","nanoseconds","/bin/app","process.pid","leaf","_ZN3foo3barEv","thread.id"],"attributeTable":[{},{"keyStrindex":9,"value":{"intValue":"43"}}],"stackTable":[{},{"locationIndices":[1,2]}]}}
JSON
# The file exporter's `format: proto`: the empty recording twice, each
# after its size (4 bytes, big-endian).
python3 -c 'import struct, sys; m = open(sys.argv[1], "rb").read(); open(sys.argv[2], "wb").write(2 * (struct.pack(">I", len(m)) + m))' \
	"$out/top/empty.otlp" "$out/top/batches.otlpb"

# Small programs with DWARF (-g), DWARF 5 and 4, with inlining.
if command -v clang >/dev/null; then
	printf 'static inline __attribute__((always_inline)) int f(int x){return x*3;}\nint g(int x){return f(x)+1;}\nint main(int c,char**v){return g(c);}\n' > "$out/dwarf_lines/src.c"
	clang -O2 -g -o "$out/dwarf_lines/g5" "$out/dwarf_lines/src.c" 2>/dev/null || true
	clang -O2 -gdwarf-4 -o "$out/dwarf_lines/g4" "$out/dwarf_lines/src.c" 2>/dev/null || true
	rm -f "$out/dwarf_lines/src.c"
fi
# HotSpot VMStructs: a memory image at 0x10000 whose first 15 words are
# libjvm's exported variables (as fuzz_hotspot.c reads it), with one field,
# one type and one constant in tables of libjvm's strides.
python3 - "$out/hotspot/tables" <<'PY'
import struct, sys
B = 0x10000
m = bytearray(0x2000)
def q(off, v): m[off:off+8] = struct.pack('<Q', v)
strs = [0x1800]
def s(t):
    at = strs[0]; m[at:at+len(t)+1] = t.encode() + b'\0'; strs[0] += len(t) + 1; return B + at
for i, v in enumerate([B+0x200, 0, 8, 24, 32, 40, 48, B+0x400, 0, 40, 48, B+0x600, 0, 8, 16]):
    q(8*i, v)
q(0x200, s('CodeBlob')); q(0x208, s('_frame_size')); q(0x220, 0x1c)
q(0x230, s('CodeCache')); q(0x238, s('_heaps')); m[0x248] = 1; q(0x258, B+0x1000)
q(0x400, s('HeapBlock')); q(0x428, 16)
q(0x600, s('ConstMethod::_has_linenumber_table')); q(0x608, 1)
open(sys.argv[1], 'wb').write(m)
PY
# An nmethod (fuzz_hotspot.c's 25 layout at the image's start) whose
# PcDesc leads to a chain of three scopes, Methods in its metadata.
python3 - "$out/hotspot/scopes" <<'PY'
import struct, sys
B = 0x10000
m = bytearray(0x1000)
def q(off, v): m[off:off+8] = struct.pack('<Q', v)
def d(off, v): m[off:off+4] = struct.pack('<I', v)
q(0, B+0x100); d(8, 0); d(12, 32); q(16, B+0x200); d(24, 40); d(28, 16)
d(32, 0x400); q(40, B+0x800)
d(0x100, 0x20); d(0x104, 7); d(0x110, 0x40); d(0x114, 10)
for at, (snd, mi, bci) in {1: (0, 3, 10), 4: (1, 2, 5), 7: (4, 1, 2), 10: (0, 3, 12)}.items():
    m[0x120+at:0x123+at] = bytes([snd+1, mi+1, bci+2])
q(0x210, B+0x900); q(0x218, B+0xa00); q(0x220, B+0x800)
open(sys.argv[1], 'wb').write(m)
PY
# V8: a heap image at 0x10000 in fuzz_v8.c's Node 20 layout: a
# JSFunction (its pointer the image's first word) -> SharedFunctionInfo
# named "hot_a" -> Script "/x.js" with a three-line source, a ScopeInfo
# variant (function variable, inferred name, position), a cons name.
python3 - "$out/v8" <<'PY'
import struct, sys
B = 0x10000
def image(scope):
    m = bytearray(0x800)
    def q(off, v): m[off:off+8] = struct.pack('<Q', v)
    def d(off, v): m[off:off+4] = struct.pack('<I', v)
    def h(off): return B + off + 1
    def smi(v): return (v & 0xffffffff) << 32
    for off, t in ((0x200, 180), (0x240, 8), (0x280, 176), (0x2c0, 1), (0x2e0, 250), (0x5c0, 1)):
        m[off+12:off+14] = struct.pack('<H', t)
    q(0, h(0x100))
    q(0x100, h(0x2c0)); q(0x118, h(0x300))
    q(0x300, h(0x200)); q(0x310, h(0x600) if scope else h(0x400)); q(0x320, h(0x500))
    def string(off, text):
        q(off, h(0x240)); d(off+12, len(text)); m[off+16:off+16+len(text)] = text
    string(0x400, b'hot_a'); string(0x440, b'/x.js'); string(0x480, b'a\nfunction hot_a() {}\nb\n')
    q(0x500, h(0x280)); q(0x510, h(0x440)); q(0x508, h(0x480))
    # ScopeInfo: flags, params, 0 context locals; name, index, inferred, start, end
    q(0x600, h(0x2e0)); q(0x608, smi(0)); q(0x610, smi(1)); q(0x618, smi(0))
    q(0x620, h(0x400)); q(0x628, smi(-1)); q(0x630, h(0x400)); q(0x638, smi(11)); q(0x640, smi(25))
    q(0x648, h(0x5c0)); q(0x650, 0); q(0x658, 0); q(0x660, 0)
    return m
open(sys.argv[1] + '/fn', 'wb').write(image(False))
open(sys.argv[1] + '/scope', 'wb').write(image(True))
PY
# ... and an optimized frame: JSFunction -> Code (Node 22's fields, the
# fallback's) -> its source position table, the word after: a pc in it.
python3 - "$out/v8/code" <<'PY'
import struct, sys
B = 0x10000
m = bytearray(0x800)
def q(off, v): m[off:off+8] = struct.pack('<Q', v)
def d(off, v): m[off:off+4] = struct.pack('<I', v)
def h(off): return B + off + 1
for off, t in ((0x3c0, 206), (0x4c0, 212)):
    m[off+12:off+14] = struct.pack('<H', t)
q(0, h(0x100)); q(8, B + 0x700 + 5)
q(0x100 + 48, h(0x380))
q(0x380, h(0x3c0)); q(0x390, h(0x440)); q(0x3a8, B + 0x700); d(0x3b0, 12); d(0x3b4, 0x40)
q(0x440, h(0x4c0)); q(0x448, 4 << 32); m[0x450:0x454] = bytes([0x00, 0x30, 0x08, 0x08])
open(sys.argv[1], 'wb').write(m)
PY
# ... and a position inside functions optimized code inlined: the
# image's first word a Code (Node 22's fields) -> its deoptimization data
# (a FixedArray: inlined function count, literals, inlining positions),
# the second a packed position in leaf, inlined into mid, inlined into the
# code's own function.
python3 - "$out/v8/inlined" <<'PY'
import struct, sys
B = 0x10000
m = bytearray(0x800)
def q(off, v): m[off:off+8] = struct.pack('<Q', v)
def h(off): return B + off + 1
def smi(v): return (v & 0xffffffff) << 32
def pos(off, id): return (id + 1) << 31 | (off + 1) << 1
maps = {180: 0x100, 206: 0x140, 186: 0x180, 174: 0x1c0, 247: 0x1e0}
for t, off in maps.items():
    m[off+12:off+14] = struct.pack('<H', t)
q(0, h(0x200)); q(8, pos(20, 1))
q(0x200, h(maps[206])); q(0x208, h(0x300))
q(0x300, h(maps[174])); q(0x308, smi(9)); q(0x318, smi(2)); q(0x320, h(0x400)); q(0x348, h(0x500))
q(0x400, h(maps[247])); q(0x408, smi(2)); q(0x410, B + 0x600 + 3); q(0x418, h(0x680))
q(0x500, h(maps[186])); q(0x508, smi(32))
q(0x510, pos(100, -1)); q(0x518, 0); q(0x520, pos(50, 0)); q(0x528, 1)
q(0x600, h(maps[180])); q(0x680, h(maps[180]))
open(sys.argv[1], 'wb').write(m)
PY
# Stack captures (test/tools/unwind_capture.h): one file mapping with a
# build id and one expected frame; the same with a vDSO image instead.
printf '\x4f\x54\x50\x55\x57\x43\x41\x50\x01\x00\x00\x00\x40\x00\x00\x00\x64\x00\x00\x00\x64\x00\x00\x00\x10\x10\x40\x00\x00\x00\x00\x00\x00\x00\x00\x00\xfd\x7f\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x34\x12\x40\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x40\x00\x00\x00\x00\x00\x00\x00\x50\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x08\x00\x00\x00\x00\x00\x00\x2a\x00\x00\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x09\x00\x08\x00\x2f\x62\x69\x6e\x2f\x74\x72\x75\x65\x30\x31\x32\x33\x61\x62\x63\x64\x10\x10\x40\x00\x00\x00\x00\x00\x04\x00\x6d\x61\x69\x6e' > "$out/unwind_capture/file"
printf '\x4f\x54\x50\x55\x57\x43\x41\x50\x01\x00\x00\x00\x40\x00\x00\x00\x64\x00\x00\x00\x64\x00\x00\x00\x10\x10\x40\x00\x00\x00\x00\x00\x00\x00\x00\x00\xfd\x7f\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x34\x12\x40\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x40\x00\x00\x00\x00\x00\x00\x00\x50\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x10\x00\x00\x00\x06\x00\x00\x00\x5b\x76\x64\x73\x6f\x5d\x7f\x45\x4c\x46\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x10\x10\x40\x00\x00\x00\x00\x00\x04\x00\x6d\x61\x69\x6e' > "$out/unwind_capture/vdso"

# A Perl frame (fuzz_perl.c: CV and COP offsets, then the memory from
# 0x10000 on; 5.36's layout): Hot::hot_a at x.pl line 42.
python3 - "$out/perl/frame" <<'PY'
import struct, sys
B = 0x10000
m = bytearray(0x810)
def put(off, fmt, *v): struct.pack_into(fmt, m, off, *v)
put(0, "<II", 0x100, 0x400)
put(0x100, "<QII", B + 0x200, 1, 13)              # CV: body, SVt_PVCV
put(0x200 + 56, "<Q", B + 0x300)                  # xcv_gv
put(0x300, "<QII", B + 0x380, 1, 9)               # GV: body, SVt_PVGV
put(0x380 + 32, "<QQ", B + 0x500, B + 0x600)      # name HEK, stash
put(0x500, "<Ii", 0, 5); m[0x508:0x50e] = b"hot_a\0"
put(0x600, "<QII", B + 0x680, 1, 12 | 0x2000000)  # stash: SVt_PVHV, OOK
put(0x680 + 32, "<Q", B + 0x700)                  # aux: name HEK
put(0x700, "<Ii", 0, 3); m[0x708:0x70c] = b"Hot\0"
put(0x400 + 36, "<I", 42)                         # COP: line
put(0x400 + 48, "<Q", B + 0x800)                  # file
m[0x800:0x805] = b"x.pl\0"
open(sys.argv[1], "wb").write(m)
PY
# A PHP process's memory as fuzz_php.c reads it (base 0x10000): byte 0
# picks 8.2 and a zend_function at 0x10000 + 0x40 (byte 0 >> 1), a user
# method Hot::hot_a of /w/hot.php, line 20; the version string parser sees
# the same bytes.
python3 - "$out/php/method" <<'PY'
import struct, sys
base = 0x10000
mem = bytearray(1024)
mem[0] = 0x80  # 8.2; the function at offset 0x40
def zstr(off, text):
    mem[off + 16:off + 24] = struct.pack("<Q", len(text))
    mem[off + 24:off + 24 + len(text)] = text
f = 0x40
mem[f] = 2  # ZEND_USER_FUNCTION
struct.pack_into("<Q", mem, f + 8, base + 0x200)    # function_name
struct.pack_into("<Q", mem, f + 16, base + 0x260)   # scope
struct.pack_into("<Q", mem, f + 152, base + 0x300)  # filename
struct.pack_into("<I", mem, f + 160, 20)            # line_start
zstr(0x200, b"hot_a")
struct.pack_into("<Q", mem, 0x260 + 8, base + 0x280)  # class name
zstr(0x280, b"Hot")
zstr(0x300, b"/w/hot.php")
open(sys.argv[1], "wb").write(mem)
PY
printf '8.4.16\x00' > "$out/php/version"
# The .dynsym reader (fuzz_dynsym.c): the small ELF files above, both
# architectures' (glibc's _thread_db_* symbols are in libc, too large for
# the fuzzer's inputs; the files' own symbols are read instead).
cp "$out"/elf_symbols/* "$out/dynsym/" 2>/dev/null || true
