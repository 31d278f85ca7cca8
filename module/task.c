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
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/hashtable.h>
#include <linux/mm.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/llist.h>
#include <linux/workqueue.h>

#include <linux/rseq_slice.h>
#include "rseq_slice.h"

#define RSEQ_SLICE_HASH_BITS	10

static DEFINE_HASHTABLE(rseq_slice_tasks, RSEQ_SLICE_HASH_BITS);
static DEFINE_SPINLOCK(rseq_slice_tasks_lock);

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
		if (st->user) {
			atomic_long_dec(&st->user->locked_vm);
			free_uid(st->user);
		}
		/* Lockless lookups may still be walking past it. */
		kfree_rcu(st, rcu);
	}
}

static DECLARE_WORK(rseq_slice_free_work, rseq_slice_free_fn);

/* Any context. The entry is already out of the hash. */
static void rseq_slice_task_free(struct rseq_slice_task *st)
{
	atomic_dec(&rseq_slice_nr_threads);
	if (llist_add(&st->free_node, &rseq_slice_free_list))
		schedule_work(&rseq_slice_free_work);
}

/* Module unload: wait until every released page is unpinned. */
void rseq_slice_task_flush(void)
{
	flush_work(&rseq_slice_free_work);
}

/*
 * Process context, may sleep. Returns 0 or a negative errno as the ABI
 * documents. The caller serializes against hook (un)registration.
 */
int rseq_slice_task_register(u64 uaddr)
{
	struct rseq_slice_task *st;
	struct page *page;
	int ret;

	/* Only this task adds or removes its own entry: st stays valid. */
	rcu_read_lock();
	st = rseq_slice_task_find(current);
	rcu_read_unlock();
	if (st)
		return st->uaddr == uaddr ? 0 : -EBUSY;

	st = kzalloc(sizeof(*st), GFP_KERNEL_ACCOUNT);
	if (!st)
		return -ENOMEM;

	if (!capable(CAP_IPC_LOCK)) {
		st->user = get_uid(current_user());
		ret = rseq_slice_charge(st->user);
		/*
		 * A registration that just ended (DISABLE, a thread's exit)
		 * gives its charge back from the work item: let it run, so
		 * that a user at the limit can always register again.
		 */
		if (ret) {
			flush_work(&rseq_slice_free_work);
			ret = rseq_slice_charge(st->user);
		}
		if (ret)
			goto err_user;
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
		goto err_charge;
	}
	/*
	 * Private memory only: a shared or file-backed page would be written
	 * behind the page cache's back and could be seen by other processes.
	 */
	if (!PageAnon(page)) {
		unpin_user_page(page);
		ret = -EFAULT;
		goto err_charge;
	}
	atomic_inc(&rseq_slice_nr_pinned);

	st->task = current;
	st->uaddr = uaddr;
	st->page = page;
	st->ctrl = page_address(page) + offset_in_page(uaddr);

	spin_lock(&rseq_slice_tasks_lock);
	hash_add_rcu(rseq_slice_tasks, &st->node, (unsigned long)current);
	spin_unlock(&rseq_slice_tasks_lock);
	atomic_inc(&rseq_slice_nr_threads);
	return 0;

err_charge:
	if (st->user)
		atomic_long_dec(&st->user->locked_vm);
err_user:
	if (st->user)
		free_uid(st->user);
	kfree(st);
	return ret;
}

/*
 * Drop the current task's registration, if any: DISABLE, exit, exec.
 * Any context of the task itself, including with preemption disabled
 * (tracepoints); never sleeps. Returns true if there was one.
 */
bool rseq_slice_task_unregister_current(void)
{
	struct rseq_slice_task *st;

	spin_lock(&rseq_slice_tasks_lock);
	st = rseq_slice_task_find(current);
	if (st)
		hash_del_rcu(&st->node);
	spin_unlock(&rseq_slice_tasks_lock);
	if (!st)
		return false;

	/* A grant refers to the control word: end it before the unpin. */
	rseq_slice_grant_end_current(RSEQ_SLICE_BY_REVOKE);
	rseq_slice_task_free(st);
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

	spin_lock(&rseq_slice_tasks_lock);
	hash_for_each_safe(rseq_slice_tasks, bkt, tmp, st, node) {
		hash_del_rcu(&st->node);
		rseq_slice_task_free(st);
	}
	spin_unlock(&rseq_slice_tasks_lock);
}
