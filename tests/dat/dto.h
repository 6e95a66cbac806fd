/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dat_dto_test, one program in several files by area (dat_dto_test.c has
 * main() and the table of cases, in the order they run): what the files
 * share. The fixture (sides, buffers, a connected pair) is
 * tests/lib/dat_pair.h's; the helpers below are dto_common.c's.
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

#include "../selftests/ktap.h"
#include "../lib/dat_expect.h"
#include "../lib/rdma_dev.h"
#include "../selftests/kdat_objects.h"
#include "../lib/dat_pair.h"

#define TMO (10 * 1000 * 1000)	/* 10 s, in DAT_TIMEOUT microseconds */

/* dto_common.c */
bool dev_iwarp(void);
double now_s(void);
bool placed(const void *dst, const void *src, size_t n);
bool reject_pdata_lost(const DAT_EVENT *ev);
void expect_conn_event(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER num,
		       const char *pdata);
void counters(DAT_HANDLE h, int all, DAT_UINT64 *out);
void expect_dto(DAT_EVD_HANDLE evd, uint64_t ck,
		DAT_DTO_COMPLETION_STATUS status, DAT_COUNT len);
void state_is(DAT_EP_HANDLE ep, DAT_EP_STATE want);
/* calloc() answers ENOMEM to the next calloc_fail calls (libdat's too). */
extern int calloc_fail;
void broken_after_error(struct side *x, struct side *y);
void only_in_ring_mode(void);
void pair_still_works(struct pair *p);
const DAT_IB_EXTENSION_EVENT_DATA *ext_data(const DAT_EVENT *ev);
void expect_ext(DAT_EVD_HANDLE evd, DAT_IB_EXT_TYPE type, int op,
		uint64_t ck, DAT_DTO_COMPLETION_STATUS status,
		DAT_COUNT len, DAT_EVENT *out);
const char *attr_value(const DAT_PROVIDER_ATTR *pa, const char *name);
bool attr_is(const DAT_PROVIDER_ATTR *pa, const char *name,
	     const char *value);
bool ia_has(DAT_IA_HANDLE ia, const char *attr);

/* dto_connect.c: connections */
void test_connect_accept(void);
void test_connect_reject(void);
void test_cr_reply_refused_keeps_cr(void);
void test_cr_no_memory_keeps_request(void);
void test_rsp(void);
void test_connect_unreachable(void);
void test_conn_qual_wide(void);
void test_two_processes(void);
void test_graceful_disconnect(void);
void test_ep_state_errors(void);
void test_reject_pdata(void);
void test_connect_given_up_then_rejected(void);
void test_dup_connect(void);

/* dto_post.c: sends and receives */
void test_send_recv_sizes(void);
void test_recv_iov_fill_order(void);
void test_recv_too_small(void);
void test_late_receiver(void);
void test_broken_under_free(void);
void test_rnr_wait_short(void);
void test_rnr_timer_attr(void);
void test_ep_recv_query(void);
void test_err_segment_past_end(void);
void test_err_segment_before_start(void);
void test_err_too_many_segments(void);
void test_err_pz_mismatch(void);
void test_err_recv_needs_local_write(void);
void test_err_invalid_lmr(void);
void test_tables_under_churn(void);
void test_err_unsignalled_not_configured(void);
void test_unsignalled_configured(void);
void test_err_bad_flags(void);
void test_suppress(void);
void test_lmr_free_after_suppressed_sends(void);
void test_err_send_unconnected(void);
void test_recv_before_connect(void);
void test_err_too_many_recvs(void);
void test_err_too_many_sends(void);
void test_foreign_lmr(void);
void test_disconnected_flush(void);

/* dto_rdma.c: RDMA, LMRs and RMRs */
void test_rdma_write_read(void);
void test_err_rdma_read_needs_local_write(void);
void test_lmr_memlock(void);
void test_fence(void);
void test_rmr(void);
void test_rmr_query(void);
void test_rmr_bind_privileges(void);
void test_lmr_free_bound_rmr(void);
void test_bad_rmr_context(void);
void test_lmr_from_lmr(void);

/* dto_srq.c: SRQs */
void test_err_srq_too_many_segments(void);
void test_srq_three_eps(void);
void test_srq_last_wqe(void);
void test_srq_resize(void);

/* dto_evd.c: EVDs, CNOs, waits */
void test_evd_overflow(void);
void test_evd_wait(void);
void test_cno(void);
void test_wait_spin(void);
void test_cno_agent(void);
void test_solicited_wait(void);
void test_post_se(void);
void test_evd_largest_qlen(void);
void test_evd_largest_qlen_memlock(void);
void test_evd_wait_beside(void);
void test_evd_unwaitable(void);
void test_evd_disable(void);
void test_evd_resize(void);
void test_evd_resize_no_address_space(void);
void test_evd_resize_no_memory(void);
void test_poller_mode(void);

/* dto_ia.c: the IA, the provider, the EP's attributes */
void test_ia_close_scope(void);
void test_ep_timer_attrs(void);
void test_free_in_use(void);
void test_ia_query(void);
void test_provider_attrs(void);
void test_ep_default_attr(void);
void test_list_providers(void);
void test_ep_modify(void);

/* dto_ext.c: the IB extensions */
void test_ext_attrs(void);
void test_write_immed(void);
void test_atomics(void);
void test_atomic_arg_errors(void);
void test_atomic_no_privilege(void);
void test_ext_counters(void);

/* dto_ud.c: UD endpoints */
void test_ud_datagrams(void);
void test_ud_several_eps(void);
void test_ud_errors(void);

#endif
