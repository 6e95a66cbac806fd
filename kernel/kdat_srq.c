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

static int kdat_srq_can_destroy(struct kdat_obj *obj)
{
	struct kdat_srq *srq = container_of(obj, struct kdat_srq, obj);

	return atomic_read(&srq->users) ? -EBUSY : 0;
}

/* Buffers still posted go with the SRQ, without events (no EP took them). */
static void kdat_srq_destroy(struct kdat_obj *obj)
{
	struct kdat_srq *srq = container_of(obj, struct kdat_srq, obj);

	kdat_ring_stop(srq->ring);
	kdat_srq_release(srq);
	kdat_ring_detach(srq->ring);
	kdat_slots_fini(&srq->slots);
	atomic_dec(&srq->pz->users);
}

static const struct kdat_obj_ops kdat_srq_ops = {
	.can_destroy = kdat_srq_can_destroy,
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
	atomic_set(&srq->users, 0);
	spin_lock_init(&srq->lock);
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
	kdat_dev_res_add(kdev, &srq->res, kdat_srq_disassociate);
	up_read(&kdev->rwsem);
	atomic_inc(&pz->users);
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
	srq = kdat_srq_get(ucmd->kfile, cmd->srq_handle);
	if (!srq)
		return -EBADF;
	kdev = srq->pz->ia->kdev;
	down_read(&kdev->rwsem);
	if (cmd->low_watermark >= srq->max_recv_dtos)
		ret = -EINVAL;
	else if (!srq->srq)
		ret = -ENODEV;
	else
		ret = ib_modify_srq(srq->srq, &attr, IB_SRQ_LIMIT);
	up_read(&kdev->rwsem);
	kdat_obj_put(&srq->obj);
	return ret;
}

/*
 * Growing asks the device for a larger SRQ, then adds slots (buffers in
 * flight keep theirs); shrinking only lowers the slot limit, the device
 * keeping its size.
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
	if (cmd->max_recv_dtos > srq->slots.nr) {
		struct ib_srq_attr attr = { .max_wr = cmd->max_recv_dtos };

		down_read(&kdev->rwsem);
		if (!srq->srq)
			ret = -ENODEV;
		else if (ib_modify_srq(srq->srq, &attr, IB_SRQ_MAX_WR))
			ret = -ENOMEM;
		up_read(&kdev->rwsem);
		if (!ret)
			ret = kdat_slots_grow(&srq->slots, cmd->max_recv_dtos,
					      NULL, srq, &srq->lock);
	} else {
		spin_lock_irqsave(&srq->lock, flags);
		if (srq->slots.posted > cmd->max_recv_dtos)
			ret = -EBUSY;
		else
			srq->slots.limit = cmd->max_recv_dtos;
		spin_unlock_irqrestore(&srq->lock, flags);
	}
	if (!ret)
		WRITE_ONCE(srq->max_recv_dtos, cmd->max_recv_dtos);
	kdat_obj_put(&srq->obj);
	mutex_unlock(&kfile->lock);
	return ret;
}
