/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Elastic APM agent's return channel (its universal profiling
 * integration): the agent names a unix datagram socket in its process
 * storage; we tell it which stack traces ran under which of its
 * transactions, so it can store the stack-trace ids with them.
 *
 * Wire format (native byte order, docs/context-publishing.md):
 *   every message: u16 message_type, u16 minor_version, payload
 *   registration (type 2, minor 1): u32 samples_delay_ms, u32 length +
 *     host.id (UTF-8); sent once per connection, first
 *   correlation (type 1, minor 1): trace_id[16], transaction_id[8],
 *     stack_trace_id[16], u16 count; 46 bytes
 *
 * Samples only queue (apm_channel_add: no syscall, bounded table); the
 * drain thread sends once per pass (apm_channel_flush), non-blocking,
 * rate-limited per process. The socket is reached inside the process's
 * own root (openat2 RESOLVE_IN_ROOT under /proc/PID/root), must be a
 * socket owned by the process's effective uid, and is connected through
 * the opened file, never by a path of ours.
 */
#ifndef OTELPROF_CONTEXT_APM_CHANNEL_H
#define OTELPROF_CONTEXT_APM_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define APM_MSG_CORRELATION  1
#define APM_MSG_REGISTRATION 2
#define APM_CORRELATION_SIZE 46
/* Sample attribute carrying the id the agent stores in its transaction's
 * elastic.profiler_stack_trace_ids. */
#define APM_STACK_ID_ATTR   "elastic.profiler_stack_trace_id"
#define APM_SOCKET_PATH_MAX 1024
#define APM_HOST_ID_MAX	    128
/* Distinct (trace, transaction, stack) entries waiting per process: a
 * pass (<= 100 ms) of a busy process fits; more are dropped, counted. */
#define APM_PENDING_SLOTS 256
/* What we promise the agent (registration): a sample reaches it within
 * this; entries older than it are useless to the agent and dropped. */
#define APM_SAMPLES_DELAY_MS 1000
/* Per process: messages per second, and the burst a pass may send. */
#define APM_RATE_PER_SEC 2000
#define APM_BURST	 256
/* Processes with a channel at most (each holds a socket and ~14 KiB);
 * more are counted as refused. */
#define APM_MAX_CHANNELS 256
/* A socket we could not reach or refused is tried again after this. */
#define APM_RETRY_NS (5000ull * 1000 * 1000)

struct apm_counters {
	uint64_t channels; /* agent sockets connected (registrations sent) */
	uint64_t sent;	   /* correlation messages sent */
	uint64_t dropped;  /* correlations not delivered: table full, rate,
			      too old (the agent's queue stayed full), or
			      the socket went away */
	uint64_t refused;  /* socket paths refused: not a socket, another
			      owner, unreachable in the process's root, or
			      APM_MAX_CHANNELS reached */
};

struct apm_pending {
	uint8_t trace_id[16];
	uint8_t tx_id[8];
	uint8_t stack_id[16];
	uint32_t count; /* 0: slot free */
	uint64_t first_ns;
};

struct apm_channel {
	char *path; /* socket-path, as the process sees it */
	int fd;	    /* connected datagram socket, or -1 */
	uint64_t next_open_ns;
	double tokens;
	uint64_t refill_ns;
	uint32_t npending;
	struct apm_pending pending[APM_PENDING_SLOTS];
};

/* An absolute path, 1..APM_SOCKET_PATH_MAX bytes, no NUL, no ".."
 * component (the kernel's RESOLVE_IN_ROOT would contain one anyway). */
bool apm_socket_path_ok(const char *path, size_t len);
/* The effective uid from /proc/PID/status text (the second field of its
 * "Uid:" line). 0 or -EINVAL. */
int apm_status_euid(const char *text, size_t len, uint32_t *euid);
/* The 16-byte stack-trace id of a stack: a 128-bit FNV-1a over its
 * frame words (kernel, then user). */
void apm_stack_id(const uint64_t *kernel, uint32_t nkernel,
		  const uint64_t *user, uint32_t nuser, uint8_t out[16]);
/* base64url without padding (22 characters + NUL), as the agent and
 * Elastic's profiling store write stack-trace ids. */
void apm_stack_id_string(const uint8_t id[16], char out[23]);
/* Message encoders (exposed for tests); return the length. */
size_t apm_encode_registration(uint8_t *buf, size_t cap, uint32_t delay_ms,
			       const char *host_id);
size_t apm_encode_correlation(uint8_t *buf, const struct apm_pending *e,
			      uint16_t count);

struct apm_channel *apm_channel_new(const char *path);
void apm_channel_free(struct apm_channel *c);
/* Queue one sample's correlation. No syscall. */
void apm_channel_add(struct apm_channel *c, const uint8_t trace_id[16],
		     const uint8_t tx_id[8], const uint8_t stack_id[16],
		     uint64_t now_ns, struct apm_counters *n);
/* Connect if due (proc_root/pid: where the process is), then send what
 * is queued, within the rate; what the agent's queue cannot take now
 * stays queued until it is older than APM_SAMPLES_DELAY_MS. */
void apm_channel_flush(struct apm_channel *c, const char *proc_root,
		       uint32_t pid, const char *host_id, uint64_t now_ns,
		       struct apm_counters *n);

#endif
