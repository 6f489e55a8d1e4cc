#!/usr/bin/env bash
# Build the kernel matrix's initramfs: busybox-static as the root, the
# build (library, CLI, test workloads) at the same absolute path as on the
# host (so that mapping names in the guest's profiles are files the host
# test can open), the shared libraries they need, and guest.sh as /init.
#   initramfs.sh BUILD_DIR OUT.cpio.gz [INIT]
# (INIT: another /init, e.g. the CPU-scale bench's.)
set -euo pipefail
build=$(cd "$1" && pwd)
out=$2
init=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

busybox=$(command -v busybox)
file -L "$busybox" | grep -q 'statically linked' ||
	{ echo "initramfs.sh: $busybox is not static (install busybox-static)" >&2; exit 1; }
mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,run,etc,root} "$root/$build/workloads"
cp "$busybox" "$root/bin/busybox"
cp "${init:-$here/guest.sh}" "$root/init"
chmod +x "$root/init"
echo "BUILD=$build" >"$root/matrix.env"

bins=("$build/otelprof")
for f in "$build"/libotelprofiler.so*; do
	cp -a "$f" "$root/$build/"
done
cp "$build/otelprof" "$root/$build/"
for w in callgraph_nofp syscalls_fp deep_recursion librecurse.so ctx_linked_tlsdesc; do
	cp "$build/workloads/$w" "$root/$build/workloads/"
	bins+=("$build/workloads/$w")
done
# Debian's /lib and /lib64 are symlinks into /usr (merged /usr): the same
# in the guest, so that files have the names they have on the host.
for l in /lib /lib64; do
	if [ -L "$l" ]; then ln -s "$(readlink "$l")" "$root$l"; fi
done
# Libraries (and the loader) under the names ldd finds them by, in their
# directories' real paths.
for b in "${bins[@]}" "$build/libotelprofiler.so"; do
	ldd "$b" | awk '/=> \//{print $3} /^\t\/.*ld-linux/{print $1}'
done | sort -u | while read -r lib; do
	case $lib in "$build"/*)
		mkdir -p "$root/$(dirname "$lib")"
		cp -L "$lib" "$root/$lib"
		continue ;;
	esac
	dir=$(readlink -f "$(dirname "$lib")")
	mkdir -p "$root/$dir"
	cp -L "$lib" "$root/$dir/$(basename "$lib")"
done
mkdir -p "$(dirname "$out")"
(cd "$root" && find . | "$busybox" cpio -o -H newc 2>/dev/null | gzip -1) >"$out.tmp"
mv "$out.tmp" "$out"
