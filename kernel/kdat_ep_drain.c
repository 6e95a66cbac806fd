// SPDX-License-Identifier: GPL-2.0
/*
 * The end of an Endpoint's work: draining its QP (waiting for what the
 * device still holds, or lingering for a graceful disconnect), reaping an
 * SRQ member's completions, and the teardown that leaves the EP with no
 * connection and nothing in flight, shared by dat_ep_free, the file's
 * release and device removal.
 */
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/workqueue.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kdat.h"
#include "kdat_ep.h"
#include "kdat_trace.h"

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
void kdat_ep_sw_comp(struct ib_cq *cq, void *context)
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

/* The solicited-wait CQ's and the drain's parts of a new @ep. */
void kdat_ep_drain_init_ep(struct kdat_ep *ep)
{
	INIT_WORK(&ep->sw_work, kdat_ep_sw_work);
	init_completion(&ep->sw_drained);
	spin_lock_init(&ep->sw_lock);
	INIT_LIST_HEAD(&ep->sw_node);
}

/*
 * Flush and reap everything posted: ib_drain_qp() for an EP on the EVDs'
 * CQs; for a solicited-wait EP ib_drain_qp() cannot reap its own receive
 * CQ (ib_core drains only the CQs it polls), so the receive side is
 * drained here: a marker receive after the flushed ones, polled for.
 * @linger: the EP goes (kdat_ud_drain_sq()).
 */
void kdat_ep_drain(struct kdat_ep *ep, bool linger)
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
void kdat_ep_srq_reap(struct kdat_ep *ep)
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
enum kdat_ep_state kdat_ep_teardown(struct kdat_ep *ep)
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
