// SPDX-License-Identifier: Apache-2.0
/*
 * OTLP encoding throughput: feed N samples drawn from a realistic mix (100
 * processes, 5000 distinct stacks of 8-40 frames, 1000 functions, 8
 * threads per process) through the profile builder, then encode. Prints
 * samples per second for building + encoding and bytes per sample.
 *   bench_encode [SAMPLES]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "encode/otlp_encoder.h"
#include "encode/profile_builder.h"

#define NPROC	 100
#define NSTACKS	 5000
#define MAXDEPTH 40

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng = 88172645463325252ULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	static int32_t stacks[NSTACKS][MAXDEPTH];
	static int depth[NSTACKS];
	static char fnames[1000][32];
	struct profile_builder b;
	struct otlp_window w = {1, 0, 10101010, "bench", "0", "h"};
	uint32_t res[NPROC];
	double t0, t1, t2;
	uint8_t *buf;
	size_t len;

	if (n <= 0)
		return 2;
	if (pb_init(&b))
		return 1;
	for (int i = 0; i < 1000; i++)
		snprintf(fnames[i], sizeof(fnames[i]), "function_%d", i);
	for (int p = 0; p < NPROC; p++) {
		struct pb_resource_info ri;

		memset(&ri, 0, sizeof(ri));
		ri.key = (uint64_t)p + 1;
		ri.pid = (uint32_t)(1000 + p);
		ri.exe_name = "app";
		ri.exe_path = "/usr/bin/app";
		ri.container_id = "";
		ri.host_name = "host";

		if (pb_resource(&b, &ri, &res[p]))
			return 1;
	}
	t0 = now();
	/* Stacks are interned once per window by the symbolizer's cache in
	 * the real pipeline; here too. */
	for (int s = 0; s < NSTACKS; s++) {
		int32_t locs[MAXDEPTH];

		depth[s] = 8 + (int)(next() % (MAXDEPTH - 8));
		for (int d = 0; d < depth[s]; d++) {
			struct frame f;
			uint64_t fn = next() % 1000;

			memset(&f, 0, sizeof(f));
			f.kind = d < 3 && (s & 1) ? FRAME_KERNEL : FRAME_NATIVE;
			f.address = 0x1000 + fn * 64 + (next() % 64);
			f.function = fnames[fn];
			f.mapping_file = "/usr/lib/libapp.so";
			f.map_start = 0x7f0000000000;
			f.map_limit = 0x7f0000100000;
			f.build_id = "0123456789abcdef0123456789abcdef01234567";
			locs[d] = pb_location(&b, &f);
			if (locs[d] < 0)
				return 1;
		}
		memcpy(stacks[s], locs, sizeof(locs));
	}
	for (long i = 0; i < n; i++) {
		int s = (int)(next() % NSTACKS);
		int p = (int)(next() % NPROC);
		uint32_t tid = 1000 + (uint32_t)p * 10 + (uint32_t)(next() % 8);
		int32_t st = pb_stack(&b, stacks[s], (size_t)depth[s]);

		if (st < 0 || pb_add_sample(&b, res[p], st, tid, "worker",
					    (uint32_t)(next() % 2), 0, NULL, 0,
					    1000000000ull + (uint64_t)i * 1000))
			return 1;
	}
	t1 = now();
	w.end_unix_ns = 1000000000ull + (uint64_t)n * 1000 + 1;
	if (otlp_encode(&b, &w, &buf, &len))
		return 1;
	t2 = now();
	printf("samples %ld: build %.0f ms (%.2f M samples/s), encode %.0f ms "
	       "(%.2f M samples/s), together %.2f M samples/s, %zu bytes "
	       "(%.1f bytes/sample), builder memory %.1f MB\n",
	       n, (t1 - t0) * 1e3, (double)n / (t1 - t0) / 1e6, (t2 - t1) * 1e3,
	       (double)n / (t2 - t1) / 1e6, (double)n / (t2 - t0) / 1e6, len,
	       (double)len / (double)n, (double)pb_memory(&b) / 1048576.0);
	free(buf);
	pb_free(&b);
	return 0;
}
