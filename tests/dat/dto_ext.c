// SPDX-License-Identifier: GPL-2.0
/*
 * The DAT IB extensions, dat_ib_extensions.h (dat_dto_test): their
 * attributes, RDMA writes with immediate data, atomics, counters.
 */
#include "dto.h"

/* Does the IA's device have atomics, as its attributes say? */
static bool ia_atomics(struct __test_metadata *_metadata, DAT_IA_HANDLE ia)
{
	DAT_PROVIDER_ATTR pa;
	const char *v;

	OK(dat_ia_query(ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, &pa));
	v = attr_value(_metadata, &pa, DAT_IB_ATTR_FETCH_AND_ADD);
	ASSERT_TRUE(v && (!strcmp(v, "TRUE") || !strcmp(v, "FALSE")));
	return !strcmp(v, "TRUE");
}

/* What ibv_devinfo says of the device's atomics: 1, 0, or -1 unknown. */
static int devinfo_atomics(void)
{
	const char *dev = getenv("KDAT_TEST_DEV");
	char cmd[160], line[256];
	int ret = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "ibv_devinfo -v -d %s 2>/dev/null", dev);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "atomic_cap:");

		if (p)
			ret = !strstr(p, "ATOMIC_NONE");
	}
	if (f)
		pclose(f);
	return ret;
}

/* The attributes each IA gives; the same from dat_ib_open_query. */
static void check_ext_attrs(struct __test_metadata *_metadata,
			    const DAT_IA_ATTR *ia, const DAT_PROVIDER_ATTR *pa)
{
	/* iWARP has no immediate data and no datagrams; IB and RoCE do. */
	const char *ib_only = dev_iwarp(_metadata) ? "FALSE" : "TRUE";
	const char *fa, *cs;
	int dev;

	ASSERT_TRUE(ia->extension_supported == DAT_EXTENSION_IB);
	ASSERT_EQ(DAT_IB_EXTENSION_VERSION, ia->extension_version);
	ASSERT_TRUE(attr_is(_metadata, pa, "DAT_EXTENSION_INTERFACE", "TRUE"));
	ASSERT_TRUE(attr_is(_metadata, pa, DAT_IB_ATTR_IMMED_DATA, ib_only));
	ASSERT_TRUE(attr_is(_metadata, pa, DAT_IB_ATTR_COUNTERS, "TRUE"));
	ASSERT_TRUE(attr_is(_metadata, pa, DAT_IB_ATTR_UD, ib_only));
	fa = attr_value(_metadata, pa, DAT_IB_ATTR_FETCH_AND_ADD);
	cs = attr_value(_metadata, pa, DAT_IB_ATTR_CMP_AND_SWAP);
	ASSERT_TRUE(fa && cs && !strcmp(fa, cs));
	ASSERT_TRUE(!strcmp(fa, "TRUE") || !strcmp(fa, "FALSE"));
	dev = devinfo_atomics();
	TH_LOG("atomics: %s, ibv_devinfo %d", fa, dev);
	if (dev >= 0)
		ASSERT_TRUE(dev == !strcmp(fa, "TRUE"));
}

/* dat_ia_query's extension fields, and dat_ib_open_query/close_query. */
TEST_F_TIMEOUT(kdat, test_ext_attrs, 120)
{
	DAT_IA_ATTR ia, qa;
	DAT_PROVIDER_ATTR pa, qp;
	DAT_IA_HANDLE qia = (DAT_IA_HANDLE)&qia;
	const struct sockaddr_in *sin;
	struct side s;
	int i;

	OK(side_open(&s, NULL));
	OK(dat_ia_query(s.ia, NULL, DAT_IA_FIELD_ALL, &ia,
			DAT_PROVIDER_FIELD_ALL, &pa));
	check_ext_attrs(_metadata, &ia, &pa);
	for (i = 0; i < pa.num_provider_specific_attr; i++)
		TH_LOG("%s=%s", pa.provider_specific_attr[i].name,
		       pa.provider_specific_attr[i].value);

	/* An IA of its own, for the query alone, until close_query. */
	memset(&qa, 0, sizeof(qa));
	memset(&qp, 0, sizeof(qp));
	OK(dat_ib_open_query(pair_conf.ia_name, &qia, DAT_IA_FIELD_ALL, &qa,
			     DAT_PROVIDER_FIELD_ALL, &qp));
	ASSERT_TRUE(qia && qia != s.ia);
	check_ext_attrs(_metadata, &qa, &qp);
	ASSERT_EQ(pa.num_provider_specific_attr, qp.num_provider_specific_attr);
	sin = (const struct sockaddr_in *)qa.ia_address_ptr;
	ASSERT_TRUE(sin &&
		    sin->sin_addr.s_addr == pair_conf.peer.sin_addr.s_addr);
	ASSERT_TRUE(!strcmp(qp.provider_name, pair_conf.ia_name));
	OK(dat_ib_close_query(qia));
	ASSERT_DAT(dat_ib_close_query(qia), DAT_INVALID_HANDLE);
	/* The first IA never noticed. */
	OK(dat_ia_query(s.ia, NULL, DAT_IA_FIELD_ALL, &ia, 0, NULL));
	qia = (DAT_IA_HANDLE)&qia;
	ASSERT_DAT(dat_ib_open_query("kdat-nosuchdevice-1", &qia,
				     DAT_IA_FIELD_ALL, &qa, 0, NULL),
		   DAT_PROVIDER_NOT_FOUND);
	ASSERT_TRUE(qia == DAT_HANDLE_NULL);
	ASSERT_DAT(dat_ib_open_query(pair_conf.ia_name, &qia, DAT_IA_FIELD_ALL,
				     NULL, 0, NULL), DAT_INVALID_PARAMETER);

	/* A datagram on an RC EP: refused as OFA's provider refuses it. */
	ASSERT_DAT(dat_ib_post_send_ud(s.ep, 0, NULL, NULL, cookie(1), 0),
		   DAT_INVALID_HANDLE);
	/* What kdat does not offer: collectives, counter sampling. */
	ASSERT_DAT(dat_extension_op(s.ia, DAT_IB_START_COUNTERS_OP,
				    DCNT_IA_CM),
		   DAT_NOT_IMPLEMENTED);
	ASSERT_DAT(dat_extension_op(s.ia, DAT_IB_COLLECTIVE_BARRIER_OP, NULL,
				    0), DAT_NOT_IMPLEMENTED);
	OK(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
}

/*
 * RDMA write with immediate data: a matrix of lengths (none at all, 1
 * byte, 64 KiB), segment counts, immediate values and flags. The write
 * takes a receive at the peer, whose buffer stays as it was; the data
 * lands at the target and nowhere else.
 */
TEST_F(kdat, test_write_immed)
{
	static const struct {
		size_t off;
		DAT_COUNT len, nseg;
		DAT_UINT32 imm;
		DAT_COMPLETION_FLAGS flags;
	} m[] = {
		{ 0, 1, 1, 0x7777, 0 },
		{ 100, 4096, 1, 0, 0 },
		{ 3, 3000, 2, 0xdeadbeef, DAT_COMPLETION_SOLICITED_WAIT_FLAG },
		{ 0, 0, 0, 0xffffffff, 0 },
		{ 8, 65536, 1, 0x01020304, DAT_COMPLETION_BARRIER_FENCE_FLAG },
		{ 7, 5000, 4, 0x80000000, 0 },
	};
	const size_t tlen = 128 * 1024;
	struct buf lb, tb, rb;
	struct side c, s, u;
	DAT_LMR_TRIPLET iov[4], r;
	DAT_RMR_TRIPLET rem;
	unsigned char *want;
	DAT_EVENT ev;
	size_t i, j;

	OK(sides_reg(&c, &lb, &s, &tb, tlen));
	OK(buf_reg(&s, &rb, 4096, DAT_MEM_PRIV_ALL_FLAG));
	want = malloc(tlen);
	ASSERT_NE(NULL, want);
	OK(connect_pair(&c, &s, false));
	if (!ia_has(_metadata, c.ia, DAT_IB_ATTR_IMMED_DATA)) {
		iov[0] = seg(&lb, 0, 64);
		rem.rmr_context = tb.rctx;
		rem.virtual_address = (uintptr_t)tb.p;
		rem.segment_length = 64;
		ASSERT_DAT(dat_ib_post_rdma_write_immed(c.ep, 1, iov, cookie(1),
							&rem, 7, 0),
			   DAT_MODEL_NOT_SUPPORTED);
		state_is(_metadata, c.ep, DAT_EP_STATE_CONNECTED);
		SKIP(return, "the transport has no immediate data (DAT_IB_IMMED_DATA FALSE; DAT_MODEL_NOT_SUPPORTED checked)");
	}
	for (i = 0; i < tlen; i++)
		lb.p[i] = (unsigned char)(i * 31 + 7);
	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		size_t at = 0, per = m[i].nseg ? m[i].len / m[i].nseg : 0;

		memset(tb.p, 0xEE, tb.len);
		memset(rb.p, 0xEE, rb.len);
		/* nseg segments from far apart, the last takes the rest. */
		for (j = 0; j < (size_t)m[i].nseg; j++) {
			size_t n = j + 1 == (size_t)m[i].nseg ?
				   m[i].len - at : per;

			iov[j] = seg(&lb, j * 20000 + j, n);
			memcpy(want + at, lb.p + j * 20000 + j, n);
			at += n;
		}
		r = seg(&rb, 0, 64);
		OK(dat_ep_post_recv(s.ep, 1, &r, cookie(100 + i), 0));
		rem.rmr_context = tb.rctx;
		rem.virtual_address = (uintptr_t)tb.p + m[i].off;
		rem.segment_length = m[i].len;
		TH_LOG("%d bytes in %d segments at +%zu, imm %#x, flags %#x",
		       m[i].len, m[i].nseg, m[i].off, m[i].imm,
		       m[i].flags);
		/* Immediate data alone: no IOV, no remote buffer. */
		OK(dat_ib_post_rdma_write_immed(c.ep, m[i].nseg,
						m[i].nseg ? iov : NULL,
						cookie(200 + i),
						m[i].nseg ? &rem : NULL,
						m[i].imm, m[i].flags));
		expect_ext(_metadata, c.dto_evd, DAT_IB_RDMA_WRITE_IMMED,
			   DAT_IB_DTO_RDMA_WRITE_IMMED, 200 + i,
			   DAT_DTO_SUCCESS, m[i].len, NULL);
		expect_ext(_metadata, s.dto_evd, DAT_IB_RDMA_WRITE_IMMED_DATA,
			   DAT_IB_DTO_RECV_IMMED, 100 + i, DAT_DTO_SUCCESS,
			   m[i].len, &ev);
		ASSERT_EQ(m[i].imm, ext_data(&ev)->val.immed.data);
		ASSERT_TRUE(ev.event_data.dto_completion_event_data.ep_handle ==
			    s.ep);
		ASSERT_TRUE(!memcmp(tb.p + m[i].off, want, m[i].len));
		ASSERT_TRUE(!m[i].off || tb.p[m[i].off - 1] == 0xEE);
		ASSERT_TRUE(tb.p[m[i].off + m[i].len] == 0xEE);
		ASSERT_TRUE(rb.p[0] == 0xEE && rb.p[63] == 0xEE);
	}
	/* A plain message after them is a plain DTO completion. */
	r = seg(&rb, 0, 64);
	OK(dat_ep_post_recv(s.ep, 1, &r, cookie(900), 0));
	iov[0] = seg(&lb, 0, 16);
	OK(dat_ep_post_send(c.ep, 1, iov, cookie(901), 0));
	expect_dto(_metadata, c.dto_evd, 901, DAT_DTO_SUCCESS, 16);
	OK(wait_event(s.dto_evd, &ev));
	ASSERT_TRUE(ev.event_number == DAT_DTO_COMPLETION_EVENT);
	ASSERT_TRUE(ev.event_data.dto_completion_event_data.operation ==
		    DAT_DTO_RECEIVE);

	/* Refused at once, nothing posted. */
	ASSERT_DAT(dat_ib_post_rdma_write_immed(c.ep, 1, iov, cookie(3), NULL,
						1, 0), DAT_INVALID_PARAMETER);
	ASSERT_DAT(dat_ib_post_rdma_write_immed(c.ep, 1, iov, cookie(3), &rem,
						1,
						DAT_COMPLETION_UNSIGNALLED_FLAG),
		   DAT_INVALID_PARAMETER);
	ASSERT_DAT(dat_ib_post_rdma_write_immed(c.pz, 1, iov, cookie(3), &rem,
						1, 0), DAT_INVALID_HANDLE);
	iov[0] = seg(&lb, tlen - 8, 16);	/* past the LMR */
	ASSERT_DAT(dat_ib_post_rdma_write_immed(c.ep, 1, iov, cookie(3), &rem,
						1, 0), DAT_INVALID_PARAMETER);
	OK(side_open(&u, NULL));
	iov[0] = seg(&lb, 0, 16);
	ASSERT_DAT(dat_ib_post_rdma_write_immed(u.ep, 0, NULL, cookie(3), NULL,
						1, 0), DAT_INVALID_STATE);
	free(want);
	OK(sides_close(&u, &c));
	OK(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
}

/* The LMR privileges of an atomic's target (dtestx's). */
#define ATOMIC_PRIV ((DAT_MEM_PRIV_FLAGS)(DAT_MEM_PRIV_ALL_FLAG | \
					  DAT_IB_MEM_PRIV_REMOTE_ATOMIC))

/* One atomic of @c on @t (in @tb), the value found into @res (in @lb). */
static void atomic_one(struct __test_metadata *_metadata, struct side *c,
		       struct buf *lb, uint64_t *res, DAT_RMR_CONTEXT rctx,
		       volatile uint64_t *t, bool cas, uint64_t before,
		       uint64_t a, uint64_t b, uint64_t after,
		       DAT_COMPLETION_FLAGS flags, uint64_t ck)
{
	DAT_LMR_TRIPLET l = seg(lb, (unsigned char *)res - lb->p, 8);
	DAT_RMR_TRIPLET rem = {
		.rmr_context = rctx,
		.virtual_address = (uintptr_t)t,
		.segment_length = 8,
	};

	*t = before;
	*res = 0xa5a5a5a5a5a5a5a5ULL;
	if (cas)
		OK(dat_ib_post_cmp_and_swap(c->ep, a, b, &l, cookie(ck), &rem,
					    flags));
	else
		OK(dat_ib_post_fetch_and_add(c->ep, a, &l, cookie(ck), &rem,
					     flags));
	if (flags & DAT_COMPLETION_SUPPRESS_FLAG)
		return;	/* checked by the next one */
	expect_ext(_metadata, c->dto_evd,
		   cas ? DAT_IB_CMP_AND_SWAP : DAT_IB_FETCH_AND_ADD,
		   cas ? DAT_IB_DTO_CMP_SWAP : DAT_IB_DTO_FETCH_ADD, ck,
		   DAT_DTO_SUCCESS, 8, NULL);
	ASSERT_FALSE(*res != before || *t != after)
		TH_LOG("%s(%#llx, %#llx) on %#llx: found %#llx, left %#llx; "
		       "want %#llx", cas ? "cmp_swap" : "fetch_add",
		       (unsigned long long)a, (unsigned long long)b,
		       (unsigned long long)before,
		       (unsigned long long)*res, (unsigned long long)*t,
		       (unsigned long long)after);
}

/* A connected pair for atomics, or a skip where the device has none. */
static void atomic_pair(struct __test_metadata *_metadata, struct side *c,
			struct side *s, struct buf *lb, struct buf *tb,
			DAT_MEM_PRIV_FLAGS tpriv)
{
	OK(side_open(c, NULL));
	OK(side_open(s, NULL));
	if (!ia_atomics(_metadata, c->ia)) {
		DAT_LMR_TRIPLET l;
		DAT_RMR_TRIPLET rem = { 0 };

		OK(buf_reg(c, lb, 4096, DAT_MEM_PRIV_ALL_FLAG));
		l = seg(lb, 0, 8);
		ASSERT_DAT(dat_ib_post_fetch_and_add(c->ep, 1, &l, cookie(1),
						     &rem, 0),
			   DAT_MODEL_NOT_SUPPORTED);
		KDAT_SKIP("the device has no atomics (DAT_MODEL_NOT_SUPPORTED "
			  "checked)");
	}
	OK(buf_reg(c, lb, 4096, DAT_MEM_PRIV_ALL_FLAG));
	OK(buf_reg(s, tb, 4096, tpriv));
	OK(connect_pair(c, s, false));
}

/*
 * Compare-and-swap and fetch-and-add with exact values found and left:
 * equal and not, wrapping modulo 2^64, through an LMR's context and an
 * RMR bound with DAT_IB_MEM_PRIV_REMOTE_ATOMIC, a suppressed one.
 */
TEST_F(kdat, test_atomics)
{
	struct side c, s;
	struct buf lb, tb;
	volatile uint64_t *t;
	uint64_t *res;
	DAT_RMR_HANDLE rmr;
	DAT_RMR_CONTEXT rctx;
	DAT_RMR_COOKIE rck = { .as_64 = 5 };
	DAT_LMR_TRIPLET range;
	DAT_EVENT ev;

	atomic_pair(_metadata, &c, &s, &lb, &tb, ATOMIC_PRIV);
	t = (volatile uint64_t *)(tb.p + 64);
	res = (uint64_t *)(lb.p + 16);
	/* dtestx's values, then the edges. */
	atomic_one(_metadata, &c, &lb, res, tb.rctx, t, true, 0x12345, 0x12345,
		   0x98765, 0x98765, 0, 1);
	atomic_one(_metadata, &c, &lb, res, tb.rctx, t, true, 0x54321, 0x654321,
		   0x6789a, 0x54321, 0, 2);
	atomic_one(_metadata, &c, &lb, res, tb.rctx, t, false, 0x10, 0x100, 0,
		   0x110, 0, 3);
	atomic_one(_metadata, &c, &lb, res, tb.rctx, t, false, UINT64_MAX, 2, 0,
		   1, 0, 4);
	atomic_one(_metadata, &c, &lb, res, tb.rctx, t, false, 1ULL << 63,
		   1ULL << 63, 0, 0, 0, 5);
	atomic_one(_metadata, &c, &lb, res, tb.rctx, t, true, 0, 0, UINT64_MAX,
		   UINT64_MAX, 0, 6);
	atomic_one(_metadata, &c, &lb, res, tb.rctx, t, true, UINT64_MAX,
		   UINT64_MAX - 1, 0, UINT64_MAX, 0, 7);
	/* The 8 bytes around it are not touched. */
	ASSERT_TRUE(tb.p[63] == 0 && tb.p[72] == 0);
	/* The target side hears nothing of them. */
	ASSERT_DAT(dat_evd_dequeue(s.dto_evd, &ev), DAT_QUEUE_EMPTY);

	/* Suppressed: no event; the next one sees what it left. */
	atomic_one(_metadata, &c, &lb, res, tb.rctx, t, false, 40, 2, 0, 0,
		   DAT_COMPLETION_SUPPRESS_FLAG, 8);
	*res = 0;
	{
		DAT_LMR_TRIPLET l = seg(&lb, 16, 8);
		DAT_RMR_TRIPLET rem = {
			.rmr_context = tb.rctx,
			.virtual_address = (uintptr_t)t,
			.segment_length = 8,
		};

		OK(dat_ib_post_fetch_and_add(c.ep, 3, &l, cookie(9), &rem, 0));
		expect_ext(_metadata, c.dto_evd, DAT_IB_FETCH_AND_ADD,
			   DAT_IB_DTO_FETCH_ADD, 9, DAT_DTO_SUCCESS, 8, NULL);
		ASSERT_EQ(42, *res);
		ASSERT_EQ(45, *t);
	}

	/* Through an RMR bound with the remote atomic privilege. */
	OK(dat_rmr_create(s.pz, &rmr));
	range = seg(&tb, 1024, 64);
	OK(dat_rmr_bind(rmr, tb.lmr, &range,
			(DAT_MEM_PRIV_FLAGS)DAT_IB_MEM_PRIV_REMOTE_ATOMIC,
			DAT_VA_TYPE_VA, s.ep, rck, 0, &rctx));
	OK(wait_event(s.dto_evd, &ev));
	ASSERT_TRUE(ev.event_number == DAT_RMR_BIND_COMPLETION_EVENT);
	ASSERT_TRUE(ev.event_data.rmr_completion_event_data.status ==
		    DAT_RMR_BIND_SUCCESS);
	t = (volatile uint64_t *)(tb.p + 1024 + 56);
	atomic_one(_metadata, &c, &lb, res, rctx, t, true, 7, 7, 8, 8, 0, 10);
	atomic_one(_metadata, &c, &lb, res, rctx, t, false, 8, 0xff, 0, 0x107,
		   0, 11);
	OK(sides_close(&c, &s));
}

/* Atomic arguments refused at once, nothing posted. */
TEST_F(kdat, test_atomic_arg_errors)
{
	struct side c, s, u;
	struct buf lb, tb, ro, ub;
	DAT_LMR_TRIPLET l;
	DAT_RMR_TRIPLET rem;
	uint64_t *res;
	volatile uint64_t *t;

	atomic_pair(_metadata, &c, &s, &lb, &tb, ATOMIC_PRIV);
	OK(buf_reg(&c, &ro, 4096, DAT_MEM_PRIV_LOCAL_READ_FLAG));
	t = (volatile uint64_t *)(tb.p + 128);
	rem.rmr_context = tb.rctx;
	rem.segment_length = 8;
	l = seg(&lb, 0, 8);
	/* The remote address: 8-byte aligned. */
	rem.virtual_address = (uintptr_t)t + 4;
	ASSERT_DAT(dat_ib_post_fetch_and_add(c.ep, 1, &l, cookie(1), &rem, 0),
		   DAT_INVALID_PARAMETER);
	rem.virtual_address = (uintptr_t)t + 1;
	ASSERT_DAT(dat_ib_post_cmp_and_swap(c.ep, 1, 2, &l, cookie(1), &rem,
					    0), DAT_INVALID_PARAMETER);
	rem.virtual_address = (uintptr_t)t;
	/* The local segment: exactly 8 bytes, one, with local write. */
	l = seg(&lb, 0, 4);
	ASSERT_DAT(dat_ib_post_fetch_and_add(c.ep, 1, &l, cookie(1), &rem, 0),
		   DAT_INVALID_PARAMETER);
	l = seg(&lb, 0, 16);
	ASSERT_DAT(dat_ib_post_cmp_and_swap(c.ep, 1, 2, &l, cookie(1), &rem,
					    0), DAT_INVALID_PARAMETER);
	l = seg(&lb, 0, 0);
	ASSERT_DAT(dat_ib_post_fetch_and_add(c.ep, 1, &l, cookie(1), &rem, 0),
		   DAT_INVALID_PARAMETER);
	l = seg(&ro, 0, 8);
	ASSERT_DAT(dat_ib_post_fetch_and_add(c.ep, 1, &l, cookie(1), &rem, 0),
		   DAT_PRIVILEGES_VIOLATION);
	l = seg(&tb, 0, 8);	/* the peer's LMR: another PZ */
	ASSERT_DAT(dat_ib_post_fetch_and_add(c.ep, 1, &l, cookie(1), &rem, 0),
		   DAT_PROTECTION_VIOLATION);
	l = seg(&lb, 4096 - 4, 8);
	ASSERT_DAT(dat_ib_post_fetch_and_add(c.ep, 1, &l, cookie(1), &rem, 0),
		   DAT_INVALID_PARAMETER);
	l = seg(&lb, 0, 8);
	ASSERT_DAT(dat_ib_post_fetch_and_add(c.ep, 1, NULL, cookie(1), &rem,
					     0), DAT_INVALID_PARAMETER);
	ASSERT_DAT(dat_ib_post_fetch_and_add(c.ep, 1, &l, cookie(1), NULL, 0),
		   DAT_INVALID_PARAMETER);
	ASSERT_DAT(dat_ib_post_fetch_and_add(c.ep, 1, &l, cookie(1), &rem,
					     DAT_COMPLETION_SOLICITED_WAIT_FLAG),
		   DAT_INVALID_PARAMETER);
	ASSERT_DAT(dat_ib_post_fetch_and_add(s.psp, 1, &l, cookie(1), &rem, 0),
		   DAT_INVALID_HANDLE);
	/* An EP not connected (its own LMR: the state is what is wrong). */
	OK(side_open(&u, NULL));
	OK(buf_reg(&u, &ub, 4096, DAT_MEM_PRIV_ALL_FLAG));
	l = seg(&ub, 0, 8);
	ASSERT_DAT(dat_ib_post_fetch_and_add(u.ep, 1, &l, cookie(1), &rem, 0),
		   DAT_INVALID_STATE);
	/* Nothing was posted: the next one is the next event, exact. */
	res = (uint64_t *)lb.p;
	atomic_one(_metadata, &c, &lb, res, tb.rctx, t, false, 100, 1, 0, 101,
		   0, 2);
	OK(sides_close(&u, &c));
	OK(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
}

/*
 * An atomic on memory the peer did not open to atomics (an LMR with
 * every privilege but that, an RMR bound for read and write) completes
 * with DAT_DTO_ERR_REMOTE_ACCESS; the memory is left as it was.
 */
TEST_F(kdat, test_atomic_no_privilege)
{
	int rmr_bound;

	for (rmr_bound = 0; rmr_bound < 2; rmr_bound++) {
		struct side c, s;
		struct buf lb, tb;
		DAT_LMR_TRIPLET l, range;
		DAT_RMR_TRIPLET rem;
		DAT_RMR_CONTEXT rctx;
		DAT_RMR_HANDLE rmr;
		DAT_RMR_COOKIE rck = { .as_64 = 1 };
		volatile uint64_t *t;
		DAT_EVENT ev;

		atomic_pair(_metadata, &c, &s, &lb, &tb, DAT_MEM_PRIV_ALL_FLAG);
		t = (volatile uint64_t *)(tb.p + 256);
		*t = 77;
		rctx = tb.rctx;
		if (rmr_bound) {
			OK(dat_rmr_create(s.pz, &rmr));
			range = seg(&tb, 0, 512);
			OK(dat_rmr_bind(rmr, tb.lmr, &range,
					DAT_MEM_PRIV_REMOTE_READ_FLAG |
					DAT_MEM_PRIV_REMOTE_WRITE_FLAG,
					DAT_VA_TYPE_VA, s.ep, rck, 0, &rctx));
			OK(wait_event(s.dto_evd, &ev));
			ASSERT_TRUE(ev.event_data.rmr_completion_event_data.
				    status == DAT_RMR_BIND_SUCCESS);
		}
		TH_LOG("%s", rmr_bound ? "RMR bound for read and write" :
		       "LMR with every privilege but remote atomic");
		l = seg(&lb, 0, 8);
		rem.rmr_context = rctx;
		rem.virtual_address = (uintptr_t)t;
		rem.segment_length = 8;
		OK(dat_ib_post_cmp_and_swap(c.ep, 77, 5, &l, cookie(30), &rem,
					    0));
		expect_ext(_metadata, c.dto_evd, DAT_IB_CMP_AND_SWAP,
			   DAT_IB_DTO_CMP_SWAP, 30, DAT_DTO_ERR_REMOTE_ACCESS,
			   -1, NULL);
		ASSERT_EQ(77, *t);
		OK(sides_close(&c, &s));
	}
}

/* Every counter 0 but those of @want (index, value), exactly. */
static void counters_are(struct __test_metadata *_metadata, const char *what,
			 DAT_HANDLE h, int all, const int (*want)[2], int nwant)
{
	DAT_UINT64 out[DCNT_IA_ALL_COUNTERS];
	int i, k;

	counters(_metadata, h, all, out);
	for (i = 0; i < all; i++) {
		uint64_t w = 0;

		/* How many waits slept depends on timing: test_wait_spin. */
		if (all == DCNT_EVD_ALL_COUNTERS &&
		    i == DCNT_EVD_WAIT_BLOCKED) {
			ASSERT_FALSE(out[i] > out[DCNT_EVD_WAIT])
				TH_LOG("%s: %llu waits blocked of %llu",
				       what, (unsigned long long)out[i],
				       (unsigned long long)out[DCNT_EVD_WAIT]);
			continue;
		}

		for (k = 0; k < nwant; k++)
			if (want[k][0] == i)
				w = (uint64_t)want[k][1];
		ASSERT_FALSE(out[i] != w)
			TH_LOG("%s counter %d: %llu, want %llu", what, i,
			       (unsigned long long)out[i],
			       (unsigned long long)w);
	}
}

#define NW(a) (int)(sizeof(a) / sizeof((a)[0]))

/* dat_ib_print_counters' lines for counter @cntr of @h, in @buf. */
static int print_lines(struct __test_metadata *_metadata, DAT_HANDLE h,
		       int cntr, int reset, char *buf, size_t len)
{
	FILE *f = tmpfile();
	int saved, n = 0;
	size_t got;
	char *p;

	ASSERT_NE(NULL, f);
	fflush(stdout);
	saved = dup(1);
	ASSERT_TRUE(saved >= 0 && dup2(fileno(f), 1) == 1);
	OK(dat_ib_print_counters(h, cntr, reset));
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	rewind(f);
	got = fread(buf, 1, len - 1, f);
	buf[got] = 0;
	fclose(f);
	for (p = buf; (p = strchr(p, '\n')); p++)
		n++;
	return n;
}

/*
 * The counters libdat keeps, exactly, after a known run: the IA's
 * objects, the EPs' DTOs posted and receives reaped with their bytes,
 * the EVDs' waits and dequeues; reset; one counter alone; print.
 */
TEST_F(kdat, test_ext_counters)
{
	struct side c, s;
	struct buf cb, sb;
	DAT_LMR_TRIPLET t, r;
	DAT_RMR_TRIPLET rem;
	DAT_UINT64 out[DCNT_IA_ALL_COUNTERS];
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL q;
	DAT_EVD_HANDLE evd;
	DAT_EVENT ev;
	char text[8192], line[128];
	bool atomics, imm;
	int i, a, im;

	OK(side_open(&c, NULL));
	OK(side_open(&s, NULL));
	atomics = ia_atomics(_metadata, c.ia);
	a = atomics ? 1 : 0;
	/* A receive for the write with immediate data, where there is one. */
	imm = ia_has(_metadata, c.ia, DAT_IB_ATTR_IMMED_DATA);
	im = imm ? 1 : 0;
	OK(buf_reg(&c, &cb, 8192, ATOMIC_PRIV));
	OK(buf_reg(&s, &sb, 16384, ATOMIC_PRIV));
	OK(connect_pair(&c, &s, false));
	for (i = 0; i < 2 + im; i++) {
		r = seg(&sb, 4096 * i, 4096);
		OK(dat_ep_post_recv(s.ep, 1, &r, cookie(10 + i), 0));
	}
	t = seg(&cb, 0, 100);
	OK(dat_ep_post_send(c.ep, 1, &t, cookie(20), 0));
	expect_dto(_metadata, c.dto_evd, 20, DAT_DTO_SUCCESS, 100);
	expect_dto(_metadata, s.dto_evd, 10, DAT_DTO_SUCCESS, 100);
	t = seg(&cb, 0, 200);
	OK(dat_ep_post_send(c.ep, 1, &t, cookie(21), 0));
	expect_dto(_metadata, c.dto_evd, 21, DAT_DTO_SUCCESS, 200);
	expect_dto(_metadata, s.dto_evd, 11, DAT_DTO_SUCCESS, 200);
	rem.rmr_context = sb.rctx;
	rem.virtual_address = (uintptr_t)sb.p + 12288;
	rem.segment_length = 300;
	t = seg(&cb, 0, 300);
	OK(dat_ep_post_rdma_write(c.ep, 1, &t, cookie(22), &rem, 0));
	expect_dto(_metadata, c.dto_evd, 22, DAT_DTO_SUCCESS, 300);
	rem.segment_length = 50;
	t = seg(&cb, 1000, 50);
	OK(dat_ep_post_rdma_read(c.ep, 1, &t, cookie(23), &rem, 0));
	expect_dto(_metadata, c.dto_evd, 23, DAT_DTO_SUCCESS, 50);
	t = seg(&cb, 2000, 64);
	if (imm) {
		OK(dat_ib_post_rdma_write_immed(c.ep, 1, &t, cookie(24), &rem,
						9, 0));
		expect_ext(_metadata, c.dto_evd, DAT_IB_RDMA_WRITE_IMMED,
			   DAT_IB_DTO_RDMA_WRITE_IMMED, 24, DAT_DTO_SUCCESS, 64,
			   NULL);
		expect_ext(_metadata, s.dto_evd, DAT_IB_RDMA_WRITE_IMMED_DATA,
			   DAT_IB_DTO_RECV_IMMED, 12, DAT_DTO_SUCCESS, 64,
			   NULL);
	} else {
		ASSERT_DAT(dat_ib_post_rdma_write_immed(c.ep, 1, &t, cookie(24),
							&rem, 9, 0),
			   DAT_MODEL_NOT_SUPPORTED);
	}
	if (atomics) {
		t = seg(&cb, 4096, 8);
		rem.virtual_address = (uintptr_t)sb.p + 12288 + 512;
		OK(dat_ib_post_cmp_and_swap(c.ep, 0, 1, &t, cookie(25), &rem,
					    0));
		expect_ext(_metadata, c.dto_evd, DAT_IB_CMP_AND_SWAP,
			   DAT_IB_DTO_CMP_SWAP, 25, DAT_DTO_SUCCESS, 8, NULL);
		OK(dat_ib_post_fetch_and_add(c.ep, 1, &t, cookie(26), &rem,
					     0));
		expect_ext(_metadata, c.dto_evd, DAT_IB_FETCH_AND_ADD,
			   DAT_IB_DTO_FETCH_ADD, 26, DAT_DTO_SUCCESS, 8, NULL);
	}
	ASSERT_DAT(dat_evd_dequeue(c.dto_evd, &ev), DAT_QUEUE_EMPTY);
	/* Refused posts count nothing. */
	t = seg(&cb, 8190, 100);
	ASSERT_DAT(dat_ep_post_send(c.ep, 1, &t, cookie(27), 0),
		   DAT_INVALID_PARAMETER);

	{
		const int cep[][2] = {
			{ DCNT_EP_CONNECT, 1 },
			{ DCNT_EP_POST_SEND, 2 }, { DCNT_EP_POST_SEND_DATA, 300 },
			{ DCNT_EP_POST_WRITE, 1 },
			{ DCNT_EP_POST_WRITE_DATA, 300 },
			{ DCNT_EP_POST_WRITE_IMM, im },
			{ DCNT_EP_POST_WRITE_IMM_DATA, 64 * im },
			{ DCNT_EP_POST_READ, 1 }, { DCNT_EP_POST_READ_DATA, 50 },
			{ DCNT_EP_POST_CMP_SWAP, a },
			{ DCNT_EP_POST_FETCH_ADD, a },
		};
		const int sep[][2] = {
			{ DCNT_EP_POST_RECV, 2 + im },
			{ DCNT_EP_POST_RECV_DATA, (2 + im) * 4096 },
			{ DCNT_EP_RECV, 2 }, { DCNT_EP_RECV_DATA, 300 },
			{ DCNT_EP_RECV_RDMA_IMM, im },
			{ DCNT_EP_RECV_RDMA_IMM_DATA, 64 * im },
		};
		/* Async EVD, DTO, connection and CR EVDs: 4. */
		const int cia[][2] = {
			{ DCNT_IA_PZ_CREATE, 1 }, { DCNT_IA_LMR_CREATE, 1 },
			{ DCNT_IA_EVD_CREATE, 4 }, { DCNT_IA_EP_CREATE, 1 },
		};
		const int sia[][2] = {
			{ DCNT_IA_PZ_CREATE, 1 }, { DCNT_IA_LMR_CREATE, 1 },
			{ DCNT_IA_EVD_CREATE, 4 }, { DCNT_IA_EP_CREATE, 1 },
			{ DCNT_IA_PSP_CREATE, 1 }, { DCNT_IA_SP_CR, 1 },
			{ DCNT_IA_SP_CR_ACCEPTED, 1 },
		};
		/* One wait per completion the run waited for. */
		const int cevd[][2] = {
			{ DCNT_EVD_WAIT, 4 + im + 2 * a },
			{ DCNT_EVD_DEQUEUE, 1 },
			{ DCNT_EVD_DEQUEUE_NOT_FOUND, 1 },
		};
		const int sevd[][2] = { { DCNT_EVD_WAIT, 2 + im } };
		const int one_wait[][2] = { { DCNT_EVD_WAIT, 1 } };

		counters_are(_metadata, "client EP", c.ep, DCNT_EP_ALL_COUNTERS,
			     cep, NW(cep));
		counters_are(_metadata, "server EP", s.ep, DCNT_EP_ALL_COUNTERS,
			     sep, NW(sep));
		counters_are(_metadata, "client IA", c.ia, DCNT_IA_ALL_COUNTERS,
			     cia, NW(cia));
		counters_are(_metadata, "server IA", s.ia, DCNT_IA_ALL_COUNTERS,
			     sia, NW(sia));
		counters_are(_metadata, "client DTO EVD", c.dto_evd,
			     DCNT_EVD_ALL_COUNTERS, cevd, NW(cevd));
		counters_are(_metadata, "server DTO EVD", s.dto_evd,
			     DCNT_EVD_ALL_COUNTERS, sevd, NW(sevd));
		counters_are(_metadata, "client connection EVD", c.conn_evd,
			     DCNT_EVD_ALL_COUNTERS, one_wait, NW(one_wait));
		counters_are(_metadata, "server CR EVD", s.cr_evd,
			     DCNT_EVD_ALL_COUNTERS, one_wait, NW(one_wait));

		/* Print: one line per counter, the values above. */
		ASSERT_EQ(DCNT_EP_ALL_COUNTERS,
			  print_lines(_metadata, c.ep, DCNT_EP_ALL_COUNTERS, 0,
				      text, sizeof(text)));
		snprintf(line, sizeof(line), ": DCNT_EP_POST_SEND_DATA = 300\n");
		ASSERT_NE(NULL, strstr(text, line));
		snprintf(line, sizeof(line), ": DCNT_EP_POST_WRITE_IMM = %d\n",
			 im);
		ASSERT_NE(NULL, strstr(text, line));
		ASSERT_EQ(1,
			  print_lines(_metadata, s.ep,
				      DCNT_EP_RECV_RDMA_IMM_DATA, 0, text,
				      sizeof(text)));
		snprintf(line, sizeof(line),
			 ": DCNT_EP_RECV_RDMA_IMM_DATA = %d\n", 64 * im);
		ASSERT_NE(NULL, strstr(text, line));
		ASSERT_EQ(DCNT_IA_ALL_COUNTERS,
			  print_lines(_metadata, s.ia, DCNT_IA_ALL_COUNTERS, 0,
				      text, sizeof(text)));
		ASSERT_NE(NULL, strstr(text, ": DCNT_IA_SP_CR_ACCEPTED = 1\n"));

		/* Reset: the values once more, then zeroes. */
		memset(out, 0xAA, sizeof(out));
		OK(dat_ib_query_counters(c.ep, DCNT_EP_ALL_COUNTERS, out, 1));
		ASSERT_EQ(300, out[DCNT_EP_POST_SEND_DATA]);
		ASSERT_EQ(1, out[DCNT_EP_POST_READ]);
		counters_are(_metadata, "client EP after reset", c.ep,
			     DCNT_EP_ALL_COUNTERS, NULL, 0);
		/* Print with reset resets too. */
		print_lines(_metadata, s.ep, DCNT_EP_ALL_COUNTERS, 1, text,
			    sizeof(text));
		counters_are(_metadata, "server EP after reset", s.ep,
			     DCNT_EP_ALL_COUNTERS, NULL, 0);
	}

	/* One counter: out[counter] alone is written, as OFA does. */
	r = seg(&sb, 0, 4096);
	OK(dat_ep_post_recv(s.ep, 1, &r, cookie(40), 0));
	t = seg(&cb, 0, 10);
	OK(dat_ep_post_send(c.ep, 1, &t, cookie(41), 0));
	expect_dto(_metadata, c.dto_evd, 41, DAT_DTO_SUCCESS, 10);
	memset(out, 0xAA, sizeof(out));
	OK(dat_ib_query_counters(c.ep, DCNT_EP_POST_SEND_DATA, out, 0));
	ASSERT_EQ(10, out[DCNT_EP_POST_SEND_DATA]);
	ASSERT_TRUE(out[DCNT_EP_POST_SEND] == 0xAAAAAAAAAAAAAAAAULL);
	ASSERT_TRUE(out[DCNT_EP_POST_SEND_DATA + 1] == 0xAAAAAAAAAAAAAAAAULL);
	OK(dat_ib_query_counters(c.ep, DCNT_EP_POST_SEND, out, 1));
	ASSERT_EQ(1, out[DCNT_EP_POST_SEND]);
	OK(dat_ib_query_counters(c.ep, DCNT_EP_POST_SEND, out, 0));
	ASSERT_EQ(0, out[DCNT_EP_POST_SEND]);
	OK(dat_ib_query_counters(c.ep, DCNT_EP_POST_SEND_DATA, out, 0));
	ASSERT_EQ(10, out[DCNT_EP_POST_SEND_DATA]);	/* not reset */
	expect_dto(_metadata, s.dto_evd, 40, DAT_DTO_SUCCESS, 10);
	OK(dat_ib_query_counters(s.ep, DCNT_EP_RECV_DATA, out, 0));
	ASSERT_EQ(10, out[DCNT_EP_RECV_DATA]);

	/* The IA's frees and the other creates. */
	OK(dat_lmr_free(cb.lmr));
	OK(dat_evd_create(c.ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &evd));
	OK(dat_psp_create_any(c.ia, &q, evd, DAT_PSP_CONSUMER_FLAG, &psp));
	OK(dat_psp_free(psp));
	OK(dat_evd_free(evd));
	{
		const int cia[][2] = {
			{ DCNT_IA_PZ_CREATE, 1 }, { DCNT_IA_LMR_CREATE, 1 },
			{ DCNT_IA_LMR_FREE, 1 },
			{ DCNT_IA_EVD_CREATE, 5 }, { DCNT_IA_EVD_FREE, 1 },
			{ DCNT_IA_EP_CREATE, 1 },
			{ DCNT_IA_PSP_CREATE, 1 }, { DCNT_IA_PSP_CREATE_ANY, 1 },
			{ DCNT_IA_PSP_FREE, 1 },
		};

		counters_are(_metadata, "client IA after frees", c.ia,
			     DCNT_IA_ALL_COUNTERS, cia, NW(cia));
	}
	OK(dat_ep_disconnect(c.ep, DAT_CLOSE_ABRUPT_FLAG));
	OK(dat_ib_query_counters(c.ep, DCNT_EP_DISCONNECT, out, 0));
	ASSERT_EQ(1, out[DCNT_EP_DISCONNECT]);

	/* Arguments. */
	ASSERT_DAT(dat_ib_query_counters(c.ep, DCNT_EP_ALL_COUNTERS + 1, out,
					 0), DAT_INVALID_PARAMETER);
	ASSERT_DAT(dat_ib_query_counters(c.ep, -1, out, 0),
		   DAT_INVALID_PARAMETER);
	ASSERT_DAT(dat_ib_query_counters(c.ep, DCNT_EP_ALL_COUNTERS, NULL, 0),
		   DAT_INVALID_PARAMETER);
	ASSERT_DAT(dat_ib_query_counters(c.pz, DCNT_IA_ALL_COUNTERS, out, 0),
		   DAT_INVALID_HANDLE);
	ASSERT_DAT(dat_ib_print_counters(c.pz, 0, 0), DAT_INVALID_HANDLE);
	OK(sides_close(&c, &s));
}
