/* SPDX-License-Identifier: GPL-2.0 */
/*
 * librseq-slice, arm64 (AArch64): the few instructions the protocol
 * needs, included by <rseq_slice.h> (do not include this one directly).
 */
#ifndef RSEQ_SLICE_ARCH_ARM64_H
#define RSEQ_SLICE_ARCH_ARM64_H

#include <stdint.h>

/*
 * The signature upstream's rseq selftests (rseq-arm64.h) and glibc use on
 * AArch64: a BRK #0x45e0, little-endian.
 */
#define RSEQ_SLICE_ARCH_RSEQ_SIG	0xd428bc00

/*
 * ioctl(@fd, @cmd, 0) as a raw system call: the result or -errno.
 * __NR_ioctl is 29 in asm-generic/unistd.h, which arm64 uses.
 */
static inline long rseq_slice_arch_ioctl0(int fd, unsigned long cmd)
{
	register long x8 __asm__("x8") = 29;
	register long x0 __asm__("x0") = fd;
	register long x1 __asm__("x1") = (long)cmd;
	register long x2 __asm__("x2") = 0;

	__asm__ __volatile__("svc #0"
			     : "+r" (x0)
			     : "r" (x8), "r" (x1), "r" (x2)
			     : "memory");
	return x0;
}

/* A system call without arguments: the result or -errno. */
static inline long rseq_slice_arch_syscall0(long nr)
{
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0");

	__asm__ __volatile__("svc #0"
			     : "=r" (x0)
			     : "r" (x8)
			     : "memory");
	return x0;
}

/*
 * Clear bit @bit of *@w; true if it was set: an atomic fetch-and.
 *
 * The kernel changes the word only from the CPU this thread runs on, on
 * an interrupt's return to this thread (clear REQUEST, set GRANTED), so
 * the one danger is an interrupt between our load and our store, whose
 * update the store would then undo. With LSE, LDCLR is one instruction:
 * an interrupt comes before it or after it, never inside. Without LSE,
 * LDXR/STXR: an exception return (ERET) clears the local exclusive
 * monitor (Arm ARM, as Linux's arm64 entry code relies on: its
 * kernel_exit has no CLREX), so if an interrupt came between the two,
 * the STXR fails and the loop loads the kernel's value again. No barrier
 * is needed: no other CPU writes the word, and the compiler barrier
 * ("memory") keeps the section's accesses on their side.
 */
static inline int rseq_slice_arch_test_clear(uint32_t *w, unsigned int bit)
{
	uint32_t mask = 1U << bit, old;

#ifdef __ARM_FEATURE_ATOMICS
	__asm__ __volatile__("ldclr %w[mask], %w[old], %[word]"
			     : [old] "=&r" (old), [word] "+Q" (*w)
			     : [mask] "r" (mask)
			     : "memory");
#else
	uint32_t tmp, fail;

	__asm__ __volatile__("1:	ldxr	%w[old], %[word]\n"
			     "	bic	%w[tmp], %w[old], %w[mask]\n"
			     "	stxr	%w[fail], %w[tmp], %[word]\n"
			     "	cbnz	%w[fail], 1b\n"
			     : [old] "=&r" (old), [tmp] "=&r" (tmp),
			       [fail] "=&r" (fail), [word] "+Q" (*w)
			     : [mask] "r" (mask)
			     : "memory");
#endif
	return !!(old & mask);
}

/* The thread pointer, TPIDR_EL0 (__rseq_offset is relative to it). */
static inline void *rseq_slice_arch_thread_pointer(void)
{
	return __builtin_thread_pointer();
}

/*
 * The CPU's free-running counter, the virtual counter CNTVCT_EL0 (Linux
 * lets user space read it): what librseq-slice calibrates
 * (rseq_slice_tsc_calibrate()) and the tests' clock reads
 * (selftests/clock.h), one definition for both. The ISB keeps it from
 * being read ahead of the instructions before it. No part of the protocol.
 */
static inline uint64_t rseq_slice_arch_counter(void)
{
	uint64_t v;

	__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r" (v) :: "memory");
	return v;
}

#endif /* RSEQ_SLICE_ARCH_ARM64_H */
