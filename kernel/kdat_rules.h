/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The rules a DTO is checked by, written once. The kernel checks every
 * DTO by them (kdat_dto.c), whichever way it came; libdat checks a post
 * to a submission ring by the same code (user/dat_dto.c), only to answer
 * DAT's synchronous return code before the kernel has seen the entry: the
 * kernel checks it again, trusting nothing in a ring. Pure functions of
 * values, for both sides: no kernel object, no libdat object. They answer
 * with the errno of the uapi table (include/uapi/linux/kdat.h).
 */
#ifndef KDAT_RULES_H
#define KDAT_RULES_H

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/types.h>
#include <uapi/linux/kdat.h>
#else
#include <errno.h>
#include <stdbool.h>
#include <linux/types.h>
#include <linux/kdat.h>
#endif

/* IOV segments a DTO may have, at most, on any queue. */
#define KDAT_DTO_MAX_IOV	32

static inline bool kdat_op_is_atomic(__u32 op)
{
	return op == KDAT_DTO_FETCH_ADD || op == KDAT_DTO_CMP_SWAP;
}

/* What an Endpoint's send queue takes. */
static inline bool kdat_op_is_request(__u32 op)
{
	return op == KDAT_DTO_SEND || op == KDAT_DTO_RDMA_WRITE ||
	       op == KDAT_DTO_RDMA_READ || op == KDAT_DTO_RDMA_WRITE_IMM ||
	       kdat_op_is_atomic(op) || op == KDAT_DTO_SEND_UD;
}

/* Does @op name a remote buffer? */
static inline bool kdat_op_has_remote(__u32 op)
{
	return op == KDAT_DTO_RDMA_WRITE || op == KDAT_DTO_RDMA_READ ||
	       op == KDAT_DTO_RDMA_WRITE_IMM || kdat_op_is_atomic(op);
}

/*
 * The privileges a DTO of @op needs of its local segments, on an IA whose
 * transport cannot do @limits (KDAT_IA_*): what the device writes, local
 * write (an atomic writes the value it found); what it reads, local read;
 * on iWARP a read's sink also remote write (its response is a tagged
 * write).
 */
static inline __u32 kdat_rule_need(__u32 op, __u32 limits)
{
	if (op == KDAT_DTO_RDMA_READ)
		return KDAT_MEM_PRIV_LOCAL_WRITE |
		       (limits & KDAT_IA_READ_SINK_REMOTE_WRITE ?
			KDAT_MEM_PRIV_REMOTE_WRITE : 0);
	if (op == KDAT_DTO_RECEIVE || kdat_op_is_atomic(op))
		return KDAT_MEM_PRIV_LOCAL_WRITE;
	return KDAT_MEM_PRIV_LOCAL_READ;
}

/*
 * May a memory region of privileges @priv, in the PZ of the DTO
 * (@same_pz) or another, covering [@addr, @addr + @length), serve the
 * segment [@va, @va + @len) of a DTO needing @need? Local write implies
 * local read. 0, or EACCES (a missing privilege), EPERM (another PZ),
 * EINVAL (out of its bounds).
 */
static inline int kdat_rule_segment(__u32 priv, bool same_pz, __u64 addr,
				    __u64 length, __u32 need, __u64 va,
				    __u64 len)
{
	__u64 end;

	if (priv & KDAT_MEM_PRIV_LOCAL_WRITE)
		priv |= KDAT_MEM_PRIV_LOCAL_READ;
	if ((priv & need) != need)
		return -EACCES;
	if (!same_pz)
		return -EPERM;
	if (__builtin_add_overflow(va, len, &end) || va < addr ||
	    end > addr + length)
		return -EINVAL;
	return 0;
}

/*
 * The same for a segment of a DTO, whose every segment also fits the 32
 * bits of a work request's.
 */
static inline int kdat_rule_dto_segment(__u32 priv, bool same_pz,
					__u64 addr, __u64 length, __u32 need,
					__u64 va, __u64 len)
{
	int ret = kdat_rule_segment(priv, same_pz, addr, length, need, va,
				    len);

	return ret ? ret : len > 0xffffffffULL ? -EINVAL : 0;
}

/*
 * May a DTO of @op carry the completion flags @flags on an Endpoint whose
 * completion flags for that queue are @ep_flags? 0 or EINVAL.
 */
static inline int kdat_rule_flags(__u32 op, __u32 flags, __u32 ep_flags)
{
	__u32 allowed;

	if (op == KDAT_DTO_RECEIVE) {
		allowed = KDAT_COMPLETION_UNSIGNALLED;
	} else {
		allowed = KDAT_COMPLETION_SUPPRESS |
			  KDAT_COMPLETION_UNSIGNALLED |
			  KDAT_COMPLETION_BARRIER_FENCE;
		/* What carries a message to a receive may wake its reaper. */
		if (op == KDAT_DTO_SEND || op == KDAT_DTO_RDMA_WRITE_IMM ||
		    op == KDAT_DTO_SEND_UD)
			allowed |= KDAT_COMPLETION_SOLICITED_WAIT;
	}
	if (flags & ~allowed)
		return -EINVAL;
	/* Unsignalled only where the EP was configured for it (DAT). */
	if ((flags & KDAT_COMPLETION_UNSIGNALLED) &&
	    !(ep_flags & KDAT_COMPLETION_UNSIGNALLED))
		return -EINVAL;
	return 0;
}

/*
 * The IB extensions' arguments of a DTO of @op: @ext (every field @op does
 * not use is 0), and for an atomic, on a device with atomics, one local
 * segment (@num) of exactly 8 bytes (@len0, the first segment's length)
 * and an 8-byte aligned remote address (@raddr) (IB's rule; the remote
 * length is not used). @limits: the IA's KDAT_IA_*. 0, EINVAL, or
 * EOPNOTSUPP (no atomics, or no immediate data, on this transport).
 */
static inline int kdat_rule_ext(__u32 op, const struct kdat_dto_ext *ext,
				__u32 num, __u64 len0, __u64 raddr,
				__u32 limits)
{
	if (op != KDAT_DTO_SEND_UD && ext->ah_handle)
		return -EINVAL;
	switch (op) {
	case KDAT_DTO_RDMA_WRITE_IMM:
		if (ext->compare_add || ext->swap)
			return -EINVAL;
		return limits & KDAT_IA_NO_IMM_DATA ? -EOPNOTSUPP : 0;
	case KDAT_DTO_FETCH_ADD:
	case KDAT_DTO_CMP_SWAP:
		if (ext->imm_data || (op == KDAT_DTO_FETCH_ADD && ext->swap))
			return -EINVAL;
		if (limits & KDAT_IA_NO_ATOMICS)
			return -EOPNOTSUPP;
		if (num != 1 || len0 != sizeof(__u64) ||
		    raddr % sizeof(__u64))
			return -EINVAL;
		return 0;
	default:
		return ext->compare_add || ext->swap || ext->imm_data ?
		       -EINVAL : 0;
	}
}

/* What a DTO is checked against of its Endpoint, as each side holds it. */
struct kdat_rule_ep {
	__u32 send_sge, recv_sge, read_sge;	/* IOV segments per DTO */
	__u32 req_flags, recv_flags;	/* its KDAT_COMPLETION_* per queue */
	__u32 limits;			/* its IA's KDAT_IA_* */
	__u32 ud_mtu;			/* a UD EP's datagrams, at most */
	bool ud;			/* a UD EP */
	bool srq;			/* its receives come from an SRQ */
};

/* One DTO as posted: its op, flags, segments and remote buffer. */
struct kdat_rule_dto {
	__u32 op;
	__u32 flags;
	__u32 num;			/* IOV segments */
	__u64 len0;			/* the first one's length, if any */
	const struct kdat_dto_ext *ext;
	__u64 raddr, rlen;		/* the remote buffer, if @op has one */
	__u32 rpad;			/* its reserved word, 0 */
};

/* IOV segments a DTO of @op may have on a queue with the attributes @ep. */
static inline __u32 kdat_rule_max_sge(const struct kdat_rule_ep *ep, __u32 op)
{
	return op == KDAT_DTO_RECEIVE ? ep->recv_sge :
	       op == KDAT_DTO_RDMA_READ ? ep->read_sge : ep->send_sge;
}

/*
 * Check segment @i of the DTO for the privileges @need: the side's own
 * lookup of the segment's memory region, which answers by
 * kdat_rule_dto_segment(). *@len: the segment's length.
 */
typedef int (*kdat_rule_seg_fn)(void *arg, __u32 i, __u32 need,
				__u64 *len);

/*
 * The one check of a DTO for an Endpoint, in its order: the op, the
 * queue's kind, the extensions' arguments, the completion flags, the IOV's
 * size, each segment (@seg with @arg), the total length; an RDMA read must
 * fit the local IOV and a datagram one packet (EMSGSIZE). An RDMA write
 * sends the whole local IOV from the target address on: the remote
 * region's bounds are the peer device's to enforce. 0, or the errno of the
 * uapi table; EBADF: a datagram on an RC EP, or the converse.
 */
static inline int kdat_rule_dto(const struct kdat_rule_ep *ep,
				const struct kdat_rule_dto *d,
				kdat_rule_seg_fn seg, void *arg)
{
	bool recv = d->op == KDAT_DTO_RECEIVE;
	__u64 total = 0, len;
	__u32 i;
	int ret;

	if ((!kdat_op_is_request(d->op) && !recv) ||
	    d->num > KDAT_DTO_MAX_IOV)
		return -EINVAL;
	if (ep->ud ? d->op != KDAT_DTO_SEND_UD && !recv :
		     d->op == KDAT_DTO_SEND_UD)
		return -EBADF;
	ret = kdat_rule_ext(d->op, d->ext, d->num, d->len0, d->raddr,
			    ep->limits);
	if (ret)
		return ret;
	if (d->rpad)
		return -EINVAL;
	if (recv && ep->srq)
		return -EINVAL;	/* its receives come from the SRQ */
	ret = kdat_rule_flags(d->op, d->flags,
			      recv ? ep->recv_flags : ep->req_flags);
	if (ret)
		return ret;
	if (d->num > kdat_rule_max_sge(ep, d->op))
		return -EINVAL;
	for (i = 0; i < d->num; i++) {
		ret = seg(arg, i, kdat_rule_need(d->op, ep->limits), &len);
		if (ret)
			return ret;
		total += len;	/* each at most 32 bits: no overflow */
	}
	if (total > 0xffffffffULL)
		return -EINVAL;
	if (d->op == KDAT_DTO_RDMA_READ && total < d->rlen)
		return -EMSGSIZE;
	if (d->op == KDAT_DTO_SEND_UD && total > ep->ud_mtu)
		return -EMSGSIZE;
	return 0;
}

#endif /* KDAT_RULES_H */
