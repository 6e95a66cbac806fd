// SPDX-License-Identifier: GPL-2.0
/*
 * kdat Shared Receive Queues: an ib_srq whose buffers any Endpoint created
 * on it receives into. The completion of such a receive arrives on the
 * consuming Endpoint's receive EVD; the buffer's slot is the SRQ's.
 *
 * The low watermark is the SRQ limit of the device: one
 * IB_EVENT_SRQ_LIMIT_REACHED per arming, reported on the IA's async EVD.
 */
#include <linux/slab.h>

#include <linux/hash.h>

#include "kdat.h"

#define KDAT_SRQ_MAX_IOV	32

struct kdat_srq *kdat_srq_get(struct kdat_file *kfile, u32 handle)
{
	return kdat_get(kfile, handle, struct kdat_srq, KDAT_OBJ_SRQ);
}

/* The device's event handler: any context. */
static void kdat_srq_event(struct ib_event *event, void *context)
{
	struct kdat_srq *srq = context;
	struct kdat_event ev = {
		.event_number = KDAT_EVENT_ASYNC_SRQ_LOW_WATERMARK,
		.handle = srq->obj.handle,
	};

	if (event->event == IB_EVENT_SRQ_LIMIT_REACHED)
		kdat_ia_async_event(srq->pz->ia, &ev);
}

static void kdat_srq_disassociate(struct kdat_dev_res *res)
{
	struct kdat_srq *srq = container_of(res, struct kdat_srq, res);
	unsigned long flags;

	ib_destroy_srq(srq->srq);
	srq->srq = NULL;
	spin_lock_irqsave(&srq->lock, flags);
	kdat_ring_set_dead(srq->ring);
	spin_unlock_irqrestore(&srq->lock, flags);
}

static void kdat_srq_release(struct kdat_srq *srq)
{
	struct kdat_device *kdev = srq->pz->ia->kdev;

	down_read(&kdev->rwsem);
	if (kdat_dev_res_del(kdev, &srq->res))
		kdat_srq_disassociate(&srq->res);
	up_read(&kdev->rwsem);
}

/*
 * An EP's QP joins @srq's map (see struct kdat_srq). EBUSY while an EP
 * whose QP had the same address is still being reaped: the caller makes
 * another QP.
 */
int kdat_srq_add_ep(struct kdat_srq *srq, struct kdat_ep *ep)
{
	struct hlist_head *b = &srq->eps[hash_ptr(ep->srq_key,
						  ilog2(KDAT_SRQ_EP_HASH))];
	unsigned long flags;
	struct kdat_ep *e;
	int ret = 0;

	spin_lock_irqsave(&srq->lock, flags);
	hlist_for_each_entry(e, b, srq_node)
		if (e->srq_key == ep->srq_key)
			ret = -EBUSY;
	if (!ret)
		hlist_add_head(&ep->srq_node, b);
	spin_unlock_irqrestore(&srq->lock, flags);
	return ret;
}

void kdat_srq_del_ep(struct kdat_srq *srq, struct kdat_ep *ep)
{
	unsigned long flags;

	spin_lock_irqsave(&srq->lock, flags);
	hlist_del_init(&ep->srq_node);
	spin_unlock_irqrestore(&srq->lock, flags);
}

/* The EP whose QP is at @key; srq->lock held. */
struct kdat_ep *kdat_srq_find_ep(struct kdat_srq *srq, const void *key)
{
	struct kdat_ep *e;

	lockdep_assert_held(&srq->lock);
	hlist_for_each_entry(e, &srq->eps[hash_ptr(key,
					ilog2(KDAT_SRQ_EP_HASH))], srq_node)
		if (e->srq_key == key)
			return e;
	return NULL;
}

/* Buffers still posted go with the SRQ, without events (no EP took them). */
static void kdat_srq_destroy(struct kdat_obj *obj)
{
	struct kdat_srq *srq = container_of(obj, struct kdat_srq, obj);

	kdat_sq_ring_stop(srq->ring);
	kdat_srq_release(srq);
	kdat_sq_ring_detach(srq->ring);
	kdat_slots_fini(&srq->slots);
	kdat_obj_unuse(&srq->pz->obj, srq->pz->ia);
}

static const struct kdat_obj_ops kdat_srq_ops = {
	.destroy = kdat_srq_destroy,
};

/* An SRQ of @kfile in @pz, reserved; the caller holds kfile->lock. */
int kdat_srq_new(struct kdat_file *kfile, struct kdat_pz *pz,
		 u32 max_recv_dtos, u32 max_recv_iov, u32 low_watermark,
		 struct kdat_srq **srqp)
{
	struct ib_srq_init_attr init = {};
	struct kdat_device *kdev = pz->ia->kdev;
	struct kdat_srq *srq;
	int ret;

	if (!max_recv_dtos || low_watermark >= max_recv_dtos)
		return -EINVAL;
	if (max_recv_dtos > KDAT_SRQ_MAX_DTOS ||
	    max_recv_iov > KDAT_SRQ_MAX_IOV)
		return -ENOMEM;
	srq = kdat_obj_alloc(struct kdat_srq, obj, KDAT_OBJ_SRQ, &kdat_srq_ops);
	if (!srq)
		return -ENOMEM;
	srq->pz = pz;
	srq->max_recv_dtos = max_recv_dtos;
	srq->max_recv_iov = max_recv_iov ?: 1;
	srq->low_watermark = low_watermark;
	spin_lock_init(&srq->lock);
	mutex_init(&srq->commit_lock);
	INIT_LIST_HEAD(&srq->res.node);
	ret = kdat_slots_init(&srq->slots, srq->max_recv_dtos, NULL, srq);
	if (ret)
		goto err_free;

	/* The handle first: the event handler names the SRQ by it. */
	ret = kdat_obj_reserve(kfile, &srq->obj, pz->ia);
	if (ret)
		goto err_free;

	down_read(&kdev->rwsem);
	if (!pz->pd) {
		up_read(&kdev->rwsem);
		ret = -ENODEV;
		goto err_free;
	}
	init.event_handler = kdat_srq_event;
	init.srq_context = srq;
	init.srq_type = IB_SRQT_BASIC;
	init.attr.max_wr = srq->max_recv_dtos;
	init.attr.max_sge = srq->max_recv_iov;
	init.attr.srq_limit = low_watermark;
	srq->srq = ib_create_srq(pz->pd, &init);
	if (IS_ERR(srq->srq)) {
		up_read(&kdev->rwsem);
		ret = PTR_ERR(srq->srq);
		srq->srq = NULL;
		goto err_free;
	}
	ret = kdat_dev_res_add(kdev, &srq->res, 1, kdat_srq_disassociate);
	up_read(&kdev->rwsem);
	if (ret) {
		kdat_srq_release(srq);
		goto err_free;
	}
	kdat_obj_use(&pz->obj, pz->ia);
	*srqp = srq;
	return 0;

err_free:
	kdat_slots_fini(&srq->slots);
	kdat_obj_abort(&srq->obj);
	return ret;
}

int kdat_cmd_srq_create(struct kdat_ucmd *ucmd)
{
	struct kdat_srq_create *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	struct kdat_srq *srq;
	struct kdat_pz *pz;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;

	mutex_lock(&kfile->lock);
	pz = kdat_get(kfile, cmd->pz_handle, struct kdat_pz, KDAT_OBJ_PZ);
	if (!pz) {
		ret = -EBADF;
		goto out_unlock;
	}
	ret = kdat_srq_new(kfile, pz, cmd->max_recv_dtos, cmd->max_recv_iov,
			   cmd->low_watermark, &srq);
	if (!ret) {
		cmd->out_srq_handle = srq->obj.handle;
		cmd->max_recv_iov = srq->max_recv_iov;
		ret = kdat_ucmd_finish(ucmd, sizeof(*cmd), &srq->obj);
	}
	kdat_obj_put(&pz->obj);
out_unlock:
	mutex_unlock(&kfile->lock);
	return ret;
}

int kdat_cmd_srq_set_lw(struct kdat_ucmd *ucmd)
{
	struct kdat_srq_set_lw *cmd = ucmd->cmd;
	struct ib_srq_attr attr = { .srq_limit = cmd->low_watermark };
	struct kdat_device *kdev;
	struct kdat_srq *srq;
	int ret;

	if (cmd->__reserved)
		return -EINVAL;
	/* The file lock orders it with a resize, which checks the mark. */
	mutex_lock(&ucmd->kfile->lock);
	srq = kdat_srq_get(ucmd->kfile, cmd->srq_handle);
	if (!srq) {
		mutex_unlock(&ucmd->kfile->lock);
		return -EBADF;
	}
	kdev = srq->pz->ia->kdev;
	down_read(&kdev->rwsem);
	if (cmd->low_watermark >= srq->max_recv_dtos)
		ret = -EINVAL;
	else if (!srq->srq)
		ret = -ENODEV;
	else
		ret = ib_modify_srq(srq->srq, &attr, IB_SRQ_LIMIT);
	up_read(&kdev->rwsem);
	if (!ret)
		srq->low_watermark = cmd->low_watermark;
	kdat_obj_put(&srq->obj);
	mutex_unlock(&ucmd->kfile->lock);
	return ret;
}

/*
 * The SRQ's side of the CQ-commitment invariant (see kdat_evd_commit()):
 * any of the @srq->max_recv_dtos buffers the SRQ may hold can complete on
 * the receive CQ of any EP whose QP is on it, so each such EP has
 * committed room for that many and its drain marker: recv_cqes >=
 * max_recv_dtos + 1. An EP commits so at its create; this function
 * re-establishes it for @n before the SRQ may hold @n buffers, and every
 * path that raises the SRQ's limit calls it first. ENOMEM, and every
 * commitment as it was, when a CQ cannot grow.
 *
 * The EPs are those of the SRQ's own map, not of the file's list: an EP
 * unlinked for destruction keeps its QP, which may still take buffers,
 * until its teardown. The map gains EPs only under the file lock (held),
 * but for an EP whose QP is renewed, which leaves it and comes back under
 * @srq->commit_lock (held); an EP leaves it in its teardown but is not
 * freed before its destroy has given its commitment back under
 * @srq->commit_lock, so each EP found stays valid, and so does its
 * receive EVD.
 */
static int kdat_srq_commit_eps(struct kdat_srq *srq, u32 n)
{
	struct {
		struct kdat_ep *ep;
		u32 grown;
	} *v;
	unsigned long flags;
	u32 nr = 0, max = 0, i, done;
	struct kdat_ep *ep;
	int ret = 0;

	lockdep_assert_held(&srq->obj.file->lock);
	lockdep_assert_held(&srq->commit_lock);
	spin_lock_irqsave(&srq->lock, flags);
	for (i = 0; i < KDAT_SRQ_EP_HASH; i++)
		hlist_for_each_entry(ep, &srq->eps[i], srq_node)
			max++;
	spin_unlock_irqrestore(&srq->lock, flags);
	if (!max)
		return 0;
	v = kvcalloc(max, sizeof(*v), GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!v)
		return -ENOMEM;
	/* None joined since the count (file lock); some may have left. */
	spin_lock_irqsave(&srq->lock, flags);
	for (i = 0; i < KDAT_SRQ_EP_HASH; i++)
		hlist_for_each_entry(ep, &srq->eps[i], srq_node)
			if (nr < max && ep->recv_cqes < n + 1)
				v[nr++].ep = ep;
	spin_unlock_irqrestore(&srq->lock, flags);

	for (done = 0; done < nr; done++) {
		v[done].grown = n + 1 - v[done].ep->recv_cqes;
		ret = kdat_evd_commit(v[done].ep->recv_evd, v[done].grown);
		if (ret)
			break;
		v[done].ep->recv_cqes += v[done].grown;
	}
	if (ret) {
		/* v[done] failed: give back what those before it took. */
		while (done--) {
			kdat_evd_uncommit(v[done].ep->recv_evd, v[done].grown);
			v[done].ep->recv_cqes -= v[done].grown;
		}
	}
	kvfree(v);
	return ret;
}

/*
 * The invariant above, checked: every EP on @srq has room for every
 * buffer it may hold. A path that changes the SRQ's size without
 * kdat_srq_commit_eps() warns here, whatever the traffic. The caller holds
 * the file lock (no resize or create meanwhile).
 */
static void kdat_srq_check_commit(struct kdat_srq *srq)
{
	u32 need = READ_ONCE(srq->max_recv_dtos) + 1;
	unsigned long flags;
	struct kdat_ep *ep;
	unsigned int i;

	lockdep_assert_held(&srq->obj.file->lock);
	spin_lock_irqsave(&srq->lock, flags);
	for (i = 0; i < KDAT_SRQ_EP_HASH; i++)
		hlist_for_each_entry(ep, &srq->eps[i], srq_node)
			WARN_ONCE(ep->recv_cqes < need,
				  "kdat: EP %u on SRQ %u commits %u of %u\n",
				  ep->obj.handle, srq->obj.handle,
				  ep->recv_cqes, need);
	spin_unlock_irqrestore(&srq->lock, flags);
}

/* An EP on @srq gives back its receive commitment (its destroy). */
void kdat_srq_uncommit_ep(struct kdat_srq *srq, struct kdat_ep *ep)
{
	mutex_lock(&srq->commit_lock);
	kdat_evd_uncommit(ep->recv_evd, ep->recv_cqes);
	ep->recv_cqes = 0;
	mutex_unlock(&srq->commit_lock);
}

/*
 * Growing asks the device for a larger SRQ, then adds slots (buffers in
 * flight keep theirs); shrinking only lowers the slot limit, the device
 * keeping its size, and is refused below the buffers posted, those on
 * the ring included.
 */
int kdat_cmd_srq_resize(struct kdat_ucmd *ucmd)
{
	struct kdat_srq_resize *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	struct kdat_device *kdev;
	struct kdat_srq *srq;
	unsigned long flags;
	int ret = 0;

	if (cmd->__reserved || !cmd->max_recv_dtos ||
	    cmd->max_recv_dtos > KDAT_SRQ_MAX_DTOS)
		return -EINVAL;
	/* One resize at a time, and the slots' size with it. */
	mutex_lock(&kfile->lock);
	srq = kdat_srq_get(kfile, cmd->srq_handle);
	if (!srq) {
		mutex_unlock(&kfile->lock);
		return -EBADF;
	}
	kdev = srq->pz->ia->kdev;
	/* DAT: not at or below the low watermark (it stays below the size). */
	if (cmd->max_recv_dtos <= srq->low_watermark) {
		ret = -EBUSY;
	} else if (cmd->max_recv_dtos > srq->max_recv_dtos) {
		struct ib_srq_attr attr = { .max_wr = cmd->max_recv_dtos };
		bool device = cmd->max_recv_dtos > srq->slots.nr;

		/*
		 * The EPs' room first, whether the device's SRQ grows or it
		 * grows back within the size it had (the slots' limit).
		 */
		down_read(&kdev->rwsem);
		mutex_lock(&srq->commit_lock);
		if (!srq->srq)
			ret = -ENODEV;
		else
			ret = kdat_srq_commit_eps(srq, cmd->max_recv_dtos);
		mutex_unlock(&srq->commit_lock);
		/*
		 * The EPs keep the larger room. A device that cannot resize
		 * an SRQ (siw) says so: EOPNOTSUPP.
		 */
		if (!ret && device) {
			ret = ib_modify_srq(srq->srq, &attr, IB_SRQ_MAX_WR);
			if (ret && ret != -EOPNOTSUPP)
				ret = -ENOMEM;
		}
		up_read(&kdev->rwsem);
		if (!ret && device) {
			ret = kdat_slots_grow(&srq->slots, cmd->max_recv_dtos,
					      NULL, srq, &srq->lock);
		} else if (!ret) {
			spin_lock_irqsave(&srq->lock, flags);
			srq->slots.limit = cmd->max_recv_dtos;
			spin_unlock_irqrestore(&srq->lock, flags);
		}
	} else {
		/*
		 * Buffers published on the ring before the call count: take
		 * them first, as an EP's disconnect does. (Later ones race
		 * with the resize, as a post by ioctl from another thread.)
		 */
		kdat_sq_ring_flush(READ_ONCE(srq->ring));
		spin_lock_irqsave(&srq->lock, flags);
		if (srq->slots.posted > cmd->max_recv_dtos)
			ret = -EBUSY;
		else
			srq->slots.limit = cmd->max_recv_dtos;
		spin_unlock_irqrestore(&srq->lock, flags);
	}
	if (!ret)
		WRITE_ONCE(srq->max_recv_dtos, cmd->max_recv_dtos);
	kdat_srq_check_commit(srq);
	kdat_obj_put(&srq->obj);
	mutex_unlock(&kfile->lock);
	return ret;
}
