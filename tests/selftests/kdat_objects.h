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

/* A snapshot of every type's count. */
static const char *const kdat_obj_types[] = {
	"ia", "pz", "lmr", "evd", "ep", "psp", "cr", "srq", "cno", "rmr", "ah",
};
#define KDAT_NTYPES (sizeof(kdat_obj_types) / sizeof(kdat_obj_types[0]))

struct counts {
	int n[KDAT_NTYPES];
};

static inline void counts_get(struct counts *c)
{
	unsigned int i;

	for (i = 0; i < KDAT_NTYPES; i++)
		c->n[i] = kdat_objects(kdat_obj_types[i]);
}

/*
 * The first type whose live count is not what it was in @before (@now
 * the counts now), or -1: every count back, or no debugfs to tell.
 */
static inline int counts_differ(const struct counts *before,
				struct counts *now)
{
	unsigned int i;

	if (before->n[0] < 0)
		return -1;
	counts_get(now);
	for (i = 0; i < KDAT_NTYPES; i++)
		if (now->n[i] != before->n[i])
			return i;
	return -1;
}

/*
 * Every live object count is what it was (the objects of this case gone):
 * the case fails otherwise. After ../lib/kdat_harness.h.
 */
#ifdef KDAT_HARNESS_H
static inline void counts_back(struct __test_metadata *_metadata,
			       const struct counts *before)
{
	struct counts now;
	int i;

	if (before->n[0] < 0) {
		TH_LOG("no debugfs: object counts not checked");
		return;
	}
	i = counts_differ(before, &now);
	ASSERT_EQ(-1, i)
		TH_LOG("%s: %d live, %d before", kdat_obj_types[i], now.n[i],
		       before->n[i]);
}
#endif

/*
 * How kdat learns that a QP on an SRQ of device @dev took its last
 * receive (debugfs kdat/devices, root only): "event" once the device
 * raised LAST_WQE_REACHED (an EP made then has its QP only), "barrier"
 * until then (and a second QP); NULL when not readable.
 */
static inline const char *kdat_srq_last_wqe(const char *dev)
{
	FILE *f = fopen("/sys/kernel/debug/kdat/devices", "r");
	static char how[16];
	const char *mech = NULL;
	char line[256], *p;

	while (dev && f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, dev, strlen(dev)) || line[strlen(dev)] != ' ')
			continue;
		p = strstr(line, "srq_last_wqe ");
		if (p && sscanf(p, "srq_last_wqe %15s", how) == 1)
			mech = how;
	}
	if (f)
		fclose(f);
	return mech;
}

#endif
