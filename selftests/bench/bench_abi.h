/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One interface to time slice extension for the benchmarks, whichever
 * kernel provides it:
 *   SL_NONE      never request (the baseline arms)
 *   SL_MODULE    rseq_slice.ko, /dev/rseq_slice (uapi/linux/rseq_slice.h)
 *   SL_UPSTREAM  Linux 7.x's in-kernel implementation: rseq "v2"
 *                registration, prctl(PR_RSEQ_SLICE_EXTENSION) and the
 *                rseq_slice_yield() system call. Needs glibc's own rseq
 *                registration off: GLIBC_TUNABLES=glibc.pthread.rseq=0.
 */
#ifndef BENCH_ABI_H
#define BENCH_ABI_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/rseq_slice.h>

#ifndef AT_RSEQ_FEATURE_SIZE
#define AT_RSEQ_FEATURE_SIZE		27
#endif

enum sl_mode { SL_NONE, SL_MODULE, SL_UPSTREAM };

/* Upstream (7.2) values, from ../shared/upstream-abi.md. */
#define SL_NR_RSEQ			334
#define SL_NR_UPSTREAM_YIELD		471
#define SL_PR_RSEQ_SLICE_EXTENSION	79
#define SL_PR_SET			2
#define SL_PR_ENABLE			1
#define SL_RSEQ_SIG			0x53053053

/* struct rseq as of 7.2: slice_ctrl at offset 28, request byte 0, granted byte 1. */
struct sl_rseq {
	uint32_t cpu_id_start;
	uint32_t cpu_id;
	uint64_t rseq_cs;
	uint32_t flags;
	uint32_t node_id;
	uint32_t mm_cid;
	volatile uint8_t request;
	volatile uint8_t granted;
	uint16_t reserved;
	char pad[32];
} __attribute__((aligned(64)));

struct sl_thread {
	enum sl_mode mode;
	struct rseq_slice_thread mod;		/* SL_MODULE */
	struct sl_rseq rs;			/* SL_UPSTREAM */
};

/* Enable for the calling thread: 0 or -errno. */
static inline int sl_enable(struct sl_thread *t, enum sl_mode mode)
{
	struct rseq_slice_register reg = { 0 };
	unsigned long len;

	memset(t, 0, sizeof(*t));
	t->mode = mode;
	t->mod.fd = -1;
	switch (mode) {
	case SL_NONE:
		return 0;
	case SL_MODULE:
		t->mod.fd = open(RSEQ_SLICE_DEVICE, O_RDWR | O_CLOEXEC);
		if (t->mod.fd < 0)
			return -errno;
		reg.ctrl = (uintptr_t)&t->mod.ctrl;
		return ioctl(t->mod.fd, RSEQ_SLICE_IOC_ENABLE, &reg) ? -errno : 0;
	case SL_UPSTREAM:
		len = getauxval(AT_RSEQ_FEATURE_SIZE);
		if (len < 33)
			return -ENOSYS;
		if (syscall(SL_NR_RSEQ, &t->rs, (unsigned int)sizeof(t->rs), 0, SL_RSEQ_SIG))
			return -errno;
		return prctl(SL_PR_RSEQ_SLICE_EXTENSION, SL_PR_SET, SL_PR_ENABLE, 0, 0) ?
			-errno : 0;
	}
	return -EINVAL;
}

static inline void sl_disable(struct sl_thread *t)
{
	if (t->mode == SL_MODULE && t->mod.fd >= 0) {
		ioctl(t->mod.fd, RSEQ_SLICE_IOC_DISABLE, 0);
		close(t->mod.fd);
	} else if (t->mode == SL_UPSTREAM) {
		syscall(SL_NR_RSEQ, &t->rs, (unsigned int)sizeof(t->rs), 1, SL_RSEQ_SIG);
	}
	t->mode = SL_NONE;
}

static inline void sl_begin(struct sl_thread *t)
{
	if (t->mode == SL_MODULE) {
		rseq_slice_begin(&t->mod);
	} else if (t->mode == SL_UPSTREAM) {
		t->rs.request = 1;
		__asm__ __volatile__("" ::: "memory");
	}
}

/* RSEQ_SLICE_END_* for either implementation. */
static inline int sl_end(struct sl_thread *t)
{
	if (t->mode == SL_MODULE)
		return rseq_slice_end(&t->mod);
	if (t->mode != SL_UPSTREAM)
		return RSEQ_SLICE_END_SUCCESS;
	__asm__ __volatile__("" ::: "memory");
	t->rs.request = 0;
	__asm__ __volatile__("" ::: "memory");
	if (!t->rs.granted)
		return RSEQ_SLICE_END_SUCCESS;
	return syscall(SL_NR_UPSTREAM_YIELD) == 1 ? RSEQ_SLICE_END_YIELDED :
		RSEQ_SLICE_END_RACED;
}

/* Is a grant visible in the control word right now? */
static inline int sl_granted(struct sl_thread *t)
{
	if (t->mode == SL_MODULE)
		return !!(__atomic_load_n(&t->mod.ctrl, __ATOMIC_RELAXED) & RSEQ_SLICE_EXT_GRANTED);
	if (t->mode == SL_UPSTREAM)
		return t->rs.granted;
	return 0;
}

/* Was the request consumed (granted or denied) by the kernel? */
static inline int sl_request_pending(struct sl_thread *t)
{
	if (t->mode == SL_MODULE)
		return !!(__atomic_load_n(&t->mod.ctrl, __ATOMIC_RELAXED) & RSEQ_SLICE_EXT_REQUEST);
	if (t->mode == SL_UPSTREAM)
		return t->rs.request;
	return 0;
}

/* The yield alone (the thread saw GRANTED): 1 if it rescheduled. */
static inline long sl_yield(struct sl_thread *t)
{
	if (t->mode == SL_MODULE) {
		t->mod.depth = 0;
		__atomic_fetch_and(&t->mod.ctrl, ~RSEQ_SLICE_EXT_REQUEST, __ATOMIC_RELAXED);
		return rseq_slice_yield_fd(t->mod.fd);
	}
	if (t->mode == SL_UPSTREAM) {
		t->rs.request = 0;
		return syscall(SL_NR_UPSTREAM_YIELD);
	}
	return 0;
}

static inline enum sl_mode sl_mode_parse(const char *s)
{
	if (!strcmp(s, "module"))
		return SL_MODULE;
	if (!strcmp(s, "upstream"))
		return SL_UPSTREAM;
	return SL_NONE;
}

#endif /* BENCH_ABI_H */
