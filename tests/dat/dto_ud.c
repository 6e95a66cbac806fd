// SPDX-License-Identifier: GPL-2.0
/*
 * UD endpoints, DAT_IB_SERVICE_TYPE_UD (dat_dto_test): datagrams, several
 * EPs, errors.
 */
#include "dto.h"

#define UD_GRH	40	/* the Global Route Header before a datagram's data */

#define UD_NEP	3

#define UD_BUF	(64 * 1024)

/*
 * One side of the UD cases: its IA, PZ and EVDs (in @s), UD EPs, a PSP
 * (listening for UD requests too) and a registered buffer.
 */
struct uside {
	struct side s;
	DAT_EP_HANDLE ep[UD_NEP];
	DAT_CONN_QUAL qual;
	struct buf b;
};

static DAT_EP_ATTR ud_attr(void)
{
	DAT_EP_ATTR a = {
		.service_type = (DAT_SERVICE_TYPE)DAT_IB_SERVICE_TYPE_UD,
		.max_message_size = 1024,
		.max_recv_dtos = 16,
		.max_request_dtos = 16,
		.max_recv_iov = 2,
		.max_request_iov = 2,
	};

	return a;
}

static void ud_open(struct __test_metadata *_metadata, struct uside *u,
		    int neps)
{
	DAT_EP_ATTR a = ud_attr();
	struct side *s = &u->s;
	int i;

	memset(u, 0, sizeof(*u));
	s->async_evd = DAT_HANDLE_NULL;
	OK(dat_ia_open(pair_conf.ia_name, 8, &s->async_evd, &s->ia));
	OK(dat_pz_create(s->ia, &s->pz));
	OK(dat_evd_create(s->ia, 128, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
			  &s->dto_evd));
	OK(dat_evd_create(s->ia, 16, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG,
			  &s->conn_evd));
	if (!ia_has(_metadata, s->ia, DAT_IB_ATTR_UD)) {
		ASSERT_DAT(dat_ep_create(s->ia, s->pz, s->dto_evd, s->dto_evd,
					 s->conn_evd, &a, &u->ep[0]),
			   DAT_MODEL_NOT_SUPPORTED);
		KDAT_SKIP("the transport has no datagrams (DAT_IB_UD FALSE; DAT_MODEL_NOT_SUPPORTED checked)");
	}
	OK(dat_evd_create(s->ia, 16, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG,
			  &s->cr_evd));
	for (i = 0; i < neps; i++)
		OK(dat_ep_create(s->ia, s->pz, s->dto_evd, s->dto_evd,
				 s->conn_evd, &a, &u->ep[i]));
	u->qual = new_qual();
	OK(dat_psp_create(s->ia, u->qual, s->cr_evd, DAT_PSP_CONSUMER_FLAG,
			  &s->psp));
	OK(buf_reg(s, &u->b, UD_BUF, DAT_MEM_PRIV_ALL_FLAG));
}

/* The next connection event: a UD AH of type @type for @ep, with @pdata. */
static void expect_ud_ah(struct __test_metadata *_metadata, DAT_EVD_HANDLE evd,
			 DAT_EP_HANDLE ep, DAT_IB_EXT_TYPE type, uint32_t pdata,
			 DAT_IB_ADDR_HANDLE *ah)
{
	const DAT_CONNECTION_EVENT_DATA *d;
	const DAT_IB_EXTENSION_EVENT_DATA *x;
	const struct sockaddr_in *sin;
	DAT_EVENT ev;
	uint32_t got;

	OK(wait_event(evd, &ev));
	d = &ev.event_data.connect_event_data;
	x = ext_data(&ev);
	ASSERT_FALSE(ev.event_number !=
		     (DAT_EVENT_NUMBER)DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED ||
		     x->type != type || d->ep_handle != ep)
		TH_LOG("event %#x type %d ep %p; want %#x %d %p",
		       ev.event_number, x->type, d->ep_handle,
		       DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED, type, ep);
	ASSERT_TRUE(x->status == DAT_OP_SUCCESS);
	ASSERT_TRUE(x->remote_ah.ah && x->remote_ah.qpn);
	/* The peer's address: this host's, over the loopback of rxe. */
	sin = (const struct sockaddr_in *)&x->remote_ah.ia_addr;
	ASSERT_TRUE(sin->sin_family == AF_INET);
	ASSERT_TRUE(sin->sin_addr.s_addr == pair_conf.peer.sin_addr.s_addr);
	/* The peer's private data, as big as it sent it, kept with the AH. */
	ASSERT_EQ(4, d->private_data_size);
	memcpy(&got, d->private_data, 4);
	ASSERT_EQ(pdata, got);
	/* kdat keeps no CM object: nothing to free, but it may be asked. */
	OK(dat_ib_ud_cm_free(ep, x->context.as_ptr));
	*ah = x->remote_ah;
}

/*
 * UD EP a->ep[ia] asks b's PSP for an AH with private data @req; b takes
 * the request (DAT_IB_UD_CONNECTION_REQUEST_EVENT) with b->ep[ib],
 * answering @rep. Both AHs: *@ab (a's, to b's EP) and *@ba (b's, to a's).
 */
static void ud_connect(struct __test_metadata *_metadata, struct uside *a,
		       int ia, struct uside *b, int ib, uint32_t req,
		       uint32_t rep, DAT_IB_ADDR_HANDLE *ab,
		       DAT_IB_ADDR_HANDLE *ba)
{
	const DAT_CR_ARRIVAL_EVENT_DATA *d;
	DAT_CR_PARAM crp;
	DAT_EVENT ev;

	OK(dat_ep_connect(a->ep[ia], (DAT_IA_ADDRESS_PTR)&pair_conf.peer,
			  b->qual, TMO, 4, &req, DAT_QOS_BEST_EFFORT,
			  DAT_CONNECT_DEFAULT_FLAG));
	OK(wait_event(b->s.cr_evd, &ev));
	d = &ev.event_data.cr_arrival_event_data;
	ASSERT_TRUE(ev.event_number ==
		    (DAT_EVENT_NUMBER)DAT_IB_UD_CONNECTION_REQUEST_EVENT);
	ASSERT_TRUE(ext_data(&ev)->type == DAT_IB_UD_CONNECT_REQUEST);
	ASSERT_TRUE(d->conn_qual == b->qual);
	ASSERT_TRUE(d->sp_handle.psp_handle == b->s.psp);
	OK(dat_cr_query(d->cr_handle, DAT_CR_FIELD_ALL, &crp));
	ASSERT_EQ(4, crp.private_data_size);
	ASSERT_TRUE(!memcmp(crp.private_data, &req, 4));
	OK(dat_cr_accept(d->cr_handle, b->ep[ib], 4, &rep));
	expect_ud_ah(_metadata, a->s.conn_evd, a->ep[ia], DAT_IB_UD_REMOTE_AH,
		     rep, ab);
	expect_ud_ah(_metadata, b->s.conn_evd, b->ep[ib],
		     DAT_IB_UD_PASSIVE_REMOTE_AH, req, ba);
}

/*
 * A datagram of @len bytes (pattern @seed) from @from's EP @fe through @ah
 * into a receive of @to's EP @te at buffer offset @roff, its buffer split
 * in two segments at @split (0: one segment): the data lands after the
 * GRH, both completions say so.
 */
static void ud_one(struct __test_metadata *_metadata, struct uside *from,
		   int fe, DAT_IB_ADDR_HANDLE *ah, struct uside *to, int te,
		   size_t len, size_t roff, size_t split, unsigned int seed,
		   bool suppress)
{
	DAT_LMR_TRIPLET s = seg(&from->b, 0, len), r[2];
	DAT_EVENT ev;
	size_t i;

	for (i = 0; i < len; i++)
		from->b.p[i] = (unsigned char)(seed + i * 7);
	memset(to->b.p + roff, 0xee, UD_GRH + len + 64);
	r[0] = seg(&to->b, roff, split ? split : UD_GRH + 1024);
	r[1] = seg(&to->b, roff + split, UD_GRH + 1024 - split);
	OK(dat_ep_post_recv(to->ep[te], split ? 2 : 1, r, cookie(100 + seed),
			    DAT_COMPLETION_DEFAULT_FLAG));
	OK(dat_ib_post_send_ud(from->ep[fe], len ? 1 : 0, len ? &s : NULL,
			       ah, cookie(200 + seed),
			       suppress ? DAT_COMPLETION_SUPPRESS_FLAG :
					  DAT_COMPLETION_DEFAULT_FLAG));
	if (!suppress)
		expect_ext(_metadata, from->s.dto_evd, DAT_IB_UD_SEND,
			   DAT_IB_DTO_SEND_UD, 200 + seed, DAT_DTO_SUCCESS, len,
			   NULL);
	expect_ext(_metadata, to->s.dto_evd, DAT_IB_UD_RECV, DAT_IB_DTO_RECV_UD,
		   100 + seed, DAT_DTO_SUCCESS, UD_GRH + len, &ev);
	ASSERT_TRUE(ev.event_data.dto_completion_event_data.ep_handle ==
		    to->ep[te]);
	for (i = 0; i < len; i++) {
		ASSERT_FALSE(to->b.p[roff + UD_GRH + i] !=
			     (unsigned char)(seed + i * 7))
			TH_LOG("%zu-byte datagram: byte %zu is %#x", len, i,
			       to->b.p[roff + UD_GRH + i]);
	}
	/* Nothing past it. */
	ASSERT_TRUE(to->b.p[roff + UD_GRH + len] == 0xee);
}

static void ud_close(struct __test_metadata *_metadata, struct uside *u)
{
	OK(dat_ia_close(u->s.ia, DAT_CLOSE_ABRUPT_FLAG));
}

/*
 * Datagrams of 0 to 1,000 bytes both ways, through the active side's AH
 * and the passive side's, in one segment or two (the GRH alone in the
 * first), completions suppressed or not; the events, the data after the
 * GRH, the counters.
 */
TEST_F(kdat, test_ud_datagrams)
{
	static const size_t lens[] = { 0, 1, 39, 40, 41, 100, 777, 1000 };
	DAT_IB_ADDR_HANDLE ab, ba;
	DAT_UINT64 out[DCNT_EP_ALL_COUNTERS];
	DAT_EP_PARAM ep;
	struct uside a, b;
	uint64_t bytes = 0;
	size_t i;
	int n = 0;

	ud_open(_metadata, &a, 1);
	ud_open(_metadata, &b, 1);
	OK(dat_ep_query(a.ep[0], DAT_EP_FIELD_ALL, &ep));
	ASSERT_TRUE(ep.ep_attr.service_type ==
		    (DAT_SERVICE_TYPE)DAT_IB_SERVICE_TYPE_UD);
	ASSERT_TRUE(ep.ep_state == DAT_EP_STATE_UNCONNECTED);
	ASSERT_TRUE(ep.ep_attr.max_rdma_read_in == 0 &&
		    ep.ep_attr.max_rdma_read_out == 0);
	TH_LOG("max_message_size %llu",
	       (unsigned long long)ep.ep_attr.max_message_size);
	ASSERT_TRUE(ep.ep_attr.max_message_size >= 1000);
	ud_connect(_metadata, &a, 0, &b, 0, 0x11111111, 0x22222222, &ab, &ba);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		ud_one(_metadata, &a, 0, &ab, &b, 0, lens[i], 512 * i, 0, i,
		       false);
		ud_one(_metadata, &b, 0, &ba, &a, 0, lens[i], 2048, 0, 50 + i,
		       false);
		bytes += lens[i];
		n++;
	}
	/* The GRH in a segment of its own; the data in the second. */
	ud_one(_metadata, &a, 0, &ab, &b, 0, 300, 8192, UD_GRH, 90, false);
	ud_one(_metadata, &b, 0, &ba, &a, 0, 300, 8192, UD_GRH, 91, false);
	/* Suppressed: no event at the sender, the datagram all the same. */
	ud_one(_metadata, &a, 0, &ab, &b, 0, 64, 16384, 0, 92, true);
	ud_one(_metadata, &b, 0, &ba, &a, 0, 64, 16384, 0, 93, true);
	/* Still nothing: no late event for a suppressed send. */
	{
		DAT_EVENT ev;
		DAT_COUNT nmore;

		ASSERT_DAT(dat_evd_wait(a.s.dto_evd, 200000, 1, &ev, &nmore),
			   DAT_TIMEOUT_EXPIRED);
	}
	counters(_metadata, a.ep[0], DCNT_EP_ALL_COUNTERS, out);
	ASSERT_EQ(n + 2, out[DCNT_EP_POST_SEND_UD]);
	ASSERT_EQ(bytes + 300 + 64, out[DCNT_EP_POST_SEND_UD_DATA]);
	ASSERT_EQ(n + 2, out[DCNT_EP_RECV_UD]);
	ASSERT_EQ(bytes + 300 + 64 + (n + 2) * UD_GRH,
		  out[DCNT_EP_RECV_UD_DATA]);
	ASSERT_EQ(0, out[DCNT_EP_POST_SEND]);
	OK(dat_ib_ud_ah_free(a.ep[0], &ab));
	OK(dat_ib_ud_ah_free(b.ep[0], &ba));
	OK(dat_ep_free(a.ep[0]));
	OK(dat_ep_free(b.ep[0]));
	ud_close(_metadata, &a);
	ud_close(_metadata, &b);
}

/*
 * Several EPs: each of a's asks b for an AH (a's first twice), b's EPs
 * take the requests (its first EP several); each datagram reaches the EP
 * its AH was made for, both ways.
 */
TEST_F(kdat, test_ud_several_eps)
{
	static const struct { int ae, be; } m[] = {
		{ 0, 0 }, { 1, 0 }, { 2, 1 }, { 0, 1 },
	};
	DAT_IB_ADDR_HANDLE ab[4], ba[4];
	struct uside a, b;
	int i, j;

	ud_open(_metadata, &a, 3);
	ud_open(_metadata, &b, 2);
	for (i = 0; i < 4; i++)
		ud_connect(_metadata, &a, m[i].ae, &b, m[i].be, i, 0x100 + i,
			   &ab[i], &ba[i]);
	/* One AH per connect; an EP's peers told apart by QP number. */
	for (i = 0; i < 4; i++)
		for (j = 0; j < i; j++) {
			ASSERT_TRUE(ab[i].ah != ab[j].ah);
			ASSERT_TRUE(ba[i].ah != ba[j].ah);
			ASSERT_TRUE((ab[i].qpn == ab[j].qpn) ==
				    (m[i].be == m[j].be));
			ASSERT_TRUE((ba[i].qpn == ba[j].qpn) ==
				    (m[i].ae == m[j].ae));
		}
	for (i = 0; i < 4; i++) {
		ud_one(_metadata, &a, m[i].ae, &ab[i], &b, m[i].be, 10 + i,
		       1024 * i, 0, i, false);
		ud_one(_metadata, &b, m[i].be, &ba[i], &a, m[i].ae, 20 + i,
		       1024 * i, 0, 10 + i, false);
	}
	/* An AH serves its own EP alone. */
	ASSERT_DAT(dat_ib_post_send_ud(a.ep[1], 0, NULL, &ab[0], cookie(1), 0),
		   DAT_INVALID_PARAMETER);
	for (i = 0; i < 4; i++) {
		OK(dat_ib_ud_ah_free(a.ep[m[i].ae], &ab[i]));
		OK(dat_ib_ud_ah_free(b.ep[m[i].be], &ba[i]));
	}
	for (i = 0; i < 3; i++)
		OK(dat_ep_free(a.ep[i]));
	for (i = 0; i < 2; i++)
		OK(dat_ep_free(b.ep[i]));
	ud_close(_metadata, &a);
	ud_close(_metadata, &b);
}

/*
 * What UD refuses, and how: bad AHs, RC DTOs on a UD EP and datagrams on
 * an RC one, a datagram over the MTU, an EP freed with AHs, a UD request
 * accepted with an RC EP, a reject and its data, a qualifier nobody
 * listens on, an SRQ.
 */
TEST_F(kdat, test_ud_errors)
{
	DAT_IB_ADDR_HANDLE ab, ba, bad;
	DAT_EP_ATTR attr = ud_attr();
	DAT_EP_HANDLE rc, ud2;
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 4, .max_recv_iov = 1 };
	DAT_SRQ_HANDLE srq;
	DAT_RMR_TRIPLET rem = { 0 };
	DAT_LMR_TRIPLET t;
	DAT_EP_PARAM ep;
	DAT_CR_HANDLE cr;
	DAT_EVENT ev;
	struct uside a, b;
	uint32_t req = 7, mtu;
	int junk, ahs = kdat_objects("ah");

	ud_open(_metadata, &a, 1);
	ud_open(_metadata, &b, 1);
	ud_connect(_metadata, &a, 0, &b, 0, 1, 2, &ab, &ba);
	OK(dat_ep_query(a.ep[0], DAT_EP_FIELD_ALL, &ep));
	mtu = ep.ep_attr.max_message_size;
	ASSERT_TRUE(mtu >= 256 && mtu + 1 <= UD_BUF);

	/* Bad AHs: none, not one, another EP's, another QP number. */
	t = seg(&a.b, 0, 8);
	ASSERT_DAT(dat_ib_post_send_ud(a.ep[0], 1, &t, NULL, cookie(1), 0),
		   DAT_INVALID_PARAMETER);
	bad = ab;
	bad.ah = (struct ibv_ah *)&junk;
	ASSERT_DAT(dat_ib_post_send_ud(a.ep[0], 1, &t, &bad, cookie(1), 0),
		   DAT_INVALID_PARAMETER);
	ASSERT_DAT(dat_ib_post_send_ud(a.ep[0], 1, &t, &ba, cookie(1), 0),
		   DAT_INVALID_PARAMETER);
	bad = ab;
	bad.qpn ^= 1;
	ASSERT_DAT(dat_ib_post_send_ud(a.ep[0], 1, &t, &bad, cookie(1), 0),
		   DAT_INVALID_PARAMETER);
	ASSERT_DAT(dat_ib_ud_ah_free(a.ep[0], &ba), DAT_INVALID_PARAMETER);

	/* RC DTOs on a UD EP; a datagram, and UD ops, on an RC EP. */
	{
		DAT_EP_ATTR rca = ep_attr();
		DAT_RETURN r;

		r = dat_ep_post_send(a.ep[0], 1, &t, cookie(2), 0);
		ASSERT_TRUE(DAT_GET_TYPE(r) == DAT_INVALID_HANDLE &&
			    DAT_GET_SUBTYPE(r) == DAT_INVALID_HANDLE_EP);
		ASSERT_DAT(dat_ep_post_rdma_write(a.ep[0], 1, &t, cookie(2),
						  &rem, 0),
			   DAT_INVALID_HANDLE);
		ASSERT_DAT(dat_ep_post_rdma_read(a.ep[0], 1, &t, cookie(2),
						 &rem, 0),
			   DAT_INVALID_HANDLE);
		ASSERT_DAT(dat_ib_post_rdma_write_immed(a.ep[0], 1, &t,
							cookie(2), &rem, 5, 0),
			   DAT_INVALID_HANDLE);
		OK(dat_ep_create(a.s.ia, a.s.pz, a.s.dto_evd, a.s.dto_evd,
				 a.s.conn_evd, &rca, &rc));
		r = dat_ib_post_send_ud(rc, 1, &t, &ab, cookie(2), 0);
		ASSERT_TRUE(DAT_GET_TYPE(r) == DAT_INVALID_HANDLE &&
			    DAT_GET_SUBTYPE(r) == DAT_INVALID_HANDLE_EP);
		ASSERT_DAT(dat_ib_ud_ah_free(rc, &ab), DAT_INVALID_HANDLE);
		ASSERT_DAT(dat_ib_ud_cm_free(rc, NULL), DAT_INVALID_HANDLE);
	}

	/* One packet: the MTU and no more. */
	t = seg(&a.b, 0, mtu + 1);
	ASSERT_DAT(dat_ib_post_send_ud(a.ep[0], 1, &t, &ab, cookie(3), 0),
		   DAT_LENGTH_ERROR);
	t = seg(&b.b, 0, UD_GRH + mtu);
	OK(dat_ep_post_recv(b.ep[0], 1, &t, cookie(4), 0));
	t = seg(&a.b, 0, mtu);
	OK(dat_ib_post_send_ud(a.ep[0], 1, &t, &ab, cookie(5), 0));
	expect_ext(_metadata, a.s.dto_evd, DAT_IB_UD_SEND, DAT_IB_DTO_SEND_UD,
		   5, DAT_DTO_SUCCESS, mtu, NULL);
	expect_ext(_metadata, b.s.dto_evd, DAT_IB_UD_RECV, DAT_IB_DTO_RECV_UD,
		   4, DAT_DTO_SUCCESS, UD_GRH + mtu, NULL);

	/* A UD request is not for an RC EP: refused, the CR still usable. */
	OK(dat_ep_create(b.s.ia, b.s.pz, b.s.dto_evd, b.s.dto_evd,
			 b.s.conn_evd, NULL, &rc));
	OK(dat_ep_connect(a.ep[0], (DAT_IA_ADDRESS_PTR)&pair_conf.peer, b.qual,
			  TMO, 4, &req, DAT_QOS_BEST_EFFORT,
			  DAT_CONNECT_DEFAULT_FLAG));
	OK(wait_event(b.s.cr_evd, &ev));
	cr = ev.event_data.cr_arrival_event_data.cr_handle;
	ASSERT_DAT(dat_cr_accept(cr, rc, 0, NULL), DAT_INVALID_PARAMETER);
	/* Rejected, with data: the requester sees it. */
	OK(dat_cr_reject(cr, 5, "nope"));
	OK(wait_event(a.s.conn_evd, &ev));
	ASSERT_TRUE(ev.event_number ==
		    (DAT_EVENT_NUMBER)DAT_IB_UD_CONNECTION_REJECT_EVENT);
	ASSERT_TRUE(ext_data(&ev)->type == DAT_IB_UD_CONNECT_REJECT);
	ASSERT_TRUE(ev.event_data.connect_event_data.ep_handle == a.ep[0]);
	ASSERT_TRUE(ev.event_data.connect_event_data.private_data_size >= 5);
	ASSERT_TRUE(!memcmp(ev.event_data.connect_event_data.private_data,
			    "nope", 5));
	/* Nobody listens there: the CM's reject, no private data. */
	OK(dat_ep_connect(a.ep[0], (DAT_IA_ADDRESS_PTR)&pair_conf.peer,
			  new_qual(), TMO, 4, &req, DAT_QOS_BEST_EFFORT,
			  DAT_CONNECT_DEFAULT_FLAG));
	OK(wait_event(a.s.conn_evd, &ev));
	ASSERT_TRUE(ev.event_number ==
		    (DAT_EVENT_NUMBER)DAT_IB_UD_CONNECTION_REJECT_EVENT);
	ASSERT_TRUE(ev.event_data.connect_event_data.private_data_size == 0);

	/* No SRQ for a UD EP. */
	OK(dat_srq_create(a.s.ia, a.s.pz, &sa, &srq));
	ASSERT_DAT(dat_ep_create_with_srq(a.s.ia, a.s.pz, a.s.dto_evd,
					  a.s.dto_evd, a.s.conn_evd, srq,
					  &attr, &ud2),
		   DAT_MODEL_NOT_SUPPORTED);
	OK(dat_srq_free(srq));

	/* An EP with AHs stays; its AHs go first, once. */
	ASSERT_DAT(dat_ep_free(a.ep[0]), DAT_INVALID_STATE);
	OK(dat_ib_ud_ah_free(a.ep[0], &ab));
	ASSERT_DAT(dat_ib_ud_ah_free(a.ep[0], &ab), DAT_INVALID_PARAMETER);
	ASSERT_DAT(dat_ib_post_send_ud(a.ep[0], 0, NULL, &ab, cookie(6), 0),
		   DAT_INVALID_PARAMETER);
	OK(dat_ep_free(a.ep[0]));
	/* An IA closed with an AH left: gone with it. */
	ud_close(_metadata, &a);
	ud_close(_metadata, &b);
	if (ahs >= 0)
		ASSERT_EQ(ahs, kdat_objects("ah"));
}
