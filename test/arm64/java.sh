#!/usr/bin/env bash
# The arm64 smoke test's Java guest: Debian bookworm's arm64 OpenJDK 17
# (fetch_java.sh) running FibHash (class files compiled on the host: they
# are portable) in a busybox initramfs with the arm64 build, booted on one
# arm64 kernel under qemu-system-aarch64 (TCG), recorded by java_guest.sh
# and judged by java_judge.py. A guest of its own (not guest.sh's): a JVM
# needs more RAM and time than the other workloads. One line.
#   java.sh BUILD_DIR KERNEL_CACHE JAVA_CACHE CLASSES_DIR VERSION SECONDS
set -euo pipefail
build=$(cd "$1" && pwd)
cache=$2 jcache=$3 classes=$(cd "$4" && pwd) v=$5 seconds=$6
here=$(cd "$(dirname "$0")" && pwd)
jdk_rel=usr/lib/jvm/java-17-openjdk-arm64
jtree=$jcache/tree
[ -x "$jtree/$jdk_rel/bin/java" ] || { echo "java.sh: no arm64 JDK in $jtree (fetch_java.sh)" >&2; exit 1; }
[ -s "$classes/FibHash.class" ] || { echo "java.sh: no FibHash.class in $classes" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

bb=$cache/busybox-arm64
if [ ! -s "$bb" ]; then
	tmp=$(mktemp -d)
	(cd "$tmp" && apt-get -qq download busybox-static:arm64 && dpkg-deb -x busybox-static_*_arm64.deb x)
	cp "$tmp/x/bin/busybox" "$bb.tmp" && mv "$bb.tmp" "$bb"
	rm -rf "$tmp"
fi
file "$bb" | grep -q 'ARM aarch64.*statically linked' || { echo "java.sh: $bb is not a static arm64 busybox" >&2; exit 1; }

mkdir -p "$root"/{bin,proc,sys,dev,tmp,etc} "$root/$build" "$root/$classes"
cp "$bb" "$root/bin/busybox"
cp "$here/java_guest.sh" "$root/init"
chmod +x "$root/init"
echo "BUILD=$build JAVA=/$jdk_rel/bin/java CLASSES=$classes SECONDS_REC=30 WARM=10 LEAD=10 HZ=49" >"$root/java.env"
cp -a "$build"/libotelprofiler.so* "$build/otelprof" "$root/$build/"
cp "$classes"/FibHash*.class "$root/$classes/"
# The JDK without what a headless run never opens (the compile-time
# symbol table, licences, manuals), and its /etc (jvm.cfg, security).
mkdir -p "$root/$jdk_rel" "$root/etc"
(cd "$jtree/$jdk_rel" && tar --exclude=./lib/ct.sym --exclude=./legal --exclude=./man --exclude=./docs -cf - .) |
	(cd "$root/$jdk_rel" && tar -xf -)
cp -a "$jtree/etc/java-17-openjdk" "$root/etc/"
# Merged /usr, as on the host.
ln -s usr/lib "$root/lib"
multi=/usr/lib/aarch64-linux-gnu
mkdir -p "$root/$multi"
declare -A seen=()
add() { # an ELF file's DT_NEEDED, recursively: the JDK's own, the fetched libstdc++, else the host's arm64 multiarch
	local n p
	for n in $(readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[ -n "${seen[$n]:-}" ] && continue
		seen[$n]=1
		[ -e "$build/$n" ] && continue
		[ -e "$jtree/$jdk_rel/lib/$n" ] || [ -e "$jtree/$jdk_rel/lib/server/$n" ] && continue
		p=$jtree/$multi/$n
		[ -e "$p" ] || p=$multi/$n
		[ -e "$p" ] || { echo "java.sh: $n (needed by $1) not found" >&2; exit 1; }
		cp -L "$p" "$root/$multi/$n"
		add "$p"
	done
}
for f in "$build/otelprof" "$build/libotelprofiler.so.0" "$jtree/$jdk_rel/bin/java" "$jtree/$jdk_rel/lib/server/libjvm.so" \
	"$jtree/$jdk_rel/lib"/lib{java,jli,jimage,zip,nio,net,verify}.so; do add "$f"; done
cp -L "$multi/ld-linux-aarch64.so.1" "$root/$multi/"
ln -s aarch64-linux-gnu/ld-linux-aarch64.so.1 "$root/usr/lib/ld-linux-aarch64.so.1"
img=$cache/java-root.cpio.gz
(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$img.tmp"
mv "$img.tmp" "$img"

res=$cache/results/java-$v
rm -rf "$res" && mkdir -p "$res"
start=$(date +%s)
timeout 600 qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on -smp 2 -m 2048 \
	-accel tcg -nographic -no-reboot -kernel "$cache/$v/vmlinuz" -initrd "$img" \
	-append "console=ttyAMA0 quiet panic=-1 otelprof.seconds=$seconds" >"$res/console.log" 2>&1 || true
rc=0
python3 "$here/java_judge.py" "$v" "$res/console.log" || rc=1
echo "  ($(($(date +%s) - start)) s; console: $res/console.log)"
exit $rc
