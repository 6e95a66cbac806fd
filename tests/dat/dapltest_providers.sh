#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Debian's dapltest, unmodified (built for OFA's libdat2), over OFA's own
# provider and over kdat on the same rxe device, in the same run (TAP):
# a server (-T S), transaction tests (-T T) with several threads and EPs
# mixing send/recv, RDMA read and RDMA write of several sizes, performance
# tests (-T P) for RDMA write and read, and quit (-T Q). A run passes when
# the client exits 0 without an error line and the server reports no
# failure.
set -uo pipefail

# shellcheck source=tests/dat/providers.sh
. "$(dirname "${BASH_SOURCE[0]}")/providers.sh"
providers_setup dapltest

tests=(
	"T -i 20 -t 2 -w 2 client SR 1024 server SR 1024 client RR 4096 client RW 8192 server RW 4096 client SR 256 server SR 256"
	"P -i 100 RW 4096 2"
	"P -i 100 RR 4096 2"
)
providers=("$OFA" "$KDAT")
n=0
fail=0
echo "TAP version 13"
echo "1..$((${#tests[@]} * ${#providers[@]}))"
for p in "${providers[@]}"; do
	for t in "${tests[@]}"; do
		n=$((n + 1))
		timeout 300 dapltest -T S -D "$p" > "$work/srv" 2>&1 &
		spid=$!
		sleep 2
		rc=0
		# shellcheck disable=SC2086 # the test is a list of words
		timeout 240 dapltest -T ${t%% *} -s "$KDAT_TEST_IP" -D "$p" \
			${t#* } > "$work/cli" 2>&1 || rc=1
		timeout 60 dapltest -T Q -s "$KDAT_TEST_IP" -D "$p" \
			> /dev/null 2>&1 || rc=1
		wait "$spid" || rc=1
		grep -qi 'error\|fail' "$work/cli" "$work/srv" && rc=1
		grep -h 'WQE/Sec\|Bandwidth' "$work/cli" | sed "s/^/# $p: /"
		if [ $rc = 0 ]; then
			echo "ok $n dapltest -T $t over $p"
		else
			grep -hi 'error\|fail' "$work/cli" "$work/srv" |
				head -5 | sed 's/^/# /'
			echo "not ok $n dapltest -T $t over $p"
			fail=$((fail + 1))
		fi
	done
done
echo "# Totals: pass:$((n - fail)) fail:$fail skip:0"
[ "$fail" = 0 ]
