// SPDX-License-Identifier: GPL-2.0
/*
 * Shared receive queues (dat_dto_test): their segments, three EPs on
 * one, the last receive of a QP, resizes.
 */
#include "dto.h"

/*
 * An SRQ post of more segments than its max_recv_iov: DAT_INVALID_PARAMETER
 * at once, in every mode (a ring entry's room, rounded up to a cache line,
 * holds more: the ring path must not take it and complete it in error).
 * Then a post of max_recv_iov segments is taken, and the SRQ still works.
 */
TEST_F(kdat, test_err_srq_too_many_segments)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 4, .max_recv_iov = 2 };
	DAT_EP_ATTR a = ep_attr();
	DAT_LMR_TRIPLET r[4], t;
	DAT_SRQ_HANDLE srq, srq2;
	DAT_EP_HANDLE sep;
	struct buf rb, sb;
	struct side c, s;
	int i;

	OK(side_open(&s, NULL));
	OK(dat_ep_free(s.ep));
	OK(dat_srq_create(s.ia, s.pz, &sa, &srq));
	OK(buf_reg(&s, &rb, 4096, DAT_MEM_PRIV_ALL_FLAG));
	for (i = 0; i < 4; i++)
		r[i] = seg(&rb, i * 16, 16);
	for (i = 3; i <= 4; i++)
		ASSERT_DAT(dat_srq_post_recv(srq, i, r, cookie(i)),
			   DAT_INVALID_PARAMETER);
	OK(dat_srq_post_recv(srq, 2, r, cookie(2)));
	OK(dat_ep_create_with_srq(s.ia, s.pz, s.dto_evd, s.dto_evd,
				  s.conn_evd, srq, &a, &sep));
	OK(side_open(&c, NULL));
	/* A PZ of another IA: refused, as for an LMR. */
	ASSERT_DAT(dat_srq_create(c.ia, s.pz, &sa, &srq2), DAT_INVALID_HANDLE);
	OK(buf_reg(&c, &sb, 64, DAT_MEM_PRIV_ALL_FLAG));
	s.ep = sep;
	OK(connect_pair(&c, &s, false));
	/* 32 bytes: both segments filled, the one refused post nowhere. */
	t = seg(&sb, 0, 32);
	OK(dat_ep_post_send(c.ep, 1, &t, cookie(7), 0));
	expect_dto(_metadata, c.dto_evd, 7, DAT_DTO_SUCCESS, 32);
	expect_dto(_metadata, s.dto_evd, 2, DAT_DTO_SUCCESS, 32);
	OK(sides_close(&c, &s));
}

/*
 * An SRQ shared by three EPs: every buffer used once, each connection's
 * messages in send order, completions on the consuming EP's recv EVD; and
 * the low watermark reported on the async EVD.
 */
TEST_F(kdat, test_srq_three_eps)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 12, .max_recv_iov = 2,
			    .low_watermark = 0 };
	struct side c[3], s;
	DAT_EP_HANDLE sep[3];
	DAT_SRQ_HANDLE srq;
	struct buf rb, sb[3];
	DAT_EP_ATTR a = ep_attr();
	int seen[3] = { 0 }, used[9] = { 0 };
	DAT_EVENT ev;
	DAT_COUNT nmore;
	int i, j, n;

	OK(side_open(&s, NULL));
	OK(dat_ep_free(s.ep));	/* room in s.dto_evd for the SRQ's EPs */
	OK(dat_srq_create(s.ia, s.pz, &sa, &srq));
	OK(buf_reg(&s, &rb, 9 * 256, DAT_MEM_PRIV_ALL_FLAG));
	for (i = 0; i < 9; i++) {
		DAT_LMR_TRIPLET r = seg(&rb, i * 256, 256);

		OK(dat_srq_post_recv(srq, 1, &r, cookie(i)));
	}
	/* An EP on an SRQ takes no receives of its own. */
	OK(dat_ep_create_with_srq(s.ia, s.pz, s.dto_evd, s.dto_evd,
				  s.conn_evd, srq, &a, &sep[0]));
	{
		DAT_LMR_TRIPLET r = seg(&rb, 0, 16);
		DAT_COUNT nbufs = 0;

		ASSERT_DAT(dat_ep_post_recv(sep[0], 1, &r, cookie(99), 0),
			   DAT_INVALID_PARAMETER);
		/* What it holds of the SRQ's buffers nobody can tell. */
		OK(dat_ep_recv_query(sep[0], &nbufs, NULL));
		ASSERT_EQ(DAT_VALUE_UNKNOWN, nbufs);
	}
	/* The SRQ is in use: it cannot go. */
	ASSERT_DAT(dat_srq_free(srq), DAT_INVALID_STATE);
	OK(dat_ep_free(sep[0]));
	for (i = 0; i < 3; i++) {
		DAT_EVD_HANDLE evd;

		OK(dat_evd_create(s.ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
				  &evd));
		OK(dat_ep_create_with_srq(s.ia, s.pz, s.dto_evd, evd,
					  s.conn_evd, srq, &a, &sep[i]));
		OK(side_open(&c[i], NULL));
		OK(buf_reg(&c[i], &sb[i], 4096, DAT_MEM_PRIV_ALL_FLAG));
		s.ep = sep[i];
		OK(connect_pair(&c[i], &s, false));
	}
	/* Each client sends three messages: "client, sequence". */
	for (j = 0; j < 3; j++) {
		for (i = 0; i < 3; i++) {
			DAT_LMR_TRIPLET t = seg(&sb[i], j * 16, 16);

			sb[i].p[j * 16] = i;
			sb[i].p[j * 16 + 1] = j;
			OK(dat_ep_post_send(c[i].ep, 1, &t, cookie(j),
					    DAT_COMPLETION_SUPPRESS_FLAG));
		}
	}
	for (n = 0; n < 9; n++) {
		const DAT_DTO_COMPLETION_EVENT_DATA *d;
		unsigned char *msg;
		int k;

		OK(dat_evd_wait(s.dto_evd, TMO, 1, &ev, &nmore));
		d = &ev.event_data.dto_completion_event_data;
		ASSERT_TRUE(d->status == DAT_DTO_SUCCESS);
		ASSERT_TRUE(d->operation == DAT_DTO_RECEIVE);
		ASSERT_TRUE(d->transfered_length == 16);
		ASSERT_TRUE(d->user_cookie.as_64 < 9);
		ASSERT_TRUE(!used[d->user_cookie.as_64]++);
		msg = rb.p + d->user_cookie.as_64 * 256;
		i = msg[0];
		ASSERT_TRUE(i < 3);
		/* Completed on the EP that received it... */
		for (k = 0; k < 3; k++)
			if (d->ep_handle == sep[k])
				break;
		ASSERT_TRUE(k == i);
		/* ...in the order its peer sent. */
		ASSERT_TRUE(msg[1] == seen[i]);
		seen[i]++;
	}
	ASSERT_TRUE(seen[0] == 3 && seen[1] == 3 && seen[2] == 3);

	/* Low watermark: 3 buffers, mark 2; below it after two: reported. */
	for (i = 0; i < 3; i++) {
		DAT_LMR_TRIPLET r = seg(&rb, i * 256, 256);

		OK(dat_srq_post_recv(srq, 1, &r, cookie(100 + i)));
	}
	OK(dat_srq_set_lw(srq, 2));
	{
		DAT_LMR_TRIPLET t = seg(&sb[0], 0, 16);

		OK(dat_ep_post_send(c[0].ep, 1, &t, cookie(7), 0));
		OK(dat_evd_wait(s.dto_evd, TMO, 1, &ev, &nmore));
		/* Not below the mark yet: no event. */
		ASSERT_DAT(dat_evd_dequeue(s.async_evd, &ev), DAT_QUEUE_EMPTY);
		OK(dat_ep_post_send(c[0].ep, 1, &t, cookie(8), 0));
	}
	OK(dat_evd_wait(s.async_evd, TMO, 1, &ev, &nmore));
	ASSERT_TRUE(ev.event_number == DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR);
	ASSERT_TRUE(ev.event_data.asynch_error_event_data.dat_handle == srq);
	ASSERT_TRUE(ev.event_data.asynch_error_event_data.reason ==
		    DAT_SRQ_LOW_WATERMARK_EVENT);
	for (i = 0; i < 3; i++)
		OK(dat_ia_close(c[i].ia, DAT_CLOSE_ABRUPT_FLAG));
	OK(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
}

/* The QPs of the test device (rdma resource show qp), or -1. */
static int device_qps(void)
{
	const char *dev = getenv("KDAT_TEST_DEV");
	char cmd[160], line[512];
	int n = 0;
	FILE *f;

	if (!dev)
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "rdma resource show qp link %s/%s 2>/dev/null", dev,
		 getenv("KDAT_TEST_PORT") ?: "1");
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strncmp(line, "link ", 5) == 0;
	return pclose(f) ? -1 : n;
}

/*
 * Two connections of EP @sep (on an SRQ) at side @s, ended by either side;
 * each reports once that the QP takes no more of the SRQ's buffers, after
 * the EP's receive completions. @first: the first cookie the SRQ holds.
 */
static void srq_last_wqe_rounds(struct __test_metadata *_metadata,
				struct side *s, DAT_EP_HANDLE sep, int first)
{
	struct side c;
	struct buf sb;
	DAT_EVENT ev;
	int round, i;

	for (round = 0; round < 2; round++) {
		DAT_EP_HANDLE plain = s->ep;

		OK(side_open(&c, NULL));
		OK(buf_reg(&c, &sb, 64, DAT_MEM_PRIV_ALL_FLAG));
		s->ep = sep;
		OK(connect_pair(&c, s, false));
		s->ep = plain;
		OK(dat_psp_free(s->psp));
		for (i = 0; i < 2; i++) {
			DAT_LMR_TRIPLET t = seg(&sb, 0, 64);

			OK(dat_ep_post_send(c.ep, 1, &t, cookie(i), 0));
			expect_dto(_metadata, c.dto_evd, i, DAT_DTO_SUCCESS,
				   64);
		}
		/* Nothing yet: the connection is up. */
		ASSERT_DAT(dat_evd_dequeue(s->async_evd, &ev), DAT_QUEUE_EMPTY);
		/* Round 0: the client ends it; round 1: the SRQ's side. */
		OK(dat_ep_disconnect(round ? sep : c.ep,
				     DAT_CLOSE_GRACEFUL_FLAG));
		expect_conn_event(_metadata, s->conn_evd,
				  DAT_CONNECTION_EVENT_DISCONNECTED, NULL);
		OK(wait_event(s->async_evd, &ev));
		ASSERT_TRUE(ev.event_number == DAT_ASYNC_ERROR_EP_BROKEN);
		ASSERT_TRUE(ev.event_data.asynch_error_event_data.dat_handle ==
			    sep);
		ASSERT_TRUE(ev.event_data.asynch_error_event_data.reason ==
			    DAT_EP_TRANSFER_TO_ERROR);
		/* Both receives were completed before it: nothing waited. */
		for (i = 0; i < 2; i++) {
			const DAT_DTO_COMPLETION_EVENT_DATA *d =
				&ev.event_data.dto_completion_event_data;

			OK(dat_evd_dequeue(s->dto_evd, &ev));
			ASSERT_TRUE(ev.event_number ==
				    DAT_DTO_COMPLETION_EVENT);
			ASSERT_TRUE(d->ep_handle == sep);
			ASSERT_TRUE(d->status == DAT_DTO_SUCCESS);
			ASSERT_TRUE(d->transfered_length == 64);
			ASSERT_TRUE(d->user_cookie.as_64 ==
				    (uint64_t)(first + 2 * round + i));
		}
		/* Once. The client's EP, on no SRQ, reports nothing. */
		expect_conn_event(_metadata, c.conn_evd,
				  DAT_CONNECTION_EVENT_DISCONNECTED, NULL);
		usleep(100000);
		ASSERT_DAT(dat_evd_dequeue(s->async_evd, &ev), DAT_QUEUE_EMPTY);
		ASSERT_DAT(dat_evd_dequeue(c.async_evd, &ev), DAT_QUEUE_EMPTY);
		OK(dat_ia_close(c.ia, DAT_CLOSE_ABRUPT_FLAG));
		OK(dat_ep_reset(sep));
	}
}

/*
 * An EP on an SRQ whose connection ends reports, once, that its QP takes
 * no more of the SRQ's buffers (IB's "last WQE reached", which OFA DAPL
 * delivers and dtestsrq waits for): DAT_ASYNC_ERROR_EP_BROKEN on the IA's
 * async EVD, naming the EP, after the EP's receive completions. Again
 * after a reset and a new connection, ended by either side; never for an
 * EP without an SRQ. Both ways kdat learns it: an EP made before the
 * device raised LAST_WQE_REACHED has a barrier QP (6.1's rxe never
 * raises it); one made after, on a device that did (6.12's rxe), has its
 * QP only, and the device's event is what it reports.
 */
TEST_F_TIMEOUT(kdat, test_srq_last_wqe, 120)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 8, .max_recv_iov = 1 };
	DAT_EP_ATTR a = ep_attr();
	const char *mech;
	struct side s;
	DAT_EP_HANDLE sep;
	DAT_SRQ_HANDLE srq;
	struct buf rb;
	int i, k, qps;

	OK(side_open(&s, NULL));
	OK(dat_srq_create(s.ia, s.pz, &sa, &srq));
	OK(buf_reg(&s, &rb, 8 * 64, DAT_MEM_PRIV_ALL_FLAG));
	for (i = 0; i < 8; i++) {
		DAT_LMR_TRIPLET r = seg(&rb, i * 64, 64);

		OK(dat_srq_post_recv(srq, 1, &r, cookie(i)));
	}
	for (k = 0; k < 2; k++) {
		mech = kdat_srq_last_wqe(getenv("KDAT_TEST_DEV"));
		qps = device_qps();
		OK(dat_ep_create_with_srq(s.ia, s.pz, s.dto_evd, s.dto_evd,
					  s.conn_evd, srq, &a, &sep));
		if (qps >= 0 && mech) {
			int made = device_qps() - qps;

			TH_LOG("EP %d on the SRQ: %s, %d QP(s)", k, mech,
			       made);
			/* A barrier QP exactly where the device is unknown. */
			ASSERT_EQ(strcmp(mech, "event") ? 2 : 1, made);
		} else {
			TH_LOG("EP %d on the SRQ: QPs or debugfs not readable (not root?): not counted",
			       k);
		}
		srq_last_wqe_rounds(_metadata, &s, sep, 4 * k);
		/* A reset EP goes at once: no marker is left in flight. */
		OK(dat_ep_free(sep));
	}
	OK(dat_srq_free(srq));
	OK(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
}

/*
 * SRQ resize: grows with buffers posted (they stay and complete), refuses
 * to go below what is posted or to the low watermark, and a smaller size
 * limits posting.
 */
TEST_F(kdat, test_srq_resize)
{
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 4, .max_recv_iov = 1 };
	DAT_SRQ_PARAM sp;
	DAT_SRQ_HANDLE srq;
	DAT_EP_HANDLE sep;
	DAT_EP_ATTR a = ep_attr();
	DAT_LMR_TRIPLET t;
	struct side c, s;
	struct buf cb, rb;
	int seen[8] = { 0 }, i;

	OK(side_open(&c, NULL));
	OK(side_open(&s, NULL));
	OK(dat_ep_free(s.ep));
	OK(dat_srq_create(s.ia, s.pz, &sa, &srq));
	OK(buf_reg(&s, &rb, 8 * 64, DAT_MEM_PRIV_ALL_FLAG));
	OK(buf_reg(&c, &cb, 4096, DAT_MEM_PRIV_ALL_FLAG));
	for (i = 0; i < 4; i++) {
		t = seg(&rb, i * 64, 64);
		OK(dat_srq_post_recv(srq, 1, &t, cookie(i)));
	}
	ASSERT_DAT(dat_srq_post_recv(srq, 1, &t, cookie(99)),
		   DAT_INSUFFICIENT_RESOURCES);
	ASSERT_DAT(dat_srq_resize(srq, 3), DAT_INVALID_STATE);
	if (DAT_GET_TYPE(dat_srq_resize(srq, 8)) == DAT_MODEL_NOT_SUPPORTED) {
		/* A device that cannot grow an SRQ: it stays as it was. */
		OK(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &sp));
		ASSERT_TRUE(sp.max_recv_dtos == 4);
		ASSERT_DAT(dat_srq_post_recv(srq, 1, &t, cookie(99)),
			   DAT_INSUFFICIENT_RESOURCES);
		SKIP(return, "the device cannot resize an SRQ (DAT_MODEL_NOT_SUPPORTED and the SRQ unchanged checked)");
	}
	OK(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &sp));
	ASSERT_TRUE(sp.max_recv_dtos == 8);
	for (i = 4; i < 8; i++) {
		t = seg(&rb, i * 64, 64);
		OK(dat_srq_post_recv(srq, 1, &t, cookie(i)));
	}
	ASSERT_DAT(dat_srq_post_recv(srq, 1, &t, cookie(99)),
		   DAT_INSUFFICIENT_RESOURCES);
	OK(dat_ep_create_with_srq(s.ia, s.pz, s.dto_evd, s.dto_evd,
				  s.conn_evd, srq, &a, &sep));
	s.ep = sep;
	OK(connect_pair(&c, &s, false));
	/* All eight buffers, the first four from before the resize, fill. */
	for (i = 0; i < 8; i++) {
		const DAT_DTO_COMPLETION_EVENT_DATA *d;
		DAT_EVENT ev;

		cb.p[i * 8] = 0xa0 + i;
		t = seg(&cb, i * 8, 8);
		OK(dat_ep_post_send(c.ep, 1, &t, cookie(100 + i),
				    DAT_COMPLETION_SUPPRESS_FLAG));
		OK(wait_event(s.dto_evd, &ev));
		ASSERT_TRUE(ev.event_number == DAT_DTO_COMPLETION_EVENT);
		d = &ev.event_data.dto_completion_event_data;
		ASSERT_TRUE(d->status == DAT_DTO_SUCCESS &&
			    d->user_cookie.as_64 < 8);
		seen[d->user_cookie.as_64]++;
		ASSERT_TRUE(rb.p[d->user_cookie.as_64 * 64] == 0xa0 + i);
	}
	for (i = 0; i < 8; i++) {
		ASSERT_TRUE(seen[i] == 1);
	}
	/* DAT: not at or below the low watermark, which stays as set. */
	OK(dat_srq_set_lw(srq, 3));
	ASSERT_DAT(dat_srq_resize(srq, 3), DAT_INVALID_STATE);
	ASSERT_DAT(dat_srq_resize(srq, 1), DAT_INVALID_STATE);
	OK(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &sp));
	ASSERT_TRUE(sp.max_recv_dtos == 8 && sp.low_watermark == 3);
	OK(dat_srq_resize(srq, 4));
	OK(dat_srq_set_lw(srq, 0));
	/* Empty now: shrinking limits what may be posted. */
	OK(dat_srq_resize(srq, 2));
	for (i = 0; i < 2; i++) {
		t = seg(&rb, i * 64, 64);
		OK(dat_srq_post_recv(srq, 1, &t, cookie(i)));
	}
	ASSERT_DAT(dat_srq_post_recv(srq, 1, &t, cookie(99)),
		   DAT_INSUFFICIENT_RESOURCES);
	OK(sides_close(&c, &s));
}
