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
# The interpreter guest (interp.sh, judge_interp.py) on INTERP_KERNELS:
# each of INTERP_RUNTIMES (entries interp/*.conf) in turn, each recorded
# INTERP_SECONDS.
interp_kernels=${ARM64_INTERP_KERNELS-6.1 6.12}
interp_runtimes=${ARM64_INTERP_RUNTIMES-python ruby php perl}
interp_seconds=${ARM64_INTERP_SECONDS:-30}
[ -z "$interp_kernels" ] || [ -z "$interp_runtimes" ] ||
	bash "$here/interp.sh" "$cache/root.cpio.gz" "$cache/root-interp.cpio.gz" $interp_runtimes
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
	case " $interp_kernels " in
	*" $v "*)
		[ -n "$interp_runtimes" ] || continue
		start=$(date +%s)
		bash "$here/boot_interp.sh" "$cache/$v/vmlinuz" "$cache/root-interp.cpio.gz" "$interp_seconds" \
			"$res/interp.log" $interp_runtimes
		python3 "$here/judge_interp.py" "$v" "$res/interp.log" $interp_runtimes || fail=1
		echo "  ($(($(date +%s) - start)) s; console: $res/interp.log)"
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
