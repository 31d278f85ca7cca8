// SPDX-License-Identifier: GPL-2.0
/*
 * What a switch-out ends, on kernels without CONFIG_PREEMPT_NOTIFIERS
 * (Debian 12's 6.1 rt-arm64, whose KVM is off): the sched_switch
 * tracepoint, whose probe runs for every switch of every task while the
 * hooks are armed and looks the task up. switch.c says what a switch-out
 * ends; this file has its interface, and rseq_slice_switch_linked() is
 * true for every thread here (the hooks then test each caller in full,
 * as before the notifiers).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/lockdep.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

#include "rseq_slice.h"

static struct tracepoint *rseq_slice_tp_switch;

/*
 * sched_switch: rq lock held, interrupts disabled. A grant ends with the
 * switch; a REQUEST still set is cleared, so that the thread reads
 * "interrupted" at the end of its section whatever took the CPU away:
 * in-kernel preemption, a blocking fault or system call, a reschedule on
 * a system call's return.
 */
static void notrace rseq_slice_switch_probe(void *data, bool preempt,
					    struct task_struct *prev,
					    struct task_struct *next,
					    unsigned int prev_state)
{
	/* Every switch in the system: one per-CPU load, then the hash. */
	if (unlikely(rseq_slice_grant_holder() == prev))
		rseq_slice_grant_switch_out();
	else
		rseq_slice_task_clear_request(prev);
}

static void rseq_slice_find_switch(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sched_switch"))
		rseq_slice_tp_switch = tp;
}

/* Module init. */
int rseq_slice_switch_init(void)
{
	for_each_kernel_tracepoint(rseq_slice_find_switch, NULL);
	if (!rseq_slice_tp_switch) {
		pr_err("the sched_switch tracepoint not found\n");
		return -ENOENT;
	}
	return 0;
}

/* Registrations need no more than their hash entry here. */
void rseq_slice_switch_init_task(struct rseq_slice_task *st)
{
}

void rseq_slice_switch_link(struct rseq_slice_task *st)
{
}

void rseq_slice_switch_unlink(struct rseq_slice_task *st)
{
}

void rseq_slice_switch_exit(void)
{
}

void rseq_slice_switch_hold(void)
{
}

void rseq_slice_switch_release(void)
{
}

/* Hooks mutex held: before the first hook that can grant is registered. */
int rseq_slice_switch_arm(void)
{
	return tracepoint_probe_register(rseq_slice_tp_switch, rseq_slice_switch_probe, NULL);
}

/* Hooks mutex held: after the last grant ended; the probe is gone on return. */
void rseq_slice_switch_disarm(void)
{
	int ret = tracepoint_probe_unregister(rseq_slice_tp_switch, rseq_slice_switch_probe, NULL);

	/* Only a probe that was never registered fails to go. */
	if (ret)
		pr_err("cannot remove the sched_switch probe (%d)\n", ret);
	tracepoint_synchronize_unregister();
}
