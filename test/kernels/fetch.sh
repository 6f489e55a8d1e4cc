#!/usr/bin/env bash
# Fetch Debian's cloud kernels for the kernel matrix through the machine's
# own apt, from other suites of the same Debian archive, into a cache:
#   fetch.sh CACHE_DIR VERSION...   (VERSION: 5.10 6.1 6.12, or 6.12-rt for
#   the PREEMPT_RT kernel of that suite)
# Leaves CACHE_DIR/VERSION/vmlinuz (and .../release: the kernel release).
# A separate sources list, lists folder and package cache: the machine's
# own apt state is never touched. OTELPROF_KERNEL_ARCH=arm64 fetches the
# arm64 kernels instead (Debian architecture names; amd64 by default).
set -euo pipefail
arch=${OTELPROF_KERNEL_ARCH:-amd64}
cache=$1
shift
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

suite_of() {
	case ${1%-rt} in
	5.10) echo bullseye ;;
	6.1) echo bookworm ;;
	6.12) echo trixie ;;
	*) echo "fetch.sh: unknown kernel $1 (known: 5.10 6.1 6.12, each also as VERSION-rt)" >&2; return 1 ;;
	esac
}

# The archive the machine's apt already uses (deb822 or one-line format).
archive=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
	grep -E '^(URIs:|deb )' | grep -oE 'https?://[^ ]*/debian/?( |$)' | head -n1 | tr -d ' ' || true)
archive=${archive:-http://deb.debian.org/debian}
archive=${archive%/}

for v in "$@"; do
	suite=$(suite_of "$v")
	# Cloud images are small; PREEMPT_RT exists only as the generic -rt image.
	flavour=cloud
	case $v in *-rt) flavour=rt ;; esac
	dir=$cache/$v
	[ -s "$dir/vmlinuz" ] && [ -s "$dir/release" ] && continue
	apt=$cache/apt-$suite
	mkdir -p "$apt/lists/partial" "$apt/archives/partial"
	echo "deb [arch=$arch signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $archive $suite main" >"$apt/sources.list"
	opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt" -o "Dir::Cache::archives=$apt/archives"
		-o Acquire::Languages=none -o APT::Architecture=$arch -o APT::Architectures=$arch -o APT::Get::List-Cleanup=0 -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
	echo "kernels: fetching the $suite $flavour $arch kernel ($v) from $archive"
	apt-get -qq "${opts[@]}" update
	# The metapackage names the current image package.
	pkg=$(apt-cache "${opts[@]}" depends linux-image-$flavour-$arch |
		sed -n "s/^ *Depends: \(linux-image-[0-9][^ ]*-$flavour-$arch\(-unsigned\)\?\)\$/\1/p" | head -n1)
	if [ -z "$pkg" ]; then
		echo "fetch.sh: no $flavour kernel image package in $suite" >&2
		exit 1
	fi
	rm -rf "$dir.tmp" && mkdir -p "$dir.tmp/x"
	(cd "$dir.tmp" && apt-get -qq "${opts[@]}" download "$pkg")
	dpkg-deb -x "$dir.tmp"/*.deb "$dir.tmp/x"
	release=${pkg#linux-image-}
	case $release in
	*unsigned) release=${release%-unsigned} ;;
	esac
	vmlinuz=$(ls "$dir.tmp"/x/boot/vmlinuz-* | head -n1)
	case $(basename "$vmlinuz") in
	vmlinuz-${v%-rt}.*) ;;
	*) echo "fetch.sh: $pkg is not a $v kernel: $vmlinuz" >&2; exit 1 ;;
	esac
	cp "$vmlinuz" "$dir.tmp/vmlinuz"
	basename "$vmlinuz" | sed 's/^vmlinuz-//' >"$dir.tmp/release"
	rm -rf "$dir.tmp/x" "$dir.tmp"/*.deb
	rm -rf "$dir" && mv "$dir.tmp" "$dir" && rm -rf "$apt"
	echo "kernels: $v = $(cat "$dir/release")"
done
