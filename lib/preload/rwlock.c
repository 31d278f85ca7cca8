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

static __thread pthread_rwlock_t *held[HELD] __attribute__((tls_model("initial-exec")));

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
	RSP_WRAP(RSP_ACQUIRE, rsp_real.rwlock_wrlock(l), took(ret, l));
}

RSP_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
	RSP_WRAP(RSP_ACQUIRE, rsp_real.rwlock_trywrlock(l), took(ret, l));
}

RSP_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *abstime)
{
	RSP_WRAP(RSP_ACQUIRE, rsp_real.rwlock_timedwrlock(l, abstime), took(ret, l));
}

RSP_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clock,
			       const struct timespec *abstime)
{
	/* A C library before 2.30 has none. */
	if (rsp_resolve() && !rsp_real.rwlock_clockwrlock)
		return ENOSYS;
	RSP_WRAP(RSP_ACQUIRE, rsp_real.rwlock_clockwrlock(l, clock, abstime), took(ret, l));
}

RSP_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
	int ret, i;

	if (!rsp_resolve())
		return 0;
	if (rsp_off)
		return rsp_real.rwlock_unlock(l);
	i = slot_of(l);
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
