// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libdat as a DAT provider: the DAT_PROVIDER of IAs opened directly and
 * one per IA name when OFA's libdat2 loads us from dat.conf
 * (dat_provider_init/fini), the IA names kdat offers, and the DAT
 * functions kdat does not implement.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dat_internal.h"

/* The provider of IAs opened directly (dat_ia_openv). */
DAT_PROVIDER kd_default_provider = {
	.device_name = "kdat",
};

/*
 * The IA names kdat offers, one per RDMA port: kdat-<device>-<port>, as
 * scripts/kdat-datconf writes them (when OFA's libdat2 is the registry,
 * its own dat_registry_list_providers answers instead).
 */
LIBDAT_API DAT_RETURN dat_registry_list_providers(DAT_COUNT max,
						  DAT_COUNT *returned,
						  DAT_PROVIDER_INFO *(list[]))
{
	struct kdat_port_info *ports;
	uint32_t nr, i;
	DAT_COUNT n = 0;
	int fd, ret;

	if (!returned || max < 0 || (max && !list))
		return DAT_INVALID_PARAMETER;
	fd = kdat_open();
	if (fd < 0) {
		*returned = 0;
		return DAT_SUCCESS;	/* no kdat here: no provider */
	}
	ret = kdat_device_list(fd, &ports, &nr);
	close(fd);
	if (ret)
		return kd_from_errno(-ret);
	for (i = 0; i < nr && n < max; i++, n++) {
		snprintf(list[n]->ia_name, sizeof(list[n]->ia_name),
			 "kdat-%s-%u", ports[i].name, ports[i].port_num);
		list[n]->dapl_version_major = DAT_VERSION_MAJOR;
		list[n]->dapl_version_minor = DAT_VERSION_MINOR;
		list[n]->is_thread_safe = DAT_TRUE;
	}
	free(ports);
	*returned = max ? n : (DAT_COUNT)nr;
	return DAT_SUCCESS;
}

/*
 * Not supported on this transport (each answers DAT_NOT_IMPLEMENTED, as
 * DAT allows for optional features): CR handoff (the IB CM cannot pass a
 * request to another qualifier), CSPs, MW-type-2 RMRs and invalidation
 * (no kernel memory windows), RDMA read to an RMR (iWARP), common
 * connect, fd CNOs and CNO triggers, HA, extensions.
 */
#define KD_NOT_IMPLEMENTED(name, ...)					\
	LIBDAT_API DAT_RETURN name(__VA_ARGS__)				\
	{								\
		return DAT_NOT_IMPLEMENTED;				\
	}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"

KD_NOT_IMPLEMENTED(dat_cr_handoff, DAT_CR_HANDLE a, DAT_CONN_QUAL b)
KD_NOT_IMPLEMENTED(dat_csp_create, DAT_IA_HANDLE a, DAT_COMM *b,
		   DAT_IA_ADDRESS_PTR c, DAT_EVD_HANDLE d, DAT_CSP_HANDLE *e)
KD_NOT_IMPLEMENTED(dat_csp_query, DAT_CSP_HANDLE a, DAT_CSP_PARAM_MASK b,
		   DAT_CSP_PARAM *c)
KD_NOT_IMPLEMENTED(dat_csp_free, DAT_CSP_HANDLE a)
KD_NOT_IMPLEMENTED(dat_ep_common_connect, DAT_EP_HANDLE a,
		   DAT_IA_ADDRESS_PTR b, DAT_TIMEOUT c, DAT_COUNT d,
		   const DAT_PVOID e)
KD_NOT_IMPLEMENTED(dat_rmr_create_for_ep, DAT_PZ_HANDLE a, DAT_RMR_HANDLE *b)
KD_NOT_IMPLEMENTED(dat_ep_post_send_with_invalidate, DAT_EP_HANDLE a,
		   DAT_COUNT b, DAT_LMR_TRIPLET *c, DAT_DTO_COOKIE d,
		   DAT_COMPLETION_FLAGS e, DAT_BOOLEAN f, DAT_RMR_CONTEXT g)
KD_NOT_IMPLEMENTED(dat_ep_post_rdma_read_to_rmr, DAT_EP_HANDLE a,
		   const DAT_RMR_TRIPLET *b, DAT_DTO_COOKIE c,
		   const DAT_RMR_TRIPLET *d, DAT_COMPLETION_FLAGS e)
KD_NOT_IMPLEMENTED(dat_cno_fd_create, DAT_IA_HANDLE a, DAT_FD *b,
		   DAT_CNO_HANDLE *c)
KD_NOT_IMPLEMENTED(dat_cno_trigger, DAT_CNO_HANDLE a, DAT_EVD_HANDLE *b)
KD_NOT_IMPLEMENTED(dat_ia_ha, DAT_IA_HANDLE a, const DAT_NAME_PTR b,
		   DAT_BOOLEAN *c)
KD_NOT_IMPLEMENTED(kd_extendedop, DAT_HANDLE a, DAT_EXTENDED_OP b, va_list c)
#pragma GCC diagnostic pop

/* ---- provider mode: OFA's libdat2 loads us from dat.conf ----------- */

/*
 * OFA's registry knows a provider by its device_name, which must be the
 * IA name it was registered for: one DAT_PROVIDER per IA name, all with
 * kdat's functions.
 */
#define KD_MAX_PROVIDERS 64
static pthread_mutex_t kd_providers_lock = PTHREAD_MUTEX_INITIALIZER;
static DAT_PROVIDER *kd_providers[KD_MAX_PROVIDERS];

static DAT_PROVIDER *kd_provider_find(const char *name)
{
	DAT_PROVIDER *p = NULL;
	int i;

	pthread_mutex_lock(&kd_providers_lock);
	for (i = 0; i < KD_MAX_PROVIDERS && !p; i++)
		if (kd_providers[i] &&
		    !strcmp(kd_providers[i]->device_name, name))
			p = kd_providers[i];
	pthread_mutex_unlock(&kd_providers_lock);
	return p;
}

static DAT_RETURN kd_provider_ia_open(const DAT_NAME_PTR name,
				      DAT_COUNT qlen,
				      DAT_EVD_HANDLE *async_evd,
				      DAT_IA_HANDLE *ia)
{
	DAT_PROVIDER *p = kd_provider_find(name);

	return kd_ia_open(p ? p : &kd_default_provider, name, qlen, async_evd, ia,
			  DAT_VERSION_MAJOR, DAT_VERSION_MINOR,
			  DAT_THREADSAFE);
}

static void kd_provider_fill(DAT_PROVIDER *p)
{
	p->ia_open_func = kd_provider_ia_open;
	p->ia_query_func = dat_ia_query;
	p->ia_close_func = dat_ia_close;
	p->set_consumer_context_func = dat_set_consumer_context;
	p->get_consumer_context_func = dat_get_consumer_context;
	p->get_handle_type_func = dat_get_handle_type;
	p->cno_create_func = dat_cno_create;
	p->cno_modify_agent_func = dat_cno_modify_agent;
	p->cno_query_func = dat_cno_query;
	p->cno_free_func = dat_cno_free;
	p->cno_wait_func = dat_cno_wait;
	p->cr_query_func = dat_cr_query;
	p->cr_accept_func = dat_cr_accept;
	p->cr_reject_func = dat_cr_reject;
	p->cr_handoff_func = dat_cr_handoff;
	p->evd_create_func = dat_evd_create;
	p->evd_query_func = dat_evd_query;
	p->evd_modify_cno_func = dat_evd_modify_cno;
	p->evd_enable_func = dat_evd_enable;
	p->evd_disable_func = dat_evd_disable;
	p->evd_wait_func = dat_evd_wait;
	p->evd_resize_func = dat_evd_resize;
	p->evd_post_se_func = dat_evd_post_se;
	p->evd_dequeue_func = dat_evd_dequeue;
	p->evd_free_func = dat_evd_free;
	p->ep_create_func = dat_ep_create;
	p->ep_query_func = dat_ep_query;
	p->ep_modify_func = dat_ep_modify;
	p->ep_connect_func = dat_ep_connect;
	p->ep_dup_connect_func = dat_ep_dup_connect;
	p->ep_disconnect_func = dat_ep_disconnect;
	p->ep_post_send_func = dat_ep_post_send;
	p->ep_post_recv_func = dat_ep_post_recv;
	p->ep_post_rdma_read_func = dat_ep_post_rdma_read;
	p->ep_post_rdma_write_func = dat_ep_post_rdma_write;
	p->ep_get_status_func = dat_ep_get_status;
	p->ep_free_func = dat_ep_free;
	p->lmr_create_func = dat_lmr_create;
	p->lmr_query_func = dat_lmr_query;
	p->lmr_free_func = dat_lmr_free;
	p->rmr_create_func = dat_rmr_create;
	p->rmr_query_func = dat_rmr_query;
	p->rmr_bind_func = dat_rmr_bind;
	p->rmr_free_func = dat_rmr_free;
	p->psp_create_func = dat_psp_create;
	p->psp_query_func = dat_psp_query;
	p->psp_free_func = dat_psp_free;
	p->rsp_create_func = dat_rsp_create;
	p->rsp_query_func = dat_rsp_query;
	p->rsp_free_func = dat_rsp_free;
	p->pz_create_func = dat_pz_create;
	p->pz_query_func = dat_pz_query;
	p->pz_free_func = dat_pz_free;
	p->psp_create_any_func = dat_psp_create_any;
	p->ep_reset_func = dat_ep_reset;
	p->evd_set_unwaitable_func = dat_evd_set_unwaitable;
	p->evd_clear_unwaitable_func = dat_evd_clear_unwaitable;
	p->lmr_sync_rdma_read_func = dat_lmr_sync_rdma_read;
	p->lmr_sync_rdma_write_func = dat_lmr_sync_rdma_write;
	p->ep_create_with_srq_func = dat_ep_create_with_srq;
	p->ep_recv_query_func = dat_ep_recv_query;
	p->ep_set_watermark_func = dat_ep_set_watermark;
	p->srq_create_func = dat_srq_create;
	p->srq_free_func = dat_srq_free;
	p->srq_post_recv_func = dat_srq_post_recv;
	p->srq_query_func = dat_srq_query;
	p->srq_resize_func = dat_srq_resize;
	p->srq_set_lw_func = dat_srq_set_lw;
	p->csp_create_func = dat_csp_create;
	p->csp_query_func = dat_csp_query;
	p->csp_free_func = dat_csp_free;
	p->ep_common_connect_func = dat_ep_common_connect;
	p->rmr_create_for_ep_func = dat_rmr_create_for_ep;
	p->ep_post_send_with_invalidate_func =
		dat_ep_post_send_with_invalidate;
	p->ep_post_rdma_read_to_rmr_func = dat_ep_post_rdma_read_to_rmr;
	p->cno_fd_create_func = dat_cno_fd_create;
	p->cno_trigger_func = dat_cno_trigger;
	p->ia_ha_related_func = dat_ia_ha;
#ifdef DAT_EXTENSIONS
	p->handle_extendedop_func = kd_extendedop;
#endif
}

static void __attribute__((constructor)) kd_provider_init(void)
{
	kd_provider_fill(&kd_default_provider);
}

/*
 * The registry's: present when OFA's libdat2 loaded us, absent when a
 * program links libdat directly (then nothing calls the two below).
 */
extern DAT_RETURN dat_registry_add_provider(const DAT_PROVIDER *,
					    const DAT_PROVIDER_INFO *)
	__attribute__((weak));
extern DAT_RETURN dat_registry_remove_provider(const DAT_PROVIDER *,
					       const DAT_PROVIDER_INFO *)
	__attribute__((weak));

/*
 * The registry (OFA's libdat2, from a dat.conf line naming this library)
 * calls this once per IA name: register the same provider for it.
 */
LIBDAT_API void dat_provider_init(const DAT_PROVIDER_INFO *info,
				  const char *instance_data)
{
	DAT_PROVIDER *p;
	char *name;
	int i;

	(void)instance_data;
	if (!dat_registry_add_provider || !info)
		return;
	p = kd_provider_find(info->ia_name);
	if (!p) {
		p = calloc(1, sizeof(*p));
		name = strdup(info->ia_name);
		if (!p || !name) {
			free(p);
			free(name);
			return;
		}
		kd_provider_fill(p);
		p->device_name = name;
		pthread_mutex_lock(&kd_providers_lock);
		for (i = 0; i < KD_MAX_PROVIDERS && kd_providers[i]; i++)
			;
		if (i < KD_MAX_PROVIDERS)
			__atomic_store_n(&kd_providers[i], p,
					 __ATOMIC_RELEASE);
		pthread_mutex_unlock(&kd_providers_lock);
		if (i == KD_MAX_PROVIDERS) {
			free(name);
			free(p);
			return;
		}
	}
	dat_registry_add_provider(p, info);
}

/* The provider stays allocated: handles may still point at it. */
LIBDAT_API void dat_provider_fini(const DAT_PROVIDER_INFO *info)
{
	DAT_PROVIDER *p;

	if (!dat_registry_remove_provider || !info)
		return;
	p = kd_provider_find(info->ia_name);
	if (p)
		dat_registry_remove_provider(p, info);
}
