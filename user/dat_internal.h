/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * libdat private umbrella header: the objects DAT handles point at, the
 * process's state, and the helpers the files of libdat share.
 *
 * Every DAT handle points at an object that starts with a pointer to
 * kdat's DAT_PROVIDER, as the DAT 2.0 ABI requires of providers. An IA owns
 * an open file of /dev/kdat; every object created under it lives in that
 * file and is named in the kernel by a 32-bit handle. Events name kernel
 * handles; the process's tables map them back to the DAT handles.
 *
 * DAT return codes: the kernel answers with the errno of the uapi table,
 * which maps one to one onto DAT's major codes (kd_from_errno()). The
 * checks on DTO arguments are the kernel's; libdat does not second-guess
 * them, so a DAT code decided in the kernel reaches the caller unchanged.
 *
 * One file per DAT object kind, as in kernel/:
 *   dat_core.c      errno to DAT codes, the process's /dev/kdat file, the
 *                   handle tables, an object's life, consumer context,
 *                   handle type, dat_strerror
 *   dat_ring.c      mapping a queue's ring; the fast path on it is the
 *                   static inlines of dat_ring.h
 *   dat_ia.c        Interface Adapters: open, query, close
 *   dat_mem.c       PZs, LMRs, RMRs
 *   dat_evd.c       EVDs and CNOs, kernel events as DAT events, dequeue, wait
 *   dat_ep.c        Endpoints
 *   dat_cm.c        PSPs, RSPs, Connection Requests
 *   dat_srq.c       Shared Receive Queues
 *   dat_dto.c       posts: dat_ep_post_*, dat_srq_post_recv
 *   dat_ext.c       the DAT IB extensions (dat_ib_extensions.h): their
 *                   operations (kd_extension_op()), events, attributes
 *                   and counters
 *   dat_ud.c        their UD Endpoints: datagrams, address handles, the
 *                   UD events
 *   dat_provider.c  kdat's DAT_PROVIDER tables (what a registry that loads
 *                   libdat from dat.conf calls), the IA names kdat
 *                   offers, what kdat does not implement
 *   dat_registry.c  libdat as the DAT registry: dat.conf, the providers
 *                   registered and loaded, IAs opened and closed through
 *                   them, which provider a handle belongs to
 *   dat_api.c       the exported DAT calls: each sends its handle to the
 *                   provider it belongs to (kdat's kd_<call>, or another
 *                   provider's function table; see dat_registry.c)
 * What they share is declared below, hidden (libdat exports what
 * libdat.map lists, nothing else), with the kd_ prefix but for
 * kd_from_errno(). kdat's implementation of the DAT call dat_<call> is
 * kd_<call>, of the same type.
 */
#ifndef DAT_INTERNAL_H
#define DAT_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

#include <dat2/udat.h>
#include <dat2/dat_registry.h>
#include <dat2/dat_ib_extensions.h>

#include "kdat_lowlevel.h"

#define LIBDAT_API __attribute__((visibility("default")))

struct kd_ia;
struct kd_ring;		/* dat_ring.h */

/* The head of every object a DAT handle points at. */
struct kd_obj {
	DAT_PROVIDER *provider;		/* first, as the DAT ABI requires */
	DAT_HANDLE_TYPE type;
	DAT_CONTEXT context;
	struct kd_ia *ia;
	uint32_t kh;			/* kernel handle */
};

#define KD_IA_SPEC_ATTRS 16	/* provider-specific attributes, at most */

/*
 * One /dev/kdat file per process, shared by its IAs: DAT lets objects of
 * one IA use another's (dapltest gives EPs of several IAs one connection
 * EVD), and the kernel allows that within a file. The file is opened with
 * the first IA and closed with the last.
 *
 * Every live object is in two tables (dat_core.c): by kernel handle
 * (events name objects by it) and by address (a handle is checked by
 * finding it there, never by reading through it, so a stale or foreign
 * handle is refused without touching freed memory). Their slots hold the
 * object's address, kernel handle and type, so that a lookup reads the
 * table and never an object. @lock serialises the writers (and @fd,
 * @nr_ia); the readers (every post, dequeue and handle check) take no
 * lock: they read inside @seq's read side and look again if a writer ran
 * meanwhile (a seqcount, as the kernel's).
 */
struct kd_slot {
	const void *obj;	/* NULL: free */
	uint32_t kh;
	uint32_t type;		/* DAT_HANDLE_TYPE */
};

struct kd_tab {
	uint32_t mask;		/* slots - 1, a power of two less one */
	uint32_t used;		/* at most half the slots */
	struct kd_tab *retired;	/* the smaller one this replaced */
	struct kd_slot slot[];
};

struct kd_proc {
	pthread_mutex_t lock;
	int fd;
	unsigned int nr_ia;
	uint32_t poller_mode;		/* KDAT_POLLER_*, as the kernel took it */
	unsigned int seq;		/* odd while the tables change */
	struct kd_tab *by_kh, *by_ptr;
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
	/* dat_ia_query's provider-specific attributes, values here */
	DAT_NAMED_ATTR spec_attr[KD_IA_SPEC_ATTRS];
	char spec_val[KD_IA_SPEC_ATTRS][48];
	/*
	 * What the IA's transport cannot do (KDAT_IA_*, with
	 * KDAT_IA_NO_ATOMICS from atomic_cap), KD_IA_LIMITS_KNOWN once
	 * asked: kd_ia_limits().
	 */
	uint32_t limits;		/* dat_ext.c */
	uint64_t cntrs[DCNT_IA_ALL_COUNTERS];	/* dat_ext.c */
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
	/*
	 * Its binding as the kernel last made it (dat_rmr_query): the range,
	 * the privileges, the context; zeros when unbound. Under @lock.
	 */
	pthread_mutex_t lock;
	DAT_LMR_TRIPLET bound;
	DAT_MEM_PRIV_FLAGS mem_priv;
	DAT_RMR_CONTEXT context;
};

struct kd_cno {
	struct kd_obj obj;
	pthread_mutex_t lock;
	DAT_OS_WAIT_PROXY_AGENT agent;	/* under lock */
	uint32_t seq;			/* the kernel's arming for it; lock */
	bool helper;			/* its thread runs (dat_cno.c); lock */
	bool gone;			/* destroyed; the helper frees; lock */
	int helper_fd;			/* the helper's own descriptor */
};

struct kd_evd {
	struct kd_obj obj;
	DAT_COUNT qlen;
	DAT_EVD_FLAGS flags;
	struct kd_cno *cno;
	struct kd_ring *ring;		/* or NULL: the ioctl path */
	/*
	 * The calls inside a ring dequeue or wait (a wait sleeps in the
	 * kernel without the ring's lock), and whether the ring is going
	 * (a free, a resize, the IA's abrupt close): kd_evd_enter(),
	 * kd_evd_leave(), kd_evd_exclusive().
	 */
	int takers;
	int closing;
	/* As the kernel last agreed (kd_evd_modify()): dat_evd_query, waits. */
	int disabled, unwaitable;
	/* A wait's spin on the ring before it sleeps, in looks (dat_evd.c). */
	uint32_t spin;
	uint64_t cntrs[DCNT_EVD_ALL_COUNTERS];	/* dat_ext.c */
};

/* A ring dequeue or wait starts: false when the ring is going. */
static inline bool kd_evd_enter(struct kd_evd *evd)
{
	__atomic_add_fetch(&evd->takers, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&evd->closing, __ATOMIC_SEQ_CST)) {
		__atomic_sub_fetch(&evd->takers, 1, __ATOMIC_SEQ_CST);
		return false;
	}
	return true;
}

static inline void kd_evd_leave(struct kd_evd *evd)
{
	__atomic_sub_fetch(&evd->takers, 1, __ATOMIC_SEQ_CST);
}

/*
 * The ring is to be unmapped or replaced: true with no call inside and
 * none to come until kd_evd_release(); false (DAT_INVALID_STATE) when a
 * call is inside or the ring is going already.
 */
static inline bool kd_evd_exclusive(struct kd_evd *evd)
{
	int zero = 0;

	if (!__atomic_compare_exchange_n(&evd->closing, &zero, 1, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return false;
	if (__atomic_load_n(&evd->takers, __ATOMIC_SEQ_CST)) {
		__atomic_store_n(&evd->closing, 0, __ATOMIC_SEQ_CST);
		return false;
	}
	return true;
}

static inline void kd_evd_release(struct kd_evd *evd)
{
	__atomic_store_n(&evd->closing, 0, __ATOMIC_SEQ_CST);
}

/* kdat's provider-specific EP attributes: the transport timers. */
#define KD_EP_SPEC_ATTRS	4

struct kd_ep {
	struct kd_obj obj;
	struct kd_pz *pz;
	struct kd_evd *recv_evd, *req_evd, *conn_evd;
	struct kd_srq *srq;		/* or NULL */
	struct kd_ring *sq, *rq;	/* or NULL: the ioctl path */
	DAT_EP_ATTR attr;
	unsigned char pdata[KDAT_PRIVATE_DATA_BUF];
	struct sockaddr_storage remote, local;
	/*
	 * The qualifier its last connect asked for (dat_ep_dup_connect's
	 * target); 0 once it accepted a request: a passive EP has no remote
	 * Service Point. Atomic: another thread may dup from it.
	 */
	DAT_CONN_QUAL active_qual;
	uint64_t cntrs[DCNT_EP_ALL_COUNTERS];	/* dat_ext.c */
	/* A UD EP (dat_ud.c): datagrams of at most @ud_mtu bytes. */
	bool ud;
	uint32_t ud_mtu;
	/* The IOV segments an RDMA read takes (the QP's, as the kernel's). */
	uint32_t read_sge;
	/*
	 * Its transport timers (set 0: the kernel keeps none, UD, or does
	 * not say, a kernel before them), and as the provider-specific
	 * attributes dat_ep_query shows.
	 */
	struct kdat_ep_timers timers;
	DAT_NAMED_ATTR spec_attr[KD_EP_SPEC_ATTRS];
	char spec_val[KD_EP_SPEC_ATTRS][12];
};

/*
 * A UD address handle (dat_ud.c): what DAT_IB_ADDR_HANDLE.ah points at,
 * for datagrams of @ep to QP @qpn; it keeps the private data of the event
 * that brought it. Not a DAT handle: its type is libdat's own.
 */
#define KD_HANDLE_TYPE_AH ((DAT_HANDLE_TYPE)(DAT_IB_HANDLE_TYPE_EXT + 0x100))

struct kd_ah {
	struct kd_obj obj;
	struct kd_ep *ep;
	uint32_t qpn;
	struct sockaddr_storage remote;
	unsigned char pdata[KDAT_PRIVATE_DATA_BUF];
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

#pragma GCC visibility push(hidden)

extern struct kd_proc kd_proc;		/* dat_core.c */
extern DAT_PROVIDER kd_default_provider;	/* dat_provider.c */

/* kdat's implementation of dat_<name>, with its type. */
#define KD_IMPL(name) extern __typeof__(dat_##name) kd_##name

KD_IMPL(ia_query);
KD_IMPL(ia_close);
KD_IMPL(set_consumer_context);
KD_IMPL(get_consumer_context);
KD_IMPL(get_handle_type);
KD_IMPL(cr_query);
KD_IMPL(cr_accept);
KD_IMPL(cr_reject);
KD_IMPL(cr_handoff);
KD_IMPL(evd_create);
KD_IMPL(evd_query);
KD_IMPL(evd_modify_cno);
KD_IMPL(evd_enable);
KD_IMPL(evd_disable);
KD_IMPL(evd_wait);
KD_IMPL(evd_resize);
KD_IMPL(evd_post_se);
KD_IMPL(evd_dequeue);
KD_IMPL(evd_free);
KD_IMPL(evd_set_unwaitable);
KD_IMPL(evd_clear_unwaitable);
KD_IMPL(cno_create);
KD_IMPL(cno_modify_agent);
KD_IMPL(cno_query);
KD_IMPL(cno_free);
KD_IMPL(cno_wait);
KD_IMPL(cno_fd_create);
KD_IMPL(cno_trigger);
KD_IMPL(ep_create);
KD_IMPL(ep_create_with_srq);
KD_IMPL(ep_query);
KD_IMPL(ep_modify);
KD_IMPL(ep_connect);
KD_IMPL(ep_dup_connect);
KD_IMPL(ep_common_connect);
KD_IMPL(ep_disconnect);
KD_IMPL(ep_post_send);
KD_IMPL(ep_post_send_with_invalidate);
KD_IMPL(ep_post_recv);
KD_IMPL(ep_post_rdma_read);
KD_IMPL(ep_post_rdma_read_to_rmr);
KD_IMPL(ep_post_rdma_write);
KD_IMPL(ep_get_status);
KD_IMPL(ep_free);
KD_IMPL(ep_reset);
KD_IMPL(ep_recv_query);
KD_IMPL(ep_set_watermark);
KD_IMPL(lmr_create);
KD_IMPL(lmr_query);
KD_IMPL(lmr_free);
KD_IMPL(lmr_sync_rdma_read);
KD_IMPL(lmr_sync_rdma_write);
KD_IMPL(rmr_create);
KD_IMPL(rmr_create_for_ep);
KD_IMPL(rmr_query);
KD_IMPL(rmr_bind);
KD_IMPL(rmr_free);
KD_IMPL(psp_create);
KD_IMPL(psp_create_any);
KD_IMPL(psp_query);
KD_IMPL(psp_free);
KD_IMPL(rsp_create);
KD_IMPL(rsp_query);
KD_IMPL(rsp_free);
KD_IMPL(csp_create);
KD_IMPL(csp_query);
KD_IMPL(csp_free);
KD_IMPL(pz_create);
KD_IMPL(pz_query);
KD_IMPL(pz_free);
KD_IMPL(srq_create);
KD_IMPL(srq_free);
KD_IMPL(srq_post_recv);
KD_IMPL(srq_query);
KD_IMPL(srq_resize);
KD_IMPL(srq_set_lw);
/* No header declares dat_ia_ha; its type is the provider table's. */
DAT_RETURN kd_ia_ha(DAT_IA_HANDLE ia, const DAT_NAME_PTR name,
		    DAT_BOOLEAN *answer);
/* dat_api.c's entry point for it: not in DAT's headers. */
LIBDAT_API DAT_RETURN dat_ia_ha(DAT_IA_HANDLE ia, const DAT_NAME_PTR name,
				DAT_BOOLEAN *answer);

/*
 * The DAT IB extensions on a kdat handle: what dat_extension_op() and
 * kdat's DAT_PROVIDER tables call. For an op in DAT_OPEN_EXTENSION_BASE's
 * range @h is the IA name (const char *) and @args starts after it, as a
 * registry passes it to a provider. DAT_NOT_IMPLEMENTED for now.
 */
DAT_RETURN kd_extension_op(DAT_HANDLE h, DAT_EXTENDED_OP op, va_list args);

/*
 * An error as DAT_ERROR() makes it: class bit, type, subtype. Consumers
 * test "status & DAT_CLASS_ERROR" and compare DAT_GET_TYPE().
 */
#define KD_ERR(type, subtype) \
	((DAT_RETURN)(DAT_CLASS_ERROR | (type) | (subtype)))
/* No IA of that name: what OFA's registry answers, and kdat for its own. */
#define KD_NOT_REGISTERED \
	KD_ERR(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED)

/*
 * What a call of kdat's returns to its consumer. Inside libdat an error
 * travels as its type and subtype (DAT_INVALID_HANDLE, ...), which the
 * code compares as it is; where it leaves libdat (the entry points of
 * dat_api.c and dat_registry.c, and the DAT_PROVIDER tables, which point
 * to those entry points) it gets the class bit, as OFA's provider gives
 * its errors.
 */
static inline DAT_RETURN kd_status(DAT_RETURN r)
{
	/*
	 * An empty EVD and a wait that timed out are conditions of the
	 * normal course, and OFA's provider returns them bare (consumers
	 * compare them with DAT_QUEUE_EMPTY and DAT_TIMEOUT_EXPIRED).
	 */
	if (r == DAT_QUEUE_EMPTY || r == DAT_TIMEOUT_EXPIRED)
		return r;
	if (r && !(r & (DAT_CLASS_ERROR | DAT_CLASS_WARNING)))
		r |= DAT_CLASS_ERROR;
	return r;
}

/* dat_core.c */
DAT_RETURN kd_from_errno(int err);
DAT_RETURN kd_ioctl(struct kd_ia *ia, unsigned long cmd, void *arg);
void kd_table_del(struct kd_obj *o);
struct kd_obj *kd_table_find(uint32_t kh);
struct kd_obj *kd_table_find_type(uint32_t kh, uint32_t type);
/* What a walk's function answers: go on, drop the object, stop. */
#define KD_WALK_NEXT	0
#define KD_WALK_DROP	1	/* out of the tables */
#define KD_WALK_STOP	2
#define KD_WALK_FREE	4	/* with DROP: then kd_obj_free() */
void kd_table_walk_locked(int (*fn)(struct kd_obj *o, void *arg), void *arg);
int kd_proc_get(void);
void kd_proc_put(void);
bool kd_obj_init(struct kd_obj *o, struct kd_ia *ia,
		 DAT_HANDLE_TYPE type, uint32_t kh);
DAT_RETURN kd_obj_abandon(struct kd_obj *o);
bool kd_check(const void *h, int type);

/*
 * The kind of a call's first handle: the DAT handle type kd_check() wants
 * and the subtype of DAT_INVALID_HANDLE that names it, as OFA's registry
 * and provider answer (an EVD is named as a request EVD there; a handle
 * of any type, as DAT_INVALID_HANDLE1).
 */
#define KD_KIND_IA	DAT_HANDLE_TYPE_IA, DAT_INVALID_HANDLE_IA
#define KD_KIND_EP	DAT_HANDLE_TYPE_EP, DAT_INVALID_HANDLE_EP
#define KD_KIND_LMR	DAT_HANDLE_TYPE_LMR, DAT_INVALID_HANDLE_LMR
#define KD_KIND_RMR	DAT_HANDLE_TYPE_RMR, DAT_INVALID_HANDLE_RMR
#define KD_KIND_PZ	DAT_HANDLE_TYPE_PZ, DAT_INVALID_HANDLE_PZ
#define KD_KIND_PSP	DAT_HANDLE_TYPE_PSP, DAT_INVALID_HANDLE_PSP
#define KD_KIND_RSP	DAT_HANDLE_TYPE_RSP, DAT_INVALID_HANDLE_RSP
#define KD_KIND_CR	DAT_HANDLE_TYPE_CR, DAT_INVALID_HANDLE_CR
#define KD_KIND_CNO	DAT_HANDLE_TYPE_CNO, DAT_INVALID_HANDLE_CNO
#define KD_KIND_EVD	DAT_HANDLE_TYPE_EVD, DAT_INVALID_HANDLE_EVD_REQUEST
#define KD_KIND_SRQ	DAT_HANDLE_TYPE_SRQ, DAT_INVALID_HANDLE_SRQ
#define KD_KIND_CSP	DAT_HANDLE_TYPE_CSP, DAT_INVALID_HANDLE_CSP
#define KD_KIND_ANY	-1, DAT_INVALID_HANDLE1

/*
 * kd_<fn>'s answer as its consumer gets it: a DAT_INVALID_HANDLE without
 * a subtype, when @h is not a live kdat object of its @type, names @h's
 * kind; every error has the class bit (kd_status()). Only on the error
 * path: a call that succeeds looks @h up once, in kd_<fn>.
 */
static inline DAT_RETURN kd_answer(DAT_RETURN r, const void *h, int type,
				   DAT_RETURN subtype)
{
	if (r == DAT_INVALID_HANDLE && !kd_check(h, type))
		r |= subtype;
	return kd_status(r);
}

#define KD_ANSWER(r, h, kind) kd_answer(r, h, KD_KIND_##kind)
void kd_obj_free(struct kd_obj *o);
void kd_destroy_kh(struct kd_ia *ia, uint32_t kh);
DAT_RETURN kd_destroy(struct kd_obj *o);

/* dat_cno.c */
void kd_cno_release(struct kd_cno *cno);

/* dat_ring.c */
bool kd_rings_wanted(void);
uint32_t kd_poller_setup(int fd);
bool kd_debug(void);
struct kd_ring *kd_ring_map(struct kd_ia *ia, uint32_t kh, uint32_t kind,
			    bool *made);
struct kd_ring *kd_ring_map_at(struct kd_ia *ia, uint32_t kh, uint32_t kind,
			       bool *made, void *at, size_t at_len,
			       struct kd_ring *r);
void *kd_ring_reserve(const struct kd_ring *r, uint32_t want, size_t *len);
void kd_ring_unmap(struct kd_ring *r);

/* dat_provider.c */
DAT_COUNT kd_own_ias(DAT_PROVIDER_INFO **infos);
void kd_instance_port(const char *data, char *dev, uint32_t *port);
int kd_port_netdev(const char *dev, uint32_t port, char *netdev, size_t len);
int kd_gid_netdev(const char *dev, uint32_t port, unsigned int index,
		  char *netdev, size_t len);

/* dat_registry.c */
const DAT_PROVIDER *kd_foreign(const void *h);

/* dat_ia.c */
DAT_RETURN kd_ia_open(DAT_PROVIDER *provider, const DAT_NAME_PTR name,
		      const char *devname, uint32_t devport,
		      DAT_COUNT async_evd_qlen,
		      DAT_EVD_HANDLE *async_evd_handle,
		      DAT_IA_HANDLE *ia_handle, DAT_UINT32 major,
		      DAT_UINT32 minor, DAT_BOOLEAN thread_safety);

/* dat_ep.c */
DAT_RETURN kd_ep_fetch(struct kd_ep *ep, struct kdat_ep_query *q);

/* dat_dto.c */
DAT_RETURN kd_post(DAT_EP_HANDLE ep_handle, uint32_t op, DAT_COUNT num,
		   const DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
		   const DAT_RMR_TRIPLET *remote, DAT_COMPLETION_FLAGS flags,
		   const struct kdat_dto_ext *ext);

/* dat_ext.c */
DAT_RETURN kd_extension_op(DAT_HANDLE handle, DAT_EXTENDED_OP op,
			   va_list args);
#define KD_IA_LIMITS_KNOWN	(1u << 31)
uint32_t kd_ia_limits(struct kd_ia *ia);
void kd_ext_dto_event(const struct kdat_event *k, DAT_EVENT *ev);
int kd_ext_attrs(struct kd_ia *ia, DAT_NAMED_ATTR *attrs, int max);
void kd_count_post(struct kd_ep *ep, uint32_t op, DAT_COUNT num,
		   const DAT_LMR_TRIPLET *iov);
void kd_count_obj(struct kd_obj *o, bool created);

/* dat_ud.c */
DAT_RETURN kd_ud_send(DAT_HANDLE ep, va_list args);
DAT_RETURN kd_ud_cm_free(DAT_HANDLE ep, va_list args);
DAT_RETURN kd_ud_ah_free(DAT_HANDLE ep, va_list args);
DAT_RETURN kd_ud_event(struct kd_ia *ia, const struct kdat_event *k,
		       DAT_EVENT *ev);

/* dat_provider.c */
DAT_RETURN kd_provider_ia_open(const DAT_NAME_PTR name, DAT_COUNT qlen,
			       DAT_EVD_HANDLE *async_evd, DAT_IA_HANDLE *ia);

/* Count @n in counter @c (relaxed: counters order nothing). */
static inline void kd_count(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* dat_cm.c */
void kd_sockaddr_from_kdat(const struct kdat_sockaddr *k,
			   struct sockaddr_storage *ss);

#pragma GCC visibility pop

#endif
