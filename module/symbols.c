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
 *
 * Three layouts are known, each checked at load; any other kernel is
 * refused (EOPNOTSUPP) rather than guessed at:
 * - 6.1: exit_to_user_mode_prepare() holds the loop and serves both
 *   paths; one frame up tells them apart.
 * - 6.12: irqentry_exit_to_user_mode() and syscall_exit_to_user_mode()
 *   each hold an inlined copy of the loop.
 * - 7.2: both of those are inlined. irqentry_exit() (noinstr) holds the
 *   interrupt return's copy of the loop; the out-of-line
 *   exit_to_user_mode_loop() serves the system call returns
 *   (do_syscall_64(), the 32-bit entries, ret_from_fork) and the few
 *   exception returns that bypass irqentry_exit() (int3, debug, #MC, #VC
 *   from user space). A call from it is resolved by unwinding as on 6.1:
 *   do_syscall_64() is a system call return, anything else is "other",
 *   so only irqentry_exit() ever grants.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/string.h>
#include <asm/unwind.h>

#include "compat.h"
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
	/* By start; seven ranges at most. */
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

/*
 * The direct calls in [@start, @end) to @target, by their bytes: e8 and a
 * 32-bit displacement. A byte sequence that is not an instruction would
 * have to encode @target's exact displacement to count. A call that call
 * depth tracking (retbleed=stuff) sent to its thunk, in the padding just
 * before @target, counts too. Module init: kernel text, readable, never
 * faults.
 */
static unsigned int rseq_slice_calls_to(unsigned long start, unsigned long end,
					unsigned long target)
{
#ifdef CONFIG_FUNCTION_PADDING_BYTES
	const unsigned long pad = CONFIG_FUNCTION_PADDING_BYTES;
#else
	const unsigned long pad = 0;
#endif
	unsigned long p, dst;
	unsigned int n = 0;
	s32 rel;

	for (p = start; p + 5 <= end; p++) {
		if (*(const u8 *)p != 0xe8)
			continue;
		memcpy(&rel, (const void *)(p + 1), sizeof(rel));
		dst = p + 5 + rel;
		if (dst <= target && dst + pad >= target)
			n++;
	}
	return n;
}

/* The range of @name, as resolved into the table, or false. */
static bool rseq_slice_range_of(const char *name, unsigned long *start, unsigned long *end)
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

/*
 * The 7.2 layout (see the top of this file), checked rather than assumed:
 * the module was written against 7.2's code only; irqentry_exit() must
 * hold exactly one call to schedule(), its inlined loop's (its return to
 * kernel mode preempts through preempt_schedule_irq(), not schedule()),
 * so that every schedule() called from it is an interrupt's or
 * exception's return to user space; exit_to_user_mode_loop() must call
 * schedule() too, or the system call return's reschedules would be
 * another function's, which the module does not know. And 6.1's shared
 * function must be gone.
 */
static int rseq_slice_check_inlined(void)
{
	unsigned long sched = rseq_slice_lookup_name("schedule");
	unsigned long irq_lo, irq_hi, loop_lo, loop_hi;
	unsigned int irq_calls = 0, loop_calls = 0;
	bool known;

	if (!RSEQ_SLICE_ENTRY_KNOWN) {
		pr_err("this kernel's exit-to-user path is not one this module knows\n");
		pr_err("(the module knows Linux 7.2's inlined exit path, not this later kernel's)\n");
		return -EOPNOTSUPP;
	}
	known = !rseq_slice_lookup_name("exit_to_user_mode_prepare") &&
		rseq_slice_range_of("irqentry_exit", &irq_lo, &irq_hi) &&
		rseq_slice_range_of("exit_to_user_mode_loop", &loop_lo, &loop_hi) &&
		rseq_slice_lookup_name("do_syscall_64") && sched;
	if (known) {
		irq_calls = rseq_slice_calls_to(irq_lo, irq_hi, sched);
		loop_calls = rseq_slice_calls_to(loop_lo, loop_hi, sched);
		known = irq_calls == 1 && loop_calls >= 1;
	}
	if (!known) {
		pr_err("this kernel's exit-to-user path is not one this module knows\n");
		pr_err("(not the Linux 7.2 code the module was written against: irqentry_exit() calls schedule() %u times, exit_to_user_mode_loop() %u times; 1 and at least 1 expected)\n",
		       irq_calls, loop_calls);
		return -EOPNOTSUPP;
	}
	return 0;
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
#ifdef CONFIG_HRTIMER_REARM_DEFERRED
	rseq_slice_hrtimer_rearm_deferred =
		(void *)rseq_slice_lookup_name("__hrtimer_rearm_deferred");
	if (!rseq_slice_hrtimer_rearm_deferred) {
		pr_err("cannot resolve __hrtimer_rearm_deferred\n");
		return -ENOENT;
	}
#endif

	for (i = 0; i < ARRAY_SIZE(rseq_slice_exit_funcs); i++) {
		addr = rseq_slice_lookup_name(rseq_slice_exit_funcs[i].name);
		if (!addr || !rseq_slice_lookup_size_offset(addr, &size, &offset) || offset)
			continue;
		rseq_slice_ranges[rseq_slice_nr_ranges++] = (struct rseq_slice_range) {
			.start = addr,
			.end = addr + size,
			.kind = rseq_slice_exit_funcs[i].kind,
		};
		if (rseq_slice_exit_funcs[i].kind == RSEQ_SLICE_EXIT_IRQ)
			irq = true;
		else
			shared_or_direct = true;
	}
	rseq_slice_exit_boxes_init();
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
	if (!own_returns && irq && shared_or_direct && RSEQ_SLICE_ENTRY_INLINED)
		return rseq_slice_check_inlined();
	if (!irq || !shared_or_direct || !own_returns) {
		pr_err("this kernel's exit-to-user path is not one this module knows\n");
		if (!own_returns)
			pr_err("(irqentry_exit_to_user_mode() and syscall_exit_to_user_mode() are inlined here and this is not the 7.2 code the module was written against: the return paths cannot be told apart)\n");
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
 * Where the shared caller's own return address lies, as an offset from
 * schedule()'s entry sp: that function's frame is the same at its call
 * of schedule() every time (6.1's has one such call, and no frame of a
 * kernel function changes size in its body), so the first unwind that
 * finds the return path right there gives the offset, and later calls
 * read that one slot instead of unwinding three frames (about 500
 * instructions on every grant). 0 until then; every writer writes the
 * same value.
 */
static unsigned long rseq_slice_exit_slot;

/*
 * rseq_slice_exit_unwind()'s slow path: walk the frames. The schedule()
 * hook's trampoline saved ip, sp and bp, not every register: the
 * unwinder gets those three, the rest zero, as perf's caller registers
 * give it (perf_arch_fetch_caller_regs()). ORC reads another register
 * only at an entry frame, above the callers looked at. Out of line: its
 * locals are zeroed on entry (automatic variable initialisation).
 */
static noinline enum rseq_slice_exit rseq_slice_exit_walk(const struct pt_regs *saved)
{
	struct pt_regs regs = {
		.ip = saved->ip,
		.sp = saved->sp,
		.bp = saved->bp,
		.cs = __KERNEL_CS,
		.flags = X86_EFLAGS_FIXED,
	};
	enum rseq_slice_exit kind;
	struct unwind_state state;
	unsigned long *ret, addr;
	unsigned int depth;

	/* Started from registers, ORC skips to their frame's caller. */
	unwind_start(&state, current, &regs, NULL);
	/* Frame 0 is schedule()'s caller, known to be the shared function. */
	for (depth = 0; depth < 4 && !unwind_done(&state); depth++) {
		addr = unwind_get_return_address(&state);
		if (!addr)
			break;
		kind = rseq_slice_range_kind(addr);
		if (kind == RSEQ_SLICE_EXIT_IRQ || kind == RSEQ_SLICE_EXIT_SYSCALL) {
			/*
			 * The shared function's own return address: remember
			 * where. ORC read it just below the caller's sp; the
			 * compare checks that it is there.
			 */
			ret = (unsigned long *)state.sp - 1;
			if (depth == 1 && READ_ONCE_NOCHECK(*ret) == addr)
				WRITE_ONCE(rseq_slice_exit_slot, (unsigned long)ret - regs.sp);
			return kind;
		}
		unwind_next_frame(&state);
	}
	return RSEQ_SLICE_EXIT_OTHER;
}

/*
 * For a caller that serves both return paths (6.1's
 * exit_to_user_mode_prepare()), the path its caller (or a caller further
 * up) is on. ORC needs no locks and reads only this task's stack; called
 * with preemption disabled, only for threads that asked for an
 * extension, on the way to a context switch.
 */
enum rseq_slice_exit rseq_slice_exit_unwind(struct ftrace_regs *fregs)
{
	const struct pt_regs *saved = rseq_slice_fregs_pt_regs(fregs);
	unsigned long slot = READ_ONCE(rseq_slice_exit_slot);
	enum rseq_slice_exit kind;
	unsigned long *ret;

	/*
	 * Inside the shared function's frame, live above schedule()'s; not
	 * this function's, so unchecked by KASAN, as ORC reads frames.
	 */
	if (slot) {
		ret = (unsigned long *)(saved->sp + slot);
		kind = rseq_slice_range_kind(READ_ONCE_NOCHECK(*ret));
		if (kind == RSEQ_SLICE_EXIT_IRQ || kind == RSEQ_SLICE_EXIT_SYSCALL)
			return kind;
	}
	return rseq_slice_exit_walk(saved);
}
