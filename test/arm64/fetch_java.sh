#!/usr/bin/env bash
# Debian bookworm's arm64 OpenJDK 17 (openjdk-17-jre-headless) and the
# libraries libjvm needs that the arm64 multiarch -dev packages do not
# bring (libstdc++), for the Java guest of the arm64 smoke test
# (java.sh), through fetch_debs.sh.
#   fetch_java.sh CACHE_DIR   -> CACHE_DIR/tree (the unpacked root)
set -euo pipefail
cache=$1
bash "$(dirname "$0")/fetch_debs.sh" bookworm "$cache" openjdk-17-jre-headless:arm64 libstdc++6:arm64
java=$cache/tree/usr/lib/jvm/java-17-openjdk-arm64/bin/java
file -L "$java" | grep -q 'ARM aarch64' || { echo "fetch_java.sh: $java is not an arm64 program" >&2; exit 1; }
