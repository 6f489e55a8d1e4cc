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
# The other Node majors (nodes.sh, guest_nodes.sh, judge_node.py) in one
# guest on NODES_KERNELS, recording NODES_SECONDS; Node 22 is in the main
# guest on every kernel.
node_majors=${ARM64_NODE_MAJORS-}
nodes_kernels=${ARM64_NODES_KERNELS-6.12}
nodes_seconds=${ARM64_NODES_SECONDS:-45}
[ -z "$node_majors" ] || [ -z "$nodes_kernels" ] ||
	bash "$here/nodes.sh" "$cache/root.cpio.gz" "$cache/root-nodes.cpio.gz" \
		"${OTELPROF_RUNTIME_CACHE:-/var/cache/otelprof-test}" "$cache" $node_majors
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
	case " $nodes_kernels " in
	*" $v "*)
		[ -n "$node_majors" ] || continue
		start=$(date +%s)
		# 2 GiB: the four node binaries (~460 MB) live in the initramfs.
		timeout 600 qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on -smp 2 -m 2048 \
			-accel tcg -nographic -no-reboot -kernel "$cache/$v/vmlinuz" -initrd "$cache/root-nodes.cpio.gz" \
			-append "console=ttyAMA0 quiet panic=-1 otelprof.seconds=$nodes_seconds" >"$res/nodes.log" 2>&1 || true
		python3 "$here/judge_node.py" "$v" "$res/nodes.log" $node_majors || fail=1
		echo "  ($(($(date +%s) - start)) s; console: $res/nodes.log)"
		;;
	esac
done
exit $fail
