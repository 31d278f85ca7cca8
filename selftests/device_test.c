// SPDX-License-Identifier: GPL-2.0
/*
 * The misc device and the module's life: /dev/rseq_slice exists with mode
 * 0666, users can open it, unloading while the device is open is refused,
 * 20 load/unload rounds work (unknown ioctls: abi_test), and merged_abi=0
 * leaves only the device. The module file is RSEQ_SLICE_KO (the lane puts
 * it at /lib/rseq_slice.ko).
 */
#include "slice_util.h"
#include "merged_util.h"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "kselftest_harness.h"

TEST(device_mode_0666)
{
	struct stat st;

	ASSERT_EQ(0, stat(RSEQ_SLICE_DEVICE, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0666, st.st_mode & 07777);
}

/* As root, drop to uid 1000 in a child: users must be able to open it. */
TEST(user_can_open)
{
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (!pid) {
		int fd;

		if (is_root() && (setgid(1000) || setuid(1000)))
			_exit(2);
		fd = slice_open();
		if (fd < 0)
			_exit(3);
		_exit(slice_ioctl(fd, RSEQ_SLICE_IOC_GET) == 0 ? 0 : 4);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/*
 * The device's file_operations hold a reference on the module, so unload
 * is refused while any file is open: delete_module fails with EWOULDBLOCK
 * and the device keeps working.
 */
TEST(unload_refused_while_open)
{
	int fd;

	if (!is_root())
		SKIP(return, "unloading needs root");
	ASSERT_TRUE(slice_module_loaded());
	fd = slice_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, slice_enable_word(fd, &slice_self.ctrl));
	EXPECT_EQ(-EWOULDBLOCK, slice_unload_module());
	EXPECT_TRUE(slice_module_loaded());
	EXPECT_EQ(1, slice_ioctl(fd, RSEQ_SLICE_IOC_GET));
	EXPECT_EQ(0, slice_ioctl(fd, RSEQ_SLICE_IOC_DISABLE));
	close(fd);
}

FIXTURE(modload)
{
	struct slice_params params;	/* a reload brings the defaults back */
};

FIXTURE_SETUP(modload)
{
	ASSERT_EQ(0, slice_params_save(&self->params));
}

FIXTURE_TEARDOWN(modload)
{
	slice_module_restore(&self->params);
}

/* 20 rounds of unload, load, use; the lane checks the kernel log after. */
TEST_F_TIMEOUT(modload, load_unload_20_rounds, 300)
{
	int round, fd;

	if (!is_root())
		SKIP(return, "loading needs root");
	for (round = 0; round < 20; round++) {
		if (slice_module_loaded())
			ASSERT_EQ(0, slice_unload_module()) TH_LOG("round %d", round);
		ASSERT_FALSE(slice_module_loaded());
		ASSERT_NE(0, access(RSEQ_SLICE_DEVICE, F_OK));
		ASSERT_EQ(0, slice_load_module("")) TH_LOG("round %d", round);
		fd = slice_open();
		ASSERT_LE(0, fd) TH_LOG("round %d", round);
		EXPECT_EQ(0, slice_enable_word(fd, &slice_self.ctrl));
		/* No grant: YIELD says so. */
		EXPECT_EQ(0, slice_ioctl(fd, RSEQ_SLICE_IOC_YIELD));
		EXPECT_EQ(0, slice_ioctl(fd, RSEQ_SLICE_IOC_DISABLE));
		close(fd);
	}
	EXPECT_TRUE(slice_module_loaded());
}

/*
 * merged_abi=0: prctl(79) and system call 471 get the kernel's own
 * answers (MERGED_EXPECT_ABSENT()), for root as for anyone, so the device's permissions (the
 * package's udev rule) decide alone who may use the extension; the device
 * itself works as before.
 */
TEST_F(modload, merged_abi_off)
{
	char val[8] = "";
	int fd;

	if (!is_root())
		SKIP(return, "loading needs root");
	if (merged_glibc_owns_rseq() ? 0 : merged_register())
		SKIP(return, "no rseq area");
	if (slice_module_loaded())
		ASSERT_EQ(0, slice_unload_module());
	ASSERT_EQ(0, slice_load_module("merged_abi=0"));
	fd = open("/sys/module/rseq_slice/parameters/merged_abi", O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_LT(0, read(fd, val, sizeof(val) - 1));
	close(fd);
	EXPECT_STREQ("N\n", val);
	MERGED_EXPECT_ABSENT();
	fd = slice_open();
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, slice_enable_word(fd, &slice_self.ctrl));
	EXPECT_EQ(1, slice_ioctl(fd, RSEQ_SLICE_IOC_GET));
	EXPECT_EQ(0, slice_ioctl(fd, RSEQ_SLICE_IOC_DISABLE));
	close(fd);
	/* The default again: the prctl answers. */
	ASSERT_EQ(0, slice_unload_module());
	ASSERT_EQ(0, slice_load_module(""));
	EXPECT_EQ(0, merged_get());
}

TEST_HARNESS_MAIN
