// SPDX-License-Identifier: GPL-2.0
/*
 * arm64: which function calls schedule() from the exit-to-user loop, how
 * its layout is checked at load, and how the return path is told (the
 * shared part is symbols.c).
 *
 * arm64 has no generic entry on 6.1 and 6.12. Every return to user space
 * runs exit_to_user_mode(), inlined into its own handler: el0_svc() for a
 * system call, el0_interrupt() for an interrupt, el0_da(), el0_ia(), ...
 * for each exception class, asm_exit_to_user_mode() for ret_from_fork.
 * These are noinstr, and noinstr implies noinline, so each is a function
 * of its own. All of them call the one loop, do_notify_resume(), which
 * calls schedule() once (checked at load): the caller of schedule() says
 * only "the exit loop", and do_notify_resume()'s own return address says
 * which path. It is read from do_notify_resume()'s frame record, whose
 * address is the frame pointer the ftrace trampoline saved at schedule()'s
 * entry (Debian's arm64 kernels have CONFIG_FRAME_POINTER): its second
 * word, signed with pointer authentication where the kernel uses it, so
 * stripped before it is looked up.
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
const struct rseq_slice_exit_func rseq_slice_exit_funcs[] = {
	{ "do_notify_resume",	RSEQ_SLICE_EXIT_SHARED },
};

const unsigned int rseq_slice_nr_exit_funcs = ARRAY_SIZE(rseq_slice_exit_funcs);

/*
 * do_notify_resume()'s callers, by the path each returns from. Names a
 * kernel lacks (el0_sme_acc() before 6.x's SME, el0_mops(), the compat
 * ones without CONFIG_COMPAT) are skipped; el0_svc() and el0_interrupt()
 * must be there. A caller not listed (asm_exit_to_user_mode(), the debug
 * exceptions) is "other": no grant.
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
	{ "el0_inv",			RSEQ_SLICE_EXIT_IRQ },
	{ "el0_fpac",			RSEQ_SLICE_EXIT_IRQ },
	{ "el0_cp15",			RSEQ_SLICE_EXIT_IRQ },
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

int rseq_slice_exit_layout_check(bool irq, bool shared_or_direct)
{
	unsigned long loop_lo, loop_hi, sched = rseq_slice_symbol("schedule");
	bool svc = false, interrupt = false;
	unsigned int i, calls = 0;

	for (i = 0; i < ARRAY_SIZE(rseq_slice_el0_funcs); i++) {
		if (!rseq_slice_el0_add(&rseq_slice_el0_funcs[i]))
			continue;
		if (!strcmp(rseq_slice_el0_funcs[i].name, "el0_svc"))
			svc = true;
		if (!strcmp(rseq_slice_el0_funcs[i].name, "el0_interrupt"))
			interrupt = true;
	}
	if (rseq_slice_range_of("do_notify_resume", &loop_lo, &loop_hi) && sched)
		calls = rseq_slice_calls_to(loop_lo, loop_hi, sched);
	/*
	 * One call: then every schedule() called from do_notify_resume() is
	 * its loop's reschedule, which a grant may skip.
	 */
	if (!svc || !interrupt || calls != 1) {
		pr_err("this kernel's exit-to-user path is not one this module knows\n");
		pr_err("(el0_svc() %sfound, el0_interrupt() %sfound, do_notify_resume() calls schedule() %u times; 1 expected)\n",
		       svc ? "" : "not ", interrupt ? "" : "not ", calls);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* The frame pointer at schedule()'s entry: do_notify_resume()'s. */
static __always_inline unsigned long rseq_slice_fregs_fp(struct ftrace_regs *fregs)
{
#ifdef CONFIG_HAVE_DYNAMIC_FTRACE_WITH_ARGS
	return ftrace_regs_get_frame_pointer(fregs);
#else
	/* 6.1: the schedule() hook saves every register (compat.h). */
	return ftrace_get_regs(fregs)->regs[29];
#endif
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
 * The path do_notify_resume() returns to. Preemption disabled, on the
 * way to a context switch, only for threads that asked for an extension.
 * The frame record lies on this task's stack, above schedule()'s frame,
 * and is read unchecked by KASAN, as the unwinder reads frames; a frame
 * pointer outside the stack (which a kernel built with frame pointers
 * never gives here) grants nothing.
 */
enum rseq_slice_exit rseq_slice_exit_unwind(struct ftrace_regs *fregs)
{
	unsigned long fp = rseq_slice_fregs_fp(fregs);
	unsigned long stack = (unsigned long)task_stack_page(current);
	unsigned long ret;
	unsigned int i;

	if (fp - stack > THREAD_SIZE - 2 * sizeof(unsigned long) || (fp & 7))
		return RSEQ_SLICE_EXIT_OTHER;
	ret = rseq_slice_strip_pac(READ_ONCE_NOCHECK(((unsigned long *)fp)[1]));
	for (i = 0; i < rseq_slice_nr_el0_ranges; i++) {
		if (ret >= rseq_slice_el0_ranges[i].start && ret < rseq_slice_el0_ranges[i].end)
			return rseq_slice_el0_ranges[i].kind;
	}
	return RSEQ_SLICE_EXIT_OTHER;
}

/*
 * Where ftrace patches the sys_ni_syscall() that invoke_syscall() calls
 * for a number past the end of the table (do_ni_syscall(), inlined),
 * found by invoke_syscall()'s own branches, or 0 if none goes there.
 *
 * Not the symbol's address: kallsyms gives sys_ni_syscall() a size that
 * covers the weak system call stubs after it, which have no names of
 * their own (0x120 bytes on Debian's 6.1, ten ftrace sites), and
 * ftrace_set_filter_ip() on a symbol's start takes any site in that
 * size, which hooked one of the stubs: system call 471 still answered
 * -ENOSYS. The site itself is the BL of the function's patchable entry,
 * one instruction in (ftrace_call_adjust(); arm64's kernels here have no
 * BTI). Module init.
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
			return dst + AARCH64_INSN_SIZE;
	}
	return 0;
}
