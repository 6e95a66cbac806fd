// SPDX-License-Identifier: GPL-2.0
/*
 * dat_life_helper: processes for the lifetime cases of the module-life
 * suite. Each prints one line when it is set up and exits 0 when what it
 * checks holds (1 otherwise, saying why).
 *
 *   server DEV:PORT QUAL        print "listening", accept one connection,
 *                               print "connected",
 *                               then wait (30 s) for it to go: print
 *                               "peer-gone EVENT" (the peer was killed)
 *   client DEV:PORT IP QUAL MB  register MB MiB, connect, post receives
 *                               and sends, print "ready", sleep until
 *                               killed
 *   remove DEV:PORT IP QUAL     two connected EPs with receives posted;
 *                               print "ready", wait for a line on stdin
 *                               (the suite removes the device meanwhile),
 *                               then check: EPs DISCONNECTED with a
 *                               broken (or disconnected) event, the
 *                               receives flushed, IA_CATASTROPHIC on the
 *                               async EVD, later calls failing cleanly,
 *                               everything freeable
 *   traffic DEV:PORT IP QUAL    two EPs in one process ping-pong; print
 *                               "running" after 100 round trips, go on
 *                               until the device goes; then check the
 *                               EPs are DISCONNECTED, posts fail cleanly
 *                               and everything can be freed
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <dat2/udat.h>

#include "../lib/dat_pair.h"

/*
 * How long an event that must come may take: a bound on a hang, not a
 * verdict on speed (a debug kernel under load takes seconds per step).
 * A server waits longer for its connection request: the client may first
 * register and pin 64 MiB, which takes more than 10 s there.
 */
#define TMO (60 * 1000 * 1000)
#define CR_TMO (120 * 1000 * 1000)

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			printf("failed: %s (line %d)\n", #cond, __LINE__); \
			exit(1);					\
		}							\
	} while (0)

/*
 * A failed step of tests/lib/dat_pair.c: said as CHECK says it, and the
 * process exits there (CHECK of the step's result is then never reached).
 */
static void fail_exit(const char *file, int line, const char *what)
{
	printf("failed: %s (%s line %d)\n", what, file, line);
	exit(1);
}

/*
 * A side (tests/lib/dat_pair.h) of IA @name: a DTO EVD of 32, an EP of 8
 * DTOs each way, and @bytes of its own, touched and registered.
 */
static void open_side(struct side *s, char *name, size_t bytes)
{
	DAT_EP_ATTR a = ep_attr_rc(8, 1, 1);
	void *p;

	CHECK(side_ia(s, name, 32) == DAT_SUCCESS);
	CHECK(side_ep(s, &a) == DAT_SUCCESS);
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	memset(p, 1, bytes);	/* real pages, all pinned */
	CHECK(buf_reg_at(s, &s->buf, p, bytes, DAT_MEM_PRIV_ALL_FLAG) ==
	      DAT_SUCCESS);
}

static DAT_EVENT_NUMBER next_event(DAT_EVD_HANDLE evd, DAT_TIMEOUT tmo)
{
	DAT_EVENT ev;
	DAT_COUNT nmore;

	CHECK(dat_evd_wait(evd, tmo, 1, &ev, &nmore) == DAT_SUCCESS);
	return ev.event_number;
}

/* The next event on evd must be want; says which one came if not. */
#define EXPECT_EVENT(evd, tmo, want)					\
	do {								\
		DAT_EVENT_NUMBER got_ = next_event(evd, tmo);		\
		if (got_ != (want)) {					\
			printf("failed: event 0x%x, not %s (line %d)\n",	\
			       got_, #want, __LINE__);			\
			exit(1);					\
		}							\
	} while (0)

static void accept_one(struct side *s, DAT_CONN_QUAL q)
{
	DAT_CR_HANDLE cr;

	CHECK(pair_listen(s, q) == DAT_SUCCESS);
	printf("listening\n");
	fflush(stdout);
	CHECK(pair_take(s, q, NULL, 0, &cr) == DAT_SUCCESS);
	CHECK(dat_cr_accept(cr, s->ep, 0, NULL) == DAT_SUCCESS);
}

static int do_server(char *name, DAT_CONN_QUAL q)
{
	DAT_DTO_COOKIE ck = { .as_64 = 0 };
	DAT_EVENT_NUMBER num;
	DAT_LMR_TRIPLET si;
	struct side s;
	int i;

	open_side(&s, name, 4096);
	si = seg(&s.buf, 0, 64);
	for (i = 0; i < 8; i++)
		CHECK(dat_ep_post_recv(s.ep, 1, &si, ck, 0) == DAT_SUCCESS);
	accept_one(&s, q);
	EXPECT_EVENT(s.conn_evd, TMO, DAT_CONNECTION_EVENT_ESTABLISHED);
	printf("connected\n");
	fflush(stdout);
	num = next_event(s.conn_evd, 30 * 1000 * 1000);
	printf("peer-gone %#x\n", num);
	CHECK(num == DAT_CONNECTION_EVENT_DISCONNECTED ||
	      num == DAT_CONNECTION_EVENT_BROKEN);
	CHECK(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG) == DAT_SUCCESS);
	return 0;
}

static int do_client(char *name, DAT_CONN_QUAL q, size_t mb)
{
	DAT_DTO_COOKIE ck = { .as_64 = 0 };
	DAT_LMR_TRIPLET ci;
	struct side c;
	int i;

	open_side(&c, name, mb << 20);
	ci = seg(&c.buf, 0, 64);
	for (i = 0; i < 8; i++)
		CHECK(dat_ep_post_recv(c.ep, 1, &ci, ck, 0) == DAT_SUCCESS);
	CHECK(pair_request(&c, q, NULL, 0) == DAT_SUCCESS);
	EXPECT_EVENT(c.conn_evd, TMO, DAT_CONNECTION_EVENT_ESTABLISHED);
	for (i = 0; i < 4; i++)
		CHECK(dat_ep_post_send(c.ep, 1, &ci, ck, 0) == DAT_SUCCESS);
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}

static void check_gone(struct side *s)
{
	DAT_DTO_COOKIE ck = { .as_64 = 0 };
	DAT_LMR_TRIPLET iov = seg(&s->buf, 0, 64);
	DAT_EP_STATE st;

	CHECK(dat_ep_get_status(s->ep, &st, NULL, NULL) == DAT_SUCCESS);
	CHECK(st == DAT_EP_STATE_DISCONNECTED);
	CHECK(dat_ep_post_send(s->ep, 1, &iov, ck, 0) != DAT_SUCCESS);
	CHECK(dat_ep_free(s->ep) == DAT_SUCCESS);
	CHECK(dat_lmr_free(s->buf.lmr) == DAT_SUCCESS);
	CHECK(dat_ia_close(s->ia, DAT_CLOSE_ABRUPT_FLAG) == DAT_SUCCESS);
}

static void check_removed(struct side *s)
{
	DAT_EVENT_NUMBER num;
	DAT_EVENT ev;
	DAT_COUNT nmore;

	/*
	 * Broken, or disconnected when the other EP (same device) went
	 * first and its CM told this one.
	 */
	num = next_event(s->conn_evd, TMO);
	CHECK(num == DAT_CONNECTION_EVENT_BROKEN ||
	      num == DAT_CONNECTION_EVENT_DISCONNECTED);
	/* The posted receive was flushed. */
	CHECK(dat_evd_wait(s->dto_evd, TMO, 1, &ev, &nmore) == DAT_SUCCESS);
	CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT);
	CHECK(ev.event_data.dto_completion_event_data.status ==
	      DAT_DTO_ERR_FLUSHED);
	EXPECT_EVENT(s->async_evd, TMO, DAT_ASYNC_ERROR_IA_CATASTROPHIC);
	CHECK(dat_ep_reset(s->ep) != DAT_SUCCESS);
	check_gone(s);
}

static int do_remove(char *name, DAT_CONN_QUAL q)
{
	DAT_DTO_COOKIE ck = { .as_64 = 1 };
	struct pair_conn conn = { .qual = q };
	DAT_LMR_TRIPLET ci, si;
	struct side c, s;
	char line[16];

	open_side(&c, name, 4096);
	open_side(&s, name, 4096);
	ci = seg(&c.buf, 0, 64);
	si = seg(&s.buf, 0, 64);
	CHECK(dat_ep_post_recv(c.ep, 1, &ci, ck, 0) == DAT_SUCCESS);
	CHECK(dat_ep_post_recv(s.ep, 1, &si, ck, 0) == DAT_SUCCESS);
	CHECK(connect_with(&c, &s, &conn) == DAT_SUCCESS);
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	check_removed(&c);
	check_removed(&s);
	printf("ok\n");
	return 0;
}

/*
 * Ping-pong until something fails: the device went. Every failure must be
 * a clean one: a DAT error code or an error completion.
 */
static int do_traffic(char *name, DAT_CONN_QUAL q)
{
	DAT_DTO_COOKIE ck = { .as_64 = 0 };
	struct pair_conn conn = { .qual = q };
	DAT_LMR_TRIPLET ci, si;
	struct side c, s;
	long round;

	open_side(&c, name, 4096);
	open_side(&s, name, 4096);
	ci = seg(&c.buf, 0, 64);
	si = seg(&s.buf, 0, 64);
	CHECK(connect_with(&c, &s, &conn) == DAT_SUCCESS);
	for (round = 0;; round++) {
		DAT_EVENT ev;
		DAT_COUNT nmore;

		if (round == 100) {
			printf("running\n");
			fflush(stdout);
		}
		if (dat_ep_post_recv(s.ep, 1, &si, ck, 0) != DAT_SUCCESS ||
		    dat_ep_post_send(c.ep, 1, &ci, ck, 0) != DAT_SUCCESS)
			break;
		if (dat_evd_wait(s.dto_evd, TMO, 1, &ev, &nmore) !=
		    DAT_SUCCESS ||
		    ev.event_data.dto_completion_event_data.status !=
		    DAT_DTO_SUCCESS)
			break;
		if (dat_evd_wait(c.dto_evd, TMO, 1, &ev, &nmore) !=
		    DAT_SUCCESS ||
		    ev.event_data.dto_completion_event_data.status !=
		    DAT_DTO_SUCCESS)
			break;
	}
	CHECK(round >= 100);	/* "running" said 100 were done */
	/* The async EVDs heard of it. */
	EXPECT_EVENT(c.async_evd, TMO, DAT_ASYNC_ERROR_IA_CATASTROPHIC);
	check_gone(&c);
	check_gone(&s);
	printf("ok after %ld round trips\n", round);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };

	pair_conf.tmo = TMO;
	pair_conf.cr_tmo = CR_TMO;
	pair_conf.fail = fail_exit;
	if (argc == 4 && !strcmp(argv[1], "server"))
		return do_server(argv[2], strtoul(argv[3], NULL, 0));
	if (argc >= 5 && inet_pton(AF_INET, argv[3], &addr.sin_addr) == 1) {
		pair_conf.peer = addr;
		if (argc == 6 && !strcmp(argv[1], "client"))
			return do_client(argv[2], strtoul(argv[4], NULL, 0),
					 strtoul(argv[5], NULL, 0));
		if (argc == 5 && !strcmp(argv[1], "remove"))
			return do_remove(argv[2], strtoul(argv[4], NULL, 0));
		if (argc == 5 && !strcmp(argv[1], "traffic"))
			return do_traffic(argv[2], strtoul(argv[4], NULL, 0));
	}
	fprintf(stderr, "usage: %s server DEV:PORT QUAL | client DEV:PORT IP "
		"QUAL MB | remove|traffic DEV:PORT IP QUAL\n", argv[0]);
	return 2;
}
