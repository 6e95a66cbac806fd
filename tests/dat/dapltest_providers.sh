#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Debian's dapltest, unmodified (built for OFA's libdat2), over OFA's own
# provider and over kdat on the same rxe device, in the same run (TAP):
# a server (-T S), transaction tests (-T T) with several threads and EPs
# mixing send/recv, RDMA read and RDMA write of several sizes, performance
# tests (-T P) for RDMA write and read, and quit (-T Q). A run passes when
# the client exits 0 without an error line and the server reports no
# failure; a failure over OFA's provider, the reference, is a skip that
# says so (provider_result). Then the limit tests (-T L: IAs, PZs,
# EVDs, EPs, PSPs, LMRs and posted receives, up to 8 each over 2 sets of
# objects): they must pass and kdat must reach the same counts as OFA's
# provider.
#
# dapltest's -T P takes RW and RR only: its parser refuses SR for a
# performance test, over any provider; send/recv is measured by the -T T
# runs and by dtest.
set -uo pipefail

# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"	# result, totals
# shellcheck source=tests/dat/providers.sh
. "$(dirname "${BASH_SOURCE[0]}")/providers.sh"
providers_setup dapltest

# An RDMA read of two segments where the device takes two per read sink:
# iWARP places a read response in one tagged buffer (siw says max_sge_rd
# 1), so there a read takes one, and a DAT consumer sees
# max_rdma_read_iov 1 (kdat refuses two: DAT_INVALID_PARAMETER,
# dat_dto_test's test_ep_default_attr; OFA's provider posts them and
# siw writes the whole read at the first segment, siw_proc_rresp()).
rd=$(ibv_devinfo -v -d "$KDAT_TEST_DEV" 2>/dev/null |
	awk '$1 == "max_sge_rd:" { print $2; exit }')
rr_segs=2
if [ "${rd:-2}" = 1 ]; then
	rr_segs=1
	echo "# $KDAT_TEST_DEV: max_sge_rd 1: the RDMA read test reads into one segment"
fi
tests=(
	"T -i 20 -t 2 -w 2 client SR 1024 server SR 1024 client RR 4096 client RW 8192 server RW 4096 client SR 256 server SR 256"
	"P -i 100 RW 4096 2"
	"P -i 100 RR 4096 $rr_segs"
)
providers=("$OFA" "$KDAT")
limits="limit_ia limit_pz limit_evd limit_ep limit_psp limit_lmr limit_rpost"
n=0
fail=0
skip=0
# no_reference P WHAT: P is OFA's provider and it is left out: a skip.
no_reference() {
	[ "$1" = "$OFA" ] && ! reference_wanted || return 1
	result skip "$2 over $1" "$NO_REFERENCE"
}
echo "TAP version 13"
echo "1..$(((${#tests[@]} + 1) * ${#providers[@]}))"
for p in "${providers[@]}"; do
	for t in "${tests[@]}"; do
		no_reference "$p" "dapltest -T $t" && continue
		before=$(rdma_listeners)
		timeout 300 dapltest -T S -D "$p" > "$work/srv" 2>&1 &
		spid=$!
		wait_rdma_listen "$before" 60
		rc=0
		# shellcheck disable=SC2086 # the test is a list of words
		dapltest_client "$work/cli" 240 -T ${t%% *} \
			-s "$KDAT_TEST_IP" -D "$p" ${t#* } || rc=1
		timeout 60 dapltest -T Q -s "$KDAT_TEST_IP" -D "$p" \
			> /dev/null 2>&1 || { echo "# -T Q exited $?"; rc=1; }
		wait "$spid" || { echo "# the server exited $?"; rc=1; }
		if grep -qi 'error\|fail\|cannot' "$work/srv"; then
			grep -hi 'error\|fail\|cannot' "$work/srv" | head -5 |
				sed 's/^/# server: /'
			rc=1
		fi
		provider_result "$p" $rc "dapltest -T $t"
	done
done
for p in "${providers[@]}"; do
	no_reference "$p" "dapltest -T L $limits" && continue
	rc=0
	# shellcheck disable=SC2086 # a list of words
	timeout 300 dapltest -T L -D "$p" -w 2 -m 8 $limits \
		> "$work/lim" 2>&1 || rc=1
	grep -qi 'error\|fail' "$work/lim" && rc=1
	grep 'LimitTest: .* created\|opened\|posted per' "$work/lim" \
		> "$work/lim-$p"
	[ "$(wc -l < "$work/lim-$p")" = 7 ] || rc=1
	sed "s/^/# $p: /" "$work/lim-$p"
	if [ "$p" != "$OFA" ] && reference_wanted &&
		[ "$(wc -l < "$work/lim-$OFA")" = 7 ] &&
		! cmp -s "$work/lim-$OFA" "$work/lim-$p"; then
		echo "# $p: limit counts differ from $OFA's"
		rc=1
	fi
	[ $rc = 0 ] || grep -hi 'error\|fail' "$work/lim" | head -5 | sed 's/^/# /'
	provider_result "$p" $rc "dapltest -T L $limits"
done
totals
