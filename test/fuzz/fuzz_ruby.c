// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for what is read from a Ruby process's memory, through
 * the reader production uses (ruby_reader.c): the input is the process's
 * memory, mapped at MEM_BASE. The first bytes pick the version's layout,
 * the exported symbols (identification: version string, TLS code, the
 * tail jumps to rb_vm_exec, .eh_frame_hdr, rb_funcallv's end there) and
 * the {iseq, pc} pairs named
 * (iseq headers and bodies, String and Array objects, the succinct line
 * index; method entries and class paths), twice each with the clock moved past
 * the recheck interval.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "runtimes/ruby/ruby_reader.h"

#define MEM_BASE 0x10000ull

static const uint8_t *mem;
static size_t mem_len;

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < MEM_BASE || addr - MEM_BASE > mem_len ||
	    len > mem_len - (addr - MEM_BASE))
		return -EFAULT;
	memcpy(buf, mem + (addr - MEM_BASE), len);
	return 0;
}

static uint64_t word(const uint8_t *d, size_t k)
{
	uint16_t v;

	memcpy(&v, d + 2 * k, 2);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ruby_reader r = {.read_mem = fake_read};
	struct ruby_symbols s;
	struct ruby_process *rp;
	struct runtime_frame f;
	const size_t head = 48;

	if (size < head)
		return 0;
	mem = data;
	mem_len = size;
	rp = ruby_process_new(1, NULL);
	if (!rp)
		return 0;
	/* identification: the symbols point into the input */
	s = (struct ruby_symbols){
		.version = word(data, 0),
		.thread_current = word(data, 1),
		.current_ec = data[4] & 1 ? word(data, 3) : 0,
		.vm_exec = data[4] & 2 ? word(data, 4) : 0,
		.iseq_eval = word(data, 5),
		.iseq_eval_main = word(data, 6),
		.id2str = word(data, 23),
		/* rb_funcallv, bounded by the .eh_frame_hdr */
		.calls = {[1] = data[4] & 4 ? word(data, 2) : 0},
	};
	if (ruby_identify(&r, rp, &s, MEM_BASE)) {
		if (!rp->layout ||
		    (rp->walk.ec.kind == OTELPROF_TLS_DTPMOD_GOT &&
		     rp->walk.ec.offset >= (1u << 20)) ||
		    (rp->loop_lo && rp->loop_hi <= rp->loop_lo) ||
		    (rp->call_lo[1] && rp->call_hi[1] <= rp->call_lo[1]))
			__builtin_trap();
	}
	/* frames, on each layout */
	rp->layout = ruby_layout_find(3, data[7] & 1 ? 1 : 3);
	/* C functions' IDs: a symbol table in the input */
	if (!rp->sym_ids) {
		rp->sym_last_id = MEM_BASE + word(data, 22);
		rp->sym_ids = MEM_BASE + word(data, 23);
	}
	for (int round = 0; round < 2; round++)
		for (size_t k = 8; k < 16; k += 2) {
			uint64_t iseq = MEM_BASE + word(data, k);
			uint64_t pc = MEM_BASE + word(data, k + 1);

			/* a method entry pair before it (its class names it) */
			if (data[16 + k] & 1 &&
			    ruby_frame(&r, rp,
				       (MEM_BASE + word(data, k + 8)) |
					       OTELPROF_RUBY_ME_TAG,
				       iseq, 0, &f))
				__builtin_trap();

			/* a C function's frame, named from its method entry */
			if (data[16 + k] & 2 &&
			    ruby_frame(&r, rp, iseq | OTELPROF_RUBY_ME_TAG, 0,
				       (uint64_t)round * 2 * RUBY_RECHECK_NS,
				       &f) &&
			    (!f.name || strlen(f.name) > RUBY_NAME_MAX ||
			     f.file || f.line))
				__builtin_trap();

			if (ruby_frame(&r, rp, iseq, pc,
				       (uint64_t)round * 2 * RUBY_RECHECK_NS,
				       &f) &&
			    (!f.name || strlen(f.name) > RUBY_NAME_MAX ||
			     (f.file && strlen(f.file) > RUBY_NAME_MAX)))
				__builtin_trap();
		}
	ruby_process_free(rp);
	{
		/* the pure decoders on the raw input */
		uint64_t v[16], got;
		unsigned major, minor;

		(void)ruby_tail_jumps(data, size, MEM_BASE, v, 16);
		(void)ruby_tls_from_code(data, size, MEM_BASE, &got);
		(void)ruby_symbols_from_code(data, size, MEM_BASE, &got, &v[0]);
		(void)ruby_tail_jumps_a64(data, size, MEM_BASE, v, 16);
		(void)ruby_symbols_from_code_a64(data, size, MEM_BASE, &got,
						 &v[0]);
		(void)ruby_version_parse((const char *)data, size, &major,
					 &minor);
		(void)ruby_function_end(data, size, MEM_BASE,
					MEM_BASE + data[0], &got);
	}
	return 0;
}
