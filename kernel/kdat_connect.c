// SPDX-License-Identifier: GPL-2.0
/*
 * kdat's connects that may block, in turns by user.
 *
 * An iWARP connect is a TCP connect, and siw makes it blocking
 * (kdat_dev_connect_blocks()): one to a peer that drops SYNs returns when
 * TCP gives up, minutes later. kdat makes such a connect from a thread of
 * its own (kdat_ep_connect_run()), never from the RDMA CM's handler, and
 * so that no user holds up another's connects, not as they come:
 *
 * - at most KDAT_CONN_MAX connects are under way at once, and at most
 *   KDAT_CONN_MAX_OWNER of one owner's; the others wait in their owner's
 *   queue, in order, and the owners with connects waiting take turns for
 *   each place that frees;
 * - the owner is the user who created the EP: the effective uid, or for a
 *   user in a user namespace that an unprivileged user made (directly or
 *   further up), that user, so that the uids of one's own namespaces are
 *   one owner; the namespaces root made keep their uids apart;
 * - a connect whose attempt is given up (kdat_ep_id_put()), whose EP is
 *   being destroyed (kdat_ep_kill()) or whose device is going
 *   (kdat_conn_hurry_dev()) is cut short: one waiting
 *   leaves its queue and ends at once, connecting nothing, on the CM's
 *   queue; one under way gets SIGKILL, which ends a TCP connect's wait
 *   (its thread allows it), so that neither a file's close nor a device's
 *   removal waits for TCP.
 *
 * A connect under way has a thread (kdat_connect), which takes the next
 * connect in turn when it ends, or ends itself: at most
 * KDAT_CONN_MAX such threads, the one kernel memory here not charged to
 * a user (the kernel makes threads for itself), bounded for all of them
 * together. The owners are charged to the user who first needs them
 * (kdat_conn_owner_get(), from the EP's creation); a connect waiting is
 * its EP, charged to its creator.
 *
 * kdat_conn_lock (a spinlock, taken under an EP's cm_lock, never the
 * other way round) guards the owners, their queues and counts, and each
 * EP's conn_state, conn_hurry and conn_task.
 */
#include <linux/cred.h>
#include <linux/hashtable.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/user_namespace.h>

#include "kdat.h"

#define KDAT_CONN_MAX		256
#define KDAT_CONN_MAX_OWNER	16

struct kdat_conn_owner {
	kuid_t uid;
	unsigned int refs;		/* EPs that name it */
	unsigned int running;		/* its connects under way */
	struct list_head waiting;	/* its EPs waiting, in order */
	struct list_head turn_node;	/* in kdat_conn_turns, while waiting */
	struct hlist_node hash_node;	/* in kdat_conn_owners */
};

static DEFINE_SPINLOCK(kdat_conn_lock);
static DEFINE_HASHTABLE(kdat_conn_owners, 6);
/* Owners with connects waiting, the next turn first. */
static LIST_HEAD(kdat_conn_turns);
/* EPs whose connect is under way. */
static LIST_HEAD(kdat_conn_running);
static unsigned int kdat_conn_nr_running;

/* Whose turn the caller's connects take. */
static kuid_t kdat_conn_owner_uid(const struct cred *cred)
{
	const struct user_namespace *ns = cred->user_ns;

	if (ns == &init_user_ns)
		return cred->euid;
	while (ns->parent != &init_user_ns)
		ns = ns->parent;
	/* Root's namespaces map uids root gave out: each is a user. */
	return uid_eq(ns->owner, GLOBAL_ROOT_UID) ? cred->euid : ns->owner;
}

static struct kdat_conn_owner *kdat_conn_owner_find(kuid_t uid)
{
	struct kdat_conn_owner *owner;

	lockdep_assert_held(&kdat_conn_lock);
	hash_for_each_possible(kdat_conn_owners, owner, hash_node,
			       __kuid_val(uid))
		if (uid_eq(owner->uid, uid))
			return owner;
	return NULL;
}

/**
 * kdat_conn_owner_get() - the caller's connect owner, with a reference
 *
 * Made, and charged to the caller, if no EP names it yet. NULL when it
 * cannot be made.
 */
struct kdat_conn_owner *kdat_conn_owner_get(void)
{
	kuid_t uid = kdat_conn_owner_uid(current_cred());
	struct kdat_conn_owner *owner, *fresh;

	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL_ACCOUNT);
	spin_lock(&kdat_conn_lock);
	owner = kdat_conn_owner_find(uid);
	if (!owner && fresh) {
		owner = fresh;
		fresh = NULL;
		owner->uid = uid;
		INIT_LIST_HEAD(&owner->waiting);
		INIT_LIST_HEAD(&owner->turn_node);
		hash_add(kdat_conn_owners, &owner->hash_node, __kuid_val(uid));
	}
	if (owner)
		owner->refs++;
	spin_unlock(&kdat_conn_lock);
	kfree(fresh);
	return owner;
}

/* An EP that named @owner is gone: no connect of it waits or runs. */
void kdat_conn_owner_put(struct kdat_conn_owner *owner)
{
	bool last;

	if (!owner)
		return;
	spin_lock(&kdat_conn_lock);
	last = !--owner->refs;
	if (last) {
		WARN_ON_ONCE(owner->running || !list_empty(&owner->waiting));
		hash_del(&owner->hash_node);
	}
	spin_unlock(&kdat_conn_lock);
	if (last)
		kfree(owner);
}

/* @ep's connect takes a place under way, for the thread @task. */
static void kdat_conn_run_locked(struct kdat_ep *ep, struct task_struct *task)
{
	lockdep_assert_held(&kdat_conn_lock);
	ep->conn_owner->running++;
	kdat_conn_nr_running++;
	ep->conn_state = KDAT_CONN_UNDER_WAY;
	ep->conn_task = task;
	list_add_tail(&ep->conn_node, &kdat_conn_running);
}

/* The next connect in turn, now under way on @task's thread, or NULL. */
static struct kdat_ep *kdat_conn_next_locked(struct task_struct *task)
{
	struct kdat_conn_owner *owner;
	struct kdat_ep *ep;

	lockdep_assert_held(&kdat_conn_lock);
	if (kdat_conn_nr_running >= KDAT_CONN_MAX)
		return NULL;
	/* Owners at their limit: at most KDAT_CONN_MAX / MAX_OWNER. */
	list_for_each_entry(owner, &kdat_conn_turns, turn_node) {
		if (owner->running >= KDAT_CONN_MAX_OWNER)
			continue;
		ep = list_first_entry(&owner->waiting, struct kdat_ep,
				      conn_node);
		list_del(&ep->conn_node);
		if (list_empty(&owner->waiting))
			list_del_init(&owner->turn_node);
		else
			list_move_tail(&owner->turn_node, &kdat_conn_turns);
		kdat_conn_run_locked(ep, task);
		return ep;
	}
	return NULL;
}

/*
 * @ep's connect is no longer under way (or never was): its place, if it
 * had one, is free, and the signal that may have cut it short is gone.
 */
static void kdat_conn_stop_locked(struct kdat_ep *ep)
{
	lockdep_assert_held(&kdat_conn_lock);
	if (ep->conn_state != KDAT_CONN_UNDER_WAY)
		return;
	list_del(&ep->conn_node);
	ep->conn_owner->running--;
	kdat_conn_nr_running--;
	ep->conn_state = KDAT_CONN_IDLE;
	if (ep->conn_task == current)
		flush_signals(current);
	ep->conn_task = NULL;
}

static int kdat_conn_thread(void *arg)
{
	struct kdat_ep *ep = arg;

	/* Removal and a given-up attempt cut a TCP connect short. */
	allow_signal(SIGKILL);
	while (ep) {
		/* Calls kdat_conn_done(), then lets the EP go. */
		kdat_ep_connect_run(ep);
		spin_lock(&kdat_conn_lock);
		ep = kdat_conn_next_locked(current);
		spin_unlock(&kdat_conn_lock);
	}
	module_put_and_kthread_exit(0);
}

/*
 * @ep took a place under way (counted, conn_task NULL): a thread makes
 * its connect; if none can be made, it connects nothing (conn_hurry), on
 * the CM's queue, and the next in turn gets the place.
 */
static void kdat_conn_start(struct kdat_ep *ep)
{
	struct task_struct *task;

	while (ep) {
		task = kthread_create(kdat_conn_thread, ep, "kdat_connect");
		if (!IS_ERR(task)) {
			/* The thread runs module code to its end. */
			__module_get(THIS_MODULE);
			spin_lock(&kdat_conn_lock);
			/* Before it runs: one that hurries signals it. */
			ep->conn_task = task;
			spin_unlock(&kdat_conn_lock);
			wake_up_process(task);
			return;
		}
		spin_lock(&kdat_conn_lock);
		kdat_conn_stop_locked(ep);
		ep->conn_hurry = true;
		kdat_cm_defer(&ep->connect_work);
		ep = kdat_conn_next_locked(NULL);
		spin_unlock(&kdat_conn_lock);
	}
}

/**
 * kdat_conn_submit() - queue @ep's connect, in its owner's turn
 * @ep: an EP with a reference for its connect, counted on its device
 *	(kdat_dev_connect_begin()), ep->connecting set
 *
 * kdat_ep_connect_run() makes it, or makes nothing at once for a device
 * that is going.
 */
void kdat_conn_submit(struct kdat_ep *ep)
{
	struct kdat_conn_owner *owner = ep->conn_owner;
	bool now = false;

	spin_lock(&kdat_conn_lock);
	ep->conn_hurry = false;
	if (READ_ONCE(ep->pz->ia->kdev->no_connects) ||
	    READ_ONCE(ep->obj.dead)) {
		/*
		 * Its device's removal or its own destruction waits, and
		 * kdat_conn_hurry_dev() or kdat_ep_kill() has been.
		 */
		ep->conn_hurry = true;
		kdat_cm_defer(&ep->connect_work);
	} else if (list_empty(&owner->waiting) &&
		   owner->running < KDAT_CONN_MAX_OWNER &&
		   kdat_conn_nr_running < KDAT_CONN_MAX) {
		kdat_conn_run_locked(ep, NULL);
		now = true;
	} else {
		ep->conn_state = KDAT_CONN_WAITING;
		list_add_tail(&ep->conn_node, &owner->waiting);
		if (list_empty(&owner->turn_node))
			list_add_tail(&owner->turn_node, &kdat_conn_turns);
	}
	spin_unlock(&kdat_conn_lock);
	if (now)
		kdat_conn_start(ep);
}

static void kdat_conn_hurry_locked(struct kdat_ep *ep)
{
	lockdep_assert_held(&kdat_conn_lock);
	ep->conn_hurry = true;
	if (ep->conn_state == KDAT_CONN_WAITING) {
		struct kdat_conn_owner *owner = ep->conn_owner;

		list_del(&ep->conn_node);
		if (list_empty(&owner->waiting))
			list_del_init(&owner->turn_node);
		ep->conn_state = KDAT_CONN_IDLE;
		kdat_cm_defer(&ep->connect_work);
	} else if (ep->conn_state == KDAT_CONN_UNDER_WAY &&
		   ep->conn_task) {
		send_sig(SIGKILL, ep->conn_task, 1);
	}
}

/**
 * kdat_conn_hurry() - cut short a connect, waiting or under way
 * @ep: the EP whose attempt was given up
 *
 * Its attempt was given up (kdat_ep_id_put(), cm_lock held), or the EP is
 * being destroyed (kdat_ep_kill()): the connect ends soon, connecting
 * nothing.
 */
void kdat_conn_hurry(struct kdat_ep *ep)
{
	/* Set at creation: an EP whose connects never block has none. */
	if (!ep->conn_owner)
		return;
	spin_lock(&kdat_conn_lock);
	kdat_conn_hurry_locked(ep);
	spin_unlock(&kdat_conn_lock);
}

/*
 * @kdev is going (its no_connects set, then this): every connect on it,
 * waiting or under way, is cut short, and kdat_conn_submit() cuts short
 * the ones still to come.
 */
void kdat_conn_hurry_dev(struct kdat_device *kdev)
{
	struct kdat_conn_owner *owner, *o_next;
	struct kdat_ep *ep, *next;

	spin_lock(&kdat_conn_lock);
	list_for_each_entry(ep, &kdat_conn_running, conn_node)
		if (ep->pz->ia->kdev == kdev)
			kdat_conn_hurry_locked(ep);
	list_for_each_entry_safe(owner, o_next, &kdat_conn_turns, turn_node)
		list_for_each_entry_safe(ep, next, &owner->waiting, conn_node)
			if (ep->pz->ia->kdev == kdev)
				kdat_conn_hurry_locked(ep);
	spin_unlock(&kdat_conn_lock);
}

/*
 * kdat_ep_connect_run()'s connect returned: was it cut short (or never to
 * be made)? Its place is free from here.
 */
bool kdat_conn_done(struct kdat_ep *ep)
{
	bool hurried;

	spin_lock(&kdat_conn_lock);
	kdat_conn_stop_locked(ep);
	hurried = ep->conn_hurry;
	spin_unlock(&kdat_conn_lock);
	return hurried;
}

/* Is @ep's connect cut short? Read before it is made. */
bool kdat_conn_hurried(struct kdat_ep *ep)
{
	bool hurried;

	spin_lock(&kdat_conn_lock);
	hurried = ep->conn_hurry;
	spin_unlock(&kdat_conn_lock);
	return hurried;
}
