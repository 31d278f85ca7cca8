// SPDX-License-Identifier: GPL-2.0
/*
 * Where the module hooks into the kernel.
 *
 * - schedule(), by an ftrace direct call to a trampoline of the module's
 *   own (arch/ARCH/schedule.S; on arm64's 6.1, which has no direct calls,
 *   by ftrace with IPMODIFY): the exit-to-user loop's call to it is where
 *   a reschedule is about to happen on the way back to user space; a
 *   grant there returns to the caller at once (6.1-arm64: redirects the
 *   call to an empty function, the way livepatch redirects a patched
 *   function). Every thread that is not registered is let through after
 *   one compare. While another ftrace user shares schedule(), ftrace
 *   calls the ops's callback instead, which decides the same way.
 * - syscall_trace_enter(), by ftrace: reached only by threads with syscall
 *   work set, which a grant sets for its holder. 7.2 inlines it into the
 *   (noinstr) system call entry: there the hook is on its out-of-line
 *   pieces instead, whichever the holder reaches first.
 * - on 6.1 and 6.12 syscall_exit_to_user_mode_prepare(), on 7.2 the stubs
 *   of its unimplemented rseq_slice_yield() (IPMODIFY), by ftrace, while
 *   some thread is enabled through prctl: merged upstream's yield.
 * - arch_do_signal_or_restart(), by ftrace: a signal delivered to a holder
 *   ends its grant first, so the handler (and its rt_sigreturn, a system
 *   call) never runs inside a grant.
 * - a preempt notifier of each registered thread (switch.c): a switch
 *   away from a holder ends its grant, and clears a REQUEST still set.
 * - the sched_process_exit and sched_process_exec tracepoints: a thread's
 *   registration ends with the thread or its program.
 *
 * The first four cost every thread something and are registered only
 * while the mechanism is enabled and some thread is registered, under
 * rseq_slice_hooks_mutex. They go a second after the last registration
 * does, not at once: patching kernel text is slow (and stops every CPU
 * briefly), and programs whose threads come and go should not pay it for
 * every thread. The notifiers cost other threads two list tests per
 * switch while anybody is registered (their static key), and act only
 * while the first four are registered. The last two cost a load and a
 * compare while nobody is registered and stay for the module's lifetime,
 * because registrations outlive enabled=0.
 *
 * What each hook decides lives here; grant.c and task.c do it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/ftrace.h>
#include <linux/kernel.h>
#include <linux/lockdep.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task_stack.h>
#include <linux/trace_recursion.h>
#include <linux/tracepoint.h>
#include <linux/workqueue.h>
#include <asm/syscall.h>
#include <asm/unistd.h>

#include "compat.h"
#include "rseq_slice.h"

static DEFINE_MUTEX(rseq_slice_hooks_mutex);
static bool rseq_slice_armed;	/* the hot hooks are registered */
static bool rseq_slice_yield_armed;	/* the rseq_slice_yield() hook is */
static bool rseq_slice_yield_hookable;	/* its filter is set: the merged ABI works */
static bool rseq_slice_ready;	/* module init finished, unload not begun */
static bool rseq_slice_stuck;	/* a hook could not be removed: module pinned */
static const struct file_operations *rseq_slice_fops;	/* the device's */

static struct tracepoint *rseq_slice_tp_exit;
static struct tracepoint *rseq_slice_tp_exec;

/*
 * The exit-to-user loop is about to call schedule() for current, whose
 * registration is @st (@kind says which return path it serves, @f where
 * schedule() was entered). Preemption disabled, interrupts enabled
 * (arm64's 6.1: disabled). Returns true if current got a grant:
 * schedule() is skipped.
 *
 * rseq_slice_exit_wanted() found a grant or a REQUEST before preemption
 * was disabled; either may have gone since (the grant's timer, a
 * preemption whose switch cleared REQUEST): the holder is tested again
 * here, REQUEST again by rseq_slice_give(), with interrupts disabled.
 */
static bool rseq_slice_exit_to_user(struct rseq_slice_task *st, enum rseq_slice_exit kind,
				    const struct rseq_slice_frame *f)
{
	lockdep_assert_preemption_disabled();
	/*
	 * The holder asked to reschedule again (a second request, or the
	 * timer's): the grant is revoked and schedule() runs.
	 */
	if (unlikely(rseq_slice_grant_holder() == current)) {
		rseq_slice_grant_end_current(RSEQ_SLICE_BY_REVOKE);
		return false;
	}
	/*
	 * The rseq area a prctl registration follows is gone or moved: the
	 * extension ended with it. Never sleeps (the unpin is deferred).
	 */
	if (unlikely(rseq_slice_task_area_moved(st))) {
		rseq_slice_hooks_unregister_current();
		return false;
	}
	/* Grants are given on the return from interrupts only. */
	if (kind != RSEQ_SLICE_EXIT_IRQ) {
		kind = rseq_slice_exit_resolve(kind, f);
		if (unlikely(kind == RSEQ_SLICE_EXIT_UNRESOLVED))
			rseq_slice_grant_count_unresolved();
		if (kind != RSEQ_SLICE_EXIT_IRQ)
			return false;
	}
	return rseq_slice_grant_try(&st->w);
}

/*
 * A registered thread's call of schedule() from an exit path: is there
 * anything to do? Only if it holds this CPU's grant (a second reschedule
 * revokes it) or asks for one; every other call, the reschedule a yield
 * asked for on its way out among them, needs neither preemption disabled
 * nor the caller's path. Returns current's registration if so, else
 * NULL. Preemption as the caller has it: only a holder can match itself
 * in whatever CPU's holder this reads (it cannot move while it holds),
 * and the registration is current's own (a holder is registered).
 */
static __always_inline struct rseq_slice_task *rseq_slice_exit_wanted(void)
{
	struct rseq_slice_task *st = rseq_slice_task_current();

	if (likely(st) && (unlikely(rseq_slice_grant_holder() == current) ||
			   rseq_slice_word_requested(&st->w)))
		return st;
	return NULL;
}

/*
 * The schedule() hook's work for a caller in an exit path's box, with
 * preemption disabled: the per-CPU grant stays this CPU's. Returns true
 * if schedule() is to be skipped.
 *
 * No recursion lock (ftrace's would cost 24 instructions of every grant):
 * this runs only at schedule()'s entry, which is never reached from
 * interrupt or NMI context, and nothing below calls schedule() (it
 * neither sleeps nor waits, preemption being disabled), so the hook
 * cannot be entered again before it returns. Whatever traces the
 * functions it calls (another ftrace user, a kprobe) runs in their own
 * recursion protection. Through ftrace's list, the list function's own
 * recursion lock is held around this too.
 */
static __always_inline bool rseq_slice_schedule_exit(struct rseq_slice_task *st,
						     unsigned long parent_ip,
						     const struct rseq_slice_frame *f)
{
	enum rseq_slice_exit kind;
	bool skip = false;

	preempt_disable_notrace();
	kind = rseq_slice_exit_caller(parent_ip);
	if (kind != RSEQ_SLICE_EXIT_OTHER)
		skip = rseq_slice_exit_to_user(st, kind, f);
	preempt_enable_notrace();
	return skip;
}

#if RSEQ_SLICE_SCHEDULE_DIRECT
#ifdef CONFIG_PREEMPT_NOTIFIERS
/*
 * For the trampolines, which test current's preempt notifier list before
 * they save anything: where the list lies in struct task_struct, which an
 * assembler file cannot read.
 */
const unsigned long rseq_slice_notifiers_offset = offsetof(struct task_struct, preempt_notifiers);
#endif

/*
 * The direct path's work for a call from an exit path's box, out of
 * line, so that rseq_slice_schedule_direct()'s test for every other call
 * needs no stack frame.
 */
static noinline bool notrace rseq_slice_schedule_direct_exit(struct rseq_slice_task *st,
							     unsigned long parent_ip,
							     unsigned long sp, unsigned long fp)
{
	struct rseq_slice_frame f = rseq_slice_direct_frame(sp, fp);

	return rseq_slice_schedule_exit(st, parent_ip, &f);
}

/*
 * schedule()'s entry calls the architecture's trampoline (schedule.S),
 * an ftrace direct call, instead of ftrace's: no registers saved, no ops
 * called. The trampoline passes the return address to schedule()'s
 * caller (@parent_ip), the stack pointer at schedule()'s entry (x86-64:
 * pointing at that return address) and the caller's frame pointer. A true
 * return makes the trampoline return straight to the caller: schedule()
 * is skipped, and the exit loop rereads the thread's flags with
 * interrupts disabled.
 *
 * Context as the ops hook's below: any caller, any task, never in
 * interrupt context. With CONFIG_PREEMPT_NOTIFIERS the trampoline itself
 * returns into schedule() for every thread not registered (an empty
 * preempt notifier list, rseq_slice_switch_linked()), so only registered
 * threads come here, and their other calls pay the two compares of the
 * boxes. Without it (switch_tracepoint.c) every thread comes here.
 */
bool notrace rseq_slice_schedule_direct(unsigned long parent_ip, unsigned long sp,
					unsigned long fp)
{
	struct rseq_slice_task *st;

	if (likely(!rseq_slice_exit_maybe(parent_ip)))
		return false;
	st = rseq_slice_exit_wanted();
	return st && rseq_slice_schedule_direct_exit(st, parent_ip, sp, fp);
}
#endif

/*
 * What a skipped schedule() runs instead: the ftrace trampoline returns
 * here and this returns straight to the exit loop, which then rereads
 * the thread's flags with interrupts disabled.
 */
static noinline void notrace rseq_slice_schedule_skipped(void)
{
}

/*
 * The ops hook's work for a caller in an exit path's box, out of line, so
 * that the hook's test for every other caller needs no stack frame.
 */
static noinline void notrace rseq_slice_schedule_ops_exit(struct rseq_slice_task *st,
							  unsigned long parent_ip,
							  struct ftrace_regs *fregs)
{
	struct rseq_slice_frame f = rseq_slice_fregs_frame(fregs);

	if (rseq_slice_schedule_exit(st, parent_ip, &f))
		rseq_slice_fregs_set_ip(fregs, (unsigned long)rseq_slice_schedule_skipped);
}

/*
 * schedule() entry, any caller, any task: interrupts and preemption as
 * the caller had them (the exit loop: preemption enabled, interrupts
 * too but on arm64's 6.1, whose do_notify_resume() calls schedule() with
 * them masked), never in interrupt context. Must stay cheap for every
 * thread but the registered ones, and for their calls from anywhere but
 * the exit loop: the ops do not ask ftrace for recursion protection
 * (FTRACE_OPS_FL_RECURSION would route every call through ftrace's
 * assist function first), so a thread that is not registered costs one
 * load and compare (its preempt notifiers, switch.c), and a registered
 * thread's other calls the two inlined compares of the boxes.
 */
static void notrace rseq_slice_schedule_hook(unsigned long ip, unsigned long parent_ip,
					     struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct rseq_slice_task *st;

	/* Every thread not registered: one load and compare. */
	if (likely(!rseq_slice_switch_linked(current)))
		return;
	if (likely(!rseq_slice_exit_maybe(parent_ip)))
		return;
	st = rseq_slice_exit_wanted();
	if (st)
		rseq_slice_schedule_ops_exit(st, parent_ip, fregs);
}

/*
 * No FTRACE_OPS_FL_SAVE_REGS where the kernel has DYNAMIC_FTRACE_WITH_ARGS
 * (x86-64, arm64 on 6.12): the trampoline then saves only the argument
 * registers, ip, sp and the frame pointer (about 25 instructions less on
 * every call of schedule() on x86-64), and still returns to whatever ip
 * the hook sets, as livepatch's own ops rely on. arm64's 6.1 needs them
 * (compat.h). A direct call's ops starts empty: ftrace sets its flags
 * (every register saved where the kernel can, else the arguments) and
 * rseq_slice_ftrace_register() its callback, this one, for ftrace's list.
 */
#if RSEQ_SLICE_SCHEDULE_DIRECT
static struct ftrace_ops rseq_slice_schedule_ops;
#elif !RSEQ_SLICE_ONE_OPS
static struct ftrace_ops rseq_slice_schedule_ops = {
	.func = rseq_slice_schedule_hook,
	.flags = RSEQ_SLICE_FTRACE_IP_FLAGS,
};
#endif

/*
 * Which yield, if any, is this system call: RSEQ_SLICE_IOC_YIELD on our
 * device, or merged upstream's rseq_slice_yield() (471, the same number
 * for 64-bit and 32-bit callers), from a 64-bit or a 32-bit (ia32,
 * AArch32) thread? x32 calls are not recognised: foreign. Process context, preemption
 * disabled by the hook: an RCU read side, under which the descriptor's
 * file is looked at without a reference (fget() and fput() cost a
 * yield two atomic operations and an RCU section of their own). A file
 * is freed only after a grace period (6.12 and 7.2 may reuse it for
 * another file at once), so its f_op is always some file's; a descriptor
 * another thread closes or replaces during the call could name either
 * file with fget() too.
 */
static enum rseq_slice_yield_call rseq_slice_syscall_kind(struct pt_regs *regs)
{
	long nr = syscall_get_nr(current, regs), nr_ioctl;
	unsigned long fd, cmd;
	struct file *file;

	lockdep_assert_preemption_disabled();
	if (nr == RSEQ_SLICE_NR_YIELD)
		return RSEQ_SLICE_CALL_MERGED;
	nr_ioctl = rseq_slice_ioctl_args(regs, &fd, &cmd);
	if (nr != nr_ioctl || (unsigned int)cmd != RSEQ_SLICE_IOC_YIELD)
		return RSEQ_SLICE_CALL_OTHER;
	file = files_lookup_fd_raw(current->files, (unsigned int)fd);
	if (!file || READ_ONCE(file->f_op) != rseq_slice_fops)
		return RSEQ_SLICE_CALL_OTHER;
	return RSEQ_SLICE_CALL_IOCTL;
}

/*
 * syscall_trace_enter() entry: process context, interrupts enabled, the
 * thread about to run a system call. Reached by threads with any syscall
 * work (seccomp, audit, ptrace, tracepoints), so the first test is one
 * per-CPU load: a holder runs on its grant's CPU, so whatever CPU this
 * reads, only a holder can match itself there.
 *
 * On 7.2 the same callback sits on the entry of each out-of-line piece of
 * the inlined syscall_trace_enter(), in its order: syscall_user_dispatch()
 * (user dispatch), ptrace_notify() (a tracer's entry stop),
 * __secure_computing() (seccomp), trace_syscall_enter() (the bit the
 * grant set, so always reached). The first one the holder reaches ends
 * the grant, before whatever that piece does, as on 6.x before ptrace and
 * seccomp see the call; the later ones find no grant. Same context. A
 * holder reaches ptrace_notify() first at a system call's entry: it runs
 * user code until its next kernel entry, a signal ends the grant before
 * a tracer sees it (the signal hook), and every other ptrace event is
 * inside a system call, whose entry came first.
 *
 * A yield nobody else looks at is answered here and skipped
 * (rseq_slice_grant_syscall() says when): the work after this piece
 * then finds number -1 and runs no handler.
 */
static void notrace rseq_slice_syscall_hook(unsigned long ip, unsigned long parent_ip,
					    struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct pt_regs *regs;
	unsigned int todo;

	if (likely(rseq_slice_grant_holder() != current))
		return;
	/*
	 * No recursion lock (as for schedule(), rseq_slice_schedule_exit()):
	 * the hooked functions run only at a system call's entry, never in
	 * interrupt or NMI context, and nothing below calls them; only the
	 * preemption the lock disabled is needed, for the per-CPU grant.
	 */
	preempt_disable_notrace();
	regs = task_pt_regs(current);
	todo = rseq_slice_grant_syscall(rseq_slice_syscall_kind(regs));
	if (todo & RSEQ_SLICE_SYSCALL_SKIP)
		rseq_slice_syscall_skip(regs, 1);
	/*
	 * A SIGSEGV owed is queued, not sent: through ftrace's list function
	 * this callback runs with preemption disabled whatever it does
	 * itself, and the sighand lock sleeps on PREEMPT_RT (task.c). If it
	 * cannot be queued (unload), the grant's reschedule comes back.
	 */
	if ((todo & RSEQ_SLICE_SYSCALL_KILL) && !rseq_slice_task_kill_current())
		rseq_slice_resched_current();
	preempt_enable_notrace();
}

#if !RSEQ_SLICE_ONE_OPS
static struct ftrace_ops rseq_slice_syscall_ops = {
	.func = rseq_slice_syscall_hook,
};
#endif

#if !RSEQ_SLICE_YIELD_STUB
/*
 * syscall_exit_to_user_mode_prepare() entry: the way out of every system
 * call of every task, interrupts and preemption enabled, before ptrace,
 * audit and the exit tracepoint see the result. Registered while some
 * thread is enabled through prctl.
 *
 * These kernels have no system call 471: the dispatcher answered -ENOSYS
 * inline, after ptrace, seccomp and audit saw the call as it was made.
 * For a thread enabled through prctl the answer becomes merged upstream's
 * sys_rseq_slice_yield(): 1 if the call's entry ended a live grant
 * (rseq_slice_grant_syscall()), else 0. A seccomp filter's own -ENOSYS
 * for the call reads the same way. Every other thread keeps -ENOSYS.
 */
static void notrace rseq_slice_yield_hook(unsigned long ip, unsigned long parent_ip,
					  struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct pt_regs *regs = task_pt_regs(current);
	struct rseq_slice_task *st;

	/* Every system call in the system: two compares. */
	if (likely(regs->orig_ax != RSEQ_SLICE_NR_YIELD) || regs->ax != (unsigned long)-ENOSYS)
		return;
	/*
	 * Current's own registration and yield flag, which only this thread
	 * changes: no lock, preemptible or not. Nothing here is traced by
	 * this hook's ops, so there is no recursion to guard against.
	 */
	st = rseq_slice_task_current();
	if (st && st->w.merged && !rseq_slice_task_area_moved(st))
		regs->ax = rseq_slice_grant_yielded(&st->w);
}

static struct ftrace_ops rseq_slice_yield_ops = {
	.func = rseq_slice_yield_hook,
};
#else
/*
 * 7.2 has system call 471, but without CONFIG_RSEQ_SLICE_EXTENSION its
 * entries (__x64_sys_rseq_slice_yield(), __ia32_sys_rseq_slice_yield())
 * are weak stubs answering -ENOSYS, and syscall_exit_to_user_mode_prepare()
 * is inlined. The stubs are ftrace-able: for a thread enabled through
 * prctl the hook sends the call to one of the two functions below
 * instead, the way livepatch replaces a function; every other thread runs
 * the stub. Only system call 471 comes here. Unlike on 6.x the call is a
 * real one: a seccomp filter or tracer that skips it decides its result,
 * as on upstream's kernel.
 *
 * In place of the stub, with its arguments: merged upstream's
 * sys_rseq_slice_yield(), 1 if the call's entry ended a live grant
 * (rseq_slice_grant_syscall()), else 0. The hook reads which, so the
 * call needs no second lookup; nothing between the hook and the call can
 * change it (only this thread writes its yield flag, and grants are
 * given on the way to user space). Unload waits for an RCU Tasks grace
 * period before this text goes (see rseq_slice_merged_exit()).
 */
static long notrace rseq_slice_sys_yielded(RSEQ_SLICE_YIELD_STUB_PARAMS)
{
	return 1;
}

static long notrace rseq_slice_sys_not_yielded(RSEQ_SLICE_YIELD_STUB_PARAMS)
{
	return 0;
}

/*
 * The stub's entry: process context, interrupts enabled. Every call of
 * number 471 in the system, rare where nobody uses the merged ABI.
 */
static void notrace rseq_slice_yield_hook(unsigned long ip, unsigned long parent_ip,
					  struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct rseq_slice_task *st;

	/* arm64's sys_ni_syscall() answers every unimplemented number. */
	if (!rseq_slice_yield_stub_call())
		return;
	/* Current's own registration and flag: no lock (as above). */
	st = rseq_slice_task_current();
	if (st && st->w.merged && !rseq_slice_task_area_moved(st))
		rseq_slice_fregs_set_ip(fregs, rseq_slice_grant_yielded(&st->w) ?
					(unsigned long)rseq_slice_sys_yielded :
					(unsigned long)rseq_slice_sys_not_yielded);
}

/* Only the ip is changed: full registers only where needed, as for schedule(). */
static struct ftrace_ops rseq_slice_yield_ops = {
	.func = rseq_slice_yield_hook,
	.flags = RSEQ_SLICE_FTRACE_IP_FLAGS,
};
#endif

/*
 * arch_do_signal_or_restart() entry: the exit-to-user loop, process
 * context, interrupts enabled, about to set up a signal frame.
 *
 * The handler is not the critical section that asked: it must not run
 * inside a grant, nor with REQUEST set, which an interrupt would then
 * grant to the handler, whose rt_sigreturn is a foreign system call. A
 * holder's grant ends (both bits clear) and the reschedule it deferred is
 * given back; a REQUEST alone is cleared, so the section reads
 * "interrupted".
 */
static void notrace rseq_slice_signal_hook(unsigned long ip, unsigned long parent_ip,
					   struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	int bit;

	/* Every signal of every thread not registered: one load and compare. */
	if (likely(!rseq_slice_switch_linked(current)))
		return;
	/* Preemption off: a per-CPU grant and an RCU-sched read side. */
	bit = ftrace_test_recursion_trylock(ip, parent_ip);
	if (bit < 0)
		return;
	if (rseq_slice_grant_end_current(RSEQ_SLICE_BY_REVOKE))
		rseq_slice_resched_current();
	else
		rseq_slice_task_clear_request_current();
	ftrace_test_recursion_unlock(bit);
}

#if !RSEQ_SLICE_ONE_OPS
static struct ftrace_ops rseq_slice_signal_ops = {
	.func = rseq_slice_signal_hook,
};

/* Each hook's filter is set on its own ops. */
#define rseq_slice_schedule_filter	(&rseq_slice_schedule_ops)
#define rseq_slice_syscall_filter	(&rseq_slice_syscall_ops)
#define rseq_slice_signal_filter	(&rseq_slice_signal_ops)

static void rseq_slice_hot_init(void)
{
}

static void rseq_slice_hot_free_filters(void)
{
	ftrace_free_filter(&rseq_slice_schedule_ops);
	ftrace_free_filter(&rseq_slice_syscall_ops);
	ftrace_free_filter(&rseq_slice_signal_ops);
}
#else
/*
 * arm64's 6.1 (arch.h): every hooked function's calls go through
 * ftrace_ops_list_func(), which walks every registered ops and tests its
 * filter for the call's ip, with preemption disabled. Three ops armed
 * together would cost every call of schedule() three filter tests; one
 * ops holding the three functions costs it one, and its callback tells
 * them apart by ip (the call site, the function's first instructions).
 * The other two ops are then never registered.
 *
 * The three appear one call site at a time while the ops is registered,
 * so grants wait until all are patched (rseq_slice_granting), as
 * registering the hooks that end grants before schedule()'s does on
 * other kernels, and stop before the grants are ended at disarm.
 */
#define RSEQ_SLICE_CALL_SITE_MAX	16
static unsigned long rseq_slice_schedule_func, rseq_slice_signal_func;
static bool rseq_slice_granting;

static void notrace rseq_slice_hot_hook(unsigned long ip, unsigned long parent_ip,
					struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	if (ip - rseq_slice_schedule_func < RSEQ_SLICE_CALL_SITE_MAX) {
		if (likely(READ_ONCE(rseq_slice_granting)))
			rseq_slice_schedule_hook(ip, parent_ip, op, fregs);
	} else if (ip - rseq_slice_signal_func < RSEQ_SLICE_CALL_SITE_MAX) {
		rseq_slice_signal_hook(ip, parent_ip, op, fregs);
	} else {
		rseq_slice_syscall_hook(ip, parent_ip, op, fregs);
	}
}

/* schedule()'s flags (IPMODIFY, SAVE_REGS) for all three. */
static struct ftrace_ops rseq_slice_hot_ops = {
	.func = rseq_slice_hot_hook,
	.flags = RSEQ_SLICE_FTRACE_IP_FLAGS,
};

#define rseq_slice_schedule_filter	(&rseq_slice_hot_ops)
#define rseq_slice_syscall_filter	(&rseq_slice_hot_ops)
#define rseq_slice_signal_filter	(&rseq_slice_hot_ops)

/* Module init, the filters set: where the callback tells the three apart. */
static void rseq_slice_hot_init(void)
{
	rseq_slice_schedule_func = rseq_slice_symbol("schedule");
	rseq_slice_signal_func = rseq_slice_symbol(RSEQ_SLICE_SIGNAL_FUNC);
}

static void rseq_slice_hot_free_filters(void)
{
	ftrace_free_filter(&rseq_slice_hot_ops);
}
#endif

/*
 * schedule()'s hook is registered as a direct call to the trampoline
 * where the kernel has them, every other hook as an ops with a callback.
 * A direct call's ops collides with another IPMODIFY or direct user of
 * schedule() as an IPMODIFY ops does (EBUSY).
 */
#if RSEQ_SLICE_SCHEDULE_DIRECT
/*
 * ftrace calls a direct call's ops callback only while schedule() has
 * another ftrace user too (a tracer, a kprobe): its entry then goes
 * through ftrace_ops_list_func(), and ftrace's callback for a direct ops
 * (call_direct_funcs()) only asks for the trampoline to be called after
 * the list. The list re-enables preemption in between, where a
 * preemptible kernel takes the reschedule schedule() was called for: a
 * grant would never be given. So the ops's callback becomes the module's
 * own, which decides inside the list with preemption disabled, as where
 * there is no direct call, and never asks for the trampoline. ftrace
 * reads the callback at each call and restores its own at unregister;
 * until this store its callback still ends in the trampoline, which then
 * decides as usual.
 */
static int rseq_slice_ftrace_register(struct ftrace_ops *ops)
{
	int ret;

	if (ops != &rseq_slice_schedule_ops)
		return register_ftrace_function(ops);
	ret = rseq_slice_register_direct(ops, (unsigned long)rseq_slice_schedule_entry);
	if (!ret)
		WRITE_ONCE(ops->func, rseq_slice_schedule_hook);
	return ret;
}

static int rseq_slice_ftrace_unregister(struct ftrace_ops *ops)
{
	if (ops == &rseq_slice_schedule_ops)
		return rseq_slice_unregister_direct(ops, (unsigned long)rseq_slice_schedule_entry);
	return unregister_ftrace_function(ops);
}
#else
#define rseq_slice_ftrace_register(ops)		register_ftrace_function(ops)
#define rseq_slice_ftrace_unregister(ops)	unregister_ftrace_function(ops)
#endif

static void rseq_slice_hooks_release(void);

/* sched_process_exit: the exiting thread itself, preemption disabled. */
static void notrace rseq_slice_exit_probe(void *data, struct task_struct *p)
{
	if (rseq_slice_task_count() && rseq_slice_task_unregister_current())
		rseq_slice_hooks_release();
}

/* sched_process_exec: the thread that exec'd, preemption disabled. */
static void notrace rseq_slice_exec_probe(void *data, struct task_struct *p, pid_t old_pid,
					  struct linux_binprm *bprm)
{
	rseq_slice_exit_probe(data, p);
}

#ifdef RSEQ_SLICE_FAULT_INJECT
/* Hooks an injected refusal left registered, as a real refusal would. */
static struct ftrace_ops *rseq_slice_inject_kept[8];

static void rseq_slice_inject_keep(struct ftrace_ops *ops, bool keep)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(rseq_slice_inject_kept); i++) {
		if (rseq_slice_inject_kept[i] == ops)
			rseq_slice_inject_kept[i] = NULL;
	}
	for (i = 0; keep && i < ARRAY_SIZE(rseq_slice_inject_kept); i++) {
		if (!rseq_slice_inject_kept[i]) {
			rseq_slice_inject_kept[i] = ops;
			return;
		}
	}
}

/*
 * Fault injection's way back (debugfs "release"): remove for real the
 * hooks an injected refusal kept and drop the pin it took, so that the
 * selftests can load a normal module again. Process context.
 */
void rseq_slice_hooks_inject_release(void)
{
	unsigned int i;

	mutex_lock(&rseq_slice_hooks_mutex);
	for (i = 0; i < ARRAY_SIZE(rseq_slice_inject_kept); i++) {
		if (rseq_slice_inject_kept[i])
			rseq_slice_ftrace_unregister(rseq_slice_inject_kept[i]);
		rseq_slice_inject_kept[i] = NULL;
	}
	if (rseq_slice_stuck)
		module_put(THIS_MODULE);
	rseq_slice_stuck = false;
	mutex_unlock(&rseq_slice_hooks_mutex);
}
#else
static inline void rseq_slice_inject_keep(struct ftrace_ops *ops, bool keep)
{
}
#endif

/* Unregister @ops, or an injected refusal that keeps it. */
static int rseq_slice_unregister(struct ftrace_ops *ops)
{
	bool refuse = rseq_slice_inject_take(RSEQ_SLICE_INJECT_UNHOOK);

	rseq_slice_inject_keep(ops, refuse);
	return refuse ? -EBUSY : rseq_slice_ftrace_unregister(ops);
}

/*
 * Remove one ftrace hook. If ftrace refuses (it does so only once it has
 * shut itself down after a bug), the callback may still be called, so
 * this module's text must stay: pin the module for good and say so, and
 * switch grants off for good, so that a schedule() hook left behind only
 * denies (ENABLE and enabled=1 then fail with EIO). At unload it is too
 * late to refuse, so wait, retrying, rather than free text a CPU may
 * still run.
 */
void rseq_slice_unhook(struct ftrace_ops *ops, const char *what)
{
	int ret = rseq_slice_unregister(ops);

	if (likely(!ret))
		return;
	if (rseq_slice_ready) {
		pr_err("cannot remove the %s hook (%d); the module stays loaded\n", what, ret);
		WRITE_ONCE(rseq_slice_enabled, false);
		if (!rseq_slice_stuck)
			__module_get(THIS_MODULE);
		rseq_slice_stuck = true;
		return;
	}
	pr_err("cannot remove the %s hook (%d); unload waits until it can\n", what, ret);
	do {
		schedule_timeout_idle(HZ);
	} while (rseq_slice_unregister(ops));
	pr_info("removed the %s hook\n", what);
}

static void rseq_slice_unhook_tp(struct tracepoint *tp, void *probe, const char *what)
{
	int ret = tracepoint_probe_unregister(tp, probe, NULL);

	/* Only a probe that was never registered fails to go. */
	if (ret)
		pr_err("cannot remove the %s probe (%d)\n", what, ret);
}

#if RSEQ_SLICE_ONE_OPS
/* Hooks mutex held: the three hooks' one ops (see rseq_slice_hot_hook()). */
static int rseq_slice_hot_register(void)
{
	int ret;

	/* Off while the sites are patched (set by a left-behind ops, say). */
	WRITE_ONCE(rseq_slice_granting, false);
	ret = register_ftrace_function(&rseq_slice_hot_ops);
	if (ret)
		return ret == -EBUSY ? -ETXTBSY : ret;
	/* Every call site patched: what ends a grant is in place. */
	WRITE_ONCE(rseq_slice_granting, true);
	return 0;
}

static void rseq_slice_hot_stop_granting(void)
{
	WRITE_ONCE(rseq_slice_granting, false);
	/*
	 * A schedule() callback that read it set has returned: the list
	 * function runs callbacks with preemption disabled, which
	 * synchronize_rcu() waits for.
	 */
	synchronize_rcu();
}

/*
 * The ops is named for schedule(), whose hook it is first. If it stays
 * (rseq_slice_unhook()), grants are off for good and the schedule() hook
 * left behind only denies, as on other kernels.
 */
static void rseq_slice_hot_unhook(void)
{
	rseq_slice_unhook(&rseq_slice_hot_ops, "schedule()");
	if (rseq_slice_stuck)
		WRITE_ONCE(rseq_slice_granting, true);
}
#else
/*
 * Hooks mutex held. Grants need the hooks that end them: those are
 * registered first. schedule() is where another live patch or IPMODIFY
 * ftrace user (a livepatch of schedule(), another module like this one)
 * collides: ftrace refuses a second one with EBUSY, which ENABLE reports
 * as ETXTBSY (the kernel text is busy) so that it is not mistaken for
 * "enabled with another word".
 */
static int rseq_slice_hot_register(void)
{
	int ret;

	ret = register_ftrace_function(&rseq_slice_syscall_ops);
	if (ret)
		return ret;
	ret = register_ftrace_function(&rseq_slice_signal_ops);
	if (ret)
		goto unhook_syscall;
	ret = rseq_slice_ftrace_register(&rseq_slice_schedule_ops);
	if (ret == -EBUSY)
		ret = -ETXTBSY;
	if (ret)
		goto unhook_signal;
	return 0;

unhook_signal:
	rseq_slice_unhook(&rseq_slice_signal_ops, "signal delivery");
unhook_syscall:
	rseq_slice_unhook(&rseq_slice_syscall_ops, "system call entry");
	return ret;
}

static void rseq_slice_hot_stop_granting(void)
{
	rseq_slice_unhook(&rseq_slice_schedule_ops, "schedule()");
}

static void rseq_slice_hot_unhook(void)
{
	rseq_slice_unhook(&rseq_slice_signal_ops, "signal delivery");
	rseq_slice_unhook(&rseq_slice_syscall_ops, "system call entry");
}
#endif

static void rseq_slice_disarm(void)
{
	lockdep_assert_held(&rseq_slice_hooks_mutex);
	/* No new grants from here on... */
	rseq_slice_hot_stop_granting();
	/* ...end the running ones, on their CPUs... */
	rseq_slice_grant_end_all();
	/* ...then the hooks that only act on a grant can go. */
	rseq_slice_hot_unhook();
	rseq_slice_switch_disarm();
	rseq_slice_armed = false;
}

static int rseq_slice_arm(void)
{
	int ret;

	lockdep_assert_held(&rseq_slice_hooks_mutex);
	ret = rseq_slice_switch_arm();
	if (ret)
		return ret;
	ret = rseq_slice_hot_register();
	if (ret) {
		rseq_slice_switch_disarm();
		pr_err("cannot register hooks: %d\n", ret);
		return ret;
	}
	rseq_slice_armed = true;
	return 0;
}

/* Hooks mutex held: register or remove the yield's hook as the state asks. */
static int rseq_slice_yield_sync(void)
{
	bool want = rseq_slice_ready && rseq_slice_yield_hookable &&
		    rseq_slice_task_merged_count() > 0;
	int ret = 0;

	lockdep_assert_held(&rseq_slice_hooks_mutex);
	if (want == rseq_slice_yield_armed)
		return 0;
	if (want && rseq_slice_stuck)
		return -EIO;
	if (want)
		ret = register_ftrace_function(&rseq_slice_yield_ops);
	else
		rseq_slice_unhook(&rseq_slice_yield_ops, "rseq_slice_yield()");
	/* 7.2's hook is an IPMODIFY one: busy text, as for schedule(). */
	if (ret == -EBUSY)
		ret = -ETXTBSY;
	if (!ret)
		rseq_slice_yield_armed = want;
	return ret;
}

/* Hooks mutex held: register or remove the hooks as the state asks. */
static int rseq_slice_hooks_sync(void)
{
	bool want;
	int ret;

	lockdep_assert_held(&rseq_slice_hooks_mutex);
	ret = rseq_slice_yield_sync();
	if (ret)
		return ret;
	want = rseq_slice_ready && READ_ONCE(rseq_slice_enabled) && rseq_slice_task_count() > 0;
	if (want != rseq_slice_armed) {
		/* After a hook refused to go, nothing is registered again. */
		if (want && rseq_slice_stuck)
			return -EIO;
		if (want)
			return rseq_slice_arm();
		rseq_slice_disarm();
	}
	/* Nobody registered: switches need no callback's key either. */
	rseq_slice_switch_release();
	return 0;
}

static void rseq_slice_sync_fn(struct work_struct *work)
{
	mutex_lock(&rseq_slice_hooks_mutex);
	rseq_slice_hooks_sync();
	mutex_unlock(&rseq_slice_hooks_mutex);
}

static DECLARE_DELAYED_WORK(rseq_slice_sync_work, rseq_slice_sync_fn);

#define RSEQ_SLICE_IDLE_DELAY	HZ

/* Any context: a registration went away; drop the hooks if it was the last. */
static void rseq_slice_hooks_release(void)
{
	if (!rseq_slice_task_count())
		mod_delayed_work(system_wq, &rseq_slice_sync_work, RSEQ_SLICE_IDLE_DELAY);
}

/*
 * Register current's control word at @uaddr (validated by the caller):
 * RSEQ_SLICE_IOC_ENABLE, or with @merged the prctl. Process context, may
 * sleep. Returns 0 or the ABI's errno.
 */
int rseq_slice_hooks_register_current(u64 uaddr, bool merged)
{
	struct rseq_slice_task *st;
	bool added;
	int ret;

	/* Checked again under the lock; this only spares a useless pin. */
	if (!READ_ONCE(rseq_slice_enabled))
		return -EOPNOTSUPP;
	/*
	 * Another word, or enabled the other way, is EBUSY whatever the new
	 * address is: only this thread changes its registration, so the
	 * lockless answer holds.
	 */
	st = rseq_slice_task_current();
	if (st && (st->uaddr != uaddr || st->w.merged != merged))
		return -EBUSY;

	/* The pin may fault for as long as the word's file system likes. */
	st = rseq_slice_task_prepare(uaddr, merged);
	if (IS_ERR(st))
		return PTR_ERR(st);

	/* Held only for the hash update and the hook registration. */
	ret = mutex_lock_killable(&rseq_slice_hooks_mutex);
	if (ret) {
		rseq_slice_task_discard(st);
		return ret;
	}
	if (!READ_ONCE(rseq_slice_enabled)) {
		rseq_slice_task_discard(st);
		ret = -EOPNOTSUPP;
		goto unlock;
	}
	/* The registration's switch-out callback needs the key first. */
	rseq_slice_switch_hold();
	ret = rseq_slice_task_install(st, &added);
	if (ret) {
		rseq_slice_switch_release();
		goto unlock;
	}
	ret = rseq_slice_hooks_sync();
	/* A registration this call did not make stays. */
	if (ret && added)
		rseq_slice_task_unregister_current();
unlock:
	mutex_unlock(&rseq_slice_hooks_mutex);
	return ret;
}

/*
 * Drop current's registration, if any: RSEQ_SLICE_IOC_DISABLE, the prctl,
 * or an rseq area that went away. Any context of current; never sleeps.
 * Returns true if there was one.
 */
bool rseq_slice_hooks_unregister_current(void)
{
	if (!rseq_slice_task_unregister_current())
		return false;
	rseq_slice_hooks_release();
	return true;
}

/*
 * The enabled parameter (process context, param lock held). Before module
 * init this is only the insmod argument. The value stays even if the
 * hooks cannot be armed (the next ENABLE tries again); the write returns
 * what arming returned, EIO once a hook would not go (see
 * rseq_slice_unhook()), or EINTR on a fatal signal while waiting for the
 * lock.
 */
static int rseq_slice_enabled_set(const char *val, const struct kernel_param *kp)
{
	bool on;
	int ret;

	ret = kstrtobool(val, &on);
	if (ret)
		return ret;
	/* Off takes effect at once: the hooks check it before any grant. */
	if (!on)
		WRITE_ONCE(rseq_slice_enabled, false);
	ret = mutex_lock_killable(&rseq_slice_hooks_mutex);
	if (ret)
		return ret;
	/* A hook that would not go may still run: grants stay off. */
	if (on && rseq_slice_stuck) {
		ret = -EIO;
		goto unlock;
	}
	WRITE_ONCE(rseq_slice_enabled, on);
	ret = rseq_slice_hooks_sync();
unlock:
	mutex_unlock(&rseq_slice_hooks_mutex);
	return ret;
}

static const struct kernel_param_ops rseq_slice_enabled_ops = {
	.set = rseq_slice_enabled_set,
	.get = param_get_bool,
};
module_param_cb(enabled, &rseq_slice_enabled_ops, &rseq_slice_enabled, 0644);
MODULE_PARM_DESC(enabled,
		 "1: grants are given (default); 0: every grant ends, hooks are removed, ENABLE fails with EOPNOTSUPP, registrations are kept");

struct rseq_slice_tp_want {
	const char *name;
	struct tracepoint **tp;
};

static void rseq_slice_find_tp(struct tracepoint *tp, void *priv)
{
	struct rseq_slice_tp_want *want;

	for (want = priv; want->name; want++) {
		if (!strcmp(tp->name, want->name))
			*want->tp = tp;
	}
}

static int rseq_slice_set_filter(struct ftrace_ops *ops, const char * const *names)
{
	unsigned long addr;

	for (; *names; names++) {
		addr = rseq_slice_symbol(*names);
		if (addr)
			return ftrace_set_filter_ip(ops, addr, 0, 0);
	}
	return -ENOENT;
}

#if RSEQ_SLICE_ENTRY_INLINED
/* Every one of @names, or -ENOENT (and the kernel's name in the log). */
static int rseq_slice_set_filter_all(struct ftrace_ops *ops, const char * const *names)
{
	unsigned long addr;
	int ret;

	for (; *names; names++) {
		addr = rseq_slice_symbol(*names);
		if (!addr) {
			pr_warn("%s() not found\n", *names);
			return -ENOENT;
		}
		ret = ftrace_set_filter_ip(ops, addr, 0, 0);
		if (ret)
			return ret;
	}
	return 0;
}

/* 7.2: the out-of-line pieces of the inlined syscall_trace_enter(). */
static const char * const rseq_slice_syscall_names[] = {
	"syscall_user_dispatch", "ptrace_notify", "__secure_computing", "trace_syscall_enter",
	NULL
};

static const char * const rseq_slice_yield_names[] = { RSEQ_SLICE_YIELD_STUB_NAMES NULL };

static int rseq_slice_set_syscall_filter(void)
{
	return rseq_slice_set_filter_all(rseq_slice_syscall_filter, rseq_slice_syscall_names);
}

static int rseq_slice_find_yield_filter(void)
{
	return rseq_slice_set_filter_all(&rseq_slice_yield_ops, rseq_slice_yield_names);
}
#else
static int rseq_slice_set_syscall_filter(void)
{
	/* 6.1 has only a constant-propagated copy of the static function. */
	static const char * const syscall_names[] = {
		"syscall_trace_enter", "syscall_trace_enter.constprop.0", NULL
	};

	return rseq_slice_set_filter(rseq_slice_syscall_filter, syscall_names);
}

#ifdef RSEQ_SLICE_YIELD_STUB_FIND
static int rseq_slice_find_yield_filter(void)
{
	unsigned long stub = rseq_slice_yield_stub_find();

	if (!stub)
		pr_warn("the sys_ni_syscall() that answers system call 471 not found\n");
	return stub ? ftrace_set_filter_ip(&rseq_slice_yield_ops, stub, 0, 0) : -ENOENT;
}
#else
static int rseq_slice_find_yield_filter(void)
{
	static const char * const yield_names[] = {
#if RSEQ_SLICE_YIELD_STUB
		RSEQ_SLICE_YIELD_STUB_NAMES
#else
		"syscall_exit_to_user_mode_prepare",
#endif
		NULL
	};

	return rseq_slice_set_filter(&rseq_slice_yield_ops, yield_names);
}
#endif
#endif

/*
 * Where rseq_slice_yield() is answered, for the merged ABI only: without
 * it the merged ABI is off (merged.c asks rseq_slice_hooks_merged_ok())
 * and the device's ioctls work as with merged_abi=0. Module init.
 */
static void rseq_slice_set_yield_filter(void)
{
	int ret;

	if (!rseq_slice_merged_abi)
		return;
	ret = rseq_slice_inject_take(RSEQ_SLICE_INJECT_YIELD_LOOKUP) ? -ENOENT :
	      rseq_slice_find_yield_filter();
	if (ret) {
		pr_warn("no merged ABI: no hook point for rseq_slice_yield() (%d); the device's ioctls work\n",
			ret);
		ftrace_free_filter(&rseq_slice_yield_ops);
		return;
	}
	rseq_slice_yield_hookable = true;
}

/* Module init, after rseq_slice_hooks_init(): can the merged ABI be offered? */
bool rseq_slice_hooks_merged_ok(void)
{
	return rseq_slice_yield_hookable;
}

/* Module init; @fops identifies the device's files for the yield test. */
int rseq_slice_hooks_init(const struct file_operations *fops)
{
	static const char * const schedule_names[] = { "schedule", NULL };
	static const char * const signal_names[] = { RSEQ_SLICE_SIGNAL_FUNC, NULL };
	struct rseq_slice_tp_want want[] = {
		{ "sched_process_exit", &rseq_slice_tp_exit },
		{ "sched_process_exec", &rseq_slice_tp_exec },
		{ }
	};
	int ret;

	rseq_slice_fops = fops;
	for_each_kernel_tracepoint(rseq_slice_find_tp, want);
	if (!rseq_slice_tp_exit || !rseq_slice_tp_exec) {
		pr_err("scheduler tracepoints not found\n");
		return -ENOENT;
	}
	ret = rseq_slice_switch_init();
	if (ret)
		return ret;

	ret = rseq_slice_set_filter(rseq_slice_schedule_filter, schedule_names);
	if (ret)
		goto free_filters;
	ret = rseq_slice_set_syscall_filter();
	if (ret)
		goto free_filters;
	rseq_slice_set_yield_filter();
	ret = rseq_slice_set_filter(rseq_slice_signal_filter, signal_names);
	if (ret)
		goto free_filters;
	rseq_slice_hot_init();

	ret = tracepoint_probe_register(rseq_slice_tp_exit, rseq_slice_exit_probe, NULL);
	if (ret)
		goto free_filters;
	ret = tracepoint_probe_register(rseq_slice_tp_exec, rseq_slice_exec_probe, NULL);
	if (ret)
		goto unhook_exit;

	mutex_lock(&rseq_slice_hooks_mutex);
	rseq_slice_ready = true;
	mutex_unlock(&rseq_slice_hooks_mutex);
	return 0;

unhook_exit:
	tracepoint_probe_unregister(rseq_slice_tp_exit, rseq_slice_exit_probe, NULL);
	tracepoint_synchronize_unregister();
free_filters:
	rseq_slice_hot_free_filters();
	ftrace_free_filter(&rseq_slice_yield_ops);
	pr_err("cannot set up hooks: %d\n", ret);
	return ret;
}

/*
 * Unload begins: remove the hot hooks and end every grant; from here on
 * nothing is armed again, and a hook that will not go makes unload wait
 * instead of pinning the module.
 */
void rseq_slice_hooks_stop(void)
{
	mutex_lock(&rseq_slice_hooks_mutex);
	rseq_slice_ready = false;
	rseq_slice_hooks_sync();
	mutex_unlock(&rseq_slice_hooks_mutex);
}

/*
 * Unload, after rseq_slice_hooks_stop() and after the last caller that
 * can register is gone: remove what is left. Afterwards no code of this
 * file runs on behalf of any thread.
 */
void rseq_slice_hooks_exit(void)
{
	/* Disarms anything a late registration armed (none: not ready). */
	rseq_slice_hooks_stop();
	/* Every registration's thread is alive until the exit probe goes. */
	rseq_slice_switch_exit();

	rseq_slice_unhook_tp(rseq_slice_tp_exec, rseq_slice_exec_probe, "sched_process_exec");
	rseq_slice_unhook_tp(rseq_slice_tp_exit, rseq_slice_exit_probe, "sched_process_exit");
	tracepoint_synchronize_unregister();
	cancel_delayed_work_sync(&rseq_slice_sync_work);

	rseq_slice_hot_free_filters();
	ftrace_free_filter(&rseq_slice_yield_ops);
}
