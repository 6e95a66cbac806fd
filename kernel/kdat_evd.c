// SPDX-License-Identifier: GPL-2.0
/*
 * kdat Event Dispatchers.
 *
 * Events are queued in a ring of qlen + 1 entries under evd->lock, taken
 * from process context (ioctls, the RDMA CM handler) and from the CQ's
 * softirq poller, hence the irqsave locking. The last entry is kept for
 * the overflow event: when an event arrives and qlen events are queued,
 * it is dropped and, once per overflow, KDAT_EVENT_ASYNC_EVD_OVERFLOW is
 * queued in the spare entry, so a consumer always learns that it lost
 * events.
 */
#include <linux/jiffies.h>
#include <linux/log2.h>
#include <linux/moduleparam.h>
#include <linux/rcupdate.h>
#include <linux/sched/clock.h>
#include <linux/sched/signal.h>
#include <linux/sched/stat.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kdat.h"
#include "kdat_ring.h"
#include "kdat_trace.h"

#define KDAT_EVD_MAX_QLEN	65536
#define KDAT_EVD_ALL_FLAGS	(KDAT_EVD_SOFTWARE | KDAT_EVD_CR | \
				 KDAT_EVD_DTO | KDAT_EVD_CONNECTION | \
				 KDAT_EVD_RMR_BIND | KDAT_EVD_ASYNC)

static struct kdat_event *kdat_evd_slot(struct kdat_evd *evd, u32 i)
{
	return &evd->events[(evd->head + i) % (evd->qlen + 1)];
}

/* ---- completion rings ------------------------------------------------ */

/* Events in @evd's ring, seen by the kernel; evd->lock held. */
/* How many events the ring holds past @head, a head read once. */
static u32 kdat_evd_ring_used_from(struct kdat_ring *r, u32 head)
{
	u32 used = r->ktail - head;

	/* A head moved backwards or past the tail: the ring is full. */
	return used > r->entries ? r->entries : used;
}

static u32 kdat_evd_ring_used(struct kdat_evd *evd)
{
	return kdat_evd_ring_used_from(evd->ring, kdat_ring_head(evd->ring));
}

static u32 kdat_evd_ring_count(struct kdat_evd *evd)
{
	unsigned long flags;
	u32 n;

	spin_lock_irqsave(&evd->lock, flags);
	n = evd->ring ? kdat_evd_ring_used(evd) : evd->count;
	spin_unlock_irqrestore(&evd->lock, flags);
	return n;
}

/*
 * The events in @evd's ring, as kdat_evd_ring_used(), from one read of
 * the process's head; once it has read past the overflow event, events
 * flow again. evd->lock held.
 */
static u32 kdat_evd_ring_settle(struct kdat_evd *evd)
{
	struct kdat_ring *r = evd->ring;
	u32 head = kdat_ring_head(r);
	u32 used = r->ktail - head;

	if (evd->overflowed && (s32)(head - evd->of_pos) > 0)
		evd->overflowed = false;
	return used > r->entries ? r->entries : used;
}

/*
 * Queue @ev in @evd's ring, which holds @used events (settled once by the
 * caller: the head the process writes is read once per event); evd->lock
 * held. Returns false when it was dropped (after the overflow event). The
 * ring has qlen + 1 entries at least: qlen events and the overflow event.
 */
static bool kdat_evd_ring_push(struct kdat_evd *evd,
			       const struct kdat_event *ev, u32 used)
{
	struct kdat_ring *r = evd->ring;
	struct kdat_event *slot;

	if (evd->overflowed)
		return false;
	slot = kdat_ring_entry(r, r->ktail);
	if (used < evd->qlen) {
		*slot = *ev;
	} else if (used < r->entries) {
		memset(slot, 0, sizeof(*slot));
		slot->event_number = KDAT_EVENT_ASYNC_EVD_OVERFLOW;
		evd->overflowed = true;
		evd->of_pos = r->ktail;
	} else {
		return false;
	}
	r->ktail++;
	/* The event is written before the process can see the new tail. */
	smp_store_release(kdat_ring_u32(r, KDAT_RING_OFF_TAIL), r->ktail);
	return true;
}

void kdat_evd_ring_set_poll(struct kdat_evd *evd)
{
	unsigned long flags;

	spin_lock_irqsave(&evd->lock, flags);
	if (evd->ring)
		kdat_ring_set_flag(evd->ring, KDAT_RING_F_POLL, true);
	spin_unlock_irqrestore(&evd->lock, flags);
}

/*
 * Give @evd a completion ring of @qlen (+1) events, or a new one on a resize;
 * the events queued so far move into it, in order. The file's lock held.
 */
int kdat_evd_ring_create(struct kdat_evd *evd, u32 qlen,
			 struct kdat_ring **out)
{
	struct kdat_file *kfile = evd->obj.file;
	struct kdat_ring *r, *old;
	unsigned long flags;
	u32 used, i;

	r = kdat_ring_alloc(kfile, KDAT_RING_EVD, qlen + 1,
			    sizeof(struct kdat_event));
	if (IS_ERR(r))
		return PTR_ERR(r);
	spin_lock_irqsave(&evd->lock, flags);
	old = evd->ring;
	if (old) {
		/* A resize: the unread events move, in order. */
		u32 head = kdat_ring_head(old);

		used = kdat_evd_ring_used_from(old, head);
		if (used > qlen) {
			spin_unlock_irqrestore(&evd->lock, flags);
			kdat_ring_release(r);
			return -EBUSY;
		}
		for (i = 0; i < used; i++)
			memcpy(kdat_ring_entry(r, i),
			       kdat_ring_entry(old, head + i),
			       sizeof(struct kdat_event));
		if (evd->overflowed)
			evd->of_pos = evd->of_pos - head;
		kdat_ring_set_flag(r, KDAT_RING_F_POLL,
				   kdat_ring_flag(old, KDAT_RING_F_POLL));
	} else {
		/* Events queued before the ring: they move in first. */
		used = min(evd->count, r->entries);
		for (i = 0; i < used; i++)
			memcpy(kdat_ring_entry(r, i), &evd->events[
			       (evd->head + i) % (evd->qlen + 1)],
			       sizeof(struct kdat_event));
		if (evd->overflowed)
			evd->of_pos = used - 1;
		evd->count = 0;
		if (!list_empty(&evd->sw_eps))
			kdat_ring_set_flag(r, KDAT_RING_F_POLL, true);
	}
	r->ktail = used;
	WRITE_ONCE(*kdat_ring_u32(r, KDAT_RING_OFF_TAIL), used);
	evd->qlen = qlen;
	evd->ring = r;
	spin_unlock_irqrestore(&evd->lock, flags);
	if (old)
		kdat_ring_release(old);
	*out = r;
	return 0;
}

/*
 * Queue an event; any context. An EVD with an upcall (kernel consumers)
 * hands the event to it instead, outside evd->lock. With @need_room, an
 * event that would overflow the EVD is not queued (false), checked and
 * queued under one hold of the lock.
 */
static bool kdat_evd_queue(struct kdat_evd *evd, const struct kdat_event *ev,
			   bool need_room)
{
	struct kdat_upcall up;
	unsigned long flags;
	u32 used;

	spin_lock_irqsave(&evd->lock, flags);
	up = evd->upcall;
	if (up.func) {
		spin_unlock_irqrestore(&evd->lock, flags);
		up.func(up.context, ev);
		return true;
	}
	used = evd->ring ? kdat_evd_ring_settle(evd) : evd->count;
	/* Room for it without overflowing, checked as it is queued. */
	if (need_room && (evd->overflowed || used >= evd->qlen)) {
		spin_unlock_irqrestore(&evd->lock, flags);
		return false;
	}
	if (evd->ring) {
		kdat_evd_ring_push(evd, ev, used);
	} else if (evd->count < evd->qlen && !evd->overflowed) {
		*kdat_evd_slot(evd, evd->count++) = *ev;
	} else if (!evd->overflowed) {
		struct kdat_event *of = kdat_evd_slot(evd, evd->count++);

		memset(of, 0, sizeof(*of));
		of->event_number = KDAT_EVENT_ASYNC_EVD_OVERFLOW;
		evd->overflowed = true;
	}
	/*
	 * A waiter on the EVD itself takes the event; else the CNO hears,
	 * unless the EVD is disabled. After the event is in the ring: the
	 * CNO's waiter reads it from there without asking us.
	 */
	if (evd->cno && !evd->waiting && !evd->disabled)
		kdat_cno_trigger(evd->cno, evd);
	spin_unlock_irqrestore(&evd->lock, flags);
	/*
	 * Only a sleeper is woken (most events have none): the barrier in
	 * wq_has_sleeper() pairs with the one a waiter's wait_event sets
	 * between joining the queue and reading the count.
	 */
	if (wq_has_sleeper(&evd->wq))
		wake_up(&evd->wq);
	return true;
}

void kdat_evd_push(struct kdat_evd *evd, const struct kdat_event *ev)
{
	kdat_evd_queue(evd, ev, false);
}

/*
 * Reserve room in a DTO EVD's CQ for @n more outstanding DTOs, growing the
 * CQ when it is too small (DAT lets an EVD be shorter than the DTOs its
 * EPs may have outstanding; the CQ must not be). ENOMEM when the device
 * cannot. Callers hold the owner's file lock (one commit at a time per
 * EVD) and the device's rwsem.
 */
int kdat_evd_commit(struct kdat_evd *evd, u32 n)
{
	unsigned long flags;
	u32 need;
	int ret;

	spin_lock_irqsave(&evd->lock, flags);
	need = evd->cq_committed + n;
	if (need <= evd->cq_size) {
		evd->cq_committed = need;
		n = 0;
	}
	spin_unlock_irqrestore(&evd->lock, flags);
	if (!n)
		return 0;

	if (!evd->kcq.cq || need > evd->ia->kdev->ibdev->attrs.max_cqe)
		return -ENOMEM;
	ret = ib_resize_cq(evd->kcq.cq, need);
	if (ret)
		return -ENOMEM;
	spin_lock_irqsave(&evd->lock, flags);
	evd->cq_size = max_t(u32, need, evd->kcq.cq->cqe);
	evd->cq_committed += n;
	spin_unlock_irqrestore(&evd->lock, flags);
	return 0;
}

void kdat_evd_uncommit(struct kdat_evd *evd, u32 n)
{
	unsigned long flags;

	spin_lock_irqsave(&evd->lock, flags);
	/* More given back than was taken: a commitment counted twice. */
	if (WARN_ON_ONCE(n > evd->cq_committed))
		n = evd->cq_committed;
	evd->cq_committed -= n;
	spin_unlock_irqrestore(&evd->lock, flags);
}

/*
 * The device is going (or the EVD is): free the CQ. The device's removal
 * also reports itself on the IA's async EVDs, which stay usable.
 */
static void kdat_evd_free_cq(struct kdat_evd *evd)
{
	/*
	 * No QP uses the CQ any more (the EVD has no users), but a reaper
	 * may still be on it: kdat_cq_destroy() waits for them.
	 */
	kdat_cq_destroy(&evd->kcq);
}

static void kdat_evd_disassociate(struct kdat_dev_res *res)
{
	struct kdat_evd *evd = container_of(res, struct kdat_evd, res);

	kdat_evd_free_cq(evd);
	if (evd->flags & KDAT_EVD_ASYNC) {
		struct kdat_event ev = {
			.event_number = KDAT_EVENT_ASYNC_IA_CATASTROPHIC,
			.handle = evd->ia->obj.handle,
		};

		kdat_evd_push(evd, &ev);
	}
}

static void kdat_evd_release(struct kdat_evd *evd)
{
	struct kdat_device *kdev = evd->ia->kdev;

	down_read(&kdev->rwsem);
	if (kdat_dev_res_del(kdev, &evd->res))
		kdat_evd_free_cq(evd);
	up_read(&kdev->rwsem);
}

/*
 * The device's CQ memory is charged to no one: the events are, for the
 * EVD's length; the entries a device without resize_cq gets beyond it
 * are charged here, a work completion's worth each (memory kept only to
 * be charged: no charge of another's allocation is exported to modules),
 * so that the cgroup bounds them too. Before the CQ is made, so that a
 * caller at its limit makes none.
 */
static int kdat_evd_charge_cq(struct kdat_evd *evd)
{
	size_t n;

	if (evd->cq_size <= evd->qlen)
		return 0;
	n = array_size(evd->cq_size - evd->qlen, sizeof(struct ib_wc));
	evd->cq_charge = kvmalloc(n, GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL |
				  __GFP_NOWARN);
	return evd->cq_charge ? 0 : -ENOMEM;
}

static void kdat_evd_destroy(struct kdat_obj *obj)
{
	struct kdat_evd *evd = container_of(obj, struct kdat_evd, obj);
	unsigned long flags;

	spin_lock_irqsave(&evd->ia->async_lock, flags);
	if (evd->ia->async_evd == evd)
		evd->ia->async_evd = NULL;
	spin_unlock_irqrestore(&evd->ia->async_lock, flags);
	kdat_evd_release(evd);
	if (evd->ring)
		kdat_ring_release(evd->ring);
	if (evd->cno)
		kdat_obj_unuse(&evd->cno->obj, evd->ia);
	kvfree(evd->events);
	kvfree(evd->cq_charge);
	kdat_obj_unuse(&evd->ia->obj, evd->ia);
}

/* Unlinked: a thread asleep in a wait returns (EBADF) and lets it go. */
static void kdat_evd_kill(struct kdat_obj *obj)
{
	wake_up_all(&container_of(obj, struct kdat_evd, obj)->wq);
}

static const struct kdat_obj_ops kdat_evd_ops = {
	.kill = kdat_evd_kill,
	.destroy = kdat_evd_destroy,
};

/*
 * An EVD on @ia of @kfile, reserved; the caller holds kfile->lock. @cno
 * (or NULL) is the caller's lookup, @upcall (or NULL) a kernel consumer's.
 */
int kdat_evd_new(struct kdat_file *kfile, struct kdat_ia *ia, u32 evd_flags,
		 u32 qlen, struct kdat_cno *cno,
		 const struct kdat_upcall *upcall, struct kdat_evd **evdp)
{
	struct kdat_evd *evd;
	int ret;

	if (evd_flags & ~KDAT_EVD_ALL_FLAGS)
		return -EOPNOTSUPP;
	if (!evd_flags || !qlen || qlen > KDAT_EVD_MAX_QLEN)
		return -EINVAL;
	evd = kdat_obj_alloc(struct kdat_evd, obj, KDAT_OBJ_EVD, &kdat_evd_ops);
	if (!evd)
		return -ENOMEM;
	evd->ia = ia;
	evd->flags = evd_flags;
	evd->qlen = qlen;
	if (upcall)
		evd->upcall = *upcall;
	spin_lock_init(&evd->lock);
	init_waitqueue_head(&evd->wq);
	spin_lock_init(&evd->sw_lock);
	INIT_LIST_HEAD(&evd->sw_eps);
	kdat_cq_init(&evd->kcq);
	/* Sized by the caller: fail (ENOMEM) at the cgroup's limit, no OOM. */
	evd->events = kvcalloc(evd->qlen + 1, sizeof(*evd->events),
			       GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL |
			       __GFP_NOWARN);
	if (!evd->events) {
		ret = -ENOMEM;
		goto err_free;
	}

	INIT_LIST_HEAD(&evd->res.node);

	/*
	 * The CQ's size is the device's to say; its charge is taken with no
	 * device lock held (reclaim would delay the device's removal).
	 */
	if (evd->flags & KDAT_EVD_DTO) {
		down_read(&ia->kdev->rwsem);
		if (ia->kdev->ibdev)
			evd->cq_size = kdat_dev_cq_size(ia->kdev->ibdev,
							evd->qlen);
		up_read(&ia->kdev->rwsem);
		ret = kdat_evd_charge_cq(evd);
		if (ret)
			goto err_free;
	}
	down_read(&ia->kdev->rwsem);
	if (!ia->kdev->ibdev) {
		up_read(&ia->kdev->rwsem);
		ret = -ENODEV;
		goto err_free;
	}
	if (evd->flags & KDAT_EVD_DTO) {
		ret = kdat_cq_create(&evd->kcq, ia->kdev, evd->cq_size);
		if (ret) {
			up_read(&ia->kdev->rwsem);
			goto err_free;
		}
	}
	/* Every EVD: async EVDs hear of the device's removal. */
	ret = kdat_dev_res_add(ia->kdev, &evd->res, 1,
			       kdat_evd_disassociate);
	up_read(&ia->kdev->rwsem);
	if (ret)
		goto err_release;

	ret = kdat_obj_reserve(kfile, &evd->obj, ia);
	if (ret)
		goto err_release;

	kdat_obj_use(&ia->obj, ia);
	if (cno) {
		kdat_obj_use(&cno->obj, ia);
		evd->cno = cno;
	}
	if (evd->flags & KDAT_EVD_ASYNC) {
		unsigned long flags;

		spin_lock_irqsave(&ia->async_lock, flags);
		if (!ia->async_evd)
			ia->async_evd = evd;
		spin_unlock_irqrestore(&ia->async_lock, flags);
	}
	*evdp = evd;
	return 0;

err_release:
	kdat_evd_release(evd);
err_free:
	kvfree(evd->events);
	kvfree(evd->cq_charge);
	kdat_obj_abort(&evd->obj);
	return ret;
}

int kdat_cmd_evd_create(struct kdat_ucmd *ucmd)
{
	struct kdat_evd_create *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	struct kdat_cno *cno = NULL;
	struct kdat_evd *evd;
	struct kdat_ia *ia;
	int ret;

	if (cmd->evd_flags & ~KDAT_EVD_ALL_FLAGS)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;

	mutex_lock(&kfile->lock);
	ia = kdat_ia_get(kfile, cmd->ia_handle);
	if (!ia) {
		ret = -EBADF;
		goto out_unlock;
	}
	if (cmd->cno_handle) {
		cno = kdat_get(kfile, cmd->cno_handle, struct kdat_cno,
			       KDAT_OBJ_CNO);
		if (!cno) {
			ret = -EBADF;
			goto out_put;
		}
		/* As for dat_evd_modify_cno: a CNO of the EVD's own IA. */
		if (cno->ia != ia) {
			ret = -EINVAL;
			goto out_put;
		}
	}
	ret = kdat_evd_new(kfile, ia, cmd->evd_flags, cmd->qlen, cno, NULL,
			   &evd);
	if (!ret) {
		cmd->out_evd_handle = evd->obj.handle;
		cmd->out_qlen = evd->qlen;
		ret = kdat_ucmd_finish(ucmd, sizeof(*cmd), &evd->obj);
	}
out_put:
	if (cno)
		kdat_obj_put(&cno->obj);
	kdat_obj_put(&ia->obj);
out_unlock:
	mutex_unlock(&kfile->lock);
	return ret;
}

/*
 * Move up to @max events out of the ring into @out; returns how many and
 * sets *@nmore to what is left. Called with evd->lock held.
 */
static u32 kdat_evd_take(struct kdat_evd *evd, struct kdat_event *out,
			 u32 max, u32 *nmore)
{
	u32 n = min(max, evd->count);
	u32 i;

	for (i = 0; i < n; i++) {
		out[i] = *kdat_evd_slot(evd, 0);
		if (out[i].event_number == KDAT_EVENT_ASYNC_EVD_OVERFLOW)
			evd->overflowed = false;
		evd->head = (evd->head + 1) % (evd->qlen + 1);
		evd->count--;
	}
	*nmore = evd->count;
	return n;
}

/* Events copied out per round, so the kernel buffer stays small. */
#define KDAT_EVD_BATCH	16

static unsigned int wait_poll_us = 50;
module_param(wait_poll_us, uint, 0644);
MODULE_PARM_DESC(wait_poll_us,
		 "how long a wait on a DTO EVD polls its CQ before it sleeps, when its CPU has nothing else to run (us; 0: never)");

/*
 * Nanoseconds since @start, a local_clock() reading: the poll may have
 * yielded and moved to a CPU whose clock is a little behind.
 */
static u64 kdat_evd_poll_ns(u64 start)
{
	s64 ns = local_clock() - start;

	return ns > 0 ? ns : 0;
}

/*
 * Poll @evd's CQ until @threshold events are there, for up to
 * wait_poll_us and at most @max_us. A device signals a kernel CQ after
 * the completion is written, sometimes much later: rxe calls the handler
 * from a tasklet that runs only once the work that wrote the completion
 * has unwound, the ack of the message it completes included. A waiter
 * that reaps takes the completion as it is written. Only while nothing
 * else wants this CPU (with more tasks than CPUs, a poll takes the time
 * of the one that would post what we wait for): a poll does not start
 * on a CPU with other tasks to run. A task that wants the CPU during the
 * poll gets it (cond_resched(), as the socket busy poll yields): the
 * poll goes on after it if the CPU is then free and the time is not up
 * (what wanted it may be the device's own work, 6.12's rxe runs it from
 * a workqueue), and ends if the task still waits to run. Polling stops
 * at a signal or when the EVD or its CQ goes. Returns the microseconds
 * it polled, the time it gave away included.
 */
static u64 kdat_evd_poll(struct kdat_evd *evd, u32 threshold, u64 max_us)
{
	u64 us = min_t(u64, min(READ_ONCE(wait_poll_us), 10000U), max_us);
	u32 tgid = evd->obj.file->tgid;
	int how = KDAT_WAIT_POLL_MISS;
	u64 start, now;

	if (!us || READ_ONCE(evd->kcq.dead))
		return 0;
	if (!single_task_running()) {
		trace_kdat_wait_poll(tgid, evd->obj.handle, 0,
				     KDAT_WAIT_POLL_SHARED);
		return 0;
	}
	start = local_clock();
	for (;;) {
		kdat_cq_reap(&evd->kcq);
		if (kdat_evd_ring_count(evd) >= threshold) {
			how = KDAT_WAIT_POLL_HIT;
			break;
		}
		if (READ_ONCE(evd->unwaitable) || READ_ONCE(evd->obj.dead) ||
		    READ_ONCE(evd->kcq.dead) || signal_pending(current))
			break;
		if (kdat_evd_poll_ns(start) >= us * NSEC_PER_USEC)
			break;
		if (need_resched())
			cond_resched();
		if (!single_task_running()) {
			how = KDAT_WAIT_POLL_WANTED;
			break;
		}
		cpu_relax();
	}
	now = kdat_evd_poll_ns(start);
	trace_kdat_wait_poll(tgid, evd->obj.handle, now, how);
	return div_u64(now, NSEC_PER_USEC);
}

/*
 * Reap @evd's CQ, then wait until @threshold events are queued on @evd
 * (threshold > 0), for at most @timeout_us (KDAT_WAIT_FOREVER: no limit);
 * or, for a threshold of 0, bring in the receive completions
 * solicited-wait EPs hold back. A wait that would sleep polls the CQ first
 * (kdat_evd_poll()). EBUSY: another thread waits, or the EVD is
 * unwaitable; ETIMEDOUT; EINTR.
 */
int kdat_evd_wait_for(struct kdat_evd *evd, u32 threshold, u64 timeout_us)
{
	unsigned long flags;
	u64 polled;
	long timeout;
	int ret = 0;

	if (threshold > evd->qlen)
		return -EINVAL;
	/* Completions already in the CQ need no notification: take them. */
	kdat_cq_reap(&evd->kcq);
	if (threshold) {
		spin_lock_irqsave(&evd->lock, flags);
		if (evd->waiting || evd->unwaitable)
			ret = -EBUSY;
		evd->waiting = !ret;
		spin_unlock_irqrestore(&evd->lock, flags);
		if (ret)
			return ret;

		if (timeout_us && kdat_evd_ring_count(evd) < threshold) {
			polled = kdat_evd_poll(evd, threshold, timeout_us);
			if (timeout_us != KDAT_WAIT_FOREVER)
				timeout_us -= min(polled, timeout_us);
		}
		if (timeout_us == KDAT_WAIT_FOREVER)
			timeout = MAX_SCHEDULE_TIMEOUT;
		else
			timeout = usecs_to_jiffies(min_t(u64, timeout_us,
							 U32_MAX));
		timeout = wait_event_interruptible_timeout(evd->wq,
				kdat_evd_ring_count(evd) >= threshold ||
				READ_ONCE(evd->unwaitable) ||
				READ_ONCE(evd->obj.dead),
				timeout);
		spin_lock_irqsave(&evd->lock, flags);
		evd->waiting = false;
		/* Destroyed under the waiter (kdat_evd_kill()). */
		if (READ_ONCE(evd->obj.dead))
			ret = -EBADF;
		/* Made unwaitable under the waiter: it returns at once. */
		if (!ret && evd->unwaitable && timeout >= 0)
			ret = -EBUSY;
		spin_unlock_irqrestore(&evd->lock, flags);
		if (ret)
			return ret;
		if (timeout < 0)
			return -EINTR;
		if (!timeout && kdat_evd_ring_count(evd) < threshold)
			return -ETIMEDOUT;
	} else {
		struct kdat_ep *ep;

		/* Dequeue: the unnotified receives count too. */
		spin_lock_irqsave(&evd->sw_lock, flags);
		list_for_each_entry(ep, &evd->sw_eps, sw_node)
			kdat_ep_sw_poll(ep);
		spin_unlock_irqrestore(&evd->sw_lock, flags);
	}
	return 0;
}

/* Take up to @max queued events into @out; how many, *@nmore what is left. */
u32 kdat_evd_dequeue_n(struct kdat_evd *evd, struct kdat_event *out, u32 max,
		       u32 *nmore)
{
	unsigned long flags;
	u32 n;

	spin_lock_irqsave(&evd->lock, flags);
	n = kdat_evd_take(evd, out, max, nmore);
	spin_unlock_irqrestore(&evd->lock, flags);
	return n;
}

int kdat_cmd_evd_wait(struct kdat_ucmd *ucmd)
{
	struct kdat_evd_wait *cmd = ucmd->cmd;
	struct kdat_event batch[KDAT_EVD_BATCH];
	struct kdat_event __user *uev;
	struct kdat_evd *evd;
	u32 done = 0, n, nmore = 0;
	int ret = 0;

	evd = kdat_get(ucmd->kfile, cmd->evd_handle, struct kdat_evd,
		       KDAT_OBJ_EVD);
	if (!evd)
		return -EBADF;
	/* With a ring the events are read there: wait or bring in only. */
	if (!cmd->max_events != !!READ_ONCE(evd->ring)) {
		ret = -EINVAL;
		goto out_put;
	}
	uev = u64_to_user_ptr(cmd->events);
	ret = kdat_evd_wait_for(evd, cmd->threshold, cmd->timeout_us);
	if (ret)
		goto out_put;

	if (!cmd->max_events) {
		cmd->out_count = 0;
		cmd->out_nmore = kdat_evd_ring_count(evd);
		ret = kdat_ucmd_respond(ucmd, sizeof(*cmd));
		goto out_put;
	}

	while (done < cmd->max_events) {
		n = kdat_evd_dequeue_n(evd, batch,
				       min_t(u32, KDAT_EVD_BATCH,
					     cmd->max_events - done), &nmore);
		if (!n)
			break;
		/*
		 * A fault here loses the events taken: the caller handed us a
		 * bad buffer, as with read(2).
		 */
		if (kdat_copy_to_user(uev + done, batch, n * sizeof(batch[0]))) {
			ret = -EFAULT;
			goto out_put;
		}
		done += n;
	}
	if (!done) {
		ret = -EAGAIN;
		goto out_put;
	}
	cmd->out_count = done;
	cmd->out_nmore = nmore;
	ret = kdat_ucmd_respond(ucmd, sizeof(*cmd));
out_put:
	kdat_obj_put(&evd->obj);
	return ret;
}

/* A kernel consumer changes its EVD's upcall (NULL: queue the events). */
void kdat_evd_set_upcall(struct kdat_evd *evd,
			 const struct kdat_upcall *upcall)
{
	unsigned long flags;

	spin_lock_irqsave(&evd->lock, flags);
	if (upcall)
		evd->upcall = *upcall;
	else
		memset(&evd->upcall, 0, sizeof(evd->upcall));
	spin_unlock_irqrestore(&evd->lock, flags);
}

/*
 * Give @evd room for @qlen events, keeping those queued in order. EBUSY
 * when more are queued than @qlen.
 */
static int kdat_evd_resize(struct kdat_evd *evd, u32 qlen)
{
	struct kdat_event *events, *old;
	struct kdat_ring *ring;
	unsigned long flags;
	u32 i;

	if (!qlen || qlen > KDAT_EVD_MAX_QLEN)
		return -EINVAL;
	if (READ_ONCE(evd->ring))
		return kdat_evd_ring_create(evd, qlen, &ring);
	/* One spare slot for the overflow event, as at create. */
	events = kvcalloc(qlen + 1, sizeof(*events),
			  GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN);
	if (!events)
		return -ENOMEM;
	spin_lock_irqsave(&evd->lock, flags);
	if (evd->count > qlen) {
		spin_unlock_irqrestore(&evd->lock, flags);
		kvfree(events);
		return -EBUSY;
	}
	for (i = 0; i < evd->count; i++)
		events[i] = *kdat_evd_slot(evd, i);
	old = evd->events;
	evd->events = events;
	evd->head = 0;
	evd->qlen = qlen;
	spin_unlock_irqrestore(&evd->lock, flags);
	kvfree(old);
	/* A waiter's threshold may have become unreachable: it re-checks. */
	wake_up(&evd->wq);
	return 0;
}

int kdat_cmd_evd_modify(struct kdat_ucmd *ucmd)
{
	struct kdat_evd_modify *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	struct kdat_evd *evd;
	unsigned long flags;
	int ret = 0;

	if (cmd->op != KDAT_EVD_OP_RESIZE && cmd->qlen)
		return -EINVAL;
	evd = kdat_get(kfile, cmd->evd_handle, struct kdat_evd, KDAT_OBJ_EVD);
	if (!evd)
		return -EBADF;
	spin_lock_irqsave(&evd->lock, flags);
	switch (cmd->op) {
	case KDAT_EVD_OP_SET_UNWAITABLE:
		evd->unwaitable = true;
		break;
	case KDAT_EVD_OP_CLEAR_UNWAITABLE:
		evd->unwaitable = false;
		break;
	case KDAT_EVD_OP_ENABLE:
		evd->disabled = false;
		break;
	case KDAT_EVD_OP_DISABLE:
		evd->disabled = true;
		break;
	case KDAT_EVD_OP_RESIZE:
		break;
	default:
		ret = -EINVAL;
	}
	spin_unlock_irqrestore(&evd->lock, flags);
	if (!ret && cmd->op == KDAT_EVD_OP_SET_UNWAITABLE)
		wake_up(&evd->wq);
	if (!ret && cmd->op == KDAT_EVD_OP_RESIZE) {
		/* One resize at a time: the file lock. */
		mutex_lock(&kfile->lock);
		ret = kdat_evd_resize(evd, cmd->qlen);
		mutex_unlock(&kfile->lock);
	}
	kdat_obj_put(&evd->obj);
	return ret;
}

int kdat_cmd_evd_post_se(struct kdat_ucmd *ucmd)
{
	struct kdat_evd_post_se *cmd = ucmd->cmd;
	struct kdat_event ev = {
		.event_number = KDAT_EVENT_SOFTWARE,
		.cookie = cmd->pointer,
	};
	struct kdat_evd *evd;
	bool queued;

	evd = kdat_get(ucmd->kfile, cmd->evd_handle, struct kdat_evd,
		       KDAT_OBJ_EVD);
	if (!evd)
		return -EBADF;
	if (!(evd->flags & KDAT_EVD_SOFTWARE)) {
		kdat_obj_put(&evd->obj);
		return -EINVAL;
	}
	/* The consumer asked: refuse rather than overflow (DAT_QUEUE_FULL). */
	queued = kdat_evd_queue(evd, &ev, true);
	kdat_obj_put(&evd->obj);
	return queued ? 0 : -ENOMEM;
}
