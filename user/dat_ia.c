// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libdat Interface Adapters: open by IA name, with the address of the
 * port's network device; query; close, with everything built on the IA.
 */
#include <endian.h>
#include <errno.h>
#include <ifaddrs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <net/if.h>
#include <sched.h>

#include "dat_internal.h"

/* An EVD of @arg's IA is closing: true in *busy when a call is inside. */
struct kd_ia_walk {
	struct kd_ia *ia;
	bool busy;
};

static int kd_ia_evd_close(struct kd_obj *o, void *arg)
{
	struct kd_ia_walk *w = arg;
	struct kd_evd *evd = (struct kd_evd *)o;

	if (o->ia != w->ia || o->type != DAT_HANDLE_TYPE_EVD)
		return KD_WALK_NEXT;
	__atomic_store_n(&evd->closing, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&evd->takers, __ATOMIC_SEQ_CST))
		w->busy = true;
	return KD_WALK_NEXT;
}

/*
 * The kernel destroyed @ia's objects and woke whoever waited on its EVDs:
 * let the calls still inside a ring dequeue or wait leave before their
 * rings are unmapped, and none come in.
 */
static void kd_ia_evds_quiesce(struct kd_ia *ia)
{
	struct kd_ia_walk w = { .ia = ia };

	do {
		w.busy = false;
		pthread_mutex_lock(&kd_proc.lock);
		kd_table_walk_locked(kd_ia_evd_close, &w);
		pthread_mutex_unlock(&kd_proc.lock);
		if (w.busy)
			sched_yield();
	} while (w.busy);
}

/* Does @arg's IA have an object but itself and its async EVD? */
static int kd_ia_in_use(struct kd_obj *o, void *arg)
{
	struct kd_ia_walk *w = arg;

	if (o->ia != w->ia || o == &w->ia->obj ||
	    o == (struct kd_obj *)w->ia->async_evd)
		return KD_WALK_NEXT;
	w->busy = true;
	return KD_WALK_STOP;
}

/* @arg's IA is closed: its objects leave the tables, all but it are freed. */
static int kd_ia_obj_drop(struct kd_obj *o, void *arg)
{
	struct kd_ia_walk *w = arg;

	if (o->ia != w->ia)
		return KD_WALK_NEXT;
	return o == &w->ia->obj ? KD_WALK_DROP : KD_WALK_DROP | KD_WALK_FREE;
}

static int kd_ia_destroy(int fd, uint32_t kh)
{
	struct kdat_destroy d = {
		.size = sizeof(d),
		.handle = kh,
		.flags = KDAT_DESTROY_IA_ALL,
	};

	return ioctl(fd, KDAT_IOCTL_DESTROY, &d) ? -errno : 0;
}

/*
 * IA names: "kdat-<device>-<port>" (what scripts/kdat-datconf writes),
 * "<device>:<port>", or "<device>" for port 1.
 */
static int kd_parse_name(const char *name, char *dev, uint32_t *port)
{
	const char *p = name, *sep;
	size_t len;

	*port = 1;
	if (!strncmp(p, "kdat-", 5)) {
		p += 5;
		sep = strrchr(p, '-');
	} else {
		sep = strrchr(p, ':');
	}
	len = sep ? (size_t)(sep - p) : strlen(p);
	if (!len || len >= KDAT_NAME_MAX)
		return -1;
	memcpy(dev, p, len);
	dev[len] = '\0';
	if (sep) {
		char *end;

		*port = strtoul(sep + 1, &end, 10);
		if (*end || !*port)
			return -1;
	}
	return 0;
}

/*
 * The IA's address: the IPv4 (else IPv6) address of the network device
 * behind the port's GIDs, as the RDMA CM resolves it.
 */
static void kd_find_address(struct kd_ia *ia)
{
	char ifname[IF_NAMESIZE + 2] = "";
	struct ifaddrs *ifa, *i;
	unsigned int g;
	int ret;

	/*
	 * The first GID with a network device: GID 0 on a RoCE port; else
	 * the port's own (iWARP's GIDs name none).
	 */
	for (g = 0; ; g++) {
		ret = kd_gid_netdev(ia->name, ia->port, g, ifname,
				    sizeof(ifname));
		if (!ret || ret == -ENOENT)
			break;
	}
	if (ret && kd_port_netdev(ia->name, ia->port, ifname, sizeof(ifname)))
		return;
	if (getifaddrs(&ifa))
		return;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || strcmp(i->ifa_name, ifname))
			continue;
		if (i->ifa_addr->sa_family == AF_INET) {
			memcpy(&ia->addr, i->ifa_addr,
			       sizeof(struct sockaddr_in));
			break;
		}
		if (i->ifa_addr->sa_family == AF_INET6 && !ia->addr.ss_family)
			memcpy(&ia->addr, i->ifa_addr,
			       sizeof(struct sockaddr_in6));
	}
	freeifaddrs(ifa);
}

/*
 * Open the IA @name: on port @devport of device @devname when given (a
 * dat.conf line's instance data said so), else on the port the name
 * gives.
 */
DAT_RETURN kd_ia_open(DAT_PROVIDER *provider, const DAT_NAME_PTR name,
		      const char *devname, uint32_t devport,
		      DAT_COUNT async_evd_qlen,
		      DAT_EVD_HANDLE *async_evd_handle,
		      DAT_IA_HANDLE *ia_handle, DAT_UINT32 major,
		      DAT_UINT32 minor, DAT_BOOLEAN thread_safety)
{
	char dev[KDAT_NAME_MAX];
	struct kd_ia *ia;
	uint32_t port, kh;
	int fd, ret;

	(void)minor;
	if (!name || !ia_handle)
		return DAT_INVALID_PARAMETER;
	if (major != DAT_VERSION_MAJOR)
		return DAT_PROVIDER_NOT_FOUND | DAT_MAJOR_NOT_FOUND;
	if (devname && devname[0] && strlen(devname) < sizeof(dev)) {
		strcpy(dev, devname);
		port = devport ? devport : 1;
	} else if (kd_parse_name(name, dev, &port)) {
		if (kd_debug())
			fprintf(stderr, "libdat: dat_ia_open(%s): not a name "
				"of kdat's (DEVICE:PORT, DEVICE or "
				"kdat-DEVICE-PORT) nor one of dat.conf\n", name);
		return KD_NOT_REGISTERED;
	}
	fd = kd_proc_get();
	if (fd < 0) {
		if (kd_debug())
			fprintf(stderr, "libdat: dat_ia_open(%s): %s\n", name,
				kdat_open_why(-fd));
		return KD_NOT_REGISTERED;
	}
	ret = kdat_ia_open(fd, dev, port, &kh);
	if (ret) {
		if (kd_debug()) {
			char why[256];

			kdat_ia_open_why(fd, dev, port, -ret, why, sizeof(why));
			fprintf(stderr, "libdat: dat_ia_open(%s): %s\n", name,
				why);
		}
		kd_proc_put();
		return ret == -ENODEV || ret == -EINVAL ?
			KD_NOT_REGISTERED : kd_from_errno(-ret);
	}
	ia = calloc(1, sizeof(*ia));
	if (!ia) {
		kd_ia_destroy(fd, kh);
		kd_proc_put();
		return DAT_INSUFFICIENT_RESOURCES;
	}
	ia->provider = provider;
	ia->fd = fd;
	ia->port = port;
	strcpy(ia->name, dev);
	snprintf(ia->ia_name, sizeof(ia->ia_name), "%s", name);
	ia->thread_safe = thread_safety;
	kd_find_address(ia);
	if (!kd_obj_init(&ia->obj, ia, DAT_HANDLE_TYPE_IA, kh)) {
		kd_ia_destroy(fd, kh);
		kd_proc_put();
		free(ia);
		return DAT_INSUFFICIENT_RESOURCES;
	}

	if (async_evd_handle) {
		if (*async_evd_handle == DAT_HANDLE_NULL) {
			DAT_RETURN r;

			r = kd_evd_create(ia, async_evd_qlen > 0 ?
					  async_evd_qlen : 8,
					  DAT_HANDLE_NULL, DAT_EVD_ASYNC_FLAG,
					  async_evd_handle);
			if (r != DAT_SUCCESS) {
				kd_table_del(&ia->obj);
				kd_ia_destroy(fd, kh);
				kd_proc_put();
				free(ia);
				return r;
			}
		}
		/*
		 * DAT_EVD_ASYNC_EXISTS: another open has the async EVD, and
		 * this one none in scope (udat.h); dat_ia_query says so.
		 * Another value is kept as given.
		 */
		ia->async_evd = *async_evd_handle == DAT_EVD_ASYNC_EXISTS ?
				DAT_EVD_OUT_OF_SCOPE : *async_evd_handle;
	}
	*ia_handle = ia;
	return DAT_SUCCESS;
}

static const char *kd_port_state_name(uint32_t state)
{
	static const char *const names[] = {
		[KDAT_PORT_NOP] = "NOP",
		[KDAT_PORT_DOWN] = "DOWN",
		[KDAT_PORT_INIT] = "INIT",
		[KDAT_PORT_ARMED] = "ARMED",
		[KDAT_PORT_ACTIVE] = "ACTIVE",
		[KDAT_PORT_ACTIVE_DEFER] = "DEFER",
	};

	return state < sizeof(names) / sizeof(names[0]) ? names[state] :
							  "UNKNOWN";
}

/* One provider-specific attribute; its value copied into the IA. */
static void kd_spec_attr(struct kd_ia *ia, int *n, const char *name,
			 const char *fmt, ...)
{
	va_list ap;

	if (*n >= KD_IA_SPEC_ATTRS)
		return;
	va_start(ap, fmt);
	vsnprintf(ia->spec_val[*n], sizeof(ia->spec_val[*n]), fmt, ap);
	va_end(ap);
	ia->spec_attr[*n].name = name;
	ia->spec_attr[*n].value = ia->spec_val[*n];
	(*n)++;
}

/*
 * The provider-specific attributes OFA's IB providers publish (their
 * names and value formats), each where kdat knows the true value: DAT
 * programs read them (dtest runs its RDMA read phase only where
 * DAT_IB_RDMA_READ is TRUE; dtestsrq sizes its buffers by
 * DAT_IB_TRANSPORT_MTU). Built at each query, under the process lock:
 * the port's state and MTU may have changed. Returns how many.
 */
static int kd_spec_attrs(struct kd_ia *ia, const struct kdat_ia_query *q)
{
	uint64_t guid = be64toh(q->node_guid);
	const uint8_t *g = q->gid;
	int n = 0;

	kd_spec_attr(ia, &n, "DAT_IB_PROVIDER_NAME", "kdat");
	kd_spec_attr(ia, &n, "DAT_IB_DEVICE_NAME", "%s", ia->name);
	kd_spec_attr(ia, &n, "DAT_IB_CONNECTIVITY_MODE", "DIRECT");
	kd_spec_attr(ia, &n, "DAT_IB_RDMA_READ", "TRUE");
	kd_spec_attr(ia, &n, "DAT_IB_NODE_GUID", "%04x:%04x:%04x:%04x",
		     (unsigned int)(guid >> 48) & 0xffff,
		     (unsigned int)(guid >> 32) & 0xffff,
		     (unsigned int)(guid >> 16) & 0xffff,
		     (unsigned int)guid & 0xffff);
	kd_spec_attr(ia, &n, "DAT_IB_GID",
		     "%02x%02x:%02x%02x:%02x%02x:%02x%02x:"
		     "%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		     g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9],
		     g[10], g[11], g[12], g[13], g[14], g[15]);
	if (q->active_mtu)
		kd_spec_attr(ia, &n, "DAT_IB_TRANSPORT_MTU", "%u",
			     q->active_mtu);
	else
		kd_spec_attr(ia, &n, "DAT_IB_TRANSPORT_MTU", "UNKNOWN");
	kd_spec_attr(ia, &n, "DAT_IB_PORT_STATUS", "%s",
		     kd_port_state_name(q->port_state));
	kd_spec_attr(ia, &n, "DAT_IB_PORT_NUMBER", "%u", ia->port);
	return n;
}

DAT_RETURN kd_ia_query(DAT_IA_HANDLE ia_handle,
		       DAT_EVD_HANDLE *async_evd,
		       DAT_IA_ATTR_MASK ia_mask,
		       DAT_IA_ATTR *ia_attr,
		       DAT_PROVIDER_ATTR_MASK pr_mask,
		       DAT_PROVIDER_ATTR *pr_attr)
{
	struct kdat_ia_query q = { .size = sizeof(q) };
	struct kd_ia *ia = ia_handle;
	DAT_RETURN ret;

	(void)ia_mask;
	(void)pr_mask;
	if (!kd_check(ia, DAT_HANDLE_TYPE_IA))
		return DAT_INVALID_HANDLE;
	if (async_evd)
		*async_evd = ia->async_evd;
	if (ia_attr || pr_attr) {
		q.ia_handle = ia->obj.kh;
		ret = kd_ioctl(ia, KDAT_IOCTL_IA_QUERY, &q);
		if (ret)
			return ret;
	}
	if (ia_attr) {
		memset(ia_attr, 0, sizeof(*ia_attr));
		snprintf(ia_attr->adapter_name, sizeof(ia_attr->adapter_name),
			 "%s", ia->name);
		snprintf(ia_attr->vendor_name, sizeof(ia_attr->vendor_name),
			 "0x%x", q.vendor_id);
		ia_attr->hardware_version_major = q.hw_ver;
		ia_attr->firmware_version_major = q.fw_ver >> 32;
		ia_attr->firmware_version_minor = (DAT_UINT32)q.fw_ver;
		ia_attr->ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ia->addr;
		ia_attr->max_eps = q.max_qp;
		ia_attr->max_dto_per_ep = q.max_qp_wr;
		ia_attr->max_rdma_read_per_ep_in = q.max_qp_rd_atom;
		ia_attr->max_rdma_read_per_ep_out = q.max_qp_init_rd_atom;
		ia_attr->max_evds = q.max_cq;
		ia_attr->max_evd_qlen = q.max_cqe < 65536 ? q.max_cqe : 65536;
		ia_attr->max_iov_segments_per_dto = q.max_send_sge < q.max_recv_sge ?
			q.max_send_sge : q.max_recv_sge;
		ia_attr->max_lmrs = q.max_mr;
		ia_attr->max_lmr_block_size = q.max_mr_size;
		ia_attr->max_lmr_virtual_address = UINT64_MAX;
		ia_attr->max_pzs = q.max_pd;
		ia_attr->max_message_size = q.max_msg_size;
		ia_attr->max_rdma_size = q.max_msg_size;
		ia_attr->max_rmrs = q.max_mr;
		ia_attr->max_rmr_target_address = UINT64_MAX;
		ia_attr->max_srqs = q.max_srq;
		ia_attr->max_ep_per_srq = q.max_qp;
		ia_attr->max_recv_per_srq = q.max_srq_wr;
		ia_attr->max_iov_segments_per_rdma_read =
			q.max_read_sge ? q.max_read_sge : q.max_send_sge;
		ia_attr->max_iov_segments_per_rdma_write = q.max_send_sge;
		ia_attr->max_rdma_read_in = q.max_qp_rd_atom;
		ia_attr->max_rdma_read_out = q.max_qp_init_rd_atom;
		ia_attr->max_rdma_read_per_ep_in_guaranteed = DAT_TRUE;
		ia_attr->max_rdma_read_per_ep_out_guaranteed = DAT_TRUE;
		ia_attr->zb_supported = DAT_FALSE;
		/* The DAT IB extensions (dat_ext.c), at the header's version. */
		ia_attr->extension_supported = DAT_EXTENSION_IB;
		ia_attr->extension_version = DAT_IB_EXTENSION_VERSION;
	}
	if (pr_attr) {
#define KD_ALL6 { DAT_TRUE, DAT_TRUE, DAT_TRUE, DAT_TRUE, DAT_TRUE, DAT_TRUE }
		DAT_PROVIDER_ATTR a = {
			/* kdat takes any EVD flags together. */
			.evd_stream_merging_supported = {
				KD_ALL6, KD_ALL6, KD_ALL6,
				KD_ALL6, KD_ALL6, KD_ALL6,
			},
		};
#undef KD_ALL6
		int n;

		/*
		 * The const array member forbids assignment: build a copy.
		 * The provider's name is the IA's: OFA's registry finds the
		 * provider to close an IA by it.
		 */
		snprintf(a.provider_name, sizeof(a.provider_name), "%s",
			 ia->ia_name);
		a.provider_version_major = 1;
		a.provider_version_minor = 0;
		a.dapl_version_major = DAT_VERSION_MAJOR;
		a.dapl_version_minor = DAT_VERSION_MINOR;
		a.lmr_mem_types_supported = DAT_MEM_TYPE_VIRTUAL |
					    DAT_MEM_TYPE_LMR;
		a.iov_ownership_on_return = DAT_IOV_CONSUMER;
		a.dat_qos_supported = DAT_QOS_BEST_EFFORT;
		a.completion_flags_supported = DAT_COMPLETION_SUPPRESS_FLAG |
			DAT_COMPLETION_SOLICITED_WAIT_FLAG |
			DAT_COMPLETION_UNSIGNALLED_FLAG |
			DAT_COMPLETION_BARRIER_FENCE_FLAG;
		/*
		 * kdat is thread safe either way; the registry, though, finds
		 * the entry the IA was opened from by the flag asked for.
		 */
		a.is_thread_safe = ia->thread_safe;
		a.max_private_data_size = KDAT_MAX_PRIVATE_DATA;
		a.ep_creator = DAT_PSP_CREATES_EP_NEVER;
		a.pz_support = DAT_PZ_UNIQUE;
		a.optimal_buffer_alignment = 64;
		a.srq_supported = DAT_TRUE;
		a.srq_watermarks_supported = 1;	/* the low one */
		a.lmr_sync_req = DAT_FALSE;
		a.dto_async_return_guaranteed = DAT_TRUE;
		a.rdma_read_lmr_rmr_context_exposure = DAT_FALSE;
		a.rmr_scope_supported = DAT_RMR_SCOPE_PZ;
		pthread_mutex_lock(&kd_proc.lock);
		n = kd_spec_attrs(ia, &q);
		n += kd_ext_attrs(ia, ia->spec_attr + n, KD_IA_SPEC_ATTRS - n);
		a.num_provider_specific_attr = n;
		pthread_mutex_unlock(&kd_proc.lock);
		a.provider_specific_attr = ia->spec_attr;
		memcpy(pr_attr, &a, sizeof(a));
	}
	return DAT_SUCCESS;
}

DAT_RETURN kd_ia_close(DAT_IA_HANDLE ia_handle,
		       DAT_CLOSE_FLAGS flags)
{
	struct kd_ia *ia = ia_handle;
	struct kd_ia_walk w = { .ia = ia };
	int ret;

	if (!kd_check(ia, DAT_HANDLE_TYPE_IA))
		return DAT_INVALID_HANDLE;
	if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
		return DAT_INVALID_PARAMETER;
	/*
	 * Graceful: only when nothing but the async EVD is left (DAT says
	 * DAT_INVALID_STATE otherwise). Abrupt: the kernel destroys the IA
	 * and everything built on it, unless another IA's objects use its
	 * EVDs (DAT_INVALID_STATE too: they would be left dangling).
	 */
	if (flags == DAT_CLOSE_GRACEFUL_FLAG) {
		pthread_mutex_lock(&kd_proc.lock);
		kd_table_walk_locked(kd_ia_in_use, &w);
		pthread_mutex_unlock(&kd_proc.lock);
		if (w.busy)
			return DAT_INVALID_STATE | DAT_INVALID_STATE_IA_IN_USE;
	}
	ret = kd_ia_destroy(ia->fd, ia->obj.kh);
	if (ret)
		return kd_from_errno(-ret);
	kd_ia_evds_quiesce(ia);
	pthread_mutex_lock(&kd_proc.lock);
	kd_table_walk_locked(kd_ia_obj_drop, &w);
	pthread_mutex_unlock(&kd_proc.lock);
	kd_proc_put();
	free(ia);
	return DAT_SUCCESS;
}
