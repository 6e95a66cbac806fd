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

#include <dat2/udat.h>
#include <dat2/dat_ib_extensions.h>

#include "../lib/dat_pair.h"

#define TMO	(20 * 1000 * 1000)	/* 20 s per event, in microseconds */
#define MIB	(1 << 20)
#define BUFSZ	(4 * MIB)	/* per side: [0,1M) source, [1M,2M) target,
				 * [2M,3M) read back */
#define PDATA	56		/* the most a request takes, on both */

static struct side cli, srv;
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

/* A failed step of tests/lib/dat_pair.c: said as CHECK says it. */
static void fail_phase(const char *file, int line, const char *what)
{
	printf("# %s:%d: %s\n", file, line, what);
}

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

	return side_ep(s, &a) ? -1 : 0;
}

/* @s's IA, its EVDs and PZ, and BUFSZ of its own registered. */
static int open_side(struct side *s)
{
	return side_ia(s, s->name, 0) ||
	       buf_reg(s, &s->buf, BUFSZ, DAT_MEM_PRIV_ALL_FLAG) ? -1 : 0;
}

static int do_open(void)
{
	if (open_side(&cli) || open_side(&srv))
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
	return pair_request(&cli, qual, pd, PDATA) ||
	       pair_take(&srv, qual, pd, PDATA, cr) ? -1 : 0;
}

static int do_connect(void)
{
	unsigned char req[PDATA], rep[PDATA];
	struct pair_conn conn = {
		.qual = qual,
		.req = req, .req_len = PDATA,
		.rep = rep, .rep_len = PDATA,
	};

	pattern(req, PDATA, 1);
	pattern(rep, PDATA, 2);
	return connect_with(&cli, &srv, &conn) ? -1 : 0;
}

/* @len bytes from @from to @to in up to 4 segments each, checked. */
static int send_one(struct side *from, struct side *to, size_t len,
		    unsigned int seed)
{
	DAT_LMR_TRIPLET t[4], r[4];
	size_t n = len >= 4096 ? (len >= MIB ? 4 : 2) : 1, i;

	pattern(from->buf.p, len, seed);
	memset(to->buf.p + MIB, 0, MIB);
	for (i = 0; i < n; i++) {
		t[i] = seg(&from->buf, i * (len / n), len / n);
		r[i] = seg(&to->buf, MIB + i * (len / n), len / n);
	}
	DAT_OK(dat_ep_post_recv(to->ep, n, r, cookie(seed), 0));
	DAT_OK(dat_ep_post_send(from->ep, n, t, cookie(seed + 1), 0));
	if (wait_dto(from, seed + 1, len) || wait_dto(to, seed, len))
		return -1;
	CHECK(!memcmp(to->buf.p + MIB, from->buf.p, len),
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

static int write_one(struct side *from, struct side *to, unsigned int seed)
{
	DAT_LMR_TRIPLET t[4];
	DAT_RMR_TRIPLET rem = remote(&to->buf, MIB, MIB);
	int i;

	pattern(from->buf.p, MIB, seed);
	memset(to->buf.p + MIB, 0, MIB);
	for (i = 0; i < 4; i++)
		t[i] = seg(&from->buf, i * (MIB / 4), MIB / 4);
	DAT_OK(dat_ep_post_rdma_write(from->ep, 4, t, cookie(seed), &rem, 0));
	/* RC: the write completes once the target has acknowledged it. */
	if (wait_dto(from, seed, MIB))
		return -1;
	CHECK(!memcmp(to->buf.p + MIB, from->buf.p, MIB),
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

	pattern(peer->buf.p + MIB, n * len, seed);
	memset(s->buf.p + 2 * MIB, 0, MIB);
	for (i = 0; i < n; i++) {
		t = seg(&s->buf, 2 * MIB + i * len, len);
		rem = remote(&peer->buf, MIB + i * len, len);
		DAT_OK(dat_ep_post_rdma_read(s->ep, 1, &t, cookie(seed + i),
					     &rem, 0));
	}
	for (i = 0; i < n; i++)
		if (wait_dto(s, seed + i, len))
			return -1;
	CHECK(!memcmp(s->buf.p + 2 * MIB, peer->buf.p + MIB, n * len),
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
	pair_conf.peer.sin_family = AF_INET;
	if (inet_pton(AF_INET, argv[3], &pair_conf.peer.sin_addr) != 1) {
		fprintf(stderr, "%s: not an IPv4 address\n", argv[3]);
		return 2;
	}
	/* Above 65535: folded into an RDMA CM port, the same on both. */
	qual = 0x5a000000ULL + (DAT_CONN_QUAL)getpid() * 7;
	pair_conf.tmo = TMO;
	pair_conf.fail = fail_phase;

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
