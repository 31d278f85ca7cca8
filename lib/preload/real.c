// SPDX-License-Identifier: GPL-2.0
/*
 * The real pthread functions, from the next object in the lookup order
 * (glibc), resolved once before main by the constructor, or at the first
 * wrapped call when another library's constructor locks earlier; then
 * rsp_tab, what the wrappers jump to from then on.
 */
#define _GNU_SOURCE
#include "preload.h"

#include <dlfcn.h>
#include <sched.h>

struct rsp_calls rsp_real;

/* 0: not yet, 1: a thread is resolving, 2: done. */
static int resolved;
static RSP_TLS int resolving;

/*
 * What rsp_tab holds before it is set: resolve, then jump through it
 * again (inside dlsym(), this thread resolving: a success).
 */
#define PRE(field, params, ...)					\
	static int pre_##field params					\
	{								\
		if (!rsp_resolve())					\
			return 0;					\
		return RSP_TAB(field)(__VA_ARGS__);			\
	}

PRE(mutex_lock, (pthread_mutex_t *m), m)
PRE(mutex_trylock, (pthread_mutex_t *m), m)
PRE(mutex_timedlock, (pthread_mutex_t *m, const struct timespec *t), m, t)
PRE(mutex_clocklock, (pthread_mutex_t *m, clockid_t c, const struct timespec *t), m, c, t)
PRE(mutex_unlock, (pthread_mutex_t *m), m)
PRE(spin_lock, (pthread_spinlock_t *l), l)
PRE(spin_trylock, (pthread_spinlock_t *l), l)
PRE(spin_unlock, (pthread_spinlock_t *l), l)
PRE(rwlock_wrlock, (pthread_rwlock_t *l), l)
PRE(rwlock_trywrlock, (pthread_rwlock_t *l), l)
PRE(rwlock_timedwrlock, (pthread_rwlock_t *l, const struct timespec *t), l, t)
PRE(rwlock_clockwrlock, (pthread_rwlock_t *l, clockid_t c, const struct timespec *t), l, c, t)
PRE(rwlock_unlock, (pthread_rwlock_t *l), l)
PRE(cond_wait, (pthread_cond_t *cv, pthread_mutex_t *m), cv, m)
PRE(cond_timedwait, (pthread_cond_t *cv, pthread_mutex_t *m, const struct timespec *t), cv, m, t)
PRE(cond_clockwait, (pthread_cond_t *cv, pthread_mutex_t *m, clockid_t c,
		     const struct timespec *t), cv, m, c, t)

struct rsp_calls rsp_tab = {
	.mutex_lock = pre_mutex_lock,
	.mutex_trylock = pre_mutex_trylock,
	.mutex_timedlock = pre_mutex_timedlock,
	.mutex_clocklock = pre_mutex_clocklock,
	.mutex_unlock = pre_mutex_unlock,
	.spin_lock = pre_spin_lock,
	.spin_trylock = pre_spin_trylock,
	.spin_unlock = pre_spin_unlock,
	.rwlock_wrlock = pre_rwlock_wrlock,
	.rwlock_trywrlock = pre_rwlock_trywrlock,
	.rwlock_timedwrlock = pre_rwlock_timedwrlock,
	.rwlock_clockwrlock = pre_rwlock_clockwrlock,
	.rwlock_unlock = pre_rwlock_unlock,
	.cond_wait = pre_cond_wait,
	.cond_timedwait = pre_cond_timedwait,
	.cond_clockwait = pre_cond_clockwait,
};

#define RESOLVE(field, name) (*(void **)&rsp_real.field = dlsym(RTLD_NEXT, name))

static void select_all(enum rsp_mode mode)
{
	rsp_select_mutex(mode);
	rsp_select_spin(mode);
	rsp_select_rwlock(mode);
	rsp_select_cond(mode);
}

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
	/*
	 * The table last: a thread that sees a new entry finds rsp_real
	 * filled (it either went through rsp_resolve() or was created after
	 * this, both of which order it after these stores).
	 */
	select_all(rsp_pick());
	rsp_rebind();
	resolving = 0;
	__atomic_store_n(&resolved, 2, __ATOMIC_RELEASE);
	return 1;
}
