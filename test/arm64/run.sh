#!/usr/bin/env bash
# The arm64 smoke test: boots each arm64 kernel under qemu-system-aarch64
# (TCG: software emulation) with initramfs.sh's root, which records the
# guest with the arm64 build (guest.sh), and judges the console
# (judge.py). One line per kernel.
#   run.sh BUILD_DIR KERNEL_CACHE SECONDS VERSION...
set -euo pipefail
build=$1 cache=$2 seconds=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
bash "$here/initramfs.sh" "$build" "$cache/root.cpio.gz"
fail=0
for v in "$@"; do
	res=$cache/results/$v
	rm -rf "$res" && mkdir -p "$res"
	start=$(date +%s)
	# pauth-impdef: pointer authentication stays on (arm64 user space uses
	# it) at a third of plain -cpu max's emulation cost.
	timeout 600 qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on -smp 2 -m 1024 \
		-accel tcg -nographic -no-reboot -kernel "$cache/$v/vmlinuz" -initrd "$cache/root.cpio.gz" \
		-append "console=ttyAMA0 quiet panic=-1 otelprof.seconds=$seconds" >"$res/console.log" 2>&1 || true
	python3 "$here/judge.py" "$v" "$res/console.log" || fail=1
	echo "  ($(($(date +%s) - start)) s; console: $res/console.log)"
done
exit $fail
