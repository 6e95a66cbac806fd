// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The DAT calls libdat exports, but for the registry's (dat_registry.c:
 * dat_ia_openv, dat_ia_close, dat_registry_*, dats_get_ia_handle,
 * dat_extension_op) and dat_strerror: each goes to the provider its
 * handle belongs to. A handle of another provider (OFA's libdaplofa,
 * loaded through dat.conf) goes to that provider's DAT_PROVIDER table;
 * any other, kdat's or none, to kdat's kd_<call>, which refuses what is
 * not a live kdat object of the right kind. The handle that decides is
 * the first argument: the object's own, or for a create its IA's (or
 * PZ's, for an RMR).
 */
#include "dat_internal.h"

/*
 * Return what the provider of @h answers to dat_<fn>(...): another
 * provider's <fn>_func (DAT_NOT_IMPLEMENTED when its table has none), or
 * kd_<fn>'s, as kd_answer() gives it; @kind is @h's (KD_KIND_*). A NULL
 * @h has no provider: the registry answers, as OFA's does.
 */
#define KD_CALL(h, kind, fn, ...)					\
	do {								\
		const DAT_PROVIDER *p_ = kd_foreign(h);			\
									\
		if (!(h))						\
			return KD_ANSWER(DAT_INVALID_HANDLE, h, kind);	\
		if (!p_)						\
			return KD_ANSWER(kd_##fn(__VA_ARGS__), h, kind); \
		if (!p_->fn##_func)					\
			return KD_ERR(DAT_NOT_IMPLEMENTED, 0);		\
		return p_->fn##_func(__VA_ARGS__);			\
	} while (0)

LIBDAT_API DAT_RETURN dat_ia_query(DAT_IA_HANDLE ia, DAT_EVD_HANDLE *async_evd,
				   DAT_IA_ATTR_MASK ia_mask,
				   DAT_IA_ATTR *ia_attr,
				   DAT_PROVIDER_ATTR_MASK pr_mask,
				   DAT_PROVIDER_ATTR *pr_attr)
{
	KD_CALL(ia, IA, ia_query, ia, async_evd, ia_mask, ia_attr, pr_mask,
		pr_attr);
}

LIBDAT_API DAT_RETURN dat_set_consumer_context(DAT_HANDLE h,
					       DAT_CONTEXT context)
{
	KD_CALL(h, ANY, set_consumer_context, h, context);
}

LIBDAT_API DAT_RETURN dat_get_consumer_context(DAT_HANDLE h,
					       DAT_CONTEXT *context)
{
	KD_CALL(h, ANY, get_consumer_context, h, context);
}

LIBDAT_API DAT_RETURN dat_get_handle_type(DAT_HANDLE h, DAT_HANDLE_TYPE *type)
{
	KD_CALL(h, ANY, get_handle_type, h, type);
}

LIBDAT_API DAT_RETURN dat_cr_query(DAT_CR_HANDLE cr, DAT_CR_PARAM_MASK mask,
				   DAT_CR_PARAM *param)
{
	KD_CALL(cr, CR, cr_query, cr, mask, param);
}

LIBDAT_API DAT_RETURN dat_cr_accept(DAT_CR_HANDLE cr, DAT_EP_HANDLE ep,
				    DAT_COUNT pdata_size, const DAT_PVOID pdata)
{
	KD_CALL(cr, CR, cr_accept, cr, ep, pdata_size, pdata);
}

LIBDAT_API DAT_RETURN dat_cr_reject(DAT_CR_HANDLE cr, DAT_COUNT pdata_size,
				    const DAT_PVOID pdata)
{
	KD_CALL(cr, CR, cr_reject, cr, pdata_size, pdata);
}

LIBDAT_API DAT_RETURN dat_cr_handoff(DAT_CR_HANDLE cr, DAT_CONN_QUAL handoff)
{
	KD_CALL(cr, CR, cr_handoff, cr, handoff);
}

LIBDAT_API DAT_RETURN dat_evd_create(DAT_IA_HANDLE ia, DAT_COUNT qlen,
				     DAT_CNO_HANDLE cno, DAT_EVD_FLAGS flags,
				     DAT_EVD_HANDLE *evd)
{
	KD_CALL(ia, IA, evd_create, ia, qlen, cno, flags, evd);
}

LIBDAT_API DAT_RETURN dat_evd_query(DAT_EVD_HANDLE evd, DAT_EVD_PARAM_MASK mask,
				    DAT_EVD_PARAM *param)
{
	KD_CALL(evd, EVD, evd_query, evd, mask, param);
}

LIBDAT_API DAT_RETURN dat_evd_modify_cno(DAT_EVD_HANDLE evd, DAT_CNO_HANDLE cno)
{
	KD_CALL(evd, EVD, evd_modify_cno, evd, cno);
}

LIBDAT_API DAT_RETURN dat_evd_enable(DAT_EVD_HANDLE evd)
{
	KD_CALL(evd, EVD, evd_enable, evd);
}

LIBDAT_API DAT_RETURN dat_evd_disable(DAT_EVD_HANDLE evd)
{
	KD_CALL(evd, EVD, evd_disable, evd);
}

LIBDAT_API DAT_RETURN dat_evd_wait(DAT_EVD_HANDLE evd, DAT_TIMEOUT timeout,
				   DAT_COUNT threshold, DAT_EVENT *event,
				   DAT_COUNT *nmore)
{
	KD_CALL(evd, EVD, evd_wait, evd, timeout, threshold, event, nmore);
}

LIBDAT_API DAT_RETURN dat_evd_resize(DAT_EVD_HANDLE evd, DAT_COUNT qlen)
{
	KD_CALL(evd, EVD, evd_resize, evd, qlen);
}

LIBDAT_API DAT_RETURN dat_evd_post_se(DAT_EVD_HANDLE evd,
				      const DAT_EVENT *event)
{
	KD_CALL(evd, EVD, evd_post_se, evd, event);
}

LIBDAT_API DAT_RETURN dat_evd_dequeue(DAT_EVD_HANDLE evd, DAT_EVENT *event)
{
	KD_CALL(evd, EVD, evd_dequeue, evd, event);
}

LIBDAT_API DAT_RETURN dat_evd_free(DAT_EVD_HANDLE evd)
{
	KD_CALL(evd, EVD, evd_free, evd);
}

LIBDAT_API DAT_RETURN dat_evd_set_unwaitable(DAT_EVD_HANDLE evd)
{
	KD_CALL(evd, EVD, evd_set_unwaitable, evd);
}

LIBDAT_API DAT_RETURN dat_evd_clear_unwaitable(DAT_EVD_HANDLE evd)
{
	KD_CALL(evd, EVD, evd_clear_unwaitable, evd);
}

LIBDAT_API DAT_RETURN dat_cno_create(DAT_IA_HANDLE ia,
				     DAT_OS_WAIT_PROXY_AGENT agent,
				     DAT_CNO_HANDLE *cno)
{
	KD_CALL(ia, IA, cno_create, ia, agent, cno);
}

LIBDAT_API DAT_RETURN dat_cno_modify_agent(DAT_CNO_HANDLE cno,
					   DAT_OS_WAIT_PROXY_AGENT agent)
{
	KD_CALL(cno, CNO, cno_modify_agent, cno, agent);
}

LIBDAT_API DAT_RETURN dat_cno_query(DAT_CNO_HANDLE cno, DAT_CNO_PARAM_MASK mask,
				    DAT_CNO_PARAM *param)
{
	KD_CALL(cno, CNO, cno_query, cno, mask, param);
}

LIBDAT_API DAT_RETURN dat_cno_free(DAT_CNO_HANDLE cno)
{
	KD_CALL(cno, CNO, cno_free, cno);
}

LIBDAT_API DAT_RETURN dat_cno_wait(DAT_CNO_HANDLE cno, DAT_TIMEOUT timeout,
				   DAT_EVD_HANDLE *evd)
{
	KD_CALL(cno, CNO, cno_wait, cno, timeout, evd);
}

LIBDAT_API DAT_RETURN dat_cno_fd_create(DAT_IA_HANDLE ia, DAT_FD *fd,
					DAT_CNO_HANDLE *cno)
{
	KD_CALL(ia, IA, cno_fd_create, ia, fd, cno);
}

LIBDAT_API DAT_RETURN dat_cno_trigger(DAT_CNO_HANDLE cno, DAT_EVD_HANDLE *evd)
{
	KD_CALL(cno, CNO, cno_trigger, cno, evd);
}

LIBDAT_API DAT_RETURN dat_ep_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
				    DAT_EVD_HANDLE recv_evd,
				    DAT_EVD_HANDLE request_evd,
				    DAT_EVD_HANDLE connect_evd,
				    const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep)
{
	KD_CALL(ia, IA, ep_create, ia, pz, recv_evd, request_evd, connect_evd, attr,
		ep);
}

LIBDAT_API DAT_RETURN dat_ep_create_with_srq(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
					     DAT_EVD_HANDLE recv_evd,
					     DAT_EVD_HANDLE request_evd,
					     DAT_EVD_HANDLE connect_evd,
					     DAT_SRQ_HANDLE srq,
					     const DAT_EP_ATTR *attr,
					     DAT_EP_HANDLE *ep)
{
	KD_CALL(ia, IA, ep_create_with_srq, ia, pz, recv_evd, request_evd,
		connect_evd, srq, attr, ep);
}

LIBDAT_API DAT_RETURN dat_ep_query(DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask,
				   DAT_EP_PARAM *param)
{
	KD_CALL(ep, EP, ep_query, ep, mask, param);
}

LIBDAT_API DAT_RETURN dat_ep_modify(DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask,
				    const DAT_EP_PARAM *param)
{
	KD_CALL(ep, EP, ep_modify, ep, mask, param);
}

LIBDAT_API DAT_RETURN dat_ep_connect(DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR addr,
				     DAT_CONN_QUAL qual, DAT_TIMEOUT timeout,
				     DAT_COUNT pdata_size,
				     const DAT_PVOID pdata, DAT_QOS qos,
				     DAT_CONNECT_FLAGS flags)
{
	KD_CALL(ep, EP, ep_connect, ep, addr, qual, timeout, pdata_size, pdata, qos,
		flags);
}

LIBDAT_API DAT_RETURN dat_ep_dup_connect(DAT_EP_HANDLE ep, DAT_EP_HANDLE dup,
					 DAT_TIMEOUT timeout,
					 DAT_COUNT pdata_size,
					 const DAT_PVOID pdata, DAT_QOS qos)
{
	KD_CALL(ep, EP, ep_dup_connect, ep, dup, timeout, pdata_size, pdata, qos);
}

LIBDAT_API DAT_RETURN dat_ep_common_connect(DAT_EP_HANDLE ep,
					    DAT_IA_ADDRESS_PTR addr,
					    DAT_TIMEOUT timeout,
					    DAT_COUNT pdata_size,
					    const DAT_PVOID pdata)
{
	KD_CALL(ep, EP, ep_common_connect, ep, addr, timeout, pdata_size, pdata);
}

LIBDAT_API DAT_RETURN dat_ep_disconnect(DAT_EP_HANDLE ep, DAT_CLOSE_FLAGS flags)
{
	KD_CALL(ep, EP, ep_disconnect, ep, flags);
}

LIBDAT_API DAT_RETURN dat_ep_post_send(DAT_EP_HANDLE ep, DAT_COUNT num,
				       DAT_LMR_TRIPLET *iov,
				       DAT_DTO_COOKIE cookie,
				       DAT_COMPLETION_FLAGS flags)
{
	KD_CALL(ep, EP, ep_post_send, ep, num, iov, cookie, flags);
}

LIBDAT_API DAT_RETURN
dat_ep_post_send_with_invalidate(DAT_EP_HANDLE ep, DAT_COUNT num,
				 DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
				 DAT_COMPLETION_FLAGS flags,
				 DAT_BOOLEAN invalidate,
				 DAT_RMR_CONTEXT rmr_context)
{
	KD_CALL(ep, EP, ep_post_send_with_invalidate, ep, num, iov, cookie, flags,
		invalidate, rmr_context);
}

LIBDAT_API DAT_RETURN dat_ep_post_recv(DAT_EP_HANDLE ep, DAT_COUNT num,
				       DAT_LMR_TRIPLET *iov,
				       DAT_DTO_COOKIE cookie,
				       DAT_COMPLETION_FLAGS flags)
{
	KD_CALL(ep, EP, ep_post_recv, ep, num, iov, cookie, flags);
}

LIBDAT_API DAT_RETURN dat_ep_post_rdma_read(DAT_EP_HANDLE ep, DAT_COUNT num,
					    DAT_LMR_TRIPLET *iov,
					    DAT_DTO_COOKIE cookie,
					    const DAT_RMR_TRIPLET *remote,
					    DAT_COMPLETION_FLAGS flags)
{
	KD_CALL(ep, EP, ep_post_rdma_read, ep, num, iov, cookie, remote, flags);
}

LIBDAT_API DAT_RETURN
dat_ep_post_rdma_read_to_rmr(DAT_EP_HANDLE ep, const DAT_RMR_TRIPLET *local,
			     DAT_DTO_COOKIE cookie,
			     const DAT_RMR_TRIPLET *remote,
			     DAT_COMPLETION_FLAGS flags)
{
	KD_CALL(ep, EP, ep_post_rdma_read_to_rmr, ep, local, cookie, remote, flags);
}

LIBDAT_API DAT_RETURN dat_ep_post_rdma_write(DAT_EP_HANDLE ep, DAT_COUNT num,
					     DAT_LMR_TRIPLET *iov,
					     DAT_DTO_COOKIE cookie,
					     const DAT_RMR_TRIPLET *remote,
					     DAT_COMPLETION_FLAGS flags)
{
	KD_CALL(ep, EP, ep_post_rdma_write, ep, num, iov, cookie, remote, flags);
}

LIBDAT_API DAT_RETURN dat_ep_get_status(DAT_EP_HANDLE ep, DAT_EP_STATE *state,
					DAT_BOOLEAN *recv_idle,
					DAT_BOOLEAN *request_idle)
{
	KD_CALL(ep, EP, ep_get_status, ep, state, recv_idle, request_idle);
}

LIBDAT_API DAT_RETURN dat_ep_free(DAT_EP_HANDLE ep)
{
	KD_CALL(ep, EP, ep_free, ep);
}

LIBDAT_API DAT_RETURN dat_ep_reset(DAT_EP_HANDLE ep)
{
	KD_CALL(ep, EP, ep_reset, ep);
}

LIBDAT_API DAT_RETURN dat_ep_recv_query(DAT_EP_HANDLE ep, DAT_COUNT *nbufs,
					DAT_COUNT *span)
{
	KD_CALL(ep, EP, ep_recv_query, ep, nbufs, span);
}

LIBDAT_API DAT_RETURN dat_ep_set_watermark(DAT_EP_HANDLE ep, DAT_COUNT soft,
					   DAT_COUNT hard)
{
	KD_CALL(ep, EP, ep_set_watermark, ep, soft, hard);
}

LIBDAT_API DAT_RETURN dat_lmr_create(DAT_IA_HANDLE ia, DAT_MEM_TYPE type,
				     DAT_REGION_DESCRIPTION region,
				     DAT_VLEN length, DAT_PZ_HANDLE pz,
				     DAT_MEM_PRIV_FLAGS priv,
				     DAT_VA_TYPE va_type, DAT_LMR_HANDLE *lmr,
				     DAT_LMR_CONTEXT *lmr_context,
				     DAT_RMR_CONTEXT *rmr_context,
				     DAT_VLEN *reg_length, DAT_VADDR *reg_addr)
{
	KD_CALL(ia, IA, lmr_create, ia, type, region, length, pz, priv, va_type,
		lmr, lmr_context, rmr_context, reg_length, reg_addr);
}

LIBDAT_API DAT_RETURN dat_lmr_query(DAT_LMR_HANDLE lmr, DAT_LMR_PARAM_MASK mask,
				    DAT_LMR_PARAM *param)
{
	KD_CALL(lmr, LMR, lmr_query, lmr, mask, param);
}

LIBDAT_API DAT_RETURN dat_lmr_free(DAT_LMR_HANDLE lmr)
{
	KD_CALL(lmr, LMR, lmr_free, lmr);
}

LIBDAT_API DAT_RETURN dat_lmr_sync_rdma_read(DAT_IA_HANDLE ia,
					     const DAT_LMR_TRIPLET *iov,
					     DAT_VLEN num)
{
	KD_CALL(ia, IA, lmr_sync_rdma_read, ia, iov, num);
}

LIBDAT_API DAT_RETURN dat_lmr_sync_rdma_write(DAT_IA_HANDLE ia,
					      const DAT_LMR_TRIPLET *iov,
					      DAT_VLEN num)
{
	KD_CALL(ia, IA, lmr_sync_rdma_write, ia, iov, num);
}

LIBDAT_API DAT_RETURN dat_rmr_create(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *rmr)
{
	KD_CALL(pz, PZ, rmr_create, pz, rmr);
}

LIBDAT_API DAT_RETURN dat_rmr_create_for_ep(DAT_PZ_HANDLE pz,
					    DAT_RMR_HANDLE *rmr)
{
	KD_CALL(pz, PZ, rmr_create_for_ep, pz, rmr);
}

LIBDAT_API DAT_RETURN dat_rmr_query(DAT_RMR_HANDLE rmr, DAT_RMR_PARAM_MASK mask,
				    DAT_RMR_PARAM *param)
{
	KD_CALL(rmr, RMR, rmr_query, rmr, mask, param);
}

LIBDAT_API DAT_RETURN dat_rmr_bind(DAT_RMR_HANDLE rmr, DAT_LMR_HANDLE lmr,
				   const DAT_LMR_TRIPLET *triplet,
				   DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE va_type,
				   DAT_EP_HANDLE ep, DAT_RMR_COOKIE cookie,
				   DAT_COMPLETION_FLAGS flags,
				   DAT_RMR_CONTEXT *context)
{
	KD_CALL(rmr, RMR, rmr_bind, rmr, lmr, triplet, priv, va_type, ep, cookie,
		flags, context);
}

LIBDAT_API DAT_RETURN dat_rmr_free(DAT_RMR_HANDLE rmr)
{
	KD_CALL(rmr, RMR, rmr_free, rmr);
}

LIBDAT_API DAT_RETURN dat_psp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL qual,
				     DAT_EVD_HANDLE evd, DAT_PSP_FLAGS flags,
				     DAT_PSP_HANDLE *psp)
{
	KD_CALL(ia, IA, psp_create, ia, qual, evd, flags, psp);
}

LIBDAT_API DAT_RETURN dat_psp_create_any(DAT_IA_HANDLE ia, DAT_CONN_QUAL *qual,
					 DAT_EVD_HANDLE evd,
					 DAT_PSP_FLAGS flags,
					 DAT_PSP_HANDLE *psp)
{
	KD_CALL(ia, IA, psp_create_any, ia, qual, evd, flags, psp);
}

LIBDAT_API DAT_RETURN dat_psp_query(DAT_PSP_HANDLE psp, DAT_PSP_PARAM_MASK mask,
				    DAT_PSP_PARAM *param)
{
	KD_CALL(psp, PSP, psp_query, psp, mask, param);
}

LIBDAT_API DAT_RETURN dat_psp_free(DAT_PSP_HANDLE psp)
{
	KD_CALL(psp, PSP, psp_free, psp);
}

LIBDAT_API DAT_RETURN dat_rsp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL qual,
				     DAT_EP_HANDLE ep, DAT_EVD_HANDLE evd,
				     DAT_RSP_HANDLE *rsp)
{
	KD_CALL(ia, IA, rsp_create, ia, qual, ep, evd, rsp);
}

LIBDAT_API DAT_RETURN dat_rsp_query(DAT_RSP_HANDLE rsp, DAT_RSP_PARAM_MASK mask,
				    DAT_RSP_PARAM *param)
{
	KD_CALL(rsp, RSP, rsp_query, rsp, mask, param);
}

LIBDAT_API DAT_RETURN dat_rsp_free(DAT_RSP_HANDLE rsp)
{
	KD_CALL(rsp, RSP, rsp_free, rsp);
}

LIBDAT_API DAT_RETURN dat_csp_create(DAT_IA_HANDLE ia, DAT_COMM *comm,
				     DAT_IA_ADDRESS_PTR addr,
				     DAT_EVD_HANDLE evd, DAT_CSP_HANDLE *csp)
{
	KD_CALL(ia, IA, csp_create, ia, comm, addr, evd, csp);
}

LIBDAT_API DAT_RETURN dat_csp_query(DAT_CSP_HANDLE csp, DAT_CSP_PARAM_MASK mask,
				    DAT_CSP_PARAM *param)
{
	KD_CALL(csp, CSP, csp_query, csp, mask, param);
}

LIBDAT_API DAT_RETURN dat_csp_free(DAT_CSP_HANDLE csp)
{
	KD_CALL(csp, CSP, csp_free, csp);
}

LIBDAT_API DAT_RETURN dat_pz_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE *pz)
{
	KD_CALL(ia, IA, pz_create, ia, pz);
}

LIBDAT_API DAT_RETURN dat_pz_query(DAT_PZ_HANDLE pz, DAT_PZ_PARAM_MASK mask,
				   DAT_PZ_PARAM *param)
{
	KD_CALL(pz, PZ, pz_query, pz, mask, param);
}

LIBDAT_API DAT_RETURN dat_pz_free(DAT_PZ_HANDLE pz)
{
	KD_CALL(pz, PZ, pz_free, pz);
}

LIBDAT_API DAT_RETURN dat_srq_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
				     DAT_SRQ_ATTR *attr, DAT_SRQ_HANDLE *srq)
{
	KD_CALL(ia, IA, srq_create, ia, pz, attr, srq);
}

LIBDAT_API DAT_RETURN dat_srq_free(DAT_SRQ_HANDLE srq)
{
	KD_CALL(srq, SRQ, srq_free, srq);
}

LIBDAT_API DAT_RETURN dat_srq_post_recv(DAT_SRQ_HANDLE srq, DAT_COUNT num,
					DAT_LMR_TRIPLET *iov,
					DAT_DTO_COOKIE cookie)
{
	KD_CALL(srq, SRQ, srq_post_recv, srq, num, iov, cookie);
}

LIBDAT_API DAT_RETURN dat_srq_query(DAT_SRQ_HANDLE srq, DAT_SRQ_PARAM_MASK mask,
				    DAT_SRQ_PARAM *param)
{
	KD_CALL(srq, SRQ, srq_query, srq, mask, param);
}

LIBDAT_API DAT_RETURN dat_srq_resize(DAT_SRQ_HANDLE srq, DAT_COUNT max)
{
	KD_CALL(srq, SRQ, srq_resize, srq, max);
}

LIBDAT_API DAT_RETURN dat_srq_set_lw(DAT_SRQ_HANDLE srq, DAT_COUNT lw)
{
	KD_CALL(srq, SRQ, srq_set_lw, srq, lw);
}

/* Not in DAT's headers; its table member is ia_ha_related_func. */
LIBDAT_API DAT_RETURN dat_ia_ha(DAT_IA_HANDLE ia, const DAT_NAME_PTR name,
				DAT_BOOLEAN *answer)
{
	const DAT_PROVIDER *p = kd_foreign(ia);

	if (!p)
		return KD_ANSWER(kd_ia_ha(ia, name, answer), ia, IA);
	if (!p->ia_ha_related_func)
		return KD_ERR(DAT_NOT_IMPLEMENTED, 0);
	return p->ia_ha_related_func(ia, name, answer);
}
