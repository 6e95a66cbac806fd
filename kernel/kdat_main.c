// SPDX-License-Identifier: GPL-2.0
/*
 * kdat: the Direct Access Transport (DAT) on the kernel's RDMA stack.
 *
 * The /dev/kdat character device, its ioctl dispatch and the module's life.
 */
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kdat.h"

static struct dentry *kdat_debugfs;
static atomic_t kdat_open_files;

static int kdat_fops_open(struct inode *inode, struct file *filp)
{
	struct kdat_file *kfile;

	kfile = kdat_file_create(false);
	if (!kfile)
		return -ENOMEM;
	filp->private_data = kfile;
	atomic_inc(&kdat_open_files);
	return 0;
}

static int kdat_fops_release(struct inode *inode, struct file *filp)
{
	struct kdat_file *kfile = filp->private_data;

	kdat_file_release(kfile);
	atomic_dec(&kdat_open_files);
	return 0;
}

/*
 * /proc/PID/fdinfo/FD: the file's live objects by kind, its submission
 * rings and its poller (see kdat_rings_show()).
 */
static void kdat_fops_show_fdinfo(struct seq_file *m, struct file *filp)
{
	static const char * const names[KDAT_OBJ_TYPE_MAX] = {
		[KDAT_OBJ_IA] = "ia", [KDAT_OBJ_PZ] = "pz",
		[KDAT_OBJ_LMR] = "lmr", [KDAT_OBJ_EVD] = "evd",
		[KDAT_OBJ_EP] = "ep", [KDAT_OBJ_PSP] = "psp",
		[KDAT_OBJ_CR] = "cr", [KDAT_OBJ_SRQ] = "srq",
		[KDAT_OBJ_CNO] = "cno", [KDAT_OBJ_RMR] = "rmr",
		[KDAT_OBJ_AH] = "ah",
	};
	struct kdat_file *kfile = filp->private_data;
	unsigned int n[KDAT_OBJ_TYPE_MAX] = {};
	struct kdat_obj *obj;
	int t;

	spin_lock(&kfile->obj_lock);
	list_for_each_entry(obj, &kfile->objects, file_node)
		n[obj->type]++;
	spin_unlock(&kfile->obj_lock);
	seq_puts(m, "objects:");
	for (t = KDAT_OBJ_IA; t < KDAT_OBJ_TYPE_MAX; t++)
		seq_printf(m, " %s %u", names[t], n[t]);
	seq_putc(m, '\n');
	kdat_rings_show(m, kfile);
}

/*
 * Answer a create: copy the command back and publish @obj, or, when the
 * copy fails, undo it. The caller holds the file's lock.
 */
int kdat_ucmd_finish(struct kdat_ucmd *ucmd, size_t cmd_len,
		     struct kdat_obj *obj)
{
	int ret = kdat_ucmd_respond(ucmd, cmd_len);

	if (ret)
		kdat_obj_discard(obj);
	else
		kdat_obj_publish_locked(obj);
	return ret;
}

/* Copy the command back, no more than the caller's struct holds. */
int kdat_ucmd_respond(struct kdat_ucmd *ucmd, size_t cmd_len)
{
	if (kdat_copy_to_user(ucmd->ubuffer, ucmd->cmd,
			 min_t(size_t, ucmd->user_size, cmd_len)))
		return -EFAULT;
	return 0;
}

static int kdat_cmd_query(struct kdat_ucmd *ucmd)
{
	struct kdat_query *cmd = ucmd->cmd;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	cmd->abi_version = KDAT_ABI_VERSION;
	return kdat_ucmd_respond(ucmd, sizeof(*cmd));
}

static int kdat_cmd_destroy(struct kdat_ucmd *ucmd)
{
	struct kdat_destroy *cmd = ucmd->cmd;

	if (cmd->__reserved || (cmd->flags & ~KDAT_DESTROY_IA_ALL))
		return -EINVAL;
	/* Posts published before the call go first: they may name it. */
	kdat_rings_take(ucmd->kfile);
	kdat_lmr_settle(ucmd->kfile, cmd->handle);
	if (cmd->flags & KDAT_DESTROY_IA_ALL)
		return kdat_ia_destroy_all(ucmd->kfile, cmd->handle);
	return kdat_obj_destroy(ucmd->kfile, cmd->handle);
}

union kdat_ucmd_buffer {
	struct kdat_query query;
	struct kdat_device_list device_list;
	struct kdat_ia_open ia_open;
	struct kdat_ia_query ia_query;
	struct kdat_destroy destroy;
	struct kdat_pz_create pz_create;
	struct kdat_lmr_create lmr_create;
	struct kdat_evd_create evd_create;
	struct kdat_evd_wait evd_wait;
	struct kdat_ep_create ep_create;
	struct kdat_ep_query ep_query;
	struct kdat_ep_connect ep_connect;
	struct kdat_ep_handle_cmd ep_handle_cmd;
	struct kdat_psp_create psp_create;
	struct kdat_cr_query cr_query;
	struct kdat_cr_reply cr_reply;
	struct kdat_post post;
	struct kdat_srq_create srq_create;
	struct kdat_srq_set_lw srq_set_lw;
	struct kdat_cno_create cno_create;
	struct kdat_cno_wait cno_wait;
	struct kdat_evd_modify_cno evd_modify_cno;
	struct kdat_rmr_create rmr_create;
	struct kdat_rmr_bind rmr_bind;
	struct kdat_evd_post_se evd_post_se;
	struct kdat_evd_modify evd_modify;
	struct kdat_srq_resize srq_resize;
	struct kdat_ep_modify ep_modify;
	struct kdat_ring_create ring_create;
	struct kdat_ring_wake ring_wake;
	struct kdat_poller_set poller_set;
	struct kdat_ah_query ah_query;
	struct kdat_cno_agent cno_agent;
};

struct kdat_ioctl_op {
	unsigned int size;
	unsigned int min_size;
	unsigned int ioctl_num;
	int (*execute)(struct kdat_ucmd *ucmd);
};

/*
 * min_size is the size of the first published version of the struct: the
 * last member named here must never change.
 */
#define KDAT_IOCTL_OP(_ioctl, _fn, _struct, _last)			\
	[_IOC_NR(_ioctl) - KDAT_CMD_BASE] = {				\
		.size = sizeof(_struct) +				\
			BUILD_BUG_ON_ZERO(sizeof(union kdat_ucmd_buffer) < \
					  sizeof(_struct)),		\
		.min_size = offsetofend(_struct, _last),		\
		.ioctl_num = _ioctl,					\
		.execute = _fn,						\
	}

static const struct kdat_ioctl_op kdat_ioctl_ops[] = {
	KDAT_IOCTL_OP(KDAT_IOCTL_QUERY, kdat_cmd_query, struct kdat_query,
		      __reserved),
	KDAT_IOCTL_OP(KDAT_IOCTL_DEVICE_LIST, kdat_cmd_device_list,
		      struct kdat_device_list, entries),
	KDAT_IOCTL_OP(KDAT_IOCTL_IA_OPEN, kdat_cmd_ia_open,
		      struct kdat_ia_open, out_ia_handle),
	KDAT_IOCTL_OP(KDAT_IOCTL_IA_QUERY, kdat_cmd_ia_query,
		      struct kdat_ia_query, __reserved),
	KDAT_IOCTL_OP(KDAT_IOCTL_DESTROY, kdat_cmd_destroy,
		      struct kdat_destroy, handle),
	KDAT_IOCTL_OP(KDAT_IOCTL_PZ_CREATE, kdat_cmd_pz_create,
		      struct kdat_pz_create, out_pz_handle),
	KDAT_IOCTL_OP(KDAT_IOCTL_LMR_CREATE, kdat_cmd_lmr_create,
		      struct kdat_lmr_create, __reserved),
	KDAT_IOCTL_OP(KDAT_IOCTL_EVD_CREATE, kdat_cmd_evd_create,
		      struct kdat_evd_create, out_qlen),
	KDAT_IOCTL_OP(KDAT_IOCTL_EVD_WAIT, kdat_cmd_evd_wait,
		      struct kdat_evd_wait, out_nmore),
	KDAT_IOCTL_OP(KDAT_IOCTL_EP_CREATE, kdat_cmd_ep_create,
		      struct kdat_ep_create, srq_handle),
	KDAT_IOCTL_OP(KDAT_IOCTL_EP_QUERY, kdat_cmd_ep_query,
		      struct kdat_ep_query, __reserved),
	KDAT_IOCTL_OP(KDAT_IOCTL_EP_CONNECT, kdat_cmd_ep_connect,
		      struct kdat_ep_connect, flags),
	KDAT_IOCTL_OP(KDAT_IOCTL_EP_DISCONNECT, kdat_cmd_ep_disconnect,
		      struct kdat_ep_handle_cmd, __reserved),
	KDAT_IOCTL_OP(KDAT_IOCTL_EP_RESET, kdat_cmd_ep_reset,
		      struct kdat_ep_handle_cmd, __reserved),
	KDAT_IOCTL_OP(KDAT_IOCTL_PSP_CREATE, kdat_cmd_psp_create,
		      struct kdat_psp_create, rsp_ep_handle),
	KDAT_IOCTL_OP(KDAT_IOCTL_CR_QUERY, kdat_cmd_cr_query,
		      struct kdat_cr_query, __reserved),
	KDAT_IOCTL_OP(KDAT_IOCTL_CR_ACCEPT, kdat_cmd_cr_accept,
		      struct kdat_cr_reply, private_data),
	KDAT_IOCTL_OP(KDAT_IOCTL_CR_REJECT, kdat_cmd_cr_reject,
		      struct kdat_cr_reply, private_data),
	KDAT_IOCTL_OP(KDAT_IOCTL_POST, kdat_cmd_post, struct kdat_post,
		      remote),
	KDAT_IOCTL_OP(KDAT_IOCTL_SRQ_CREATE, kdat_cmd_srq_create,
		      struct kdat_srq_create, __reserved),
	KDAT_IOCTL_OP(KDAT_IOCTL_SRQ_SET_LW, kdat_cmd_srq_set_lw,
		      struct kdat_srq_set_lw, __reserved),
	KDAT_IOCTL_OP(KDAT_IOCTL_CNO_CREATE, kdat_cmd_cno_create,
		      struct kdat_cno_create, out_cno_handle),
	KDAT_IOCTL_OP(KDAT_IOCTL_CNO_WAIT, kdat_cmd_cno_wait,
		      struct kdat_cno_wait, __reserved),
	KDAT_IOCTL_OP(KDAT_IOCTL_EVD_MODIFY_CNO, kdat_cmd_evd_modify_cno,
		      struct kdat_evd_modify_cno, __reserved),
	KDAT_IOCTL_OP(KDAT_IOCTL_RMR_CREATE, kdat_cmd_rmr_create,
		      struct kdat_rmr_create, out_rmr_handle),
	KDAT_IOCTL_OP(KDAT_IOCTL_RMR_BIND, kdat_cmd_rmr_bind,
		      struct kdat_rmr_bind, out_flags),
	KDAT_IOCTL_OP(KDAT_IOCTL_EVD_POST_SE, kdat_cmd_evd_post_se,
		      struct kdat_evd_post_se, pointer),
	KDAT_IOCTL_OP(KDAT_IOCTL_EVD_MODIFY, kdat_cmd_evd_modify,
		      struct kdat_evd_modify, qlen),
	KDAT_IOCTL_OP(KDAT_IOCTL_SRQ_RESIZE, kdat_cmd_srq_resize,
		      struct kdat_srq_resize, __reserved),
	KDAT_IOCTL_OP(KDAT_IOCTL_EP_MODIFY, kdat_cmd_ep_modify,
		      struct kdat_ep_modify, attr),
	KDAT_IOCTL_OP(KDAT_IOCTL_RING_CREATE, kdat_cmd_ring_create,
		      struct kdat_ring_create, out_off),
	KDAT_IOCTL_OP(KDAT_IOCTL_RING_WAKE, kdat_cmd_ring_wake,
		      struct kdat_ring_wake, flags),
	KDAT_IOCTL_OP(KDAT_IOCTL_POLLER_SET, kdat_cmd_poller_set,
		      struct kdat_poller_set, __reserved),
	KDAT_IOCTL_OP(KDAT_IOCTL_AH_QUERY, kdat_cmd_ah_query,
		      struct kdat_ah_query, private_data),
	KDAT_IOCTL_OP(KDAT_IOCTL_CNO_AGENT, kdat_cmd_cno_agent,
		      struct kdat_cno_agent, __reserved),
};

static long kdat_fops_ioctl(struct file *filp, unsigned int cmd,
			    unsigned long arg)
{
	const struct kdat_ioctl_op *op;
	union kdat_ucmd_buffer buf;
	struct kdat_ucmd ucmd = {};
	unsigned int nr;
	int ret;

	nr = _IOC_NR(cmd);
	if (nr < KDAT_CMD_BASE ||
	    nr - KDAT_CMD_BASE >= ARRAY_SIZE(kdat_ioctl_ops))
		return -ENOTTY;
	op = &kdat_ioctl_ops[nr - KDAT_CMD_BASE];
	if (op->ioctl_num != cmd || !op->execute)
		return -ENOTTY;

	ucmd.kfile = filp->private_data;
	ucmd.ubuffer = (void __user *)arg;
	ret = get_user(ucmd.user_size, (u32 __user *)ucmd.ubuffer);
	if (ret)
		return ret;
	if (ucmd.user_size < op->min_size)
		return -EINVAL;
	/*
	 * A struct may grow, not without bound: past a page the tail that
	 * copy_struct_from_user() checks for zeroes is not a newer ABI.
	 */
	if (ucmd.user_size > PAGE_SIZE)
		return -E2BIG;

	memset(&buf, 0, sizeof(buf));
	ret = copy_struct_from_user(&buf, op->size, ucmd.ubuffer,
				    ucmd.user_size);
	if (ret)
		return ret;
	ucmd.cmd = &buf;
	return op->execute(&ucmd);
}

static const struct file_operations kdat_fops = {
	.owner = THIS_MODULE,
	.open = kdat_fops_open,
	.release = kdat_fops_release,
	.unlocked_ioctl = kdat_fops_ioctl,
	.mmap = kdat_fops_mmap,
	.show_fdinfo = kdat_fops_show_fdinfo,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice kdat_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = KDAT_MODNAME,
	.fops = &kdat_fops,
	/* Root's; a site grants it to a group (scripts/udev/60-kdat.rules). */
	.mode = 0600,
};

/* /sys/kernel/debug/kdat/objects: live counts, for leak tests. */
static int kdat_objects_show(struct seq_file *s, void *unused)
{
	seq_printf(s, "files %d\n", atomic_read(&kdat_open_files));
	seq_printf(s, "devices %d\n", kdat_device_count());
	seq_printf(s, "ia %d\n", kdat_obj_count(KDAT_OBJ_IA));
	seq_printf(s, "pz %d\n", kdat_obj_count(KDAT_OBJ_PZ));
	seq_printf(s, "lmr %d\n", kdat_obj_count(KDAT_OBJ_LMR));
	seq_printf(s, "evd %d\n", kdat_obj_count(KDAT_OBJ_EVD));
	seq_printf(s, "ep %d\n", kdat_obj_count(KDAT_OBJ_EP));
	seq_printf(s, "psp %d\n", kdat_obj_count(KDAT_OBJ_PSP));
	seq_printf(s, "cr %d\n", kdat_obj_count(KDAT_OBJ_CR));
	seq_printf(s, "srq %d\n", kdat_obj_count(KDAT_OBJ_SRQ));
	seq_printf(s, "cno %d\n", kdat_obj_count(KDAT_OBJ_CNO));
	seq_printf(s, "rmr %d\n", kdat_obj_count(KDAT_OBJ_RMR));
	seq_printf(s, "ah %d\n", kdat_obj_count(KDAT_OBJ_AH));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kdat_objects);

static void kdat_abi_check(void)
{
	BUILD_BUG_ON(KDAT_NAME_MAX != IB_DEVICE_NAME_MAX);
	BUILD_BUG_ON(sizeof(struct kdat_query) != 16);
	BUILD_BUG_ON(sizeof(struct kdat_port_info) != 96);
	BUILD_BUG_ON(sizeof(struct kdat_device_list) != 24);
	BUILD_BUG_ON(sizeof(struct kdat_ia_open) != 80);
	BUILD_BUG_ON(sizeof(struct kdat_ia_query) != 216);
	BUILD_BUG_ON(sizeof(struct kdat_destroy) != 16);
	BUILD_BUG_ON(sizeof(struct kdat_pz_create) != 16);
	BUILD_BUG_ON(sizeof(struct kdat_lmr_create) != 48);
	BUILD_BUG_ON(sizeof(struct kdat_evd_create) != 32);
	BUILD_BUG_ON(sizeof(struct kdat_cno_create) != 16);
	BUILD_BUG_ON(sizeof(struct kdat_cno_wait) != 24);
	BUILD_BUG_ON(sizeof(struct kdat_evd_modify_cno) != 16);
	BUILD_BUG_ON(sizeof(struct kdat_rmr_create) != 16);
	BUILD_BUG_ON(sizeof(struct kdat_rmr_bind) != 56);
	BUILD_BUG_ON(sizeof(struct kdat_evd_post_se) != 16);
	BUILD_BUG_ON(sizeof(struct kdat_evd_modify) != 16);
	BUILD_BUG_ON(sizeof(struct kdat_srq_resize) != 16);
	BUILD_BUG_ON(sizeof(struct kdat_ep_modify) != 48);
	BUILD_BUG_ON(sizeof(struct kdat_ring_create) != 72);
	BUILD_BUG_ON(sizeof(struct kdat_ring_wake) != 16);
	BUILD_BUG_ON(sizeof(struct kdat_poller_set) != 16);
	BUILD_BUG_ON(sizeof(struct kdat_sqe) != 40);
	BUILD_BUG_ON(sizeof(struct kdat_ring_offsets) != 32);
	BUILD_BUG_ON(sizeof(struct kdat_event) != 64);
	BUILD_BUG_ON(sizeof(struct kdat_evd_wait) != 40);
	BUILD_BUG_ON(sizeof(struct kdat_ep_attr) != 32);
	BUILD_BUG_ON(sizeof(struct kdat_ep_create) != 88);
	BUILD_BUG_ON(sizeof(struct kdat_sockaddr) != 24);
	BUILD_BUG_ON(sizeof(struct kdat_ep_query) != 328);
	BUILD_BUG_ON(sizeof(struct kdat_ep_timers) != 24);
	BUILD_BUG_ON(sizeof(struct kdat_ep_connect) != 64);
	BUILD_BUG_ON(sizeof(struct kdat_ep_handle_cmd) != 16);
	BUILD_BUG_ON(sizeof(struct kdat_psp_create) != 32);
	BUILD_BUG_ON(sizeof(struct kdat_cr_query) != 248);
	BUILD_BUG_ON(sizeof(struct kdat_cr_reply) != 24);
	BUILD_BUG_ON(sizeof(struct kdat_lmr_triplet) != 24);
	BUILD_BUG_ON(sizeof(struct kdat_rmr_triplet) != 24);
	BUILD_BUG_ON(sizeof(struct kdat_post) != 88);
	BUILD_BUG_ON(offsetofend(struct kdat_post, remote) != 64);
	BUILD_BUG_ON(sizeof(struct kdat_dto_ext) != 24);
	BUILD_BUG_ON(sizeof(struct kdat_sqe_ext) != 64);
	/* Both entries start alike: the poller reads that part as either. */
	BUILD_BUG_ON(offsetof(struct kdat_sqe_ext, cookie) !=
		     offsetof(struct kdat_sqe, cookie));
	BUILD_BUG_ON(offsetof(struct kdat_sqe_ext, remote) !=
		     offsetof(struct kdat_sqe, remote));
	BUILD_BUG_ON(offsetof(struct kdat_sqe_ext, completion_flags) !=
		     offsetof(struct kdat_sqe, completion_flags));
	BUILD_BUG_ON(offsetof(struct kdat_event, imm_data) != 52);
	BUILD_BUG_ON(offsetof(struct kdat_event, ah_handle) != 56);
	BUILD_BUG_ON(offsetof(struct kdat_dto_ext, ah_handle) != 20);
	BUILD_BUG_ON(sizeof(struct kdat_ah_query) != 252);
	BUILD_BUG_ON((int)KDAT_DTO_RDMA_WRITE_IMM <= (int)KDAT_POST_SRQ_RECV);
	/* A send slot's op is a u8, KDAT_OP_BIND above every DTO. */
	BUILD_BUG_ON(KDAT_DTO_RECV_UD_IMM >= KDAT_OP_BIND);
	BUILD_BUG_ON(sizeof(struct kdat_srq_create) != 32);
	BUILD_BUG_ON(sizeof(struct kdat_srq_set_lw) != 16);
	BUILD_BUG_ON(KDAT_MAX_PRIVATE_DATA > KDAT_PRIVATE_DATA_BUF);
	BUILD_BUG_ON((int)KDAT_DTO_ERR_FLUSHED != 1);
	BUILD_BUG_ON((int)KDAT_PORT_ACTIVE != (int)IB_PORT_ACTIVE);
	BUILD_BUG_ON((int)KDAT_PORT_DOWN != (int)IB_PORT_DOWN);
	BUILD_BUG_ON((int)KDAT_PORT_ACTIVE_DEFER != (int)IB_PORT_ACTIVE_DEFER);
}

static int __init kdat_init(void)
{
	int ret;

	kdat_abi_check();

	ret = kdat_cm_init();
	if (ret)
		return ret;

	ret = kdat_device_init();
	if (ret)
		goto err_cm_exit;

	ret = kdat_nl_init();
	if (ret)
		goto err_device_exit;

	ret = misc_register(&kdat_misc);
	if (ret)
		goto err_nl_exit;

	kdat_debugfs = debugfs_create_dir(KDAT_MODNAME, NULL);
	debugfs_create_file("objects", 0444, kdat_debugfs, NULL,
			    &kdat_objects_fops);
	kdat_cq_debugfs(kdat_debugfs);
	kdat_device_debugfs(kdat_debugfs);
	return 0;

err_nl_exit:
	kdat_nl_exit();
err_device_exit:
	kdat_device_exit();
err_cm_exit:
	kdat_cm_exit();
	return ret;
}

static void __exit kdat_exit(void)
{
	debugfs_remove(kdat_debugfs);
	misc_deregister(&kdat_misc);
	kdat_nl_exit();
	kdat_cm_exit();
	kdat_device_exit();
	kdat_obj_cleanup();
}

module_init(kdat_init);
module_exit(kdat_exit);

MODULE_DESCRIPTION("kdat: Direct Access Transport on the kernel RDMA stack");
MODULE_LICENSE("GPL");
