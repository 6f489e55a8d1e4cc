#!/bin/busybox sh
# /init of the kernel matrix's guest (see initramfs.sh): runs the profiler
# on the booted kernel against known workloads, all at once, and sends
# what the host test judges (the profile, the workloads' CPU time and
# output, the CLI's log) as a base64 tar.gz on the second serial port.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
# /tmp stays the initramfs's own (writable) directory: a tmpfs there
# would hide a build that lives under /tmp.
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
ulimit -l unlimited
. /matrix.env
hostname guest
out=/tmp/out
mkdir -p $out
# Each step with the guest's uptime: a slow guest then shows where.
log() { echo "guest: $* (uptime $(cut -d' ' -f1 /proc/uptime) s)"; }
# Where KASLR put the kernel: the host names a hung guest's instruction
# pointers from it (kernels_test.go).
log "kernel text at $(grep -m1 ' _text$' /proc/kallsyms | cut -d' ' -f1)"

# Options from the kernel command line: otelprof.KEY=VALUE.
for a in $(cat /proc/cmdline); do
	case $a in
	otelprof.seconds=*) SECONDS_REC=${a#*=} ;;
	otelprof.hz=*) HZ=${a#*=} ;;
	otelprof.warmup=*) WARMUP=${a#*=} ;;
	otelprof.env=*) export "${a#otelprof.env=}" ;;
	esac
done
SECONDS_REC=${SECONDS_REC:-30}
WARMUP=${WARMUP:-10}
HZ=${HZ:-99}
W=$BUILD/workloads
uname -r >$out/uname
# 1 on a PREEMPT_RT kernel.
cat /sys/kernel/realtime >$out/realtime 2>/dev/null || echo 0 >$out/realtime
cat /proc/cpuinfo | grep -c ^processor >$out/ncpu
[ -e /sys/kernel/btf/vmlinux ] && echo yes >$out/btf

# CPU time of every workload (ns, summed over its threads' schedstat).
stat_all() {
	for w in callgraph syscalls deep ctx; do
		ns=0
		for f in /proc/$(cat $out/$w.pid)/task/*/schedstat; do
			read -r a b c <$f && ns=$((ns + a))
		done
		echo "$w $ns"
	done >$out/stat.$1
	# The kernel's own user/system split of the syscall workload (clock
	# ticks, fields 14 and 15): the truth for its kernel-frame share.
	when=$1
	read -r line </proc/$(cat $out/syscalls.pid)/stat
	set -- ${line##*\)}
	echo "${12} ${13}" >$out/syscalls.ticks.$when
}

log "recording ${SECONDS_REC} s at ${HZ} Hz on $(uname -r)"
# Every runtime's program is loaded too (not only where its runtime
# runs), and the off-CPU programs (1% of switch-outs: little load), so
# that each one's verifier figures are printed on every kernel.
OTELPROF_LOAD_RUNTIMES=all OTELPROF_DEBUG_BPF_LOG=stats \
$BUILD/otelprof record --duration $SECONDS_REC --frequency $HZ --off-cpu-threshold 0.01 --output $out/host.otlp 2>$out/record.err &
rec=$!
# A recorder still running long after its duration: say on the console
# where it is (its log so far, each thread's state and kernel stack),
# before the host's timeout ends the guest with nothing to show.
# It polls, and ends by itself once the recorder has: a `kill` of this
# subshell did not always end it (busybox runs `sleep` inside the shell),
# and the script's `wait` below then waited out the whole sleep, 129 s.
(
	i=0
	while [ $i -lt $((SECONDS_REC + WARMUP + 120)) ]; do
		sleep 1
		kill -0 $rec 2>/dev/null || exit 0
		i=$((i + 1))
	done
	log "otelprof still running $((SECONDS_REC + WARMUP + 120)) s after its start; its log:"
	cat $out/record.err
	for t in /proc/$rec/task/*; do
		log "thread ${t##*/}: $(cut -d' ' -f2-3 $t/stat) wchan $(cat $t/wchan 2>/dev/null)"
		cat $t/stack 2>/dev/null
	done
	# What every CPU runs and every blocked task waits on, from the
	# kernel's log (the console shows only errors).
	echo 1 >/proc/sys/kernel/sysrq
	echo l >/proc/sysrq-trigger
	echo w >/proc/sysrq-trigger
	log "kernel log:"
	dmesg | tail -n 300
) &
watchdog=$!
while kill -0 $rec 2>/dev/null && ! grep -q recording $out/record.err; do sleep 0.1; done
cut -d' ' -f1 /proc/uptime >$out/started_at
# The workloads start WARMUP s into the recording: an emulated CPU is
# 10-50 times slower than a real one, and the profiler's own start-up
# (unwind tables of every file it maps, libc's among them) outlasts the
# library's budgets for samples waiting on tables. They run below the
# profiler, as a deployed one would be (nice values are per thread: the
# shell's is inherited by every thread started after).
sleep $WARMUP
renice -n 10 -p $$ >/dev/null
$W/callgraph_nofp 600 >/dev/null 2>$out/callgraph.err &
echo $! >$out/callgraph.pid
$W/syscalls_fp 600 >/dev/null 2>$out/syscalls.err &
echo $! >$out/syscalls.pid
$W/deep_recursion 600 300 >/dev/null 2>$out/deep.err &
echo $! >$out/deep.pid
$W/ctx_linked_tlsdesc --threads 1 --seconds 600 >$out/ctx.out 2>$out/ctx.err &
echo $! >$out/ctx.pid
renice -n 0 -p $$ >/dev/null
log "workloads started"
# Judged from 2 s later on a second boundary (busybox date has no %N):
# samples from then on against the CPU time from then on.
sleep 2
s0=$(date +%s)
while [ "$(date +%s)" = "$s0" ]; do sleep 0.02; done
stat_all before
date +%s >$out/judged_from
wait $rec
echo $? >$out/record.rc
log "recorder exited ($(cat $out/record.rc))"
kill $watchdog 2>/dev/null
stat_all after
cut -d' ' -f1 /proc/uptime >$out/stopped_at
echo $t0 >$out/launched_at
cat $out/record.err

# The context workload prints its last intervals on SIGTERM.
kill -TERM $(cat $out/ctx.pid)
for i in $(seq 100); do kill -0 $(cat $out/ctx.pid) 2>/dev/null || break; sleep 0.2; done
for w in callgraph syscalls deep ctx; do kill -9 $(cat $out/$w.pid) 2>/dev/null; done
wait 2>/dev/null
log "workloads stopped"
ls /sys/fs/bpf >$out/bpffs 2>&1

log "sending results"
(cd $out && tar -czf - .) | base64 >/dev/ttyS1
echo "====" >/dev/ttyS1
log "done"
sync
poweroff -f
