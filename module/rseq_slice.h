/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal interfaces of the rseq_slice module.
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
 *   hooks and the sched_switch tracepoint are registered only while the mechanism is
 *   enabled and some thread is registered; the exit and exec tracepoints
 *   are registered for the module's lifetime.
 */
#ifndef RSEQ_SLICE_INTERNAL_H
#define RSEQ_SLICE_INTERNAL_H

#include <linux/atomic.h>
#include <linux/llist.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/types.h>

struct file;
struct page;
struct pt_regs;
struct task_struct;
struct user_struct;

#define RSEQ_SLICE_GRANT_NS_MIN		5000U
#define RSEQ_SLICE_GRANT_NS_MAX		50000U
#define RSEQ_SLICE_GRANT_NS_DEFAULT	30000U

/* params.c: the module parameters, read locklessly with READ_ONCE(). */
enum rseq_slice_foreign {
	RSEQ_SLICE_FOREIGN_KILL,	/* v1: SIGSEGV */
	RSEQ_SLICE_FOREIGN_ABORT,	/* merged upstream: revoke, let it run */
};

extern unsigned int rseq_slice_grant_ns;
extern bool rseq_slice_enabled;
extern bool rseq_slice_debug;
extern int rseq_slice_foreign;

/* stats.c */
struct rseq_slice_stats {
	unsigned long granted;
	unsigned long expired;
	unsigned long revoked;
	unsigned long yielded;
	unsigned long aborted;
	unsigned long killed;
	unsigned long denied;
};

DECLARE_PER_CPU(struct rseq_slice_stats, rseq_slice_stats);
extern atomic_t rseq_slice_nr_threads;
extern atomic_t rseq_slice_nr_pinned;
void rseq_slice_stats_init(void);
void rseq_slice_stats_exit(void);

/* symbols.c: which return path a call to schedule() comes from. */
enum rseq_slice_exit {
	RSEQ_SLICE_EXIT_OTHER,		/* not the exit-to-user loop */
	RSEQ_SLICE_EXIT_IRQ,		/* return from interrupt or exception */
	RSEQ_SLICE_EXIT_SYSCALL,	/* return from a system call */
	RSEQ_SLICE_EXIT_SHARED,		/* a function serving both: look further */
};

int rseq_slice_symbols_init(void);
unsigned long rseq_slice_symbol(const char *name);
enum rseq_slice_exit rseq_slice_exit_caller(unsigned long parent_ip);
extern unsigned long rseq_slice_exit_lo, rseq_slice_exit_hi;

/*
 * The schedule() hook's first test, on every call of schedule() in the
 * system: can the caller be an exit-to-user path at all? Inline and
 * notrace, because it runs before the hook's recursion protection.
 */
static __always_inline bool rseq_slice_exit_maybe(unsigned long parent_ip)
{
	return parent_ip >= rseq_slice_exit_lo && parent_ip < rseq_slice_exit_hi;
}

enum rseq_slice_exit rseq_slice_exit_resolve(enum rseq_slice_exit kind, struct pt_regs *regs);

/* task.c */
struct rseq_slice_task {
	struct hlist_node node;		/* in the hash, keyed by @task */
	struct task_struct *task;	/* the owner; not counted, removed at exit */
	u64 uaddr;			/* user address of the control word */
	u32 *ctrl;			/* the control word, kernel mapping */
	struct page *page;		/* its page, pinned */
	struct user_struct *user;	/* charged one page, or NULL */
	bool yielded;			/* syscall entry ended a grant for a yield */
	struct llist_node free_node;
	struct rcu_head rcu;
};

struct rseq_slice_task *rseq_slice_task_find(struct task_struct *task);
struct rseq_slice_task *rseq_slice_task_prepare(u64 uaddr);
void rseq_slice_task_discard(struct rseq_slice_task *st);
int rseq_slice_task_install(struct rseq_slice_task *st, bool *added);
bool rseq_slice_task_unregister_current(void);
void rseq_slice_task_clear_request(struct task_struct *task);
void rseq_slice_task_unregister_all(void);
void rseq_slice_task_flush(void);

/* grant.c */
enum rseq_slice_end {
	RSEQ_SLICE_BY_REVOKE,
	RSEQ_SLICE_BY_YIELD,
	RSEQ_SLICE_BY_ABORT,
	RSEQ_SLICE_BY_KILL,
};

void rseq_slice_grant_init(void);
void rseq_slice_grant_exit(void);
bool rseq_slice_grant_at_exit(enum rseq_slice_exit kind, struct pt_regs *regs);
void rseq_slice_grant_syscall(struct pt_regs *regs);
void rseq_slice_grant_switch(struct task_struct *prev);
void rseq_slice_grant_signal(void);
bool rseq_slice_grant_end_current(enum rseq_slice_end why);
void rseq_slice_grant_end_all(void);
int rseq_slice_grant_yield(struct rseq_slice_task *st);
struct task_struct *rseq_slice_grant_holder(void);
void rseq_slice_resched_current(void);

/* hooks.c */
int rseq_slice_hooks_init(void);
void rseq_slice_hooks_exit(void);
void rseq_slice_hooks_lock(void);
void rseq_slice_hooks_unlock(void);
int rseq_slice_hooks_lock_killable(void);
int rseq_slice_hooks_sync(void);
void rseq_slice_hooks_release(void);
int rseq_slice_hooks_enabled_changed(void);

/* main.c */
bool rseq_slice_file_is_ours(struct file *file);

#endif /* RSEQ_SLICE_INTERNAL_H */
