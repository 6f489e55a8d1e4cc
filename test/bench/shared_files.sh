#!/usr/bin/env bash
# Identical files kept once (issue 27 item 1), A/B in one build: four Node
# processes, npm's node 20 binary and three copies of it (other inodes,
# the same bytes: the same runtime in four containers), each running
# test/workloads/node/busy.js, recorded whole-host at 19 Hz with
# OTELPROF_SHARE_FILES=1 and =0 alternated. Per run one row: the
# recorder's RssAnon and peak RSS near the end, the symbols it holds, its
# unwind tables in the kernel, files_shared ("label<TAB>value", as make
# bench prints rows).
#   test/bench/shared_files.sh BUILD_DIR [ROUNDS] [SECONDS]
set -uo pipefail
B=$(cd "${1:-build}" && pwd)
R=${2:-3}
S=${3:-20}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
NODE=$(readlink -f "${OTELPROF_RUNTIME_CACHE:-/var/cache/otelprof-test}/node/20/node_modules/.bin/node")
[ -x "$NODE" ] || { echo "shared_files: no node 20 (make node-releases)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
for i in 1 2 3; do mkdir -p "$TMP/$i" && cp "$NODE" "$TMP/$i/node"; done
for r in $(seq "$R"); do
	for share in 1 0; do
		pids=()
		for n in "$NODE" "$TMP"/{1,2,3}/node; do
			"$n" "$HERE/test/workloads/node/busy.js" $((S + 5)) > /dev/null &
			pids+=($!)
		done
		sleep 1
		OTELPROF_SHARE_FILES=$share "$B/otelprof" record --duration "$S" --frequency 19 \
			--output "$TMP/r.otlp" 2> "$TMP/err" &
		rp=$!
		sleep $((S - 2))
		anon=$(awk '/^RssAnon:/ { print $2 }' "/proc/$rp/status")
		hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$rp/status")
		wait "$rp"
		kill "${pids[@]}" 2> /dev/null
		wait "${pids[@]}" 2> /dev/null
		sym=$(grep -o '[0-9]* KiB of symbols from [0-9]* files' "$TMP/err" | tail -1)
		tab=$(grep -o 'tables: [0-9]* files, [0-9]* rows, [0-9]* KiB in the kernel' "$TMP/err" | tail -1)
		shared=$(grep -o 'identical files: [0-9]*' "$TMP/err" | grep -o '[0-9]*$')
		procs=$(grep -o '[0-9]* processes tracked' "$TMP/err" | tail -1)
		printf 'identical files: 4 node (1 + 3 copies), 19 Hz, sharing %s, round %s\t%s\n' \
			"$([ "$share" = 1 ] && echo on || echo off)" "$r" \
			"RssAnon $((anon / 1024)) MiB, peak RSS $((hwm / 1024)) MiB; $sym; $tab; files_shared ${shared:-0}; $procs; load $(cut -d' ' -f1 /proc/loadavg)"
	done
done
