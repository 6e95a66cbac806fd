// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libdat connection management: Public and Reserved Service Points,
 * Connection Requests, and the qualifiers and addresses they carry.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <arpa/inet.h>

#include "dat_internal.h"

/*
 * A connection qualifier goes to the kernel as it is: kdat.ko maps it to
 * an RDMA CM TCP port as OFA's cma provider does (the qualifier up to
 * 65535, above it 33534 + qualifier % 32001), so that either can be the
 * other's peer. 0 would be the CM's "any port": refused.
 */

void kd_sockaddr_from_kdat(const struct kdat_sockaddr *k,
			   struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (k->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = k->port;
		memcpy(&sin->sin_addr, k->addr, 4);
	} else if (k->family == AF_INET6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = k->port;
		sin6->sin6_scope_id = k->scope_id;
		memcpy(&sin6->sin6_addr, k->addr, 16);
	}
}

DAT_RETURN kd_psp_create(DAT_IA_HANDLE ia_handle,
			 DAT_CONN_QUAL conn_qual,
			 DAT_EVD_HANDLE evd_handle,
			 DAT_PSP_FLAGS flags,
			 DAT_PSP_HANDLE *psp_handle)
{
	struct kdat_psp_create c = { .size = sizeof(c) };
	struct kd_ia *ia = ia_handle;
	struct kd_psp *psp;
	DAT_RETURN ret;

	if (!kd_check(ia, DAT_HANDLE_TYPE_IA))
		return DAT_INVALID_HANDLE;
	if (!kd_check(evd_handle, DAT_HANDLE_TYPE_EVD))
		return DAT_INVALID_HANDLE;
	if (!psp_handle)
		return DAT_INVALID_PARAMETER;
	if (flags != DAT_PSP_CONSUMER_FLAG)
		return DAT_NOT_IMPLEMENTED;
	if (!conn_qual)
		return DAT_INVALID_PARAMETER;
	c.ia_handle = ia->obj.kh;
	c.evd_handle = ((struct kd_obj *)evd_handle)->kh;
	c.conn_qual = conn_qual;
	ret = kd_ioctl(ia, KDAT_IOCTL_PSP_CREATE, &c);
	if (ret)
		return ret;
	psp = calloc(1, sizeof(*psp));
	if (!psp) {
		kd_destroy_kh(ia, c.out_psp_handle);
		return DAT_INSUFFICIENT_RESOURCES;
	}
	psp->evd = evd_handle;
	psp->conn_qual = conn_qual;
	if (!kd_obj_init(&psp->obj, ia, DAT_HANDLE_TYPE_PSP, c.out_psp_handle))
		return kd_obj_abandon(&psp->obj);
	*psp_handle = psp;
	return DAT_SUCCESS;
}

DAT_RETURN kd_rsp_create(DAT_IA_HANDLE ia_handle,
			 DAT_CONN_QUAL conn_qual,
			 DAT_EP_HANDLE ep_handle,
			 DAT_EVD_HANDLE evd_handle,
			 DAT_RSP_HANDLE *rsp_handle)
{
	struct kdat_psp_create c = { .size = sizeof(c) };
	struct kd_ia *ia = ia_handle;
	struct kd_psp *rsp;
	DAT_RETURN ret;

	if (!kd_check(ia, DAT_HANDLE_TYPE_IA) ||
	    !kd_check(evd_handle, DAT_HANDLE_TYPE_EVD) ||
	    !kd_check(ep_handle, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	if (!rsp_handle)
		return DAT_INVALID_PARAMETER;
	c.ia_handle = ia->obj.kh;
	c.evd_handle = ((struct kd_obj *)evd_handle)->kh;
	c.rsp_ep_handle = ((struct kd_obj *)ep_handle)->kh;
	if (!conn_qual)
		return DAT_INVALID_PARAMETER;
	c.conn_qual = conn_qual;
	ret = kd_ioctl(ia, KDAT_IOCTL_PSP_CREATE, &c);
	if (ret)
		return ret;
	rsp = calloc(1, sizeof(*rsp));
	if (!rsp) {
		kd_destroy_kh(ia, c.out_psp_handle);
		return DAT_INSUFFICIENT_RESOURCES;
	}
	rsp->evd = evd_handle;
	rsp->conn_qual = conn_qual;
	rsp->ep = ep_handle;
	if (!kd_obj_init(&rsp->obj, ia, DAT_HANDLE_TYPE_RSP, c.out_psp_handle))
		return kd_obj_abandon(&rsp->obj);
	*rsp_handle = rsp;
	return DAT_SUCCESS;
}

DAT_RETURN kd_rsp_free(DAT_RSP_HANDLE rsp_handle)
{
	if (!kd_check(rsp_handle, DAT_HANDLE_TYPE_RSP))
		return DAT_INVALID_HANDLE;
	return kd_destroy(rsp_handle);
}

DAT_RETURN kd_psp_free(DAT_PSP_HANDLE psp_handle)
{
	if (!kd_check(psp_handle, DAT_HANDLE_TYPE_PSP))
		return DAT_INVALID_HANDLE;
	return kd_destroy(psp_handle);
}

DAT_RETURN kd_cr_query(DAT_CR_HANDLE cr_handle,
		       DAT_CR_PARAM_MASK mask,
		       DAT_CR_PARAM *param)
{
	struct kd_cr *cr = cr_handle;

	(void)mask;
	if (!kd_check(cr, DAT_HANDLE_TYPE_CR))
		return DAT_INVALID_HANDLE;
	if (!param)
		return DAT_INVALID_PARAMETER;
	memset(param, 0, sizeof(*param));
	param->remote_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&cr->remote;
	param->remote_port_qual =
		ntohs(((struct sockaddr_in *)&cr->remote)->sin_port);
	param->private_data_size = cr->pdata_len;
	param->private_data = cr->pdata;
	/* An RSP's request: its EP, the only one that may take it. */
	param->local_ep_handle =
		cr->psp && cr->psp->obj.type == DAT_HANDLE_TYPE_RSP ?
		cr->psp->ep : DAT_HANDLE_NULL;
	return DAT_SUCCESS;
}

/*
 * Is @cr still the kernel's, after a reply that failed? The kernel is the
 * one to say: it keeps a CR that an accept refused before touching the
 * request (the wrong EP or state) and one whose reply it could not read,
 * and destroys the others. Its handles come round again only after 2^31
 * objects, so a CR's handle is never another's here.
 */
static bool kd_cr_kept(struct kd_cr *cr)
{
	struct kdat_cr_query q = { .size = sizeof(q), .cr_handle = cr->obj.kh };

	return !ioctl(cr->obj.ia->fd, KDAT_IOCTL_CR_QUERY, &q) ||
	       errno != EBADF;
}

/* Accept or reject: a CR is answered once, then it is gone. */
static DAT_RETURN kd_cr_reply(struct kd_cr *cr, unsigned long cmd,
			      struct kd_ep *ep, DAT_COUNT pdata_size,
			      const DAT_PVOID pdata)
{
	struct kdat_cr_reply c = { .size = sizeof(c) };
	struct kd_ia *ia = cr->obj.ia;
	DAT_RETURN ret;

	if (pdata_size < 0 || pdata_size > KDAT_MAX_PRIVATE_DATA ||
	    (pdata_size && !pdata))
		return DAT_INVALID_PARAMETER;
	c.cr_handle = cr->obj.kh;
	c.ep_handle = ep ? ep->obj.kh : 0;
	c.private_data = (uintptr_t)pdata;
	c.private_data_len = pdata_size;
	ret = kd_ioctl(ia, cmd, &c);
	if (ret == DAT_SUCCESS)
		kd_count(&ia->cntrs[ep ? DCNT_IA_SP_CR_ACCEPTED :
					 DCNT_IA_SP_CR_REJECTED], 1);
	/* Passive now: nothing to duplicate (kd_ep_dup_connect()). */
	if (ret == DAT_SUCCESS && ep)
		__atomic_store_n(&ep->active_qual, 0, __ATOMIC_RELAXED);
	/* Answered, or gone in the kernel: our copy goes too. */
	if (ret == DAT_SUCCESS || !kd_cr_kept(cr)) {
		struct kd_psp *psp = cr->psp;

		kd_table_del(&cr->obj);
		cr->obj.provider = NULL;
		free(cr);
		/* An RSP's one request was answered: the RSP goes. */
		if (psp && psp->obj.type == DAT_HANDLE_TYPE_RSP &&
		    psp->obj.provider)
			kd_destroy(&psp->obj);
	}
	return ret;
}

DAT_RETURN kd_cr_accept(DAT_CR_HANDLE cr_handle,
			DAT_EP_HANDLE ep_handle,
			DAT_COUNT pdata_size,
			const DAT_PVOID pdata)
{
	if (!kd_check(cr_handle, DAT_HANDLE_TYPE_CR))
		return DAT_INVALID_HANDLE;
	/* An EP without a connection EVD is not one to accept with. */
	if (!kd_check(ep_handle, DAT_HANDLE_TYPE_EP) ||
	    !((struct kd_ep *)ep_handle)->conn_evd)
		return DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EP;
	return kd_cr_reply(cr_handle, KDAT_IOCTL_CR_ACCEPT, ep_handle,
			   pdata_size, pdata);
}

DAT_RETURN kd_cr_reject(DAT_CR_HANDLE cr_handle,
			DAT_COUNT pdata_size,
			const DAT_PVOID pdata)
{
	if (!kd_check(cr_handle, DAT_HANDLE_TYPE_CR))
		return DAT_INVALID_HANDLE;
	return kd_cr_reply(cr_handle, KDAT_IOCTL_CR_REJECT, NULL, pdata_size,
			   pdata);
}

DAT_RETURN kd_psp_query(DAT_PSP_HANDLE psp_handle,
			DAT_PSP_PARAM_MASK mask,
			DAT_PSP_PARAM *param)
{
	struct kd_psp *psp = psp_handle;

	(void)mask;
	if (!kd_check(psp, DAT_HANDLE_TYPE_PSP))
		return DAT_INVALID_HANDLE;
	if (!param)
		return DAT_INVALID_PARAMETER;
	param->ia_handle = psp->obj.ia;
	param->conn_qual = psp->conn_qual;
	param->evd_handle = psp->evd;
	param->psp_flags = DAT_PSP_CONSUMER_FLAG;
	return DAT_SUCCESS;
}

DAT_RETURN kd_rsp_query(DAT_RSP_HANDLE rsp_handle,
			DAT_RSP_PARAM_MASK mask,
			DAT_RSP_PARAM *param)
{
	struct kd_psp *rsp = rsp_handle;

	(void)mask;
	if (!kd_check(rsp, DAT_HANDLE_TYPE_RSP))
		return DAT_INVALID_HANDLE;
	if (!param)
		return DAT_INVALID_PARAMETER;
	param->ia_handle = rsp->obj.ia;
	param->conn_qual = rsp->conn_qual;
	param->evd_handle = rsp->evd;
	param->ep_handle = rsp->ep;
	return DAT_SUCCESS;
}

/* Any free qualifier: tried from a pid-based start, as OFA's does. */
DAT_RETURN kd_psp_create_any(DAT_IA_HANDLE ia,
			     DAT_CONN_QUAL *conn_qual,
			     DAT_EVD_HANDLE evd,
			     DAT_PSP_FLAGS flags,
			     DAT_PSP_HANDLE *psp)
{
	DAT_CONN_QUAL q = 1024 + (DAT_CONN_QUAL)getpid() % 30000;
	DAT_RETURN ret = DAT_CONN_QUAL_IN_USE;
	int i;

	if (!conn_qual)
		return DAT_INVALID_PARAMETER;
	for (i = 0; i < 1000 && DAT_GET_TYPE(ret) == DAT_CONN_QUAL_IN_USE;
	     i++, q = q + 1 < 65536 ? q + 1 : 1024) {
		ret = kd_psp_create(ia, q, evd, flags, psp);
		if (ret == DAT_SUCCESS)
			*conn_qual = q;
	}
	if (ret == DAT_SUCCESS)
		kd_count(&((struct kd_ia *)ia)->cntrs[DCNT_IA_PSP_CREATE_ANY], 1);
	return ret;
}
