/* SPDX-License-Identifier: Apache-2.0 */
/* Types shared by the BPF sampler (profiler.bpf.c) and userspace. */
#ifndef OTELPROF_PROFILER_TYPES_H
#define OTELPROF_PROFILER_TYPES_H

#ifndef __VMLINUX_H__
#include <stdint.h>
typedef uint8_t u8;
typedef int8_t s8;
typedef int16_t s16;
typedef uint16_t u16;
typedef int64_t s64;
typedef uint32_t u32;
typedef int32_t s32;
typedef uint64_t u64;
#endif

#define OTELPROF_COMM_LEN 16
/* Kernel frames per sample: the kernel's own perf_event_max_stack default. */
#define OTELPROF_MAX_KERNEL_FRAMES 127
/*
 * User frames per sample, unwound in the kernel from .eh_frame tables with
 * bpf_loop: one loop iteration per frame, and bpf_loop allows up to 8M
 * iterations, so the limit is ours, chosen for the event size (4 KiB of
 * frames). Deeper stacks are cut and flagged OTELPROF_SAMPLE_F_TRUNCATED.
 */
#define OTELPROF_MAX_USER_FRAMES 512
/*
 * Kernels without bpf_loop (< 5.17) walk OTELPROF_WALK_CHUNK frames per
 * program and chain programs by tail call; a chain has at most
 * OTELPROF_WALK_TAIL_CALLS of them (the kernel's MAX_TAIL_CALL_CNT), so
 * their frame limit is the product.
 */
#define OTELPROF_WALK_CHUNK	 16
#define OTELPROF_WALK_TAIL_CALLS 32
/*
 * A sample of a process whose tables are not in the kernel yet (it started
 * since userspace last looked) carries a copy of the top of its user stack
 * instead of frames; userspace unwinds it with the same step code once it
 * has loaded the tables, so short-lived processes are not lost. The copy
 * and the frames share one array: OTELPROF_USTACK_WORDS words.
 */
#define OTELPROF_STACK_COPY_BYTES (8 * 1024)
#define OTELPROF_USTACK_WORDS	  (OTELPROF_STACK_COPY_BYTES / 8)
/* Row chunks in the kernel at once (ids 1..max-1): shared ones pack many
 * small files' tables, big files have their own. */
#define OTELPROF_MAX_UNWIND_FILES 16384
/* Executable mappings per process held in its unwind_procs entry; a
 * process with more has all of them in the shared big_mappings array
 * (OTELPROF_BIG_MAPPINGS entries for all such processes, 1.25 MiB, all
 * of it allocated at start: room for 60 processes of 500 executable
 * mappings; a process refused is counted, unwind_big_refused, and keeps
 * its first 64). 64 holds the common processes (measured: a C service
 * 5-15, node 14, a small JVM 19, CPython with a dozen extension modules
 * 44); the entry and each CPU's copy of it in the walk take 40 bytes a
 * mapping, so the bound is paid per process and per CPU. The mapping
 * search (unwind_walk.h) halves OTELPROF_PROC_MAPPINGS_LOG2 times. */
#define OTELPROF_MAX_PROC_MAPPINGS  64
#define OTELPROF_PROC_MAPPINGS_LOG2 6
_Static_assert((1 << OTELPROF_PROC_MAPPINGS_LOG2) >= OTELPROF_MAX_PROC_MAPPINGS,
	       "the mapping search halves too few times");
_Static_assert((OTELPROF_MAX_PROC_MAPPINGS &
		(OTELPROF_MAX_PROC_MAPPINGS - 1)) == 0,
	       "the mapping search masks indexes: a power of two");
#define OTELPROF_BIG_MAPPINGS 32768

/* An exec or a mapping change wakes the reader at once, but at most once
 * per this gap on the whole host: the wake-up (an IPI to the reader's CPU)
 * is paid by the process that execs, ~21 us in a VM. The reader polls
 * again within the gap after a pass that found such an event, so the
 * events the gap held back wait no longer than it. */
#define OTELPROF_TASK_WAKE_GAP_MS 4

enum otelprof_event_type {
	OTELPROF_EVENT_SAMPLE = 1,
	OTELPROF_EVENT_EXEC = 2, /* a process replaced its image */
	OTELPROF_EVENT_EXIT = 3, /* a whole process (thread group) exited */
	/* A sampled process's address space changed since userspace read
	 * it (mm->map_count moved; addr: the new count). Rate-limited per
	 * process by the gap userspace sets in its unwind_procs entry. */
	OTELPROF_EVENT_MAPS_CHANGED = 4,
	/* A new process (not a thread) forked; addr: the parent's tgid. It
	 * starts with its parent's mappings. */
	OTELPROF_EVENT_FORK = 5,
	/* Off-CPU (opt-in, offcpu.bpf.c): a thread's stack as it was
	 * switched out (struct otelprof_sample_event; hdr.ktime_boot_ns is
	 * the switch-out time) ... */
	OTELPROF_EVENT_OFFCPU_SAMPLE = 6,
	/* ... and, when it was switched back in, how long it was off
	 * (struct otelprof_offcpu_end): userspace joins the two by tid. */
	OTELPROF_EVENT_OFFCPU_END = 7,
};

/* Indices into the per-CPU `counters` map. */
enum otelprof_counter {
	/* Samples sent to the ring buffer: once drained, samples_received
	 * plus samples_dropped_at_stop, hence not in otelprof_stats;
	 * test/abi/abi_soak.c reads it from the map to check that. */
	OTELPROF_CNT_SAMPLES = 0,
	OTELPROF_CNT_LOST,	 /* ring buffer full */
	OTELPROF_CNT_IDLE,	 /* idle CPU samples skipped */
	OTELPROF_CNT_KSTACK_ERR, /* bpf_get_stack(kernel) failed */
	OTELPROF_CNT_USTACK_ERR, /* user registers or stack copy unreadable */
	OTELPROF_CNT_TASK_EVENTS_LOST,	/* exec/exit notifications dropped */
	OTELPROF_CNT_UNWIND_COMPLETE,	/* user stacks unwound to the root */
	OTELPROF_CNT_UNWIND_TRUNCATED,	/* cut at max_user_frames */
	OTELPROF_CNT_UNWIND_ERR_RULE,	/* pc without a usable unwind rule */
	OTELPROF_CNT_UNWIND_ERR_READ,	/* unreadable stack memory */
	OTELPROF_CNT_UNWIND_ERR_LOOP,	/* sp went backwards */
	OTELPROF_CNT_UNWIND_NO_MAPPING, /* pc outside known code, no fp chain */
	OTELPROF_CNT_STACK_COPIES,	/* samples sent as a stack copy */
	OTELPROF_CNT_UNWIND_PENDING,	/* leaf only: tables still loading */
	OTELPROF_CNT_CTX_READ,	       /* samples that carry a thread context */
	OTELPROF_CNT_CTX_ERR,	       /* context location set, read failed */
	OTELPROF_CNT_MAPS_CHANGED,     /* address-space change events sent */
	OTELPROF_CNT_NOTIFY_HELD,      /* change or unknown pc not reported yet:
					  the process's notify gap holds it */
	OTELPROF_CNT_INTERP_SAMPLES,   /* samples with interpreter frames */
	OTELPROF_CNT_INTERP_ERR,       /* interpreter frame unreadable */
	OTELPROF_CNT_WALK_CHAINED,     /* walk programs run (kernels without
					  bpf_loop: one per OTELPROF_WALK_CHUNK
					  frames) */
	OTELPROF_CNT_RUNTIME_HANDOFFS, /* walks handed to a runtime's program */
	OTELPROF_CNT_TAIL_CALL_ERR,    /* a tail call failed (chain too long,
					  program gone): the walk stopped
					  there, truncated */
	/* Off-CPU (offcpu.bpf.c, loaded only when it is on): */
	OTELPROF_CNT_OFFCPU_RECORDED, /* switch-outs sent with their stack */
	OTELPROF_CNT_OFFCPU_PENDING_FULL, /* switch-outs not recorded: the
					    pending map was full */
	OTELPROF_CNT_OFFCPU_LOST,	  /* switch-out stacks or switch-in
					     records dropped: ring buffer
					     full */
	OTELPROF_CNT_MAX,
};

struct otelprof_event_header {
	u32 type; /* enum otelprof_event_type */
	u32 pid;  /* thread group id */
	u32 tid;
	u32 cpu;
	u64 ktime_boot_ns; /* bpf_ktime_get_boot_ns() */
	/* The process's start (its group leader's start_boottime): with the
	 * pid, its identity, so a reused pid is never taken for the old
	 * process. */
	u64 proc_start_ns;
};

/*
 * Thread context (trace correlation), read from the sampled thread's TLS.
 * OTEP 4947 records are at most 640 bytes: 28 of header, the rest
 * attributes, which travel after the sample's user words.
 */
#define OTELPROF_CTX_RECORD_MAX	 640
#define OTELPROF_CTX_HEADER_SIZE 28
#define OTELPROF_CTX_ATTRS_MAX                                                 \
	(OTELPROF_CTX_RECORD_MAX - OTELPROF_CTX_HEADER_SIZE)
#define OTELPROF_CTX_ATTRS_WORDS ((OTELPROF_CTX_ATTRS_MAX + 7) / 8)
/* Elastic v1 per-thread record: minor u16, valid, trace_present, flags,
 * trace_id[16] @5, span_id[8] @21, transaction_id[8] @29. */
#define OTELPROF_ELASTIC_RECORD_SIZE 37

enum otelprof_ctx_format {
	OTELPROF_CTX_NONE = 0,
	OTELPROF_CTX_OTEL_V1 = 1,
	OTELPROF_CTX_ELASTIC_V1 = 2,
};

struct otelprof_thread_ctx {
	u8 trace_id[16];
	u8 span_id[8];
	u8 format;	/* enum otelprof_ctx_format; NONE: no context */
	u8 pad0;	/* no trace flags: an OTLP Link has no field for them */
	u16 attrs_size; /* OTEP 4947 attrs_data bytes after the
			user words */
	u32 pad;
	/* Elastic v1: the transaction (local root span) id, which the
	 * agent's return channel is keyed by; zero otherwise. */
	u8 local_root_id[8];
};

/*
 * How BPF finds a context TLS variable from the thread pointer. Userspace
 * only says where the dynamic linker leaves the answer (a GOT slot or TLS
 * descriptor in the process); BPF reads it at sample time, so a library is
 * usable as soon as it is relocated, with no userspace retry loop.
 */
enum otelprof_tls_kind {
	OTELPROF_TLS_NONE = 0,
	OTELPROF_TLS_TP_OFFSET = 1, /* pointer at tp + tp_offset (local-exec) */
	OTELPROF_TLS_TPOFF_GOT = 2, /* s64 offset from tp in the GOT at addr */
	OTELPROF_TLS_DTPMOD_GOT = 3, /* module id in the GOT at addr; the
					variable at dtv[module] + offset */
	OTELPROF_TLS_DESC = 4, /* TLSDESC {resolver, arg} at addr: arg is a
				  tp offset (static TLS) or points to
				  {module, offset} (dynamic TLS) */
};

struct otelprof_tls_loc {
	u8 kind;   /* enum otelprof_tls_kind */
	u8 format; /* enum otelprof_ctx_format of the record it points to */
	u8 pad[6];
	s64 tp_offset; /* TP_OFFSET */
	u64 addr;      /* TPOFF_GOT, DTPMOD_GOT, DESC: runtime address */
	u64 offset;    /* DTPMOD_GOT: the variable's offset in its block */
};

/* Per process: where its context variables are, tried in order. */
#define OTELPROF_CTX_LOCS 2
struct otelprof_bpf_ctx_proc {
	struct otelprof_tls_loc loc[OTELPROF_CTX_LOCS];
};

/*
 * A sample as emitted to the ring buffer: the fixed header, then in words
 * its n_user user words (frames, or a stack copy), its context attributes
 * (ctx.attrs_size bytes rounded up to 8) and its n_kernel kernel frames.
 * Only that used prefix is sent (otelprof_sample_size below): most
 * samples are taken in user mode and have no kernel frames, so a fixed
 * kernel array in the header would be ~1 KiB of zeros in every record.
 * The kernel frames are taken last, when the record's other sizes are
 * known (the same stack: it is read from the sampled registers).
 */
struct otelprof_sample_event {
	struct otelprof_event_header hdr;
	char comm[OTELPROF_COMM_LEN];
	u32 n_kernel; /* kernel frames, after the attributes in words */
	u32 n_user;   /* user words at the start of words (frames, or stack
			 copy) */
	u32 flags;    /* OTELPROF_SAMPLE_F_* */
	/* Interpreter frames (see otelprof_interp_proc): the last
	 * 2 * n_interp of the n_user words are {code, instruction} pairs,
	 * innermost first, after the native frames. */
	u32 n_interp;
	u32 interp_kind; /* enum otelprof_interp_kind */
	/* BPF's, during the walk: the runtime frames a step noted so far
	 * (pairs at OTELPROF_NOTED_WORDS in words, moved after the native
	 * frames when the walk ends) and their kind. Not for userspace. */
	u16 n_noted;
	u16 noted_kind;
	u64 user_ip, user_sp, user_bp; /* user registers at the sample */
#if defined(__TARGET_ARCH_arm64) || defined(__aarch64__)
	/* x30: a leaf's return address is there, not on the stack. The BPF
	 * object and the library are built for one architecture together,
	 * so the layout differs between architectures only. */
	u64 user_lr;
#endif
	struct otelprof_thread_ctx ctx;
	u64 words[OTELPROF_USTACK_WORDS + OTELPROF_CTX_ATTRS_WORDS +
		  OTELPROF_MAX_KERNEL_FRAMES];
};

/* Where a sample's context attributes start, in bytes from words: after
 * its n_user words. Shared by the BPF program that writes them and
 * userspace that reads them (inlined: the verifier sees plain bounded
 * arithmetic). */
static inline __attribute__((always_inline)) u64
otelprof_sample_attrs_off(u64 n_user)
{
	return n_user * sizeof(u64);
}

/* Where its kernel frames start, in bytes from words: after the
 * attributes, rounded up to 8. At most OTELPROF_KSTACK_OFF_MAX. */
static inline __attribute__((always_inline)) u64
otelprof_sample_kstack_off(u64 n_user, u64 attrs_size)
{
	return otelprof_sample_attrs_off(n_user) + ((attrs_size + 7) & ~7ull);
}

#define OTELPROF_KSTACK_OFF_MAX                                                \
	((OTELPROF_USTACK_WORDS + OTELPROF_CTX_ATTRS_WORDS) * sizeof(u64))

/* The bytes of a sample event as sent: the header, n_user words,
 * attrs_size bytes of attributes rounded up to 8, n_kernel frames. */
static inline __attribute__((always_inline)) u64
otelprof_sample_size(u64 n_user, u64 attrs_size, u64 n_kernel)
{
	return __builtin_offsetof(struct otelprof_sample_event, words) +
	       otelprof_sample_kstack_off(n_user, attrs_size) +
	       n_kernel * sizeof(u64);
}

/* Its kernel frames (userspace: of a record whose sizes were checked). */
static inline __attribute__((always_inline)) const u64 *
otelprof_sample_kstack(const struct otelprof_sample_event *e)
{
	return (const u64 *)((const char *)e->words +
			     otelprof_sample_kstack_off(e->n_user,
							e->ctx.attrs_size));
}

#define OTELPROF_SAMPLE_F_KTHREAD (1u << 0) /* no user address space */
#define OTELPROF_SAMPLE_F_STACK_COPY                                           \
	(1u << 1) /* user words = stack words at user_sp */
#define OTELPROF_SAMPLE_F_COMPLETE  (1u << 2) /* unwound to the root */
#define OTELPROF_SAMPLE_F_TRUNCATED (1u << 3) /* cut at the frame limit */
#define OTELPROF_SAMPLE_F_PENDING   (1u << 4) /* leaf only: tables loading */
/* In unwound user words: this frame was found by the frame-pointer step
 * (code without CFI), not from CFI. User addresses never use bit 63. */
#define OTELPROF_USTACK_FP_FRAME (1ull << 63)
/* This frame's pc is where a signal interrupted the code (read from the
 * signal frame), not a return address: symbolized at pc, not pc - 1. */
#define OTELPROF_USTACK_EXACT_PC (1ull << 62)
#define OTELPROF_USTACK_FLAGS                                                  \
	(OTELPROF_USTACK_FP_FRAME | OTELPROF_USTACK_EXACT_PC)
/* At most one stack copy per thread per this interval. */
#define OTELPROF_COPY_INTERVAL_NS (2ull * 1000 * 1000)

/* One executable mapping of a process: vaddr = pc - bias. */
struct otelprof_bpf_mapping {
	u64 start, end;
	u64 bias;
	u32 file_id; /* key in unwind_files (the row chunk holding the
			file's table); 0: no table, use frame pointers;
			OTELPROF_FILE_ID_PENDING: table still being built */
	u32 nrows;
	u32 row_base; /* the file's first row in its chunk */
	/* Rows of the file's page index just before row_base (struct
	 * unwind_packed_row as unwind_walk.h reads it); 0: none, the
	 * search halves the whole table. */
	u32 index_rows;
};

#define OTELPROF_FILE_ID_PENDING 0xffffffffu

struct otelprof_bpf_proc {
	u32 n; /* sorted by start */
	/* mm->map_count when userspace read the mappings (0: the next
	 * sample adopts the current one); a sample that sees another count
	 * reports it (OTELPROF_EVENT_MAPS_CHANGED), as does a pc in no known
	 * mapping (a stack copy), at most once per notify_gap_ns. BPF
	 * updates map_count and notify_after_ns in place. */
	u32 map_count;
	u64 notify_after_ns; /* boot clock */
	u64 notify_gap_ns;
	/* More than OTELPROF_MAX_PROC_MAPPINGS executable mappings: all of
	 * them are in big_mappings[big_base .. big_base + big_n) (sorted by
	 * start) and n is 0. */
	u32 big_base;
	u32 big_n;
	struct otelprof_bpf_mapping m[OTELPROF_MAX_PROC_MAPPINGS];
};

/*
 * Interpreters whose frames BPF walks after the native walk (a step of
 * its own, so other runtimes can plug in beside it). Userspace finds the
 * interpreter in a process and stores where its state lives; BPF copies
 * the thread's frame chain into the sample; userspace splices it into the
 * native stack where the interpreter's evaluation loop ran.
 */
#define OTELPROF_MAX_INTERP_FRAMES 128
/* Where a step-mode runtime's noted pairs wait during the walk: the last
 * 2 * OTELPROF_MAX_INTERP_FRAMES of the user words, which the native
 * frames never reach (the sample's own words, not a per-CPU map of
 * 2 KiB a CPU). */
#define OTELPROF_NOTED_WORDS                                                   \
	(OTELPROF_USTACK_WORDS - 2 * OTELPROF_MAX_INTERP_FRAMES)
_Static_assert(OTELPROF_MAX_USER_FRAMES <= OTELPROF_NOTED_WORDS,
	       "native frames would overwrite the noted runtime frames");

/*
 * Runtimes whose frames are walked in the kernel, each by its own BPF
 * program (ebpf/runtimes/NAME/), loaded when the first process of that
 * runtime is found and put into walk_progs at OTELPROF_PROG_RUNTIME +
 * its id. Ids are slots, not wire values: append.
 */
enum otelprof_runtime {
	OTELPROF_RT_NONE = 0,
	OTELPROF_RT_CPYTHON = 1,
	OTELPROF_RT_HOTSPOT = 2,
	OTELPROF_RT_V8 = 3,
	OTELPROF_RT_RUBY = 4,
	OTELPROF_RT_PHP = 5,
	OTELPROF_RT_PERL = 6,
	OTELPROF_RT_MAX = 8,
};

/* Slots of walk_progs, the programs a sample's walk tail-calls. */
enum otelprof_prog_slot {
	OTELPROF_PROG_WALK = 0,	   /* the native walk, OTELPROF_WALK_CHUNK
				      frames at a time (kernels without
				      bpf_loop) */
	OTELPROF_PROG_RESUME = 1,  /* the native walk, resumed after a
				      runtime's frames */
	OTELPROF_PROG_FINISH = 2,  /* thread context and out to the ring
				      buffer, after a runtime's walker */
	OTELPROF_PROG_RUNTIME = 4, /* + enum otelprof_runtime */
	OTELPROF_PROG_SLOTS = OTELPROF_PROG_RUNTIME + OTELPROF_RT_MAX,
};

/* How a runtime's program joins a sample's walk. */
enum otelprof_runtime_mode {
	/* Its frames are on the native stack without CFI (HotSpot): the
	 * native walk hands it each such frame and resumes after them. */
	OTELPROF_RT_MODE_STEP = 1,
	/* It keeps its own frame chain (CPython): its program runs after the
	 * native walk and appends its frames. */
	OTELPROF_RT_MODE_AFTER = 2,
};
/* In a step runtime's runtime_procs mode: its code is also in files,
 * without CFI rows (V8's builtins, embedded in node): the native walk
 * hands it those frames too. */
#define OTELPROF_RT_F_FILE_CODE 0x80
/* ... and its native frames are stepped by their frame pointer while
 * their file's table is still being built (node keeps frame pointers;
 * its table, ~2M rows, takes seconds to build on a busy host) */
#define OTELPROF_RT_F_PENDING_FP 0x40
/* In an after runtime's runtime_procs mode: its JIT code runs in frames
 * without CFI (PHP's opcache JIT, inside the VM's own frame): the native
 * walk hands it frames at pcs without a table too, and it steps them. */
#define OTELPROF_RT_F_JIT_STEP 0x20
#define OTELPROF_RT_FLAGS                                                      \
	(OTELPROF_RT_F_FILE_CODE | OTELPROF_RT_F_PENDING_FP |                  \
	 OTELPROF_RT_F_JIT_STEP)

/* Per process of a runtime (runtime_procs, keyed by tgid): written by
 * userspace once the runtime's program is in walk_progs and its own
 * per-process entry is in place. */
struct otelprof_runtime_proc {
	u8 runtime; /* enum otelprof_runtime */
	u8 mode;    /* enum otelprof_runtime_mode | OTELPROF_RT_F_* */
	u8 copy_kb; /* stack copy size for this process (its frames need the
		       rest of the sample), 0: the whole copy */
	u8 pad[5];
};

enum otelprof_interp_kind {
	OTELPROF_INTERP_NONE = 0,
	OTELPROF_INTERP_CPYTHON = 1,
	OTELPROF_INTERP_HOTSPOT = 2, /* frames: otelprof_jvm_proc below */
};

/* How a CPython version marks the frames one evaluation-loop call runs. */
enum otelprof_cpython_frames {
	OTELPROF_CPY_FRAME_OBJECTS = 0, /* 3.9, 3.10: one C call per frame */
	OTELPROF_CPY_IS_ENTRY = 1,	/* 3.11: bool is_entry on the first */
	OTELPROF_CPY_OWNER = 2,		/* 3.12+: a C-stack-owned shim frame
					   (owner 3) below them */
};

#define OTELPROF_OFF_NONE 0xffff

struct otelprof_interp_proc {
	u8 kind;		  /* enum otelprof_interp_kind */
	u8 frames;		  /* enum otelprof_cpython_frames */
	u16 runtime_interp_head;  /* _PyRuntime.interpreters.head */
	u16 interp_threads_head;  /* PyInterpreterState -> first tstate */
	u16 tstate_next;	  /* PyThreadState.next */
	u16 tstate_thread_id;	  /* PyThreadState.thread_id (pthread_self:
				     the thread pointer on x86_64 glibc) */
	u16 tstate_frame;	  /* frame, cframe or current_frame */
	u16 cframe_current_frame; /* OTELPROF_OFF_NONE: tstate_frame is the
				     frame */
	u16 frame_previous;
	u16 frame_code;
	u16 frame_instr; /* f_lasti (int), prev_instr or instr_ptr */
	u16 frame_owner; /* is_entry or owner byte; OTELPROF_OFF_NONE */
	/* arm64: thread_id (pthread_self) is the thread pointer minus this,
	 * glibc's sizeof(struct pthread) (TLS variant I); unused on x86_64,
	 * where it is the thread pointer */
	u16 thread_self_below_tp;
	u16 pad[4];
	u64 runtime; /* runtime address of _PyRuntime */
};

/* In an interpreter frame's code word: the outermost frame of its
 * evaluation-loop call (the native eval frame below it ran it). */
#define OTELPROF_INTERP_F_LAST (1ull << 63)

/*
 * A HotSpot JVM, for the walk through its code cache (userspace reads it
 * from the JVM's VMStructs). A pc in the interpreter's code is an
 * interpreted frame (rbp-based, its Method and bcp in the frame); a pc
 * in another blob of a code heap is compiled code (or a stub) whose
 * frame is frame_size words; the blob is found from the heap's segment
 * map.
 */
#define OTELPROF_JVM_HEAPS 4
struct otelprof_jvm_heap {
	u64 low, high; /* reserved code range */
	u64 segmap;    /* one byte per segment */
	u32 log2_segment;
	u32 pad;
};

struct otelprof_jvm_proc {
	u64 interp_low, interp_high;
	struct otelprof_jvm_heap heaps[OTELPROF_JVM_HEAPS];
	u32 nheaps;
	u16 blob_offset;    /* sizeof(HeapBlock): blob = block + this */
	u16 frame_size_off; /* CodeBlob::_frame_size (int, words) */
	s8 interp_method;   /* interpreter frame slots, words from rbp */
	s8 interp_bcp;
	s8 interp_sender_sp;
	u8 pad[5];
};

/*
 * JVM frames follow the native ones as n_interp pairs {word0, word1}
 * (interp_kind OTELPROF_INTERP_HOTSPOT), in walk order. word0: the native
 * frame's index << OTELPROF_JVM_INDEX_SHIFT | a pointer; with
 * OTELPROF_JVM_F_INTERP an interpreted frame (Method*, word1 = bcp), else
 * compiled code (CodeBlob*, word1 = pc).
 */
#define OTELPROF_JVM_F_INTERP	 (1ull << 63)
#define OTELPROF_JVM_INDEX_SHIFT 48
#define OTELPROF_JVM_PTR_MASK	 ((1ull << OTELPROF_JVM_INDEX_SHIFT) - 1)
/* The bits of word0 above the index a runtime may use as flags (the
 * index, a native frame's, is far below 1 << 14). */
#define OTELPROF_RT_WORD0_FLAGS (3ull << 62)
#define OTELPROF_RT_INDEX_MAX	0x3fff

/*
 * A V8 isolate's process (Node.js), for the walk through V8's frames
 * (userspace reads the frame layout from the binary's v8dbg_* symbols).
 * Its code: the embedded builtins (in the binary, and the copy V8 may
 * remap next to its JIT code) and its JIT code (runs of anonymous
 * executable mappings with no other code between them). Every V8 frame
 * keeps rbp: the slot at fp + off_fp_context holds a Smi frame-type
 * marker (entry, exit, stub, ... frames: no JavaScript) or the context
 * of a JavaScript frame, whose JSFunction is at fp + off_fp_function.
 */
#define OTELPROF_V8_RANGES 8
struct otelprof_v8_proc {
	u64 low[OTELPROF_V8_RANGES], high[OTELPROF_V8_RANGES];
	u32 nranges;
	u32 nbuiltin; /* ranges [0, nbuiltin) hold builtins (the
			 interpreter's among them) */
	s8 off_fp_context, off_fp_function, off_fp_bytecode_offset;
	u8 smi_tag_mask, smi_tag;
	u8 heap_tag_mask, heap_tag;
	s8 off_fp_bytecode_array; /* 0: none */
	/* Words an entry frame (JSEntry: EntryFrame, ConstructEntryFrame,
	 * their frame markers below) saved above its frame record, which
	 * the caller's sp lies beyond: 0 on x86_64 (rbp is pushed first),
	 * 18 on aarch64 (x19-x28 and d8-d15 are pushed before {x29, x30}). */
	u8 entry_saved_words;
	u8 entry_marker, construct_entry_marker;
	u8 pad[4];
};

/*
 * V8 frames follow the native ones as pairs {word0, word1} (interp_kind
 * OTELPROF_RT_V8), the JVM's encoding: word0 the native frame's index <<
 * OTELPROF_JVM_INDEX_SHIFT | the tagged JSFunction; with
 * OTELPROF_V8_F_BUILTIN_PC the frame's pc was in builtins (interpreted,
 * or a builtin): word1 the raw bytecode-offset slot (when a 64-bit Smi,
 * its low half the low half of the frame's BytecodeArray slot), else
 * the pc.
 */
#define OTELPROF_V8_F_BUILTIN_PC (1ull << 63)
/* The innermost frame's pc was in a builtin without a frame of its own,
 * called from baseline or optimized code: word1 the return address into
 * that code (the first word found on the stack, or aarch64's link
 * register, that is in V8's JIT code), taken as a caller's pc. */
#define OTELPROF_V8_F_RETURN_PC (1ull << 62)

/* Off-CPU: threads switched out and not yet back, at most (the
 * pending map's size; a switch-out beyond it is not recorded, counted). */
#define OTELPROF_OFFCPU_PENDING 16384

/* A thread switched back in after a recorded switch-out: hdr is the
 * thread's (ktime_boot_ns: the switch-in), start_ns its switch-out. */
struct otelprof_offcpu_end {
	struct otelprof_event_header hdr;
	u64 start_ns;
};

#define OTELPROF_FILENAME_LEN 256

struct otelprof_task_event {
	struct otelprof_event_header hdr;
	char filename[OTELPROF_FILENAME_LEN]; /* exec: the path executed */
	u64 addr, len; /* MAPS_CHANGED: addr = mm->map_count; FORK: addr =
			  the parent's tgid */
};

#endif /* OTELPROF_PROFILER_TYPES_H */
