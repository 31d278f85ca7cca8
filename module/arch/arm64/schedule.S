/* SPDX-License-Identifier: GPL-2.0 */
/*
 * arm64: schedule()'s hook, an ftrace direct call (6.12 and 7.2).
 * schedule()'s patched entry branches here through ftrace_caller(), which
 * sees the ops's direct call before it saves anything (or after another
 * ftrace user's callback, with the registers restored). Either way, on
 * entry, as for every direct trampoline:
 *
 *	x9	the return to schedule()'s caller (the caller's LR)
 *	x30	the return into schedule(), after its patched call site
 *	x29	the caller's frame pointer
 *
 * schedule() takes no arguments: x0-x8 are free. A thread without
 * preempt notifiers (one that is not registered) goes straight back into
 * schedule(). For the others a frame record for the caller, as
 * ftrace_caller() makes one, keeps the chain whole for a stack trace
 * taken inside; rseq_slice_schedule_direct() (hooks.c), passed the
 * caller's return address, the sp at schedule()'s entry and the caller's
 * frame pointer, decides; a true answer (a grant) returns straight to the
 * caller, the exit loop, as if schedule() had returned. Unload: ftrace
 * waits for every task to pass a voluntary switch (RCU Tasks) before the
 * module's text goes; none sleeps in here.
 */
#include <linux/linkage.h>
#include <asm/assembler.h>

	.text
SYM_CODE_START(rseq_slice_schedule_entry)
	bti	c
#ifdef CONFIG_PREEMPT_NOTIFIERS
	/*
	 * current (sp_el0) has no preempt notifier: it is not registered
	 * (rseq_slice_switch_linked()), nothing to do. x10 and x11 are free
	 * as x0-x8 are (ftrace_stub_direct_tramp() uses x10 too).
	 */
	mrs	x10, sp_el0
	ldr_l	x11, rseq_slice_notifiers_offset
	ldr	x10, [x10, x11]
	cbnz	x10, .Lrseq_slice_test
	mov	x10, x30
	mov	x30, x9
	ret	x10
.Lrseq_slice_test:
#endif
	stp	x29, x9, [sp, #-32]!
	str	x30, [sp, #16]
	mov	x0, x9
	add	x1, sp, #32
	mov	x2, x29
	mov	x29, sp
	bl	rseq_slice_schedule_direct
	ldr	x30, [sp, #16]
	ldp	x29, x9, [sp], #32
	tbnz	w0, #0, .Lrseq_slice_skip
	/* On into schedule(), with its caller's return in the LR. */
	mov	x10, x30
	mov	x30, x9
	ret	x10
.Lrseq_slice_skip:
	/* Granted: straight back to the caller. */
	mov	x30, x9
	ret
SYM_CODE_END(rseq_slice_schedule_entry)
