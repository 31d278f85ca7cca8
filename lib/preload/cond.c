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
 * A wait enters the kernel anyway: the fast path's waits are the general
 * path's.
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
	return RSP_TAB(cond_wait)(c, m);
}

RSP_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime)
{
	return RSP_TAB(cond_timedwait)(c, m, abstime);
}

RSP_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
				      const struct timespec *abstime)
{
	return RSP_TAB(cond_clockwait)(c, m, clock, abstime);
}

static int general_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	RSP_GENERAL(RSP_WAIT, rsp_real.cond_wait(c, m), delta(ret));
}

static int general_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime)
{
	RSP_GENERAL(RSP_WAIT, rsp_real.cond_timedwait(c, m, abstime), delta(ret));
}

static int general_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
			     const struct timespec *abstime)
{
	RSP_GENERAL(RSP_WAIT, rsp_real.cond_clockwait(c, m, clock, abstime), delta(ret));
}

/* A C library before 2.30 has no pthread_cond_clockwait(). */
static int no_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
			const struct timespec *abstime)
{
	(void)c;
	(void)m;
	(void)clock;
	(void)abstime;
	return ENOSYS;
}

void rsp_select_cond(enum rsp_mode mode)
{
	switch (mode) {
	case RSP_PRE:
		break;
	case RSP_PASS:
		RSP_SET(cond_wait, rsp_real.cond_wait);
		RSP_SET(cond_timedwait, rsp_real.cond_timedwait);
		RSP_SET(cond_clockwait, rsp_real.cond_clockwait);
		break;
	case RSP_FAST:
	case RSP_GENERAL:
		RSP_SET(cond_wait, general_wait);
		RSP_SET(cond_timedwait, general_timedwait);
		RSP_SET(cond_clockwait, general_clockwait);
		break;
	}
	if (mode != RSP_PRE && !rsp_real.cond_clockwait)
		RSP_SET(cond_clockwait, no_clockwait);
}
