// SPDX-License-Identifier: GPL-2.0
/*
 * No global lock across a fault: a control word in a private mapping of a
 * file whose file system does not answer must stall only the thread that
 * registers it, never another user's RSEQ_SLICE_IOC_ENABLE or root's write
 * of the enabled parameter, and the stalled thread must stay killable.
 *
 * The test is its own hostile file system: it serves FUSE over the raw
 * /dev/fuse protocol (no libfuse: the guests run static binaries) with one
 * regular file, and withholds its reply to READ until told to answer. A
 * process maps the file MAP_PRIVATE and registers a word in the mapping;
 * the pin (FOLL_WRITE) faults, the READ reaches the server, which sits on
 * it. The server advertises FUSE_ASYNC_READ, so the kernel reads the page
 * in the background and the faulting task waits for the page lock, a
 * killable wait, with mmap_lock dropped: whatever else blocks or cannot
 * be killed while the READ is held is the module's doing.
 *
 * Root only (mount(2)); as any other user every test skips.
 */
#include "slice_util.h"

#include <linux/fuse.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "kselftest_harness.h"

#define FILE_NAME	"file"
#define FILE_NODE	2
#define FILE_PAGES	2
/* Events the test waits for, on a loaded host under emulation. */
#define EVENT_NS	(10 * 1000000000ULL)
/* What must not block while the READ is held (the bug: until released). */
#define QUICK_NS	(5 * 1000000000ULL)
#define MAX_HELD	16
#define MAX_KIDS	8

/* The file system: one directory (node 1) holding one file (node 2). */
struct fsrv {
	int fd;			/* /dev/fuse */
	int stop[2];		/* a byte here ends the server thread */
	char mnt[64];
	bool mounted;
	bool running;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool hold;		/* withhold replies to READ */
	unsigned int nheld;
	struct fuse_in_header held[MAX_HELD];
	struct fuse_read_in held_in[MAX_HELD];
	unsigned long reads;	/* READs seen */
	unsigned long interrupts;
	int error;		/* first unexpected failure, -errno */
};

static int fsrv_reply(struct fsrv *s, uint64_t unique, int error, const void *data, size_t len)
{
	struct fuse_out_header out = {
		.len = sizeof(out) + (error ? 0 : len),
		.error = error,
		.unique = unique,
	};
	struct iovec iov[2] = {
		{ .iov_base = &out, .iov_len = sizeof(out) },
		{ .iov_base = (void *)data, .iov_len = error ? 0 : len },
	};

	if (writev(s->fd, iov, 2) < 0) {
		/* ENOENT: the request was interrupted and is gone. */
		if (errno != ENOENT && !s->error)
			s->error = -errno;
		return -errno;
	}
	return 0;
}

static void fsrv_attr(struct fuse_attr *a, uint64_t node)
{
	memset(a, 0, sizeof(*a));
	a->ino = node;
	a->blksize = 4096;
	if (node == FILE_NODE) {
		a->mode = S_IFREG | 0644;
		a->nlink = 1;
		a->size = FILE_PAGES * 4096;
		a->blocks = FILE_PAGES * 8;
	} else {
		a->mode = S_IFDIR | 0755;
		a->nlink = 2;
	}
}

static void fsrv_answer_read(struct fsrv *s, const struct fuse_in_header *h,
			     const struct fuse_read_in *in)
{
	static const char zeros[FILE_PAGES * 4096];
	uint64_t size = sizeof(zeros), len = 0;

	if (in->offset < size)
		len = size - in->offset < in->size ? size - in->offset : in->size;
	fsrv_reply(s, h->unique, 0, zeros, len);
}

static void fsrv_handle(struct fsrv *s, const char *buf, size_t n)
{
	const struct fuse_in_header *h = (const void *)buf;
	const void *arg = h + 1;

	if (n < sizeof(*h))
		return;
	switch (h->opcode) {
	case FUSE_INIT: {
		const struct fuse_init_in *in = arg;
		struct fuse_init_out out = {
			.major = FUSE_KERNEL_VERSION,
			/* The older of the two: 6.1 speaks 7.37, 6.12 7.41. */
			.minor = in->minor < FUSE_KERNEL_MINOR_VERSION ?
				 in->minor : FUSE_KERNEL_MINOR_VERSION,
			.max_readahead = in->max_readahead,
			/* READ from a background request; faulters wait killably. */
			.flags = in->flags & FUSE_ASYNC_READ,
			.max_background = 16,
			.congestion_threshold = 12,
			.max_write = 4096,
			.time_gran = 1,
		};

		fsrv_reply(s, h->unique, 0, &out, sizeof(out));
		break;
	}
	case FUSE_LOOKUP: {
		struct fuse_entry_out out = {
			.nodeid = FILE_NODE,
			.generation = 1,
			.entry_valid = 3600,
			.attr_valid = 3600,
		};

		if (h->nodeid != FUSE_ROOT_ID || strcmp(arg, FILE_NAME)) {
			fsrv_reply(s, h->unique, -ENOENT, NULL, 0);
			break;
		}
		fsrv_attr(&out.attr, FILE_NODE);
		fsrv_reply(s, h->unique, 0, &out, sizeof(out));
		break;
	}
	case FUSE_GETATTR: {
		struct fuse_attr_out out = { .attr_valid = 3600 };

		fsrv_attr(&out.attr, h->nodeid);
		fsrv_reply(s, h->unique, 0, &out, sizeof(out));
		break;
	}
	case FUSE_OPEN:
	case FUSE_OPENDIR: {
		/*
		 * KEEP_CACHE: else open() invalidates the page cache, and
		 * waits (unkillably) for the page that the held READ locks.
		 */
		struct fuse_open_out out = { .fh = 1, .open_flags = FOPEN_KEEP_CACHE };

		fsrv_reply(s, h->unique, 0, &out, sizeof(out));
		break;
	}
	case FUSE_READ: {
		const struct fuse_read_in *in = arg;

		pthread_mutex_lock(&s->lock);
		s->reads++;
		if (s->hold && s->nheld < MAX_HELD) {
			s->held[s->nheld] = *h;
			s->held_in[s->nheld] = *in;
			s->nheld++;
			pthread_cond_broadcast(&s->cond);
			pthread_mutex_unlock(&s->lock);
			break;
		}
		pthread_mutex_unlock(&s->lock);
		fsrv_answer_read(s, h, in);
		break;
	}
	case FUSE_FLUSH:
	case FUSE_RELEASE:
	case FUSE_RELEASEDIR:
	case FUSE_FSYNC:
		fsrv_reply(s, h->unique, 0, NULL, 0);
		break;
	case FUSE_INTERRUPT:
		/* A hostile server: interrupted or not, the READ waits. */
		pthread_mutex_lock(&s->lock);
		s->interrupts++;
		pthread_mutex_unlock(&s->lock);
		break;
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
		break;	/* no reply */
	default:
		fsrv_reply(s, h->unique, -ENOSYS, NULL, 0);
		break;
	}
}

static void *fsrv_fn(void *arg)
{
	struct fsrv *s = arg;
	/* The kernel wants room for a whole WRITE: header + max_write. */
	static char buf[FUSE_MIN_READ_BUFFER + 65536];

	for (;;) {
		struct pollfd p[2] = {
			{ .fd = s->fd, .events = POLLIN },
			{ .fd = s->stop[0], .events = POLLIN },
		};
		ssize_t n;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			s->error = -errno;
			break;
		}
		if (p[1].revents)
			break;
		if (p[0].revents & (POLLERR | POLLHUP))
			break;	/* aborted or unmounted */
		n = read(s->fd, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR || errno == ENOENT || errno == EAGAIN)
				continue;
			if (errno != ENODEV && !s->error)
				s->error = -errno;
			break;
		}
		fsrv_handle(s, buf, n);
	}
	return NULL;
}

static int fsrv_start(struct fsrv *s)
{
	pthread_condattr_t ca;
	char opts[128];

	s->fd = -1;
	s->stop[0] = s->stop[1] = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	s->hold = true;
	strcpy(s->mnt, "/tmp/fault_test.XXXXXX");
	if (!mkdtemp(s->mnt))
		return -errno;
	s->fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (s->fd < 0)
		return -errno;
	if (pipe2(s->stop, O_CLOEXEC))
		return -errno;
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", s->fd);
	if (mount("rseq_slice_fault", s->mnt, "fuse", MS_NOSUID | MS_NODEV, opts))
		return -errno;
	s->mounted = true;
	/* The kernel queued FUSE_INIT at mount; the thread answers it. */
	if (pthread_create(&s->thread, NULL, fsrv_fn, s))
		return -EAGAIN;
	s->running = true;
	return 0;
}

/* Wait until a READ is held: true if one is. */
static bool fsrv_wait_held(struct fsrv *s, uint64_t timeout_ns)
{
	struct timespec ts;
	bool held;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += timeout_ns / 1000000000ULL;
	ts.tv_nsec += timeout_ns % 1000000000ULL;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->lock);
	while (!s->nheld && pthread_cond_timedwait(&s->cond, &s->lock, &ts) == 0)
		;
	held = s->nheld;
	pthread_mutex_unlock(&s->lock);
	return held;
}

/* Answer every withheld READ, and every later one at once. */
static unsigned int fsrv_release(struct fsrv *s)
{
	unsigned int i, n;

	pthread_mutex_lock(&s->lock);
	s->hold = false;
	n = s->nheld;
	for (i = 0; i < n; i++)
		fsrv_answer_read(s, &s->held[i], &s->held_in[i]);
	s->nheld = 0;
	pthread_mutex_unlock(&s->lock);
	return n;
}

static void fsrv_stop(struct fsrv *s)
{
	if (s->fd >= 0)
		fsrv_release(s);
	if (s->mounted)
		umount2(s->mnt, MNT_DETACH);
	s->mounted = false;
	if (s->running) {
		if (write(s->stop[1], "x", 1) != 1)
			pthread_cancel(s->thread);
		pthread_join(s->thread, NULL);
	}
	s->running = false;
	/* The last file of the connection: closing it aborts whatever is left. */
	if (s->fd >= 0)
		close(s->fd);
	if (s->stop[0] >= 0) {
		close(s->stop[0]);
		close(s->stop[1]);
	}
	s->fd = s->stop[0] = s->stop[1] = -1;
	if (s->mnt[0])
		rmdir(s->mnt);
}

/*
 * Helper processes: each does one thing and reports its result and how
 * long it took through a pipe, so that the test can wait for it with a
 * bound and go on if it never comes.
 */
struct kid_result {
	int ret;		/* 0 or -errno */
	uint64_t ns;		/* how long the call took */
};

struct kid {
	pid_t pid;
	int rd;			/* result pipe, read end */
	bool have;		/* result read */
	struct kid_result res;
	bool reaped;
	int status;
};

enum kid_job { JOB_ENABLE_FILE, JOB_ENABLE_ANON, JOB_WRITE_ENABLED };

FIXTURE(fault)
{
	struct fsrv s;
	struct kid kids[MAX_KIDS];
	int nkids;
	char enabled[16];	/* the parameter's value at setup */
	long long threads0, pinned0;
};

static void kid_run(struct fsrv *s, enum kid_job job, const char *arg, int wr)
{
	struct kid_result r = { 0 };
	char path[96];
	uint32_t word = 0;
	uint64_t t0;
	void *map;
	int dev, fd;

	dev = slice_open();
	if (dev < 0)
		_exit(30);
	switch (job) {
	case JOB_ENABLE_FILE:
		snprintf(path, sizeof(path), "%s/" FILE_NAME, s->mnt);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			_exit(31);
		map = mmap(NULL, FILE_PAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED)
			_exit(32);
		t0 = now_ns();
		r.ret = slice_enable_word(dev, map);
		r.ns = now_ns() - t0;
		break;
	case JOB_ENABLE_ANON:
		t0 = now_ns();
		r.ret = slice_enable_word(dev, &word);
		r.ns = now_ns() - t0;
		break;
	case JOB_WRITE_ENABLED:
		/* arg: values to write in turn, e.g. "1" or "01". */
		t0 = now_ns();
		for (; *arg && !r.ret; arg++) {
			char v[2] = { *arg, 0 };

			r.ret = slice_param_set("enabled", v);
		}
		r.ns = now_ns() - t0;
		break;
	}
	if (write(wr, &r, sizeof(r)) != sizeof(r))
		_exit(33);
	slice_ioctl(dev, RSEQ_SLICE_IOC_DISABLE);
	_exit(0);
}

static struct kid *kid_start(FIXTURE_DATA(fault) *self, enum kid_job job, const char *arg)
{
	struct kid *k;
	int p[2];

	if (self->nkids >= MAX_KIDS || pipe2(p, O_CLOEXEC))
		return NULL;
	k = &self->kids[self->nkids];
	memset(k, 0, sizeof(*k));
	k->pid = fork();
	if (k->pid < 0) {
		close(p[0]);
		close(p[1]);
		return NULL;
	}
	if (k->pid == 0) {
		/* Only the server may hold the connection open. */
		close(self->s.fd);
		close(p[0]);
		kid_run(&self->s, job, arg, p[1]);
	}
	close(p[1]);
	k->rd = p[0];
	self->nkids++;
	return k;
}

/* Wait up to @timeout_ns for the kid's result: true if it came. */
static bool kid_wait_result(struct kid *k, uint64_t timeout_ns)
{
	struct pollfd p = { .fd = k->rd, .events = POLLIN };
	uint64_t end = now_ns() + timeout_ns;

	while (!k->have) {
		uint64_t now = now_ns();
		int ms = now >= end ? 0 : (int)((end - now + 999999) / 1000000);

		if (poll(&p, 1, ms) < 0 && errno != EINTR)
			return false;
		if (p.revents) {
			k->have = read(k->rd, &k->res, sizeof(k->res)) == sizeof(k->res);
			return k->have;
		}
		if (now >= end)
			return false;
	}
	return true;
}

/* Wait up to @timeout_ns for the kid to be gone: true if it is. */
static bool kid_wait_exit(struct kid *k, uint64_t timeout_ns)
{
	uint64_t end = now_ns() + timeout_ns;

	while (!k->reaped) {
		pid_t r = waitpid(k->pid, &k->status, WNOHANG);

		if (r == k->pid || (r < 0 && errno == ECHILD)) {
			k->reaped = true;
			break;
		}
		if (now_ns() > end)
			return false;
		usleep(1000);
	}
	return true;
}

/*
 * Wait up to @timeout_ns for the kid to sleep inside a system call,
 * per /proc/PID/syscall: true if it is in @nr.
 */
static bool kid_wait_blocked(struct kid *k, long nr, uint64_t timeout_ns, char *buf,
			     size_t len)
{
	uint64_t end = now_ns() + timeout_ns;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/syscall", k->pid);
	do {
		int fd = open(path, O_RDONLY);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

		if (fd >= 0)
			close(fd);
		if (n > 0) {
			buf[n] = 0;
			/* "running" while on a CPU, else the number and arguments. */
			if (strtol(buf, NULL, 10) == nr && buf[0] != 'r')
				return true;
		}
		usleep(1000);
	} while (now_ns() < end);
	return false;
}

static double secs(uint64_t ns)
{
	return ns / 1e9;
}

FIXTURE_SETUP(fault)
{
	int ret;

	self->s.fd = -1;
	self->s.stop[0] = self->s.stop[1] = -1;
	if (!is_root())
		return;
	ASSERT_EQ(0, slice_param_get("enabled", self->enabled, sizeof(self->enabled)));
	self->threads0 = slice_stat("threads");
	self->pinned0 = slice_stat("pinned");
	ret = fsrv_start(&self->s);
	if (ret)
		TH_LOG("cannot serve FUSE at %s: %s (is fuse.ko loaded?)", self->s.mnt,
		       strerror(-ret));
	ASSERT_EQ(0, ret);
}

FIXTURE_TEARDOWN(fault)
{
	int i;

	if (!is_root())
		return;
	/* Whatever the test did or failed to do: answer, then reap. */
	fsrv_release(&self->s);
	for (i = 0; i < self->nkids; i++) {
		struct kid *k = &self->kids[i];

		if (!kid_wait_exit(k, EVENT_NS)) {
			kill(k->pid, SIGKILL);
			if (!kid_wait_exit(k, EVENT_NS))
				TH_LOG("kid %d is stuck", k->pid);
		}
		close(k->rd);
	}
	fsrv_stop(&self->s);
	/* Put the parameter back as it was, whatever a kid wrote last. */
	if (self->enabled[0])
		slice_param_set("enabled", self->enabled);
}

/* An ENABLE of a word in the FUSE mapping, its READ held by the server. */
static struct kid *held_enable(struct __test_metadata *_metadata, FIXTURE_DATA(fault) *self)
{
	struct kid *a = kid_start(self, JOB_ENABLE_FILE, NULL);

	ASSERT_NE(NULL, a);
	ASSERT_TRUE(fsrv_wait_held(&self->s, EVENT_NS)) {
		TH_LOG("the ENABLE's fault never reached the server");
	}
	return a;
}

/*
 * A kid for @job that must not wait behind the held fault: its result
 * within QUICK_NS, and 0. Returns the kid; k->have says if it came.
 */
static struct kid *kid_quick(struct __test_metadata *_metadata, FIXTURE_DATA(fault) *self,
			     enum kid_job job, const char *arg, const char *what)
{
	struct kid *k = kid_start(self, job, arg);

	ASSERT_NE(NULL, k);
	EXPECT_TRUE(kid_wait_result(k, QUICK_NS)) {
		TH_LOG("%s blocked over %.1f s behind the held fault", what, secs(QUICK_NS));
	}
	if (k->have) {
		ksft_print_msg("%s: %d in %.3f s\n", what, k->res.ret, secs(k->res.ns));
		EXPECT_EQ(0, k->res.ret);
	}
	return k;
}

/* A kid that was blocked finishes after the release: say how long it took. */
static void kid_late(struct kid *k, const char *what)
{
	if (k && !k->have && kid_wait_result(k, EVENT_NS))
		ksft_print_msg("%s finished after the release: %d in %.3f s\n", what, k->res.ret,
			       secs(k->res.ns));
}

/* SIGKILL ends a stalled kid within QUICK_NS. */
static void kill_quick(struct __test_metadata *_metadata, struct kid *k, const char *what)
{
	uint64_t t0 = now_ns();
	bool dead;

	kill(k->pid, SIGKILL);
	dead = kid_wait_exit(k, QUICK_NS);
	EXPECT_TRUE(dead) {
		TH_LOG("the %s survived SIGKILL for %.1f s", what, secs(QUICK_NS));
	}
	if (dead)
		ksft_print_msg("%s killed in %.3f s\n", what, secs(now_ns() - t0));
}

/* Nothing stays registered or pinned once the kids are gone. */
static void expect_settled(struct __test_metadata *_metadata, FIXTURE_DATA(fault) *self)
{
	long long t, p;

	EXPECT_EQ(0, self->s.error);
	EXPECT_TRUE(slice_stats_settle(self->threads0, self->pinned0, &t, &p)) {
		TH_LOG("threads %lld -> %lld, pinned %lld -> %lld", self->threads0, t,
		       self->pinned0, p);
	}
}

/* The mount works: a plain read of the file gets its page. */
TEST_F(fault, server_works)
{
	char path[96], buf[64];
	int fd;

	if (!is_root())
		SKIP(return, "mounting a FUSE file system needs root");
	fsrv_release(&self->s);
	snprintf(path, sizeof(path), "%s/" FILE_NAME, self->s.mnt);
	fd = open(path, O_RDONLY);
	ASSERT_LE(0, fd);
	memset(buf, 1, sizeof(buf));
	ASSERT_EQ(sizeof(buf), read(fd, buf, sizeof(buf)));
	EXPECT_EQ(0, buf[0]);
	close(fd);
	EXPECT_LE(1, self->s.reads);
	EXPECT_EQ(0, self->s.error);
}

/*
 * While the READ behind one ENABLE is held, another process's ENABLE and
 * root's write of enabled finish at once; after the release the stalled
 * ENABLE finishes too, and nothing stays registered or pinned.
 */
TEST_F_TIMEOUT(fault, held_read_blocks_nobody, 180)
{
	struct kid *a, *b, *w1, *w2 = NULL;

	if (!is_root())
		SKIP(return, "mounting a FUSE file system needs root");

	a = held_enable(_metadata, self);
	ksft_print_msg("READ held; ENABLE of the word in the FUSE mapping is waiting\n");
	/* Another user of the device, on an ordinary anonymous word. */
	b = kid_quick(_metadata, self, JOB_ENABLE_ANON, NULL, "other ENABLE");
	/* Root's write of the current value. */
	w1 = kid_quick(_metadata, self, JOB_WRITE_ENABLED, "1", "enabled=1");
	/* Off and on again: the hooks go and come back. */
	if (w1->have)
		w2 = kid_quick(_metadata, self, JOB_WRITE_ENABLED, "01", "enabled=0, =1");

	/* All of that happened with the READ still held. */
	EXPECT_FALSE(kid_wait_result(a, 0)) {
		TH_LOG("the stalled ENABLE finished before the READ was answered");
	}
	ksft_print_msg("releasing %u held READ(s)\n", fsrv_release(&self->s));

	ASSERT_TRUE(kid_wait_result(a, EVENT_NS)) {
		TH_LOG("the stalled ENABLE did not finish after the READ was answered");
	}
	/* 0 if the write fault left an anonymous COW copy, else EFAULT. */
	ksft_print_msg("stalled ENABLE: %s after %.3f s\n",
		       a->res.ret == 0 ? "0 (pinned the anonymous COW copy)" :
		       a->res.ret == -EFAULT ? "EFAULT" : strerror(-a->res.ret),
		       secs(a->res.ns));
	EXPECT_TRUE(a->res.ret == 0 || a->res.ret == -EFAULT);

	/* Whatever was blocked finishes now. */
	kid_late(b, "other ENABLE");
	kid_late(w1, "enabled=1");
	kid_late(w2, "enabled=0, =1");

	/* No one is stuck: every kid exits, cleanly. */
	for (int i = 0; i < self->nkids; i++) {
		struct kid *k = &self->kids[i];

		EXPECT_TRUE(kid_wait_exit(k, EVENT_NS)) {
			TH_LOG("kid %d did not exit", k->pid);
		}
		EXPECT_TRUE(k->reaped && WIFEXITED(k->status) && WEXITSTATUS(k->status) == 0) {
			TH_LOG("kid %d: status 0x%x", k->pid, k->status);
		}
	}
	expect_settled(_metadata, self);
}

/*
 * SIGKILL ends an ENABLE stalled by the held READ, both the one whose
 * fault is waiting for the page and one that came second, while the READ
 * is still held.
 *
 * On 6.1, pin_user_pages_fast(FOLL_LONGTERM) falls back to a fault with
 * mmap_lock held and without FAULT_FLAG_KILLABLE (__gup_longterm_unlocked
 * passes no "locked"), so the page-lock wait inside it is uninterruptible:
 * the faulting ENABLE dies only if the module faults the page in killably
 * first (e.g. fault_in_safe_writeable()). 6.12's GUP faults killably.
 */
TEST_F_TIMEOUT(fault, stalled_enable_is_killable, 180)
{
	struct kid *a, *a2;
	char sc[256] = "";

	if (!is_root())
		SKIP(return, "mounting a FUSE file system needs root");

	a = held_enable(_metadata, self);
	/* A second process registers a word on the same page of the file. */
	a2 = kid_start(self, JOB_ENABLE_FILE, NULL);
	ASSERT_NE(NULL, a2);
	ASSERT_TRUE(kid_wait_blocked(a2, SYS_ioctl, EVENT_NS, sc, sizeof(sc))) {
		TH_LOG("the second ENABLE did not block in ioctl: syscall %s", sc);
	}

	kill_quick(_metadata, a2, "second stalled ENABLE");
	kill_quick(_metadata, a, "faulting ENABLE");

	/* Both died with the READ still unanswered. */
	pthread_mutex_lock(&self->s.lock);
	EXPECT_LE(1, self->s.nheld);
	pthread_mutex_unlock(&self->s.lock);
	ksft_print_msg("releasing %u held READ(s)\n", fsrv_release(&self->s));

	EXPECT_TRUE(kid_wait_exit(a2, EVENT_NS));
	EXPECT_TRUE(kid_wait_exit(a, EVENT_NS));
	EXPECT_TRUE(a->reaped && WIFSIGNALED(a->status) && WTERMSIG(a->status) == SIGKILL);
	EXPECT_TRUE(a2->reaped && WIFSIGNALED(a2->status) && WTERMSIG(a2->status) == SIGKILL);
	expect_settled(_metadata, self);
}

TEST_HARNESS_MAIN
