#!/usr/bin/env bash
# Host churn (part of make bench; runs alone too): what one process's
# address-space churn costs the recorder and the rest of the host.
#   test/bench/churn.sh BUILD_DIR [SECONDS]
# Two cases, each a whole-host recording through the ABI (abi_soak, 99 Hz,
# polls every 500 ms) with a bystander (callgraph_nofp) started 0.3 s
# after the churner:
#   files: one process dlopens 3000 distinct small libraries
#   mmap:  one process with 20,000 mappings maps and unmaps an executable
#          page ~200 times a second (test/workloads/churn.c)
# Per case one line "label<TAB>value": the recorder's CPU (schedstat), the
# longest drain-thread hold of the state lock (drain_max_hold_ns, what a
# poll may wait), the longest poll, samples lost, stop, the recording's
# length against the one asked, and the bystander's delivered samples
# against its own CPU time x Hz.
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
S=${2:-12}
W=$B/workloads
HZ=99
SOAK=$B/test/abi/abi_soak
[ -x "$SOAK" ] || { echo "churn: $SOAK not built" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT

. "$(dirname "$0")/proc_cpu.sh" # cpu_ns PID: into CPU_NS

run_case() { # label, churner command...
	local label=$1 out=$TMP/$1 soak churner by t0 t1 rec_ns=0 by_ns=0
	shift
	mkdir -p "$out"
	coproc SOAKP { exec "$SOAK" --frequency "$HZ" --poll-ms 500 --duration "$S" --out-dir "$out" 2> "$out/err"; }
	soak=$SOAKP_PID
	local line
	read -r line <&"${SOAKP[0]}"
	case $line in *'"started"'*) ;; *) echo "churn: abi_soak: $line" >&2; return 1 ;; esac
	t0=$(date +%s%N)
	"$@" > /dev/null & churner=$!
	sleep 0.3
	"$W/callgraph_nofp" $((S - 2)) > /dev/null & by=$!
	: > "$out/lines"
	while read -r line <&"${SOAKP[0]}"; do
		echo "$line" >> "$out/lines"
		cpu_ns "$soak"; [ "$CPU_NS" -gt "$rec_ns" ] && rec_ns=$CPU_NS
		if kill -0 "$by" 2>/dev/null; then cpu_ns "$by"; [ "$CPU_NS" -gt "$by_ns" ] && by_ns=$CPU_NS; fi
		case $line in *'"final"'*) break ;; esac
	done
	t1=$(date +%s%N)
	# The bystander's CPU until it exits.
	while kill -0 "$by" 2>/dev/null; do
		cpu_ns "$by"; [ "$CPU_NS" -gt "$by_ns" ] && by_ns=$CPU_NS
		sleep 0.02
	done
	wait "$by" || true
	kill "$churner" 2>/dev/null || true
	wait "$churner" 2>/dev/null || true
	wait "$soak" 2>/dev/null || true
	local got=0 f n
	for f in "$out"/poll-*.otlp; do
		[ -e "$f" ] || continue
		n=$("$B/otelprof" top "$f" --pid "$by" --limit 1 2>/dev/null | awk 'NR == 1 { print $1 + 0 }')
		got=$((got + ${n:-0}))
	done
	local final maxpoll
	final=$(grep '"final"' "$out/lines")
	maxpoll=$(grep '"poll"' "$out/lines" | jq -s 'map(.poll_ms) | max // 0')
	printf '%s\t%s\n' "churn: $label, 99 Hz, $S s" "$(echo "$final" | jq -r --argjson rec "$rec_ns" --argjson mp "$maxpoll" \
		--argjson got "$got" --argjson byns "$by_ns" --argjson hz "$HZ" --argjson el "$(( (t1 - t0) / 1000000 ))" --argjson s "$S" '
		"recorder CPU \($rec / 1e9 * 100 | round / 100) s; longest drain-thread hold \(.drain_max_hold_ns / 1e4 | round / 100) ms, longest poll \($mp * 10 | round / 10) ms; lost \(.samples_lost); stop \(.stop_ms * 10 | round / 10) ms; recording \($el / 100 | round / 10) s of \($s) s; bystander \($got) of \($byns / 1e9 * $hz | round) expected by its CPU time (\(if $byns > 0 then ($got / ($byns / 1e9 * $hz) * 1000 | round / 10) else 0 end)%); refused rows: \(.unwind_refused_process) per process, \(.unwind_refused_host) host; rescans held \(.rescans_held)"')"
}

mkdir -p "$TMP/libs"
# A trailer the loader ignores gives each copy its own bytes (identical
# files are kept once; the row is about distinct ones).
for i in $(seq -w 0 2999); do { cat "$W/libtiny.so"; echo "copy $i"; } > "$TMP/libs/libtiny-$i.so"; done
run_case "3000 distinct libraries" "$W/many_libs" 8 "$TMP"/libs/libtiny-*.so
run_case "mmap(PROT_EXEC) storm beside 20,000 mappings" "$W/churn" mmap $((S + 3))
