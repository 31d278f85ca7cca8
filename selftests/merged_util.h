/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The merged (Linux 7.2) time slice extension ABI, as a program sees it:
 * its own rseq registration, prctl(PR_RSEQ_SLICE_EXTENSION), the
 * rseq_slice_yield() system call, and the control word slice_ctrl in
 * struct rseq. Kept small and in one place, for merged_test and
 * merged_probe, until the user-space library (lib/) takes it over.
 *
 * The registration is done the way upstream's selftest library does it
 * (tools/testing/selftests/rseq/rseq.c in 7.2): an area of 1024 bytes in
 * initial-exec TLS, aligned as struct rseq_abi (256), registered with
 * getauxval(AT_RSEQ_FEATURE_SIZE) bytes, or 32 where that is below 32 or
 * absent. So 7.2 gets its "v2" registration (33 bytes, needed for the
 * prctl) and 6.1/6.12, which offer no AT_RSEQ_FEATURE_SIZE, get 32.
 */
#ifndef MERGED_UTIL_H
#define MERGED_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#ifndef PR_RSEQ_SLICE_EXTENSION
#define PR_RSEQ_SLICE_EXTENSION		79
#define PR_RSEQ_SLICE_EXTENSION_GET	1
#define PR_RSEQ_SLICE_EXTENSION_SET	2
#define PR_RSEQ_SLICE_EXT_ENABLE	0x01
#endif
/* __NR_rseq_slice_yield: 471 on x86-64 and in asm-generic/unistd.h (arm64). */
#define MERGED_NR_YIELD			471
#define MERGED_ENOTSUPP			524	/* the kernel's ENOTSUPP */
/* Upstream's RSEQ_SIG: rseq-x86.h's, rseq-arm64.h's (a BRK #0x45e0). */
#if defined(__aarch64__)
#define MERGED_RSEQ_SIG			0xd428bc00
#else
#define MERGED_RSEQ_SIG			0x53053053
#endif
#define MERGED_FLAG_UNREGISTER		1
/* rseq->flags bits 7.2 sets (read-only for user space; 6.x never sets them). */
#define MERGED_CS_FLAG_SLICE_AVAILABLE	(1U << 4)
#define MERGED_CS_FLAG_SLICE_ENABLED	(1U << 5)
#ifndef AT_RSEQ_FEATURE_SIZE
#define AT_RSEQ_FEATURE_SIZE		27
#define AT_RSEQ_ALIGN			28
#endif

/* struct rseq of 7.2 (include/uapi/linux/rseq.h). */
struct merged_rseq {
	uint32_t cpu_id_start;
	uint32_t cpu_id;
	uint64_t rseq_cs;
	uint32_t flags;
	uint32_t node_id;
	uint32_t mm_cid;
	union {
		uint32_t all;
		struct {
			uint8_t request;
			uint8_t granted;
			uint16_t __reserved;
		};
	} slice_ctrl;
	uint8_t __reserved;
	char end[];
} __attribute__((aligned(256)));

_Static_assert(offsetof(struct merged_rseq, slice_ctrl) == 28, "slice_ctrl at offset 28");
_Static_assert(offsetof(struct merged_rseq, end) == 33, "7.2's feature size is 33");

#define MERGED_AREA_SIZE	1024
#define MERGED_ORIG_SIZE	32

union merged_area {
	struct merged_rseq abi;
	char pad[MERGED_AREA_SIZE];
};

static __thread union merged_area merged_tls
	__attribute__((tls_model("initial-exec"))) = {
	.abi = { .cpu_id = (uint32_t)-1 },
};

/* The registered area and length of this thread (NULL, 0: none). */
static __thread struct merged_rseq *merged_rs;
static __thread uint32_t merged_len;

/* The length upstream's library registers with on this kernel. */
static inline uint32_t merged_rseq_len(void)
{
	unsigned long size = getauxval(AT_RSEQ_FEATURE_SIZE);

	if (!size)
		size = 20;	/* the original feature size */
	return size < MERGED_ORIG_SIZE ? MERGED_ORIG_SIZE : (uint32_t)size;
}

static inline int merged_sys_rseq(void *area, uint32_t len, int flags)
{
	return syscall(__NR_rseq, area, len, flags, MERGED_RSEQ_SIG) ? -errno : 0;
}

/* Does glibc own this thread's rseq registration? */
static inline bool merged_glibc_owns_rseq(void)
{
	return __rseq_size != 0;
}

/*
 * Register @area (NULL: this thread's TLS area) with @len bytes (0: the
 * length upstream's library picks): 0 or -errno.
 */
static inline int merged_register_area(struct merged_rseq *area, uint32_t len)
{
	int ret;

	if (!area)
		area = &merged_tls.abi;
	if (!len)
		len = merged_rseq_len();
	if (getauxval(AT_RSEQ_ALIGN) > __alignof__(struct merged_rseq) ||
	    len > MERGED_AREA_SIZE)
		return -EOVERFLOW;	/* would not fit in this area */
	ret = merged_sys_rseq(area, len, 0);
	if (!ret) {
		merged_rs = area;
		merged_len = len;
	}
	return ret;
}

static inline int merged_register(void)
{
	return merged_register_area(NULL, 0);
}

static inline int merged_unregister(void)
{
	int ret;

	if (!merged_rs)
		return -ENOENT;
	ret = merged_sys_rseq(merged_rs, merged_len, MERGED_FLAG_UNREGISTER);
	if (!ret) {
		merged_rs = NULL;
		merged_len = 0;
	}
	return ret;
}

/* prctl(PR_RSEQ_SLICE_EXTENSION, ...): its result or -errno. */
static inline long merged_prctl(unsigned long op, unsigned long arg3,
				unsigned long arg4, unsigned long arg5)
{
	long ret = prctl(PR_RSEQ_SLICE_EXTENSION, op, arg3, arg4, arg5);

	return ret < 0 ? -errno : ret;
}

static inline long merged_get(void)
{
	return merged_prctl(PR_RSEQ_SLICE_EXTENSION_GET, 0, 0, 0);
}

static inline long merged_set(unsigned long enable)
{
	return merged_prctl(PR_RSEQ_SLICE_EXTENSION_SET, enable, 0, 0);
}

/* rseq_slice_yield(): its result or -errno. */
static inline long merged_yield(void)
{
	long ret = syscall(MERGED_NR_YIELD);

	return ret < 0 ? -errno : ret;
}

/* The control word's bytes and rseq->flags, read and written as user space does. */
static inline uint8_t merged_request(void)
{
	return __atomic_load_n(&merged_rs->slice_ctrl.request, __ATOMIC_RELAXED);
}

static inline uint8_t merged_granted(void)
{
	return __atomic_load_n(&merged_rs->slice_ctrl.granted, __ATOMIC_RELAXED);
}

static inline uint32_t merged_ctrl_all(void)
{
	return __atomic_load_n(&merged_rs->slice_ctrl.all, __ATOMIC_RELAXED);
}

static inline void merged_set_request(uint8_t v)
{
	__asm__ __volatile__("" ::: "memory");
	__atomic_store_n(&merged_rs->slice_ctrl.request, v, __ATOMIC_RELAXED);
	__asm__ __volatile__("" ::: "memory");
}

static inline uint32_t merged_flags(void)
{
	return __atomic_load_n(&merged_rs->flags, __ATOMIC_RELAXED);
}

/*
 * Is the merged ABI offered here? 7.2 answers GET (0 or 1) for any
 * thread; a kernel without it (6.1, 6.12 without the module) says EINVAL.
 */
static inline bool merged_offered(void)
{
	return merged_get() != -EINVAL;
}

/*
 * The merged ABI is off (merged_abi=0, or its hook point not found): the
 * prctl and system call 471 get the kernel's own answers, 6.x's EINVAL
 * and ENOSYS, 7.x's (without the option) ENOTSUPP and ENOSYS. For a
 * kselftest_harness test (it needs _metadata).
 */
#define MERGED_EXPECT_ABSENT() do {					\
	struct utsname __u;						\
	long __want;							\
									\
	ASSERT_EQ(0, uname(&__u));					\
	__want = atoi(__u.release) >= 7 ? -MERGED_ENOTSUPP : -EINVAL;	\
	EXPECT_EQ(__want, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));	\
	EXPECT_EQ(__want, merged_get());				\
	EXPECT_EQ(-ENOSYS, merged_yield());				\
} while (0)

#endif /* MERGED_UTIL_H */
