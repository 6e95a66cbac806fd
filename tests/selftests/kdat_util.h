/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the /dev/kdat suites: ioctls by hand, objects made with them.
 * Each helper that must succeed takes the case's _metadata and fails the
 * case (an ASSERT_*()) otherwise. After ../lib/kdat_harness.h.
 */
#ifndef KDAT_UTIL_H
#define KDAT_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/kdat.h>

#include "../lib/kdat_harness.h"
#include "kdat_objects.h"

static inline int kioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static inline int dev_open(struct __test_metadata *_metadata)
{
	int fd = open(KDAT_DEVICE_PATH, O_RDWR | O_CLOEXEC), err = errno;

	ASSERT_LE(0, fd)
		TH_LOG("open %s: %s", KDAT_DEVICE_PATH, strerror(err));
	return fd;
}

static inline uint32_t list_ports(struct __test_metadata *_metadata, int fd,
				  struct kdat_port_info *ports, uint32_t room)
{
	struct kdat_device_list cmd = {
		.size = sizeof(cmd),
		.entry_size = sizeof(*ports),
		.num_entries = room,
		.entries = (uintptr_t)ports,
	};

	ASSERT_EQ(0, kioctl(fd, KDAT_IOCTL_DEVICE_LIST, &cmd));
	return cmd.num_entries;
}

/* The device and port the IA cases use; skips when there is none. */
static inline void test_port(struct __test_metadata *_metadata, int fd,
			     char *name, uint32_t *port)
{
	const char *want = getenv("KDAT_TEST_DEV");
	const char *wport = getenv("KDAT_TEST_PORT");
	struct kdat_port_info ports[64];
	uint32_t nr, i;

	nr = list_ports(_metadata, fd, ports, 64);
	ASSERT_LE(nr, 64);
	for (i = 0; i < nr; i++) {
		if (want && strcmp(ports[i].name, want))
			continue;
		if (want && wport && ports[i].port_num != strtoul(wport, 0, 0))
			continue;
		strcpy(name, ports[i].name);
		*port = ports[i].port_num;
		return;
	}
	ASSERT_NULL(want)
		TH_LOG("KDAT_TEST_DEV=%s is not listed", want);
	KDAT_SKIP("no RDMA device present");
}

static inline uint32_t ia_open(int fd, const char *name, uint32_t port, int *err)
{
	struct kdat_ia_open cmd = { .size = sizeof(cmd), .port_num = port };

	strcpy(cmd.name, name);
	*err = kioctl(fd, KDAT_IOCTL_IA_OPEN, &cmd);
	return cmd.out_ia_handle;
}

static inline uint32_t ia_open_ok(struct __test_metadata *_metadata, int fd)
{
	char name[KDAT_NAME_MAX];
	uint32_t port, h;
	int err;

	test_port(_metadata, fd, name, &port);
	h = ia_open(fd, name, port, &err);
	ASSERT_EQ(0, err);
	ASSERT_NE(0, h);
	return h;
}

static inline int ia_query(int fd, uint32_t h, struct kdat_ia_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->ia_handle = h;
	return kioctl(fd, KDAT_IOCTL_IA_QUERY, q);
}

static inline int destroy(int fd, uint32_t h)
{
	struct kdat_destroy cmd = { .size = sizeof(cmd), .handle = h };

	return kioctl(fd, KDAT_IOCTL_DESTROY, &cmd);
}

/* Objects for the commands that need them, made with the ioctls. */
static inline uint32_t mk(struct __test_metadata *_metadata, int fd,
			  unsigned long cmd, void *arg, uint32_t *out)
{
	ASSERT_EQ(0, kioctl(fd, cmd, arg));
	return *out;
}

static inline uint32_t mk_pz(struct __test_metadata *_metadata, int fd)
{
	struct kdat_pz_create c = { .size = sizeof(c),
				    .ia_handle = ia_open_ok(_metadata, fd) };

	return mk(_metadata, fd, KDAT_IOCTL_PZ_CREATE, &c, &c.out_pz_handle);
}

static inline uint32_t mk_evd(struct __test_metadata *_metadata, int fd,
			      uint32_t ia, uint32_t flags)
{
	struct kdat_evd_create c = { .size = sizeof(c), .ia_handle = ia,
				     .qlen = 64, .evd_flags = flags };

	return mk(_metadata, fd, KDAT_IOCTL_EVD_CREATE, &c, &c.out_evd_handle);
}

static inline uint32_t pz_ia(struct __test_metadata *_metadata, int fd,
			     uint32_t *pz)
{
	struct kdat_pz_create c = { .size = sizeof(c),
				    .ia_handle = ia_open_ok(_metadata, fd) };

	*pz = mk(_metadata, fd, KDAT_IOCTL_PZ_CREATE, &c, &c.out_pz_handle);
	return c.ia_handle;
}

static inline uint32_t mk_ep(struct __test_metadata *_metadata, int fd)
{
	struct kdat_ep_create c = { .size = sizeof(c) };
	uint32_t ia = pz_ia(_metadata, fd, &c.pz_handle);

	c.recv_evd_handle = mk_evd(_metadata, fd, ia, KDAT_EVD_DTO);
	c.request_evd_handle = c.recv_evd_handle;
	c.connect_evd_handle = mk_evd(_metadata, fd, ia, KDAT_EVD_CONNECTION);
	c.attr.max_recv_dtos = 4;
	c.attr.max_request_dtos = 4;
	return mk(_metadata, fd, KDAT_IOCTL_EP_CREATE, &c, &c.out_ep_handle);
}

static inline uint32_t mk_cno(struct __test_metadata *_metadata, int fd,
			      uint32_t ia)
{
	struct kdat_cno_create c = { .size = sizeof(c), .ia_handle = ia };

	return mk(_metadata, fd, KDAT_IOCTL_CNO_CREATE, &c, &c.out_cno_handle);
}

static inline int destroy_flags(int fd, uint32_t h, uint32_t flags, uint32_t rsvd)
{
	struct kdat_destroy cmd = { .size = sizeof(cmd), .handle = h,
				    .flags = flags, .__reserved = rsvd };

	return kioctl(fd, KDAT_IOCTL_DESTROY, &cmd);
}

#endif
