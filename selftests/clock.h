/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A clock without system calls, for the tests and benchmarks (not part
 * of librseq-slice's public header: it holds architecture code and is no
 * part of the protocol).
 *
 * clock_gettime() is a system call where the vDSO cannot read the clock
 * (the HPET clocksource QEMU's x86 TCG guests end up with), and a system
 * call inside a critical section ends a grant: time there comes from the
 * CPU's free-running counter (x86: the TSC; arm64: the virtual counter
 * CNTVCT_EL0, which Linux lets user space read), calibrated once against
 * CLOCK_MONOTONIC by rseq_slice_tsc_calibrate(). The calibration and its
 * result are librseq-slice's (exported since 1.0), and it reads the same
 * counter as rseq_slice_rdtsc() here.
 */
#ifndef RSEQ_SLICE_TEST_CLOCK_H
#define RSEQ_SLICE_TEST_CLOCK_H

#include <stdint.h>

/* rseq_slice_arch_counter(), from the architecture's header. */
#include "rseq_slice.h"

/* Counter ticks per ns; set by rseq_slice_tsc_calibrate(). */
extern double rseq_slice_tsc_per_ns;

/*
 * Measure counter ticks per ns over @ns of CLOCK_MONOTONIC (0: 20 ms),
 * once: later calls return the first result. Returns rseq_slice_tsc_per_ns.
 */
double rseq_slice_tsc_calibrate(uint64_t ns);

/*
 * The counter (the name is x86's; on arm64 it reads CNTVCT_EL0): the
 * architecture header's rseq_slice_arch_counter(), the very read
 * librseq-slice calibrates with.
 */
static inline uint64_t rseq_slice_rdtsc(void)
{
	return rseq_slice_arch_counter();
}

/* Nanoseconds on the counter's scale (calibrated first). */
static inline uint64_t rseq_slice_tsc_ns(void)
{
	return (uint64_t)((double)rseq_slice_rdtsc() / rseq_slice_tsc_per_ns);
}

static inline uint64_t rseq_slice_ns_to_tsc(uint64_t ns)
{
	return (uint64_t)((double)ns * rseq_slice_tsc_per_ns);
}

/* Spin @ns without entering the kernel. */
static inline void rseq_slice_busy_wait_ns(uint64_t ns)
{
	uint64_t end = rseq_slice_rdtsc() + rseq_slice_ns_to_tsc(ns);

	while (rseq_slice_rdtsc() < end)
		;
}

/* A spin-wait loop's pause: x86's pause, Arm's yield hint. */
static inline void rseq_slice_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__("pause" ::: "memory");
#elif defined(__aarch64__) || defined(__arm__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

#endif /* RSEQ_SLICE_TEST_CLOCK_H */
