/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The two-sided DAT fixture of the DAT test programs: an IA with its EVDs
 * and PZ (a side), its EP, memory registered with it, and a client side
 * connected to a server side through a PSP, the server accepting or
 * rejecting; torn down by closing the IA. One version for the programs
 * of tests/dat (dat_dto_test, ring_test, registry_two, interop_cm,
 * retcodes, dat_life_helper): the DAT 2.0 API only, so that it builds
 * against OFA's -ldat2 (interop_cm, retcodes_ofa) as against libdat.
 * (tests/twohost/dat_xfer keeps its own: one side a host, and its
 * license is GPL-2.0 OR BSD-2-Clause.)
 *
 * What differs between the programs is in pair_conf (the IA's name, the
 * peer's address, the waits, the EVDs' sizes, the EP's attributes, how a
 * failure is reported) and in the arguments. A failed step is reported
 * through pair_conf.fail ("# file:line: what" on stderr by default) and
 * returns its DAT_RETURN (DAT_INTERNAL_ERROR for a check that is no DAT
 * call), which the caller must look at: a case of kselftest_harness.h
 * checks it with OK() of dat_expect.h, as any DAT call (the compiler
 * warns of a result left unread).
 */
#ifndef KDAT_TESTS_DAT_PAIR_H
#define KDAT_TESTS_DAT_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include <dat2/udat.h>

#ifndef __must_check
#define __must_check __attribute__((warn_unused_result))
#endif

/* Memory of the process registered with one side's provider. */
struct buf {
	unsigned char *p;
	size_t len;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lctx;
	DAT_RMR_CONTEXT rctx;
};

/* One IA and what a side of a connection has on it. */
struct side {
	char *name;		/* the IA's name */
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async_evd;
	DAT_PZ_HANDLE pz;
	DAT_EVD_HANDLE dto_evd, conn_evd, cr_evd;
	DAT_EP_HANDLE ep;
	DAT_PSP_HANDLE psp;	/* a server's, from pair_listen() */
	/* Its own memory, where a program keeps one (buf_reg()). */
	struct buf buf;
};

/* A connected pair with a 4 KiB LMR on each side (pair_open()). */
struct pair {
	struct side c, s;
	struct buf cb, sb;
};

struct pair_conf {
	char *ia_name;		/* side_open()'s IA (pair_test_env()) */
	struct sockaddr_in peer; /* where a client connects to */
	DAT_TIMEOUT tmo;	/* a connect's, and each wait's (us) */
	DAT_TIMEOUT cr_tmo;	/* a wait for a connection request; 0: tmo */
	DAT_COUNT dto_qlen;	/* the EVDs' sizes; cr_qlen 0: no CR EVD */
	DAT_COUNT conn_qlen, cr_qlen;
	DAT_EP_ATTR ep_attr;	/* the EP's, where none is given */
	/* new_qual()'s qualifiers: base + (pid * 8 + n) % span. */
	DAT_CONN_QUAL qual_base, qual_span;
	/*
	 * A peer's reject whose private data the transport may drop (iWARP):
	 * true to let the missing data pass. NULL: never.
	 */
	bool (*reject_pdata_lost)(const DAT_EVENT *ev);
	/* A failed step: says where and what (NULL: on stderr). */
	void (*fail)(const char *file, int line, const char *what);
};

/*
 * The defaults: the IA and peer unset, waits of 10 s, EVDs of 64, 8 and
 * 8, an RC EP of 16 DTOs each way, 4 IOVs, 4 RDMA reads in and out,
 * qualifiers from 10000 up to 60000.
 */
extern struct pair_conf pair_conf;

/*
 * The kdat device to test (KDAT_TEST_DEV, KDAT_TEST_PORT, KDAT_TEST_IP)
 * into pair_conf.ia_name and pair_conf.peer: 0, or KSFT_SKIP (4) after
 * the TAP plan that says why not (no /dev/kdat, or no such variables).
 * 0 at once when @listing: the program only lists its cases (the
 * harness's -l or -h), which needs no device.
 */
int pair_test_env(int listing);

/* A qualifier of this process's (each case runs in its own). */
DAT_CONN_QUAL new_qual(void);

/* An RC EP's attributes: @dtos each way, @iov each way, @rd reads. */
DAT_EP_ATTR ep_attr_rc(DAT_COUNT dtos, DAT_COUNT iov, DAT_COUNT rd);
/* pair_conf.ep_attr. */
DAT_EP_ATTR ep_attr(void);

/*
 * Open IA @name (NULL: pair_conf.ia_name) with its async EVD, a PZ, a DTO
 * EVD of @dto_qlen (0: pair_conf.dto_qlen), a connection EVD and a CR
 * EVD; no EP yet.
 */
DAT_RETURN __must_check side_ia(struct side *s, char *name, DAT_COUNT dto_qlen);
/* The side's EP, on its EVDs: @attr (NULL: pair_conf.ep_attr). */
DAT_RETURN __must_check side_ep(struct side *s, const DAT_EP_ATTR *attr);
/* side_ia() on pair_conf.ia_name, then side_ep(). */
DAT_RETURN __must_check side_open(struct side *s, const DAT_EP_ATTR *attr);
/* The IA closed, abruptly: everything of the side goes with it. */
DAT_RETURN __must_check side_close(struct side *s);

/* @len bytes (at least 1) mapped and registered with @priv. */
DAT_RETURN __must_check buf_reg(struct side *s, struct buf *b, size_t len,
				DAT_MEM_PRIV_FLAGS priv);
/* Memory the caller has, @p and @len, registered with @priv. */
DAT_RETURN __must_check buf_reg_at(struct side *s, struct buf *b, void *p,
				   size_t len, DAT_MEM_PRIV_FLAGS priv);

DAT_LMR_TRIPLET seg(const struct buf *b, size_t off, size_t len);
DAT_RMR_TRIPLET remote(const struct buf *b, size_t off, size_t len);
DAT_DTO_COOKIE cookie(uint64_t v);

/* The next event of @evd, within pair_conf.tmo. */
DAT_RETURN __must_check wait_event(DAT_EVD_HANDLE evd, DAT_EVENT *ev);
/*
 * The next event of @s's connection EVD is @num, with @len bytes of
 * private data @pd at its front (@pd NULL: not looked at). @ev: the
 * event, for the caller (may be NULL).
 */
DAT_RETURN __must_check conn_event(struct side *s, DAT_EVENT_NUMBER num,
				   const void *pd, DAT_COUNT len,
				   DAT_EVENT *ev);

/* A PSP of @srv on @q (srv->psp), its requests to @srv's CR EVD. */
DAT_RETURN __must_check pair_listen(struct side *srv, DAT_CONN_QUAL q);
/* @cli's EP connects to pair_conf.peer on @q, with @len bytes of @pd. */
DAT_RETURN __must_check pair_request(struct side *cli, DAT_CONN_QUAL q,
				     const void *pd, DAT_COUNT len);
/*
 * The next event of @srv's CR EVD (within pair_conf.cr_tmo) is a request
 * on @q, of srv->psp where there is one, with @len bytes of @pd at the
 * front of its private data: its CR into @cr.
 */
DAT_RETURN __must_check pair_take(struct side *srv, DAT_CONN_QUAL q,
				  const void *pd, DAT_COUNT len,
				  DAT_CR_HANDLE *cr);

/* One connection's parameters (zeroes: none). */
struct pair_conn {
	DAT_CONN_QUAL qual;	/* 0: new_qual() */
	const void *req;	/* the request's private data */
	DAT_COUNT req_len;
	const void *rep;	/* the accept's, or the reject's */
	DAT_COUNT rep_len;
	bool reject;		/* the server rejects */
};

/*
 * @cli connects to @srv (one process) through a PSP of @srv's, kept in
 * srv->psp: the request and its private data checked at the server, the
 * server accepts with @srv's EP, both ESTABLISHED and the accept's
 * private data checked at the client; or it rejects, and the client has
 * PEER_REJECTED with the reject's private data.
 */
DAT_RETURN __must_check connect_with(struct side *cli, struct side *srv,
				     const struct pair_conn *conn);
/* connect_with() with "hello" (6 bytes), "welcome" (8), or "nope" (5). */
DAT_RETURN __must_check connect_pair(struct side *cli, struct side *srv,
				     bool reject);

/*
 * Client @c and server @s opened (side_open(), pair_conf.ep_attr), @len
 * bytes registered on each with every privilege (@cb, @sb); not yet
 * connected.
 */
DAT_RETURN __must_check sides_reg(struct side *c, struct buf *cb,
				  struct side *s, struct buf *sb, size_t len);
/* sides_reg(), then @c connected to @s (connect_pair()). */
DAT_RETURN __must_check sides_open(struct side *c, struct buf *cb,
				   struct side *s, struct buf *sb, size_t len);
/* Both IAs closed, @a's first. */
DAT_RETURN __must_check sides_close(struct side *a, struct side *b);

/*
 * sides_open() of 4 KiB into @p, but the client's EP of @cattr (NULL:
 * pair_conf.ep_attr) and its LMR of @cpriv.
 */
DAT_RETURN __must_check pair_open(struct pair *p, const DAT_EP_ATTR *cattr,
				  DAT_MEM_PRIV_FLAGS cpriv);
DAT_RETURN __must_check pair_close(struct pair *p);

#endif
