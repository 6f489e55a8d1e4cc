/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where user space ends on the machine this build profiles, so that a
 * pointer read from a process can be refused before it is followed: 47
 * bits on x86_64 (4-level paging); aarch64 maps user space up to 48 bits,
 * 52 with large VAs, and Debian's arm64 loader puts libraries just below
 * 1 << 48 (0xffff...), where an x86_64 bound would refuse them.
 */
#ifndef OTELPROF_PROCESS_USER_VA_H
#define OTELPROF_PROCESS_USER_VA_H

#if defined(__aarch64__)
#define USER_VA_END (1ull << 52)
#else
#define USER_VA_END (1ull << 47)
#endif

#endif
