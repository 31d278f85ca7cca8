// SPDX-License-Identifier: GPL-2.0
/*
 * An ioctl fuzzer for /dev/rseq_slice, run as root and as a user.
 *
 * Four threads, each with its own file and one file they share, issue
 * random commands: the five real ones, every _IOC direction, size and
 * number in the module's type, and fully random 32-bit values, with
 * arguments that point anywhere (NULL, kernel addresses, unmapped,
 * read-only, PROT_NONE, misaligned, the last bytes before a guard page,
 * shared file and shared anonymous mappings, a huge page, stack, heap,
 * thread-local storage). ENABLE gets a struct rseq_slice_register whose
 * ctrl is drawn from the same places.
 *
 * Every return must be success or an errno docs/abi.md documents for that
 * command, and, since the fuzzer tracks each thread's registration, the
 * exact value the ABI predicts. Between calls a thread sometimes sets
 * REQUEST in its registered word and spins, so that grants happen while
 * it fuzzes, and yields when it sees one.
 *
 * Each thread's control word candidates are its own and only ever hold
 * what the protocol puts there: a registered word with a stray REQUEST
 * bit could be granted, and the next call would be a foreign system call.
 * Argument buffers and control words are kept apart for the same reason
 * (an INFO reply must never land on a registered word).
 */
#include "slice_util.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"

#define FUZZ_THREADS	4
#define FUZZ_DEFAULT	100000
/* The page size: 4 KB, or 16 KB (Debian's arm64-16k kernel), 64 KB. */
#define PG		((size_t)sysconf(_SC_PAGESIZE))
/* A region's bytes (stack, TLS): arguments and control words fit in 4 KB. */
#define REGION		4096UL
#define HUGE_SZ		(2UL << 20)
#define AREA		256		/* argument bytes at the start of a region */
#define CTRL_OFF	2048		/* control words from here on */
#define CTRL_WORDS	16
#define MAX_ERR		256		/* errno values counted one by one */

/* Where a pointer goes. */
enum kind {
	K_NULL, K_KTEXT, K_KDIRECT, K_UNMAPPED, K_LOW, K_TOP, K_NONCANON, K_RANDHIGH,
	K_RO, K_NONE, K_MISALIGNED, K_TAIL4, K_TAIL2, K_SHFILE, K_SHANON, K_HUGE,
	K_STACK, K_HEAP, K_TLS,
	NR_KINDS
};

static const char *const kind_name[NR_KINDS] = {
	"null", "kernel-text", "kernel-direct", "unmapped", "low", "top", "noncanonical",
	"random-high", "read-only", "prot-none", "misaligned", "tail4", "tail2",
	"shared-file", "shared-anon", "huge", "stack", "heap", "tls",
};

/* What a command is, by its full value (the module switches on it). */
enum cls { C_ENABLE, C_DISABLE, C_GET, C_YIELD, C_INFO, C_OURS, C_RANDOM, NR_CLS };

static const char *const cls_name[NR_CLS] = {
	"ENABLE", "DISABLE", "GET", "YIELD", "INFO", "unknown (type 0xb9)", "unknown (random)",
};

/* The read-only, PROT_NONE and unmapped pages: nobody writes them. */
static char *ro_page, *none_page, *hole;
static bool huge_is_hugetlb;

struct target {
	uint64_t addr;
	enum kind kind;
	size_t room;		/* bytes readable and writable from addr (0: none) */
	bool readable;		/* readable but not writable (read-only page) */
	bool ctrl_ok;		/* as a control word: aligned private writable memory */
};

struct fuzz_thread {
	pthread_t thread;
	int idx;
	int shared_fd;
	long budget;
	uint64_t rng;

	/* This thread's regions: arguments at 0, control words at CTRL_OFF. */
	char *stack, *heap, *huge, *shfile, *shanon, *tls;
	char *argtail, *ctrltail;	/* one page each, a guard page after it */

	uint64_t reg;			/* registered control word, 0 if none */

	/* Results. */
	unsigned long counts[NR_CLS][MAX_ERR + 1];	/* [0]: success */
	unsigned long calls, undocumented, mispredicted, info_bad;
	unsigned long dances, grants, live_yields, dance_bad;
	unsigned long final_bad;
	int reported;
};

static __thread uint32_t tls_area[REGION / sizeof(uint32_t)] __attribute__((aligned(64)));

static uint64_t rnd(struct fuzz_thread *t)
{
	/* xorshift64* */
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return t->rng * 0x2545F4914F6CDD1DULL;
}

static unsigned int rndn(struct fuzz_thread *t, unsigned int n)
{
	return (unsigned int)(rnd(t) >> 33) % n;
}

/* Commands the VFS answers before the driver sees them: not ours to test. */
static bool vfs_cmd(uint32_t cmd)
{
	switch (_IOC_TYPE(cmd)) {
	case 'T':	/* FIOCLEX, FIONCLEX, FIONBIO, FIOASYNC, FIOQSIZE, FIONREAD */
	case 'X':	/* FIFREEZE, FITHAW */
	case 'f':	/* FS_IOC_GETFLAGS, SETFLAGS, FIEMAP, FSGETXATTR, ... */
	case 0x94:	/* FICLONE, FICLONERANGE, FIDEDUPERANGE */
	case 0x15:	/* FS_IOC_GETFSUUID, FS_IOC_GETFSSYSFSPATH */
		return true;
	}
	return cmd == 1 || cmd == 2;	/* FIBMAP, FIGETBSZ */
}

static enum cls cls_of(uint32_t cmd)
{
	switch (cmd) {
	case RSEQ_SLICE_IOC_ENABLE: return C_ENABLE;
	case RSEQ_SLICE_IOC_DISABLE: return C_DISABLE;
	case RSEQ_SLICE_IOC_GET: return C_GET;
	case RSEQ_SLICE_IOC_YIELD: return C_YIELD;
	case RSEQ_SLICE_IOC_INFO: return C_INFO;
	}
	return _IOC_TYPE(cmd) == RSEQ_SLICE_IOC_TYPE ? C_OURS : C_RANDOM;
}

static uint32_t gen_cmd(struct fuzz_thread *t)
{
	static const uint32_t real[] = {
		RSEQ_SLICE_IOC_ENABLE, RSEQ_SLICE_IOC_ENABLE, RSEQ_SLICE_IOC_ENABLE,
		RSEQ_SLICE_IOC_ENABLE, RSEQ_SLICE_IOC_DISABLE, RSEQ_SLICE_IOC_GET,
		RSEQ_SLICE_IOC_YIELD, RSEQ_SLICE_IOC_INFO, RSEQ_SLICE_IOC_INFO,
	};
	static const uint32_t big[] = { 65, 96, 128, 255, 256, 1024, 4095, 4096, 8192, 16383 };
	unsigned int r = rndn(t, 100);
	uint32_t cmd, size;

	if (r < 25)
		return real[rndn(t, sizeof(real) / sizeof(real[0]))];
	if (r < 80) {
		size = rndn(t, 8) ? rndn(t, 65) : big[rndn(t, sizeof(big) / sizeof(big[0]))];
		return _IOC(rndn(t, 4), RSEQ_SLICE_IOC_TYPE, rndn(t, 256), size);
	}
	do
		cmd = (uint32_t)rnd(t);
	while (vfs_cmd(cmd));
	return cmd;
}

/* The private writable regions of a thread (each with an argument area). */
static char *writable_region(struct fuzz_thread *t, enum kind k)
{
	switch (k) {
	case K_SHFILE: return t->shfile;
	case K_SHANON: return t->shanon;
	case K_HUGE: return t->huge;
	case K_STACK: return t->stack;
	case K_HEAP: return t->heap;
	default: return t->tls;
	}
}

/* A pointer of kind @k; @ctrl: a control word candidate, else an argument. */
static struct target gen_target(struct fuzz_thread *t, enum kind k, bool ctrl)
{
	static const enum kind wr[] = { K_SHFILE, K_SHANON, K_HUGE, K_STACK, K_HEAP, K_TLS };
	static const enum kind priv[] = { K_HUGE, K_STACK, K_HEAP, K_TLS };
	struct target tg = { .kind = k };
	unsigned int w = rndn(t, CTRL_WORDS);
	char *base;

	switch (k) {
	case K_NULL:
		tg.addr = 0;
		break;
	case K_KTEXT:
		tg.addr = 0xffffffff81000000ULL;
		break;
	case K_KDIRECT:
		tg.addr = 0xffff888000000000ULL;
		break;
	case K_UNMAPPED:
		tg.addr = (uintptr_t)hole + (ctrl ? 4 * w : 8 * w);
		break;
	case K_LOW:
		tg.addr = 0x1000 + 4 * w;
		break;
	case K_TOP:
		/* Above TASK_SIZE_MAX of 4-level paging. */
		tg.addr = 0x7ffffffff000ULL + 4 * w;
		break;
	case K_NONCANON:
		tg.addr = rndn(t, 2) ? 0x0000800000000000ULL : 0xdead000000000000ULL;
		break;
	case K_RANDHIGH:
		/* Never a user address, so never a registration by chance. */
		tg.addr = rnd(t) | (1ULL << 63);
		break;
	case K_RO:
		tg.addr = (uintptr_t)ro_page + (ctrl ? CTRL_OFF + 4 * w : 8 * w);
		tg.readable = true;
		break;
	case K_NONE:
		tg.addr = (uintptr_t)none_page + (ctrl ? CTRL_OFF + 4 * w : 8 * w);
		break;
	case K_MISALIGNED:
		if (ctrl) {
			base = writable_region(t, priv[rndn(t, 4)]);
			tg.addr = (uintptr_t)base + CTRL_OFF + 4 * w + 1 + rndn(t, 3);
		} else {
			base = writable_region(t, wr[rndn(t, 6)]);
			tg.addr = (uintptr_t)base + 1 + rndn(t, 63);
			tg.room = AREA - (tg.addr - (uintptr_t)base);
		}
		break;
	case K_TAIL4:
		tg.addr = (uintptr_t)(ctrl ? t->ctrltail : t->argtail) + PG - 4;
		tg.room = 4;
		tg.ctrl_ok = ctrl;
		break;
	case K_TAIL2:
		tg.addr = (uintptr_t)(ctrl ? t->ctrltail : t->argtail) + PG - 2;
		tg.room = 2;
		break;
	case K_SHFILE:
	case K_SHANON:
	case K_HUGE:
	case K_STACK:
	case K_HEAP:
	case K_TLS:
		base = writable_region(t, k);
		if (ctrl) {
			tg.addr = (uintptr_t)base + CTRL_OFF + 4 * w;
			tg.room = 4;
			/* Shared memory is refused: private anonymous only. */
			tg.ctrl_ok = k != K_SHFILE && k != K_SHANON;
		} else {
			tg.addr = (uintptr_t)base + 8 * rndn(t, 8);
			tg.room = AREA - (tg.addr - (uintptr_t)base);
		}
		break;
	default:
		break;
	}
	return tg;
}

static void report(struct fuzz_thread *t, const char *what, uint32_t cmd, long ret, int err,
		   const char *detail)
{
	if (t->reported++ >= 8)
		return;
	ksft_print_msg("thread %d: %s: cmd %#x ret %ld errno %d (%s) %s\n",
		       t->idx, what, cmd, ret, ret < 0 ? err : 0,
		       ret < 0 ? strerror(err) : "-", detail);
}

static bool documented(enum cls c, long ret, int err)
{
	if (ret >= 0) {
		switch (c) {
		case C_ENABLE: case C_DISABLE: case C_INFO:
			return ret == 0;
		case C_GET: case C_YIELD:
			return ret == 0 || ret == 1;
		default:
			return false;	/* nothing but ENOTTY for unknown commands */
		}
	}
	switch (c) {
	case C_ENABLE:
		return err == EINVAL || err == EFAULT || err == EBUSY || err == EOPNOTSUPP ||
		       err == ENOMEM;
	case C_INFO:
		return err == EFAULT;
	case C_OURS: case C_RANDOM:
		return err == ENOTTY;
	default:
		return false;	/* DISABLE, GET and YIELD never fail */
	}
}

static void count(struct fuzz_thread *t, enum cls c, long ret, int err)
{
	t->counts[c][ret >= 0 ? 0 : (err > 0 && err < MAX_ERR ? err : MAX_ERR)]++;
}

/* One fuzzed call. */
static void fuzz_one(struct fuzz_thread *t, int own_fd)
{
	int fd = rndn(t, 2) ? own_fd : t->shared_fd;
	uint32_t cmd = gen_cmd(t);
	enum cls c = cls_of(cmd);
	struct target arg = gen_target(t, (enum kind)rndn(t, NR_KINDS), false);
	struct rseq_slice_register reg = { 0 };
	struct target ctl = { 0 };
	long want_ret = -1;	/* the predicted return value, or -1 ... */
	int want_err = 0;	/* ... and then this errno */
	bool enomem_ok = false;
	char detail[200];
	long ret;
	int err;

	switch (c) {
	case C_ENABLE:
		/* Mostly a well-formed argument, so that the checks behind it run. */
		if (rndn(t, 5))
			arg = gen_target(t, (enum kind[]){ K_SHFILE, K_SHANON, K_HUGE, K_STACK,
						    K_HEAP, K_TLS, K_MISALIGNED }[rndn(t, 7)], false);
		ctl = gen_target(t, (enum kind)rndn(t, NR_KINDS), true);
		reg.ctrl = ctl.addr;
		if (!rndn(t, 4)) {
			reg.flags = rndn(t, 2) ? (uint32_t)rnd(t) : 1U << rndn(t, 32);
			reg.reserved = rndn(t, 2) ? (uint32_t)rnd(t) : 0;
		}
		if (arg.room >= sizeof(reg)) {
			memcpy((void *)(uintptr_t)arg.addr, &reg, sizeof(reg));
		} else if (arg.readable) {
			/* The read-only page holds zeros. */
			memset(&reg, 0, sizeof(reg));
			ctl.ctrl_ok = false;
		}
		if (arg.room < sizeof(reg) && !arg.readable) {
			want_err = EFAULT;
		} else if (reg.flags || reg.reserved || (reg.ctrl & 3)) {
			want_err = EINVAL;
		} else if (t->reg) {
			if (t->reg == reg.ctrl)
				want_ret = 0;
			else
				want_err = EBUSY;
		} else {
			if (ctl.ctrl_ok)
				want_ret = 0;
			else
				want_err = EFAULT;
			/* Charging RLIMIT_MEMLOCK or pinning may run out. */
			enomem_ok = true;
		}
		break;
	case C_INFO:
		if (arg.room >= sizeof(struct rseq_slice_info))
			want_ret = 0;
		else
			want_err = EFAULT;
		break;
	case C_DISABLE:
		want_ret = 0;
		break;
	case C_GET:
		want_ret = !!t->reg;
		break;
	case C_YIELD:
		/* No REQUEST is ever pending at a fuzzed call: no grant is live. */
		want_ret = 0;
		break;
	default:
		want_err = ENOTTY;
		break;
	}

	ret = ioctl(fd, cmd, (unsigned long)arg.addr);
	err = errno;
	t->calls++;
	count(t, c, ret, err);

	if (!documented(c, ret, err) ||
	    !(ret >= 0 ? ret == want_ret : (want_ret < 0 && err == want_err) ||
					   (enomem_ok && err == ENOMEM))) {
		snprintf(detail, sizeof(detail),
			 "(%s) arg %s %#llx ctrl %s %#llx flags %#x reserved %#x; registered %#llx; "
			 "expected %ld/%s", cls_name[c], kind_name[arg.kind],
			 (unsigned long long)arg.addr, c == C_ENABLE ? kind_name[ctl.kind] : "-",
			 (unsigned long long)reg.ctrl, reg.flags, reg.reserved,
			 (unsigned long long)t->reg, want_ret,
			 want_ret < 0 ? strerrorname_np(want_err) : "-");
		if (!documented(c, ret, err)) {
			t->undocumented++;
			report(t, "undocumented result", cmd, ret, err, detail);
		} else {
			t->mispredicted++;
			report(t, "unexpected result", cmd, ret, err, detail);
		}
	}

	/* Track the registration the way the module does. */
	if (c == C_ENABLE && ret == 0)
		t->reg = reg.ctrl;
	if (c == C_DISABLE && ret == 0)
		t->reg = 0;

	/* A successful INFO: every byte defined, reserved words zero. */
	if (c == C_INFO && ret == 0) {
		struct rseq_slice_info info;
		unsigned int i;

		memcpy(&info, (void *)(uintptr_t)arg.addr, sizeof(info));
		if (info.abi_version != RSEQ_SLICE_ABI_VERSION)
			t->info_bad++;
		for (i = 0; i < sizeof(info.reserved) / sizeof(info.reserved[0]); i++)
			if (info.reserved[i])
				t->info_bad++;
	}
}

/*
 * REQUEST in the registered word, spin a little without entering the
 * kernel, then end the way rseq_slice_end() does (rseq_slice_word_end():
 * clear REQUEST with a CPU-local test-and-clear; if it was already clear
 * and GRANTED is set, yield).
 */
static void dance(struct fuzz_thread *t, int fd)
{
	uint32_t *w = (uint32_t *)(uintptr_t)t->reg;
	uint64_t end = rseq_slice_rdtsc() + rseq_slice_ns_to_tsc(1000 + rndn(t, 200000));
	int r;

	t->dances++;
	if (rseq_slice_word_load(w))
		t->dance_bad++;		/* a stale bit: the kernel left it behind */
	rseq_slice_word_request(w);
	while (rseq_slice_word_load(w) == RSEQ_SLICE_EXT_REQUEST && rseq_slice_rdtsc() < end)
		;
	r = rseq_slice_word_end(w, fd);
	if (r == RSEQ_SLICE_END_SUCCESS || r == RSEQ_SLICE_END_SCHEDULED)
		return;		/* not granted */
	t->grants++;
	t->calls++;
	if (r == RSEQ_SLICE_END_YIELDED)
		t->live_yields++;
	else if (r != RSEQ_SLICE_END_RACED)
		t->dance_bad++;
	if (rseq_slice_word_load(w))
		t->dance_bad++;		/* GRANTED must be gone after the yield */
}

static void *fuzz_thread_fn(void *arg)
{
	struct fuzz_thread *t = arg;
	char stack_area[REGION] __attribute__((aligned(64)));
	int own_fd = slice_open();
	long i;

	/* Half share the CPU with the noise thread: reschedules, so grants. */
	if (t->idx < FUZZ_THREADS / 2)
		pin_self(slice_test_cpu());
	memset(stack_area, 0, sizeof(stack_area));
	t->stack = stack_area;
	t->tls = (char *)tls_area;
	t->heap = aligned_alloc(PG, PG);
	if (own_fd < 0 || !t->heap) {
		t->final_bad++;
		return NULL;
	}
	memset(t->heap, 0, PG);

	for (i = 0; i < t->budget; i++) {
		fuzz_one(t, own_fd);
		if (t->reg && !rndn(t, 16))
			dance(t, rndn(t, 2) ? own_fd : t->shared_fd);
	}

	/* Leave unregistered, and say so. */
	if (slice_ioctl(own_fd, RSEQ_SLICE_IOC_DISABLE) != 0)
		t->final_bad++;
	if (slice_ioctl(t->shared_fd, RSEQ_SLICE_IOC_GET) != 0)
		t->final_bad++;
	t->reg = 0;
	close(own_fd);
	/* The stack area goes with this frame: nothing may point at it now. */
	t->stack = NULL;
	free(t->heap);
	return NULL;
}

/* @len bytes read-write, then a PROT_NONE guard page. */
static char *map_guarded(size_t len)
{
	char *p = mmap(NULL, len + PG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (mprotect(p + len, PG, PROT_NONE))
		return NULL;
	return p;
}

/* A 2 MB huge page: hugetlbfs if there is one, else a THP by madvise. */
static char *map_huge(void)
{
	char *p = mmap(NULL, HUGE_SZ, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	uintptr_t a;

	if (p != MAP_FAILED) {
		huge_is_hugetlb = true;
		memset(p, 0, PG);
		return p;
	}
	p = mmap(NULL, 2 * HUGE_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	a = ((uintptr_t)p + HUGE_SZ - 1) & ~(HUGE_SZ - 1);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	munmap((char *)a + HUGE_SZ, (uintptr_t)p + 2 * HUGE_SZ - a - HUGE_SZ);
	madvise((void *)a, HUGE_SZ, MADV_HUGEPAGE);
	memset((void *)a, 0, PG);
	return (char *)a;
}

static long fuzz_calls(void)
{
	const char *s = getenv("RSEQ_SLICE_FUZZ_CALLS");
	long n = s ? atol(s) : FUZZ_DEFAULT;

	return n > 0 ? n : FUZZ_DEFAULT;
}

/* How grants end; stats.c: sgrant = their sum + grants still running. */
static long long grant_ends(void)
{
	return slice_stat("srevok") + slice_stat("syield") + slice_stat("sabort") +
	       slice_stat("skill");
}

FIXTURE(fuzz)
{
	int shared_fd;
	int file_fd;
	char path[64];
	struct fuzz_thread *t;
	char hugepages0[32];	/* vm.nr_hugepages before the test (root) */
};

#define NR_HUGEPAGES	"/proc/sys/vm/nr_hugepages"

FIXTURE_SETUP(fuzz)
{
	struct rseq_slice_info info;
	int i;

	self->t = NULL;
	self->file_fd = -1;
	self->shared_fd = slice_open();
	ASSERT_LE(0, self->shared_fd);
	ASSERT_EQ(0, ioctl(self->shared_fd, RSEQ_SLICE_IOC_INFO, &info));
	if (!(info.flags & RSEQ_SLICE_INFO_ENABLED))
		SKIP(return, "the module is disabled (enabled=0)");
	rseq_slice_tsc_calibrate(0);

	ro_page = mmap(NULL, 2 * PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro_page);
	none_page = mmap(NULL, 2 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, none_page);

	/*
	 * Root reserves the hugetlb pages the threads' huge words live in:
	 * the guests boot with none, and MADV_HUGEPAGE alone left the
	 * MAP_HUGETLB case untested.
	 */
	self->hugepages0[0] = 0;
	if (is_root() && !slice_read_file(NR_HUGEPAGES, self->hugepages0, sizeof(self->hugepages0))) {
		char want[32];

		snprintf(want, sizeof(want), "%ld", atol(self->hugepages0) + FUZZ_THREADS);
		ASSERT_EQ(0, slice_write_file(NR_HUGEPAGES, want));
	}

	strcpy(self->path, "/tmp/rseq_slice_fuzz.XXXXXX");
	self->file_fd = mkstemp(self->path);
	ASSERT_LE(0, self->file_fd);
	ASSERT_EQ(0, ftruncate(self->file_fd, FUZZ_THREADS * 2 * PG));

	self->t = calloc(FUZZ_THREADS, sizeof(*self->t));
	ASSERT_NE(NULL, self->t);
	for (i = 0; i < FUZZ_THREADS; i++) {
		struct fuzz_thread *t = &self->t[i];

		t->idx = i;
		t->shared_fd = self->shared_fd;
		t->rng = 0x9e3779b97f4a7c15ULL * (i + 1) ^ now_ns();
		t->shfile = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED,
				 self->file_fd, i * 2 * PG);
		ASSERT_NE(MAP_FAILED, t->shfile);
		t->shanon = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, t->shanon);
		t->argtail = map_guarded(PG);
		ASSERT_NE(NULL, t->argtail);
		t->ctrltail = map_guarded(PG);
		ASSERT_NE(NULL, t->ctrltail);
		t->huge = map_huge();
		ASSERT_NE(NULL, t->huge);
	}

	/*
	 * An unmapped page between two reserved ones, made last: no mapping
	 * made from here on is a single page, so none can land in the hole.
	 */
	hole = mmap(NULL, 3 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, hole);
	hole += PG;
	ASSERT_EQ(0, munmap(hole, PG));
}

FIXTURE_TEARDOWN(fuzz)
{
	if (self->file_fd >= 0) {
		close(self->file_fd);
		unlink(self->path);
	}
	close(self->shared_fd);
	free(self->t);
	/* Pages still mapped become surplus and go with the mappings. */
	if (self->hugepages0[0])
		slice_write_file(NR_HUGEPAGES, self->hugepages0);
}

TEST_F_TIMEOUT(fuzz, ioctls, 900)
{
	long long t0 = slice_stat("threads"), p0 = slice_stat("pinned");
	long long g0 = slice_stat("sgrant"), e0 = grant_ends(), tn, pn;
	unsigned long counts[NR_CLS][MAX_ERR + 1] = { { 0 } };
	unsigned long calls = 0, undoc = 0, mispred = 0, info_bad = 0, dances = 0;
	unsigned long grants = 0, live = 0, dance_bad = 0, final_bad = 0;
	long total = fuzz_calls();
	struct noise noise;
	uint64_t start;
	int i, c, e;

	ksft_print_msg("%ld calls on %d threads, %s as huge page, uid %d\n", total, FUZZ_THREADS,
		       huge_is_hugetlb ? "MAP_HUGETLB" : "MADV_HUGEPAGE", (int)geteuid());
	/* Root reserved hugetlb pages: the words must really be in them. */
	if (is_root())
		EXPECT_TRUE(huge_is_hugetlb);
	ASSERT_EQ(0, noise_start(&noise, slice_test_cpu(), 2000, 50000));
	start = now_ns();
	for (i = 0; i < FUZZ_THREADS; i++) {
		self->t[i].budget = total / FUZZ_THREADS + (i < total % FUZZ_THREADS);
		ASSERT_EQ(0, pthread_create(&self->t[i].thread, NULL, fuzz_thread_fn, &self->t[i]));
	}
	for (i = 0; i < FUZZ_THREADS; i++)
		pthread_join(self->t[i].thread, NULL);
	noise_stop(&noise);

	for (i = 0; i < FUZZ_THREADS; i++) {
		struct fuzz_thread *t = &self->t[i];

		for (c = 0; c < NR_CLS; c++)
			for (e = 0; e <= MAX_ERR; e++)
				counts[c][e] += t->counts[c][e];
		calls += t->calls;
		undoc += t->undocumented;
		mispred += t->mispredicted;
		info_bad += t->info_bad;
		dances += t->dances;
		grants += t->grants;
		live += t->live_yields;
		dance_bad += t->dance_bad;
		final_bad += t->final_bad;
	}
	ksft_print_msg("%lu ioctl calls in %.1f s\n", calls, (now_ns() - start) / 1e9);
	for (c = 0; c < NR_CLS; c++) {
		char line[512];
		int n = 0;

		for (e = 0; e <= MAX_ERR; e++) {
			if (!counts[c][e])
				continue;
			n += snprintf(line + n, sizeof(line) - n, " %s %lu",
				      !e ? "ok" : e == MAX_ERR ? "other" :
				      strerrorname_np(e) ?: "?", counts[c][e]);
			if (n >= (int)sizeof(line))
				break;
		}
		ksft_print_msg("%-20s%s\n", cls_name[c], n ? line : " none");
	}
	ksft_print_msg("REQUEST spins %lu, GRANTED seen %lu, YIELD ended a live grant %lu%s\n",
		       dances, grants, live, g0 >= 0 ? "" : " (stats: root only)");
	if (g0 >= 0)
		ksft_print_msg("sgrant +%lld\n", slice_stat("sgrant") - g0);

	EXPECT_LE(total, (long)calls);
	EXPECT_EQ(0, undoc);
	EXPECT_EQ(0, mispred);
	EXPECT_EQ(0, info_bad);
	EXPECT_EQ(0, dance_bad);
	EXPECT_EQ(0, final_bad);
	EXPECT_EQ(0, slice_ioctl(self->shared_fd, RSEQ_SLICE_IOC_GET));

	if (t0 < 0) {
		ksft_print_msg("stats: root only, not compared\n");
		return;
	}
	EXPECT_TRUE(slice_stats_settle(t0, p0, &tn, &pn)) {
		TH_LOG("threads %lld -> %lld, pinned %lld -> %lld", t0, tn, p0, pn);
	}
	/* No grant is running any more: each one given has ended once. */
	EXPECT_EQ(slice_stat("sgrant") - g0, grant_ends() - e0);
}

TEST_HARNESS_MAIN
