#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kdat's DAT suite over Soft-iWARP (issue 45): siw.ko (KDAT_T_SIW, built
# by scripts/siw: make check-siw) takes the testbed's port in place of
# rxe0, and dat_dto_test, dtest and dapltest (OFA's provider beside
# kdat's, on siw0) run over it; rxe0 comes back at the end. Run as root in
# the testbed.
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"	# skip_all

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
rdma link delete "$rxe" || skip_all "cannot free $netdev"
trap restore EXIT
rdma link add siw0 type siw netdev "$netdev" || {
	echo "Bail out! rdma link add siw0 on $netdev failed"
	exit 1
}
echo "# $(rdma link show siw0)"

# siw counts a registration's pages against RLIMIT_MEMLOCK even for root
# (siw_umem_get() has no CAP_IPC_LOCK exemption; ib_umem_get() has):
# at the kernel's default 8 MiB, dtest's buffers do not register, over
# OFA's provider or kdat's. Sites give RDMA users an unlimited memlock.
echo "# memlock was $(ulimit -l) KiB; unlimited for the programs over siw0"
ulimit -l unlimited || skip_all "cannot raise RLIMIT_MEMLOCK"

# siw (6.1's and 6.12's) never calls a CQ's handler for a solicited
# receive: siw_rqe_complete() asks siw_cq_notify_now() about
# SIW_WQE_SIGNALLED only, not the receive's SIW_WQE_SOLICITED. No
# capability says so, and a completion does not say it was solicited.
no_solicited="siw signals no solicited receive (siw_rqe_complete()): a solicited wait sleeps to its timeout, over OFA's provider as over kdat's"

# Each suite's cases count as this suite's (tests/run-all counts the ok
# and not ok lines); a suite that skips as a whole is one skipped case.
status=0
# The hostile suite's cases about iWARP's blocking TCP connect, too, and
# the ring case about iWARP's receives, taken before their posts return.
while read -r t args; do
	echo "# ---- $t $args over siw0"
	out=$(mktemp)
	# shellcheck disable=SC2086 # $args: the case names, words
	KDAT_TEST_DEV=siw0 KDAT_TEST_NO_SOLICITED="$no_solicited" \
		"$top/$t" $args < /dev/null 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	if [ "$rc" = 4 ] && ! grep -qE '^(not )?ok [0-9]+' "$out"; then
		echo "ok 1 $t # SKIP $(grep -m1 -o 'SKIP.*' "$out" | cut -c6-)"
	elif [ "$rc" != 0 ] && [ "$rc" != 4 ]; then
		grep -qE '^not ok [0-9]+' "$out" ||
			echo "not ok 1 $t exited $rc"
		status=1
	fi
	rm -f "$out"
done <<SUITES
tests/dat/dat_dto_test
tests/dat/dtest_providers.sh
tests/dat/dapltest_providers.sh
tests/selftests/kdat_hostile_test iwarp_connect_blocks_no_one iwarp_removal_cuts_connect iwarp_reset_at_once iwarp_connect_turns
tests/dat/ring_test test_recv_ring_pinned
SUITES
exit $status
