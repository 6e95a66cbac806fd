/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kdat for kernel modules: the DAT objects of kdat.ko, kDAPL style.
 *
 * The same objects /dev/kdat gives processes, made by the same code: a
 * kernel consumer opens an Interface Adapter and builds on it. Objects are
 * opaque and named by pointers; events name objects by their handles (as
 * in struct kdat_event), which kdat_ep_handle() and friends give.
 *
 * Context: every function may sleep (process context only), except
 * kdat_evd_dequeue(), kdat_evd_modify_upcall() and the accessors
 * (kdat_*_handle(), kdat_lmr_context(), kdat_ep_get_state()), which may be
 * called from any context, upcalls included, and so may the posts
 * (kdat_ep_post_*(), kdat_srq_post_recv()): a DTO completion's upcall may
 * post. The kernel-doc of each function (kernel/kdat_kapi.c) gives its
 * arguments, errors and context.
 *
 * Errors: negative errnos, those of the uapi header's table for the same
 * operation (EBADF for an object of another IA's consumer, EBUSY where DAT
 * says DAT_INVALID_STATE, EACCES/EPERM/EINVAL for an IOV segment, ...).
 *
 * Ownership: the objects of an IA belong to it. kdat_ia_close() with
 * @abrupt destroys every object built on the IA, newest first; without,
 * it fails with EBUSY while any exists. An object is freed with its
 * kdat_*_free(), which fails with EBUSY while other objects use it. A
 * consumer must not use an object after freeing it, nor free it while
 * another of its threads uses it.
 *
 * Upcalls (struct kdat_upcall): an EVD with an upcall hands every event
 * to it instead of queueing it (kdat copies the struct). The upcall runs
 * in atomic context: for DTO and RMR bind completions wherever the EVD's
 * CQ is reaped, with bottom halves off (the device's completion handler,
 * a softirq, or a thread in kdat_evd_wait(), kdat_evd_dequeue() or a
 * kdat_ep_post_*() that found its queue full and reaps it once before it
 * refuses), the RDMA CM's handler or kdat's connect worker (with kdat
 * locks held) for connection events, and the thread of a kdat call that
 * produces an event at once (a DTO posted to a disconnected Endpoint is
 * flushed in kdat_ep_post_*()). It must not
 * sleep and may call only the functions allowed in any context; a
 * consumer typically copies the event and wakes a thread. An upcall for a
 * DTO completion may post, as a kernel RDMA consumer re-posts a receive
 * from its completion handler; one for a connection event may not (kdat
 * locks are held). A post flushed at once runs the upcall inside it: an
 * upcall that re-posts a receive on success only does not recurse. A post
 * that finds its queue full reaps the CQ once, running upcalls inside it:
 * a consumer must not post holding a lock its upcalls take. Upcalls of
 * one EVD may run concurrently on several CPUs.
 */
#ifndef _KDAT_KDAT_H
#define _KDAT_KDAT_H

#include <linux/scatterlist.h>
#include <linux/socket.h>
#include <linux/types.h>
#include <uapi/linux/kdat.h>

struct page;
struct kdat_ia;
struct kdat_pz;
struct kdat_lmr;
struct kdat_rmr;
struct kdat_evd;
struct kdat_ep;
struct kdat_psp;
struct kdat_srq;

/**
 * struct kdat_upcall - where an EVD delivers its events
 * @func: called once per event, in atomic context (see above)
 * @context: the consumer's, passed to @func
 */
struct kdat_upcall {
	void (*func)(void *context, const struct kdat_event *event);
	void *context;
};

int kdat_ia_open(const char *name, u32 port_num, struct kdat_ia **iap);
int kdat_ia_close(struct kdat_ia *ia, bool abrupt);

int kdat_pz_create(struct kdat_ia *ia, struct kdat_pz **pzp);
int kdat_pz_free(struct kdat_pz *pz);

int kdat_lmr_create_sg(struct kdat_pz *pz, struct scatterlist *sgl,
		       unsigned int nents, u64 va, u32 mem_priv,
		       struct kdat_lmr **lmrp);
int kdat_lmr_create_virt(struct kdat_pz *pz, void *addr, size_t length,
			 u32 mem_priv, struct kdat_lmr **lmrp);
int kdat_lmr_create_pages(struct kdat_pz *pz, struct page **pages,
			  unsigned int npages, unsigned int offset,
			  u64 length, u64 va, u32 mem_priv,
			  struct kdat_lmr **lmrp);
u32 kdat_lmr_context(struct kdat_lmr *lmr);
int kdat_lmr_free(struct kdat_lmr *lmr);

int kdat_rmr_create(struct kdat_pz *pz, struct kdat_rmr **rmrp);
int kdat_rmr_bind(struct kdat_rmr *rmr, struct kdat_lmr *lmr, u64 va,
		  u64 length, u32 mem_priv, struct kdat_ep *ep, u64 cookie,
		  u32 completion_flags, u32 *rmr_context);
u32 kdat_rmr_handle(struct kdat_rmr *rmr);
int kdat_rmr_free(struct kdat_rmr *rmr);

int kdat_evd_create(struct kdat_ia *ia, u32 qlen, u32 evd_flags,
		    const struct kdat_upcall *upcall, struct kdat_evd **evdp);
int kdat_evd_modify_upcall(struct kdat_evd *evd,
			   const struct kdat_upcall *upcall);
int kdat_evd_dequeue(struct kdat_evd *evd, struct kdat_event *event);
int kdat_evd_wait(struct kdat_evd *evd, u64 timeout_us, u32 threshold,
		  struct kdat_event *event, u32 *nmore);
int kdat_evd_free(struct kdat_evd *evd);

int kdat_ep_create(struct kdat_pz *pz, struct kdat_evd *recv_evd,
		   struct kdat_evd *request_evd, struct kdat_evd *connect_evd,
		   struct kdat_srq *srq, const struct kdat_ep_attr *attr,
		   struct kdat_ep **epp);
int kdat_ep_connect(struct kdat_ep *ep, const struct sockaddr *remote,
		    u64 conn_qual, u64 timeout_us, const void *private_data,
		    u8 private_data_len);
int kdat_ep_disconnect(struct kdat_ep *ep, bool graceful);
int kdat_ep_reset(struct kdat_ep *ep);
enum kdat_ep_state kdat_ep_get_state(struct kdat_ep *ep);
u32 kdat_ep_handle(struct kdat_ep *ep);
int kdat_ep_free(struct kdat_ep *ep);

int kdat_ep_post_send(struct kdat_ep *ep, const struct kdat_lmr_triplet *iov,
		      u32 num_segments, u64 cookie, u32 completion_flags);
int kdat_ep_post_recv(struct kdat_ep *ep, const struct kdat_lmr_triplet *iov,
		      u32 num_segments, u64 cookie, u32 completion_flags);
int kdat_ep_post_rdma_read(struct kdat_ep *ep,
			   const struct kdat_lmr_triplet *iov,
			   u32 num_segments, u64 cookie,
			   const struct kdat_rmr_triplet *remote,
			   u32 completion_flags);
int kdat_ep_post_rdma_write(struct kdat_ep *ep,
			    const struct kdat_lmr_triplet *iov,
			    u32 num_segments, u64 cookie,
			    const struct kdat_rmr_triplet *remote,
			    u32 completion_flags);
/* The DAT IB extensions (dat_ib_extensions.h) */
int kdat_ep_post_rdma_write_imm(struct kdat_ep *ep,
				const struct kdat_lmr_triplet *iov,
				u32 num_segments, u64 cookie,
				const struct kdat_rmr_triplet *remote,
				u32 imm_data, u32 completion_flags);
int kdat_ep_post_cmp_swap(struct kdat_ep *ep,
			  const struct kdat_lmr_triplet *local, u64 cookie,
			  const struct kdat_rmr_triplet *remote, u64 compare,
			  u64 swap, u32 completion_flags);
int kdat_ep_post_fetch_add(struct kdat_ep *ep,
			   const struct kdat_lmr_triplet *local, u64 cookie,
			   const struct kdat_rmr_triplet *remote, u64 add,
			   u32 completion_flags);

int kdat_psp_create(struct kdat_ia *ia, u64 conn_qual, struct kdat_evd *evd,
		    struct kdat_psp **pspp);
int kdat_rsp_create(struct kdat_ia *ia, u64 conn_qual, struct kdat_ep *ep,
		    struct kdat_evd *evd, struct kdat_psp **rspp);
u32 kdat_psp_handle(struct kdat_psp *psp);
int kdat_psp_free(struct kdat_psp *psp);

int kdat_cr_query(struct kdat_ia *ia, u32 cr_handle,
		  struct sockaddr_storage *remote, u64 *conn_qual,
		  void *private_data, u32 *private_data_len);
int kdat_cr_accept(struct kdat_ia *ia, u32 cr_handle, struct kdat_ep *ep,
		   const void *private_data, u8 private_data_len);
int kdat_cr_reject(struct kdat_ia *ia, u32 cr_handle,
		   const void *private_data, u8 private_data_len);

int kdat_srq_create(struct kdat_pz *pz, u32 max_recv_dtos, u32 max_recv_iov,
		    struct kdat_srq **srqp);
int kdat_srq_post_recv(struct kdat_srq *srq,
		       const struct kdat_lmr_triplet *iov, u32 num_segments,
		       u64 cookie);
int kdat_srq_free(struct kdat_srq *srq);

#endif /* _KDAT_KDAT_H */
