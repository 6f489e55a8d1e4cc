#!/usr/bin/env bash
# make bench: cost and quality of libotelprofiler, side by side with perf.
# Prints one table at the end. Needs root (BPF, perf -a). Takes ~4 minutes.
#   test/bench/run.sh BUILD_DIR
set -euo pipefail
B=${1:-build}
B=$(cd "$B" && pwd)
W=$B/workloads
T=${BENCH_SECONDS:-10}
NCPU=$(nproc)
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT
ROWS=()

row() { ROWS+=("$(printf '%-58s %s' "$1" "$2")"); printf '  %-58s %s\n' "$1" "$2" >&2; }
die() { echo "bench: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (BPF programs, perf -a)"
command -v perf >/dev/null || die "perf (linux-perf) missing: run make deps"
command -v bpftool >/dev/null || die "bpftool missing: run make deps"

cpu_ticks() { # utime+stime of a pid, in clock ticks
	awk '{ s = $0; sub(/^.*\) /, "", s); split(s, f, " "); print f[12] + f[13] }' "/proc/$1/stat"
}
bpf_runtime() { # total run_time_ns of our BPF programs
	bpftool prog show 2>/dev/null | awk '/name (on_cpu_sample|on_exec|on_exit|on_sys_exit)/ {
		for (i = 1; i <= NF; i++) if ($i == "run_time_ns") s += $(i + 1) } END { print s + 0 }'
}
samples_of() { # samples of pid $2 in OTLP file $1
	"$B/otelprof" top "$1" --pid "$2" --limit 1 | awk 'NR == 1 { print $1 }'
}
main_share() { # % of samples of pid $2 whose stack contains main
	"$B/otelprof" top "$1" --pid "$2" --limit 100000 |
		awk '/total%/ { t = 1; next } t && $3 == "main" { gsub("%", "", $2); print $2; f = 1; exit } END { if (!f) print 0 }'
}
busy() { # start NCPU callgraph_nofp workloads for $1 seconds; pids in BUSY
	BUSY=()
	for _ in $(seq "$NCPU"); do
		"$W/callgraph_nofp" "$1" > "$TMP/busy.$RANDOM.out" &
		BUSY+=($!)
	done
}
rounds_total() { cat "$TMP"/busy.*.out | awk '{ s += $2 } END { print s + 0 }'; rm -f "$TMP"/busy.*.out; }

echo "bench: $NCPU CPUs, $T s per run; kernel $(uname -r)" >&2

# ---- 1. overhead with every CPU busy ----
sysctl -qw kernel.bpf_stats_enabled=1
busy "$T"; wait "${BUSY[@]}"; base=$(rounds_total)
for hz in 19 99; do
	busy "$((T + 1))"; sleep 0.5
	bpf0=$(bpf_runtime)
	"$B/otelprof" record --quiet --duration "$T" --frequency "$hz" --output "$TMP/o.otlp" &
	rp=$!; sleep 0.5
	c0=$(cpu_ticks "$rp"); c1=$c0
	# CPU of the recorder (from 0.5 s in: start-up is a one-time cost),
	# sampled until just before it exits
	while kill -0 "$rp" 2>/dev/null; do c1=$(cpu_ticks "$rp" 2>/dev/null || echo "$c1"); sleep 0.2; done
	wait "$rp"; bpf1=$(bpf_runtime); wait "${BUSY[@]}"
	work=$(rounds_total)
	user_ns=$(( (c1 - c0) * 10000000 ))
	bpf_ns=$(( bpf1 - bpf0 ))
	total_ns=$(( (T * 1000 - 500) * NCPU * 1000000 ))
	share=$(awk -v u="$user_ns" -v b="$bpf_ns" -v t="$total_ns" 'BEGIN { printf "%.3f%%", 100 * (u + b) / t }')
	loss=$(awk -v w="$work" -v b="$base" 'BEGIN { printf "%.1f%%", 100 * (b - w) / b }')
	row "overhead ${hz} Hz: libotelprofiler CPU share (user+sys+BPF)" "$share (userspace $((user_ns / 1000000)) ms, BPF $((bpf_ns / 1000000)) ms); workload throughput loss $loss"
	for mode in "-g" "--call-graph dwarf"; do
		busy "$((T + 1))"; sleep 0.5
		# shellcheck disable=SC2086
		perf record -q -F "$hz" -a $mode -o "$TMP/perf.data" -- sleep "$((T - 1))" 2>/dev/null &
		pp=$!; sleep 0.3; c0=$(cpu_ticks "$pp"); c1=$c0
		while kill -0 "$pp" 2>/dev/null; do c1=$(cpu_ticks "$pp" 2>/dev/null || echo "$c1"); sleep 0.2; done
		wait "$pp" || true; wait "${BUSY[@]}"
		work=$(rounds_total)
		share=$(awk -v u="$(( (c1 - c0) * 10000000 ))" -v t="$total_ns" 'BEGIN { printf "%.3f%%", 100 * u / t }')
		loss=$(awk -v w="$work" -v b="$base" 'BEGIN { printf "%.1f%%", 100 * (b - w) / b }')
		row "overhead ${hz} Hz: perf record -a $mode CPU share (user+sys)" "$share; workload throughput loss $loss"
	done
done

# ---- 3. BPF time per sample, shallow and 150-deep stacks ----
for wl in "callgraph_nofp 8" "deep_recursion 8 150"; do
	# shellcheck disable=SC2086
	"$W"/$wl > /dev/null & wp=$!; sleep 0.3
	bpf0=$(bpf_runtime)
	"$B/otelprof" record --duration 5 --frequency 999 --pid "$wp" --output "$TMP/d.otlp" 2> "$TMP/d.err"
	bpf1=$(bpf_runtime); kill "$wp" 2>/dev/null || true; wait "$wp" 2>/dev/null || true
	n=$(grep -o 'wrote [0-9]*' "$TMP/d.err" | grep -o '[0-9]*')
	row "BPF time per sample: ${wl%% *} ${wl##* } (999 Hz)" "$(( (bpf1 - bpf0) / (n > 0 ? n : 1) )) ns ($n samples)"
done
sysctl -qw kernel.bpf_stats_enabled=0

# ---- 4. unwinding completeness beside perf --call-graph dwarf ----
for wl in "callgraph_nofp 8" "libc_hot 8" "deep_recursion 8 150"; do
	# shellcheck disable=SC2086
	"$W"/$wl > /dev/null & wp=$!; sleep 0.3
	"$B/otelprof" record --quiet --duration 3 --frequency 99 --pid "$wp" --output "$TMP/u.otlp"
	ours=$(main_share "$TMP/u.otlp" "$wp")
	perf record -q -F 99 --call-graph dwarf -p "$wp" -o "$TMP/perf.data" -- sleep 3 2>/dev/null || true
	kill "$wp" 2>/dev/null || true; wait "$wp" 2>/dev/null || true
	theirs=$(perf script -i "$TMP/perf.data" 2>/dev/null | awk '
		/^[^ \t]/ { if (n) { tot++; if (m) hit++ } n = 0; m = 0; next }
		/^[ \t]*$/ { if (n) { tot++; if (m) hit++ } n = 0; m = 0; next }
		{ n++; if ($2 ~ /^main\+/) m = 1 }
		END { if (n) { tot++; if (m) hit++ } printf "%.1f", tot ? 100 * hit / tot : 0 }')
	row "stacks reaching main, no frame pointers: ${wl% [0-9]*}" "ours ${ours}%, perf --call-graph dwarf ${theirs}%"
done

# ---- 5. OTLP encoding ----
row "OTLP encoding (1M samples, 100 processes, 5000 stacks)" "$("$B/bench/bench_encode" 1000000 | sed 's/^samples [0-9]*: //')"

# ---- 6. unwind tables for every executable mapped on the host ----
"$B/bench/bench_unwind_table" > "$TMP/t.out"
row "unwind tables: every executable mapped on the host" "$(sed -n '1,4p' "$TMP/t.out" | tr '\n' ';' | sed 's/;$//')"

# ---- 2. memory: RSS + BPF map memory, and growth ----
mem_run() { # $1 label; the workloads are already running
	"$B/otelprof" record --duration 4 --frequency 99 --output "$TMP/m.otlp" 2> "$TMP/m.err" &
	local rp=$! hwm=0 maps=0
	sleep 3.5
	hwm=$(awk '/VmHWM/ { print $2 }' "/proc/$rp/status")
	maps=$(bpftool map show 2>/dev/null | awk '/name (events|sample_scratch|counters|unwind_files|unwind_procs|unwind_scratch|otelprof_rows)/ { f = 1 }
		f && /memlock/ { for (i = 1; i <= NF; i++) if ($i == "memlock") { v = $(i + 1); sub("B", "", v); s += v } f = 0 } END { print s + 0 }')
	wait "$rp"
	row "memory: $1" "RSS peak $((hwm / 1024)) MiB + BPF maps $((maps / 1048576)) MiB; $(grep -o 'tables: .*' "$TMP/m.err")"
}
"$W/callgraph_nofp" 6 > /dev/null & p1=$!
mem_run "1 busy process"
wait "$p1" || true
pids=()
for _ in $(seq 50); do "$W/deep_recursion" 6 20 > /dev/null & pids+=($!); done
mem_run "50 busy processes"
wait "${pids[@]}" || true
mapfile -t libs < <(ls /usr/lib/x86_64-linux-gnu/lib*.so.[0-9]* 2>/dev/null | head -80)
"$W/many_libs" 8 "${libs[@]}" > "$TMP/libs.out" & p2=$!
sleep 1.5
mem_run "1 process mapping $(awk '{ print $2 }' "$TMP/libs.out") libraries"
wait "$p2" || true

# ---- 7. delivered versus expected samples ----
for hz in 19 99 999; do
	busy "$((T + 2))"; sleep 0.5
	declare -A c0=()
	for p in "${BUSY[@]}"; do c0[$p]=$(cpu_ticks "$p"); done
	"$B/otelprof" record --quiet --duration "$T" --frequency "$hz" --output "$TMP/e.otlp" 2> "$TMP/e.err" &
	rp=$!
	wait "$rp"
	got=0; cpu=0
	for p in "${BUSY[@]}"; do
		got=$((got + $(samples_of "$TMP/e.otlp" "$p")))
		cpu=$((cpu + $(cpu_ticks "$p") - c0[$p]))
	done
	wait "${BUSY[@]}"; rounds_total > /dev/null
	exp=$((T * hz * NCPU))
	row "delivered samples at $hz Hz (all CPUs busy)" "$got of $exp expected ($(awk -v g="$got" -v e="$exp" 'BEGIN { printf "%.1f%%", 100 * g / e }')); of the workloads' CPU time x Hz: $(awk -v g="$got" -v c="$cpu" -v h="$hz" 'BEGIN { printf "%.1f%%", 100 * g / (c / 100 * h) }')"
	unset c0
done

echo
echo "libotelprofiler benchmark ($(date -u +%Y-%m-%dT%H:%MZ), $NCPU CPUs, $(uname -r))"
printf '%s\n' "${ROWS[@]}"
