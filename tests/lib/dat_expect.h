/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The DAT return-code checks of the DAT test programs (KTAP, after
 * ktap.h): EXPECT_DAT(expr, type) compares DAT_GET_TYPE() of what expr
 * returns with a DAT_RETURN type, and an error must also carry the class
 * bit (status & DAT_CLASS_ERROR), as DAT_ERROR() makes it and consumers
 * test it; a success must not, nor DAT_QUEUE_EMPTY and
 * DAT_TIMEOUT_EXPIRED, which OFA's provider returns bare (conditions of
 * the normal course). The failure names the code (dat_strerror()).
 */
#ifndef KDAT_TESTS_DAT_EXPECT_H
#define KDAT_TESTS_DAT_EXPECT_H

#include <dat2/udat.h>

static inline int dat_expect_bare(DAT_RETURN type)
{
	return type == DAT_SUCCESS || type == DAT_QUEUE_EMPTY ||
	       type == DAT_TIMEOUT_EXPIRED;
}

#define EXPECT_DAT(expr, want)						\
	do {								\
		DAT_RETURN __r = (expr);				\
		DAT_RETURN __w = (DAT_RETURN)(want);			\
									\
		if (DAT_GET_TYPE(__r) != __w ||				\
		    ((__r & DAT_CLASS_ERROR) == 0) !=			\
		    dat_expect_bare(__w)) {				\
			const char *__maj = "?", *__min = "";		\
									\
			dat_strerror(__r, &__maj, &__min);		\
			KTAP_FAIL("%s: got %#x (%s%s%s), want %#x%s",	\
				  #expr, (unsigned int)__r, __maj,	\
				  *__min ? " " : "", __min,		\
				  (unsigned int)__w,			\
				  dat_expect_bare(__w) ? "" :		\
				  " with DAT_CLASS_ERROR");		\
		}							\
	} while (0)
#define OK(expr) EXPECT_DAT(expr, DAT_SUCCESS)

#endif
