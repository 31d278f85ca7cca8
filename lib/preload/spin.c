// SPDX-License-Identifier: GPL-2.0
/* pthread_spin_*: taken when the call returns 0 (trylock: EBUSY if not). */
#define _GNU_SOURCE
#include "preload.h"

RSP_EXPORT int pthread_spin_lock(pthread_spinlock_t *l)
{
	int ret;

	if (!rsp_resolve())
		return 0;
	if (rsp_off)
		return rsp_real.spin_lock(l);
	rsp_enter(RSP_ACQUIRE);
	ret = rsp_real.spin_lock(l);
	rsp_leave(ret == 0);
	return ret;
}

RSP_EXPORT int pthread_spin_trylock(pthread_spinlock_t *l)
{
	int ret;

	if (!rsp_resolve())
		return 0;
	if (rsp_off)
		return rsp_real.spin_trylock(l);
	rsp_enter(RSP_ACQUIRE);
	ret = rsp_real.spin_trylock(l);
	rsp_leave(ret == 0);
	return ret;
}

RSP_EXPORT int pthread_spin_unlock(pthread_spinlock_t *l)
{
	int ret;

	if (!rsp_resolve())
		return 0;
	if (rsp_off)
		return rsp_real.spin_unlock(l);
	rsp_enter(RSP_RELEASE);
	ret = rsp_real.spin_unlock(l);
	rsp_leave(ret == 0 ? -1 : 0);
	return ret;
}
