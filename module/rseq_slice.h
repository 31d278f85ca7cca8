/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal interfaces of the rseq_slice module, one section per file, in
 * layers: each file calls only the files of the sections above its own.
 *
 *   params.c, symbols.c	module parameters; where the exit paths are
 *   arch/ARCH/exit.c		the architecture's exit paths (with arch.h)
 *   grant.c			a grant on a bare control word, its timer, counters
 *   task.c			registrations: which thread, which word, pinned
 *   switch.c			what a switch-out ends: preempt notifiers (task.c links);
 *   (switch_tracepoint.c)	sched_switch on kernels without them (6.1 rt-arm64)
 *   hooks.c			the kernel hooks, arming them, the enabled switch
 *   merged.c			merged upstream's prctl
 *   stats.c			debugfs: statistics (a read-only view), upstream's names
 *   inject.c			debugfs: fault injection (RSEQ_SLICE_FAULT_INJECT=y builds)
 *   main.c			the device, its ioctls, module init and exit
 *
 * Who touches what, and from where:
 * - struct rseq_slice_task (task.c): a thread's registration. Added and
 *   removed only by the thread itself, or at unload once nothing else runs.
 * - struct rseq_slice_cpu (grant.c): the grant running on one CPU. Read
 *   and written only on that CPU with interrupts disabled (the hrtimer
 *   callback is a hard interrupt there), so a grant can never be seen half
 *   made or half ended, and the control word is only ever written from the
 *   CPU its thread runs on, between two of its instructions: that is what
 *   makes user space's CPU-local test-and-clear safe.
 * - hooks.c: the schedule(), syscall-entry and signal-delivery ftrace
 *   hooks are registered, and switch-outs end grants, only while the
 *   mechanism is enabled and some thread is registered; the exit and exec
 *   tracepoints are registered for the module's lifetime. Each
 *   registration's switch-out callback is a preempt notifier of its own
 *   thread (switch.c), which task.c links and unlinks.
 */
#ifndef RSEQ_SLICE_INTERNAL_H
#define RSEQ_SLICE_INTERNAL_H

#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/fs.h>
#include <linux/llist.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/types.h>
#include <linux/rseq_slice.h>

#include "compat.h"

struct callback_head;
struct page;
struct pt_regs;
struct task_struct;
struct cred;

#define RSEQ_SLICE_GRANT_NS_MIN		5000U
#define RSEQ_SLICE_GRANT_NS_MAX		50000U
#define RSEQ_SLICE_GRANT_NS_DEFAULT	30000U

/*
 * params.c: the module parameters, read locklessly with READ_ONCE().
 * enabled's setter lives in hooks.c, which arms and disarms on it.
 */
enum rseq_slice_foreign {
	RSEQ_SLICE_FOREIGN_KILL,	/* v1: SIGSEGV */
	RSEQ_SLICE_FOREIGN_ABORT,	/* merged upstream: revoke, let it run */
};

extern unsigned int rseq_slice_grant_ns;
extern bool rseq_slice_enabled;
extern bool rseq_slice_debug;
extern int rseq_slice_foreign;
extern bool rseq_slice_merged_abi;

/* symbols.c: which return path a call to schedule() comes from. */
enum rseq_slice_exit {
	RSEQ_SLICE_EXIT_OTHER,		/* not the exit-to-user loop */
	RSEQ_SLICE_EXIT_IRQ,		/* return from interrupt or exception */
	RSEQ_SLICE_EXIT_SYSCALL,	/* return from a system call */
	RSEQ_SLICE_EXIT_SHARED,		/* a function serving both: look further */
	RSEQ_SLICE_EXIT_UNRESOLVED,	/* a shared one's path not found (no grant, sunres) */
};

int rseq_slice_symbols_init(void);
unsigned long rseq_slice_symbol(const char *name);
enum rseq_slice_exit rseq_slice_exit_caller(unsigned long parent_ip);
bool rseq_slice_symbol_range(const char *name, unsigned long *start, unsigned long *end);
bool rseq_slice_range_of(const char *name, unsigned long *start, unsigned long *end);
enum rseq_slice_exit rseq_slice_range_kind(unsigned long addr);

/*
 * arch/ARCH/exit.c: the functions that call schedule() from the exit loop
 * (symbols.c resolves their ranges), the check that this kernel's layout
 * is one the module knows (0 or -EOPNOTSUPP, after the ranges are
 * resolved), and the path a shared caller is on (below).
 */
struct rseq_slice_exit_func {
	const char *name;
	enum rseq_slice_exit kind;
};

#define RSEQ_SLICE_MAX_EXIT_FUNCS	8
extern const struct rseq_slice_exit_func rseq_slice_exit_funcs[];
extern const unsigned int rseq_slice_nr_exit_funcs;
int rseq_slice_exit_layout_check(bool irq, bool shared_or_direct);

/* A piece of kernel text: [lo, lo + size). Empty when size is 0. */
struct rseq_slice_box {
	unsigned long lo;
	unsigned long size;
};

/*
 * Two: the return paths' ranges lie in .noinstr.text and .text. More
 * ranges elsewhere would only widen the second box (symbols.c).
 */
#define RSEQ_SLICE_EXIT_BOXES	2
extern struct rseq_slice_box rseq_slice_exit_boxes[RSEQ_SLICE_EXIT_BOXES];

static __always_inline bool rseq_slice_in_box(unsigned long ip, const struct rseq_slice_box *b)
{
	return ip - b->lo < b->size;
}

/*
 * The schedule() hook's first test, on every call of schedule() in the
 * system: can the caller be an exit-to-user path at all? One compare per
 * box. Inline and notrace, because it runs before the hook's recursion
 * protection.
 */
static __always_inline bool rseq_slice_exit_maybe(unsigned long parent_ip)
{
	return rseq_slice_in_box(parent_ip, &rseq_slice_exit_boxes[0]) ||
	       rseq_slice_in_box(parent_ip, &rseq_slice_exit_boxes[1]);
}

/* schedule()'s entry, as arch/ARCH/arch.h has it. */
struct rseq_slice_frame;
enum rseq_slice_exit rseq_slice_exit_unwind(const struct rseq_slice_frame *f);

/*
 * The return path @kind names, or for a caller that serves both (6.1's
 * exit_to_user_mode_prepare(), arm64's do_notify_resume()) the one its
 * caller's frame tells (arch/ARCH/exit.c). Inline: on
 * every other kernel this is one compare, and the unwinder's state (zeroed
 * on entry by the kernel's automatic variable initialisation, whether
 * used or not) is set up only where it is needed.
 */
static inline enum rseq_slice_exit rseq_slice_exit_resolve(enum rseq_slice_exit kind,
							   const struct rseq_slice_frame *f)
{
	return kind == RSEQ_SLICE_EXIT_SHARED ? rseq_slice_exit_unwind(f) : kind;
}

#ifdef CONFIG_HRTIMER_REARM_DEFERRED
/*
 * 7.2 moves the timer interrupt's reprogramming of the clock event device
 * to the interrupt's return (TIF_HRTIMER_REARM), where schedule() does it
 * if the return reschedules. A grant skips that schedule(): grant.c calls
 * this (not exported) instead, as upstream's grant does. Interrupts off.
 */
extern void (*rseq_slice_hrtimer_rearm_deferred)(void);
#endif

/*
 * grant.c: what a grant needs of a thread, whoever registered it: its
 * control word (the kernel mapping of a pinned page, so that no access
 * faults or sleeps), the word's layout, and whether a system call's entry
 * ended its grant for a yield, for the yield call to report.
 *
 * Two layouts, one meaning: REQUEST is bit 0 in both; GRANTED is bit 1 in
 * v1's word (the ioctls) and the byte at offset 1 in merged upstream's
 * struct rseq_slice_ctrl (the rseq area's slice_ctrl, enabled by prctl).
 */
#define RSEQ_SLICE_MERGED_GRANTED	BIT(8)

struct rseq_slice_word {
	u32 *ctrl;
	u32 granted;		/* RSEQ_SLICE_EXT_GRANTED or RSEQ_SLICE_MERGED_GRANTED */
	bool merged;		/* enabled by prctl: merged upstream's rules */
	bool yielded;
};

/* rseq_slice_yield()'s number in merged upstream, 64-bit and ia32 alike. */
#define RSEQ_SLICE_NR_YIELD		471

/* Which yield a system call is, if any (hooks.c tells, grant.c matches). */
enum rseq_slice_yield_call {
	RSEQ_SLICE_CALL_OTHER,
	RSEQ_SLICE_CALL_IOCTL,		/* RSEQ_SLICE_IOC_YIELD on our device */
	RSEQ_SLICE_CALL_MERGED,		/* rseq_slice_yield(), number 471 */
};

/* Any context of the word's owner: has it asked for an extension? */
static inline bool rseq_slice_word_requested(const struct rseq_slice_word *w)
{
	return READ_ONCE(*w->ctrl) & RSEQ_SLICE_EXT_REQUEST;
}

enum rseq_slice_end {
	RSEQ_SLICE_BY_REVOKE,
	RSEQ_SLICE_BY_YIELD,
	RSEQ_SLICE_BY_ABORT,
	RSEQ_SLICE_BY_KILL,
};

/* Summed over CPUs by rseq_slice_grant_stats(). */
struct rseq_slice_stats {
	unsigned long granted;
	unsigned long expired;
	unsigned long revoked;
	unsigned long yielded;
	unsigned long aborted;
	unsigned long killed;
	unsigned long denied;
	unsigned long unresolved;	/* REQUEST set, the exit path not found */
};

DECLARE_PER_CPU(struct task_struct *, rseq_slice_holder);

/*
 * Any context: the holder of this CPU's grant. Unless preemption is
 * disabled the answer may be another CPU's by the time it is used, which
 * is harmless only for the test "is it current?": a holder runs on its
 * grant's CPU, so only there can current match. Inline: the first test
 * of hooks on every context switch and every traced system call.
 */
static __always_inline struct task_struct *rseq_slice_grant_holder(void)
{
	return this_cpu_read(rseq_slice_holder);
}

void rseq_slice_grant_init(void);
void rseq_slice_grant_exit(void);
bool rseq_slice_grant_try(struct rseq_slice_word *w);
bool rseq_slice_grant_end_current(enum rseq_slice_end why);
void rseq_slice_grant_switch_out(void);

/* What rseq_slice_grant_syscall() asks of the entry hook. */
#define RSEQ_SLICE_SYSCALL_KILL		BIT(0)	/* queue a SIGSEGV */
#define RSEQ_SLICE_SYSCALL_SKIP		BIT(1)	/* skip the call: it answered 1 */
unsigned int rseq_slice_grant_syscall(enum rseq_slice_yield_call call);
void rseq_slice_grant_end_all(void);
int rseq_slice_grant_yield(struct rseq_slice_word *w);
int rseq_slice_grant_yielded(struct rseq_slice_word *w);
void rseq_slice_word_clear_request(struct rseq_slice_word *w);
void rseq_slice_resched_current(void);
void rseq_slice_grant_count_unresolved(void);
void rseq_slice_grant_stats(struct rseq_slice_stats *sum);

/* task.c */
struct rseq_slice_task {
	struct hlist_node node;		/* in the hash, keyed by @task */
	struct task_struct *task;	/* the owner; not counted, removed at exit */
	u64 uaddr;			/* user address of the control word */
	struct rseq_slice_word w;	/* the word as grant.c sees it */
	struct page *page;		/* its page, pinned */
	const struct cred *cred;	/* its user charged one page, or NULL */
	struct callback_head *kill;	/* its SIGSEGV's task work; NULL while queued */
	struct llist_node free_node;
	struct rcu_head rcu;
#ifdef CONFIG_PREEMPT_NOTIFIERS
	struct preempt_notifier pn;	/* in @task's list while @pn_linked */
	bool pn_linked;
#endif
};

struct rseq_slice_task *rseq_slice_task_find(struct task_struct *task);

#ifdef CONFIG_PREEMPT_NOTIFIERS
extern struct preempt_ops rseq_slice_switch_ops;

/*
 * Current's registration, or NULL: the one whose notifier is linked in
 * current's own list (switch.c). Only current changes that list (unload
 * too, but only once no caller is left), and only current frees its
 * registration, so any context of current may walk it, preemptible or
 * not, with no lock and no RCU section: no hash lookup on the paths of a
 * grant. A KVM vCPU thread's list also holds KVM's notifier.
 */
static __always_inline struct rseq_slice_task *rseq_slice_task_current(void)
{
	struct preempt_notifier *pn;

	hlist_for_each_entry(pn, &current->preempt_notifiers, link) {
		if (pn->ops == &rseq_slice_switch_ops)
			return container_of(pn, struct rseq_slice_task, pn);
	}
	return NULL;
}
#else
struct rseq_slice_task *rseq_slice_task_current(void);
#endif
/* offsetof(struct rseq, slice_ctrl) in merged upstream's struct rseq. */
#define RSEQ_SLICE_CTRL_OFFSET		28

struct rseq_slice_task *rseq_slice_task_prepare(u64 uaddr, bool merged);
void rseq_slice_task_discard(struct rseq_slice_task *st);
int rseq_slice_task_install(struct rseq_slice_task *st, bool *added);
bool rseq_slice_task_unregister_current(void);
void rseq_slice_task_clear_request(struct task_struct *task);
void rseq_slice_task_clear_request_current(void);
bool rseq_slice_task_kill_current(void);
void rseq_slice_task_unregister_all(void);
void rseq_slice_task_flush(void);
int rseq_slice_task_count(void);
int rseq_slice_task_pinned(void);
int rseq_slice_task_merged_count(void);
void rseq_slice_task_for_each(void (*fn)(struct rseq_slice_task *st));

/*
 * A registration made by prctl follows the thread's rseq area: once the
 * thread unregistered it or registered another one, the word is no longer
 * the thread's slice_ctrl, and is neither granted nor written again. Any
 * context of the thread itself, including prev at its switch (it alone
 * changes current->rseq, with its own system call). Inline: a grant's
 * decision and a registered thread's every switch ask.
 */
static __always_inline bool rseq_slice_task_area_moved(const struct rseq_slice_task *st)
{
	return st->w.merged &&
	       (unsigned long)rseq_slice_task_rseq(current) + RSEQ_SLICE_CTRL_OFFSET !=
			st->uaddr;
}

/*
 * switch.c (switch_tracepoint.c without CONFIG_PREEMPT_NOTIFIERS): a
 * switch-out ends its thread's grant and clears its REQUEST.
 */

/*
 * Is a preempt notifier linked in @task's list: is it registered here (or
 * a KVM vCPU thread inside KVM_RUN)? Every registration links one, and a
 * holder is registered, so an empty list answers "not ours" to the hooks
 * every thread runs, in one load. Any context of @task itself, which alone
 * changes its list, with preemption disabled (switch.c).
 */
static __always_inline bool rseq_slice_switch_linked(struct task_struct *task)
{
#ifdef CONFIG_PREEMPT_NOTIFIERS
	return !hlist_empty(&task->preempt_notifiers);
#else
	/* switch_tracepoint.c: no list to tell; every thread goes on. */
	return true;
#endif
}

#ifdef CONFIG_PREEMPT_NOTIFIERS
/* offsetof(struct task_struct, preempt_notifiers), for schedule.S. */
extern const unsigned long rseq_slice_notifiers_offset;
#endif

int rseq_slice_switch_init(void);
void rseq_slice_switch_exit(void);
void rseq_slice_switch_init_task(struct rseq_slice_task *st);
void rseq_slice_switch_link(struct rseq_slice_task *st);
void rseq_slice_switch_unlink(struct rseq_slice_task *st);
void rseq_slice_switch_hold(void);
void rseq_slice_switch_release(void);
int rseq_slice_switch_arm(void);
void rseq_slice_switch_disarm(void);

/*
 * Fault injection, in a build made with RSEQ_SLICE_FAULT_INJECT=y only (the
 * selftests' second module): failures this machine cannot produce on
 * demand, made to happen at the point where they would. Each point has a
 * count (params.c) of the times it fails from now; the debugfs file
 * rseq_slice/inject (inject.c) sets them. In other builds
 * rseq_slice_inject_take() is a constant false and nothing is compiled.
 */
enum rseq_slice_inject_point {
	RSEQ_SLICE_INJECT_UNHOOK,	/* unregister_ftrace_function() refuses */
	RSEQ_SLICE_INJECT_END_IPI,	/* the end-all IPI lands inside a grant */
	RSEQ_SLICE_INJECT_YIELD_LOOKUP,	/* at load: rseq_slice_yield()'s hook point not found */
	RSEQ_SLICE_INJECT_MISC_REGISTER,	/* at load: misc_register() fails */
	RSEQ_SLICE_INJECT_NR,
};

#ifdef RSEQ_SLICE_FAULT_INJECT
extern atomic_t rseq_slice_inject[RSEQ_SLICE_INJECT_NR];

/* Any context: whether this pass through @point fails (uses one count). */
static inline bool rseq_slice_inject_take(enum rseq_slice_inject_point point)
{
	return atomic_dec_if_positive(&rseq_slice_inject[point]) >= 0;
}
#else
static inline bool rseq_slice_inject_take(enum rseq_slice_inject_point point)
{
	return false;
}
#endif

/* hooks.c */
int rseq_slice_hooks_init(const struct file_operations *fops);
void rseq_slice_hooks_stop(void);
void rseq_slice_hooks_exit(void);
bool rseq_slice_hooks_merged_ok(void);
int rseq_slice_hooks_register_current(u64 uaddr, bool merged);
bool rseq_slice_hooks_unregister_current(void);
struct ftrace_ops;
void rseq_slice_unhook(struct ftrace_ops *ops, const char *what);

/* merged.c: upstream's prctl */
int rseq_slice_merged_init(void);
void rseq_slice_merged_exit(void);

/* stats.c */
void rseq_slice_stats_init(void);
void rseq_slice_stats_exit(void);
struct dentry *rseq_slice_stats_dir(void);

/* inject.c */
#ifdef RSEQ_SLICE_FAULT_INJECT
void rseq_slice_hooks_inject_release(void);
void rseq_slice_inject_init(void);
#else
static inline void rseq_slice_inject_init(void)
{
}
#endif

#endif /* RSEQ_SLICE_INTERNAL_H */
