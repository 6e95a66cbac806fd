/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kdat private umbrella header.
 *
 * Object model. Every object a process creates through /dev/kdat is a
 * struct kdat_obj embedded at the start of its type's struct. Its handle
 * lives in one global xarray (handles are unique across files); the object
 * records the file that owns it and lookups from any other file fail.
 *
 * Reference story of a kdat_obj:
 *  - kdat_obj.ref starts at 1: the reference of the handle table.
 *  - kdat_obj_get() takes a reference under RCU with kref_get_unless_zero,
 *    so a dying object is never returned; every ioctl that uses an object
 *    holds one for the duration of the call and drops it with
 *    kdat_obj_put().
 *  - Destroy (ioctl or file release) erases the handle, drops the table's
 *    reference, waits for the last in-flight user (obj->released), then
 *    frees the type's resources and the memory (after an RCU grace period,
 *    since lookups read the xarray under RCU).
 *  - An object that other objects depend on is not destroyed: destroy
 *    answers EBUSY (DAT_INVALID_STATE).
 */
#ifndef KDAT_H
#define KDAT_H

#include <linux/completion.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/types.h>
#include <rdma/ib_verbs.h>

#include <uapi/linux/kdat.h>

#define KDAT_MODNAME "kdat"

enum kdat_obj_type {
	KDAT_OBJ_IA = 1,
	KDAT_OBJ_TYPE_MAX,
};

struct kdat_obj;

struct kdat_obj_ops {
	/*
	 * May the object go now? Called with the owner's kdat_file.lock held;
	 * returns 0 or EBUSY while other objects still use it.
	 */
	int (*can_destroy)(struct kdat_obj *obj);
	/* Release the type's resources; no user is left. May sleep. */
	void (*destroy)(struct kdat_obj *obj);
};

struct kdat_file {
	/* Serialises object create and destroy; protects @objects. */
	struct mutex lock;
	/* Every live object of this file, in creation order. */
	struct list_head objects;
};

struct kdat_obj {
	struct kref ref;
	struct completion released;	/* completed when ref drops to 0 */
	const struct kdat_obj_ops *ops;
	struct kdat_file *file;		/* owner; set once, never changes */
	enum kdat_obj_type type;
	u32 handle;
	struct list_head file_node;	/* in file->objects, under file->lock */
	struct rcu_head rcu;
};

/*
 * An RDMA device as kdat sees it. Created by the ib_client add callback,
 * unlinked by the remove callback; IAs hold a reference on it and find
 * @ibdev NULL once the device is gone.
 */
struct kdat_device {
	struct kref ref;
	/*
	 * Held for read by every user of @ibdev; held for write by the remove
	 * callback, which sets @ibdev to NULL. Taken after kdat_devices_lock.
	 */
	struct rw_semaphore rwsem;
	struct ib_device *ibdev;
	/* Under kdat_devices_lock. */
	struct list_head node;
	char name[IB_DEVICE_NAME_MAX];
};

struct kdat_ia {
	struct kdat_obj obj;		/* must stay first */
	struct kdat_device *kdev;	/* reference held */
	u32 port_num;
	char name[IB_DEVICE_NAME_MAX];	/* at open time */
	__be64 node_guid;
};

/* An ioctl in flight: the kernel copy of the user's struct. */
struct kdat_ucmd {
	struct kdat_file *kfile;
	void __user *ubuffer;
	u32 user_size;
	void *cmd;
};

int kdat_ucmd_respond(struct kdat_ucmd *ucmd, size_t cmd_len);

/* kdat_obj.c */
void *__kdat_obj_alloc(size_t size, enum kdat_obj_type type,
		       const struct kdat_obj_ops *ops);
#define kdat_obj_alloc(_type, _member, _objtype, _ops)			\
	((_type *)__kdat_obj_alloc(sizeof(_type) +				\
				   BUILD_BUG_ON_ZERO(offsetof(_type, _member)), \
				   _objtype, _ops))
int kdat_obj_reserve(struct kdat_file *kfile, struct kdat_obj *obj);
void kdat_obj_publish(struct kdat_obj *obj);
void kdat_obj_abort(struct kdat_obj *obj);
struct kdat_obj *kdat_obj_get(struct kdat_file *kfile, u32 handle,
			      enum kdat_obj_type type);
void kdat_obj_put(struct kdat_obj *obj);
int kdat_obj_destroy(struct kdat_file *kfile, u32 handle);
void kdat_file_destroy_all(struct kdat_file *kfile);
int kdat_obj_count(enum kdat_obj_type type);
void kdat_obj_cleanup(void);

/* kdat_device.c */
int kdat_device_init(void);
void kdat_device_exit(void);
struct kdat_device *kdat_device_find(const char *name);
void kdat_device_put(struct kdat_device *kdev);
int kdat_device_count(void);
int kdat_cmd_device_list(struct kdat_ucmd *ucmd);

/* kdat_ia.c */
int kdat_cmd_ia_open(struct kdat_ucmd *ucmd);
int kdat_cmd_ia_query(struct kdat_ucmd *ucmd);

#endif /* KDAT_H */
