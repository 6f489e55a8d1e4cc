# Sourced first by each arm64 guest's /init (guest.sh, guest_interp.sh,
# guest_nodes.sh; initramfs.sh puts it at /guest_boot.sh): busybox's
# applets, the kernel's file systems, no locked-memory limit for BPF, the
# build's paths (/arm64.env) and the recording's length and rate from the
# kernel command line (otelprof.seconds=, otelprof.hz=). /tmp/niced N CMD
# runs CMD at nice N (Debian's busybox has renice, not nice; the value is
# set before CMD execs, so threads it starts inherit it).
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
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
printf '#!/bin/sh\nn=$1\nshift\nrenice -n $n -p $$ >/dev/null\nexec "$@"\n' >/tmp/niced
chmod +x /tmp/niced
