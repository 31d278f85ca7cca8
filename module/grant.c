// SPDX-License-Identifier: GPL-2.0
/*
 * Grants: giving, enforcing and ending a time slice extension.
 *
 * One grant at most runs on a CPU, held by the task current there: a grant
 * ends before its holder is switched out (rseq_slice_grant_switch()), so it
 * never follows a task to another CPU. All state of a CPU's grant lives in
 * its struct rseq_slice_cpu, which is only ever read or written on that CPU
 * with interrupts disabled; the per-CPU hrtimer that enforces the grant is
 * pinned there and runs in hard interrupt context.
 *
 * The control word is written through the kernel mapping of its pinned
 * page, so no access here can fault or sleep, and always from the CPU the
 * owning thread runs on while that thread is in the kernel: user space's
 * non-atomic test-and-clear can never interleave with it.
 */
#include <linux/entry-common.h>
#include <linux/file.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/smp.h>
#include <linux/thread_info.h>
#include <asm/compat.h>
#include <asm/syscall.h>
#include <asm/unistd.h>

#include <linux/rseq_slice.h>
#include "rseq_slice.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

#define RSEQ_SLICE_BITS		(RSEQ_SLICE_EXT_REQUEST | RSEQ_SLICE_EXT_GRANTED)
/* Exit work that forbids a grant: everything but the reschedule itself. */
#define RSEQ_SLICE_DENY_WORK	(EXIT_TO_USER_MODE_WORK & ~_TIF_NEED_RESCHED)

struct rseq_slice_cpu {
	struct hrtimer timer;		/* ends the grant at its expiry */
	struct task_struct *task;	/* holder of this CPU's grant, or NULL */
	u32 *ctrl;			/* the holder's control word */
	bool audit_work;		/* the grant set SYSCALL_WORK_SYSCALL_AUDIT */
	u64 start;			/* ktime_get_ns() at the grant */
};

static DEFINE_PER_CPU(struct rseq_slice_cpu, rseq_slice_cpus);

/*
 * Expiry. Hard interrupt on the grant's CPU (the timer is pinned), so the
 * grant cannot change under us. If the holder still runs, make the return
 * from this interrupt reschedule it; that reschedule ends the grant.
 */
static enum hrtimer_restart rseq_slice_timer_fn(struct hrtimer *timer)
{
	struct rseq_slice_cpu *c = container_of(timer, struct rseq_slice_cpu, timer);

	if (c == this_cpu_ptr(&rseq_slice_cpus) && c->task == current) {
		this_cpu_inc(rseq_slice_stats.expired);
		trace_rseq_slice_expire(current->pid);
		set_tsk_need_resched(current);
		set_preempt_need_resched();
	}
	return HRTIMER_NORESTART;
}

void rseq_slice_grant_init(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct rseq_slice_cpu *c = per_cpu_ptr(&rseq_slice_cpus, cpu);

		hrtimer_init(&c->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_PINNED_HARD);
		c->timer.function = rseq_slice_timer_fn;
	}
}

/* Module unload, after every grant ended: nothing may stay armed. */
void rseq_slice_grant_exit(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		hrtimer_cancel(&per_cpu_ptr(&rseq_slice_cpus, cpu)->timer);
}

/* Interrupts disabled, on c's CPU, c->task set. */
static void rseq_slice_end(struct rseq_slice_cpu *c, enum rseq_slice_end why)
{
	u32 *ctrl = c->ctrl;
	pid_t pid = c->task->pid;

	/*
	 * Both bits clear, however the grant ended: GRANTED is gone before
	 * the thread runs user code again, and a REQUEST set again inside
	 * the grant reads as "interrupted", as upstream reports it.
	 */
	WRITE_ONCE(*ctrl, READ_ONCE(*ctrl) & ~RSEQ_SLICE_BITS);
	if (c->audit_work)
		clear_bit(SYSCALL_WORK_BIT_SYSCALL_AUDIT,
			  &task_thread_info(c->task)->syscall_work);
	/* Cannot be running: it would run on this CPU, with irqs on. */
	hrtimer_try_to_cancel(&c->timer);
	c->task = NULL;
	c->ctrl = NULL;
	c->audit_work = false;

	switch (why) {
	case RSEQ_SLICE_BY_REVOKE:
		this_cpu_inc(rseq_slice_stats.revoked);
		trace_rseq_slice_revoke(pid, c->start);
		break;
	case RSEQ_SLICE_BY_YIELD:
		this_cpu_inc(rseq_slice_stats.yielded);
		trace_rseq_slice_yield(pid, c->start);
		break;
	case RSEQ_SLICE_BY_ABORT:
		this_cpu_inc(rseq_slice_stats.aborted);
		trace_rseq_slice_abort(pid, c->start);
		break;
	case RSEQ_SLICE_BY_KILL:
		this_cpu_inc(rseq_slice_stats.killed);
		trace_rseq_slice_kill(pid, c->start);
		break;
	}
}

/* Interrupts disabled, current has no grant, REQUEST was seen set. */
static bool rseq_slice_try_grant(struct rseq_slice_task *st)
{
	struct rseq_slice_cpu *c = this_cpu_ptr(&rseq_slice_cpus);
	u32 word = READ_ONCE(*st->ctrl);
	u32 grant_ns;

	if (!(word & RSEQ_SLICE_EXT_REQUEST))
		return false;
	/*
	 * Only a pure reschedule request is deferred: a signal, a
	 * notify-resume or any other exit work must see the thread as it
	 * is. A disabled mechanism grants nothing; the check here closes the
	 * window between enabled=0 and the hook's removal.
	 */
	if (c->task || !need_resched() || (read_thread_flags() & RSEQ_SLICE_DENY_WORK) ||
	    !READ_ONCE(rseq_slice_enabled)) {
		/* Interrupted without a grant: tell the thread. */
		WRITE_ONCE(*st->ctrl, word & ~RSEQ_SLICE_EXT_REQUEST);
		this_cpu_inc(rseq_slice_stats.denied);
		trace_rseq_slice_deny(current->pid);
		return false;
	}

	WRITE_ONCE(*st->ctrl, (word & ~RSEQ_SLICE_EXT_REQUEST) | RSEQ_SLICE_EXT_GRANTED);
	c->task = current;
	c->ctrl = st->ctrl;
	/*
	 * Any system call while granted must be seen at its entry. Audit's
	 * work bit makes the entry path call syscall_trace_enter(), which
	 * hooks.c intercepts; with no audit context audit itself does nothing
	 * for it. If audit already had the bit, it keeps it.
	 */
	c->audit_work = !test_and_set_bit(SYSCALL_WORK_BIT_SYSCALL_AUDIT,
					  &current_thread_info()->syscall_work);
	/* Defer the reschedule: the timer or the yield brings it back. */
	clear_tsk_need_resched(current);
	clear_preempt_need_resched();
	grant_ns = READ_ONCE(rseq_slice_grant_ns);
	c->start = ktime_get_ns();
	hrtimer_start(&c->timer, ns_to_ktime(c->start + grant_ns), HRTIMER_MODE_ABS_PINNED_HARD);
	this_cpu_inc(rseq_slice_stats.granted);
	trace_rseq_slice_grant(current->pid, grant_ns);
	return true;
}

/*
 * The exit-to-user loop is about to call schedule() for current. Called
 * from the schedule() hook with preemption disabled and interrupts
 * enabled. Returns true if current got a grant: schedule() must then be
 * skipped.
 */
bool rseq_slice_grant_at_exit(enum rseq_slice_exit kind, struct pt_regs *regs)
{
	struct rseq_slice_task *st;
	unsigned long flags;
	bool granted;

	/*
	 * The holder asked to reschedule again (a second request, or the
	 * timer's): the grant is revoked and schedule() runs.
	 */
	if (unlikely(this_cpu_read(rseq_slice_cpus.task) == current)) {
		rseq_slice_grant_end_current(RSEQ_SLICE_BY_REVOKE);
		return false;
	}

	st = rseq_slice_task_find(current);
	if (likely(!st) || !(READ_ONCE(*st->ctrl) & RSEQ_SLICE_EXT_REQUEST))
		return false;
	/* Grants are given on the return from interrupts only. */
	if (rseq_slice_exit_resolve(kind, regs) != RSEQ_SLICE_EXIT_IRQ)
		return false;

	local_irq_save(flags);
	granted = rseq_slice_try_grant(st);
	local_irq_restore(flags);
	return granted;
}

/* Current is switching out (sched_switch: rq lock held, irqs disabled). */
void rseq_slice_grant_switch(struct task_struct *prev)
{
	struct rseq_slice_cpu *c = this_cpu_ptr(&rseq_slice_cpus);

	if (unlikely(c->task == prev))
		rseq_slice_end(c, RSEQ_SLICE_BY_REVOKE);
}

/* Any context of current. Returns true if current held a grant. */
bool rseq_slice_grant_end_current(enum rseq_slice_end why)
{
	struct rseq_slice_cpu *c;
	unsigned long flags;
	bool held;

	local_irq_save(flags);
	c = this_cpu_ptr(&rseq_slice_cpus);
	held = c->task == current;
	if (held)
		rseq_slice_end(c, why);
	local_irq_restore(flags);
	return held;
}

/*
 * A signal is about to be delivered to current, which may hold a grant
 * (preemption disabled). The handler must not run inside the grant: end
 * it, and let the loop do the reschedule the grant deferred.
 */
void rseq_slice_grant_signal(void)
{
	if (rseq_slice_grant_end_current(RSEQ_SLICE_BY_REVOKE)) {
		set_tsk_need_resched(current);
		set_preempt_need_resched();
	}
}

/* Preemption disabled: the holder of this CPU's grant. */
struct task_struct *rseq_slice_grant_holder(void)
{
	return this_cpu_read(rseq_slice_cpus.task);
}

/* IPI: a holder on this CPU is current and interrupted right now. */
static void rseq_slice_end_ipi(void *unused)
{
	struct rseq_slice_cpu *c = this_cpu_ptr(&rseq_slice_cpus);

	if (c->task)
		rseq_slice_end(c, RSEQ_SLICE_BY_REVOKE);
}

/*
 * End every grant, on the CPU that runs it. Process context; the caller
 * has already removed the hook that gives grants.
 */
void rseq_slice_grant_end_all(void)
{
	on_each_cpu(rseq_slice_end_ipi, NULL, true);
}

/*
 * Debug mode: the control word must say what the kernel knows. Only the
 * two protocol bits may be set, REQUEST never at this point (user space
 * clears it before it yields or calls the kernel), GRANTED exactly when the
 * kernel holds a grant for the thread.
 */
static bool rseq_slice_word_ok(u32 word, bool held)
{
	if (word & ~RSEQ_SLICE_BITS)
		return false;
	if (word & RSEQ_SLICE_EXT_REQUEST)
		return false;
	return !!(word & RSEQ_SLICE_EXT_GRANTED) == held;
}

/*
 * RSEQ_SLICE_IOC_YIELD. Process context. Returns 1 if the thread yielded
 * inside a live grant, 0 if it had none (never granted, or revoked first:
 * the "raced" case).
 */
int rseq_slice_grant_yield(struct rseq_slice_task *st)
{
	struct rseq_slice_cpu *c;
	unsigned long flags;
	bool held, bad = false;

	local_irq_save(flags);
	c = this_cpu_ptr(&rseq_slice_cpus);
	held = c->task == current;
	if (READ_ONCE(rseq_slice_debug) && st)
		bad = !rseq_slice_word_ok(READ_ONCE(*st->ctrl), held);
	if (held)
		rseq_slice_end(c, RSEQ_SLICE_BY_YIELD);
	local_irq_restore(flags);

	if (bad)
		force_sig(SIGSEGV);
	if (!held)
		return 0;
	/* The reschedule the grant deferred. */
	schedule();
	return 1;
}

/* Is this system call RSEQ_SLICE_IOC_YIELD on our device? */
static bool rseq_slice_syscall_is_yield(struct pt_regs *regs)
{
	struct file *file;
	bool ours;

	if (in_ia32_syscall() || syscall_get_nr(current, regs) != __NR_ioctl ||
	    (unsigned int)regs->si != RSEQ_SLICE_IOC_YIELD)
		return false;
	/* fget() and fput() do not sleep; fput() defers the final release. */
	file = fget((unsigned int)regs->di);
	if (!file)
		return false;
	ours = rseq_slice_file_is_ours(file);
	fput(file);
	return ours;
}

/*
 * Entry of a system call while current may hold a grant (its syscall work
 * is set). Preemption disabled, interrupts enabled, process context.
 *
 * foreign_syscall=kill (v1): SIGSEGV, and the call is not executed (its
 * number is set to -1, the way ptrace skips a call). foreign_syscall=abort
 * (merged upstream): the grant is revoked, the CPU is relinquished at the
 * next preemption point (at once on preemptible kernels, else at the
 * call's first resched point or its return) and the call runs.
 */
void rseq_slice_grant_syscall(struct pt_regs *regs)
{
	struct rseq_slice_cpu *c;
	bool kill, bad, yield;
	unsigned long flags;

	yield = rseq_slice_syscall_is_yield(regs);

	local_irq_save(flags);
	c = this_cpu_ptr(&rseq_slice_cpus);
	if (c->task != current || yield) {
		/* Ended already, or the yield: the ioctl ends the grant. */
		local_irq_restore(flags);
		return;
	}
	bad = READ_ONCE(rseq_slice_debug) && !rseq_slice_word_ok(READ_ONCE(*c->ctrl), true);
	kill = READ_ONCE(rseq_slice_foreign) == RSEQ_SLICE_FOREIGN_KILL;
	if (kill) {
		rseq_slice_end(c, RSEQ_SLICE_BY_KILL);
	} else {
		rseq_slice_end(c, RSEQ_SLICE_BY_ABORT);
		set_tsk_need_resched(current);
		set_preempt_need_resched();
	}
	local_irq_restore(flags);

	/* x86-64 keeps the call number in orig_ax; -1 skips the call. */
	if (kill)
		regs->orig_ax = -1;
	if (kill || bad)
		force_sig(SIGSEGV);
}
