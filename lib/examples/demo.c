// SPDX-License-Identifier: GPL-2.0
/*
 * rseq-slice-demo: time slice extension seen from a program. The main
 * thread runs 20 us critical sections on CPU 0 while a second thread on
 * the same CPU wakes up every 200 us and would preempt it; each section
 * ends with rseq_slice_cs_end(), which yields when the kernel granted an
 * extension. It runs until it has seen 10 yields (at most 30 s) and
 * prints what the sections saw.
 *
 *   cc -O2 demo.c $(pkg-config --cflags --libs rseq-slice) -pthread
 *   ./a.out [auto|module|kernel]
 *
 * Exit status: 0 when grants were seen and yielded, 1 when the backend
 * cannot be had (with the reason: EACCES on the device means the user is
 * not in the group the udev rule names), 2 when no grant came.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <rseq_slice.h>

static volatile int stop;

/*
 * Work that stays in user space: a system call (even clock_gettime()
 * where the vDSO cannot read the clock) would end a grant.
 */
static void spin(unsigned long n)
{
	volatile unsigned long i;

	for (i = 0; i < n; i++)
		;
}

/* How many spin() rounds take @ns, measured once outside any section. */
static unsigned long spins_for_ns(unsigned long ns)
{
	struct timespec a, b;
	unsigned long n = 1UL << 20;
	double took;

	clock_gettime(CLOCK_MONOTONIC, &a);
	spin(n);
	clock_gettime(CLOCK_MONOTONIC, &b);
	took = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
	return took > 0 ? (unsigned long)(n * (double)ns / took) + 1 : n;
}

static void pin_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *waker(void *arg)
{
	struct timespec ts = { 0, 200000 };

	(void)arg;
	pin_cpu0();
	while (!stop)
		nanosleep(&ts, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	enum rseq_slice_backend want = RSEQ_SLICE_BACKEND_AUTO;
	unsigned long seen[8] = { 0 }, sections = 0, work;
	struct timespec start, now;
	pthread_t thread;
	int ret;

	if (argc > 1 && rseq_slice_backend_parse(argv[1], &want)) {
		fprintf(stderr, "usage: %s [auto|module|kernel]\n", argv[0]);
		return 1;
	}
	pin_cpu0();
	ret = rseq_slice_init(want);
	if (ret < 0) {
		fprintf(stderr, "rseq-slice-demo: backend %s: %s%s\n",
			rseq_slice_backend_name(want), strerror(-ret),
			ret == -EACCES ? " (is this user in the group of " RSEQ_SLICE_DEVICE "?)" : "");
		return 1;
	}
	printf("backend: %s\n", rseq_slice_backend_describe());
	if (ret == RSEQ_SLICE_BACKEND_NONE) {
		fprintf(stderr, "rseq-slice-demo: no time slice extension here\n");
		return 1;
	}
	work = spins_for_ns(20000);
	if (pthread_create(&thread, NULL, waker, NULL))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		rseq_slice_cs_begin();
		spin(work);
		ret = rseq_slice_cs_end();
		sections++;
		if (ret >= 0 && ret < 8)
			seen[ret]++;
		else
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (seen[RSEQ_SLICE_END_YIELDED] < 10 && now.tv_sec - start.tv_sec < 30);
	stop = 1;
	pthread_join(thread, NULL);
	if (ret < 0) {
		fprintf(stderr, "rseq-slice-demo: yield: %s\n", strerror(-ret));
		return 1;
	}
	printf("sections %lu: not interrupted %lu, preempted without a grant %lu, granted and yielded %lu, grant revoked first %lu\n",
	       sections, seen[RSEQ_SLICE_END_SUCCESS], seen[RSEQ_SLICE_END_SCHEDULED],
	       seen[RSEQ_SLICE_END_YIELDED], seen[RSEQ_SLICE_END_RACED]);
	rseq_slice_fini();
	return seen[RSEQ_SLICE_END_YIELDED] ? 0 : 2;
}
