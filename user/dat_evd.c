// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libdat Event Dispatchers. Kernel events become DAT events
 * here; dequeue and wait read an EVD's completion ring with no system
 * call when it has one (dat_ring.h), else go by ioctl.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

#include "dat_internal.h"
#include "dat_ring.h"

DAT_RETURN kd_evd_create(DAT_IA_HANDLE ia_handle,
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
	if (!kd_obj_init(&evd->obj, ia, DAT_HANDLE_TYPE_EVD, c.out_evd_handle))
		return kd_obj_abandon(&evd->obj);
	if (kd_rings_wanted()) {
		bool made;

		/*
		 * An EVD whose ring the kernel cannot make (its memory over
		 * RLIMIT_MEMLOCK: 8 MiB at the largest qlen) goes by ioctl.
		 */
		evd->ring = kd_ring_map(ia, evd->obj.kh, KDAT_RING_EVD, &made);
		if (!evd->ring && made) {
			kd_destroy(&evd->obj);
			return DAT_INSUFFICIENT_RESOURCES;
		}
	}
	*evd_handle = evd;
	return DAT_SUCCESS;
}

static DAT_RETURN kd_evd_modify(DAT_EVD_HANDLE evd_handle, uint32_t op,
				DAT_COUNT qlen)
{
	struct kdat_evd_modify c = { .size = sizeof(c), .op = op };
	struct kd_evd *evd = evd_handle;
	struct kd_ring *nr = NULL;
	size_t resv_len = 0;
	void *resv = NULL;
	DAT_RETURN ret;

	if (!kd_check(evd, DAT_HANDLE_TYPE_EVD))
		return DAT_INVALID_HANDLE;
	if (op == KDAT_EVD_OP_RESIZE) {
		if (qlen <= 0)
			return DAT_INVALID_PARAMETER;
		c.qlen = qlen;
	}
	c.evd_handle = evd->obj.kh;
	if (op != KDAT_EVD_OP_RESIZE) {
		ret = kd_ioctl(evd->obj.ia, KDAT_IOCTL_EVD_MODIFY, &c);
		if (ret)
			return ret;
		if (op == KDAT_EVD_OP_ENABLE || op == KDAT_EVD_OP_DISABLE)
			__atomic_store_n(&evd->disabled,
					 op == KDAT_EVD_OP_DISABLE,
					 __ATOMIC_RELAXED);
		else
			__atomic_store_n(&evd->unwaitable,
					 op == KDAT_EVD_OP_SET_UNWAITABLE,
					 __ATOMIC_RELAXED);
		return DAT_SUCCESS;
	}
	/*
	 * Not beside a dequeue or wait (in either mode, as for a free): the
	 * ring is replaced, nobody may be reading it meanwhile.
	 */
	if (!kd_evd_exclusive(evd))
		return DAT_INVALID_STATE;
	/*
	 * The kernel moves the events to a new ring, which must then be
	 * mapped: its address space and the struct that describes it are
	 * had first, so that once the kernel has resized nothing is left to
	 * fail for want of memory. Without them, DAT_INSUFFICIENT_RESOURCES
	 * and nothing changed.
	 */
	if (evd->ring) {
		resv = kd_ring_reserve(evd->ring, (uint32_t)qlen + 1,
				       &resv_len);
		nr = resv ? calloc(1, sizeof(*nr)) : NULL;
		if (!nr) {
			if (resv)
				munmap(resv, resv_len);
			kd_evd_release(evd);
			return DAT_INSUFFICIENT_RESOURCES;
		}
	}
	ret = kd_ioctl(evd->obj.ia, KDAT_IOCTL_EVD_MODIFY, &c);
	if (ret == DAT_SUCCESS)
		evd->qlen = qlen;
	if (ret == DAT_SUCCESS && evd->ring) {
		struct kd_ring *old = evd->ring;

		evd->ring = kd_ring_map_at(evd->obj.ia, evd->obj.kh,
					   KDAT_RING_EVD, NULL, resv,
					   resv_len, nr);
		kd_ring_unmap(old);
		/*
		 * Only where the kernel refused the mapping itself: the EVD
		 * is resized, and its events unreachable (the kernel keeps
		 * them in a ring that is not mapped). Free it.
		 */
		if (!evd->ring)
			ret = DAT_INTERNAL_ERROR;
	} else if (resv) {
		munmap(resv, resv_len);
		free(nr);
	}
	kd_evd_release(evd);
	return ret;
}

/* Waits on an unwaitable EVD answer DAT_INVALID_STATE; dequeue works. */
DAT_RETURN kd_evd_set_unwaitable(DAT_EVD_HANDLE evd_handle)
{
	return kd_evd_modify(evd_handle, KDAT_EVD_OP_SET_UNWAITABLE, 0);
}

DAT_RETURN kd_evd_clear_unwaitable(DAT_EVD_HANDLE evd_handle)
{
	return kd_evd_modify(evd_handle, KDAT_EVD_OP_CLEAR_UNWAITABLE, 0);
}

/* A disabled EVD queues its events but does not trigger its CNO. */
DAT_RETURN kd_evd_enable(DAT_EVD_HANDLE evd_handle)
{
	return kd_evd_modify(evd_handle, KDAT_EVD_OP_ENABLE, 0);
}

DAT_RETURN kd_evd_disable(DAT_EVD_HANDLE evd_handle)
{
	return kd_evd_modify(evd_handle, KDAT_EVD_OP_DISABLE, 0);
}

/* DAT_INVALID_STATE when more events are queued than @evd_qlen. */
DAT_RETURN kd_evd_resize(DAT_EVD_HANDLE evd_handle,
			 DAT_COUNT evd_qlen)
{
	return kd_evd_modify(evd_handle, KDAT_EVD_OP_RESIZE, evd_qlen);
}

DAT_RETURN kd_evd_modify_cno(DAT_EVD_HANDLE evd_handle,
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

DAT_RETURN kd_evd_free(DAT_EVD_HANDLE evd_handle)
{
	struct kd_evd *evd = evd_handle;
	struct kd_ia *ia;
	DAT_RETURN ret;

	if (!kd_check(evd, DAT_HANDLE_TYPE_EVD))
		return DAT_INVALID_HANDLE;
	/*
	 * Not while a thread is inside a dequeue or wait (it reads the ring;
	 * in either mode, DAT_INVALID_STATE as for a resize).
	 */
	if (!kd_evd_exclusive(evd))
		return DAT_INVALID_STATE;
	ia = evd->obj.ia;
	ret = kd_destroy(&evd->obj);	/* frees @evd when it succeeds */
	if (ret != DAT_SUCCESS) {
		kd_evd_release(evd);
		return ret;
	}
	/* Only once it is gone: a refused free leaves the IA's async EVD. */
	if (ia->async_evd == evd_handle)
		ia->async_evd = DAT_HANDLE_NULL;
	return ret;
}

DAT_RETURN kd_evd_query(DAT_EVD_HANDLE evd_handle,
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
	param->evd_state = __atomic_load_n(&evd->disabled, __ATOMIC_RELAXED) ?
			   DAT_EVD_STATE_DISABLED : DAT_EVD_STATE_ENABLED;
	param->cno_handle = evd->cno;
	param->evd_flags = evd->flags;
	return DAT_SUCCESS;
}

DAT_RETURN kd_evd_post_se(DAT_EVD_HANDLE evd_handle,
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
	/* A full EVD: the event is not queued, nothing overflows. */
	if (ioctl(evd->obj.ia->fd, KDAT_IOCTL_EVD_POST_SE, &c))
		return errno == ENOMEM ? DAT_QUEUE_FULL : kd_from_errno(errno);
	return DAT_SUCCESS;
}

/*
 * A connection request's CR is allocated before its event is taken: each
 * thread that takes from an EVD of the CR stream keeps one spare. Where
 * there is no memory for it, the take answers DAT_INSUFFICIENT_RESOURCES
 * and the request stays queued for the next one, instead of being taken
 * and lost unanswered. A thread's spare is freed when it exits.
 */
static pthread_key_t kd_cr_key;
static pthread_once_t kd_cr_once = PTHREAD_ONCE_INIT;
static bool kd_cr_key_ok;

static void kd_cr_key_make(void)
{
	kd_cr_key_ok = !pthread_key_create(&kd_cr_key, free);
}

/* The calling thread has a spare CR (allocated now if it had none). */
static bool kd_cr_spare_ready(void)
{
	struct kd_cr *cr;

	pthread_once(&kd_cr_once, kd_cr_key_make);
	if (!kd_cr_key_ok)
		return false;
	if (pthread_getspecific(kd_cr_key))
		return true;
	cr = calloc(1, sizeof(*cr));
	if (!cr || pthread_setspecific(kd_cr_key, cr)) {
		free(cr);
		return false;
	}
	return true;
}

/* A request we cannot keep (no memory for it) is refused. */
static DAT_RETURN kd_cr_refuse(struct kd_ia *ia, uint32_t cr_handle)
{
	struct kdat_cr_reply c = { .size = sizeof(c), .cr_handle = cr_handle };

	kd_ioctl(ia, KDAT_IOCTL_CR_REJECT, &c);
	return DAT_INSUFFICIENT_RESOURCES;
}

/* The calling thread's spare CR, now the caller's; NULL if it has none. */
static struct kd_cr *kd_cr_spare_take(void)
{
	struct kd_cr *cr;

	if (!kd_cr_spare_ready())
		return NULL;
	cr = pthread_getspecific(kd_cr_key);
	pthread_setspecific(kd_cr_key, NULL);
	return cr;
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
		kd_ext_dto_event(k, ev);
		if (k->status != KDAT_DTO_SUCCESS && kd_debug())
			fprintf(stderr,
				"libdat: EP %p: DTO op %u cookie %#llx: status %u, length %llu, post errno %u\n",
				d->ep_handle, k->operation,
				(unsigned long long)k->cookie, k->status,
				(unsigned long long)k->transferred_length,
				k->post_error);
		break;
	}
	case KDAT_EVENT_CONNECTION_REQUEST:
	case KDAT_EVENT_UD_CONNECTION_REQUEST: {
		DAT_CR_ARRIVAL_EVENT_DATA *d =
			&ev->event_data.cr_arrival_event_data;
		struct kdat_cr_query q = { .size = sizeof(q),
					   .cr_handle = k->cr_handle };
		struct kd_psp *psp;
		struct kd_cr *cr;

		psp = (struct kd_psp *)kd_table_find(k->handle);
		/* Made ready before the event was taken (kd_evd_take()). */
		cr = kd_cr_spare_take();
		if (!cr)
			return kd_cr_refuse(ia, k->cr_handle);
		if (kd_ioctl(ia, KDAT_IOCTL_CR_QUERY, &q) == DAT_SUCCESS) {
			cr->pdata_len = q.private_data_len;
			memcpy(cr->pdata, q.private_data, sizeof(cr->pdata));
			kd_sockaddr_from_kdat(&q.remote, &cr->remote);
		}
		cr->psp = psp;
		/* The qualifier the PSP was created with, not its port. */
		cr->conn_qual = psp ? psp->conn_qual : k->conn_qual;
		if (!kd_obj_init(&cr->obj, ia, DAT_HANDLE_TYPE_CR,
				 k->cr_handle)) {
			free(cr);
			return kd_cr_refuse(ia, k->cr_handle);
		}
		/*
		 * DAT: an RSP is gone once it produced its request, so the
		 * event names none; it goes when the CR is answered.
		 */
		d->sp_handle.psp_handle =
			psp && psp->obj.type == DAT_HANDLE_TYPE_RSP ? NULL : psp;
		d->local_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ia->addr;
		d->conn_qual = cr->conn_qual;
		d->cr_handle = cr;
		if (k->event_number == KDAT_EVENT_UD_CONNECTION_REQUEST)
			return kd_ud_event(ia, k, ev);
		break;
	}
	case KDAT_EVENT_UD_ESTABLISHED:
	case KDAT_EVENT_UD_REJECTED:
	case KDAT_EVENT_UD_ERROR:
		return kd_ud_event(ia, k, ev);
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
	case KDAT_EVENT_ASYNC_EP_BROKEN:
		/* An EP on an SRQ: its QP takes no more of the SRQ's buffers. */
		ev->event_data.asynch_error_event_data.dat_handle =
			(DAT_HANDLE)kd_table_find(k->handle);
		ev->event_data.asynch_error_event_data.reason =
			DAT_EP_TRANSFER_TO_ERROR;
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

/* Microseconds on the monotonic clock (a wait's deadline). */
static int64_t kd_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/*
 * A wait spins on the completion ring before it sleeps in the kernel. With
 * a poller, a DTO posted a moment ago completes on another CPU some
 * microseconds later, sooner than a sleep and a wake-up take (on the
 * testbed's guest a wait that slept took 50-120 us where the completion
 * came after 20). The spin is for DTO EVDs only, and not when the file
 * has no poller (KDAT_POLLER=none, the mode for a process per core, where
 * a post is taken in the poster's own call). It learns per EVD: a wait
 * that slept after its spin sets the EVD's budget to the spin that would
 * have found its event, up to KDAT_WAIT_SPIN_US (environment,
 * default 100; 0: never spin), or halves it, down to a sixteenth, when its
 * event came later than that. The spin counts looks at the ring, not
 * clock reads (a clock read is a system call where there is no vDSO):
 * the looks per microsecond are measured once; only a wait that goes to
 * the kernel reads the clock.
 */
#define KD_WAIT_SPIN_US		100

static uint32_t kd_spin_max, kd_spin_min;	/* looks */
static int64_t kd_spin_max_us;
static pthread_once_t kd_spin_once = PTHREAD_ONCE_INIT;
static double kd_looks_per_us = 1;

static inline void kd_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
}

/* One look: are @want events in @r (read without its lock)? */
static inline bool kd_cq_has(const struct kd_ring *r, uint32_t want)
{
	return __atomic_load_n(r->tail, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(r->head, __ATOMIC_RELAXED) >= want;
}

static void kd_spin_setup(void)
{
	const char *e = getenv("KDAT_WAIT_SPIN_US");
	unsigned long us = e ? strtoul(e, NULL, 0) : KD_WAIT_SPIN_US;
	uint32_t tail = 0, head = 0;
	struct kd_ring probe = { .tail = &tail, .head = &head };
	double rate, best = 0;
	int64_t t0, t1;
	uint32_t i, n;
	int w;

	/* No poller: a post completes in the poster's call, a process per core. */
	if (!us || __atomic_load_n(&kd_proc.poller_mode, __ATOMIC_RELAXED) ==
		   KDAT_POLLER_NONE)
		return;
	if (us > 10000)
		us = 10000;
	/*
	 * Looks per microsecond: the best of eight windows of 50 us, give or
	 * take a clock read per thousand looks. A window in which this thread
	 * was preempted or interrupted counts fewer looks, never more; one
	 * such window alone would leave every spin of the process short.
	 */
	for (w = 0; w < 8; w++) {
		n = 0;
		t0 = kd_now_us();
		do {
			for (i = 0; i < 1000 && !kd_cq_has(&probe, 1); i++)
				kd_cpu_relax();
			n += i;
			t1 = kd_now_us();
		} while (t1 - t0 < 50);
		rate = (double)n / (double)(t1 - t0);
		if (rate > best)
			best = rate;
	}
	kd_looks_per_us = best;
	kd_spin_max_us = (int64_t)us;
	kd_spin_max = (uint32_t)((double)us * kd_looks_per_us) + 1;
	kd_spin_min = kd_spin_max / 16 + 1;
}

/*
 * Spin on @evd's ring for up to its budget, until @want events are there.
 * Returns the microseconds spent, about; *@hit says whether they came.
 */
static int64_t kd_evd_spin(struct kd_evd *evd, uint32_t want,
			   DAT_TIMEOUT timeout, bool *hit)
{
	const struct kd_ring *r = evd->ring;
	uint32_t budget, i;

	*hit = false;
	pthread_once(&kd_spin_once, kd_spin_setup);
	if (!kd_spin_max || !(evd->flags & DAT_EVD_DTO_FLAG) ||
	    kd_ring_flags(r) & KDAT_RING_F_POLL)
		return 0;
	budget = __atomic_load_n(&evd->spin, __ATOMIC_RELAXED);
	if (!budget)
		budget = kd_spin_max;
	/* Not past the wait's own timeout (0: one look, no spin). */
	if (timeout != DAT_TIMEOUT_INFINITE &&
	    (double)timeout * kd_looks_per_us < budget)
		budget = (uint32_t)((double)timeout * kd_looks_per_us);
	if (!budget)
		return 0;
	for (i = 0; i < budget && !kd_cq_has(r, want); i++)
		kd_cpu_relax();
	*hit = i < budget;
	return (int64_t)(i / kd_looks_per_us);
}

/* A wait that spun and then slept: its events came @us after it began. */
static void kd_evd_spin_learn(struct kd_evd *evd, int64_t us)
{
	uint32_t budget = __atomic_load_n(&evd->spin, __ATOMIC_RELAXED);

	if (!budget)
		budget = kd_spin_max;
	if (us <= kd_spin_max_us)
		budget = (uint32_t)((double)us * 1.25 * kd_looks_per_us) + 1;
	else
		budget /= 2;
	if (budget > kd_spin_max)
		budget = kd_spin_max;
	if (budget < kd_spin_min)
		budget = kd_spin_min;
	__atomic_store_n(&evd->spin, budget, __ATOMIC_RELAXED);
}

/*
 * Ring path of dequeue (@threshold 0) and wait: events are read from the
 * ring with no system call; the kernel is asked only to wait for more, or
 * to bring in solicited-wait receives it holds back (KDAT_RING_F_POLL).
 * A wait spins first (kd_evd_spin()).
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
	uint32_t want = (uint32_t)(threshold ? threshold : 1);
	int64_t deadline = 0, spent = 0, slept = 0;
	struct kdat_event k;
	uint32_t head, ready;
	bool asked = false, spun = false, hit;
	DAT_RETURN ret;

	pthread_mutex_lock(&r->lock);
	while ((ready = kd_cq_ready(r, &head)) < want) {
		if (!threshold &&
		    (asked || !(kd_ring_flags(r) & KDAT_RING_F_POLL))) {
			pthread_mutex_unlock(&r->lock);
			return DAT_QUEUE_EMPTY;
		}
		if (threshold && !spun) {
			/* Without the lock: a dequeue goes on meanwhile. */
			spun = true;
			pthread_mutex_unlock(&r->lock);
			spent = kd_evd_spin(evd, want, timeout, &hit);
			if (spent && !hit)
				slept = kd_now_us();
			pthread_mutex_lock(&r->lock);
			continue;
		}
		/*
		 * Wait (or bring in held-back events) in the kernel, without
		 * the ring's lock: a dequeue from another thread goes on
		 * meanwhile, and a second waiter hears DAT_INVALID_STATE from
		 * the kernel. Then look again: that dequeue may have taken
		 * what woke us.
		 */
		if (timeout != DAT_TIMEOUT_INFINITE) {
			/*
			 * The clock is read only on the way to the kernel: a
			 * dequeue that finds its event, or finds none, reads
			 * no clock (where it has no vDSO, that is a system
			 * call). A wait again is for what is left of its time.
			 */
			int64_t left = (int64_t)timeout - spent;

			if (left < 0)
				left = 0;	/* spun it all: one look */
			if (!asked)
				deadline = (slept ? slept : kd_now_us()) + left;
			else
				left = deadline - kd_now_us();
			if (asked && left <= 0) {
				pthread_mutex_unlock(&r->lock);
				return DAT_TIMEOUT_EXPIRED;
			}
			w.timeout_us = (uint64_t)left;
		}
		asked = true;
		pthread_mutex_unlock(&r->lock);
		if (threshold)
			kd_count(&evd->cntrs[DCNT_EVD_WAIT_BLOCKED], 1);
		ret = kd_ioctl(evd->obj.ia, KDAT_IOCTL_EVD_WAIT, &w);
		if (slept) {
			if (!ret)
				kd_evd_spin_learn(evd, kd_now_us() - slept +
						  spent);
			slept = 0;
		}
		if (ret)
			return ret;
		pthread_mutex_lock(&r->lock);
	}
	kd_cq_reap(r, head, &k);
	pthread_mutex_unlock(&r->lock);
	if (nmore)
		*nmore = ready - 1;
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

	/* A request taken must have its CR: room for it first. */
	if ((evd->flags & DAT_EVD_CR_FLAG) && !kd_cr_spare_ready())
		return DAT_INSUFFICIENT_RESOURCES;
	if (!kd_evd_enter(evd))
		return DAT_INVALID_STATE;	/* being freed */
	if (evd->ring) {
		ret = kd_evd_ring_take(evd, threshold, timeout, event, nmore);
		kd_evd_leave(evd);
		return ret;
	}
	if (threshold)
		kd_count(&evd->cntrs[DCNT_EVD_WAIT_BLOCKED], 1);
	ret = kd_ioctl(evd->obj.ia, KDAT_IOCTL_EVD_WAIT, &w);
	if (!ret) {
		if (nmore)
			*nmore = w.out_nmore;
		ret = kd_event(evd, &k, event);
	}
	kd_evd_leave(evd);
	return ret;
}

DAT_RETURN kd_evd_dequeue(DAT_EVD_HANDLE evd_handle,
			  DAT_EVENT *event)
{
	struct kd_evd *evd = evd_handle;
	DAT_RETURN ret;

	if (!kd_check(evd, DAT_HANDLE_TYPE_EVD))
		return DAT_INVALID_HANDLE;
	if (!event)
		return DAT_INVALID_PARAMETER;
	kd_count(&evd->cntrs[DCNT_EVD_DEQUEUE], 1);
	ret = kd_evd_take(evd, 0, 0, event, NULL);
	if (ret == DAT_SUCCESS)
		kd_count(&evd->cntrs[DCNT_EVD_DEQUEUE_FOUND], 1);
	else if (DAT_GET_TYPE(ret) == DAT_QUEUE_EMPTY)
		kd_count(&evd->cntrs[DCNT_EVD_DEQUEUE_NOT_FOUND], 1);
	return ret;
}

DAT_RETURN kd_evd_wait(DAT_EVD_HANDLE evd_handle,
		       DAT_TIMEOUT timeout, DAT_COUNT threshold,
		       DAT_EVENT *event, DAT_COUNT *nmore)
{
	struct kd_evd *evd = evd_handle;

	if (!kd_check(evd, DAT_HANDLE_TYPE_EVD))
		return DAT_INVALID_HANDLE;
	if (!event || threshold <= 0 || threshold > evd->qlen)
		return DAT_INVALID_PARAMETER;
	/* As the kernel answers: even when the events are there already. */
	if (__atomic_load_n(&evd->unwaitable, __ATOMIC_RELAXED))
		return DAT_INVALID_STATE | DAT_INVALID_STATE_EVD_UNWAITABLE;
	kd_count(&evd->cntrs[DCNT_EVD_WAIT], 1);
	return kd_evd_take(evd, threshold, timeout, event, nmore);
}
