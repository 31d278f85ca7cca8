// SPDX-License-Identifier: GPL-2.0
/*
 * librseq-slice: the backend choice and the counter calibration.
 * Everything a critical section runs is inline, in rseq_slice.h.
 */
#define _GNU_SOURCE
#include "rseq_slice.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/rseq.h>
#include <sys/syscall.h>

#ifndef AT_RSEQ_FEATURE_SIZE
#define AT_RSEQ_FEATURE_SIZE	27
#endif
#ifndef AT_RSEQ_ALIGN
#define AT_RSEQ_ALIGN		28
#endif
#define ORIG_RSEQ_SIZE		32
#define RSEQ_UNREGISTER		1

/*
 * rseq_slice_tsc_calibrate() and rseq_slice_tsc_per_ns stay exported
 * (librseq-slice.so.1's ABI is unchanged) but are declared in no public
 * header any more: the clock the tests and benchmarks read is theirs
 * (selftests/clock.h), and must be the counter read here.
 */
double rseq_slice_tsc_per_ns;
double rseq_slice_tsc_calibrate(uint64_t ns);
__thread struct rseq_slice_tls rseq_slice_tls;

/*
 * The CPU's free-running counter (the TSC, or Arm's virtual counter):
 * the arch header's, which the tests' clock (selftests/clock.h) reads too.
 */
static uint64_t read_counter(void)
{
	return rseq_slice_arch_counter();
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * One (CLOCK_MONOTONIC, counter) pair: the counter read between two clock
 * reads, the pair's time their midpoint. An interrupt or a stalled vCPU
 * between the two reads would put them apart by its length: a bracket
 * wider than 20 us is read again (100 tries at most). Unbracketed, a
 * stall between the first two reads once made the counter's nanoseconds
 * run more than ten times fast in a 6.1-debug guest: a test's 240 s
 * bound ran out within its program's 21 s.
 */
static void clock_pair(uint64_t *t, uint64_t *c)
{
	uint64_t a, b;
	int i;

	for (i = 0; i < 100; i++) {
		a = mono_ns();
		*c = read_counter();
		b = mono_ns();
		if (b - a <= 20000)
			break;
	}
	*t = a + (b - a) / 2;
}

double rseq_slice_tsc_calibrate(uint64_t ns)
{
	uint64_t t0, c0, t1, c1;

	if (rseq_slice_tsc_per_ns)
		return rseq_slice_tsc_per_ns;
	if (!ns)
		ns = 20000000;
	clock_pair(&t0, &c0);
	while (mono_ns() - t0 < ns)
		;
	clock_pair(&t1, &c1);
	/* Racing threads compute about the same value: either store is fine. */
	rseq_slice_tsc_per_ns = (double)(c1 - c0) / (double)(t1 - t0);
	return rseq_slice_tsc_per_ns;
}

/*
 * The rseq area the library registers when glibc did not (tunable
 * glibc.pthread.rseq=0, or a C library without rseq): as upstream's
 * selftests, 32 bytes where the kernel offers no more (6.1, 6.12), else
 * what AT_RSEQ_FEATURE_SIZE and AT_RSEQ_ALIGN ask for (7.2 wants more
 * than 32 for time slice extension).
 */
#define AREA_SIZE	128

static __thread uint32_t own_area[AREA_SIZE / sizeof(uint32_t)]
	__attribute__((aligned(AREA_SIZE)));
static __thread unsigned int own_len;

static unsigned int own_area_len(void)
{
	unsigned long feature = getauxval(AT_RSEQ_FEATURE_SIZE);
	unsigned long align = getauxval(AT_RSEQ_ALIGN);
	unsigned long len;

	if (feature <= ORIG_RSEQ_SIZE)
		return ORIG_RSEQ_SIZE;
	len = feature > align ? feature : align;
	len = (len + 31) & ~31UL;
	return len <= AREA_SIZE ? (unsigned int)len : 0;
}

static int sys_rseq(void *area, unsigned int len, int flags)
{
	return syscall(SYS_rseq, area, len, flags, RSEQ_SLICE_RSEQ_SIG) ? -errno : 0;
}

/* The merged ABI: the rseq area glibc registered, or one of our own. */
static int try_kernel(struct rseq_slice_tls *t)
{
	char *area;
	int ret;

	if (__rseq_size) {
		area = (char *)rseq_slice_arch_thread_pointer() + __rseq_offset;
	} else {
		own_len = own_area_len();
		if (!own_len)
			return -ENOSPC;
		memset(own_area, 0, sizeof(own_area));
		own_area[1] = (uint32_t)-1;	/* cpu_id: not registered yet */
		ret = sys_rseq(own_area, own_len, 0);
		if (ret)
			return ret;	/* EBUSY: someone else registered one */
		area = (char *)own_area;
		t->own_rseq = 1;
	}
	if (prctl(RSEQ_SLICE_PR_EXTENSION, RSEQ_SLICE_PR_SET, RSEQ_SLICE_PR_ENABLE, 0, 0)) {
		ret = -errno;
		/* Leave the thread as it was. */
		if (t->own_rseq)
			sys_rseq(own_area, own_len, RSEQ_UNREGISTER);
		t->own_rseq = 0;
		return ret;
	}
	t->kctrl = (struct rseq_slice_merged_ctrl *)(area + RSEQ_SLICE_CTRL_OFFSET);
	t->kctrl->request = 0;
	t->backend = RSEQ_SLICE_BACKEND_KERNEL;
	t->word = &t->kctrl->all;
	return 0;
}

/*
 * One descriptor of the device for the whole process (any descriptor
 * works for any thread's ioctls), opened on first use and kept: while
 * the program runs, the module cannot be unloaded.
 */
static int module_fd = -1;

static int get_module_fd(void)
{
	int fd = __atomic_load_n(&module_fd, __ATOMIC_ACQUIRE), old = -1;

	if (fd >= 0)
		return fd;
	fd = open(RSEQ_SLICE_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!__atomic_compare_exchange_n(&module_fd, &old, fd, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		close(fd);
		fd = old;
	}
	return fd;
}

static int try_module(struct rseq_slice_tls *t)
{
	struct rseq_slice_register reg = { 0 };
	int fd = get_module_fd();

	if (fd < 0)
		return fd;
	t->mod.ctrl = 0;
	t->mod.depth = 0;
	reg.ctrl = (uintptr_t)&t->mod.ctrl;
	if (ioctl(fd, RSEQ_SLICE_IOC_ENABLE, &reg))
		return -errno;
	t->mod.fd = fd;
	t->backend = RSEQ_SLICE_BACKEND_MODULE;
	t->word = &t->mod.ctrl;
	return 0;
}

void rseq_slice_fini(void)
{
	struct rseq_slice_tls *t = &rseq_slice_tls;

	if (t->backend == RSEQ_SLICE_BACKEND_KERNEL) {
		t->kctrl->request = 0;
		prctl(RSEQ_SLICE_PR_EXTENSION, RSEQ_SLICE_PR_SET, 0, 0, 0);
		if (t->own_rseq)
			sys_rseq(own_area, own_len, RSEQ_UNREGISTER);
	} else if (t->backend == RSEQ_SLICE_BACKEND_MODULE) {
		ioctl(t->mod.fd, RSEQ_SLICE_IOC_DISABLE, 0);
	}
	memset(t, 0, sizeof(*t));
	t->mod.fd = -1;
	t->word = &t->none_word;
}

/*
 * RSEQ_SLICE_BACKEND: the backends this process may use. Unset, empty or
 * "auto": any (rseq_slice_init()'s own choice); "none": none, the program
 * runs as if the machine had no extension; "kernel" ("merged",
 * "upstream") or "module" ("ioctl", "device"): only that one. Anything
 * else is said once on stderr and read as "auto". Read at every
 * rseq_slice_init() (not a hot path), so a program may set it itself.
 */
static enum rseq_slice_backend env_backend(void)
{
	static int warned;
	const char *v = getenv("RSEQ_SLICE_BACKEND");
	enum rseq_slice_backend b;
	char msg[256];
	int n;

	if (!v || !*v)
		return RSEQ_SLICE_BACKEND_AUTO;
	if (!rseq_slice_backend_parse(v, &b))
		return b;
	if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		return RSEQ_SLICE_BACKEND_AUTO;
	/* write(), not stdio: the interposer calls this from a lock wrapper. */
	n = snprintf(msg, sizeof(msg), "librseq-slice: RSEQ_SLICE_BACKEND=%.64s: not auto, none, "
		     "kernel (merged, upstream) or module (ioctl, device); using auto\n", v);
	if (n > 0 && write(2, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1) < 0)
		return RSEQ_SLICE_BACKEND_AUTO;
	return RSEQ_SLICE_BACKEND_AUTO;
}

/* What rseq_slice_init(@b) returns where the machine lacks @b. */
static int absent(enum rseq_slice_backend b)
{
	/* prctl() of an unknown option; open() of a missing device. */
	return b == RSEQ_SLICE_BACKEND_KERNEL ? -EINVAL : -ENOENT;
}

int rseq_slice_init(enum rseq_slice_backend want)
{
	struct rseq_slice_tls *t = &rseq_slice_tls;
	enum rseq_slice_backend allowed;
	int ret, asked = want != RSEQ_SLICE_BACKEND_AUTO;

	if (t->depth)
		return -EBUSY;	/* inside a critical section */
	rseq_slice_fini();
	if (want != RSEQ_SLICE_BACKEND_NONE && want != RSEQ_SLICE_BACKEND_KERNEL &&
	    want != RSEQ_SLICE_BACKEND_MODULE && want != RSEQ_SLICE_BACKEND_AUTO)
		return -EINVAL;
	allowed = env_backend();
	if (allowed != RSEQ_SLICE_BACKEND_AUTO) {
		if (want == RSEQ_SLICE_BACKEND_AUTO)
			want = allowed;
		else if (want != RSEQ_SLICE_BACKEND_NONE && want != allowed)
			return absent(want);
		if (want == RSEQ_SLICE_BACKEND_NONE)
			return RSEQ_SLICE_BACKEND_NONE;
	}
	switch (want) {
	case RSEQ_SLICE_BACKEND_NONE:
		return RSEQ_SLICE_BACKEND_NONE;
	case RSEQ_SLICE_BACKEND_KERNEL:
		ret = try_kernel(t);
		break;
	case RSEQ_SLICE_BACKEND_MODULE:
		ret = try_module(t);
		break;
	default:
		if (!try_kernel(t))
			return RSEQ_SLICE_BACKEND_KERNEL;
		if (!try_module(t))
			return RSEQ_SLICE_BACKEND_MODULE;
		return RSEQ_SLICE_BACKEND_NONE;
	}
	if (ret)	/* "auto" narrowed by the environment ends on "none" */
		return asked ? ret : RSEQ_SLICE_BACKEND_NONE;
	return want;
}

static const char *const names[] = {
	[RSEQ_SLICE_BACKEND_NONE] = "none",
	[RSEQ_SLICE_BACKEND_MODULE] = "module",
	[RSEQ_SLICE_BACKEND_KERNEL] = "kernel",
};

const char *rseq_slice_backend_name(enum rseq_slice_backend b)
{
	if (b == RSEQ_SLICE_BACKEND_AUTO)
		return "auto";
	if ((unsigned int)b < sizeof(names) / sizeof(names[0]))
		return names[b];
	return "?";
}

int rseq_slice_backend_parse(const char *name, enum rseq_slice_backend *b)
{
	unsigned int i;

	if (!strcmp(name, "auto")) {
		*b = RSEQ_SLICE_BACKEND_AUTO;
		return 0;
	}
	/* The benchmarks' name for the kernel's own implementation, and another. */
	if (!strcmp(name, "upstream") || !strcmp(name, "merged")) {
		*b = RSEQ_SLICE_BACKEND_KERNEL;
		return 0;
	}
	/* The module's v1 ioctls on its device. */
	if (!strcmp(name, "ioctl") || !strcmp(name, "device")) {
		*b = RSEQ_SLICE_BACKEND_MODULE;
		return 0;
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(name, names[i])) {
			*b = (enum rseq_slice_backend)i;
			return 0;
		}
	}
	return -1;
}

const char *rseq_slice_backend_describe(void)
{
	switch (rseq_slice_backend()) {
	case RSEQ_SLICE_BACKEND_NONE:
		return "none";
	case RSEQ_SLICE_BACKEND_MODULE:
		return "module (rseq_slice.ko, ioctls on " RSEQ_SLICE_DEVICE ")";
	case RSEQ_SLICE_BACKEND_KERNEL:
		if (access(RSEQ_SLICE_DEVICE, F_OK) == 0)
			return "kernel (the merged ABI, through rseq_slice.ko)";
		return "kernel (the merged ABI, the kernel's own)";
	default:
		return "?";
	}
}
