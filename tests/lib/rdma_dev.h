/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What kind of RDMA device the tests run on, as sysfs says it (not
 * kdat): the cases whose transport semantics differ ask.
 */
#ifndef KDAT_RDMA_DEV_H
#define KDAT_RDMA_DEV_H

#include <stdio.h>
#include <string.h>

/* Is RDMA device @dev iWARP (node_type "4: RNIC")? -1: sysfs says not. */
static inline int rdma_dev_iwarp(const char *dev)
{
	char path[256], t[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/node_type",
		 dev ? dev : "");
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(t, sizeof(t), f))
		t[0] = 0;
	fclose(f);
	return strstr(t, "RNIC") != NULL;
}

#endif
