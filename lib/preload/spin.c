// SPDX-License-Identifier: GPL-2.0
/* pthread_spin_*: taken when the call returns 0 (trylock: EBUSY if not). */
#define _GNU_SOURCE
#include "preload.h"

RSP_EXPORT int pthread_spin_lock(pthread_spinlock_t *l)
{
	return RSP_TAB(spin_lock)(l);
}

RSP_EXPORT int pthread_spin_trylock(pthread_spinlock_t *l)
{
	return RSP_TAB(spin_trylock)(l);
}

RSP_EXPORT int pthread_spin_unlock(pthread_spinlock_t *l)
{
	return RSP_TAB(spin_unlock)(l);
}

static int fast_lock(pthread_spinlock_t *l)
{
	int ret = rsp_real.spin_lock(l);

	if (rsp_likely(!ret))
		rsp_acquired();
	return ret;
}

static int fast_trylock(pthread_spinlock_t *l)
{
	int ret = rsp_real.spin_trylock(l);

	if (!ret)
		rsp_acquired();
	return ret;
}

/* glibc's pthread_spin_unlock() is a store and "return 0". */
#ifdef __GLIBC__
#define SPIN_UNLOCK_SURE	1
#else
#define SPIN_UNLOCK_SURE	0
#endif

RSP_FAST_RELEASE(fast_unlock, (pthread_spinlock_t *l), (l), rsp_real.spin_unlock(l),
		 SPIN_UNLOCK_SURE)

static int general_lock(pthread_spinlock_t *l)
{
	RSP_GENERAL(RSP_ACQUIRE, rsp_real.spin_lock(l), ret == 0);
}

static int general_trylock(pthread_spinlock_t *l)
{
	RSP_GENERAL(RSP_ACQUIRE, rsp_real.spin_trylock(l), ret == 0);
}

static int general_unlock(pthread_spinlock_t *l)
{
	RSP_GENERAL(RSP_RELEASE, rsp_real.spin_unlock(l), ret == 0 ? -1 : 0);
}

void rsp_select_spin(enum rsp_mode mode)
{
	switch (mode) {
	case RSP_PRE:
		break;
	case RSP_PASS:
		RSP_SET(spin_lock, rsp_real.spin_lock);
		RSP_SET(spin_trylock, rsp_real.spin_trylock);
		RSP_SET(spin_unlock, rsp_real.spin_unlock);
		break;
	case RSP_FAST:
		RSP_SET(spin_lock, fast_lock);
		RSP_SET(spin_trylock, fast_trylock);
		RSP_SET(spin_unlock, fast_unlock);
		break;
	case RSP_GENERAL:
		RSP_SET(spin_lock, general_lock);
		RSP_SET(spin_trylock, general_trylock);
		RSP_SET(spin_unlock, general_unlock);
		break;
	}
}
