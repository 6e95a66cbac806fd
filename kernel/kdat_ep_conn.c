// SPDX-License-Identifier: GPL-2.0
/*
 * An Endpoint's connections: the RDMA CM's events and the DAT states they
 * move the EP through, the transport timers and the keepalive, and
 * dat_ep_connect, dat_ep_accept (through a CR), dat_ep_disconnect and
 * dat_ep_reset. The connect that may block runs on kdat_connect.c's
 * threads; PSPs, RSPs and CRs are kdat_cm.c's.
 */
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/workqueue.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kdat.h"
#include "kdat_ep.h"
#include "kdat_trace.h"

#define KDAT_CM_TIMEOUT_MS	5000
#define KDAT_GRACEFUL_MS	5000

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
		 "RC transport retries before a request fails, of new EPs that do not say (0..7; rxe takes 7 as for ever)");


static unsigned int keepalive_ms = 5000;
module_param(keepalive_ms, uint, 0644);
MODULE_PARM_DESC(keepalive_ms,
		 "A connected EP writes 0 bytes to its peer this often, so that a dead peer breaks it even when idle, for new EPs that do not say (ms; 0: never)");

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
		 "RC local ACK timeout of new EPs that do not say, 4.096 us x 2^N (1..31; 0: the RDMA CM's own)");

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
		 "RC minimum RNR NAK timer of new EPs that do not say, IB encoding (0..31; 0: 655 ms, 12: 0.64 ms)");

/* Is timer @bit's @value bad: out of range where named, not 0 where not? */
static bool kdat_ep_timer_bad(u32 set, u32 bit, u32 value, bool out_of_range)
{
	return set & bit ? out_of_range : value != 0;
}

/*
 * A new @ep's transport timers: what @want gives (NULL: nothing), kdat's
 * defaults, the module parameters above, for the rest. Fixed from then
 * on: its connections' handlers read them without a lock.
 */
int kdat_ep_timers_init(struct kdat_ep *ep, const struct kdat_ep_timers *want)
{
	struct kdat_ep_timers t = {
		.set = KDAT_EP_TIMER_ALL,
		.ack_timeout = READ_ONCE(ack_timeout),
		.retry_count = min(READ_ONCE(retry_count), 7U),
		.rnr_timer = READ_ONCE(rnr_timer),
		.keepalive_ms = READ_ONCE(keepalive_ms),
	};

	if (t.ack_timeout > 31)
		t.ack_timeout = 0;	/* the RDMA CM's own */
	if (t.rnr_timer > 31)
		t.rnr_timer = 0;	/* what the RDMA CM leaves */
	if (want) {
		u32 set = want->set;

		if (set & ~KDAT_EP_TIMER_ALL)
			return -EOPNOTSUPP;
		/*
		 * A field not named is 0, for a later use. Any user may set
		 * them, so not so short that the kernel's own work (a
		 * keepalive write, a retransmission to a dead peer for as
		 * long as the EP lives, uncharged to the user) runs every
		 * jiffy: the keepalive at least every 100 ms, the ACK timeout
		 * at least 2^8 x 4.096 us (1 ms).
		 */
		if (want->__reserved ||
		    kdat_ep_timer_bad(set, KDAT_EP_TIMER_ACK_TIMEOUT,
				      want->ack_timeout,
				      want->ack_timeout &&
				      (want->ack_timeout < 8 ||
				       want->ack_timeout > 31)) ||
		    kdat_ep_timer_bad(set, KDAT_EP_TIMER_RETRY_COUNT,
				      want->retry_count,
				      want->retry_count > 7) ||
		    kdat_ep_timer_bad(set, KDAT_EP_TIMER_RNR_TIMER,
				      want->rnr_timer, want->rnr_timer > 31) ||
		    kdat_ep_timer_bad(set, KDAT_EP_TIMER_KEEPALIVE,
				      want->keepalive_ms,
				      want->keepalive_ms &&
				      want->keepalive_ms < 100))
			return -EINVAL;
		if (set & KDAT_EP_TIMER_ACK_TIMEOUT)
			t.ack_timeout = want->ack_timeout;
		if (set & KDAT_EP_TIMER_RETRY_COUNT)
			t.retry_count = want->retry_count;
		if (set & KDAT_EP_TIMER_RNR_TIMER)
			t.rnr_timer = want->rnr_timer;
		if (set & KDAT_EP_TIMER_KEEPALIVE)
			t.keepalive_ms = want->keepalive_ms;
	}
	/* A UD EP has no connection: no timers, and says so. */
	if (ep->ud)
		memset(&t, 0, sizeof(t));
	ep->timers = t;
	return 0;
}

/* An RC connection's timers, before its QP reaches RTR, on either side. */
static void kdat_ep_set_timers(struct kdat_ep *ep, struct rdma_cm_id *id)
{
	if (ep->timers.ack_timeout)
		rdma_set_ack_timeout(id, ep->timers.ack_timeout);
	if (id->qp_type == IB_QPT_RC)
		rdma_set_min_rnr_timer(id, ep->timers.rnr_timer);
}

static void kdat_ep_ka_arm(struct kdat_ep *ep)
{
	unsigned int ms = ep->timers.keepalive_ms;

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

/* Both sides, once connected: addresses, state, event. cm_lock held. */
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
bool kdat_ep_id_put(struct kdat_ep *ep, struct rdma_cm_id *id)
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
void kdat_ep_id_gone(struct kdat_ep *ep)
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
	param->retry_count = ep->timers.retry_count;
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

/* The connection's parts of a new @ep: its works and its keepalive. */
void kdat_ep_conn_init_ep(struct kdat_ep *ep)
{
	INIT_WORK(&ep->broken_work, kdat_ep_broken_work);
	INIT_WORK(&ep->connect_work, kdat_ep_connect_work);
	kdat_conn_init_ep(ep);
	INIT_DELAYED_WORK(&ep->ka_work, kdat_ep_ka_work);
	ep->ka_cqe.done = kdat_ep_ka_done;
}

/* Does @event end an attempt or a connection? */
static bool kdat_ep_cm_ends(enum rdma_cm_event_type event)
{
	return event == RDMA_CM_EVENT_REJECTED ||
	       event == RDMA_CM_EVENT_ADDR_ERROR ||
	       event == RDMA_CM_EVENT_ROUTE_ERROR ||
	       event == RDMA_CM_EVENT_UNREACHABLE ||
	       event == RDMA_CM_EVENT_CONNECT_ERROR;
}

/*
 * Is @event, in @state, for the connection the EP has now? Steps of our
 * connect are not if it was given up meanwhile. The end of an attempt or
 * of a connection has one event: an attempt given up
 * (kdat_ep_disconnect_do()) had its DISCONNECTED, and the CM's late word
 * on it (the peer's reject, the REQ timing out) says nothing new.
 */
static bool kdat_ep_cm_wanted(enum kdat_ep_state state,
			      enum rdma_cm_event_type event)
{
	switch (event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		return state == KDAT_EP_STATE_ACTIVE_CONNECTION_PENDING;
	default:
		return !kdat_ep_cm_ends(event) ||
		       state == KDAT_EP_STATE_ACTIVE_CONNECTION_PENDING ||
		       state == KDAT_EP_STATE_PASSIVE_CONNECTION_PENDING ||
		       state == KDAT_EP_STATE_TENTATIVE_CONNECTION_PENDING ||
		       state == KDAT_EP_STATE_CONNECTED;
	}
}

/* Our connect's route is resolved: its QP to INIT, then the CM's REQ. */
static void kdat_ep_route_resolved(struct kdat_ep *ep, struct rdma_cm_id *id)
{
	int ret;

	kdat_ep_set_timers(ep, id);
	ret = kdat_ep_modify(ep, id, IB_QPS_INIT);
	if (ret) {
		kdat_ep_connect_failed(ep, ret);
		return;
	}
	if (!kdat_dev_connect_blocks(id->device, id->port_num)) {
		u8 pdata[KDAT_PRIVATE_DATA_BUF];
		struct rdma_conn_param param = {};

		kdat_ep_connect_param(ep, id, &param, pdata);
		ret = rdma_connect_locked(id, &param);
		if (ret)
			kdat_ep_connect_failed(ep, ret);
		return;
	}
	/*
	 * A connect that may block: kdat_ep_connect_run(), counted on the
	 * device from now (its removal waits for it before it takes the
	 * rwsem), not made once the removal has begun. An EP whose last
	 * reference is gone is being destroyed: its teardown, about to
	 * come, destroys the id.
	 */
	if (!kdat_dev_connect_begin(ep->pz->ia->kdev)) {
		kdat_ep_connect_failed(ep, -ENODEV);
		return;
	}
	if (WARN_ON_ONCE(ep->connecting || !ep->conn_owner)) {
		kdat_dev_connect_end(ep->pz->ia->kdev);
		kdat_ep_connect_failed(ep, -EINVAL);
		return;
	}
	if (!kref_get_unless_zero(&ep->obj.ref)) {
		kdat_dev_connect_end(ep->pz->ia->kdev);
		return;
	}
	ep->connecting = id;
	kdat_conn_submit(ep);
}

/* RDMA_CM_EVENT_ESTABLISHED, in @state. */
static void kdat_ep_cm_established(struct kdat_ep *ep, struct rdma_cm_id *id,
				   enum kdat_ep_state state,
				   const struct rdma_cm_event *event)
{
	/* The passive side: the RTU arrived. */
	if (state == KDAT_EP_STATE_PASSIVE_CONNECTION_PENDING) {
		kdat_ep_established(ep, id);
		return;
	}
	/*
	 * The active side, where the CM makes the whole handshake and moves
	 * the QP to RTS itself (iWARP's: no CONNECT_RESPONSE, the reply's
	 * private data comes here). An attempt given up meanwhile
	 * (kdat_ep_disconnect_do()) is ended now.
	 */
	if (state == KDAT_EP_STATE_DISCONNECTED) {
		rdma_disconnect(id);
		return;
	}
	if (state != KDAT_EP_STATE_ACTIVE_CONNECTION_PENDING)
		return;
	/*
	 * siw takes the length from the peer's MPA header: an MPA v2 reply
	 * with 1 to 3 bytes wraps it to 253 to 255, past the buffer it
	 * gives. More than an accept may carry is none.
	 */
	kdat_ep_save_pdata(ep, event->param.conn.private_data,
			   event->param.conn.private_data_len <=
			   KDAT_MAX_PRIVATE_DATA ?
			   event->param.conn.private_data_len : 0);
	kdat_ep_established(ep, id);
}

/*
 * RDMA_CM_EVENT_REJECTED. A consumer's reject starts with the version
 * word (kdat_rej_pdata()): it is not the consumer's data. Without it, the
 * CM rejected, not the peer, except where the CM cannot tell
 * (kdat_dev_reject_is_peers()). On iWARP, siw takes the length from the
 * peer's MPA header (an MPA v2 reply shorter than its own header wraps
 * it, past the buffer): more than a kdat reject carries is none.
 */
static void kdat_ep_cm_rejected(struct kdat_ep *ep, struct rdma_cm_id *id,
				struct rdma_cm_event *event)
{
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
	peer = data || kdat_dev_reject_is_peers(id->device, id->port_num,
						event->status);
	kdat_ep_connection_ended(ep, peer ?
				 KDAT_EVENT_CONNECTION_PEER_REJECTED :
				 KDAT_EVENT_CONNECTION_NON_PEER_REJECTED);
}

/*
 * The id, on another device than the EP's QP, is done with. Its item was
 * made with it by its connect, the only maker of a foreign id. An EP
 * whose last reference is gone is being destroyed: its teardown, about to
 * come, destroys the id. cm_lock held.
 */
static void kdat_ep_cm_release(struct kdat_ep *ep, struct rdma_cm_id *id)
{
	if (WARN_ON_ONCE(!ep->cm_id_free) ||
	    WARN_ON_ONCE(id == ep->connecting) ||
	    !kref_get_unless_zero(&ep->obj.ref))
		return;
	ep->cm_id = NULL;
	kdat_cm_id_free(ep->cm_id_free, id, &ep->obj);
	ep->cm_id_free = NULL;
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
	/* During our own disconnect, the connection ends as asked. */
	if (state == KDAT_EP_STATE_DISCONNECT_PENDING &&
	    kdat_ep_cm_ends(event->event)) {
		kdat_ep_connection_ended(ep,
			KDAT_EVENT_CONNECTION_DISCONNECTED);
		goto out;
	}
	if (!kdat_ep_cm_wanted(state, event->event))
		goto out;

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
		kdat_ep_route_resolved(ep, id);
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
		kdat_ep_cm_established(ep, id, state, event);
		break;
	case RDMA_CM_EVENT_REJECTED:
		kdat_ep_cm_rejected(ep, id, event);
		break;
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
		    state == KDAT_EP_STATE_DISCONNECT_PENDING) {
			rdma_disconnect(id);
			kdat_ep_connection_ended(ep,
				KDAT_EVENT_CONNECTION_DISCONNECTED);
		}
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
	if (release)
		kdat_ep_cm_release(ep, id);
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
	kdat_ep_set_timers(ep, id);
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
	/*
	 * What the file's rings published before the call was posted
	 * before the disconnect: taken first, as a pass takes it, the
	 * receives of every EP before any send (kdat_rings_pass()). Not
	 * this EP's sends alone: they would overtake the receives published
	 * before them on another EP of the file, their peer's over a
	 * loopback, and on iWARP a send that finds no receive ends the
	 * connection (a TERMINATE), where IB waits for the RNR timer.
	 */
	kdat_rings_take(ucmd->kfile);
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
	/* Posted before the reset, so flushed by it: as for a disconnect. */
	kdat_rings_take(ucmd->kfile);
	ep = kdat_ep_get(ucmd, cmd->ep_handle);
	if (!ep)
		return -EBADF;
	ret = kdat_ep_reset_do(ep);
	kdat_obj_put(&ep->obj);
	return ret;
}
