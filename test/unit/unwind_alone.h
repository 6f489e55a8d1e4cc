/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests and fuzz targets of the unwinder without the agent: the steps the
 * agent runs (lib/agent/process_sync.c, file_sync.c) cut down to the
 * unwinder's and the symbolizer's, in the agent's order, with the
 * agent's own per-file steps (agent/file_sync.h).
 */
#ifndef OTELPROF_TEST_UNWIND_ALONE_H
#define OTELPROF_TEST_UNWIND_ALONE_H

#include "unwind/process_unwind.h"

/* Hand what the process table changed to pu (forget; resolve the files,
 * sync), as the agent does after every call that can change it; take the
 * loads finished and the files gone. */
void unwind_alone_sync(struct process_unwind *pu);

#endif
