/* SPDX-License-Identifier: GPL-2.0 */
/*
 * arm64: what the shared mechanism needs to know of the architecture's
 * entry and exit code (included by compat.h). arm64 has neither generic
 * entry nor generic TIF bits on the kernels this module supports (6.1,
 * 6.12, 7.2): its system call entry work hangs off thread flags on all of
 * them. Its exit-to-user loop is its own do_notify_resume() on 6.1 and
 * 6.12, the generic irqentry code's exit_to_user_mode_loop() on 7.2
 * (GENERIC_IRQ_ENTRY). The exit paths are arch/arm64/exit.c's.
 */
#ifndef RSEQ_SLICE_ARCH_H
#define RSEQ_SLICE_ARCH_H

#include <linux/compat.h>
#include <linux/ptrace.h>
#include <linux/thread_info.h>
#include <linux/version.h>
#include <asm/syscall.h>
#include <asm/unistd.h>

/*
 * arm64's system call entry is its own el0_svc_common() on every kernel
 * here. A kernel that moved it to generic entry has none of what the
 * entry hooks below rely on (TIF_SYSCALL_AUDIT, arm64's
 * syscall_trace_enter() and invoke_syscall()).
 */
#ifdef CONFIG_GENERIC_ENTRY
#error "arm64 with generic (system call) entry is not a kernel this module knows"
#endif

/*
 * Merged upstream's control word, struct rseq_slice_ctrl, is two bytes
 * (request at offset 0, granted at 1) that the module reads and writes as
 * one u32: REQUEST is bit 0 and GRANTED bit 8 (rseq_slice.h) only in
 * little-endian order. A big-endian kernel would never see the bytes a
 * program sets. Debian's arm64 is little-endian; x86 always is.
 */
#ifdef CONFIG_CPU_BIG_ENDIAN
#error "big-endian arm64: the merged ABI's control word layout assumes little-endian"
#endif

/*
 * Exit work that forbids a grant, the reschedule requests aside
 * (grant.c): what the exit loop serves. 6.1 and 6.12: arm64's
 * _TIF_WORK_MASK, do_notify_resume()'s. 7.2 (GENERIC_IRQ_ENTRY, where
 * _TIF_WORK_MASK is gone): the generic loop's EXIT_TO_USER_MODE_WORK,
 * which takes in arm64's own bits (ARCH_EXIT_TO_USER_MODE_WORK: an MTE
 * fault, foreign FP state) and live patching's.
 */
#ifdef CONFIG_GENERIC_IRQ_ENTRY
#include <linux/irq-entry-common.h>
#define RSEQ_SLICE_EXIT_WORK		EXIT_TO_USER_MODE_WORK
#else
#define RSEQ_SLICE_EXIT_WORK		_TIF_WORK_MASK
#endif

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
#define RSEQ_SLICE_ENTRY_WORK_MASK	_TIF_SYSCALL_WORK

/*
 * Skip the system call now entering, its result @ret, as a tracer does:
 * syscall_trace_enter() returns the number, NO_SYSCALL, and
 * el0_svc_common() runs no handler for it.
 */
static __always_inline void rseq_slice_syscall_skip(struct pt_regs *regs, long ret)
{
	regs->syscallno = NO_SYSCALL;
	syscall_set_return_value(current, regs, 0, ret);
}

/*
 * The entry and exit code the module was written against: 6.1's, 6.12's
 * and 7.2's (exit.c checks their layout at load). A later kernel is
 * refused, as x86 refuses a 7.x after 7.2: the same names may resolve
 * and no longer mean the same.
 */
#define RSEQ_SLICE_ARM64_KNOWN \
	(LINUX_VERSION_MAJOR < 7 || (LINUX_VERSION_MAJOR == 7 && LINUX_VERSION_PATCHLEVEL <= 2))

/*
 * Signal delivery: on 6.1 and 6.12 arm64's do_signal() is static inside
 * do_notify_resume(); on 7.2 the generic loop calls arm64's
 * arch_do_signal_or_restart(). Both call get_signal() first, the same
 * point as x86's arch_do_signal_or_restart() entry, before any frame is
 * set up.
 */
#define RSEQ_SLICE_SIGNAL_FUNC		"get_signal"

/*
 * How ftrace calls a module's hooks: through per-call-site ops
 * (DYNAMIC_FTRACE_WITH_CALL_OPS, 6.2 on) each one directly; before that
 * (6.1) every patched site calls ftrace_ops_list_func(), which tests every
 * registered ops's filter on every call of every hooked function, so
 * there the hooks armed together are one ops (hooks.c).
 */
#ifdef CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS
#define RSEQ_SLICE_ONE_OPS		0
#else
#define RSEQ_SLICE_ONE_OPS		1
#endif

/*
 * schedule()'s entry, as its hook saw it: the frame pointer, the exit
 * loop's, whose frame record tells a shared caller's path (exit.c).
 */
struct rseq_slice_frame {
	unsigned long fp;
};

static __always_inline struct rseq_slice_frame rseq_slice_fregs_frame(struct ftrace_regs *fregs)
{
#ifdef CONFIG_HAVE_DYNAMIC_FTRACE_WITH_ARGS
	return (struct rseq_slice_frame){ .fp = ftrace_regs_get_frame_pointer(fregs) };
#else
	/* 6.1: the schedule() hook saves every register (compat.h). */
	return (struct rseq_slice_frame){ .fp = ftrace_get_regs(fregs)->regs[29] };
#endif
}

/*
 * schedule()'s hook is an ftrace direct call where the kernel has them
 * (6.12 and 7.2): ftrace_caller() sees the ops's direct_call at once and
 * branches to rseq_slice_schedule_entry() (schedule.S) without saving
 * the ftrace registers or calling an ops. current is a register here
 * (sp_el0), so the trampoline itself returns into schedule() when
 * current's preempt notifier list is empty (five instructions); a thread
 * with notifiers goes on to rseq_slice_schedule_direct() (hooks.c). 6.1
 * has no direct calls: an ops there.
 */
#ifdef CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS
#define RSEQ_SLICE_SCHEDULE_DIRECT	1
void rseq_slice_schedule_entry(void);
bool rseq_slice_schedule_direct(unsigned long parent_ip, unsigned long sp, unsigned long fp);

static __always_inline struct rseq_slice_frame rseq_slice_direct_frame(unsigned long sp,
								       unsigned long fp)
{
	return (struct rseq_slice_frame){ .fp = fp };
}
#else
#define RSEQ_SLICE_SCHEDULE_DIRECT	0
#endif

/*
 * Merged upstream's rseq_slice_yield() (471, also for AArch32 tasks, as
 * in 7.2's arm and arm64 compat tables): on 6.1 and 6.12 a number past
 * the end of both tables, which invoke_syscall() answers through
 * do_ni_syscall() and sys_ni_syscall(). 7.2's tables end at 471 too
 * (__NR_syscalls is 472 there, but without RSEQ_SLICE_EXTENSION the
 * table's entry is sys_ni_syscall's __arm64_sys_ni_syscall, see
 * exit.c). The hook replaces sys_ni_syscall() for 471 only, and
 * for threads enabled through prctl only; every other unimplemented call
 * runs it. Which function that is, and where ftrace patches it, is read
 * from invoke_syscall() (rseq_slice_yield_stub_find()).
 */
#define RSEQ_SLICE_YIELD_STUB		1
#define RSEQ_SLICE_YIELD_STUB_PARAMS	void
#define RSEQ_SLICE_YIELD_STUB_FIND	1
unsigned long rseq_slice_yield_stub_find(void);
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
