// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * kdat-stat: kdat's objects per process, from the kernel's generic netlink
 * family "kdat" (include/uapi/linux/kdat_netlink.h).
 *
 *   kdat-stat [-j [-p]] [-d] [TYPE...] [pid PID] [link DEV[/PORT]]
 *             [state STATE] [lqpn QPN]
 *
 * TYPE: ia, ep, lmr, evd, pz, psp, cr, srq, cno, rmr, ah (default: all).
 * The options, filter words and JSON keys are rdma(8)'s (rdma res show)
 * where they mean the same. A user sees the processes of their own uid;
 * root (CAP_NET_ADMIN) sees every process and the kernel's consumers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/kdat.h>
#include <linux/kdat_netlink.h>

#include "kdat_tool.h"

#define PROG "kdat-stat"
#define OPTSTRING "jpdhV"
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char usage[] =
	"usage: kdat-stat [OPTIONS] [TYPE...] [FILTER...]\n"
	"  kdat's objects per process, from the kernel's netlink family kdat.\n"
	"  TYPE:    ia ep lmr evd pz psp cr srq cno rmr ah, or all (default)\n"
	"  FILTER:  pid PID            objects of these processes\n"
	"           link DEV[/PORT]    objects on an IA of this device (port)\n"
	"           state STATE        Endpoints in this state (CONNECTED...)\n"
	"           lqpn QPN           Endpoints of these QP numbers\n"
	"           PID, QPN: a number, a range N-M, or a list: 1,5-7\n"
	"  -j, --json      JSON output\n"
	"  -p, --pretty    with -j: pretty JSON\n"
	"  -d, --details   every object's link; EVD flags by name\n"
	"  -h, --help      this help\n"
	"  -V, --version   the version\n";

struct obj {
	uint32_t type, handle, ia, pid, users;
	char comm[32];
	bool has[KDAT_NLA_MAX + 1];
	uint64_t v[KDAT_NLA_MAX + 1];	/* the integer attributes */
	char dev[64];
	struct sockaddr_storage src, dst;
	const struct obj *ia_obj;	/* its IA (an IA: itself), or NULL */
};

static struct obj *objs;
static size_t nr_objs, cap_objs;

static const char *const type_names[] = {
	[KDAT_NL_OBJ_IA] = "ia",   [KDAT_NL_OBJ_PZ] = "pz",
	[KDAT_NL_OBJ_LMR] = "lmr", [KDAT_NL_OBJ_EVD] = "evd",
	[KDAT_NL_OBJ_EP] = "ep",   [KDAT_NL_OBJ_PSP] = "psp",
	[KDAT_NL_OBJ_CR] = "cr",   [KDAT_NL_OBJ_SRQ] = "srq",
	[KDAT_NL_OBJ_CNO] = "cno", [KDAT_NL_OBJ_RMR] = "rmr",
	[KDAT_NL_OBJ_AH] = "ah",
};
#define NR_TYPES ARRAY_SIZE(type_names)

static const char *const state_names[] = {
	[KDAT_EP_STATE_UNCONNECTED] = "UNCONNECTED",
	[KDAT_EP_STATE_RESERVED] = "RESERVED",
	[KDAT_EP_STATE_PASSIVE_CONNECTION_PENDING] =
		"PASSIVE_CONNECTION_PENDING",
	[KDAT_EP_STATE_ACTIVE_CONNECTION_PENDING] =
		"ACTIVE_CONNECTION_PENDING",
	[KDAT_EP_STATE_TENTATIVE_CONNECTION_PENDING] =
		"TENTATIVE_CONNECTION_PENDING",
	[KDAT_EP_STATE_CONNECTED] = "CONNECTED",
	[KDAT_EP_STATE_DISCONNECT_PENDING] = "DISCONNECT_PENDING",
	[KDAT_EP_STATE_DISCONNECTED] = "DISCONNECTED",
	[KDAT_EP_STATE_COMPLETION_PENDING] = "COMPLETION_PENDING",
};
#define NR_STATES ARRAY_SIZE(state_names)

/* An EVD's KDAT_EVD_* flags, by name (-d). */
static const struct {
	uint32_t flag;
	const char *name;
} evd_flags[] = {
	{ KDAT_EVD_SOFTWARE, "SOFTWARE" },
	{ KDAT_EVD_CR, "CR" },
	{ KDAT_EVD_DTO, "DTO" },
	{ KDAT_EVD_CONNECTION, "CONNECTION" },
	{ KDAT_EVD_RMR_BIND, "RMR_BIND" },
	{ KDAT_EVD_ASYNC, "ASYNC" },
};
#define NR_EVD_FLAGS ARRAY_SIZE(evd_flags)

static const char *type_name(uint32_t t)
{
	return t < NR_TYPES && type_names[t] ? type_names[t] : "?";
}

static const char *state_name(uint64_t s)
{
	return s < NR_STATES && state_names[s] ? state_names[s] : "?";
}

static void die(const char *what)
{
	fprintf(stderr, PROG ": %s: %s\n", what, strerror(errno));
	exit(1);
}

/* What the command line selects. */

/* PID or QPN: ranges lo..hi, each inclusive. */
struct ranges {
	size_t n;
	struct {
		uint32_t lo, hi;
	} *r;
};

static struct {
	bool type[NR_TYPES], any_type;
	struct ranges pid, lqpn;
	const char *state;
	const char *link_dev;
	uint32_t link_port;		/* 0: any port */
} want;

static bool in_ranges(const struct ranges *rs, uint32_t v)
{
	size_t i;

	for (i = 0; i < rs->n; i++)
		if (v >= rs->r[i].lo && v <= rs->r[i].hi)
			return true;
	return false;
}

/* A decimal u32 that ends at @end's first character; false if none. */
static bool parse_u32(const char *s, char **end, uint32_t *v)
{
	unsigned long long x;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	x = strtoull(s, end, 10);
	if (errno || x > UINT32_MAX)
		return false;
	*v = x;
	return true;
}

/* "N", "N-M" or a comma-separated list of them, as rdma's filters. */
static bool parse_ranges(const char *s, struct ranges *rs)
{
	for (;;) {
		uint32_t lo, hi;
		char *end;

		if (!parse_u32(s, &end, &lo))
			return false;
		hi = lo;
		if (*end == '-' && (!parse_u32(end + 1, &end, &hi) || hi < lo))
			return false;
		rs->r = realloc(rs->r, (rs->n + 1) * sizeof(*rs->r));
		if (!rs->r)
			die("realloc");
		rs->r[rs->n].lo = lo;
		rs->r[rs->n].hi = hi;
		rs->n++;
		if (!*end)
			return true;
		if (*end != ',')
			return false;
		s = end + 1;
	}
}

/* "DEV" or "DEV/PORT", PORT from 1 as rdma's. */
static bool parse_link(const char *s)
{
	const char *slash = strchr(s, '/');
	size_t len = slash ? (size_t)(slash - s) : strlen(s);
	char *end;

	if (!len)
		return false;
	if (slash && (!parse_u32(slash + 1, &end, &want.link_port) || *end ||
		      !want.link_port))
		return false;
	want.link_dev = strndup(s, len);
	if (!want.link_dev)
		die("strndup");
	return true;
}

static bool parse_state(const char *s)
{
	size_t i;

	for (i = 0; i < NR_STATES; i++) {
		if (state_names[i] && !strcasecmp(s, state_names[i])) {
			want.state = state_names[i];
			return true;
		}
	}
	return false;
}

enum { F_PID, F_LINK, F_STATE, F_LQPN, NR_FILTERS };
static const struct {
	const char *word, *values;
} filters[NR_FILTERS] = {
	[F_PID] = { "pid", "N, N-M, or a list of them: 1,5-7" },
	[F_LINK] = { "link", "DEV or DEV/PORT, PORT from 1" },
	[F_STATE] = { "state", "an Endpoint state, such as CONNECTED" },
	[F_LQPN] = { "lqpn", "N, N-M, or a list of them: 1,5-7" },
};

/* A word that is no type and no filter: a usage error, with a hint. */
static void __attribute__((noreturn)) unknown_word(const char *w)
{
	const char *hint = "";

	if (!strcmp(w, "dev"))
		hint = " (a device: link DEV[/PORT])";
	else if (strspn(w, "0123456789") == strlen(w))
		hint = " (a process: pid PID)";
	kdat_tool_usage_error(PROG, usage,
			      "unknown object type or filter '%s'%s", w, hint);
}

/* The words after the options: TYPE... and FILTER VALUE pairs. */
static void parse_words(int argc, char **argv)
{
	bool given[NR_FILTERS] = { false }, ok = false;
	int i;

	for (i = 0; i < argc; i++) {
		const char *w = argv[i];
		size_t t, f;

		for (t = 1; t < NR_TYPES; t++)
			if (!strcmp(w, type_names[t]))
				break;
		if (t < NR_TYPES) {
			want.type[t] = want.any_type = true;
			continue;
		}
		if (!strcmp(w, "all"))
			continue;
		for (f = 0; f < NR_FILTERS; f++)
			if (!strcmp(w, filters[f].word))
				break;
		if (f == NR_FILTERS)
			unknown_word(w);
		if (given[f])
			kdat_tool_usage_error(PROG, usage,
					      "filter '%s' given twice", w);
		given[f] = true;
		if (++i == argc)
			kdat_tool_usage_error(PROG, usage,
					      "filter '%s' wants a value", w);
		switch (f) {
		case F_PID:
			ok = parse_ranges(argv[i], &want.pid);
			break;
		case F_LINK:
			ok = parse_link(argv[i]);
			break;
		case F_STATE:
			ok = parse_state(argv[i]);
			break;
		case F_LQPN:
			ok = parse_ranges(argv[i], &want.lqpn);
			break;
		}
		if (!ok)
			kdat_tool_usage_error(PROG, usage,
					      "bad %s '%s': want %s", w,
					      argv[i], filters[f].values);
	}
}

/* Netlink */

static int nl_send(int fd, uint16_t type, uint16_t flags, uint8_t cmd,
		   const void *attrs, size_t attrs_len, uint32_t seq)
{
	char buf[256] = { 0 };
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	struct genlmsghdr *g = NLMSG_DATA(nlh);

	nlh->nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN) + attrs_len;
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nlh->nlmsg_seq = seq;
	g->cmd = cmd;
	g->version = 1;
	memcpy((char *)g + GENL_HDRLEN, attrs, attrs_len);
	return send(fd, buf, nlh->nlmsg_len, 0) < 0 ? -1 : 0;
}

/* Calls @fn for each message of the answer to @seq; 0, or an errno. */
static int nl_recv(int fd, uint32_t seq,
		   void (*fn)(const struct nlmsghdr *nlh, void *arg), void *arg)
{
	static char buf[65536];

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *nlh;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		for (nlh = (struct nlmsghdr *)buf; NLMSG_OK(nlh, (size_t)n);
		     nlh = NLMSG_NEXT(nlh, n)) {
			if (nlh->nlmsg_seq != seq)
				continue;
			if (nlh->nlmsg_type == NLMSG_DONE)
				return 0;
			if (nlh->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(nlh);

				return -e->error;
			}
			fn(nlh, arg);
			if (!(nlh->nlmsg_flags & NLM_F_MULTI))
				return 0;
		}
	}
}

#define for_each_attr(a, start, len)					\
	for (a = (const struct nlattr *)(start);			\
	     (len) >= (int)sizeof(*a) && a->nla_len >= sizeof(*a) &&	\
	     a->nla_len <= (len);					\
	     (len) -= NLA_ALIGN(a->nla_len),				\
	     a = (const struct nlattr *)((const char *)a +		\
					 NLA_ALIGN(a->nla_len)))

static void family_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct genlmsghdr *g = NLMSG_DATA(nlh);
	int len = nlh->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN);
	const struct nlattr *a;

	for_each_attr(a, (const char *)g + GENL_HDRLEN, len)
		if ((a->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID)
			*(uint16_t *)arg = *(const uint16_t *)(a + 1);
}

static uint16_t family_id(int fd)
{
	char attr[NLA_HDRLEN + NLA_ALIGN(sizeof(KDAT_GENL_NAME))] = { 0 };
	struct nlattr *a = (struct nlattr *)attr;
	uint16_t id = 0;
	int err;

	a->nla_type = CTRL_ATTR_FAMILY_NAME;
	a->nla_len = NLA_HDRLEN + sizeof(KDAT_GENL_NAME);
	memcpy(a + 1, KDAT_GENL_NAME, sizeof(KDAT_GENL_NAME));
	if (nl_send(fd, GENL_ID_CTRL, 0, CTRL_CMD_GETFAMILY, attr,
		    sizeof(attr), 1))
		die("netlink send");
	err = nl_recv(fd, 1, family_cb, &id);
	if (err == ENOENT || (!err && !id)) {
		fputs(PROG ": no kdat netlink family: kdat.ko is not loaded (sudo modprobe kdat)\n",
		      stderr);
		exit(1);
	}
	if (err) {
		errno = err;
		die("netlink family kdat");
	}
	return id;
}

static void obj_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct genlmsghdr *g = NLMSG_DATA(nlh);
	int len = nlh->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN);
	const struct nlattr *a;
	struct obj *o;

	(void)arg;
	if (nr_objs == cap_objs) {
		cap_objs = cap_objs ? 2 * cap_objs : 64;
		objs = realloc(objs, cap_objs * sizeof(*objs));
		if (!objs)
			die("realloc");
	}
	o = &objs[nr_objs++];
	memset(o, 0, sizeof(*o));
	for_each_attr(a, (const char *)g + GENL_HDRLEN, len) {
		unsigned int t = a->nla_type & NLA_TYPE_MASK;
		const void *p = a + 1;
		size_t plen = a->nla_len - NLA_HDRLEN;

		if (t > KDAT_NLA_MAX)
			continue;	/* newer than this tool */
		switch (t) {
		case KDAT_NLA_COMM:
			snprintf(o->comm, sizeof(o->comm), "%.*s", (int)plen,
				 (const char *)p);
			break;
		case KDAT_NLA_DEV_NAME:
			snprintf(o->dev, sizeof(o->dev), "%.*s", (int)plen,
				 (const char *)p);
			break;
		case KDAT_NLA_SRC_ADDR:
		case KDAT_NLA_DST_ADDR:
			if (plen > sizeof(o->src))
				break;
			memcpy(t == KDAT_NLA_SRC_ADDR ? &o->src : &o->dst, p,
			       plen);
			break;
		default:
			if (plen == 1)
				o->v[t] = *(const uint8_t *)p;
			else if (plen == 4)
				o->v[t] = *(const uint32_t *)p;
			else if (plen == 8)
				memcpy(&o->v[t], p, 8);
			else
				continue;
		}
		o->has[t] = true;
	}
	o->type = o->v[KDAT_NLA_TYPE];
	o->handle = o->v[KDAT_NLA_HANDLE];
	o->ia = o->v[KDAT_NLA_IA];
	o->pid = o->v[KDAT_NLA_PID];
	o->users = o->v[KDAT_NLA_USERS];
}

static int obj_cmp(const void *x, const void *y)
{
	const struct obj *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	return a->handle < b->handle ? -1 : a->handle > b->handle;
}

/*
 * Each object's IA, in the sorted dump: handles are global, and an object
 * is listed under the same PID as its IA (both are its file's) unless the
 * file's opener exited during the dump.
 */
static void find_ias(void)
{
	size_t i, k;

	for (i = 0; i < nr_objs; i++) {
		struct obj *o = &objs[i], key = {
			.pid = o->pid, .type = KDAT_NL_OBJ_IA, .handle = o->ia,
		};

		if (o->type == KDAT_NL_OBJ_IA) {
			o->ia_obj = o;
			continue;
		}
		o->ia_obj = bsearch(&key, objs, nr_objs, sizeof(*objs),
				    obj_cmp);
		for (k = 0; !o->ia_obj && k < nr_objs; k++)
			if (objs[k].type == KDAT_NL_OBJ_IA &&
			    objs[k].handle == o->ia)
				o->ia_obj = &objs[k];
	}
}

static bool selected(const struct obj *o)
{
	const struct obj *ia = o->ia_obj;

	if (want.pid.n && !in_ranges(&want.pid, o->pid))
		return false;
	if (want.any_type && (o->type >= NR_TYPES || !want.type[o->type]))
		return false;
	if (want.state && (!o->has[KDAT_NLA_EP_STATE] ||
			   state_name(o->v[KDAT_NLA_EP_STATE]) != want.state))
		return false;
	if (want.lqpn.n && (!o->has[KDAT_NLA_QPN] ||
			    !in_ranges(&want.lqpn, o->v[KDAT_NLA_QPN])))
		return false;
	if (want.link_dev && (!ia || strcmp(ia->dev, want.link_dev) ||
			      (want.link_port &&
			       ia->v[KDAT_NLA_PORT] != want.link_port)))
		return false;
	return true;
}

/* Output */

static bool json, pretty, details;

/* "ADDR:PORT", "[ADDR6]:PORT", or "-" */
static const char *addr_str(const struct sockaddr_storage *ss, char *buf,
			    size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)ss;

		inet_ntop(AF_INET, &s->sin_addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(s->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)ss;

		inet_ntop(AF_INET6, &s->sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(s->sin6_port));
	} else {
		snprintf(buf, len, "-");
	}
	return buf;
}

static const char *poll_mode(const struct obj *o)
{
	if (!o->has[KDAT_NLA_POLL_MODE])
		return "-";
	switch (o->v[KDAT_NLA_POLL_MODE]) {
	case KDAT_POLLER_NONE:
		return "none";
	case KDAT_POLLER_SPIN:
		return "spin";
	default:
		return "adaptive";
	}
}

static void print_link(const struct obj *o)
{
	if (o->ia_obj)
		printf(" link %s/%" PRIu64, o->ia_obj->dev,
		       o->ia_obj->v[KDAT_NLA_PORT]);
	else
		printf(" link -");
}

static void print_text(const struct obj *o)
{
	char s[80], d[80];
	const char *sep = "";
	size_t i;

	printf("  %s %u", type_name(o->type), o->handle);
	if (o->type == KDAT_NL_OBJ_IA) {
		print_link(o);
	} else {
		printf(" ia %u", o->ia);
		if (details)
			print_link(o);
	}
	switch (o->type) {
	case KDAT_NL_OBJ_IA:
		printf(" poller %s", poll_mode(o));
		if ((int32_t)o->v[KDAT_NLA_POLL_CPU] >= 0)
			printf(" cpu %d", (int32_t)o->v[KDAT_NLA_POLL_CPU]);
		printf(" %s", o->v[KDAT_NLA_POLLER] ? "running" : "idle");
		break;
	case KDAT_NL_OBJ_EP:
		printf(" %s%s lqpn %" PRIu64 " %s -> %s",
		       o->v[KDAT_NLA_EP_UD] ? "UD " : "",
		       state_name(o->v[KDAT_NLA_EP_STATE]),
		       o->v[KDAT_NLA_QPN], addr_str(&o->src, s, sizeof(s)),
		       addr_str(&o->dst, d, sizeof(d)));
		printf(" sq %" PRIu64 "/%" PRIu64 " rq %" PRIu64 "/%" PRIu64,
		       o->v[KDAT_NLA_SQ_POSTED], o->v[KDAT_NLA_SQ_DEPTH],
		       o->v[KDAT_NLA_RQ_POSTED], o->v[KDAT_NLA_RQ_DEPTH]);
		printf(" sent %" PRIu64 " received %" PRIu64 " errors %" PRIu64
		       "%s", o->v[KDAT_NLA_SQ_DONE], o->v[KDAT_NLA_RQ_DONE],
		       o->v[KDAT_NLA_ERRORS],
		       o->v[KDAT_NLA_RINGS] ? " rings" : "");
		break;
	case KDAT_NL_OBJ_LMR:
		printf(" mrlen %" PRIu64 " pinned %" PRIu64,
		       o->v[KDAT_NLA_LENGTH], o->v[KDAT_NLA_PINNED]);
		break;
	case KDAT_NL_OBJ_EVD:
		printf(" qlen %" PRIu64 " flags %#" PRIx64,
		       o->v[KDAT_NLA_QLEN], o->v[KDAT_NLA_EVD_FLAGS]);
		if (!details)
			break;
		printf(" <");
		for (i = 0; i < NR_EVD_FLAGS; i++) {
			if (!(o->v[KDAT_NLA_EVD_FLAGS] & evd_flags[i].flag))
				continue;
			printf("%s%s", sep, evd_flags[i].name);
			sep = ",";
		}
		printf(">");
		break;
	}
	if (o->users)
		printf(" users %u", o->users);
	printf("\n");
}

/* A process's line: its name and what it has in all. */
static void print_process(uint32_t pid, const char *comm)
{
	unsigned int n[NR_TYPES] = { 0 };
	uint64_t pinned = 0;
	size_t i;

	for (i = 0; i < nr_objs; i++) {
		if (objs[i].pid != pid)
			continue;
		if (objs[i].type < NR_TYPES)
			n[objs[i].type]++;
		pinned += objs[i].v[KDAT_NLA_PINNED];
	}
	printf("pid %u %s: ia %u ep %u lmr %u evd %u, pinned %" PRIu64
	       " bytes\n", pid, comm, n[KDAT_NL_OBJ_IA], n[KDAT_NL_OBJ_EP],
	       n[KDAT_NL_OBJ_LMR], n[KDAT_NL_OBJ_EVD], pinned);
}

/*
 * JSON, compact (one line, as rdma -j) or pretty (-p: a member a line,
 * indented by 4).
 */
static unsigned int j_depth;
static bool j_more;		/* a member precedes at this depth */

static void j_indent(void)
{
	unsigned int i;

	if (!pretty)
		return;
	putchar('\n');
	for (i = 0; i < j_depth; i++)
		fputs("    ", stdout);
}

/* Before a member of an array or an object. */
static void j_next(void)
{
	if (j_more)
		putchar(',');
	j_more = true;
	j_indent();
}

static void j_open(char c)
{
	putchar(c);
	j_depth++;
	j_more = false;
}

static void j_close(char c)
{
	j_depth--;
	if (j_more)
		j_indent();
	putchar(c);
	j_more = true;
}

static void j_key(const char *key)
{
	j_next();
	printf("\"%s\":%s", key, pretty ? " " : "");
}

static void j_str_val(const char *v)
{
	putchar('"');
	for (; *v; v++) {
		if (*v == '"' || *v == '\\')
			printf("\\%c", *v);
		else if ((unsigned char)*v < 0x20 || *v == 0x7f)
			printf("\\u%04x", (unsigned char)*v);
		else
			putchar(*v);
	}
	putchar('"');
}

static void j_str(const char *key, const char *v)
{
	j_key(key);
	j_str_val(v);
}

static void j_u64(const char *key, uint64_t v)
{
	j_key(key);
	printf("%" PRIu64, v);
}

static void j_bool(const char *key, bool v)
{
	j_key(key);
	fputs(v ? "true" : "false", stdout);
}

/* An EP's address: rdma res show cm_id's src-addr and src-port. */
static void j_addr(const char *addr_key, const char *port_key,
		   const struct sockaddr_storage *ss)
{
	char a[INET6_ADDRSTRLEN];
	const struct sockaddr_in *s4 = (const void *)ss;
	const struct sockaddr_in6 *s6 = (const void *)ss;

	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
	else if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
	else
		return;		/* not known (yet) */
	j_str(addr_key, a);
	j_u64(port_key, ntohs(ss->ss_family == AF_INET ? s4->sin_port :
							 s6->sin6_port));
}

static void print_json(const struct obj *o)
{
	size_t i;

	j_next();
	j_open('{');
	j_u64("pid", o->pid);
	j_str("comm", o->comm);
	j_str("type", type_name(o->type));
	j_u64("handle", o->handle);
	j_u64("ia", o->ia);
	if (o->ia_obj) {
		j_str("ifname", o->ia_obj->dev);
		j_u64("port", o->ia_obj->v[KDAT_NLA_PORT]);
	}
	j_u64("users", o->users);
	switch (o->type) {
	case KDAT_NL_OBJ_IA:
		j_str("poller", poll_mode(o));
		j_key("cpu");
		printf("%d", (int32_t)o->v[KDAT_NLA_POLL_CPU]);
		j_bool("running", o->v[KDAT_NLA_POLLER]);
		break;
	case KDAT_NL_OBJ_EP:
		j_str("state", state_name(o->v[KDAT_NLA_EP_STATE]));
		j_bool("ud", o->v[KDAT_NLA_EP_UD]);
		j_u64("lqpn", o->v[KDAT_NLA_QPN]);
		j_addr("src-addr", "src-port", &o->src);
		j_addr("dst-addr", "dst-port", &o->dst);
		j_u64("sq_posted", o->v[KDAT_NLA_SQ_POSTED]);
		j_u64("sq_depth", o->v[KDAT_NLA_SQ_DEPTH]);
		j_u64("rq_posted", o->v[KDAT_NLA_RQ_POSTED]);
		j_u64("rq_depth", o->v[KDAT_NLA_RQ_DEPTH]);
		j_u64("sent", o->v[KDAT_NLA_SQ_DONE]);
		j_u64("received", o->v[KDAT_NLA_RQ_DONE]);
		j_u64("errors", o->v[KDAT_NLA_ERRORS]);
		j_bool("rings", o->v[KDAT_NLA_RINGS]);
		break;
	case KDAT_NL_OBJ_LMR:
		j_u64("mrlen", o->v[KDAT_NLA_LENGTH]);
		j_u64("pinned", o->v[KDAT_NLA_PINNED]);
		break;
	case KDAT_NL_OBJ_EVD:
		j_u64("qlen", o->v[KDAT_NLA_QLEN]);
		j_u64("flags", o->v[KDAT_NLA_EVD_FLAGS]);
		if (!details)
			break;
		j_key("flag_names");
		j_open('[');
		for (i = 0; i < NR_EVD_FLAGS; i++) {
			if (o->v[KDAT_NLA_EVD_FLAGS] & evd_flags[i].flag) {
				j_next();
				j_str_val(evd_flags[i].name);
			}
		}
		j_close(']');
		break;
	}
	j_close('}');
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "pretty", no_argument, NULL, 'p' },
		{ "details", no_argument, NULL, 'd' },
		KDAT_TOOL_LONGOPTS,
		{}
	};
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	const struct obj *last = NULL;
	size_t i;
	uint16_t id;
	int fd, c, err;

	opterr = 0;
	while ((c = getopt_long(argc, argv, OPTSTRING, longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'p':
			pretty = true;
			break;
		case 'd':
			details = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'V':
			kdat_tool_version(PROG);
			break;
		default:
			/* Ours take no value: one of them is --NAME=VALUE. */
			if (optopt && strchr(OPTSTRING, optopt))
				kdat_tool_usage_error(PROG, usage,
					"option '%s' takes no value",
					argv[optind - 1]);
			if (optopt)
				kdat_tool_usage_error(PROG, usage,
						      "unknown option '-%c'",
						      optopt);
			kdat_tool_usage_error(PROG, usage,
					      "unknown option '%s'",
					      argv[optind - 1]);
		}
	}
	parse_words(argc - optind, argv + optind);
	if (!json)
		pretty = false;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (fd < 0)
		die("netlink socket");
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die("netlink bind");
	id = family_id(fd);
	if (nl_send(fd, id, NLM_F_DUMP, KDAT_NL_CMD_OBJ_GET, NULL, 0, 2))
		die("netlink send");
	err = nl_recv(fd, 2, obj_cb, NULL);
	if (err) {
		errno = err;
		die("kdat dump");
	}
	close(fd);
	if (nr_objs)
		qsort(objs, nr_objs, sizeof(*objs), obj_cmp);
	find_ias();

	if (json)
		j_open('[');
	for (i = 0; i < nr_objs; i++) {
		const struct obj *o = &objs[i];

		if (!selected(o))
			continue;
		if (json) {
			print_json(o);
		} else {
			if (!last || last->pid != o->pid)
				print_process(o->pid, o->comm);
			print_text(o);
		}
		last = o;
	}
	if (json) {
		j_close(']');
		putchar('\n');
	}
	if (fflush(stdout) || ferror(stdout))
		die("stdout");
	return 0;
}
