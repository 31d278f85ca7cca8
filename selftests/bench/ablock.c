// SPDX-License-Identifier: GPL-2.0
/*
 * ablock: a program linked with librseq-slice itself (statically: the
 * interposer cannot reach it), for rseq-slice ab's test in the guest.
 * THREADS threads (default 4) each take one test-and-set spinlock
 * SECTIONS times (default 2000), holding it CS_NS (default 20000 ns,
 * busy), each section between rseq_slice_cs_begin() and
 * rseq_slice_cs_end(); every thread asks for RSEQ_SLICE_BACKEND_AUTO, so
 * RSEQ_SLICE_BACKEND=none in the environment (rseq-slice ab's off arm)
 * gives it none. Prints the backend, the section ends and "ops/s: N".
 *
 *   ablock [-t THREADS] [-n SECTIONS] [-c CS_NS]
 *
 * Exit status 0, or 1 on bad usage or when a thread cannot start.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <rseq_slice.h>
#include "../clock.h"

static volatile unsigned int lock_word;
static unsigned long sections = 2000;
static uint64_t cs_ns = 20000;
static int backend_seen = -1;

struct worker {
	pthread_t th;
	unsigned long ends[4];
	int backend;
} __attribute__((aligned(64)));

static void lock_acquire(void)
{
	unsigned int spins = 0;

	while (__atomic_exchange_n(&lock_word, 1, __ATOMIC_ACQUIRE)) {
		/* The holder may be off its CPU: give it a chance. */
		if (++spins % 256 == 0)
			sched_yield();
		else
			rseq_slice_cpu_relax();
	}
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	unsigned long i;
	int r;

	w->backend = rseq_slice_init(RSEQ_SLICE_BACKEND_AUTO);
	for (i = 0; i < sections; i++) {
		rseq_slice_cs_begin();
		lock_acquire();
		rseq_slice_busy_wait_ns(cs_ns);
		__atomic_store_n(&lock_word, 0, __ATOMIC_RELEASE);
		r = rseq_slice_cs_end();
		if (r >= 0 && r < 4)
			w->ends[r]++;
	}
	rseq_slice_fini();
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long ends[4] = { 0 };
	struct timespec t0, t1;
	struct worker *w;
	int threads = 4, opt, i, j;
	double secs;

	while ((opt = getopt(argc, argv, "t:n:c:")) != -1) {
		switch (opt) {
		case 't': threads = atoi(optarg); break;
		case 'n': sections = strtoul(optarg, NULL, 0); break;
		case 'c': cs_ns = strtoull(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: ablock [-t THREADS] [-n SECTIONS] [-c CS_NS]\n");
			return 1;
		}
	}
	if (threads < 1 || threads > 256 || !sections) {
		fprintf(stderr, "ablock: bad -t or -n\n");
		return 1;
	}
	rseq_slice_tsc_calibrate(20000000);
	w = calloc(threads, sizeof(*w));
	if (!w)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < threads; i++)
		if (pthread_create(&w[i].th, NULL, worker_fn, &w[i])) {
			perror("ablock: pthread_create");
			return 1;
		}
	for (i = 0; i < threads; i++) {
		pthread_join(w[i].th, NULL);
		for (j = 0; j < 4; j++)
			ends[j] += w[i].ends[j];
		if (backend_seen < 0 || w[i].backend < 0)
			backend_seen = w[i].backend;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("ablock: backend=%s threads=%d sections=%lu success=%lu scheduled=%lu yielded=%lu raced=%lu\n",
	       backend_seen < 0 ? "error" : rseq_slice_backend_name(backend_seen), threads,
	       sections * threads, ends[0], ends[1], ends[2], ends[3]);
	printf("ops/s: %.1f\n", sections * threads / secs);
	free(w);
	return 0;
}
