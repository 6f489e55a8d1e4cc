#!/usr/bin/env bash
# "Real host" (part of make bench; runs alone too): what the recorder costs
# where a production host's processes run, not small C programs: big Go
# daemons (dockerd and containerd, Debian's docker.io, started here on
# private sockets and directories; without them large Go binaries idle),
# a Python, a Node, a Java and a Perl service busy, and an exec churn of
# 20 system binaries, one every 50 ms.
#   test/bench/realhost.sh BUILD_DIR [SECONDS] [HZ...]
# OTELPROF=path/to/otelprof measures another build's CLI (A/B runs);
# WARM=N starts the window N s in (default 3: start-up included; 20 of a
# 45 s recording measures the steady state).
# Per rate one "label<TAB>value" row: the recorder's anonymous RSS at the
# end of the window (RssAnon) and its mean over the window (read every
# second), its peak RSS (VmHWM), the memory of its BPF
# maps (memlock, from its own fds), its CPU over the window from WARM s in
# to 1 s before the end (schedstat of every thread + run time of its BPF
# programs, kernel.bpf_stats_enabled) as % of all CPU, and what the library
# says it holds (symbol_memory_bytes, processes, files).
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
S=${2:-30}
shift 2 2>/dev/null || shift $#
RATES=${*:-19 99}
W=$B/workloads
CLI=${OTELPROF:-$B/otelprof}
WARM=${WARM:-3}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
NCPU=$(nproc)
TMP=$(mktemp -d)
DAEMONS=()
cleanup() {
	kill $(jobs -p) 2>/dev/null || true
	for p in "${DAEMONS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${DAEMONS[@]}"; do while kill -0 "$p" 2>/dev/null; do sleep 0.1; done; done
	umount "$TMP"/dock/dd/overlay2 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
die() { echo "realhost: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root"

exec 9<> <(:) # never readable: sleeps without a process
nap() { read -r -t "$1" -u 9 || true; }
. "$(dirname "$0")/proc_cpu.sh" # cpu_ns PID: into CPU_NS; fd_stats PID

# ---- the host: daemons, services, churn ----
GO_NOTE=""
if ! command -v dockerd > /dev/null || ! command -v containerd > /dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends docker.io > "$TMP/apt.log" 2>&1 ||
		echo "realhost: docker.io could not be installed (see apt)" >&2
fi
mkdir -p "$TMP/dock"
if command -v dockerd > /dev/null && command -v containerd > /dev/null; then
	containerd --root "$TMP/dock/ctd" --state "$TMP/dock/ctds" --address "$TMP/dock/ctd.sock" \
		> "$TMP/dock/ctd.log" 2>&1 &
	DAEMONS+=($!)
	for _ in $(seq 50); do [ -S "$TMP/dock/ctd.sock" ] && break; nap 0.1; done
	dockerd --containerd "$TMP/dock/ctd.sock" --data-root "$TMP/dock/dd" --exec-root "$TMP/dock/de" \
		-H "unix://$TMP/dock/docker.sock" --pidfile "$TMP/dock/dockerd.pid" \
		--iptables=false --ip6tables=false --bridge=none > "$TMP/dock/dd.log" 2>&1 &
	DAEMONS+=($!)
	for _ in $(seq 100); do [ -S "$TMP/dock/docker.sock" ] && break; nap 0.1; done
	if [ -S "$TMP/dock/docker.sock" ]; then GO_NOTE="dockerd + containerd running"; fi
fi
if [ -z "$GO_NOTE" ]; then
	# The engine cannot start here: large Go binaries idle instead.
	for p in "${DAEMONS[@]}"; do kill "$p" 2>/dev/null || true; done
	DAEMONS=()
	[ -x "$B/otelcol-profiler" ] || die "neither dockerd nor $B/otelcol-profiler (make collector)"
	"$B/otelcol-profiler" --help > /dev/null 2>&1 || true
	GO_NOTE="dockerd could not start: idle large Go binaries instead"
	for _ in 1 2; do "$B/otelcol-profiler" components > /dev/null 2>&1 & DAEMONS+=($!); done
fi

T=$((S + 6)) # services outlive every recording
svc() { # a service busy for its whole life
	"$@" > /dev/null 2>&1 &
	SVC+=($!)
}
start_services() {
	SVC=()
	svc python3 "$SRC/test/workloads/runtimes/hot.py" "$T"
	svc node "$SRC/test/workloads/node/busy.js" "$T"
	svc java -cp "$W/java" FibHash "$T"
	svc perl -e 'my $e = time + $ARGV[0]; my $s = 0;
		sub work { my $x = 0; $x += $_ * $_ for 1 .. 20000; $x }
		while (time < $e) { $s += work(); select(undef, undef, undef, 0.002) }' "$T"
	# Exec churn: 20 system binaries, one every 50 ms.
	(
		bins=(/usr/bin/true /usr/bin/false /usr/bin/ls /usr/bin/date /usr/bin/uname /usr/bin/id
			/usr/bin/cat /usr/bin/echo /usr/bin/env /usr/bin/hostname /usr/bin/whoami
			/usr/bin/stat /usr/bin/sort /usr/bin/head /usr/bin/tail /usr/bin/wc /usr/bin/tr
			/usr/bin/seq /usr/bin/basename /usr/bin/readlink)
		exec 9<> <(:)
		end=$((SECONDS + T)) i=0
		while [ "$SECONDS" -lt "$end" ]; do
			"${bins[i % 20]}" / < /dev/null > /dev/null 2>&1 || true
			i=$((i + 1))
			read -r -t 0.05 -u 9 || true
		done
	) &
	SVC+=($!)
}
stop_services() {
	kill "${SVC[@]}" 2>/dev/null || true
	wait "${SVC[@]}" 2>/dev/null || true
}

sysctl -qw kernel.bpf_stats_enabled=1
for hz in $RATES; do
	start_services
	nap 2 # services past their start-up
	"$CLI" record --duration "$S" --frequency "$hz" --output "$TMP/r.otlp" 2> "$TMP/r.err" &
	rp=$!
	nap "$WARM"
	cpu_ns "$rp"; c0=$CPU_NS; read -r b0 _ < <(fd_stats "$rp")
	win=$((S - WARM - 1))
	# RssAnon every second of the window (no fork: read by the shell),
	# its mean beside the last: memory read for a while and freed again
	# (a DWARF image) makes one reading a matter of timing.
	asum=0 an=0
	for _ in $(seq "$win"); do
		nap 1
		while read -r k v _; do
			[ "$k" = RssAnon: ] && { asum=$((asum + v)); an=$((an + 1)); }
		done < "/proc/$rp/status"
	done
	cpu_ns "$rp"; c1=$CPU_NS; read -r b1 maps < <(fd_stats "$rp")
	anon=$(awk '/^RssAnon:/ { print $2 }' "/proc/$rp/status")
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$rp/status")
	wait "$rp" || die "otelprof record failed: $(tail -3 "$TMP/r.err")"
	stop_services
	# The library's own figures, from record's last progress line.
	symmem=$(grep -o '[0-9]* processes tracked.*' "$TMP/r.err" | tail -1)
	printf 'real host %s Hz (%s; python, node, java, perl busy; exec churn 20/s)\t' "$hz" "$GO_NOTE"
	awk -v u=$((c1 - c0)) -v b=$((b1 - b0)) -v w="$win" -v n="$NCPU" -v a="$anon" -v h="$hwm" -v m="$maps" \
		-v am=$((an ? asum / an : 0)) \
		'BEGIN { printf "CPU %.3f%% of all CPU (user+sys %.0f ms, BPF %.0f ms in %d s); RssAnon %.1f MiB (window mean %.1f), peak RSS %.1f MiB, BPF maps %.1f MiB", 100 * (u + b) / (w * 1e9 * n), u / 1e6, b / 1e6, w, a / 1024, am / 1024, h / 1024, m / 1048576 }'
	printf '; at %s s: %s\n' "$(((S - 1) / 5 * 5))" "${symmem:-?}"
done
sysctl -qw kernel.bpf_stats_enabled=0
