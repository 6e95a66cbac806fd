#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The data path's system calls, counted (TAP): kdat-bench's measured loop
# (between the two getppid() calls that bracket it) is traced with the
# syscalls events, which cost the process nothing (strace stops it at
# each call, and a slowed process lets the poller fall asleep).
#
#  - rings with a spinning poller (KDAT_POLLER=spin): the loop makes no
#    system call but kdat's doorbell and wait ioctls, and fewer than one
#    of those per 20 DTOs (the steady state makes none; a poller that
#    slept and was rung awake costs a few);
#  - rings with the adaptive poller (the default): the same calls, at
#    most one per DTO (it backs off when its spinning does not pay, and
#    the process then rings the doorbell);
#  - rings with no poller (KDAT_POLLER=none): no call but the doorbell,
#    and at most one per post;
#  - the ioctl path (KDAT_RINGS=0, completions waited for): POST and
#    EVD_WAIT ioctls (one per DTO, one per wait), nothing else;
#  - an unmodified dapltest -T P client (Debian's, built for OFA's
#    libdat2) beside its server, start to exit: with the spinning poller
#    fewer than one of kdat's posts, doorbells and waits per 20 WQEs,
#    with the adaptive one at most one per WQE (its own calls, the
#    clock's and the setup's, are not counted against it). Skipped
#    without dapltest.
#
# Each case also prints the poller's sleeps during the loop, by reason
# (the kdat_poller_sleep tracepoint), and a case over its limit the
# guest's busiest tasks: what a poller backed off for.
#
# "Nothing else" is what catches a library that reads the clock, yields
# or asks the kernel anything in dat_ep_post_* or dat_evd_dequeue: the
# testbed's guest keeps time with the HPET, which has no vDSO, so even a
# clock_gettime() is a system call there.
#
# Needs kdat.ko, an rxe device (KDAT_TEST_DEV, KDAT_TEST_PORT) with an
# address (KDAT_TEST_IP), user/kdat-bench, root and tracefs.
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bench=$TOP/user/kdat-bench
work=$(mktemp -d)

# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"	# skip_all, result, totals
[ -c /dev/kdat ] || skip_all "no /dev/kdat (kdat.ko not loaded)"
[ -n "${KDAT_TEST_DEV:-}" ] || skip_all "no RDMA device (KDAT_TEST_DEV)"
[ -n "${KDAT_TEST_IP:-}" ] || skip_all "no address (KDAT_TEST_IP)"
[ -x "$bench" ] || skip_all "$bench not built (make tools)"
# shellcheck source=tests/dat/calls.sh
. "$TOP/tests/dat/calls.sh"
# rdma_listeners, wait_rdma_listen
# shellcheck source=tests/dat/providers.sh
. "$TOP/tests/dat/providers.sh"
calls_setup "$TOP" || skip_all "$calls_why"
ia=$KDAT_TEST_DEV:${KDAT_TEST_PORT:-1}
KDAT=kdat-$KDAT_TEST_DEV-${KDAT_TEST_PORT:-1}
"$TOP/scripts/kdat-datconf" > "$work/dat.conf"
export DAT_OVERRIDE=$work/dat.conf PATH=$TOP/user:$PATH
trap 'calls_stop; calls_disarm; rm -rf "$work"' EXIT
calls_arm

# traced ENV ARGS...: run kdat-bench (one process, ARGS its options) with
# its system calls traced; prints its output, then calls_count's lines
# for its measured loop.
traced() {
	local vars out

	read -ra vars <<< "$1"
	shift
	calls_start
	out=$(env "${vars[@]}" timeout 300 "$bench" --loopback -d "$ia" "$@" \
		"$KDAT_TEST_IP" 2>&1)
	calls_stop
	echo "$out"
	calls_count kdat-bench 1
}

n=0 fail=0

# check LABEL ENV ALLOWED MAX_PER_DTO ARGS...: one traced run. ALLOWED:
# the kinds of call the loop may make (space-separated); MAX_PER_DTO:
# how many of them per DTO posted at most.
check() {
	local label=$1 envv=$2 allowed=$3 max=$4 out line r=0
	local posted others="" mine=0

	shift 4
	out=$(traced "$envv" "$@")
	# Its result line, the one that begins with a number: #posted is
	# the last column but one.
	line=$(awk '$1 ~ /^[0-9]+$/ { print; exit }' <<< "$out")
	echo "# $label: kdat-bench $*: $line"
	posted=$(awk 'NF >= 2 { print $(NF - 1) }' <<< "$line")
	[[ $posted =~ ^[0-9]+$ ]] && [ "$posted" -gt 0 ] || r=1
	grep -qx traced <<< "$out" || { echo "# the trace was not read"; r=1; }
	while read -r _ kind count; do
		echo "#   $kind: $count"
		if [[ " $allowed " == *" $kind "* ]]; then
			mine=$((mine + count))
		else
			others="$others $kind"
		fi
	done < <(grep '^calls ' <<< "$out")
	[ -z "$others" ] || { echo "# other calls in the loop:$others"; r=1; }
	grep '^sleeps ' <<< "$out" | sed 's/^sleeps /#   poller sleeps in the loop, /'
	if [ "$r" = 0 ] && ! awk -v m="$mine" -v p="$posted" -v x="$max" \
		'BEGIN { exit !(m <= x * p) }'; then
		echo "# $mine calls for $posted DTOs: over $max per DTO"
		# What else wanted the CPUs (a poller backs off for it).
		ps -eo pid,comm,pcpu,stat --sort=-pcpu | head -6 | sed 's/^/#   /'
		r=1
	fi
	result "$r" "$label, $*: only ${allowed// /, } in the loop, <= $max per DTO ($mine for ${posted:-?})"
}

# dapltest_check MODE MAX: an unmodified dapltest -T P client (Debian's,
# built for OFA's libdat2, on kdat through its dat.conf line) making
# -i $DAPL_I RDMA writes of 64 B (twice that many WQEs: dapltest_p_wqes),
# depth 16, polling (-m p), beside its
# server, KDAT_POLLER=MODE for both; every call of the client and its
# threads from start to exit counted. kdat's posts, doorbells and waits
# at most MAX per WQE; its other calls are dapltest's own (its
# gettimeofday, a system call on a clocksource without a vDSO) and the
# objects' setup.
DAPL_I=20000
skip=0
dapltest_check() {
	local mode=$1 max=$2 spid cpid dog before out r=0 mine=0 kind count wqes

	if ! command -v dapltest > /dev/null; then
		n=$((n + 1))
		skip=$((skip + 1))
		echo "ok $n # SKIP dapltest client, KDAT_POLLER=$mode: no dapltest (dapl2-utils)"
		return
	fi
	export KDAT_POLLER=$mode
	before=$(rdma_listeners)
	timeout 300 dapltest -T S -D "$KDAT" > "$work/ds" 2>&1 &
	spid=$!
	wait_rdma_listen "$before" 60 || r=1
	calls_start
	# Its own process (no timeout(1) between): its calls are counted by
	# its process id. The watchdog ends a client that hangs.
	dapltest -T P -D "$KDAT" -s "$KDAT_TEST_IP" -i $DAPL_I \
		-p 16 -m p RW 64 1 > "$work/dc" 2>&1 &
	cpid=$!
	# It takes its sleep with it, and holds no output open: a sleep left
	# behind kept run-all's pipe open for 300 s after the suite ended.
	(
		trap 'kill $nap 2> /dev/null; exit 0' TERM
		sleep 300 &
		nap=$!
		wait $nap && kill "$cpid"
	) > /dev/null 2>&1 &
	dog=$!
	wait $cpid || r=1
	kill $dog 2> /dev/null
	wait $dog 2> /dev/null
	calls_stop
	timeout 60 dapltest -T Q -D "$KDAT" -s "$KDAT_TEST_IP" > /dev/null 2>&1
	wait $spid
	unset KDAT_POLLER
	grep -q '^raw:' "$work/dc" ||
		{ echo "# the client did not finish:"; sed 's/^/#   /' "$work/dc"; r=1; }
	out=$(calls_count "$cpid" 0)
	grep -qx traced <<< "$out" || { echo "# the trace was not read"; r=1; }
	while read -r _ kind count; do
		echo "#   $kind: $count"
		case $kind in
		ioctl_wake | ioctl_wait | ioctl_post) mine=$((mine + count)) ;;
		esac
	done < <(grep '^calls ' <<< "$out")
	grep '^sleeps ' <<< "$out" | sed 's/^sleeps /#   poller sleeps, /'
	wqes=$(dapltest_p_wqes $DAPL_I)
	if [ "$r" = 0 ] && ! awk -v m="$mine" -v p="$wqes" -v x="$max" \
		'BEGIN { exit !(m <= x * p) }'; then
		echo "# $mine calls for $wqes WQEs: over $max per WQE"
		r=1
	fi
	result "$r" "dapltest -T P client, KDAT_POLLER=$mode: <= $max kdat posts, doorbells and waits per WQE ($mine for $wqes)"
}

echo "TAP version 13"
echo "1..10"
check "rings, spinning poller" KDAT_POLLER=spin "ioctl_wake ioctl_wait" \
	0.05 -s 64 -t 64 -n 20000
check "rings, spinning poller" KDAT_POLLER=spin "ioctl_wake ioctl_wait" \
	0.05 -s 64 -t 1 -n 5000
check "rings, spinning poller" KDAT_POLLER=spin "ioctl_wake ioctl_wait" \
	0.05 --lat -s 64 -n 2000
check "rings, adaptive poller" KDAT_POLLER=adaptive "ioctl_wake ioctl_wait" \
	1 -s 64 -t 1 -n 5000
check "rings, no poller" KDAT_POLLER=none "ioctl_wake" 1 \
	-s 64 -t 64 -n 20000
check "rings, no poller" KDAT_POLLER=none "ioctl_wake" 1 \
	--lat -s 64 -n 2000
# The ioctl path: a POST per DTO, an EVD_WAIT per completion waited for
# (KDAT_BENCH_WAIT=1: a dequeue that polls makes as many calls as the
# completion takes to come, a fact of the device, 16 per DTO on 6.12's
# rxe, where the trace then lost the loop's bracket).
check "ioctls" "KDAT_RINGS=0 KDAT_BENCH_WAIT=1" "ioctl_post ioctl_wait" 4 \
	-s 64 -t 64 -n 20000
check "ioctls" "KDAT_RINGS=0 KDAT_BENCH_WAIT=1" "ioctl_post ioctl_wait" 4 \
	--lat -s 64 -n 2000
dapltest_check spin 0.05
dapltest_check adaptive 1
totals
