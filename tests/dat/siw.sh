#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kdat's DAT suite over Soft-iWARP (issue 45): siw.ko (KDAT_T_SIW, built
# by scripts/siw: make check-siw) takes the testbed's port in place of
# rxe0, and dat_dto_test runs over it; rxe0 comes back at the end. Run
# as root in the testbed. Its TAP is dat_dto_test's.
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
skip_all() { echo "1..0 # SKIP $*"; exit 4; }

[ -n "${KDAT_T_SIW:-}" ] && [ -f "$KDAT_T_SIW" ] ||
	skip_all "no siw.ko (KDAT_T_SIW): make check-siw builds one"
[ -n "${KDAT_TEST_NETDEV:-}" ] || skip_all "needs KDAT_TEST_NETDEV"
command -v rdma >/dev/null || skip_all "no rdma (iproute2)"
netdev=$KDAT_TEST_NETDEV
rxe=${KDAT_TEST_DEV:-rxe0}

restore() {
	rdma link delete siw0 2>/dev/null
	rdma link add "$rxe" type rxe netdev "$netdev" ||
		echo "# could not give $netdev back to $rxe"
}

modprobe libcrc32c || skip_all "no libcrc32c"
grep -qw '^siw' /proc/modules || insmod "$KDAT_T_SIW" ||
	skip_all "$KDAT_T_SIW does not load into $(uname -r)"
rdma link delete "$rxe" || { echo "1..0 # SKIP cannot free $netdev"; exit 4; }
trap restore EXIT
rdma link add siw0 type siw netdev "$netdev" || {
	echo "Bail out! rdma link add siw0 on $netdev failed"
	exit 1
}
echo "# $(rdma link show siw0)"
KDAT_TEST_DEV=siw0 "$top/tests/dat/dat_dto_test"
