// SPDX-License-Identifier: GPL-2.0
/*
 * The ioctl ABI of /dev/rseq_slice: one test per documented errno and
 * return value, and the module parameters' ranges.
 */
#include "slice_util.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "kselftest_harness.h"

FIXTURE(abi)
{
	int fd;
	uint32_t *page;		/* a private anonymous page */
	struct slice_params params;	/* restored by the teardown (root) */
};

FIXTURE_SETUP(abi)
{
	ASSERT_EQ(0, slice_params_save(&self->params));
	self->fd = slice_open();
	ASSERT_LE(0, self->fd);
	self->page = mmap(NULL, getpagesize(), PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->page);
}

FIXTURE_TEARDOWN(abi)
{
	slice_params_restore(&self->params);
	slice_ioctl(self->fd, RSEQ_SLICE_IOC_DISABLE);
	munmap(self->page, getpagesize());
	close(self->fd);
}

static int enable_reg(int fd, uint64_t ctrl, uint32_t flags, uint32_t reserved)
{
	struct rseq_slice_register reg = {
		.ctrl = ctrl, .flags = flags, .reserved = reserved,
	};

	return ioctl(fd, RSEQ_SLICE_IOC_ENABLE, &reg) ? -errno : 0;
}

TEST_F(abi, enable_disable_get)
{
	ASSERT_EQ(0, slice_ioctl(self->fd, RSEQ_SLICE_IOC_GET));
	ASSERT_EQ(0, slice_enable_word(self->fd, self->page));
	ASSERT_EQ(1, slice_ioctl(self->fd, RSEQ_SLICE_IOC_GET));
	ASSERT_EQ(0, slice_ioctl(self->fd, RSEQ_SLICE_IOC_DISABLE));
	ASSERT_EQ(0, slice_ioctl(self->fd, RSEQ_SLICE_IOC_GET));
}

TEST_F(abi, enable_same_word_twice_is_noop)
{
	ASSERT_EQ(0, slice_enable_word(self->fd, self->page));
	ASSERT_EQ(0, slice_enable_word(self->fd, self->page));
	ASSERT_EQ(1, slice_ioctl(self->fd, RSEQ_SLICE_IOC_GET));
}

TEST_F(abi, enable_other_word_ebusy)
{
	ASSERT_EQ(0, slice_enable_word(self->fd, self->page));
	ASSERT_EQ(-EBUSY, slice_enable_word(self->fd, self->page + 1));
	ASSERT_EQ(1, slice_ioctl(self->fd, RSEQ_SLICE_IOC_GET));
}

TEST_F(abi, disable_when_not_enabled)
{
	ASSERT_EQ(0, slice_ioctl(self->fd, RSEQ_SLICE_IOC_DISABLE));
	ASSERT_EQ(0, slice_ioctl(self->fd, RSEQ_SLICE_IOC_DISABLE));
}

TEST_F(abi, yield_without_grant)
{
	ASSERT_EQ(0, slice_ioctl(self->fd, RSEQ_SLICE_IOC_YIELD));
	ASSERT_EQ(0, slice_enable_word(self->fd, self->page));
	ASSERT_EQ(0, slice_ioctl(self->fd, RSEQ_SLICE_IOC_YIELD));
}

TEST_F(abi, einval_flags)
{
	ASSERT_EQ(-EINVAL, enable_reg(self->fd, (uintptr_t)self->page, 1, 0));
	ASSERT_EQ(-EINVAL, enable_reg(self->fd, (uintptr_t)self->page, 0x80000000u, 0));
	ASSERT_EQ(0, slice_ioctl(self->fd, RSEQ_SLICE_IOC_GET));
}

TEST_F(abi, einval_reserved)
{
	ASSERT_EQ(-EINVAL, enable_reg(self->fd, (uintptr_t)self->page, 0, 1));
	ASSERT_EQ(0, slice_ioctl(self->fd, RSEQ_SLICE_IOC_GET));
}

TEST_F(abi, einval_misaligned)
{
	int off;

	for (off = 1; off < 4; off++)
		ASSERT_EQ(-EINVAL, enable_reg(self->fd, (uintptr_t)self->page + off, 0, 0));
	ASSERT_EQ(0, slice_ioctl(self->fd, RSEQ_SLICE_IOC_GET));
}

TEST_F(abi, efault_bad_words)
{
	char path[] = "/tmp/rseq_slice_shared.XXXXXX";
	void *ro = mmap(NULL, getpagesize(), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *none = mmap(NULL, getpagesize(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *gone = mmap(NULL, getpagesize(), PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int memfd = memfd_create("slice", 0), file = mkstemp(path);
	uint32_t *shared[3];
	int i, last = getpagesize() / sizeof(uint32_t) - 1;

	ASSERT_NE(MAP_FAILED, ro);
	ASSERT_NE(MAP_FAILED, none);
	ASSERT_NE(MAP_FAILED, gone);
	ASSERT_EQ(0, munmap(gone, getpagesize()));
	ASSERT_LE(0, memfd);
	ASSERT_EQ(0, ftruncate(memfd, getpagesize()));
	ASSERT_LE(0, file);
	unlink(path);
	ASSERT_EQ(0, ftruncate(file, getpagesize()));
	shared[0] = mmap(NULL, getpagesize(), PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	shared[1] = mmap(NULL, getpagesize(), PROT_READ | PROT_WRITE, MAP_SHARED, file, 0);
	shared[2] = mmap(NULL, getpagesize(), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	EXPECT_EQ(-EFAULT, enable_reg(self->fd, 0, 0, 0));
	EXPECT_EQ(-EFAULT, enable_reg(self->fd, 0xffffffff81000000ull, 0, 0));
	EXPECT_EQ(-EFAULT, enable_reg(self->fd, 0xfffffffffffffffcull, 0, 0));
	EXPECT_EQ(-EFAULT, enable_reg(self->fd, (uintptr_t)ro, 0, 0));
	EXPECT_EQ(-EFAULT, enable_reg(self->fd, (uintptr_t)none, 0, 0));
	EXPECT_EQ(-EFAULT, enable_reg(self->fd, (uintptr_t)gone, 0, 0));
	/*
	 * Shared memory (memfd, a file, shared anonymous) is refused, its
	 * first and last words, faulted in or not: the kernel would write
	 * it behind the page cache.
	 */
	for (i = 0; i < 3; i++) {
		ASSERT_NE(MAP_FAILED, shared[i]);
		EXPECT_EQ(-EFAULT, slice_enable_word(self->fd, shared[i]));
		shared[i][0] = 0;
		EXPECT_EQ(-EFAULT, slice_enable_word(self->fd, shared[i]));
		EXPECT_EQ(-EFAULT, slice_enable_word(self->fd, shared[i] + last));
		munmap(shared[i], getpagesize());
	}
	EXPECT_EQ(0, slice_ioctl(self->fd, RSEQ_SLICE_IOC_GET));

	munmap(ro, getpagesize());
	munmap(none, getpagesize());
	close(memfd);
	close(file);
}

TEST_F(abi, efault_bad_argument)
{
	struct rseq_slice_info *info = (void *)0x10;

	EXPECT_EQ(-1, ioctl(self->fd, RSEQ_SLICE_IOC_ENABLE, NULL));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, RSEQ_SLICE_IOC_INFO, info));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(abi, last_word_of_mapping)
{
	uint32_t *last = self->page + getpagesize() / sizeof(uint32_t) - 1;

	ASSERT_EQ(0, slice_enable_word(self->fd, last));
	ASSERT_EQ(1, slice_ioctl(self->fd, RSEQ_SLICE_IOC_GET));
}

/* Any other command, in the module's type or not, gets ENOTTY. */
TEST_F(abi, unknown_ioctl_enotty)
{
	EXPECT_EQ(-ENOTTY, slice_ioctl(self->fd, _IO(RSEQ_SLICE_IOC_TYPE, 0x7f)));
	EXPECT_EQ(-ENOTTY, slice_ioctl(self->fd, _IOW(RSEQ_SLICE_IOC_TYPE, 0, int)));
	EXPECT_EQ(-ENOTTY, slice_ioctl(self->fd, _IO('T', 1)));
	EXPECT_EQ(-ENOTTY, slice_ioctl(self->fd, 0x12345678));
	EXPECT_EQ(-ENOTTY, slice_ioctl(self->fd, 0));
}

/*
 * INFO: the documented values, and exactly its 64 bytes filled, reserved
 * words zero, wherever the buffer lands.
 */
TEST_F(abi, info)
{
	unsigned char buf[256] __attribute__((aligned(64)));
	struct rseq_slice_info info;
	unsigned int off, i;

	for (off = 0; off < 8; off++) {
		memset(buf, 0xaa, sizeof(buf));
		ASSERT_EQ(0, ioctl(self->fd, RSEQ_SLICE_IOC_INFO, buf + off));
		memcpy(&info, buf + off, sizeof(info));
		EXPECT_EQ(RSEQ_SLICE_ABI_VERSION, info.abi_version);
		EXPECT_EQ(5000, info.grant_ns_min);
		EXPECT_EQ(50000, info.grant_ns_max);
		EXPECT_LE(info.grant_ns_min, info.grant_ns);
		EXPECT_GE(info.grant_ns_max, info.grant_ns);
		EXPECT_EQ(0, info.flags & ~(RSEQ_SLICE_INFO_ENABLED | RSEQ_SLICE_INFO_DEBUG |
					    RSEQ_SLICE_INFO_ABORT | RSEQ_SLICE_INFO_NO_GRANTS));
		for (i = 0; i < sizeof(info.reserved) / sizeof(info.reserved[0]); i++) {
			if (info.reserved[i])
				TH_LOG("offset %u: reserved[%u] = %#x", off, i, info.reserved[i]);
			EXPECT_EQ(0, info.reserved[i]);
		}
		/* Not a byte before or after the structure. */
		for (i = 0; i < off; i++)
			EXPECT_EQ(0xaa, buf[i]);
		for (i = off + sizeof(info); i < sizeof(buf); i++)
			EXPECT_EQ(0xaa, buf[i]);
	}
}

/* INFO's flags and grant_ns follow the parameters (rule 7). */
static void info_expect(struct __test_metadata *_metadata, int fd)
{
	struct rseq_slice_info info;
	char gns[32], en[8], dbg[8], fs[16];
	uint32_t flags = 0;

	ASSERT_EQ(0, ioctl(fd, RSEQ_SLICE_IOC_INFO, &info));
	ASSERT_EQ(0, slice_param_get("grant_ns", gns, sizeof(gns)));
	ASSERT_EQ(0, slice_param_get("enabled", en, sizeof(en)));
	ASSERT_EQ(0, slice_param_get("debug", dbg, sizeof(dbg)));
	ASSERT_EQ(0, slice_param_get("foreign_syscall", fs, sizeof(fs)));
	if (!strcmp(en, "Y"))
		flags |= RSEQ_SLICE_INFO_ENABLED;
	if (!strcmp(dbg, "Y"))
		flags |= RSEQ_SLICE_INFO_DEBUG;
	if (!strcmp(fs, "abort"))
		flags |= RSEQ_SLICE_INFO_ABORT;
	/* Not a parameter: the kernel's kind (rt_test checks it grants nothing). */
	if (slice_kernel_no_lazy())
		flags |= RSEQ_SLICE_INFO_NO_GRANTS;
	EXPECT_EQ(strtoul(gns, NULL, 10), info.grant_ns);
	EXPECT_EQ(flags, info.flags);
}

TEST_F(abi, info_follows_params)
{
	info_expect(_metadata, self->fd);
	if (!is_root())
		return;	/* users cannot change them: the current values must match */
	ASSERT_EQ(0, slice_param_set("grant_ns", "12345"));
	ASSERT_EQ(0, slice_param_set("debug", "1"));
	ASSERT_EQ(0, slice_param_set("foreign_syscall", "abort"));
	info_expect(_metadata, self->fd);
	ASSERT_EQ(0, slice_param_set("enabled", "0"));
	info_expect(_metadata, self->fd);
	ASSERT_EQ(0, slice_param_set("enabled", "1"));
	ASSERT_EQ(0, slice_param_set("debug", "0"));
	ASSERT_EQ(0, slice_param_set("foreign_syscall", "kill"));
	ASSERT_EQ(0, slice_param_set("grant_ns", "50000"));
	info_expect(_metadata, self->fd);
	/* The teardown restores them. */
}

/* RLIMIT_MEMLOCK bounds the pinned control-word pages of a user. */
TEST_F(abi, enomem_memlock)
{
	struct rlimit zero = { 0, 0 };
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* Root has CAP_IPC_LOCK and is not charged: become a user. */
		if (is_root() && (setgid(1000) || setuid(1000)))
			_exit(10);
		if (setrlimit(RLIMIT_MEMLOCK, &zero))
			_exit(11);
		if (slice_enable_word(self->fd, self->page) != -ENOMEM)
			_exit(12);
		if (slice_ioctl(self->fd, RSEQ_SLICE_IOC_GET) != 0)
			_exit(13);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
}

/*
 * The charge goes back at DISABLE and at thread exit, before the next
 * ENABLE can ask for it: with room for exactly one page, 100 rounds of
 * enable/disable and 100 threads that enable and exit all succeed.
 * pthread_join() returns when the thread has left its memory, before the
 * kernel's exit tracepoint (where the registration ends) has run: the
 * thread is gone once /proc/self/task/TID is, within a bounded wait.
 */
struct exiting {
	int fd;
	pid_t tid;
};

static void *enable_and_exit(void *arg)
{
	struct exiting *e = arg;

	e->tid = gettid();
	return (void *)(long)slice_enable_word(e->fd, &slice_self.ctrl);
}

static bool thread_gone(pid_t tid)
{
	uint64_t end = now_ns() + 10 * 1000000000ULL;
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d", tid);
	while (access(path, F_OK) == 0 && now_ns() < end)
		usleep(100);
	return access(path, F_OK) != 0;
}

#define MEMLOCK_ROUNDS	100

TEST_F(abi, memlock_returned)
{
	struct rlimit one = { getpagesize(), getpagesize() };
	pid_t pid = fork();
	int status, i;

	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (is_root() && (setgid(1000) || setuid(1000)))
			_exit(10);
		if (setrlimit(RLIMIT_MEMLOCK, &one))
			_exit(11);
		for (i = 0; i < MEMLOCK_ROUNDS; i++) {
			int ret = slice_enable_word(self->fd, self->page);

			if (ret) {
				printf("# enable/disable round %d: errno %d\n", i, -ret);
				_exit(12);
			}
			if (slice_ioctl(self->fd, RSEQ_SLICE_IOC_DISABLE))
				_exit(13);
		}
		for (i = 0; i < MEMLOCK_ROUNDS; i++) {
			struct exiting e = { .fd = self->fd };
			pthread_t th;
			void *ret;

			if (pthread_create(&th, NULL, enable_and_exit, &e) ||
			    pthread_join(th, &ret) || !thread_gone(e.tid))
				_exit(14);
			if (ret) {
				printf("# thread %d: enable errno %ld\n", i, -(long)ret);
				_exit(15);
			}
		}
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* CAP_IPC_LOCK: root is not charged, so a limit of 0 stops nothing. */
TEST_F(abi, memlock_not_charged_to_root)
{
	struct rlimit zero = { 0, 0 };
	pid_t pid;
	int status;

	if (!is_root())
		SKIP(return, "needs CAP_IPC_LOCK");
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (setrlimit(RLIMIT_MEMLOCK, &zero))
			_exit(11);
		if (slice_enable_word(self->fd, self->page))
			_exit(12);
		_exit(slice_ioctl(self->fd, RSEQ_SLICE_IOC_GET) == 1 ? 0 : 13);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* enabled=0 refuses new registrations and keeps existing ones. */
TEST_F(abi, eopnotsupp_when_disabled)
{
	struct rseq_slice_info info;
	int other = slice_open();

	if (!is_root())
		SKIP(return, "needs root to write the enabled parameter");
	ASSERT_LE(0, other);
	ASSERT_EQ(0, slice_enable_word(self->fd, self->page));
	ASSERT_EQ(0, slice_param_set("enabled", "0"));
	ASSERT_EQ(0, ioctl(self->fd, RSEQ_SLICE_IOC_INFO, &info));
	EXPECT_EQ(0, info.flags & RSEQ_SLICE_INFO_ENABLED);
	EXPECT_EQ(1, slice_ioctl(self->fd, RSEQ_SLICE_IOC_GET));
	/* Nothing new is accepted, not even by a registered thread. */
	EXPECT_EQ(-EOPNOTSUPP, slice_enable_word(self->fd, self->page + 1));
	EXPECT_EQ(0, slice_ioctl(self->fd, RSEQ_SLICE_IOC_DISABLE));
	EXPECT_EQ(-EOPNOTSUPP, slice_enable_word(self->fd, self->page));
	ASSERT_EQ(0, slice_param_set("enabled", "1"));
	EXPECT_EQ(0, slice_enable_word(self->fd, self->page));
	ASSERT_EQ(0, ioctl(self->fd, RSEQ_SLICE_IOC_INFO, &info));
	EXPECT_EQ(RSEQ_SLICE_INFO_ENABLED, info.flags & RSEQ_SLICE_INFO_ENABLED);
	close(other);
}

TEST_F(abi, params_ranges)
{
	char buf[64];

	if (!is_root())
		SKIP(return, "needs root to write module parameters");
	EXPECT_EQ(-EINVAL, slice_param_set("grant_ns", "4999"));
	EXPECT_EQ(-EINVAL, slice_param_set("grant_ns", "50001"));
	EXPECT_EQ(-EINVAL, slice_param_set("grant_ns", "abc"));
	EXPECT_EQ(0, slice_param_set("grant_ns", "5000"));
	EXPECT_EQ(0, slice_param_get("grant_ns", buf, sizeof(buf)));
	EXPECT_STREQ("5000", buf);
	EXPECT_EQ(0, slice_param_set("grant_ns", "50000"));
	EXPECT_EQ(0, slice_param_set("grant_ns", "30000"));
	EXPECT_EQ(0, slice_param_get("grant_ns", buf, sizeof(buf)));
	EXPECT_STREQ("30000", buf);

	EXPECT_EQ(-EINVAL, slice_param_set("foreign_syscall", "bogus"));
	EXPECT_EQ(0, slice_param_set("foreign_syscall", "abort"));
	EXPECT_EQ(0, slice_param_get("foreign_syscall", buf, sizeof(buf)));
	EXPECT_STREQ("abort", buf);
	EXPECT_EQ(0, slice_param_set("foreign_syscall", "kill"));
	EXPECT_EQ(0, slice_param_get("foreign_syscall", buf, sizeof(buf)));
	EXPECT_STREQ("kill", buf);

	EXPECT_EQ(-EINVAL, slice_param_set("enabled", "maybe"));
	EXPECT_EQ(-EINVAL, slice_param_set("debug", "maybe"));
	EXPECT_EQ(0, slice_param_get("enabled", buf, sizeof(buf)));
	EXPECT_STREQ("Y", buf);
}

TEST(params_not_writable_by_users)
{
	if (is_root())
		SKIP(return, "root may write them");
	EXPECT_EQ(-EACCES, slice_param_set("grant_ns", "20000"));
	EXPECT_EQ(-EACCES, slice_param_set("enabled", "0"));
}

TEST_HARNESS_MAIN
