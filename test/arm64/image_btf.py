#!/usr/bin/env python3
"""Cut the kernel's BTF out of an arm64 boot Image (or a gzip'd one).

Debian ships no arm64 vmlinux ELF outside the huge -dbg package, but the
boot Image holds the .BTF section's bytes as they are (the kernel serves
them as /sys/kernel/btf/vmlinux), so the blob is found by its header:
magic 0xeb9f, version 1, a 24-byte header whose type and string sections
follow it back to back. The blob is written as a raw BTF file, which
bpftool reads (`bpftool btf dump file OUT format c`).

    image_btf.py IMAGE OUT
"""
import gzip
import struct
import sys


def candidates(img):
    magic = struct.pack("<HBB", 0xEB9F, 1, 0)
    i = img.find(magic)
    while i >= 0:
        yield i
        i = img.find(magic, i + 1)


def blob_at(img, i):
    if i + 24 > len(img):
        return None
    _, _, _, hdr_len, type_off, type_len, str_off, str_len = struct.unpack_from(
        "<HBBIIIII", img, i
    )
    # vmlinux BTF as pahole writes it: header, types, then strings.
    if hdr_len != 24 or type_off != 0 or str_off != type_len:
        return None
    end = i + hdr_len + str_off + str_len
    if str_len == 0 or end > len(img):
        return None
    strs = img[i + hdr_len + str_off : end]
    # The string section starts with the empty string and ends with a NUL.
    if strs[0] != 0 or strs[-1] != 0:
        return None
    return img[i:end]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    img = open(sys.argv[1], "rb").read()
    if img[:2] == b"\x1f\x8b":
        img = gzip.decompress(img)
    # Module BTF is not in the Image; vmlinux's blob is the one big one.
    blobs = [b for b in (blob_at(img, i) for i in candidates(img)) if b]
    if not blobs:
        sys.exit(f"image_btf.py: no BTF blob in {sys.argv[1]} (CONFIG_DEBUG_INFO_BTF off?)")
    blob = max(blobs, key=len)
    if len(blob) < 1 << 20:
        sys.exit(f"image_btf.py: largest BTF blob is {len(blob)} bytes: not a kernel's")
    with open(sys.argv[2], "wb") as f:
        f.write(blob)


if __name__ == "__main__":
    main()
