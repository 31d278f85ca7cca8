// SPDX-License-Identifier: GPL-2.0
/*
 * costbench: what the mechanism costs, one JSON object per run.
 *
 *   costbench syscall|pipe|fork|switch [-i ITER] [-e] [-I NAME]
 *	Cost for everyone else: a getppid() loop, a one-byte pipe ping-pong
 *	between two threads, a fork/exit/wait loop (in a process of its
 *	own, see run_fork()), a sched_yield() ping-pong between two
 *	SCHED_FIFO threads (two context switches), on CPU 0; ns per
 *	operation. With -I the pipe's threads are SCHED_FIFO
 *	too (see fifo_on()). Meanwhile a thread spins on the last CPU in every arm (so
 *	that arms differ only in the module: under single-threaded emulation
 *	a busy vCPU slows the others); with -e that thread is enabled through
 *	/dev/rseq_slice and requests in a loop, so the module's hooks are
 *	armed and grants happen.
 *   costbench yield|expiry -m module|upstream [-i ITER] [-N timer|tick]
 *	The mechanism itself, on one CPU with a noise thread: "yield" times
 *	the yield of a live grant (from the call to the return, including the
 *	context switch); "expiry" times how long a grant that is never
 *	yielded keeps the CPU. -N: how the noise asks for the CPU: "timer"
 *	(it sleeps 50 us; its wakeups can also end a grant early) or "tick"
 *	(it stays runnable, at nice 19, and yields when it runs, so the
 *	tick preempts for it and only the grant's timer ends a grant: on
 *	PREEMPT_RT the only one of the two the module can defer, see
 *	selftests/slice_util.h; for "yield" it runs at nice 0, so that the
 *	yield switches to it, and then sleeps 50 us). Default: tick on
 *	PREEMPT_RT, else timer.
 *   costbench yield|expiry|preempt -m module|upstream -I NAME [-i ITER]
 *	The same in instructions (scripts/vm --count-insns): the noise
 *	thread only sleeps 50 us and counts its wake-ups, and each sample is
 *	a region "OP/NAME" on the last CPU from the REQUEST to the moment the
 *	noise thread has run: "preempt" the same without REQUEST (the plain
 *	preemption the other two are compared with). The kernel part of a
 *	sample is deterministic; the user part holds a spin of any length.
 *   costbench selfcheck -I NAME
 *	Regions of known length for the plugin to count: "empty/NAME" (0
 *	instructions) and "nop100/NAME" (100).
 *
 * -I NAME: mark every operation as one instruction-count region named
 * OP/NAME (selftests/bench/insn_marker.h); the measuring threads are
 * pinned, as the plugin counts per vCPU.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rseq_slice.h>
#include "../clock.h"

#include "insn_marker.h"

static volatile int stop;
static int counting;

static void mark_start(void)
{
	if (counting)
		insn_region_start();
}

static void mark_stop(void)
{
	if (counting)
		insn_region_stop();
}

static void mark_name(const char *op, const char *name)
{
	char buf[INSN_MARK_NAME_MAX + 1];

	if (!counting)
		return;
	snprintf(buf, sizeof(buf), "%s/%s", op, name);
	insn_region_name(buf);
}

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

static int busy_ready;

/*
 * A thread elsewhere, requesting and yielding in a loop (-e: enabled).
 * The measurement starts once it has enabled: the module's hooks are
 * patched in by then.
 */
static void *busy_fn(void *arg)
{
	int ret;

	pin(last_cpu());
	ret = rseq_slice_init(arg ? RSEQ_SLICE_BACKEND_MODULE : RSEQ_SLICE_BACKEND_NONE);
	__atomic_store_n(&busy_ready, ret < 0 ? -1 : 1, __ATOMIC_RELEASE);
	if (ret < 0)
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

static int partner_stop;
static long partner_runs;

/* Counters two threads share: plain loads and stores the compiler keeps. */
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/*
 * SCHED_FIFO at priority 1 for the calling thread and the threads it
 * creates next (they inherit it), where allowed: between two such
 * threads a wake-up never preempts and a sched_yield() always switches,
 * so every round trip takes one path. Under CFS the path depends on the
 * threads' vruntimes (preempted at the writer's return to user space or
 * not, a yield that switches or not), which drift in phases. True if set.
 */
static int fifo_on(void)
{
	struct sched_param sp = { .sched_priority = 1 };

	return !sched_setscheduler(0, SCHED_FIFO, &sp);
}

static void fifo_off(void)
{
	struct sched_param sp = { .sched_priority = 0 };

	sched_setscheduler(0, SCHED_OTHER, &sp);
}

/* The other side of "switch": on the same CPU, yield back at once. */
static void *partner_fn(void *arg)
{
	(void)arg;
	while (!LOAD(partner_stop)) {
		STORE(partner_runs, LOAD(partner_runs) + 1);
		sched_yield();
	}
	return NULL;
}

/* fork/exit/wait ITERS times; ns per operation. */
static double fork_loop(long iters)
{
	uint64_t t0 = mono_ns();
	long i;

	for (i = 0; i < iters; i++) {
		pid_t pid;

		mark_start();
		pid = fork();
		if (!pid)
			_exit(0);
		waitpid(pid, NULL, 0);
		mark_stop();
	}
	return (double)(mono_ns() - t0) / iters;
}

/*
 * fork_loop() in a process of its own (on this CPU, whose pinning it
 * inherits), which shares its mm with nobody. Beside the busy thread, in
 * its process, fork() crossed to the other CPU: dup_mmap() write-protects
 * the parent's private pages, so the TLB flush went to the busy thread's
 * CPU by IPI whenever that CPU had the mm loaded (58-79% of a run's
 * samples on 6.12), and the busy thread's next store to its own stack
 * took a write-protect fault that waited for the next fork()'s hold of
 * the mmap lock, the CPU going idle meanwhile.
 * Under single-threaded TCG every such wait hands the emulator to the
 * other vCPU, which then runs to the next timer deadline: milliseconds of
 * guest time passed inside a sample and brought ticks, timers and RCU
 * grace-period work onto this CPU, a little more or less in each run.
 */
static double run_fork(long iters)
{
	double ns = -1;
	int fd[2], status;
	pid_t pid;

	if (pipe(fd))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		close(fd[0]);
		ns = fork_loop(iters);
		_exit(write(fd[1], &ns, sizeof(ns)) == sizeof(ns) ? 0 : 1);
	}
	close(fd[1]);
	if (read(fd[0], &ns, sizeof(ns)) != sizeof(ns))
		ns = -1;
	close(fd[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		ns = -1;
	return ns;
}

static double run_everyone(const char *what, long iters)
{
	uint64_t t0;
	long i;

	if (!strcmp(what, "syscall")) {
		t0 = mono_ns();
		for (i = 0; i < iters; i++) {
			mark_start();
			syscall(SYS_getppid);
			mark_stop();
		}
	} else if (!strcmp(what, "switch")) {
		int fifo = fifo_on();
		pthread_t th;
		long runs;

		if (pthread_create(&th, NULL, partner_fn, NULL))
			return -1;
		while (!LOAD(partner_runs))
			sched_yield();
		runs = LOAD(partner_runs);
		t0 = mono_ns();
		for (i = 0; i < iters; i++) {
			mark_start();
			sched_yield();
			mark_stop();
		}
		runs = LOAD(partner_runs) - runs;
		STORE(partner_stop, 1);
		pthread_join(th, NULL);
		if (fifo)
			fifo_off();
		/* Each yield must have run the partner: two switches. */
		if (runs < iters * 9 / 10) {
			fprintf(stderr, "costbench: switch: partner ran %ld times in %ld\n",
				runs, iters);
			return -1;
		}
	} else if (!strcmp(what, "pipe")) {
		int fifo = counting && fifo_on();
		pthread_t th;
		char c = 1;

		if (pipe(pp[0]) || pipe(pp[1]))
			return -1;
		pthread_create(&th, NULL, pong_fn, NULL);
		t0 = mono_ns();
		for (i = 0; i < iters; i++) {
			mark_start();
			if (write(pp[0][1], &c, 1) != 1 || read(pp[1][0], &c, 1) != 1)
				return -1;
			mark_stop();
		}
		c = 0;
		if (write(pp[0][1], &c, 1) != 1)
			return -1;
		pthread_join(th, NULL);
		if (fifo)
			fifo_off();
	} else if (!strcmp(what, "fork")) {
		return run_fork(iters);
	} else {
		return -1;
	}
	return (double)(mono_ns() - t0) / iters;
}

static int noise_tick;
static int noise_fair;	/* the tick's noise at nice 0 */
static volatile long yields;	/* yields the measuring thread began */

static void *noise_fn(void *arg)
{
	struct timespec ts = { 0, 50000 };
	long seen = 0;

	pin(*(int *)arg);
	/*
	 * As selftests/slice_util.h's: at nice 19 it gives the CPU back at
	 * once. For the yield at nice 0 (noise_start_fair()), or the yield
	 * would mostly not switch (the noise loses the pick); and once a
	 * yield gave it the CPU it sleeps, as the timer's noise does, or the
	 * yielding thread would wait for the noise's fair share (6.1-rt's
	 * CFS: 7.4 ms at the median) and the figure would be the scheduler's.
	 */
	if (noise_tick && !noise_fair)
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
	while (!stop) {
		rseq_slice_busy_wait_ns(2000);
		if (noise_fair && yields != seen) {
			seen = yields;
			nanosleep(&ts, NULL);
		} else if (noise_tick) {
			sched_yield();
		} else {
			nanosleep(&ts, NULL);
		}
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
	noise_fair = !strcmp(what, "yield");
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
			yields++;
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
	printf("{\"bench\":\"%s\",\"abi\":\"%s\",\"noise\":\"%s\",\"n\":%ld,\"misses\":%ld,"
	       "\"p50_ns\":%llu,\"p90_ns\":%llu,\"p99_ns\":%llu,\"p999_ns\":%llu,\"max_ns\":%llu}\n",
	       what, mode == RSEQ_SLICE_BACKEND_MODULE ? "module" : "upstream",
	       noise_tick ? "tick" : "timer", n, misses,
	       n ? (unsigned long long)v[n / 2] : 0,
	       n ? (unsigned long long)v[n * 9 / 10] : 0,
	       n ? (unsigned long long)v[n * 99 / 100] : 0,
	       n ? (unsigned long long)v[n * 999 / 1000] : 0,
	       n ? (unsigned long long)v[n - 1] : 0);
	return n ? 0 : 1;
}

static long noise_wakes;

/* Instruction counts: the noise thread sleeps and counts, nothing else. */
static void *sleeper_fn(void *arg)
{
	struct timespec ts = { 0, 50000 };

	pin(*(int *)arg);
	while (!stop) {
		nanosleep(&ts, NULL);
		STORE(noise_wakes, LOAD(noise_wakes) + 1);
	}
	return NULL;
}

/*
 * One region per sample, from before the REQUEST to the moment the noise
 * thread has run once: "yield" yields the grant, "expiry" spins until the
 * grant runs out, "preempt" never requests. A sample in which the noise
 * thread ran before the grant (a denial), or none came, is cancelled.
 */
static int count_mechanism(const char *what, enum rseq_slice_backend mode, long iters,
			   const char *name)
{
	int cpu = last_cpu(), ret;
	long n = 0, misses = 0;
	pthread_t th;

	if (pin(cpu))
		return 1;
	ret = rseq_slice_init(mode);
	if (ret < 0) {
		fprintf(stderr, "costbench: enable: %s\n", strerror(-ret));
		return 1;
	}
	pthread_create(&th, NULL, sleeper_fn, &cpu);
	mark_name(what, name);
	while (n < iters && misses < 10 * iters) {
		long seen = LOAD(noise_wakes);

		mark_start();
		if (!strcmp(what, "preempt")) {
			while (LOAD(noise_wakes) == seen)
				;
			mark_stop();
			n++;
			continue;
		}
		if (!wait_grant() || LOAD(noise_wakes) != seen) {
			insn_region_cancel();
			rseq_slice_cs_end();
			misses++;
			continue;
		}
		if (!strcmp(what, "yield")) {
			if (rseq_slice_cs_end() != RSEQ_SLICE_END_YIELDED ||
			    LOAD(noise_wakes) == seen) {
				insn_region_cancel();
				misses++;
				continue;
			}
			mark_stop();
		} else {
			while (LOAD(noise_wakes) == seen)
				;
			mark_stop();
			rseq_slice_cs_end();
		}
		n++;
	}
	stop = 1;
	pthread_join(th, NULL);
	rseq_slice_fini();
	printf("{\"bench\":\"%s\",\"abi\":\"%s\",\"insns\":\"%s\",\"n\":%ld,\"misses\":%ld}\n",
	       what, mode == RSEQ_SLICE_BACKEND_MODULE ? "module" : "upstream", name, n, misses);
	return n ? 0 : 1;
}

/* Regions whose count is known: the plugin must see exactly that. */
static int run_selfcheck(const char *name)
{
	int i;

	pin(0);
	mark_name("empty", name);
	for (i = 0; i < 100; i++) {
		insn_region_start();
		insn_region_stop();
	}
	mark_name("nop100", name);
	for (i = 0; i < 100; i++) {
		insn_region_start();
		__asm__ __volatile__(".rept 100\n\tnop\n\t.endr" : : : "memory");
		insn_region_stop();
	}
	printf("{\"bench\":\"selfcheck\",\"insns\":\"%s\"}\n", name);
	return 0;
}

int main(int argc, char **argv)
{
	enum rseq_slice_backend mode = RSEQ_SLICE_BACKEND_MODULE;
	long iters = 0;
	int enabled = 0, opt;
	const char *what, *name = NULL;
	pthread_t bth;
	double ns;

	if (argc < 2) {
		fprintf(stderr, "usage: costbench %s %s\n",
			"syscall|pipe|fork|switch|yield|expiry|preempt|selfcheck",
			"[-i ITER] [-e] [-m module|upstream] [-I NAME] [-N timer|tick]");
		return 2;
	}
	what = argv[1];
	optind = 2;
	{
		struct utsname u;

		noise_tick = !uname(&u) && strstr(u.version, "PREEMPT_RT");
	}
	while ((opt = getopt(argc, argv, "i:em:I:N:")) != -1) {
		switch (opt) {
		case 'N':
			if (strcmp(optarg, "tick") && strcmp(optarg, "timer"))
				return 2;
			noise_tick = !strcmp(optarg, "tick");
			break;
		case 'i': iters = atol(optarg); break;
		case 'e': enabled = 1; break;
		case 'I':
			name = optarg;
			counting = 1;
			break;
		case 'm':
			if (rseq_slice_backend_parse(optarg, &mode) || mode == RSEQ_SLICE_BACKEND_AUTO)
				return 2;
			break;
		default: return 2;
		}
	}
	if (!strcmp(what, "selfcheck"))
		return name ? run_selfcheck(name) : 2;
	rseq_slice_tsc_calibrate(200000000);
	if (name && (!strcmp(what, "yield") || !strcmp(what, "expiry") ||
		     !strcmp(what, "preempt")))
		return count_mechanism(what, mode, iters ? iters : 1000, name);
	if (!strcmp(what, "yield") || !strcmp(what, "expiry"))
		return run_mechanism(what, mode, iters ? iters : 2000);

	if (pthread_create(&bth, NULL, busy_fn, enabled ? (void *)1L : NULL))
		return 1;
	while (!__atomic_load_n(&busy_ready, __ATOMIC_ACQUIRE))
		sched_yield();
	pin(0);
	if (!iters)
		iters = !strcmp(what, "fork") ? 300 : !strcmp(what, "pipe") ? 5000 :
			!strcmp(what, "switch") ? 5000 : 50000;
	if (name)
		mark_name(what, name);
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
	printf("{\"bench\":\"%s\",\"enabled\":%d,\"iters\":%ld,\"ns_per_op\":%.1f",
	       what, enabled, iters, ns);
	if (name)
		printf(",\"insns\":\"%s\"", name);
	printf("}\n");
	return 0;
}
