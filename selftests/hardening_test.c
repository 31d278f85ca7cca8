// SPDX-License-Identifier: GPL-2.0
/*
 * What real programs do around a critical section, and what the module
 * must get right for them (docs/design.md, "Semantics" 3, 5, 6 and "Decisions"):
 * signals while REQUEST is set (profilers, runtimes), REQUEST cleared by
 * every switch-out, tracers and seccomp seeing every call as made, a
 * registration whose page was replaced, and the yield through another
 * descriptor of the device.
 *
 * Every test that needs an event (a signal landing in a section, a
 * switch while REQUEST is set, a grant) runs until it has seen it enough
 * times, within a generous bound, so that a loaded host cannot turn it
 * red; the bound failing is a failure, never a pass.
 */
#include "slice_util.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/time.h>
#include <sys/user.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <elf.h>

#include "kselftest_harness.h"

#define MS		1000000ULL
/* The bound on waiting for enough events, and on any one wait. */
#define EVENT_BOUND_NS	(240000 * MS)
/* The page size: 4 KB, or 16 KB (Debian's arm64-16k kernel), 64 KB. */
#define PG		((size_t)sysconf(_SC_PAGESIZE))
#define PG_MAX		65536

/* Request until granted, within the bound: true if the thread holds one. */
static bool get_grant(uint32_t *w)
{
	uint64_t end = rseq_slice_tsc_ns() + EVENT_BOUND_NS;

	while (rseq_slice_tsc_ns() < end) {
		if (request_wait(w, 200 * MS) == RSEQ_SLICE_EXT_GRANTED)
			return true;
	}
	/* REQUEST may still be set: a plain store could hide a late grant. */
	rseq_slice_word_end(w, slice_self.fd);
	return false;
}

/*
 * Tests without state of their own: a fixture only for the longer
 * timeout (TEST() has the harness's 30 s). Whatever a test sets is put
 * back here, even when an assertion ended it early.
 */
FIXTURE(hard)
{
	struct slice_params params;
};

FIXTURE_SETUP(hard)
{
	SLICE_ONLY_FILTER();
	ASSERT_EQ(0, slice_params_save(&self->params));
	rseq_slice_tsc_calibrate(0);
}

FIXTURE_TEARDOWN(hard)
{
	if (is_root())
		syscall(SYS_delete_module, "ipmodify_hog", O_NONBLOCK);
	slice_params_restore(&self->params);
}

/* --- signals while REQUEST is set ---------------------------------------- */

/*
 * A thread in a begin/spin/end loop takes a timer signal every 1 ms. The
 * handler is not the critical section: it must find REQUEST and GRANTED
 * clear, and it returns at once if it ever sees GRANTED (a handler that
 * was granted would end with rt_sigreturn, a foreign call). Under the
 * default foreign_syscall=kill a grant given to a handler kills the
 * process; the test runs in a child and checks it survives.
 */
/*
 * Yields a signal storm must see beside its signals: 20, or 1 on a KASAN
 * kernel (run_suite sets RSEQ_SLICE_SLOW_KERNEL), where 240 s gave 9 on
 * a loaded host. Any one shows grants working among the signals; the
 * handler's view of the word is the rule under test. On PREEMPT_RT none:
 * there a grant defers only the tick's lazy request, and a 1 kHz storm
 * leaves it none to defer. SIGALRM's timer expires in ktimers, whose
 * wakeups (a full reschedule every millisecond) hand the CPU to the noise
 * before the tick asks for it; ITIMER_PROF's signal is the tick's own
 * task work, other exit work at the very return the tick asks at, which
 * denies the grant (6.12-rt: 0 yields in 21 and 22 million sections).
 */
static unsigned long storm_yields(void)
{
	if (slice_kernel_rt())
		return 0;
	return getenv("RSEQ_SLICE_SLOW_KERNEL") ? 1 : 20;
}

struct sig_counts {
	unsigned long signals, req_in_handler, grant_in_handler;
	unsigned long ends[RSEQ_SLICE_END_RACED + 1];	/* by RSEQ_SLICE_END_* */
	unsigned long sections;
};

static struct sig_counts *sigc;

static void sig_handler(int sig)
{
	uint64_t end = rseq_slice_tsc_ns() + 20000;
	uint32_t w = slice_word();

	sigc->signals++;
	if (w & RSEQ_SLICE_EXT_REQUEST)
		sigc->req_in_handler++;
	/* Spin a little, as a profiler's handler does: a grant would show. */
	while (rseq_slice_tsc_ns() < end) {
		if (slice_word() & RSEQ_SLICE_EXT_GRANTED) {
			sigc->grant_in_handler++;
			return;
		}
	}
}

static int sig_child(int which, struct sig_counts *c)
{
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	int sig = which == ITIMER_PROF ? SIGPROF : SIGALRM;
	uint64_t end = rseq_slice_tsc_ns() + EVENT_BOUND_NS;
	unsigned long yields = storm_yields();
	struct sigaction sa = { .sa_handler = sig_handler };
	struct noise noise;
	sigset_t set;

	sigc = c;
	if (pin_self(slice_test_cpu()) || slice_enable_self())
		return 20;
	/* The noise thread inherits a mask that keeps the signal off it. */
	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (noise_start(&noise, slice_test_cpu(), 2000, 50000))
		return 21;
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	sigaction(sig, &sa, NULL);
	if (setitimer(which, &it, NULL))
		return 22;
	/* Enough signals inside sections, and grants alongside them. */
	while ((c->signals < 2000 || c->ends[RSEQ_SLICE_END_YIELDED] < yields) &&
	       rseq_slice_tsc_ns() < end) {
		int r;

		rseq_slice_begin(&slice_self);
		rseq_slice_busy_wait_ns(5000);
		r = rseq_slice_end(&slice_self);
		if (r < 0 || r > RSEQ_SLICE_END_RACED)
			return 23;
		c->ends[r]++;
		c->sections++;
	}
	it = (struct itimerval){ };
	setitimer(which, &it, NULL);
	noise_stop(&noise);
	return 0;
}

static void signal_storm(struct __test_metadata *_metadata, int which)
{
	struct sig_counts *c = mmap(NULL, PG, PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int status;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, c);
	rseq_slice_tsc_calibrate(0);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(sig_child(which, c));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ksft_print_msg("%lu signals, %lu sections: %lu success, %lu scheduled, %lu yielded, %lu raced; handler saw REQUEST %lu, GRANTED %lu\n",
		       c->signals, c->sections, c->ends[RSEQ_SLICE_END_SUCCESS],
		       c->ends[RSEQ_SLICE_END_SCHEDULED], c->ends[RSEQ_SLICE_END_YIELDED],
		       c->ends[RSEQ_SLICE_END_RACED], c->req_in_handler, c->grant_in_handler);
	ASSERT_TRUE(WIFEXITED(status)) {
		TH_LOG("the program died: status %#x (signal %d)", status,
		       WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	}
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, c->req_in_handler);
	EXPECT_EQ(0, c->grant_in_handler);
	EXPECT_LE(2000, c->signals);
	EXPECT_LE(storm_yields(), c->ends[RSEQ_SLICE_END_YIELDED]);
	EXPECT_EQ(c->sections, c->ends[RSEQ_SLICE_END_SUCCESS] + c->ends[RSEQ_SLICE_END_SCHEDULED] +
		  c->ends[RSEQ_SLICE_END_YIELDED] + c->ends[RSEQ_SLICE_END_RACED]);
	munmap(c, PG);
}

TEST_F_TIMEOUT(hard, sigalrm_1khz_in_sections, 420)
{
	signal_storm(_metadata, ITIMER_REAL);
}

TEST_F_TIMEOUT(hard, itimer_prof_1khz_in_sections, 420)
{
	signal_storm(_metadata, ITIMER_PROF);
}

/* --- REQUEST cleared by every switch-out -------------------------------- */

/*
 * A witness thread on the same CPU counts its runs. If its count moved
 * while this thread had REQUEST set (both reads after the store, in
 * program order on this CPU), this thread was switched out in between,
 * and the kernel must have cleared REQUEST.
 */
struct witness {
	pthread_t thread;
	volatile bool stop;
	volatile unsigned long runs;
	int mode;		/* 0: wake every 50 us; 1: read a pipe */
	int pipefd[2];
};

static void *witness_fn(void *arg)
{
	struct witness *w = arg;
	struct timespec ts = { .tv_nsec = 50000 };
	char c;

	pin_self(slice_test_cpu());
	while (!w->stop) {
		if (w->mode == 1) {
			if (read(w->pipefd[0], &c, 1) != 1)
				break;
		} else {
			nanosleep(&ts, NULL);
		}
		w->runs++;
	}
	return NULL;
}

static int witness_start(struct witness *w, int mode)
{
	w->stop = false;
	w->runs = 0;
	w->mode = mode;
	if (mode == 1 && pipe(w->pipefd))
		return -1;
	return pthread_create(&w->thread, NULL, witness_fn, w);
}

static void witness_stop(struct witness *w)
{
	w->stop = true;
	if (w->mode == 1 && write(w->pipefd[1], "q", 1) != 1)
		return;
	pthread_join(w->thread, NULL);
	if (w->mode == 1) {
		close(w->pipefd[0]);
		close(w->pipefd[1]);
	}
}

/*
 * An interrupt may grant in the instructions between the store of
 * REQUEST and the system call; the call is then foreign, and under kill
 * it runs and SIGSEGV follows. Such rounds are caught and not counted.
 */
static volatile int foreign_kills;

static void count_kill(int sig)
{
	foreign_kills++;
}

/* A GRANTED seen (an interrupt came first): end it by the protocol. */
static void drop_grant(void)
{
	rseq_slice_word_end(&slice_self.ctrl, slice_self.fd);
}

FIXTURE(switchout)
{
	struct witness w;
	char *buf;
	int zero;
};

FIXTURE_SETUP(switchout)
{
	struct sigaction sa = { .sa_handler = count_kill };

	ASSERT_EQ(0, sigaction(SIGSEGV, &sa, NULL));
	ASSERT_EQ(0, pin_self(slice_test_cpu()));
	ASSERT_EQ(0, slice_enable_self());
	self->buf = malloc(1 << 20);
	ASSERT_NE(NULL, self->buf);
	self->zero = open("/dev/zero", O_RDONLY);
	ASSERT_LE(0, self->zero);
	rseq_slice_tsc_calibrate(0);
}

FIXTURE_TEARDOWN(switchout)
{
	slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_DISABLE);
	close(self->zero);
	free(self->buf);
}

/*
 * Rounds of @call with REQUEST set, until 50 of them were switched out
 * (the witness ran meanwhile, and no SIGSEGV came): REQUEST must be clear
 * after every one of those. @pause_ns of spinning before each round.
 */
static void switchout_rounds(struct __test_metadata *_metadata, FIXTURE_DATA(switchout) *self,
			     int witness_mode, uint64_t pause_ns,
			     bool (*call)(FIXTURE_DATA(switchout) *self), const char *what)
{
	uint64_t end = rseq_slice_tsc_ns() + EVENT_BOUND_NS;
	int switched = 0, kept = 0, rounds = 0;

	ASSERT_EQ(0, witness_start(&self->w, witness_mode));
	while (switched < 50 && rseq_slice_tsc_ns() < end) {
		int k = foreign_kills;
		unsigned long r0, r1;
		uint32_t v;

		rseq_slice_busy_wait_ns(pause_ns);
		rseq_slice_word_request(&slice_self.ctrl);
		r0 = self->w.runs;
		if (!call(self))
			break;
		r1 = self->w.runs;
		v = slice_word();
		rounds++;
		if (r1 != r0 && k == foreign_kills) {
			switched++;
			if (v & RSEQ_SLICE_EXT_REQUEST)
				kept++;
		}
		drop_grant();
	}
	witness_stop(&self->w);
	ksft_print_msg("%d %s, %d switched out with REQUEST set, %d kept it\n",
		       rounds, what, switched, kept);
	EXPECT_LE(50, switched);
	EXPECT_EQ(0, kept);
}

/* A caught SIGSEGV (see count_kill()) may cut the call short. */
static bool read_zero(FIXTURE_DATA(switchout) *self)
{
	return read(self->zero, self->buf, 1 << 20) >= 0 || errno == EINTR;
}

static bool wake_reader(FIXTURE_DATA(switchout) *self)
{
	return write(self->w.pipefd[1], "x", 1) == 1 || errno == EINTR;
}

/*
 * A long system call with REQUEST set: read() of /dev/zero clears 1 MB
 * in the kernel, with a witness waking every 50 us on this CPU. The
 * thread is preempted inside the call (preempt=full), at its resched
 * points (voluntary) or on its return (none): each is a switch-out.
 */
TEST_F_TIMEOUT(switchout, in_kernel_work, 420)
{
	switchout_rounds(_metadata, self, 0, 0, read_zero, "calls");
}

/*
 * A system call whose return reschedules: write() wakes a reader on this
 * CPU, which then runs before write() returns to user space (on the
 * call's way out, or inside it on preemptible kernels). Each round first
 * lets the reader block in read() again.
 */
TEST_F_TIMEOUT(switchout, wakeup_on_syscall_return, 420)
{
	switchout_rounds(_metadata, self, 1, 200000, wake_reader, "writes");
}

/*
 * A page fault that blocks: the page is registered with userfaultfd (user
 * faults only, which needs no privilege), and a handler thread on the
 * other CPU resolves each fault. The witness of a switch-out is the
 * faulting thread's voluntary context switch count, read by the handler
 * before the round (while the thread spins in user space, where it cannot
 * switch voluntarily) and again before it resolves the fault: if it rose,
 * the thread slept in the fault, and REQUEST must be clear when it is
 * back. A fault resolved before the thread reached schedule() does not
 * count.
 */
struct uffd_ctx {
	int uffd;
	char *area;
	size_t len;
	pid_t tid;			/* the faulting thread */
	volatile long ready;		/* round the thread is ready for */
	volatile long armed;		/* round the handler has a count for */
	volatile long slept;		/* last round it saw the thread sleep */
	volatile bool stop;
};

static long vcsw(pid_t tid)
{
	char path[64], line[128];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

static void *uffd_fn(void *arg)
{
	struct uffd_ctx *u = arg;
	static char page[PG_MAX] __attribute__((aligned(PG_MAX)));
	long round = 0, c0 = 0;

	pin_self(0);
	while (!u->stop) {
		struct pollfd pfd = { .fd = u->uffd, .events = POLLIN };
		struct uffdio_copy copy;
		struct uffd_msg msg;

		if (u->ready != round) {
			/* The thread spins in user space until armed. */
			if (u->ready == round + 1) {
				round++;
				c0 = vcsw(u->tid);
				u->armed = round;
			}
			continue;
		}
		if (poll(&pfd, 1, 10) <= 0)
			continue;
		if (read(u->uffd, &msg, sizeof(msg)) != sizeof(msg) ||
		    msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		copy = (struct uffdio_copy){
			.dst = msg.arg.pagefault.address & ~(PG - 1ULL),
			.src = (uintptr_t)page,
			.len = PG,
		};
		{
			uint64_t end = now_ns() + 1000 * MS;

			while (vcsw(u->tid) <= c0 && now_ns() < end)
				;
			if (vcsw(u->tid) > c0)
				u->slept = round;
		}
		ioctl(u->uffd, UFFDIO_COPY, &copy);
	}
	return NULL;
}

/*
 * A missing-pages userfaultfd over @u->len bytes, and its handler on CPU
 * 0. Returns 0, or the errno that keeps userfaultfd from this kernel.
 */
static int uffd_start(struct __test_metadata *_metadata, struct uffd_ctx *u, pthread_t *t)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;

	/* Non-blocking: poll() can report a fault that read() then misses. */
	u->uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (u->uffd < 0)
		u->uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (u->uffd < 0)
		return errno;
	EXPECT_EQ(0, ioctl(u->uffd, UFFDIO_API, &api));
	u->area = mmap(NULL, u->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT_NE(MAP_FAILED, u->area);
	reg = (struct uffdio_register){
		.range = { .start = (uintptr_t)u->area, .len = u->len },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	EXPECT_EQ(0, ioctl(u->uffd, UFFDIO_REGISTER, &reg));
	u->tid = syscall(SYS_gettid);
	EXPECT_EQ(0, pthread_create(t, NULL, uffd_fn, u));
	return 0;
}

static void uffd_stop(struct uffd_ctx *u, pthread_t t)
{
	u->stop = true;
	pthread_join(t, NULL);
	close(u->uffd);
	munmap(u->area, u->len);
}

/* Round @round's page may be touched once this returns. */
static void uffd_arm(struct uffd_ctx *u, long round)
{
	u->ready = round;
	while (u->armed != round)
		;
}

TEST_F_TIMEOUT(switchout, blocking_page_fault, 420)
{
	struct uffd_ctx u = { .len = 256 * PG };
	int faults = 0, kept = 0, err;
	pthread_t t;
	size_t i;

	err = uffd_start(_metadata, &u, &t);
	if (err)
		SKIP(return, "userfaultfd: %s", strerror(err));
	ASSERT_TRUE(_metadata->passed);

	for (i = 0; i < u.len / PG; i++) {
		long round = (long)i + 1;
		uint32_t v;

		uffd_arm(&u, round);
		rseq_slice_word_store(&slice_self.ctrl, RSEQ_SLICE_EXT_REQUEST);
		(void)*(volatile char *)(u.area + i * PG);
		v = slice_word();
		if (u.slept == round) {
			faults++;
			if (v & RSEQ_SLICE_EXT_REQUEST)
				kept++;
		}
		drop_grant();
	}
	uffd_stop(&u, t);
	ksft_print_msg("%d faults slept with REQUEST set, %d kept it\n", faults, kept);
	EXPECT_LE(100, faults);
	EXPECT_EQ(0, kept);
}

/*
 * The same blocking fault, taken inside a grant: a holder that sleeps in
 * the kernel is switched out, and that switch ends its grant (a revoke,
 * no expiry), before the CPU runs anything else. The grants come from a
 * noise thread's reschedules on this CPU, 50 us long (the longest); a
 * round whose grant expired before the fault slept (sexpir moved) tells
 * nothing and is not counted. On the host's clock under emulation that is
 * nearly every round (one in 200 to 300 slept with its grant live, seen
 * on 6.1), so rounds go on, one page faulted again and again, until a few
 * did. Those must come back with the grant ended by a revoke and not
 * expired. Without the end at the switch the grant outlives it: its timer
 * ends it later, while the thread sleeps (sexpir moves: the round does
 * not count), or the thread comes back still GRANTED (seen: 31 and 37
 * times in such runs, against 0 with the switch's end; those runs also
 * had 5 and 3 grants revoked by an interrupt between GRANTED and the
 * touch, so a count of revokes alone would not tell). Statistics are read
 * outside the grant (a read is a system call), so each round's deltas
 * hold exactly its one grant. Where run_suite says such rounds are rarer
 * still (RSEQ_SLICE_SLOW_FAULTS: PREEMPT_RT, where 6.1-arm64-rt had one
 * in 16795 rounds; RSEQ_SLICE_SLOW_KERNEL: KASAN), one is enough, and
 * none within a minute is a skip there.
 */
#define LIVE_AT_SLEEP_WANT	5

TEST_F_TIMEOUT(switchout, blocking_page_fault_ends_grant, 420)
{
	/* run_suite says when the kernel is a slow (KASAN) or an RT one. */
	bool slow = getenv("RSEQ_SLICE_SLOW_KERNEL") || getenv("RSEQ_SLICE_SLOW_FAULTS");
	uint64_t end = rseq_slice_tsc_ns() + (slow ? 60000 * MS : EVENT_BOUND_NS);
	int want = slow ? 1 : LIVE_AT_SLEEP_WANT;
	struct uffd_ctx u = { .len = 64 * PG };
	int slept = 0, expired = 0, at_switch = 0, ran_on = 0, err;
	struct slice_params params;
	struct noise noise;
	long round = 0;
	pthread_t t;

	SLICE_NEEDS_GRANTS();
	if (!is_root())
		SKIP(return, "the statistics are root's");
	ASSERT_EQ(0, slice_params_save(&params));
	ASSERT_EQ(0, slice_param_set("grant_ns", "50000"));
	err = uffd_start(_metadata, &u, &t);
	if (err) {
		slice_params_restore(&params);
		SKIP(return, "userfaultfd: %s", strerror(err));
	}
	ASSERT_TRUE(_metadata->passed);
	ASSERT_EQ(0, noise_start(&noise, slice_test_cpu(), 2000, 50000));

	while (at_switch + ran_on < want && rseq_slice_tsc_ns() < end) {
		long long e0 = slice_stat("sexpir"), r0 = slice_stat("srevok");
		char *page = u.area + (round % 64) * PG;
		uint32_t v;

		/* Missing again: the next touch faults to the handler. */
		ASSERT_EQ(0, madvise(page, PG, MADV_DONTNEED));
		uffd_arm(&u, ++round);
		if (request_wait(&slice_self.ctrl, 200 * MS) != RSEQ_SLICE_EXT_GRANTED) {
			drop_grant();
			continue;
		}
		(void)*(volatile char *)page;
		v = slice_word();
		drop_grant();
		if (u.slept != round)
			continue;
		slept++;
		if (v & RSEQ_SLICE_EXT_GRANTED)
			ran_on++;
		else if (slice_stat("sexpir") != e0)
			expired++;
		else if (slice_stat("srevok") == r0 + 1)
			at_switch++;
	}
	noise_stop(&noise);
	uffd_stop(&u, t);
	slice_params_restore(&params);
	ksft_print_msg("%ld rounds, %d granted ones slept in the fault: %d revoked without expiring, %d expired first, %d came back granted\n",
		       round, slept, at_switch, expired, ran_on);
	EXPECT_EQ(0, ran_on);
	/*
	 * On a slow (KASAN) or RT kernel the fault's way to its sleep may
	 * outlast every grant: nothing to tell then, which run_suite allows
	 * there.
	 */
	if (slow && !at_switch && !ran_on)
		SKIP(return, "no grant was live when the fault slept (%s kernel)",
		     getenv("RSEQ_SLICE_SLOW_FAULTS") ? "an RT" : "a slow");
	EXPECT_LE(want, at_switch + ran_on);
}

/* --- tracers and seccomp see the call as made ---------------------------- */

/*
 * A child that is granted and then makes one foreign call, getppid():
 * what the tracer, the filter and the parent then see. Returns the
 * child's wait status. @setup runs in the child before the grant.
 */
struct foreign_seen {
	volatile int granted;
	volatile long ret;
	volatile int err;
};

/*
 * A child's first store to the shared page faults (fork does not copy a
 * shared mapping's entries): make it before the grant, or the fault's
 * time under emulation outlasts the grant before its call.
 */
static void prefault(struct foreign_seen *s)
{
	s->granted = 0;
	s->ret = 0;
	s->err = 0;
}

static pid_t foreign_child(struct foreign_seen *s, int (*setup)(void), bool traced)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	prefault(s);
	if (traced) {
		if (ptrace(PTRACE_TRACEME, 0, 0, 0))
			_exit(40);
		raise(SIGSTOP);
	}
	if (pin_self(slice_test_cpu()) || slice_enable_self())
		_exit(41);
	{
		struct noise n;

		if (noise_start(&n, slice_test_cpu(), 2000, 50000))
			_exit(42);
		if (setup && setup())
			_exit(43);
		if (!get_grant(&slice_self.ctrl))
			_exit(44);
		s->granted = 1;
		s->ret = syscall(SYS_getppid);
		s->err = errno;
		_exit(0);
	}
}

static int strict_mode(void)
{
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT);
}

/* Install the seccomp filter @f of @len instructions: 0 or -1. */
static int install_filter(struct sock_filter *f, unsigned short len)
{
	struct sock_fprog prog = { .len = len, .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* getppid() fails with errno 77: only a filter that saw the call does it. */
static int getppid_filter(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 77),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};

	return install_filter(f, sizeof(f) / sizeof(f[0]));
}

/* A page the parent shares with its children, or NULL. */
static void *shared_page(void)
{
	void *p = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static bool foreign_is(const char *mode)
{
	char buf[16];

	return !slice_param_get("foreign_syscall", buf, sizeof(buf)) && !strcmp(buf, mode);
}

/*
 * Strict seccomp allows getppid()? No: it allows only read, write, exit
 * and sigreturn, so it kills on getppid() whatever the module does. The
 * call it must see is write(): with the old rewrite of the call number
 * to -1, strict mode SIGKILLed instead of letting the write run.
 */
/* Strict mode turns the TSC off (TIF_NOTSC): wait for a grant by counting. */
static bool get_grant_counting(uint32_t *w)
{
	long i, tries;

	for (tries = 0; tries < 100000; tries++) {
		rseq_slice_word_store(w, RSEQ_SLICE_EXT_REQUEST);
		for (i = 0; i < 10000000 && rseq_slice_word_load(w) == RSEQ_SLICE_EXT_REQUEST; i++)
			;
		if (rseq_slice_word_load(w) == RSEQ_SLICE_EXT_GRANTED)
			return true;
	}
	rseq_slice_word_store(w, 0);
	return false;
}

static pid_t strict_child(struct foreign_seen *s, int fd)
{
	pid_t pid = fork();
	struct noise n;

	if (pid)
		return pid;
	prefault(s);
	if (pin_self(slice_test_cpu()) || slice_enable_self())
		_exit(41);
	if (noise_start(&n, slice_test_cpu(), 2000, 50000))
		_exit(42);
	if (strict_mode())
		_exit(43);
	if (get_grant_counting(&slice_self.ctrl))
		s->granted = 1;
	if (s->granted)
		s->ret = write(fd, "x", 1);
	/*
	 * Strict mode allows this thread only read, write, exit and
	 * sigreturn: it exits alone, and the noise thread, told to stop,
	 * ends the process.
	 */
	n.stop = true;
	syscall(SYS_exit, 0);
	_exit(45);
}

/*
 * Under emulation a grant can end (its timer, a tick) between the thread
 * seeing GRANTED and its call reaching the kernel; the call is then not
 * foreign. The tests below run their child until the call hit a live
 * grant (under kill, the child died of SIGSEGV; under abort, sabort
 * rose), within the bound: a fixed number of tries was not enough for a
 * loaded host (100 missed on 6.12-arm64 in CI, where 1 to 54 usually
 * do). As root they also give the grant its longest time.
 */
static uint64_t foreign_begin(void)
{
	if (is_root())
		slice_param_set_longest_grant();
	return now_ns() + EVENT_BOUND_NS;
}

static bool kill_mode_or_skip(void)
{
	if (is_root())
		return slice_param_set("foreign_syscall", "kill") == 0;
	return foreign_is("kill");
}

TEST_F_TIMEOUT(hard, seccomp_strict_sees_the_call, 600)
{
	struct foreign_seen *s = shared_page();
	int p[2], status = 0, n = 0, i;
	uint64_t end;

	SLICE_NEEDS_GRANTS();
	if (!kill_mode_or_skip())
		SKIP(return, "foreign_syscall is not kill");
	ASSERT_NE(NULL, s);
	ASSERT_EQ(0, pipe(p));
	end = foreign_begin();
	for (i = 0; now_ns() < end; i++) {
		pid_t pid;

		s->granted = 0;
		pid = strict_child(s, p[1]);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_EQ(1, s->granted) {
			TH_LOG("no grant: status %#x", status);
		}
		/* Every write ran, whether it hit the grant or not. */
		ioctl(p[0], FIONREAD, &n);
		EXPECT_EQ(i + 1, n);
		if (!WIFEXITED(status))
			break;
	}
	ksft_print_msg("%d tries; the last: status %#x\n", i + 1, status);
	/* The write inside the grant ran and then SIGSEGV came, not SIGKILL. */
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) {
		TH_LOG("status %#x: killed by %d, not SIGSEGV", status,
		       WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	}
	close(p[0]);
	close(p[1]);
}

TEST_F_TIMEOUT(hard, seccomp_filter_sees_the_call, 600)
{
	struct foreign_seen *s = shared_page();
	long long a = slice_stat("sabort");
	int status, i;
	uint64_t end;

	SLICE_NEEDS_GRANTS();
	if (!is_root())
		SKIP(return, "needs root to set foreign_syscall=abort");
	ASSERT_NE(NULL, s);
	ASSERT_EQ(0, slice_param_set("foreign_syscall", "abort"));
	end = foreign_begin();
	for (i = 0; now_ns() < end && slice_stat("sabort") == a; i++) {
		pid_t pid;

		s->granted = 0;
		pid = foreign_child(s, getppid_filter, false);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_EQ(1, s->granted) {
			TH_LOG("no grant: status %#x", status);
		}
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		/* The filter matched getppid: it saw the real number, not -1. */
		EXPECT_EQ(-1, s->ret);
		EXPECT_EQ(77, s->err);
	}
	ksft_print_msg("%d tries until the call hit a live grant\n", i);
	EXPECT_LT(a, slice_stat("sabort"));
}

/*
 * The system call number a tracer sees at a system call entry stop:
 * orig_rax on x86-64; on arm64 the regset NT_ARM_SYSTEM_CALL (the
 * kernel's syscallno, which reads -1 where the call is skipped, as
 * orig_rax does), not x8, which the kernel never rewrites. -2 if it
 * cannot be read.
 */
static long traced_syscall_nr(pid_t pid)
{
#if defined(__aarch64__)
	int nr;
	struct iovec iov = { .iov_base = &nr, .iov_len = sizeof(nr) };

	if (ptrace(PTRACE_GETREGSET, pid, NT_ARM_SYSTEM_CALL, &iov))
		return -2;
	return nr;
#else
	struct user_regs_struct regs;

	if (ptrace(PTRACE_GETREGS, pid, 0, &regs))
		return -2;
	return (long)regs.orig_rax;
#endif
}

/*
 * A tracer stops the child at every system call entry: the getppid()
 * made inside the grant must reach it as getppid (orig_rax), and a
 * tracer must never see the -1 the module used to write there.
 */
static void trace_child(struct __test_metadata *_metadata, struct foreign_seen *s,
			int *status, int *getppids, int *minus_one)
{
	int sig = 0;
	bool in_call = false;
	pid_t pid;

	s->granted = 0;
	pid = foreign_child(s, NULL, true);
	ASSERT_EQ(pid, waitpid(pid, status, 0));
	ASSERT_TRUE(WIFSTOPPED(*status));
	ASSERT_EQ(0, ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD));
	for (;;) {
		long nr;

		ASSERT_EQ(0, ptrace(PTRACE_SYSCALL, pid, 0, sig));
		sig = 0;
		ASSERT_EQ(pid, waitpid(pid, status, 0));
		if (WIFEXITED(*status) || WIFSIGNALED(*status))
			break;
		if (WSTOPSIG(*status) != (SIGTRAP | 0x80)) {
			/* A signal for the child: pass it on. */
			sig = WSTOPSIG(*status);
			continue;
		}
		in_call = !in_call;
		if (!in_call)
			continue;
		nr = traced_syscall_nr(pid);
		ASSERT_NE(-2, nr);
		if (nr == -1)
			(*minus_one)++;
		if (nr == SYS_getppid && s->granted)
			(*getppids)++;
	}
}

/*
 * A tracer stops the child at every system call entry: the getppid()
 * made inside the grant must reach it as getppid (orig_rax), and a
 * tracer must never see the -1 the module used to write there.
 */
TEST_F_TIMEOUT(hard, ptrace_sees_the_call, 600)
{
	struct foreign_seen *s = shared_page();
	int status = 0, minus_one = 0, getppids = 0, i;
	uint64_t end;

	SLICE_NEEDS_GRANTS();
	if (!kill_mode_or_skip())
		SKIP(return, "foreign_syscall is not kill");
	ASSERT_NE(NULL, s);
	end = foreign_begin();
	for (i = 0; now_ns() < end;) {
		trace_child(_metadata, s, &status, &getppids, &minus_one);
		ASSERT_EQ(1, s->granted);
		i++;
		if (WIFSIGNALED(status))
			break;
	}
	ksft_print_msg("%d tries; %d getppid seen after the grant, %d as -1; last status %#x\n",
		       i, getppids, minus_one, status);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
	/* One getppid() a try, each seen as itself. */
	EXPECT_EQ(i, getppids);
	EXPECT_EQ(0, minus_one);
}

/* --- a yield that others look at runs as made ---------------------------- */

/*
 * Where nothing but the module looks at a yield made inside a live grant,
 * the entry hook answers it and skips the call. A filter or a tracer
 * that looks must see the call as made, and the call must run and still
 * report the grant it ended: these tests fail if the skip happens with a
 * filter or tracer present (the filter or tracer sees -1, or the yield
 * its 1 without the filter's answer), or if the yield that runs loses
 * its answer.
 */
struct yield_seen {
	volatile int hit;	/* a yield ended a live grant (syield rose) */
	volatile long ret;	/* that yield's result */
	volatile int err;	/* and errno */
	volatile int tries;
};

/* Yields on the device inside a grant until one ends a live grant. */
static int yield_until_hit(struct yield_seen *s)
{
	uint64_t end = rseq_slice_tsc_ns() + EVENT_BOUND_NS;

	while (rseq_slice_tsc_ns() < end) {
		long long y0 = slice_stat("syield");
		long ret;
		int err;

		if (y0 < 0)
			return 46;
		if (!get_grant(&slice_self.ctrl))
			return 44;
		ret = ioctl(slice_self.fd, RSEQ_SLICE_IOC_YIELD);
		err = errno;
		s->tries++;
		if (slice_stat("syield") > y0) {
			s->ret = ret;
			s->err = err;
			s->hit = 1;
			return 0;
		}
	}
	return 47;
}

static pid_t yield_child(struct yield_seen *s, int (*setup)(void), bool traced)
{
	pid_t pid = fork();
	struct noise n;

	if (pid)
		return pid;
	s->hit = 0;
	s->ret = 0;
	s->err = 0;
	s->tries = 0;
	if (traced) {
		if (ptrace(PTRACE_TRACEME, 0, 0, 0))
			_exit(40);
		raise(SIGSTOP);
	}
	if (pin_self(slice_test_cpu()) || slice_enable_self())
		_exit(41);
	if (noise_start(&n, slice_test_cpu(), 2000, 50000))
		_exit(42);
	if (setup && setup())
		_exit(43);
	_exit(yield_until_hit(s));
}

/* The yield ioctl fails with errno 77: only a filter that saw it does it. */
static int yield_errno_filter(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, RSEQ_SLICE_IOC_YIELD, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 77),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};

	return install_filter(f, sizeof(f) / sizeof(f[0]));
}

/* A filter that allows everything: the yield runs under seccomp. */
static int allow_filter(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};

	return install_filter(f, sizeof(f) / sizeof(f[0]));
}

/*
 * The yield tests' start: the shared record, and the child started with
 * @setup (@traced: stopped for its tracer) and waited for once, its
 * status in *@status. NULL if the test skipped or failed.
 */
static struct yield_seen *yield_seen_start(struct __test_metadata *_metadata,
					   int (*setup)(void), bool traced, pid_t *pid,
					   int *status)
{
	struct yield_seen *s = shared_page();

	if (slice_no_grants())
		SKIP(return NULL, SLICE_NO_GRANTS_REASON);
	if (slice_stat("syield") < 0)
		SKIP(return NULL, "the statistics are readable by root only");
	ASSERT_NE(NULL, s);
	if (is_root())
		slice_param_set_longest_grant();
	*pid = yield_child(s, setup, traced);
	ASSERT_EQ(*pid, waitpid(*pid, status, 0));
	return s;
}

static void yield_seen_run(struct __test_metadata *_metadata, int (*setup)(void),
			   long want_ret, int want_err)
{
	struct yield_seen *s;
	int status;
	pid_t pid;

	s = yield_seen_start(_metadata, setup, false, &pid, &status);
	if (!s)
		return;
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		TH_LOG("child status %#x", status);
	}
	ksft_print_msg("%d yields until one ended a live grant: %ld, errno %d\n",
		       s->tries, s->ret, s->ret < 0 ? s->err : 0);
	ASSERT_EQ(1, s->hit);
	EXPECT_EQ(want_ret, s->ret);
	if (want_ret < 0)
		EXPECT_EQ(want_err, s->err);
	munmap(s, PG);
}

/* The filter saw the yield's number and arguments, and answered it. */
TEST_F_TIMEOUT(hard, seccomp_filter_sees_the_yield, 600)
{
	yield_seen_run(_metadata, yield_errno_filter, -1, 77);
}

/* Under a filter that allows it, the yield runs and reports the grant. */
TEST_F_TIMEOUT(hard, seccomp_allowed_yield_reports_grant, 600)
{
	yield_seen_run(_metadata, allow_filter, 1, 0);
}

/*
 * A tracer stops the child at every system call entry and exit: the
 * yield ioctl must reach it as the ioctl at both, never as -1, and its
 * exit must carry the 1 the child then sees.
 */
TEST_F_TIMEOUT(hard, ptrace_sees_the_yield, 600)
{
	int status, sig = 0, ioctls = 0, minus_one = 0;
	bool in_call = false;
	struct yield_seen *s;
	pid_t pid;

	s = yield_seen_start(_metadata, NULL, true, &pid, &status);
	if (!s)
		return;
	ASSERT_TRUE(WIFSTOPPED(status));
	ASSERT_EQ(0, ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD));
	for (;;) {
		long nr;

		ASSERT_EQ(0, ptrace(PTRACE_SYSCALL, pid, 0, sig));
		sig = 0;
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		if (WIFEXITED(status) || WIFSIGNALED(status))
			break;
		if (WSTOPSIG(status) != (SIGTRAP | 0x80)) {
			sig = WSTOPSIG(status);
			continue;
		}
		in_call = !in_call;
		nr = traced_syscall_nr(pid);
		ASSERT_NE(-2, nr);
		if (nr == -1)
			minus_one++;
		if (in_call && nr == SYS_ioctl)
			ioctls++;
	}
	ksft_print_msg("%d yields until one ended a live grant; %d ioctls seen, %d calls as -1\n",
		       s->tries, ioctls, minus_one);
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		TH_LOG("child status %#x", status);
	}
	ASSERT_EQ(1, s->hit);
	EXPECT_EQ(1, s->ret);
	EXPECT_LE(s->tries, ioctls);
	EXPECT_EQ(0, minus_one);
	munmap(s, PG);
}

/* --- a registration whose page was replaced ------------------------------ */

/* Grants answered on @w within the bound: true if one came. */
static bool granted_on(uint32_t *w, int fd)
{
	uint64_t end = rseq_slice_tsc_ns() + EVENT_BOUND_NS;

	while (rseq_slice_tsc_ns() < end) {
		uint32_t v = request_wait(w, 200 * MS);

		if (v == RSEQ_SLICE_EXT_GRANTED) {
			slice_ioctl(fd, RSEQ_SLICE_IOC_YIELD);
			rseq_slice_word_store(w, 0);
			return true;
		}
	}
	rseq_slice_word_end(w, fd);
	return false;
}

FIXTURE(remap)
{
	struct noise noise;
	int fd;
	uint32_t *w;
};

FIXTURE_SETUP(remap)
{
	ASSERT_EQ(0, pin_self(slice_test_cpu()));
	self->fd = slice_open();
	ASSERT_LE(0, self->fd);
	self->w = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->w);
	ASSERT_EQ(0, noise_start(&self->noise, slice_test_cpu(), 2000, 50000));
	ASSERT_EQ(0, slice_enable_word(self->fd, self->w));
	/* Where nothing can be granted the tests skip (SLICE_NEEDS_GRANTS()). */
	if (!slice_no_grants())
		ASSERT_TRUE(granted_on(self->w, self->fd));
}

FIXTURE_TEARDOWN(remap)
{
	slice_ioctl(self->fd, RSEQ_SLICE_IOC_DISABLE);
	noise_stop(&self->noise);
	munmap(self->w, PG);
	close(self->fd);
}

/*
 * After the page under the word is replaced, the kernel still writes the
 * page it pinned; ENABLE of the same address moves the registration to
 * the page the thread now sees (docs/design.md, "Decisions"), and grants come
 * back. One page stays pinned for the thread throughout.
 */
static void replaced_then_reenabled(struct __test_metadata *_metadata,
				    FIXTURE_DATA(remap) *self)
{
	long long p0 = slice_stat("pinned"), t, p;

	/* The old page gets the kernel's writes: the word sees none. */
	EXPECT_EQ(RSEQ_SLICE_EXT_REQUEST, request_wait(self->w, 50 * MS));
	rseq_slice_word_store(self->w, 0);
	EXPECT_EQ(0, slice_enable_word(self->fd, self->w));
	EXPECT_EQ(1, slice_ioctl(self->fd, RSEQ_SLICE_IOC_GET));
	EXPECT_TRUE(granted_on(self->w, self->fd));
	if (p0 >= 0) {
		EXPECT_TRUE(slice_stats_settle(slice_stat("threads"), p0, &t, &p));
		EXPECT_EQ(p0, p);
	}
}

TEST_F_TIMEOUT(remap, munmap_and_new_mapping, 420)
{
	void *again;

	SLICE_NEEDS_GRANTS();
	ASSERT_EQ(0, munmap(self->w, PG));
	again = mmap(self->w, PG, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_EQ((void *)self->w, again);
	replaced_then_reenabled(_metadata, self);
}

TEST_F_TIMEOUT(remap, madv_dontneed, 420)
{
	SLICE_NEEDS_GRANTS();
	ASSERT_EQ(0, madvise(self->w, PG, MADV_DONTNEED));
	replaced_then_reenabled(_metadata, self);
}

/* --- the yield, decided once --------------------------------------------- */

/*
 * The yield is recognised at system call entry by the file behind the
 * descriptor, so any descriptor of the device works (a dup), and an
 * ioctl with the yield's number on another file is a foreign call.
 */
TEST_F_TIMEOUT(hard, yield_through_a_dup, 420)
{
	struct noise n;
	int fd, dupfd, live = 0;
	uint64_t end;

	SLICE_NEEDS_GRANTS();
	ASSERT_EQ(0, pin_self(slice_test_cpu()));
	ASSERT_EQ(0, slice_enable_self());
	fd = slice_self.fd;
	dupfd = dup(fd);
	ASSERT_LE(0, dupfd);
	ASSERT_EQ(0, noise_start(&n, slice_test_cpu(), 2000, 50000));
	rseq_slice_tsc_calibrate(0);
	/* Until five yields met their grant live (see foreign_begin()). */
	end = now_ns() + EVENT_BOUND_NS;
	while (live < 5 && now_ns() < end) {
		int ret;

		ASSERT_TRUE(get_grant(&slice_self.ctrl));
		ret = slice_ioctl(dupfd, RSEQ_SLICE_IOC_YIELD);
		EXPECT_EQ(0, slice_word());
		if (ret == 1)
			live++;
		else
			EXPECT_EQ(0, ret);
	}
	noise_stop(&n);
	EXPECT_EQ(5, live);
	slice_ioctl(fd, RSEQ_SLICE_IOC_DISABLE);
	close(dupfd);
}

TEST_F_TIMEOUT(hard, yield_number_on_another_file_is_foreign, 600)
{
	struct foreign_seen *s = shared_page();
	long long a, y;
	int status, i;
	uint64_t end;

	SLICE_NEEDS_GRANTS();
	if (!is_root())
		SKIP(return, "needs root to set foreign_syscall=abort");
	ASSERT_NE(NULL, s);
	ASSERT_EQ(0, slice_param_set("foreign_syscall", "abort"));
	a = slice_stat("sabort");
	y = slice_stat("syield");
	end = foreign_begin();
	for (i = 0; now_ns() < end && slice_stat("sabort") == a; i++) {
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (!pid) {
			int null = open("/dev/null", O_RDONLY);
			struct noise n;

			prefault(s);
			if (null < 0 || pin_self(slice_test_cpu()) || slice_enable_self())
				_exit(41);
			if (noise_start(&n, slice_test_cpu(), 2000, 50000))
				_exit(42);
			if (!get_grant(&slice_self.ctrl))
				_exit(44);
			s->granted = 1;
			s->ret = ioctl(null, RSEQ_SLICE_IOC_YIELD, 0);
			s->err = errno;
			/* However the grant ended, it is over now. */
			_exit(slice_word() ? 46 : 0);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_EQ(1, s->granted);
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			TH_LOG("status %#x", status);
		}
		EXPECT_EQ(-1, s->ret);
		EXPECT_EQ(ENOTTY, s->err);
	}
	ksft_print_msg("%d tries until the call hit a live grant\n", i);
	/* It ended as an abort, never as a yield. */
	EXPECT_LT(a, slice_stat("sabort"));
	EXPECT_EQ(0, slice_stat("syield") - y);
}

/* --- another IPMODIFY user on schedule() --------------------------------- */

#define HOG_KO	"/lib/ipmodify_hog.ko"

static int hog(bool load)
{
	int fd, ret;

	if (!load)
		return syscall(SYS_delete_module, "ipmodify_hog", O_NONBLOCK) ? -errno : 0;
	fd = open(HOG_KO, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, "", 0) ? -errno : 0;
	close(fd);
	return ret;
}

/*
 * While another module holds schedule() with IPMODIFY, arming fails:
 * ENABLE says ETXTBSY (not EBUSY, which means "another word"), a write of
 * enabled=1 says so too, and a registration made before is kept; once
 * the other module goes, everything works again.
 */
TEST_F_TIMEOUT(hard, ipmodify_conflict_keeps_registrations, 300)
{
	struct noise n;
	int fd, ret;

	if (!is_root())
		SKIP(return, "needs root to load a module");
	if (access(HOG_KO, R_OK))
		SKIP(return, "no %s in this guest", HOG_KO);
	ASSERT_EQ(0, pin_self(slice_test_cpu()));
	fd = slice_open();
	ASSERT_LE(0, fd);
	/* enabled=0 takes the hooks out now, whoever else is registered. */
	ASSERT_EQ(0, slice_param_set("enabled", "0"));
	ASSERT_EQ(0, hog(true));
	ret = slice_param_set("enabled", "1");
	/* Nobody registered: nothing to arm yet. */
	EXPECT_EQ(0, ret);

	EXPECT_EQ(-ETXTBSY, slice_enable_word(fd, &slice_self.ctrl));
	EXPECT_EQ(0, slice_ioctl(fd, RSEQ_SLICE_IOC_GET));

	/* A registration made while schedule() was free... */
	ASSERT_EQ(0, hog(false));
	ASSERT_EQ(0, slice_enable_word(fd, &slice_self.ctrl));
	ASSERT_EQ(0, slice_param_set("enabled", "0"));
	ASSERT_EQ(0, hog(true));
	/* ...survives the failures to arm again. */
	EXPECT_EQ(-ETXTBSY, slice_param_set("enabled", "1"));
	EXPECT_EQ(-ETXTBSY, slice_enable_word(fd, &slice_self.ctrl));
	EXPECT_EQ(1, slice_ioctl(fd, RSEQ_SLICE_IOC_GET));

	ASSERT_EQ(0, hog(false));
	EXPECT_EQ(0, slice_param_set("enabled", "1"));
	EXPECT_EQ(1, slice_ioctl(fd, RSEQ_SLICE_IOC_GET));
	ASSERT_EQ(0, noise_start(&n, slice_test_cpu(), 2000, 50000));
	slice_self.fd = fd;
	/* Armed again: grants come back, wherever the kernel can give one. */
	if (!slice_no_grants())
		EXPECT_TRUE(granted_on(&slice_self.ctrl, fd));
	noise_stop(&n);
	slice_ioctl(fd, RSEQ_SLICE_IOC_DISABLE);
	slice_self.fd = -1;
	close(fd);
}

TEST_HARNESS_MAIN
