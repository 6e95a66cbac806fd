// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libdat's DAT IB extensions, as Debian's dat_ib_extensions.h (version
 * 2.0.9) defines them, on kdat's handles.
 *
 * kd_extension_op() is the one entry: dat_extension_op() of a program
 * linked with libdat calls it, and so does a registry for kdat's handles
 * (our DAT_PROVIDER's handle_extendedop_func). Implemented:
 *   - RDMA write with immediate data, compare-and-swap, fetch-and-add:
 *     DTOs of the kernel (kd_post(), which checks them as any DTO);
 *     their completions, and those of receives that took immediate data,
 *     are DAT_IB_DTO_EVENTs with DAT_IB_EXTENSION_EVENT_DATA
 *     (kd_ext_dto_event()); operation is the DAT_IB_DTOS value
 *   - the counters of IAs, EPs and EVDs libdat keeps: query, print
 *   - open/close query (dtestx -q): an IA opened for its attributes
 *   - the attributes that announce them (kd_ext_attrs())
 *   - UD Endpoints: datagrams, freeing AHs and CMs (dat_ud.c)
 * Not implemented (DAT_NOT_IMPLEMENTED): collectives, the sampling of
 * link and diagnostic counters.
 *
 * Counters (DAT_IB_QUERY_COUNTERS_OP, _PRINT_): what libdat sees, counted
 * once each, with no system call:
 *   IA   creates and frees of PZs, LMRs, RMRs, PSPs (and PSP_CREATE_ANY),
 *        RSPs, EVDs (the async EVD of the open too), EPs and SRQs;
 *        connection requests delivered (SP_CR), accepted, rejected
 *   EP   connects and disconnects asked; every DTO posted, by kind, with
 *        its bytes (the local IOV's length; atomics: count only);
 *        receives completed with success, by kind, with their bytes, as
 *        the consumer reaps them (a UD EP's: DCNT_EP_RECV_UD, with the
 *        40 bytes of their Global Route Header)
 *   EVD  waits, dequeues, and dequeues that found an event or none
 * The others (the CM's wire counters, link and diagnostic counters,
 * blocked waits, callbacks) stay 0: kdat's CM and completions run in the
 * kernel. As OFA's provider does, a query of one counter writes
 * out[counter]; of the _ALL_COUNTERS value, every one.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dat_internal.h"

/* The uapi's extension values are DAT's; libdat passes them through. */
_Static_assert((int)KDAT_DTO_RDMA_WRITE_IMM == (int)DAT_IB_DTO_RDMA_WRITE_IMMED, "");
_Static_assert((int)KDAT_DTO_RECV_RDMA_IMM == (int)DAT_IB_DTO_RECV_IMMED, "");
_Static_assert((int)KDAT_DTO_FETCH_ADD == (int)DAT_IB_DTO_FETCH_ADD, "");
_Static_assert((int)KDAT_DTO_CMP_SWAP == (int)DAT_IB_DTO_CMP_SWAP, "");
_Static_assert((int)KDAT_DTO_RECV_MSG_IMM == (int)DAT_IB_DTO_RECV_MSG_IMMED, "");
_Static_assert((int)KDAT_MEM_PRIV_REMOTE_ATOMIC ==
	       (int)DAT_IB_MEM_PRIV_REMOTE_ATOMIC, "");
_Static_assert(sizeof(DAT_IB_EXTENSION_EVENT_DATA) <=
	       sizeof(((DAT_EVENT *)0)->event_extension_data), "");

/*
 * What the IA's transport cannot do (KDAT_IA_*), asked once. Until the
 * kernel answers, everything is assumed missing (and asked again).
 */
uint32_t kd_ia_limits(struct kd_ia *ia)
{
	uint32_t l = __atomic_load_n(&ia->limits, __ATOMIC_RELAXED);

	if (!(l & KD_IA_LIMITS_KNOWN)) {
		struct kdat_ia_query q = {
			.size = sizeof(q), .ia_handle = ia->obj.kh,
		};

		if (kd_ioctl(ia, KDAT_IOCTL_IA_QUERY, &q))
			return ~KD_IA_LIMITS_KNOWN;	/* asked again next time */
		/* A kernel before atomic_cap leaves it 0: none. */
		l = q.limits | KD_IA_LIMITS_KNOWN;
		if (q.atomic_cap == KDAT_ATOMIC_NONE)
			l |= KDAT_IA_NO_ATOMICS;
		__atomic_store_n(&ia->limits, l, __ATOMIC_RELAXED);
	}
	return l;
}

/* ---- the DTOs ------------------------------------------------------- */

static DAT_RETURN kd_write_immed(DAT_HANDLE ep, va_list args)
{
	DAT_COUNT num = va_arg(args, DAT_COUNT);
	DAT_LMR_TRIPLET *iov = va_arg(args, DAT_LMR_TRIPLET *);
	DAT_DTO_COOKIE cookie = va_arg(args, DAT_DTO_COOKIE);
	const DAT_RMR_TRIPLET *remote = va_arg(args, const DAT_RMR_TRIPLET *);
	struct kdat_dto_ext ext = { .imm_data = va_arg(args, DAT_UINT32) };
	DAT_COMPLETION_FLAGS flags = va_arg(args, DAT_COMPLETION_FLAGS);
	DAT_RMR_TRIPLET none = { 0 };

	/* Immediate data alone needs no remote buffer (as with OFA's). */
	if (!remote && num)
		return DAT_INVALID_PARAMETER;
	return kd_post(ep, KDAT_DTO_RDMA_WRITE_IMM, num, iov, cookie,
		       remote ? remote : &none, flags, &ext);
}

static DAT_RETURN kd_atomic(DAT_HANDLE ep, uint32_t op, va_list args)
{
	struct kdat_dto_ext ext = { .compare_add = va_arg(args, DAT_UINT64) };
	DAT_LMR_TRIPLET *iov;
	const DAT_RMR_TRIPLET *remote;
	DAT_DTO_COOKIE cookie;
	DAT_COMPLETION_FLAGS flags;

	if (op == KDAT_DTO_CMP_SWAP)
		ext.swap = va_arg(args, DAT_UINT64);
	iov = va_arg(args, DAT_LMR_TRIPLET *);
	cookie = va_arg(args, DAT_DTO_COOKIE);
	remote = va_arg(args, const DAT_RMR_TRIPLET *);
	flags = va_arg(args, DAT_COMPLETION_FLAGS);
	if (!iov || !remote)
		return DAT_INVALID_PARAMETER;
	return kd_post(ep, op, 1, iov, cookie, remote, flags, &ext);
}

/* A completion of an extended DTO as DAT_IB_DTO_EVENT; receives counted. */
void kd_ext_dto_event(const struct kdat_event *k, DAT_EVENT *ev)
{
	DAT_DTO_COMPLETION_EVENT_DATA *d =
		&ev->event_data.dto_completion_event_data;
	DAT_IB_EXTENSION_EVENT_DATA *x =
		(DAT_IB_EXTENSION_EVENT_DATA *)ev->event_extension_data;
	struct kd_ep *ep = (struct kd_ep *)d->ep_handle;

	if (ep && ep->obj.type == DAT_HANDLE_TYPE_EP &&
	    k->status == KDAT_DTO_SUCCESS) {
		int n = k->operation == KDAT_DTO_RECEIVE ? DCNT_EP_RECV :
			k->operation == KDAT_DTO_RECV_MSG_IMM ?
			DCNT_EP_RECV_IMM :
			k->operation == KDAT_DTO_RECV_RDMA_IMM ?
			DCNT_EP_RECV_RDMA_IMM :
			k->operation == KDAT_DTO_RECV_UD ||
			k->operation == KDAT_DTO_RECV_UD_IMM ?
			DCNT_EP_RECV_UD : -1;

		if (n >= 0) {
			/* Each count is followed by its _DATA. */
			kd_count(&ep->cntrs[n], 1);
			kd_count(&ep->cntrs[n + 1], k->transferred_length);
		}
	}
	switch (k->operation) {
	case KDAT_DTO_RDMA_WRITE_IMM:
		x->type = DAT_IB_RDMA_WRITE_IMMED;
		break;
	case KDAT_DTO_RECV_RDMA_IMM:
		x->type = DAT_IB_RDMA_WRITE_IMMED_DATA;
		x->val.immed.data = k->imm_data;
		break;
	case KDAT_DTO_RECV_MSG_IMM:
		x->type = DAT_IB_RECV_IMMED_DATA;
		x->val.immed.data = k->imm_data;
		break;
	case KDAT_DTO_FETCH_ADD:
		x->type = DAT_IB_FETCH_AND_ADD;
		break;
	case KDAT_DTO_CMP_SWAP:
		x->type = DAT_IB_CMP_AND_SWAP;
		break;
	case KDAT_DTO_SEND_UD:
		x->type = DAT_IB_UD_SEND;
		break;
	case KDAT_DTO_RECV_UD:
	case KDAT_DTO_RECV_UD_IMM:
		x->type = DAT_IB_UD_RECV;
		x->val.immed.data = k->imm_data;	/* 0 without */
		break;
	default:
		return;		/* a plain DTO */
	}
	ev->event_number = (DAT_EVENT_NUMBER)DAT_IB_DTO_EVENT;
	x->status = k->status == KDAT_DTO_SUCCESS ? DAT_OP_SUCCESS :
						    DAT_IB_OP_ERR;
}

/* ---- attributes ----------------------------------------------------- */

/*
 * The provider-specific attributes that announce the extensions, as OFA's
 * provider names them, after @attrs' first entries: how many were added
 * (at most @max).
 */
int kd_ext_attrs(struct kd_ia *ia, DAT_NAMED_ATTR *attrs, int max)
{
	uint32_t limits = kd_ia_limits(ia);
	const char *atomics = limits & KDAT_IA_NO_ATOMICS ? "FALSE" : "TRUE";
	const DAT_NAMED_ATTR ext[] = {
		{ "DAT_EXTENSION_INTERFACE", "TRUE" },
		{ DAT_IB_ATTR_FETCH_AND_ADD, atomics },
		{ DAT_IB_ATTR_CMP_AND_SWAP, atomics },
		{ DAT_IB_ATTR_IMMED_DATA,
		  limits & KDAT_IA_NO_IMM_DATA ? "FALSE" : "TRUE" },
		{ DAT_IB_ATTR_UD, limits & KDAT_IA_NO_UD ? "FALSE" : "TRUE" },
		{ DAT_IB_ATTR_COUNTERS, "TRUE" },
	};
	int i, n = sizeof(ext) / sizeof(ext[0]);

	if (n > max)
		n = max;
	for (i = 0; i < n; i++)
		attrs[i] = ext[i];
	return n;
}

/* ---- counters ------------------------------------------------------- */

/* An object's create (@created) or free, in its IA's counters. */
void kd_count_obj(struct kd_obj *o, bool created)
{
	static const struct {
		DAT_HANDLE_TYPE type;
		int create, destroy;
	} map[] = {
		{ DAT_HANDLE_TYPE_PZ, DCNT_IA_PZ_CREATE, DCNT_IA_PZ_FREE },
		{ DAT_HANDLE_TYPE_LMR, DCNT_IA_LMR_CREATE, DCNT_IA_LMR_FREE },
		{ DAT_HANDLE_TYPE_RMR, DCNT_IA_RMR_CREATE, DCNT_IA_RMR_FREE },
		{ DAT_HANDLE_TYPE_PSP, DCNT_IA_PSP_CREATE, DCNT_IA_PSP_FREE },
		{ DAT_HANDLE_TYPE_RSP, DCNT_IA_RSP_CREATE, DCNT_IA_RSP_FREE },
		{ DAT_HANDLE_TYPE_EVD, DCNT_IA_EVD_CREATE, DCNT_IA_EVD_FREE },
		{ DAT_HANDLE_TYPE_EP, DCNT_IA_EP_CREATE, DCNT_IA_EP_FREE },
		{ DAT_HANDLE_TYPE_SRQ, DCNT_IA_SRQ_CREATE, DCNT_IA_SRQ_FREE },
		{ DAT_HANDLE_TYPE_CR, DCNT_IA_SP_CR, -1 },
	};
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		int n = created ? map[i].create : map[i].destroy;

		if (map[i].type == o->type && n >= 0)
			kd_count(&o->ia->cntrs[n], 1);
	}
}

/* A DTO posted on @ep, with its @num segments at @iov. */
void kd_count_post(struct kd_ep *ep, uint32_t op, DAT_COUNT num,
		   const DAT_LMR_TRIPLET *iov)
{
	uint64_t bytes = 0;
	DAT_COUNT i;
	int n;

	switch (op) {
	case KDAT_DTO_SEND:
		n = DCNT_EP_POST_SEND;
		break;
	case KDAT_DTO_RECEIVE:
		n = DCNT_EP_POST_RECV;
		break;
	case KDAT_DTO_RDMA_WRITE:
		n = DCNT_EP_POST_WRITE;
		break;
	case KDAT_DTO_RDMA_WRITE_IMM:
		n = DCNT_EP_POST_WRITE_IMM;
		break;
	case KDAT_DTO_RDMA_READ:
		n = DCNT_EP_POST_READ;
		break;
	case KDAT_DTO_SEND_UD:
		n = DCNT_EP_POST_SEND_UD;
		break;
	case KDAT_DTO_CMP_SWAP:
		kd_count(&ep->cntrs[DCNT_EP_POST_CMP_SWAP], 1);
		return;
	case KDAT_DTO_FETCH_ADD:
		kd_count(&ep->cntrs[DCNT_EP_POST_FETCH_ADD], 1);
		return;
	default:
		return;
	}
	for (i = 0; i < num; i++)
		bytes += iov[i].segment_length;
	kd_count(&ep->cntrs[n], 1);
	kd_count(&ep->cntrs[n + 1], bytes);	/* its _DATA */
}

/* The counters of @h: an IA's, an EP's or an EVD's; NULL for others. */
static uint64_t *kd_counters_of(DAT_HANDLE h, int *max)
{
	if (kd_check(h, DAT_HANDLE_TYPE_IA)) {
		*max = DCNT_IA_ALL_COUNTERS;
		return ((struct kd_ia *)h)->cntrs;
	}
	if (kd_check(h, DAT_HANDLE_TYPE_EP)) {
		*max = DCNT_EP_ALL_COUNTERS;
		return ((struct kd_ep *)h)->cntrs;
	}
	if (kd_check(h, DAT_HANDLE_TYPE_EVD)) {
		*max = DCNT_EVD_ALL_COUNTERS;
		return ((struct kd_evd *)h)->cntrs;
	}
	return NULL;
}

/* Counter @i of @c, and zeroed if @reset. */
static uint64_t kd_counter_take(uint64_t *c, int i, int reset)
{
	if (reset)
		return __atomic_exchange_n(&c[i], 0, __ATOMIC_RELAXED);
	return __atomic_load_n(&c[i], __ATOMIC_RELAXED);
}

static DAT_RETURN kd_query_counters(DAT_HANDLE h, va_list args)
{
	int cntr = va_arg(args, int);
	DAT_UINT64 *out = va_arg(args, DAT_UINT64 *);
	int reset = va_arg(args, int);
	uint64_t *c;
	int i, max;

	c = kd_counters_of(h, &max);
	if (!c)
		return DAT_INVALID_HANDLE;
	if (cntr < 0 || cntr > max || !out)
		return DAT_INVALID_PARAMETER;
	for (i = 0; i < max; i++)
		if (cntr == i || cntr == max)
			out[i] = kd_counter_take(c, i, reset);
	return DAT_SUCCESS;
}

/* The counters' names, as the header's enums spell them. */
static const char *const kd_ia_cntr_names[DCNT_IA_ALL_COUNTERS] = {
	"DCNT_IA_PZ_CREATE", "DCNT_IA_PZ_FREE", "DCNT_IA_LMR_CREATE",
	"DCNT_IA_LMR_FREE", "DCNT_IA_RMR_CREATE", "DCNT_IA_RMR_FREE",
	"DCNT_IA_PSP_CREATE", "DCNT_IA_PSP_CREATE_ANY", "DCNT_IA_PSP_FREE",
	"DCNT_IA_RSP_CREATE", "DCNT_IA_RSP_FREE", "DCNT_IA_EVD_CREATE",
	"DCNT_IA_EVD_FREE", "DCNT_IA_EP_CREATE", "DCNT_IA_EP_FREE",
	"DCNT_IA_SRQ_CREATE", "DCNT_IA_SRQ_FREE", "DCNT_IA_SP_CR",
	"DCNT_IA_SP_CR_ACCEPTED", "DCNT_IA_SP_CR_REJECTED",
	"DCNT_IA_MEM_ALLOC", "DCNT_IA_MEM_ALLOC_DATA", "DCNT_IA_MEM_FREE",
	"DCNT_IA_ASYNC_ERROR", "DCNT_IA_ASYNC_QP_ERROR",
	"DCNT_IA_ASYNC_CQ_ERROR", "DCNT_IA_CM_LISTEN", "DCNT_IA_CM_REQ_TX",
	"DCNT_IA_CM_REQ_RX", "DCNT_IA_CM_REP_TX", "DCNT_IA_CM_REP_RX",
	"DCNT_IA_CM_RTU_TX", "DCNT_IA_CM_RTU_RX", "DCNT_IA_CM_USER_REJ_TX",
	"DCNT_IA_CM_USER_REJ_RX", "DCNT_IA_CM_ACTIVE_EST",
	"DCNT_IA_CM_PASSIVE_EST", "DCNT_IA_CM_AH_REQ_TX",
	"DCNT_IA_CM_AH_REQ_RX", "DCNT_IA_CM_AH_RESOLVED",
	"DCNT_IA_CM_DREQ_TX", "DCNT_IA_CM_DREQ_RX", "DCNT_IA_CM_DREP_TX",
	"DCNT_IA_CM_DREP_RX", "DCNT_IA_CM_MRA_TX", "DCNT_IA_CM_MRA_RX",
	"DCNT_IA_CM_REQ_FULLQ_POLL", "DCNT_IA_CM_ERR",
	"DCNT_IA_CM_ERR_REQ_FULLQ", "DCNT_IA_CM_ERR_REQ_DUP",
	"DCNT_IA_CM_ERR_REQ_RETRY", "DCNT_IA_CM_ERR_REP_DUP",
	"DCNT_IA_CM_ERR_REP_RETRY", "DCNT_IA_CM_ERR_RTU_DUP",
	"DCNT_IA_CM_ERR_RTU_RETRY", "DCNT_IA_CM_ERR_REFUSED",
	"DCNT_IA_CM_ERR_RESET", "DCNT_IA_CM_ERR_TIMEOUT",
	"DCNT_IA_CM_ERR_REJ_TX", "DCNT_IA_CM_ERR_REJ_RX",
	"DCNT_IA_CM_ERR_DREQ_DUP", "DCNT_IA_CM_ERR_DREQ_RETRY",
	"DCNT_IA_CM_ERR_DREP_DUP", "DCNT_IA_CM_ERR_DREP_RETRY",
	"DCNT_IA_CM_ERR_MRA_DUP", "DCNT_IA_CM_ERR_MRA_RETRY",
	"DCNT_IA_CM_ERR_UNEXPECTED", "DCNT_IA_LNK_ERR_RCV",
	"DCNT_IA_LNK_ERR_RCV_REM_PHYS", "DCNT_IA_LNK_ERR_RCV_CONSTRAINT",
	"DCNT_IA_LNK_ERR_XMT_DISCARDS", "DCNT_IA_LNK_ERR_XMT_CONTRAINT",
	"DCNT_IA_LNK_ERR_INTEGRITY", "DCNT_IA_LNK_ERR_EXC_BUF_OVERRUN",
	"DCNT_IA_LNK_WARN_RCV_SW_RELAY", "DCNT_IA_LNK_WARN_XMT_WAIT",
	"DCNT_IA_DIAG_ERR_RQ_RAE", "DCNT_IA_DIAG_ERR_RQ_OOS",
	"DCNT_IA_DIAG_ERR_RQ_RIRE", "DCNT_IA_DIAG_ERR_RQ_UDSDPRD",
	"DCNT_IA_DIAG_ERR_SQ_RAE", "DCNT_IA_DIAG_ERR_SQ_OOS",
	"DCNT_IA_DIAG_ERR_SQ_RIRE", "DCNT_IA_DIAG_ERR_SQ_RREE",
	"DCNT_IA_DIAG_ERR_SQ_TREE",
};

static const char *const kd_ep_cntr_names[DCNT_EP_ALL_COUNTERS] = {
	"DCNT_EP_CONNECT", "DCNT_EP_DISCONNECT", "DCNT_EP_POST_SEND",
	"DCNT_EP_POST_SEND_DATA", "DCNT_EP_POST_SEND_UD",
	"DCNT_EP_POST_SEND_UD_DATA", "DCNT_EP_POST_RECV",
	"DCNT_EP_POST_RECV_DATA", "DCNT_EP_POST_WRITE",
	"DCNT_EP_POST_WRITE_DATA", "DCNT_EP_POST_WRITE_IMM",
	"DCNT_EP_POST_WRITE_IMM_DATA", "DCNT_EP_POST_READ",
	"DCNT_EP_POST_READ_DATA", "DCNT_EP_POST_CMP_SWAP",
	"DCNT_EP_POST_FETCH_ADD", "DCNT_EP_RECV", "DCNT_EP_RECV_DATA",
	"DCNT_EP_RECV_UD", "DCNT_EP_RECV_UD_DATA", "DCNT_EP_RECV_IMM",
	"DCNT_EP_RECV_IMM_DATA", "DCNT_EP_RECV_RDMA_IMM",
	"DCNT_EP_RECV_RDMA_IMM_DATA",
};

static const char *const kd_evd_cntr_names[DCNT_EVD_ALL_COUNTERS] = {
	"DCNT_EVD_WAIT", "DCNT_EVD_WAIT_BLOCKED", "DCNT_EVD_WAIT_NOTIFY",
	"DCNT_EVD_DEQUEUE", "DCNT_EVD_DEQUEUE_FOUND",
	"DCNT_EVD_DEQUEUE_NOT_FOUND", "DCNT_EVD_DEQUEUE_POLL",
	"DCNT_EVD_DEQUEUE_POLL_FOUND", "DCNT_EVD_CONN_CALLBACK",
	"DCNT_EVD_DTO_CALLBACK",
};

/* One line per counter on stdout: "<pid>: <name> = <value>". */
static DAT_RETURN kd_print_counters(DAT_HANDLE h, va_list args)
{
	int cntr = va_arg(args, int);
	int reset = va_arg(args, int);
	const char *const *names;
	uint64_t *c;
	int i, max;

	c = kd_counters_of(h, &max);
	if (!c)
		return DAT_INVALID_HANDLE;
	names = max == DCNT_IA_ALL_COUNTERS ? kd_ia_cntr_names :
		max == DCNT_EP_ALL_COUNTERS ? kd_ep_cntr_names :
		kd_evd_cntr_names;
	if (cntr < 0 || cntr > max)
		return DAT_INVALID_PARAMETER;
	for (i = 0; i < max; i++)
		if (cntr == i || cntr == max)
			printf(" %d: %s = %llu\n", (int)getpid(), names[i],
			       (unsigned long long)kd_counter_take(c, i,
								   reset));
	fflush(stdout);
	return DAT_SUCCESS;
}

/* ---- open and close query ------------------------------------------- */

/*
 * dat_ib_open_query: an IA of @name opened (no async EVD) to answer
 * dat_ia_query at once; it lives until dat_ib_close_query.
 */
static DAT_RETURN kd_open_query(DAT_NAME_PTR name, va_list args)
{
	DAT_IA_HANDLE *iap = va_arg(args, DAT_IA_HANDLE *);
	DAT_IA_ATTR_MASK ia_mask = va_arg(args, DAT_IA_ATTR_MASK);
	DAT_IA_ATTR *ia_attr = va_arg(args, DAT_IA_ATTR *);
	DAT_PROVIDER_ATTR_MASK pr_mask = va_arg(args, DAT_PROVIDER_ATTR_MASK);
	DAT_PROVIDER_ATTR *pr_attr = va_arg(args, DAT_PROVIDER_ATTR *);
	DAT_IA_HANDLE ia;
	DAT_RETURN ret;

	if (!name || !iap || (!ia_attr && !pr_attr))
		return DAT_INVALID_PARAMETER;
	*iap = DAT_HANDLE_NULL;
	ret = kd_provider_ia_open(name, 0, NULL, &ia);
	if (ret)
		return ret;
	ret = kd_ia_query(ia, NULL, ia_mask, ia_attr, pr_mask, pr_attr);
	if (ret) {
		kd_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
		return ret;
	}
	*iap = ia;
	return DAT_SUCCESS;
}

/*
 * The extension operations on kdat's handles: @handle and @op as
 * dat_extension_op got them, @args the rest. An op of
 * DAT_OPEN_EXTENSION_BASE has no handle: @handle is then the IA name, as
 * OFA's registry passes it to a provider.
 */
DAT_RETURN kd_extension_op(DAT_HANDLE handle, DAT_EXTENDED_OP op,
			   va_list args)
{
	switch ((int)op) {
	case DAT_IB_RDMA_WRITE_IMMED_OP:
		return kd_write_immed(handle, args);
	case DAT_IB_CMP_AND_SWAP_OP:
		return kd_atomic(handle, KDAT_DTO_CMP_SWAP, args);
	case DAT_IB_FETCH_AND_ADD_OP:
		return kd_atomic(handle, KDAT_DTO_FETCH_ADD, args);
	case DAT_IB_UD_SEND_OP:
		return kd_ud_send(handle, args);
	case DAT_IB_UD_CM_FREE_OP:
		return kd_ud_cm_free(handle, args);
	case DAT_IB_UD_AH_FREE_OP:
		return kd_ud_ah_free(handle, args);
	case DAT_IB_QUERY_COUNTERS_OP:
		return kd_query_counters(handle, args);
	case DAT_IB_PRINT_COUNTERS_OP:
		return kd_print_counters(handle, args);
	case DAT_IB_OPEN_QUERY_OP:
		return kd_open_query((DAT_NAME_PTR)handle, args);
	case DAT_IB_CLOSE_QUERY_OP:
		return kd_ia_close(handle, DAT_CLOSE_ABRUPT_FLAG);
	default:
		return DAT_NOT_IMPLEMENTED;
	}
}
