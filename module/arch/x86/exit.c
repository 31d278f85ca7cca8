// SPDX-License-Identifier: GPL-2.0
/*
 * x86-64: which functions call schedule() from the exit-to-user loop, how
 * their layout is checked at load, and how the path is told where one
 * function serves both returns (symbols.c has the shared part).
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

#include <linux/ftrace.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <asm/unwind.h>

#include "compat.h"
#include "rseq_slice.h"

/*
 * Functions that call schedule() from the exit-to-user loop, inlined or
 * not, on the kernels this module supports. Names a kernel lacks are
 * skipped; what must be there is checked in rseq_slice_exit_layout_check().
 */
const struct rseq_slice_exit_func rseq_slice_exit_funcs[] = {
	{ "irqentry_exit_to_user_mode",		RSEQ_SLICE_EXIT_IRQ },
	{ "irqentry_exit",			RSEQ_SLICE_EXIT_IRQ },
	{ "syscall_exit_to_user_mode",		RSEQ_SLICE_EXIT_SYSCALL },
	{ "syscall_exit_to_user_mode_work",	RSEQ_SLICE_EXIT_SYSCALL },
	{ "do_syscall_64",			RSEQ_SLICE_EXIT_SYSCALL },
	{ "exit_to_user_mode_prepare",		RSEQ_SLICE_EXIT_SHARED },
	{ "exit_to_user_mode_loop",		RSEQ_SLICE_EXIT_SHARED },
};

const unsigned int rseq_slice_nr_exit_funcs = ARRAY_SIZE(rseq_slice_exit_funcs);
static_assert(ARRAY_SIZE(rseq_slice_exit_funcs) <= RSEQ_SLICE_MAX_EXIT_FUNCS);

#if RSEQ_SLICE_SCHEDULE_DIRECT && defined(CONFIG_PREEMPT_NOTIFIERS)
/*
 * For schedule()'s trampoline (schedule.S), which reads current itself:
 * current's per-CPU slot, read %gs-relative as get_current() reads it.
 */
const unsigned long rseq_slice_current_slot = (__force unsigned long)&RSEQ_SLICE_CURRENT_TASK;
#endif

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
	unsigned long sched = rseq_slice_symbol("schedule");
	unsigned long irq_lo, irq_hi, loop_lo, loop_hi;
	unsigned int irq_calls = 0, loop_calls = 0;
	bool known;

	if (!RSEQ_SLICE_ENTRY_KNOWN) {
		pr_err("this kernel's exit-to-user path is not one this module knows\n");
		pr_err("(the module knows Linux 7.2's inlined exit path, not this later kernel's)\n");
		return -EOPNOTSUPP;
	}
	known = !rseq_slice_symbol("exit_to_user_mode_prepare") &&
		rseq_slice_range_of("irqentry_exit", &irq_lo, &irq_hi) &&
		rseq_slice_range_of("exit_to_user_mode_loop", &loop_lo, &loop_hi) &&
		rseq_slice_symbol("do_syscall_64") && sched;
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

int rseq_slice_exit_layout_check(bool irq, bool shared_or_direct)
{
	bool own_returns;

	/*
	 * 6.1 and 6.12 return to user space through two functions of their
	 * own, one per path, which is what lets a caller of schedule() (or
	 * its caller's caller) say which path it is on. Where both are
	 * inlined (7.2: into do_syscall_64() and irqentry_exit(), and the
	 * out-of-line exit_to_user_mode_loop() has callers that are neither
	 * path), the same names still resolve but no longer mean the same:
	 * refuse rather than guess.
	 */
	own_returns = rseq_slice_symbol("irqentry_exit_to_user_mode") &&
		      (rseq_slice_symbol("syscall_exit_to_user_mode") ||
		       rseq_slice_symbol("syscall_exit_to_user_mode_work"));
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
 * hook has ip, sp and bp at schedule()'s entry, not every register: the
 * unwinder gets those three, the rest zero, as perf's caller registers
 * give it (perf_arch_fetch_caller_regs()). ORC reads another register
 * only at an entry frame, above the callers looked at. Out of line: its
 * locals are zeroed on entry (automatic variable initialisation).
 */
static noinline enum rseq_slice_exit rseq_slice_exit_walk(const struct rseq_slice_frame *f)
{
	struct pt_regs regs = {
		.ip = f->ip,
		.sp = f->sp,
		.bp = f->bp,
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
	/*
	 * 6.1's shared function has no callers but the two return paths:
	 * none found is a path the module could not place (counted). 7.2's
	 * loop has others (int3, debug, #MC, the 32-bit entries, fork): known
	 * not to grant.
	 */
	return RSEQ_SLICE_ENTRY_INLINED ? RSEQ_SLICE_EXIT_OTHER : RSEQ_SLICE_EXIT_UNRESOLVED;
}

/*
 * For a caller that serves both return paths (6.1's
 * exit_to_user_mode_prepare()), the path its caller (or a caller further
 * up) is on. ORC needs no locks and reads only this task's stack; called
 * with preemption disabled, only for threads that asked for an
 * extension, on the way to a context switch.
 */
enum rseq_slice_exit rseq_slice_exit_unwind(const struct rseq_slice_frame *f)
{
	unsigned long slot = READ_ONCE(rseq_slice_exit_slot);
	enum rseq_slice_exit kind;
	unsigned long *ret;

	/*
	 * Inside the shared function's frame, live above schedule()'s; not
	 * this function's, so unchecked by KASAN, as ORC reads frames.
	 */
	if (slot) {
		ret = (unsigned long *)(f->sp + slot);
		kind = rseq_slice_range_kind(READ_ONCE_NOCHECK(*ret));
		if (kind == RSEQ_SLICE_EXIT_IRQ || kind == RSEQ_SLICE_EXIT_SYSCALL)
			return kind;
	}
	return rseq_slice_exit_walk(f);
}
