#!/usr/bin/env bash
# A Debian 13 (trixie) root file system with trixie's runtimes, for the
# runtime tests: built once with debootstrap from the machine's own apt
# archive, then used with `chroot DIR prog` as a container would run it
# (its binaries need trixie's glibc; it also puts the workloads in their
# own mount namespace root).
#   trixie_root.sh DIR PACKAGE...
# Leaves DIR/.ok listing the packages installed; a later call with more
# packages installs only those.
set -euo pipefail
dir=$1
shift
want="$*"
mkdir -p "$(dirname "$dir")"
# One builder at a time (test targets may ask for it in parallel).
exec 9>"$dir.lock"
flock 9
if [ -f "$dir/.ok" ]; then
	missing=""
	for p in $want; do grep -qx "$p" "$dir/.ok" || missing="$missing $p"; done
	[ -z "$missing" ] && exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "trixie_root.sh: need root to build $dir" >&2
	exit 1
fi
archive=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
	grep -E '^(URIs:|deb )' | grep -oE 'https?://[^ ]*/debian/?( |$)' | head -n1 | tr -d ' ' || true)
archive=${archive:-http://deb.debian.org/debian}
archive=${archive%/}
if [ ! -x "$dir/usr/bin/apt-get" ] || [ ! -f "$dir/.bootstrapped" ]; then
	command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap
	rm -rf "$dir"
	mkdir -p "$dir"
	echo "trixie root: debootstrap into $dir from $archive"
	debootstrap --variant=minbase trixie "$dir" "$archive" >"$dir.log" 2>&1 ||
		{ tail -n 30 "$dir.log" >&2; exit 1; }
	touch "$dir/.bootstrapped"
fi
# /proc for apt's and the runtimes' own needs, unmounted on every exit.
mounted=""
cleanup() { [ -n "$mounted" ] && umount "$dir/proc" 2>/dev/null || true; }
trap cleanup EXIT
if ! mountpoint -q "$dir/proc"; then
	mount -t proc proc "$dir/proc"
	mounted=1
fi
echo "trixie root: installing $want"
chroot "$dir" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
chroot "$dir" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $want >"$dir.apt.log" 2>&1 ||
	{ tail -n 30 "$dir.apt.log" >&2; exit 1; }
chroot "$dir" apt-get clean
{ [ -f "$dir/.ok" ] && cat "$dir/.ok"; for p in $want; do echo "$p"; done; } | sort -u >"$dir/.ok.tmp"
mv "$dir/.ok.tmp" "$dir/.ok"
