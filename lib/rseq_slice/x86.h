/* SPDX-License-Identifier: GPL-2.0 */
/*
 * librseq-slice, x86 (64 and 32 bit): the few instructions the protocol
 * needs, included by <rseq_slice.h> (do not include this one directly).
 */
#ifndef RSEQ_SLICE_ARCH_X86_H
#define RSEQ_SLICE_ARCH_X86_H

#include <stdint.h>

/* The signature upstream's rseq selftests and glibc use on x86. */
#define RSEQ_SLICE_ARCH_RSEQ_SIG	0x53053053

/* ioctl(@fd, @cmd, 0) as a raw system call: the result or -errno. */
static inline long rseq_slice_arch_ioctl0(int fd, unsigned long cmd)
{
	long ret;

#ifdef __x86_64__
	/* __NR_ioctl is 16 on x86-64. */
	__asm__ __volatile__("syscall"
			     : "=a" (ret)
			     : "0" (16L), "D" ((long)fd), "S" (cmd)
			     : "rcx", "r11", "memory");
#else
	/* __NR_ioctl is 54 on i386 (the compat ioctl). */
	__asm__ __volatile__("int $0x80"
			     : "=a" (ret)
			     : "0" (54L), "b" ((long)fd), "c" (cmd)
			     : "memory");
#endif
	return ret;
}

/* A system call without arguments: the result or -errno. */
static inline long rseq_slice_arch_syscall0(long nr)
{
	long ret;

#ifdef __x86_64__
	__asm__ __volatile__("syscall" : "=a" (ret) : "0" (nr)
			     : "rcx", "r11", "memory");
#else
	__asm__ __volatile__("int $0x80" : "=a" (ret) : "0" (nr)
			     : "memory");
#endif
	return ret;
}

/*
 * Clear bit @bit of *@w; true if it was set. BTR without LOCK: the kernel
 * writes the word only from the CPU this thread runs on, between two of
 * its instructions (an interrupt's return), and one instruction is never
 * split by an interrupt, so this CPU-local read-modify-write cannot lose
 * the kernel's update.
 */
static inline int rseq_slice_arch_test_clear(uint32_t *w, unsigned int bit)
{
	/*
	 * asm goto: the caller branches on the carry flag itself (no SETC
	 * and TEST). The word is an input operand, written under the
	 * "memory" clobber: asm goto may have no outputs on older compilers.
	 */
	__asm__ __volatile__ goto("btrl %1, %0\n\tjnc %l[was_clear]"
				  : : "m" (*w), "Ir" (bit) : "cc", "memory" : was_clear);
	return 1;
was_clear:
	return 0;
}

/* The thread pointer (__rseq_offset is relative to it). */
static inline void *rseq_slice_arch_thread_pointer(void)
{
	void *tp;

#ifdef __x86_64__
	__asm__ ("mov %%fs:0, %0" : "=r" (tp));
#else
	__asm__ ("mov %%gs:0, %0" : "=r" (tp));
#endif
	return tp;
}

/*
 * The CPU's free-running counter, the TSC: what librseq-slice calibrates
 * (rseq_slice_tsc_calibrate()) and the tests' clock reads
 * (selftests/clock.h), one definition for both. No part of the protocol.
 */
static inline uint64_t rseq_slice_arch_counter(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a" (lo), "=d" (hi));
	return ((uint64_t)hi << 32) | lo;
}

#endif /* RSEQ_SLICE_ARCH_X86_H */
