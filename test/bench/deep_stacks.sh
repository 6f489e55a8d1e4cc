#!/usr/bin/env bash
# BPF time per sample of 50-frame stacks (part of make bench; runs alone
# too): a native stack (deep_recursion) beside the runtimes' walks, in
# one run -- a Python stack 50 frames deep (about 60 with the
# interpreter's own; the interpreter walk), a Perl stack of 50 subs
# (Debian's perl; the context-stack walk), a Ruby stack of 50 methods
# (Debian 12's ruby 3.1; the control-frame walk), a PHP stack 50 frames deep
# (Debian 12's php 8.2; the Zend executor walk) and a Java stack of 50
# compiled frames (Deep.down, kept out of line; about 60 with main, the
# call stub and libjvm's; the HotSpot step of the walk) under JDK 17 and
# JDK 25, and a JavaScript stack 50 frames deep (deep.js under the
# system's Node 20; about 60 with node's own: the V8 step). Needs root.
#   test/bench/deep_stacks.sh BUILD_DIR
# One line "label<TAB>value" per workload: run_time_ns / run_cnt of the
# recorder's perf_event program over 4 s of a whole-host recording at
# 99 Hz, a copy of the workload on every CPU.
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
W=$B/workloads
NCPU=$(nproc)
PY312=/root/.pyenv/versions/3.12.1/bin/python3
PHP82=/usr/bin/php8.2
JDK17=/usr/lib/jvm/java-17-openjdk-amd64/bin/java
JDK25=/usr/lib/jvm/temurin-25-jdk-amd64/bin/java
NODE=/usr/bin/node
for x in "$PY312" /usr/bin/perl /usr/bin/ruby "$PHP82" "$JDK17" "$JDK25" "$NODE"; do
	[ -x "$x" ] || { echo "deep_stacks: $x missing" >&2; exit 1; }
done
TMP=$(mktemp -d)
STATS=$(sysctl -n kernel.bpf_stats_enabled)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"; sysctl -qw kernel.bpf_stats_enabled="$STATS"' EXIT
sysctl -qw kernel.bpf_stats_enabled=1
exec 9<> <(:) # never readable: `read -t X -u 9` sleeps without a process
nap() { read -r -t "$1" -u 9 || true; }

# "run_time_ns run_cnt" of the perf_event programs of recorder $1, from
# its fds' fdinfo (only that recorder's programs).
sample_prog_stats() {
	cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '
		/^pos:/ { sel = 0; id = "" }
		/^prog_type:/ { sel = ($2 == 7) }
		/^prog_id:/ { id = $2; if (seen[id]++) sel = 0 }
		/^run_time_ns:/ && sel { t += $2 }
		/^run_cnt:/ && sel { c += $2 }
		END { print t + 0, c + 0 }'
}
bpf_per_run() { # prints "N ns (M runs)"
	local t0 c0 t1 c1 rp
	"$B/otelprof" record --quiet --duration 7 --frequency 99 --output "$TMP/d.otlp" &
	rp=$!
	nap 2; read -r t0 c0 < <(sample_prog_stats "$rp")
	nap 4; read -r t1 c1 < <(sample_prog_stats "$rp")
	wait "$rp"
	rm -f "$TMP/d.otlp"
	echo "$(((t1 - t0) / (c1 - c0 > 0 ? c1 - c0 : 1))) ns ($((c1 - c0)) runs)"
}
start() { # workload name: one copy, pid appended to WP
	case $1 in
	native) "$W/deep_recursion" 9 50 > /dev/null & ;;
	python) "$PY312" "$(dirname "$0")/../workloads/runtimes/deep.py" 9 50 > /dev/null & ;;
	perl) /usr/bin/perl "$(dirname "$0")/../workloads/runtimes/deep.pl" 9 50 > /dev/null & ;;
	php) "$PHP82" "$(dirname "$0")/../workloads/runtimes/deep.php" 9 50 > /dev/null & ;;
	ruby) /usr/bin/ruby "$(dirname "$0")/../workloads/runtimes/deep.rb" 9 50 > /dev/null & ;;
	node) "$NODE" "$(dirname "$0")/../workloads/runtimes/deep.js" 9 50 > /dev/null & ;;
	java17 | java25)
		local jv=JDK${1#java}
		"${!jv}" -XX:CompileCommand=quiet -XX:CompileCommand=dontinline,Deep::down \
			-cp "$W/java" Deep 10 50 > /dev/null &
		;;
	esac
	WP+=($!)
}
for wl in ${DEEP_STACKS:-native python perl ruby php java17 java25 node}; do
	WP=()
	for _ in $(seq "$NCPU"); do start "$wl"; done
	# the JVMs compile Deep.down first (well under a second)
	case $wl in java* | node) nap 1.5 ;; *) nap 0.3 ;; esac
	case $wl in
	native) label="deep_recursion 50 frames" ;; python) label="python 50 frames" ;;
	perl) label="perl 50 frames" ;;
	php) label="php 8.2 50 frames" ;;
	ruby) label="ruby 3.1 50 frames" ;;
	node) label="node (20) 50 frames" ;;
	*) label="java (JDK ${wl#java}) 50 frames" ;;
	esac
	printf 'BPF time per sample: %s, 99 Hz\t%s\n' "$label" "$(bpf_per_run)"
	kill "${WP[@]}" 2>/dev/null || true
	wait "${WP[@]}" 2>/dev/null || true
done
