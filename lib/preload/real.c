// SPDX-License-Identifier: GPL-2.0
/*
 * The real pthread functions, from the next object in the lookup order
 * (glibc), resolved once before main by the constructor, or at the first
 * wrapped call when another library's constructor locks earlier.
 */
#define _GNU_SOURCE
#include "preload.h"

#include <dlfcn.h>
#include <sched.h>

struct rsp_real rsp_real;

/* 0: not yet, 1: a thread is resolving, 2: done. */
static int resolved;
static __thread int resolving __attribute__((tls_model("initial-exec")));

#define RESOLVE(field, name) (*(void **)&rsp_real.field = dlsym(RTLD_NEXT, name))

int rsp_resolve(void)
{
	int old = 0;

	if (__atomic_load_n(&resolved, __ATOMIC_ACQUIRE) == 2)
		return 1;
	if (resolving)
		return 0;	/* dlsym() called back into a wrapper */
	if (!__atomic_compare_exchange_n(&resolved, &old, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		/* Another thread is at it: it takes microseconds. */
		while (__atomic_load_n(&resolved, __ATOMIC_ACQUIRE) != 2)
			sched_yield();
		return 1;
	}
	resolving = 1;
	rsp_configure();
	RESOLVE(mutex_lock, "pthread_mutex_lock");
	RESOLVE(mutex_trylock, "pthread_mutex_trylock");
	RESOLVE(mutex_timedlock, "pthread_mutex_timedlock");
	RESOLVE(mutex_clocklock, "pthread_mutex_clocklock");
	RESOLVE(mutex_unlock, "pthread_mutex_unlock");
	RESOLVE(spin_lock, "pthread_spin_lock");
	RESOLVE(spin_trylock, "pthread_spin_trylock");
	RESOLVE(spin_unlock, "pthread_spin_unlock");
	RESOLVE(rwlock_wrlock, "pthread_rwlock_wrlock");
	RESOLVE(rwlock_trywrlock, "pthread_rwlock_trywrlock");
	RESOLVE(rwlock_timedwrlock, "pthread_rwlock_timedwrlock");
	RESOLVE(rwlock_clockwrlock, "pthread_rwlock_clockwrlock");
	RESOLVE(rwlock_unlock, "pthread_rwlock_unlock");
	RESOLVE(cond_wait, "pthread_cond_wait");
	RESOLVE(cond_timedwait, "pthread_cond_timedwait");
	RESOLVE(cond_clockwait, "pthread_cond_clockwait");
	resolving = 0;
	__atomic_store_n(&resolved, 2, __ATOMIC_RELEASE);
	return 1;
}
