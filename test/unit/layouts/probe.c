// SPDX-License-Identifier: Apache-2.0
/*
 * A small library linked by each linker (test_linker_layouts.c): its text
 * is short enough to start in the file's first pages, where lld and mold
 * share a page between the read-only and the text segment.
 */
#define NOINLINE __attribute__((noinline))

static volatile int sink;

NOINLINE int layout_probe_first(int x)
{
	sink = x;
	return x * 7 + 1;
}

NOINLINE int layout_probe_last(int x)
{
	sink = x + 1;
	return layout_probe_first(x) + 3;
}
