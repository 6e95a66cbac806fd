// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libdat's UD Endpoints (DAT_IB_SERVICE_TYPE_UD of dat_ib_extensions.h):
 * the extension operations DAT_IB_UD_SEND_OP, DAT_IB_UD_CM_FREE_OP and
 * DAT_IB_UD_AH_FREE_OP (reached through kd_extension_op()), and the UD
 * events of the connection and CR EVDs. Creating a UD EP is dat_ep.c's
 * (dat_ep_create with ep_attr->service_type DAT_IB_SERVICE_TYPE_UD),
 * receiving on one dat_ep_post_recv as for any EP.
 *
 * How kdat does UD is in the uapi header ("UD Endpoints"). What a
 * consumer sees, as OFA's UD providers show it:
 *   - dat_ep_connect on a UD EP asks the peer for an address handle; it
 *     may be called again at once, for other peers or the same. A UD
 *     request arrives as DAT_IB_UD_CONNECTION_REQUEST_EVENT (type
 *     DAT_IB_UD_CONNECT_REQUEST) and dat_cr_accept answers it with a UD
 *     EP; one EP may accept any number.
 *   - Each AH made comes as DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED on the
 *     EP's connection EVD, its DAT_IB_EXTENSION_EVENT_DATA of type
 *     DAT_IB_UD_REMOTE_AH (a connect's: private data the accepter's) or
 *     DAT_IB_UD_PASSIVE_REMOTE_AH (an accept's: the requester's), with
 *     remote_ah { ah, qpn, ia_addr } and context; a connect that made
 *     none, as DAT_IB_UD_CONNECTION_REJECT_EVENT (the peer's reject data)
 *     or DAT_IB_UD_CONNECTION_ERROR_EVENT.
 *   - remote_ah.ah is libdat's AH object (a struct kd_ah, which names the
 *     kernel's), good for datagrams of that EP alone, with that qpn; it
 *     holds the event's private data until DAT_IB_UD_AH_FREE_OP frees it.
 *     kdat keeps no CM object past the event: DAT_IB_UD_CM_FREE_OP frees
 *     nothing and succeeds on any UD EP, whatever the context it is given.
 *   - a datagram's completion is a DAT_IB_DTO_EVENT of type DAT_IB_UD_SEND
 *     (operation DAT_IB_DTO_SEND_UD), a receive's of type DAT_IB_UD_RECV
 *     (DAT_IB_DTO_RECV_UD, DAT_IB_DTO_RECV_UD_IMMED with immediate data),
 *     whose length counts the 40-byte Global Route Header the data
 *     follows in the buffer.
 *   - RC DTOs on a UD EP, and datagrams on an RC one, answer
 *     DAT_INVALID_HANDLE with DAT_INVALID_HANDLE_EP, as OFA's.
 *   - dat_ep_free of a UD EP with AHs answers DAT_INVALID_STATE: free
 *     them first, as the header says.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dat_internal.h"

_Static_assert((int)KDAT_DTO_SEND_UD == (int)DAT_IB_DTO_SEND_UD, "");
_Static_assert((int)KDAT_DTO_RECV_UD == (int)DAT_IB_DTO_RECV_UD, "");
_Static_assert((int)KDAT_DTO_RECV_UD_IMM == (int)DAT_IB_DTO_RECV_UD_IMMED, "");
_Static_assert((int)KDAT_EVENT_UD_CONNECTION_REQUEST ==
	       (int)DAT_IB_UD_CONNECTION_REQUEST_EVENT, "");
_Static_assert((int)KDAT_EVENT_UD_ESTABLISHED ==
	       (int)DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED, "");
_Static_assert((int)KDAT_EVENT_UD_REJECTED ==
	       (int)DAT_IB_UD_CONNECTION_REJECT_EVENT, "");
_Static_assert((int)KDAT_EVENT_UD_ERROR ==
	       (int)DAT_IB_UD_CONNECTION_ERROR_EVENT, "");

/*
 * The AH a DAT_IB_ADDR_HANDLE names, if it is one of @ep's and names the
 * QP the AH was made for; NULL otherwise (found in the handle table, so a
 * stale or foreign pointer is never read).
 */
static struct kd_ah *kd_ah_of(struct kd_ep *ep, const DAT_IB_ADDR_HANDLE *ah)
{
	struct kd_ah *a;

	if (!ah || !kd_check(ah->ah, KD_HANDLE_TYPE_AH))
		return NULL;
	a = (struct kd_ah *)ah->ah;
	if (a->ep != ep || ah->qpn != a->qpn)
		return NULL;
	return a;
}

/* dat_ib_post_send_ud(ep, segments, lbuf, ah_ptr, cookie, flags) */
DAT_RETURN kd_ud_send(DAT_HANDLE ep_handle, va_list args)
{
	DAT_COUNT num = va_arg(args, DAT_COUNT);
	DAT_LMR_TRIPLET *iov = va_arg(args, DAT_LMR_TRIPLET *);
	DAT_IB_ADDR_HANDLE *ah = va_arg(args, DAT_IB_ADDR_HANDLE *);
	DAT_DTO_COOKIE cookie = va_arg(args, DAT_DTO_COOKIE);
	DAT_COMPLETION_FLAGS flags = va_arg(args, DAT_COMPLETION_FLAGS);
	struct kdat_dto_ext ext = { 0 };
	struct kd_ep *ep = ep_handle;
	struct kd_ah *a;

	if (!kd_check(ep, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	if (!ep->ud)
		return DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EP;
	a = kd_ah_of(ep, ah);
	if (!a)
		return DAT_INVALID_PARAMETER;
	ext.ah_handle = a->obj.kh;
	return kd_post(ep, KDAT_DTO_SEND_UD, num, iov, cookie, NULL, flags,
		       &ext);
}

/* dat_ib_ud_cm_free(ep, cm): nothing of a CM is kept past its event. */
DAT_RETURN kd_ud_cm_free(DAT_HANDLE ep_handle, va_list args)
{
	struct kd_ep *ep = ep_handle;

	(void)va_arg(args, DAT_CONTEXT);
	if (!kd_check(ep, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	if (!ep->ud)
		return DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EP;
	return DAT_SUCCESS;
}

/*
 * dat_ib_ud_ah_free(ep, ah). The kernel keeps an AH while datagrams use
 * it (DAT_INVALID_STATE); the header asks the consumer to free it once
 * its sends are complete, which a consumer that suppressed their
 * completions cannot see: a datagram completes within microseconds (UD
 * has no retries), so a refusal is tried again for a second.
 */
DAT_RETURN kd_ud_ah_free(DAT_HANDLE ep_handle, va_list args)
{
	DAT_IB_ADDR_HANDLE *ah = va_arg(args, DAT_IB_ADDR_HANDLE *);
	struct kd_ep *ep = ep_handle;
	DAT_RETURN ret;
	struct kd_ah *a;
	int i;

	if (!kd_check(ep, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	if (!ep->ud)
		return DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EP;
	a = kd_ah_of(ep, ah);
	if (!a)
		return DAT_INVALID_PARAMETER;
	for (i = 0; i < 1000; i++) {
		ret = kd_destroy(&a->obj);
		if (DAT_GET_TYPE(ret) != DAT_INVALID_STATE)
			break;
		usleep(1000);
	}
	return ret;
}

/*
 * A UD event of @ia's file as a DAT event (@ev: event_number and
 * evd_handle set, the rest 0): an AH made (its libdat object made here),
 * a connect rejected or failed. The CR of a UD request is dat_evd.c's,
 * as any CR's; this adds its extension data.
 */
DAT_RETURN kd_ud_event(struct kd_ia *ia, const struct kdat_event *k,
		       DAT_EVENT *ev)
{
	DAT_IB_EXTENSION_EVENT_DATA *x =
		(DAT_IB_EXTENSION_EVENT_DATA *)ev->event_extension_data;
	DAT_CONNECTION_EVENT_DATA *d = &ev->event_data.connect_event_data;
	struct kdat_ah_query q = {
		.size = sizeof(q), .ah_handle = k->ah_handle,
	};
	struct kdat_ep_query eq;
	struct kd_ep *ep;
	struct kd_ah *a;
	DAT_RETURN ret;

	if (k->event_number == KDAT_EVENT_UD_CONNECTION_REQUEST) {
		x->type = DAT_IB_UD_CONNECT_REQUEST;
		x->status = DAT_OP_SUCCESS;
		return DAT_SUCCESS;
	}
	ep = (struct kd_ep *)kd_table_find(k->handle);
	d->ep_handle = ep;
	if (ep)
		ia = ep->obj.ia;
	switch (k->event_number) {
	case KDAT_EVENT_UD_ESTABLISHED:
		ret = kd_ioctl(ia, KDAT_IOCTL_AH_QUERY, &q);
		if (ret) {
			kd_destroy_kh(ia, k->ah_handle);
			return ret;
		}
		a = calloc(1, sizeof(*a));
		if (!a) {
			kd_destroy_kh(ia, k->ah_handle);
			return DAT_INSUFFICIENT_RESOURCES;
		}
		a->ep = ep;
		a->qpn = q.remote_qpn;
		memcpy(a->pdata, q.private_data, sizeof(a->pdata));
		kd_sockaddr_from_kdat(&q.remote, &a->remote);
		if (!kd_obj_init(&a->obj, ia, KD_HANDLE_TYPE_AH,
				 k->ah_handle)) {
			free(a);
			kd_destroy_kh(ia, k->ah_handle);
			return DAT_INSUFFICIENT_RESOURCES;
		}
		d->private_data = a->pdata;
		d->private_data_size = q.private_data_len;
		x->type = q.flags & KDAT_AH_PASSIVE ?
			  DAT_IB_UD_PASSIVE_REMOTE_AH : DAT_IB_UD_REMOTE_AH;
		x->status = DAT_OP_SUCCESS;
		x->remote_ah.ah = (struct ibv_ah *)a;
		x->remote_ah.qpn = q.remote_qpn;
		memcpy(&x->remote_ah.ia_addr, &a->remote,
		       sizeof(x->remote_ah.ia_addr));
		x->context.as_ptr = a;
		break;
	case KDAT_EVENT_UD_REJECTED:
		x->type = DAT_IB_UD_CONNECT_REJECT;
		x->status = DAT_IB_OP_ERR;
		if (ep && k->private_data_len &&
		    kd_ep_fetch(ep, &eq) == DAT_SUCCESS) {
			memcpy(ep->pdata, eq.private_data, sizeof(ep->pdata));
			d->private_data = ep->pdata;
			d->private_data_size = eq.private_data_len;
		}
		break;
	default:	/* KDAT_EVENT_UD_ERROR */
		x->type = DAT_IB_UD_CONNECT_ERROR;
		x->status = DAT_IB_OP_ERR;
		break;
	}
	return DAT_SUCCESS;
}
