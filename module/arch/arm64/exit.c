// SPDX-License-Identifier: GPL-2.0
/*
 * arm64: which function calls schedule() from the exit-to-user loop, how
 * its layout is checked at load, and how the return path is told (the
 * shared part is symbols.c).
 *
 * arm64 has no generic entry on 6.1, 6.12 and 7.2. Every return to user
 * space runs exit_to_user_mode(), inlined into its own handler: el0_svc()
 * for a system call, el0_interrupt() for an interrupt, el0_da(),
 * el0_ia(), ... for each exception class, asm_exit_to_user_mode() for
 * ret_from_fork. These are noinstr, and noinstr implies noinline, so each
 * is a function of its own. All of them call one out-of-line loop, which
 * calls schedule() once (checked at load): the caller of schedule() says
 * only "the exit loop", and the loop's own return address says which
 * path. It is read from the loop's frame record, whose address is the
 * frame pointer the ftrace trampoline saved at schedule()'s entry
 * (Debian's arm64 kernels have CONFIG_FRAME_POINTER): its second word,
 * signed with pointer authentication where the kernel uses it, so
 * stripped before it is looked up.
 *
 * The loop, per kernel:
 * - 6.1, 6.12: arm64's own do_notify_resume(), called by
 *   exit_to_user_mode_prepare() when _TIF_WORK_MASK has work.
 * - 7.2: arm64 selects GENERIC_IRQ_ENTRY (not GENERIC_ENTRY: its system
 *   call entry stays its own). arm64_exit_to_user_mode() (exceptions,
 *   interrupts) and arm64_syscall_exit_to_user_mode() (el0_svc(),
 *   el0_svc_compat(), asm_exit_to_user_mode()) inline
 *   <linux/irq-entry-common.h>'s __exit_to_user_mode_prepare(), which
 *   calls kernel/entry/common.c's exit_to_user_mode_loop() when
 *   EXIT_TO_USER_MODE_WORK has work: that function is out of line for
 *   arm64 (its callers are in another file) and holds
 *   __exit_to_user_mode_loop() inlined, with the one schedule() call.
 *   do_notify_resume() is gone.
 *
 * Grants go to returns from interrupts and exceptions (the irqentry rule
 * of x86's 6.x): not to system calls, ret_from_fork, or the debug
 * exceptions (breakpoints, single steps, watchpoints), which report to a
 * tracer or raise SIGTRAP, whose delivery would end the grant anyway.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ftrace.h>
#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/sched/task_stack.h>
#include <linux/string.h>
#include <asm/insn.h>
#include <asm/pointer_auth.h>

#include "compat.h"
#include "rseq_slice.h"

/* The exit loop: the only caller the schedule() hook looks further at. */
#ifdef CONFIG_GENERIC_IRQ_ENTRY
#define RSEQ_SLICE_EXIT_LOOP	"exit_to_user_mode_loop"
#else
#define RSEQ_SLICE_EXIT_LOOP	"do_notify_resume"
#endif

const struct rseq_slice_exit_func rseq_slice_exit_funcs[] = {
	{ RSEQ_SLICE_EXIT_LOOP,	RSEQ_SLICE_EXIT_SHARED },
};

const unsigned int rseq_slice_nr_exit_funcs = ARRAY_SIZE(rseq_slice_exit_funcs);

/*
 * The loop's callers, by the path each returns from. Names a kernel
 * lacks (el0_sme_acc() before 6.x's SME, el0_mops(), el0_gcs() before
 * 6.13, the compat ones without CONFIG_COMPAT) are skipped; el0_svc() and
 * el0_interrupt() must be there. asm_exit_to_user_mode() (after a fork)
 * and the debug exceptions (6.x's el0_dbg(), 7.2's el0_breakpt(),
 * el0_softstp(), el0_watchpt(), el0_brk64(), el0_bkpt32()) are "other":
 * no grant. A return address in none of these is "unresolved": no grant
 * either, and counted (sunres).
 */
static const struct rseq_slice_exit_func rseq_slice_el0_funcs[] = {
	{ "el0_svc",			RSEQ_SLICE_EXIT_SYSCALL },
	{ "el0_svc_compat",		RSEQ_SLICE_EXIT_SYSCALL },
	{ "el0_interrupt",		RSEQ_SLICE_EXIT_IRQ },
	{ "__el0_error_handler_common",	RSEQ_SLICE_EXIT_IRQ },
	{ "el0_da",			RSEQ_SLICE_EXIT_IRQ },
	{ "el0_ia",			RSEQ_SLICE_EXIT_IRQ },
	{ "el0_fpsimd_acc",		RSEQ_SLICE_EXIT_IRQ },
	{ "el0_sve_acc",		RSEQ_SLICE_EXIT_IRQ },
	{ "el0_sme_acc",		RSEQ_SLICE_EXIT_IRQ },
	{ "el0_fpsimd_exc",		RSEQ_SLICE_EXIT_IRQ },
	{ "el0_sys",			RSEQ_SLICE_EXIT_IRQ },
	{ "el0_pc",			RSEQ_SLICE_EXIT_IRQ },
	{ "el0_sp",			RSEQ_SLICE_EXIT_IRQ },
	{ "el0_undef",			RSEQ_SLICE_EXIT_IRQ },
	{ "el0_bti",			RSEQ_SLICE_EXIT_IRQ },
	{ "el0_mops",			RSEQ_SLICE_EXIT_IRQ },
	{ "el0_gcs",			RSEQ_SLICE_EXIT_IRQ },
	{ "el0_inv",			RSEQ_SLICE_EXIT_IRQ },
	{ "el0_fpac",			RSEQ_SLICE_EXIT_IRQ },
	{ "el0_cp15",			RSEQ_SLICE_EXIT_IRQ },
	/* Known, and no grant: not counted as unresolved (sunres). */
	{ "asm_exit_to_user_mode",	RSEQ_SLICE_EXIT_OTHER },
	{ "el0_dbg",			RSEQ_SLICE_EXIT_OTHER },
	{ "el0_breakpt",		RSEQ_SLICE_EXIT_OTHER },
	{ "el0_softstp",		RSEQ_SLICE_EXIT_OTHER },
	{ "el0_watchpt",		RSEQ_SLICE_EXIT_OTHER },
	{ "el0_brk64",			RSEQ_SLICE_EXIT_OTHER },
	{ "el0_bkpt32",			RSEQ_SLICE_EXIT_OTHER },
};

/* Their ranges, resolved at load; written once, before any hook runs. */
static struct {
	unsigned long start;
	unsigned long end;
	enum rseq_slice_exit kind;
} rseq_slice_el0_ranges[ARRAY_SIZE(rseq_slice_el0_funcs)];
static unsigned int rseq_slice_nr_el0_ranges;

static bool rseq_slice_el0_add(const struct rseq_slice_exit_func *f)
{
	/* GCC may have cloned a static function under a suffixed name. */
	static const char * const suffixes[] = { "", ".constprop.0", ".isra.0" };
	unsigned int i, n = rseq_slice_nr_el0_ranges;
	char name[KSYM_NAME_LEN];

	for (i = 0; i < ARRAY_SIZE(suffixes); i++) {
		snprintf(name, sizeof(name), "%s%s", f->name, suffixes[i]);
		if (rseq_slice_symbol_range(name, &rseq_slice_el0_ranges[n].start,
					    &rseq_slice_el0_ranges[n].end)) {
			rseq_slice_el0_ranges[n].kind = f->kind;
			rseq_slice_nr_el0_ranges++;
			return true;
		}
	}
	return false;
}

/*
 * The direct calls (BL, a 26-bit word offset) in [@start, @end) to
 * @target. Module init: kernel text, readable, never faults.
 */
static unsigned int rseq_slice_calls_to(unsigned long start, unsigned long end,
					unsigned long target)
{
	unsigned long p;
	unsigned int n = 0;
	u32 insn;

	for (p = start; p + AARCH64_INSN_SIZE <= end; p += AARCH64_INSN_SIZE) {
		insn = le32_to_cpu(*(const __le32 *)p);
		if (aarch64_insn_is_bl(insn) &&
		    p + sign_extend64((insn & GENMASK(25, 0)) << 2, 27) == target)
			n++;
	}
	return n;
}

/* 7.2: do_notify_resume() gone; 6.x: no need to look. Module init. */
static bool rseq_slice_other_loop_gone(void)
{
	return !IS_ENABLED(CONFIG_GENERIC_IRQ_ENTRY) || !rseq_slice_symbol("do_notify_resume");
}

/*
 * The direct calls of the loop (at @loop) from the el0_*() handler
 * @name, as resolved into the table. Module init.
 */
static unsigned int rseq_slice_el0_calls(const char *name, unsigned long loop)
{
	unsigned int i;

	for (i = 0; loop && i < rseq_slice_nr_el0_ranges; i++) {
		if (rseq_slice_el0_ranges[i].start == rseq_slice_symbol(name))
			return rseq_slice_calls_to(rseq_slice_el0_ranges[i].start,
						   rseq_slice_el0_ranges[i].end, loop);
	}
	return 0;
}

int rseq_slice_exit_layout_check(bool irq, bool shared_or_direct)
{
	unsigned long loop_lo = 0, loop_hi, sched = rseq_slice_symbol("schedule");
	unsigned int i, calls = 0, svc, interrupt;

	/*
	 * As on x86: the module knows arm64's entry code up to 7.2's, not a
	 * later kernel's, whose names may resolve and mean something else.
	 */
	if (!RSEQ_SLICE_ARM64_KNOWN) {
		pr_err("this kernel's exit-to-user path is not one this module knows\n");
		pr_err("(the module knows arm64's exit path up to Linux 7.2's, not this later kernel's)\n");
		return -EOPNOTSUPP;
	}
	for (i = 0; i < ARRAY_SIZE(rseq_slice_el0_funcs); i++)
		rseq_slice_el0_add(&rseq_slice_el0_funcs[i]);
	if (!rseq_slice_range_of(RSEQ_SLICE_EXIT_LOOP, &loop_lo, &loop_hi))
		loop_lo = 0;
	if (loop_lo && sched)
		calls = rseq_slice_calls_to(loop_lo, loop_hi, sched);
	/*
	 * The path is the loop's return address, which names an el0_*()
	 * handler only if the handler calls the loop itself: through a
	 * function of its own in between the address would name that one,
	 * every return would read "other" and no grant would ever be given,
	 * silently. So el0_svc() and el0_interrupt() must each hold a direct
	 * call of the loop.
	 */
	svc = rseq_slice_el0_calls("el0_svc", loop_lo);
	interrupt = rseq_slice_el0_calls("el0_interrupt", loop_lo);
	/*
	 * One call of schedule(): then every schedule() called from the loop
	 * is its reschedule, which a grant may skip. On 7.2 the other
	 * kernel's loop must be gone too: do_notify_resume() still there
	 * would be a kernel half way between the two layouts.
	 */
	if (!svc || !interrupt || calls != 1 || !rseq_slice_other_loop_gone()) {
		pr_err("this kernel's exit-to-user path is not one this module knows\n");
		pr_err("(el0_svc() calls %s() %u times, el0_interrupt() %u times; 1 or more expected; %s() calls schedule() %u times; 1 expected%s)\n",
		       RSEQ_SLICE_EXIT_LOOP, svc, interrupt, RSEQ_SLICE_EXIT_LOOP, calls,
		       rseq_slice_other_loop_gone() ? "" : "; do_notify_resume() is there too");
		return -EOPNOTSUPP;
	}
	return 0;
}

/* A return address with its pointer authentication code removed. */
static __always_inline unsigned long rseq_slice_strip_pac(unsigned long addr)
{
#ifdef ptrauth_strip_kernel_insn_pac
	return ptrauth_strip_kernel_insn_pac(addr);
#else
	return ptrauth_strip_insn_pac(addr);
#endif
}

/*
 * The path the exit loop returns to. Preemption disabled, on the
 * way to a context switch, only for threads that asked for an extension.
 * The frame record lies on this task's stack, above schedule()'s frame,
 * and is read unchecked by KASAN, as the unwinder reads frames; a frame
 * pointer outside the stack (which a kernel built with frame pointers
 * never gives here) grants nothing.
 */
enum rseq_slice_exit rseq_slice_exit_unwind(const struct rseq_slice_frame *f)
{
	unsigned long fp = f->fp;
	unsigned long stack = (unsigned long)task_stack_page(current);
	unsigned long ret;
	unsigned int i;

	if (fp - stack > THREAD_SIZE - 2 * sizeof(unsigned long) || (fp & 7))
		return RSEQ_SLICE_EXIT_UNRESOLVED;
	ret = rseq_slice_strip_pac(READ_ONCE_NOCHECK(((unsigned long *)fp)[1]));
	for (i = 0; i < rseq_slice_nr_el0_ranges; i++) {
		if (ret >= rseq_slice_el0_ranges[i].start && ret < rseq_slice_el0_ranges[i].end)
			return rseq_slice_el0_ranges[i].kind;
	}
	return RSEQ_SLICE_EXIT_UNRESOLVED;
}

/*
 * Where ftrace patches the function at @func: the BL of its patchable
 * entry, one instruction in, after a BTI where the kernel has one
 * (ftrace_call_adjust(); with DYNAMIC_FTRACE_WITH_CALL_OPS the two NOPs
 * before the symbol do not move it). Module init: kernel text.
 */
static unsigned long rseq_slice_ftrace_site(unsigned long func)
{
	/* BTI, BTI c, BTI j, BTI jc: HINT #32, #34, #36, #38. */
	if (IS_ENABLED(CONFIG_ARM64_BTI_KERNEL) &&
	    (le32_to_cpu(*(const __le32 *)func) & 0xffffff3f) == 0xd503241f)
		func += AARCH64_INSN_SIZE;
	return func + AARCH64_INSN_SIZE;
}

#ifdef __NR_rseq_slice_yield
/*
 * 7.2: both system call tables end at 471, rseq_slice_yield (generated
 * from scripts/syscall.tbl and arch/arm/tools/syscall.tbl), and without
 * RSEQ_SLICE_EXTENSION both entries are kernel/sys_ni.c's weak
 * COND_SYSCALL() stub __arm64_sys_rseq_slice_yield(), which answers
 * sys_ni_syscall()'s -ENOSYS; no other number reaches it. Checked, not
 * assumed: the tables' entries 471 must be that stub. Where ftrace
 * patches it, or 0 (the merged ABI is off: hooks.c).
 */
#ifdef CONFIG_COMPAT
/* compat_sys_call_table[]'s length, __NR_compat32_syscalls (6.12 and later). */
#include <asm/unistd_compat_32.h>
#define RSEQ_SLICE_NR_COMPAT_CALLS	__NR_compat32_syscalls
#else
#define RSEQ_SLICE_NR_COMPAT_CALLS	0
#endif

/*
 * Is entry 471 of @table, an array of @nr system calls in this kernel's
 * build, @stub? Read only if it exists: @nr (the kernel's own headers)
 * and kallsyms (where the next symbol starts) must both leave room for it.
 */
static bool rseq_slice_table_471_is(const char *table, unsigned int nr, unsigned long stub)
{
	unsigned long lo, hi;

	if (nr <= RSEQ_SLICE_NR_YIELD || !rseq_slice_symbol_range(table, &lo, &hi) ||
	    hi - lo < (RSEQ_SLICE_NR_YIELD + 1) * sizeof(syscall_fn_t))
		return false;
	return (unsigned long)READ_ONCE(((const syscall_fn_t *)lo)[RSEQ_SLICE_NR_YIELD]) == stub;
}

unsigned long rseq_slice_yield_stub_find(void)
{
	unsigned long stub = rseq_slice_symbol("__arm64_sys_rseq_slice_yield");

	if (!stub || !rseq_slice_table_471_is("sys_call_table", __NR_syscalls, stub) ||
	    (IS_ENABLED(CONFIG_COMPAT) &&
	     !rseq_slice_table_471_is("compat_sys_call_table", RSEQ_SLICE_NR_COMPAT_CALLS, stub)))
		return 0;
	return rseq_slice_ftrace_site(stub);
}
#else
/*
 * 6.1, 6.12: where ftrace patches the sys_ni_syscall() that
 * invoke_syscall() calls for a number past the end of the table
 * (do_ni_syscall(), inlined), found by invoke_syscall()'s own branches,
 * or 0 if none goes there.
 *
 * Not the symbol's address: kallsyms gives sys_ni_syscall() a size that
 * covers the weak system call stubs after it, which have no names of
 * their own (0x120 bytes on Debian's 6.1, ten ftrace sites), and
 * ftrace_set_filter_ip() on a symbol's start takes any site in that
 * size, which hooked one of the stubs: system call 471 still answered
 * -ENOSYS. Module init; 0: the merged ABI is off (hooks.c).
 */
unsigned long rseq_slice_yield_stub_find(void)
{
	char name[KSYM_SYMBOL_LEN];
	unsigned long lo, hi, p, dst;
	u32 insn;

	if (!rseq_slice_symbol_range("invoke_syscall", &lo, &hi))
		return 0;
	for (p = lo; p + AARCH64_INSN_SIZE <= hi; p += AARCH64_INSN_SIZE) {
		insn = le32_to_cpu(*(const __le32 *)p);
		if (!aarch64_insn_is_bl(insn) && !aarch64_insn_is_b(insn))
			continue;
		dst = p + sign_extend64((insn & GENMASK(25, 0)) << 2, 27);
		sprint_symbol(name, dst);
		if (str_has_prefix(name, "sys_ni_syscall+0x0/"))
			return rseq_slice_ftrace_site(dst);
	}
	return 0;
}
#endif
