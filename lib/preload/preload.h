/* SPDX-License-Identifier: GPL-2.0 */
/*
 * librseq_slice_preload.so: time slice extension for programs that were
 * not written for it. The pthread lock calls are wrapped (mutex.c,
 * spin.c, rwlock.c, cond.c); a thread's critical section runs from its
 * first lock to the release of its last one (section.c); the real
 * functions come from dlsym(RTLD_NEXT) (real.c).
 */
#ifndef RSEQ_SLICE_PRELOAD_H
#define RSEQ_SLICE_PRELOAD_H

#include <pthread.h>
#include <time.h>

/* The wrappers (everything else is hidden, the library too). */
#define RSP_EXPORT __attribute__((visibility("default")))

/* The real functions, resolved once by rsp_resolve(). */
struct rsp_real {
	int (*mutex_lock)(pthread_mutex_t *);
	int (*mutex_trylock)(pthread_mutex_t *);
	int (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
	int (*mutex_clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *);
	int (*mutex_unlock)(pthread_mutex_t *);
	int (*spin_lock)(pthread_spinlock_t *);
	int (*spin_trylock)(pthread_spinlock_t *);
	int (*spin_unlock)(pthread_spinlock_t *);
	int (*rwlock_wrlock)(pthread_rwlock_t *);
	int (*rwlock_trywrlock)(pthread_rwlock_t *);
	int (*rwlock_timedwrlock)(pthread_rwlock_t *, const struct timespec *);
	int (*rwlock_clockwrlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
	int (*rwlock_unlock)(pthread_rwlock_t *);
	int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
	int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
	int (*cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
			      const struct timespec *);
};

extern struct rsp_real rsp_real;

/*
 * Resolve rsp_real (once; the constructor does it before main). False
 * while this very thread is resolving: dlsym() may allocate, and an
 * allocator that locks calls back in here. The process is still single
 * threaded then, and the wrapper treats the call as an uncontended one.
 */
int rsp_resolve(void);

/*
 * The section protocol, around each real call (section.c): rsp_enter()
 * before it says what the call is, rsp_leave() after it what it did:
 * +1 took a lock, -1 gave one back, 0 neither (failed, or a wait that
 * holds the mutex again). Only a successful acquire begins or nests a
 * section, only a successful release ends one.
 */
enum rsp_kind {
	RSP_ACQUIRE,	/* may take a lock (and block) */
	RSP_RELEASE,	/* may give a lock back (and wake a waiter) */
	RSP_WAIT,	/* a condition variable wait: releases, sleeps, retakes */
	RSP_INNER,	/* neither, but may enter the kernel (a read unlock) */
};

void rsp_enter(enum rsp_kind kind);
void rsp_leave(int delta);

/*
 * The body of a wrapper: @call, the real call, between rsp_enter(@kind)
 * and rsp_leave(@delta), where @delta may use the call's result as
 * "ret". Before the real functions are resolved (this thread is inside
 * dlsym()) the call counts as an uncontended success and returns 0; with
 * RSEQ_SLICE_PRELOAD=0 only the real call runs.
 */
#define RSP_WRAP(kind, call, delta)		\
	do {					\
		int ret;			\
						\
		if (!rsp_resolve())		\
			return 0;		\
		if (rsp_off)			\
			return call;		\
		rsp_enter(kind);		\
		ret = call;			\
		rsp_leave(delta);		\
		return ret;			\
	} while (0)

/*
 * Read the environment (section.c): rsp_resolve() calls it first, so that
 * a lock taken in another library's constructor, before this one's, sees
 * it. RSEQ_SLICE_PRELOAD=0 sets rsp_off: every wrapper only calls the
 * real function.
 */
void rsp_configure(void);
extern int rsp_off;

#endif /* RSEQ_SLICE_PRELOAD_H */
