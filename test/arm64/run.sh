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
# The CPython guest (python.sh, judge_python.py) on PY_KERNELS, recording
# PY_SECONDS.
py_kernels=${ARM64_PY_KERNELS-6.1 6.12}
py_seconds=${ARM64_PY_SECONDS:-30}
[ -z "$py_kernels" ] || bash "$here/python.sh" "$cache/root.cpio.gz" "$cache/root-python.cpio.gz"
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
	case " $py_kernels " in
	*" $v "*)
		start=$(date +%s)
		timeout 600 qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on -smp 2 -m 1024 \
			-accel tcg -nographic -no-reboot -kernel "$cache/$v/vmlinuz" -initrd "$cache/root-python.cpio.gz" \
			-append "console=ttyAMA0 quiet panic=-1 otelprof.seconds=$py_seconds" >"$res/python.log" 2>&1 || true
		python3 "$here/judge_python.py" "$v" "$res/python.log" "$here/../workloads/runtimes/hot.py" || fail=1
		echo "  ($(($(date +%s) - start)) s; console: $res/python.log)"
		;;
	esac
done
exit $fail
