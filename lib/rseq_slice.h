/* SPDX-License-Identifier: GPL-2.0 */
/*
 * librseq-slice: time slice extension for user space, whichever backend
 * the machine has. The ABI itself is in <linux/rseq_slice.h> (the module's
 * ioctls and the v1 control word); this header is the user-space side,
 * as librseq keeps rseq/abi.h apart from rseq/rseq.h:
 *
 * 1. The v1 protocol on a bare control word (registered with
 *    RSEQ_SLICE_IOC_ENABLE): rseq_slice_word_request(), the CPU-local
 *    test-and-clear rseq_slice_word_test_clear() and the whole end of a
 *    section, rseq_slice_word_end(). Inline; the few instructions they
 *    need are in rseq_slice/x86.h (x86-64, i386), rseq_slice/arm64.h
 *    (AArch64) and rseq_slice/arm.h (AArch32, compat tasks on arm64).
 * 2. The same, nestable, on a struct rseq_slice_thread (the helpers that
 *    used to live in the uapi header).
 * 3. The backend API: rseq_slice_init() picks, per thread, the kernel's
 *    own feature (Linux 7.x: prctl(PR_RSEQ_SLICE_EXTENSION) and the
 *    slice_ctrl word of struct rseq), else rseq_slice.ko's ioctls, else
 *    none; rseq_slice_cs_begin()/rseq_slice_cs_end() then work the same
 *    on each, and are cheap no-ops on "none".
 */
#ifndef RSEQ_SLICE_LIB_H
#define RSEQ_SLICE_LIB_H

#include <errno.h>
#include <stdint.h>
#include <linux/rseq_slice.h>

#if defined(__x86_64__) || defined(__i386__)
#include "rseq_slice/x86.h"
#elif defined(__aarch64__)
#include "rseq_slice/arm64.h"
#elif defined(__arm__)
#include "rseq_slice/arm.h"
#else
#error "librseq-slice supports x86 (64 and 32 bit), arm64 and AArch32 only"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define rseq_slice_barrier()	__asm__ __volatile__("" ::: "memory")

/* --- the ioctl yield, as a raw system call (no C library needed) ------- */

/* RSEQ_SLICE_IOC_YIELD on @fd: 1 if it ended a live grant, 0, or -errno. */
static inline long rseq_slice_yield_fd(int fd)
{
	return rseq_slice_arch_ioctl0(fd, RSEQ_SLICE_IOC_YIELD);
}

/* --- v1 on a bare control word ------------------------------------------ */

/* What the end of a critical section found. */
#define RSEQ_SLICE_END_SUCCESS		0	/* not interrupted (or an inner level) */
#define RSEQ_SLICE_END_SCHEDULED	1	/* interrupted without a grant */
#define RSEQ_SLICE_END_YIELDED		2	/* granted; the yield rescheduled */
#define RSEQ_SLICE_END_RACED		3	/* granted, but revoked before the yield */

static inline uint32_t rseq_slice_word_load(const uint32_t *w)
{
	return __atomic_load_n(w, __ATOMIC_RELAXED);
}

/* A plain store: the kernel only looks at the word from this CPU. */
static inline void rseq_slice_word_store(uint32_t *w, uint32_t v)
{
	__atomic_store_n(w, v, __ATOMIC_RELAXED);
	rseq_slice_barrier();
}

static inline void rseq_slice_word_request(uint32_t *w)
{
	rseq_slice_word_store(w, RSEQ_SLICE_EXT_REQUEST);
}

/*
 * Clear REQUEST; true if it was still set (the section was not
 * interrupted). A CPU-local read-modify-write: the kernel writes the word
 * only from the CPU this thread runs on, on an interrupt's return, and
 * the architecture's test-and-clear cannot lose that update (see
 * rseq_slice/x86.h and rseq_slice/arm64.h).
 */
static inline int rseq_slice_word_test_clear(uint32_t *w)
{
	rseq_slice_barrier();
	return rseq_slice_arch_test_clear(w, RSEQ_SLICE_EXT_REQUEST_BIT);
}

/*
 * The end of a v1 section on @w, yielding through @fd if it was granted:
 * RSEQ_SLICE_END_*, or a negative errno if the yield failed.
 */
static inline int rseq_slice_word_end(uint32_t *w, int fd)
{
	long ret;

	if (rseq_slice_word_test_clear(w))
		return RSEQ_SLICE_END_SUCCESS;
	/* A racy read is fine: only the kernel changes GRANTED, from this CPU. */
	if (!(rseq_slice_word_load(w) & RSEQ_SLICE_EXT_GRANTED))
		return RSEQ_SLICE_END_SCHEDULED;
	ret = rseq_slice_yield_fd(fd);
	if (ret < 0)
		return (int)ret;
	return ret == 1 ? RSEQ_SLICE_END_YIELDED : RSEQ_SLICE_END_RACED;
}

/* --- v1, nestable, on a struct rseq_slice_thread ------------------------- */

/*
 * Only the outermost rseq_slice_begin()/rseq_slice_end() pair touches the
 * control word (the upstream discussion settled that nesting belongs in
 * user space). Keep one per thread (thread-local storage), register
 * &t->ctrl with RSEQ_SLICE_IOC_ENABLE and keep the device's descriptor
 * in t->fd.
 */
struct rseq_slice_thread {
	uint32_t ctrl;	/* the control word registered with the module */
	uint32_t depth;	/* nesting depth of rseq_slice_begin() */
	int fd;		/* open RSEQ_SLICE_DEVICE */
};

static inline void rseq_slice_begin(struct rseq_slice_thread *t)
{
	if (t->depth++ == 0)
		rseq_slice_word_request(&t->ctrl);
}

/* RSEQ_SLICE_END_*, or a negative errno if the yield failed. */
static inline int rseq_slice_end(struct rseq_slice_thread *t)
{
	if (--t->depth != 0)
		return RSEQ_SLICE_END_SUCCESS;
	return rseq_slice_word_end(&t->ctrl, t->fd);
}

/* --- the backend API ------------------------------------------------------ */

enum rseq_slice_backend {
	/* No extension: begin/end are no-ops. Every thread starts here. */
	RSEQ_SLICE_BACKEND_NONE = 0,
	/* rseq_slice.ko's ioctls on RSEQ_SLICE_DEVICE, the v1 control word. */
	RSEQ_SLICE_BACKEND_MODULE = 1,
	/*
	 * The merged (Linux 7.2) ABI: prctl(PR_RSEQ_SLICE_EXTENSION), the
	 * slice_ctrl word of the thread's rseq area, rseq_slice_yield().
	 * The kernel's own implementation, or the module's on 6.1/6.12.
	 */
	RSEQ_SLICE_BACKEND_KERNEL = 2,
	/* For rseq_slice_init() only: the best one the machine has. */
	RSEQ_SLICE_BACKEND_AUTO = -1,
};

/* The merged ABI's values (Linux 7.2, uapi linux/prctl.h and linux/rseq.h). */
#define RSEQ_SLICE_PR_EXTENSION		79	/* PR_RSEQ_SLICE_EXTENSION */
#define RSEQ_SLICE_PR_GET		1	/* PR_RSEQ_SLICE_EXTENSION_GET */
#define RSEQ_SLICE_PR_SET		2	/* PR_RSEQ_SLICE_EXTENSION_SET */
#define RSEQ_SLICE_PR_ENABLE		0x01	/* PR_RSEQ_SLICE_EXT_ENABLE */
#define RSEQ_SLICE_NR_YIELD		471	/* __NR_rseq_slice_yield: x86-64, i386, arm64 */
#define RSEQ_SLICE_RSEQ_SIG		RSEQ_SLICE_ARCH_RSEQ_SIG	/* upstream's selftests' RSEQ_SIG */
#define RSEQ_SLICE_CTRL_OFFSET		28	/* offsetof(struct rseq, slice_ctrl) */

/* struct rseq_slice_ctrl of Linux 7.2, at RSEQ_SLICE_CTRL_OFFSET in struct rseq. */
struct rseq_slice_merged_ctrl {
	union {
		uint32_t all;
		struct {
			uint8_t request;
			uint8_t granted;
			uint16_t reserved;
		};
	};
};

/* One per thread; rseq_slice_init() fills it, zero means "none". */
struct rseq_slice_tls {
	int backend;				/* enum rseq_slice_backend */
	uint32_t depth;				/* nesting of rseq_slice_cs_begin() */
	struct rseq_slice_thread mod;		/* MODULE: word and descriptor */
	struct rseq_slice_merged_ctrl *kctrl;	/* KERNEL: in the rseq area */
	int own_rseq;				/* the library registered the area */
	/*
	 * The word rseq_slice_cs_begin()/end() work on, REQUEST in bit 0
	 * (the merged ABI's request byte on a little-endian machine, v1's
	 * REQUEST), or none_word on "none"; NULL before the thread's first
	 * rseq_slice_init().
	 */
	uint32_t *word;
	uint32_t none_word;
};

extern __thread struct rseq_slice_tls rseq_slice_tls;

/*
 * Enable time slice extension for the calling thread with @want (or the
 * best available for RSEQ_SLICE_BACKEND_AUTO: kernel, module, none).
 * Returns the backend now in use (>= 0), or, when a backend was asked
 * for by name and cannot be had, a negative errno (the thread is then
 * left on "none"). Calling it again first undoes the previous one.
 * Not inherited: a fork child or a new thread calls it for itself.
 */
int rseq_slice_init(enum rseq_slice_backend want);

/* Undo rseq_slice_init() for the calling thread (back to "none"). */
void rseq_slice_fini(void);

/* The calling thread's backend. */
static inline enum rseq_slice_backend rseq_slice_backend(void)
{
	return (enum rseq_slice_backend)rseq_slice_tls.backend;
}

/* "none", "module", "kernel" ("auto" and "?" for the others). */
const char *rseq_slice_backend_name(enum rseq_slice_backend b);

/*
 * The calling thread's backend in words: the name, and for "kernel"
 * whether the merged ABI comes from rseq_slice.ko (RSEQ_SLICE_DEVICE
 * exists) or from the kernel itself.
 */
const char *rseq_slice_backend_describe(void);

/*
 * Parse a name of rseq_slice_backend_name(), "auto", or "upstream" (the
 * kernel backend); -1 if unknown.
 */
int rseq_slice_backend_parse(const char *name, enum rseq_slice_backend *b);

/*
 * The word operations under rseq_slice_cs_begin()/rseq_slice_cs_end(),
 * without the depth, for callers that keep their own nesting or must run
 * code between clearing REQUEST and yielding (an interposer whose unlock
 * may enter the kernel): rseq_slice_cs_request() sets REQUEST,
 * rseq_slice_cs_clear() clears it and says what happened meanwhile,
 * rseq_slice_cs_yield() ends a grant. No-ops on "none".
 */
#define RSEQ_SLICE_END_GRANTED		4	/* rseq_slice_cs_clear() only: yield next */

static inline void rseq_slice_cs_request(void)
{
	struct rseq_slice_tls *t = &rseq_slice_tls;

	if (t->backend == RSEQ_SLICE_BACKEND_KERNEL) {
		__atomic_store_n(&t->kctrl->request, 1, __ATOMIC_RELAXED);
		rseq_slice_barrier();
	} else if (t->backend == RSEQ_SLICE_BACKEND_MODULE) {
		rseq_slice_word_request(&t->mod.ctrl);
	}
}

/*
 * Clear REQUEST: RSEQ_SLICE_END_SUCCESS (it was still set),
 * RSEQ_SLICE_END_SCHEDULED (interrupted without a grant) or
 * RSEQ_SLICE_END_GRANTED (a grant is running: rseq_slice_cs_yield()
 * before the next system call; on the merged ABI a system call ends it
 * too). Once REQUEST is clear no new grant can come.
 */
static inline int rseq_slice_cs_clear(void)
{
	struct rseq_slice_tls *t = &rseq_slice_tls;
	struct rseq_slice_merged_ctrl *c = t->kctrl;
	uint8_t was_set;

	if (t->backend == RSEQ_SLICE_BACKEND_KERNEL) {
		rseq_slice_barrier();
		/* A grant in between clears request and sets granted: seen below. */
		was_set = __atomic_load_n(&c->request, __ATOMIC_RELAXED);
		__atomic_store_n(&c->request, 0, __ATOMIC_RELAXED);
		rseq_slice_barrier();
		if (__atomic_load_n(&c->granted, __ATOMIC_RELAXED))
			return RSEQ_SLICE_END_GRANTED;
		return was_set ? RSEQ_SLICE_END_SUCCESS : RSEQ_SLICE_END_SCHEDULED;
	}
	if (t->backend == RSEQ_SLICE_BACKEND_MODULE) {
		if (rseq_slice_word_test_clear(&t->mod.ctrl))
			return RSEQ_SLICE_END_SUCCESS;
		/* A racy read is fine: only the kernel changes GRANTED, from this CPU. */
		if (rseq_slice_word_load(&t->mod.ctrl) & RSEQ_SLICE_EXT_GRANTED)
			return RSEQ_SLICE_END_GRANTED;
		return RSEQ_SLICE_END_SCHEDULED;
	}
	return RSEQ_SLICE_END_SUCCESS;
}

/* End a grant: RSEQ_SLICE_END_YIELDED, _RACED (revoked first) or -errno. */
static inline int rseq_slice_cs_yield(void)
{
	struct rseq_slice_tls *t = &rseq_slice_tls;
	long ret;

	if (t->backend == RSEQ_SLICE_BACKEND_MODULE) {
		ret = rseq_slice_yield_fd(t->mod.fd);
	} else if (t->backend == RSEQ_SLICE_BACKEND_KERNEL) {
		ret = rseq_slice_arch_syscall0(RSEQ_SLICE_NR_YIELD);
	} else {
		return RSEQ_SLICE_END_RACED;
	}
	if (ret < 0)
		return (int)ret;
	return ret == 1 ? RSEQ_SLICE_END_YIELDED : RSEQ_SLICE_END_RACED;
}

/*
 * Start a critical section; nestable, only the outermost touches the
 * word: whatever the backend, one 32-bit store of REQUEST, bit 0 of both
 * ABIs' words (the rest is clear outside a section: the kernel clears a
 * grant's bits before the thread runs user code again). As wide as the
 * end's test-and-clear: a byte store would stall its load.
 */
static inline void rseq_slice_cs_begin(void)
{
	struct rseq_slice_tls *t = &rseq_slice_tls;

	if (__builtin_expect(t->depth++ == 0, 1) && t->word)
		rseq_slice_word_store(t->word, 1);
}

/*
 * End a critical section: RSEQ_SLICE_END_* (SUCCESS for an inner level
 * and on "none"), a negative errno if the yield failed, -EINVAL for
 * an end without a begin. The common case (REQUEST still set, so no
 * grant and no preemption) is one CPU-local test-and-clear.
 */
static inline int rseq_slice_cs_end(void)
{
	struct rseq_slice_tls *t = &rseq_slice_tls;
	int ret;

	if (__builtin_expect(t->depth != 1, 0)) {
		if (t->depth == 0)
			return -EINVAL;
		t->depth--;
		return RSEQ_SLICE_END_SUCCESS;
	}
	t->depth = 0;
	rseq_slice_barrier();
	if (__builtin_expect(t->word != 0, 1) && rseq_slice_arch_test_clear(t->word, 0))
		return RSEQ_SLICE_END_SUCCESS;
	ret = rseq_slice_cs_clear();
	return ret == RSEQ_SLICE_END_GRANTED ? rseq_slice_cs_yield() : ret;
}

/* Is a grant running right now (GRANTED in the word)? */
static inline int rseq_slice_cs_granted(void)
{
	struct rseq_slice_tls *t = &rseq_slice_tls;

	if (t->backend == RSEQ_SLICE_BACKEND_KERNEL)
		return __atomic_load_n(&t->kctrl->granted, __ATOMIC_RELAXED) != 0;
	if (t->backend == RSEQ_SLICE_BACKEND_MODULE)
		return !!(rseq_slice_word_load(&t->mod.ctrl) & RSEQ_SLICE_EXT_GRANTED);
	return 0;
}

/* Is REQUEST still set (neither granted nor interrupted yet)? */
static inline int rseq_slice_cs_pending(void)
{
	struct rseq_slice_tls *t = &rseq_slice_tls;

	if (t->backend == RSEQ_SLICE_BACKEND_KERNEL)
		return __atomic_load_n(&t->kctrl->request, __ATOMIC_RELAXED) != 0;
	if (t->backend == RSEQ_SLICE_BACKEND_MODULE)
		return !!(rseq_slice_word_load(&t->mod.ctrl) & RSEQ_SLICE_EXT_REQUEST);
	return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* RSEQ_SLICE_LIB_H */
