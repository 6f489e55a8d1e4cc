#!/usr/bin/env bash
# Scale curves (part of make bench; runs alone too): the recorder's cost
# and memory against the number of processes its samples land in, and
# against the number of libraries one busy process maps (issue 27).
#   test/bench/scale.sh BUILD_DIR [SECONDS] [HZ]
# Processes: `crowd` runs 10, 100 and 1000 processes (each its own exec)
# sharing one CPU's worth of work, so the sample rate is the same in every
# row and only the number of processes grows. Libraries: `many_libs`
# dlopens 1, 20 and 80 of the host's libraries and burns one CPU.
# Whole-host recording (default 12 s at 99 Hz); the window runs from 3 s
# in to 1 s before the end. Per case one "label<TAB>value" row: the
# recorder's CPU (schedstat of every thread + run time of its BPF
# programs) as % of all CPU, its anonymous RSS at the end of the window,
# its peak RSS, the memory of its BPF maps (its own fds), and what the
# library says it tracks (processes, symbol memory, unwind tables).
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
S=${2:-12}
HZ=${3:-99}
W=$B/workloads
WARM=3
NCPU=$(nproc)
TMP=$(mktemp -d)
cleanup() {
	kill $(jobs -p) 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
die() { echo "scale: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root"
. "$(dirname "$0")/proc_cpu.sh" # cpu_ns PID: into CPU_NS; fd_stats PID
exec 9<> <(:) # never readable: sleeps without a process
nap() { read -r -t "$1" -u 9 || true; }

# measure LABEL: one recording while the workload runs; prints the row.
measure() {
	local rp c0 c1 b0 b1 maps anon hwm win
	"$B/otelprof" record --duration "$S" --frequency "$HZ" --output "$TMP/r.otlp" 2> "$TMP/r.err" &
	rp=$!
	nap "$WARM"
	cpu_ns "$rp"; c0=$CPU_NS; read -r b0 _ < <(fd_stats "$rp")
	win=$((S - WARM - 1))
	nap "$win"
	cpu_ns "$rp"; c1=$CPU_NS; read -r b1 maps < <(fd_stats "$rp")
	anon=$(awk '/^RssAnon:/ { print $2 }' "/proc/$rp/status")
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$rp/status")
	wait "$rp" || die "otelprof record failed: $(tail -3 "$TMP/r.err")"
	printf '%s\t' "$1"
	awk -v u=$((c1 - c0)) -v b=$((b1 - b0)) -v w="$win" -v n="$NCPU" -v a="$anon" -v h="$hwm" -v m="$maps" \
		'BEGIN { printf "CPU %.3f%% of all CPU (user+sys %.0f ms, BPF %.0f ms in %d s); RssAnon %.1f MiB, peak RSS %.1f MiB, BPF maps %.1f MiB", 100 * (u + b) / (w * 1e9 * n), u / 1e6, b / 1e6, w, a / 1024, h / 1024, m / 1048576 }'
	printf '; %s; %s\n' "$(grep -o '[0-9]* processes tracked.*' "$TMP/r.err" | tail -1)" \
		"$(grep -o 'tables: [0-9]* files, [0-9]* rows, [0-9]* KiB in the kernel' "$TMP/r.err" | tail -1)"
}

sysctl -qw kernel.bpf_stats_enabled=1
for n in 10 100 1000; do
	"$W/crowd" "$((S + 4))" "$n" 1 > "$TMP/crowd.out" &
	cp=$!
	for _ in $(seq 100); do grep -q ready "$TMP/crowd.out" && break; nap 0.1; done
	grep -q ready "$TMP/crowd.out" || die "crowd of $n did not start"
	nap 1
	measure "scale: $n processes sharing 1 CPU of work, $HZ Hz"
	kill "$cp" 2>/dev/null || true
	pkill -f "$W/crowd --child" 2>/dev/null || true
	wait "$cp" 2>/dev/null || true
done
libdir=$(dirname "$(ldconfig -p | awk '/libc\.so\.6 / { print $NF; exit }')")
mapfile -t all < <(ls "$libdir"/lib*.so.[0-9]* 2>/dev/null)
for l in 1 20 80; do
	"$W/many_libs" "$((S + 4))" "${all[@]:0:$l}" > "$TMP/libs.out" &
	lp=$!
	for _ in $(seq 600); do grep -q loaded "$TMP/libs.out" && break; nap 0.1; done
	loaded=$(awk '/loaded/ { print $2 }' "$TMP/libs.out")
	[ -n "$loaded" ] || die "many_libs did not start"
	nap 1
	measure "scale: 1 busy process, $loaded libraries dlopened ($l asked), $HZ Hz"
	kill "$lp" 2>/dev/null || true
	wait "$lp" 2>/dev/null || true
done
sysctl -qw kernel.bpf_stats_enabled=0
