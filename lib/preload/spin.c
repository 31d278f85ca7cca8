// SPDX-License-Identifier: GPL-2.0
/* pthread_spin_*: taken when the call returns 0 (trylock: EBUSY if not). */
#define _GNU_SOURCE
#include "preload.h"

RSP_EXPORT int pthread_spin_lock(pthread_spinlock_t *l)
{
	RSP_WRAP(RSP_ACQUIRE, rsp_real.spin_lock(l), ret == 0);
}

RSP_EXPORT int pthread_spin_trylock(pthread_spinlock_t *l)
{
	RSP_WRAP(RSP_ACQUIRE, rsp_real.spin_trylock(l), ret == 0);
}

RSP_EXPORT int pthread_spin_unlock(pthread_spinlock_t *l)
{
	RSP_WRAP(RSP_RELEASE, rsp_real.spin_unlock(l), ret == 0 ? -1 : 0);
}
