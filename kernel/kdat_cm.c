// SPDX-License-Identifier: GPL-2.0
/*
 * kdat Public Service Points and Connection Requests on the RDMA CM.
 *
 * All kdat cm_ids share kdat_cm_handler(); their context points at the
 * enum kdat_cm_kind member of the EP, PSP or CR that owns them. A
 * connection request arrives on a new cm_id whose context is the PSP's:
 * the handler wraps it in a CR object of the PSP's file and queues a
 * connection request event. Accepting hands the cm_id to the EP, under
 * the CM's handler lock, so no event sees it half moved. A PSP listens in
 * the UDP port space too: UD requests (SIDR) become CRs alike, which a UD
 * Endpoint accepts (kdat_ud.c); their cm_id stays the CR's.
 */
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/memcontrol.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kdat.h"

static unsigned int max_conn_requests = 4096;
module_param(max_conn_requests, uint, 0644);
MODULE_PARM_DESC(max_conn_requests,
		 "connection requests a PSP holds unanswered (at most its EVD's length); more are rejected");

/*
 * What goes on the wire is what OFA DAPL's cma provider sends, so that a
 * kdat host and an OFA host are each other's peers:
 *
 * A connection qualifier is an RDMA CM port (TCP port space). One that
 * fits in 16 bits is the port itself; a larger one is folded into the
 * upper half of the port space: 33534 + qualifier % 32001 (65534 at most).
 *
 * A consumer's reject carries a 4-byte version word before the consumer's
 * data: DAT major and minor, then the provider's major and minor (2.0,
 * 2.0). A rejecting peer that did not put it there is no DAT consumer (the
 * CM itself rejects with nothing when a request finds no listener or a
 * full backlog): that is a non-peer reject. What the consumer sees is the
 * data after the word.
 */
#define KDAT_QUAL_FOLD		32001
#define KDAT_QUAL_FOLD_BASE	(U16_MAX - KDAT_QUAL_FOLD)

static const u8 kdat_rej_hdr[KDAT_REJ_HDR_LEN] = { 2, 0, 2, 0 };

/*
 * Ids a CM handler lets go. A handler may not destroy its own id, and one
 * returning non-zero to have the CM do it would still be running module
 * code on its object (at least the unlock of the object's mutex) after
 * that object, and the module, may be gone: nothing would wait for it.
 * So such an id goes to a work item, with a reference to its object:
 * its rdma_destroy_id() waits for the handler (and any later event of
 * the id), then it lets the object go, whose destruction waits for that
 * (kdat_obj_finish()); the module's exit waits for the work. The item is
 * made beforehand (kdat_cm_id_free_alloc()), where a failure can be
 * answered, so that letting go never fails. UD conns (kdat_ud.c) finish
 * on the same queue.
 */
static struct workqueue_struct *kdat_cm_wq;

struct kdat_cm_id_free {
	struct work_struct work;
	struct rdma_cm_id *id;
	struct kdat_obj *obj;
};

static void kdat_cm_id_free_work(struct work_struct *work)
{
	struct kdat_cm_id_free *f = container_of(work, struct kdat_cm_id_free,
						 work);

	rdma_destroy_id(f->id);
	kdat_obj_put(f->obj);	/* the last touch of the object */
	kfree(f);
}

struct kdat_cm_id_free *kdat_cm_id_free_alloc(void)
{
	struct kdat_cm_id_free *f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);

	if (f)
		INIT_WORK(&f->work, kdat_cm_id_free_work);
	return f;
}

/*
 * @id, whose context is @obj's, is destroyed in a moment by the work of @f
 * (which it frees); @obj's reference, which the caller took, goes after.
 */
void kdat_cm_id_free(struct kdat_cm_id_free *f, struct rdma_cm_id *id,
		     struct kdat_obj *obj)
{
	f->id = id;
	f->obj = obj;
	queue_work(kdat_cm_wq, &f->work);
}

void kdat_cm_defer(struct work_struct *work)
{
	queue_work(kdat_cm_wq, work);
}

int kdat_cm_init(void)
{
	kdat_cm_wq = alloc_workqueue("kdat_cm", 0, 0);
	if (!kdat_cm_wq)
		return -ENOMEM;
	return 0;
}

/* No file is open: every EP is gone; wait for the ids let go. */
void kdat_cm_exit(void)
{
	destroy_workqueue(kdat_cm_wq);
}

u16 kdat_qual_port(u64 conn_qual)
{
	u32 rem;

	if (conn_qual <= U16_MAX)
		return conn_qual;
	div_u64_rem(conn_qual, KDAT_QUAL_FOLD, &rem);
	return KDAT_QUAL_FOLD_BASE + rem;
}

/*
 * The consumer's part of a reject's private data: after the version word,
 * whose DAT version must be 2.0. NULL when it has none (*len untouched).
 */
const u8 *kdat_rej_pdata(const u8 *data, u32 *len)
{
	if (!data || *len < KDAT_REJ_HDR_LEN ||
	    memcmp(data, kdat_rej_hdr, 2))
		return NULL;
	*len -= KDAT_REJ_HDR_LEN;
	return data + KDAT_REJ_HDR_LEN;
}

int kdat_sockaddr_from_user(const struct kdat_sockaddr *ua,
			    struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (ua->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = ua->port;
		memcpy(&sin->sin_addr, ua->addr, 4);
		return 0;
	}
	if (ua->family == AF_INET6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = ua->port;
		sin6->sin6_scope_id = ua->scope_id;
		memcpy(&sin6->sin6_addr, ua->addr, 16);
		return 0;
	}
	return -EINVAL;
}

void kdat_sockaddr_to_user(const struct sockaddr_storage *ss,
			   struct kdat_sockaddr *ua)
{
	memset(ua, 0, sizeof(*ua));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)ss;

		ua->family = AF_INET;
		ua->port = sin->sin_port;
		memcpy(ua->addr, &sin->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)ss;

		ua->family = AF_INET6;
		ua->port = sin6->sin6_port;
		ua->scope_id = sin6->sin6_scope_id;
		memcpy(ua->addr, &sin6->sin6_addr, 16);
	}
}

/* Neither accepted nor rejected: destroying the id rejects the request. */
static void kdat_cr_disassociate(struct kdat_dev_res *res)
{
	struct kdat_cr *cr = container_of(res, struct kdat_cr, res);

	rdma_destroy_id(cr->cm_id);
	cr->cm_id = NULL;
}

static void kdat_cr_destroy(struct kdat_obj *obj)
{
	struct kdat_cr *cr = container_of(obj, struct kdat_cr, obj);
	struct kdat_device *kdev = cr->psp->ia->kdev;

	/* No reply can run any more: they hold a reference. */
	down_read(&kdev->rwsem);
	if (kdat_dev_res_del(kdev, &cr->res))
		kdat_cr_disassociate(&cr->res);
	up_read(&kdev->rwsem);
	kdat_obj_unuse(&cr->psp->obj, cr->obj.ia);
}

static const struct kdat_obj_ops kdat_cr_ops = {
	.destroy = kdat_cr_destroy,
};

/* A connection request on @psp's listener; the CM handler context. */
static int kdat_psp_request(struct kdat_psp *psp, struct rdma_cm_id *id,
			    struct rdma_cm_event *event)
{
	struct kdat_file *kfile = psp->obj.file;
	struct kdat_event ev = {
		.event_number = KDAT_EVENT_CONNECTION_REQUEST,
		.handle = psp->obj.handle,
		.conn_qual = psp->conn_qual,
	};
	struct kdat_device *kdev = psp->ia->kdev;
	bool ud = id->qp_type == IB_QPT_UD;
	struct mem_cgroup *old_memcg;
	struct kdat_cr *cr;
	u32 backlog;
	bool alive;
	int ret;

	/* An RSP takes one request; the CM rejects the others. */
	if (psp->rsp_ep && psp->rsp_fired)
		return -ECONNREFUSED;

	/* Made in the CM's worker for the PSP's owner: charged to it. */
	old_memcg = set_active_memcg(psp->memcg);
	cr = kdat_obj_alloc(struct kdat_cr, obj, KDAT_OBJ_CR, &kdat_cr_ops);
	set_active_memcg(old_memcg);
	if (!cr)
		return -ENOMEM;
	INIT_LIST_HEAD(&cr->res.node);
	cr->psp = psp;
	cr->rsp_ep = psp->rsp_ep;
	cr->cm_kind = KDAT_CM_CR;
	mutex_init(&cr->reply_lock);
	cr->cm_id = id;
	cr->conn_qual = psp->conn_qual;
	memcpy(&cr->remote, &id->route.addr.dst_addr, sizeof(cr->remote));
	if (ud) {
		const u8 *data;
		u32 len;

		/*
		 * The requester's QP number, for the AH back, is in the UD
		 * header: a request without it is refused (the CM rejects).
		 */
		data = kdat_ud_hdr_get(event->param.ud.private_data,
				       event->param.ud.private_data_len, &len,
				       &cr->remote_qpn, &cr->remote_qkey);
		if (!data) {
			kdat_obj_abort(&cr->obj);
			return -EINVAL;
		}
		cr->ud = true;
		cr->pdata_len = min_t(u32, len, sizeof(cr->pdata));
		memcpy(cr->pdata, data, cr->pdata_len);
		ev.event_number = KDAT_EVENT_UD_CONNECTION_REQUEST;
	} else {
		/* The requester's RDMA read depths, as the responder sees. */
		cr->req_rd_in = event->param.conn.responder_resources;
		cr->req_rd_out = event->param.conn.initiator_depth;
		if (event->param.conn.private_data) {
			cr->pdata_len = min_t(u32,
					      event->param.conn.private_data_len,
					      sizeof(cr->pdata));
			memcpy(cr->pdata, event->param.conn.private_data,
			       cr->pdata_len);
		}
	}
	old_memcg = set_active_memcg(psp->memcg);
	ret = kdat_obj_reserve(kfile, &cr->obj, psp->ia);
	set_active_memcg(old_memcg);
	if (ret) {
		kdat_obj_abort(&cr->obj);
		return -ENOMEM;
	}

	/*
	 * This runs under the RDMA CM's handler mutex, which neither the file
	 * lock nor the device's rwsem may be waited for under: file locks are
	 * held while waiting for the rwsem (creates), and the rwsem while
	 * waiting for a handler mutex (a reply, an EP's teardown). So the
	 * rwsem is only tried (a writer there is the device's removal: the
	 * request is rejected) and the CR is published under obj_lock alone.
	 * The PSP's memory is valid: its destroy waits for this handler in
	 * rdma_destroy_id() of the listener. It may not be published yet, or
	 * unlinked already: then it must get no new CR. The rwsem, held to
	 * the end, keeps the removal from taking the CR's resources meanwhile.
	 */
	if (!down_read_trylock(&kdev->rwsem)) {
		kdat_obj_abort(&cr->obj);
		return -ENODEV;
	}
	if (id->device != kdev->ibdev) {
		/* Not our device, or it is going: the CM rejects. */
		up_read(&kdev->rwsem);
		kdat_obj_abort(&cr->obj);
		return -ENODEV;
	}
	__kdat_dev_res_add(kdev, &cr->res, kdat_cr_disassociate);
	/*
	 * Every unanswered request keeps a CR and its cm_id: a bounded
	 * backlog, no longer than the EVD that reports them (a request whose
	 * event is lost could never be answered). The PSP's users are its
	 * CRs. Past it the CM rejects, as a full listen backlog does.
	 */
	backlog = min_t(u32, READ_ONCE(max_conn_requests), psp->evd->qlen);
	spin_lock(&kfile->obj_lock);
	alive = kdat_obj_alive(&psp->obj) &&
		atomic_read(&psp->obj.users) < backlog;
	if (alive) {
		id->context = &cr->cm_kind;
		kdat_obj_use(&psp->obj, psp->ia);
		kdat_obj_publish_obj_locked(&cr->obj);
		psp->rsp_fired = true;
	}
	spin_unlock(&kfile->obj_lock);
	if (!alive) {
		kdat_dev_res_del(kdev, &cr->res);
		up_read(&kdev->rwsem);
		kdat_obj_abort(&cr->obj);
		return -ENODEV;
	}
	up_read(&kdev->rwsem);

	ev.cr_handle = cr->obj.handle;
	ev.private_data_len = cr->pdata_len;
	kdat_evd_push(psp->evd, &ev);
	return 0;
}

int kdat_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *event)
{
	enum kdat_cm_kind *kind = id->context;

	switch (*kind) {
	case KDAT_CM_EP:
		return kdat_ep_cm_event(container_of(kind, struct kdat_ep,
						     cm_kind), id, event);
	case KDAT_CM_PSP:
		if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			return kdat_psp_request(container_of(kind,
						struct kdat_psp, cm_kind),
						id, event);
		return 0;
	case KDAT_CM_CR:
		/*
		 * The requester gave up before we answered: the CR stays until
		 * its owner accepts (which then fails) or rejects it.
		 */
		return 0;
	case KDAT_CM_UD:
		return kdat_ud_cm_event(id, event);
	}
	return 0;
}

static void kdat_psp_destroy(struct kdat_obj *obj)
{
	struct kdat_psp *psp = container_of(obj, struct kdat_psp, obj);

	if (psp->cm_id)
		rdma_destroy_id(psp->cm_id);
	if (psp->cm_id_ud)
		rdma_destroy_id(psp->cm_id_ud);
	if (psp->rsp_ep) {
		/* Not taken by a connection: the EP is free again. */
		kdat_ep_reserve(psp->rsp_ep, false);
		kdat_obj_unuse(&psp->rsp_ep->obj, psp->ia);
	}
	kdat_obj_unuse(&psp->evd->obj, psp->ia);
	kdat_obj_unuse(&psp->ia->obj, psp->ia);
	/* No handler runs any more: the ids are gone. */
	mem_cgroup_put(psp->memcg);
}

static int kdat_psp_listen(struct kdat_psp *psp);

static const struct kdat_obj_ops kdat_psp_ops = {
	.destroy = kdat_psp_destroy,
};

/*
 * A PSP (@ep NULL) or RSP (for @ep) of @kfile on @ia for @conn_qual, its
 * requests reported on @evd; reserved and listening. The caller holds
 * kfile->lock from the parents' lookup to the publication, as for every
 * create: requests that arrive before it publishes are rejected (the CM
 * handler takes only obj_lock, never the file lock, so listening and a
 * failed listen's rdma_destroy_id() may run under it).
 */
int kdat_psp_new(struct kdat_file *kfile, struct kdat_ia *ia,
		 struct kdat_evd *evd, struct kdat_ep *ep, u64 conn_qual,
		 struct kdat_psp **pspp)
{
	struct kdat_psp *psp;
	int ret;

	/* An RSP reserves an RC Endpoint: a UD one never connects. */
	if (ep && (ep->pz->ia != ia || ep->ud))
		return -EINVAL;
	/* The EVD may be another IA's of the caller, as for an EP's. */
	if (!(evd->flags & KDAT_EVD_CR))
		return -EINVAL;
	if (!READ_ONCE(ia->kdev->ibdev))
		return -ENODEV;
	psp = kdat_obj_alloc(struct kdat_psp, obj, KDAT_OBJ_PSP, &kdat_psp_ops);
	if (!psp)
		return -ENOMEM;
	psp->ia = ia;
	psp->evd = evd;
	psp->cm_kind = KDAT_CM_PSP;
	if (ep) {
		ret = kdat_ep_reserve(ep, true);
		if (ret) {
			kdat_obj_abort(&psp->obj);
			return ret;
		}
		psp->rsp_ep = ep;
	}
	psp->conn_qual = conn_qual;

	ret = kdat_obj_reserve(kfile, &psp->obj, ia);
	if (ret)
		goto err_free;
	kdat_obj_use(&evd->obj, ia);
	kdat_obj_use(&ia->obj, ia);
	if (ep)
		kdat_obj_use(&ep->obj, ia);
	/* Before the listen: its handler charges the CRs there. */
	psp->memcg = get_mem_cgroup_from_mm(current->mm);
	ret = kdat_psp_listen(psp);
	if (ret) {
		kdat_obj_discard(&psp->obj);
		return ret;
	}
	*pspp = psp;
	return 0;

err_free:
	if (ep)
		kdat_ep_reserve(ep, false);
	kdat_obj_abort(&psp->obj);
	return ret;
}

/* A listener of @psp on its port in port space @ps. */
static struct rdma_cm_id *kdat_psp_listen_ps(struct kdat_psp *psp,
					     enum rdma_ucm_port_space ps,
					     enum ib_qp_type qp_type)
{
	struct sockaddr_in any = {
		.sin_family = AF_INET,
		.sin_port = htons(kdat_qual_port(psp->conn_qual)),
	};
	struct rdma_cm_id *id;
	int ret;

	id = rdma_create_id(psp->obj.file->net, kdat_cm_handler,
			    &psp->cm_kind, ps, qp_type);
	if (IS_ERR(id))
		return id;
	ret = rdma_bind_addr(id, (struct sockaddr *)&any);
	/* Bound to the any address, that can only mean the port is taken. */
	if (ret == -EADDRNOTAVAIL)
		ret = -EADDRINUSE;
	if (!ret)
		ret = rdma_listen(id, 0);
	if (ret) {
		rdma_destroy_id(id);
		return ERR_PTR(ret);
	}
	return id;
}

/*
 * Start listening for a built PSP, in the opener's network namespace: RC
 * requests in the TCP port space, UD ones in the UDP port space, on the
 * same port; both or neither. An RSP, whose Endpoint is RC, takes RC
 * requests alone, and so does a PSP on a transport without UD: iWARP's CM
 * listens in both port spaces with one TCP socket per port.
 */
static int kdat_psp_listen(struct kdat_psp *psp)
{
	struct rdma_cm_id *id, *id_ud = NULL;

	id = kdat_psp_listen_ps(psp, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	if (!psp->rsp_ep && !(psp->ia->limits & KDAT_IA_NO_UD)) {
		id_ud = kdat_psp_listen_ps(psp, RDMA_PS_UDP, IB_QPT_UD);
		if (IS_ERR(id_ud)) {
			rdma_destroy_id(id);
			return PTR_ERR(id_ud);
		}
	}
	psp->cm_id = id;
	psp->cm_id_ud = id_ud;
	return 0;
}

int kdat_cmd_psp_create(struct kdat_ucmd *ucmd)
{
	struct kdat_psp_create *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	struct kdat_evd *evd = NULL;
	struct kdat_ep *ep = NULL;
	struct kdat_ia *ia;
	struct kdat_psp *psp;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;

	mutex_lock(&kfile->lock);
	ia = kdat_ia_get(kfile, cmd->ia_handle);
	if (ia)
		evd = kdat_get(kfile, cmd->evd_handle, struct kdat_evd,
			       KDAT_OBJ_EVD);
	if (ia && evd && cmd->rsp_ep_handle)
		ep = kdat_get(kfile, cmd->rsp_ep_handle, struct kdat_ep,
			      KDAT_OBJ_EP);
	/*
	 * Every reference taken is dropped below, EBADF or not: a leaked one
	 * left the EVD's destroy (and the file's release) waiting for ever.
	 */
	if (!ia || !evd || (cmd->rsp_ep_handle && !ep)) {
		ret = -EBADF;
		goto out_put;
	}
	ret = kdat_psp_new(kfile, ia, evd, ep, cmd->conn_qual, &psp);
	if (!ret) {
		cmd->out_psp_handle = psp->obj.handle;
		ret = kdat_ucmd_finish(ucmd, sizeof(*cmd), &psp->obj);
	}
out_put:
	mutex_unlock(&kfile->lock);
	if (ep)
		kdat_obj_put(&ep->obj);
	if (evd)
		kdat_obj_put(&evd->obj);
	if (ia)
		kdat_obj_put(&ia->obj);
	return ret;
}

static struct kdat_cr *kdat_cr_get(struct kdat_ucmd *ucmd, u32 handle)
{
	return kdat_get(ucmd->kfile, handle, struct kdat_cr, KDAT_OBJ_CR);
}

int kdat_cmd_cr_query(struct kdat_ucmd *ucmd)
{
	struct kdat_cr_query *cmd = ucmd->cmd;
	struct kdat_cr *cr;

	if (cmd->__reserved)
		return -EINVAL;
	cr = kdat_cr_get(ucmd, cmd->cr_handle);
	if (!cr)
		return -EBADF;
	cmd->psp_handle = cr->psp->obj.handle;
	cmd->conn_qual = cr->conn_qual;
	cmd->private_data_len = cr->pdata_len;
	memcpy(cmd->private_data, cr->pdata, sizeof(cmd->private_data));
	kdat_sockaddr_to_user(&cr->remote, &cmd->remote);
	kdat_obj_put(&cr->obj);
	return kdat_ucmd_respond(ucmd, sizeof(*cmd));
}

/*
 * Accept (@ep_handle set) or reject the request @cr_handle of @kfile; the
 * CR is destroyed either way. The one implementation for the ioctls and
 * kdat_cr_accept()/kdat_cr_reject(); @pdata is a kernel copy.
 */
int kdat_cr_reply_do(struct kdat_file *kfile, u32 cr_handle, u32 ep_handle,
		     const void *pdata, u32 pdata_len, bool accept)
{
	struct kdat_ud_conn *ud_conn = NULL;
	struct kdat_ep *ep = NULL;
	struct rdma_cm_id *id;
	struct kdat_device *kdev;
	struct kdat_cr *cr;
	u32 handle;
	int ret;

	if (pdata_len > KDAT_MAX_PRIVATE_DATA)
		return -EINVAL;
	if (!accept && ep_handle)
		return -EINVAL;

	cr = kdat_get(kfile, cr_handle, struct kdat_cr, KDAT_OBJ_CR);
	if (!cr)
		return -EBADF;
	kdev = cr->psp->ia->kdev;
	if (accept) {
		ep = kdat_get(kfile, ep_handle, struct kdat_ep, KDAT_OBJ_EP);
		if (!ep) {
			kdat_obj_put(&cr->obj);
			return -EBADF;
		}
		/*
		 * An EP made without a connection EVD never connects: as for
		 * a handle that is no EP, the request stays answerable.
		 */
		if (!ep->conn_evd) {
			kdat_obj_put(&ep->obj);
			kdat_obj_put(&cr->obj);
			return -EBADF;
		}
		/*
		 * The rwsem below protects the CR's device: an EP of another
		 * device (another IA of the file) could lose its QP to that
		 * device's removal while the accept uses it.
		 */
		if (ep->pz->ia->kdev != kdev) {
			ret = -EINVAL;
			goto out_put;
		}
		kdat_ep_take_recvs(ep);
	}

	/*
	 * Under reply_lock and the rwsem the CR's id stays valid: only the
	 * CR's own destroy (it waits for our reference), the device's removal
	 * (it waits for the rwsem) and an accept (under reply_lock) drop it.
	 */
	mutex_lock(&cr->reply_lock);
	down_read(&kdev->rwsem);
	id = cr->cm_id;
	if (!id) {
		up_read(&kdev->rwsem);
		mutex_unlock(&cr->reply_lock);
		ret = -ENODEV;	/* the device is gone, or accepted already */
		goto out_put;
	}
	rdma_lock_handler(id);
	if (accept && cr->rsp_ep && cr->rsp_ep != ep) {
		ret = -EINVAL;	/* an RSP's request is for its own EP */
	} else if (accept && cr->ud != ep->ud) {
		ret = -EINVAL;	/* a UD request for a UD EP, RC for RC */
	} else if (accept && cr->ud) {
		/* Answered; the id stays the CR's, and goes with it. */
		ret = kdat_ud_accept(ep, cr, id, pdata, pdata_len, &ud_conn);
	} else if (cr->ud) {
		ret = kdat_ud_reject(id, pdata, pdata_len);
	} else if (accept) {
		ret = kdat_ep_accept(ep, id, pdata, pdata_len, cr->rsp_ep,
				     cr->req_rd_in, cr->req_rd_out);
		if (!ret) {
			/* The EP owns the id now. */
			cr->cm_id = NULL;
			kdat_dev_res_del(kdev, &cr->res);
		}
	} else {
		u8 rej[KDAT_REJ_HDR_LEN + KDAT_MAX_PRIVATE_DATA];

		memcpy(rej, kdat_rej_hdr, KDAT_REJ_HDR_LEN);
		if (pdata_len)
			memcpy(rej + KDAT_REJ_HDR_LEN, pdata, pdata_len);
		ret = rdma_reject(id, rej, KDAT_REJ_HDR_LEN + pdata_len,
				  IB_CM_REJ_CONSUMER_DEFINED);
	}
	rdma_unlock_handler(id);
	kdat_ud_accept_finish(ep, ud_conn, ret);
	up_read(&kdev->rwsem);
	mutex_unlock(&cr->reply_lock);

out_put:
	handle = cr->obj.handle;
	kdat_obj_put(&cr->obj);
	if (ep)
		kdat_obj_put(&ep->obj);
	/*
	 * A CR is used once (DAT), unless an accept was refused before it
	 * touched the request (wrong EP or state): then it can be answered
	 * again.
	 */
	if (!accept || (ret != -EBUSY && ret != -EINVAL))
		kdat_obj_destroy(kfile, handle);
	return ret;
}

static int kdat_cr_reply(struct kdat_ucmd *ucmd, bool accept)
{
	struct kdat_cr_reply *cmd = ucmd->cmd;
	u8 pdata[KDAT_MAX_PRIVATE_DATA];

	if (cmd->private_data_len > KDAT_MAX_PRIVATE_DATA)
		return -EINVAL;
	if (!accept && cmd->ep_handle)
		return -EINVAL;
	if (kdat_copy_from_user(pdata, u64_to_user_ptr(cmd->private_data),
			   cmd->private_data_len))
		return -EFAULT;
	return kdat_cr_reply_do(ucmd->kfile, cmd->cr_handle, cmd->ep_handle,
				pdata, cmd->private_data_len, accept);
}

int kdat_cmd_cr_accept(struct kdat_ucmd *ucmd)
{
	return kdat_cr_reply(ucmd, true);
}

int kdat_cmd_cr_reject(struct kdat_ucmd *ucmd)
{
	return kdat_cr_reply(ucmd, false);
}
