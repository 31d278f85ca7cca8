// SPDX-License-Identifier: GPL-2.0
/*
 * Lifecycle churn: registrations created and dropped by the thousand, by
 * every way a thread or its memory can go away while the module holds on
 * to it (exit with and without DISABLE, fork, exec, exit and exec while
 * granted, SIGKILL while granted, munmap and mprotect of a registered
 * word, two threads on one word). Nothing may crash or log an error, and
 * as root the module's threads and pinned counters must come back to
 * where each test found them (as a user only that comparison is skipped).
 *
 * A thread never enters the kernel with REQUEST pending, except where a
 * test means it to (the system call that ends a granted child).
 */
#include "slice_util.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"

/* The page size: 4 KB, or 16 KB (Debian's arm64-16k kernel), 64 KB. */
#define PG		((unsigned long)sysconf(_SC_PAGESIZE))
#define EXEC_ENV	"RSEQ_SLICE_CHURN_EXEC"
#define MS		1000000ULL

/*
 * The program an exec storm child runs: a fresh image of this binary,
 * which must start unregistered. 0: GET said 0; 3: registered; 4: no device.
 */
static void __attribute__((constructor)) churn_exec_check(void)
{
	int fd;

	if (!getenv(EXEC_ENV))
		return;
	fd = slice_open();
	if (fd < 0)
		_exit(4);
	_exit(slice_ioctl(fd, RSEQ_SLICE_IOC_GET) == 0 ? 0 : 3);
}

/*
 * Critical sections for @ns: how many were granted (and yielded). With
 * @call_if_not_granted, a system call after every section that, as far
 * as this thread can tell, was not granted (which the protocol allows).
 */
static int sections_for(uint32_t *w, int fd, uint64_t ns, int *bad, bool call_if_not_granted)
{
	uint64_t end = rseq_slice_tsc_ns() + ns;
	int granted = 0, r;

	while (rseq_slice_tsc_ns() < end) {
		request_wait(w, 2 * MS);
		r = rseq_slice_word_end(w, fd);
		if (r < 0)
			(*bad)++;
		else if (r >= RSEQ_SLICE_END_YIELDED)
			granted++;
		else if (call_if_not_granted)
			syscall(SYS_getppid);
	}
	return granted;
}

static int request_for(uint32_t *w, int fd, uint64_t ns, int *bad)
{
	return sections_for(w, fd, ns, bad, false);
}

/*
 * Critical sections, 20 ms at a time, until one was granted (up to 60 s:
 * a loaded host can starve the guest for a while): how many were. A test
 * that means to act on a word the kernel has granted on must see one.
 */
static int request_until_granted(uint32_t *w, int fd, int *bad)
{
	uint64_t until = now_ns() + 60000 * MS;
	int granted = 0;

	do
		granted += request_for(w, fd, 20 * MS, bad);
	while (!granted && now_ns() < until);
	return granted;
}

/*
 * Does the kernel still see this word? Some REQUEST gets an answer (a
 * grant or a deny) when the thread shares a CPU with noise: usually in
 * the first 100 ms, here within 60 s.
 */
static bool answered(uint32_t *w, int fd, int *bad)
{
	bool seen = false;
	int i;

	for (i = 0; i < 600 && !seen; i++) {
		seen = request_wait(w, 100 * MS) != RSEQ_SLICE_EXT_REQUEST;
		if (rseq_slice_word_end(w, fd) < 0)
			(*bad)++;
	}
	return seen;
}

/* Up to 2 s, rereading every 10 ms: are threads and pinned back at t0, p0? */
static void *map_page(void)
{
	void *p = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Memory shared with children, for what they saw. */
static void *map_shared(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* The ways a grant ends; stats.c: sgrant = their sum + grants running. */
static const char *const grant_ends[] = { "srevok", "syield", "sabort", "skill" };

static long long ends_sum(void)
{
	long long sum = 0;
	unsigned int i;

	for (i = 0; i < sizeof(grant_ends) / sizeof(grant_ends[0]); i++)
		sum += slice_stat(grant_ends[i]);
	return sum;
}

FIXTURE(churn)
{
	long long threads0, pinned0, grant0, ends0, kill0;
	struct noise noise;
	bool noisy;
};

FIXTURE_SETUP(churn)
{
	rseq_slice_tsc_calibrate(0);
	self->noisy = false;
	self->threads0 = slice_stat("threads");
	self->pinned0 = slice_stat("pinned");
	self->grant0 = slice_stat("sgrant");
	self->ends0 = ends_sum();
	self->kill0 = slice_stat("skill");
}

FIXTURE_TEARDOWN(churn)
{
	if (self->noisy)
		noise_stop(&self->noise);
}

/* Wakeups on the test CPU: the reschedules that grants need. */
#define NOISE_ON() do { \
	ASSERT_EQ(0, noise_start(&self->noise, slice_test_cpu(), 2000, 50000)); \
	self->noisy = true; \
} while (0)

#define STATS_BACK() do { \
	long long __t, __p; \
	if (self->threads0 < 0) { \
		ksft_print_msg("stats are root's: threads/pinned not compared\n"); \
		break; \
	} \
	EXPECT_TRUE(slice_stats_settle(self->threads0, self->pinned0, &__t, &__p)) { \
		TH_LOG("threads %lld -> %lld, pinned %lld -> %lld", \
		       self->threads0, __t, self->pinned0, __p); \
	} \
	/* Nobody holds a grant now: every one given has ended, once. */ \
	EXPECT_EQ(slice_stat("sgrant") - self->grant0, ends_sum() - self->ends0); \
	ksft_print_msg("sgrant +%lld\n", slice_stat("sgrant") - self->grant0); \
} while (0)

/* --- 1000 threads, 50 alive at once -------------------------------------- */

#define CHURN_THREADS	1000
#define CHURN_BATCH	50

struct churn_counts {
	int shared_fd;
	int bad, enomem, granted;
};

struct churn_start {
	struct churn_counts *cc;
	long i;
};

static void *churn_thread_fn(void *arg)
{
	struct churn_start *cs = arg;
	struct churn_counts *cc = cs->cc;
	bool own_fd = !(cs->i & 1), disable = !(cs->i & 2);
	int bad = 0, r;
	uint64_t end;

	slice_self.fd = own_fd ? -1 : cc->shared_fd;
	r = slice_enable_self();
	if (r == -ENOMEM) {
		__atomic_add_fetch(&cc->enomem, 1, __ATOMIC_RELAXED);
		goto out;
	}
	if (r || slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_GET) != 1) {
		bad++;
		goto out;
	}
	/* Request until granted (then yield) or 2 ms pass. */
	end = rseq_slice_tsc_ns() + 2 * MS;
	while (rseq_slice_tsc_ns() < end) {
		rseq_slice_begin(&slice_self);
		while (slice_word() == RSEQ_SLICE_EXT_REQUEST && rseq_slice_tsc_ns() < end)
			;
		r = rseq_slice_end(&slice_self);
		if (r < 0)
			bad++;
		if (r == RSEQ_SLICE_END_YIELDED || r == RSEQ_SLICE_END_RACED) {
			__atomic_add_fetch(&cc->granted, 1, __ATOMIC_RELAXED);
			break;
		}
	}
	/* Half say DISABLE; the other half leave it to the exit. */
	if (disable && slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_DISABLE) != 0)
		bad++;
out:
	if (own_fd && slice_self.fd >= 0)
		close(slice_self.fd);
	if (bad)
		__atomic_add_fetch(&cc->bad, bad, __ATOMIC_RELAXED);
	return NULL;
}

TEST_F_TIMEOUT(churn, threads_1000, 600)
{
	struct churn_counts cc = { .shared_fd = slice_open() };
	struct churn_start cs[CHURN_BATCH];
	pthread_t th[CHURN_BATCH];
	pthread_attr_t attr;
	uint64_t start = now_ns();
	int b, i;

	ASSERT_LE(0, cc.shared_fd);
	ASSERT_EQ(0, pthread_attr_init(&attr));
	ASSERT_EQ(0, pthread_attr_setstacksize(&attr, 256 * 1024));
	for (b = 0; b < CHURN_THREADS / CHURN_BATCH; b++) {
		for (i = 0; i < CHURN_BATCH; i++) {
			cs[i].cc = &cc;
			cs[i].i = b * CHURN_BATCH + i;
			ASSERT_EQ(0, pthread_create(&th[i], &attr, churn_thread_fn, &cs[i]));
		}
		for (i = 0; i < CHURN_BATCH; i++)
			pthread_join(th[i], NULL);
	}
	ksft_print_msg("%d threads in %.1f s: %d granted, %d ENOMEM\n", CHURN_THREADS,
		       (now_ns() - start) / 1e9, cc.granted, cc.enomem);
	EXPECT_EQ(0, cc.bad);
	EXPECT_EQ(0, cc.enomem);
	EXPECT_EQ(0, slice_ioctl(cc.shared_fd, RSEQ_SLICE_IOC_GET));
	close(cc.shared_fd);
	STATS_BACK();
}

/* --- fork storm ----------------------------------------------------------- */

#define FORK_THREADS	4
#define FORKS_EACH	50

struct fork_counts {
	int bad, child_bad, coherent_fail, granted;
	int stop;
};

/*
 * An enabled thread forks again and again while its siblings run
 * critical sections. The child must start unregistered and be able to
 * register itself. The parent's word must stay the kernel's word: fork
 * copies a pinned page for the child instead of sharing it copy-on-write.
 */
static void *fork_thread_fn(void *arg)
{
	struct fork_counts *fc = arg;
	int bad = 0, child_bad = 0, granted = 0, i, status;
	pid_t pid;

	if (pin_self(slice_test_cpu()) || slice_enable_self()) {
		__atomic_add_fetch(&fc->bad, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	for (i = 0; i < FORKS_EACH; i++) {
		granted += request_for(&slice_self.ctrl, slice_self.fd, 200000, &bad);
		pid = fork();
		if (pid < 0) {
			bad++;
			break;
		}
		if (pid == 0) {
			if (slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_GET) != 0)
				_exit(10);
			if (i & 1) {
				/* The child's own copy of the word: its to register. */
				if (slice_enable_word(slice_self.fd, &slice_self.ctrl))
					_exit(11);
				if (slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_GET) != 1)
					_exit(12);
				if ((i & 2) && slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_DISABLE))
					_exit(13);
			}
			_exit(0);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
			if (child_bad++ < 3)
				ksft_print_msg("fork child %d: status %#x\n", i, status);
		}
	}
	if (slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_GET) != 1)
		bad++;
	/* The kernel still sees this word: some REQUEST gets an answer. */
	if (!answered(&slice_self.ctrl, slice_self.fd, &bad))
		__atomic_add_fetch(&fc->coherent_fail, 1, __ATOMIC_RELAXED);
	if (slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_DISABLE))
		bad++;
	close(slice_self.fd);
	__atomic_add_fetch(&fc->bad, bad, __ATOMIC_RELAXED);
	__atomic_add_fetch(&fc->child_bad, child_bad, __ATOMIC_RELAXED);
	__atomic_add_fetch(&fc->granted, granted, __ATOMIC_RELAXED);
	return NULL;
}

TEST_F_TIMEOUT(churn, fork_storm, 600)
{
	struct fork_counts fc = { 0 };
	pthread_t th[FORK_THREADS];
	uint64_t start = now_ns();
	int i;

	NOISE_ON();
	for (i = 0; i < FORK_THREADS; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, fork_thread_fn, &fc));
	for (i = 0; i < FORK_THREADS; i++)
		pthread_join(th[i], NULL);
	ksft_print_msg("%d forks in %.1f s, %d grants in the parents\n", FORK_THREADS * FORKS_EACH,
		       (now_ns() - start) / 1e9, fc.granted);
	EXPECT_EQ(0, fc.bad);
	EXPECT_EQ(0, fc.child_bad);
	EXPECT_EQ(0, fc.coherent_fail);
	STATS_BACK();
}

/* --- exec storm ----------------------------------------------------------- */

#define EXECS	50

static void *exec_thread_fn(void *arg)
{
	static uint32_t word;

	/* Another thread than the leader: exec kills the leader (de_thread). */
	if (slice_enable_word((int)(long)arg, &word))
		_exit(21);
	execl("/proc/self/exe", "churn_exec", NULL);
	_exit(22);
}

TEST_F_TIMEOUT(churn, exec_storm, 600)
{
	int i, status, bad = 0, modes[3] = { 0 };
	uint64_t start = now_ns();
	pthread_t th;
	pid_t pid;

	ASSERT_EQ(0, slice_enable_self());
	for (i = 0; i < EXECS; i++) {
		/* Registered when exec comes: exec must drop it. */
		pid = slice_fork_enabled();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			setenv(EXEC_ENV, "1", 1);
			switch (i % 3) {
			case 0:
				execl("/proc/self/exe", "churn_exec", NULL);
				break;
			case 1:
				execl("/bin/true", "true", NULL);
				break;
			case 2:
				if (pthread_create(&th, NULL, exec_thread_fn,
						   (void *)(long)slice_self.fd))
					_exit(23);
				pthread_join(th, NULL);
				break;
			}
			_exit(24);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		modes[i % 3]++;
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			bad++;
			ksft_print_msg("exec child %d (mode %d): status %#x\n", i, i % 3, status);
		}
	}
	ksft_print_msg("%d fork+exec in %.1f s: %d of this binary, %d of /bin/true, "
		       "%d from a second thread\n", EXECS, (now_ns() - start) / 1e9,
		       modes[0], modes[1], modes[2]);
	EXPECT_EQ(0, bad);
	EXPECT_EQ(1, slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_GET));
	EXPECT_EQ(0, slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_DISABLE));
	STATS_BACK();
}

/* --- exit, execve and SIGKILL while granted ------------------------------- */

struct granted_slot {
	int granted;		/* the child saw GRANTED */
	int grants;		/* how many times (SIGKILL child) */
};

/*
 * A child on the test CPU (the noise thread's) that requests until it
 * sees GRANTED, then does @what at once: 0 exit_group, 1 execve, 2 spins
 * on (granted as often as it can) until killed. Exit code 2: no grant in
 * 60 s (a grant usually comes within milliseconds; a loaded host can
 * starve the guest for seconds).
 */
static pid_t granted_child(struct granted_slot *slot, int what)
{
	pid_t pid = fork();
	uint64_t end;

	if (pid)
		return pid;
	/* Fault the shared slot in now, not inside a grant. */
	__atomic_store_n(&slot->granted, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->grants, 0, __ATOMIC_RELAXED);
	if (pin_self(slice_test_cpu()) || slice_enable_self())
		_exit(20);
	end = rseq_slice_tsc_ns() + (what == 2 ? 3600000 * MS : 60000 * MS);
	while (rseq_slice_tsc_ns() < end) {
		uint32_t w = request_wait(&slice_self.ctrl, 10 * MS);

		if (!(w & RSEQ_SLICE_EXT_GRANTED))
			continue;
		__atomic_store_n(&slot->granted, 1, __ATOMIC_RELAXED);
		switch (what) {
		case 0:
			syscall(SYS_exit_group, 0);
			_exit(30);
		case 1:
			execl("/bin/true", "true", NULL);
			_exit(31);
		}
		__atomic_add_fetch(&slot->grants, 1, __ATOMIC_RELAXED);
		/* Stay in it until the kernel ends it, then ask again. */
		while (rseq_slice_word_load(&slice_self.ctrl) & RSEQ_SLICE_EXT_GRANTED)
			;
	}
	if (rseq_slice_word_end(&slice_self.ctrl, slice_self.fd) < 0)
		_exit(21);
	_exit(2);
}

struct granted_outcome {
	int exited0, segv, nogrant, other;
};

static void granted_storm(struct __test_metadata *_metadata, int what, int n,
			  struct granted_outcome *o)
{
	struct granted_slot *slots = map_shared(n * sizeof(*slots));
	int i, status;

	ASSERT_NE(NULL, slots);
	for (i = 0; i < n; i++) {
		pid_t pid = granted_child(&slots[i], what);

		ASSERT_LE(0, pid);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		if (WIFEXITED(status) && WEXITSTATUS(status) == 2 && !slots[i].granted) {
			o->nogrant++;
		} else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && slots[i].granted) {
			/* The grant ended before the call: the call ran. */
			o->exited0++;
		} else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV && slots[i].granted) {
			/* foreign_syscall=kill: the call ran, then SIGSEGV. */
			o->segv++;
		} else {
			o->other++;
			ksft_print_msg("child %d: status %#x, granted %d\n", i, status,
				       slots[i].granted);
		}
	}
	munmap(slots, n * sizeof(*slots));
}

/* @n children end while granted, by exit_group() or by execve(). */
static void granted_storm_check(struct __test_metadata *_metadata, int do_exec, int n,
				long long kill0)
{
	struct granted_outcome o = { 0 };

	granted_storm(_metadata, do_exec, n, &o);
	ksft_print_msg("%s while granted: %d exited, %d SIGSEGV, "
		       "%d never granted\n", do_exec ? "execve" : "exit_group",
		       o.exited0, o.segv, o.nogrant);
	/*
	 * Each SIGSEGV is one kill for a system call inside a grant. The
	 * killing call runs first: an execve() then delivers the pending
	 * SIGSEGV to the new program, an exit_group() exits before it.
	 */
	if (kill0 >= 0 && do_exec)
		EXPECT_EQ(o.segv, slice_stat("skill") - kill0);
	if (kill0 >= 0 && !do_exec)
		EXPECT_GE(o.exited0, slice_stat("skill") - kill0);
	EXPECT_EQ(0, o.other);
	EXPECT_LT(0, o.exited0 + o.segv);
}

TEST_F_TIMEOUT(churn, exit_while_granted, 600)
{
	SLICE_NEEDS_GRANTS();
	NOISE_ON();
	granted_storm_check(_metadata, 0, 50, self->kill0);
	STATS_BACK();
}

TEST_F_TIMEOUT(churn, execve_while_granted, 600)
{
	SLICE_NEEDS_GRANTS();
	NOISE_ON();
	granted_storm_check(_metadata, 1, 20, self->kill0);
	STATS_BACK();
}

#define KILLS	50

TEST_F_TIMEOUT(churn, sigkill_while_granted, 600)
{
	struct granted_slot *slots = map_shared(KILLS * sizeof(*slots));
	int i, status, granted = 0, bad = 0;
	uint64_t end;

	SLICE_NEEDS_GRANTS();
	ASSERT_NE(NULL, slots);
	NOISE_ON();
	for (i = 0; i < KILLS; i++) {
		pid_t pid = granted_child(&slots[i], 2);

		ASSERT_LE(0, pid);
		/* Kill it at a random moment after its first grant. */
		end = now_ns() + 60000 * MS;
		while (!__atomic_load_n(&slots[i].grants, __ATOMIC_RELAXED) && now_ns() < end)
			usleep(1000);
		usleep(rand() % 500);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		if (slots[i].grants)
			granted++;
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
			bad++;
			ksft_print_msg("child %d: status %#x\n", i, status);
		}
	}
	ksft_print_msg("%d of %d children granted before SIGKILL\n", granted, KILLS);
	EXPECT_EQ(0, bad);
	EXPECT_LT(0, granted);
	munmap(slots, KILLS * sizeof(*slots));
	STATS_BACK();
}

/* --- munmap and mprotect of a registered word ----------------------------- */

/*
 * Another thread on the owner's CPU changes the owner's page while the
 * owner spins with REQUEST set. It runs only once the owner is switched
 * out, and by then the kernel has answered the REQUEST (granted and
 * ended, or denied): both bits are clear in the pinned page.
 */
struct page_op {
	uint32_t *word;
	int op;			/* 0: munmap, 1: mprotect(PROT_READ) */
	volatile int ready, done;
	int ret;
};

static void *page_op_fn(void *arg)
{
	struct page_op *po = arg;

	pin_self(slice_test_cpu());
	while (!po->ready)
		sched_yield();
	po->ret = po->op ? mprotect(po->word, PG, PROT_READ) : munmap(po->word, PG);
	po->done = 1;
	return NULL;
}

/*
 * A fresh page whose first word is registered through @fd, and how many
 * grants it got (request_until_granted()) in *@granted.
 */
static uint32_t *granted_page(struct __test_metadata *_metadata, int fd, int *granted, int *bad)
{
	uint32_t *p = map_page();

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, slice_enable_word(fd, p));
	*granted = request_until_granted(p, fd, bad);
	return p;
}

/* The owner's side; returns the word's value seen after the change (mprotect). */
static int owner_with_page_op(struct page_op *po, uint32_t *after)
{
	pthread_t th;

	if (pthread_create(&th, NULL, page_op_fn, po))
		return -1;
	rseq_slice_word_store(po->word, RSEQ_SLICE_EXT_REQUEST);
	po->ready = 1;
	while (!po->done)
		;
	if (po->op)
		*after = rseq_slice_word_load(po->word);
	pthread_join(th, NULL);
	return po->ret;
}

TEST_F_TIMEOUT(churn, munmap_while_enabled, 300)
{
	int fd = slice_open(), bad = 0, granted, status;
	struct page_op po = { .op = 0 };
	pid_t pid;
	uint32_t *p, *q, after = 0;
	uint64_t end;

	SLICE_NEEDS_GRANTS();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pin_self(slice_test_cpu()));
	NOISE_ON();

	/* The owner unmaps its own word. */
	p = granted_page(_metadata, fd, &granted, &bad);
	ASSERT_EQ(0, munmap(p, PG));
	EXPECT_EQ(1, slice_ioctl(fd, RSEQ_SLICE_IOC_GET));
	/* New memory at the old address is not the registered page. */
	q = mmap(p, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		 -1, 0);
	if (q == p) {
		rseq_slice_word_store(q, RSEQ_SLICE_EXT_REQUEST);
		end = rseq_slice_tsc_ns() + 20 * MS;
		while (rseq_slice_tsc_ns() < end && rseq_slice_word_load(q) == RSEQ_SLICE_EXT_REQUEST)
			;
		EXPECT_EQ(RSEQ_SLICE_EXT_REQUEST, rseq_slice_word_load(q));
		rseq_slice_word_store(q, 0);
		munmap(q, PG);
	} else {
		ksft_print_msg("could not map the old address again: not checked\n");
	}
	/* Still running, still registered, and DISABLE lets the page go. */
	rseq_slice_busy_wait_ns(10 * MS);
	EXPECT_EQ(1, slice_ioctl(fd, RSEQ_SLICE_IOC_GET));
	EXPECT_EQ(0, slice_ioctl(fd, RSEQ_SLICE_IOC_YIELD));
	EXPECT_EQ(0, slice_ioctl(fd, RSEQ_SLICE_IOC_DISABLE));
	EXPECT_EQ(0, slice_ioctl(fd, RSEQ_SLICE_IOC_GET));

	/* Another thread unmaps it while the owner's REQUEST is pending. */
	po.word = map_page();
	ASSERT_NE(NULL, po.word);
	ASSERT_EQ(0, slice_enable_word(fd, po.word));
	ASSERT_EQ(0, owner_with_page_op(&po, &after));
	rseq_slice_busy_wait_ns(10 * MS);
	EXPECT_EQ(1, slice_ioctl(fd, RSEQ_SLICE_IOC_GET));
	EXPECT_EQ(0, slice_ioctl(fd, RSEQ_SLICE_IOC_DISABLE));
	EXPECT_EQ(0, slice_ioctl(fd, RSEQ_SLICE_IOC_GET));

	/* And a thread that exits with its word unmapped, without DISABLE. */
	p = map_page();
	ASSERT_NE(NULL, p);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (slice_enable_word(fd, p) || munmap(p, PG))
			_exit(1);
		rseq_slice_busy_wait_ns(5 * MS);
		_exit(slice_ioctl(fd, RSEQ_SLICE_IOC_GET) == 1 ? 0 : 2);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		TH_LOG("child status %#x", status);
	}
	munmap(p, PG);
	ksft_print_msg("%d grants before the munmap\n", granted);
	EXPECT_LT(0, granted);
	EXPECT_EQ(0, bad);
	close(fd);
	STATS_BACK();
}

TEST_F_TIMEOUT(churn, mprotect_readonly_while_enabled, 300)
{
	int fd = slice_open(), bad = 0, g1, g2, g3;
	struct page_op po = { .op = 1 };
	struct rseq_slice_info info;
	uint32_t *p, after = ~0U;

	SLICE_NEEDS_GRANTS();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pin_self(slice_test_cpu()));
	NOISE_ON();

	/* The owner makes its word read-only, keeps running, makes it writable. */
	p = granted_page(_metadata, fd, &g1, &bad);
	ASSERT_EQ(0, mprotect(p, PG, PROT_READ));
	rseq_slice_busy_wait_ns(20 * MS);
	EXPECT_EQ(0, rseq_slice_word_load(p));
	EXPECT_EQ(1, slice_ioctl(fd, RSEQ_SLICE_IOC_GET));
	EXPECT_EQ(0, slice_ioctl(fd, RSEQ_SLICE_IOC_YIELD));
	EXPECT_EQ(0, ioctl(fd, RSEQ_SLICE_IOC_INFO, &info));
	/*
	 * Registering it again re-validates the word: read-only memory is
	 * refused, and the registration it has stays as it was.
	 */
	EXPECT_EQ(-EFAULT, slice_enable_word(fd, p));
	EXPECT_EQ(1, slice_ioctl(fd, RSEQ_SLICE_IOC_GET));
	ASSERT_EQ(0, mprotect(p, PG, PROT_READ | PROT_WRITE));
	/* Writable again, and still the page the kernel pinned. */
	EXPECT_TRUE(answered(p, fd, &bad));
	g2 = request_until_granted(p, fd, &bad);
	EXPECT_EQ(0, slice_ioctl(fd, RSEQ_SLICE_IOC_DISABLE));
	/* Read-only memory cannot be registered. */
	ASSERT_EQ(0, mprotect(p, PG, PROT_READ));
	EXPECT_EQ(-EFAULT, slice_enable_word(fd, p));
	munmap(p, PG);

	/* Another thread makes it read-only while the owner's REQUEST is pending. */
	po.word = map_page();
	ASSERT_NE(NULL, po.word);
	ASSERT_EQ(0, slice_enable_word(fd, po.word));
	ASSERT_EQ(0, owner_with_page_op(&po, &after));
	/* The kernel answered the REQUEST before the owner was switched out. */
	EXPECT_EQ(0, after);
	EXPECT_EQ(1, slice_ioctl(fd, RSEQ_SLICE_IOC_GET));
	ASSERT_EQ(0, mprotect(po.word, PG, PROT_READ | PROT_WRITE));
	EXPECT_TRUE(answered(po.word, fd, &bad));
	g3 = request_until_granted(po.word, fd, &bad);
	EXPECT_EQ(0, slice_ioctl(fd, RSEQ_SLICE_IOC_DISABLE));
	munmap(po.word, PG);

	ksft_print_msg("grants: %d before mprotect, %d after, %d after the other thread's\n",
		       g1, g2, g3);
	/* The word was granted on before and after each change. */
	EXPECT_LT(0, g1);
	EXPECT_LT(0, g2);
	EXPECT_LT(0, g3);
	EXPECT_EQ(0, bad);
	close(fd);
	STATS_BACK();
}

/* --- two threads, one word ------------------------------------------------ */

/*
 * Registrations are per thread (module/task.c keys them by task and checks
 * only the caller's own): a second thread registering the same word gets
 * 0, and the page is pinned once per registration. Sharing a word breaks
 * the protocol for both (one's REQUEST store can hide the other's
 * GRANTED), so a thread may then be killed for a system call inside a
 * grant it never saw; the kernel must not mind.
 */
struct same_word {
	uint32_t *word;
	int fd;
	pthread_barrier_t bar;
	int ret[2], get[2], disable[2];
	uint64_t run_ns;
	int granted;
};

/*
 * On a shared word, with a system call after every section that was not
 * granted as far as this thread can tell: when the other thread's REQUEST
 * store hid a grant, that call is foreign, and the kill the test expects
 * now and then.
 */
static int shared_sections(uint32_t *w, int fd, uint64_t ns, int *bad)
{
	return sections_for(w, fd, ns, bad, true);
}

static void *same_word_fn(void *arg)
{
	struct same_word *sw = arg;
	static int next;
	int me = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) & 1, bad = 0;

	sw->ret[me] = slice_enable_word(sw->fd, sw->word);
	sw->get[me] = slice_ioctl(sw->fd, RSEQ_SLICE_IOC_GET);
	pthread_barrier_wait(&sw->bar);	/* both registered */
	if (sw->run_ns)
		__atomic_add_fetch(&sw->granted, shared_sections(sw->word, sw->fd, sw->run_ns, &bad),
				   __ATOMIC_RELAXED);
	pthread_barrier_wait(&sw->bar);	/* counted by the main thread */
	pthread_barrier_wait(&sw->bar);
	sw->disable[me] = slice_ioctl(sw->fd, RSEQ_SLICE_IOC_DISABLE);
	return NULL;
}

#define SHARED_CHILDREN	10

/*
 * A word two threads share is one REQUEST for both: the kernel grants
 * whichever of them an interrupt with a reschedule pending returns to.
 * The lender sets REQUEST again whenever the word is clear, on the other
 * CPU, where nothing asks for a reschedule, and makes no system call;
 * the borrower, never in a section, runs beside the noise on the test
 * CPU, watches the word and makes a system call as soon as it reads
 * GRANTED (or after 1 ms without). An interrupt that granted it on the
 * lender's REQUEST makes that call foreign: SIGSEGV under
 * foreign_syscall=kill. Unlike two threads requesting at once, this needs
 * no two vCPUs running at the same instant, so single-threaded emulation
 * reaches it too.
 *
 * The call is made at the sight of the grant, not on a clock: the timer
 * ends a grant itself, and on a loaded host a debug kernel's way out and
 * back in can outlast the 30 us a user cannot raise (a borrower calling
 * every 5 us went 100504 calls unkilled in one CI run).
 */
struct lent_word {
	uint32_t *word;
	int fd;
	volatile unsigned long calls;	/* the borrower's, shared with the parent */
	volatile unsigned long seen;	/* of them, made on a GRANTED word */
	int ret[2];
};

static void *lender_fn(void *arg)
{
	struct lent_word *lw = arg;

	pin_self(!slice_test_cpu());
	lw->ret[0] = slice_enable_word(lw->fd, lw->word);
	for (;;)	/* until the borrower's kill ends the process */
		if (!rseq_slice_word_load(lw->word))
			rseq_slice_word_store(lw->word, RSEQ_SLICE_EXT_REQUEST);
	return NULL;
}

/* Child: exits 0 if it was not killed within 60 s. */
static void borrower_child(struct lent_word *lw)
{
	uint64_t end, watch;
	pthread_t th;
	uint32_t w;

	pin_self(slice_test_cpu());
	rseq_slice_tsc_calibrate(0);
	lw->ret[1] = slice_enable_word(lw->fd, lw->word);
	if (lw->ret[1] || pthread_create(&th, NULL, lender_fn, lw))
		_exit(21);
	end = rseq_slice_tsc_ns() + 60000 * MS;
	while (rseq_slice_tsc_ns() < end) {
		watch = rseq_slice_tsc_ns() + MS;
		do
			w = rseq_slice_word_load(lw->word);
		while (!(w & RSEQ_SLICE_EXT_GRANTED) && rseq_slice_tsc_ns() < watch);
		lw->seen += !!(w & RSEQ_SLICE_EXT_GRANTED);
		lw->calls++;
		syscall(SYS_getppid);
	}
	_exit(0);
}

TEST_F_TIMEOUT(churn, two_threads_same_word, 900)
{
	struct same_word sw = { .fd = slice_open() };
	long long t1 = -1, p1 = -1, kill0;
	struct lent_word *lw;
	pthread_t th[2];
	int i, status, segv = 0, clean = 0;
	char fs[16];
	pid_t pid;

	SLICE_NEEDS_GRANTS();
	ASSERT_LE(0, sw.fd);
	sw.word = map_page();
	ASSERT_NE(NULL, sw.word);
	ASSERT_EQ(0, pthread_barrier_init(&sw.bar, NULL, 3));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, same_word_fn, &sw));
	pthread_barrier_wait(&sw.bar);
	pthread_barrier_wait(&sw.bar);
	if (self->threads0 >= 0) {
		uint64_t end = now_ns() + 60000 * MS;

		while ((t1 = slice_stat("threads")) != self->threads0 + 2 && now_ns() < end)
			usleep(10000);
		p1 = slice_stat("pinned");
	}
	pthread_barrier_wait(&sw.bar);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	EXPECT_EQ(0, sw.ret[0]);
	EXPECT_EQ(0, sw.ret[1]);
	EXPECT_EQ(1, sw.get[0]);
	EXPECT_EQ(1, sw.get[1]);
	EXPECT_EQ(0, sw.disable[0]);
	EXPECT_EQ(0, sw.disable[1]);
	if (self->threads0 >= 0) {
		EXPECT_EQ(self->threads0 + 2, t1);
		EXPECT_EQ(self->pinned0 + 2, p1);
	}

	/*
	 * Both use it at once, on one CPU and on two, in children: each ends
	 * cleanly, or is killed when one thread's REQUEST store hid the
	 * other's grant (that needs the two inside one grant at the same
	 * instant, which single-threaded emulation does not give: counted,
	 * not required).
	 */
	NOISE_ON();
	for (i = 0; i < SHARED_CHILDREN; i++) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			sw.run_ns = 50 * MS;
			if (i & 1)
				pin_self(slice_test_cpu());
			pthread_barrier_destroy(&sw.bar);
			/* No main thread at the barriers here: two parties. */
			pthread_barrier_init(&sw.bar, NULL, 2);
			if (pthread_create(&th[0], NULL, same_word_fn, &sw) ||
			    pthread_create(&th[1], NULL, same_word_fn, &sw))
				_exit(20);
			pthread_join(th[0], NULL);
			pthread_join(th[1], NULL);
			_exit(sw.ret[0] || sw.ret[1] ? 21 : 0);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
			segv++;
		else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			clean++;
		else
			EXPECT_EQ(0, status);
	}
	ksft_print_msg("shared word, both requesting: %d clean, %d killed (SIGSEGV)\n",
		       clean, segv);

	/* One thread granted on the other's REQUEST: the kill is required. */
	ASSERT_EQ(0, slice_param_get("foreign_syscall", fs, sizeof(fs)));
	ASSERT_STREQ("kill", fs);
	lw = map_shared(sizeof(*lw));
	ASSERT_NE(NULL, lw);
	lw->word = sw.word;
	lw->fd = sw.fd;
	kill0 = slice_stat("skill");
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		borrower_child(lw);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ksft_print_msg("shared word, one lending its REQUEST: %s after %lu calls, %lu on a grant\n",
		       WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "not killed",
		       lw->calls, lw->seen);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) {
		TH_LOG("the borrower ended with status %#x (21: ENABLE failed)", status);
	}
	if (kill0 >= 0)
		EXPECT_LT(kill0, slice_stat("skill"));
	munmap(lw, sizeof(*lw));
	munmap(sw.word, PG);
	close(sw.fd);
	STATS_BACK();
}

TEST_HARNESS_MAIN
