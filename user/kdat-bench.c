// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * kdat-bench IA_NAME IP rate SIZE DEPTH COUNT
 * kdat-bench IA_NAME IP lat SIZE COUNT
 * kdat-bench IA_NAME server [CONN_QUAL]
 * kdat-bench IA_NAME client IP [CONN_QUAL] rate SIZE DEPTH COUNT
 * kdat-bench IA_NAME client IP [CONN_QUAL] lat SIZE COUNT
 *
 * Two DAT endpoints in this process, connected over the IA's device to its
 * own address. "rate": COUNT sends of SIZE bytes from one to the other,
 * DEPTH in flight, completions reaped by polling dat_evd_dequeue. "lat":
 * COUNT ping-pongs of SIZE bytes, polling. A plain DAT 2.0 program; run by
 * scripts/bench, which also counts its system calls (strace) between the
 * two getppid() calls that bracket the measured loop, after a warm-up.
 *
 * With "server" and "client" the two endpoints are in two processes, on
 * two hosts or one: the server listens on CONN_QUAL (default 7473) and
 * serves one client, whose connect tells it the test; it keeps its
 * receives posted (rate) or answers each ping (lat) and exits when the
 * client has done.
 *
 * KDAT_BENCH_WAIT=1: completions are waited for (dat_evd_wait) instead.
 *
 * Prints one line: "rate <msgs/s> ops <n> posted <n> reaped <n>" or
 * "lat <half round trip, us> ops <n> posted <n> reaped <n>" (the server:
 * "served <n> ops posted <n> reaped <n>").
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <dat2/udat.h>

#define TMO (10 * 1000 * 1000)
#define MAXQD 256

struct side {
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE aevd, dto, conn, cr;
	DAT_PZ_HANDLE pz;
	DAT_EP_HANDLE ep;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lctx;
	unsigned char *buf;
};

static long posted, reaped;

static void check(DAT_RETURN r, const char *what)
{
	const char *major = "?", *minor = "";

	if (r == DAT_SUCCESS)
		return;
	dat_strerror(r, &major, &minor);
	fprintf(stderr, "kdat-bench: %s: %s %s\n", what, major, minor);
	exit(1);
}

static void side_open(struct side *s, char *name)
{
	DAT_EP_ATTR a = {
		.service_type = DAT_SERVICE_TYPE_RC,
		.max_recv_dtos = 2 * MAXQD, .max_request_dtos = MAXQD,
		.max_recv_iov = 1, .max_request_iov = 1,
		.max_rdma_read_in = 1, .max_rdma_read_out = 1,
	};
	DAT_REGION_DESCRIPTION r;
	DAT_RMR_CONTEXT rctx;
	DAT_VLEN len;
	DAT_VADDR va;

	s->aevd = DAT_HANDLE_NULL;
	check(dat_ia_open(name, 8, &s->aevd, &s->ia), "dat_ia_open");
	check(dat_pz_create(s->ia, &s->pz), "dat_pz_create");
	check(dat_evd_create(s->ia, 4 * MAXQD, NULL, DAT_EVD_DTO_FLAG,
			     &s->dto), "dat_evd_create");
	check(dat_evd_create(s->ia, 8, NULL, DAT_EVD_CONNECTION_FLAG,
			     &s->conn), "dat_evd_create");
	check(dat_evd_create(s->ia, 8, NULL, DAT_EVD_CR_FLAG, &s->cr),
	      "dat_evd_create");
	check(dat_ep_create(s->ia, s->pz, s->dto, s->dto, s->conn, &a, &s->ep),
	      "dat_ep_create");
	s->buf = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->buf == MAP_FAILED)
		exit(1);
	r.for_va = s->buf;
	check(dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, r, 1 << 20, s->pz,
			     DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &s->lmr,
			     &s->lctx, &rctx, &len, &va), "dat_lmr_create");
}

static DAT_EVENT wait_ev(DAT_EVD_HANDLE evd)
{
	DAT_EVENT ev;
	DAT_COUNT n;

	check(dat_evd_wait(evd, TMO, 1, &ev, &n), "dat_evd_wait");
	return ev;
}

/*
 * Reap one DTO completion by polling (no wait: the data path), or, with
 * KDAT_BENCH_WAIT=1 in the environment, with dat_evd_wait (what a
 * program that blocks sees).
 */
static int wait_reap = -1;

static void reap(DAT_EVD_HANDLE evd)
{
	DAT_EVENT ev;
	DAT_COUNT n;
	DAT_RETURN r;

	if (wait_reap < 0) {
		const char *e = getenv("KDAT_BENCH_WAIT");

		wait_reap = e && atoi(e) > 0;
	}
	if (wait_reap)
		r = dat_evd_wait(evd, TMO, 1, &ev, &n);
	else
		do
			r = dat_evd_dequeue(evd, &ev);
		while (DAT_GET_TYPE(r) == DAT_QUEUE_EMPTY);
	check(r, wait_reap ? "dat_evd_wait" : "dat_evd_dequeue");
	if (ev.event_number != DAT_DTO_COMPLETION_EVENT ||
	    ev.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) {
		fprintf(stderr, "kdat-bench: bad completion %#x\n",
			ev.event_number);
		exit(1);
	}
	reaped++;
}

static DAT_LMR_TRIPLET seg(struct side *s, size_t len)
{
	DAT_LMR_TRIPLET t = {
		.lmr_context = s->lctx,
		.virtual_address = (uintptr_t)s->buf,
		.segment_length = len,
	};

	return t;
}

static const DAT_DTO_COOKIE ck;

static void post_recv(struct side *s)
{
	DAT_LMR_TRIPLET t = seg(s, 1 << 20);

	check(dat_ep_post_recv(s->ep, 1, &t, ck, 0), "post_recv");
	posted++;
}

static void post_send_flags(struct side *s, size_t len,
			    DAT_COMPLETION_FLAGS flags)
{
	DAT_LMR_TRIPLET t = seg(s, len);

	check(dat_ep_post_send(s->ep, 1, &t, ck, flags), "post_send");
	posted++;
}

static void post_send(struct side *s, size_t len)
{
	post_send_flags(s, len, DAT_COMPLETION_DEFAULT_FLAG);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* @n sends a -> b, @qd in flight; b keeps its receives posted. */
static void rate(struct side *a, struct side *b, size_t len, int qd, long n)
{
	long sent = 0, done = 0;

	while (done < n) {
		while (sent < n && sent - done < qd) {
			post_send(a, len);
			sent++;
		}
		reap(a->dto);
		reap(b->dto);
		post_recv(b);
		done++;
	}
}

/*
 * The sends' completions are suppressed (as the server's pong, and as
 * perftest's ib_send_lat leaves its sends unsignalled): each side answers
 * as soon as its receive completes, not after its last send is acked.
 */
static void pingpong(struct side *a, struct side *b, size_t len, long n)
{
	long i;

	for (i = 0; i < n; i++) {
		post_send_flags(a, len, DAT_COMPLETION_SUPPRESS_FLAG);
		reap(b->dto);
		post_recv(b);
		post_send_flags(b, len, DAT_COMPLETION_SUPPRESS_FLAG);
		reap(a->dto);
		post_recv(a);
	}
}

/* The client's connect private data: the test the server is to serve. */
struct bench_req {
	uint32_t magic;		/* 'kdbn' */
	uint32_t lat;		/* 1: ping-pong; 0: rate */
	uint32_t len, qd;
	uint64_t n;		/* warm-up included */
};

#define BENCH_MAGIC	0x6b64626eU
#define BENCH_QUAL	7473

/* One side of a connection: only its own queue is this process's. */
static void serve_rate(struct side *b, size_t len, long n)
{
	long i;

	(void)len;
	for (i = 0; i < n; i++) {
		reap(b->dto);
		post_recv(b);
	}
}

static void serve_lat(struct side *b, size_t len, long n)
{
	long i;

	/*
	 * The pong's completion is suppressed: every event here is a ping,
	 * whatever the order in which a send's and a receive's completions
	 * reach the one EVD.
	 */
	for (i = 0; i < n; i++) {
		reap(b->dto);
		post_recv(b);
		post_send_flags(b, len, DAT_COMPLETION_SUPPRESS_FLAG);
	}
}

static void client_rate(struct side *a, size_t len, int qd, long n)
{
	long sent = 0, done = 0;

	while (done < n) {
		while (sent < n && sent - done < qd) {
			post_send(a, len);
			sent++;
		}
		reap(a->dto);
		done++;
	}
}

static void client_lat(struct side *a, size_t len, long n)
{
	long i;

	for (i = 0; i < n; i++) {
		post_send_flags(a, len, DAT_COMPLETION_SUPPRESS_FLAG);
		reap(a->dto);		/* the pong */
		post_recv(a);
	}
}

static int server_main(char *ia, DAT_CONN_QUAL qual)
{
	struct side b;
	struct bench_req req;
	DAT_CR_PARAM crp;
	DAT_PSP_HANDLE psp;
	DAT_CR_HANDLE cr;
	DAT_EVENT ev;
	long i, n;

	side_open(&b, ia);
	check(dat_psp_create(b.ia, qual, b.cr, DAT_PSP_CONSUMER_FLAG, &psp),
	      "dat_psp_create");
	printf("listening on %llu\n", (unsigned long long)qual);
	fflush(stdout);
	ev = wait_ev(b.cr);
	cr = ev.event_data.cr_arrival_event_data.cr_handle;
	check(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp), "dat_cr_query");
	if (crp.private_data_size < (DAT_COUNT)sizeof(req))
		goto refuse;
	memcpy(&req, crp.private_data, sizeof(req));
	if (req.magic != BENCH_MAGIC || req.len > (1 << 20) || !req.qd ||
	    req.qd > MAXQD || !req.n)
		goto refuse;
	n = (long)req.n;
	/*
	 * Receives before the accept: for a rate, as many as the EP takes
	 * (perftest's ib_send_bw keeps 512), so that a repost that comes
	 * late never has a send wait for the RNR timer.
	 */
	for (i = 0; i < (req.lat ? 1 : 2 * MAXQD); i++)
		post_recv(&b);
	check(dat_cr_accept(cr, b.ep, 0, NULL), "dat_cr_accept");
	if (wait_ev(b.conn).event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
		return 1;
	if (req.lat)
		serve_lat(&b, req.len, n);
	else
		serve_rate(&b, req.len, n);
	printf("served %ld ops posted %ld reaped %ld\n", n, posted, reaped);
	/* The client disconnects when it has its last completion. */
	ev = wait_ev(b.conn);
	check(dat_ia_close(b.ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
	return ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED ? 0 : 1;
refuse:
	fprintf(stderr, "kdat-bench: not a kdat-bench client\n");
	check(dat_cr_reject(cr, 0, NULL), "dat_cr_reject");
	return 1;
}

static int client_main(char *ia, char **argv, int argc)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	struct bench_req req = { .magic = BENCH_MAGIC, .qd = 1 };
	DAT_CONN_QUAL qual = BENCH_QUAL;
	struct side a;
	long n, warm;
	double t;
	int k = 1;

	if (argc < 2 || inet_pton(AF_INET, argv[0], &addr.sin_addr) != 1)
		return 2;
	if (strcmp(argv[1], "rate") && strcmp(argv[1], "lat")) {
		qual = strtoull(argv[1], NULL, 0);
		k = 2;
	}
	if (argc - k == 4 && !strcmp(argv[k], "rate")) {
		req.qd = atoi(argv[k + 2]);
		n = atol(argv[k + 3]);
	} else if (argc - k == 3 && !strcmp(argv[k], "lat")) {
		req.lat = 1;
		n = atol(argv[k + 2]);
	} else {
		return 2;
	}
	req.len = strtoul(argv[k + 1], NULL, 0);
	if (req.qd < 1 || req.qd > MAXQD || n < 1 || req.len > (1 << 20))
		return 2;
	warm = n / 10 + 1;
	req.n = warm + n;
	side_open(&a, ia);
	if (req.lat)
		post_recv(&a);
	check(dat_ep_connect(a.ep, (DAT_IA_ADDRESS_PTR)&addr, qual, TMO,
			     sizeof(req), &req, DAT_QOS_BEST_EFFORT,
			     DAT_CONNECT_DEFAULT_FLAG), "dat_ep_connect");
	if (wait_ev(a.conn).event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
		fprintf(stderr, "kdat-bench: the server refused\n");
		return 1;
	}
	if (req.lat)
		client_lat(&a, req.len, warm);
	else
		client_rate(&a, req.len, req.qd, warm);
	posted = reaped = 0;
	t = now();
	getppid();		/* marker: the measured loop starts */
	if (req.lat)
		client_lat(&a, req.len, n);
	else
		client_rate(&a, req.len, req.qd, n);
	getppid();		/* marker: it ends */
	t = now() - t;
	if (req.lat)
		printf("lat %.2f ops %ld posted %ld reaped %ld\n",
		       t / n / 2 * 1e6, n, posted, reaped);
	else
		printf("rate %.0f ops %ld posted %ld reaped %ld\n", n / t, n,
		       posted, reaped);
	check(dat_ep_disconnect(a.ep, DAT_CLOSE_GRACEFUL_FLAG),
	      "dat_ep_disconnect");
	wait_ev(a.conn);
	check(dat_ia_close(a.ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	struct side a, b;
	DAT_PSP_HANDLE psp;
	DAT_EVENT ev;
	long n, warm, i;
	size_t len;
	int qd = 1;
	double t;

	if (argc >= 3 && !strcmp(argv[2], "server"))
		return server_main(argv[1], argc > 3 ?
				   strtoull(argv[3], NULL, 0) : BENCH_QUAL);
	if (argc >= 3 && !strcmp(argv[2], "client")) {
		int r = client_main(argv[1], argv + 3, argc - 3);

		if (r == 2)
			fprintf(stderr, "usage: %s IA client IP [QUAL] rate SIZE DEPTH COUNT\n"
				"       %s IA client IP [QUAL] lat SIZE COUNT\n",
				argv[0], argv[0]);
		return r;
	}
	if (argc < 6 || inet_pton(AF_INET, argv[2], &addr.sin_addr) != 1 ||
	    (strcmp(argv[3], "rate") && strcmp(argv[3], "lat")) ||
	    (!strcmp(argv[3], "rate") && argc != 7)) {
		fprintf(stderr, "usage: %s IA IP rate SIZE DEPTH COUNT\n"
			"       %s IA IP lat SIZE COUNT\n"
			"       %s IA server [QUAL]\n"
			"       %s IA client IP [QUAL] rate|lat ...\n",
			argv[0], argv[0], argv[0], argv[0]);
		return 2;
	}
	len = strtoul(argv[4], NULL, 0);
	if (!strcmp(argv[3], "rate")) {
		qd = atoi(argv[5]);
		n = atol(argv[6]);
	} else {
		n = atol(argv[5]);
	}
	if (qd < 1 || qd > MAXQD || n < 1 || len > (1 << 20))
		return 2;
	side_open(&a, argv[1]);
	side_open(&b, argv[1]);
	check(dat_psp_create(b.ia, 7472, b.cr, DAT_PSP_CONSUMER_FLAG, &psp),
	      "dat_psp_create");
	check(dat_ep_connect(a.ep, (DAT_IA_ADDRESS_PTR)&addr, 7472, TMO, 0,
			     NULL, DAT_QOS_BEST_EFFORT,
			     DAT_CONNECT_DEFAULT_FLAG), "dat_ep_connect");
	ev = wait_ev(b.cr);
	check(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle,
			    b.ep, 0, NULL), "dat_cr_accept");
	if (wait_ev(a.conn).event_number != DAT_CONNECTION_EVENT_ESTABLISHED ||
	    wait_ev(b.conn).event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
		return 1;
	for (i = 0; i < qd; i++)
		post_recv(&b);
	post_recv(&a);

	warm = n / 10 + 1;
	if (!strcmp(argv[3], "rate"))
		rate(&a, &b, len, qd, warm);
	else
		pingpong(&a, &b, len, warm);
	posted = reaped = 0;
	/* The markers hold the loop alone: not even the clock's reads. */
	t = now();
	getppid();		/* marker: the measured loop starts */
	if (!strcmp(argv[3], "rate"))
		rate(&a, &b, len, qd, n);
	else
		pingpong(&a, &b, len, n);
	getppid();		/* marker: it ends */
	t = now() - t;
	if (!strcmp(argv[3], "rate"))
		printf("rate %.0f ops %ld posted %ld reaped %ld\n", n / t, n,
		       posted, reaped);
	else
		printf("lat %.2f ops %ld posted %ld reaped %ld\n",
		       t / n / 2 * 1e6, n, posted, reaped);
	check(dat_ia_close(a.ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
	check(dat_ia_close(b.ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
	return 0;
}
