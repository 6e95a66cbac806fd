/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * kdat's status interface: the generic netlink family "kdat".
 *
 * KDAT_NL_CMD_OBJ_GET, a dump (NLM_F_DUMP), answers one message per live
 * kdat object in the caller's network namespace: those of the processes
 * of the caller's user (real uid), or every process's and those of kernel
 * consumers for a caller with CAP_NET_ADMIN; of processes the caller's PID
 * namespace sees, kernel consumers' only from the initial one, as rdma's
 * resource dump. Each message carries the
 * attributes common to all objects and those of the object's type. A
 * request carries no attribute; filters are the reader's.
 *
 * Counts are read without stopping the data path: each is exact when read
 * but a dump is no snapshot of all objects at one instant. Attributes may
 * be added; a reader skips those it does not know.
 */
#ifndef _UAPI_LINUX_KDAT_NETLINK_H
#define _UAPI_LINUX_KDAT_NETLINK_H

#define KDAT_GENL_NAME		"kdat"
#define KDAT_GENL_VERSION	1

enum kdat_nl_cmd {
	KDAT_NL_CMD_UNSPEC,
	KDAT_NL_CMD_OBJ_GET,	/* dump: one message per object */
	__KDAT_NL_CMD_MAX,
};
#define KDAT_NL_CMD_MAX (__KDAT_NL_CMD_MAX - 1)

/* KDAT_NLA_TYPE */
enum kdat_nl_obj_type {
	KDAT_NL_OBJ_IA = 1,
	KDAT_NL_OBJ_PZ,
	KDAT_NL_OBJ_LMR,
	KDAT_NL_OBJ_EVD,
	KDAT_NL_OBJ_EP,
	KDAT_NL_OBJ_PSP,
	KDAT_NL_OBJ_CR,
	KDAT_NL_OBJ_SRQ,
	KDAT_NL_OBJ_CNO,
	KDAT_NL_OBJ_RMR,
	KDAT_NL_OBJ_AH,
};

enum kdat_nl_attr {
	KDAT_NLA_UNSPEC,
	KDAT_NLA_PAD,
	/* Every object */
	/*
	 * u32: the process that opened the file, as the caller's PID
	 * namespace numbers it; 0: a kernel consumer
	 */
	KDAT_NLA_PID,
	KDAT_NLA_COMM,		/* string: its command name then */
	KDAT_NLA_TYPE,		/* u32: enum kdat_nl_obj_type */
	KDAT_NLA_HANDLE,	/* u32: the object's handle */
	KDAT_NLA_IA,		/* u32: the handle of the IA it was made on */
	KDAT_NLA_USERS,		/* u32: objects that point at it */
	/* An IA */
	KDAT_NLA_DEV_NAME,	/* string: the RDMA device, as opened */
	KDAT_NLA_PORT,		/* u32: its port */
	KDAT_NLA_POLL_MODE,	/* u32: the file's enum kdat_poller_mode */
	/* s32: the CPU the poller runs on, or KDAT_POLLER_ANY_CPU */
	KDAT_NLA_POLL_CPU,
	KDAT_NLA_POLLER,	/* u8: 1 when a poller thread serves the file */
	/* An EP */
	KDAT_NLA_EP_STATE,	/* u32: enum kdat_ep_state */
	KDAT_NLA_EP_UD,		/* u8: 1 for a UD EP */
	KDAT_NLA_QPN,		/* u32: its QP number: rdma res show qp's lqpn */
	KDAT_NLA_SRC_ADDR,	/* binary: struct sockaddr_in or sockaddr_in6 */
	KDAT_NLA_DST_ADDR,	/* binary: the peer's, when connected */
	KDAT_NLA_SQ_DEPTH,	/* u32: requests it may have outstanding */
	KDAT_NLA_RQ_DEPTH,	/* u32: receives it may have outstanding */
	KDAT_NLA_SQ_POSTED,	/* u32: requests outstanding */
	KDAT_NLA_RQ_POSTED,	/* u32: receives outstanding */
	KDAT_NLA_SQ_DONE,	/* u64: requests completed since its create */
	KDAT_NLA_RQ_DONE,	/* u64: receives completed since its create */
	KDAT_NLA_ERRORS,	/* u64: completions in error (flushes too) */
	KDAT_NLA_RINGS,		/* u8: 1 when it has submission rings */
	/* An LMR */
	KDAT_NLA_LENGTH,	/* u64: the registered length */
	KDAT_NLA_PINNED,	/* u64: bytes of user pages it pins */
	/* An EVD */
	KDAT_NLA_QLEN,		/* u32: its queue length */
	KDAT_NLA_EVD_FLAGS,	/* u32: KDAT_EVD_* */
	__KDAT_NLA_MAX,
};
#define KDAT_NLA_MAX (__KDAT_NLA_MAX - 1)

#endif /* _UAPI_LINUX_KDAT_NETLINK_H */
