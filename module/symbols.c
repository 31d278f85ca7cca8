// SPDX-License-Identifier: GPL-2.0
/*
 * Where schedule() is called on the way back to user space.
 *
 * The exit-to-user loop is noinstr (6.12) or inlined into a function that
 * serves both the interrupt and the system call return (6.1), so neither
 * ftrace nor livepatch can reach it. What they can reach is its call to
 * schedule(): ftrace hands the handler the caller's address, and this file
 * tells from that address (and, where one function serves both paths, from
 * one frame further up) whether the call comes from the return from an
 * interrupt or exception, from a system call, or from somewhere else.
 *
 * The ranges are resolved once at load time from kallsyms; the runtime
 * test is a few compares and never sleeps or faults.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <asm/unwind.h>

#include "rseq_slice.h"

struct rseq_slice_range {
	unsigned long start;
	unsigned long end;
	enum rseq_slice_exit kind;
};

/*
 * Functions that call schedule() from the exit-to-user loop, inlined or
 * not, on the kernels this module supports. Names a kernel lacks are
 * skipped; what must be there is checked in rseq_slice_symbols_init().
 */
static const struct {
	const char *name;
	enum rseq_slice_exit kind;
} rseq_slice_exit_funcs[] = {
	{ "irqentry_exit_to_user_mode",		RSEQ_SLICE_EXIT_IRQ },
	{ "irqentry_exit",			RSEQ_SLICE_EXIT_IRQ },
	{ "syscall_exit_to_user_mode",		RSEQ_SLICE_EXIT_SYSCALL },
	{ "syscall_exit_to_user_mode_work",	RSEQ_SLICE_EXIT_SYSCALL },
	{ "do_syscall_64",			RSEQ_SLICE_EXIT_SYSCALL },
	{ "exit_to_user_mode_prepare",		RSEQ_SLICE_EXIT_SHARED },
	{ "exit_to_user_mode_loop",		RSEQ_SLICE_EXIT_SHARED },
};

static struct rseq_slice_range rseq_slice_ranges[ARRAY_SIZE(rseq_slice_exit_funcs)];
static unsigned int rseq_slice_nr_ranges;
/*
 * The smallest interval holding every range: the fast reject, inlined
 * into the schedule() hook (rseq_slice_exit_maybe()). Written once at
 * load time, before any hook is registered.
 */
unsigned long rseq_slice_exit_lo, rseq_slice_exit_hi;

static unsigned long (*rseq_slice_lookup_name)(const char *name);
static int (*rseq_slice_lookup_size_offset)(unsigned long addr, unsigned long *size,
					    unsigned long *offset);

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

int rseq_slice_symbols_init(void)
{
	bool irq = false, shared_or_direct = false, own_returns;
	unsigned long addr, size, offset;
	unsigned int i;
	int ret;

	ret = rseq_slice_find_kallsyms();
	if (ret) {
		pr_err("cannot resolve kallsyms_lookup_name: %d\n", ret);
		return ret;
	}

	rseq_slice_exit_lo = ULONG_MAX;
	for (i = 0; i < ARRAY_SIZE(rseq_slice_exit_funcs); i++) {
		addr = rseq_slice_lookup_name(rseq_slice_exit_funcs[i].name);
		if (!addr || !rseq_slice_lookup_size_offset(addr, &size, &offset) || offset)
			continue;
		rseq_slice_ranges[rseq_slice_nr_ranges++] = (struct rseq_slice_range) {
			.start = addr,
			.end = addr + size,
			.kind = rseq_slice_exit_funcs[i].kind,
		};
		rseq_slice_exit_lo = min(rseq_slice_exit_lo, addr);
		rseq_slice_exit_hi = max(rseq_slice_exit_hi, addr + size);
		if (rseq_slice_exit_funcs[i].kind == RSEQ_SLICE_EXIT_IRQ)
			irq = true;
		else
			shared_or_direct = true;
	}
	/*
	 * 6.1 and 6.12 return to user space through two functions of their
	 * own, one per path, which is what lets a caller of schedule() (or
	 * its caller's caller) say which path it is on. Where both are
	 * inlined (7.2: into do_syscall_64() and irqentry_exit(), and the
	 * out-of-line exit_to_user_mode_loop() has callers that are neither
	 * path), the same names still resolve but no longer mean the same:
	 * refuse rather than guess.
	 */
	own_returns = rseq_slice_lookup_name("irqentry_exit_to_user_mode") &&
		      (rseq_slice_lookup_name("syscall_exit_to_user_mode") ||
		       rseq_slice_lookup_name("syscall_exit_to_user_mode_work"));
	if (!irq || !shared_or_direct || !own_returns) {
		pr_err("this kernel's exit-to-user path is not one this module knows\n");
		if (!own_returns)
			pr_err("(irqentry_exit_to_user_mode() and syscall_exit_to_user_mode() are inlined here: the return paths cannot be told apart)\n");
		/* insmod: "Operation not supported", not "unknown symbol". */
		return -EOPNOTSUPP;
	}
	return 0;
}

static enum rseq_slice_exit rseq_slice_range_kind(unsigned long addr)
{
	unsigned int i;

	if (!rseq_slice_exit_maybe(addr))
		return RSEQ_SLICE_EXIT_OTHER;
	for (i = 0; i < rseq_slice_nr_ranges; i++) {
		if (addr >= rseq_slice_ranges[i].start && addr < rseq_slice_ranges[i].end)
			return rseq_slice_ranges[i].kind;
	}
	return RSEQ_SLICE_EXIT_OTHER;
}

/* Which exit path, if any, @parent_ip (a caller of schedule()) is in. */
enum rseq_slice_exit rseq_slice_exit_caller(unsigned long parent_ip)
{
	return rseq_slice_range_kind(parent_ip);
}

/*
 * For a caller that serves both return paths (6.1's
 * exit_to_user_mode_prepare()), unwind from schedule()'s entry registers
 * to the caller's caller. ORC needs no locks and reads only this task's
 * stack; called with preemption disabled, only for threads that asked for
 * an extension, on the way to a context switch.
 */
enum rseq_slice_exit rseq_slice_exit_resolve(enum rseq_slice_exit kind, struct pt_regs *regs)
{
	struct unwind_state state;
	unsigned int depth;
	unsigned long addr;

	if (kind != RSEQ_SLICE_EXIT_SHARED)
		return kind;
	if (!regs)
		return RSEQ_SLICE_EXIT_OTHER;

	unwind_start(&state, current, regs, NULL);
	/* Frame 0 is schedule()'s caller, known to be the shared function. */
	for (depth = 0; depth < 4 && !unwind_done(&state); depth++) {
		addr = unwind_get_return_address(&state);
		if (!addr)
			break;
		kind = rseq_slice_range_kind(addr);
		if (kind == RSEQ_SLICE_EXIT_IRQ || kind == RSEQ_SLICE_EXIT_SYSCALL)
			return kind;
		unwind_next_frame(&state);
	}
	return RSEQ_SLICE_EXIT_OTHER;
}
