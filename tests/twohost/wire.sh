#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kdat when the wire fails (scripts/vm-run --hosts 2; the same script in
# both guests): checked transfers (tests/twohost/dat_xfer: the server on
# h1 checks every byte, each message's length and order) over kdat with
# netem on both guests' side of the wire (loss, delay with reordering,
# duplication), with the link flapping, across a partition shorter than
# the connection's retry bound (it must hold) and one longer (both EPs
# must end BROKEN, within the bound, and a new connection must work once
# it heals). Then nothing may be left on either guest: kdat's objects and
# the pinned pages are back where they were.
#
# The guests run with ack_timeout=16 (the RC ACK timeout, 268 ms, half
# the RDMA CM's 537 ms: rxe recovers most losses by that timeout; 8 of
# them, 2.1 s, are how long an outage the connection outlives) and
# keepalive_ms=2000.
#
# tests/twohost/wire.sh [BYTES [LOSSY_BYTES [FLAPS]]]: the clean
# transfers move BYTES (default 32 MiB), the lossy ones LOSSY_BYTES
# (default 2 MiB), FLAPS link flaps (default 3); make twohost-long: 1 GiB
# each, 100 flaps. KDAT_T_BREAK_BOUND: the seconds within which
# an EP must learn that its connection is gone (default 10: keepalive_ms
# plus 8 ACK timeouts, with room for the emulated CPUs).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/twohost/lib.sh
. "$here/lib.sh"
twohost_init dtest
xfer_init 16 netem
BYTES=${1:-$((32 << 20))}
LOSSY=${2:-$((2 << 20))}
FLAPS=${3:-3}
MSG=65536 DEPTH=8
BOUND=${KDAT_T_BREAK_BOUND:-10}
limit=$((300 * ${KDAT_T_SLOW:-1}))
server=$((KDAT_HOST == 1))
qual=21000
pins0=$(pinned_pages)

# The transfers, in order: name, netem arguments (both guests), client
# mode, bytes, message size, messages in flight, ACK timeout. Through a
# lossy wire the messages are of one packet (rxe's MTU here is 1024): RC
# retransmits from the lost packet to the end of the message (go-back-N),
# and the transport's retry count (6) is spent by consecutive failed
# attempts, so a 64-packet message at 5% loss breaks the connection
# within a few messages. A loss the receiver does not see followed by
# another packet costs an ACK timeout: through the lossy wires it is 14
# (67 ms), which moved 2 MiB at 5% loss at 680 KB/s with 64 messages in
# flight, where 16 (268 ms) moved 100 to 190 KB/s.
cases=(
	"clean|none|send|$BYTES|65536|8|16"
	"clean, RDMA writes|none|write|$BYTES|65536|8|16"
	"1% loss|loss 1%|send|$LOSSY|1024|64|14"
	"1% loss, RDMA writes|loss 1%|write|$LOSSY|1024|64|14"
	"5% loss|loss 5%|send|$LOSSY|1024|64|14"
	"5% loss, RDMA writes|loss 5%|write|$LOSSY|1024|64|14"
	"delay 1 ms, 5% reordered|delay 1ms reorder 5% 50%|send|$LOSSY|1024|64|14"
	"1% duplicated|duplicate 1%|send|$LOSSY|1024|64|14"
)
echo "TAP version 13"
# Per transfer case one verdict per guest; the flaps, the short and the
# long partition, and the leak check after.
echo "1..$((${#cases[@]} + FLAPS + 3))"

# link_ready: the port ACTIVE with its address's GID again (scripts/rxe-up
# waits for both), and the peer's Ethernet address known.
link_ready() {
	"$KDAT_REPO/scripts/rxe-up" > /dev/null
	busybox ping -c 1 -W 5 "$KDAT_PEER_IP" > /dev/null
}

# xfer TAG BYTES MODE [DURING]: one checked transfer of $MSG-byte
# messages, $DEPTH in flight; h1 serves, h0 sends.
# DURING: a command h1 runs while the transfer is under way. Sets $out
# to this guest's dat_xfer output; 0 when its side of it was right.
xfer() {
	local tag=$1 bytes=$2 mode=$3 during=${4:-} r=0 spid
	qual=$((qual + 1))
	out=$work/xfer-$tag
	if [ $server = 1 ]; then
		timeout "$limit" "$XFER" "$KDAT" server "$qual" > "$out" 2>&1 &
		spid=$!
		wait_line "$out" listening 60 || r=1
		barrier "$tag-up" || r=1
		if [ -n "$during" ]; then
			sleep 2
			eval "$during"
		fi
		wait "$spid" || r=1
		grep -q ' bad_bytes 0 bad_lengths 0 out_of_order 0 ' "$out" || r=1
	else
		barrier "$tag-up" || r=1
		timeout "$limit" "$XFER" "$KDAT" client "$KDAT_PEER_IP" "$qual" \
			"$bytes" "$MSG" "$DEPTH" "$mode" > "$out" 2>&1 || r=1
	fi
	sed 's/^/# /' "$out"
	barrier "$tag-done" "$limit" || r=1
	return $r
}


# The link of h1 goes down for half a second under a transfer, FLAPS
# times. rxe fails a send it cannot put on a link that is down (a local
# QP error), so the transfer may end: then it must end cleanly, within
# the bound (h1's DTO fails, or its post is refused with DAT_INVALID_STATE
# when the device is deleted first; h0's EP ends DISCONNECTED with BROKEN
# or DISCONNECTED; nothing hangs), and a new connection must carry a checked
# MiB once the link is back. rxe puts QP1 in error the same way when the
# CM's message (the DREQ of the broken connection) meets the link down,
# after which the port's CM is dead: h1 adds rxe0 again after each flap
# (scripts/rxe-up), as a user of rxe must; kdat sees the device go and a
# new one come.
for ((f = 1; f <= FLAPS; f++)); do
	flap='ip link set "$KDAT_TEST_NETDEV" down; sleep 0.5;
		ip link set "$KDAT_TEST_NETDEV" up;
		rdma link delete "$KDAT_TEST_DEV"; link_ready'
	[ $server = 1 ] || flap=
	r=0
	xfer "flap$f" "$BYTES" send "$flap"
	rc=$?
	if [ $rc != 0 ]; then
		if [ $server = 1 ]; then
			# Its DTO fails, its EP hears the end, or (the device
			# deleted under it before either) a post is refused
			# as on a device that is gone: DAT_INVALID_STATE.
			grep -q 'server: \(DTO status\|connection event\)\|dat_ep_post_[a-z]*(.*): DAT_INVALID_STATE' "$out" || r=1
		else
			grep -q 'connection event \(BROKEN\|DISCONNECTED\) .* EP DISCONNECTED' "$out" || r=1
		fi
	fi
	how=completed
	[ $rc = 0 ] || how="ended cleanly"
	xfer "flap$f-after" $((1 << 20)) send || r=1
	result $r "link flap $f of $FLAPS of h1 (0.5 s) under a transfer: it $how; a new connection carries 1 MiB, checked"
done

# A partition of 1 s (h1 drops everything it sends): the retries outlast
# it; the transfer completes.
part='netem loss 100%; sleep 1; netem none'
[ $server = 1 ] || part=
xfer partition "$BYTES" send "$part"
result $? "a partition of 1 s under a transfer: it holds, every byte checked"

# A partition for good: both EPs learn within the bound, BROKEN; after the
# heal a new connection carries a checked transfer.
r=0
qual=$((qual + 1))
out=$work/broken
if [ $server = 1 ]; then
	timeout "$limit" "$XFER" "$KDAT" server "$qual" > "$out" 2>&1 &
	spid=$!
	wait_line "$out" listening 60 || r=1
	barrier long-up || r=1
	sleep 2
	netem loss 100%
	t0=$SECONDS
	wait "$spid" || r=1
	took=$((SECONDS - t0))
	netem none
	link_ready
	grep -q 'server: \(connection event BROKEN\|DTO status\)' "$out" || r=1
	[ "$took" -le "$BOUND" ] || { echo "# h1 took $took s"; r=1; }
else
	barrier long-up || r=1
	timeout "$limit" "$XFER" "$KDAT" client "$KDAT_PEER_IP" "$qual" \
		$((3 * BOUND)) "$MSG" 8 until-broken > "$out" 2>&1 || r=1
	grep -q 'connection event BROKEN .* EP DISCONNECTED' "$out" || r=1
	s=$(sed -n 's/.*BROKEN \([0-9.]*\) s after.*/\1/p' "$out")
	[ -n "$s" ] && awk -v s="$s" -v b="$BOUND" 'BEGIN { exit !(s <= b) }' ||
		{ echo "# over the bound of $BOUND s: ${s:-no time}"; r=1; }
fi
sed 's/^/# /' "$out"
barrier long-ended "$limit" || r=1
xfer healed $((4 << 20)) send || r=1
result $r "a partition for good: h$KDAT_HOST's EP ends BROKEN within $BOUND s; after the heal a new connection carries 4 MiB, checked"

i=0
for c in "${cases[@]}"; do
	IFS='|' read -r name args mode bytes MSG DEPTH ack <<< "$c"
	i=$((i + 1))
	echo "$ack" > $P/ack_timeout
	# shellcheck disable=SC2086 # a list of netem arguments
	netem $args
	barrier "netem-$i" || true
	t0=$SECONDS
	xfer "case$i" "$bytes" "$mode"
	r=$?
	netem none
	echo 16 > $P/ack_timeout
	result $r "$((bytes >> 20)) MiB in $MSG B messages ($DEPTH in flight), $name: every byte arrives, in order ($([ $server = 1 ] && echo "h1 checks" || echo "h0 sends"); $((SECONDS - t0)) s)"
done

# Nothing left: kdat's objects, the pinned pages.
twohost_end "$limit" "$pins0"
