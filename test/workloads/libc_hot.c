// SPDX-License-Identifier: Apache-2.0
/*
 * Time inside libc (Debian's, built without frame pointers): qsort calls
 * back into compare_ints from libc's internal sort functions, and large
 * memset/memcpy calls run in libc's string routines. Usage: libc_hot SECONDS
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
#define N	 200000

static int data[N];
static char big_a[1 << 22], big_b[1 << 22];

NOINLINE int compare_ints(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

NOINLINE void sort_round(unsigned seed)
{
	for (int i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		data[i] = (int)(seed >> 8);
	}
	qsort(data, N, sizeof(data[0]), compare_ints);
}

NOINLINE void copy_round(void)
{
	for (int i = 0; i < 8; i++) {
		memset(big_a, i, sizeof(big_a));
		memcpy(big_b, big_a, sizeof(big_a));
	}
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	struct timespec t0, t;
	unsigned seed = 1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		sort_round(seed++);
		copy_round();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) +
			 (double)(t.tv_nsec - t0.tv_nsec) / 1e9 <
		 seconds);
	return big_b[7] == 42;
}
