// SPDX-License-Identifier: GPL-2.0
/*
 * Connections (dat_dto_test): connect, accept and reject with private
 * data both ways, connection requests refused and kept, an RSP, a peer
 * that is not there, qualifiers past 16 bits, two processes,
 * disconnects, the EP states and what each refuses.
 */
#include "dto.h"

/*
 * Two successful DTO completions of @len bytes on one EVD whose order is
 * not defined (a send and a receive of one EP): cookies @a and @b.
 */
static void expect_dto_pair(struct __test_metadata *_metadata,
			    DAT_EVD_HANDLE evd, uint64_t a, uint64_t b,
			    DAT_COUNT len)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *d;
	bool seen_a = false, seen_b = false;
	DAT_EVENT ev;
	int k;

	for (k = 0; k < 2; k++) {
		OK(wait_event(evd, &ev));
		ASSERT_TRUE(ev.event_number == DAT_DTO_COMPLETION_EVENT);
		d = &ev.event_data.dto_completion_event_data;
		ASSERT_FALSE(d->status != DAT_DTO_SUCCESS ||
			     d->transfered_length != (DAT_SEG_LENGTH)len)
			TH_LOG("dto %llu: status %d len %u, want 0 %d",
			       (unsigned long long)d->user_cookie.as_64,
			       d->status, d->transfered_length, len);
		if (d->user_cookie.as_64 == a && !seen_a) {
			seen_a = true;
			continue;
		}
		ASSERT_FALSE(d->user_cookie.as_64 != b || seen_b)
			TH_LOG("dto: cookie %llu, want %llu and %llu",
			       (unsigned long long)d->user_cookie.as_64,
			       (unsigned long long)a, (unsigned long long)b);
		seen_b = true;
	}
}

TEST_F(kdat, test_connect_accept)
{
	struct side c, s;

	OK(side_open(&c, NULL));
	OK(side_open(&s, NULL));
	state_is(_metadata, c.ep, DAT_EP_STATE_UNCONNECTED);
	OK(connect_pair(&c, &s, false));
	state_is(_metadata, c.ep, DAT_EP_STATE_CONNECTED);
	state_is(_metadata, s.ep, DAT_EP_STATE_CONNECTED);
	OK(dat_ep_disconnect(c.ep, DAT_CLOSE_GRACEFUL_FLAG));
	expect_conn_event(_metadata, c.conn_evd,
			  DAT_CONNECTION_EVENT_DISCONNECTED, NULL);
	expect_conn_event(_metadata, s.conn_evd,
			  DAT_CONNECTION_EVENT_DISCONNECTED, NULL);
	state_is(_metadata, c.ep, DAT_EP_STATE_DISCONNECTED);
	state_is(_metadata, s.ep, DAT_EP_STATE_DISCONNECTED);
	OK(dat_ep_reset(c.ep));
	state_is(_metadata, c.ep, DAT_EP_STATE_UNCONNECTED);
	OK(sides_close(&c, &s));
}

TEST_F(kdat, test_connect_reject)
{
	struct side c, s;

	OK(side_open(&c, NULL));
	OK(side_open(&s, NULL));
	OK(connect_pair(&c, &s, true));
	state_is(_metadata, c.ep, DAT_EP_STATE_DISCONNECTED);
	state_is(_metadata, s.ep, DAT_EP_STATE_UNCONNECTED);
	/* The PSP stays: the server can take the next request. */
	OK(dat_psp_free(s.psp));
	OK(sides_close(&c, &s));
}

/* Connect @c to qualifier @q again, for round @round (reset first). */
static void connect_round(struct __test_metadata *_metadata, struct side *c,
			  DAT_CONN_QUAL q, int round)
{
	if (round)
		OK(dat_ep_reset(c->ep));
	OK(dat_ep_connect(c->ep, (DAT_IA_ADDRESS_PTR)&pair_conf.peer, q, TMO, 0,
			  NULL, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
}

/*
 * A reply whose private data cannot be read fails (DAT_INVALID_PARAMETER)
 * and leaves the CR as it was: answerable (queried, then rejected), and
 * its PSP free to go after. So does an accept with an EP of the wrong
 * state (DAT_INVALID_STATE); the same CR is then accepted.
 */
TEST_F(kdat, test_cr_reply_refused_keeps_cr)
{
	DAT_CONN_QUAL q = new_qual();
	void *gone = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	struct side c, s;
	DAT_CR_HANDLE cr;
	DAT_CR_PARAM crp;
	DAT_EVENT ev;
	int round;

	ASSERT_TRUE(gone != MAP_FAILED);
	OK(side_open(&c, NULL));
	OK(side_open(&s, NULL));
	OK(dat_psp_create(s.ia, q, s.cr_evd, DAT_PSP_CONSUMER_FLAG, &s.psp));
	for (round = 0; round < 2; round++) {
		connect_round(_metadata, &c, q, round);
		OK(wait_event(s.cr_evd, &ev));
		ASSERT_TRUE(ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
		cr = ev.event_data.cr_arrival_event_data.cr_handle;
		if (round == 0) {
			ASSERT_DAT(dat_cr_reject(cr, 8, gone),
				   DAT_INVALID_PARAMETER);
			ASSERT_DAT(dat_cr_accept(cr, s.ep, 8, gone),
				   DAT_INVALID_PARAMETER);
			OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp));
			ASSERT_TRUE(crp.local_ep_handle == DAT_HANDLE_NULL);
			/* Nor the PSP while a request waits. */
			ASSERT_DAT(dat_psp_free(s.psp), DAT_INVALID_STATE);
			OK(dat_cr_reject(cr, 0, NULL));
			expect_conn_event(_metadata, c.conn_evd,
					  DAT_CONNECTION_EVENT_PEER_REJECTED,
					  NULL);
		} else {
			/* The client's EP, connecting: the wrong state. */
			ASSERT_DAT(dat_cr_accept(cr, c.ep, 0, NULL),
				   DAT_INVALID_STATE);
			OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp));
			OK(dat_cr_accept(cr, s.ep, 0, NULL));
			expect_conn_event(_metadata, c.conn_evd,
					  DAT_CONNECTION_EVENT_ESTABLISHED,
					  NULL);
		}
	}
	/* No CR is left on the PSP: it goes. */
	OK(dat_psp_free(s.psp));
	munmap(gone, 4096);
	OK(sides_close(&c, &s));
}

/*
 * A connection request whose CR libdat has no memory for is not lost: the
 * take answers DAT_INSUFFICIENT_RESOURCES and leaves it queued, and the
 * next take returns it, to be accepted. (Before, the event was taken and
 * then dropped, the request left unanswered until the peer's timeout.)
 * The CNO says the request is there without taking it.
 */
TEST_F(kdat, test_cr_no_memory_keeps_request)
{
	DAT_CONN_QUAL q = new_qual();
	DAT_EVD_HANDLE crevd, got;
	DAT_CNO_HANDLE cno;
	struct side c, s;
	DAT_EVENT ev;
	int round;

	OK(side_open(&c, NULL));
	OK(side_open(&s, NULL));
	OK(dat_cno_create(s.ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno));
	OK(dat_evd_create(s.ia, 8, cno, DAT_EVD_CR_FLAG, &crevd));
	OK(dat_psp_create(s.ia, q, crevd, DAT_PSP_CONSUMER_FLAG, &s.psp));
	for (round = 0; round < 2; round++) {
		connect_round(_metadata, &c, q, round);
		OK(dat_cno_wait(cno, TMO, &got));
		ASSERT_TRUE(got == crevd);
		if (round == 1) {
			/* The request is queued; no memory for its CR. */
			__atomic_store_n(&calloc_fail, 1, __ATOMIC_RELAXED);
			ASSERT_DAT(dat_evd_dequeue(crevd, &ev),
				   DAT_INSUFFICIENT_RESOURCES);
			__atomic_store_n(&calloc_fail, 0, __ATOMIC_RELAXED);
		}
		OK(dat_evd_dequeue(crevd, &ev));
		ASSERT_TRUE(ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
		if (round == 0) {
			/* The thread's spare went into this CR. */
			OK(dat_cr_reject(ev.event_data.cr_arrival_event_data.cr_handle,
					 0, NULL));
			expect_conn_event(_metadata, c.conn_evd,
					  DAT_CONNECTION_EVENT_PEER_REJECTED,
					  NULL);
		} else {
			OK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle,
					 s.ep, 0, NULL));
			expect_conn_event(_metadata, c.conn_evd,
					  DAT_CONNECTION_EVENT_ESTABLISHED,
					  NULL);
		}
	}
	OK(dat_psp_free(s.psp));
	OK(sides_close(&c, &s));
}

/* An RSP: its EP is RESERVED, takes one request, and only that EP. */
TEST_F(kdat, test_rsp)
{
	DAT_CONN_QUAL q = new_qual();
	struct side c, c2, s;
	DAT_RSP_HANDLE rsp;
	DAT_EP_HANDLE other;
	DAT_EP_ATTR a = ep_attr();
	DAT_CR_HANDLE cr;
	DAT_CR_PARAM crp;
	DAT_EVENT ev;

	OK(side_open(&c, NULL));
	OK(side_open(&c2, NULL));
	OK(side_open(&s, NULL));
	OK(dat_ep_create(s.ia, s.pz, s.dto_evd, s.dto_evd, s.conn_evd, &a,
			 &other));
	OK(dat_rsp_create(s.ia, q, s.ep, s.cr_evd, &rsp));
	state_is(_metadata, s.ep, DAT_EP_STATE_RESERVED);
	/* A reserved EP cannot connect on its own, nor be reserved twice. */
	ASSERT_DAT(dat_ep_connect(s.ep, (DAT_IA_ADDRESS_PTR)&pair_conf.peer, q,
				  TMO, 0, NULL, DAT_QOS_BEST_EFFORT,
				  DAT_CONNECT_DEFAULT_FLAG), DAT_INVALID_STATE);
	OK(dat_ep_connect(c.ep, (DAT_IA_ADDRESS_PTR)&pair_conf.peer, q, TMO, 4,
			  "rsp", DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
	OK(wait_event(s.cr_evd, &ev));
	ASSERT_TRUE(ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
	/* DAT: the RSP is spent; the event names no service point. */
	ASSERT_TRUE(ev.event_data.cr_arrival_event_data.sp_handle.rsp_handle ==
		    DAT_HANDLE_NULL);
	cr = ev.event_data.cr_arrival_event_data.cr_handle;
	OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp));
	ASSERT_TRUE(!memcmp(crp.private_data, "rsp", 4));
	/* The CR names the RSP's EP; a PSP's CR names none. */
	ASSERT_TRUE(crp.local_ep_handle == s.ep);
	/* The RSP cannot go while its request waits. */
	ASSERT_DAT(dat_rsp_free(rsp), DAT_INVALID_STATE);
	/* Only the reserved EP may take it; the CR survives the refusal. */
	ASSERT_DAT(dat_cr_accept(cr, other, 0, NULL), DAT_INVALID_PARAMETER);
	/* A second requester on the spent RSP is refused. */
	OK(dat_ep_connect(c2.ep, (DAT_IA_ADDRESS_PTR)&pair_conf.peer, q, TMO, 0,
			  NULL, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
	OK(wait_event(c2.conn_evd, &ev));
	ASSERT_TRUE(ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED);
	OK(dat_cr_accept(cr, s.ep, 3, "ok"));
	expect_conn_event(_metadata, c.conn_evd,
			  DAT_CONNECTION_EVENT_ESTABLISHED, "ok");
	expect_conn_event(_metadata, s.conn_evd,
			  DAT_CONNECTION_EVENT_ESTABLISHED, NULL);
	/* The RSP went with its request. */
	ASSERT_DAT(dat_rsp_free(rsp), DAT_INVALID_HANDLE);
	OK(sides_close(&c, &c2));
	OK(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
}

TEST_F(kdat, test_connect_unreachable)
{
	struct sockaddr_in nobody = pair_conf.peer;
	struct side c;
	DAT_EVENT ev;

	OK(side_open(&c, NULL));
	/* Nothing listens on this qualifier: the peer's CM rejects. */
	OK(dat_ep_connect(c.ep, (DAT_IA_ADDRESS_PTR)&nobody, 65000, TMO, 0,
			  NULL, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
	OK(wait_event(c.conn_evd, &ev));
	ASSERT_TRUE(ev.event_number == DAT_CONNECTION_EVENT_NON_PEER_REJECTED ||
		    ev.event_number == DAT_CONNECTION_EVENT_UNREACHABLE);
	state_is(_metadata, c.ep, DAT_EP_STATE_DISCONNECTED);
	OK(dat_ia_close(c.ia, DAT_CLOSE_ABRUPT_FLAG));
}

/*
 * Connection qualifiers past 16 bits name an RDMA CM port as OFA DAPL's
 * cma provider folds them (its SID_TO_PORT): 33534 + qualifier % 32001.
 * Another qualifier on the same port is the same listener: taken by a
 * PSP, and reaching it from a connect.
 */
static DAT_CONN_QUAL ofa_port(DAT_CONN_QUAL q)
{
	return q < 65536 ? q : 65535 - 32001 + q % 32001;
}

TEST_F(kdat, test_conn_qual_wide)
{
	struct side c, s;
	DAT_CONN_QUAL q = ((DAT_CONN_QUAL)0xabcd << 32) | (getpid() * 16);
	DAT_PSP_HANDLE psp2;
	DAT_EVENT ev;
	int i;

	OK(side_open(&c, NULL));
	OK(side_open(&s, NULL));
	ASSERT_TRUE(ofa_port(q) >= 33534 && ofa_port(q) <= 65534);
	OK(dat_psp_create(s.ia, q, s.cr_evd, DAT_PSP_CONSUMER_FLAG, &s.psp));
	/* The same port by its 16-bit name, or by a larger one. */
	ASSERT_DAT(dat_psp_create(s.ia, ofa_port(q), s.cr_evd,
				  DAT_PSP_CONSUMER_FLAG, &psp2),
		   DAT_CONN_QUAL_IN_USE);
	ASSERT_DAT(dat_psp_create(s.ia, q + 32001 * 7, s.cr_evd,
				  DAT_PSP_CONSUMER_FLAG, &psp2),
		   DAT_CONN_QUAL_IN_USE);
	/* Its low 16 bits are another port (kdat used to take those). */
	if ((q & 0xffff) && (q & 0xffff) != ofa_port(q)) {
		OK(dat_psp_create(s.ia, q & 0xffff, s.cr_evd,
				  DAT_PSP_CONSUMER_FLAG, &psp2));
		OK(dat_psp_free(psp2));
	}
	/* Once by the qualifier, once by the port: the PSP's qualifier. */
	for (i = 0; i < 2; i++) {
		DAT_EP_HANDLE ep;
		DAT_EP_ATTR a = ep_attr();

		OK(dat_ep_connect(c.ep, (DAT_IA_ADDRESS_PTR)&pair_conf.peer,
				  i ? ofa_port(q) : q, TMO, 0, NULL,
				  DAT_QOS_BEST_EFFORT,
				  DAT_CONNECT_DEFAULT_FLAG));
		OK(wait_event(s.cr_evd, &ev));
		ASSERT_TRUE(ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
		ASSERT_TRUE(ev.event_data.cr_arrival_event_data.conn_qual == q);
		OK(dat_ep_create(s.ia, s.pz, s.dto_evd, s.dto_evd, s.conn_evd,
				 &a, &ep));
		OK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle,
				 ep, 0, NULL));
		expect_conn_event(_metadata, c.conn_evd,
				  DAT_CONNECTION_EVENT_ESTABLISHED, NULL);
		expect_conn_event(_metadata, s.conn_evd,
				  DAT_CONNECTION_EVENT_ESTABLISHED, NULL);
		OK(dat_ep_disconnect(c.ep, DAT_CLOSE_ABRUPT_FLAG));
		expect_conn_event(_metadata, c.conn_evd,
				  DAT_CONNECTION_EVENT_DISCONNECTED, NULL);
		expect_conn_event(_metadata, s.conn_evd,
				  DAT_CONNECTION_EVENT_DISCONNECTED, NULL);
		OK(dat_ep_free(ep));
		OK(dat_ep_reset(c.ep));
	}
	/* 0 would be the CM's "any port". */
	ASSERT_DAT(dat_psp_create(s.ia, 0, s.cr_evd, DAT_PSP_CONSUMER_FLAG,
				  &psp2), DAT_INVALID_PARAMETER);
	OK(sides_close(&c, &s));
}

/*
 * A case with its server in a child (kdat_fork()): the server's
 * qualifier, and the pipe on which it says "g" (ready), then what its
 * case has it say.
 */
struct child_server {
	DAT_CONN_QUAL q;
	int say;
};

/*
 * The child's side: open, 4 KiB registered at @b, listening; with
 * @recv_first, a receive of 64 bytes (cookie 0) posted first; "g" said;
 * then the client's request accepted and the connection established.
 */
static void child_server_accept(struct __test_metadata *_metadata,
				struct child_server *cs, struct side *s,
				struct buf *b, bool recv_first)
{
	DAT_LMR_TRIPLET r;
	DAT_EVENT ev;

	OK(side_open(s, NULL));
	OK(buf_reg(s, b, 4096, DAT_MEM_PRIV_ALL_FLAG));
	OK(dat_psp_create(s->ia, cs->q, s->cr_evd, DAT_PSP_CONSUMER_FLAG,
			  &s->psp));
	r = seg(b, 0, 64);
	if (recv_first)
		OK(dat_ep_post_recv(s->ep, 1, &r, cookie(0), 0));
	ASSERT_TRUE(write(cs->say, "g", 1) == 1);
	OK(wait_event(s->cr_evd, &ev));
	OK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, s->ep,
			 0, NULL));
	expect_conn_event(_metadata, s->conn_evd,
			  DAT_CONNECTION_EVENT_ESTABLISHED, NULL);
}

/*
 * The case's side: @fn forked as the server, and once it said "g", @c
 * open and connected to it. Returns the child's pid; *@hear is the pipe's
 * read end.
 */
static pid_t child_server_connect(struct __test_metadata *_metadata,
				  void (*fn)(struct __test_metadata *, void *),
				  struct child_server *cs, int *hear,
				  struct side *c)
{
	int say[2];
	pid_t pid;
	char x;

	ASSERT_TRUE(!pipe(say));
	cs->say = say[1];
	pid = kdat_fork(_metadata, fn, cs);
	ASSERT_TRUE(pid >= 0);
	close(say[1]);		/* a failed server: no byte, no wait */
	*hear = say[0];
	ASSERT_TRUE(read(say[0], &x, 1) == 1 && x == 'g');
	OK(side_open(c, NULL));
	OK(dat_ep_connect(c->ep, (DAT_IA_ADDRESS_PTR)&pair_conf.peer, cs->q,
			  TMO, 0, NULL, DAT_QOS_BEST_EFFORT,
			  DAT_CONNECT_DEFAULT_FLAG));
	expect_conn_event(_metadata, c->conn_evd,
			  DAT_CONNECTION_EVENT_ESTABLISHED, NULL);
	return pid;
}

/* The end: @c disconnected and closed, the child @pid exited 0. */
static void child_server_done(struct __test_metadata *_metadata,
			      struct side *c, int hear, pid_t pid)
{
	int status;

	OK(dat_ep_disconnect(c->ep, DAT_CLOSE_GRACEFUL_FLAG));
	expect_conn_event(_metadata, c->conn_evd,
			  DAT_CONNECTION_EVENT_DISCONNECTED, NULL);
	OK(dat_ia_close(c->ia, DAT_CLOSE_ABRUPT_FLAG));
	close(hear);
	ASSERT_TRUE(waitpid(pid, &status, 0) == pid);
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* test_two_processes' server: it echoes 100 messages. */
static void two_server(struct __test_metadata *_metadata, void *arg)
{
	struct side s;
	struct buf b;
	DAT_LMR_TRIPLET r;
	DAT_EVENT ev;
	int i;

	child_server_accept(_metadata, arg, &s, &b, true);
	r = seg(&b, 0, 64);
	for (i = 0; i < 100; i++) {
		DAT_LMR_TRIPLET t = seg(&b, 0, 8);

		/* Echo each message back, after reposting. */
		do {
			OK(wait_event(s.dto_evd, &ev));
		} while (ev.event_data.dto_completion_event_data.operation !=
			 DAT_DTO_RECEIVE);
		OK(dat_ep_post_recv(s.ep, 1, &r, cookie(i + 1), 0));
		OK(dat_ep_post_send(s.ep, 1, &t, cookie(1000 + i),
				    DAT_COMPLETION_SUPPRESS_FLAG));
	}
	expect_conn_event(_metadata, s.conn_evd,
			  DAT_CONNECTION_EVENT_DISCONNECTED, NULL);
}

/* Two processes: the server in a child, ping-pong of 100 messages. */
TEST_F(kdat, test_two_processes)
{
	struct child_server cs = { .q = new_qual() };
	struct side c;
	struct buf b, rb;
	DAT_LMR_TRIPLET t, r;
	int hear, i;
	pid_t pid;

	pid = child_server_connect(_metadata, two_server, &cs, &hear, &c);
	OK(buf_reg(&c, &b, 4096, DAT_MEM_PRIV_ALL_FLAG));
	OK(buf_reg(&c, &rb, 4096, DAT_MEM_PRIV_ALL_FLAG));
	t = seg(&b, 0, 8);
	r = seg(&rb, 0, 64);
	for (i = 0; i < 100; i++) {
		memcpy(b.p, &i, sizeof(i));
		OK(dat_ep_post_recv(c.ep, 1, &r, cookie(5000 + i), 0));
		OK(dat_ep_post_send(c.ep, 1, &t, cookie(i), 0));
		/*
		 * The echo may complete before the send's own ACK does: the
		 * two in either order.
		 */
		expect_dto_pair(_metadata, c.dto_evd, i, 5000 + i, 8);
		ASSERT_TRUE(!memcmp(rb.p, &i, sizeof(i)));
	}
	child_server_done(_metadata, &c, hear, pid);
}

#define POSTED_ROUNDS	300

/*
 * test_recv_posted_on_return's server: each round it posts one receive
 * and only then says "r" on the pipe, which RDMA does not order.
 */
static void posted_server(struct __test_metadata *_metadata, void *arg)
{
	struct child_server *cs = arg;
	DAT_LMR_TRIPLET r;
	struct side s;
	struct buf b;
	int i;

	child_server_accept(_metadata, cs, &s, &b, false);
	r = seg(&b, 0, 64);
	for (i = 0; i < POSTED_ROUNDS; i++) {
		OK(dat_ep_post_recv(s.ep, 1, &r, cookie(i), 0));
		ASSERT_TRUE(write(cs->say, "r", 1) == 1);
		expect_dto(_metadata, s.dto_evd, i, DAT_DTO_SUCCESS, 8);
	}
	expect_conn_event(_metadata, s.conn_evd,
			  DAT_CONNECTION_EVENT_DISCONNECTED, NULL);
}

/*
 * "The DAT_SUCCESS return of the dat_ep_post_recv() is at least the
 * equivalent of posting a Receive operation directly by native
 * Transport": a message sent after the post returned, by another process
 * told so outside RDMA, finds the receive. On iWARP a message that finds
 * none ends the connection (IB's RC waits for the RNR timer). Rounds of
 * one receive, one "posted" over a pipe, one send. A receive left on its
 * ring would fail this only when the poller came late (not seen in 4500
 * rounds over siw): ring_test's test_recv_ring_pinned shows the receive
 * taken by its post, every time.
 */
TEST_F(kdat, test_recv_posted_on_return)
{
	struct child_server cs = { .q = new_qual() };
	DAT_LMR_TRIPLET t;
	struct side c;
	struct buf b;
	int hear, i;
	pid_t pid;
	char x;

	pid = child_server_connect(_metadata, posted_server, &cs, &hear, &c);
	OK(buf_reg(&c, &b, 4096, DAT_MEM_PRIV_ALL_FLAG));
	t = seg(&b, 0, 8);
	for (i = 0; i < POSTED_ROUNDS; i++) {
		ASSERT_TRUE(read(hear, &x, 1) == 1 && x == 'r');
		OK(dat_ep_post_send(c.ep, 1, &t, cookie(1000 + i), 0));
		expect_dto(_metadata, c.dto_evd, 1000 + i, DAT_DTO_SUCCESS,
			   8);
	}
	child_server_done(_metadata, &c, hear, pid);
}

/* A graceful disconnect lets the requests in progress complete. */
TEST_F(kdat, test_graceful_disconnect)
{
	struct side c, s;
	struct buf b, rb;
	DAT_LMR_TRIPLET t, r;
	DAT_RETURN ret;
	int i;

	OK(sides_open(&c, &b, &s, &rb, 65536));
	r = seg(&rb, 0, 65536);
	t = seg(&b, 0, 65536);
	for (i = 0; i < 8; i++)
		OK(dat_ep_post_recv(s.ep, 1, &r, cookie(i), 0));
	for (i = 0; i < 8; i++)
		OK(dat_ep_post_send(c.ep, 1, &t, cookie(100 + i), 0));
	OK(dat_ep_disconnect(c.ep, DAT_CLOSE_GRACEFUL_FLAG));
	/*
	 * No new request once disconnecting: DISCONNECT_PENDING refuses it.
	 * The peer's answer (the CM's thread, not ours) may have made the EP
	 * DISCONNECTED already, where DAT accepts a send and flushes it at
	 * once. Either is right; which one is timing, so both are checked.
	 */
	ret = dat_ep_post_send(c.ep, 1, &t, cookie(1), 0);
	if (DAT_GET_TYPE(ret) == DAT_SUCCESS)
		state_is(_metadata, c.ep, DAT_EP_STATE_DISCONNECTED);
	else
		ASSERT_DAT(ret, DAT_INVALID_STATE);
	/* The requests in progress complete, in order, before the flush. */
	for (i = 0; i < 8; i++)
		expect_dto(_metadata, c.dto_evd, 100 + i, DAT_DTO_SUCCESS,
			   65536);
	if (DAT_GET_TYPE(ret) == DAT_SUCCESS)
		expect_dto(_metadata, c.dto_evd, 1, DAT_DTO_ERR_FLUSHED, -1);
	for (i = 0; i < 8; i++)
		expect_dto(_metadata, s.dto_evd, i, DAT_DTO_SUCCESS, 65536);
	expect_conn_event(_metadata, c.conn_evd,
			  DAT_CONNECTION_EVENT_DISCONNECTED, NULL);
	expect_conn_event(_metadata, s.conn_evd,
			  DAT_CONNECTION_EVENT_DISCONNECTED, NULL);
	/* DISCONNECTED now, whatever the timing: accepted and flushed. */
	OK(dat_ep_post_send(c.ep, 1, &t, cookie(2), 0));
	expect_dto(_metadata, c.dto_evd, 2, DAT_DTO_ERR_FLUSHED, -1);
	OK(sides_close(&c, &s));
}

/* The whole code, subtype included. */
#define ASSERT_DAT_FULL(expr, want)					\
	do {								\
		DAT_RETURN __r = (expr);				\
									\
		ASSERT_EQ((DAT_RETURN)(want), __r)			\
			TH_LOG("%s: got %#x, want %#x", #expr,		\
			       (unsigned int)__r, (unsigned int)(want)); \
	} while (0)

/*
 * Connect, disconnect and reset in each EP state that does not allow
 * them: DAT_INVALID_STATE with the subtype naming the state, as OFA's
 * provider answers; where the man pages make them no-ops (disconnecting
 * a DISCONNECTED EP, resetting an UNCONNECTED one), success.
 */
TEST_F(kdat, test_ep_state_errors)
{
	const DAT_RETURN st = DAT_CLASS_ERROR | DAT_INVALID_STATE;
	DAT_CONN_QUAL q = new_qual();
	DAT_IA_ADDRESS_PTR addr = (DAT_IA_ADDRESS_PTR)&pair_conf.peer;
	DAT_EP_ATTR a = ep_attr();
	DAT_RSP_HANDLE rsp;
	DAT_EP_HANDLE r;
	struct side c, s;
	int i;

	OK(side_open(&c, NULL));
	OK(side_open(&s, NULL));
	/* UNCONNECTED, never connected: both flags of disconnect. */
	state_is(_metadata, c.ep, DAT_EP_STATE_UNCONNECTED);
	ASSERT_DAT_FULL(dat_ep_disconnect(c.ep, DAT_CLOSE_ABRUPT_FLAG),
			st | DAT_INVALID_STATE_EP_UNCONNECTED);
	ASSERT_DAT_FULL(dat_ep_disconnect(c.ep, DAT_CLOSE_GRACEFUL_FLAG),
			st | DAT_INVALID_STATE_EP_UNCONNECTED);
	OK(dat_ep_reset(c.ep));
	state_is(_metadata, c.ep, DAT_EP_STATE_UNCONNECTED);

	/* RESERVED by an RSP. */
	OK(dat_ep_create(s.ia, s.pz, s.dto_evd, s.dto_evd, s.conn_evd, &a,
			 &r));
	OK(dat_rsp_create(s.ia, q, r, s.cr_evd, &rsp));
	state_is(_metadata, r, DAT_EP_STATE_RESERVED);
	ASSERT_DAT_FULL(dat_ep_connect(r, addr, new_qual(), TMO, 0, NULL,
				       DAT_QOS_BEST_EFFORT,
				       DAT_CONNECT_DEFAULT_FLAG),
			st | DAT_INVALID_STATE_EP_RESERVED);
	ASSERT_DAT_FULL(dat_ep_disconnect(r, DAT_CLOSE_ABRUPT_FLAG),
			st | DAT_INVALID_STATE_EP_RESERVED);
	ASSERT_DAT_FULL(dat_ep_reset(r), st | DAT_INVALID_STATE_EP_RESERVED);
	OK(dat_rsp_free(rsp));
	state_is(_metadata, r, DAT_EP_STATE_UNCONNECTED);

	/* CONNECTED, on both sides. */
	OK(connect_pair(&c, &s, false));
	for (i = 0; i < 2; i++) {
		DAT_EP_HANDLE ep = i ? s.ep : c.ep;

		ASSERT_DAT_FULL(dat_ep_connect(ep, addr, q, TMO, 0, NULL,
					       DAT_QOS_BEST_EFFORT,
					       DAT_CONNECT_DEFAULT_FLAG),
				st | DAT_INVALID_STATE_EP_CONNECTED);
		ASSERT_DAT_FULL(dat_ep_reset(ep),
				st | DAT_INVALID_STATE_EP_CONNECTED);
		state_is(_metadata, ep, DAT_EP_STATE_CONNECTED);
	}

	/* DISCONNECTED: disconnect again is nothing; reset works. */
	OK(dat_ep_disconnect(c.ep, DAT_CLOSE_ABRUPT_FLAG));
	expect_conn_event(_metadata, c.conn_evd,
			  DAT_CONNECTION_EVENT_DISCONNECTED, NULL);
	expect_conn_event(_metadata, s.conn_evd,
			  DAT_CONNECTION_EVENT_DISCONNECTED, NULL);
	OK(dat_ep_disconnect(c.ep, DAT_CLOSE_ABRUPT_FLAG));
	OK(dat_ep_disconnect(s.ep, DAT_CLOSE_GRACEFUL_FLAG));
	OK(dat_ep_reset(c.ep));
	state_is(_metadata, c.ep, DAT_EP_STATE_UNCONNECTED);
	/* And UNCONNECTED once more, after a connection. */
	ASSERT_DAT_FULL(dat_ep_disconnect(c.ep, DAT_CLOSE_ABRUPT_FLAG),
			st | DAT_INVALID_STATE_EP_UNCONNECTED);
	OK(sides_close(&c, &s));
}

/*
 * A reject's private data, kdat to kdat: the consumer sees exactly the
 * bytes the rejecting consumer gave (the version word on the wire is
 * not its; over IB the CM pads the rest with zeros), for 0 bytes to the
 * most a reject takes. A reject the CM makes (a full backlog) is
 * NON_PEER_REJECTED, with no data.
 */
TEST_F(kdat, test_reject_pdata)
{
	static const DAT_COUNT sizes[] = { 0, 1, 4, 5, 31, 56 };
	const DAT_CONNECTION_EVENT_DATA *d;
	unsigned char pd[64];
	struct side c, c2, s;
	DAT_CONN_QUAL q;
	DAT_EVD_HANDLE cr1;
	DAT_EVENT_NUMBER want;
	DAT_CR_HANDLE cr;
	DAT_EVENT ev;
	DAT_COUNT k;
	size_t i;

	OK(side_open(&c, NULL));
	OK(side_open(&s, NULL));
	q = new_qual();
	OK(dat_psp_create(s.ia, q, s.cr_evd, DAT_PSP_CONSUMER_FLAG, &s.psp));
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (k = 0; k < (DAT_COUNT)sizeof(pd); k++)
			pd[k] = (unsigned char)(0xa0 + i + k * 3);
		OK(dat_ep_connect(c.ep, (DAT_IA_ADDRESS_PTR)&pair_conf.peer, q,
				  TMO, 0, NULL, DAT_QOS_BEST_EFFORT,
				  DAT_CONNECT_DEFAULT_FLAG));
		OK(wait_event(s.cr_evd, &ev));
		ASSERT_TRUE(ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
		cr = ev.event_data.cr_arrival_event_data.cr_handle;
		OK(dat_cr_reject(cr, sizes[i], sizes[i] ? pd : NULL));
		OK(wait_event(c.conn_evd, &ev));
		ASSERT_EQ(DAT_CONNECTION_EVENT_PEER_REJECTED, ev.event_number)
			TH_LOG("reject of %d bytes: event %#x", sizes[i],
			       ev.event_number);
		d = &ev.event_data.connect_event_data;
		TH_LOG("reject of %d bytes: the requester sees %d",
		       sizes[i], d->private_data_size);
		if (sizes[i] && reject_pdata_lost(&ev))
			goto next;
		ASSERT_TRUE(d->private_data_size >= sizes[i]);
		ASSERT_TRUE(!sizes[i] || !memcmp(d->private_data, pd,
						 sizes[i]));
		for (k = sizes[i]; k < d->private_data_size; k++) {
			ASSERT_FALSE(((unsigned char *)d->private_data)[k])
				TH_LOG("reject of %d bytes: byte %d is %#x",
				       sizes[i], k,
				       ((unsigned char *)d->private_data)[k]);
		}
next:
		state_is(_metadata, c.ep, DAT_EP_STATE_DISCONNECTED);
		OK(dat_ep_reset(c.ep));
	}
	/* More than a reject takes. */
	OK(dat_ep_connect(c.ep, (DAT_IA_ADDRESS_PTR)&pair_conf.peer, q, TMO, 0,
			  NULL, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
	OK(wait_event(s.cr_evd, &ev));
	cr = ev.event_data.cr_arrival_event_data.cr_handle;
	ASSERT_DAT(dat_cr_reject(cr, 57, pd), DAT_INVALID_PARAMETER);
	OK(dat_cr_reject(cr, 0, NULL));
	expect_conn_event(_metadata, c.conn_evd,
			  DAT_CONNECTION_EVENT_PEER_REJECTED, NULL);
	OK(dat_ep_reset(c.ep));

	/*
	 * A PSP whose CR EVD holds one request: a second one, unanswered,
	 * is rejected by the CM, not by a consumer (siw's reject is a
	 * reset, the peer's to every iWARP reader: kdat_dev_reject_is_peers()).
	 */
	OK(side_open(&c2, NULL));
	q = new_qual();
	OK(dat_evd_create(s.ia, 1, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr1));
	OK(dat_psp_free(s.psp));
	OK(dat_psp_create(s.ia, q, cr1, DAT_PSP_CONSUMER_FLAG, &s.psp));
	OK(dat_ep_connect(c.ep, (DAT_IA_ADDRESS_PTR)&pair_conf.peer, q, TMO, 0,
			  NULL, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
	OK(wait_event(cr1, &ev));
	ASSERT_TRUE(ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
	cr = ev.event_data.cr_arrival_event_data.cr_handle;
	OK(dat_ep_connect(c2.ep, (DAT_IA_ADDRESS_PTR)&pair_conf.peer, q, TMO, 4,
			  "2nd", DAT_QOS_BEST_EFFORT,
			  DAT_CONNECT_DEFAULT_FLAG));
	OK(wait_event(c2.conn_evd, &ev));
	want = dev_iwarp(_metadata) ? DAT_CONNECTION_EVENT_PEER_REJECTED :
				      DAT_CONNECTION_EVENT_NON_PEER_REJECTED;
	ASSERT_EQ(want, ev.event_number)
		TH_LOG("over the backlog: event %#x", ev.event_number);
	ASSERT_TRUE(ev.event_data.connect_event_data.private_data_size == 0);
	/* The one it holds is still the consumer's to answer. */
	OK(dat_cr_reject(cr, 3, "no"));
	expect_conn_event(_metadata, c.conn_evd,
			  DAT_CONNECTION_EVENT_PEER_REJECTED, "no");
	OK(sides_close(&c, &c2));
	OK(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG));
}

/*
 * A connect given up (dat_ep_disconnect of an ACTIVE_CONNECTION_PENDING
 * EP) ends with one event, DISCONNECTED. The peer's later answer to the
 * request (a reject) brings no second one; the EP stays DISCONNECTED and
 * connects again after dat_ep_reset.
 */
TEST_F(kdat, test_connect_given_up_then_rejected)
{
	DAT_CONN_QUAL q = new_qual();
	struct side c, s;
	DAT_CR_HANDLE cr;
	DAT_EVENT ev;

	only_in_ring_mode(_metadata);
	OK(side_open(&c, NULL));
	OK(side_open(&s, NULL));
	OK(dat_psp_create(s.ia, q, s.cr_evd, DAT_PSP_CONSUMER_FLAG, &s.psp));
	OK(dat_ep_connect(c.ep, (DAT_IA_ADDRESS_PTR)&pair_conf.peer, q, TMO, 0,
			  NULL, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
	OK(wait_event(s.cr_evd, &ev));
	ASSERT_TRUE(ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
	cr = ev.event_data.cr_arrival_event_data.cr_handle;
	state_is(_metadata, c.ep, DAT_EP_STATE_ACTIVE_CONNECTION_PENDING);
	OK(dat_ep_disconnect(c.ep, DAT_CLOSE_ABRUPT_FLAG));
	expect_conn_event(_metadata, c.conn_evd,
			  DAT_CONNECTION_EVENT_DISCONNECTED, NULL);
	OK(dat_cr_reject(cr, 0, NULL));
	usleep(500 * 1000);	/* the REJ reaches the client's CM id */
	ASSERT_DAT(dat_evd_dequeue(c.conn_evd, &ev), DAT_QUEUE_EMPTY);
	state_is(_metadata, c.ep, DAT_EP_STATE_DISCONNECTED);
	OK(dat_ep_reset(c.ep));
	OK(dat_ep_connect(c.ep, (DAT_IA_ADDRESS_PTR)&pair_conf.peer, q, TMO, 0,
			  NULL, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
	OK(wait_event(s.cr_evd, &ev));
	OK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, s.ep,
			 0, NULL));
	expect_conn_event(_metadata, c.conn_evd,
			  DAT_CONNECTION_EVENT_ESTABLISHED, NULL);
	expect_conn_event(_metadata, s.conn_evd,
			  DAT_CONNECTION_EVENT_ESTABLISHED, NULL);
	OK(sides_close(&c, &s));
}

/*
 * dat_ep_dup_connect: a second EP to where the first one is connected. An
 * EP connected by an accept has no remote Service Point to connect to:
 * DAT_INVALID_PARAMETER, and nothing is started.
 */
TEST_F(kdat, test_dup_connect)
{
	struct side c, s;
	DAT_EP_HANDLE c2, c3, s2;
	DAT_EP_ATTR a = ep_attr();
	DAT_EVENT ev;

	OK(side_open(&c, NULL));
	OK(side_open(&s, NULL));
	OK(connect_pair(&c, &s, false));
	OK(dat_ep_create(c.ia, c.pz, c.dto_evd, c.dto_evd, c.conn_evd, &a,
			 &c2));
	OK(dat_ep_create(s.ia, s.pz, s.dto_evd, s.dto_evd, s.conn_evd, &a,
			 &s2));
	OK(dat_ep_dup_connect(c2, c.ep, TMO, 0, NULL, DAT_QOS_BEST_EFFORT));
	OK(wait_event(s.cr_evd, &ev));
	ASSERT_TRUE(ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
	OK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, s2, 0,
			 NULL));
	expect_conn_event(_metadata, c.conn_evd,
			  DAT_CONNECTION_EVENT_ESTABLISHED, NULL);
	expect_conn_event(_metadata, s.conn_evd,
			  DAT_CONNECTION_EVENT_ESTABLISHED, NULL);
	state_is(_metadata, c2, DAT_EP_STATE_CONNECTED);
	state_is(_metadata, s2, DAT_EP_STATE_CONNECTED);
	/* Not to an EP that is already connected. */
	ASSERT_DAT(dat_ep_dup_connect(c.ep, c2, TMO, 0, NULL,
				      DAT_QOS_BEST_EFFORT), DAT_INVALID_STATE);
	/* Not from one that accepted (s2, s.ep): no Service Point. */
	OK(dat_ep_create(c.ia, c.pz, c.dto_evd, c.dto_evd, c.conn_evd, &a,
			 &c3));
	ASSERT_DAT(dat_ep_dup_connect(c3, s2, TMO, 0, NULL,
				      DAT_QOS_BEST_EFFORT),
		   DAT_INVALID_PARAMETER);
	ASSERT_DAT(dat_ep_dup_connect(c3, s.ep, TMO, 0, NULL,
				      DAT_QOS_BEST_EFFORT),
		   DAT_INVALID_PARAMETER);
	state_is(_metadata, c3, DAT_EP_STATE_UNCONNECTED);
	/* From one that was itself duplicated: to the same PSP. */
	OK(dat_ep_dup_connect(c3, c2, TMO, 0, NULL, DAT_QOS_BEST_EFFORT));
	OK(wait_event(s.cr_evd, &ev));
	ASSERT_TRUE(ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
	OK(dat_cr_reject(ev.event_data.cr_arrival_event_data.cr_handle, 0,
			 NULL));
	expect_conn_event(_metadata, c.conn_evd,
			  DAT_CONNECTION_EVENT_PEER_REJECTED, NULL);
	ASSERT_DAT(dat_evd_dequeue(c.conn_evd, &ev), DAT_QUEUE_EMPTY);
	OK(sides_close(&c, &s));
}
