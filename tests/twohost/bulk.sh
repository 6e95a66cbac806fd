#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# One large checked transfer through a lossy wire (scripts/vm-run
# --hosts 2; the same script in both guests): h0 sends BYTES in 1 KiB
# messages (one packet each at rxe's MTU here), 64 in flight, over kdat
# to tests/twohost/dat_xfer's server on h1, which checks every byte, each
# message's length and its order; netem drops LOSS of what each guest
# sends. Then nothing may be left on either guest. Issue 16's figure:
# 1 GiB at 1% and at 5% loss (make twohost-bulk).
#
# tests/twohost/bulk.sh [BYTES [LOSS]]: default 64 MiB, 5%.
# The ACK timeout is 14 (67 ms) and keepalive_ms 2000, as wire.sh's lossy
# cases have them.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/twohost/lib.sh
. "$here/lib.sh"
twohost_init dtest
xfer_init 14 netem
BYTES=${1:-$((64 << 20))}
LOSS=${2:-5%}
# About 2 MB/s at 1% loss, 0.7 at 5%: room for five times as long.
limit=$(( (BYTES / 140000 + 300) * ${KDAT_T_SLOW:-1} ))
server=$((KDAT_HOST == 1))
qual=24000
pins0=$(pinned_pages)
echo "TAP version 13"
echo "1..2"

netem loss "$LOSS"
out=$work/xfer
r=0
t0=$SECONDS
if [ $server = 1 ]; then
	timeout "$limit" "$XFER" "$KDAT" server "$qual" > "$out" 2>&1 &
	spid=$!
	wait_line "$out" listening 60 || r=1
	barrier up || r=1
	wait "$spid" || r=1
	grep -q " bytes $BYTES bad_bytes 0 bad_lengths 0 out_of_order 0 " "$out" || r=1
else
	barrier up || r=1
	timeout "$limit" "$XFER" "$KDAT" client "$KDAT_PEER_IP" "$qual" \
		"$BYTES" 1024 64 send > "$out" 2>&1 || r=1
fi
took=$((SECONDS - t0))
sed 's/^/# /' "$out"
tc -s qdisc show dev "$KDAT_TEST_NETDEV" | sed 's/^/# netem: /'
netem none
barrier ended "$limit" || r=1
result $r "$((BYTES >> 20)) MiB at $LOSS loss in 1 KiB messages, 64 in flight: $([ $server = 1 ] && echo "h1 checked every byte, length and order" || echo "h0 sent every message") ($took s)"

twohost_end 300 "$pins0"
