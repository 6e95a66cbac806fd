// SPDX-License-Identifier: GPL-2.0
/*
 * kdat for kernel modules: the exported API of include/kdat/kdat.h.
 *
 * Each function here is a thin client of the core the ioctls use: it takes
 * the owner's lock where a create needs it, calls the same *_new() or
 * *_do() function, and publishes. A kernel consumer's IA owns a struct
 * kdat_file of its own (kernel = true) that holds every object built on
 * it, exactly as an open /dev/kdat holds a process's; kdat_ia_close()
 * releases it. Posts hand the core their objects (kdat_post_ep(),
 * kdat_post_srq()); other calls name objects by their handles, which are
 * looked up in that file only.
 */
#include <linux/export.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "kdat.h"

static int kdat_kapi_publish(struct kdat_file *kfile, int ret,
			     struct kdat_obj *obj)
{
	if (!ret)
		kdat_obj_publish_locked(obj);
	mutex_unlock(&kfile->lock);
	return ret;
}

/**
 * kdat_ia_open() - open an Interface Adapter for a kernel consumer
 * @name: the RDMA device's name (e.g. "rxe0")
 * @port_num: its port
 * @iap: the IA, on success
 *
 * Context: process context; may sleep.
 * Return: 0, -ENODEV (no such device), -EINVAL (no such port), -ENOMEM.
 */
int kdat_ia_open(const char *name, u32 port_num, struct kdat_ia **iap)
{
	struct kdat_file *kfile;
	struct kdat_ia *ia;
	int ret;

	kfile = kdat_file_create(true);
	if (!kfile)
		return -ENOMEM;
	mutex_lock(&kfile->lock);
	ret = kdat_ia_new(kfile, name, port_num, &ia);
	ret = kdat_kapi_publish(kfile, ret, ret ? NULL : &ia->obj);
	if (ret) {
		kdat_file_release(kfile);
		return ret;
	}
	*iap = ia;
	return 0;
}
EXPORT_SYMBOL_GPL(kdat_ia_open);

/**
 * kdat_ia_close() - close a kernel consumer's IA
 * @ia: the IA
 * @abrupt: destroy every object built on @ia first (newest first)
 *
 * Graceful close (@abrupt false) refuses while any object exists on @ia.
 *
 * Context: process context; may sleep (an abrupt close drains Endpoints).
 * Return: 0 (@ia is gone), -EBUSY (graceful, objects remain).
 */
int kdat_ia_close(struct kdat_ia *ia, bool abrupt)
{
	struct kdat_file *kfile = ia->obj.file;
	int ret;

	if (WARN_ON_ONCE(!kfile->kernel))
		return -EINVAL;
	if (!abrupt) {
		ret = kdat_obj_destroy(kfile, ia->obj.handle);
		if (ret)
			return ret;
	}
	kdat_file_release(kfile);
	return 0;
}
EXPORT_SYMBOL_GPL(kdat_ia_close);

/**
 * kdat_pz_create() - create a Protection Zone
 * @ia: the IA
 * @pzp: the PZ, on success
 *
 * Context: process context; may sleep.
 * Return: 0, -ENODEV (the device is gone), -ENOMEM.
 */
int kdat_pz_create(struct kdat_ia *ia, struct kdat_pz **pzp)
{
	struct kdat_file *kfile = ia->obj.file;
	struct kdat_pz *pz = NULL;
	int ret;

	mutex_lock(&kfile->lock);
	ret = kdat_pz_new(kfile, ia, &pz);
	ret = kdat_kapi_publish(kfile, ret, ret ? NULL : &pz->obj);
	if (!ret)
		*pzp = pz;
	return ret;
}
EXPORT_SYMBOL_GPL(kdat_pz_create);

/**
 * kdat_pz_free() - free a Protection Zone
 * @pz: the PZ
 *
 * Context: process context; may sleep.
 * Return: 0, -EBUSY (LMRs, RMRs, Endpoints or SRQs use it).
 */
int kdat_pz_free(struct kdat_pz *pz)
{
	return kdat_obj_destroy_ptr(&pz->obj);
}
EXPORT_SYMBOL_GPL(kdat_pz_free);

static int kdat_lmr_create_table(struct kdat_pz *pz, struct sg_table *sgt,
				 u64 va, u32 mem_priv,
				 struct kdat_lmr **lmrp)
{
	struct kdat_file *kfile = pz->obj.file;
	struct kdat_lmr *lmr = NULL;
	int ret;

	mutex_lock(&kfile->lock);
	ret = kdat_lmr_new_kernel(kfile, pz, sgt, va, mem_priv, &lmr);
	ret = kdat_kapi_publish(kfile, ret, ret ? NULL : &lmr->obj);
	if (!ret)
		*lmrp = lmr;
	return ret;
}

/**
 * kdat_lmr_create_sg() - register kernel memory described by a scatterlist
 * @pz: the PZ
 * @sgl: the memory (page, offset, length of each entry); kdat copies the
 *       list and maps its copy for DMA, @sgl is not changed
 * @nents: entries in @sgl
 * @va: the address IOVs name the memory's first byte by
 * @mem_priv: KDAT_MEM_PRIV_LOCAL_READ and/or KDAT_MEM_PRIV_LOCAL_WRITE;
 *            remote access is granted with an RMR (kdat_rmr_bind())
 * @lmrp: the LMR, on success
 *
 * The memory must stay allocated until kdat_lmr_free(). kdat does not sync
 * it for the CPU: on architectures without coherent DMA the consumer does.
 *
 * Context: process context; may sleep.
 * Return: 0, -EINVAL (empty, remote privileges), -ENODEV, -ENOMEM.
 */
int kdat_lmr_create_sg(struct kdat_pz *pz, struct scatterlist *sgl,
		       unsigned int nents, u64 va, u32 mem_priv,
		       struct kdat_lmr **lmrp)
{
	struct scatterlist *src, *dst;
	struct sg_table sgt;
	unsigned int i;
	int ret;

	if (!nents)
		return -EINVAL;
	ret = sg_alloc_table(&sgt, nents, GFP_KERNEL);
	if (ret)
		return ret;
	dst = sgt.sgl;
	for_each_sg(sgl, src, nents, i) {
		sg_set_page(dst, sg_page(src), src->length, src->offset);
		dst = sg_next(dst);
	}
	return kdat_lmr_create_table(pz, &sgt, va, mem_priv, lmrp);
}
EXPORT_SYMBOL_GPL(kdat_lmr_create_sg);

/**
 * kdat_lmr_create_pages() - register pages of kernel memory
 * @pz: the PZ
 * @pages: the pages
 * @npages: how many
 * @offset: where the memory starts in the first page
 * @length: its length
 * @va: the address IOVs name its first byte by; to bind RMRs to it, @va's
 *      offset in a page must be @offset
 * @mem_priv: as for kdat_lmr_create_sg()
 * @lmrp: the LMR, on success
 *
 * Context: process context; may sleep.
 * Return: as kdat_lmr_create_sg().
 */
int kdat_lmr_create_pages(struct kdat_pz *pz, struct page **pages,
			  unsigned int npages, unsigned int offset,
			  u64 length, u64 va, u32 mem_priv,
			  struct kdat_lmr **lmrp)
{
	struct sg_table sgt;
	int ret;

	if (!npages || !length || offset >= PAGE_SIZE ||
	    offset + length > (u64)npages * PAGE_SIZE)
		return -EINVAL;
	ret = sg_alloc_table_from_pages(&sgt, pages, npages, offset, length,
					GFP_KERNEL);
	if (ret)
		return ret;
	return kdat_lmr_create_table(pz, &sgt, va, mem_priv, lmrp);
}
EXPORT_SYMBOL_GPL(kdat_lmr_create_pages);

/**
 * kdat_lmr_create_virt() - register a kernel virtual range
 * @pz: the PZ
 * @addr: the memory: from kmalloc() (the direct map) or vmalloc()
 * @length: its length
 * @mem_priv: as for kdat_lmr_create_sg()
 * @lmrp: the LMR, on success; IOVs name the memory by its address
 *
 * Context: process context; may sleep.
 * Return: as kdat_lmr_create_sg(); -EINVAL for an address neither in the
 * direct map nor in vmalloc space.
 */
int kdat_lmr_create_virt(struct kdat_pz *pz, void *addr, size_t length,
			 u32 mem_priv, struct kdat_lmr **lmrp)
{
	unsigned int off = offset_in_page(addr), npages, i;
	bool vmalloced = is_vmalloc_addr(addr);
	struct page **pages;
	struct sg_table sgt;
	int ret;

	if (!length || (!vmalloced && !virt_addr_valid(addr)))
		return -EINVAL;
	npages = DIV_ROUND_UP(off + length, PAGE_SIZE);
	pages = kvcalloc(npages, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;
	for (i = 0; i < npages; i++) {
		void *p = addr - off + (size_t)i * PAGE_SIZE;

		pages[i] = vmalloced ? vmalloc_to_page(p) : virt_to_page(p);
	}
	ret = sg_alloc_table_from_pages(&sgt, pages, npages, off, length,
					GFP_KERNEL);
	kvfree(pages);
	if (ret)
		return ret;
	return kdat_lmr_create_table(pz, &sgt, (u64)(uintptr_t)addr, mem_priv,
				     lmrp);
}
EXPORT_SYMBOL_GPL(kdat_lmr_create_virt);

/**
 * kdat_lmr_context() - the lmr_context of an LMR, for IOVs
 * @lmr: the LMR
 *
 * Context: any.
 * Return: the value for struct kdat_lmr_triplet.lmr_context.
 */
u32 kdat_lmr_context(struct kdat_lmr *lmr)
{
	return lmr->obj.handle;
}
EXPORT_SYMBOL_GPL(kdat_lmr_context);

/**
 * kdat_lmr_free() - free an LMR
 * @lmr: the LMR; no DTO may still use it
 *
 * Context: process context; may sleep.
 * Return: 0; -EBUSY while an RMR is bound to it (kdat_rmr_bind()), the
 * LMR untouched.
 */
int kdat_lmr_free(struct kdat_lmr *lmr)
{
	return kdat_obj_destroy_ptr(&lmr->obj);
}
EXPORT_SYMBOL_GPL(kdat_lmr_free);

/**
 * kdat_rmr_create() - create an RMR
 * @pz: the PZ
 * @rmrp: the RMR, unbound, on success
 *
 * Context: process context; may sleep.
 * Return: 0, -ENODEV, -ENOMEM.
 */
int kdat_rmr_create(struct kdat_pz *pz, struct kdat_rmr **rmrp)
{
	struct kdat_file *kfile = pz->obj.file;
	struct kdat_rmr *rmr = NULL;
	int ret;

	mutex_lock(&kfile->lock);
	ret = kdat_rmr_new(kfile, pz, &rmr);
	ret = kdat_kapi_publish(kfile, ret, ret ? NULL : &rmr->obj);
	if (!ret)
		*rmrp = rmr;
	return ret;
}
EXPORT_SYMBOL_GPL(kdat_rmr_create);

/**
 * kdat_rmr_bind() - give the peer access to part of an LMR
 * @rmr: the RMR; a previous binding stops working
 * @lmr: the LMR, or NULL with @length 0 to unbind
 * @va: the start of the range, in @lmr's addresses
 * @length: its length
 * @mem_priv: KDAT_MEM_PRIV_* (another bit: -EINVAL). The remote ones,
 *            _REMOTE_READ, _REMOTE_WRITE, _REMOTE_ATOMIC, are what the
 *            peer may do (none: nothing); the LMR must have the matching
 *            local privileges (read; write for the other two). The local
 *            ones grant nothing and are ignored
 * @ep: a connected Endpoint in @rmr's PZ: the registration is a work
 *      request on its send queue, and its completion is the
 *      KDAT_EVENT_RMR_BIND_COMPLETION event on @ep's request EVD
 * @cookie: returned in that event
 * @completion_flags: 0 or KDAT_COMPLETION_SUPPRESS
 * @rmr_context: the context for the peer's struct kdat_rmr_triplet, valid
 *               once the event reports success; 0 when nothing was bound
 *               (an unbind, or @ep DISCONNECTED: the bind is flushed, its
 *               event says so, and the binding before it stands)
 *
 * Context: process context; may sleep.
 * Return: 0; -EACCES/-EPERM/-EINVAL as for an IOV segment; -EBUSY (@ep
 * neither connected nor disconnected); -ENOMEM (@ep's send queue is full).
 */
int kdat_rmr_bind(struct kdat_rmr *rmr, struct kdat_lmr *lmr, u64 va,
		  u64 length, u32 mem_priv, struct kdat_ep *ep, u64 cookie,
		  u32 completion_flags, u32 *rmr_context)
{
	struct kdat_rmr_bind cmd = {
		.rmr_handle = rmr->obj.handle,
		.lmr_context = lmr ? lmr->obj.handle : 0,
		.ep_handle = ep->obj.handle,
		.mem_priv = mem_priv,
		.completion_flags = completion_flags,
		.addr = va,
		.length = length,
		.cookie = cookie,
	};
	int ret;

	ret = kdat_rmr_bind_do(rmr->obj.file, &cmd);
	if (!ret)
		*rmr_context = cmd.out_rmr_context;
	return ret;
}
EXPORT_SYMBOL_GPL(kdat_rmr_bind);

/**
 * kdat_rmr_handle() - how events name an RMR
 * @rmr: the RMR
 *
 * Context: any.
 * Return: the handle in its bind completion events.
 */
u32 kdat_rmr_handle(struct kdat_rmr *rmr)
{
	return rmr->obj.handle;
}
EXPORT_SYMBOL_GPL(kdat_rmr_handle);

/**
 * kdat_rmr_free() - free an RMR; its binding stops working
 * @rmr: the RMR
 *
 * Context: process context; may sleep.
 * Return: 0.
 */
int kdat_rmr_free(struct kdat_rmr *rmr)
{
	return kdat_obj_destroy_ptr(&rmr->obj);
}
EXPORT_SYMBOL_GPL(kdat_rmr_free);

/**
 * kdat_evd_create() - create an Event Dispatcher
 * @ia: the IA
 * @qlen: events it queues (1..65536)
 * @evd_flags: KDAT_EVD_* (which events it takes)
 * @upcall: NULL to queue events for kdat_evd_dequeue()/kdat_evd_wait(),
 *          or the upcall every event is handed to instead (see the
 *          header for its context)
 * @evdp: the EVD, on success
 *
 * Context: process context; may sleep.
 * Return: 0, -EINVAL, -EOPNOTSUPP (unknown flags), -ENODEV, -ENOMEM.
 */
int kdat_evd_create(struct kdat_ia *ia, u32 qlen, u32 evd_flags,
		    const struct kdat_upcall *upcall, struct kdat_evd **evdp)
{
	struct kdat_file *kfile = ia->obj.file;
	struct kdat_evd *evd = NULL;
	int ret;

	if (upcall && !upcall->func)
		return -EINVAL;
	mutex_lock(&kfile->lock);
	ret = kdat_evd_new(kfile, ia, evd_flags, qlen, NULL, upcall, &evd);
	ret = kdat_kapi_publish(kfile, ret, ret ? NULL : &evd->obj);
	if (!ret)
		*evdp = evd;
	return ret;
}
EXPORT_SYMBOL_GPL(kdat_evd_create);

/**
 * kdat_evd_modify_upcall() - change where an EVD's events go
 * @evd: the EVD
 * @upcall: the new upcall, or NULL to queue events from now on
 *
 * An upcall already running on another CPU may still finish after this
 * returns.
 *
 * Context: any.
 * Return: 0, -EINVAL (an upcall without a function).
 */
int kdat_evd_modify_upcall(struct kdat_evd *evd,
			   const struct kdat_upcall *upcall)
{
	if (upcall && !upcall->func)
		return -EINVAL;
	kdat_evd_set_upcall(evd, upcall);
	return 0;
}
EXPORT_SYMBOL_GPL(kdat_evd_modify_upcall);

/**
 * kdat_evd_dequeue() - take the oldest queued event
 * @evd: the EVD
 * @event: where to put it
 *
 * With nothing queued, it first reaps the EVD's completion queue (from a
 * hard interrupt or with interrupts off, it leaves that to a softirq).
 *
 * Context: any, upcalls included.
 * Return: 0, -EAGAIN (none queued).
 */
int kdat_evd_dequeue(struct kdat_evd *evd, struct kdat_event *event)
{
	u32 nmore;

	if (kdat_evd_dequeue_n(evd, event, 1, &nmore))
		return 0;
	/* Nothing queued: a poller reaps the CQ itself (kdat_cq.c). */
	kdat_cq_reap(&evd->kcq);
	return kdat_evd_dequeue_n(evd, event, 1, &nmore) ? 0 : -EAGAIN;
}
EXPORT_SYMBOL_GPL(kdat_evd_dequeue);

/**
 * kdat_evd_wait() - wait for events, then take the oldest
 * @evd: the EVD
 * @timeout_us: how long; KDAT_WAIT_FOREVER for ever
 * @threshold: wait until this many are queued (1..qlen); 0: do not wait
 * @event: where to put the oldest
 * @nmore: events left queued, or NULL
 *
 * Context: process context; sleeps.
 * Return: 0, -ETIMEDOUT, -EINTR, -EAGAIN (threshold 0, none queued),
 * -EBUSY (another thread waits on @evd), -EINVAL (threshold above qlen).
 */
int kdat_evd_wait(struct kdat_evd *evd, u64 timeout_us, u32 threshold,
		  struct kdat_event *event, u32 *nmore)
{
	u32 left;
	int ret;

	ret = kdat_evd_wait_for(evd, threshold, timeout_us);
	if (ret)
		return ret;
	if (!kdat_evd_dequeue_n(evd, event, 1, &left))
		return -EAGAIN;
	if (nmore)
		*nmore = left;
	return 0;
}
EXPORT_SYMBOL_GPL(kdat_evd_wait);

/**
 * kdat_evd_free() - free an EVD
 * @evd: the EVD
 *
 * Context: process context; may sleep.
 * Return: 0, -EBUSY (Endpoints or PSPs use it).
 */
int kdat_evd_free(struct kdat_evd *evd)
{
	return kdat_obj_destroy_ptr(&evd->obj);
}
EXPORT_SYMBOL_GPL(kdat_evd_free);

/**
 * kdat_ep_create() - create an Endpoint: an RC QP in the kernel
 * @pz: its PZ
 * @recv_evd: DTO EVD for receive completions
 * @request_evd: DTO EVD for send, RDMA and RMR bind completions
 * @connect_evd: connection EVD, or NULL: the Endpoint then never
 *	connects (kdat_ep_connect() and kdat_cr_accept() answer -EBADF)
 * @srq: an SRQ in @pz to receive from, or NULL
 * @attr: sizes and completion flags, as struct kdat_ep_create's
 * @epp: the Endpoint, UNCONNECTED, on success
 *
 * Context: process context; may sleep.
 * Return: 0, -EINVAL (wrong EVD kinds, SRQ of another PZ, bad flags),
 * -ENOMEM (sizes beyond the device), -ENODEV.
 */
int kdat_ep_create(struct kdat_pz *pz, struct kdat_evd *recv_evd,
		   struct kdat_evd *request_evd, struct kdat_evd *connect_evd,
		   struct kdat_srq *srq, const struct kdat_ep_attr *attr,
		   struct kdat_ep **epp)
{
	struct kdat_file *kfile = pz->obj.file;
	struct kdat_ep *ep = NULL;
	int ret;

	if (recv_evd->obj.file != kfile || request_evd->obj.file != kfile ||
	    (connect_evd && connect_evd->obj.file != kfile) ||
	    (srq && srq->obj.file != kfile))
		return -EBADF;
	mutex_lock(&kfile->lock);
	ret = kdat_ep_new(kfile, pz, recv_evd, request_evd, connect_evd, srq,
			  attr, NULL, 0, &ep);
	ret = kdat_kapi_publish(kfile, ret, ret ? NULL : &ep->obj);
	if (!ret)
		*epp = ep;
	return ret;
}
EXPORT_SYMBOL_GPL(kdat_ep_create);

/**
 * kdat_ep_connect() - connect an Endpoint to a remote PSP or RSP
 * @ep: the Endpoint, UNCONNECTED or DISCONNECTED
 * @remote: the peer's IP address (AF_INET or AF_INET6; its port unused)
 * @conn_qual: the peer's connection qualifier (its RDMA CM port as OFA DAPL
 *             maps it: the qualifier itself up to 65535, above it
 *             33534 + qualifier % 32001)
 * @timeout_us: for address and route resolution; KDAT_WAIT_FOREVER
 * @private_data: sent with the request, or NULL
 * @private_data_len: its length (at most KDAT_MAX_PRIVATE_DATA)
 *
 * The outcome is an event on @ep's connection EVD. Where a connect may
 * block (iWARP), it is made in @ep's IA's turn, as a user's (kdat(4)):
 * it may wait for the IA's 16 earlier ones, or others' for a place;
 * @timeout_us does not bound that wait.
 *
 * Context: process context; may sleep.
 * Return: 0 (started), -EBADF (@ep has no connection EVD), -EBUSY (wrong
 * state), -EINVAL, -EADDRNOTAVAIL, -ENODEV (the device is gone or being
 * removed), -EINTR (as kdat_ep_reset()).
 */
int kdat_ep_connect(struct kdat_ep *ep, const struct sockaddr *remote,
		    u64 conn_qual, u64 timeout_us, const void *private_data,
		    u8 private_data_len)
{
	struct sockaddr_storage dst = {};
	size_t len;
	int ret;

	if (remote->sa_family == AF_INET)
		len = sizeof(struct sockaddr_in);
	else if (remote->sa_family == AF_INET6)
		len = sizeof(struct sockaddr_in6);
	else
		return -EINVAL;
	memcpy(&dst, remote, len);
	ret = kdat_sockaddr_set_qual(&dst, conn_qual);
	if (ret)
		return ret;
	if (private_data_len && !private_data)
		return -EINVAL;
	return kdat_ep_connect_do(ep, &dst, timeout_us, private_data,
				  private_data_len);
}
EXPORT_SYMBOL_GPL(kdat_ep_connect);

/**
 * kdat_ep_disconnect() - end an Endpoint's connection
 * @ep: the Endpoint
 * @graceful: let the requests in progress complete first (for a while)
 *
 * A graceful disconnect waits up to 5 s for @ep's sends and RDMA
 * requests; the peer's disconnect or an abrupt one of @ep meanwhile ends
 * the wait.
 *
 * Context: process context; may sleep.
 * Return: 0 (also when there is nothing to do), -EBUSY (UNCONNECTED or
 * RESERVED).
 */
int kdat_ep_disconnect(struct kdat_ep *ep, bool graceful)
{
	return kdat_ep_disconnect_do(ep, graceful ? KDAT_CLOSE_GRACEFUL : 0);
}
EXPORT_SYMBOL_GPL(kdat_ep_disconnect);

/**
 * kdat_ep_reset() - a DISCONNECTED Endpoint back to UNCONNECTED
 * @ep: the Endpoint
 *
 * Context: process context; may sleep.
 * Return: 0, -EBUSY (neither DISCONNECTED nor UNCONNECTED), -ENODEV,
 * -EINTR (a fatal signal while an earlier connect of @ep, given up, was
 * still in TCP's connect on iWARP).
 */
int kdat_ep_reset(struct kdat_ep *ep)
{
	return kdat_ep_reset_do(ep);
}
EXPORT_SYMBOL_GPL(kdat_ep_reset);

/**
 * kdat_ep_get_state() - an Endpoint's state
 * @ep: the Endpoint
 *
 * Context: any.
 * Return: its enum kdat_ep_state, which may change at once.
 */
enum kdat_ep_state kdat_ep_get_state(struct kdat_ep *ep)
{
	return READ_ONCE(ep->state);
}
EXPORT_SYMBOL_GPL(kdat_ep_get_state);

/**
 * kdat_ep_handle() - how events name an Endpoint
 * @ep: the Endpoint
 *
 * Context: any.
 * Return: the handle in its DTO and connection events.
 */
u32 kdat_ep_handle(struct kdat_ep *ep)
{
	return ep->obj.handle;
}
EXPORT_SYMBOL_GPL(kdat_ep_handle);

/**
 * kdat_ep_free() - free an Endpoint; its connection is dropped and what it
 *                  has posted is flushed
 * @ep: the Endpoint
 *
 * Context: process context; may sleep.
 * Return: 0, -EBUSY (an RSP reserves it).
 */
int kdat_ep_free(struct kdat_ep *ep)
{
	return kdat_obj_destroy_ptr(&ep->obj);
}
EXPORT_SYMBOL_GPL(kdat_ep_free);

static int kdat_kapi_post_ext(struct kdat_ep *ep, u32 op,
			      const struct kdat_lmr_triplet *iov, u32 num,
			      u64 cookie, const struct kdat_rmr_triplet *remote,
			      const struct kdat_dto_ext *ext,
			      u32 completion_flags)
{
	struct kdat_req req = {
		.op = op,
		.flags = completion_flags,
		.cookie = cookie,
		.num = num,
		.iov = iov,
		.remote = remote,
		.ext = ext,
	};

	return kdat_post_ep(ep, &req);
}

static int kdat_kapi_post(struct kdat_ep *ep, u32 op,
			  const struct kdat_lmr_triplet *iov, u32 num,
			  u64 cookie, const struct kdat_rmr_triplet *remote,
			  u32 completion_flags)
{
	return kdat_kapi_post_ext(ep, op, iov, num, cookie, remote, NULL,
				  completion_flags);
}

/**
 * kdat_ep_post_send() - post a send
 * @ep: the Endpoint
 * @iov: the local segments, in the Endpoint's PZ
 * @num_segments: entries in @iov
 * @cookie: returned in the completion
 * @completion_flags: KDAT_COMPLETION_*, as for KDAT_IOCTL_POST
 *
 * On a DISCONNECTED Endpoint the send is accepted and completes at once
 * with KDAT_DTO_ERR_FLUSHED (the upcall, if any, runs in this call).
 *
 * Context: any (an EVD's upcall too); does not sleep.
 * Return: 0; -EBUSY (not connected); -ENOMEM (queue full); for a segment
 * -EACCES (invalid LMR or privilege), -EPERM (other PZ), -EINVAL.
 */
int kdat_ep_post_send(struct kdat_ep *ep, const struct kdat_lmr_triplet *iov,
		      u32 num_segments, u64 cookie, u32 completion_flags)
{
	return kdat_kapi_post(ep, KDAT_DTO_SEND, iov, num_segments, cookie,
			      NULL, completion_flags);
}
EXPORT_SYMBOL_GPL(kdat_ep_post_send);

/**
 * kdat_ep_post_recv() - post a receive buffer
 * @ep: the Endpoint (not one on an SRQ)
 * @iov: the buffer's segments, filled in order
 * @num_segments: entries in @iov
 * @cookie: returned in the completion
 * @completion_flags: 0 or KDAT_COMPLETION_UNSIGNALLED
 *
 * Context: any (an EVD's upcall too); does not sleep.
 * Return: as kdat_ep_post_send(), allowed in every state.
 */
int kdat_ep_post_recv(struct kdat_ep *ep, const struct kdat_lmr_triplet *iov,
		      u32 num_segments, u64 cookie, u32 completion_flags)
{
	return kdat_kapi_post(ep, KDAT_DTO_RECEIVE, iov, num_segments, cookie,
			      NULL, completion_flags);
}
EXPORT_SYMBOL_GPL(kdat_ep_post_recv);

/**
 * kdat_ep_post_rdma_read() - read remote memory into local segments
 * @ep: the Endpoint
 * @iov: the local segments, filled in order
 * @num_segments: entries in @iov
 * @cookie: returned in the completion
 * @remote: the remote buffer (an RMR context from the peer)
 * @completion_flags: KDAT_COMPLETION_*
 *
 * Context: any (an EVD's upcall too); does not sleep.
 * Return: as kdat_ep_post_send(); -EMSGSIZE when @iov is shorter than
 * @remote.
 */
int kdat_ep_post_rdma_read(struct kdat_ep *ep,
			   const struct kdat_lmr_triplet *iov,
			   u32 num_segments, u64 cookie,
			   const struct kdat_rmr_triplet *remote,
			   u32 completion_flags)
{
	return kdat_kapi_post(ep, KDAT_DTO_RDMA_READ, iov, num_segments,
			      cookie, remote, completion_flags);
}
EXPORT_SYMBOL_GPL(kdat_ep_post_rdma_read);

/**
 * kdat_ep_post_rdma_write() - write local segments to remote memory
 * @ep: the Endpoint
 * @iov: the local segments
 * @num_segments: entries in @iov
 * @cookie: returned in the completion
 * @remote: the remote buffer (an RMR context from the peer)
 * @completion_flags: KDAT_COMPLETION_*
 *
 * Context: any (an EVD's upcall too); does not sleep.
 * Return: as kdat_ep_post_send().
 */
int kdat_ep_post_rdma_write(struct kdat_ep *ep,
			    const struct kdat_lmr_triplet *iov,
			    u32 num_segments, u64 cookie,
			    const struct kdat_rmr_triplet *remote,
			    u32 completion_flags)
{
	return kdat_kapi_post(ep, KDAT_DTO_RDMA_WRITE, iov, num_segments,
			      cookie, remote, completion_flags);
}
EXPORT_SYMBOL_GPL(kdat_ep_post_rdma_write);

/**
 * kdat_ep_post_rdma_write_imm() - write local segments to remote memory,
 *                                 with 4 bytes of immediate data (the DAT
 *                                 IB extensions' dat_ib_post_rdma_write_immed)
 * @ep: the Endpoint
 * @iov: the local segments (none for immediate data alone)
 * @num_segments: entries in @iov
 * @cookie: returned in the completion
 * @remote: the remote buffer (an RMR context from the peer)
 * @imm_data: the immediate data, sent as the bytes of this u32 in memory
 *            order (the peer's event carries them the same way)
 * @completion_flags: KDAT_COMPLETION_*; KDAT_COMPLETION_SOLICITED_WAIT
 *                    wakes a peer waiting for solicited receives
 *
 * The write consumes a receive at the peer: its completion has operation
 * KDAT_DTO_RECV_RDMA_IMM, the write's length and @imm_data in imm_data.
 * Ours has operation KDAT_DTO_RDMA_WRITE_IMM.
 *
 * Context: any (an EVD's upcall too); does not sleep.
 * Return: as kdat_ep_post_send().
 */
int kdat_ep_post_rdma_write_imm(struct kdat_ep *ep,
				const struct kdat_lmr_triplet *iov,
				u32 num_segments, u64 cookie,
				const struct kdat_rmr_triplet *remote,
				u32 imm_data, u32 completion_flags)
{
	struct kdat_dto_ext ext = { .imm_data = imm_data };

	return kdat_kapi_post_ext(ep, KDAT_DTO_RDMA_WRITE_IMM, iov,
				  num_segments, cookie, remote, &ext,
				  completion_flags);
}
EXPORT_SYMBOL_GPL(kdat_ep_post_rdma_write_imm);

/**
 * kdat_ep_post_cmp_swap() - compare 8 bytes of remote memory with a value
 *                           and, when equal, replace them, atomically
 * @ep: the Endpoint
 * @local: one segment of exactly 8 bytes, with local write: receives the
 *         value the remote memory held before
 * @cookie: returned in the completion (operation KDAT_DTO_CMP_SWAP)
 * @remote: the remote 8 bytes: an 8-byte aligned target_address in memory
 *          the peer registered with KDAT_MEM_PRIV_REMOTE_ATOMIC (else the
 *          completion says KDAT_DTO_ERR_REMOTE_ACCESS); its
 *          segment_length is not used
 * @compare: the value compared
 * @swap: the value stored when equal
 * @completion_flags: KDAT_COMPLETION_* but SOLICITED_WAIT
 *
 * Like an RDMA read, an atomic takes one of the Endpoint's
 * max_rdma_read_out while it is out.
 *
 * Context: any (an EVD's upcall too); does not sleep.
 * Return: as kdat_ep_post_send(); -EINVAL (not 8 bytes, not aligned);
 * -EOPNOTSUPP (the device has no atomics).
 */
int kdat_ep_post_cmp_swap(struct kdat_ep *ep,
			  const struct kdat_lmr_triplet *local, u64 cookie,
			  const struct kdat_rmr_triplet *remote, u64 compare,
			  u64 swap, u32 completion_flags)
{
	struct kdat_dto_ext ext = { .compare_add = compare, .swap = swap };

	return kdat_kapi_post_ext(ep, KDAT_DTO_CMP_SWAP, local, 1, cookie,
				  remote, &ext, completion_flags);
}
EXPORT_SYMBOL_GPL(kdat_ep_post_cmp_swap);

/**
 * kdat_ep_post_fetch_add() - add a value to 8 bytes of remote memory,
 *                            atomically
 * @ep: the Endpoint
 * @local: as for kdat_ep_post_cmp_swap(): gets the value before the add
 * @cookie: returned in the completion (operation KDAT_DTO_FETCH_ADD)
 * @remote: as for kdat_ep_post_cmp_swap()
 * @add: the value added (modulo 2^64)
 * @completion_flags: KDAT_COMPLETION_* but SOLICITED_WAIT
 *
 * Context: any (an EVD's upcall too); does not sleep.
 * Return: as kdat_ep_post_cmp_swap().
 */
int kdat_ep_post_fetch_add(struct kdat_ep *ep,
			   const struct kdat_lmr_triplet *local, u64 cookie,
			   const struct kdat_rmr_triplet *remote, u64 add,
			   u32 completion_flags)
{
	struct kdat_dto_ext ext = { .compare_add = add };

	return kdat_kapi_post_ext(ep, KDAT_DTO_FETCH_ADD, local, 1, cookie,
				  remote, &ext, completion_flags);
}
EXPORT_SYMBOL_GPL(kdat_ep_post_fetch_add);

static int kdat_kapi_psp(struct kdat_ia *ia, u64 conn_qual,
			 struct kdat_ep *ep, struct kdat_evd *evd,
			 struct kdat_psp **pspp)
{
	struct kdat_file *kfile = ia->obj.file;
	struct kdat_psp *psp = NULL;
	int ret;

	if (evd->obj.file != kfile || (ep && ep->obj.file != kfile))
		return -EBADF;
	mutex_lock(&kfile->lock);
	ret = kdat_psp_new(kfile, ia, evd, ep, conn_qual, &psp);
	if (!ret)
		kdat_obj_publish_locked(&psp->obj);
	mutex_unlock(&kfile->lock);
	if (ret)
		return ret;
	*pspp = psp;
	return 0;
}

/**
 * kdat_psp_create() - listen for connection requests
 * @ia: the IA
 * @conn_qual: the connection qualifier (an RDMA CM port, mapped as for
 *             kdat_ep_connect())
 * @evd: a KDAT_EVD_CR EVD; each request is a KDAT_EVENT_CONNECTION_REQUEST
 *       naming its CR by cr_handle (kdat_cr_accept(), kdat_cr_reject())
 * @pspp: the PSP, on success
 *
 * Context: process context; may sleep.
 * Return: 0, -EADDRINUSE (qualifier taken), -EINVAL, -ENODEV.
 */
int kdat_psp_create(struct kdat_ia *ia, u64 conn_qual, struct kdat_evd *evd,
		    struct kdat_psp **pspp)
{
	return kdat_kapi_psp(ia, conn_qual, NULL, evd, pspp);
}
EXPORT_SYMBOL_GPL(kdat_psp_create);

/**
 * kdat_rsp_create() - listen for one connection request, for one Endpoint
 * @ia: the IA
 * @conn_qual: the connection qualifier
 * @ep: the UNCONNECTED Endpoint the request is for; it becomes RESERVED
 * @evd: a KDAT_EVD_CR EVD
 * @rspp: the RSP, on success
 *
 * Context: process context; may sleep.
 * Return: as kdat_psp_create(); -EBUSY when @ep is not UNCONNECTED.
 */
int kdat_rsp_create(struct kdat_ia *ia, u64 conn_qual, struct kdat_ep *ep,
		    struct kdat_evd *evd, struct kdat_psp **rspp)
{
	return kdat_kapi_psp(ia, conn_qual, ep, evd, rspp);
}
EXPORT_SYMBOL_GPL(kdat_rsp_create);

/**
 * kdat_psp_handle() - how events name a PSP or RSP
 * @psp: the PSP
 *
 * Context: any.
 * Return: the handle in its connection request events.
 */
u32 kdat_psp_handle(struct kdat_psp *psp)
{
	return psp->obj.handle;
}
EXPORT_SYMBOL_GPL(kdat_psp_handle);

/**
 * kdat_psp_free() - stop listening
 * @psp: the PSP or RSP
 *
 * Context: process context; may sleep.
 * Return: 0, -EBUSY (a request of it is not answered yet).
 */
int kdat_psp_free(struct kdat_psp *psp)
{
	return kdat_obj_destroy_ptr(&psp->obj);
}
EXPORT_SYMBOL_GPL(kdat_psp_free);

/**
 * kdat_cr_query() - what a connection request says
 * @ia: the IA of its PSP
 * @cr_handle: the request, from its event
 * @remote: the requester's address, or NULL
 * @conn_qual: the qualifier it arrived on, or NULL
 * @private_data: KDAT_PRIVATE_DATA_BUF bytes for the requester's private
 *                data, or NULL
 * @private_data_len: its length, or NULL
 *
 * Context: process context.
 * Return: 0, -EBADF (no such request).
 */
int kdat_cr_query(struct kdat_ia *ia, u32 cr_handle,
		  struct sockaddr_storage *remote, u64 *conn_qual,
		  void *private_data, u32 *private_data_len)
{
	struct kdat_cr *cr;

	cr = kdat_get(ia->obj.file, cr_handle, struct kdat_cr, KDAT_OBJ_CR);
	if (!cr)
		return -EBADF;
	if (remote)
		*remote = cr->remote;
	if (conn_qual)
		*conn_qual = cr->conn_qual;
	if (private_data)
		memcpy(private_data, cr->pdata, cr->pdata_len);
	if (private_data_len)
		*private_data_len = cr->pdata_len;
	kdat_obj_put(&cr->obj);
	return 0;
}
EXPORT_SYMBOL_GPL(kdat_cr_query);

/**
 * kdat_cr_accept() - accept a connection request with an Endpoint
 * @ia: the IA of its PSP
 * @cr_handle: the request, from its event
 * @ep: an UNCONNECTED Endpoint (an RSP's own, RESERVED, for an RSP's)
 * @private_data: sent with the reply, or NULL
 * @private_data_len: its length
 *
 * The request is used up unless the call fails with -EBUSY, -EINVAL or
 * -EBADF (no such request, or @ep has no connection EVD).
 * The connection is established when @ep's connection EVD says so.
 *
 * Context: process context; may sleep.
 * Return: 0, -EBADF, -EBUSY (@ep's state), -EINVAL, -ECONNABORTED (the
 * request was rejected), -ENODEV.
 */
int kdat_cr_accept(struct kdat_ia *ia, u32 cr_handle, struct kdat_ep *ep,
		   const void *private_data, u8 private_data_len)
{
	if (ep->obj.file != ia->obj.file)
		return -EBADF;
	if (private_data_len && !private_data)
		return -EINVAL;
	return kdat_cr_reply_do(ia->obj.file, cr_handle, ep->obj.handle,
				private_data, private_data_len, true);
}
EXPORT_SYMBOL_GPL(kdat_cr_accept);

/**
 * kdat_cr_reject() - reject a connection request
 * @ia: the IA of its PSP
 * @cr_handle: the request, from its event
 * @private_data: sent with the rejection, or NULL (after the 4-byte
 *                version word OFA DAPL's provider puts before it; the
 *                peer's DAT consumer sees only this)
 * @private_data_len: its length (at most KDAT_MAX_PRIVATE_DATA)
 *
 * Context: process context; may sleep.
 * Return: 0, -EBADF, -ENODEV.
 */
int kdat_cr_reject(struct kdat_ia *ia, u32 cr_handle,
		   const void *private_data, u8 private_data_len)
{
	if (private_data_len && !private_data)
		return -EINVAL;
	return kdat_cr_reply_do(ia->obj.file, cr_handle, 0, private_data,
				private_data_len, false);
}
EXPORT_SYMBOL_GPL(kdat_cr_reject);

/**
 * kdat_srq_create() - create a Shared Receive Queue
 * @pz: its PZ
 * @max_recv_dtos: buffers it holds (1..4096)
 * @max_recv_iov: segments per buffer (0 means 1; up to 32)
 * @srqp: the SRQ, on success
 *
 * Context: process context; may sleep.
 * Return: 0, -EINVAL, -ENOMEM (sizes beyond kdat or the device), -ENODEV.
 */
int kdat_srq_create(struct kdat_pz *pz, u32 max_recv_dtos, u32 max_recv_iov,
		    struct kdat_srq **srqp)
{
	struct kdat_file *kfile = pz->obj.file;
	struct kdat_srq *srq = NULL;
	int ret;

	mutex_lock(&kfile->lock);
	ret = kdat_srq_new(kfile, pz, max_recv_dtos, max_recv_iov, 0, &srq);
	ret = kdat_kapi_publish(kfile, ret, ret ? NULL : &srq->obj);
	if (!ret)
		*srqp = srq;
	return ret;
}
EXPORT_SYMBOL_GPL(kdat_srq_create);

/**
 * kdat_srq_post_recv() - give an SRQ a receive buffer
 * @srq: the SRQ
 * @iov: the buffer's segments
 * @num_segments: entries in @iov
 * @cookie: returned in the completion, on the receive EVD of the Endpoint
 *          that took the buffer
 *
 * Context: any (an EVD's upcall too); does not sleep.
 * Return: 0; -ENOMEM (full); as kdat_ep_post_recv() for the segments.
 */
int kdat_srq_post_recv(struct kdat_srq *srq,
		       const struct kdat_lmr_triplet *iov, u32 num_segments,
		       u64 cookie)
{
	struct kdat_req req = {
		.op = KDAT_DTO_RECEIVE,
		.cookie = cookie,
		.num = num_segments,
		.iov = iov,
	};

	return kdat_post_srq(srq, &req);
}
EXPORT_SYMBOL_GPL(kdat_srq_post_recv);

/**
 * kdat_srq_free() - free an SRQ; buffers still posted go with it
 * @srq: the SRQ
 *
 * Context: process context; may sleep.
 * Return: 0, -EBUSY (Endpoints use it).
 */
int kdat_srq_free(struct kdat_srq *srq)
{
	return kdat_obj_destroy_ptr(&srq->obj);
}
EXPORT_SYMBOL_GPL(kdat_srq_free);
