#!/usr/bin/env bash
# Start-up (part of make bench; runs alone too): how soon a new recorder
# samples and what it spends to get there, on a quiet host and with every
# CPU busy (9 busy threads on this machine's CPUs), and what each BPF
# program costs the verifier. Prints "label<TAB>value" rows.
#   test/bench/startup.sh BUILD_DIR [RUNS]
# The figures come from the library itself (OTELPROF_DEBUG_STARTUP=1):
# from otelprof_start to the first sample's own time stamp, and the
# process's CPU time (user + system; verification is system time) until
# then. A runtime's program (CPython, HotSpot) loads only when a process
# of it is found; OTELPROF_LOAD_RUNTIMES=all loads them all, to show what
# each costs.
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
RUNS=${2:-5}
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) printf "%.0f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
range() { sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.0f-%.0f", lo, hi }'; }

# One start: "first_ms cpu_ms sys_ms" on stdout.
one() {
	OTELPROF_DEBUG_STARTUP=1 "$B/otelprof" record --quiet --duration 1 --frequency 19 \
		--output "$TMP/s.otlp" 2> "$TMP/s.err" || { cat "$TMP/s.err" >&2; exit 1; }
	sed -n 's/.*first sample \([0-9.]*\) ms after start; CPU to then \([0-9.]*\) ms (user [0-9.]*, system \([0-9.]*\)).*/\1 \2 \3/p' "$TMP/s.err" | head -1
}

measure() { # $1: label
	: > "$TMP/runs"
	for _ in $(seq "$RUNS"); do one >> "$TMP/runs"; done
	[ -s "$TMP/runs" ] || { echo "startup: no start-up figures (OTELPROF_DEBUG_STARTUP)" >&2; exit 1; }
	printf 'start-up, %s: first sample after start\t%s ms median (%s ms; %s runs)\n' "$1" \
		"$(awk '{ print $1 }' "$TMP/runs" | median)" "$(awk '{ print $1 }' "$TMP/runs" | range)" "$RUNS"
	printf 'start-up, %s: CPU to the first sample\t%s ms median (%s ms), of it system %s ms\n' "$1" \
		"$(awk '{ print $2 }' "$TMP/runs" | median)" "$(awk '{ print $2 }' "$TMP/runs" | range)" \
		"$(awk '{ print $3 }' "$TMP/runs" | median)"
}

# A quiet host still runs something: on an idle one nothing but the
# recorder's own start-up would be sampled (at 19 Hz, often not at all).
# One light process (a 10 ms burst every 100 ms) is the quiet host's load.
( while :; do timeout 0.01 sh -c 'while :; do :; done' || true; sleep 0.09; done ) &
light=$!
sleep 0.3
measure "quiet host (one process at ~10% of a CPU)"
kill "$light" 2>/dev/null || true
pids=()
for _ in $(seq 9); do "$B/workloads/callgraph_nofp" 600 > /dev/null & pids+=($!); done
sleep 0.5
measure "9 busy threads on $(nproc) CPUs"
kill "${pids[@]}" 2>/dev/null || true
wait 2>/dev/null || true

# The verifier's figures of every program, with each runtime's loaded.
OTELPROF_LOAD_RUNTIMES=all OTELPROF_DEBUG_BPF_LOG=stats "$B/otelprof" record --quiet --duration 2 \
	--frequency 19 --output "$TMP/v.otlp" 2> "$TMP/v.err"
sed -n 's/^bpf: \([a-z_]*\): processed \([0-9]*\) insns.*(object loaded in \([0-9.]*\) ms)$/\1 \2 \3/p' "$TMP/v.err" |
	awk '{ printf "BPF program %s\t%s verified instructions; its object loaded in %s ms\n", $1, $2, $3 }'
