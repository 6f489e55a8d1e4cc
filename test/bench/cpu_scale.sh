#!/usr/bin/env bash
# Memory against the CPU count: the recorder's RSS and its BPF maps'
# memory in a 6.12 guest (qemu, TCG) booted with each CPU count, one busy
# workload, 99 Hz. Nothing in the recorder may grow with CPUs that are
# idle (issue 27: <= 40 MB RSS + <= 10 MB maps at 192 CPUs).
#   cpu_scale.sh BUILD KERNEL_CACHE [CPUS...]   (default 2 16 64 192)
# CPU_SCALE_ROWS=1: "label<TAB>value" rows for make bench's table.
set -euo pipefail
build=$(cd "$1" && pwd)
cache=$2
shift 2
cpus=("$@")
[ $# -eq 0 ] && cpus=(2 16 64 192)
here=$(cd "$(dirname "$0")" && pwd)
bash "$here/../kernels/fetch.sh" "$cache" 6.12 >/dev/null
initrd=$build/bench/scale.cpio.gz
mkdir -p "$build/bench"
bash "$here/../kernels/initramfs.sh" "$build" "$initrd" "$here/scale_guest.sh"
rows=${CPU_SCALE_ROWS:-}
[ -n "$rows" ] || printf '%-6s %-6s %10s %10s %10s %12s\n' cpus hz rss_MB anon_MB peak_MB maps_MB
for n in "${cpus[@]}"; do
	out=$(timeout 1800 qemu-system-x86_64 -accel tcg -cpu max -smp "$n" -m 2048 \
		-nographic -no-reboot -nodefaults -display none \
		-kernel "$cache/6.12/vmlinuz" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 quiet otelprof.seconds=12 otelprof.hz=99" \
		-serial stdio 2>&1 || true)
	line=$(echo "$out" | grep -ao 'SCALE ncpu=.*' | tail -n1 | tr -d '\r' || true)
	if [ -z "$line" ]; then
		echo "cpu_scale: no figures from the $n-CPU guest; console:" >&2
		echo "$out" | tail -n 30 >&2
		exit 1
	fi
	eval "$(echo "$line" | sed 's/^SCALE //')"
	if [ -n "$rows" ]; then
		awk -v c="$ncpu" -v h="$hz" -v r="$rss_kb" -v a="$anon_kb" -v m="$maps_bytes" \
			'BEGIN { printf "memory at %d CPUs (6.12 guest, TCG, %d Hz, 1 busy process)\tRSS %.1f MiB (anonymous %.1f) + BPF maps %.1f MiB\n", c, h, r/1024, a/1024, m/1048576 }'
		continue
	fi
	awk -v c="$ncpu" -v h="$hz" -v r="$rss_kb" -v a="$anon_kb" -v p="$hwm_kb" -v m="$maps_bytes" \
		'BEGIN { printf "%-6s %-6s %10.1f %10.1f %10.1f %12.1f\n", c, h, r/1024, a/1024, p/1024, m/1048576 }'
done
