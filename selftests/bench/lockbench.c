// SPDX-License-Identifier: GPL-2.0
/*
 * lockbench: more runnable threads than CPUs contend one user-space
 * spinlock (test-and-set or ticket); each critical section busy-waits a
 * fixed time. Prints one JSON object: throughput, lock-wait latency
 * percentiles and CDF, critical-section duration p99.9/max, and the share
 * of critical sections that took more than twice their nominal time
 * (the holder was interrupted or preempted).
 *
 *   lockbench [-a ARM] [-m none|module|upstream] [-l tas|ticket] [-t THREADS]
 *             [-c CS_NS] [-o THINK_NS] [-d SECS] [-n NOISE_THREADS]
 *
 * Time is read with rdtsc only, so nothing inside a critical section
 * enters the kernel (a system call there would end a grant).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include <string.h>
#include <unistd.h>

#include <rseq_slice.h>
#include "../clock.h"

#define MAX_SAMPLES	(1 << 20)

static volatile int stop;
static enum rseq_slice_backend mode = RSEQ_SLICE_BACKEND_NONE;
static bool ticket;
static uint64_t cs_ns = 5000;
static uint64_t think_ns = ~0ULL;	/* work outside the lock: default cs_ns */

static struct {
	volatile uint32_t word;		/* test-and-set */
	volatile uint32_t next, owner;	/* ticket */
} __attribute__((aligned(64))) lock;

struct worker {
	pthread_t th;
	uint32_t *wait, *hold;
	unsigned long n, sections, interrupted, yielded, scheduled, raced;
	int err;
} __attribute__((aligned(64)));


/* Acquire under REQUEST: the request covers the hold, not the waiting. */
static void lock_acquire(struct worker *w)
{
	if (ticket) {
		uint32_t me = __atomic_fetch_add(&lock.next, 1, __ATOMIC_ACQUIRE);

		while (__atomic_load_n(&lock.owner, __ATOMIC_ACQUIRE) != me)
			rseq_slice_cpu_relax();
		rseq_slice_cs_begin();
		return;
	}
	for (;;) {
		rseq_slice_cs_begin();
		if (!__atomic_exchange_n(&lock.word, 1, __ATOMIC_ACQUIRE))
			return;
		switch (rseq_slice_cs_end()) {
		case RSEQ_SLICE_END_YIELDED:
			w->yielded++;
			break;
		default:
			break;
		}
		while (__atomic_load_n(&lock.word, __ATOMIC_RELAXED))
			rseq_slice_cpu_relax();
	}
}

static void lock_release(struct worker *w)
{
	if (ticket)
		__atomic_store_n(&lock.owner, lock.owner + 1, __ATOMIC_RELEASE);
	else
		__atomic_store_n(&lock.word, 0, __ATOMIC_RELEASE);
	switch (rseq_slice_cs_end()) {
	case RSEQ_SLICE_END_YIELDED:
		w->yielded++;
		break;
	case RSEQ_SLICE_END_SCHEDULED:
		w->scheduled++;
		break;
	case RSEQ_SLICE_END_RACED:
		w->raced++;
		break;
	default:
		break;
	}
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	uint64_t cs_tsc = rseq_slice_ns_to_tsc(cs_ns);
	uint64_t think_tsc = rseq_slice_ns_to_tsc(think_ns);
	int ret = rseq_slice_init(mode);

	if (ret < 0) {
		w->err = ret;
		return NULL;
	}
	while (!stop) {
		uint64_t t0 = rseq_slice_rdtsc(), t1, t2;

		lock_acquire(w);
		t1 = rseq_slice_rdtsc();
		while (rseq_slice_rdtsc() - t1 < cs_tsc)
			;
		t2 = rseq_slice_rdtsc();
		lock_release(w);
		if (t2 - t1 > 2 * cs_tsc)
			w->interrupted++;
		if (w->n < MAX_SAMPLES) {
			w->wait[w->n] = (uint32_t)((t1 - t0) / rseq_slice_tsc_per_ns);
			w->hold[w->n] = (uint32_t)((t2 - t1) / rseq_slice_tsc_per_ns);
			w->n++;
		}
		w->sections++;
		t2 = rseq_slice_rdtsc();
		while (rseq_slice_rdtsc() - t2 < think_tsc)
			;
	}
	rseq_slice_fini();
	return NULL;
}

/* Noise: wake up every 50 us and run 2 us, as the seed's slice_test. */
static void *noise_fn(void *arg)
{
	struct timespec ts = { 0, 50000 };

	(void)arg;
	while (!stop) {
		rseq_slice_busy_wait_ns(2000);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static uint32_t pct(const uint32_t *v, size_t n, double p)
{
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);

	return n ? v[i < n ? i : n - 1] : 0;
}

int main(int argc, char **argv)
{
	const char *arm = "arm", *modename = "none";
	int nthreads = 4, nnoise = 0, i, opt;
	double secs = 3;
	unsigned long sections = 0, interrupted = 0, yielded = 0, scheduled = 0, raced = 0;
	struct worker *w;
	pthread_t *noise;
	uint32_t *wait, *hold;
	size_t n = 0;

	while ((opt = getopt(argc, argv, "a:m:l:t:c:o:d:n:")) != -1) {
		switch (opt) {
		case 'a': arm = optarg; break;
		case 'm':
			modename = optarg;
			if (rseq_slice_backend_parse(optarg, &mode) || mode == RSEQ_SLICE_BACKEND_AUTO)
				return 2;
			break;
		case 'l': ticket = !strcmp(optarg, "ticket"); break;
		case 't': nthreads = atoi(optarg); break;
		case 'c': cs_ns = strtoull(optarg, NULL, 10); break;
		case 'o': think_ns = strtoull(optarg, NULL, 10); break;
		case 'd': secs = atof(optarg); break;
		case 'n': nnoise = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: lockbench [-a ARM] [-m none|module|upstream] [-l tas|ticket] [-t N] [-c CS_NS] [-o THINK_NS] [-d SECS] [-n NOISE]\n");
			return 2;
		}
	}
	if (think_ns == ~0ULL)
		think_ns = cs_ns;
	rseq_slice_tsc_calibrate(200000000);
	w = calloc(nthreads, sizeof(*w));
	noise = calloc(nnoise + 1, sizeof(*noise));
	for (i = 0; i < nthreads; i++) {
		w[i].wait = malloc(MAX_SAMPLES * sizeof(uint32_t));
		w[i].hold = malloc(MAX_SAMPLES * sizeof(uint32_t));
		if (!w[i].wait || !w[i].hold)
			return 1;
		pthread_create(&w[i].th, NULL, worker_fn, &w[i]);
	}
	for (i = 0; i < nnoise; i++)
		pthread_create(&noise[i], NULL, noise_fn, NULL);
	{
		struct timespec ts = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };

		nanosleep(&ts, NULL);
	}
	stop = 1;
	for (i = 0; i < nnoise; i++)
		pthread_join(noise[i], NULL);
	for (i = 0; i < nthreads; i++) {
		pthread_join(w[i].th, NULL);
		if (w[i].err) {
			fprintf(stderr, "lockbench: enabling %s failed: %s\n", modename,
				strerror(-w[i].err));
			return 1;
		}
		n += w[i].n;
		sections += w[i].sections;
		interrupted += w[i].interrupted;
		yielded += w[i].yielded;
		scheduled += w[i].scheduled;
		raced += w[i].raced;
	}
	wait = malloc(n * sizeof(*wait) + 1);
	hold = malloc(n * sizeof(*hold) + 1);
	n = 0;
	for (i = 0; i < nthreads; i++) {
		memcpy(wait + n, w[i].wait, w[i].n * sizeof(*wait));
		memcpy(hold + n, w[i].hold, w[i].n * sizeof(*hold));
		n += w[i].n;
	}
	qsort(wait, n, sizeof(*wait), cmp_u32);
	qsort(hold, n, sizeof(*hold), cmp_u32);

	printf("{\"arm\":\"%s\",\"abi\":\"%s\",\"lock\":\"%s\",\"cs_ns\":%llu,\"threads\":%d,"
	       "\"noise\":%d,\"secs\":%g,\"sections\":%lu,\"throughput\":%.0f,"
	       "\"wait_p50\":%u,\"wait_p99\":%u,\"wait_p999\":%u,\"wait_max\":%u,"
	       "\"hold_p50\":%u,\"hold_p999\":%u,\"hold_max\":%u,\"interrupted\":%.5f,"
	       "\"yielded\":%lu,\"scheduled\":%lu,\"raced\":%lu,\"wait_cdf\":[",
	       arm, modename, ticket ? "ticket" : "tas", (unsigned long long)cs_ns, nthreads,
	       nnoise, secs, sections, sections / secs,
	       pct(wait, n, 0.5), pct(wait, n, 0.99), pct(wait, n, 0.999), n ? wait[n - 1] : 0,
	       pct(hold, n, 0.5), pct(hold, n, 0.999), n ? hold[n - 1] : 0,
	       sections ? (double)interrupted / sections : 0, yielded, scheduled, raced);
	/* 200 points from p0 to p99.99, denser in the tail, then the max. */
	for (i = 0; i < 200; i++) {
		double p = 1.0 - pow(10.0, -4.0 * i / 200.0);

		printf("%s[%u,%.6f]", i ? "," : "", pct(wait, n, p), p);
	}
	printf(",[%u,1]]}\n", n ? wait[n - 1] : 0);
	return 0;
}
