// SPDX-License-Identifier: GPL-2.0
/*
 * kdat Interface Adapter: one port of one RDMA device, opened by a process.
 */
#include <linux/string.h>
#include <rdma/ib_cache.h>

#include "kdat.h"

static void kdat_ia_destroy(struct kdat_obj *obj)
{
	struct kdat_ia *ia = container_of(obj, struct kdat_ia, obj);

	kdat_device_put(ia->kdev);
}

static const struct kdat_obj_ops kdat_ia_ops = {
	.destroy = kdat_ia_destroy,
};

/* Report an IA-wide event on its async EVD, if it has one; any context. */
void kdat_ia_async_event(struct kdat_ia *ia, const struct kdat_event *ev)
{
	unsigned long flags;

	spin_lock_irqsave(&ia->async_lock, flags);
	if (ia->async_evd)
		kdat_evd_push(ia->async_evd, ev);
	spin_unlock_irqrestore(&ia->async_lock, flags);
}

struct kdat_ia *kdat_ia_get(struct kdat_file *kfile, u32 handle)
{
	return kdat_get(kfile, handle, struct kdat_ia, KDAT_OBJ_IA);
}

/*
 * Build an IA of @kfile on port @port_num of the device @name; its handle
 * is reserved, it is not published (kdat_ucmd_finish(), kdat_ia_open()).
 */
int kdat_ia_new(struct kdat_file *kfile, const char *name, u32 port_num,
		struct kdat_ia **iap)
{
	struct kdat_device *kdev;
	struct kdat_ia *ia;
	int ret;

	kdev = kdat_device_find(name, kfile->net);
	if (!kdev)
		return -ENODEV;

	ia = kdat_obj_alloc(struct kdat_ia, obj, KDAT_OBJ_IA, &kdat_ia_ops);
	if (!ia) {
		ret = -ENOMEM;
		goto err_put_kdev;
	}

	down_read(&kdev->rwsem);
	if (!kdev->ibdev) {
		ret = -ENODEV;
		goto err_unlock;
	}
	if (!rdma_is_port_valid(kdev->ibdev, port_num)) {
		ret = -EINVAL;
		goto err_unlock;
	}
	ia->node_guid = kdev->ibdev->node_guid;
	ia->limits = kdat_dev_port_limits(kdev->ibdev, port_num);
	ia->no_rnr = kdat_dev_no_rnr(kdev->ibdev, port_num);
	up_read(&kdev->rwsem);

	ia->port_num = port_num;
	spin_lock_init(&ia->async_lock);
	strscpy(ia->name, name, sizeof(ia->name));

	ret = kdat_obj_reserve(kfile, &ia->obj, ia);
	if (ret)
		goto err_abort;
	ia->kdev = kdev;	/* the IA's reference from here on */
	*iap = ia;
	return 0;

err_unlock:
	up_read(&kdev->rwsem);
err_abort:
	kdat_obj_abort(&ia->obj);
err_put_kdev:
	kdat_device_put(kdev);
	return ret;
}

int kdat_cmd_ia_open(struct kdat_ucmd *ucmd)
{
	struct kdat_ia_open *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	struct kdat_ia *ia;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (!memchr(cmd->name, '\0', sizeof(cmd->name)))
		return -EINVAL;

	mutex_lock(&kfile->lock);
	ret = kdat_ia_new(kfile, cmd->name, cmd->port_num, &ia);
	if (!ret) {
		cmd->out_ia_handle = ia->obj.handle;
		ret = kdat_ucmd_finish(ucmd, sizeof(*cmd), &ia->obj);
	}
	mutex_unlock(&kfile->lock);
	return ret;
}

int kdat_cmd_ia_query(struct kdat_ucmd *ucmd)
{
	struct kdat_ia_query *cmd = ucmd->cmd;
	struct ib_port_attr attr;
	struct kdat_obj *obj;
	struct kdat_ia *ia;

	/* @limits is output only: a query struct reused is no error. */
	if (cmd->__reserved || cmd->__reserved3)
		return -EINVAL;
	obj = kdat_obj_get(ucmd->kfile, cmd->ia_handle, KDAT_OBJ_IA);
	if (!obj)
		return -EBADF;
	ia = container_of(obj, struct kdat_ia, obj);

	cmd->port_num = ia->port_num;
	memcpy(cmd->name, ia->name, sizeof(cmd->name));
	memcpy(&cmd->node_guid, &ia->node_guid, sizeof(cmd->node_guid));
	cmd->limits = ia->limits;
	cmd->state = KDAT_IA_STATE_DEVICE_GONE;
	cmd->port_state = KDAT_PORT_DOWN;

	down_read(&ia->kdev->rwsem);
	if (ia->kdev->ibdev) {
		const struct ib_device_attr *a = &ia->kdev->ibdev->attrs;

		cmd->state = KDAT_IA_STATE_ACTIVE;
		union ib_gid gid;

		if (!ib_query_port(ia->kdev->ibdev, ia->port_num, &attr)) {
			cmd->port_state = attr.state;
			cmd->max_msg_size = attr.max_msg_sz;
			cmd->active_mtu = ib_mtu_enum_to_int(attr.active_mtu);
		}
		if (!rdma_query_gid(ia->kdev->ibdev, ia->port_num, 0, &gid))
			memcpy(cmd->gid, gid.raw, sizeof(cmd->gid));
		switch (a->atomic_cap) {
		case IB_ATOMIC_HCA:
			cmd->atomic_cap = KDAT_ATOMIC_HCA;
			break;
		case IB_ATOMIC_GLOB:
			cmd->atomic_cap = KDAT_ATOMIC_GLOB;
			break;
		default:
			cmd->atomic_cap = KDAT_ATOMIC_NONE;
		}
		cmd->fw_ver = a->fw_ver;
		cmd->max_mr_size = a->max_mr_size;
		cmd->vendor_id = a->vendor_id;
		cmd->vendor_part_id = a->vendor_part_id;
		cmd->hw_ver = a->hw_ver;
		cmd->max_qp = a->max_qp;
		cmd->max_qp_wr = kdat_ep_max_dtos(a);
		cmd->max_send_sge = min(a->max_send_sge, 32);
		cmd->max_recv_sge = min(a->max_recv_sge, 32);
		cmd->max_read_sge = kdat_dev_read_sge(ia->kdev->ibdev,
						      cmd->max_send_sge);
		cmd->max_cq = a->max_cq;
		cmd->max_cqe = a->max_cqe;
		cmd->max_mr = a->max_mr;
		cmd->max_pd = a->max_pd;
		cmd->max_qp_rd_atom = a->max_qp_rd_atom;
		cmd->max_qp_init_rd_atom = a->max_qp_init_rd_atom;
		cmd->max_srq = a->max_srq;
		cmd->max_srq_wr = min(a->max_srq_wr, 4096);
		cmd->max_srq_sge = min(a->max_srq_sge, 32);
	}
	up_read(&ia->kdev->rwsem);

	kdat_obj_put(obj);
	return kdat_ucmd_respond(ucmd, sizeof(*cmd));
}
