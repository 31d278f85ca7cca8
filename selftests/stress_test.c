// SPDX-License-Identifier: GPL-2.0
/*
 * Limits and module churn (root):
 * - how long a thread keeps the CPU past the reschedule point, over many
 *   grants that are never yielded, from the module's own trace events;
 * - 100 unload/load cycles while threads enable, request and yield, and
 *   while another thread rewrites enabled and grant_ns in a tight loop;
 * - a thread cannot change another thread's state.
 * Counts: RSEQ_SLICE_OVERRUN_GRANTS (default 100000) and
 * RSEQ_SLICE_CHURN_CYCLES (default 100).
 */
#include "slice_util.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "kselftest_harness.h"

static long env_long(const char *name, long dflt)
{
	const char *s = getenv(name);

	return s ? atol(s) : dflt;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Grants that are never yielded end by a reschedule (the noise thread's
 * wakeup or the timer); rseq_slice_revoke's held_ns is the time from the
 * grant to that switch: how long the CPU was kept past the point where
 * the kernel would have rescheduled.
 */
FIXTURE(overrun)
{
	struct noise noise;
	struct slice_params params;	/* restored by the teardown */
};

FIXTURE_SETUP(overrun)
{
	SLICE_ONLY_FILTER();
	if (!is_root())
		return;
	ASSERT_EQ(0, slice_params_save(&self->params));
	ASSERT_EQ(0, pin_self(slice_test_cpu()));
	ASSERT_EQ(0, slice_enable_self());
	/* Wakeups every 50 us: grants end by the wakeup or by expiry. */
	ASSERT_EQ(0, noise_start(&self->noise, slice_test_cpu(), 2000, 50000));
}

FIXTURE_TEARDOWN(overrun)
{
	if (!is_root())
		return;
	noise_stop(&self->noise);
	slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_DISABLE);
	slice_trace_event("rseq_slice", 0);
	slice_params_restore(&self->params);
}

/*
 * @grants grants that are never yielded: the thread spins until the
 * kernel takes each back. Returns how many rseq_slice_revoke events were
 * read into *@held (sorted, the caller frees it), or -1.
 */
static ssize_t never_yielded(struct __test_metadata *_metadata, long grants, uint64_t **held)
{
	long long g0 = slice_stat("sgrant");
	size_t n = 0, cap = grants * 2 + 1024;
	char buf[512];
	FILE *f;

	*held = NULL;
	if (slice_trace_reset("16384") ||
	    slice_trace_event("rseq_slice/rseq_slice_revoke", 1))
		return -1;
	while (slice_stat("sgrant") - g0 < grants) {
		uint32_t w;
		int k;

		/* A batch between two reads of the statistics file. */
		for (k = 0; k < 200; k++) {
			rseq_slice_word_request(&slice_self.ctrl);
			while ((w = slice_word()) == RSEQ_SLICE_EXT_REQUEST)
				;
			/* Never yield: spin until the kernel takes the grant back. */
			while (slice_word() & RSEQ_SLICE_EXT_GRANTED)
				;
		}
		rseq_slice_word_store(&slice_self.ctrl, 0);
	}
	if (slice_trace_event("rseq_slice/rseq_slice_revoke", 0))
		return -1;
	*held = calloc(cap, sizeof(**held));
	f = fopen(SLICE_TRACING "trace", "r");
	if (!*held || !f)
		return -1;
	while (fgets(buf, sizeof(buf), f) && n < cap) {
		char *p = strstr(buf, "rseq_slice_revoke:");
		unsigned long long v;

		if (p && (p = strstr(p, "held_ns=")) && sscanf(p, "held_ns=%llu", &v) == 1)
			(*held)[n++] = v;
	}
	fclose(f);
	qsort(*held, n, sizeof(**held), cmp_u64);
	return n;
}

/*
 * A tick is 4 ms on these kernels: a timer that fires but does not
 * force the reschedule leaves grants to the next tick, medians of
 * milliseconds. Medians seen under emulation: 2-108 us.
 */
#define MEDIAN_BOUND_NS	(1000 * 1000ULL)

TEST_F_TIMEOUT(overrun, held_past_reschedule, 1200)
{
	long grants = env_long("RSEQ_SLICE_OVERRUN_GRANTS", 100000);
	/*
	 * Emulated timers add milliseconds now and then, and a loaded host
	 * stops a guest's vCPUs while its clock runs on: p99 has reached
	 * 10 ms, p99.9 92 ms and the maximum 3.7 s. The bounds on p99 and
	 * on the maximum only prove that holding is bounded. The median
	 * must be well below a tick: the timer, not the tick, ends the
	 * grants.
	 */
	uint64_t *held, grant_ns, t0 = now_ns(), t1;
	unsigned long hist[40] = { 0 };
	ssize_t got;
	size_t n, i;
	char buf[64];

	SLICE_NEEDS_GRANTS();
	if (!is_root())
		SKIP(return, "tracefs and the statistics are root's");
	ASSERT_EQ(0, slice_param_get("grant_ns", buf, sizeof(buf)));
	grant_ns = strtoull(buf, NULL, 10);
	got = never_yielded(_metadata, grants, &held);
	t1 = now_ns();
	ASSERT_LE(0, got);
	n = got;
	ksft_print_msg("%ld grants and their trace read in %.1f s\n", grants, (t1 - t0) / 1e9);
	ASSERT_LE((size_t)grants * 9 / 10, n);
	for (i = 0; i < n; i++) {
		int b = 0;

		while (b < 39 && (1ULL << (b + 1)) <= held[i])
			b++;
		hist[b]++;
	}
	ksft_print_msg("%zu grants never yielded, grant_ns %llu: held p50 %llu p99 %llu p99.9 %llu max %llu ns\n",
		       n, (unsigned long long)grant_ns, (unsigned long long)held[n / 2],
		       (unsigned long long)held[n * 99 / 100],
		       (unsigned long long)held[n * 999 / 1000], (unsigned long long)held[n - 1]);
	ksft_print_msg("held_ns histogram (from rseq_slice_revoke events):\n");
	for (i = 0; i < 40; i++)
		if (hist[i])
			ksft_print_msg("  [%10llu, %10llu) %lu\n", 1ULL << i, 2ULL << i, hist[i]);
	/* Bounded: the timer ends every grant, within emulated timer slack. */
	EXPECT_GT(grant_ns + EXPIRY_SLACK_NS, held[n * 99 / 100]);
	EXPECT_GT(grant_ns + STALL_NS, held[n - 1]);
	EXPECT_GT(MEDIAN_BOUND_NS, held[n / 2]);
	free(held);
}

/*
 * Rules 4 and 7: grant_ns is the grant's length. Never-yielded grants at
 * grant_ns=5000 and at 50000, in one boot: each median well below a tick
 * (the timer forces the reschedule), the longer setting's median at
 * least most of its 50 us (nothing else ends those grants: the noise
 * thread is runnable and does not wake again), and above the shorter
 * one's.
 */
TEST_F_TIMEOUT(overrun, median_follows_grant_ns, 1200)
{
	static const char * const lens[] = { "5000", "50000" };
	uint64_t median[2];
	unsigned int i;

	SLICE_NEEDS_GRANTS();
	if (!is_root())
		SKIP(return, "tracefs and the statistics are root's");
	for (i = 0; i < 2; i++) {
		uint64_t *held;
		ssize_t n;

		ASSERT_EQ(0, slice_param_set("grant_ns", lens[i]));
		n = never_yielded(_metadata, 2000, &held);
		ASSERT_LE(1800, n);
		median[i] = held[n / 2];
		ksft_print_msg("grant_ns %s: %zd grants never yielded, held p10 %llu p50 %llu p90 %llu ns\n",
			       lens[i], n, (unsigned long long)held[n / 10],
			       (unsigned long long)median[i],
			       (unsigned long long)held[n * 9 / 10]);
		free(held);
		EXPECT_GT(MEDIAN_BOUND_NS, median[i]);
	}
	/*
	 * On a slow (KASAN) kernel on a loaded host, ending a grant was seen
	 * to take longer than the longest grant_ns (p10 86 us, median 121 us
	 * at 5000): both settings then give the same hold, and grant_ns
	 * cannot be resolved there. So on 6.1-rt under emulation (median 195
	 * us at 5000, 192 us at 50000). Only there may it skip (run_suite).
	 */
	if ((getenv("RSEQ_SLICE_SLOW_KERNEL") || slice_kernel_rt()) && median[0] >= 50000)
		SKIP(return, "the 5 us grants' median hold is %llu ns (%s kernel)",
		     (unsigned long long)median[0],
		     slice_kernel_rt() ? "PREEMPT_RT" : "slow");
	EXPECT_LE(45000, median[1]);
	EXPECT_LT(median[0], median[1]);
}

/* The workload of the module churn test: runs in a child process. */
struct churn {
	volatile int stop;
	/* RT only: the file churn and the toggler wait (reload's comment). */
	volatile int quiet;
	volatile unsigned long sections, yields, opens;
	/* Grants seen by the workers that closed their file. */
	volatile unsigned long closed_grants;
};

/* Open the device for a worker (it fails while the module is out): fd or -1. */
static int churn_open(struct churn *c)
{
	int fd = slice_open();

	if (fd < 0) {
		sched_yield();
		return -1;
	}
	c->opens++;
	return fd;
}

/*
 * A worker whose registration outlives its file: it opens the device,
 * enables, closes, and requests on for a while, never yielding (that
 * needs a file): its grants end by expiry or revoke. Closed, it does not
 * hold the module, so unloads and enabled=0 happen under its grants.
 * After an unload nothing answers its REQUEST: it gives up after 5 ms
 * and registers again (with the module loaded again).
 */
static void *churn_closed_worker(void *arg)
{
	struct churn *c = arg;
	struct timespec pause = { 0, 1000000 };

	pin_self(slice_test_cpu());
	while (!c->stop) {
		int fd = churn_open(c), i;

		if (fd < 0) {
			nanosleep(&pause, NULL);
			continue;
		}
		slice_self.ctrl = 0;
		i = slice_enable_word(fd, &slice_self.ctrl);
		close(fd);
		if (i) {
			nanosleep(&pause, NULL);
			continue;
		}
		for (i = 0; i < 200 && !c->stop; i++) {
			uint32_t w = request_wait(&slice_self.ctrl, 5000000);

			if (w == RSEQ_SLICE_EXT_REQUEST)
				break;	/* unloaded, or disabled: register again */
			if (w & RSEQ_SLICE_EXT_GRANTED) {
				__atomic_add_fetch(&c->closed_grants, 1, __ATOMIC_RELAXED);
				while (slice_word() & RSEQ_SLICE_EXT_GRANTED)
					;
			}
			c->sections++;
		}
		/*
		 * End the last request by the protocol, never by a plain
		 * store of 0: a grant given after the last look (enabled=1
		 * again, say) would be wiped from the word, and the next
		 * system call would be foreign (SIGSEGV under kill). Without
		 * a file to yield with, wait the grant out, as above.
		 */
		if (!rseq_slice_word_test_clear(&slice_self.ctrl))
			while (slice_word() & RSEQ_SLICE_EXT_GRANTED)
				;
	}
	return NULL;
}

/* Pages pinned with FOLL_PIN now, system wide (/proc/vmstat); -1 if unknown. */
static long long foll_pins(void)
{
	long long acq = -1, rel = -1, v;
	char line[128];
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "nr_foll_pin_acquired %lld", &v) == 1)
			acq = v;
		else if (sscanf(line, "nr_foll_pin_released %lld", &v) == 1)
			rel = v;
	}
	fclose(f);
	return acq < 0 || rel < 0 ? -1 : acq - rel;
}

/*
 * On PREEMPT_RT the open/close churn runs off the test CPU, where the
 * closed-file workers wait for grants: there each file's RCU free wakes
 * that CPU's rcuc thread (SCHED_FIFO), whose request denies every grant
 * (design.md, "On PREEMPT_RT"): 3 grants in 605 s on 6.12-rt. Elsewhere
 * it runs anywhere: all of it on one CPU starved the unloading thread of
 * the KASAN kernel past the test's 1200 s.
 */
static void pin_off_test_cpu(void)
{
	if (slice_kernel_rt() && slice_test_cpu())
		pin_self(0);
}

static void *churn_worker(void *arg)
{
	struct churn *c = arg;
	struct timespec pause = { 0, 1000000 };
	unsigned long round = 0;

	pin_off_test_cpu();
	while (!c->stop) {
		int fd, i;

		if (c->quiet) {
			nanosleep(&pause, NULL);
			continue;
		}
		fd = churn_open(c);
		if (fd < 0)
			continue;
		slice_self.fd = fd;
		slice_self.depth = 0;
		if (!slice_enable_word(fd, &slice_self.ctrl)) {
			for (i = 0; i < 20; i++) {
				rseq_slice_begin(&slice_self);
				rseq_slice_busy_wait_ns(20000);
				if (rseq_slice_end(&slice_self) == RSEQ_SLICE_END_YIELDED)
					c->yields++;
				c->sections++;
			}
		}
		/* Half the time the registration outlives the file. */
		if (++round & 1)
			ioctl(fd, RSEQ_SLICE_IOC_DISABLE, 0);
		close(fd);
		slice_self.fd = -1;
		nanosleep(&pause, NULL);
	}
	return NULL;
}

static void *churn_toggler(void *arg)
{
	struct churn *c = arg;
	struct timespec on_time = { 0, 20000000 };
	bool rt = slice_kernel_rt();
	unsigned int v = 1;

	pin_off_test_cpu();
	while (!c->stop) {
		char ns[16];

		if (c->quiet) {
			slice_param_set("enabled", "1");
			nanosleep(&on_time, NULL);
			continue;
		}
		/* Fails harmlessly (ENOENT) while the module is out. */
		slice_param_set("enabled", (v & 1) ? "0" : "1");
		snprintf(ns, sizeof(ns), "%u", 5000 + (v * 7919) % 45001);
		slice_param_set("grant_ns", ns);
		/*
		 * On RT grants come only at the test CPU's ticks (4 ms):
		 * enabled=1 lasts 20 ms there, or the schedule() hook is
		 * live only between its arming and the next disarming.
		 */
		if (!(v & 1) && rt)
			nanosleep(&on_time, NULL);
		v++;
	}
	return NULL;
}

/* Module reloads under load (not churn_test's thread churn). */
FIXTURE(reload)
{
	struct slice_params params;	/* restored by the teardown */
};

FIXTURE_SETUP(reload)
{
	SLICE_ONLY_FILTER();
	ASSERT_EQ(0, slice_params_save(&self->params));
}

FIXTURE_TEARDOWN(reload)
{
	slice_module_restore(&self->params);
}

TEST_F_TIMEOUT(reload, unload_load_under_load, 1200)
{
	long cycles = env_long("RSEQ_SLICE_CHURN_CYCLES", 100), done = 0, refused = 0;
	long granted_cycles = 0, registered_cycles = 0;
	bool rt = slice_kernel_rt();
	unsigned long g;
	long long pins0, pins = -1, pinned0;
	struct churn *c;
	uint64_t t0, cycle_end;
	int status, i;
	pid_t pid;

	SLICE_NEEDS_GRANTS();
	if (!is_root())
		SKIP(return, "loading needs root");
	ASSERT_TRUE(slice_module_loaded());
	/*
	 * The pages pinned outside the module: FOLL_PIN's count less the
	 * module's own pins, once no release is pending (every pin belongs
	 * to a live registration; the previous test's may still be going).
	 */
	t0 = now_ns() + 60 * 1000000000ULL;
	while (slice_stat("pinned") != slice_stat("threads") && now_ns() < t0)
		usleep(10000);
	pinned0 = slice_stat("pinned");
	pins0 = foll_pins();
	if (pins0 >= 0)
		pins0 -= pinned0;
	c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, c);
	memset(c, 0, sizeof(*c));
	rseq_slice_tsc_calibrate(0);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct noise noise;
		pthread_t th[7];

		/* The reschedules the closed-file workers' grants need. */
		noise_start(&noise, slice_test_cpu(), 2000, 50000);
		for (i = 0; i < 4; i++)
			pthread_create(&th[i], NULL, churn_worker, c);
		pthread_create(&th[4], NULL, churn_toggler, c);
		for (i = 5; i < 7; i++)
			pthread_create(&th[i], NULL, churn_closed_worker, c);
		for (i = 0; i < 7; i++)
			pthread_join(th[i], NULL);
		noise_stop(&noise);
		_exit(0);
	}
	/* The unloads and loads are churn too. */
	pin_off_test_cpu();
	t0 = now_ns();
	g = c->closed_grants;
	/*
	 * At least @cycles cycles, and on until one met fresh grants at its
	 * unload (the proof below), within the bound.
	 */
	while (done < cycles ||
	       (!granted_cycles && now_ns() < t0 + 600 * 1000000000ULL)) {
		/* Refused while any file is open: retry until the workers close. */
		int ret = slice_unload_module();

		if (ret) {
			ASSERT_TRUE(ret == -EWOULDBLOCK || ret == -EBUSY) TH_LOG("errno %d", -ret);
			refused++;
			/* Poll: let the workers run to their close(). */
			nanosleep(&(struct timespec){ 0, 100000 }, NULL);
			continue;
		}
		/* Grants came between the last load and this unload. */
		if (c->closed_grants != g)
			granted_cycles++;
		ASSERT_EQ(0, slice_load_module("")) TH_LOG("cycle %ld", done);
		done++;
		/*
		 * Let the closed-file workers register with the new module
		 * and be granted once; the next cycle counts if they are
		 * granted again before its unload. On RT the churn waits
		 * meanwhile: without, 6.1-rt denied the workers' requests
		 * about once a tick and granted 24 in 607 s. The likely
		 * cause (not traced): on 6.1 each closed file is freed
		 * through call_rcu(), the frees keep a grace period always
		 * going, and the test CPU's ticks then wake its rcuc thread
		 * (SCHED_FIFO), whose request is never deferred; 6.12 frees
		 * files without (SLAB_TYPESAFE_BY_RCU) and 6.12-rt passes.
		 * The unload, next, meets the churn again: it waits for the
		 * churn's next 100 opens.
		 */
		g = c->closed_grants;
		c->quiet = rt;
		/* Each cycle has its own bound: a slow one leaves the rest theirs. */
		cycle_end = now_ns() + 120 * 1000000000ULL;
		while (c->closed_grants == g && now_ns() < cycle_end)
			sched_yield();
		registered_cycles += c->closed_grants != g;
		g = c->closed_grants;
		if (rt) {
			unsigned long opens = c->opens + 100;

			c->quiet = 0;
			while (c->opens < opens && now_ns() < cycle_end)
				sched_yield();
		}
	}
	c->stop = 1;
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	/* No worker was killed: nothing went wrong under them. */
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) TH_LOG("status %#x", status);
	ksft_print_msg("%ld unload/load cycles in %.1f s (%ld refused while open), %lu opens, %lu sections, %lu yields\n",
		       done, (now_ns() - t0) / 1e9, refused, c->opens, c->sections, c->yields);
	ksft_print_msg("workers without a file: %lu grants, in %ld of %ld cycles before the unload\n",
		       c->closed_grants, granted_cycles, done);
	/*
	 * Every unload met the file-less registrations (each cycle waited
	 * for their first grant under the new module), and in some cycles
	 * they were granted again just before it (seen: 12 and 18 of 20 on
	 * 6.1, 2 of 12 on the loaded debug kernel). How many is the host's
	 * business: one such cycle shows an unload meeting fresh grants, and
	 * the loop above runs on until it has seen one.
	 */
	EXPECT_EQ(done, registered_cycles);
	EXPECT_LE(1, granted_cycles);
	slice_param_set("enabled", "1");
	{
		long long t, p;

		EXPECT_TRUE(slice_stats_settle(0, 0, &t, &p))
			TH_LOG("threads %lld, pinned %lld", t, p);
		EXPECT_EQ(0, t);
		EXPECT_EQ(0, p);
	}
	/*
	 * The module's own counters restart at zero with each load: the
	 * kernel's FOLL_PIN counts say whether every pin was released.
	 */
	if (pins0 >= 0) {
		uint64_t end = now_ns() + 60 * 1000000000ULL;

		/*
		 * A pin taken outside the module may go away meanwhile (seen:
		 * 1 before, 0 after on 6.1); one the module leaked stays
		 * (a leak at unload made 1 before, 13 after).
		 */
		while ((pins = foll_pins()) > pins0 && now_ns() < end)
			usleep(10000);
		ksft_print_msg("FOLL_PIN pages held outside the module: %lld before (the module had %lld), %lld after\n",
			       pins0, pinned0, pins);
		EXPECT_GE(pins0, pins);
	}
}

/* A thread's ioctls act on itself only: not on siblings, not on parents. */
static void *other_thread(void *arg)
{
	long *res = arg;
	uint32_t word = 0;
	int fd = slice_open();

	res[0] = slice_ioctl(fd, RSEQ_SLICE_IOC_GET);
	res[1] = slice_ioctl(fd, RSEQ_SLICE_IOC_DISABLE);
	res[2] = slice_ioctl(fd, RSEQ_SLICE_IOC_YIELD);
	res[3] = slice_enable_word(fd, &word);
	res[4] = slice_ioctl(fd, RSEQ_SLICE_IOC_GET);
	slice_ioctl(fd, RSEQ_SLICE_IOC_DISABLE);
	close(fd);
	return NULL;
}

TEST(cannot_change_another_thread)
{
	long res[5];
	pthread_t th;
	int status;
	pid_t pid;

	ASSERT_EQ(0, slice_enable_self());
	ASSERT_EQ(0, pthread_create(&th, NULL, other_thread, res));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(0, res[0]);
	EXPECT_EQ(0, res[1]);
	EXPECT_EQ(0, res[2]);
	EXPECT_EQ(0, res[3]);
	EXPECT_EQ(1, res[4]);
	/* The sibling's DISABLE left this thread enabled. */
	EXPECT_EQ(1, slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_GET));

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* Inherited fd, not inherited state; DISABLE is the child's. */
		if (slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_GET) != 0)
			_exit(1);
		_exit(slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_DISABLE) == 0 ? 0 : 2);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	EXPECT_EQ(1, slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_GET));
	EXPECT_EQ(0, slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_DISABLE));
}

TEST_HARNESS_MAIN
