// SPDX-License-Identifier: GPL-2.0
/*
 * kdat's status interface: the generic netlink family "kdat" (see
 * include/uapi/linux/kdat_netlink.h), read by kdat-stat.
 *
 * The dump walks the global handle table in handle order, one object at a
 * time: it takes a reference to the object (kdat_obj_next()), which keeps
 * the object, its file and its IA alive and its resources unreleased (a
 * destroy waits for it), reads what it reports under the object's own
 * lock where one guards it, and drops the reference before the next. No
 * file or object lock is held across objects, so the dump never holds up
 * a create or a destroy for longer than one object's message.
 */
#include <linux/cred.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <net/genetlink.h>
#include <net/netlink.h>

#include <uapi/linux/kdat_netlink.h>

#include "kdat.h"

static struct genl_family kdat_nl_family;

/* Whether the dump's caller may see @kfile's objects. */
static bool kdat_nl_visible(struct netlink_callback *cb,
			    const struct kdat_file *kfile)
{
	if (!net_eq(sock_net(cb->skb->sk), kfile->net))
		return false;
	/*
	 * As rdma's resource dump: a process's objects only where its PID
	 * is seen (the dump runs in the asker's context), a kernel
	 * consumer's only from the initial PID namespace.
	 */
	if (kfile->kernel ? task_active_pid_ns(current) != &init_pid_ns :
	    !pid_vnr(kfile->pid))
		return false;
	if (netlink_net_capable(cb->skb, CAP_NET_ADMIN))
		return true;
	return !kfile->kernel &&
	       uid_eq(NETLINK_CB(cb->skb).creds.uid, kfile->cred->uid);
}

/*
 * The opener's PID as the asker sees it; 0 once the opener has exited
 * (another process holds the file now), lest a PID reused since name a
 * process that never saw the file.
 */
static u32 kdat_nl_pid(const struct kdat_file *kfile)
{
	if (kfile->kernel || !pid_has_task(kfile->pid, PIDTYPE_TGID))
		return 0;
	return pid_vnr(kfile->pid);
}

static int kdat_nl_put_addr(struct sk_buff *skb, int attr,
			    const struct sockaddr_storage *ss)
{
	switch (ss->ss_family) {
	case AF_INET:
		return nla_put(skb, attr, sizeof(struct sockaddr_in), ss);
	case AF_INET6:
		return nla_put(skb, attr, sizeof(struct sockaddr_in6), ss);
	default:
		return 0;
	}
}

static int kdat_nl_fill_ia(struct sk_buff *skb, struct kdat_ia *ia)
{
	struct kdat_file *kfile = ia->obj.file;

	/* The file's poller settings are read racily: a status. */
	if (nla_put_string(skb, KDAT_NLA_DEV_NAME, ia->name) ||
	    nla_put_u32(skb, KDAT_NLA_PORT, ia->port_num) ||
	    nla_put_u32(skb, KDAT_NLA_POLL_MODE, READ_ONCE(kfile->poll_mode)) ||
	    nla_put_s32(skb, KDAT_NLA_POLL_CPU, READ_ONCE(kfile->poll_cpu)) ||
	    nla_put_u8(skb, KDAT_NLA_POLLER, !!READ_ONCE(kfile->poller)))
		return -EMSGSIZE;
	return 0;
}

static int kdat_nl_fill_ep(struct sk_buff *skb, struct kdat_ep *ep)
{
	struct sockaddr_storage local, remote;
	u32 state, sq_depth, rq_depth, sq_posted, rq_posted;
	u64 send_done, recv_done, errors;
	unsigned long flags;
	bool rings;

	spin_lock_irqsave(&ep->lock, flags);
	state = ep->state;
	sq_depth = ep->send.limit;
	rq_depth = ep->recv.limit;
	sq_posted = ep->send.posted;
	rq_posted = ep->recv.posted;
	send_done = ep->send_done;
	recv_done = ep->recv_done;
	errors = ep->errors;
	rings = ep->sq_ring || ep->rq_ring;
	spin_unlock_irqrestore(&ep->lock, flags);
	/*
	 * The addresses change under cm_lock, which a connect or a teardown
	 * may hold for long: an EP in the middle of one is shown without
	 * them rather than holding up the dump.
	 */
	local.ss_family = AF_UNSPEC;
	remote.ss_family = AF_UNSPEC;
	if (mutex_trylock(&ep->cm_lock)) {
		local = ep->local;
		remote = ep->remote;
		mutex_unlock(&ep->cm_lock);
	}

	if (nla_put_u32(skb, KDAT_NLA_EP_STATE, state) ||
	    nla_put_u8(skb, KDAT_NLA_EP_UD, ep->ud) ||
	    nla_put_u32(skb, KDAT_NLA_QPN, READ_ONCE(ep->qpn)) ||
	    kdat_nl_put_addr(skb, KDAT_NLA_SRC_ADDR, &local) ||
	    kdat_nl_put_addr(skb, KDAT_NLA_DST_ADDR, &remote) ||
	    nla_put_u32(skb, KDAT_NLA_SQ_DEPTH, sq_depth) ||
	    nla_put_u32(skb, KDAT_NLA_RQ_DEPTH, rq_depth) ||
	    nla_put_u32(skb, KDAT_NLA_SQ_POSTED, sq_posted) ||
	    nla_put_u32(skb, KDAT_NLA_RQ_POSTED, rq_posted) ||
	    nla_put_u64_64bit(skb, KDAT_NLA_SQ_DONE, send_done, KDAT_NLA_PAD) ||
	    nla_put_u64_64bit(skb, KDAT_NLA_RQ_DONE, recv_done, KDAT_NLA_PAD) ||
	    nla_put_u64_64bit(skb, KDAT_NLA_ERRORS, errors, KDAT_NLA_PAD) ||
	    nla_put_u8(skb, KDAT_NLA_RINGS, rings))
		return -EMSGSIZE;
	return 0;
}

static int kdat_nl_fill_lmr(struct sk_buff *skb, struct kdat_lmr *lmr)
{
	u64 pinned = 0;

	/* A user LMR pins the pages it spans until its MR is deregistered. */
	if (!lmr->kernel && READ_ONCE(lmr->mr))
		pinned = (u64)DIV_ROUND_UP((lmr->addr & ~PAGE_MASK) +
					   lmr->length, PAGE_SIZE) << PAGE_SHIFT;
	if (nla_put_u64_64bit(skb, KDAT_NLA_LENGTH, lmr->length,
			      KDAT_NLA_PAD) ||
	    nla_put_u64_64bit(skb, KDAT_NLA_PINNED, pinned, KDAT_NLA_PAD))
		return -EMSGSIZE;
	return 0;
}

static int kdat_nl_fill_evd(struct sk_buff *skb, struct kdat_evd *evd)
{
	if (nla_put_u32(skb, KDAT_NLA_QLEN, READ_ONCE(evd->qlen)) ||
	    nla_put_u32(skb, KDAT_NLA_EVD_FLAGS, evd->flags))
		return -EMSGSIZE;
	return 0;
}

/* One object's message; the caller holds a reference to @obj. */
static int kdat_nl_fill(struct sk_buff *skb, struct netlink_callback *cb,
			struct kdat_obj *obj)
{
	struct kdat_file *kfile = obj->file;
	void *hdr;
	int ret;

	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &kdat_nl_family, NLM_F_MULTI, KDAT_NL_CMD_OBJ_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, KDAT_NLA_PID, kdat_nl_pid(kfile)) ||
	    nla_put_string(skb, KDAT_NLA_COMM,
			   kfile->kernel ? "[kernel]" : kfile->comm) ||
	    nla_put_u32(skb, KDAT_NLA_TYPE, obj->type) ||
	    nla_put_u32(skb, KDAT_NLA_HANDLE, obj->handle) ||
	    nla_put_u32(skb, KDAT_NLA_IA, obj->ia ? obj->ia->obj.handle : 0) ||
	    nla_put_u32(skb, KDAT_NLA_USERS, atomic_read(&obj->users))) {
		ret = -EMSGSIZE;
		goto cancel;
	}
	switch (obj->type) {
	case KDAT_OBJ_IA:
		ret = kdat_nl_fill_ia(skb, container_of(obj, struct kdat_ia,
							  obj));
		break;
	case KDAT_OBJ_EP:
		ret = kdat_nl_fill_ep(skb, container_of(obj, struct kdat_ep,
							  obj));
		break;
	case KDAT_OBJ_LMR:
		ret = kdat_nl_fill_lmr(skb, container_of(obj, struct kdat_lmr,
							   obj));
		break;
	case KDAT_OBJ_EVD:
		ret = kdat_nl_fill_evd(skb, container_of(obj, struct kdat_evd,
							   obj));
		break;
	default:
		ret = 0;
	}
	if (ret)
		goto cancel;
	genlmsg_end(skb, hdr);
	return 0;

cancel:
	genlmsg_cancel(skb, hdr);
	return ret;
}

/*
 * cb->args[0]: the handle to start from in the next call; cb->args[1]:
 * the walk reached the end.
 */
static int kdat_nl_obj_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	unsigned long index = cb->args[0];
	struct kdat_obj *obj;
	int ret = 0;

	if (cb->args[1])
		return 0;
	for (;;) {
		obj = kdat_obj_next(&index);
		if (!obj) {
			cb->args[1] = 1;
			break;
		}
		if (kdat_nl_visible(cb, obj->file))
			ret = kdat_nl_fill(skb, cb, obj);
		kdat_obj_put(obj);
		/* The message is full: this object starts the next one. */
		if (ret)
			break;
		index++;
	}
	cb->args[0] = index;
	/* An object that fits in no message ends the dump in error. */
	if (ret && !skb->len)
		return ret;
	return skb->len;
}

static const struct genl_small_ops kdat_nl_ops[] = {
	{
		.cmd = KDAT_NL_CMD_OBJ_GET,
		.dumpit = kdat_nl_obj_dump,
	},
};

static struct genl_family kdat_nl_family __ro_after_init = {
	.name = KDAT_GENL_NAME,
	.version = KDAT_GENL_VERSION,
	/* No request attribute: the core refuses any. */
	.netnsok = true,
	.module = THIS_MODULE,
	.small_ops = kdat_nl_ops,
	.n_small_ops = ARRAY_SIZE(kdat_nl_ops),
};

int __init kdat_nl_init(void)
{
	BUILD_BUG_ON((int)KDAT_NL_OBJ_IA != (int)KDAT_OBJ_IA);
	BUILD_BUG_ON((int)KDAT_NL_OBJ_AH != (int)KDAT_OBJ_AH);
	BUILD_BUG_ON(KDAT_OBJ_AH + 1 != KDAT_OBJ_TYPE_MAX);
	return genl_register_family(&kdat_nl_family);
}

void kdat_nl_exit(void)
{
	genl_unregister_family(&kdat_nl_family);
}
