#!/bin/busybox sh
# /init of the arm64 interpreter guest (interp.sh): for each entry in
# /interp/order, runs its interpreter on its workload, records the whole
# guest with the arm64 otelprof once the workload prints its first line
# (past its start-up: the recording sees its steady state), and prints
# the CLI's log, the workload's own CPU times and the samples (otlp-json)
# on the console between "==== RUNTIME ..." markers, for judge_interp.py.
# One entry at a time: the next starts when the last one is killed.
. /guest_boot.sh
# The workload's last line of CPU times.
last() { grep '^{' "$1" | tail -n1; }
for rt in $(cat /interp/order); do
	. /interp/$rt.conf
	out=/tmp/$rt.out
	# The workload prints the CPU time it spent in hot_a and hot_b so
	# far, once a second, a JSON object a line; its first: past its
	# start-up. Anything else it prints (php's warning that the guest has
	# no time zone database) is not a time: last() skips it.
	# shellcheck disable=SC2086
	$BIN $ARGS >$out 2>&1 &
	pid=$!
	for i in $(seq 900); do grep -q '^{' $out && break; sleep 0.1; done
	echo "guest: $rt pid $pid up at $(cut -d' ' -f1 /proc/uptime) s uptime, $(grep MemAvailable /proc/meminfo | tr -s ' ')"
	grep -v '^{' $out | head -n 3 | sed "s/^/guest: $rt printed: /"
	# The runtime's walk program is loaded on demand, when the recorder
	# finds the interpreter (as on a host). A 64 MiB ring buffer: under
	# emulation on a loaded host the recorder drains late, and with the
	# default one it lost 553-1,608 samples of 1,100-3,600 (CPython);
	# with this one, none.
	OTELPROF_DEBUG_BPF_LOG=stats $BUILD/otelprof record --duration $SECONDS_REC --frequency $HZ --ringbuf-kb 65536 --output /tmp/$rt.otlp 2>/tmp/$rt.err &
	rec=$!
	while kill -0 $rec 2>/dev/null && ! grep -q recording /tmp/$rt.err; do sleep 0.1; done
	w_start=$(last $out)
	# The workload's last line once a second with the guest's clock (that
	# of the samples' timestamps): the judge takes its CPU times from
	# where the samples it judges start.
	while :; do echo "at $(date +%s) $(last $out)"; sleep 1; done >/tmp/$rt.ts &
	snap=$!
	wait $rec
	rc=$?
	w_end=$(last $out)
	kill $snap
	echo "guest: $rt record exit $rc"
	echo "==== $rt record.err"
	cat /tmp/$rt.err
	# the workload's own CPU times at the recording's start and end (and
	# each second between), and its interpreter's ELF entry point (where
	# the outermost frame of a stripped binary is)
	echo "==== $rt pid $pid"
	echo "entry 0x$(od -An -tx8 -j24 -N8 $BIN | tr -d ' ')"
	echo "start $w_start"
	echo "end $w_end"
	cat /tmp/$rt.ts
	echo "==== $rt otlp-json.gz.b64"
	[ -s /tmp/$rt.otlp ] && $BUILD/otelprof convert /tmp/$rt.otlp --format otlp-json | gzip -1 | base64
	echo "==== $rt bpffs"
	ls /sys/fs/bpf
	kill -9 $pid 2>/dev/null
	wait $pid 2>/dev/null
	rm -f /tmp/$rt.otlp
done
echo "==== end"
sync
poweroff -f
