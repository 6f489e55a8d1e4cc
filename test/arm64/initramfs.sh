#!/usr/bin/env bash
# The arm64 smoke test's initramfs: Debian's arm64 busybox-static (unpacked
# from its deb: installing it would replace the machine's own busybox),
# the arm64 build (library, CLI, workloads) at its absolute path on the
# host, the arm64 shared libraries they need (found through the ELF files'
# DT_NEEDED in Debian's multiarch directories: no ldd for a foreign
# architecture), guest.sh as /init and guest_boot.sh, which it and the
# other guests built on this root source first. The archive is written by the host's
# (x86_64) busybox cpio.
#   initramfs.sh BUILD_DIR OUT.cpio.gz
set -euo pipefail
build=$(cd "$1" && pwd)
out=$2
here=$(cd "$(dirname "$0")" && pwd)
cache=$(dirname "$(readlink -f "$out")")
mkdir -p "$cache"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

bb=$cache/busybox-arm64
if [ ! -s "$bb" ]; then
	tmp=$(mktemp -d)
	(cd "$tmp" && apt-get -qq download busybox-static:arm64 && dpkg-deb -x busybox-static_*_arm64.deb x)
	cp "$tmp/x/bin/busybox" "$bb"
	rm -rf "$tmp"
fi
file "$bb" | grep -q 'ARM aarch64.*statically linked' || { echo "initramfs.sh: $bb is not a static arm64 busybox" >&2; exit 1; }

mkdir -p "$root"/{bin,proc,sys,dev,tmp,etc} "$root/$build/workloads"
cp "$bb" "$root/bin/busybox"
cp "$here/guest.sh" "$root/init"
chmod +x "$root/init"
cp "$here/guest_boot.sh" "$root/guest_boot.sh"
echo "BUILD=$build SECONDS_REC=2 HZ=99" >"$root/arm64.env"
cp -a "$build"/libotelprofiler.so* "$build/otelprof" "$root/$build/"
cp "$build"/workloads/{callgraph_nofp,callgraph_pac,signal_spin,syscalls_fp,go_callgraph} "$root/$build/workloads/"
# The context publishers (trace correlation, TLS variant I).
cp "$build"/workloads/{ctx_linked_tlsdesc,ctx_exe_le,libotelctx_tlsdesc.so} "$root/$build/workloads/"
# Merged /usr, as on the host.
ln -s usr/lib "$root/lib"
mkdir -p "$root/usr/lib"
multi=/usr/lib/aarch64-linux-gnu
declare -A seen=()
add() { # an ELF file's DT_NEEDED, recursively, from $build or $multi
	local n p
	for n in $(readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[ -n "${seen[$n]:-}" ] && continue
		seen[$n]=1
		[ -e "$build/$n" ] || [ -e "$build/workloads/$n" ] && continue
		p=$multi/$n
		[ -e "$p" ] || { echo "initramfs.sh: $n (needed by $1) not in $multi" >&2; exit 1; }
		mkdir -p "$root/$multi"
		cp -L "$p" "$root/$multi/$n"
		add "$p"
	done
}
# Node.js (V8) and its JS workload: node.sh, from make test-arm64's
# OTELPROF_ARM64_NODE.
bash "$here/node.sh" "$root" "${OTELPROF_ARM64_NODE:?the arm64 node binary (make arm64-node)}" "$cache"
for f in "$build/otelprof" "$build/libotelprofiler.so.0" "$build"/workloads/*; do add "$f"; done
mkdir -p "$root/$multi"
cp -L "$multi/ld-linux-aarch64.so.1" "$root/$multi/"
ln -s aarch64-linux-gnu/ld-linux-aarch64.so.1 "$root/usr/lib/ld-linux-aarch64.so.1"
(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$out.tmp"
mv "$out.tmp" "$out"
