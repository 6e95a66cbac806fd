// SPDX-License-Identifier: GPL-2.0
/*
 * The two-sided DAT fixture of the DAT test programs (dat_pair.h): the
 * DAT 2.0 API only, for libdat (-ldat) and OFA's registry (-ldat2) alike.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "dat_pair.h"

struct pair_conf pair_conf = {
	.tmo = 10 * 1000 * 1000,
	.dto_qlen = 64,
	.conn_qlen = 8,
	.cr_qlen = 8,
	.ep_attr = {
		.service_type = DAT_SERVICE_TYPE_RC,
		.max_recv_dtos = 16,
		.max_request_dtos = 16,
		.max_recv_iov = 4,
		.max_request_iov = 4,
		.max_rdma_read_in = 4,
		.max_rdma_read_out = 4,
	},
	.qual_base = 10000,
	.qual_span = 50000,
};

/* Where a step failed, and what: through pair_conf.fail. */
static DAT_RETURN failed(const char *file, int line, DAT_RETURN r,
			 const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (pair_conf.fail)
		pair_conf.fail(file, line, what);
	else
		/* Where the harness's reports go (kselftest_harness.h). */
		fprintf(stderr, "# %s:%d: %s\n", file, line, what);
	return r != DAT_SUCCESS ? r : DAT_INTERNAL_ERROR;
}

#define FAIL(...) failed(__FILE__, __LINE__, DAT_SUCCESS, __VA_ARGS__)

/* A DAT call that must succeed: its name and its code when it does not. */
#define CALL(expr)							\
	do {								\
		DAT_RETURN r_ = (expr);					\
		if (r_ != DAT_SUCCESS) {				\
			const char *maj_ = "?", *min_ = "";		\
									\
			dat_strerror(r_, &maj_, &min_);			\
			return failed(__FILE__, __LINE__, r_,		\
				      "%s: %#x (%s%s%s)", #expr,	\
				      (unsigned int)r_, maj_,		\
				      *min_ ? " " : "", min_);		\
		}							\
	} while (0)

#define STEP(expr)							\
	do {								\
		DAT_RETURN r_ = (expr);					\
		if (r_ != DAT_SUCCESS)					\
			return r_;					\
	} while (0)

int pair_test_env(int listing)
{
	static char name[128];
	const char *dev = getenv("KDAT_TEST_DEV");
	const char *port = getenv("KDAT_TEST_PORT");
	const char *ip = getenv("KDAT_TEST_IP");

	if (listing)
		return 0;
	if (access("/dev/kdat", R_OK | W_OK)) {
		printf("1..0 # SKIP no /dev/kdat (kdat.ko not loaded)\n");
		return 4;
	}
	if (!dev || !ip) {
		printf("1..0 # SKIP set KDAT_TEST_DEV and KDAT_TEST_IP "
		       "(an RDMA device and its IPv4 address)\n");
		return 4;
	}
	snprintf(name, sizeof(name), "%s:%s", dev, port ? port : "1");
	pair_conf.ia_name = name;
	pair_conf.peer.sin_family = AF_INET;
	if (inet_pton(AF_INET, ip, &pair_conf.peer.sin_addr) != 1) {
		printf("1..0 # SKIP KDAT_TEST_IP=%s is not IPv4\n", ip);
		return 4;
	}
	return 0;
}

DAT_CONN_QUAL new_qual(void)
{
	static int n;

	return pair_conf.qual_base +
	       (getpid() * 8 + n++) % pair_conf.qual_span;
}

DAT_EP_ATTR ep_attr_rc(DAT_COUNT dtos, DAT_COUNT iov, DAT_COUNT rd)
{
	DAT_EP_ATTR a = {
		.service_type = DAT_SERVICE_TYPE_RC,
		.max_recv_dtos = dtos,
		.max_request_dtos = dtos,
		.max_recv_iov = iov,
		.max_request_iov = iov,
		.max_rdma_read_in = rd,
		.max_rdma_read_out = rd,
	};

	return a;
}

DAT_EP_ATTR ep_attr(void)
{
	return pair_conf.ep_attr;
}

DAT_RETURN side_ia(struct side *s, char *name, DAT_COUNT dto_qlen)
{
	memset(s, 0, sizeof(*s));
	s->name = name ? name : pair_conf.ia_name;
	s->async_evd = DAT_HANDLE_NULL;
	CALL(dat_ia_open(s->name, 8, &s->async_evd, &s->ia));
	CALL(dat_pz_create(s->ia, &s->pz));
	CALL(dat_evd_create(s->ia, dto_qlen ? dto_qlen : pair_conf.dto_qlen,
			    DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &s->dto_evd));
	CALL(dat_evd_create(s->ia, pair_conf.conn_qlen, DAT_HANDLE_NULL,
			    DAT_EVD_CONNECTION_FLAG, &s->conn_evd));
	if (pair_conf.cr_qlen)
		CALL(dat_evd_create(s->ia, pair_conf.cr_qlen, DAT_HANDLE_NULL,
				    DAT_EVD_CR_FLAG, &s->cr_evd));
	return DAT_SUCCESS;
}

DAT_RETURN side_ep(struct side *s, const DAT_EP_ATTR *attr)
{
	DAT_EP_ATTR a = attr ? *attr : pair_conf.ep_attr;

	CALL(dat_ep_create(s->ia, s->pz, s->dto_evd, s->dto_evd, s->conn_evd,
			   &a, &s->ep));
	return DAT_SUCCESS;
}

DAT_RETURN side_open(struct side *s, const DAT_EP_ATTR *attr)
{
	STEP(side_ia(s, NULL, 0));
	return side_ep(s, attr);
}

DAT_RETURN side_close(struct side *s)
{
	CALL(dat_ia_close(s->ia, DAT_CLOSE_ABRUPT_FLAG));
	return DAT_SUCCESS;
}

DAT_RETURN buf_reg_at(struct side *s, struct buf *b, void *p, size_t len,
		      DAT_MEM_PRIV_FLAGS priv)
{
	DAT_REGION_DESCRIPTION r = { .for_va = p };
	DAT_VLEN rlen;
	DAT_VADDR raddr;

	b->p = p;
	b->len = len;
	CALL(dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, r, len ? len : 1,
			    s->pz, priv, DAT_VA_TYPE_VA, &b->lmr, &b->lctx,
			    &b->rctx, &rlen, &raddr));
	if (raddr != (uintptr_t)p)
		return FAIL("%s: LMR registered at %#llx, not at %p", s->name,
			    (unsigned long long)raddr, p);
	return DAT_SUCCESS;
}

DAT_RETURN buf_reg(struct side *s, struct buf *b, size_t len,
		   DAT_MEM_PRIV_FLAGS priv)
{
	void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return FAIL("mmap of %zu bytes failed", len);
	return buf_reg_at(s, b, p, len, priv);
}

DAT_LMR_TRIPLET seg(const struct buf *b, size_t off, size_t len)
{
	DAT_LMR_TRIPLET t = {
		.virtual_address = (uintptr_t)b->p + off,
		.segment_length = len,
		.lmr_context = b->lctx,
	};

	return t;
}

DAT_RMR_TRIPLET remote(const struct buf *b, size_t off, size_t len)
{
	DAT_RMR_TRIPLET t = {
		.rmr_context = b->rctx,
		.virtual_address = (uintptr_t)b->p + off,
		.segment_length = len,
	};

	return t;
}

DAT_DTO_COOKIE cookie(uint64_t v)
{
	DAT_DTO_COOKIE c;

	c.as_64 = v;
	return c;
}

static DAT_RETURN wait_tmo(DAT_EVD_HANDLE evd, DAT_TIMEOUT tmo,
			   DAT_EVENT *ev)
{
	DAT_COUNT nmore;

	CALL(dat_evd_wait(evd, tmo, 1, ev, &nmore));
	return DAT_SUCCESS;
}

DAT_RETURN wait_event(DAT_EVD_HANDLE evd, DAT_EVENT *ev)
{
	return wait_tmo(evd, pair_conf.tmo, ev);
}

DAT_RETURN conn_event(struct side *s, DAT_EVENT_NUMBER num, const void *pd,
		      DAT_COUNT len, DAT_EVENT *evp)
{
	const DAT_CONNECTION_EVENT_DATA *d;
	DAT_EVENT ev;

	STEP(wait_event(s->conn_evd, &ev));
	if (evp)
		*evp = ev;
	if (ev.event_number != num)
		return FAIL("%s: event %#x, want %#x", s->name,
			    ev.event_number, num);
	d = &ev.event_data.connect_event_data;
	if (!pd || (num == DAT_CONNECTION_EVENT_PEER_REJECTED &&
		    !d->private_data_size && pair_conf.reject_pdata_lost &&
		    pair_conf.reject_pdata_lost(&ev)))
		return DAT_SUCCESS;
	if (d->private_data_size < len ||
	    (len && memcmp(d->private_data, pd, len)))
		return FAIL("%s: private data of %d bytes, not the %d sent",
			    s->name, d->private_data_size, len);
	return DAT_SUCCESS;
}

DAT_RETURN pair_listen(struct side *srv, DAT_CONN_QUAL q)
{
	CALL(dat_psp_create(srv->ia, q, srv->cr_evd, DAT_PSP_CONSUMER_FLAG,
			    &srv->psp));
	return DAT_SUCCESS;
}

DAT_RETURN pair_request(struct side *cli, DAT_CONN_QUAL q, const void *pd,
			DAT_COUNT len)
{
	CALL(dat_ep_connect(cli->ep, (DAT_IA_ADDRESS_PTR)&pair_conf.peer, q,
			    pair_conf.tmo, len, (DAT_PVOID)pd,
			    DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
	return DAT_SUCCESS;
}

DAT_RETURN pair_take(struct side *srv, DAT_CONN_QUAL q, const void *pd,
		     DAT_COUNT len, DAT_CR_HANDLE *cr)
{
	const DAT_CR_ARRIVAL_EVENT_DATA *a;
	DAT_CR_PARAM crp;
	DAT_EVENT ev;

	STEP(wait_tmo(srv->cr_evd,
		      pair_conf.cr_tmo ? pair_conf.cr_tmo : pair_conf.tmo,
		      &ev));
	a = &ev.event_data.cr_arrival_event_data;
	if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT)
		return FAIL("%s: event %#x, want a connection request",
			    srv->name, ev.event_number);
	if (a->conn_qual != q)
		return FAIL("%s: request on qualifier %#llx, want %#llx",
			    srv->name, (unsigned long long)a->conn_qual,
			    (unsigned long long)q);
	if (srv->psp && a->sp_handle.psp_handle != srv->psp)
		return FAIL("%s: the request names another PSP", srv->name);
	*cr = a->cr_handle;
	if (!pd)
		return DAT_SUCCESS;
	CALL(dat_cr_query(*cr, DAT_CR_FIELD_ALL, &crp));
	if (crp.private_data_size < len ||
	    (len && memcmp(crp.private_data, pd, len)))
		return FAIL("%s: request's private data of %d bytes, not the %d sent",
			    srv->name, crp.private_data_size, len);
	return DAT_SUCCESS;
}

DAT_RETURN connect_with(struct side *cli, struct side *srv,
			const struct pair_conn *conn)
{
	DAT_CONN_QUAL q = conn->qual ? conn->qual : new_qual();
	DAT_CR_HANDLE cr;

	STEP(pair_listen(srv, q));
	STEP(pair_request(cli, q, conn->req, conn->req_len));
	STEP(pair_take(srv, q, conn->req, conn->req_len, &cr));
	if (conn->reject) {
		CALL(dat_cr_reject(cr, conn->rep_len, (DAT_PVOID)conn->rep));
		return conn_event(cli, DAT_CONNECTION_EVENT_PEER_REJECTED,
				  conn->rep, conn->rep_len, NULL);
	}
	CALL(dat_cr_accept(cr, srv->ep, conn->rep_len, (DAT_PVOID)conn->rep));
	STEP(conn_event(cli, DAT_CONNECTION_EVENT_ESTABLISHED, conn->rep,
			conn->rep_len, NULL));
	return conn_event(srv, DAT_CONNECTION_EVENT_ESTABLISHED, NULL, 0, NULL);
}

DAT_RETURN connect_pair(struct side *cli, struct side *srv, bool reject)
{
	struct pair_conn conn = {
		.req = "hello", .req_len = 6,
		.rep = reject ? "nope" : "welcome", .rep_len = reject ? 5 : 8,
		.reject = reject,
	};

	return connect_with(cli, srv, &conn);
}

static DAT_RETURN open_two(struct side *c, const DAT_EP_ATTR *cattr,
			   struct buf *cb, DAT_MEM_PRIV_FLAGS cpriv,
			   struct side *s, struct buf *sb, size_t len)
{
	STEP(side_open(c, cattr));
	STEP(side_open(s, NULL));
	STEP(buf_reg(c, cb, len, cpriv));
	return buf_reg(s, sb, len, DAT_MEM_PRIV_ALL_FLAG);
}

DAT_RETURN sides_reg(struct side *c, struct buf *cb, struct side *s,
		     struct buf *sb, size_t len)
{
	return open_two(c, NULL, cb, DAT_MEM_PRIV_ALL_FLAG, s, sb, len);
}

DAT_RETURN sides_open(struct side *c, struct buf *cb, struct side *s,
		      struct buf *sb, size_t len)
{
	STEP(sides_reg(c, cb, s, sb, len));
	return connect_pair(c, s, false);
}

DAT_RETURN sides_close(struct side *a, struct side *b)
{
	STEP(side_close(a));
	return side_close(b);
}

DAT_RETURN pair_open(struct pair *p, const DAT_EP_ATTR *cattr,
		     DAT_MEM_PRIV_FLAGS cpriv)
{
	STEP(open_two(&p->c, cattr, &p->cb, cpriv, &p->s, &p->sb, 4096));
	return connect_pair(&p->c, &p->s, false);
}

DAT_RETURN pair_close(struct pair *p)
{
	return sides_close(&p->c, &p->s);
}
