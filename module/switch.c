// SPDX-License-Identifier: GPL-2.0
/*
 * What a switch-out ends, through preempt notifiers.
 *
 * A grant ends when its holder is switched out, and a REQUEST still set is
 * cleared, so that the section reads "interrupted" whatever took the CPU
 * away: in-kernel preemption, a blocking fault or system call, a
 * reschedule on a system call's return. Only registered threads need
 * either, and a preempt notifier is a per-task callback: each
 * registration links one into its own thread's list, which the scheduler
 * walks when that thread is switched out and in. Every other thread's
 * switch pays the two list tests behind the notifiers' static key (on
 * while anybody is registered), where a sched_switch probe was a
 * tracepoint's call and a hash lookup on every switch of every task.
 *
 * Who touches a thread's list, and why no lock is needed:
 *
 *  - The thread itself, with preemption disabled: the scheduler walks the
 *    list for it (prev in __schedule(), rq lock held, interrupts
 *    disabled; current in finish_task_switch(), preemption disabled), it
 *    links and unlinks its own registration (ENABLE, DISABLE, exit, exec:
 *    task.c, preemption disabled), and so does KVM for a vCPU thread
 *    around each KVM_RUN. None of these can interleave with another on
 *    one thread.
 *  - Unload, for registrations that outlive the module (prctl holds no
 *    reference): under stop_machine(), when no CPU is in a section with
 *    preemption disabled, so no list is being walked or changed.
 *
 * The notifiers' static key may not be off while a notifier is linked
 * (preempt_notifier_register() warns): it is taken before the first
 * registration and dropped only when none is left, from the hooks'
 * process context.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/lockdep.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/stop_machine.h>

#include "rseq_slice.h"

static bool rseq_slice_switch_key;	/* preempt_notifier_inc() taken */
static bool rseq_slice_switch_live;	/* armed: switch-outs end grants */

/*
 * @pn's thread, current, is being switched out: rq lock held, interrupts
 * disabled. Its grant ends with the switch, or its REQUEST is cleared.
 * Before the hooks are armed (enabled=0) nothing is done, as before the
 * first registration.
 */
static void notrace rseq_slice_sched_out(struct preempt_notifier *pn, struct task_struct *next)
{
	struct rseq_slice_task *st = container_of(pn, struct rseq_slice_task, pn);

	lockdep_assert_irqs_disabled();
	if (!READ_ONCE(rseq_slice_switch_live))
		return;
	if (unlikely(rseq_slice_grant_holder() == current))
		rseq_slice_grant_switch_out();
	else if (!rseq_slice_task_area_moved(st))
		rseq_slice_word_clear_request(&st->w);
}

/* Switched back in: nothing to do, but the scheduler calls it. */
static void notrace rseq_slice_sched_in(struct preempt_notifier *pn, int cpu)
{
}

/* Also tells a registration's notifier from KVM's (rseq_slice_task_current()). */
struct preempt_ops rseq_slice_switch_ops = {
	.sched_in = rseq_slice_sched_in,
	.sched_out = rseq_slice_sched_out,
};

/* A new registration, not yet linked. Any context. */
void rseq_slice_switch_init_task(struct rseq_slice_task *st)
{
	preempt_notifier_init(&st->pn, &rseq_slice_switch_ops);
	st->pn_linked = false;
}

/*
 * Link current's registration @st (task.c, installing it). Preemption
 * disabled: the scheduler must not walk a half-linked list.
 */
void rseq_slice_switch_link(struct rseq_slice_task *st)
{
	lockdep_assert_preemption_disabled();
	preempt_notifier_register(&st->pn);
	st->pn_linked = true;
}

/* @st's thread itself, or unload under stop_machine(): see the top. */
static void rseq_slice_switch_unlink_one(struct rseq_slice_task *st)
{
	if (st->pn_linked)
		preempt_notifier_unregister(&st->pn);
	st->pn_linked = false;
}

/*
 * Unlink current's registration @st, if still linked (unload may have
 * unlinked it). Preemption disabled; never from the notifier itself.
 */
void rseq_slice_switch_unlink(struct rseq_slice_task *st)
{
	lockdep_assert_preemption_disabled();
	rseq_slice_switch_unlink_one(st);
}

/* Module init: nothing to look up. */
int rseq_slice_switch_init(void)
{
	return 0;
}

/* Every CPU stopped with interrupts disabled: see the top of this file. */
static int rseq_slice_switch_unlink_stopped(void *unused)
{
	rseq_slice_task_for_each(rseq_slice_switch_unlink_one);
	return 0;
}

/*
 * Unload, hooks disarmed, no caller left that can register, and before
 * the exit and exec probes go (so every registration's thread is alive:
 * its exit would unlink and unregister it first): unlink every
 * registration left, then drop the key. Process context, may sleep.
 */
void rseq_slice_switch_exit(void)
{
	if (rseq_slice_task_count())
		stop_machine(rseq_slice_switch_unlink_stopped, NULL, NULL);
	if (rseq_slice_switch_key)
		preempt_notifier_dec();
	rseq_slice_switch_key = false;
}

/*
 * Hooks mutex held, process context: before a registration is linked,
 * the notifiers' static key must be on. Taken once.
 */
void rseq_slice_switch_hold(void)
{
	if (rseq_slice_switch_key)
		return;
	preempt_notifier_inc();
	rseq_slice_switch_key = true;
}

/*
 * Hooks mutex held, process context: nobody registered (and so nothing
 * linked: a registration is unlinked before it is counted out), the key
 * can go; every other switch then costs what it cost before the first.
 */
void rseq_slice_switch_release(void)
{
	if (!rseq_slice_switch_key || rseq_slice_task_count())
		return;
	preempt_notifier_dec();
	rseq_slice_switch_key = false;
}

/* Hooks mutex held: before the first hook that can grant is registered. */
int rseq_slice_switch_arm(void)
{
	WRITE_ONCE(rseq_slice_switch_live, true);
	return 0;
}

/* Hooks mutex held: after the last grant ended. */
void rseq_slice_switch_disarm(void)
{
	WRITE_ONCE(rseq_slice_switch_live, false);
}
