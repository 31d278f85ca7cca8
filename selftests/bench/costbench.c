// SPDX-License-Identifier: GPL-2.0
/*
 * costbench: what the mechanism costs, one JSON object per run.
 *
 *   costbench syscall|pipe|fork [-i ITER] [-e]
 *	Cost for everyone else: a getppid() loop, a one-byte pipe ping-pong
 *	between two threads, a fork/exit/wait loop, on CPU 0; ns per
 *	operation. Meanwhile a thread spins on the last CPU in every arm (so
 *	that arms differ only in the module: under single-threaded emulation
 *	a busy vCPU slows the others); with -e that thread is enabled through
 *	/dev/rseq_slice and requests in a loop, so the module's hooks are
 *	armed and grants happen.
 *   costbench yield|expiry -m module|upstream [-i ITER]
 *	The mechanism itself, on one CPU with a noise thread: "yield" times
 *	the yield of a live grant (from the call to the return, including the
 *	context switch); "expiry" times how long a grant that is never
 *	yielded keeps the CPU.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rseq_slice.h>

static volatile int stop;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static int last_cpu(void)
{
	return (int)sysconf(_SC_NPROCESSORS_ONLN) - 1;
}

/* A thread elsewhere, requesting and yielding in a loop (-e: enabled). */
static void *busy_fn(void *arg)
{
	pin(last_cpu());
	if (rseq_slice_init(arg ? RSEQ_SLICE_BACKEND_MODULE : RSEQ_SLICE_BACKEND_NONE) < 0)
		return (void *)1L;
	while (!stop) {
		rseq_slice_cs_begin();
		rseq_slice_busy_wait_ns(2000);
		rseq_slice_cs_end();
	}
	rseq_slice_fini();
	return NULL;
}

static int pp[2][2];

static void *pong_fn(void *arg)
{
	char c;

	(void)arg;
	while (read(pp[0][0], &c, 1) == 1 && c)
		if (write(pp[1][1], &c, 1) != 1)
			break;
	return NULL;
}

static double run_everyone(const char *what, long iters)
{
	uint64_t t0;
	long i;

	if (!strcmp(what, "syscall")) {
		t0 = mono_ns();
		for (i = 0; i < iters; i++)
			syscall(SYS_getppid);
	} else if (!strcmp(what, "pipe")) {
		pthread_t th;
		char c = 1;

		if (pipe(pp[0]) || pipe(pp[1]))
			return -1;
		pthread_create(&th, NULL, pong_fn, NULL);
		t0 = mono_ns();
		for (i = 0; i < iters; i++)
			if (write(pp[0][1], &c, 1) != 1 || read(pp[1][0], &c, 1) != 1)
				return -1;
		c = 0;
		if (write(pp[0][1], &c, 1) != 1)
			return -1;
		pthread_join(th, NULL);
	} else if (!strcmp(what, "fork")) {
		t0 = mono_ns();
		for (i = 0; i < iters; i++) {
			pid_t pid = fork();

			if (!pid)
				_exit(0);
			waitpid(pid, NULL, 0);
		}
	} else {
		return -1;
	}
	return (double)(mono_ns() - t0) / iters;
}

static void *noise_fn(void *arg)
{
	struct timespec ts = { 0, 50000 };

	pin(*(int *)arg);
	while (!stop) {
		rseq_slice_busy_wait_ns(2000);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Spin under REQUEST until granted (or 100 ms): true if granted. */
static int wait_grant(void)
{
	uint64_t end = rseq_slice_rdtsc() + rseq_slice_ns_to_tsc(100000000);

	rseq_slice_cs_begin();
	while (rseq_slice_rdtsc() < end) {
		if (rseq_slice_cs_granted())
			return 1;
		if (!rseq_slice_cs_pending()) {
			/* Denied: ask again. */
			rseq_slice_cs_end();
			rseq_slice_cs_begin();
		}
	}
	rseq_slice_cs_end();
	return 0;
}

static int run_mechanism(const char *what, enum rseq_slice_backend mode, long iters)
{
	int cpu = last_cpu();
	uint64_t *v = calloc(iters, sizeof(*v));
	pthread_t th;
	long i, n = 0, misses = 0;
	int ret;

	if (!v || pin(cpu))
		return 1;
	ret = rseq_slice_init(mode);
	if (ret < 0) {
		fprintf(stderr, "costbench: enable: %s\n", strerror(-ret));
		return 1;
	}
	pthread_create(&th, NULL, noise_fn, &cpu);
	for (i = 0; i < iters && misses < 1000; i++) {
		uint64_t t0, t1;

		if (!wait_grant()) {
			misses++;
			continue;
		}
		t0 = rseq_slice_rdtsc();
		if (!strcmp(what, "yield")) {
			/* The end of the section yields: the live grant's cost. */
			if (rseq_slice_cs_end() != RSEQ_SLICE_END_YIELDED) {
				misses++;
				continue;
			}
		} else {
			while (rseq_slice_cs_granted())
				;
			rseq_slice_cs_end();
		}
		t1 = rseq_slice_rdtsc();
		v[n++] = (uint64_t)((t1 - t0) / rseq_slice_tsc_per_ns);
	}
	stop = 1;
	pthread_join(th, NULL);
	rseq_slice_fini();
	qsort(v, n, sizeof(*v), cmp_u64);
	printf("{\"bench\":\"%s\",\"abi\":\"%s\",\"n\":%ld,\"misses\":%ld,"
	       "\"p50_ns\":%llu,\"p99_ns\":%llu,\"max_ns\":%llu}\n",
	       what, mode == RSEQ_SLICE_BACKEND_MODULE ? "module" : "upstream", n, misses,
	       n ? (unsigned long long)v[n / 2] : 0,
	       n ? (unsigned long long)v[n * 99 / 100] : 0,
	       n ? (unsigned long long)v[n - 1] : 0);
	return n ? 0 : 1;
}

int main(int argc, char **argv)
{
	enum rseq_slice_backend mode = RSEQ_SLICE_BACKEND_MODULE;
	long iters = 0;
	int enabled = 0, opt;
	const char *what;
	pthread_t bth;
	double ns;

	if (argc < 2) {
		fprintf(stderr, "usage: costbench syscall|pipe|fork|yield|expiry [-i ITER] [-e] [-m module|upstream]\n");
		return 2;
	}
	what = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "i:em:")) != -1) {
		switch (opt) {
		case 'i': iters = atol(optarg); break;
		case 'e': enabled = 1; break;
		case 'm':
			if (rseq_slice_backend_parse(optarg, &mode) || mode == RSEQ_SLICE_BACKEND_AUTO)
				return 2;
			break;
		default: return 2;
		}
	}
	rseq_slice_tsc_calibrate(200000000);
	if (!strcmp(what, "yield") || !strcmp(what, "expiry"))
		return run_mechanism(what, mode, iters ? iters : 2000);

	if (pthread_create(&bth, NULL, busy_fn, enabled ? (void *)1L : NULL))
		return 1;
	pin(0);
	if (!iters)
		iters = !strcmp(what, "fork") ? 300 : !strcmp(what, "pipe") ? 5000 : 50000;
	ns = run_everyone(what, iters);
	{
		void *r;

		stop = 1;
		pthread_join(bth, &r);
		if (r) {
			fprintf(stderr, "costbench: the busy thread could not enable\n");
			return 1;
		}
	}
	if (ns < 0)
		return 1;
	printf("{\"bench\":\"%s\",\"enabled\":%d,\"iters\":%ld,\"ns_per_op\":%.1f}\n",
	       what, enabled, iters, ns);
	return 0;
}
