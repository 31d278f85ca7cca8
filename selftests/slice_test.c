// SPDX-License-Identifier: GPL-2.0
/*
 * The seed series' slice_test, ported to /dev/rseq_slice: a thread pinned
 * to one CPU runs critical sections under REQUEST while a noise thread on
 * the same CPU keeps waking up and asking for the CPU. Counts how each
 * critical section ended and asserts that grants happened.
 */
#include "slice_util.h"
#include "kselftest_harness.h"

FIXTURE(slice_ext)
{
	struct noise noise;
	int cpu;
};

FIXTURE_VARIANT(slice_ext)
{
	uint64_t slice_ns;
	uint64_t noise_ns;
	uint64_t sleep_ns;
};

FIXTURE_VARIANT_ADD(slice_ext, n2_2_50)
{
	.slice_ns = 2000,
	.noise_ns = 2000,
	.sleep_ns = 50000,
};

FIXTURE_VARIANT_ADD(slice_ext, n50_2_50)
{
	.slice_ns = 50000,
	.noise_ns = 2000,
	.sleep_ns = 50000,
};

FIXTURE_SETUP(slice_ext)
{
	SLICE_ONLY_FILTER();
	self->cpu = slice_test_cpu();
	ASSERT_EQ(0, pin_self(self->cpu));
	ASSERT_EQ(0, slice_enable_self());
	ASSERT_EQ(1, slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_GET));
	ASSERT_EQ(0, noise_start(&self->noise, self->cpu, variant->noise_ns, variant->sleep_ns));
}

FIXTURE_TEARDOWN(slice_ext)
{
	noise_stop(&self->noise);
	slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_DISABLE);
}

/*
 * Runs for RSEQ_SLICE_TEST_SECS (5 s by default) and then on until it has
 * seen a yield (and, as root, sgrant grow), up to SLICE_MAX_SECS: on a
 * loaded host a 2 s run was seen to end with no yield at all.
 */
#define SLICE_MAX_SECS	240

TEST_F_TIMEOUT(slice_ext, slice_test, SLICE_MAX_SECS + 60)
{
	unsigned long success = 0, yielded = 0, scheduled = 0, raced = 0, errors = 0;
	long long sgrant0 = slice_stat("sgrant"), sgrant1;
	uint64_t start = now_ns(), end = start + (uint64_t)(slice_test_secs(5) * 1e9);
	uint64_t limit = start + SLICE_MAX_SECS * 1000000000ULL;
	unsigned long n = 0;

	SLICE_NEEDS_GRANTS();
	ASSERT_TRUE(hres_active());
	for (;;) {
		rseq_slice_begin(&slice_self);
		rseq_slice_busy_wait_ns(variant->slice_ns);
		switch (rseq_slice_end(&slice_self)) {
		case RSEQ_SLICE_END_SUCCESS:
			success++;
			break;
		case RSEQ_SLICE_END_SCHEDULED:
			scheduled++;
			break;
		case RSEQ_SLICE_END_YIELDED:
			yielded++;
			break;
		case RSEQ_SLICE_END_RACED:
			raced++;
			break;
		default:
			errors++;
			break;
		}
		/* The clock (maybe a system call) only outside a section. */
		if (++n % 16)
			continue;
		if (now_ns() >= limit)
			break;
		if (now_ns() >= end && yielded &&
		    (sgrant0 < 0 || slice_stat("sgrant") > sgrant0))
			break;
	}
	sgrant1 = slice_stat("sgrant");

	ksft_print_msg("Success %lu Yielded %lu Scheduled %lu Raced %lu in %.1f s\n", success,
		       yielded, scheduled, raced, (now_ns() - start) / 1e9);
	EXPECT_EQ(0, errors);
	EXPECT_GT(yielded, 0);
	if (sgrant0 >= 0) {
		ksft_print_msg("sgrant %lld -> %lld\n", sgrant0, sgrant1);
		EXPECT_GT(sgrant1, sgrant0);
	} else {
		ksft_print_msg("sgrant not readable as uid %d\n", geteuid());
	}
}

TEST_HARNESS_MAIN
