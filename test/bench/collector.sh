#!/usr/bin/env bash
# The collector path beside the CLI (part of make bench; runs alone too):
# the same library at 19 Hz in the collector (build/otelcol-profiler: the
# profiling receiver polling every 5 s, OTLP bytes decoded by pdata, a file
# exporter) and in `otelprof record`, one after the other, with every CPU
# busy with a no-frame-pointer program. Per process one "label<TAB>value"
# row: CPU from 5 s in to 1 s before the end (schedstat of every thread +
# the run time of its BPF programs) as % of all CPU, RSS and peak RSS.
#   test/bench/collector.sh BUILD_DIR [SECONDS]
# A/B: OTELCOL=path/to/otelcol-profiler measures another collector build
# (same library), ROWS=collector skips the CLI's row; the collector's own
# environment passes through (GOMEMLIMIT=off: the Go runtime unlimited).
# SCOPE=pid: both record only the first busy process (pid / --pid), so
# that the library's memory for the host's files does not hide the Go
# runtime's.
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
S=${2:-30}
COL=${OTELCOL:-$B/otelcol-profiler}
ROWS=${ROWS:-cli,collector}
SCOPE=${SCOPE:-host}
W=$B/workloads
NCPU=$(nproc)
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT
[ -x "$COL" ] || { echo "collector: $COL not built (make collector)" >&2; exit 1; }

exec 9<> <(:)
nap() { read -r -t "$1" -u 9 || true; }
. "$(dirname "$0")/proc_cpu.sh" # cpu_ns PID: into CPU_NS
bpf_ns() {
	{ cat /proc/"$1"/fdinfo/* 2>/dev/null || true; } | awk '
		/^prog_id:/ { id = $2; sel = !seen[id]++ }
		/^run_time_ns:/ && sel { t += $2 }
		END { print t + 0 }'
}

cat > "$TMP/col.yaml" << EOF
receivers:
  profiling:
    samples_per_second: 19
    pid: 0
    reporter_interval: 5s
    library_path: $B/libotelprofiler.so
exporters:
  file:
    path: $TMP/profiles.jsonl
service:
  pipelines:
    profiles:
      receivers: [profiling]
      exporters: [file]
  telemetry:
    logs:
      level: warn
    metrics:
      level: none
EOF

measure() { # label, command...: one row
	local label=$1 pid c0 c1 b0 b1 rss hwm anon file win busy=()
	shift
	for _ in $(seq "$NCPU"); do "$W/callgraph_nofp" $((S + 2)) > /dev/null & busy+=($!); done
	if [ "$SCOPE" = pid ]; then
		sed -i "s/^    pid: .*/    pid: ${busy[0]}/" "$TMP/col.yaml"
		set -- "$@" $([ "$1" = "$B/otelprof" ] && echo --pid "${busy[0]}")
	fi
	"$@" > "$TMP/out.log" 2>&1 &
	pid=$!
	nap 5
	kill -0 "$pid" 2>/dev/null || { echo "collector: $label exited: $(tail -5 "$TMP/out.log")" >&2; exit 1; }
	cpu_ns "$pid"; c0=$CPU_NS; b0=$(bpf_ns "$pid")
	win=$((S - 6))
	nap "$win"
	cpu_ns "$pid"; c1=$CPU_NS; b1=$(bpf_ns "$pid")
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
	anon=$(awk '/^RssAnon:/ { print $2 }' "/proc/$pid/status")
	file=$(awk '/^RssFile:/ { print $2 }' "/proc/$pid/status")
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	wait "${busy[@]}" 2>/dev/null || true
	printf '%s\t' "$label"
	awk -v u=$((c1 - c0)) -v b=$((b1 - b0)) -v w="$win" -v n="$NCPU" -v r="$rss" -v h="$hwm" -v a="$anon" -v f="$file" \
		'BEGIN { printf "CPU %.3f%% of all CPU (user+sys %.0f ms, BPF %.0f ms in %d s); RSS %.1f MiB (anonymous %.1f, file-backed %.1f), peak %.1f MiB\n", 100 * (u + b) / (w * 1e9 * n), u / 1e6, b / 1e6, w, r / 1024, a / 1024, f / 1024, h / 1024 }'
}

sysctl -qw kernel.bpf_stats_enabled=1
if [[ ,$ROWS, == *,cli,* ]]; then
	measure "19 Hz, CPUs busy: otelprof record (CLI)" \
		"$B/otelprof" record --quiet --duration $((S + 5)) --frequency 19 --output "$TMP/r.otlp"
fi
if [[ ,$ROWS, == *,collector,* ]]; then
	measure "19 Hz, CPUs busy: otelcol-profiler (receiver + file exporter)" \
		"$COL" --feature-gates=+service.profilesSupport --config "$TMP/col.yaml"
fi
sysctl -qw kernel.bpf_stats_enabled=0
