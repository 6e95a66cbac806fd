#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A wait that would sleep polls its DTO EVD's CQ first (kernel/kdat_evd.c,
# kdat_evd_poll(); module parameter wait_poll_us), only while its CPU has
# nothing else to run (TAP).
#
# kdat-bench's 64 B ping-pong between a client and a server process with
# no poller, each completion waited for (KDAT_BENCH_WAIT=1: dat_evd_wait
# goes to the kernel at once, KDAT_POLLER=none spins in no library), with
# the kdat_wait_poll tracepoint on:
#  - wait_poll_us 0: no wait polls; the run's typical half round trip
#    (kdat-bench's t_typical) says how long the next one polls;
#  - wait_poll_us W, W four times that half round trip, 1 ms at least
#    and kdat's 10 ms cap at most: waits poll, and find their completion
#    in the poll ("hit"): the peer's send completes on the other CPU
#    while the waiter polls (half a round trip takes some 5 ms on the
#    6.12 debug kernel under TCG: a 1 ms poll never met one there);
#  - the two processes and a busy loop on one CPU: no wait polls, each
#    says its CPU was shared ("shared"), and no poll ended for a task
#    that wanted its CPU ("wanted": none starts there).
# Every round trip completes in each.
#
# Needs kdat.ko, root (module parameter, tracefs), an rxe device
# (KDAT_TEST_DEV, KDAT_TEST_PORT) with an address (KDAT_TEST_IP),
# user/kdat-bench and two CPUs.
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bench=$TOP/user/kdat-bench
param=/sys/module/kdat/parameters/wait_poll_us
T=/sys/kernel/tracing
ev=$T/events/kdat/kdat_wait_poll
count=1000

# shellcheck source=tests/lib/tap.sh
. "$TOP/tests/lib/tap.sh"	# skip_all, result, totals
# shellcheck source=tests/dat/providers.sh
. "$TOP/tests/dat/providers.sh"	# wait_rdma_listen
# shellcheck source=tests/dat/calls.sh
. "$TOP/tests/dat/calls.sh"	# calls_arm, calls_disarm
[ -c /dev/kdat ] || skip_all "no /dev/kdat (kdat.ko not loaded)"
[ -n "${KDAT_TEST_DEV:-}" ] || skip_all "no RDMA device (KDAT_TEST_DEV)"
[ -n "${KDAT_TEST_IP:-}" ] || skip_all "no address (KDAT_TEST_IP)"
[ -x "$bench" ] || skip_all "$bench not built (make tools)"
[ "$(id -u)" = 0 ] || skip_all "needs root (module parameter, tracefs)"
[ "$(nproc)" -ge 2 ] || skip_all "needs two CPUs"
mountpoint -q $T || mount -t tracefs nodev $T 2> /dev/null ||
	skip_all "no tracefs"
[ -w "$ev/enable" ] || skip_all "no kdat_wait_poll tracepoint"
ia=$KDAT_TEST_DEV:${KDAT_TEST_PORT:-1}
work=$(mktemp -d)
old=$(cat $param)
hog=
cleanup() {
	[ -n "$hog" ] && kill "$hog" 2> /dev/null
	echo 0 > "$ev/enable"
	calls_disarm
	echo "$old" > $param
	rm -rf "$work"
}
trap cleanup EXIT
calls_arm

n=0 fail=0

# polls HOW: the kdat_wait_poll events of the last run that ended HOW.
polls() { grep -c "kdat_wait_poll:.* how=$1\$" "$work/trace"; }

# row FILE: kdat-bench's result line in FILE, the one that begins with a
# number (kdat-bench(1)); else its last line, an error.
row() { grep -m1 -E '^ *[0-9]+ ' "$1" || tail -n1 "$1"; }

# pair COUNT [CPU]: the ping-pong, client and server (both on CPU, if
# given), traced; 0 when every round trip completed.
q=7700
pair() {
	local c=$1 pin=() before out r spid
	[ -n "${2:-}" ] && pin=(taskset -c "$2")
	q=$((q + 1))
	echo > $T/trace
	echo 1 > "$ev/enable"
	before=$(rdma_listeners)
	KDAT_POLLER=none KDAT_BENCH_WAIT=1 timeout 300 "${pin[@]}" "$bench" \
		-d "$ia" -p "$q" > "$work/srv" 2>&1 &
	spid=$!
	wait_rdma_listen "$before" 20
	KDAT_POLLER=none KDAT_BENCH_WAIT=1 timeout 300 "${pin[@]}" "$bench" \
		-d "$ia" -p "$q" --lat -s 64 -n "$c" "$KDAT_TEST_IP" \
		> "$work/cli" 2>&1
	r=$?
	wait "$spid" || r=1
	echo 0 > "$ev/enable"
	cat $T/trace > "$work/trace"
	out=$(row "$work/cli")
	echo "# client: $out; server: $(row "$work/srv")"
	# #bytes #iterations ... #posted #reaped: every receive reaped.
	read -r ops posted reaped <<< "$(awk 'NF >= 2 { print $2, $(NF - 1), $NF }' <<< "$out")"
	[ "$r" = 0 ] && [ "$ops" = "$c" ] && [ -n "$posted" ] &&
		[ "$posted" = "$((2 * reaped))" ]
}

echo "TAP version 13"
echo "1..3"

echo 0 > $param
pair $count
r=$?
all=$(grep -c 'kdat_wait_poll:' "$work/trace")
echo "# wait_poll_us 0: $all kdat_wait_poll events"
[ "$all" = 0 ] || r=1
result "$r" "wait_poll_us 0: $count round trips, no wait polls"

# #bytes #iterations t_min t_max t_typical ...: half round trips, in us.
half=$(awk 'NF >= 5 { printf "%d", $5; exit }' <<< "$(row "$work/cli")")
window=$((4 * ${half:-0}))
[ "$window" -ge 1000 ] || window=1000
[ "$window" -le 10000 ] || window=10000
echo $window > $param
pair $count
r=$?
hit=$(polls hit) miss=$(polls miss) wanted=$(polls wanted)
shared=$(polls shared)
echo "# wait_poll_us $window (half round trip ${half:-?} us): $hit polls found the completion, $miss did not, $wanted ended for a task that wanted the CPU, $shared not polled (CPU shared)"
# Each side waits once per round trip; how many of those waits find
# the message already there (reaped before the poll), poll, or sleep
# depends on how the two CPUs' work interleaves (and on the guest's
# speed): polls must run and meet completions.
[ "$hit" -ge 10 ] || r=1
result "$r" "wait_poll_us $window: $count round trips, >= 10 waits met by the poll"

echo 1000 > $param
taskset -c 1 sh -c 'while :; do :; done' &
hog=$!
pair 200 1
r=$?
kill "$hog"
hog=
hit=$(polls hit) miss=$(polls miss) wanted=$(polls wanted)
shared=$(polls shared)
echo "# on one CPU with a busy loop: $hit hit, $miss missed, $wanted ended for the CPU, $shared not polled"
[ "$hit" = 0 ] && [ "$miss" = 0 ] && [ "$wanted" = 0 ] &&
	[ "$shared" -gt 0 ] || r=1
result "$r" "a CPU with more to run: 200 round trips, no wait polls"

totals
