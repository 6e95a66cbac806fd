// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * kdat-demo IA_NAME IP: two DAT endpoints, in this process, connected over
 * the IA's device to its own address; then a ping-pong (latency), a stream
 * of sends and of RDMA writes (bandwidth) and of small sends (message
 * rate), printed as a table. A plain DAT 2.0 program: it runs on any
 * provider libdat is (or OFA's registry points at), on any RDMA device.
 */
#include <getopt.h>
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

#include "kdat_tool.h"

#define TMO (10 * 1000 * 1000)
#define QD 64			/* DTOs in flight for the streams */
#define BUF (1 << 20)

struct side {
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE aevd, dto, conn, cr;
	DAT_PZ_HANDLE pz;
	DAT_EP_HANDLE ep;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lctx;
	DAT_RMR_CONTEXT rctx;
	unsigned char *buf;
};

static void check(DAT_RETURN r, const char *what)
{
	const char *major = "?", *minor = "";

	if (r == DAT_SUCCESS)
		return;
	dat_strerror(r, &major, &minor);
	fprintf(stderr, "kdat-demo: %s: %s %s\n", what, major, minor);
	exit(1);
}

static void side_open(struct side *s, char *name)
{
	DAT_EP_ATTR a = {
		.service_type = DAT_SERVICE_TYPE_RC,
		/* Receives left over by one test stay for the next. */
		.max_recv_dtos = 2 * QD, .max_request_dtos = QD,
		.max_recv_iov = 1, .max_request_iov = 1,
		.max_rdma_read_in = 4, .max_rdma_read_out = 4,
	};
	DAT_REGION_DESCRIPTION r;
	DAT_VLEN len;
	DAT_VADDR va;

	s->aevd = DAT_HANDLE_NULL;
	check(dat_ia_open(name, 8, &s->aevd, &s->ia), "dat_ia_open");
	check(dat_pz_create(s->ia, &s->pz), "dat_pz_create");
	check(dat_evd_create(s->ia, 3 * QD, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
			     &s->dto), "dat_evd_create");
	check(dat_evd_create(s->ia, 4, DAT_HANDLE_NULL,
			     DAT_EVD_CONNECTION_FLAG, &s->conn),
	      "dat_evd_create");
	check(dat_evd_create(s->ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG,
			     &s->cr), "dat_evd_create");
	check(dat_ep_create(s->ia, s->pz, s->dto, s->dto, s->conn, &a, &s->ep),
	      "dat_ep_create");
	s->buf = mmap(NULL, BUF, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->buf == MAP_FAILED)
		exit(1);
	memset(s->buf, 0, BUF);
	r.for_va = s->buf;
	check(dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, r, BUF, s->pz,
			     DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &s->lmr,
			     &s->lctx, &s->rctx, &len, &va), "dat_lmr_create");
}

static DAT_EVENT next(DAT_EVD_HANDLE evd)
{
	DAT_EVENT ev;
	DAT_COUNT nmore;

	check(dat_evd_wait(evd, TMO, 1, &ev, &nmore), "dat_evd_wait");
	if (ev.event_number == DAT_DTO_COMPLETION_EVENT &&
	    ev.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) {
		fprintf(stderr, "kdat-demo: DTO failed, status %d\n",
			ev.event_data.dto_completion_event_data.status);
		exit(1);
	}
	return ev;
}

/* Receives take the whole buffer: any message of any test fits. */
static DAT_LMR_TRIPLET iov(struct side *s, size_t len)
{
	DAT_LMR_TRIPLET t = {
		.virtual_address = (uintptr_t)s->buf,
		.segment_length = len,
		.lmr_context = s->lctx,
	};

	return t;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const DAT_DTO_COOKIE ck;

/* Round trips of @len-byte messages: half the round trip, in us. */
static double ping_pong(struct side *a, struct side *b, size_t len, int n)
{
	DAT_LMR_TRIPLET ta = iov(a, len), tb = iov(b, len);
	DAT_LMR_TRIPLET ra = iov(a, BUF), rb = iov(b, BUF);
	double t0;
	int i;

	check(dat_ep_post_recv(a->ep, 1, &ra, ck, 0), "post_recv");
	check(dat_ep_post_recv(b->ep, 1, &rb, ck, 0), "post_recv");
	t0 = now();
	for (i = 0; i < n; i++) {
		check(dat_ep_post_send(a->ep, 1, &ta, ck,
				       DAT_COMPLETION_SUPPRESS_FLAG), "send");
		next(b->dto);
		check(dat_ep_post_recv(b->ep, 1, &rb, ck, 0), "post_recv");
		check(dat_ep_post_send(b->ep, 1, &tb, ck,
				       DAT_COMPLETION_SUPPRESS_FLAG), "send");
		next(a->dto);
		check(dat_ep_post_recv(a->ep, 1, &ra, ck, 0), "post_recv");
	}
	return (now() - t0) / n / 2 * 1e6;
}

/* @n sends (or RDMA writes) of @len bytes, QD in flight: seconds. */
static double stream(struct side *a, struct side *b, size_t len, int n,
		     int rdma)
{
	DAT_LMR_TRIPLET ta = iov(a, len), tb = iov(b, BUF);
	DAT_RMR_TRIPLET rem = {
		.virtual_address = (uintptr_t)b->buf,
		.segment_length = len,
		.rmr_context = b->rctx,
	};
	int posted = 0, done = 0, recvs = 0, i;
	double t0;

	if (!rdma)
		for (i = 0; i < QD && i < n; i++, recvs++)
			check(dat_ep_post_recv(b->ep, 1, &tb, ck, 0), "recv");
	t0 = now();
	while (done < n) {
		while (posted < n && posted - done < QD) {
			if (rdma)
				check(dat_ep_post_rdma_write(a->ep, 1, &ta, ck,
							     &rem, 0), "write");
			else
				check(dat_ep_post_send(a->ep, 1, &ta, ck, 0),
				      "send");
			posted++;
		}
		next(a->dto);
		done++;
		if (!rdma) {
			next(b->dto);
			if (recvs < n) {
				check(dat_ep_post_recv(b->ep, 1, &tb, ck, 0),
				      "recv");
				recvs++;
			}
		}
	}
	return now() - t0;
}

static const char usage[] =
	"usage: kdat-demo [-h|--help] [-V|--version] IA_NAME IPV4_OF_THE_IA\n"
	"  Two Endpoints of IA_NAME (DEVICE:PORT, DEVICE or kdat-DEVICE-PORT)\n"
	"  connected to the IA's own IPv4 address: latency, bandwidth and\n"
	"  message rate, as a table. kdat-info lists ports and addresses.\n";

int main(int argc, char **argv)
{
	static const struct option longopts[] = { KDAT_TOOL_LONGOPTS, {} };
	struct sockaddr_in addr = { .sin_family = AF_INET };
	struct side a, b;
	DAT_PSP_HANDLE psp;
	DAT_EVENT ev;
	double t;
	int n, c;

	while ((c = getopt_long(argc, argv, "hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'V':
			kdat_tool_version("kdat-demo");
			break;
		default:
			kdat_tool_bad_option(usage);
		}
	}
	argc -= optind - 1;
	argv += optind - 1;
	if (argc != 3)
		kdat_tool_usage_error("kdat-demo", usage,
				      "wants an IA name and its IPv4 address");
	if (inet_pton(AF_INET, argv[2], &addr.sin_addr) != 1)
		kdat_tool_usage_error("kdat-demo", usage,
				      "%s: not an IPv4 address", argv[2]);
	side_open(&a, argv[1]);
	side_open(&b, argv[1]);
	check(dat_psp_create(b.ia, 7471, b.cr, DAT_PSP_CONSUMER_FLAG, &psp),
	      "dat_psp_create");
	check(dat_ep_connect(a.ep, (DAT_IA_ADDRESS_PTR)&addr, 7471, TMO, 0,
			     NULL, DAT_QOS_BEST_EFFORT,
			     DAT_CONNECT_DEFAULT_FLAG), "dat_ep_connect");
	ev = next(b.cr);
	check(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle,
			    b.ep, 0, NULL), "dat_cr_accept");
	if (next(a.conn).event_number != DAT_CONNECTION_EVENT_ESTABLISHED ||
	    next(b.conn).event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
		fprintf(stderr, "kdat-demo: no connection\n");
		return 1;
	}

	printf("kdat-demo: two DAT endpoints on %s, connected to %s\n",
	       argv[1], argv[2]);
	printf("%-34s %14s\n", "test", "result");
	printf("%-34s %11.1f us\n", "ping-pong 64 B, half round trip",
	       ping_pong(&a, &b, 64, 1000));
	printf("%-34s %11.1f us\n", "ping-pong 4 KiB, half round trip",
	       ping_pong(&a, &b, 4096, 500));
	n = 200;
	t = stream(&a, &b, 65536, n, 0);
	printf("%-34s %9.1f MB/s\n", "send 64 KiB stream, depth 64",
	       n * 65536.0 / t / 1e6);
	t = stream(&a, &b, 65536, n, 1);
	printf("%-34s %9.1f MB/s\n", "RDMA write 64 KiB stream, depth 64",
	       n * 65536.0 / t / 1e6);
	n = 5000;
	t = stream(&a, &b, 64, n, 0);
	printf("%-34s %10.0f /s\n", "send 64 B message rate, depth 64",
	       n / t);

	check(dat_ep_disconnect(a.ep, DAT_CLOSE_GRACEFUL_FLAG), "disconnect");
	next(a.conn);
	check(dat_ia_close(a.ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
	check(dat_ia_close(b.ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
	return 0;
}
