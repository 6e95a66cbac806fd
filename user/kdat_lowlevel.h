/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * libdat's low-level interface to /dev/kdat: thin ioctl wrappers. Each
 * returns 0 or a negative errno from the table in <linux/kdat.h>.
 *
 * The DAT 2.0 API is built on these; they are exported (version node
 * KDAT_PRIVATE_1, no stability promise) for kdat's own tools and tests.
 */
#ifndef KDAT_LOWLEVEL_H
#define KDAT_LOWLEVEL_H

#include <stddef.h>
#include <stdint.h>
#include <linux/kdat.h>

#define KDAT_EXPORT __attribute__((visibility("default")))

/* Open /dev/kdat (O_CLOEXEC); returns the fd or -errno. */
KDAT_EXPORT int kdat_open(void);
KDAT_EXPORT int kdat_query(int fd, struct kdat_query *q);
/*
 * Every port of every RDMA device. On success *out is a malloc'd array of
 * *nr entries (free it); returns -errno otherwise.
 */
KDAT_EXPORT int kdat_device_list(int fd, struct kdat_port_info **out,
				 uint32_t *nr);
KDAT_EXPORT int kdat_ia_open(int fd, const char *name, uint32_t port,
			     uint32_t *ia_handle);
KDAT_EXPORT int kdat_ia_query(int fd, uint32_t ia_handle,
			      struct kdat_ia_query *q);
KDAT_EXPORT int kdat_destroy(int fd, uint32_t handle);
KDAT_EXPORT const char *kdat_port_state_str(uint32_t state);

/*
 * Why kdat_open() failed with -@err, and what to do, in one line (no
 * newline): kdat.ko not loaded, no permission, ...
 */
KDAT_EXPORT const char *kdat_open_why(int err);
/*
 * Why kdat_ia_open(@fd, @name, @port) failed with -@err, and what to do,
 * in @buf (@len bytes, no newline): no such device here (in this network
 * namespace), no such port (and which there are), ...
 */
KDAT_EXPORT void kdat_ia_open_why(int fd, const char *name, uint32_t port,
				  int err, char *buf, size_t len);

/*
 * For kdat's own tests: the /dev/kdat file and kernel handle behind a DAT
 * handle of libdat (0, or -1 when it is not one).
 */
KDAT_EXPORT int kdat_dat_handle(void *dat_handle, int *fd, uint32_t *kh);

#endif
