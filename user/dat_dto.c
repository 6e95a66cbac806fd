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

/*
 * What the kernel checks of a DTO, answered here too on the ring path, so
 * that DAT's synchronous return codes stay synchronous. The kernel checks
 * every entry again (it trusts nothing in a ring); this only decides the
 * return code. Same order as the kernel's check.
 */
static DAT_RETURN kd_ring_check(struct kd_pz *pz, uint32_t need,
				DAT_COUNT num, const DAT_LMR_TRIPLET *iov,
				uint64_t *total)
{
	DAT_COUNT i;

	*total = 0;
	for (i = 0; i < num; i++) {
		const struct kd_obj *o = kd_table_find(iov[i].lmr_context);
		const struct kd_lmr *lmr = (const struct kd_lmr *)o;
		uint32_t priv;
		uint64_t end;

		if (!o || o->type != DAT_HANDLE_TYPE_LMR)
			return DAT_PRIVILEGES_VIOLATION;
		priv = lmr->priv;
		if (priv & DAT_MEM_PRIV_LOCAL_WRITE_FLAG)
			priv |= DAT_MEM_PRIV_LOCAL_READ_FLAG;
		if ((priv & need) != need)
			return DAT_PRIVILEGES_VIOLATION;
		if (lmr->pz != pz)
			return DAT_PROTECTION_VIOLATION;
		if (__builtin_add_overflow(iov[i].virtual_address,
					   iov[i].segment_length, &end) ||
		    iov[i].virtual_address < lmr->addr ||
		    end > lmr->addr + lmr->length ||
		    iov[i].segment_length > UINT32_MAX)
			return DAT_INVALID_PARAMETER;
		*total += iov[i].segment_length;
	}
	return *total > UINT32_MAX ? DAT_INVALID_PARAMETER : DAT_SUCCESS;
}

static DAT_RETURN kd_ring_flags_ok(const struct kd_ep *ep, uint32_t op,
				   DAT_COMPLETION_FLAGS flags)
{
	DAT_COMPLETION_FLAGS allowed, ep_flags;

	if (op == KDAT_DTO_RECEIVE) {
		allowed = DAT_COMPLETION_UNSIGNALLED_FLAG;
		ep_flags = ep->attr.recv_completion_flags;
	} else {
		allowed = DAT_COMPLETION_SUPPRESS_FLAG |
			  DAT_COMPLETION_UNSIGNALLED_FLAG |
			  DAT_COMPLETION_BARRIER_FENCE_FLAG;
		if (op == KDAT_DTO_SEND || op == KDAT_DTO_RDMA_WRITE_IMM ||
		    op == KDAT_DTO_SEND_UD)
			allowed |= DAT_COMPLETION_SOLICITED_WAIT_FLAG;
		ep_flags = ep->attr.request_completion_flags;
	}
	if ((flags & ~allowed) ||
	    ((flags & DAT_COMPLETION_UNSIGNALLED_FLAG) &&
	     !(ep_flags & DAT_COMPLETION_UNSIGNALLED_FLAG)))
		return DAT_INVALID_PARAMETER;
	return DAT_SUCCESS;
}

/*
 * The queue looks full, but the kernel may not have taken every entry yet
 * (entries flushed at once on a DISCONNECTED EP, or refused, leave the
 * queue as soon as it does): let it catch up, then decide as the ioctl
 * path would. Rare; may make system calls. @r->lock held. True when room
 * appeared.
 */
static bool kd_ring_settle(struct kd_ring *r, int fd, uint32_t depth)
{
	uint32_t tail = kd_sq_tail(r);
	int spins;

	for (spins = 0; spins < 100000; spins++) {
		if (kd_sq_room(r, tail, depth))
			return true;
		if (kd_sq_all_taken(r, tail))
			return false;	/* all taken: truly full */
		if (kd_sq_need_wakeup(r))
			kd_ring_wake(fd, KDAT_RING_WAKE_SUBMIT);
		sched_yield();
	}
	return false;
}

/*
 * What a ring post is refused for, before it takes a place: the checks of
 * the ioctl path, in its order. *@state: the EP's state, for the flush.
 */
static DAT_RETURN kd_ring_post_check(struct kd_ring *r, struct kd_pz *pz,
				     struct kd_ep *ep, uint32_t op,
				     DAT_COUNT num, const DAT_LMR_TRIPLET *iov,
				     const DAT_RMR_TRIPLET *remote,
				     DAT_COMPLETION_FLAGS flags,
				     uint32_t *state)
{
	uint32_t need = op == KDAT_DTO_RECEIVE || op == KDAT_DTO_RDMA_READ ||
			kd_op_atomic(op) ? DAT_MEM_PRIV_LOCAL_WRITE_FLAG :
					   DAT_MEM_PRIV_LOCAL_READ_FLAG;
	uint64_t total;
	DAT_RETURN ret;

	/* iWARP: a read's sink takes the response as a remote write. */
	if (op == KDAT_DTO_RDMA_READ &&
	    (kd_ia_limits(pz->obj.ia) & KDAT_IA_READ_SINK_REMOTE_WRITE))
		need |= DAT_MEM_PRIV_REMOTE_WRITE_FLAG;

	if (ep) {
		ret = kd_ext_check(ep, op, num, iov, remote);
		if (ret)
			return ret;
		if (op > KDAT_DTO_RECEIVE && !r->ext)
			return DAT_NOT_IMPLEMENTED;	/* an old kernel */
		ret = kd_ring_flags_ok(ep, op, flags);
		if (ret)
			return ret;
	} else if (flags) {
		return DAT_INVALID_PARAMETER;
	}
	if ((uint32_t)num > r->max_iov ||
	    (ep && op == KDAT_DTO_RDMA_READ && (uint32_t)num > ep->read_sge))
		return DAT_INVALID_PARAMETER;
	ret = kd_ring_check(pz, need, num, iov, &total);
	if (ret)
		return ret;
	if (op == KDAT_DTO_RDMA_READ && total < remote->segment_length)
		return DAT_LENGTH_ERROR;
	/* A datagram is one packet (the kernel's EMSGSIZE). */
	if (op == KDAT_DTO_SEND_UD && total > ep->ud_mtu)
		return DAT_LENGTH_ERROR;
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
 * between publishing tail and reading flags: see kd_sq_publish().
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
	uint32_t tail, state;
	DAT_RETURN ret;

	ret = kd_ring_post_check(r, pz, ep, op, num, iov, remote, flags,
				 &state);
	if (ret)
		return ret;
	if (depth > r->mask + 1)
		depth = r->mask + 1;	/* never more than the ring holds */
	pthread_mutex_lock(&r->lock);
	tail = kd_sq_tail(r);
	if (!kd_sq_room(r, tail, depth) && !kd_ring_settle(r, fd, depth)) {
		pthread_mutex_unlock(&r->lock);
		return DAT_INSUFFICIENT_RESOURCES;
	}
	kd_sq_prep(r, kd_sq_entry(r, tail), op, num, iov, cookie, remote,
		   flags, ext);
	kd_sq_publish(r, tail);
	/*
	 * The poller sleeps (or there is none): the entry goes to the device
	 * now, from our context, without a thread hop; the kernel wakes the
	 * poller for the next ones if it may run. On a DISCONNECTED EP the
	 * entry is flushed at once, as the spec says: taken now, its event
	 * is queued when we return.
	 */
	if ((ep && state == KDAT_EP_STATE_DISCONNECTED) ||
	    kd_sq_need_wakeup(r))
		kd_ring_wake(fd, KDAT_RING_WAKE_SUBMIT);
	pthread_mutex_unlock(&r->lock);
	return DAT_SUCCESS;
}

static DAT_RETURN kd_post_one(DAT_EP_HANDLE ep_handle, uint32_t op,
			      DAT_COUNT num, const DAT_LMR_TRIPLET *iov,
			      DAT_DTO_COOKIE cookie,
			      const DAT_RMR_TRIPLET *remote,
			      DAT_COMPLETION_FLAGS flags,
			      const struct kdat_dto_ext *ext)
{
	struct kdat_lmr_triplet kiov[32];
	struct kdat_post p = { .size = sizeof(p) };
	struct kd_obj *ep = ep_handle;
	DAT_RETURN ret;
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
	ret = kd_ioctl(ep->ia, KDAT_IOCTL_POST, &p);
	/*
	 * The transport has no atomics or no immediate data (EOPNOTSUPP),
	 * as on the ring path.
	 */
	if ((kd_op_atomic(op) || op == KDAT_DTO_RDMA_WRITE_IMM) &&
	    ret == DAT_NOT_IMPLEMENTED)
		ret = DAT_MODEL_NOT_SUPPORTED;
	return ret;
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
