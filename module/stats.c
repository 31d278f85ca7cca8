// SPDX-License-Identifier: GPL-2.0
/*
 * Statistics in debugfs rseq_slice/stats, with upstream's names
 * (kernel/rseq.c, CONFIG_RSEQ_STATS) and format, plus what only a module
 * has to report: the number of registered threads and of pinned pages.
 *
 * Every grant ends exactly once, as srevok, syield, sabort or skill, so
 * sgrant = srevok + syield + sabort + skill + grants still running.
 * sexpir counts timer expiries; an expired grant then ends as srevok when
 * the thread is rescheduled, as upstream counts it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>

#include "rseq_slice.h"

static struct dentry *rseq_slice_debugfs;

static int rseq_slice_stats_show(struct seq_file *m, void *p)
{
	struct rseq_slice_stats sum;

	rseq_slice_grant_stats(&sum);
	seq_printf(m, "sgrant: %16lu\n", sum.granted);
	seq_printf(m, "sexpir: %16lu\n", sum.expired);
	seq_printf(m, "srevok: %16lu\n", sum.revoked);
	seq_printf(m, "syield: %16lu\n", sum.yielded);
	seq_printf(m, "sabort: %16lu\n", sum.aborted);
	seq_printf(m, "skill:  %16lu\n", sum.killed);
	seq_printf(m, "sdeny:  %16lu\n", sum.denied);
	seq_printf(m, "threads: %15d\n", rseq_slice_task_count());
	seq_printf(m, "pinned: %16d\n", rseq_slice_task_pinned());
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(rseq_slice_stats);

void rseq_slice_stats_init(void)
{
	/* debugfs is optional: failures only lose the statistics file. */
	rseq_slice_debugfs = debugfs_create_dir("rseq_slice", NULL);
	debugfs_create_file("stats", 0444, rseq_slice_debugfs, NULL, &rseq_slice_stats_fops);
}

void rseq_slice_stats_exit(void)
{
	debugfs_remove_recursive(rseq_slice_debugfs);
}
