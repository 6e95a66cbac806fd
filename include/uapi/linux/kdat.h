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
 *   EOPNOTSUPP  unknown flag                         DAT_NOT_IMPLEMENTED
 *   EBADF       no such handle for this file, or a   DAT_INVALID_HANDLE
 *               handle of the wrong type
 *   EBUSY       object still used by other objects,  DAT_INVALID_STATE
 *               or in a state that forbids the call
 *   ENODEV      no such RDMA device, or the device   DAT_PROVIDER_NOT_FOUND
 *               of the object has been removed       (open) /
 *                                                    DAT_INVALID_STATE
 *   ENOMEM      out of memory                        DAT_INSUFFICIENT_RESOURCES
 *   EMSGSIZE    output array too small; the count    -
 *               needed is returned
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
};

#define KDAT_IOCTL_IA_QUERY	_IO(KDAT_TYPE, KDAT_CMD_IA_QUERY)

/**
 * struct kdat_destroy - KDAT_IOCTL_DESTROY: destroy any object by handle
 * @size: sizeof(struct kdat_destroy)
 * @handle: in: the object. EBADF when it is not the caller's; EBUSY when
 *          other objects still use it (DAT_INVALID_STATE).
 */
struct kdat_destroy {
	__u32 size;
	__u32 handle;
};

#define KDAT_IOCTL_DESTROY	_IO(KDAT_TYPE, KDAT_CMD_DESTROY)

#endif /* _UAPI_LINUX_KDAT_H */
