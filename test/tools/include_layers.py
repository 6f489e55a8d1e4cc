#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fail if lib/'s folders include each other in a cycle.

Every #include "folder/file.h" in lib/<folder>/*.[ch] is an edge from
<folder> to folder; the folders must form a DAG (the order is in
docs/architecture.md). Prints each cycle's edges with the lines that make
them. Usage: include_layers.py [LIBDIR]
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"', re.M)


def edges(lib):
    out = {}  # (from, to) -> ["file:line", ...]
    for folder in sorted(os.listdir(lib)):
        d = os.path.join(lib, folder)
        if not os.path.isdir(d):
            continue
        # a folder's subfolders (runtimes/NAME/) are the folder's own
        paths = sorted(os.path.join(root, name)
                       for root, _, names in os.walk(d) for name in names)
        for path in paths:
            if not path.endswith((".c", ".h")):
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for m in INCLUDE.finditer(text):
                to = m.group(1)
                if to != folder and os.path.isdir(os.path.join(lib, to)):
                    line = text.count("\n", 0, m.start()) + 1
                    out.setdefault((folder, to), []).append(
                        f"{path}:{line}")
    return out


def cycles(graph):
    """Strongly connected components with more than one folder."""
    index, low, stack, on, comps = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


def main():
    lib = sys.argv[1] if len(sys.argv) > 1 else "lib"
    e = edges(lib)
    graph = {}
    for a, b in e:
        graph.setdefault(a, set()).add(b)
    bad = cycles(graph)
    for comp in bad:
        print(f"include cycle among lib/ folders: {' '.join(comp)}")
        for (a, b), where in sorted(e.items()):
            if a in comp and b in comp:
                print(f"  {a} -> {b}: {', '.join(where)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
