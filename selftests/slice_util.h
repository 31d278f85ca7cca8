/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the rseq_slice selftests: the device, a thread's
 * registration, the module's statistics and parameters, CPUs. The
 * protocol itself and the TSC clock are librseq-slice's (lib/rseq_slice.h).
 */
#ifndef SLICE_UTIL_H
#define SLICE_UTIL_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <linux/rseq_slice.h>
#include <rseq_slice.h>
#include "clock.h"

#define SLICE_STATS	"/sys/kernel/debug/rseq_slice/stats"
#define SLICE_PARAMS	"/sys/module/rseq_slice/parameters/"

static __thread struct rseq_slice_thread slice_self = { .fd = -1 };

/*
 * The harness ends each test's child with _exit(): with stdout in a file,
 * whatever ksft_print_msg() buffered would be lost. Line-buffer it.
 */
__attribute__((constructor)) static void slice_util_line_buffered(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
}

/*
 * How long a grant may be held past grant_ns. EXPIRY_SLACK_NS: the slack
 * of emulated timers (QEMU TCG) and of a loaded host, which can stop a
 * guest's vCPUs for tens of milliseconds while the guest's clock runs on
 * (seen: 24 ms); a bound on most grants (p90, p99). STALL_NS: the longest
 * such stop seen in the middle of a grant is 3.7 s; a bound on every one.
 */
#define EXPIRY_SLACK_NS	(250 * 1000 * 1000ULL)
#define STALL_NS	(30 * 1000 * 1000 * 1000ULL)

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline int slice_open(void)
{
	return open(RSEQ_SLICE_DEVICE, O_RDWR | O_CLOEXEC);
}

/* Register @ctrl for the calling thread through @fd: 0 or -errno. */
static inline int slice_enable_word(int fd, void *ctrl)
{
	struct rseq_slice_register reg = { .ctrl = (uintptr_t)ctrl };

	return ioctl(fd, RSEQ_SLICE_IOC_ENABLE, &reg) ? -errno : 0;
}

/* Open the device and register this thread's slice_self: 0 or -errno. */
static inline int slice_enable_self(void)
{
	if (slice_self.fd < 0)
		slice_self.fd = slice_open();
	if (slice_self.fd < 0)
		return -errno;
	slice_self.ctrl = 0;
	slice_self.depth = 0;
	return slice_enable_word(slice_self.fd, &slice_self.ctrl);
}

/*
 * fork() with the child registered (registrations are not inherited): in
 * the child a descriptor of its own in slice_self.fd, and slice_self.ctrl
 * enabled; a child that cannot exits 20. Returns what fork() returns.
 */
static inline pid_t slice_fork_enabled(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		slice_self.fd = slice_open();
		if (slice_self.fd < 0 || slice_enable_word(slice_self.fd, &slice_self.ctrl))
			_exit(20);
	}
	return pid;
}

/* REQUEST, then spin until the kernel changes the word or @ns pass. */
static inline uint32_t request_wait(uint32_t *w, uint64_t ns)
{
	uint64_t end = rseq_slice_tsc_ns() + ns;
	uint32_t v;

	rseq_slice_word_request(w);
	while ((v = rseq_slice_word_load(w)) == RSEQ_SLICE_EXT_REQUEST && rseq_slice_tsc_ns() < end)
		;
	return v;
}

static inline int slice_ioctl(int fd, unsigned long cmd)
{
	int ret = ioctl(fd, cmd, 0);

	return ret < 0 ? -errno : ret;
}

static inline uint32_t slice_word(void)
{
	return rseq_slice_word_load(&slice_self.ctrl);
}

/* One "name: value" counter of a statistics file; -1 if unreadable. */
static inline long long stat_file_value(const char *path, const char *name)
{
	char line[128], key[64];
	long long val = -1, v;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63[^:]: %lld", key, &v) == 2 && !strcmp(key, name))
			val = v;
	}
	fclose(f);
	return val;
}

/* One counter of rseq_slice/stats; -1 if unreadable (not root). */
static inline long long slice_stat(const char *name)
{
	return stat_file_value(SLICE_STATS, name);
}

static inline bool is_root(void)
{
	return geteuid() == 0;
}

/* Write @val to @path (truncating): 0 or -errno. */
static inline int slice_write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_TRUNC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Read @path into @buf, without a trailing newline: 0 or -errno. */
static inline int slice_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY), ret;
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	close(fd);
	buf[n] = 0;
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	return 0;
}

/* Write a module parameter (root): 0 or -errno. */
static inline int slice_param_set(const char *name, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), SLICE_PARAMS "%s", name);
	return slice_write_file(path, val);
}

static inline int slice_param_get(const char *name, char *buf, size_t len)
{
	char path[256];

	snprintf(path, sizeof(path), SLICE_PARAMS "%s", name);
	return slice_read_file(path, buf, len);
}

/*
 * Set grant_ns to the longest grant the module takes (root), as
 * RSEQ_SLICE_IOC_INFO tells it: tests that need a call to reach the
 * kernel inside a grant get more such calls. 0 or -errno.
 */
static inline int slice_param_set_longest_grant(void)
{
	struct rseq_slice_info info;
	int fd = slice_open(), ret;
	char buf[16];

	if (fd < 0)
		return -errno;
	ret = ioctl(fd, RSEQ_SLICE_IOC_INFO, &info) ? -errno : 0;
	close(fd);
	if (ret)
		return ret;
	snprintf(buf, sizeof(buf), "%u", info.grant_ns_max);
	return slice_param_set("grant_ns", buf);
}

/*
 * The module's parameters, saved by a fixture's setup and put back by
 * its teardown (root), so that a test ended early by an assertion never
 * leaves the module changed (say enabled=0) for the tests after it. Only
 * those that differ are written back: a write of enabled re-arms hooks.
 */
#define SLICE_NPARAMS	4
static const char * const slice_param_names[SLICE_NPARAMS] = {
	"grant_ns", "enabled", "debug", "foreign_syscall",
};

struct slice_params {
	char val[SLICE_NPARAMS][32];
	bool saved;
};

/* 0 or -errno (the module is not loaded). */
static inline int slice_params_save(struct slice_params *p)
{
	int i, ret;

	p->saved = false;
	for (i = 0; i < SLICE_NPARAMS; i++) {
		ret = slice_param_get(slice_param_names[i], p->val[i], sizeof(p->val[i]));
		if (ret)
			return ret;
	}
	p->saved = true;
	return 0;
}

/* The saved value of @name. */
static inline const char *slice_params_val(const struct slice_params *p, const char *name)
{
	int i;

	for (i = 0; i < SLICE_NPARAMS; i++)
		if (!strcmp(slice_param_names[i], name))
			return p->val[i];
	return "";
}

static inline void slice_params_restore(const struct slice_params *p)
{
	char now[32];
	int i;

	if (!p->saved || !is_root())
		return;
	for (i = 0; i < SLICE_NPARAMS; i++) {
		if (slice_param_get(slice_param_names[i], now, sizeof(now)) ||
		    strcmp(now, p->val[i]))
			slice_param_set(slice_param_names[i], p->val[i]);
	}
}

/* The CPU the slice tests run on: not CPU 0 where possible, as upstream. */
static inline int slice_test_cpu(void)
{
	return sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 1 : 0;
}

static inline int pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/* Test length in seconds: RSEQ_SLICE_TEST_SECS, else @dflt. */
static inline double slice_test_secs(double dflt)
{
	const char *s = getenv("RSEQ_SLICE_TEST_SECS");

	return s ? atof(s) : dflt;
}

/* The kernel is PREEMPT_RT: uname -v names it. */
static inline bool slice_kernel_rt(void)
{
	struct utsname u;

	return !uname(&u) && strstr(u.version, "PREEMPT_RT");
}

/*
 * The kernels where the module cannot grant (RSEQ_SLICE_INFO_NO_GRANTS):
 * PREEMPT_RT without a lazy reschedule bit, where the module defers
 * nothing (module/compat.h). Of the kernels this project runs, Debian's
 * 6.12 rt-arm64 only: arm64 has no TIF_NEED_RESCHED_LAZY there, 6.1-rt
 * has the RT patch set's own on both architectures, 6.12-rt on amd64
 * mainline's.
 */
static inline bool slice_kernel_no_lazy(void)
{
	struct utsname u;

	return !uname(&u) && strstr(u.version, "PREEMPT_RT") &&
	       !strcmp(u.machine, "aarch64") && !strncmp(u.release, "6.12.", 5);
}

/* RSEQ_SLICE_IOC_INFO's flags, or -1 if the device does not answer. */
static inline long long slice_info_flags(void)
{
	struct rseq_slice_info info;
	int fd = slice_open();
	long long ret = -1;

	if (fd >= 0 && !ioctl(fd, RSEQ_SLICE_IOC_INFO, &info))
		ret = info.flags;
	if (fd >= 0)
		close(fd);
	return ret;
}

/*
 * The module cannot grant here (RSEQ_SLICE_INFO_NO_GRANTS): asked once.
 * A test that needs a grant starts with SLICE_NEEDS_GRANTS() and skips
 * there, by this reason, which run_suite accepts only where info_probe
 * says the same. Whether the flag tells the truth is abi_test's (the
 * kernel's kind) and rt_test's (a fair competitor gets no grant there,
 * and some everywhere else).
 */
static inline bool slice_no_grants(void)
{
	static int no_grants = -1;

	if (no_grants < 0) {
		long long flags = slice_info_flags();

		no_grants = flags >= 0 && (flags & RSEQ_SLICE_INFO_NO_GRANTS);
	}
	return no_grants;
}

#define SLICE_NO_GRANTS_REASON	"this kernel cannot grant (RSEQ_SLICE_INFO_NO_GRANTS)"
#define SLICE_NEEDS_GRANTS() do {					\
	if (slice_no_grants())						\
		SKIP(return, SLICE_NO_GRANTS_REASON);			\
} while (0)

/*
 * How the noise asks for the test CPU (docs/design.md, "On PREEMPT_RT"):
 * - timer: it sleeps, and its timer's wakeup is the reschedule request.
 *   On PREEMPT_RT a fair task's timer expires in the ktimers thread
 *   (SCHED_FIFO), whose wakeup is a TIF_NEED_RESCHED the module never
 *   defers there: grants almost never happen (rt_test's
 *   fair_timer_wakeup: 0-8 rounds of 200 deferred).
 * - tick: it never sleeps; it stays runnable, so the tick preempts the
 *   test's thread for it once that thread's slice is used up, and on
 *   PREEMPT_RT that request is the lazy one the module defers (rt_test's
 *   fair_tick_preemption). It runs at nice 19 and, having run, gives the
 *   CPU back (sched_yield()): weighing 15 to the test thread's 1024, a
 *   few microseconds of running put it past the test thread's virtual
 *   runtime, so the test's thread gets the CPU back at once, not after a
 *   slice of the noise's. Measured on 6.1-rt (grants in 2 s under
 *   emulation): 316 so, 57 busy at nice 0, 0-27 with the timer. At most
 *   one request per tick (4 ms): far fewer than the timer's, so not
 *   where the timer works.
 * The tick on PREEMPT_RT kernels, the timer elsewhere; RSEQ_SLICE_NOISE
 * (timer or tick) overrides.
 */
enum noise_kind { NOISE_TIMER, NOISE_TICK };

static inline enum noise_kind noise_kind(void)
{
	const char *s = getenv("RSEQ_SLICE_NOISE");

	if (s && !strcmp(s, "timer"))
		return NOISE_TIMER;
	if (s && !strcmp(s, "tick"))
		return NOISE_TICK;
	return slice_kernel_rt() ? NOISE_TICK : NOISE_TIMER;
}

/* The noise's start, in its own thread: the tick's noise is nice 19. */
static inline void noise_init(enum noise_kind kind)
{
	if (kind == NOISE_TICK)
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
}

/*
 * One round of the noise: busy-wait @busy_ns, then sleep @sleep_ns
 * (timer) or yield the CPU (tick).
 */
static inline void noise_round(enum noise_kind kind, uint64_t busy_ns, uint64_t sleep_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(sleep_ns / 1000000000ULL),
			       .tv_nsec = (long)(sleep_ns % 1000000000ULL) };

	rseq_slice_busy_wait_ns(busy_ns);
	if (kind == NOISE_TICK)
		sched_yield();
	else
		nanosleep(&ts, NULL);
}

/*
 * A noise thread on the test CPU: rounds of noise_round(), again and
 * again. Its requests for the CPU are the reschedules the tests need.
 */
struct noise {
	pthread_t thread;
	int cpu;
	enum noise_kind kind;
	bool fair;		/* the tick's noise at nice 0 (noise_start_fair()) */
	uint64_t busy_ns;
	uint64_t sleep_ns;
	volatile bool stop;
	volatile unsigned long rounds;
};

static void *noise_fn(void *arg)
{
	struct noise *n = arg;

	pin_self(n->cpu);
	if (!n->fair)
		noise_init(n->kind);
	rseq_slice_tsc_calibrate(0);
	while (!n->stop) {
		noise_round(n->kind, n->busy_ns, n->sleep_ns);
		n->rounds++;
	}
	return NULL;
}

/*
 * Start @n on @cpu; @fair_tick: the tick's noise runs at nice 0 (see
 * noise_start_fair()), the timer's is unchanged.
 */
static inline int noise_launch(struct noise *n, int cpu, uint64_t busy_ns, uint64_t sleep_ns,
			       bool fair_tick)
{
	n->cpu = cpu;
	n->kind = noise_kind();
	n->fair = fair_tick && n->kind == NOISE_TICK;
	n->busy_ns = busy_ns;
	n->sleep_ns = sleep_ns;
	n->stop = false;
	n->rounds = 0;
	rseq_slice_tsc_calibrate(0);
	return pthread_create(&n->thread, NULL, noise_fn, n);
}

static inline int noise_start(struct noise *n, int cpu, uint64_t busy_ns, uint64_t sleep_ns)
{
	return noise_launch(n, cpu, busy_ns, sleep_ns, false);
}

/*
 * A noise that also wins the pick when the test's thread gives the CPU
 * back (a yield, an aborted grant): the tick's noise at nice 19 loses
 * it, since a yield on the reschedule the tick asked for leaves the test
 * thread, whose slice was just renewed, the earliest eligible deadline:
 * the yield reschedules, but to the same thread (on 6.12-rt 6 of 50
 * yields went to that noise). At nice 0 it takes the CPU for a slice of
 * its own and grants are rarer (57 in 2 s against 316 on 6.1-rt). The
 * timer's noise (other kernels) is as noise_start() makes it.
 */
static inline int noise_start_fair(struct noise *n, int cpu, uint64_t busy_ns, uint64_t sleep_ns)
{
	return noise_launch(n, cpu, busy_ns, sleep_ns, true);
}

static inline void noise_stop(struct noise *n)
{
	n->stop = true;
	pthread_join(n->thread, NULL);
}

/*
 * Wait for the statistics' "threads" and "pinned" to read @t0 and @p0
 * again: registrations are released from a work item. That takes
 * milliseconds; the bound is 60 s, for a loaded host. Returns whether
 * they did; *t and *p get the last values read.
 */
static inline bool slice_stats_settle(long long t0, long long p0, long long *t, long long *p)
{
	uint64_t end = now_ns() + 60 * 1000000000ULL;

	for (;;) {
		*t = slice_stat("threads");
		*p = slice_stat("pinned");
		if ((*t == t0 && *p == p0) || now_ns() > end)
			return *t == t0 && *p == p0;
		usleep(10000);
	}
}

/* The module file in the lane's guests: RSEQ_SLICE_KO, else /lib/rseq_slice.ko. */
static inline const char *slice_ko(void)
{
	const char *ko = getenv("RSEQ_SLICE_KO");

	return ko ? ko : "/lib/rseq_slice.ko";
}

static inline bool slice_module_loaded(void)
{
	return access("/sys/module/rseq_slice", F_OK) == 0;
}

/* Load the module (root) with @params: 0 or -errno. */
static inline int slice_load_module(const char *params)
{
	int fd = open(slice_ko(), O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

/* Unload it without waiting: 0 or -errno (EWOULDBLOCK while in use). */
static inline int slice_unload_module(void)
{
	return syscall(SYS_delete_module, "rseq_slice", O_NONBLOCK) ? -errno : 0;
}

/*
 * The teardown of a test that unloads the module: load it again if a
 * failure left it out (root), then its parameters as they were (a reload
 * brings the defaults back).
 */
static inline void slice_module_restore(const struct slice_params *p)
{
	if (is_root() && !slice_module_loaded())
		slice_load_module("");
	slice_params_restore(p);
}

/* The module's reference count; -1 if unreadable. */
static inline long long slice_module_refcnt(void)
{
	char buf[32];

	if (slice_read_file("/sys/module/rseq_slice/refcnt", buf, sizeof(buf)) < 0)
		return -1;
	return strtoll(buf, NULL, 10);
}

/* Is the kernel's timer in high-resolution mode on every CPU? */
static inline bool hres_active(void)
{
	char line[256];
	int seen = 0, active = 0;
	FILE *f = fopen("/proc/timer_list", "r");

	if (!f)
		return true;	/* not root: cannot tell, assume the usual */
	while (fgets(line, sizeof(line), f)) {
		int v;

		if (sscanf(line, "  .hres_active    : %d", &v) == 1) {
			seen++;
			active += v;
		}
	}
	fclose(f);
	return seen && seen == active;
}

/*
 * RSEQ_SLICE_ONLY=NAME[,NAME...]: a fixture's setup skips every test whose
 * name holds none of the NAMEs (the 6.1 harness has no filter of its own).
 * For runs of one test by hand, e.g. against a deliberately broken module.
 * First thing in a FIXTURE_SETUP.
 */
#define SLICE_ONLY_FILTER() do { \
	const char *__o = getenv("RSEQ_SLICE_ONLY"); \
	char __buf[256], *__tok, *__save; \
	bool __in = !__o; \
	if (__o) { \
		snprintf(__buf, sizeof(__buf), "%s", __o); \
		for (__tok = strtok_r(__buf, ",", &__save); __tok && !__in; \
		     __tok = strtok_r(NULL, ",", &__save)) \
			__in = !!strstr(_metadata->name, __tok); \
	} \
	/* Out of the setup at once: neither the test nor the teardown runs. */ \
	if (!__in) \
		SKIP(longjmp(_metadata->env, 1), "not in RSEQ_SLICE_ONLY"); \
} while (0)

/* The kernel log from now on: a non-blocking /dev/kmsg at its end. */
static inline int slice_kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

/*
 * How many of the records logged since slice_kmsg_open() hold @what.
 * Records read from @fd are kept in @log (NUL-separated), so that every
 * call sees all of them.
 */
static inline int slice_kmsg_count(int fd, char *log, size_t *len, size_t size, const char *what)
{
	ssize_t n;
	size_t off;
	int hits = 0;

	while (*len + 1024 < size &&
	       ((n = read(fd, log + *len, 1023)) > 0 || (n < 0 && errno == EPIPE))) {
		if (n <= 0)
			continue;
		log[*len + n] = '\0';
		*len += n + 1;
	}
	for (off = 0; off < *len; off += strlen(log + off) + 1)
		hits += !!strstr(log + off, what);
	return hits;
}

/* tracefs, for the tests that count the module's (or the kernel's) events. */
#define SLICE_TRACING	"/sys/kernel/debug/tracing/"

/* Enable (1) or disable (0) the trace event SYSTEM/NAME: 0 or -errno. */
static inline int slice_trace_event(const char *event, int on)
{
	char path[256];

	snprintf(path, sizeof(path), SLICE_TRACING "events/%s/enable", event);
	return slice_write_file(path, on ? "1" : "0");
}

/* Empty the trace buffer, with room for @kb KiB per CPU: 0 or -errno. */
static inline int slice_trace_reset(const char *kb)
{
	int ret = slice_write_file(SLICE_TRACING "buffer_size_kb", kb);

	return ret ? ret : slice_write_file(SLICE_TRACING "trace", "");
}

/* How many lines of the trace buffer hold @what; -1 if unreadable. */
static inline long slice_trace_count(const char *what)
{
	char line[512];
	long n = 0;
	FILE *f = fopen(SLICE_TRACING "trace", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += line[0] != '#' && strstr(line, what);
	fclose(f);
	return n;
}

#endif /* SLICE_UTIL_H */
