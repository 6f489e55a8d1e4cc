#!/usr/bin/env bash
# The arm64 interpreter guest's initramfs: initramfs.sh's root (busybox,
# the arm64 build and its libraries) with each RUNTIME's entry
# (interp/RUNTIME.conf): its Debian bookworm arm64 packages (fetch_debs.sh,
# cached in CACHE/arm64-debs/RUNTIME), its workload under /w, and
# guest_interp.sh as /init, which runs the entries in the order given.
#   interp.sh BASE.cpio.gz OUT.cpio.gz RUNTIME...
#   (CACHE: $OTELPROF_RUNTIME_CACHE, /var/cache/otelprof-test if unset)
# glibc is the machine's libc6:arm64 (make arm64-deps), as for the rest
# of the guest; the other libraries come from the entry's packages.
set -euo pipefail
base=$(readlink -f "$1")
out=$2
shift 2
cache=${OTELPROF_RUNTIME_CACHE:-/var/cache/otelprof-test}/arm64-debs
here=$(cd "$(dirname "$0")" && pwd)
multi=/usr/lib/aarch64-linux-gnu

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
(cd "$root" && gzip -dc "$base" | busybox cpio -id 2>/dev/null)
[ -x "$root/bin/busybox" ] || { echo "interp.sh: $base is not initramfs.sh's root" >&2; exit 1; }
cp "$here/guest_interp.sh" "$root/init"
chmod +x "$root/init"
mkdir -p "$root/interp" "$root/w" "$root$multi" "$root/usr/bin"

# An ELF file's DT_NEEDED, recursively: from the guest's root, the entry's
# tree (its /lib and /usr/lib) or the machine's arm64 multiarch directory.
needed() {
	local f=$1 tree=$2 n p
	for n in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[ -e "$root$multi/$n" ] && continue
		p=
		for d in "$tree$multi" "$tree/lib/aarch64-linux-gnu" "$multi"; do
			[ -e "$d/$n" ] && p=$d/$n && break
		done
		[ -n "$p" ] || { echo "interp.sh: $n (needed by $f) is in neither $tree nor $multi" >&2; exit 1; }
		cp -L "$p" "$root$multi/$n"
		needed "$p" "$tree"
	done
}

for rt in "$@"; do
	conf=$here/interp/$rt.conf
	[ -s "$conf" ] || { echo "interp.sh: no entry $conf" >&2; exit 1; }
	unset -f prepare
	PKGS= COPY= BIN= NEED_ELF= WORKLOAD=
	# shellcheck disable=SC1090
	. "$conf"
	# shellcheck disable=SC2086
	bash "$here/fetch_debs.sh" bookworm "$cache/$rt" $PKGS
	tree=$cache/$rt/tree
	file -L "$tree$BIN" | grep -q 'ARM aarch64' || { echo "interp.sh: $tree$BIN is not arm64" >&2; exit 1; }
	for p in $COPY; do
		[ -e "$tree/$p" ] || { echo "interp.sh: $rt: $p not in its packages" >&2; exit 1; }
		mkdir -p "$root/$(dirname "$p")"
		cp -a "$tree/$p" "$root/$(dirname "$p")/"
	done
	if declare -F prepare >/dev/null; then (cd "$root" && prepare); fi
	needed "$tree$BIN" "$tree"
	for p in $NEED_ELF; do
		for f in "$root"/$p; do needed "$f" "$tree"; done
	done
	for w in $WORKLOAD; do cp "$here/../workloads/runtimes/$w" "$root/w/"; done
	cp "$conf" "$root/interp/"
	echo "$rt" >>"$root/interp/order"
done
(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$out.tmp"
mv "$out.tmp" "$out"
