#!/bin/busybox sh
# /init of the arm64 smoke test's Java guest (java.sh): runs Debian's
# arm64 OpenJDK 17 with FibHash (a fib thread and a SHA-256 thread), lets
# the JIT reach steady state on the workload's own CPU time, records the
# whole guest with the arm64 otelprof and prints, between markers on the
# console, the threads' CPU time before and after the recording
# (schedstat) and when (unix seconds), the CLI's log and the profile as otlp-json for
# java_judge.py.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
ulimit -l unlimited
. /java.env
for a in $(cat /proc/cmdline); do
	case $a in
	otelprof.seconds=*) SECONDS_REC=${a#*=} ;;
	otelprof.warm=*) WARM=${a#*=} ;;
	otelprof.lead=*) LEAD=${a#*=} ;;
	esac
done
echo "guest: $(uname -r) $(uname -m), $(grep -c ^processor /proc/cpuinfo) CPUs"
# The JVM at nice 10: the recorder (nice 0) keeps up on two emulated CPUs.
# A small serial-GC heap: the guest's RAM also holds the initramfs.
printf '#!/bin/sh\nrenice -n 10 -p $$ >/dev/null\nexec "$@"\n' >/tmp/niced
chmod +x /tmp/niced
/tmp/niced $JAVA -Xmx96m -XX:+UseSerialGC -XX:-UsePerfData -cp $CLASSES FibHash 900 >/tmp/java.out 2>&1 &
jpid=$!
tid_of() { # the thread of process $1 named $2
	for t in /proc/$1/task/*; do
		[ "$(cat $t/comm 2>/dev/null)" = "$2" ] && { echo ${t##*/}; return; }
	done
}
cpu_of() { cut -d' ' -f1 /proc/$jpid/task/$1/schedstat 2>/dev/null || echo 0; }
fib= hash=
for i in $(seq 600); do
	fib=$(tid_of $jpid fib) hash=$(tid_of $jpid hash)
	[ -n "$fib" ] && [ -n "$hash" ] && break
	sleep 0.2
done
echo "guest: java pid $jpid, fib $fib, hash $hash ($(cut -d' ' -f1 /proc/uptime) s uptime)"
# Steady state on the workload's own CPU: the fib thread has run WARM s
# (the JIT compiled fib and digest long before, even under emulation).
for i in $(seq 900); do
	[ "$(cpu_of $fib)" -ge $((WARM * 1000000000)) ] 2>/dev/null && break
	sleep 0.2
done
echo "guest: warm: fib thread $(cpu_of $fib) ns CPU ($(cut -d' ' -f1 /proc/uptime) s uptime)"
# The judged window opens LEAD s after the recorder starts: under
# emulation it takes seconds to read libjvm and the JVM's layout, and
# while it does, the two threads share the CPUs left differently (the
# hash thread sleeps 2 ms in 6, so it gains when the CPUs are short).
# Its ends in unix seconds (busybox's date has no %N), for the judge to
# pick the samples inside.
OTELPROF_DEBUG_BPF_LOG=stats $BUILD/otelprof record --duration $((LEAD + SECONDS_REC + 1)) --frequency $HZ \
	--output /tmp/out.otlp 2>/tmp/record.err &
rec=$!
while kill -0 $rec 2>/dev/null && ! grep -q recording /tmp/record.err; do sleep 0.1; done
sleep $LEAD
echo "cpu0 fib $(cpu_of $fib) hash $(cpu_of $hash) at $(date +%s)"
sleep $SECONDS_REC
echo "cpu1 fib $(cpu_of $fib) hash $(cpu_of $hash) at $(date +%s)"
wait $rec
echo "guest: record exit $?"
echo "tids fib $fib hash $hash pid $jpid"
echo "==== record.err"
cat /tmp/record.err
echo "==== java.out"
cat /tmp/java.out
echo "==== otlp-json.gz.b64"
[ -s /tmp/out.otlp ] && $BUILD/otelprof convert /tmp/out.otlp --format otlp-json | gzip -1 | base64
echo "==== bpffs"
ls /sys/fs/bpf
echo "==== end"
kill -9 $jpid 2>/dev/null
sync
poweroff -f
