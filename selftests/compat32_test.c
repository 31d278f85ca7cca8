// SPDX-License-Identifier: GPL-2.0
/*
 * 32-bit (ia32) threads: a -m32 program enables through the compat ioctl,
 * runs critical sections under REQUEST with a noise thread on its CPU,
 * and yields its grants with the ia32 ioctl (system call 54), both by
 * int $0x80 and by the C library's syscall() (the vDSO's fast system
 * call: sysenter or syscall from compatibility mode). The yield must be
 * recognised as the yield (returning 1 for a live grant), never taken for
 * a foreign system call. A foreign ia32 system call inside a grant gets
 * SIGSEGV under foreign_syscall=kill and runs under foreign_syscall=abort.
 *
 * The protocol is librseq-slice's (its 32-bit build): the bare-word
 * primitives, the i386 yield by int $0x80 and the TSC clock.
 *
 * On arm64 the same test is an AArch32 program (compat tasks, built with
 * arm-linux-gnueabihf-gcc): the compat ioctl is system call 54 by svc #0
 * (r7), the C library's syscall() the same instruction from its own
 * code, the clock CNTVCT; the rest reads the same.
 */
#include "slice_util.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "kselftest_harness.h"


#if !defined(__i386__) && !defined(__arm__)
#error "compat32_test is built with -m32 (x86) or for AArch32 (arm64's compat tasks)"
#endif

#define NR32_GETPPID	64

/* Grants the yield loop must see yielded, per system call path. */
#define YIELDS_EACH	3
#define FOREIGN_ABORTS	3
/*
 * Foreign calls the kill test may make before one meets a live grant,
 * within LOOP_SECS: 23 have been needed on a loaded host.
 */
#define FOREIGN_TRIES	1000
/* Bounds, generous for a loaded host under emulation. */
#define LOOP_SECS	60
#define WAIT_NS		(200 * 1000 * 1000ULL)

/*
 * A system call without arguments by the instruction the library uses:
 * int $0x80 on i386; on AArch32 svc #0 with the number in r7 (getppid is
 * 64 there too, ioctl 54).
 */
static inline long int80_0(long nr)
{
#if defined(__arm__)
	return rseq_slice_arch_syscall0(nr);
#else
	long ret;

	__asm__ __volatile__("int $0x80" : "=a" (ret) : "0" (nr) : "memory");
	return ret;
#endif
}

enum yield_path { PATH_INT80, PATH_LIBC, NR_PATHS };

#if defined(__arm__)
static const char *const path_name[NR_PATHS] = { "svc #0", "syscall()" };
#else
static const char *const path_name[NR_PATHS] = { "int $0x80", "syscall()" };
#endif

/*
 * RSEQ_SLICE_IOC_YIELD as an ia32 ioctl: 1, 0, or -errno. The library's
 * i386 yield is int $0x80; the C library's syscall() takes the vDSO's.
 */
static long yield32(int fd, enum yield_path path)
{
	long ret;

	if (path == PATH_INT80)
		return rseq_slice_yield_fd(fd);
	ret = syscall(SYS_ioctl, fd, RSEQ_SLICE_IOC_YIELD);
	return ret < 0 ? -errno : ret;
}

/*
 * The noise (slice_util.h's noise_round(): a timer, or on PREEMPT_RT
 * the tick) is a process, not a thread: a 32-bit glibc waits for threads
 * with the 32-bit-time futex call, which kernels without
 * CONFIG_COMPAT_32BIT_TIME (the debug kernel) do not have. It dies with
 * its parent, which may be killed by SIGSEGV.
 */
static pid_t noise_proc_start(int cpu, uint64_t busy_ns, uint64_t sleep_ns)
{
	enum noise_kind kind = noise_kind();
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(0);
	pin_self(cpu);
	noise_init(kind);
	for (;;)
		noise_round(kind, busy_ns, sleep_ns);
}

static void noise_proc_stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* What a child saw, in memory it shares with the test. */
struct counts {
	unsigned long sections, success, scheduled;
	unsigned long attempts[NR_PATHS];	/* YIELDs made */
	unsigned long yielded[NR_PATHS];	/* YIELD returned 1 */
	unsigned long raced[NR_PATHS];		/* YIELD returned 0 */
	unsigned long errors;			/* YIELD failed */
	long last_error;
	unsigned long dirty;			/* word not clear after a yield */
	unsigned long foreign;			/* foreign calls made inside a grant */
	unsigned long survived;			/* ... that returned */
	unsigned long foreign_bad;		/* ... with the wrong value */
	unsigned long denied;
	int stage;				/* where the child is */
};

static struct counts *counts_new(void)
{
	void *p = mmap(NULL, sizeof(struct counts), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static bool yields_done(const struct counts *c)
{
	return c->yielded[PATH_INT80] >= YIELDS_EACH && c->yielded[PATH_LIBC] >= YIELDS_EACH;
}

/* A child's start: pinned, enabled, the noise on its CPU. */
static pid_t child_start(struct counts *c)
{
	pid_t noise;

	c->stage = 1;
	if (pin_self(slice_test_cpu()) || slice_enable_self())
		_exit(20);
	if (slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_GET) != 1)
		_exit(21);
	noise = noise_proc_start(slice_test_cpu(), 2000, 50000);
	if (noise < 0)
		_exit(22);
	c->stage = 2;
	return noise;
}

static void child_end(struct counts *c, pid_t noise)
{
	c->stage = 3;
	noise_proc_stop(noise);
	slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_DISABLE);
	_exit(0);
}

/* The child: critical sections until enough grants were yielded. */
static void yield_loop(struct counts *c)
{
	uint64_t end = now_ns() + LOOP_SECS * 1000000000ULL;
	pid_t noise = child_start(c);
	enum yield_path path;
	unsigned int n = 0;

	while (!yields_done(c) && now_ns() < end) {
		long ret;

		c->sections++;
		rseq_slice_word_request(&slice_self.ctrl);
		rseq_slice_busy_wait_ns(50000);
		if (rseq_slice_word_test_clear(&slice_self.ctrl)) {
			c->success++;
			continue;
		}
		if (!(slice_word() & RSEQ_SLICE_EXT_GRANTED)) {
			c->scheduled++;
			continue;
		}
		/* Alternate the paths by yield, not by section. */
		path = n++ & 1 ? PATH_LIBC : PATH_INT80;
		c->attempts[path]++;
		ret = yield32(slice_self.fd, path);
		if (ret == 1)
			c->yielded[path]++;
		else if (ret == 0)
			c->raced[path]++;
		else {
			c->errors++;
			c->last_error = ret;
		}
		if (slice_word())
			c->dirty++;
	}
	child_end(c, noise);
}

/*
 * The child: take grants and make a foreign system call (getppid by
 * int $0x80) inside each, until @want calls returned. A grant can expire
 * between the thread seeing GRANTED and its call reaching the kernel;
 * such a call is not foreign any more and just runs.
 */
static void foreign_loop(struct counts *c, unsigned long want)
{
	uint64_t end = now_ns() + LOOP_SECS * 1000000000ULL;
	long ppid = getppid();
	pid_t noise = child_start(c);

	while (c->survived < want && now_ns() < end) {
		long ret;

		if (request_wait(&slice_self.ctrl, WAIT_NS) != RSEQ_SLICE_EXT_GRANTED) {
			c->denied++;
			/* REQUEST may still be set: end it by the protocol. */
			rseq_slice_word_end(&slice_self.ctrl, slice_self.fd);
			continue;
		}
		c->foreign++;
		ret = int80_0(NR32_GETPPID);
		c->survived++;
		if (ret != ppid)
			c->foreign_bad++;
		if (slice_word())
			c->dirty++;
	}
	child_end(c, noise);
}

static int run_child(void (*fn)(struct counts *, unsigned long), struct counts *c,
		     unsigned long arg)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0)
		fn(c, arg);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

static void yield_loop_fn(struct counts *c, unsigned long unused)
{
	yield_loop(c);
}

static void print_counts(const struct counts *c)
{
	int p;

	ksft_print_msg("sections %lu success %lu scheduled %lu errors %lu (last %ld) dirty %lu\n",
		       c->sections, c->success, c->scheduled, c->errors, c->last_error, c->dirty);
	for (p = 0; p < NR_PATHS; p++)
		ksft_print_msg("yield by %s: made %lu yielded %lu raced %lu\n", path_name[p],
			       c->attempts[p], c->yielded[p], c->raced[p]);
}

static void print_status(int status)
{
	if (WIFSIGNALED(status))
		ksft_print_msg("child killed by signal %d (%s)\n", WTERMSIG(status),
			       strsignal(WTERMSIG(status)));
	else if (WIFEXITED(status))
		ksft_print_msg("child exited %d\n", WEXITSTATUS(status));
}

static long long stat_delta(const char *name, long long before)
{
	long long now = slice_stat(name);

	return before < 0 || now < 0 ? -1 : now - before;
}

/* The compat ioctls themselves. */
TEST(compat_ioctls)
{
	struct rseq_slice_info info;
	uint32_t *word = malloc(sizeof(*word));
	int fd = slice_open();

	ASSERT_LE(0, fd);
	ASSERT_TRUE(word != NULL);
	ASSERT_EQ(0, slice_ioctl(fd, RSEQ_SLICE_IOC_GET));
	ASSERT_EQ(0, slice_enable_word(fd, word));
	EXPECT_EQ(1, slice_ioctl(fd, RSEQ_SLICE_IOC_GET));
	EXPECT_EQ(0, slice_ioctl(fd, RSEQ_SLICE_IOC_YIELD));
	EXPECT_EQ(0, rseq_slice_yield_fd(fd));
	EXPECT_EQ(-EBUSY, slice_enable_word(fd, word + 1));
	memset(&info, 0xaa, sizeof(info));
	EXPECT_EQ(0, ioctl(fd, RSEQ_SLICE_IOC_INFO, &info));
	EXPECT_EQ(RSEQ_SLICE_ABI_VERSION, info.abi_version);
	EXPECT_EQ(0, slice_ioctl(fd, RSEQ_SLICE_IOC_DISABLE));
	EXPECT_EQ(0, slice_ioctl(fd, RSEQ_SLICE_IOC_GET));
	close(fd);
	free(word);
}

FIXTURE(c32)
{
	struct counts *c;
	struct slice_params params;	/* restored by the teardown */
};

FIXTURE_SETUP(c32)
{
	self->c = counts_new();
	ASSERT_TRUE(self->c != NULL);
	ASSERT_EQ(0, slice_params_save(&self->params));
	rseq_slice_tsc_calibrate(0);
}

FIXTURE_TEARDOWN(c32)
{
	slice_params_restore(&self->params);
	munmap(self->c, sizeof(*self->c));
}

/*
 * Set foreign_syscall for the test (root), or skip unless it already is.
 * As root, also the longest grant: more calls reach the kernel in theirs.
 */
static int foreign_mode(FIXTURE_DATA(c32) *self, const char *mode)
{
	if (is_root())
		slice_param_set_longest_grant();
	if (!strcmp(slice_params_val(&self->params, "foreign_syscall"), mode))
		return 0;
	if (!is_root())
		return -EPERM;
	return slice_param_set("foreign_syscall", mode);
}

/* Grants of a 32-bit thread are yielded by both ia32 system call paths. */
TEST_F_TIMEOUT(c32, yield_loop, LOOP_SECS + 60)
{
	long long g = slice_stat("sgrant"), y = slice_stat("syield"), k = slice_stat("skill");
	struct counts *c = self->c;
	int status;

	SLICE_NEEDS_GRANTS();
	ASSERT_TRUE(hres_active());
	status = run_child(yield_loop_fn, c, 0);
	print_counts(c);
	print_status(status);
	ASSERT_NE(-1, status);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		TH_LOG("the 32-bit thread did not survive its yields (stage %d)", c->stage);
	}
	EXPECT_TRUE(yields_done(c)) {
		TH_LOG("wanted %d live-grant yields by each path within %d s", YIELDS_EACH,
		       LOOP_SECS);
	}
	EXPECT_EQ(0, c->errors);
	EXPECT_EQ(0, c->dirty);
	if (g >= 0) {
		ksft_print_msg("sgrant +%lld syield +%lld skill +%lld\n", stat_delta("sgrant", g),
			       stat_delta("syield", y), stat_delta("skill", k));
		EXPECT_LE(c->yielded[PATH_INT80] + c->yielded[PATH_LIBC], stat_delta("syield", y));
		EXPECT_EQ(0, stat_delta("skill", k));
	}
}

/* foreign_syscall=kill: an ia32 getppid inside a grant gets SIGSEGV. */
TEST_F_TIMEOUT(c32, foreign_kill, LOOP_SECS + 60)
{
	long long k = slice_stat("skill");
	struct counts *c = self->c;
	int status;

	SLICE_NEEDS_GRANTS();
	if (foreign_mode(self, "kill"))
		SKIP(return, "needs root to set foreign_syscall=kill (it is %s)",
		     slice_params_val(&self->params, "foreign_syscall"));
	status = run_child(foreign_loop, c, FOREIGN_TRIES);
	ksft_print_msg("foreign calls %lu (returned %lu, wrong result %lu) denied %lu\n",
		       c->foreign, c->survived, c->foreign_bad, c->denied);
	print_status(status);
	ASSERT_NE(-1, status);
	/* Killed at the first call that met a live grant; the others raced its end. */
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
	EXPECT_EQ(c->survived + 1, c->foreign);
	EXPECT_EQ(0, c->foreign_bad);
	if (k >= 0)
		EXPECT_EQ(1, stat_delta("skill", k));
}

/* foreign_syscall=abort: the grant is revoked, the call runs, the thread lives. */
/* Children for up to LOOP_SECS, the last of them up to LOOP_SECS itself. */
TEST_F_TIMEOUT(c32, foreign_abort, 2 * LOOP_SECS + 60)
{
	long long a = slice_stat("sabort"), k = slice_stat("skill");
	struct counts *c = self->c;
	int status, i;
	uint64_t end;

	SLICE_NEEDS_GRANTS();
	if (foreign_mode(self, "abort"))
		SKIP(return, "needs root to set foreign_syscall=abort (it is %s)",
		     slice_params_val(&self->params, "foreign_syscall"));
	/*
	 * A call can race the grant's expiry and then is no foreign call:
	 * as root, run children until one call hit a live grant (sabort),
	 * within LOOP_SECS.
	 */
	end = now_ns() + LOOP_SECS * 1000000000ULL;
	for (i = 1; i == 1 || now_ns() < end; i++) {
		memset(c, 0, sizeof(*c));
		status = run_child(foreign_loop, c, FOREIGN_ABORTS);
		if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) ||
		    a < 0 || stat_delta("sabort", a) > 0)
			break;
	}
	ksft_print_msg("%d children; foreign calls %lu (returned %lu, wrong result %lu) denied %lu dirty %lu\n",
		       i, c->foreign, c->survived, c->foreign_bad, c->denied, c->dirty);
	print_status(status);
	ASSERT_NE(-1, status);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ(FOREIGN_ABORTS, c->survived);
	EXPECT_EQ(0, c->foreign_bad);
	EXPECT_EQ(0, c->dirty);
	if (a >= 0) {
		/* Some calls may have raced the grant's expiry: at least one aborted. */
		ksft_print_msg("sabort +%lld\n", stat_delta("sabort", a));
		EXPECT_LE(1, stat_delta("sabort", a));
		EXPECT_EQ(0, stat_delta("skill", k));
	}
}

TEST_HARNESS_MAIN
