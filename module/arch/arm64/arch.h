/* SPDX-License-Identifier: GPL-2.0 */
/*
 * arm64: what the shared mechanism needs to know of the architecture's
 * entry and exit code (included by compat.h). arm64 has neither generic
 * entry nor generic TIF bits on the kernels this module supports (6.1,
 * 6.12): its exit-to-user loop is do_notify_resume(), its system call
 * entry work hangs off thread flags. The exit paths are arch/arm64/exit.c's.
 */
#ifndef RSEQ_SLICE_ARCH_H
#define RSEQ_SLICE_ARCH_H

#include <linux/compat.h>
#include <linux/ptrace.h>
#include <linux/thread_info.h>
#include <asm/syscall.h>
#include <asm/unistd.h>

/* Exit work that forbids a grant, the reschedule request aside (grant.c). */
#define RSEQ_SLICE_EXIT_WORK		_TIF_WORK_MASK

/*
 * A grant makes its holder's next system call take the entry work path
 * (el0_svc_common() calls syscall_trace_enter() when _TIF_SYSCALL_WORK is
 * set in the flags it read at entry), as on x86's 6.x through audit's
 * bit: with no audit context audit does nothing for it, and audit sets
 * its bit at fork only, never during a grant.
 */
#define RSEQ_SLICE_ENTRY_INLINED	0
#define RSEQ_SLICE_ENTRY_KNOWN		0
#define RSEQ_SLICE_ENTRY_WORK_BIT	TIF_SYSCALL_AUDIT
#define rseq_slice_entry_work_word(ti)	(&(ti)->flags)

/*
 * Signal delivery: arm64's do_signal() is static inside
 * do_notify_resume(); its call of get_signal() is the same point as
 * x86's arch_do_signal_or_restart() entry, before any frame is set up.
 */
#define RSEQ_SLICE_SIGNAL_FUNC		"get_signal"

/*
 * Merged upstream's rseq_slice_yield() (471, also for AArch32 tasks, as
 * in 7.2's arm and arm64 compat tables): a number past the end of both
 * tables, which invoke_syscall() answers through do_ni_syscall() and
 * sys_ni_syscall(). The hook replaces sys_ni_syscall() for 471 only, and
 * for threads enabled through prctl only; every other unimplemented call
 * runs it.
 */
#define RSEQ_SLICE_YIELD_STUB		1
#define RSEQ_SLICE_YIELD_STUB_PARAMS	void
#define RSEQ_SLICE_YIELD_STUB_NAMES	"sys_ni_syscall",
#define rseq_slice_yield_stub_call() \
	(syscall_get_nr(current, task_pt_regs(current)) == RSEQ_SLICE_NR_YIELD)

/* ioctl(2)'s number for AArch32 tasks, as in the arm EABI table. */
#define RSEQ_SLICE_NR_COMPAT_IOCTL	54

/*
 * The ioctl's number for current's system call convention, with the call's
 * first two arguments in @fd and @cmd: orig_x0 (x0 becomes the result)
 * and x1, r0 and r1 for an AArch32 task.
 */
static __always_inline long rseq_slice_ioctl_args(const struct pt_regs *regs,
						  unsigned long *fd, unsigned long *cmd)
{
	*fd = regs->orig_x0;
	*cmd = regs->regs[1];
	return is_compat_task() ? RSEQ_SLICE_NR_COMPAT_IOCTL : __NR_ioctl;
}

#endif /* RSEQ_SLICE_ARCH_H */
