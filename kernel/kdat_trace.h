/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kdat's tracepoints (events/kdat/ in tracefs): a DTO posted, completed
 * or refused, a connection event, the ring poller going to sleep and
 * being woken, a wait's poll of its CQ. Handles are the owning file's
 * (what libdat and fdinfo show); @tgid names that file's process, which
 * a completion's context (softirq) does not.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kdat

#if !defined(_KDAT_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KDAT_TRACE_H

#include <linux/tracepoint.h>

TRACE_EVENT(kdat_post,
	TP_PROTO(u32 tgid, u32 ep, u32 op, u64 cookie, u64 length, u32 flags),
	TP_ARGS(tgid, ep, op, cookie, length, flags),
	TP_STRUCT__entry(
		__field(u32, tgid)
		__field(u32, ep)
		__field(u32, op)
		__field(u32, flags)
		__field(u64, cookie)
		__field(u64, length)
	),
	TP_fast_assign(
		__entry->tgid = tgid;
		__entry->ep = ep;
		__entry->op = op;
		__entry->flags = flags;
		__entry->cookie = cookie;
		__entry->length = length;
	),
	TP_printk("tgid=%u ep=%u op=%u cookie=%#llx length=%llu flags=%#x",
		  __entry->tgid, __entry->ep, __entry->op,
		  __entry->cookie, __entry->length, __entry->flags)
);

TRACE_EVENT(kdat_complete,
	TP_PROTO(u32 tgid, u32 handle, u32 op, u64 cookie, u32 status,
		 u64 length, int wc_status),
	TP_ARGS(tgid, handle, op, cookie, status, length, wc_status),
	TP_STRUCT__entry(
		__field(u32, tgid)
		__field(u32, handle)
		__field(u32, op)
		__field(u32, status)
		__field(u64, cookie)
		__field(u64, length)
		__field(int, wc_status)
	),
	TP_fast_assign(
		__entry->tgid = tgid;
		__entry->handle = handle;
		__entry->op = op;
		__entry->status = status;
		__entry->cookie = cookie;
		__entry->length = length;
		__entry->wc_status = wc_status;
	),
	TP_printk("tgid=%u handle=%u op=%u cookie=%#llx status=%u length=%llu wc_status=%d",
		  __entry->tgid, __entry->handle, __entry->op,
		  __entry->cookie, __entry->status, __entry->length,
		  __entry->wc_status)
);

TRACE_EVENT(kdat_refuse,
	TP_PROTO(u32 tgid, u32 handle, u32 op, u64 cookie, int err),
	TP_ARGS(tgid, handle, op, cookie, err),
	TP_STRUCT__entry(
		__field(u32, tgid)
		__field(u32, handle)
		__field(u32, op)
		__field(int, err)
		__field(u64, cookie)
	),
	TP_fast_assign(
		__entry->tgid = tgid;
		__entry->handle = handle;
		__entry->op = op;
		__entry->err = err;
		__entry->cookie = cookie;
	),
	TP_printk("tgid=%u handle=%u op=%u cookie=%#llx err=%d",
		  __entry->tgid, __entry->handle, __entry->op,
		  __entry->cookie, __entry->err)
);

TRACE_EVENT(kdat_conn_event,
	TP_PROTO(u32 tgid, u32 ep, u32 event, u32 state),
	TP_ARGS(tgid, ep, event, state),
	TP_STRUCT__entry(
		__field(u32, tgid)
		__field(u32, ep)
		__field(u32, event)
		__field(u32, state)
	),
	TP_fast_assign(
		__entry->tgid = tgid;
		__entry->ep = ep;
		__entry->event = event;
		__entry->state = state;
	),
	TP_printk("tgid=%u ep=%u event=%#x state=%u", __entry->tgid,
		  __entry->ep, __entry->event, __entry->state)
);

DECLARE_EVENT_CLASS(kdat_poller_class,
	TP_PROTO(u32 poller, unsigned long backoff, int why),
	TP_ARGS(poller, backoff, why),
	TP_STRUCT__entry(
		__field(u32, poller)
		__field(unsigned long, backoff)
		__field(int, why)
	),
	TP_fast_assign(
		__entry->poller = poller;
		__entry->backoff = backoff;
		__entry->why = why;
	),
	TP_printk("poller=%u backoff_jiffies=%lu why=%s",
		  __entry->poller, __entry->backoff,
		  __print_symbolic(__entry->why,
				   { KDAT_POLL_IDLE, "idle" },
				   { KDAT_POLL_SHARED, "shared" },
				   { KDAT_POLL_UNPAID, "unpaid" }))
);

DEFINE_EVENT(kdat_poller_class, kdat_poller_sleep,
	TP_PROTO(u32 poller, unsigned long backoff, int why),
	TP_ARGS(poller, backoff, why));

DEFINE_EVENT(kdat_poller_class, kdat_poller_wake,
	TP_PROTO(u32 poller, unsigned long backoff, int why),
	TP_ARGS(poller, backoff, why));

/* A wait's poll of its EVD's CQ before it sleeps (kdat_evd_poll()). */
TRACE_EVENT(kdat_wait_poll,
	TP_PROTO(u32 tgid, u32 evd, u64 ns, int how),
	TP_ARGS(tgid, evd, ns, how),
	TP_STRUCT__entry(
		__field(u32, tgid)
		__field(u32, evd)
		__field(u64, ns)
		__field(int, how)
	),
	TP_fast_assign(
		__entry->tgid = tgid;
		__entry->evd = evd;
		__entry->ns = ns;
		__entry->how = how;
	),
	TP_printk("tgid=%u evd=%u ns=%llu how=%s", __entry->tgid,
		  __entry->evd, __entry->ns,
		  __print_symbolic(__entry->how,
				   { KDAT_WAIT_POLL_HIT, "hit" },
				   { KDAT_WAIT_POLL_MISS, "miss" },
				   { KDAT_WAIT_POLL_SHARED, "shared" },
				   { KDAT_WAIT_POLL_WANTED, "wanted" }))
);

#endif /* _KDAT_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE kdat_trace
#include <trace/define_trace.h>
