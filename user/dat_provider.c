// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libdat as a DAT provider: the DAT_PROVIDER of IAs opened directly and
 * one per IA name when a registry (OFA's libdat2) loads us from dat.conf
 * (dat_provider_init/fini), the IA names kdat offers, and the DAT
 * functions kdat does not implement.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <rdma/rdma_netlink.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "dat_internal.h"

/* The provider of IAs opened directly (dat_ia_openv). */
DAT_PROVIDER kd_default_provider = {
	.device_name = "kdat",
};

/*
 * The IA names kdat offers, one per RDMA port: kdat-<device>-<port>, as
 * scripts/kdat-datconf writes them; what libdat's registry lists first.
 * Returns how many, in *@infos (malloc'd; NULL when none): none without
 * /dev/kdat.
 */
DAT_COUNT kd_own_ias(DAT_PROVIDER_INFO **infos)
{
	struct kdat_port_info *ports;
	DAT_PROVIDER_INFO *list;
	uint32_t nr, i;
	int fd, ret;

	*infos = NULL;
	fd = kdat_open();
	if (fd < 0)
		return 0;	/* no kdat here: no IA */
	ret = kdat_device_list(fd, &ports, &nr);
	close(fd);
	if (ret || !nr)
		return 0;
	list = calloc(nr, sizeof(*list));
	for (i = 0; list && i < nr; i++) {
		snprintf(list[i].ia_name, sizeof(list[i].ia_name),
			 "kdat-%s-%u", ports[i].name, ports[i].port_num);
		list[i].dapl_version_major = DAT_VERSION_MAJOR;
		list[i].dapl_version_minor = DAT_VERSION_MINOR;
		list[i].is_thread_safe = DAT_TRUE;
	}
	free(ports);
	*infos = list;
	return list ? (DAT_COUNT)nr : 0;
}

/*
 * Not supported on this transport (each answers DAT_NOT_IMPLEMENTED, as
 * DAT allows for optional features): CR handoff (the IB CM cannot pass a
 * request to another qualifier), CSPs, MW-type-2 RMRs and invalidation
 * (no kernel memory windows), RDMA read to an RMR (iWARP), common
 * connect, fd CNOs and CNO triggers, HA; of the IB extensions,
 * collectives (dat_ext.c).
 */
#define KD_NOT_IMPLEMENTED(name, ...)					\
	DAT_RETURN kd_##name(__VA_ARGS__)				\
	{								\
		return DAT_NOT_IMPLEMENTED;				\
	}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"

KD_NOT_IMPLEMENTED(cr_handoff, DAT_CR_HANDLE a, DAT_CONN_QUAL b)
KD_NOT_IMPLEMENTED(csp_create, DAT_IA_HANDLE a, DAT_COMM *b,
		   DAT_IA_ADDRESS_PTR c, DAT_EVD_HANDLE d, DAT_CSP_HANDLE *e)
KD_NOT_IMPLEMENTED(csp_query, DAT_CSP_HANDLE a, DAT_CSP_PARAM_MASK b,
		   DAT_CSP_PARAM *c)
KD_NOT_IMPLEMENTED(csp_free, DAT_CSP_HANDLE a)
KD_NOT_IMPLEMENTED(ep_common_connect, DAT_EP_HANDLE a,
		   DAT_IA_ADDRESS_PTR b, DAT_TIMEOUT c, DAT_COUNT d,
		   const DAT_PVOID e)
KD_NOT_IMPLEMENTED(rmr_create_for_ep, DAT_PZ_HANDLE a, DAT_RMR_HANDLE *b)
KD_NOT_IMPLEMENTED(ep_post_send_with_invalidate, DAT_EP_HANDLE a,
		   DAT_COUNT b, DAT_LMR_TRIPLET *c, DAT_DTO_COOKIE d,
		   DAT_COMPLETION_FLAGS e, DAT_BOOLEAN f, DAT_RMR_CONTEXT g)
KD_NOT_IMPLEMENTED(ep_post_rdma_read_to_rmr, DAT_EP_HANDLE a,
		   const DAT_RMR_TRIPLET *b, DAT_DTO_COOKIE c,
		   const DAT_RMR_TRIPLET *d, DAT_COMPLETION_FLAGS e)
KD_NOT_IMPLEMENTED(cno_fd_create, DAT_IA_HANDLE a, DAT_FD *b,
		   DAT_CNO_HANDLE *c)
KD_NOT_IMPLEMENTED(cno_trigger, DAT_CNO_HANDLE a, DAT_EVD_HANDLE *b)
KD_NOT_IMPLEMENTED(ia_ha, DAT_IA_HANDLE a, const DAT_NAME_PTR b,
		   DAT_BOOLEAN *c)
#pragma GCC diagnostic pop

/* ---- provider mode: OFA's libdat2 loads us from dat.conf ----------- */

/*
 * OFA's registry knows a provider by its device_name, which must be the
 * IA name it was registered for: one DAT_PROVIDER per IA name, all with
 * kdat's functions, and the port its dat.conf line's instance data names
 * (@dev empty: the IA name says which).
 */
struct kd_prov {
	DAT_PROVIDER p;			/* first: handles point at it */
	char dev[KDAT_NAME_MAX];
	uint32_t port;
};

#define KD_MAX_PROVIDERS 64
static pthread_mutex_t kd_providers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kd_prov *kd_providers[KD_MAX_PROVIDERS];

static struct kd_prov *kd_provider_find(const char *name)
{
	struct kd_prov *p = NULL;
	int i;

	pthread_mutex_lock(&kd_providers_lock);
	for (i = 0; i < KD_MAX_PROVIDERS && !p; i++)
		if (kd_providers[i] &&
		    !strcmp(kd_providers[i]->p.device_name, name))
			p = kd_providers[i];
	pthread_mutex_unlock(&kd_providers_lock);
	return p;
}

/*
 * Open the IA @name through the provider registered for it (the port its
 * dat.conf line names), else kdat's default one (the name says which).
 */
DAT_RETURN kd_provider_ia_open(const DAT_NAME_PTR name, DAT_COUNT qlen,
			       DAT_EVD_HANDLE *async_evd, DAT_IA_HANDLE *ia)
{
	struct kd_prov *p = kd_provider_find(name);
	char dev[KDAT_NAME_MAX] = "";
	uint32_t port = 0;

	if (p) {
		pthread_mutex_lock(&kd_providers_lock);
		memcpy(dev, p->dev, sizeof(dev));
		port = p->port;
		pthread_mutex_unlock(&kd_providers_lock);
	}
	return kd_status(kd_ia_open(p ? &p->p : &kd_default_provider, name,
				    dev, port, qlen, async_evd, ia,
				    DAT_VERSION_MAJOR, DAT_VERSION_MINOR,
				    DAT_THREADSAFE));
}

/* Read the first line of @path into @buf; 0 or -1. */
static int kd_read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	int ret = -1;

	if (!f)
		return -1;
	if (fgets(buf, len, f)) {
		buf[strcspn(buf, "\n")] = '\0';
		ret = 0;
	}
	fclose(f);
	return ret;
}

/*
 * The network device of GID @index of port @port of @dev, read from
 * gid_attrs/ndevs into @netdev: 0; -ENOENT past the end of the table;
 * -1 for an entry without one (unused, or an IB port).
 */
int kd_gid_netdev(const char *dev, uint32_t port, unsigned int index,
		  char *netdev, size_t len)
{
	char path[300];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/%u/gid_attrs/ndevs/%u",
		 dev, port, index);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -1;
	n = read(fd, netdev, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	netdev[n] = '\0';
	netdev[strcspn(netdev, "\n")] = '\0';
	return netdev[0] ? 0 : -1;
}

/*
 * One RDMA netlink request of nldev's @cmd (with the u32 attributes
 * @dev_index and @port when non-zero), and its answers: for each message
 * @fn(@arg, attributes, their length) until it returns non-zero. 0 when
 * one did, else -1.
 */
static int kd_nldev(int fd, unsigned int cmd, bool dump, uint32_t dev_index,
		    uint32_t port,
		    int (*fn)(void *arg, struct nlattr *a, int len), void *arg)
{
	struct {
		struct nlmsghdr h;
		char attrs[2 * NLA_ALIGN(NLA_HDRLEN + sizeof(uint32_t))];
	} req = { 0 };
	char buf[16384];
	struct nlattr *a = (struct nlattr *)req.attrs;
	int found = -1;

	req.h.nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd);
	req.h.nlmsg_flags = NLM_F_REQUEST | (dump ? NLM_F_DUMP : 0);
	req.h.nlmsg_seq = 1;
	req.h.nlmsg_len = NLMSG_HDRLEN;
	if (dev_index) {
		a->nla_type = RDMA_NLDEV_ATTR_DEV_INDEX;
		a->nla_len = NLA_HDRLEN + sizeof(uint32_t);
		memcpy((char *)a + NLA_HDRLEN, &dev_index, sizeof(uint32_t));
		a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len));
		a->nla_type = RDMA_NLDEV_ATTR_PORT_INDEX;
		a->nla_len = NLA_HDRLEN + sizeof(uint32_t);
		memcpy((char *)a + NLA_HDRLEN, &port, sizeof(uint32_t));
		req.h.nlmsg_len += 2 * NLA_ALIGN(a->nla_len);
	}
	if (send(fd, &req, req.h.nlmsg_len, 0) < 0)
		return -1;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h = (struct nlmsghdr *)buf;

		if (n <= 0)
			return found;
		for (; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE ||
			    h->nlmsg_type == NLMSG_ERROR)
				return found;
			if (found)
				found = fn(arg, (struct nlattr *)NLMSG_DATA(h),
					   h->nlmsg_len - NLMSG_HDRLEN) ? 0 : -1;
		}
		if (!dump)
			return found;
	}
}

/* Attribute @type of @a (@len bytes of them), or NULL. */
static struct nlattr *kd_nla_find(struct nlattr *a, int len, int type)
{
	for (; len >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
	       a->nla_len <= len;
	     len -= NLA_ALIGN(a->nla_len),
	     a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len)))
		if ((a->nla_type & NLA_TYPE_MASK) == type)
			return a;
	return NULL;
}

struct kd_nl_dev {
	const char *name;
	uint32_t index;
	char *netdev;
	size_t len;
};

static int kd_nl_dev_index(void *arg, struct nlattr *a, int len)
{
	struct kd_nl_dev *d = arg;
	struct nlattr *name = kd_nla_find(a, len, RDMA_NLDEV_ATTR_DEV_NAME);
	struct nlattr *index = kd_nla_find(a, len, RDMA_NLDEV_ATTR_DEV_INDEX);

	if (!name || !index || name->nla_len <= NLA_HDRLEN ||
	    index->nla_len < NLA_HDRLEN + sizeof(uint32_t) ||
	    strncmp((char *)name + NLA_HDRLEN, d->name,
		    name->nla_len - NLA_HDRLEN))
		return 0;
	memcpy(&d->index, (char *)index + NLA_HDRLEN, sizeof(uint32_t));
	return 1;
}

static int kd_nl_port_netdev(void *arg, struct nlattr *a, int len)
{
	struct kd_nl_dev *d = arg;
	struct nlattr *nd = kd_nla_find(a, len, RDMA_NLDEV_ATTR_NDEV_NAME);
	size_t n;

	if (!nd || nd->nla_len <= NLA_HDRLEN)
		return 0;
	n = nd->nla_len - NLA_HDRLEN;
	if (n >= d->len)
		return 0;
	memcpy(d->netdev, (char *)nd + NLA_HDRLEN, n);
	d->netdev[n] = '\0';
	return d->netdev[0] != '\0';
}

/*
 * The network device of port @port of @dev as ib_core knows it (what
 * "rdma link" shows), asked over RDMA netlink: for a port whose GID
 * table names none (iWARP). 0, or -1.
 */
int kd_port_netdev(const char *dev, uint32_t port, char *netdev, size_t len)
{
	struct kd_nl_dev d = { .name = dev, .netdev = netdev, .len = len };
	int fd, ret;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0)
		return -1;
	ret = kd_nldev(fd, RDMA_NLDEV_CMD_GET, true, 0, 0, kd_nl_dev_index,
		       &d);
	if (!ret)
		ret = kd_nldev(fd, RDMA_NLDEV_CMD_PORT_GET, false, d.index,
			       port, kd_nl_port_netdev, &d);
	close(fd);
	return ret;
}

/*
 * Whether @netdev carries a GID of port @port of @dev: GID 0 (a RoCE
 * port's default GID, its own network device) when @rest is false, else
 * every entry after it, in order (the caller looked at GID 0 already).
 * The table has a file per entry (1024 on rxe); reading them all is the
 * slow path.
 */
static bool kd_port_carries(const char *dev, uint32_t port,
			    const char *netdev, bool rest)
{
	char name[IF_NAMESIZE + 2];
	unsigned int i;
	int ret;

	for (i = rest ? 1 : 0; i == 0 || rest; i++) {
		ret = kd_gid_netdev(dev, port, i, name, sizeof(name));
		if (ret == -ENOENT)
			break;
		if (!ret && !strcmp(name, netdev))
			return true;
	}
	return false;
}

/*
 * The RDMA port behind network device @netdev: the one whose GIDs it
 * carries (RoCE: first the ports whose default GID is its, then the
 * other GIDs, for a VLAN device), else the RDMA device of its parent (IPoIB),
 * port dev_port + 1. @want, when not 0, is the port wanted. 0 or -1.
 */
static int kd_netdev_port(const char *netdev, uint32_t want, char *dev,
			  uint32_t *port)
{
	char path[600], line[64];
	struct dirent *d, *p;
	int found = -1, all;
	DIR *dd, *pd;

	for (all = 0; all < 2 && found; all++) {
		dd = opendir("/sys/class/infiniband");
		while (dd && found && (d = readdir(dd))) {
			if (d->d_name[0] == '.' ||
			    strlen(d->d_name) >= KDAT_NAME_MAX)
				continue;
			snprintf(path, sizeof(path),
				 "/sys/class/infiniband/%s/ports", d->d_name);
			pd = opendir(path);
			while (pd && found && (p = readdir(pd))) {
				uint32_t pn = strtoul(p->d_name, NULL, 10);

				if (!pn || (want && pn != want) ||
				    !kd_port_carries(d->d_name, pn, netdev, all))
					continue;
				strcpy(dev, d->d_name);
				*port = pn;
				found = 0;
			}
			if (pd)
				closedir(pd);
		}
		if (dd)
			closedir(dd);
	}
	if (!found)
		return 0;

	snprintf(path, sizeof(path), "/sys/class/net/%s/device/infiniband",
		 netdev);
	dd = opendir(path);
	while (dd && found && (d = readdir(dd))) {
		if (d->d_name[0] == '.' || strlen(d->d_name) >= KDAT_NAME_MAX)
			continue;
		snprintf(path, sizeof(path), "/sys/class/net/%s/dev_port",
			 netdev);
		if (want)
			*port = want;
		else if (kd_read_line(path, line, sizeof(line)))
			*port = 1;
		else
			*port = strtoul(line, NULL, 0) + 1;
		strcpy(dev, d->d_name);
		found = 0;
	}
	if (dd)
		closedir(dd);
	return found;
}

/*
 * A dat.conf line's instance data: "<name> <port>", as OFA's providers
 * take it. <name> is an RDMA device (then <port> is its port, 0 meaning
 * 1), or, as for OFA's cma provider, a network device or one of its IP
 * addresses (the RDMA port behind it; <port> 0 for any). Sets @dev empty
 * when it names no RDMA port here: the IA name decides then.
 */
void kd_instance_port(const char *data, char *dev, uint32_t *port)
{
	char name[256], path[300], netdev[IF_NAMESIZE] = "";
	unsigned char addr[sizeof(struct in6_addr)];
	struct ifaddrs *ifa, *i;
	unsigned long p = 0;
	struct stat st;
	int family = 0;

	dev[0] = '\0';
	*port = 0;
	if (!data || sscanf(data, "%255s %lu", name, &p) < 1 || p > 255)
		return;
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s", name);
	if (!strchr(name, '/') && strlen(name) < KDAT_NAME_MAX &&
	    !stat(path, &st)) {
		strcpy(dev, name);
		*port = p ? p : 1;
		return;
	}
	if (inet_pton(AF_INET, name, addr) == 1)
		family = AF_INET;
	else if (inet_pton(AF_INET6, name, addr) == 1)
		family = AF_INET6;
	if (family && !getifaddrs(&ifa)) {
		for (i = ifa; i && !netdev[0]; i = i->ifa_next) {
			const void *a = NULL;
			size_t len = 4;

			if (!i->ifa_addr || i->ifa_addr->sa_family != family)
				continue;
			if (family == AF_INET) {
				a = &((struct sockaddr_in *)i->ifa_addr)->sin_addr;
			} else {
				a = &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
				len = 16;
			}
			if (!memcmp(a, addr, len))
				snprintf(netdev, sizeof(netdev), "%s",
					 i->ifa_name);
		}
		freeifaddrs(ifa);
	} else if (!family && strlen(name) < sizeof(netdev)) {
		strcpy(netdev, name);
	}
	if (!netdev[0] || kd_netdev_port(netdev, p, dev, port))
		dev[0] = '\0';
}

/*
 * A registry (OFA's libdat2) calls through this table what a -ldat
 * program calls directly: the entry points of dat_api.c, which give
 * every error its class bit (kd_status()).
 */
static DAT_RETURN kd_provider_ia_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS flags)
{
	return KD_ANSWER(kd_ia_close(ia, flags), ia, IA);
}

static DAT_RETURN kd_provider_extension_op(DAT_HANDLE h, DAT_EXTENDED_OP op,
					   va_list args)
{
	return kd_status(kd_extension_op(h, op, args));
}

static void kd_provider_fill(DAT_PROVIDER *p)
{
	p->ia_open_func = kd_provider_ia_open;
	p->ia_query_func = dat_ia_query;
	p->ia_close_func = kd_provider_ia_close;
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
	p->handle_extendedop_func = kd_provider_extension_op;
}

static void __attribute__((constructor)) kd_provider_init(void)
{
	kd_provider_fill(&kd_default_provider);
}

/*
 * The registry's own add/remove: the first definition in the process's
 * global scope, OFA's libdat2 when it loaded us from dat.conf, libdat's
 * (dat_registry.c) when a program links libdat. A direct call would bind
 * to libdat's (-Bsymbolic-functions), and OFA's registry would never hear
 * of us.
 */
typedef DAT_RETURN (*kd_registry_func)(const DAT_PROVIDER *,
				       const DAT_PROVIDER_INFO *);

static kd_registry_func kd_registry(const char *name)
{
	return (kd_registry_func)dlsym(RTLD_DEFAULT, name);
}

/*
 * The registry (from a dat.conf line naming this library) calls this once
 * per IA name: register the same provider for it.
 */
LIBDAT_API void dat_provider_init(const DAT_PROVIDER_INFO *info,
				  const char *instance_data)
{
	kd_registry_func add = kd_registry("dat_registry_add_provider");
	char dev[KDAT_NAME_MAX];
	struct kd_prov *p;
	uint32_t port;
	char *name;
	int i;

	if (!add || !info)
		return;
	kd_instance_port(instance_data, dev, &port);
	p = kd_provider_find(info->ia_name);
	if (p) {
		/* Its other line (the other thread safety): the same port. */
		pthread_mutex_lock(&kd_providers_lock);
		memcpy(p->dev, dev, sizeof(dev));
		p->port = port;
		pthread_mutex_unlock(&kd_providers_lock);
	} else {
		p = calloc(1, sizeof(*p));
		name = strdup(info->ia_name);
		if (!p || !name) {
			free(p);
			free(name);
			return;
		}
		kd_provider_fill(&p->p);
		p->p.device_name = name;
		memcpy(p->dev, dev, sizeof(dev));
		p->port = port;
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
	add(&p->p, info);
}

/* The provider stays allocated: handles may still point at it. */
LIBDAT_API void dat_provider_fini(const DAT_PROVIDER_INFO *info)
{
	kd_registry_func remove = kd_registry("dat_registry_remove_provider");
	struct kd_prov *p;

	if (!remove || !info)
		return;
	p = kd_provider_find(info->ia_name);
	if (p)
		remove(&p->p, info);
}
