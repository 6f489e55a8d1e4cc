#!/usr/bin/env bash
# The arm64 CPython guest's initramfs: initramfs.sh's root (busybox, the
# arm64 build and its libraries) with Debian's arm64 CPython (bookworm's
# python3.11), the Python workload and guest_python.sh as /init:
#   python.sh BASE.cpio.gz OUT.cpio.gz [CACHE_DIR]
#   (CACHE_DIR: $OTELPROF_RUNTIME_CACHE/arm64-python3.11 by default, the
#   runtime cache /var/cache/otelprof-test if that is unset)
# The .debs come through apt with their own sources list, lists and
# package cache (the machine's apt state is never touched, as in
# test/kernels/fetch.sh), are kept in CACHE_DIR, and are unpacked with
# dpkg-deb -x: python3.11-minimal, libpython3.11-minimal and
# libpython3.11-stdlib, plus the libraries the interpreter and hashlib's
# _hashlib need (libexpat1, zlib1g, libssl3); glibc is the machine's
# libc6:arm64 (make arm64-deps), as for the rest of the guest.
# The stdlib's .pyc files are compiled on the host when its python3 is
# 3.11 too (the same bytecode): the emulated guest then imports without
# compiling, at each of the kernels' boots.
set -euo pipefail
base=$(readlink -f "$1")
out=$2
cache=${3:-${OTELPROF_RUNTIME_CACHE:-/var/cache/otelprof-test}/arm64-python3.11}
here=$(cd "$(dirname "$0")" && pwd)
pkgs="python3.11-minimal libpython3.11-minimal libpython3.11-stdlib libexpat1 zlib1g libssl3"
multi=/usr/lib/aarch64-linux-gnu

if [ ! -s "$cache/tree/usr/bin/python3.11" ]; then
	archive=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
		grep -E '^(URIs:|deb )' | grep -oE 'https?://[^ ]*/debian/?( |$)' | head -n1 | tr -d ' ' || true)
	archive=${archive:-http://deb.debian.org/debian}
	archive=${archive%/}
	apt=$cache/apt
	rm -rf "$cache" && mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$cache/debs"
	key="arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg"
	# bookworm's point releases and its security updates: apt downloads
	# only the version its lists name as the newest.
	{
		echo "deb [$key] $archive bookworm main"
		echo "deb [$key] $archive bookworm-updates main"
		echo "deb [$key] ${archive%/debian}/debian-security bookworm-security main"
	} >"$apt/sources.list"
	opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt" -o "Dir::Cache::archives=$apt/archives"
		-o Acquire::Languages=none -o APT::Architecture=arm64 -o APT::Architectures=arm64
		-o APT::Get::List-Cleanup=0 -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
	echo "python.sh: fetching Debian's arm64 python3.11 ($pkgs) from $archive"
	apt-get -qq "${opts[@]}" update
	# shellcheck disable=SC2086
	(cd "$cache/debs" && apt-get -qq "${opts[@]}" download $pkgs)
	mkdir -p "$cache/tree.tmp"
	for d in "$cache"/debs/*.deb; do dpkg-deb -x "$d" "$cache/tree.tmp"; done
	rm -rf "$apt" "$cache/tree" && mv "$cache/tree.tmp" "$cache/tree"
fi
tree=$cache/tree
file "$tree/usr/bin/python3.11" | grep -q 'ARM aarch64' || { echo "python.sh: $tree/usr/bin/python3.11 is not arm64" >&2; exit 1; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
(cd "$root" && gzip -dc "$base" | busybox cpio -id 2>/dev/null)
[ -x "$root/bin/busybox" ] || { echo "python.sh: $base is not initramfs.sh's root" >&2; exit 1; }
cp "$here/guest_python.sh" "$root/init"
chmod +x "$root/init"

# usr/ as it is (merged /usr: the root's /lib is a link to usr/lib), the
# debs' /lib (zlib, expat) into usr/lib; what the workload does not need
# stays out.
mkdir -p "$root/usr/lib" "$root/usr/bin"
cp -a "$tree/usr/bin/python3.11" "$root/usr/bin/"
cp -a "$tree/usr/lib/python3.11" "$root/usr/lib/"
cp -a "$tree/usr/lib/aarch64-linux-gnu" "$tree/lib/aarch64-linux-gnu" "$root/usr/lib/"
rm -rf "$root/usr/lib/python3.11"/{idlelib,tkinter,turtledemo,ensurepip,lib2to3,pydoc_data,distutils,unittest,config-3.11-aarch64-linux-gnu}
if python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
	python3 -m compileall -q -j 0 -d /usr/lib/python3.11 "$root/usr/lib/python3.11" >/dev/null || true
fi
# glibc (libc, libm) from the machine's arm64 multiarch directory, where
# initramfs.sh took the guest's other libraries from.
for f in "$root/usr/bin/python3.11" "$root/usr/lib/python3.11/lib-dynload/_hashlib".*.so; do
	for n in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[ -e "$root$multi/$n" ] && continue
		[ -e "$multi/$n" ] || { echo "python.sh: $n (needed by $f) not in $multi" >&2; exit 1; }
		cp -L "$multi/$n" "$root$multi/$n"
	done
done
mkdir -p "$root/py"
cp "$here/../workloads/runtimes/hot.py" "$root/py/hot.py"
(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$out.tmp"
mv "$out.tmp" "$out"
