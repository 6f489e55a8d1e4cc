/* SPDX-License-Identifier: Apache-2.0 */
/* The CLI's help: the command list and each subcommand's options with an
 * example (`otelprof CMD -h`, `otelprof help CMD`). */
#ifndef OTELPROF_CLI_USAGE_H
#define OTELPROF_CLI_USAGE_H

#include <stdio.h>

/* All commands, one line each. */
void usage_all(FILE *f);
/* The help of cmd; -1 when there is no such command. */
int usage_command(FILE *f, const char *cmd);

#endif
