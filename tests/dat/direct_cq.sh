#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Completions are reaped where the device signals them, or by whoever
# waits, not handed to ib_core's irq_poll softirq (kernel/kdat_cq.c), in
# each of libdat's modes (TAP).
#
# kdat-bench's 64 B ping-pong, COUNT round trips: every completion is
# signalled alone, so no reap comes near its budget, and a device that
# calls the handler where it may reap (6.1's rxe, from a tasklet) leaves
# the IRQ_POLL softirq (/proc/softirqs, all CPUs) nothing to run. With
# ib_core's IB_POLL_SOFTIRQ CQs it ran at least once per round trip. A
# device that calls it from a hard interrupt or with interrupts off
# (hardware; 6.12's rxe, under its CQ lock) is reaped through irq_poll,
# as ib_core would: kdat's debugfs cq file counts both kinds of call,
# and IRQ_POLL may run once for each of the second kind, never more
# (with a slack of COUNT/20 either way). Of those, a call from a task
# with interrupts off (6.12's rxe: its completer kworker) goes through an
# irq_work, so that IRQ_POLL runs at the exit of its interrupt, not in
# ksoftirqd: ksoftirqd may run for a quarter of them at most (without
# the irq_work it ran about once for each). Then a send stream at depth 64,
# where completions come in bursts and a reap past its budget leaves the
# rest to irq_poll: every send must complete.
#
# Needs kdat.ko, an rxe device (KDAT_TEST_DEV, KDAT_TEST_PORT) with an
# address (KDAT_TEST_IP) and user/kdat-bench.
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bench=$TOP/user/kdat-bench
count=1000

# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"	# skip_all, result, totals
[ -c /dev/kdat ] || skip_all "no /dev/kdat (kdat.ko not loaded)"
[ -n "${KDAT_TEST_DEV:-}" ] || skip_all "no RDMA device (KDAT_TEST_DEV)"
[ -n "${KDAT_TEST_IP:-}" ] || skip_all "no address (KDAT_TEST_IP)"
[ -x "$bench" ] || skip_all "$bench not built (make tools)"
grep -q '^ *IRQ_POLL:' /proc/softirqs || skip_all "no IRQ_POLL line in /proc/softirqs"
cqstat=/sys/kernel/debug/kdat/cq
[ -r $cqstat ] || skip_all "no $cqstat (debugfs not mounted, or not root)"
ia=$KDAT_TEST_DEV:${KDAT_TEST_PORT:-1}

irq_polls() {	# IRQ_POLL softirqs run so far, all CPUs
	awk '$1 == "IRQ_POLL:" { for (i = 2; i <= NF; i++) s += $i; print s }' \
		/proc/softirqs
}

deferred() {	# handler calls and reaps kdat left to irq_poll, so far
	awk '$1 == "signalled_irq_poll" || $1 == "budget_irq_poll" { s += $2 }
		END { print s }' $cqstat
}

signalled() {	# handler calls kdat reaped in, so far
	awk '$1 == "signalled_reaped" { print $2 }' $cqstat
}

irq_worked() {	# handler calls from a task with interrupts off, so far
	awk '$1 == "signalled_irq_work" { print $2 }' $cqstat
}

ksoftirqd_runs() {	# times the ksoftirqd threads got a CPU, so far
	local f comm c s=0
	for f in /proc/[0-9]*/comm; do
		read -r comm < "$f" 2> /dev/null || continue
		[[ $comm == ksoftirqd/* ]] || continue
		read -r _ _ c < "${f%comm}schedstat" || continue
		s=$((s + c))
	done
	echo "$s"
}

# row OUTPUT: kdat-bench's result line in OUTPUT, the one that begins
# with a number (kdat-bench(1)); else its last line, an error.
row() { grep -m1 -E '^ *[0-9]+ ' <<< "$1" || tail -n1 <<< "$1"; }

n=0 fail=0

report_devices() {	# what kdat saw the devices do (kernel/kdat_device.c)
	sed 's/^/# kdat devices: /' /sys/kernel/debug/kdat/devices
}

modes=("rings, poller:KDAT_RINGS=1" "rings, no poller:KDAT_POLLER=none"
	"ioctls:KDAT_RINGS=0")
echo "TAP version 13"
echo "1..$((2 * ${#modes[@]}))"
for m in "${modes[@]}"; do
	label=${m%%:*}
	envv=${m#*:}

	before=$(irq_polls) d0=$(deferred) s0=$(signalled) w0=$(irq_worked)
	k0=$(ksoftirqd_runs)
	out=$(env "$envv" timeout 300 "$bench" --loopback -d "$ia" --lat \
		-s 64 -n "$count" "$KDAT_TEST_IP" 2>&1)
	r=$?
	out=$(row "$out")
	ran=$(($(irq_polls) - before)) def=$(($(deferred) - d0))
	sig=$(($(signalled) - s0)) wk=$(($(irq_worked) - w0))
	ks=$(($(ksoftirqd_runs) - k0))
	echo "# $label: $out; IRQ_POLL ran $ran times; the device's calls: $sig reaped at once, $def left to irq_poll ($wk of them from a task with interrupts off, through the irq_work); ksoftirqd ran $ks times"
	# #bytes #iterations ... #posted #reaped: every receive reaped (half
	# the DTOs: the sends' completions are suppressed, kdat-bench(1)).
	read -r ops posted reaped <<< "$(awk 'NF >= 2 { print $2, $(NF - 1), $NF }' <<< "$out")"
	[ "$r" = 0 ] && [ -n "$ops" ] && [ -n "$posted" ] &&
		[ "$posted" = "$((2 * reaped))" ] || r=1
	[ "$ran" -lt $((def + count / 20)) ] || r=1
	ksd="no call from a task with interrupts off"
	if [ "$wk" != 0 ]; then
		ksd="ksoftirqd < $((wk / 4 + count / 20)) times"
		[ "$ks" -lt $((wk / 4 + count / 20)) ] || r=1
	fi
	result "$r" "$label: $count ping-pongs, IRQ_POLL ran < $((count / 20)) times more than the device's calls made it ($def), $ksd"

	before=$(irq_polls)
	out=$(env "$envv" timeout 300 "$bench" --loopback -d "$ia" -s 64 \
		-t 64 -n 20000 "$KDAT_TEST_IP" 2>&1)
	r=$?
	out=$(row "$out")
	ran=$(($(irq_polls) - before))
	echo "# $label: $out; IRQ_POLL ran $ran times"
	read -r ops posted reaped <<< "$(awk 'NF >= 2 { print $2, $(NF - 1), $NF }' <<< "$out")"
	[ "$r" = 0 ] && [ -n "$ops" ] && [ "$posted" = "$reaped" ] || r=1
	result "$r" "$label: 20000 sends at depth 64, all reaped"
done
report_devices
totals
