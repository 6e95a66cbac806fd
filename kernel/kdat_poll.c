// SPDX-License-Identifier: GPL-2.0
/*
 * kdat submission rings and their poller: the top of the data path. The
 * poller (or the caller, KDAT_RING_WAKE_SUBMIT) takes what a process
 * published on its EPs' and SRQs' submission rings and hands it to the
 * DTO layer (kdat_dto.c) in batches; it calls nothing else above the ring
 * memory (kdat_ring.h).
 *
 * A drain (a pass of the poller over the file's sq_rings list, under the
 * file's ring_lock, or a doorbell for one ring) takes a ring's entries
 * under the ring's drain_lock, and only while the ring is on that list; a
 * queue takes its ring off the list, under both locks, before it goes: no
 * drain sees a queue that is gone. Doorbells of several threads, each for
 * its own queue's ring, drain side by side.
 *
 * A pass visits only the rings on the file's sq_active list: a ring that
 * had nothing for a while is parked on sq_parked (kdat_rings_park()),
 * the poller's sleep protocol applied to it alone, and the doorbell that
 * names it puts it back (kdat_ring_unpark()), one that names no ring those
 * with entries. A process with many queues and few busy ones costs a pass
 * the busy ones. A doorbell that names a ring never waits for ring_lock.
 * A pinned ring (an iWARP receive ring: kdat_sq_ring_create()) is on
 * sq_pinned from the start: the poller's passes leave it out; a doorbell
 * takes it, one that names it or one for the whole file, and so does a
 * pass that takes every ring.
 */
#include <linux/cgroup.h>
#include <linux/cred.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/sched/signal.h>
#include <linux/sched/stat.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/tick.h>

#include "kdat.h"
#include "kdat_ring.h"
#include "kdat_trace.h"

static unsigned int poll_idle_us = 2000;
module_param(poll_idle_us, uint, 0644);
MODULE_PARM_DESC(poll_idle_us,
		 "how long the ring poller spins with nothing to do before it sleeps (us)");

static unsigned int poll_busy_pct = 50;
module_param(poll_busy_pct, uint, 0644);
MODULE_PARM_DESC(poll_busy_pct,
		 "the ring poller backs off when it spent less of a 4 ms window than this (percent) taking entries (0: never)");

static unsigned int max_pollers;
module_param(max_pollers, uint, 0644);
MODULE_PARM_DESC(max_pollers,
		 "poller threads at most, all files together (0: twice the online CPUs), one user at most half of them; past it a file has none and its doorbells post");

static unsigned int poller_files = 16;
module_param(poller_files, uint, 0644);
MODULE_PARM_DESC(poller_files,
		 "files one poller thread serves at most (1: a poller per file); only files of one user in one set of cgroups share one");

/* Poller threads alive, against max_pollers; those that may take files. */
static atomic_t kdat_pollers = ATOMIC_INIT(0);
static DEFINE_MUTEX(kdat_pollers_lock);
static LIST_HEAD(kdat_pollers_list);

/*
 * A poller thread and the files it serves. It runs in the cgroups of the
 * process that started it and serves only files opened by the same user
 * (effective uid) in those same cgroups, with the same CPU setting, each
 * file's rings with that file's credentials: its CPU time is theirs, and
 * what one file's process publishes delays only its own user's.
 */
struct kdat_poller {
	struct task_struct *task;
	struct list_head node;		/* in kdat_pollers_list */
	kuid_t euid;
	int cpu;			/* KDAT_POLLER_ANY_CPU, or pinned */
	bool spin;			/* its files' mode is KDAT_POLLER_SPIN */
	/*
	 * @files (kdat_file.poller_node) changes under @lock and
	 * kdat_pollers_lock, @nr_files too; the poller holds @lock for a
	 * pass.
	 */
	struct mutex lock;
	struct list_head files;
	unsigned int nr_files;
	/* A doorbell or a new file: clear the flags, look again. */
	bool woken;
	bool asleep;			/* in schedule() for want of a doorbell */
	/*
	 * Asleep because its CPU was wanted or its spinning did not pay, it
	 * is not woken before @resume (jiffies): @backoff after it slept,
	 * the larger of two back-offs each doubled at each sleep of its
	 * kind: @shared_backoff, forgotten at a look that finds the CPU
	 * the poller's own, and @unpaid_backoff, forgotten at the end of a
	 * window that paid.
	 */
	unsigned long resume;
	unsigned long backoff, shared_backoff, unpaid_backoff;
	/*
	 * Times it went to sleep for want of work, for want of a CPU, for
	 * spinning that did not pay; the share of its last whole window
	 * spent taking entries (percent); naps taken, and those its CPU
	 * spent idle (a look found it free).
	 */
	unsigned long idle_sleeps, shared_sleeps, unpaid_sleeps, naps;
	unsigned long idle_naps;
	unsigned int busy_pct;
};

/*
 * Entries published up to @tail and not taken; 0 when the tail is not
 * sane.
 */
static u32 kdat_sq_pending(struct kdat_ring *r, u32 tail)
{
	u32 n = kdat_ring_span(r->khead, tail, r->entries);

	if (n == KDAT_RING_INSANE) {
		kdat_ring_set_flag(r, KDAT_RING_F_BAD_TAIL, true);
		return 0;
	}
	if (kdat_ring_flag(r, KDAT_RING_F_BAD_TAIL))
		kdat_ring_set_flag(r, KDAT_RING_F_BAD_TAIL, false);
	return n;
}

/*
 * Take up to a batch from submission ring @r: each entry copied once, its
 * ring format checked here, the DTO handed to the DTO layer, which checks
 * it as the ioctl does and posts the good ones as one chain. @r's
 * drain_lock held, @r on sq_rings (so its queue is alive). Returns the
 * entries taken.
 */
static u32 kdat_sq_drain(struct kdat_ring *r, u32 tail)
{
	struct kdat_batch *b = &r->batch;
	/* One copy, read through the header of its kind (same front). */
	struct kdat_sqe *sqe = r->sqe;
	struct kdat_sqe_ext *xsqe = r->sqe;
	bool ext = r->sqe_hdr == sizeof(*xsqe);
	struct kdat_req req = {
		.iov = ext ? xsqe->iov : sqe->iov,
		.remote = &sqe->remote,
		.ext = ext ? &xsqe->ext : NULL,
	};
	u32 pending, taken, max_iov, op;
	int err;

	lockdep_assert_held(&r->drain_lock);
	pending = kdat_sq_pending(r, tail);
	if (!pending)
		return 0;
	pending = min_t(u32, pending, KDAT_RING_BATCH);
	max_iov = (r->entry_size - r->sqe_hdr) /
		  sizeof(struct kdat_lmr_triplet);

	kdat_batch_start(b);
	for (taken = 0; taken < pending; taken++) {
		const u8 *entry = kdat_ring_entry(r, r->khead + taken);

		/*
		 * The header, then the segments it names (the copy's count,
		 * at most the entry's room): each byte read once, and no
		 * more of the entry than the DTO uses.
		 */
		memcpy(sqe, entry, r->sqe_hdr);
		memcpy((u8 *)sqe + r->sqe_hdr, entry + r->sqe_hdr,
		       min_t(u32, sqe->num_segments, max_iov) *
		       sizeof(struct kdat_lmr_triplet));
		op = r->kind == KDAT_RING_SEND ? sqe->op : KDAT_DTO_RECEIVE;
		req.op = op;
		req.flags = sqe->completion_flags;
		req.cookie = sqe->cookie;
		req.num = sqe->num_segments;
		/*
		 * A send ring takes no receive, a receive ring nothing else;
		 * a plain entry has no room for the extensions' arguments.
		 */
		if (sqe->__pad || sqe->num_segments > max_iov ||
		    (r->kind == KDAT_RING_SEND) !=
		    (sqe->op != KDAT_DTO_RECEIVE) ||
		    (!ext && (op == KDAT_DTO_RDMA_WRITE_IMM ||
			      kdat_op_is_atomic(op) ||
			      op == KDAT_DTO_SEND_UD)))
			err = -EINVAL;
		else
			err = kdat_batch_add(b, &req);
		if (err)
			kdat_batch_refuse(b, op, sqe->cookie, err);
	}

	WRITE_ONCE(r->khead, r->khead + taken);
	/*
	 * The entries are copied: the process may reuse their slots. Said
	 * before the chain is posted, so a slot is free before the process
	 * can see its DTO's completion.
	 */
	smp_store_release(kdat_ring_u32(r, KDAT_RING_OFF_HEAD), r->khead);
	kdat_batch_finish(b);
	return taken;
}

/*
 * Take everything published on @r now, in the caller's context: an EP
 * state change (disconnect, reset) comes after the DTOs posted before it.
 * Up to the tail read once, at the start: a thread that goes on
 * publishing meanwhile cannot keep the caller (and the file's locks) in
 * here; what it publishes later is the poller's or the next doorbell's.
 */
void kdat_sq_ring_flush(struct kdat_ring *r)
{
	u32 tail;

	if (!r)
		return;
	mutex_lock(&r->drain_lock);
	if (!list_empty(&r->node)) {
		tail = kdat_ring_tail(r);
		while (kdat_sq_drain(r, tail)) {
			WRITE_ONCE(r->worked, true);
			cond_resched();
		}
	}
	mutex_unlock(&r->drain_lock);
}

/*
 * A pass's drain of @r, up to the tail it read at its start (r->snap). A
 * doorbell for @r alone may have taken past it since: then there is
 * nothing older left, unless the tail the process shows now is not sane
 * (kdat_sq_drain() says so in the ring). ring_lock held.
 */
static u32 kdat_sq_drain_snap(struct kdat_ring *r)
{
	u32 done = 0, n;

	lockdep_assert_held(&r->kfile->ring_lock);
	mutex_lock(&r->drain_lock);
	if ((s32)(r->snap - r->khead) < 0 &&
	    kdat_ring_span(r->khead, kdat_ring_tail(r), r->entries) !=
	    KDAT_RING_INSANE)
		r->snap = r->khead;
	while ((n = kdat_sq_drain(r, r->snap)))
		done += n;
	mutex_unlock(&r->drain_lock);
	if (done)
		WRITE_ONCE(r->worked, true);
	return done;
}

/*
 * The rings a pass visits, in order: those on sq_active, then, with @all,
 * the parked ones (sq_parked) and the pinned ones (sq_pinned); NULL after
 * the last. ring_lock held.
 */
static struct kdat_ring *kdat_rings_next(struct kdat_file *kfile,
					 struct kdat_ring *r, bool all)
{
	struct list_head *next = r ? r->active.next : kfile->sq_active.next;

	if (next == &kfile->sq_active)
		next = all ? kfile->sq_parked.next : &kfile->sq_pinned;
	if (next == &kfile->sq_parked)
		next = kfile->sq_pinned.next;
	return next == &kfile->sq_pinned ? NULL :
	       list_entry(next, struct kdat_ring, active);
}

#define kdat_for_each_ring(r, kfile, all)				\
	for (r = kdat_rings_next(kfile, NULL, all); r;			\
	     r = kdat_rings_next(kfile, r, all))

/*
 * @r (on sq_rings) visited by the passes again. Its NEED_WAKEUP stays
 * as it is: the poller clears the flags of the rings it visits when it
 * is woken (kdat_poller_flag()), and a sleeping poller's rings keep
 * theirs. ring_lock held.
 */
static void kdat_ring_unpark(struct kdat_ring *r)
{
	struct kdat_file *kfile = r->kfile;

	lockdep_assert_held(&kfile->ring_lock);
	if (!r->parked)
		return;
	WRITE_ONCE(r->parked, false);
	WRITE_ONCE(r->worked, true);	/* its idle time starts at the next look */
	list_move_tail(&r->active, &kfile->sq_active);
	WRITE_ONCE(kfile->nr_parked, kfile->nr_parked - 1);
	kfile->parked_completed -= r->park_completed;
}

/*
 * The parked rings a doorbell asked back for (kdat_rings_unpark_wake())
 * put back: those it named, and, @busy, those with entries published.
 * ring_lock held.
 */
static void kdat_rings_unpark_asked(struct kdat_file *kfile, bool busy)
{
	struct kdat_ring *r, *tmp;

	lockdep_assert_held(&kfile->ring_lock);
	list_for_each_entry_safe(r, tmp, &kfile->sq_parked, active) {
		if (READ_ONCE(r->want_unpark) ||
		    (busy && kdat_ring_tail(r) != READ_ONCE(r->khead))) {
			WRITE_ONCE(r->want_unpark, false);
			kdat_ring_unpark(r);
		}
	}
}

/*
 * One pass over the file's submission rings that are not parked (@all:
 * over the parked ones too). A receive published before a send (by the
 * same thread) reaches the device before it, whatever their rings: the
 * send rings' tails are read first, then the receive rings' (so a send
 * seen implies the receives published before it are seen), then the
 * receives are posted, then the sends. Without that, a send could find
 * its peer's receive not yet posted and wait for the RNR timer. The
 * order holds for a parked ring too: the doorbell rung for its receive
 * took the receive (KDAT_RING_WAKE_SUBMIT, or a poller backing off), or
 * put the ring back before the send was published. First, what
 * doorbells that could not take ring_lock asked for is done.
 * ring_lock held; returns the entries taken.
 */
static u32 kdat_rings_pass(struct kdat_file *kfile, bool all)
{
	unsigned long asked = READ_ONCE(kfile->unpark_asked);
	struct kdat_ring *r;
	u32 done = 0;

	if (asked) {
		/* Fully ordered: the rings' want_unpark are read after it. */
		asked = xchg(&kfile->unpark_asked, 0);
		kdat_rings_unpark_asked(kfile, asked & KDAT_UNPARK_BUSY);
	}
	kdat_for_each_ring(r, kfile, all)
		if (r->kind == KDAT_RING_SEND)
			r->snap = kdat_ring_tail(r);
	kdat_for_each_ring(r, kfile, all)
		if (r->kind != KDAT_RING_SEND)
			r->snap = kdat_ring_tail(r);
	kdat_for_each_ring(r, kfile, all)
		if (r->kind != KDAT_RING_SEND)
			done += kdat_sq_drain_snap(r);
	kdat_for_each_ring(r, kfile, all)
		if (r->kind == KDAT_RING_SEND)
			done += kdat_sq_drain_snap(r);
	return done;
}

/*
 * A ring is parked after KDAT_RING_PARK_IDLES times poll_idle_us with
 * nothing: a ring that is only slow (a receive ring whose messages come
 * in bursts from a device's worker, 6.12's rxe) must not pay a doorbell
 * per post, and one idle that long pays one per tens of milliseconds.
 */
#define KDAT_RING_PARK_IDLES	16

/*
 * The poller's look, after a pass, at the rings it visits: one that had
 * nothing to take and no send at the device for a while is parked,
 * the poller's sleep protocol for that ring alone: NEED_WAKEUP in its
 * flags, a full barrier, its tail once more; published meanwhile, it
 * stays (the next pass takes it, in the order of kdat_rings_pass()) and
 * is unflagged (the poller polls it); else it moves to sq_parked, and
 * the process, which sees the flag, rings the doorbell for it. Not in
 * the pass before the poller sleeps (that one flags every ring).
 * ring_lock held.
 */
static void kdat_rings_park(struct kdat_file *kfile, ktime_t now)
{
	s64 idle_ns = (s64)READ_ONCE(poll_idle_us) * NSEC_PER_USEC *
		      KDAT_RING_PARK_IDLES;
	struct kdat_ring *r, *tmp;

	lockdep_assert_held(&kfile->ring_lock);
	list_for_each_entry_safe(r, tmp, &kfile->sq_active, active) {
		if (READ_ONCE(r->worked) ||
		    (r->kind == KDAT_RING_SEND &&
		     READ_ONCE(r->kcompleted) != READ_ONCE(r->khead))) {
			WRITE_ONCE(r->worked, false);
			r->idle_since = now;
			continue;
		}
		if (ktime_to_ns(ktime_sub(now, r->idle_since)) < idle_ns)
			continue;
		/*
		 * Parked before it is flagged: a doorbell rung for the flag
		 * finds it parked (kdat_cmd_ring_wake()).
		 */
		WRITE_ONCE(r->parked, true);
		WRITE_ONCE(kfile->nr_parked, kfile->nr_parked + 1);
		smp_wmb();	/* pairs with the doorbell's smp_rmb() */
		kdat_ring_set_flag(r, KDAT_RING_F_NEED_WAKEUP, true);
		smp_mb();	/* flag before tail; pairs with libdat's */
		if (kdat_ring_tail(r) == READ_ONCE(r->khead)) {
			list_move_tail(&r->active, &kfile->sq_parked);
			/* Its completions so far still count (at_device). */
			r->park_completed = READ_ONCE(r->kcompleted);
			kfile->parked_completed += r->park_completed;
			continue;
		}
		kdat_ring_set_flag(r, KDAT_RING_F_NEED_WAKEUP, false);
		WRITE_ONCE(r->parked, false);
		WRITE_ONCE(kfile->nr_parked, kfile->nr_parked - 1);
		r->idle_since = now;
	}
}

/*
 * NEED_WAKEUP on or off in the rings a pass visits. A ring's idle time
 * goes on across the poller's sleeps: every drain, a doorbell's too,
 * says that the ring worked.
 */
static void kdat_rings_need_wakeup(struct kdat_file *kfile, bool on)
{
	struct kdat_ring *r;

	list_for_each_entry(r, &kfile->sq_active, active)
		kdat_ring_set_flag(r, KDAT_RING_F_NEED_WAKEUP, on);
}

/*
 * Nobody polls the file's rings from now on: NEED_WAKEUP in every ring, a
 * full barrier, then take what was published before the process could
 * see it (the sleep protocol of the uapi header). None stays parked: a
 * poller the file has later visits them all. ring_lock held.
 */
static void kdat_rings_unpolled(struct kdat_file *kfile)
{
	struct kdat_ring *r, *tmp;

	list_for_each_entry_safe(r, tmp, &kfile->sq_parked, active)
		kdat_ring_unpark(r);
	kdat_rings_need_wakeup(kfile, true);
	smp_mb();	/* flags before tails; pairs with libdat's */
	kdat_rings_pass(kfile, false);
}

/*
 * Take what the file's rings published, parked ones too (they stay
 * parked), in the caller's context: before an object goes
 * (KDAT_IOCTL_DESTROY), so that the posts the process made before it
 * asked reach the device while what they name is there, as through the
 * ioctl they would have; before an EP's disconnect, reset or modify,
 * which come after the posts published before them; and for a doorbell
 * that names no ring. Every ring, in a pass's order: a send taken for
 * such a call must not overtake a receive published before it on
 * another ring.
 */
void kdat_rings_take(struct kdat_file *kfile)
{
	mutex_lock(&kfile->ring_lock);
	kdat_rings_pass(kfile, true);
	mutex_unlock(&kfile->ring_lock);
}

/*
 * The file's pinned rings taken, in the caller's context: a doorbell for
 * the whole file does it before it wakes the poller, whose passes leave
 * them out. Receive rings only: no send overtakes a receive for it.
 */
static void kdat_rings_take_pinned(struct kdat_file *kfile)
{
	struct kdat_ring *r;

	mutex_lock(&kfile->ring_lock);
	list_for_each_entry(r, &kfile->sq_pinned, active)
		kdat_sq_ring_flush(r);
	mutex_unlock(&kfile->ring_lock);
}

/*
 * What the device does for @kfile: *@completed gains how many entries of
 * its submission rings have completed, all told (a change between two
 * looks: the device works for it; a parked ring counts with what it had
 * when it was parked); returns whether sends taken from its rings are
 * not completed yet (the device has its work: in a worker that may want
 * the poller's CPU on 6.12's rxe). A look only: completions come
 * concurrently, and a skew between the two counts reads as nothing
 * outstanding. A parked ring had no send at the device when it was
 * parked; sends an EP's state change took from it since are not seen.
 * ring_lock held.
 */
static bool kdat_rings_at_device(struct kdat_file *kfile, u32 *completed)
{
	struct kdat_ring *r;
	bool out = false;
	u32 c;

	*completed += kfile->parked_completed;
	list_for_each_entry(r, &kfile->sq_active, active) {
		c = READ_ONCE(r->kcompleted);
		*completed += c;
		if (r->kind == KDAT_RING_SEND &&
		    (s32)(READ_ONCE(r->khead) - c) > 0)
			out = true;
	}
	return out;
}

/*
 * One pass over every file @p serves, each with its opener's creds; what
 * kdat_rings_at_device() says of them all after it in *@completed and
 * *@out. With @park, the rings idle long enough are parked after it.
 */
static u32 kdat_poller_pass(struct kdat_poller *p, u32 *completed, bool *out,
			    bool park)
{
	ktime_t now = park ? ktime_get() : 0;
	struct kdat_file *kfile;
	u32 done = 0;

	lockdep_assert_held(&p->lock);
	*completed = 0;
	*out = false;
	list_for_each_entry(kfile, &p->files, poller_node) {
		const struct cred *old = override_creds(kfile->cred);

		mutex_lock(&kfile->ring_lock);
		done += kdat_rings_pass(kfile, false);
		if (kdat_rings_at_device(kfile, completed))
			*out = true;
		if (park)
			kdat_rings_park(kfile, now);
		mutex_unlock(&kfile->ring_lock);
		revert_creds(old);
	}
	return done;
}

/*
 * NEED_WAKEUP on or off in every ring @p serves. On: then a full barrier
 * and one more pass (the sleep protocol); returns what that pass took.
 */
static u32 kdat_poller_flag(struct kdat_poller *p, bool on)
{
	struct kdat_file *kfile;
	u32 completed;
	bool out;

	lockdep_assert_held(&p->lock);
	list_for_each_entry(kfile, &p->files, poller_node) {
		mutex_lock(&kfile->ring_lock);
		kdat_rings_need_wakeup(kfile, on);
		mutex_unlock(&kfile->ring_lock);
	}
	if (!on)
		return 0;
	smp_mb();	/* flags before tails; pairs with libdat's */
	return kdat_poller_pass(p, &completed, &out, false);
}

/*
 * A look that finds another task runnable on the poller's CPU naps: the
 * poller sleeps a moment with its rings unflagged (the processes go on
 * publishing, and ring no doorbell), so that the other task runs now. It
 * is often the device's own worker running the poller's own posts (6.12's
 * rxe does every post's protocol work in a kworker): such a worker has
 * work while sends the poller took are at the device, so naps after which
 * some are there do not count, and last KDAT_POLL_NAP_BUSY_US at most;
 * unless none of the files' entries completed for KDAT_POLL_STUCK_US (a
 * send the peer never takes, parked on RNR, is no worker's work). A task
 * that goes on wanting the CPU otherwise (a busy loop, an application)
 * is there after every nap:
 * the naps double from KDAT_POLL_NAP_US, and once the counted ones add up
 * to KDAT_POLL_SHARED_US without the CPU found free, the poller gives its
 * CPU up (KDAT_POLL_SHARED, rings flagged). A nap through which its CPU
 * was idle a quarter of the time or more found it free, as a look that
 * sees no other task does: what wanted it ran and went (a device's worker
 * that finished, 6.12's rxe after every post), where a task that goes on
 * wanting it leaves it no idle time (one that sleeps a quarter of the
 * time is taken for one that ran and went, as a look made while it
 * slept always took it; without NO_HZ's idle accounting, nohz=off, no
 * nap finds the CPU free). Naps sleep as idle: they do
 * not count in the load average. Unless it spins (KDAT_POLLER_SPIN), it
 * also gives it up
 * when it waited KDAT_POLL_PREEMPTED_US for a CPU, runnable, between two
 * looks (it was preempted). The wait for the CPU after a nap counts in
 * neither: a preemption, or a worker of the device still running.
 */
#define KDAT_POLL_NAP_US	20
#define KDAT_POLL_NAP_BUSY_US	200
#define KDAT_POLL_STUCK_US	20000
#define KDAT_POLL_SHARED_US	2000
#define KDAT_POLL_PREEMPTED_US	500

/*
 * How long the poller measures whether its spinning pays: the share of
 * the window it spent in passes that took entries, against poll_busy_pct.
 */
#define KDAT_POLL_WINDOW_US	4000

/*
 * Back-off of a poller whose CPU was wanted, or whose spinning did not
 * pay: 1 jiffy, doubled, <= 1/4 s. Each is forgotten only when the
 * poller learns otherwise (kdat_poller_fn): that its CPU is its own, that
 * its spinning pays. Neither an idle sleep nor a late wake on a loaded
 * machine says so.
 */
static unsigned long kdat_poller_double(unsigned long b)
{
	return clamp(2 * b, 1UL, (unsigned long)HZ / 4);
}

/*
 * The time the current task has spent runnable on a runqueue, waiting
 * for a CPU (ns); 0 without the scheduler's accounting of it.
 */
static u64 kdat_run_delay(void)
{
#ifdef CONFIG_SCHED_INFO
	return READ_ONCE(current->sched_info.run_delay);
#else
	return 0;
#endif
}

/*
 * The time @cpu has spent idle, waiting for I/O included (us); U64_MAX
 * where the kernel does not account it (without NO_HZ).
 */
static u64 kdat_cpu_idle_us(int cpu)
{
	u64 idle = get_cpu_idle_time_us(cpu, NULL);
	u64 iowait = get_cpu_iowait_time_us(cpu, NULL);

	if (idle == (u64)-1 || iowait == (u64)-1)
		return U64_MAX;
	return idle + iowait;
}

/*
 * A spinning poller not pinned to a CPU keeps its back-off for a wanted
 * CPU at one jiffy: what wanted it is most often the polling process
 * itself, placed beside the poller for a moment, and each jiffy asleep
 * costs that process a doorbell per post; the poller's next wake-up may
 * place it elsewhere. A pinned poller stays beside what wants its CPU:
 * its back-off doubles.
 */
static void kdat_poller_back_off(struct kdat_poller *p, int why)
{
	if (why == KDAT_POLL_SHARED) {
		p->shared_backoff = p->spin && p->cpu == KDAT_POLLER_ANY_CPU ?
			1 : kdat_poller_double(p->shared_backoff);
		WRITE_ONCE(p->shared_sleeps, p->shared_sleeps + 1);
	} else if (why == KDAT_POLL_UNPAID) {
		p->unpaid_backoff = kdat_poller_double(p->unpaid_backoff);
		WRITE_ONCE(p->unpaid_sleeps, p->unpaid_sleeps + 1);
	} else {
		WRITE_ONCE(p->idle_sleeps, p->idle_sleeps + 1);
	}
	WRITE_ONCE(p->backoff, max(p->shared_backoff, p->unpaid_backoff));
	WRITE_ONCE(p->resume, jiffies + p->backoff);
}

/*
 * The poller goes to sleep: flag every ring, take what is published once
 * more, sleep until a doorbell. If an idle poller's last look found work,
 * it polls on instead. A doorbell sets @woken before waking us, and we
 * test @woken after set_current_state(), so a ring between our look and
 * schedule() is not lost.
 */
static void kdat_poller_sleep(struct kdat_poller *p, int why)
{
	u32 done;

	mutex_lock(&p->lock);
	done = kdat_poller_flag(p, true);
	mutex_unlock(&p->lock);
	if (!done || why != KDAT_POLL_IDLE) {
		kdat_poller_back_off(p, why);
		trace_kdat_poller_sleep(task_pid_nr(p->task), p->backoff,
					why);
		set_current_state(TASK_INTERRUPTIBLE);
		if (!READ_ONCE(p->woken) && !kthread_should_stop()) {
			WRITE_ONCE(p->asleep, true);
			schedule();
			WRITE_ONCE(p->asleep, false);
		}
		__set_current_state(TASK_RUNNING);
		trace_kdat_poller_wake(task_pid_nr(p->task), p->backoff,
				       why);
	}
	/* Polling again: the flags go at the top of the loop. */
	WRITE_ONCE(p->woken, true);
}

/*
 * The poller: drains every submission ring of the files it serves. It
 * spins only while it has its CPU to itself (single_task_running(),
 * looked at before each pass, so that a nap's effect is seen before the
 * pass's own posts wake a device worker again) and its spinning pays: it
 * sleeps after poll_idle_us with nothing to do (no entry taken, no send
 * at the device); it naps while another
 * task wants its CPU, and backs off, the processes posting from their
 * own context, when naps do not free it or it was preempted (see
 * KDAT_POLL_SHARED_US); and it backs off when less than poll_busy_pct of
 * a window went to passes that took entries (the processes post seldom:
 * a doorbell each costs less than a CPU spinning between them). A
 * spinning poller (KDAT_POLLER_SPIN: its CPU was given to it) does not
 * count preemption, nor pay: it waits for a CPU as often as the softirq
 * work its own posts make (6.1's rxe) runs on its CPU, and as often as a
 * doorbell wakes it where the process runs. Each back-off doubles.
 */
static int kdat_poller_fn(void *data)
{
	struct kdat_poller *p = data;
	ktime_t now, idle_since, window, last;
	u64 waited = kdat_run_delay(), delay;
	unsigned int nap_us = KDAT_POLL_NAP_US, nap, pct;
	s64 busy = 0, napped = 0, slept = 0;
	u32 completed, seen = 0;
	ktime_t progress_at;
	bool freed = false;
	u64 idle_us;
	s64 idle;
	int cpu;

	idle_since = window = last = progress_at = ktime_get();
	while (!kthread_should_stop()) {
		bool alone = freed || single_task_running();
		bool preempted, busy_dev, out;
		int why = -1;
		u32 done;

		mutex_lock(&p->lock);
		/* Woken, or a file came: no ring needs the doorbell now. */
		if (READ_ONCE(p->woken)) {
			WRITE_ONCE(p->woken, false);
			kdat_poller_flag(p, false);
		}
		done = kdat_poller_pass(p, &completed, &out, true);
		mutex_unlock(&p->lock);
		now = ktime_get();
		if (completed != seen)
			progress_at = now;
		seen = completed;
		/* Sends at a device that still completes them: it works. */
		busy_dev = out && ktime_us_delta(now, progress_at) <
				  KDAT_POLL_STUCK_US;
		if (done) {
			idle_since = now;
			busy += ktime_to_ns(ktime_sub(now, last));
		} else if (busy_dev) {
			idle_since = now;	/* completions, then posts, come */
		}
		last = now;
		/* Its wait for a CPU since the last look, a woken one's too. */
		delay = kdat_run_delay();
		preempted = !p->spin &&
			    delay - waited >= KDAT_POLL_PREEMPTED_US *
					      NSEC_PER_USEC;
		waited = delay;
		if (alone && !preempted) {
			napped = 0;
			nap_us = KDAT_POLL_NAP_US;
			p->shared_backoff = 0;	/* its CPU is its own */
		} else if (!busy_dev) {
			napped += slept;
		}
		slept = 0;
		freed = false;
		if (preempted ||
		    napped >= KDAT_POLL_SHARED_US * NSEC_PER_USEC) {
			why = KDAT_POLL_SHARED;
		} else if (!done && ktime_us_delta(now, idle_since) >=
				    READ_ONCE(poll_idle_us)) {
			why = KDAT_POLL_IDLE;
		} else if (ktime_us_delta(now, window) >= KDAT_POLL_WINDOW_US) {
			pct = div64_s64(busy * 100,
					ktime_to_ns(ktime_sub(now, window)));
			WRITE_ONCE(p->busy_pct, pct);
			if (!p->spin && pct < READ_ONCE(poll_busy_pct))
				why = KDAT_POLL_UNPAID;
			else
				p->unpaid_backoff = 0;	/* it pays */
			window = now;
			busy = 0;
		}
		if (why < 0 && alone) {
			cond_resched();
			continue;
		}
		if (why < 0) {
			/*
			 * The nap counts as long as it slept: not its wait for
			 * the CPU after, which a preemption (or the device's
			 * worker still running) may make long; and not at all
			 * if sends are at the device after the next pass: the
			 * device's worker may be what wanted the CPU. Those
			 * naps stay short, for the completions they wait for.
			 */
			nap = busy_dev ? min(nap_us, KDAT_POLL_NAP_BUSY_US) :
					 nap_us;
			/* Its own CPU's counters, read there: exact. */
			cpu = get_cpu();
			idle_us = kdat_cpu_idle_us(cpu);
			put_cpu();
			usleep_range_state(nap, 2 * nap, TASK_IDLE);
			WRITE_ONCE(p->naps, p->naps + 1);
			now = ktime_get();
			delay = kdat_run_delay();
			slept = ktime_to_ns(ktime_sub(now, last)) -
				(s64)(delay - waited);
			/* Idle a quarter of it, on the CPU it napped on. */
			if (idle_us != U64_MAX) {
				if (cpu == get_cpu()) {
					idle = kdat_cpu_idle_us(cpu) - idle_us;
					freed = slept > 0 && idle > 0 &&
						4 * idle * NSEC_PER_USEC >= slept;
				}
				put_cpu();
			}
			if (freed)
				WRITE_ONCE(p->idle_naps, p->idle_naps + 1);
			nap_us = min(2 * nap_us, KDAT_POLL_SHARED_US);
			waited = delay;
			last = now;
			continue;
		}
		kdat_poller_sleep(p, why);
		idle_since = window = last = ktime_get();
		busy = 0;
		napped = 0;
		slept = 0;
		nap_us = KDAT_POLL_NAP_US;
	}
	return 0;
}

/*
 * The submission ring @id of @kfile, with a reference (the file's ring
 * table holds one while the ring is in it: ours is taken under the
 * table's lock), or NULL: no submission ring of the file has that id.
 */
static struct kdat_ring *kdat_sq_ring_get(struct kdat_file *kfile, u32 id)
{
	struct kdat_ring *r;

	xa_lock(&kfile->rings);
	r = xa_load(&kfile->rings, id);
	if (r && r->kind != KDAT_RING_EVD)
		kref_get(&r->ref);
	else
		r = NULL;
	xa_unlock(&kfile->rings);
	return r;
}

/*
 * The doorbell's put-back of @r, or (@r NULL) of every parked ring of
 * @kfile with entries published. It does not wait for ring_lock, which a
 * pass may hold a while: then the next pass does it (the doorbell wakes
 * the poller, or takes the entries itself when it may not). A doorbell
 * for the whole file of a file with pinned rings waits for it all the
 * same, to take them (kdat_rings_take_pinned()).
 */
static void kdat_rings_unpark_wake(struct kdat_file *kfile,
				   struct kdat_ring *r)
{
	if (mutex_trylock(&kfile->ring_lock)) {
		if (!r)
			kdat_rings_unpark_asked(kfile, true);
		else if (!list_empty(&r->node))
			kdat_ring_unpark(r);
		mutex_unlock(&kfile->ring_lock);
		return;
	}
	if (r)
		WRITE_ONCE(r->want_unpark, true);
	smp_mb__before_atomic();	/* want_unpark, then the ask */
	set_bit(r ? KDAT_UNPARK_NAMED_BIT : KDAT_UNPARK_BUSY_BIT,
		&kfile->unpark_asked);
}

/*
 * The doorbell. The poller is woken unless it backs off; with
 * KDAT_RING_WAKE_SUBMIT, or when no poller is to be woken, what was
 * published before the call is taken in the caller's context (on the one
 * ring @ring names, or on every ring of the file), outside the poller's
 * lock: threads ringing for their own rings take them side by side. A
 * pinned ring's doorbell takes it and wakes nothing; one for the whole
 * file takes the pinned rings first, whatever its flags, waiting for
 * ring_lock to do so. -EBADF: @ring names no submission ring of the file.
 */
int kdat_cmd_ring_wake(struct kdat_ucmd *ucmd)
{
	struct kdat_ring_wake *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	struct kdat_ring *r = NULL;
	struct kdat_poller *p;
	bool wake;

	if ((cmd->flags & ~KDAT_RING_WAKE_SUBMIT) || cmd->__reserved)
		return -EINVAL;
	if (cmd->ring) {
		r = kdat_sq_ring_get(kfile, cmd->ring);
		if (!r)
			return -EBADF;
		/*
		 * A pinned ring's doorbells take it, always: no poller
		 * wanted. kpinned is set before the ring is listed (one
		 * that names a ring being made takes nothing yet).
		 */
		if (READ_ONCE(r->kpinned)) {
			kdat_sq_ring_flush(r);
			kdat_ring_put(r);
			return 0;
		}
	}
	/*
	 * The process rang for a flag it saw: a ring that kdat_rings_park()
	 * flagged shows it is parked after it.
	 */
	smp_rmb();	/* the flag the process read, then @parked */
	if (r ? READ_ONCE(r->parked) : READ_ONCE(kfile->nr_parked))
		kdat_rings_unpark_wake(kfile, r);
	/*
	 * The pinned rings first, whatever the flags: the poller would not
	 * take them. A ring the process could have published on was listed
	 * before the call that made it returned.
	 */
	if (!r && !list_empty(&kfile->sq_pinned))
		kdat_rings_take_pinned(kfile);
	mutex_lock(&kfile->poller_lock);
	p = kfile->poller;
	wake = p && time_after_eq(jiffies, READ_ONCE(p->resume));
	if (wake) {
		WRITE_ONCE(p->woken, true);
		wake_up_process(p->task);
	}
	mutex_unlock(&kfile->poller_lock);
	if (!wake || (cmd->flags & KDAT_RING_WAKE_SUBMIT)) {
		if (r)
			kdat_sq_ring_flush(r);
		else
			kdat_rings_take(kfile);
	}
	if (r)
		kdat_ring_put(r);
	return 0;
}

/* May @p serve @kfile, whose ring the caller makes? kdat_pollers_lock. */
static bool kdat_poller_may_serve(struct kdat_poller *p,
				  struct kdat_file *kfile)
{
	bool same;

	if (p->nr_files >= max(READ_ONCE(poller_files), 1U) ||
	    p->cpu != kfile->poll_cpu || !uid_eq(p->euid, kfile->cred->euid) ||
	    p->spin != (kfile->poll_mode == KDAT_POLLER_SPIN))
		return false;
	/* The same cgroups, every hierarchy: the same css_set. */
	rcu_read_lock();
	same = task_css_set(current) == task_css_set(p->task);
	rcu_read_unlock();
	return same;
}

/*
 * A new poller thread, in the caller's cgroups (its CPU time is theirs, as
 * vhost's), on @kfile's CPU; NULL past max_pollers or when none can be
 * had. kdat_pollers_lock held.
 */
static struct kdat_poller *kdat_poller_new(struct kdat_file *kfile)
{
	unsigned int limit = READ_ONCE(max_pollers), mine = 0;
	struct kdat_poller *p;
	struct task_struct *t;

	/*
	 * Kernel threads count against no RLIMIT_NPROC nor pids.max: kdat
	 * bounds them itself. One user holds at most half of them (rounded
	 * up), so that one user's files cannot leave every other user's
	 * without a poller.
	 */
	if (!limit)
		limit = 2 * num_online_cpus();
	list_for_each_entry(p, &kdat_pollers_list, node)
		mine += uid_eq(p->euid, kfile->cred->euid);
	if (mine >= DIV_ROUND_UP(limit, 2))
		return NULL;
	if (atomic_inc_return(&kdat_pollers) > limit)
		goto err_uncount;
	p = kzalloc(sizeof(*p), GFP_KERNEL_ACCOUNT);
	if (!p)
		goto err_uncount;
	mutex_init(&p->lock);
	INIT_LIST_HEAD(&p->files);
	p->euid = kfile->cred->euid;
	p->cpu = kfile->poll_cpu;
	p->spin = kfile->poll_mode == KDAT_POLLER_SPIN;
	p->resume = jiffies;
	t = kthread_create(kdat_poller_fn, p, "kdat-poll/%d",
			   task_tgid_nr(current));
	if (IS_ERR(t))
		goto err_free;
	if (cgroup_attach_task_all(current, t) ||
	    (p->cpu >= 0 && set_cpus_allowed_ptr(t, cpumask_of(p->cpu)))) {
		kthread_stop(t);
		goto err_free;
	}
	p->task = t;
	list_add_tail(&p->node, &kdat_pollers_list);
	return p;

err_free:
	mutex_destroy(&p->lock);
	kfree(p);
err_uncount:
	atomic_dec(&kdat_pollers);
	return NULL;
}

/*
 * Give @kfile a poller if its mode wants one: one it may share (same
 * user, same cgroups, same CPU setting and mode, room for a file), else a
 * new one.
 * Without one, its rings say NEED_WAKEUP and the doorbell takes their
 * entries. poller_lock held.
 */
static void kdat_poller_attach(struct kdat_file *kfile)
{
	struct kdat_poller *p, *found = NULL;

	lockdep_assert_held(&kfile->poller_lock);
	if (kfile->poller || kfile->poll_mode == KDAT_POLLER_NONE)
		return;
	mutex_lock(&kdat_pollers_lock);
	list_for_each_entry(p, &kdat_pollers_list, node) {
		if (kdat_poller_may_serve(p, kfile)) {
			found = p;
			break;
		}
	}
	if (!found)
		found = kdat_poller_new(kfile);
	if (found) {
		mutex_lock(&found->lock);
		list_add_tail(&kfile->poller_node, &found->files);
		WRITE_ONCE(found->nr_files, found->nr_files + 1);
		kfile->poller = found;
		WRITE_ONCE(found->woken, true);
		mutex_unlock(&found->lock);
		wake_up_process(found->task);
	}
	mutex_unlock(&kdat_pollers_lock);
}

/*
 * @kfile's rings lose their poller, if they have one; the last file of a
 * poller stops it. What was published is taken, and the rings say
 * NEED_WAKEUP from now on. poller_lock held.
 */
static void kdat_poller_detach(struct kdat_file *kfile)
{
	struct kdat_poller *p = kfile->poller;
	bool last;

	lockdep_assert_held(&kfile->poller_lock);
	if (!p)
		return;
	mutex_lock(&kdat_pollers_lock);
	/* Waits for a pass in progress: then it never sees the file again. */
	mutex_lock(&p->lock);
	list_del(&kfile->poller_node);
	WRITE_ONCE(p->nr_files, p->nr_files - 1);
	last = !p->nr_files;
	mutex_unlock(&p->lock);
	if (last)
		list_del(&p->node);
	mutex_unlock(&kdat_pollers_lock);
	kfile->poller = NULL;
	if (last) {
		kthread_stop(p->task);
		mutex_destroy(&p->lock);
		kfree(p);
		atomic_dec(&kdat_pollers);
	}
	mutex_lock(&kfile->ring_lock);
	kdat_rings_unpolled(kfile);
	mutex_unlock(&kfile->ring_lock);
}

/* Let go of the poller if no submission ring is left. */
static void kdat_poller_detach_if_idle(struct kdat_file *kfile)
{
	bool idle;

	mutex_lock(&kfile->poller_lock);
	mutex_lock(&kfile->ring_lock);
	idle = list_empty(&kfile->sq_rings);
	mutex_unlock(&kfile->ring_lock);
	if (idle)
		kdat_poller_detach(kfile);
	mutex_unlock(&kfile->poller_lock);
}

int kdat_cmd_poller_set(struct kdat_ucmd *ucmd)
{
	struct kdat_poller_set *cmd = ucmd->cmd;
	struct kdat_file *kfile = ucmd->kfile;
	bool rings;

	if (cmd->__reserved || cmd->mode > KDAT_POLLER_SPIN)
		return -EINVAL;
	if (cmd->cpu != KDAT_POLLER_ANY_CPU &&
	    (cmd->cpu < 0 || cmd->cpu >= nr_cpu_ids || !cpu_online(cmd->cpu) ||
	     !cpumask_test_cpu(cmd->cpu, current->cpus_ptr)))
		return -EINVAL;
	mutex_lock(&kfile->poller_lock);
	/* A file changes poller by leaving its own, then finding one. */
	kdat_poller_detach(kfile);
	kfile->poll_mode = cmd->mode;
	kfile->poll_cpu = cmd->cpu;
	mutex_lock(&kfile->ring_lock);
	rings = !list_empty(&kfile->sq_rings);
	mutex_unlock(&kfile->ring_lock);
	if (rings)
		kdat_poller_attach(kfile);
	mutex_unlock(&kfile->poller_lock);
	return 0;
}

/*
 * A queue is going, step one: the poller leaves its ring alone from now
 * on (it waits for a drain in progress). Call before the queue's QP or
 * SRQ goes. Completions may still count in the ring until step two.
 */
void kdat_sq_ring_stop(struct kdat_ring *r)
{
	if (!r)
		return;
	mutex_lock(&r->kfile->ring_lock);
	mutex_lock(&r->drain_lock);
	kdat_ring_unpark(r);
	list_del_init(&r->node);
	list_del_init(&r->active);
	mutex_unlock(&r->drain_lock);
	mutex_unlock(&r->kfile->ring_lock);
}

/*
 * Step two, once no completion can come: the ring leaves the mmap table
 * and its queue; the memory stays for the mappings. The last submission
 * ring stops the poller.
 */
void kdat_sq_ring_detach(struct kdat_ring *r)
{
	struct kdat_file *kfile;

	if (!r)
		return;
	kfile = r->kfile;
	kdat_sq_ring_stop(r);
	kdat_batch_fini(&r->batch);
	kfree(r->sqe);
	r->sqe = NULL;
	kdat_ring_release(r);
	kdat_poller_detach_if_idle(kfile);
}

/* An entry of @hdr bytes of header and @max_iov segments. */
static u32 kdat_sqe_size(u32 hdr, u32 max_iov)
{
	return ALIGN(hdr + max_iov * sizeof(struct kdat_lmr_triplet), 64);
}

/*
 * The file's submission rings and its poller, for /proc/PID/fdinfo/FD:
 * what a stalled application's queues hold, without a debugger. Indices
 * as the kernel last published them (head, completed) and as the process
 * last wrote them (tail).
 */
void kdat_rings_show(struct seq_file *m, struct kdat_file *kfile)
{
	static const char * const kinds[] = {
		[KDAT_RING_SEND] = "send", [KDAT_RING_RECV] = "recv",
		[KDAT_RING_SRQ] = "srq",
	};
	struct kdat_poller *p;
	struct kdat_ring *r;

	mutex_lock(&kfile->ring_lock);
	list_for_each_entry(r, &kfile->sq_rings, node)
		seq_printf(m, "sq:\t%s %u entries %u head %u tail %u completed %u flags %#x%s\n",
			   kinds[r->kind],
			   r->srq ? r->srq->obj.handle : r->ep->obj.handle,
			   r->entries, READ_ONCE(r->khead),
			   READ_ONCE(*kdat_ring_u32(r, KDAT_RING_OFF_TAIL)),
			   READ_ONCE(*kdat_ring_u32(r, KDAT_RING_OFF_COMPLETED)),
			   READ_ONCE(r->kflags), r->parked ? " parked" :
			   r->kpinned ? " pinned" : "");
	mutex_unlock(&kfile->ring_lock);

	mutex_lock(&kfile->poller_lock);
	p = kfile->poller;
	if (p)
		seq_printf(m, "poller:\t%d %s cpu %d files %u idle_sleeps %lu shared_sleeps %lu backoff_ms %u unpaid_sleeps %lu busy_pct %u naps %lu idle_naps %lu\n",
			   task_pid_nr(p->task),
			   READ_ONCE(p->asleep) ? "asleep" : "polling",
			   kfile->poll_cpu, READ_ONCE(p->nr_files),
			   READ_ONCE(p->idle_sleeps),
			   READ_ONCE(p->shared_sleeps),
			   jiffies_to_msecs(READ_ONCE(p->backoff)),
			   READ_ONCE(p->unpaid_sleeps),
			   READ_ONCE(p->busy_pct), READ_ONCE(p->naps),
			   READ_ONCE(p->idle_naps));
	else
		seq_puts(m, "poller:\tnone\n");
	mutex_unlock(&kfile->poller_lock);
}

/*
 * A submission ring for @ep or @srq, its entries with a header of @hdr
 * bytes; poller_lock and ring_lock held.
 */
static int kdat_sq_ring_create(struct kdat_file *kfile, u32 kind, u32 hdr,
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
		/* One ring per queue: its entries stay of their kind. */
		if ((*slot)->sqe_hdr != hdr)
			return -EBUSY;
		*out = *slot;
		return 0;
	}
	r = kdat_ring_alloc(kfile, kind, depth, kdat_sqe_size(hdr, iov));
	if (IS_ERR(r))
		return PTR_ERR(r);
	r->sqe_hdr = hdr;
	r->ep = ep;
	r->srq = srq;
	/*
	 * Where a message that finds no receive ends the connection, a
	 * receive is at the device when its post returns, as DAT wants ("at
	 * least the equivalent of posting a Receive operation directly by
	 * native Transport"): a peer told of it some other way may send at
	 * once, before a poller's pass. The ring says the poller sleeps, at
	 * all times: the process rings for each receive, and the doorbell
	 * takes it. A thread's receive and its next send keep their order on
	 * any port (kdat_rings_pass()); that is all IB's RNR retry needs.
	 */
	if (kind != KDAT_RING_SEND && (ep ? ep->pz : srq->pz)->ia->no_rnr)
		WRITE_ONCE(r->kpinned, KDAT_RING_F_NEED_WAKEUP);
	r->sqe = kmalloc(r->entry_size, GFP_KERNEL_ACCOUNT);
	ret = r->sqe ? kdat_batch_init(&r->batch, kfile, ep, srq,
				       kind == KDAT_RING_SEND) : -ENOMEM;
	if (ret)
		goto err;
	/* DTOs posted by ioctl would count as the ring's: idle queues only. */
	spin_lock_irqsave(lock, flags);
	if (slots->posted) {
		spin_unlock_irqrestore(lock, flags);
		ret = -EBUSY;
		goto err;
	}
	/* Made whole before it is seen: lockless readers READ_ONCE() it. */
	smp_store_release(slot, r);
	if (ep)
		kdat_ring_set_ep_state(r, ep->state);
	spin_unlock_irqrestore(lock, flags);
	mutex_lock(&r->drain_lock);
	list_add_tail(&r->node, &kfile->sq_rings);
	list_add_tail(&r->active,
		      r->kpinned ? &kfile->sq_pinned : &kfile->sq_active);
	r->idle_since = ktime_get();
	mutex_unlock(&r->drain_lock);
	if (kfile->poller && !r->kpinned) {
		/* A sleeping poller would not look at a ring it has not flagged. */
		WRITE_ONCE(kfile->poller->woken, true);
		wake_up_process(kfile->poller->task);
	} else {
		kdat_ring_set_flag(r, KDAT_RING_F_NEED_WAKEUP, true);
	}
	*out = r;
	return 0;
err:
	kdat_batch_fini(&r->batch);
	kfree(r->sqe);
	kdat_ring_release(r);
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

	if (cmd->__reserved || (cmd->flags & ~KDAT_RING_CREATE_SQE_EXT) ||
	    (cmd->flags && cmd->kind != KDAT_RING_SEND))
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
		ret = r ? 0 : kdat_evd_ring_create(evd, evd->qlen, &r);
	} else {
		/* Lock order: poller_lock, then ring_lock. */
		mutex_lock(&kfile->poller_lock);
		kdat_poller_attach(kfile);
		mutex_lock(&kfile->ring_lock);
		ret = kdat_sq_ring_create(kfile, cmd->kind,
			cmd->flags & KDAT_RING_CREATE_SQE_EXT ?
			sizeof(struct kdat_sqe_ext) : sizeof(struct kdat_sqe),
			type == KDAT_OBJ_EP ?
			container_of(obj, struct kdat_ep, obj) : NULL,
			type == KDAT_OBJ_SRQ ?
			container_of(obj, struct kdat_srq, obj) : NULL,
			&r);
		mutex_unlock(&kfile->ring_lock);
		mutex_unlock(&kfile->poller_lock);
		if (ret)
			kdat_poller_detach_if_idle(kfile);
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
	INIT_LIST_HEAD(&kfile->sq_active);
	INIT_LIST_HEAD(&kfile->sq_parked);
	INIT_LIST_HEAD(&kfile->sq_pinned);
	xa_init_flags(&kfile->rings, XA_FLAGS_ALLOC1);
	kfile->poll_mode = KDAT_POLLER_ADAPTIVE;
	kfile->poll_cpu = KDAT_POLLER_ANY_CPU;
	kfile->cred = get_current_cred();
}

/* The file is released: every queue, hence every ring, is gone. */
void kdat_file_rings_fini(struct kdat_file *kfile)
{
	WARN_ON(!list_empty(&kfile->sq_rings));
	kdat_poller_detach_if_idle(kfile);
	xa_destroy(&kfile->rings);
	put_cred(kfile->cred);
	mutex_destroy(&kfile->ring_lock);
	mutex_destroy(&kfile->poller_lock);
}
