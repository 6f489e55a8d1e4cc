#!/usr/bin/env bash
# Checks that `make arm64` built for arm64, from the files alone (no arm64
# CPU needed):
#   check_build.sh BUILD_DIR [KERNEL_BTF...]   (build/arm64, arm64 kernels' BTF)
# - the library and CLI are aarch64 ELF; the library's soname is
#   libotelprofiler.so.0, the CLI needs it and finds it beside itself;
# - the BPF object is BPF ELF whose BTF holds the arm64 struct pt_regs
#   (pc, pstate; no x86 ip/bp), i.e. its CO-RE reads name arm64 fields;
# - its CO-RE relocations resolve against each arm64 kernel's BTF and
#   name pt_regs.pc/regs/sp and thread.uw.tp_value (bpftool gen
#   min_core_btf keeps just the fields they use, and fails on one libbpf
#   cannot apply);
# - the library embeds exactly that object (the skeleton);
# - the collector is an aarch64 Go binary built with CGO_ENABLED=0.
set -euo pipefail
b=$1
shift
fail=0
ok() { echo "arm64 build: ok   $*"; }
bad() { echo "arm64 build: FAIL $*"; fail=1; }

machine() { readelf -h "$1" | sed -n 's/^ *Machine: *//p'; }

so=$b/libotelprofiler.so.0
[ "$(machine "$so")" = AArch64 ] && ok "$so: $(file -bL "$so" | cut -d, -f1-2)" || bad "$so: machine $(machine "$so")"
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libotelprofiler.so.0 ] && ok "soname $soname" || bad "soname '$soname'"

cli=$b/otelprof
[ "$(machine "$cli")" = AArch64 ] && ok "$cli: $(file -b "$cli" | cut -d, -f1-2)" || bad "$cli: machine $(machine "$cli")"
readelf -d "$cli" | grep -q 'NEEDED.*\[libotelprofiler.so.0\]' && ok "otelprof needs libotelprofiler.so.0" ||
	bad "otelprof does not need libotelprofiler.so.0"
readelf -d "$cli" | grep -Eq '(RPATH|RUNPATH).*\[\$ORIGIN\]' && ok "otelprof runpath \$ORIGIN" || bad "otelprof has no \$ORIGIN runpath"

obj=$b/bpf/profiler.bpf.o
[ "$(machine "$obj")" = "Linux BPF" ] && ok "$obj: machine Linux BPF" || bad "$obj: machine $(machine "$obj")"
# The members of the object's struct pt_regs, from its BTF (the anonymous
# union's struct holds arm64's pc/sp/pstate).
btf=$(bpftool btf dump file "$obj" format raw)
members=$(echo "$btf" | awk '/^\[[0-9]+\] /{in_s=0} /STRUCT .pt_regs. /{in_s=1; next} in_s' | grep -o "^\s*'[a-z_0-9]*'" | tr -d " '\t" | tr '\n' ' ')
user_pt=$(echo "$btf" | grep -c "STRUCT 'user_pt_regs'" || true)
case " $members " in
*" orig_x0 "*) ok "BTF: struct pt_regs { $members} (arm64), user_pt_regs present: $user_pt" ;;
*) bad "BTF: struct pt_regs { $members} is not arm64's" ;;
esac
echo "$btf" | awk '/^\[[0-9]+\] /{in_s=0} /STRUCT .pt_regs. /{in_s=1; next} in_s' | grep -Eq "'(ip|bp|cs)'" &&
	bad "BTF: x86_64 pt_regs fields in the object" || true
min=$(mktemp)
trap 'rm -f "$min"' EXIT
for kbtf in "$@"; do
	k=$(basename "$(dirname "$kbtf")")
	if ! bpftool gen min_core_btf "$kbtf" "$min" "$obj" 2>"$min.err"; then
		bad "CO-RE against arm64 $k: $(tail -2 "$min.err" | tr '\n' ' ')"
		continue
	fi
	rm -f "$min.err"
	used=$(bpftool btf dump file "$min" format c)
	regs=$(echo "$used" | sed -n '/^struct pt_regs {/,/^};/p' | grep -Eo '\b(regs\[31\]|sp|pc|pstate);' | tr -d ';' | sort | tr '\n' ' ')
	tp=$(echo "$used" | grep -c 'tp_value;' || true)
	[ "$regs" = "pc regs[31] sp " ] && [ "$tp" -ge 1 ] && ok "CO-RE against arm64 $k: pt_regs { $regs}, tp_value" ||
		bad "CO-RE against arm64 $k: pt_regs { $regs}, tp_value $tp"
done
python3 -c 'import sys; sys.exit(0 if open(sys.argv[2], "rb").read() in open(sys.argv[1], "rb").read() else 1)' \
	"$so" "$obj" && ok "the library embeds $obj ($(stat -c %s "$obj") bytes)" || bad "the library does not embed $obj"

col=$b/otelcol-profiler
if [ -e "$col" ]; then
	[ "$(machine "$col")" = AArch64 ] && ok "$col: $(file -b "$col" | cut -d, -f1-2,5)" || bad "$col: machine $(machine "$col")"
	# purego without cgo still links dynamically (it imports dlopen from
	# libdl.so.2): the build settings say whether cgo was off.
	settings=$(go version -m "$col" | grep -E 'build\s+(CGO_ENABLED|GOARCH)=' | awk '{print $2}' | sort | tr '\n' ' ')
	[ "$settings" = "CGO_ENABLED=0 GOARCH=arm64 " ] && ok "$col: go build $settings" || bad "$col: go build settings '$settings'"
else
	bad "$col missing"
fi
exit $fail
