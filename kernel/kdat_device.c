// SPDX-License-Identifier: GPL-2.0
/*
 * kdat RDMA devices: an ib_client that follows devices as they come and go.
 */
#include <linux/bottom_half.h>
#include <linux/cgroup_rdma.h>
#include <linux/cpu.h>
#include <linux/debugfs.h>
#include <linux/interrupt.h>
#include <linux/seq_file.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "kdat.h"

/*
 * Every kdat_device.rwsem is of this one lock class, so that
 * kdat_assert_user_access() can tell one is held.
 */
static struct lock_class_key kdat_dev_rwsem_key;

#ifdef CONFIG_LOCKDEP
/*
 * Before any access to user memory (a copy, a pin): the memory may fault
 * for as long as its owner likes (a FUSE file whose read is never
 * answered), so no device rwsem may be held across it: device removal
 * takes it for write and would wait as long, and every other user of the
 * device behind it. A debug kernel (lockdep) says so at once, on the first
 * path that breaks the rule, whether or not the memory is slow this time.
 */
void kdat_assert_user_access(void)
{
	int i;

	might_fault();
	for (i = 0; i < current->lockdep_depth; i++) {
		WARN_ONCE(current->held_locks[i].instance->key ==
			  &kdat_dev_rwsem_key,
			  "kdat: user memory accessed under a device's rwsem");
#ifdef CONFIG_DEBUG_LOCK_ALLOC
		/* Nor inside a post, which the removal waits for as well. */
		WARN_ONCE(current->held_locks[i].instance ==
			  &kdat_post_srcu.dep_map,
			  "kdat: user memory accessed inside a post");
#endif
	}
}
#endif

/* Protects kdat_devices and every kdat_device.name. */
static DEFINE_MUTEX(kdat_devices_lock);
DEFINE_SRCU(kdat_post_srcu);
static LIST_HEAD(kdat_devices);
static int kdat_devices_nr;	/* under kdat_devices_lock */

static void kdat_device_release(struct kref *ref)
{
	struct kdat_device *kdev = container_of(ref, struct kdat_device, ref);

	kfree(kdev);
}

void kdat_device_put(struct kdat_device *kdev)
{
	kref_put(&kdev->ref, kdat_device_release);
}

/*
 * Device objects count in the caller's RDMA cgroup (rdma.max hca_object),
 * as uverbs' objects do: kdat's are kernel objects the device holds for a
 * process all the same. @objects is how many @res holds (an EP on an SRQ:
 * its QP and its barrier QP), each one HCA object, all in one cgroup: a
 * caller moved to another meanwhile starts again, a few times only (the
 * device's rwsem may be held), then is refused as over its limit.
 */
#define KDAT_CHARGE_TRIES	4

int kdat_dev_res_charge(struct kdat_device *kdev, struct kdat_dev_res *res,
			unsigned int objects)
{
#ifdef CONFIG_CGROUP_RDMA
	struct rdma_cgroup *cg;
	unsigned int i, tries = 0;

retry:
	if (tries++ == KDAT_CHARGE_TRIES)
		return -ENOMEM;
	res->cg = NULL;
	res->objects = 0;
	for (i = 0; i < objects; i++) {
		if (rdmacg_try_charge(&cg, &kdev->ibdev->cg_device,
				      RDMACG_RESOURCE_HCA_OBJECT)) {
			kdat_dev_res_uncharge(kdev, res);
			return -ENOMEM;
		}
		if (res->cg && cg != res->cg) {
			/* The caller moved to another cgroup meanwhile. */
			rdmacg_uncharge(cg, &kdev->ibdev->cg_device,
					RDMACG_RESOURCE_HCA_OBJECT);
			kdat_dev_res_uncharge(kdev, res);
			goto retry;
		}
		res->cg = cg;
		res->objects++;
	}
#endif
	return 0;
}

/* kdev->ibdev is valid (rwsem held, or the remove callback). */
void kdat_dev_res_uncharge(struct kdat_device *kdev, struct kdat_dev_res *res)
{
#ifdef CONFIG_CGROUP_RDMA
	for (; res->cg && res->objects; res->objects--)
		rdmacg_uncharge(res->cg, &kdev->ibdev->cg_device,
				RDMACG_RESOURCE_HCA_OBJECT);
#endif
	res->cg = NULL;
	res->objects = 0;
}

/*
 * One device object more in the caller's RDMA cgroup, for a while: an
 * EP's new QP beside its old one (kdat_ep_qp_renew()). kdev->ibdev is
 * valid (rwsem held).
 */
int kdat_dev_charge_one(struct kdat_device *kdev, struct rdma_cgroup **cg)
{
	*cg = NULL;
#ifdef CONFIG_CGROUP_RDMA
	if (rdmacg_try_charge(cg, &kdev->ibdev->cg_device,
			      RDMACG_RESOURCE_HCA_OBJECT)) {
		*cg = NULL;
		return -ENOMEM;
	}
#endif
	return 0;
}

void kdat_dev_uncharge_one(struct kdat_device *kdev, struct rdma_cgroup *cg)
{
#ifdef CONFIG_CGROUP_RDMA
	if (cg)
		rdmacg_uncharge(cg, &kdev->ibdev->cg_device,
				RDMACG_RESOURCE_HCA_OBJECT);
#endif
}

/*
 * Per device. What kdat does differently for a device is decided here, from
 * what the device was seen to do (kdat_device.seen), never from its name or
 * driver. Two habits, each kept only where the device needs it:
 *
 * - A device that calls a CQ's completion handler from a tasklet may leave
 *   that tasklet scheduled when the CQ is destroyed, and run it on freed
 *   memory: 6.1's rxe does (its CQ destroy does no tasklet_kill(); seen
 *   under CPU load as a GPF in tasklet_action_common(), 0x6b poison).
 *   Before a CQ such a device signals goes, kdat_dev_flush_signals() waits
 *   for every tasklet scheduled so far. A device seen to call its first
 *   KDAT_DEV_LOOKS handlers from elsewhere (a hard interrupt: hardware; a
 *   thread: 6.12's rxe) needs no wait; until then kdat waits. siw signals
 *   a receive from the network's softirq (its socket's data_ready), which
 *   nothing tells from a tasklet: it pays the wait at each CQ destroy. This
 *   assumes a device that signals from a softirq does so from its first
 *   calls, as every in-tree driver that does (6.1's rxe) does: a device
 *   that signalled from a thread 64 times and then from a tasklet it does
 *   not kill at CQ destroy would not be waited for.
 * - A device that finishes a send post in a tasklet it raises in the post
 *   (6.1's rxe runs a kernel QP's requester in one) would, posted to from
 *   process context, hand that tasklet to ksoftirqd: a thread hop and a
 *   wake-up per post. kdat_post_send() posts to it with bottom halves off,
 *   so the tasklet runs as they come back on, in the poster's context, as
 *   under a ULP posting from softirq. It does so for a device's first
 *   KDAT_DEV_LOOKS posts, and after them for a device one of whose posts
 *   raised a tasklet. A post looked at counts only if it succeeded and
 *   no tasklet was pending before it (one already pending, or a tasklet
 *   already scheduled elsewhere, raises nothing to see); a tasklet a
 *   hard interrupt raised meanwhile only keeps the bottom halves off.
 * - A QP on an SRQ that goes to ERR takes no more of the SRQ's receives:
 *   IB says so with IB_EVENT_QP_LAST_WQE_REACHED, which DAT programs
 *   wait for as DAT_ASYNC_ERROR_EP_BROKEN (dtestsrq) before they free
 *   the EP. 6.1's rxe raises none: for an EP on an SRQ kdat makes a
 *   barrier QP and flushes a marker through it instead (struct kdat_ep).
 *   Once one QP of a device on an SRQ raised the event (6.12's rxe, an
 *   HCA), the EPs made after it have no barrier QP (one QP less each,
 *   in the device and in the rdma cgroup) and the event is what they
 *   report; the EPs made before keep theirs.
 * - A QP in ERR that a move to RESET leaves in ERR: siw's ERROR state is
 *   final (siw_qp_modify() has no way out of it, and reports success).
 *   DAT lets an EP that was connected, or whose attempt failed, connect
 *   again after dat_ep_reset() (or a failed accept), which needs a QP
 *   in INIT: on such a device kdat_ep_qp_reset() gives the EP a new QP
 *   (kdat_ep_qp_renew()). Known from the first reset whose QP does not
 *   read RESET after it (ib_query_qp(): ERR, or, as siw's, a query that
 *   does not say), and said once in the kernel log; until then every
 *   reset asks.
 *
 * Each fact only ever goes from unknown to known (a bit set once); until
 * it is known, and for a reader that sees a stale value, kdat does what
 * is safe for any device.
 */
#define KDAT_DEV_LOOKS		64

/*
 * What a port's transport cannot do (enum kdat_ia_limit), from ib_core's
 * capabilities, for every IA of the port: the IA query reports it, and
 * each refusal it implies is made where the object is made or the DTO
 * checked, from the IA's copy.
 *
 * - UD: a UD Endpoint resolves its peers by SIDR, the IB CM's; a port
 *   without the IB CM (iWARP) has no datagram service. Its PSPs do not
 *   listen for UD requests either: iWARP's CM would listen with the same
 *   TCP socket for both port spaces, and the second listen fails.
 * - Immediate data: iWARP has none (RFC 7306's is not in siw or ib_core).
 * - An RDMA read's sink: iWARP places the response with a tagged write,
 *   so the sink must allow remote writes (ib_core's rdma_rw asks for the
 *   same access for iWARP; siw does not check it, a NIC does).
 * - Remote atomics: where atomic_cap says none.
 */
u32 kdat_dev_port_limits(struct ib_device *ibdev, u32 port)
{
	u32 limits = 0;

	if (!rdma_cap_ib_cm(ibdev, port))
		limits |= KDAT_IA_NO_UD;
	if (rdma_protocol_iwarp(ibdev, port))
		limits |= KDAT_IA_NO_IMM_DATA | KDAT_IA_READ_SINK_REMOTE_WRITE;
	if (ibdev->attrs.atomic_cap == IB_ATOMIC_NONE)
		limits |= KDAT_IA_NO_ATOMICS;
	return limits;
}

/*
 * The CQ of a DTO EVD of @qlen events. The CQ must hold every completion
 * its EPs may have outstanding, which DAT lets exceed the EVD's length:
 * kdat_evd_commit() grows it as EPs are created. A device without
 * resize_cq (siw; several NICs) cannot grow one, so its DTO EVDs get from
 * the start the room of four EPs of the most DTOs kdat allows; past that,
 * an EP on the EVD is refused (ENOMEM).
 */
#define KDAT_CQ_FIXED_SIZE	(4 * (KDAT_EP_MAX_DTOS + 2))

/*
 * Are RDMA reads of @port carried out in the order they were posted, each
 * behind what was posted before it? iWARP's are (RDMAP: the read queue is
 * in order, behind earlier writes and sends), so a fenced read fences
 * nothing, and siw refuses the fence on a read outright (EINVAL, and the
 * connection ends): kdat leaves it off there.
 */
bool kdat_dev_reads_ordered(struct ib_device *ibdev, u32 port)
{
	return rdma_protocol_iwarp(ibdev, port);
}

/*
 * Does a message that finds no receive posted end the connection on
 * @port? iWARP's does: DDP has no "receiver not ready" (an untagged
 * message without a buffer is a TERMINATE: siw's "no buffer", layer DDP).
 * IB's and RoCE's RC answer it with an RNR NAK, and the sender tries again
 * after the RNR timer. On such a port a receive must be at the device
 * when its post returns (kdat_sq_ring_create()).
 */
bool kdat_dev_no_rnr(struct ib_device *ibdev, u32 port)
{
	return rdma_protocol_iwarp(ibdev, port);
}

/*
 * Does the connection manager of @port move a connecting QP to RTR and
 * RTS itself? The iWARP CM does (the QP may take receives from the
 * moment the request goes out); the IB CM leaves each move to the
 * consumer (rdma_init_qp_attr()).
 */
bool kdat_dev_cm_moves_qp(struct ib_device *ibdev, u32 port)
{
	return rdma_cap_iw_cm(ibdev, port);
}

/*
 * May an active connect on @port block its caller for long? An iWARP
 * connect is a TCP connect, and the driver makes it: siw's blocks
 * (kernel_bindconnect()) until the peer answers or TCP gives up, minutes
 * for a peer that drops SYNs. The IB CM's sends a request and returns.
 * Such a connect is made from kdat's own queue, not from the RDMA CM's
 * handler (kdat_ep_connect_run(), in turns: kdat_connect.c).
 */
bool kdat_dev_connect_blocks(struct ib_device *ibdev, u32 port)
{
	return rdma_cap_iw_cm(ibdev, port);
}

/*
 * Such a connect is about to be queued: counted on @kdev, so that its
 * removal waits for it, holding nothing, before it takes the rwsem
 * (kdat_remove_one()). False, nothing counted, once the removal has
 * begun. Each side writes, then reads the other's, with a full barrier
 * between: either the removal sees the count, or this sees the flag.
 */
bool kdat_dev_connect_begin(struct kdat_device *kdev)
{
	atomic_inc(&kdev->connects);
	/* Pairs with kdat_remove_one()'s, after no_connects is set. */
	smp_mb__after_atomic();
	if (!READ_ONCE(kdev->no_connects))
		return true;
	kdat_dev_connect_end(kdev);
	return false;
}

/* That connect is over (made, failed, or not made). */
void kdat_dev_connect_end(struct kdat_device *kdev)
{
	if (atomic_dec_and_test(&kdev->connects))
		wake_up(&kdev->connects_wq);
}

/*
 * Is a REJECTED event of @status on @port a reject by the peer, though it
 * carries no kdat reject data? iWARP's CM gives no reject reason; siw
 * reports a peer's MPA reject as -ECONNRESET, which ib_core does not take
 * for a consumer reject (only -ECONNREFUSED), as it does the peer closing
 * its TCP connection before its reply and an MPA v2 reply it finds
 * malformed: the peer ended the attempt each time, and OFA's provider
 * calls every reject the peer's. A reject without data under
 * -ECONNREFUSED (the peer's CM: no room in the listener's backlog) stays
 * NON_PEER_REJECTED, as the IB CM's own rejects do. The private data of
 * -ECONNRESET is not read: after a peer's close siw hands a buffer
 * written only as far as the bytes came.
 */
bool kdat_dev_reject_is_peers(struct ib_device *ibdev, u32 port, int status)
{
	return rdma_protocol_iwarp(ibdev, port) && status == -ECONNRESET;
}

/*
 * The scatter/gather entries an RDMA read's sink may have on a QP that
 * takes @send_sge per send: the device's max_sge_rd (iWARP places a read
 * response in one tagged buffer: siw takes 1), where it says one.
 */
u32 kdat_dev_read_sge(struct ib_device *ibdev, u32 send_sge)
{
	u32 rd = ibdev->attrs.max_sge_rd;

	return rd ? min(rd, send_sge) : send_sge;
}

u32 kdat_dev_cq_size(struct ib_device *ibdev, u32 qlen)
{
	u32 size = qlen;

	if (!ibdev->ops.resize_cq)
		size = max_t(u32, size, KDAT_CQ_FIXED_SIZE);
	return min_t(u32, size, ibdev->attrs.max_cqe);
}

static void kdat_dev_see(struct kdat_device *kdev, int bit)
{
	if (!test_bit(bit, &kdev->seen))
		set_bit(bit, &kdev->seen);
}

/* One more look of @n at @kdev: @bit once there were KDAT_DEV_LOOKS. */
static void kdat_dev_look(struct kdat_device *kdev, atomic_t *n, int bit)
{
	if (!test_bit(bit, &kdev->seen) &&
	    atomic_inc_return(n) >= KDAT_DEV_LOOKS)
		kdat_dev_see(kdev, bit);
}

/*
 * A completion handler of a CQ of @kdev runs: the context it runs in. A
 * hard interrupt that came during a softirq is still a hard interrupt.
 */
void kdat_dev_signalled(struct kdat_device *kdev)
{
	if (in_serving_softirq() && !in_hardirq() && !in_nmi())
		kdat_dev_see(kdev, KDAT_DEV_SEEN_SIGNAL_SOFTIRQ);
	kdat_dev_look(kdev, &kdev->signals, KDAT_DEV_SEEN_SIGNALS);
}

/* A QP of @kdev on an SRQ raised IB_EVENT_QP_LAST_WQE_REACHED: any context. */
void kdat_dev_saw_last_wqe(struct kdat_device *kdev)
{
	kdat_dev_see(kdev, KDAT_DEV_SEEN_LAST_WQE);
}

/* Does @kdev say when a QP on an SRQ has taken its last receive? */
bool kdat_dev_says_last_wqe(struct kdat_device *kdev)
{
	return test_bit(KDAT_DEV_SEEN_LAST_WQE, &kdev->seen);
}

/*
 * debugfs kdat/qp_renew, root's: Y gives every reset a new QP, on every
 * device, so that the tests take that path on a device whose QPs do
 * leave ERR (the hostile suite, under KASAN on the debug kernel).
 */
static bool kdat_qp_renew_always;

/*
 * Is @qp of @kdev, just moved from ERR to RESET (the move said it was
 * done), still in ERR, or does the device not say? Then no QP of the
 * device is taken to leave ERR ("Per device"): a new QP is right for any
 * device, only slower. A query that fails gets a new QP for this reset
 * only.
 */
bool kdat_dev_qp_err_final(struct kdat_device *kdev, struct ib_qp *qp)
{
	/* What a query that does not fill in the state reads as. */
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct ib_qp_init_attr init = {};

	if (READ_ONCE(kdat_qp_renew_always) ||
	    test_bit(KDAT_DEV_SEEN_QP_ERR_FINAL, &kdev->seen))
		return true;
	/* A query that fails says nothing of the device: a new QP, once. */
	if (ib_query_qp(qp, &attr, IB_QP_STATE, &init))
		return true;
	if (attr.qp_state != IB_QPS_ERR)
		return false;
	if (!test_and_set_bit(KDAT_DEV_SEEN_QP_ERR_FINAL, &kdev->seen))
		ibdev_info(qp->device,
			   "kdat: a QP reset from ERR does not read RESET: an Endpoint reset gets a new QP\n");
	return true;
}

/*
 * Wait for every tasklet already scheduled: a tasklet of kdat's own goes
 * to the tail of each CPU's list, which runs in order. Two rounds: a
 * tasklet found running on another CPU is put back at the tail, behind
 * the first.
 */
struct kdat_tasklet_barrier {
	struct tasklet_struct t;
	struct completion done;
};

static void kdat_tasklet_barrier_run(struct tasklet_struct *t)
{
	complete(&container_of(t, struct kdat_tasklet_barrier, t)->done);
}

static void kdat_tasklet_barrier_queue(void *info)
{
	struct kdat_tasklet_barrier *b = info;

	tasklet_schedule(&b[smp_processor_id()].t);
}

static void kdat_flush_tasklets(void)
{
	struct kdat_tasklet_barrier *b;
	int round, cpu;

	b = kcalloc(nr_cpu_ids, sizeof(*b), GFP_KERNEL | __GFP_NOFAIL);
	cpus_read_lock();
	for (round = 0; round < 2; round++) {
		for_each_online_cpu(cpu) {
			tasklet_setup(&b[cpu].t, kdat_tasklet_barrier_run);
			init_completion(&b[cpu].done);
		}
		on_each_cpu(kdat_tasklet_barrier_queue, b, 1);
		for_each_online_cpu(cpu) {
			wait_for_completion(&b[cpu].done);
			tasklet_kill(&b[cpu].t);	/* off its CPU too */
		}
	}
	cpus_read_unlock();
	kfree(b);
}

/*
 * A CQ of @kdev is about to go, with no QP left to add to it: no
 * completion handler call the device scheduled before may still come.
 */
void kdat_dev_flush_signals(struct kdat_device *kdev)
{
	if (!test_bit(KDAT_DEV_SEEN_SIGNALS, &kdev->seen) ||
	    test_bit(KDAT_DEV_SEEN_SIGNAL_SOFTIRQ, &kdev->seen))
		kdat_flush_tasklets();
}

/* The tasklet softirqs a post may raise. */
#define KDAT_TASKLET_SOFTIRQS	(BIT(HI_SOFTIRQ) | BIT(TASKLET_SOFTIRQ))

/* ib_post_send() to @qp of @kdev, with bottom halves off where it helps. */
int kdat_post_send(struct kdat_device *kdev, struct ib_qp *qp,
		   const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr)
{
	unsigned long before;
	int ret;

	/* Bottom halves cannot be turned off and on here (an upcall's). */
	if ((test_bit(KDAT_DEV_SEEN_POSTS, &kdev->seen) &&
	     !test_bit(KDAT_DEV_SEEN_POST_TASKLET, &kdev->seen)) ||
	    in_hardirq() || irqs_disabled())
		return ib_post_send(qp, wr, bad_wr);
	local_bh_disable();
	before = local_softirq_pending();
	ret = ib_post_send(qp, wr, bad_wr);
	if (local_softirq_pending() & ~before & KDAT_TASKLET_SOFTIRQS)
		kdat_dev_see(kdev, KDAT_DEV_SEEN_POST_TASKLET);
	else if (!ret && !(before & KDAT_TASKLET_SOFTIRQS))
		kdat_dev_look(kdev, &kdev->posts, KDAT_DEV_SEEN_POSTS);
	local_bh_enable();
	return ret;
}

static struct ib_client kdat_client;

static int kdat_add_one(struct ib_device *ibdev)
{
	struct kdat_device *kdev;

	kdev = kzalloc(sizeof(*kdev), GFP_KERNEL);
	if (!kdev)
		return -ENOMEM;
	kref_init(&kdev->ref);
	__init_rwsem(&kdev->rwsem, "&kdev->rwsem", &kdat_dev_rwsem_key);
	mutex_init(&kdev->res_lock);
	INIT_LIST_HEAD(&kdev->resources);
	INIT_LIST_HEAD(&kdev->dead_cqs);
	atomic_set(&kdev->connects, 0);
	init_waitqueue_head(&kdev->connects_wq);
	kdev->ibdev = ibdev;

	mutex_lock(&kdat_devices_lock);
	strscpy(kdev->name, dev_name(&ibdev->dev), sizeof(kdev->name));
	list_add_tail(&kdev->node, &kdat_devices);
	kdat_devices_nr++;
	mutex_unlock(&kdat_devices_lock);

	ib_set_client_data(ibdev, &kdat_client, kdev);
	return 0;
}

/*
 * The device is going away. Once this returns nothing of kdat touches it:
 * objects built on it keep their kdat_device but find ibdev NULL.
 */
static void kdat_remove_one(struct ib_device *ibdev, void *client_data)
{
	struct kdat_device *kdev = client_data;

	mutex_lock(&kdat_devices_lock);
	list_del_init(&kdev->node);
	kdat_devices_nr--;
	mutex_unlock(&kdat_devices_lock);

	/*
	 * A connect under way may block until TCP gives up (iWARP's, which
	 * siw makes blocking), and the EP's teardown below waits for it:
	 * wait for those first, queued or under way, holding nothing, so
	 * that other users' calls on the device are not queued behind the
	 * rwsem meanwhile. None is queued once @no_connects is set
	 * (kdat_dev_connect_begin()), the connect ioctl answers -ENODEV,
	 * and each one queued or under way is cut short (a waiting one
	 * connects nothing, one in TCP's connect gets SIGKILL,
	 * kdat_conn_hurry_dev()): the wait is short. Idle all the same: a
	 * driver's connect may not heed the signal.
	 */
	WRITE_ONCE(kdev->no_connects, true);
	/* Pairs with kdat_dev_connect_begin()'s, after its count. */
	smp_mb();
	kdat_conn_hurry_dev(kdev);
	wait_event_idle(kdev->connects_wq, !atomic_read(&kdev->connects));

	/*
	 * No ioctl uses the device from here on. Take every object off it,
	 * newest first, so each goes before what it was built on; ib_core
	 * wants all of it released before this returns. A teardown that
	 * waits for its device under the rwsem stops waiting (@going), set
	 * only now: until the rwsem is taken the device still works, and a
	 * graceful disconnect keeps its grace.
	 */
	WRITE_ONCE(kdev->going, true);
	down_write(&kdev->rwsem);
	kdev->removing = true;
	/* The posts under way reach the device before it goes; no more. */
	WRITE_ONCE(kdev->posts_off, true);
	synchronize_srcu(&kdat_post_srcu);
	for (;;) {
		struct kdat_dev_res *res;

		res = NULL;
		mutex_lock(&kdev->res_lock);
		if (!list_empty(&kdev->resources)) {
			res = list_last_entry(&kdev->resources,
					      struct kdat_dev_res, node);
			list_del_init(&res->node);
		}
		mutex_unlock(&kdev->res_lock);
		if (!res)
			break;
		res->disassociate(res);
		kdat_dev_res_uncharge(kdev, res);
	}
	kdat_cq_destroy_dead(kdev);
	WRITE_ONCE(kdev->ibdev, NULL);
	up_write(&kdev->rwsem);

	kdat_device_put(kdev);
}

/*
 * List @res on @kdev without a charge: the RDMA CM handler's CRs, made in
 * no process's context (their number is bounded per PSP instead). The
 * caller holds kdev->rwsem for read, and checked kdev->ibdev.
 */
void __kdat_dev_res_add(struct kdat_device *kdev, struct kdat_dev_res *res,
			void (*disassociate)(struct kdat_dev_res *res))
{
	res->disassociate = disassociate;
	mutex_lock(&kdev->res_lock);
	list_add_tail(&res->node, &kdev->resources);
	mutex_unlock(&kdev->res_lock);
}

/*
 * The same, @res listed just before @before, so that the device's removal
 * takes it right after @before (a UD AH after its EP, whose drain ends
 * the datagrams using it). False, and nothing listed, when @before no
 * longer is (its resources are gone or going).
 */
bool __kdat_dev_res_add_before(struct kdat_device *kdev,
			       struct kdat_dev_res *res,
			       struct kdat_dev_res *before,
			       void (*disassociate)(struct kdat_dev_res *res))
{
	bool listed;

	res->disassociate = disassociate;
	mutex_lock(&kdev->res_lock);
	listed = !list_empty(&before->node);
	if (listed)
		list_add_tail(&res->node, &before->node);
	mutex_unlock(&kdev->res_lock);
	return listed;
}

/*
 * List @res, which holds device resources, on @kdev, charged to the
 * caller's RDMA cgroup. It is listed even when the charge fails (ENOMEM):
 * the caller's error path releases it as any other, by kdat_dev_res_del().
 */
int kdat_dev_res_add(struct kdat_device *kdev, struct kdat_dev_res *res,
		     unsigned int objects,
		     void (*disassociate)(struct kdat_dev_res *res))
{
	int ret = kdat_dev_res_charge(kdev, res, objects);

	__kdat_dev_res_add(kdev, res, disassociate);
	return ret;
}

/*
 * The caller holds kdev->rwsem for read. Returns true when @res still held
 * device resources, which the caller now frees; false when the device's
 * removal took them already.
 */
bool kdat_dev_res_del(struct kdat_device *kdev, struct kdat_dev_res *res)
{
	bool held;

	mutex_lock(&kdev->res_lock);
	held = !list_empty(&res->node);
	list_del_init(&res->node);
	mutex_unlock(&kdev->res_lock);
	if (held)
		kdat_dev_res_uncharge(kdev, res);
	return held;
}

static void kdat_rename_one(struct ib_device *ibdev, void *client_data)
{
	struct kdat_device *kdev = client_data;

	mutex_lock(&kdat_devices_lock);
	strscpy(kdev->name, dev_name(&ibdev->dev), sizeof(kdev->name));
	mutex_unlock(&kdat_devices_lock);
}

static struct ib_client kdat_client = {
	.name = KDAT_MODNAME,
	.add = kdat_add_one,
	.remove = kdat_remove_one,
	.rename = kdat_rename_one,
};

/*
 * May a process of @net use @kdev? As for uverbs: in the RDMA subsystem's
 * exclusive netns mode a device is seen only from its own namespace.
 * Called under kdat_devices_lock (@kdev is on the list: ibdev is valid).
 */
static bool kdat_device_visible(struct kdat_device *kdev, struct net *net)
{
	return rdma_dev_access_netns(kdev->ibdev, net);
}

/*
 * Find a present device that @net may use, by name; returns it with a
 * reference, or NULL.
 */
struct kdat_device *kdat_device_find(const char *name, struct net *net)
{
	struct kdat_device *kdev;

	mutex_lock(&kdat_devices_lock);
	list_for_each_entry(kdev, &kdat_devices, node) {
		if (!strcmp(kdev->name, name) &&
		    kdat_device_visible(kdev, net)) {
			kref_get(&kdev->ref);
			mutex_unlock(&kdat_devices_lock);
			return kdev;
		}
	}
	mutex_unlock(&kdat_devices_lock);
	return NULL;
}

int kdat_device_count(void)
{
	int nr;

	mutex_lock(&kdat_devices_lock);
	nr = kdat_devices_nr;
	mutex_unlock(&kdat_devices_lock);
	return nr;
}

static void kdat_fill_port_info(struct kdat_device *kdev, u32 port,
				struct kdat_port_info *info)
{
	struct ib_device *ibdev = kdev->ibdev;
	struct ib_port_attr attr;

	memset(info, 0, sizeof(*info));
	strscpy(info->name, kdev->name, sizeof(info->name));
	memcpy(&info->node_guid, &ibdev->node_guid, sizeof(info->node_guid));
	info->port_num = port;
	info->phys_port_cnt = rdma_end_port(ibdev);
	info->port_state = KDAT_PORT_DOWN;
	if (!ib_query_port(ibdev, port, &attr)) {
		info->port_state = attr.state;
		info->active_mtu = ib_mtu_enum_to_int(attr.active_mtu);
	}
	switch (rdma_port_get_link_layer(ibdev, port)) {
	case IB_LINK_LAYER_INFINIBAND:
		info->link_layer = KDAT_LINK_LAYER_INFINIBAND;
		break;
	case IB_LINK_LAYER_ETHERNET:
		info->link_layer = KDAT_LINK_LAYER_ETHERNET;
		break;
	default:
		info->link_layer = KDAT_LINK_LAYER_UNSPECIFIED;
		break;
	}
}

/*
 * Snapshot every port of every device into a kernel array, so nothing is
 * copied to user space under kdat_devices_lock.
 */
static struct kdat_port_info *kdat_snapshot_ports(struct net *net, u32 *nr)
{
	struct kdat_port_info *infos;
	struct kdat_device *kdev;
	u32 n = 0, i = 0, port;

	mutex_lock(&kdat_devices_lock);
	/* Devices on the list have not been removed: ibdev is valid. */
	list_for_each_entry(kdev, &kdat_devices, node)
		if (kdat_device_visible(kdev, net))
			n += rdma_end_port(kdev->ibdev) -
			     rdma_start_port(kdev->ibdev) + 1;
	infos = kcalloc(max(n, 1U), sizeof(*infos), GFP_KERNEL_ACCOUNT);
	if (!infos)
		goto out_unlock;
	list_for_each_entry(kdev, &kdat_devices, node)
		if (kdat_device_visible(kdev, net))
			rdma_for_each_port(kdev->ibdev, port)
				kdat_fill_port_info(kdev, port, &infos[i++]);
	*nr = n;
out_unlock:
	mutex_unlock(&kdat_devices_lock);
	return infos;
}

int kdat_cmd_device_list(struct kdat_ucmd *ucmd)
{
	struct kdat_device_list *cmd = ucmd->cmd;
	struct kdat_port_info *infos;
	u8 __user *uentries;
	u32 nr, i, room;
	int ret;

	if (cmd->__reserved)
		return -EINVAL;
	if (cmd->entry_size < sizeof(struct kdat_port_info) ||
	    cmd->entry_size > SZ_4K)
		return -EINVAL;
	room = cmd->num_entries;
	uentries = u64_to_user_ptr(cmd->entries);

	infos = kdat_snapshot_ports(ucmd->kfile->net, &nr);
	if (!infos)
		return -ENOMEM;

	for (i = 0; i < min(nr, room); i++) {
		u8 __user *dst = uentries + (size_t)i * cmd->entry_size;

		if (kdat_copy_to_user(dst, &infos[i], sizeof(infos[i])) ||
		    clear_user(dst + sizeof(infos[i]),
			       cmd->entry_size - sizeof(infos[i]))) {
			ret = -EFAULT;
			goto out_free;
		}
	}
	cmd->num_entries = nr;
	ret = kdat_ucmd_respond(ucmd, sizeof(*cmd));
	if (!ret && nr > room)
		ret = -EMSGSIZE;
out_free:
	kfree(infos);
	return ret;
}

/*
 * debugfs kdat/devices: per device, what was seen and what kdat does for
 * it ("Per device" above): "softirq" (signals) or "tasklet" (posts), or
 * "elsewhere"; "unknown" until KDAT_DEV_LOOKS calls or posts were seen;
 * how an EP on an SRQ learns its QP took its last receive: "event" or,
 * until the device raised one, "barrier" (a barrier QP's marker); how an
 * Endpoint's QP is reset: "modify" (to RESET) or, once a QP of the
 * device stayed in ERR, "new_qp".
 */
static const char *kdat_dev_fact(struct kdat_device *kdev, int looked,
				 int seen, const char *what)
{
	if (test_bit(seen, &kdev->seen))
		return what;
	return test_bit(looked, &kdev->seen) ? "elsewhere" : "unknown";
}

static int kdat_devices_show(struct seq_file *m, void *unused)
{
	struct kdat_device *kdev;

	mutex_lock(&kdat_devices_lock);
	list_for_each_entry(kdev, &kdat_devices, node)
		seq_printf(m, "%s signals_from %s posts_finish_in %s srq_last_wqe %s qp_reset %s\n",
			   kdev->name,
			   kdat_dev_fact(kdev, KDAT_DEV_SEEN_SIGNALS,
					 KDAT_DEV_SEEN_SIGNAL_SOFTIRQ,
					 "softirq"),
			   kdat_dev_fact(kdev, KDAT_DEV_SEEN_POSTS,
					 KDAT_DEV_SEEN_POST_TASKLET, "tasklet"),
			   kdat_dev_says_last_wqe(kdev) ? "event" : "barrier",
			   test_bit(KDAT_DEV_SEEN_QP_ERR_FINAL, &kdev->seen) ?
			   "new_qp" : "modify");
	mutex_unlock(&kdat_devices_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kdat_devices);

void kdat_device_debugfs(struct dentry *dir)
{
	debugfs_create_file("devices", 0444, dir, NULL, &kdat_devices_fops);
	debugfs_create_bool("qp_renew", 0600, dir, &kdat_qp_renew_always);
}

int kdat_device_init(void)
{
	return ib_register_client(&kdat_client);
}

void kdat_device_exit(void)
{
	ib_unregister_client(&kdat_client);
}
