// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * kdat-stat: kdat's objects per process, from the kernel's generic netlink
 * family "kdat" (include/uapi/linux/kdat_netlink.h).
 *
 *   kdat-stat [-j] [-p PID] [TYPE...] [state STATE] [dev DEV]
 *
 * TYPE: ia, ep, lmr, evd, pz, psp, cr, srq, cno, rmr, ah (default: all).
 * A user sees the processes of their own uid; root (CAP_NET_ADMIN) sees
 * every process and the kernel's consumers.
 */
#include <arpa/inet.h>
#include <errno.h>
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

struct obj {
	uint32_t type, handle, ia, pid, users;
	char comm[32];
	bool has[KDAT_NLA_MAX + 1];
	uint64_t v[KDAT_NLA_MAX + 1];	/* the integer attributes */
	char dev[64];
	struct sockaddr_storage src, dst;
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
#define NR_TYPES (sizeof(type_names) / sizeof(type_names[0]))

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

static const char *type_name(uint32_t t)
{
	return t < NR_TYPES && type_names[t] ? type_names[t] : "?";
}

static const char *state_name(uint64_t s)
{
	return s < sizeof(state_names) / sizeof(state_names[0]) &&
	       state_names[s] ? state_names[s] : "?";
}

static void usage(void)
{
	fprintf(stderr,
		"usage: kdat-stat [-j] [-p PID] [TYPE...] [state STATE] [dev DEV]\n"
		"  TYPE: ia ep lmr evd pz psp cr srq cno rmr ah (default: all)\n"
		"  -j    JSON\n");
	exit(2);
}

static void die(const char *what)
{
	fprintf(stderr, "kdat-stat: %s: %s\n", what, strerror(errno));
	exit(1);
}

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
		fprintf(stderr,
			"kdat-stat: no kdat netlink family (is kdat.ko loaded?)\n");
		exit(1);
	}
	if (err) {
		errno = err;
		die("netlink family");
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
			if (plen <= sizeof(o->src))
				memcpy(t == KDAT_NLA_SRC_ADDR ? &o->src :
								&o->dst, p, plen);
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

static int obj_cmp(const void *x, const void *y)
{
	const struct obj *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	return a->handle < b->handle ? -1 : a->handle > b->handle;
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

static void print_text(const struct obj *o)
{
	char s[80], d[80];

	printf("  %s %u", type_name(o->type), o->handle);
	switch (o->type) {
	case KDAT_NL_OBJ_IA:
		printf(" dev %s port %" PRIu64 " poller %s", o->dev,
		       o->v[KDAT_NLA_PORT], poll_mode(o));
		if ((int32_t)o->v[KDAT_NLA_POLL_CPU] >= 0)
			printf(" cpu %d", (int32_t)o->v[KDAT_NLA_POLL_CPU]);
		printf(" %s", o->v[KDAT_NLA_POLLER] ? "running" : "idle");
		break;
	case KDAT_NL_OBJ_EP:
		printf(" ia %u %s%s qpn %" PRIu64 " %s -> %s", o->ia,
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
		printf(" ia %u length %" PRIu64 " pinned %" PRIu64, o->ia,
		       o->v[KDAT_NLA_LENGTH], o->v[KDAT_NLA_PINNED]);
		break;
	case KDAT_NL_OBJ_EVD:
		printf(" ia %u qlen %" PRIu64 " flags %#" PRIx64, o->ia,
		       o->v[KDAT_NLA_QLEN], o->v[KDAT_NLA_EVD_FLAGS]);
		break;
	default:
		printf(" ia %u", o->ia);
	}
	if (o->users)
		printf(" users %u", o->users);
	printf("\n");
}

static void json_str(const char *key, const char *v)
{
	printf("\"%s\":\"", key);
	for (; *v; v++) {
		if (*v == '"' || *v == '\\')
			printf("\\%c", *v);
		else if ((unsigned char)*v < 0x20)
			printf("\\u%04x", *v);
		else
			putchar(*v);
	}
	printf("\"");
}

static void print_json(const struct obj *o)
{
	char s[80], d[80];

	printf("{\"pid\":%u,", o->pid);
	json_str("comm", o->comm);
	printf(",\"type\":\"%s\",\"handle\":%u,\"ia\":%u,\"users\":%u",
	       type_name(o->type), o->handle, o->ia, o->users);
	switch (o->type) {
	case KDAT_NL_OBJ_IA:
		printf(",");
		json_str("dev", o->dev);
		printf(",\"port\":%" PRIu64 ",\"poller\":\"%s\",\"cpu\":%d,"
		       "\"running\":%s", o->v[KDAT_NLA_PORT], poll_mode(o),
		       (int32_t)o->v[KDAT_NLA_POLL_CPU],
		       o->v[KDAT_NLA_POLLER] ? "true" : "false");
		break;
	case KDAT_NL_OBJ_EP:
		printf(",\"state\":\"%s\",\"ud\":%s,\"qpn\":%" PRIu64 ",",
		       state_name(o->v[KDAT_NLA_EP_STATE]),
		       o->v[KDAT_NLA_EP_UD] ? "true" : "false",
		       o->v[KDAT_NLA_QPN]);
		json_str("src", addr_str(&o->src, s, sizeof(s)));
		printf(",");
		json_str("dst", addr_str(&o->dst, d, sizeof(d)));
		printf(",\"sq_posted\":%" PRIu64 ",\"sq_depth\":%" PRIu64
		       ",\"rq_posted\":%" PRIu64 ",\"rq_depth\":%" PRIu64
		       ",\"sent\":%" PRIu64 ",\"received\":%" PRIu64
		       ",\"errors\":%" PRIu64 ",\"rings\":%s",
		       o->v[KDAT_NLA_SQ_POSTED], o->v[KDAT_NLA_SQ_DEPTH],
		       o->v[KDAT_NLA_RQ_POSTED], o->v[KDAT_NLA_RQ_DEPTH],
		       o->v[KDAT_NLA_SQ_DONE], o->v[KDAT_NLA_RQ_DONE],
		       o->v[KDAT_NLA_ERRORS],
		       o->v[KDAT_NLA_RINGS] ? "true" : "false");
		break;
	case KDAT_NL_OBJ_LMR:
		printf(",\"length\":%" PRIu64 ",\"pinned\":%" PRIu64,
		       o->v[KDAT_NLA_LENGTH], o->v[KDAT_NLA_PINNED]);
		break;
	case KDAT_NL_OBJ_EVD:
		printf(",\"qlen\":%" PRIu64 ",\"flags\":%" PRIu64,
		       o->v[KDAT_NLA_QLEN], o->v[KDAT_NLA_EVD_FLAGS]);
		break;
	}
	printf("}");
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

int main(int argc, char **argv)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	const char *want_state = NULL, *want_dev = NULL;
	bool json = false, want_type[NR_TYPES] = { false }, any_type = false;
	const struct obj *last = NULL;
	long want_pid = -1;
	size_t i, shown = 0;
	uint16_t id;
	int fd, c, err;

	while ((c = getopt(argc, argv, "jp:h")) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'p':
			want_pid = strtol(optarg, NULL, 10);
			break;
		default:
			usage();
		}
	}
	for (; optind < argc; optind++) {
		const char *w = argv[optind];
		bool found = false;

		if (!strcmp(w, "state") || !strcmp(w, "dev")) {
			if (optind + 1 >= argc)
				usage();
			*(w[0] == 's' ? &want_state : &want_dev) =
				argv[++optind];
			continue;
		}
		if (!strcmp(w, "all"))
			continue;
		for (i = 1; i < NR_TYPES; i++) {
			if (!strcmp(w, type_names[i])) {
				want_type[i] = any_type = found = true;
			}
		}
		if (!found)
			usage();
	}

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
	qsort(objs, nr_objs, sizeof(*objs), obj_cmp);

	if (json)
		printf("[");
	for (i = 0; i < nr_objs; i++) {
		const struct obj *o = &objs[i];
		const struct obj *ia = NULL;
		size_t k;

		if (want_pid >= 0 && o->pid != (uint32_t)want_pid)
			continue;
		if (any_type && (o->type >= NR_TYPES || !want_type[o->type]))
			continue;
		if (want_state && (o->type != KDAT_NL_OBJ_EP ||
				   strcasecmp(want_state,
					      state_name(o->v[KDAT_NLA_EP_STATE]))))
			continue;
		if (want_dev) {
			/* The device of the object's IA. */
			for (k = 0; k < nr_objs; k++)
				if (objs[k].type == KDAT_NL_OBJ_IA &&
				    objs[k].handle == o->ia)
					ia = &objs[k];
			if (!ia || strcmp(ia->dev, want_dev))
				continue;
		}
		if (json) {
			printf(shown ? ",\n " : "\n ");
			print_json(o);
		} else {
			if (!last || last->pid != o->pid)
				print_process(o->pid, o->comm);
			print_text(o);
		}
		shown++;
		last = o;
	}
	if (json)
		printf("%s]\n", shown ? "\n" : "");
	return 0;
}
