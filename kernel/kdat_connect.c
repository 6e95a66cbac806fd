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
 * - the owner is the user who created the EP (kdat_conn_owner_key()):
 *   the effective uid; in a user namespace an unprivileged user made, that
 *   user; in one root made (a tenant's), the namespace; a kernel
 *   consumer, each IA of its own (kdat_ia_open());
 * - a connect whose attempt is given up (kdat_ep_disconnect_do(),
 *   kdat_ep_id_put()), whose EP is being destroyed (kdat_ep_kill()) or
 *   whose device is going (kdat_conn_hurry_dev()) is cut short: one
 *   waiting leaves its queue and ends at once, connecting nothing, on the
 *   CM's queue; one under way gets SIGKILL, which ends a TCP connect's
 *   wait (its thread takes it from the kernel only, not from kill(2)), so
 *   that neither a file's close nor a device's removal waits for TCP. To a
 *   kernel thread SIGKILL is not fatal: it ends the interruptible waits
 *   (TCP's connect: siw's), not the killable or uninterruptible ones (an
 *   iWARP port mapper's; what a driver's connect waits for after TCP).
 *
 * A connect under way has a thread (kdat_connect), made on kdat's CM
 * queue, which keeps its place, counted as its owner's, until its connect
 * is done with (the RDMA CM id of one given up destroyed too, which may
 * wait for the peer), then takes the next connect in turn, or ends itself: at most KDAT_CONN_MAX such threads, the one
 * kernel memory here not charged to a user (the kernel makes threads for
 * itself), bounded for all users together. The owners are charged to the
 * user who first needs them (kdat_conn_owner_get(), from the EP's
 * creation); a connect waiting is its EP, charged to its creator.
 *
 * kdat_conn_lock (a spinlock, taken under an EP's cm_lock, never the
 * other way round) guards the owners, their queues and counts, the
 * places, and each EP's conn_state, conn_hurry and conn_task.
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

/* Who an owner is: a user, a namespace's tenant, a kernel consumer. */
enum kdat_conn_kind {
	KDAT_CONN_UID,			/* @key: an effective uid */
	KDAT_CONN_NS,			/* @key: the user namespace, pinned */
	KDAT_CONN_KERNEL,		/* @key: the consumer's IA file */
};

struct kdat_conn_owner {
	enum kdat_conn_kind kind;
	unsigned long key;
	struct user_namespace *ns;	/* KDAT_CONN_NS: held */
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
/*
 * Places taken: kdat_connect threads, and threads about to be made
 * (kdat_conn_start_work()). A thread keeps its place from one connect to
 * the next in turn, so a place freed goes to the owners waiting.
 */
static unsigned int kdat_conn_places;

/*
 * Whose turn the connects of @kfile's EPs take: a kernel consumer's IA
 * file, its own; else the effective uid's; in a user namespace, the
 * namespace's creator when an unprivileged user made the outermost one (a
 * user's namespaces, however many, are that user), else that outermost
 * namespace (a tenant root gave its own uids, which the tenant may
 * multiply), held by its owner so that no later namespace takes its key.
 */
static enum kdat_conn_kind kdat_conn_owner_key(const struct cred *cred,
					       struct kdat_file *kfile,
					       unsigned long *key)
{
	const struct user_namespace *ns = cred->user_ns;

	if (kfile->kernel) {
		*key = (unsigned long)kfile;
		return KDAT_CONN_KERNEL;
	}
	if (ns == &init_user_ns) {
		*key = __kuid_val(cred->euid);
		return KDAT_CONN_UID;
	}
	while (ns->parent != &init_user_ns)
		ns = ns->parent;
	if (!uid_eq(ns->owner, GLOBAL_ROOT_UID)) {
		*key = __kuid_val(ns->owner);
		return KDAT_CONN_UID;
	}
	*key = (unsigned long)ns;
	return KDAT_CONN_NS;
}

static struct kdat_conn_owner *kdat_conn_owner_find(enum kdat_conn_kind kind,
						    unsigned long key)
{
	struct kdat_conn_owner *owner;

	lockdep_assert_held(&kdat_conn_lock);
	hash_for_each_possible(kdat_conn_owners, owner, hash_node, key)
		if (owner->kind == kind && owner->key == key)
			return owner;
	return NULL;
}

/**
 * kdat_conn_owner_get() - the connect owner of the caller's EP, referenced
 * @kfile: the EP's file
 *
 * Made, and charged to the caller, if no EP names it yet. NULL when it
 * cannot be made.
 */
struct kdat_conn_owner *kdat_conn_owner_get(struct kdat_file *kfile)
{
	struct kdat_conn_owner *owner, *fresh;
	enum kdat_conn_kind kind;
	unsigned long key;

	kind = kdat_conn_owner_key(current_cred(), kfile, &key);
	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL_ACCOUNT);
	spin_lock(&kdat_conn_lock);
	owner = kdat_conn_owner_find(kind, key);
	if (!owner && fresh) {
		owner = fresh;
		fresh = NULL;
		owner->kind = kind;
		owner->key = key;
		/* Ours, and alive: the caller's credentials hold it. */
		if (kind == KDAT_CONN_NS)
			owner->ns = get_user_ns((struct user_namespace *)key);
		INIT_LIST_HEAD(&owner->waiting);
		INIT_LIST_HEAD(&owner->turn_node);
		hash_add(kdat_conn_owners, &owner->hash_node, key);
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
	if (last) {
		if (owner->ns)
			put_user_ns(owner->ns);
		kfree(owner);
	}
}

/* @ep's connect is under way, made by the thread @task (NULL: to come). */
static void kdat_conn_run_locked(struct kdat_ep *ep, struct task_struct *task)
{
	lockdep_assert_held(&kdat_conn_lock);
	ep->conn_owner->running++;
	ep->conn_state = KDAT_CONN_UNDER_WAY;
	ep->conn_task = task;
	list_add_tail(&ep->conn_node, &kdat_conn_running);
}

/*
 * The next connect in turn, now under way for @task, in the place its
 * caller holds; NULL when every owner waiting has KDAT_CONN_MAX_OWNER
 * under way (at most KDAT_CONN_MAX / KDAT_CONN_MAX_OWNER owners: a short
 * walk).
 */
static struct kdat_ep *kdat_conn_next_locked(struct task_struct *task)
{
	struct kdat_conn_owner *owner;
	struct kdat_ep *ep;

	lockdep_assert_held(&kdat_conn_lock);
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
 * @ep's connect is no longer under way (or never was); its owner may have
 * one more under way, and the signal that may have cut it short is gone.
 */
static void kdat_conn_stop_locked(struct kdat_ep *ep)
{
	lockdep_assert_held(&kdat_conn_lock);
	if (ep->conn_state != KDAT_CONN_UNDER_WAY)
		return;
	list_del(&ep->conn_node);
	ep->conn_owner->running--;
	ep->conn_state = KDAT_CONN_IDLE;
	if (ep->conn_task == current)
		flush_signals(current);
	ep->conn_task = NULL;
}

/* Places free, and connects waiting that may take them: threads for them. */
static void kdat_conn_fill_locked(void)
{
	struct kdat_ep *next;

	lockdep_assert_held(&kdat_conn_lock);
	while (kdat_conn_places < KDAT_CONN_MAX &&
	       (next = kdat_conn_next_locked(NULL))) {
		kdat_conn_places++;
		kdat_cm_defer(&next->conn_start_work);
	}
}

static int kdat_conn_thread(void *arg)
{
	struct kdat_ep *ep = arg;

	/* Removal and a given-up attempt cut a TCP connect short; no user. */
	allow_kernel_signal(SIGKILL);
	while (ep) {
		/* Calls kdat_conn_done(), then lets the EP go. */
		kdat_ep_connect_run(ep);
		spin_lock(&kdat_conn_lock);
		ep = kdat_conn_next_locked(current);
		if (!ep)
			kdat_conn_places--;
		/* Places a failed fork left free (kdat_conn_start_work()). */
		kdat_conn_fill_locked();
		spin_unlock(&kdat_conn_lock);
	}
	module_put_and_kthread_exit(0);
}

/*
 * A place and @ep's connect under way (conn_task NULL): its thread. Made
 * here, on kdat's queue, not in the RDMA CM's handler, whose queue every
 * connection of the host shares (a fork may wait for reclaim). If none
 * can be made, @ep connects nothing (conn_hurry: UNREACHABLE) and gives
 * its place back. The connects waiting stay in turn: the threads there
 * are fill the free places again as each connect of theirs ends; with
 * none left, the free places go to the next in turn now
 * (kdat_conn_fill_locked()), each of which a failure ends alone.
 */
static void kdat_conn_start_work(struct work_struct *work)
{
	struct kdat_ep *ep = container_of(work, struct kdat_ep,
					  conn_start_work);
	struct task_struct *task;

	task = kthread_create(kdat_conn_thread, ep, "kdat_connect");
	spin_lock(&kdat_conn_lock);
	if (!IS_ERR(task)) {
		/* The thread runs module code to its end. */
		__module_get(THIS_MODULE);
		/*
		 * One that hurries @ep from here signals the thread. Until
		 * the thread allows SIGKILL, the signal is dropped: what cuts
		 * the connect short then is conn_hurry, which
		 * kdat_ep_connect_run() reads under kdat_conn_lock after that
		 * (kdat_conn_hurried()). Neither may move.
		 */
		ep->conn_task = task;
	} else {
		kdat_conn_stop_locked(ep);
		ep->conn_hurry = true;
		kdat_cm_defer(&ep->connect_work);
		if (!--kdat_conn_places)
			kdat_conn_fill_locked();
	}
	spin_unlock(&kdat_conn_lock);
	if (!IS_ERR(task))
		wake_up_process(task);
}

/* What a new EP needs here. */
void kdat_conn_init_ep(struct kdat_ep *ep)
{
	INIT_LIST_HEAD(&ep->conn_node);
	INIT_WORK(&ep->conn_start_work, kdat_conn_start_work);
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
		   kdat_conn_places < KDAT_CONN_MAX) {
		kdat_conn_places++;
		kdat_conn_run_locked(ep, NULL);
		kdat_cm_defer(&ep->conn_start_work);
	} else {
		ep->conn_state = KDAT_CONN_WAITING;
		list_add_tail(&ep->conn_node, &owner->waiting);
		if (list_empty(&owner->turn_node))
			list_add_tail(&owner->turn_node, &kdat_conn_turns);
	}
	spin_unlock(&kdat_conn_lock);
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
 * kdat_ep_connect_run() is done with @ep's connect (made, or never to be
 * made, and the RDMA CM id of one given up destroyed): its owner may have
 * one more under way.
 */
void kdat_conn_done(struct kdat_ep *ep)
{
	spin_lock(&kdat_conn_lock);
	kdat_conn_stop_locked(ep);
	spin_unlock(&kdat_conn_lock);
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
