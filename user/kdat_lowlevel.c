// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libdat: ioctl wrappers for /dev/kdat.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kdat_lowlevel.h"

static int kdat_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

int kdat_open(void)
{
	int fd = open(KDAT_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int kdat_query(int fd, struct kdat_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	return kdat_ioctl(fd, KDAT_IOCTL_QUERY, q);
}

int kdat_device_list(int fd, struct kdat_port_info **out, uint32_t *nr)
{
	struct kdat_device_list cmd = {
		.size = sizeof(cmd),
		.entry_size = sizeof(struct kdat_port_info),
	};
	struct kdat_port_info *infos = NULL;
	int ret;

	/* Ports come and go: ask for the count, then retry while it grows. */
	for (;;) {
		ret = kdat_ioctl(fd, KDAT_IOCTL_DEVICE_LIST, &cmd);
		if (ret != -EMSGSIZE)
			break;
		free(infos);
		infos = calloc(cmd.num_entries, sizeof(*infos));
		if (!infos)
			return -ENOMEM;
		cmd.entries = (uintptr_t)infos;
	}
	if (ret) {
		free(infos);
		return ret;
	}
	*out = infos;
	*nr = cmd.num_entries;
	return 0;
}

int kdat_ia_open(int fd, const char *name, uint32_t port, uint32_t *ia_handle)
{
	struct kdat_ia_open cmd = {
		.size = sizeof(cmd),
		.port_num = port,
	};
	int ret;

	if (strlen(name) >= sizeof(cmd.name))
		return -EINVAL;
	strcpy(cmd.name, name);
	ret = kdat_ioctl(fd, KDAT_IOCTL_IA_OPEN, &cmd);
	if (!ret)
		*ia_handle = cmd.out_ia_handle;
	return ret;
}

int kdat_ia_query(int fd, uint32_t ia_handle, struct kdat_ia_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->ia_handle = ia_handle;
	return kdat_ioctl(fd, KDAT_IOCTL_IA_QUERY, q);
}

int kdat_destroy(int fd, uint32_t handle)
{
	struct kdat_destroy cmd = { .size = sizeof(cmd), .handle = handle };

	return kdat_ioctl(fd, KDAT_IOCTL_DESTROY, &cmd);
}

const char *kdat_port_state_str(uint32_t state)
{
	static const char *const names[] = {
		[KDAT_PORT_NOP] = "NOP",
		[KDAT_PORT_DOWN] = "DOWN",
		[KDAT_PORT_INIT] = "INIT",
		[KDAT_PORT_ARMED] = "ARMED",
		[KDAT_PORT_ACTIVE] = "ACTIVE",
		[KDAT_PORT_ACTIVE_DEFER] = "ACTIVE_DEFER",
	};

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}

const char *kdat_open_why(int err)
{
	switch (err) {
	case ENOENT:
	case ENODEV:
	case ENXIO:
		return "no " KDAT_DEVICE_PATH ": kdat.ko is not loaded "
		       "(sudo modprobe kdat)";
	case EACCES:
	case EPERM:
		return "no permission to open " KDAT_DEVICE_PATH ": it is for "
		       "group rdma; join it (sudo usermod -aG rdma $USER, then "
		       "log in again), see kdat(7)";
	case EMFILE:
	case ENFILE:
		return "cannot open " KDAT_DEVICE_PATH ": too many open files";
	default:
		return strerror(err);
	}
}

void kdat_ia_open_why(int fd, const char *name, uint32_t port, int err,
		      char *buf, size_t len)
{
	struct kdat_port_info *ports;
	uint32_t nr, i, lo = 0, hi = 0;

	if (err != ENODEV && err != EINVAL) {
		snprintf(buf, len, "%s port %u: %s", name, port,
			 strerror(err));
		return;
	}
	if (kdat_device_list(fd, &ports, &nr)) {
		ports = NULL;
		nr = 0;
	}
	for (i = 0; i < nr; i++) {
		if (strcmp(ports[i].name, name))
			continue;
		if (!lo || ports[i].port_num < lo)
			lo = ports[i].port_num;
		if (ports[i].port_num > hi)
			hi = ports[i].port_num;
	}
	free(ports);
	if (lo)
		snprintf(buf, len, "%s has no port %u (its ports: %u-%u)",
			 name, port, lo, hi);
	else
		snprintf(buf, len, "no RDMA device %s here, in this network "
			 "namespace (kdat-info lists the ports kdat sees; "
			 "rdma link show, the devices)", name);
}
