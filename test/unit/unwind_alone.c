// SPDX-License-Identifier: Apache-2.0
#include "unwind_alone.h"
#include "agent/file_sync.h"

void unwind_alone_sync(struct process_unwind *pu)
{
	const struct file_stages st = {pu->procs, pu->procs->files, pu->files,
				       pu};
	struct process_change c;
	struct process *p;

	file_stages_take_loads(&st);
	while ((p = process_table_take_removed(pu->procs))) {
		process_unwind_forget(pu, p);
		process_table_release(pu->procs, p);
	}
	while ((p = process_table_take_changed(pu->procs, &c))) {
		file_stages_resolve_all(&st, p);
		process_unwind_sync(pu, p);
	}
	file_stages_forget_gone(&st);
}
