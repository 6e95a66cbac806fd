// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * dat_xfer: a checked transfer between two hosts over one DAT RC
 * connection, and what a connection does when its peer goes away.
 *
 *   dat_xfer IA server QUAL
 *   dat_xfer IA client IP QUAL BYTES MSG DEPTH send|write
 *   dat_xfer IA client IP QUAL SECONDS MSG DEPTH until-broken
 *
 * The client sends BYTES (a multiple of MSG) as messages of MSG bytes,
 * DEPTH in flight: "send" as DAT sends into the server's receives;
 * "write" as RDMA writes into a ring of DEPTH slots the server advertised
 * in its accept, each followed by an 8-byte send that names the slot.
 * Every byte of message k is a function of k and its offset: the server
 * checks each one and each message's length and order, and answers each
 * with an 8-byte credit, so that nothing waits on a receive that is not
 * there. "until-broken" sends for up to SECONDS and stops at the first
 * DTO that fails or connection event that ends the connection: it
 * reports the DTO status, the connection event, the EP's state, and the
 * time from the last completion that succeeded to that event. The server
 * serves one connection, then exits.
 *
 * Prints "dat_xfer: ..." lines; exits 0 when everything was as it should.
 * A plain DAT 2.0 program: -ldat, so that dat.conf picks the provider.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <dat2/udat.h>

#define TMO_US		(30 * 1000 * 1000)
#define MAX_DEPTH	64
#define CREDIT		8		/* bytes of a credit or slot notice */
#define MAGIC		0x6b646174787a6572ULL

/* The client's request, in the connect private data (host order). */
struct xfer_req {
	uint64_t magic;
	uint64_t msgs;		/* 0: until the connection breaks */
	uint32_t msg;		/* bytes per message */
	uint32_t depth;
	uint32_t write;		/* RDMA write mode */
	uint32_t pad;
};

/* The server's answer, in the accept private data: its write ring. */
struct xfer_rep {
	uint64_t magic;
	uint64_t addr;
	uint32_t rmr_context;
	uint32_t pad;
};

struct side {
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE aevd, dto, conn, cr;
	DAT_PZ_HANDLE pz;
	DAT_EP_HANDLE ep;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lctx;
	DAT_RMR_CONTEXT rctx;
	unsigned char *buf;	/* DEPTH message slots, then the credits */
	size_t len;
};

static void die(DAT_RETURN r, const char *what)
{
	const char *major = "?", *minor = "";

	dat_strerror(r, &major, &minor);
	fprintf(stderr, "dat_xfer: %s: %s %s\n", what, major, minor);
	exit(1);
}

#define OK(call) do {						\
	DAT_RETURN r_ = (call);					\
	if (r_ != DAT_SUCCESS)					\
		die(r_, #call);					\
} while (0)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *conn_name(DAT_EVENT_NUMBER n)
{
	switch (n) {
	case DAT_CONNECTION_EVENT_ESTABLISHED: return "ESTABLISHED";
	case DAT_CONNECTION_EVENT_DISCONNECTED: return "DISCONNECTED";
	case DAT_CONNECTION_EVENT_BROKEN: return "BROKEN";
	case DAT_CONNECTION_EVENT_TIMED_OUT: return "TIMED_OUT";
	case DAT_CONNECTION_EVENT_UNREACHABLE: return "UNREACHABLE";
	case DAT_CONNECTION_EVENT_PEER_REJECTED: return "PEER_REJECTED";
	case DAT_CONNECTION_EVENT_NON_PEER_REJECTED: return "NON_PEER_REJECTED";
	default: return "other";
	}
}

static const char *state_name(DAT_EP_STATE s)
{
	switch (s) {
	case DAT_EP_STATE_CONNECTED: return "CONNECTED";
	case DAT_EP_STATE_DISCONNECTED: return "DISCONNECTED";
	case DAT_EP_STATE_DISCONNECT_PENDING: return "DISCONNECT_PENDING";
	default: return "other";
	}
}

/* Word @j of message @k. */
static uint64_t word(uint64_t k, uint64_t j)
{
	return (k + 1) * 0x9e3779b97f4a7c15ULL ^ (j + 1) * 0xc2b2ae3d27d4eb4fULL;
}

static void fill(unsigned char *p, size_t len, uint64_t k)
{
	uint64_t w;
	size_t j;

	for (j = 0; j < len; j += 8) {
		w = word(k, j / 8);
		memcpy(p + j, &w, len - j < 8 ? len - j : 8);
	}
}

/* The bytes of @p that are not message @k's. */
static uint64_t bad_bytes(const unsigned char *p, size_t len, uint64_t k)
{
	uint64_t bad = 0, w;
	size_t j, i, n;

	for (j = 0; j < len; j += 8) {
		w = word(k, j / 8);
		n = len - j < 8 ? len - j : 8;
		if (!memcmp(p + j, &w, n))
			continue;
		for (i = 0; i < n; i++)
			bad += p[j + i] != ((unsigned char *)&w)[i];
	}
	return bad;
}

static void side_ia(struct side *s, char *name)
{
	memset(s, 0, sizeof(*s));
	s->aevd = DAT_HANDLE_NULL;
	OK(dat_ia_open(name, 8, &s->aevd, &s->ia));
	OK(dat_pz_create(s->ia, &s->pz));
	OK(dat_evd_create(s->ia, 4 * MAX_DEPTH + 8, NULL, DAT_EVD_DTO_FLAG,
			  &s->dto));
	OK(dat_evd_create(s->ia, 8, NULL, DAT_EVD_CONNECTION_FLAG, &s->conn));
	OK(dat_evd_create(s->ia, 8, NULL, DAT_EVD_CR_FLAG, &s->cr));
}

/* The EP, and DEPTH message slots and 2 x DEPTH credits registered. */
static void side_ep(struct side *s, size_t msg, unsigned int depth)
{
	DAT_EP_ATTR a = {
		.service_type = DAT_SERVICE_TYPE_RC,
		.max_recv_dtos = depth + 1, .max_request_dtos = 2 * depth + 1,
		.max_recv_iov = 1, .max_request_iov = 1,
		.max_rdma_read_in = 1, .max_rdma_read_out = 1,
	};
	DAT_REGION_DESCRIPTION r;
	DAT_VLEN rlen;
	DAT_VADDR va;

	OK(dat_ep_create(s->ia, s->pz, s->dto, s->dto, s->conn, &a, &s->ep));
	s->len = (size_t)depth * msg + 2 * depth * CREDIT;
	s->buf = mmap(NULL, s->len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->buf == MAP_FAILED) {
		perror("dat_xfer: mmap");
		exit(1);
	}
	r.for_va = s->buf;
	OK(dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, r, s->len, s->pz,
			  DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &s->lmr,
			  &s->lctx, &s->rctx, &rlen, &va));
}

static DAT_LMR_TRIPLET seg(struct side *s, size_t off, size_t len)
{
	DAT_LMR_TRIPLET t = {
		.lmr_context = s->lctx,
		.virtual_address = (uintptr_t)s->buf + off,
		.segment_length = len,
	};

	return t;
}

static DAT_DTO_COOKIE ck(uint64_t v)
{
	DAT_DTO_COOKIE c = { .as_64 = v };

	return c;
}

/* Cookies: what a completion was. */
#define CK_MSG		(1ULL << 62)	/* a message (send, write, notice) */
#define CK_CREDIT	(2ULL << 62)	/* a credit sent or received */
#define CK_RECV		(1ULL << 61)	/* a receive */
#define CK_IDX(c)	((c) & ((1ULL << 61) - 1))

static void wait_conn(struct side *s, DAT_EVENT_NUMBER want,
		      DAT_EVENT *ev)
{
	DAT_COUNT n;

	OK(dat_evd_wait(s->conn, TMO_US, 1, ev, &n));
	if (ev->event_number != want) {
		fprintf(stderr, "dat_xfer: connection event %s, want %s\n",
			conn_name(ev->event_number), conn_name(want));
		exit(1);
	}
}

static int serve(char *ia, DAT_CONN_QUAL qual)
{
	struct xfer_req req;
	struct xfer_rep rep = { .magic = MAGIC };
	uint64_t got = 0, bad = 0, disorder = 0, badlen = 0, i;
	struct side s;
	DAT_PSP_HANDLE psp;
	DAT_CR_PARAM crp;
	DAT_CR_HANDLE cr;
	DAT_LMR_TRIPLET t;
	DAT_EVENT ev;
	DAT_COUNT n;
	size_t msg, ring;
	unsigned int depth;
	double t0;
	int rc = 0;

	/* The EP and its memory are sized by the request. */
	side_ia(&s, ia);
	OK(dat_psp_create(s.ia, qual, s.cr, DAT_PSP_CONSUMER_FLAG, &psp));
	printf("dat_xfer: server listening on %" PRIu64 "\n", (uint64_t)qual);
	fflush(stdout);
	OK(dat_evd_wait(s.cr, DAT_TIMEOUT_INFINITE, 1, &ev, &n));
	cr = ev.event_data.cr_arrival_event_data.cr_handle;
	OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp));
	if (crp.private_data_size < (DAT_COUNT)sizeof(req)) {
		fprintf(stderr, "dat_xfer: a request without its parameters\n");
		return 1;
	}
	memcpy(&req, crp.private_data, sizeof(req));
	if (req.magic != MAGIC || !req.depth || req.depth > MAX_DEPTH ||
	    req.msg < CREDIT || req.msg > (1 << 20) || req.msg % 8) {
		fprintf(stderr, "dat_xfer: a request not understood\n");
		return 1;
	}
	msg = req.msg;
	depth = req.depth;
	ring = (size_t)depth * msg;
	side_ep(&s, msg, depth);
	rep.addr = (uintptr_t)s.buf;
	rep.rmr_context = s.rctx;
	/* Write mode: the receives take the slot notices only. */
	for (i = 0; i < depth; i++) {
		t = req.write ? seg(&s, ring + i * CREDIT, CREDIT) :
				seg(&s, i * msg, msg);
		OK(dat_ep_post_recv(s.ep, 1, &t, ck(CK_RECV | i),
				    DAT_COMPLETION_DEFAULT_FLAG));
	}
	OK(dat_cr_accept(cr, s.ep, sizeof(rep), &rep));
	wait_conn(&s, DAT_CONNECTION_EVENT_ESTABLISHED, &ev);
	t0 = now();
	while (!req.msgs || got < req.msgs) {
		const DAT_DTO_COMPLETION_EVENT_DATA *d;
		uint64_t slot, k;
		unsigned char *p;

		if (dat_evd_dequeue(s.conn, &ev) == DAT_SUCCESS) {
			printf("dat_xfer: server: connection event %s after %" PRIu64 " messages\n",
			       conn_name(ev.event_number), got);
			rc = req.msgs ? 1 : 0;
			goto out;
		}
		if (dat_evd_wait(s.dto, 1000 * 1000, 1, &ev, &n) != DAT_SUCCESS)
			continue;
		d = &ev.event_data.dto_completion_event_data;
		if (d->status != DAT_DTO_SUCCESS) {
			printf("dat_xfer: server: DTO status %d after %" PRIu64 " messages\n",
			       d->status, got);
			rc = req.msgs ? 1 : 0;
			goto out;
		}
		if (!(d->user_cookie.as_64 & CK_RECV))
			continue;	/* a credit went out */
		slot = CK_IDX(d->user_cookie.as_64);
		if (req.write) {
			memcpy(&k, s.buf + ring + slot * CREDIT, sizeof(k));
			if (d->transfered_length != CREDIT)
				badlen++;
			p = s.buf + (k % depth) * msg;
		} else {
			k = got;
			if (d->transfered_length != msg)
				badlen++;
			p = s.buf + slot * msg;
		}
		if (k != got)
			disorder++;
		bad += bad_bytes(p, msg, k);
		got++;
		t = req.write ? seg(&s, ring + slot * CREDIT, CREDIT) :
				seg(&s, slot * msg, msg);
		OK(dat_ep_post_recv(s.ep, 1, &t, ck(CK_RECV | slot),
				    DAT_COMPLETION_DEFAULT_FLAG));
		/* The credit: this slot is free again. */
		t = seg(&s, ring + depth * CREDIT + (got % depth) * CREDIT,
			CREDIT);
		memcpy(s.buf + ring + depth * CREDIT + (got % depth) * CREDIT,
		       &k, sizeof(k));
		OK(dat_ep_post_send(s.ep, 1, &t, ck(CK_CREDIT | got),
				    DAT_COMPLETION_DEFAULT_FLAG));
	}
	printf("dat_xfer: server: messages %" PRIu64 " bytes %" PRIu64
	       " bad_bytes %" PRIu64 " bad_lengths %" PRIu64
	       " out_of_order %" PRIu64 " seconds %.2f MB/s %.2f\n",
	       got, got * msg, bad, badlen, disorder, now() - t0,
	       got * msg / (now() - t0) / 1e6);
	rc = bad || badlen || disorder;
	/* The client disconnects once it has every credit. */
	OK(dat_evd_wait(s.conn, TMO_US, 1, &ev, &n));
out:
	fflush(stdout);
	dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG);
	return rc;
}

static int client(char *ia, const char *ip, DAT_CONN_QUAL qual,
		  uint64_t amount, size_t msg, unsigned int depth,
		  const char *mode)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(qual) };
	int until = !strcmp(mode, "until-broken");
	struct xfer_req req = {
		.magic = MAGIC, .msg = msg, .depth = depth,
		.write = !strcmp(mode, "write"),
	};
	uint64_t sent = 0, acked = 0, done = 0, i;
	double t0, last_ok, deadline;
	struct xfer_rep rep;
	DAT_RMR_TRIPLET rem;
	DAT_LMR_TRIPLET t;
	DAT_EP_STATE st;
	DAT_EVENT ev;
	DAT_COUNT n;
	struct side c;
	size_t ring = (size_t)depth * msg;
	int status = DAT_DTO_SUCCESS;
	const char *why = NULL;

	if (inet_pton(AF_INET, ip, &sin.sin_addr) != 1)
		return 2;
	req.msgs = until ? 0 : amount / msg;
	side_ia(&c, ia);
	side_ep(&c, msg, depth);
	for (i = 0; i < depth; i++) {
		t = seg(&c, ring + i * CREDIT, CREDIT);
		OK(dat_ep_post_recv(c.ep, 1, &t, ck(CK_RECV | CK_CREDIT | i),
				    DAT_COMPLETION_DEFAULT_FLAG));
	}
	OK(dat_ep_connect(c.ep, (DAT_IA_ADDRESS_PTR)&sin, qual, TMO_US,
			  sizeof(req), &req, DAT_QOS_BEST_EFFORT,
			  DAT_CONNECT_DEFAULT_FLAG));
	wait_conn(&c, DAT_CONNECTION_EVENT_ESTABLISHED, &ev);
	if (ev.event_data.connect_event_data.private_data_size <
	    (DAT_COUNT)sizeof(rep)) {
		fprintf(stderr, "dat_xfer: the accept had no ring\n");
		return 1;
	}
	memcpy(&rep, ev.event_data.connect_event_data.private_data,
	       sizeof(rep));
	t0 = last_ok = now();
	deadline = t0 + (until ? (double)amount : 1e9);
	while (until || acked < req.msgs) {
		const DAT_DTO_COMPLETION_EVENT_DATA *d;

		/*
		 * A message's slot is free when the server's credit for it
		 * came, its send queue entries when its own send completed:
		 * under loss the credit can come first.
		 */
		while ((until || sent < req.msgs) && sent - acked < depth &&
		       sent - done < depth && now() < deadline) {
			size_t off = (sent % depth) * msg;

			fill(c.buf + off, msg, sent);
			t = seg(&c, off, msg);
			if (req.write) {
				rem.rmr_context = rep.rmr_context;
				rem.virtual_address = rep.addr + off;
				rem.segment_length = msg;
				OK(dat_ep_post_rdma_write(c.ep, 1, &t,
					ck(CK_MSG | sent), &rem,
					DAT_COMPLETION_SUPPRESS_FLAG));
				memcpy(c.buf + ring + depth * CREDIT +
				       (sent % depth) * CREDIT, &sent, 8);
				t = seg(&c, ring + depth * CREDIT +
					(sent % depth) * CREDIT, CREDIT);
			}
			OK(dat_ep_post_send(c.ep, 1, &t, ck(CK_MSG | sent),
					    DAT_COMPLETION_DEFAULT_FLAG));
			sent++;
		}
		if (until && now() >= deadline && acked == sent)
			break;
		if (dat_evd_dequeue(c.conn, &ev) == DAT_SUCCESS) {
			why = conn_name(ev.event_number);
			break;
		}
		if (dat_evd_wait(c.dto, 200 * 1000, 1, &ev, &n) !=
		    DAT_SUCCESS) {
			if (now() - last_ok > 120) {
				why = "nothing for 120 s";
				break;
			}
			continue;
		}
		d = &ev.event_data.dto_completion_event_data;
		if (d->status != DAT_DTO_SUCCESS) {
			status = d->status;
			break;
		}
		last_ok = now();
		if ((d->user_cookie.as_64 & (CK_RECV | CK_MSG)) == CK_MSG)
			done++;
		if ((d->user_cookie.as_64 & (CK_RECV | CK_CREDIT)) ==
		    (CK_RECV | CK_CREDIT)) {
			acked++;
			t = seg(&c, ring + CK_IDX(d->user_cookie.as_64) *
				CREDIT, CREDIT);
			OK(dat_ep_post_recv(c.ep, 1, &t, d->user_cookie,
					    DAT_COMPLETION_DEFAULT_FLAG));
		}
	}
	if (!until && acked == req.msgs && status == DAT_DTO_SUCCESS &&
	    !why) {
		double secs = now() - t0;

		printf("dat_xfer: client: messages %" PRIu64 " bytes %" PRIu64
		       " seconds %.2f MB/s %.2f\n", acked, acked * msg, secs,
		       acked * msg / secs / 1e6);
		OK(dat_ep_disconnect(c.ep, DAT_CLOSE_GRACEFUL_FLAG));
		wait_conn(&c, DAT_CONNECTION_EVENT_DISCONNECTED, &ev);
		dat_ia_close(c.ia, DAT_CLOSE_ABRUPT_FLAG);
		return 0;
	}
	if (until && !why && status == DAT_DTO_SUCCESS) {
		printf("dat_xfer: client: %" PRIu64 " messages in %.0f s, the connection held\n",
		       acked, amount * 1.0);
		dat_ia_close(c.ia, DAT_CLOSE_ABRUPT_FLAG);
		return 3;
	}
	/* It ended: the DTO's status, then the connection event. */
	if (!why) {
		if (dat_evd_wait(c.conn, TMO_US, 1, &ev, &n) == DAT_SUCCESS)
			why = conn_name(ev.event_number);
		else
			why = "none in 30 s";
	}
	OK(dat_ep_get_status(c.ep, &st, NULL, NULL));
	printf("dat_xfer: client: after %" PRIu64 " messages: DTO status %d, connection event %s %.3f s after the last success, EP %s\n",
	       acked, status, why, now() - last_ok, state_name(st));
	dat_ia_close(c.ia, DAT_CLOSE_ABRUPT_FLAG);
	return until ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[2], "server"))
		return serve(argv[1], strtoull(argv[3], NULL, 0));
	if (argc == 9 && !strcmp(argv[2], "client") &&
	    (!strcmp(argv[8], "send") || !strcmp(argv[8], "write") ||
	     !strcmp(argv[8], "until-broken"))) {
		uint64_t amount = strtoull(argv[5], NULL, 0);
		size_t msg = strtoul(argv[6], NULL, 0);
		unsigned int depth = strtoul(argv[7], NULL, 0);

		if (msg < CREDIT || msg > (1 << 20) || msg % 8 || !depth ||
		    depth > MAX_DEPTH || !amount ||
		    (strcmp(argv[8], "until-broken") && amount % msg)) {
			fprintf(stderr, "dat_xfer: MSG 8..1 MiB, a multiple of 8; DEPTH 1..%d; BYTES a multiple of MSG\n",
				MAX_DEPTH);
			return 2;
		}
		return client(argv[1], argv[3], strtoull(argv[4], NULL, 0),
			      amount, msg, depth, argv[8]);
	}
	fprintf(stderr,
		"usage: %s IA server QUAL\n"
		"       %s IA client IP QUAL BYTES MSG DEPTH send|write\n"
		"       %s IA client IP QUAL SECONDS MSG DEPTH until-broken\n",
		argv[0], argv[0], argv[0]);
	return 2;
}
