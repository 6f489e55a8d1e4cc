#!/bin/busybox sh
# /init of the CPU-scale bench's guest (cpu_scale.sh): records the whole
# guest at otelprof.hz with one busy workload, and prints the recorder's
# memory and its BPF maps' memory (the memlock of every map fd it holds)
# on the console, once it has run otelprof.seconds.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
ulimit -l unlimited
. /matrix.env
for a in $(cat /proc/cmdline); do
	case $a in
	otelprof.seconds=*) SECS=${a#*=} ;;
	otelprof.hz=*) HZ=${a#*=} ;;
	esac
done
SECS=${SECS:-10}
HZ=${HZ:-99}
ncpu=$(grep -c ^processor /proc/cpuinfo)
$BUILD/workloads/callgraph_nofp 600 >/dev/null 2>&1 &
# Stopped by us once read: under TCG with many vCPUs the shell's sleep can
# wake many seconds late, past a duration the recorder would keep.
$BUILD/otelprof record --quiet --duration 3600 --frequency $HZ --output /tmp/x.otlp 2>/tmp/record.err &
rec=$!
sleep $SECS
maps=0
ring=0
for f in /proc/$rec/fdinfo/*; do
	m=$(sed -n 's/^memlock:[[:space:]]*//p' $f 2>/dev/null)
	[ -n "$m" ] && maps=$((maps + m))
	# the ring buffer (BPF_MAP_TYPE_RINGBUF, 27): sized by online CPUs
	t=$(sed -n 's/^map_type:[[:space:]]*//p' $f 2>/dev/null)
	[ "$t" = 27 ] && [ -n "$m" ] && ring=$((ring + m))
	# each map on its own line, to tell which ones grow with CPUs
	[ -n "$m" ] && echo "SCALEMAP $(sed -nE 's/^(map_type|value_size|max_entries):[[:space:]]*/\1=/p' $f | tr '\n' ' ')memlock=$m"
done
rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' /proc/$rec/status)
anon=$(sed -n 's/^RssAnon:[[:space:]]*\([0-9]*\).*/\1/p' /proc/$rec/status)
hwm=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\).*/\1/p' /proc/$rec/status)
possible=$(cat /sys/devices/system/cpu/possible)
echo "SCALE ncpu=$ncpu possible=$possible hz=$HZ rss_kb=$rss anon_kb=$anon hwm_kb=$hwm maps_bytes=$maps ring_bytes=$ring"
kill -INT $rec
wait $rec
echo "SCALE-RC $?"
cat /tmp/record.err
sync
poweroff -f
