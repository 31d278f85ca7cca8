// SPDX-License-Identifier: GPL-2.0
/*
 * pthread_rwlock_*: write locks only. pthread_rwlock_unlock() does not
 * say which kind it releases, so each thread keeps the few rwlocks it
 * holds for writing; an unlock of any other (a read lock) passes
 * through. A thread holding more than HELD at once: the extra ones are
 * not counted (no section for them), never miscounted.
 */
#define _GNU_SOURCE
#include "preload.h"

#include <errno.h>
#include <stddef.h>

#define HELD 8

static RSP_TLS pthread_rwlock_t *held[HELD];

static int slot_of(pthread_rwlock_t *l)
{
	int i;

	for (i = 0; i < HELD; i++)
		if (held[i] == l)
			return i;
	return -1;
}

/* After a write acquire: 1 if it is counted (a free slot took it). */
static int took(int ret, pthread_rwlock_t *l)
{
	int i;

	if (ret != 0)
		return 0;
	i = slot_of(NULL);
	if (i < 0)
		return 0;
	held[i] = l;
	return 1;
}

RSP_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	return RSP_TAB(rwlock_wrlock)(l);
}

RSP_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
	return RSP_TAB(rwlock_trywrlock)(l);
}

RSP_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *abstime)
{
	return RSP_TAB(rwlock_timedwrlock)(l, abstime);
}

RSP_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clock,
					  const struct timespec *abstime)
{
	return RSP_TAB(rwlock_clockwrlock)(l, clock, abstime);
}

RSP_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
	return RSP_TAB(rwlock_unlock)(l);
}

/* The fast path. */
#define FAST_ACQUIRE(call, l)				\
	do {						\
		int ret = call;				\
							\
		if (took(ret, l))			\
			rsp_acquired();			\
		return ret;				\
	} while (0)

static int fast_wrlock(pthread_rwlock_t *l)
{
	FAST_ACQUIRE(rsp_real.rwlock_wrlock(l), l);
}

static int fast_trywrlock(pthread_rwlock_t *l)
{
	FAST_ACQUIRE(rsp_real.rwlock_trywrlock(l), l);
}

static int fast_timedwrlock(pthread_rwlock_t *l, const struct timespec *abstime)
{
	FAST_ACQUIRE(rsp_real.rwlock_timedwrlock(l, abstime), l);
}

static int fast_clockwrlock(pthread_rwlock_t *l, clockid_t clock, const struct timespec *abstime)
{
	FAST_ACQUIRE(rsp_real.rwlock_clockwrlock(l, clock, abstime), l);
}

static int write_unlock(pthread_rwlock_t *l, int i)
{
	int ret = rsp_real.rwlock_unlock(l);

	if (!ret)
		held[i] = NULL;
	return ret;
}

RSP_FAST_RELEASE(fast_write_unlock, (pthread_rwlock_t *l, int i), (l, i), write_unlock(l, i), 0)

static int fast_unlock(pthread_rwlock_t *l)
{
	int i = slot_of(l);

	int ret;

	if (i >= 0)
		return fast_write_unlock(l, i);
	/* A read lock: no section, but it may wake a writer (and sleep). */
	ret = rsp_real.rwlock_unlock(l);
	rsp_inner_done();
	return ret;
}

/* The general path. */
static int general_wrlock(pthread_rwlock_t *l)
{
	RSP_GENERAL(RSP_ACQUIRE, rsp_real.rwlock_wrlock(l), took(ret, l));
}

static int general_trywrlock(pthread_rwlock_t *l)
{
	RSP_GENERAL(RSP_ACQUIRE, rsp_real.rwlock_trywrlock(l), took(ret, l));
}

static int general_timedwrlock(pthread_rwlock_t *l, const struct timespec *abstime)
{
	RSP_GENERAL(RSP_ACQUIRE, rsp_real.rwlock_timedwrlock(l, abstime), took(ret, l));
}

static int general_clockwrlock(pthread_rwlock_t *l, clockid_t clock, const struct timespec *abstime)
{
	RSP_GENERAL(RSP_ACQUIRE, rsp_real.rwlock_clockwrlock(l, clock, abstime), took(ret, l));
}

static int general_unlock(pthread_rwlock_t *l)
{
	int ret, i = slot_of(l);

	if (i < 0) {
		/* A read lock: no section, but it may wake a writer. */
		rsp_enter(RSP_INNER);
		ret = rsp_real.rwlock_unlock(l);
		rsp_leave(0);
		return ret;
	}
	rsp_enter(RSP_RELEASE);
	ret = rsp_real.rwlock_unlock(l);
	if (ret == 0)
		held[i] = NULL;
	rsp_leave(ret == 0 ? -1 : 0);
	return ret;
}

/* A C library before 2.30 has no pthread_rwlock_clockwrlock(). */
static int no_clockwrlock(pthread_rwlock_t *l, clockid_t clock, const struct timespec *abstime)
{
	(void)l;
	(void)clock;
	(void)abstime;
	return ENOSYS;
}

void rsp_select_rwlock(enum rsp_mode mode)
{
	switch (mode) {
	case RSP_PRE:
		break;
	case RSP_PASS:
		RSP_SET(rwlock_wrlock, rsp_real.rwlock_wrlock);
		RSP_SET(rwlock_trywrlock, rsp_real.rwlock_trywrlock);
		RSP_SET(rwlock_timedwrlock, rsp_real.rwlock_timedwrlock);
		RSP_SET(rwlock_clockwrlock, rsp_real.rwlock_clockwrlock);
		RSP_SET(rwlock_unlock, rsp_real.rwlock_unlock);
		break;
	case RSP_FAST:
		RSP_SET(rwlock_wrlock, fast_wrlock);
		RSP_SET(rwlock_trywrlock, fast_trywrlock);
		RSP_SET(rwlock_timedwrlock, fast_timedwrlock);
		RSP_SET(rwlock_clockwrlock, fast_clockwrlock);
		RSP_SET(rwlock_unlock, fast_unlock);
		break;
	case RSP_GENERAL:
		RSP_SET(rwlock_wrlock, general_wrlock);
		RSP_SET(rwlock_trywrlock, general_trywrlock);
		RSP_SET(rwlock_timedwrlock, general_timedwrlock);
		RSP_SET(rwlock_clockwrlock, general_clockwrlock);
		RSP_SET(rwlock_unlock, general_unlock);
		break;
	}
	if (mode != RSP_PRE && !rsp_real.rwlock_clockwrlock)
		RSP_SET(rwlock_clockwrlock, no_clockwrlock);
}
