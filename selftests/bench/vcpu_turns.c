// SPDX-License-Identifier: GPL-2.0
/*
 * vcpu_turns: how long each CPU's running thread stands still, as the
 * guest's own clock sees it. One thread per CPU (or one on CPU 0 with
 * -1) reads CLOCK_MONOTONIC in a loop for SECS seconds (default 2) and
 * counts the gaps between two reads longer than 10 us: time when the
 * thread did not run, because the kernel ran something else on its CPU
 * or the emulator ran another vCPU. Under scripts/vm --icount (guest
 * time from the instruction count) a loop like this one reads the clock
 * every few hundred nanoseconds, so a gap is a stall, not the loop.
 *
 *   vcpu_turns [-1] [-t SECS]
 *
 * Prints per thread: its CPU, reads, gaps over 10 us and over 1 ms, the
 * share of time in gaps over 10 us, and the longest gap (docs/benchmarks.md,
 * "Which clock"). Exit status 0, or 1 on bad usage or when a thread
 * cannot start.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct turns {
	pthread_t th;
	int cpu;
	uint64_t reads, gaps, long_gaps, gap_ns, max_ns;
};

static uint64_t run_ns = 2000000000ull;

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void *turns_fn(void *arg)
{
	struct turns *w = arg;
	uint64_t start, last, t;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		perror("vcpu_turns: sched_setaffinity");
	start = now_ns();
	last = start;
	do {
		uint64_t gap;

		t = now_ns();
		gap = t - last;
		w->reads++;
		if (gap > 10000) {
			w->gaps++;
			w->gap_ns += gap;
			if (gap > 1000000)
				w->long_gaps++;
		}
		if (gap > w->max_ns)
			w->max_ns = gap;
		last = t;
	} while (t - start < run_ns);
	return NULL;
}

int main(int argc, char **argv)
{
	struct turns *w;
	int opt, i, n = (int)sysconf(_SC_NPROCESSORS_ONLN);

	while ((opt = getopt(argc, argv, "1t:h")) != -1) {
		switch (opt) {
		case '1':
			n = 1;
			break;
		case 't':
			run_ns = (uint64_t)(atof(optarg) * 1e9);
			break;
		default:
			fprintf(opt == 'h' ? stdout : stderr, "usage: vcpu_turns [-1] [-t SECS]\n"
				"  one thread per CPU (-1: one, on CPU 0) reads the clock for SECS\n"
				"  (default 2) and reports the gaps over 10 us between two reads\n");
			return opt == 'h' ? 0 : 1;
		}
	}
	if (n < 1 || !run_ns) {
		fprintf(stderr, "vcpu_turns: nothing to run\n");
		return 1;
	}
	w = calloc((size_t)n, sizeof(*w));
	if (!w)
		return 1;
	for (i = 0; i < n; i++) {
		w[i].cpu = i;
		if (pthread_create(&w[i].th, NULL, turns_fn, &w[i])) {
			fprintf(stderr, "vcpu_turns: cannot start thread %d\n", i);
			return 1;
		}
	}
	for (i = 0; i < n; i++) {
		pthread_join(w[i].th, NULL);
		printf("cpu %d: %llu reads, %llu gaps > 10 us (%llu > 1 ms), %.1f%% of the time in them, longest %.1f us\n",
		       w[i].cpu, (unsigned long long)w[i].reads, (unsigned long long)w[i].gaps,
		       (unsigned long long)w[i].long_gaps,
		       100.0 * (double)w[i].gap_ns / (double)run_ns, (double)w[i].max_ns / 1e3);
	}
	free(w);
	return 0;
}
