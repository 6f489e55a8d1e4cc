#!/usr/bin/env bash
# Debian arm64 packages for the arm64 guests, unpacked into one root:
#   fetch_debs.sh SUITE CACHE_DIR PKG...   -> CACHE_DIR/tree
# Downloaded through the machine's apt with its own sources list, lists
# and package cache (as test/kernels/fetch.sh does for kernels): the
# machine's apt state is never touched. SUITE's point releases and its
# security updates are in the list (apt downloads only the version its
# lists name as the newest). Unpacked with dpkg-deb -x: no maintainer
# script runs (none is needed to start an interpreter). The tree is kept
# once complete (CACHE_DIR/tree/.complete names its .debs); a PKG without
# its .deb there fetches again.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: fetch_debs.sh SUITE CACHE_DIR PKG..." >&2; exit 2; }
suite=$1 cache=$2
shift 2
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
complete() {
	local p
	[ -s "$cache/tree/.complete" ] || return 1
	for p in "$@"; do grep -q "^${p%%:*}_" "$cache/tree/.complete" || return 1; done
}
complete "$@" && exit 0
archive=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
	grep -E '^(URIs:|deb )' | grep -oE 'https?://[^ ]*/debian/?( |$)' | head -n1 | tr -d ' ' || true)
archive=${archive:-http://deb.debian.org/debian}
archive=${archive%/}
apt=$cache/apt
rm -rf "$apt" "$cache/debs" "$cache/tree.tmp"
mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$cache/debs"
key="arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg"
{
	echo "deb [$key] $archive $suite main"
	echo "deb [$key] $archive $suite-updates main"
	echo "deb [$key] ${archive%/debian}/debian-security $suite-security main"
} >"$apt/sources.list"
opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt" -o "Dir::Cache::archives=$apt/archives"
	-o Acquire::Languages=none -o APT::Architecture=arm64 -o APT::Architectures=arm64
	-o APT::Get::List-Cleanup=0 -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
echo "fetch_debs.sh: fetching $suite's arm64 $* from $archive"
apt-get -qq "${opts[@]}" update
(cd "$cache/debs" && apt-get -qq "${opts[@]}" download "$@")
mkdir -p "$cache/tree.tmp"
for d in "$cache"/debs/*.deb; do dpkg-deb -x "$d" "$cache/tree.tmp"; done
ls "$cache/debs" >"$cache/tree.tmp/.complete"
rm -rf "$apt" "$cache/tree" && mv "$cache/tree.tmp" "$cache/tree"
echo "fetch_debs.sh: $(ls "$cache/debs" | tr '\n' ' ')"
