#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/storm.sh [KILLS [LINK_ROUNDS]]: storms against kdat, in the testbed
# (needs root, kdat.ko loaded, the testbed's rxe device: KDAT_TEST_DEV,
# KDAT_TEST_IP, KDAT_TEST_NETDEV; skips without).
#
#  1. KILLS processes (default 1000) that each connect two EPs, pin their
#     memory and ping-pong (tests/dat/dat_life_helper traffic), 8 at a
#     time, each killed with SIGKILL at a random point: while it sets up
#     (half-open connections), while data moves (full queues, a waiter
#     asleep in dat_evd_wait). Then every kdat object counter, the poller
#     threads and the pinned pages are back where they started, and
#     kdat.ko unloads.
#  2. LINK_ROUNDS rounds (default 50) of `rdma link delete` under the same
#     traffic, then `rdma link add` (scripts/rxe-up): each round ends
#     within a minute, the process sees its EPs broken and frees
#     everything.
#
# make storm runs the defaults; make check runs a few of each (suite line
# in tests/suites). STORM_SEED=N replays the kill points (printed first).
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KILLS=${1:-${KDAT_T_STORM_KILLS:-1000}}
ROUNDS=${2:-${KDAT_T_STORM_ROUNDS:-50}}
LIFE=$TOP/tests/dat/dat_life_helper
KO=${KDAT_KO:-$TOP/kdat.ko}
DEV=${KDAT_TEST_DEV:-}
PORT=${KDAT_TEST_PORT:-1}

# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/tap.sh"	# skip_all, diag
# shellcheck source=tests/lib/objects.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/objects.sh"	# $OBJS, objects_left, pinned_pages

if [ "$(id -u)" != 0 ] || [ ! -c /dev/kdat ] || [ -z "$DEV" ] ||
	[ -z "${KDAT_TEST_IP:-}" ] || [ -z "${KDAT_TEST_NETDEV:-}" ] ||
	[ ! -r "$OBJS" ]; then
	skip_all "needs root, kdat.ko, debugfs and the testbed's rxe device"
fi

seed=${STORM_SEED:-${KDAT_T_STORM_SEED:-$RANDOM}}
RANDOM=$seed
diag "seed: $seed (STORM_SEED=$seed replays the kill points)"

pollers() { pgrep -c '^kdat-poll' || true; }

# until_clean SECONDS: the counters at zero, or say what is left.
until_clean() {
	local left
	for _ in $(seq $(($1 * 10))); do
		left=$(objects_left)
		[ -z "$left" ] && [ "$(pollers)" = 0 ] && return 0
		sleep 0.1
	done
	diag "left after ${1}s: ${left:-none}; pollers $(pollers)"
	return 1
}

echo "TAP version 13"
echo "1..2"
fail=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ---- 1. kill -9 storm ---------------------------------------------------
pins0=$(pinned_pages)
start=$(date +%s)
rc=0
done_=0
while [ "$done_" -lt "$KILLS" ]; do
	pids=()
	for j in $(seq 8); do
		[ $((done_ + j)) -le "$KILLS" ] || break
		qual=$((30000 + (done_ + j) % 2000))
		"$LIFE" traffic "$DEV:$PORT" "$KDAT_TEST_IP" "$qual" \
			> "$work/t$j" 2>&1 < /dev/null &
		pids+=($!)
	done
	# A random point: from at once (set-up, half-open) to 1.5 s
	# (ping-pong under way).
	sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
	[ $((RANDOM % 2)) = 0 ] && sleep 1
	kill -9 "${pids[@]}" 2>/dev/null
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null
	done
	done_=$((done_ + ${#pids[@]}))
done
until_clean 60 || rc=1
for _ in $(seq 30); do
	pins=$(pinned_pages)
	[ $((pins - pins0)) -le 64 ] && break
	sleep 0.2
done
diag "$KILLS processes killed in $(( $(date +%s) - start )) s;" \
	"pinned pages $pins0 before, $pins after"
[ $((pins - pins0)) -le 64 ] || { diag "pages still pinned"; rc=1; }
if ! rmmod kdat; then
	diag "rmmod after the storm failed"
	rc=1
elif ! insmod "$KO"; then
	diag "insmod $KO failed"
	rc=1
fi
if [ "$rc" = 0 ]; then
	echo "ok 1 kill -9 storm: $KILLS processes, nothing left"
else
	echo "not ok 1 kill -9 storm"
	fail=1
fi

# ---- 2. device removal storm ---------------------------------------------
rc=0
start=$(date +%s)
for r in $(seq "$ROUNDS"); do
	"$LIFE" traffic "$DEV:$PORT" "$KDAT_TEST_IP" $((32500 + r)) \
		> "$work/l" 2>&1 < /dev/null &
	pid=$!
	for _ in $(seq 600); do
		grep -q '^running' "$work/l" && break
		sleep 0.1
	done
	sleep "0.$((RANDOM % 10))"
	if ! timeout 60 rdma link delete "$DEV"; then
		diag "round $r: rdma link delete failed or hung"
		rc=1
	fi
	# The process finds its EPs broken and frees all (or dies trying).
	for _ in $(seq 600); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		diag "round $r: the traffic process is still there after 60 s"
		kill -9 "$pid"
		rc=1
	fi
	if ! wait "$pid"; then
		diag "round $r: traffic: $(tr '\n' '|' < "$work/l")"
		rc=1
	fi
	# rxe-up: the device back, ACTIVE, with its address's GID.
	timeout 120 "$TOP/scripts/rxe-up" > /dev/null ||
		{ diag "round $r: rxe-up failed"; rc=1; break; }
	until_clean 30 || { diag "round $r: objects left"; rc=1; }
	[ "$rc" = 0 ] || break
done
diag "$r rounds of delete/add in $(( $(date +%s) - start )) s"
if [ "$rc" = 0 ]; then
	echo "ok 2 rdma link delete/add under traffic: $ROUNDS rounds"
else
	echo "not ok 2 rdma link delete/add under traffic"
	fail=1
fi
[ "$fail" = 0 ]
