#!/usr/bin/env bash
# Boots the arm64 interpreter guest (interp.sh's initramfs) once under
# qemu-system-aarch64 (TCG) and keeps its console:
#   boot_interp.sh VMLINUZ INITRAMFS SECONDS CONSOLE_LOG RUNTIME...
# (RUNTIME...: the entries in the initramfs, for the time limit: a
# recording of SECONDS each, plus their start-up under emulation.)
set -euo pipefail
kernel=$1 initrd=$2 seconds=$3 log=$4
shift 4
limit=$((120 + $# * (seconds + 90)))
# pauth-impdef: pointer authentication stays on (arm64 user space uses
# it) at a third of plain -cpu max's emulation cost.
timeout "$limit" qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on -smp 2 -m 1024 \
	-accel tcg -nographic -no-reboot -kernel "$kernel" -initrd "$initrd" \
	-append "console=ttyAMA0 quiet panic=-1 otelprof.seconds=$seconds" >"$log" 2>&1 || true
