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
 *
 * Two paths do this (see preload.h): the fast one, for the merged ABI (or
 * none) when nothing is counted, works on the thread's word directly;
 * the general one (rsp_enter(), rsp_leave()) through the library's
 * rseq_slice_cs_*(). They share the depth, so a process may use both
 * (the fast path's condition variable waits are the general path's).
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
#include <sys/rseq.h>

RSP_TLS struct rsp_thread rsp_thr = { .neg = RSP_POISON, .untried = 1 };

#define thr rsp_thr
#define held rsp_held

int rsp_off;
static int stats_on;
/*
 * RSEQ_SLICE_PRELOAD_BENCH=merged-stores: the fast path on the rseq area,
 * unregistered (on none_word where there is no rseq area: under valgrind,
 * which counts the same instructions).
 */
static int bench_stores;
/* The wrappers are the real functions: off, or no backend. */
static int pass;
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

	if (t->untried) {
		t->untried = 0;
		t->neg = -(int)t->held_untried;
	}
	t->word = &t->none_word;
	if (rsp_unlikely(bench_stores)) {
		/* Not enabled: the word is only stored to, as the merged ABI's. */
		if (__rseq_size)
			t->word = (uint32_t *)((char *)rseq_slice_arch_thread_pointer() +
					       __rseq_offset + RSEQ_SLICE_CTRL_OFFSET);
		return;
	}
	b = rseq_slice_init(want);
	if (b <= RSEQ_SLICE_BACKEND_NONE)
		return;
	if (b == RSEQ_SLICE_BACKEND_KERNEL)
		t->word = &rseq_slice_tls.kctrl->all;
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

	if (!held(t)) {
		if (kind == RSP_ACQUIRE && t->untried)
			enable(t);
		return;
	}
	if (kind == RSP_WAIT || (kind == RSP_RELEASE && held(t) == 1))
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
	if (delta < 0 && held(t)) {
		rsp_set_held(t, held(t) - 1);	/* an unlock of a lock not counted here is ignored */
	} else if (delta > 0 && held(t) == 0) {
		rsp_set_held(t, 1);
		begin();
		return;
	} else if (delta > 0) {
		rsp_set_held(t, held(t) + 1);
	}
	if (!held(t))
		return;
	if (cleared && t->restart)
		begin();	/* the wait is over, or the unlock failed */
	else if (cleared || (!rseq_slice_cs_pending() && !rseq_slice_cs_granted()))
		rseq_slice_cs_request();	/* cleared here, or by the kernel: the call slept */
}

/* --- the fast path's rare cases ------------------------------------------- */

/* Bits 0 (request) and 8 (granted) of the merged ABI's word, or v1's 0 and 1. */
static int word_idle(const uint32_t *w)
{
	return !(__atomic_load_n(w, __ATOMIC_RELAXED) & 0x0103);
}

static int word_granted(const uint32_t *w)
{
	return ((const uint8_t *)w)[1] != 0;
}

/*
 * An acquire that rsp_outer_acquire() did not find outermost (neg is one
 * less already, undone here): nested, or the thread's first.
 */
void rsp_acquired_more(struct rsp_thread *t)
{
	t->neg += 1;
	if (t->untried) {
		if (t->held_untried) {
			t->held_untried++;	/* a fork child's inner lock */
			return;
		}
		enable(t);
		t->neg = -1;
		rsp_request(t->word);
		return;
	}
	t->neg -= 1;
	/* The call may have slept: the kernel may have cleared REQUEST. */
	if (word_idle(t->word))
		rsp_request(t->word);
}

/* A release that succeeded at depth @d other than 1. */
void rsp_released_inner(struct rsp_thread *t, unsigned int d)
{
	if (!d)
		return;		/* not counted here */
	rsp_set_held(t, d - 1);
	if (!t->untried && word_idle(t->word))
		rsp_request(t->word);
}

/* After a call inside a section that neither took nor gave a lock. */
void rsp_inner_done(void)
{
	struct rsp_thread *t = &thr;

	if (t->neg && !t->untried && word_idle(t->word))
		rsp_request(t->word);
}

/* The outermost release found REQUEST clear: is a grant running? */
int rsp_end_found(struct rsp_thread *t)
{
	return word_granted(t->word);
}

/* After the real release: a grant still running is yielded. */
void rsp_end_yield(struct rsp_thread *t)
{
	if (word_granted(t->word))
		rseq_slice_cs_yield();
}

/* For the tests: the calling thread's depth (UINT_MAX: switched off). */
RSP_EXPORT unsigned int rseq_slice_preload_depth(void)
{
	return pass ? UINT_MAX : held(&thr);
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
	if (!thr.untried) {
		thr.held_untried = held(&thr);
		thr.untried = 1;
		thr.neg = RSP_POISON;
	}
	thr.word = &thr.none_word;
	thr.cleared = 0;
	thr.yield_after = 0;
	memset(stats, 0, sizeof(stats));
}

void rsp_configure(void)
{
	const char *v = getenv("RSEQ_SLICE_PRELOAD_STATS");
	enum rseq_slice_backend b;

	stats_on = v && *v && strcmp(v, "0");
	v = getenv("RSEQ_SLICE_PRELOAD_BENCH");
	bench_stores = v && !strcmp(v, "merged-stores");
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

/*
 * Which set of wrappers the process gets (rsp_resolve(), once). The fast
 * one needs a backend without system calls around nested locks (the
 * merged ABI, or none) and nothing to count; with no backend at all (this
 * thread, the first, found none) the interposer steps aside.
 */
enum rsp_mode rsp_pick(void)
{
	if (rsp_off) {
		pass = 1;
		return RSP_PASS;
	}
	pthread_atfork(NULL, NULL, child);
	if (stats_on || (want != RSEQ_SLICE_BACKEND_KERNEL && want != RSEQ_SLICE_BACKEND_NONE))
		return RSP_GENERAL;
	if (want == RSEQ_SLICE_BACKEND_NONE)
		goto none;
	enable(&thr);
	if (bench_stores || rseq_slice_backend() != RSEQ_SLICE_BACKEND_NONE)
		return RSP_FAST;
none:
	pass = 1;
	return RSP_PASS;
}

__attribute__((constructor)) static void rsp_init(void)
{
	rsp_resolve();
	if (stats_on && !rsp_off)
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
