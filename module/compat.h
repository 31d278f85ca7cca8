/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few kernel interfaces that changed names between the kernels this
 * module supports (6.1 and 6.12). Detected by the macro's presence, not by
 * version numbers, so that a backport does not break the build.
 */
#ifndef RSEQ_SLICE_COMPAT_H
#define RSEQ_SLICE_COMPAT_H

#include <linux/ftrace.h>

/* Renamed in 6.7; both are macros on x86-64. */
#ifndef ftrace_regs_set_instruction_pointer
#define ftrace_regs_set_instruction_pointer(fregs, ip) \
	ftrace_instruction_pointer_set(fregs, ip)
#endif

#endif /* RSEQ_SLICE_COMPAT_H */
