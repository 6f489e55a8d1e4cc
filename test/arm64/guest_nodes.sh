#!/bin/busybox sh
# /init of the arm64 guest of the other Node majors (nodes.sh): runs each
# major's hot.js at once (one boot for all), records the whole guest with
# the arm64 otelprof once each prints its first line, and prints the CLI's
# log, each node's own CPU times (stamped with the guest's clock once a
# second) and the samples (otlp-json) on the console between markers, for
# judge_node.py, which judges each node's main thread against its own CPU
# time as in the main guest.
. /guest_boot.sh
MAJORS=$(cat /nodes.list)
# All at nice 5, as Node 22 in the main guest: the recorder, at 0, keeps
# up with reading four node binaries' symbols and unwind tables.
pids=
for m in $MAJORS; do
	/tmp/niced 5 /opt/node$m/bin/node /opt/node$m/hot.js 600 >/tmp/node$m.out 2>&1 &
	pids="$pids $!"
	echo $! >/tmp/node$m.pid
done
n0=$(cut -d' ' -f1 /proc/uptime)
# V8's start-up under emulation: seconds of CPU each.
for i in $(seq 1800); do
	up=0
	for m in $MAJORS; do [ -s /tmp/node$m.out ] && up=$((up + 1)); done
	[ $up = $(echo $MAJORS | wc -w) ] && break
	sleep 0.1
done
echo "guest: $up nodes running hot.js: $n0 -> $(cut -d' ' -f1 /proc/uptime) s uptime"
# The V8 walk is loaded on demand, when the recorder finds node (as on a
# host); a 64 MiB ring buffer as in the CPython guest.
OTELPROF_DEBUG_BPF_LOG=stats $BUILD/otelprof record --duration $SECONDS_REC --frequency $HZ --ringbuf-kb 65536 --output /tmp/out.otlp 2>/tmp/record.err &
rec=$!
while kill -0 $rec 2>/dev/null && ! grep -q recording /tmp/record.err; do sleep 0.1; done
t0=$(cut -d' ' -f1 /proc/uptime)
# Each hot.js's CPU times with the guest's clock (whole seconds), for the
# judge to take them over its samples' window.
while kill -0 $rec 2>/dev/null; do
	for m in $MAJORS; do echo "$(date +%s) $(tail -n 1 /tmp/node$m.out)" >>/tmp/node$m.times; done
	sleep 1
done &
wait $rec
rc=$?
t1=$(cut -d' ' -f1 /proc/uptime)
echo "guest: record exit $rc, $t0 -> $t1 s uptime"
echo "==== record.err"
cat /tmp/record.err
for m in $MAJORS; do
	echo "==== node pid $(cat /tmp/node$m.pid)"
	echo "node version $(/opt/node$m/bin/node --version 2>&1)"
	cat /tmp/node$m.times
done
echo "==== otlp-json.gz.b64"
[ -s /tmp/out.otlp ] && $BUILD/otelprof convert /tmp/out.otlp --format otlp-json | gzip -1 | base64
echo "==== bpffs"
ls /sys/fs/bpf
echo "==== end"
kill -9 $pids 2>/dev/null
sync
poweroff -f
