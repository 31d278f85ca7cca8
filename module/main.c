// SPDX-License-Identifier: GPL-2.0
/*
 * rseq_slice: time slice extension for stock kernels, as a module.
 *
 * The misc device /dev/rseq_slice is the way in: its ioctls act on the
 * calling thread, never on the open file.
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>

#include <linux/rseq_slice.h>
#include "rseq_slice.h"

static long rseq_slice_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	return -ENOTTY;
}

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

static int __init rseq_slice_init(void)
{
	return misc_register(&rseq_slice_misc);
}

static void __exit rseq_slice_exit(void)
{
	misc_deregister(&rseq_slice_misc);
}

module_init(rseq_slice_init);
module_exit(rseq_slice_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Time slice extension (rseq slice) for kernels without CONFIG_RSEQ_SLICE_EXTENSION");
MODULE_AUTHOR("rseq-slice developers");
MODULE_VERSION("0.1");
