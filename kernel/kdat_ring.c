// SPDX-License-Identifier: GPL-2.0
/*
 * kdat rings: submission rings drained by a kernel poller, completion rings
 * filled by the CQ handlers; the protocol is in include/uapi/linux/kdat.h.
 *
 * Lifetime. A ring is a kref'd block of memory (kdat_ring_mem_alloc()).
 * Its queue (EP, SRQ or EVD) holds one reference from the ring's creation until the
 * queue is destroyed (kdat_ring_detach), each mapping holds one; the
 * memory goes with the last. The poller only reaches rings on the file's
 * sq_rings list, under the file's ring_lock, and a queue takes its ring
 * off that list (under the same lock) before it goes: the poller never
 * sees a queue that is gone.
 *
 * Everything the process may write (tails of submission rings, heads of
 * completion rings, entries) is read once, with READ_ONCE or one memcpy
 * into kernel memory, and checked there.
 */
#include <linux/cgroup.h>
#include <linux/cred.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "kdat.h"

static unsigned int poll_idle_us = 2000;
module_param(poll_idle_us, uint, 0644);
MODULE_PARM_DESC(poll_idle_us,
		 "how long the ring poller spins with nothing to do before it sleeps (us)");

static unsigned int max_pollers;
module_param(max_pollers, uint, 0644);
MODULE_PARM_DESC(max_pollers,
		 "poller threads at most, all files together (0: twice the online CPUs); past it submission rings are refused with EAGAIN and libdat posts by ioctl");

/* Poller threads alive, against max_pollers. */
static atomic_t kdat_pollers = ATOMIC_INIT(0);

/* Where the parts are: each index on its own cache line. */
#define KDAT_RING_OFF_HEAD	0
#define KDAT_RING_OFF_TAIL	64
#define KDAT_RING_OFF_FLAGS	128
#define KDAT_RING_OFF_MASK	192
#define KDAT_RING_OFF_ENTRIES	196
#define KDAT_RING_OFF_COMPLETED	256
#define KDAT_RING_OFF_EP_STATE	320
#define KDAT_RING_OFF_ARRAY	384

/* Entries taken from a submission ring per ib_post_* call. */
#define KDAT_RING_BATCH		16

struct kdat_ring {
	struct kref ref;
	struct kdat_file *kfile;
	enum kdat_ring_kind kind;
	u32 id;				/* mmap cookie >> PAGE_SHIFT */
	void *mem;
	struct page **pages;		/* of @mem, vmap()ed */
	size_t map_size;
	/*
	 * The pages of @mem stay in memory like pinned pages and are charged
	 * like them: @acct_pages to @user's locked_vm, within its
	 * RLIMIT_MEMLOCK unless it has CAP_IPC_LOCK (as io_uring's rings).
	 */
	struct user_struct *user;
	unsigned long acct_pages;
	u32 entries;			/* a power of two */
	u32 entry_size;

	/* Kernel-private copies of the indices it owns. */
	u32 khead;			/* submission: next entry to take */
	u32 ktail;			/* completion: next slot to fill */
	u32 snap;			/* submission: the tail this pass takes */
	u32 kcompleted;			/* submission: under the queue lock */

	/* Submission rings: on kfile->sq_rings; the queue. */
	struct list_head node;
	struct kdat_ep *ep;
	struct kdat_srq *srq;
	/* Scratch for one batch (the poller only). */
	void *sqe;			/* one entry's copy */
	struct kdat_dto *dto;		/* KDAT_RING_BATCH */
	struct kdat_dto_ctx **ctx;
	union {
		struct ib_rdma_wr *swr;
		struct ib_recv_wr *rwr;
	};
};

struct kdat_poller {
	struct task_struct *task;
	bool wake;			/* a doorbell since it last looked */
};

static u32 *kdat_ring_u32(struct kdat_ring *r, unsigned int off)
{
	return r->mem + off;
}

static void *kdat_ring_entry(struct kdat_ring *r, u32 index)
{
	return r->mem + KDAT_RING_OFF_ARRAY +
	       (size_t)(index & (r->entries - 1)) * r->entry_size;
}

/*
 * Ring memory: zeroed pages charged to the caller's memory cgroup
 * (vmalloc_user() would charge nothing), mapped in the kernel with
 * VM_USERMAP so that remap_vmalloc_range() may give them to the process.
 */
static int kdat_ring_mem_alloc(struct kdat_ring *r)
{
	unsigned int i, n = r->map_size >> PAGE_SHIFT;

	r->pages = kvcalloc(n, sizeof(*r->pages), GFP_KERNEL_ACCOUNT);
	if (!r->pages)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		r->pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO |
					 __GFP_RETRY_MAYFAIL);
		if (!r->pages[i])
			return -ENOMEM;
	}
	r->mem = vmap(r->pages, n, VM_MAP | VM_USERMAP, PAGE_KERNEL);
	return r->mem ? 0 : -ENOMEM;
}

/* Process context (vunmap() may sleep); after a failed alloc too. */
static void kdat_ring_mem_free(struct kdat_ring *r)
{
	unsigned int i, n = r->map_size >> PAGE_SHIFT;

	if (r->mem)
		vunmap(r->mem);
	for (i = 0; r->pages && i < n && r->pages[i]; i++)
		__free_page(r->pages[i]);
	kvfree(r->pages);
}

static void kdat_ring_free(struct kref *ref)
{
	struct kdat_ring *r = container_of(ref, struct kdat_ring, ref);

	if (r->user) {
		atomic_long_sub(r->acct_pages, &r->user->locked_vm);
		free_uid(r->user);
	}
	kdat_ring_mem_free(r);
	kfree(r->sqe);
	kfree(r->dto);
	kfree(r->ctx);
	kfree(r->swr);
	kfree(r);
}

static void kdat_ring_put(struct kdat_ring *r)
{
	kref_put(&r->ref, kdat_ring_free);
}

/* Charge @r's memory to the calling user; ENOMEM over RLIMIT_MEMLOCK. */
static int kdat_ring_account(struct kdat_ring *r)
{
	unsigned long pages = r->map_size >> PAGE_SHIFT, limit, cur;
	struct user_struct *user;

	if (r->kfile->kernel || capable(CAP_IPC_LOCK))
		return 0;
	limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	user = get_current_user();
	cur = atomic_long_read(&user->locked_vm);
	do {
		if (cur + pages > limit || cur + pages < cur) {
			free_uid(user);
			return -ENOMEM;
		}
	} while (!atomic_long_try_cmpxchg(&user->locked_vm, &cur,
					  cur + pages));
	r->user = user;
	r->acct_pages = pages;
	return 0;
}

static struct kdat_ring *kdat_ring_alloc(struct kdat_file *kfile,
					 enum kdat_ring_kind kind,
					 u32 want, u32 entry_size)
{
	bool sq = kind != KDAT_RING_EVD;
	struct kdat_ring *r;
	size_t array;
	int ret;

	if (!want || want > 65536)
		return ERR_PTR(-EINVAL);
	r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	if (!r)
		return ERR_PTR(-ENOMEM);
	kref_init(&r->ref);
	INIT_LIST_HEAD(&r->node);
	r->kfile = kfile;
	r->kind = kind;
	r->entries = roundup_pow_of_two(want);
	r->entry_size = entry_size;
	array = (size_t)r->entries * entry_size;
	r->map_size = PAGE_ALIGN(KDAT_RING_OFF_ARRAY + array);
	if (kdat_ring_account(r))
		goto err;
	if (kdat_ring_mem_alloc(r))
		goto err;
	*kdat_ring_u32(r, KDAT_RING_OFF_MASK) = r->entries - 1;
	*kdat_ring_u32(r, KDAT_RING_OFF_ENTRIES) = r->entries;
	if (sq) {
		r->sqe = kmalloc(entry_size, GFP_KERNEL_ACCOUNT);
		r->dto = kcalloc(KDAT_RING_BATCH, sizeof(*r->dto), GFP_KERNEL_ACCOUNT);
		r->ctx = kcalloc(KDAT_RING_BATCH, sizeof(*r->ctx), GFP_KERNEL_ACCOUNT);
		r->swr = kcalloc(KDAT_RING_BATCH,
				 max(sizeof(*r->swr), sizeof(*r->rwr)),
				 GFP_KERNEL_ACCOUNT);
		if (!r->sqe || !r->dto || !r->ctx || !r->swr)
			goto err;
	}
	/* The cookie: an id in the file's table, never 0. */
	ret = xa_alloc_cyclic(&kfile->rings, &r->id, r,
			      XA_LIMIT(1, (1U << (31 - PAGE_SHIFT)) - 1),
			      &kfile->next_ring, GFP_KERNEL_ACCOUNT);
	if (ret < 0)
		goto err;
	return r;
err:
	kdat_ring_put(r);
	return ERR_PTR(-ENOMEM);
}

/* ---- mapping --------------------------------------------------------- */

static void kdat_ring_vm_open(struct vm_area_struct *vma)
{
	struct kdat_ring *r = vma->vm_private_data;

	kref_get(&r->ref);
}

static void kdat_ring_vm_close(struct vm_area_struct *vma)
{
	kdat_ring_put(vma->vm_private_data);
}

static const struct vm_operations_struct kdat_ring_vm_ops = {
	.open = kdat_ring_vm_open,
	.close = kdat_ring_vm_close,
};

int kdat_fops_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct kdat_file *kfile = filp->private_data;
	unsigned long size = vma->vm_end - vma->vm_start;
	struct kdat_ring *r;
	int ret;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	xa_lock(&kfile->rings);
	r = xa_load(&kfile->rings, vma->vm_pgoff);
	if (r)
		kref_get(&r->ref);
	xa_unlock(&kfile->rings);
	if (!r)
		return -EINVAL;
	ret = -EINVAL;
	if (size > r->map_size)
		goto out_put;
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
	vma->vm_flags &= ~VM_MAYEXEC;
	ret = remap_vmalloc_range(vma, r->mem, 0);
	if (ret)
		goto out_put;
	vma->vm_private_data = r;
	vma->vm_ops = &kdat_ring_vm_ops;
	return 0;	/* the mapping keeps the reference */
out_put:
	kdat_ring_put(r);
	return ret;
}

/* ---- the poller ------------------------------------------------------ */

/* Done with @n entries of submission ring @r; the queue's lock held. */
void kdat_ring_completed(struct kdat_ring *r, u32 n)
{
	r->kcompleted += n;
	/* Pairs with libdat's acquire load: the slot is free before. */
	smp_store_release(kdat_ring_u32(r, KDAT_RING_OFF_COMPLETED),
			  r->kcompleted);
}

void kdat_ring_set_ep_state(struct kdat_ring *r, u32 state)
{
	WRITE_ONCE(*kdat_ring_u32(r, KDAT_RING_OFF_EP_STATE), state);
}

static void kdat_ring_set_flag(struct kdat_ring *r, u32 flag, bool on)
{
	u32 *f = kdat_ring_u32(r, KDAT_RING_OFF_FLAGS);

	/* The kernel is the only writer of flags. */
	WRITE_ONCE(*f, on ? (READ_ONCE(*f) | flag) : (READ_ONCE(*f) & ~flag));
}

/* The queue's device is gone (NULL: no ring). */
void kdat_ring_set_dead(struct kdat_ring *r)
{
	if (r)
		kdat_ring_set_flag(r, KDAT_RING_F_DEAD, true);
}

/*
 * Entries from @head to @tail of a ring of @entries, the indices being
 * free-running u32 counters (they wrap): KDAT_RING_INSANE when @tail is
 * behind @head or more than @entries ahead.
 */
u32 kdat_ring_span(u32 head, u32 tail, u32 entries)
{
	u32 n = tail - head;

	return n > entries ? KDAT_RING_INSANE : n;
}

/* The published tail, read once. */
static u32 kdat_ring_tail(struct kdat_ring *r)
{
	/* Pairs with libdat's release of tail: entries before it are there. */
	return smp_load_acquire(kdat_ring_u32(r, KDAT_RING_OFF_TAIL));
}

/*
 * Entries published up to @tail and not taken; 0 when the tail is not
 * sane.
 */
static u32 kdat_ring_pending_to(struct kdat_ring *r, u32 tail)
{
	u32 n = kdat_ring_span(r->khead, tail, r->entries);

	if (n == KDAT_RING_INSANE) {
		kdat_ring_set_flag(r, KDAT_RING_F_BAD_TAIL, true);
		return 0;
	}
	if (READ_ONCE(*kdat_ring_u32(r, KDAT_RING_OFF_FLAGS)) &
	    KDAT_RING_F_BAD_TAIL)
		kdat_ring_set_flag(r, KDAT_RING_F_BAD_TAIL, false);
	return n;
}

/*
 * Copy entry @index once into r->sqe and take what the check needs out of
 * the copy. The segments are checked by the one DTO check.
 */
static struct kdat_sqe *kdat_ring_take(struct kdat_ring *r, u32 index,
				       u32 max_iov, u32 *num, int *err)
{
	struct kdat_sqe *sqe = r->sqe;

	memcpy(sqe, kdat_ring_entry(r, index), r->entry_size);
	*num = sqe->num_segments;
	*err = 0;
	if (sqe->__pad || *num > max_iov)
		*err = -EINVAL;
	return sqe;
}

/* The EVD a refused entry of @r completes on, and its handle. */
static void kdat_ring_refuse(struct kdat_ring *r, const struct kdat_sqe *sqe,
			     int err)
{
	unsigned long flags;
	u32 op = r->kind == KDAT_RING_SEND ? sqe->op : KDAT_DTO_RECEIVE;

	if (r->ep) {
		kdat_dto_refused(op == KDAT_DTO_RECEIVE ? r->ep->recv_evd :
				 r->ep->req_evd, r->ep->obj.handle, op,
				 sqe->cookie, err);
		spin_lock_irqsave(&r->ep->lock, flags);
		kdat_ring_completed(r, 1);
		spin_unlock_irqrestore(&r->ep->lock, flags);
	} else {
		/*
		 * An SRQ's buffer belongs to no EP yet: its refusal goes to
		 * the IA's async EVD, as the SRQ's other events.
		 */
		struct kdat_event ev = {
			.event_number = KDAT_EVENT_DTO_COMPLETION,
			.status = KDAT_DTO_ERR_LOCAL_EP,
			.cookie = sqe->cookie,
			.handle = r->srq->obj.handle,
			.operation = KDAT_DTO_RECEIVE,
			.post_error = -err,
		};

		kdat_ia_async_event(r->srq->pz->ia, &ev);
		spin_lock_irqsave(&r->srq->lock, flags);
		kdat_ring_completed(r, 1);
		spin_unlock_irqrestore(&r->srq->lock, flags);
	}
}

/* Post the n prepared work requests of @r as one chain. */
static void kdat_ring_post_chain(struct kdat_ring *r, u32 n)
{
	const struct ib_send_wr *bad_swr = NULL;
	const struct ib_recv_wr *bad_rwr = NULL;
	u32 i, first_bad = n;
	int ret;

	if (!n)
		return;
	for (i = 0; i + 1 < n; i++) {
		if (r->kind == KDAT_RING_SEND)
			r->swr[i].wr.next = &r->swr[i + 1].wr;
		else
			r->rwr[i].next = &r->rwr[i + 1];
	}
	if (r->kind == KDAT_RING_SEND) {
		ret = ib_post_send(r->ep->qp, &r->swr[0].wr, &bad_swr);
		for (i = 0; ret && i < n; i++)
			if (&r->swr[i].wr == bad_swr)
				first_bad = i;
	} else if (r->kind == KDAT_RING_RECV) {
		ret = ib_post_recv(r->ep->qp, &r->rwr[0], &bad_rwr);
		for (i = 0; ret && i < n; i++)
			if (&r->rwr[i] == bad_rwr)
				first_bad = i;
	} else {
		ret = ib_post_srq_recv(r->srq->srq, &r->rwr[0], &bad_rwr);
		for (i = 0; ret && i < n; i++)
			if (&r->rwr[i] == bad_rwr)
				first_bad = i;
	}
	if (!ret)
		return;
	if (first_bad == n)
		first_bad = 0;
	/* The device took none from @first_bad on: they complete refused. */
	for (i = first_bad; i < n; i++) {
		struct kdat_sqe fake = {
			.op = r->dto[i].op,
			.cookie = r->dto[i].cookie,
		};

		if (r->ep)
			kdat_dto_abort(r->ep, r->ctx[i]);
		else
			kdat_srq_abort(r->srq, r->ctx[i]);
		kdat_ring_refuse(r, &fake, -ENOMEM);
	}
}

/*
 * Take up to a batch from submission ring @r, check each entry with the
 * ioctl's check, post the good ones in one chain. The file's ring_lock
 * held (so @r's queue is alive). Returns the entries taken.
 */
static u32 kdat_ring_drain(struct kdat_ring *r, u32 tail)
{
	struct kdat_device *kdev;
	u32 pending, n = 0, taken, max_iov;

	pending = kdat_ring_pending_to(r, tail);
	if (!pending)
		return 0;
	pending = min_t(u32, pending, KDAT_RING_BATCH);
	kdev = r->ep ? r->ep->pz->ia->kdev : r->srq->pz->ia->kdev;
	max_iov = (r->entry_size - sizeof(struct kdat_sqe)) /
		  sizeof(struct kdat_lmr_triplet);

	down_read(&kdev->rwsem);
	for (taken = 0; taken < pending; taken++) {
		struct kdat_dto *dto = &r->dto[n];
		struct kdat_sqe *sqe;
		u32 num;
		int err;

		sqe = kdat_ring_take(r, r->khead + taken, max_iov, &num, &err);
		memset(dto, 0, offsetof(struct kdat_dto, sge));
		dto->op = r->kind == KDAT_RING_SEND ? sqe->op :
						      KDAT_DTO_RECEIVE;
		dto->flags = sqe->completion_flags;
		dto->cookie = sqe->cookie;
		if (!err && r->kind == KDAT_RING_SEND &&
		    sqe->op == KDAT_DTO_RECEIVE)
			err = -EINVAL;
		if (!err && r->kind != KDAT_RING_SEND &&
		    sqe->op != KDAT_DTO_RECEIVE)
			err = -EINVAL;
		if (!err && r->ep)
			err = kdat_dto_validate(r->kfile, r->ep, sqe->iov, num,
						&sqe->remote, dto);
		else if (!err)
			err = kdat_srq_validate(r->kfile, r->srq, sqe->iov,
						num, dto);
		if (!err && r->ep) {
			err = kdat_dto_begin(r->ep, dto, &r->ctx[n]);
			if (err > 0) {
				/* Flushed at once; its event is queued. */
				unsigned long flags;

				spin_lock_irqsave(&r->ep->lock, flags);
				kdat_ring_completed(r, 1);
				spin_unlock_irqrestore(&r->ep->lock, flags);
				continue;
			}
		} else if (!err) {
			err = r->srq->srq ? 0 : -ENODEV;
			if (!err) {
				r->ctx[n] = kdat_srq_begin(r->srq, dto);
				if (!r->ctx[n])
					err = -ENOMEM;
			}
		}
		if (err) {
			kdat_ring_refuse(r, sqe, err);
			continue;
		}
		if (r->kind == KDAT_RING_SEND)
			kdat_dto_send_wr(&r->swr[n], dto, r->ctx[n]);
		else
			kdat_dto_recv_wr(&r->rwr[n], dto, r->ctx[n]);
		n++;
	}
	kdat_ring_post_chain(r, n);
	up_read(&kdev->rwsem);

	r->khead += taken;
	/* The entries are copied: the process may reuse their slots. */
	smp_store_release(kdat_ring_u32(r, KDAT_RING_OFF_HEAD), r->khead);
	return taken;
}

/*
 * Take everything published on @r now, in the caller's context: an EP
 * state change (disconnect, reset) comes after the DTOs posted before it.
 */
void kdat_ring_flush(struct kdat_ring *r)
{
	if (!r)
		return;
	mutex_lock(&r->kfile->ring_lock);
	if (!list_empty(&r->node))
		while (kdat_ring_drain(r, kdat_ring_tail(r)))
			;
	mutex_unlock(&r->kfile->ring_lock);
}

/*
 * One pass over the file's submission rings. A receive published before a
 * send (by the same thread) reaches the device before it, whatever their
 * rings: the send rings' tails are read first, then the receive rings'
 * (so a send seen implies the receives published before it are seen),
 * then the receives are posted, then the sends. Without that, a send
 * could find its peer's receive not yet posted and wait for the RNR
 * timer. ring_lock held; returns the entries taken.
 */
static u32 kdat_rings_pass(struct kdat_file *kfile)
{
	struct kdat_ring *r;
	u32 done = 0, n;

	list_for_each_entry(r, &kfile->sq_rings, node)
		if (r->kind == KDAT_RING_SEND)
			r->snap = kdat_ring_tail(r);
	list_for_each_entry(r, &kfile->sq_rings, node)
		if (r->kind != KDAT_RING_SEND)
			r->snap = kdat_ring_tail(r);
	list_for_each_entry(r, &kfile->sq_rings, node)
		if (r->kind != KDAT_RING_SEND)
			while ((n = kdat_ring_drain(r, r->snap)))
				done += n;
	list_for_each_entry(r, &kfile->sq_rings, node)
		if (r->kind == KDAT_RING_SEND)
			while ((n = kdat_ring_drain(r, r->snap)))
				done += n;
	return done;
}

/* Anything published on any submission ring? ring_lock held. */
static bool kdat_rings_busy(struct kdat_file *kfile)
{
	struct kdat_ring *r;

	list_for_each_entry(r, &kfile->sq_rings, node)
		if (kdat_ring_pending_to(r, kdat_ring_tail(r)))
			return true;
	return false;
}

static void kdat_rings_need_wakeup(struct kdat_file *kfile, bool on)
{
	struct kdat_ring *r;

	list_for_each_entry(r, &kfile->sq_rings, node)
		kdat_ring_set_flag(r, KDAT_RING_F_NEED_WAKEUP, on);
}

/*
 * The poller: drains every submission ring of its file; after poll_idle_us
 * with nothing to do it sets NEED_WAKEUP and sleeps until the doorbell.
 *
 * Sleep protocol (see the uapi header): set NEED_WAKEUP everywhere, full
 * barrier, look at every tail once more; sleep only if all are empty. A
 * process that published a tail before our barrier is seen by the look;
 * one that publishes after it sees NEED_WAKEUP and rings. The doorbell sets
 * @wake before waking us, and we test @wake after set_current_state(), so
 * a ring between our look and schedule() is not lost either.
 */
static int kdat_poller_fn(void *data)
{
	struct kdat_file *kfile = data;
	struct kdat_poller *p = kfile->poller;
	const struct cred *old = override_creds(kfile->cred);
	ktime_t idle_since = ktime_get();

	while (!kthread_should_stop()) {
		u32 done;
		bool busy;

		mutex_lock(&kfile->ring_lock);
		done = kdat_rings_pass(kfile);
		mutex_unlock(&kfile->ring_lock);
		if (done) {
			idle_since = ktime_get();
			cond_resched();
			continue;
		}
		if (ktime_us_delta(ktime_get(), idle_since) <
		    READ_ONCE(poll_idle_us)) {
			cond_resched();
			continue;
		}

		mutex_lock(&kfile->ring_lock);
		kdat_rings_need_wakeup(kfile, true);
		smp_mb();	/* flags before tails; pairs with libdat's */
		busy = kdat_rings_busy(kfile);
		mutex_unlock(&kfile->ring_lock);
		if (!busy) {
			set_current_state(TASK_INTERRUPTIBLE);
			if (!READ_ONCE(p->wake) && !kthread_should_stop())
				schedule();
			__set_current_state(TASK_RUNNING);
		}
		WRITE_ONCE(p->wake, false);
		mutex_lock(&kfile->ring_lock);
		kdat_rings_need_wakeup(kfile, false);
		mutex_unlock(&kfile->ring_lock);
		idle_since = ktime_get();
	}
	revert_creds(old);
	return 0;
}

/*
 * The doorbell; with KDAT_RING_WAKE_SUBMIT, one pass over the file's rings
 * in the caller's context instead (everything published before the call is
 * taken when it returns).
 */
int kdat_cmd_ring_wake(struct kdat_ucmd *ucmd)
{
	struct kdat_ring_wake *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;

	if (cmd->flags & ~KDAT_RING_WAKE_SUBMIT)
		return -EINVAL;
	if (cmd->flags & KDAT_RING_WAKE_SUBMIT) {
		mutex_lock(&kfile->ring_lock);
		kdat_rings_pass(kfile);
		mutex_unlock(&kfile->ring_lock);
		return 0;
	}
	mutex_lock(&kfile->poller_lock);
	if (kfile->poller) {
		WRITE_ONCE(kfile->poller->wake, true);
		wake_up_process(kfile->poller->task);
	}
	mutex_unlock(&kfile->poller_lock);
	return 0;
}

/* Start the file's poller if it has none; poller_lock held. */
static int kdat_poller_start(struct kdat_file *kfile)
{
	unsigned int limit = READ_ONCE(max_pollers);
	struct kdat_poller *p;
	struct task_struct *t;
	int ret;

	lockdep_assert_held(&kfile->poller_lock);
	if (kfile->poller)
		return 0;
	/*
	 * Kernel threads count against no RLIMIT_NPROC nor pids.max: kdat
	 * bounds them itself. Over the bound the caller posts by ioctl.
	 */
	if (!limit)
		limit = 2 * num_online_cpus();
	if (atomic_inc_return(&kdat_pollers) > limit) {
		ret = -EAGAIN;
		goto err_uncount;
	}
	p = kzalloc(sizeof(*p), GFP_KERNEL_ACCOUNT);
	if (!p) {
		ret = -ENOMEM;
		goto err_uncount;
	}
	kfile->poller = p;
	t = kthread_create(kdat_poller_fn, kfile, "kdat-poll/%d",
			   task_tgid_nr(current));
	if (IS_ERR(t)) {
		ret = PTR_ERR(t);
		goto err_free;
	}
	/* Its CPU time is the owner's: the owner's cgroups (as vhost). */
	if (cgroup_attach_task_all(current, t)) {
		kthread_stop(t);
		ret = -ENOMEM;
		goto err_free;
	}
	p->task = t;
	wake_up_process(t);
	return 0;

err_free:
	kfile->poller = NULL;
	kfree(p);
err_uncount:
	atomic_dec(&kdat_pollers);
	return ret;
}

/* Stop the poller if no submission ring is left. */
static void kdat_poller_stop_if_idle(struct kdat_file *kfile)
{
	struct kdat_poller *p = NULL;

	mutex_lock(&kfile->poller_lock);
	mutex_lock(&kfile->ring_lock);
	if (list_empty(&kfile->sq_rings)) {
		p = kfile->poller;
		kfile->poller = NULL;
	}
	mutex_unlock(&kfile->ring_lock);
	if (p) {
		/* Not under ring_lock: the poller takes it. */
		kthread_stop(p->task);
		kfree(p);
		atomic_dec(&kdat_pollers);
	}
	mutex_unlock(&kfile->poller_lock);
}

/*
 * A queue is going, step one: the poller leaves its ring alone from now
 * on (it waits for a drain in progress). Call before the queue's QP or
 * SRQ goes. Completions may still count in the ring until step two.
 */
void kdat_ring_stop(struct kdat_ring *r)
{
	if (!r)
		return;
	mutex_lock(&r->kfile->ring_lock);
	list_del_init(&r->node);
	mutex_unlock(&r->kfile->ring_lock);
}

/*
 * Step two, once no completion can come: the ring leaves the mmap table
 * and its queue; the memory stays for the mappings. The last submission
 * ring stops the poller.
 */
void kdat_ring_detach(struct kdat_ring *r)
{
	struct kdat_file *kfile;

	if (!r)
		return;
	kfile = r->kfile;
	kdat_ring_stop(r);
	xa_erase(&kfile->rings, r->id);
	if (r->kind != KDAT_RING_EVD)
		kdat_poller_stop_if_idle(kfile);
	kdat_ring_put(r);
}

/* ---- completion rings ------------------------------------------------ */

/* Events in @evd's ring, seen by the kernel; evd->lock held. */
u32 kdat_ring_evd_used(struct kdat_evd *evd)
{
	struct kdat_ring *r = evd->ring;
	u32 head = READ_ONCE(*kdat_ring_u32(r, KDAT_RING_OFF_HEAD));
	u32 used = r->ktail - head;

	/* A head moved backwards or past the tail: the ring is full. */
	return used > r->entries ? r->entries : used;
}

u32 kdat_ring_evd_count(struct kdat_evd *evd)
{
	unsigned long flags;
	u32 n;

	spin_lock_irqsave(&evd->lock, flags);
	n = evd->ring ? kdat_ring_evd_used(evd) : evd->count;
	spin_unlock_irqrestore(&evd->lock, flags);
	return n;
}

/*
 * Queue @ev in @evd's ring; evd->lock held. Returns false when it was
 * dropped (after the overflow event). The ring has qlen + 1 entries at
 * least: qlen events and the overflow event.
 */
bool kdat_ring_evd_push(struct kdat_evd *evd, const struct kdat_event *ev)
{
	struct kdat_ring *r = evd->ring;
	u32 head = READ_ONCE(*kdat_ring_u32(r, KDAT_RING_OFF_HEAD));
	u32 used = r->ktail - head;
	struct kdat_event *slot;

	if (used > r->entries)
		used = r->entries;
	/* The consumer read past the overflow event: events flow again. */
	if (evd->overflowed && (s32)(head - evd->of_pos) > 0 &&
	    used <= r->entries)
		evd->overflowed = false;
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

void kdat_ring_evd_set_poll(struct kdat_evd *evd)
{
	unsigned long flags;

	spin_lock_irqsave(&evd->lock, flags);
	if (evd->ring)
		kdat_ring_set_flag(evd->ring, KDAT_RING_F_POLL, true);
	spin_unlock_irqrestore(&evd->lock, flags);
}

static int kdat_ring_evd_create(struct kdat_file *kfile, struct kdat_evd *evd,
				u32 qlen, struct kdat_ring **out)
{
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
		u32 head = READ_ONCE(*kdat_ring_u32(old, KDAT_RING_OFF_HEAD));

		used = kdat_ring_evd_used(evd);
		if (used > qlen) {
			spin_unlock_irqrestore(&evd->lock, flags);
			xa_erase(&kfile->rings, r->id);
			kdat_ring_put(r);
			return -EBUSY;
		}
		for (i = 0; i < used; i++)
			memcpy(kdat_ring_entry(r, i),
			       kdat_ring_entry(old, head + i),
			       sizeof(struct kdat_event));
		if (evd->overflowed)
			evd->of_pos = evd->of_pos - head;
		kdat_ring_set_flag(r, KDAT_RING_F_POLL,
				   READ_ONCE(*kdat_ring_u32(old,
						KDAT_RING_OFF_FLAGS)) &
				   KDAT_RING_F_POLL);
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
		kdat_ring_detach(old);
	*out = r;
	return 0;
}

int kdat_ring_evd_resize(struct kdat_evd *evd, u32 qlen)
{
	struct kdat_ring *r;

	return kdat_ring_evd_create(evd->obj.file, evd, qlen, &r);
}

/* ---- creation -------------------------------------------------------- */

static void kdat_ring_describe(struct kdat_ring *r, struct kdat_ring_create *c)
{
	c->out_entries = r->entries;
	c->out_entry_size = r->entry_size;
	c->out_map_size = r->map_size;
	c->out_mmap_offset = (u64)r->id << PAGE_SHIFT;
	c->out_off.head = KDAT_RING_OFF_HEAD;
	c->out_off.tail = KDAT_RING_OFF_TAIL;
	c->out_off.flags = KDAT_RING_OFF_FLAGS;
	c->out_off.ring_mask = KDAT_RING_OFF_MASK;
	c->out_off.ring_entries = KDAT_RING_OFF_ENTRIES;
	c->out_off.completed = KDAT_RING_OFF_COMPLETED;
	c->out_off.ep_state = KDAT_RING_OFF_EP_STATE;
	c->out_off.entries = KDAT_RING_OFF_ARRAY;
}

static u32 kdat_sqe_size(u32 max_iov)
{
	return ALIGN(sizeof(struct kdat_sqe) +
		     max_iov * sizeof(struct kdat_lmr_triplet), 64);
}

/* A submission ring for @ep or @srq; poller_lock and ring_lock held. */
static int kdat_ring_sq_create(struct kdat_file *kfile, u32 kind,
			       struct kdat_ep *ep, struct kdat_srq *srq,
			       struct kdat_ring **out)
{
	struct kdat_ring **slot;
	struct kdat_slots *slots;
	spinlock_t *lock;
	struct kdat_ring *r;
	unsigned long flags;
	u32 depth, iov;
	int ret;

	if (kind == KDAT_RING_SEND) {
		slot = &ep->sq_ring;
		slots = &ep->send;
		lock = &ep->lock;
		depth = ep->send.nr;
		iov = ep->send_sge;
	} else if (kind == KDAT_RING_RECV) {
		if (ep->srq)
			return -EINVAL;	/* its receives are the SRQ's */
		slot = &ep->rq_ring;
		slots = &ep->recv;
		lock = &ep->lock;
		depth = ep->recv.nr;
		iov = ep->recv_sge;
	} else {
		slot = &srq->ring;
		slots = &srq->slots;
		lock = &srq->lock;
		/* An SRQ may grow (dat_srq_resize): room for the largest. */
		depth = KDAT_SRQ_MAX_DTOS;
		iov = srq->max_recv_iov;
	}
	if (*slot) {
		*out = *slot;
		return 0;
	}
	r = kdat_ring_alloc(kfile, kind, depth, kdat_sqe_size(iov));
	if (IS_ERR(r))
		return PTR_ERR(r);
	r->ep = ep;
	r->srq = srq;
	/* DTOs posted by ioctl would count as the ring's: idle queues only. */
	spin_lock_irqsave(lock, flags);
	if (slots->posted) {
		spin_unlock_irqrestore(lock, flags);
		ret = -EBUSY;
		goto err;
	}
	*slot = r;
	if (ep)
		kdat_ring_set_ep_state(r, ep->state);
	spin_unlock_irqrestore(lock, flags);
	list_add_tail(&r->node, &kfile->sq_rings);
	/* A sleeping poller would not look at a ring it has not flagged. */
	WRITE_ONCE(kfile->poller->wake, true);
	wake_up_process(kfile->poller->task);
	*out = r;
	return 0;
err:
	xa_erase(&kfile->rings, r->id);
	kdat_ring_put(r);
	return ret;
}

int kdat_cmd_ring_create(struct kdat_ucmd *ucmd)
{
	struct kdat_ring_create *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	enum kdat_obj_type type;
	struct kdat_ring *r = NULL;
	struct kdat_obj *obj;
	int ret;

	if (cmd->flags || cmd->__reserved)
		return -EINVAL;
	switch (cmd->kind) {
	case KDAT_RING_SEND:
	case KDAT_RING_RECV:
		type = KDAT_OBJ_EP;
		break;
	case KDAT_RING_SRQ:
		type = KDAT_OBJ_SRQ;
		break;
	case KDAT_RING_EVD:
		type = KDAT_OBJ_EVD;
		break;
	default:
		return -EINVAL;
	}
	/* The file lock keeps the object from going while its ring is made. */
	mutex_lock(&kfile->lock);
	obj = kdat_obj_get(kfile, cmd->handle, type);
	if (!obj) {
		mutex_unlock(&kfile->lock);
		return -EBADF;
	}
	if (type == KDAT_OBJ_EVD) {
		struct kdat_evd *evd = container_of(obj, struct kdat_evd, obj);

		r = READ_ONCE(evd->ring);
		ret = r ? 0 : kdat_ring_evd_create(kfile, evd, evd->qlen, &r);
	} else {
		/* Lock order: poller_lock, then ring_lock. */
		mutex_lock(&kfile->poller_lock);
		ret = kdat_poller_start(kfile);
		if (!ret) {
			mutex_lock(&kfile->ring_lock);
			ret = kdat_ring_sq_create(kfile, cmd->kind,
				type == KDAT_OBJ_EP ?
				container_of(obj, struct kdat_ep, obj) : NULL,
				type == KDAT_OBJ_SRQ ?
				container_of(obj, struct kdat_srq, obj) : NULL,
				&r);
			mutex_unlock(&kfile->ring_lock);
		}
		mutex_unlock(&kfile->poller_lock);
		if (ret)
			kdat_poller_stop_if_idle(kfile);
	}
	if (!ret) {
		kdat_ring_describe(r, cmd);
		ret = kdat_ucmd_respond(ucmd, sizeof(*cmd));
	}
	kdat_obj_put(obj);
	mutex_unlock(&kfile->lock);
	return ret;
}

void kdat_file_rings_init(struct kdat_file *kfile)
{
	mutex_init(&kfile->ring_lock);
	mutex_init(&kfile->poller_lock);
	INIT_LIST_HEAD(&kfile->sq_rings);
	xa_init_flags(&kfile->rings, XA_FLAGS_ALLOC1);
	kfile->cred = get_current_cred();
}

/* The file is released: every queue, hence every ring, is gone. */
void kdat_file_rings_fini(struct kdat_file *kfile)
{
	WARN_ON(!list_empty(&kfile->sq_rings));
	kdat_poller_stop_if_idle(kfile);
	xa_destroy(&kfile->rings);
	put_cred(kfile->cred);
	mutex_destroy(&kfile->ring_lock);
	mutex_destroy(&kfile->poller_lock);
}
