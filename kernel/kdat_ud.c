// SPDX-License-Identifier: GPL-2.0
/*
 * kdat UD Endpoints: their QP, their datagrams' address handles (AHs),
 * and the "connections" that make AHs, over the RDMA CM's service ID
 * resolution (SIDR) in its UDP port space. What a consumer sees is in the
 * uapi header ("UD Endpoints"); how it is done:
 *
 * A connect or an accept's AH back is a struct kdat_ud_conn with a cm_id
 * of its own (an Endpoint may have many under way). Active: address,
 * route, SIDR request with the UD header (our QP number); the reply's
 * ESTABLISHED event brings the AH's attributes. Passive: the accept sends
 * the SIDR reply, then resolves the requester's address and route, whose
 * path gives the AH's attributes (a SIDR request carries none). Either
 * ends with an AH object and KDAT_EVENT_UD_ESTABLISHED, or another event.
 *
 * A conn is on its EP's ud_conns from its start; the CM handler takes it
 * off to finish it (ud_finishing counts those), or the EP's teardown takes
 * every one left, marks them given up and destroys their ids, which waits
 * for a handler still running; then it waits for those finishing. A
 * finished conn's id is destroyed by a work item on kdat_cm.c's queue (a
 * handler may not destroy its own id; see kdat_cm_id_free()); the
 * module's exit waits for those.
 *
 * An AH is an object of the EP's file: it uses its EP; each datagram in
 * flight uses it (kdat_ud_dto_ah(), kdat_ud_dto_done()). Made in the CM
 * handler, which may not wait for the file lock, it is published under
 * obj_lock alone, as a CR is, and only while its EP is alive.
 *
 * What a conn makes on its caller's behalf is charged to that caller,
 * although the AH is made in the CM's worker: the conn starts in the
 * caller's system call with its AH object allocated (memory cgroup), its
 * handle reserved (the file's max_objects) and one HCA object charged in
 * the caller's RDMA cgroup; the handler only fills it in. An EP has at
 * most KDAT_UD_MAX_CONNS conns under way (uapi: ENOMEM past that).
 */
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <rdma/ib_sa.h>
#include <rdma/rdma_cm_ib.h>

#include "kdat.h"

#define KDAT_UD_CM_TIMEOUT_MS	5000

static_assert(KDAT_UD_QKEY == RDMA_UDP_QKEY);
static_assert(KDAT_UD_HDR_LEN + KDAT_MAX_PRIVATE_DATA <=
	      IB_CM_SIDR_REP_PRIVATE_DATA_SIZE);

/* A UD connect, or an accept's AH back, under way. */
struct kdat_ud_conn {
	enum kdat_cm_kind cm_kind;	/* KDAT_CM_UD: the cm_id's context */
	struct kdat_ep *ep;
	struct rdma_cm_id *id;
	struct list_head node;		/* in ep->ud_conns, under ep->ud_lock */
	/*
	 * The AH it makes, charged to its caller (see the top); the conn's
	 * until kdat_ud_ah_make() takes it, or the conn ends without.
	 */
	struct kdat_ah *ah;
	bool passive;
	bool cancelled;			/* given up; under ep->ud_lock */
	bool done;			/* finished: only its id is left */
	struct work_struct free_work;
	unsigned long timeout_ms;
	/* Passive: the requester's QP, and where the request came to. */
	u32 remote_qpn, remote_qkey;
	struct sockaddr_storage local;
	struct sockaddr_storage remote;
	/*
	 * Active: what the request carries (header and consumer's data);
	 * passive: the requester's data.
	 */
	u32 pdata_len;
	u8 pdata[KDAT_UD_HDR_LEN + KDAT_PRIVATE_DATA_BUF];
};

/* ---- the UD header of SIDR private data ------------------------------ */

/*
 * Write the UD header, then @len bytes of @pdata, at @buf (room for both);
 * returns their length.
 */
int kdat_ud_hdr_put(u8 *buf, const void *pdata, u32 len, u32 qpn, u32 qkey)
{
	buf[0] = 2;	/* DAT 2.0 */
	buf[1] = 0;
	put_unaligned_be16(len, buf + 2);
	put_unaligned_be32(qpn, buf + 4);
	put_unaligned_be32(qkey, buf + 8);
	if (len)
		memcpy(buf + KDAT_UD_HDR_LEN, pdata, len);
	return KDAT_UD_HDR_LEN + len;
}

/*
 * The consumer's data in the private data @buf of a SIDR message (@buf_len
 * bytes as the CM reports them, padded): what follows a UD header of DAT
 * 2.0 whose length fits, with *@len, *@qpn, *@qkey set. NULL when there is
 * no such header (the outputs untouched).
 */
const u8 *kdat_ud_hdr_get(const u8 *buf, u32 buf_len, u32 *len, u32 *qpn,
			  u32 *qkey)
{
	u32 n;

	if (!buf || buf_len < KDAT_UD_HDR_LEN || buf[0] != 2 || buf[1] != 0)
		return NULL;
	n = get_unaligned_be16(buf + 2);
	if (n > buf_len - KDAT_UD_HDR_LEN)
		return NULL;
	*len = n;
	*qpn = get_unaligned_be32(buf + 4);
	*qkey = get_unaligned_be32(buf + 8);
	return buf + KDAT_UD_HDR_LEN;
}

/* ---- the QP ---------------------------------------------------------- */

/* A new UD QP to INIT, RTR and RTS: it sends and receives from now on. */
int kdat_ud_qp_ready(struct kdat_ep *ep)
{
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.pkey_index = 0,
		.port_num = ep->pz->ia->port_num,
		.qkey = KDAT_UD_QKEY,
	};
	int ret;

	ret = ib_modify_qp(ep->qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_QKEY);
	if (ret)
		return ret;
	attr.qp_state = IB_QPS_RTR;
	ret = ib_modify_qp(ep->qp, &attr, IB_QP_STATE);
	if (ret)
		return ret;
	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = 0;
	return ib_modify_qp(ep->qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN);
}

/* Are the EP's datagrams done, their completion handlers returned? */
static bool kdat_ud_sq_idle(struct kdat_ep *ep)
{
	unsigned long flags;
	bool idle;

	spin_lock_irqsave(&ep->lock, flags);
	idle = !ep->send.posted && !ep->ud_done_busy;
	spin_unlock_irqrestore(&ep->lock, flags);
	return idle;
}

/*
 * Flush the send queue and wait for its completions. ib_drain_sq() cannot
 * serve: its marker is an RDMA write, which a UD QP refuses (and
 * ib_core warns). Every datagram is posted signalled, so each completes,
 * flushed at worst; kdat_dto_done() counts itself in ud_done_busy until
 * it has let go of the EP, so once both counts are 0 nothing of the send
 * side touches it any more.
 */
void kdat_ud_drain_sq(struct kdat_ep *ep, bool linger)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	int ret;

	/*
	 * @linger (the EP goes; a reset flushes, as DAT says): datagrams
	 * posted before are sent first, as a device that sends them when
	 * they are posted would have (6.12's rxe sends from a worker,
	 * later): a second at most, ended by the device's removal.
	 */
	if (linger)
		kdat_ep_wait(ep, &ep->idle_wq, kdat_ud_sq_idle, HZ);
	ret = ib_modify_qp(ep->qp, &attr, IB_QP_STATE);
	if (ret) {
		pr_err("kdat: EP %u: UD QP to error: %d\n", ep->obj.handle,
		       ret);
		return;
	}
	/* Untimed: a datagram never completed is for the hung-task report. */
	wait_event(ep->idle_wq, kdat_ud_sq_idle(ep));
}

/* ---- address handles ------------------------------------------------- */

/* The device is going; the EP, listed after it, was drained before. */
static void kdat_ah_disassociate(struct kdat_dev_res *res)
{
	struct kdat_ah *ah = container_of(res, struct kdat_ah, res);

	rdma_destroy_ah(ah->ah, RDMA_DESTROY_AH_SLEEPABLE);
	ah->ah = NULL;
}

static void kdat_ah_destroy(struct kdat_obj *obj)
{
	struct kdat_ah *ah = container_of(obj, struct kdat_ah, obj);
	struct kdat_device *kdev = ah->ep->pz->ia->kdev;

	/* Datagrams posted by threads that found it before it was unlinked. */
	kdat_obj_wait_unused(obj);
	down_read(&kdev->rwsem);
	if (kdat_dev_res_del(kdev, &ah->res))
		kdat_ah_disassociate(&ah->res);
	up_read(&kdev->rwsem);
	kdat_obj_unuse(&ah->ep->obj, ah->obj.ia);
}

static const struct kdat_obj_ops kdat_ah_ops = {
	.destroy = kdat_ah_destroy,
};

/*
 * An AH for a conn of @ep, made in the caller's context and charged to
 * it (see the top): allocated, its handle reserved, one HCA object
 * charged. The caller holds the device's rwsem and checked the QP.
 */
static struct kdat_ah *kdat_ud_ah_new(struct kdat_ep *ep)
{
	struct kdat_device *kdev = ep->pz->ia->kdev;
	struct kdat_ah *ah;

	ah = kdat_obj_alloc(struct kdat_ah, obj, KDAT_OBJ_AH, &kdat_ah_ops);
	if (!ah)
		return NULL;
	INIT_LIST_HEAD(&ah->res.node);
	ah->ep = ep;
	if (kdat_obj_reserve(ep->obj.file, &ah->obj, ep->obj.ia)) {
		kdat_obj_abort(&ah->obj);
		return NULL;
	}
	if (kdat_dev_res_charge(kdev, &ah->res, 1)) {
		kdat_obj_abort(&ah->obj);
		return NULL;
	}
	return ah;
}

/*
 * An AH of kdat_ud_ah_new() that was not made: its charge and handle go
 * back. The device is there: the caller holds its rwsem, or finishes a
 * conn, which the EP's teardown (and so the device's removal) waits for.
 */
static void kdat_ud_ah_put(struct kdat_device *kdev, struct kdat_ah *ah)
{
	kdat_dev_res_uncharge(kdev, &ah->res);
	kdat_obj_abort(&ah->obj);
}

/*
 * The AH of a finishing @conn, from @attr, to the peer's @qpn and @qkey,
 * with the peer's @pdata: made, published in the EP's file, reported
 * (KDAT_EVENT_UD_ESTABLISHED). 0, or -errno and nothing made. The CM
 * handler's context: the device's rwsem is only tried (a writer is the
 * device's removal), the file lock not taken at all (see kdat_cm.c).
 */
static int kdat_ud_ah_make(struct kdat_ud_conn *conn,
			   struct rdma_ah_attr *attr, u32 qpn, u32 qkey,
			   const u8 *pdata, u32 pdata_len)
{
	struct kdat_ep *ep = conn->ep;
	struct kdat_file *kfile = ep->obj.file;
	struct kdat_device *kdev = ep->pz->ia->kdev;
	struct kdat_event ev = {
		.event_number = KDAT_EVENT_UD_ESTABLISHED,
		.handle = ep->obj.handle,
		.remote_qpn = qpn,
	};
	struct kdat_ah *ah = conn->ah;
	bool alive;
	int ret;

	conn->ah = NULL;
	ah->remote_qpn = qpn;
	ah->remote_qkey = qkey;
	ah->passive = conn->passive;
	ah->remote = conn->remote;
	ah->pdata_len = min_t(u32, pdata_len, sizeof(ah->pdata));
	if (ah->pdata_len)
		memcpy(ah->pdata, pdata, ah->pdata_len);

	ret = -ENODEV;
	if (!down_read_trylock(&kdev->rwsem))
		goto err_free;
	if (!ep->qp)
		goto err_unlock;
	ah->ah = rdma_create_ah(ep->pz->pd, attr, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(ah->ah)) {
		ret = PTR_ERR(ah->ah);
		ah->ah = NULL;
		goto err_unlock;
	}
	ret = -ENODEV;
	if (!__kdat_dev_res_add_before(kdev, &ah->res, &ep->res,
				       kdat_ah_disassociate))
		goto err_ah;	/* the EP let go of the device */
	ev.ah_handle = ah->obj.handle;
	ev.private_data_len = ah->pdata_len;
	spin_lock(&kfile->obj_lock);
	alive = kdat_obj_alive(&ep->obj);
	if (alive) {
		kdat_obj_use(&ep->obj, ep->obj.ia);
		kdat_obj_publish_obj_locked(&ah->obj);
	}
	spin_unlock(&kfile->obj_lock);
	if (!alive) {
		kdat_dev_res_del(kdev, &ah->res);
		goto err_ah;	/* the EP is being destroyed */
	}
	up_read(&kdev->rwsem);
	/* @ah may be destroyed already: the event was built before. */
	kdat_ep_conn_push(ep, &ev);
	return 0;

err_ah:
	rdma_destroy_ah(ah->ah, RDMA_DESTROY_AH_SLEEPABLE);
err_unlock:
	up_read(&kdev->rwsem);
err_free:
	kdat_ud_ah_put(kdev, ah);
	return ret;
}

/*
 * A datagram for @ep, otherwise checked: its AH (dto->ext.ah_handle) must
 * be one of @ep's (EBADF: no AH of the caller's; EINVAL: another EP's)
 * whose device is there. The datagram uses it from here (dto->ah) until
 * it completes or is given up (kdat_ud_dto_done()). The caller holds the
 * device's rwsem for read.
 */
int kdat_ud_dto_ah(struct kdat_file *kfile, struct kdat_ep *ep,
		   struct kdat_dto *dto)
{
	struct kdat_ah *ah;
	int ret = 0;

	ah = kdat_get(kfile, dto->ext.ah_handle, struct kdat_ah, KDAT_OBJ_AH);
	if (!ah)
		return -EBADF;
	if (ah->ep != ep) {
		ret = -EINVAL;
	} else if (!ah->ah) {
		ret = -ENODEV;
	} else {
		/*
		 * Taken while we hold a reference: if the AH is being
		 * destroyed, its destroy waits for this use to go.
		 */
		kdat_obj_use(&ah->obj, ah->obj.ia);
		dto->ah = ah;
	}
	kdat_obj_put(&ah->obj);
	return ret;
}

/* A datagram is done with its AH (NULL: none); any context. */
void kdat_ud_dto_done(struct kdat_ah *ah)
{
	if (ah)
		kdat_obj_unuse(&ah->obj, ah->obj.ia);
}

int kdat_cmd_ah_query(struct kdat_ucmd *ucmd)
{
	struct kdat_ah_query *cmd = ucmd->cmd;
	struct kdat_ah *ah;

	if (cmd->__reserved)
		return -EINVAL;
	ah = kdat_get(ucmd->kfile, cmd->ah_handle, struct kdat_ah,
		      KDAT_OBJ_AH);
	if (!ah)
		return -EBADF;
	cmd->ep_handle = ah->ep->obj.handle;
	cmd->flags = ah->passive ? KDAT_AH_PASSIVE : 0;
	cmd->remote_qpn = ah->remote_qpn;
	cmd->remote_qkey = ah->remote_qkey;
	kdat_sockaddr_to_user(&ah->remote, &cmd->remote);
	cmd->private_data_len = ah->pdata_len;
	memset(cmd->private_data, 0, sizeof(cmd->private_data));
	memcpy(cmd->private_data, ah->pdata, ah->pdata_len);
	kdat_obj_put(&ah->obj);
	return kdat_ucmd_respond(ucmd, sizeof(*cmd));
}

/* ---- connects and accepts -------------------------------------------- */

static void kdat_ud_conn_free(struct work_struct *work)
{
	struct kdat_ud_conn *conn = container_of(work, struct kdat_ud_conn,
						 free_work);

	rdma_destroy_id(conn->id);	/* waits for its handler */
	kfree(conn);
}

/* May the CM handler act on @conn (not given up)? */
static bool kdat_ud_live(struct kdat_ud_conn *conn)
{
	struct kdat_ep *ep = conn->ep;
	bool live;

	spin_lock(&ep->ud_lock);
	live = !conn->cancelled;
	spin_unlock(&ep->ud_lock);
	return live;
}

/*
 * Take @conn off its EP's list to finish it; false when the EP gave it
 * up (its teardown destroys the id). Finishing, it keeps the EP alive:
 * the teardown waits for kdat_ud_done().
 */
static bool kdat_ud_claim(struct kdat_ud_conn *conn)
{
	struct kdat_ep *ep = conn->ep;
	bool mine;

	spin_lock(&ep->ud_lock);
	mine = !conn->cancelled;
	if (mine) {
		list_del_init(&conn->node);
		ep->ud_nr_conns--;
		ep->ud_finishing++;
	}
	spin_unlock(&ep->ud_lock);
	return mine;
}

/*
 * A claimed @conn is finished: its id goes in a work item; the EP is let
 * go (the last touch of it: once ud_finishing is 0 it may be freed).
 */
static void kdat_ud_done(struct kdat_ud_conn *conn)
{
	struct kdat_ep *ep = conn->ep;

	if (conn->ah)
		kdat_ud_ah_put(ep->pz->ia->kdev, conn->ah);
	conn->ah = NULL;
	conn->done = true;
	INIT_WORK(&conn->free_work, kdat_ud_conn_free);
	kdat_cm_defer(&conn->free_work);
	spin_lock(&ep->ud_lock);
	if (!--ep->ud_finishing)
		wake_up(&ep->ud_wq);
	spin_unlock(&ep->ud_lock);
}

/* No AH came of a connect or accept of @ep. */
static void kdat_ud_error_event(struct kdat_ep *ep)
{
	struct kdat_event ev = {
		.event_number = KDAT_EVENT_UD_ERROR,
		.handle = ep->obj.handle,
	};

	kdat_ep_conn_push(ep, &ev);
}

/* @conn ends without an AH: event @number (@pdata: a reject's). */
static void kdat_ud_fail(struct kdat_ud_conn *conn, u32 number,
			 const u8 *pdata, u32 len)
{
	struct kdat_ep *ep = conn->ep;
	struct kdat_event ev = {
		.event_number = number,
		.handle = ep->obj.handle,
	};

	if (!kdat_ud_claim(conn))
		return;
	if (number == KDAT_EVENT_UD_REJECTED) {
		kdat_ep_save_pdata(ep, pdata, pdata ? len : 0);
		ev.private_data_len = pdata ? len : 0;
	}
	kdat_ep_conn_push(ep, &ev);
	kdat_ud_done(conn);
}

/* Active: the SIDR reply accepted; its attributes make the AH. */
static void kdat_ud_established(struct kdat_ud_conn *conn,
				struct rdma_ud_param *ud)
{
	u32 len = 0, qpn, qkey;
	const u8 *data;

	if (!kdat_ud_claim(conn))
		return;
	/* A reply without our header brings no private data. */
	data = kdat_ud_hdr_get(ud->private_data, ud->private_data_len, &len,
			       &qpn, &qkey);
	if (kdat_ud_ah_make(conn, &ud->ah_attr, ud->qp_num, ud->qkey, data,
			    data ? len : 0))
		kdat_ud_error_event(conn->ep);
	kdat_ud_done(conn);
}

/* Passive: the route back to the requester gives the AH's attributes. */
static void kdat_ud_route_ah(struct kdat_ud_conn *conn, struct rdma_cm_id *id)
{
	struct rdma_ah_attr attr;
	int ret = -EINVAL;

	if (!kdat_ud_claim(conn))
		return;
	if (id->route.path_rec) {
		ret = ib_init_ah_attr_from_path(id->device, id->port_num,
						id->route.path_rec, &attr,
						id->route.addr.dev_addr.sgid_attr);
		if (!ret) {
			ret = kdat_ud_ah_make(conn, &attr, conn->remote_qpn,
					      conn->remote_qkey, conn->pdata,
					      conn->pdata_len);
			rdma_destroy_ah_attr(&attr);
		}
	}
	if (ret)
		kdat_ud_error_event(conn->ep);
	kdat_ud_done(conn);
}

/* RDMA CM events of a UD conn's id, from kdat_cm_handler(). */
int kdat_ud_cm_event(struct rdma_cm_id *id, struct rdma_cm_event *event)
{
	struct kdat_ud_conn *conn = container_of(id->context,
						 struct kdat_ud_conn, cm_kind);
	struct rdma_conn_param param = {};
	struct kdat_ep *ep;
	u32 len = 0, qpn, qkey;
	const u8 *data;

	/* Finished: the EP may be gone; only the id is left to destroy. */
	if (conn->done)
		return 0;
	/*
	 * Given up: the teardown destroys the id once we return, and the EP
	 * and its QP stay until then.
	 */
	if (!kdat_ud_live(conn))
		return 0;
	ep = conn->ep;

	switch (event->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (id->device != ep->qp->device ||
		    id->port_num != ep->pz->ia->port_num ||
		    rdma_resolve_route(id, conn->timeout_ms))
			kdat_ud_fail(conn, KDAT_EVENT_UD_ERROR, NULL, 0);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (conn->passive) {
			kdat_ud_route_ah(conn, id);
			break;
		}
		param.private_data = conn->pdata;
		param.private_data_len = conn->pdata_len;
		param.qp_num = ep->qp->qp_num;
		if (rdma_connect_locked(id, &param))
			kdat_ud_fail(conn, KDAT_EVENT_UD_ERROR, NULL, 0);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (!conn->passive)
			kdat_ud_established(conn, &event->param.ud);
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
		/*
		 * A SIDR reply that refuses (status > 0: the peer's reject, or
		 * its CM's: no listener, a full backlog) is a reject, with
		 * private data when it carries our header, as a consumer's
		 * does; a request that timed out (< 0) is an error.
		 */
		if (event->status > 0) {
			data = kdat_ud_hdr_get(event->param.ud.private_data,
					       event->param.ud.private_data_len,
					       &len, &qpn, &qkey);
			kdat_ud_fail(conn, KDAT_EVENT_UD_REJECTED, data, len);
			break;
		}
		fallthrough;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		kdat_ud_fail(conn, KDAT_EVENT_UD_ERROR, NULL, 0);
		break;
	default:
		break;
	}
	return 0;
}

/*
 * A conn that never started, or did not start: its id, its AH and
 * itself go. The caller holds the device's rwsem.
 */
static void kdat_ud_conn_destroy(struct kdat_ud_conn *conn)
{
	rdma_destroy_id(conn->id);
	kdat_ud_ah_put(conn->ep->pz->ia->kdev, conn->ah);
	kfree(conn);
}

/*
 * Start @conn (its id made, its fields set): on the EP's list, then the
 * address resolution from @src (NULL: any) to conn->remote. -errno when
 * it did not start, and @conn is destroyed.
 */
static int kdat_ud_start(struct kdat_ud_conn *conn, struct sockaddr *src)
{
	struct kdat_ep *ep = conn->ep;
	int ret = 0;

	spin_lock(&ep->ud_lock);
	if (ep->ud_dead) {
		ret = -ENODEV;
	} else if (ep->ud_nr_conns >= KDAT_UD_MAX_CONNS) {
		ret = -ENOMEM;
	} else {
		list_add_tail(&conn->node, &ep->ud_conns);
		ep->ud_nr_conns++;
	}
	spin_unlock(&ep->ud_lock);
	if (!ret) {
		ret = rdma_resolve_addr(conn->id, src,
					(struct sockaddr *)&conn->remote,
					conn->timeout_ms);
		/*
		 * No event comes for it now, and no teardown can have taken
		 * it: the caller holds the EP and the device's rwsem.
		 */
		if (ret) {
			spin_lock(&ep->ud_lock);
			list_del(&conn->node);
			ep->ud_nr_conns--;
			spin_unlock(&ep->ud_lock);
		}
	}
	if (ret)
		kdat_ud_conn_destroy(conn);
	return ret;
}

static struct kdat_ud_conn *kdat_ud_conn_new(struct kdat_ep *ep,
					     unsigned long timeout_ms)
{
	struct kdat_ud_conn *conn;

	conn = kzalloc(sizeof(*conn), GFP_KERNEL_ACCOUNT);
	if (!conn)
		return NULL;
	conn->cm_kind = KDAT_CM_UD;
	conn->ep = ep;
	conn->timeout_ms = timeout_ms;
	INIT_LIST_HEAD(&conn->node);
	conn->ah = kdat_ud_ah_new(ep);
	if (!conn->ah)
		goto err_free;
	conn->id = rdma_create_id(ep->obj.file->net, kdat_cm_handler,
				  &conn->cm_kind, RDMA_PS_UDP, IB_QPT_UD);
	if (IS_ERR(conn->id))
		goto err_ah;
	return conn;

err_ah:
	kdat_ud_ah_put(ep->pz->ia->kdev, conn->ah);
err_free:
	kfree(conn);
	return NULL;
}

/*
 * Ask the peer at @dst (its port the qualifier's) for an AH for UD @ep,
 * sending @pdata; the outcome comes as a UD event. The caller holds the
 * EP and the device's rwsem for read, and checked the QP.
 */
int kdat_ud_connect(struct kdat_ep *ep, struct sockaddr_storage *dst,
		    unsigned long timeout_ms, const void *pdata, u32 pdata_len)
{
	struct kdat_ud_conn *conn;
	int ret;

	if (pdata_len > KDAT_MAX_PRIVATE_DATA)
		return -EINVAL;
	conn = kdat_ud_conn_new(ep, timeout_ms);
	if (!conn)
		return -ENOMEM;
	conn->remote = *dst;
	conn->pdata_len = kdat_ud_hdr_put(conn->pdata, pdata, pdata_len,
					  ep->qp->qp_num, KDAT_UD_QKEY);
	ret = kdat_ud_start(conn, NULL);
	if (ret) {
		return ret == -ENETUNREACH || ret == -EADDRNOTAVAIL ||
		       ret == -ENODEV ? -EADDRNOTAVAIL : ret;
	}
	return 0;
}

/*
 * Accept the UD request @cr (on @id, whose handler lock the caller holds,
 * with the device's rwsem for read) with UD @ep: the SIDR reply gives the
 * requester @ep's QP number and Q_Key and @pdata. EINVAL, ENODEV, ENOMEM:
 * refused before the reply; ECONNABORTED: the reply failed (the request
 * is rejected). Where an id was made for the AH back to the requester it
 * is left in *@connp, for kdat_ud_accept_finish() once the caller dropped
 * the handler lock: an id is not destroyed under another's (lockdep
 * knows them as one lock).
 */
int kdat_ud_accept(struct kdat_ep *ep, struct kdat_cr *cr,
		   struct rdma_cm_id *id, const void *pdata, u32 pdata_len,
		   struct kdat_ud_conn **connp)
{
	u8 rep[KDAT_UD_HDR_LEN + KDAT_MAX_PRIVATE_DATA];
	struct rdma_conn_param param = {};
	struct kdat_ud_conn *conn;

	*connp = NULL;
	if (pdata_len > KDAT_MAX_PRIVATE_DATA)
		return -EINVAL;
	if (!ep->qp)
		return -ENODEV;
	if (id->device != ep->qp->device)
		return -EINVAL;
	conn = kdat_ud_conn_new(ep, KDAT_UD_CM_TIMEOUT_MS);
	if (!conn)
		return -ENOMEM;
	*connp = conn;
	conn->passive = true;
	conn->remote_qpn = cr->remote_qpn;
	conn->remote_qkey = cr->remote_qkey;
	conn->remote = cr->remote;
	conn->pdata_len = min_t(u32, cr->pdata_len, sizeof(conn->pdata));
	memcpy(conn->pdata, cr->pdata, conn->pdata_len);
	/* From our address, any port: the PSP's is taken. */
	memcpy(&conn->local, &id->route.addr.src_addr, sizeof(conn->local));
	if (conn->local.ss_family == AF_INET)
		((struct sockaddr_in *)&conn->local)->sin_port = 0;
	else if (conn->local.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&conn->local)->sin6_port = 0;

	param.qp_num = ep->qp->qp_num;
	param.qkey = KDAT_UD_QKEY;
	param.private_data = rep;
	param.private_data_len = kdat_ud_hdr_put(rep, pdata, pdata_len,
						 ep->qp->qp_num,
						 KDAT_UD_QKEY);
	return rdma_accept(id, &param) ? -ECONNABORTED : 0;
}

/*
 * After kdat_ud_accept() answered @ret, the handler lock dropped (the
 * device's rwsem still held): with the reply sent, resolve the AH back to
 * the requester (a failure comes as KDAT_EVENT_UD_ERROR); else the id
 * goes.
 */
void kdat_ud_accept_finish(struct kdat_ep *ep, struct kdat_ud_conn *conn,
			   int ret)
{
	if (!conn)
		return;
	if (ret) {
		kdat_ud_conn_destroy(conn);
		return;
	}
	if (kdat_ud_start(conn, (struct sockaddr *)&conn->local))
		kdat_ud_error_event(ep);
}

/* Reject the UD request on @id: the header, then @pdata. */
int kdat_ud_reject(struct rdma_cm_id *id, const void *pdata, u32 pdata_len)
{
	u8 rej[KDAT_UD_HDR_LEN + KDAT_MAX_PRIVATE_DATA];

	if (pdata_len > KDAT_MAX_PRIVATE_DATA)
		return -EINVAL;
	return rdma_reject(id, rej, kdat_ud_hdr_put(rej, pdata, pdata_len, 0,
						    0),
			   IB_CM_REJ_CONSUMER_DEFINED);
}

static bool kdat_ud_idle(struct kdat_ep *ep)
{
	bool idle;

	spin_lock(&ep->ud_lock);
	idle = !ep->ud_finishing;
	spin_unlock(&ep->ud_lock);
	return idle;
}

/*
 * The EP is going (destroy or the device's removal): give up its connects
 * and accepts under way, wait for those finishing. No new one starts.
 */
void kdat_ud_teardown(struct kdat_ep *ep)
{
	struct kdat_ud_conn *conn, *tmp;
	LIST_HEAD(gone);

	if (!ep->ud)
		return;
	spin_lock(&ep->ud_lock);
	ep->ud_dead = true;
	list_for_each_entry(conn, &ep->ud_conns, node)
		conn->cancelled = true;
	list_splice_init(&ep->ud_conns, &gone);
	ep->ud_nr_conns = 0;
	spin_unlock(&ep->ud_lock);
	/* The caller holds the device's rwsem (destroy or removal). */
	list_for_each_entry_safe(conn, tmp, &gone, node)
		kdat_ud_conn_destroy(conn);	/* waits for its handler */
	wait_event(ep->ud_wq, kdat_ud_idle(ep));
}
