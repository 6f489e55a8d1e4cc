#!/usr/bin/env bash
# What the profiler costs a Node service (part of make bench; runs alone
# too): the throughput of an HTTP server (node's http module, on
# loopback; node_http_server.js) under a fixed client (node_http_client.js:
# 8 keep-alive connections, a request each at a time), with no profiler
# and with `otelprof record` at 19 Hz on the whole host, in interleaved
# rounds (off, on, off, on, ...) so that the host's load drifts alike for
# both. Each "on" round starts its recorder, waits WARM seconds and until
# the recorder has settled (start-up, node's tables: what an always-on
# agent has long done), and then measures. Besides requests per second (what a loaded host's other work
# moves), the server's own CPU time per request (schedstat: what the
# profiler adds to each request, steadier on a loaded host). Needs root.
#   test/bench/node_http.sh BUILD_DIR [ROUNDS] [SECONDS]
# NODE_HTTP_RECORD_ARGS: more arguments to the recorder (e.g. --pid 1: it
# runs and its timers fire, but no Node process is walked or named).
# Prints "label<TAB>value" rows.
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-5}
S=${3:-10}
WARM=${NODE_HTTP_WARM:-5}
NODE=${NODE:-/usr/bin/node}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -x "$NODE" ] || { echo "node_http: $NODE missing" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT
PORT=$((20000 + RANDOM % 20000))

"$NODE" "$HERE/node_http_server.js" "$PORT" > "$TMP/server.out" &
SERVER=$!
. "$(dirname "$0")/proc_cpu.sh" # cpu_ns PID: into CPU_NS
for _ in $(seq 100); do grep -q listening "$TMP/server.out" && break; sleep 0.1; done
grep -q listening "$TMP/server.out" || { echo "node_http: the server did not start" >&2; exit 1; }
# Wait until recorder $1 has settled: WARM seconds, then until it used
# under 5% of a CPU in the last second (its start-up reads every
# process's tables, seconds of CPU on a loaded 2-CPU host), at most 60 s.
settle() {
	local t=0 a b c0 c1
	sleep "$WARM"
	while [ $t -lt 60 ]; do
		read -r a b < <(awk '{ print $1, $2 }' /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { print s, 0 }')
		c0=$a; sleep 1; t=$((t + 1))
		read -r a b < <(awk '{ print $1, $2 }' /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { print s, 0 }')
		c1=$a
		[ $((c1 - c0)) -lt 50000000 ] && return 0
	done
	echo "node_http: the recorder still busy after 60 s" >&2
}
# one run: "requests server-CPU-ns"
client() {
	local c0 n
	cpu_ns "$SERVER"; c0=$CPU_NS
	n=$("$NODE" "$HERE/node_http_client.js" "$PORT" "$S" 8)
	cpu_ns "$SERVER"
	echo "$n $((CPU_NS - c0))"
}
client > /dev/null # warm-up: the server's hot code compiled

off=() on=() offcpu=() oncpu=()
for r in $(seq "$ROUNDS"); do
	read -r n c < <(client)
	off+=("$n") offcpu+=("$((c / n))")
	# shellcheck disable=SC2086 # words on purpose
	"$B/otelprof" record --duration $((S + WARM + 30)) --frequency 19 ${NODE_HTTP_RECORD_ARGS:-} \
		--output "$TMP/o.otlp" 2> "$TMP/rec.err" &
	rp=$!
	for _ in $(seq 300); do grep -q recording "$TMP/rec.err" && break; sleep 0.1; done
	grep -q recording "$TMP/rec.err" || { echo "node_http: otelprof did not start" >&2; cat "$TMP/rec.err" >&2; exit 1; }
	settle "$rp"
	read -r n c < <(client)
	on+=("$n") oncpu+=("$((c / n))")
	kill -INT "$rp"; wait "$rp" || { echo "node_http: otelprof failed" >&2; cat "$TMP/rec.err" >&2; exit 1; }
	echo "node_http: round $r: off ${off[-1]} requests (${offcpu[-1]} ns CPU each), on ${on[-1]} (${oncpu[-1]} ns) in $S s" >&2
done
median() { printf '%s\n' "$@" | sort -n | awk -v f="${MEDIAN_FMT:-%.0f}" '{ v[NR] = $1 } END { printf f, (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# each round's on/off of $1 and $2 (arrays' names), and their median
ratios() {
	local -n a=$1 b=$2
	local i
	for i in "${!a[@]}"; do awk -v x="${b[$i]}" -v y="${a[$i]}" 'BEGIN { printf "%.3f\n", x / y }'; done
}
rq=$(ratios off on | tr '\n' ' ' | sed 's/ $//')
rc=$(ratios offcpu oncpu | tr '\n' ' ' | sed 's/ $//')
label="$("$NODE" --version), $ROUNDS rounds of $S s"
printf 'Node HTTP throughput, 19 Hz on vs off (%s)\t%s req/s off, %s on (medians); on/off per round %s, median %s\n' \
	"$label" "$(($(median "${off[@]}") / S))" "$(($(median "${on[@]}") / S))" "$rq" "$(MEDIAN_FMT=%.3f median $rq)"
printf 'Node HTTP server CPU per request, 19 Hz on vs off (%s)\t%s ns off, %s ns on (medians); on/off per round %s, median %s\n' \
	"$label" "$(median "${offcpu[@]}")" "$(median "${oncpu[@]}")" "$rc" "$(MEDIAN_FMT=%.3f median $rc)"
