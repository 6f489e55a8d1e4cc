#!/usr/bin/env bash
# Seed corpora for the fuzzers, made from this host at test time.
#   test/fuzz/corpus.sh OUT_DIR
set -euo pipefail
out=$1
mkdir -p "$out"/{proc,kallsyms,elf_symbols,cfi}
i=0
for pid in $(ls /proc | grep -E '^[0-9]+$' | head -20); do
	{ printf '\0'; cat "/proc/$pid/maps"; } > "$out/proc/maps-$pid" 2>/dev/null || true
	{ printf '\1'; cat "/proc/$pid/stat"; } > "$out/proc/stat-$pid" 2>/dev/null || true
	{ printf '\2'; cat "/proc/$pid/cgroup"; } > "$out/proc/cgroup-$pid" 2>/dev/null || true
done
printf '\2%s' "0::/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope" > "$out/proc/cgroup-docker"
head -c 200000 /proc/kallsyms > "$out/kallsyms/head"
grep '\[' /proc/kallsyms | head -2000 > "$out/kallsyms/modules" || true
# Small real ELF files (whole files: section headers sit at the end).
find /usr/bin /usr/lib/x86_64-linux-gnu -maxdepth 1 -type f -size -48k 2>/dev/null |
	while read -r f; do
		if [ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
			cp "$f" "$out/elf_symbols/$(basename "$f")"
			cp "$f" "$out/cfi/$(basename "$f")"
			i=$((i + 1))
			[ "$i" -ge 40 ] && break
		fi
	done
true
