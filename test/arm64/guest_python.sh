#!/bin/busybox sh
# /init of the arm64 CPython guest (python.sh): runs Debian's arm64
# python3.11 on hot.py, records the whole guest with the arm64 otelprof
# once the workload is past its imports, and prints the CLI's log,
# hot.py's own CPU times and the samples (otlp-json) on the console
# between markers, for judge_python.py.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
ulimit -l unlimited
. /arm64.env
for a in $(cat /proc/cmdline); do
	case $a in
	otelprof.seconds=*) SECONDS_REC=${a#*=} ;;
	otelprof.hz=*) HZ=${a#*=} ;;
	esac
done
echo "guest: $(uname -r) $(uname -m), $(grep -c ^processor /proc/cpuinfo) CPUs, btf $([ -e /sys/kernel/btf/vmlinux ] && echo yes || echo no)"
# hot.py prints the CPU time it spent in hot_a and hot_b so far, once a
# second. Its first line: the imports are done (seconds of deep stacks
# under emulation), so that the recording sees its steady state.
/usr/bin/python3.11 /py/hot.py 600 >/tmp/hot_py.out 2>&1 &
py=$!
for i in $(seq 900); do [ -s /tmp/hot_py.out ] && break; sleep 0.1; done
echo "guest: python3.11 pid $py up at $(cut -d' ' -f1 /proc/uptime) s uptime"
# The CPython walk program is loaded on demand, when the recorder finds
# the interpreter (as on a host). A 64 MiB ring buffer: under emulation on
# a loaded host the recorder drains late, and with the default one it lost
# 553-1,608 samples of 1,100-3,600 (1,039 on 6.12 with python3.11 keeping
# 323); with this one, none.
OTELPROF_DEBUG_BPF_LOG=stats $BUILD/otelprof record --duration $SECONDS_REC --frequency $HZ --ringbuf-kb 65536 --output /tmp/out.otlp 2>/tmp/record.err &
rec=$!
while kill -0 $rec 2>/dev/null && ! grep -q recording /tmp/record.err; do sleep 0.1; done
py_start=$(tail -n1 /tmp/hot_py.out)
# hot.py's last line once a second with the guest's clock (that of the
# samples' timestamps): the judge takes its CPU times from where the
# samples it judges start.
while :; do echo "at $(date +%s) $(tail -n1 /tmp/hot_py.out)"; sleep 1; done >/tmp/hot_py.ts &
snap=$!
wait $rec
rc=$?
py_end=$(tail -n1 /tmp/hot_py.out)
kill $snap
echo "guest: record exit $rc"
echo "==== record.err"
cat /tmp/record.err
# hot.py's own CPU time at the recording's start and end (and each second
# between), and
# python3.11's ELF entry point (where its outermost frame is).
echo "==== python pid $py"
echo "entry 0x$(od -An -tx8 -j24 -N8 /usr/bin/python3.11 | tr -d ' ')"
echo "start $py_start"
echo "end $py_end"
cat /tmp/hot_py.ts
echo "==== otlp-json.gz.b64"
[ -s /tmp/out.otlp ] && $BUILD/otelprof convert /tmp/out.otlp --format otlp-json | gzip -1 | base64
echo "==== bpffs"
ls /sys/fs/bpf
echo "==== end"
kill -9 $py 2>/dev/null
sync
poweroff -f
