/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * libdat's ring fast path: a few static inlines on the rings a queue
 * shares with the kernel, as liburing.h's on io_uring's. The protocol,
 * and who writes which index, is in include/uapi/linux/kdat.h; mapping a
 * ring is dat_ring.c's.
 *
 *                   head                 tail
 *   submission      kernel's: acquire    ours: plain read, release store
 *   completion      ours: plain read,    kernel's: acquire
 *                   release store
 *
 * flags, completed and ep_state are the kernel's too: completed is read
 * with acquire (the kernel is done with the entries below it), flags and
 * ep_state relaxed (hints, rechecked by the kernel).
 */
#ifndef DAT_RING_H
#define DAT_RING_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>

#include <linux/kdat.h>
#include <dat2/udat.h>

/*
 * A ring shared with the kernel (see the uapi header for the protocol).
 * Submission rings: we produce at tail, under @lock (DAT lets threads post
 * to one EP). Completion rings: we consume at head, under @lock. A send
 * ring's entries are struct kdat_sqe_ext (@ext: the IB extensions' DTOs
 * fit) unless the kernel predates them, else struct kdat_sqe; @max_iov:
 * the segments a post may have, what the queue takes (kd_ring_limit_iov),
 * which may be fewer than the entry holds (its size is a cache-line
 * multiple).
 */
struct kd_ring {
	void *map;
	size_t map_size;
	uint32_t *head, *tail, *flags, *completed, *ep_state;
	uint8_t *entries;
	uint32_t mask, entry_size, max_iov;
	uint32_t id;			/* the kernel's, for the doorbell */
	bool ext;
	pthread_mutex_t lock;
};

/* A post of more than @n segments is refused (as the ioctl would). */
static inline void kd_ring_limit_iov(struct kd_ring *r, uint32_t n)
{
	if (r->max_iov > n)
		r->max_iov = n;
}

/* The kernel's flags, KDAT_RING_F_*: relaxed, a hint. */
static inline uint32_t kd_ring_flags(const struct kd_ring *r)
{
	return __atomic_load_n(r->flags, __ATOMIC_RELAXED);
}

/*
 * The doorbell: wake the file's poller, or (KDAT_RING_WAKE_SUBMIT) have
 * @r's published entries taken now, in our context, @r's alone (@r NULL:
 * every ring's, receives first): another thread's doorbell for its own
 * ring does not wait for ours. A kernel that predates the ring's id in
 * the doorbell (E2BIG) takes every ring's.
 */
static inline void kd_ring_wake(int fd, const struct kd_ring *r,
				uint32_t flags)
{
	static int whole_file;
	struct kdat_ring_wake w = { .size = sizeof(w), .flags = flags };

	if (r && !__atomic_load_n(&whole_file, __ATOMIC_RELAXED))
		w.ring = r->id;
	if (!ioctl(fd, KDAT_IOCTL_RING_WAKE, &w) || errno != E2BIG || !w.ring)
		return;
	__atomic_store_n(&whole_file, 1, __ATOMIC_RELAXED);
	w.ring = 0;
	w.size = offsetof(struct kdat_ring_wake, ring);
	ioctl(fd, KDAT_IOCTL_RING_WAKE, &w);
}

/* ---- submission rings: we produce at tail, under r->lock ------------ */

/* Our tail: only we write it, under r->lock. */
static inline uint32_t kd_sq_tail(const struct kd_ring *r)
{
	return *r->tail;
}

/*
 * Room at @tail for one more entry in a queue of @depth? The entries from
 * completed to tail hold a place in the queue; acquire: the kernel is
 * done with those below completed.
 */
static inline bool kd_sq_room(const struct kd_ring *r, uint32_t tail,
			      uint32_t depth)
{
	return tail - __atomic_load_n(r->completed, __ATOMIC_ACQUIRE) < depth;
}

/* Has the kernel taken every entry up to @tail? */
static inline bool kd_sq_all_taken(const struct kd_ring *r, uint32_t tail)
{
	return __atomic_load_n(r->head, __ATOMIC_ACQUIRE) == tail;
}

/*
 * Entries published and not yet taken by the kernel (a snapshot, for the
 * queries: another thread may be posting).
 */
static inline uint32_t kd_sq_untaken(const struct kd_ring *r)
{
	uint32_t n = __atomic_load_n(r->tail, __ATOMIC_RELAXED) -
		     __atomic_load_n(r->head, __ATOMIC_ACQUIRE);

	return n > r->mask + 1 ? 0 : n;
}

/* The EP's state as the kernel last wrote it: relaxed, a hint. */
static inline uint32_t kd_sq_ep_state(const struct kd_ring *r)
{
	return __atomic_load_n(r->ep_state, __ATOMIC_RELAXED);
}

/* The entry at @tail (reserved: kd_sq_room() said there is room). */
static inline struct kdat_sqe *kd_sq_entry(struct kd_ring *r, uint32_t tail)
{
	return (struct kdat_sqe *)(r->entries + (size_t)(tail & r->mask) *
				   r->entry_size);
}

/*
 * Fill an entry with a post's arguments (its pads zeroed), and in a ring
 * of extended entries the IB extensions' arguments (@ext, or none).
 */
static inline void kd_sq_prep(const struct kd_ring *r, struct kdat_sqe *e,
			      uint32_t op, DAT_COUNT num,
			      const DAT_LMR_TRIPLET *iov,
			      DAT_DTO_COOKIE cookie,
			      const DAT_RMR_TRIPLET *remote,
			      DAT_COMPLETION_FLAGS flags,
			      const struct kdat_dto_ext *ext)
{
	struct kdat_lmr_triplet *seg = e->iov;
	DAT_COUNT i;

	if (r->ext) {
		struct kdat_sqe_ext *x = (struct kdat_sqe_ext *)e;

		if (ext)
			x->ext = *ext;
		else
			memset(&x->ext, 0, sizeof(x->ext));
		seg = x->iov;
	}
	e->op = op;
	e->num_segments = num;
	e->__pad = 0;
	e->completion_flags = flags;
	e->cookie = cookie.as_64;
	memset(&e->remote, 0, sizeof(e->remote));
	if (remote) {
		e->remote.rmr_context = remote->rmr_context;
		e->remote.target_address = remote->virtual_address;
		e->remote.segment_length = remote->segment_length;
	}
	for (i = 0; i < num; i++) {
		seg[i].lmr_context = iov[i].lmr_context;
		seg[i].__pad = 0;
		seg[i].virtual_address = iov[i].virtual_address;
		seg[i].segment_length = iov[i].segment_length;
	}
}

/*
 * Publish the entry at @tail: a release store of tail (the entry is
 * written before the kernel can see it), then a full barrier, so that the
 * flags read after this (kd_sq_need_wakeup()) cannot pass the store. With
 * the poller's store of flags, barrier, load of tail, no wake-up is lost
 * (see the uapi header).
 */
static inline void kd_sq_publish(struct kd_ring *r, uint32_t tail)
{
	__atomic_store_n(r->tail, tail + 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Does the poller sleep (then ring the doorbell)? After kd_sq_publish(). */
static inline bool kd_sq_need_wakeup(const struct kd_ring *r)
{
	return kd_ring_flags(r) & KDAT_RING_F_NEED_WAKEUP;
}

/* ---- completion rings: we consume at head, under r->lock ------------ */

/*
 * The events ready to read, from *@head on (our head, read plain). The
 * acquire load of the kernel's tail makes the entries below it visible.
 */
static inline uint32_t kd_cq_ready(const struct kd_ring *r, uint32_t *head)
{
	*head = *r->head;
	return __atomic_load_n(r->tail, __ATOMIC_ACQUIRE) - *head;
}

/*
 * Copy out the event at @head, then give its slot back: the release store
 * of head keeps the copy before the kernel can reuse the slot.
 */
static inline void kd_cq_reap(struct kd_ring *r, uint32_t head,
			      struct kdat_event *k)
{
	memcpy(k, r->entries + (size_t)(head & r->mask) * sizeof(*k),
	       sizeof(*k));
	__atomic_store_n(r->head, head + 1, __ATOMIC_RELEASE);
}

#endif
