/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the files of an Endpoint share among themselves: kdat_ep.c (the
 * state table, create, query, modify, free), kdat_ep_qp.c (the QP's
 * states, SRQ membership, renew and reset), kdat_ep_conn.c (connections
 * and their timers) and kdat_ep_drain.c (the solicited-wait CQ, the drain
 * and the teardown). What the rest of kdat calls is in kdat.h.
 */
#ifndef KDAT_EP_H
#define KDAT_EP_H

#include "kdat.h"

/* The most segments a WR of an EP takes, whatever the device allows. */
#define KDAT_EP_MAX_IOV		32

static inline struct kdat_device *kdat_ep_kdev(struct kdat_ep *ep)
{
	return ep->pz->ia->kdev;
}

static inline struct kdat_ep *kdat_ep_get(struct kdat_ucmd *ucmd, u32 handle)
{
	return kdat_get(ucmd->kfile, handle, struct kdat_ep, KDAT_OBJ_EP);
}

/* kdat_ep.c */
void kdat_ep_set_state(struct kdat_ep *ep, enum kdat_ep_state state);
enum kdat_ep_state kdat_ep_state(struct kdat_ep *ep);

/* kdat_ep_qp.c */
void kdat_ep_qp_init_ep(struct kdat_ep *ep);
struct ib_qp *kdat_ep_qp_make(struct kdat_ep *ep, struct ib_device *ibdev,
			      struct ib_qp_init_attr *init);
int kdat_ep_qp_to_init(struct kdat_ep *ep, struct ib_qp *qp);
int kdat_ep_modify(struct kdat_ep *ep, struct rdma_cm_id *id,
		   enum ib_qp_state state);
void kdat_ep_set_rtr(struct kdat_ep *ep, bool rtr);
int kdat_ep_qp_connect(struct kdat_ep *ep, struct rdma_cm_id *id);
int kdat_ep_srq_join(struct kdat_ep *ep, struct ib_pd *pd, struct ib_cq *cq);
void kdat_ep_qp_error(struct kdat_ep *ep);
int kdat_ep_qp_reset(struct kdat_ep *ep);
int kdat_ep_qp_renew(struct kdat_ep *ep);
int kdat_ep_lock_for_reset(struct kdat_ep *ep);
void kdat_ep_last_wqe(struct kdat_ep *ep);
void kdat_ep_last_wqe_wait(struct kdat_ep *ep);
void kdat_ep_srq_settle(struct kdat_ep *ep);

/* kdat_ep_conn.c */
void kdat_ep_conn_init_ep(struct kdat_ep *ep);
int kdat_ep_timers_init(struct kdat_ep *ep, const struct kdat_ep_timers *want);
bool kdat_ep_id_put(struct kdat_ep *ep, struct rdma_cm_id *id);
void kdat_ep_id_gone(struct kdat_ep *ep);

/* kdat_ep_drain.c */
void kdat_ep_drain_init_ep(struct kdat_ep *ep);
void kdat_ep_sw_comp(struct ib_cq *cq, void *context);
void kdat_ep_drain(struct kdat_ep *ep, bool linger);
void kdat_ep_srq_reap(struct kdat_ep *ep);
enum kdat_ep_state kdat_ep_teardown(struct kdat_ep *ep);

#endif /* KDAT_EP_H */
