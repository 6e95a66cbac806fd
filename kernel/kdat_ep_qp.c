// SPDX-License-Identifier: GPL-2.0
/*
 * An Endpoint's QP: its moves between states, its place in an SRQ and
 * the LAST_WQE_REACHED handshake that ends it, and the renew and reset
 * that give a used EP a fresh QP (dat_ep_reset). kdat_ep.c makes the QP;
 * kdat_ep_conn.c moves it to RTR and RTS when a connection is made.
 */
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/workqueue.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kdat.h"
#include "kdat_ep.h"
#include "kdat_trace.h"

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
 * The QP may take the SRQ's receives from now on (@rtr), or, its move
 * to RTR failed, did not. Set before the move: the device may raise
 * LAST_WQE_REACHED as soon as the QP is there.
 */
void kdat_ep_set_rtr(struct kdat_ep *ep, bool rtr)
{
	unsigned long flags;

	if (!ep->srq)
		return;
	spin_lock_irqsave(&ep->lock, flags);
	ep->qp_rtr = rtr;
	spin_unlock_irqrestore(&ep->lock, flags);
}

int kdat_ep_modify(struct kdat_ep *ep, struct rdma_cm_id *id,
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
					       ep->timers.retry_count);
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
int kdat_ep_qp_connect(struct kdat_ep *ep, struct rdma_cm_id *id)
{
	int ret;

	ret = kdat_ep_modify(ep, id, IB_QPS_INIT);
	if (!ret)
		ret = kdat_ep_modify(ep, id, IB_QPS_RTR);
	if (!ret)
		ret = kdat_ep_modify(ep, id, IB_QPS_RTS);
	return ret;
}

int kdat_ep_qp_to_init(struct kdat_ep *ep, struct ib_qp *qp)
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
int kdat_ep_srq_join(struct kdat_ep *ep, struct ib_pd *pd,
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

void kdat_ep_qp_error(struct kdat_ep *ep)
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

/* The last-WQE handshake's parts of a new @ep. */
void kdat_ep_qp_init_ep(struct kdat_ep *ep)
{
	init_completion(&ep->last_wqe_done);
	init_waitqueue_head(&ep->last_wqe_wq);
	ep->last_wqe_cqe.done = kdat_ep_last_wqe_done;
	INIT_WORK(&ep->last_wqe_work, kdat_ep_last_wqe_work);
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
void kdat_ep_last_wqe(struct kdat_ep *ep)
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
void kdat_ep_srq_settle(struct kdat_ep *ep)
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
void kdat_ep_last_wqe_wait(struct kdat_ep *ep)
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
int kdat_ep_qp_renew(struct kdat_ep *ep)
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
int kdat_ep_qp_reset(struct kdat_ep *ep)
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
int kdat_ep_lock_for_reset(struct kdat_ep *ep)
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
 * timer). No lock held: the flush takes the ring's drain_lock, then the device's.
 */
void kdat_ep_take_recvs(struct kdat_ep *ep)
{
	kdat_sq_ring_flush(READ_ONCE(ep->rq_ring));
	if (ep->srq)
		kdat_sq_ring_flush(READ_ONCE(ep->srq->ring));
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

/*
 * A QP for @ep on @ibdev, as its attributes, EVDs, SRQ and solicited-wait
 * CQ say, with what the device gave in @init: at creation, and again in
 * place of one that cannot leave ERR (kdat_ep_qp_renew()).
 */
struct ib_qp *kdat_ep_qp_make(struct kdat_ep *ep,
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
