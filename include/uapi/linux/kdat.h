/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * kdat: the Direct Access Transport (DAT) on the kernel's RDMA stack.
 *
 * The user/kernel ABI of /dev/kdat. Nothing else belongs in this file.
 *
 * Every command is an ioctl numbered _IO(KDAT_TYPE, KDAT_CMD_*) whose
 * argument points at a struct that begins with "__u32 size", the number of
 * bytes of the struct that user space knows about. The kernel accepts:
 *
 *   size < the first published size of the struct   -> EINVAL
 *   size > what this kernel knows, non-zero tail      -> E2BIG
 *   size > what this kernel knows, all-zero tail      -> works
 *   size > the page size                              -> E2BIG
 *
 * so an older library works with a newer kernel and the reverse. Output
 * fields are written back only up to size. Fields named __reserved must be
 * zero on input and are zero on output. Pointers and 64-bit values are
 * __aligned_u64.
 *
 * Handles are 32-bit, never 0, unique across all open files of /dev/kdat
 * for as long as they live: a handle of another open file is refused, it is
 * never mistaken for one of the caller's own objects.
 *
 * Errno table. Each error has one meaning for every command; libdat maps it
 * to the DAT return code shown.
 *
 *   ENOTTY      unknown command                      -
 *   EFAULT      argument or a pointer in it invalid  -
 *   EINVAL      bad size, non-zero reserved field,   DAT_INVALID_PARAMETER
 *               argument out of range
 *   E2BIG       struct larger than known, non-zero   -
 *               tail
 *   EOPNOTSUPP  unknown flag (DESTROY, RING_WAKE,     DAT_NOT_IMPLEMENTED
 *               POLLER_SET, RMR_BIND and RING_CREATE
 *               answer EINVAL for one)
 *               an atomic DTO on a device without    DAT_MODEL_NOT_SUPPORTED
 *               atomics
 *   EBADF       no such handle for this file, a      DAT_INVALID_HANDLE
 *               handle of the wrong type, or (connect,
 *               accept) an Endpoint without a
 *               connection EVD
 *   EBUSY       object still used by other objects,  DAT_INVALID_STATE
 *               or in a state that forbids the call
 *   ENODEV      no such RDMA device, or the device   DAT_PROVIDER_NOT_FOUND
 *               of the object has been removed       (open) /
 *                                                    DAT_INVALID_STATE
 *   ENOMEM      out of memory, or over a queue's     DAT_INSUFFICIENT_RESOURCES
 *               depth, or over RLIMIT_MEMLOCK, the
 *               caller's memory or RDMA cgroup, or
 *               kdat's limit of objects per file
 *               (kdat(4))
 *   EMSGSIZE    output array too small; the count    - (DEVICE_LIST)
 *               needed is returned
 *               local buffer too small for the data  DAT_LENGTH_ERROR (DTOs)
 *   EACCES      an LMR/RMR lacks the privilege the   DAT_PRIVILEGES_VIOLATION
 *               operation needs, or its context is
 *               not one of the caller's
 *   EPERM       an LMR of another Protection Zone    DAT_PROTECTION_VIOLATION
 *               than the Endpoint's
 *   EAGAIN      no event to dequeue                  DAT_QUEUE_EMPTY
 *   ETIMEDOUT   a wait timed out                     DAT_TIMEOUT_EXPIRED
 *   EINTR       a wait was interrupted by a signal   DAT_INTERRUPTED_CALL
 *   EADDRINUSE  connection qualifier in use          DAT_CONN_QUAL_IN_USE
 *   EADDRNOTAVAIL  remote address not usable from    DAT_INVALID_ADDRESS
 *               this IA
 *   ECONNABORTED  accepting failed; the request was  DAT_ABORT
 *               rejected
 *
 * A DTO of a kind the Endpoint does not take (an RC DTO on a UD Endpoint,
 * a datagram on an RC one) is a handle of the wrong type: EBADF.
 *
 * Numeric values that mirror DAT 2.0 (event numbers, DTO completion
 * status and operation, completion flags, memory privileges, EVD flags)
 * have the values of the DAT 2.0 headers, so libdat passes them through
 * unchanged.
 */
#ifndef _UAPI_LINUX_KDAT_H
#define _UAPI_LINUX_KDAT_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define KDAT_ABI_VERSION	1
#define KDAT_DEVICE_PATH	"/dev/kdat"

/* Device names, NUL-terminated; IB_DEVICE_NAME_MAX in the kernel. */
#define KDAT_NAME_MAX		64

#define KDAT_TYPE		0xDA
#define KDAT_CMD_BASE		0x80

enum {
	KDAT_CMD_QUERY = KDAT_CMD_BASE,
	KDAT_CMD_DEVICE_LIST,
	KDAT_CMD_IA_OPEN,
	KDAT_CMD_IA_QUERY,
	KDAT_CMD_DESTROY,
	KDAT_CMD_PZ_CREATE,
	KDAT_CMD_LMR_CREATE,
	KDAT_CMD_EVD_CREATE,
	KDAT_CMD_EVD_WAIT,
	KDAT_CMD_EP_CREATE,
	KDAT_CMD_EP_QUERY,
	KDAT_CMD_EP_CONNECT,
	KDAT_CMD_EP_DISCONNECT,
	KDAT_CMD_EP_RESET,
	KDAT_CMD_PSP_CREATE,
	KDAT_CMD_CR_QUERY,
	KDAT_CMD_CR_ACCEPT,
	KDAT_CMD_CR_REJECT,
	KDAT_CMD_POST,
	KDAT_CMD_SRQ_CREATE,
	KDAT_CMD_SRQ_SET_LW,
	KDAT_CMD_CNO_CREATE,
	KDAT_CMD_CNO_WAIT,
	KDAT_CMD_EVD_MODIFY_CNO,
	KDAT_CMD_RMR_CREATE,
	KDAT_CMD_RMR_BIND,
	KDAT_CMD_EVD_POST_SE,
	KDAT_CMD_EVD_MODIFY,
	KDAT_CMD_SRQ_RESIZE,
	KDAT_CMD_EP_MODIFY,
	KDAT_CMD_RING_CREATE,
	KDAT_CMD_RING_WAKE,
	KDAT_CMD_POLLER_SET,
	KDAT_CMD_AH_QUERY,
	KDAT_CMD_CNO_AGENT,
};

/**
 * struct kdat_query - KDAT_IOCTL_QUERY: what this kernel offers
 * @size: sizeof(struct kdat_query)
 * @flags: must be 0
 * @abi_version: out: KDAT_ABI_VERSION of the kernel
 * @__reserved: must be 0
 */
struct kdat_query {
	__u32 size;
	__u32 flags;
	__u32 abi_version;
	__u32 __reserved;
};

#define KDAT_IOCTL_QUERY	_IO(KDAT_TYPE, KDAT_CMD_QUERY)

/* Port states, as the kernel's enum ib_port_state. */
enum kdat_port_state {
	KDAT_PORT_NOP = 0,
	KDAT_PORT_DOWN = 1,
	KDAT_PORT_INIT = 2,
	KDAT_PORT_ARMED = 3,
	KDAT_PORT_ACTIVE = 4,
	KDAT_PORT_ACTIVE_DEFER = 5,
};

enum kdat_link_layer {
	KDAT_LINK_LAYER_UNSPECIFIED = 0,
	KDAT_LINK_LAYER_INFINIBAND = 1,
	KDAT_LINK_LAYER_ETHERNET = 2,
};

/**
 * struct kdat_port_info - one port of one RDMA device
 * @name: device name, NUL-terminated
 * @node_guid: node GUID, in network byte order as the device reports it
 * @port_num: port number, from 1
 * @port_state: enum kdat_port_state
 * @link_layer: enum kdat_link_layer
 * @active_mtu: active MTU in bytes
 * @phys_port_cnt: number of ports of the device
 * @__reserved: 0
 */
struct kdat_port_info {
	char name[KDAT_NAME_MAX];
	__aligned_u64 node_guid;
	__u32 port_num;
	__u32 port_state;
	__u32 link_layer;
	__u32 active_mtu;
	__u32 phys_port_cnt;
	__u32 __reserved;
};

/**
 * struct kdat_device_list - KDAT_IOCTL_DEVICE_LIST: every port of every
 *                           RDMA device, one entry each
 * @size: sizeof(struct kdat_device_list)
 * @entry_size: in: sizeof(struct kdat_port_info) as the caller knows it, at
 *              least the first published size and at most 4096. A larger
 *              entry gets its tail zeroed.
 * @num_entries: in: how many entries @entries has room for;
 *               out: how many ports there are. When there are more ports
 *               than room, the first @num_entries are filled and the call
 *               fails with EMSGSIZE.
 * @__reserved: must be 0
 * @entries: in: user pointer to the array (may be 0 when @num_entries is 0)
 */
struct kdat_device_list {
	__u32 size;
	__u32 entry_size;
	__u32 num_entries;
	__u32 __reserved;
	__aligned_u64 entries;
};

#define KDAT_IOCTL_DEVICE_LIST	_IO(KDAT_TYPE, KDAT_CMD_DEVICE_LIST)

/**
 * struct kdat_ia_open - KDAT_IOCTL_IA_OPEN: open an Interface Adapter on one
 *                       port of an RDMA device
 * @size: sizeof(struct kdat_ia_open)
 * @port_num: in: port number, from 1 (EINVAL when the device has no such
 *            port)
 * @name: in: device name, NUL-terminated (EINVAL when it is not; ENODEV when
 *        there is no such device)
 * @flags: must be 0
 * @out_ia_handle: out: the IA's handle
 */
struct kdat_ia_open {
	__u32 size;
	__u32 port_num;
	char name[KDAT_NAME_MAX];
	__u32 flags;
	__u32 out_ia_handle;
};

#define KDAT_IOCTL_IA_OPEN	_IO(KDAT_TYPE, KDAT_CMD_IA_OPEN)

enum kdat_ia_state {
	/* The device is present; the IA works. */
	KDAT_IA_STATE_ACTIVE = 1,
	/* The device was removed; only query and destroy still work. */
	KDAT_IA_STATE_DEVICE_GONE = 2,
};

/**
 * struct kdat_ia_query - KDAT_IOCTL_IA_QUERY
 * @size: sizeof(struct kdat_ia_query)
 * @ia_handle: in: the IA
 * @state: out: enum kdat_ia_state
 * @port_num: out: the IA's port
 * @name: out: the device name when the IA was opened
 * @node_guid: out: as in struct kdat_port_info
 * @port_state: out: enum kdat_port_state now; KDAT_PORT_DOWN once the
 *              device is gone
 * @__reserved: must be 0
 *
 * Added after the first published size (96), the device's limits as
 * kdat offers them (0 once the device is gone):
 * @fw_ver: firmware version, as the device reports it
 * @max_mr_size: largest region one LMR may cover
 * @vendor_id, @vendor_part_id, @hw_ver: the device's
 * @max_qp: Endpoints; @max_qp_wr: DTOs outstanding per EP queue (the
 *           most an Endpoint may ask for, each way: kdat keeps work
 *           requests of its own on the QP; at most 4096)
 * @max_send_sge, @max_recv_sge: IOV segments (kdat caps them at 32)
 * @max_cq, @max_cqe: DTO EVDs, and their length
 * @max_mr, @max_pd: LMRs, PZs
 * @max_qp_rd_atom, @max_qp_init_rd_atom: RDMA reads in and out per EP
 * @max_srq, @max_srq_wr, @max_srq_sge: SRQs and their size
 * @max_msg_size: largest message (the port's)
 * @limits: out (ignored in): what the port's transport cannot do, a mask of
 *          enum kdat_ia_limit (0 from a kernel before it: none known)
 *
 * Added after size 184 (0 where the port or the device is gone):
 * @active_mtu: the port's active path MTU, in bytes (256 to 4096)
 * @atomic_cap: enum kdat_atomic_cap: the device's remote atomics
 * @gid: the port's GID at index 0, network byte order
 *
 * Added after size 208 (0 once the device is gone):
 * @max_read_sge: IOV segments per RDMA read (at most @max_send_sge; 1 on
 *                iWARP, whose read response fills one buffer)
 * @__reserved3: must be 0
 */
struct kdat_ia_query {
	__u32 size;
	__u32 ia_handle;
	__u32 state;
	__u32 port_num;
	char name[KDAT_NAME_MAX];
	__aligned_u64 node_guid;
	__u32 port_state;
	__u32 __reserved;
	__aligned_u64 fw_ver;
	__aligned_u64 max_mr_size;
	__u32 vendor_id;
	__u32 vendor_part_id;
	__u32 hw_ver;
	__u32 max_qp;
	__u32 max_qp_wr;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_cq;
	__u32 max_cqe;
	__u32 max_mr;
	__u32 max_pd;
	__u32 max_qp_rd_atom;
	__u32 max_qp_init_rd_atom;
	__u32 max_srq;
	__u32 max_srq_wr;
	__u32 max_srq_sge;
	__u32 max_msg_size;
	__u32 limits;
	__u32 active_mtu;
	__u32 atomic_cap;
	__u8 gid[16];
	__u32 max_read_sge;
	__u32 __reserved3;
};

/* What remote atomic operations the device gives (ib_core's atomic_cap). */
enum kdat_atomic_cap {
	KDAT_ATOMIC_NONE = 0,	/* none */
	KDAT_ATOMIC_HCA = 1,	/* atomic among this device's QPs */
	KDAT_ATOMIC_GLOB = 2,	/* atomic against the CPUs too */
};

/*
 * What an IA's transport cannot do (struct kdat_ia_query's @limits),
 * decided from the device's capabilities, the same for every IA of a
 * port. What a limit refuses is answered with EOPNOTSUPP, or EACCES for a
 * read sink's privileges.
 */
enum kdat_ia_limit {
	/* No UD Endpoints (iWARP: no datagram service, no IB CM SIDR). */
	KDAT_IA_NO_UD = 1 << 0,
	/* No immediate data (iWARP): no KDAT_DTO_RDMA_WRITE_IMM. */
	KDAT_IA_NO_IMM_DATA = 1 << 1,
	/* No remote atomics (atomic_cap KDAT_ATOMIC_NONE). */
	KDAT_IA_NO_ATOMICS = 1 << 2,
	/*
	 * An RDMA read's local segments must be in LMRs with the remote
	 * write privilege too (iWARP: the read response is a tagged write
	 * into the sink).
	 */
	KDAT_IA_READ_SINK_REMOTE_WRITE = 1 << 3,
};

#define KDAT_IOCTL_IA_QUERY	_IO(KDAT_TYPE, KDAT_CMD_IA_QUERY)

/**
 * struct kdat_destroy - KDAT_IOCTL_DESTROY: destroy any object by handle
 * @size: sizeof(struct kdat_destroy); 8 (up to @handle) is still accepted
 * @handle: in: the object. EBADF when it is not the caller's; EBUSY when
 *          other objects still use it (DAT_INVALID_STATE). What the
 *          file's submission rings published before the call is taken
 *          first (as KDAT_RING_WAKE_SUBMIT): those posts may name it. An
 *          LMR waits, 0.2 s at most, for the requests the file's EPs on
 *          its PZ had at the device to leave it.
 * @flags: in: 0, or KDAT_DESTROY_IA_ALL on an IA: destroy, newest first,
 *         every object of this file created on the IA, then the IA
 *         (dat_ia_close's abrupt close). EBUSY, and nothing destroyed,
 *         while objects of another IA use this IA's EVDs.
 * @__reserved: 0
 */
struct kdat_destroy {
	__u32 size;
	__u32 handle;
	__u32 flags;
	__u32 __reserved;
};

#define KDAT_DESTROY_IA_ALL	(1U << 0)

#define KDAT_IOCTL_DESTROY	_IO(KDAT_TYPE, KDAT_CMD_DESTROY)

/* Protection Zone: an ib_pd on the IA's device. */
struct kdat_pz_create {
	__u32 size;
	__u32 ia_handle;
	__u32 flags;		/* must be 0 */
	__u32 out_pz_handle;
};

#define KDAT_IOCTL_PZ_CREATE	_IO(KDAT_TYPE, KDAT_CMD_PZ_CREATE)

/* Memory privileges (DAT_MEM_PRIV_FLAGS values). */
#define KDAT_MEM_PRIV_LOCAL_READ	0x01
#define KDAT_MEM_PRIV_REMOTE_READ	0x02
#define KDAT_MEM_PRIV_LOCAL_WRITE	0x10
#define KDAT_MEM_PRIV_REMOTE_WRITE	0x20
#define KDAT_MEM_PRIV_ALL		0x33
/*
 * The peer's compare-and-swap and fetch-and-add may target the memory
 * (DAT_IB_MEM_PRIV_REMOTE_ATOMIC of the DAT IB extensions). On a device
 * without atomics
 * (kdat_ia_query.atomic_cap KDAT_ATOMIC_NONE) it is accepted and grants
 * nothing.
 */
#define KDAT_MEM_PRIV_REMOTE_ATOMIC	0x40

/**
 * struct kdat_lmr_create - KDAT_IOCTL_LMR_CREATE: register the caller's
 *     memory [@addr, @addr + @length) in a Protection Zone
 * @size: sizeof(struct kdat_lmr_create)
 * @pz_handle: in: the Protection Zone
 * @addr: in: start of the region, a user virtual address of the caller
 * @length: in: bytes, > 0
 * @mem_priv: in: KDAT_MEM_PRIV_* (no other bit); local write implies
 *            local read, as on every RDMA device
 * @flags: must be 0
 * @out_lmr_handle: out
 * @out_lmr_context: out: names the LMR in an IOV (DAT_LMR_TRIPLET)
 * @out_rmr_context: out: names the region to the peer (remote access)
 * @__reserved: 0
 *
 * The pages are pinned (long term) and charged to RLIMIT_MEMLOCK: over the
 * limit the call fails with ENOMEM and nothing stays pinned.
 */
struct kdat_lmr_create {
	__u32 size;
	__u32 pz_handle;
	__aligned_u64 addr;
	__aligned_u64 length;
	__u32 mem_priv;
	__u32 flags;
	__u32 out_lmr_handle;
	__u32 out_lmr_context;
	__u32 out_rmr_context;
	__u32 __reserved;
};

#define KDAT_IOCTL_LMR_CREATE	_IO(KDAT_TYPE, KDAT_CMD_LMR_CREATE)

/* EVD kinds (DAT_EVD_FLAGS values); an EVD may combine them. */
#define KDAT_EVD_SOFTWARE		0x001
#define KDAT_EVD_CR			0x010
#define KDAT_EVD_DTO			0x020
#define KDAT_EVD_CONNECTION		0x040
#define KDAT_EVD_RMR_BIND		0x080
#define KDAT_EVD_ASYNC			0x100

/**
 * struct kdat_evd_create - KDAT_IOCTL_EVD_CREATE: an Event Dispatcher
 * @size: sizeof(struct kdat_evd_create)
 * @ia_handle: in: the IA
 * @qlen: in: events the EVD must hold, 1 .. 65536
 * @evd_flags: in: KDAT_EVD_*
 * @out_evd_handle: out
 * @out_qlen: out: events it holds (at least @qlen)
 * @cno_handle: in: 0, or a CNO the EVD triggers (added in ABI 1 after the
 *              first size of this struct, 24: older callers pass none)
 * @__reserved: 0
 *
 * A DTO EVD owns a completion queue of at least @qlen entries. An
 * Endpoint that would have more DTOs outstanding on it than the queue
 * holds grows it (ib_resize_cq); EP create fails with ENOMEM only when
 * the device cannot. When an event arrives while @qlen events are
 * queued, it is dropped and a KDAT_EVENT_ASYNC_EVD_OVERFLOW event is
 * queued at once, in a slot kept for it (once until the consumer has
 * read past it); nothing is lost silently.
 */
struct kdat_evd_create {
	__u32 size;
	__u32 ia_handle;
	__u32 qlen;
	__u32 evd_flags;
	__u32 out_evd_handle;
	__u32 out_qlen;
	__u32 cno_handle;
	__u32 __reserved;
};

#define KDAT_IOCTL_EVD_CREATE	_IO(KDAT_TYPE, KDAT_CMD_EVD_CREATE)

/* Event numbers (DAT_EVENT_NUMBER values). */
#define KDAT_EVENT_DTO_COMPLETION		0x00001
#define KDAT_EVENT_RMR_BIND_COMPLETION		0x01001
#define KDAT_EVENT_CONNECTION_REQUEST		0x02001
#define KDAT_EVENT_CONNECTION_ESTABLISHED	0x04001
#define KDAT_EVENT_CONNECTION_PEER_REJECTED	0x04002
#define KDAT_EVENT_CONNECTION_NON_PEER_REJECTED	0x04003
#define KDAT_EVENT_CONNECTION_ACCEPT_ERROR	0x04004
#define KDAT_EVENT_CONNECTION_DISCONNECTED	0x04005
#define KDAT_EVENT_CONNECTION_BROKEN		0x04006
#define KDAT_EVENT_CONNECTION_TIMED_OUT		0x04007
#define KDAT_EVENT_CONNECTION_UNREACHABLE	0x04008
#define KDAT_EVENT_ASYNC_EVD_OVERFLOW		0x08001
#define KDAT_EVENT_ASYNC_IA_CATASTROPHIC	0x08002
/*
 * The QP of an EP on an SRQ went to error (its connection ended) and takes
 * no more of the SRQ's buffers: IB's "last WQE reached". @handle is the EP;
 * it comes after the EP's receive completions.
 */
#define KDAT_EVENT_ASYNC_EP_BROKEN		0x08003
/*
 * An SRQ fell below its low watermark (DAT has no event number of its own
 * for it: DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR with the reason
 * DAT_SRQ_LOW_WATERMARK_EVENT); @handle is the SRQ. One event per
 * KDAT_IOCTL_SRQ_SET_LW.
 */
#define KDAT_EVENT_ASYNC_SRQ_LOW_WATERMARK	0x08005
/* A software event (DAT_SOFTWARE_EVENT); @cookie is the consumer's pointer. */
#define KDAT_EVENT_SOFTWARE			0x10001
/*
 * UD Endpoints (see "UD Endpoints" below), the values of DAT_IB_EVENT_NUMBER
 * in dat_ib_extensions.h:
 * a UD connection request on a PSP's CR EVD (as KDAT_EVENT_CONNECTION_REQUEST:
 * @handle the PSP, @cr_handle the CR, @conn_qual, @private_data_len);
 */
#define KDAT_EVENT_UD_CONNECTION_REQUEST	0x40001
/*
 * on the Endpoint's connection EVD: an address handle resolved (@handle the
 * EP, @ah_handle the new AH, @remote_qpn the peer's QP, @private_data_len
 * the peer's private data, which KDAT_IOCTL_AH_QUERY returns);
 */
#define KDAT_EVENT_UD_ESTABLISHED		0x40002
/*
 * the peer rejected the UD connect (@private_data_len: its private data,
 * which KDAT_IOCTL_EP_QUERY returns, the latest reject's);
 */
#define KDAT_EVENT_UD_REJECTED			0x40003
/*
 * a UD connect or accept failed otherwise (unreachable, timed out, the
 * address handle could not be made): no AH.
 */
#define KDAT_EVENT_UD_ERROR			0x40004

/* DTO completion status (DAT_DTO_COMPLETION_STATUS values). */
enum kdat_dto_status {
	KDAT_DTO_SUCCESS = 0,
	KDAT_DTO_ERR_FLUSHED = 1,
	KDAT_DTO_ERR_LOCAL_LENGTH = 2,
	KDAT_DTO_ERR_LOCAL_EP = 3,
	KDAT_DTO_ERR_LOCAL_PROTECTION = 4,
	KDAT_DTO_ERR_BAD_RESPONSE = 5,
	KDAT_DTO_ERR_REMOTE_ACCESS = 6,
	KDAT_DTO_ERR_REMOTE_RESPONDER = 7,
	KDAT_DTO_ERR_TRANSPORT = 8,
	KDAT_DTO_ERR_RECEIVER_NOT_READY = 9,
	KDAT_DTO_ERR_PARTIAL_PACKET = 10,
	KDAT_DTO_ERR_RMR_OPERATION = 11,
};

/*
 * DTO kinds: DAT_DTO_TYPE values, and from 8 those of the DAT IB
 * extensions (DAT_IB_DTOS in dat_ib_extensions.h).
 */
enum kdat_dto_op {
	KDAT_DTO_SEND = 0,
	KDAT_DTO_RDMA_WRITE = 1,
	KDAT_DTO_RDMA_READ = 2,
	KDAT_DTO_RECEIVE = 3,
	/* An RDMA write whose last packet carries 4 bytes of immediate data,
	 * which consume a receive at the peer.
	 */
	KDAT_DTO_RDMA_WRITE_IMM = 8,
	/* Completions only: a receive an RDMA write with immediate data took. */
	KDAT_DTO_RECV_RDMA_IMM = 9,
	/* Atomics on 8 bytes of the peer's memory: see struct kdat_dto_ext. */
	KDAT_DTO_FETCH_ADD = 10,
	KDAT_DTO_CMP_SWAP = 11,
	/* Completions only: a receive of a message with immediate data. */
	KDAT_DTO_RECV_MSG_IMM = 12,
	/*
	 * A datagram, on a UD Endpoint, to the peer of one of its address
	 * handles (struct kdat_dto_ext.ah_handle).
	 */
	KDAT_DTO_SEND_UD = 13,
	/* Completions only: a UD Endpoint's receive, without and with
	 * immediate data.
	 */
	KDAT_DTO_RECV_UD = 14,
	KDAT_DTO_RECV_UD_IMM = 15,
};

/**
 * struct kdat_event - one event, as KDAT_IOCTL_EVD_WAIT returns it
 * @event_number: KDAT_EVENT_*
 * @status: DTO events: enum kdat_dto_status
 * @cookie: DTO events: the user_cookie of the DTO, unchanged
 * @transferred_length: DTO events: bytes transferred
 * @handle: DTO, connection and EP events: the Endpoint; connection request
 *          events: the Public Service Point; RMR bind events: the RMR
 * @cr_handle: connection request events: the new Connection Request
 * @operation: DTO events: enum kdat_dto_op
 * @private_data_len: connection established / peer rejected: bytes of
 *                    private data the peer sent (KDAT_IOCTL_EP_QUERY
 *                    returns them)
 * @conn_qual: connection request events: the qualifier it arrived on
 * @post_error: DTO events of a ring entry the kernel refused: the positive
 *              errno KDAT_IOCTL_POST would have returned for it (nothing
 *              was posted; @status is KDAT_DTO_ERR_LOCAL_PROTECTION for
 *              EACCES/EPERM, KDAT_DTO_ERR_LOCAL_LENGTH for EMSGSIZE,
 *              KDAT_DTO_ERR_LOCAL_EP otherwise); 0 for every other event
 * @imm_data: DTO events of a receive that took immediate data (@operation
 *            KDAT_DTO_RECV_RDMA_IMM or KDAT_DTO_RECV_MSG_IMM): its 4 bytes
 *            in the order they travelled, which is the memory order of the
 *            sender's __u32 (struct kdat_dto_ext.imm_data); 0 for every
 *            other event. Added in place of a reserved 0: its size and
 *            the layout stay.
 * @ah_handle: KDAT_EVENT_UD_ESTABLISHED: the new address handle; else 0
 * @remote_qpn: KDAT_EVENT_UD_ESTABLISHED: the peer's QP number; else 0
 *              (both added in place of a reserved 0 of 8 bytes)
 *
 * DTO completions of a receive carry @operation KDAT_DTO_RECEIVE, or
 * KDAT_DTO_RECV_RDMA_IMM (an RDMA write with immediate data took it;
 * @transferred_length is the write's length) or KDAT_DTO_RECV_MSG_IMM; a
 * request's completion carries the op it was posted with. A failed
 * receive says KDAT_DTO_RECEIVE: the device does not say what took it.
 * A UD Endpoint's receives say KDAT_DTO_RECV_UD (KDAT_DTO_RECV_UD_IMM for a
 * datagram with immediate data), failed ones too; @transferred_length
 * counts the 40 bytes of the Global Route Header that precede the data
 * in the first segment (see "UD Endpoints").
 */
struct kdat_event {
	__u32 event_number;
	__u32 status;
	__aligned_u64 cookie;
	__aligned_u64 transferred_length;
	__u32 handle;
	__u32 cr_handle;
	__u32 operation;
	__u32 private_data_len;
	__aligned_u64 conn_qual;
	__u32 post_error;
	__u32 imm_data;
	__u32 ah_handle;
	__u32 remote_qpn;
};

/**
 * struct kdat_evd_wait - KDAT_IOCTL_EVD_WAIT: dequeue events, waiting
 *     for them if asked to
 * @size: sizeof(struct kdat_evd_wait)
 * @evd_handle: in
 * @threshold: in: 0: dequeue what is there, never wait (EAGAIN when
 *             empty); n > 0: wait until n events are queued (EINVAL
 *             above the EVD's qlen)
 * @max_events: in: room in @events, >= 1; 0 on an EVD with a completion
 *              ring (KDAT_IOCTL_RING_CREATE), whose events are read from
 *              the ring: the call then only waits (threshold > 0) or
 *              brings in what the kernel holds back (threshold 0: the
 *              receive completions of solicited-wait EPs), and sets
 *              @out_nmore to the events in the ring
 * @timeout_us: in: how long to wait; KDAT_WAIT_FOREVER for ever; ETIMEDOUT
 *              when it passes first (the events stay queued)
 * @events: in: user pointer to @max_events struct kdat_event
 * @out_count: out: events written
 * @out_nmore: out: events still queued after them
 *
 * The wait sleeps (interruptibly: EINTR); it never spins. Only one thread
 * may wait on an EVD at a time (EBUSY for a second one, as DAT says).
 */
#define KDAT_WAIT_FOREVER	(~0ULL)

struct kdat_evd_wait {
	__u32 size;
	__u32 evd_handle;
	__u32 threshold;
	__u32 max_events;
	__aligned_u64 timeout_us;
	__aligned_u64 events;
	__u32 out_count;
	__u32 out_nmore;
};

#define KDAT_IOCTL_EVD_WAIT	_IO(KDAT_TYPE, KDAT_CMD_EVD_WAIT)

/* Completion flags (DAT_COMPLETION_FLAGS values). */
#define KDAT_COMPLETION_SUPPRESS	0x01
#define KDAT_COMPLETION_SOLICITED_WAIT	0x02
#define KDAT_COMPLETION_UNSIGNALLED	0x04
#define KDAT_COMPLETION_BARRIER_FENCE	0x08

/* Endpoint states: kdat's own numbering (libdat maps them to DAT's). */
enum kdat_ep_state {
	KDAT_EP_STATE_UNCONNECTED = 0,
	KDAT_EP_STATE_RESERVED = 1,
	KDAT_EP_STATE_PASSIVE_CONNECTION_PENDING = 2,
	KDAT_EP_STATE_ACTIVE_CONNECTION_PENDING = 3,
	KDAT_EP_STATE_TENTATIVE_CONNECTION_PENDING = 4,
	KDAT_EP_STATE_CONNECTED = 5,
	KDAT_EP_STATE_DISCONNECT_PENDING = 6,
	KDAT_EP_STATE_DISCONNECTED = 7,
	KDAT_EP_STATE_COMPLETION_PENDING = 8,
};

/**
 * struct kdat_ep_attr - the attributes of an Endpoint
 * @max_recv_dtos: receives outstanding at once
 * @max_request_dtos: sends, RDMA reads and writes outstanding at once
 * @max_recv_iov: segments per receive IOV
 * @max_request_iov: segments per send/RDMA IOV (a DTO may use more, up to
 *                   what the device takes per work request, at most 32:
 *                   EINVAL beyond that)
 * @max_rdma_read_in: RDMA reads the peer may have outstanding on us
 * @max_rdma_read_out: RDMA reads we may have outstanding
 * @recv_completion_flags: KDAT_COMPLETION_* the receive DTOs may use:
 *                         KDAT_COMPLETION_UNSIGNALLED allows it
 * @request_completion_flags: likewise for sends and RDMA
 */
struct kdat_ep_attr {
	__u32 max_recv_dtos;
	__u32 max_request_dtos;
	__u32 max_recv_iov;
	__u32 max_request_iov;
	__u32 max_rdma_read_in;
	__u32 max_rdma_read_out;
	__u32 recv_completion_flags;
	__u32 request_completion_flags;
};

/**
 * struct kdat_ep_timers - an RC Endpoint's transport timers, what DAT
 *     programs give as the provider-specific EP attributes of the same
 *     names (dat_ep_create(3dat))
 * @set: in: the KDAT_EP_TIMER_* of the fields given (EOPNOTSUPP for
 *     others); the rest take kdat's defaults (kdat(4)) and must be 0.
 *     out: all of them, or none (0, every field 0) for a UD Endpoint,
 *     which has no connection
 * @ack_timeout: the RC local ACK timeout, 4.096 us x 2^N (8..31: at
 *     least 1 ms), or 0: the RDMA CM's own. The transport gives up on a
 *     request after @retry_count + 1 of them (iWARP keeps TCP's timers
 *     instead)
 * @retry_count: transport retries before a request fails (0..7; rxe takes
 *     7 as for ever)
 * @rnr_timer: how long a peer whose send found no receive posted here
 *     waits before it sends again, the IB encoding (0..31; 0: 655 ms,
 *     12: 0.64 ms)
 * @keepalive_ms: while connected, a zero-byte RDMA write to the peer this
 *     often, so that a dead peer breaks an idle connection (at least 100,
 *     or 0: never)
 * @__reserved: 0
 *
 * EINVAL for a value out of range, a field not named in @set that is not
 * 0, or @__reserved not 0. Fixed at create, they apply to every
 * connection the Endpoint makes or accepts. (The floors keep the kernel's
 * own work for a user's EP, which no cgroup is charged for, from running
 * every jiffy.)
 */
struct kdat_ep_timers {
	__u32 set;
	__u32 ack_timeout;
	__u32 retry_count;
	__u32 rnr_timer;
	__u32 keepalive_ms;
	__u32 __reserved;
};

#define KDAT_EP_TIMER_ACK_TIMEOUT	(1U << 0)
#define KDAT_EP_TIMER_RETRY_COUNT	(1U << 1)
#define KDAT_EP_TIMER_RNR_TIMER		(1U << 2)
#define KDAT_EP_TIMER_KEEPALIVE		(1U << 3)
#define KDAT_EP_TIMER_ALL		0xf

/**
 * struct kdat_ep_create - KDAT_IOCTL_EP_CREATE: an RC Endpoint (its QP is
 *     created at once and accepts receives in every state), or with
 *     KDAT_EP_CREATE_UD a UD one (see "UD Endpoints" below)
 * @size: sizeof(struct kdat_ep_create)
 * @pz_handle: in: its Protection Zone
 * @recv_evd_handle: in: DTO EVD for receive completions
 * @request_evd_handle: in: DTO EVD for send/RDMA completions
 * @connect_evd_handle: in: connection EVD, or 0 for none (DAT_HANDLE_NULL:
 *                      the Endpoint then never connects; a connect or an
 *                      accept with it answers EBADF, the request kept)
 * @flags: 0 or KDAT_EP_CREATE_UD (EOPNOTSUPP for other bits)
 * @attr: in: wanted attributes; out: what the Endpoint got
 * @out_ep_handle: out
 * @srq_handle: in: 0, or a Shared Receive Queue of the same PZ whose
 *              buffers the Endpoint receives into (it then takes no
 *              receives of its own; max_recv_dtos and max_recv_iov are
 *              the SRQ's)
 * @timers: in: the transport timers wanted; out: what the Endpoint got
 *          (a struct without it: kdat's defaults)
 */
struct kdat_ep_create {
	__u32 size;
	__u32 pz_handle;
	__u32 recv_evd_handle;
	__u32 request_evd_handle;
	__u32 connect_evd_handle;
	__u32 flags;
	struct kdat_ep_attr attr;
	__u32 out_ep_handle;
	__u32 srq_handle;
	struct kdat_ep_timers timers;
};

#define KDAT_IOCTL_EP_CREATE	_IO(KDAT_TYPE, KDAT_CMD_EP_CREATE)

/*
 * UD Endpoints (DAT_IB_SERVICE_TYPE_UD of the DAT IB extensions).
 *
 * KDAT_IOCTL_EP_CREATE with KDAT_EP_CREATE_UD makes an Endpoint on an
 * Unreliable Datagram QP, ready at once with the Q_Key KDAT_UD_QKEY (the
 * RDMA CM's UD Q_Key). It has no connection: it stays UNCONNECTED, and
 * takes datagrams and receives from its creation on. It takes no SRQ and
 * no RDMA reads (EINVAL when max_rdma_read_in or _out is not 0, or
 * srq_handle not 0); an RC DTO on it is refused with EBADF, and so is a
 * datagram on an RC Endpoint.
 *
 * A datagram (KDAT_DTO_SEND_UD) goes to the peer of one of the Endpoint's
 * address handles (AH: an object of the file, named in struct
 * kdat_dto_ext.ah_handle: EBADF when it is no AH of the caller's, EINVAL
 * when it is another Endpoint's), to the QP number and Q_Key the AH was
 * resolved with. It carries at most the port's active MTU (EMSGSIZE
 * beyond: the device would drop it silently). Its data arrives after a
 * 40-byte Global Route Header at the front of the receive buffer: a
 * receive holds 40 bytes more than the datagrams it takes, and its
 * completion's length counts them. A datagram in flight holds its AH:
 * destroying an AH answers EBUSY until its datagrams have completed.
 *
 * AHs are made by the "connections" of UD. KDAT_IOCTL_EP_CONNECT on a UD
 * Endpoint resolves the peer's address and route and sends a service ID
 * resolution request (SIDR) through the RDMA CM, in its UDP port space,
 * to the qualifier's port; an Endpoint may have up to KDAT_UD_MAX_CONNS
 * connects and accepts under way (ENOMEM past them). Each is charged to
 * its caller when it starts, as the AH it makes: one object of the file
 * and one HCA object of the caller's RDMA cgroup (ENOMEM when either is
 * spent), kept by the AH or given back when none is made. A PSP
 * listens on the qualifier's port in both port spaces (TCP for RC, UDP for
 * UD); a UD request arrives as KDAT_EVENT_UD_CONNECTION_REQUEST.
 * KDAT_IOCTL_CR_ACCEPT answers one with a UD Endpoint (EINVAL with an RC
 * one; an RC request with a UD one likewise), giving the requester the
 * Endpoint's QP number and Q_Key, then makes an AH back to the requester
 * (resolving its address and route). An Endpoint may accept any number of
 * requests, and the CR is gone after the call as for RC. Each AH made is
 * reported with KDAT_EVENT_UD_ESTABLISHED on the Endpoint's connection EVD
 * (the active side's with the accepter's private data, the passive side's
 * with the requester's); a connect or accept that makes none, with
 * KDAT_EVENT_UD_REJECTED or KDAT_EVENT_UD_ERROR. An AH belongs to its
 * Endpoint, which cannot be destroyed while it has AHs (EBUSY);
 * KDAT_IOCTL_DESTROY destroys an AH, KDAT_IOCTL_AH_QUERY describes one.
 * Destroying the Endpoint (or closing the file) gives up the connects and
 * accepts still under way.
 *
 * On the wire, every SIDR message kdat sends (request, reply, reject)
 * carries a 12-byte header at the start of its private data (in a request,
 * after the RDMA CM's own), then the consumer's data:
 *   bytes 0, 1   DAT version: 2, 0
 *   bytes 2, 3   the consumer's data length, big endian
 *   bytes 4-7    the sender's QP number, big endian (a reject: 0)
 *   bytes 8-11   the sender's Q_Key, big endian (a reject: 0)
 * A request without it is rejected (its sender's QP number is needed for
 * the AH back); a reply without it brings no private data. OFA DAPL's cma
 * provider has no UD Endpoints (its UD providers, ucm and scm, use CMs of
 * their own), so there is no other format to match.
 */
#define KDAT_EP_CREATE_UD	(1U << 0)
#define KDAT_UD_QKEY		0x01234567
#define KDAT_UD_MAX_CONNS	64

/* An IPv4 or IPv6 address and port, in network byte order. */
struct kdat_sockaddr {
	__u16 family;		/* AF_INET or AF_INET6 */
	__be16 port;
	__u32 scope_id;
	__u8 addr[16];		/* IPv4: the first 4 bytes */
};

/* Private data may be at most this long (the RDMA CM's REQ limit). */
#define KDAT_MAX_PRIVATE_DATA	56
/* Private data returned by EP/CR query: up to the REP limit. */
#define KDAT_PRIVATE_DATA_BUF	196

/**
 * struct kdat_ep_query - KDAT_IOCTL_EP_QUERY
 * @size: sizeof(struct kdat_ep_query)
 * @ep_handle: in
 * @state: out: enum kdat_ep_state
 * @private_data_len: out: private data the peer sent with its accept or
 *                    reject (0 if none yet). A reject's is what follows
 *                    the 4-byte version word a DAT peer puts first (bytes
 *                    02 00 02 00 from kdat and OFA DAPL): over IB the CM
 *                    pads it, so it is followed by zeros. A reject without
 *                    that word is reported as not the peer's
 *                    (KDAT_EVENT_CONNECTION_NON_PEER_REJECTED), with none.
 * @attr: out
 * @remote: out: the peer's address once connected
 * @local: out: our address once connected
 * @out_recv_posted: out: receives outstanding
 * @out_request_posted: out: requests outstanding
 * @private_data: out
 * @timers: out: the transport timers
 */
struct kdat_ep_query {
	__u32 size;
	__u32 ep_handle;
	__u32 state;
	__u32 private_data_len;
	struct kdat_ep_attr attr;
	struct kdat_sockaddr remote;
	struct kdat_sockaddr local;
	__u32 out_recv_posted;
	__u32 out_request_posted;
	__u8 private_data[KDAT_PRIVATE_DATA_BUF];
	__u32 __reserved;
	struct kdat_ep_timers timers;
};

#define KDAT_IOCTL_EP_QUERY	_IO(KDAT_TYPE, KDAT_CMD_EP_QUERY)

/**
 * struct kdat_ep_connect - KDAT_IOCTL_EP_CONNECT: connect to a PSP/RSP
 * @size: sizeof(struct kdat_ep_connect)
 * @ep_handle: in: an UNCONNECTED (or DISCONNECTED) Endpoint
 * @remote: in: the peer IA's address
 * @conn_qual: in: the peer's connection qualifier. It names an RDMA CM port
 *             (16 bits) as OFA DAPL's cma provider maps it: a qualifier
 *             up to 65535 is the port, a larger one is port 33534 +
 *             qualifier % 32001
 * @timeout_us: in: for address and route resolution, in 1 ms steps
 *              up to 5 s (a longer one is 5 s); KDAT_WAIT_FOREVER for
 *              that default, 5 s
 * @private_data: in: user pointer, @private_data_len bytes
 * @private_data_len: in: <= KDAT_MAX_PRIVATE_DATA
 * @flags: must be 0
 *
 * Returns at once; the outcome arrives as a connection event on the
 * Endpoint's connect EVD. On a UD Endpoint, in any state, it asks the
 * peer for an address handle (see "UD Endpoints").
 */
struct kdat_ep_connect {
	__u32 size;
	__u32 ep_handle;
	struct kdat_sockaddr remote;
	__aligned_u64 conn_qual;
	__aligned_u64 timeout_us;
	__aligned_u64 private_data;
	__u32 private_data_len;
	__u32 flags;
};

#define KDAT_IOCTL_EP_CONNECT	_IO(KDAT_TYPE, KDAT_CMD_EP_CONNECT)

/*
 * DAT_CLOSE_GRACEFUL_FLAG: the sends and RDMAs in progress complete before
 * the connection goes (they are flushed after 5 s); without it (abrupt)
 * they are flushed at once. Receives are flushed either way.
 */
#define KDAT_CLOSE_GRACEFUL	0x01

/**
 * struct kdat_ep_handle_cmd - KDAT_IOCTL_EP_DISCONNECT, KDAT_IOCTL_EP_RESET
 *     (what the file's submission rings published before the call is
 *     taken first, as KDAT_RING_WAKE_SUBMIT takes it for every ring, even
 *     when the call then fails: the Endpoint's own entries go before its
 *     disconnect or are flushed by its reset, the other queues' are taken
 *     as a pass takes them)
 * @size: sizeof(struct kdat_ep_handle_cmd)
 * @ep_handle: in
 * @flags: disconnect: KDAT_CLOSE_GRACEFUL or 0 (abrupt); reset: 0
 * @__reserved: 0
 */
struct kdat_ep_handle_cmd {
	__u32 size;
	__u32 ep_handle;
	__u32 flags;
	__u32 __reserved;
};

#define KDAT_IOCTL_EP_DISCONNECT	_IO(KDAT_TYPE, KDAT_CMD_EP_DISCONNECT)
#define KDAT_IOCTL_EP_RESET	_IO(KDAT_TYPE, KDAT_CMD_EP_RESET)

/**
 * struct kdat_psp_create - KDAT_IOCTL_PSP_CREATE: listen on a connection
 *     qualifier of the IA's device
 * @size: sizeof(struct kdat_psp_create)
 * @ia_handle: in
 * @evd_handle: in: a CR EVD for the connection requests
 * @flags: must be 0
 * @conn_qual: in: its RDMA CM port as for KDAT_IOCTL_EP_CONNECT, in both the
 *             TCP and the UDP port spaces (an RSP: TCP only; EADDRINUSE
 *             when either is taken); events and queries report the
 *             qualifier
 * @out_psp_handle: out
 * @rsp_ep_handle: in: 0 for a PSP; for a Reserved Service Point, the
 *                 UNCONNECTED Endpoint it reserves (it becomes RESERVED).
 *                 An RSP takes one connection request, for that Endpoint
 *                 (CR accept with any other fails with EINVAL), and
 *                 refuses the others. A UD Endpoint is refused (EINVAL).
 */
struct kdat_psp_create {
	__u32 size;
	__u32 ia_handle;
	__u32 evd_handle;
	__u32 flags;
	__aligned_u64 conn_qual;
	__u32 out_psp_handle;
	__u32 rsp_ep_handle;
};

#define KDAT_IOCTL_PSP_CREATE	_IO(KDAT_TYPE, KDAT_CMD_PSP_CREATE)

/**
 * struct kdat_cr_query - KDAT_IOCTL_CR_QUERY
 * @size: sizeof(struct kdat_cr_query)
 * @cr_handle: in
 * @psp_handle: out: where the request arrived
 * @private_data_len: out
 * @conn_qual: out
 * @remote: out: the requester's address
 * @private_data: out: what the requester sent
 */
struct kdat_cr_query {
	__u32 size;
	__u32 cr_handle;
	__u32 psp_handle;
	__u32 private_data_len;
	__aligned_u64 conn_qual;
	struct kdat_sockaddr remote;
	__u8 private_data[KDAT_PRIVATE_DATA_BUF];
	__u32 __reserved;
};

#define KDAT_IOCTL_CR_QUERY	_IO(KDAT_TYPE, KDAT_CMD_CR_QUERY)

/**
 * struct kdat_cr_reply - KDAT_IOCTL_CR_ACCEPT, KDAT_IOCTL_CR_REJECT
 * @size: sizeof(struct kdat_cr_reply)
 * @cr_handle: in: the request. Gone after the call (answered, or
 *             unanswerable: ENODEV, an error of the RDMA CM), unless the
 *             call was refused before it touched the request: EFAULT,
 *             EBADF, an over-long @private_data_len, and for an accept
 *             EBUSY and EINVAL (the Endpoint's state or kind); then it
 *             can be answered again
 * @ep_handle: accept: an UNCONNECTED Endpoint on the same device (for an
 *             RSP's request, its RESERVED Endpoint); reject: 0
 * @private_data_len: in: <= KDAT_MAX_PRIVATE_DATA. A reject sends the
 *                    version word 02 00 02 00 before it, as OFA DAPL
 *                    does; an accept's RDMA read depths are the smaller
 *                    of the Endpoint's and the request's. A UD request's
 *                    reply and reject carry the UD header instead (see
 *                    "UD Endpoints").
 * @private_data: in: user pointer
 */
struct kdat_cr_reply {
	__u32 size;
	__u32 cr_handle;
	__u32 ep_handle;
	__u32 private_data_len;
	__aligned_u64 private_data;
};

#define KDAT_IOCTL_CR_ACCEPT	_IO(KDAT_TYPE, KDAT_CMD_CR_ACCEPT)
#define KDAT_IOCTL_CR_REJECT	_IO(KDAT_TYPE, KDAT_CMD_CR_REJECT)

/**
 * struct kdat_ah_query - KDAT_IOCTL_AH_QUERY: a UD address handle
 * @size: sizeof(struct kdat_ah_query)
 * @ah_handle: in
 * @ep_handle: out: the Endpoint it belongs to
 * @flags: out: KDAT_AH_PASSIVE when an accept made it, 0 when a connect
 * @remote_qpn: out: the peer's QP number, where datagrams go
 * @remote_qkey: out: the peer's Q_Key
 * @private_data_len: out: the peer's private data that came with it (a
 *                    connect's: the accepter's; an accept's: the
 *                    requester's)
 * @__reserved: 0
 * @remote: out: the peer's address
 * @private_data: out
 */
struct kdat_ah_query {
	__u32 size;
	__u32 ah_handle;
	__u32 ep_handle;
	__u32 flags;
	__u32 remote_qpn;
	__u32 remote_qkey;
	__u32 private_data_len;
	__u32 __reserved;
	struct kdat_sockaddr remote;
	__u8 private_data[KDAT_PRIVATE_DATA_BUF];
};

#define KDAT_AH_PASSIVE		(1U << 0)

#define KDAT_IOCTL_AH_QUERY	_IO(KDAT_TYPE, KDAT_CMD_AH_QUERY)

/* One IOV segment (DAT_LMR_TRIPLET): a range of a registered region. */
struct kdat_lmr_triplet {
	__u32 lmr_context;
	__u32 __pad;
	__aligned_u64 virtual_address;
	__aligned_u64 segment_length;
};

/* The remote buffer of an RDMA (DAT_RMR_TRIPLET). */
struct kdat_rmr_triplet {
	__u32 rmr_context;
	__u32 __pad;
	__aligned_u64 target_address;
	__aligned_u64 segment_length;
};

/**
 * struct kdat_dto_ext - the arguments of the DAT IB extensions' DTOs
 * @compare_add: KDAT_DTO_CMP_SWAP: the value compared with the remote
 *               one; KDAT_DTO_FETCH_ADD: the value added to it; else 0
 * @swap: KDAT_DTO_CMP_SWAP: stored remotely when the values were equal;
 *        else 0
 * @imm_data: KDAT_DTO_RDMA_WRITE_IMM: the immediate data, sent as the
 *            bytes of this __u32 in memory order (as OFA's provider sends
 *            its DAT_UINT32: a peer of the same byte order reads the same
 *            value); else 0
 * @ah_handle: KDAT_DTO_SEND_UD: the address handle of the datagram's peer
 *             (see "UD Endpoints"); else 0 (in place of a reserved 0)
 *
 * An atomic reads and writes the 8 bytes at the remote buffer's
 * target_address, which must be 8-byte aligned (EINVAL; its
 * segment_length is not used), in memory the peer registered with
 * KDAT_MEM_PRIV_REMOTE_ATOMIC (else the DTO completes with
 * KDAT_DTO_ERR_REMOTE_ACCESS); the value it found there is written to
 * the one local segment, exactly 8 bytes of an LMR with local write
 * (EINVAL, EACCES). A device without atomics answers EOPNOTSUPP. Like an
 * RDMA read, an atomic takes one of the Endpoint's max_rdma_read_out.
 */
struct kdat_dto_ext {
	__aligned_u64 compare_add;
	__aligned_u64 swap;
	__u32 imm_data;
	__u32 ah_handle;
};

/**
 * struct kdat_post - KDAT_IOCTL_POST: post one DTO
 * @size: sizeof(struct kdat_post); 64 (up to @remote) is still accepted:
 *        @ext is then 0
 * @ep_handle: in: the Endpoint
 * @op: in: enum kdat_dto_op (but the completion-only kinds), or
 *      KDAT_POST_SRQ_RECV: a receive buffer for the SRQ named by
 *      @ep_handle (no completion flags)
 * @completion_flags: in: KDAT_COMPLETION_*
 * @num_segments: in: entries in @iov (0 with a 0 @iov for a 0-byte send or
 *                receive)
 * @__reserved: 0
 * @iov: in: user pointer to @num_segments struct kdat_lmr_triplet
 * @cookie: in: returned unchanged in the completion event
 * @remote: in: RDMA read/write and the extensions' RDMA and atomic DTOs:
 *          the remote buffer
 * @ext: in: the extensions' arguments; every field an op does not use
 *       must be 0 (EINVAL)
 *
 * Every segment is checked against the caller's LMR it names before
 * anything is posted: out of its bounds EINVAL; LMR of another PZ EPERM;
 * unknown context or a missing privilege EACCES; an RDMA read whose local
 * IOV is shorter than the remote buffer EMSGSIZE; a full queue ENOMEM;
 * send/RDMA on an Endpoint neither CONNECTED nor DISCONNECTED EBUSY. On a
 * DISCONNECTED Endpoint the DTO is accepted and completes at once with
 * KDAT_DTO_ERR_FLUSHED. A UD Endpoint takes datagrams and receives in
 * every state (see "UD Endpoints").
 */
struct kdat_post {
	__u32 size;
	__u32 ep_handle;
	__u32 op;
	__u32 completion_flags;
	__u32 num_segments;
	__u32 __reserved;
	__aligned_u64 iov;
	__aligned_u64 cookie;
	struct kdat_rmr_triplet remote;
	struct kdat_dto_ext ext;
};

#define KDAT_POST_SRQ_RECV	4

#define KDAT_IOCTL_POST		_IO(KDAT_TYPE, KDAT_CMD_POST)

/**
 * struct kdat_srq_create - KDAT_IOCTL_SRQ_CREATE: a Shared Receive Queue
 * @size: sizeof(struct kdat_srq_create)
 * @pz_handle: in
 * @max_recv_dtos: in: buffers it holds (exactly; not written back)
 * @max_recv_iov: in: segments per buffer; out: what it got
 * @low_watermark: in: 0, or report when fewer buffers than this remain
 *                 (KDAT_EVENT_ASYNC_SRQ_LOW_WATERMARK on the IA's async
 *                 EVD)
 * @flags: must be 0
 * @out_srq_handle: out
 * @__reserved: 0
 */
struct kdat_srq_create {
	__u32 size;
	__u32 pz_handle;
	__u32 max_recv_dtos;
	__u32 max_recv_iov;
	__u32 low_watermark;
	__u32 flags;
	__u32 out_srq_handle;
	__u32 __reserved;
};

#define KDAT_IOCTL_SRQ_CREATE	_IO(KDAT_TYPE, KDAT_CMD_SRQ_CREATE)

/**
 * struct kdat_srq_set_lw - KDAT_IOCTL_SRQ_SET_LW: set (and arm) the low
 *     watermark; 0 disarms it
 * @size: sizeof(struct kdat_srq_set_lw)
 * @srq_handle: in
 * @low_watermark: in: < max_recv_dtos
 * @__reserved: 0
 */
struct kdat_srq_set_lw {
	__u32 size;
	__u32 srq_handle;
	__u32 low_watermark;
	__u32 __reserved;
};

#define KDAT_IOCTL_SRQ_SET_LW	_IO(KDAT_TYPE, KDAT_CMD_SRQ_SET_LW)

/**
 * struct kdat_cno_create - KDAT_IOCTL_CNO_CREATE: a Consumer Notification
 *     Object, which EVDs trigger when an event that notifies arrives
 * @size: sizeof(struct kdat_cno_create)
 * @ia_handle: in
 * @flags: must be 0
 * @out_cno_handle: out
 */
struct kdat_cno_create {
	__u32 size;
	__u32 ia_handle;
	__u32 flags;
	__u32 out_cno_handle;
};

#define KDAT_IOCTL_CNO_CREATE	_IO(KDAT_TYPE, KDAT_CMD_CNO_CREATE)

/**
 * struct kdat_cno_wait - KDAT_IOCTL_CNO_WAIT: wait until an EVD of the CNO
 *     triggers it
 * @size: sizeof(struct kdat_cno_wait)
 * @cno_handle: in
 * @timeout_us: in: as for KDAT_IOCTL_EVD_WAIT (ETIMEDOUT, EINTR)
 * @out_evd_handle: out: the EVD that triggered it (the first, when
 *                  several did since the last wait)
 * @__reserved: 0
 */
struct kdat_cno_wait {
	__u32 size;
	__u32 cno_handle;
	__aligned_u64 timeout_us;
	__u32 out_evd_handle;
	__u32 __reserved;
};

#define KDAT_IOCTL_CNO_WAIT	_IO(KDAT_TYPE, KDAT_CMD_CNO_WAIT)

/**
 * struct kdat_evd_modify_cno - KDAT_IOCTL_EVD_MODIFY_CNO
 * @size: sizeof(struct kdat_evd_modify_cno)
 * @evd_handle: in
 * @cno_handle: in: the CNO the EVD triggers from now on; 0 for none
 * @__reserved: 0
 */
struct kdat_evd_modify_cno {
	__u32 size;
	__u32 evd_handle;
	__u32 cno_handle;
	__u32 __reserved;
};

#define KDAT_IOCTL_EVD_MODIFY_CNO	_IO(KDAT_TYPE, KDAT_CMD_EVD_MODIFY_CNO)

enum kdat_cno_agent_op {
	KDAT_CNO_AGENT_ARM = 1,
	KDAT_CNO_AGENT_DISARM,
	KDAT_CNO_AGENT_WAIT,
};

/**
 * struct kdat_cno_agent - KDAT_IOCTL_CNO_AGENT: the trigger of a CNO's OS
 *     Wait Proxy Agent (dat_cno_create, dat_cno_modify_agent)
 * @size: sizeof(struct kdat_cno_agent)
 * @cno_handle: in
 * @op: in: KDAT_CNO_AGENT_ARM: keep the CNO's next trigger for its agent,
 *      once (DAT: once invoked, the agent is no longer associated with
 *      the CNO); a trigger kept for an earlier arming and not taken is
 *      dropped. KDAT_CNO_AGENT_DISARM: keep none, and drop one kept.
 *      KDAT_CNO_AGENT_WAIT: sleep until a trigger is kept, and take it.
 *      Arming and disarming wake the agent's waiters. A consumer's
 *      KDAT_IOCTL_CNO_WAIT and the agent's wait each get the trigger:
 *      neither takes the other's.
 *      WAIT answers EBUSY when the CNO is not armed and keeps no trigger
 *      (at once, or when disarmed while it slept), EINTR on a signal, and
 *      EBADF once the CNO is destroyed; it has no timeout.
 * @out_evd_handle: out (WAIT): the EVD whose event triggered the CNO
 * @out_seq: out: ARM, DISARM: the number of this change; WAIT: the number
 *      of the arming the trigger was kept for (a trigger taken just before
 *      an arming is told from one after it)
 * @__reserved: 0
 */
struct kdat_cno_agent {
	__u32 size;
	__u32 cno_handle;
	__u32 op;
	__u32 out_evd_handle;
	__u32 out_seq;
	__u32 __reserved;
};

#define KDAT_IOCTL_CNO_AGENT	_IO(KDAT_TYPE, KDAT_CMD_CNO_AGENT)

/**
 * struct kdat_rmr_create - KDAT_IOCTL_RMR_CREATE: an unbound RMR
 * @size: sizeof(struct kdat_rmr_create)
 * @pz_handle: in
 * @flags: must be 0
 * @out_rmr_handle: out
 *
 * Kernel consumers of ib_core cannot allocate memory windows, so an RMR is
 * the documented equivalent: binding registers the bound range as a
 * memory region of its own, with only the remote privileges asked for,
 * whose rkey is the rmr_context; unbinding (or binding again) deregisters
 * it, so the old rmr_context stops working at once.
 */
struct kdat_rmr_create {
	__u32 size;
	__u32 pz_handle;
	__u32 flags;
	__u32 out_rmr_handle;
};

#define KDAT_IOCTL_RMR_CREATE	_IO(KDAT_TYPE, KDAT_CMD_RMR_CREATE)

/**
 * struct kdat_rmr_bind - KDAT_IOCTL_RMR_BIND: bind an RMR to a range of an
 *     LMR (length 0: unbind)
 * @size: sizeof(struct kdat_rmr_bind)
 * @rmr_handle: in
 * @lmr_context: in: the LMR (of the RMR's PZ: EPERM otherwise). From
 *               the bind to the next bind of the RMR, or its destroy, the
 *               LMR cannot be destroyed (EBUSY: the RMR uses it)
 * @ep_handle: in: the Endpoint whose request EVD gets the bind completion
 *             (CONNECTED; DISCONNECTED: flushed at once; else EBUSY)
 * @mem_priv: in: KDAT_MEM_PRIV_* (another bit: EINVAL). The remote ones,
 *            _REMOTE_READ, _REMOTE_WRITE, _REMOTE_ATOMIC, are what the
 *            peer may do through the range (none: nothing); the LMR must
 *            allow the matching local access (read; write for the other
 *            two) (EACCES). The local ones grant nothing and are ignored
 * @completion_flags: in: 0 or KDAT_COMPLETION_SUPPRESS
 * @addr: in: start of the range, inside the LMR (EINVAL)
 * @length: in
 * @cookie: in: returned in the KDAT_EVENT_RMR_BIND_COMPLETION event
 * @out_rmr_context: out: what the peer names the range by (0: unbound)
 * @out_flags: in: 0 (EINVAL otherwise); out: KDAT_RMR_BIND_FLUSHED when
 *             the EP was DISCONNECTED: nothing was bound or unbound, the
 *             RMR keeps its binding, and the event reports the flush
 *             (a kernel before this flag leaves 0 here)
 */
struct kdat_rmr_bind {
	__u32 size;
	__u32 rmr_handle;
	__u32 lmr_context;
	__u32 ep_handle;
	__u32 mem_priv;
	__u32 completion_flags;
	__aligned_u64 addr;
	__aligned_u64 length;
	__aligned_u64 cookie;
	__u32 out_rmr_context;
	__u32 out_flags;
};

#define KDAT_RMR_BIND_FLUSHED	(1U << 0)

#define KDAT_IOCTL_RMR_BIND	_IO(KDAT_TYPE, KDAT_CMD_RMR_BIND)

/**
 * struct kdat_evd_post_se - KDAT_IOCTL_EVD_POST_SE: queue a software event
 *     on an EVD created with KDAT_EVD_SOFTWARE (EINVAL otherwise)
 * @size: sizeof(struct kdat_evd_post_se)
 * @evd_handle: in
 * @pointer: in: returned as the event's cookie, unchanged
 *
 * ENOMEM when the EVD is full (libdat: DAT_QUEUE_FULL): the event is not
 * queued, and the EVD does not overflow; room is checked and the event
 * queued in one step.
 */
struct kdat_evd_post_se {
	__u32 size;
	__u32 evd_handle;
	__aligned_u64 pointer;
};

#define KDAT_IOCTL_EVD_POST_SE	_IO(KDAT_TYPE, KDAT_CMD_EVD_POST_SE)

/* Operations of KDAT_IOCTL_EVD_MODIFY. */
enum kdat_evd_op {
	/* dat_evd_set_unwaitable: waiters return EBUSY, new waits too. */
	KDAT_EVD_OP_SET_UNWAITABLE = 1,
	KDAT_EVD_OP_CLEAR_UNWAITABLE,
	/* dat_evd_enable / dat_evd_disable: events trigger the CNO or not. */
	KDAT_EVD_OP_ENABLE,
	KDAT_EVD_OP_DISABLE,
	/* dat_evd_resize: @qlen events; EBUSY below the events queued. */
	KDAT_EVD_OP_RESIZE,
};

/**
 * struct kdat_evd_modify - KDAT_IOCTL_EVD_MODIFY: change an EVD's state
 * @size: sizeof(struct kdat_evd_modify)
 * @evd_handle: in
 * @op: in: enum kdat_evd_op (EINVAL otherwise)
 * @qlen: in: KDAT_EVD_OP_RESIZE's new queue length (1..65536); else 0
 *
 * An EVD is created waitable and enabled. Queued events and DTOs in
 * flight are kept across every operation, a resize included.
 */
struct kdat_evd_modify {
	__u32 size;
	__u32 evd_handle;
	__u32 op;
	__u32 qlen;
};

#define KDAT_IOCTL_EVD_MODIFY	_IO(KDAT_TYPE, KDAT_CMD_EVD_MODIFY)

/**
 * struct kdat_srq_resize - KDAT_IOCTL_SRQ_RESIZE: change how many receive
 *     buffers an SRQ holds (dat_srq_resize)
 * @size: sizeof(struct kdat_srq_resize)
 * @srq_handle: in
 * @max_recv_dtos: in: the new size (1..4096); EBUSY below the buffers
 *                 posted or at or below the low watermark, ENOMEM when
 *                 the device cannot grow the SRQ
 * @__reserved: 0
 */
struct kdat_srq_resize {
	__u32 size;
	__u32 srq_handle;
	__u32 max_recv_dtos;
	__u32 __reserved;
};

#define KDAT_IOCTL_SRQ_RESIZE	_IO(KDAT_TYPE, KDAT_CMD_SRQ_RESIZE)

/* What KDAT_IOCTL_EP_MODIFY changes. */
#define KDAT_EP_MODIFY_COMPLETION_FLAGS	(1U << 0)	/* recv and request */
#define KDAT_EP_MODIFY_RDMA_READ	(1U << 1)	/* in and out */
#define KDAT_EP_MODIFY_DTOS		(1U << 2)	/* max recv/request */

/**
 * struct kdat_ep_modify - KDAT_IOCTL_EP_MODIFY: change an Endpoint's
 *     attributes (dat_ep_modify) while it is UNCONNECTED or RESERVED
 *     (EBUSY otherwise)
 * @size: sizeof(struct kdat_ep_modify)
 * @ep_handle: in
 * @mask: in: KDAT_EP_MODIFY_* (EINVAL for others)
 * @__reserved: 0
 * @attr: in: the new values of the fields @mask names; out: the
 *        Endpoint's attributes after the call
 *
 * The QP is not rebuilt: the numbers of DTOs may not exceed what the
 * Endpoint was created with (EOPNOTSUPP: libdat answers
 * DAT_MODEL_NOT_SUPPORTED), nor go below what is posted (EBUSY);
 * RDMA read depths may not exceed the device's (EINVAL). An Endpoint on
 * an SRQ takes no receive count. What the file's submission rings
 * published before the call is taken first, and counts.
 */
struct kdat_ep_modify {
	__u32 size;
	__u32 ep_handle;
	__u32 mask;
	__u32 __reserved;
	struct kdat_ep_attr attr;
};

#define KDAT_IOCTL_EP_MODIFY	_IO(KDAT_TYPE, KDAT_CMD_EP_MODIFY)

/*
 * Rings: the zero-syscall data path.
 *
 * A ring is an array of fixed-size entries in memory the kernel allocates
 * and the process maps (mmap of /dev/kdat at the offset the kernel gives),
 * with a head and a tail index. Indices are free-running __u32 counters;
 * an entry's slot is index & ring_mask. Every index has one writer:
 *
 *                   head (consumer)      tail (producer)
 *   submission      kernel               process
 *   completion      process              kernel
 *
 * A submission ring (an EP's send or receive queue, an SRQ's receive
 * queue) carries struct kdat_sqe entries (a send ring created with
 * KDAT_RING_CREATE_SQE_EXT: struct kdat_sqe_ext). The process writes entries at
 * tail, then publishes tail with a release store. A kernel poller thread
 * (running in the opener's cgroups; it serves a few files, all of one
 * effective user in the same cgroups and with the same CPU setting, each
 * with its opener's credentials) reads tail with an acquire load, copies
 * each entry once, checks the copy
 * exactly as KDAT_IOCTL_POST checks its arguments, and posts the good ones
 * in one chain per batch. It publishes head past the entries it has
 * copied before posting them, so once a DTO's completion is seen its slot
 * is free. Each ring keeps its order; across rings of the
 * file, a receive (EP or SRQ) published before a send by the same thread
 * is posted before it, as with ioctls, by the poller's passes (which
 * leave out pinned rings, below: their receives are taken by their
 * doorbells) and by a doorbell for every ring; so are the file's
 * receives before the sends of an EP that KDAT_IOCTL_EP_DISCONNECT,
 * _RESET or _MODIFY takes. A
 * doorbell for one ring takes that ring alone: a thread that published
 * a receive no doorbell took should ring for every ring with its next
 * send (libdat does), and a send another thread rings for may still go
 * first (an RC send then waits for the peer's RNR timer; a UD datagram
 * may be dropped, as UD may). Where a message that finds no receive ends
 * the connection (iWARP: no RNR), a receive ring is pinned: it has
 * KDAT_RING_F_NEED_WAKEUP set at all times, and the poller leaves it
 * out; each receive is taken by the doorbell rung for it (one that names
 * the ring, which wakes no poller, or one for the whole file, with
 * either flag), posted to the device before the doorbell returns (a
 * refused one has its event queued then). An entry it refuses completes at
 * once on the queue's EVD with the errno KDAT_IOCTL_POST would have
 * returned in struct kdat_event.post_error; nothing is posted for it. A tail more than
 * ring_entries past head is not consumed (KDAT_RING_F_BAD_TAIL is set
 * until it is sane again). The kernel only writes head, flags, completed
 * and ep_state; what the process writes there is ignored.
 *
 * The poller spins only while it has its CPU to itself. When it has had
 * nothing to do for its idle time (kdat(4)), or
 * when other tasks have wanted its CPU for half a millisecond, it sets
 * KDAT_RING_F_NEED_WAKEUP in every submission ring it serves, takes
 * what is published once more, then sleeps. It does the same for one
 * ring alone that had nothing published for 16 times that idle time
 * while others are busy (the ring is parked: the poller's passes leave
 * it out until a doorbell names it, or names no ring with entries
 * published on it). A file without a poller
 * (KDAT_IOCTL_POLLER_SET, or none to be had: kdat's number of pollers
 * is bounded, kdat(4)) has the flag set in every submission ring at all times.
 * The process rings the doorbell (KDAT_IOCTL_RING_WAKE) only when it sees
 * that flag after publishing a tail. No wake-up is lost: the process
 * stores tail, issues a full memory barrier, loads flags; the poller
 * stores flags, issues a full memory barrier, loads every tail. One of
 * them sees the other's store.
 *
 * The doorbell with KDAT_RING_WAKE_SUBMIT takes the published entries in
 * the caller's context (one system call per post or batch, no thread
 * hop) and wakes the poller only if it may run again: a poller that went
 * to sleep because its CPU was wanted stays asleep for a back-off time,
 * doubled each time that happens (up to a quarter second), forgotten
 * once the poller finds its CPU its own. Without a poller, either
 * doorbell takes the entries in the caller's context.
 *
 * A completion ring (an EVD's) carries struct kdat_event entries, written
 * by the kernel at tail; the process reads them from head and publishes
 * head with a release store. It holds the EVD's qlen events plus one: when
 * qlen are unread, the next is replaced by one KDAT_EVENT_ASYNC_EVD_OVERFLOW
 * and later ones are dropped until the process has read past it (the
 * overflow event of DAT). A head the process moves backwards or too far
 * only makes the kernel see a full ring.
 */
#define KDAT_RING_F_NEED_WAKEUP	(1U << 0)	/* submission: ring the doorbell */
#define KDAT_RING_F_BAD_TAIL	(1U << 1)	/* submission: tail refused */
#define KDAT_RING_F_POLL	(1U << 2)	/* completion: see below */
#define KDAT_RING_F_DEAD	(1U << 3)	/* submission: device gone */

/*
 * KDAT_RING_F_POLL: the EVD has solicited-wait receive completions the
 * kernel only brings in when asked: an empty ring is then not the whole
 * truth, and KDAT_IOCTL_EVD_WAIT with threshold 0 and max_events 0 brings
 * them in.
 */

/**
 * struct kdat_sqe - a submission ring entry (the ring's entry_size holds
 *     the header and the queue's maximum number of segments)
 * @op: enum kdat_dto_op (KDAT_DTO_RECEIVE on receive rings)
 * @num_segments: segments in @iov
 * @__pad: 0
 * @completion_flags: KDAT_COMPLETION_*, as for KDAT_IOCTL_POST
 * @cookie: returned in the completion
 * @remote: RDMA read and write: the remote buffer
 * @iov: the local segments
 */
struct kdat_sqe {
	__u8 op;
	__u8 num_segments;
	__u16 __pad;
	__u32 completion_flags;
	__aligned_u64 cookie;
	struct kdat_rmr_triplet remote;
	struct kdat_lmr_triplet iov[];
};

/**
 * struct kdat_sqe_ext - the entry of a send ring created with
 *     KDAT_RING_CREATE_SQE_EXT: struct kdat_sqe's fields, then @ext (the
 *     extensions' arguments, as in struct kdat_post), then the segments
 * @op, @num_segments, @__pad, @completion_flags, @cookie, @remote: as in
 *     struct kdat_sqe
 * @ext: struct kdat_dto_ext; 0 for the ops that do not use it
 * @iov: the local segments
 *
 * A send ring of plain entries refuses the extensions' ops (EINVAL).
 */
struct kdat_sqe_ext {
	__u8 op;
	__u8 num_segments;
	__u16 __pad;
	__u32 completion_flags;
	__aligned_u64 cookie;
	struct kdat_rmr_triplet remote;
	struct kdat_dto_ext ext;
	struct kdat_lmr_triplet iov[];
};

/**
 * struct kdat_ring_offsets - where a ring's parts are in its mapping
 * @head: __u32, see the table above
 * @tail: __u32
 * @flags: __u32 KDAT_RING_F_*, written by the kernel
 * @ring_mask: __u32, ring_entries - 1; constant
 * @ring_entries: __u32, a power of two; constant
 * @completed: submission rings: __u32 count, written by the kernel, of
 *             consumed entries whose DTO is done with the queue (completed,
 *             flushed or refused): tail - completed entries hold a place in
 *             the queue, which takes max_*_dtos of them
 * @ep_state: EP rings: __u32 enum kdat_ep_state, written by the kernel
 * @entries: the first entry
 */
struct kdat_ring_offsets {
	__u32 head;
	__u32 tail;
	__u32 flags;
	__u32 ring_mask;
	__u32 ring_entries;
	__u32 completed;
	__u32 ep_state;
	__u32 entries;
};

/* Ring kinds. */
enum kdat_ring_kind {
	KDAT_RING_SEND = 1,	/* an EP's requests: send, RDMA read/write */
	KDAT_RING_RECV,		/* an EP's receives */
	KDAT_RING_SRQ,		/* an SRQ's receives */
	KDAT_RING_EVD,		/* an EVD's events */
};

/**
 * struct kdat_ring_create - KDAT_IOCTL_RING_CREATE: give a queue its ring,
 *     or describe the one it has
 * @size: sizeof(struct kdat_ring_create)
 * @handle: in: the EP, SRQ or EVD
 * @kind: in: enum kdat_ring_kind, matching @handle's type (EINVAL)
 * @flags: in: 0, or for KDAT_RING_SEND KDAT_RING_CREATE_SQE_EXT: entries
 *         are struct kdat_sqe_ext (EINVAL for other kinds; EBUSY when the
 *         queue's ring exists with the other kind of entry)
 * @out_entries: out: ring_entries
 * @out_entry_size: out: bytes per entry: the header (struct kdat_sqe or
 *                  struct kdat_sqe_ext) and the queue's maximum number of
 *                  segments, (@out_entry_size - header) / 24, rounded up
 *                  to a cache line: compute the segments from it
 * @out_map_size: out: bytes to map: @out_off.entries + @out_entries *
 *                @out_entry_size, rounded up to a page (so known before
 *                the ring is made: libdat reserves the address space of
 *                an EVD's resized ring first)
 * @__reserved: 0
 * @out_mmap_offset: out: the offset to pass to mmap (a cookie, page
 *                   aligned); the mapping must be MAP_SHARED, at most
 *                   @out_map_size bytes
 * @out_off: out: where each part is in the mapping
 *
 * A queue has one ring of each kind, created with the first call; the
 * ring goes with its object (a mapping keeps the memory, not the queue).
 * Once a submission ring exists, KDAT_IOCTL_POST on that queue answers
 * EBUSY: one way in per queue keeps the order. An EVD's ring holds its
 * qlen + 1 events, rounded up to a power of two (131072 for a qlen of
 * 65536: 8 MiB); ring memory is charged to RLIMIT_MEMLOCK as pinned
 * pages are (ENOMEM above it). Resizing an EVD with a ring
 * (KDAT_EVD_OP_RESIZE) moves its events to a new ring: call this again
 * for the new mapping.
 */
struct kdat_ring_create {
	__u32 size;
	__u32 handle;
	__u32 kind;
	__u32 flags;
	__u32 out_entries;
	__u32 out_entry_size;
	__u32 out_map_size;
	__u32 __reserved;
	__aligned_u64 out_mmap_offset;
	struct kdat_ring_offsets out_off;
};

#define KDAT_RING_CREATE_SQE_EXT	(1U << 0)

#define KDAT_IOCTL_RING_CREATE	_IO(KDAT_TYPE, KDAT_CMD_RING_CREATE)

/**
 * struct kdat_ring_wake - KDAT_IOCTL_RING_WAKE: the doorbell; wakes the
 *     file's poller (needed only when a ring says KDAT_RING_F_NEED_WAKEUP);
 *     with either flag, it takes what pinned receive rings (see Rings
 *     above) published: one that names such a ring takes its entries and
 *     wakes nothing, one for the whole file takes every pinned ring's
 *     first
 * @size: sizeof(struct kdat_ring_wake)
 * @flags: 0, or KDAT_RING_WAKE_SUBMIT: take every entry published on the
 *     file's submission rings before the call, in the caller's context, as
 *     the poller would (posted, refused or flushed: an entry flushed at
 *     once has its event queued when the call returns); the poller is
 *     woken too unless it is backing off (see Rings above)
 * @ring: 0, every submission ring of the file; or the id of one (the
 *     out_mmap_offset KDAT_IOCTL_RING_CREATE gave, shifted right by the
 *     page shift), whose entries alone are taken: the doorbells of threads
 *     posting to their own queues do not wait for each other. EBADF: no
 *     submission ring of the file has that id
 * @__reserved: 0
 */
struct kdat_ring_wake {
	__u32 size;
	__u32 flags;
	__u32 ring;
	__u32 __reserved;
};

#define KDAT_RING_WAKE_SUBMIT	(1U << 0)

#define KDAT_IOCTL_RING_WAKE	_IO(KDAT_TYPE, KDAT_CMD_RING_WAKE)

/*
 * How a file's submission rings are taken (struct kdat_poller_set):
 * ADAPTIVE, a poller thread spinning while it has a CPU and its spinning
 * pays; NONE, no thread (the doorbell takes the entries); SPIN, a poller
 * thread spinning while it has a CPU, paying or not (no system call).
 */
enum kdat_poller_mode {
	KDAT_POLLER_ADAPTIVE,
	KDAT_POLLER_NONE,
	KDAT_POLLER_SPIN,
};

#define KDAT_POLLER_ANY_CPU	(-1)

/**
 * struct kdat_poller_set - KDAT_IOCTL_POLLER_SET: how the file's submission
 *     rings are taken, from now on
 * @size: sizeof(struct kdat_poller_set)
 * @mode: enum kdat_poller_mode; KDAT_POLLER_ADAPTIVE is a file's default
 *     (a poller starts with the first submission ring; it backs off while
 *     less than a share of its time (kdat(4)) goes to taking entries); KDAT_POLLER_SPIN's poller does not back off for
 *     that, and is shared only with files of the same mode;
 *     KDAT_POLLER_NONE stops the poller, after taking what is published
 * @cpu: KDAT_POLLER_ANY_CPU, or the CPU the poller runs on: online and
 *     one the caller may run on (EINVAL otherwise)
 * @__reserved: 0
 */
struct kdat_poller_set {
	__u32 size;
	__u32 mode;
	__s32 cpu;
	__u32 __reserved;
};

#define KDAT_IOCTL_POLLER_SET	_IO(KDAT_TYPE, KDAT_CMD_POLLER_SET)

#endif /* _UAPI_LINUX_KDAT_H */
