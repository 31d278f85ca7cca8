// SPDX-License-Identifier: GPL-2.0
/*
 * Fault injection, built only with RSEQ_SLICE_FAULT_INJECT=y: the module
 * the selftests load to reach failures a test machine cannot produce on
 * demand. Root's debugfs file rseq_slice/inject reads the counts left
 * and takes one command per write:
 *
 *   unhook N    the next N removals of an ftrace hook are refused, the hook
 *               staying registered (as after an ftrace bug)
 *   end_ipi N   the next N grants meet the end-all IPI's handler on their
 *               CPU, a microsecond in (as enabled=0 or an unload from
 *               another CPU, which emulation cannot time inside a grant)
 *   release     remove for real the hooks a refusal kept, drop the pin
 *
 * Two more points fail during module init, before the file exists: the
 * load-time parameter inject=NAME:N[,NAME:N...] sets their counts (any
 * point's, in fact):
 *
 *   yield_lookup   rseq_slice_yield()'s hook point is not found (as on a
 *                  kernel whose layout the module does not know)
 *   misc_register  misc_register() fails, once a thread has enabled
 *                  through the prctl (waiting up to 10 s for one), so
 *                  that the failed load has a registration to undo
 *
 * The counts live in params.c; the points that take them are in hooks.c,
 * grant.c and main.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/moduleparam.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "rseq_slice.h"

static const char * const rseq_slice_inject_names[RSEQ_SLICE_INJECT_NR] = {
	[RSEQ_SLICE_INJECT_UNHOOK] = "unhook",
	[RSEQ_SLICE_INJECT_END_IPI] = "end_ipi",
	[RSEQ_SLICE_INJECT_YIELD_LOOKUP] = "yield_lookup",
	[RSEQ_SLICE_INJECT_MISC_REGISTER] = "misc_register",
};

/* "NAME N" (@sep ' ', debugfs) or "NAME:N" (@sep ':', the parameter). */
static int rseq_slice_inject_set(const char *arg, char sep)
{
	unsigned int n;
	int i;

	for (i = 0; i < RSEQ_SLICE_INJECT_NR; i++) {
		size_t len = strlen(rseq_slice_inject_names[i]);

		if (strncmp(arg, rseq_slice_inject_names[i], len) || arg[len] != sep)
			continue;
		if (kstrtouint(arg + len + 1, 10, &n) || n > INT_MAX)
			return -EINVAL;
		atomic_set(&rseq_slice_inject[i], n);
		return 0;
	}
	return -EINVAL;
}

/* The load-time parameter: before module init, or root's sysfs write. */
static int rseq_slice_inject_param_set(const char *val, const struct kernel_param *kp)
{
	char buf[128], *cur, *tok;
	int ret;

	if (strscpy(buf, val, sizeof(buf)) < 0)
		return -EINVAL;
	cur = strim(buf);
	while ((tok = strsep(&cur, ","))) {
		ret = rseq_slice_inject_set(tok, ':');
		if (ret)
			return ret;
	}
	return 0;
}

static const struct kernel_param_ops rseq_slice_inject_param_ops = {
	.set = rseq_slice_inject_param_set,
};
module_param_cb(inject, &rseq_slice_inject_param_ops, NULL, 0200);
MODULE_PARM_DESC(inject, "Fault injection build: NAME:N[,NAME:N...], failures from load on");

static ssize_t rseq_slice_inject_read(struct file *file, char __user *ubuf,
				      size_t count, loff_t *ppos)
{
	char buf[128];
	int i, len = 0;

	for (i = 0; i < RSEQ_SLICE_INJECT_NR; i++)
		len += scnprintf(buf + len, sizeof(buf) - len, "%s %d\n",
				 rseq_slice_inject_names[i],
				 atomic_read(&rseq_slice_inject[i]));
	return simple_read_from_buffer(ubuf, count, ppos, buf, len);
}

/* Process context, root (the file's mode). */
static ssize_t rseq_slice_inject_write(struct file *file, const char __user *ubuf,
				       size_t count, loff_t *ppos)
{
	char buf[32], *arg;
	int ret;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	arg = strim(buf);
	if (!strcmp(arg, "release")) {
		rseq_slice_hooks_inject_release();
		return count;
	}
	ret = rseq_slice_inject_set(arg, ' ');
	return ret ? ret : count;
}

static const struct file_operations rseq_slice_inject_fops = {
	.owner = THIS_MODULE,
	.read = rseq_slice_inject_read,
	.write = rseq_slice_inject_write,
	.llseek = default_llseek,
};

/* After rseq_slice_stats_init(); removed with its directory. */
void rseq_slice_inject_init(void)
{
	pr_warn("fault injection build: for the selftests only\n");
	debugfs_create_file("inject", 0600, rseq_slice_stats_dir(), NULL,
			    &rseq_slice_inject_fops);
}
