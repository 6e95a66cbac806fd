// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suites for kdat's logic that needs no device: ring index
 * arithmetic, the IOV-against-LMR check, the DTO slot allocator. Built into
 * kdat.ko when the kernel has CONFIG_KUNIT (the debug kernel).
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
	struct kdat_pz pz_a = {}, pz_b = {};
	struct kdat_lmr lmr = {
		.pz = &pz_a,
		.addr = LMR_ADDR,
		.length = LMR_LEN,
		.mem_priv = c->lmr_priv,
	};

	KUNIT_EXPECT_EQ(test, kdat_dto_check_segment(&lmr, c->same_pz ?
						     &pz_a : &pz_b, c->need,
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

static struct kunit_case kdat_logic_cases[] = {
	KUNIT_CASE_PARAM(kdat_test_ring_span, span_gen_params),
	KUNIT_CASE_PARAM(kdat_test_check_segment, seg_gen_params),
	KUNIT_CASE(kdat_test_slots),
	{}
};

static struct kunit_suite kdat_logic_suite = {
	.name = "kdat-logic",
	.test_cases = kdat_logic_cases,
};

kunit_test_suite(kdat_logic_suite);
