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
#include "kdat_ep.h"
#include "kdat_trace.h"

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

void kdat_ep_set_state(struct kdat_ep *ep, enum kdat_ep_state state)
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

enum kdat_ep_state kdat_ep_state(struct kdat_ep *ep)
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


static void kdat_ep_free_ctx(struct kdat_ep *ep)
{
	kdat_slots_fini(&ep->send);
	kdat_slots_fini(&ep->recv);
	kfree(ep->cm_id_free);	/* the EP's ids are destroyed */
	ep->cm_id_free = NULL;
	kdat_conn_owner_put(ep->conn_owner);	/* no connect of it is left */
	ep->conn_owner = NULL;
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
 * @ep's device resources: its QP in INIT (or ready for UD), its CQ
 * commitments and slots, its own CQ for solicited waits, its place on an
 * SRQ; under the device's rwsem, which the caller holds for read. On
 * failure, whatever it made is undone.
 */
static int kdat_ep_dev_make(struct kdat_file *kfile, struct kdat_ep *ep,
			    bool ud)
{
	struct kdat_pz *pz = ep->pz;
	struct kdat_evd *recv_evd = ep->recv_evd, *req_evd = ep->req_evd;
	struct kdat_srq *srq = ep->srq;
	struct ib_qp_init_attr init;
	struct ib_port_attr port_attr;
	struct ib_device *ibdev;
	int ret;

	lockdep_assert_held_read(&pz->ia->kdev->rwsem);
	ibdev = pz->ia->kdev->ibdev;
	if (!ibdev || !pz->pd || !recv_evd->kcq.cq || !req_evd->kcq.cq ||
	    (srq && !srq->srq)) {
		return -ENODEV;
	}
	ret = kdat_ep_check_attr(&ep->attr, &ibdev->attrs);
	if (ret)
		return ret;
	if (ud) {
		/* A datagram is one packet: at most the port's MTU. */
		ret = ib_query_port(ibdev, pz->ia->port_num, &port_attr);
		if (ret)
			return ret;
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
		return ret;
	ep->recv_cqes = ep->attr.max_recv_dtos + 1;
	/* And the keepalive's (kdat_ep_ka_work()). */
	ret = kdat_evd_commit(req_evd, ep->attr.max_request_dtos + 2);
	if (ret) {
		kdat_evd_uncommit(recv_evd, ep->recv_cqes);
		ep->recv_cqes = 0;
		return ret;
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
	return 0;

err_qp:
	ib_destroy_qp(ep->qp);
	ep->qp = NULL;
err_ctx:
	if (ep->sw_cq)
		ib_destroy_cq(ep->sw_cq);
	ep->sw_cq = NULL;
	kdat_ep_free_ctx(ep);
	kdat_evd_uncommit(recv_evd, ep->recv_cqes);
	kdat_evd_uncommit(req_evd, ep->send_cqes);
	ep->recv_cqes = 0;
	ep->send_cqes = 0;
	return ret;
}

/*
 * An Endpoint of @kfile and its QP, in INIT, reserved; the caller holds
 * kfile->lock and has checked that the objects are the caller's.
 */
int kdat_ep_new(struct kdat_file *kfile, struct kdat_pz *pz,
		struct kdat_evd *recv_evd, struct kdat_evd *req_evd,
		struct kdat_evd *conn_evd, struct kdat_srq *srq,
		const struct kdat_ep_attr *attr,
		const struct kdat_ep_timers *timers, u32 flags,
		struct kdat_ep **epp)
{
	bool ud = flags & KDAT_EP_CREATE_UD;
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
	kdat_ep_qp_init_ep(ep);
	kdat_ep_conn_init_ep(ep);
	kdat_ep_drain_init_ep(ep);
	init_waitqueue_head(&ep->idle_wq);
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
	ret = kdat_ep_timers_init(ep, timers);
	if (ret) {
		kdat_obj_abort(&ep->obj);
		return ret;
	}

	down_read(&pz->ia->kdev->rwsem);
	ret = kdat_ep_dev_make(kfile, ep, ud);
	if (ret) {
		up_read(&pz->ia->kdev->rwsem);
		kdat_obj_abort(&ep->obj);
		return ret;
	}
	INIT_LIST_HEAD(&ep->res.node);
	/* Its QP, and its barrier QP and its own CQ where it has them. */
	ret = kdat_dev_res_add(pz->ia->kdev, &ep->res,
			       1 + !!ep->barrier_qp + !!ep->sw_cq,
			       kdat_ep_disassociate);
	up_read(&pz->ia->kdev->rwsem);
	if (!ret)
		ret = kdat_obj_reserve(kfile, &ep->obj, pz->ia);
	if (ret) {
		kdat_ep_release(ep);
		kdat_ep_free_ctx(ep);
		kdat_evd_uncommit(recv_evd, ep->recv_cqes);
		kdat_evd_uncommit(req_evd, ep->send_cqes);
		kdat_obj_abort(&ep->obj);
		return ret;
	}

	kdat_obj_use(&recv_evd->obj, pz->ia);
	kdat_obj_use(&req_evd->obj, pz->ia);
	if (conn_evd)
		kdat_obj_use(&conn_evd->obj, pz->ia);
	kdat_obj_use(&pz->obj, pz->ia);
	if (srq)
		kdat_obj_use(&srq->obj, pz->ia);
	*epp = ep;
	return 0;
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
			  &cmd->attr, &cmd->timers, cmd->flags, &ep);
	if (!ret) {
		cmd->attr = ep->attr;
		cmd->timers = ep->timers;
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
	cmd->timers = ep->timers;
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
	/*
	 * What the rings hold was posted before the modify: it counts
	 * against the new limits. The file's rings, receives first, as for
	 * a disconnect (kdat_cmd_ep_disconnect()).
	 */
	kdat_rings_take(kfile);
	ep = kdat_get(kfile, cmd->ep_handle, struct kdat_ep, KDAT_OBJ_EP);
	if (!ep)
		return -EBADF;
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
