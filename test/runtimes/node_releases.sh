#!/bin/bash
# Node.js releases for the V8 tests: the newest of each major, from the
# npm registry (package node-linux-ARCH@MAJOR, the official binary), into
# CACHE/node/MAJOR/node_modules/node-linux-ARCH/bin/node. A major already
# there is kept (a clean clone on this machine fetches nothing). One
# installer at a time (flock).
# NODE_ARCH=arm64 fetches the arm64 binaries on any host (for the arm64
# guest, make test-arm64): npm is told the target's cpu, and the binary is
# checked as a file (it cannot run here), not run.
# usage: [NODE_ARCH=x64|arm64] node_releases.sh CACHE MAJOR...
set -euo pipefail
cache=$1
shift
case "$(uname -m)" in
x86_64) host=x64 ;;
aarch64) host=arm64 ;;
*) host=none ;;
esac
arch=${NODE_ARCH:-$host}
case $arch in
x64) elf='x86-64' ;;
arm64) elf='ARM aarch64' ;;
*) echo "node_releases.sh: no Node binaries for $(uname -m)" >&2; exit 1 ;;
esac
# Runs here, or is at least an ELF executable of its architecture.
usable() {
	if [ "$arch" = "$host" ]; then
		"$1" --version
	else
		file -L "$1" | grep -q "ELF 64-bit.*executable, $elf" &&
			sed -n 's/^ *"version": *"\(.*\)".*/v\1/p' "$(dirname "$1")/../package.json" | head -1
	fi
}
mkdir -p "$cache/node"
exec 9>"$cache/node/.lock"
flock 9
for major in "$@"; do
	dir=$cache/node/$major
	bin=$dir/node_modules/node-linux-$arch/bin/node
	if [ -x "$bin" ] && usable "$bin" >/dev/null 2>&1; then
		continue
	fi
	tmp=$cache/node/.$major-$arch.tmp
	rm -rf "$tmp"
	mkdir -p "$tmp"
	# (--force: npm refuses a package for another cpu even when told the
	# target cpu)
	force=; [ "$arch" = "$host" ] || force=--force
	npm install --no-audit --no-fund --no-save $force \
		--prefix "$tmp" "node-linux-$arch@$major" >&2
	usable "$tmp/node_modules/node-linux-$arch/bin/node" ||
		{ echo "node_releases.sh: node-linux-$arch@$major is not a usable $elf binary" >&2; exit 1; }
	# Next to another architecture's binary of the major, left as it is.
	mkdir -p "$dir/node_modules"
	rm -rf "$dir/node_modules/node-linux-$arch"
	mv "$tmp/node_modules/node-linux-$arch" "$dir/node_modules/"
	rm -rf "$tmp"
done
