// SPDX-License-Identifier: GPL-2.0
/*
 * Module parameters. All but merged_abi can be written at runtime through
 * /sys/module/rseq_slice/parameters/; readers on hot paths use READ_ONCE()
 * and tolerate a value changing under them. The value of enabled lives
 * here; its setter, which arms and disarms the hooks, is in hooks.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/moduleparam.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "rseq_slice.h"

unsigned int rseq_slice_grant_ns = RSEQ_SLICE_GRANT_NS_DEFAULT;
bool rseq_slice_enabled = true;
bool rseq_slice_debug;
int rseq_slice_foreign = RSEQ_SLICE_FOREIGN_KILL;
bool rseq_slice_merged_abi = true;

static int grant_ns_set(const char *val, const struct kernel_param *kp)
{
	unsigned int ns;
	int ret;

	ret = kstrtouint(val, 0, &ns);
	if (ret)
		return ret;
	if (ns < RSEQ_SLICE_GRANT_NS_MIN || ns > RSEQ_SLICE_GRANT_NS_MAX)
		return -EINVAL;
	WRITE_ONCE(rseq_slice_grant_ns, ns);
	return 0;
}

static const struct kernel_param_ops grant_ns_ops = {
	.set = grant_ns_set,
	.get = param_get_uint,
};
module_param_cb(grant_ns, &grant_ns_ops, &rseq_slice_grant_ns, 0644);
MODULE_PARM_DESC(grant_ns, "Length of a grant in ns (5000..50000, default 30000)");

static const char * const foreign_names[] = {
	[RSEQ_SLICE_FOREIGN_KILL] = "kill",
	[RSEQ_SLICE_FOREIGN_ABORT] = "abort",
};

static int foreign_set(const char *val, const struct kernel_param *kp)
{
	int i = sysfs_match_string(foreign_names, val);

	if (i < 0)
		return -EINVAL;
	WRITE_ONCE(rseq_slice_foreign, i);
	return 0;
}

static int foreign_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", foreign_names[READ_ONCE(rseq_slice_foreign)]);
}

static const struct kernel_param_ops foreign_ops = {
	.set = foreign_set,
	.get = foreign_get,
};
module_param_cb(foreign_syscall, &foreign_ops, NULL, 0644);
MODULE_PARM_DESC(foreign_syscall,
		 "A system call other than the yield while granted: kill (SIGSEGV, v1, default) or abort (revoke the grant and run it, as merged upstream)");

module_param_named(debug, rseq_slice_debug, bool, 0644);
MODULE_PARM_DESC(debug, "Check the control word at yield and syscall entry; SIGSEGV on a violation (default 0)");

/*
 * Read at load only: the prctl hook is registered for the module's
 * lifetime (merged.c), so switching it later would strand enabled threads.
 */
module_param_named(merged_abi, rseq_slice_merged_abi, bool, 0444);
MODULE_PARM_DESC(merged_abi,
		 "Offer merged upstream's prctl and rseq_slice_yield() to every thread, as Linux 7.x does (default 1); 0: only the device's ioctls, whose permissions udev sets");

#ifdef RSEQ_SLICE_FAULT_INJECT
/* Fault injection counts, set through debugfs (inject.c). */
atomic_t rseq_slice_inject[RSEQ_SLICE_INJECT_NR];
#endif
