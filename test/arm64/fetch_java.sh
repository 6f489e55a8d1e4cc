#!/usr/bin/env bash
# Debian bookworm's arm64 OpenJDK 17 (openjdk-17-jre-headless) and the
# libraries libjvm needs that the arm64 multiarch -dev packages do not
# bring (libstdc++), for the Java guest of the arm64 smoke test
# (java.sh). Downloaded through the machine's apt with its own sources
# list, lists and package cache (as test/kernels/fetch.sh does for
# kernels): the machine's apt state is never touched. Unpacked with
# dpkg-deb -x (no maintainer scripts run: none is needed to start java).
#   fetch_java.sh CACHE_DIR   -> CACHE_DIR/tree (the unpacked root)
set -euo pipefail
cache=$1
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
java=$cache/tree/usr/lib/jvm/java-17-openjdk-arm64/bin/java
[ -x "$java" ] && [ -s "$cache/tree/.complete" ] && exit 0
archive=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
	grep -E '^(URIs:|deb )' | grep -oE 'https?://[^ ]*/debian/?( |$)' | head -n1 | tr -d ' ' || true)
archive=${archive:-http://deb.debian.org/debian}
archive=${archive%/}
apt=$cache/apt
mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$cache/debs"
echo "deb [arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $archive bookworm main" >"$apt/sources.list"
opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt" -o "Dir::Cache::archives=$apt/archives"
	-o Acquire::Languages=none -o APT::Architecture=arm64 -o APT::Architectures=arm64
	-o APT::Get::List-Cleanup=0 -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
echo "java: fetching bookworm's arm64 openjdk-17-jre-headless from $archive"
apt-get -qq "${opts[@]}" update
(cd "$cache/debs" && rm -f ./*.deb && apt-get -qq "${opts[@]}" download openjdk-17-jre-headless:arm64 libstdc++6:arm64)
rm -rf "$cache/tree"
mkdir -p "$cache/tree"
for d in "$cache"/debs/*.deb; do dpkg-deb -x "$d" "$cache/tree"; done
file -L "$java" | grep -q 'ARM aarch64' || { echo "fetch_java.sh: $java is not an arm64 program" >&2; exit 1; }
ls "$cache"/debs >"$cache/tree/.complete"
rm -rf "$apt"
echo "java: $(ls "$cache"/debs | tr '\n' ' ')"
