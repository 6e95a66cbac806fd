// SPDX-License-Identifier: GPL-2.0
/*
 * kdat handle table and object lifetime; see the model in kdat.h.
 */
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "kdat.h"

/* Every live handle of every file. Handles are allocated cyclically. */
static DEFINE_XARRAY_ALLOC1(kdat_handles);
static u32 kdat_next_handle;

/* Live objects per type, for debugfs and the leak tests. */
static atomic_t kdat_obj_live[KDAT_OBJ_TYPE_MAX];

void *__kdat_obj_alloc(size_t size, enum kdat_obj_type type,
		       const struct kdat_obj_ops *ops)
{
	struct kdat_obj *obj;

	obj = kzalloc(size, GFP_KERNEL);
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

	ret = xa_alloc_cyclic(&kdat_handles, &obj->handle, NULL, xa_limit_31b,
			      &kdat_next_handle, GFP_KERNEL);
	if (ret < 0)
		return ret;
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

	kfile = kzalloc(sizeof(*kfile), GFP_KERNEL);
	if (!kfile)
		return NULL;
	mutex_init(&kfile->lock);
	spin_lock_init(&kfile->obj_lock);
	INIT_LIST_HEAD(&kfile->objects);
	kfile->kernel = kernel;
	kdat_file_rings_init(kfile);
	return kfile;
}

/* The owner goes: every object it still has, newest first, then itself. */
void kdat_file_release(struct kdat_file *kfile)
{
	kdat_file_destroy_all(kfile);
	kdat_file_rings_fini(kfile);
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
	wait_for_completion(&obj->released);
	if (obj->ops->destroy)
		obj->ops->destroy(obj);
	kdat_obj_free(obj);
}

/* Caller holds kfile->lock and kfile->obj_lock. */
static void kdat_obj_unlink(struct kdat_obj *obj)
{
	xa_erase(&kdat_handles, obj->handle);
	list_del_init(&obj->file_node);
}

/* Destroy an object a kernel consumer names by pointer. */
int kdat_obj_destroy_ptr(struct kdat_obj *obj)
{
	return kdat_obj_destroy(obj->file, obj->handle);
}

int kdat_obj_destroy(struct kdat_file *kfile, u32 handle)
{
	struct kdat_obj *obj;
	int ret = 0;

	mutex_lock(&kfile->lock);
	/*
	 * Only this file's objects, and those go only under its locks. The
	 * check and the unlink are one step under obj_lock: a CR published
	 * by the CM handler in between would count in its PSP's users.
	 */
	spin_lock(&kfile->obj_lock);
	obj = xa_load(&kdat_handles, handle);
	if (!obj || obj->file != kfile || list_empty(&obj->file_node)) {
		ret = -EBADF;
		goto out_unlock;
	}
	if (obj->ops->can_destroy) {
		ret = obj->ops->can_destroy(obj);
		if (ret)
			goto out_unlock;
	}
	kdat_obj_unlink(obj);
	spin_unlock(&kfile->obj_lock);
	mutex_unlock(&kfile->lock);

	kdat_obj_finish(obj);
	return 0;

out_unlock:
	spin_unlock(&kfile->obj_lock);
	mutex_unlock(&kfile->lock);
	return ret;
}

/*
 * The file is being released: no ioctl can run on it any more. Destroy
 * newest first, so every object goes before the objects it was built on.
 */
void kdat_file_destroy_all(struct kdat_file *kfile)
{
	struct kdat_obj *obj;

	for (;;) {
		mutex_lock(&kfile->lock);
		spin_lock(&kfile->obj_lock);
		obj = NULL;
		if (!list_empty(&kfile->objects)) {
			obj = list_last_entry(&kfile->objects, struct kdat_obj,
					      file_node);
			kdat_obj_unlink(obj);
		}
		spin_unlock(&kfile->obj_lock);
		mutex_unlock(&kfile->lock);
		if (!obj)
			break;
		kdat_obj_finish(obj);
	}
}

/*
 * Abrupt close of an IA: destroy every object of @kfile created on it,
 * newest first, then the IA. Objects depend only on older objects of their
 * file, and those of other IAs only through the IA's foreign_users, which
 * must be zero (EBUSY otherwise, and nothing is destroyed). The file lock
 * is dropped around each destroy, as at file release; a thread that keeps
 * creating objects on the IA meanwhile only makes the loop longer.
 */
int kdat_ia_destroy_all(struct kdat_file *kfile, u32 handle)
{
	struct kdat_obj *obj, *iaobj;
	struct kdat_ia *ia;

	mutex_lock(&kfile->lock);
	iaobj = xa_load(&kdat_handles, handle);
	if (!iaobj || iaobj->file != kfile || iaobj->type != KDAT_OBJ_IA) {
		mutex_unlock(&kfile->lock);
		return -EBADF;
	}
	ia = container_of(iaobj, struct kdat_ia, obj);
	if (atomic_read(&ia->foreign_users)) {
		mutex_unlock(&kfile->lock);
		return -EBUSY;
	}
	/* No lookup finds the IA from here on: nothing new is built on it. */
	xa_erase(&kdat_handles, iaobj->handle);
	for (;;) {
		struct kdat_obj *victim = NULL;

		spin_lock(&kfile->obj_lock);
		list_for_each_entry_reverse(obj, &kfile->objects, file_node) {
			if (obj->ia == ia && obj != iaobj) {
				victim = obj;
				break;
			}
		}
		if (victim)
			kdat_obj_unlink(victim);
		spin_unlock(&kfile->obj_lock);
		if (!victim)
			break;
		mutex_unlock(&kfile->lock);
		kdat_obj_finish(victim);
		mutex_lock(&kfile->lock);
	}
	spin_lock(&kfile->obj_lock);
	list_del_init(&iaobj->file_node);
	spin_unlock(&kfile->obj_lock);
	mutex_unlock(&kfile->lock);
	kdat_obj_finish(iaobj);
	return 0;
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
