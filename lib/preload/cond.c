// SPDX-License-Identifier: GPL-2.0
/*
 * pthread_cond_wait/timedwait/clockwait: the wait releases the mutex and
 * sleeps, so the section ends before the real call (REQUEST cleared, a
 * grant yielded as at an unlock, see section.c) and begins again when the
 * call returns with the mutex held again: 0, ETIMEDOUT, EOWNERDEAD. The
 * depth is left as it is across the call: the mutex is held again also
 * when the thread is cancelled in the wait (glibc retakes it before the
 * cleanup handlers run, and the unwinding passes over this frame), and an
 * error-checking mutex that was not held (EPERM) was never counted. Only
 * ENOTRECOVERABLE (a robust mutex that could not be retaken) releases it.
 */
#define _GNU_SOURCE
#include "preload.h"

#include <errno.h>

static int delta(int ret)
{
	return ret == ENOTRECOVERABLE ? -1 : 0;
}

RSP_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	/* Unresolved: as a spurious wake-up. */
	RSP_WRAP(RSP_WAIT, rsp_real.cond_wait(c, m), delta(ret));
}

RSP_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime)
{
	RSP_WRAP(RSP_WAIT, rsp_real.cond_timedwait(c, m, abstime), delta(ret));
}

RSP_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
			   const struct timespec *abstime)
{
	/* A C library before 2.30 has none. */
	if (rsp_resolve() && !rsp_real.cond_clockwait)
		return ENOSYS;
	RSP_WRAP(RSP_WAIT, rsp_real.cond_clockwait(c, m, clock, abstime), delta(ret));
}
