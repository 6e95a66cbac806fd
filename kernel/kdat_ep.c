// SPDX-License-Identifier: GPL-2.0
/*
 * kdat Endpoints: an RC QP created in the kernel when the Endpoint is
 * created, connected through the in-kernel RDMA CM. (A UD Endpoint's QP is
 * made here too; its datagrams' address handles are kdat_ud.c's.)
 *
 * The QP is the Endpoint's own, not the CM's (no rdma_create_qp()): it
 * exists before any connection, so receives can be posted in every state,
 * and it outlives connections (dat_ep_reset). It is created and moved to
 * INIT at once; on connection the RDMA CM only supplies the attributes
 * (rdma_init_qp_attr()) and kdat moves the QP to RTR and RTS itself, as a
 * user of the RDMA CM with its own QP does: the passive side before
 * rdma_accept(), the active side on RDMA_CM_EVENT_CONNECT_RESPONSE before
 * rdma_accept(id, NULL) sends the RTU.
 *
 * EP state lives under ep->lock (taken from the CQ softirq too); the
 * connection's cm_id under ep->cm_lock, a mutex also taken by the RDMA CM
 * handler for this EP. rdma_destroy_id() waits for running handlers, so it
 * is never called with cm_lock held.
 */
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/workqueue.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kdat.h"
#include "kdat_trace.h"

#define KDAT_EP_MAX_IOV		32
#define KDAT_CM_TIMEOUT_MS	5000
#define KDAT_GRACEFUL_MS	5000

#define S(x)	KDAT_EP_STATE_##x
#define KDAT_EP_NSTATES	(KDAT_EP_STATE_COMPLETION_PENDING + 1)

/*
 * The state table. DAT: a send or RDMA is valid when CONNECTED, and on a
 * DISCONNECTED Endpoint it is flushed at once; a receive is valid in every
 * state, flushed at once when the connection is going or gone; an RMR
 * bind needs a connection like a send. Connect from UNCONNECTED (or
 * DISCONNECTED: kdat starts afresh); accept with an UNCONNECTED EP (an
 * RSP's RESERVED one for its request); disconnect a connection or an
 * attempt (nothing to do when it is going or gone); reset a DISCONNECTED
 * EP; modify one that is not in use. Everything else: DAT_INVALID_STATE.
 */
static const u8 kdat_ep_table[KDAT_EP_OP_COUNT][KDAT_EP_NSTATES] = {
	[KDAT_EP_OP_POST_SEND] = {
		[S(CONNECTED)] = KDAT_EP_DO,
		[S(DISCONNECTED)] = KDAT_EP_FLUSH,
	},
	[KDAT_EP_OP_POST_RECV] = {
		[S(UNCONNECTED)] = KDAT_EP_DO,
		[S(RESERVED)] = KDAT_EP_DO,
		[S(PASSIVE_CONNECTION_PENDING)] = KDAT_EP_DO,
		[S(ACTIVE_CONNECTION_PENDING)] = KDAT_EP_DO,
		[S(TENTATIVE_CONNECTION_PENDING)] = KDAT_EP_DO,
		[S(CONNECTED)] = KDAT_EP_DO,
		[S(DISCONNECT_PENDING)] = KDAT_EP_FLUSH,
		[S(DISCONNECTED)] = KDAT_EP_FLUSH,
		[S(COMPLETION_PENDING)] = KDAT_EP_DO,
	},
	[KDAT_EP_OP_RMR_BIND] = {
		[S(CONNECTED)] = KDAT_EP_DO,
		[S(DISCONNECTED)] = KDAT_EP_FLUSH,
	},
	[KDAT_EP_OP_CONNECT] = {
		[S(UNCONNECTED)] = KDAT_EP_DO,
		[S(DISCONNECTED)] = KDAT_EP_DO,
	},
	[KDAT_EP_OP_ACCEPT] = {
		[S(UNCONNECTED)] = KDAT_EP_DO,
	},
	[KDAT_EP_OP_ACCEPT_RSP] = {
		[S(RESERVED)] = KDAT_EP_DO,
	},
	[KDAT_EP_OP_RESERVE] = {
		[S(UNCONNECTED)] = KDAT_EP_DO,
	},
	[KDAT_EP_OP_DISCONNECT] = {
		[S(PASSIVE_CONNECTION_PENDING)] = KDAT_EP_DO,
		[S(ACTIVE_CONNECTION_PENDING)] = KDAT_EP_DO,
		[S(CONNECTED)] = KDAT_EP_DO,
		[S(DISCONNECT_PENDING)] = KDAT_EP_NOP,
		[S(DISCONNECTED)] = KDAT_EP_NOP,
	},
	[KDAT_EP_OP_RESET] = {
		[S(UNCONNECTED)] = KDAT_EP_NOP,
		[S(DISCONNECTED)] = KDAT_EP_DO,
	},
	[KDAT_EP_OP_MODIFY] = {
		[S(UNCONNECTED)] = KDAT_EP_DO,
		[S(RESERVED)] = KDAT_EP_DO,
	},
};

#undef S

enum kdat_ep_verdict kdat_ep_allowed(u32 state, enum kdat_ep_op op)
{
	if (state >= KDAT_EP_NSTATES || op >= KDAT_EP_OP_COUNT)
		return KDAT_EP_REFUSE;
	return kdat_ep_table[op][state];
}

static void kdat_ep_set_state(struct kdat_ep *ep, enum kdat_ep_state state)
{
	unsigned long flags;

	spin_lock_irqsave(&ep->lock, flags);
	ep->state = state;
	/* Rings show it, so that libdat answers DAT_INVALID_STATE itself. */
	if (ep->sq_ring)
		kdat_ring_set_ep_state(ep->sq_ring, state);
	if (ep->rq_ring)
		kdat_ring_set_ep_state(ep->rq_ring, state);
	spin_unlock_irqrestore(&ep->lock, flags);
}

static enum kdat_ep_state kdat_ep_state(struct kdat_ep *ep)
{
	unsigned long flags;
	enum kdat_ep_state state;

	spin_lock_irqsave(&ep->lock, flags);
	state = ep->state;
	spin_unlock_irqrestore(&ep->lock, flags);
	return state;
}

/*
 * A connection event of @ep, to its connection EVD. An EP made without
 * one (the consumer is not interested: DAT_HANDLE_NULL) cannot connect
 * or be accepted (kdat_ep_connect_do(), kdat_cr_reply_do(); an RSP of
 * it is made, as with OFA's provider, and its requests can only be
 * rejected), so it has no connection to tell of; the event is dropped
 * should one come all the same.
 */
void kdat_ep_conn_push(struct kdat_ep *ep, struct kdat_event *ev)
{
	if (ep->conn_evd)
		kdat_evd_push(ep->conn_evd, ev);
}

void kdat_ep_conn_event(struct kdat_ep *ep, u32 event_number)
{
	struct kdat_event ev = {
		.event_number = event_number,
		.handle = ep->obj.handle,
		.private_data_len = ep->pdata_len,
	};

	trace_kdat_conn_event(ep->obj.file->tgid, ep->obj.handle, event_number,
			      READ_ONCE(ep->state));
	kdat_ep_conn_push(ep, &ev);
}

/*
 * The remote access an EP's QP grants: RDMA reads and writes, and atomics
 * where the device has them (rxe, for one, refuses an atomic at a QP
 * without IB_ACCESS_REMOTE_ATOMIC): the LMRs and RMRs decide.
 */
static int kdat_ep_qp_access(const struct kdat_ep *ep)
{
	return IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ |
	       IB_ACCESS_REMOTE_WRITE |
	       (ep->pz->ia->limits & KDAT_IA_NO_ATOMICS ?
		0 : IB_ACCESS_REMOTE_ATOMIC);
}

/*
 * The transport's retries before a request fails. The IB maximum is 7,
 * which OFA's provider asks for, but rxe takes 7 as "retry for ever"
 * (as the RNR count's 7 is): a peer gone for good would never break the
 * connection. 6 by default, on both sides of every connection (the
 * passive side gets the count the requester's CM sent: clamped here).
 */
static unsigned int retry_count = 6;
module_param(retry_count, uint, 0644);
MODULE_PARM_DESC(retry_count,
		 "RC transport retries before a request fails (0..7; rxe takes 7 as for ever)");

/*
 * The QP may take the SRQ's receives from now on (@rtr), or, its move
 * to RTR failed, did not. Set before the move: the device may raise
 * LAST_WQE_REACHED as soon as the QP is there.
 */
static void kdat_ep_set_rtr(struct kdat_ep *ep, bool rtr)
{
	unsigned long flags;

	if (!ep->srq)
		return;
	spin_lock_irqsave(&ep->lock, flags);
	ep->qp_rtr = rtr;
	spin_unlock_irqrestore(&ep->lock, flags);
}

static int kdat_ep_modify(struct kdat_ep *ep, struct rdma_cm_id *id,
			  enum ib_qp_state state)
{
	struct ib_qp_attr attr = { .qp_state = state };
	int mask, ret;

	ret = rdma_init_qp_attr(id, &attr, &mask);
	if (ret)
		return ret;
	if (state == IB_QPS_INIT) {
		/*
		 * The RDMA CM's INIT attributes grant no remote access before
		 * the connection exists (the active side): the EP's own.
		 */
		attr.qp_access_flags = kdat_ep_qp_access(ep);
		mask |= IB_QP_ACCESS_FLAGS;
	} else if (state == IB_QPS_RTR) {
		attr.max_dest_rd_atomic = min_t(u32, attr.max_dest_rd_atomic,
						ep->attr.max_rdma_read_in);
	} else if (state == IB_QPS_RTS) {
		attr.max_rd_atomic = min_t(u32, attr.max_rd_atomic,
					   ep->attr.max_rdma_read_out);
		if (mask & IB_QP_RETRY_CNT)
			attr.retry_cnt = min_t(u32, attr.retry_cnt,
					       min(READ_ONCE(retry_count), 7U));
	}
	/* From RTR on, a QP on an SRQ may take the SRQ's receives. */
	if (state == IB_QPS_RTR)
		kdat_ep_set_rtr(ep, true);
	ret = ib_modify_qp(ep->qp, &attr, mask);
	if (ret && state == IB_QPS_RTR)
		kdat_ep_set_rtr(ep, false);
	return ret;
}

/* INIT (again), RTR and RTS for the connection on @id. */
static int kdat_ep_qp_connect(struct kdat_ep *ep, struct rdma_cm_id *id)
{
	int ret;

	ret = kdat_ep_modify(ep, id, IB_QPS_INIT);
	if (!ret)
		ret = kdat_ep_modify(ep, id, IB_QPS_RTR);
	if (!ret)
		ret = kdat_ep_modify(ep, id, IB_QPS_RTS);
	return ret;
}

static int kdat_ep_qp_to_init(struct kdat_ep *ep, struct ib_qp *qp)
{
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.pkey_index = 0,
		.port_num = ep->pz->ia->port_num,
		.qp_access_flags = kdat_ep_qp_access(ep),
	};

	return ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			    IB_QP_PORT | IB_QP_ACCESS_FLAGS);
}

/*
 * Post to @ep's QP: the one way the data path does. The QP is read once,
 * in an RCU read-side section: one replaced meanwhile (kdat_ep_qp_renew())
 * is destroyed only after a grace period, and a post that still found it
 * finds it in ERR, which flushes what is posted. Drivers post to a
 * kernel QP without sleeping (ULPs post from completion handlers).
 */
int kdat_ep_qp_send(struct kdat_ep *ep, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	int ret;

	rcu_read_lock();
	ret = kdat_post_send(ep->pz->ia->kdev, READ_ONCE(ep->qp), wr, bad_wr);
	rcu_read_unlock();
	return ret;
}

int kdat_ep_qp_recv(struct kdat_ep *ep, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	int ret;

	rcu_read_lock();
	ret = ib_post_recv(READ_ONCE(ep->qp), wr, bad_wr);
	rcu_read_unlock();
	return ret;
}

/*
 * An EP joins its SRQ: its place in the SRQ's map and, on a device not
 * seen to raise LAST_WQE_REACHED, its barrier QP (see struct kdat_ep), in
 * INIT so that ib_drain_rq() can move it to ERR. Its one receive
 * completion has room in the CQ: the EP committed one more than the SRQ's
 * buffers for its receive queue's drain.
 */
static int kdat_ep_srq_join(struct kdat_ep *ep, struct ib_pd *pd,
			    struct ib_cq *cq)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.send_cq = cq,
		.recv_cq = cq,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = {
			.max_send_wr = 1,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.port_num = ep->pz->ia->port_num,
	};
	struct ib_qp *qp = NULL;
	int ret = 0;

	if (!kdat_dev_says_last_wqe(ep->pz->ia->kdev)) {
		qp = ib_create_qp(pd, &init);
		if (IS_ERR(qp))
			return PTR_ERR(qp);
		ret = kdat_ep_qp_to_init(ep, qp);
	}
	if (!ret) {
		ep->srq_key = ep->qp;
		/* A rare reuse of a QP address still being reaped. */
		ret = kdat_srq_add_ep(ep->srq, ep) ? -ENOMEM : 0;
	}
	if (ret) {
		if (qp)
			ib_destroy_qp(qp);
		return ret;
	}
	ep->barrier_qp = qp;
	return 0;
}

static int kdat_ep_qp_reset(struct kdat_ep *ep);

static void kdat_ep_qp_error(struct kdat_ep *ep)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

	ib_modify_qp(ep->qp, &attr, IB_QP_STATE);
}

/*
 * The QP's last receive is known taken (what IB calls the last WQE
 * reached): DAT_ASYNC_ERROR_EP_BROKEN on the IA's async EVD, and the wait
 * for it is over. Any context.
 */
static void kdat_ep_last_wqe_tell(struct kdat_ep *ep)
{
	struct kdat_event ev = {
		.event_number = KDAT_EVENT_ASYNC_EP_BROKEN,
		.handle = ep->obj.handle,
	};

	kdat_ia_async_event(ep->pz->ia, &ev);
	complete(&ep->last_wqe_done);
}

/* The last-WQE marker completed: no receive of the EP's QP is left. */
static void kdat_ep_last_wqe_done(struct ib_cq *cq, struct ib_wc *wc)
{
	kdat_ep_last_wqe_tell(container_of(wc->wr_cqe, struct kdat_ep,
					   last_wqe_cqe));
}

/*
 * Without a barrier QP, the device's word: told after the receive
 * completions the CQ holds, as a marker's would be (the consumer reads
 * them before it).
 */
static void kdat_ep_last_wqe_work(struct work_struct *work)
{
	struct kdat_ep *ep = container_of(work, struct kdat_ep,
					  last_wqe_work);

	kdat_cq_flush(&ep->recv_evd->kcq);
	kdat_ep_last_wqe_tell(ep);
}

/*
 * Without a barrier QP, the connection's end is told once both are known:
 * it ended (@last_wqe_wanted), and the device said LAST_WQE_REACHED or
 * will not now (@last_wqe_seen). Queued under @lock, so that one who
 * finds @last_wqe_told set may flush the work and know it told.
 */
static void kdat_ep_last_wqe_check(struct kdat_ep *ep)
{
	lockdep_assert_held(&ep->lock);
	if (ep->last_wqe_wanted && ep->last_wqe_seen && !ep->last_wqe_told) {
		ep->last_wqe_told = true;
		queue_work(system_highpri_wq, &ep->last_wqe_work);
	}
}

/*
 * The connection ended. A QP that never went on to RTR took none of the
 * SRQ's receives: its end is all there is to know. Any context.
 */
static void kdat_ep_last_wqe_ended(struct kdat_ep *ep)
{
	unsigned long flags;

	spin_lock_irqsave(&ep->lock, flags);
	ep->last_wqe_wanted = true;
	if (!ep->qp_rtr)
		ep->last_wqe_seen = true;
	kdat_ep_last_wqe_check(ep);
	spin_unlock_irqrestore(&ep->lock, flags);
}

/* The device will not say it now (its QP is about to go). */
static void kdat_ep_last_wqe_given_up(struct kdat_ep *ep)
{
	unsigned long flags;

	spin_lock_irqsave(&ep->lock, flags);
	ep->last_wqe_seen = true;
	kdat_ep_last_wqe_check(ep);
	spin_unlock_irqrestore(&ep->lock, flags);
}

/*
 * The device's event handler of the EP's QP: any context, until the QP is
 * destroyed. On an SRQ, LAST_WQE_REACHED: the QP takes no more of the
 * SRQ's receives. @barrier_qp is set before the QP can leave INIT and
 * cleared after it is gone.
 */
static void kdat_ep_qp_event(struct ib_event *event, void *context)
{
	struct kdat_ep *ep = context;
	unsigned long flags;
	bool seen;

	if (event->event != IB_EVENT_QP_LAST_WQE_REACHED || !ep->srq)
		return;
	kdat_dev_saw_last_wqe(ep->pz->ia->kdev);
	/* With a barrier QP its marker says it. */
	if (ep->barrier_qp)
		return;
	/*
	 * Before RTR the QP took nothing: an event then (a previous
	 * connection's, late, or one for a QP that never connected) says
	 * nothing of this connection. Checked, noted and told in one go: a
	 * reset between them would give this connection's word to the next.
	 */
	spin_lock_irqsave(&ep->lock, flags);
	seen = ep->qp_rtr;
	if (seen) {
		ep->last_wqe_seen = true;
		kdat_ep_last_wqe_check(ep);
	}
	spin_unlock_irqrestore(&ep->lock, flags);
	if (seen)
		wake_up(&ep->last_wqe_wq);
}

/* Whether the device said it, or the QP never may have taken receives. */
static bool kdat_ep_last_wqe_known(struct kdat_ep *ep)
{
	unsigned long flags;
	bool known;

	spin_lock_irqsave(&ep->lock, flags);
	known = !ep->qp_rtr || ep->last_wqe_seen;
	spin_unlock_irqrestore(&ep->lock, flags);
	return known;
}

/*
 * The QP of an EP on an SRQ went to ERR (the connection ended): it takes
 * no more receives from the SRQ. A device reports that as
 * IB_EVENT_QP_LAST_WQE_REACHED, which OFA DAPL delivers as
 * DAT_ASYNC_ERROR_EP_BROKEN and DAT programs wait for (dtestsrq) before
 * they free the EP. Where the device was not seen to raise it, kdat
 * flushes a marker through the barrier QP instead, which completes after
 * the QP's own receive completions. The barrier QP stays in ERR; a recv
 * posted there is flushed at once, so it serves the next connection and
 * the teardown drain too. cm_lock held.
 */
static void kdat_ep_last_wqe(struct kdat_ep *ep)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct ib_recv_wr wr = { .wr_cqe = &ep->last_wqe_cqe };
	const struct ib_recv_wr *bad;

	if (!ep->srq || ep->last_wqe_posted)
		return;
	if (!ep->barrier_qp) {
		ep->last_wqe_posted = true;
		kdat_ep_last_wqe_ended(ep);
		return;
	}
	reinit_completion(&ep->last_wqe_done);
	if (ib_modify_qp(ep->barrier_qp, &attr, IB_QP_STATE)) {
		complete(&ep->last_wqe_done);
		return;
	}
	if (ib_post_recv(ep->barrier_qp, &wr, &bad)) {
		complete(&ep->last_wqe_done);
		return;
	}
	ep->last_wqe_posted = true;
}

/*
 * Wait up to @timeout (jiffies) on @wq until @done(@ep), as
 * wait_event_timeout(), from a caller that may hold the device's rwsem
 * for read: the device's removal, which waits to take it for write, ends
 * the wait (it sets kdev->going first, looked at every 50 ms), so that a
 * device that never answers delays the removal by no more. True when
 * @done.
 */
bool kdat_ep_wait(struct kdat_ep *ep, wait_queue_head_t *wq,
		  bool (*done)(struct kdat_ep *ep), unsigned long timeout)
{
	struct kdat_device *kdev = ep->pz->ia->kdev;
	unsigned long end = jiffies + timeout;
	long left;

	for (;;) {
		if (done(ep))
			return true;
		left = (long)(end - jiffies);
		if (left <= 0 || READ_ONCE(kdev->going))
			return false;
		wait_event_timeout(*wq, done(ep),
				   min_t(long, left, HZ / 20));
	}
}

/*
 * How long the QP of an EP on an SRQ without a barrier QP waits, in ERR,
 * for the device's LAST_WQE_REACHED before it is reset or destroyed.
 */
#define KDAT_LAST_WQE_WAIT	(10 * HZ)

/*
 * An EP on an SRQ without a barrier QP, its QP in ERR, before the QP is
 * reset or destroyed (either may clean the CQ of the QP's completions, as
 * mlx5's does): the device's LAST_WQE_REACHED first, if the QP may have
 * taken the SRQ's receives (@qp_rtr; 10 s at most, ended by the device's
 * removal), then what the receive CQ holds is handed on: every SRQ
 * receive the QP took has been handled. Process context.
 */
static void kdat_ep_srq_settle(struct kdat_ep *ep)
{
	if (!ep->srq || ep->barrier_qp)
		return;
	if (!kdat_ep_wait(ep, &ep->last_wqe_wq, kdat_ep_last_wqe_known,
			  KDAT_LAST_WQE_WAIT))
		pr_debug("kdat: EP %u: no LAST_WQE_REACHED in %d s\n",
			 ep->obj.handle, KDAT_LAST_WQE_WAIT / HZ);
	kdat_cq_flush(&ep->recv_evd->kcq);
}

/*
 * Wait until the connection's last WQE was told (a marker still in flight:
 * the barrier QP has room for one completion at a time, see
 * kdat_ep_srq_join()). Without a barrier QP, after kdat_ep_srq_settle():
 * the device said it, or will not now; it is told if it was not. cm_lock
 * held, or the EP is being torn down.
 */
static void kdat_ep_last_wqe_wait(struct kdat_ep *ep)
{
	if (!ep->last_wqe_posted)
		return;
	if (ep->barrier_qp) {
		wait_for_completion(&ep->last_wqe_done);
	} else {
		kdat_ep_last_wqe_given_up(ep);
		flush_work(&ep->last_wqe_work);
	}
	ep->last_wqe_posted = false;
}

/* The QP is in RESET: its next connection's end is told anew. */
static void kdat_ep_last_wqe_rearm(struct kdat_ep *ep)
{
	unsigned long flags;

	spin_lock_irqsave(&ep->lock, flags);
	ep->qp_rtr = false;
	ep->last_wqe_wanted = false;
	ep->last_wqe_seen = false;
	ep->last_wqe_told = false;
	spin_unlock_irqrestore(&ep->lock, flags);
}

/* What the peer sent with its accept or reject (@data NULL: nothing). */
void kdat_ep_save_pdata(struct kdat_ep *ep, const void *data, u32 len)
{
	unsigned long flags;

	spin_lock_irqsave(&ep->lock, flags);
	ep->pdata_len = data ? min_t(u32, len, sizeof(ep->pdata)) : 0;
	if (ep->pdata_len)
		memcpy(ep->pdata, data, ep->pdata_len);
	spin_unlock_irqrestore(&ep->lock, flags);
}

/*
 * The connection is over (peer disconnect, our disconnect done, error):
 * flush what is posted, tell the consumer. Called with cm_lock held.
 */
static void kdat_ep_connection_ended(struct kdat_ep *ep, u32 event_number)
{
	kdat_ep_qp_error(ep);
	kdat_ep_set_state(ep, KDAT_EP_STATE_DISCONNECTED);
	kdat_ep_conn_event(ep, event_number);
	kdat_ep_last_wqe(ep);
}

/* Both sides, once connected: addresses, state, event. cm_lock held. */
static unsigned int keepalive_ms = 5000;
module_param(keepalive_ms, uint, 0644);
MODULE_PARM_DESC(keepalive_ms,
		 "A connected EP writes 0 bytes to its peer this often, so that a dead peer breaks it even when idle (ms; 0: never)");

/*
 * The RC ACK timeout of new connections: 4.096 us x 2^19 = 2.1 s, on
 * every device (iWARP's transport is TCP, which keeps its own timers: the
 * RDMA CM does not apply it there). What it bounds is the same everywhere:
 * a peer gone is noticed after (retry_count + 1) timeouts, 15 s. What the
 * RDMA CM picks left alone (0) follows from the path and differs by kernel
 * and fabric: on RoCE, 6.1's gives 2^19 and 6.12's 2^17 (0.54 s: RoCE's
 * packet lifetime went from 18 to 16); on InfiniBand the subnet manager's
 * packet lifetime decides.
 *
 * Why not shorter: a device may count a request's wait on RNR NAKs (a
 * peer that has posted no receive yet) against its transport retries, as
 * rxe does (its retransmit timer runs on through the RNR waits), where
 * the IB rule is an RNR retry count of 7 waiting for ever. There a DAT
 * consumer whose peer posts its receive late would lose the connection
 * after (retry_count + 1) ACK timeouts: 2^19 gives it 15 s, where 2^17
 * gave a loaded 2-CPU host running four senders into one receiving thread
 * too little (3.8 s). On a device that keeps the two apart the cost is a
 * packet lost on the wire retried after 2.1 s rather than after the
 * path's timeout: set it lower there, or 0 for the RDMA CM's own.
 */
static unsigned int ack_timeout = 19;
module_param(ack_timeout, uint, 0644);
MODULE_PARM_DESC(ack_timeout,
		 "RC local ACK timeout of new connections, 4.096 us x 2^N (1..31; 0: the RDMA CM's own)");

/*
 * The minimum RNR NAK timer of new connections' QPs, in the IB encoding:
 * how long a peer whose send found no receive posted here waits before it
 * sends again. The RDMA CM leaves it at 0, which IB reads as 655.36 ms:
 * a receiver a moment late with its receive cost its sender 0.66 s per
 * NAK (on rxe, two processes exchanging 64 B sends at depth 1 ran at a
 * few hundred messages a second). 12 is 0.64 ms, the value OFA's
 * socket-CM providers set (DAPL_RNR_TIMER); rxe waits at least a jiffy.
 */
static unsigned int rnr_timer = IB_RNR_TIMER_000_64;
module_param(rnr_timer, uint, 0644);
MODULE_PARM_DESC(rnr_timer,
		 "RC minimum RNR NAK timer of new connections, IB encoding (0..31; 0: 655 ms, 12: 0.64 ms)");

/* An RC connection's timers, before its QP reaches RTR, on either side. */
static void kdat_ep_set_timers(struct rdma_cm_id *id)
{
	unsigned int t = READ_ONCE(ack_timeout);
	unsigned int rnr = READ_ONCE(rnr_timer);

	if (t && t < 32)
		rdma_set_ack_timeout(id, t);
	if (rnr < 32 && id->qp_type == IB_QPT_RC)
		rdma_set_min_rnr_timer(id, rnr);
}

static void kdat_ep_ka_arm(struct kdat_ep *ep)
{
	unsigned int ms = READ_ONCE(keepalive_ms);

	if (ms && !ep->ud)
		mod_delayed_work(system_wq, &ep->ka_work,
				 msecs_to_jiffies(ms));
}

static void kdat_ep_ka_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kdat_ep *ep = container_of(wc->wr_cqe, struct kdat_ep, ka_cqe);
	unsigned long flags;

	spin_lock_irqsave(&ep->lock, flags);
	ep->ka_posted = false;
	spin_unlock_irqrestore(&ep->lock, flags);
	if (wc->status != IB_WC_SUCCESS && wc->status != IB_WC_WR_FLUSH_ERR)
		kdat_ep_dto_error(ep);
}

/*
 * The keepalive: under cm_lock, so that the QP is there (the teardown
 * clears cm_id under it before the QP goes, then cancels this work).
 * A zero-length RDMA write needs no address or rkey at the peer.
 */
static void kdat_ep_ka_work(struct work_struct *work)
{
	struct kdat_ep *ep = container_of(to_delayed_work(work),
					  struct kdat_ep, ka_work);
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_cqe = &ep->ka_cqe,
			.opcode = IB_WR_RDMA_WRITE,
			.send_flags = IB_SEND_SIGNALED,
		},
	};
	unsigned long flags;
	bool connected, post;

	mutex_lock(&ep->cm_lock);
	if (!ep->cm_id)
		goto out;
	spin_lock_irqsave(&ep->lock, flags);
	connected = ep->state == KDAT_EP_STATE_CONNECTED;
	post = connected && !ep->ka_posted;
	if (post)
		ep->ka_posted = true;
	spin_unlock_irqrestore(&ep->lock, flags);
	if (post && kdat_ep_qp_send(ep, &wr.wr, NULL)) {
		spin_lock_irqsave(&ep->lock, flags);
		ep->ka_posted = false;
		spin_unlock_irqrestore(&ep->lock, flags);
	}
	if (connected)
		kdat_ep_ka_arm(ep);
out:
	mutex_unlock(&ep->cm_lock);
}

static void kdat_ep_established(struct kdat_ep *ep, struct rdma_cm_id *id)
{
	unsigned long flags;

	memcpy(&ep->remote, &id->route.addr.dst_addr, sizeof(ep->remote));
	memcpy(&ep->local, &id->route.addr.src_addr, sizeof(ep->local));
	spin_lock_irqsave(&ep->lock, flags);
	ep->conn_gen++;
	spin_unlock_irqrestore(&ep->lock, flags);
	kdat_ep_set_state(ep, KDAT_EP_STATE_CONNECTED);
	kdat_ep_conn_event(ep, KDAT_EVENT_CONNECTION_ESTABLISHED);
	kdat_ep_ka_arm(ep);
}

/*
 * A DTO of @ep completed in error, not flushed: the transport gave up
 * (the peer is gone, or unreachable past the retries), the peer refused
 * an access, or a receive was too small. The QP is in ERR; the connection
 * cannot carry anything more. As OFA's provider does, kdat ends it: the
 * peer is told (a DREQ), the EP goes to DISCONNECTED, and
 * DAT_CONNECTION_EVENT_BROKEN follows the DTO's own event. Any context:
 * the CM work runs in a workqueue (kdat_ep_broken_work()).
 */
void kdat_ep_dto_error(struct kdat_ep *ep)
{
	unsigned long flags;
	bool queue = false;

	if (ep->ud)
		return;		/* no connection to break */
	spin_lock_irqsave(&ep->lock, flags);
	if (ep->state == KDAT_EP_STATE_CONNECTED && !ep->broken_queued) {
		ep->broken_queued = true;
		ep->broken_gen = ep->conn_gen;
		queue = true;
	}
	spin_unlock_irqrestore(&ep->lock, flags);
	if (queue)
		queue_work(system_highpri_wq, &ep->broken_work);
}

static void kdat_ep_broken_work(struct work_struct *work)
{
	struct kdat_ep *ep = container_of(work, struct kdat_ep, broken_work);
	unsigned long flags;
	bool same;

	mutex_lock(&ep->cm_lock);
	spin_lock_irqsave(&ep->lock, flags);
	ep->broken_queued = false;
	same = ep->state == KDAT_EP_STATE_CONNECTED &&
	       ep->conn_gen == ep->broken_gen;
	spin_unlock_irqrestore(&ep->lock, flags);
	/* No cm_id: the teardown has begun, and the QP may be going. */
	if (same && ep->cm_id) {
		rdma_disconnect(ep->cm_id);
		kdat_ep_connection_ended(ep, KDAT_EVENT_CONNECTION_BROKEN);
	}
	mutex_unlock(&ep->cm_lock);
}

/*
 * An id taken from ep->cm_id, under cm_lock: true when the caller is to
 * destroy it (outside cm_lock), false when kdat_ep_connect_run() is
 * connecting it and destroys it when its connect returns (cut short
 * here: kdat_conn_hurry()); counted in
 * ids_dying until then, so that whoever needs no id of the EP left (a
 * reset, the teardown) waits on idle_wq.
 */
static bool kdat_ep_id_put(struct kdat_ep *ep, struct rdma_cm_id *id)
{
	lockdep_assert_held(&ep->cm_lock);
	if (!id || id != ep->connecting)
		return id != NULL;
	WRITE_ONCE(ep->ids_dying, ep->ids_dying + 1);
	/* Waiting for its turn or in TCP's connect: not for long. */
	kdat_conn_hurry(ep);
	return false;
}

/* One id fewer in ids_dying; cm_lock not held. */
static void kdat_ep_id_gone(struct kdat_ep *ep)
{
	mutex_lock(&ep->cm_lock);
	WRITE_ONCE(ep->ids_dying, ep->ids_dying - 1);
	mutex_unlock(&ep->cm_lock);
	wake_up(&ep->idle_wq);
}

/*
 * The active side's connect parameters, into @param, the private data
 * copied to @pdata (KDAT_PRIVATE_DATA_BUF bytes); and the QP may take an
 * SRQ's receives from now on where the CM moves it on by itself (iWARP's).
 * cm_lock held.
 */
static void kdat_ep_connect_param(struct kdat_ep *ep, struct rdma_cm_id *id,
				  struct rdma_conn_param *param, u8 *pdata)
{
	memcpy(pdata, ep->pdata, ep->pdata_len);
	param->private_data = pdata;
	param->private_data_len = ep->pdata_len;
	param->responder_resources = ep->attr.max_rdma_read_in;
	param->initiator_depth = ep->attr.max_rdma_read_out;
	param->flow_control = 1;		/* as OFA's provider asks */
	param->retry_count = min(READ_ONCE(retry_count), 7U);
	param->rnr_retry_count = 7;
	param->qp_num = ep->qpn;
	if (kdat_dev_cm_moves_qp(id->device, id->port_num))
		kdat_ep_set_rtr(ep, true);
}

/* The connect of @id did not start (@ret): cm_lock held. */
static void kdat_ep_connect_failed(struct kdat_ep *ep, int ret)
{
	/* No connection was made: the QP took nothing. */
	kdat_ep_set_rtr(ep, false);
	if (kdat_ep_state(ep) == KDAT_EP_STATE_ACTIVE_CONNECTION_PENDING)
		kdat_ep_connection_ended(ep, ret == -ETIMEDOUT ?
					 KDAT_EVENT_CONNECTION_TIMED_OUT :
					 KDAT_EVENT_CONNECTION_UNREACHABLE);
}

/*
 * The active side's connect, once its route is resolved, where it may
 * block (kdat_dev_connect_blocks(): iWARP's is a TCP connect, which siw
 * makes blocking, kernel_bindconnect(), and which to a peer that drops
 * SYNs returns when TCP gives up, two minutes later): from a thread of
 * kdat's, in its owner's turn (kdat_connect.c), not from the RDMA CM's
 * handler, which the CM runs on a queue every connection of the host
 * shares (rdma_cm, ordered). Nor under cm_lock, which the EP's other CM
 * events take under the id's handler mutex, which rdma_connect() takes:
 * the id is kept alive by ep->connecting instead (kdat_ep_id_put()), and
 * the EP by the reference the handler took (its file's close waits for
 * this connect, which the close cuts short). One cut short before it was
 * made runs from the CM's queue (kdat_ep_connect_work()) and makes
 * nothing.
 */
void kdat_ep_connect_run(struct kdat_ep *ep)
{
	/* Alive until the EP's reference is put, at the end. */
	struct kdat_device *kdev = ep->pz->ia->kdev;
	struct rdma_conn_param param = {};
	u8 pdata[KDAT_PRIVATE_DATA_BUF];
	struct rdma_cm_id *id;
	bool go, dead;
	int ret = 0;

	/* Counted when queued (kdat_dev_connect_begin()). */
	mutex_lock(&ep->cm_lock);
	id = ep->connecting;
	/* Not for an EP given up, or going (its file closing). */
	go = ep->cm_id == id && !READ_ONCE(ep->obj.dead) &&
	     kdat_ep_state(ep) == KDAT_EP_STATE_ACTIVE_CONNECTION_PENDING;
	if (go && READ_ONCE(kdev->no_connects)) {
		/* The device's removal waits for us: be quick. */
		go = false;
		ret = -ENODEV;	/* unreachable */
	} else if (go && kdat_conn_hurried(ep)) {
		/*
		 * Cut short for no reason seen above: no thread could be
		 * made, or a removal whose flag this read too early.
		 */
		go = false;
		ret = -ENOMEM;	/* unreachable */
	}
	if (go)
		kdat_ep_connect_param(ep, id, &param, pdata);
	mutex_unlock(&ep->cm_lock);

	/* Cut short by SIGKILL (kdat_conn_hurry()): -ERESTARTSYS. */
	if (go)
		ret = rdma_connect(id, &param);
	kdat_dev_connect_end(kdev);

	mutex_lock(&ep->cm_lock);
	dead = ep->cm_id != id;
	/*
	 * Done with before anyone can learn that it is over: once
	 * ep->connecting is NULL and the failure told, or the id gone (a
	 * reset waits for it), the EP may connect again, and its connect
	 * then takes conn_node and conn_state anew.
	 */
	if (!dead)
		kdat_conn_done(ep);
	ep->connecting = NULL;
	/* An EP being destroyed tells no one. */
	if (ret && !dead && !READ_ONCE(ep->obj.dead))
		kdat_ep_connect_failed(ep, ret);
	else if (ret)
		kdat_ep_set_rtr(ep, false);
	mutex_unlock(&ep->cm_lock);
	if (dead) {
		/*
		 * Taken from cm_id meanwhile, and left to us: its destroy may
		 * wait for the peer's MPA reply, in our owner's place.
		 */
		rdma_destroy_id(id);
		kdat_conn_done(ep);
		kdat_ep_id_gone(ep);
	}
	kdat_obj_put(&ep->obj);
}

static void kdat_ep_connect_work(struct work_struct *work)
{
	kdat_ep_connect_run(container_of(work, struct kdat_ep, connect_work));
}

/*
 * RDMA CM events of a connection owned by @ep, from kdat_cm_handler().
 * An id that is no use to @ep and is on another device than its QP (the
 * EP's own teardown, and so kdat's removal of the EP's device, never sees
 * it) is let go here, under cm_lock, so that no one else destroys it, and
 * destroyed by a work item (kdat_cm_id_free()) holding a reference to the
 * EP, so that the EP outlives this handler and the id's later events.
 * Kept, it would hold that other device's removal in the CM for as long
 * as the EP lives.
 */
int kdat_ep_cm_event(struct kdat_ep *ep, struct rdma_cm_id *id,
		     struct rdma_cm_event *event)
{
	enum kdat_ep_state state;
	bool release = false;
	int ret;

	mutex_lock(&ep->cm_lock);
	if (ep->cm_id != id)
		goto out;	/* an old connection's late event */
	state = kdat_ep_state(ep);

	switch (event->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		/* Steps of our connect: not if it was given up meanwhile. */
		if (state != KDAT_EP_STATE_ACTIVE_CONNECTION_PENDING)
			goto out;
		break;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		/*
		 * The end of an attempt or of a connection has one event. An
		 * attempt given up (kdat_ep_disconnect_do()) had its
		 * DISCONNECTED; the CM's late word on it (the peer's reject,
		 * the REQ timing out) says nothing new. During our own
		 * disconnect, the connection ends as asked.
		 */
		if (state == KDAT_EP_STATE_DISCONNECT_PENDING) {
			kdat_ep_connection_ended(ep,
				KDAT_EVENT_CONNECTION_DISCONNECTED);
			goto out;
		}
		if (state != KDAT_EP_STATE_ACTIVE_CONNECTION_PENDING &&
		    state != KDAT_EP_STATE_PASSIVE_CONNECTION_PENDING &&
		    state != KDAT_EP_STATE_TENTATIVE_CONNECTION_PENDING &&
		    state != KDAT_EP_STATE_CONNECTED)
			goto out;
		break;
	default:
		break;
	}

	switch (event->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (id->device != ep->qp->device ||
		    id->port_num != ep->pz->ia->port_num) {
			/* The route leaves by another device or port. */
			kdat_ep_connection_ended(ep,
				KDAT_EVENT_CONNECTION_UNREACHABLE);
			release = id->device != ep->qp->device;
			break;
		}
		ret = rdma_resolve_route(id, KDAT_CM_TIMEOUT_MS);
		if (ret)
			kdat_ep_connection_ended(ep,
				KDAT_EVENT_CONNECTION_UNREACHABLE);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		kdat_ep_set_timers(id);
		ret = kdat_ep_modify(ep, id, IB_QPS_INIT);
		if (ret) {
			kdat_ep_connect_failed(ep, ret);
			break;
		}
		if (!kdat_dev_connect_blocks(id->device, id->port_num)) {
			u8 pdata[KDAT_PRIVATE_DATA_BUF];
			struct rdma_conn_param param = {};

			kdat_ep_connect_param(ep, id, &param, pdata);
			ret = rdma_connect_locked(id, &param);
			if (ret)
				kdat_ep_connect_failed(ep, ret);
			break;
		}
		/*
		 * A connect that may block: kdat_ep_connect_run(), counted
		 * on the device from now (its removal waits for it before it
		 * takes the rwsem), not made once the removal has begun. An
		 * EP whose last reference is gone is being destroyed: its
		 * teardown, about to come, destroys the id.
		 */
		if (!kdat_dev_connect_begin(ep->pz->ia->kdev)) {
			kdat_ep_connect_failed(ep, -ENODEV);
			break;
		}
		if (WARN_ON_ONCE(ep->connecting || !ep->conn_owner)) {
			kdat_dev_connect_end(ep->pz->ia->kdev);
			kdat_ep_connect_failed(ep, -EINVAL);
			break;
		}
		if (!kref_get_unless_zero(&ep->obj.ref)) {
			kdat_dev_connect_end(ep->pz->ia->kdev);
			break;
		}
		ep->connecting = id;
		kdat_conn_submit(ep);
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		kdat_ep_save_pdata(ep, event->param.conn.private_data,
				   event->param.conn.private_data_len);
		ret = kdat_ep_modify(ep, id, IB_QPS_RTR);
		if (!ret)
			ret = kdat_ep_modify(ep, id, IB_QPS_RTS);
		if (!ret)
			ret = rdma_accept(id, NULL);
		if (ret) {
			kdat_ep_connection_ended(ep,
				KDAT_EVENT_CONNECTION_NON_PEER_REJECTED);
			break;
		}
		kdat_ep_established(ep, id);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		/* The passive side: the RTU arrived. */
		if (state == KDAT_EP_STATE_PASSIVE_CONNECTION_PENDING) {
			kdat_ep_established(ep, id);
			break;
		}
		/*
		 * The active side, where the CM makes the whole handshake
		 * and moves the QP to RTS itself (iWARP's: no CONNECT_RESPONSE,
		 * the reply's private data comes here). An attempt given up
		 * meanwhile (kdat_ep_disconnect_do()) is ended now.
		 */
		if (state == KDAT_EP_STATE_DISCONNECTED) {
			rdma_disconnect(id);
			break;
		}
		if (state != KDAT_EP_STATE_ACTIVE_CONNECTION_PENDING)
			break;
		/*
		 * siw takes the length from the peer's MPA header: an MPA v2
		 * reply with 1 to 3 bytes wraps it to 253 to 255, past the
		 * buffer it gives. More than an accept may carry is none.
		 */
		kdat_ep_save_pdata(ep, event->param.conn.private_data,
				   event->param.conn.private_data_len <=
				   KDAT_MAX_PRIVATE_DATA ?
				   event->param.conn.private_data_len : 0);
		kdat_ep_established(ep, id);
		break;
	case RDMA_CM_EVENT_REJECTED: {
		/*
		 * A consumer's reject starts with the version word
		 * (kdat_rej_pdata()): it is not the consumer's data. Without
		 * it, the CM rejected, not the peer, except where the CM
		 * cannot tell (kdat_dev_reject_is_peers()). On iWARP, siw
		 * takes the length from the peer's MPA header (an MPA v2
		 * reply shorter than its own header wraps it, past the
		 * buffer): more than a kdat reject carries is none.
		 */
		const u8 *data;
		bool peer;
		u8 len8;
		u32 len;

		data = rdma_consumer_reject_data(id, event, &len8);
		len = len8;
		if (rdma_protocol_iwarp(id->device, id->port_num) &&
		    len > KDAT_REJ_HDR_LEN + KDAT_MAX_PRIVATE_DATA)
			data = NULL;
		data = kdat_rej_pdata(data, &len);
		kdat_ep_save_pdata(ep, data, data ? len : 0);
		peer = data || kdat_dev_reject_is_peers(id->device,
							id->port_num,
							event->status);
		kdat_ep_connection_ended(ep, peer ?
					 KDAT_EVENT_CONNECTION_PEER_REJECTED :
					 KDAT_EVENT_CONNECTION_NON_PEER_REJECTED);
		break;
	}
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		kdat_ep_connection_ended(ep, event->status == -ETIMEDOUT ?
					 KDAT_EVENT_CONNECTION_TIMED_OUT :
					 KDAT_EVENT_CONNECTION_UNREACHABLE);
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		kdat_ep_connection_ended(ep, state == KDAT_EP_STATE_CONNECTED ?
					 KDAT_EVENT_CONNECTION_BROKEN :
					 KDAT_EVENT_CONNECTION_ACCEPT_ERROR);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		/*
		 * Answer the peer's DREQ, also during a graceful disconnect's
		 * wait, which then has nothing left to do (where our own DREQ
		 * was answered, this does nothing).
		 */
		if (state == KDAT_EP_STATE_CONNECTED ||
		    state == KDAT_EP_STATE_DISCONNECT_PENDING)
			rdma_disconnect(id);
		if (state == KDAT_EP_STATE_CONNECTED ||
		    state == KDAT_EP_STATE_DISCONNECT_PENDING)
			kdat_ep_connection_ended(ep,
				KDAT_EVENT_CONNECTION_DISCONNECTED);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/*
		 * Where the id is on the EP's own device, kdat's removal tore
		 * the EP down first (its client goes before the CM's), and the
		 * id was not ep->cm_id any more.
		 */
		if (state != KDAT_EP_STATE_DISCONNECTED &&
		    state != KDAT_EP_STATE_UNCONNECTED)
			kdat_ep_connection_ended(ep,
				KDAT_EVENT_CONNECTION_BROKEN);
		release = id->device != ep->qp->device;
		break;
	default:
		break;
	}
	/*
	 * The item was made with the id by its connect, the only maker of a
	 * foreign id. An EP whose last reference is gone is being destroyed:
	 * its teardown, about to come, destroys the id.
	 */
	if (release && !WARN_ON_ONCE(!ep->cm_id_free) &&
	    !WARN_ON_ONCE(id == ep->connecting) &&
	    kref_get_unless_zero(&ep->obj.ref)) {
		ep->cm_id = NULL;
		kdat_cm_id_free(ep->cm_id_free, id, &ep->obj);
		ep->cm_id_free = NULL;
	}
out:
	mutex_unlock(&ep->cm_lock);
	return 0;
}

/* An RSP reserves @ep (UNCONNECTED -> RESERVED), or gives it back. */
int kdat_ep_reserve(struct kdat_ep *ep, bool reserve)
{
	int ret = 0;

	mutex_lock(&ep->cm_lock);
	if (reserve) {
		if (kdat_ep_allowed(kdat_ep_state(ep), KDAT_EP_OP_RESERVE) !=
		    KDAT_EP_DO || ep->cm_id)
			ret = -EBUSY;
		else
			kdat_ep_set_state(ep, KDAT_EP_STATE_RESERVED);
	} else if (kdat_ep_state(ep) == KDAT_EP_STATE_RESERVED) {
		kdat_ep_set_state(ep, KDAT_EP_STATE_UNCONNECTED);
	}
	mutex_unlock(&ep->cm_lock);
	return ret;
}

/*
 * Accept the connection request on @id (a CR's, the caller holds the CM's
 * handler lock on it and the device's rwsem for read) with @ep, which must
 * be UNCONNECTED (RESERVED for an RSP's request). On success @ep owns @id.
 * EBUSY, EINVAL: refused before anything was done, the request can still
 * be answered; ENODEV: @ep's device is gone (and the request's with it);
 * ECONNABORTED: the request was rejected.
 */
int kdat_ep_accept(struct kdat_ep *ep, struct rdma_cm_id *id,
		   const void *pdata, u8 pdata_len, bool reserved,
		   u8 req_rd_in, u8 req_rd_out)
{
	/*
	 * The reply's RDMA read depths are the smaller of the EP's and the
	 * request's (@req_rd_in: the reads the requester will send us,
	 * @req_rd_out: those it will take), as IB wants and as OFA's
	 * provider answers: a peer whose depths differ from ours connects.
	 * The QP gets the same (kdat_ep_modify()).
	 */
	struct rdma_conn_param param = {
		.private_data = pdata,
		.private_data_len = pdata_len,
		.responder_resources = min_t(u32, ep->attr.max_rdma_read_in,
					     req_rd_in),
		.initiator_depth = min_t(u32, ep->attr.max_rdma_read_out,
					 req_rd_out),
		.flow_control = 1,
		.rnr_retry_count = 7,
	};
	int ret;

	mutex_lock(&ep->cm_lock);
	if (!ep->qp) {
		ret = -ENODEV;
		goto out;
	}
	if (kdat_ep_allowed(kdat_ep_state(ep), reserved ?
			    KDAT_EP_OP_ACCEPT_RSP : KDAT_EP_OP_ACCEPT) !=
	    KDAT_EP_DO || ep->cm_id) {
		ret = -EBUSY;
		goto out;
	}
	if (id->device != ep->qp->device) {
		ret = -EINVAL;
		goto out;
	}
	param.qp_num = ep->qp->qp_num;
	/* From here on a failure costs the request: ECONNABORTED. */
	kdat_ep_set_timers(id);
	ret = kdat_ep_qp_connect(ep, id);
	if (!ret) {
		kdat_ep_set_state(ep,
				  KDAT_EP_STATE_PASSIVE_CONNECTION_PENDING);
		ret = rdma_accept(id, &param);
	}
	if (ret) {
		/*
		 * The request is rejected; the QP may be in error: reset,
		 * DISCONNECTED meanwhile (a receive posted now is flushed,
		 * not lost in the reset). An EP whose QP could not be reset
		 * stays so: dat_ep_reset() tries again.
		 */
		kdat_ep_set_state(ep, KDAT_EP_STATE_DISCONNECTED);
		if (!kdat_ep_qp_reset(ep))
			kdat_ep_set_state(ep, KDAT_EP_STATE_UNCONNECTED);
		ret = -ECONNABORTED;
		goto out;
	}
	ep->pdata_len = 0;
	ep->cm_id = id;
	id->context = &ep->cm_kind;
out:
	mutex_unlock(&ep->cm_lock);
	return ret;
}

static void kdat_ep_free_ctx(struct kdat_ep *ep)
{
	kdat_slots_fini(&ep->send);
	kdat_slots_fini(&ep->recv);
	kfree(ep->cm_id_free);	/* the EP's ids are destroyed */
	ep->cm_id_free = NULL;
	kdat_conn_owner_put(ep->conn_owner);	/* no connect of it is left */
	ep->conn_owner = NULL;
}

/* Move the receive completions of a solicited-wait EP to its EVD. */
void kdat_ep_sw_poll(struct kdat_ep *ep)
{
	struct ib_wc wcs[16];
	unsigned long flags;
	int n, i;

	spin_lock_irqsave(&ep->sw_lock, flags);
	while (!ep->sw_dead &&
	       (n = ib_poll_cq(ep->sw_cq, ARRAY_SIZE(wcs), wcs)) > 0)
		for (i = 0; i < n; i++)
			wcs[i].wr_cqe->done(ep->sw_cq, &wcs[i]);
	spin_unlock_irqrestore(&ep->sw_lock, flags);
}

static void kdat_ep_sw_work(struct work_struct *work)
{
	struct kdat_ep *ep = container_of(work, struct kdat_ep, sw_work);

	do {
		kdat_ep_sw_poll(ep);
		/* > 0: completions came in meanwhile; poll them too. */
	} while (!READ_ONCE(ep->sw_dead) &&
		 ib_req_notify_cq(ep->sw_cq, IB_CQ_SOLICITED |
				  IB_CQ_REPORT_MISSED_EVENTS) > 0);
}

/* The device's completion handler for @sw_cq: any context. */
static void kdat_ep_sw_comp(struct ib_cq *cq, void *context)
{
	struct kdat_ep *ep = context;

	kdat_dev_signalled(ep->pz->ia->kdev);
	queue_work(system_highpri_wq, &ep->sw_work);
}

static void kdat_ep_sw_drained(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kdat_ep *ep = container_of(wc->wr_cqe, struct kdat_ep,
					  sw_drain_cqe);

	complete(&ep->sw_drained);
}

/*
 * Flush and reap everything posted: ib_drain_qp() for an EP on the EVDs'
 * CQs; for a solicited-wait EP ib_drain_qp() cannot reap its own receive
 * CQ (ib_core drains only the CQs it polls), so the receive side is
 * drained here: a marker receive after the flushed ones, polled for.
 * @linger: the EP goes (kdat_ud_drain_sq()).
 */
static void kdat_ep_drain(struct kdat_ep *ep, bool linger)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct ib_recv_wr wr = { .wr_cqe = &ep->sw_drain_cqe };
	bool drained = false;
	int i;

	/*
	 * On an SRQ, the send queue only (which moves the QP to ERR): the
	 * SRQ's receives it took are kdat_ep_srq_reap()'s. ib_drain_qp()
	 * would, from 6.11, wait for LAST_WQE_REACHED and then poll the
	 * receive CQ itself, beside kdat's reapers (ib_process_cq_direct()).
	 */
	if (ep->srq) {
		ib_drain_sq(ep->qp);
		return;
	}
	if (!ep->ud && !ep->sw_cq) {
		ib_drain_qp(ep->qp);
		return;
	}
	/* ib_drain_sq() cannot drain a UD QP: kdat_ud_drain_sq(). */
	if (ep->ud)
		kdat_ud_drain_sq(ep, linger);
	else
		ib_drain_sq(ep->qp);
	if (!ep->sw_cq) {
		ib_drain_rq(ep->qp);
		return;
	}
	ep->sw_drain_cqe.done = kdat_ep_sw_drained;
	reinit_completion(&ep->sw_drained);
	if (ib_modify_qp(ep->qp, &attr, IB_QP_STATE) ||
	    ib_post_recv(ep->qp, &wr, NULL))
		return;
	/* Flush completions need not notify a CQ armed for solicited. */
	for (i = 0; i < 10000; i++) {
		kdat_ep_sw_poll(ep);
		drained = try_wait_for_completion(&ep->sw_drained);
		if (drained)
			break;
		usleep_range(500, 1000);
	}
	if (!drained)
		pr_err("kdat: EP %u: receive queue did not drain\n",
		       ep->obj.handle);
}

/*
 * The QP of an EP on an SRQ is gone (no completion of it is made any
 * more); some may still wait in the receive CQ. A receive flushed through
 * the barrier QP completes after them; without one, the CQ's completions
 * are handed on here. Once they are, none is left, and the EP leaves the
 * SRQ's map.
 */
static void kdat_ep_srq_reap(struct kdat_ep *ep)
{
	if (!ep->srq || !ep->srq_key)
		return;
	if (ep->barrier_qp) {
		kdat_ep_last_wqe_wait(ep);
		ib_drain_rq(ep->barrier_qp);
		ib_destroy_qp(ep->barrier_qp);
		ep->barrier_qp = NULL;
	} else {
		/* A connection's end still owed is told, after the CQ. */
		kdat_ep_last_wqe_wait(ep);
		flush_work(&ep->last_wqe_work);
		kdat_cq_flush(&ep->recv_evd->kcq);
	}
	kdat_srq_del_ep(ep->srq, ep);
	ep->srq_key = NULL;
}

/* The solicited-wait CQ goes after the QP. */
static void kdat_ep_sw_destroy(struct kdat_ep *ep)
{
	unsigned long flags;

	if (!ep->sw_cq)
		return;
	spin_lock_irqsave(&ep->recv_evd->sw_lock, flags);
	list_del_init(&ep->sw_node);
	spin_unlock_irqrestore(&ep->recv_evd->sw_lock, flags);
	spin_lock_irqsave(&ep->sw_lock, flags);
	ep->sw_dead = true;
	spin_unlock_irqrestore(&ep->sw_lock, flags);
	cancel_work_sync(&ep->sw_work);
	/*
	 * The drain polled the flushes itself: the device's tasklet for
	 * the last of them may not have run (kdat_dev_flush_signals()).
	 */
	kdat_dev_flush_signals(ep->pz->ia->kdev);
	cancel_work_sync(&ep->sw_work);
	ib_destroy_cq(ep->sw_cq);
	ep->sw_cq = NULL;
	/*
	 * A device that signals from a hard interrupt may have queued it
	 * once more before the CQ went (it finds @sw_dead and does nothing):
	 * it must not run after the EP is freed.
	 */
	cancel_work_sync(&ep->sw_work);
}

/*
 * Drop the connection and the QP: the cm_id first (rdma_destroy_id()
 * waits for our CM handler, which uses the QP), and a UD EP's connects
 * and accepts under way, then everything posted is flushed and reaped,
 * then the QP goes. Returns the state the EP was in.
 */
static enum kdat_ep_state kdat_ep_teardown(struct kdat_ep *ep)
{
	enum kdat_ep_state state;
	struct rdma_cm_id *id;

	kdat_ud_teardown(ep);
	mutex_lock(&ep->cm_lock);
	id = ep->cm_id;
	ep->cm_id = NULL;
	state = kdat_ep_state(ep);
	if (id && state == KDAT_EP_STATE_CONNECTED)
		rdma_disconnect(id);
	if (!kdat_ep_id_put(ep, id))
		id = NULL;
	mutex_unlock(&ep->cm_lock);
	/* Without cm_id it posts nothing more and does not come back. */
	cancel_delayed_work_sync(&ep->ka_work);
	if (id)
		rdma_destroy_id(id);
	/*
	 * An id another thread destroys, or the connect's, uses the QP. The
	 * connect's goes when its connect returns, cut short by
	 * kdat_ep_id_put() (kdat_conn_hurry()), and its destroy returns: for
	 * a TCP connection made whose MPA reply is awaited, when siw gives
	 * up on it (10 s). An idle wait, which the hung task watch ignores. A close waits for the connect's reference to the EP
	 * first, and the device's removal for every connect queued or under
	 * way on the device before it takes the rwsem: here the connect is
	 * only finishing.
	 */
	wait_event_idle(ep->idle_wq, !READ_ONCE(ep->ids_dying));

	kdat_ep_drain(ep, true);
	kdat_ep_srq_settle(ep);
	ib_destroy_qp(ep->qp);
	/*
	 * The device's event handler is done with the QP: a tell it
	 * queued is made (kdat_ep_srq_reap() makes one still owed).
	 */
	flush_work(&ep->last_wqe_work);
	kdat_ep_srq_reap(ep);
	ep->qp = NULL;
	kdat_ep_sw_destroy(ep);
	/* No completion of the EP is left to queue it again. */
	cancel_work_sync(&ep->broken_work);
	return state;
}

/* The device is going: the connection breaks, posted DTOs are flushed. */
static void kdat_ep_disassociate(struct kdat_dev_res *res)
{
	struct kdat_ep *ep = container_of(res, struct kdat_ep, res);
	enum kdat_ep_state state;
	unsigned long flags;

	state = kdat_ep_teardown(ep);
	kdat_ep_set_state(ep, KDAT_EP_STATE_DISCONNECTED);
	/* libdat answers posts on the rings as the ioctl would: ENODEV. */
	spin_lock_irqsave(&ep->lock, flags);
	kdat_ring_set_dead(ep->sq_ring);
	kdat_ring_set_dead(ep->rq_ring);
	spin_unlock_irqrestore(&ep->lock, flags);
	if (state != KDAT_EP_STATE_UNCONNECTED &&
	    state != KDAT_EP_STATE_DISCONNECTED)
		kdat_ep_conn_event(ep, KDAT_EVENT_CONNECTION_BROKEN);
}

static struct kdat_device *kdat_ep_kdev(struct kdat_ep *ep)
{
	return ep->pz->ia->kdev;
}

static void kdat_ep_release(struct kdat_ep *ep)
{
	struct kdat_device *kdev = kdat_ep_kdev(ep);

	down_read(&kdev->rwsem);
	if (kdat_dev_res_del(kdev, &ep->res))
		kdat_ep_teardown(ep);
	up_read(&kdev->rwsem);
}

static void kdat_ep_destroy(struct kdat_obj *obj)
{
	struct kdat_ep *ep = container_of(obj, struct kdat_ep, obj);

	/* The poller lets go of the rings before the QP goes. */
	kdat_sq_ring_stop(ep->sq_ring);
	kdat_sq_ring_stop(ep->rq_ring);
	kdat_ep_release(ep);
	kdat_sq_ring_detach(ep->sq_ring);
	kdat_sq_ring_detach(ep->rq_ring);
	kdat_ep_free_ctx(ep);

	/*
	 * The commitments go back while the EP still uses its EVDs: once
	 * unused, an EVD may be destroyed by another thread at once.
	 */
	if (ep->srq)
		kdat_srq_uncommit_ep(ep->srq, ep);
	else
		kdat_evd_uncommit(ep->recv_evd, ep->recv_cqes);
	kdat_evd_uncommit(ep->req_evd, ep->send_cqes);
	kdat_obj_unuse(&ep->recv_evd->obj, ep->obj.ia);
	kdat_obj_unuse(&ep->req_evd->obj, ep->obj.ia);
	if (ep->conn_evd)
		kdat_obj_unuse(&ep->conn_evd->obj, ep->obj.ia);
	kdat_obj_unuse(&ep->pz->obj, ep->obj.ia);
	if (ep->srq)
		kdat_obj_unuse(&ep->srq->obj, ep->obj.ia);
}

/* Its destruction waits for its connect: cut it short. */
static void kdat_ep_kill(struct kdat_obj *obj)
{
	kdat_conn_hurry(container_of(obj, struct kdat_ep, obj));
}

static const struct kdat_obj_ops kdat_ep_ops = {
	.kill = kdat_ep_kill,
	.destroy = kdat_ep_destroy,
};

/*
 * The DTOs an Endpoint may have outstanding on either queue of a device
 * with @dev's limits: its send queue holds two work requests more (the
 * drain's and the keepalive's), its receive queue one more (the drain's).
 * What KDAT_IOCTL_IA_QUERY offers as max_qp_wr, and kdat_ep_check_attr()
 * takes.
 */
u32 kdat_ep_max_dtos(const struct ib_device_attr *dev)
{
	if (dev->max_qp_wr <= 2)
		return 0;
	return min_t(u32, dev->max_qp_wr - 2, KDAT_EP_MAX_DTOS);
}

/*
 * Check the wanted attributes against what kdat and the device offer;
 * IOV sizes of 0 become 1. Not static: KUnit's.
 */
int kdat_ep_check_attr(struct kdat_ep_attr *a,
		       const struct ib_device_attr *dev)
{
	const u32 flags = KDAT_COMPLETION_SUPPRESS |
			  KDAT_COMPLETION_SOLICITED_WAIT |
			  KDAT_COMPLETION_UNSIGNALLED |
			  KDAT_COMPLETION_BARRIER_FENCE;

	if ((a->recv_completion_flags | a->request_completion_flags) & ~flags)
		return -EINVAL;
	if (!a->max_recv_dtos || !a->max_request_dtos)
		return -EINVAL;
	if (a->max_recv_dtos > kdat_ep_max_dtos(dev) ||
	    a->max_request_dtos > kdat_ep_max_dtos(dev))
		return -ENOMEM;
	if (a->max_recv_iov > min_t(u32, KDAT_EP_MAX_IOV, dev->max_recv_sge) ||
	    a->max_request_iov > min_t(u32, KDAT_EP_MAX_IOV,
				       dev->max_send_sge))
		return -ENOMEM;
	if (a->max_rdma_read_in > dev->max_qp_rd_atom ||
	    a->max_rdma_read_out > dev->max_qp_init_rd_atom)
		return -ENOMEM;
	if (!a->max_recv_iov)
		a->max_recv_iov = 1;
	if (!a->max_request_iov)
		a->max_request_iov = 1;
	return 0;
}

/*
 * A QP for @ep on @ibdev, as its attributes, EVDs, SRQ and solicited-wait
 * CQ say, with what the device gave in @init: at creation, and again in
 * place of one that cannot leave ERR (kdat_ep_qp_renew()).
 */
static struct ib_qp *kdat_ep_qp_make(struct kdat_ep *ep,
				     struct ib_device *ibdev,
				     struct ib_qp_init_attr *init)
{
	memset(init, 0, sizeof(*init));
	init->qp_type = ep->ud ? IB_QPT_UD : IB_QPT_RC;
	init->send_cq = ep->req_evd->kcq.cq;
	init->recv_cq = ep->sw_cq ?: ep->recv_evd->kcq.cq;
	init->sq_sig_type = IB_SIGNAL_REQ_WR;
	/*
	 * The queues as made (ep_modify may lower the DTO limits under
	 * them, and raise them back): one more of each for ib_drain_qp(),
	 * a send for the keepalive.
	 */
	init->cap.max_send_wr = ep->send.nr + 2;
	/*
	 * As many segments per WR as the device takes (up to kdat's 32), not
	 * only the IOV sizes asked for: DAT programs written for OFA's
	 * provider post more than they asked for (dapltest does), and DAT
	 * lists no error for it.
	 */
	init->cap.max_send_sge = min_t(u32, KDAT_EP_MAX_IOV,
				       ibdev->attrs.max_send_sge);
	if (ep->srq) {
		init->srq = ep->srq->srq;
	} else {
		init->cap.max_recv_wr = ep->recv.nr + 1;
		init->cap.max_recv_sge = min_t(u32, KDAT_EP_MAX_IOV,
					       ibdev->attrs.max_recv_sge);
	}
	init->port_num = ep->pz->ia->port_num;
	init->event_handler = kdat_ep_qp_event;
	init->qp_context = ep;
	return ib_create_qp(ep->pz->pd, init);
}

/*
 * An Endpoint of @kfile and its QP, in INIT, reserved; the caller holds
 * kfile->lock and has checked that the objects are the caller's.
 */
int kdat_ep_new(struct kdat_file *kfile, struct kdat_pz *pz,
		struct kdat_evd *recv_evd, struct kdat_evd *req_evd,
		struct kdat_evd *conn_evd, struct kdat_srq *srq,
		const struct kdat_ep_attr *attr, u32 flags,
		struct kdat_ep **epp)
{
	bool ud = flags & KDAT_EP_CREATE_UD;
	struct ib_qp_init_attr init;
	struct ib_port_attr port_attr;
	struct ib_device *ibdev;
	struct kdat_ep *ep;
	int ret;

	/* A UD QP has no RDMA reads; kdat gives it no SRQ. */
	if (ud && (srq || attr->max_rdma_read_in || attr->max_rdma_read_out))
		return -EINVAL;
	if (ud && (pz->ia->limits & KDAT_IA_NO_UD))
		return -EOPNOTSUPP;

	/*
	 * The EVDs may belong to other IAs of the caller (DAT programs such
	 * as dapltest share one connection EVD between IAs); DTO EVDs must be
	 * on the EP's device, where their CQs are.
	 */
	if ((srq && srq->pz != pz) ||
	    !(recv_evd->flags & KDAT_EVD_DTO) ||
	    !(req_evd->flags & KDAT_EVD_DTO) ||
	    (conn_evd && !(conn_evd->flags & KDAT_EVD_CONNECTION)) ||
	    recv_evd->ia->kdev != pz->ia->kdev ||
	    req_evd->ia->kdev != pz->ia->kdev)
		return -EINVAL;

	ep = kdat_obj_alloc(struct kdat_ep, obj, KDAT_OBJ_EP, &kdat_ep_ops);
	if (!ep)
		return -ENOMEM;
	ep->pz = pz;
	ep->recv_evd = recv_evd;
	ep->req_evd = req_evd;
	ep->conn_evd = conn_evd;
	ep->srq = srq;
	INIT_WORK(&ep->sw_work, kdat_ep_sw_work);
	INIT_WORK(&ep->broken_work, kdat_ep_broken_work);
	INIT_WORK(&ep->connect_work, kdat_ep_connect_work);
	kdat_conn_init_ep(ep);
	INIT_DELAYED_WORK(&ep->ka_work, kdat_ep_ka_work);
	ep->ka_cqe.done = kdat_ep_ka_done;
	init_completion(&ep->sw_drained);
	init_completion(&ep->last_wqe_done);
	init_waitqueue_head(&ep->last_wqe_wq);
	ep->last_wqe_cqe.done = kdat_ep_last_wqe_done;
	INIT_WORK(&ep->last_wqe_work, kdat_ep_last_wqe_work);
	init_waitqueue_head(&ep->idle_wq);
	spin_lock_init(&ep->sw_lock);
	INIT_LIST_HEAD(&ep->sw_node);
	INIT_HLIST_NODE(&ep->srq_node);
	ep->cm_kind = KDAT_CM_EP;
	ep->state = KDAT_EP_STATE_UNCONNECTED;
	mutex_init(&ep->cm_lock);
	spin_lock_init(&ep->lock);
	ep->ud = ud;
	spin_lock_init(&ep->ud_lock);
	INIT_LIST_HEAD(&ep->ud_conns);
	init_waitqueue_head(&ep->ud_wq);
	ep->attr = *attr;
	if (srq) {
		/* Receives come from the SRQ; it sizes the receive side. */
		ep->attr.max_recv_dtos = srq->max_recv_dtos;
		ep->attr.max_recv_iov = srq->max_recv_iov;
	}

	down_read(&pz->ia->kdev->rwsem);
	ibdev = pz->ia->kdev->ibdev;
	if (!ibdev || !pz->pd || !recv_evd->kcq.cq || !req_evd->kcq.cq ||
	    (srq && !srq->srq)) {
		ret = -ENODEV;
		goto err_unlock_dev;
	}
	ret = kdat_ep_check_attr(&ep->attr, &ibdev->attrs);
	if (ret)
		goto err_unlock_dev;
	if (ud) {
		/* A datagram is one packet: at most the port's MTU. */
		ret = ib_query_port(ibdev, pz->ia->port_num, &port_attr);
		if (ret)
			goto err_unlock_dev;
		ep->ud_mtu = ib_mtu_enum_to_int(port_attr.active_mtu);
	}
	/*
	 * The CQs must hold every completion the EPs on them may produce:
	 * each DTO's and the drain marker ib_drain_qp() posts last (lost in
	 * a full CQ, it would leave the drain waiting forever). With an SRQ
	 * every buffer of it may complete here (kdat_srq_commit_eps()).
	 */
	ret = kdat_evd_commit(recv_evd, ep->attr.max_recv_dtos + 1);
	if (ret)
		goto err_unlock_dev;
	ep->recv_cqes = ep->attr.max_recv_dtos + 1;
	/* And the keepalive's (kdat_ep_ka_work()). */
	ret = kdat_evd_commit(req_evd, ep->attr.max_request_dtos + 2);
	if (ret) {
		kdat_evd_uncommit(recv_evd, ep->recv_cqes);
		goto err_unlock_dev;
	}
	ep->send_cqes = ep->attr.max_request_dtos + 2;
	/* Whose turn its connects take, where they may block. */
	if (!ud && kdat_dev_connect_blocks(ibdev, pz->ia->port_num)) {
		ep->conn_owner = kdat_conn_owner_get(kfile);
		if (!ep->conn_owner) {
			ret = -ENOMEM;
			goto err_ctx;
		}
	}
	if (kdat_slots_init(&ep->send, ep->attr.max_request_dtos, ep, NULL) ||
	    kdat_slots_init(&ep->recv, srq ? 0 : ep->attr.max_recv_dtos, ep,
			    NULL)) {
		ret = -ENOMEM;
		goto err_ctx;
	}

	if (!srq && (ep->attr.recv_completion_flags &
		     KDAT_COMPLETION_SOLICITED_WAIT)) {
		struct ib_cq_init_attr cq_attr = {
			.cqe = ep->attr.max_recv_dtos + 1,
		};

		ep->sw_cq = ib_create_cq(ibdev, kdat_ep_sw_comp, NULL, ep,
					 &cq_attr);
		if (IS_ERR(ep->sw_cq)) {
			ret = PTR_ERR(ep->sw_cq);
			ep->sw_cq = NULL;
			goto err_ctx;
		}
	}
	ep->qp = kdat_ep_qp_make(ep, ibdev, &init);
	if (IS_ERR(ep->qp)) {
		ret = PTR_ERR(ep->qp);
		goto err_ctx;
	}
	ep->qpn = ep->qp->qp_num;
	ep->send_sge = min_t(u32, init.cap.max_send_sge, KDAT_EP_MAX_IOV);
	ep->recv_sge = min_t(u32, init.cap.max_recv_sge, KDAT_EP_MAX_IOV);
	ep->read_sge = kdat_dev_read_sge(ibdev, ep->send_sge);
	ep->reads_ordered = kdat_dev_reads_ordered(ibdev, pz->ia->port_num);
	ret = ud ? kdat_ud_qp_ready(ep) : kdat_ep_qp_to_init(ep, ep->qp);
	if (ret)
		goto err_qp;
	if (srq) {
		ret = kdat_ep_srq_join(ep, pz->pd, recv_evd->kcq.cq);
		if (ret)
			goto err_qp;
	}
	if (ep->sw_cq) {
		unsigned long flags;

		spin_lock_irqsave(&recv_evd->sw_lock, flags);
		list_add_tail(&ep->sw_node, &recv_evd->sw_eps);
		spin_unlock_irqrestore(&recv_evd->sw_lock, flags);
		/* A ring alone no longer tells all: say so in it. */
		kdat_evd_ring_set_poll(recv_evd);
		ib_req_notify_cq(ep->sw_cq, IB_CQ_SOLICITED);
	}
	INIT_LIST_HEAD(&ep->res.node);
	/* Its QP, and its barrier QP and its own CQ where it has them. */
	ret = kdat_dev_res_add(pz->ia->kdev, &ep->res,
			       1 + !!ep->barrier_qp + !!ep->sw_cq,
			       kdat_ep_disassociate);
	up_read(&pz->ia->kdev->rwsem);
	if (ret)
		goto err_release;

	ret = kdat_obj_reserve(kfile, &ep->obj, pz->ia);
	if (ret)
		goto err_release;

	kdat_obj_use(&recv_evd->obj, pz->ia);
	kdat_obj_use(&req_evd->obj, pz->ia);
	if (conn_evd)
		kdat_obj_use(&conn_evd->obj, pz->ia);
	kdat_obj_use(&pz->obj, pz->ia);
	if (srq)
		kdat_obj_use(&srq->obj, pz->ia);
	*epp = ep;
	return 0;

err_qp:
	ib_destroy_qp(ep->qp);
err_ctx:
	if (ep->sw_cq)
		ib_destroy_cq(ep->sw_cq);
	kdat_ep_free_ctx(ep);
	kdat_evd_uncommit(recv_evd, ep->recv_cqes);
	kdat_evd_uncommit(req_evd, ep->send_cqes);
err_unlock_dev:
	up_read(&pz->ia->kdev->rwsem);
	kdat_obj_abort(&ep->obj);
	return ret;
err_release:
	kdat_ep_release(ep);
	kdat_ep_free_ctx(ep);
	kdat_evd_uncommit(recv_evd, ep->recv_cqes);
	kdat_evd_uncommit(req_evd, ep->send_cqes);
	kdat_obj_abort(&ep->obj);
	return ret;
}

int kdat_cmd_ep_create(struct kdat_ucmd *ucmd)
{
	struct kdat_ep_create *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	struct kdat_evd *recv_evd = NULL, *req_evd = NULL, *conn_evd = NULL;
	struct kdat_srq *srq = NULL;
	struct kdat_pz *pz;
	struct kdat_ep *ep;
	int ret;

	if (cmd->flags & ~KDAT_EP_CREATE_UD)
		return -EOPNOTSUPP;

	mutex_lock(&kfile->lock);
	if (cmd->srq_handle) {
		srq = kdat_srq_get(kfile, cmd->srq_handle);
		if (!srq) {
			ret = -EBADF;
			goto out_put;
		}
	}
	pz = kdat_get(kfile, cmd->pz_handle, struct kdat_pz, KDAT_OBJ_PZ);
	recv_evd = kdat_get(kfile, cmd->recv_evd_handle, struct kdat_evd,
			    KDAT_OBJ_EVD);
	req_evd = kdat_get(kfile, cmd->request_evd_handle, struct kdat_evd,
			   KDAT_OBJ_EVD);
	/* 0: none (DAT_HANDLE_NULL); the EP then never connects. */
	if (cmd->connect_evd_handle)
		conn_evd = kdat_get(kfile, cmd->connect_evd_handle,
				    struct kdat_evd, KDAT_OBJ_EVD);
	if (!pz || !recv_evd || !req_evd ||
	    (cmd->connect_evd_handle && !conn_evd)) {
		ret = -EBADF;
		goto out_put;
	}
	ret = kdat_ep_new(kfile, pz, recv_evd, req_evd, conn_evd, srq,
			  &cmd->attr, cmd->flags, &ep);
	if (!ret) {
		cmd->attr = ep->attr;
		cmd->out_ep_handle = ep->obj.handle;
		ret = kdat_ucmd_finish(ucmd, sizeof(*cmd), &ep->obj);
	}
out_put:
	if (conn_evd)
		kdat_obj_put(&conn_evd->obj);
	if (req_evd)
		kdat_obj_put(&req_evd->obj);
	if (recv_evd)
		kdat_obj_put(&recv_evd->obj);
	if (pz)
		kdat_obj_put(&pz->obj);
	if (srq)
		kdat_obj_put(&srq->obj);
	mutex_unlock(&kfile->lock);
	return ret;
}

static struct kdat_ep *kdat_ep_get(struct kdat_ucmd *ucmd, u32 handle)
{
	return kdat_get(ucmd->kfile, handle, struct kdat_ep, KDAT_OBJ_EP);
}

int kdat_cmd_ep_query(struct kdat_ucmd *ucmd)
{
	struct kdat_ep_query *cmd = ucmd->cmd;
	unsigned long flags;
	struct kdat_ep *ep;

	if (cmd->__reserved)
		return -EINVAL;
	ep = kdat_ep_get(ucmd, cmd->ep_handle);
	if (!ep)
		return -EBADF;

	cmd->attr = ep->attr;
	spin_lock_irqsave(&ep->lock, flags);
	cmd->state = ep->state;
	cmd->private_data_len = ep->pdata_len;
	memcpy(cmd->private_data, ep->pdata, sizeof(cmd->private_data));
	cmd->out_recv_posted = ep->recv.posted;
	cmd->out_request_posted = ep->send.posted;
	spin_unlock_irqrestore(&ep->lock, flags);

	mutex_lock(&ep->cm_lock);
	kdat_sockaddr_to_user(&ep->remote, &cmd->remote);
	kdat_sockaddr_to_user(&ep->local, &cmd->local);
	mutex_unlock(&ep->cm_lock);

	kdat_obj_put(&ep->obj);
	return kdat_ucmd_respond(ucmd, sizeof(*cmd));
}

/*
 * A new QP in INIT for @ep, in place of its drained one, which stays in
 * ERR (kdat_dev_qp_err_final()). cm_lock and the device's rwsem held: no
 * connection step, keepalive or teardown uses ep->qp meanwhile, and the
 * data path reads it once per post under RCU (kdat_ep_qp_send()). No
 * RDMA CM id of the EP's is left (kdat_ep_lock_for_reset()): iWARP's CM
 * holds a reference to the QP of its id, and siw's QP destroy waits for
 * it. The new QP is made first (and counts in the caller's rdma cgroup
 * while both are there): if that fails, the EP keeps the old one and the
 * next reset tries again. On an SRQ the EP leaves it with the old QP
 * (its barrier QP too) and joins it with the new one; if that fails, the
 * reset fails and the EP is in no SRQ's map until a reset joins it
 * again.
 */
static int kdat_ep_qp_renew(struct kdat_ep *ep)
{
	struct kdat_device *kdev = kdat_ep_kdev(ep);
	struct ib_qp *old = ep->qp, *qp;
	struct ib_qp_init_attr init;
	struct rdma_cgroup *cg;
	unsigned long flags;
	int ret;

	/* An id would hold the old QP: its destroy would wait for it. */
	if (ep->cm_id || ep->ids_dying)
		return -EBUSY;
	/* The two QPs are both there for a while: the new one counts. */
	ret = kdat_dev_charge_one(kdev, &cg);
	if (ret)
		return ret;
	qp = kdat_ep_qp_make(ep, old->device, &init);
	if (IS_ERR(qp)) {
		kdat_dev_uncharge_one(kdev, cg);
		return PTR_ERR(qp);
	}
	/* It takes what the EP checks its DTOs against, as the old one. */
	ret = init.cap.max_send_sge < ep->send_sge ||
	      (!ep->srq && init.cap.max_recv_sge < ep->recv_sge) ? -ENOMEM :
	      kdat_ep_qp_to_init(ep, qp);
	if (ret) {
		ib_destroy_qp(qp);
		kdat_dev_uncharge_one(kdev, cg);
		return ret;
	}
	spin_lock_irqsave(&ep->lock, flags);
	/* Published whole: the posts read it with no lock (READ_ONCE()). */
	smp_store_release(&ep->qp, qp);
	WRITE_ONCE(ep->qpn, qp->qp_num);
	spin_unlock_irqrestore(&ep->lock, flags);
	/* No post is in the old QP's driver any more. */
	synchronize_rcu();
	ib_destroy_qp(old);
	kdat_dev_uncharge_one(kdev, cg);
	/* As in the teardown: the old QP's events are done with. */
	flush_work(&ep->last_wqe_work);
	if (!ep->srq)
		return 0;
	/*
	 * Out of the SRQ's map and back in, under the lock its limit's
	 * raise counts the map's EPs under (kdat_srq_commit_eps()): none is
	 * missed between its two QPs.
	 */
	mutex_lock(&ep->srq->commit_lock);
	kdat_ep_srq_reap(ep);
	ret = kdat_ep_srq_join(ep, ep->pz->pd, ep->recv_evd->kcq.cq);
	mutex_unlock(&ep->srq->commit_lock);
	return ret;
}

/*
 * Back to a QP in INIT. Everything posted is flushed and reaped first: a
 * QP moved to RESET forgets its work requests without completing them. A
 * device whose QPs do not leave ERR gives the EP a new one instead.
 */
static int kdat_ep_qp_reset(struct kdat_ep *ep)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_RESET };
	int ret;

	kdat_ep_drain(ep, false);
	kdat_ep_srq_settle(ep);
	kdat_ep_last_wqe_wait(ep);
	ret = ib_modify_qp(ep->qp, &attr, IB_QP_STATE);
	if (ret)
		return ret;
	if (!ep->ud && kdat_dev_qp_err_final(kdat_ep_kdev(ep), ep->qp))
		ret = kdat_ep_qp_renew(ep);
	else
		ret = kdat_ep_qp_to_init(ep, ep->qp);
	if (!ret && ep->srq && !ep->srq_key) {
		/* An earlier renew's rejoin failed: in the map before use. */
		mutex_lock(&ep->srq->commit_lock);
		ret = kdat_ep_srq_join(ep, ep->pz->pd, ep->recv_evd->kcq.cq);
		mutex_unlock(&ep->srq->commit_lock);
	}
	kdat_ep_last_wqe_rearm(ep);
	return ret;
}

/*
 * cm_lock, taken for a reset (or a connect, which may reset): where the
 * EP's state allows a reset, no RDMA CM id of the EP's is left when this
 * returns, nor one that another thread is still destroying. The QP is an
 * id's until the id goes (iWARP's CM holds a reference to it, and siw's
 * QP destroy waits for that), and the id's next event may be waiting for
 * cm_lock. The id of the EP's last connection or attempt goes here,
 * outside cm_lock (rdma_destroy_id() waits for the EP's CM handler,
 * which takes it), as in the teardown; its later events were the old
 * connection's anyway. The device's rwsem is held for read; the caller
 * checks the EP's state after. -EINTR, cm_lock not held, when a fatal
 * signal ended the wait for an id another thread or the connect is
 * destroying (a connect on iWARP, cut short, but in the driver's time).
 */
static int kdat_ep_lock_for_reset(struct kdat_ep *ep)
{
	struct rdma_cm_id *id;

	for (;;) {
		mutex_lock(&ep->cm_lock);
		if (kdat_ep_allowed(kdat_ep_state(ep), KDAT_EP_OP_RESET) !=
		    KDAT_EP_DO || (!ep->cm_id && !ep->ids_dying))
			return 0;
		id = ep->cm_id;
		ep->cm_id = NULL;
		if (kdat_ep_id_put(ep, id))
			WRITE_ONCE(ep->ids_dying, ep->ids_dying + 1);
		else
			id = NULL;
		mutex_unlock(&ep->cm_lock);
		if (!id) {
			/*
			 * Another thread's, or the connect's (on iWARP, cut
			 * short by kdat_ep_id_put()): it wakes us once it is
			 * gone.
			 */
			if (wait_event_killable(ep->idle_wq,
						!READ_ONCE(ep->ids_dying)))
				return -EINTR;
			continue;
		}
		rdma_destroy_id(id);
		kdat_ep_id_gone(ep);
	}
}

/*
 * Receives published on @ep's rings (its own, or its SRQ's) before a
 * connection call are taken first, in the state the EP is in: posted to
 * the QP (UNCONNECTED, RESERVED) or flushed (a DISCONNECTED EP about to
 * be reset). The peer may send as soon as it hears, and on UD a message
 * that finds no receive posted is lost (on RC it waits for the RNR
 * timer). No lock held: the flush takes ring_lock, then the device's.
 */
void kdat_ep_take_recvs(struct kdat_ep *ep)
{
	kdat_sq_ring_flush(READ_ONCE(ep->rq_ring));
	if (ep->srq)
		kdat_sq_ring_flush(READ_ONCE(ep->srq->ring));
}

/*
 * Start connecting @ep to @dst (its port is the connection qualifier),
 * sending @pdata; the result comes as a connection event. The one
 * implementation for the ioctl and kdat_ep_connect().
 */
int kdat_ep_connect_do(struct kdat_ep *ep, struct sockaddr_storage *dst,
		       u64 timeout_us, const void *pdata, u32 pdata_len)
{
	struct rdma_cm_id *id, *old = NULL;
	struct kdat_cm_id_free *id_free = NULL;
	enum kdat_ep_state state;
	unsigned long timeout_ms;
	int ret;

	if (!ep->conn_evd)
		return -EBADF;	/* no connection EVD to tell the outcome */
	if (pdata_len > KDAT_MAX_PRIVATE_DATA)
		return -EINVAL;
	timeout_ms = timeout_us == KDAT_WAIT_FOREVER ? KDAT_CM_TIMEOUT_MS :
		clamp_t(u64, timeout_us / 1000, 1, KDAT_CM_TIMEOUT_MS);

	kdat_ep_take_recvs(ep);
	down_read(&kdat_ep_kdev(ep)->rwsem);
	/* No QP: the device is gone; no connects: it is going. */
	if (!ep->qp || READ_ONCE(kdat_ep_kdev(ep)->no_connects)) {
		ret = -ENODEV;
		goto out_unlock_dev;
	}
	if (ep->ud) {
		/* In any state, as often as asked: no connection changes. */
		ret = kdat_ud_connect(ep, dst, timeout_ms, pdata, pdata_len);
		goto out_unlock_dev;
	}
	/* The route may leave by another device: the id is let go then. */
	id_free = kdat_cm_id_free_alloc();
	if (!id_free) {
		ret = -ENOMEM;
		goto out_unlock_dev;
	}
	id = rdma_create_id(ep->obj.file->net, kdat_cm_handler, &ep->cm_kind,
			    RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		ret = PTR_ERR(id);
		goto out_unlock_dev;
	}

	ret = kdat_ep_lock_for_reset(ep);
	if (ret) {
		rdma_destroy_id(id);
		goto out_unlock_dev;
	}
	state = kdat_ep_state(ep);
	if (kdat_ep_allowed(state, KDAT_EP_OP_CONNECT) != KDAT_EP_DO) {
		ret = -EBUSY;
		goto err_unlock;
	}
	if (state == KDAT_EP_STATE_DISCONNECTED) {
		/* DAT lets a disconnected EP connect again: start afresh. */
		ret = kdat_ep_qp_reset(ep);
		if (ret)
			goto err_unlock;
	}
	ep->pdata_len = pdata_len;
	memcpy(ep->pdata, pdata, pdata_len);
	old = ep->cm_id;
	ep->cm_id = id;
	if (!ep->cm_id_free)
		swap(ep->cm_id_free, id_free);
	kdat_ep_set_state(ep, KDAT_EP_STATE_ACTIVE_CONNECTION_PENDING);
	ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)dst, timeout_ms);
	if (ret) {
		ep->cm_id = old;
		old = NULL;
		kdat_ep_set_state(ep, state == KDAT_EP_STATE_DISCONNECTED ?
				  KDAT_EP_STATE_UNCONNECTED : state);
		ret = ret == -ENETUNREACH || ret == -EADDRNOTAVAIL ||
		      ret == -ENODEV ? -EADDRNOTAVAIL : ret;
		goto err_unlock;
	}
	if (!kdat_ep_id_put(ep, old))
		old = NULL;
	mutex_unlock(&ep->cm_lock);
	if (old)
		rdma_destroy_id(old);
	ret = 0;
	goto out_unlock_dev;

err_unlock:
	mutex_unlock(&ep->cm_lock);
	rdma_destroy_id(id);
out_unlock_dev:
	up_read(&kdat_ep_kdev(ep)->rwsem);
	kfree(id_free);
	return ret;
}

/* Put the connection qualifier's port in @dst (kdat_qual_port()). */
int kdat_sockaddr_set_qual(struct sockaddr_storage *dst, u64 conn_qual)
{
	__be16 port = htons(kdat_qual_port(conn_qual));

	if (dst->ss_family == AF_INET)
		((struct sockaddr_in *)dst)->sin_port = port;
	else if (dst->ss_family == AF_INET6)
		((struct sockaddr_in6 *)dst)->sin6_port = port;
	else
		return -EINVAL;
	return 0;
}

int kdat_cmd_ep_connect(struct kdat_ucmd *ucmd)
{
	struct kdat_ep_connect *cmd = ucmd->cmd;
	u8 pdata[KDAT_MAX_PRIVATE_DATA];
	struct sockaddr_storage dst;
	struct kdat_ep *ep;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->private_data_len > KDAT_MAX_PRIVATE_DATA)
		return -EINVAL;
	ret = kdat_sockaddr_from_user(&cmd->remote, &dst);
	if (!ret)
		ret = kdat_sockaddr_set_qual(&dst, cmd->conn_qual);
	if (ret)
		return ret;
	if (kdat_copy_from_user(pdata, u64_to_user_ptr(cmd->private_data),
			   cmd->private_data_len))
		return -EFAULT;

	ep = kdat_ep_get(ucmd, cmd->ep_handle);
	if (!ep)
		return -EBADF;
	ret = kdat_ep_connect_do(ep, &dst, cmd->timeout_us, pdata,
				 cmd->private_data_len);
	kdat_obj_put(&ep->obj);
	return ret;
}

/* A graceful disconnect's wait is over: no send left, or no connection. */
static bool kdat_ep_graceful_done(struct kdat_ep *ep)
{
	return !READ_ONCE(ep->send.posted) ||
	       kdat_ep_state(ep) != KDAT_EP_STATE_DISCONNECT_PENDING;
}

/* Disconnect @ep (@flags: KDAT_CLOSE_GRACEFUL or 0). */
int kdat_ep_disconnect_do(struct kdat_ep *ep, u32 flags)
{
	enum kdat_ep_state state;
	unsigned long irqflags;
	u32 gen;
	int ret = 0;

	/* What the rings hold was posted before the disconnect. */
	kdat_sq_ring_flush(READ_ONCE(ep->sq_ring));
	kdat_sq_ring_flush(READ_ONCE(ep->rq_ring));

	down_read(&kdat_ep_kdev(ep)->rwsem);
	mutex_lock(&ep->cm_lock);
	state = kdat_ep_state(ep);
	if (!ep->qp)
		state = KDAT_EP_STATE_DISCONNECTED;	/* device gone */
	switch (kdat_ep_allowed(state, KDAT_EP_OP_DISCONNECT)) {
	case KDAT_EP_DO:
		if (state != KDAT_EP_STATE_CONNECTED) {
			/*
			 * An attempt in progress: give it up. No
			 * rdma_disconnect() here: before the connection exists
			 * the IB CM has nothing to send, and iWARP's waits for
			 * the peer's reply, whose handler waits for cm_lock.
			 * A reply that comes all the same is answered there.
			 */
			kdat_ep_connection_ended(ep,
				KDAT_EVENT_CONNECTION_DISCONNECTED);
			/* A connect that may block, waiting or under way too. */
			if (ep->connecting)
				kdat_conn_hurry(ep);
			break;
		}
		/*
		 * No new request from here on. Graceful: the requests in
		 * progress may complete first (for a while); abrupt: they are
		 * flushed at once. Then the QP goes to error, which flushes
		 * the receives, and the DISCONNECTED event follows the peer's
		 * answer.
		 */
		kdat_ep_set_state(ep, KDAT_EP_STATE_DISCONNECT_PENDING);
		if (flags & KDAT_CLOSE_GRACEFUL) {
			/*
			 * Without cm_lock: the EP's RDMA CM handler takes it,
			 * and an event of the EP meanwhile (the peer's own
			 * disconnect) would hold the CM's queue, which every
			 * connection of the host shares, until the wait ends.
			 * The connection may end meanwhile (the peer's
			 * disconnect, an error): nothing is left to do then,
			 * nor after a reset and a new connection.
			 */
			spin_lock_irqsave(&ep->lock, irqflags);
			gen = ep->conn_gen;
			spin_unlock_irqrestore(&ep->lock, irqflags);
			mutex_unlock(&ep->cm_lock);
			kdat_ep_wait(ep, &ep->idle_wq, kdat_ep_graceful_done,
				     msecs_to_jiffies(KDAT_GRACEFUL_MS));
			mutex_lock(&ep->cm_lock);
			spin_lock_irqsave(&ep->lock, irqflags);
			state = ep->state;
			if (ep->conn_gen != gen)
				state = KDAT_EP_STATE_DISCONNECTED;
			spin_unlock_irqrestore(&ep->lock, irqflags);
			if (state != KDAT_EP_STATE_DISCONNECT_PENDING ||
			    !ep->cm_id || !ep->qp)
				break;
		}
		kdat_ep_qp_error(ep);
		if (rdma_disconnect(ep->cm_id))
			kdat_ep_connection_ended(ep,
				KDAT_EVENT_CONNECTION_DISCONNECTED);
		break;
	case KDAT_EP_NOP:
		/*
		 * Going or gone: nothing to do, as DAT says; but an abrupt
		 * disconnect during a graceful one's wait flushes the sends
		 * it waits for, so that it ends now.
		 */
		if (state == KDAT_EP_STATE_DISCONNECT_PENDING &&
		    !(flags & KDAT_CLOSE_GRACEFUL))
			kdat_ep_qp_error(ep);
		break;
	default:
		ret = -EBUSY;
		break;
	}
	mutex_unlock(&ep->cm_lock);
	up_read(&kdat_ep_kdev(ep)->rwsem);
	return ret;
}

int kdat_cmd_ep_disconnect(struct kdat_ucmd *ucmd)
{
	struct kdat_ep_handle_cmd *cmd = ucmd->cmd;
	struct kdat_ep *ep;
	int ret;

	if (cmd->flags & ~KDAT_CLOSE_GRACEFUL)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	ep = kdat_ep_get(ucmd, cmd->ep_handle);
	if (!ep)
		return -EBADF;
	ret = kdat_ep_disconnect_do(ep, cmd->flags);
	kdat_obj_put(&ep->obj);
	return ret;
}

/* Back to UNCONNECTED from DISCONNECTED (nothing to do when UNCONNECTED). */
int kdat_ep_reset_do(struct kdat_ep *ep)
{
	int ret = 0;

	/* What the rings hold was posted before the reset: flushed. */
	kdat_sq_ring_flush(READ_ONCE(ep->sq_ring));
	kdat_sq_ring_flush(READ_ONCE(ep->rq_ring));

	down_read(&kdat_ep_kdev(ep)->rwsem);
	ret = kdat_ep_lock_for_reset(ep);
	if (ret) {
		up_read(&kdat_ep_kdev(ep)->rwsem);
		return ret;
	}
	switch (kdat_ep_allowed(kdat_ep_state(ep), KDAT_EP_OP_RESET)) {
	case KDAT_EP_DO:
		if (!ep->qp) {
			ret = -ENODEV;	/* the device is gone */
			break;
		}
		ret = kdat_ep_qp_reset(ep);
		if (!ret) {
			kdat_ep_set_state(ep, KDAT_EP_STATE_UNCONNECTED);
			ep->pdata_len = 0;
		}
		break;
	case KDAT_EP_NOP:
		break;
	default:
		ret = -EBUSY;
		break;
	}
	mutex_unlock(&ep->cm_lock);
	up_read(&kdat_ep_kdev(ep)->rwsem);
	return ret;
}

int kdat_cmd_ep_reset(struct kdat_ucmd *ucmd)
{
	struct kdat_ep_handle_cmd *cmd = ucmd->cmd;
	struct kdat_ep *ep;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	ep = kdat_ep_get(ucmd, cmd->ep_handle);
	if (!ep)
		return -EBADF;
	ret = kdat_ep_reset_do(ep);
	kdat_obj_put(&ep->obj);
	return ret;
}

/* New DTO limit @n for @s, whose QP queue was sized at create; ep->lock. */
static int kdat_ep_set_limit(struct kdat_slots *s, u32 n)
{
	if (!n)
		return -EINVAL;
	if (n > s->nr)
		return -EOPNOTSUPP;	/* the QP cannot grow */
	if (s->posted > n)
		return -EBUSY;
	s->limit = n;
	return 0;
}

/* Grow @ep's commitment on @evd from @old to @new DTOs; 0 if not larger. */
static int kdat_ep_commit_more(struct kdat_evd *evd, u32 *cqes, u32 old,
			       u32 new)
{
	int ret;

	if (new <= old)
		return 0;
	ret = kdat_evd_commit(evd, new - old);
	if (!ret)
		*cqes += new - old;
	return ret;
}

/* Shrink it back (the undo of the above, or a smaller count). */
static void kdat_ep_commit_less(struct kdat_evd *evd, u32 *cqes, u32 old,
				u32 new)
{
	if (new < old) {
		kdat_evd_uncommit(evd, old - new);
		*cqes -= old - new;
	}
}

/*
 * New DTO counts, up to the QP's: the CQs grow first (the only step that
 * can fail for want of room), then the limits, then what is no longer
 * needed is given back; a failure at any step leaves everything as it
 * was. The caller holds the file lock (CQ commitments).
 */
static int kdat_ep_modify_dtos(struct kdat_ep *ep, const struct kdat_ep_attr *a)
{
	u32 old_recv = ep->attr.max_recv_dtos;
	u32 old_req = ep->attr.max_request_dtos;
	unsigned long flags;
	int ret;

	if (ep->srq && a->max_recv_dtos != old_recv)
		return -EINVAL;	/* the SRQ's */
	if (!a->max_recv_dtos || !a->max_request_dtos)
		return -EINVAL;
	if (a->max_request_dtos > ep->send.nr ||
	    (!ep->srq && a->max_recv_dtos > ep->recv.nr))
		return -EOPNOTSUPP;	/* the QP cannot grow */
	ret = kdat_ep_commit_more(ep->recv_evd, &ep->recv_cqes, old_recv,
				  a->max_recv_dtos);
	if (ret)
		return ret;
	ret = kdat_ep_commit_more(ep->req_evd, &ep->send_cqes, old_req,
				  a->max_request_dtos);
	if (ret)
		goto err_recv;
	spin_lock_irqsave(&ep->lock, flags);
	ret = kdat_ep_set_limit(&ep->send, a->max_request_dtos);
	if (!ret && !ep->srq) {
		ret = kdat_ep_set_limit(&ep->recv, a->max_recv_dtos);
		if (ret)
			ep->send.limit = old_req;
	}
	spin_unlock_irqrestore(&ep->lock, flags);
	if (ret)
		goto err_req;
	kdat_ep_commit_less(ep->recv_evd, &ep->recv_cqes, old_recv,
			    a->max_recv_dtos);
	kdat_ep_commit_less(ep->req_evd, &ep->send_cqes, old_req,
			    a->max_request_dtos);
	ep->attr.max_recv_dtos = a->max_recv_dtos;
	ep->attr.max_request_dtos = a->max_request_dtos;
	return 0;

err_req:
	kdat_ep_commit_less(ep->req_evd, &ep->send_cqes, a->max_request_dtos,
			    old_req);
err_recv:
	kdat_ep_commit_less(ep->recv_evd, &ep->recv_cqes, a->max_recv_dtos,
			    old_recv);
	return ret;
}

int kdat_cmd_ep_modify(struct kdat_ucmd *ucmd)
{
	const u32 all = KDAT_EP_MODIFY_COMPLETION_FLAGS |
			KDAT_EP_MODIFY_RDMA_READ | KDAT_EP_MODIFY_DTOS;
	struct kdat_ep_modify *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	struct kdat_ep_attr *a = &cmd->attr;
	struct kdat_device *kdev;
	enum kdat_ep_state state;
	struct kdat_ep *ep;
	int ret = 0;

	if (cmd->__reserved || !cmd->mask || (cmd->mask & ~all))
		return -EINVAL;
	ep = kdat_get(kfile, cmd->ep_handle, struct kdat_ep, KDAT_OBJ_EP);
	if (!ep)
		return -EBADF;
	/*
	 * What the rings hold was posted before the modify: it counts
	 * against the new limits.
	 */
	kdat_sq_ring_flush(READ_ONCE(ep->sq_ring));
	kdat_sq_ring_flush(READ_ONCE(ep->rq_ring));
	/*
	 * The file lock orders CQ commitments; cm_lock keeps the state. The
	 * device's rwsem comes between them, as on every path taking both.
	 */
	mutex_lock(&kfile->lock);
	kdev = ep->pz->ia->kdev;
	down_read(&kdev->rwsem);
	mutex_lock(&ep->cm_lock);
	state = kdat_ep_state(ep);
	if (kdat_ep_allowed(state, KDAT_EP_OP_MODIFY) != KDAT_EP_DO) {
		ret = -EBUSY;
		goto out;
	}
	if (cmd->mask & KDAT_EP_MODIFY_COMPLETION_FLAGS) {
		const u32 ok = KDAT_COMPLETION_SUPPRESS |
			       KDAT_COMPLETION_SOLICITED_WAIT |
			       KDAT_COMPLETION_UNSIGNALLED |
			       KDAT_COMPLETION_BARRIER_FENCE;

		if ((a->recv_completion_flags | a->request_completion_flags) &
		    ~ok) {
			ret = -EINVAL;
			goto out;
		}
		/* Solicited waits need the receive CQ chosen at create. */
		if ((a->recv_completion_flags ^ ep->attr.recv_completion_flags) &
		    KDAT_COMPLETION_SOLICITED_WAIT) {
			ret = -EOPNOTSUPP;
			goto out;
		}
	}
	if (cmd->mask & KDAT_EP_MODIFY_RDMA_READ) {
		if (!kdev->ibdev)
			ret = -ENODEV;
		else if (ep->ud && (a->max_rdma_read_in ||
				    a->max_rdma_read_out))
			ret = -EINVAL;	/* a UD QP has no RDMA reads */
		else if (a->max_rdma_read_in >
			 kdev->ibdev->attrs.max_qp_rd_atom ||
			 a->max_rdma_read_out >
			 kdev->ibdev->attrs.max_qp_init_rd_atom)
			ret = -EINVAL;
		if (ret)
			goto out;
	}
	/* Checked; from here each part applies or nothing changed. */
	if (cmd->mask & KDAT_EP_MODIFY_DTOS) {
		ret = kdat_ep_modify_dtos(ep, a);
		if (ret)
			goto out;
	}
	if (cmd->mask & KDAT_EP_MODIFY_COMPLETION_FLAGS) {
		WRITE_ONCE(ep->attr.recv_completion_flags,
			   a->recv_completion_flags);
		WRITE_ONCE(ep->attr.request_completion_flags,
			   a->request_completion_flags);
	}
	if (cmd->mask & KDAT_EP_MODIFY_RDMA_READ) {
		ep->attr.max_rdma_read_in = a->max_rdma_read_in;
		ep->attr.max_rdma_read_out = a->max_rdma_read_out;
	}
	*a = ep->attr;
out:
	mutex_unlock(&ep->cm_lock);
	up_read(&kdev->rwsem);
	kdat_obj_put(&ep->obj);
	mutex_unlock(&kfile->lock);
	/*
	 * The answer goes after every lock: a copy to user memory may fault
	 * for as long as that memory's owner likes (a FUSE page), and device
	 * removal must not wait for it.
	 */
	if (!ret)
		ret = kdat_ucmd_respond(ucmd, sizeof(*cmd));
	return ret;
}
