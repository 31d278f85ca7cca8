// SPDX-License-Identifier: GPL-2.0
/*
 * The merged (Linux 7.2) ABI of time slice extension: prctl
 * (PR_RSEQ_SLICE_EXTENSION), rseq_slice_yield() (471) and slice_ctrl in
 * the thread's own rseq area. One binary for both implementations: the
 * reference kernel's (upstream, in-kernel) and the module's on 6.1/6.12.
 * What each case expects is what 7.2's source does (kernel/rseq.c,
 * kernel/sys.c), checked on the reference kernel.
 *
 * The test registers rseq itself, as upstream's selftest library does
 * (merged_util.h); glibc's registration must be off: when glibc owns it,
 * the binary runs itself again with GLIBC_TUNABLES=glibc.pthread.rseq=0.
 *
 * On a kernel that does not offer the ABI (prctl 79 says EINVAL) every
 * case fails: none of them skips for that.
 */
#include "slice_util.h"
#include "merged_util.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "kselftest_harness.h"

#define MERGED_STATS		"/sys/kernel/debug/rseq/stats"
#define MODULE_ENABLED		SLICE_PARAMS "enabled"
/* How long a case waits for an event (a grant, a revoke): a loaded host. */
#define EVENT_NS		(60 * 1000000000ULL)
/* How long one REQUEST waits for the kernel to act on it. */
#define REQUEST_NS		(200 * 1000000ULL)

/* glibc's registration off: run again without it (before main). */
__attribute__((constructor)) static void merged_without_glibc_rseq(int argc, char **argv)
{
	const char *old = getenv("GLIBC_TUNABLES");
	char buf[512];

	(void)argc;
	if (!merged_glibc_owns_rseq())
		return;
	if (old && strstr(old, "glibc.pthread.rseq=0")) {
		fprintf(stderr, "merged_test: glibc owns rseq despite GLIBC_TUNABLES=%s\n", old);
		exit(1);
	}
	snprintf(buf, sizeof(buf), "%s%sglibc.pthread.rseq=0", old ? old : "", old ? ":" : "");
	setenv("GLIBC_TUNABLES", buf, 1);
	execv("/proc/self/exe", argv);
	perror("merged_test: execv /proc/self/exe");
	exit(1);
}

/*
 * One counter of rseq/stats (upstream's name, also the module's): -1 if
 * unreadable. A 7.2 kernel with CONFIG_RSEQ_STATS and the extension off
 * (7.2-base) has an rseq/stats of its own without the slice lines, which
 * the module cannot add to: there the module's counters of the same names
 * are read from its rseq_slice/stats.
 */
static long long merged_stat(const char *name)
{
	long long v = stat_file_value(MERGED_STATS, name);

	return v >= 0 ? v : stat_file_value(SLICE_STATS, name);
}

/* Nanoseconds left until @end (CLOCK_MONOTONIC), 0 once passed. */
static uint64_t left_ns(uint64_t end)
{
	uint64_t now = now_ns();

	return now < end ? end - now : 0;
}

/*
 * Set REQUEST and spin (no system call: time from the TSC) until the
 * kernel clears it, again and again, until it does so with a grant.
 * True if the thread now holds one; false after @bound_ns. *@seen (if
 * not NULL) gets the whole control word as read when the grant was seen:
 * a grant may end right after, so a later read may find it clear.
 */
static bool wait_grant_word(uint64_t bound_ns, uint32_t *seen)
{
	uint64_t end = rseq_slice_tsc_ns() + bound_ns;
	uint32_t w;

	while (rseq_slice_tsc_ns() < end) {
		uint64_t req_end = rseq_slice_tsc_ns() + REQUEST_NS;

		merged_set_request(1);
		while (merged_request() && rseq_slice_tsc_ns() < req_end)
			;
		w = merged_ctrl_all();
		if (w & 0xff00) {
			if (seen)
				*seen = w;
			return true;
		}
	}
	merged_set_request(0);
	return false;
}

static bool wait_grant(uint64_t bound_ns)
{
	return wait_grant_word(bound_ns, NULL);
}

/* Is the mechanism switched off by the kernel's command line (rseq_slice_ext=)? */
static bool cmdline_slice_off(void)
{
	char buf[4096], *p;
	FILE *f = fopen("/proc/cmdline", "r");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	for (p = buf; (p = strstr(p, "rseq_slice_ext=")); p++) {
		if (p != buf && p[-1] != ' ')
			continue;
		p += strlen("rseq_slice_ext=");
		/* kstrtobool: 0, n, N, f, F, "off" are false. */
		if (strchr("0nNfF", *p) || !strncmp(p, "off", 3) || !strncmp(p, "OFF", 3))
			return true;
	}
	return false;
}

FIXTURE(merged)
{
	struct noise noise;
	bool noise_on;
	char enabled[8];	/* the module's "enabled", restored by the teardown */
};

FIXTURE_SETUP(merged)
{
	SLICE_ONLY_FILTER();
	self->noise_on = false;
	self->enabled[0] = 0;
	ASSERT_FALSE(merged_glibc_owns_rseq());
	ASSERT_EQ(0, pin_self(slice_test_cpu()));
	rseq_slice_tsc_calibrate(0);
}

FIXTURE_TEARDOWN(merged)
{
	if (self->noise_on)
		noise_stop(&self->noise);
	if (self->enabled[0])
		slice_param_set("enabled", self->enabled);
}

static void start_noise(struct __test_metadata *_metadata, FIXTURE_DATA(merged) *self)
{
	/* As upstream's slice_test: 2 us busy, 50 us asleep, on the test CPU. */
	ASSERT_EQ(0, noise_start(&self->noise, slice_test_cpu(), 2000, 50000));
	self->noise_on = true;
}

/* Registered as upstream's library registers; flags as either kernel leaves them. */
TEST_F(merged, registration_as_upstream)
{
	unsigned long fsize = getauxval(AT_RSEQ_FEATURE_SIZE);
	uint32_t want = fsize > MERGED_ORIG_SIZE ? (uint32_t)fsize : MERGED_ORIG_SIZE;
	uint32_t fl;

	ASSERT_EQ(0, merged_register());
	ksft_print_msg("registered %u bytes (AT_RSEQ_FEATURE_SIZE %lu, AT_RSEQ_ALIGN %lu), flags %#x\n",
		       merged_len, fsize, getauxval(AT_RSEQ_ALIGN), merged_flags());
	EXPECT_EQ(want, merged_len);
	/* 7.2 says AVAILABLE in a v2 registration; 6.x sets no flag at all. */
	fl = merged_flags();
	EXPECT_TRUE(fl == 0 || fl == MERGED_CS_FLAG_SLICE_AVAILABLE);
	EXPECT_EQ(0, merged_ctrl_all());
	EXPECT_EQ(0, merged_get());
	ASSERT_EQ(0, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
	EXPECT_EQ(PR_RSEQ_SLICE_EXT_ENABLE, merged_get());
	fl = merged_flags();
	EXPECT_TRUE(fl == 0 || fl == (MERGED_CS_FLAG_SLICE_AVAILABLE | MERGED_CS_FLAG_SLICE_ENABLED));
	/* Enabling does not write the control word. */
	EXPECT_EQ(0, merged_ctrl_all());
	ASSERT_EQ(0, merged_set(0));
	EXPECT_EQ(0, merged_get());
	fl = merged_flags();
	EXPECT_TRUE(fl == 0 || fl == MERGED_CS_FLAG_SLICE_AVAILABLE);
}

/* A 32-byte registration: enough where the kernel offers nothing larger (6.x). */
TEST_F(merged, registration_32_bytes)
{
	ASSERT_EQ(0, merged_register_area(NULL, MERGED_ORIG_SIZE));
	if (merged_rseq_len() == MERGED_ORIG_SIZE) {
		EXPECT_EQ(0, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
		EXPECT_EQ(PR_RSEQ_SLICE_EXT_ENABLE, merged_get());
		EXPECT_EQ(0, merged_flags());
	} else {
		/* 7.2 wants the v2 registration for the feature. */
		EXPECT_EQ(-MERGED_ENOTSUPP, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
		EXPECT_EQ(0, merged_get());
	}
}

/* No rseq area: SET says ENXIO (whatever it asks), GET says 0. */
TEST_F(merged, enxio_without_rseq)
{
	EXPECT_EQ(-ENXIO, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
	EXPECT_EQ(-ENXIO, merged_set(0));
	EXPECT_EQ(0, merged_get());
}

static void einval_table(struct __test_metadata *_metadata)
{
	static const unsigned long bad_ops[] = { 0, 3, 4, 0x100, 1UL << 32, ~0UL };
	static const unsigned long bad_flags[] = { 2, 3, 0x80, 1UL << 32, ~0UL };
	unsigned int i;

	for (i = 0; i < sizeof(bad_ops) / sizeof(bad_ops[0]); i++)
		EXPECT_EQ(-EINVAL, merged_prctl(bad_ops[i], 0, 0, 0)) {
			TH_LOG("op %#lx", bad_ops[i]);
		}
	for (i = 0; i < sizeof(bad_flags) / sizeof(bad_flags[0]); i++)
		EXPECT_EQ(-EINVAL, merged_prctl(PR_RSEQ_SLICE_EXTENSION_SET, bad_flags[i], 0, 0)) {
			TH_LOG("SET flags %#lx", bad_flags[i]);
		}
	/* GET takes no flags. */
	EXPECT_EQ(-EINVAL, merged_prctl(PR_RSEQ_SLICE_EXTENSION_GET, 1, 0, 0));
	EXPECT_EQ(-EINVAL, merged_prctl(PR_RSEQ_SLICE_EXTENSION_SET, 1, 1, 0));
	EXPECT_EQ(-EINVAL, merged_prctl(PR_RSEQ_SLICE_EXTENSION_SET, 1, 0, 1));
	EXPECT_EQ(-EINVAL, merged_prctl(PR_RSEQ_SLICE_EXTENSION_SET, 0, ~0UL, 0));
	EXPECT_EQ(-EINVAL, merged_prctl(PR_RSEQ_SLICE_EXTENSION_GET, 0, 1, 0));
	EXPECT_EQ(-EINVAL, merged_prctl(PR_RSEQ_SLICE_EXTENSION_GET, 0, 0, 1));
	/* None of them changed anything. */
	EXPECT_EQ(0, merged_get());
}

/* Bad arguments: EINVAL, registered or not (7.2 checks them before ENXIO). */
TEST_F(merged, einval_bad_arguments)
{
	einval_table(_metadata);
	ASSERT_EQ(0, merged_register());
	einval_table(_metadata);
	if (merged_rs)
		EXPECT_EQ(0, merged_ctrl_all());
}

/* Setting the current state again succeeds and changes nothing. */
TEST_F(merged, set_current_state_again)
{
	ASSERT_EQ(0, merged_register());
	EXPECT_EQ(0, merged_set(0));
	EXPECT_EQ(0, merged_get());
	EXPECT_EQ(0, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
	EXPECT_EQ(PR_RSEQ_SLICE_EXT_ENABLE, merged_get());
	EXPECT_EQ(0, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
	EXPECT_EQ(PR_RSEQ_SLICE_EXT_ENABLE, merged_get());
	EXPECT_EQ(0, merged_set(0));
	EXPECT_EQ(0, merged_get());
	EXPECT_EQ(0, merged_set(0));
	EXPECT_EQ(0, merged_get());
}

/*
 * The mechanism off: SET says ENOTSUPP (before ENXIO), GET 0. The module
 * is switched off by its "enabled" (root); the in-kernel implementation
 * only by booting with rseq_slice_ext=0.
 */
TEST_F(merged, enotsupp_when_off)
{
	if (access(MODULE_ENABLED, F_OK) == 0) {
		if (!is_root())
			SKIP(return, "switching the module off (its \"enabled\") needs root");
		ASSERT_EQ(0, slice_param_get("enabled", self->enabled, sizeof(self->enabled)));
		ASSERT_EQ(0, slice_param_set("enabled", "0"));
	} else if (!cmdline_slice_off()) {
		SKIP(return, "the in-kernel implementation is switched off only by booting with rseq_slice_ext=0");
	}
	EXPECT_EQ(-MERGED_ENOTSUPP, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
	EXPECT_EQ(-MERGED_ENOTSUPP, merged_set(0));
	EXPECT_EQ(0, merged_get());
	ASSERT_EQ(0, merged_register());
	EXPECT_EQ(-MERGED_ENOTSUPP, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
	EXPECT_EQ(-MERGED_ENOTSUPP, merged_set(0));
	EXPECT_EQ(0, merged_get());
	/* Bad arguments are still EINVAL. */
	EXPECT_EQ(-EINVAL, merged_prctl(PR_RSEQ_SLICE_EXTENSION_SET, 2, 0, 0));
	EXPECT_EQ(-EINVAL, merged_prctl(3, 0, 0, 0));
	/* No flags appear (7.2 sets none when the mechanism is off). */
	EXPECT_EQ(0, merged_flags());
}

/*
 * What rseq_slice_yield() returns to a thread that is not enabled: 7.2
 * has the system call, so 0 ("yielded" is clear); 6.x with the module
 * answers only for threads enabled through its prctl, so the others keep
 * the stock kernel's -ENOSYS (documented in docs/abi.md).
 */
static long not_enabled_yield(void)
{
	return access("/sys/module/rseq_slice", F_OK) ? 0 : -ENOSYS;
}

/* The yield of a thread that is not enabled: see not_enabled_yield(). */
TEST_F(merged, yield_not_enabled)
{
	EXPECT_EQ(not_enabled_yield(), merged_yield());
	ASSERT_EQ(0, merged_register());
	EXPECT_EQ(not_enabled_yield(), merged_yield());
	EXPECT_EQ(0, merged_get());
	EXPECT_EQ(not_enabled_yield(), merged_yield());
}

/* Enabled, never granted: 0, with or without REQUEST set. */
TEST_F(merged, yield_never_granted)
{
	ASSERT_EQ(0, merged_register());
	ASSERT_EQ(0, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
	EXPECT_EQ(0, merged_yield());
	merged_set_request(1);
	EXPECT_EQ(0, merged_yield());
	merged_set_request(0);
	EXPECT_EQ(0, merged_granted());
	EXPECT_EQ(0, merged_yield());
}

/*
 * A live grant: the kernel cleared request (byte 0 of slice_ctrl, at
 * offset 28) and set granted (byte 1), nothing else; the yield returns
 * 1 and leaves the word clear. Under emulation a grant can end between
 * the thread seeing it and its yield reaching the kernel (the yield then
 * says 0, rightly): go on until one yield ends a live grant.
 */
TEST_F_TIMEOUT(merged, yield_in_live_grant, 600)
{
	long long y0 = merged_stat("syield"), y1;
	uint64_t end = now_ns() + EVENT_NS;
	int grants = 0, ones = 0, zeros = 0;
	uint32_t w;
	long ret;

	SLICE_NEEDS_GRANTS();
	ASSERT_EQ(0, merged_register());
	ASSERT_EQ(0, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
	start_noise(_metadata, self);
	while (!ones && now_ns() < end) {
		if (!wait_grant_word(left_ns(end), &w))
			break;
		ret = merged_yield();
		grants++;
		/*
		 * As seen: granted (byte 1) only; the kernel cleared request
		 * (byte 0) and wrote nothing else.
		 */
		EXPECT_EQ(0x100, w);
		EXPECT_EQ(0, merged_ctrl_all());
		EXPECT_TRUE(ret == 0 || ret == 1) {
			TH_LOG("yield returned %ld", ret);
		}
		ones += ret == 1;
		zeros += ret == 0;
	}
	ksft_print_msg("%d grants seen, yields: %d returned 1, %d returned 0\n", grants, ones, zeros);
	ASSERT_LT(0, grants) {
		TH_LOG("no grant within %llu s", EVENT_NS / 1000000000ULL);
	}
	ASSERT_EQ(1, ones);
	y1 = merged_stat("syield");
	if (y0 >= 0)
		EXPECT_LE(1, y1 - y0);
	/* The grant is over: a second yield finds nothing. */
	EXPECT_EQ(0, merged_yield());
}

/*
 * A seccomp filter on the thread: rseq_slice_yield() is then a call the
 * filter looks at, so it must run as made (the module answers a yield
 * nobody looks at at its entry and skips it). @nr_errno: the filter
 * answers number 471 with errno 77 (it must see the number), else it
 * allows every call. 0 or -1.
 */
static int yield_filter(bool nr_errno)
{
	struct sock_filter errno_f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MERGED_NR_YIELD, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 77),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_filter allow_f[] = {
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = nr_errno ? sizeof(errno_f) / sizeof(errno_f[0]) : 1,
		.filter = nr_errno ? errno_f : allow_f,
	};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/*
 * Yields inside grants under the filter until one ends a live grant
 * (syield rises): its result must be @want.
 */
static void yield_under_filter(struct __test_metadata *_metadata,
			       FIXTURE_DATA(merged) *self, bool nr_errno, long want)
{
	uint64_t end = now_ns() + EVENT_NS;
	int tries = 0;
	long ret = 0;
	bool hit = false;

	SLICE_NEEDS_GRANTS();
	if (merged_stat("syield") < 0)
		SKIP(return, "no readable syield counter");
	ASSERT_EQ(0, merged_register());
	ASSERT_EQ(0, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
	ASSERT_EQ(0, yield_filter(nr_errno));
	start_noise(_metadata, self);
	while (!hit && now_ns() < end) {
		long long y0 = merged_stat("syield");

		if (!wait_grant(left_ns(end)))
			break;
		ret = merged_yield();
		tries++;
		hit = merged_stat("syield") > y0;
	}
	ksft_print_msg("%d yields until one ended a live grant: %ld\n", tries, ret);
	ASSERT_TRUE(hit);
	EXPECT_EQ(want, ret);
}

/* The filter sees number 471 and answers it. */
TEST_F_TIMEOUT(merged, yield_seen_by_seccomp, 600)
{
	yield_under_filter(_metadata, self, true, -77);
}

/* Allowed by the filter, the yield runs and reports the grant it ended. */
TEST_F_TIMEOUT(merged, yield_under_seccomp_reports_grant, 600)
{
	yield_under_filter(_metadata, self, false, 1);
}

/*
 * Raced: a grant left to run out. The kernel revokes it (expiry, or the
 * next reschedule) and clears the word before the thread runs again; a
 * yield after that returns 0.
 */
TEST_F_TIMEOUT(merged, yield_after_revoke_is_raced, 600)
{
	uint64_t end;

	SLICE_NEEDS_GRANTS();
	ASSERT_EQ(0, merged_register());
	ASSERT_EQ(0, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
	start_noise(_metadata, self);
	ASSERT_TRUE(wait_grant(EVENT_NS));
	/* No system call until the kernel has taken the grant back. */
	end = rseq_slice_tsc_ns() + EVENT_NS;
	while (merged_granted() && rseq_slice_tsc_ns() < end)
		;
	ASSERT_EQ(0, merged_granted()) {
		TH_LOG("the grant did not end within %llu s", EVENT_NS / 1000000000ULL);
	}
	EXPECT_EQ(0, merged_ctrl_all());
	EXPECT_EQ(0, merged_yield());
	EXPECT_EQ(PR_RSEQ_SLICE_EXT_ENABLE, merged_get());
}

/*
 * no_yield: another system call while granted ends the grant (the word
 * is clear when it returns), the call itself runs, and a yield after it
 * finds nothing.
 */
TEST_F_TIMEOUT(merged, no_yield_ends_grant, 600)
{
	long pid = syscall(SYS_getpid);
	int i;

	SLICE_NEEDS_GRANTS();
	ASSERT_EQ(0, merged_register());
	ASSERT_EQ(0, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
	start_noise(_metadata, self);
	for (i = 0; i < 20; i++) {
		ASSERT_TRUE(wait_grant(EVENT_NS));
		EXPECT_EQ(pid, syscall(SYS_getpid));
		EXPECT_EQ(0, merged_ctrl_all());
		EXPECT_EQ(0, merged_yield());
	}
	EXPECT_EQ(PR_RSEQ_SLICE_EXT_ENABLE, merged_get());
}

/*
 * no_yield, counted: a getpid() inside a live grant counts "sabort" in
 * rseq/stats, not "syield". Until one did (a grant can end before the
 * call reaches the kernel; then nothing is counted, rightly).
 */
TEST_F_TIMEOUT(merged, no_yield_counts_sabort, 600)
{
	uint64_t end = now_ns() + EVENT_NS;
	long long a0, y0, a1 = 0, y1 = 0;
	int tries = 0;

	SLICE_NEEDS_GRANTS();
	if (access(MERGED_STATS, R_OK)) {
		if (!is_root())
			SKIP(return, "rseq/stats is readable by root only");
		ASSERT_EQ(0, access(MERGED_STATS, R_OK)) {
			TH_LOG(MERGED_STATS ": %s", strerror(errno));
		}
	}
	ASSERT_EQ(0, merged_register());
	ASSERT_EQ(0, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
	start_noise(_metadata, self);
	do {
		a0 = merged_stat("sabort");
		y0 = merged_stat("syield");
		ASSERT_LE(0, a0);
		ASSERT_TRUE(wait_grant(left_ns(end)));
		syscall(SYS_getpid);
		a1 = merged_stat("sabort");
		y1 = merged_stat("syield");
		tries++;
		EXPECT_EQ(y0, y1);
	} while (a1 == a0 && now_ns() < end);
	ksft_print_msg("%d grants ended by getpid() until one counted sabort\n", tries);
	EXPECT_EQ(1, a1 - a0);
}

/*
 * Unregistering rseq ends the extension: GET says 0, the kernel no longer
 * grants or touches the area, a new registration (the same area or
 * another) starts disabled and can be enabled again.
 */
TEST_F_TIMEOUT(merged, unregister_ends_extension, 600)
{
	struct merged_rseq *other;
	unsigned long r0;
	uint64_t end;

	SLICE_NEEDS_GRANTS();
	ASSERT_EQ(0, merged_register());
	ASSERT_EQ(0, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
	start_noise(_metadata, self);
	/* It grants here, so that what follows can tell. */
	ASSERT_TRUE(wait_grant(EVENT_NS));
	EXPECT_LE(0, merged_yield());
	EXPECT_EQ(0, merged_ctrl_all());

	ASSERT_EQ(0, merged_unregister());
	EXPECT_EQ(0, merged_get());
	/*
	 * REQUEST in the old area, through 500 preemptions by the noise
	 * thread (it runs on this CPU only when it preempts this thread):
	 * each would have been a grant.
	 */
	merged_tls.abi.slice_ctrl.request = 1;
	r0 = self->noise.rounds;
	end = rseq_slice_tsc_ns() + EVENT_NS;
	while (self->noise.rounds - r0 < 500 && rseq_slice_tsc_ns() < end &&
	       __atomic_load_n(&merged_tls.abi.slice_ctrl.all, __ATOMIC_RELAXED) == 1)
		;
	EXPECT_LE(500, self->noise.rounds - r0);
	EXPECT_EQ(1, merged_tls.abi.slice_ctrl.all);
	merged_tls.abi.slice_ctrl.request = 0;
	EXPECT_EQ(not_enabled_yield(), merged_yield());

	/* The same area again: disabled. */
	ASSERT_EQ(0, merged_register());
	EXPECT_EQ(0, merged_get());
	ASSERT_EQ(0, merged_unregister());
	/* Another area: disabled, and it can be enabled. */
	other = aligned_alloc(256, MERGED_AREA_SIZE);
	ASSERT_NE(NULL, other);
	memset(other, 0, MERGED_AREA_SIZE);
	ASSERT_EQ(0, merged_register_area(other, 0));
	EXPECT_EQ(0, merged_get());
	EXPECT_EQ(0, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
	EXPECT_EQ(PR_RSEQ_SLICE_EXT_ENABLE, merged_get());
	EXPECT_TRUE(wait_grant(EVENT_NS));
	EXPECT_LE(0, merged_yield());
	ASSERT_EQ(0, merged_unregister());
	EXPECT_EQ(0, merged_get());
	free(other);
}

/* Per thread: a second thread registers and enables its own. */
struct thread_result {
	long enxio, set, get, main_get_after;
};

static void *other_thread(void *arg)
{
	struct thread_result *r = arg;

	r->enxio = merged_set(PR_RSEQ_SLICE_EXT_ENABLE);
	if (merged_register())
		return NULL;
	r->set = merged_set(PR_RSEQ_SLICE_EXT_ENABLE);
	r->get = merged_get();
	merged_unregister();
	return NULL;
}

TEST_F(merged, per_thread)
{
	struct thread_result r = { 1, 1, 1, 1 };
	pthread_t t;

	ASSERT_EQ(0, merged_register());
	ASSERT_EQ(0, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
	ASSERT_EQ(0, pthread_create(&t, NULL, other_thread, &r));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(-ENXIO, r.enxio);
	EXPECT_EQ(0, r.set);
	EXPECT_EQ(PR_RSEQ_SLICE_EXT_ENABLE, r.get);
	EXPECT_EQ(PR_RSEQ_SLICE_EXT_ENABLE, merged_get());
}

/*
 * The module only: a thread enabled through the ioctl and through the
 * prctl at once is refused the second way, either order.
 */
TEST_F(merged, both_ways_ebusy)
{
	struct rseq_slice_register reg = { .ctrl = (uintptr_t)&slice_self.ctrl };
	int fd;

	if (access(RSEQ_SLICE_DEVICE, F_OK))
		SKIP(return, "no " RSEQ_SLICE_DEVICE ": the module's ioctl ABI is not here");
	fd = slice_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, merged_register());

	ASSERT_EQ(0, ioctl(fd, RSEQ_SLICE_IOC_ENABLE, &reg));
	EXPECT_EQ(-EBUSY, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
	EXPECT_EQ(0, merged_get());
	EXPECT_EQ(1, slice_ioctl(fd, RSEQ_SLICE_IOC_GET));
	EXPECT_EQ(0, slice_ioctl(fd, RSEQ_SLICE_IOC_DISABLE));

	ASSERT_EQ(0, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
	EXPECT_EQ(-1, ioctl(fd, RSEQ_SLICE_IOC_ENABLE, &reg));
	EXPECT_EQ(EBUSY, errno);
	EXPECT_EQ(0, slice_ioctl(fd, RSEQ_SLICE_IOC_GET));
	EXPECT_EQ(PR_RSEQ_SLICE_EXT_ENABLE, merged_get());
	close(fd);
}

/* Every other prctl behaves as before, with the extension enabled. */
TEST_F(merged, other_prctls_untouched)
{
	char name[16] = "";

	ASSERT_EQ(0, merged_register());
	ASSERT_EQ(0, merged_set(PR_RSEQ_SLICE_EXT_ENABLE));
	ASSERT_EQ(0, prctl(PR_SET_NAME, "merged-12345678", 0, 0, 0));
	ASSERT_EQ(0, prctl(PR_GET_NAME, name, 0, 0, 0));
	EXPECT_STREQ("merged-12345678", name);
	/* Longer names are cut to 15 characters. */
	ASSERT_EQ(0, prctl(PR_SET_NAME, "merged-1234567890", 0, 0, 0));
	ASSERT_EQ(0, prctl(PR_GET_NAME, name, 0, 0, 0));
	EXPECT_STREQ("merged-12345678", name);
	EXPECT_EQ(1, prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
	EXPECT_EQ(0, prctl(PR_SET_DUMPABLE, 0, 0, 0, 0));
	EXPECT_EQ(0, prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
	EXPECT_EQ(0, prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
	EXPECT_EQ(1, prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
	EXPECT_EQ(-1, prctl(PR_SET_DUMPABLE, 2, 0, 0, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
	EXPECT_EQ(1, prctl(PR_CAPBSET_READ, 0 /* CAP_CHOWN */, 0, 0, 0));
	EXPECT_EQ(-1, prctl(0x7f7f7f7f, 0, 0, 0, 0));
	EXPECT_EQ(EINVAL, errno);
	/* And the extension is still as it was. */
	EXPECT_EQ(PR_RSEQ_SLICE_EXT_ENABLE, merged_get());
}

TEST_HARNESS_MAIN
