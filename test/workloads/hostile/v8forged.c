// SPDX-License-Identifier: Apache-2.0
/*
 * node_forged MODE SECONDS: a process that passes for V8 and lies. Its
 * name starts with "node", it exports the v8dbg_* constants V8 publishes
 * for postmortem tools, and it has Builtins_* code laid out as V8's
 * frames are (context at fp - 8, JSFunction at fp - 16).
 *
 *   absurd  the constants are absurd (a 12-byte tagged word, frame slots
 *           1 GiB from fp, fields beyond any header): the profiler must
 *           count the process as unknown and keep its native stacks.
 *   lies    a plausible layout, and the JSFunction in the frame points into
 *           a heap that lies, a new lie at new addresses every call:
 *           strings that are their own halves or parents, maps that are
 *           their own maps, lengths of 2^31 - 1 ending at a guard page, a
 *           source of 4 Mi newlines, ScopeInfos with 2^30 locals, chains
 *           of 64 thin strings, pointers to nowhere, and a region another
 *           thread rewrites with random words all the time.
 *
 * The main thread spends its time in spin_work (native, with CFI), called
 * from Builtins_ForgedFrame (no CFI: V8's frame layout), called from
 * main. Prints "ready" once the heap is built.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* ---- the constants (V8's postmortem metadata), in .data: main may
 * rewrite them before anything reads them ---- */
#define V8DBG(name, v) __attribute__((used)) int v8dbg_##name = (v)
V8DBG(TaggedSize, 8);
V8DBG(SmiTag, 0);
V8DBG(SmiTagMask, 1);
V8DBG(SmiShiftSize, 31);
V8DBG(SmiValueShift, 32);
V8DBG(HeapObjectTag, 1);
V8DBG(HeapObjectTagMask, 3);
V8DBG(off_fp_context_or_frame_type, -8);
V8DBG(off_fp_function, -16);
V8DBG(off_fp_bytecode_offset, -24);
V8DBG(class_HeapObject__map__Map, 0);
V8DBG(class_Map__instance_type__uint16_t, 12);
V8DBG(FirstNonstringType, 128);
V8DBG(StringRepresentationMask, 7);
V8DBG(StringEncodingMask, 8);
V8DBG(SeqStringTag, 0);
V8DBG(ConsStringTag, 1);
V8DBG(ExternalStringTag, 2);
V8DBG(SlicedStringTag, 3);
V8DBG(ThinStringTag, 5);
V8DBG(OneByteStringTag, 8);
V8DBG(class_ExternalString__resource__Object, 16);
V8DBG(class_String__length__int32_t, 12);
V8DBG(class_SeqOneByteString__chars__char, 16);
V8DBG(class_SeqTwoByteString__chars__char, 16);
V8DBG(class_ConsString__first__String, 16);
V8DBG(class_ConsString__second__String, 24);
V8DBG(class_ThinString__actual__String, 16);
V8DBG(class_SlicedString__parent__String, 16);
V8DBG(class_SlicedString__offset__SMI, 24);
V8DBG(class_JSFunction__shared__SharedFunctionInfo, 24);
V8DBG(class_SharedFunctionInfo__name_or_scope_info__Object, 8);
V8DBG(class_SharedFunctionInfo__script_or_debug_info__Object, 16);
V8DBG(class_Script__name__Object, 16);
V8DBG(class_Script__source__Object, 8);
V8DBG(type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE, 200);
V8DBG(type_Script__SCRIPT_TYPE, 201);
V8DBG(type_ScopeInfo__SCOPE_INFO_TYPE, 202);
V8DBG(scopeinfo_idx_ncontextlocals, 1);
V8DBG(scopeinfo_idx_first_vars, 4);

/* Instance types of this layout: strings below 128 (representation
 * bits 0-2, one-byte bit 3). */
enum {
	T_SEQ2 = 0,
	T_CONS2 = 1,
	T_EXT2 = 2,
	T_SEQ1 = 8,
	T_CONS1 = 9,
	T_EXT1 = 10,
	T_SLICED1 = 11,
	T_THIN1 = 13,
	T_SFI = 200,
	T_SCRIPT = 201,
	T_SCOPE = 202,
	T_META = 255,
};

#define TAG(p) ((uint64_t)(uintptr_t)(p) | 1)
#define SMI(v) ((uint64_t)(int64_t)(v) << 32)

/* ---- V8's frame: Builtins_ForgedFrame(context, fn, step) pushes the
 * context and the JSFunction below its frame pointer, then calls
 * step(fp) until it returns 0. Assembly without CFI, as V8's builtins
 * are (the node binary's .eh_frame does not cover them). ---- */
int Builtins_ForgedFrame(uint64_t context, uint64_t fn,
			 int (*step)(uint64_t *));
#if defined(__x86_64__)
__asm__(".text\n"
	".globl Builtins_ForgedFrame\n"
	".type Builtins_ForgedFrame,@function\n"
	"Builtins_ForgedFrame:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	push %rdi\n" /* fp - 8: context */
	"	push %rsi\n" /* fp - 16: JSFunction */
	"	push %rbx\n"
	"	push %r12\n"
	"	mov %rdx, %rbx\n"
	"1:	mov %rbp, %rdi\n"
	"	call *%rbx\n"
	"	test %eax, %eax\n"
	"	jnz 1b\n"
	"	pop %r12\n"
	"	pop %rbx\n"
	"	mov %rbp, %rsp\n"
	"	pop %rbp\n"
	"	ret\n"
	".size Builtins_ForgedFrame, .-Builtins_ForgedFrame\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl Builtins_ForgedFrame\n"
	".type Builtins_ForgedFrame,%function\n"
	"Builtins_ForgedFrame:\n"
	"	stp x29, x30, [sp, #-16]!\n"
	"	mov x29, sp\n"
	"	stp x1, x0, [sp, #-16]!\n" /* fp - 16: JSFunction, fp - 8:
					      context */
	"	stp x19, x20, [sp, #-16]!\n"
	"	mov x19, x2\n"
	"1:	mov x0, x29\n"
	"	blr x19\n"
	"	cbnz w0, 1b\n"
	"	ldp x19, x20, [sp], #16\n"
	"	mov sp, x29\n"
	"	ldp x29, x30, [sp], #16\n"
	"	ret\n"
	".size Builtins_ForgedFrame, .-Builtins_ForgedFrame\n");
#else
#error "x86_64 or aarch64"
#endif

/* ---- the heap ---- */
#define SLOTS	   64
#define SLOT_WORDS 512
static uint64_t *arena;	  /* SLOTS slots of SLOT_WORDS words */
static uint64_t *maps;	  /* one map per instance type */
static uint64_t *noise;	  /* rewritten by the noise thread */
static uint8_t *newlines; /* 4 Mi '\n' after a string header */
static uint8_t *edge;	  /* a string header 4 KiB before a guard */
#define NOISE_WORDS 4096
#define NEWLINES    (4u << 20)
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t map_of(unsigned type)
{
	return TAG(maps + 4 * type);
}

/* A heap object of n words in slot memory: its map word set. */
struct bump {
	uint64_t *p, *end;
};

static uint64_t *obj(struct bump *b, unsigned type, unsigned words)
{
	uint64_t *o = b->p;

	if (b->p + words > b->end)
		abort();
	b->p += words;
	memset(o, 0, words * 8);
	o[0] = map_of(type);
	return o;
}

static void set_len(uint64_t *o, int32_t len)
{
	memcpy((char *)o + 12, &len, 4);
}

static uint64_t seq1(struct bump *b, const char *s, int32_t len)
{
	uint64_t *o = obj(b, T_SEQ1, 2 + (unsigned)(strlen(s) + 8) / 8);

	set_len(o, len);
	memcpy(o + 2, s, strlen(s));
	return TAG(o);
}

/* One lie, built in slot memory: the tagged JSFunction it starts at. */
static uint64_t build(unsigned lie, struct bump *b)
{
	uint64_t *fn = obj(b, T_META, 4), *sfi = obj(b, T_SFI, 3);
	uint64_t *script = obj(b, T_SCRIPT, 3), *o, *p;
	uint64_t name = 0, file = 0, source = 0;

	fn[3] = TAG(sfi);
	sfi[2] = TAG(script);
	switch (lie % 10) {
	case 0: /* a cons string whose halves are itself */
		o = obj(b, T_CONS1, 4);
		set_len(o, 1000);
		o[2] = o[3] = TAG(o);
		name = file = TAG(o);
		source = TAG(o);
		break;
	case 1: /* 2^31 - 1 characters, 4 KiB of them readable */
		name = seq1(b, "edge", 4);
		file = TAG(edge);
		source = TAG(edge);
		break;
	case 2: /* a source of 4 Mi lines */
		name = seq1(b, "newlines", 8);
		file = seq1(b, "newlines.js", 11);
		source = TAG(newlines);
		break;
	case 3: /* a sliced string its own parent, at a huge offset */
		o = obj(b, T_SLICED1, 4);
		set_len(o, 100);
		o[2] = TAG(o);
		o[3] = SMI(0x7ffffff0);
		name = file = source = TAG(o);
		break;
	case 4: /* 64 thin strings in a chain, the last one itself */
		p = obj(b, T_THIN1, 3);
		set_len(p, 5);
		p[2] = TAG(p);
		for (int k = 0; k < 63; k++) {
			o = obj(b, T_THIN1, 3);
			set_len(o, 5);
			o[2] = TAG(p);
			p = o;
		}
		name = file = source = TAG(p);
		break;
	case 5: /* a ScopeInfo claiming 2^30 locals, then a negative count */
		o = obj(b, T_SCOPE, 16);
		o[2] = SMI((lie / 10) & 1 ? -5 : 1 << 30);
		for (int k = 3; k < 16; k++)
			o[k] = TAG(o);
		sfi[1] = TAG(o);
		file = seq1(b, "scope.js", 8);
		source = file;
		break;
	case 6: /* a map that is its own map, with a string's type */
		o = obj(b, T_META, 4);
		o[0] = TAG(o);
		set_len(o, T_SEQ1);
		name = file = source = TAG(o);
		fn[0] = TAG(o);
		break;
	case 7: /* pointers to nowhere: unmapped, the kernel's, misaligned */
		fn[3] = (lie / 10) & 1 ? 0xffff880000000001ull
				       : 0x10000000001ull;
		sfi[1] = 0x7ffffffff001ull;
		break;
	case 8: /* external strings whose data is nowhere or the guard */
		o = obj(b, T_EXT1, 4);
		set_len(o, 0x7fffffff);
		o[2] = 0x1234;
		o[3] = (uint64_t)(uintptr_t)(edge + 4096);
		p = obj(b, T_EXT2, 4);
		set_len(p, 1 << 30);
		p[3] = 0xdead0000;
		name = TAG(o);
		file = TAG(p);
		source = TAG(o);
		break;
	default: /* the noise: words another thread keeps rewriting */
		return TAG(noise + 8 * (next_rand() % (NOISE_WORDS / 8 - 8)));
	}
	if (name && !sfi[1])
		sfi[1] = name;
	script[1] = source;
	script[2] = file;
	return TAG(fn);
}

static void *noise_thread(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg | 1;

	for (;;) {
		for (int k = 0; k < NOISE_WORDS; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			/* a third pointers into the noise itself, a third
			 * into the maps, a third anything */
			switch (x % 3) {
			case 0:
				noise[k] = TAG(noise + (x >> 8) % NOISE_WORDS);
				break;
			case 1:
				noise[k] = map_of((unsigned)(x >> 8) % 256);
				break;
			default:
				noise[k] = x;
			}
		}
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static volatile double sink;
static double end_at;
static unsigned lies;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* About a millisecond of work. */
__attribute__((noinline)) static void spin_work(void)
{
	double s = 0;

	for (int i = 0; i < 200000; i++)
		s += (double)i * 1.000001;
	sink = s;
}

/* Each call: work, then (lies) a new lie in the next slot in the frame's
 * JSFunction slot. */
static int step(uint64_t *fp)
{
	spin_work();
	if (lies) {
		unsigned k = lies++ % SLOTS;
		struct bump b = {arena + k * SLOT_WORDS,
				 arena + (k + 1) * SLOT_WORDS};

		fp[-2] = build(lies, &b);
	}
	return now() < end_at;
}

int main(int argc, char **argv)
{
	int absurd;
	pthread_t th;

	if (argc != 3) {
		fprintf(stderr, "usage: %s absurd|lies SECONDS\n", argv[0]);
		return 2;
	}
	absurd = !strcmp(argv[1], "absurd");
	if (absurd) {
		v8dbg_TaggedSize = 12;
		v8dbg_off_fp_context_or_frame_type = 1 << 30;
		v8dbg_class_HeapObject__map__Map = -(1 << 30);
		v8dbg_class_String__length__int32_t = 0x7fffffff;
		v8dbg_scopeinfo_idx_first_vars = -7;
	}
	arena = mmap(NULL, SLOTS * SLOT_WORDS * 8 + 256 * 32 + NOISE_WORDS * 8,
		     PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		     0);
	newlines = mmap(NULL, NEWLINES + 4096, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	edge = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (arena == MAP_FAILED || newlines == MAP_FAILED || edge == MAP_FAILED)
		return 1;
	maps = arena + SLOTS * SLOT_WORDS;
	noise = maps + 256 * 4;
	for (unsigned t = 0; t < 256; t++) {
		maps[4 * t] = map_of(T_META);
		memcpy((char *)(maps + 4 * t) + 12, &(uint16_t){(uint16_t)t},
		       2);
	}
	/* 4 Mi one-byte newlines after a 16-byte header */
	((uint64_t *)newlines)[0] = map_of(T_SEQ1);
	set_len((uint64_t *)newlines, NEWLINES);
	memset(newlines + 16, '\n', NEWLINES);
	((uint64_t *)edge)[0] = map_of(T_SEQ1);
	set_len((uint64_t *)edge, 0x7fffffff);
	memset(edge + 16, 'x', 4096 - 16);
	mprotect(edge + 4096, 4096, PROT_NONE);
	if (!absurd) {
		lies = 1;
		if (pthread_create(&th, NULL, noise_thread,
				   (void *)(uintptr_t)0x2545f4914f6cdd1dull))
			return 1;
	}
	end_at = now() + atof(argv[2]);
	printf("ready\n");
	fflush(stdout);
	/* the context: any heap object (not a Smi, which marks a typed
	 * frame) */
	Builtins_ForgedFrame(TAG(arena), absurd ? 0 : TAG(arena), step);
	return 0;
}
