// SPDX-License-Identifier: GPL-2.0
/*
 * Where schedule() is called on the way back to user space.
 *
 * The exit-to-user loop cannot be patched on any kernel this module
 * supports: it is noinstr, or inlined into a function that serves both
 * the interrupt and the system call return, or (arm64) part of the
 * architecture's own do_notify_resume(). What ftrace can reach is its
 * call to schedule(): ftrace hands the handler the caller's address, and
 * this file tells from that address (and, where one function serves both
 * paths, from one frame further up: arch/ARCH/exit.c) whether the call
 * comes from the return from an interrupt or exception, from a system
 * call, or from somewhere else.
 *
 * The ranges are resolved once at load time from kallsyms; the runtime
 * test is a few compares and never sleeps or faults. Which functions hold
 * the loop, and how their layout is checked before anything is trusted,
 * is the architecture's (arch/ARCH/exit.c): a kernel whose layout is not
 * one the module knows is refused (EOPNOTSUPP) rather than guessed at.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/string.h>

#include "compat.h"
#include "rseq_slice.h"

struct rseq_slice_range {
	unsigned long start;
	unsigned long end;
	enum rseq_slice_exit kind;
};

static struct rseq_slice_range rseq_slice_ranges[RSEQ_SLICE_MAX_EXIT_FUNCS];
static unsigned int rseq_slice_nr_ranges;
/*
 * The fast reject, inlined into the schedule() hook
 * (rseq_slice_exit_maybe()): a few intervals of kernel text that hold
 * every range. The ranges lie in two places megabytes apart, .noinstr.text
 * (the return paths) and .text (6.1's exit_to_user_mode_prepare(), the
 * out-of-line exit_to_user_mode_loop()): one interval over both let most
 * of the kernel's calls of schedule() (pipe_read()'s, say) on to the slow
 * test, the recursion lock and the scan of the ranges. Written once at
 * load time, before any hook is registered; an unused one is empty.
 */
struct rseq_slice_box rseq_slice_exit_boxes[RSEQ_SLICE_EXIT_BOXES];

/* Ranges closer than this share a box. */
#define RSEQ_SLICE_BOX_GAP	SZ_64K

static void rseq_slice_exit_boxes_init(void)
{
	struct rseq_slice_range r[ARRAY_SIZE(rseq_slice_ranges)];
	struct rseq_slice_box *b = NULL;
	unsigned long hi = 0;
	unsigned int i, j, n = 0;

	memcpy(r, rseq_slice_ranges, sizeof(r));
	/* By start; a few ranges at most. */
	for (i = 1; i < rseq_slice_nr_ranges; i++) {
		for (j = i; j > 0 && r[j - 1].start > r[j].start; j--)
			swap(r[j - 1], r[j]);
	}
	for (i = 0; i < rseq_slice_nr_ranges; i++) {
		/* Near the box, or no box left: the box grows to take it. */
		if (!b || (r[i].start > hi + RSEQ_SLICE_BOX_GAP && n < RSEQ_SLICE_EXIT_BOXES)) {
			b = &rseq_slice_exit_boxes[n++];
			b->lo = r[i].start;
		}
		hi = max(hi, r[i].end);
		b->size = hi - b->lo;
	}
}

static unsigned long (*rseq_slice_lookup_name)(const char *name);
static int (*rseq_slice_lookup_size_offset)(unsigned long addr, unsigned long *size,
					    unsigned long *offset);

#ifdef CONFIG_HRTIMER_REARM_DEFERRED
void (*rseq_slice_hrtimer_rearm_deferred)(void);
#endif

unsigned long rseq_slice_symbol(const char *name)
{
	return rseq_slice_lookup_name(name);
}

/*
 * kallsyms_lookup_name() is not exported; a kprobe on it reports its
 * address without ever being armed for long.
 */
static int rseq_slice_find_kallsyms(void)
{
	struct kprobe kp = { .symbol_name = "kallsyms_lookup_name" };
	int ret;

	ret = register_kprobe(&kp);
	if (ret)
		return ret;
	rseq_slice_lookup_name = (void *)kp.addr;
	unregister_kprobe(&kp);

	rseq_slice_lookup_size_offset =
		(void *)rseq_slice_lookup_name("kallsyms_lookup_size_offset");
	return rseq_slice_lookup_size_offset ? 0 : -ENOENT;
}

/* The range of any function @name, from kallsyms, or false. Module init. */
bool rseq_slice_symbol_range(const char *name, unsigned long *start, unsigned long *end)
{
	unsigned long addr = rseq_slice_lookup_name(name), size, offset;

	if (!addr || !rseq_slice_lookup_size_offset(addr, &size, &offset) || offset)
		return false;
	*start = addr;
	*end = addr + size;
	return true;
}

/* The range of @name, as resolved into the table, or false. */
bool rseq_slice_range_of(const char *name, unsigned long *start, unsigned long *end)
{
	unsigned long addr = rseq_slice_lookup_name(name);
	unsigned int i;

	for (i = 0; addr && i < rseq_slice_nr_ranges; i++) {
		if (rseq_slice_ranges[i].start == addr) {
			*start = rseq_slice_ranges[i].start;
			*end = rseq_slice_ranges[i].end;
			return true;
		}
	}
	return false;
}

int rseq_slice_symbols_init(void)
{
	bool irq = false, shared_or_direct = false;
	struct rseq_slice_range *r;
	unsigned int i;
	int ret;

	ret = rseq_slice_find_kallsyms();
	if (ret) {
		pr_err("cannot resolve kallsyms_lookup_name: %d\n", ret);
		return ret;
	}
#ifdef CONFIG_HRTIMER_REARM_DEFERRED
	rseq_slice_hrtimer_rearm_deferred =
		(void *)rseq_slice_lookup_name("__hrtimer_rearm_deferred");
	if (!rseq_slice_hrtimer_rearm_deferred) {
		pr_err("cannot resolve __hrtimer_rearm_deferred\n");
		return -ENOENT;
	}
#endif

	for (i = 0; i < rseq_slice_nr_exit_funcs; i++) {
		r = &rseq_slice_ranges[rseq_slice_nr_ranges];
		if (!rseq_slice_symbol_range(rseq_slice_exit_funcs[i].name, &r->start, &r->end))
			continue;
		r->kind = rseq_slice_exit_funcs[i].kind;
		rseq_slice_nr_ranges++;
		if (rseq_slice_exit_funcs[i].kind == RSEQ_SLICE_EXIT_IRQ)
			irq = true;
		else
			shared_or_direct = true;
	}
	rseq_slice_exit_boxes_init();
	return rseq_slice_exit_layout_check(irq, shared_or_direct);
}

/* Which exit path, if any, holds @addr, known to lie in a box. */
static __always_inline enum rseq_slice_exit rseq_slice_boxed_kind(unsigned long addr)
{
	unsigned int i;

	for (i = 0; i < rseq_slice_nr_ranges; i++) {
		if (addr >= rseq_slice_ranges[i].start && addr < rseq_slice_ranges[i].end)
			return rseq_slice_ranges[i].kind;
	}
	return RSEQ_SLICE_EXIT_OTHER;
}

/* Which exit path, if any, holds kernel text address @addr. */
enum rseq_slice_exit rseq_slice_range_kind(unsigned long addr)
{
	if (!rseq_slice_exit_maybe(addr))
		return RSEQ_SLICE_EXIT_OTHER;
	return rseq_slice_boxed_kind(addr);
}

/*
 * Which exit path, if any, @parent_ip (a caller of schedule()) is in: the
 * schedule() hooks ask only once rseq_slice_exit_maybe() said it may be
 * one. notrace, as the hot functions of a grant are: no ftrace call site
 * to pass on every grant.
 */
enum rseq_slice_exit notrace rseq_slice_exit_caller(unsigned long parent_ip)
{
	return rseq_slice_boxed_kind(parent_ip);
}

