// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * kdat-bench: message rate and bandwidth (--bw) or latency (--lat) of DAT
 * sends between two Endpoints, with perftest's option names and report:
 *
 * kdat-bench -d DEV [-i PORT] [OPTIONS]                     a server
 * kdat-bench -d DEV [-i PORT] [OPTIONS] SERVER_IP           its client
 * kdat-bench -d DEV [-i PORT] [OPTIONS] --loopback OWN_IP   one process
 *
 * --bw: COUNT (-n) sends of SIZE (-s) bytes, DEPTH (-t) in flight, the
 * receiver keeping its receives posted. --lat: COUNT ping-pongs of SIZE
 * bytes, each round trip timed. Completions are reaped by polling
 * dat_evd_dequeue, or with -e (or KDAT_BENCH_WAIT=1) waited for with
 * dat_evd_wait. A plain DAT 2.0 program; scripts/bench and
 * tests/dat/zero_syscall.sh count its system calls between the two
 * getppid() calls that bracket the measured loop, after a warm-up: the
 * loop reads no clock but a cycle counter, which is no system call.
 *
 * With --loopback both Endpoints are in this process, connected through
 * the IA's device to its own address. With --threads=T as well (--bw
 * only), T threads of the process each send over a connection of their
 * own, the two IAs and their PZs shared by all (a DAT_THREADSAFE
 * program's shape): the report adds the slowest thread's rate to the
 * aggregate one. Otherwise they are in two
 * processes, on two hosts or one: the server (no address) listens on
 * the qualifier (-p, default 7473) and serves one client, whose connect
 * tells it the test; it keeps its receives posted (--bw) or answers each
 * ping (--lat) and exits when the client has done.
 *
 * Prints a short banner, then perftest's header and result lines, kdat's
 * DTO counts (#posted, #reaped) in the last two columns.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <dat2/udat.h>

#include "kdat_tool.h"

#define PROG "kdat-bench"
#define TMO (10 * 1000 * 1000)
#define MAXQD 256
#define BUF (1 << 20)
#define MAX_ITERS 1000000000000LL
#define QUAL_SERVER 7473
#define QUAL_LOOPBACK 7472
#define RULE "-----------------------------------------------------------" \
	"----------------------------\n"

static const char usage[] =
	"usage: kdat-bench -d DEV [-i PORT] [OPTIONS]               a server\n"
	"       kdat-bench -d DEV [-i PORT] [OPTIONS] SERVER_IP     its client\n"
	"       kdat-bench -d DEV [-i PORT] [OPTIONS] --loopback OWN_IP\n"
	"  Message rate and bandwidth (--bw) or latency (--lat) of DAT sends\n"
	"  between two Endpoints, as perftest's ib_send_bw and ib_send_lat:\n"
	"  a server and its client (SERVER_IP: the server's IPv4 address), or\n"
	"  both in one process (--loopback, OWN_IP: the IA's own address).\n"
	"  -d, --ib-dev=DEV     the IA: an RDMA device, or a whole IA name\n"
	"                       (DEV:PORT, kdat-DEV-PORT, a dat.conf name)\n"
	"  -i, --ib-port=PORT   the device's port, 1-255 (default 1)\n"
	"  -p, --port=QUAL      connection qualifier (default 7473;\n"
	"                       7472 with --loopback)\n"
	"      --bw             message rate and bandwidth (the default)\n"
	"      --lat            latency: ping-pong, each round trip timed\n"
	"  -s, --size=BYTES     bytes per message, 0-1048576 (default 65536;\n"
	"                       2 with --lat)\n"
	"  -n, --iters=N        iterations measured, after N/10+1 of warm-up\n"
	"                       (default 1000)\n"
	"  -t, --tx-depth=N     sends in flight, 1-256 (--bw; default 128)\n"
	"  -e, --events         wait for each completion (dat_evd_wait), not\n"
	"                       poll (also KDAT_BENCH_WAIT=1)\n"
	"      --loopback       both Endpoints in this process\n"
	"  -T, --threads=T      with --loopback and --bw: T threads, 1-64,\n"
	"                       each with a connection of its own\n"
	"  -h, --help           print this and exit\n"
	"  -V, --version        print the version and exit\n"
	"  A server serves the test its client asks for: -s, -n, -t, --bw\n"
	"  and --lat are the client's. Exit: 0 done, 1 failed, 2 usage.\n";

/*
 * One end of a connection: its IA, PZ and CR EVD (side_open(); shared by
 * the threads of --threads), then its own EP, EVDs and buffer (side_ep()).
 */
struct side {
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE aevd, dto, conn, cr;
	DAT_PZ_HANDLE pz;
	DAT_EP_HANDLE ep;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lctx;
	unsigned char *buf;
};

/* A test: what the client asks its server for. */
struct test {
	int lat;		/* ping-pong; else sends at a depth */
	size_t len;
	int qd;
	long n, warm;
};

/* Each thread's own counts (--threads). */
static __thread long posted, reaped;

static void check(DAT_RETURN r, const char *what)
{
	const char *major = "?", *minor = "";

	if (r == DAT_SUCCESS)
		return;
	dat_strerror(r, &major, &minor);
	fprintf(stderr, PROG ": %s: %s %s\n", what, major, minor);
	exit(1);
}

static void side_open(struct side *s, char *name)
{
	s->aevd = DAT_HANDLE_NULL;
	check(dat_ia_open(name, 8, &s->aevd, &s->ia), "dat_ia_open");
	check(dat_pz_create(s->ia, &s->pz), "dat_pz_create");
	check(dat_evd_create(s->ia, 8, NULL, DAT_EVD_CR_FLAG, &s->cr),
	      "dat_evd_create");
}

static void side_ep(struct side *s)
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

	check(dat_evd_create(s->ia, 4 * MAXQD, NULL, DAT_EVD_DTO_FLAG,
			     &s->dto), "dat_evd_create");
	check(dat_evd_create(s->ia, 8, NULL, DAT_EVD_CONNECTION_FLAG,
			     &s->conn), "dat_evd_create");
	check(dat_ep_create(s->ia, s->pz, s->dto, s->dto, s->conn, &a, &s->ep),
	      "dat_ep_create");
	s->buf = mmap(NULL, BUF, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->buf == MAP_FAILED) {
		perror(PROG ": mmap");
		exit(1);
	}
	r.for_va = s->buf;
	check(dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, r, BUF, s->pz,
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
 * -e or KDAT_BENCH_WAIT=1, with dat_evd_wait (what a program that blocks
 * sees).
 */
static int wait_reap;

static void reap(DAT_EVD_HANDLE evd)
{
	DAT_EVENT ev;
	DAT_COUNT n;
	DAT_RETURN r;

	if (wait_reap)
		r = dat_evd_wait(evd, TMO, 1, &ev, &n);
	else
		do
			r = dat_evd_dequeue(evd, &ev);
		while (DAT_GET_TYPE(r) == DAT_QUEUE_EMPTY);
	check(r, wait_reap ? "dat_evd_wait" : "dat_evd_dequeue");
	if (ev.event_number != DAT_DTO_COMPLETION_EVENT ||
	    ev.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) {
		fprintf(stderr, PROG ": bad completion %#x\n",
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
	DAT_LMR_TRIPLET t = seg(s, BUF);

	check(dat_ep_post_recv(s->ep, 1, &t, ck, 0), "post_recv");
	posted++;
}

static void post_send(struct side *s, size_t len, DAT_COMPLETION_FLAGS flags)
{
	DAT_LMR_TRIPLET t = seg(s, len);

	check(dat_ep_post_send(s->ep, 1, &t, ck, flags), "post_send");
	posted++;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * A counter that user space reads without a system call (a clock read
 * can be one: the testbed's guest may keep time with the HPET, which has
 * no vDSO), for the latency samples; its rate is measured against
 * CLOCK_MONOTONIC over the whole loop. Elsewhere, the clock.
 */
static inline uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
	uint64_t v;

	asm volatile("isb; mrs %0, cntvct_el0" : "=r" (v) : : "memory");
	return v;
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
#endif
}

/*
 * @n sends from a, @qd in flight. With @b (one process) b reaps each
 * receive and posts it again; else the server does.
 */
static void rate(struct side *a, struct side *b, size_t len, int qd, long n)
{
	long sent = 0, done = 0;

	while (done < n) {
		while (sent < n && sent - done < qd) {
			post_send(a, len, DAT_COMPLETION_DEFAULT_FLAG);
			sent++;
		}
		reap(a->dto);
		if (b) {
			reap(b->dto);
			post_recv(b);
		}
		done++;
	}
}

/*
 * @n round trips from a; with @b (one process) b answers, else the
 * server does. The sends' completions are suppressed (as the server's
 * pong, and as perftest's ib_send_lat leaves its sends unsignalled):
 * each side answers as soon as its receive completes, not after its
 * last send is acked. With @lat, each round trip's ticks.
 */
static void pingpong(struct side *a, struct side *b, size_t len, long n,
		     uint64_t *lat)
{
	uint64_t t = lat ? ticks() : 0, u;
	long i;

	for (i = 0; i < n; i++) {
		post_send(a, len, DAT_COMPLETION_SUPPRESS_FLAG);
		if (b) {
			reap(b->dto);
			post_recv(b);
			post_send(b, len, DAT_COMPLETION_SUPPRESS_FLAG);
		}
		reap(a->dto);		/* the pong */
		post_recv(a);
		if (lat) {
			u = ticks();
			/* A counter that went back (another CPU's): 0. */
			lat[i] = (int64_t)(u - t) > 0 ? u - t : 0;
			t = u;
		}
	}
}

/* The client's connect private data: the test the server is to serve. */
struct bench_req {
	uint32_t magic;		/* 'kdbn' */
	uint32_t lat;		/* 1: ping-pong; 0: sends at a depth */
	uint32_t len, qd;
	uint64_t n;		/* measured */
	uint64_t warm;		/* before them */
};

#define BENCH_MAGIC	0x6b64626eU

/* The server's side of a test: only its own queue is this process's. */
static void serve(struct side *b, const struct test *t, long n)
{
	long i;

	/*
	 * For a ping-pong the pong's completion is suppressed: every event
	 * here is a ping, whatever the order in which a send's and a
	 * receive's completions reach the one EVD.
	 */
	for (i = 0; i < n; i++) {
		reap(b->dto);
		post_recv(b);
		if (t->lat)
			post_send(b, t->len, DAT_COMPLETION_SUPPRESS_FLAG);
	}
}

static void banner(const struct test *t, const char *ia, const char *role)
{
	printf(RULE "                    Send %s Test (kdat-bench, DAT 2.0)\n",
	       t->lat ? "Latency" : "BW");
	printf(" IA name         : %s\n", ia);
	printf(" Endpoints       : %s\n", role);
	if (!t->lat)
		printf(" TX depth        : %d\n", t->qd);
	printf(" Completions     : %s\n", wait_reap ?
	       "waited for (dat_evd_wait)" : "polled (dat_evd_dequeue)");
	printf(" Warm-up iters   : %ld, not measured\n" RULE,
	       t->warm);
	fflush(stdout);
}

/* perftest's header line and result line, a column at a time. */
#define NCOLS 12

struct table {
	int n;
	const char *name[NCOLS];
	char val[NCOLS][32];
};

static void __attribute__((format(printf, 3, 4)))
column(struct table *r, const char *name, const char *fmt, ...)
{
	va_list ap;

	r->name[r->n] = name;
	va_start(ap, fmt);
	vsnprintf(r->val[r->n], sizeof(r->val[0]), fmt, ap);
	va_end(ap);
	r->n++;
}

/*
 * #bytes and #iterations first, kdat's DTO counts (#posted, #reaped)
 * last; each column as wide as its name and 3 more.
 */
static void print_table(struct table *r)
{
	int i, w;

	column(r, "#posted", "%ld", posted);
	column(r, "#reaped", "%ld", reaped);
	for (i = 0; i < r->n; i++) {
		w = i < r->n - 1 ? (int)strlen(r->name[i]) + 3 : 0;
		printf(" %-*s", w, r->name[i]);
	}
	printf("\n");
	for (i = 0; i < r->n; i++) {
		w = i < r->n - 1 ? (int)strlen(r->name[i]) + 3 : 0;
		printf(" %-*s", w, r->val[i]);
	}
	printf("\n" RULE);
	fflush(stdout);
}

static void table_start(struct table *r, const struct test *t)
{
	r->n = 0;
	column(r, "#bytes", "%zu", t->len);
	column(r, "#iterations", "%ld", t->n);
}

/* MB: 2^20 bytes, as perftest's. */
static void report_bw(const struct test *t, double secs)
{
	struct table r;

	table_start(&r, t);
	column(&r, "BW average[MB/sec]", "%.2f",
	       (double)t->len * t->n / secs / (1 << 20));
	column(&r, "MsgRate[Mpps]", "%.6f", t->n / secs / 1e6);
	print_table(&r);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The sample of rank ceil(@num / @den * @n) of @s, sorted (nearest rank). */
static uint64_t rank(const uint64_t *s, long n, long num, long den)
{
	long k = (long)(((unsigned long long)num * n + den - 1) / den);

	return s[k > 0 ? k - 1 : 0];
}

/* The square root, by Newton's method from above: no libm for one call. */
static double root(double x)
{
	double r = x > 1 ? x : 1, next;

	if (x <= 0)
		return 0;
	for (;;) {
		next = (r + x / r) / 2;
		if (next >= r)
			return r;
		r = next;
	}
}

/*
 * @s: each round trip, in ticks of @ns_per_tick. Reported as perftest's
 * ib_send_lat does: half round trips, in microseconds.
 */
static void report_lat(const struct test *t, uint64_t *s, double ns_per_tick)
{
	double us = ns_per_tick / 2 / 1000, sum = 0, dev = 0, avg, d;
	long i, n = t->n;
	struct table r;

	qsort(s, n, sizeof(*s), cmp_u64);
	for (i = 0; i < n; i++)
		sum += s[i] * us;
	avg = sum / n;
	for (i = 0; i < n; i++) {
		d = s[i] * us - avg;
		dev += d * d;
	}
	table_start(&r, t);
	column(&r, "t_min[usec]", "%.2f", s[0] * us);
	column(&r, "t_max[usec]", "%.2f", s[n - 1] * us);
	column(&r, "t_typical[usec]", "%.2f", rank(s, n, 1, 2) * us);
	column(&r, "t_avg[usec]", "%.2f", avg);
	column(&r, "t_stdev[usec]", "%.2f", root(dev / n));
	column(&r, "99% percentile[usec]", "%.2f", rank(s, n, 99, 100) * us);
	column(&r, "99.9% percentile[usec]", "%.2f",
	       rank(s, n, 999, 1000) * us);
	print_table(&r);
}

/* Room for @n latency samples, untouched but for the first 64 MiB. */
static uint64_t *alloc_samples(long n)
{
	size_t len = (size_t)n * sizeof(uint64_t);
	void *p;

	if ((unsigned long long)n > SIZE_MAX / sizeof(uint64_t))
		p = MAP_FAILED;
	else
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
			 (len <= 64 << 20 ? MAP_POPULATE : 0), -1, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, PROG ": no room for %ld latency samples\n", n);
		exit(1);
	}
	return p;
}

/*
 * The warm-up, then the measured loop between the two markers, then the
 * report. @b: the other side, in this process; else the server's.
 */
static void measure(struct side *a, struct side *b, const struct test *t)
{
	uint64_t *lat = t->lat ? alloc_samples(t->n) : NULL, c0, c1;
	double t0, t1;

	if (t->lat)
		pingpong(a, b, t->len, t->warm, NULL);
	else
		rate(a, b, t->len, t->qd, t->warm);
	posted = reaped = 0;
	/*
	 * The markers hold the loop alone: not even the clock's reads (the
	 * ping-pong's samples are the counter's, no system call).
	 */
	t0 = now();
	c0 = ticks();
	getppid();		/* marker: the measured loop starts */
	if (t->lat)
		pingpong(a, b, t->len, t->n, lat);
	else
		rate(a, b, t->len, t->qd, t->n);
	getppid();		/* marker: it ends */
	c1 = ticks();
	t1 = now();
	if (t->lat)
		report_lat(t, lat, c1 > c0 ? (t1 - t0) * 1e9 / (c1 - c0) : 0);
	else
		report_bw(t, t1 - t0);
}

static int server_main(char *ia, DAT_CONN_QUAL qual)
{
	struct side b;
	struct bench_req req;
	struct test t;
	struct table r;
	DAT_CR_PARAM crp;
	DAT_PSP_HANDLE psp;
	DAT_CR_HANDLE cr;
	DAT_EVENT ev;
	char role[64];
	long i;

	side_open(&b, ia);
	side_ep(&b);
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
	if (req.magic != BENCH_MAGIC || req.len > BUF || !req.qd ||
	    req.qd > MAXQD || !req.n || req.n > MAX_ITERS ||
	    req.warm > MAX_ITERS)
		goto refuse;
	t = (struct test){ .lat = !!req.lat, .len = req.len, .qd = req.qd,
			   .n = (long)req.n, .warm = (long)req.warm };
	/*
	 * Receives before the accept: for sends at a depth, as many as the
	 * EP takes (perftest's ib_send_bw keeps 512), so that a repost that
	 * comes late never has a send wait for the RNR timer.
	 */
	for (i = 0; i < (t.lat ? 1 : 2 * MAXQD); i++)
		post_recv(&b);
	check(dat_cr_accept(cr, b.ep, 0, NULL), "dat_cr_accept");
	if (wait_ev(b.conn).event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
		fprintf(stderr, PROG ": the connection was not established\n");
		return 1;
	}
	snprintf(role, sizeof(role), "server on qualifier %llu",
		 (unsigned long long)qual);
	banner(&t, ia, role);
	serve(&b, &t, t.warm);
	posted = reaped = 0;
	serve(&b, &t, t.n);
	table_start(&r, &t);
	print_table(&r);
	/* The client disconnects when it has its last completion. */
	ev = wait_ev(b.conn);
	check(dat_ia_close(b.ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
	return ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED ? 0 : 1;
refuse:
	fprintf(stderr, PROG ": not a client of this kdat-bench\n");
	check(dat_cr_reject(cr, 0, NULL), "dat_cr_reject");
	return 1;
}

static int client_main(char *ia, const struct test *t,
		       struct sockaddr_in *addr, DAT_CONN_QUAL qual)
{
	struct bench_req req = {
		.magic = BENCH_MAGIC, .lat = t->lat, .len = t->len,
		.qd = t->qd, .n = t->n, .warm = t->warm,
	};
	char role[64], ip[INET_ADDRSTRLEN];
	struct side a;

	side_open(&a, ia);
	side_ep(&a);
	if (t->lat)
		post_recv(&a);
	check(dat_ep_connect(a.ep, (DAT_IA_ADDRESS_PTR)addr, qual, TMO,
			     sizeof(req), &req, DAT_QOS_BEST_EFFORT,
			     DAT_CONNECT_DEFAULT_FLAG), "dat_ep_connect");
	if (wait_ev(a.conn).event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
		fprintf(stderr, PROG ": the server refused\n");
		return 1;
	}
	inet_ntop(AF_INET, &addr->sin_addr, ip, sizeof(ip));
	snprintf(role, sizeof(role), "client of %s, qualifier %llu", ip,
		 (unsigned long long)qual);
	banner(t, ia, role);
	measure(&a, NULL, t);
	check(dat_ep_disconnect(a.ep, DAT_CLOSE_GRACEFUL_FLAG),
	      "dat_ep_disconnect");
	wait_ev(a.conn);
	check(dat_ia_close(a.ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
	return 0;
}

/* A connection of --loopback: a sends, b receives; its thread's result. */
struct pair {
	struct side a, b;
	const struct test *t;
	pthread_t thread;
	double secs;		/* its measured loop */
	long posted, reaped;
};

static pthread_barrier_t start_line;

/* Connect @p's ends through the PSP on @qual of b's IA. */
static void pair_connect(struct pair *p, struct sockaddr_in *addr,
			 DAT_CONN_QUAL qual)
{
	DAT_EVENT ev;
	int i;

	side_ep(&p->a);
	side_ep(&p->b);
	check(dat_ep_connect(p->a.ep, (DAT_IA_ADDRESS_PTR)addr, qual, TMO, 0,
			     NULL, DAT_QOS_BEST_EFFORT,
			     DAT_CONNECT_DEFAULT_FLAG), "dat_ep_connect");
	ev = wait_ev(p->b.cr);
	check(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle,
			    p->b.ep, 0, NULL), "dat_cr_accept");
	if (wait_ev(p->a.conn).event_number !=
	    DAT_CONNECTION_EVENT_ESTABLISHED ||
	    wait_ev(p->b.conn).event_number !=
	    DAT_CONNECTION_EVENT_ESTABLISHED) {
		fprintf(stderr, PROG ": the connection was not established\n");
		exit(1);
	}
	for (i = 0; i < p->t->qd; i++)
		post_recv(&p->b);
	post_recv(&p->a);
}

/* A thread of --threads: the warm-up, then its loop from the start line. */
static void *pair_run(void *arg)
{
	struct pair *p = arg;
	double t0;

	rate(&p->a, &p->b, p->t->len, p->t->qd, p->t->warm);
	posted = reaped = 0;
	pthread_barrier_wait(&start_line);
	t0 = now();
	rate(&p->a, &p->b, p->t->len, p->t->qd, p->t->n);
	p->secs = now() - t0;
	p->posted = posted;
	p->reaped = reaped;
	return NULL;
}

/*
 * --threads: @nthreads threads, each over its own connection, start
 * together; the aggregate rate from the first start to the last end,
 * and the slowest thread's own.
 */
static void measure_threads(struct pair *p, int nthreads)
{
	double t0, t1, slowest = 0;
	struct table r;
	int i, err;

	err = pthread_barrier_init(&start_line, NULL, nthreads + 1);
	for (i = 0; i < nthreads && !err; i++)
		err = pthread_create(&p[i].thread, NULL, pair_run, &p[i]);
	if (err) {
		fprintf(stderr, PROG ": threads: %s\n", strerror(err));
		exit(1);
	}
	pthread_barrier_wait(&start_line);
	t0 = now();
	getppid();		/* marker: the measured loops start */
	for (i = 0; i < nthreads; i++)
		pthread_join(p[i].thread, NULL);
	getppid();		/* marker: they end */
	t1 = now();
	posted = reaped = 0;
	for (i = 0; i < nthreads; i++) {
		posted += p[i].posted;
		reaped += p[i].reaped;
		if (p[i].secs > slowest)
			slowest = p[i].secs;
	}
	table_start(&r, p->t);
	column(&r, "BW average[MB/sec]", "%.2f", (double)p->t->len *
	       p->t->n * nthreads / (t1 - t0) / (1 << 20));
	column(&r, "MsgRate[Mpps]", "%.6f",
	       p->t->n * nthreads / (t1 - t0) / 1e6);
	column(&r, "#threads", "%d", nthreads);
	column(&r, "SlowestThread[Mpps]", "%.6f", p->t->n / slowest / 1e6);
	print_table(&r);
}

/* --loopback: @nthreads connections (0: one, no thread of its own). */
static int loopback_main(char *ia, const struct test *t,
			 struct sockaddr_in *addr, DAT_CONN_QUAL qual,
			 int nthreads)
{
	char role[96], ip[INET_ADDRSTRLEN];
	struct pair *p;
	struct side a, b;
	DAT_PSP_HANDLE psp;
	int i, n = nthreads ? nthreads : 1;

	p = calloc(n, sizeof(*p));
	if (!p) {
		perror(PROG);
		return 1;
	}
	side_open(&a, ia);
	side_open(&b, ia);
	check(dat_psp_create(b.ia, qual, b.cr, DAT_PSP_CONSUMER_FLAG, &psp),
	      "dat_psp_create");
	for (i = 0; i < n; i++) {
		p[i].a = a;
		p[i].b = b;
		p[i].t = t;
		pair_connect(&p[i], addr, qual);
	}
	inet_ntop(AF_INET, &addr->sin_addr, ip, sizeof(ip));
	if (nthreads)
		snprintf(role, sizeof(role),
			 "%d pairs in %d threads of this process, to %s, qualifier %llu",
			 n, n, ip, (unsigned long long)qual);
	else
		snprintf(role, sizeof(role),
			 "both in this process, to %s, qualifier %llu", ip,
			 (unsigned long long)qual);
	banner(t, ia, role);
	if (nthreads)
		measure_threads(p, nthreads);
	else
		measure(&p->a, &p->b, t);
	check(dat_ia_close(a.ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
	check(dat_ia_close(b.ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
	free(p);
	return 0;
}

/* A usage error: "kdat-bench: MESSAGE", the usage on stderr, exit 2. */
#define usage_error(...) kdat_tool_usage_error(PROG, usage, __VA_ARGS__)

/* @s, the argument of option @opt: a whole number from @min to @max. */
static long long parse_number(const char *opt, const char *s,
			      long long min, long long max)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 0);
	if (end == s || *end)
		usage_error("%s '%s': not a number", opt, s);
	if (errno || v < min || v > max)
		usage_error("%s %s: not from %lld to %lld", opt, s, min, max);
	return v;
}

enum { OPT_BW = 256, OPT_LAT, OPT_LOOPBACK };

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "port", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "tx-depth", required_argument, NULL, 't' },
		{ "events", no_argument, NULL, 'e' },
		{ "bw", no_argument, NULL, OPT_BW },
		{ "lat", no_argument, NULL, OPT_LAT },
		{ "loopback", no_argument, NULL, OPT_LOOPBACK },
		{ "threads", required_argument, NULL, 'T' },
		KDAT_TOOL_LONGOPTS,
		{}
	};
	struct sockaddr_in addr = { .sin_family = AF_INET };
	struct test t = { .lat = -1, .qd = 0, .n = 1000 };
	long long size = -1, qual = 0;
	int c, port = 0, loopback = 0, events = 0, len, threads = 0;
	const char *dev = NULL, *e;
	char ia[DAT_NAME_MAX_LENGTH];

	while ((c = getopt_long(argc, argv, "d:i:p:s:n:t:T:ehV", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'd':
			dev = optarg;
			break;
		case 'i':
			port = parse_number("-i/--ib-port", optarg, 1, 255);
			break;
		case 'p':
			qual = parse_number("-p/--port", optarg, 1, LLONG_MAX);
			break;
		case 's':
			size = parse_number("-s/--size", optarg, 0, BUF);
			break;
		case 'n':
			t.n = parse_number("-n/--iters", optarg, 1, MAX_ITERS);
			break;
		case 't':
			t.qd = parse_number("-t/--tx-depth", optarg, 1, MAXQD);
			break;
		case 'e':
			events = 1;
			break;
		case 'T':
			threads = parse_number("-T/--threads", optarg, 1, 64);
			break;
		case OPT_BW:
		case OPT_LAT:
			if (t.lat >= 0 && t.lat != (c == OPT_LAT))
				usage_error("--bw and --lat: one or the other");
			t.lat = c == OPT_LAT;
			break;
		case OPT_LOOPBACK:
			loopback = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'V':
			kdat_tool_version(PROG);
			break;
		default:
			kdat_tool_bad_option(usage);
		}
	}
	if (t.lat < 0)
		t.lat = 0;
	if (t.lat && t.qd)
		usage_error("-t/--tx-depth: a ping-pong (--lat) has no depth");
	if (!t.qd)
		t.qd = t.lat ? 1 : 128;
	t.len = size >= 0 ? size : t.lat ? 2 : 65536;
	t.warm = t.n / 10 + 1;

	if (!dev || !*dev)
		usage_error("no IA: name its device with -d/--ib-dev");
	if (port && strchr(dev, ':'))
		usage_error("-i/--ib-port %d: -d/--ib-dev %s names a port",
			    port, dev);
	if (port)
		len = snprintf(ia, sizeof(ia), "%s:%d", dev, port);
	else
		len = snprintf(ia, sizeof(ia), "%s", dev);
	if (len >= (int)sizeof(ia))
		usage_error("-d/--ib-dev: a name too long");

	if (argc - optind > 1)
		usage_error("%s %s: one address at most", argv[optind],
			    argv[optind + 1]);
	if (argc - optind == 1 &&
	    inet_pton(AF_INET, argv[optind], &addr.sin_addr) != 1)
		usage_error("%s: not an IPv4 address", argv[optind]);
	if (loopback && argc == optind)
		usage_error("--loopback: wants the IA's own IPv4 address");
	if (threads && (!loopback || t.lat))
		usage_error("-T/--threads: with --loopback and --bw only");

	e = getenv("KDAT_BENCH_WAIT");
	wait_reap = events || (e && atoi(e) > 0);
	if (argc == optind)
		return server_main(ia, qual ? qual : QUAL_SERVER);
	if (loopback)
		return loopback_main(ia, &t, &addr,
				     qual ? qual : QUAL_LOOPBACK, threads);
	return client_main(ia, &t, &addr, qual ? qual : QUAL_SERVER);
}
