// SPDX-License-Identifier: GPL-2.0
/*
 * ipbench: what the lock interposer (lib/preload/) costs a program, a
 * benchmark, not a test (scripts/bench --interposer runs it). Dynamically
 * linked, as the programs an interposer is for are: run it bare, or with
 * LD_PRELOAD=librseq_slice_preload.so and the interposer's environment.
 *
 *   ipbench insns NAME [PAIRS]      PAIRS (default 200) samples named NAME
 *                                   for scripts/vm --count-insns, each one
 *                                   uncontended pthread_mutex_lock/unlock
 *                                   pair, after a warm-up; pinned to CPU 0
 *   ipbench lib-insns NAME [PAIRS]  the same for librseq-slice's own
 *                                   rseq_slice_cs_begin()/end() pair, after
 *                                   rseq_slice_init(AUTO) (which honours
 *                                   RSEQ_SLICE_BACKEND)
 *   ipbench time [PAIRS]            ns per uncontended pair over PAIRS
 *                                   (default 5000000): "ns N"
 *   ipbench contend THREADS PAIRS   THREADS threads, PAIRS pairs each, on
 *                                   one mutex (a counter inside): "ns N"
 *                                   for the whole run
 *   ipbench ratio [BURSTS [PAIRS]]  on a busy host: BURSTS (default 41)
 *                                   alternating bursts of PAIRS (default
 *                                   200000) pairs through the C library's
 *                                   own functions (dlsym of libc.so.6:
 *                                   bare, whatever LD_PRELOAD says) and
 *                                   through the program's calls (the
 *                                   interposer, if preloaded); "bare N",
 *                                   "through N" (ns per pair) and "ratio
 *                                   N", the medians of the bursts, and
 *                                   bare_min, through_min, ratio_min from
 *                                   the fastest burst of each (on a
 *                                   loaded host, the least disturbed)
 *   ipbench contend-ratio THREADS [BURSTS [PAIRS]]
 *                                   the same for THREADS threads on one
 *                                   mutex, PAIRS (default 50000) each per
 *                                   burst (default 15)
 *
 * Every mode first says what the thread got from the kernel's prctl
 * (the merged ABI): "prctl N" (1: enabled, by the interposer or the
 * library; else 0 or -errno).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>

#include "rseq_slice.h"
#include "insn_marker.h"

#define WARMUP	1000

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long counter;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		perror("ipbench: sched_setaffinity");
}

static void say_prctl(void)
{
	int ret = prctl(RSEQ_SLICE_PR_EXTENSION, RSEQ_SLICE_PR_GET, 0, 0, 0);

	printf("prctl %d\n", ret < 0 ? -errno : ret);
}

static void pair(void)
{
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
}

static int insns(const char *name, long pairs)
{
	long i;

	pin(0);
	for (i = 0; i < WARMUP; i++)
		pair();
	say_prctl();
	insn_region_name(name);
	for (i = 0; i < pairs; i++) {
		insn_region_start();
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
		insn_region_stop();
	}
	return 0;
}

static int lib_insns(const char *name, long pairs)
{
	long i;
	int b;

	pin(0);
	b = rseq_slice_init(RSEQ_SLICE_BACKEND_AUTO);
	printf("library backend %s\n", rseq_slice_backend_name(b));
	for (i = 0; i < WARMUP; i++) {
		rseq_slice_cs_begin();
		rseq_slice_cs_end();
	}
	say_prctl();
	insn_region_name(name);
	for (i = 0; i < pairs; i++) {
		insn_region_start();
		rseq_slice_cs_begin();
		rseq_slice_cs_end();
		insn_region_stop();
	}
	return 0;
}

static int timed(long pairs)
{
	uint64_t t0;
	long i;

	for (i = 0; i < WARMUP; i++)
		pair();
	say_prctl();
	t0 = now_ns();
	for (i = 0; i < pairs; i++)
		pair();
	printf("ns %.3f\n", (double)(now_ns() - t0) / pairs);
	return 0;
}

static long per_thread;

static void *contender(void *arg)
{
	long i;

	(void)arg;
	for (i = 0; i < per_thread; i++) {
		pthread_mutex_lock(&m);
		counter++;
		pthread_mutex_unlock(&m);
	}
	return NULL;
}

static int contend(int threads, long pairs)
{
	pthread_t t[64];
	uint64_t t0;
	int i;

	if (threads < 1 || threads > 64)
		return 2;
	say_prctl();
	per_thread = pairs;
	t0 = now_ns();
	for (i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, contender, NULL);
	for (i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("ns %llu\n", (unsigned long long)(now_ns() - t0));
	if (counter != (unsigned long)threads * pairs) {
		fprintf(stderr, "ipbench: %lu increments of %lu\n", counter,
			(unsigned long)threads * pairs);
		return 1;
	}
	return 0;
}

/* The C library's own lock calls, past any interposer. */
static int (*bare_lock)(pthread_mutex_t *);
static int (*bare_unlock)(pthread_mutex_t *);

static int find_bare(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);

	if (libc) {
		*(void **)&bare_lock = dlsym(libc, "pthread_mutex_lock");
		*(void **)&bare_unlock = dlsym(libc, "pthread_mutex_unlock");
	}
	if (!bare_lock || !bare_unlock) {
		fprintf(stderr, "ipbench: no pthread_mutex_lock in libc.so.6\n");
		return -1;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int use_bare;

static void *contender_ab(void *arg)
{
	long i;

	(void)arg;
	for (i = 0; i < per_thread; i++) {
		if (use_bare) {
			bare_lock(&m);
			counter++;
			bare_unlock(&m);
		} else {
			pthread_mutex_lock(&m);
			counter++;
			pthread_mutex_unlock(&m);
		}
	}
	return NULL;
}

/* One burst: @threads threads (0: this one alone) of @pairs pairs; ns. */
static double burst(int bare, int threads, long pairs)
{
	pthread_t t[64];
	uint64_t t0;
	long i;
	int j;

	t0 = now_ns();
	if (!threads) {
		if (bare) {
			for (i = 0; i < pairs; i++) {
				bare_lock(&m);
				bare_unlock(&m);
			}
		} else {
			for (i = 0; i < pairs; i++)
				pair();
		}
		return (double)(now_ns() - t0);
	}
	use_bare = bare;
	per_thread = pairs;
	for (j = 0; j < threads; j++)
		pthread_create(&t[j], NULL, contender_ab, NULL);
	for (j = 0; j < threads; j++)
		pthread_join(t[j], NULL);
	return (double)(now_ns() - t0);
}

static int ratio(int threads, int bursts, long pairs)
{
	static double a[1001], b[1001], r[1001];
	int i;

	if (find_bare() || bursts < 1 || bursts > 1000 || threads < 0 || threads > 64)
		return 2;
	say_prctl();
	burst(1, threads, pairs / 10 + 1);
	burst(0, threads, pairs / 10 + 1);
	for (i = 0; i < bursts; i++) {
		/* Alternate which goes first: a load change hits both alike. */
		if (i % 2) {
			b[i] = burst(0, threads, pairs);
			a[i] = burst(1, threads, pairs);
		} else {
			a[i] = burst(1, threads, pairs);
			b[i] = burst(0, threads, pairs);
		}
		r[i] = b[i] / a[i];
	}
	printf("bare %.3f\nthrough %.3f\nratio %.4f\n", median(a, bursts) / pairs,
	       median(b, bursts) / pairs, median(r, bursts));
	/* The least disturbed burst of each (sorted by median()). */
	printf("bare_min %.3f\nthrough_min %.3f\nratio_min %.4f\n", a[0] / pairs, b[0] / pairs,
	       b[0] / a[0]);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: ipbench insns|lib-insns NAME [PAIRS] | time [PAIRS] |"
		" contend THREADS PAIRS | ratio [BURSTS [PAIRS]] |"
		" contend-ratio THREADS [BURSTS [PAIRS]]\n");
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && !strcmp(argv[1], "insns"))
		return insns(argv[2], argc > 3 ? atol(argv[3]) : 200);
	if (argc >= 3 && !strcmp(argv[1], "lib-insns"))
		return lib_insns(argv[2], argc > 3 ? atol(argv[3]) : 200);
	if (argc >= 2 && !strcmp(argv[1], "time"))
		return timed(argc > 2 ? atol(argv[2]) : 5000000);
	if (argc >= 2 && !strcmp(argv[1], "ratio"))
		return ratio(0, argc > 2 ? atoi(argv[2]) : 41, argc > 3 ? atol(argv[3]) : 200000);
	if (argc >= 3 && !strcmp(argv[1], "contend-ratio"))
		return ratio(atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 15,
			     argc > 4 ? atol(argv[4]) : 50000);
	if (argc >= 4 && !strcmp(argv[1], "contend"))
		return contend(atoi(argv[2]), atol(argv[3]));
	usage();
	return 2;
}
