#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Threads of one process, each sending over a connection of its own
# (kdat-bench --loopback --threads; the IAs and PZs shared): every send
# and receive of every thread completes, with the adaptive poller, with
# none (each post's doorbell takes its own ring alone, side by side with
# the other threads') and with a spinning one; through libdat and through
# OFA's registry (tests/dat/kdat-bench-dat2, the same program linked with
# -ldat2, over kdat's provider). The same program over OFA's provider is
# the reference. TAP.
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/dat/providers.sh
. "$top/tests/dat/providers.sh"
providers_setup "$top/tests/dat/kdat-bench-dat2"
N=${KDAT_T_THREADS_N:-2000}
ip=$KDAT_TEST_IP

# MODE PROGRAM IA THREADS NAME: one run; each thread's N sends and N
# receives posted and reaped, no completion in error (kdat-bench exits 1).
i=0 fail=0
run() {
	local mode=$1 prog=$2 ia=$3 t=$4 name=$5 st line want

	i=$((i + 1))
	KDAT_POLLER=$mode timeout 300 "$prog" --loopback -d "$ia" -s 64 \
		-t 32 -n "$N" -T "$t" "$ip" > "$work/out" 2>&1
	st=$?
	# #bytes #iterations BW MsgRate #threads SlowestThread #posted #reaped
	line=$(awk '$1 ~ /^[0-9]+$/ && NF == 8' "$work/out" | tail -1)
	want=$((2 * N * t))
	if [ "$st" = 0 ] && [ -n "$line" ] &&
	   awk -v w="$want" -v t="$t" '{ exit !($5 == t && $7 == w &&
		$8 == w && $4 > 0 && $6 > 0) }' <<< "$line"; then
		echo "ok $i $name"
		echo "# $line"
	else
		echo "not ok $i $name (exit $st; want $want posted and reaped)"
		sed 's/^/# /' "$work/out" | tail -8
		fail=1
	fi
}

echo "TAP version 13"
echo "1..6"
lib=$top/user/kdat-bench
dat2=$top/tests/dat/kdat-bench-dat2
dev=$KDAT_TEST_DEV:${KDAT_TEST_PORT:-1}
run adaptive "$lib" "$dev" 4 "libdat, 4 threads, adaptive poller"
run none "$lib" "$dev" 4 "libdat, 4 threads, no poller: doorbells per ring"
run spin "$lib" "$dev" 2 "libdat, 2 threads, spinning poller"
run none "$lib" "$dev" 1 "libdat, 1 thread, no poller"
run adaptive "$dat2" "$KDAT" 4 "OFA's registry over kdat, 4 threads"
i=$((i + 1))
if reference_wanted; then
	i=$((i - 1))
	run adaptive "$dat2" "$OFA" 2 "OFA's registry over OFA's provider, 2 threads (the reference)"
else
	echo "ok $i OFA's provider, 2 threads # SKIP $NO_REFERENCE"
fi
exit $fail
