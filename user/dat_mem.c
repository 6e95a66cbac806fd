// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libdat Protection Zones, LMRs and RMRs.
 */
#include <stdlib.h>
#include <string.h>

#include "dat_internal.h"

DAT_RETURN kd_pz_create(DAT_IA_HANDLE ia_handle,
			DAT_PZ_HANDLE *pz_handle)
{
	struct kdat_pz_create c = { .size = sizeof(c) };
	struct kd_ia *ia = ia_handle;
	struct kd_pz *pz;
	DAT_RETURN ret;

	if (!kd_check(ia, DAT_HANDLE_TYPE_IA))
		return DAT_INVALID_HANDLE;
	if (!pz_handle)
		return DAT_INVALID_PARAMETER;
	c.ia_handle = ia->obj.kh;
	ret = kd_ioctl(ia, KDAT_IOCTL_PZ_CREATE, &c);
	if (ret)
		return ret;
	pz = calloc(1, sizeof(*pz));
	if (!pz) {
		kd_destroy_kh(ia, c.out_pz_handle);
		return DAT_INSUFFICIENT_RESOURCES;
	}
	if (!kd_obj_init(&pz->obj, ia, DAT_HANDLE_TYPE_PZ, c.out_pz_handle))
		return kd_obj_abandon(&pz->obj);
	*pz_handle = pz;
	return DAT_SUCCESS;
}

DAT_RETURN kd_pz_free(DAT_PZ_HANDLE pz_handle)
{
	if (!kd_check(pz_handle, DAT_HANDLE_TYPE_PZ))
		return DAT_INVALID_HANDLE;
	return kd_destroy(pz_handle);
}

/* ---- queries of what libdat keeps ---------------------------------- */

DAT_RETURN kd_pz_query(DAT_PZ_HANDLE pz_handle,
		       DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM *param)
{
	struct kd_pz *pz = pz_handle;

	(void)mask;
	if (!kd_check(pz, DAT_HANDLE_TYPE_PZ))
		return DAT_INVALID_HANDLE;
	if (!param)
		return DAT_INVALID_PARAMETER;
	param->ia_handle = pz->obj.ia;
	return DAT_SUCCESS;
}

DAT_RETURN kd_lmr_create(DAT_IA_HANDLE ia_handle,
			 DAT_MEM_TYPE mem_type,
			 DAT_REGION_DESCRIPTION region,
			 DAT_VLEN length, DAT_PZ_HANDLE pz_handle,
			 DAT_MEM_PRIV_FLAGS privileges,
			 DAT_VA_TYPE va_type,
			 DAT_LMR_HANDLE *lmr_handle,
			 DAT_LMR_CONTEXT *lmr_context,
			 DAT_RMR_CONTEXT *rmr_context,
			 DAT_VLEN *registered_length,
			 DAT_VADDR *registered_address)
{
	struct kdat_lmr_create c = { .size = sizeof(c) };
	struct kd_ia *ia = ia_handle;
	struct kd_pz *pz = pz_handle;
	struct kd_lmr *lmr;
	DAT_RETURN ret;

	if (!kd_check(ia, DAT_HANDLE_TYPE_IA))
		return DAT_INVALID_HANDLE;
	if (!kd_check(pz, DAT_HANDLE_TYPE_PZ) || pz->obj.ia != ia)
		return DAT_INVALID_HANDLE;
	if (va_type != DAT_VA_TYPE_VA)
		return DAT_INVALID_PARAMETER;
	if (!lmr_handle)
		return DAT_INVALID_PARAMETER;
	c.pz_handle = pz->obj.kh;
	switch (mem_type) {
	case DAT_MEM_TYPE_VIRTUAL:
		c.addr = (uintptr_t)region.for_va;
		break;
	case DAT_MEM_TYPE_LMR: {
		/* The memory of another LMR of this process, all of it. */
		const struct kd_lmr *src = region.for_lmr_handle;

		if (!kd_check(src, DAT_HANDLE_TYPE_LMR))
			return DAT_INVALID_HANDLE;
		c.addr = src->addr;
		length = src->length;
		break;
	}
	default:
		/* Shared (cross-process) and platform memory: not offered. */
		return DAT_NOT_IMPLEMENTED;
	}
	c.length = length;
	c.mem_priv = privileges;
	ret = kd_ioctl(ia, KDAT_IOCTL_LMR_CREATE, &c);
	if (ret)
		return ret;
	lmr = calloc(1, sizeof(*lmr));
	if (!lmr) {
		kd_destroy_kh(ia, c.out_lmr_handle);
		return DAT_INSUFFICIENT_RESOURCES;
	}
	lmr->pz = pz;
	lmr->mem_type = mem_type;
	lmr->region = region;
	lmr->addr = c.addr;
	lmr->length = length;
	lmr->priv = privileges;
	lmr->lmr_context = c.out_lmr_context;
	lmr->rmr_context = c.out_rmr_context;
	if (!kd_obj_init(&lmr->obj, ia, DAT_HANDLE_TYPE_LMR, c.out_lmr_handle))
		return kd_obj_abandon(&lmr->obj);
	*lmr_handle = lmr;
	if (lmr_context)
		*lmr_context = lmr->lmr_context;
	if (rmr_context)
		*rmr_context = lmr->rmr_context;
	if (registered_length)
		*registered_length = length;
	if (registered_address)
		*registered_address = c.addr;
	return DAT_SUCCESS;
}

DAT_RETURN kd_lmr_free(DAT_LMR_HANDLE lmr_handle)
{
	if (!kd_check(lmr_handle, DAT_HANDLE_TYPE_LMR))
		return DAT_INVALID_HANDLE;
	return kd_destroy(lmr_handle);
}

DAT_RETURN kd_lmr_query(DAT_LMR_HANDLE lmr_handle,
			DAT_LMR_PARAM_MASK mask,
			DAT_LMR_PARAM *param)
{
	struct kd_lmr *lmr = lmr_handle;

	(void)mask;
	if (!kd_check(lmr, DAT_HANDLE_TYPE_LMR))
		return DAT_INVALID_HANDLE;
	if (!param)
		return DAT_INVALID_PARAMETER;
	memset(param, 0, sizeof(*param));
	param->ia_handle = lmr->obj.ia;
	param->mem_type = lmr->mem_type;
	param->region_desc = lmr->region;
	param->length = lmr->length;
	param->pz_handle = lmr->pz;
	param->mem_priv = lmr->priv;
	param->va_type = DAT_VA_TYPE_VA;
	param->lmr_context = lmr->lmr_context;
	param->rmr_context = lmr->rmr_context;
	param->registered_size = lmr->length;
	param->registered_address = lmr->addr;
	return DAT_SUCCESS;
}

/* Memory is coherent for kdat's devices: nothing to synchronise. */
DAT_RETURN kd_lmr_sync_rdma_read(DAT_IA_HANDLE ia,
				 const DAT_LMR_TRIPLET *iov,
				 DAT_VLEN n)
{
	if (!kd_check(ia, DAT_HANDLE_TYPE_IA))
		return DAT_INVALID_HANDLE;
	return iov || !n ? DAT_SUCCESS : DAT_INVALID_PARAMETER;
}

DAT_RETURN kd_lmr_sync_rdma_write(DAT_IA_HANDLE ia,
				  const DAT_LMR_TRIPLET *iov,
				  DAT_VLEN n)
{
	return kd_lmr_sync_rdma_read(ia, iov, n);
}

DAT_RETURN kd_rmr_create(DAT_PZ_HANDLE pz_handle,
			 DAT_RMR_HANDLE *rmr_handle)
{
	struct kdat_rmr_create c = { .size = sizeof(c) };
	struct kd_pz *pz = pz_handle;
	struct kd_rmr *rmr;
	DAT_RETURN ret;

	if (!kd_check(pz, DAT_HANDLE_TYPE_PZ))
		return DAT_INVALID_HANDLE;
	if (!rmr_handle)
		return DAT_INVALID_PARAMETER;
	c.pz_handle = pz->obj.kh;
	ret = kd_ioctl(pz->obj.ia, KDAT_IOCTL_RMR_CREATE, &c);
	if (ret)
		return ret;
	rmr = calloc(1, sizeof(*rmr));
	if (!rmr) {
		kd_destroy_kh(pz->obj.ia, c.out_rmr_handle);
		return DAT_INSUFFICIENT_RESOURCES;
	}
	rmr->pz = pz;
	pthread_mutex_init(&rmr->lock, NULL);
	if (!kd_obj_init(&rmr->obj, pz->obj.ia, DAT_HANDLE_TYPE_RMR,
			 c.out_rmr_handle))
		return kd_obj_abandon(&rmr->obj);
	*rmr_handle = rmr;
	return DAT_SUCCESS;
}

DAT_RETURN kd_rmr_bind(DAT_RMR_HANDLE rmr_handle,
		       DAT_LMR_HANDLE lmr_handle,
		       const DAT_LMR_TRIPLET *triplet,
		       DAT_MEM_PRIV_FLAGS mem_priv,
		       DAT_VA_TYPE va_type,
		       DAT_EP_HANDLE ep_handle,
		       DAT_RMR_COOKIE cookie,
		       DAT_COMPLETION_FLAGS flags,
		       DAT_RMR_CONTEXT *rmr_context)
{
	struct kdat_rmr_bind c = { .size = sizeof(c) };
	struct kd_rmr *rmr = rmr_handle;
	DAT_RETURN ret;

	(void)lmr_handle;	/* the triplet names the LMR, as OFA's */
	if (!kd_check(rmr, DAT_HANDLE_TYPE_RMR) ||
	    !kd_check(ep_handle, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	if (!triplet || va_type != DAT_VA_TYPE_VA)
		return DAT_INVALID_PARAMETER;
	c.rmr_handle = rmr->obj.kh;
	c.ep_handle = ((struct kd_obj *)ep_handle)->kh;
	c.lmr_context = triplet->lmr_context;
	c.addr = triplet->virtual_address;
	c.length = triplet->segment_length;
	c.mem_priv = mem_priv;
	c.completion_flags = flags;
	c.cookie = cookie.as_64;
	/* Held across the call: the record follows the kernel's order. */
	pthread_mutex_lock(&rmr->lock);
	ret = kd_ioctl(rmr->obj.ia, KDAT_IOCTL_RMR_BIND, &c);
	/* Flushed on a DISCONNECTED EP: the old binding stands. */
	if (ret == DAT_SUCCESS && !(c.out_flags & KDAT_RMR_BIND_FLUSHED)) {
		if (c.length) {
			rmr->bound = *triplet;
			rmr->mem_priv = mem_priv;
		} else {
			memset(&rmr->bound, 0, sizeof(rmr->bound));
			rmr->mem_priv = DAT_MEM_PRIV_NONE_FLAG;
		}
		rmr->context = c.out_rmr_context;
	}
	pthread_mutex_unlock(&rmr->lock);
	if (ret == DAT_SUCCESS && rmr_context)
		*rmr_context = c.out_rmr_context;
	return ret;
}

DAT_RETURN kd_rmr_free(DAT_RMR_HANDLE rmr_handle)
{
	if (!kd_check(rmr_handle, DAT_HANDLE_TYPE_RMR))
		return DAT_INVALID_HANDLE;
	return kd_destroy(rmr_handle);
}

DAT_RETURN kd_rmr_query(DAT_RMR_HANDLE rmr_handle,
			DAT_RMR_PARAM_MASK mask,
			DAT_RMR_PARAM *param)
{
	struct kd_rmr *rmr = rmr_handle;

	(void)mask;
	if (!kd_check(rmr, DAT_HANDLE_TYPE_RMR))
		return DAT_INVALID_HANDLE;
	if (!param)
		return DAT_INVALID_PARAMETER;
	memset(param, 0, sizeof(*param));
	param->ia_handle = rmr->obj.ia;
	param->pz_handle = rmr->pz;
	pthread_mutex_lock(&rmr->lock);
	param->lmr_triplet = rmr->bound;
	param->mem_priv = rmr->mem_priv;
	param->rmr_context = rmr->context;
	pthread_mutex_unlock(&rmr->lock);
	param->rmr_scope = DAT_RMR_SCOPE_PZ;
	param->va_type = DAT_VA_TYPE_VA;
	return DAT_SUCCESS;
}
