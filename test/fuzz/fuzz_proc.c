// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for the /proc text parsers: maps, stat (start time),
 * cgroup (container id). The first byte picks the parser.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "process/proc_info.h"
#include "process/proc_maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char id[CONTAINER_ID_LEN + 1], comm[16];
	struct proc_maps maps;
	uint64_t st;
	unsigned bad = 0;

	if (!size)
		return 0;
	switch (data[0] % 3) {
	case 0:
		if (!proc_maps_parse((const char *)data + 1, size - 1, &maps,
				     &bad)) {
			/* Every kept entry is sane and findable. */
			for (size_t i = 0; i < maps.n; i++) {
				if (maps.v[i].end <= maps.v[i].start ||
				    proc_maps_find(&maps, maps.v[i].start) ==
					    NULL)
					__builtin_trap();
			}
			proc_maps_free(&maps);
		}
		break;
	case 1:
		proc_stat_parse_starttime((const char *)data + 1, size - 1,
					  &st);
		if (!proc_stat_parse_comm((const char *)data + 1, size - 1,
					  comm) &&
		    strlen(comm) > 15)
			__builtin_trap();
		break;
	default:
		if (!proc_cgroup_parse_container_id((const char *)data + 1,
						    size - 1, id) &&
		    strlen(id) != CONTAINER_ID_LEN)
			__builtin_trap();
		break;
	}
	return 0;
}
