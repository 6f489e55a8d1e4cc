#!/bin/bash
# Node.js releases for the V8 tests: the newest of each major, from the
# npm registry (package node-linux-ARCH@MAJOR, the official binary), into
# CACHE/node/MAJOR/node_modules/node-linux-ARCH/bin/node. A major already
# there is kept (a clean clone on this machine fetches nothing). One
# installer at a time (flock).
# usage: node_releases.sh CACHE MAJOR...
set -euo pipefail
cache=$1
shift
case "$(uname -m)" in
x86_64) arch=x64 ;;
aarch64) arch=arm64 ;;
*) echo "node_releases.sh: no Node binaries for $(uname -m)" >&2; exit 1 ;;
esac
mkdir -p "$cache/node"
exec 9>"$cache/node/.lock"
flock 9
for major in "$@"; do
	dir=$cache/node/$major
	bin=$dir/node_modules/node-linux-$arch/bin/node
	if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
		continue
	fi
	rm -rf "$dir.tmp"
	mkdir -p "$dir.tmp"
	npm install --no-audit --no-fund --no-save --prefix "$dir.tmp" "node-linux-$arch@$major" >&2
	"$dir.tmp/node_modules/node-linux-$arch/bin/node" --version
	rm -rf "$dir"
	mv "$dir.tmp" "$dir"
done
