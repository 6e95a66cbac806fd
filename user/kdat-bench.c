// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * kdat-bench IA_NAME IP rate SIZE DEPTH COUNT
 * kdat-bench IA_NAME IP lat SIZE COUNT
 *
 * Two DAT endpoints in this process, connected over the IA's device to its
 * own address. "rate": COUNT sends of SIZE bytes from one to the other,
 * DEPTH in flight, completions reaped by polling dat_evd_dequeue. "lat":
 * COUNT ping-pongs of SIZE bytes, polling. A plain DAT 2.0 program; run by
 * scripts/bench, which also counts its system calls (strace) between the
 * two getppid() calls that bracket the measured loop, after a warm-up.
 *
 * Prints one line: "rate <msgs/s> ops <n> posted <n> reaped <n>" or
 * "lat <half round trip, us> ops <n> posted <n> reaped <n>".
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

/* Reap one DTO completion by polling (no wait: the data path). */
static void reap(DAT_EVD_HANDLE evd)
{
	DAT_EVENT ev;
	DAT_RETURN r;

	while ((r = dat_evd_dequeue(evd, &ev)) == DAT_QUEUE_EMPTY)
		;
	check(r, "dat_evd_dequeue");
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

static void post_send(struct side *s, size_t len)
{
	DAT_LMR_TRIPLET t = seg(s, len);

	check(dat_ep_post_send(s->ep, 1, &t, ck, 0), "post_send");
	posted++;
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

static void pingpong(struct side *a, struct side *b, size_t len, long n)
{
	long i;

	for (i = 0; i < n; i++) {
		post_send(a, len);
		reap(b->dto);
		post_recv(b);
		post_send(b, len);
		reap(a->dto);
		post_recv(a);
		reap(a->dto);	/* the two send completions */
		reap(b->dto);
	}
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

	if (argc < 6 || inet_pton(AF_INET, argv[2], &addr.sin_addr) != 1 ||
	    (strcmp(argv[3], "rate") && strcmp(argv[3], "lat")) ||
	    (!strcmp(argv[3], "rate") && argc != 7)) {
		fprintf(stderr, "usage: %s IA IP rate SIZE DEPTH COUNT\n"
			"       %s IA IP lat SIZE COUNT\n", argv[0], argv[0]);
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
	getppid();		/* marker: the measured loop starts */
	t = now();
	if (!strcmp(argv[3], "rate"))
		rate(&a, &b, len, qd, n);
	else
		pingpong(&a, &b, len, n);
	t = now() - t;
	getppid();		/* marker: it ends */
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
