#!/usr/bin/env bash
# What an exec storm pays for the profiler's exec hook (part of make bench;
# runs alone too):
#   test/bench/exec_wake.sh BUILD_DIR [EXECS]
# A whole-host recording (otelprof record, 19 Hz) and, 4 s in, a shell loop
# running /bin/true EXECS times (2000: ~1000 execs/s here). One line
# "label<TAB>value": on_exec's BPF time per run (bpftool, with
# kernel.bpf_stats_enabled; the recorder's own program, by its fds), the loop's wall time per exec and the
# recorder's CPU over the loop (schedstat of its threads).
# OTELPROF=path/to/otelprof measures another build (A/B).
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
N=${2:-2000}
BIN=${OTELPROF:-$B/otelprof}
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT
command -v bpftool >/dev/null || { echo "exec_wake: bpftool missing" >&2; exit 1; }

. "$(dirname "$0")/proc_cpu.sh" # cpu_ns PID: into CPU_NS

on_exec() { # "runs ns" of the on_exec program of recorder $1 (its fds)
	local ids
	ids=$(cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '/^prog_id:/ { print $2 }' | sort -u | tr '\n' ' ')
	bpftool prog show -j | IDS="$ids" python3 -c '
import json, os, sys
ids = set(int(i) for i in os.environ["IDS"].split())
runs = ns = 0
for p in json.load(sys.stdin):
    if p.get("name") == "on_exec" and p.get("id") in ids:
        runs += p.get("run_cnt", 0)
        ns += p.get("run_time_ns", 0)
print(runs, ns)'
}

stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -q kernel.bpf_stats_enabled=1
trap 'sysctl -q kernel.bpf_stats_enabled='"$stats"'; kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT
"$BIN" record --duration 12 --frequency 19 -o "$TMP/rec.otlp" > "$TMP/rec.log" 2>&1 &
rp=$!
sleep 4
read -r r0 t0 < <(on_exec "$rp")
cpu_ns "$rp"; c0=$CPU_NS
w0=$(date +%s%N)
for ((i = 0; i < N; i++)); do /bin/true; done
w1=$(date +%s%N)
cpu_ns "$rp"; c1=$CPU_NS
read -r r1 t1 < <(on_exec "$rp")
wait "$rp" || { echo "exec_wake: the recorder failed:" >&2; cat "$TMP/rec.log" >&2; exit 1; }
runs=$((r1 - r0))
[ "$runs" -ge "$N" ] || { echo "exec_wake: on_exec ran $runs times for $N execs" >&2; exit 1; }
printf 'exec storm (%d execs of /bin/true, 19 Hz)\ton_exec %s us of BPF per run; the loop %s us per exec; the recorder %s ms of CPU in %s ms\n' \
	"$N" "$(awk -v t=$((t1 - t0)) -v r="$runs" 'BEGIN { printf "%.2f", t / r / 1000 }')" \
	$(((w1 - w0) / N / 1000)) $(((c1 - c0) / 1000000)) $(((w1 - w0) / 1000000))
