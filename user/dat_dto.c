// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libdat DTOs: dat_ep_post_* and dat_srq_post_recv. A queue with a
 * submission ring posts there, on the inlines of dat_ring.h (a system call
 * only when the poller sleeps); one without posts by ioctl.
 */
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>

#include "dat_internal.h"
#include "dat_ring.h"
#include "../kernel/kdat_rules.h"

/* DAT's flags are the kernel's, bit for bit: the rules read them as such. */
_Static_assert(DAT_MEM_PRIV_LOCAL_READ_FLAG == KDAT_MEM_PRIV_LOCAL_READ &&
	       DAT_MEM_PRIV_REMOTE_READ_FLAG == KDAT_MEM_PRIV_REMOTE_READ &&
	       DAT_MEM_PRIV_LOCAL_WRITE_FLAG == KDAT_MEM_PRIV_LOCAL_WRITE &&
	       DAT_MEM_PRIV_REMOTE_WRITE_FLAG == KDAT_MEM_PRIV_REMOTE_WRITE,
	       "DAT_MEM_PRIV_* as KDAT_MEM_PRIV_*");
_Static_assert(DAT_COMPLETION_SUPPRESS_FLAG == KDAT_COMPLETION_SUPPRESS &&
	       DAT_COMPLETION_SOLICITED_WAIT_FLAG ==
	       KDAT_COMPLETION_SOLICITED_WAIT &&
	       DAT_COMPLETION_UNSIGNALLED_FLAG == KDAT_COMPLETION_UNSIGNALLED &&
	       DAT_COMPLETION_BARRIER_FENCE_FLAG ==
	       KDAT_COMPLETION_BARRIER_FENCE,
	       "DAT_COMPLETION_* as KDAT_COMPLETION_*");

struct kd_ring_segs {
	const struct kd_pz *pz;
	const DAT_LMR_TRIPLET *iov;
};

/* Segment @i of a ring post, by its LMR as libdat holds it. */
static int kd_ring_segment(void *arg, __u32 i, __u32 need, __u64 *len)
{
	const struct kd_ring_segs *w = arg;
	const DAT_LMR_TRIPLET *seg = &w->iov[i];
	const struct kd_lmr *lmr = (const struct kd_lmr *)
		kd_table_find_type(seg->lmr_context, DAT_HANDLE_TYPE_LMR);

	*len = seg->segment_length;
	if (!lmr)
		return -EACCES;		/* an invalid LMR */
	return kdat_rule_dto_segment(lmr->priv, lmr->pz == w->pz, lmr->addr,
				     lmr->length, need, seg->virtual_address,
				     seg->segment_length);
}

/*
 * The file (IA) on which this thread published a receive that no doorbell
 * has taken, or -1: the poller was running then, but may have gone to
 * sleep before taking it. Its next send's doorbell on that file takes
 * every ring of the file,
 * receives first (as a poller's pass does), not the send's ring alone:
 * a receive published before a send reaches the device before it, so the
 * send's peer does not find the receive its reply needs missing.
 */
static __thread int kd_recv_unrung = -1;

/*
 * Where a post waits for room: the queue looks full, but the kernel may
 * not have taken every entry yet (entries flushed at once on a
 * DISCONNECTED EP, or refused, leave the queue as soon as it does). Rare:
 * it lets the kernel catch up, at most this many times, then decides as
 * the ioctl path would. Never under the ring's lock.
 */
#define KD_SETTLE_TRIES 100000

/*
 * What a ring post is refused for, before it takes a place: the kernel's
 * own check (kdat_rules.h), which the kernel makes again when it takes the
 * entry, so that DAT's return codes stay synchronous; then the EP's state
 * as the ring shows it. *@state: the EP's state, for the flush.
 */
static DAT_RETURN kd_ring_post_check(struct kd_ring *r, struct kd_pz *pz,
				     struct kd_ep *ep, uint32_t op,
				     DAT_COUNT num, const DAT_LMR_TRIPLET *iov,
				     const DAT_RMR_TRIPLET *remote,
				     DAT_COMPLETION_FLAGS flags,
				     const struct kdat_dto_ext *ext,
				     uint32_t *state)
{
	static const struct kdat_dto_ext no_ext;
	struct kdat_rule_ep re = {
		.send_sge = r->max_iov,
		.recv_sge = r->max_iov,
		.read_sge = ep && ep->read_sge < r->max_iov ? ep->read_sge :
							       r->max_iov,
		.req_flags = ep ? ep->attr.request_completion_flags : 0,
		.recv_flags = ep ? ep->attr.recv_completion_flags : 0,
		.limits = kd_ia_limits(pz->obj.ia),
		.ud_mtu = ep ? ep->ud_mtu : 0,
		.ud = ep && ep->ud,
	};
	struct kdat_rule_dto d = {
		.op = op,
		.flags = flags,
		.num = num,
		.len0 = num ? iov[0].segment_length : 0,
		.ext = ext ? ext : &no_ext,
		.raddr = remote ? remote->virtual_address : 0,
		.rlen = remote ? remote->segment_length : 0,
	};
	struct kd_ring_segs segs = { .pz = pz, .iov = iov };
	int err;

	if (op > KDAT_DTO_RECEIVE && !r->ext)
		return DAT_NOT_IMPLEMENTED;	/* an old kernel */
	err = kdat_rule_dto(&re, &d, kd_ring_segment, &segs);
	if (err)
		return kd_from_errno(-err);
	/* The device is gone: as the ioctl's ENODEV. */
	if (kd_ring_flags(r) & KDAT_RING_F_DEAD)
		return DAT_INVALID_STATE;
	*state = kd_sq_ep_state(r);
	/* A UD EP has no connection: it takes DTOs in every state. */
	if (ep && !ep->ud && op != KDAT_DTO_RECEIVE &&
	    *state != KDAT_EP_STATE_CONNECTED &&
	    *state != KDAT_EP_STATE_DISCONNECTED)
		return DAT_INVALID_STATE;
	return DAT_SUCCESS;
}

/*
 * The ring path of a post: check, write the entry at tail, publish it,
 * and ring the doorbell only if the poller said it sleeps. Full barrier
 * between publishing tail and reading flags: see kd_sq_publish(). The
 * ring's lock is held only to take a place and fill it (DAT lets threads
 * post to one queue); the checks, the doorbell and a wait for room are
 * outside it.
 */
static DAT_RETURN kd_ring_post(struct kd_ring *r, struct kd_pz *pz,
			       struct kd_ep *ep, uint32_t op,
			       uint32_t depth, DAT_COUNT num,
			       const DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
			       const DAT_RMR_TRIPLET *remote,
			       DAT_COMPLETION_FLAGS flags,
			       const struct kdat_dto_ext *ext)
{
	int fd = ep ? ep->obj.ia->fd : kd_proc.fd;
	uint32_t tail, state = 0, tries;
	bool full, wake;
	DAT_RETURN ret;

	ret = kd_ring_post_check(r, pz, ep, op, num, iov, remote, flags, ext,
				 &state);
	if (ret)
		return ret;
	if (depth > r->mask + 1)
		depth = r->mask + 1;	/* never more than the ring holds */
	for (tries = 0;; tries++) {
		pthread_mutex_lock(&r->lock);
		tail = kd_sq_tail(r);
		if (kd_sq_room(r, tail, depth))
			break;
		/* All taken: truly full. */
		full = kd_sq_all_taken(r, tail) || tries == KD_SETTLE_TRIES;
		pthread_mutex_unlock(&r->lock);
		if (full)
			return DAT_INSUFFICIENT_RESOURCES;
		if (kd_sq_need_wakeup(r))
			kd_ring_wake(fd, kd_recv_unrung == fd &&
				     op != KDAT_DTO_RECEIVE ? NULL : r,
				     KDAT_RING_WAKE_SUBMIT);
		sched_yield();
	}
	kd_sq_prep(r, kd_sq_entry(r, tail), op, num, iov, cookie, remote,
		   flags, ext);
	kd_sq_publish(r, tail);
	/*
	 * The poller sleeps (or there is none): the entry goes to the device
	 * now, from our context, without a thread hop; the kernel wakes the
	 * poller for the next ones if it may run. On a DISCONNECTED EP the
	 * entry is flushed at once, as the spec says: taken now, its event
	 * is queued when we return. The doorbell is rung after the lock is
	 * dropped: it may take the entries of the threads that post behind
	 * us too.
	 */
	wake = (ep && state == KDAT_EP_STATE_DISCONNECTED) ||
	       kd_sq_need_wakeup(r);
	pthread_mutex_unlock(&r->lock);
	if (op == KDAT_DTO_RECEIVE) {
		if (wake)
			kd_ring_wake(fd, r, KDAT_RING_WAKE_SUBMIT);
		else
			kd_recv_unrung = fd;
	} else if (wake) {
		kd_ring_wake(fd, kd_recv_unrung == fd ? NULL : r,
			     KDAT_RING_WAKE_SUBMIT);
		if (kd_recv_unrung == fd)
			kd_recv_unrung = -1;
	}
	return DAT_SUCCESS;
}

static DAT_RETURN kd_post_one(DAT_EP_HANDLE ep_handle, uint32_t op,
			      DAT_COUNT num, const DAT_LMR_TRIPLET *iov,
			      DAT_DTO_COOKIE cookie,
			      const DAT_RMR_TRIPLET *remote,
			      DAT_COMPLETION_FLAGS flags,
			      const struct kdat_dto_ext *ext)
{
	struct kdat_lmr_triplet kiov[KDAT_DTO_MAX_IOV];
	struct kdat_post p = { .size = sizeof(p) };
	struct kd_obj *ep = ep_handle;
	DAT_COUNT i;

	if (!kd_check(ep, op == KDAT_POST_SRQ_RECV ? DAT_HANDLE_TYPE_SRQ :
						    DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	/*
	 * A UD EP takes datagrams and receives, an RC one no datagram: the
	 * kernel's EBADF, with the subtype OFA's provider gives.
	 */
	if (op != KDAT_POST_SRQ_RECV && op != KDAT_DTO_RECEIVE &&
	    ((struct kd_ep *)ep)->ud != (op == KDAT_DTO_SEND_UD))
		return DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EP;
	if (num < 0 || (num && !iov))
		return DAT_INVALID_PARAMETER;
	/* Over the EP's limit: the kernel refuses; so do we, cheaper. */
	if ((size_t)num > sizeof(kiov) / sizeof(kiov[0]))
		return DAT_INVALID_PARAMETER;
	if (op == KDAT_POST_SRQ_RECV && ((struct kd_srq *)ep)->ring) {
		struct kd_srq *srq = (struct kd_srq *)ep;

		return kd_ring_post(srq->ring, srq->pz, NULL, KDAT_DTO_RECEIVE,
				    srq->attr.max_recv_dtos, num, iov, cookie,
				    NULL, flags, NULL);
	}
	if (op != KDAT_POST_SRQ_RECV && ((struct kd_ep *)ep)->sq) {
		struct kd_ep *e = (struct kd_ep *)ep;

		if (op == KDAT_DTO_RECEIVE && !e->rq)
			return DAT_INVALID_PARAMETER;	/* the SRQ's */
		if (op == KDAT_DTO_RECEIVE)
			return kd_ring_post(e->rq, e->pz, e, op,
					    e->attr.max_recv_dtos, num, iov,
					    cookie, NULL, flags, NULL);
		return kd_ring_post(e->sq, e->pz, e, op,
				    e->attr.max_request_dtos, num, iov, cookie,
				    remote, flags, ext);
	}
	for (i = 0; i < num; i++) {
		kiov[i].lmr_context = iov[i].lmr_context;
		kiov[i].__pad = 0;
		kiov[i].virtual_address = iov[i].virtual_address;
		kiov[i].segment_length = iov[i].segment_length;
	}
	p.ep_handle = ep->kh;
	p.op = op;
	p.completion_flags = flags;
	p.num_segments = num;
	p.iov = (uintptr_t)kiov;
	p.cookie = cookie.as_64;
	if (remote) {
		p.remote.rmr_context = remote->rmr_context;
		p.remote.target_address = remote->virtual_address;
		p.remote.segment_length = remote->segment_length;
	}
	if (ext)
		p.ext = *ext;
	return kd_ioctl(ep->ia, KDAT_IOCTL_POST, &p);
}

/*
 * Post a DTO of @op; @ext: the IB extensions' arguments (dat_ext.c), or
 * NULL. A post that succeeds counts in the EP's counters.
 */
DAT_RETURN kd_post(DAT_EP_HANDLE ep_handle, uint32_t op, DAT_COUNT num,
		   const DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
		   const DAT_RMR_TRIPLET *remote, DAT_COMPLETION_FLAGS flags,
		   const struct kdat_dto_ext *ext)
{
	DAT_RETURN ret = kd_post_one(ep_handle, op, num, iov, cookie, remote,
				     flags, ext);

	/*
	 * The transport has no atomics or no immediate data (EOPNOTSUPP):
	 * what OFA's provider answers.
	 */
	if ((kdat_op_is_atomic(op) || op == KDAT_DTO_RDMA_WRITE_IMM) &&
	    ret == DAT_NOT_IMPLEMENTED)
		ret = DAT_MODEL_NOT_SUPPORTED;
	if (ret == DAT_SUCCESS && op != KDAT_POST_SRQ_RECV)
		kd_count_post(ep_handle, op, num, iov);
	return ret;
}

DAT_RETURN kd_ep_post_send(DAT_EP_HANDLE ep, DAT_COUNT num,
			   DAT_LMR_TRIPLET *iov,
			   DAT_DTO_COOKIE cookie,
			   DAT_COMPLETION_FLAGS flags)
{
	return kd_post(ep, KDAT_DTO_SEND, num, iov, cookie, NULL, flags, NULL);
}

DAT_RETURN kd_ep_post_recv(DAT_EP_HANDLE ep, DAT_COUNT num,
			   DAT_LMR_TRIPLET *iov,
			   DAT_DTO_COOKIE cookie,
			   DAT_COMPLETION_FLAGS flags)
{
	return kd_post(ep, KDAT_DTO_RECEIVE, num, iov, cookie, NULL, flags,
		       NULL);
}

DAT_RETURN kd_ep_post_rdma_read(DAT_EP_HANDLE ep, DAT_COUNT num,
				DAT_LMR_TRIPLET *iov,
				DAT_DTO_COOKIE cookie,
				const DAT_RMR_TRIPLET *remote,
				DAT_COMPLETION_FLAGS flags)
{
	if (!remote)
		return DAT_INVALID_PARAMETER;
	return kd_post(ep, KDAT_DTO_RDMA_READ, num, iov, cookie, remote,
		       flags, NULL);
}

DAT_RETURN kd_ep_post_rdma_write(DAT_EP_HANDLE ep, DAT_COUNT num,
				 DAT_LMR_TRIPLET *iov,
				 DAT_DTO_COOKIE cookie,
				 const DAT_RMR_TRIPLET *remote,
				 DAT_COMPLETION_FLAGS flags)
{
	if (!remote)
		return DAT_INVALID_PARAMETER;
	return kd_post(ep, KDAT_DTO_RDMA_WRITE, num, iov, cookie, remote,
		       flags, NULL);
}

DAT_RETURN kd_srq_post_recv(DAT_SRQ_HANDLE srq_handle,
			    DAT_COUNT num, DAT_LMR_TRIPLET *iov,
			    DAT_DTO_COOKIE cookie)
{
	if (!kd_check(srq_handle, DAT_HANDLE_TYPE_SRQ))
		return DAT_INVALID_HANDLE;
	return kd_post(srq_handle, KDAT_POST_SRQ_RECV, num, iov, cookie, NULL,
		       0, NULL);
}
