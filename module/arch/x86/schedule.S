/* SPDX-License-Identifier: GPL-2.0 */
/*
 * x86-64: schedule()'s hook, an ftrace direct call. schedule()'s
 * __fentry__ call site calls rseq_slice_schedule_entry() instead of
 * ftrace's trampoline; while another ftrace user traces schedule() too,
 * ftrace's trampoline runs that user's callback and then returns into
 * this one, with the same stack. Either way, on entry:
 *
 *	0(%rsp)		the return into schedule(), after its __fentry__ call
 *	8(%rsp)		the return to schedule()'s caller
 *
 * schedule() takes no arguments and has not begun its prologue: every
 * call-clobbered register is free, and %rbp is still the caller's. So
 * nothing is saved. A thread without preempt notifiers (one that is not
 * registered) goes straight back into schedule(): current is read from
 * its per-CPU slot as get_current() reads it (rseq_slice_current_slot,
 * exit.c, an address in the per-CPU area that %gs bases). For the
 * others, rseq_slice_schedule_direct() (hooks.c), passed the
 * caller's return address, the sp pointing at it and %rbp, decides; a
 * true answer (a grant) returns straight to schedule()'s caller, the exit
 * loop, as if schedule() had returned. Unload: ftrace waits for every
 * task to pass a voluntary switch (RCU Tasks) before the module's text
 * goes; none sleeps in here.
 */
#include <linux/linkage.h>
#include <asm/nospec-branch.h>
#include <asm/unwind_hints.h>

/* Call depth tracking (6.2 on): a direct call's trampoline accounts itself. */
#ifndef CALL_DEPTH_ACCOUNT
#define CALL_DEPTH_ACCOUNT
#endif

	.text
SYM_FUNC_START(rseq_slice_schedule_entry)
	CALL_DEPTH_ACCOUNT
#ifdef CONFIG_PREEMPT_NOTIFIERS
	/* Is current's preempt notifier list empty (rseq_slice_switch_linked())? */
	movq	rseq_slice_current_slot(%rip), %rax
	movq	%gs:(%rax), %rax
	addq	rseq_slice_notifiers_offset(%rip), %rax
	cmpq	$0, (%rax)
	jne	.Lrseq_slice_test
	RET
.Lrseq_slice_test:
#endif
	movq	8(%rsp), %rdi
	leaq	8(%rsp), %rsi
	movq	%rbp, %rdx
	call	rseq_slice_schedule_direct
	testb	%al, %al
	jnz	.Lrseq_slice_skip
	RET
.Lrseq_slice_skip:
	/* Drop the return into schedule(): the caller's is on top. */
	addq	$8, %rsp
	UNWIND_HINT_FUNC
	RET
SYM_FUNC_END(rseq_slice_schedule_entry)
