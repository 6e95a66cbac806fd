/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kdat's live object counters (debugfs kdat/objects), for the tests that
 * check nothing is left behind.
 */
#ifndef KDAT_OBJECTS_H
#define KDAT_OBJECTS_H

#include <stdio.h>
#include <string.h>

/* Live kdat objects of @type in the whole system (debugfs), or -1. */
static inline int kdat_objects(const char *type)
{
	FILE *f = fopen("/sys/kernel/debug/kdat/objects", "r");
	char name[32];
	int n, ret = -1;

	if (!f)
		return -1;
	while (fscanf(f, "%31s %d", name, &n) == 2)
		if (!strcmp(name, type))
			ret = n;
	fclose(f);
	return ret;
}

#endif
