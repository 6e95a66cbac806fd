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

	ret = kdat_obj_reserve(kfile, &pz->obj);
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
	lmr->mem_priv = cmd->mem_priv;
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

	ret = kdat_obj_reserve(kfile, &lmr->obj);
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
