// SPDX-License-Identifier: GPL-2.0
/*
 * kdat Protection Zones and LMRs on user memory.
 *
 * An LMR registers a range of the calling process's memory with the IA's
 * device for kernel QPs: ib_reg_user_mr() pins the pages long term
 * (FOLL_LONGTERM, through ib_umem_get()), charges them to the caller's
 * RLIMIT_MEMLOCK (failing with ENOMEM, nothing pinned, when over it) and
 * returns an MR whose iova is the user address, so work requests name the
 * user's own addresses. ib_dereg_mr() unpins and uncharges.
 *
 * The lmr_context user space puts in an IOV is the LMR's kdat handle, not
 * the lkey: it is looked up among the caller's own objects and cannot be
 * forged. The rmr_context is the MR's rkey, which the peer needs.
 */
#include <linux/overflow.h>

#include "kdat.h"

static int kdat_pz_can_destroy(struct kdat_obj *obj)
{
	struct kdat_pz *pz = container_of(obj, struct kdat_pz, obj);

	return atomic_read(&pz->users) ? -EBUSY : 0;
}

static void kdat_pz_disassociate(struct kdat_dev_res *res)
{
	struct kdat_pz *pz = container_of(res, struct kdat_pz, res);

	ib_dealloc_pd(pz->pd);
	pz->pd = NULL;
}

static void kdat_pz_release(struct kdat_pz *pz)
{
	struct kdat_device *kdev = pz->ia->kdev;

	down_read(&kdev->rwsem);
	if (kdat_dev_res_del(kdev, &pz->res))
		kdat_pz_disassociate(&pz->res);
	up_read(&kdev->rwsem);
}

static void kdat_pz_destroy(struct kdat_obj *obj)
{
	struct kdat_pz *pz = container_of(obj, struct kdat_pz, obj);

	kdat_pz_release(pz);
	atomic_dec(&pz->ia->users);
}

static const struct kdat_obj_ops kdat_pz_ops = {
	.can_destroy = kdat_pz_can_destroy,
	.destroy = kdat_pz_destroy,
};

int kdat_cmd_pz_create(struct kdat_ucmd *ucmd)
{
	struct kdat_pz_create *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	struct kdat_ia *ia;
	struct kdat_pz *pz;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;

	mutex_lock(&kfile->lock);
	ia = kdat_ia_get(kfile, cmd->ia_handle);
	if (!ia) {
		ret = -EBADF;
		goto out_unlock;
	}
	pz = kdat_obj_alloc(struct kdat_pz, obj, KDAT_OBJ_PZ, &kdat_pz_ops);
	if (!pz) {
		ret = -ENOMEM;
		goto out_put;
	}
	pz->ia = ia;
	atomic_set(&pz->users, 0);
	INIT_LIST_HEAD(&pz->res.node);

	down_read(&ia->kdev->rwsem);
	if (!ia->kdev->ibdev) {
		up_read(&ia->kdev->rwsem);
		ret = -ENODEV;
		goto err_free;
	}
	pz->pd = ib_alloc_pd(ia->kdev->ibdev, 0);
	if (IS_ERR(pz->pd)) {
		up_read(&ia->kdev->rwsem);
		ret = PTR_ERR(pz->pd);
		goto err_free;
	}
	kdat_dev_res_add(ia->kdev, &pz->res, kdat_pz_disassociate);
	up_read(&ia->kdev->rwsem);

	ret = kdat_obj_reserve(kfile, &pz->obj, ia);
	if (ret)
		goto err_pd;
	cmd->out_pz_handle = pz->obj.handle;
	ret = kdat_ucmd_respond(ucmd, sizeof(*cmd));
	if (ret)
		goto err_pd;

	atomic_inc(&ia->users);
	kdat_obj_publish_locked(&pz->obj);
	goto out_put;

err_pd:
	kdat_pz_release(pz);
err_free:
	kdat_obj_abort(&pz->obj);
out_put:
	kdat_obj_put(&ia->obj);
out_unlock:
	mutex_unlock(&kfile->lock);
	return ret;
}

/* Unpins and uncharges the pages. */
static void kdat_lmr_disassociate(struct kdat_dev_res *res)
{
	struct kdat_lmr *lmr = container_of(res, struct kdat_lmr, res);

	ib_dereg_mr(lmr->mr);
	lmr->mr = NULL;
}

static void kdat_lmr_release(struct kdat_lmr *lmr)
{
	struct kdat_device *kdev = lmr->pz->ia->kdev;

	down_read(&kdev->rwsem);
	if (kdat_dev_res_del(kdev, &lmr->res))
		kdat_lmr_disassociate(&lmr->res);
	up_read(&kdev->rwsem);
}

static void kdat_lmr_destroy(struct kdat_obj *obj)
{
	struct kdat_lmr *lmr = container_of(obj, struct kdat_lmr, obj);

	kdat_lmr_release(lmr);
	atomic_dec(&lmr->pz->users);
}

static const struct kdat_obj_ops kdat_lmr_ops = {
	.destroy = kdat_lmr_destroy,
};

static int kdat_mem_priv_to_ib(u32 priv)
{
	int access = 0;

	/* IB requires local write for remote write. */
	if (priv & (KDAT_MEM_PRIV_LOCAL_WRITE | KDAT_MEM_PRIV_REMOTE_WRITE))
		access |= IB_ACCESS_LOCAL_WRITE;
	if (priv & KDAT_MEM_PRIV_REMOTE_WRITE)
		access |= IB_ACCESS_REMOTE_WRITE;
	if (priv & KDAT_MEM_PRIV_REMOTE_READ)
		access |= IB_ACCESS_REMOTE_READ;
	return access;
}

int kdat_cmd_lmr_create(struct kdat_ucmd *ucmd)
{
	struct kdat_lmr_create *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	struct kdat_lmr *lmr;
	struct kdat_pz *pz;
	u64 end;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved || cmd->mem_priv & ~KDAT_MEM_PRIV_ALL)
		return -EINVAL;
	if (!cmd->length || check_add_overflow(cmd->addr, cmd->length, &end) ||
	    end > TASK_SIZE)
		return -EINVAL;

	mutex_lock(&kfile->lock);
	pz = kdat_get(kfile, cmd->pz_handle, struct kdat_pz, KDAT_OBJ_PZ);
	if (!pz) {
		ret = -EBADF;
		goto out_unlock;
	}
	lmr = kdat_obj_alloc(struct kdat_lmr, obj, KDAT_OBJ_LMR, &kdat_lmr_ops);
	if (!lmr) {
		ret = -ENOMEM;
		goto out_put;
	}
	lmr->pz = pz;
	lmr->addr = cmd->addr;
	lmr->length = cmd->length;
	/*
	 * Local write implies local read, as on every RDMA device (and as
	 * DAT programs written for OFA's provider rely on: dtest sends from
	 * buffers registered for local write only).
	 */
	lmr->mem_priv = cmd->mem_priv;
	if (lmr->mem_priv & KDAT_MEM_PRIV_LOCAL_WRITE)
		lmr->mem_priv |= KDAT_MEM_PRIV_LOCAL_READ;
	INIT_LIST_HEAD(&lmr->res.node);

	down_read(&pz->ia->kdev->rwsem);
	if (!pz->pd)
		lmr->mr = ERR_PTR(-ENODEV);
	else
		lmr->mr = ib_reg_user_mr(pz->pd, cmd->addr, cmd->length,
					 cmd->addr,
					 kdat_mem_priv_to_ib(cmd->mem_priv));
	if (IS_ERR(lmr->mr)) {
		up_read(&pz->ia->kdev->rwsem);
		/* Pinning fails with EFAULT for an unmapped range. */
		ret = PTR_ERR(lmr->mr);
		goto err_free;
	}
	kdat_dev_res_add(pz->ia->kdev, &lmr->res, kdat_lmr_disassociate);
	up_read(&pz->ia->kdev->rwsem);

	ret = kdat_obj_reserve(kfile, &lmr->obj, pz->ia);
	if (ret)
		goto err_mr;
	cmd->out_lmr_handle = lmr->obj.handle;
	cmd->out_lmr_context = lmr->obj.handle;
	cmd->out_rmr_context = lmr->mr->rkey;
	ret = kdat_ucmd_respond(ucmd, sizeof(*cmd));
	if (ret)
		goto err_mr;

	atomic_inc(&pz->users);
	kdat_obj_publish_locked(&lmr->obj);
	goto out_put;

err_mr:
	kdat_lmr_release(lmr);
err_free:
	kdat_obj_abort(&lmr->obj);
out_put:
	kdat_obj_put(&pz->obj);
out_unlock:
	mutex_unlock(&kfile->lock);
	return ret;
}

static void kdat_rmr_disassociate(struct kdat_dev_res *res)
{
	struct kdat_rmr *rmr = container_of(res, struct kdat_rmr, res);

	if (rmr->mr)
		ib_dereg_mr(rmr->mr);
	rmr->mr = NULL;
}

static void kdat_rmr_destroy(struct kdat_obj *obj)
{
	struct kdat_rmr *rmr = container_of(obj, struct kdat_rmr, obj);
	struct kdat_device *kdev = rmr->pz->ia->kdev;

	down_read(&kdev->rwsem);
	if (kdat_dev_res_del(kdev, &rmr->res))
		kdat_rmr_disassociate(&rmr->res);
	up_read(&kdev->rwsem);
	atomic_dec(&rmr->pz->users);
}

static const struct kdat_obj_ops kdat_rmr_ops = {
	.destroy = kdat_rmr_destroy,
};

int kdat_cmd_rmr_create(struct kdat_ucmd *ucmd)
{
	struct kdat_rmr_create *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	struct kdat_rmr *rmr;
	struct kdat_pz *pz;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	mutex_lock(&kfile->lock);
	pz = kdat_get(kfile, cmd->pz_handle, struct kdat_pz, KDAT_OBJ_PZ);
	if (!pz) {
		ret = -EBADF;
		goto out_unlock;
	}
	rmr = kdat_obj_alloc(struct kdat_rmr, obj, KDAT_OBJ_RMR, &kdat_rmr_ops);
	if (!rmr) {
		ret = -ENOMEM;
		goto out_put;
	}
	rmr->pz = pz;
	mutex_init(&rmr->lock);
	INIT_LIST_HEAD(&rmr->res.node);
	ret = kdat_obj_reserve(kfile, &rmr->obj, pz->ia);
	if (ret)
		goto err_free;
	down_read(&pz->ia->kdev->rwsem);
	if (!pz->pd) {
		up_read(&pz->ia->kdev->rwsem);
		ret = -ENODEV;
		goto err_free;
	}
	/* Listed from the start: a bind adds an MR under the rwsem. */
	kdat_dev_res_add(pz->ia->kdev, &rmr->res, kdat_rmr_disassociate);
	up_read(&pz->ia->kdev->rwsem);
	cmd->out_rmr_handle = rmr->obj.handle;
	ret = kdat_ucmd_respond(ucmd, sizeof(*cmd));
	if (ret) {
		down_read(&pz->ia->kdev->rwsem);
		kdat_dev_res_del(pz->ia->kdev, &rmr->res);
		up_read(&pz->ia->kdev->rwsem);
		goto err_free;
	}
	atomic_inc(&pz->users);
	kdat_obj_publish_locked(&rmr->obj);
	goto out_put;

err_free:
	kdat_obj_abort(&rmr->obj);
out_put:
	kdat_obj_put(&pz->obj);
out_unlock:
	mutex_unlock(&kfile->lock);
	return ret;
}

/* Check a bind of @rmr to [@addr, @addr + @len) of @lmr with @priv. */
static int kdat_rmr_check(const struct kdat_rmr *rmr,
			  const struct kdat_lmr *lmr, u32 priv, u64 addr,
			  u64 len)
{
	u32 need = 0;

	if (!priv || priv & ~(KDAT_MEM_PRIV_REMOTE_READ |
			      KDAT_MEM_PRIV_REMOTE_WRITE))
		return -EINVAL;
	if (priv & KDAT_MEM_PRIV_REMOTE_READ)
		need |= KDAT_MEM_PRIV_LOCAL_READ;
	if (priv & KDAT_MEM_PRIV_REMOTE_WRITE)
		need |= KDAT_MEM_PRIV_LOCAL_WRITE;
	return kdat_dto_check_segment(lmr, rmr->pz, need, addr, len);
}

int kdat_cmd_rmr_bind(struct kdat_ucmd *ucmd)
{
	struct kdat_rmr_bind *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	struct kdat_event ev = {
		.event_number = KDAT_EVENT_RMR_BIND_COMPLETION,
		.cookie = cmd->cookie,
		.status = KDAT_DTO_SUCCESS,
	};
	struct kdat_lmr *lmr = NULL;
	struct kdat_device *kdev;
	enum kdat_ep_state state;
	struct kdat_rmr *rmr;
	struct kdat_ep *ep;
	struct ib_mr *mr;
	int ret;

	if (cmd->__reserved ||
	    cmd->completion_flags & ~KDAT_COMPLETION_SUPPRESS)
		return -EINVAL;
	rmr = kdat_get(kfile, cmd->rmr_handle, struct kdat_rmr, KDAT_OBJ_RMR);
	if (!rmr)
		return -EBADF;
	ep = kdat_get(kfile, cmd->ep_handle, struct kdat_ep, KDAT_OBJ_EP);
	if (!ep) {
		ret = -EBADF;
		goto out_put_rmr;
	}
	if (cmd->length) {
		lmr = kdat_get(kfile, cmd->lmr_context, struct kdat_lmr,
			       KDAT_OBJ_LMR);
		if (!lmr) {
			ret = -EACCES;	/* an invalid LMR */
			goto out_put_ep;
		}
		ret = kdat_rmr_check(rmr, lmr, cmd->mem_priv, cmd->addr,
				     cmd->length);
		if (ret)
			goto out_put;
	}
	if (ep->pz != rmr->pz) {
		ret = -EPERM;
		goto out_put;
	}
	ev.handle = rmr->obj.handle;

	kdev = rmr->pz->ia->kdev;
	down_read(&kdev->rwsem);
	mutex_lock(&rmr->lock);
	state = READ_ONCE(ep->state);
	if (state == KDAT_EP_STATE_DISCONNECTED) {
		ev.status = KDAT_DTO_ERR_FLUSHED;	/* nothing bound */
		ret = 0;
	} else if (state != KDAT_EP_STATE_CONNECTED) {
		ret = -EBUSY;
	} else if (!rmr->pz->pd || (lmr && !lmr->mr)) {
		ret = -ENODEV;
	} else {
		mr = NULL;
		ret = 0;
		if (cmd->length) {
			mr = ib_reg_user_mr(rmr->pz->pd, cmd->addr,
					    cmd->length, cmd->addr,
					    kdat_mem_priv_to_ib(cmd->mem_priv));
			if (IS_ERR(mr))
				ret = PTR_ERR(mr);
		}
		if (!ret) {
			/* The old binding stops working now. */
			if (rmr->mr)
				ib_dereg_mr(rmr->mr);
			rmr->mr = mr;
			cmd->out_rmr_context = mr ? mr->rkey : 0;
		}
	}
	mutex_unlock(&rmr->lock);
	up_read(&kdev->rwsem);
	if (!ret)
		ret = kdat_ucmd_respond(ucmd, sizeof(*cmd));
	if (!ret && !(ev.status == KDAT_DTO_SUCCESS &&
		      cmd->completion_flags & KDAT_COMPLETION_SUPPRESS))
		kdat_evd_push(ep->req_evd, &ev);
out_put:
	if (lmr)
		kdat_obj_put(&lmr->obj);
out_put_ep:
	kdat_obj_put(&ep->obj);
out_put_rmr:
	kdat_obj_put(&rmr->obj);
	return ret;
}
