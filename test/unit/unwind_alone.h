/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests and fuzz targets of the unwinder without the agent: the steps the
 * agent runs (lib/agent/process_sync.c, file_sync.c) cut down to the
 * unwinder's and the symbolizer's, in the agent's order: what the process
 * table changed is taken by unwind_alone_sync, as the agent does after
 * every call that can change it; the file table's and the file cache's
 * listener.
 */
#ifndef OTELPROF_TEST_UNWIND_ALONE_H
#define OTELPROF_TEST_UNWIND_ALONE_H

#include "unwind/process_unwind.h"

/* pu (initialised with its process table and file cache) listens alone. */
void unwind_alone_listen(struct process_unwind *pu);
/* Hand what the process table changed to pu (forget, sync). */
void unwind_alone_sync(struct process_unwind *pu);

#endif
