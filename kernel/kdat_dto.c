// SPDX-License-Identifier: GPL-2.0
/*
 * kdat DTOs: validate a descriptor against the caller's objects, post it to
 * the Endpoint's kernel QP, turn its completion into a DAT event.
 *
 * Every DTO, whichever way it came (the ioctl, a submission ring, the
 * kernel API), is a struct kdat_req checked by the one check
 * (kdat_rules.h, kdat_dto_check()) and posted in a batch (a ring's, or a
 * batch of one): the pipeline below. Nothing here reads user memory: the
 * ioctl copies the IOV once before, a ring's drain its entry.
 */
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kdat.h"
#include "kdat_ring.h"


/*
 * The segments of the one check (kdat_rule_dto()) for a DTO in @pz: each
 * looked up among the LMRs of @b's file, checked, and its pieces added to @dto's
 * scatter/gather list, at most @max_sge entries.
 */
struct kdat_sgl_fill {
	struct kdat_batch *b;
	const struct kdat_pz *pz;
	const struct kdat_lmr_triplet *iov;
	struct kdat_dto *dto;
	u32 max_sge;
	u32 lkey;
};

static int kdat_sgl_add(void *arg, u64 addr, u32 len)
{
	struct kdat_sgl_fill *f = arg;
	struct ib_sge *sge;

	if (f->dto->num_sge >= f->max_sge)
		return -EINVAL;	/* more pieces than the QP takes */
	sge = &f->dto->sge[f->dto->num_sge++];
	sge->addr = addr;
	sge->length = len;
	sge->lkey = f->lkey;
	return 0;
}

/*
 * The LMR @lmr_context of the batch's file: the batch's own, the last one
 * a lookup of its segments found, whose reference serves every segment
 * that names it again while the batch lasts (kdat_batch_finish() drops
 * it); or looked up and kept in its place. NULL: no live LMR of the file
 * has it (a dying one, obj.dead, is looked up again: its handle is gone).
 */
static struct kdat_lmr *kdat_batch_lmr(struct kdat_batch *b, u32 lmr_context)
{
	struct kdat_lmr *lmr = b->lmr;

	if (lmr && lmr->obj.handle == lmr_context && !READ_ONCE(lmr->obj.dead))
		return lmr;
	lmr = kdat_get(b->kfile, lmr_context, struct kdat_lmr, KDAT_OBJ_LMR);
	if (!lmr)
		return NULL;
	if (b->lmr)
		kdat_obj_put(&b->lmr->obj);
	b->lmr = lmr;
	return lmr;
}

/*
 * Segment @i: zero-length segments are checked and skipped. One of a user
 * LMR is one entry (the MR's iova is the user address); one of a kernel
 * LMR is an entry per DMA-contiguous piece, with the PD's local DMA lkey.
 */
static int kdat_sgl_segment(void *arg, u32 i, u32 need, u64 *lenp)
{
	struct kdat_sgl_fill *f = arg;
	const struct kdat_lmr_triplet *seg = &f->iov[i];
	u64 va = seg->virtual_address, len = seg->segment_length;
	struct kdat_lmr *lmr;
	int ret;

	*lenp = len;
	if (seg->__pad)
		return -EINVAL;
	lmr = kdat_batch_lmr(f->b, seg->lmr_context);
	if (!lmr)
		return -EACCES;	/* an invalid LMR (DAT) */
	ret = kdat_rule_dto_segment(lmr->mem_priv, lmr->pz == f->pz,
				    lmr->addr, lmr->length, need, va, len);
	if (!ret && (lmr->kernel ? !lmr->mapped : !lmr->mr))
		ret = -ENODEV;	/* its device is gone */
	if (!ret && len) {
		if (lmr->kernel) {
			f->lkey = f->pz->pd->local_dma_lkey;
			ret = kdat_lmr_dma_walk(lmr, va, len, kdat_sgl_add, f);
		} else {
			f->lkey = lmr->mr->lkey;
			ret = kdat_sgl_add(f, va, len);
		}
		f->dto->length += len;
	}
	return ret;
}

/* Nothing of the IB extensions' arguments: what a plain DTO carries. */
static const struct kdat_dto_ext kdat_no_ext;
static const struct kdat_rmr_triplet kdat_no_remote;

/*
 * The one check of @req, a DTO for a queue with the attributes @re in
 * @pz (kdat_rule_dto()), building @dto's scatter/gather list. @dto's op,
 * flags and cookie are set. Returns the errno of the uapi table.
 */
static int kdat_dto_check(struct kdat_batch *b,
			  const struct kdat_rule_ep *re,
			  const struct kdat_pz *pz, const struct kdat_req *req,
			  struct kdat_dto *dto)
{
	const struct kdat_rmr_triplet *remote = req->remote ?: &kdat_no_remote;
	struct kdat_rule_dto d = {
		.op = req->op,
		.flags = req->flags,
		.num = req->num,
		/* Read where the IOV is one the rules may accept. */
		.len0 = req->num && req->num <= KDAT_DTO_MAX_IOV ?
			req->iov[0].segment_length : 0,
		.rpad = kdat_op_has_remote(req->op) ? remote->__pad : 0,
		.ext = req->ext ?: &kdat_no_ext,
		.raddr = remote->target_address,
		.rlen = remote->segment_length,
	};
	struct kdat_sgl_fill fill = {
		.b = b,
		.pz = pz,
		.iov = req->iov,
		.dto = dto,
		.max_sge = kdat_rule_max_sge(re, req->op),
	};

	if (kdat_op_has_remote(req->op))
		dto->remote = *remote;
	dto->ext = *d.ext;
	dto->length = 0;
	dto->num_sge = 0;
	return kdat_rule_dto(re, &d, kdat_sgl_segment, &fill);
}

#define CREATE_TRACE_POINTS
#include "kdat_trace.h"

u32 kdat_wc_status(enum ib_wc_status status)
{
	switch (status) {
	case IB_WC_SUCCESS:
		return KDAT_DTO_SUCCESS;
	case IB_WC_WR_FLUSH_ERR:
		return KDAT_DTO_ERR_FLUSHED;
	case IB_WC_LOC_LEN_ERR:
		return KDAT_DTO_ERR_LOCAL_LENGTH;
	case IB_WC_LOC_QP_OP_ERR:
	case IB_WC_LOC_EEC_OP_ERR:
		return KDAT_DTO_ERR_LOCAL_EP;
	case IB_WC_LOC_PROT_ERR:
	case IB_WC_MW_BIND_ERR:
		return KDAT_DTO_ERR_LOCAL_PROTECTION;
	case IB_WC_BAD_RESP_ERR:
		return KDAT_DTO_ERR_BAD_RESPONSE;
	case IB_WC_REM_ACCESS_ERR:
		return KDAT_DTO_ERR_REMOTE_ACCESS;
	case IB_WC_REM_INV_REQ_ERR:
	case IB_WC_REM_OP_ERR:
		return KDAT_DTO_ERR_REMOTE_RESPONDER;
	case IB_WC_RNR_RETRY_EXC_ERR:
		return KDAT_DTO_ERR_RECEIVER_NOT_READY;
	default:
		return KDAT_DTO_ERR_TRANSPORT;
	}
}

static void kdat_dto_event(struct kdat_ep *ep, u32 op, u64 cookie,
			   u32 status, u64 length, u32 imm)
{
	struct kdat_event ev = {
		.event_number = KDAT_EVENT_DTO_COMPLETION,
		.status = status,
		.cookie = cookie,
		.transferred_length = length,
		.handle = ep->obj.handle,
		.operation = op,
		.imm_data = imm,
	};

	kdat_evd_push(kdat_op_is_recv(op) ? ep->recv_evd : ep->req_evd, &ev);
}

/*
 * What took a receive that completed with @wc: an RDMA write with
 * immediate data (its length is the write's), a message with immediate
 * data, or a plain message (enum kdat_dto_op); on a UD Endpoint (@ud), a
 * datagram with or without immediate data, and a failed receive too. The
 * immediate data goes to *@imm in the order its bytes travelled (0
 * without).
 */
u32 kdat_wc_recv_op(const struct ib_wc *wc, bool ud, u32 *imm)
{
	bool with_imm = wc->opcode == IB_WC_RECV_RDMA_WITH_IMM ||
			(wc->wc_flags & IB_WC_WITH_IMM);

	*imm = 0;
	if (wc->status != IB_WC_SUCCESS)	/* the device does not say */
		return ud ? KDAT_DTO_RECV_UD : KDAT_DTO_RECEIVE;
	if (with_imm)
		*imm = (__force u32)wc->ex.imm_data;
	if (ud)		/* no RDMA on UD */
		return with_imm ? KDAT_DTO_RECV_UD_IMM : KDAT_DTO_RECV_UD;
	if (wc->opcode == IB_WC_RECV_RDMA_WITH_IMM)
		return KDAT_DTO_RECV_RDMA_IMM;
	return with_imm ? KDAT_DTO_RECV_MSG_IMM : KDAT_DTO_RECEIVE;
}

/* The DTO status of a ring entry refused with @err. */
u32 kdat_refused_status(int err)
{
	if (err == -EACCES || err == -EPERM)
		return KDAT_DTO_ERR_LOCAL_PROTECTION;
	if (err == -EMSGSIZE)
		return KDAT_DTO_ERR_LOCAL_LENGTH;
	return KDAT_DTO_ERR_LOCAL_EP;
}

struct kdat_slot_chunk {
	struct kdat_slot_chunk *next;
	struct kdat_dto_ctx ctx[];
};

static struct kdat_slot_chunk *kdat_slot_chunk_alloc(u32 n,
						     struct kdat_ep *ep,
						     struct kdat_srq *srq)
{
	struct kdat_slot_chunk *c;
	u32 i;

	c = kvzalloc(struct_size(c, ctx, n),
		     GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN);
	if (!c)
		return NULL;
	for (i = 0; i < n; i++) {
		c->ctx[i].cqe.done = kdat_dto_done;
		c->ctx[i].ep = ep;
		c->ctx[i].srq = srq;
		c->ctx[i].next_free = i + 1 < n ? &c->ctx[i + 1] : NULL;
	}
	return c;
}

int kdat_slots_init(struct kdat_slots *s, u32 n, struct kdat_ep *ep,
		    struct kdat_srq *srq)
{
	memset(s, 0, sizeof(*s));
	if (!n)
		return 0;
	s->chunks = kdat_slot_chunk_alloc(n, ep, srq);
	if (!s->chunks)
		return -ENOMEM;
	s->free = &s->chunks->ctx[0];
	s->nr = n;
	s->limit = n;
	return 0;
}

/*
 * Give @s @n slots (n > s->nr) while it may be in use: the new chunk is
 * built outside @lock, the owner's, and linked in under it.
 */
int kdat_slots_grow(struct kdat_slots *s, u32 n, struct kdat_ep *ep,
		    struct kdat_srq *srq, spinlock_t *lock)
{
	struct kdat_slot_chunk *c;
	unsigned long flags;
	u32 add = n - s->nr;

	c = kdat_slot_chunk_alloc(add, ep, srq);
	if (!c)
		return -ENOMEM;
	spin_lock_irqsave(lock, flags);
	c->ctx[add - 1].next_free = s->free;
	s->free = &c->ctx[0];
	c->next = s->chunks;
	s->chunks = c;
	s->nr = n;
	s->limit = n;
	spin_unlock_irqrestore(lock, flags);
	return 0;
}

void kdat_slots_fini(struct kdat_slots *s)
{
	while (s->chunks) {
		struct kdat_slot_chunk *c = s->chunks;

		s->chunks = c->next;
		kvfree(c);
	}
	s->free = NULL;
}

/* A free slot, or NULL when @limit are in use; the owner's lock held. */
struct kdat_dto_ctx *kdat_slot_get(struct kdat_slots *s)
{
	struct kdat_dto_ctx *ctx = s->free;

	if (!ctx || s->posted >= s->limit)
		return NULL;
	s->free = ctx->next_free;
	s->posted++;
	return ctx;
}

/* The owner's lock held. */
void kdat_slot_put(struct kdat_slots *s, struct kdat_dto_ctx *ctx)
{
	ctx->next_free = s->free;
	s->free = ctx;
	s->posted--;
}

/*
 * A receive of @srq completed on the QP at @qp (an address only: the QP
 * may be gone, see struct kdat_srq). Its EP is alive: it leaves the map
 * only after its teardown has seen its last completion through. @broken:
 * it completed in error, not flushed (kdat_ep_dto_error()).
 */
static void kdat_srq_done(struct kdat_srq *srq, const struct ib_qp *qp,
			  struct kdat_dto_ctx *ctx, u32 op, u32 status,
			  u64 length, u32 imm, bool broken)
{
	u64 cookie = ctx->cookie;
	unsigned long flags;
	struct kdat_ep *ep;

	spin_lock_irqsave(&srq->lock, flags);
	ep = kdat_srq_find_ep(srq, qp);
	kdat_slot_put(&srq->slots, ctx);
	if (srq->ring)
		kdat_ring_completed(srq->ring, 1);
	spin_unlock_irqrestore(&srq->lock, flags);
	if (ep) {
		kdat_dto_event(ep, op, cookie, status, length, imm);
		if (broken)
			kdat_ep_dto_error(ep);
	}
}

/* A DTO completed (the CQ's softirq poller). */
void kdat_dto_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kdat_dto_ctx *ctx = container_of(wc->wr_cqe,
						struct kdat_dto_ctx, cqe);
	struct kdat_ep *ep = ctx->ep;
	bool recv = ctx->op == KDAT_DTO_RECEIVE;
	u32 status = kdat_wc_status(wc->status);
	u64 cookie = ctx->cookie, length = ctx->length;
	u32 op = ctx->op, imm = 0;
	u8 flags = ctx->flags;
	u32 rmr_handle = ctx->rmr_handle;
	struct kdat_ah *ah = ctx->ah;
	unsigned long irqflags;
	bool wake, ud_send;
	bool broken = wc->status != IB_WC_SUCCESS &&
		      wc->status != IB_WC_WR_FLUSH_ERR;

	if (recv) {
		/* A datagram's length counts its Global Route Header. */
		length = wc->status == IB_WC_SUCCESS ? wc->byte_len : 0;
		op = kdat_wc_recv_op(wc, ep && ep->ud, &imm);
	} else if (wc->status != IB_WC_SUCCESS) {
		length = 0;
	}
	/*
	 * A receive whose message does not fit: IB_WC_LOC_LEN_ERR on most
	 * devices, IB_WC_LOC_QP_OP_ERR on rxe (copy_data() refuses it as a
	 * malformed WQE). The receive WQEs are built here from checked
	 * segments, so a local QP operation error on a receive can only be
	 * the length: DAT wants DAT_DTO_LENGTH_ERROR.
	 */
	if (recv && wc->status == IB_WC_LOC_QP_OP_ERR)
		status = KDAT_DTO_ERR_LOCAL_LENGTH;
	/* Why a connection broke, for whoever asks (dynamic debug). */
	if (wc->status != IB_WC_SUCCESS && wc->status != IB_WC_WR_FLUSH_ERR)
		pr_debug("kdat: %s %u: %s %s, vendor error %#x\n",
			 ctx->srq ? "SRQ" : "EP",
			 ctx->srq ? ctx->srq->obj.handle : ep->obj.handle,
			 recv ? "receive" : "request",
			 ib_wc_status_msg(wc->status), wc->vendor_err);

	trace_kdat_complete(ctx->srq ? ctx->srq->obj.file->tgid :
					 ep->obj.file->tgid,
			    ctx->srq ? ctx->srq->obj.handle : ep->obj.handle,
			    op, cookie, status, length, wc->status);
	if (ctx->srq) {
		kdat_srq_done(ctx->srq, wc->qp, ctx, op, status, length, imm,
			      broken);
		return;
	}

	ctx->ah = NULL;
	spin_lock_irqsave(&ep->lock, irqflags);
	kdat_slot_put(recv ? &ep->recv : &ep->send, ctx);
	if (recv)
		ep->recv_done++;
	else
		ep->send_done++;
	if (wc->status != IB_WC_SUCCESS)
		ep->errors++;
	if (recv ? ep->rq_ring : ep->sq_ring)
		kdat_ring_completed(recv ? ep->rq_ring : ep->sq_ring, 1);
	wake = !recv && (!ep->send.posted || ep->settlers);
	/*
	 * A UD EP's send queue has no drain marker to wait behind: its
	 * teardown waits until no completion is in here (kdat_ud_drain_sq()).
	 */
	ud_send = !recv && ep->ud;
	if (ud_send)
		ep->ud_done_busy++;
	spin_unlock_irqrestore(&ep->lock, irqflags);

	/* Suppressed: no event for a success, as DAT says. */
	if (!(flags & KDAT_COMPLETION_SUPPRESS) || status != KDAT_DTO_SUCCESS) {
		struct kdat_event bind = {
			.event_number = KDAT_EVENT_RMR_BIND_COMPLETION,
			.status = status,
			.cookie = cookie,
			.handle = rmr_handle,
		};

		if (op == KDAT_OP_BIND)
			kdat_evd_push(ep->req_evd, &bind);
		else
			kdat_dto_event(ep, op, cookie, status, length, imm);
	}
	/* After the DTO's event: DAT_CONNECTION_EVENT_BROKEN follows it. */
	if (broken)
		kdat_ep_dto_error(ep);
	kdat_ud_dto_done(ah);
	if (ud_send) {
		/* The last touch of the EP: its teardown may follow. */
		spin_lock_irqsave(&ep->lock, irqflags);
		if ((!--ep->ud_done_busy && !ep->send.posted) ||
		    ep->settlers)
			wake_up(&ep->idle_wq);
		spin_unlock_irqrestore(&ep->lock, irqflags);
		return;
	}
	/*
	 * A graceful disconnect waits for the last request to complete; woken
	 * after its event is queued, so nothing it flushes comes before it.
	 * An LMR's destroy waits for the requests at the device when it was
	 * called (kdat_lmr_settle()): woken at each.
	 */
	if (wake)
		wake_up(&ep->idle_wq);
}

/*
 * Take a slot of @ep's queue for the checked @dto. 0 with *@ctx set; 1 when
 * the EP is disconnected: the DTO is accepted and flushed at once (DAT),
 * its event already queued; or the errno of the uapi table.
 */
static int kdat_dto_begin(struct kdat_ep *ep, struct kdat_dto *dto,
		   struct kdat_dto_ctx **ctxp)
{
	bool recv = dto->op == KDAT_DTO_RECEIVE;
	enum kdat_ep_verdict verdict;
	struct kdat_dto_ctx *ctx;
	bool reaped = false;
	unsigned long flags;

again:
	spin_lock_irqsave(&ep->lock, flags);
	/* A UD EP has no connection: it takes DTOs in every state. */
	verdict = ep->ud ? KDAT_EP_DO :
		  kdat_ep_allowed(ep->state, recv ? KDAT_EP_OP_POST_RECV :
						    KDAT_EP_OP_POST_SEND);
	if (verdict == KDAT_EP_REFUSE) {
		spin_unlock_irqrestore(&ep->lock, flags);
		return -EBUSY;
	}
	if (verdict == KDAT_EP_FLUSH) {
		spin_unlock_irqrestore(&ep->lock, flags);
		kdat_dto_event(ep, dto->op, dto->cookie, KDAT_DTO_ERR_FLUSHED,
			       0, 0);
		return 1;
	}
	if (!ep->qp) {
		spin_unlock_irqrestore(&ep->lock, flags);
		return -ENODEV;
	}
	ctx = kdat_slot_get(recv ? &ep->recv : &ep->send);
	spin_unlock_irqrestore(&ep->lock, flags);
	if (!ctx && !reaped) {
		/*
		 * Every slot taken: a completion the device has written and
		 * not yet signalled, or signalled to an irq_poll still to run,
		 * frees one when it is reaped. Reap the queue's CQ once and
		 * look again, so that a slot is free as soon as the device is
		 * done with it, whenever kdat would have seen it.
		 */
		kdat_cq_reap(&(recv ? ep->recv_evd : ep->req_evd)->kcq);
		reaped = true;
		goto again;
	}
	if (!ctx)
		return -ENOMEM;
	ctx->cookie = dto->cookie;
	ctx->length = dto->length;
	ctx->op = dto->op;
	ctx->flags = dto->flags;
	/* A datagram's use of its AH is the slot's until it completes. */
	ctx->ah = dto->ah;
	dto->ah = NULL;
	*ctxp = ctx;
	trace_kdat_post(ep->obj.file->tgid, ep->obj.handle, dto->op,
			dto->cookie, dto->length, dto->flags);
	return 0;
}

/* A checked DTO that took no slot lets go of what it holds (its AH). */
static void kdat_dto_release(struct kdat_dto *dto)
{
	kdat_ud_dto_done(dto->ah);
	dto->ah = NULL;
}

/* Give back the slot of a DTO the device refused (nothing was posted). */
void kdat_dto_abort(struct kdat_ep *ep, struct kdat_dto_ctx *ctx)
{
	bool recv = ctx->op == KDAT_DTO_RECEIVE;
	struct kdat_ah *ah = ctx->ah;
	unsigned long flags;
	bool wake;

	ctx->ah = NULL;
	spin_lock_irqsave(&ep->lock, flags);
	kdat_slot_put(recv ? &ep->recv : &ep->send, ctx);
	/* One fewer request at the device: its waiters look again. */
	wake = !recv && (!ep->send.posted || ep->settlers);
	spin_unlock_irqrestore(&ep->lock, flags);
	kdat_ud_dto_done(ah);
	if (wake)
		wake_up(&ep->idle_wq);
}

/* The send work request of a checked DTO holding slot @ctx. */
static void kdat_dto_send_wr(union kdat_send_wr *wr, struct kdat_dto *dto,
		      struct kdat_dto_ctx *ctx)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr.wr_cqe = &ctx->cqe;
	wr->wr.sg_list = dto->sge;
	wr->wr.num_sge = dto->num_sge;
	wr->wr.send_flags = IB_SEND_SIGNALED;
	if (dto->flags & KDAT_COMPLETION_SOLICITED_WAIT)
		wr->wr.send_flags |= IB_SEND_SOLICITED;
	if (dto->flags & KDAT_COMPLETION_BARRIER_FENCE)
		wr->wr.send_flags |= IB_SEND_FENCE;
	switch (dto->op) {
	case KDAT_DTO_SEND:
		wr->wr.opcode = IB_WR_SEND;
		return;
	case KDAT_DTO_SEND_UD:
		/* To the QP and Q_Key the AH was resolved with, nowhere else. */
		wr->wr.opcode = IB_WR_SEND;
		wr->ud.ah = ctx->ah->ah;
		wr->ud.remote_qpn = ctx->ah->remote_qpn;
		wr->ud.remote_qkey = ctx->ah->remote_qkey;
		return;
	case KDAT_DTO_FETCH_ADD:
	case KDAT_DTO_CMP_SWAP:
		wr->wr.opcode = dto->op == KDAT_DTO_FETCH_ADD ?
				IB_WR_ATOMIC_FETCH_AND_ADD :
				IB_WR_ATOMIC_CMP_AND_SWP;
		wr->atomic.remote_addr = dto->remote.target_address;
		wr->atomic.rkey = dto->remote.rmr_context;
		wr->atomic.compare_add = dto->ext.compare_add;
		wr->atomic.swap = dto->ext.swap;
		return;
	case KDAT_DTO_RDMA_WRITE:
		wr->wr.opcode = IB_WR_RDMA_WRITE;
		break;
	case KDAT_DTO_RDMA_WRITE_IMM:
		wr->wr.opcode = IB_WR_RDMA_WRITE_WITH_IMM;
		/* The bytes as the consumer's __u32 holds them (uapi). */
		wr->wr.ex.imm_data = (__force __be32)dto->ext.imm_data;
		break;
	default:
		wr->wr.opcode = IB_WR_RDMA_READ;
		break;
	}
	wr->rdma.remote_addr = dto->remote.target_address;
	wr->rdma.rkey = dto->remote.rmr_context;
}

/* The receive work request of a checked DTO holding slot @ctx. */
static void kdat_dto_recv_wr(struct ib_recv_wr *wr, struct kdat_dto *dto,
		      struct kdat_dto_ctx *ctx)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_cqe = &ctx->cqe;
	wr->sg_list = dto->sge;
	wr->num_sge = dto->num_sge;
}

/*
 * An RDMA read fills the local IOV in order up to the remote length: the
 * front segments whole, one partly, the rest not at all.
 */
void kdat_dto_trim(struct kdat_dto *dto, u64 length)
{
	u64 left = length;
	u32 i;

	for (i = 0; i < dto->num_sge && left; i++) {
		if (dto->sge[i].length > left)
			dto->sge[i].length = left;
		left -= dto->sge[i].length;
	}
	dto->num_sge = i;
	dto->length = length;
}

/*
 * The check of @req for @ep, whichever way it came (the ioctl, a ring, the
 * kernel API): the one check, then what this side adds (a kernel LMR's
 * pieces, a read trimmed to its remote length, a datagram's AH). Builds
 * @dto, whose op, flags and cookie are set. Inside a batch
 * (kdat_batch_start()). Returns the errno of the uapi table.
 */
static int kdat_dto_validate(struct kdat_batch *b, const struct kdat_req *req,
			     struct kdat_dto *dto)
{
	struct kdat_ep *ep = b->ep;
	struct kdat_rule_ep re = {
		.send_sge = ep->send_sge,
		.recv_sge = ep->recv_sge,
		.read_sge = ep->read_sge,
		.req_flags = READ_ONCE(ep->attr.request_completion_flags),
		.recv_flags = READ_ONCE(ep->attr.recv_completion_flags),
		.limits = ep->pz->ia->limits,
		.ud_mtu = ep->ud_mtu,
		.ud = ep->ud,
		.srq = ep->srq,
	};
	int ret;

	ret = kdat_dto_check(b, &re, ep->pz, req, dto);
	if (ret)
		return ret;
	/* A read is behind everything before it already (see the EP). */
	if (dto->op == KDAT_DTO_RDMA_READ && ep->reads_ordered)
		dto->flags &= ~KDAT_COMPLETION_BARRIER_FENCE;
	/* The 8 bytes of a kernel LMR across two DMA pieces: no atomic. */
	if (kdat_op_is_atomic(dto->op) && dto->num_sge != 1)
		return -EINVAL;
	if (dto->op == KDAT_DTO_RDMA_READ)
		kdat_dto_trim(dto, dto->remote.segment_length);
	/* Its AH last: what is checked holds it. */
	if (dto->op == KDAT_DTO_SEND_UD)
		return kdat_ud_dto_ah(b->kfile, ep, dto);
	return 0;
}

/*
 * The same for a receive buffer of @srq: the check of an EP's receive,
 * with the SRQ's IOV size and no completion flag.
 */
static int kdat_srq_validate(struct kdat_batch *b, const struct kdat_req *req,
			     struct kdat_dto *dto)
{
	struct kdat_srq *srq = b->srq;
	struct kdat_rule_ep re = {
		.recv_sge = srq->max_recv_iov,
		.limits = srq->pz->ia->limits,
	};

	if (req->op != KDAT_DTO_RECEIVE)
		return -EINVAL;
	return kdat_dto_check(b, &re, srq->pz, req, dto);
}

/* Take a slot of @srq for the checked @dto; NULL when it is full. */
static struct kdat_dto_ctx *kdat_srq_begin(struct kdat_srq *srq,
				    const struct kdat_dto *dto)
{
	struct kdat_dto_ctx *ctx;
	unsigned long flags;

	spin_lock_irqsave(&srq->lock, flags);
	ctx = kdat_slot_get(&srq->slots);
	spin_unlock_irqrestore(&srq->lock, flags);
	if (ctx) {
		ctx->cookie = dto->cookie;
		ctx->length = dto->length;
		ctx->op = KDAT_DTO_RECEIVE;
		ctx->flags = 0;
	}
	return ctx;
}

static void kdat_srq_abort(struct kdat_srq *srq, struct kdat_dto_ctx *ctx)
{
	unsigned long flags;

	spin_lock_irqsave(&srq->lock, flags);
	kdat_slot_put(&srq->slots, ctx);
	spin_unlock_irqrestore(&srq->lock, flags);
}

/* ---- the pipeline: every post's one way to the device ------------------ */

/*
 * A batch of checked DTOs for one queue, posted as one chain. The rings
 * drain into a batch of up to KDAT_RING_BATCH (kdat_batch_init()); the
 * ioctl and the kernel API post a batch of one (kdat_post_queue()). What
 * a batch refuses is the caller's to report: a ring's entries complete
 * with the reason (kdat_batch_refuse()), a batch of one returns it.
 */
static void kdat_batch_setup(struct kdat_batch *b, struct kdat_file *kfile,
			     struct kdat_ep *ep, struct kdat_srq *srq,
			     bool send)
{
	b->kfile = kfile;
	b->ep = ep;
	b->srq = srq;
	b->send = send;
	b->one = false;
	b->n = 0;
	b->lmr = NULL;
}

/*
 * A ring's batch on @ep's send (@send) or receive queue, or on @srq: its
 * scratch for KDAT_RING_BATCH DTOs.
 */
int kdat_batch_init(struct kdat_batch *b, struct kdat_file *kfile,
		    struct kdat_ep *ep, struct kdat_srq *srq, bool send)
{
	kdat_batch_setup(b, kfile, ep, srq, send);
	b->dto = kcalloc(KDAT_RING_BATCH, sizeof(*b->dto), GFP_KERNEL_ACCOUNT);
	b->ctx = kcalloc(KDAT_RING_BATCH, sizeof(*b->ctx), GFP_KERNEL_ACCOUNT);
	b->swr = kcalloc(KDAT_RING_BATCH, max(sizeof(*b->swr), sizeof(*b->rwr)),
			 GFP_KERNEL_ACCOUNT);
	return b->dto && b->ctx && b->swr ? 0 : -ENOMEM;
}

void kdat_batch_fini(struct kdat_batch *b)
{
	WARN_ON_ONCE(b->lmr);
	kfree(b->dto);
	kfree(b->ctx);
	kfree(b->swr);
	b->dto = NULL;
	b->ctx = NULL;
	b->swr = NULL;
}

/* The batch's queue is done with one entry of its submission ring. */
static void kdat_batch_completed(struct kdat_batch *b)
{
	spinlock_t *lock = b->ep ? &b->ep->lock : &b->srq->lock;
	struct kdat_ring *r;
	unsigned long flags;

	if (b->one)
		return;		/* no ring entry: the ioctl or the kernel API */
	spin_lock_irqsave(lock, flags);
	if (b->srq)
		r = b->srq->ring;
	else
		r = b->send ? b->ep->sq_ring : b->ep->rq_ring;
	if (r)
		kdat_ring_completed(r, 1);
	spin_unlock_irqrestore(lock, flags);
}

/*
 * A ring's entry refused with @err before it reached the device: its
 * completion says why (the errno the ioctl would have returned, and the
 * nearest DTO status), on the EVD of @op, or, for an SRQ's buffer (no EP
 * took it yet), on the IA's async EVD as the SRQ's other events.
 */
void kdat_batch_refuse(struct kdat_batch *b, u32 op, u64 cookie, int err)
{
	struct kdat_event ev = {
		.event_number = KDAT_EVENT_DTO_COMPLETION,
		.cookie = cookie,
		.operation = op,
		.post_error = -err,
	};

	trace_kdat_refuse(b->kfile->tgid,
			  b->ep ? b->ep->obj.handle : b->srq->obj.handle, op,
			  cookie, err);
	if (b->ep) {
		ev.status = kdat_refused_status(err);
		ev.handle = b->ep->obj.handle;
		kdat_evd_push(op == KDAT_DTO_RECEIVE ? b->ep->recv_evd :
			      b->ep->req_evd, &ev);
	} else {
		ev.status = KDAT_DTO_ERR_LOCAL_EP;
		ev.handle = b->srq->obj.handle;
		ev.operation = KDAT_DTO_RECEIVE;
		kdat_ia_async_event(b->srq->pz->ia, &ev);
	}
	kdat_batch_completed(b);
}

/*
 * Keep the queue's device (its QP, MRs, AHs) while the batch fills and
 * posts: a removal refuses posts (posts_off), then waits for those under
 * way, so a post that sees it on takes what it found to the device. No
 * lock, no sleep: an EVD's upcall may post.
 */
void kdat_batch_start(struct kdat_batch *b)
	__acquires(&kdat_post_srcu)
{
	struct kdat_device *kdev = b->ep ? b->ep->pz->ia->kdev :
					   b->srq->pz->ia->kdev;

	WARN_ON_ONCE(b->lmr);	/* a batch not finished: a reference held */
	b->srcu = srcu_read_lock(&kdat_post_srcu);
	/*
	 * Read once, first: a batch that found posts on is one the removal
	 * waits for before anything of the device goes (its MRs and PDs,
	 * which the checks read, too); one that found them off touches none.
	 */
	b->off = READ_ONCE(kdev->posts_off);
}

/*
 * Check @req, take its slot and queue its work request in the batch; or
 * flush it at once (a DISCONNECTED EP), its event queued. Returns 0 (queued
 * or flushed) or the errno of the uapi table: nothing queued, nothing
 * held, the refusal the caller's to report.
 */
int kdat_batch_add(struct kdat_batch *b, const struct kdat_req *req)
{
	struct kdat_dto *dto = &b->dto[b->n];
	struct kdat_dto_ctx **ctx = &b->ctx[b->n];
	int err;

	if (b->off)
		return -ENODEV;		/* its device is going */
	memset(dto, 0, offsetof(struct kdat_dto, sge));
	dto->op = req->op;
	dto->flags = req->flags;
	dto->cookie = req->cookie;
	if (b->ep) {
		err = kdat_dto_validate(b, req, dto);
		if (!err)
			err = kdat_dto_begin(b->ep, dto, ctx);
		if (err)
			kdat_dto_release(dto);
		if (err > 0) {
			/* Flushed at once; its event is queued. */
			kdat_batch_completed(b);
			return 0;
		}
	} else {
		err = kdat_srq_validate(b, req, dto);
		if (!err && !b->srq->srq)
			err = -ENODEV;
		if (!err) {
			*ctx = kdat_srq_begin(b->srq, dto);
			if (!*ctx)
				err = -ENOMEM;
		}
	}
	if (err)
		return err;
	if (b->send)
		kdat_dto_send_wr(&b->swr[b->n], dto, *ctx);
	else
		kdat_dto_recv_wr(&b->rwr[b->n], dto, *ctx);
	b->n++;
	return 0;
}

/*
 * Post the batch as one chain, outside the queue's lock (drivers may do
 * real work in post), and let the device go. The EP's state may change
 * meanwhile: a QP moved to error flushes what is posted to it, and a
 * reset only happens from DISCONNECTED (a failed accept moves the EP there
 * first), which posts checked after it never reach the QP in. One checked
 * before may still arrive after the reset: a QP replaced goes only after
 * it (kdat_ep_qp_send()), and the QP in INIT takes a receive (kept for the
 * next connection) and refuses a send (its slot comes back: ENOMEM, as any
 * refused post). What the device refuses: in a ring's batch each entry
 * completes so; a batch of one returns -ENOMEM.
 */
int kdat_batch_finish(struct kdat_batch *b)
	__releases(&kdat_post_srcu)
{
	const struct ib_send_wr *bad_swr = NULL;
	const struct ib_recv_wr *bad_rwr = NULL;
	u32 i, n = b->n, first_bad = 0;
	int ret = 0;

	if (!n)
		goto out;
	for (i = 0; i + 1 < n; i++) {
		if (b->send)
			b->swr[i].wr.next = &b->swr[i + 1].wr;
		else
			b->rwr[i].next = &b->rwr[i + 1];
	}
	if (b->send)
		ret = kdat_ep_qp_send(b->ep, &b->swr[0].wr, &bad_swr);
	else if (b->ep)
		ret = kdat_ep_qp_recv(b->ep, &b->rwr[0], &bad_rwr);
	else
		ret = ib_post_srq_recv(b->srq->srq, &b->rwr[0], &bad_rwr);
	if (!ret)
		goto out;
	/* The device took none from the bad one on (all, if none is named). */
	for (i = 0; i < n; i++)
		if (b->send ? &b->swr[i].wr == bad_swr : &b->rwr[i] == bad_rwr)
			first_bad = i;
	for (i = first_bad; i < n; i++) {
		if (b->ep)
			kdat_dto_abort(b->ep, b->ctx[i]);
		else
			kdat_srq_abort(b->srq, b->ctx[i]);
		if (!b->one)
			kdat_batch_refuse(b, b->dto[i].op, b->dto[i].cookie,
					  -ENOMEM);
	}
	ret = -ENOMEM;
out:
	b->n = 0;
	if (b->lmr) {
		kdat_obj_put(&b->lmr->obj);
		b->lmr = NULL;
	}
	srcu_read_unlock(&kdat_post_srcu, b->srcu);
	return ret;
}

/* A batch of one, on the caller's stack. */
struct kdat_batch_one {
	struct kdat_batch b;
	struct kdat_dto dto;
	struct kdat_dto_ctx *ctx;
	union {
		union kdat_send_wr swr;
		struct ib_recv_wr rwr;
	};
};

/*
 * Post @req to @ep's queue of its op, or to @srq (@ep NULL): the ioctl's
 * and the kernel API's way in, a batch of one through the rings' pipeline.
 * The caller holds a reference on the queue's object. Returns 0 or the
 * errno of the uapi table; -EBUSY when that queue is fed by its ring.
 */
static noinline_for_stack int
kdat_post_queue(struct kdat_file *kfile, struct kdat_ep *ep,
		struct kdat_srq *srq, const struct kdat_req *req)
{
	bool send = ep && req->op != KDAT_DTO_RECEIVE;
	struct kdat_batch_one one;
	struct kdat_batch *b = &one.b;
	struct kdat_ring *ring;
	int ret, fin;

	kdat_batch_setup(b, kfile, ep, srq, send);
	b->one = true;
	b->dto = &one.dto;
	b->ctx = &one.ctx;
	if (send)
		b->swr = &one.swr;
	else
		b->rwr = &one.rwr;

	kdat_batch_start(b);
	if (srq)
		ring = READ_ONCE(srq->ring);
	else
		ring = send ? READ_ONCE(ep->sq_ring) : READ_ONCE(ep->rq_ring);
	ret = ring ? -EBUSY : kdat_batch_add(b, req);
	fin = kdat_batch_finish(b);
	if (!ret)
		ret = fin;
	if (ret)
		trace_kdat_refuse(kfile->tgid, ep ? ep->obj.handle :
				  srq->obj.handle, req->op, req->cookie, ret);
	return ret;
}

/*
 * The kernel API's posts (kdat_kapi.c): to @ep's queue of @req's op, or a
 * receive buffer to @srq, whose object @obj the consumer's pointer keeps
 * in memory. Returns 0 or the errno of the uapi table; -EBADF once the
 * object is being destroyed.
 */
static int kdat_post_obj(struct kdat_obj *obj, struct kdat_ep *ep,
			 struct kdat_srq *srq, const struct kdat_req *req)
{
	int ret;

	if (!kref_get_unless_zero(&obj->ref))
		return -EBADF;
	ret = READ_ONCE(obj->dead) ? -EBADF :
	      kdat_post_queue(obj->file, ep, srq, req);
	kdat_obj_put(obj);
	return ret;
}

int kdat_post_ep(struct kdat_ep *ep, const struct kdat_req *req)
{
	return kdat_post_obj(&ep->obj, ep, NULL, req);
}

int kdat_post_srq(struct kdat_srq *srq, const struct kdat_req *req)
{
	return kdat_post_obj(&srq->obj, NULL, srq, req);
}

/* KDAT_IOCTL_POST: one DTO, to an EP or (KDAT_POST_SRQ_RECV) an SRQ. */
int kdat_cmd_post(struct kdat_ucmd *ucmd)
{
	struct kdat_post *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	struct kdat_lmr_triplet iov[KDAT_DTO_MAX_IOV];
	struct kdat_req req = {
		.op = cmd->op,
		.flags = cmd->completion_flags,
		.cookie = cmd->cookie,
		.num = cmd->num_segments,
		.iov = iov,
		.remote = &cmd->remote,
		.ext = &cmd->ext,
	};
	struct kdat_srq *srq;
	struct kdat_ep *ep;
	int ret;

	if (cmd->__reserved)
		return -EINVAL;
	if (!kdat_op_is_request(cmd->op) && cmd->op != KDAT_DTO_RECEIVE &&
	    cmd->op != KDAT_POST_SRQ_RECV)
		return -EINVAL;
	/* The IOV's bound for its copy; the pipeline checks the queue's. */
	if (cmd->num_segments > KDAT_DTO_MAX_IOV)
		return -EINVAL;
	/* The one copy of the IOV; everything below checks this copy. */
	if (kdat_copy_from_user(iov, u64_to_user_ptr(cmd->iov),
				cmd->num_segments * sizeof(iov[0])))
		return -EFAULT;

	if (cmd->op == KDAT_POST_SRQ_RECV) {
		srq = kdat_srq_get(kfile, cmd->ep_handle);
		if (!srq)
			return -EBADF;
		req.op = KDAT_DTO_RECEIVE;
		ret = kdat_post_queue(kfile, NULL, srq, &req);
		kdat_obj_put(&srq->obj);
		return ret;
	}
	ep = kdat_get(kfile, cmd->ep_handle, struct kdat_ep, KDAT_OBJ_EP);
	if (!ep)
		return -EBADF;
	ret = kdat_post_queue(kfile, ep, NULL, &req);
	kdat_obj_put(&ep->obj);
	return ret;
}
