#!/bin/bash
# Sourced by perl_build.sh and ruby_build.sh: fetch_orig POOL_DIR FILE
# SHA256 DEST_DIR puts the upstream tarball FILE of Debian's source
# package in POOL_DIR (e.g. main/p/perl) into DEST_DIR/FILE from the
# machine's apt mirror, once, checked against SHA256; fails loudly.
fetch_orig() {
	local pool=$1 file=$2 want=$3 dest=$4 mirror
	mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
	mirror=${mirror:-http://deb.debian.org/debian}
	mkdir -p "$dest"
	echo "$want  $dest/$file" | sha256sum -c --status 2>/dev/null && return 0
	curl -sSf --retry 3 -o "$dest/$file.part" "$mirror/pool/$pool/$file"
	echo "$want  $dest/$file.part" | sha256sum -c --status ||
		{ echo "fetch_orig: $file: wrong checksum" >&2; return 1; }
	mv "$dest/$file.part" "$dest/$file"
}
