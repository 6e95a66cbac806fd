// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libdat core: DAT return codes from the kernel's errnos, the process's
 * /dev/kdat file, the two tables every live object is in, the life of an
 * object's user-space half, and what DAT asks of any handle (consumer
 * context, handle type) or code (dat_strerror).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "dat_internal.h"

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

/* errno of the uapi table -> DAT return code */
DAT_RETURN kd_from_errno(int err)
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

DAT_RETURN kd_ioctl(struct kd_ia *ia, unsigned long cmd, void *arg)
{
	if (ioctl(ia->fd, cmd, arg))
		return kd_from_errno(errno);
	return DAT_SUCCESS;
}

struct kd_proc kd_proc = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.fd = -1,
};

/*
 * The tables: open addressing with linear probing, at most half full, so
 * that a probe ends at a free slot; a deletion shifts the probe chain back
 * (no tombstones, so a table only grows). Readers take no lock (see
 * struct kd_proc): a slot's fields are read and written as relaxed atomics
 * inside kd_proc.seq's sections, and a reader whose section a writer
 * overlapped looks again. A table a bigger one replaced may still be read
 * by a reader that loaded its address before: it is kept (on ->retired)
 * until the process exits; the tables only double, so what is kept is
 * less than what is in use.
 */
#define KD_TAB_MIN	256

enum { KD_BY_KH, KD_BY_PTR };

static uint32_t kd_hash(uintptr_t key, uint32_t mask)
{
	/* Fibonacci hashing: the multiplier's high bits mix every key bit. */
	return (uint32_t)(((uint64_t)key * 0x9e3779b97f4a7c15ULL) >> 32) &
	       mask;
}

static uintptr_t kd_slot_key(const struct kd_slot *sl, int by)
{
	return by == KD_BY_KH ?
	       __atomic_load_n(&sl->kh, __ATOMIC_RELAXED) :
	       (uintptr_t)__atomic_load_n(&sl->obj, __ATOMIC_RELAXED);
}

static bool kd_read_retry(unsigned int s)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&kd_proc.seq, __ATOMIC_RELAXED) != s;
}

/* A writer's section: kd_proc.lock held. */
static void kd_write_begin(void)
{
	__atomic_store_n(&kd_proc.seq, kd_proc.seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static void kd_write_end(void)
{
	__atomic_store_n(&kd_proc.seq, kd_proc.seq + 1, __ATOMIC_RELEASE);
}

static void kd_slot_set(struct kd_slot *sl, const void *obj, uint32_t kh,
			uint32_t type)
{
	__atomic_store_n(&sl->kh, kh, __ATOMIC_RELAXED);
	__atomic_store_n(&sl->type, type, __ATOMIC_RELAXED);
	__atomic_store_n(&sl->obj, obj, __ATOMIC_RELAXED);
}

/*
 * A reader's probe for @key in the table @by: the slot's object and type,
 * or false. Inside a read section; it gives up after as many slots as the
 * table has, which only a writer's overlap can make it see.
 */
static bool kd_probe(int by, uintptr_t key, const void **obj, uint32_t *type)
{
	struct kd_tab *t = __atomic_load_n(by == KD_BY_KH ? &kd_proc.by_kh :
					   &kd_proc.by_ptr, __ATOMIC_ACQUIRE);
	uint32_t i, n;

	if (!t)
		return false;
	for (i = kd_hash(key, t->mask), n = 0; n <= t->mask;
	     i = (i + 1) & t->mask, n++) {
		const struct kd_slot *sl = &t->slot[i];
		const void *o = __atomic_load_n(&sl->obj, __ATOMIC_RELAXED);

		if (!o)
			return false;
		if (kd_slot_key(sl, by) == key) {
			*obj = o;
			*type = __atomic_load_n(&sl->type, __ATOMIC_RELAXED);
			return true;
		}
	}
	return false;
}

/*
 * How often a lookup looks again while writers overlap it before it waits
 * for them on kd_proc.lock: a writer preempted inside its section by a
 * reader of higher priority on the same CPU would otherwise never finish
 * (sched_yield() does not give way to a lower priority).
 */
#define KD_READ_TRIES	64

static bool kd_lookup(int by, uintptr_t key, const void **obj,
		      uint32_t *type)
{
	unsigned int s, tries;
	bool found;

	for (tries = 0; tries < KD_READ_TRIES; tries++) {
		s = __atomic_load_n(&kd_proc.seq, __ATOMIC_ACQUIRE);
		if (s & 1) {
			sched_yield();	/* a writer, under kd_proc.lock */
			continue;
		}
		found = kd_probe(by, key, obj, type);
		if (!kd_read_retry(s))
			return found;
	}
	pthread_mutex_lock(&kd_proc.lock);
	found = kd_probe(by, key, obj, type);
	pthread_mutex_unlock(&kd_proc.lock);
	return found;
}

static void kd_tab_put(struct kd_tab *t, int by, const void *obj,
		       uint32_t kh, uint32_t type)
{
	uintptr_t key = by == KD_BY_KH ? kh : (uintptr_t)obj;
	uint32_t i = kd_hash(key, t->mask);

	while (t->slot[i].obj)
		i = (i + 1) & t->mask;
	kd_slot_set(&t->slot[i], obj, kh, type);
	t->used++;
}

/*
 * Room in table @by for one more: a table twice the size replaces a half
 * full one (the old is retired, not freed). kd_proc.lock held, outside a
 * write section (it may allocate). Without memory for it the table takes
 * entries until one slot is left, which ends every probe; false: it is
 * that full.
 */
static bool kd_tab_reserve(int by)
{
	struct kd_tab **tp = by == KD_BY_KH ? &kd_proc.by_kh : &kd_proc.by_ptr;
	struct kd_tab *t = *tp, *nt;
	uint32_t size = t ? 2 * (t->mask + 1) : KD_TAB_MIN, i;

	if (t && t->used + 1 <= (t->mask + 1) / 2)
		return true;
	nt = calloc(1, sizeof(*nt) + size * sizeof(nt->slot[0]));
	if (!nt)
		return t && t->used + 1 < t->mask + 1;
	nt->mask = size - 1;
	nt->retired = t;
	for (i = 0; t && i <= t->mask; i++)
		if (t->slot[i].obj)
			kd_tab_put(nt, by, t->slot[i].obj, t->slot[i].kh,
				   t->slot[i].type);
	__atomic_store_n(tp, nt, __ATOMIC_RELEASE);
	return true;
}

/* Take slot @i of @t out, shifting back the probe chain after it. */
static void kd_tab_drop_at(struct kd_tab *t, int by, uint32_t i)
{
	uint32_t j = i, home;

	for (;;) {
		j = (j + 1) & t->mask;
		if (!t->slot[j].obj)
			break;
		home = kd_hash(kd_slot_key(&t->slot[j], by), t->mask);
		/* Is home cyclically in (i, j]? Then j stays where it is. */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		kd_slot_set(&t->slot[i], t->slot[j].obj, t->slot[j].kh,
			    t->slot[j].type);
		i = j;
	}
	kd_slot_set(&t->slot[i], NULL, 0, 0);
	t->used--;
}

/*
 * Take @obj's slot out of @by's table. By the object too, not only the
 * key: a stale kernel handle kept by an object whose kernel half is gone
 * may come back as another object's.
 */
static void kd_tab_drop(int by, uintptr_t key, const void *obj)
{
	struct kd_tab *t = by == KD_BY_KH ? kd_proc.by_kh : kd_proc.by_ptr;
	uint32_t i;

	for (i = kd_hash(key, t->mask); t->slot[i].obj; i = (i + 1) & t->mask) {
		if (kd_slot_key(&t->slot[i], by) == key &&
		    t->slot[i].obj == obj) {
			kd_tab_drop_at(t, by, i);
			return;
		}
	}
}

/* false: no room, and no memory for a bigger table. */
static bool kd_table_add(struct kd_obj *o)
{
	bool ok;

	pthread_mutex_lock(&kd_proc.lock);
	ok = kd_tab_reserve(KD_BY_KH) && kd_tab_reserve(KD_BY_PTR);
	if (ok) {
		kd_write_begin();
		kd_tab_put(kd_proc.by_kh, KD_BY_KH, o, o->kh, o->type);
		kd_tab_put(kd_proc.by_ptr, KD_BY_PTR, o, o->kh, o->type);
		kd_write_end();
	}
	pthread_mutex_unlock(&kd_proc.lock);
	return ok;
}

static void kd_table_del_locked(const void *obj, uint32_t kh)
{
	kd_write_begin();
	kd_tab_drop(KD_BY_KH, kh, obj);
	kd_tab_drop(KD_BY_PTR, (uintptr_t)obj, obj);
	kd_write_end();
}

void kd_table_del(struct kd_obj *o)
{
	pthread_mutex_lock(&kd_proc.lock);
	kd_table_del_locked(o, o->kh);
	pthread_mutex_unlock(&kd_proc.lock);
}

/*
 * Every object in the tables, kd_proc.lock held: @fn's answer
 * (KD_WALK_*) may drop it. A drop shifts later slots back into this one,
 * so the walk looks at the same slot again; what a shift brings from the
 * table's start was seen already and is seen once more.
 */
void kd_table_walk_locked(int (*fn)(struct kd_obj *o, void *arg), void *arg)
{
	struct kd_tab *t = kd_proc.by_kh;
	struct kd_obj *o;
	uint32_t i = 0;
	int r;

	while (t && i <= t->mask) {
		struct kd_slot *sl = &t->slot[i];

		if (!sl->obj) {
			i++;
			continue;
		}
		o = (struct kd_obj *)sl->obj;
		r = fn(o, arg);
		if (r & KD_WALK_DROP) {
			/* Out of the tables before it is freed. */
			kd_table_del_locked(o, sl->kh);
			if (r & KD_WALK_FREE)
				kd_obj_free(o);
		} else {
			i++;
		}
		if (r & KD_WALK_STOP)
			break;
	}
}

struct kd_obj *kd_table_find(uint32_t kh)
{
	const void *o;
	uint32_t type;

	return kd_lookup(KD_BY_KH, kh, &o, &type) ? (struct kd_obj *)o : NULL;
}

/* The object of kernel handle @kh if it is a @type, by its table slot. */
struct kd_obj *kd_table_find_type(uint32_t kh, uint32_t type)
{
	const void *o;
	uint32_t t;

	if (!kd_lookup(KD_BY_KH, kh, &o, &t) || t != type)
		return NULL;
	return (struct kd_obj *)o;
}

/* The process's /dev/kdat file, opened for its first IA; -errno. */
int kd_proc_get(void)
{
	int fd;

	pthread_mutex_lock(&kd_proc.lock);
	if (kd_proc.fd < 0) {
		kd_proc.fd = kdat_open();
		if (kd_proc.fd >= 0)
			__atomic_store_n(&kd_proc.poller_mode,
					 kd_poller_setup(kd_proc.fd),
					 __ATOMIC_RELAXED);
	}
	fd = kd_proc.fd;
	if (fd >= 0)
		kd_proc.nr_ia++;
	pthread_mutex_unlock(&kd_proc.lock);
	return fd;
}

/* An IA is gone; the last one closes the file. */
void kd_proc_put(void)
{
	pthread_mutex_lock(&kd_proc.lock);
	if (!--kd_proc.nr_ia) {
		close(kd_proc.fd);
		kd_proc.fd = -1;
	}
	pthread_mutex_unlock(&kd_proc.lock);
}

/* false: no memory to keep it in the tables; it is in none. */
bool kd_obj_init(struct kd_obj *o, struct kd_ia *ia,
		 DAT_HANDLE_TYPE type, uint32_t kh)
{
	/* The provider the IA was opened through (see dat_provider_init). */
	o->provider = ia->provider;
	o->type = type;
	o->ia = ia;
	o->kh = kh;
	if (!kd_table_add(o))
		return false;
	kd_count_obj(o, true);
	return true;
}

/*
 * Is @h a live object of ours, of @type (any type for -1)? Found by address
 * in the table: a stale handle (freed memory) or a foreign pointer is
 * refused without being read.
 */
bool kd_check(const void *h, int type)
{
	const void *o;
	uint32_t t;

	if (!h || !kd_lookup(KD_BY_PTR, (uintptr_t)h, &o, &t))
		return false;
	return type < 0 || t == (uint32_t)type;
}

static bool kd_ours(const void *h)
{
	return kd_check(h, -1);
}

/* Free an object's user-space half: its ring mappings, then itself. */
void kd_obj_free(struct kd_obj *o)
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
	case DAT_HANDLE_TYPE_CNO:
		kd_cno_release((struct kd_cno *)o);
		return;
	case DAT_HANDLE_TYPE_RMR:
		pthread_mutex_destroy(&((struct kd_rmr *)o)->lock);
		break;
	default:
		break;
	}
	free(o);
}

/*
 * An object the tables had no room for (kd_obj_init() said false): its
 * kernel half goes, then its user-space half; what its create answers.
 */
DAT_RETURN kd_obj_abandon(struct kd_obj *o)
{
	kd_destroy_kh(o->ia, o->kh);
	kd_obj_free(o);
	return DAT_INSUFFICIENT_RESOURCES;
}

/* Undo a create whose user-space half failed. */
void kd_destroy_kh(struct kd_ia *ia, uint32_t kh)
{
	struct kdat_destroy d = { .size = sizeof(d), .handle = kh };

	kd_ioctl(ia, KDAT_IOCTL_DESTROY, &d);
}

/*
 * The subtype of DAT_INVALID_STATE that says an object of @type is still
 * used by others, as OFA's provider answers a free of it.
 */
static DAT_RETURN kd_in_use(DAT_HANDLE_TYPE type)
{
	switch (type) {
	case DAT_HANDLE_TYPE_IA:
		return DAT_INVALID_STATE_IA_IN_USE;
	case DAT_HANDLE_TYPE_PZ:
		return DAT_INVALID_STATE_PZ_IN_USE;
	case DAT_HANDLE_TYPE_EVD:
		return DAT_INVALID_STATE_EVD_IN_USE;
	case DAT_HANDLE_TYPE_LMR:
		return DAT_INVALID_STATE_LMR_IN_USE;
	case DAT_HANDLE_TYPE_CNO:
		return DAT_INVALID_STATE_CNO_IN_USE;
	case DAT_HANDLE_TYPE_SRQ:
		return DAT_INVALID_STATE_SRQ_IN_USE;
	default:
		return 0;
	}
}

DAT_RETURN kd_destroy(struct kd_obj *o)
{
	struct kdat_destroy d = { .size = sizeof(d), .handle = o->kh };
	DAT_RETURN ret;

	ret = kd_ioctl(o->ia, KDAT_IOCTL_DESTROY, &d);
	if (ret == DAT_SUCCESS) {
		kd_count_obj(o, false);
		kd_table_del(o);
		kd_obj_free(o);
	} else if (ret == DAT_INVALID_STATE) {
		ret |= kd_in_use(o->type);	/* EBUSY: others use it */
	}
	return ret;
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

DAT_RETURN kd_set_consumer_context(DAT_HANDLE h, DAT_CONTEXT c)
{
	struct kd_obj *o = h;

	if (!kd_ours(o))
		return DAT_INVALID_HANDLE;
	o->context = c;
	return DAT_SUCCESS;
}

DAT_RETURN kd_get_consumer_context(DAT_HANDLE h, DAT_CONTEXT *c)
{
	struct kd_obj *o = h;

	if (!kd_ours(o))
		return DAT_INVALID_HANDLE;
	if (!c)
		return DAT_INVALID_PARAMETER;
	*c = o->context;
	return DAT_SUCCESS;
}

DAT_RETURN kd_get_handle_type(DAT_HANDLE h, DAT_HANDLE_TYPE *t)
{
	struct kd_obj *o = h;

	if (!kd_ours(o))
		return DAT_INVALID_HANDLE;
	if (!t)
		return DAT_INVALID_PARAMETER;
	*t = o->type;
	return DAT_SUCCESS;
}

#define KD_NR(a) (sizeof(a) / sizeof((a)[0]))
#define N(x) [(x) >> 16] = #x

/* Each type of <dat2/dat_error.h>, by DAT_GET_TYPE() >> 16. */
static const char *const kd_type_names[] = {
	N(DAT_SUCCESS),
	N(DAT_ABORT),
	N(DAT_CONN_QUAL_IN_USE),
	N(DAT_INSUFFICIENT_RESOURCES),
	N(DAT_INTERNAL_ERROR),
	N(DAT_INVALID_HANDLE),
	N(DAT_INVALID_PARAMETER),
	N(DAT_INVALID_STATE),
	N(DAT_LENGTH_ERROR),
	N(DAT_MODEL_NOT_SUPPORTED),
	N(DAT_PROVIDER_NOT_FOUND),
	N(DAT_PRIVILEGES_VIOLATION),
	N(DAT_PROTECTION_VIOLATION),
	N(DAT_QUEUE_EMPTY),
	N(DAT_QUEUE_FULL),
	N(DAT_TIMEOUT_EXPIRED),
	N(DAT_PROVIDER_ALREADY_REGISTERED),
	N(DAT_PROVIDER_IN_USE),
	N(DAT_INVALID_ADDRESS),
	N(DAT_INTERRUPTED_CALL),
	N(DAT_CONN_QUAL_UNAVAILABLE),
	N(DAT_RESERVED_LMR),
	N(DAT_PORT_IN_USE),
	N(DAT_COMM_NOT_SUPPORTED),
};
#undef N
#define N(x) [x] = #x

/* Each DAT_RETURN_SUBTYPE of <dat2/dat_error.h>, by value. */
static const char *const kd_subtype_names[] = {
		N(DAT_NO_SUBTYPE),
		N(DAT_SUB_INTERRUPTED),
		N(DAT_RESOURCE_MEMORY),
		N(DAT_RESOURCE_DEVICE),
		N(DAT_RESOURCE_TEP),
		N(DAT_RESOURCE_TEVD),
		N(DAT_RESOURCE_PROTECTION_DOMAIN),
		N(DAT_RESOURCE_MEMORY_REGION),
		N(DAT_RESOURCE_ERROR_HANDLER),
		N(DAT_RESOURCE_CREDITS),
		N(DAT_RESOURCE_SRQ),
		N(DAT_INVALID_HANDLE_IA),
		N(DAT_INVALID_HANDLE_EP),
		N(DAT_INVALID_HANDLE_LMR),
		N(DAT_INVALID_HANDLE_RMR),
		N(DAT_INVALID_HANDLE_PZ),
		N(DAT_INVALID_HANDLE_PSP),
		N(DAT_INVALID_HANDLE_RSP),
		N(DAT_INVALID_HANDLE_CR),
		N(DAT_INVALID_HANDLE_CNO),
		N(DAT_INVALID_HANDLE_EVD_CR),
		N(DAT_INVALID_HANDLE_EVD_REQUEST),
		N(DAT_INVALID_HANDLE_EVD_RECV),
		N(DAT_INVALID_HANDLE_EVD_CONN),
		N(DAT_INVALID_HANDLE_EVD_ASYNC),
		N(DAT_INVALID_HANDLE_SRQ),
		N(DAT_INVALID_HANDLE_CSP),
		N(DAT_INVALID_HANDLE1),
		N(DAT_INVALID_HANDLE2),
		N(DAT_INVALID_HANDLE3),
		N(DAT_INVALID_HANDLE4),
		N(DAT_INVALID_HANDLE5),
		N(DAT_INVALID_HANDLE6),
		N(DAT_INVALID_HANDLE7),
		N(DAT_INVALID_HANDLE8),
		N(DAT_INVALID_HANDLE9),
		N(DAT_INVALID_HANDLE10),
		N(DAT_INVALID_ARG1),
		N(DAT_INVALID_ARG2),
		N(DAT_INVALID_ARG3),
		N(DAT_INVALID_ARG4),
		N(DAT_INVALID_ARG5),
		N(DAT_INVALID_ARG6),
		N(DAT_INVALID_ARG7),
		N(DAT_INVALID_ARG8),
		N(DAT_INVALID_ARG9),
		N(DAT_INVALID_ARG10),
		N(DAT_INVALID_STATE_EP_UNCONNECTED),
		N(DAT_INVALID_STATE_EP_ACTCONNPENDING),
		N(DAT_INVALID_STATE_EP_PASSCONNPENDING),
		N(DAT_INVALID_STATE_EP_TENTCONNPENDING),
		N(DAT_INVALID_STATE_EP_CONNECTED),
		N(DAT_INVALID_STATE_EP_DISCONNECTED),
		N(DAT_INVALID_STATE_EP_RESERVED),
		N(DAT_INVALID_STATE_EP_COMPLPENDING),
		N(DAT_INVALID_STATE_EP_DISCPENDING),
		N(DAT_INVALID_STATE_EP_PROVIDERCONTROL),
		N(DAT_INVALID_STATE_EP_NOTREADY),
		N(DAT_INVALID_STATE_EP_RECV_WATERMARK),
		N(DAT_INVALID_STATE_EP_PZ),
		N(DAT_INVALID_STATE_EP_EVD_REQUEST),
		N(DAT_INVALID_STATE_EP_EVD_RECV),
		N(DAT_INVALID_STATE_EP_EVD_CONNECT),
		N(DAT_INVALID_STATE_EP_UNCONFIGURED),
		N(DAT_INVALID_STATE_EP_UNCONFRESERVED),
		N(DAT_INVALID_STATE_EP_UNCONFPASSIVE),
		N(DAT_INVALID_STATE_EP_UNCONFTENTATIVE),
		N(DAT_INVALID_STATE_CNO_IN_USE),
		N(DAT_INVALID_STATE_CNO_DEAD),
		N(DAT_INVALID_STATE_EVD_OPEN),
		N(DAT_INVALID_STATE_EVD_ENABLED),
		N(DAT_INVALID_STATE_EVD_DISABLED),
		N(DAT_INVALID_STATE_EVD_WAITABLE),
		N(DAT_INVALID_STATE_EVD_UNWAITABLE),
		N(DAT_INVALID_STATE_EVD_IN_USE),
		N(DAT_INVALID_STATE_EVD_CONFIG_NOTIFY),
		N(DAT_INVALID_STATE_EVD_CONFIG_SOLICITED),
		N(DAT_INVALID_STATE_EVD_CONFIG_THRESHOLD),
		N(DAT_INVALID_STATE_EVD_WAITER),
		N(DAT_INVALID_STATE_EVD_ASYNC),
		N(DAT_INVALID_STATE_IA_IN_USE),
		N(DAT_INVALID_STATE_LMR_IN_USE),
		N(DAT_INVALID_STATE_LMR_FREE),
		N(DAT_INVALID_STATE_PZ_IN_USE),
		N(DAT_INVALID_STATE_PZ_FREE),
		N(DAT_INVALID_STATE_SRQ_OPERATIONAL),
		N(DAT_INVALID_STATE_SRQ_ERROR),
		N(DAT_INVALID_STATE_SRQ_IN_USE),
		N(DAT_INVALID_STATE_SRQ_SHUTDOWN),
		N(DAT_PRIVILEGES_READ),
		N(DAT_PRIVILEGES_WRITE),
		N(DAT_PRIVILEGES_RDMA_READ),
		N(DAT_PRIVILEGES_RDMA_WRITE),
		N(DAT_PROTECTION_READ),
		N(DAT_PROTECTION_WRITE),
		N(DAT_PROTECTION_RDMA_READ),
		N(DAT_PROTECTION_RDMA_WRITE),
		N(DAT_INVALID_ADDRESS_UNSUPPORTED),
		N(DAT_INVALID_ADDRESS_UNREACHABLE),
		N(DAT_INVALID_ADDRESS_MALFORMED),
		N(DAT_NAME_NOT_REGISTERED),
		N(DAT_MAJOR_NOT_FOUND),
		N(DAT_MINOR_NOT_FOUND),
		N(DAT_THREAD_SAFETY_NOT_FOUND),
};
#undef N

/*
 * The names of @value's type and subtype. A type or subtype that DAT
 * does not define (an extension's, such as DAT_IB_ERR: the extension's
 * own strerror names it) is DAT_INVALID_PARAMETER, and nothing is
 * stored.
 */
LIBDAT_API DAT_RETURN dat_strerror(DAT_RETURN value, const char **major,
				   const char **minor)
{
	uint32_t type = DAT_GET_TYPE(value), sub = DAT_GET_SUBTYPE(value);
	const char *t = NULL, *m = NULL;

	if (type == DAT_NOT_IMPLEMENTED)
		t = "DAT_NOT_IMPLEMENTED";
	else if ((type >> 16) < KD_NR(kd_type_names))
		t = kd_type_names[type >> 16];
	if (sub < KD_NR(kd_subtype_names))
		m = kd_subtype_names[sub];
	if (!t || !m)
		return DAT_INVALID_PARAMETER;
	if (major)
		*major = t;
	if (minor)
		*minor = sub == DAT_NO_SUBTYPE ? "" : m;
	return DAT_SUCCESS;
}

/*
 * KDAT_DEBUG=1 in the environment: every DTO completion that is not a
 * success printed on stderr, with the errno of a post the kernel refused.
 */
bool kd_debug(void)
{
	static int on = -1;

	if (on < 0) {
		const char *e = getenv("KDAT_DEBUG");

		on = e && strcmp(e, "0");
	}
	return on;
}
