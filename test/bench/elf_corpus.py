#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# List every x86_64 ET_EXEC/ET_DYN ELF file under the given directories,
# once per inode (symlinks followed), for bench_cfi_oracle:
#   python3 test/bench/elf_corpus.py /usr/lib/x86_64-linux-gnu /usr/bin ... \
#     | build/bench/bench_cfi_oracle -
import os
import struct
import sys

seen = set()
for root in sys.argv[1:]:
    for dp, _, fn in os.walk(root):
        for f in fn:
            p = os.path.join(dp, f)
            try:
                st = os.stat(p)
                if not os.path.isfile(p) or st.st_size < 64:
                    continue
                with open(p, 'rb') as fh:
                    h = fh.read(20)
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen or h[:4] != b'\x7fELF' or h[4] != 2:
                continue
            et, em = struct.unpack('<HH', h[16:20])
            if em == 62 and et in (2, 3):
                seen.add(key)
                print(os.path.realpath(p))
