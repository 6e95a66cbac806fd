// SPDX-License-Identifier: GPL-2.0
/*
 * DAT 2.0 API tests over kdat (TAP): connections and DTOs, one case per
 * clause of the dat_ep_post_* and connection man pages. A DAT program:
 * built against <dat2/udat.h>, linked with -ldat.
 *
 * Needs /dev/kdat and an RDMA device: KDAT_TEST_DEV (port KDAT_TEST_PORT)
 * with the IPv4 address KDAT_TEST_IP. Skips (exit 4) without them.
 *
 * The cases are in the files of their areas (dto.h): dto_connect.c,
 * dto_post.c, dto_rdma.c, dto_srq.c, dto_evd.c, dto_ia.c, dto_ext.c and
 * dto_ud.c; the helpers they share in dto_common.c.
 */
#include "dto.h"

static const struct ktap_case cases[] = {
	KTAP_CASE(test_connect_accept),
	KTAP_CASE(test_poller_mode),
	KTAP_CASE(test_connect_reject),
	KTAP_CASE(test_cr_reply_refused_keeps_cr),
	KTAP_CASE(test_cr_no_memory_keeps_request),
	KTAP_CASE(test_rsp),
	KTAP_CASE(test_connect_unreachable),
	KTAP_CASE(test_two_processes),
	KTAP_CASE(test_send_recv_sizes),
	KTAP_CASE(test_recv_iov_fill_order),
	KTAP_CASE(test_recv_too_small),
	KTAP_CASE(test_late_receiver),
	KTAP_CASE(test_rnr_wait_short),
	KTAP_CASE(test_rnr_timer_attr),
	KTAP_CASE(test_broken_under_free),
	KTAP_CASE(test_rdma_write_read),
	KTAP_CASE(test_err_segment_past_end),
	KTAP_CASE(test_err_segment_before_start),
	KTAP_CASE(test_ep_recv_query),
	KTAP_CASE(test_err_too_many_segments),
	KTAP_CASE(test_err_srq_too_many_segments),
	KTAP_CASE(test_err_pz_mismatch),
	KTAP_CASE(test_err_recv_needs_local_write),
	KTAP_CASE(test_err_rdma_read_needs_local_write),
	KTAP_CASE(test_err_invalid_lmr),
	KTAP_CASE(test_tables_under_churn),
	KTAP_CASE(test_foreign_lmr),
	KTAP_CASE(test_err_unsignalled_not_configured),
	KTAP_CASE(test_unsignalled_configured),
	KTAP_CASE(test_err_bad_flags),
	KTAP_CASE(test_suppress),
	KTAP_CASE(test_lmr_free_after_suppressed_sends),
	KTAP_CASE(test_err_send_unconnected),
	KTAP_CASE(test_recv_before_connect),
	KTAP_CASE(test_disconnected_flush),
	KTAP_CASE(test_err_too_many_recvs),
	KTAP_CASE(test_err_too_many_sends),
	KTAP_CASE(test_free_in_use),
	KTAP_CASE(test_evd_overflow),
	KTAP_CASE(test_lmr_memlock),
	KTAP_CASE(test_srq_three_eps),
	KTAP_CASE(test_srq_last_wqe),
	KTAP_CASE(test_evd_wait),
	KTAP_CASE(test_fence),
	KTAP_CASE(test_cno),
	KTAP_CASE(test_cno_agent),
	KTAP_CASE(test_wait_spin),
	KTAP_CASE(test_rmr),
	KTAP_CASE(test_rmr_bind_privileges),
	KTAP_CASE(test_rmr_query),
	KTAP_CASE(test_lmr_free_bound_rmr),
	KTAP_CASE(test_bad_rmr_context),
	KTAP_CASE(test_solicited_wait),
	KTAP_CASE(test_graceful_disconnect),
	KTAP_CASE(test_ia_query),
	KTAP_CASE(test_provider_attrs),
	KTAP_CASE(test_ep_default_attr),
	KTAP_CASE(test_ep_state_errors),
	KTAP_CASE(test_reject_pdata),
	KTAP_CASE(test_post_se),
	KTAP_CASE(test_connect_given_up_then_rejected),
	KTAP_CASE(test_evd_largest_qlen),
	KTAP_CASE(test_evd_largest_qlen_memlock),
	KTAP_CASE(test_evd_wait_beside),
	KTAP_CASE(test_dup_connect),
	KTAP_CASE(test_list_providers),
	KTAP_CASE(test_ia_close_scope),
	KTAP_CASE(test_ep_timer_attrs),
	KTAP_CASE(test_conn_qual_wide),
	KTAP_CASE(test_evd_unwaitable),
	KTAP_CASE(test_evd_disable),
	KTAP_CASE(test_evd_resize),
	KTAP_CASE(test_evd_resize_no_address_space),
	KTAP_CASE(test_evd_resize_no_memory),
	KTAP_CASE(test_srq_resize),
	KTAP_CASE(test_ep_modify),
	KTAP_CASE(test_lmr_from_lmr),
	KTAP_CASE(test_ext_attrs),
	KTAP_CASE(test_write_immed),
	KTAP_CASE(test_atomics),
	KTAP_CASE(test_atomic_arg_errors),
	KTAP_CASE(test_atomic_no_privilege),
	KTAP_CASE(test_ext_counters),
	KTAP_CASE(test_ud_datagrams),
	KTAP_CASE(test_ud_several_eps),
	KTAP_CASE(test_ud_errors),
};

int main(void)
{
	int skip = pair_test_env();

	if (skip)
		return skip;
	/* A reject on iWARP may come without its private data. */
	pair_conf.reject_pdata_lost = reject_pdata_lost;
	return ktap_run(cases, sizeof(cases) / sizeof(cases[0]));
}
