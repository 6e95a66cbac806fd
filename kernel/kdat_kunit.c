// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suites for kdat's logic that needs no device: ring index
 * arithmetic, the IOV-against-LMR check, the DTO slot allocator, the
 * Endpoint state table, completion flags, IOV fill order, the DAT status
 * mapping, the handle table, the qualifier and reject formats shared
 * with OFA DAPL, and the UD header of SIDR messages. Built into kdat.ko when the kernel has
 * CONFIG_KUNIT (the debug kernel); they run when the module loads.
 *
 * The expectations are written from the DAT man pages, in a different form
 * from the code they test (rules here, a table there), so that one cannot
 * simply restate the other.
 */
#include <kunit/test.h>

#include "kdat.h"

/* ---- ring index arithmetic ------------------------------------------- */

struct span_case {
	const char *name;
	u32 head, tail, entries, want;
};

static const struct span_case span_cases[] = {
	{ "empty", 0, 0, 16, 0 },
	{ "one", 0, 1, 16, 1 },
	{ "full", 0, 16, 16, 16 },
	{ "one past full", 0, 17, 16, KDAT_RING_INSANE },
	{ "far past", 5, 5 + 1000, 16, KDAT_RING_INSANE },
	{ "tail behind head", 10, 9, 16, KDAT_RING_INSANE },
	{ "wrap: full across 2^32", U32_MAX - 7, 8, 16, 16 },
	{ "wrap: one across 2^32", U32_MAX, 0, 16, 1 },
	{ "wrap: behind across 2^32", 0, U32_MAX, 16, KDAT_RING_INSANE },
	{ "large ring", 0, 65536, 65536, 65536 },
	/* An EVD of 65536 events: a ring of 131072, across 2^32. */
	{ "largest ring, full", U32_MAX - 65535, 65536, 131072, 131072 },
	{ "largest ring, one past", U32_MAX - 65535, 65537, 131072,
	  KDAT_RING_INSANE },
};

static void span_desc(const struct span_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(span, span_cases, span_desc);

static void kdat_test_ring_span(struct kunit *test)
{
	const struct span_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, kdat_ring_span(c->head, c->tail, c->entries),
			c->want);
}

/* ---- an IOV segment against its LMR --------------------------------- */

struct seg_case {
	const char *name;
	u32 lmr_priv;
	bool same_pz;
	u32 need;
	u64 va, len;
	int want;
};

#define LMR_ADDR 0x10000ULL
#define LMR_LEN 0x1000ULL

static const struct seg_case seg_cases[] = {
	{ "inside", KDAT_MEM_PRIV_LOCAL_READ, true,
	  KDAT_MEM_PRIV_LOCAL_READ, LMR_ADDR, 64, 0 },
	{ "whole", KDAT_MEM_PRIV_LOCAL_READ, true,
	  KDAT_MEM_PRIV_LOCAL_READ, LMR_ADDR, LMR_LEN, 0 },
	{ "zero length at the end", KDAT_MEM_PRIV_LOCAL_READ, true,
	  KDAT_MEM_PRIV_LOCAL_READ, LMR_ADDR + LMR_LEN, 0, 0 },
	{ "one byte past the end", KDAT_MEM_PRIV_LOCAL_READ, true,
	  KDAT_MEM_PRIV_LOCAL_READ, LMR_ADDR + 1, LMR_LEN, -EINVAL },
	{ "before the start", KDAT_MEM_PRIV_LOCAL_READ, true,
	  KDAT_MEM_PRIV_LOCAL_READ, LMR_ADDR - 1, 8, -EINVAL },
	{ "length overflows", KDAT_MEM_PRIV_LOCAL_READ, true,
	  KDAT_MEM_PRIV_LOCAL_READ, LMR_ADDR, U64_MAX, -EINVAL },
	{ "write needed, read only", KDAT_MEM_PRIV_LOCAL_READ, true,
	  KDAT_MEM_PRIV_LOCAL_WRITE, LMR_ADDR, 8, -EACCES },
	{ "remote write missing", KDAT_MEM_PRIV_LOCAL_READ |
	  KDAT_MEM_PRIV_LOCAL_WRITE, true, KDAT_MEM_PRIV_REMOTE_WRITE,
	  LMR_ADDR, 8, -EACCES },
	{ "another PZ", KDAT_MEM_PRIV_ALL, false,
	  KDAT_MEM_PRIV_LOCAL_READ, LMR_ADDR, 8, -EPERM },
	{ "privilege checked before PZ", KDAT_MEM_PRIV_LOCAL_READ, false,
	  KDAT_MEM_PRIV_LOCAL_WRITE, LMR_ADDR, 8, -EACCES },
	{ "PZ checked before bounds", KDAT_MEM_PRIV_ALL, false,
	  KDAT_MEM_PRIV_LOCAL_READ, 0, 8, -EPERM },
};

static void seg_desc(const struct seg_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(seg, seg_cases, seg_desc);

static void kdat_test_check_segment(struct kunit *test)
{
	const struct seg_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, kdat_rule_segment(c->lmr_priv, c->same_pz,
						LMR_ADDR, LMR_LEN, c->need,
						c->va, c->len),
			c->want);
}

/* ---- DTO slots --------------------------------------------------------- */

static void kdat_test_slots(struct kunit *test)
{
	struct kdat_dto_ctx *got[8];
	struct kdat_slots s;
	spinlock_t lock;
	int i;

	spin_lock_init(&lock);
	KUNIT_ASSERT_EQ(test, kdat_slots_init(&s, 4, NULL, NULL), 0);
	for (i = 0; i < 4; i++) {
		got[i] = kdat_slot_get(&s);
		KUNIT_ASSERT_NOT_NULL(test, got[i]);
	}
	KUNIT_EXPECT_NULL(test, kdat_slot_get(&s));
	KUNIT_EXPECT_EQ(test, s.posted, 4U);
	/* Growing keeps the slots in use where they are. */
	KUNIT_ASSERT_EQ(test, kdat_slots_grow(&s, 8, NULL, NULL, &lock), 0);
	for (i = 4; i < 8; i++) {
		got[i] = kdat_slot_get(&s);
		KUNIT_ASSERT_NOT_NULL(test, got[i]);
	}
	KUNIT_EXPECT_NULL(test, kdat_slot_get(&s));
	for (i = 0; i < 8; i++) {
		int j;

		for (j = 0; j < i; j++)
			KUNIT_EXPECT_PTR_NE(test, got[i], got[j]);
	}
	/* A lower limit holds, over the slots that exist. */
	for (i = 0; i < 8; i++)
		kdat_slot_put(&s, got[i]);
	KUNIT_EXPECT_EQ(test, s.posted, 0U);
	s.limit = 2;
	KUNIT_EXPECT_NOT_NULL(test, kdat_slot_get(&s));
	KUNIT_EXPECT_NOT_NULL(test, kdat_slot_get(&s));
	KUNIT_EXPECT_NULL(test, kdat_slot_get(&s));
	kdat_slots_fini(&s);
}

/* ---- the Endpoint state table --------------------------------------- */

static const char *const ep_state_names[] = {
	"UNCONNECTED", "RESERVED", "PASSIVE_CONNECTION_PENDING",
	"ACTIVE_CONNECTION_PENDING", "TENTATIVE_CONNECTION_PENDING",
	"CONNECTED", "DISCONNECT_PENDING", "DISCONNECTED",
	"COMPLETION_PENDING",
};

static const char *const ep_op_names[] = {
	[KDAT_EP_OP_POST_SEND] = "post_send",
	[KDAT_EP_OP_POST_RECV] = "post_recv",
	[KDAT_EP_OP_RMR_BIND] = "rmr_bind",
	[KDAT_EP_OP_CONNECT] = "connect",
	[KDAT_EP_OP_ACCEPT] = "accept",
	[KDAT_EP_OP_ACCEPT_RSP] = "accept (RSP)",
	[KDAT_EP_OP_RESERVE] = "RSP create",
	[KDAT_EP_OP_DISCONNECT] = "disconnect",
	[KDAT_EP_OP_RESET] = "reset",
	[KDAT_EP_OP_MODIFY] = "modify",
};

#define EP_NSTATES	ARRAY_SIZE(ep_state_names)
#define EP_NCASES	(EP_NSTATES * KDAT_EP_OP_COUNT)

/* The oracle: what the man pages (and kdat's documented choices) say. */
static enum kdat_ep_verdict ep_expected(u32 state, enum kdat_ep_op op)
{
	bool connected = state == KDAT_EP_STATE_CONNECTED;
	bool disconnected = state == KDAT_EP_STATE_DISCONNECTED;
	bool pending = state == KDAT_EP_STATE_ACTIVE_CONNECTION_PENDING ||
		       state == KDAT_EP_STATE_PASSIVE_CONNECTION_PENDING;

	switch (op) {
	case KDAT_EP_OP_POST_SEND:
	case KDAT_EP_OP_RMR_BIND:
		/*
		 * dat_ep_post_send(3DAT): "valid for the Endpoint in the
		 * DAT_EP_STATE_CONNECTED and DAT_EP_STATE_DISCONNECTED states
		 * ... in the DAT_EP_STATE_DISCONNECTED state, the posted Send
		 * is immediately flushed"; RDMA read/write and binds alike.
		 */
		if (connected)
			return KDAT_EP_DO;
		return disconnected ? KDAT_EP_FLUSH : KDAT_EP_REFUSE;
	case KDAT_EP_OP_POST_RECV:
		/*
		 * dat_ep_post_recv(3DAT): "valid for all states"; on a
		 * DISCONNECTED Endpoint "immediately flushed". kdat flushes
		 * once the local disconnect has begun too (the QP is in
		 * error then).
		 */
		if (disconnected || state == KDAT_EP_STATE_DISCONNECT_PENDING)
			return KDAT_EP_FLUSH;
		return KDAT_EP_DO;
	case KDAT_EP_OP_CONNECT:
		return state == KDAT_EP_STATE_UNCONNECTED || disconnected ?
			KDAT_EP_DO : KDAT_EP_REFUSE;
	case KDAT_EP_OP_ACCEPT:
	case KDAT_EP_OP_RESERVE:
		return state == KDAT_EP_STATE_UNCONNECTED ?
			KDAT_EP_DO : KDAT_EP_REFUSE;
	case KDAT_EP_OP_ACCEPT_RSP:
		return state == KDAT_EP_STATE_RESERVED ?
			KDAT_EP_DO : KDAT_EP_REFUSE;
	case KDAT_EP_OP_DISCONNECT:
		if (connected || pending)
			return KDAT_EP_DO;
		if (disconnected || state == KDAT_EP_STATE_DISCONNECT_PENDING)
			return KDAT_EP_NOP;
		return KDAT_EP_REFUSE;
	case KDAT_EP_OP_RESET:
		if (disconnected)
			return KDAT_EP_DO;
		return state == KDAT_EP_STATE_UNCONNECTED ?
			KDAT_EP_NOP : KDAT_EP_REFUSE;
	case KDAT_EP_OP_MODIFY:
		return state == KDAT_EP_STATE_UNCONNECTED ||
		       state == KDAT_EP_STATE_RESERVED ?
			KDAT_EP_DO : KDAT_EP_REFUSE;
	default:
		return KDAT_EP_REFUSE;
	}
}

/* One parameter per (state, operation): its index into this array. */
static const u8 ep_cases[EP_NCASES];

static const void *ep_gen_params(const void *prev, char *desc)
{
	const u8 *p = prev ? (const u8 *)prev + 1 : ep_cases;
	size_t i = p - ep_cases;

	if (i >= EP_NCASES)
		return NULL;
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s in %s",
		 ep_op_names[i % KDAT_EP_OP_COUNT],
		 ep_state_names[i / KDAT_EP_OP_COUNT]);
	return p;
}

static void kdat_test_ep_state(struct kunit *test)
{
	size_t i = (const u8 *)test->param_value - ep_cases;
	u32 state = i / KDAT_EP_OP_COUNT;
	enum kdat_ep_op op = i % KDAT_EP_OP_COUNT;

	KUNIT_EXPECT_EQ(test, kdat_ep_allowed(state, op),
			ep_expected(state, op));
}

static void kdat_test_ep_state_bounds(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, kdat_ep_allowed(EP_NSTATES, KDAT_EP_OP_POST_RECV),
			KDAT_EP_REFUSE);
	KUNIT_EXPECT_EQ(test, kdat_ep_allowed(U32_MAX, KDAT_EP_OP_RESET),
			KDAT_EP_REFUSE);
	KUNIT_EXPECT_EQ(test, kdat_ep_allowed(KDAT_EP_STATE_CONNECTED,
					      KDAT_EP_OP_COUNT),
			KDAT_EP_REFUSE);
}

/* ---- completion flags against the Endpoint's ------------------------- */

#define SUP	KDAT_COMPLETION_SUPPRESS
#define SOL	KDAT_COMPLETION_SOLICITED_WAIT
#define UNS	KDAT_COMPLETION_UNSIGNALLED
#define FEN	KDAT_COMPLETION_BARRIER_FENCE

struct flags_case {
	const char *name;
	u32 op, flags, ep_flags;
	int want;
};

static const struct flags_case flags_cases[] = {
	{ "send, default", KDAT_DTO_SEND, 0, 0, 0 },
	{ "send, suppress", KDAT_DTO_SEND, SUP, 0, 0 },
	{ "send, solicited", KDAT_DTO_SEND, SOL, 0, 0 },
	{ "send, fence", KDAT_DTO_SEND, FEN, 0, 0 },
	{ "send, all but unsignalled", KDAT_DTO_SEND, SUP | SOL | FEN, 0, 0 },
	{ "send, unsignalled, EP not configured", KDAT_DTO_SEND, UNS, 0,
	  -EINVAL },
	{ "send, unsignalled, EP configured", KDAT_DTO_SEND, UNS, UNS, 0 },
	{ "send, unknown bit", KDAT_DTO_SEND, 0x10, 0, -EINVAL },
	{ "RDMA write, solicited", KDAT_DTO_RDMA_WRITE, SOL, 0, -EINVAL },
	{ "RDMA write, suppress + fence", KDAT_DTO_RDMA_WRITE, SUP | FEN, 0,
	  0 },
	{ "RDMA read, solicited", KDAT_DTO_RDMA_READ, SOL, 0, -EINVAL },
	{ "RDMA read, unsignalled, EP configured", KDAT_DTO_RDMA_READ, UNS,
	  UNS, 0 },
	{ "recv, default", KDAT_DTO_RECEIVE, 0, 0, 0 },
	{ "recv, suppress", KDAT_DTO_RECEIVE, SUP, 0, -EINVAL },
	{ "recv, solicited", KDAT_DTO_RECEIVE, SOL, SOL, -EINVAL },
	{ "recv, fence", KDAT_DTO_RECEIVE, FEN, 0, -EINVAL },
	{ "recv, unsignalled, EP not configured", KDAT_DTO_RECEIVE, UNS, 0,
	  -EINVAL },
	{ "recv, unsignalled, EP configured", KDAT_DTO_RECEIVE, UNS, UNS, 0 },
	/* The IB extensions: immediate data may wake the receiver. */
	{ "write imm, solicited", KDAT_DTO_RDMA_WRITE_IMM, SOL, 0, 0 },
	{ "write imm, suppress + fence", KDAT_DTO_RDMA_WRITE_IMM, SUP | FEN,
	  0, 0 },
	{ "fetch-add, solicited", KDAT_DTO_FETCH_ADD, SOL, 0, -EINVAL },
	{ "cmp-swap, solicited", KDAT_DTO_CMP_SWAP, SOL, 0, -EINVAL },
	{ "cmp-swap, unsignalled, EP configured", KDAT_DTO_CMP_SWAP, UNS, UNS,
	  0 },
	{ "fetch-add, unsignalled, EP not configured", KDAT_DTO_FETCH_ADD,
	  UNS, 0, -EINVAL },
	/* A datagram is a send: it may wake its receiver too. */
	{ "datagram, solicited", KDAT_DTO_SEND_UD, SOL, 0, 0 },
	{ "datagram, all but unsignalled", KDAT_DTO_SEND_UD, SUP | SOL | FEN,
	  0, 0 },
	{ "datagram, unsignalled, EP not configured", KDAT_DTO_SEND_UD, UNS,
	  0, -EINVAL },
	{ "datagram, unknown bit", KDAT_DTO_SEND_UD, 0x40, 0, -EINVAL },
};

static void flags_desc(const struct flags_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(flags, flags_cases, flags_desc);

static void kdat_test_completion_flags(struct kunit *test)
{
	const struct flags_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, kdat_rule_flags(c->op, c->flags, c->ep_flags),
			c->want);
}

/* ---- the IB extensions' arguments ------------------------------------ */

struct ext_case {
	const char *name;
	u32 op;
	struct kdat_dto_ext ext;
	u32 num;
	u64 seg_len;
	u64 remote_addr;
	u32 limits;		/* KDAT_IA_*: what the IA's transport lacks */
	int want;
};

#define RA 0x20000ULL	/* an aligned remote address */
#define NA KDAT_IA_NO_ATOMICS

static const struct ext_case ext_cases[] = {
	/* Every field an op does not use must be 0. */
	{ "send, no ext", KDAT_DTO_SEND, {}, 1, 64, 0, 0, 0 },
	{ "send, imm", KDAT_DTO_SEND, { .imm_data = 1 }, 1, 64, 0, 0,
	  -EINVAL },
	{ "write, swap", KDAT_DTO_RDMA_WRITE, { .swap = 1 }, 1, 64, RA, 0,
	  -EINVAL },
	{ "recv, compare", KDAT_DTO_RECEIVE, { .compare_add = 1 }, 1, 64, 0,
	  0, -EINVAL },
	{ "AH on a write imm", KDAT_DTO_RDMA_WRITE_IMM, { .ah_handle = 1 }, 1,
	  64, RA, 0, -EINVAL },
	{ "AH on a send", KDAT_DTO_SEND, { .ah_handle = 7 }, 1, 64, 0, 0,
	  -EINVAL },
	{ "AH on a receive", KDAT_DTO_RECEIVE, { .ah_handle = 7 }, 1, 64, 0,
	  0, -EINVAL },
	{ "AH on an atomic", KDAT_DTO_FETCH_ADD, { .ah_handle = 7 }, 1, 8, RA,
	  0, -EINVAL },
	/* A datagram: its AH (checked later), nothing else. */
	{ "datagram", KDAT_DTO_SEND_UD, { .ah_handle = 7 }, 1, 64, 0, NA,
	  0 },
	{ "datagram, no segment", KDAT_DTO_SEND_UD, { .ah_handle = 7 }, 0, 0,
	  0, 0, 0 },
	{ "datagram, no AH yet", KDAT_DTO_SEND_UD, {}, 1, 64, 0, 0, 0 },
	{ "datagram, imm", KDAT_DTO_SEND_UD, { .ah_handle = 7, .imm_data = 1 },
	  1, 64, 0, 0, -EINVAL },
	{ "datagram, compare", KDAT_DTO_SEND_UD,
	  { .ah_handle = 7, .compare_add = 1 }, 1, 64, 0, 0, -EINVAL },
	{ "datagram, swap", KDAT_DTO_SEND_UD, { .ah_handle = 7, .swap = 1 },
	  1, 64, 0, 0, -EINVAL },
	/* Write with immediate data: any value, any IOV, unaligned. */
	{ "write imm", KDAT_DTO_RDMA_WRITE_IMM, { .imm_data = 0xdeadbeef }, 3,
	  100, RA + 3, NA, 0 },
	{ "write imm, no segment", KDAT_DTO_RDMA_WRITE_IMM, { .imm_data = 7 },
	  0, 0, RA, 0, 0 },
	{ "write imm, add", KDAT_DTO_RDMA_WRITE_IMM, { .compare_add = 1 }, 1,
	  64, RA, 0, -EINVAL },
	/* A transport without immediate data (iWARP) refuses only it. */
	{ "write imm, no imm data", KDAT_DTO_RDMA_WRITE_IMM, { .imm_data = 7 },
	  1, 64, RA, KDAT_IA_NO_IMM_DATA, -EOPNOTSUPP },
	{ "write imm, add, no imm data", KDAT_DTO_RDMA_WRITE_IMM,
	  { .compare_add = 1 }, 1, 64, RA, KDAT_IA_NO_IMM_DATA, -EINVAL },
	{ "write, no imm data", KDAT_DTO_RDMA_WRITE, {}, 1, 64, RA,
	  KDAT_IA_NO_IMM_DATA, 0 },
	{ "fetch-add, no imm data", KDAT_DTO_FETCH_ADD, { .compare_add = 5 },
	  1, 8, RA, KDAT_IA_NO_IMM_DATA, 0 },
	/* Atomics: one 8-byte local segment, 8-byte aligned remote. */
	{ "fetch-add", KDAT_DTO_FETCH_ADD, { .compare_add = 5 }, 1, 8, RA,
	  0, 0 },
	{ "cmp-swap", KDAT_DTO_CMP_SWAP, { .compare_add = 5, .swap = 6 }, 1,
	  8, RA, 0, 0 },
	{ "cmp-swap, zeros", KDAT_DTO_CMP_SWAP, {}, 1, 8, RA, 0, 0 },
	{ "fetch-add, swap set", KDAT_DTO_FETCH_ADD, { .swap = 1 }, 1, 8, RA,
	  0, -EINVAL },
	{ "cmp-swap, imm set", KDAT_DTO_CMP_SWAP, { .imm_data = 1 }, 1, 8, RA,
	  0, -EINVAL },
	{ "atomic, no atomics", KDAT_DTO_FETCH_ADD, {}, 1, 8, RA, NA,
	  -EOPNOTSUPP },
	{ "atomic, no atomics, bad args too", KDAT_DTO_CMP_SWAP, {}, 2, 4,
	  RA + 1, NA, -EOPNOTSUPP },
	{ "atomic, 4 bytes", KDAT_DTO_FETCH_ADD, {}, 1, 4, RA, 0, -EINVAL },
	{ "atomic, 16 bytes", KDAT_DTO_CMP_SWAP, {}, 1, 16, RA, 0,
	  -EINVAL },
	{ "atomic, two segments", KDAT_DTO_FETCH_ADD, {}, 2, 8, RA, 0,
	  -EINVAL },
	{ "atomic, no segment", KDAT_DTO_FETCH_ADD, {}, 0, 8, RA, 0,
	  -EINVAL },
	{ "atomic, remote off by 4", KDAT_DTO_CMP_SWAP, {}, 1, 8, RA + 4, 0,
	  -EINVAL },
	{ "atomic, remote off by 1", KDAT_DTO_FETCH_ADD, {}, 1, 8, RA + 1,
	  0, -EINVAL },
};

static void ext_desc(const struct ext_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ext, ext_cases, ext_desc);

static void kdat_test_check_ext(struct kunit *test)
{
	const struct ext_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, kdat_rule_ext(c->op, &c->ext, c->num, c->seg_len,
					    c->remote_addr, c->limits),
			c->want);
}

/* ---- what took a receive --------------------------------------------- */

struct recv_case {
	const char *name;
	bool ud;
	enum ib_wc_status status;
	enum ib_wc_opcode opcode;
	int wc_flags;
	u32 imm;
	u32 want_op, want_imm;
};

static const struct recv_case recv_cases[] = {
	{ "plain", false, IB_WC_SUCCESS, IB_WC_RECV, 0, 0x11223344,
	  KDAT_DTO_RECEIVE, 0 },
	{ "message with imm", false, IB_WC_SUCCESS, IB_WC_RECV,
	  IB_WC_WITH_IMM, 0x11223344, KDAT_DTO_RECV_MSG_IMM, 0x11223344 },
	{ "RDMA write with imm", false, IB_WC_SUCCESS,
	  IB_WC_RECV_RDMA_WITH_IMM, IB_WC_WITH_IMM, 0x7777,
	  KDAT_DTO_RECV_RDMA_IMM, 0x7777 },
	/* Some devices leave the flag off for this opcode. */
	{ "RDMA write with imm, no flag", false, IB_WC_SUCCESS,
	  IB_WC_RECV_RDMA_WITH_IMM, 0, 0x1111, KDAT_DTO_RECV_RDMA_IMM,
	  0x1111 },
	/* A failed receive: the device's opcode means nothing. */
	{ "flushed", false, IB_WC_WR_FLUSH_ERR, IB_WC_RECV_RDMA_WITH_IMM,
	  IB_WC_WITH_IMM, 0x1111, KDAT_DTO_RECEIVE, 0 },
	{ "length error", false, IB_WC_LOC_LEN_ERR, IB_WC_RECV,
	  IB_WC_WITH_IMM, 5, KDAT_DTO_RECEIVE, 0 },
	/* A UD Endpoint's receives are datagrams, whatever the opcode. */
	{ "datagram", true, IB_WC_SUCCESS, IB_WC_RECV, IB_WC_GRH, 0x5,
	  KDAT_DTO_RECV_UD, 0 },
	{ "datagram with imm", true, IB_WC_SUCCESS, IB_WC_RECV,
	  IB_WC_GRH | IB_WC_WITH_IMM, 0xa1b2c3d4, KDAT_DTO_RECV_UD_IMM,
	  0xa1b2c3d4 },
	{ "datagram, flushed", true, IB_WC_WR_FLUSH_ERR, IB_WC_RECV,
	  IB_WC_WITH_IMM, 0x9, KDAT_DTO_RECV_UD, 0 },
	{ "datagram, odd opcode", true, IB_WC_SUCCESS,
	  IB_WC_RECV_RDMA_WITH_IMM, 0, 0x3, KDAT_DTO_RECV_UD_IMM, 0x3 },
};

static void recv_desc(const struct recv_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(recv, recv_cases, recv_desc);

static void kdat_test_recv_op(struct kunit *test)
{
	const struct recv_case *c = test->param_value;
	struct ib_wc wc = {
		.status = c->status,
		.opcode = c->opcode,
		.wc_flags = c->wc_flags,
		.ex.imm_data = (__force __be32)c->imm,
	};
	u32 imm = 0xbad;

	KUNIT_EXPECT_EQ(test, kdat_wc_recv_op(&wc, c->ud, &imm), c->want_op);
	/* Passed on as the bytes arrived: no byte swap. */
	KUNIT_EXPECT_EQ(test, imm, c->want_imm);
}

/* ---- IOV fill order of an RDMA read ---------------------------------- */

struct fill_case {
	const char *name;
	u32 seg[4];
	u32 nseg;
	u64 length;
	u32 want[4];
	u32 want_nseg;
};

static const struct fill_case fill_cases[] = {
	{ "exact", { 100, 200 }, 2, 300, { 100, 200 }, 2 },
	{ "front whole, one partly", { 100, 200, 300 }, 3, 150,
	  { 100, 50 }, 2 },
	{ "first partly", { 100, 200 }, 2, 10, { 10 }, 1 },
	{ "boundary: the rest untouched", { 100, 200, 300 }, 3, 300,
	  { 100, 200 }, 2 },
	{ "zero length", { 100 }, 1, 0, { 0 }, 0 },
};

static void fill_desc(const struct fill_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(fill, fill_cases, fill_desc);

static void kdat_test_fill_order(struct kunit *test)
{
	const struct fill_case *c = test->param_value;
	struct kdat_dto *dto;
	u64 addr = 0x1000;
	u32 i;

	dto = kunit_kzalloc(test, sizeof(*dto), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, dto);
	for (i = 0; i < c->nseg; i++) {
		dto->sge[i].addr = addr;
		dto->sge[i].length = c->seg[i];
		dto->sge[i].lkey = 7;
		dto->length += c->seg[i];
		addr += c->seg[i];
	}
	dto->num_sge = c->nseg;
	kdat_dto_trim(dto, c->length);
	KUNIT_EXPECT_EQ(test, dto->num_sge, c->want_nseg);
	KUNIT_EXPECT_EQ(test, dto->length, c->length);
	for (i = 0; i < c->want_nseg; i++) {
		KUNIT_EXPECT_EQ(test, dto->sge[i].length, c->want[i]);
		/* Segments keep their place: filled in IOV order. */
		KUNIT_EXPECT_EQ(test, dto->sge[i].addr,
				0x1000ULL + (i ? c->seg[0] : 0) +
				(i > 1 ? c->seg[1] : 0));
	}
}

/* ---- DAT status codes from the device's and from refusals ------------ */

struct status_case {
	const char *name;
	enum ib_wc_status wc;
	u32 want;
};

static const struct status_case status_cases[] = {
	{ "success", IB_WC_SUCCESS, KDAT_DTO_SUCCESS },
	{ "flushed", IB_WC_WR_FLUSH_ERR, KDAT_DTO_ERR_FLUSHED },
	{ "local length", IB_WC_LOC_LEN_ERR, KDAT_DTO_ERR_LOCAL_LENGTH },
	{ "local QP op", IB_WC_LOC_QP_OP_ERR, KDAT_DTO_ERR_LOCAL_EP },
	{ "local protection", IB_WC_LOC_PROT_ERR,
	  KDAT_DTO_ERR_LOCAL_PROTECTION },
	{ "bad response", IB_WC_BAD_RESP_ERR, KDAT_DTO_ERR_BAD_RESPONSE },
	{ "remote access", IB_WC_REM_ACCESS_ERR,
	  KDAT_DTO_ERR_REMOTE_ACCESS },
	{ "remote op", IB_WC_REM_OP_ERR, KDAT_DTO_ERR_REMOTE_RESPONDER },
	{ "RNR retries", IB_WC_RNR_RETRY_EXC_ERR,
	  KDAT_DTO_ERR_RECEIVER_NOT_READY },
	{ "transport retries", IB_WC_RETRY_EXC_ERR, KDAT_DTO_ERR_TRANSPORT },
	{ "fatal", IB_WC_FATAL_ERR, KDAT_DTO_ERR_TRANSPORT },
};

static void status_desc(const struct status_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(status, status_cases, status_desc);

static void kdat_test_wc_status(struct kunit *test)
{
	const struct status_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, kdat_wc_status(c->wc), c->want);
}

static void kdat_test_refused_status(struct kunit *test)
{
	/* The uapi table: what a refused ring entry's event says. */
	KUNIT_EXPECT_EQ(test, kdat_refused_status(-EACCES),
			(u32)KDAT_DTO_ERR_LOCAL_PROTECTION);
	KUNIT_EXPECT_EQ(test, kdat_refused_status(-EPERM),
			(u32)KDAT_DTO_ERR_LOCAL_PROTECTION);
	KUNIT_EXPECT_EQ(test, kdat_refused_status(-EMSGSIZE),
			(u32)KDAT_DTO_ERR_LOCAL_LENGTH);
	KUNIT_EXPECT_EQ(test, kdat_refused_status(-EINVAL),
			(u32)KDAT_DTO_ERR_LOCAL_EP);
	KUNIT_EXPECT_EQ(test, kdat_refused_status(-EBUSY),
			(u32)KDAT_DTO_ERR_LOCAL_EP);
}

/* ---- the handle table ------------------------------------------------- */

struct fake_obj {
	struct kdat_obj obj;
	struct fake_obj *uses;	/* a pointer to another fake, counted */
	int *log;		/* destroy order */
	int *nlog;
	int id;
};

static void fake_destroy(struct kdat_obj *obj)
{
	struct fake_obj *f = container_of(obj, struct fake_obj, obj);

	if (f->uses)
		kdat_obj_unuse(&f->uses->obj, NULL);
	if (f->log)
		f->log[(*f->nlog)++] = f->id;
}

static const struct kdat_obj_ops fake_ops = {
	.destroy = fake_destroy,
};

/* Handles of a type with no device behind it; CNO is such a type. */
#define FAKE_TYPE	KDAT_OBJ_CNO

static struct fake_obj *fake_new(struct kunit *test, struct kdat_file *kf,
				 int id, int *log, int *nlog)
{
	struct fake_obj *f;

	f = kdat_obj_alloc(struct fake_obj, obj, FAKE_TYPE, &fake_ops);
	KUNIT_ASSERT_NOT_NULL(test, f);
	f->id = id;
	f->log = log;
	f->nlog = nlog;
	KUNIT_ASSERT_EQ(test, kdat_obj_reserve(kf, &f->obj, NULL), 0);
	return f;
}

static void kdat_test_handles(struct kunit *test)
{
	struct kdat_file *a = kdat_file_create(true);
	struct kdat_file *b = kdat_file_create(true);
	struct kdat_obj *got;
	struct fake_obj *f;
	u32 h;

	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_NOT_NULL(test, b);
	f = fake_new(test, a, 1, NULL, NULL);
	h = f->obj.handle;
	KUNIT_EXPECT_NE(test, h, 0U);
	/* Reserved, not published: nobody finds it. */
	KUNIT_EXPECT_NULL(test, kdat_obj_get(a, h, FAKE_TYPE));
	mutex_lock(&a->lock);
	kdat_obj_publish_locked(&f->obj);
	mutex_unlock(&a->lock);
	got = kdat_obj_get(a, h, FAKE_TYPE);
	KUNIT_EXPECT_PTR_EQ(test, got, &f->obj);
	if (got)
		kdat_obj_put(got);
	/* Another owner, or another type: not found. */
	KUNIT_EXPECT_NULL(test, kdat_obj_get(b, h, FAKE_TYPE));
	KUNIT_EXPECT_NULL(test, kdat_obj_get(a, h, KDAT_OBJ_EP));
	KUNIT_EXPECT_EQ(test, kdat_obj_destroy(b, h), -EBADF);
	/* In use by other objects: refused, and still there. */
	kdat_obj_use(&f->obj, NULL);
	KUNIT_EXPECT_EQ(test, kdat_obj_destroy(a, h), -EBUSY);
	got = kdat_obj_get(a, h, FAKE_TYPE);
	KUNIT_EXPECT_PTR_EQ(test, got, &f->obj);
	if (got)
		kdat_obj_put(got);
	kdat_obj_unuse(&f->obj, NULL);
	KUNIT_EXPECT_EQ(test, kdat_obj_destroy(a, h), 0);
	/* Gone: neither found nor destroyed twice. */
	KUNIT_EXPECT_NULL(test, kdat_obj_get(a, h, FAKE_TYPE));
	KUNIT_EXPECT_EQ(test, kdat_obj_destroy(a, h), -EBADF);
	kdat_file_release(a);
	kdat_file_release(b);
}

static void kdat_test_handles_release_order(struct kunit *test)
{
	struct kdat_file *kf = kdat_file_create(true);
	int log[4] = {}, nlog = 0, i;
	struct fake_obj *f;
	u32 gone;

	KUNIT_ASSERT_NOT_NULL(test, kf);
	for (i = 1; i <= 3; i++) {
		f = fake_new(test, kf, i, log, &nlog);
		mutex_lock(&kf->lock);
		kdat_obj_publish_locked(&f->obj);
		mutex_unlock(&kf->lock);
	}
	/* Discarding an unpublished object runs its destroy, frees it. */
	f = fake_new(test, kf, 4, log, &nlog);
	gone = f->obj.handle;
	kdat_obj_discard(&f->obj);
	KUNIT_EXPECT_EQ(test, nlog, 1);
	KUNIT_EXPECT_EQ(test, log[0], 4);
	KUNIT_EXPECT_NULL(test, kdat_obj_get(kf, gone, FAKE_TYPE));
	/* The owner goes: newest first (children before parents). */
	nlog = 0;
	kdat_file_release(kf);
	KUNIT_EXPECT_EQ(test, nlog, 3);
	KUNIT_EXPECT_EQ(test, log[0], 3);
	KUNIT_EXPECT_EQ(test, log[1], 2);
	KUNIT_EXPECT_EQ(test, log[2], 1);
}

/*
 * A pointer from an older object to a newer one (an EVD given a newer CNO
 * by dat_evd_modify_cno): the sweep at release must destroy the user
 * before what it uses, whatever their ages.
 */
static void kdat_test_handles_release_uses(struct kunit *test)
{
	struct kdat_file *kf = kdat_file_create(true);
	struct fake_obj *f[5];
	int log[5] = {}, nlog = 0, i;

	KUNIT_ASSERT_NOT_NULL(test, kf);
	for (i = 1; i <= 4; i++) {
		f[i] = fake_new(test, kf, i, log, &nlog);
		mutex_lock(&kf->lock);
		kdat_obj_publish_locked(&f[i]->obj);
		mutex_unlock(&kf->lock);
	}
	/* 1 -> 3 -> 4 and 2 -> 4: the newest first is not allowed here. */
	f[1]->uses = f[3];
	kdat_obj_use(&f[3]->obj, NULL);
	f[3]->uses = f[4];
	kdat_obj_use(&f[4]->obj, NULL);
	f[2]->uses = f[4];
	kdat_obj_use(&f[4]->obj, NULL);
	/* In use: each refuses a destroy of its own. */
	KUNIT_EXPECT_EQ(test, kdat_obj_destroy(kf, f[4]->obj.handle), -EBUSY);
	KUNIT_EXPECT_EQ(test, kdat_obj_destroy(kf, f[3]->obj.handle), -EBUSY);
	kdat_file_release(kf);
	KUNIT_ASSERT_EQ(test, nlog, 4);
	/* Newest unused first: 2, then 1 (3 is free after it), 3, 4. */
	KUNIT_EXPECT_EQ(test, log[0], 2);
	KUNIT_EXPECT_EQ(test, log[1], 1);
	KUNIT_EXPECT_EQ(test, log[2], 3);
	KUNIT_EXPECT_EQ(test, log[3], 4);
}

/* ---- the wire format shared with OFA DAPL's cma provider ------------ */

/*
 * Qualifier to RDMA CM port. Expected ports worked out by hand from OFA's
 * rule (a qualifier above 65535 lands on 33534 + qual mod 32001), for the
 * qualifiers DAT programs use (dtest 45248, dapltest 62000 and 0xAffab1e)
 * and the edges of both ranges.
 */
struct qual_case {
	const char *name;
	u64 qual;
	u16 port;
};

static const struct qual_case qual_cases[] = {
	{ "0: any port", 0, 0 },
	{ "1", 1, 1 },
	{ "dtest 45248", 45248, 45248 },
	{ "dapltest 62000", 62000, 62000 },
	{ "65535: the last plain one", 65535, 65535 },
	{ "65536: the first folded", 65536, 35068 },
	{ "dapltest 0xAffab1e", 0xAffab1e, 43414 },
	{ "3 x 32001: the fold's base", 3 * 32001, 33534 },
	{ "3 x 32001 - 1: the fold's top", 3 * 32001 - 1, 65534 },
	{ "2^32", 1ULL << 32, 50617 },
	{ "2^64 - 1", U64_MAX, 45303 },
};

static void qual_desc(const struct qual_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(qual, qual_cases, qual_desc);

static void kdat_test_qual_port(struct kunit *test)
{
	const struct qual_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, kdat_qual_port(c->qual), c->port);
}

/*
 * An Endpoint's DTOs: what the IA query offers (the device's work requests
 * less kdat's own two, at most 4096) is what EP create takes, each way,
 * and one more is refused; on a device of 2 work requests, none.
 */
static void kdat_test_ep_max_dtos(struct kunit *test)
{
	struct ib_device_attr dev = {
		.max_qp_wr = 18, .max_send_sge = 4, .max_recv_sge = 4,
		.max_qp_rd_atom = 4, .max_qp_init_rd_atom = 4,
	};
	struct kdat_ep_attr ok = {
		.max_recv_dtos = 16, .max_request_dtos = 16,
		.max_recv_iov = 1, .max_request_iov = 1,
	};
	struct kdat_ep_attr a;

	KUNIT_EXPECT_EQ(test, kdat_ep_max_dtos(&dev), 16U);
	a = ok;
	KUNIT_EXPECT_EQ(test, kdat_ep_check_attr(&a, &dev), 0);
	a = ok;
	a.max_request_dtos = 17;
	KUNIT_EXPECT_EQ(test, kdat_ep_check_attr(&a, &dev), -ENOMEM);
	a = ok;
	a.max_recv_dtos = 17;
	KUNIT_EXPECT_EQ(test, kdat_ep_check_attr(&a, &dev), -ENOMEM);
	dev.max_qp_wr = 2;
	KUNIT_EXPECT_EQ(test, kdat_ep_max_dtos(&dev), 0U);
	a = ok;
	a.max_recv_dtos = 1;
	a.max_request_dtos = 1;
	KUNIT_EXPECT_EQ(test, kdat_ep_check_attr(&a, &dev), -ENOMEM);
	dev.max_qp_wr = 16384;	/* rxe's */
	KUNIT_EXPECT_EQ(test, kdat_ep_max_dtos(&dev), 4096U);
	a = ok;
	a.max_recv_dtos = 4096;
	a.max_request_dtos = 4096;
	KUNIT_EXPECT_EQ(test, kdat_ep_check_attr(&a, &dev), 0);
	a.max_request_dtos = 4097;
	KUNIT_EXPECT_EQ(test, kdat_ep_check_attr(&a, &dev), -ENOMEM);
}

/* A reject's private data: the consumer's follows a DAT 2.0 version word. */
static void kdat_test_rej_pdata(struct kunit *test)
{
	static const u8 ofa[] = { 2, 0, 2, 0, 'n', 'o', 'p', 'e' };
	static const u8 other_provider[] = { 2, 0, 9, 9, 'x' };
	static const u8 zeros[148];
	static const u8 dat1[] = { 1, 2, 0, 0, 'x' };
	u32 len;

	len = sizeof(ofa);
	KUNIT_EXPECT_PTR_EQ(test, kdat_rej_pdata(ofa, &len), ofa + 4);
	KUNIT_EXPECT_EQ(test, len, 4U);
	/* The header alone: a consumer's reject with no data. */
	len = 4;
	KUNIT_EXPECT_PTR_EQ(test, kdat_rej_pdata(ofa, &len), ofa + 4);
	KUNIT_EXPECT_EQ(test, len, 0U);
	/* Another provider version of DAT 2.0: still a consumer's. */
	len = sizeof(other_provider);
	KUNIT_EXPECT_PTR_EQ(test, kdat_rej_pdata(other_provider, &len),
			    other_provider + 4);
	KUNIT_EXPECT_EQ(test, len, 1U);
	/* What the CM sends for a request nobody answered: not a peer's. */
	len = sizeof(zeros);
	KUNIT_EXPECT_NULL(test, kdat_rej_pdata(zeros, &len));
	KUNIT_EXPECT_EQ(test, len, 148U);
	len = sizeof(dat1);
	KUNIT_EXPECT_NULL(test, kdat_rej_pdata(dat1, &len));
	len = 3;
	KUNIT_EXPECT_NULL(test, kdat_rej_pdata(ofa, &len));
	len = 0;
	KUNIT_EXPECT_NULL(test, kdat_rej_pdata(NULL, &len));
}

/*
 * The UD header of SIDR private data, byte by byte as the uapi header
 * describes it: DAT 2.0, the data's length, the QP number and the Q_Key,
 * big endian; read back from a buffer padded as the CM pads it.
 */
static void kdat_test_ud_hdr(struct kunit *test)
{
	static const u8 want[] = {
		2, 0, 0, 3, 0x00, 0x12, 0x34, 0x56, 0x01, 0x23, 0x45, 0x67,
		'a', 'b', 'c',
	};
	u8 buf[136] = {};
	u32 len = 99, qpn = 99, qkey = 99;
	const u8 *data;

	KUNIT_EXPECT_EQ(test, kdat_ud_hdr_put(buf, "abc", 3, 0x123456,
					      KDAT_UD_QKEY), 15);
	KUNIT_EXPECT_EQ(test, memcmp(buf, want, sizeof(want)), 0);
	data = kdat_ud_hdr_get(buf, sizeof(buf), &len, &qpn, &qkey);
	KUNIT_EXPECT_PTR_EQ(test, data, (const u8 *)buf + 12);
	KUNIT_EXPECT_EQ(test, len, 3U);
	KUNIT_EXPECT_EQ(test, qpn, 0x123456U);
	KUNIT_EXPECT_EQ(test, qkey, (u32)KDAT_UD_QKEY);
	/* No data at all: a header alone. */
	KUNIT_EXPECT_EQ(test, kdat_ud_hdr_put(buf, NULL, 0, 0, 0), 12);
	KUNIT_EXPECT_PTR_EQ(test, kdat_ud_hdr_get(buf, 12, &len, &qpn, &qkey),
			    (const u8 *)buf + 12);
	KUNIT_EXPECT_EQ(test, len, 0U);
	/* A length past what arrived: no header of ours. */
	kdat_ud_hdr_put(buf, "abc", 3, 1, 2);
	len = 99;
	KUNIT_EXPECT_NULL(test, kdat_ud_hdr_get(buf, 14, &len, &qpn, &qkey));
	KUNIT_EXPECT_EQ(test, len, 99U);
	KUNIT_EXPECT_NOT_NULL(test, kdat_ud_hdr_get(buf, 15, &len, &qpn,
						    &qkey));
	/* Shorter than a header, another DAT version, zeros, nothing. */
	KUNIT_EXPECT_NULL(test, kdat_ud_hdr_get(buf, 11, &len, &qpn, &qkey));
	buf[1] = 1;
	KUNIT_EXPECT_NULL(test, kdat_ud_hdr_get(buf, 15, &len, &qpn, &qkey));
	memset(buf, 0, sizeof(buf));
	KUNIT_EXPECT_NULL(test, kdat_ud_hdr_get(buf, sizeof(buf), &len, &qpn,
						&qkey));
	KUNIT_EXPECT_NULL(test, kdat_ud_hdr_get(NULL, 0, &len, &qpn, &qkey));
}

static struct kunit_case kdat_logic_cases[] = {
	KUNIT_CASE_PARAM(kdat_test_ring_span, span_gen_params),
	KUNIT_CASE_PARAM(kdat_test_check_segment, seg_gen_params),
	KUNIT_CASE(kdat_test_slots),
	KUNIT_CASE_PARAM(kdat_test_completion_flags, flags_gen_params),
	KUNIT_CASE_PARAM(kdat_test_check_ext, ext_gen_params),
	KUNIT_CASE_PARAM(kdat_test_recv_op, recv_gen_params),
	KUNIT_CASE_PARAM(kdat_test_fill_order, fill_gen_params),
	KUNIT_CASE_PARAM(kdat_test_wc_status, status_gen_params),
	KUNIT_CASE(kdat_test_refused_status),
	KUNIT_CASE_PARAM(kdat_test_qual_port, qual_gen_params),
	KUNIT_CASE(kdat_test_rej_pdata),
	KUNIT_CASE(kdat_test_ep_max_dtos),
	KUNIT_CASE(kdat_test_ud_hdr),
	{}
};

static struct kunit_suite kdat_logic_suite = {
	.name = "kdat-logic",
	.test_cases = kdat_logic_cases,
};

static struct kunit_case kdat_ep_state_cases[] = {
	KUNIT_CASE_PARAM(kdat_test_ep_state, ep_gen_params),
	KUNIT_CASE(kdat_test_ep_state_bounds),
	{}
};

static struct kunit_suite kdat_ep_state_suite = {
	.name = "kdat-ep-state",
	.test_cases = kdat_ep_state_cases,
};

static struct kunit_case kdat_handle_cases[] = {
	KUNIT_CASE(kdat_test_handles),
	KUNIT_CASE(kdat_test_handles_release_order),
	KUNIT_CASE(kdat_test_handles_release_uses),
	{}
};

static struct kunit_suite kdat_handle_suite = {
	.name = "kdat-handles",
	.test_cases = kdat_handle_cases,
};

kunit_test_suites(&kdat_logic_suite, &kdat_ep_state_suite,
		  &kdat_handle_suite);
