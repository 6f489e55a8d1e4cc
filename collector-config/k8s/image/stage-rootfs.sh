#!/usr/bin/env bash
# Stage the image context: OUT/Dockerfile and OUT/rootfs with the collector,
# libotelprofiler and the shared libraries both load, taken from this
# machine (so the image matches what the tests ran).
# With ARCH arm64 (the files of `make arm64`, build/arm64/), the shared
# libraries come from Debian's arm64 packages that `make arm64` installs
# (/usr/lib/aarch64-linux-gnu), found through each ELF file's DT_NEEDED:
# there is no ldd for a foreign architecture.
#   stage-rootfs.sh BUILD_DIR OUT_DIR [amd64|arm64]
set -euo pipefail
build=$1
out=$2
arch=${3:-amd64}
here=$(cd "$(dirname "$0")" && pwd)
root=$out/rootfs
rm -rf "$root"
mkdir -p "$root/usr/local/bin" "$root/usr/local/lib" "$root/etc/ssl/certs" "$root/tmp" \
	"$root/proc" "$root/sys" "$root/dev"
chmod 1777 "$root/tmp"
install -m 0755 "$build/otelcol-profiler" "$root/usr/local/bin/otelcol-profiler"
lib=$(basename "$(readlink -f "$build/libotelprofiler.so")")
install -m 0644 "$build/$lib" "$root/usr/local/lib/$lib"
ln -sf "$lib" "$root/usr/local/lib/libotelprofiler.so.0"
ln -sf libotelprofiler.so.0 "$root/usr/local/lib/libotelprofiler.so"

if [ "$arch" = arm64 ]; then
	# DT_NEEDED, recursively, from the multiarch directory; the loader
	# at the path the files name (PT_INTERP).
	multi=/usr/lib/aarch64-linux-gnu
	copy_deps() {
		local n
		for n in $(readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			[ -e "$root$multi/$n" ] && continue
			[ -e "$multi/$n" ] || { echo "stage-rootfs.sh: $n (needed by $1) not in $multi (make arm64 installs it)" >&2; exit 1; }
			mkdir -p "$root$multi"
			cp -L "$multi/$n" "$root$multi/$n"
			copy_deps "$multi/$n"
		done
	}
	copy_deps "$build/otelcol-profiler"
	copy_deps "$build/$lib"
	mkdir -p "$root/lib"
	cp -L "$multi/ld-linux-aarch64.so.1" "$root/lib/ld-linux-aarch64.so.1"
	# (Debian's loader searches the multiarch directory by default.)
else
	# Every library ldd resolves (and the dynamic loader), at the same path.
	copy_deps() {
		ldd "$1" | awk '/=> \// { print $3 } /^\t\/[^ ]+ \(/ { print $1 }' | while read -r dep; do
			mkdir -p "$root$(dirname "$dep")"
			[ -e "$root$dep" ] || cp -L "$dep" "$root$dep"
		done
	}
	copy_deps "$build/otelcol-profiler"
	copy_deps "$build/$lib"
	# lib64 -> the loader, as on the build machine
	if [ -L /lib64/ld-linux-x86-64.so.2 ] || [ -e /lib64/ld-linux-x86-64.so.2 ]; then
		mkdir -p "$root/lib64"
		[ -e "$root/lib64/ld-linux-x86-64.so.2" ] || cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
	fi
fi
# TLS to exporters; users for runAsUser 0 (agent) and 10001 (gateway).
cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/" 2>/dev/null || true
printf 'root:x:0:0:root:/:/nonexistent\notelcol:x:10001:10001:otelcol:/:/nonexistent\n' > "$root/etc/passwd"
printf 'root:x:0:\notelcol:x:10001:\n' > "$root/etc/group"
cp "$here/Dockerfile" "$out/Dockerfile"
du -sh "$root" | awk '{ print "  rootfs " $1 }'
