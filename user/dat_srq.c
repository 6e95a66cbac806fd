// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libdat Shared Receive Queues: create, query, resize, low watermark,
 * free. Their posts are dat_dto.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dat_internal.h"
#include "dat_ring.h"

DAT_RETURN kd_srq_create(DAT_IA_HANDLE ia_handle,
			 DAT_PZ_HANDLE pz_handle,
			 DAT_SRQ_ATTR *attr,
			 DAT_SRQ_HANDLE *srq_handle)
{
	struct kdat_srq_create c = { .size = sizeof(c) };
	struct kd_ia *ia = ia_handle;
	struct kd_srq *srq;
	DAT_RETURN ret;

	if (!kd_check(ia, DAT_HANDLE_TYPE_IA) ||
	    !kd_check(pz_handle, DAT_HANDLE_TYPE_PZ) ||
	    ((struct kd_obj *)pz_handle)->ia != ia)
		return DAT_INVALID_HANDLE;	/* a PZ of another IA too */
	if (!attr || !srq_handle || attr->max_recv_dtos <= 0 ||
	    attr->max_recv_iov < 0 || attr->low_watermark < 0)
		return DAT_INVALID_PARAMETER;
	c.pz_handle = ((struct kd_obj *)pz_handle)->kh;
	c.max_recv_dtos = attr->max_recv_dtos;
	c.max_recv_iov = attr->max_recv_iov;
	c.low_watermark = attr->low_watermark;
	ret = kd_ioctl(ia, KDAT_IOCTL_SRQ_CREATE, &c);
	if (ret)
		return ret;
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		kd_destroy_kh(ia, c.out_srq_handle);
		return DAT_INSUFFICIENT_RESOURCES;
	}
	srq->pz = pz_handle;
	srq->attr = *attr;
	srq->attr.max_recv_iov = c.max_recv_iov;
	if (!kd_obj_init(&srq->obj, ia, DAT_HANDLE_TYPE_SRQ, c.out_srq_handle))
		return kd_obj_abandon(&srq->obj);
	if (kd_rings_wanted()) {
		srq->ring = kd_ring_map(ia, srq->obj.kh, KDAT_RING_SRQ, NULL);
		if (!srq->ring) {
			kd_destroy(&srq->obj);
			return DAT_INSUFFICIENT_RESOURCES;
		}
		kd_ring_limit_iov(srq->ring, c.max_recv_iov);
	}
	*srq_handle = srq;
	return DAT_SUCCESS;
}

DAT_RETURN kd_srq_free(DAT_SRQ_HANDLE srq_handle)
{
	if (!kd_check(srq_handle, DAT_HANDLE_TYPE_SRQ))
		return DAT_INVALID_HANDLE;
	return kd_destroy(srq_handle);
}

DAT_RETURN kd_srq_set_lw(DAT_SRQ_HANDLE srq_handle,
			 DAT_COUNT low_watermark)
{
	struct kdat_srq_set_lw c = { .size = sizeof(c) };
	struct kd_srq *srq = srq_handle;
	DAT_RETURN ret;

	if (!kd_check(srq, DAT_HANDLE_TYPE_SRQ))
		return DAT_INVALID_HANDLE;
	if (low_watermark < 0)
		return DAT_INVALID_PARAMETER;
	c.srq_handle = srq->obj.kh;
	c.low_watermark = low_watermark;
	ret = kd_ioctl(srq->obj.ia, KDAT_IOCTL_SRQ_SET_LW, &c);
	if (ret == DAT_SUCCESS)
		srq->attr.low_watermark = low_watermark;
	return ret;
}

DAT_RETURN kd_srq_resize(DAT_SRQ_HANDLE srq_handle,
			 DAT_COUNT srq_max_recv_dto)
{
	struct kdat_srq_resize c = { .size = sizeof(c) };
	struct kd_srq *srq = srq_handle;
	DAT_RETURN ret;

	if (!kd_check(srq, DAT_HANDLE_TYPE_SRQ))
		return DAT_INVALID_HANDLE;
	if (srq_max_recv_dto <= 0)
		return DAT_INVALID_PARAMETER;
	c.srq_handle = srq->obj.kh;
	c.max_recv_dtos = srq_max_recv_dto;
	ret = kd_ioctl(srq->obj.ia, KDAT_IOCTL_SRQ_RESIZE, &c);
	/* The device cannot resize an SRQ (EOPNOTSUPP: siw). */
	if (ret == DAT_NOT_IMPLEMENTED)
		ret = DAT_MODEL_NOT_SUPPORTED;
	if (ret == DAT_SUCCESS)
		srq->attr.max_recv_dtos = srq_max_recv_dto;
	return ret;
}

DAT_RETURN kd_srq_query(DAT_SRQ_HANDLE srq_handle,
			DAT_SRQ_PARAM_MASK mask,
			DAT_SRQ_PARAM *param)
{
	struct kd_srq *srq = srq_handle;

	(void)mask;
	if (!kd_check(srq, DAT_HANDLE_TYPE_SRQ))
		return DAT_INVALID_HANDLE;
	if (!param)
		return DAT_INVALID_PARAMETER;
	memset(param, 0, sizeof(*param));
	param->ia_handle = srq->obj.ia;
	param->srq_state = DAT_SRQ_STATE_OPERATIONAL;
	param->pz_handle = srq->pz;
	param->max_recv_dtos = srq->attr.max_recv_dtos;
	param->max_recv_iov = srq->attr.max_recv_iov;
	param->low_watermark = srq->attr.low_watermark;
	/* DAT allows these counts to be unknown. */
	param->available_dto_count = DAT_VALUE_UNKNOWN;
	param->outstanding_dto_count = DAT_VALUE_UNKNOWN;
	return DAT_SUCCESS;
}
