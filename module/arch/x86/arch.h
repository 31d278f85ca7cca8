/* SPDX-License-Identifier: GPL-2.0 */
/*
 * x86-64: what the shared mechanism needs to know of the architecture's
 * entry and exit code (included by compat.h). The exit paths themselves
 * are arch/x86/exit.c's.
 */
#ifndef RSEQ_SLICE_ARCH_H
#define RSEQ_SLICE_ARCH_H

#include <linux/entry-common.h>
#include <linux/ptrace.h>
#include <linux/thread_info.h>
#include <asm/syscall.h>
#include <asm/unistd.h>

/*
 * The registers an ftrace trampoline saved, as a struct pt_regs: x86-64
 * keeps one at the start of struct ftrace_regs on every kernel here,
 * reached through arch_ftrace_regs() on 6.12 and 7.2, directly on 6.1.
 * Without FTRACE_OPS_FL_SAVE_REGS only the argument registers, ip, sp
 * and bp are set.
 */
#ifdef arch_ftrace_regs
#define rseq_slice_fregs_pt_regs(fregs)	(&arch_ftrace_regs(fregs)->regs)
#else
#define rseq_slice_fregs_pt_regs(fregs)	(&(fregs)->regs)
#endif

/*
 * schedule()'s entry, as its hook saw it: what the unwinder needs to tell
 * a shared caller's path (exit.c). @ip is in schedule() before its
 * prologue, @sp points at the return address into schedule()'s caller,
 * @bp is the caller's.
 */
struct rseq_slice_frame {
	unsigned long ip;
	unsigned long sp;
	unsigned long bp;
};

static __always_inline struct rseq_slice_frame rseq_slice_fregs_frame(struct ftrace_regs *fregs)
{
	const struct pt_regs *regs = rseq_slice_fregs_pt_regs(fregs);

	return (struct rseq_slice_frame){ .ip = regs->ip, .sp = regs->sp, .bp = regs->bp };
}

/*
 * schedule()'s hook is an ftrace direct call (every x86-64 kernel here
 * has them): its entry calls rseq_slice_schedule_entry() (schedule.S),
 * which saves nothing (schedule() takes no arguments), returns into
 * schedule() when current's preempt notifier list is empty (six
 * instructions, the return among them) and else calls
 * rseq_slice_schedule_direct() (hooks.c). Through ftrace's trampoline
 * instead, every schedule() of every thread paid about 34 instructions
 * more for the registers it saves and restores and the ops it calls.
 */
#ifdef CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS
#define RSEQ_SLICE_SCHEDULE_DIRECT	1
void rseq_slice_schedule_entry(void);
bool rseq_slice_schedule_direct(unsigned long parent_ip, unsigned long sp, unsigned long fp);
#ifdef CONFIG_PREEMPT_NOTIFIERS
extern const unsigned long rseq_slice_current_slot;

/* current's per-CPU variable: 6.2 to 6.14 keep it in struct pcpu_hot. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0) && LINUX_VERSION_CODE < KERNEL_VERSION(6, 15, 0)
#define RSEQ_SLICE_CURRENT_TASK	pcpu_hot.current_task
#else
#define RSEQ_SLICE_CURRENT_TASK	current_task
#endif
#endif

/*
 * The trampoline's @sp points at the return address into schedule()'s
 * caller, as ftrace's saved sp does; the return into schedule() is just
 * below it, on this task's stack (read unchecked by KASAN, as the
 * unwinder reads it). Any instruction before schedule()'s prologue
 * unwinds the same.
 */
static __always_inline struct rseq_slice_frame rseq_slice_direct_frame(unsigned long sp,
								       unsigned long fp)
{
	return (struct rseq_slice_frame){
		.ip = READ_ONCE_NOCHECK(((unsigned long *)sp)[-1]),
		.sp = sp,
		.bp = fp,
	};
}
#else
#define RSEQ_SLICE_SCHEDULE_DIRECT	0
#endif

/*
 * Linux 7.2 inlined syscall_trace_enter() into the system call entry
 * (noinstr): a holder's system call is seen at the out-of-line pieces of
 * its entry work instead (hooks.c), reached through the
 * SYSCALL_WORK_SYSCALL_TRACEPOINT bit, where 6.1 and 6.12 use
 * SYSCALL_WORK_SYSCALL_AUDIT to reach syscall_trace_enter(). Only the
 * version tells: the inlining left no macro behind. The module knows the
 * 7.2 entry and exit code it was written against and no later one
 * (symbols.c refuses another 7.x at load).
 */
#if LINUX_VERSION_MAJOR > 7 || (LINUX_VERSION_MAJOR == 7 && LINUX_VERSION_PATCHLEVEL >= 2)
#define RSEQ_SLICE_ENTRY_INLINED	1
#define RSEQ_SLICE_ENTRY_KNOWN		(LINUX_VERSION_MAJOR == 7 && LINUX_VERSION_PATCHLEVEL == 2)
#define RSEQ_SLICE_ENTRY_WORK_BIT	SYSCALL_WORK_BIT_SYSCALL_TRACEPOINT
#else
#define RSEQ_SLICE_ENTRY_INLINED	0
#define RSEQ_SLICE_ENTRY_KNOWN		0
#define RSEQ_SLICE_ENTRY_WORK_BIT	SYSCALL_WORK_BIT_SYSCALL_AUDIT
#endif

/* Exit work that forbids a grant, the reschedule requests aside (grant.c). */
#define RSEQ_SLICE_EXIT_WORK		EXIT_TO_USER_MODE_WORK

/*
 * The word holding RSEQ_SLICE_ENTRY_WORK_BIT: generic entry's syscall
 * work, of which the bits in RSEQ_SLICE_ENTRY_WORK_MASK send a call
 * through the entry work.
 */
#define rseq_slice_entry_work_word(ti)	(&(ti)->syscall_work)
#define RSEQ_SLICE_ENTRY_WORK_MASK	SYSCALL_WORK_ENTER

/*
 * Skip the system call now entering, its result @ret, as a seccomp
 * filter's SECCOMP_RET_ERRNO does: the entry work then returns -1 for its
 * number, which do_syscall_64() and the ia32 entries run no handler for.
 */
static __always_inline void rseq_slice_syscall_skip(struct pt_regs *regs, long ret)
{
	regs->orig_ax = -1;
	syscall_set_return_value(current, regs, 0, ret);
}

/* Signal delivery on the way to user space, hooked at its entry. */
#define RSEQ_SLICE_SIGNAL_FUNC		"arch_do_signal_or_restart"

/* Each ftrace ops has a trampoline of its own: one ops per hook. */
#define RSEQ_SLICE_ONE_OPS		0

/*
 * How merged upstream's rseq_slice_yield() is answered (hooks.c): on 6.x
 * by fixing the -ENOSYS result of system call 471 on the way out
 * (syscall_exit_to_user_mode_prepare()); on 7.2 by replacing the weak
 * stubs that number's table entries call, which only 471 reaches.
 */
#define RSEQ_SLICE_YIELD_STUB		RSEQ_SLICE_ENTRY_INLINED
#define RSEQ_SLICE_YIELD_STUB_PARAMS	const struct pt_regs *unused
#define RSEQ_SLICE_YIELD_STUB_NAMES	"__x64_sys_rseq_slice_yield", \
					RSEQ_SLICE_YIELD_STUB_IA32
#ifdef CONFIG_IA32_EMULATION
#define RSEQ_SLICE_YIELD_STUB_IA32	"__ia32_sys_rseq_slice_yield",
#else
#define RSEQ_SLICE_YIELD_STUB_IA32
#endif
#define rseq_slice_yield_stub_call()	true

/*
 * The ioctl's number for current's system call convention, with the call's
 * first two arguments in @fd and @cmd, as syscall_get_arguments() reads
 * them: a 64-bit call's di and si, an ia32 call's bx and cx. x32 calls
 * are not told apart: their ioctl is foreign.
 */
static __always_inline long rseq_slice_ioctl_args(const struct pt_regs *regs,
						  unsigned long *fd, unsigned long *cmd)
{
#ifdef CONFIG_IA32_EMULATION
	if (in_ia32_syscall()) {
		*fd = regs->bx;
		*cmd = regs->cx;
		return __NR_ia32_ioctl;
	}
#endif
	*fd = regs->di;
	*cmd = regs->si;
	return __NR_ioctl;
}

#endif /* RSEQ_SLICE_ARCH_H */
