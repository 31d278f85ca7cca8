// SPDX-License-Identifier: GPL-2.0
/*
 * librseq-slice (lib/): which backend rseq_slice_init() picks, what each
 * one leaves behind, nesting, per-thread state, and critical sections
 * through the picked backend with a noise thread on the CPU.
 *
 * The backend the machine should give comes from RSEQ_SLICE_EXPECT_BACKEND
 * (none, module or kernel); without it: "kernel" when rseq_slice.ko is
 * loaded (the module answers the merged ABI's prctl), else "none". On the reference 7.2 kernel:
 *   GLIBC_TUNABLES=glibc.pthread.rseq=0 RSEQ_SLICE_EXPECT_BACKEND=kernel ./lib_test
 */
#include "slice_util.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/rseq.h>
#include <sys/wait.h>

#include "kselftest_harness.h"

#define SECTIONS_BOUND_NS	(120 * 1000000000ULL)
#define YIELDS_WANTED		3

static enum rseq_slice_backend expected_backend(struct __test_metadata *_metadata)
{
	const char *e = getenv("RSEQ_SLICE_EXPECT_BACKEND");
	enum rseq_slice_backend b;

	/* With the module loaded, its merged ABI answers the prctl first. */
	if (!e)
		return slice_module_loaded() ? RSEQ_SLICE_BACKEND_KERNEL : RSEQ_SLICE_BACKEND_NONE;
	if (rseq_slice_backend_parse(e, &b) || b == RSEQ_SLICE_BACKEND_AUTO) {
		TH_LOG("RSEQ_SLICE_EXPECT_BACKEND=%s: not none, module or kernel", e);
		return RSEQ_SLICE_BACKEND_AUTO;
	}
	return b;
}

/* Is this thread enabled, as the module (ioctl) and the kernel (prctl) say? */
static int module_get(void)
{
	int fd = slice_open(), ret;

	if (fd < 0)
		return -errno;
	ret = slice_ioctl(fd, RSEQ_SLICE_IOC_GET);
	close(fd);
	return ret;
}

static int kernel_get(void)
{
	int ret = prctl(RSEQ_SLICE_PR_EXTENSION, RSEQ_SLICE_PR_GET, 0, 0, 0);

	return ret < 0 ? -errno : ret;
}

/* The rseq area glibc registered: its cpu_id is kept >= 0 while registered. */
static int32_t glibc_rseq_cpu_id(void)
{
	char *tp = rseq_slice_arch_thread_pointer();

	return __atomic_load_n((int32_t *)(tp + __rseq_offset + 4), __ATOMIC_RELAXED);
}

/* No rseq registration is left on this thread: a new one succeeds. */
static bool rseq_unregistered(void)
{
	static __thread uint32_t area[8] __attribute__((aligned(32)));

	if (syscall(SYS_rseq, area, sizeof(area), 0, RSEQ_SLICE_RSEQ_SIG))
		return false;
	return syscall(SYS_rseq, area, sizeof(area), 1, RSEQ_SLICE_RSEQ_SIG) == 0;
}

FIXTURE(lib)
{
	enum rseq_slice_backend want;
};

FIXTURE_SETUP(lib)
{
	SLICE_ONLY_FILTER();
	self->want = expected_backend(_metadata);
	ASSERT_NE(RSEQ_SLICE_BACKEND_AUTO, self->want);
	rseq_slice_tsc_calibrate(0);
}

FIXTURE_TEARDOWN(lib)
{
	rseq_slice_fini();
}

/*
 * The architecture's test-and-clear, which ends every v1 section (the
 * library's and the interposer's): on every word the kernel can leave,
 * REQUEST is clear afterwards, every other bit is kept, and the result
 * says whether REQUEST was set. The race it exists for (an interrupt
 * between load and store) cannot be forced from here; the semantics
 * tests run it against the kernel.
 */
TEST_F(lib, word_test_clear)
{
	static const uint32_t words[] = {
		0, RSEQ_SLICE_EXT_REQUEST, RSEQ_SLICE_EXT_GRANTED,
		RSEQ_SLICE_EXT_REQUEST | RSEQ_SLICE_EXT_GRANTED,
		0xfffffffcU, 0xffffffffU, 0x80000001U,
	};
	unsigned int i;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		uint32_t w = words[i];
		int was = rseq_slice_word_test_clear(&w);

		EXPECT_EQ(!!(words[i] & RSEQ_SLICE_EXT_REQUEST), was)
			TH_LOG("word %#x", words[i]);
		EXPECT_EQ(words[i] & ~RSEQ_SLICE_EXT_REQUEST, w)
			TH_LOG("word %#x", words[i]);
		/* Again: nothing left to clear, nothing else touched. */
		EXPECT_EQ(0, rseq_slice_word_test_clear(&w));
		EXPECT_EQ(words[i] & ~RSEQ_SLICE_EXT_REQUEST, w);
	}
}

/* AUTO gives the expected backend, and the thread is enabled there. */
TEST_F(lib, backend_auto)
{
	int ret = rseq_slice_init(RSEQ_SLICE_BACKEND_AUTO);

	ksft_print_msg("backend %s: %s (glibc's rseq area: %u bytes)\n",
		       rseq_slice_backend_name(rseq_slice_backend()), rseq_slice_backend_describe(),
		       __rseq_size);
	ASSERT_EQ(self->want, ret);
	EXPECT_EQ(self->want, rseq_slice_backend());
	EXPECT_STREQ(rseq_slice_backend_name(self->want),
		     rseq_slice_backend_name(rseq_slice_backend()));
	switch (self->want) {
	case RSEQ_SLICE_BACKEND_MODULE:
		EXPECT_EQ(1, module_get());
		break;
	case RSEQ_SLICE_BACKEND_KERNEL:
		EXPECT_EQ(RSEQ_SLICE_PR_ENABLE, kernel_get());
		break;
	default:
		/* Nothing was enabled anywhere. */
		EXPECT_TRUE(module_get() <= 0);
		EXPECT_TRUE(kernel_get() <= 0);
		break;
	}
	rseq_slice_fini();
	EXPECT_EQ(RSEQ_SLICE_BACKEND_NONE, rseq_slice_backend());
	EXPECT_TRUE(module_get() <= 0);
	EXPECT_TRUE(kernel_get() <= 0);
}

/*
 * RSEQ_SLICE_BACKEND narrows what the library may pick: "none" makes the
 * machine look bare (an asked-for backend fails as where it is absent),
 * a backend's name (or alias) leaves only it, "auto" changes nothing, and
 * a bad value is one line on stderr, once, then "auto".
 */
TEST_F(lib, env_backend)
{
	static const char *const kernel_names[] = { "kernel", "merged", "upstream" };
	static const char *const module_names[] = { "module", "ioctl", "device" };
	int has_module = access(RSEQ_SLICE_DEVICE, F_OK) == 0;
	char err[512] = "";
	int fd, saved, i;
	ssize_t n;

	ASSERT_EQ(0, setenv("RSEQ_SLICE_BACKEND", "none", 1));
	EXPECT_EQ(RSEQ_SLICE_BACKEND_NONE, rseq_slice_init(RSEQ_SLICE_BACKEND_AUTO));
	EXPECT_TRUE(module_get() <= 0);
	EXPECT_TRUE(kernel_get() <= 0);
	EXPECT_EQ(-EINVAL, rseq_slice_init(RSEQ_SLICE_BACKEND_KERNEL));
	EXPECT_EQ(-ENOENT, rseq_slice_init(RSEQ_SLICE_BACKEND_MODULE));
	EXPECT_EQ(RSEQ_SLICE_BACKEND_NONE, rseq_slice_backend());
	EXPECT_TRUE(module_get() <= 0);
	EXPECT_TRUE(kernel_get() <= 0);
	rseq_slice_cs_begin();
	EXPECT_EQ(RSEQ_SLICE_END_SUCCESS, rseq_slice_cs_end());

	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, setenv("RSEQ_SLICE_BACKEND", kernel_names[i], 1));
		EXPECT_EQ(self->want == RSEQ_SLICE_BACKEND_KERNEL ? RSEQ_SLICE_BACKEND_KERNEL :
			  RSEQ_SLICE_BACKEND_NONE, rseq_slice_init(RSEQ_SLICE_BACKEND_AUTO));
		EXPECT_EQ(-ENOENT, rseq_slice_init(RSEQ_SLICE_BACKEND_MODULE));
		EXPECT_TRUE(module_get() <= 0);
		ASSERT_EQ(0, setenv("RSEQ_SLICE_BACKEND", module_names[i], 1));
		EXPECT_EQ(has_module ? RSEQ_SLICE_BACKEND_MODULE : RSEQ_SLICE_BACKEND_NONE,
			  rseq_slice_init(RSEQ_SLICE_BACKEND_AUTO));
		if (has_module)
			EXPECT_EQ(1, module_get());
		EXPECT_EQ(-EINVAL, rseq_slice_init(RSEQ_SLICE_BACKEND_KERNEL));
		EXPECT_TRUE(kernel_get() <= 0);
	}
	ASSERT_EQ(0, setenv("RSEQ_SLICE_BACKEND", "auto", 1));
	EXPECT_EQ(self->want, rseq_slice_init(RSEQ_SLICE_BACKEND_AUTO));

	/* A bad value: "auto", said once on stderr. */
	fd = memfd_create("err", 0);
	ASSERT_LE(0, fd);
	saved = dup(2);
	dup2(fd, 2);
	ASSERT_EQ(0, setenv("RSEQ_SLICE_BACKEND", "kernle", 1));
	EXPECT_EQ(self->want, rseq_slice_init(RSEQ_SLICE_BACKEND_AUTO));
	EXPECT_EQ(self->want, rseq_slice_init(RSEQ_SLICE_BACKEND_AUTO));
	dup2(saved, 2);
	close(saved);
	n = pread(fd, err, sizeof(err) - 1, 0);
	close(fd);
	err[n > 0 ? n : 0] = 0;
	ksft_print_msg("stderr: %s", err);
	EXPECT_NE(NULL, strstr(err, "RSEQ_SLICE_BACKEND=kernle"));
	EXPECT_NE(NULL, strchr(err, '\n'));
	EXPECT_EQ(strlen(err) - 1, (size_t)(strchr(err, '\n') - err));
	unsetenv("RSEQ_SLICE_BACKEND");
}

/*
 * Each backend by name: given where the machine has it, else an error
 * that leaves the thread on "none" and its rseq registration as it was.
 */
TEST_F(lib, forced_backends)
{
	int ret;

	EXPECT_EQ(RSEQ_SLICE_BACKEND_NONE, rseq_slice_init(RSEQ_SLICE_BACKEND_NONE));
	EXPECT_EQ(-EINVAL, rseq_slice_init((enum rseq_slice_backend)7));
	EXPECT_EQ(RSEQ_SLICE_BACKEND_NONE, rseq_slice_backend());

	ret = rseq_slice_init(RSEQ_SLICE_BACKEND_MODULE);
	if (access(RSEQ_SLICE_DEVICE, F_OK) == 0) {
		EXPECT_EQ(RSEQ_SLICE_BACKEND_MODULE, ret);
		EXPECT_EQ(1, module_get());
	} else {
		EXPECT_GT(0, ret);
		EXPECT_EQ(RSEQ_SLICE_BACKEND_NONE, rseq_slice_backend());
	}
	rseq_slice_fini();

	ret = rseq_slice_init(RSEQ_SLICE_BACKEND_KERNEL);
	ksft_print_msg("kernel backend: %d (%s)\n", ret, ret < 0 ? strerror(-ret) : "ok");
	if (self->want == RSEQ_SLICE_BACKEND_KERNEL) {
		EXPECT_EQ(RSEQ_SLICE_BACKEND_KERNEL, ret);
		EXPECT_EQ(RSEQ_SLICE_PR_ENABLE, kernel_get());
		rseq_slice_fini();
		EXPECT_EQ(0, kernel_get());
		return;
	}
	EXPECT_GT(0, ret);
	EXPECT_EQ(RSEQ_SLICE_BACKEND_NONE, rseq_slice_backend());
	if (__rseq_size) {
		/* glibc's area is still registered. */
		EXPECT_LE(0, glibc_rseq_cpu_id());
	} else {
		/* The library's own area is gone. */
		EXPECT_TRUE(rseq_unregistered());
	}
}

/* Only the outermost begin/end touches the word. */
TEST_F(lib, nesting)
{
	enum rseq_slice_backend b;
	int i, kept = 0, rounds = 1000;

	b = rseq_slice_init(RSEQ_SLICE_BACKEND_AUTO);
	ASSERT_EQ(self->want, b);
	EXPECT_EQ(-EINVAL, rseq_slice_cs_end());
	EXPECT_EQ(0, rseq_slice_tls.depth);
	for (i = 0; i < rounds; i++) {
		int inner, outer;
		bool before, after;

		rseq_slice_cs_begin();
		before = rseq_slice_cs_pending();
		rseq_slice_cs_begin();
		rseq_slice_cs_begin();
		inner = rseq_slice_cs_end();
		EXPECT_EQ(RSEQ_SLICE_END_SUCCESS, inner);
		inner = rseq_slice_cs_end();
		after = rseq_slice_cs_pending();
		EXPECT_EQ(RSEQ_SLICE_END_SUCCESS, inner);
		EXPECT_EQ(1, rseq_slice_tls.depth);
		outer = rseq_slice_cs_end();
		EXPECT_LE(0, outer);
		EXPECT_EQ(0, rseq_slice_tls.depth);
		/* The outermost end cleared REQUEST. */
		EXPECT_FALSE(rseq_slice_cs_pending());
		EXPECT_FALSE(rseq_slice_cs_granted());
		/* An interrupt may clear REQUEST in between; an inner end must not. */
		kept += before && after;
		if (b == RSEQ_SLICE_BACKEND_NONE)
			EXPECT_FALSE(before || after);
	}
	if (b != RSEQ_SLICE_BACKEND_NONE) {
		ksft_print_msg("REQUEST kept across the inner ends in %d of %d rounds\n", kept, rounds);
		EXPECT_LE(rounds * 9 / 10, kept);
	}
	EXPECT_EQ(-EINVAL, rseq_slice_cs_end());
}

/* The "none" path: a thread that never called init, and one on "none". */
static void *noop_thread(void *arg)
{
	long i, bad = 0;

	(void)arg;
	bad += rseq_slice_backend() != RSEQ_SLICE_BACKEND_NONE;
	for (i = 0; i < 1000000; i++) {
		rseq_slice_cs_begin();
		rseq_slice_cs_begin();
		bad += rseq_slice_cs_granted() + rseq_slice_cs_pending();
		bad += rseq_slice_cs_end() != RSEQ_SLICE_END_SUCCESS;
		bad += rseq_slice_cs_end() != RSEQ_SLICE_END_SUCCESS;
	}
	return (void *)bad;
}

TEST_F(lib, noop_never_faults)
{
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (pid == 0) {
		pthread_t th;
		void *bad;

		/* A new thread has not called init. */
		if (pthread_create(&th, NULL, noop_thread, NULL) || pthread_join(th, &bad))
			_exit(10);
		if (bad)
			_exit(11);
		if (rseq_slice_init(RSEQ_SLICE_BACKEND_NONE) != RSEQ_SLICE_BACKEND_NONE)
			_exit(12);
		if (noop_thread(NULL))
			_exit(13);
		/* After fini of a real backend, too. */
		rseq_slice_init(RSEQ_SLICE_BACKEND_AUTO);
		rseq_slice_fini();
		_exit(noop_thread(NULL) ? 14 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status)) {
		TH_LOG("killed by signal %d", WTERMSIG(status));
	}
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* Per thread: another thread's init and fini leave this one's alone. */
struct other {
	enum rseq_slice_backend before, got, after;
	int enabled;
};

static void *other_thread(void *arg)
{
	struct other *o = arg;

	o->before = rseq_slice_backend();
	o->got = rseq_slice_init(RSEQ_SLICE_BACKEND_AUTO);
	if (o->got == RSEQ_SLICE_BACKEND_MODULE)
		o->enabled = module_get();
	else if (o->got == RSEQ_SLICE_BACKEND_KERNEL)
		o->enabled = kernel_get();
	rseq_slice_fini();
	o->after = rseq_slice_backend();
	return NULL;
}

TEST_F(lib, per_thread)
{
	struct other o = { 0 };
	pthread_t th;

	ASSERT_EQ(self->want, rseq_slice_init(RSEQ_SLICE_BACKEND_AUTO));
	ASSERT_EQ(0, pthread_create(&th, NULL, other_thread, &o));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(RSEQ_SLICE_BACKEND_NONE, o.before);
	EXPECT_EQ(self->want, o.got);
	EXPECT_EQ(RSEQ_SLICE_BACKEND_NONE, o.after);
	if (self->want != RSEQ_SLICE_BACKEND_NONE)
		EXPECT_EQ(1, !!o.enabled);
	EXPECT_EQ(self->want, rseq_slice_backend());
	if (self->want == RSEQ_SLICE_BACKEND_MODULE)
		EXPECT_EQ(1, module_get());
	if (self->want == RSEQ_SLICE_BACKEND_KERNEL)
		EXPECT_EQ(RSEQ_SLICE_PR_ENABLE, kernel_get());
}

/*
 * Sections through the backend, with a noise thread on the CPU: on a
 * real backend until YIELDS_WANTED grants were yielded; on "none" every
 * section must end SUCCESS (nothing touches the word).
 */
TEST_F_TIMEOUT(lib, sections, 300)
{
	unsigned long n[4] = { 0 }, errors = 0, total = 0;
	uint64_t end = now_ns() + SECTIONS_BOUND_NS;
	struct noise noise;
	int r;

	SLICE_NEEDS_GRANTS();
	ASSERT_EQ(0, pin_self(slice_test_cpu()));
	ASSERT_EQ(self->want, rseq_slice_init(RSEQ_SLICE_BACKEND_AUTO));
	ASSERT_EQ(0, noise_start(&noise, slice_test_cpu(), 2000, 50000));
	for (;;) {
		rseq_slice_cs_begin();
		rseq_slice_busy_wait_ns(50000);
		r = rseq_slice_cs_end();
		if (r >= 0 && r < 4)
			n[r]++;
		else
			errors++;
		total++;
		if (total % 16)
			continue;
		if (self->want == RSEQ_SLICE_BACKEND_NONE ? total >= 20000 :
		    n[RSEQ_SLICE_END_YIELDED] >= YIELDS_WANTED)
			break;
		if (now_ns() > end)
			break;
	}
	noise_stop(&noise);
	ksft_print_msg("%s: %lu sections: success %lu scheduled %lu yielded %lu raced %lu errors %lu\n",
		       rseq_slice_backend_name(self->want), total, n[0], n[1], n[2], n[3], errors);
	EXPECT_EQ(0, errors);
	if (self->want == RSEQ_SLICE_BACKEND_NONE) {
		EXPECT_EQ(total, n[RSEQ_SLICE_END_SUCCESS]);
	} else {
		EXPECT_LE(YIELDS_WANTED, n[RSEQ_SLICE_END_YIELDED]);
	}
}

TEST_HARNESS_MAIN
