/* SPDX-License-Identifier: GPL-2.0 */
/*
 * librseq-slice, 32-bit Arm (EABI), for AArch32 (compat) tasks on arm64
 * kernels: the few instructions the protocol needs, included by
 * <rseq_slice.h> (do not include this one directly).
 */
#ifndef RSEQ_SLICE_ARCH_ARM_H
#define RSEQ_SLICE_ARCH_ARM_H

#include <stdint.h>

/* The signature upstream's rseq selftests (rseq-arm.h) and glibc use: a UDF. */
#define RSEQ_SLICE_ARCH_RSEQ_SIG	0xe7f5def3

/* ioctl(@fd, @cmd, 0) as a raw system call (EABI: r7 = 54): result or -errno. */
static inline long rseq_slice_arch_ioctl0(int fd, unsigned long cmd)
{
	register long r7 __asm__("r7") = 54;
	register long r0 __asm__("r0") = fd;
	register long r1 __asm__("r1") = (long)cmd;
	register long r2 __asm__("r2") = 0;

	__asm__ __volatile__("svc #0"
			     : "+r" (r0)
			     : "r" (r7), "r" (r1), "r" (r2)
			     : "memory");
	return r0;
}

/* A system call without arguments: the result or -errno. */
static inline long rseq_slice_arch_syscall0(long nr)
{
	register long r7 __asm__("r7") = nr;
	register long r0 __asm__("r0");

	__asm__ __volatile__("svc #0"
			     : "=r" (r0)
			     : "r" (r7)
			     : "memory");
	return r0;
}

/*
 * Clear bit @bit of *@w; true if it was set: LDREX/STREX. The kernel
 * changes the word only from this thread's CPU, on an interrupt's return
 * to it; that exception return clears the local exclusive monitor, so a
 * STREX after an interrupt fails and the loop loads the kernel's value
 * again (see arm64.h). No barrier: no other CPU writes the word.
 */
static inline int rseq_slice_arch_test_clear(uint32_t *w, unsigned int bit)
{
	uint32_t mask = 1U << bit, old, tmp, fail;

	__asm__ __volatile__("1:	ldrex	%[old], %[word]\n"
			     "	bic	%[tmp], %[old], %[mask]\n"
			     "	strex	%[fail], %[tmp], %[word]\n"
			     "	cmp	%[fail], #0\n"
			     "	bne	1b\n"
			     : [old] "=&r" (old), [tmp] "=&r" (tmp),
			       [fail] "=&r" (fail), [word] "+Q" (*w)
			     : [mask] "r" (mask)
			     : "cc", "memory");
	return !!(old & mask);
}

/* The thread pointer, TPIDRURO (__rseq_offset is relative to it). */
static inline void *rseq_slice_arch_thread_pointer(void)
{
	return __builtin_thread_pointer();
}

/*
 * The CPU's free-running counter, CNTVCT as AArch32 reads it (a compat
 * task on arm64; Linux lets user space): what librseq-slice calibrates
 * (rseq_slice_tsc_calibrate()) and the tests' clock reads
 * (selftests/clock.h), one definition for both. No part of the protocol.
 */
static inline uint64_t rseq_slice_arch_counter(void)
{
	uint64_t v;

	__asm__ __volatile__("isb\n\tmrrc p15, 1, %Q0, %R0, c14" : "=r" (v) :: "memory");
	return v;
}

#endif /* RSEQ_SLICE_ARCH_ARM_H */
