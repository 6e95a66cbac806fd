// SPDX-License-Identifier: GPL-2.0
/*
 * kdat handle table and object lifetime; see the model in kdat.h.
 */
#include <linux/module.h>
#include <linux/nsproxy.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <net/net_namespace.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "kdat.h"

static unsigned int max_objects = 16384;
module_param(max_objects, uint, 0644);
MODULE_PARM_DESC(max_objects,
		 "objects one open /dev/kdat may have at once (ENOMEM past it)");

/* Every live handle of every file. Handles are allocated cyclically. */
static DEFINE_XARRAY_ALLOC1(kdat_handles);
static u32 kdat_next_handle;

/* A sweep waits here for a victim whose last user is being destroyed. */
static DECLARE_WAIT_QUEUE_HEAD(kdat_unused_wq);

/* Some object's users fell to 0 (kdat_obj_unuse()). */
void kdat_obj_unused(void)
{
	if (wq_has_sleeper(&kdat_unused_wq))
		wake_up_all(&kdat_unused_wq);
}

/*
 * Wait until nothing uses @obj: for an unlinked object whose users may
 * still grow (a datagram posted through an AH by a thread that found it
 * just before it was unlinked) and fall back on their own.
 */
void kdat_obj_wait_unused(struct kdat_obj *obj)
{
	/*
	 * Untimed: a use that never goes is a bug the hung-task detector
	 * should name, not hide in a loop of timed waits.
	 */
	wait_event(kdat_unused_wq, !atomic_read(&obj->users));
}

/* Live objects per type, for debugfs and the leak tests. */
static atomic_t kdat_obj_live[KDAT_OBJ_TYPE_MAX];

void *__kdat_obj_alloc(size_t size, enum kdat_obj_type type,
		       const struct kdat_obj_ops *ops)
{
	struct kdat_obj *obj;

	obj = kzalloc(size, GFP_KERNEL_ACCOUNT);
	if (!obj)
		return NULL;
	kref_init(&obj->ref);
	init_completion(&obj->released);
	INIT_LIST_HEAD(&obj->file_node);
	obj->type = type;
	obj->ops = ops;
	atomic_inc(&kdat_obj_live[type]);
	return obj;
}

static void kdat_obj_free(struct kdat_obj *obj)
{
	if (obj->file)
		atomic_dec(&obj->file->nr_objects);
	atomic_dec(&kdat_obj_live[obj->type]);
	kfree_rcu(obj, rcu);
}

/*
 * Reserve a handle for @obj, created on @ia, in @kfile. The handle resolves
 * to nothing until kdat_obj_publish(); kdat_obj_abort() gives it back and
 * frees @obj.
 */
int kdat_obj_reserve(struct kdat_file *kfile, struct kdat_obj *obj,
		     struct kdat_ia *ia)
{
	int ret;

	if (atomic_inc_return(&kfile->nr_objects) > max_objects &&
	    !kfile->kernel) {
		atomic_dec(&kfile->nr_objects);
		return -ENOMEM;
	}
	ret = xa_alloc_cyclic(&kdat_handles, &obj->handle, NULL, xa_limit_31b,
			      &kdat_next_handle, GFP_KERNEL_ACCOUNT);
	if (ret < 0) {
		atomic_dec(&kfile->nr_objects);
		return ret;
	}
	obj->file = kfile;
	obj->ia = ia;
	return 0;
}

/* Make a built object visible; obj->file->obj_lock held. */
void kdat_obj_publish_obj_locked(struct kdat_obj *obj)
{
	void *old;

	lockdep_assert_held(&obj->file->obj_lock);
	list_add_tail(&obj->file_node, &obj->file->objects);
	/* Storing over a reserved slot never allocates nor fails. */
	old = xa_store(&kdat_handles, obj->handle, obj, GFP_NOWAIT);
	WARN_ON(old);
}

/* Make a fully built object visible; the caller holds its file's lock. */
void kdat_obj_publish_locked(struct kdat_obj *obj)
{
	lockdep_assert_held(&obj->file->lock);
	spin_lock(&obj->file->obj_lock);
	kdat_obj_publish_obj_locked(obj);
	spin_unlock(&obj->file->obj_lock);
}

/* Make a fully built object visible. */
void kdat_obj_publish(struct kdat_obj *obj)
{
	struct kdat_file *kfile = obj->file;

	mutex_lock(&kfile->lock);
	kdat_obj_publish_locked(obj);
	mutex_unlock(&kfile->lock);
}

/* Undo kdat_obj_reserve() for an object that was never published. */
void kdat_obj_abort(struct kdat_obj *obj)
{
	if (obj->file)
		xa_erase(&kdat_handles, obj->handle);
	kdat_obj_free(obj);
}

/*
 * Undo a built, reserved, unpublished object: its destroy op releases
 * what it holds (the create functions leave an object in the state its
 * destroy expects before they return it), then the handle goes.
 */
void kdat_obj_discard(struct kdat_obj *obj)
{
	if (obj->ops->destroy)
		obj->ops->destroy(obj);
	kdat_obj_abort(obj);
}

struct kdat_file *kdat_file_create(bool kernel)
{
	struct kdat_file *kfile;

	kfile = kzalloc(sizeof(*kfile), GFP_KERNEL_ACCOUNT);
	if (!kfile)
		return NULL;
	mutex_init(&kfile->lock);
	spin_lock_init(&kfile->obj_lock);
	INIT_LIST_HEAD(&kfile->objects);
	kfile->kernel = kernel;
	kfile->tgid = kernel ? 0 : task_tgid_nr(current);
	kfile->pid = kernel ? NULL : get_pid(task_tgid(current));
	if (!kernel)
		get_task_comm(kfile->comm, current);
	kfile->net = get_net(kernel ? &init_net : current->nsproxy->net_ns);
	kdat_file_rings_init(kfile);
	return kfile;
}

/* The owner goes: every object it still has, newest first, then itself. */
void kdat_file_release(struct kdat_file *kfile)
{
	kdat_file_destroy_all(kfile);
	kdat_file_rings_fini(kfile);
	put_net(kfile->net);
	put_pid(kfile->pid);
	mutex_destroy(&kfile->lock);
	kfree(kfile);
}

struct kdat_obj *kdat_obj_get(struct kdat_file *kfile, u32 handle,
			      enum kdat_obj_type type)
{
	struct kdat_obj *obj;

	rcu_read_lock();
	obj = xa_load(&kdat_handles, handle);
	if (obj && (obj->file != kfile || obj->type != type ||
		    !kref_get_unless_zero(&obj->ref)))
		obj = NULL;
	rcu_read_unlock();
	return obj;
}

static void kdat_obj_release(struct kref *ref)
{
	struct kdat_obj *obj = container_of(ref, struct kdat_obj, ref);

	complete(&obj->released);
}

void kdat_obj_put(struct kdat_obj *obj)
{
	kref_put(&obj->ref, kdat_obj_release);
}

/*
 * The handle is gone and @obj is off its file's list: drop the table's
 * reference, wait for in-flight users, free.
 */
static void kdat_obj_finish(struct kdat_obj *obj)
{
	kdat_obj_put(obj);
	/*
	 * Sleepers holding a reference (EVD and CNO waits) give it back, and
	 * an EP's connect that may block is cut short.
	 */
	if (obj->ops->kill)
		obj->ops->kill(obj);
	/*
	 * Other users give it back soon. Idle all the same: a driver's
	 * connect may not heed being cut short (kdat_connect.c), and the
	 * hung-task watch ignores an idle wait.
	 */
	wait_for_completion_state(&obj->released, TASK_IDLE);
	if (obj->ops->destroy)
		obj->ops->destroy(obj);
	kdat_obj_free(obj);
}

/*
 * Make @obj unreachable: no handle finds it, nothing new is built on it,
 * the CM handler gives its PSP no new CR. It moves from its file's list to
 * @victims. Caller holds kfile->lock and kfile->obj_lock.
 */
static void kdat_obj_unlink(struct kdat_obj *obj, struct list_head *victims)
{
	lockdep_assert_held(&obj->file->lock);
	lockdep_assert_held(&obj->file->obj_lock);
	xa_erase(&kdat_handles, obj->handle);
	WRITE_ONCE(obj->dead, true);
	list_move_tail(&obj->file_node, victims);
}

/* Published and not unlinked; caller holds obj->file->obj_lock. */
bool kdat_obj_alive(struct kdat_obj *obj)
{
	lockdep_assert_held(&obj->file->obj_lock);
	return !obj->dead && !list_empty(&obj->file_node);
}

/* The newest of @victims that nothing uses, or NULL. */
static struct kdat_obj *kdat_obj_sweep_next(struct list_head *victims)
{
	struct kdat_obj *obj;

	list_for_each_entry_reverse(obj, victims, file_node)
		if (!atomic_read(&obj->users))
			return obj;
	return NULL;
}

/*
 * Destroy @victims, unlinked objects, each once nothing points at it any
 * more, newest first. Any order of creates and modifies leaves a victim
 * without users: uses only point at objects of the same file and form no
 * cycle (each pointer is to an object that existed when it was set), and
 * the victims are closed under "used by" (a whole file, or an IA without
 * foreign users) but for objects that other threads were destroying when
 * the victims were unlinked: their uses go when those destroys finish,
 * which the sweep waits for, however long their drains take. Nothing is
 * ever freed while something points at it.
 */
static void kdat_obj_sweep(struct list_head *victims)
{
	struct kdat_obj *next;

	while (!list_empty(victims)) {
		/* Untimed, as in kdat_obj_wait_unused(). */
		wait_event(kdat_unused_wq, kdat_obj_sweep_next(victims));
		next = kdat_obj_sweep_next(victims);
		list_del_init(&next->file_node);
		kdat_obj_finish(next);
	}
}

/*
 * Find @handle among @kfile's published objects; NULL otherwise. The
 * object stays valid while the caller holds kfile->lock or obj_lock (only
 * they unlink it); the RCU section covers the reads of another file's
 * object, which may be freed meanwhile.
 */
static struct kdat_obj *kdat_obj_find_locked(struct kdat_file *kfile,
					     u32 handle)
{
	struct kdat_obj *obj;

	lockdep_assert_held(&kfile->obj_lock);
	rcu_read_lock();
	obj = xa_load(&kdat_handles, handle);
	if (obj && (obj->file != kfile || !kdat_obj_alive(obj)))
		obj = NULL;
	rcu_read_unlock();
	return obj;
}

/* Destroy an object a kernel consumer names by pointer. */
int kdat_obj_destroy_ptr(struct kdat_obj *obj)
{
	return kdat_obj_destroy(obj->file, obj->handle);
}

int kdat_obj_destroy(struct kdat_file *kfile, u32 handle)
{
	struct kdat_obj *obj;
	LIST_HEAD(victim);
	int ret = 0;

	mutex_lock(&kfile->lock);
	/*
	 * Only this file's objects, and those go only under its locks. The
	 * check and the unlink are one step under obj_lock: a CR published
	 * by the CM handler in between would count in its PSP's users.
	 */
	spin_lock(&kfile->obj_lock);
	obj = kdat_obj_find_locked(kfile, handle);
	if (!obj)
		ret = -EBADF;
	else if (atomic_read(&obj->users))
		ret = -EBUSY;
	else
		kdat_obj_unlink(obj, &victim);
	spin_unlock(&kfile->obj_lock);
	mutex_unlock(&kfile->lock);

	if (!ret)
		kdat_obj_sweep(&victim);
	return ret;
}

/* The file is being released: no ioctl can run on it any more. */
void kdat_file_destroy_all(struct kdat_file *kfile)
{
	struct kdat_obj *obj, *tmp;
	LIST_HEAD(victims);

	mutex_lock(&kfile->lock);
	spin_lock(&kfile->obj_lock);
	list_for_each_entry_safe(obj, tmp, &kfile->objects, file_node)
		kdat_obj_unlink(obj, &victims);
	spin_unlock(&kfile->obj_lock);
	mutex_unlock(&kfile->lock);
	kdat_obj_sweep(&victims);
}

/*
 * Abrupt close of an IA: every object of @kfile created on it, then the
 * IA. Refused (EBUSY, nothing destroyed) while objects of other IAs use
 * them (foreign_users). The check and the unlinking of every victim are
 * one step under the file's locks, and every use is made under the file
 * lock: once they are dropped no thread can find a victim or build on
 * one, so the sweep needs no lock.
 */
int kdat_ia_destroy_all(struct kdat_file *kfile, u32 handle)
{
	struct kdat_obj *obj, *tmp, *iaobj;
	LIST_HEAD(victims);
	struct kdat_ia *ia;
	int ret = 0;

	mutex_lock(&kfile->lock);
	spin_lock(&kfile->obj_lock);
	iaobj = kdat_obj_find_locked(kfile, handle);
	if (!iaobj || iaobj->type != KDAT_OBJ_IA) {
		ret = -EBADF;
		goto out_unlock;
	}
	ia = container_of(iaobj, struct kdat_ia, obj);
	if (atomic_read(&ia->foreign_users)) {
		ret = -EBUSY;
		goto out_unlock;
	}
	list_for_each_entry_safe(obj, tmp, &kfile->objects, file_node)
		if (obj->ia == ia)
			kdat_obj_unlink(obj, &victims);
out_unlock:
	spin_unlock(&kfile->obj_lock);
	mutex_unlock(&kfile->lock);
	if (!ret)
		kdat_obj_sweep(&victims);
	return ret;
}

/*
 * The live object of any file with the lowest handle >= *@index, with a
 * reference, its handle in *@index; NULL past the last. For the status
 * dump, which checks whose it is.
 */
struct kdat_obj *kdat_obj_next(unsigned long *index)
{
	struct kdat_obj *obj;

	rcu_read_lock();
	for (;;) {
		obj = xa_find(&kdat_handles, index, U32_MAX, XA_PRESENT);
		if (!obj || kref_get_unless_zero(&obj->ref))
			break;
		(*index)++;
	}
	rcu_read_unlock();
	return obj;
}

int kdat_obj_count(enum kdat_obj_type type)
{
	return atomic_read(&kdat_obj_live[type]);
}

/* Module exit: every file is closed, so the table must be empty. */
void kdat_obj_cleanup(void)
{
	WARN_ON(!xa_empty(&kdat_handles));
	xa_destroy(&kdat_handles);
}
