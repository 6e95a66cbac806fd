// SPDX-License-Identifier: GPL-2.0
/*
 * kdat_consumer: a sample in-kernel consumer of kdat's kernel API
 * (include/kdat/kdat.h), and a test of it.
 *
 * Everything happens in module_init: it opens one IA, connects two of its
 * Endpoints to each other (loopback through the RDMA CM: A connects to the
 * device's own address, B accepts the request that arrives on a PSP),
 * moves data both ways, checks what arrives, tears everything down and
 * reports in KTAP on the kernel log. It then stays loaded with nothing
 * allocated, so that rmmod works.
 *
 * The DTO EVDs (one per Endpoint, for its receives and requests) deliver
 * their events through upcalls, in atomic context: the upcall copies the
 * event into a small queue and wakes the test thread. The connection and
 * CR EVDs have no upcall: they are waited on with kdat_evd_wait().
 *
 *   mode=test  the functional cases, one KTAP line each (the DAT IB
 *              extensions' RDMA write with immediate data and atomics too)
 *   mode=bw    B keeps @depth receives posted, A sends @count messages of
 *              @size bytes with @depth outstanding, the thread asleep
 *              between completions or, with poll=1, polling; one "bw ..."
 *              line. With repost=1 B's upcall re-posts each receive that
 *              completes, in atomic context, as kernel RDMA consumers do;
 *              the test mode's upcall_repost case does the same
 *
 * role=server or role=client (mode=bw) splits A and B across two hosts:
 * the server has only B, listens on @conn_qual and waits (a minute at
 * most) for the client's request; the client has only A and connects to
 * the server at @addr. Each reports its own side.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/in.h>
#include <linux/inet.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include <kdat/kdat.h>
#include <uapi/linux/kdat.h>

static char *kc_dev = "rxe0";
module_param_named(dev, kc_dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device to open the IA on (default rxe0)");

static unsigned int kc_port = 1;
module_param_named(port, kc_port, uint, 0444);
MODULE_PARM_DESC(port, "port of the device (default 1)");

static char *kc_addr = "192.0.2.1";
module_param_named(addr, kc_addr, charp, 0444);
MODULE_PARM_DESC(addr,
		 "IPv4 address of the device's netdev, which A connects to (default 192.0.2.1)");

static unsigned int kc_conn_qual = 7471;
module_param_named(conn_qual, kc_conn_qual, uint, 0444);
MODULE_PARM_DESC(conn_qual, "connection qualifier of the PSP (default 7471)");

static char *kc_mode = "test";
module_param_named(mode, kc_mode, charp, 0444);
MODULE_PARM_DESC(mode, "\"test\" (default): the functional cases; \"bw\": bandwidth");

static unsigned int kc_size = 64;
module_param_named(size, kc_size, uint, 0444);
MODULE_PARM_DESC(size, "bw: message size in bytes (default 64)");

static unsigned int kc_count = 100000;
module_param_named(count, kc_count, uint, 0444);
MODULE_PARM_DESC(count, "bw: messages to send (default 100000)");

static unsigned int kc_depth = 64;
module_param_named(depth, kc_depth, uint, 0444);
MODULE_PARM_DESC(depth, "bw: sends outstanding, and receives posted (default 64)");

static char *kc_role = "both";
module_param_named(role, kc_role, charp, 0444);
MODULE_PARM_DESC(role, "bw: \"both\" (default: A and B here), \"server\" (B only) or \"client\" (A only, connecting to addr)");

static bool kc_poll;
module_param_named(poll, kc_poll, bool, 0444);
MODULE_PARM_DESC(poll, "bw: poll for completions instead of sleeping until an upcall wakes the thread (default 0)");

static bool kc_repost;
module_param_named(repost, kc_repost, bool, 0444);
MODULE_PARM_DESC(repost, "bw: B's upcall re-posts each receive that completes, instead of the thread (default 0)");

#define KC_TIMEOUT_MS		5000	/* for any one event */
#define KC_SERVE_MS		60000	/* a server, for its client's request */
#define KC_ERR_TIMEOUT_MS	10000	/* for a send the peer refused */
#define KC_QUIET_MS		200	/* how long "no event comes" is watched */

#define KC_EVQ_LEN		16	/* events an upcall queue holds */
#define KC_WHY_MAX		4	/* failure reasons kept per case */
#define KC_WHY_LEN		128

#define KC_BUF_LEN		8192	/* A's and B's kmalloc'd buffers */
#define KC_VBUF_PAGES		4	/* the vmalloc'd buffer ... */
#define KC_VBUF_OFF		100	/* ... its LMR: 3 pages from here */
#define KC_VBUF_LMR_LEN		(3 * PAGE_SIZE)
#define KC_SENTINEL		0xee	/* what no DTO may write */

#define KC_TEST_DTOS		16	/* per queue, in test mode */
#define KC_REPOST_COUNT		2000	/* upcall_repost: messages, ... */
#define KC_REPOST_SIZE		512	/* ... their size, ... */
#define KC_REPOST_DEPTH		8	/* ... and those outstanding */
#define KC_TEST_IOV		4
#define KC_RDMA_READS		4
#define KC_CONN_QLEN		8
#define KC_CR_QLEN		4

/* The range of B's buffer that the RMR gives A. */
#define KC_RMR_OFF		1024
#define KC_RMR_LEN		6000

#define KC_BW_MAX_SIZE		SZ_1M
#define KC_BW_MAX_DEPTH		4096

#define KC_ANY_LEN		U64_MAX
#define KC_BAD_CONTEXT		0xdeadbeef

/* A DTO's cookie: the case number and the DTO's number in it. */
#define KC_COOKIE(n, i)		(0xc0de000000000000ULL | ((u64)(n) << 16) | (i))

/* What has been built; the cases that need more are skipped. */
#define KC_S_SETUP		BIT(0)	/* every object of setup exists */
#define KC_S_CONN		BIT(1)	/* A and B are connected */
#define KC_S_DATA		BIT(2)	/* and DTOs between them work */
#define KC_S_RMR		BIT(3)	/* the RMR is bound to B's buffer */

#define kc_note(fmt, ...)	pr_info("# " fmt "\n", ##__VA_ARGS__)

/*
 * The events an upcall handed over. In counting mode (bw) they are only
 * counted: good ones are DTO completions of @want_op, successful, and for
 * receives @want_len bytes long.
 */
struct kc_evq {
	spinlock_t lock;		/* guards the rest */
	wait_queue_head_t *wq;
	struct kdat_event ev[KC_EVQ_LEN];
	unsigned int head;
	unsigned int len;
	unsigned int dropped;
	bool counting;
	u32 want_op;
	u64 want_len;
	u64 ok;
	u64 bad;
	struct kdat_event first_bad;
	/* Re-posting: each good receive posts @iov to @ep, @left times. */
	struct kdat_ep *repost_ep;
	struct kdat_lmr_triplet repost_iov;
	u64 repost_left;
	u64 reposted;
	int repost_err;
	u64 repost_preemptible;		/* re-posts made where one may sleep */
};

/* One end of the connection. */
struct kc_side {
	const char *name;
	struct kdat_evd *dto_evd;	/* receives and requests; upcall */
	struct kdat_evd *conn_evd;	/* kdat_evd_wait() */
	struct kdat_ep *ep;
	struct kdat_upcall upcall;
	struct kc_evq q;
	u8 *buf;			/* kmalloc'd, buf_len bytes */
	struct kdat_lmr *lmr;
};

/* The test context: the one piece of state of the module. */
/* role=: both sides here, or one of them across a wire. */
enum kc_role { KC_BOTH, KC_SERVER, KC_CLIENT };

struct kc_ctx {
	bool bw;
	enum kc_role role;
	__be32 addr;
	unsigned int state;		/* KC_S_* */
	wait_queue_head_t wq;		/* the upcalls wake it */

	struct kdat_ia *ia;
	struct kdat_pz *pz;
	struct kdat_evd *cr_evd;
	struct kdat_psp *psp;
	struct kc_side a;		/* active: connects, sends, RDMAs */
	struct kc_side b;		/* passive: accepts, receives */
	struct kc_side c;		/* passive, receives from an SRQ */
	struct kc_side d;		/* active: sends to C */
	struct kdat_srq *srq;
	size_t buf_len;
	u8 *vbuf;			/* vmalloc'd, KC_VBUF_PAGES pages */
	struct kdat_lmr *vlmr;
	struct kdat_rmr *rmr;
	u32 rmr_context;

	/* The case being run. */
	bool failed;
	const char *skip;
	unsigned int nwhy;
	unsigned int more;
	char why[KC_WHY_MAX][KC_WHY_LEN];

	unsigned int n;
	unsigned int pass;
	unsigned int fail;
	unsigned int skipped;
};

struct kc_case {
	const char *name;
	void (*run)(struct kc_ctx *c);
	unsigned int needs;		/* KC_S_* */
};

/* Reporting */

/* The case fails; @fmt says why (on a "# " line after the result). */
static __printf(2, 3) int kc_fail(struct kc_ctx *c, const char *fmt, ...)
{
	va_list ap;

	c->failed = true;
	if (c->nwhy < KC_WHY_MAX) {
		va_start(ap, fmt);
		vsnprintf(c->why[c->nwhy++], KC_WHY_LEN, fmt, ap);
		va_end(ap);
	} else {
		c->more++;
	}
	return -EIO;
}

static void kc_skip(struct kc_ctx *c, const char *reason)
{
	c->skip = reason;
}

static void kc_report(struct kc_ctx *c, const char *name)
{
	unsigned int i;

	c->n++;
	if (c->failed) {
		pr_info("not ok %u %s\n", c->n, name);
		for (i = 0; i < c->nwhy; i++)
			pr_info("# %s\n", c->why[i]);
		if (c->more)
			pr_info("# (and %u more)\n", c->more);
		c->fail++;
	} else if (c->skip) {
		pr_info("ok %u %s # SKIP %s\n", c->n, name, c->skip);
		c->skipped++;
	} else {
		pr_info("ok %u %s\n", c->n, name);
		c->pass++;
	}
}

static void kc_run(struct kc_ctx *c, const struct kc_case *kcase)
{
	unsigned int missing = kcase->needs & ~c->state;

	c->failed = false;
	c->skip = NULL;
	c->nwhy = 0;
	c->more = 0;
	if (!missing)
		kcase->run(c);
	else if (!(c->state & KC_S_SETUP))
		kc_skip(c, "setup failed");
	else if (missing & KC_S_CONN)
		kc_skip(c, "not connected");
	else if (missing & KC_S_DATA)
		kc_skip(c, "the connection is unusable after an earlier failure");
	else
		kc_skip(c, "no RMR bound");
	kc_report(c, kcase->name);
}

/* Buffers */

static u8 kc_pat(u8 seed, size_t i)
{
	return (u8)(seed * 59 + i + (i >> 8) * 7);
}

/* Byte @from + i of pattern @seed into @p[i]. */
static void kc_fill(u8 *p, size_t len, u8 seed, size_t from)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = kc_pat(seed, from + i);
}

static int kc_expect_pattern(struct kc_ctx *c, const char *what, const u8 *p,
			     size_t len, u8 seed, size_t from)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != kc_pat(seed, from + i))
			return kc_fail(c, "%s: byte %zu is %#04x, expected %#04x",
				       what, i, p[i], kc_pat(seed, from + i));
	return 0;
}

static int kc_expect_untouched(struct kc_ctx *c, const char *what,
			       const u8 *p, size_t len)
{
	const u8 *bad = memchr_inv(p, KC_SENTINEL, len);

	if (bad)
		return kc_fail(c, "%s: byte %zu was written (%#04x)", what,
			       (size_t)(bad - p), *bad);
	return 0;
}

static u64 kc_va(const void *p)
{
	return (u64)(uintptr_t)p;
}

static struct kdat_lmr_triplet kc_seg(struct kdat_lmr *lmr, const void *p,
				      u64 len)
{
	struct kdat_lmr_triplet seg = {
		.lmr_context = kdat_lmr_context(lmr),
		.virtual_address = kc_va(p),
		.segment_length = len,
	};

	return seg;
}

/* Events: the upcall side */

/*
 * In atomic context. A good receive counted while re-posting posts the
 * next one from here, outside the queue's lock: a post flushed at once
 * calls this upcall again inside it.
 */
static void kc_upcall(void *context, const struct kdat_event *ev)
{
	struct kc_evq *q = context;
	struct kdat_lmr_triplet iov;
	struct kdat_ep *ep = NULL;
	unsigned long flags;
	u64 cookie = 0;
	int ret;

	spin_lock_irqsave(&q->lock, flags);
	if (q->counting) {
		if (ev->event_number == KDAT_EVENT_DTO_COMPLETION &&
		    ev->status == KDAT_DTO_SUCCESS &&
		    ev->operation == q->want_op &&
		    (ev->operation != KDAT_DTO_RECEIVE ||
		     ev->transferred_length == q->want_len)) {
			q->ok++;
			if (q->repost_ep && q->repost_left &&
			    !q->repost_err) {
				ep = q->repost_ep;
				iov = q->repost_iov;
				q->repost_left--;
				cookie = q->reposted++;
				/* What the test proves: an atomic caller. */
				if (preemptible())
					q->repost_preemptible++;
			}
		} else if (!q->bad++) {
			q->first_bad = *ev;
		}
	} else if (q->len < KC_EVQ_LEN) {
		q->ev[(q->head + q->len++) % KC_EVQ_LEN] = *ev;
	} else {
		q->dropped++;
	}
	spin_unlock_irqrestore(&q->lock, flags);
	if (ep) {
		ret = kdat_ep_post_recv(ep, &iov, 1, cookie, 0);
		if (ret) {
			spin_lock_irqsave(&q->lock, flags);
			if (!q->repost_err)
				q->repost_err = ret;
			spin_unlock_irqrestore(&q->lock, flags);
		}
	}
	wake_up(q->wq);
}

static bool kc_evq_pop(struct kc_evq *q, struct kdat_event *ev)
{
	unsigned long flags;
	bool got;

	spin_lock_irqsave(&q->lock, flags);
	got = q->len;
	if (got) {
		*ev = q->ev[q->head];
		q->head = (q->head + 1) % KC_EVQ_LEN;
		q->len--;
	}
	spin_unlock_irqrestore(&q->lock, flags);
	return got;
}

static unsigned int kc_evq_drain(struct kc_evq *q)
{
	struct kdat_event ev;
	unsigned int n = 0;

	while (kc_evq_pop(q, &ev))
		n++;
	return n;
}

static void kc_evq_start_count(struct kc_evq *q, u32 op, u64 len)
{
	unsigned long flags;

	spin_lock_irqsave(&q->lock, flags);
	q->counting = true;
	q->want_op = op;
	q->want_len = len;
	q->ok = 0;
	q->bad = 0;
	spin_unlock_irqrestore(&q->lock, flags);
}

static void kc_evq_stop_count(struct kc_evq *q)
{
	unsigned long flags;

	spin_lock_irqsave(&q->lock, flags);
	q->counting = false;
	q->repost_ep = NULL;
	spin_unlock_irqrestore(&q->lock, flags);
}

/* While counting, each good receive re-posts @iov to @ep, @n times. */
static void kc_evq_repost(struct kc_evq *q, struct kdat_ep *ep,
			  const struct kdat_lmr_triplet *iov, u64 n)
{
	unsigned long flags;

	spin_lock_irqsave(&q->lock, flags);
	q->repost_ep = ep;
	q->repost_iov = *iov;
	q->repost_left = n;
	q->reposted = 0;
	q->repost_err = 0;
	q->repost_preemptible = 0;
	spin_unlock_irqrestore(&q->lock, flags);
}

/*
 * Receives the upcall re-posted so far; *@err its first failure, *@preempt
 * how many it made where it could have slept.
 */
static u64 kc_evq_reposted(struct kc_evq *q, int *err, u64 *preempt)
{
	unsigned long flags;
	u64 n;

	spin_lock_irqsave(&q->lock, flags);
	n = q->reposted;
	*err = q->repost_err;
	*preempt = q->repost_preemptible;
	spin_unlock_irqrestore(&q->lock, flags);
	return n;
}

/* Counted completions, good and bad; *@bad gets the bad ones. */
static u64 kc_evq_done(struct kc_evq *q, u64 *bad)
{
	unsigned long flags;
	u64 done;

	spin_lock_irqsave(&q->lock, flags);
	done = q->ok + q->bad;
	if (bad)
		*bad = q->bad;
	spin_unlock_irqrestore(&q->lock, flags);
	return done;
}

/* Events: the waiting side */

static const char *kc_op_name(u32 op)
{
	switch (op) {
	case KDAT_DTO_SEND:
		return "send";
	case KDAT_DTO_RDMA_WRITE:
		return "RDMA write";
	case KDAT_DTO_RDMA_READ:
		return "RDMA read";
	case KDAT_DTO_RECEIVE:
		return "receive";
	case KDAT_DTO_RDMA_WRITE_IMM:
		return "RDMA write with immediate data";
	case KDAT_DTO_RECV_RDMA_IMM:
		return "receive of an RDMA write with immediate data";
	case KDAT_DTO_FETCH_ADD:
		return "fetch-and-add";
	case KDAT_DTO_CMP_SWAP:
		return "compare-and-swap";
	}
	return "?";
}

/* The next event of @s's DTO EVD, waiting @ms for it. */
static int kc_wait_dto(struct kc_ctx *c, struct kc_side *s,
		       struct kdat_event *ev, unsigned int ms)
{
	if (wait_event_timeout(c->wq, kc_evq_pop(&s->q, ev),
			       msecs_to_jiffies(ms)))
		return 0;
	/* Something is still posted, or lost: no more DTOs. */
	c->state &= ~KC_S_DATA;
	return kc_fail(c, "%s: no event on the DTO EVD within %u ms (%u dropped)",
		       s->name, ms, READ_ONCE(s->q.dropped));
}

/* Is @ev the completion of @s's DTO @op @cookie, as expected? */
static int kc_check_dto(struct kc_ctx *c, struct kc_side *s,
			const struct kdat_event *ev, u32 op, u64 cookie,
			u32 status, u64 len)
{
	const char *what = kc_op_name(op);
	int ret = 0;

	/* A DTO that failed put the QP in error: no more DTOs. */
	if (ev->status != KDAT_DTO_SUCCESS)
		c->state &= ~KC_S_DATA;
	if (ev->event_number != KDAT_EVENT_DTO_COMPLETION)
		return kc_fail(c, "%s %s: event %#x, not a DTO completion",
			       s->name, what, ev->event_number);
	if (ev->handle != kdat_ep_handle(s->ep))
		ret = kc_fail(c, "%s %s: handle %u, not the EP's %u", s->name,
			      what, ev->handle, kdat_ep_handle(s->ep));
	if (ev->operation != op)
		ret = kc_fail(c, "%s %s: operation %u (%s)", s->name, what,
			      ev->operation, kc_op_name(ev->operation));
	if (ev->cookie != cookie)
		ret = kc_fail(c, "%s %s: cookie %#llx, expected %#llx", s->name,
			      what, ev->cookie, cookie);
	if (ev->status != status)
		ret = kc_fail(c, "%s %s: status %u, expected %u", s->name, what,
			      ev->status, status);
	if (len != KC_ANY_LEN && ev->transferred_length != len)
		ret = kc_fail(c, "%s %s: transferred_length %llu, expected %llu",
			      s->name, what, ev->transferred_length, len);
	return ret;
}

static int kc_expect_dto(struct kc_ctx *c, struct kc_side *s, u32 op,
			 u64 cookie, u32 status, u64 len)
{
	struct kdat_event ev;
	int ret;

	ret = kc_wait_dto(c, s, &ev, KC_TIMEOUT_MS);
	if (!ret)
		ret = kc_check_dto(c, s, &ev, op, cookie, status, len);
	return ret;
}

/* No event may have come to @s's DTO EVD. */
static void kc_expect_no_dto(struct kc_ctx *c, struct kc_side *s,
			     const char *after)
{
	struct kdat_event ev;

	if (kc_evq_pop(&s->q, &ev))
		kc_fail(c, "%s got event %#x (cookie %#llx, status %u) after %s",
			s->name, ev.event_number, ev.cookie, ev.status, after);
}

/* The next event of a connection or CR EVD (no upcall): kdat_evd_wait(). */
static int kc_wait_conn(struct kc_ctx *c, const char *what,
			struct kdat_evd *evd, u32 want, struct kdat_event *ev)
{
	u32 nmore = 0;
	int ret;

	ret = kdat_evd_wait(evd, KC_TIMEOUT_MS * USEC_PER_MSEC, 1, ev, &nmore);
	if (ret)
		return kc_fail(c, "%s: kdat_evd_wait: %d", what, ret);
	if (ev->event_number != want)
		return kc_fail(c, "%s: event %#x, expected %#x", what,
			       ev->event_number, want);
	return 0;
}

static void kc_expect_ep_state(struct kc_ctx *c, struct kc_side *s,
			       enum kdat_ep_state want)
{
	enum kdat_ep_state state = kdat_ep_get_state(s->ep);

	if (state != want)
		kc_fail(c, "%s: kdat_ep_get_state() %d, expected %d", s->name,
			state, want);
}

/* Case: setup */

static int kc_evd_create(struct kc_ctx *c, const char *what, u32 qlen,
			 u32 flags, const struct kdat_upcall *upcall,
			 struct kdat_evd **evdp)
{
	int ret = kdat_evd_create(c->ia, qlen, flags, upcall, evdp);

	if (ret) {
		*evdp = NULL;
		return kc_fail(c, "kdat_evd_create(%s): %d", what, ret);
	}
	return 0;
}

static int kc_lmr_create(struct kc_ctx *c, const char *what, void *p,
			 size_t len, struct kdat_lmr **lmrp)
{
	int ret;

	ret = kdat_lmr_create_virt(c->pz, p, len,
				   KDAT_MEM_PRIV_LOCAL_READ |
				   KDAT_MEM_PRIV_LOCAL_WRITE, lmrp);
	if (ret) {
		*lmrp = NULL;
		return kc_fail(c, "kdat_lmr_create_virt(%s, %zu bytes): %d",
			       what, len, ret);
	}
	if (!kdat_lmr_context(*lmrp))
		return kc_fail(c, "%s: lmr_context is 0", what);
	return 0;
}

static int kc_ep_create(struct kc_ctx *c, struct kc_side *s,
			const struct kdat_ep_attr *attr)
{
	int ret;

	ret = kdat_ep_create(c->pz, s->dto_evd, s->dto_evd, s->conn_evd, NULL,
			     attr, &s->ep);
	if (ret) {
		s->ep = NULL;
		return kc_fail(c, "kdat_ep_create(%s): %d", s->name, ret);
	}
	if (!kdat_ep_handle(s->ep))
		kc_fail(c, "%s: EP handle 0", s->name);
	kc_expect_ep_state(c, s, KDAT_EP_STATE_UNCONNECTED);
	return 0;
}

static int kc_setup_evds(struct kc_ctx *c, u32 dto_qlen)
{
	if (kc_evd_create(c, "CR", KC_CR_QLEN, KDAT_EVD_CR, NULL,
			  &c->cr_evd) ||
	    kc_evd_create(c, "A connection", KC_CONN_QLEN,
			  KDAT_EVD_CONNECTION, NULL, &c->a.conn_evd) ||
	    kc_evd_create(c, "B connection", KC_CONN_QLEN,
			  KDAT_EVD_CONNECTION, NULL, &c->b.conn_evd) ||
	    kc_evd_create(c, "A DTO", dto_qlen, KDAT_EVD_DTO, &c->a.upcall,
			  &c->a.dto_evd) ||
	    kc_evd_create(c, "B DTO", dto_qlen, KDAT_EVD_DTO, &c->b.upcall,
			  &c->b.dto_evd))
		return -EIO;
	return 0;
}

static int kc_setup_memory(struct kc_ctx *c)
{
	c->a.buf = kmalloc(c->buf_len, GFP_KERNEL);
	c->b.buf = kmalloc(c->buf_len, GFP_KERNEL);
	c->vbuf = vmalloc(KC_VBUF_PAGES * PAGE_SIZE);
	if (!c->a.buf || !c->b.buf || !c->vbuf)
		return kc_fail(c, "out of memory for the buffers");
	if (kc_lmr_create(c, "A", c->a.buf, c->buf_len, &c->a.lmr) ||
	    kc_lmr_create(c, "B", c->b.buf, c->buf_len, &c->b.lmr) ||
	    kc_lmr_create(c, "vmalloc", c->vbuf + KC_VBUF_OFF,
			  KC_VBUF_LMR_LEN, &c->vlmr))
		return -EIO;
	return 0;
}

/* IA, PZ, EVDs, LMRs, two EPs. */
static void kc_setup(struct kc_ctx *c)
{
	u32 dtos = c->bw ? kc_depth : KC_TEST_DTOS;
	/*
	 * A server cannot see its client's sends: twice the depth posted
	 * keeps them from waiting on RNR while it posts again.
	 */
	struct kdat_ep_attr attr = {
		.max_recv_dtos = c->role == KC_SERVER ? 2 * dtos : dtos,
		.max_request_dtos = dtos,
		.max_recv_iov = KC_TEST_IOV,
		.max_request_iov = KC_TEST_IOV,
		.max_rdma_read_in = KC_RDMA_READS,
		.max_rdma_read_out = KC_RDMA_READS,
	};
	int ret;

	ret = kdat_ia_open(kc_dev, kc_port, &c->ia);
	if (ret) {
		c->ia = NULL;
		kc_fail(c, "kdat_ia_open(%s, %u): %d", kc_dev, kc_port, ret);
		return;
	}
	ret = kdat_pz_create(c->ia, &c->pz);
	if (ret) {
		c->pz = NULL;
		kc_fail(c, "kdat_pz_create: %d", ret);
		return;
	}
	/* One DTO EVD per EP takes both its queues. */
	if (kc_setup_evds(c, 3 * dtos) || kc_setup_memory(c) ||
	    (c->role != KC_SERVER && kc_ep_create(c, &c->a, &attr)) ||
	    (c->role != KC_CLIENT && kc_ep_create(c, &c->b, &attr)))
		return;
	if (c->role == KC_BOTH &&
	    kdat_ep_handle(c->a.ep) == kdat_ep_handle(c->b.ep))
		kc_fail(c, "A and B have the same EP handle");
	if (!c->failed)
		c->state |= KC_S_SETUP;
}

/* Case: connect */

/* The request's event and what kdat_cr_query() says of it. */
static void kc_check_cr(struct kc_ctx *c, const struct kdat_event *ev,
			const void *pdata, u32 pdata_len)
{
	u8 buf[KDAT_PRIVATE_DATA_BUF];
	struct sockaddr_storage remote;
	const struct sockaddr_in *sin = (const void *)&remote;
	u32 len = sizeof(buf);
	u64 qual = 0;
	int ret;

	if (ev->handle != kdat_psp_handle(c->psp))
		kc_fail(c, "request: handle %u, not the PSP's %u", ev->handle,
			kdat_psp_handle(c->psp));
	if (ev->conn_qual != kc_conn_qual)
		kc_fail(c, "request: conn_qual %llu, expected %u",
			ev->conn_qual, kc_conn_qual);
	memset(&remote, 0, sizeof(remote));
	ret = kdat_cr_query(c->ia, ev->cr_handle, &remote, &qual, buf, &len);
	if (ret) {
		kc_fail(c, "kdat_cr_query: %d", ret);
		return;
	}
	if (qual != kc_conn_qual)
		kc_fail(c, "kdat_cr_query: conn_qual %llu, expected %u", qual,
			kc_conn_qual);
	/* Loopback: A is at our own address; a server's client is not. */
	if (remote.ss_family != AF_INET ||
	    (c->role == KC_BOTH && sin->sin_addr.s_addr != c->addr))
		kc_fail(c, "kdat_cr_query: remote is not %pI4 (family %u)",
			&c->addr, remote.ss_family);
	if (len < pdata_len || len > sizeof(buf) ||
	    memcmp(buf, pdata, pdata_len))
		kc_fail(c, "kdat_cr_query: private data (%u bytes) is not A's",
			len);
}

/* A connection event for @s, then no other on its EVD. */
static int kc_expect_conn(struct kc_ctx *c, struct kc_side *s, u32 want)
{
	struct kdat_event ev;
	char what[32];
	int ret;

	snprintf(what, sizeof(what), "%s's connection EVD", s->name);
	ret = kc_wait_conn(c, what, s->conn_evd, want, &ev);
	if (ret)
		return ret;
	if (ev.handle != kdat_ep_handle(s->ep))
		kc_fail(c, "%s: handle %u, not the EP's %u", what, ev.handle,
			kdat_ep_handle(s->ep));
	ret = kdat_evd_dequeue(s->conn_evd, &ev);
	if (ret != -EAGAIN)
		kc_fail(c, "%s: kdat_evd_dequeue: %d (event %#x), expected %d",
			what, ret, ret ? 0 : ev.event_number, -EAGAIN);
	return 0;
}

/* PSP; A connects to it; B accepts; both ESTABLISHED and CONNECTED. */
/* role=client: A connects to the server at @sin; B is on that host. */
static void kc_connect_client(struct kc_ctx *c, struct sockaddr_in *sin,
			      const void *pdata, u32 pdata_len)
{
	int ret;

	ret = kdat_ep_connect(c->a.ep, (struct sockaddr *)sin, kc_conn_qual,
			      KC_TIMEOUT_MS * USEC_PER_MSEC, pdata, pdata_len);
	if (ret) {
		kc_fail(c, "kdat_ep_connect(A, %pI4:%u): %d", &c->addr,
			kc_conn_qual, ret);
		return;
	}
	if (kc_expect_conn(c, &c->a, KDAT_EVENT_CONNECTION_ESTABLISHED))
		return;
	c->state |= KC_S_CONN;
	kc_expect_ep_state(c, &c->a, KDAT_EP_STATE_CONNECTED);
	if (!c->failed)
		c->state |= KC_S_DATA;
}

static void kc_connect(struct kc_ctx *c)
{
	static const char req_pdata[] = "kdat A";
	static const char rep_pdata[] = "kdat B";
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(kc_conn_qual),
		.sin_addr.s_addr = c->addr,
	};
	struct kdat_event ev = {};
	int ret;

	if (c->role != KC_CLIENT) {
		ret = kdat_psp_create(c->ia, kc_conn_qual, c->cr_evd, &c->psp);
		if (ret) {
			c->psp = NULL;
			kc_fail(c, "kdat_psp_create(%u): %d", kc_conn_qual,
				ret);
			return;
		}
	}
	if (c->role == KC_CLIENT) {
		kc_connect_client(c, &sin, req_pdata, sizeof(req_pdata));
		return;
	}
	if (c->role == KC_BOTH) {
		ret = kdat_ep_connect(c->a.ep, (struct sockaddr *)&sin,
				      kc_conn_qual,
				      KC_TIMEOUT_MS * USEC_PER_MSEC, req_pdata,
				      sizeof(req_pdata));
		if (ret) {
			kc_fail(c, "kdat_ep_connect(A, %pI4:%u): %d",
				&c->addr, kc_conn_qual, ret);
			return;
		}
		ret = kc_wait_conn(c, "CR EVD", c->cr_evd,
				   KDAT_EVENT_CONNECTION_REQUEST, &ev);
	} else {
		u32 nmore;

		/* The client is on another host, and may come later. */
		kc_note("server: listening on %u", kc_conn_qual);
		ret = kdat_evd_wait(c->cr_evd, KC_SERVE_MS * USEC_PER_MSEC, 1,
				    &ev, &nmore);
		if (ret || ev.event_number != KDAT_EVENT_CONNECTION_REQUEST) {
			kc_fail(c, "server: no connection request: %d", ret);
			return;
		}
	}
	if (ret && ev.event_number != KDAT_EVENT_CONNECTION_REQUEST) {
		/* Say what became of A's attempt. */
		if (!kdat_evd_dequeue(c->a.conn_evd, &ev))
			kc_fail(c, "A's connection EVD has event %#x",
				ev.event_number);
		return;
	}
	kc_check_cr(c, &ev, req_pdata, sizeof(req_pdata));
	ret = kdat_cr_accept(c->ia, ev.cr_handle, c->b.ep, rep_pdata,
			     sizeof(rep_pdata));
	if (ret) {
		kc_fail(c, "kdat_cr_accept(B): %d", ret);
		/* Refused before it touched the request: answer it. */
		if (ret != -ECONNABORTED)
			kdat_cr_reject(c->ia, ev.cr_handle, NULL, 0);
		return;
	}
	if (kdat_evd_dequeue(c->cr_evd, &ev) != -EAGAIN)
		kc_fail(c, "CR EVD: a second event (%#x)", ev.event_number);

	if ((c->role == KC_BOTH &&
	     kc_expect_conn(c, &c->a, KDAT_EVENT_CONNECTION_ESTABLISHED)) ||
	    kc_expect_conn(c, &c->b, KDAT_EVENT_CONNECTION_ESTABLISHED))
		return;
	c->state |= KC_S_CONN;
	if (c->role == KC_BOTH)
		kc_expect_ep_state(c, &c->a, KDAT_EP_STATE_CONNECTED);
	kc_expect_ep_state(c, &c->b, KDAT_EP_STATE_CONNECTED);
	if (!c->failed)
		c->state |= KC_S_DATA;
}

/* Case: send/recv with a two-segment receive IOV */

#define KC_IOV_MSG		3000
#define KC_IOV_SEG1		1000
#define KC_IOV_SEG2		3096
#define KC_IOV_SEG2_AT		2048	/* in B's buffer; a gap before it */

static void kc_send_recv(struct kc_ctx *c)
{
	u64 rcookie = KC_COOKIE(3, 1), scookie = KC_COOKIE(3, 2);
	const size_t in_seg2 = KC_IOV_MSG - KC_IOV_SEG1;
	struct kdat_lmr_triplet riov[2], siov;
	u8 *b = c->b.buf;
	int ret;

	memset(b, KC_SENTINEL, c->buf_len);
	kc_fill(c->a.buf, KC_IOV_MSG, 3, 0);

	riov[0] = kc_seg(c->b.lmr, b, KC_IOV_SEG1);
	riov[1] = kc_seg(c->b.lmr, b + KC_IOV_SEG2_AT, KC_IOV_SEG2);
	ret = kdat_ep_post_recv(c->b.ep, riov, 2, rcookie, 0);
	if (ret) {
		kc_fail(c, "B: kdat_ep_post_recv: %d", ret);
		return;
	}
	siov = kc_seg(c->a.lmr, c->a.buf, KC_IOV_MSG);
	ret = kdat_ep_post_send(c->a.ep, &siov, 1, scookie, 0);
	if (ret) {
		c->state &= ~KC_S_DATA;	/* B's receive stays posted */
		kc_fail(c, "A: kdat_ep_post_send: %d", ret);
		return;
	}

	/* DAT fills an IOV in order: segment 1 whole, then segment 2. */
	if (!kc_expect_dto(c, &c->b, KDAT_DTO_RECEIVE, rcookie,
			   KDAT_DTO_SUCCESS, KC_IOV_MSG)) {
		kc_expect_pattern(c, "B segment 1", b, KC_IOV_SEG1, 3, 0);
		kc_expect_untouched(c, "B between the segments",
				    b + KC_IOV_SEG1,
				    KC_IOV_SEG2_AT - KC_IOV_SEG1);
		kc_expect_pattern(c, "B segment 2", b + KC_IOV_SEG2_AT,
				  in_seg2, 3, KC_IOV_SEG1);
		kc_expect_untouched(c, "B segment 2 past the message",
				    b + KC_IOV_SEG2_AT + in_seg2,
				    KC_IOV_SEG2 - in_seg2);
	}
	kc_expect_dto(c, &c->a, KDAT_DTO_SEND, scookie, KDAT_DTO_SUCCESS,
		      KC_IOV_MSG);
}

/* Case: send/recv into the vmalloc'd buffer, across pages */

#define KC_V_MSG		6000
#define KC_V_RECV_AT		(PAGE_SIZE - 500)	/* in the vmalloc'd buffer */
#define KC_V_RECV_LEN		(KC_V_MSG + 500)

static void kc_send_recv_vmalloc(struct kc_ctx *c)
{
	u64 rcookie = KC_COOKIE(4, 1), scookie = KC_COOKIE(4, 2);
	const size_t vlen = KC_VBUF_PAGES * PAGE_SIZE;
	struct kdat_lmr_triplet riov, siov;
	u8 *v = c->vbuf;
	int ret;

	memset(v, KC_SENTINEL, vlen);
	kc_fill(c->a.buf, KC_V_MSG, 4, 0);

	riov = kc_seg(c->vlmr, v + KC_V_RECV_AT, KC_V_RECV_LEN);
	ret = kdat_ep_post_recv(c->b.ep, &riov, 1, rcookie, 0);
	if (ret) {
		kc_fail(c, "B: kdat_ep_post_recv (vmalloc): %d", ret);
		return;
	}
	siov = kc_seg(c->a.lmr, c->a.buf, KC_V_MSG);
	ret = kdat_ep_post_send(c->a.ep, &siov, 1, scookie, 0);
	if (ret) {
		c->state &= ~KC_S_DATA;
		kc_fail(c, "A: kdat_ep_post_send: %d", ret);
		return;
	}

	if (!kc_expect_dto(c, &c->b, KDAT_DTO_RECEIVE, rcookie,
			   KDAT_DTO_SUCCESS, KC_V_MSG)) {
		kc_expect_untouched(c, "vmalloc before the message", v,
				    KC_V_RECV_AT);
		kc_expect_pattern(c, "vmalloc message", v + KC_V_RECV_AT,
				  KC_V_MSG, 4, 0);
		kc_expect_untouched(c, "vmalloc after the message",
				    v + KC_V_RECV_AT + KC_V_MSG,
				    vlen - KC_V_RECV_AT - KC_V_MSG);
	}
	kc_expect_dto(c, &c->a, KDAT_DTO_SEND, scookie, KDAT_DTO_SUCCESS,
		      KC_V_MSG);
}

/* Case: bind the RMR to a range of B's buffer */

static void kc_rmr_bind(struct kc_ctx *c)
{
	u64 cookie = KC_COOKIE(5, 1);
	struct kdat_event ev;
	int ret;

	ret = kdat_rmr_create(c->pz, &c->rmr);
	if (ret) {
		c->rmr = NULL;
		kc_fail(c, "kdat_rmr_create: %d", ret);
		return;
	}
	ret = kdat_rmr_bind(c->rmr, c->b.lmr, kc_va(c->b.buf + KC_RMR_OFF),
			    KC_RMR_LEN,
			    KDAT_MEM_PRIV_REMOTE_READ |
			    KDAT_MEM_PRIV_REMOTE_WRITE |
			    KDAT_MEM_PRIV_REMOTE_ATOMIC,
			    c->b.ep, cookie, 0, &c->rmr_context);
	if (ret) {
		kc_fail(c, "kdat_rmr_bind: %d", ret);
		return;
	}
	/* The bind completes on the request EVD of the EP it names. */
	if (kc_wait_dto(c, &c->b, &ev, KC_TIMEOUT_MS))
		return;
	if (ev.event_number != KDAT_EVENT_RMR_BIND_COMPLETION)
		kc_fail(c, "B: event %#x, expected the RMR bind completion",
			ev.event_number);
	if (ev.status != KDAT_DTO_SUCCESS)
		kc_fail(c, "bind: status %u", ev.status);
	if (ev.handle != kdat_rmr_handle(c->rmr))
		kc_fail(c, "bind: handle %u, not the RMR's %u", ev.handle,
			kdat_rmr_handle(c->rmr));
	if (ev.cookie != cookie)
		kc_fail(c, "bind: cookie %#llx, expected %#llx", ev.cookie,
			cookie);
	kc_expect_no_dto(c, &c->a, "B's bind");
	/*
	 * B's LMR stays while the RMR is bound to it: its pages are mapped
	 * behind the rkey A holds.
	 */
	ret = kdat_lmr_free(c->b.lmr);
	if (ret != -EBUSY) {
		kc_fail(c, "kdat_lmr_free(B) under a bound RMR: %d, not -EBUSY",
			ret);
		if (!ret)
			c->b.lmr = NULL;
		return;
	}
	if (!c->failed)
		c->state |= KC_S_RMR;
}

/* Case: RDMA write A -> B through the RMR */

#define KC_WR_AT		64	/* in the RMR's range */
#define KC_WR_LEN		4000

static void kc_rdma_write(struct kc_ctx *c)
{
	struct kdat_rmr_triplet remote = {
		.rmr_context = c->rmr_context,
		.target_address = kc_va(c->b.buf + KC_RMR_OFF + KC_WR_AT),
		.segment_length = KC_WR_LEN,
	};
	const size_t at = KC_RMR_OFF + KC_WR_AT;
	u64 cookie = KC_COOKIE(6, 1);
	struct kdat_lmr_triplet local;
	u8 *b = c->b.buf;
	int ret;

	memset(b, KC_SENTINEL, c->buf_len);
	kc_fill(c->a.buf, KC_WR_LEN, 6, 0);

	local = kc_seg(c->a.lmr, c->a.buf, KC_WR_LEN);
	ret = kdat_ep_post_rdma_write(c->a.ep, &local, 1, cookie, &remote, 0);
	if (ret) {
		kc_fail(c, "A: kdat_ep_post_rdma_write: %d", ret);
		return;
	}
	if (kc_expect_dto(c, &c->a, KDAT_DTO_RDMA_WRITE, cookie,
			  KDAT_DTO_SUCCESS, KC_WR_LEN))
		return;
	kc_expect_untouched(c, "B before the target", b, at);
	kc_expect_pattern(c, "B target", b + at, KC_WR_LEN, 6, 0);
	kc_expect_untouched(c, "B after the target", b + at + KC_WR_LEN,
			    c->buf_len - at - KC_WR_LEN);
	/* The target of an RDMA write hears nothing of it. */
	kc_expect_no_dto(c, &c->b, "A's RDMA write");
}

/* Case: RDMA read A <- B through the RMR, into the vmalloc'd buffer */

#define KC_RD_FROM		500	/* in the RMR's range */
#define KC_RD_LEN		5000
#define KC_RD_AT		(PAGE_SIZE - 300)	/* in the vmalloc'd buffer */

static void kc_rdma_read(struct kc_ctx *c)
{
	struct kdat_rmr_triplet remote = {
		.rmr_context = c->rmr_context,
		.target_address = kc_va(c->b.buf + KC_RMR_OFF + KC_RD_FROM),
		.segment_length = KC_RD_LEN,
	};
	const size_t vlen = KC_VBUF_PAGES * PAGE_SIZE;
	u64 cookie = KC_COOKIE(7, 1);
	struct kdat_lmr_triplet local;
	u8 *v = c->vbuf;
	int ret;

	memset(v, KC_SENTINEL, vlen);
	kc_fill(c->b.buf + KC_RMR_OFF, KC_RMR_LEN, 7, 0);

	local = kc_seg(c->vlmr, v + KC_RD_AT, KC_RD_LEN);
	ret = kdat_ep_post_rdma_read(c->a.ep, &local, 1, cookie, &remote, 0);
	if (ret) {
		kc_fail(c, "A: kdat_ep_post_rdma_read: %d", ret);
		return;
	}
	if (kc_expect_dto(c, &c->a, KDAT_DTO_RDMA_READ, cookie,
			  KDAT_DTO_SUCCESS, KC_RD_LEN))
		return;
	kc_expect_untouched(c, "vmalloc before the data", v, KC_RD_AT);
	kc_expect_pattern(c, "vmalloc data", v + KC_RD_AT, KC_RD_LEN, 7,
			  KC_RD_FROM);
	kc_expect_untouched(c, "vmalloc after the data",
			    v + KC_RD_AT + KC_RD_LEN,
			    vlen - KC_RD_AT - KC_RD_LEN);
	kc_expect_no_dto(c, &c->b, "A's RDMA read");
}

/* Case: bad IOVs are refused and nothing is posted */

/* Case: receives from an SRQ */

#define KC_SRQ_BUFS		2
#define KC_SRQ_MSG		300
#define KC_SRQ_BUF_LEN		512

/*
 * A second connection on the same PSP: D connects, C accepts; C takes
 * its receives from an SRQ fed with kdat_srq_post_recv(). D's messages
 * land in the SRQ's buffers in the order they were posted, and their
 * completions come to C's receive EVD with the SRQ buffers' cookies.
 */
static void kc_srq_recv(struct kc_ctx *c)
{
	struct kdat_ep_attr attr = {
		.max_recv_dtos = KC_TEST_DTOS,
		.max_request_dtos = KC_TEST_DTOS,
		.max_recv_iov = 1,
		.max_request_iov = 1,
	};
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(kc_conn_qual),
		.sin_addr.s_addr = c->addr,
	};
	struct kdat_lmr_triplet iov;
	struct kdat_event ev = {};
	u8 *rb = c->b.buf, *sb = c->a.buf;
	int ret, i;

	ret = kdat_srq_create(c->pz, KC_TEST_DTOS, 1, &c->srq);
	if (ret) {
		c->srq = NULL;
		kc_fail(c, "kdat_srq_create: %d", ret);
		return;
	}
	if (kc_evd_create(c, "C DTO", 2 * KC_TEST_DTOS, KDAT_EVD_DTO,
			  &c->c.upcall, &c->c.dto_evd) ||
	    kc_evd_create(c, "D DTO", 2 * KC_TEST_DTOS, KDAT_EVD_DTO,
			  &c->d.upcall, &c->d.dto_evd) ||
	    kc_evd_create(c, "C connection", KC_CONN_QLEN,
			  KDAT_EVD_CONNECTION, NULL, &c->c.conn_evd) ||
	    kc_evd_create(c, "D connection", KC_CONN_QLEN,
			  KDAT_EVD_CONNECTION, NULL, &c->d.conn_evd))
		return;
	ret = kdat_ep_create(c->pz, c->c.dto_evd, c->c.dto_evd, c->c.conn_evd,
			     c->srq, &attr, &c->c.ep);
	if (ret) {
		c->c.ep = NULL;
		kc_fail(c, "kdat_ep_create(C, on the SRQ): %d", ret);
		return;
	}
	if (kc_ep_create(c, &c->d, &attr))
		return;
	/* A receive of an EP on an SRQ is refused: the SRQ feeds it. */
	iov = kc_seg(c->b.lmr, rb, KC_SRQ_BUF_LEN);
	ret = kdat_ep_post_recv(c->c.ep, &iov, 1, KC_COOKIE(9, 9), 0);
	if (ret != -EINVAL)
		kc_fail(c, "C: kdat_ep_post_recv on an SRQ's EP: %d, expected %d",
			ret, -EINVAL);

	memset(rb, KC_SENTINEL, KC_SRQ_BUFS * KC_SRQ_BUF_LEN);
	for (i = 0; i < KC_SRQ_BUFS; i++) {
		iov = kc_seg(c->b.lmr, rb + i * KC_SRQ_BUF_LEN, KC_SRQ_BUF_LEN);
		ret = kdat_srq_post_recv(c->srq, &iov, 1, KC_COOKIE(9, i));
		if (ret) {
			kc_fail(c, "kdat_srq_post_recv(%d): %d", i, ret);
			return;
		}
	}

	ret = kdat_ep_connect(c->d.ep, (struct sockaddr *)&sin, kc_conn_qual,
			      KC_TIMEOUT_MS * USEC_PER_MSEC, NULL, 0);
	if (ret) {
		kc_fail(c, "kdat_ep_connect(D): %d", ret);
		return;
	}
	if (kc_wait_conn(c, "CR EVD", c->cr_evd,
			 KDAT_EVENT_CONNECTION_REQUEST, &ev))
		return;
	ret = kdat_cr_accept(c->ia, ev.cr_handle, c->c.ep, NULL, 0);
	if (ret) {
		kc_fail(c, "kdat_cr_accept(C): %d", ret);
		if (ret != -ECONNABORTED)
			kdat_cr_reject(c->ia, ev.cr_handle, NULL, 0);
		return;
	}
	if (kc_expect_conn(c, &c->d, KDAT_EVENT_CONNECTION_ESTABLISHED) ||
	    kc_expect_conn(c, &c->c, KDAT_EVENT_CONNECTION_ESTABLISHED))
		return;

	for (i = 0; i < KC_SRQ_BUFS; i++) {
		kc_fill(sb + i * KC_SRQ_BUF_LEN, KC_SRQ_MSG, 20 + i, 0);
		iov = kc_seg(c->a.lmr, sb + i * KC_SRQ_BUF_LEN, KC_SRQ_MSG);
		ret = kdat_ep_post_send(c->d.ep, &iov, 1, KC_COOKIE(9, 10 + i),
					0);
		if (ret) {
			kc_fail(c, "D: kdat_ep_post_send(%d): %d", i, ret);
			return;
		}
	}
	for (i = 0; i < KC_SRQ_BUFS; i++) {
		if (kc_expect_dto(c, &c->c, KDAT_DTO_RECEIVE, KC_COOKIE(9, i),
				  KDAT_DTO_SUCCESS, KC_SRQ_MSG))
			continue;
		kc_expect_pattern(c, "SRQ buffer", rb + i * KC_SRQ_BUF_LEN,
				  KC_SRQ_MSG, 20 + i, 0);
		kc_expect_untouched(c, "SRQ buffer past the message",
				    rb + i * KC_SRQ_BUF_LEN + KC_SRQ_MSG,
				    KC_SRQ_BUF_LEN - KC_SRQ_MSG);
	}
	for (i = 0; i < KC_SRQ_BUFS; i++)
		kc_expect_dto(c, &c->d, KDAT_DTO_SEND, KC_COOKIE(9, 10 + i),
			      KDAT_DTO_SUCCESS, KC_SRQ_MSG);

	ret = kdat_ep_disconnect(c->d.ep, true);
	if (ret) {
		kc_fail(c, "kdat_ep_disconnect(D, graceful): %d", ret);
		return;
	}
	kc_expect_conn(c, &c->d, KDAT_EVENT_CONNECTION_DISCONNECTED);
	kc_expect_conn(c, &c->c, KDAT_EVENT_CONNECTION_DISCONNECTED);
}

static void kc_expect_refused(struct kc_ctx *c, const char *what, int ret,
			      int want)
{
	if (ret == want)
		return;
	kc_fail(c, "%s: %d, expected %d", what, ret, want);
	if (!ret)
		c->state &= ~KC_S_DATA;	/* it was posted after all */
}

/* Case: RDMA write with immediate data A -> B through the RMR */

#define KC_WI_AT		2048	/* in the RMR's range */
#define KC_WI_LEN		1500
#define KC_WI_IMM		0xfeedf00d

static void kc_rdma_write_imm(struct kc_ctx *c)
{
	struct kdat_rmr_triplet remote = {
		.rmr_context = c->rmr_context,
		.target_address = kc_va(c->b.buf + KC_RMR_OFF + KC_WI_AT),
		.segment_length = KC_WI_LEN,
	};
	const size_t at = KC_RMR_OFF + KC_WI_AT;
	u64 wcookie = KC_COOKIE(8, 1), rcookie = KC_COOKIE(8, 2);
	struct kdat_lmr_triplet local, rseg;
	struct kdat_event ev;
	u8 *b = c->b.buf;
	int ret;

	memset(b, KC_SENTINEL, c->buf_len);
	kc_fill(c->a.buf, KC_WI_LEN, 8, 0);
	/* The immediate data takes a receive; its buffer stays untouched. */
	rseg = kc_seg(c->b.lmr, b, 64);
	ret = kdat_ep_post_recv(c->b.ep, &rseg, 1, rcookie, 0);
	if (ret) {
		kc_fail(c, "B: kdat_ep_post_recv: %d", ret);
		return;
	}
	local = kc_seg(c->a.lmr, c->a.buf, KC_WI_LEN);
	ret = kdat_ep_post_rdma_write_imm(c->a.ep, &local, 1, wcookie,
					  &remote, KC_WI_IMM, 0);
	if (ret) {
		kc_fail(c, "A: kdat_ep_post_rdma_write_imm: %d", ret);
		return;
	}
	if (kc_expect_dto(c, &c->a, KDAT_DTO_RDMA_WRITE_IMM, wcookie,
			  KDAT_DTO_SUCCESS, KC_WI_LEN))
		return;
	if (kc_wait_dto(c, &c->b, &ev, KC_TIMEOUT_MS) ||
	    kc_check_dto(c, &c->b, &ev, KDAT_DTO_RECV_RDMA_IMM, rcookie,
			 KDAT_DTO_SUCCESS, KC_WI_LEN))
		return;
	if (ev.imm_data != KC_WI_IMM)
		kc_fail(c, "B: imm_data %#x, expected %#x", ev.imm_data,
			KC_WI_IMM);
	kc_expect_untouched(c, "B's receive buffer and before the target", b,
			    at);
	kc_expect_pattern(c, "B target", b + at, KC_WI_LEN, 8, 0);
	kc_expect_untouched(c, "B after the target", b + at + KC_WI_LEN,
			    c->buf_len - at - KC_WI_LEN);
}

/* Case: compare-and-swap and fetch-and-add A -> B through the RMR */

#define KC_AT_AT		512	/* in the RMR's range, 8-byte aligned */

/* One atomic of A on B's 8 bytes at @target; the value it found. */
static int kc_atomic(struct kc_ctx *c, u32 op, u64 *target, u64 before,
		     u64 arg1, u64 arg2, u64 want_after)
{
	struct kdat_rmr_triplet remote = {
		.rmr_context = c->rmr_context,
		.target_address = kc_va(target),
		.segment_length = 8,
	};
	u64 *result = (u64 *)(c->a.buf + 64);
	u64 cookie = KC_COOKIE(9, arg1);
	struct kdat_lmr_triplet local = kc_seg(c->a.lmr, result, 8);
	const char *what = kc_op_name(op);
	int ret;

	*target = before;
	*result = 0xa5a5a5a5a5a5a5a5ULL;
	if (op == KDAT_DTO_CMP_SWAP)
		ret = kdat_ep_post_cmp_swap(c->a.ep, &local, cookie, &remote,
					    arg1, arg2, 0);
	else
		ret = kdat_ep_post_fetch_add(c->a.ep, &local, cookie, &remote,
					     arg1, 0);
	if (ret == -EOPNOTSUPP) {
		kc_skip(c, "the device has no atomics");
		return ret;
	}
	if (ret)
		return kc_fail(c, "A: %s: %d", what, ret);
	ret = kc_expect_dto(c, &c->a, op, cookie, KDAT_DTO_SUCCESS, 8);
	if (ret)
		return ret;
	if (*result != before)
		ret = kc_fail(c, "%s: found %#llx, expected %#llx", what,
			      *result, before);
	if (*target != want_after)
		ret = kc_fail(c, "%s: left %#llx, expected %#llx", what,
			      *target, want_after);
	return ret;
}

static void kc_atomics(struct kc_ctx *c)
{
	u64 *target = (u64 *)(c->b.buf + KC_RMR_OFF + KC_AT_AT);
	struct kdat_rmr_triplet remote = {
		.rmr_context = c->rmr_context,
		.target_address = kc_va(target) + 4,	/* not aligned */
		.segment_length = 8,
	};
	struct kdat_lmr_triplet local = kc_seg(c->a.lmr, c->a.buf + 64, 8);
	int ret;

	/* Equal: swapped. Not equal: left. */
	if (kc_atomic(c, KDAT_DTO_CMP_SWAP, target, 0x1234, 0x1234, 0x5678,
		      0x5678) ||
	    kc_atomic(c, KDAT_DTO_CMP_SWAP, target, 0x5678, 0x1111, 0x2222,
		      0x5678) ||
	    kc_atomic(c, KDAT_DTO_FETCH_ADD, target, 0x5678, 0x10, 0,
		      0x5688) ||
	    /* Modulo 2^64. */
	    kc_atomic(c, KDAT_DTO_FETCH_ADD, target, U64_MAX, 2, 0, 1))
		return;
	/* Refused before the device: nothing is posted. */
	ret = kdat_ep_post_fetch_add(c->a.ep, &local, 1, &remote, 1, 0);
	kc_expect_refused(c, "misaligned remote address", ret, -EINVAL);
	remote.target_address = kc_va(target);
	local.segment_length = 4;
	ret = kdat_ep_post_cmp_swap(c->a.ep, &local, 2, &remote, 0, 1, 0);
	kc_expect_refused(c, "a 4-byte local segment", ret, -EINVAL);
	kc_expect_no_dto(c, &c->a, "the refused atomics");
	kc_expect_no_dto(c, &c->b, "A's atomics");
}

static void kc_bad_iov(struct kc_ctx *c)
{
	u64 rcookie = KC_COOKIE(8, 10), scookie = KC_COOKIE(8, 11);
	struct kdat_lmr_triplet iov[2];
	u8 *a = c->a.buf, *b = c->b.buf;

	/* A segment that runs past its LMR. */
	iov[0] = kc_seg(c->a.lmr, a + c->buf_len - 100, 200);
	kc_expect_refused(c, "send past the end of A's LMR",
			  kdat_ep_post_send(c->a.ep, iov, 1, KC_COOKIE(8, 1), 0),
			  -EINVAL);
	iov[0] = kc_seg(c->b.lmr, b + c->buf_len - 100, 200);
	kc_expect_refused(c, "receive past the end of B's LMR",
			  kdat_ep_post_recv(c->b.ep, iov, 1, KC_COOKIE(8, 2), 0),
			  -EINVAL);
	/* A good segment, then a bad one: nothing of it is posted. */
	iov[0] = kc_seg(c->b.lmr, b, 100);
	iov[1] = kc_seg(c->b.lmr, b, 200);
	iov[1].virtual_address -= 100;
	kc_expect_refused(c, "receive, second segment before B's LMR",
			  kdat_ep_post_recv(c->b.ep, iov, 2, KC_COOKIE(8, 3), 0),
			  -EINVAL);
	/* An lmr_context that names no LMR. */
	iov[0] = kc_seg(c->a.lmr, a, 100);
	iov[0].lmr_context = KC_BAD_CONTEXT;
	kc_expect_refused(c, "send with lmr_context 0xdeadbeef",
			  kdat_ep_post_send(c->a.ep, iov, 1, KC_COOKIE(8, 4), 0),
			  -EACCES);
	iov[0] = kc_seg(c->b.lmr, b, 100);
	iov[0].lmr_context = KC_BAD_CONTEXT;
	kc_expect_refused(c, "receive with lmr_context 0xdeadbeef",
			  kdat_ep_post_recv(c->b.ep, iov, 1, KC_COOKIE(8, 5), 0),
			  -EACCES);

	msleep(KC_QUIET_MS);
	kc_expect_no_dto(c, &c->a, "refused posts");
	kc_expect_no_dto(c, &c->b, "refused posts");
	if (!(c->state & KC_S_DATA))
		return;

	/* Still working, and no refused receive took the message. */
	iov[0] = kc_seg(c->b.lmr, b, 256);
	if (kdat_ep_post_recv(c->b.ep, iov, 1, rcookie, 0)) {
		kc_fail(c, "B: a good receive after the refused ones failed");
		return;
	}
	kc_fill(a, 64, 8, 0);
	iov[0] = kc_seg(c->a.lmr, a, 64);
	if (kdat_ep_post_send(c->a.ep, iov, 1, scookie, 0)) {
		c->state &= ~KC_S_DATA;
		kc_fail(c, "A: a good send after the refused ones failed");
		return;
	}
	if (!kc_expect_dto(c, &c->b, KDAT_DTO_RECEIVE, rcookie,
			   KDAT_DTO_SUCCESS, 64))
		kc_expect_pattern(c, "B after the refused posts", b, 64, 8, 0);
	kc_expect_dto(c, &c->a, KDAT_DTO_SEND, scookie, KDAT_DTO_SUCCESS, 64);
}

/* Case: a receive too small for the message (breaks the connection) */

#define KC_SMALL_RECV		100
#define KC_SMALL_SEND		200

static void kc_recv_too_small(struct kc_ctx *c)
{
	u64 rcookie = KC_COOKIE(9, 1), scookie = KC_COOKIE(9, 2);
	struct kdat_lmr_triplet iov;
	struct kdat_event ev;
	int ret;

	iov = kc_seg(c->b.lmr, c->b.buf, KC_SMALL_RECV);
	ret = kdat_ep_post_recv(c->b.ep, &iov, 1, rcookie, 0);
	if (ret) {
		kc_fail(c, "B: kdat_ep_post_recv: %d", ret);
		return;
	}
	kc_fill(c->a.buf, KC_SMALL_SEND, 9, 0);
	iov = kc_seg(c->a.lmr, c->a.buf, KC_SMALL_SEND);
	ret = kdat_ep_post_send(c->a.ep, &iov, 1, scookie, 0);
	/* From here on the QPs are in error. */
	c->state &= ~KC_S_DATA;
	if (ret) {
		kc_fail(c, "A: kdat_ep_post_send: %d", ret);
		return;
	}
	kc_expect_dto(c, &c->b, KDAT_DTO_RECEIVE, rcookie,
		      KDAT_DTO_ERR_LOCAL_LENGTH, KC_ANY_LEN);
	/* The send fails too, or is flushed: anything but success. */
	if (kc_wait_dto(c, &c->a, &ev, KC_ERR_TIMEOUT_MS))
		return;
	if (kc_check_dto(c, &c->a, &ev, KDAT_DTO_SEND, scookie, ev.status,
			 KC_ANY_LEN))
		return;
	if (ev.status == KDAT_DTO_SUCCESS)
		kc_fail(c, "A send: succeeded, though B's receive was too small");
	else
		kc_note("A's send completed with status %u", ev.status);
}

/* Case: disconnect */

/* A send on the disconnected A: accepted, flushed within the call. */
static void kc_flushed_post(struct kc_ctx *c)
{
	u64 cookie = KC_COOKIE(10, 1);
	struct kdat_lmr_triplet iov;
	struct kdat_event ev;
	unsigned int stale;
	bool got = false;
	int ret;

	/* Flushes of what was outstanding at the disconnect. */
	stale = kc_evq_drain(&c->a.q);
	iov = kc_seg(c->a.lmr, c->a.buf, 64);
	ret = kdat_ep_post_send(c->a.ep, &iov, 1, cookie, 0);
	if (ret) {
		kc_fail(c, "A: kdat_ep_post_send when disconnected: %d, expected 0",
			ret);
		return;
	}
	while (!got && kc_evq_pop(&c->a.q, &ev)) {
		got = ev.event_number == KDAT_EVENT_DTO_COMPLETION &&
		      ev.cookie == cookie;
		stale += !got;
	}
	if (stale)
		kc_note("%u earlier event(s) on A's DTO EVD ignored", stale);
	if (!got) {
		kc_fail(c, "A: no completion delivered in the post when disconnected");
		return;
	}
	kc_check_dto(c, &c->a, &ev, KDAT_DTO_SEND, cookie,
		     KDAT_DTO_ERR_FLUSHED, KC_ANY_LEN);
}

static void kc_disconnect(struct kc_ctx *c)
{
	int ret;

	if (c->role == KC_SERVER) {
		/* The client ends it, once its sends have completed. */
		c->state &= ~(KC_S_CONN | KC_S_DATA);
		kc_expect_conn(c, &c->b, KDAT_EVENT_CONNECTION_DISCONNECTED);
		kc_expect_ep_state(c, &c->b, KDAT_EP_STATE_DISCONNECTED);
		return;
	}
	ret = kdat_ep_disconnect(c->a.ep, false);
	c->state &= ~(KC_S_CONN | KC_S_DATA);
	if (ret) {
		kc_fail(c, "kdat_ep_disconnect(A, abrupt): %d", ret);
		return;
	}
	kc_expect_conn(c, &c->a, KDAT_EVENT_CONNECTION_DISCONNECTED);
	kc_expect_ep_state(c, &c->a, KDAT_EP_STATE_DISCONNECTED);
	if (c->role == KC_CLIENT)
		return;
	kc_expect_conn(c, &c->b, KDAT_EVENT_CONNECTION_DISCONNECTED);
	kc_expect_ep_state(c, &c->b, KDAT_EP_STATE_DISCONNECTED);
	kc_flushed_post(c);
}

/*
 * Case: the receive too small broke the connection: B, whose receive
 * failed, is DISCONNECTED with KDAT_EVENT_CONNECTION_BROKEN; A hears of it
 * (DISCONNECTED, or BROKEN when its send failed first) and is
 * DISCONNECTED too; a send on A is flushed at once.
 */
static void kc_broken(struct kc_ctx *c)
{
	struct kdat_event ev;
	u32 nmore;
	int ret;

	c->state &= ~(KC_S_CONN | KC_S_DATA);
	kc_expect_conn(c, &c->b, KDAT_EVENT_CONNECTION_BROKEN);
	ret = kdat_evd_wait(c->a.conn_evd, KC_TIMEOUT_MS * USEC_PER_MSEC, 1,
			    &ev, &nmore);
	if (ret) {
		kc_fail(c, "A's connection EVD: kdat_evd_wait: %d", ret);
		return;
	}
	if (ev.event_number != KDAT_EVENT_CONNECTION_DISCONNECTED &&
	    ev.event_number != KDAT_EVENT_CONNECTION_BROKEN)
		kc_fail(c, "A's connection EVD: event %#x, expected DISCONNECTED or BROKEN",
			ev.event_number);
	kc_expect_ep_state(c, &c->a, KDAT_EP_STATE_DISCONNECTED);
	kc_expect_ep_state(c, &c->b, KDAT_EP_STATE_DISCONNECTED);
	kc_flushed_post(c);
}

/* Case: bandwidth (mode=bw) */

static bool kc_bw_moved(struct kc_ctx *c, u64 sdone, u64 rdone)
{
	return kc_evq_done(&c->a.q, NULL) != sdone ||
	       kc_evq_done(&c->b.q, NULL) != rdone;
}

/*
 * Until a count moves, KC_TIMEOUT_MS at most: asleep until an upcall
 * wakes us, or (poll=1) polling, as a user-space DAT consumer spinning on
 * dat_evd_dequeue() does. Returns false on timeout.
 */
static bool kc_bw_wait(struct kc_ctx *c, u64 sdone, u64 rdone)
{
	unsigned long end = jiffies + msecs_to_jiffies(KC_TIMEOUT_MS);

	if (!kc_poll)
		return wait_event_timeout(c->wq, kc_bw_moved(c, sdone, rdone),
					  msecs_to_jiffies(KC_TIMEOUT_MS));
	while (!kc_bw_moved(c, sdone, rdone)) {
		if (time_after(jiffies, end))
			return false;
		cond_resched();
	}
	return true;
}

static void kc_bw_report_bad(struct kc_ctx *c, struct kc_side *s)
{
	const struct kdat_event *ev = &s->q.first_bad;

	kc_fail(c, "%s: %llu bad completion(s); first: event %#x op %u status %u length %llu",
		s->name, s->q.bad, ev->event_number, ev->operation,
		ev->status, ev->transferred_length);
}

/*
 * B keeps @depth receives posted, A keeps @depth sends outstanding, never
 * more than B has receives for, until @count messages of @size bytes
 * arrived. The upcalls count; this thread posts and sleeps until a count
 * moves; with @repost, B's upcall posts every receive after the first
 * window. Returns the microseconds it took, 0 when the case failed.
 */
static u64 kc_stream(struct kc_ctx *c, u32 count, u32 size, u32 depth,
		     bool repost)
{
	struct kdat_lmr_triplet riov = kc_seg(c->b.lmr, c->b.buf, size);
	struct kdat_lmr_triplet siov = kc_seg(c->a.lmr, c->a.buf, size);
	u64 sent = 0, recvs = 0, sdone = 0, rdone = 0, sbad = 0, rbad = 0;
	/* Across hosts A cannot know B's receives: B keeps more posted. */
	u64 window = (c->role == KC_SERVER ? 2 : 1) * depth;
	u64 elapsed = 0, reposted = 0, preempt = 0;
	int ret = 0, rerr = 0;
	ktime_t start;

	kc_fill(c->a.buf, size, 0xb, 0);
	kc_evq_start_count(&c->a.q, KDAT_DTO_SEND, size);
	kc_evq_start_count(&c->b.q, KDAT_DTO_RECEIVE, size);
	if (repost && c->role != KC_CLIENT)
		kc_evq_repost(&c->b.q, c->b.ep, &riov,
			      count - min_t(u64, count, window));
	start = ktime_get();
	for (;;) {
		sdone = kc_evq_done(&c->a.q, &sbad);
		rdone = kc_evq_done(&c->b.q, &rbad);
		if (repost)
			reposted = kc_evq_reposted(&c->b.q, &rerr, &preempt);
		if (sbad || rbad || rerr ||
		    ((c->role == KC_SERVER || sdone == count) &&
		     (c->role == KC_CLIENT || rdone == count)))
			break;
		/* A send that finds no receive waits (RNR) for one. */
		while (c->role != KC_CLIENT && recvs < count &&
		       recvs - (repost ? 0 : rdone) < window) {
			ret = kdat_ep_post_recv(c->b.ep, &riov, 1, recvs, 0);
			if (ret) {
				kc_fail(c, "B: kdat_ep_post_recv #%llu: %d",
					recvs, ret);
				goto out;
			}
			recvs++;
		}
		while (c->role != KC_SERVER &&
		       sent < (c->role == KC_BOTH ? recvs + reposted : count) &&
		       sent - sdone < depth) {
			ret = kdat_ep_post_send(c->a.ep, &siov, 1, sent, 0);
			if (ret) {
				kc_fail(c, "A: kdat_ep_post_send #%llu: %d",
					sent, ret);
				goto out;
			}
			sent++;
		}
		if (!kc_bw_wait(c, sdone, rdone)) {
			kc_fail(c, "no completion in %u ms: %llu/%u sends, %llu/%u receives, %llu re-posted",
				KC_TIMEOUT_MS, sdone, count, rdone, count,
				reposted);
			goto out;
		}
	}
	if (!sbad && !rbad && !rerr)
		elapsed = max_t(u64, ktime_us_delta(ktime_get(), start), 1);
out:
	kc_evq_stop_count(&c->a.q);
	kc_evq_stop_count(&c->b.q);
	if (sbad)
		kc_bw_report_bad(c, &c->a);
	if (rbad)
		kc_bw_report_bad(c, &c->b);
	if (rerr)
		kc_fail(c, "B's upcall: kdat_ep_post_recv #%llu: %d",
			reposted, rerr);
	if (preempt)
		kc_fail(c, "B's upcall re-posted %llu of %llu receives in a context that may sleep, not an atomic one",
			preempt, reposted);
	if (c->failed) {
		c->state &= ~KC_S_DATA;
		return 0;
	}
	return elapsed;
}

/* mode=bw: one stream of @count, and its rate. */
static void kc_bandwidth(struct kc_ctx *c)
{
	u64 elapsed = kc_stream(c, kc_count, kc_size, kc_depth, kc_repost);
	u64 bytes = (u64)kc_count * kc_size, mb_int;
	u32 frac;

	if (!elapsed)
		return;
	/* Bytes per microsecond are MB (10^6 bytes) per second. */
	mb_int = div_u64_rem(div64_u64(bytes * 100, elapsed), 100, &frac);
	pr_info("bw role=%s size=%u depth=%u count=%u poll=%d repost=%d msgs_per_sec=%llu MB_per_sec=%llu.%02u elapsed_us=%llu\n",
		kc_role, kc_size, kc_depth, kc_count, kc_poll, kc_repost,
		div64_u64((u64)kc_count * USEC_PER_SEC, elapsed), mb_int,
		frac, elapsed);
}

/*
 * Case: B's upcall re-posts each receive as it completes (atomic context:
 * the debug kernel's might_sleep() and lockdep watch), under a stream of
 * sends from A; every message arrives, each re-post succeeds.
 */
static void kc_upcall_repost(struct kc_ctx *c)
{
	struct kdat_lmr_triplet riov = kc_seg(c->b.lmr, c->b.buf, 64);
	struct kdat_lmr_triplet siov = kc_seg(c->a.lmr, c->a.buf, 64);
	u64 n = KC_REPOST_COUNT;
	unsigned long flags;
	int ret;

	if (!kc_stream(c, n, KC_REPOST_SIZE, KC_REPOST_DEPTH, true))
		return;
	/* And a send posted with interrupts off, as under an irq-safe lock. */
	ret = kdat_ep_post_recv(c->b.ep, &riov, 1, KC_COOKIE(c->n, 1), 0);
	if (ret) {
		kc_fail(c, "B: kdat_ep_post_recv: %d", ret);
		return;
	}
	local_irq_save(flags);
	ret = kdat_ep_post_send(c->a.ep, &siov, 1, KC_COOKIE(c->n, 2), 0);
	local_irq_restore(flags);
	if (ret) {
		kc_fail(c, "A: kdat_ep_post_send with interrupts off: %d", ret);
		return;
	}
	kc_expect_dto(c, &c->a, KDAT_DTO_SEND, KC_COOKIE(c->n, 2),
		      KDAT_DTO_SUCCESS, KC_ANY_LEN);
	kc_expect_dto(c, &c->b, KDAT_DTO_RECEIVE, KC_COOKIE(c->n, 1),
		      KDAT_DTO_SUCCESS, 64);
}

/* Case: teardown */

static void kc_freed(struct kc_ctx *c, const char *what, int ret)
{
	if (ret)
		kc_fail(c, "%s: %d", what, ret);
}

/* An IA with a PZ does not close gracefully; abruptly it does. */
static void kc_ia_close_busy(struct kc_ctx *c)
{
	struct kdat_ia *ia2;
	struct kdat_pz *pz2;
	int ret;

	ret = kdat_ia_open(kc_dev, kc_port, &ia2);
	if (ret) {
		kc_fail(c, "second IA: kdat_ia_open: %d", ret);
		return;
	}
	ret = kdat_pz_create(ia2, &pz2);
	if (ret) {
		kc_fail(c, "second IA: kdat_pz_create: %d", ret);
	} else {
		ret = kdat_ia_close(ia2, false);
		if (ret != -EBUSY)
			kc_fail(c, "kdat_ia_close(IA with a PZ, graceful): %d, expected %d",
				ret, -EBUSY);
		if (!ret)
			return;		/* it is gone */
	}
	kc_freed(c, "kdat_ia_close(second IA, abrupt)",
		 kdat_ia_close(ia2, true));
}

/* Free everything, newest first; then close the IA. */
static void kc_teardown(struct kc_ctx *c)
{
	struct kdat_event ev;
	int ret;

	if (!c->ia) {
		kc_skip(c, "no IA was opened");
		return;
	}
	/* A request left unanswered holds the PSP: reject it. */
	while (c->cr_evd && !kdat_evd_dequeue(c->cr_evd, &ev)) {
		if (ev.event_number != KDAT_EVENT_CONNECTION_REQUEST)
			continue;
		kc_note("rejecting a connection request left on the CR EVD");
		kdat_cr_reject(c->ia, ev.cr_handle, NULL, 0);
	}
	if (c->d.ep)
		kc_freed(c, "kdat_ep_free(D)", kdat_ep_free(c->d.ep));
	if (c->c.ep)
		kc_freed(c, "kdat_ep_free(C)", kdat_ep_free(c->c.ep));
	if (c->srq)
		kc_freed(c, "kdat_srq_free", kdat_srq_free(c->srq));
	if (c->d.conn_evd)
		kc_freed(c, "kdat_evd_free(D connection)",
			 kdat_evd_free(c->d.conn_evd));
	if (c->c.conn_evd)
		kc_freed(c, "kdat_evd_free(C connection)",
			 kdat_evd_free(c->c.conn_evd));
	if (c->d.dto_evd)
		kc_freed(c, "kdat_evd_free(D DTO)", kdat_evd_free(c->d.dto_evd));
	if (c->c.dto_evd)
		kc_freed(c, "kdat_evd_free(C DTO)", kdat_evd_free(c->c.dto_evd));
	if (c->rmr)
		kc_freed(c, "kdat_rmr_free", kdat_rmr_free(c->rmr));
	if (c->psp)
		kc_freed(c, "kdat_psp_free", kdat_psp_free(c->psp));
	if (c->b.ep)
		kc_freed(c, "kdat_ep_free(B)", kdat_ep_free(c->b.ep));
	if (c->a.ep)
		kc_freed(c, "kdat_ep_free(A)", kdat_ep_free(c->a.ep));
	if (c->vlmr)
		kc_freed(c, "kdat_lmr_free(vmalloc)", kdat_lmr_free(c->vlmr));
	if (c->b.lmr)
		kc_freed(c, "kdat_lmr_free(B)", kdat_lmr_free(c->b.lmr));
	if (c->a.lmr)
		kc_freed(c, "kdat_lmr_free(A)", kdat_lmr_free(c->a.lmr));
	if (c->b.dto_evd)
		kc_freed(c, "kdat_evd_free(B DTO)", kdat_evd_free(c->b.dto_evd));
	if (c->a.dto_evd)
		kc_freed(c, "kdat_evd_free(A DTO)", kdat_evd_free(c->a.dto_evd));
	if (c->b.conn_evd)
		kc_freed(c, "kdat_evd_free(B connection)",
			 kdat_evd_free(c->b.conn_evd));
	if (c->a.conn_evd)
		kc_freed(c, "kdat_evd_free(A connection)",
			 kdat_evd_free(c->a.conn_evd));
	if (c->cr_evd)
		kc_freed(c, "kdat_evd_free(CR)", kdat_evd_free(c->cr_evd));
	if (c->pz)
		kc_freed(c, "kdat_pz_free", kdat_pz_free(c->pz));

	ret = kdat_ia_close(c->ia, false);
	if (ret) {
		kc_fail(c, "kdat_ia_close(graceful): %d", ret);
		/* Whatever is left goes with an abrupt close. */
		ret = kdat_ia_close(c->ia, true);
		if (ret)
			kc_fail(c, "kdat_ia_close(abrupt): %d", ret);
	}
	if (!ret)
		c->ia = NULL;

	kc_ia_close_busy(c);
}

/* The cases */

static const struct kc_case kc_test_cases[] = {
	{ "setup", kc_setup, 0 },
	{ "connect", kc_connect, KC_S_SETUP },
	{ "send_recv_iov", kc_send_recv, KC_S_DATA },
	{ "send_recv_vmalloc", kc_send_recv_vmalloc, KC_S_DATA },
	{ "rmr_bind", kc_rmr_bind, KC_S_DATA },
	{ "rdma_write", kc_rdma_write, KC_S_DATA | KC_S_RMR },
	{ "rdma_read_vmalloc", kc_rdma_read, KC_S_DATA | KC_S_RMR },
	{ "rdma_write_imm", kc_rdma_write_imm, KC_S_DATA | KC_S_RMR },
	{ "atomics", kc_atomics, KC_S_DATA | KC_S_RMR },
	{ "srq_recv", kc_srq_recv, KC_S_CONN },
	{ "upcall_repost", kc_upcall_repost, KC_S_DATA },
	{ "bad_iov_refused", kc_bad_iov, KC_S_DATA },
	{ "recv_too_small", kc_recv_too_small, KC_S_DATA },
	{ "broken", kc_broken, KC_S_CONN },
	{ "teardown", kc_teardown, 0 },
};

static const struct kc_case kc_bw_cases[] = {
	{ "setup", kc_setup, 0 },
	{ "connect", kc_connect, KC_S_SETUP },
	{ "bandwidth", kc_bandwidth, KC_S_DATA },
	{ "disconnect", kc_disconnect, KC_S_CONN },
	{ "teardown", kc_teardown, 0 },
};

static int kc_check_params(__be32 *addr, bool *bw, enum kc_role *role)
{
	if (!kc_dev || !*kc_dev || !kc_port) {
		pr_err("dev= and port= must name a port\n");
		return -EINVAL;
	}
	if (!kc_addr || in4_pton(kc_addr, -1, (u8 *)addr, -1, NULL) != 1) {
		pr_err("addr=%s is not an IPv4 address\n", kc_addr);
		return -EINVAL;
	}
	if (kc_conn_qual > U16_MAX) {
		pr_err("conn_qual=%u is over %u\n", kc_conn_qual, U16_MAX);
		return -EINVAL;
	}
	if (kc_mode && !strcmp(kc_mode, "test")) {
		*bw = false;
	} else if (kc_mode && !strcmp(kc_mode, "bw")) {
		*bw = true;
	} else {
		pr_err("mode=%s: \"test\" or \"bw\"\n", kc_mode);
		return -EINVAL;
	}
	if (!kc_role || !strcmp(kc_role, "both")) {
		*role = KC_BOTH;
	} else if (!strcmp(kc_role, "server")) {
		*role = KC_SERVER;
	} else if (!strcmp(kc_role, "client")) {
		*role = KC_CLIENT;
	} else {
		pr_err("role=%s: \"both\", \"server\" or \"client\"\n",
		       kc_role);
		return -EINVAL;
	}
	if (*role != KC_BOTH && !*bw) {
		pr_err("role=%s: with mode=bw only\n", kc_role);
		return -EINVAL;
	}
	if (*bw && (!kc_size || kc_size > KC_BW_MAX_SIZE || !kc_count ||
		    !kc_depth || kc_depth > KC_BW_MAX_DEPTH)) {
		pr_err("bw: size 1..%u, count >= 1, depth 1..%u\n",
		       KC_BW_MAX_SIZE, KC_BW_MAX_DEPTH);
		return -EINVAL;
	}
	return 0;
}

static void kc_side_init(struct kc_ctx *c, struct kc_side *s,
			 const char *name)
{
	s->name = name;
	spin_lock_init(&s->q.lock);
	s->q.wq = &c->wq;
	s->upcall.func = kc_upcall;
	s->upcall.context = &s->q;
}

static int __init kc_init(void)
{
	const struct kc_case *table;
	struct kc_ctx *c;
	size_t i, n;
	enum kc_role role;
	__be32 addr;
	bool bw;
	int ret;

	ret = kc_check_params(&addr, &bw, &role);
	if (ret)
		return ret;
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	c->bw = bw;
	c->role = role;
	c->addr = addr;
	c->buf_len = bw ? max_t(size_t, KC_BUF_LEN, kc_size) : KC_BUF_LEN;
	init_waitqueue_head(&c->wq);
	kc_side_init(c, &c->a, "A");
	kc_side_init(c, &c->b, "B");
	kc_side_init(c, &c->c, "C");
	kc_side_init(c, &c->d, "D");
	if (bw) {
		table = kc_bw_cases;
		n = ARRAY_SIZE(kc_bw_cases);
	} else {
		table = kc_test_cases;
		n = ARRAY_SIZE(kc_test_cases);
	}

	pr_info("KTAP version 1\n");
	pr_info("1..%zu\n", n);
	kc_note("dev=%s port=%u addr=%pI4 conn_qual=%u mode=%s role=%s",
		kc_dev, kc_port, &c->addr, kc_conn_qual, kc_mode, kc_role);
	for (i = 0; i < n; i++)
		kc_run(c, &table[i]);
	pr_info("done pass=%u fail=%u skip=%u\n", c->pass, c->fail,
		c->skipped);

	if (c->ia) {
		/* Still registered with the device: do not free them. */
		pr_err("the IA could not be closed: leaking the buffers\n");
	} else {
		kfree(c->a.buf);
		kfree(c->b.buf);
		vfree(c->vbuf);
	}
	kfree(c);
	return 0;
}

/* Everything was freed in kc_init(). */
static void __exit kc_exit(void)
{
}

module_init(kc_init);
module_exit(kc_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Sample in-kernel consumer and test of kdat's kernel API");
