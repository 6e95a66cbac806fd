// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * kdat-info: what /dev/kdat sees.
 *
 *   kdat-info               list every port of every RDMA device
 *   kdat-info -o DEV[:PORT] also open an IA there, query it, close it
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kdat_lowlevel.h"

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

static int open_ia(int fd, const char *spec)
{
	char name[KDAT_NAME_MAX];
	struct kdat_ia_query q;
	uint32_t port = 1, ia;
	const char *colon = strchr(spec, ':');
	size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
	int ret;

	if (len >= sizeof(name)) {
		fprintf(stderr, "kdat-info: device name too long\n");
		return 1;
	}
	memcpy(name, spec, len);
	name[len] = '\0';
	if (colon)
		port = strtoul(colon + 1, NULL, 0);

	ret = kdat_ia_open(fd, name, port, &ia);
	if (ret) {
		fprintf(stderr, "kdat-info: IA open %s port %u: %s\n", name,
			port, strerror(-ret));
		return 1;
	}
	ret = kdat_ia_query(fd, ia, &q);
	if (ret) {
		fprintf(stderr, "kdat-info: IA query: %s\n", strerror(-ret));
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

int main(int argc, char **argv)
{
	struct kdat_port_info *ports;
	const char *open_spec = NULL;
	struct kdat_query q;
	uint32_t nr, i;
	int fd, ret, c;

	while ((c = getopt(argc, argv, "o:h")) != -1) {
		switch (c) {
		case 'o':
			open_spec = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s [-o DEVICE[:PORT]]\n",
				argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}

	fd = kdat_open();
	if (fd < 0) {
		fprintf(stderr, "kdat-info: %s: %s (is kdat.ko loaded?)\n",
			KDAT_DEVICE_PATH, strerror(-fd));
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
	printf("kdat ABI %u, %u port%s\n", q.abi_version, nr,
	       nr == 1 ? "" : "s");
	printf("%-16s %4s %-12s %-10s %6s  %s\n", "device", "port", "state",
	       "link", "mtu", "node_guid");
	for (i = 0; i < nr; i++) {
		printf("%-16s %4u %-12s %-10s %6u  ", ports[i].name,
		       ports[i].port_num,
		       kdat_port_state_str(ports[i].port_state),
		       link_layer_str(ports[i].link_layer),
		       ports[i].active_mtu);
		print_guid(ports[i].node_guid);
		printf("\n");
	}
	free(ports);

	ret = open_spec ? open_ia(fd, open_spec) : 0;
	close(fd);
	return ret;
}
