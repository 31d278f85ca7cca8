// SPDX-License-Identifier: GPL-2.0
/*
 * The LD_PRELOAD interposer (lib/preload/, librseq_slice_preload.so):
 * a program that makes every wrapped call, error cases included (every
 * mutex kind: error-checking, recursive, robust, priority inheritance), must
 * behave exactly the same with and without it. Dynamically linked (an
 * interposer needs the dynamic loader); the interposer is looked for next
 * to this binary, or at $RSEQ_SLICE_PRELOAD_SO.
 *
 *   preload_test               the test: the transcript without, with,
 *                              and switched off (RSEQ_SLICE_PRELOAD=0),
 *                              compared; then a contended run
 *   preload_test bound         where the program's mutex calls are bound
 *   preload_test transcript    print the transcript: each call's result,
 *                              and the interposer's depth where known
 *   preload_test contend N     THREADS threads, N sections each on one
 *                              mutex; N = 0: until the interposer saw a
 *                              grant (bounded)
 *
 * The contended run is made on the default backend (the merged ABI) and
 * on the module's ioctls (RSEQ_SLICE_PRELOAD=module). With rseq_slice.ko
 * loaded (or RSEQ_SLICE_EXPECT_BACKEND=kernel for the first) each must
 * see a grant; without, it checks the section count on backend "none".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "rseq_slice.h"
#include "clock.h"
#include "kselftest.h"

#define THREADS		4
#define FIXED_SECTIONS	2000
#define CS_NS		20000
#define GRANT_BOUND_NS	(90 * 1000000000ULL)

/* --- the transcript -------------------------------------------------- */

static unsigned int (*depth_fn)(void);

static const char *en(int e)
{
	static char buf[16];

	switch (e) {
	case 0: return "0";
	case EBUSY: return "EBUSY";
	case ETIMEDOUT: return "ETIMEDOUT";
	case EOWNERDEAD: return "EOWNERDEAD";
	case ENOTRECOVERABLE: return "ENOTRECOVERABLE";
	case EDEADLK: return "EDEADLK";
	case EPERM: return "EPERM";
	case EINVAL: return "EINVAL";
	}
	snprintf(buf, sizeof(buf), "E%d", e);
	return buf;
}

/*
 * The interposer's depth for the calling thread; @depth (what it should
 * be) where there is no interposer or it is off (it then answers UINT_MAX).
 */
static unsigned int depth_now(unsigned int depth)
{
	unsigned int d = depth_fn ? depth_fn() : UINT_MAX;

	return d == UINT_MAX ? depth : d;
}

/* "what: result", then the depth check: the same text either way. */
static void say(const char *what, int ret, unsigned int depth)
{
	unsigned int d = depth_now(depth);

	if (d == depth)
		printf("%s: %s\n", what, en(ret));
	else
		printf("%s: %s, interposer depth %u, want %u\n", what, en(ret), d, depth);
}

static struct timespec past(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	ts.tv_sec -= 1;
	return ts;
}

static struct timespec after_ms(clockid_t clock, long ms)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	ts.tv_nsec += ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	return ts;
}

static void mutex_init_pi(pthread_mutex_t *m, int type, int robust, int pi)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, type);
	if (robust)
		pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (pi)
		pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
	pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
}

static void mutex_init(pthread_mutex_t *m, int type, int robust)
{
	mutex_init_pi(m, type, robust, 0);
}

static void *lock_and_exit(void *m)
{
	pthread_mutex_lock(m);
	return NULL;	/* still holding it */
}

static void run_thread(void *(*fn)(void *), void *arg)
{
	pthread_t t;

	pthread_create(&t, NULL, fn, arg);
	pthread_join(t, NULL);
}

static void t_normal(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct timespec ts = past(CLOCK_REALTIME);

	say("normal lock", pthread_mutex_lock(&m), 1);
	say("normal trylock held", pthread_mutex_trylock(&m), 1);
	say("normal timedlock held, past", pthread_mutex_timedlock(&m, &ts), 1);
	say("normal unlock", pthread_mutex_unlock(&m), 0);
	say("normal trylock", pthread_mutex_trylock(&m), 1);
	say("normal unlock", pthread_mutex_unlock(&m), 0);
	ts = past(CLOCK_MONOTONIC);
	say("normal clocklock free, past", pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts), 1);
	say("normal unlock", pthread_mutex_unlock(&m), 0);
}

static void t_errorcheck(void)
{
	pthread_mutex_t m;
	struct timespec ts = past(CLOCK_REALTIME);

	mutex_init(&m, PTHREAD_MUTEX_ERRORCHECK, 0);
	say("errorcheck lock", pthread_mutex_lock(&m), 1);
	say("errorcheck relock", pthread_mutex_lock(&m), 1);
	say("errorcheck trylock held", pthread_mutex_trylock(&m), 1);
	say("errorcheck timedlock held", pthread_mutex_timedlock(&m, &ts), 1);
	say("errorcheck unlock", pthread_mutex_unlock(&m), 0);
	say("errorcheck unlock again", pthread_mutex_unlock(&m), 0);
	run_thread(lock_and_exit, &m);
	say("errorcheck unlock of another's", pthread_mutex_unlock(&m), 0);
	say("errorcheck trylock of another's", pthread_mutex_trylock(&m), 0);
}

static void t_recursive(void)
{
	pthread_mutex_t m;
	struct timespec ts = past(CLOCK_REALTIME);

	mutex_init(&m, PTHREAD_MUTEX_RECURSIVE, 0);
	say("recursive lock", pthread_mutex_lock(&m), 1);
	say("recursive lock again", pthread_mutex_lock(&m), 2);
	say("recursive trylock", pthread_mutex_trylock(&m), 3);
	say("recursive timedlock", pthread_mutex_timedlock(&m, &ts), 4);
	say("recursive unlock", pthread_mutex_unlock(&m), 3);
	say("recursive unlock", pthread_mutex_unlock(&m), 2);
	say("recursive unlock", pthread_mutex_unlock(&m), 1);
	say("recursive unlock", pthread_mutex_unlock(&m), 0);
	say("recursive unlock again", pthread_mutex_unlock(&m), 0);
}

/* Priority inheritance (the kernel's futex PI calls) and glibc's adaptive kind. */
static void t_pi_adaptive(void)
{
	pthread_mutex_t m;
	struct timespec ts = past(CLOCK_REALTIME);

	mutex_init_pi(&m, PTHREAD_MUTEX_ERRORCHECK, 0, 1);
	say("pi lock", pthread_mutex_lock(&m), 1);
	say("pi relock", pthread_mutex_lock(&m), 1);
	say("pi trylock held", pthread_mutex_trylock(&m), 1);
	say("pi unlock", pthread_mutex_unlock(&m), 0);
	say("pi timedlock, past", pthread_mutex_timedlock(&m, &ts), 1);
	say("pi unlock", pthread_mutex_unlock(&m), 0);
	mutex_init_pi(&m, PTHREAD_MUTEX_NORMAL, 1, 1);
	run_thread(lock_and_exit, &m);
	say("robust pi lock, owner died", pthread_mutex_lock(&m), 1);
	say("robust pi consistent", pthread_mutex_consistent(&m), 1);
	say("robust pi unlock", pthread_mutex_unlock(&m), 0);
	mutex_init(&m, PTHREAD_MUTEX_ADAPTIVE_NP, 0);
	say("adaptive lock", pthread_mutex_lock(&m), 1);
	say("adaptive trylock held", pthread_mutex_trylock(&m), 1);
	say("adaptive unlock", pthread_mutex_unlock(&m), 0);
}

static void t_robust(void)
{
	pthread_mutex_t m;

	mutex_init(&m, PTHREAD_MUTEX_NORMAL, 1);
	run_thread(lock_and_exit, &m);
	say("robust lock, owner died", pthread_mutex_lock(&m), 1);
	say("robust consistent", pthread_mutex_consistent(&m), 1);
	say("robust unlock", pthread_mutex_unlock(&m), 0);
	say("robust lock", pthread_mutex_lock(&m), 1);
	say("robust unlock", pthread_mutex_unlock(&m), 0);
	run_thread(lock_and_exit, &m);
	say("robust trylock, owner died", pthread_mutex_trylock(&m), 1);
	say("robust unlock, not consistent", pthread_mutex_unlock(&m), 0);
	say("robust lock, not recoverable", pthread_mutex_lock(&m), 0);
	say("robust trylock, not recoverable", pthread_mutex_trylock(&m), 0);
}

/* Another thread's view of a lock this one holds. */
static pthread_mutex_t held_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_spinlock_t held_s;
static pthread_rwlock_t held_rw = PTHREAD_RWLOCK_INITIALIZER;

static void *contender(void *arg)
{
	struct timespec ts = past(CLOCK_REALTIME);

	(void)arg;
	say("other thread: mutex trylock", pthread_mutex_trylock(&held_m), 0);
	say("other thread: mutex timedlock, past", pthread_mutex_timedlock(&held_m, &ts), 0);
	ts = after_ms(CLOCK_REALTIME, 20);
	say("other thread: mutex timedlock, 20 ms", pthread_mutex_timedlock(&held_m, &ts), 0);
	say("other thread: spin trylock", pthread_spin_trylock(&held_s), 0);
	ts = past(CLOCK_REALTIME);
	say("other thread: rwlock trywrlock", pthread_rwlock_trywrlock(&held_rw), 0);
	say("other thread: rwlock timedwrlock, past", pthread_rwlock_timedwrlock(&held_rw, &ts), 0);
	say("other thread: rwlock tryrdlock", pthread_rwlock_tryrdlock(&held_rw), 0);
	say("other thread: rwlock unlock of its read lock", pthread_rwlock_unlock(&held_rw), 0);
	return NULL;
}

static void t_contended(void)
{
	pthread_spin_init(&held_s, PTHREAD_PROCESS_PRIVATE);
	say("held: mutex lock", pthread_mutex_lock(&held_m), 1);
	say("held: spin lock", pthread_spin_lock(&held_s), 2);
	say("held: rwlock rdlock", pthread_rwlock_rdlock(&held_rw), 2);
	run_thread(contender, NULL);
	say("held: rwlock unlock (read)", pthread_rwlock_unlock(&held_rw), 2);
	/* Released out of order. */
	say("held: mutex unlock", pthread_mutex_unlock(&held_m), 1);
	say("held: spin unlock", pthread_spin_unlock(&held_s), 0);
}

static void t_spin(void)
{
	pthread_spinlock_t s;

	pthread_spin_init(&s, PTHREAD_PROCESS_PRIVATE);
	say("spin lock", pthread_spin_lock(&s), 1);
	say("spin trylock held", pthread_spin_trylock(&s), 1);
	say("spin unlock", pthread_spin_unlock(&s), 0);
	say("spin trylock", pthread_spin_trylock(&s), 1);
	say("spin unlock", pthread_spin_unlock(&s), 0);
	pthread_spin_destroy(&s);
}

static void t_rwlock(void)
{
	pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct timespec ts = past(CLOCK_REALTIME);

	say("rwlock wrlock", pthread_rwlock_wrlock(&l), 1);
	say("rwlock trywrlock held", pthread_rwlock_trywrlock(&l), 1);
	say("rwlock tryrdlock held", pthread_rwlock_tryrdlock(&l), 1);
	say("rwlock wrlock again", pthread_rwlock_wrlock(&l), 1);
	say("rwlock unlock", pthread_rwlock_unlock(&l), 0);
	say("rwlock rdlock", pthread_rwlock_rdlock(&l), 0);
	say("rwlock rdlock again", pthread_rwlock_rdlock(&l), 0);
	say("rwlock trywrlock read-held", pthread_rwlock_trywrlock(&l), 0);
	say("rwlock timedwrlock read-held, past", pthread_rwlock_timedwrlock(&l, &ts), 0);
	ts = past(CLOCK_MONOTONIC);
	say("rwlock clockwrlock read-held, past",
	    pthread_rwlock_clockwrlock(&l, CLOCK_MONOTONIC, &ts), 0);
	say("rwlock unlock (read)", pthread_rwlock_unlock(&l), 0);
	say("rwlock unlock (read)", pthread_rwlock_unlock(&l), 0);
	say("rwlock trywrlock", pthread_rwlock_trywrlock(&l), 1);
	say("nested: mutex lock", pthread_mutex_lock(&m), 2);
	say("nested: rwlock unlock", pthread_rwlock_unlock(&l), 1);
	ts = past(CLOCK_REALTIME);
	say("nested: rwlock timedwrlock", pthread_rwlock_timedwrlock(&l, &ts), 2);
	say("nested: mutex unlock", pthread_mutex_unlock(&m), 1);
	say("nested: rwlock unlock", pthread_rwlock_unlock(&l), 0);
}

/* Condition variables: a waiter thread, told apart by what it uses. */
struct waiter {
	pthread_mutex_t m;
	pthread_cond_t c, ready;
	int waiting, go, timed, cleanups;
	int ret, ret_unlock;
	unsigned int depth_after, depth_cleanup;
};

static void cleanup(void *arg)
{
	struct waiter *w = arg;

	w->cleanups++;
	w->ret_unlock = pthread_mutex_unlock(&w->m);
	w->depth_cleanup = depth_now(0);
}

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	struct timespec ts;
	int ret = 0;

	pthread_mutex_lock(&w->m);
	pthread_cleanup_push(cleanup, w);
	w->waiting = 1;
	pthread_cond_signal(&w->ready);
	while (!w->go && !ret) {
		if (w->timed) {
			ts = after_ms(CLOCK_REALTIME, 600000);
			ret = pthread_cond_timedwait(&w->c, &w->m, &ts);
		} else {
			ret = pthread_cond_wait(&w->c, &w->m);
		}
	}
	w->ret = ret;
	w->depth_after = depth_now(1);
	pthread_cleanup_pop(1);
	return NULL;
}

/* Start a waiter and return once it waits (it holds the mutex until then). */
static void waiter_start(struct waiter *w, pthread_t *t, int timed)
{
	memset(w, 0, sizeof(*w));
	mutex_init(&w->m, PTHREAD_MUTEX_ERRORCHECK, 0);
	pthread_cond_init(&w->c, NULL);
	pthread_cond_init(&w->ready, NULL);
	w->timed = timed;
	pthread_mutex_lock(&w->m);
	pthread_create(t, NULL, wait_thread, w);
	while (!w->waiting)
		pthread_cond_wait(&w->ready, &w->m);
}

static void t_cond_signal(int timed)
{
	struct waiter w;
	pthread_t t;
	char what[64];

	waiter_start(&w, &t, timed);
	w.go = 1;
	pthread_cond_signal(&w.c);
	say("cond: waiter ready, mutex unlock", pthread_mutex_unlock(&w.m), 0);
	pthread_join(t, NULL);
	snprintf(what, sizeof(what), "cond %s: signalled waiter", timed ? "timedwait" : "wait");
	say(what, w.ret, 0);
	printf("%s: depth after the wait %s, cleanups %d, its unlock %s, depth after %s\n",
	       what, w.depth_after == 1 ? "ok" : "wrong", w.cleanups, en(w.ret_unlock),
	       w.depth_cleanup == 0 ? "ok" : "wrong");
}

static void t_cond_cancel(int timed)
{
	struct waiter w;
	pthread_t t;
	void *res;
	char what[64];

	waiter_start(&w, &t, timed);
	pthread_cancel(t);
	say("cond: waiter ready, mutex unlock", pthread_mutex_unlock(&w.m), 0);
	pthread_join(t, &res);
	snprintf(what, sizeof(what), "cond %s: cancelled waiter", timed ? "timedwait" : "wait");
	printf("%s: %s, cleanups %d, its unlock %s, its depth after %s\n", what,
	       res == PTHREAD_CANCELED ? "cancelled" : "not cancelled", w.cleanups,
	       en(w.ret_unlock), w.depth_cleanup == 0 ? "ok" : "wrong");
	say("cond: mutex trylock after the cancel", pthread_mutex_trylock(&w.m), 1);
	say("cond: mutex unlock", pthread_mutex_unlock(&w.m), 0);
}

static void t_cond(void)
{
	pthread_mutex_t m;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct timespec ts = past(CLOCK_REALTIME);

	mutex_init(&m, PTHREAD_MUTEX_ERRORCHECK, 0);
	say("cond: mutex lock", pthread_mutex_lock(&m), 1);
	say("cond timedwait, past", pthread_cond_timedwait(&c, &m, &ts), 1);
	ts = after_ms(CLOCK_REALTIME, 20);
	say("cond timedwait, 20 ms", pthread_cond_timedwait(&c, &m, &ts), 1);
	ts = past(CLOCK_MONOTONIC);
	say("cond clockwait, past", pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &ts), 1);
	say("cond: mutex unlock (held after the waits)", pthread_mutex_unlock(&m), 0);
	ts = past(CLOCK_REALTIME);
	say("cond timedwait, mutex not held", pthread_cond_timedwait(&c, &m, &ts), 0);
	t_cond_signal(0);
	t_cond_signal(1);
	t_cond_cancel(0);
	t_cond_cancel(1);
}

static void t_fork(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	int status;
	pid_t pid;

	say("fork: mutex lock", pthread_mutex_lock(&m), 1);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		say("fork child: mutex unlock", pthread_mutex_unlock(&m), 0);
		say("fork child: mutex lock", pthread_mutex_lock(&m), 1);
		say("fork child: mutex unlock", pthread_mutex_unlock(&m), 0);
		fflush(stdout);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	printf("fork: child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	say("fork: mutex unlock", pthread_mutex_unlock(&m), 0);
}

static int transcript(void)
{
	*(void **)&depth_fn = dlsym(RTLD_DEFAULT, "rseq_slice_preload_depth");
	setvbuf(stdout, NULL, _IOLBF, 0);
	t_normal();
	t_errorcheck();
	t_recursive();
	t_robust();
	t_pi_adaptive();
	t_contended();
	t_spin();
	t_rwlock();
	t_cond();
	t_fork();
	printf("end\n");
	return 0;
}

/* --- the contended run -------------------------------------------------- */

static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static int (*stats_fn)(unsigned long *v, int n);
static long per_thread;
static int stop;
static unsigned long done[THREADS];

static unsigned long grants_seen(void)
{
	unsigned long v[3] = { 0 };

	if (!stats_fn || stats_fn(v, 3) < 3)
		return 0;
	return v[2];
}

static void *contend_thread(void *arg)
{
	unsigned long *n = arg;
	uint64_t end = rseq_slice_tsc_ns() + GRANT_BOUND_NS;

	while (per_thread ? *n < (unsigned long)per_thread :
	       !__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		pthread_mutex_lock(&cm);
		rseq_slice_busy_wait_ns(CS_NS);
		pthread_mutex_unlock(&cm);
		rseq_slice_busy_wait_ns(CS_NS);
		++*n;
		if (!per_thread && n == &done[0] && !(*n % 64) &&
		    (grants_seen() || rseq_slice_tsc_ns() > end))
			__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static int contend(long n)
{
	pthread_t t[THREADS];
	unsigned long sum = 0;
	int i;

	*(void **)&stats_fn = dlsym(RTLD_DEFAULT, "rseq_slice_preload_stats");
	rseq_slice_tsc_calibrate(0);
	per_thread = n;
	for (i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, contend_thread, &done[i]);
	for (i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		sum += done[i];
	}
	printf("sections %lu\n", sum);
	return 0;
}

/* --- the driver ------------------------------------------------------- */

struct result {
	int status;
	char out[16384], err[4096];
};

static void slurp(int fd, char *buf, size_t size)
{
	ssize_t n = pread(fd, buf, size - 1, 0);

	buf[n > 0 ? n : 0] = 0;
	close(fd);
}

static void putenv_pair(const char *env)
{
	static char buf[256];
	char *sp;

	snprintf(buf, sizeof(buf), "%s", env);
	sp = strchr(buf, ' ');
	if (sp) {
		*sp = 0;
		putenv(sp + 1);
	}
	putenv(buf);
}

/* Run this binary with @arg1 @arg2, @preload or not, and @env set. */
static void run(struct result *r, const char *so, const char *arg1, const char *arg2,
		const char *env)
{
	int out = memfd_create("out", 0), err = memfd_create("err", 0);
	char *argv[] = { "/proc/self/exe", (char *)arg1, (char *)arg2, NULL };
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		dup2(out, 1);
		dup2(err, 2);
		unsetenv("LD_PRELOAD");
		unsetenv("RSEQ_SLICE_PRELOAD");
		unsetenv("RSEQ_SLICE_PRELOAD_STATS");
		unsetenv("RSEQ_SLICE_PRELOAD_BENCH");
		unsetenv("RSEQ_SLICE_BACKEND");
		if (so)
			setenv("LD_PRELOAD", so, 1);
		/* @env: one NAME=VALUE, or two separated by a space. */
		if (env)
			putenv_pair(env);
		setenv("RSEQ_SLICE_PRELOAD_STATS", "1", 0);
		execv(argv[0], argv);
		_exit(127);
	}
	waitpid(pid, &r->status, 0);
	slurp(out, r->out, sizeof(r->out));
	slurp(err, r->err, sizeof(r->err));
}

static int ran_to_end(const struct result *r)
{
	size_t n = strlen(r->out);

	return WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0 &&
		n >= 4 && !strcmp(r->out + n - 4, "end\n");
}

/* The interposer's summary line's @key, or -1 without one. */
static long summary(const struct result *r, const char *key)
{
	const char *s = strstr(r->err, "rseq_slice_preload: pid="), *k;
	char pat[32];

	if (!s)
		return -1;
	snprintf(pat, sizeof(pat), " %s=", key);
	k = strstr(s, pat);
	return k ? strtol(k + strlen(pat), NULL, 10) : -1;
}

static void print_lines(const char *prefix, const char *s)
{
	const char *nl;

	for (; *s; s = nl + 1) {
		nl = strchrnul(s, '\n');
		printf("# %s%.*s\n", prefix, (int)(nl - s), s);
		if (!*nl)
			break;
	}
}

static void compare(const char *what, const struct result *a, const struct result *b)
{
	int same = !strcmp(a->out, b->out);

	if (!same) {
		print_lines("without: ", a->out);
		print_lines("with: ", b->out);
	}
	ksft_test_result(same, "%s\n", what);
}

static int expect_grants(void)
{
	const char *e = getenv("RSEQ_SLICE_EXPECT_BACKEND");

	if (e)
		return !strcmp(e, "kernel");
	return access("/sys/module/rseq_slice", F_OK) == 0;
}

/*
 * 0 where the module is loaded but cannot grant on this kernel
 * (RSEQ_SLICE_INFO_NO_GRANTS), else 1.
 */
static int module_grants(void)
{
	struct rseq_slice_info info;
	int fd = open(RSEQ_SLICE_DEVICE, O_RDWR | O_CLOEXEC), no_grants = 0;

	if (fd >= 0 && !ioctl(fd, RSEQ_SLICE_IOC_INFO, &info))
		no_grants = !!(info.flags & RSEQ_SLICE_INFO_NO_GRANTS);
	if (fd >= 0)
		close(fd);
	return !no_grants;
}

/*
 * THREADS threads on one mutex under the interposer with @env: with @want,
 * on the backend @backend, which grants unless @can_grant is 0.
 */
static void contended(const char *so, const char *env, int want, int can_grant,
		      const char *backend)
{
	static struct result r;
	long sections, grants, yields;
	char b[16] = "";
	const char *k;
	ssize_t n = -2;

	run(&r, so, "contend", want && can_grant ? "0" : "2000", env);
	print_lines("", r.out);
	print_lines("stderr: ", r.err);
	sections = summary(&r, "sections");
	grants = summary(&r, "grants");
	yields = summary(&r, "yields");
	k = strstr(r.err, " backend=");
	if (k)
		sscanf(k, " backend=%15s", b);
	sscanf(r.out, "sections %zd", &n);
	if (!WIFEXITED(r.status) || WEXITSTATUS(r.status))
		ksft_print_msg("the contended run ended with status %#x\n", r.status);
	if (want && can_grant)
		ksft_test_result(WIFEXITED(r.status) && !WEXITSTATUS(r.status) && n == sections &&
				 !strcmp(b, backend) && grants > 0,
				 "contended, backend %s: %ld sections counted of %zd, %ld grants, "
				 "%ld yields\n", backend, sections, n, grants, yields);
	else if (want)
		ksft_test_result(WIFEXITED(r.status) && !WEXITSTATUS(r.status) &&
				 n == THREADS * FIXED_SECTIONS && n == sections &&
				 !strcmp(b, backend) && grants == 0,
				 "contended, backend %s, which cannot grant here: %ld sections counted of %zd, %ld grants\n",
				 backend, sections, n, grants);
	else
		ksft_test_result(WIFEXITED(r.status) && !WEXITSTATUS(r.status) &&
				 n == THREADS * FIXED_SECTIONS && n == sections && !strcmp(b, "none"),
				 "contended, no %s backend here: %ld sections counted of %zd\n",
				 backend, sections, n);
}

/*
 * "bound": where the program's own references to the mutex calls lead
 * (its GOT): "bound libc" when both are the C library's, as with no
 * interposer, or as RSEQ_SLICE_PRELOAD=0 leaves them (rebind.c).
 */
static int bound(void)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	void *lock = (void *)pthread_mutex_lock, *unlock = (void *)pthread_mutex_unlock;

	printf("bound %s\n", libc && lock == dlsym(libc, "pthread_mutex_lock") &&
	       unlock == dlsym(libc, "pthread_mutex_unlock") ? "libc" : "interposer");
	return 0;
}

int main(int argc, char **argv)
{
	static struct result plain, with, off;
	char so[PATH_MAX], *slash;
	const char *env_so = getenv("RSEQ_SLICE_PRELOAD_SO");
	ssize_t n;

	if (argc > 1 && !strcmp(argv[1], "transcript"))
		return transcript();
	if (argc > 2 && !strcmp(argv[1], "contend"))
		return contend(atol(argv[2]));
	if (argc > 1 && !strcmp(argv[1], "bound"))
		return bound();

	if (env_so) {
		snprintf(so, sizeof(so), "%s", env_so);
	} else {
		n = readlink("/proc/self/exe", so, sizeof(so) - 64);
		if (n < 0)
			n = 0;
		so[n] = 0;
		slash = strrchr(so, '/');
		strcpy(slash ? slash + 1 : so, "librseq_slice_preload.so");
	}
	ksft_print_header();
	ksft_set_plan(11);
	if (access(so, R_OK))
		ksft_exit_fail_msg("no interposer at %s\n", so);
	ksft_print_msg("interposer %s\n", so);

	run(&plain, NULL, "transcript", NULL, NULL);
	print_lines("", plain.out);
	ksft_test_result(ran_to_end(&plain) && summary(&plain, "sections") < 0,
			 "transcript without the interposer\n");
	run(&with, so, "transcript", NULL, NULL);
	print_lines("stderr: ", with.err);
	ksft_test_result(ran_to_end(&with) && summary(&with, "sections") > 0,
			 "transcript under the interposer (its summary counts sections)\n");
	compare("transcripts identical with and without the interposer", &plain, &with);
	run(&off, so, "transcript", NULL, "RSEQ_SLICE_PRELOAD=0");
	ksft_test_result(ran_to_end(&off) && summary(&off, "sections") < 0,
			 "RSEQ_SLICE_PRELOAD=0: no summary\n");
	compare("transcripts identical with RSEQ_SLICE_PRELOAD=0", &plain, &off);

	/* Contended: every section counted once; with a backend, grants. */
	contended(so, NULL, expect_grants(), module_grants(), "kernel");
	/*
	 * The v1 ioctls: under foreign_syscall=kill (the default) a futex
	 * wake while granted would be SIGSEGV, so this also checks that the
	 * grant is yielded before the unlock.
	 */
	contended(so, "RSEQ_SLICE_PRELOAD=module", access(RSEQ_SLICE_DEVICE, F_OK) == 0,
		  module_grants(), "module");

	/*
	 * Without counting, the wrappers are the fast path (a backend here)
	 * or the real functions (none); RSEQ_SLICE_PRELOAD_BENCH=merged-stores
	 * takes the fast path anywhere (the rseq area's word, unregistered).
	 */
	run(&off, so, "transcript", NULL, "RSEQ_SLICE_PRELOAD_STATS=0");
	ksft_test_result(ran_to_end(&off) && summary(&off, "sections") < 0 && !strcmp(plain.out, off.out),
			 "transcripts identical without counting\n");
	if (strcmp(plain.out, off.out))
		print_lines("differs: ", off.out);
	run(&off, so, "transcript", NULL,
	    "RSEQ_SLICE_PRELOAD_STATS=0 RSEQ_SLICE_PRELOAD_BENCH=merged-stores");
	ksft_test_result(ran_to_end(&off) && !strcmp(plain.out, off.out),
			 "transcripts identical on the fast path (merged-stores)\n");
	if (strcmp(plain.out, off.out))
		print_lines("differs: ", off.out);
	/* The library's RSEQ_SLICE_BACKEND=none: as if there were no extension. */
	contended(so, "RSEQ_SLICE_BACKEND=none", 0, 0, "kernel");

	/*
	 * Switched off, the interposer steps out of the way: the program's
	 * calls are bound to the C library's functions again. Counting, it
	 * stays on the path (which shows that the check can tell).
	 */
	run(&off, so, "bound", NULL, "RSEQ_SLICE_PRELOAD=0");
	run(&with, so, "bound", NULL, NULL);
	print_lines("RSEQ_SLICE_PRELOAD=0: ", off.out);
	print_lines("counting: ", with.out);
	ksft_test_result(!strcmp(off.out, "bound libc\n") && !strcmp(with.out, "bound interposer\n"),
			 "RSEQ_SLICE_PRELOAD=0: the program's calls bound to the C library again\n");
	ksft_finished();
}
