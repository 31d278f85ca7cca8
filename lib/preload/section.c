// SPDX-License-Identifier: GPL-2.0
/*
 * A thread's critical section under the interposer: from the acquire of
 * its first lock to the release of its last one (a depth), REQUEST set.
 *
 * REQUEST is cleared before the real call that ends a section (an unlock
 * may wake a waiter with a futex system call). If that finds a grant
 * running, the thread must yield, and where depends on the backend:
 *
 * - kernel (the merged ABI, the default; the kernel's own or the
 *   module's): a system call while granted only ends the grant and
 *   reschedules. The real unlock runs first, so the waiter it wakes can
 *   take the lock at once, and only a grant still running after it (the
 *   unlock did not enter the kernel) is yielded.
 * - module (v1 ioctls, RSEQ_SLICE_PRELOAD=module): with the module's
 *   foreign_syscall=kill any other system call while granted is SIGSEGV.
 *   The grant is yielded before the real call, with the lock still held,
 *   and every wrapped call inside a section (a nested lock that may
 *   block, an inner unlock) clears REQUEST around itself the same way.
 *   The program's own system calls inside a section are not wrapped:
 *   that is why this backend is not the default.
 *
 * Once REQUEST is clear no new grant can come, so no call after the
 * check can meet one.
 */
#define _GNU_SOURCE
#include "preload.h"
#include "rseq_slice.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TLS __thread __attribute__((tls_model("initial-exec")))

struct rsp_thread {
	unsigned int depth;	/* locks held, by the wrappers' count */
	unsigned char tried;	/* rseq_slice_init() done for this thread */
	unsigned char cleared;	/* rsp_enter() cleared REQUEST in a section */
	unsigned char restart;	/* ... at its end: a new one if it goes on */
	unsigned char yield_after; /* granted at the clear: yield after the call */
};

static TLS struct rsp_thread thr;

int rsp_off;
static int stats_on;
static enum rseq_slice_backend want = RSEQ_SLICE_BACKEND_KERNEL;
static const char *backend_seen = "none";

enum { S_THREADS, S_SECTIONS, S_GRANTS, S_YIELDS, S_INTERRUPTED, S_NR };
static unsigned long stats[S_NR];

static void count(int which)
{
	if (stats_on)
		__atomic_fetch_add(&stats[which], 1, __ATOMIC_RELAXED);
}

/* A thread's first acquire, outside any section: enable it. */
static void enable(struct rsp_thread *t)
{
	int b;

	t->tried = 1;
	b = rseq_slice_init(want);
	if (b <= RSEQ_SLICE_BACKEND_NONE)
		return;
	__atomic_store_n(&backend_seen, rseq_slice_backend_name(b), __ATOMIC_RELAXED);
	count(S_THREADS);
}

static void yield(void)
{
	if (rseq_slice_cs_yield() == RSEQ_SLICE_END_YIELDED)
		count(S_YIELDS);
}

/* Clear REQUEST; a grant found is yielded now or after the call. */
static void clear(struct rsp_thread *t, int ending)
{
	int r = rseq_slice_cs_clear();

	t->cleared = 1;
	t->restart = ending;
	if (r == RSEQ_SLICE_END_SCHEDULED && ending)
		count(S_INTERRUPTED);
	if (r != RSEQ_SLICE_END_GRANTED)
		return;
	count(S_GRANTS);
	if (rseq_slice_backend() == RSEQ_SLICE_BACKEND_MODULE)
		yield();
	else
		t->yield_after = 1;
}

static void begin(void)
{
	count(S_SECTIONS);
	rseq_slice_cs_request();
}

void rsp_enter(enum rsp_kind kind)
{
	struct rsp_thread *t = &thr;

	if (!t->depth) {
		if (kind == RSP_ACQUIRE && !t->tried)
			enable(t);
		return;
	}
	if (kind == RSP_WAIT || (kind == RSP_RELEASE && t->depth == 1))
		clear(t, 1);
	else if (rseq_slice_backend() == RSEQ_SLICE_BACKEND_MODULE)
		clear(t, 0);	/* the call may block or wake: no grant across it */
}

void rsp_leave(int delta)
{
	struct rsp_thread *t = &thr;
	int cleared = t->cleared;

	if (t->yield_after) {
		t->yield_after = 0;
		if (rseq_slice_cs_granted())
			yield();
	}
	t->cleared = 0;
	if (delta < 0 && t->depth) {
		t->depth--;	/* an unlock of a lock not counted here is ignored */
	} else if (delta > 0 && t->depth++ == 0) {
		begin();
		return;
	}
	if (!t->depth)
		return;
	if (cleared && t->restart)
		begin();	/* the wait is over, or the unlock failed */
	else if (cleared || (!rseq_slice_cs_pending() && !rseq_slice_cs_granted()))
		rseq_slice_cs_request();	/* cleared here, or by the kernel: the call slept */
}

/* For the tests: the calling thread's depth (UINT_MAX: switched off). */
RSP_EXPORT unsigned int rseq_slice_preload_depth(void)
{
	return rsp_off ? UINT_MAX : thr.depth;
}

/*
 * For the tests and the curious: threads enabled, sections, grants,
 * yields, sections interrupted without a grant (counted only with
 * RSEQ_SLICE_PRELOAD_STATS=1). Returns the number of values filled.
 */
RSP_EXPORT int rseq_slice_preload_stats(unsigned long *v, int n)
{
	int i;

	for (i = 0; i < n && i < S_NR; i++)
		v[i] = __atomic_load_n(&stats[i], __ATOMIC_RELAXED);
	return i;
}

/*
 * A fork child is a new thread to the kernel, not enabled (its copy of
 * the word is not registered): start it over, keeping the depth (it
 * holds the locks the parent held).
 */
static void child(void)
{
	rseq_slice_fini();
	thr.tried = 0;
	thr.cleared = 0;
	thr.yield_after = 0;
	memset(stats, 0, sizeof(stats));
}

void rsp_configure(void)
{
	const char *v = getenv("RSEQ_SLICE_PRELOAD_STATS");
	enum rseq_slice_backend b;

	stats_on = v && *v && strcmp(v, "0");
	v = getenv("RSEQ_SLICE_PRELOAD");
	if (!v || !*v || !strcmp(v, "1")) {
		/*
		 * The library's RSEQ_SLICE_BACKEND, where it names one,
		 * chooses instead ("auto" stays "kernel": the module's ioctls
		 * are never the interposer's default).
		 */
		v = getenv("RSEQ_SLICE_BACKEND");
		if (v && !rseq_slice_backend_parse(v, &b) && b != RSEQ_SLICE_BACKEND_AUTO)
			want = b;
		return;
	}
	if (!strcmp(v, "0")) {
		rsp_off = 1;
	} else if (!rseq_slice_backend_parse(v, &b)) {
		want = b;
	} else {
		fprintf(stderr, "rseq_slice_preload: RSEQ_SLICE_PRELOAD=%s: not 0, 1, "
			"kernel, module, none or auto; using kernel\n", v);
	}
}

/*
 * The summary goes to a copy of stderr made now: programs may close
 * stderr in an atexit() handler (coreutils do), which runs before this
 * library's destructor.
 */
static int stats_fd = -1;

__attribute__((constructor)) static void rsp_init(void)
{
	rsp_resolve();
	if (rsp_off)
		return;
	pthread_atfork(NULL, NULL, child);
	if (stats_on)
		stats_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
}

__attribute__((destructor)) static void rsp_exit(void)
{
	if (!stats_on || rsp_off || stats_fd < 0)
		return;
	dprintf(stats_fd, "rseq_slice_preload: pid=%d backend=%s threads=%lu sections=%lu "
		"grants=%lu yields=%lu interrupted=%lu\n", (int)getpid(), backend_seen, stats[S_THREADS], stats[S_SECTIONS], stats[S_GRANTS],
		stats[S_YIELDS], stats[S_INTERRUPTED]);
}
