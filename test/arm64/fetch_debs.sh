#!/usr/bin/env bash
# Debian arm64 packages of one suite, unpacked into CACHE_DIR/tree: what
# the arm64 runtime guests and unit tests need from Debian that the
# machine's multiarch -dev packages do not bring. Downloaded through apt
# with its own sources list, lists and package cache (as
# test/kernels/fetch.sh does for kernels): the machine's apt state is
# never touched. Unpacked with dpkg-deb -x (no maintainer scripts run).
#   fetch_debs.sh SUITE CACHE_DIR PKG...   -> CACHE_DIR/tree
# Nothing is fetched when CACHE_DIR/tree/.complete lists the same
# packages (a cache from an earlier run); the suite's point releases and
# security updates are in the lists, apt takes the newest.
set -euo pipefail
suite=$1
cache=$2
shift 2
pkgs="$*"
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
[ -s "$cache/tree/.complete" ] && [ "$(head -n1 "$cache/tree/.complete")" = "$suite: $pkgs" ] && exit 0
archive=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
	grep -E '^(URIs:|deb )' | grep -oE 'https?://[^ ]*/debian/?( |$)' | head -n1 | tr -d ' ' || true)
archive=${archive:-http://deb.debian.org/debian}
archive=${archive%/}
apt=$cache/apt
rm -rf "$apt" "$cache/debs" && mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$cache/debs"
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
echo "fetch_debs.sh: $suite arm64 $pkgs from $archive"
apt-get -qq "${opts[@]}" update
# shellcheck disable=SC2086
(cd "$cache/debs" && apt-get -qq "${opts[@]}" download $pkgs)
rm -rf "$cache/tree.tmp" && mkdir -p "$cache/tree.tmp"
for d in "$cache"/debs/*.deb; do dpkg-deb -x "$d" "$cache/tree.tmp"; done
{
	echo "$suite: $pkgs"
	ls "$cache/debs"
} >"$cache/tree.tmp/.complete"
rm -rf "$apt" "$cache/tree" && mv "$cache/tree.tmp" "$cache/tree"
echo "fetch_debs.sh: $(ls "$cache/debs" | tr '\n' ' ')"
