/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * rseq_slice: time slice extension for user space on kernels that lack
 * CONFIG_RSEQ_SLICE_EXTENSION, as a loadable module.
 *
 * The control word and its bits mean what they mean in the seed series
 * ("rseq: Implement time slice extension mechanism", v1): a thread sets
 * REQUEST before a critical section; if an interrupt returns to user space
 * with a reschedule pending, the kernel may clear REQUEST, set GRANTED and
 * let the thread run on for a short while. At the end of the critical
 * section the thread clears REQUEST with a CPU-local test-and-clear; if
 * that finds REQUEST already cleared and GRANTED set, it must yield at once
 * with RSEQ_SLICE_IOC_YIELD.
 *
 * Differences from upstream, forced by being a module: the control word is
 * registered with RSEQ_SLICE_IOC_ENABLE instead of living in struct rseq,
 * and enable/yield are ioctls on RSEQ_SLICE_DEVICE instead of prctl() and
 * the rseq_slice_yield() system call. All ioctls act on the calling thread,
 * not on the file: the file is only the way in.
 *
 * This header is the ABI only. The user-space protocol (begin/end of a
 * critical section, nesting, the yield) is librseq-slice's, lib/rseq_slice.h.
 */
#ifndef _UAPI_LINUX_RSEQ_SLICE_H
#define _UAPI_LINUX_RSEQ_SLICE_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define RSEQ_SLICE_DEVICE		"/dev/rseq_slice"
#define RSEQ_SLICE_ABI_VERSION		1

/* Bits of the control word, as in v1 of the upstream series. */
#define RSEQ_SLICE_EXT_REQUEST_BIT	0
#define RSEQ_SLICE_EXT_GRANTED_BIT	1
#define RSEQ_SLICE_EXT_REQUEST		(1U << RSEQ_SLICE_EXT_REQUEST_BIT)
#define RSEQ_SLICE_EXT_GRANTED		(1U << RSEQ_SLICE_EXT_GRANTED_BIT)

/**
 * struct rseq_slice_register - argument of RSEQ_SLICE_IOC_ENABLE
 * @ctrl:	user address of the thread's control word, a naturally
 *		aligned __u32 in private writable memory
 * @flags:	must be 0
 * @reserved:	must be 0
 */
struct rseq_slice_register {
	__u64 ctrl;
	__u32 flags;
	__u32 reserved;
};

/* struct rseq_slice_info.flags */
#define RSEQ_SLICE_INFO_ENABLED		(1U << 0)	/* module parameter enabled=1 */
#define RSEQ_SLICE_INFO_DEBUG		(1U << 1)	/* module parameter debug=1 */
#define RSEQ_SLICE_INFO_ABORT		(1U << 2)	/* foreign_syscall=abort (else kill) */
/*
 * This kernel has no reschedule request a grant may defer, so every
 * REQUEST is denied: PREEMPT_RT without a lazy reschedule bit (Debian's
 * 6.12 rt-arm64), where every request may come from a real-time task.
 */
#define RSEQ_SLICE_INFO_NO_GRANTS	(1U << 3)

/**
 * struct rseq_slice_info - argument of RSEQ_SLICE_IOC_INFO
 * @abi_version:	RSEQ_SLICE_ABI_VERSION of the loaded module
 * @grant_ns:		current length of a grant, in nanoseconds
 * @grant_ns_min:	smallest value grant_ns accepts
 * @grant_ns_max:	largest value grant_ns accepts
 * @flags:		RSEQ_SLICE_INFO_*
 * @reserved:		zero; room to grow
 */
struct rseq_slice_info {
	__u32 abi_version;
	__u32 grant_ns;
	__u32 grant_ns_min;
	__u32 grant_ns_max;
	__u32 flags;
	__u32 reserved[11];
};

#define RSEQ_SLICE_IOC_TYPE		0xB9
/* Register the calling thread's control word and enable extensions. */
#define RSEQ_SLICE_IOC_ENABLE		_IOW(RSEQ_SLICE_IOC_TYPE, 0, struct rseq_slice_register)
/* Disable for the calling thread and forget its control word. */
#define RSEQ_SLICE_IOC_DISABLE		_IO(RSEQ_SLICE_IOC_TYPE, 1)
/* 1 if the calling thread is enabled, else 0. */
#define RSEQ_SLICE_IOC_GET		_IO(RSEQ_SLICE_IOC_TYPE, 2)
/* End a grant and reschedule: 1 if it rescheduled (a live grant), else 0. */
#define RSEQ_SLICE_IOC_YIELD		_IO(RSEQ_SLICE_IOC_TYPE, 3)
/* Describe the module's limits and settings. */
#define RSEQ_SLICE_IOC_INFO		_IOR(RSEQ_SLICE_IOC_TYPE, 4, struct rseq_slice_info)

#endif /* _UAPI_LINUX_RSEQ_SLICE_H */
