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
 *
 * Dependencies. Every pointer from one object to another (an EP to its
 * PZ, EVDs and SRQ, an EVD to its CNO, a PSP to its EVD, a CR to its PSP,
 * an AH to its EP, a datagram in flight to its AH, any object to its IA,
 * ...) is counted in the target's kdat_obj.users:
 * kdat_obj_use() when the pointer is set (at create, under the file lock,
 * or at modify), kdat_obj_unuse() when it is dropped (in the pointing
 * object's destroy, or the modify that changes it). The rule has no
 * exceptions:
 *  - destroy of an object with users answers EBUSY (DAT_INVALID_STATE);
 *  - the sweeps (file release, abrupt IA close) first make every victim
 *    unreachable (handle erased, obj->dead set, in one step under the file
 *    locks), then destroy, newest first, each victim that nothing uses any
 *    more, whatever the order in which the pointers were made;
 *  - a use that crosses IAs (an EP of IA2 on an EVD of IA1, an EVD on
 *    another IA's CNO) is also counted in the target IA's foreign_users,
 *    and an abrupt close of an IA whose objects others use is refused.
 * Creates hold the file lock from the parents' lookup to the child's
 * publication, so a parent cannot be unlinked in between; the parents'
 * memory is therefore valid for the whole life of the child.
 *
 * Lock order, outermost first: a lock is taken while holding only those
 * above it. The mutexes and the rwsem are taken in process context only;
 * the spinlocks that completions and device events take (reap_lock with
 * bottom halves off, the IA's, EVD's, CNO's, EP's and SRQ's locks with
 * interrupts off) are taken so everywhere:
 *
 *   kdat_file.lock                 mutex   objects made and destroyed
 *   kdat_file.poller_lock          mutex   the file's poller
 *   kdat_pollers_lock              mutex   the pollers (kdat_poll.c)
 *   kdat_poller.lock               mutex   a poller's files, for a pass
 *   kdat_file.ring_lock            mutex   the queues' submission rings
 *   kdat_ring.drain_lock           mutex   one submission ring's drain
 *   kdat_cr.reply_lock             mutex   one reply to a CR
 *   kdat_device.rwsem              rwsem   the device, against removal
 *     (the RDMA CM's handler lock: rdma_lock_handler(), its handlers)
 *   kdat_ep.cm_lock                mutex   connect, accept, teardown
 *   kdat_rmr.lock                  mutex   a bind
 *   kdat_srq.commit_lock           mutex   its EPs' CQ commitments
 *   kdat_device.res_lock           mutex   the device's resources
 *   kdat_devices_lock              mutex   the devices (kdat_device.c)
 *   kdat_file.obj_lock             spin    the file's objects, obj->dead
 *   kdat_evd.sw_lock               spin    its solicited-wait EPs
 *   kdat_ep.sw_lock                spin    polling its solicited-wait CQ
 *   kdat_cq.reap_lock              spin    one reaper (trylock, bh off)
 *   kdat_ia.async_lock             spin    the IA's async EVD
 *   kdat_evd.lock                  spin    its events
 *   kdat_cno.lock                  spin    its trigger
 *   kdat_ep.lock                   spin    state, slots, rings
 *   kdat_srq.lock                  spin    its EPs' map, slots, ring
 *   kdat_ep.ud_lock                spin    its UD connections
 *   kdat_conn_lock                 spin    the connect turns
 *   kdat_ring.flags_lock           spin    a ring's flags word (a leaf)
 *
 * Posts take none of the mutexes or the rwsem: they run in
 * kdat_post_srcu's read side, which a device's removal waits for under
 * its rwsem (kdat_batch_start()), and may come from an upcall.
 */
#ifndef KDAT_H
#define KDAT_H

#include <linux/completion.h>
#include <linux/irq_poll.h>
#include <linux/irq_work.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/sched.h>
#include <linux/types.h>
#include <linux/uaccess.h>
#include <linux/spinlock.h>
#include <linux/srcu.h>
#include <linux/wait.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cm.h>
#include <rdma/rdma_cm.h>

#include <uapi/linux/kdat.h>
#include <kdat/kdat.h>

#include "kdat_compat.h"
#include "kdat_rules.h"

#define KDAT_MODNAME "kdat"

enum kdat_obj_type {
	KDAT_OBJ_IA = 1,
	KDAT_OBJ_PZ,
	KDAT_OBJ_LMR,
	KDAT_OBJ_EVD,
	KDAT_OBJ_EP,
	KDAT_OBJ_PSP,
	KDAT_OBJ_CR,
	KDAT_OBJ_SRQ,
	KDAT_OBJ_CNO,
	KDAT_OBJ_RMR,
	KDAT_OBJ_AH,
	KDAT_OBJ_TYPE_MAX,
};

struct kdat_obj;
struct seq_file;

struct kdat_obj_ops {
	/*
	 * Optional: the object is unlinked; end the sleeps that hold a
	 * reference to it (waiters return EBADF) so destroy does not wait
	 * for them forever.
	 */
	void (*kill)(struct kdat_obj *obj);
	/* Release the type's resources; no user is left. May sleep. */
	void (*destroy)(struct kdat_obj *obj);
};

struct kdat_poller;

/* Why a ring poller went to sleep (kdat_poll.c, its tracepoints). */
#define KDAT_POLL_IDLE		0	/* nothing to do: a doorbell wakes it */
#define KDAT_POLL_SHARED	1	/* its CPU was wanted: it backs off */
#define KDAT_POLL_UNPAID	2	/* its spinning did not pay: backs off */

/* How a wait's poll of its CQ ended (kdat_evd.c, its tracepoint). */
#define KDAT_WAIT_POLL_HIT	0	/* the events came: no sleep */
#define KDAT_WAIT_POLL_MISS	1	/* none within wait_poll_us, or a stop */
#define KDAT_WAIT_POLL_SHARED	2	/* its CPU had more to run: no poll */
#define KDAT_WAIT_POLL_WANTED	3	/* a task waits for its CPU: poll ends */

/*
 * The owner of objects: an open /dev/kdat, or a kernel consumer's IA
 * (@kernel: made by kdat_ia_open(), which owns it; no rings, no poller).
 */
struct kdat_file {
	/* Serialises object create and destroy. */
	struct mutex lock;
	/*
	 * Every live object of this file, in creation order. Changed under
	 * @lock and @obj_lock; read under either. The RDMA CM's handler
	 * publishes a connection request's CR under @obj_lock alone: it runs
	 * under the CM's handler mutex, which @lock must not nest in.
	 */
	spinlock_t obj_lock;
	struct list_head objects;
	const struct cred *cred;	/* the opener's: the poller's */
	/*
	 * The opener's thread group (0: a kernel consumer) and command name,
	 * for tracing and the status dump (kdat_nl.c).
	 */
	u32 tgid;
	char comm[TASK_COMM_LEN];
	/*
	 * The opener's thread group (a reference; NULL: a kernel consumer):
	 * the status dump gives its number as the asker's PID namespace
	 * sees it, and shows the file only where it is seen.
	 */
	struct pid *pid;
	/*
	 * The opener's network namespace (a reference): its RDMA CM ids live
	 * there, and only devices it may use (rdma_dev_access_netns()) are
	 * listed and opened. Kernel consumers: init_net.
	 */
	struct net *net;

	/*
	 * Rings (kdat_poll.c). @ring_lock protects @sq_rings, the submission
	 * rings the poller drains (it holds the lock for a pass, each ring's
	 * drain_lock while it drains that ring), @sq_active, those of them a
	 * pass visits, @sq_parked, those it visits only when it takes every
	 * ring, and @sq_pinned, the rings whose doorbells always take them
	 * (kdat_ring.kpinned), visited then too; and the ring fields of the
	 * queues. @rings maps mmap cookies to rings.
	 */
	struct mutex ring_lock;
	struct list_head sq_rings;
	struct list_head sq_active;
	struct list_head sq_parked;
	struct list_head sq_pinned;
	unsigned int nr_parked;		/* ring_lock; read locklessly */
	u32 parked_completed;		/* ring_lock: their completions */
	/* KDAT_UNPARK_*: what doorbells asked of the next pass (atomic). */
	unsigned long unpark_asked;
	struct xarray rings;
	u32 next_ring;
	/*
	 * The poller, while there are submission rings and @poll_mode says
	 * so, on @poll_cpu if >= 0; all three under @poller_lock.
	 */
	struct mutex poller_lock;
	struct kdat_poller *poller;
	struct list_head poller_node;	/* in @poller's files */
	enum kdat_poller_mode poll_mode;
	int poll_cpu;
	/* Objects reserved and not yet freed, against max_objects. */
	atomic_t nr_objects;
	bool kernel;
};

struct kdat_obj {
	struct kref ref;
	struct completion released;	/* completed when ref drops to 0 */
	const struct kdat_obj_ops *ops;
	struct kdat_file *file;		/* owner; set once, never changes */
	/*
	 * The IA the object was created on (the IA itself for an IA); set by
	 * kdat_obj_reserve(), never changes. An abrupt IA close destroys
	 * every object of its file that names it.
	 */
	struct kdat_ia *ia;
	enum kdat_obj_type type;
	u32 handle;
	struct list_head file_node;	/* in file->objects, under file->lock */
	/* Objects that point at this one (see "Dependencies" above). */
	atomic_t users;
	/* Unlinked for destruction; set under file->obj_lock. */
	bool dead;
	struct rcu_head rcu;
};

/*
 * An RDMA device as kdat sees it. Created by the ib_client add callback,
 * unlinked by the remove callback; IAs hold a reference on it and find
 * @ibdev NULL once the device is gone.
 */
/*
 * An object's hold on device resources (PD, MR, CQ, QP, cm_id). It is on
 * its device's list while it holds them. When the device goes, the
 * ib_client remove callback takes the device's rwsem for write and calls
 * @disassociate on every entry, newest first: the object frees its device
 * resources, sets their pointers to NULL and tells its consumer. Users of
 * device resources hold the rwsem for read and check the pointers.
 */
struct kdat_dev_res {
	struct list_head node;		/* under kdat_device.res_lock */
	void (*disassociate)(struct kdat_dev_res *res);
	/* The RDMA cgroup charged @objects HCA objects for it, or NULL. */
	struct rdma_cgroup *cg;
	unsigned int objects;
};

/* Posts under way (kdat_dto.c's pipeline), waited for by a removal. */
extern struct srcu_struct kdat_post_srcu;

struct kdat_device {
	struct kref ref;
	/*
	 * Held for read by every user of @ibdev but the posts (@posts_off);
	 * held for write by the remove callback, which sets @ibdev to NULL.
	 */
	struct rw_semaphore rwsem;
	struct ib_device *ibdev;
	struct mutex res_lock;
	struct list_head resources;	/* struct kdat_dev_res, oldest first */
	/*
	 * The remove callback's CQs, destroyed together after one wait for
	 * their reapers (kdat_cq_destroy()); under @rwsem held for write.
	 */
	struct list_head dead_cqs;
	bool removing;
	/*
	 * Posts refused (-ENODEV): set by the remove callback, which then
	 * waits for the posts under way (kdat_post_srcu) before it takes
	 * the QPs, SRQs, MRs and AHs away. A post holds no lock the removal
	 * needs and never sleeps: it may come from an EVD's upcall.
	 */
	bool posts_off;
	/*
	 * Set by the remove callback before it waits for @rwsem: a wait
	 * made under @rwsem held for read ends (kdat_ep_wait()).
	 */
	bool going;
	/*
	 * Active connects that may block (kdat_ep_connect_run()), queued or
	 * under way, each counted before @no_connects is read
	 * (kdat_dev_connect_begin()); the remove callback sets @no_connects,
	 * then waits on @connects_wq until none is counted, before it sets
	 * @going and takes @rwsem.
	 */
	atomic_t connects;
	wait_queue_head_t connects_wq;
	bool no_connects;
	/* Under kdat_devices_lock. */
	struct list_head node;
	char name[IB_DEVICE_NAME_MAX];
	/*
	 * What the device was seen to do (KDAT_DEV_SEEN_*): what kdat does
	 * differently per device is decided from it, in kdat_device.c
	 * ("Per device"), never from what the device is.
	 */
	unsigned long seen;
	atomic_t signals, posts;	/* looked at, up to KDAT_DEV_LOOKS */
};

enum {
	KDAT_DEV_SEEN_SIGNALS,		/* KDAT_DEV_LOOKS handler calls */
	KDAT_DEV_SEEN_SIGNAL_SOFTIRQ,	/* one from a softirq (a tasklet) */
	KDAT_DEV_SEEN_POSTS,		/* KDAT_DEV_LOOKS send posts */
	KDAT_DEV_SEEN_POST_TASKLET,	/* one raised a tasklet */
	KDAT_DEV_SEEN_LAST_WQE,		/* a QP on an SRQ said LAST_WQE_REACHED */
	KDAT_DEV_SEEN_QP_ERR_FINAL,	/* a QP in ERR stayed there for RESET */
};

struct dentry;
void kdat_device_debugfs(struct dentry *dir);
/* The most DTOs an EP may have outstanding on each queue. */
#define KDAT_EP_MAX_DTOS	4096

u32 kdat_dev_port_limits(struct ib_device *ibdev, u32 port);
u32 kdat_dev_cq_size(struct ib_device *ibdev, u32 qlen);
u32 kdat_dev_read_sge(struct ib_device *ibdev, u32 send_sge);
bool kdat_dev_reads_ordered(struct ib_device *ibdev, u32 port);
bool kdat_dev_no_rnr(struct ib_device *ibdev, u32 port);
bool kdat_dev_cm_moves_qp(struct ib_device *ibdev, u32 port);
bool kdat_dev_connect_blocks(struct ib_device *ibdev, u32 port);
bool kdat_dev_connect_begin(struct kdat_device *kdev);
void kdat_dev_connect_end(struct kdat_device *kdev);
bool kdat_dev_reject_is_peers(struct ib_device *ibdev, u32 port, int status);
void kdat_dev_signalled(struct kdat_device *kdev);
void kdat_dev_flush_signals(struct kdat_device *kdev);
void kdat_dev_saw_last_wqe(struct kdat_device *kdev);
bool kdat_dev_says_last_wqe(struct kdat_device *kdev);
bool kdat_dev_qp_err_final(struct kdat_device *kdev, struct ib_qp *qp);
int kdat_dev_charge_one(struct kdat_device *kdev, struct rdma_cgroup **cg);
void kdat_dev_uncharge_one(struct kdat_device *kdev, struct rdma_cgroup *cg);
int kdat_post_send(struct kdat_device *kdev, struct ib_qp *qp,
		   const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr);

struct kdat_ia {
	struct kdat_obj obj;		/* must stay first */
	struct kdat_device *kdev;	/* reference held */
	u32 port_num;
	u32 limits;			/* KDAT_IA_*: kdat_dev_port_limits() */
	bool no_rnr;			/* kdat_dev_no_rnr() */
	char name[IB_DEVICE_NAME_MAX];	/* at open time */
	__be64 node_guid;
	/*
	 * Uses of this IA's objects by objects of other IAs of the same file
	 * (an EP or a PSP may take its connection events, an EP its DTO
	 * events on the same device, from an EVD of another IA). An abrupt
	 * close is refused while there are any: it would pull objects from
	 * under another IA.
	 */
	atomic_t foreign_users;
	/* The IA's first async EVD, if any: gets the IA's async events. */
	spinlock_t async_lock;
	struct kdat_evd *async_evd;
};

void kdat_ia_async_event(struct kdat_ia *ia, const struct kdat_event *ev);

/* An object created on @ia starts pointing at @target. */
static inline void kdat_obj_use(struct kdat_obj *target, struct kdat_ia *ia)
{
	atomic_inc(&target->users);
	if (target->ia != ia)
		atomic_inc(&target->ia->foreign_users);
}

void kdat_obj_unused(void);

/*
 * ... and stops; @target is alive (it has a user until this returns).
 * The use goes before the foreign count: an abrupt close that finds no
 * foreign user finds none of their uses on its victims either.
 */
static inline void kdat_obj_unuse(struct kdat_obj *target, struct kdat_ia *ia)
{
	struct kdat_ia *tia = target->ia;
	bool foreign = tia != ia;

	if (atomic_dec_and_test(&target->users))
		kdat_obj_unused();
	if (foreign)
		atomic_dec(&tia->foreign_users);
}

struct kdat_pz {
	struct kdat_obj obj;
	struct kdat_dev_res res;
	struct kdat_ia *ia;
	struct ib_pd *pd;
};

/*
 * An LMR. On user memory: @mr, pinned and registered, iova = the user
 * address. On kernel memory (@kernel): @sgt, DMA-mapped while @mapped;
 * segments use the PD's local_dma_lkey and remote access goes through an
 * RMR bound on an Endpoint (kdat_rmr_bind()).
 */
struct kdat_lmr {
	struct kdat_obj obj;
	struct kdat_dev_res res;
	struct kdat_pz *pz;
	struct ib_mr *mr;
	u32 rkey;			/* @mr's, read while it was valid */
	u64 addr;
	u64 length;
	u32 mem_priv;			/* KDAT_MEM_PRIV_* */
	bool kernel;
	bool mapped;
	struct sg_table sgt;
};

/* An RMR: a remote-access MR over part of an LMR while bound. */
struct kdat_rmr {
	struct kdat_obj obj;
	struct kdat_dev_res res;
	struct kdat_pz *pz;
	struct mutex lock;		/* bind against bind */
	struct ib_mr *mr;		/* NULL: unbound */
	/*
	 * The LMR of the binding, used (kdat_obj_use()) from the bind to the
	 * next bind or the RMR's destroy: an LMR that an RMR is bound to
	 * cannot be freed (DAT_INVALID_STATE), as a kernel LMR's pages stay
	 * mapped for the RMR's rkey. Under @lock.
	 */
	struct kdat_lmr *lmr;
};

struct kdat_ep;

/* A Consumer Notification Object. */
struct kdat_cno {
	struct kdat_obj obj;
	struct kdat_ia *ia;
	spinlock_t lock;
	u32 triggered;			/* EVD handle, 0: none; under lock */
	/*
	 * The proxy agent's trigger (KDAT_IOCTL_CNO_AGENT): @armed keeps the
	 * next one in @agent_evd, once, for the arming numbered @agent_seq
	 * (ARM and DISARM count; @kept_seq: the arming the kept one is
	 * for). Under lock.
	 */
	bool armed;
	u32 agent_evd;
	u32 agent_seq, kept_seq;
	wait_queue_head_t wq;
};

/*
 * An Event Dispatcher: a ring of @qlen + 1 events under @lock (the extra
 * slot is kept for the overflow event), and for DTO EVDs a CQ polled in
 * softirq context whose completions are turned into events.
 */
/*
 * A DTO EVD's CQ, reaped by the device's completion handler where it runs
 * with interrupts on, by irq_poll after a hard interrupt, and by threads
 * that wait or dequeue (kdat_cq.c).
 */
struct kdat_cq {
	struct ib_cq *cq;
	struct kdat_device *kdev;	/* its device; the owner holds it */
	struct irq_poll iop;		/* reaps after a hard interrupt */
	struct irq_work iw;		/* schedules iop from irqs-off tasks */
	unsigned long flags;		/* KDAT_CQ_AGAIN */
	spinlock_t reap_lock;		/* one reaper at a time; @dead */
	bool dead;			/* being destroyed: nobody reaps */
	struct list_head dead_node;	/* on kdat_device.dead_cqs */
};

#define KDAT_CQ_AGAIN	0		/* a reaper came: reap once more */

void kdat_cq_init(struct kdat_cq *kcq);
int kdat_cq_create(struct kdat_cq *kcq, struct kdat_device *kdev, u32 nr_cqe);
void kdat_cq_destroy(struct kdat_cq *kcq);
void kdat_cq_destroy_dead(struct kdat_device *kdev);
void kdat_cq_reap(struct kdat_cq *kcq);
void kdat_cq_flush(struct kdat_cq *kcq);
void kdat_cq_debugfs(struct dentry *dir);

struct kdat_evd {
	struct kdat_obj obj;
	struct kdat_dev_res res;
	struct kdat_ia *ia;
	u32 flags;			/* KDAT_EVD_* */
	u32 qlen;
	struct kdat_cq kcq;		/* DTO EVDs; kcq.cq NULL otherwise */
	u32 cq_size;
	/*
	 * Charged for the CQ's entries past the EVD's length, on a device
	 * that gets them up front (kdat_dev_cq_size()) and charges no one.
	 */
	void *cq_charge;

	spinlock_t lock;		/* the fields below */
	u32 cq_committed;		/* DTOs the EPs on it may have out */
	struct kdat_event *events;	/* qlen + 1 */
	u32 head, count;
	bool overflowed;		/* events were dropped */
	bool waiting;			/* a thread waits */
	bool unwaitable;		/* waits fail at once (EBUSY) */
	bool disabled;			/* events do not trigger the CNO */
	struct kdat_ring *ring;		/* or NULL: events[] holds them */
	u32 of_pos;			/* ring index of the overflow event */
	struct kdat_cno *cno;		/* or NULL */
	struct kdat_upcall upcall;	/* kernel consumers; .func or NULL */
	wait_queue_head_t wq;

	/* EPs whose solicited-wait receive CQ reports here (below). */
	spinlock_t sw_lock;
	struct list_head sw_eps;
};

struct kdat_srq;
struct kdat_slots;

/* A send-queue slot's op besides enum kdat_dto_op: an RMR bind (REG_MR). */
#define KDAT_OP_BIND		0x80
#define KDAT_SRQ_MAX_DTOS	4096
#define KDAT_SRQ_EP_HASH	16

struct kdat_ah;

/*
 * One DTO as its poster asked for it, whichever way it came (the ioctl, a
 * ring's entry, the kernel API): kernel copies, not yet checked. @remote
 * and @ext may be NULL (none).
 */
struct kdat_req {
	u32 op;
	u32 flags;
	u64 cookie;
	u32 num;
	const struct kdat_lmr_triplet *iov;
	const struct kdat_rmr_triplet *remote;
	const struct kdat_dto_ext *ext;
};

/* A checked DTO: what a work request is built from. */
struct kdat_dto {
	u32 op;
	u32 flags;
	u64 cookie;
	u64 length;
	u32 num_sge;
	struct kdat_rmr_triplet remote;	/* RDMA, atomics */
	struct kdat_dto_ext ext;	/* the IB extensions' arguments */
	/* A datagram's AH, used (kdat_obj_use()) until the slot takes it. */
	struct kdat_ah *ah;
	struct ib_sge sge[KDAT_DTO_MAX_IOV];
};

/* The kinds of DTO (enum kdat_dto_op) by what they do. */
static inline bool kdat_op_is_recv(u32 op)
{
	return op == KDAT_DTO_RECEIVE || op == KDAT_DTO_RECV_RDMA_IMM ||
	       op == KDAT_DTO_RECV_MSG_IMM || op == KDAT_DTO_RECV_UD ||
	       op == KDAT_DTO_RECV_UD_IMM;
}

/* A DTO in flight: one per send or receive slot of an EP or SRQ. */
struct kdat_dto_ctx {
	struct ib_cqe cqe;
	struct kdat_ep *ep;		/* NULL for an SRQ's slot */
	struct kdat_srq *srq;
	u64 cookie;
	u64 length;
	u8 op;				/* enum kdat_dto_op, KDAT_OP_BIND */
	u8 flags;			/* KDAT_COMPLETION_* */
	u32 rmr_handle;			/* KDAT_OP_BIND */
	struct kdat_ah *ah;		/* a datagram's, used until done */
	struct kdat_dto_ctx *next_free;	/* while free */
};

/*
 * The DTO slots of one queue (an EP's sends or receives, an SRQ's
 * buffers): a free list threaded through the slots. Taken and given back
 * under the owner's spinlock. Slots live in chunks that never move (a work
 * request carries a pointer to its slot), so a queue can grow while DTOs
 * are in flight: growing adds a chunk. At most @limit slots are in use at
 * a time; @nr exist.
 */
struct kdat_slot_chunk;

struct kdat_slots {
	struct kdat_slot_chunk *chunks;
	struct kdat_dto_ctx *free;	/* first free slot, or NULL */
	u32 nr;
	u32 limit;			/* <= nr */
	u32 posted;			/* slots in use */
};

int kdat_slots_init(struct kdat_slots *s, u32 n, struct kdat_ep *ep,
		    struct kdat_srq *srq);
int kdat_slots_grow(struct kdat_slots *s, u32 n, struct kdat_ep *ep,
		    struct kdat_srq *srq, spinlock_t *lock);
void kdat_slots_fini(struct kdat_slots *s);
struct kdat_dto_ctx *kdat_slot_get(struct kdat_slots *s);
void kdat_slot_put(struct kdat_slots *s, struct kdat_dto_ctx *ctx);

/* What the RDMA CM's handler finds in cm_id->context. */
enum kdat_cm_kind {
	KDAT_CM_EP = 1,
	KDAT_CM_PSP,
	KDAT_CM_CR,
	KDAT_CM_UD,			/* a UD connect or accept (kdat_ud.c) */
};

struct kdat_ep {
	struct kdat_obj obj;
	struct kdat_dev_res res;
	struct kdat_pz *pz;
	struct kdat_evd *recv_evd;
	struct kdat_evd *req_evd;
	struct kdat_evd *conn_evd;
	struct kdat_srq *srq;		/* or NULL */
	struct kdat_ep_attr attr;
	struct kdat_ep_timers timers;	/* fixed at create */
	u32 send_sge, recv_sge;		/* what the QP takes per WR */
	u32 read_sge;			/* per RDMA read: kdat_dev_read_sge() */
	bool reads_ordered;		/* kdat_dev_reads_ordered() */
	/*
	 * A UD Endpoint (KDAT_EP_CREATE_UD): its QP is UD, ready from
	 * creation; a datagram carries at most @ud_mtu bytes. Its connects
	 * and accepts under way (struct kdat_ud_conn) are on @ud_conns until
	 * they finish or are given up, all under @ud_lock; @ud_finishing
	 * counts those finishing (making their AH), which the teardown waits
	 * for on @ud_wq; @ud_dead: torn down, no new one.
	 */
	bool ud;
	u32 ud_mtu;
	spinlock_t ud_lock;
	struct list_head ud_conns;
	u32 ud_nr_conns;		/* on @ud_conns */
	u32 ud_finishing;
	bool ud_dead;
	wait_queue_head_t ud_wq;
	/*
	 * Completions this EP may put in its EVDs' CQs, committed there
	 * (kdat_evd_commit()): every DTO it may have out, and one drain
	 * marker per queue. Changed under the file lock.
	 */
	u32 send_cqes, recv_cqes;
	/*
	 * Changed under cm_lock and the device's rwsem (read), where every
	 * use outside the data path is; posts read it once under RCU
	 * (kdat_ep_qp_send()); the teardown clears it. Replaced where a
	 * QP cannot leave ERR (kdat_ep_qp_renew()).
	 */
	struct ib_qp *qp;
	u32 qpn;			/* @qp's number, for the status dump */
	/*
	 * On an SRQ, on a device not seen to raise LAST_WQE_REACHED when it
	 * was made (kdat_dev_says_last_wqe(); 6.1's rxe never does): a QP
	 * without traffic whose queues report to the receive EVD's CQ.
	 * Teardown flushes a receive through it: when that marker
	 * completes, every completion queued before it, those of the EP's
	 * QP included, has been handled. Without it, the CQ's completions
	 * are handed on by kdat itself (kdat_cq_flush()) once the device
	 * said LAST_WQE_REACHED (kdat_ep_srq_settle()) and again once the QP
	 * is gone.
	 */
	struct ib_qp *barrier_qp;
	/*
	 * The QP went to ERR (the connection ended): a marker flushed
	 * through @barrier_qp reports, once it completes, what IB calls the
	 * last WQE reached: DAT_ASYNC_ERROR_EP_BROKEN on the IA's async EVD.
	 * One at a time: @last_wqe_posted under cm_lock. Without a barrier
	 * QP the device's event says it (kdat_ep_qp_event()), once per
	 * connection (kdat_ep_last_wqe_check()). Under @lock, cleared when
	 * the QP is reset (kdat_ep_last_wqe_rearm()): @qp_rtr, the QP may
	 * have taken the SRQ's receives (set before it is moved to RTR, or
	 * before the CM is asked to connect where the CM moves it; cleared
	 * if that fails); @last_wqe_wanted, the connection ended;
	 * @last_wqe_seen, the device said it (or will not now), each wake-up
	 * of @last_wqe_wq, which kdat_ep_srq_settle() waits on;
	 * @last_wqe_told, the work that tells it is queued.
	 */
	struct ib_cqe last_wqe_cqe;
	struct completion last_wqe_done;
	bool last_wqe_posted;
	bool qp_rtr;
	bool last_wqe_wanted, last_wqe_seen, last_wqe_told;
	wait_queue_head_t last_wqe_wq;
	struct work_struct last_wqe_work;	/* tells it, after the CQ */
	const void *srq_key;		/* the QP's address, in srq->eps */
	struct hlist_node srq_node;	/* under srq->lock */
	enum kdat_cm_kind cm_kind;	/* KDAT_CM_EP */

	/* Serialises connect, accept, disconnect, reset and teardown. */
	struct mutex cm_lock;
	struct rdma_cm_id *cm_id;	/* under cm_lock and the CM handler */
	/* cm_lock: made by a connect, for the handler to let cm_id go */
	struct kdat_cm_id_free *cm_id_free;
	/*
	 * Ids being destroyed before a reset: written under cm_lock, read
	 * without it by their waiters on idle_wq (kdat_ep_lock_for_reset()).
	 */
	u32 ids_dying;
	/*
	 * The id kdat_ep_connect_run() connects, under cm_lock: whoever
	 * takes it from cm_id meanwhile leaves it to that connect to
	 * destroy, counted in ids_dying (kdat_ep_id_put()), and cuts it
	 * short (kdat_conn_hurry()).
	 */
	struct rdma_cm_id *connecting;
	struct work_struct connect_work;	/* a connect cut short */
	struct work_struct conn_start_work;	/* its thread made */
	/*
	 * Where a connect may block: whose turn it takes, set at creation
	 * (kdat_connect.c); the rest under kdat_conn_lock.
	 */
	struct kdat_conn_owner *conn_owner;
	struct list_head conn_node;	/* in its owner's queue, or running */
	struct task_struct *conn_task;	/* the thread making it */
	u8 conn_state;			/* KDAT_CONN_* */
	bool conn_hurry;		/* cut short */

	wait_queue_head_t idle_wq;	/* send.posted fell to 0; ids_dying */

	spinlock_t lock;		/* the fields below */
	enum kdat_ep_state state;
	struct kdat_slots send, recv;
	/* UD: send completions still in kdat_dto_done() (kdat_ud_drain_sq()) */
	u32 ud_done_busy;
	/* Submission rings, or NULL; set under the file's ring_lock. */
	struct kdat_ring *sq_ring, *rq_ring;
	u8 pdata[KDAT_PRIVATE_DATA_BUF];
	u32 pdata_len;
	struct sockaddr_storage remote, local;
	/* Completions handled, and those in error, since the create. */
	u64 send_done, recv_done, errors;
	/*
	 * LMR destroys waiting on @idle_wq for the requests at the device
	 * (kdat_lmr_settle()): each send completion wakes them. Under @lock.
	 */
	unsigned int settlers;

	/*
	 * Solicited wait (recv_completion_flags has
	 * KDAT_COMPLETION_SOLICITED_WAIT): the QP's receive CQ is the EP's
	 * own, armed for solicited completions only. When one arrives,
	 * @sw_work moves every receive completion to the receive EVD and
	 * wakes its waiter; the others stay in the CQ, not notified, until
	 * then or until the consumer dequeues from the EVD.
	 */
	struct ib_cq *sw_cq;
	struct work_struct sw_work;
	spinlock_t sw_lock;		/* polling @sw_cq; @sw_dead */
	bool sw_dead;
	struct list_head sw_node;	/* in recv_evd->sw_eps */
	/*
	 * The receive drained into @sw_cq last; in the EP, not on a stack,
	 * so that a marker completing after its drain gave up writes only
	 * here (@sw_cq goes before the EP).
	 */
	struct ib_cqe sw_drain_cqe;
	struct completion sw_drained;

	/*
	 * A DTO of a connection completed in error (not a flush): the QP is
	 * in ERR, the connection is broken. @broken_work (cm_lock) ends it,
	 * DISCONNECTED with DAT_CONNECTION_EVENT_BROKEN, if it is still the
	 * connection @broken_gen names. @conn_gen counts the connections
	 * established; @conn_gen, @broken_gen and @broken_queued are under
	 * @lock.
	 */
	struct work_struct broken_work;
	u32 conn_gen, broken_gen;
	bool broken_queued;

	/*
	 * Keepalive (@timers.keepalive_ms): while the EP is CONNECTED,
	 * @ka_work posts a zero-length RDMA write every keepalive_ms (one
	 * more send WR and CQE than the DTOs take), so that a peer gone
	 * without a word breaks an idle connection too: the write fails
	 * once the transport's retries are spent. @ka_posted under
	 * @lock.
	 */
	struct delayed_work ka_work;
	struct ib_cqe ka_cqe;
	bool ka_posted;
};

void kdat_ep_sw_poll(struct kdat_ep *ep);
void kdat_ep_take_recvs(struct kdat_ep *ep);
int kdat_ep_qp_send(struct kdat_ep *ep, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int kdat_ep_qp_recv(struct kdat_ep *ep, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);
void kdat_ep_dto_error(struct kdat_ep *ep);

/*
 * Which Endpoint operation may run in which state: one table
 * (kdat_ep_allowed()) that every operation consults.
 */
enum kdat_ep_op {
	KDAT_EP_OP_POST_SEND,		/* send, RDMA read, RDMA write */
	KDAT_EP_OP_POST_RECV,
	KDAT_EP_OP_RMR_BIND,
	KDAT_EP_OP_CONNECT,
	KDAT_EP_OP_ACCEPT,		/* a PSP's request */
	KDAT_EP_OP_ACCEPT_RSP,		/* an RSP's request, for its EP */
	KDAT_EP_OP_RESERVE,		/* an RSP takes the EP */
	KDAT_EP_OP_DISCONNECT,
	KDAT_EP_OP_RESET,
	KDAT_EP_OP_MODIFY,
	KDAT_EP_OP_COUNT,
};

enum kdat_ep_verdict {
	KDAT_EP_REFUSE = 0,		/* EBUSY: DAT_INVALID_STATE */
	KDAT_EP_DO,
	KDAT_EP_FLUSH,			/* accepted, completes flushed at once */
	KDAT_EP_NOP,			/* accepted, nothing to do */
};

enum kdat_ep_verdict kdat_ep_allowed(u32 state, enum kdat_ep_op op);

struct kdat_srq {
	struct kdat_obj obj;
	struct kdat_dev_res res;
	struct kdat_pz *pz;
	struct ib_srq *srq;
	u32 max_recv_dtos;
	u32 max_recv_iov;
	u32 low_watermark;		/* as set; under the file's lock */
	/*
	 * Orders the receive commitments of the EPs on this SRQ: a resize
	 * growing them (kdat_srq_commit_eps()) against an EP's destroy
	 * giving them back (kdat_srq_uncommit_ep()).
	 */
	struct mutex commit_lock;

	spinlock_t lock;		/* the fields below */
	/*
	 * The EPs on this SRQ by the address of their QP: a receive
	 * completion finds its EP by the value of wc->qp, never through it
	 * (a completion still in the CQ may outlive the QP). An EP is here
	 * from its QP's creation until its teardown has reaped its
	 * completions (kdat_ep_srq_reap()).
	 */
	struct hlist_head eps[KDAT_SRQ_EP_HASH];
	struct kdat_slots slots;
	struct kdat_ring *ring;		/* or NULL; set under ring_lock */
};

struct kdat_psp {
	struct kdat_obj obj;
	struct kdat_ia *ia;
	struct kdat_evd *evd;
	struct kdat_ep *rsp_ep;		/* an RSP's Endpoint, or NULL */
	bool rsp_fired;			/* an RSP took its request */
	enum kdat_cm_kind cm_kind;	/* KDAT_CM_PSP */
	struct rdma_cm_id *cm_id;	/* RC requests (TCP port space) */
	struct rdma_cm_id *cm_id_ud;	/* UD requests (UDP port space) */
	u64 conn_qual;
	/*
	 * The creator's memory cgroup (a reference): the CRs the RDMA CM's
	 * worker makes for this PSP are charged there, not to the worker.
	 */
	struct mem_cgroup *memcg;
};

struct kdat_cr {
	struct kdat_obj obj;
	struct kdat_dev_res res;
	struct kdat_psp *psp;
	struct kdat_ep *rsp_ep;		/* from an RSP: its Endpoint */
	enum kdat_cm_kind cm_kind;	/* KDAT_CM_CR */
	/*
	 * One reply at a time: held from reading @cm_id until the reply is
	 * done with it, so a reply never takes the handler lock of an id a
	 * concurrent accept gave to an EP (which may destroy it).
	 */
	struct mutex reply_lock;
	/* NULL once accepted (the EP owns it) or the device is gone. */
	struct rdma_cm_id *cm_id;
	u64 conn_qual;
	/* The request's RDMA read depths: reads it sends, reads it takes. */
	u8 req_rd_in, req_rd_out;
	/* A UD request (SIDR): its sender's QP number and Q_Key. */
	bool ud;
	u32 remote_qpn, remote_qkey;
	struct sockaddr_storage remote;
	u8 pdata[KDAT_PRIVATE_DATA_BUF];
	u32 pdata_len;
};

/*
 * A UD address handle (see "UD Endpoints" in the uapi header): made by a
 * UD connect or accept of @ep, for datagrams of @ep alone, to
 * @remote_qpn/@remote_qkey. It uses @ep; each datagram in flight uses it.
 * Its device resource is listed just before @ep's, so a device's removal
 * takes it after the EP (whose drain completes the datagrams).
 */
struct kdat_ah {
	struct kdat_obj obj;
	struct kdat_dev_res res;
	struct kdat_ep *ep;
	struct ib_ah *ah;		/* NULL once the device is gone */
	u32 remote_qpn;
	u32 remote_qkey;
	bool passive;			/* made by an accept */
	struct sockaddr_storage remote;
	u8 pdata[KDAT_PRIVATE_DATA_BUF];
	u32 pdata_len;
};

/* An ioctl in flight: the kernel copy of the user's struct. */
/* kdat_ring.c: ring memory (kdat_ring.h); kdat_poll.c: submission rings */
struct kdat_ring;
struct kdat_batch;
int kdat_fops_mmap(struct file *filp, struct vm_area_struct *vma);
void kdat_ring_set_dead(struct kdat_ring *ring);
#define KDAT_RING_INSANE	U32_MAX
u32 kdat_ring_span(u32 head, u32 tail, u32 entries);
void kdat_ring_completed(struct kdat_ring *ring, u32 n);
void kdat_ring_set_ep_state(struct kdat_ring *ring, u32 state);
void kdat_file_rings_init(struct kdat_file *kfile);
void kdat_file_rings_fini(struct kdat_file *kfile);
void kdat_rings_show(struct seq_file *m, struct kdat_file *kfile);
void kdat_rings_take(struct kdat_file *kfile);
void kdat_lmr_settle(struct kdat_file *kfile, u32 handle);
void kdat_sq_ring_stop(struct kdat_ring *ring);
void kdat_sq_ring_flush(struct kdat_ring *ring);
void kdat_sq_ring_detach(struct kdat_ring *ring);

struct kdat_ucmd {
	struct kdat_file *kfile;
	void __user *ubuffer;
	u32 user_size;
	void *cmd;
};

int kdat_ucmd_respond(struct kdat_ucmd *ucmd, size_t cmd_len);
int kdat_ucmd_finish(struct kdat_ucmd *ucmd, size_t cmd_len,
		     struct kdat_obj *obj);
int kdat_cmd_ring_create(struct kdat_ucmd *ucmd);
int kdat_cmd_ring_wake(struct kdat_ucmd *ucmd);
int kdat_cmd_poller_set(struct kdat_ucmd *ucmd);

/* kdat_obj.c */
void *__kdat_obj_alloc(size_t size, enum kdat_obj_type type,
		       const struct kdat_obj_ops *ops);
#define kdat_obj_alloc(_type, _member, _objtype, _ops)			\
	((_type *)__kdat_obj_alloc(sizeof(_type) +				\
				   BUILD_BUG_ON_ZERO(offsetof(_type, _member)), \
				   _objtype, _ops))
int kdat_obj_reserve(struct kdat_file *kfile, struct kdat_obj *obj,
		     struct kdat_ia *ia);
void kdat_obj_publish(struct kdat_obj *obj);
void kdat_obj_publish_locked(struct kdat_obj *obj);
void kdat_obj_publish_obj_locked(struct kdat_obj *obj);
void kdat_obj_abort(struct kdat_obj *obj);
bool kdat_obj_alive(struct kdat_obj *obj);
void kdat_obj_discard(struct kdat_obj *obj);
struct kdat_file *kdat_file_create(bool kernel);
void kdat_file_release(struct kdat_file *kfile);
int kdat_obj_destroy_ptr(struct kdat_obj *obj);
struct kdat_obj *kdat_obj_get(struct kdat_file *kfile, u32 handle,
			      enum kdat_obj_type type);
void kdat_obj_put(struct kdat_obj *obj);
struct kdat_obj *kdat_obj_next(unsigned long *index);
void kdat_obj_wait_unused(struct kdat_obj *obj);
int kdat_obj_destroy(struct kdat_file *kfile, u32 handle);
int kdat_ia_destroy_all(struct kdat_file *kfile, u32 handle);
void kdat_file_destroy_all(struct kdat_file *kfile);
int kdat_obj_count(enum kdat_obj_type type);
void kdat_obj_cleanup(void);

/* kdat_nl.c */
int kdat_nl_init(void);
void kdat_nl_exit(void);

/* kdat_device.c */
#ifdef CONFIG_LOCKDEP
void kdat_assert_user_access(void);
#else
static inline void kdat_assert_user_access(void)
{
	might_fault();
}
#endif
/* kdat's only ways to user memory: each asserts the rule above. */
static inline unsigned long __must_check
kdat_copy_to_user(void __user *to, const void *from, unsigned long n)
{
	kdat_assert_user_access();
	return copy_to_user(to, from, n);
}

static inline unsigned long __must_check
kdat_copy_from_user(void *to, const void __user *from, unsigned long n)
{
	kdat_assert_user_access();
	return copy_from_user(to, from, n);
}

int kdat_device_init(void);
void kdat_device_exit(void);
struct kdat_device *kdat_device_find(const char *name, struct net *net);
int kdat_dev_res_add(struct kdat_device *kdev, struct kdat_dev_res *res,
		     unsigned int objects,
		     void (*disassociate)(struct kdat_dev_res *res));
void __kdat_dev_res_add(struct kdat_device *kdev, struct kdat_dev_res *res,
			void (*disassociate)(struct kdat_dev_res *res));
bool __kdat_dev_res_add_before(struct kdat_device *kdev,
			       struct kdat_dev_res *res,
			       struct kdat_dev_res *before,
			       void (*disassociate)(struct kdat_dev_res *res));
bool kdat_dev_res_del(struct kdat_device *kdev, struct kdat_dev_res *res);
int kdat_dev_res_charge(struct kdat_device *kdev, struct kdat_dev_res *res,
			unsigned int objects);
void kdat_dev_res_uncharge(struct kdat_device *kdev, struct kdat_dev_res *res);
void kdat_device_put(struct kdat_device *kdev);
int kdat_device_count(void);
int kdat_cmd_device_list(struct kdat_ucmd *ucmd);

/*
 * The cores the ioctls and the kernel API (kdat_kapi.c) share. The *_new()
 * functions build an object of @kfile and reserve its handle; the caller
 * holds kfile->lock, has looked up the parents, and publishes the object
 * or discards it (kdat_obj_discard()).
 */
int kdat_ia_new(struct kdat_file *kfile, const char *name, u32 port_num,
		struct kdat_ia **iap);
int kdat_pz_new(struct kdat_file *kfile, struct kdat_ia *ia,
		struct kdat_pz **pzp);
int kdat_lmr_new_user(struct kdat_file *kfile, struct kdat_pz *pz, u64 addr,
		      u64 length, u32 mem_priv, struct kdat_lmr **lmrp);
int kdat_lmr_new_kernel(struct kdat_file *kfile, struct kdat_pz *pz,
			struct sg_table *sgt, u64 va, u32 mem_priv,
			struct kdat_lmr **lmrp);
int kdat_lmr_dma_walk(const struct kdat_lmr *lmr, u64 va, u64 len,
		      int (*fn)(void *arg, u64 dma, u32 len), void *arg);
int kdat_rmr_new(struct kdat_file *kfile, struct kdat_pz *pz,
		 struct kdat_rmr **rmrp);
int kdat_rmr_bind_do(struct kdat_file *kfile, struct kdat_rmr_bind *cmd);
int kdat_evd_new(struct kdat_file *kfile, struct kdat_ia *ia, u32 evd_flags,
		 u32 qlen, struct kdat_cno *cno,
		 const struct kdat_upcall *upcall, struct kdat_evd **evdp);
int kdat_evd_wait_for(struct kdat_evd *evd, u32 threshold, u64 timeout_us);
u32 kdat_evd_dequeue_n(struct kdat_evd *evd, struct kdat_event *out, u32 max,
		       u32 *nmore);
void kdat_evd_set_upcall(struct kdat_evd *evd,
			 const struct kdat_upcall *upcall);
u32 kdat_ep_max_dtos(const struct ib_device_attr *dev);
int kdat_ep_check_attr(struct kdat_ep_attr *a,
		       const struct ib_device_attr *dev);
int kdat_ep_new(struct kdat_file *kfile, struct kdat_pz *pz,
		struct kdat_evd *recv_evd, struct kdat_evd *req_evd,
		struct kdat_evd *conn_evd, struct kdat_srq *srq,
		const struct kdat_ep_attr *attr,
		const struct kdat_ep_timers *timers, u32 flags,
		struct kdat_ep **epp);
int kdat_ep_connect_do(struct kdat_ep *ep, struct sockaddr_storage *dst,
		       u64 timeout_us, const void *pdata, u32 pdata_len);
int kdat_sockaddr_set_qual(struct sockaddr_storage *dst, u64 conn_qual);
/* kdat_cm.c: the wire format OFA DAPL's cma provider shares */
#define KDAT_REJ_HDR_LEN	4
u16 kdat_qual_port(u64 conn_qual);
const u8 *kdat_rej_pdata(const u8 *data, u32 *len);
int kdat_ep_disconnect_do(struct kdat_ep *ep, u32 flags);
int kdat_ep_reset_do(struct kdat_ep *ep);
int kdat_psp_new(struct kdat_file *kfile, struct kdat_ia *ia,
		 struct kdat_evd *evd, struct kdat_ep *ep, u64 conn_qual,
		 struct kdat_psp **pspp);
int kdat_cr_reply_do(struct kdat_file *kfile, u32 cr_handle, u32 ep_handle,
		     const void *pdata, u32 pdata_len, bool accept);
int kdat_post_ep(struct kdat_ep *ep, const struct kdat_req *req);
int kdat_post_srq(struct kdat_srq *srq, const struct kdat_req *req);
int kdat_srq_new(struct kdat_file *kfile, struct kdat_pz *pz,
		 u32 max_recv_dtos, u32 max_recv_iov, u32 low_watermark,
		 struct kdat_srq **srqp);

/* kdat_ia.c */
int kdat_cmd_ia_open(struct kdat_ucmd *ucmd);
int kdat_cmd_ia_query(struct kdat_ucmd *ucmd);
struct kdat_ia *kdat_ia_get(struct kdat_file *kfile, u32 handle);

/* Look up an object of a type; NULL when it is not the caller's. */
#define kdat_get(_kfile, _handle, _type, _objtype)			\
	({								\
		struct kdat_obj *__o = kdat_obj_get(_kfile, _handle, _objtype); \
		__o ? container_of(__o, _type, obj) : NULL;		\
	})

/* kdat_mem.c */
int kdat_cmd_pz_create(struct kdat_ucmd *ucmd);
int kdat_cmd_lmr_create(struct kdat_ucmd *ucmd);
int kdat_cmd_rmr_create(struct kdat_ucmd *ucmd);
int kdat_cmd_rmr_bind(struct kdat_ucmd *ucmd);

/* kdat_evd.c */
int kdat_cmd_evd_create(struct kdat_ucmd *ucmd);
int kdat_cmd_evd_wait(struct kdat_ucmd *ucmd);
void kdat_evd_push(struct kdat_evd *evd, const struct kdat_event *ev);
int kdat_evd_ring_create(struct kdat_evd *evd, u32 qlen,
			 struct kdat_ring **out);
void kdat_evd_ring_set_poll(struct kdat_evd *evd);
int kdat_evd_commit(struct kdat_evd *evd, u32 n);

int kdat_cmd_evd_post_se(struct kdat_ucmd *ucmd);
int kdat_cmd_evd_modify(struct kdat_ucmd *ucmd);

/* kdat_cno.c */
void kdat_cno_trigger(struct kdat_cno *cno, struct kdat_evd *evd);
int kdat_cmd_cno_create(struct kdat_ucmd *ucmd);
int kdat_cmd_cno_wait(struct kdat_ucmd *ucmd);
int kdat_cmd_cno_agent(struct kdat_ucmd *ucmd);
int kdat_cmd_evd_modify_cno(struct kdat_ucmd *ucmd);
int kdat_cmd_ep_modify(struct kdat_ucmd *ucmd);
void kdat_evd_uncommit(struct kdat_evd *evd, u32 n);

/* kdat_ep*.c: Endpoints (kdat_ep.h lists what their files share) */
int kdat_cmd_ep_create(struct kdat_ucmd *ucmd);
int kdat_cmd_ep_query(struct kdat_ucmd *ucmd);
int kdat_cmd_ep_connect(struct kdat_ucmd *ucmd);
int kdat_cmd_ep_disconnect(struct kdat_ucmd *ucmd);
int kdat_cmd_ep_reset(struct kdat_ucmd *ucmd);
int kdat_ep_cm_event(struct kdat_ep *ep, struct rdma_cm_id *id,
		     struct rdma_cm_event *event);
int kdat_ep_accept(struct kdat_ep *ep, struct rdma_cm_id *id,
		   const void *pdata, u8 pdata_len, bool reserved,
		   u8 req_rd_in, u8 req_rd_out);
int kdat_ep_reserve(struct kdat_ep *ep, bool reserve);
void kdat_ep_conn_push(struct kdat_ep *ep, struct kdat_event *ev);
void kdat_ep_conn_event(struct kdat_ep *ep, u32 event_number);
void kdat_ep_save_pdata(struct kdat_ep *ep, const void *data, u32 len);

/* kdat_ud.c: UD Endpoints, their connects, accepts and AHs */
#define KDAT_UD_HDR_LEN		12
int kdat_ud_hdr_put(u8 *buf, const void *pdata, u32 len, u32 qpn, u32 qkey);
const u8 *kdat_ud_hdr_get(const u8 *buf, u32 buf_len, u32 *len, u32 *qpn,
			  u32 *qkey);
int kdat_ud_qp_ready(struct kdat_ep *ep);
void kdat_ud_drain_sq(struct kdat_ep *ep, bool linger);
bool kdat_ep_wait(struct kdat_ep *ep, wait_queue_head_t *wq,
		  bool (*done)(struct kdat_ep *ep), unsigned long timeout);
void kdat_ud_teardown(struct kdat_ep *ep);
int kdat_ud_connect(struct kdat_ep *ep, struct sockaddr_storage *dst,
		    unsigned long timeout_ms, const void *pdata, u32 pdata_len);
struct kdat_ud_conn;
int kdat_ud_accept(struct kdat_ep *ep, struct kdat_cr *cr,
		   struct rdma_cm_id *id, const void *pdata, u32 pdata_len,
		   struct kdat_ud_conn **connp);
void kdat_ud_accept_finish(struct kdat_ep *ep, struct kdat_ud_conn *conn,
			   int ret);
int kdat_ud_reject(struct rdma_cm_id *id, const void *pdata, u32 pdata_len);
int kdat_ud_cm_event(struct rdma_cm_id *id, struct rdma_cm_event *event);
int kdat_ud_dto_ah(struct kdat_file *kfile, struct kdat_ep *ep,
		   struct kdat_dto *dto);
void kdat_ud_dto_done(struct kdat_ah *ah);
int kdat_cmd_ah_query(struct kdat_ucmd *ucmd);

/* kdat_srq.c */
int kdat_cmd_srq_create(struct kdat_ucmd *ucmd);
int kdat_cmd_srq_set_lw(struct kdat_ucmd *ucmd);
int kdat_cmd_srq_resize(struct kdat_ucmd *ucmd);
struct kdat_srq *kdat_srq_get(struct kdat_file *kfile, u32 handle);

/* kdat_cm.c */
int kdat_cmd_psp_create(struct kdat_ucmd *ucmd);
int kdat_cmd_cr_query(struct kdat_ucmd *ucmd);
int kdat_cmd_cr_accept(struct kdat_ucmd *ucmd);
int kdat_cmd_cr_reject(struct kdat_ucmd *ucmd);
int kdat_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *event);
int kdat_cm_init(void);
void kdat_cm_exit(void);
void kdat_cm_defer(struct work_struct *work);
void kdat_ep_connect_run(struct kdat_ep *ep);

/* kdat_connect.c: connects that may block, in turns by user. */
enum { KDAT_CONN_IDLE, KDAT_CONN_WAITING, KDAT_CONN_UNDER_WAY };
struct kdat_conn_owner *kdat_conn_owner_get(struct kdat_file *kfile);
void kdat_conn_owner_put(struct kdat_conn_owner *owner);
void kdat_conn_submit(struct kdat_ep *ep);
void kdat_conn_hurry(struct kdat_ep *ep);
void kdat_conn_hurry_dev(struct kdat_device *kdev);
bool kdat_conn_hurried(struct kdat_ep *ep);
void kdat_conn_done(struct kdat_ep *ep);
void kdat_conn_init_ep(struct kdat_ep *ep);
struct kdat_cm_id_free *kdat_cm_id_free_alloc(void);
void kdat_cm_id_free(struct kdat_cm_id_free *f, struct rdma_cm_id *id,
		     struct kdat_obj *obj);
int kdat_sockaddr_from_user(const struct kdat_sockaddr *ua,
			    struct sockaddr_storage *ss);
void kdat_sockaddr_to_user(const struct sockaddr_storage *ss,
			   struct kdat_sockaddr *ua);

/* kdat_dto.c */
int kdat_cmd_post(struct kdat_ucmd *ucmd);
void kdat_dto_done(struct ib_cq *cq, struct ib_wc *wc);
void kdat_dto_trim(struct kdat_dto *dto, u64 length);
u32 kdat_wc_status(enum ib_wc_status status);
u32 kdat_wc_recv_op(const struct ib_wc *wc, bool ud, u32 *imm);
u32 kdat_refused_status(int err);
void kdat_dto_abort(struct kdat_ep *ep, struct kdat_dto_ctx *ctx);
int kdat_batch_init(struct kdat_batch *b, struct kdat_file *kfile,
		    struct kdat_ep *ep, struct kdat_srq *srq, bool send);
void kdat_batch_fini(struct kdat_batch *b);
void kdat_batch_start(struct kdat_batch *b) __acquires(&kdat_post_srcu);
int kdat_batch_add(struct kdat_batch *b, const struct kdat_req *req);
void kdat_batch_refuse(struct kdat_batch *b, u32 op, u64 cookie, int err);
int kdat_batch_finish(struct kdat_batch *b) __releases(&kdat_post_srcu);
int kdat_srq_add_ep(struct kdat_srq *srq, struct kdat_ep *ep);
void kdat_srq_del_ep(struct kdat_srq *srq, struct kdat_ep *ep);
void kdat_srq_uncommit_ep(struct kdat_srq *srq, struct kdat_ep *ep);
struct kdat_ep *kdat_srq_find_ep(struct kdat_srq *srq, const void *key);

#endif /* KDAT_H */
