/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kdat ring memory: the layout of a ring shared with a process and the
 * accessors of its indices. The bottom of the data path; it calls nothing
 * above it. Three layers use it, each calling only downward:
 *
 *   kdat_poll.c   submission rings: take entries, hand them to the DTO
 *                 layer in batches, publish the head (the poller)
 *   kdat_dto.c    check, post and complete DTOs; count a queue's
 *                 completed entries in its submission ring
 *   kdat_evd.c    deliver events, into an EVD's completion ring
 *
 * Who writes what (the protocol is in include/uapi/linux/kdat.h):
 *
 *   submission  tail: the process (read here with acquire, once per pass)
 *               head, completed, flags, ep_state: the kernel
 *   completion  head: the process (read with READ_ONCE, clamped)
 *               tail, flags: the kernel
 *
 * The kernel keeps private copies of the indices it owns (khead, ktail,
 * kcompleted) and never reads back what it published.
 */
#ifndef KDAT_RING_H
#define KDAT_RING_H

#include <linux/kref.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <rdma/ib_verbs.h>

/* Where the parts are: each index on its own cache line. */
#define KDAT_RING_OFF_HEAD	0
#define KDAT_RING_OFF_TAIL	64
#define KDAT_RING_OFF_FLAGS	128
#define KDAT_RING_OFF_MASK	192
#define KDAT_RING_OFF_ENTRIES	196
#define KDAT_RING_OFF_COMPLETED	256
#define KDAT_RING_OFF_EP_STATE	320
#define KDAT_RING_OFF_ARRAY	384

/*
 * The most entries a ring is asked for: an EVD of the largest qlen
 * (65536) holds qlen + 1 (a power of two above: 131072 events).
 */
#define KDAT_RING_MAX_WANT	(65536 + 1)

/* What doorbells ask of the next pass (kdat_file.unpark_asked). */
#define KDAT_UNPARK_NAMED_BIT	0	/* the rings that say want_unpark */
#define KDAT_UNPARK_BUSY_BIT	1	/* the parked rings with entries */
#define KDAT_UNPARK_BUSY	BIT(KDAT_UNPARK_BUSY_BIT)

/* Entries taken from a submission ring per ib_post_* call. */
#define KDAT_RING_BATCH		16

/* A send work request of any kind kdat posts. */
union kdat_send_wr {
	struct ib_send_wr wr;
	struct ib_rdma_wr rdma;
	struct ib_atomic_wr atomic;
	struct ib_ud_wr ud;
};

/*
 * A batch of checked DTOs for one queue, posted as one chain (kdat_dto.c
 * fills and posts it; a submission ring owns one as its scratch).
 */
struct kdat_batch {
	struct kdat_file *kfile;
	struct kdat_ep *ep;		/* an EP's queue, or */
	struct kdat_srq *srq;		/* an SRQ's */
	bool send;			/* the EP's send queue */
	bool one;			/* the ioctl's or the kernel API's */
	int srcu;			/* kdat_post_srcu, held while filling */
	bool off;			/* its device refuses posts */
	u32 n;
	/*
	 * The LMR the last lookup of its segments found, with a reference
	 * (kdat_batch_finish() drops it): the segments after it that name
	 * it again take none (kdat_dto.c).
	 */
	struct kdat_lmr *lmr;
	struct kdat_dto *dto;		/* KDAT_RING_BATCH of each */
	struct kdat_dto_ctx **ctx;
	union {
		union kdat_send_wr *swr;
		struct ib_recv_wr *rwr;
	};
};

struct kdat_ring {
	struct kref ref;
	struct kdat_file *kfile;
	enum kdat_ring_kind kind;
	u32 id;				/* mmap cookie >> PAGE_SHIFT */
	void *mem;
	struct page **pages;		/* of @mem, vmap()ed */
	size_t map_size;
	/*
	 * The pages of @mem stay in memory like pinned pages and are charged
	 * like them: @acct_pages to @user's locked_vm, within its
	 * RLIMIT_MEMLOCK unless it has CAP_IPC_LOCK (as io_uring's rings).
	 */
	struct user_struct *user;
	unsigned long acct_pages;
	u32 entries;			/* a power of two */
	u32 entry_size;
	/*
	 * Submission rings: the entry's header, struct kdat_sqe or (a send
	 * ring with KDAT_RING_CREATE_SQE_EXT) struct kdat_sqe_ext.
	 */
	u32 sqe_hdr;

	/* Kernel-private copies of the indices it owns. */
	u32 khead;			/* submission: next entry to take */
					/* (drain_lock; read locklessly by */
					/* the poller) */
	u32 ktail;			/* completion: next slot to fill */
	u32 snap;			/* submission: the tail this pass takes */
	u32 kcompleted;			/* submission: under the queue lock */
					/* (read locklessly by the poller) */
	/*
	 * KDAT_RING_F_*: the kernel's copy, the one it reads; written under
	 * @flags_lock together with the ring's flags word, which the process
	 * may scribble on: the poller's NEED_WAKEUP (ring_lock) and a
	 * drain's BAD_TAIL (drain_lock) never undo each other.
	 */
	spinlock_t flags_lock;
	u32 kflags;
	/*
	 * Flags that stay set: NEED_WAKEUP in a receive ring whose port ends
	 * a connection on a message that finds no receive (kdat_dev_no_rnr()):
	 * each receive is taken by its doorbell, before its post returns.
	 */
	u32 kpinned;

	/*
	 * Submission rings (kdat_poll.c): on kfile->sq_rings, under the
	 * file's ring_lock and @drain_lock both; the queue. One drain at a
	 * time (@drain_lock): the poller's pass or a doorbell for the ring
	 * alone; it owns @khead, @sqe and @batch, and finds the queue alive
	 * while the ring is on the list.
	 */
	struct list_head node;
	/*
	 * On kfile->sq_active, the rings a pass visits, or, @parked, on
	 * kfile->sq_parked: idle for poll_idle_us, it was moved there with
	 * NEED_WAKEUP set in its own flags, and a doorbell naming it puts it
	 * back (@want_unpark: one that could not take ring_lock asked the
	 * next pass to); or, @kpinned, on kfile->sq_pinned for good. Under
	 * the file's ring_lock; the doorbell reads @parked locklessly first,
	 * and a drain sets @worked.
	 */
	struct list_head active;
	bool parked;
	bool want_unpark;
	bool worked;			/* entries taken since the last look */
	ktime_t idle_since;
	u32 park_completed;		/* @kcompleted when it was parked */
	struct mutex drain_lock;
	struct kdat_ep *ep;
	struct kdat_srq *srq;
	void *sqe;			/* one entry's copy */
	struct kdat_batch batch;
};

static inline u32 *kdat_ring_u32(struct kdat_ring *r, unsigned int off)
{
	return r->mem + off;
}

static inline void *kdat_ring_entry(struct kdat_ring *r, u32 index)
{
	return r->mem + KDAT_RING_OFF_ARRAY +
	       (size_t)(index & (r->entries - 1)) * r->entry_size;
}

/* A submission ring's published tail, read once. */
static inline u32 kdat_ring_tail(struct kdat_ring *r)
{
	/* Pairs with libdat's release of tail: entries before it are there. */
	return smp_load_acquire(kdat_ring_u32(r, KDAT_RING_OFF_TAIL));
}

/* A completion ring's head, as the process wrote it (not trusted). */
static inline u32 kdat_ring_head(struct kdat_ring *r)
{
	return READ_ONCE(*kdat_ring_u32(r, KDAT_RING_OFF_HEAD));
}

static inline bool kdat_ring_flag(struct kdat_ring *r, u32 flag)
{
	return READ_ONCE(r->kflags) & flag;
}

/* Any context. Never reads back the flags word the process can write. */
static inline void kdat_ring_set_flag(struct kdat_ring *r, u32 flag, bool on)
{
	unsigned long irqf;
	u32 f;

	spin_lock_irqsave(&r->flags_lock, irqf);
	f = on ? r->kflags | flag : r->kflags & ~(flag & ~r->kpinned);
	WRITE_ONCE(r->kflags, f);
	WRITE_ONCE(*kdat_ring_u32(r, KDAT_RING_OFF_FLAGS), f);
	spin_unlock_irqrestore(&r->flags_lock, irqf);
}

struct kdat_ring *kdat_ring_alloc(struct kdat_file *kfile,
				  enum kdat_ring_kind kind, u32 want,
				  u32 entry_size);
void kdat_ring_put(struct kdat_ring *r);
void kdat_ring_release(struct kdat_ring *r);
void kdat_ring_describe(struct kdat_ring *r, struct kdat_ring_create *c);

#endif /* KDAT_RING_H */
