/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few kernel interfaces that changed names between the kernels this
 * module supports (6.1 and 6.12), and those it must compile against to
 * refuse to load cleanly (7.x). Detected by the macro's presence, not by
 * version numbers, so that a backport does not break the build.
 */
#ifndef RSEQ_SLICE_COMPAT_H
#define RSEQ_SLICE_COMPAT_H

#include <linux/ftrace.h>
#include <linux/hrtimer.h>
#include <linux/sched.h>
#include <linux/version.h>

/* Renamed in 6.7; both are macros on x86-64. */
#ifndef ftrace_regs_set_instruction_pointer
#define ftrace_regs_set_instruction_pointer(fregs, ip) \
	ftrace_instruction_pointer_set(fregs, ip)
#endif

/*
 * The task's registered rseq area: task_struct::rseq on 6.1 and 6.12,
 * task_struct::rseq.usrptr since the rseq rework (7.2 has it: struct
 * rseq_data in <linux/rseq_types.h>, which defines
 * RSEQ_HAS_RSEQ_VERSION_MASK).
 */
#ifdef RSEQ_HAS_RSEQ_VERSION_MASK
#define rseq_slice_task_rseq(t)	((t)->rseq.usrptr)
#else
#define rseq_slice_task_rseq(t)	((t)->rseq)
#endif

/*
 * hrtimer_setup() (6.13) replaced hrtimer_init() plus the assignment of
 * ->function, which later kernels removed. Both are functions, so this one
 * goes by version: every kernel before 6.13 has hrtimer_init().
 */
static inline void rseq_slice_hrtimer_setup(struct hrtimer *timer,
					    enum hrtimer_restart (*fn)(struct hrtimer *),
					    clockid_t clock, enum hrtimer_mode mode)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
	hrtimer_setup(timer, fn, clock, mode);
#else
	hrtimer_init(timer, clock, mode);
	timer->function = fn;
#endif
}

#endif /* RSEQ_SLICE_COMPAT_H */
