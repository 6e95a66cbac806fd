#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Module life of kdat.ko (TAP): load/unload, unload while in use, a process
# killed with objects open, and the RDMA device removed under an open IA.
#
# Needs root, kdat.ko ($KDAT_KO) and an RDMA device ($KDAT_TEST_DEV, port
# $KDAT_TEST_PORT). The device-removal case needs a Soft-RoCE device that
# scripts/rxe-up can re-create ($KDAT_TEST_NETDEV set, as in the testbed).
# Exits 4 (skip) with the reason when these are missing. KDAT_T_CASES, a
# regular expression, runs only the cases whose names match it.
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KO=${KDAT_KO:-$TOP/kdat.ko}
HOLD=$TOP/tests/selftests/kdat_hold_ia
DEV=${KDAT_TEST_DEV:-}
PORT=${KDAT_TEST_PORT:-1}

# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/tap.sh"	# skip_all, diag
# shellcheck source=tests/lib/objects.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/objects.sh"	# $OBJS, pinned_pages

[ "$(id -u)" = 0 ] || skip_all "needs root (insmod/rmmod)"
[ -f "$KO" ] || skip_all "$KO not built"
[ -x "$HOLD" ] || skip_all "$HOLD not built"
[ -n "$DEV" ] || skip_all "no RDMA device (set KDAT_TEST_DEV)"
[ -d "/sys/class/infiniband/$DEV" ] || skip_all "RDMA device $DEV not present"

ncase=0
nfail=0

# run_case NAME FUNCTION: FUNCTION returns 0 (pass), 4 (skipped; it set
# skip_reason) or anything else (fail).
nskip=0
skip_reason=
run_case() {
	local name=$1 fn=$2 rc=0
	ncase=$((ncase + 1))
	if [ -n "${KDAT_T_CASES:-}" ] && ! [[ $name =~ $KDAT_T_CASES ]]; then
		skip_reason="not in KDAT_T_CASES"
		rc=4
	else
		"$fn" || rc=$?
	fi
	if [ "$rc" = 0 ]; then
		echo "ok $ncase $name"
	elif [ "$rc" = 4 ]; then
		echo "ok $ncase $name # SKIP $skip_reason"
		nskip=$((nskip + 1))
	else
		echo "not ok $ncase $name"
		nfail=$((nfail + 1))
	fi
}

loaded() { grep -q '^kdat ' /proc/modules; }

load() {
	loaded && return 0
	modprobe ib_core && insmod "$KO" || return 1
	# udev is not running in the testbed: devtmpfs creates the node.
	for _ in $(seq 50); do
		[ -c /dev/kdat ] && return 0
		sleep 0.1
	done
	diag "/dev/kdat did not appear"
	return 1
}

# objects_field NAME: a counter from kdat's debugfs file.
objects_field() {
	awk -v k="$1" '$1 == k { print $2 }' "$OBJS"
}

expect_objects() {
	local files ia
	files=$(objects_field files) ia=$(objects_field ia)
	if [ "$files" != "$1" ] || [ "$ia" != "$2" ]; then
		diag "debugfs: files $files ia $ia, want files $1 ia $2"
		return 1
	fi
}

# A process holding an IA: start_holder; its replies come from read_holder.
start_holder() {
	local line
	coproc HOLDER { exec "$HOLD" "$DEV" "$PORT"; }
	if ! read -r -t 10 line <&"${HOLDER[0]}" || [ "${line%% *}" != ready ]; then
		diag "holder did not start: '${line:-}'"
		return 1
	fi
}

holder_cmd() {
	local line
	echo "$1" >&"${HOLDER[1]}"
	read -r -t 10 line <&"${HOLDER[0]}" || line="(no answer)"
	echo "$line"
}

stop_holder() {
	local pid=${HOLDER_PID:-}
	[ -n "$pid" ] || return 0
	{ echo exit >&"${HOLDER[1]}"; } 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

case_load_unload_20() {
	local i
	for i in $(seq 20); do
		if ! rmmod kdat; then
			diag "rmmod $i failed"
			return 1
		fi
		if [ -e /dev/kdat ]; then
			diag "/dev/kdat still there after rmmod $i"
			return 1
		fi
		if ! load; then
			diag "insmod $i failed"
			return 1
		fi
		if ! "$TOP/user/kdat-info" > /dev/null; then
			diag "kdat-info failed after insmod $i"
			return 1
		fi
	done
}

case_rmmod_refused_while_held() {
	local rc=0
	start_holder || return 1
	if rmmod kdat 2>/dev/null; then
		diag "rmmod succeeded with /dev/kdat open"
		rc=1
	fi
	if [ "$rc" = 0 ]; then
		# The holder's IA still works after the refused rmmod.
		case $(holder_cmd query) in
		"state ACTIVE"*) ;;
		*) diag "IA query after refused rmmod failed"; rc=1 ;;
		esac
	fi
	stop_holder
	if ! loaded; then
		load
		return 1
	fi
	if ! rmmod kdat; then
		diag "rmmod failed after the holder exited"
		rc=1
	fi
	load || rc=1
	return $rc
}

case_kill9_leaves_nothing() {
	local pids=() i out rc=0
	expect_objects 0 0 || return 1
	out=$(mktemp)
	for i in 1 2 3; do
		# stdin stays open (sleep never writes): the holder waits.
		sleep 1000 | "$HOLD" "$DEV" "$PORT" >> "$out" &
		pids+=("$!")
	done
	for _ in $(seq 100); do
		[ "$(grep -c '^ready' "$out")" = 3 ] && break
		sleep 0.1
	done
	expect_objects 3 3 || rc=1
	# wait on a pipeline's pid waits for the whole pipeline: end the
	# sleeps too (they were only there to keep the holders' stdin open).
	# bash's job notices go to stderr: keep them out of the TAP stream.
	{
		kill -9 "${pids[@]}"
		pkill -P $$ -x sleep
		for i in "${pids[@]}"; do
			wait "$i"
		done
	} 2>/dev/null
	rm -f "$out"
	[ "$rc" = 0 ] || return 1
	expect_objects 0 0 || return 1
	# Nothing pins the module either.
	rmmod kdat || { diag "rmmod after kill -9 failed"; return 1; }
	load
}

case_device_removed_under_ia() {
	local rc=0 ans
	if [ -z "${KDAT_TEST_NETDEV:-}" ]; then
		skip_reason="$DEV is not a testbed rxe device"
		return 4
	fi
	start_holder || return 1
	if ! rdma link delete "$DEV"; then
		diag "rdma link delete $DEV failed"
		stop_holder
		return 1
	fi
	ans=$(holder_cmd query)
	case $ans in
	"state DEVICE_GONE"*) ;;
	*) diag "query after removal: '$ans'"; rc=1 ;;
	esac
	ans=$(holder_cmd close)
	[ "$ans" = "destroy 0" ] || { diag "close after removal: '$ans'"; rc=1; }
	stop_holder
	expect_objects 0 0 || rc=1
	if grep -q "^$DEV " <<< "$("$TOP/user/kdat-info")"; then
		diag "$DEV still listed after removal"
		rc=1
	fi
	"$TOP/scripts/rxe-up" > /dev/null || { diag "rxe-up failed"; return 1; }
	# The device comes back: listed again, an IA opens on it.
	if ! "$TOP/user/kdat-info" -o "$DEV:$PORT" > /dev/null; then
		diag "IA open on the re-created $DEV failed"
		rc=1
	fi
	rmmod kdat || { diag "rmmod after device removal failed"; rc=1; }
	load || rc=1
	return $rc
}

case_rxe_module_removed_under_ia() {
	local rc=0 ans
	if [ -z "${KDAT_TEST_NETDEV:-}" ]; then
		skip_reason="$DEV is not a testbed rxe device"
		return 4
	fi
	if ! grep -q '^rdma_rxe ' /proc/modules; then
		# The debug kernel: the same ib_client removal is covered by
		# device_removed_under_open_ia (rdma link delete).
		skip_reason="rdma_rxe is built into this kernel: it cannot be removed"
		return 4
	fi
	start_holder || return 1
	# rdma_rxe is used by nothing but the device; its removal unregisters
	# the device from under us (the ib_client remove callback).
	modprobe -r rdma_rxe || { diag "modprobe -r rdma_rxe failed"; rc=1; }
	ans=$(holder_cmd query)
	case $ans in
	"state DEVICE_GONE"*) ;;
	*) diag "query after rdma_rxe removal: '$ans'"; rc=1 ;;
	esac
	stop_holder
	expect_objects 0 0 || rc=1
	"$TOP/scripts/rxe-up" > /dev/null || { diag "rxe-up failed"; return 1; }
	"$TOP/user/kdat-info" -o "$DEV:$PORT" > /dev/null || rc=1
	return $rc
}

case_device_removed_under_connected_eps() {
	local rc=0 line out
	if [ -z "${KDAT_TEST_NETDEV:-}" ] || [ -z "${KDAT_TEST_IP:-}" ]; then
		skip_reason="$DEV is not a testbed rxe device"
		return 4
	fi
	coproc RMH { exec "$TOP/tests/dat/dat_life_helper" remove "$DEV:$PORT" \
		"$KDAT_TEST_IP" 4321 2>&1; }
	if ! read -r -t 60 line <&"${RMH[0]}" || [ "$line" != ready ]; then
		diag "helper did not get ready: '${line:-}'"
		kill "$RMH_PID" 2>/dev/null
		return 1
	fi
	# One process, two IAs: libdat opens one file per process.
	expect_objects 1 2 || rc=1
	rdma link delete "$DEV" || { diag "rdma link delete failed"; rc=1; }
	echo go >&"${RMH[1]}"
	out=$(cat <&"${RMH[0]}")
	wait "$RMH_PID" || { diag "helper: $out"; rc=1; }
	expect_objects 0 0 || rc=1
	"$TOP/scripts/rxe-up" > /dev/null || { diag "rxe-up failed"; return 1; }
	rmmod kdat || { diag "rmmod after removal under EPs failed"; rc=1; }
	load || rc=1
	return $rc
}

# A process killed with connected EPs, posted DTOs, pinned LMRs, a PSP.
case_kill9_connected_leaves_nothing() {
	local line
	if [ -z "${KDAT_TEST_IP:-}" ]; then
		skip_reason="no KDAT_TEST_IP"
		return 4
	fi
	coproc RMH { exec "$TOP/tests/dat/dat_life_helper" remove "$DEV:$PORT" \
		"$KDAT_TEST_IP" 4321 2>&1; }
	if ! read -r -t 60 line <&"${RMH[0]}" || [ "$line" != ready ]; then
		diag "helper did not get ready: '${line:-}'"
		kill "$RMH_PID" 2>/dev/null
		return 1
	fi
	awk '$1 == "ep" || $1 == "lmr" || $1 == "psp" { printf "# before: %s\n", $0 }' "$OBJS"
	{ kill -9 "$RMH_PID"; wait "$RMH_PID"; } 2>/dev/null
	if awk '$1 != "devices" && $2 != 0 { bad = 1; print "# left: " $0 } END { exit !bad }' "$OBJS"; then
		return 1
	fi
	rmmod kdat || { diag "rmmod after kill -9 failed"; return 1; }
	load
}

LIFE=$TOP/tests/dat/dat_life_helper

# wait_line FILE TEXT SECONDS PID: until FILE has a line starting with
# TEXT, written by process PID; fails at once when PID has exited without
# writing it.
wait_line() {
	local i
	for i in $(seq $(($3 * 10))); do
		grep -q "^$2" "$1" 2>/dev/null && return 0
		if ! kill -0 "$4" 2>/dev/null; then
			grep -q "^$2" "$1" 2>/dev/null && return 0
			diag "no '$2' from process $4, which has exited: $(tr '\n' '|' < "$1")"
			return 1
		fi
		sleep 0.1
	done
	diag "no '$2' in $1 after $3 s: $(tr '\n' '|' < "$1")"
	return 1
}

# kill -9 of a process with a connection, posted DTOs and 64 MiB
# registered: its peer (another process) sees the disconnect, the pinned
# pages are all released, nothing is left, rmmod works.
case_kill9_64mib() {
	local dir rc=0 spid cpid pins0 pins1 pins2
	if [ -z "${KDAT_TEST_IP:-}" ]; then
		skip_reason="no KDAT_TEST_IP"
		return 4
	fi
	if ! grep -q nr_foll_pin_acquired /proc/vmstat; then
		skip_reason="no FOLL_PIN counters in /proc/vmstat"
		return 4
	fi
	dir=$(mktemp -d)
	pins0=$(pinned_pages)
	"$LIFE" server "$DEV:$PORT" 4400 > "$dir/srv" 2>&1 < /dev/null &
	spid=$!
	wait_line "$dir/srv" listening 60 "$spid" || rc=1
	"$LIFE" client "$DEV:$PORT" "$KDAT_TEST_IP" 4400 64 > "$dir/cli" \
		2>&1 < /dev/null &
	cpid=$!
	wait_line "$dir/cli" ready 120 "$cpid" || rc=1
	wait_line "$dir/srv" connected 60 "$spid" || rc=1
	# The vmstat counters fold per-CPU deltas in about once a second;
	# until then they may be off by a few pages either way.
	for _ in $(seq 30); do
		pins1=$(pinned_pages)
		[ $((pins1 - pins0)) -ge 16384 ] && break
		sleep 0.2
	done
	diag "pinned pages: $pins0 before, $pins1 with 64 MiB registered"
	[ $((pins1 - pins0)) -ge $((16384 - 64)) ] ||
		{ diag "64 MiB not pinned"; rc=1; }
	{ kill -9 "$cpid"; wait "$cpid"; } 2>/dev/null
	if ! wait "$spid"; then
		diag "server: $(tr '\n' '|' < "$dir/srv")"
		rc=1
	fi
	grep '^peer-gone' "$dir/srv" | sed 's/^/# /'
	for _ in $(seq 30); do
		pins2=$(pinned_pages)
		[ "$pins2" -le "$pins0" ] && break
		sleep 0.2
	done
	diag "pinned pages after the kill: $pins2"
	[ $((pins2 - pins0)) -le 64 ] || { diag "pages still pinned"; rc=1; }
	if awk '$1 != "devices" && $2 != 0 { bad = 1; print "# left: " $0 }
		END { exit !bad }' "$OBJS"; then
		rc=1
	fi
	rm -rf "$dir"
	rmmod kdat || { diag "rmmod after kill -9 failed"; rc=1; }
	load || rc=1
	return $rc
}

# The device goes while two EPs ping-pong: clean errors, nothing left.
case_device_removed_under_traffic() {
	local dir rc=0 pid
	if [ -z "${KDAT_TEST_NETDEV:-}" ] || [ -z "${KDAT_TEST_IP:-}" ]; then
		skip_reason="$DEV is not a testbed rxe device"
		return 4
	fi
	dir=$(mktemp -d)
	"$LIFE" traffic "$DEV:$PORT" "$KDAT_TEST_IP" 4500 > "$dir/out" 2>&1 \
		< /dev/null &
	pid=$!
	wait_line "$dir/out" running 120 "$pid" || rc=1
	rdma link delete "$DEV" || { diag "rdma link delete failed"; rc=1; }
	if ! wait "$pid"; then
		diag "traffic: $(tr '\n' '|' < "$dir/out")"
		rc=1
	fi
	grep '^ok' "$dir/out" | sed 's/^/# /'
	rm -rf "$dir"
	expect_objects 0 0 || rc=1
	"$TOP/scripts/rxe-up" > /dev/null || { diag "rxe-up failed"; return 1; }
	rmmod kdat || { diag "rmmod failed"; rc=1; }
	load || rc=1
	return $rc
}

echo "TAP version 13"
echo "1..9"
load || { echo "Bail out! cannot load $KO"; exit 1; }
run_case load_unload_20_times case_load_unload_20
run_case rmmod_refused_while_held case_rmmod_refused_while_held
run_case kill9_leaves_nothing case_kill9_leaves_nothing
run_case kill9_with_connections_leaves_nothing \
	case_kill9_connected_leaves_nothing
run_case device_removed_under_open_ia case_device_removed_under_ia
run_case rxe_module_removed_under_open_ia case_rxe_module_removed_under_ia
run_case device_removed_under_connected_eps \
	case_device_removed_under_connected_eps
run_case kill9_with_64mib_registered_peer_sees_disconnect case_kill9_64mib
run_case device_removed_under_traffic case_device_removed_under_traffic
echo "# Totals: pass:$((ncase - nfail - nskip)) fail:$nfail skip:$nskip"
[ "$nfail" = 0 ]
