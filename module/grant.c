// SPDX-License-Identifier: GPL-2.0
/*
 * Grants: giving, enforcing and ending a time slice extension, on a bare
 * control word (struct rseq_slice_word): this file knows neither how the
 * word was registered nor which hook calls it.
 *
 * One grant at most runs on a CPU, held by the task current there: a grant
 * ends before its holder is switched out (rseq_slice_grant_switch_out()), so it
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
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/audit.h>
#include <linux/hrtimer.h>
#include <linux/lockdep.h>
#include <linux/ktime.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/smp.h>
#include <linux/string.h>
#include <linux/thread_info.h>
#include <linux/tracepoint.h>

#include <linux/rseq_slice.h>
#include "compat.h"
#include "rseq_slice.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

/*
 * Exit work that forbids a grant: everything but the reschedule itself
 * (on 7.2 either request, the lazy one too; see compat.h). 7.2's _TIF_RSEQ
 * is part of it, as in upstream's own rule.
 */
#define RSEQ_SLICE_DENY_WORK	(RSEQ_SLICE_EXIT_WORK & ~RSEQ_SLICE_TIF_RESCHED)

struct rseq_slice_cpu {
	struct hrtimer timer;		/* ends the grant at its expiry */
	struct rseq_slice_word *w;	/* the holder's control word */
	bool entry_work;		/* the grant set RSEQ_SLICE_ENTRY_WORK_BIT */
	u64 start;			/* ktime_get_ns() at the grant */
#ifdef RSEQ_SLICE_FAULT_INJECT
	struct hrtimer inject_end;	/* runs the end-all IPI inside a grant */
#endif
};

static DEFINE_PER_CPU(struct rseq_slice_cpu, rseq_slice_cpus);

/*
 * The holder of this CPU's grant, or NULL: the rest of the grant's state,
 * kept apart so that the hooks' first test inlines one per-CPU load
 * (rseq_slice_grant_holder()). Same rules as struct rseq_slice_cpu.
 */
DEFINE_PER_CPU(struct task_struct *, rseq_slice_holder);

#if RSEQ_SLICE_ENTRY_INLINED
/*
 * 7.2: the grant borrows SYSCALL_WORK_SYSCALL_TRACEPOINT, which the
 * kernel sets on every thread while the sys_enter tracepoint has a probe
 * (syscall_regfunc()) and clears on all when the last goes. With a probe
 * registered, the bit belongs to the tracepoint: the grant's end leaves
 * it. (A probe that comes or goes during a grant can still race: the
 * holder then keeps the bit until the probe's removal, or loses it, and
 * a call inside that grant is only ended by the timer.) Any context.
 */
static struct tracepoint *rseq_slice_tp_sys_enter;

static void rseq_slice_find_sys_enter(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sys_enter"))
		rseq_slice_tp_sys_enter = tp;
}

static bool rseq_slice_entry_work_wanted(void)
{
	return rseq_slice_tp_sys_enter && static_key_enabled(&rseq_slice_tp_sys_enter->key);
}

static void rseq_slice_entry_work_init(void)
{
	for_each_kernel_tracepoint(rseq_slice_find_sys_enter, NULL);
}
#else
/* 6.1, 6.12: audit sets its bit at fork only, never during a grant. */
static inline bool rseq_slice_entry_work_wanted(void)
{
	return false;
}

static inline void rseq_slice_entry_work_init(void)
{
}
#endif

#ifdef CONFIG_HRTIMER_REARM_DEFERRED
/*
 * Interrupts disabled, current granted on its way out of an interrupt:
 * if this interrupt deferred the reprogramming of the clock event device
 * (the timer interrupt does, on 7.2), do it now, after the grant's timer
 * is queued: the schedule() that would have done it is skipped, and
 * without it no timer (the grant's included) would fire on this CPU
 * until some other interrupt came. hrtimer_rearm_deferred_tif() does the
 * same in upstream's grant; its callee is not exported.
 */
static void rseq_slice_rearm_deferred(void)
{
	lockdep_assert_irqs_disabled();
	if (unlikely(test_thread_flag(TIF_HRTIMER_REARM))) {
		clear_thread_flag(TIF_HRTIMER_REARM);
		rseq_slice_hrtimer_rearm_deferred();
	}
}
#else
static inline void rseq_slice_rearm_deferred(void)
{
}
#endif
/* Counted on the CPU of the event, which is the grant's CPU. */
static DEFINE_PER_CPU(struct rseq_slice_stats, rseq_slice_stats);

static void rseq_slice_end_ipi(void *unused);
static void rseq_slice_end(struct rseq_slice_cpu *c, enum rseq_slice_end why);

#ifdef RSEQ_SLICE_FAULT_INJECT
/*
 * Fault injection: where CPUs run in parallel, enabled=0 or an unload can
 * find a grant live on another CPU; under single-threaded emulation it
 * never does (the grant has ended before the disarming CPU runs again).
 * This timer, armed by a grant when the count says so, runs the end-all
 * IPI's handler on the holder's CPU, in hard interrupt context, a
 * microsecond into the grant: while the holder runs its section.
 */
static enum hrtimer_restart rseq_slice_inject_end_fn(struct hrtimer *timer)
{
	rseq_slice_end_ipi(NULL);
	return HRTIMER_NORESTART;
}

static void rseq_slice_inject_end_init(struct rseq_slice_cpu *c)
{
	rseq_slice_hrtimer_setup(&c->inject_end, rseq_slice_inject_end_fn, CLOCK_MONOTONIC,
				 HRTIMER_MODE_ABS_PINNED_HARD);
}

static void rseq_slice_inject_end_arm(struct rseq_slice_cpu *c)
{
	/*
	 * Absolute, from the grant's start as its own timer is: on a slow
	 * (KASAN) kernel more than the grant's length can pass between the
	 * start and this line, and a relative timer then fires after it.
	 */
	if (rseq_slice_inject_take(RSEQ_SLICE_INJECT_END_IPI))
		hrtimer_start(&c->inject_end, ns_to_ktime(c->start + NSEC_PER_USEC),
			      HRTIMER_MODE_ABS_PINNED_HARD);
}

static void rseq_slice_inject_end_cancel(struct rseq_slice_cpu *c)
{
	hrtimer_cancel(&c->inject_end);
}
#else
static inline void rseq_slice_inject_end_init(struct rseq_slice_cpu *c)
{
}

static inline void rseq_slice_inject_end_arm(struct rseq_slice_cpu *c)
{
}

static inline void rseq_slice_inject_end_cancel(struct rseq_slice_cpu *c)
{
}
#endif

/*
 * Make current reschedule at its next preemption point: the reschedule a
 * grant deferred, given back when the grant ends early (timer, signal,
 * IPI, yield, abort). Current's own flags; any context of current.
 */
void rseq_slice_resched_current(void)
{
	set_tsk_need_resched(current);
	set_preempt_need_resched();
}

/*
 * Expiry. Hard interrupt on the grant's CPU (the timer is pinned), so the
 * grant cannot change under us. If the holder still runs, its grant ends
 * here and the return from this interrupt reschedules it.
 *
 * The grant ends here, not at the switch that reschedule brings: the
 * timer can fire between the grant and the return to user space (in the
 * schedule() hook once it re-enables interrupts, or in the exit loop),
 * and on a preemptible kernel the preemption point there (the hook's
 * preempt_enable(), an interrupt's return to kernel mode) takes the
 * reschedule and may pick the holder again: no switch, no request left,
 * and the grant ran on to the next tick's request (6.1-rt: 58 of 366
 * expiries in one run, each for milliseconds).
 */
static enum hrtimer_restart rseq_slice_timer_fn(struct hrtimer *timer)
{
	struct rseq_slice_cpu *c = container_of(timer, struct rseq_slice_cpu, timer);

	lockdep_assert_irqs_disabled();
	/*
	 * A pinned timer fires where it was armed: it could run elsewhere
	 * only after its CPU went offline, and the grant (which cancels it
	 * with interrupts off) ended when its holder was switched out first.
	 */
	if (WARN_ON_ONCE(c != this_cpu_ptr(&rseq_slice_cpus)))
		return HRTIMER_NORESTART;
	if (__this_cpu_read(rseq_slice_holder) == current) {
		this_cpu_inc(rseq_slice_stats.expired);
		trace_rseq_slice_expire(current->pid);
		rseq_slice_end(c, RSEQ_SLICE_BY_REVOKE);
		rseq_slice_resched_current();
	}
	return HRTIMER_NORESTART;
}

void rseq_slice_grant_init(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct rseq_slice_cpu *c = per_cpu_ptr(&rseq_slice_cpus, cpu);

		rseq_slice_hrtimer_setup(&c->timer, rseq_slice_timer_fn, CLOCK_MONOTONIC,
					 HRTIMER_MODE_ABS_PINNED_HARD);
		rseq_slice_inject_end_init(c);
	}
	rseq_slice_entry_work_init();
}

/* Module unload, after every grant ended: nothing may stay armed. */
void rseq_slice_grant_exit(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct rseq_slice_cpu *c = per_cpu_ptr(&rseq_slice_cpus, cpu);

		hrtimer_cancel(&c->timer);
		rseq_slice_inject_end_cancel(c);
	}
}

/* Interrupts disabled, on c's CPU, a grant held there. */
static void notrace rseq_slice_end(struct rseq_slice_cpu *c, enum rseq_slice_end why)
{
	struct task_struct *holder = __this_cpu_read(rseq_slice_holder);
	u32 *ctrl = c->w->ctrl;
	pid_t pid = holder->pid;

	lockdep_assert_irqs_disabled();
	/*
	 * Both bits clear, however the grant ended: GRANTED is gone before
	 * the thread runs user code again, and a REQUEST set again inside
	 * the grant reads as "interrupted", as upstream reports it.
	 */
	WRITE_ONCE(*ctrl, READ_ONCE(*ctrl) & ~(RSEQ_SLICE_EXT_REQUEST | c->w->granted));
	if (c->entry_work && !rseq_slice_entry_work_wanted())
		clear_bit(RSEQ_SLICE_ENTRY_WORK_BIT,
			  rseq_slice_entry_work_word(task_thread_info(holder)));
	/*
	 * Running only if this is its own callback (anywhere else it would
	 * run on this CPU, with irqs on): then this does nothing.
	 */
	hrtimer_try_to_cancel(&c->timer);
	__this_cpu_write(rseq_slice_holder, NULL);
	c->w = NULL;
	c->entry_work = false;

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

/*
 * Interrupts disabled, current holds no grant. A grant of another task
 * cannot be running here either: it ends before its holder is switched
 * out.
 */
static bool rseq_slice_give(struct rseq_slice_word *w)
{
	struct rseq_slice_cpu *c = this_cpu_ptr(&rseq_slice_cpus);
	u32 word = READ_ONCE(*w->ctrl);
	u32 grant_ns;

	lockdep_assert_irqs_disabled();
	if (!(word & RSEQ_SLICE_EXT_REQUEST))
		return false;
	/*
	 * Only a pure reschedule request is deferred: a signal, a
	 * notify-resume or any other exit work must see the thread as it
	 * is. A disabled mechanism grants nothing; the check here closes the
	 * window between enabled=0 and the hook's removal.
	 */
	if (WARN_ON_ONCE(__this_cpu_read(rseq_slice_holder)) || !rseq_slice_resched_pending() ||
	    (read_thread_flags() & RSEQ_SLICE_DENY_WORK) || !READ_ONCE(rseq_slice_enabled)) {
		/* Interrupted without a grant: tell the thread. */
		WRITE_ONCE(*w->ctrl, word & ~RSEQ_SLICE_EXT_REQUEST);
		this_cpu_inc(rseq_slice_stats.denied);
		trace_rseq_slice_deny(current->pid);
		return false;
	}

	WRITE_ONCE(*w->ctrl, (word & ~RSEQ_SLICE_EXT_REQUEST) | w->granted);
	__this_cpu_write(rseq_slice_holder, current);
	c->w = w;
	/* A yield whose ioctl never came (its fd swapped) is forgotten here. */
	w->yielded = false;
	/*
	 * Any system call while granted must be seen at its entry. On 6.1
	 * and 6.12 audit's work bit (arm64: its thread flag) makes the entry
	 * path call syscall_trace_enter(), which hooks.c intercepts; with no audit
	 * context audit itself does nothing for it. On 7.2 the tracepoint's
	 * bit makes it call trace_syscall_enter(), hooks.c's last entry
	 * hook, which with no probe on sys_enter only returns. If the bit
	 * was set already (audit, or a sys_enter probe), it stays.
	 */
	c->entry_work = !test_and_set_bit(RSEQ_SLICE_ENTRY_WORK_BIT,
					  rseq_slice_entry_work_word(current_thread_info()));
	/*
	 * Defer the reschedule: the timer or the grant's end brings it
	 * back. The lazy request too, where there is one (7.2, the rt
	 * flavours).
	 */
	rseq_slice_clear_resched();
	grant_ns = READ_ONCE(rseq_slice_grant_ns);
	c->start = ktime_get_ns();
	hrtimer_start(&c->timer, ns_to_ktime(c->start + grant_ns), HRTIMER_MODE_ABS_PINNED_HARD);
	rseq_slice_rearm_deferred();
	this_cpu_inc(rseq_slice_stats.granted);
	trace_rseq_slice_grant(current->pid, grant_ns);
	rseq_slice_inject_end_arm(c);
	return true;
}

/*
 * The exit-to-user loop of an interrupt's return is about to call
 * schedule() for current, which holds no grant and whose word is @w.
 * Preemption disabled (the hook), interrupts enabled. Returns true if
 * current got a grant: schedule() must then be skipped.
 */
bool notrace rseq_slice_grant_try(struct rseq_slice_word *w)
{
	unsigned long flags;
	bool granted;

	lockdep_assert_preemption_disabled();
	local_irq_save(flags);
	granted = rseq_slice_give(w);
	local_irq_restore(flags);
	return granted;
}

/*
 * The holder of this CPU's grant, still current, is switching out
 * (sched_switch: rq lock held, interrupts disabled). The grant ends with
 * the switch.
 */
void rseq_slice_grant_switch_out(void)
{
	lockdep_assert_irqs_disabled();
	rseq_slice_end(this_cpu_ptr(&rseq_slice_cpus), RSEQ_SLICE_BY_REVOKE);
}

/* Any context of current. Returns true if current held a grant. */
bool rseq_slice_grant_end_current(enum rseq_slice_end why)
{
	struct rseq_slice_cpu *c;
	unsigned long flags;
	bool held;

	local_irq_save(flags);
	c = this_cpu_ptr(&rseq_slice_cpus);
	held = __this_cpu_read(rseq_slice_holder) == current;
	if (held)
		rseq_slice_end(c, why);
	local_irq_restore(flags);
	return held;
}

/*
 * Clear a REQUEST still set in @w, the word of the thread on this CPU
 * (current, or prev at its switch), so that the critical section reads
 * "interrupted".
 * Preemption disabled, on the CPU the owner runs on, from the kernel: it
 * cannot interleave with the thread's own test-and-clear. Written only
 * when set, so a thread that is not in a section is not dirtied.
 */
void rseq_slice_word_clear_request(struct rseq_slice_word *w)
{
	u32 word = READ_ONCE(*w->ctrl);

	lockdep_assert_preemption_disabled();
	if (word & RSEQ_SLICE_EXT_REQUEST)
		WRITE_ONCE(*w->ctrl, word & ~RSEQ_SLICE_EXT_REQUEST);
}

/*
 * IPI: a holder on this CPU is current and interrupted right now. Its
 * grant deferred a reschedule: give it back, as the timer would, so the
 * task that asked for the CPU does not wait for the next tick.
 */
static void rseq_slice_end_ipi(void *unused)
{
	struct rseq_slice_cpu *c = this_cpu_ptr(&rseq_slice_cpus);

	lockdep_assert_irqs_disabled();
	if (__this_cpu_read(rseq_slice_holder)) {
		rseq_slice_end(c, RSEQ_SLICE_BY_REVOKE);
		rseq_slice_resched_current();
	}
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
static bool rseq_slice_word_ok(const struct rseq_slice_word *w, bool held)
{
	u32 word = READ_ONCE(*w->ctrl);

	if (word & ~(RSEQ_SLICE_EXT_REQUEST | w->granted))
		return false;
	if (word & RSEQ_SLICE_EXT_REQUEST)
		return false;
	return !!(word & w->granted) == held;
}

/*
 * What the yield returns, once: 1 if a system call's entry ended a live
 * grant for it, else 0. Only the word's thread reads or writes the flag,
 * from any context of its own (the merged yield asks from a kprobe, which
 * is an NMI-like context: nothing here may lock).
 */
int rseq_slice_grant_yielded(struct rseq_slice_word *w)
{
	bool yielded = w->yielded;

	w->yielded = false;
	return yielded;
}

/*
 * RSEQ_SLICE_IOC_YIELD, process context, @w current's word or NULL. The
 * work was done at the call's entry, where a live grant is seen
 * (rseq_slice_grant_syscall()): it ended the grant and asked for the
 * reschedule, which happens on this call's way out. Returns 1 if that
 * entry ended a live grant, 0 if there was none (never granted, or
 * revoked first: the "raced" case).
 */
int rseq_slice_grant_yield(struct rseq_slice_word *w)
{
	int yielded;

	if (!w)
		return 0;
	yielded = rseq_slice_grant_yielded(w);
	if (!yielded && READ_ONCE(rseq_slice_debug) && !rseq_slice_word_ok(w, false)) {
		/* The ioctl's own context: the sighand lock may sleep (RT). */
		might_sleep();
		force_sig(SIGSEGV);
	}
	return yielded;
}

/*
 * Would nothing but the module see the system call now entering, were
 * the entry hook to answer it and skip it? Only if the grant itself set
 * the entry work bit the call came through and no other entry work is
 * set: no tracer, seccomp filter, user dispatch or sys_enter probe (which
 * see the call before it runs, and a skipped one after), and audit keeps
 * no context for the thread. On 7.2 the hook is then in
 * trace_syscall_enter(), the entry work's last piece, which rereads the
 * number. A bit set by another thread since the entry read the work
 * (seccomp's TSYNC, a new probe) only makes this answer "seen": the call
 * then runs. Interrupts disabled, current's grant live, before
 * rseq_slice_end() clears the bit.
 */
static bool rseq_slice_call_unseen(const struct rseq_slice_cpu *c)
{
	unsigned long work = READ_ONCE(*rseq_slice_entry_work_word(current_thread_info()));

	return c->entry_work &&
	       (work & RSEQ_SLICE_ENTRY_WORK_MASK) == BIT(RSEQ_SLICE_ENTRY_WORK_BIT) &&
	       !audit_context();
}

/*
 * Entry of a system call while current may hold a grant (its syscall work
 * is set), before ptrace, seccomp and audit look at it; @call says which
 * yield the call is, if any: each registration yields its own way.
 * Preemption disabled by the hook, interrupts enabled, process context.
 * The call is never changed for anybody who looks: tracers and filters
 * see it as it was made.
 *
 * The yield is decided here, once: the grant ends, the deferred
 * reschedule comes back (at once on preemptible kernels, else on this
 * call's way out). Where nothing else would see the call
 * (rseq_slice_call_unseen()), the hook answers it here and skips it
 * (RSEQ_SLICE_SYSCALL_SKIP): 1, what the ioctl or rseq_slice_yield()
 * would have returned, without the call's own way through the kernel.
 * Else the call runs and reports what was decided
 * (rseq_slice_grant_yielded()); a file swapped under the descriptor in
 * between (dup2() from another thread) then gets its ioctl outside any
 * grant.
 *
 * Any other call: foreign_syscall=kill (v1) ends the grant and sends
 * SIGSEGV, delivered before the thread returns to user space (the call
 * runs first); foreign_syscall=abort (merged upstream) ends the grant,
 * gives the reschedule back and lets the call run. A thread enabled by
 * prctl always gets merged upstream's rule.
 *
 * RSEQ_SLICE_SYSCALL_KILL: current is owed a SIGSEGV (kill, or a bad
 * word in debug mode). Not sent here nor by the hook: force_sig() takes
 * the sighand lock, a sleeping lock on PREEMPT_RT, and the hook runs with
 * preemption disabled; it queues the signal as task work (task.c).
 */
unsigned int notrace rseq_slice_grant_syscall(enum rseq_slice_yield_call call)
{
	unsigned int todo = 0;
	struct rseq_slice_cpu *c;
	unsigned long flags;

	lockdep_assert_preemption_disabled();
	local_irq_save(flags);
	c = this_cpu_ptr(&rseq_slice_cpus);
	if (__this_cpu_read(rseq_slice_holder) != current) {
		/* Revoked on the way here: nothing to end, nothing to report. */
		local_irq_restore(flags);
		return 0;
	}
	if (READ_ONCE(rseq_slice_debug) && !rseq_slice_word_ok(c->w, true))
		todo |= RSEQ_SLICE_SYSCALL_KILL;
	if (call == (c->w->merged ? RSEQ_SLICE_CALL_MERGED : RSEQ_SLICE_CALL_IOCTL)) {
		if (rseq_slice_call_unseen(c))
			todo |= RSEQ_SLICE_SYSCALL_SKIP;
		else
			c->w->yielded = true;
		rseq_slice_end(c, RSEQ_SLICE_BY_YIELD);
		rseq_slice_resched_current();
	} else if (!c->w->merged && READ_ONCE(rseq_slice_foreign) == RSEQ_SLICE_FOREIGN_KILL) {
		todo |= RSEQ_SLICE_SYSCALL_KILL;
		rseq_slice_end(c, RSEQ_SLICE_BY_KILL);
	} else {
		rseq_slice_end(c, RSEQ_SLICE_BY_ABORT);
		rseq_slice_resched_current();
	}
	local_irq_restore(flags);
	return todo;
}

/*
 * The schedule() hook, preemption disabled: current asked for a grant at
 * an exit whose path the module could not place (the shared caller's
 * return address in no function it knows). No grant; counted, since a
 * kernel whose layout passed the load-time checks and still lands here
 * would otherwise give no grants, silently.
 */
void rseq_slice_grant_count_unresolved(void)
{
	this_cpu_inc(rseq_slice_stats.unresolved);
}

/* stats.c's view: the counters summed over CPUs, each read racily. */
void rseq_slice_grant_stats(struct rseq_slice_stats *sum)
{
	unsigned int cpu;

	memset(sum, 0, sizeof(*sum));
	for_each_possible_cpu(cpu) {
		/* Counters move under us; a snapshot per CPU is all we promise. */
		struct rseq_slice_stats s = data_race(*per_cpu_ptr(&rseq_slice_stats, cpu));

		sum->granted += s.granted;
		sum->expired += s.expired;
		sum->revoked += s.revoked;
		sum->yielded += s.yielded;
		sum->aborted += s.aborted;
		sum->killed += s.killed;
		sum->denied += s.denied;
		sum->unresolved += s.unresolved;
	}
}
