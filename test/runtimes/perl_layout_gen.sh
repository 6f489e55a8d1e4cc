#!/usr/bin/env bash
# One row of lib/runtimes/perl/perl_layout.c for ARCH from a Perl's CORE
# headers: perl_layout_gen.c compiled (-S, never run) by ARCH's compiler,
# its "->" strings turned into C. The same command for every
# architecture; a cross compiler serves one this machine cannot run.
#   perl_layout_gen.sh x86_64|arm64 CORE_DIR [--check TABLE.c]
# --check: compare the row with TABLE.c's row of that version in that
# architecture's table instead of printing it (make check-perl-layouts);
# a non-threaded build's (make perl-nothreads) with that row less its
# struct interpreter offsets, which such a build does not have.
# CORE_DIR: e.g. /usr/lib/x86_64-linux-gnu/perl/5.36.0/CORE (Debian's
# libperl5.36), or the arm64 libperl's from `make arm64-perl`
# ($RUNTIME_CACHE/arm64-perl5.36/tree/usr/lib/aarch64-linux-gnu/perl/5.36.0/CORE).
set -euo pipefail
arch=$1
core=$2
check=
[ "${3:-}" = --check ] && check=${4:?perl_layout_gen.sh: --check TABLE.c}
case $arch in
x86_64) cc=${CC_X86_64:-x86_64-linux-gnu-gcc} table=layouts_x86_64 ;;
arm64 | aarch64) cc=${CC_ARM64:-aarch64-linux-gnu-gcc} table=layouts_aarch64 ;;
*)
	echo "perl_layout_gen.sh: unknown architecture $arch (x86_64, arm64)" >&2
	exit 2
	;;
esac
[ -f "$core/perl.h" ] || { echo "perl_layout_gen.sh: no perl.h in $core" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
# perl.h's config.h says the architecture it was made for: a CORE of
# another one would give that one's row.
want=$([ "$arch" = x86_64 ] && echo x86_64 || echo aarch64)
grep -q "^#define ARCHNAME \"$want-linux" "$core/config.h" ||
	{ echo "perl_layout_gen.sh: $core/config.h is not an $want Perl's" >&2; exit 1; }
row() {
"$cc" -S -O0 -w -I "$core" -o - "$here/perl_layout_gen.c" |
	sed -n 's/^[[:space:]]*\.ascii[[:space:]]*"->\([DX]\) \([a-z_.]*\) \(-\?[0-9]*\)".*/\1 \2 \3/p' |
	awk '
	function val(k, v) { return k == "X" ? sprintf("0x%x", v) : v }
	BEGIN { print "\t{" }
	$2 ~ /^walk\./ {
		if (!inwalk) { print "\t\t.walk =\n\t\t\t{"; inwalk = 1 }
		sub(/^walk\./, "", $2)
		printf "\t\t\t\t.%s = %s,\n", $2, val($1, $3)
		n++
		next
	}
	{
		if (inwalk == 1) { print "\t\t\t},"; inwalk = 2 }
		printf "\t\t.%s = %s,\n", $2, val($1, $3)
		n++
	}
	$2 == "interp_size" && $3 == 1 { nothreads = 1 }
	END {
		print "\t},"
		# a non-threaded build: no interpreter offsets
		if (n != 34 - 2 * nothreads) { print "perl_layout_gen.sh: " n " values, not " 34 - 2 * nothreads > "/dev/stderr"; exit 1 }
	}'
}
if [ -z "$check" ]; then
	row
	exit 0
fi
got=$(row)
version=$(echo "$got" | sed -n 's/^\t\t\.version = \([0-9]*\),$/\1/p')
# TABLE.c's row of that version: from its "\t{" to its "\t}," inside
# the architecture's table.
have=$(awk -v t="$table" -v v="$version" '
	$0 ~ "^static const struct perl_layout " t "\\[\\] = \\{$" { in_t = 1; next }
	in_t && /^};$/ { exit }
	in_t && /^\t\{$/ { buf = $0 "\n"; next }
	in_t && buf != "" { buf = buf $0 "\n" }
	in_t && /^\t\},$/ { if (buf ~ "\t\t\\.version = " v ",\n") { printf "%s", buf; exit } buf = "" }
' "$check")
have=${have%$'\n'}
if echo "$got" | grep -q $'^\t\t\\.interp_size = 1,$'; then
	# A non-threaded build's headers: the version's threaded row without
	# its interpreter (struct interpreter and the offsets into it).
	got=$(echo "$got" | grep -v $'^\t\t\\.interp_size = ')
	have=$(echo "$have" | grep -v -e $'^\t\t\\.interp_size = ' -e $'^\t\t\t\t\\.interp_cur')
fi
if [ "$got" != "$have" ]; then
	echo "perl_layout_gen.sh: $check's $arch row of 5.$version is not what $core gives:" >&2
	diff <(echo "$have") <(echo "$got") >&2 || true
	exit 1
fi
echo "perl_layout_gen.sh: $arch 5.$version row as generated ($core)"
