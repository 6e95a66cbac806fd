// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libdat Endpoints: create (with its own receive queue or on an SRQ; RC,
 * or UD of the DAT IB extensions), query, modify, connect, disconnect,
 * reset, free. Their posts are dat_dto.c's; UD's datagrams, AHs and
 * events dat_ud.c's.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <arpa/inet.h>

#include "dat_internal.h"
#include "dat_ring.h"

DAT_RETURN kd_ep_fetch(struct kd_ep *ep, struct kdat_ep_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->ep_handle = ep->obj.kh;
	return kd_ioctl(ep->obj.ia, KDAT_IOCTL_EP_QUERY, q);
}

/* @want, or @limit when the device gives less (0: it says nothing). */
static uint32_t kd_cap(uint32_t want, uint32_t limit)
{
	return limit && limit < want ? limit : want;
}

/*
 * An EP created without attributes is as capable as OFA's provider makes
 * one (its dapl_ep_util.c defaults): 16 DTOs and 4 IOV segments each way,
 * 4 RDMA reads in and out; less where the device offers less.
 */
static DAT_RETURN kd_ep_default_attr(struct kd_ia *ia, struct kdat_ep_attr *a)
{
	struct kdat_ia_query q = {
		.size = sizeof(q),
		.ia_handle = ia->obj.kh,
	};
	DAT_RETURN ret;

	ret = kd_ioctl(ia, KDAT_IOCTL_IA_QUERY, &q);
	if (ret)
		return ret;
	a->max_recv_dtos = kd_cap(16, q.max_qp_wr);
	a->max_request_dtos = kd_cap(16, q.max_qp_wr);
	a->max_recv_iov = kd_cap(4, q.max_recv_sge);
	a->max_request_iov = kd_cap(4, q.max_send_sge);
	a->max_rdma_read_in = kd_cap(4, q.max_qp_rd_atom);
	a->max_rdma_read_out = kd_cap(4, q.max_qp_init_rd_atom);
	return DAT_SUCCESS;
}

/*
 * kdat's provider-specific EP attributes: the transport timers of struct
 * kdat_ep_timers, by name, their values decimal strings. Names of other
 * providers are passed over (a DAT program written for several gives them
 * all); a value that is no number is refused here, one out of range by
 * the kernel.
 */
static const struct {
	const char *name;
	uint32_t bit;
	size_t off;
} kd_ep_timer_attrs[KD_EP_SPEC_ATTRS] = {
	{ "KDAT_ACK_TIMEOUT", KDAT_EP_TIMER_ACK_TIMEOUT,
	  offsetof(struct kdat_ep_timers, ack_timeout) },
	{ "KDAT_RETRY_COUNT", KDAT_EP_TIMER_RETRY_COUNT,
	  offsetof(struct kdat_ep_timers, retry_count) },
	{ "KDAT_RNR_TIMER", KDAT_EP_TIMER_RNR_TIMER,
	  offsetof(struct kdat_ep_timers, rnr_timer) },
	{ "KDAT_KEEPALIVE_MS", KDAT_EP_TIMER_KEEPALIVE,
	  offsetof(struct kdat_ep_timers, keepalive_ms) },
};

static uint32_t *kd_ep_timer(struct kdat_ep_timers *t, int i)
{
	return (uint32_t *)((char *)t + kd_ep_timer_attrs[i].off);
}

static DAT_RETURN kd_ep_timers_parse(const DAT_EP_ATTR *attr,
				     struct kdat_ep_timers *t)
{
	const DAT_NAMED_ATTR *na;
	unsigned long long v;
	char *end;
	int i, j;

	if (attr->ep_provider_specific_count < 0 ||
	    (attr->ep_provider_specific_count &&
	     !attr->ep_provider_specific))
		return DAT_INVALID_PARAMETER;
	for (i = 0; i < attr->ep_provider_specific_count; i++) {
		na = &attr->ep_provider_specific[i];
		if (!na->name)
			return DAT_INVALID_PARAMETER;
		for (j = 0; j < KD_EP_SPEC_ATTRS; j++) {
			if (strcmp(na->name, kd_ep_timer_attrs[j].name))
				continue;
			if (!na->value || *na->value < '0' || *na->value > '9')
				return DAT_INVALID_PARAMETER;
			errno = 0;
			v = strtoull(na->value, &end, 10);
			if (errno || *end || v > UINT32_MAX)
				return DAT_INVALID_PARAMETER;
			*kd_ep_timer(t, j) = v;
			t->set |= kd_ep_timer_attrs[j].bit;
		}
	}
	return DAT_SUCCESS;
}

/* What the kernel gave @ep, as dat_ep_query() shows it. */
static void kd_ep_timers_show(struct kd_ep *ep, struct kdat_ep_timers *t)
{
	int i;

	ep->timers = *t;
	if (!t->set)
		return;		/* none: none to show */
	for (i = 0; i < KD_EP_SPEC_ATTRS; i++) {
		snprintf(ep->spec_val[i], sizeof(ep->spec_val[i]), "%u",
			 *kd_ep_timer(t, i));
		ep->spec_attr[i].name = kd_ep_timer_attrs[i].name;
		ep->spec_attr[i].value = ep->spec_val[i];
	}
	ep->attr.ep_provider_specific_count = KD_EP_SPEC_ATTRS;
	ep->attr.ep_provider_specific = ep->spec_attr;
}

/* @h is a live EVD of this process with @flag among its streams. */
static bool kd_evd_of_kind(DAT_EVD_HANDLE h, DAT_EVD_FLAGS flag)
{
	return kd_check(h, DAT_HANDLE_TYPE_EVD) &&
	       (((struct kd_evd *)h)->flags & flag);
}

static DAT_RETURN kd_ep_build(DAT_IA_HANDLE ia_handle,
			      DAT_PZ_HANDLE pz_handle,
			      DAT_EVD_HANDLE recv_evd,
			      DAT_EVD_HANDLE request_evd,
			      DAT_EVD_HANDLE connect_evd,
			      struct kd_srq *srq,
			      const DAT_EP_ATTR *attr,
			      DAT_EP_HANDLE *ep_handle)
{
	struct kdat_ep_create c = { .size = sizeof(c) };
	struct kdat_ia_query q = { .size = sizeof(q) };
	struct kd_ia *ia = ia_handle;
	struct kd_ep *ep;
	DAT_RETURN ret;
	bool ud;

	if (!kd_check(ia, DAT_HANDLE_TYPE_IA))
		return DAT_INVALID_HANDLE;
	if (!kd_check(pz_handle, DAT_HANDLE_TYPE_PZ) ||
	    ((struct kd_obj *)pz_handle)->ia != ia)
		return DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_PZ;
	/*
	 * In OFA's order; an EVD of the wrong kind is a bad handle of its
	 * role too. DAT_HANDLE_NULL for the connection EVD: the consumer
	 * takes no connection events, and the EP never connects
	 * (kd_ep_connect() and kd_cr_accept() refuse it, as OFA's provider
	 * does).
	 */
	if (connect_evd && !kd_evd_of_kind(connect_evd,
					   DAT_EVD_CONNECTION_FLAG))
		return DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EVD_CONN;
	if (!kd_evd_of_kind(recv_evd, DAT_EVD_DTO_FLAG))
		return DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EVD_RECV;
	if (!kd_evd_of_kind(request_evd, DAT_EVD_DTO_FLAG))
		return DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EVD_REQUEST;
	if (!ep_handle)
		return DAT_INVALID_PARAMETER;
	c.pz_handle = ((struct kd_obj *)pz_handle)->kh;
	c.recv_evd_handle = ((struct kd_obj *)recv_evd)->kh;
	c.request_evd_handle = ((struct kd_obj *)request_evd)->kh;
	c.connect_evd_handle = connect_evd ?
			       ((struct kd_obj *)connect_evd)->kh : 0;
	c.srq_handle = srq ? srq->obj.kh : 0;
	ud = attr && attr->service_type ==
		     (DAT_SERVICE_TYPE)DAT_IB_SERVICE_TYPE_UD;
	if (ud) {
		/*
		 * A UD QP: no SRQ (kdat gives it none), no RDMA; datagrams
		 * of at most the port's MTU.
		 */
		if (srq)
			return DAT_MODEL_NOT_SUPPORTED;
		c.flags = KDAT_EP_CREATE_UD;
	}
	/*
	 * The MTU (UD), the segments a work request takes (rings) and an
	 * RDMA read (1 on iWARP).
	 */
	q.ia_handle = ia->obj.kh;
	ret = kd_ioctl(ia, KDAT_IOCTL_IA_QUERY, &q);
	if (ret)
		return ret;
	if (attr) {
		if (attr->service_type != DAT_SERVICE_TYPE_RC && !ud)
			return DAT_MODEL_NOT_SUPPORTED;
		c.attr.max_recv_dtos = attr->max_recv_dtos;
		c.attr.max_request_dtos = attr->max_request_dtos;
		c.attr.max_recv_iov = attr->max_recv_iov;
		/*
		 * DAT 2.0 sizes RDMA IOVs apart from sends; the QP has one
		 * limit for its send queue: the largest. (A send may then
		 * use as many segments as an RDMA; kdat does not refuse it.)
		 */
		c.attr.max_request_iov = attr->max_request_iov;
		if (attr->max_rdma_read_iov > (DAT_COUNT)c.attr.max_request_iov)
			c.attr.max_request_iov = attr->max_rdma_read_iov;
		if (attr->max_rdma_write_iov > (DAT_COUNT)c.attr.max_request_iov)
			c.attr.max_request_iov = attr->max_rdma_write_iov;
		c.attr.max_rdma_read_in = ud ? 0 : attr->max_rdma_read_in;
		c.attr.max_rdma_read_out = ud ? 0 : attr->max_rdma_read_out;
		c.attr.recv_completion_flags = attr->recv_completion_flags;
		c.attr.request_completion_flags =
			attr->request_completion_flags;
		ret = kd_ep_timers_parse(attr, &c.timers);
		if (ret)
			return ret;
	} else {
		ret = kd_ep_default_attr(ia, &c.attr);
		if (ret)
			return ret;
	}
	ret = kd_ioctl(ia, KDAT_IOCTL_EP_CREATE, &c);
	/* A transport without datagrams (iWARP: KDAT_IA_NO_UD). */
	if (ud && ret == DAT_NOT_IMPLEMENTED)
		return DAT_MODEL_NOT_SUPPORTED;
	/* Timers asked of a kernel before them (it knows no such tail). */
	if (ret && errno == E2BIG && c.timers.set)
		return DAT_MODEL_NOT_SUPPORTED;
	if (ret)
		return ret;
	ep = calloc(1, sizeof(*ep));
	if (!ep) {
		kd_destroy_kh(ia, c.out_ep_handle);
		return DAT_INSUFFICIENT_RESOURCES;
	}
	ep->pz = pz_handle;
	ep->recv_evd = recv_evd;
	ep->req_evd = request_evd;
	ep->conn_evd = connect_evd;
	ep->srq = srq;
	ep->attr.service_type = DAT_SERVICE_TYPE_RC;
	ep->attr.max_message_size = 1U << 31;
	ep->attr.max_rdma_size = 1U << 31;
	ep->attr.qos = DAT_QOS_BEST_EFFORT;
	ep->attr.max_recv_dtos = c.attr.max_recv_dtos;
	ep->attr.max_request_dtos = c.attr.max_request_dtos;
	ep->attr.max_recv_iov = c.attr.max_recv_iov;
	ep->attr.max_request_iov = c.attr.max_request_iov;
	ep->attr.max_rdma_read_in = c.attr.max_rdma_read_in;
	ep->attr.max_rdma_read_out = c.attr.max_rdma_read_out;
	/* A kernel before max_read_sge leaves it 0: as a send's. */
	ep->read_sge = q.max_read_sge ? q.max_read_sge : q.max_send_sge;
	ep->attr.max_rdma_read_iov = c.attr.max_request_iov;
	if ((uint32_t)ep->attr.max_rdma_read_iov > ep->read_sge)
		ep->attr.max_rdma_read_iov = ep->read_sge;
	ep->attr.max_rdma_write_iov = c.attr.max_request_iov;
	ep->attr.recv_completion_flags = c.attr.recv_completion_flags;
	ep->attr.request_completion_flags = c.attr.request_completion_flags;
	kd_ep_timers_show(ep, &c.timers);
	if (ud) {
		ep->ud = true;
		ep->ud_mtu = q.active_mtu;
		ep->attr.service_type =
			(DAT_SERVICE_TYPE)DAT_IB_SERVICE_TYPE_UD;
		ep->attr.max_message_size = q.active_mtu;
		ep->attr.max_rdma_size = 0;
		ep->attr.max_rdma_read_iov = 0;
		ep->attr.max_rdma_write_iov = 0;
	}
	if (!kd_obj_init(&ep->obj, ia, DAT_HANDLE_TYPE_EP, c.out_ep_handle))
		return kd_obj_abandon(&ep->obj);
	if (kd_rings_wanted()) {
		ep->sq = kd_ring_map(ia, ep->obj.kh, KDAT_RING_SEND, NULL);
		if (ep->sq && !srq)
			ep->rq = kd_ring_map(ia, ep->obj.kh, KDAT_RING_RECV, NULL);
		if (!ep->sq || (!srq && !ep->rq)) {
			kd_destroy(&ep->obj);
			return DAT_INSUFFICIENT_RESOURCES;
		}
		/* The QP takes as many as the device does, up to 32. */
		kd_ring_limit_iov(ep->sq, q.max_send_sge);
		if (ep->rq)
			kd_ring_limit_iov(ep->rq, q.max_recv_sge);
	}
	*ep_handle = ep;
	return DAT_SUCCESS;
}

DAT_RETURN kd_ep_create(DAT_IA_HANDLE ia_handle,
			DAT_PZ_HANDLE pz_handle,
			DAT_EVD_HANDLE recv_evd,
			DAT_EVD_HANDLE request_evd,
			DAT_EVD_HANDLE connect_evd,
			const DAT_EP_ATTR *attr,
			DAT_EP_HANDLE *ep_handle)
{
	return kd_ep_build(ia_handle, pz_handle, recv_evd, request_evd,
			   connect_evd, NULL, attr, ep_handle);
}

DAT_RETURN kd_ep_create_with_srq(DAT_IA_HANDLE ia_handle,
				 DAT_PZ_HANDLE pz_handle,
				 DAT_EVD_HANDLE recv_evd,
				 DAT_EVD_HANDLE request_evd,
				 DAT_EVD_HANDLE connect_evd,
				 DAT_SRQ_HANDLE srq_handle,
				 const DAT_EP_ATTR *attr,
				 DAT_EP_HANDLE *ep_handle)
{
	if (!kd_check(srq_handle, DAT_HANDLE_TYPE_SRQ))
		return DAT_INVALID_HANDLE;
	return kd_ep_build(ia_handle, pz_handle, recv_evd, request_evd,
			   connect_evd, srq_handle, attr, ep_handle);
}

DAT_RETURN kd_ep_free(DAT_EP_HANDLE ep_handle)
{
	if (!kd_check(ep_handle, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	return kd_destroy(ep_handle);
}

static DAT_EP_STATE kd_ep_state(uint32_t s)
{
	switch (s) {
	case KDAT_EP_STATE_UNCONNECTED:
		return DAT_EP_STATE_UNCONNECTED;
	case KDAT_EP_STATE_RESERVED:
		return DAT_EP_STATE_RESERVED;
	case KDAT_EP_STATE_PASSIVE_CONNECTION_PENDING:
		return DAT_EP_STATE_PASSIVE_CONNECTION_PENDING;
	case KDAT_EP_STATE_ACTIVE_CONNECTION_PENDING:
		return DAT_EP_STATE_ACTIVE_CONNECTION_PENDING;
	case KDAT_EP_STATE_TENTATIVE_CONNECTION_PENDING:
		return DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING;
	case KDAT_EP_STATE_CONNECTED:
		return DAT_EP_STATE_CONNECTED;
	case KDAT_EP_STATE_DISCONNECT_PENDING:
		return DAT_EP_STATE_DISCONNECT_PENDING;
	case KDAT_EP_STATE_COMPLETION_PENDING:
		return DAT_EP_STATE_COMPLETION_PENDING;
	default:
		return DAT_EP_STATE_DISCONNECTED;
	}
}

/* The DAT_INVALID_STATE subtype that names an EP state, as OFA's. */
static DAT_RETURN_SUBTYPE kd_ep_state_subtype(DAT_EP_STATE state)
{
	switch (state) {
	case DAT_EP_STATE_UNCONNECTED:
		return DAT_INVALID_STATE_EP_UNCONNECTED;
	case DAT_EP_STATE_RESERVED:
		return DAT_INVALID_STATE_EP_RESERVED;
	case DAT_EP_STATE_PASSIVE_CONNECTION_PENDING:
		return DAT_INVALID_STATE_EP_PASSCONNPENDING;
	case DAT_EP_STATE_ACTIVE_CONNECTION_PENDING:
		return DAT_INVALID_STATE_EP_ACTCONNPENDING;
	case DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING:
		return DAT_INVALID_STATE_EP_TENTCONNPENDING;
	case DAT_EP_STATE_CONNECTED:
		return DAT_INVALID_STATE_EP_CONNECTED;
	case DAT_EP_STATE_DISCONNECT_PENDING:
		return DAT_INVALID_STATE_EP_DISCPENDING;
	case DAT_EP_STATE_COMPLETION_PENDING:
		return DAT_INVALID_STATE_EP_COMPLPENDING;
	default:
		return DAT_INVALID_STATE_EP_DISCONNECTED;
	}
}

/*
 * Connect, disconnect, reset: the kernel refuses one the EP's state does
 * not allow with EBUSY: DAT_INVALID_STATE, with the subtype of the state
 * the EP is in (as OFA's provider answers; DAT programs print or test it).
 */
static DAT_RETURN kd_ep_ioctl(struct kd_ep *ep, unsigned long cmd, void *arg)
{
	struct kdat_ep_query q;

	if (!ioctl(ep->obj.ia->fd, cmd, arg))
		return DAT_SUCCESS;
	if (errno != EBUSY)
		return kd_from_errno(errno);
	if (kd_ep_fetch(ep, &q) != DAT_SUCCESS)
		return DAT_INVALID_STATE;
	return (DAT_RETURN)DAT_INVALID_STATE |
	       kd_ep_state_subtype(kd_ep_state(q.state));
}

DAT_RETURN kd_ep_get_status(DAT_EP_HANDLE ep_handle,
			    DAT_EP_STATE *state,
			    DAT_BOOLEAN *recv_idle,
			    DAT_BOOLEAN *request_idle)
{
	struct kd_ep *ep = ep_handle;
	uint32_t recv_ring, req_ring;
	struct kdat_ep_query q;
	DAT_RETURN ret;

	if (!kd_check(ep, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	/* The rings first: an entry taken meanwhile counts, not none. */
	recv_ring = ep->rq ? kd_sq_untaken(ep->rq) : 0;
	req_ring = ep->sq ? kd_sq_untaken(ep->sq) : 0;
	ret = kd_ep_fetch(ep, &q);
	if (ret)
		return ret;
	if (state)
		*state = kd_ep_state(q.state);
	if (recv_idle)
		*recv_idle = !q.out_recv_posted && !recv_ring;
	if (request_idle)
		*request_idle = !q.out_request_posted && !req_ring;
	return DAT_SUCCESS;
}

DAT_RETURN kd_ep_query(DAT_EP_HANDLE ep_handle,
		       DAT_EP_PARAM_MASK mask,
		       DAT_EP_PARAM *param)
{
	struct kd_ep *ep = ep_handle;
	struct kdat_ep_query q;
	DAT_RETURN ret;

	(void)mask;
	if (!kd_check(ep, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	if (!param)
		return DAT_INVALID_PARAMETER;
	ret = kd_ep_fetch(ep, &q);
	if (ret)
		return ret;
	memset(param, 0, sizeof(*param));
	param->ia_handle = ep->obj.ia;
	param->ep_state = kd_ep_state(q.state);
	kd_sockaddr_from_kdat(&q.remote, &ep->remote);
	kd_sockaddr_from_kdat(&q.local, &ep->local);
	if (!ep->local.ss_family)
		ep->local = ep->obj.ia->addr;
	param->local_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ep->local;
	param->local_port_qual = ntohs(q.local.port);
	param->remote_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ep->remote;
	param->remote_port_qual = ntohs(q.remote.port);
	param->pz_handle = ep->pz;
	param->recv_evd_handle = ep->recv_evd;
	param->request_evd_handle = ep->req_evd;
	param->connect_evd_handle = ep->conn_evd;
	param->srq_handle = ep->srq;
	param->ep_attr = ep->attr;
	return DAT_SUCCESS;
}

DAT_RETURN kd_ep_connect(DAT_EP_HANDLE ep_handle,
			 DAT_IA_ADDRESS_PTR remote,
			 DAT_CONN_QUAL conn_qual,
			 DAT_TIMEOUT timeout,
			 DAT_COUNT pdata_size,
			 const DAT_PVOID pdata, DAT_QOS qos,
			 DAT_CONNECT_FLAGS flags)
{
	struct kdat_ep_connect c = { .size = sizeof(c) };
	struct kd_ep *ep = ep_handle;
	DAT_RETURN ret;

	(void)qos;
	(void)flags;
	if (!kd_check(ep, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	if (!ep->conn_evd)
		return DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EVD_CONN;
	kd_count(&ep->cntrs[DCNT_EP_CONNECT], 1);	/* asked, as OFA counts */
	if (!remote || pdata_size < 0 || (pdata_size && !pdata))
		return DAT_INVALID_PARAMETER;
	if (pdata_size > KDAT_MAX_PRIVATE_DATA)
		return DAT_INVALID_PARAMETER;
	if (remote->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)remote;

		c.remote.family = AF_INET;
		memcpy(c.remote.addr, &sin->sin_addr, 4);
	} else if (remote->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)remote;

		c.remote.family = AF_INET6;
		c.remote.scope_id = sin6->sin6_scope_id;
		memcpy(c.remote.addr, &sin6->sin6_addr, 16);
	} else {
		return DAT_INVALID_ADDRESS;
	}
	c.ep_handle = ep->obj.kh;
	if (!conn_qual)
		return DAT_INVALID_PARAMETER;
	c.conn_qual = conn_qual;
	c.timeout_us = timeout == DAT_TIMEOUT_INFINITE ? KDAT_WAIT_FOREVER :
							 timeout;
	c.private_data = (uintptr_t)pdata;
	c.private_data_len = pdata_size;
	ret = kd_ep_ioctl(ep, KDAT_IOCTL_EP_CONNECT, &c);
	if (ret == DAT_SUCCESS)
		__atomic_store_n(&ep->active_qual, conn_qual,
				 __ATOMIC_RELAXED);
	return ret;
}

DAT_RETURN kd_ep_disconnect(DAT_EP_HANDLE ep_handle,
			    DAT_CLOSE_FLAGS flags)
{
	struct kdat_ep_handle_cmd c = { .size = sizeof(c) };
	struct kd_ep *ep = ep_handle;

	if (!kd_check(ep, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	kd_count(&ep->cntrs[DCNT_EP_DISCONNECT], 1);
	if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
		return DAT_INVALID_PARAMETER;
	c.ep_handle = ep->obj.kh;
	c.flags = flags;
	return kd_ep_ioctl(ep, KDAT_IOCTL_EP_DISCONNECT, &c);
}

DAT_RETURN kd_ep_reset(DAT_EP_HANDLE ep_handle)
{
	struct kdat_ep_handle_cmd c = { .size = sizeof(c) };
	struct kd_ep *ep = ep_handle;

	if (!kd_check(ep, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	c.ep_handle = ep->obj.kh;
	return kd_ep_ioctl(ep, KDAT_IOCTL_EP_RESET, &c);
}

/*
 * dat_ep_modify changes what a QP built at create can take: completion
 * flags (not SOLICITED_WAIT on receives, which picks the receive CQ), RDMA
 * read depths, and DTO counts up to those the EP was created with. Any
 * other field may be named only with its current value; another value is
 * DAT_MODEL_NOT_SUPPORTED (the QP would have to be rebuilt), as is a DTO
 * count above the created one.
 */
#define KD_EP_MODIFIABLE (DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS | \
			  DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS | \
			  DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN | \
			  DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT | \
			  DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS | \
			  DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS)

static bool kd_ep_param_same(const struct kd_ep *ep, DAT_EP_PARAM_MASK mask,
			     const DAT_EP_PARAM *p)
{
	const DAT_EP_ATTR *a = &p->ep_attr, *cur = &ep->attr;

#define KD_SAME(bit, cond) (!(mask & (bit)) || (cond))
	return KD_SAME(DAT_EP_FIELD_PZ_HANDLE, p->pz_handle == ep->pz) &&
	       KD_SAME(DAT_EP_FIELD_RECV_EVD_HANDLE,
		       p->recv_evd_handle == ep->recv_evd) &&
	       KD_SAME(DAT_EP_FIELD_REQUEST_EVD_HANDLE,
		       p->request_evd_handle == ep->req_evd) &&
	       KD_SAME(DAT_EP_FIELD_CONNECT_EVD_HANDLE,
		       p->connect_evd_handle == ep->conn_evd) &&
	       KD_SAME(DAT_EP_FIELD_SRQ_HANDLE,
		       p->srq_handle == (DAT_SRQ_HANDLE)ep->srq) &&
	       KD_SAME(DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE,
		       a->service_type == cur->service_type) &&
	       KD_SAME(DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE,
		       a->max_message_size == cur->max_message_size) &&
	       KD_SAME(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE,
		       a->max_rdma_size == cur->max_rdma_size) &&
	       KD_SAME(DAT_EP_FIELD_EP_ATTR_QOS, a->qos == cur->qos) &&
	       KD_SAME(DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV,
		       a->max_recv_iov == cur->max_recv_iov) &&
	       KD_SAME(DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV,
		       a->max_request_iov == cur->max_request_iov) &&
	       KD_SAME(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV,
		       a->max_rdma_read_iov == cur->max_rdma_read_iov) &&
	       KD_SAME(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV,
		       a->max_rdma_write_iov == cur->max_rdma_write_iov);
#undef KD_SAME
}

DAT_RETURN kd_ep_modify(DAT_EP_HANDLE ep_handle,
			DAT_EP_PARAM_MASK mask,
			const DAT_EP_PARAM *param)
{
	struct kdat_ep_modify c = { .size = sizeof(c) };
	const DAT_EP_ATTR *a;
	struct kd_ep *ep = ep_handle;

	if (!kd_check(ep, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	if (!param || (mask & ~DAT_EP_FIELD_ALL))
		return DAT_INVALID_PARAMETER;
	/* Read-only fields. */
	if (mask & (DAT_EP_FIELD_IA_HANDLE | DAT_EP_FIELD_EP_STATE |
		    DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR |
		    DAT_EP_FIELD_LOCAL_PORT_QUAL |
		    DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR |
		    DAT_EP_FIELD_REMOTE_PORT_QUAL))
		return DAT_INVALID_PARAMETER;
	if (!kd_ep_param_same(ep, mask & ~KD_EP_MODIFIABLE, param))
		return DAT_MODEL_NOT_SUPPORTED;
	/* The transport timers are fixed at create: the same, or refused. */
	if (mask & (DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR |
		    DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR)) {
		struct kdat_ep_timers want = { 0 };
		DAT_RETURN ret = kd_ep_timers_parse(&param->ep_attr, &want);
		int i;

		if (ret)
			return ret;
		for (i = 0; i < KD_EP_SPEC_ATTRS; i++)
			if ((want.set & kd_ep_timer_attrs[i].bit) &&
			    (!(ep->timers.set & kd_ep_timer_attrs[i].bit) ||
			     *kd_ep_timer(&want, i) !=
			     *kd_ep_timer(&ep->timers, i)))
				return DAT_MODEL_NOT_SUPPORTED;
	}
	a = &param->ep_attr;
	if (a->max_recv_dtos < 0 || a->max_request_dtos < 0 ||
	    a->max_rdma_read_in < 0 || a->max_rdma_read_out < 0)
		return DAT_INVALID_PARAMETER;
	c.ep_handle = ep->obj.kh;
	c.attr.recv_completion_flags = ep->attr.recv_completion_flags;
	c.attr.request_completion_flags = ep->attr.request_completion_flags;
	c.attr.max_rdma_read_in = ep->attr.max_rdma_read_in;
	c.attr.max_rdma_read_out = ep->attr.max_rdma_read_out;
	c.attr.max_recv_dtos = ep->attr.max_recv_dtos;
	c.attr.max_request_dtos = ep->attr.max_request_dtos;
	if (mask & DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS)
		c.attr.recv_completion_flags = a->recv_completion_flags;
	if (mask & DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS)
		c.attr.request_completion_flags = a->request_completion_flags;
	if (mask & (DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS |
		    DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS))
		c.mask |= KDAT_EP_MODIFY_COMPLETION_FLAGS;
	if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN)
		c.attr.max_rdma_read_in = a->max_rdma_read_in;
	if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT)
		c.attr.max_rdma_read_out = a->max_rdma_read_out;
	if (mask & (DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN |
		    DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT))
		c.mask |= KDAT_EP_MODIFY_RDMA_READ;
	if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS)
		c.attr.max_recv_dtos = a->max_recv_dtos;
	if (mask & DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS)
		c.attr.max_request_dtos = a->max_request_dtos;
	if (mask & (DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS |
		    DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS))
		c.mask |= KDAT_EP_MODIFY_DTOS;
	if (!c.mask)
		return DAT_SUCCESS;	/* only current values named */
	if (ioctl(ep->obj.ia->fd, KDAT_IOCTL_EP_MODIFY, &c))
		return errno == EOPNOTSUPP ? DAT_MODEL_NOT_SUPPORTED :
					     kd_from_errno(errno);
	ep->attr.recv_completion_flags = c.attr.recv_completion_flags;
	ep->attr.request_completion_flags = c.attr.request_completion_flags;
	ep->attr.max_rdma_read_in = c.attr.max_rdma_read_in;
	ep->attr.max_rdma_read_out = c.attr.max_rdma_read_out;
	ep->attr.max_recv_dtos = c.attr.max_recv_dtos;
	ep->attr.max_request_dtos = c.attr.max_request_dtos;
	return DAT_SUCCESS;
}

/*
 * EP watermarks: an RC QP gives no event at a send-queue depth, so kdat
 * has none to offer (the IA reports max_ep_... as 0 watermarks).
 */
DAT_RETURN kd_ep_set_watermark(DAT_EP_HANDLE ep_handle,
			       DAT_COUNT soft_high_watermark,
			       DAT_COUNT hard_high_watermark)
{
	(void)soft_high_watermark;
	(void)hard_high_watermark;
	if (!kd_check(ep_handle, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	return DAT_MODEL_NOT_SUPPORTED;
}

DAT_RETURN kd_ep_recv_query(DAT_EP_HANDLE ep_handle,
			    DAT_COUNT *nbufs, DAT_COUNT *span)
{
	struct kd_ep *ep = ep_handle;
	struct kdat_ep_query q;
	uint32_t ring;
	DAT_RETURN ret;

	if (!kd_check(ep, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	ring = ep->rq ? kd_sq_untaken(ep->rq) : 0;
	ret = kd_ep_fetch(ep, &q);
	if (ret)
		return ret;
	/*
	 * On an SRQ the device takes a buffer for a message as it arrives
	 * and says nothing until it completes: nobody can tell how many the
	 * EP holds.
	 */
	if (nbufs)
		*nbufs = ep->srq ? DAT_VALUE_UNKNOWN : q.out_recv_posted + ring;
	if (span)
		*span = DAT_VALUE_UNKNOWN;
	return DAT_SUCCESS;
}

/* Connect @ep where @dup is connected (its peer's address and qualifier). */
DAT_RETURN kd_ep_dup_connect(DAT_EP_HANDLE ep_handle,
			     DAT_EP_HANDLE dup_handle,
			     DAT_TIMEOUT timeout, DAT_COUNT pdata_size,
			     const DAT_PVOID pdata, DAT_QOS qos)
{
	struct kd_ep *dup = dup_handle;
	struct sockaddr_storage remote;
	struct kdat_ep_query q;
	DAT_CONN_QUAL qual;
	DAT_RETURN ret;

	if (!kd_check(ep_handle, DAT_HANDLE_TYPE_EP) ||
	    !kd_check(dup, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	ret = kd_ep_fetch(dup, &q);
	if (ret)
		return ret;
	if (q.state != KDAT_EP_STATE_CONNECTED)
		return DAT_INVALID_STATE;
	/*
	 * Connected by an accept, it has no remote Service Point: its peer
	 * connected from a port that nothing listens on.
	 */
	qual = __atomic_load_n(&dup->active_qual, __ATOMIC_RELAXED);
	if (!qual)
		return DAT_INVALID_PARAMETER;
	kd_sockaddr_from_kdat(&q.remote, &remote);
	return kd_ep_connect(ep_handle, (DAT_IA_ADDRESS_PTR)&remote, qual,
			     timeout, pdata_size, pdata, qos,
			     DAT_CONNECT_DEFAULT_FLAG);
}
