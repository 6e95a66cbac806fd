// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * kdat-info: what /dev/kdat sees, with the habits of ibv_devinfo.
 *
 *   kdat-info [-d DEV] [-i PORT] [-v]   every port of every RDMA device,
 *                                       the netdev behind it and that
 *                                       netdev's addresses (-v: GIDs too)
 *   kdat-info -l                        the device names only
 *   kdat-info ... -o DEV[:PORT]         also open an IA there, query it,
 *                                       close it
 *
 * The ports come from /dev/kdat; what is behind them (GIDs, netdevs) from
 * sysfs, as ibv_devinfo -v reads it, and the addresses from getifaddrs().
 * What sysfs does not say is printed as '-'.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kdat_lowlevel.h"
#include "kdat_tool.h"

#define SYSFS_IB	"/sys/class/infiniband"
#define SYSFS_NET	"/sys/class/net"
/* Bounds on what one port's sysfs holds, never reached in practice. */
#define MAX_GIDS	65536
#define MAX_NDEVS	16
/* "fe80:0000:0000:0000:5054:00ff:fe12:3456" and some room. */
#define GID_TEXT	48
#define GID_TYPE_TEXT	16

static const char usage[] =
	"usage: kdat-info [-d DEVICE] [-i PORT] [-l] [-v] [-o DEVICE[:PORT]]\n"
	"       kdat-info -h|--help | -V|--version\n"
	"  The RDMA ports /dev/kdat sees: state, link layer, MTU, node GUID,\n"
	"  and the netdev behind each port with its IPv4 addresses (what\n"
	"  kdat-demo and kdat-bench take).\n"
	"  -d, --ib-dev=DEVICE   only the ports of this RDMA device\n"
	"  -i, --ib-port=PORT    only this port (of each device, without -d)\n"
	"  -l, --list            only the names of the RDMA devices\n"
	"  -v, --verbose         also each port's GIDs and IPv6 addresses\n"
	"  -o, --open=DEVICE[:PORT]\n"
	"                        then open an IA on PORT (default 1) of\n"
	"                        DEVICE, query it and close it\n"
	"  -h, --help            print this help and exit\n"
	"  -V, --version         print the version and exit\n";

#define bad_usage(...) kdat_tool_usage_error("kdat-info", usage, __VA_ARGS__)

struct gid_entry {
	unsigned int index;
	char gid[GID_TEXT];
	char type[GID_TYPE_TEXT];
	char ndev[IF_NAMESIZE];		/* "-" when the GID has none */
};

/* What sysfs says is behind one port. */
struct port_net {
	struct gid_entry *gids;		/* the non-zero GIDs */
	unsigned int nr_gids;
	char ndevs[MAX_NDEVS][IF_NAMESIZE];
	unsigned int nr_ndevs;
};

static const char *link_layer_str(uint32_t ll)
{
	switch (ll) {
	case KDAT_LINK_LAYER_INFINIBAND:
		return "InfiniBand";
	case KDAT_LINK_LAYER_ETHERNET:
		return "Ethernet";
	default:
		return "unspecified";
	}
}

static void print_guid(uint64_t be_guid)
{
	uint64_t g = be64toh(be_guid);

	printf("%04x:%04x:%04x:%04x", (unsigned int)(g >> 48) & 0xffff,
	       (unsigned int)(g >> 32) & 0xffff,
	       (unsigned int)(g >> 16) & 0xffff, (unsigned int)g & 0xffff);
}

/*
 * One sysfs attribute into @buf (@len bytes), without its trailing
 * newline: 0, or -errno (-ENODATA when it is empty).
 */
static int read_attr(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return n;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return n ? 0 : -ENODATA;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Bytes written as hexadecimal pairs, with or without ':' between them
 * (a GID, "fe80:0000:...", or a hardware address, "52:54:00:..."): how
 * many went into @out (at most @max), or -1 when @s is not that.
 */
static int parse_hex(const char *s, unsigned char *out, int max)
{
	int n = 0, hi, lo;

	while (*s) {
		if (*s == ':') {
			s++;
			continue;
		}
		hi = hex_digit(s[0]);
		lo = hi < 0 ? -1 : hex_digit(s[1]);
		if (lo < 0 || n == max)
			return -1;
		out[n++] = hi << 4 | lo;
		s += 2;
	}
	return n;
}

static bool all_zero(const unsigned char *b, int len)
{
	while (len--)
		if (*b++)
			return false;
	return true;
}

static bool is_rnic(const char *dev)
{
	char path[PATH_MAX], buf[32];

	snprintf(path, sizeof(path), SYSFS_IB "/%s/node_type", dev);
	/* "4: RNIC": an iWARP device. */
	return !read_attr(path, buf, sizeof(buf)) && atoi(buf) == 4;
}

static void add_ndev(struct port_net *pn, const char *name)
{
	unsigned int i;

	for (i = 0; i < pn->nr_ndevs; i++)
		if (!strcmp(pn->ndevs[i], name))
			return;
	if (pn->nr_ndevs < MAX_NDEVS)
		snprintf(pn->ndevs[pn->nr_ndevs++], IF_NAMESIZE, "%s", name);
}

/*
 * The GID type as ibv_devinfo names it: sysfs says "IB/RoCE v1" for IB,
 * RoCE v1 and iWARP alike.
 */
static void gid_type(const char *dev, uint32_t port, unsigned int i,
		     bool ib, bool rnic, char *type, size_t len)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path),
		 SYSFS_IB "/%s/ports/%u/gid_attrs/types/%u", dev, port, i);
	if (read_attr(path, type, len))
		snprintf(type, len, "-");
	else if (!strcmp(type, "IB/RoCE v1"))
		snprintf(type, len, "%s",
			 rnic ? "iWARP" : ib ? "IB" : "RoCE v1");
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

/*
 * The netdevs whose hardware address holds @gid, for ports whose GIDs
 * name none: IPoIB's (its 20 bytes end with the port GID) and an iWARP
 * device's (its GID begins with the MAC).
 */
static void ndevs_by_hwaddr(struct port_net *pn, const unsigned char *gid)
{
	char path[PATH_MAX], buf[128];
	unsigned char hw[32];
	struct dirent *de;
	DIR *d;
	int n;

	d = opendir(SYSFS_NET);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' ||
		    strlen(de->d_name) >= IF_NAMESIZE)
			continue;
		snprintf(path, sizeof(path), SYSFS_NET "/%s/address",
			 de->d_name);
		if (read_attr(path, buf, sizeof(buf)))
			continue;
		n = parse_hex(buf, hw, sizeof(hw));
		if ((n == 20 && !memcmp(hw + 4, gid, 16)) ||
		    (n == 6 && !memcmp(hw, gid, 6) && all_zero(gid + 6, 10)))
			add_ndev(pn, de->d_name);
	}
	closedir(d);
	/* In name order, not the directory's. */
	qsort(pn->ndevs, pn->nr_ndevs, sizeof(pn->ndevs[0]), cmp_name);
}

/* Fill @pn from /sys/class/infiniband/DEV/ports/PORT; never fails. */
static void port_net_read(const struct kdat_port_info *p,
			  struct port_net *pn)
{
	bool ib = p->link_layer == KDAT_LINK_LAYER_INFINIBAND;
	bool rnic = is_rnic(p->name);
	unsigned char raw[16], first[16];
	char path[PATH_MAX], buf[GID_TEXT];
	struct gid_entry *g, *more;
	unsigned int i, room = 0;
	bool have_first = false;
	int ret;

	memset(pn, 0, sizeof(*pn));
	for (i = 0; i < MAX_GIDS; i++) {
		snprintf(path, sizeof(path), SYSFS_IB "/%s/ports/%u/gids/%u",
			 p->name, p->port_num, i);
		ret = read_attr(path, buf, sizeof(buf));
		if (ret == -ENOENT)
			break;		/* the end of the table */
		if (ret || parse_hex(buf, raw, sizeof(raw)) != 16 ||
		    all_zero(raw, sizeof(raw)))
			continue;
		if (!have_first) {
			memcpy(first, raw, sizeof(first));
			have_first = true;
		}
		if (pn->nr_gids == room) {
			room = room ? 2 * room : 16;
			more = realloc(pn->gids, room * sizeof(*more));
			if (!more)
				break;
			pn->gids = more;
		}
		g = &pn->gids[pn->nr_gids++];
		g->index = i;
		snprintf(g->gid, sizeof(g->gid), "%s", buf);
		gid_type(p->name, p->port_num, i, ib, rnic, g->type,
			 sizeof(g->type));
		snprintf(path, sizeof(path),
			 SYSFS_IB "/%s/ports/%u/gid_attrs/ndevs/%u",
			 p->name, p->port_num, i);
		if (read_attr(path, g->ndev, sizeof(g->ndev)))
			snprintf(g->ndev, sizeof(g->ndev), "-");
		else
			add_ndev(pn, g->ndev);
	}
	if (!pn->nr_ndevs && have_first)
		ndevs_by_hwaddr(pn, first);
}

/* @ifa_name is @ndev, or one of its IPv4 labels ("eth0:1"). */
static bool is_ndev(const char *ifa_name, const char *ndev)
{
	size_t len = strlen(ndev);

	return !strncmp(ifa_name, ndev, len) &&
	       (ifa_name[len] == '\0' || ifa_name[len] == ':');
}

/* "  netdev NDEV ipv4 ADDR..." (or ipv6), '-' for none. */
static void print_addrs(const struct ifaddrs *ifs, const char *ndev,
			int family)
{
	char addr[INET6_ADDRSTRLEN];
	const struct ifaddrs *ifa;
	const void *a;
	int n = 0;

	printf("  netdev %s %s", ndev, family == AF_INET ? "ipv4" : "ipv6");
	for (ifa = ifs; ifa; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != family ||
		    !is_ndev(ifa->ifa_name, ndev))
			continue;
		if (family == AF_INET)
			a = &((const struct sockaddr_in *)
			      ifa->ifa_addr)->sin_addr;
		else
			a = &((const struct sockaddr_in6 *)
			      ifa->ifa_addr)->sin6_addr;
		if (inet_ntop(family, a, addr, sizeof(addr))) {
			printf(" %s", addr);
			n++;
		}
	}
	printf("%s\n", n ? "" : " -");
}

static void print_port(const struct kdat_port_info *p,
		       const struct ifaddrs *ifs, bool verbose)
{
	struct port_net pn;
	unsigned int i;

	printf("%-16s %4u %-12s %-10s %6u  ", p->name, p->port_num,
	       kdat_port_state_str(p->port_state),
	       link_layer_str(p->link_layer), p->active_mtu);
	print_guid(p->node_guid);
	printf("\n");

	port_net_read(p, &pn);
	if (!pn.nr_ndevs) {
		printf("  netdev - ipv4 -\n");
		if (verbose)
			printf("  netdev - ipv6 -\n");
	}
	for (i = 0; i < pn.nr_ndevs; i++) {
		print_addrs(ifs, pn.ndevs[i], AF_INET);
		if (verbose)
			print_addrs(ifs, pn.ndevs[i], AF_INET6);
	}
	if (verbose) {
		if (!pn.nr_gids)
			printf("  gid -\n");
		for (i = 0; i < pn.nr_gids; i++)
			printf("  gid %u %s %s %s\n", pn.gids[i].index,
			       pn.gids[i].gid, pn.gids[i].type,
			       pn.gids[i].ndev);
	}
	free(pn.gids);
}

/* Whether ports[@i] is the first of its device in the list. */
static bool first_of_device(const struct kdat_port_info *ports, uint32_t i)
{
	uint32_t j;

	for (j = 0; j < i; j++)
		if (!strcmp(ports[j].name, ports[i].name))
			return false;
	return true;
}

/*
 * Whether @dev is listed, and whether it has port @port (0: any); its
 * lowest and highest port numbers in *lo and *hi.
 */
static bool has_port(const struct kdat_port_info *ports, uint32_t nr,
		     const char *dev, uint32_t port, uint32_t *lo,
		     uint32_t *hi)
{
	bool found = false;
	uint32_t i;

	*lo = 0;
	*hi = 0;
	for (i = 0; i < nr; i++) {
		if (strcmp(ports[i].name, dev))
			continue;
		if (!*lo || ports[i].port_num < *lo)
			*lo = ports[i].port_num;
		if (ports[i].port_num > *hi)
			*hi = ports[i].port_num;
		if (!port || ports[i].port_num == port)
			found = true;
	}
	return found;
}

static void no_port(const char *dev, uint32_t port, uint32_t lo,
		    uint32_t hi)
{
	if (lo == hi)
		fprintf(stderr, "kdat-info: %s has no port %u (its port: %u)\n",
			dev, port, lo);
	else
		fprintf(stderr,
			"kdat-info: %s has no port %u (its ports: %u-%u)\n",
			dev, port, lo, hi);
}

/* "N RDMA devices found:" and a name a line, as ibv_devinfo -l. */
static void list_devices(const struct kdat_port_info *ports, uint32_t nr)
{
	uint32_t i, n = 0;

	for (i = 0; i < nr; i++)
		n += first_of_device(ports, i);
	printf("%u RDMA device%s found:\n", n, n == 1 ? "" : "s");
	for (i = 0; i < nr; i++)
		if (first_of_device(ports, i))
			printf("\t%s\n", ports[i].name);
}

/*
 * -d DEV and -d DEV -i PORT name what kdat lists: 0, or 1 when they do
 * not, with a message.
 */
static int check_dev(const struct kdat_port_info *ports, uint32_t nr,
		     const char *dev, uint32_t port)
{
	uint32_t lo, hi;

	if (!has_port(ports, nr, dev, 0, &lo, &hi)) {
		fprintf(stderr,
			"kdat-info: no RDMA device %s here (in this network namespace)\n",
			dev);
		return 1;
	}
	if (port && !has_port(ports, nr, dev, port, &lo, &hi)) {
		no_port(dev, port, lo, hi);
		return 1;
	}
	return 0;
}

/*
 * The ports, one line each and their netdevs below (only @dev's and only
 * port @port when given): 0, or 1 when a device lacks the port asked for.
 */
static int list_ports(const struct kdat_port_info *ports, uint32_t nr,
		      const char *dev, uint32_t port, bool verbose)
{
	struct ifaddrs *ifs = NULL;
	uint32_t i, lo, hi;
	int ret = 0;

	/* -i alone: every device, as ibv_devinfo; say which lack the port. */
	for (i = 0; !dev && port && i < nr; i++) {
		if (first_of_device(ports, i) &&
		    !has_port(ports, nr, ports[i].name, port, &lo, &hi)) {
			no_port(ports[i].name, port, lo, hi);
			ret = 1;
		}
	}

	if (getifaddrs(&ifs))
		ifs = NULL;	/* every address then shows as '-' */
	printf("%-16s %4s %-12s %-10s %6s  %s\n", "device", "port", "state",
	       "link", "mtu", "node_guid");
	for (i = 0; i < nr; i++) {
		if (dev && strcmp(ports[i].name, dev))
			continue;
		if (port && ports[i].port_num != port)
			continue;
		print_port(&ports[i], ifs, verbose);
	}
	if (ifs)
		freeifaddrs(ifs);
	return ret;
}

static int open_ia(int fd, const char *name, uint32_t port)
{
	struct kdat_ia_query q;
	char why[256];
	uint32_t ia;
	int ret;

	ret = kdat_ia_open(fd, name, port, &ia);
	if (ret) {
		kdat_ia_open_why(fd, name, port, -ret, why, sizeof(why));
		fprintf(stderr, "kdat-info: IA open: %s\n", why);
		return 1;
	}
	ret = kdat_ia_query(fd, ia, &q);
	if (ret) {
		fprintf(stderr, "kdat-info: IA query: %s\n", strerror(-ret));
		kdat_destroy(fd, ia);
		return 1;
	}
	printf("IA opened: handle %u on %s port %u, state %s, port %s\n", ia,
	       q.name, q.port_num,
	       q.state == KDAT_IA_STATE_ACTIVE ? "ACTIVE" : "DEVICE_GONE",
	       kdat_port_state_str(q.port_state));
	ret = kdat_destroy(fd, ia);
	if (ret) {
		fprintf(stderr, "kdat-info: IA close: %s\n", strerror(-ret));
		return 1;
	}
	printf("IA closed: handle %u\n", ia);
	return 0;
}

/* A port number, from 1; 0 when @s is not one. */
static uint32_t parse_port(const char *s)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		return 0;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return 0;
	return v;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "list", no_argument, NULL, 'l' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "open", required_argument, NULL, 'o' },
		KDAT_TOOL_LONGOPTS,
		{}
	};
	char open_dev[KDAT_NAME_MAX];
	const char *dev = NULL, *colon;
	bool list = false, verbose = false, do_open = false;
	uint32_t port = 0, open_port = 0, nr;
	struct kdat_port_info *ports;
	struct kdat_query q;
	int fd, ret, c;
	size_t len;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:i:lvo:hV", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'd':
			dev = optarg;
			break;
		case 'i':
			port = parse_port(optarg);
			if (!port)
				bad_usage("-i '%s': not a port number", optarg);
			break;
		case 'l':
			list = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'o':
			colon = strchr(optarg, ':');
			len = colon ? (size_t)(colon - optarg) : strlen(optarg);
			if (!len || len >= sizeof(open_dev))
				bad_usage("-o '%s': not DEVICE[:PORT]", optarg);
			memcpy(open_dev, optarg, len);
			open_dev[len] = '\0';
			open_port = colon ? parse_port(colon + 1) : 1;
			if (!open_port)
				bad_usage("-o '%s': not a port number", optarg);
			do_open = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'V':
			kdat_tool_version("kdat-info");
			break;
		case ':':
			bad_usage("option %s needs an argument",
				  argv[optind - 1]);
		default:
			/* Unknown, or --LONG=ARG for one that takes none. */
			if (!optopt)
				bad_usage("unknown or ambiguous option %s",
					  argv[optind - 1]);
			if (strchr("dilvohV", optopt))
				bad_usage("option %s takes no argument",
					  argv[optind - 1]);
			bad_usage("unknown option -%c", optopt);
		}
	}
	if (optind < argc)
		bad_usage("unexpected operand %s", argv[optind]);

	fd = kdat_open();
	if (fd < 0) {
		fprintf(stderr, "kdat-info: %s\n", kdat_open_why(-fd));
		return 1;
	}
	ret = kdat_query(fd, &q);
	if (ret) {
		fprintf(stderr, "kdat-info: query: %s\n", strerror(-ret));
		return 1;
	}
	ret = kdat_device_list(fd, &ports, &nr);
	if (ret) {
		fprintf(stderr, "kdat-info: device list: %s\n", strerror(-ret));
		return 1;
	}
	if (list) {
		list_devices(ports, nr);
	} else if (dev && check_dev(ports, nr, dev, port)) {
		ret = 1;
		do_open = false;
	} else {
		printf("kdat ABI %u, %u port%s\n", q.abi_version, nr,
		       nr == 1 ? "" : "s");
		ret = list_ports(ports, nr, dev, port, verbose);
	}
	free(ports);

	if (do_open && open_ia(fd, open_dev, open_port))
		ret = 1;
	close(fd);
	return ret;
}
