// SPDX-License-Identifier: GPL-2.0
/*
 * The semantics of a grant, one test per rule (see docs/design.md, "Semantics"):
 * when grants are given and refused, how they end (yield, revoke, expiry,
 * foreign system call), the parameters' effects, and a registration's
 * lifecycle across fork, exec, clone and exit.
 *
 * Inside a critical section nothing here enters the kernel: time is read
 * from the TSC, and the only system call while granted is the one a test
 * makes on purpose.
 */
#include "slice_util.h"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "kselftest_harness.h"

#define GRANT_TRIES	20000
/* How long a thread waits for the kernel to act on its REQUEST. */
#define WAIT_NS		(200 * 1000 * 1000ULL)

/* Set REQUEST, spin until the kernel changes the word or @max_ns pass. */
static uint32_t request_and_wait(uint64_t max_ns)
{
	return request_wait(&slice_self.ctrl, max_ns);
}

/* Spin under REQUEST until granted: true if the thread now holds a grant. */
static bool wait_grant(void)
{
	int i;

	for (i = 0; i < GRANT_TRIES; i++) {
		if (request_and_wait(WAIT_NS) == RSEQ_SLICE_EXT_GRANTED)
			return true;
	}
	/* REQUEST may still be set: a plain store could hide a late grant. */
	rseq_slice_word_end(&slice_self.ctrl, slice_self.fd);
	return false;
}

/*
 * Take a grant and yield it. Under emulation a grant can expire between
 * the thread seeing GRANTED and its YIELD reaching the kernel, and YIELD
 * then (rightly) returns 0: retry until a YIELD ends a live grant, within
 * 20 s (the harness gives a TEST_F 30). Every YIELD must leave the word
 * clear. Returns how many YIELDs returned 1.
 */
static int grant_and_yield(struct __test_metadata *_metadata)
{
	uint64_t end = now_ns() + 20 * 1000 * 1000 * 1000ULL;
	int ret;

	while (now_ns() < end) {
		if (!wait_grant())
			return 0;
		ret = slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_YIELD);
		EXPECT_EQ(0, slice_word());
		if (ret == 1)
			return 1;
		EXPECT_EQ(0, ret);
	}
	return 0;
}

static long long stat_delta(const char *name, long long before)
{
	long long now = slice_stat(name);

	return before < 0 || now < 0 ? -1 : now - before;
}

/* The calling thread's context switches; read outside any grant. */
static long thread_switches(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return -1;
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

FIXTURE(sem)
{
	struct noise noise;
	/* The parameters a test may change, restored by the teardown. */
	struct slice_params params;
};

FIXTURE_VARIANT(sem)
{
	uint64_t noise_sleep_ns;
};

/* Wakeups every 50 us: grants end by the noise's next wakeup or expiry. */
FIXTURE_VARIANT_ADD(sem, busy)
{
	.noise_sleep_ns = 50000,
};

/* Wakeups every 2 ms: grants end by expiry. */
FIXTURE_VARIANT_ADD(sem, sparse)
{
	.noise_sleep_ns = 2000000,
};

FIXTURE_SETUP(sem)
{
	SLICE_ONLY_FILTER();
	ASSERT_EQ(0, slice_params_save(&self->params));
	ASSERT_EQ(0, pin_self(slice_test_cpu()));
	ASSERT_EQ(0, slice_enable_self());
	ASSERT_EQ(0, noise_start(&self->noise, slice_test_cpu(), 2000, variant->noise_sleep_ns));
}

FIXTURE_TEARDOWN(sem)
{
	noise_stop(&self->noise);
	slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_DISABLE);
	if (is_root()) {
		slice_trace_event("timer/hrtimer_expire_entry", 0);
		slice_trace_event("rseq_slice", 0);
	}
	slice_params_restore(&self->params);
}

/* Rule 1 and 5: an interrupted REQUEST becomes a grant; YIELD ends it. */
TEST_F(sem, grant_then_yield)
{
	long long g = slice_stat("sgrant"), y = slice_stat("syield");

	SLICE_NEEDS_GRANTS();
	/* wait_grant() saw the kernel clear REQUEST and set GRANTED. */
	ASSERT_EQ(1, grant_and_yield(_metadata));
	if (g >= 0) {
		EXPECT_LE(1, stat_delta("sgrant", g));
		EXPECT_LE(1, stat_delta("syield", y));
	}
}

/*
 * Rule 5: a live yield reschedules. The noise thread shares this CPU and
 * its wakeup is what usually asks for the reschedule the grant defers, so
 * it is runnable and waiting while the grant lasts. Its round counter
 * cannot move while this thread holds the grant (a switch away would end
 * it, and YIELD would return 0), so a change across a YIELD that returned
 * 1 means the thread was switched out before the YIELD returned to user
 * space, however the module brings that reschedule about. Another wakeup
 * (a kworker's, the harness's) can ask instead, and its task runs: the
 * thread's own context switches (getrusage, read outside the grant) count
 * that. A switch while only REQUEST was set clears it, and the request is
 * made again, so a switch counted here is one inside the grant or after
 * its yield.
 */
#define LIVE_YIELDS	50

/*
 * Can the scheduler's own hrtick timer ask for the reschedule? With the
 * sched feature HRTICK (on by default in Debian's 7.2) it reschedules at
 * the end of the thread's slice, also while the noise thread sleeps: a
 * grant on that request is a grant like any other (upstream's too), and
 * its yield finds nothing else to run. Measured on 7.2.13 with 2 ms
 * noise: 24-25 of 50 yields switched to the noise thread with HRTICK,
 * 49 of 50 with NO_HRTICK. debugfs says, for root; otherwise assume it
 * of Linux 7 and later.
 */
static bool sched_hrtick_maybe(void)
{
	FILE *f = fopen("/sys/kernel/debug/sched/features", "r");
	struct utsname u;
	char feat[32];
	bool on = false;

	if (f) {
		while (fscanf(f, "%31s", feat) == 1)
			on |= !strcmp(feat, "HRTICK");
		fclose(f);
		return on;
	}
	return !uname(&u) && atoi(u.release) >= 7;
}

TEST_F_TIMEOUT(sem, yield_switches_out, 600)
{
	unsigned int live = 0, switched = 0, to_noise = 0, tries = 0, want;
	uint64_t end = now_ns() + 300 * 1000000000ULL;

	SLICE_NEEDS_GRANTS();
	if (self->noise.kind == NOISE_TICK) {
		noise_stop(&self->noise);
		ASSERT_EQ(0, noise_start_fair(&self->noise, slice_test_cpu(), 2000,
					      variant->noise_sleep_ns));
	}
	while (live < LIVE_YIELDS && now_ns() < end) {
		unsigned long r0;
		long s0, s1;
		int ret;

		tries++;
		s0 = thread_switches();
		ASSERT_LE(0, s0);
		ASSERT_TRUE(wait_grant());
		r0 = self->noise.rounds;
		ret = slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_YIELD);
		s1 = thread_switches();
		EXPECT_EQ(0, slice_word());
		if (ret != 1) {
			EXPECT_EQ(0, ret);
			continue;
		}
		live++;
		if (self->noise.rounds != r0)
			to_noise++;
		if (self->noise.rounds != r0 || s1 > s0)
			switched++;
	}
	ksft_print_msg("%u live yields in %u grants, %u switched out (%u to the noise thread)\n",
		       live, tries, switched, to_noise);
	ASSERT_EQ(LIVE_YIELDS, live);
	/*
	 * "Most", not all: a reschedule asked while nothing else could run
	 * (the tick's, with the noise asleep) finds the thread itself the
	 * task to run. Where the noise sleeps long and hrtick asks too
	 * (above), a quarter.
	 */
	want = variant->noise_sleep_ns > 1000000 && sched_hrtick_maybe() ? live / 4 : live * 3 / 4;
	EXPECT_LE(want, switched);
}

/*
 * Rule 5: the yield cancels the grant's timer. A timer left armed would
 * fire grant_ns after the yield with nobody to end: count the timer's
 * expiries (the kernel's hrtimer_expire_entry events for
 * rseq_slice_timer_fn) over many yielded grants of the longest grant_ns
 * (50 us). Every expiry must be one of a grant the yield came too late
 * for (sexpir).
 */
#define CANCEL_YIELDS	200

TEST_F_TIMEOUT(sem, yield_cancels_timer, 600)
{
	long long e0 = slice_stat("sexpir"), e;
	unsigned int live = 0, tries = 0;
	uint64_t end = now_ns() + 400 * 1000 * 1000 * 1000ULL;
	long fired;

	SLICE_NEEDS_GRANTS();
	if (!is_root())
		SKIP(return, "tracefs and the statistics are root's");
	ASSERT_EQ(0, slice_param_set_longest_grant());
	ASSERT_EQ(0, slice_trace_reset("8192"));
	ASSERT_EQ(0, slice_trace_event("timer/hrtimer_expire_entry", 1));
	/* Until CANCEL_YIELDS were live (the debug kernel took 1444 tries). */
	while (live < CANCEL_YIELDS && now_ns() < end) {
		tries++;
		if (!wait_grant())
			break;
		if (slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_YIELD) == 1)
			live++;
	}
	/* Let a timer left behind by the last yield fire too. */
	rseq_slice_busy_wait_ns(2 * 1000 * 1000);
	slice_trace_event("timer/hrtimer_expire_entry", 0);
	e = stat_delta("sexpir", e0);
	fired = slice_trace_count("function=rseq_slice_timer_fn");
	ksft_print_msg("%u live yields in %u grants of the longest grant_ns: timer fired %ld times, sexpir +%lld\n",
		       live, tries, fired, e);
	ASSERT_EQ(CANCEL_YIELDS, live);
	ASSERT_LE(0, fired);
	EXPECT_GE(e + CANCEL_YIELDS / 20, fired);
}

/*
 * Rule 4: the timer ends a grant that is never yielded when it fires,
 * whatever the scheduler then picks: each rseq_slice_expire event is
 * followed by its grant's end (the CPU's next rseq_slice_revoke) in the
 * same hard interrupt (its trace flags say "h"). The case this catches:
 * the timer fires between the grant and the return to user space, and a
 * preemption point there takes its reschedule and picks the holder
 * again, with no switch to end the grant. Seen failing with the grant
 * ended by that switch instead: on 6.1-rt no expiry ended in its
 * interrupt, and 33 (busy) and 12 (sparse) of 100 grants ran on for more
 * than a millisecond (to 7 ms), where with the fix the latest end came
 * 67 us and 1062 us (a host stall) after the expiry.
 */
#define EXPIRE_WANT	100
#define EXPIRE_END_NS	1000000

/*
 * "comm-pid [CPU] FLAGS SECONDS: event: ...": the CPU, the time and
 * whether FLAGS say hard interrupt context ("h", or "H" in a softirq).
 */
static bool trace_line_time(const char *line, int *cpu, double *t, bool *hardirq)
{
	const char *p = strstr(line, " [");
	char flags[16];

	if (!p || sscanf(p, " [%d] %15s %lf:", cpu, flags, t) != 3 || *cpu < 0 ||
	    *cpu >= CPU_SETSIZE)
		return false;
	*hardirq = strpbrk(flags, "hH");
	return true;
}

TEST_F_TIMEOUT(sem, expiry_ends_grant, 600)
{
	static double expired_at[CPU_SETSIZE];
	long long e0 = slice_stat("sexpir");
	uint64_t end = now_ns() + 300 * 1000000000ULL;
	unsigned int rounds = 0, expiries = 0, ended = 0, in_irq = 0, late = 0;
	double worst = 0;
	char line[512];
	FILE *f;
	int cpu;

	SLICE_NEEDS_GRANTS();
	if (!is_root())
		SKIP(return, "tracefs and the statistics are root's");
	ASSERT_EQ(0, slice_param_set("grant_ns", "30000"));
	ASSERT_EQ(0, slice_trace_reset("8192"));
	ASSERT_EQ(0, slice_trace_event("rseq_slice/rseq_slice_expire", 1));
	ASSERT_EQ(0, slice_trace_event("rseq_slice/rseq_slice_revoke", 1));
	while (stat_delta("sexpir", e0) < EXPIRE_WANT && now_ns() < end) {
		rounds++;
		if (!wait_grant())
			break;
		while (slice_word() & RSEQ_SLICE_EXT_GRANTED)
			;
	}
	slice_trace_event("rseq_slice/rseq_slice_expire", 0);
	slice_trace_event("rseq_slice/rseq_slice_revoke", 0);

	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		expired_at[cpu] = -1;
	f = fopen(SLICE_TRACING "trace", "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		bool hardirq;
		double t;

		if (line[0] == '#' || !trace_line_time(line, &cpu, &t, &hardirq))
			continue;
		if (strstr(line, "rseq_slice_expire:")) {
			expired_at[cpu] = t;
			expiries++;
		} else if (strstr(line, "rseq_slice_revoke:") && expired_at[cpu] >= 0) {
			t -= expired_at[cpu];
			in_irq += hardirq;
			late += t * 1e9 > EXPIRE_END_NS;
			if (t > worst)
				worst = t;
			expired_at[cpu] = -1;
			ended++;
		}
	}
	fclose(f);
	ksft_print_msg("%u grants, %u expired (sexpir +%lld), %u ended after it, %u in its interrupt; %u more than %d us later, the latest %.0f us\n",
		       rounds, expiries, stat_delta("sexpir", e0), ended, in_irq, late,
		       EXPIRE_END_NS / 1000, worst * 1e6);
	EXPECT_LE(EXPIRE_WANT, expiries);
	EXPECT_EQ(expiries, ended);
	EXPECT_EQ(expiries, in_irq);
}

/*
 * Rule 8: the trace events tell what the statistics count. Grants that
 * are yielded and grants left to expire, with every rseq_slice event on:
 * each event's count must match its counter's change, and each grant
 * event carries the grant_ns in force.
 */
TEST_F_TIMEOUT(sem, trace_events_match_stats, 600)
{
	static const char * const pairs[][2] = {
		{ "rseq_slice_grant:", "sgrant" }, { "rseq_slice_yield:", "syield" },
		{ "rseq_slice_revoke:", "srevok" }, { "rseq_slice_expire:", "sexpir" },
		{ "rseq_slice_deny:", "sdeny" },
	};
	long long before[5];
	unsigned int i, yielded = 0, expired = 0;

	SLICE_NEEDS_GRANTS();
	if (!is_root())
		SKIP(return, "tracefs and the statistics are root's");
	ASSERT_EQ(0, slice_param_set("grant_ns", "20000"));
	ASSERT_EQ(0, slice_trace_reset("8192"));
	for (i = 0; i < 5; i++)
		before[i] = slice_stat(pairs[i][1]);
	ASSERT_EQ(0, slice_trace_event("rseq_slice", 1));
	/* 100 grants, and more until one yield met its grant live. */
	for (i = 0; i < 100 || (!yielded && i < 2000); i++) {
		ASSERT_TRUE(wait_grant());
		if (i & 1) {
			yielded += slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_YIELD) == 1;
		} else {
			while (slice_word() & RSEQ_SLICE_EXT_GRANTED)
				;
			expired++;
		}
	}
	ASSERT_EQ(0, slice_trace_event("rseq_slice", 0));
	for (i = 0; i < 5; i++) {
		long long d = stat_delta(pairs[i][1], before[i]);
		long n = slice_trace_count(pairs[i][0]);

		ksft_print_msg("%-8s +%lld, %s events %ld\n", pairs[i][1], d, pairs[i][0], n);
		EXPECT_EQ(d, n);
	}
	EXPECT_EQ(slice_trace_count("rseq_slice_grant:"), slice_trace_count("grant_ns=20000"));
	EXPECT_LE(1, yielded);
	EXPECT_LE(1, stat_delta("sexpir", before[3]));
}

/*
 * Rule 3, signals: a catchable signal to a thread spinning on a grant (it
 * saw GRANTED and waits for the kernel to take it back) ends the grant
 * before the handler runs, and the handler's rt_sigreturn is then no
 * foreign system call: under foreign_syscall=kill the thread lives.
 *
 * Sent by tgkill() from another CPU the signal never lands inside a grant
 * under single-threaded TCG (0 of 36093 tries: the holder's vCPU runs on
 * until its next timer interrupt, the grant's own), so a POSIX timer on
 * the holder's CPU sends it, every SIG_PERIOD_NS, to the holder thread
 * (often enough that some land inside a 50 us grant, seldom enough that
 * they do not keep answering the thread's REQUESTs themselves).
 * A signal "hit a holder" when the handler interrupted the spin and (as
 * root, from the statistics) the grant did not end by its timer first;
 * the test runs until it has seen SIG_HITS of those, within its bound.
 * Hits are rare (a few per thousand grants: 16 in 300 s on a loaded
 * host, 5 in 7809 grants on arm64 in CI), and each is a full proof of
 * the case: one is asked for, the others are looked for while the time
 * allows.
 *
 * On PREEMPT_RT that timer cannot do it: it expires in ktimers, a
 * SCHED_FIFO thread on the holder's CPU, whose wakeup (a full
 * reschedule, which RT never defers) revokes the grant before the signal
 * is sent (4 hits in 300 s on 6.1-rt, 0 in the sparse variant; its 2000
 * wakeups a second also deny nearly every REQUEST). There a sender
 * thread on the other CPU sends the signal, as kill() from another
 * program would: it looks at the holder's word and calls tgkill() when
 * it reads GRANTED; what reaches the holder's CPU is an IPI, no
 * reschedule. It sleeps SIG_POLL_NS between looks: under single-threaded
 * TCG its vCPU runs only when an interrupt makes QEMU switch vCPUs, and
 * its own timer's are those switches. RSEQ_SLICE_SIGNALS=timer|sender
 * overrides.
 */
#define SIG_HITS	5
#define SIG_PERIOD_NS	500000
#define SIG_POLL_NS	20000

struct sig_sender {
	pthread_t thread;
	const uint32_t *word;	/* the holder's control word */
	pid_t tid;		/* the holder */
	int cpu;
	volatile bool stop;
};

static void *sig_sender_fn(void *arg)
{
	struct sig_sender *s = arg;
	struct timespec ts = { .tv_nsec = SIG_POLL_NS };
	struct sched_param sp = { .sched_priority = 1 };

	if (pin_self(s->cpu))
		return NULL;
	/*
	 * Real-time where allowed (root): on PREEMPT_RT a real-time task's
	 * sleep ends in hard interrupt context, a fair task's only once the
	 * ktimers thread has run, which under emulation takes most of a
	 * grant. As uid 1000 it stays fair.
	 */
	pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	while (!s->stop) {
		if (__atomic_load_n(s->word, __ATOMIC_RELAXED) & RSEQ_SLICE_EXT_GRANTED)
			syscall(SYS_tgkill, getpid(), s->tid, SIGUSR1);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* The timer (true) or the sender on the other CPU (false)? */
static bool sig_by_timer(void)
{
	const char *s = getenv("RSEQ_SLICE_SIGNALS");

	if (s && !strcmp(s, "timer"))
		return true;
	if (s && !strcmp(s, "sender"))
		return false;
	return !slice_kernel_rt();
}

static volatile int sig_in_spin;
static volatile unsigned int sig_in_spin_hits, sig_saw_granted, sig_elsewhere;

static void holder_handler(int sig)
{
	if (sig_in_spin) {
		sig_in_spin_hits++;
		if (slice_word() & RSEQ_SLICE_EXT_GRANTED)
			sig_saw_granted++;
		return;
	}
	/*
	 * Elsewhere the signal may interrupt a REQUEST: end that section
	 * here, as rseq_slice_end() would, so that a grant given while the
	 * handler runs is yielded before its rt_sigreturn. The interrupted
	 * spin then sees its REQUEST answered without a grant.
	 */
	sig_elsewhere++;
	rseq_slice_word_end(&slice_self.ctrl, slice_self.fd);
}

TEST_F_TIMEOUT(sem, signal_ends_grant, 600)
{
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGUSR1 };
	struct itimerspec its = {
		.it_value = { .tv_nsec = SIG_PERIOD_NS },
		.it_interval = { .tv_nsec = SIG_PERIOD_NS },
	};
	struct sigaction sa = { .sa_handler = holder_handler };
	/*
	 * On a slow (KASAN) kernel one hit is the proof asked for, and 60 s
	 * without one mean the case cannot be told apart there (see below):
	 * waiting 300 s for nothing cost the debug lane 10 minutes. One is
	 * enough from the sender too: its signal must arrive within a
	 * grant, after a trip through the other vCPU (2 to 5 in 300 s on
	 * 6.1-rt, fewer the busier the host), and every signal in the spin
	 * is checked for GRANTED either way.
	 */
	bool by_timer = sig_by_timer();
	/* run_suite says when the sender's signals come too late (arm64's RT). */
	bool slow = getenv("RSEQ_SLICE_SLOW_KERNEL") ||
		    (!by_timer && getenv("RSEQ_SLICE_SLOW_SIGNALS"));
	unsigned int rounds = 0, hits = 0, want = slow || !by_timer ? 1 : SIG_HITS;
	uint64_t end = now_ns() + (slow ? 60 : 300) * 1000000000ULL;
	long long d0 = slice_stat("sdeny");
	struct sig_sender snd = { .word = &slice_self.ctrl, .tid = gettid(), .cpu = 0 };
	timer_t timer;
	long long sdeny;
	long denies;
	bool checks_held;

	SLICE_NEEDS_GRANTS();
	if (is_root()) {
		/* Long grants: more of the signals land inside one. */
		ASSERT_EQ(0, slice_param_set_longest_grant());
		ASSERT_EQ(0, slice_param_set("foreign_syscall", "kill"));
	} else if (strcmp(slice_params_val(&self->params, "foreign_syscall"), "kill")) {
		SKIP(return, "foreign_syscall is %s",
		     slice_params_val(&self->params, "foreign_syscall"));
	}
	if (is_root()) {
		ASSERT_EQ(0, slice_trace_reset("8192"));
		ASSERT_EQ(0, slice_trace_event("rseq_slice/rseq_slice_deny", 1));
	}
	sev._sigev_un._tid = gettid();
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	if (by_timer) {
		ASSERT_EQ(0, timer_create(CLOCK_MONOTONIC, &sev, &timer));
		ASSERT_EQ(0, timer_settime(timer, 0, &its, NULL));
	} else {
		if (slice_test_cpu() == 0)
			SKIP(return, "the signal's sender needs a second CPU");
		ASSERT_EQ(0, pthread_create(&snd.thread, NULL, sig_sender_fn, &snd));
	}
	while (hits < want && now_ns() < end) {
		long long e0 = slice_stat("sexpir");
		unsigned int in0 = sig_in_spin_hits;

		rounds++;
		if (!wait_grant())
			break;
		sig_in_spin = 1;
		while (slice_word() & RSEQ_SLICE_EXT_GRANTED)
			;
		sig_in_spin = 0;
		if (sig_in_spin_hits != in0 && (e0 < 0 || slice_stat("sexpir") == e0))
			hits++;
	}
	if (by_timer) {
		timer_delete(timer);
	} else {
		snd.stop = true;
		pthread_join(snd.thread, NULL);
	}
	ksft_print_msg("%u grants, %u signals in the spin, %u of them before expiry%s, %u saw GRANTED, %u signals elsewhere%s\n",
		       rounds, sig_in_spin_hits, hits,
		       slice_stat("sexpir") < 0 ? " (not checked: stats are root's)" : "",
		       sig_saw_granted, sig_elsewhere,
		       by_timer ? "" : " (sent from the other CPU)");
	/*
	 * Rule 2: a signal due at the same interrupt return as a reschedule
	 * forbids a grant: REQUEST is answered by a deny (sdeny, and its
	 * trace event). Seen about 200 times in such a run.
	 */
	checks_held = !sig_saw_granted;
	if (d0 >= 0) {
		slice_trace_event("rseq_slice/rseq_slice_deny", 0);
		denies = slice_trace_count("rseq_slice_deny:");
		sdeny = stat_delta("sdeny", d0);
		ksft_print_msg("sdeny +%lld, rseq_slice_deny events %ld\n", sdeny, denies);
		/*
		 * Only the timer's signals are due at an interrupt's return
		 * that also reschedules; the sender's come by IPI alone.
		 */
		if (by_timer)
			EXPECT_LE(1, sdeny);
		EXPECT_EQ(sdeny, denies);
		checks_held = checks_held && sdeny == denies && (!by_timer || sdeny >= 1);
	}
	EXPECT_EQ(0, sig_saw_granted);
	/*
	 * On a slow (KASAN) kernel under emulation, handling one timer
	 * interrupt takes longer than a grant: a signal timer due inside a
	 * grant is handled in the same interrupt as the grant's expiry, so
	 * the case cannot be told apart there; as uid 1000 (30 us grants),
	 * the 500 us signals leave hardly a grant at all. run_suite says when
	 * it runs on such a kernel.
	 */
	/* Slow kernel: even a few hits take long (seen: 13 in 300 s as uid 1000). */
	/* Only once the checks above held: a skip would hide their failure. */
	if (slow && !hits && checks_held)
		SKIP(return, "no signal hit a live grant before its expiry (%s)",
		     by_timer ? "slow kernel" : "the other CPU's signals come too late here");
	EXPECT_LE(1, hits);
}

/*
 * Rules 2 and 3: a REQUEST set again inside a grant, then a reschedule:
 * no second grant; the grant is revoked and both bits come back clear.
 */
TEST_F(sem, rerequest_inside_grant_is_revoked)
{
	long long r = slice_stat("srevok"), g = slice_stat("sgrant");
	uint32_t w = RSEQ_SLICE_EXT_GRANTED;
	uint64_t end;
	int i;

	SLICE_NEEDS_GRANTS();
	/*
	 * Add REQUEST only while the grant is still live: the kernel writes
	 * the word only on this CPU, on the way back to this thread, so a
	 * compare-and-swap that succeeds saw the grant still in place.
	 */
	for (i = 0; i < 200; i++) {
		ASSERT_TRUE(wait_grant());
		w = RSEQ_SLICE_EXT_GRANTED;
		if (__atomic_compare_exchange_n(&slice_self.ctrl, &w,
						RSEQ_SLICE_EXT_GRANTED | RSEQ_SLICE_EXT_REQUEST,
						false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			break;
		ASSERT_EQ(0, w);
	}
	ASSERT_LT(i, 200);
	/* The revoke comes at the next reschedule: bound a host's stalls too. */
	end = rseq_slice_tsc_ns() + 10 * 1000 * 1000 * 1000ULL;
	while ((w = slice_word()) == (RSEQ_SLICE_EXT_GRANTED | RSEQ_SLICE_EXT_REQUEST) &&
	       rseq_slice_tsc_ns() < end)
		;
	EXPECT_EQ(0, w);
	/*
	 * Every grant of this test ended by a revoke (the thread never
	 * yields or calls the kernel inside one) and none runs now; the
	 * re-requested one was not extended by a second grant, which would
	 * have left GRANTED set above.
	 */
	if (r >= 0) {
		EXPECT_LE(1, stat_delta("srevok", r));
		EXPECT_EQ(stat_delta("sgrant", g), stat_delta("srevok", r));
	}
}

/*
 * Rules 3 and 4: a thread that never yields loses the CPU; when it runs
 * again, GRANTED is already clear. The noise thread shares the CPU, so a
 * change of its round counter proves the test thread was switched out.
 * Also measures how long grants lasted, as this thread saw them.
 */
TEST_F_TIMEOUT(sem, revoked_before_user_code, 120)
{
	int rounds = variant->noise_sleep_ns > 1000000 ? 100 : 300;
	long long e = slice_stat("sexpir");
	uint64_t *held = calloc(rounds, sizeof(*held));
	unsigned int i, n = 0, stale = 0;
	char buf[32];
	uint64_t grant_ns;

	SLICE_NEEDS_GRANTS();
	ASSERT_NE(NULL, held);
	ASSERT_EQ(0, slice_param_get("grant_ns", buf, sizeof(buf)));
	grant_ns = strtoull(buf, NULL, 10);

	for (i = 0; i < (unsigned int)rounds; i++) {
		unsigned long r0;
		uint64_t t0, last;

		if (!wait_grant())
			break;
		t0 = rseq_slice_tsc_ns();
		last = t0;
		r0 = self->noise.rounds;
		for (;;) {
			unsigned long r = self->noise.rounds;
			uint32_t w = slice_word();

			if (r != r0) {
				/* Switched out and back: the grant must be gone. */
				if (w & RSEQ_SLICE_EXT_GRANTED)
					stale++;
				break;
			}
			if (!(w & RSEQ_SLICE_EXT_GRANTED))
				break;
			last = rseq_slice_tsc_ns();
		}
		held[n++] = last - t0;
		rseq_slice_word_store(&slice_self.ctrl, 0);
	}
	EXPECT_EQ(rounds, n);
	EXPECT_EQ(0, stale);
	if (n) {
		unsigned int j, k;

		for (j = 1; j < n; j++)
			for (k = j; k > 0 && held[k - 1] > held[k]; k--) {
				uint64_t t = held[k];

				held[k] = held[k - 1];
				held[k - 1] = t;
			}
		ksft_print_msg("grant held as seen by the thread, grant_ns %llu, %u grants: p50 %llu p90 %llu p99 %llu max %llu ns\n",
			       (unsigned long long)grant_ns, n,
			       (unsigned long long)held[n / 2],
			       (unsigned long long)held[n * 9 / 10],
			       (unsigned long long)held[n * 99 / 100],
			       (unsigned long long)held[n - 1]);
		/*
		 * Bounded by expiry, but the maximum of 100 or 300 measures
		 * the host too (1.03 s seen on a loaded 6.12-rt): the
		 * slack bounds nine grants in ten, STALL_NS every one.
		 */
		EXPECT_GT(grant_ns + EXPIRY_SLACK_NS, held[n * 9 / 10]);
		EXPECT_GT(grant_ns + STALL_NS, held[n - 1]);
	}
	if (e >= 0 && variant->noise_sleep_ns > 1000000)
		EXPECT_LE(1, stat_delta("sexpir", e));
	free(held);
}

/* Rule 7: enabled=0 gives no grants but keeps the registration. */
TEST_F(sem, disabled_gives_no_grants)
{
	uint64_t end;
	bool granted = false;
	uint32_t w = 0;

	SLICE_NEEDS_GRANTS();
	if (!is_root())
		SKIP(return, "needs root to write the enabled parameter");
	ASSERT_EQ(0, slice_param_set("enabled", "0"));
	ASSERT_EQ(1, slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_GET));
	end = rseq_slice_tsc_ns() + 300 * 1000 * 1000ULL;
	rseq_slice_word_store(&slice_self.ctrl, RSEQ_SLICE_EXT_REQUEST);
	while (rseq_slice_tsc_ns() < end) {
		w = slice_word();
		granted |= !!(w & RSEQ_SLICE_EXT_GRANTED);
	}
	rseq_slice_word_store(&slice_self.ctrl, 0);
	/* With the hooks gone, nothing touches the word at all. */
	EXPECT_FALSE(granted);
	EXPECT_EQ(RSEQ_SLICE_EXT_REQUEST, w);
	ASSERT_EQ(0, slice_param_set("enabled", "1"));
	EXPECT_EQ(1, slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_GET));
	EXPECT_EQ(1, grant_and_yield(_metadata));
}

/*
 * Rule 1: no grant on the return from a system call. A reader thread on
 * the same CPU blocks on a pipe; the writer runs SCHED_IDLE, so writing to
 * the pipe under REQUEST wakes the reader with a reschedule pending, which
 * happens on the way out of write() (voluntary preemption) or inside it
 * (full). The reader's counter shows it ran before write() returned.
 */
struct reader {
	int fd;
	volatile unsigned long ran;
};

static void *reader_fn(void *arg)
{
	struct reader *r = arg;
	char c;

	pin_self(slice_test_cpu());
	while (read(r->fd, &c, 1) == 1)
		r->ran++;
	return NULL;
}

TEST(no_grant_on_syscall_return)
{
	struct reader r = { 0 };
	unsigned int i, granted = 0, preempted = 0;
	pthread_t th;
	int p[2];

	struct sched_param idle = { 0 };

	rseq_slice_tsc_calibrate(0);
	ASSERT_EQ(0, pin_self(slice_test_cpu()));
	ASSERT_EQ(0, slice_enable_self());
	ASSERT_EQ(0, pipe(p));
	r.fd = p[0];
	ASSERT_EQ(0, pthread_create(&th, NULL, reader_fn, &r));
	/* Each TEST() runs in its own process: no need to restore it. */
	ASSERT_EQ(0, sched_setscheduler(0, SCHED_IDLE, &idle));
	for (i = 0; i < 400; i++) {
		unsigned long before = r.ran;
		uint32_t w;

		/* Let the reader block again. */
		while (r.ran != i)
			sched_yield();
		before = r.ran;
		rseq_slice_word_store(&slice_self.ctrl, RSEQ_SLICE_EXT_REQUEST);
		ASSERT_EQ(1, write(p[1], "x", 1));
		w = slice_word();
		if (r.ran != before)
			preempted++;
		if (w & RSEQ_SLICE_EXT_GRANTED)
			granted++;
		/* By the protocol: a grant after the read above must be yielded. */
		rseq_slice_word_end(&slice_self.ctrl, slice_self.fd);
	}
	close(p[1]);
	pthread_join(th, NULL);
	close(p[0]);
	ksft_print_msg("write() rescheduled on its way out %u of 400 times, %u grants after it\n",
		       preempted, granted);
	/*
	 * REQUEST stays set after write() returns, so an interrupt with a
	 * reschedule pending between the return and the look at the word
	 * may rightly grant (seen once in 400 on the debug kernel). A grant
	 * on the system call's return instead would replace the reschedule:
	 * the reader would not have run, every time.
	 */
	EXPECT_GE(preempted, 360);
	EXPECT_LE(granted, 8);
	slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_DISABLE);
}

/*
 * Rule 6: a system call inside a grant. A child gets a grant and calls
 * write() on a pipe, up to FOREIGN_TRIES times: a grant can end between
 * the child's look at the word and the call, and then the call is not
 * foreign. @tries counts the calls made, in shared memory. Returns the
 * child's wait status.
 *
 * The tests that wait for a kill try up to FOREIGN_KILL_TRIES times, with
 * 50 us grants as root: since the timer ends a grant itself (even one the
 * scheduler did not switch away from), what is left of a grant when the
 * thread sees it can be short under emulation. On a busy host one arm64
 * run found no live grant in 50 calls, and its abort run 6 in 50.
 */
#define FOREIGN_TRIES		50
#define FOREIGN_KILL_TRIES	1000

struct foreign {
	unsigned int tries;
	unsigned int dirty;	/* the word was not clear after the call */
	/* As root: calls that aborted a grant, and those that rescheduled. */
	unsigned int aborted, switched;
	unsigned int max_tries;	/* 0: FOREIGN_TRIES */
	/* Past FOREIGN_TRIES, up to FOREIGN_KILL_TRIES, until one aborted. */
	bool until_aborted;
	uint32_t extra;		/* bits added to the word before the call */
};

static int foreign_syscall_child(int *pipefd, struct foreign *f)
{
	struct noise noise;
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (pin_self(slice_test_cpu()) || slice_enable_self())
			_exit(20);
		if (noise_start_fair(&noise, slice_test_cpu(), 2000, 50000))
			_exit(21);
		while (f->tries < (f->max_tries ? f->max_tries : FOREIGN_TRIES) ||
		       (f->until_aborted && !f->aborted && f->tries < FOREIGN_KILL_TRIES)) {
			long long a0 = slice_stat("sabort");
			long s0 = thread_switches(), s1;
			unsigned long r0;
			uint32_t w = RSEQ_SLICE_EXT_GRANTED;

			if (!wait_grant())
				_exit(22);
			/* Only while the grant is live (see rerequest_inside_grant). */
			if (f->extra)
				__atomic_compare_exchange_n(&slice_self.ctrl, &w, w | f->extra, false,
							    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
			r0 = noise.rounds;
			f->tries++;
			if (write(pipefd[1], "x", 1) != 1)
				_exit(23);
			s1 = thread_switches();
			/*
			 * abort: a call that ended a grant rescheduled at its
			 * entry; the noise thread, waiting since its wakeup,
			 * or whichever task asked, ran before the call
			 * returned (as in yield_switches_out).
			 */
			if (a0 >= 0 && slice_stat("sabort") != a0) {
				f->aborted++;
				f->switched += noise.rounds != r0 || s1 > s0;
			}
			/* Still alive: the grant, if any, is over now. */
			if (slice_word() & ~f->extra)
				f->dirty++;
			rseq_slice_word_store(&slice_self.ctrl, 0);
		}
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

static unsigned int pipe_bytes(int fd)
{
	int n = 0;

	ioctl(fd, FIONREAD, &n);
	return n;
}

/*
 * The tests that set foreign_syscall or debug: the fixture puts every
 * parameter back, whatever assertion ended a test.
 */
FIXTURE(params)
{
	struct slice_params params;
};

FIXTURE_SETUP(params)
{
	SLICE_ONLY_FILTER();
	ASSERT_EQ(0, slice_params_save(&self->params));
}

FIXTURE_TEARDOWN(params)
{
	slice_params_restore(&self->params);
}

TEST_F(params, foreign_syscall_kill)
{
	struct foreign *f = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	long long k = slice_stat("skill");
	char buf[16];
	int p[2], status;

	SLICE_NEEDS_GRANTS();
	ASSERT_NE(MAP_FAILED, f);
	ASSERT_EQ(0, slice_param_get("foreign_syscall", buf, sizeof(buf)));
	if (strcmp(buf, "kill")) {
		if (!is_root())
			SKIP(return, "foreign_syscall is %s", buf);
		ASSERT_EQ(0, slice_param_set("foreign_syscall", "kill"));
	}
	if (is_root())
		ASSERT_EQ(0, slice_param_set_longest_grant());
	ASSERT_EQ(0, pipe(p));
	rseq_slice_tsc_calibrate(0);
	f->max_tries = FOREIGN_KILL_TRIES;
	status = foreign_syscall_child(p, f);
	ksft_print_msg("killed at call %u\n", f->tries);
	ASSERT_TRUE(WIFSIGNALED(status)) {
		TH_LOG("child status %#x after %u calls", status, f->tries);
	}
	EXPECT_EQ(SIGSEGV, WTERMSIG(status));
	/*
	 * Every call ran, the killing one too: the module never changes a
	 * call (tracers and seccomp see it as made), SIGSEGV comes on its
	 * way out, before the thread runs user code again.
	 */
	EXPECT_EQ(f->tries, pipe_bytes(p[0]));
	EXPECT_EQ(0, f->dirty);
	if (k >= 0)
		EXPECT_LE(1, stat_delta("skill", k));
}

TEST_F(params, foreign_syscall_abort)
{
	struct foreign *f = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	long long a = slice_stat("sabort");
	int p[2], status;

	SLICE_NEEDS_GRANTS();
	if (!is_root())
		SKIP(return, "needs root to set foreign_syscall=abort");
	ASSERT_NE(MAP_FAILED, f);
	ASSERT_EQ(0, slice_param_set("foreign_syscall", "abort"));
	/* Longer grants: more of the calls find theirs live (see above). */
	ASSERT_EQ(0, slice_param_set_longest_grant());
	ASSERT_EQ(0, pipe(p));
	rseq_slice_tsc_calibrate(0);
	/* On a loaded host 1 call in 50 has been the only one to abort. */
	f->until_aborted = true;
	status = foreign_syscall_child(p, f);
	ASSERT_TRUE(WIFEXITED(status)) {
		TH_LOG("child status %#x after %u calls", status, f->tries);
	}
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* Every call ran, and the grant was gone when it returned. */
	EXPECT_LE(FOREIGN_TRIES, f->tries);
	EXPECT_EQ(f->tries, pipe_bytes(p[0]));
	EXPECT_EQ(0, f->dirty);
	EXPECT_LE(1, stat_delta("sabort", a));
	/* Rule 6: abort reschedules at the call's entry. */
	ksft_print_msg("%u of %u calls aborted a grant, %u of those rescheduled\n",
		       f->aborted, f->tries, f->switched);
	EXPECT_LE(1, f->aborted);
	EXPECT_LE(f->aborted * 3 / 4, f->switched);
}

/*
 * Rule 7, debug at system call entry: under foreign_syscall=abort a call
 * inside a grant runs, unless debug finds the word inconsistent (here a
 * reserved bit, added while the grant is live): then SIGSEGV. Calls whose
 * grant ended before them are not checked, so the child tries until one
 * was.
 */
TEST_F(params, debug_checks_syscall_entry)
{
	struct foreign *f = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int p[2], status;

	SLICE_NEEDS_GRANTS();
	if (!is_root())
		SKIP(return, "needs root to set debug and foreign_syscall");
	ASSERT_NE(MAP_FAILED, f);
	ASSERT_EQ(0, pipe(p));
	rseq_slice_tsc_calibrate(0);
	ASSERT_EQ(0, slice_param_set("foreign_syscall", "abort"));
	ASSERT_EQ(0, slice_param_set("debug", "1"));
	ASSERT_EQ(0, slice_param_set_longest_grant());
	f->extra = 1U << 7;
	f->max_tries = FOREIGN_KILL_TRIES;
	status = foreign_syscall_child(p, f);
	ksft_print_msg("killed at call %u, %u calls had aborted a grant before\n",
		       f->tries, f->aborted);
	ASSERT_TRUE(WIFSIGNALED(status)) {
		TH_LOG("child status %#x after %u calls", status, f->tries);
	}
	EXPECT_EQ(SIGSEGV, WTERMSIG(status));
}

/*
 * Rule 7, debug: a control word that contradicts the kernel gets SIGSEGV
 * at the yield; without debug the same yield just returns 0.
 */
static int yield_with_word(uint32_t word)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		if (slice_enable_self())
			_exit(20);
		rseq_slice_word_store(&slice_self.ctrl, word);
		_exit(slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_YIELD) == 0 ? 0 : 21);
	}
	waitpid(pid, &status, 0);
	return status;
}

TEST_F(params, debug_checks_the_word)
{
	int status;

	if (!is_root())
		SKIP(return, "needs root to set debug");
	ASSERT_EQ(0, slice_param_set("debug", "0"));
	status = yield_with_word(RSEQ_SLICE_EXT_GRANTED);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	status = yield_with_word(RSEQ_SLICE_EXT_REQUEST);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	ASSERT_EQ(0, slice_param_set("debug", "1"));
	/* GRANTED without a grant. */
	status = yield_with_word(RSEQ_SLICE_EXT_GRANTED);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
	/* REQUEST still set at the yield. */
	status = yield_with_word(RSEQ_SLICE_EXT_REQUEST);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
	/* Reserved bits. */
	status = yield_with_word(1U << 7);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
	/* A consistent word passes. */
	status = yield_with_word(0);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ASSERT_EQ(0, slice_param_set("debug", "0"));
}

/*
 * Rule 6's SIGSEGV, and debug's, with the system call hook called through
 * ftrace's list function: the function tracer traces the function the
 * hook sits on, so that function has two ftrace users and ftrace calls
 * both from ftrace_ops_list_func(), with preemption disabled (arm64's 6.1
 * always does). The signal takes the sighand lock, which sleeps on
 * PREEMPT_RT: it must be sent where the thread may sleep. The module
 * asserts that (might_sleep()) where it sends it; a debug kernel
 * (DEBUG_ATOMIC_SLEEP) logs "sleeping function called from invalid
 * context" where it does not, as an RT kernel does when the lock is
 * contended. The kill's task work holds a module reference until it ran:
 * the count comes back. Root: the tracer, the parameters.
 *
 * The tracer traces schedule() too, whose hook is a direct call where the
 * kernel has them: ftrace then calls the hook's ops from the list as well,
 * and the grants the tests wait for must still come, on a preemptible
 * kernel too, where the list's end takes a pending reschedule. Under the
 * function_graph tracer as well, which replaces schedule()'s return
 * address on the stack to see it return.
 */
static const char * const traced_funcs[] = {
	/* 6.x (6.1's is a constant-propagated copy); 7.2's piece the grant's bit reaches. */
	"syscall_trace_enter", "syscall_trace_enter.constprop.0", "trace_syscall_enter", NULL
};

static const char * const traced_schedule[] = { "schedule", NULL };

/*
 * A bound for a hung test, not a slow one: each test turns the function
 * tracer on and off (ftrace rewrites its call sites, which a debug kernel
 * under emulation does slowly) and may fork up to FOREIGN_KILL_TRIES
 * children; on a loaded host the harness's 30 s were seen to run out.
 */
#define TRACED_TIMEOUT	300

#define SLEEP_IN_ATOMIC	"sleeping function called from invalid context"
#define SCHED_IN_ATOMIC	"scheduling while atomic"

/* The most ftrace users any of @names has now, or -1. */
static int traced_users(const char * const *names)
{
	char line[512];
	int most = -1, i, n;
	FILE *f = fopen(SLICE_TRACING "enabled_functions", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		for (i = 0; names[i]; i++) {
			size_t len = strlen(names[i]);

			if (!strncmp(line, names[i], len) &&
			    sscanf(line + len, " (%d)", &n) == 1 && n > most)
				most = n;
		}
	}
	fclose(f);
	return most;
}

FIXTURE(traced)
{
	struct slice_params params;
	long long refcnt;
	int kmsg;
	size_t len;
	char log[65536];
};

/*
 * Adds @names to the function tracer's filter, one write per name ended
 * by a newline: a name this kernel lacks fails alone, and none runs into
 * the next (ftrace joins writes that end inside a name). How many were set.
 */
static int traced_filter_add(const char * const *names)
{
	char name[128];
	int fd, i, set = 0;

	fd = open(SLICE_TRACING "set_ftrace_filter", O_WRONLY | O_APPEND);
	if (fd < 0)
		return -1;
	for (i = 0; names[i]; i++) {
		int len = snprintf(name, sizeof(name), "%s\n", names[i]);

		set += write(fd, name, len) == len;
	}
	close(fd);
	return set;
}

FIXTURE_VARIANT(traced)
{
	const char *tracer;
};

FIXTURE_VARIANT_ADD(traced, function)
{
	.tracer = "function",
};

FIXTURE_VARIANT_ADD(traced, function_graph)
{
	.tracer = "function_graph",
};

FIXTURE_SETUP(traced)
{
	int users;

	SLICE_ONLY_FILTER();
	/* Out at once: the 6.1 harness runs a test whose setup skipped. */
	if (!is_root())
		SKIP(longjmp(_metadata->env, 1), "sets the function tracer and the parameters");
	ASSERT_EQ(0, slice_params_save(&self->params));
	ASSERT_EQ(0, slice_param_set_longest_grant());
	self->kmsg = slice_kmsg_open();
	ASSERT_LE(0, self->kmsg);
	ASSERT_EQ(0, slice_write_file(SLICE_TRACING "set_ftrace_filter", ""));
	ASSERT_LT(0, traced_filter_add(traced_funcs));
	ASSERT_EQ(1, traced_filter_add(traced_schedule));
	ASSERT_EQ(0, slice_write_file(SLICE_TRACING "current_tracer", variant->tracer));
	/* Registered, this thread arms the hooks: two users of each function. */
	ASSERT_EQ(0, slice_enable_self());
	users = traced_users(traced_funcs);
	ksft_print_msg("ftrace users of the hooked function: %d\n", users);
	EXPECT_LE(2, users);
	users = traced_users(traced_schedule);
	ksft_print_msg("ftrace users of schedule(): %d\n", users);
	EXPECT_LE(2, users);
	ASSERT_EQ(0, slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_DISABLE));
	self->refcnt = slice_module_refcnt();
	ASSERT_LE(0, self->refcnt);
	rseq_slice_tsc_calibrate(0);
}

FIXTURE_TEARDOWN(traced)
{
	slice_write_file(SLICE_TRACING "current_tracer", "nop");
	slice_write_file(SLICE_TRACING "set_ftrace_filter", "");
	slice_params_restore(&self->params);
	/* Sent where the thread may sleep, and the module's count back. */
	EXPECT_EQ(0, slice_kmsg_count(self->kmsg, self->log, &self->len, sizeof(self->log),
				      SLEEP_IN_ATOMIC));
	EXPECT_EQ(0, slice_kmsg_count(self->kmsg, self->log, &self->len, sizeof(self->log),
				      SCHED_IN_ATOMIC));
	EXPECT_EQ(self->refcnt, slice_module_refcnt());
	close(self->kmsg);
}

TEST_F_TIMEOUT(traced, foreign_syscall_kill, TRACED_TIMEOUT)
{
	struct foreign *f = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	long long k = slice_stat("skill");
	int p[2], status;

	SLICE_NEEDS_GRANTS();
	ASSERT_NE(MAP_FAILED, f);
	ASSERT_EQ(0, slice_param_set("foreign_syscall", "kill"));
	ASSERT_EQ(0, pipe(p));
	f->max_tries = FOREIGN_KILL_TRIES;
	status = foreign_syscall_child(p, f);
	ksft_print_msg("killed at call %u\n", f->tries);
	ASSERT_TRUE(WIFSIGNALED(status)) {
		TH_LOG("child status %#x after %u calls", status, f->tries);
	}
	EXPECT_EQ(SIGSEGV, WTERMSIG(status));
	EXPECT_EQ(f->tries, pipe_bytes(p[0]));
	EXPECT_LE(1, stat_delta("skill", k));
}

TEST_F_TIMEOUT(traced, debug_kill, TRACED_TIMEOUT)
{
	struct foreign *f = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int p[2], status;

	SLICE_NEEDS_GRANTS();
	ASSERT_NE(MAP_FAILED, f);
	ASSERT_EQ(0, slice_param_set("foreign_syscall", "abort"));
	ASSERT_EQ(0, slice_param_set("debug", "1"));
	ASSERT_EQ(0, pipe(p));
	f->extra = 1U << 7;
	f->max_tries = FOREIGN_KILL_TRIES;
	status = foreign_syscall_child(p, f);
	ksft_print_msg("killed at call %u\n", f->tries);
	ASSERT_TRUE(WIFSIGNALED(status)) {
		TH_LOG("child status %#x after %u calls", status, f->tries);
	}
	EXPECT_EQ(SIGSEGV, WTERMSIG(status));
}

/* The program a kill_across_exec child execs: it must never run. */
#define KILL_EXEC_ARGV0	"kill_exec_check"

/* glibc passes a constructor main()'s arguments. */
static void __attribute__((constructor)) kill_exec_check(int argc, char **argv)
{
	if (argc > 0 && !strcmp(argv[0], KILL_EXEC_ARGV0))
		_exit(0);
}

/*
 * Fork children that each get a grant and make one foreign call, @exec:
 * execve(), else exit_group(), until a call finds its grant live (skill
 * moves) or FOREIGN_KILL_TRIES children have tried. Returns the status of
 * the child whose call did, or -1.
 */
static int kill_one_call(bool exec, unsigned int *tries)
{
	struct noise noise;
	long long k;
	int status;
	pid_t pid;

	for (*tries = 1; *tries <= FOREIGN_KILL_TRIES; (*tries)++) {
		k = slice_stat("skill");
		pid = fork();
		if (pid < 0)
			return -1;
		if (pid == 0) {
			if (pin_self(slice_test_cpu()) || slice_enable_self())
				_exit(20);
			if (noise_start_fair(&noise, slice_test_cpu(), 2000, 50000))
				_exit(21);
			if (!wait_grant())
				_exit(22);
			if (exec)
				execl("/proc/self/exe", KILL_EXEC_ARGV0, NULL);
			syscall(SYS_exit_group, 0);
			_exit(23);
		}
		if (waitpid(pid, &status, 0) != pid)
			return -1;
		if (WIFEXITED(status) && WEXITSTATUS(status) >= 20)
			return status;
		if (stat_delta("skill", k) > 0)
			return status;
	}
	return -1;
}

/*
 * A foreign execve(): the registration ends with the old program, the
 * SIGSEGV comes with the new one, before its first instruction.
 */
TEST_F_TIMEOUT(traced, kill_across_exec, TRACED_TIMEOUT)
{
	unsigned int tries;
	int status;

	SLICE_NEEDS_GRANTS();
	ASSERT_EQ(0, slice_param_set("foreign_syscall", "kill"));
	status = kill_one_call(true, &tries);
	ksft_print_msg("killed at child %u\n", tries);
	ASSERT_NE(-1, status);
	ASSERT_TRUE(WIFSIGNALED(status)) {
		TH_LOG("child status %#x", status);
	}
	EXPECT_EQ(SIGSEGV, WTERMSIG(status));
}

/*
 * A foreign exit_group(): the call never returns; the kill's task work
 * runs in do_exit() and sends nothing to an exiting thread, but gives its
 * module reference back (the teardown's count).
 */
TEST_F_TIMEOUT(traced, kill_at_exit, TRACED_TIMEOUT)
{
	unsigned int tries;
	int status;

	SLICE_NEEDS_GRANTS();
	ASSERT_EQ(0, slice_param_set("foreign_syscall", "kill"));
	status = kill_one_call(false, &tries);
	ksft_print_msg("exited granted at child %u\n", tries);
	ASSERT_NE(-1, status);
	ASSERT_TRUE(WIFEXITED(status)) {
		TH_LOG("child status %#x", status);
	}
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* Rule 8: the statistics file and its thread count. */
TEST(stats_count_threads)
{
	static const char * const names[] = {
		"sgrant", "sexpir", "srevok", "syield", "sabort", "skill", "sdeny",
		"sunres", "threads", "pinned",
	};
	long long t0, p0;
	unsigned int i;

	if (!is_root())
		SKIP(return, "debugfs is root's");
	/* Requests at exits the module could not place: none expected. */
	ksft_print_msg("sunres: %lld\n", slice_stat("sunres"));
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		long long v = slice_stat(names[i]);

		if (v < 0)
			TH_LOG("%s missing from " SLICE_STATS, names[i]);
		EXPECT_LE(0, v);
	}
	/*
	 * The earlier tests' registrations are released from a work item
	 * after their processes ended: wait until none is left (or 60 s,
	 * should another program hold one), so the counts hold still.
	 */
	slice_stats_settle(0, 0, &t0, &p0);
	ASSERT_EQ(0, slice_enable_self());
	EXPECT_EQ(t0 + 1, slice_stat("threads"));
	EXPECT_EQ(p0 + 1, slice_stat("pinned"));
	ASSERT_EQ(0, slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_DISABLE));
	EXPECT_EQ(t0, slice_stat("threads"));
}

/* Rule 9: state belongs to the thread. */
static void *thread_get(void *arg)
{
	int fd = *(int *)arg;

	return (void *)(long)slice_ioctl(fd, RSEQ_SLICE_IOC_GET);
}

static void *thread_enable_exit(void *arg)
{
	return (void *)(long)slice_enable_self();
}

static void *thread_disable(void *arg)
{
	int fd = *(int *)arg;

	return (void *)(long)slice_ioctl(fd, RSEQ_SLICE_IOC_DISABLE);
}

TEST(lifecycle_threads_are_independent)
{
	long long t0 = slice_stat("threads");
	pthread_t th;
	void *ret;

	ASSERT_EQ(0, slice_enable_self());
	/* A new thread starts disabled... */
	ASSERT_EQ(0, pthread_create(&th, NULL, thread_get, &slice_self.fd));
	ASSERT_EQ(0, pthread_join(th, &ret));
	EXPECT_EQ(0, (long)ret);
	/* ...its DISABLE leaves this thread alone... */
	ASSERT_EQ(0, pthread_create(&th, NULL, thread_disable, &slice_self.fd));
	ASSERT_EQ(0, pthread_join(th, &ret));
	EXPECT_EQ(0, (long)ret);
	EXPECT_EQ(1, slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_GET));
	/* ...and its registration ends with it. */
	ASSERT_EQ(0, pthread_create(&th, NULL, thread_enable_exit, NULL));
	ASSERT_EQ(0, pthread_join(th, &ret));
	EXPECT_EQ(0, (long)ret);
	if (t0 >= 0) {
		uint64_t end = now_ns() + 60 * 1000000000ULL;

		/* The exit path releases it at once; the count follows. */
		while (slice_stat("threads") != t0 + 1 && now_ns() < end)
			usleep(1000);
		EXPECT_EQ(t0 + 1, slice_stat("threads"));
	}
	slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_DISABLE);
}

TEST(lifecycle_fork_not_inherited)
{
	pid_t pid;
	int status;

	ASSERT_EQ(0, slice_enable_self());
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_GET));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(1, slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_GET));
	slice_ioctl(slice_self.fd, RSEQ_SLICE_IOC_DISABLE);
}

/* exec: the new program of an enabled thread starts disabled. */
#define EXEC_CHECK_ENV	"SLICE_EXEC_CHECK_FD"

static void __attribute__((constructor)) exec_check(void)
{
	const char *fd = getenv(EXEC_CHECK_ENV);

	if (fd)
		_exit(slice_ioctl(atoi(fd), RSEQ_SLICE_IOC_GET));
}

TEST(lifecycle_exec_drops)
{
	long long t0 = slice_stat("threads");
	char fdstr[16];
	pid_t pid;
	int status;

	pid = slice_fork_enabled();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		snprintf(fdstr, sizeof(fdstr), "%d", slice_self.fd);
		setenv(EXEC_CHECK_ENV, fdstr, 1);
		/* Keep the fd across exec so the new program can ask. */
		fcntl(slice_self.fd, F_SETFD, 0);
		execl("/proc/self/exe", "exec_check", NULL);
		_exit(21);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	if (t0 >= 0) {
		uint64_t end = now_ns() + 60 * 1000000000ULL;

		while (slice_stat("threads") != t0 && now_ns() < end)
			usleep(1000);
		EXPECT_EQ(t0, slice_stat("threads"));
	}
}

/*
 * Local timer interrupts taken so far by @cpu, from /proc/interrupts
 * (@fd, opened once): the "LOC:" line on x86 (the local APIC timer); on
 * arm64 the per-CPU interrupt named "arch_timer" (the generic timer's,
 * "NN: counts... GICv2 27 Level arch_timer"). -1 if there is none.
 */
static long long local_timer_irqs(int fd, int cpu)
{
	static char buf[65536];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	char *line, *save;
	long long v = -1;

	if (n <= 0)
		return -1;
	buf[n] = 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p = line;
		int i;

		while (*p == ' ')
			p++;
#if defined(__aarch64__)
		if (!strstr(p, " arch_timer"))
			continue;
		p = strchr(p, ':');
		if (!p)
			continue;
		p++;
#else
		if (strncmp(p, "LOC:", 4))
			continue;
		p += 4;
#endif
		for (i = 0; i <= cpu; i++)
			v = strtoll(p, &p, 10);
		break;
	}
	return v;
}

/* One counter of the module's statistics, from @fd (opened once): -1 if unreadable. */
static long long stat_fd_value(int fd, const char *name)
{
	char buf[2048], key[64], *line, *save;
	ssize_t n = fd < 0 ? -1 : pread(fd, buf, sizeof(buf) - 1, 0);
	long long v;

	if (n <= 0)
		return -1;
	buf[n] = 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%63[^:]: %lld", key, &v) == 2 && !strcmp(key, name))
			return v;
	}
	return -1;
}

/*
 * Rule 1, "a reschedule pending": interrupts that return to a thread
 * with REQUEST set but nothing else to run neither grant nor clear
 * REQUEST. Alone on its CPU, the thread holds REQUEST over windows of
 * 30 ms; a window counts when it saw 5 timer interrupts or more (from
 * /proc/interrupts, read outside the window; HZ is 250) and nothing else
 * took the CPU (the word still reads REQUEST). A kernel worker waking
 * there spoils a window; the test runs until one is clean. On
 * PREEMPT_RT per-CPU threads (rcuc, ktimers) take the CPU every few
 * tens of milliseconds: no 100 ms window was clean in 6271 on 6.12-rt.
 * Both files stay open: one closed every window is freed through RCU,
 * whose callbacks on PREEMPT_RT run in the rcuc thread the next tick
 * wakes there.
 */
#define RULE1_WINDOW_MS	30
FIXTURE(rule1)
{
};

FIXTURE_SETUP(rule1)
{
}

FIXTURE_TEARDOWN(rule1)
{
}

TEST_F_TIMEOUT(rule1, no_grant_without_reschedule, 300)
{
	int cpu = slice_test_cpu(), windows = 0;
	int irqs = open("/proc/interrupts", O_RDONLY), stats = open(SLICE_STATS, O_RDONLY);
	long long g0 = stat_fd_value(stats, "sgrant"), d0 = stat_fd_value(stats, "sdeny");
	uint64_t end = now_ns() + 240 * 1000000000ULL;
	long long ticks = 0;
	bool clean = false;

	rseq_slice_tsc_calibrate(0);
	ASSERT_EQ(0, pin_self(cpu));
	ASSERT_EQ(0, slice_enable_self());
	ASSERT_LE(0, local_timer_irqs(irqs, cpu));
	while (!clean && now_ns() < end) {
		long long t0 = local_timer_irqs(irqs, cpu), g = stat_fd_value(stats, "sgrant");
		uint64_t stop = rseq_slice_tsc_ns() + RULE1_WINDOW_MS * 1000000ULL;

		windows++;
		rseq_slice_word_request(&slice_self.ctrl);
		while (rseq_slice_tsc_ns() < stop && slice_word() == RSEQ_SLICE_EXT_REQUEST)
			;
		/*
		 * End the window by the protocol: another task may have taken
		 * the CPU (REQUEST cleared) or a grant come (then yield), even
		 * after the last read. A plain store would hide that grant and
		 * make the next system call a foreign one.
		 */
		if (rseq_slice_word_end(&slice_self.ctrl, slice_self.fd) != RSEQ_SLICE_END_SUCCESS)
			continue;
		ticks = local_timer_irqs(irqs, cpu) - t0;
		/* Root can also see that no grant was counted meanwhile. */
		clean = ticks >= 5 && (g < 0 || stat_fd_value(stats, "sgrant") == g);
	}
	ksft_print_msg("%d windows of %d ms; the clean one took %lld timer interrupts with REQUEST set\n",
		       windows, RULE1_WINDOW_MS, ticks);
	ASSERT_TRUE(clean) TH_LOG("no window without another task on CPU %d", cpu);
	if (g0 >= 0)
		ksft_print_msg("sgrant +%lld, sdeny +%lld over all windows\n",
			       stat_fd_value(stats, "sgrant") - g0, stat_fd_value(stats, "sdeny") - d0);
	close(irqs);
	if (stats >= 0)
		close(stats);
}

/*
 * The store rule1.grant_on_exception_return faults on: its address is
 * where a grant given on the fault's return resumes the thread.
 */
extern const char rule1_fault_store[];

static void __attribute__((noinline)) rule1_store(volatile char *p)
{
#if defined(__aarch64__)
	asm volatile(".globl rule1_fault_store\n"
		     "rule1_fault_store:\n\t"
		     "strb %w1, [%0]" : : "r"(p), "r"(1) : "memory");
#else
	asm volatile(".globl rule1_fault_store\n"
		     "rule1_fault_store:\n\t"
		     "movb $1, (%0)" : : "r"(p) : "memory");
#endif
}

/*
 * The frame a page fault's return has in the grant event's stack trace:
 * x86's fault entry; on arm64 a user data abort goes el0t_64_sync ->
 * el0t_64_sync_handler -> el0_da (noinstr, so never inlined), read from
 * arch/arm64/kernel/entry-common.c of 6.1 and 6.12, while an interrupt
 * goes el0t_64_irq -> el0t_64_irq_handler -> el0_interrupt.
 */
#if defined(__aarch64__)
#define RULE1_FAULT_FRAME	"=> el0_da"
#else
#define RULE1_FAULT_FRAME	"=> asm_exc_page_fault"
#endif

/*
 * Whether the kernel preempts in kernel mode (preempt=full) for the
 * noise's request. 6.1-rt has the RT patch set's own lazy preemption, no
 * dynamic preemption (no such file), and it preempts there for the
 * tick's lazy request too: 0 grants on a page fault's return in 29514
 * rounds of 512 faults. 6.12-rt's mainline lazy mode ("(lazy)") does not.
 */
static bool preempt_full(void)
{
	char buf[128] = "";

	if (slice_read_file("/sys/kernel/debug/sched/preempt", buf, sizeof(buf)) < 0)
		return slice_kernel_rt();
	return strstr(buf, "(full)");
}

/*
 * Grant events in the trace that resume at @ip and whose stack trace (the
 * event's stacktrace trigger) returns from a page fault; *all gets the
 * number of grant events.
 */
static long rule1_fault_grants(unsigned long ip, long *all)
{
	char line[512], at[64];
	bool in_grant = false, counted = false;
	long n = 0;
	FILE *f = fopen(SLICE_TRACING "trace", "r");

	*all = 0;
	if (!f)
		return -1;
	snprintf(at, sizeof(at), " ip=0x%lx", ip);
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "rseq_slice_grant:")) {
			(*all)++;
			in_grant = strstr(line, at);
			counted = false;
		} else if (in_grant && !counted && strstr(line, RULE1_FAULT_FRAME)) {
			n++;
			counted = true;
		}
	}
	fclose(f);
	return n;
}

/*
 * Rule 1, "or exception": the return from a page fault grants as an
 * interrupt's return does. The thread holds REQUEST while it stores into
 * pages that are not there, so that most of its time is spent in the
 * fault handler; a noise thread on its CPU wakes often. A wakeup or tick
 * taken inside the handler after its last point of voluntary preemption
 * leaves the reschedule pending for the fault's return, which grants.
 * The grant event's stack trace (a stacktrace trigger) shows which entry
 * returns: the fault's (RULE1_FAULT_FRAME), not a timer interrupt taken just after
 * the fault's return (that one resumes at the same store). Under
 * preempt=full the handler is preempted instead (rule 2 then clears
 * REQUEST), so the case cannot happen there. Root only: tracefs.
 */
#define RULE1_PAGES	512
#define RULE1_EVENT	SLICE_TRACING "events/rseq_slice/rseq_slice_grant/"

TEST_F_TIMEOUT(rule1, grant_on_exception_return, 300)
{
	int cpu = slice_test_cpu(), rounds = 0, ends = 0;
	size_t len = RULE1_PAGES * 4096UL, i;
	uint64_t end = now_ns() + 240 * 1000000000ULL;
	long at_fault = 0, all = 0;
	int madv = 0;
	char filter[64];
	struct noise n;
	char *mem;

	SLICE_NEEDS_GRANTS();
	if (!is_root())
		SKIP(return, "tracefs is root's");
	if (preempt_full())
		SKIP(return, "preempt=full (or 6.1-rt) preempts inside the fault handler");
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	madvise(mem, len, MADV_NOHUGEPAGE);
	ASSERT_EQ(0, pin_self(cpu));
	ASSERT_EQ(0, slice_enable_self());
	snprintf(filter, sizeof(filter), "pid == %ld", (long)syscall(SYS_gettid));
	ASSERT_EQ(0, slice_trace_reset("4096"));
	ASSERT_EQ(0, slice_write_file(RULE1_EVENT "filter", filter));
	ASSERT_EQ(0, slice_write_file(RULE1_EVENT "trigger", "stacktrace"));
	ASSERT_EQ(0, slice_trace_event("rseq_slice/rseq_slice_grant", 1));
	/* From here to the trigger's removal, no ASSERT may leave. */
	noise_start(&n, cpu, 20 * 1000, 50 * 1000);
	while (at_fault <= 0 && !madv && now_ns() < end) {
		rounds++;
		/* A system call: REQUEST is clear here. */
		madv = madvise(mem, len, MADV_DONTNEED);
		rseq_slice_word_request(&slice_self.ctrl);
		for (i = 0; i < len; i += 4096) {
			rule1_store(mem + i);
			if (slice_word() == RSEQ_SLICE_EXT_REQUEST)
				continue;
			/* Granted (yield) or interrupted: end, ask again. */
			rseq_slice_word_end(&slice_self.ctrl, slice_self.fd);
			ends++;
			rseq_slice_word_request(&slice_self.ctrl);
		}
		rseq_slice_word_end(&slice_self.ctrl, slice_self.fd);
		at_fault = rule1_fault_grants((unsigned long)rule1_fault_store, &all);
	}
	noise_stop(&n);
	slice_trace_event("rseq_slice/rseq_slice_grant", 0);
	/* A trigger left on a module's event outlives the module's unload. */
	slice_write_file(RULE1_EVENT "trigger", "!stacktrace");
	slice_write_file(RULE1_EVENT "filter", "0");
	munmap(mem, len);
	ksft_print_msg("%d rounds of %d faults, %d sections ended early: %ld grants, %ld on a page fault's return\n",
		       rounds, RULE1_PAGES, ends, all, at_fault);
	ASSERT_EQ(0, madv);
	ASSERT_LT(0, at_fault) TH_LOG("no grant on a page fault's return in 240 s");
}

TEST_HARNESS_MAIN
