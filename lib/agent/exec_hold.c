// SPDX-License-Identifier: Apache-2.0
/* The hold list of exec_hold.h: a small array searched linearly (it
 * holds the execs of the last few milliseconds, a handful). */
#include "agent/exec_hold.h"

#include <string.h>

/* Index of pid's held exec, or -1. */
static int find(const struct exec_hold *h, uint32_t pid)
{
	for (uint32_t i = 0; i < h->n; i++)
		if (h->v[i].pid == pid)
			return (int)i;
	return -1;
}

static void remove_at(struct exec_hold *h, struct held_exec *x)
{
	*x = h->v[--h->n];
}

bool exec_hold_add(struct exec_hold *h, uint32_t pid, uint64_t start_ns,
		   uint64_t exec_ns, const char *filename, size_t len)
{
	int i = find(h, pid);
	struct held_exec *x;

	if (i >= 0) {
		x = &h->v[i];
	} else {
		if (h->n >= EXEC_HOLD_MAX)
			return false;
		x = &h->v[h->n++];
	}
	x->pid = pid;
	x->start_ns = start_ns;
	x->due_ns = exec_ns + EXEC_HOLD_NS;
	/* A name of len bytes, ended within them or not, replaces all of
	 * an earlier one's. */
	if (len > sizeof(x->filename) - 1)
		len = sizeof(x->filename) - 1;
	memcpy(x->filename, filename, len);
	x->filename[len] = '\0';
	return true;
}

bool exec_hold_drop(struct exec_hold *h, uint32_t pid, uint64_t start_ns)
{
	int i = find(h, pid);

	if (i < 0 || h->v[i].start_ns != start_ns)
		return false;
	remove_at(h, &h->v[i]);
	return true;
}

bool exec_hold_has(const struct exec_hold *h, uint32_t pid)
{
	return find(h, pid) >= 0;
}

bool exec_hold_take_due(struct exec_hold *h, uint64_t now_ns,
			struct held_exec *out)
{
	for (uint32_t i = 0; i < h->n; i++)
		if (h->v[i].due_ns <= now_ns) {
			*out = h->v[i];
			remove_at(h, &h->v[i]);
			return true;
		}
	return false;
}

int exec_hold_next_ms(const struct exec_hold *h, uint64_t now_ns)
{
	uint64_t next = UINT64_MAX;

	for (uint32_t i = 0; i < h->n; i++)
		if (h->v[i].due_ns < next)
			next = h->v[i].due_ns;
	if (next == UINT64_MAX)
		return -1;
	if (next <= now_ns)
		return 1;
	return (int)((next - now_ns + 999999) / 1000000);
}
