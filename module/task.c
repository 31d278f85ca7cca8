// SPDX-License-Identifier: GPL-2.0
/*
 * Per-thread registrations: which threads enabled time slice extension,
 * and where their control word is.
 *
 * A registration is a hash entry keyed by the task. Only the task itself
 * adds or removes its entry (ENABLE/DISABLE ioctls, the exit and exec
 * tracepoints), except at module unload, when no hook and no ioctl can run
 * any more. Lookups are RCU-safe and lockless; updates take a spinlock.
 *
 * The control word is written from contexts that must neither fault nor
 * sleep (the scheduler, the hrtimer interrupt), so ENABLE pins its page
 * and the module uses the kernel's direct mapping of it. The pin is charged
 * to the user's RLIMIT_MEMLOCK like io_uring's buffers, unless the caller
 * has CAP_IPC_LOCK.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/hashtable.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pagemap.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/llist.h>
#include <linux/task_work.h>
#include <linux/workqueue.h>

#include <linux/rseq_slice.h>
#include "compat.h"
#include "rseq_slice.h"

#define RSEQ_SLICE_HASH_BITS	10

static DEFINE_HASHTABLE(rseq_slice_tasks, RSEQ_SLICE_HASH_BITS);
/*
 * Raw: taken with preemption disabled (the exit and exec tracepoints, the
 * schedule() hook), where PREEMPT_RT's sleeping spinlock_t must not be
 * taken; held for a hash update only.
 */
static DEFINE_RAW_SPINLOCK(rseq_slice_tasks_lock);
/* Registrations (the hooks stay armed while there are any) and pins. */
static atomic_t rseq_slice_nr_threads = ATOMIC_INIT(0);
static atomic_t rseq_slice_nr_pinned = ATOMIC_INIT(0);
/* Of the registrations, those made by prctl (the yield's hook is armed). */
static atomic_t rseq_slice_nr_merged = ATOMIC_INIT(0);

/* Any context: how many threads are registered. */
int rseq_slice_task_count(void)
{
	return atomic_read(&rseq_slice_nr_threads);
}

/* Any context: how many threads are registered through prctl. */
int rseq_slice_task_merged_count(void)
{
	return atomic_read(&rseq_slice_nr_merged);
}

/* Any context: how many pages registrations hold pinned. */
int rseq_slice_task_pinned(void)
{
	return atomic_read(&rseq_slice_nr_pinned);
}

/* Any context; the caller holds rcu_read_lock() or preemption disabled. */
struct rseq_slice_task *rseq_slice_task_find(struct task_struct *task)
{
	struct rseq_slice_task *st;

	hash_for_each_possible_rcu(rseq_slice_tasks, st, node, (unsigned long)task,
				   lockdep_is_held(&rseq_slice_tasks_lock)) {
		if (st->task == task)
			return st;
	}
	return NULL;
}

#ifndef CONFIG_PREEMPT_NOTIFIERS
/*
 * Current's registration, or NULL, where no notifier list tells it
 * (rseq_slice.h). Any context of current: only the thread itself removes
 * its entry (or unload, once no caller is left), so the pointer stays
 * valid after the lookup's RCU section. The section is an RCU-sched one,
 * which kfree_rcu() waits for as for any other: on Debian's
 * preemptible-RCU kernels rcu_read_lock() and rcu_read_unlock() are two
 * calls, on the path of every v1 yield.
 */
struct rseq_slice_task *rseq_slice_task_current(void)
{
	struct rseq_slice_task *st;

	rcu_read_lock_sched();
	st = rseq_slice_task_find(current);
	rcu_read_unlock_sched();
	return st;
}
#endif

/*
 * The page is charged to the user's RLIMIT_MEMLOCK count, as io_uring and
 * RDMA charge theirs. The registration holds a reference to the cred it
 * charged through, not to the user_struct itself: put_cred() is exported
 * by every Debian 12 kernel ABI, free_uid() only by some (not 6.1.0-47 and
 * -50, the point release's), and the cred keeps its user alive.
 */
static int rseq_slice_charge(struct user_struct *user)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	unsigned long cur = atomic_long_read(&user->locked_vm);

	do {
		if (cur + 1 > limit)
			return -ENOMEM;
	} while (!atomic_long_try_cmpxchg(&user->locked_vm, &cur, cur + 1));
	return 0;
}

/* The free work item, or ENABLE before the hash: process context. */
static void rseq_slice_uncharge(struct rseq_slice_task *st)
{
	if (!st->cred)
		return;
	atomic_long_dec(&st->cred->user->locked_vm);
	put_cred(st->cred);
	st->cred = NULL;
}

/*
 * Unpinning dirties the page under its lock, which may sleep, and the
 * exit and exec tracepoints run with preemption disabled: registrations
 * are released from a work item.
 */
static LLIST_HEAD(rseq_slice_free_list);

static void rseq_slice_free_fn(struct work_struct *work)
{
	struct llist_node *list = llist_del_all(&rseq_slice_free_list);
	struct rseq_slice_task *st, *tmp;

	llist_for_each_entry_safe(st, tmp, list, free_node) {
		/* The kernel wrote the word through its own mapping: dirty it. */
		unpin_user_pages_dirty_lock(&st->page, 1, true);
		atomic_dec(&rseq_slice_nr_pinned);
		rseq_slice_uncharge(st);
		/* NULL while queued: the callback frees it then. */
		kfree(st->kill);
		/* Lockless lookups may still be walking past it. */
		kfree_rcu(st, rcu);
	}
}

static DECLARE_WORK(rseq_slice_free_work, rseq_slice_free_fn);

/* Any context. The entry is already out of the hash. */
static void rseq_slice_task_free(struct rseq_slice_task *st)
{
	atomic_dec(&rseq_slice_nr_threads);
	if (st->w.merged)
		atomic_dec(&rseq_slice_nr_merged);
	if (llist_add(&st->free_node, &rseq_slice_free_list))
		schedule_work(&rseq_slice_free_work);
}

/*
 * Module unload (and a failed load), every registration released: wait
 * until every released page is unpinned, and until no task is left in a
 * kill callback's last instructions (rseq_slice_kill_fn()).
 */
void rseq_slice_task_flush(void)
{
	flush_work(&rseq_slice_free_work);
	synchronize_rcu_tasks();
}

/*
 * Unpin, uncharge and free a registration that never made it into the
 * hash. Process context, may sleep.
 */
void rseq_slice_task_discard(struct rseq_slice_task *st)
{
	unpin_user_page(st->page);
	atomic_dec(&rseq_slice_nr_pinned);
	rseq_slice_uncharge(st);
	kfree(st->kill);
	kfree(st);
}

/*
 * ENABLE's first half: allocate, charge and pin a registration of the
 * control word at @uaddr for current, not yet in the hash; @merged: the
 * rseq area's slice_ctrl, enabled by prctl (merged upstream's layout and
 * rules), else v1's word registered by the ioctl. Process
 * context, may sleep, and is called with no lock held: the pin may fault
 * on a file system that takes as long as it likes (FUSE, NFS), and that
 * wait must hold up nobody but this thread. The fault is killable.
 * Returns the registration or an ERR_PTR() of the ABI's errno.
 */
struct rseq_slice_task *rseq_slice_task_prepare(u64 uaddr, bool merged)
{
	struct rseq_slice_task *st;
	struct page *page;
	int ret;

	st = kzalloc(sizeof(*st), GFP_KERNEL_ACCOUNT);
	if (!st)
		return ERR_PTR(-ENOMEM);
	/* Allocated now: the system call hook that queues it cannot allocate. */
	st->kill = kmalloc(sizeof(*st->kill), GFP_KERNEL_ACCOUNT);
	if (!st->kill) {
		kfree(st);
		return ERR_PTR(-ENOMEM);
	}

	if (!capable(CAP_IPC_LOCK)) {
		st->cred = get_current_cred();
		ret = rseq_slice_charge(st->cred->user);
		/*
		 * A registration that just ended (DISABLE, a thread's exit)
		 * gives its charge back from the work item: let it run, so
		 * that a user at the limit can always register again.
		 */
		if (ret) {
			flush_work(&rseq_slice_free_work);
			ret = rseq_slice_charge(st->cred->user);
		}
		if (ret)
			goto out_free;
	}

	/*
	 * Fault the word in first, killably and without mmap_lock held
	 * across the wait: 6.1's FOLL_LONGTERM pin faults with the lock
	 * held and not killably, so a withheld read (FUSE) would make the
	 * pin an unkillable sleep. The pin then finds the page present.
	 */
	if (fault_in_safe_writeable((const char __user *)(uintptr_t)uaddr, sizeof(u32))) {
		ret = fatal_signal_pending(current) ? -EINTR : -EFAULT;
		goto out_uncharge;
	}
	/*
	 * FOLL_LONGTERM: the page stays pinned for as long as the thread is
	 * registered; GUP moves it out of movable zones first. FOLL_WRITE
	 * breaks COW now, so the page is this process's own.
	 */
	ret = pin_user_pages_fast(uaddr & PAGE_MASK, 1, FOLL_WRITE | FOLL_LONGTERM, &page);
	if (ret != 1) {
		/* Anything but running out of memory means a bad address. */
		ret = ret == -ENOMEM ? -ENOMEM : -EFAULT;
		goto out_uncharge;
	}
	/*
	 * Private memory only: a shared or file-backed page would be written
	 * behind the page cache's back and could be seen by other processes.
	 */
	if (!PageAnon(page)) {
		unpin_user_page(page);
		ret = -EFAULT;
		goto out_uncharge;
	}
	atomic_inc(&rseq_slice_nr_pinned);

	st->task = current;
	st->uaddr = uaddr;
	st->page = page;
	st->w.ctrl = page_address(page) + offset_in_page(uaddr);
	st->w.merged = merged;
	st->w.granted = merged ? RSEQ_SLICE_MERGED_GRANTED : RSEQ_SLICE_EXT_GRANTED;
	rseq_slice_switch_init_task(st);
	return st;

out_uncharge:
	rseq_slice_uncharge(st);
	kfree(st->kill);
	kfree(st);
	return ERR_PTR(ret);
out_free:
	put_cred(st->cred);	/* charged nothing */
	kfree(st->kill);
	kfree(st);
	return ERR_PTR(ret);
}

/*
 * ENABLE's second half: make @st (from rseq_slice_task_prepare()) current's
 * registration. Process context; never sleeps inside the hash lock.
 * Consumes @st. Sets *@added if current had no registration before.
 *
 * Enabling the same address again re-validates it: if the address now
 * maps another page than the pinned one (munmap() and a new mapping,
 * MADV_DONTNEED, mremap()), the registration moves to the new page and
 * the old one is unpinned; the kernel would otherwise go on writing a
 * page the thread no longer sees.
 */
int rseq_slice_task_install(struct rseq_slice_task *st, bool *added)
{
	struct rseq_slice_task *old;

	*added = false;
	raw_spin_lock(&rseq_slice_tasks_lock);
	old = rseq_slice_task_find(current);
	if (!old) {
		hash_add_rcu(rseq_slice_tasks, &st->node, (unsigned long)current);
		rseq_slice_switch_link(st);
		raw_spin_unlock(&rseq_slice_tasks_lock);
		atomic_inc(&rseq_slice_nr_threads);
		if (st->w.merged)
			atomic_inc(&rseq_slice_nr_merged);
		*added = true;
		return 0;
	}
	if (old->uaddr != st->uaddr || old->w.merged != st->w.merged || old->page == st->page) {
		/* Enabled the other way, or with another word: EBUSY. */
		int ret = old->uaddr == st->uaddr && old->w.merged == st->w.merged ? 0 : -EBUSY;

		raw_spin_unlock(&rseq_slice_tasks_lock);
		rseq_slice_task_discard(st);
		return ret;
	}
	/*
	 * A grant refers to the old registration (none should run: ENABLE
	 * is a system call, and the entry hook ended it). The lock keeps
	 * preemption off, so this thread's own switch-out callback, the only
	 * other reader of its entry, cannot run in between.
	 */
	rseq_slice_grant_end_current(RSEQ_SLICE_BY_REVOKE);
	hlist_replace_rcu(&old->node, &st->node);
	rseq_slice_switch_unlink(old);
	rseq_slice_switch_link(st);
	raw_spin_unlock(&rseq_slice_tasks_lock);
	/* rseq_slice_task_free() counts the old one out. */
	atomic_inc(&rseq_slice_nr_threads);
	if (st->w.merged)
		atomic_inc(&rseq_slice_nr_merged);
	rseq_slice_task_free(old);
	return 0;
}

/*
 * Drop the current task's registration, if any: DISABLE, exit, exec.
 * Any context of the task itself, including with preemption disabled
 * (tracepoints); never sleeps. Returns true if there was one.
 *
 * Every exit and exec in the system comes here while the module is
 * loaded and anybody is registered, so the lookup is lockless: only the
 * task itself adds or removes its entry, so what it finds (or does not
 * find) cannot change under it. Only a registered thread takes the lock.
 */
bool rseq_slice_task_unregister_current(void)
{
	struct rseq_slice_task *st;

	rcu_read_lock();
	st = rseq_slice_task_find(current);
	rcu_read_unlock();
	if (likely(!st))
		return false;

	raw_spin_lock(&rseq_slice_tasks_lock);
	hash_del_rcu(&st->node);
	/*
	 * A grant refers to the control word: end it before the unpin, and
	 * before the switch-out callback that would end it is unlinked.
	 */
	rseq_slice_grant_end_current(RSEQ_SLICE_BY_REVOKE);
	rseq_slice_switch_unlink(st);
	raw_spin_unlock(&rseq_slice_tasks_lock);

	rseq_slice_task_free(st);
	return true;
}

/*
 * @task, current on this CPU, is being switched out or is about to run a
 * signal handler: a REQUEST still set is cleared, so that the critical
 * section reads "interrupted". Interrupts or preemption disabled: an
 * RCU-sched read side, and the owner stays on this CPU.
 */
static void rseq_slice_task_clear_request_st(struct rseq_slice_task *st)
{
	/* A word the thread's rseq area no longer holds is not touched. */
	if (unlikely(st) && !rseq_slice_task_area_moved(st))
		rseq_slice_word_clear_request(&st->w);
}

void rseq_slice_task_clear_request(struct task_struct *task)
{
	lockdep_assert_preemption_disabled();
	rseq_slice_task_clear_request_st(rseq_slice_task_find(task));
}

/* The same for current, found in its own notifier list (no hash lookup). */
void rseq_slice_task_clear_request_current(void)
{
	lockdep_assert_preemption_disabled();
	rseq_slice_task_clear_request_st(rseq_slice_task_current());
}

/*
 * The SIGSEGV of foreign_syscall=kill, or of a word debug=1 finds wrong,
 * is earned at a system call's entry, in an ftrace callback. It cannot be
 * sent there: force_sig() takes the sighand lock, a sleeping lock on
 * PREEMPT_RT, and whether that callback may sleep is ftrace's choice, not
 * ours: through a per-ops trampoline it runs as its caller does, through
 * ftrace_ops_list_func() (arm64's 6.1 always; any kernel once a second
 * ftrace user, the function tracer say, traces the same function) with
 * preemption disabled. Nor can it allocate there (not on RT either). So
 * each registration carries a callback_head allocated at ENABLE, which
 * the hook queues as task work (TWA_RESUME): the callback runs in the
 * thread's own context, preemptible, before it returns to user space
 * (after the call itself, as force_sig() from the hook was delivered) or
 * in do_exit() if the call never returns.
 *
 * Who may touch st->kill, and why no lock is needed:
 *
 *  - Only current queues its own (the hook) and only current's callback
 *    gives it back: both run in the thread's own context, never at once.
 *    While queued, st->kill is NULL: the task_works list owns the item,
 *    and the callback frees it or hands it back to current's registration
 *    of the moment.
 *  - The registration may go while the item is queued: DISABLE, exec or
 *    exit in the very call that earned the signal. Those are current's own
 *    too, and free st, not the item. An exec'd program gets the signal
 *    (as force_sig() from the hook gave it); an exiting thread none.
 *  - The callback's code is this module's: a queued item holds a module
 *    reference, so unload (which frees the registrations with their
 *    items) cannot begin while one is queued. The callback drops it as
 *    its last act; the return after it is covered by the RCU Tasks grace
 *    period of rseq_slice_task_flush(), as merged.c's prctl callers are.
 *  - The reference is taken only while the module is live: not during
 *    init, whose failure frees the module whatever its count (do_init_module()),
 *    nor once unload began (try_module_get() fails). The signal is then
 *    lost and the caller gives the reschedule back instead.
 */
static void rseq_slice_kill_fn(struct callback_head *kill)
{
	struct rseq_slice_task *st;

	/* The point of it all: a context that may sleep. */
	might_sleep();
	if (!(current->flags & PF_EXITING))
		force_sig(SIGSEGV);
	st = rseq_slice_task_current();
	if (st && !st->kill)
		st->kill = kill;
	else
		kfree(kill);
	module_put(THIS_MODULE);
}

/*
 * The system call hook: current, which held a grant at this call's entry,
 * is owed a SIGSEGV. Preemption disabled (an RCU-sched read side). Queues
 * it (see above); returns false if it cannot be sent.
 */
bool rseq_slice_task_kill_current(void)
{
	struct rseq_slice_task *st = rseq_slice_task_current();
	struct callback_head *kill;

	lockdep_assert_preemption_disabled();
	if (!st)
		return false;
	/* Queued already: the signal is on its way. */
	if (!st->kill)
		return true;
	if (READ_ONCE(THIS_MODULE->state) != MODULE_STATE_LIVE || !try_module_get(THIS_MODULE))
		return false;
	kill = st->kill;
	init_task_work(kill, rseq_slice_kill_fn);
	if (task_work_add(current, kill, TWA_RESUME)) {
		module_put(THIS_MODULE);
		return false;
	}
	st->kill = NULL;
	return true;
}

/*
 * Module unload: every hook is gone and every grant has ended, so nothing
 * but this function looks at the registrations any more.
 */
void rseq_slice_task_unregister_all(void)
{
	struct rseq_slice_task *st;
	struct hlist_node *tmp;
	unsigned int bkt;

	raw_spin_lock(&rseq_slice_tasks_lock);
	hash_for_each_safe(rseq_slice_tasks, bkt, tmp, st, node) {
		hash_del_rcu(&st->node);
		rseq_slice_task_free(st);
	}
	raw_spin_unlock(&rseq_slice_tasks_lock);
}

/*
 * Call @fn on every registration. Only where nothing can add or remove
 * one: unload, with every CPU stopped (switch.c).
 */
void rseq_slice_task_for_each(void (*fn)(struct rseq_slice_task *st))
{
	struct rseq_slice_task *st;
	unsigned int bkt;

	hash_for_each(rseq_slice_tasks, bkt, st, node)
		fn(st);
}
