#!/bin/bash
# A Ruby with YJIT, as the official ruby container images build 3.2+
# (--enable-yjit, a shared libruby; YJIT is off until --yjit or
# RUBY_YJIT_ENABLE=1), from the source Debian's archive serves for its
# rubyX.Y package: test/runtimes/ruby_build.sh CACHE VERSION. Installs
# into CACHE/ruby-VERSION-yjit (bin/ruby) once; a later run finds
# CACHE/ruby-VERSION-yjit/.complete and does nothing. YJIT is Rust: the
# machine's rustc (1.58 or later) builds it, Debian's where it has none.
set -euo pipefail
cache=$1
version=$2
prefix=$cache/ruby-$version-yjit
[ -e "$prefix/.complete" ] && exit 0
# The upstream tarball, as Debian's pool keeps it (rubyX.Y_VERSION.orig).
declare -A sha256=(
	[3.3.8]=e2e1233ad275b7623a05edf23a01192626d1da454bdfe353a28a87acd8ef015c
)
want=${sha256[$version]:-}
[ -n "$want" ] || { echo "ruby_build.sh: no checksum for Ruby $version" >&2; exit 1; }
export PATH=$PATH:$HOME/.cargo/bin
if ! command -v rustc >/dev/null; then
	# Debian's (1.63 in Debian 12) is recent enough for YJIT
	echo "ruby_build.sh: installing Debian's rustc to build YJIT with"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rustc
fi
series=${version%.*}
src=$cache/src
tarball=$src/ruby${series}_$version.orig.tar.xz
. "$(dirname "$0")/fetch_orig.sh"
fetch_orig "main/r/ruby$series" "ruby${series}_$version.orig.tar.xz" "$want" "$src"
work=$(mktemp -d "$src/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xJf "$tarball" -C "$work"
cd "$work"/ruby-*
rm -rf "$prefix"
echo "ruby_build.sh: building Ruby $version with YJIT into $prefix"
# No base ruby: with one, the build fetches the bundled gems from
# rubygems.org (the release tarball has what the build needs).
./configure --prefix="$prefix" --enable-shared --enable-yjit --disable-install-doc \
	--without-gmp --without-baseruby >"$work/configure.log" 2>&1 ||
	{ tail -n 30 "$work/configure.log" >&2; exit 1; }
make -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -n 30 "$work/make.log" >&2; exit 1; }
make install >"$work/install.log" 2>&1 || { tail -n 30 "$work/install.log" >&2; exit 1; }
"$prefix/bin/ruby" --yjit -e 'exit(RubyVM::YJIT.enabled? ? 0 : 1)' ||
	{ echo "ruby_build.sh: $prefix/bin/ruby has no YJIT" >&2; exit 1; }
touch "$prefix/.complete"
