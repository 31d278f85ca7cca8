// SPDX-License-Identifier: GPL-2.0
/*
 * Merged upstream's ABI (Linux 7.2, CONFIG_RSEQ_SLICE_EXTENSION) on
 * kernels that predate it, for programs written for it:
 *
 * - prctl(PR_RSEQ_SLICE_EXTENSION, GET | SET, ...), option 79, which these
 *   kernels do not know. sys_prctl() asks security_task_prctl() first and
 *   returns its answer unless it is -ENOSYS; for option 79 only, an ftrace
 *   hook sends that call to rseq_slice_prctl() instead, the way livepatch
 *   replaces a function, so every other option runs the kernel's own code.
 *
 * The hook is registered for the module's lifetime: a thread must be able
 * to enable before anything else is armed, and it costs a compare to a
 * prctl() that is not option 79. rseq_slice_yield(), system call 471, is
 * answered in hooks.c, on the system call's way out.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ftrace.h>
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/rcupdate.h>
#include <linux/rseq.h>
#include <linux/wait_bit.h>

#include "compat.h"
#include "rseq_slice.h"

/* Merged upstream's prctl ABI (include/uapi/linux/prctl.h in 7.2). */
#define PR_RSEQ_SLICE_EXTENSION		79
#define PR_RSEQ_SLICE_EXTENSION_GET	1
#define PR_RSEQ_SLICE_EXTENSION_SET	2
#define PR_RSEQ_SLICE_EXT_ENABLE	0x01

/*
 * 7.2 answers "switched off" with the kernel-internal ENOTSUPP (524), and
 * programs written for it test for that number.
 */
#define RSEQ_SLICE_ERR_NOTSUPP		524

static bool rseq_slice_prctl_hooked;
/*
 * Callers inside rseq_slice_prctl(), which may sleep (the pin faults for
 * as long as the word's file system likes): unload waits for them. See
 * rseq_slice_merged_exit().
 */
static atomic_t rseq_slice_prctl_inflight = ATOMIC_INIT(0);

/*
 * Process context, the caller's own: is current enabled through prctl? A
 * registration whose rseq area went away ends here, as on the way out.
 */
static bool rseq_slice_prctl_enabled(void)
{
	struct rseq_slice_task *st;
	bool merged, moved;

	st = rseq_slice_task_current();
	merged = st && st->w.merged;
	moved = merged && rseq_slice_task_area_moved(st);
	if (moved)
		rseq_slice_hooks_unregister_current();
	return merged && !moved;
}

static int rseq_slice_prctl_set(unsigned long arg3)
{
	bool enable = arg3 & PR_RSEQ_SLICE_EXT_ENABLE;
	u64 ctrl;

	if (arg3 & ~PR_RSEQ_SLICE_EXT_ENABLE)
		return -EINVAL;
	if (!READ_ONCE(rseq_slice_enabled))
		return -RSEQ_SLICE_ERR_NOTSUPP;
	if (!rseq_slice_task_rseq(current))
		return -ENXIO;
	/* 7.2 only: a 32-byte registration is refused, as 7.2 refuses it. */
	if (!rseq_slice_task_rseq_usable(current))
		return -RSEQ_SLICE_ERR_NOTSUPP;
	/* Setting the current state again is a successful no-op. */
	if (enable == rseq_slice_prctl_enabled())
		return 0;
	if (!enable) {
		rseq_slice_hooks_unregister_current();
		return 0;
	}
	/*
	 * The rseq area is 32-byte aligned, so its slice_ctrl is a naturally
	 * aligned u32 inside the registered 32 bytes, which neither 6.1 nor
	 * 6.12 writes. A thread enabled through the ioctl gets EBUSY.
	 */
	ctrl = (unsigned long)rseq_slice_task_rseq(current) + RSEQ_SLICE_CTRL_OFFSET;
	return rseq_slice_hooks_register_current(ctrl, true);
}

/*
 * prctl(79, ...), in place of security_task_prctl(), with its arguments:
 * process context, may sleep, nothing held. Returns what 7.2 returns.
 */
static int rseq_slice_prctl_op(unsigned long arg2, unsigned long arg3, unsigned long arg4,
			       unsigned long arg5)
{
	if (arg4 || arg5)
		return -EINVAL;
	switch (arg2) {
	case PR_RSEQ_SLICE_EXTENSION_GET:
		if (arg3)
			return -EINVAL;
		return rseq_slice_prctl_enabled() ? PR_RSEQ_SLICE_EXT_ENABLE : 0;
	case PR_RSEQ_SLICE_EXTENSION_SET:
		return rseq_slice_prctl_set(arg3);
	default:
		return -EINVAL;
	}
}

static int rseq_slice_prctl(int option, unsigned long arg2, unsigned long arg3,
			    unsigned long arg4, unsigned long arg5)
{
	int ret = rseq_slice_prctl_op(arg2, arg3, arg4, arg5);

	/* Counted in by the hook; the last one out lets unload go on. */
	if (atomic_dec_and_test(&rseq_slice_prctl_inflight))
		wake_up_var(&rseq_slice_prctl_inflight);
	return ret;
}

/*
 * security_task_prctl() entry, every prctl() in the system: process
 * context, interrupts enabled. Anything but option 79 is let through
 * after one compare; option 79 returns from rseq_slice_prctl().
 */
static void notrace rseq_slice_prctl_hook(unsigned long ip, unsigned long parent_ip,
					  struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	if (likely((int)rseq_slice_fregs_arg(fregs, 0) != PR_RSEQ_SLICE_EXTENSION))
		return;
	atomic_inc(&rseq_slice_prctl_inflight);
	rseq_slice_fregs_set_ip(fregs, (unsigned long)rseq_slice_prctl);
}

static struct ftrace_ops rseq_slice_prctl_ops = {
	.func = rseq_slice_prctl_hook,
	.flags = RSEQ_SLICE_FTRACE_ARG_FLAGS,
};

/*
 * Module init, after rseq_slice_hooks_init(). Without the prctl (or
 * without rseq_slice_yield()'s hook point) the module still offers its
 * ioctls: a failure here is reported and the rest loads. Returns 0.
 */
int rseq_slice_merged_init(void)
{
	unsigned long addr;
	int ret;

	/* prctl(79) and 471 then get the kernel's own answers (EINVAL, ENOSYS). */
	if (!rseq_slice_merged_abi) {
		pr_info("merged ABI off (merged_abi=0): only the device's ioctls\n");
		return 0;
	}
	/* No rseq_slice_yield(), no prctl: hooks.c said why. */
	if (!rseq_slice_hooks_merged_ok())
		return 0;
	addr = rseq_slice_symbol("security_task_prctl");
	ret = addr ? ftrace_set_filter_ip(&rseq_slice_prctl_ops, addr, 0, 0) : -ENOENT;
	if (!ret)
		ret = register_ftrace_function(&rseq_slice_prctl_ops);
	if (ret) {
		pr_warn("no merged ABI: cannot hook security_task_prctl() (%d)\n", ret);
		ftrace_free_filter(&rseq_slice_prctl_ops);
		return 0;
	}
	rseq_slice_prctl_hooked = true;
	return 0;
}

/*
 * Module unload, before the registrations go: once this returns no prctl
 * can enable again and no task runs (or sleeps in) this file's code.
 */
void rseq_slice_merged_exit(void)
{
	if (!rseq_slice_prctl_hooked)
		return;
	/* Returns once no CPU runs the hook: the count is final. */
	rseq_slice_unhook(&rseq_slice_prctl_ops, "prctl");
	ftrace_free_filter(&rseq_slice_prctl_ops);
	wait_var_event(&rseq_slice_prctl_inflight, !atomic_read(&rseq_slice_prctl_inflight));
	/*
	 * A caller that counted itself out may still be a few instructions
	 * from leaving this module's text, and may be preempted there. It
	 * does not sleep there, and RCU Tasks waits for every task to pass
	 * a voluntary switch or user mode: after it, none is left in here.
	 * The same holds for 7.2's rseq_slice_yield() replacement in hooks.c,
	 * whose hook rseq_slice_hooks_stop() removed before this: only a
	 * thread enabled here is ever sent there.
	 */
	synchronize_rcu_tasks();
}
