/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dat_dto_test, one program in several files by area: what the files
 * share. dat_dto_test.c includes them, in the order their cases run, and
 * has main(): one translation unit, as kselftest_harness.h keeps its
 * lists of cases (each file's TEST_F()s) per translation unit. The
 * fixture (sides, buffers, a connected pair) is tests/lib/dat_pair.h's,
 * each of its steps checked with OK(); the helpers below are
 * dto_common.c's.
 */
#ifndef KDAT_TESTS_DTO_H
#define KDAT_TESTS_DTO_H

#include <errno.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <dat2/udat.h>
#include <dat2/dat_ib_extensions.h>

#include "../lib/kdat_harness.h"
#include "../lib/dat_expect.h"
#include "../lib/rdma_dev.h"
#include "../selftests/kdat_objects.h"
#include "../lib/dat_pair.h"

#define TMO (10 * 1000 * 1000)	/* 10 s, in DAT_TIMEOUT microseconds */

/* dto_common.c; the helpers that assert take the case's _metadata. */
bool dev_iwarp(struct __test_metadata *_metadata);
double now_s(void);
bool placed(struct __test_metadata *_metadata, const void *dst,
	    const void *src, size_t n);
bool reject_pdata_lost(const DAT_EVENT *ev);
void expect_conn_event(struct __test_metadata *_metadata, DAT_EVD_HANDLE evd,
		       DAT_EVENT_NUMBER num, const char *pdata);
void counters(struct __test_metadata *_metadata, DAT_HANDLE h, int all,
	      DAT_UINT64 *out);
void expect_dto(struct __test_metadata *_metadata, DAT_EVD_HANDLE evd,
		uint64_t ck, DAT_DTO_COMPLETION_STATUS status, DAT_COUNT len);
void state_is(struct __test_metadata *_metadata, DAT_EP_HANDLE ep,
	      DAT_EP_STATE want);
/* calloc() answers ENOMEM to the next calloc_fail calls (libdat's too). */
extern int calloc_fail;
void broken_after_error(struct __test_metadata *_metadata, struct side *x,
			struct side *y);
void only_in_ring_mode(struct __test_metadata *_metadata);
void pair_still_works(struct __test_metadata *_metadata, struct pair *p);
const DAT_IB_EXTENSION_EVENT_DATA *ext_data(const DAT_EVENT *ev);
void expect_ext(struct __test_metadata *_metadata, DAT_EVD_HANDLE evd,
		DAT_IB_EXT_TYPE type, int op, uint64_t ck,
		DAT_DTO_COMPLETION_STATUS status, DAT_COUNT len,
		DAT_EVENT *out);
const char *attr_value(struct __test_metadata *_metadata,
		       const DAT_PROVIDER_ATTR *pa, const char *name);
bool attr_is(struct __test_metadata *_metadata, const DAT_PROVIDER_ATTR *pa,
	     const char *name, const char *value);
bool ia_has(struct __test_metadata *_metadata, DAT_IA_HANDLE ia,
	    const char *attr);

#endif
