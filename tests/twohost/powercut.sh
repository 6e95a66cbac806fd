#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A peer that dies without a word (scripts/vm-run --hosts 2; the same
# script in both guests): h0 sends to h1 over a kdat connection
# (tests/twohost/dat_xfer until-broken) and cuts h1's power in the middle
# (the testbed's power switch: qemu killed, nothing sent), ROUNDS times.
# Each time h0's EP must end DISCONNECTED with DAT_CONNECTION_EVENT_BROKEN
# within the bound (keepalive_ms and the transport's retries: kdat(4),
# doc/compat-ofa.md), and h1, booted again, must serve a new connection. At the end nothing
# may be left on h0, the survivor: kdat's objects, the pinned pages, and
# kdat.ko unloads cleanly.
#
# h1 runs this script once per boot (KDAT_BOOT 0 .. ROUNDS; run-all
# resumes it): boot k serves round k and is cut; boot ROUNDS serves the
# last, checked transfer.
#
# tests/twohost/powercut.sh [ROUNDS] (default 3; make twohost-long: 20).
# The guests run with ack_timeout=16 (268 ms) and keepalive_ms=2000, as
# wire.sh's: 1.9 s of retries with DTOs in flight (doc/compat-ofa.md);
# measured: 2.0 s. KDAT_T_BREAK_BOUND: the seconds within which h0's EP must end
# (default 10, room for the emulated CPUs). Over the testbed's former
# wire (KDAT_VM_WIRE=unix, which holds a sender back while its far end
# does not read) it took 13 to 24 s: scripts/vm-run says why.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/twohost/lib.sh
. "$here/lib.sh"
twohost_init dtest
xfer_init 16
ROUNDS=${1:-3}
BOUND=${KDAT_T_BREAK_BOUND:-10}
limit=$((600 * ${KDAT_T_SLOW:-1}))
boot=${KDAT_BOOT:-0}

echo "TAP version 13"
if [ "$KDAT_HOST" = 1 ]; then
	# The victim. A boot before the last serves until its power goes.
	qual=$((22000 + boot))
	if [ "$boot" -lt "$ROUNDS" ]; then
		echo "1..1"
		"$XFER" "$KDAT" server "$qual" > "$work/srv" 2>&1 &
		wait_line "$work/srv" listening 60 ||
			{ cat "$work/srv"; result 1 "boot $boot: serving"; exit 1; }
		barrier "up-$boot" 300
		# The cut comes; should it not, this boot fails.
		sleep "$limit"
		result 1 "boot $boot: the power was cut"
		exit 1
	fi
	echo "1..1"
	r=0
	timeout "$limit" "$XFER" "$KDAT" server "$qual" > "$work/srv" 2>&1 &
	spid=$!
	wait_line "$work/srv" listening 60 || r=1
	barrier "up-$boot" 300 || r=1
	wait "$spid" || r=1
	sed 's/^/# /' "$work/srv"
	grep -q ' bad_bytes 0 bad_lengths 0 out_of_order 0 ' "$work/srv" || r=1
	result $r "boot $boot, after $ROUNDS power cuts: a new connection's 4 MiB arrive, every byte checked"
	barrier end "$limit" || true
	totals
	exit
fi

# The survivor.
echo "1..$((ROUNDS + 2))"
pins0=$(pinned_pages)
for ((k = 0; k < ROUNDS; k++)); do
	r=0
	barrier "up-$k" 300 || r=1
	"$XFER" "$KDAT" client "$KDAT_PEER_IP" $((22000 + k)) $((3 * BOUND)) \
		65536 8 until-broken > "$work/cli" 2>&1 &
	cpid=$!
	sleep 3
	power 1 cycle
	wait "$cpid" || r=1
	sed 's/^/# /' "$work/cli"
	grep -q 'connection event BROKEN .* EP DISCONNECTED' "$work/cli" || r=1
	s=$(sed -n 's/.*BROKEN \([0-9.]*\) s after.*/\1/p' "$work/cli")
	[ -n "$s" ] && awk -v s="$s" -v b="$BOUND" 'BEGIN { exit !(s <= b) }' ||
		{ echo "# over the bound of $BOUND s: ${s:-no time}"; r=1; }
	result $r "power cut $((k + 1)) of h1 under a transfer: h0's EP ends DISCONNECTED, BROKEN, ${s:-?} s after the last completion (bound $BOUND s)"
done
r=0
barrier "up-$ROUNDS" 300 || r=1
timeout "$limit" "$XFER" "$KDAT" client "$KDAT_PEER_IP" $((22000 + ROUNDS)) \
	$((4 << 20)) 65536 8 send > "$work/cli" 2>&1 || r=1
sed 's/^/# /' "$work/cli"
result $r "h1 back after $ROUNDS cuts: a new connection carries 4 MiB"
r=0
all_back "$pins0" || r=1
result $r "h0 after $ROUNDS peer deaths: no kdat object left, pinned pages at $pins0, rmmod clean"
barrier end "$limit" || true
totals
