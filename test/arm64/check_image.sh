#!/usr/bin/env bash
# The arm64 image root (make image-context-arm64), checked as files since
# nothing here runs arm64 code outside qemu-system: every ELF file is
# aarch64, every DT_NEEDED of each is inside the root, and the collector's
# loader (PT_INTERP) is there. One line per check; exit 1 on a failure.
#   check_image.sh ROOTFS
set -euo pipefail
root=$1
fail=0
multi=/usr/lib/aarch64-linux-gnu
n=0
while IFS= read -r f; do
	file -L "$f" | grep -q 'ELF' || continue
	n=$((n + 1))
	if ! file -L "$f" | grep -q 'ARM aarch64'; then
		echo "arm64 image: FAIL $f is not aarch64: $(file -L "$f")"
		fail=1
	fi
	for d in $(readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[ -e "$root$multi/$d" ] || [ -e "$root/usr/local/lib/$d" ] || {
			echo "arm64 image: FAIL $f needs $d, not in the root"
			fail=1
		}
	done
done < <(find "$root" -type f)
interp=$(readelf -l "$root/usr/local/bin/otelcol-profiler" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
if [ -z "$interp" ] || [ ! -e "$root$interp" ]; then
	echo "arm64 image: FAIL the collector's loader ${interp:-?} is not in the root"
	fail=1
fi
[ $fail = 0 ] && echo "arm64 image: ok   $n aarch64 ELF files, their DT_NEEDED inside the root, loader $interp ($(du -sh "$root" | cut -f1))"
exit $fail
