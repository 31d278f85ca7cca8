// SPDX-License-Identifier: GPL-2.0
/*
 * pthread_mutex_*: every kind (normal, error-checking, recursive,
 * robust). A lock is taken when the call returns 0, or EOWNERDEAD (a
 * robust mutex whose owner died: held, to be made consistent); a
 * recursive re-acquire nests, as its unlock unnests.
 */
#define _GNU_SOURCE
#include "preload.h"

#include <errno.h>

static int took(int ret)
{
	return ret == 0 || ret == EOWNERDEAD ? 1 : 0;
}

/* The fast path's acquire: @call, then the section if it took the lock. */
#define FAST_ACQUIRE(call)				\
	do {						\
		int ret = call;				\
							\
		if (rsp_likely(!ret)) {			\
			rsp_acquired();			\
			return 0;			\
		}					\
		if (ret == EOWNERDEAD)			\
			rsp_acquired();			\
		return ret;				\
	} while (0)

/* The exported wrappers: one jump through rsp_tab. */
RSP_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
	return RSP_TAB(mutex_lock)(m);
}

RSP_EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
	return RSP_TAB(mutex_trylock)(m);
}

RSP_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
	return RSP_TAB(mutex_timedlock)(m, abstime);
}

RSP_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
	return RSP_TAB(mutex_clocklock)(m, clock, abstime);
}

RSP_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
	return RSP_TAB(mutex_unlock)(m);
}


static int fast_trylock(pthread_mutex_t *m)
{
	FAST_ACQUIRE(rsp_real.mutex_trylock(m));
}

static int fast_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
	FAST_ACQUIRE(rsp_real.mutex_timedlock(m, abstime));
}

static int fast_clocklock(pthread_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
	FAST_ACQUIRE(rsp_real.mutex_clocklock(m, clock, abstime));
}

/*
 * The outermost release does not look at the kind: an unlock fails only
 * where the thread does not own the mutex (EPERM: error-checking,
 * recursive, robust and priority kinds), and at depth 0 that takes the
 * slow path anyway (nothing counted). A failing unlock while the thread
 * holds exactly one counted lock (a program's error) ends that section
 * early: REQUEST clear, depth 0, the call's result unchanged; the held
 * lock's own unlock then finds nothing counted. Only the extension is
 * lost, as when the kernel clears REQUEST. Inner releases (the slow
 * path) still count only what succeeded.
 */
RSP_FAST_RELEASE(fast_unlock, (pthread_mutex_t *m), (m), rsp_real.mutex_unlock(m), 1)

/*
 * May this lock set REQUEST before the call, and make it a tail call?
 * Only if the mutex is free right now, as far as a racy peek at glibc's
 * __owner can tell (0: no owner; every kind sets it once the lock is
 * held, and glibc's place for it is ABI, the static initializers write
 * the struct). One compare says two things:
 *
 * - the lock cannot fail: a free mutex's lock returns 0 whatever its
 *   kind (EDEADLK, EAGAIN and EOWNERDEAD need an owner, ENOTRECOVERABLE
 *   leaves __owner PTHREAD_MUTEX_NOTRECOVERABLE). The one exception is a
 *   priority-protection mutex locked by a real-time thread above its
 *   ceiling (EINVAL, a program's error), which would be counted: the
 *   thread's depth stays one too high, so its sections run on with
 *   REQUEST set (grants outside its locks, each as bounded as any);
 * - the lock will not wait: a wait sleeps, and a thread that sleeps
 *   finds REQUEST cleared (rseq_slice.ko clears it at every switch, 7.2
 *   when the thread comes back with other IDs: rseq_slice_clear_user()),
 *   so a REQUEST set before a contended lock would be gone by the time
 *   the lock is held.
 */
static inline int lock_fast(const pthread_mutex_t *m)
{
#if defined(__GLIBC__) && (defined(__x86_64__) || defined(__i386__))
	int owned;

	/* One CMP on the memory operand (a compiler's load would add a MOV). */
	__asm__ ("cmpl $0, %1" : "=@ccne" (owned) : "m" (m->__data.__owner));
	return !owned;
#elif defined(__GLIBC__)
	return __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) == 0;
#else
	(void)m;
	return 0;
#endif
}

/*
 * The fast path's lock: a lock of a mutex that looks free (lock_fast())
 * that begins a section sets REQUEST before the call, which is then a
 * tail call. A preemption once REQUEST is set,
 * still before the lock is taken, gets the section its grant early (the
 * lock is about to be held; the other order leaves a window in which the
 * new holder runs without REQUEST). A mutex taken by another thread
 * between the peek and the call is waited for with REQUEST set: a grant
 * then ends at the futex system call (merged ABI: a system call ends a
 * grant), and a REQUEST the kernel cleared meanwhile is found clear at the
 * release (that section runs without one, as an interrupted one does).
 * A mutex found held, and nested locks, take the lock first and set
 * REQUEST after it (FAST_ACQUIRE).
 */
static __attribute__((noinline)) int fast_lock_slow(pthread_mutex_t *m)
{
	FAST_ACQUIRE(rsp_real.mutex_lock(m));
}

static __attribute__((noinline)) int fast_lock_inner(pthread_mutex_t *m)
{
	rsp_thr.neg += 1;	/* undo rsp_outer_acquire() */
	return fast_lock_slow(m);
}

static int fast_lock(pthread_mutex_t *m)
{
	struct rsp_thread *t = &rsp_thr;

	if (rsp_likely(lock_fast(m))) {
		if (rsp_unlikely(!rsp_outer_acquire(t)))
			return fast_lock_inner(m);
		rsp_request(t->word);
		return rsp_real.mutex_lock(m);
	}
	return fast_lock_slow(m);
}

/* The general path. */
static int general_lock(pthread_mutex_t *m)
{
	RSP_GENERAL(RSP_ACQUIRE, rsp_real.mutex_lock(m), took(ret));
}

static int general_trylock(pthread_mutex_t *m)
{
	RSP_GENERAL(RSP_ACQUIRE, rsp_real.mutex_trylock(m), took(ret));
}

static int general_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
	RSP_GENERAL(RSP_ACQUIRE, rsp_real.mutex_timedlock(m, abstime), took(ret));
}

static int general_clocklock(pthread_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
	RSP_GENERAL(RSP_ACQUIRE, rsp_real.mutex_clocklock(m, clock, abstime), took(ret));
}

static int general_unlock(pthread_mutex_t *m)
{
	RSP_GENERAL(RSP_RELEASE, rsp_real.mutex_unlock(m), ret == 0 ? -1 : 0);
}

/* A C library before 2.30 has no pthread_mutex_clocklock(). */
static int no_clocklock(pthread_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
	(void)m;
	(void)clock;
	(void)abstime;
	return ENOSYS;
}

void rsp_select_mutex(enum rsp_mode mode)
{
	switch (mode) {
	case RSP_PRE:
		break;
	case RSP_PASS:
		RSP_SET(mutex_lock, rsp_real.mutex_lock);
		RSP_SET(mutex_trylock, rsp_real.mutex_trylock);
		RSP_SET(mutex_timedlock, rsp_real.mutex_timedlock);
		RSP_SET(mutex_clocklock, rsp_real.mutex_clocklock);
		RSP_SET(mutex_unlock, rsp_real.mutex_unlock);
		break;
	case RSP_FAST:
		RSP_SET(mutex_lock, fast_lock);
		RSP_SET(mutex_trylock, fast_trylock);
		RSP_SET(mutex_timedlock, fast_timedlock);
		RSP_SET(mutex_clocklock, fast_clocklock);
		RSP_SET(mutex_unlock, fast_unlock);
		break;
	case RSP_GENERAL:
		RSP_SET(mutex_lock, general_lock);
		RSP_SET(mutex_trylock, general_trylock);
		RSP_SET(mutex_timedlock, general_timedlock);
		RSP_SET(mutex_clocklock, general_clocklock);
		RSP_SET(mutex_unlock, general_unlock);
		break;
	}
	if (mode != RSP_PRE && !rsp_real.mutex_clocklock)
		RSP_SET(mutex_clocklock, no_clocklock);
}
