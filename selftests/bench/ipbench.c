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
 *
 * Every mode first says what the thread got from the kernel's prctl
 * (the merged ABI): "prctl N" (1: enabled, by the interposer or the
 * library; else 0 or -errno).
 */
#define _GNU_SOURCE
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

static void usage(void)
{
	fprintf(stderr, "usage: ipbench insns|lib-insns NAME [PAIRS] | time [PAIRS] |"
		" contend THREADS PAIRS\n");
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
	if (argc >= 4 && !strcmp(argv[1], "contend"))
		return contend(atoi(argv[2]), atol(argv[3]));
	usage();
	return 2;
}
