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

RSP_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
	RSP_WRAP(RSP_ACQUIRE, rsp_real.mutex_lock(m), took(ret));
}

RSP_EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
	RSP_WRAP(RSP_ACQUIRE, rsp_real.mutex_trylock(m), took(ret));
}

RSP_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
	RSP_WRAP(RSP_ACQUIRE, rsp_real.mutex_timedlock(m, abstime), took(ret));
}

RSP_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
	/* A C library before 2.30 has none. */
	if (rsp_resolve() && !rsp_real.mutex_clocklock)
		return ENOSYS;
	RSP_WRAP(RSP_ACQUIRE, rsp_real.mutex_clocklock(m, clock, abstime), took(ret));
}

RSP_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
	RSP_WRAP(RSP_RELEASE, rsp_real.mutex_unlock(m), ret == 0 ? -1 : 0);
}
