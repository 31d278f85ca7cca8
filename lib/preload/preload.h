/* SPDX-License-Identifier: GPL-2.0 */
/*
 * librseq_slice_preload.so: time slice extension for programs that were
 * not written for it. The pthread lock calls are wrapped (mutex.c,
 * spin.c, rwlock.c, cond.c); a thread's critical section runs from its
 * first lock to the release of its last one (section.c); the real
 * functions come from dlsym(RTLD_NEXT) (real.c).
 *
 * Each exported wrapper is one indirect jump through rsp_tab, which the
 * first call (or the constructor) sets, once, to one of four sets:
 *
 * - pre: resolve first, then go through rsp_tab again (a lock taken in
 *   another library's constructor, before this one's);
 * - pass: the real functions themselves (RSEQ_SLICE_PRELOAD=0, or no
 *   backend for this process and nothing to count);
 * - fast: the merged ABI (or none) without counting: the real call and a
 *   few straight-line instructions around it (rsp_acquired(),
 *   RSP_FAST_RELEASE below);
 * - general: everything else (RSEQ_SLICE_PRELOAD_STATS=1, the module's
 *   ioctls, condition variable waits): rsp_enter() and rsp_leave()
 *   around the real call.
 */
#ifndef RSEQ_SLICE_PRELOAD_H
#define RSEQ_SLICE_PRELOAD_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "rseq_slice.h"

/* Hidden: reached PC-relative, not through the GOT. */
#pragma GCC visibility push(hidden)

/* The wrappers (everything else is hidden, the library too). */
#define RSP_EXPORT __attribute__((visibility("default")))
#define RSP_TLS __thread __attribute__((tls_model("initial-exec")))
#define rsp_likely(x)	__builtin_expect(!!(x), 1)
#define rsp_unlikely(x)	__builtin_expect(!!(x), 0)

/* The wrapped calls: the real ones (rsp_real), and where each wrapper jumps (rsp_tab). */
struct rsp_calls {
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

extern struct rsp_calls rsp_real, rsp_tab;

/*
 * Resolve rsp_real and set rsp_tab (once; the constructor does it before
 * main). False while this very thread is resolving: dlsym() may
 * allocate, and an allocator that locks calls back in here. The process
 * is still single threaded then, and the wrapper treats the call as an
 * uncontended one.
 */
int rsp_resolve(void);

/* Which set rsp_tab holds (see above). */
enum rsp_mode { RSP_PRE, RSP_PASS, RSP_FAST, RSP_GENERAL };

/* Each file's part of rsp_tab for @mode (rsp_resolve() calls them). */
void rsp_select_mutex(enum rsp_mode mode);
void rsp_select_spin(enum rsp_mode mode);
void rsp_select_rwlock(enum rsp_mode mode);
void rsp_select_cond(enum rsp_mode mode);

/* --- the thread's state, shared by the fast and the general paths ------- */

/*
 * neg: the fast paths' word, minus the number of locks held by the
 * wrappers' count (0 outside a section, -1 in an outermost one), so that
 * one read-modify-write instruction both counts and says whether the
 * acquire or release was the outermost (rsp_outer_acquire(),
 * rsp_outer_release()). While the thread is not enabled yet (every thread
 * starts so: the TLS image; a fork child again) @untried is set, the count
 * is in @held_untried and neg is RSP_POISON, which neither fast test
 * passes (the slow paths undo what the fast one did to it). word: the
 * 32-bit word whose bit 0 is REQUEST (the merged ABI's slice_ctrl.request
 * on a little-endian machine, byte 1 its granted), or none_word where the
 * thread has no backend.
 */
#define RSP_POISON	0x40000000

struct rsp_thread {
	int neg;
	uint32_t *word;
	unsigned int held_untried;
	uint32_t none_word;
	unsigned char untried;
	unsigned char cleared;	/* rsp_enter() cleared REQUEST in a section */
	unsigned char restart;	/* ... at its end: a new one if it goes on */
	unsigned char yield_after; /* granted at the clear: yield after the call */
};

extern RSP_TLS struct rsp_thread rsp_thr;

/* Locks held, by the wrappers' count. */
static inline unsigned int rsp_held(const struct rsp_thread *t)
{
	return t->untried ? t->held_untried : (unsigned int)-t->neg;
}

static inline void rsp_set_held(struct rsp_thread *t, unsigned int d)
{
	if (t->untried)
		t->held_untried = d;
	else
		t->neg = -(int)d;
}

/*
 * The outermost acquire's count: neg -= 1, true if it was 0 (an unsigned
 * borrow, the carry flag on x86). Not true: nested, or not enabled; neg
 * is one less than it was either way (the slow path adds it back).
 */
static inline __attribute__((always_inline)) int rsp_outer_acquire(struct rsp_thread *t)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__ goto("subl $1, %0\n\tjnc %l[inner]"
				  : : "m" (t->neg) : "cc", "memory" : inner);
	return 1;
inner:
	return 0;
#else
	return t->neg-- == 0;
#endif
}

/* The outermost release's count: neg += 1, true if it is 0 now. */
static inline __attribute__((always_inline)) int rsp_outer_release(struct rsp_thread *t)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__ goto("addl $1, %0\n\tjne %l[inner]"
				  : : "m" (t->neg) : "cc", "memory" : inner);
	return 1;
inner:
	return 0;
#else
	return ++t->neg == 0;
#endif
}

/*
 * Set REQUEST: a 32-bit store of bit 0, as wide as the test-and-clear that
 * reads it back (a byte store there stalls the BTR's load, store to load
 * forwarding failing, about 12 ns a section on this project's hosts).
 * The rest of the word is clear whenever this runs: outside a section
 * there is no grant, and the kernel clears a grant's bits before the
 * thread runs user code again (both ABIs).
 */
static inline void rsp_request(uint32_t *w)
{
	__atomic_store_n(w, 1, __ATOMIC_RELAXED);
	__asm__ __volatile__("" ::: "memory");
}

/*
 * Clear REQUEST; true if it was still set (no grant, no preemption since):
 * CPU-local, so that a grant cannot slip between a load and a store.
 */
static inline __attribute__((always_inline)) int rsp_test_clear(uint32_t *w)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__ goto("btrl $0, %0\n\tjnc %l[was_clear]"
				  : : "m" (*w) : "cc", "memory" : was_clear);
	return 1;
was_clear:
	return 0;
#else
	return rseq_slice_arch_test_clear(w, 0);
#endif
}

/* The rare cases of the fast path (section.c). */
void rsp_acquired_more(struct rsp_thread *t);
void rsp_released_inner(struct rsp_thread *t, unsigned int d);
int rsp_end_found(struct rsp_thread *t);
void rsp_inner_done(void);
void rsp_end_yield(struct rsp_thread *t);

/*
 * The fast path after a call that took a lock. The outermost acquire
 * whose call cannot fail does better (mutex.c's fast_lock()): it sets
 * REQUEST before the call and makes it a tail call.
 */
static inline __attribute__((always_inline)) void rsp_acquired(void)
{
	struct rsp_thread *t = &rsp_thr;

	if (rsp_likely(rsp_outer_acquire(t))) {
		rsp_request(t->word);
		return;
	}
	rsp_acquired_more(t);
}

/*
 * The fast path of a release: @name@params, the real call @call on
 * @args, which cannot fail where @sure. The outermost clears REQUEST
 * before the call; with it still set there (no grant, no preemption) and
 * @sure the section is over, and the call is a tail call. Anything else
 * is one of three slow paths: @name_slow (the call may fail: nothing
 * counted yet), @name_inner (an inner or uncounted release: neg already
 * one more) and @name_end (the outermost, REQUEST found clear: a grant
 * may be running; neg already 0).
 */
#define RSP_FAST_RELEASE(name, params, args, call, sure)		\
	static __attribute__((noinline)) int name##_slow params		\
	{								\
		struct rsp_thread *t = &rsp_thr;			\
		unsigned int d = rsp_held(t);				\
		int ret, granted = 0;					\
									\
		if (d != 1 || t->untried) {				\
			ret = call;					\
			if (!ret)					\
				rsp_released_inner(t, d);		\
			return ret;					\
		}							\
		/* Clear already where @name found it so. */		\
		if (!rsp_test_clear(t->word))				\
			granted = rsp_end_found(t);			\
		ret = call;						\
		if (granted)						\
			rsp_end_yield(t);				\
		if (ret) {						\
			rsp_request(t->word);	/* still held */	\
			return ret;					\
		}							\
		t->neg = 0;						\
		return 0;						\
	}								\
									\
	static __attribute__((noinline)) int name##_inner params	\
	{								\
		rsp_thr.neg -= 1;					\
		return name##_slow args;				\
	}								\
									\
	static __attribute__((noinline)) int name##_end params		\
	{								\
		struct rsp_thread *t = &rsp_thr;			\
		int ret, granted = rsp_end_found(t);			\
									\
		ret = call;						\
		if (granted)						\
			rsp_end_yield(t);				\
		if (ret) {						\
			t->neg = -1;					\
			rsp_request(t->word);	/* still held */	\
		}							\
		return ret;						\
	}								\
									\
	static int name params						\
	{								\
		struct rsp_thread *t = &rsp_thr;			\
									\
		if (rsp_likely(sure)) {					\
			if (rsp_unlikely(!rsp_outer_release(t)))	\
				return name##_inner args;		\
			if (rsp_unlikely(!rsp_test_clear(t->word)))	\
				return name##_end args;			\
			return call;					\
		}							\
		return name##_slow args;				\
	}

/* --- the general path (section.c) --------------------------------------- */

/*
 * rsp_enter() before the real call says what the call is, rsp_leave()
 * after it what it did: +1 took a lock, -1 gave one back, 0 neither
 * (failed, or a wait that holds the mutex again). Only a successful
 * acquire begins or nests a section, only a successful release ends one.
 */
enum rsp_kind {
	RSP_ACQUIRE,	/* may take a lock (and block) */
	RSP_RELEASE,	/* may give a lock back (and wake a waiter) */
	RSP_WAIT,	/* a condition variable wait: releases, sleeps, retakes */
	RSP_INNER,	/* neither, but may enter the kernel (a read unlock) */
};

void rsp_enter(enum rsp_kind kind);
void rsp_leave(int delta);

/* The general path's body: @call between rsp_enter(@kind) and rsp_leave(@delta). */
#define RSP_GENERAL(kind, call, delta)		\
	do {					\
		int ret;			\
						\
		rsp_enter(kind);		\
		ret = call;			\
		rsp_leave(delta);		\
		return ret;			\
	} while (0)

/*
 * The entry a wrapper jumps through, read with acquire ordering: entries
 * are set (release) after rsp_real, which the fast and general paths then
 * read. A control dependency does not order those loads on a weakly
 * ordered CPU: on arm64 a thread could jump to a new entry and still read
 * a stale rsp_real. A plain load on x86, one LDAR on arm64.
 */
#if defined(__x86_64__) || defined(__i386__)
/*
 * x86: every load is an acquire (TSO) and an aligned pointer's is single
 * copy atomic, so a plain read, which the compiler folds into the jump:
 * the wrapper is one instruction, jmp *rsp_tab+N(%rip).
 */
#define RSP_TAB(field)	(rsp_tab.field)
#else
#define RSP_TAB(field)	__atomic_load_n(&rsp_tab.field, __ATOMIC_ACQUIRE)
#endif

/* Set one entry of rsp_tab (a thread may be jumping through it). */
#define RSP_SET(field, fn) __atomic_store_n(&rsp_tab.field, fn, __ATOMIC_RELEASE)

/*
 * Read the environment (section.c): rsp_resolve() calls it first, so that
 * a lock taken in another library's constructor, before this one's, sees
 * it; then rsp_pick() says which set rsp_tab gets.
 */
void rsp_configure(void);
enum rsp_mode rsp_pick(void);
extern int rsp_off;

/* Bind the loaded objects' GOT slots to what rsp_tab holds (rebind.c). */
void rsp_rebind(void);

#pragma GCC visibility pop

#endif /* RSEQ_SLICE_PRELOAD_H */
