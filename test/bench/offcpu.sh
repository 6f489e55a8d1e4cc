#!/usr/bin/env bash
# Off-CPU cost (part of make bench; runs alone too): what recording
# switch-outs costs a context-switch-heavy process (pingpong: two threads
# passing a byte through two pipes, every round trip two blocking reads),
# with no profiler, with the recorder at 19 Hz and off-CPU off
# (threshold 0: no scheduler program), and at thresholds 0.01 and 1.
# Per mode: the workload's round trips per second, best of ROUNDS
# interleaved runs (other load on the host only slows a run), the loss
# against no profiler and that loss per context switch; and the
# sched_switch program's own time per run (run_time_ns / run_cnt of the
# recorder's raw tracepoint programs, kernel.bpf_stats_enabled: exec, fork
# and exit add a handful of runs), with the recorder's own CPU time.
# Prints "label<TAB>value" rows.
#   test/bench/offcpu.sh BUILD_DIR [ROUNDS]
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-3}
W=$B/workloads
S=3 # seconds of ping-pong per run
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT

# "run_time_ns run_cnt" of process $1's raw tracepoint programs (type 17).
raw_tp_stats() {
	{ cat /proc/"$1"/fdinfo/* 2>/dev/null || true; } | awk '
		/^pos:/ { sel = 0 }
		/^prog_type:/ { sel = ($2 == 17) }
		/^prog_id:/ { if (seen[$2]++) sel = 0 }
		/^run_time_ns:/ && sel { t += $2 }
		/^run_cnt:/ && sel { c += $2 }
		END { print t + 0, c + 0 }'
}
. "$(dirname "$0")/proc_cpu.sh" # cpu_ns PID: into CPU_NS

# One run of mode $1 (none, or a threshold): "round_trips_per_s bpf_ns
# bpf_runs recorder_cpu_ms"
run() {
	local rp="" t0=0 c0=0 t1=0 c1=0 r0=0 r1=0 out
	if [ "$1" != none ]; then
		"$B/otelprof" record --quiet --duration $((S + 4)) --frequency 19 \
			--off-cpu-threshold "$1" --output "$TMP/o.otlp" &
		rp=$!
		sleep 2
		read -r t0 c0 < <(raw_tp_stats "$rp")
		cpu_ns "$rp"; r0=$CPU_NS
	fi
	out=$("$W/pingpong" "$S")
	if [ -n "$rp" ]; then
		read -r t1 c1 < <(raw_tp_stats "$rp")
		cpu_ns "$rp"; r1=$CPU_NS
		wait "$rp"
	fi
	echo "$out" | awk -v t=$((t1 - t0)) -v c=$((c1 - c0)) -v r=$((r1 - r0)) \
		'{ printf "%.0f %d %d %.0f\n", $2 / $4, t, c, r / 1e6 }'
}

sysctl -qw kernel.bpf_stats_enabled=1
declare -A BEST=() BPF=() RUNS=() RCPU=()
for _ in $(seq "$ROUNDS"); do
	for mode in none 0 0.01 1; do
		read -r tput bns bcnt rcpu < <(run "$mode")
		if [ -z "${BEST[$mode]:-}" ] || [ "$tput" -gt "${BEST[$mode]}" ]; then
			BEST[$mode]=$tput BPF[$mode]=$bns RUNS[$mode]=$bcnt RCPU[$mode]=$rcpu
		fi
	done
done
sysctl -qw kernel.bpf_stats_enabled=0

base=${BEST[none]}
for mode in none 0 0.01 1; do
	case $mode in
	none) label="no profiler" ;;
	0) label="recorder 19 Hz, off-CPU off (threshold 0)" ;;
	*) label="recorder 19 Hz, off-CPU threshold $mode" ;;
	esac
	v=$(awk -v mode="$mode" -v t="${BEST[$mode]}" -v b="$base" -v bns="${BPF[$mode]}" -v n="${RUNS[$mode]}" -v r="${RCPU[$mode]}" -v s="$S" 'BEGIN {
		# two blocking switch-outs per round trip
		loss = 100 * (b - t) / b
		per = (t > 0 && b > 0) ? (1e9 / t - 1e9 / b) / 2 : 0
		printf "%d round trips/s", t
		if (t != b) printf " (%+.1f%% vs none; %+.0f ns per context switch)", -loss, per
		if (mode == "0") printf "; no sched_switch program (raw tracepoint runs: exec/fork/exit only, %d in %d s); recorder CPU %d ms", n, s, r
		else if (n > 0) printf "; sched_switch program %.0f ns per run (%d runs in %d s); recorder CPU %d ms", bns / n, n, s, r
	}')
	printf 'off-CPU cost: pingpong, %s\t%s\n' "$label" "$v"
done
