// SPDX-License-Identifier: GPL-2.0
/*
 * The ring protocol of include/uapi/linux/kdat.h, tested from user
 * space. Connections are made with the DAT API (ioctl path: KDAT_RINGS=0)
 * and the test then gives the queues rings itself and drives them raw:
 * wrap-around, push-back when full, hostile entries and indices, entries
 * rewritten while the poller reads them, munmap under the poller, bursts
 * with idle gaps longer than the poller's spin (lost wake-ups), threads
 * posting through libdat's rings, and a process dying with full rings.
 *
 * Needs /dev/kdat, KDAT_TEST_DEV and KDAT_TEST_IP; skips (exit 4) without.
 *
 * Each case is a TEST_F() of the kernel's kselftest_harness.h on the
 * fixture of ../lib/kdat_harness.h: 30 s, 120 s for the long ones, 600 s
 * for the fault-injection sweep, times $KDAT_T_SLOW. -l lists the cases;
 * names as arguments (or -t NAME) pick some (tests/suites.faults).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <dat2/udat.h>
#include <linux/kdat.h>

#include "../lib/kdat_harness.h"
#include "../selftests/kdat_objects.h"
#include "../lib/fail_nth.h"
#include "../lib/dat_pair.h"
#include "../lib/rdma_dev.h"
#include "../../user/kdat_lowlevel.h"

#define TMO (10 * 1000 * 1000)
/* How long post() waits for a slot and get_event() for an event (s). */
static int ring_wait_s = 10;
/* A DAT call (or a tests/lib/dat_pair.h step) that must succeed. */
#define OK(expr)							\
	do {								\
		DAT_RETURN __r = (expr);				\
									\
		ASSERT_EQ(DAT_SUCCESS, __r)				\
			TH_LOG("%s: %#x", #expr, (unsigned int)__r);	\
	} while (0)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- DAT setup -------------------------------------------------------- */

/*
 * A side (tests/lib/dat_pair.h) with an RC EP of @depth DTOs each way, a
 * DTO EVD of @qlen, and 1 MiB of its own registered (s->buf).
 */
static void rside_open(struct __test_metadata *_metadata, struct side *s,
		       int depth, int qlen)
{
	DAT_EP_ATTR a = ep_attr_rc(depth, 2, 1);

	OK(side_ia(s, NULL, qlen));
	OK(side_ep(s, &a));
	OK(buf_reg(s, &s->buf, 1 << 20, DAT_MEM_PRIV_ALL_FLAG));
}

/* Connected, no private data either way; the PSP freed after. */
static void connect_sides(struct __test_metadata *_metadata, struct side *c,
			  struct side *s)
{
	const struct pair_conn none = { 0 };

	OK(connect_with(c, s, &none));
	OK(dat_psp_free(s->psp));
}

/* ---- raw rings -------------------------------------------------------- */

struct ring {
	int fd;
	uint32_t kh;			/* the EVD, for completion rings */
	uint8_t *m;
	size_t size;
	uint32_t *head, *tail, *flags, *completed;
	uint8_t *ent;
	uint32_t mask, esz;
	uint32_t id;			/* the doorbell's name for it */
	bool named;			/* its doorbell names it, not the file */
};

static void ring_map_flags(struct __test_metadata *_metadata, void *dat_handle,
			   uint32_t kind, uint32_t flags, struct ring *r)
{
	struct kdat_ring_create c = {
		.size = sizeof(c), .kind = kind, .flags = flags,
	};

	ASSERT_TRUE(!kdat_dat_handle(dat_handle, &r->fd, &c.handle));
	r->kh = c.handle;
	ASSERT_TRUE(!ioctl(r->fd, KDAT_IOCTL_RING_CREATE, &c));
	r->size = c.out_map_size;
	r->m = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd,
		    (off_t)c.out_mmap_offset);
	ASSERT_TRUE(r->m != MAP_FAILED);
	r->head = (uint32_t *)(r->m + c.out_off.head);
	r->tail = (uint32_t *)(r->m + c.out_off.tail);
	r->flags = (uint32_t *)(r->m + c.out_off.flags);
	r->completed = (uint32_t *)(r->m + c.out_off.completed);
	r->ent = r->m + c.out_off.entries;
	r->mask = c.out_entries - 1;
	r->esz = c.out_entry_size;
	r->id = (uint32_t)(c.out_mmap_offset / (uint64_t)sysconf(_SC_PAGESIZE));
	ASSERT_TRUE(c.out_entries && !(c.out_entries & r->mask));
}

static void ring_map(struct __test_metadata *_metadata, void *dat_handle,
		     uint32_t kind, struct ring *r)
{
	ring_map_flags(_metadata, dat_handle, kind, 0, r);
}

static uint32_t ld(uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Publish entries up to @tail, ringing the doorbell as the protocol says. */
static int publish(struct __test_metadata *_metadata, struct ring *r,
		   uint32_t tail)
{
	__atomic_store_n(r->tail, tail, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(r->flags, __ATOMIC_RELAXED) &
	    KDAT_RING_F_NEED_WAKEUP) {
		struct kdat_ring_wake w = {
			.size = sizeof(w), .ring = r->named ? r->id : 0,
		};

		ASSERT_TRUE(!ioctl(r->fd, KDAT_IOCTL_RING_WAKE, &w));
		return 1;
	}
	return 0;
}

static struct kdat_sqe *slot(struct ring *r, uint32_t i)
{
	return (struct kdat_sqe *)(r->ent + (size_t)(i & r->mask) * r->esz);
}

static void sqe_fill(struct kdat_sqe *e, uint8_t op, uint64_t cookie,
		     uint32_t lctx, void *addr, uint64_t len)
{
	memset(e, 0, sizeof(*e) + sizeof(e->iov[0]));
	e->op = op;
	e->cookie = cookie;
	e->num_segments = 1;
	e->iov[0].lmr_context = lctx;
	e->iov[0].virtual_address = (uintptr_t)addr;
	e->iov[0].segment_length = len;
}

/*
 * One post: wait (10 s at most) for the poller to free a slot, as any
 * producer must, then fill the entry at tail and publish it. Publishing
 * past a full ring would be a bad tail, which the kernel ignores.
 */
static int post(struct __test_metadata *_metadata, struct ring *r, uint8_t op,
		uint64_t cookie, struct side *s, size_t off, uint64_t len)
{
	uint32_t t = *r->tail;
	double t0 = now_s();

	/* Signed: a head some test wrote ahead of the tail is not "full". */
	while ((int32_t)(t - ld(r->head)) > (int32_t)r->mask) {
		ASSERT_FALSE(now_s() - t0 > ring_wait_s)
			TH_LOG("ring full for %d s (head %u tail %u)",
			       ring_wait_s, ld(r->head), t);
		sched_yield();
	}
	sqe_fill(slot(r, t), op, cookie, s->buf.lctx, s->buf.p + off, len);
	return publish(_metadata, r, t + 1);
}

/*
 * Wait until the kernel has counted @n completions of posting ring @r. It
 * counts one before handing its event on, and the CQ is handled in order:
 * once the count is @n, the events of every earlier completion have been
 * through their EVD (queued, or dropped after an overflow).
 */
static void wait_completed(struct __test_metadata *_metadata, struct ring *r,
			   uint32_t n)
{
	double t0 = now_s();

	while (ld(r->completed) != n && now_s() - t0 < 2 * ring_wait_s)
		sched_yield();
	ASSERT_EQ(n, ld(r->completed));
}

/*
 * The lines of @path that start with @only (NULL: every line) as
 * diagnostics, @prefix before each; nothing if it cannot be read.
 */
static void file_diag(struct __test_metadata *_metadata, const char *prefix,
		      const char *path, const char *only)
{
	char line[256];
	FILE *f = fopen(path, "r");

	while (f && fgets(line, sizeof(line), f))
		if (!only || !strncmp(line, only, strlen(only)))
			TH_LOG("%s%.*s", prefix,
			       (int)strcspn(line, "\n"), line);
	if (f)
		fclose(f);
}

/* The poller line of @fd's fdinfo, as a diagnostic. */
static void fdinfo_diag(struct __test_metadata *_metadata, int fd)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	file_diag(_metadata, "", path, "poller:");
}

/*
 * What a completion that did not come leaves to look at: the file's rings
 * and poller (fdinfo), the device's counters of retries and RNR NAKs, how
 * kdat's CQs were signalled (debugfs, when mounted).
 */
static void stuck_diag(struct __test_metadata *_metadata, int fd)
{
	const char *dev = getenv("KDAT_TEST_DEV");
	const char *port = getenv("KDAT_TEST_PORT");
	char path[256];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	file_diag(_metadata, "fdinfo: ", path, NULL);
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%s/hw_counters",
		 dev, port ? port : "1");
	dir = opendir(path);
	while (dir && (d = readdir(dir))) {
		char name[512], v[32] = "";
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		snprintf(name, sizeof(name), "%s/%s", path, d->d_name);
		f = fopen(name, "r");
		if (f && fgets(v, sizeof(v), f))
			TH_LOG("hw_counters: %s %.*s", d->d_name,
			       (int)strcspn(v, "\n"), v);
		if (f)
			fclose(f);
	}
	if (dir)
		closedir(dir);
	file_diag(_metadata, "kdat/cq: ", "/sys/kernel/debug/kdat/cq", NULL);
}

/*
 * The next event of a completion ring, within 10 s: a short spin, then the
 * kernel waits for it (KDAT_IOCTL_EVD_WAIT, max_events 0), as libdat does.
 * One that does not come fails the case, which first says what the kernel
 * and the device show, and what comes in 20 s more (a late completion, or
 * an error: which of the two tells a stall from a lost DTO).
 */
static struct kdat_event get_event(struct __test_metadata *_metadata,
				   struct ring *r)
{
	struct kdat_event ev;
	uint32_t h = *r->head;
	int spin;

	for (spin = 0; ld(r->tail) == h; spin++) {
		struct kdat_evd_wait w = {
			.size = sizeof(w), .evd_handle = r->kh, .threshold = 1,
			.timeout_us = ring_wait_s * 1000000ULL,
		};
		int err;

		if (spin < 1000)
			continue;
		if (!ioctl(r->fd, KDAT_IOCTL_EVD_WAIT, &w))
			continue;
		err = errno;
		stuck_diag(_metadata, r->fd);
		w.timeout_us = 20000000;
		if (ioctl(r->fd, KDAT_IOCTL_EVD_WAIT, &w)) {
			TH_LOG("nothing in 20 s more either: %s",
			       strerror(errno));
		} else {
			memcpy(&ev, r->ent + (size_t)(h & r->mask) * sizeof(ev),
			       sizeof(ev));
			TH_LOG("then: event %#x cookie %llu status %u err %u",
			       ev.event_number,
			       (unsigned long long)ev.cookie, ev.status,
			       ev.post_error);
			stuck_diag(_metadata, r->fd);
		}
		ASSERT_EQ(0, err)
			TH_LOG("no completion within %d s (head %u): %s",
			       ring_wait_s, h, strerror(err));
	}
	memcpy(&ev, r->ent + (size_t)(h & r->mask) * sizeof(ev), sizeof(ev));
	__atomic_store_n(r->head, h + 1, __ATOMIC_RELEASE);
	return ev;
}

static void expect_dto(struct __test_metadata *_metadata, struct ring *r,
		       uint64_t cookie, uint32_t status, uint32_t post_error)
{
	struct kdat_event ev = get_event(_metadata, r);

	ASSERT_FALSE(ev.event_number != KDAT_EVENT_DTO_COMPLETION ||
		     ev.cookie != cookie || ev.status != status ||
		     ev.post_error != post_error)
		TH_LOG("event %#x cookie %llu status %u err %u; want cookie "
		       "%llu status %u err %u", ev.event_number,
		       (unsigned long long)ev.cookie, ev.status,
		       ev.post_error, (unsigned long long)cookie, status,
		       post_error);
}

/* A connected pair with raw rings: c sends, s receives. */
struct rawpair {
	struct side c, s;
	struct ring csq, crq, srq, ccq, scq;
	/* Receives posted ahead (prime()): cookies of the next posted/done. */
	bool primed;
	uint64_t rx_next, rx_done;
};

/* The pair connected through libdat, which stays off the queues. */
static void rawpair_connect(struct __test_metadata *_metadata,
			    struct rawpair *p, int depth, int qlen)
{
	memset(p, 0, sizeof(*p));
	setenv("KDAT_RINGS", "0", 1);
	rside_open(_metadata, &p->c, depth, qlen);
	rside_open(_metadata, &p->s, depth, qlen);
	connect_sides(_metadata, &p->c, &p->s);
}

/* Its raw rings, made and mapped. */
static void rawpair_map(struct __test_metadata *_metadata, struct rawpair *p)
{
	ring_map(_metadata, p->c.ep, KDAT_RING_SEND, &p->csq);
	ring_map(_metadata, p->c.ep, KDAT_RING_RECV, &p->crq);
	ring_map(_metadata, p->s.ep, KDAT_RING_RECV, &p->srq);
	ring_map(_metadata, p->c.dto_evd, KDAT_RING_EVD, &p->ccq);
	ring_map(_metadata, p->s.dto_evd, KDAT_RING_EVD, &p->scq);
}

static void rawpair_open(struct __test_metadata *_metadata, struct rawpair *p,
			 int depth, int qlen)
{
	rawpair_connect(_metadata, p, depth, qlen);
	rawpair_map(_metadata, p);
}

/*
 * Keep 8 receives posted at s from now on: the poller drains c's send ring
 * before s's receive ring, and a send that finds no receive waits for the
 * RNR timer.
 */
static void prime(struct __test_metadata *_metadata, struct rawpair *p)
{
	int k;

	for (k = 0; k < 8; k++)
		post(_metadata, &p->srq, KDAT_DTO_RECEIVE,
		     1000000 + p->rx_next++, &p->s, 0, 64);
	p->primed = true;
}

/* One message c -> s through the rings, checked. */
static void ping(struct __test_metadata *_metadata, struct rawpair *p,
		 uint64_t i)
{
	p->c.buf.p[0] = (uint8_t)i;
	if (!p->primed)
		post(_metadata, &p->srq, KDAT_DTO_RECEIVE, i, &p->s, 0, 64);
	post(_metadata, &p->csq, KDAT_DTO_SEND, i, &p->c, 0, 32);
	expect_dto(_metadata, &p->ccq, i, KDAT_DTO_SUCCESS, 0);
	if (p->primed) {
		expect_dto(_metadata, &p->scq, 1000000 + p->rx_done++,
			   KDAT_DTO_SUCCESS, 0);
		post(_metadata, &p->srq, KDAT_DTO_RECEIVE,
		     1000000 + p->rx_next++, &p->s, 0, 64);
	} else {
		expect_dto(_metadata, &p->scq, i, KDAT_DTO_SUCCESS, 0);
	}
	ASSERT_TRUE(p->s.buf.p[0] == (uint8_t)i);
}

/*
 * Every poller of this process (kdat-poll/<pid>) asleep: in state S, which
 * it is in only inside its schedule(), after its last look at the tails.
 */
static bool pollers_asleep(void)
{
	char want[32], path[300], buf[512];
	struct dirent *d;
	DIR *dir = opendir("/proc");
	int n = 0, asleep = 0;

	snprintf(want, sizeof(want), "(kdat-poll/%d)", (int)getpid());
	while (dir && (d = readdir(dir))) {
		FILE *f;
		char *st;

		snprintf(path, sizeof(path), "/proc/%s/stat", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && (st = strstr(buf, want))) {
			st += strlen(want);
			n++;
			asleep += st[0] == ' ' && st[1] == 'S';
		}
		fclose(f);
	}
	if (dir)
		closedir(dir);
	return n && n == asleep;
}

/* ---- cases ------------------------------------------------------------ */

/* 1000 messages through rings of 16 entries: the indices wrap many times. */
TEST_F(kdat, test_wraparound)
{
	struct rawpair p;
	int i;

	rawpair_open(_metadata, &p, 16, 32);
	ASSERT_TRUE(p.csq.mask == 15);
	prime(_metadata, &p);
	for (i = 0; i < 1000; i++)
		ping(_metadata, &p, i);
	ASSERT_TRUE(*p.csq.tail == 1000 && ld(p.csq.head) == 1000);
	ASSERT_TRUE(ld(p.csq.completed) == 1000);
}

/*
 * Full: the queue holds depth DTOs; one more is refused with ENOMEM, as
 * the ioctl would, nothing overwritten. A full completion ring gives the
 * overflow event and keeps what it holds.
 */
TEST_F(kdat, test_full_pushes_back)
{
	struct rawpair p;
	struct kdat_event ev;
	int i;

	rawpair_open(_metadata, &p, 4, 4);
	/* No receive at s: the sends wait (RNR), holding their places. */
	for (i = 0; i < 4; i++)
		post(_metadata, &p.csq, KDAT_DTO_SEND, i, &p.c, 0, 8);
	post(_metadata, &p.csq, KDAT_DTO_SEND, 99, &p.c, 0, 8);
	expect_dto(_metadata, &p.ccq, 99, KDAT_DTO_ERR_LOCAL_EP, ENOMEM);
	for (i = 0; i < 4; i++)
		post(_metadata, &p.srq, KDAT_DTO_RECEIVE, 100 + i, &p.s, 0, 64);
	for (i = 0; i < 4; i++)
		expect_dto(_metadata, &p.ccq, i, KDAT_DTO_SUCCESS, 0);
	/*
	 * A slot is free once its completion is counted (the uapi's
	 * "completed"), not when the peer's send completes: s's device may
	 * write the receives' completions before it acks, and kdat reap them
	 * later (6.12's rxe signals with interrupts off: irq_poll). A receive
	 * posted before then finds s's four slots taken, is refused (ENOMEM),
	 * and the send after it waits on RNR NAKs for ever.
	 */
	wait_completed(_metadata, &p.srq, 4);
	/*
	 * s's EVD holds 4: the four receives; nothing read yet. Three more:
	 * the first gives the overflow event, the others are dropped. The
	 * sends' completions at c say nothing of when s's EVD saw the
	 * receives: wait until s has counted all seven, so that the second
	 * was through (dropped) before the overflow event is read.
	 */
	for (i = 0; i < 3; i++) {
		post(_metadata, &p.srq, KDAT_DTO_RECEIVE, 200 + i, &p.s, 0, 64);
		post(_metadata, &p.csq, KDAT_DTO_SEND, 10 + i, &p.c, 0, 8);
		expect_dto(_metadata, &p.ccq, 10 + i, KDAT_DTO_SUCCESS, 0);
	}
	wait_completed(_metadata, &p.srq, 7);
	for (i = 0; i < 4; i++)
		expect_dto(_metadata, &p.scq, 100 + i, KDAT_DTO_SUCCESS, 0);
	ev = get_event(_metadata, &p.scq);
	ASSERT_TRUE(ev.event_number == KDAT_EVENT_ASYNC_EVD_OVERFLOW);
	ASSERT_TRUE(ld(p.scq.tail) == *p.scq.head);
}

/* Entries the ioctl would refuse complete refused, with its errno. */
TEST_F(kdat, test_hostile_entries)
{
	struct rawpair p;
	struct kdat_sqe *e;
	uint32_t t;

	rawpair_open(_metadata, &p, 16, 64);
	t = *p.csq.tail;
	sqe_fill(slot(&p.csq, t), KDAT_DTO_SEND, 1, 0x7ffffff0, p.c.buf.p, 8);
	publish(_metadata, &p.csq, ++t);
	expect_dto(_metadata, &p.ccq, 1, KDAT_DTO_ERR_LOCAL_PROTECTION, EACCES);

	sqe_fill(slot(&p.csq, t), KDAT_DTO_SEND, 2, p.c.buf.lctx,
		 p.c.buf.p + (1 << 20) - 4, 64);
	publish(_metadata, &p.csq, ++t);
	expect_dto(_metadata, &p.ccq, 2, KDAT_DTO_ERR_LOCAL_EP, EINVAL);

	sqe_fill(slot(&p.csq, t), KDAT_DTO_SEND, 3, p.c.buf.lctx,
		 p.c.buf.p - 4096, 64);
	publish(_metadata, &p.csq, ++t);
	expect_dto(_metadata, &p.ccq, 3, KDAT_DTO_ERR_LOCAL_EP, EINVAL);

	e = slot(&p.csq, t);
	sqe_fill(e, KDAT_DTO_SEND, 4, p.c.buf.lctx, p.c.buf.p, 8);
	e->completion_flags = 0x80;
	publish(_metadata, &p.csq, ++t);
	expect_dto(_metadata, &p.ccq, 4, KDAT_DTO_ERR_LOCAL_EP, EINVAL);

	e = slot(&p.csq, t);
	sqe_fill(e, KDAT_DTO_SEND, 5, p.c.buf.lctx, p.c.buf.p, 8);
	e->num_segments = 200;
	publish(_metadata, &p.csq, ++t);
	expect_dto(_metadata, &p.ccq, 5, KDAT_DTO_ERR_LOCAL_EP, EINVAL);

	sqe_fill(slot(&p.csq, t), KDAT_DTO_RECEIVE, 6, p.c.buf.lctx, p.c.buf.p, 8);
	publish(_metadata, &p.csq, ++t);
	expect_dto(_metadata, &p.ccq, 6, KDAT_DTO_ERR_LOCAL_EP, EINVAL);

	e = slot(&p.csq, t);
	sqe_fill(e, KDAT_DTO_SEND, 7, p.c.buf.lctx, p.c.buf.p, 8);
	e->__pad = 1;
	publish(_metadata, &p.csq, ++t);
	expect_dto(_metadata, &p.ccq, 7, KDAT_DTO_ERR_LOCAL_EP, EINVAL);

	/* An LMR of the peer's PZ (another IA): EPERM. */
	sqe_fill(slot(&p.csq, t), KDAT_DTO_SEND, 8, p.s.buf.lctx, p.s.buf.p, 8);
	publish(_metadata, &p.csq, ++t);
	expect_dto(_metadata, &p.ccq, 8, KDAT_DTO_ERR_LOCAL_PROTECTION, EPERM);

	/* Nothing was posted for them: the next message is the next event. */
	ping(_metadata, &p, 9);
	ASSERT_TRUE(ld(p.csq.completed) == 9);
}

/* A tail far past head is not consumed; a sane one is again. */
TEST_F(kdat, test_hostile_indices)
{
	struct rawpair p;
	uint32_t h, t, c0;
	double t0;

	rawpair_open(_metadata, &p, 16, 64);
	ping(_metadata, &p, 1);
	h = ld(p.csq.head);
	t = *p.csq.tail;
	__atomic_store_n(p.csq.tail, t + 1000, __ATOMIC_RELEASE);
	{
		struct kdat_ring_wake w = { .size = sizeof(w) };

		ioctl(p.csq.fd, KDAT_IOCTL_RING_WAKE, &w);
	}
	t0 = now_s();
	while (!(ld(p.csq.flags) & KDAT_RING_F_BAD_TAIL) && now_s() - t0 < 5)
		sched_yield();
	ASSERT_TRUE(ld(p.csq.flags) & KDAT_RING_F_BAD_TAIL);
	ASSERT_TRUE(ld(p.csq.head) == h);
	/* Nothing completed. */
	ASSERT_TRUE(ld(p.ccq.tail) == *p.ccq.head);
	__atomic_store_n(p.csq.tail, t, __ATOMIC_RELEASE);
	/* The kernel's head and completed are its own: writes are ignored. */
	__atomic_store_n(p.csq.head, h + 7, __ATOMIC_RELEASE);
	__atomic_store_n(p.csq.completed, 12345, __ATOMIC_RELEASE);
	ping(_metadata, &p, 2);
	ASSERT_TRUE(!(ld(p.csq.flags) & KDAT_RING_F_BAD_TAIL));
	ASSERT_TRUE(ld(p.csq.head) == t + 1 && ld(p.csq.completed) == 2);

	/* A completion-ring head moved backwards, then far ahead. */
	h = *p.ccq.head;
	__atomic_store_n(p.ccq.head, h - 3, __ATOMIC_RELEASE);
	post(_metadata, &p.srq, KDAT_DTO_RECEIVE, 3, &p.s, 0, 64);
	post(_metadata, &p.csq, KDAT_DTO_SEND, 3, &p.c, 0, 8);
	expect_dto(_metadata, &p.scq, 3, KDAT_DTO_SUCCESS, 0);
	t0 = now_s();
	while (ld(p.ccq.tail) == h && now_s() - t0 < 10)
		sched_yield();
	/* Written where it belongs. */
	ASSERT_TRUE(ld(p.ccq.tail) == h + 1);
	__atomic_store_n(p.ccq.head, h + 100000, __ATOMIC_RELEASE);
	c0 = ld(p.csq.completed);
	post(_metadata, &p.srq, KDAT_DTO_RECEIVE, 4, &p.s, 0, 64);
	post(_metadata, &p.srq, KDAT_DTO_RECEIVE, 40, &p.s, 0, 64);
	post(_metadata, &p.csq, KDAT_DTO_SEND, 4, &p.c, 0, 8);
	post(_metadata, &p.csq, KDAT_DTO_SEND, 40, &p.c, 0, 8);
	expect_dto(_metadata, &p.scq, 4, KDAT_DTO_SUCCESS, 0);
	expect_dto(_metadata, &p.scq, 40, KDAT_DTO_SUCCESS, 0);
	/*
	 * Send 40 counted as completed: the CQ is handled in order, so send
	 * 4's completion has been through the (full) ring by now.
	 */
	wait_completed(_metadata, &p.csq, c0 + 2);
	/* The kernel saw a full ring: it wrote nothing. */
	ASSERT_TRUE(ld(p.ccq.tail) == h + 1);
	__atomic_store_n(p.ccq.head, h + 1, __ATOMIC_RELEASE);
	ping(_metadata, &p, 5);
}

struct scribbler {
	struct ring *r;
	volatile bool stop, started;
};

static void *scribble(void *arg)
{
	struct scribbler *sc = arg;
	uint64_t x = 88172645463325252ULL;

	while (!sc->stop) {
		size_t i;

		for (i = 0; i + 8 <= (size_t)(sc->r->mask + 1) * sc->r->esz;
		     i += 8) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			memcpy(sc->r->ent + i, &x, 8);
		}
		sc->started = true;
	}
	return NULL;
}

/*
 * Entries rewritten while the poller copies them: each consumed entry
 * gives exactly one completion, whatever it said; nothing breaks.
 */
TEST_F_TIMEOUT(kdat, test_entries_rewritten, 120)
{
	struct scribbler sc;
	struct rawpair p;
	pthread_t th;
	uint32_t start, t, got = 0;
	const uint32_t n = 3000;
	double t0;

	rawpair_open(_metadata, &p, 16, 256);
	/* The rare entry that is a valid send completes. */
	prime(_metadata, &p);
	sc.r = &p.csq;
	sc.stop = false;
	sc.started = false;
	ASSERT_TRUE(!pthread_create(&th, NULL, scribble, &sc));
	while (!sc.started)
		sched_yield();
	start = *p.csq.tail;
	t = start;
	t0 = now_s();
	while ((t - start < n || got < t - start) && now_s() - t0 < 60) {
		/* Room: entries taken and done with. */
		if (t - start < n && t - ld(p.csq.completed) < 16)
			publish(_metadata, &p.csq, ++t);
		while (ld(p.ccq.tail) != *p.ccq.head) {
			struct kdat_event ev = get_event(_metadata, &p.ccq);

			ASSERT_TRUE(ev.event_number ==
				    KDAT_EVENT_DTO_COMPLETION);
			got++;
		}
		sched_yield();
	}
	sc.stop = true;
	pthread_join(th, NULL);
	ASSERT_FALSE(got != n || t - start != n)
		TH_LOG("%u completions for %u entries (head %u completed %u "
		       "flags %#x)", got, t - start, ld(p.csq.head),
		       ld(p.csq.completed), ld(p.csq.flags));
	ASSERT_TRUE(ld(p.csq.head) == t);
	/* The ring still works with honest entries. */
	ping(_metadata, &p, 777777);
}

/* munmap of a ring while the poller drains it: the kernel's copy stays. */
TEST_F(kdat, test_munmap_under_poller)
{
	struct rawpair p;
	struct ring second;
	uint32_t t;
	int i;

	rawpair_open(_metadata, &p, 64, 256);
	ring_map(_metadata, p.c.ep, KDAT_RING_SEND, &second);
	ASSERT_TRUE(second.mask == p.csq.mask);
	for (i = 0; i < 32; i++)
		post(_metadata, &p.srq, KDAT_DTO_RECEIVE, i, &p.s, 0, 64);
	t = *second.tail;
	for (i = 0; i < 32; i++)
		sqe_fill(slot(&second, t + i), KDAT_DTO_SEND, i, p.c.buf.lctx,
			 p.c.buf.p, 8);
	publish(_metadata, &second, t + 32);
	ASSERT_TRUE(!munmap(second.m, second.size));
	for (i = 0; i < 32; i++)
		expect_dto(_metadata, &p.ccq, i, KDAT_DTO_SUCCESS, 0);
	for (i = 0; i < 32; i++)
		expect_dto(_metadata, &p.scq, i, KDAT_DTO_SUCCESS, 0);
	ping(_metadata, &p, 1000);
}

/*
 * Lost wake-ups: 10,000 bursts, each after an idle gap longer than the
 * poller's spin, so that it has gone to sleep; no DTO may stay stuck.
 */
TEST_F_TIMEOUT(kdat, test_lost_wakeup, 120)
{
	struct rawpair p;
	int i, rings = 0, slept = 0;

	kdat_param_set(_metadata, "poll_idle_us", 50);
	rawpair_open(_metadata, &p, 16, 64);
	prime(_metadata, &p);
	for (i = 0; i < 10000; i++) {
		usleep(200);	/* > 50 us: the poller sleeps */
		if (ld(p.csq.flags) & KDAT_RING_F_NEED_WAKEUP)
			slept++;
		rings += post(_metadata, &p.csq, KDAT_DTO_SEND, i, &p.c, 0, 8);
		expect_dto(_metadata, &p.ccq, i, KDAT_DTO_SUCCESS, 0);
		expect_dto(_metadata, &p.scq, 1000000 + p.rx_done++,
			   KDAT_DTO_SUCCESS, 0);
		post(_metadata, &p.srq, KDAT_DTO_RECEIVE, 1000000 + p.rx_next++,
		     &p.s, 0, 64);
	}
	TH_LOG("poller asleep before %d of 10000 bursts; %d doorbells",
	       slept, rings);
	/* The test is only worth it if the poller did sleep. */
	ASSERT_TRUE(slept > 1000);
}

/*
 * KDAT_RING_WAKE_SUBMIT: with the poller asleep and no doorbell rung, the
 * caller's own call takes what it published (head reaches tail before the
 * call returns); unknown flags are refused.
 */
TEST_F(kdat, test_submit_in_caller)
{
	struct kdat_ring_wake w = { .size = sizeof(w) };
	struct rawpair p;
	double t0;
	uint32_t t;
	int i;

	rawpair_open(_metadata, &p, 16, 64);
	prime(_metadata, &p);
	w.flags = 1U << 31;
	errno = 0;
	ASSERT_TRUE(ioctl(p.csq.fd, KDAT_IOCTL_RING_WAKE, &w) == -1 &&
		    errno == EINVAL);
	for (i = 0; i < 4; i++) {
		/*
		 * The flag alone does not say it sleeps: it sets the flag,
		 * then looks at the tails once more before schedule().
		 */
		t0 = now_s();
		while (!(ld(p.csq.flags) & KDAT_RING_F_NEED_WAKEUP) ||
		       !pollers_asleep()) {
			ASSERT_FALSE(now_s() - t0 > 10)
				TH_LOG("the idle poller did not sleep");
			usleep(100);
		}
		t = *p.csq.tail;
		sqe_fill(slot(&p.csq, t), KDAT_DTO_SEND, i, p.c.buf.lctx,
			 p.c.buf.p, 8);
		sqe_fill(slot(&p.csq, t + 1), KDAT_DTO_SEND, 100 + i,
			 p.c.buf.lctx, p.c.buf.p, 8);
		__atomic_store_n(p.csq.tail, t + 2, __ATOMIC_RELEASE);
		w.flags = KDAT_RING_WAKE_SUBMIT;
		ASSERT_TRUE(!ioctl(p.csq.fd, KDAT_IOCTL_RING_WAKE, &w));
		ASSERT_TRUE(ld(p.csq.head) == t + 2);
		expect_dto(_metadata, &p.ccq, i, KDAT_DTO_SUCCESS, 0);
		expect_dto(_metadata, &p.ccq, 100 + i, KDAT_DTO_SUCCESS, 0);
		expect_dto(_metadata, &p.scq, 1000000 + p.rx_done++,
			   KDAT_DTO_SUCCESS, 0);
		expect_dto(_metadata, &p.scq, 1000000 + p.rx_done++,
			   KDAT_DTO_SUCCESS, 0);
		post(_metadata, &p.srq, KDAT_DTO_RECEIVE, 1000000 + p.rx_next++,
		     &p.s, 0, 64);
		post(_metadata, &p.srq, KDAT_DTO_RECEIVE, 1000000 + p.rx_next++,
		     &p.s, 0, 64);
	}
}

/* Threads posting through libdat's rings: to one EP, and to many. */
struct poster {
	DAT_EP_HANDLE ep;
	struct side *s;
	int first, n;
};

static void *post_thread(void *arg)
{
	struct poster *ps = arg;
	int i;

	for (i = 0; i < ps->n; i++) {
		DAT_LMR_TRIPLET t = {
			.lmr_context = ps->s->buf.lctx,
			.virtual_address = (uintptr_t)ps->s->buf.p,
			.segment_length = 8,
		};
		DAT_DTO_COOKIE ck = { .as_64 = ps->first + i };
		DAT_RETURN r;

		while (DAT_GET_TYPE(r = dat_ep_post_send(ps->ep, 1, &t, ck,
							 0)) ==
		       DAT_INSUFFICIENT_RESOURCES)
			sched_yield();
		if (r != DAT_SUCCESS)
			return (void *)1;
	}
	return NULL;
}

static void drain_sends(struct __test_metadata *_metadata, DAT_EVD_HANDLE evd,
			int total, unsigned char *seen)
{
	int i;

	for (i = 0; i < total; i++) {
		DAT_EVENT ev;
		DAT_COUNT n;
		uint64_t ck;

		OK(dat_evd_wait(evd, TMO, 1, &ev, &n));
		ASSERT_TRUE(ev.event_number == DAT_DTO_COMPLETION_EVENT);
		ASSERT_EQ(DAT_DTO_SUCCESS,
			  ev.event_data.dto_completion_event_data.status);
		ck = ev.event_data.dto_completion_event_data.user_cookie.as_64;
		ASSERT_TRUE(ck < (uint64_t)total && !seen[ck]);
		seen[ck] = 1;
	}
}

TEST_F_TIMEOUT(kdat, test_threads, 120)
{
	enum { T = 4, N = 300 };
	struct side c[T], s[T];
	struct poster ps[T];
	pthread_t th[T];
	static unsigned char seen[T * N];
	int i, j;

	unsetenv("KDAT_RINGS");	/* libdat's rings */
	for (i = 0; i < T; i++) {
		rside_open(_metadata, &c[i], 64, 2048);
		rside_open(_metadata, &s[i], 64, 2048);
		connect_sides(_metadata, &c[i], &s[i]);
		/* Receives for everything that will come. */
		for (j = 0; j < 64; j++) {
			DAT_LMR_TRIPLET t = {
				.lmr_context = s[i].buf.lctx,
				.virtual_address = (uintptr_t)s[i].buf.p + j * 64,
				.segment_length = 64 };
			DAT_DTO_COOKIE ck = { .as_64 = j };

			OK(dat_ep_post_recv(s[i].ep, 1, &t, ck, 0));
		}
	}
	/* Many EPs: a thread each. Receivers re-post as messages land. */
	for (i = 0; i < T; i++) {
		ps[i] = (struct poster){ c[i].ep, &c[i], 0, N };
		ASSERT_TRUE(!pthread_create(&th[i], NULL, post_thread, &ps[i]));
	}
	for (i = 0; i < T; i++) {
		memset(seen, 0, sizeof(seen));
		for (j = 0; j < N; j++) {
			DAT_EVENT ev;
			DAT_COUNT n;
			DAT_LMR_TRIPLET t = {
				.lmr_context = s[i].buf.lctx,
				.virtual_address = (uintptr_t)s[i].buf.p,
				.segment_length = 64 };
			DAT_DTO_COOKIE ck = { .as_64 = 0 };

			OK(dat_evd_wait(s[i].dto_evd, TMO, 1, &ev, &n));
			ASSERT_EQ(DAT_DTO_SUCCESS,
				  ev.event_data.dto_completion_event_data
				  .status);
			OK(dat_ep_post_recv(s[i].ep, 1, &t, ck, 0));
		}
		drain_sends(_metadata, c[i].dto_evd, N, seen);
	}
	for (i = 0; i < T; i++) {
		ASSERT_TRUE(pthread_join(th[i], NULL) == 0);
	}

	/* One EP, T threads; the receiver keeps up. */
	for (i = 0; i < T; i++) {
		ps[i] = (struct poster){ c[0].ep, &c[0], i * N, N };
		ASSERT_TRUE(!pthread_create(&th[i], NULL, post_thread, &ps[i]));
	}
	for (j = 0; j < T * N; j++) {
		DAT_EVENT ev;
		DAT_COUNT n;
		DAT_LMR_TRIPLET t = {
				.lmr_context = s[0].buf.lctx,
				.virtual_address = (uintptr_t)s[0].buf.p,
				.segment_length = 64 };
		DAT_DTO_COOKIE ck = { .as_64 = 0 };

		OK(dat_evd_wait(s[0].dto_evd, TMO, 1, &ev, &n));
		ASSERT_EQ(DAT_DTO_SUCCESS,
			  ev.event_data.dto_completion_event_data.status);
		OK(dat_ep_post_recv(s[0].ep, 1, &t, ck, 0));
	}
	memset(seen, 0, sizeof(seen));
	drain_sends(_metadata, c[0].dto_evd, T * N, seen);
	for (i = 0; i < T; i++) {
		void *rv;

		ASSERT_TRUE(pthread_join(th[i], &rv) == 0 && !rv);
	}
}

static int count_pollers(pid_t pid)
{
	char want[32], path[300], comm[64];
	struct dirent *d;
	DIR *dir = opendir("/proc");
	int n = 0;

	snprintf(want, sizeof(want), "kdat-poll/%d", (int)pid);
	while (dir && (d = readdir(dir))) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) &&
		    !strncmp(comm, want, strlen(want)))
			n++;
		fclose(f);
	}
	if (dir)
		closedir(dir);
	return n;
}

/*
 * test_exit_with_full_rings' child (kdat_fork()): its rings full, it says
 * so on @arg's pipe and waits to be killed.
 */
static void full_rings_child(struct __test_metadata *_metadata, void *arg)
{
	int *up = arg;
	struct rawpair p;
	int i;

	rawpair_open(_metadata, &p, 64, 8);
	/* Sends with no receive: all stuck; more published than fit. */
	for (i = 0; i < 64; i++)
		post(_metadata, &p.csq, KDAT_DTO_SEND, i, &p.c, 0, 8);
	if (write(up[1], "r", 1) != 1)
		_exit(2);
	for (;;)
		pause();
}

/* A process killed with its rings full leaves nothing: no poller either. */
TEST_F(kdat, test_exit_with_full_rings)
{
	int up[2], status;
	double t0;
	pid_t pid;
	char c;

	ASSERT_TRUE(!pipe(up));
	pid = kdat_fork(_metadata, full_rings_child, up);
	ASSERT_LT(0, pid);
	close(up[1]);		/* a child that failed: no byte, no wait */
	ASSERT_TRUE(read(up[0], &c, 1) == 1);
	/* The poller starts with the first ring, before the child wrote. */
	ASSERT_TRUE(count_pollers(pid) == 1);
	kill(pid, SIGKILL);
	ASSERT_TRUE(waitpid(pid, &status, 0) == pid);
	/* It goes with the file, which the dead child's exit released. */
	t0 = now_s();
	while (count_pollers(pid) != 0) {
		ASSERT_FALSE(now_s() - t0 > 10)
			TH_LOG("the dead process's poller outlived it 10 s");
		usleep(10000);
	}
}

static int poller_set(int fd, uint32_t mode, int32_t cpu, uint32_t rsvd)
{
	struct kdat_poller_set s = {
		.size = sizeof(s), .mode = mode, .cpu = cpu, .__reserved = rsvd,
	};

	return ioctl(fd, KDAT_IOCTL_POLLER_SET, &s) ? errno : 0;
}

/* The tid of this process's poller (kdat-poll/<pid>), 0 if none. */
static int poller_tid(void)
{
	char want[32], path[300], buf[512];
	struct dirent *d;
	DIR *dir = opendir("/proc");
	int tid = 0;

	snprintf(want, sizeof(want), "(kdat-poll/%d)", (int)getpid());
	while (dir && (d = readdir(dir))) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%s/stat", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && strstr(buf, want))
			tid = atoi(d->d_name);
		fclose(f);
	}
	if (dir)
		closedir(dir);
	return tid;
}

/* Wait up to 2 s for the poller to be there (or gone); its tid. */
static int poller_wait(struct __test_metadata *_metadata, bool there)
{
	double t0 = now_s();
	int tid;

	while (!(tid = poller_tid()) == there) {
		ASSERT_FALSE(now_s() - t0 > 2)
			TH_LOG("the poller is %s after 2 s",
			       there ? "not there" : "still there");
		usleep(1000);
	}
	return tid;
}

/* One ping, as libdat posts: the doorbells it rang (0 or 1). */
static int ping_rings(struct __test_metadata *_metadata, struct rawpair *p,
		      uint64_t i)
{
	int rang;

	p->c.buf.p[0] = (uint8_t)i;
	rang = post(_metadata, &p->csq, KDAT_DTO_SEND, i, &p->c, 0, 32);
	expect_dto(_metadata, &p->ccq, i, KDAT_DTO_SUCCESS, 0);
	expect_dto(_metadata, &p->scq, 1000000 + p->rx_done++, KDAT_DTO_SUCCESS,
		   0);
	ASSERT_TRUE(p->s.buf.p[0] == (uint8_t)i);
	post(_metadata, &p->srq, KDAT_DTO_RECEIVE, 1000000 + p->rx_next++,
	     &p->s, 0, 64);
	return rang;
}

/*
 * KDAT_POLLER_NONE: the poller stops; every submission ring says
 * NEED_WAKEUP at all times; nothing published is taken until the
 * doorbell, which takes it in the caller's context, with or without
 * KDAT_RING_WAKE_SUBMIT. Then KDAT_POLLER_SPIN: a poller again, which
 * takes posts without a doorbell. Bad settings are refused.
 */
TEST_F(kdat, test_no_poller)
{
	struct kdat_ring_wake w = { .size = sizeof(w) };
	int i, rang = 0, fd;
	struct rawpair p;
	cpu_set_t one;
	uint32_t t;

	rawpair_open(_metadata, &p, 16, 64);
	fd = p.csq.fd;
	prime(_metadata, &p);
	ping(_metadata, &p, 1);
	ASSERT_TRUE(poller_tid() > 0);
	ASSERT_EQ(EINVAL,
		  poller_set(fd, KDAT_POLLER_SPIN + 1, KDAT_POLLER_ANY_CPU, 0));
	ASSERT_EQ(EINVAL, poller_set(fd, KDAT_POLLER_NONE, -2, 0));
	ASSERT_EQ(EINVAL, poller_set(fd, KDAT_POLLER_NONE, 1 << 20, 0));
	ASSERT_EQ(EINVAL,
		  poller_set(fd, KDAT_POLLER_NONE, KDAT_POLLER_ANY_CPU, 1));
	/* A CPU the caller may not run on. */
	if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
		cpu_set_t all;

		ASSERT_TRUE(!sched_getaffinity(0, sizeof(all), &all));
		CPU_ZERO(&one);
		CPU_SET(0, &one);
		ASSERT_TRUE(!sched_setaffinity(0, sizeof(one), &one));
		ASSERT_EQ(EINVAL, poller_set(fd, KDAT_POLLER_ADAPTIVE, 1, 0));
		ASSERT_TRUE(!sched_setaffinity(0, sizeof(all), &all));
	}
	/* Refused settings changed nothing. */
	ASSERT_TRUE(poller_tid() > 0);

	ASSERT_EQ(0, poller_set(fd, KDAT_POLLER_NONE, KDAT_POLLER_ANY_CPU, 0));
	poller_wait(_metadata, false);
	ASSERT_TRUE(ld(p.csq.flags) & KDAT_RING_F_NEED_WAKEUP);
	ASSERT_TRUE(ld(p.crq.flags) & KDAT_RING_F_NEED_WAKEUP);
	ASSERT_TRUE(ld(p.srq.flags) & KDAT_RING_F_NEED_WAKEUP);
	t = *p.csq.tail;
	sqe_fill(slot(&p.csq, t), KDAT_DTO_SEND, 2, p.c.buf.lctx, p.c.buf.p, 8);
	__atomic_store_n(p.csq.tail, t + 1, __ATOMIC_RELEASE);
	usleep(200000);
	ASSERT_EQ(t, ld(p.csq.head));
	ASSERT_TRUE(!ioctl(fd, KDAT_IOCTL_RING_WAKE, &w));
	ASSERT_EQ(t + 1, ld(p.csq.head));
	expect_dto(_metadata, &p.ccq, 2, KDAT_DTO_SUCCESS, 0);
	expect_dto(_metadata, &p.scq, 1000000 + p.rx_done++, KDAT_DTO_SUCCESS,
		   0);
	post(_metadata, &p.srq, KDAT_DTO_RECEIVE, 1000000 + p.rx_next++, &p.s,
	     0, 64);
	for (i = 0; i < 100; i++)
		rang += ping_rings(_metadata, &p, 10 + i);
	ASSERT_EQ(100, rang);
	ASSERT_TRUE(poller_tid() == 0);

	/*
	 * However slow the pings, a spinning poller does not go idle
	 * between them (an adaptive one may back off: test_poller_unpaid).
	 */
	kdat_param_set(_metadata, "poll_idle_us", 200000);
	ASSERT_EQ(0, poller_set(fd, KDAT_POLLER_SPIN, KDAT_POLLER_ANY_CPU, 0));
	poller_wait(_metadata, true);
	for (rang = 0, i = 0; i < 100; i++)
		rang += ping_rings(_metadata, &p, 200 + i);
	TH_LOG("a poller again: %d doorbells for 100 pings", rang);
	ASSERT_TRUE(rang < 100);
}

/*
 * A doorbell that names a submission ring takes that ring's entries alone
 * (libdat names the ring it posted to); one that names no submission ring
 * of the file, or whose reserved field is not 0, is refused.
 */
TEST_F(kdat, test_wake_one_ring)
{
	struct kdat_ring_wake w = {
		.size = sizeof(w), .flags = KDAT_RING_WAKE_SUBMIT,
	};
	struct rawpair p;
	uint32_t t, rt;
	int fd;

	rawpair_open(_metadata, &p, 16, 64);
	fd = p.csq.fd;
	prime(_metadata, &p);
	ping(_metadata, &p, 1);
	ASSERT_EQ(0, poller_set(fd, KDAT_POLLER_NONE, KDAT_POLLER_ANY_CPU, 0));
	poller_wait(_metadata, false);
	/* A receive on s's ring and a send on c's, published, no doorbell. */
	rt = *p.srq.tail;
	sqe_fill(slot(&p.srq, rt), KDAT_DTO_RECEIVE, 1000000 + p.rx_next++,
		 p.s.buf.lctx, p.s.buf.p, 64);
	__atomic_store_n(p.srq.tail, rt + 1, __ATOMIC_RELEASE);
	t = *p.csq.tail;
	sqe_fill(slot(&p.csq, t), KDAT_DTO_SEND, 2, p.c.buf.lctx, p.c.buf.p, 8);
	__atomic_store_n(p.csq.tail, t + 1, __ATOMIC_RELEASE);
	usleep(100000);
	ASSERT_EQ(rt, ld(p.srq.head));
	ASSERT_EQ(t, ld(p.csq.head));
	/* s's receive ring alone... */
	w.ring = p.srq.id;
	ASSERT_TRUE(!ioctl(fd, KDAT_IOCTL_RING_WAKE, &w));
	ASSERT_EQ(rt + 1, ld(p.srq.head));
	ASSERT_EQ(t, ld(p.csq.head));
	usleep(100000);
	ASSERT_EQ(t, ld(p.csq.head));
	/* ...then c's send ring. */
	w.ring = p.csq.id;
	ASSERT_TRUE(!ioctl(fd, KDAT_IOCTL_RING_WAKE, &w));
	ASSERT_EQ(t + 1, ld(p.csq.head));
	expect_dto(_metadata, &p.ccq, 2, KDAT_DTO_SUCCESS, 0);
	expect_dto(_metadata, &p.scq, 1000000 + p.rx_done++, KDAT_DTO_SUCCESS,
		   0);

	/* An EVD's ring, an id no ring has, a reserved field not 0. */
	w.ring = p.ccq.id;
	errno = 0;
	ASSERT_TRUE(ioctl(fd, KDAT_IOCTL_RING_WAKE, &w) == -1 &&
		    errno == EBADF);
	w.ring = 0x7ffff;
	errno = 0;
	ASSERT_TRUE(ioctl(fd, KDAT_IOCTL_RING_WAKE, &w) == -1 &&
		    errno == EBADF);
	/* Without SUBMIT too: the id is checked before the poller wakes. */
	w.flags = 0;
	errno = 0;
	ASSERT_TRUE(ioctl(fd, KDAT_IOCTL_RING_WAKE, &w) == -1 &&
		    errno == EBADF);
	w.flags = KDAT_RING_WAKE_SUBMIT;
	w.ring = p.csq.id;
	w.__reserved = 1;
	errno = 0;
	ASSERT_TRUE(ioctl(fd, KDAT_IOCTL_RING_WAKE, &w) == -1 &&
		    errno == EINVAL);
	/* Nothing refused was taken; the rings still work. */
	ASSERT_EQ(t + 1, ld(p.csq.head));
	ping_rings(_metadata, &p, 3);
}

/*
 * Does the file's fdinfo line of ring @r (of @kind) end with @tag
 * (" parked", " pinned")?
 */
static bool ring_tagged(struct __test_metadata *_metadata, struct ring *r,
			const char *kind, const char *tag)
{
	char path[64], line[256], want[64];
	bool tagged = false;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", r->fd);
	snprintf(want, sizeof(want), "sq:\t%s %u ", kind, r->kh);
	f = fopen(path, "r");
	EXPECT_NE(NULL, f);
	while (f && fgets(line, sizeof(line), f)) {
		n = strcspn(line, "\n");
		tagged |= !strncmp(line, want, strlen(want)) &&
			  n >= strlen(tag) &&
			  !strncmp(line + n - strlen(tag), tag, strlen(tag));
	}
	if (f)
		fclose(f);
	return tagged;
}

/*
 * Where a message that finds no receive ends the connection (iWARP: no
 * RNR), a receive ring says NEED_WAKEUP at all times, so that each
 * receive is taken by its own doorbell before its post returns (DAT: the
 * post's success is "at least the equivalent of posting a Receive
 * operation directly by native Transport"); elsewhere a running poller
 * clears it. With a spinning poller, each ping leaves the send ring's flag
 * clear (the poller runs) and both receive rings' flags set on iWARP,
 * clear elsewhere; on iWARP a receive's doorbell names its ring and
 * returns with the entry taken. On iWARP, fdinfo says "pinned"; a
 * receive published without a doorbell stays on its ring while the
 * poller spins (its passes leave the ring out), and a doorbell for the
 * whole file, without KDAT_RING_WAKE_SUBMIT, takes it before it returns.
 * Then, on iWARP, the same as the first of an SRQ's ring made while the
 * poller runs.
 */
TEST_F_TIMEOUT(kdat, test_recv_ring_pinned, 120)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 8, .max_recv_iov = 1 };
	int iwarp = rdma_dev_iwarp(getenv("KDAT_TEST_DEV"));
	int i, sq_clear = 0, rq_set = 0, taken = 0, rang = 0, staken = 0;
	struct kdat_ring_wake w = { .size = sizeof(w) };
	DAT_SRQ_HANDLE srq;
	struct rawpair p;
	struct ring sr;
	uint32_t t;

	ASSERT_TRUE(iwarp >= 0)
		TH_LOG("no node_type in sysfs for %s",
		       getenv("KDAT_TEST_DEV"));
	kdat_param_set(_metadata, "poll_idle_us", 200000);
	rawpair_open(_metadata, &p, 16, 64);
	p.srq.named = true;
	ASSERT_EQ(0, poller_set(p.csq.fd, KDAT_POLLER_SPIN,
				KDAT_POLLER_ANY_CPU, 0));
	poller_wait(_metadata, true);
	prime(_metadata, &p);
	for (i = 0; i < 200; i++) {
		/* Its last step posts a receive on p.srq. */
		ping_rings(_metadata, &p, i);
		taken += ld(p.srq.head) == *p.srq.tail;
		sq_clear += !(ld(p.csq.flags) & KDAT_RING_F_NEED_WAKEUP);
		rq_set += (ld(p.srq.flags) & KDAT_RING_F_NEED_WAKEUP) &&
			  (ld(p.crq.flags) & KDAT_RING_F_NEED_WAKEUP);
	}
	TH_LOG("%s: send ring unflagged after %d of 200 pings, both receive "
	       "rings flagged after %d, the receive taken by its post %d",
	       iwarp ? "iWARP" : "not iWARP", sq_clear, rq_set, taken);
	/* Only worth it if the poller ran between pings. */
	if (!sq_clear)
		SKIP(return, "the spinning poller never ran between pings");
	ASSERT_TRUE(iwarp ? rq_set == 200 && taken == 200 : rq_set < 200);
	if (iwarp) {
		ASSERT_TRUE(ring_tagged(_metadata, &p.srq, "recv", " pinned"));
		ASSERT_TRUE(ring_tagged(_metadata, &p.crq, "recv", " pinned"));
		ASSERT_FALSE(ring_tagged(_metadata, &p.csq, "send", " pinned"));
		t = *p.srq.tail;
		sqe_fill(slot(&p.srq, t), KDAT_DTO_RECEIVE,
			 1000000 + p.rx_next++, p.s.buf.lctx, p.s.buf.p, 64);
		__atomic_store_n(p.srq.tail, t + 1, __ATOMIC_RELEASE);
		usleep(100000);
		ASSERT_EQ(t, ld(p.srq.head));
		ASSERT_TRUE(!ioctl(p.srq.fd, KDAT_IOCTL_RING_WAKE, &w));
		ASSERT_EQ(t + 1, ld(p.srq.head));
		ping_rings(_metadata, &p, 250);
	}

	OK(dat_srq_create(p.s.ia, p.s.pz, &sa, &srq));
	ring_map(_metadata, srq, KDAT_RING_SRQ, &sr);
	sr.named = true;
	for (i = 0; i < 4; i++) {
		rang += post(_metadata, &sr, KDAT_DTO_RECEIVE, 70 + i, &p.s,
			     i * 64, 64);
		staken += ld(sr.head) == *sr.tail;
		/* The poller's passes go on meanwhile. */
		ping_rings(_metadata, &p, 300 + i);
	}
	TH_LOG("SRQ: %d of 4 receives rang, %d taken by their post", rang,
	       staken);
	if (iwarp) {
		ASSERT_TRUE(ld(sr.flags) & KDAT_RING_F_NEED_WAKEUP);
		ASSERT_EQ(4, rang);
		ASSERT_EQ(4, staken);
	}
	OK(dat_srq_free(srq));
	munmap(sr.m, sr.size);
}

/*
 * Receives published on an EP's ring before its connect or accept are in
 * its QP when the call goes out: the peer may send as soon as it hears,
 * and a UD message that finds no receive is lost (dtestx -u over kdat
 * lost two of four on 6.12, its poller backing off). With no poller, two
 * receives published on each side without a doorbell stay on the rings
 * until the connect and the accept take them; then a message each way
 * finds one.
 */
TEST_F(kdat, test_connect_takes_recvs)
{
	struct rawpair p;
	struct ring ssq;
	uint32_t k;

	memset(&p, 0, sizeof(p));
	setenv("KDAT_RINGS", "0", 1);
	rside_open(_metadata, &p.c, 16, 64);
	rside_open(_metadata, &p.s, 16, 64);
	ring_map(_metadata, p.c.ep, KDAT_RING_RECV, &p.crq);
	ring_map(_metadata, p.s.ep, KDAT_RING_RECV, &p.srq);
	ASSERT_EQ(0, poller_set(p.crq.fd, KDAT_POLLER_NONE,
				KDAT_POLLER_ANY_CPU, 0));
	poller_wait(_metadata, false);
	for (k = 0; k < 2; k++) {
		sqe_fill(slot(&p.crq, k), KDAT_DTO_RECEIVE, 100 + k, p.c.buf.lctx,
			 p.c.buf.p + 4096, 64);
		sqe_fill(slot(&p.srq, k), KDAT_DTO_RECEIVE, 200 + k, p.s.buf.lctx,
			 p.s.buf.p + 4096, 64);
	}
	__atomic_store_n(p.crq.tail, 2, __ATOMIC_RELEASE);
	__atomic_store_n(p.srq.tail, 2, __ATOMIC_RELEASE);
	usleep(100000);
	ASSERT_EQ(0, ld(p.crq.head));
	ASSERT_EQ(0, ld(p.srq.head));
	connect_sides(_metadata, &p.c, &p.s);
	ASSERT_EQ(2, ld(p.crq.head));
	ASSERT_EQ(2, ld(p.srq.head));
	ring_map(_metadata, p.c.ep, KDAT_RING_SEND, &p.csq);
	ring_map(_metadata, p.s.ep, KDAT_RING_SEND, &ssq);
	ring_map(_metadata, p.c.dto_evd, KDAT_RING_EVD, &p.ccq);
	ring_map(_metadata, p.s.dto_evd, KDAT_RING_EVD, &p.scq);
	post(_metadata, &p.csq, KDAT_DTO_SEND, 1, &p.c, 0, 32);
	expect_dto(_metadata, &p.ccq, 1, KDAT_DTO_SUCCESS, 0);
	expect_dto(_metadata, &p.scq, 200, KDAT_DTO_SUCCESS, 0);
	post(_metadata, &ssq, KDAT_DTO_SEND, 2, &p.s, 0, 32);
	expect_dto(_metadata, &p.scq, 2, KDAT_DTO_SUCCESS, 0);
	expect_dto(_metadata, &p.ccq, 100, KDAT_DTO_SUCCESS, 0);
}

/*
 * DAT: an SRQ is not resized below the receives posted to it. Receives
 * published on the SRQ's ring count though no poller took them yet: the
 * resize takes them first. With no poller, four entries published without
 * a doorbell stay on the ring; a resize to 2 must then answer
 * DAT_INVALID_STATE, having taken the four (before, it counted none and
 * shrank, and the four were refused later, as errors on the EVD).
 */
TEST_F(kdat, test_srq_resize_counts_ring)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 8, .max_recv_iov = 1 };
	DAT_SRQ_PARAM sp;
	DAT_SRQ_HANDLE srq;
	struct ring r;
	struct side s;
	uint32_t t;
	int i;

	setenv("KDAT_RINGS", "0", 1);	/* libdat stays off the queues */
	rside_open(_metadata, &s, 4, 16);
	OK(dat_srq_create(s.ia, s.pz, &sa, &srq));
	ring_map(_metadata, srq, KDAT_RING_SRQ, &r);
	ASSERT_EQ(0, poller_set(r.fd, KDAT_POLLER_NONE, KDAT_POLLER_ANY_CPU,
				0));
	poller_wait(_metadata, false);
	t = *r.tail;
	for (i = 0; i < 4; i++)
		sqe_fill(slot(&r, t + i), KDAT_DTO_RECEIVE, 70 + i, s.buf.lctx,
			 s.buf.p + i * 64, 64);
	__atomic_store_n(r.tail, t + 4, __ATOMIC_RELEASE);
	usleep(100000);
	ASSERT_EQ(t, ld(r.head));	/* nobody took them */
	ASSERT_FALSE(DAT_GET_TYPE(dat_srq_resize(srq, 2)) != DAT_INVALID_STATE)
		TH_LOG("dat_srq_resize(srq, 2) with 4 receives on the ring: not DAT_INVALID_STATE");
	ASSERT_EQ(t + 4, ld(r.head));
	OK(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &sp));
	ASSERT_EQ(8, sp.max_recv_dtos);
	/* Four posted: 4 is room enough, 3 is not. */
	ASSERT_FALSE(DAT_GET_TYPE(dat_srq_resize(srq, 3)) != DAT_INVALID_STATE)
		TH_LOG("dat_srq_resize(srq, 3) with 4 receives posted: not DAT_INVALID_STATE");
	OK(dat_srq_resize(srq, 4));
	OK(dat_srq_free(srq));
	munmap(r.m, r.size);
	OK(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
}

struct flooder {
	struct ring *r;
	struct side *side;
	volatile bool stop;
	unsigned long published;
};

/*
 * Publish sends on a ring as fast as its slots free, every free slot at
 * once, no doorbell, for 5 s at most (the clock read now and then: on the
 * testbed's hpet it is a system call).
 */
static void *flood(void *arg)
{
	struct flooder *f = arg;
	double t0 = now_s();
	uint32_t t = *f->r->tail, h, n = 0;

	while (!f->stop && ((++n & 4095) || now_s() - t0 < 5)) {
		h = ld(f->r->head);
		if ((int32_t)(t - h) > (int32_t)f->r->mask)
			continue;
		while ((int32_t)(t - h) <= (int32_t)f->r->mask) {
			sqe_fill(slot(f->r, t), KDAT_DTO_SEND, t,
				 f->side->buf.lctx, f->side->buf.p, 8);
			t++;
			f->published++;
		}
		__atomic_store_n(f->r->tail, t, __ATOMIC_RELEASE);
	}
	return NULL;
}

/*
 * A disconnect takes what the EP's rings hold first, in the caller's
 * context. A thread that goes on publishing meanwhile (as fast as slots
 * free, with no poller and no doorbell) must not keep it there: the
 * flush takes what was published when it began (one full ring here), and
 * the disconnect returns at once, not when the publisher stops (5 s).
 * Before, the flush read the tail again after each batch and took the
 * refills too, for as long as the publisher kept up, holding the file's
 * ring lock.
 */
TEST_F(kdat, test_flush_bounded)
{
	struct flooder f = { 0 };
	struct rawpair p;
	pthread_t th;
	double t0, took;

	rawpair_open(_metadata, &p, 16, 64);
	ASSERT_EQ(0, poller_set(p.csq.fd, KDAT_POLLER_NONE,
				KDAT_POLLER_ANY_CPU, 0));
	poller_wait(_metadata, false);
	f.r = &p.csq;
	f.side = &p.c;
	ASSERT_TRUE(!pthread_create(&th, NULL, flood, &f));
	usleep(100000);		/* the ring is full: nobody takes from it */
	t0 = now_s();
	OK(dat_ep_disconnect(p.c.ep, DAT_CLOSE_ABRUPT_FLAG));
	took = now_s() - t0;
	f.stop = true;
	ASSERT_TRUE(!pthread_join(th, NULL));
	TH_LOG("disconnect took %.3f s beside a publisher (%lu entries)",
	       took, f.published);
	ASSERT_FALSE(took > 2)
		TH_LOG("the disconnect took %.3f s: it followed the publisher",
		       took);
	/*
	 * A full ring before, the flush took it, the publisher filled it
	 * again and waits: nobody takes more (no poller, no doorbell). A
	 * flush that read the tail again took the refills too.
	 */
	ASSERT_FALSE(f.published > 2 * (p.csq.mask + 1))
		TH_LOG("%lu entries published: the flush took more than the %u published before it",
		       f.published, p.csq.mask + 1);
}

/* The number after @key in @fd's poller line of fdinfo; -1 if none. */
static long poller_field(struct __test_metadata *_metadata, int fd,
			 const char *key)
{
	char path[64], line[512], *at;
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "poller:\t", 8) &&
		    (at = strstr(line, key)))
			v = atol(at + strlen(key));
	fclose(f);
	return v;
}

/*
 * A poller that spends less than poll_busy_pct of its time taking entries
 * backs off (KDAT_POLLER_ADAPTIVE): pings a millisecond apart keep it
 * busy a few percent of a window, so it sleeps for want of pay, and the
 * process posts from its own context meanwhile (doorbells), every DTO
 * completing. KDAT_POLLER_SPIN's poller spins on through the same pings.
 */
TEST_F_TIMEOUT(kdat, test_poller_unpaid, 120)
{
	int i, rang, fd;
	struct rawpair p;

	/* Never idle between the pings. */
	kdat_param_set(_metadata, "poll_idle_us", 200000);
	kdat_param_set(_metadata, "poll_busy_pct", 50);
	rawpair_open(_metadata, &p, 16, 64);
	fd = p.csq.fd;
	prime(_metadata, &p);
	ASSERT_EQ(0,
		  poller_set(fd, KDAT_POLLER_ADAPTIVE, KDAT_POLLER_ANY_CPU, 0));
	poller_wait(_metadata, true);
	for (rang = 0, i = 0; i < 200; i++) {
		usleep(1000);
		rang += ping_rings(_metadata, &p, i);
	}
	TH_LOG("adaptive: %d doorbells for 200 pings 1 ms apart", rang);
	fdinfo_diag(_metadata, fd);
	ASSERT_TRUE(poller_field(_metadata, fd, " unpaid_sleeps ") > 0);
	ASSERT_TRUE(rang > 0);

	ASSERT_EQ(0, poller_set(fd, KDAT_POLLER_SPIN, KDAT_POLLER_ANY_CPU, 0));
	poller_wait(_metadata, true);
	for (rang = 0, i = 0; i < 200; i++) {
		usleep(1000);
		rang += ping_rings(_metadata, &p, 1000 + i);
	}
	TH_LOG("spin: %d doorbells for 200 pings 1 ms apart", rang);
	fdinfo_diag(_metadata, fd);
	ASSERT_EQ(0, poller_field(_metadata, fd, " unpaid_sleeps "));
	ASSERT_TRUE(poller_field(_metadata, fd, " busy_pct ") >= 0);
	ASSERT_TRUE(rang < 200);
}

/*
 * A child on CPU 0 until killed, or until the case that made it ends:
 * with @fifo, a SCHED_FIFO task that busy-waits 2 ms of every 20 (it
 * preempts whatever runs there at once and is never runnable when another
 * task looks); else a busy loop. 0 when it could not be placed (SCHED_FIFO
 * refused, CPU 0 out of reach), said in a diagnostic.
 */
static pid_t child_on_cpu0(struct __test_metadata *_metadata, bool fifo)
{
	struct sched_param sp = { .sched_priority = 1 };
	pid_t parent = getpid(), pid;
	int ready[2];
	char ok = 0;

	ASSERT_TRUE(!pipe(ready));
	pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (!pid) {
		cpu_set_t one;
		double t0;

		close(ready[0]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(1);
		CPU_ZERO(&one);
		CPU_SET(0, &one);
		ok = !sched_setaffinity(0, sizeof(one), &one) &&
		     (!fifo || !sched_setscheduler(0, SCHED_FIFO, &sp));
		if (write(ready[1], &ok, 1) != 1 || !ok)
			_exit(1);
		for (;;) {
			t0 = now_s();
			while (!fifo || now_s() - t0 < 0.002)
				;
			usleep(18000);
		}
	}
	close(ready[1]);
	if (read(ready[0], &ok, 1) != 1 || !ok) {
		TH_LOG("no %s on CPU 0", fifo ? "SCHED_FIFO task" : "busy loop");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = 0;
	}
	close(ready[0]);
	return pid;
}

/*
 * The poller cases pin the poller to CPU 0 and the pinging process to
 * CPU 1; skip where the case's process may not use both.  Returns the
 * process's own affinity in @all, to be restored.
 */
static void need_cpus01(struct __test_metadata *_metadata, cpu_set_t *all)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		KDAT_SKIP("needs two CPUs");
	ASSERT_TRUE(!sched_getaffinity(0, sizeof(*all), all));
	if (!CPU_ISSET(0, all) || !CPU_ISSET(1, all))
		KDAT_SKIP("needs CPUs 0 and 1");
}

/* CPU time @pid has had, in seconds (utime + stime). */
static double cpu_s(struct __test_metadata *_metadata, pid_t pid)
{
	unsigned long ut = 0, st = 0;
	char path[64], buf[1024], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	ASSERT_TRUE(p && sscanf(p, ") %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
				&ut, &st) == 2);
	return (double)(ut + st) / sysconf(_SC_CLK_TCK);
}

/*
 * The poller spins only while it has its CPU to itself. Pinned to CPU 0
 * (KDAT_POLLER_SET cpu; KDAT_POLLER_SPIN, so that pay does not count)
 * beside a busy loop there, it gives the CPU up, and every DTO of the
 * process, on CPU 1, completes: it naps while the process's sends are at
 * the device (whose worker may be what wants the CPU), else backs off and
 * the process posts from its own context (a doorbell for nearly every
 * post). Either way the loop keeps its CPU: two thirds of it at least (a
 * poller that did not yield would share it half and half) over the
 * pings. The loop gone, and the back-off (a quarter second at most)
 * over, it polls again: most posts need no doorbell (rxe's softirq work
 * on the poller's CPU may still send it to back off now and then: 91 of
 * 1000 on the debug kernel under make check-hog, 1 on the stock kernel).
 * Its idle spin is made long (200 ms) for the case, so that only the
 * CPU's being wanted sends it to sleep, however slow the pings are.
 */
TEST_F_TIMEOUT(kdat, test_poller_yields_cpu, 120)
{
	int i, rang, tid, status;
	double t0, c0, share;
	char path[64], line[256];
	bool pinned = false;
	long idle_naps;
	cpu_set_t one, all;
	struct rawpair p;
	pid_t hog;
	FILE *f;

	need_cpus01(_metadata, &all);
	kdat_param_set(_metadata, "poll_idle_us", 200000);
	rawpair_open(_metadata, &p, 16, 64);
	prime(_metadata, &p);
	/* Only its CPU's being wanted sends a spinning poller away. */
	ASSERT_EQ(0, poller_set(p.csq.fd, KDAT_POLLER_SPIN, 0, 0));
	tid = poller_wait(_metadata, true);
	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		if (!strcmp(line, "Cpus_allowed_list:\t0\n"))
			pinned = true;
	fclose(f);
	ASSERT_TRUE(pinned);
	CPU_ZERO(&one);
	CPU_SET(1, &one);
	ASSERT_TRUE(!sched_setaffinity(0, sizeof(one), &one));

	hog = child_on_cpu0(_metadata, false);
	ASSERT_TRUE(hog > 0);
	usleep(100000);
	idle_naps = poller_field(_metadata, p.csq.fd, " idle_naps ");
	ASSERT_TRUE(idle_naps >= 0);
	t0 = now_s();
	c0 = cpu_s(_metadata, hog);
	for (rang = 0, i = 0; i < 1000; i++)
		rang += ping_rings(_metadata, &p, i);
	share = (cpu_s(_metadata, hog) - c0) / (now_s() - t0);
	TH_LOG("beside a busy loop: %d doorbells for 1000 pings in %.2f s, the loop had %.0f%% of its CPU",
	       rang, now_s() - t0, share * 100);
	fdinfo_diag(_metadata, p.csq.fd);
	ASSERT_TRUE(share >= 0.65);
	/*
	 * It gave the CPU up, in naps or sleeps for its CPU: not idle
	 * (200 ms), nor unpaid (spinning). How the two share it depends on
	 * the kernel (6.12's rxe workers want the CPU too).
	 */
	ASSERT_TRUE(poller_field(_metadata, p.csq.fd, " shared_sleeps ") > 0 ||
		    poller_field(_metadata, p.csq.fd, " naps ") > 500);
	/* The loop left its CPU no idle time: no nap found it free. */
	ASSERT_EQ(idle_naps, poller_field(_metadata, p.csq.fd, " idle_naps "));
	kill(hog, SIGKILL);
	ASSERT_TRUE(waitpid(hog, &status, 0) == hog);

	usleep(500000);
	for (rang = 0, i = 0; i < 1000; i++)
		rang += ping_rings(_metadata, &p, 2000 + i);
	TH_LOG("alone on its CPU: %d doorbells for 1000 pings", rang);
	fdinfo_diag(_metadata, p.csq.fd);
	ASSERT_TRUE(rang < 500);
	ASSERT_TRUE(!sched_setaffinity(0, sizeof(all), &all));
}

/*
 * Pinned to CPU 0 in @mode (set while the process may run there), pings
 * from CPU 1 for a second; the poller's shared_sleeps.
 */
static long preempted_sleeps(struct __test_metadata *_metadata,
			     struct rawpair *p, uint32_t mode, const char *name,
			     uint64_t base)
{
	cpu_set_t one, all;
	double t0;
	int i, rang;

	ASSERT_TRUE(!sched_getaffinity(0, sizeof(all), &all));
	ASSERT_EQ(0, poller_set(p->csq.fd, mode, 0, 0));
	poller_wait(_metadata, true);
	CPU_ZERO(&one);
	CPU_SET(1, &one);
	ASSERT_TRUE(!sched_setaffinity(0, sizeof(one), &one));
	t0 = now_s();
	for (rang = 0, i = 0; now_s() - t0 < 1; i++)
		rang += ping_rings(_metadata, p, base + i);
	ASSERT_TRUE(!sched_setaffinity(0, sizeof(all), &all));
	TH_LOG("%s: %d doorbells for %d pings", name, rang, i);
	fdinfo_diag(_metadata, p->csq.fd);
	return poller_field(_metadata, p->csq.fd, " shared_sleeps ");
}

/*
 * A poller that waited half a millisecond for its CPU between two looks
 * was preempted: the adaptive poller backs off for it (until it runs
 * again its rings stay unflagged, and the process waits for it instead of
 * posting), the spinning one does not (KDAT_POLLER_SPIN: the CPU was
 * given to it, and its waits are mostly the softirq work of its own
 * posts). Pinned to CPU 0 beside a SCHED_FIFO task there that preempts it
 * for 2 ms of every 20, with pings from CPU 1 for a second each (the pay
 * rule off, the idle spin long): the adaptive poller sleeps for its CPU
 * at most of the bursts, the spinning one at few if any (only the looks rule
 * sends it away: another task runnable at its looks for half a
 * millisecond).
 */
TEST_F_TIMEOUT(kdat, test_poller_preempted, 120)
{
	struct rawpair p;
	long adaptive, spin;
	cpu_set_t all;
	int status;
	pid_t rt;

	need_cpus01(_metadata, &all);
	kdat_param_set(_metadata, "poll_idle_us", 200000);
	kdat_param_set(_metadata, "poll_busy_pct", 0);
	rawpair_open(_metadata, &p, 16, 64);
	prime(_metadata, &p);
	rt = child_on_cpu0(_metadata, true);
	if (!rt)
		SKIP(return, "SCHED_FIFO refused");
	adaptive = preempted_sleeps(_metadata, &p, KDAT_POLLER_ADAPTIVE,
				    "adaptive", 0);
	spin = preempted_sleeps(_metadata, &p, KDAT_POLLER_SPIN, "spin",
				100000);
	kill(rt, SIGKILL);
	ASSERT_TRUE(waitpid(rt, &status, 0) == rt);
	/* 50 bursts in a second: most send the adaptive one away. */
	ASSERT_TRUE(adaptive >= 10);
	ASSERT_TRUE(spin >= 0 && spin <= 5);
}

/*
 * /proc/self/fdinfo of the device file: its objects, each submission ring's
 * indices as the kernel and the process last wrote them, its poller
 * (asleep once idle, with NEED_WAKEUP in the ring's flags; the ring may
 * have been parked just before).
 */
TEST_F(kdat, test_fdinfo)
{
	char path[64], line[256], want[128];
	bool objs = false, send = false, poller = false;
	int recv = 0;
	struct rawpair p;
	double t0;
	FILE *f;
	int i;

	rawpair_open(_metadata, &p, 16, 32);
	prime(_metadata, &p);
	for (i = 0; i < 20; i++)
		ping(_metadata, &p, i);
	t0 = now_s();
	while (!(ld(p.csq.flags) & KDAT_RING_F_NEED_WAKEUP) ||
	       !pollers_asleep()) {
		ASSERT_FALSE(now_s() - t0 > 10)
			TH_LOG("the idle poller did not sleep");
		usleep(1000);
	}
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", p.csq.fd);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	snprintf(want, sizeof(want),
		 "entries 16 head 20 tail 20 completed 20 flags %#x",
		 KDAT_RING_F_NEED_WAKEUP);
	while (fgets(line, sizeof(line), f)) {
		TH_LOG("%s: %.*s", path, (int)strcspn(line, "\n"), line);
		/* Both sides are in libdat's one file, 4 EVDs each. */
		if (!strncmp(line, "objects:", 8))
			objs = strstr(line, " ia 2 pz 2 lmr 2 evd 8 ep 2 psp 0"
					    " cr 0 srq 0 cno 0 rmr 0 ah 0\n");
		if (!strncmp(line, "sq:\tsend ", 9))
			send = strstr(line, want) &&
			       (strstr(line, want)[strlen(want)] == '\n' ||
				!strcmp(strstr(line, want) + strlen(want),
					" parked\n"));
		/* c's receive queue unused, s's: 8 primed + 20 */
		if (!strncmp(line, "sq:\trecv ", 9))
			recv += strstr(line, " head 0 tail 0 completed 0 ") ||
				strstr(line, " head 28 tail 28 completed 20 ");
		if (!strncmp(line, "poller:\t", 8))
			poller = atoi(line + 8) > 0 && strstr(line, " asleep ");
	}
	fclose(f);
	ASSERT_TRUE(objs);
	ASSERT_TRUE(send);
	ASSERT_TRUE(recv == 2);
	ASSERT_TRUE(poller);
}

/*
 * Only rings with work are visited. c's receive ring, idle from the
 * start while the poller goes on for the pings, is parked: fdinfo says
 * so, and its flags say NEED_WAKEUP. An entry published there without
 * the doorbell that flag asks for is not taken while the poller goes on
 * with the other rings (no pass looks at it); the doorbell that names
 * it puts it back, and the entry is taken. (The pings' own doorbells
 * name their rings: a doorbell for the whole file puts every ring back.)
 */
TEST_F_TIMEOUT(kdat, test_ring_parked, 120)
{
	struct kdat_ring_wake w = { .size = sizeof(w) };
	struct rawpair p;
	bool parked = false;
	uint32_t t;
	double t0;
	int i;

	rawpair_open(_metadata, &p, 64, 64);
	p.csq.named = p.srq.named = true;
	prime(_metadata, &p);
	t0 = now_s();
	for (i = 0; !parked && now_s() - t0 < 20; i++) {
		ping(_metadata, &p, i);
		if (!(i % 16))
			parked = ring_tagged(_metadata, &p.crq, "recv", " parked");
	}
	TH_LOG("c's idle receive ring parked after %d pings", i);
	ASSERT_TRUE(parked);
	ASSERT_TRUE(ld(p.crq.flags) & KDAT_RING_F_NEED_WAKEUP);

	/* Published, no doorbell: no pass takes it. */
	t = *p.crq.tail;
	sqe_fill(slot(&p.crq, t), KDAT_DTO_RECEIVE, 7, p.c.buf.lctx,
		 p.c.buf.p, 64);
	__atomic_store_n(p.crq.tail, t + 1, __ATOMIC_RELEASE);
	for (i = 0; i < 200; i++)
		ping(_metadata, &p, i);
	ASSERT_EQ(t, ld(p.crq.head));
	ASSERT_TRUE(ring_tagged(_metadata, &p.crq, "recv", " parked"));

	/* The doorbell that names it (no SUBMIT: the poller takes it). */
	w.ring = p.crq.id;
	ASSERT_TRUE(!ioctl(p.crq.fd, KDAT_IOCTL_RING_WAKE, &w));
	t0 = now_s();
	while (ld(p.crq.head) != t + 1 && now_s() - t0 < 5)
		usleep(100);
	ASSERT_EQ(t + 1, ld(p.crq.head));
}

/* ---- extended send entries (the DAT IB extensions) ------------------- */

static struct kdat_sqe_ext *xslot(struct ring *r, uint32_t i)
{
	return (struct kdat_sqe_ext *)(r->ent + (size_t)(i & r->mask) *
				       r->esz);
}

/*
 * One extended entry at @r's tail, published: @op with up to two local
 * segments (@len2 0: one; both 0: none) and the remote buffer.
 */
static void xpost(struct __test_metadata *_metadata, struct ring *r, uint8_t op,
		  uint64_t cookie, struct side *s, size_t off1, uint64_t len1,
		  size_t off2, uint64_t len2, DAT_RMR_CONTEXT rctx,
		  uint64_t raddr, const struct kdat_dto_ext *ext)
{
	uint32_t t = *r->tail;
	struct kdat_sqe_ext *x = xslot(r, t);

	memset(x, 0, r->esz);
	x->op = op;
	x->cookie = cookie;
	x->num_segments = len1 ? (len2 ? 2 : 1) : 0;
	x->iov[0].lmr_context = s->buf.lctx;
	x->iov[0].virtual_address = (uintptr_t)s->buf.p + off1;
	x->iov[0].segment_length = len1;
	x->iov[1].lmr_context = s->buf.lctx;
	x->iov[1].virtual_address = (uintptr_t)s->buf.p + off2;
	x->iov[1].segment_length = len2;
	x->remote.rmr_context = rctx;
	x->remote.target_address = raddr;
	x->remote.segment_length = len1 + len2;
	if (ext)
		x->ext = *ext;
	publish(_metadata, r, t + 1);
}

/* The next event of @r: a DTO completion of @op, as wanted. */
static struct kdat_event expect_op(struct __test_metadata *_metadata,
				   struct ring *r, uint64_t cookie, uint32_t op,
				   uint32_t status, uint32_t post_error,
				   uint64_t len, uint32_t imm)
{
	struct kdat_event ev = get_event(_metadata, r);

	ASSERT_FALSE(ev.event_number != KDAT_EVENT_DTO_COMPLETION ||
		     ev.cookie != cookie || ev.operation != op ||
		     ev.status != status || ev.post_error != post_error ||
		     (status == KDAT_DTO_SUCCESS &&
		      ev.transferred_length != len) ||
		     ev.imm_data != imm)
		TH_LOG("event %#x cookie %llu op %u status %u err %u len "
		       "%llu imm %#x; want %llu %u %u %u %llu %#x",
		       ev.event_number, (unsigned long long)ev.cookie,
		       ev.operation, ev.status, ev.post_error,
		       (unsigned long long)ev.transferred_length,
		       ev.imm_data, (unsigned long long)cookie, op, status,
		       post_error, (unsigned long long)len, imm);
	return ev;
}

/*
 * A send ring of extended entries (KDAT_RING_CREATE_SQE_EXT): its entry
 * size gives the segments, computed here, not assumed; RDMA write with
 * immediate data and the atomics go through it with their arguments;
 * hostile extended entries are refused as the ioctl would; a plain ring
 * refuses the extended ops.
 */
TEST_F_TIMEOUT(kdat, test_ext_entries, 120)
{
	const struct kdat_dto_ext imm = { .imm_data = 0xa1b2c3d4 };
	struct kdat_dto_ext x;
	struct rawpair p, q;
	struct kdat_ia_query iq = { .size = sizeof(iq) };
	DAT_REGION_DESCRIPTION reg;
	DAT_LMR_HANDLE albr;
	DAT_LMR_CONTEXT actx;
	DAT_RMR_CONTEXT arctx;
	DAT_VLEN rlen;
	DAT_VADDR raddr;
	uint64_t *target, *result;
	uint32_t segs, n = 0;
	int fd, i;

	memset(&p, 0, sizeof(p));
	setenv("KDAT_RINGS", "0", 1);
	rside_open(_metadata, &p.c, 16, 64);
	rside_open(_metadata, &p.s, 16, 64);
	connect_sides(_metadata, &p.c, &p.s);
	ring_map_flags(_metadata, p.c.ep, KDAT_RING_SEND,
		       KDAT_RING_CREATE_SQE_EXT, &p.csq);
	ring_map(_metadata, p.s.ep, KDAT_RING_RECV, &p.srq);
	ring_map(_metadata, p.c.dto_evd, KDAT_RING_EVD, &p.ccq);
	ring_map(_metadata, p.s.dto_evd, KDAT_RING_EVD, &p.scq);
	segs = (p.csq.esz - sizeof(struct kdat_sqe_ext)) /
	       sizeof(struct kdat_lmr_triplet);
	TH_LOG("extended send entries: %u bytes, room for %u segments",
	       p.csq.esz, segs);
	ASSERT_TRUE(p.csq.esz % 64 == 0 && segs >= 2);

	/* Write with immediate data from two segments. */
	for (i = 0; i < 2000; i++)
		p.c.buf.p[i] = (unsigned char)(i * 7 + 1);
	memset(p.s.buf.p, 0xEE, 8192);
	post(_metadata, &p.srq, KDAT_DTO_RECEIVE, 50, &p.s, 0, 64);
	xpost(_metadata, &p.csq, KDAT_DTO_RDMA_WRITE_IMM, 51, &p.c, 0, 100,
	      1000, 50, p.s.buf.rctx, (uintptr_t)p.s.buf.p + 4096, &imm);
	n++;
	expect_op(_metadata, &p.ccq, 51, KDAT_DTO_RDMA_WRITE_IMM,
		  KDAT_DTO_SUCCESS, 0, 150, 0);
	expect_op(_metadata, &p.scq, 50, KDAT_DTO_RECV_RDMA_IMM,
		  KDAT_DTO_SUCCESS, 0, 150, imm.imm_data);
	ASSERT_TRUE(!memcmp(p.s.buf.p + 4096, p.c.buf.p, 100));
	ASSERT_TRUE(!memcmp(p.s.buf.p + 4196, p.c.buf.p + 1000, 50));
	ASSERT_TRUE(p.s.buf.p[4095] == 0xEE && p.s.buf.p[4246] == 0xEE);
	ASSERT_TRUE(p.s.buf.p[0] == 0xEE);	/* the receive's buffer */

	/* The atomics, on memory s opens to them, exact values. */
	ASSERT_TRUE(!kdat_dat_handle(p.c.ia, &fd, &iq.ia_handle));
	ASSERT_TRUE(!ioctl(fd, KDAT_IOCTL_IA_QUERY, &iq));
	reg.for_va = p.s.buf.p + 8192;
	OK(dat_lmr_create(p.s.ia, DAT_MEM_TYPE_VIRTUAL, reg, 4096, p.s.pz,
			  DAT_MEM_PRIV_ALL_FLAG | 0x40, DAT_VA_TYPE_VA, &albr,
			  &actx, &arctx, &rlen, &raddr));
	target = (uint64_t *)(p.s.buf.p + 8192 + 64);
	result = (uint64_t *)(p.c.buf.p + 4096);
	*target = 5;
	*result = 0;
	x = (struct kdat_dto_ext){ .compare_add = 10 };
	xpost(_metadata, &p.csq, KDAT_DTO_FETCH_ADD, 52, &p.c, 4096, 8, 0, 0,
	      arctx, (uintptr_t)target, &x);
	n++;
	if (iq.atomic_cap == KDAT_ATOMIC_NONE) {
		expect_op(_metadata, &p.ccq, 52, KDAT_DTO_FETCH_ADD,
			  KDAT_DTO_ERR_LOCAL_EP, EOPNOTSUPP, 0, 0);
	} else {
		expect_op(_metadata, &p.ccq, 52, KDAT_DTO_FETCH_ADD,
			  KDAT_DTO_SUCCESS, 0, 8, 0);
		ASSERT_EQ(5, *result);
		ASSERT_EQ(15, *target);
		x = (struct kdat_dto_ext){ .compare_add = 15, .swap = 99 };
		xpost(_metadata, &p.csq, KDAT_DTO_CMP_SWAP, 53, &p.c, 4096, 8,
		      0, 0, arctx, (uintptr_t)target, &x);
		n++;
		expect_op(_metadata, &p.ccq, 53, KDAT_DTO_CMP_SWAP,
			  KDAT_DTO_SUCCESS, 0, 8, 0);
		ASSERT_EQ(15, *result);
		ASSERT_EQ(99, *target);
	}

	/* Hostile extended entries: refused, with the ioctl's errno. */
	x = (struct kdat_dto_ext){ .imm_data = 1, .ah_handle = 1 };
	xpost(_metadata, &p.csq, KDAT_DTO_RDMA_WRITE_IMM, 60, &p.c, 0, 8, 0, 0,
	      p.s.buf.rctx, (uintptr_t)p.s.buf.p, &x);
	x = (struct kdat_dto_ext){ .imm_data = 1 };
	xpost(_metadata, &p.csq, KDAT_DTO_SEND, 61, &p.c, 0, 8, 0, 0, 0, 0, &x);
	x = (struct kdat_dto_ext){ .compare_add = 1, .swap = 2 };
	xpost(_metadata, &p.csq, KDAT_DTO_FETCH_ADD, 62, &p.c, 0, 8, 0, 0,
	      arctx, (uintptr_t)target, &x);
	xpost(_metadata, &p.csq, KDAT_DTO_RECV_RDMA_IMM, 63, &p.c, 0, 8, 0, 0,
	      0, 0, NULL);
	xpost(_metadata, &p.csq, KDAT_DTO_RECEIVE, 64, &p.c, 0, 8, 0, 0, 0, 0,
	      NULL);
	/* A plain send from an extended entry: no receive at s, it waits. */
	xpost(_metadata, &p.csq, KDAT_DTO_SEND, 65, &p.c, 0, 8, 0, 0, 0, 0,
	      NULL);
	n += 6;
	for (i = 60; i < 65; i++)
		expect_op(_metadata, &p.ccq, i,
			  i == 63 ? KDAT_DTO_RECV_RDMA_IMM :
			  i == 64 ? KDAT_DTO_RECEIVE :
			  i == 61 ? KDAT_DTO_SEND :
			  i == 62 ? KDAT_DTO_FETCH_ADD :
			  KDAT_DTO_RDMA_WRITE_IMM, KDAT_DTO_ERR_LOCAL_EP,
			  EINVAL, 0, 0);
	/* More segments than the entry has room for. */
	{
		uint32_t t = *p.csq.tail;

		memset(xslot(&p.csq, t), 0, p.csq.esz);
		xslot(&p.csq, t)->op = KDAT_DTO_SEND;
		xslot(&p.csq, t)->cookie = 66;
		xslot(&p.csq, t)->num_segments = segs + 1;
		publish(_metadata, &p.csq, t + 1);
		n++;
	}
	expect_op(_metadata, &p.ccq, 66, KDAT_DTO_SEND, KDAT_DTO_ERR_LOCAL_EP,
		  EINVAL, 0, 0);
	post(_metadata, &p.srq, KDAT_DTO_RECEIVE, 70, &p.s, 0, 64);
	expect_op(_metadata, &p.ccq, 65, KDAT_DTO_SEND, KDAT_DTO_SUCCESS, 0, 8,
		  0);
	expect_op(_metadata, &p.scq, 70, KDAT_DTO_RECEIVE, KDAT_DTO_SUCCESS, 0,
		  8, 0);
	ASSERT_EQ(n, ld(p.csq.completed));

	/* A ring of plain entries refuses the extended ops. */
	rawpair_open(_metadata, &q, 16, 64);
	sqe_fill(slot(&q.csq, 0), KDAT_DTO_FETCH_ADD, 80, q.c.buf.lctx, q.c.buf.p,
		 8);
	sqe_fill(slot(&q.csq, 1), KDAT_DTO_RDMA_WRITE_IMM, 81, q.c.buf.lctx,
		 q.c.buf.p, 8);
	publish(_metadata, &q.csq, 2);
	expect_op(_metadata, &q.ccq, 80, KDAT_DTO_FETCH_ADD,
		  KDAT_DTO_ERR_LOCAL_EP, EINVAL, 0, 0);
	expect_op(_metadata, &q.ccq, 81, KDAT_DTO_RDMA_WRITE_IMM,
		  KDAT_DTO_ERR_LOCAL_EP, EINVAL, 0, 0);
	ping(_metadata, &q, 82);
}

/*
 * The largest EVD the kernel makes (65536 events; a software EVD has no
 * CQ to bound it) has a completion ring: qlen + 1 events, 131072 entries
 * (it was refused past 65536). The EVD holds qlen events, refuses the
 * next (DAT_QUEUE_FULL), and the ring gives them back in order.
 */
TEST_F_TIMEOUT(kdat, test_evd_ring_largest, 120)
{
	DAT_EVENT se = { .event_number = DAT_SOFTWARE_EVENT };
	DAT_EVD_HANDLE aevd = DAT_HANDLE_NULL, evd;
	DAT_IA_HANDLE ia;
	uint64_t i, q = 65536;
	struct ring r;

	if (geteuid())
		SKIP(return, "not root: 8 MiB of ring is over a user's RLIMIT_MEMLOCK");
	setenv("KDAT_RINGS", "0", 1);	/* the ring is made here */
	OK(dat_ia_open(pair_conf.ia_name, 8, &aevd, &ia));
	OK(dat_evd_create(ia, q, NULL, DAT_EVD_SOFTWARE_FLAG, &evd));
	ring_map(_metadata, evd, KDAT_RING_EVD, &r);
	ASSERT_EQ(131072, r.mask + 1);
	for (i = 1; i <= q; i++) {
		se.event_data.software_event_data.pointer = (void *)i;
		OK(dat_evd_post_se(evd, &se));
	}
	ASSERT_EQ(DAT_QUEUE_FULL, DAT_GET_TYPE(dat_evd_post_se(evd, &se)));
	ASSERT_EQ(q, ld(r.tail) - *r.head);
	for (i = 1; i <= q; i++) {
		struct kdat_event ev = get_event(_metadata, &r);

		ASSERT_FALSE(ev.event_number != KDAT_EVENT_SOFTWARE ||
			     ev.cookie != i)
			TH_LOG("event %llu: number %u cookie %llu",
			       (unsigned long long)i, ev.event_number,
			       (unsigned long long)ev.cookie);
	}
	/* Room again, at the wrap of the ring's first half. */
	se.event_data.software_event_data.pointer = (void *)(q + 1);
	OK(dat_evd_post_se(evd, &se));
	ASSERT_EQ(q + 1, get_event(_metadata, &r).cookie);
	munmap(r.m, r.size);
	OK(dat_evd_free(evd));
	OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}

/*
 * Issue 44: every failure point of the ring operations unwinds
 * (tests/lib/fail_nth.h; the debug kernel's pass, which has fault
 * injection). A connected pair made through libdat with nothing failing
 * (fail_nth_rings_setup(): libdat reads files), then, failing, its raw
 * rings made and mapped, no poller, so that every drain runs in the
 * scenario's own task (the doorbell), where its failure points are: sends
 * and receives through the rings, their completions through the EVD
 * rings, the waits; then the file closed by the exit, connected.
 */
static struct rawpair fn_pair;

static void fail_nth_rings_setup(struct __test_metadata *_metadata)
{
	ring_wait_s = 2;
	rawpair_connect(_metadata, &fn_pair, 16, 64);
}

static void fail_nth_rings(struct __test_metadata *_metadata)
{
	struct rawpair *p = &fn_pair;
	int i;

	rawpair_map(_metadata, p);
	ASSERT_EQ(0, poller_set(p->csq.fd, KDAT_POLLER_NONE, 0, 0));
	prime(_metadata, p);
	for (i = 0; i < 4; i++)
		ping_rings(_metadata, p, i);
}

TEST_F_TIMEOUT(kdat, test_fail_nth_rings, 600)
{
	fail_nth_sweep_after(_metadata, "rings", fail_nth_rings_setup,
			     fail_nth_rings, 3000);
}

int main(int argc, char **argv)
{
	int skip = pair_test_env(kdat_harness_listing(argc, argv));

	if (skip)
		return skip;
	/* Qualifiers apart from dat_dto_test's, as before. */
	pair_conf.qual_base = 20000;
	pair_conf.qual_span = 40000;
	return kdat_harness_main(argc, argv);
}
