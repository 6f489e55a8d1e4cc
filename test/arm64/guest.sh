#!/bin/busybox sh
# /init of the arm64 smoke test's guest (initramfs.sh): starts the
# workloads, records the whole guest with the arm64 otelprof, and prints
# the CLI's log and the profile as folded stacks on the console between
# markers, for run.sh to judge.
. /guest_boot.sh
W=$BUILD/workloads
# The workloads (eight busy threads on two emulated CPUs) run niced: the
# recorder must keep up, or its ring buffer overflows and stacks are
# lost. Their shares of each other are unchanged.
# The context workloads (two threads each, one of them without context)
# at 13: half the weight, so the call-graph workloads keep enough samples.
NICE="/tmp/niced 10"
NICE_CTX="/tmp/niced 13"
# Node.js (V8): hot.js (node.sh), its two hot functions' CPU time printed
# once a second. Started first, alone, until it runs hot.js: V8's
# start-up under emulation takes many CPU seconds (its code translated
# as it first runs), which it would not get among the workloads.
# At nice 5 (three times a workload's weight): enough samples of its main
# thread once the walk is in (which takes the recorder seconds: node's
# symbols and unwind table are big).
/tmp/niced 5 /opt/node/bin/node /opt/node/hot.js 600 >/tmp/node.out 2>&1 &
node=$!
n0=$(cut -d' ' -f1 /proc/uptime)
for i in $(seq 600); do [ -s /tmp/node.out ] && break; sleep 0.1; done
echo "guest: node running hot.js: $n0 -> $(cut -d' ' -f1 /proc/uptime) s uptime"
# Running before the recording starts: the profiler's own start-up under
# emulation takes seconds.
$NICE $W/callgraph_nofp 600 >/dev/null &
cg=$!
$NICE $W/callgraph_pac 600 >/dev/null &
pac=$!
$NICE $W/signal_spin 600 >/dev/null &
sig=$!
echo "guest: pointer authentication: $(grep -m1 -o -w 'paca' /proc/cpuinfo || echo none)"
$NICE $W/syscalls_fp 600 >/dev/null 2>&1 &
sc=$!
# Go (stripped, no cgo): its frames from .gopclntab's SP-delta tables.
$NICE $W/go_callgraph 600 >/dev/null &
gocg=$!
# BPF run time per program (fdinfo run_time_ns / run_cnt), read from the
# recorder's perf_event programs (type 7) just before it stops.
echo 1 >/proc/sys/kernel/bpf_stats_enabled
t0=$(cut -d' ' -f1 /proc/uptime)
# Every runtime's program too, for each one's verifier figures (judged
# against 60% of the limit, as in the x86_64 matrix).
OTELPROF_LOAD_RUNTIMES=all OTELPROF_DEBUG_BPF_LOG=stats \
$BUILD/otelprof record --duration $SECONDS_REC --frequency $HZ --output /tmp/out.otlp 2>/tmp/record.err &
rec=$!
while kill -0 $rec 2>/dev/null && ! grep -q recording /tmp/record.err; do sleep 0.1; done
# Trace correlation (TLS variant I): one thread each publishing intervals
# with known trace/span ids, printed as JSON lines when each ends. Started
# once the recorder runs: found at their exec, not among the start-up
# scan's files, which under emulation left the publisher library unread
# for 10 to more than 30 s.
$NICE_CTX $W/ctx_linked_tlsdesc --threads 1 --seconds 600 >/tmp/ctx_tlsdesc.out 2>/tmp/ctx_tlsdesc.err &
ctx1=$!
$NICE_CTX $W/ctx_exe_le --threads 1 --seconds 600 >/tmp/ctx_le.out 2>/tmp/ctx_le.err &
ctx2=$!
# hot.js's CPU times with the guest's clock (whole seconds) while the
# recorder runs, for the judge to take them over the samples' window.
while kill -0 $rec 2>/dev/null; do echo "$(date +%s) $(tail -n 1 /tmp/node.out)"; sleep 1; done >/tmp/node.times &
sleep $((SECONDS_REC - 1))
for f in /proc/$rec/fdinfo/*; do
	grep -q '^prog_type:.7$' $f 2>/dev/null || continue
	echo "bpf-prog $(grep -E '^(run_time_ns|run_cnt):' $f | tr -d '\t' | tr '\n' ' ')"
done >/tmp/bpf_stats
wait $rec
rc=$?
t1=$(cut -d' ' -f1 /proc/uptime)
echo "guest: record exit $rc, $t0 -> $t1 s uptime"
echo "==== bpf_stats"
cat /tmp/bpf_stats
echo "==== record.err"
cat /tmp/record.err
# The context workloads print their last intervals on SIGTERM.
kill -TERM $ctx1 $ctx2
for i in $(seq 100); do kill -0 $ctx1 2>/dev/null || kill -0 $ctx2 2>/dev/null || break; sleep 0.2; done
echo "==== ctx_tlsdesc pid $ctx1"
cat /tmp/ctx_tlsdesc.out /tmp/ctx_tlsdesc.err
echo "==== ctx_le pid $ctx2"
cat /tmp/ctx_le.out /tmp/ctx_le.err
echo "==== go_callgraph pid $gocg"
echo "==== node pid $node"
echo "node version $(/opt/node/bin/node --version 2>&1)"
cat /tmp/node.times
# The samples with their links and times (otlp-json), compressed for the
# serial console.
echo "==== otlp-json.gz.b64"
[ -s /tmp/out.otlp ] && $BUILD/otelprof convert /tmp/out.otlp --format otlp-json | gzip -1 | base64
echo "==== folded"
[ -s /tmp/out.otlp ] && $BUILD/otelprof convert /tmp/out.otlp --format folded
echo "==== bpffs"
ls /sys/fs/bpf
echo "==== end"
kill -9 $cg $pac $sig $sc $gocg $node 2>/dev/null
sync
poweroff -f
