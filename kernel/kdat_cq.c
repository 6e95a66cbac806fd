// SPDX-License-Identifier: GPL-2.0
/*
 * kdat: a DTO EVD's completion queue, reaped where its completions are
 * signalled.
 *
 * An IB_POLL_SOFTIRQ CQ of ib_core takes every notification through
 * irq_poll: the device's completion handler schedules it, and the CQ is
 * polled in a second softirq. rxe signals a kernel CQ from a tasklet of its
 * own, already in softirq, so that is one more hop for every notification
 * (scripts/trace-dto shows it). Here the handler reaps at once when it is
 * called with interrupts on and outside a hard interrupt, and leaves the
 * CQ to irq_poll only from a hard interrupt (most hardware), as ib_core
 * would, or when it has reaped its budget. A device that signals from a
 * task with interrupts off (6.12's rxe: its completer kworker, under the
 * CQ's irqsave lock) gets irq_poll through an irq_work: raised from a
 * task, the softirq would wake ksoftirqd, a scheduler hop per signal that
 * competes with every runnable task on the CPU; raised from the irq_work's
 * interrupt, it runs at that interrupt's exit, as after a NIC's. A thread
 * that waits for or dequeues the EVD's events reaps first, so a completion
 * already in the CQ needs no notification at all.
 *
 * One reaper at a time (reap_lock), so completions reach their handlers
 * (wr_cqe->done) in CQ order: the drains and the SRQ's barrier QP rely on
 * it. A reaper that finds the lock taken leaves KDAT_CQ_AGAIN; the holder
 * reaps once more for it, and looks again after letting go. Handlers run
 * with bottom halves off, whoever reaps.
 */
#include <linux/debugfs.h>
#include <linux/interrupt.h>
#include <linux/irq_poll.h>
#include <linux/irq_work.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/seq_file.h>

#include "kdat.h"

/* Work completions on the stack per poll. */
#define KDAT_CQ_BATCH		8
/* Completions one reap takes before it leaves the rest to irq_poll. */
#define KDAT_CQ_BUDGET		16
/* irq_poll's weight (ib_core's IB_POLL_BUDGET_IRQ). */
#define KDAT_CQ_IOP_WEIGHT	256

/*
 * What the devices did, for debugfs (kdat/cq) and the tests that read it:
 * completion handlers called where the reap ran at once, and called from
 * a hard interrupt or with interrupts off (hardware; 6.12's rxe signals
 * from its completer under the CQ's irqsave lock), where it went to
 * irq_poll as with ib_core, of which those from a task with interrupts
 * off went there through the irq_work; and reaps that left the rest to
 * irq_poll for their budget. Which path a device takes is decided by the
 * context it calls in, at each call, not by what the device is.
 */
enum {
	KDAT_CQ_SIG_INLINE,
	KDAT_CQ_SIG_IRQ,
	KDAT_CQ_SIG_IRQ_WORK,
	KDAT_CQ_SIG_BUDGET,
	KDAT_CQ_SIG_NR
};

struct kdat_cq_signals {
	unsigned long n[KDAT_CQ_SIG_NR];
};

static DEFINE_PER_CPU(struct kdat_cq_signals, kdat_cq_signals);

static void kdat_cq_count(int what)
{
	this_cpu_inc(kdat_cq_signals.n[what]);
}

/* Hand up to @budget completions to their handlers; reap_lock held. */
static int kdat_cq_poll(struct kdat_cq *kcq, int budget)
{
	struct ib_wc wcs[KDAT_CQ_BATCH];
	int done = 0, n, i;

	while (done < budget) {
		n = ib_poll_cq(kcq->cq, min(budget - done, KDAT_CQ_BATCH), wcs);
		if (n <= 0)
			break;
		for (i = 0; i < n; i++) {
			if (wcs[i].wr_cqe)
				wcs[i].wr_cqe->done(kcq->cq, &wcs[i]);
			else
				WARN_ON_ONCE(wcs[i].status == IB_WC_SUCCESS);
		}
		done += n;
	}
	return done;
}

/*
 * Reap @kcq and re-arm it, unless another reaper holds it (it reaps for
 * us). Returns how many completions were handled; @budget of them means
 * more may wait, and the CQ is not armed: the caller comes back (irq_poll)
 * or schedules irq_poll. Bottom halves off, interrupts on.
 */
static int kdat_cq_reap_bh(struct kdat_cq *kcq, int budget)
{
	int done = 0;

	set_bit(KDAT_CQ_AGAIN, &kcq->flags);
	smp_mb__after_atomic();	/* the bit before the lock; pairs below */
	while (spin_trylock(&kcq->reap_lock)) {
		while (!kcq->dead &&
		       test_and_clear_bit(KDAT_CQ_AGAIN, &kcq->flags)) {
			done += kdat_cq_poll(kcq, budget - done);
			if (done >= budget) {
				/* Whoever comes next polls on. */
				set_bit(KDAT_CQ_AGAIN, &kcq->flags);
				spin_unlock(&kcq->reap_lock);
				return done;
			}
			if (ib_req_notify_cq(kcq->cq, IB_CQ_NEXT_COMP |
					     IB_CQ_REPORT_MISSED_EVENTS) > 0)
				set_bit(KDAT_CQ_AGAIN, &kcq->flags);
		}
		spin_unlock(&kcq->reap_lock);
		/* A reaper that failed its trylock set the bit before. */
		smp_mb();
		if (!test_bit(KDAT_CQ_AGAIN, &kcq->flags) ||
		    READ_ONCE(kcq->dead))
			break;
	}
	return done;
}

static int kdat_cq_iop(struct irq_poll *iop, int budget)
{
	struct kdat_cq *kcq = container_of(iop, struct kdat_cq, iop);
	int done = kdat_cq_reap_bh(kcq, budget);

	if (done < budget) {
		irq_poll_complete(iop);
		/*
		 * A completion after kdat_cq_reap_bh() re-armed the CQ, and
		 * before irq_poll_complete(), signalled while this poll was
		 * still scheduled: its irq_poll_sched() did nothing, and the
		 * CQ is no longer armed. Arm it again now that a signal
		 * schedules anew, and poll on if something came (as ib_core's
		 * own irq_poll handler does). Every signal comes this way from
		 * a device that signals with interrupts off (6.12's rxe, a
		 * NIC's hard interrupt): the receive CQ of a ping-pong stalled
		 * for good there without it. What another reaper holding the
		 * CQ is still polling is left to it: polling on here would
		 * spin in softirq until it is done.
		 */
		if (!READ_ONCE(kcq->dead) &&
		    ib_req_notify_cq(kcq->cq, IB_CQ_NEXT_COMP |
				     IB_CQ_REPORT_MISSED_EVENTS) > 0) {
			set_bit(KDAT_CQ_AGAIN, &kcq->flags);
			/*
			 * The bit before the lock: a holder reads it after
			 * its unlock (kdat_cq_reap_bh()), so one of us
			 * takes them.
			 */
			smp_mb__after_atomic();
			if (spin_trylock(&kcq->reap_lock)) {
				spin_unlock(&kcq->reap_lock);
				irq_poll_sched(iop);
			}
		}
	}
	return done;
}

/* A task with interrupts off: irq_poll_sched() here would wake ksoftirqd. */
static bool kdat_cq_task_irqs_off(void)
{
	return irqs_disabled() && !in_interrupt();
}

/* In the interrupt the irq_work raised: irq_poll without ksoftirqd. */
static void kdat_cq_iw(struct irq_work *iw)
{
	struct kdat_cq *kcq = container_of(iw, struct kdat_cq, iw);

	if (!READ_ONCE(kcq->dead))
		irq_poll_sched(&kcq->iop);
}

/*
 * Reap @kcq from any context: at once where handlers may run, else (a hard
 * interrupt, interrupts off) through irq_poll; from a task with interrupts
 * off, through the irq_work, which schedules it in an interrupt once they
 * are on again.
 */
void kdat_cq_reap(struct kdat_cq *kcq)
{
	int done;

	/* Never made, or going: kdat_cq_destroy() may have disabled iop. */
	if (READ_ONCE(kcq->dead))
		return;
	if (kdat_cq_task_irqs_off()) {
		irq_work_queue(&kcq->iw);
		return;
	}
	if (in_hardirq() || irqs_disabled()) {
		irq_poll_sched(&kcq->iop);
		return;
	}
	local_bh_disable();
	done = kdat_cq_reap_bh(kcq, KDAT_CQ_BUDGET);
	if (done >= KDAT_CQ_BUDGET) {
		kdat_cq_count(KDAT_CQ_SIG_BUDGET);
		irq_poll_sched(&kcq->iop);
	}
	local_bh_enable();
}

/*
 * Hand every completion @kcq holds to its handler, after a reaper under
 * way is done: once this returns, each completion still in the CQ when it
 * was called has been handled, unless the CQ is dead (device removal).
 * Process context; the CQ is re-armed as after any reap.
 */
void kdat_cq_flush(struct kdat_cq *kcq)
{
	int left, n, want;

	/*
	 * What it held at the call is at most its size, first in CQ order:
	 * no more than that, however fast new ones come. A batch at a time
	 * under the lock (a reaper that takes it between two is done with
	 * its handlers when it lets go); an empty poll under it means every
	 * earlier completion was handled.
	 */
	spin_lock_bh(&kcq->reap_lock);
	left = kcq->dead ? 0 : kcq->cq->cqe;	/* dead before the CQ goes */
	spin_unlock_bh(&kcq->reap_lock);
	for (; left > 0; left -= n) {
		want = min(left, KDAT_CQ_BUDGET);
		spin_lock_bh(&kcq->reap_lock);
		n = kcq->dead ? 0 : kdat_cq_poll(kcq, want);
		spin_unlock_bh(&kcq->reap_lock);
		if (n < want)
			break;
		cond_resched();
	}
	/* What came meanwhile, a reaper turned away, the arm: as always. */
	kdat_cq_reap(kcq);
}

/* The device's completion handler: any context. */
static void kdat_cq_comp(struct ib_cq *cq, void *context)
{
	struct kdat_cq *kcq = context;

	if (READ_ONCE(kcq->dead))
		return;
	kdat_cq_count(in_hardirq() || irqs_disabled() ? KDAT_CQ_SIG_IRQ :
			KDAT_CQ_SIG_INLINE);
	if (kdat_cq_task_irqs_off())
		kdat_cq_count(KDAT_CQ_SIG_IRQ_WORK);
	kdat_dev_signalled(kcq->kdev);
	kdat_cq_reap(kcq);
}

static int kdat_cq_signals_show(struct seq_file *m, void *unused)
{
	static const char * const names[KDAT_CQ_SIG_NR] = {
		[KDAT_CQ_SIG_INLINE] = "signalled_reaped",
		[KDAT_CQ_SIG_IRQ] = "signalled_irq_poll",
		[KDAT_CQ_SIG_IRQ_WORK] = "signalled_irq_work",
		[KDAT_CQ_SIG_BUDGET] = "budget_irq_poll",
	};
	unsigned long sum[KDAT_CQ_SIG_NR] = {};
	int cpu, i;

	for_each_possible_cpu(cpu)
		for (i = 0; i < KDAT_CQ_SIG_NR; i++)
			sum[i] += per_cpu(kdat_cq_signals, cpu).n[i];
	for (i = 0; i < KDAT_CQ_SIG_NR; i++)
		seq_printf(m, "%s %lu\n", names[i], sum[i]);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kdat_cq_signals);

void kdat_cq_debugfs(struct dentry *dir)
{
	debugfs_create_file("cq", 0444, dir, NULL, &kdat_cq_signals_fops);
}

/* Every EVD's, DTO or not: nothing to reap until kdat_cq_create(). */
void kdat_cq_init(struct kdat_cq *kcq)
{
	spin_lock_init(&kcq->reap_lock);
	kcq->flags = 0;
	kcq->dead = true;
	irq_poll_init(&kcq->iop, KDAT_CQ_IOP_WEIGHT, kdat_cq_iop);
	kcq->iw = IRQ_WORK_INIT_HARD(kdat_cq_iw);
}

/*
 * Make @kcq's CQ of @nr_cqe entries on @ibdev and arm it. CQs take the
 * device's completion vectors in turn, so a device with an interrupt per
 * vector spreads them over its CPUs.
 */
int kdat_cq_create(struct kdat_cq *kcq, struct kdat_device *kdev, u32 nr_cqe)
{
	static atomic_t next_vector = ATOMIC_INIT(0);
	struct ib_device *ibdev = kdev->ibdev;
	struct ib_cq_init_attr attr = { .cqe = nr_cqe };
	struct ib_cq *cq;

	if (ibdev->num_comp_vectors > 1)
		attr.comp_vector = (u32)atomic_inc_return(&next_vector) %
				   (u32)ibdev->num_comp_vectors;

	kcq->kdev = kdev;
	cq = ib_create_cq(ibdev, kdat_cq_comp, NULL, kcq, &attr);
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	kcq->cq = cq;
	WRITE_ONCE(kcq->dead, false);
	ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
	return 0;
}

/*
 * Destroy @kcq's CQ, which no QP can add to any more. Process context.
 * Once the dead flag is set no reaper touches the CQ; irq_poll_disable()
 * waits for a running irq_poll up to its irq_poll_complete(),
 * kdat_dev_flush_signals() for a device tasklet in our handler or about
 * to call it, and RCU for a reaper on its way out (bottom halves or
 * interrupts off), the irq_poll's re-arm after irq_poll_complete() and a
 * handler that queued the irq_work included, before the CQ goes: the
 * synchronize_rcu() is not optional. irq_work_sync() after it waits for
 * such an irq_work, which finds the CQ dead; a run of it on another CPU
 * that the sync does not see (queued again as it began) is in a hard
 * interrupt, an RCU reader, and the EVD holding @kcq is freed after a
 * grace period (kfree_rcu()). The device's removal
 * pays those waits once for all its CQs: it only marks them here, and
 * kdat_cq_destroy_dead() destroys them after its last object.
 */
void kdat_cq_destroy(struct kdat_cq *kcq)
{
	struct kdat_device *kdev = kcq->kdev;

	if (!kcq->cq || kcq->dead)
		return;
	spin_lock_bh(&kcq->reap_lock);
	WRITE_ONCE(kcq->dead, true);
	spin_unlock_bh(&kcq->reap_lock);
	irq_poll_disable(&kcq->iop);
	if (kdev->removing) {
		lockdep_assert_held_write(&kdev->rwsem);
		list_add_tail(&kcq->dead_node, &kdev->dead_cqs);
		return;
	}
	kdat_dev_flush_signals(kdev);
	synchronize_rcu();
	irq_work_sync(&kcq->iw);
	ib_destroy_cq(kcq->cq);
	kcq->cq = NULL;
}

/* The removal's CQs (kdat_cq_destroy()): one wait for all, then each goes. */
void kdat_cq_destroy_dead(struct kdat_device *kdev)
{
	struct kdat_cq *kcq, *next;

	lockdep_assert_held_write(&kdev->rwsem);
	if (list_empty(&kdev->dead_cqs))
		return;
	kdat_dev_flush_signals(kdev);
	synchronize_rcu();
	list_for_each_entry_safe(kcq, next, &kdev->dead_cqs, dead_node) {
		list_del(&kcq->dead_node);
		irq_work_sync(&kcq->iw);
		ib_destroy_cq(kcq->cq);
		kcq->cq = NULL;
	}
}
