// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libdat: the DAT 2.0 consumer API on /dev/kdat.
 *
 * Every DAT handle points at an object that starts with a pointer to
 * kdat's DAT_PROVIDER, as the DAT 2.0 ABI requires of providers. An IA owns
 * an open file of /dev/kdat; every object created under it lives in that
 * file and is named in the kernel by a 32-bit handle. Events name kernel
 * handles; a per-IA table maps them back to the DAT handles.
 *
 * DAT return codes: the kernel answers with the errno of the uapi table,
 * which maps one to one onto DAT's major codes (dat_from_errno()). The
 * checks on DTO arguments are the kernel's; libdat does not second-guess
 * them, so a DAT code decided in the kernel reaches the caller unchanged.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>

#include <dat2/udat.h>
#include <dat2/dat_registry.h>

#include "kdat_lowlevel.h"

#define LIBDAT_API __attribute__((visibility("default")))

/* The uapi mirrors these DAT values; libdat passes them through. */
_Static_assert((int)KDAT_EVENT_DTO_COMPLETION == (int)DAT_DTO_COMPLETION_EVENT, "");
_Static_assert(KDAT_EVENT_CONNECTION_REQUEST == DAT_CONNECTION_REQUEST_EVENT,
	       "");
_Static_assert((int)KDAT_EVENT_CONNECTION_ESTABLISHED == (int)DAT_CONNECTION_EVENT_ESTABLISHED, "");
_Static_assert((int)KDAT_EVENT_CONNECTION_UNREACHABLE == (int)DAT_CONNECTION_EVENT_UNREACHABLE, "");
_Static_assert(KDAT_EVENT_ASYNC_EVD_OVERFLOW == DAT_ASYNC_ERROR_EVD_OVERFLOW,
	       "");
_Static_assert((int)KDAT_EVENT_ASYNC_EP_BROKEN == (int)DAT_ASYNC_ERROR_EP_BROKEN, "");
_Static_assert((int)KDAT_DTO_ERR_FLUSHED == (int)DAT_DTO_ERR_FLUSHED, "");
_Static_assert((int)KDAT_DTO_ERR_LOCAL_LENGTH == (int)DAT_DTO_LENGTH_ERROR, "");
_Static_assert((int)KDAT_DTO_ERR_RECEIVER_NOT_READY == (int)DAT_DTO_ERR_RECEIVER_NOT_READY, "");
_Static_assert((int)KDAT_DTO_SEND == (int)DAT_DTO_SEND, "");
_Static_assert((int)KDAT_DTO_RDMA_WRITE == (int)DAT_DTO_RDMA_WRITE, "");
_Static_assert((int)KDAT_DTO_RDMA_READ == (int)DAT_DTO_RDMA_READ, "");
_Static_assert((int)KDAT_DTO_RECEIVE == (int)DAT_DTO_RECEIVE, "");
_Static_assert((int)KDAT_COMPLETION_SUPPRESS == (int)DAT_COMPLETION_SUPPRESS_FLAG, "");
_Static_assert((int)KDAT_COMPLETION_SOLICITED_WAIT == (int)DAT_COMPLETION_SOLICITED_WAIT_FLAG, "");
_Static_assert(KDAT_COMPLETION_UNSIGNALLED == DAT_COMPLETION_UNSIGNALLED_FLAG,
	       "");
_Static_assert((int)KDAT_COMPLETION_BARRIER_FENCE == (int)DAT_COMPLETION_BARRIER_FENCE_FLAG, "");
_Static_assert((int)KDAT_MEM_PRIV_ALL == (int)DAT_MEM_PRIV_ALL_FLAG, "");
_Static_assert(KDAT_MEM_PRIV_REMOTE_WRITE == DAT_MEM_PRIV_REMOTE_WRITE_FLAG,
	       "");
_Static_assert((int)KDAT_EVD_DTO == (int)DAT_EVD_DTO_FLAG, "");
_Static_assert((int)KDAT_EVD_CR == (int)DAT_EVD_CR_FLAG, "");
_Static_assert((int)KDAT_EVD_CONNECTION == (int)DAT_EVD_CONNECTION_FLAG, "");
_Static_assert((int)KDAT_EVD_ASYNC == (int)DAT_EVD_ASYNC_FLAG, "");
_Static_assert((int)KDAT_CLOSE_GRACEFUL == (int)DAT_CLOSE_GRACEFUL_FLAG, "");

static DAT_PROVIDER kdat_provider = {
	.device_name = "kdat",
};

struct kd_ia;

/* The head of every object a DAT handle points at. */
struct kd_obj {
	DAT_PROVIDER *provider;		/* first, as the DAT ABI requires */
	DAT_HANDLE_TYPE type;
	DAT_CONTEXT context;
	struct kd_ia *ia;
	uint32_t kh;			/* kernel handle */
	struct kd_obj *hnext;		/* in kd_proc.by_kh */
	struct kd_obj *pnext;		/* in kd_proc.by_ptr */
};

#define KD_TABLE_SIZE 256

/*
 * One /dev/kdat file per process, shared by its IAs: DAT lets objects of
 * one IA use another's (dapltest gives EPs of several IAs one connection
 * EVD), and the kernel allows that within a file. The file is opened with
 * the first IA and closed with the last. Every live object is in two hash
 * tables: by kernel handle (events name objects by it) and by address (a
 * handle is checked by finding it there, never by reading through it, so
 * a stale or foreign handle is refused without touching freed memory).
 */
static struct {
	pthread_mutex_t lock;
	int fd;
	unsigned int nr_ia;
	struct kd_obj *by_kh[KD_TABLE_SIZE];
	struct kd_obj *by_ptr[KD_TABLE_SIZE];
} kd_proc = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.fd = -1,
};

struct kd_ia {
	struct kd_obj obj;
	DAT_PROVIDER *provider;		/* what its handles start with */
	int fd;
	uint32_t port;
	char name[KDAT_NAME_MAX];
	char ia_name[DAT_NAME_MAX_LENGTH];	/* as opened */
	DAT_BOOLEAN thread_safe;		/* as asked at open */
	struct sockaddr_storage addr;	/* the port's IP address, if any */
	DAT_EVD_HANDLE async_evd;
};

struct kd_pz {
	struct kd_obj obj;
};

struct kd_lmr {
	struct kd_obj obj;
	struct kd_pz *pz;
	DAT_VADDR addr;
	DAT_VLEN length;
	DAT_MEM_PRIV_FLAGS priv;
	DAT_LMR_CONTEXT lmr_context;
	DAT_RMR_CONTEXT rmr_context;
	DAT_MEM_TYPE mem_type;
	DAT_REGION_DESCRIPTION region;	/* as given at create */
};

struct kd_rmr {
	struct kd_obj obj;
	struct kd_pz *pz;
};

struct kd_cno {
	struct kd_obj obj;
	DAT_OS_WAIT_PROXY_AGENT agent;
};

/*
 * A ring shared with the kernel (see the uapi header for the protocol).
 * Submission rings: we produce at tail, under @lock (DAT lets threads post
 * to one EP). Completion rings: we consume at head, under @lock.
 */
struct kd_ring {
	void *map;
	size_t map_size;
	uint32_t *head, *tail, *flags, *completed, *ep_state;
	uint8_t *entries;
	uint32_t mask, entry_size, max_iov;
	pthread_mutex_t lock;
};

struct kd_evd {
	struct kd_obj obj;
	DAT_COUNT qlen;
	DAT_EVD_FLAGS flags;
	struct kd_cno *cno;
	struct kd_ring *ring;		/* or NULL: the ioctl path */
};

struct kd_ep {
	struct kd_obj obj;
	struct kd_pz *pz;
	struct kd_evd *recv_evd, *req_evd, *conn_evd;
	struct kd_srq *srq;		/* or NULL */
	struct kd_ring *sq, *rq;	/* or NULL: the ioctl path */
	DAT_EP_ATTR attr;
	unsigned char pdata[KDAT_PRIVATE_DATA_BUF];
	struct sockaddr_storage remote, local;
};

struct kd_srq {
	struct kd_obj obj;
	struct kd_pz *pz;
	DAT_SRQ_ATTR attr;
	struct kd_ring *ring;		/* or NULL: the ioctl path */
};

/* A PSP, or an RSP (type DAT_HANDLE_TYPE_RSP, @ep set). */
struct kd_psp {
	struct kd_obj obj;
	struct kd_evd *evd;
	DAT_CONN_QUAL conn_qual;
	struct kd_ep *ep;
};

struct kd_cr {
	struct kd_obj obj;
	struct kd_psp *psp;
	DAT_CONN_QUAL conn_qual;
	struct sockaddr_storage remote;
	DAT_COUNT pdata_len;
	unsigned char pdata[KDAT_PRIVATE_DATA_BUF];
};

/* errno of the uapi table -> DAT return code */
static DAT_RETURN dat_from_errno(int err)
{
	switch (err) {
	case 0:
		return DAT_SUCCESS;
	case EBADF:
		return DAT_INVALID_HANDLE;
	case EBUSY:
		return DAT_INVALID_STATE;
	case ENOMEM:
	case ENOSPC:
		return DAT_INSUFFICIENT_RESOURCES;
	case EACCES:
		return DAT_PRIVILEGES_VIOLATION;
	case EPERM:
		return DAT_PROTECTION_VIOLATION;
	case EMSGSIZE:
		return DAT_LENGTH_ERROR;
	case EAGAIN:
		return DAT_QUEUE_EMPTY;
	case ETIMEDOUT:
		return DAT_TIMEOUT_EXPIRED;
	case EINTR:
		return DAT_INTERRUPTED_CALL;
	case EADDRINUSE:
		return DAT_CONN_QUAL_IN_USE;
	case EADDRNOTAVAIL:
		return DAT_INVALID_ADDRESS;
	case EOPNOTSUPP:
		return DAT_NOT_IMPLEMENTED;
	case ECONNABORTED:
		return DAT_ABORT;
	case ENODEV:
		return DAT_INVALID_STATE;
	default:
		return DAT_INVALID_PARAMETER;
	}
}

/*
 * A connection qualifier is an RDMA CM TCP port: its low 16 bits, as with
 * OFA's provider, so programs that use larger qualifiers (dapltest's
 * 0xAffab1e) work unchanged. 0 there would mean "any port": refused.
 */
static uint16_t kd_port(DAT_CONN_QUAL conn_qual)
{
	return (uint16_t)conn_qual;
}

static DAT_RETURN kd_ioctl(struct kd_ia *ia, unsigned long cmd, void *arg)
{
	if (ioctl(ia->fd, cmd, arg))
		return dat_from_errno(errno);
	return DAT_SUCCESS;
}

/* ---- rings --------------------------------------------------------- */

/*
 * The ring path is the default; KDAT_RINGS=0 in the environment selects
 * the ioctl path (every post and every dequeue a system call).
 */
static bool kd_rings_wanted(void)
{
	const char *e = getenv("KDAT_RINGS");

	return !e || strcmp(e, "0");
}

static void kd_ring_unmap(struct kd_ring *r)
{
	if (!r)
		return;
	munmap(r->map, r->map_size);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/* The ring of @kind for kernel object @kh, mapped; NULL on failure. */
static struct kd_ring *kd_ring_map(struct kd_ia *ia, uint32_t kh,
				   uint32_t kind)
{
	struct kdat_ring_create c = {
		.size = sizeof(c), .handle = kh, .kind = kind,
	};
	struct kd_ring *r;
	uint8_t *m;

	if (ioctl(ia->fd, KDAT_IOCTL_RING_CREATE, &c))
		return NULL;
	m = mmap(NULL, c.out_map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 ia->fd, (off_t)c.out_mmap_offset);
	if (m == MAP_FAILED)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r) {
		munmap(m, c.out_map_size);
		return NULL;
	}
	r->map = m;
	r->map_size = c.out_map_size;
	r->head = (uint32_t *)(m + c.out_off.head);
	r->tail = (uint32_t *)(m + c.out_off.tail);
	r->flags = (uint32_t *)(m + c.out_off.flags);
	r->completed = (uint32_t *)(m + c.out_off.completed);
	r->ep_state = (uint32_t *)(m + c.out_off.ep_state);
	r->entries = m + c.out_off.entries;
	r->mask = *(uint32_t *)(m + c.out_off.ring_mask);
	r->entry_size = c.out_entry_size;
	r->max_iov = (c.out_entry_size - sizeof(struct kdat_sqe)) /
		     sizeof(struct kdat_lmr_triplet);
	pthread_mutex_init(&r->lock, NULL);
	return r;
}

static unsigned int kd_ptr_hash(const void *p)
{
	uintptr_t v = (uintptr_t)p;

	return (unsigned int)((v >> 4) ^ (v >> 12)) % KD_TABLE_SIZE;
}

static void kd_table_add(struct kd_obj *o)
{
	struct kd_obj **b = &kd_proc.by_kh[o->kh % KD_TABLE_SIZE];
	struct kd_obj **p = &kd_proc.by_ptr[kd_ptr_hash(o)];

	pthread_mutex_lock(&kd_proc.lock);
	o->hnext = *b;
	*b = o;
	o->pnext = *p;
	*p = o;
	pthread_mutex_unlock(&kd_proc.lock);
}

/* Caller holds kd_proc.lock. */
static void kd_table_del_locked(struct kd_obj *o)
{
	struct kd_obj **p;

	for (p = &kd_proc.by_kh[o->kh % KD_TABLE_SIZE]; *p; p = &(*p)->hnext) {
		if (*p == o) {
			*p = o->hnext;
			break;
		}
	}
	for (p = &kd_proc.by_ptr[kd_ptr_hash(o)]; *p; p = &(*p)->pnext) {
		if (*p == o) {
			*p = o->pnext;
			break;
		}
	}
}

static void kd_table_del(struct kd_obj *o)
{
	pthread_mutex_lock(&kd_proc.lock);
	kd_table_del_locked(o);
	pthread_mutex_unlock(&kd_proc.lock);
}

static struct kd_obj *kd_table_find(uint32_t kh)
{
	struct kd_obj *o;

	pthread_mutex_lock(&kd_proc.lock);
	for (o = kd_proc.by_kh[kh % KD_TABLE_SIZE]; o; o = o->hnext)
		if (o->kh == kh)
			break;
	pthread_mutex_unlock(&kd_proc.lock);
	return o;
}

static DAT_RETURN kd_provider_ia_open(const DAT_NAME_PTR name,
				      DAT_COUNT qlen,
				      DAT_EVD_HANDLE *async_evd,
				      DAT_IA_HANDLE *ia);

/* The process's /dev/kdat file, opened for its first IA; -errno. */
static int kd_proc_get(void)
{
	int fd;

	pthread_mutex_lock(&kd_proc.lock);
	if (kd_proc.fd < 0)
		kd_proc.fd = kdat_open();
	fd = kd_proc.fd;
	if (fd >= 0)
		kd_proc.nr_ia++;
	pthread_mutex_unlock(&kd_proc.lock);
	return fd;
}

/* An IA is gone; the last one closes the file. */
static void kd_proc_put(void)
{
	pthread_mutex_lock(&kd_proc.lock);
	if (!--kd_proc.nr_ia) {
		close(kd_proc.fd);
		kd_proc.fd = -1;
	}
	pthread_mutex_unlock(&kd_proc.lock);
}

/* Destroy an IA with everything built on it; 0 or -errno. */
static int kd_ia_destroy(int fd, uint32_t kh)
{
	struct kdat_destroy d = {
		.size = sizeof(d),
		.handle = kh,
		.flags = KDAT_DESTROY_IA_ALL,
	};

	return ioctl(fd, KDAT_IOCTL_DESTROY, &d) ? -errno : 0;
}

static void kd_obj_init(struct kd_obj *o, struct kd_ia *ia,
			DAT_HANDLE_TYPE type, uint32_t kh)
{
	/* The provider the IA was opened through (see dat_provider_init). */
	o->provider = ia->provider;
	o->type = type;
	o->ia = ia;
	o->kh = kh;
	kd_table_add(o);
}

/*
 * Is @h a live object of ours, of @type (any type for -1)? Found by address
 * in the table: a stale handle (freed memory) or a foreign pointer is
 * refused without being read.
 */
static bool kd_check(const void *h, int type)
{
	const struct kd_obj *o;
	bool ok = false;

	if (!h)
		return false;
	pthread_mutex_lock(&kd_proc.lock);
	for (o = kd_proc.by_ptr[kd_ptr_hash(h)]; o; o = o->pnext) {
		if (o == h) {
			ok = type < 0 || o->type == (DAT_HANDLE_TYPE)type;
			break;
		}
	}
	pthread_mutex_unlock(&kd_proc.lock);
	return ok;
}

static bool kd_ours(const void *h)
{
	return kd_check(h, -1);
}

/* Free an object's user-space half: its ring mappings, then itself. */
static void kd_obj_free(struct kd_obj *o)
{
	switch (o->type) {
	case DAT_HANDLE_TYPE_EVD:
		kd_ring_unmap(((struct kd_evd *)o)->ring);
		break;
	case DAT_HANDLE_TYPE_EP:
		kd_ring_unmap(((struct kd_ep *)o)->sq);
		kd_ring_unmap(((struct kd_ep *)o)->rq);
		break;
	case DAT_HANDLE_TYPE_SRQ:
		kd_ring_unmap(((struct kd_srq *)o)->ring);
		break;
	default:
		break;
	}
	free(o);
}

/* Undo a create whose user-space half failed. */
static void kd_destroy_kh(struct kd_ia *ia, uint32_t kh)
{
	struct kdat_destroy d = { .size = sizeof(d), .handle = kh };

	kd_ioctl(ia, KDAT_IOCTL_DESTROY, &d);
}

static DAT_RETURN kd_destroy(struct kd_obj *o)
{
	struct kdat_destroy d = { .size = sizeof(d), .handle = o->kh };
	DAT_RETURN ret;

	ret = kd_ioctl(o->ia, KDAT_IOCTL_DESTROY, &d);
	if (ret == DAT_SUCCESS) {
		kd_table_del(o);
		kd_obj_free(o);
	}
	return ret;
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

LIBDAT_API DAT_RETURN dat_evd_create(DAT_IA_HANDLE ia_handle,
				     DAT_COUNT qlen, DAT_CNO_HANDLE cno,
				     DAT_EVD_FLAGS flags,
				     DAT_EVD_HANDLE *evd_handle);

/*
 * The IA's address: the IPv4 (else IPv6) address of the network device
 * behind the port's GIDs, as the RDMA CM resolves it.
 */
static void kd_find_address(struct kd_ia *ia)
{
	char path[256], ifname[IF_NAMESIZE + 2] = "";
	struct ifaddrs *ifa, *i;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/%u/gid_attrs/ndevs",
		 ia->name, ia->port);
	d = opendir(path);
	while (d && !ifname[0] && (de = readdir(d))) {
		char file[600];
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
		f = fopen(file, "r");
		if (!f)
			continue;
		if (!fgets(ifname, sizeof(ifname), f))
			ifname[0] = '\0';
		fclose(f);
		ifname[strcspn(ifname, "\n")] = '\0';
	}
	if (d)
		closedir(d);
	if (!ifname[0] || getifaddrs(&ifa))
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

static DAT_RETURN kd_ia_open(DAT_PROVIDER *provider, const DAT_NAME_PTR name,
			     DAT_COUNT async_evd_qlen,
			     DAT_EVD_HANDLE *async_evd_handle,
			     DAT_IA_HANDLE *ia_handle, DAT_UINT32 major,
			     DAT_UINT32 minor, DAT_BOOLEAN thread_safety);

LIBDAT_API DAT_RETURN dat_ia_openv(const DAT_NAME_PTR name,
				   DAT_COUNT async_evd_qlen,
				   DAT_EVD_HANDLE *async_evd_handle,
				   DAT_IA_HANDLE *ia_handle,
				   DAT_UINT32 major, DAT_UINT32 minor,
				   DAT_BOOLEAN thread_safety)
{
	return kd_ia_open(&kdat_provider, name, async_evd_qlen,
			  async_evd_handle, ia_handle, major, minor,
			  thread_safety);
}

static DAT_RETURN kd_ia_open(DAT_PROVIDER *provider, const DAT_NAME_PTR name,
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
		return DAT_PROVIDER_NOT_FOUND;
	if (kd_parse_name(name, dev, &port))
		return DAT_PROVIDER_NOT_FOUND;
	fd = kd_proc_get();
	if (fd < 0)
		return DAT_PROVIDER_NOT_FOUND;
	ret = kdat_ia_open(fd, dev, port, &kh);
	if (ret) {
		kd_proc_put();
		return ret == -ENODEV || ret == -EINVAL ?
			DAT_PROVIDER_NOT_FOUND : dat_from_errno(-ret);
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
	kd_obj_init(&ia->obj, ia, DAT_HANDLE_TYPE_IA, kh);

	if (async_evd_handle) {
		if (*async_evd_handle == DAT_HANDLE_NULL) {
			DAT_RETURN r;

			r = dat_evd_create(ia, async_evd_qlen > 0 ?
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
		ia->async_evd = *async_evd_handle;
	}
	*ia_handle = ia;
	return DAT_SUCCESS;
}

static const DAT_BOOLEAN kd_stream_merging[6][6];

/*
 * What OFA's IB providers say they can do, by name: DAT programs (dtest)
 * run their RDMA read phase only where DAT_IB_RDMA_READ is TRUE.
 */
static DAT_NAMED_ATTR kd_provider_specific[] = {
	{ "DAT_IB_RDMA_READ", "TRUE" },
};

LIBDAT_API DAT_RETURN dat_ia_query(DAT_IA_HANDLE ia_handle,
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
	if (ia_attr) {
		q.ia_handle = ia->obj.kh;
		ret = kd_ioctl(ia, KDAT_IOCTL_IA_QUERY, &q);
		if (ret)
			return ret;
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
		ia_attr->max_iov_segments_per_rdma_read = q.max_send_sge;
		ia_attr->max_iov_segments_per_rdma_write = q.max_send_sge;
		ia_attr->max_rdma_read_in = q.max_qp_rd_atom;
		ia_attr->max_rdma_read_out = q.max_qp_init_rd_atom;
		ia_attr->max_rdma_read_per_ep_in_guaranteed = DAT_TRUE;
		ia_attr->max_rdma_read_per_ep_out_guaranteed = DAT_TRUE;
		ia_attr->zb_supported = DAT_FALSE;
		ia_attr->extension_supported = DAT_EXTENSION_NONE;
	}
	if (pr_attr) {
		DAT_PROVIDER_ATTR a = {
			.evd_stream_merging_supported = { { 0 } },
		};

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
		a.num_provider_specific_attr = sizeof(kd_provider_specific) /
					       sizeof(kd_provider_specific[0]);
		a.provider_specific_attr = kd_provider_specific;
		memcpy(pr_attr, &a, sizeof(a));
		(void)kd_stream_merging;
	}
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_ia_close(DAT_IA_HANDLE ia_handle,
				   DAT_CLOSE_FLAGS flags)
{
	struct kd_ia *ia = ia_handle;
	int i, ret;

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
		bool busy = false;

		pthread_mutex_lock(&kd_proc.lock);
		for (i = 0; i < KD_TABLE_SIZE && !busy; i++) {
			struct kd_obj *o;

			for (o = kd_proc.by_kh[i]; o; o = o->hnext)
				if (o->ia == ia && o != &ia->obj &&
				    o != (struct kd_obj *)ia->async_evd)
					busy = true;
		}
		pthread_mutex_unlock(&kd_proc.lock);
		if (busy)
			return DAT_INVALID_STATE;
	}
	ret = kd_ia_destroy(ia->fd, ia->obj.kh);
	if (ret)
		return dat_from_errno(-ret);
	pthread_mutex_lock(&kd_proc.lock);
	for (i = 0; i < KD_TABLE_SIZE; i++) {
		struct kd_obj *o, *next;

		for (o = kd_proc.by_kh[i]; o; o = next) {
			next = o->hnext;
			if (o->ia != ia)
				continue;
			kd_table_del_locked(o);
			if (o != &ia->obj)
				kd_obj_free(o);
		}
	}
	pthread_mutex_unlock(&kd_proc.lock);
	kd_proc_put();
	free(ia);
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_pz_create(DAT_IA_HANDLE ia_handle,
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
	kd_obj_init(&pz->obj, ia, DAT_HANDLE_TYPE_PZ, c.out_pz_handle);
	*pz_handle = pz;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_pz_free(DAT_PZ_HANDLE pz_handle)
{
	if (!kd_check(pz_handle, DAT_HANDLE_TYPE_PZ))
		return DAT_INVALID_HANDLE;
	return kd_destroy(pz_handle);
}

LIBDAT_API DAT_RETURN dat_lmr_create(DAT_IA_HANDLE ia_handle,
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
	kd_obj_init(&lmr->obj, ia, DAT_HANDLE_TYPE_LMR, c.out_lmr_handle);
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

LIBDAT_API DAT_RETURN dat_lmr_free(DAT_LMR_HANDLE lmr_handle)
{
	if (!kd_check(lmr_handle, DAT_HANDLE_TYPE_LMR))
		return DAT_INVALID_HANDLE;
	return kd_destroy(lmr_handle);
}

LIBDAT_API DAT_RETURN dat_rmr_create(DAT_PZ_HANDLE pz_handle,
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
	kd_obj_init(&rmr->obj, pz->obj.ia, DAT_HANDLE_TYPE_RMR,
		    c.out_rmr_handle);
	*rmr_handle = rmr;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_rmr_bind(DAT_RMR_HANDLE rmr_handle,
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

	(void)lmr_handle;	/* the triplet names the LMR */
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
	ret = kd_ioctl(rmr->obj.ia, KDAT_IOCTL_RMR_BIND, &c);
	if (ret == DAT_SUCCESS && rmr_context)
		*rmr_context = c.out_rmr_context;
	return ret;
}

LIBDAT_API DAT_RETURN dat_rmr_free(DAT_RMR_HANDLE rmr_handle)
{
	if (!kd_check(rmr_handle, DAT_HANDLE_TYPE_RMR))
		return DAT_INVALID_HANDLE;
	return kd_destroy(rmr_handle);
}

LIBDAT_API DAT_RETURN dat_evd_create(DAT_IA_HANDLE ia_handle,
				     DAT_COUNT qlen, DAT_CNO_HANDLE cno,
				     DAT_EVD_FLAGS flags,
				     DAT_EVD_HANDLE *evd_handle)
{
	struct kdat_evd_create c = { .size = sizeof(c) };
	struct kd_ia *ia = ia_handle;
	struct kd_evd *evd;
	DAT_RETURN ret;

	if (!kd_check(ia, DAT_HANDLE_TYPE_IA))
		return DAT_INVALID_HANDLE;
	if (cno != DAT_HANDLE_NULL && !kd_check(cno, DAT_HANDLE_TYPE_CNO))
		return DAT_INVALID_HANDLE;
	if (qlen <= 0 || !evd_handle)
		return DAT_INVALID_PARAMETER;
	c.ia_handle = ia->obj.kh;
	c.cno_handle = cno ? ((struct kd_obj *)cno)->kh : 0;
	c.qlen = qlen;
	c.evd_flags = flags;
	ret = kd_ioctl(ia, KDAT_IOCTL_EVD_CREATE, &c);
	if (ret)
		return ret;
	evd = calloc(1, sizeof(*evd));
	if (!evd) {
		kd_destroy_kh(ia, c.out_evd_handle);
		return DAT_INSUFFICIENT_RESOURCES;
	}
	evd->qlen = c.out_qlen;
	evd->flags = flags;
	evd->cno = cno;
	kd_obj_init(&evd->obj, ia, DAT_HANDLE_TYPE_EVD, c.out_evd_handle);
	if (kd_rings_wanted()) {
		evd->ring = kd_ring_map(ia, evd->obj.kh, KDAT_RING_EVD);
		if (!evd->ring) {
			kd_destroy(&evd->obj);
			return DAT_INSUFFICIENT_RESOURCES;
		}
	}
	*evd_handle = evd;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_cno_create(DAT_IA_HANDLE ia_handle,
				     DAT_OS_WAIT_PROXY_AGENT agent,
				     DAT_CNO_HANDLE *cno_handle)
{
	struct kdat_cno_create c = { .size = sizeof(c) };
	struct kd_ia *ia = ia_handle;
	struct kd_cno *cno;
	DAT_RETURN ret;

	if (!kd_check(ia, DAT_HANDLE_TYPE_IA))
		return DAT_INVALID_HANDLE;
	if (!cno_handle)
		return DAT_INVALID_PARAMETER;
	c.ia_handle = ia->obj.kh;
	ret = kd_ioctl(ia, KDAT_IOCTL_CNO_CREATE, &c);
	if (ret)
		return ret;
	cno = calloc(1, sizeof(*cno));
	if (!cno) {
		kd_destroy_kh(ia, c.out_cno_handle);
		return DAT_INSUFFICIENT_RESOURCES;
	}
	cno->agent = agent;
	kd_obj_init(&cno->obj, ia, DAT_HANDLE_TYPE_CNO, c.out_cno_handle);
	*cno_handle = cno;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_cno_free(DAT_CNO_HANDLE cno_handle)
{
	if (!kd_check(cno_handle, DAT_HANDLE_TYPE_CNO))
		return DAT_INVALID_HANDLE;
	return kd_destroy(cno_handle);
}

LIBDAT_API DAT_RETURN dat_cno_modify_agent(DAT_CNO_HANDLE cno_handle,
					   DAT_OS_WAIT_PROXY_AGENT agent)
{
	struct kd_cno *cno = cno_handle;

	if (!kd_check(cno, DAT_HANDLE_TYPE_CNO))
		return DAT_INVALID_HANDLE;
	cno->agent = agent;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_cno_wait(DAT_CNO_HANDLE cno_handle,
				   DAT_TIMEOUT timeout,
				   DAT_EVD_HANDLE *evd_handle)
{
	struct kdat_cno_wait c = { .size = sizeof(c) };
	struct kd_cno *cno = cno_handle;
	DAT_RETURN ret;

	if (!kd_check(cno, DAT_HANDLE_TYPE_CNO))
		return DAT_INVALID_HANDLE;
	if (!evd_handle)
		return DAT_INVALID_PARAMETER;
	c.cno_handle = cno->obj.kh;
	c.timeout_us = timeout == DAT_TIMEOUT_INFINITE ? KDAT_WAIT_FOREVER :
							 timeout;
	ret = kd_ioctl(cno->obj.ia, KDAT_IOCTL_CNO_WAIT, &c);
	if (ret)
		return ret;
	*evd_handle = (DAT_EVD_HANDLE)kd_table_find(c.out_evd_handle);
	return DAT_SUCCESS;
}

static DAT_RETURN kd_evd_modify(DAT_EVD_HANDLE evd_handle, uint32_t op,
				DAT_COUNT qlen)
{
	struct kdat_evd_modify c = { .size = sizeof(c), .op = op };
	struct kd_evd *evd = evd_handle;
	DAT_RETURN ret;

	if (!kd_check(evd, DAT_HANDLE_TYPE_EVD))
		return DAT_INVALID_HANDLE;
	if (op == KDAT_EVD_OP_RESIZE) {
		if (qlen <= 0)
			return DAT_INVALID_PARAMETER;
		c.qlen = qlen;
	}
	c.evd_handle = evd->obj.kh;
	if (op == KDAT_EVD_OP_RESIZE && evd->ring)
		pthread_mutex_lock(&evd->ring->lock);
	ret = kd_ioctl(evd->obj.ia, KDAT_IOCTL_EVD_MODIFY, &c);
	if (ret == DAT_SUCCESS && op == KDAT_EVD_OP_RESIZE) {
		evd->qlen = qlen;
		if (evd->ring) {
			/* The events moved to a new ring: map it. */
			struct kd_ring *old = evd->ring;

			evd->ring = kd_ring_map(evd->obj.ia, evd->obj.kh,
						KDAT_RING_EVD);
			pthread_mutex_unlock(&old->lock);
			kd_ring_unmap(old);
			if (!evd->ring)
				return DAT_INSUFFICIENT_RESOURCES;
			return ret;
		}
	}
	if (op == KDAT_EVD_OP_RESIZE && evd->ring)
		pthread_mutex_unlock(&evd->ring->lock);
	return ret;
}

/* Waits on an unwaitable EVD answer DAT_INVALID_STATE; dequeue works. */
LIBDAT_API DAT_RETURN dat_evd_set_unwaitable(DAT_EVD_HANDLE evd_handle)
{
	return kd_evd_modify(evd_handle, KDAT_EVD_OP_SET_UNWAITABLE, 0);
}

LIBDAT_API DAT_RETURN dat_evd_clear_unwaitable(DAT_EVD_HANDLE evd_handle)
{
	return kd_evd_modify(evd_handle, KDAT_EVD_OP_CLEAR_UNWAITABLE, 0);
}

/* A disabled EVD queues its events but does not trigger its CNO. */
LIBDAT_API DAT_RETURN dat_evd_enable(DAT_EVD_HANDLE evd_handle)
{
	return kd_evd_modify(evd_handle, KDAT_EVD_OP_ENABLE, 0);
}

LIBDAT_API DAT_RETURN dat_evd_disable(DAT_EVD_HANDLE evd_handle)
{
	return kd_evd_modify(evd_handle, KDAT_EVD_OP_DISABLE, 0);
}

/* DAT_INVALID_STATE when more events are queued than @evd_qlen. */
LIBDAT_API DAT_RETURN dat_evd_resize(DAT_EVD_HANDLE evd_handle,
				     DAT_COUNT evd_qlen)
{
	return kd_evd_modify(evd_handle, KDAT_EVD_OP_RESIZE, evd_qlen);
}

LIBDAT_API DAT_RETURN dat_evd_modify_cno(DAT_EVD_HANDLE evd_handle,
					 DAT_CNO_HANDLE cno_handle)
{
	struct kdat_evd_modify_cno c = { .size = sizeof(c) };
	struct kd_evd *evd = evd_handle;
	DAT_RETURN ret;

	if (!kd_check(evd, DAT_HANDLE_TYPE_EVD))
		return DAT_INVALID_HANDLE;
	if (cno_handle && !kd_check(cno_handle, DAT_HANDLE_TYPE_CNO))
		return DAT_INVALID_HANDLE;
	c.evd_handle = evd->obj.kh;
	c.cno_handle = cno_handle ? ((struct kd_obj *)cno_handle)->kh : 0;
	ret = kd_ioctl(evd->obj.ia, KDAT_IOCTL_EVD_MODIFY_CNO, &c);
	if (ret == DAT_SUCCESS)
		evd->cno = cno_handle;
	return ret;
}

LIBDAT_API DAT_RETURN dat_evd_free(DAT_EVD_HANDLE evd_handle)
{
	struct kd_evd *evd = evd_handle;

	if (!kd_check(evd, DAT_HANDLE_TYPE_EVD))
		return DAT_INVALID_HANDLE;
	if (evd->obj.ia->async_evd == evd_handle)
		evd->obj.ia->async_evd = DAT_HANDLE_NULL;
	return kd_destroy(&evd->obj);
}

static void kd_sockaddr_from_kdat(const struct kdat_sockaddr *k,
				  struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (k->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = k->port;
		memcpy(&sin->sin_addr, k->addr, 4);
	} else if (k->family == AF_INET6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = k->port;
		sin6->sin6_scope_id = k->scope_id;
		memcpy(&sin6->sin6_addr, k->addr, 16);
	}
}

static DAT_RETURN kd_ep_fetch(struct kd_ep *ep, struct kdat_ep_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->ep_handle = ep->obj.kh;
	return kd_ioctl(ep->obj.ia, KDAT_IOCTL_EP_QUERY, q);
}

/* A kernel event as a DAT event. */
static DAT_RETURN kd_event(struct kd_evd *evd, const struct kdat_event *k,
			   DAT_EVENT *ev)
{
	struct kd_ia *ia = evd->obj.ia;

	memset(ev, 0, sizeof(*ev));
	ev->event_number = k->event_number;
	ev->evd_handle = evd;
	switch (k->event_number) {
	case KDAT_EVENT_DTO_COMPLETION: {
		DAT_DTO_COMPLETION_EVENT_DATA *d =
			&ev->event_data.dto_completion_event_data;

		d->ep_handle = (DAT_EP_HANDLE)kd_table_find(k->handle);
		d->user_cookie.as_64 = k->cookie;
		d->status = k->status;
		d->transfered_length = k->transferred_length;
		d->operation = k->operation;
		break;
	}
	case KDAT_EVENT_CONNECTION_REQUEST: {
		DAT_CR_ARRIVAL_EVENT_DATA *d =
			&ev->event_data.cr_arrival_event_data;
		struct kdat_cr_query q = { .size = sizeof(q),
					   .cr_handle = k->cr_handle };
		struct kd_psp *psp;
		struct kd_cr *cr;

		psp = (struct kd_psp *)kd_table_find(k->handle);
		cr = calloc(1, sizeof(*cr));
		if (!cr)
			return DAT_INSUFFICIENT_RESOURCES;
		if (kd_ioctl(ia, KDAT_IOCTL_CR_QUERY, &q) == DAT_SUCCESS) {
			cr->pdata_len = q.private_data_len;
			memcpy(cr->pdata, q.private_data, sizeof(cr->pdata));
			kd_sockaddr_from_kdat(&q.remote, &cr->remote);
		}
		cr->psp = psp;
		/* The qualifier the PSP was created with, not its port. */
		cr->conn_qual = psp ? psp->conn_qual : k->conn_qual;
		kd_obj_init(&cr->obj, ia, DAT_HANDLE_TYPE_CR, k->cr_handle);
		/*
		 * DAT: an RSP is gone once it produced its request, so the
		 * event names none; it goes when the CR is answered.
		 */
		d->sp_handle.psp_handle =
			psp && psp->obj.type == DAT_HANDLE_TYPE_RSP ? NULL : psp;
		d->local_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ia->addr;
		d->conn_qual = cr->conn_qual;
		d->cr_handle = cr;
		break;
	}
	case KDAT_EVENT_RMR_BIND_COMPLETION: {
		DAT_RMR_BIND_COMPLETION_EVENT_DATA *d =
			&ev->event_data.rmr_completion_event_data;

		d->rmr_handle = (DAT_RMR_HANDLE)kd_table_find(k->handle);
		d->user_cookie.as_64 = k->cookie;
		d->status = k->status;
		break;
	}
	case KDAT_EVENT_SOFTWARE:
		ev->event_data.software_event_data.pointer =
			(DAT_PVOID)(uintptr_t)k->cookie;
		break;
	case KDAT_EVENT_ASYNC_EVD_OVERFLOW:
		ev->event_data.asynch_error_event_data.dat_handle = evd;
		ev->event_data.asynch_error_event_data.reason =
			DAT_EVD_OVERFLOW_ERROR;
		break;
	case KDAT_EVENT_ASYNC_IA_CATASTROPHIC:
		ev->event_data.asynch_error_event_data.dat_handle = ia;
		ev->event_data.asynch_error_event_data.reason =
			DAT_IA_CATASTROPHIC_ERROR;
		break;
	case KDAT_EVENT_ASYNC_SRQ_LOW_WATERMARK:
		ev->event_number = DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR;
		ev->event_data.asynch_error_event_data.dat_handle =
			(DAT_HANDLE)kd_table_find(k->handle);
		ev->event_data.asynch_error_event_data.reason =
			DAT_SRQ_LOW_WATERMARK_EVENT;
		break;
	default:
		if ((k->event_number & 0xff000) == 0x04000) {
			DAT_CONNECTION_EVENT_DATA *d =
				&ev->event_data.connect_event_data;
			struct kd_ep *ep;

			ep = (struct kd_ep *)kd_table_find(k->handle);
			d->ep_handle = ep;
			if (ep && k->private_data_len) {
				struct kdat_ep_query q;

				if (kd_ep_fetch(ep, &q) == DAT_SUCCESS) {
					memcpy(ep->pdata, q.private_data,
					       sizeof(ep->pdata));
					d->private_data_size =
						q.private_data_len;
					d->private_data = ep->pdata;
				}
			}
		}
		break;
	}
	return DAT_SUCCESS;
}

/*
 * Ring path of dequeue (@threshold 0) and wait: events are read from the
 * ring with no system call; the kernel is asked only to wait for more, or
 * to bring in solicited-wait receives it holds back (KDAT_RING_F_POLL).
 */
static DAT_RETURN kd_evd_ring_take(struct kd_evd *evd, DAT_COUNT threshold,
				   DAT_TIMEOUT timeout, DAT_EVENT *event,
				   DAT_COUNT *nmore)
{
	struct kd_ring *r = evd->ring;
	struct kdat_evd_wait w = {
		.size = sizeof(w),
		.evd_handle = evd->obj.kh,
		.threshold = threshold,
		.timeout_us = timeout == DAT_TIMEOUT_INFINITE ?
			KDAT_WAIT_FOREVER : timeout,
	};
	struct kdat_event k;
	uint32_t head, tail;
	bool asked = false;
	DAT_RETURN ret;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		head = *r->head;	/* ours */
		tail = __atomic_load_n(r->tail, __ATOMIC_ACQUIRE);
		if (tail - head >= (uint32_t)(threshold ? threshold : 1))
			break;
		if (!threshold) {
			if (asked || !(__atomic_load_n(r->flags,
						       __ATOMIC_RELAXED) &
				       KDAT_RING_F_POLL)) {
				pthread_mutex_unlock(&r->lock);
				return DAT_QUEUE_EMPTY;
			}
		}
		/* Wait (or bring in held-back events) in the kernel. */
		asked = true;
		ret = kd_ioctl(evd->obj.ia, KDAT_IOCTL_EVD_WAIT, &w);
		if (ret) {
			pthread_mutex_unlock(&r->lock);
			return ret;
		}
	}
	memcpy(&k, r->entries + (size_t)(head & r->mask) * sizeof(k),
	       sizeof(k));
	__atomic_store_n(r->head, head + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&r->lock);
	if (nmore)
		*nmore = tail - head - 1;
	return kd_event(evd, &k, event);
}

static DAT_RETURN kd_evd_take(struct kd_evd *evd, DAT_COUNT threshold,
			      DAT_TIMEOUT timeout, DAT_EVENT *event,
			      DAT_COUNT *nmore)
{
	struct kdat_event k;
	struct kdat_evd_wait w = {
		.size = sizeof(w),
		.evd_handle = evd->obj.kh,
		.threshold = threshold,
		.max_events = 1,
		.timeout_us = timeout == DAT_TIMEOUT_INFINITE ?
			KDAT_WAIT_FOREVER : timeout,
		.events = (uintptr_t)&k,
	};
	DAT_RETURN ret;

	if (evd->ring)
		return kd_evd_ring_take(evd, threshold, timeout, event, nmore);
	ret = kd_ioctl(evd->obj.ia, KDAT_IOCTL_EVD_WAIT, &w);
	if (ret)
		return ret;
	if (nmore)
		*nmore = w.out_nmore;
	return kd_event(evd, &k, event);
}

LIBDAT_API DAT_RETURN dat_evd_dequeue(DAT_EVD_HANDLE evd_handle,
				      DAT_EVENT *event)
{
	if (!kd_check(evd_handle, DAT_HANDLE_TYPE_EVD))
		return DAT_INVALID_HANDLE;
	if (!event)
		return DAT_INVALID_PARAMETER;
	return kd_evd_take(evd_handle, 0, 0, event, NULL);
}

LIBDAT_API DAT_RETURN dat_evd_wait(DAT_EVD_HANDLE evd_handle,
				   DAT_TIMEOUT timeout, DAT_COUNT threshold,
				   DAT_EVENT *event, DAT_COUNT *nmore)
{
	struct kd_evd *evd = evd_handle;

	if (!kd_check(evd, DAT_HANDLE_TYPE_EVD))
		return DAT_INVALID_HANDLE;
	if (!event || threshold <= 0 || threshold > evd->qlen)
		return DAT_INVALID_PARAMETER;
	return kd_evd_take(evd, threshold, timeout, event, nmore);
}

static DAT_RETURN kd_ep_create(DAT_IA_HANDLE ia_handle,
			       DAT_PZ_HANDLE pz_handle,
			       DAT_EVD_HANDLE recv_evd,
			       DAT_EVD_HANDLE request_evd,
			       DAT_EVD_HANDLE connect_evd,
			       struct kd_srq *srq,
			       const DAT_EP_ATTR *attr,
			       DAT_EP_HANDLE *ep_handle)
{
	struct kdat_ep_create c = { .size = sizeof(c) };
	struct kd_ia *ia = ia_handle;
	struct kd_ep *ep;
	DAT_RETURN ret;

	if (!kd_check(ia, DAT_HANDLE_TYPE_IA))
		return DAT_INVALID_HANDLE;
	if (!kd_check(pz_handle, DAT_HANDLE_TYPE_PZ) ||
	    !kd_check(recv_evd, DAT_HANDLE_TYPE_EVD) ||
	    !kd_check(request_evd, DAT_HANDLE_TYPE_EVD) ||
	    !kd_check(connect_evd, DAT_HANDLE_TYPE_EVD) ||
	    ((struct kd_obj *)pz_handle)->ia != ia)
		return DAT_INVALID_HANDLE;
	if (!ep_handle)
		return DAT_INVALID_PARAMETER;
	c.pz_handle = ((struct kd_obj *)pz_handle)->kh;
	c.recv_evd_handle = ((struct kd_obj *)recv_evd)->kh;
	c.request_evd_handle = ((struct kd_obj *)request_evd)->kh;
	c.connect_evd_handle = ((struct kd_obj *)connect_evd)->kh;
	c.srq_handle = srq ? srq->obj.kh : 0;
	if (attr) {
		if (attr->service_type != DAT_SERVICE_TYPE_RC)
			return DAT_MODEL_NOT_SUPPORTED;
		c.attr.max_recv_dtos = attr->max_recv_dtos;
		c.attr.max_request_dtos = attr->max_request_dtos;
		c.attr.max_recv_iov = attr->max_recv_iov;
		/*
		 * DAT 2.0 sizes RDMA IOVs apart from sends; the QP has one
		 * limit for its send queue: the largest. (A send may then
		 * use as many segments as an RDMA; kdat does not refuse it.)
		 */
		c.attr.max_request_iov = attr->max_request_iov;
		if (attr->max_rdma_read_iov > (DAT_COUNT)c.attr.max_request_iov)
			c.attr.max_request_iov = attr->max_rdma_read_iov;
		if (attr->max_rdma_write_iov > (DAT_COUNT)c.attr.max_request_iov)
			c.attr.max_request_iov = attr->max_rdma_write_iov;
		c.attr.max_rdma_read_in = attr->max_rdma_read_in;
		c.attr.max_rdma_read_out = attr->max_rdma_read_out;
		c.attr.recv_completion_flags = attr->recv_completion_flags;
		c.attr.request_completion_flags =
			attr->request_completion_flags;
	} else {
		c.attr.max_recv_dtos = 16;
		c.attr.max_request_dtos = 16;
		c.attr.max_recv_iov = 1;
		c.attr.max_request_iov = 1;
		c.attr.max_rdma_read_in = 4;
		c.attr.max_rdma_read_out = 4;
	}
	ret = kd_ioctl(ia, KDAT_IOCTL_EP_CREATE, &c);
	if (ret)
		return ret;
	ep = calloc(1, sizeof(*ep));
	if (!ep) {
		kd_destroy_kh(ia, c.out_ep_handle);
		return DAT_INSUFFICIENT_RESOURCES;
	}
	ep->pz = pz_handle;
	ep->recv_evd = recv_evd;
	ep->req_evd = request_evd;
	ep->conn_evd = connect_evd;
	ep->srq = srq;
	ep->attr.service_type = DAT_SERVICE_TYPE_RC;
	ep->attr.max_message_size = 1U << 31;
	ep->attr.max_rdma_size = 1U << 31;
	ep->attr.qos = DAT_QOS_BEST_EFFORT;
	ep->attr.max_recv_dtos = c.attr.max_recv_dtos;
	ep->attr.max_request_dtos = c.attr.max_request_dtos;
	ep->attr.max_recv_iov = c.attr.max_recv_iov;
	ep->attr.max_request_iov = c.attr.max_request_iov;
	ep->attr.max_rdma_read_in = c.attr.max_rdma_read_in;
	ep->attr.max_rdma_read_out = c.attr.max_rdma_read_out;
	ep->attr.max_rdma_read_iov = c.attr.max_request_iov;
	ep->attr.max_rdma_write_iov = c.attr.max_request_iov;
	ep->attr.recv_completion_flags = c.attr.recv_completion_flags;
	ep->attr.request_completion_flags = c.attr.request_completion_flags;
	kd_obj_init(&ep->obj, ia, DAT_HANDLE_TYPE_EP, c.out_ep_handle);
	if (kd_rings_wanted()) {
		ep->sq = kd_ring_map(ia, ep->obj.kh, KDAT_RING_SEND);
		if (ep->sq && !srq)
			ep->rq = kd_ring_map(ia, ep->obj.kh, KDAT_RING_RECV);
		/*
		 * EAGAIN: the kernel has no poller thread to spare
		 * (max_pollers); this EP posts by ioctl, as with KDAT_RINGS=0.
		 */
		if (!ep->sq && errno == EAGAIN) {
			ep->rq = NULL;
		} else if (!ep->sq || (!srq && !ep->rq)) {
			kd_destroy(&ep->obj);
			return DAT_INSUFFICIENT_RESOURCES;
		}
	}
	*ep_handle = ep;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_ep_create(DAT_IA_HANDLE ia_handle,
				    DAT_PZ_HANDLE pz_handle,
				    DAT_EVD_HANDLE recv_evd,
				    DAT_EVD_HANDLE request_evd,
				    DAT_EVD_HANDLE connect_evd,
				    const DAT_EP_ATTR *attr,
				    DAT_EP_HANDLE *ep_handle)
{
	return kd_ep_create(ia_handle, pz_handle, recv_evd, request_evd,
			    connect_evd, NULL, attr, ep_handle);
}

LIBDAT_API DAT_RETURN dat_ep_create_with_srq(DAT_IA_HANDLE ia_handle,
					     DAT_PZ_HANDLE pz_handle,
					     DAT_EVD_HANDLE recv_evd,
					     DAT_EVD_HANDLE request_evd,
					     DAT_EVD_HANDLE connect_evd,
					     DAT_SRQ_HANDLE srq_handle,
					     const DAT_EP_ATTR *attr,
					     DAT_EP_HANDLE *ep_handle)
{
	if (!kd_check(srq_handle, DAT_HANDLE_TYPE_SRQ))
		return DAT_INVALID_HANDLE;
	return kd_ep_create(ia_handle, pz_handle, recv_evd, request_evd,
			    connect_evd, srq_handle, attr, ep_handle);
}

LIBDAT_API DAT_RETURN dat_srq_create(DAT_IA_HANDLE ia_handle,
				     DAT_PZ_HANDLE pz_handle,
				     DAT_SRQ_ATTR *attr,
				     DAT_SRQ_HANDLE *srq_handle)
{
	struct kdat_srq_create c = { .size = sizeof(c) };
	struct kd_ia *ia = ia_handle;
	struct kd_srq *srq;
	DAT_RETURN ret;

	if (!kd_check(ia, DAT_HANDLE_TYPE_IA) ||
	    !kd_check(pz_handle, DAT_HANDLE_TYPE_PZ))
		return DAT_INVALID_HANDLE;
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
	kd_obj_init(&srq->obj, ia, DAT_HANDLE_TYPE_SRQ, c.out_srq_handle);
	if (kd_rings_wanted()) {
		srq->ring = kd_ring_map(ia, srq->obj.kh, KDAT_RING_SRQ);
		/* EAGAIN: no poller to spare; posts go by ioctl. */
		if (!srq->ring && errno != EAGAIN) {
			kd_destroy(&srq->obj);
			return DAT_INSUFFICIENT_RESOURCES;
		}
	}
	*srq_handle = srq;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_srq_free(DAT_SRQ_HANDLE srq_handle)
{
	if (!kd_check(srq_handle, DAT_HANDLE_TYPE_SRQ))
		return DAT_INVALID_HANDLE;
	return kd_destroy(srq_handle);
}

LIBDAT_API DAT_RETURN dat_srq_set_lw(DAT_SRQ_HANDLE srq_handle,
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

LIBDAT_API DAT_RETURN dat_srq_resize(DAT_SRQ_HANDLE srq_handle,
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
	if (ret == DAT_SUCCESS)
		srq->attr.max_recv_dtos = srq_max_recv_dto;
	return ret;
}

static DAT_RETURN kd_post(DAT_EP_HANDLE ep_handle, uint32_t op,
			  DAT_COUNT num, const DAT_LMR_TRIPLET *iov,
			  DAT_DTO_COOKIE cookie,
			  const DAT_RMR_TRIPLET *remote,
			  DAT_COMPLETION_FLAGS flags);

LIBDAT_API DAT_RETURN dat_srq_post_recv(DAT_SRQ_HANDLE srq_handle,
					DAT_COUNT num, DAT_LMR_TRIPLET *iov,
					DAT_DTO_COOKIE cookie)
{
	if (!kd_check(srq_handle, DAT_HANDLE_TYPE_SRQ))
		return DAT_INVALID_HANDLE;
	return kd_post(srq_handle, KDAT_POST_SRQ_RECV, num, iov, cookie, NULL,
		       0);
}

LIBDAT_API DAT_RETURN dat_ep_free(DAT_EP_HANDLE ep_handle)
{
	if (!kd_check(ep_handle, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	return kd_destroy(ep_handle);
}

static DAT_EP_STATE kd_ep_state(uint32_t s)
{
	switch (s) {
	case KDAT_EP_STATE_UNCONNECTED:
		return DAT_EP_STATE_UNCONNECTED;
	case KDAT_EP_STATE_RESERVED:
		return DAT_EP_STATE_RESERVED;
	case KDAT_EP_STATE_PASSIVE_CONNECTION_PENDING:
		return DAT_EP_STATE_PASSIVE_CONNECTION_PENDING;
	case KDAT_EP_STATE_ACTIVE_CONNECTION_PENDING:
		return DAT_EP_STATE_ACTIVE_CONNECTION_PENDING;
	case KDAT_EP_STATE_TENTATIVE_CONNECTION_PENDING:
		return DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING;
	case KDAT_EP_STATE_CONNECTED:
		return DAT_EP_STATE_CONNECTED;
	case KDAT_EP_STATE_DISCONNECT_PENDING:
		return DAT_EP_STATE_DISCONNECT_PENDING;
	case KDAT_EP_STATE_COMPLETION_PENDING:
		return DAT_EP_STATE_COMPLETION_PENDING;
	default:
		return DAT_EP_STATE_DISCONNECTED;
	}
}

LIBDAT_API DAT_RETURN dat_ep_get_status(DAT_EP_HANDLE ep_handle,
					DAT_EP_STATE *state,
					DAT_BOOLEAN *recv_idle,
					DAT_BOOLEAN *request_idle)
{
	struct kdat_ep_query q;
	DAT_RETURN ret;

	if (!kd_check(ep_handle, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	ret = kd_ep_fetch(ep_handle, &q);
	if (ret)
		return ret;
	if (state)
		*state = kd_ep_state(q.state);
	if (recv_idle)
		*recv_idle = !q.out_recv_posted;
	if (request_idle)
		*request_idle = !q.out_request_posted;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_ep_query(DAT_EP_HANDLE ep_handle,
				   DAT_EP_PARAM_MASK mask,
				   DAT_EP_PARAM *param)
{
	struct kd_ep *ep = ep_handle;
	struct kdat_ep_query q;
	DAT_RETURN ret;

	(void)mask;
	if (!kd_check(ep, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	if (!param)
		return DAT_INVALID_PARAMETER;
	ret = kd_ep_fetch(ep, &q);
	if (ret)
		return ret;
	memset(param, 0, sizeof(*param));
	param->ia_handle = ep->obj.ia;
	param->ep_state = kd_ep_state(q.state);
	kd_sockaddr_from_kdat(&q.remote, &ep->remote);
	kd_sockaddr_from_kdat(&q.local, &ep->local);
	if (!ep->local.ss_family)
		ep->local = ep->obj.ia->addr;
	param->local_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ep->local;
	param->local_port_qual = ntohs(q.local.port);
	param->remote_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ep->remote;
	param->remote_port_qual = ntohs(q.remote.port);
	param->pz_handle = ep->pz;
	param->recv_evd_handle = ep->recv_evd;
	param->request_evd_handle = ep->req_evd;
	param->connect_evd_handle = ep->conn_evd;
	param->srq_handle = ep->srq;
	param->ep_attr = ep->attr;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_ep_connect(DAT_EP_HANDLE ep_handle,
				     DAT_IA_ADDRESS_PTR remote,
				     DAT_CONN_QUAL conn_qual,
				     DAT_TIMEOUT timeout,
				     DAT_COUNT pdata_size,
				     const DAT_PVOID pdata, DAT_QOS qos,
				     DAT_CONNECT_FLAGS flags)
{
	struct kdat_ep_connect c = { .size = sizeof(c) };
	struct kd_ep *ep = ep_handle;

	(void)qos;
	(void)flags;
	if (!kd_check(ep, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	if (!remote || pdata_size < 0 || (pdata_size && !pdata))
		return DAT_INVALID_PARAMETER;
	if (pdata_size > KDAT_MAX_PRIVATE_DATA)
		return DAT_INVALID_PARAMETER;
	if (remote->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)remote;

		c.remote.family = AF_INET;
		memcpy(c.remote.addr, &sin->sin_addr, 4);
	} else if (remote->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)remote;

		c.remote.family = AF_INET6;
		c.remote.scope_id = sin6->sin6_scope_id;
		memcpy(c.remote.addr, &sin6->sin6_addr, 16);
	} else {
		return DAT_INVALID_ADDRESS;
	}
	c.ep_handle = ep->obj.kh;
	if (!kd_port(conn_qual))
		return DAT_INVALID_PARAMETER;
	c.conn_qual = kd_port(conn_qual);
	c.timeout_us = timeout == DAT_TIMEOUT_INFINITE ? KDAT_WAIT_FOREVER :
							 timeout;
	c.private_data = (uintptr_t)pdata;
	c.private_data_len = pdata_size;
	return kd_ioctl(ep->obj.ia, KDAT_IOCTL_EP_CONNECT, &c);
}

LIBDAT_API DAT_RETURN dat_ep_disconnect(DAT_EP_HANDLE ep_handle,
					DAT_CLOSE_FLAGS flags)
{
	struct kdat_ep_handle_cmd c = { .size = sizeof(c) };
	struct kd_ep *ep = ep_handle;

	if (!kd_check(ep, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
		return DAT_INVALID_PARAMETER;
	c.ep_handle = ep->obj.kh;
	c.flags = flags;
	return kd_ioctl(ep->obj.ia, KDAT_IOCTL_EP_DISCONNECT, &c);
}

LIBDAT_API DAT_RETURN dat_ep_reset(DAT_EP_HANDLE ep_handle)
{
	struct kdat_ep_handle_cmd c = { .size = sizeof(c) };
	struct kd_ep *ep = ep_handle;

	if (!kd_check(ep, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	c.ep_handle = ep->obj.kh;
	return kd_ioctl(ep->obj.ia, KDAT_IOCTL_EP_RESET, &c);
}

/*
 * dat_ep_modify changes what a QP built at create can take: completion
 * flags (not SOLICITED_WAIT on receives, which picks the receive CQ), RDMA
 * read depths, and DTO counts up to those the EP was created with. Any
 * other field may be named only with its current value; another value is
 * DAT_MODEL_NOT_SUPPORTED (the QP would have to be rebuilt), as is a DTO
 * count above the created one.
 */
#define KD_EP_MODIFIABLE (DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS | \
			  DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS | \
			  DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN | \
			  DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT | \
			  DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS | \
			  DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS)

static bool kd_ep_param_same(const struct kd_ep *ep, DAT_EP_PARAM_MASK mask,
			     const DAT_EP_PARAM *p)
{
	const DAT_EP_ATTR *a = &p->ep_attr, *cur = &ep->attr;

#define KD_SAME(bit, cond) (!(mask & (bit)) || (cond))
	return KD_SAME(DAT_EP_FIELD_PZ_HANDLE, p->pz_handle == ep->pz) &&
	       KD_SAME(DAT_EP_FIELD_RECV_EVD_HANDLE,
		       p->recv_evd_handle == ep->recv_evd) &&
	       KD_SAME(DAT_EP_FIELD_REQUEST_EVD_HANDLE,
		       p->request_evd_handle == ep->req_evd) &&
	       KD_SAME(DAT_EP_FIELD_CONNECT_EVD_HANDLE,
		       p->connect_evd_handle == ep->conn_evd) &&
	       KD_SAME(DAT_EP_FIELD_SRQ_HANDLE,
		       p->srq_handle == (DAT_SRQ_HANDLE)ep->srq) &&
	       KD_SAME(DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE,
		       a->service_type == cur->service_type) &&
	       KD_SAME(DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE,
		       a->max_message_size == cur->max_message_size) &&
	       KD_SAME(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE,
		       a->max_rdma_size == cur->max_rdma_size) &&
	       KD_SAME(DAT_EP_FIELD_EP_ATTR_QOS, a->qos == cur->qos) &&
	       KD_SAME(DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV,
		       a->max_recv_iov == cur->max_recv_iov) &&
	       KD_SAME(DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV,
		       a->max_request_iov == cur->max_request_iov) &&
	       KD_SAME(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV,
		       a->max_rdma_read_iov == cur->max_rdma_read_iov) &&
	       KD_SAME(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV,
		       a->max_rdma_write_iov == cur->max_rdma_write_iov);
#undef KD_SAME
}

LIBDAT_API DAT_RETURN dat_ep_modify(DAT_EP_HANDLE ep_handle,
				    DAT_EP_PARAM_MASK mask,
				    const DAT_EP_PARAM *param)
{
	struct kdat_ep_modify c = { .size = sizeof(c) };
	const DAT_EP_ATTR *a;
	struct kd_ep *ep = ep_handle;

	if (!kd_check(ep, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	if (!param || (mask & ~DAT_EP_FIELD_ALL))
		return DAT_INVALID_PARAMETER;
	/* Read-only fields. */
	if (mask & (DAT_EP_FIELD_IA_HANDLE | DAT_EP_FIELD_EP_STATE |
		    DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR |
		    DAT_EP_FIELD_LOCAL_PORT_QUAL |
		    DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR |
		    DAT_EP_FIELD_REMOTE_PORT_QUAL))
		return DAT_INVALID_PARAMETER;
	if (!kd_ep_param_same(ep, mask & ~KD_EP_MODIFIABLE, param))
		return DAT_MODEL_NOT_SUPPORTED;
	a = &param->ep_attr;
	if (a->max_recv_dtos < 0 || a->max_request_dtos < 0 ||
	    a->max_rdma_read_in < 0 || a->max_rdma_read_out < 0)
		return DAT_INVALID_PARAMETER;
	c.ep_handle = ep->obj.kh;
	c.attr.recv_completion_flags = ep->attr.recv_completion_flags;
	c.attr.request_completion_flags = ep->attr.request_completion_flags;
	c.attr.max_rdma_read_in = ep->attr.max_rdma_read_in;
	c.attr.max_rdma_read_out = ep->attr.max_rdma_read_out;
	c.attr.max_recv_dtos = ep->attr.max_recv_dtos;
	c.attr.max_request_dtos = ep->attr.max_request_dtos;
	if (mask & DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS)
		c.attr.recv_completion_flags = a->recv_completion_flags;
	if (mask & DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS)
		c.attr.request_completion_flags = a->request_completion_flags;
	if (mask & (DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS |
		    DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS))
		c.mask |= KDAT_EP_MODIFY_COMPLETION_FLAGS;
	if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN)
		c.attr.max_rdma_read_in = a->max_rdma_read_in;
	if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT)
		c.attr.max_rdma_read_out = a->max_rdma_read_out;
	if (mask & (DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN |
		    DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT))
		c.mask |= KDAT_EP_MODIFY_RDMA_READ;
	if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS)
		c.attr.max_recv_dtos = a->max_recv_dtos;
	if (mask & DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS)
		c.attr.max_request_dtos = a->max_request_dtos;
	if (mask & (DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS |
		    DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS))
		c.mask |= KDAT_EP_MODIFY_DTOS;
	if (!c.mask)
		return DAT_SUCCESS;	/* only current values named */
	if (ioctl(ep->obj.ia->fd, KDAT_IOCTL_EP_MODIFY, &c))
		return errno == EOPNOTSUPP ? DAT_MODEL_NOT_SUPPORTED :
					     dat_from_errno(errno);
	ep->attr.recv_completion_flags = c.attr.recv_completion_flags;
	ep->attr.request_completion_flags = c.attr.request_completion_flags;
	ep->attr.max_rdma_read_in = c.attr.max_rdma_read_in;
	ep->attr.max_rdma_read_out = c.attr.max_rdma_read_out;
	ep->attr.max_recv_dtos = c.attr.max_recv_dtos;
	ep->attr.max_request_dtos = c.attr.max_request_dtos;
	return DAT_SUCCESS;
}

/*
 * EP watermarks: an RC QP gives no event at a send-queue depth, so kdat
 * has none to offer (the IA reports max_ep_... as 0 watermarks).
 */
LIBDAT_API DAT_RETURN dat_ep_set_watermark(DAT_EP_HANDLE ep_handle,
					   DAT_COUNT soft_high_watermark,
					   DAT_COUNT hard_high_watermark)
{
	(void)soft_high_watermark;
	(void)hard_high_watermark;
	if (!kd_check(ep_handle, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	return DAT_MODEL_NOT_SUPPORTED;
}

/*
 * What the kernel checks of a DTO, answered here too on the ring path, so
 * that DAT's synchronous return codes stay synchronous. The kernel checks
 * every entry again (it trusts nothing in a ring); this only decides the
 * return code. Same order as the kernel's check.
 */
static DAT_RETURN kd_ring_check(struct kd_pz *pz, uint32_t need,
				DAT_COUNT num, const DAT_LMR_TRIPLET *iov,
				uint64_t *total)
{
	DAT_COUNT i;

	*total = 0;
	for (i = 0; i < num; i++) {
		const struct kd_obj *o = kd_table_find(iov[i].lmr_context);
		const struct kd_lmr *lmr = (const struct kd_lmr *)o;
		uint32_t priv;
		uint64_t end;

		if (!o || o->type != DAT_HANDLE_TYPE_LMR)
			return DAT_PRIVILEGES_VIOLATION;
		priv = lmr->priv;
		if (priv & DAT_MEM_PRIV_LOCAL_WRITE_FLAG)
			priv |= DAT_MEM_PRIV_LOCAL_READ_FLAG;
		if ((priv & need) != need)
			return DAT_PRIVILEGES_VIOLATION;
		if (lmr->pz != pz)
			return DAT_PROTECTION_VIOLATION;
		if (__builtin_add_overflow(iov[i].virtual_address,
					   iov[i].segment_length, &end) ||
		    iov[i].virtual_address < lmr->addr ||
		    end > lmr->addr + lmr->length ||
		    iov[i].segment_length > UINT32_MAX)
			return DAT_INVALID_PARAMETER;
		*total += iov[i].segment_length;
	}
	return *total > UINT32_MAX ? DAT_INVALID_PARAMETER : DAT_SUCCESS;
}

static DAT_RETURN kd_ring_flags_ok(const struct kd_ep *ep, uint32_t op,
				   DAT_COMPLETION_FLAGS flags)
{
	DAT_COMPLETION_FLAGS allowed, ep_flags;

	if (op == KDAT_DTO_RECEIVE) {
		allowed = DAT_COMPLETION_UNSIGNALLED_FLAG;
		ep_flags = ep->attr.recv_completion_flags;
	} else {
		allowed = DAT_COMPLETION_SUPPRESS_FLAG |
			  DAT_COMPLETION_UNSIGNALLED_FLAG |
			  DAT_COMPLETION_BARRIER_FENCE_FLAG;
		if (op == KDAT_DTO_SEND)
			allowed |= DAT_COMPLETION_SOLICITED_WAIT_FLAG;
		ep_flags = ep->attr.request_completion_flags;
	}
	if ((flags & ~allowed) ||
	    ((flags & DAT_COMPLETION_UNSIGNALLED_FLAG) &&
	     !(ep_flags & DAT_COMPLETION_UNSIGNALLED_FLAG)))
		return DAT_INVALID_PARAMETER;
	return DAT_SUCCESS;
}

/*
 * The queue looks full, but the kernel may not have taken every entry yet
 * (entries flushed at once on a DISCONNECTED EP, or refused, leave the
 * queue as soon as it does): let it catch up, then decide as the ioctl
 * path would. Rare; may make system calls. @r->lock held. True when room
 * appeared.
 */
static bool kd_ring_settle(struct kd_ring *r, int fd, uint32_t depth)
{
	uint32_t tail = *r->tail;
	int spins;

	for (spins = 0; spins < 100000; spins++) {
		if (tail - __atomic_load_n(r->completed, __ATOMIC_ACQUIRE) <
		    depth)
			return true;
		if (__atomic_load_n(r->head, __ATOMIC_ACQUIRE) == tail)
			return false;	/* all taken: truly full */
		if (__atomic_load_n(r->flags, __ATOMIC_RELAXED) &
		    KDAT_RING_F_NEED_WAKEUP) {
			struct kdat_ring_wake w = { .size = sizeof(w) };

			ioctl(fd, KDAT_IOCTL_RING_WAKE, &w);
		}
		sched_yield();
	}
	return false;
}

/*
 * The ring path of a post: check, write the entry at tail, publish it,
 * and ring the doorbell only if the poller said it sleeps. Full barrier
 * between publishing tail and reading flags: see the uapi header.
 */
static DAT_RETURN kd_ring_post(struct kd_ring *r, struct kd_pz *pz,
			       const struct kd_ep *ep, uint32_t op,
			       uint32_t depth, DAT_COUNT num,
			       const DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
			       const DAT_RMR_TRIPLET *remote,
			       DAT_COMPLETION_FLAGS flags)
{
	uint32_t need = op == KDAT_DTO_RECEIVE || op == KDAT_DTO_RDMA_READ ?
			DAT_MEM_PRIV_LOCAL_WRITE_FLAG :
			DAT_MEM_PRIV_LOCAL_READ_FLAG;
	struct kdat_sqe *e;
	uint32_t tail, state;
	uint64_t total;
	DAT_RETURN ret;
	DAT_COUNT i;

	if (ep) {
		ret = kd_ring_flags_ok(ep, op, flags);
		if (ret)
			return ret;
	} else if (flags) {
		return DAT_INVALID_PARAMETER;
	}
	if ((uint32_t)num > r->max_iov)
		return DAT_INVALID_PARAMETER;
	ret = kd_ring_check(pz, need, num, iov, &total);
	if (ret)
		return ret;
	if (op == KDAT_DTO_RDMA_READ && total < remote->segment_length)
		return DAT_LENGTH_ERROR;
	/* The device is gone: as the ioctl's ENODEV. */
	if (__atomic_load_n(r->flags, __ATOMIC_RELAXED) & KDAT_RING_F_DEAD)
		return DAT_INVALID_STATE;
	state = __atomic_load_n(r->ep_state, __ATOMIC_RELAXED);
	if (ep && op != KDAT_DTO_RECEIVE &&
	    state != KDAT_EP_STATE_CONNECTED &&
	    state != KDAT_EP_STATE_DISCONNECTED)
		return DAT_INVALID_STATE;

	if (depth > r->mask + 1)
		depth = r->mask + 1;	/* never more than the ring holds */
	pthread_mutex_lock(&r->lock);
	tail = *r->tail;	/* ours */
	if (tail - __atomic_load_n(r->completed, __ATOMIC_ACQUIRE) >= depth &&
	    !kd_ring_settle(r, ep ? ep->obj.ia->fd : kd_proc.fd, depth)) {
		pthread_mutex_unlock(&r->lock);
		return DAT_INSUFFICIENT_RESOURCES;
	}
	e = (struct kdat_sqe *)(r->entries + (size_t)(tail & r->mask) *
				r->entry_size);
	e->op = op;
	e->num_segments = num;
	e->__pad = 0;
	e->completion_flags = flags;
	e->cookie = cookie.as_64;
	memset(&e->remote, 0, sizeof(e->remote));
	if (remote) {
		e->remote.rmr_context = remote->rmr_context;
		e->remote.target_address = remote->virtual_address;
		e->remote.segment_length = remote->segment_length;
	}
	for (i = 0; i < num; i++) {
		e->iov[i].lmr_context = iov[i].lmr_context;
		e->iov[i].__pad = 0;
		e->iov[i].virtual_address = iov[i].virtual_address;
		e->iov[i].segment_length = iov[i].segment_length;
	}
	__atomic_store_n(r->tail, tail + 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (ep && state == KDAT_EP_STATE_DISCONNECTED) {
		/*
		 * Flushed at once, as the spec says: take it now, in our
		 * context, so its event is queued when we return.
		 */
		struct kdat_ring_wake w = { .size = sizeof(w),
					    .flags = KDAT_RING_WAKE_SUBMIT };

		ioctl(ep->obj.ia->fd, KDAT_IOCTL_RING_WAKE, &w);
	} else if (__atomic_load_n(r->flags, __ATOMIC_RELAXED) &
		   KDAT_RING_F_NEED_WAKEUP) {
		struct kdat_ring_wake w = { .size = sizeof(w) };

		ioctl(ep ? ep->obj.ia->fd : kd_proc.fd, KDAT_IOCTL_RING_WAKE,
		      &w);
	}
	pthread_mutex_unlock(&r->lock);
	return DAT_SUCCESS;
}

static DAT_RETURN kd_post(DAT_EP_HANDLE ep_handle, uint32_t op,
			  DAT_COUNT num, const DAT_LMR_TRIPLET *iov,
			  DAT_DTO_COOKIE cookie,
			  const DAT_RMR_TRIPLET *remote,
			  DAT_COMPLETION_FLAGS flags)
{
	struct kdat_lmr_triplet kiov[32];
	struct kdat_post p = { .size = sizeof(p) };
	struct kd_obj *ep = ep_handle;
	DAT_COUNT i;

	if (!kd_check(ep, op == KDAT_POST_SRQ_RECV ? DAT_HANDLE_TYPE_SRQ :
						    DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	if (num < 0 || (num && !iov))
		return DAT_INVALID_PARAMETER;
	/* Over the EP's limit: the kernel refuses; so do we, cheaper. */
	if ((size_t)num > sizeof(kiov) / sizeof(kiov[0]))
		return DAT_INVALID_PARAMETER;
	if (op == KDAT_POST_SRQ_RECV && ((struct kd_srq *)ep)->ring) {
		struct kd_srq *srq = (struct kd_srq *)ep;

		return kd_ring_post(srq->ring, srq->pz, NULL, KDAT_DTO_RECEIVE,
				    srq->attr.max_recv_dtos, num, iov, cookie,
				    NULL, flags);
	}
	if (op != KDAT_POST_SRQ_RECV && ((struct kd_ep *)ep)->sq) {
		struct kd_ep *e = (struct kd_ep *)ep;

		if (op == KDAT_DTO_RECEIVE && !e->rq)
			return DAT_INVALID_PARAMETER;	/* the SRQ's */
		if (op == KDAT_DTO_RECEIVE)
			return kd_ring_post(e->rq, e->pz, e, op,
					    e->attr.max_recv_dtos, num, iov,
					    cookie, NULL, flags);
		return kd_ring_post(e->sq, e->pz, e, op,
				    e->attr.max_request_dtos, num, iov, cookie,
				    remote, flags);
	}
	for (i = 0; i < num; i++) {
		kiov[i].lmr_context = iov[i].lmr_context;
		kiov[i].__pad = 0;
		kiov[i].virtual_address = iov[i].virtual_address;
		kiov[i].segment_length = iov[i].segment_length;
	}
	p.ep_handle = ep->kh;
	p.op = op;
	p.completion_flags = flags;
	p.num_segments = num;
	p.iov = (uintptr_t)kiov;
	p.cookie = cookie.as_64;
	if (remote) {
		p.remote.rmr_context = remote->rmr_context;
		p.remote.target_address = remote->virtual_address;
		p.remote.segment_length = remote->segment_length;
	}
	return kd_ioctl(ep->ia, KDAT_IOCTL_POST, &p);
}

LIBDAT_API DAT_RETURN dat_ep_post_send(DAT_EP_HANDLE ep, DAT_COUNT num,
				       DAT_LMR_TRIPLET *iov,
				       DAT_DTO_COOKIE cookie,
				       DAT_COMPLETION_FLAGS flags)
{
	return kd_post(ep, KDAT_DTO_SEND, num, iov, cookie, NULL, flags);
}

LIBDAT_API DAT_RETURN dat_ep_post_recv(DAT_EP_HANDLE ep, DAT_COUNT num,
				       DAT_LMR_TRIPLET *iov,
				       DAT_DTO_COOKIE cookie,
				       DAT_COMPLETION_FLAGS flags)
{
	return kd_post(ep, KDAT_DTO_RECEIVE, num, iov, cookie, NULL, flags);
}

LIBDAT_API DAT_RETURN dat_ep_post_rdma_read(DAT_EP_HANDLE ep, DAT_COUNT num,
					    DAT_LMR_TRIPLET *iov,
					    DAT_DTO_COOKIE cookie,
					    const DAT_RMR_TRIPLET *remote,
					    DAT_COMPLETION_FLAGS flags)
{
	if (!remote)
		return DAT_INVALID_PARAMETER;
	return kd_post(ep, KDAT_DTO_RDMA_READ, num, iov, cookie, remote,
		       flags);
}

LIBDAT_API DAT_RETURN dat_ep_post_rdma_write(DAT_EP_HANDLE ep, DAT_COUNT num,
					     DAT_LMR_TRIPLET *iov,
					     DAT_DTO_COOKIE cookie,
					     const DAT_RMR_TRIPLET *remote,
					     DAT_COMPLETION_FLAGS flags)
{
	if (!remote)
		return DAT_INVALID_PARAMETER;
	return kd_post(ep, KDAT_DTO_RDMA_WRITE, num, iov, cookie, remote,
		       flags);
}

LIBDAT_API DAT_RETURN dat_psp_create(DAT_IA_HANDLE ia_handle,
				     DAT_CONN_QUAL conn_qual,
				     DAT_EVD_HANDLE evd_handle,
				     DAT_PSP_FLAGS flags,
				     DAT_PSP_HANDLE *psp_handle)
{
	struct kdat_psp_create c = { .size = sizeof(c) };
	struct kd_ia *ia = ia_handle;
	struct kd_psp *psp;
	DAT_RETURN ret;

	if (!kd_check(ia, DAT_HANDLE_TYPE_IA))
		return DAT_INVALID_HANDLE;
	if (!kd_check(evd_handle, DAT_HANDLE_TYPE_EVD))
		return DAT_INVALID_HANDLE;
	if (!psp_handle)
		return DAT_INVALID_PARAMETER;
	if (flags != DAT_PSP_CONSUMER_FLAG)
		return DAT_NOT_IMPLEMENTED;
	if (!kd_port(conn_qual))
		return DAT_INVALID_PARAMETER;
	c.ia_handle = ia->obj.kh;
	c.evd_handle = ((struct kd_obj *)evd_handle)->kh;
	c.conn_qual = kd_port(conn_qual);
	ret = kd_ioctl(ia, KDAT_IOCTL_PSP_CREATE, &c);
	if (ret)
		return ret;
	psp = calloc(1, sizeof(*psp));
	if (!psp) {
		kd_destroy_kh(ia, c.out_psp_handle);
		return DAT_INSUFFICIENT_RESOURCES;
	}
	psp->evd = evd_handle;
	psp->conn_qual = conn_qual;
	kd_obj_init(&psp->obj, ia, DAT_HANDLE_TYPE_PSP, c.out_psp_handle);
	*psp_handle = psp;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_rsp_create(DAT_IA_HANDLE ia_handle,
				     DAT_CONN_QUAL conn_qual,
				     DAT_EP_HANDLE ep_handle,
				     DAT_EVD_HANDLE evd_handle,
				     DAT_RSP_HANDLE *rsp_handle)
{
	struct kdat_psp_create c = { .size = sizeof(c) };
	struct kd_ia *ia = ia_handle;
	struct kd_psp *rsp;
	DAT_RETURN ret;

	if (!kd_check(ia, DAT_HANDLE_TYPE_IA) ||
	    !kd_check(evd_handle, DAT_HANDLE_TYPE_EVD) ||
	    !kd_check(ep_handle, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	if (!rsp_handle)
		return DAT_INVALID_PARAMETER;
	c.ia_handle = ia->obj.kh;
	c.evd_handle = ((struct kd_obj *)evd_handle)->kh;
	c.rsp_ep_handle = ((struct kd_obj *)ep_handle)->kh;
	if (!kd_port(conn_qual))
		return DAT_INVALID_PARAMETER;
	c.conn_qual = kd_port(conn_qual);
	ret = kd_ioctl(ia, KDAT_IOCTL_PSP_CREATE, &c);
	if (ret)
		return ret;
	rsp = calloc(1, sizeof(*rsp));
	if (!rsp) {
		kd_destroy_kh(ia, c.out_psp_handle);
		return DAT_INSUFFICIENT_RESOURCES;
	}
	rsp->evd = evd_handle;
	rsp->conn_qual = conn_qual;
	rsp->ep = ep_handle;
	kd_obj_init(&rsp->obj, ia, DAT_HANDLE_TYPE_RSP, c.out_psp_handle);
	*rsp_handle = rsp;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_rsp_free(DAT_RSP_HANDLE rsp_handle)
{
	if (!kd_check(rsp_handle, DAT_HANDLE_TYPE_RSP))
		return DAT_INVALID_HANDLE;
	return kd_destroy(rsp_handle);
}

LIBDAT_API DAT_RETURN dat_psp_free(DAT_PSP_HANDLE psp_handle)
{
	if (!kd_check(psp_handle, DAT_HANDLE_TYPE_PSP))
		return DAT_INVALID_HANDLE;
	return kd_destroy(psp_handle);
}

LIBDAT_API DAT_RETURN dat_cr_query(DAT_CR_HANDLE cr_handle,
				   DAT_CR_PARAM_MASK mask,
				   DAT_CR_PARAM *param)
{
	struct kd_cr *cr = cr_handle;

	(void)mask;
	if (!kd_check(cr, DAT_HANDLE_TYPE_CR))
		return DAT_INVALID_HANDLE;
	if (!param)
		return DAT_INVALID_PARAMETER;
	memset(param, 0, sizeof(*param));
	param->remote_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&cr->remote;
	param->remote_port_qual =
		ntohs(((struct sockaddr_in *)&cr->remote)->sin_port);
	param->private_data_size = cr->pdata_len;
	param->private_data = cr->pdata;
	param->local_ep_handle = DAT_HANDLE_NULL;
	return DAT_SUCCESS;
}

/* A CR is used once: after accept or reject it is gone, whatever. */
static DAT_RETURN kd_cr_reply(struct kd_cr *cr, unsigned long cmd,
			      struct kd_ep *ep, DAT_COUNT pdata_size,
			      const DAT_PVOID pdata)
{
	struct kdat_cr_reply c = { .size = sizeof(c) };
	struct kd_ia *ia = cr->obj.ia;
	DAT_RETURN ret;

	if (pdata_size < 0 || pdata_size > KDAT_MAX_PRIVATE_DATA ||
	    (pdata_size && !pdata))
		return DAT_INVALID_PARAMETER;
	c.cr_handle = cr->obj.kh;
	c.ep_handle = ep ? ep->obj.kh : 0;
	c.private_data = (uintptr_t)pdata;
	c.private_data_len = pdata_size;
	ret = kd_ioctl(ia, cmd, &c);
	/* The kernel keeps the CR only when it refused the EP. */
	if (!(ep && (DAT_GET_TYPE(ret) == DAT_INVALID_STATE ||
		     DAT_GET_TYPE(ret) == DAT_INVALID_PARAMETER))) {
		struct kd_psp *psp = cr->psp;

		kd_table_del(&cr->obj);
		cr->obj.provider = NULL;
		free(cr);
		/* An RSP's one request was answered: the RSP goes. */
		if (psp && psp->obj.type == DAT_HANDLE_TYPE_RSP &&
		    psp->obj.provider)
			kd_destroy(&psp->obj);
	}
	return ret;
}

LIBDAT_API DAT_RETURN dat_cr_accept(DAT_CR_HANDLE cr_handle,
				    DAT_EP_HANDLE ep_handle,
				    DAT_COUNT pdata_size,
				    const DAT_PVOID pdata)
{
	if (!kd_check(cr_handle, DAT_HANDLE_TYPE_CR))
		return DAT_INVALID_HANDLE;
	if (!kd_check(ep_handle, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	return kd_cr_reply(cr_handle, KDAT_IOCTL_CR_ACCEPT, ep_handle,
			   pdata_size, pdata);
}

LIBDAT_API DAT_RETURN dat_cr_reject(DAT_CR_HANDLE cr_handle,
				    DAT_COUNT pdata_size,
				    const DAT_PVOID pdata)
{
	if (!kd_check(cr_handle, DAT_HANDLE_TYPE_CR))
		return DAT_INVALID_HANDLE;
	return kd_cr_reply(cr_handle, KDAT_IOCTL_CR_REJECT, NULL, pdata_size,
			   pdata);
}

int kdat_dat_handle(void *dat_handle, int *fd, uint32_t *kh)
{
	struct kd_obj *o = dat_handle;

	if (!kd_ours(o))
		return -1;
	*fd = o->ia->fd;
	*kh = o->kh;
	return 0;
}

LIBDAT_API DAT_RETURN dat_set_consumer_context(DAT_HANDLE h, DAT_CONTEXT c)
{
	struct kd_obj *o = h;

	if (!kd_ours(o))
		return DAT_INVALID_HANDLE;
	o->context = c;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_get_consumer_context(DAT_HANDLE h, DAT_CONTEXT *c)
{
	struct kd_obj *o = h;

	if (!kd_ours(o))
		return DAT_INVALID_HANDLE;
	if (!c)
		return DAT_INVALID_PARAMETER;
	*c = o->context;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_get_handle_type(DAT_HANDLE h, DAT_HANDLE_TYPE *t)
{
	struct kd_obj *o = h;

	if (!kd_ours(o))
		return DAT_INVALID_HANDLE;
	if (!t)
		return DAT_INVALID_PARAMETER;
	*t = o->type;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_strerror(DAT_RETURN value, const char **major,
				   const char **minor)
{
	static const struct {
		DAT_RETURN code;
		const char *str;
	} tab[] = {
		{ DAT_SUCCESS, "DAT_SUCCESS" },
		{ DAT_ABORT, "DAT_ABORT" },
		{ DAT_CONN_QUAL_IN_USE, "DAT_CONN_QUAL_IN_USE" },
		{ DAT_INSUFFICIENT_RESOURCES, "DAT_INSUFFICIENT_RESOURCES" },
		{ DAT_INTERNAL_ERROR, "DAT_INTERNAL_ERROR" },
		{ DAT_INVALID_HANDLE, "DAT_INVALID_HANDLE" },
		{ DAT_INVALID_PARAMETER, "DAT_INVALID_PARAMETER" },
		{ DAT_INVALID_STATE, "DAT_INVALID_STATE" },
		{ DAT_LENGTH_ERROR, "DAT_LENGTH_ERROR" },
		{ DAT_MODEL_NOT_SUPPORTED, "DAT_MODEL_NOT_SUPPORTED" },
		{ DAT_PROVIDER_NOT_FOUND, "DAT_PROVIDER_NOT_FOUND" },
		{ DAT_PRIVILEGES_VIOLATION, "DAT_PRIVILEGES_VIOLATION" },
		{ DAT_PROTECTION_VIOLATION, "DAT_PROTECTION_VIOLATION" },
		{ DAT_QUEUE_EMPTY, "DAT_QUEUE_EMPTY" },
		{ DAT_QUEUE_FULL, "DAT_QUEUE_FULL" },
		{ DAT_TIMEOUT_EXPIRED, "DAT_TIMEOUT_EXPIRED" },
		{ DAT_PROVIDER_ALREADY_REGISTERED,
		  "DAT_PROVIDER_ALREADY_REGISTERED" },
		{ DAT_PROVIDER_IN_USE, "DAT_PROVIDER_IN_USE" },
		{ DAT_INVALID_ADDRESS, "DAT_INVALID_ADDRESS" },
		{ DAT_INTERRUPTED_CALL, "DAT_INTERRUPTED_CALL" },
		{ DAT_NOT_IMPLEMENTED, "DAT_NOT_IMPLEMENTED" },
	};
	size_t i;

	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		if (DAT_GET_TYPE(value) == tab[i].code) {
			if (major)
				*major = tab[i].str;
			if (minor)
				*minor = "";
			return DAT_SUCCESS;
		}
	}
	return DAT_INVALID_PARAMETER;
}

/* ---- queries of what libdat keeps ---------------------------------- */

LIBDAT_API DAT_RETURN dat_pz_query(DAT_PZ_HANDLE pz_handle,
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

LIBDAT_API DAT_RETURN dat_lmr_query(DAT_LMR_HANDLE lmr_handle,
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

LIBDAT_API DAT_RETURN dat_rmr_query(DAT_RMR_HANDLE rmr_handle,
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
	param->rmr_scope = DAT_RMR_SCOPE_PZ;
	param->va_type = DAT_VA_TYPE_VA;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_evd_query(DAT_EVD_HANDLE evd_handle,
				    DAT_EVD_PARAM_MASK mask,
				    DAT_EVD_PARAM *param)
{
	struct kd_evd *evd = evd_handle;

	(void)mask;
	if (!kd_check(evd, DAT_HANDLE_TYPE_EVD))
		return DAT_INVALID_HANDLE;
	if (!param)
		return DAT_INVALID_PARAMETER;
	memset(param, 0, sizeof(*param));
	param->ia_handle = evd->obj.ia;
	param->evd_qlen = evd->qlen;
	param->evd_state = DAT_EVD_STATE_ENABLED;
	param->cno_handle = evd->cno;
	param->evd_flags = evd->flags;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_cno_query(DAT_CNO_HANDLE cno_handle,
				    DAT_CNO_PARAM_MASK mask,
				    DAT_CNO_PARAM *param)
{
	struct kd_cno *cno = cno_handle;

	(void)mask;
	if (!kd_check(cno, DAT_HANDLE_TYPE_CNO))
		return DAT_INVALID_HANDLE;
	if (!param)
		return DAT_INVALID_PARAMETER;
	memset(param, 0, sizeof(*param));
	param->ia_handle = cno->obj.ia;
	param->proxy_type = DAT_PROXY_TYPE_AGENT;
	param->proxy.agent = cno->agent;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_psp_query(DAT_PSP_HANDLE psp_handle,
				    DAT_PSP_PARAM_MASK mask,
				    DAT_PSP_PARAM *param)
{
	struct kd_psp *psp = psp_handle;

	(void)mask;
	if (!kd_check(psp, DAT_HANDLE_TYPE_PSP))
		return DAT_INVALID_HANDLE;
	if (!param)
		return DAT_INVALID_PARAMETER;
	param->ia_handle = psp->obj.ia;
	param->conn_qual = psp->conn_qual;
	param->evd_handle = psp->evd;
	param->psp_flags = DAT_PSP_CONSUMER_FLAG;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_rsp_query(DAT_RSP_HANDLE rsp_handle,
				    DAT_RSP_PARAM_MASK mask,
				    DAT_RSP_PARAM *param)
{
	struct kd_psp *rsp = rsp_handle;

	(void)mask;
	if (!kd_check(rsp, DAT_HANDLE_TYPE_RSP))
		return DAT_INVALID_HANDLE;
	if (!param)
		return DAT_INVALID_PARAMETER;
	param->ia_handle = rsp->obj.ia;
	param->conn_qual = rsp->conn_qual;
	param->evd_handle = rsp->evd;
	param->ep_handle = rsp->ep;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_srq_query(DAT_SRQ_HANDLE srq_handle,
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

LIBDAT_API DAT_RETURN dat_ep_recv_query(DAT_EP_HANDLE ep_handle,
					DAT_COUNT *nbufs, DAT_COUNT *span)
{
	struct kdat_ep_query q;
	DAT_RETURN ret;

	if (!kd_check(ep_handle, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	ret = kd_ep_fetch(ep_handle, &q);
	if (ret)
		return ret;
	if (nbufs)
		*nbufs = q.out_recv_posted;
	if (span)
		*span = DAT_VALUE_UNKNOWN;
	return DAT_SUCCESS;
}

LIBDAT_API DAT_RETURN dat_evd_post_se(DAT_EVD_HANDLE evd_handle,
				      const DAT_EVENT *event)
{
	struct kdat_evd_post_se c = { .size = sizeof(c) };
	struct kd_evd *evd = evd_handle;

	if (!kd_check(evd, DAT_HANDLE_TYPE_EVD))
		return DAT_INVALID_HANDLE;
	if (!event || event->event_number != DAT_SOFTWARE_EVENT)
		return DAT_INVALID_PARAMETER;
	c.evd_handle = evd->obj.kh;
	c.pointer = (uintptr_t)event->event_data.software_event_data.pointer;
	return kd_ioctl(evd->obj.ia, KDAT_IOCTL_EVD_POST_SE, &c);
}

/* Connect @ep where @dup is connected (its peer's address and qualifier). */
LIBDAT_API DAT_RETURN dat_ep_dup_connect(DAT_EP_HANDLE ep_handle,
					 DAT_EP_HANDLE dup_handle,
					 DAT_TIMEOUT timeout, DAT_COUNT pdata_size,
					 const DAT_PVOID pdata, DAT_QOS qos)
{
	struct sockaddr_storage remote;
	struct kdat_ep_query q;
	DAT_RETURN ret;

	if (!kd_check(ep_handle, DAT_HANDLE_TYPE_EP) ||
	    !kd_check(dup_handle, DAT_HANDLE_TYPE_EP))
		return DAT_INVALID_HANDLE;
	ret = kd_ep_fetch(dup_handle, &q);
	if (ret)
		return ret;
	if (q.state != KDAT_EP_STATE_CONNECTED)
		return DAT_INVALID_STATE;
	kd_sockaddr_from_kdat(&q.remote, &remote);
	return dat_ep_connect(ep_handle, (DAT_IA_ADDRESS_PTR)&remote,
			      ntohs(q.remote.port), timeout, pdata_size, pdata,
			      qos, DAT_CONNECT_DEFAULT_FLAG);
}

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
		return dat_from_errno(-ret);
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

/* Memory is coherent for kdat's devices: nothing to synchronise. */
LIBDAT_API DAT_RETURN dat_lmr_sync_rdma_read(DAT_IA_HANDLE ia,
					     const DAT_LMR_TRIPLET *iov,
					     DAT_VLEN n)
{
	if (!kd_check(ia, DAT_HANDLE_TYPE_IA))
		return DAT_INVALID_HANDLE;
	return iov || !n ? DAT_SUCCESS : DAT_INVALID_PARAMETER;
}

LIBDAT_API DAT_RETURN dat_lmr_sync_rdma_write(DAT_IA_HANDLE ia,
					      const DAT_LMR_TRIPLET *iov,
					      DAT_VLEN n)
{
	return dat_lmr_sync_rdma_read(ia, iov, n);
}

/* Any free qualifier: tried from a pid-based start, as OFA's does. */
LIBDAT_API DAT_RETURN dat_psp_create_any(DAT_IA_HANDLE ia,
					 DAT_CONN_QUAL *conn_qual,
					 DAT_EVD_HANDLE evd,
					 DAT_PSP_FLAGS flags,
					 DAT_PSP_HANDLE *psp)
{
	DAT_CONN_QUAL q = 1024 + (DAT_CONN_QUAL)getpid() % 30000;
	DAT_RETURN ret = DAT_CONN_QUAL_IN_USE;
	int i;

	if (!conn_qual)
		return DAT_INVALID_PARAMETER;
	for (i = 0; i < 1000 && DAT_GET_TYPE(ret) == DAT_CONN_QUAL_IN_USE;
	     i++, q = q + 1 < 65536 ? q + 1 : 1024) {
		ret = dat_psp_create(ia, q, evd, flags, psp);
		if (ret == DAT_SUCCESS)
			*conn_qual = q;
	}
	return ret;
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

	return kd_ia_open(p ? p : &kdat_provider, name, qlen, async_evd, ia,
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
	kd_provider_fill(&kdat_provider);
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
