// SPDX-License-Identifier: GPL-2.0
/*
 * rseq_slice: time slice extension for stock kernels, as a module.
 *
 * The misc device /dev/rseq_slice is the way in: its ioctls act on the
 * calling thread, never on the open file, so any thread of any process
 * that can open the device manages only itself.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/uaccess.h>

#include <linux/rseq_slice.h>
#include "compat.h"
#include "rseq_slice.h"

static int rseq_slice_enable(const void __user *arg)
{
	struct rseq_slice_register reg;

	if (copy_from_user(&reg, arg, sizeof(reg)))
		return -EFAULT;
	if (reg.flags || reg.reserved || (reg.ctrl & (sizeof(u32) - 1)))
		return -EINVAL;
	return rseq_slice_hooks_register_current(reg.ctrl, false);
}

/*
 * Current's registration if the ioctl made it, else NULL: each ABI sees
 * only its own (a thread enabled through prctl is not enabled here).
 */
static struct rseq_slice_task *rseq_slice_ioctl_task(void)
{
	struct rseq_slice_task *st = rseq_slice_task_current();

	return st && !st->w.merged ? st : NULL;
}

static int rseq_slice_disable(void)
{
	if (rseq_slice_ioctl_task())
		rseq_slice_hooks_unregister_current();
	return 0;
}

static int rseq_slice_get(void)
{
	return !!rseq_slice_ioctl_task();
}

static int rseq_slice_yield(void)
{
	struct rseq_slice_task *st = rseq_slice_ioctl_task();

	return rseq_slice_grant_yield(st ? &st->w : NULL);
}

static int rseq_slice_info(void __user *arg)
{
	/* Every byte defined: the reserved words go out as zero. */
	struct rseq_slice_info info = {
		.abi_version = RSEQ_SLICE_ABI_VERSION,
		.grant_ns = READ_ONCE(rseq_slice_grant_ns),
		.grant_ns_min = RSEQ_SLICE_GRANT_NS_MIN,
		.grant_ns_max = RSEQ_SLICE_GRANT_NS_MAX,
	};

	BUILD_BUG_ON(sizeof(info) != 64);
	if (READ_ONCE(rseq_slice_enabled))
		info.flags |= RSEQ_SLICE_INFO_ENABLED;
	if (READ_ONCE(rseq_slice_debug))
		info.flags |= RSEQ_SLICE_INFO_DEBUG;
	if (READ_ONCE(rseq_slice_foreign) == RSEQ_SLICE_FOREIGN_ABORT)
		info.flags |= RSEQ_SLICE_INFO_ABORT;
	if (RSEQ_SLICE_NO_GRANTS)
		info.flags |= RSEQ_SLICE_INFO_NO_GRANTS;
	return copy_to_user(arg, &info, sizeof(info)) ? -EFAULT : 0;
}

static long rseq_slice_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case RSEQ_SLICE_IOC_ENABLE:
		return rseq_slice_enable(uarg);
	case RSEQ_SLICE_IOC_DISABLE:
		return rseq_slice_disable();
	case RSEQ_SLICE_IOC_GET:
		return rseq_slice_get();
	case RSEQ_SLICE_IOC_YIELD:
		return rseq_slice_yield();
	case RSEQ_SLICE_IOC_INFO:
		return rseq_slice_info(uarg);
	default:
		return -ENOTTY;
	}
}

/*
 * .owner makes an open file hold a module reference: unloading the module
 * while the device is open is refused (delete_module() fails with
 * EWOULDBLOCK).
 */
static const struct file_operations rseq_slice_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = rseq_slice_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice rseq_slice_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "rseq_slice",
	.fops = &rseq_slice_fops,
	.mode = 0666,
};

/*
 * misc_register(), or in the fault injection build its injected failure:
 * that one waits (up to 10 s) for a thread to enable through the prctl,
 * which is live by then, so that the failed load has a registration, a
 * pin and a charge to undo. Module init.
 */
static int rseq_slice_misc_register(void)
{
	unsigned int i;

	if (!rseq_slice_inject_take(RSEQ_SLICE_INJECT_MISC_REGISTER))
		return misc_register(&rseq_slice_misc);
	for (i = 0; i < 500 && !rseq_slice_task_merged_count(); i++)
		msleep(20);
	pr_warn("injected: misc_register() fails (%d prctl registrations)\n",
		rseq_slice_task_merged_count());
	return -EBUSY;
}

/*
 * Undo what init did, in the order that makes each step safe for the
 * next: shared by unload and by an init that failed once the prctl hook
 * was live (a thread may have enabled through it, and armed the hooks,
 * been granted, queued a free).
 */
static void rseq_slice_teardown(void)
{
	rseq_slice_stats_exit();
	/* No grant from here on... */
	rseq_slice_hooks_stop();
	/* ...no prctl can register... */
	rseq_slice_merged_exit();
	/* ...no hook runs after this... */
	rseq_slice_hooks_exit();
	/* ...so the registrations can go, pins and all... */
	rseq_slice_task_unregister_all();
	rseq_slice_task_flush();
	/* ...and no timer can be left armed. */
	rseq_slice_grant_exit();
}

static int __init rseq_slice_init(void)
{
	int ret;

	ret = rseq_slice_symbols_init();
	if (ret)
		return ret;
	/*
	 * A kernel built with the feature has its own grants, prctl and
	 * yield: two mechanisms on one control word would fight. Use the
	 * kernel's. EBUSY, not EEXIST: init_module() reserves EEXIST for "a
	 * module of this name is loaded", and 7.x, the only kernels with the
	 * feature, turn a module's EEXIST into EBUSY anyway (seen on
	 * 7.2-upstream).
	 */
	if (rseq_slice_symbol("rseq_slice_extension_prctl")) {
		pr_err("this kernel has CONFIG_RSEQ_SLICE_EXTENSION: use its prctl(PR_RSEQ_SLICE_EXTENSION) instead\n");
		return -EBUSY;
	}
	/*
	 * Loaded all the same: the registrations, both ABIs and the
	 * statistics work, each REQUEST is denied and counted, and programs
	 * written for the feature run unchanged, as without it.
	 */
	if (RSEQ_SLICE_NO_GRANTS)
		pr_notice("PREEMPT_RT without a lazy reschedule request: nothing can be deferred, every REQUEST is denied\n");
	rseq_slice_grant_init();
	/* Until the prctl hook is live nobody can register: its own unwind. */
	ret = rseq_slice_hooks_init(&rseq_slice_fops);
	if (ret)
		return ret;
	/* Reports its own failures and leaves the ioctls working. */
	rseq_slice_merged_init();
	rseq_slice_stats_init();
	rseq_slice_inject_init();
	ret = rseq_slice_misc_register();
	if (ret) {
		pr_err("cannot register the device: %d\n", ret);
		rseq_slice_teardown();
	}
	return ret;
}

static void __exit rseq_slice_exit(void)
{
	/* No ioctl can be running: an open file holds the module. */
	misc_deregister(&rseq_slice_misc);
	rseq_slice_teardown();
}

module_init(rseq_slice_init);
module_exit(rseq_slice_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Time slice extension (rseq slice) for kernels without CONFIG_RSEQ_SLICE_EXTENSION");
MODULE_AUTHOR("rseq-slice developers");
MODULE_VERSION("1.0");
