/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The DAT return-code checks of the DAT test programs, cases of the
 * kernel's kselftest_harness.h (after ../lib/kdat_harness.h):
 * ASSERT_DAT(expr, type) compares DAT_GET_TYPE() of what expr returns
 * with a DAT_RETURN type, and an error must also carry the class bit
 * (status & DAT_CLASS_ERROR), as DAT_ERROR() makes it and consumers test
 * it; a success must not, nor DAT_QUEUE_EMPTY and DAT_TIMEOUT_EXPIRED,
 * which OFA's provider returns bare (conditions of the normal course).
 * Otherwise the case ends, failed, naming the code (dat_strerror()).
 * OK(expr): ASSERT_DAT(expr, DAT_SUCCESS).
 */
#ifndef KDAT_TESTS_DAT_EXPECT_H
#define KDAT_TESTS_DAT_EXPECT_H

#include <stdbool.h>

#include <dat2/udat.h>

static inline int dat_expect_bare(DAT_RETURN type)
{
	return type == DAT_SUCCESS || type == DAT_QUEUE_EMPTY ||
	       type == DAT_TIMEOUT_EXPIRED;
}

/* Is @r of type @want, with the class bit as the type wants it? */
static inline bool dat_expect_is(DAT_RETURN r, DAT_RETURN want)
{
	return DAT_GET_TYPE(r) == want &&
	       ((r & DAT_CLASS_ERROR) == 0) == dat_expect_bare(want);
}

#define ASSERT_DAT(expr, want)						\
	do {								\
		DAT_RETURN __r = (expr);				\
		DAT_RETURN __w = (DAT_RETURN)(want);			\
		const char *__maj = "?", *__min = "";			\
		bool __dat_as_wanted = dat_expect_is(__r, __w);		\
									\
		if (!__dat_as_wanted)					\
			dat_strerror(__r, &__maj, &__min);		\
		ASSERT_TRUE(__dat_as_wanted)				\
			TH_LOG("%s: got %#x (%s%s%s), want %#x%s",	\
			       #expr, (unsigned int)__r, __maj,		\
			       *__min ? " " : "", __min,		\
			       (unsigned int)__w,			\
			       dat_expect_bare(__w) ? "" :		\
			       " with DAT_CLASS_ERROR");		\
	} while (0)
#define OK(expr) ASSERT_DAT(expr, DAT_SUCCESS)

#endif
