// SPDX-License-Identifier: GPL-2.0
/*
 * Statistics in debugfs rseq_slice/stats, with upstream's names
 * (kernel/rseq.c, CONFIG_RSEQ_STATS) and format, plus what only a module
 * has to report: the number of registered threads and of pinned pages.
 * Upstream's own debugfs names, rseq/stats and rseq/slice_ext_nsec, are
 * offered too where the kernel has none, so that its documentation and
 * scripts work unchanged.
 *
 * Every grant ends exactly once, as srevok, syield, sabort or skill, so
 * sgrant = srevok + syield + sabort + skill + grants still running.
 * sexpir counts timer expiries; an expired grant then ends as srevok when
 * the thread is rescheduled, as upstream counts it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dcache.h>
#include <linux/debugfs.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>

#include "rseq_slice.h"

static struct dentry *rseq_slice_debugfs;
static struct dentry *rseq_slice_upstream_debugfs;	/* rseq/, if we made it */
/* Files we added to the kernel's own rseq/, if it has one. */
static struct dentry *rseq_slice_upstream_files[2];

/* The counters upstream has, with its names and format. */
static void rseq_slice_show_upstream(struct seq_file *m, const struct rseq_slice_stats *sum)
{
	seq_printf(m, "sgrant: %16lu\n", sum->granted);
	seq_printf(m, "sexpir: %16lu\n", sum->expired);
	seq_printf(m, "srevok: %16lu\n", sum->revoked);
	seq_printf(m, "syield: %16lu\n", sum->yielded);
	seq_printf(m, "sabort: %16lu\n", sum->aborted);
}

static int rseq_slice_stats_show(struct seq_file *m, void *p)
{
	struct rseq_slice_stats sum;

	rseq_slice_grant_stats(&sum);
	rseq_slice_show_upstream(m, &sum);
	seq_printf(m, "skill:  %16lu\n", sum.killed);
	seq_printf(m, "sdeny:  %16lu\n", sum.denied);
	seq_printf(m, "sunres: %16lu\n", sum.unresolved);
	seq_printf(m, "threads: %15d\n", rseq_slice_task_count());
	seq_printf(m, "pinned: %16d\n", rseq_slice_task_pinned());
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(rseq_slice_stats);

/* Upstream's rseq/stats: its slice lines only, the others are not ours. */
static int rseq_slice_upstream_stats_show(struct seq_file *m, void *p)
{
	struct rseq_slice_stats sum;

	rseq_slice_grant_stats(&sum);
	rseq_slice_show_upstream(m, &sum);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(rseq_slice_upstream_stats);

/* Upstream's rseq/slice_ext_nsec: the grant_ns parameter, 7.2's errors. */
static int rseq_slice_ext_nsec_show(struct seq_file *m, void *p)
{
	seq_printf(m, "%u\n", READ_ONCE(rseq_slice_grant_ns));
	return 0;
}

static ssize_t rseq_slice_ext_nsec_write(struct file *file, const char __user *ubuf,
					 size_t count, loff_t *ppos)
{
	unsigned int ns;

	if (kstrtouint_from_user(ubuf, count, 10, &ns))
		return -EINVAL;
	if (ns < RSEQ_SLICE_GRANT_NS_MIN || ns > RSEQ_SLICE_GRANT_NS_MAX)
		return -ERANGE;
	WRITE_ONCE(rseq_slice_grant_ns, ns);
	return count;
}

static int rseq_slice_ext_nsec_open(struct inode *inode, struct file *file)
{
	return single_open(file, rseq_slice_ext_nsec_show, NULL);
}

static const struct file_operations rseq_slice_ext_nsec_fops = {
	.owner = THIS_MODULE,
	.open = rseq_slice_ext_nsec_open,
	.read = seq_read,
	.write = rseq_slice_ext_nsec_write,
	.llseek = seq_lseek,
	.release = single_release,
};

/* @name in the kernel's @dir unless it has one: ours, or NULL. */
static struct dentry *rseq_slice_upstream_file(struct dentry *dir, const char *name, umode_t mode,
					       const struct file_operations *fops)
{
	struct dentry *d = debugfs_lookup(name, dir);

	if (d) {
		dput(d);
		return NULL;
	}
	d = debugfs_create_file(name, mode, dir, NULL, fops);
	return IS_ERR(d) ? NULL : d;
}

void rseq_slice_stats_init(void)
{
	struct dentry *dir;

	/* debugfs is optional: failures only lose the statistics file. */
	rseq_slice_debugfs = debugfs_create_dir("rseq_slice", NULL);
	debugfs_create_file("stats", 0444, rseq_slice_debugfs, NULL, &rseq_slice_stats_fops);

	/*
	 * Upstream's names, where the kernel has none. An existing rseq/ is
	 * the kernel's: 7.2 has one (its rseq/debug) without stats or
	 * slice_ext_nsec when CONFIG_RSEQ_STATS and the extension are off;
	 * the module adds the names it lacks there and removes only those.
	 */
	dir = debugfs_lookup("rseq", NULL);
	if (dir) {
		const struct file_operations *stats = &rseq_slice_upstream_stats_fops;
		const struct file_operations *nsec = &rseq_slice_ext_nsec_fops;

		rseq_slice_upstream_files[0] = rseq_slice_upstream_file(dir, "stats", 0444, stats);
		rseq_slice_upstream_files[1] = rseq_slice_upstream_file(dir, "slice_ext_nsec", 0644,
									nsec);
		dput(dir);
		return;
	}
	dir = debugfs_create_dir("rseq", NULL);
	if (IS_ERR(dir))
		return;
	rseq_slice_upstream_debugfs = dir;
	debugfs_create_file("stats", 0444, dir, NULL, &rseq_slice_upstream_stats_fops);
	debugfs_create_file("slice_ext_nsec", 0644, dir, NULL, &rseq_slice_ext_nsec_fops);
}

/* The module's debugfs directory, or an error pointer. */
struct dentry *rseq_slice_stats_dir(void)
{
	return rseq_slice_debugfs;
}

void rseq_slice_stats_exit(void)
{
	debugfs_remove(rseq_slice_upstream_files[0]);
	debugfs_remove(rseq_slice_upstream_files[1]);
	debugfs_remove_recursive(rseq_slice_upstream_debugfs);
	debugfs_remove_recursive(rseq_slice_debugfs);
}
