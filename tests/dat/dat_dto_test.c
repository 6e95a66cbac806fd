// SPDX-License-Identifier: GPL-2.0
/*
 * DAT 2.0 API tests over kdat: connections and DTOs, one case per clause
 * of the dat_ep_post_* and connection man pages. A DAT program: built
 * against <dat2/udat.h>, linked with -ldat.
 *
 * Needs /dev/kdat and an RDMA device: KDAT_TEST_DEV (port KDAT_TEST_PORT)
 * with the IPv4 address KDAT_TEST_IP. Skips (exit 4) without them.
 *
 * Each case is a TEST_F() of the kernel's kselftest_harness.h on the
 * fixture of ../lib/kdat_harness.h, within the harness's 30 s (120 s for
 * the few that wait longer on purpose), times $KDAT_T_SLOW. -l lists the
 * cases; names as arguments (or -t NAME) pick some.
 *
 * The cases are in the files of their areas (dto.h), included here in
 * the order they run: the harness's lists of cases are a translation
 * unit's. The helpers they share are dto_common.c's.
 */
#include "dto.h"

#include "dto_common.c"
#include "dto_connect.c"	/* connections */
#include "dto_post.c"		/* sends and receives */
#include "dto_rdma.c"		/* RDMA, LMRs and RMRs */
#include "dto_srq.c"		/* SRQs */
#include "dto_evd.c"		/* EVDs, CNOs, waits */
#include "dto_ia.c"		/* the IA, the provider, EP attributes */
#include "dto_ext.c"		/* the IB extensions */
#include "dto_ud.c"		/* UD endpoints */

int main(int argc, char **argv)
{
	int skip = pair_test_env(kdat_harness_listing(argc, argv));

	if (skip)
		return skip;
	/* A reject on iWARP may come without its private data. */
	pair_conf.reject_pdata_lost = reject_pdata_lost;
	return kdat_harness_main(argc, argv);
}
