// SPDX-License-Identifier: GPL-2.0
/*
 * A test module that holds schedule() the way a livepatch of it would:
 * an ftrace_ops with FTRACE_OPS_FL_IPMODIFY on schedule(), which does
 * nothing. While it is loaded, ftrace refuses rseq_slice's own IPMODIFY
 * ops on schedule(): hardening_test checks what ENABLE and a write of
 * the enabled parameter say then, and that registrations survive it.
 */
#include <linux/ftrace.h>
#include <linux/kprobes.h>
#include <linux/module.h>

static void notrace ipmodify_hog_fn(unsigned long ip, unsigned long parent_ip,
				    struct ftrace_ops *op, struct ftrace_regs *fregs)
{
}

/*
 * Saved registers where the kernel can save them all; arm64's 6.12 cannot
 * (no DYNAMIC_FTRACE_WITH_REGS) and refuses an ops that asks.
 */
static struct ftrace_ops ipmodify_hog_ops = {
	.func = ipmodify_hog_fn,
#ifdef CONFIG_DYNAMIC_FTRACE_WITH_REGS
	.flags = FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_IPMODIFY,
#else
	.flags = FTRACE_OPS_FL_IPMODIFY,
#endif
};

static int __init ipmodify_hog_init(void)
{
	/* A kprobe's address is the usual way to an unexported symbol. */
	struct kprobe kp = { .symbol_name = "schedule" };
	unsigned long addr;
	int ret;

	ret = register_kprobe(&kp);
	if (ret)
		return ret;
	addr = (unsigned long)kp.addr;
	unregister_kprobe(&kp);
	ret = ftrace_set_filter_ip(&ipmodify_hog_ops, addr, 0, 0);
	if (ret)
		return ret;
	ret = register_ftrace_function(&ipmodify_hog_ops);
	if (ret)
		ftrace_free_filter(&ipmodify_hog_ops);
	return ret;
}

static void __exit ipmodify_hog_exit(void)
{
	unregister_ftrace_function(&ipmodify_hog_ops);
	ftrace_free_filter(&ipmodify_hog_ops);
}

module_init(ipmodify_hog_init);
module_exit(ipmodify_hog_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Test module: an IPMODIFY ftrace user on schedule()");
