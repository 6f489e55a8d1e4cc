#!/bin/bash
# A non-threaded Perl, as the official perl container images build it
# (no -Dusethreads, a shared libperl), from the source Debian's archive
# serves for its perl package: test/runtimes/perl_build.sh CACHE VERSION.
# Installs into CACHE/perl-VERSION-nothreads (bin/perl) once; a later run
# finds CACHE/perl-VERSION-nothreads/.complete and does nothing. Every
# extension is built (its own build needs several: File::Spec, Fcntl,
# Errno...).
set -euo pipefail
cache=$1
version=$2
prefix=$cache/perl-$version-nothreads
[ -e "$prefix/.complete" ] && exit 0
# The upstream tarball, as Debian's pool keeps it (perl_VERSION.orig).
declare -A sha256=(
	[5.36.0]=0f386dccbee8e26286404b2cca144e1005be65477979beb9b1ba272d4819bcf0
)
want=${sha256[$version]:-}
[ -n "$want" ] || { echo "perl_build.sh: no checksum for Perl $version" >&2; exit 1; }
src=$cache/src
tarball=$src/perl_$version.orig.tar.xz
. "$(dirname "$0")/fetch_orig.sh"
fetch_orig "main/p/perl" "perl_$version.orig.tar.xz" "$want" "$src"
work=$(mktemp -d "$src/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xJf "$tarball" -C "$work"
cd "$work/perl-$version"
rm -rf "$prefix"
echo "perl_build.sh: building Perl $version without threads into $prefix"
./Configure -des -Dprefix="$prefix" -Uusethreads -Duseshrplib \
	-Dman1dir=none -Dman3dir=none -Doptimize='-O2 -g0' >"$work/configure.log" 2>&1 ||
	{ tail -n 30 "$work/configure.log" >&2; exit 1; }
make -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -n 30 "$work/make.log" >&2; exit 1; }
make install >"$work/install.log" 2>&1 || { tail -n 30 "$work/install.log" >&2; exit 1; }
"$prefix/bin/perl" -MConfig -MTime::HiRes -e \
	'exit(($Config{usethreads} || !$Config{useshrplib}) ? 1 : 0)' ||
	{ echo "perl_build.sh: $prefix/bin/perl is threaded or has no shared libperl" >&2; exit 1; }
touch "$prefix/.complete"
