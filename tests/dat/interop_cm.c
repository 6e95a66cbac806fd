// SPDX-License-Identifier: GPL-2.0
/*
 * Two DAT providers in one process, through OFA's DAT registry (linked
 * with -ldat2, as Debian's dtest and dapltest are): one IA of each, named
 * in the dat.conf that DAT_OVERRIDE points at, connected to each other
 * over the wire, and every byte that crosses checked (TAP).
 *
 *   interop_cm CLIENT_IA SERVER_IA SERVER_IP
 *       the client connects to the server with private data, the server
 *       accepts with private data; sends and receives (1 B, 4 KiB, 1 MiB,
 *       up to 4 segments), RDMA writes and reads (1 MiB, several reads
 *       outstanding, the two EPs asking for different read depths), both
 *       ways; disconnect; then two connects the server rejects, with
 *       private data and with none. The qualifier is above 65535: both
 *       providers must fold it into the same RDMA CM port.
 *   interop_cm -q IA
 *       open IA, print the provider-specific attributes that say which
 *       port it is on ("DAT_IB_DEVICE_NAME=rxe0" ...), close it; then the
 *       same through dat_ib_open_query, each line prefixed "oq.".
 *
 * tests/dat/interop.sh runs it over kdat and OFA's cma provider, each as
 * client and as server.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>

#include <dat2/udat.h>
#include <dat2/dat_ib_extensions.h>

#define TMO	(20 * 1000 * 1000)	/* 20 s per event, in microseconds */
#define MIB	(1 << 20)
#define BUFSZ	(4 * MIB)	/* per side: [0,1M) source, [1M,2M) target,
				 * [2M,3M) read back */
#define PDATA	56		/* the most a request takes, on both */

struct side {
	char *name;
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async_evd, dto_evd, conn_evd, cr_evd;
	DAT_PZ_HANDLE pz;
	DAT_EP_HANDLE ep;
	DAT_PSP_HANDLE psp;
	unsigned char *buf;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lctx;
	DAT_RMR_CONTEXT rctx;
};

static struct side cli, srv;
static struct sockaddr_in srv_addr;
static DAT_CONN_QUAL qual;
static int tap_n;
static bool failed;

/* A failed check: say what, and the phase fails. */
#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			printf("# %s:%d: ", __FILE__, __LINE__);	\
			printf(__VA_ARGS__);				\
			printf("\n");					\
			return -1;					\
		}							\
	} while (0)
#define DAT_OK(expr)							\
	do {								\
		DAT_RETURN __r = (expr);				\
		CHECK(__r == DAT_SUCCESS, "%s: %#x", #expr,		\
		      (unsigned int)__r);				\
	} while (0)

static void phase(const char *what, int (*fn)(void))
{
	tap_n++;
	if (failed) {
		printf("ok %d %s # SKIP an earlier phase failed\n", tap_n,
		       what);
	} else if (fn()) {
		printf("not ok %d %s\n", tap_n, what);
		failed = true;
	} else {
		printf("ok %d %s\n", tap_n, what);
	}
	fflush(stdout);
}

static int wait_ev(DAT_EVD_HANDLE evd, DAT_EVENT *ev, const char *what)
{
	DAT_COUNT nmore;
	DAT_RETURN r;

	r = dat_evd_wait(evd, TMO, 1, ev, &nmore);
	CHECK(r == DAT_SUCCESS, "waiting for %s: %#x", what, (unsigned int)r);
	return 0;
}

static int wait_conn(struct side *s, DAT_EVENT_NUMBER want, DAT_EVENT *ev)
{
	if (wait_ev(s->conn_evd, ev, "a connection event"))
		return -1;
	CHECK(ev->event_number == want, "%s: connection event %#x, want %#x",
	      s->name, ev->event_number, want);
	return 0;
}

/* The DTO completion of cookie @ck, successful, of @len bytes. */
static int wait_dto(struct side *s, uint64_t ck, DAT_COUNT len)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *d;
	DAT_EVENT ev;

	if (wait_ev(s->dto_evd, &ev, "a DTO"))
		return -1;
	d = &ev.event_data.dto_completion_event_data;
	CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT &&
	      d->status == DAT_DTO_SUCCESS && d->user_cookie.as_64 == ck &&
	      (len < 0 || d->transfered_length == (DAT_SEG_LENGTH)len),
	      "%s: event %#x status %d cookie %llu len %u, want cookie %llu "
	      "len %d", s->name, ev.event_number, d->status,
	      (unsigned long long)d->user_cookie.as_64, d->transfered_length,
	      (unsigned long long)ck, len);
	return 0;
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

static DAT_DTO_COOKIE cookie(uint64_t v)
{
	DAT_DTO_COOKIE c = { .as_64 = v };

	return c;
}

static void pattern(unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(seed + i * 131 + (i >> 8));
}

/* A fresh EP on @s asking for @rd_in/@rd_out RDMA reads. */
static int ep_new(struct side *s, DAT_COUNT rd_in, DAT_COUNT rd_out)
{
	DAT_EP_ATTR a = {
		.service_type = DAT_SERVICE_TYPE_RC,
		.max_message_size = 2 * MIB,
		.max_rdma_size = 2 * MIB,
		.qos = DAT_QOS_BEST_EFFORT,
		.max_recv_dtos = 32,
		.max_request_dtos = 32,
		.max_recv_iov = 4,
		.max_request_iov = 4,
		.max_rdma_read_in = rd_in,
		.max_rdma_read_out = rd_out,
		.max_rdma_read_iov = 4,
		.max_rdma_write_iov = 4,
	};

	DAT_OK(dat_ep_create(s->ia, s->pz, s->dto_evd, s->dto_evd,
			     s->conn_evd, &a, &s->ep));
	return 0;
}

static int side_open(struct side *s)
{
	DAT_REGION_DESCRIPTION r;
	DAT_VADDR raddr;
	DAT_VLEN rlen;

	s->async_evd = DAT_HANDLE_NULL;
	DAT_OK(dat_ia_open(s->name, 8, &s->async_evd, &s->ia));
	DAT_OK(dat_pz_create(s->ia, &s->pz));
	DAT_OK(dat_evd_create(s->ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
			      &s->dto_evd));
	DAT_OK(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL,
			      DAT_EVD_CONNECTION_FLAG, &s->conn_evd));
	DAT_OK(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG,
			      &s->cr_evd));
	s->buf = mmap(NULL, BUFSZ, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(s->buf != MAP_FAILED, "mmap");
	r.for_va = s->buf;
	DAT_OK(dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, r, BUFSZ, s->pz,
			      DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &s->lmr,
			      &s->lctx, &s->rctx, &rlen, &raddr));
	return 0;
}

static int do_open(void)
{
	if (side_open(&cli) || side_open(&srv))
		return -1;
	/*
	 * Different read depths: the accept must settle on the smaller of
	 * each pair, or one side sends more reads at once than the other
	 * takes (the client asks 2 out, the server offers 4 in).
	 */
	return ep_new(&cli, 8, 2) || ep_new(&srv, 4, 1);
}

/* A connection request from the client; its CR at the server. */
static int request(DAT_CR_HANDLE *cr, const unsigned char *pd)
{
	DAT_CR_PARAM crp;
	DAT_EVENT ev;

	DAT_OK(dat_ep_connect(cli.ep, (DAT_IA_ADDRESS_PTR)&srv_addr, qual, TMO,
			      PDATA, (DAT_PVOID)pd, DAT_QOS_BEST_EFFORT,
			      DAT_CONNECT_DEFAULT_FLAG));
	if (wait_ev(srv.cr_evd, &ev, "the connection request"))
		return -1;
	CHECK(ev.event_number == DAT_CONNECTION_REQUEST_EVENT,
	      "server: event %#x", ev.event_number);
	CHECK(ev.event_data.cr_arrival_event_data.conn_qual == qual,
	      "request on qualifier %#llx, want %#llx",
	      (unsigned long long)ev.event_data.cr_arrival_event_data.conn_qual,
	      (unsigned long long)qual);
	*cr = ev.event_data.cr_arrival_event_data.cr_handle;
	DAT_OK(dat_cr_query(*cr, DAT_CR_FIELD_ALL, &crp));
	CHECK(crp.private_data_size >= PDATA &&
	      !memcmp(crp.private_data, pd, PDATA),
	      "request private data: %d bytes, not the client's",
	      crp.private_data_size);
	return 0;
}

static int do_connect(void)
{
	unsigned char req[PDATA], rep[PDATA];
	const DAT_CONNECTION_EVENT_DATA *d;
	DAT_CR_HANDLE cr;
	DAT_EVENT ev;

	pattern(req, PDATA, 1);
	pattern(rep, PDATA, 2);
	DAT_OK(dat_psp_create(srv.ia, qual, srv.cr_evd, DAT_PSP_CONSUMER_FLAG,
			      &srv.psp));
	if (request(&cr, req))
		return -1;
	DAT_OK(dat_cr_accept(cr, srv.ep, PDATA, rep));
	if (wait_conn(&cli, DAT_CONNECTION_EVENT_ESTABLISHED, &ev))
		return -1;
	d = &ev.event_data.connect_event_data;
	CHECK(d->private_data_size >= PDATA &&
	      !memcmp(d->private_data, rep, PDATA),
	      "accept private data: %d bytes, not the server's",
	      d->private_data_size);
	return wait_conn(&srv, DAT_CONNECTION_EVENT_ESTABLISHED, &ev);
}

/* @len bytes from @from to @to in up to 4 segments each, checked. */
static int send_one(struct side *from, struct side *to, size_t len,
		    unsigned int seed)
{
	DAT_LMR_TRIPLET t[4], r[4];
	size_t n = len >= 4096 ? (len >= MIB ? 4 : 2) : 1, i;

	pattern(from->buf, len, seed);
	memset(to->buf + MIB, 0, MIB);
	for (i = 0; i < n; i++) {
		t[i] = seg(from, i * (len / n), len / n);
		r[i] = seg(to, MIB + i * (len / n), len / n);
	}
	DAT_OK(dat_ep_post_recv(to->ep, n, r, cookie(seed), 0));
	DAT_OK(dat_ep_post_send(from->ep, n, t, cookie(seed + 1), 0));
	if (wait_dto(from, seed + 1, len) || wait_dto(to, seed, len))
		return -1;
	CHECK(!memcmp(to->buf + MIB, from->buf, len),
	      "%s -> %s: %zu bytes received differ", from->name, to->name,
	      len);
	return 0;
}

static int do_send(void)
{
	static const size_t sizes[] = { 1, 4096, MIB };
	unsigned int i;

	for (i = 0; i < 3; i++)
		if (send_one(&cli, &srv, sizes[i], 10 + i) ||
		    send_one(&srv, &cli, sizes[i], 20 + i))
			return -1;
	return 0;
}

static DAT_RMR_TRIPLET remote(struct side *s, size_t off, size_t len)
{
	DAT_RMR_TRIPLET r = {
		.rmr_context = s->rctx,
		.virtual_address = (uintptr_t)s->buf + off,
		.segment_length = len,
	};

	return r;
}

static int write_one(struct side *from, struct side *to, unsigned int seed)
{
	DAT_LMR_TRIPLET t[4];
	DAT_RMR_TRIPLET rem = remote(to, MIB, MIB);
	int i;

	pattern(from->buf, MIB, seed);
	memset(to->buf + MIB, 0, MIB);
	for (i = 0; i < 4; i++)
		t[i] = seg(from, i * (MIB / 4), MIB / 4);
	DAT_OK(dat_ep_post_rdma_write(from->ep, 4, t, cookie(seed), &rem, 0));
	/* RC: the write completes once the target has acknowledged it. */
	if (wait_dto(from, seed, MIB))
		return -1;
	CHECK(!memcmp(to->buf + MIB, from->buf, MIB),
	      "RDMA write %s -> %s: the target differs", from->name,
	      to->name);
	return 0;
}

static int do_write(void)
{
	return write_one(&cli, &srv, 30) || write_one(&srv, &cli, 40);
}

/* @n RDMA reads of @len bytes each outstanding at once, from @peer. */
static int read_many(struct side *s, struct side *peer, int n, size_t len,
		     unsigned int seed)
{
	DAT_LMR_TRIPLET t;
	DAT_RMR_TRIPLET rem;
	int i;

	pattern(peer->buf + MIB, n * len, seed);
	memset(s->buf + 2 * MIB, 0, MIB);
	for (i = 0; i < n; i++) {
		t = seg(s, 2 * MIB + i * len, len);
		rem = remote(peer, MIB + i * len, len);
		DAT_OK(dat_ep_post_rdma_read(s->ep, 1, &t, cookie(seed + i),
					     &rem, 0));
	}
	for (i = 0; i < n; i++)
		if (wait_dto(s, seed + i, len))
			return -1;
	CHECK(!memcmp(s->buf + 2 * MIB, peer->buf + MIB, n * len),
	      "RDMA read %s <- %s: what was read differs", s->name,
	      peer->name);
	return 0;
}

static int do_read(void)
{
	DAT_EP_PARAM p;

	DAT_OK(dat_ep_query(cli.ep, DAT_EP_FIELD_ALL, &p));
	printf("# RDMA reads out: %s %d, %s 1 asked\n", cli.name,
	       p.ep_attr.max_rdma_read_out, srv.name);
	/* More than each EP asked for: the QP holds the rest back. */
	return read_many(&cli, &srv, 8, MIB / 8, 50) ||
	       read_many(&srv, &cli, 4, MIB / 4, 60);
}

static int do_disconnect(void)
{
	DAT_EVENT ev;

	DAT_OK(dat_ep_disconnect(cli.ep, DAT_CLOSE_GRACEFUL_FLAG));
	if (wait_conn(&cli, DAT_CONNECTION_EVENT_DISCONNECTED, &ev) ||
	    wait_conn(&srv, DAT_CONNECTION_EVENT_DISCONNECTED, &ev))
		return -1;
	DAT_OK(dat_ep_free(cli.ep));
	return ep_new(&cli, 8, 2);
}

/* The server rejects with @len bytes: the client sees exactly them. */
static int reject_one(DAT_COUNT len)
{
	const DAT_CONNECTION_EVENT_DATA *d;
	unsigned char req[PDATA], rej[PDATA];
	DAT_CR_HANDLE cr;
	DAT_EVENT ev;

	pattern(req, PDATA, 3);
	pattern(rej, PDATA, 4 + len);
	if (request(&cr, req))
		return -1;
	DAT_OK(dat_cr_reject(cr, len, len ? rej : NULL));
	if (wait_conn(&cli, DAT_CONNECTION_EVENT_PEER_REJECTED, &ev))
		return -1;
	d = &ev.event_data.connect_event_data;
	printf("# reject with %d bytes: the client sees %d\n", len,
	       d->private_data_size);
	CHECK(d->private_data_size >= len, "%d bytes of reject data, want %d",
	      d->private_data_size, len);
	CHECK(!len || !memcmp(d->private_data, rej, len),
	      "the reject's private data is not the server's");
	/* No part of a header left in front or moved into the data. */
	CHECK(d->private_data_size < len + 4 ||
	      !memcmp((const unsigned char *)d->private_data + len,
		      "\0\0\0\0", 4),
	      "bytes after the reject's private data are not zeros");
	DAT_OK(dat_ep_free(cli.ep));
	return ep_new(&cli, 8, 2);
}

static int do_reject(void)
{
	return reject_one(40) || reject_one(0) || reject_one(PDATA);
}

static int do_close(void)
{
	DAT_OK(dat_ep_free(srv.ep));
	DAT_OK(dat_ep_free(cli.ep));
	DAT_OK(dat_psp_free(srv.psp));
	DAT_OK(dat_ia_close(cli.ia, DAT_CLOSE_ABRUPT_FLAG));
	DAT_OK(dat_ia_close(srv.ia, DAT_CLOSE_ABRUPT_FLAG));
	return 0;
}

/* -q IA: the attributes that say where it is. */
static int query(char *name)
{
	DAT_EVD_HANDLE aevd = DAT_HANDLE_NULL;
	DAT_PROVIDER_ATTR pa;
	DAT_IA_ATTR ia;
	DAT_IA_HANDLE h;
	DAT_RETURN r;
	DAT_COUNT i;

	r = dat_ia_open(name, 8, &aevd, &h);
	if (r != DAT_SUCCESS) {
		printf("dat_ia_open %s: %#x\n", name, (unsigned int)r);
		return 1;
	}
	r = dat_ia_query(h, NULL, DAT_IA_FIELD_ALL, &ia,
			 DAT_PROVIDER_FIELD_ALL, &pa);
	if (r != DAT_SUCCESS) {
		printf("dat_ia_query %s: %#x\n", name, (unsigned int)r);
		return 1;
	}
	printf("adapter_name=%s\n", ia.adapter_name);
	for (i = 0; i < pa.num_provider_specific_attr; i++)
		printf("%s=%s\n", pa.provider_specific_attr[i].name,
		       pa.provider_specific_attr[i].value);
	if (dat_ia_close(h, DAT_CLOSE_ABRUPT_FLAG) != DAT_SUCCESS)
		return 1;
	/* The same through dat_ib_open_query, each line prefixed "oq.". */
	r = dat_ib_open_query(name, &h, DAT_IA_FIELD_ALL, &ia,
			      DAT_PROVIDER_FIELD_ALL, &pa);
	if (r != DAT_SUCCESS) {
		printf("dat_ib_open_query %s: %#x\n", name, (unsigned int)r);
		return 1;
	}
	for (i = 0; i < pa.num_provider_specific_attr; i++)
		printf("oq.%s=%s\n", pa.provider_specific_attr[i].name,
		       pa.provider_specific_attr[i].value);
	return dat_ib_close_query(h) != DAT_SUCCESS;
}

int main(int argc, char **argv)
{
	char what[300];

	if (argc == 3 && !strcmp(argv[1], "-q"))
		return query(argv[2]);
	if (argc != 4) {
		fprintf(stderr, "usage: %s CLIENT_IA SERVER_IA SERVER_IP | "
			"%s -q IA\n", argv[0], argv[0]);
		return 2;
	}
	cli.name = argv[1];
	srv.name = argv[2];
	srv_addr.sin_family = AF_INET;
	if (inet_pton(AF_INET, argv[3], &srv_addr.sin_addr) != 1) {
		fprintf(stderr, "%s: not an IPv4 address\n", argv[3]);
		return 2;
	}
	/* Above 65535: folded into an RDMA CM port, the same on both. */
	qual = 0x5a000000ULL + (DAT_CONN_QUAL)getpid() * 7;

	printf("TAP version 13\n1..8\n");
	snprintf(what, sizeof(what),
		 "open %s and %s in one process, through the registry",
		 cli.name, srv.name);
	phase(what, do_open);
	snprintf(what, sizeof(what),
		 "connect %s -> %s on qualifier %#llx, %d bytes of private "
		 "data each way", cli.name, srv.name,
		 (unsigned long long)qual, PDATA);
	phase(what, do_connect);
	phase("send/receive 1 B, 4 KiB, 1 MiB in up to 4 segments, both ways",
	      do_send);
	phase("RDMA write 1 MiB from 4 segments, both ways", do_write);
	phase("RDMA reads outstanding at different read depths, both ways",
	      do_read);
	phase("graceful disconnect: both sides DISCONNECTED", do_disconnect);
	phase("rejects with 40, 0 and 56 bytes: the client sees exactly them",
	      do_reject);
	phase("free the EPs, the PSP, close both IAs", do_close);
	printf("# Totals: %s\n", failed ? "failed" : "passed");
	return failed;
}
