/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few kernel interfaces that changed names between the kernels this
 * module supports (6.1, 6.12 and 7.2); what differs by architecture is in
 * arch/ARCH/arch.h, included last. Detected by the macro's presence,
 * not by version numbers, so that a backport does not break the build,
 * except where nothing but the version tells.
 */
#ifndef RSEQ_SLICE_COMPAT_H
#define RSEQ_SLICE_COMPAT_H

#include <linux/ftrace.h>
#include <linux/hrtimer.h>
#include <linux/sched.h>
#include <linux/version.h>

/*
 * Renamed in 6.7: a macro on x86-64 under either name, an inline function
 * on arm64 under the new one (the old one is the generic empty macro).
 */
#if !defined(ftrace_regs_set_instruction_pointer) && defined(ftrace_instruction_pointer_set)
#define ftrace_regs_set_instruction_pointer(fregs, ip) \
	ftrace_instruction_pointer_set(fregs, ip)
#endif

/*
 * Hooks that change where the hooked function returns to (IPMODIFY):
 * with DYNAMIC_FTRACE_WITH_ARGS (x86-64; arm64 since 6.2) the trampoline
 * honours an ip set in struct ftrace_regs without saving every register;
 * without it (arm64 on 6.1) only a full struct pt_regs (SAVE_REGS) is
 * read back, and ftrace_instruction_pointer_set() is an empty stub there.
 */
#ifdef CONFIG_HAVE_DYNAMIC_FTRACE_WITH_ARGS
#define RSEQ_SLICE_FTRACE_IP_FLAGS	FTRACE_OPS_FL_IPMODIFY
#define rseq_slice_fregs_set_ip(fregs, ip) ftrace_regs_set_instruction_pointer(fregs, ip)
#else
#define RSEQ_SLICE_FTRACE_IP_FLAGS	(FTRACE_OPS_FL_IPMODIFY | FTRACE_OPS_FL_SAVE_REGS)
#define rseq_slice_fregs_set_ip(fregs, ip) instruction_pointer_set(ftrace_get_regs(fregs), ip)
#endif

/*
 * An ftrace direct call on the functions in @ops's filter: the "_multi"
 * calls of 6.1 took the names of the single-function ones in 6.6, and
 * unregistering no longer frees the filter unless asked (hooks.c frees
 * the filters at unload). Only the version tells.
 */
#if LINUX_VERSION_MAJOR == 6 && LINUX_VERSION_PATCHLEVEL < 6
static inline int rseq_slice_register_direct(struct ftrace_ops *ops, unsigned long addr)
{
	int ret = register_ftrace_direct_multi(ops, addr);

	/*
	 * 6.1 leaves the ops's callback set when ftrace refuses it (another
	 * IPMODIFY user of the function: EBUSY), which would refuse every
	 * later try with EINVAL; its unregister clears the same two fields.
	 */
	if (ret) {
		ops->func = NULL;
		ops->trampoline = 0;
	}
	return ret;
}

#define rseq_slice_unregister_direct(ops, addr)	unregister_ftrace_direct_multi(ops, addr)
#else
#define rseq_slice_register_direct(ops, addr)	register_ftrace_direct(ops, addr)
#define rseq_slice_unregister_direct(ops, addr)	unregister_ftrace_direct(ops, addr, false)
#endif

/*
 * Hooks that read the hooked function's arguments and may change its ip:
 * from saved registers where the kernel can save them all (x86-64; arm64
 * on 6.1), else (arm64 on 6.12, which has no DYNAMIC_FTRACE_WITH_REGS)
 * from struct ftrace_regs, whose accessors 6.1 lacks.
 */
#ifdef CONFIG_DYNAMIC_FTRACE_WITH_REGS
#define RSEQ_SLICE_FTRACE_ARG_FLAGS	(FTRACE_OPS_FL_IPMODIFY | FTRACE_OPS_FL_SAVE_REGS)
#define rseq_slice_fregs_arg(fregs, n)	regs_get_kernel_argument(ftrace_get_regs(fregs), n)
#else
#define RSEQ_SLICE_FTRACE_ARG_FLAGS	FTRACE_OPS_FL_IPMODIFY
#define rseq_slice_fregs_arg(fregs, n)	ftrace_regs_get_argument(fregs, n)
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
 * Is the task's rseq registration one merged upstream's prctl accepts?
 * 7.2 takes only its "v2" registration (more than the original 32 bytes,
 * rseq_v2() in <linux/rseq.h>) and answers ENOTSUPP to a 32-byte one; 6.1
 * and 6.12 accept nothing larger, so 32 bytes must do there.
 */
#ifdef RSEQ_HAS_RSEQ_VERSION_MASK
#define rseq_slice_task_rseq_usable(t)	rseq_v2(t)
#else
#define rseq_slice_task_rseq_usable(t)	true
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

/*
 * The reschedule requests a grant may defer: 7.2 (PREEMPT_LAZY) has a lazy
 * one, TIF_NEED_RESCHED_LAZY, which the exit-to-user loop serves like
 * the other and upstream's grant defers too. need_resched() tests only
 * TIF_NEED_RESCHED there. 6.1 and 6.12 have no lazy bit.
 *
 * PREEMPT_RT (Debian's rt flavours) defers the lazy request only, as
 * upstream does there (kernel/entry/common.c, TIF_SLICE_EXT_SCHED): a
 * grant delays a reschedule, and on RT only the scheduler's lazy request
 * (a fair task preempting a fair task) may wait. A TIF_NEED_RESCHED
 * (a real-time task woke: an interrupt thread, ktimers, a SCHED_FIFO
 * thread) is exit work that denies the grant. Both rt flavours have a
 * real lazy bit: 6.1-rt from the RT patch set's own PREEMPT_LAZY (bit 19,
 * which clear_tsk_need_resched() leaves), 6.12-rt from the backport of
 * mainline's (bit 4, which it clears with the other; where an
 * architecture has none, that backport's thread_info.h makes the name an
 * alias of TIF_NEED_RESCHED). An RT kernel without a lazy bit of its own
 * defers nothing.
 */
#if defined(CONFIG_PREEMPT_RT) && defined(_TIF_NEED_RESCHED_LAZY) && \
	_TIF_NEED_RESCHED_LAZY != _TIF_NEED_RESCHED
#define RSEQ_SLICE_TIF_RESCHED		_TIF_NEED_RESCHED_LAZY
#define rseq_slice_resched_pending()	(read_thread_flags() & RSEQ_SLICE_TIF_RESCHED)
#elif defined(CONFIG_PREEMPT_RT)
/* 6.12-rt on arm64: nothing to defer. The module says so (RSEQ_SLICE_NO_GRANTS). */
#define RSEQ_SLICE_TIF_RESCHED		0
#define rseq_slice_resched_pending()	false
#elif defined(_TIF_NEED_RESCHED_LAZY)
#define RSEQ_SLICE_TIF_RESCHED		(_TIF_NEED_RESCHED | _TIF_NEED_RESCHED_LAZY)
#define rseq_slice_resched_pending()	(read_thread_flags() & RSEQ_SLICE_TIF_RESCHED)
#else
#define RSEQ_SLICE_TIF_RESCHED		_TIF_NEED_RESCHED
#define rseq_slice_resched_pending()	need_resched()
#endif
/* True where no reschedule request may be deferred: nothing is granted. */
#define RSEQ_SLICE_NO_GRANTS		(RSEQ_SLICE_TIF_RESCHED == 0)

/*
 * Take back the request a grant defers, current's. The RT patch set's
 * lazy bit (6.1-rt: PREEMPT_LAZY before mainline had one) is not cleared
 * by clear_tsk_need_resched(): left set, the exit loop would call
 * schedule() again at once and end the grant it just got.
 */
static inline void rseq_slice_clear_resched(void)
{
	clear_tsk_need_resched(current);
#if defined(CONFIG_PREEMPT_LAZY) && LINUX_VERSION_CODE < KERNEL_VERSION(6, 12, 0)
	clear_tsk_need_resched_lazy(current);
#endif
	clear_preempt_need_resched();
}

#include "arch.h"

#endif /* RSEQ_SLICE_COMPAT_H */
