/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The recording's output file, written safely in a directory other users
 * may write to: a new private (0600) temporary file beside the target,
 * created with O_EXCL before the recording starts (a bad path fails at
 * once), renamed over the target only when complete. A symlink planted at
 * the target is replaced, never followed; a full disk leaves the target as
 * it was.
 */
#ifndef OTELPROF_CLI_OUTPUT_FILE_H
#define OTELPROF_CLI_OUTPUT_FILE_H

#include <stddef.h>
#include <stdint.h>

struct output_file {
	int dirfd;	  /* the target's directory */
	int fd;		  /* the temporary file */
	char tmp[64];	  /* its name in dirfd */
	const char *base; /* the target's name in dirfd */
	char *dir;	  /* malloc'd: the directory's path */
};

/* 0 or a negative errno with a message in err. */
int output_open(struct output_file *o, const char *path, char *err,
		size_t errlen);
/* Write everything, flush to disk, rename over the target. On failure the
 * temporary file is removed and the target untouched. */
int output_commit(struct output_file *o, const uint8_t *data, size_t len,
		  char *err, size_t errlen);
/* Remove the temporary file (after a failure). Idempotent. */
void output_abort(struct output_file *o);

#endif
