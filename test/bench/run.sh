#!/usr/bin/env bash
# make bench: cost and quality of libotelprofiler, side by side with perf.
# Prints one table at the end. Needs root (BPF, perf -a). Takes ~5 minutes,
# and ~15 more for the CPU-count guests (BENCH_CPU_COUNTS, default 2 16 64).
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

. "$(dirname "$0")/proc_cpu.sh" # cpu_ns PID: into CPU_NS
exec 9<> <(:) # never readable: `read -t X -u 9` sleeps without a process
nap() { read -r -t "$1" -u 9 || true; }
# BPF programs of process $1, from its fds' fdinfo (run_time_ns and
# run_cnt with kernel.bpf_stats_enabled): only that recorder's programs,
# never those of another profiler on the host; tail-called programs run
# inside their caller's accounting. $2: prog_type to count (7: perf_event;
# empty: all). Prints "run_time_ns run_cnt".
prog_stats() {
	# An fd closed between the glob and its read fails cat: the recorder
	# opens and closes files all the time, and set -e must not end the
	# bench for it.
	{ cat /proc/"$1"/fdinfo/* 2>/dev/null || true; } | awk -v want="$2" '
		/^pos:/ { sel = 0; id = "" }
		/^prog_type:/ { sel = (want == "" || $2 == want) }
		/^prog_id:/ { id = $2; if (seen[id]++) sel = 0 }
		/^run_time_ns:/ && sel { t += $2 }
		/^run_cnt:/ && sel { c += $2 }
		END { print t + 0, c + 0 }'
}
bpf_runtime() { # total run_time_ns of the BPF programs of recorder $1
	prog_stats "$1" "" | awk '{ print $1 }'
}
sample_prog_stats() { # "run_time_ns run_cnt" of recorder $1's sampler
	prog_stats "$1" 7
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
# Steady state: CPU from 3 s in to 0.5 s before the end (what an always-on
# agent costs); whole run: from start to exit, with start-up (BPF load,
# kallsyms, tables of every running program) and stop (encoding the
# recording, freeing).
sysctl -qw kernel.bpf_stats_enabled=1
busy "$T"; wait "${BUSY[@]}"; base=$(rounds_total)
steady_ms=$((T * 1000 - 3500))
steady_s=$(awk -v ms="$steady_ms" 'BEGIN { print ms / 1000 }')
share() { awk -v c="$1" -v ms="$2" -v n="$NCPU" 'BEGIN { printf "%.3f%%", 100 * c / (ms * 1e6 * n) }'; }
measure() { # pid: STEADY_NS (CPU of the process), BPF_NS (our programs, per
	# the same length of time), WHOLE_NS (CPU from start to exit), B1
	local p=$1 c0 b0
	CPU_NS=0; cpu_ns "$p"
	# bpftool is a new program for the profiler to learn (tables of its
	# libraries): run it before the window opens, not inside it.
	nap 2.5; b0=$(bpf_runtime "$p"); nap 0.5
	cpu_ns "$p"; c0=$CPU_NS
	nap "$steady_s"
	cpu_ns "$p"; STEADY_NS=$((CPU_NS - c0)); B1=$(bpf_runtime "$p")
	BPF_NS=$(( (B1 - b0) * steady_ms / (steady_ms + 500) ))
	while kill -0 "$p" 2>/dev/null; do cpu_ns "$p"; WHOLE_NS=$CPU_NS; nap 0.05; done
}
for hz in 19 99; do
	busy "$((T + 1))"; nap 0.5
	"$B/otelprof" record --quiet --duration "$T" --frequency "$hz" --output "$TMP/o.otlp" &
	rp=$!
	measure "$rp"
	wait "$rp"; wait "${BUSY[@]}"
	work=$(rounds_total)
	loss=$(awk -v w="$work" -v b="$base" 'BEGIN { printf "%.1f%%", 100 * (b - w) / b }')
	row "overhead ${hz} Hz: libotelprofiler, steady state (user+sys+BPF)" "$(share $((STEADY_NS + BPF_NS)) "$steady_ms") of all CPU (userspace $((STEADY_NS / 1000000)) ms, BPF $((BPF_NS / 1000000)) ms in $((steady_ms / 1000)).$((steady_ms % 1000 / 100)) s)"
	row "overhead ${hz} Hz: libotelprofiler, whole run" "$(share $((WHOLE_NS + B1)) $((T * 1000))) (userspace $((WHOLE_NS / 1000000)) ms, BPF $((B1 / 1000000)) ms (until 0.5 s before the end) in $T s, start-up and stop included); workload throughput loss $loss"
	for mode in "-g" "--call-graph dwarf"; do
		busy "$((T + 1))"; nap 0.5
		# shellcheck disable=SC2086
		perf record -q -F "$hz" -a $mode -o "$TMP/perf.data" -- sleep "$T" 2>/dev/null &
		pp=$!
		measure "$pp"
		wait "$pp" || true; wait "${BUSY[@]}"
		work=$(rounds_total)
		loss=$(awk -v w="$work" -v b="$base" 'BEGIN { printf "%.1f%%", 100 * (b - w) / b }')
		row "overhead ${hz} Hz: perf record -a $mode" "steady $(share "$STEADY_NS" "$steady_ms"), whole run $(share "$WHOLE_NS" $((T * 1000))) (user+sys; its in-kernel unwinding is not counted); workload throughput loss $loss"
	done
done

# ---- 1b. the syscall tax: what a syscall-bound process pays ----
# ns per getppid() by the loop's own CPU time (hooks on the syscall path
# and samples interrupting it are charged to it), with nothing, with us at
# 19 Hz (whole host, and --pid of another process), and with perf record
# -a -g. Rounds interleaved (noise from the rest of the host spreads over
# all modes); per mode the least of 5 rounds (a hook's cost is a constant
# added to every call; interference from the rest of the host only adds).
tax_run() { # mode: prints ns per syscall
	local rp="" sp=""
	case $1 in
	ours) "$B/otelprof" record --quiet --duration 7 --frequency 19 --output "$TMP/s.otlp" & rp=$! ;;
	ours-pid) sleep 8 & sp=$!
		"$B/otelprof" record --quiet --duration 7 --frequency 19 --pid "$sp" --output "$TMP/s.otlp" & rp=$! ;;
	perf) perf record -q -F 19 -a -g -o "$TMP/perf.data" -- sleep 7 2>/dev/null & rp=$! ;;
	esac
	[ -z "$rp" ] || nap 2
	"$W/syscall_loop" 3 | awk '{ print $2 }'
	[ -z "$rp" ] || wait "$rp" || true
	[ -z "$sp" ] || { kill "$sp" 2>/dev/null || true; wait "$sp" 2>/dev/null || true; }
}
declare -A TAX=()
for _ in 1 2 3 4 5; do
	for mode in none ours ours-pid perf; do TAX[$mode]+="$(tax_run "$mode") "; done
done
least() { tr ' ' '\n' | grep . | sort -g | head -1; }
tax_none=$(echo "${TAX[none]}" | least)
for mode in none ours ours-pid perf; do
	m=$(echo "${TAX[$mode]}" | least)
	case $mode in
	none) label="no profiler" ;; ours) label="libotelprofiler 19 Hz, whole host" ;;
	ours-pid) label="libotelprofiler 19 Hz, --pid of another process" ;; perf) label="perf record -a -g -F 19" ;;
	esac
	row "syscall tax: getppid() loop, $label" "$m ns per syscall ($(awk -v m="$m" -v b="$tax_none" 'BEGIN { printf "%+.1f%%", 100 * (m - b) / b }') vs none; rounds: ${TAX[$mode]% })"
done

# ---- 3. BPF time per sample, shallow and 150-deep stacks ----
# run_time_ns / run_cnt of the perf_event program over 4 s of a recording,
# read while it is loaded, with a workload on every CPU so that every run
# is a real sample. The floor: the same program when every run is filtered
# out at its first instruction (--pid of a sleeping process) -- what merely
# entering it costs with cold caches on this machine.
bpf_per_run() { # hz, pid filter ("" for all): prints ns per run
	local t0 c0 t1 c1 rp
	env ${FALLBACK:+OTELPROF_KERNEL_FALLBACK=$FALLBACK} "$B/otelprof" record --quiet --duration 7 --frequency "$1" ${2:+--pid "$2"} --output "$TMP/d.otlp" &
	rp=$!
	nap 2; read -r t0 c0 < <(sample_prog_stats "$rp")
	nap 4; read -r t1 c1 < <(sample_prog_stats "$rp")
	wait "$rp"
	echo "$(( (t1 - t0) / (c1 - c0 > 0 ? c1 - c0 : 1) )) ns ($((c1 - c0)) runs)"
}
for wl in "callgraph_nofp 8" "deep_recursion 8 150"; do
	for hz in 99 999; do
		wp=()
		# shellcheck disable=SC2086
		for _ in $(seq "$NCPU"); do "$W"/$wl > /dev/null & wp+=($!); done
		nap 0.3
		row "BPF time per sample: ${wl%% *} ${wl##* } frames, $hz Hz" "$(bpf_per_run "$hz" "")"
		kill "${wp[@]}" 2>/dev/null || true; wait "${wp[@]}" 2>/dev/null || true
	done
done
# 50-frame stacks: native, Python and Java (HotSpot) in one run.
while IFS=$'\t' read -r label value; do row "$label" "$value"; done < <(bash "$(dirname "$0")/deep_stacks.sh" "$B")
# What the V8 walk costs a Node service: HTTP throughput on loopback,
# 19 Hz on vs off, interleaved rounds.
while IFS=$'\t' read -r label value; do row "$label" "$value"; done < <(bash "$(dirname "$0")/node_http.sh" "$B" 5 10)
# The paths of older kernels (docs/kernels.md), forced here: the same
# workloads, default and fallback one after the other in this run; an
# emulated old kernel's timings would mean nothing.
for wl in "callgraph_nofp 8" "deep_recursion 8 150"; do
	for f in "" all; do
		wp=()
		# shellcheck disable=SC2086
		for _ in $(seq "$NCPU"); do "$W"/$wl > /dev/null & wp+=($!); done
		nap 0.3
		FALLBACK=$f
		res=$(bpf_per_run 99 "")
		FALLBACK=
		kill "${wp[@]}" 2>/dev/null || true; wait "${wp[@]}" 2>/dev/null || true
		if [ -z "$f" ]; then def=${res%% *}; else
			row "BPF time per sample, kernel fallbacks forced: ${wl%% *} ${wl##* } frames, 99 Hz" \
				"$res with OTELPROF_KERNEL_FALLBACK=all, $def ns default: ratio $(awk -v a="${res%% *}" -v b="$def" 'BEGIN { printf "%.2f", b ? a / b : 0 }')"
		fi
	done
done
sleep 30 & sp=$!
busy 8; nap 0.3
row "BPF floor: a run filtered out at once, 99 Hz, CPUs busy" "$(bpf_per_run 99 "$sp")"
kill "$sp" 2>/dev/null || true; wait "${BUSY[@]}" 2>/dev/null || true; rounds_total > /dev/null
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
while IFS=$'\t' read -r label value; do row "$label" "$value"; done < <("$B/bench/bench_pctx" 200)

# ---- 5b. otelprof top on many unnamed locations (linear: 4x input, ~4x time) ----
row "otelprof top: unnamed locations (parse + rank)" "$("$B/bench/bench_top" 200000)"

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

# ---- 2b. memory against the CPU count (a 6.12 guest per count) ----
while IFS=$'\t' read -r label value; do row "$label" "$value"; done < <(CPU_SCALE_ROWS=1 bash "$(dirname "$0")/cpu_scale.sh" "$B" "$B/kernels" ${BENCH_CPU_COUNTS:-2 16 64})

# ---- 2c. cost and memory against 10, 100, 1000 processes and 1, 20, 80
# mapped libraries ----
while IFS=$'\t' read -r label value; do row "$label" "$value"; done < <(bash "$(dirname "$0")/scale.sh" "$B" 12 99)

# ---- 7. delivered versus expected samples ----
for hz in 19 99 999; do
	busy "$((T + 2))"; sleep 0.5
	declare -A c0=()
	for p in "${BUSY[@]}"; do cpu_ns "$p"; c0[$p]=$CPU_NS; done
	"$B/otelprof" record --quiet --duration "$T" --frequency "$hz" --output "$TMP/e.otlp" 2> "$TMP/e.err" &
	rp=$!
	wait "$rp"
	got=0; cpu=0
	for p in "${BUSY[@]}"; do
		got=$((got + $(samples_of "$TMP/e.otlp" "$p")))
		cpu_ns "$p"; cpu=$((cpu + CPU_NS - c0[$p]))
	done
	wait "${BUSY[@]}"; rounds_total > /dev/null
	exp=$((T * hz * NCPU))
	row "delivered samples at $hz Hz (all CPUs busy)" "$got of $exp expected ($(awk -v g="$got" -v e="$exp" 'BEGIN { printf "%.1f%%", 100 * g / e }')); of the workloads' CPU time x Hz: $(awk -v g="$got" -v c="$cpu" -v h="$hz" 'BEGIN { printf "%.1f%%", 100 * g / (c / 1e9 * h) }')"
	unset c0
done

# ---- 8. start-up: first sample, CPU to it, the verifier's figures ----
while IFS=$'\t' read -r label value; do row "$label" "$value"; done < <(bash "$(dirname "$0")/startup.sh" "$B" 5)

# ---- 8b. off-CPU: cost per context switch at thresholds 0, 0.01 and 1 ----
while IFS=$'\t' read -r label value; do row "$label" "$value"; done < <(bash "$(dirname "$0")/offcpu.sh" "$B" 3)

# ---- 8b'. an exec storm: what the exec hook costs the process that execs ----
while IFS=$'\t' read -r label value; do row "$label" "$value"; done < <(bash "$(dirname "$0")/exec_wake.sh" "$B" 2000)

# ---- 8c. a real host: Go daemons, busy runtimes, exec churn ----
# (a 30 s recording from 3 s in: start-up included; then the steady state,
# 20 s to 44 s of a 45 s recording)
while IFS=$'\t' read -r label value; do row "$label" "$value"; done < <(bash "$(dirname "$0")/realhost.sh" "$B" 30 19 99)
while IFS=$'\t' read -r label value; do row "$label, steady (20-44 s)" "$value"; done < <(WARM=20 bash "$(dirname "$0")/realhost.sh" "$B" 45 19 99)

# ---- 8d. the collector beside the CLI (needs make collector) ----
if [ -x "$B/otelcol-profiler" ]; then
	while IFS=$'\t' read -r label value; do row "collector path: $label" "$value"; done < <(bash "$(dirname "$0")/collector.sh" "$B" 30)
else
	row "collector path" "not measured: $B/otelcol-profiler not built (make collector)"
fi

# ---- 8e. identical files (a binary and its copies) kept once, on/off ----
while IFS=$'\t' read -r label value; do row "$label" "$value"; done < <(bash "$(dirname "$0")/shared_files.sh" "$B" 1 20)

# ---- 9. host churn: drain-thread stalls, bystander samples, stop ----
while IFS=$'\t' read -r label value; do row "$label" "$value"; done < <(bash "$(dirname "$0")/churn.sh" "$B" 12)

echo
echo "libotelprofiler benchmark ($(date -u +%Y-%m-%dT%H:%MZ), $NCPU CPUs, $(uname -r))"
printf '%s\n' "${ROWS[@]}"
