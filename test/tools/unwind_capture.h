/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A captured user stack, to replay through the shared walk
 * (ebpf/unwind_walk.h) away from the process it came from. The format
 * (version 1, every integer little-endian) is described in
 * docs/unwinding.md ("Capturing and replaying a stack"):
 *
 *   header  64 bytes: magic "OTPUWCAP", u32 version, u32 header size,
 *           u32 pid, u32 tid, u64 rip, rsp, rbp, u32 stack bytes,
 *           u32 mappings, u32 expected frames, u32 flags
 *   stack   the bytes from rsp upwards
 *   mapping u64 start, end, offset, dev, ino, size, mtime_ns,
 *           u32 flags, u32 image bytes, u16 path bytes, u16 build id
 *           bytes, then path, build id (hex) and image (the vDSO's bytes)
 *   frame   u64 pc, u16 name bytes, name   (the expected frames)
 *
 * A capture file is outside data: unwind_capture_parse bounds every
 * count and length and checks the mappings are sorted and disjoint (the
 * walk's binary search needs that), with a message for what is wrong.
 */
#ifndef OTELPROF_TEST_UNWIND_CAPTURE_H
#define OTELPROF_TEST_UNWIND_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#define UNWIND_CAPTURE_MAGIC	   "OTPUWCAP"
#define UNWIND_CAPTURE_VERSION	   1u
#define UNWIND_CAPTURE_HEADER	   64u
#define UNWIND_CAPTURE_MAX_FILE	   (64u << 20)
#define UNWIND_CAPTURE_MAX_STACK   (8u << 20)
#define UNWIND_CAPTURE_MAX_MAPS	   1024u
#define UNWIND_CAPTURE_MAX_FRAMES  4096u
#define UNWIND_CAPTURE_MAX_PATH	   4095u
#define UNWIND_CAPTURE_MAX_BUILDID 128u
#define UNWIND_CAPTURE_MAX_IMAGE   (1u << 20)
#define UNWIND_CAPTURE_MAX_NAME	   4095u

/* unwind_capture.flags */
#define UNWIND_CAPTURE_F_EXPECT_GDB 1u /* expected frames from gdb */
/* unwind_capture_map.flags */
#define UNWIND_CAPTURE_M_IMAGE 1u /* image holds the mapping's bytes */

struct unwind_capture_map {
	uint64_t start, end, offset;
	uint64_t dev, ino, size, mtime_ns; /* the file's identity */
	uint32_t flags;
	char *path;	/* NUL-terminated */
	char *build_id; /* hex, "" if none */
	uint8_t *image; /* image_len bytes, NULL if none */
	uint32_t image_len;
};

struct unwind_capture_frame {
	uint64_t pc;
	char *name; /* "" if unknown */
};

struct unwind_capture {
	uint32_t pid, tid, flags;
	uint64_t rip, rsp, rbp;
	uint8_t *stack; /* stack_len bytes from rsp */
	uint32_t stack_len;
	struct unwind_capture_map *maps; /* sorted, disjoint */
	uint32_t nmaps;
	struct unwind_capture_frame *expect;
	uint32_t nexpect;
};

/* Parse len bytes. 0, or -1 with a message in err (errlen bytes); c is
 * empty then. Free with unwind_capture_free either way. */
int unwind_capture_parse(const uint8_t *buf, size_t len,
			 struct unwind_capture *c, char *err, size_t errlen);
/* The encoding of c: a malloc'd buffer of *len bytes, NULL on ENOMEM or
 * a field over its bound. */
uint8_t *unwind_capture_write(const struct unwind_capture *c, size_t *len);
void unwind_capture_free(struct unwind_capture *c);

#endif
