#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/fuzz/run.sh [SECONDS]: fuzz /dev/kdat with tests/fuzz/kdat_fuzz
# (TAP, a suite of tests/run-all). Needs kdat.ko loaded (exit 4 without);
# meant for the testbed guest, where rxe0 and kdat.ko are up.
#
# Two fuzzer instances run at once for SECONDS (FUZZ_S, default 60): one
# as root, one as nobody (setpriv, after chmod 0666 /dev/kdat), each with
# half of FUZZ_PROCS worker processes (default 4) of FUZZ_THREADS threads
# (default 4). Then kdat's live object counters (debugfs kdat/objects)
# must all come back to zero. FUZZ_ARGS adds fuzzer options to both, e.g.
# "-o -PSP_CREATE,-RSP_CREATE" to leave out ops with a known open bug.
#
# Replay: FUZZ_SEED=N runs the root instance with seed N and the nobody
# instance with N+1 (the first line says which seed a run used). Inside
# the testbed only KDAT_T_* variables pass through scripts/vm-run, so
# KDAT_T_FUZZ_S, KDAT_T_FUZZ_SEED and KDAT_T_FUZZ_ARGS are read too.
# On a kernel with KCOV the root instance's kdat PCs (kept in
# KDAT_FUZZ_PCS=file if set) are mapped to source lines of $KDAT_KO by
# tests/fuzz/lines.sh: "# kcov lines: covered/instrumented".
#
# Device removal at random points (issue 44): as root on the testbed's
# rxe device (KDAT_TEST_DEV, KDAT_TEST_NETDEV), a remover deletes the
# device every 1 to 5 s while the fuzzers run and brings it back with
# scripts/rxe-up: every object of every file is then taken from under
# whatever op it is in (none in the run's last 10 s). Each delete must return within 60 s (a hang is a
# failure) and the device must be back at the end. FUZZ_REMOVE=0 (or
# KDAT_T_FUZZ_REMOVE=0) leaves the device alone.
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SRC=$TOP/tests/fuzz/kdat_fuzz.c
FUZZ=${KDAT_FUZZ_BIN:-$TOP/tests/fuzz/kdat_fuzz}
SECS=${1:-${FUZZ_S:-${KDAT_T_FUZZ_S:-60}}}
SEED=${FUZZ_SEED:-${KDAT_T_FUZZ_SEED:-}}
PROCS=${FUZZ_PROCS:-4}
THREADS=${FUZZ_THREADS:-4}
read -r -a EXTRA <<< "${FUZZ_ARGS:-${KDAT_T_FUZZ_ARGS:-}}"
NOBODY=65534

# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"	# skip_all, diag
# shellcheck source=tests/lib/objects.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/objects.sh"	# $OBJS, objects_left

case $SECS in
'' | *[!0-9]*) skip_all "FUZZ_S=$SECS is not a number of seconds" ;;
esac
[ -c /dev/kdat ] || skip_all "/dev/kdat missing (kdat.ko not loaded)"

WORK=$(mktemp -d /tmp/kdat-fuzz.XXXXXX) || skip_all "mktemp failed"
trap 'rm -rf "$WORK"' EXIT
chmod 755 "$WORK"

# A binary older than its source (or none) is rebuilt here, privately.
if [ ! -x "$FUZZ" ] || { [ -f "$SRC" ] && [ "$SRC" -nt "$FUZZ" ]; }; then
	if command -v gcc >/dev/null && [ -f "$SRC" ] &&
		gcc -O2 -g -Wall -Wextra -D_GNU_SOURCE \
			-I"$TOP/include/uapi" -o "$WORK/kdat_fuzz" "$SRC" \
			-lpthread; then
		FUZZ=$WORK/kdat_fuzz
		diag "built $FUZZ from $SRC"
	else
		skip_all "$FUZZ not built (make fuzz-bin) and no compiler"
	fi
fi

if [ -z "$SEED" ]; then
	SEED=$(( (RANDOM << 30 | RANDOM << 15 | RANDOM) % 1000000000000 ))
fi
case $SEED in
*[!0-9]*) skip_all "FUZZ_SEED=$SEED is not a number" ;;
esac
replay="FUZZ_SEED=$SEED"
[ ${#EXTRA[@]} -gt 0 ] && replay+=" FUZZ_ARGS=\"${EXTRA[*]}\""
echo "# seed: $SEED (root; nobody: $((SEED + 1))); replay: $replay"

REMOVE=${FUZZ_REMOVE:-${KDAT_T_FUZZ_REMOVE:-1}}
DEV=${KDAT_TEST_DEV:-}
ncase=4
[ "$REMOVE" = 1 ] && ncase=5
echo "TAP version 13"
echo "1..$ncase"

as_nobody=()
if [ "$(id -u)" = 0 ]; then
	mountpoint -q /sys/kernel/debug ||
		mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
	chmod 0666 /dev/kdat
	if command -v setpriv >/dev/null; then
		as_nobody=(setpriv --reuid="$NOBODY" --regid="$NOBODY"
			--clear-groups)
	fi
fi

half=$(( PROCS / 2 ))
[ "$half" -ge 1 ] || half=1
limit=$(( SECS + 120 ))	# the fuzzer's own watchdog fires at SECS + 60

# run_fuzzer TAG SEED PREFIX...: in the background, output in $WORK/TAG.
run_fuzzer() {
	local tag=$1 seed=$2
	shift 2
	"$@" timeout -k 10 "$limit" "$FUZZ" -s "$seed" -t "$SECS" \
		-p "$half" -j "$THREADS" "${EXTRA[@]}" > "$WORK/$tag.out" 2>&1 &
}

# With KCOV, the root instance's PCs, mapped to kdat.ko's lines below.
KO=${KDAT_KO:-$TOP/kdat.ko}
pcs=${KDAT_FUZZ_PCS:-$WORK/pcs}
[ -e /sys/kernel/debug/kcov ] && [ -r /sys/module/kdat/sections/.text ] &&
	export KDAT_FUZZ_PCS=$pcs
run_fuzzer root "$SEED"
root_pid=$!
if [ ${#as_nobody[@]} -gt 0 ]; then
	run_fuzzer nobody "$((SEED + 1))" env -u KDAT_FUZZ_PCS "${as_nobody[@]}"
else
	# Not root: the second instance runs as ourselves.
	run_fuzzer nobody "$((SEED + 1))" env -u KDAT_FUZZ_PCS
fi
nobody_pid=$!

# blocked_stacks WHY PID: the task PID and each task in D state, with
# its state and kernel stack, one line each (into the remover's log).
blocked_stacks() {
	local d st

	for d in /proc/[0-9]*; do
		st=$(awk '/^State:/ { print $2 }' "$d/status" 2>/dev/null)
		[ "$st" = D ] || [ "${d#/proc/}" = "$2" ] || continue
		echo "blocked ($1): ${d#/proc/} $(cat "$d/comm" 2>/dev/null)" \
			"$st:" \
			"$(tr '\n' ' ' < "$d/stack" 2>/dev/null)"
	done
}

# remover: delete the device at random points while a fuzzer runs; one
# line per cycle in $WORK/remove ("ok SECONDS" or "hung"/"failed ...").
# None starts in the last 10 s: the fuzzers' final check opens an IA.
remover() {
	local t0 t1 st del deadline=$(( $(date +%s) + SECS - 10 ))

	# Ahead of the fuzzers' 32 threads for the CPU: a delete's time is
	# then kdat's waits, not this loop's turn to run.
	renice -n -15 -p "$BASHPID" > /dev/null

	while :; do
		sleep "$((1 + RANDOM % 4)).$((RANDOM % 10))"
		[ "$(date +%s)" -lt "$deadline" ] || break
		t0=$(date +%s.%N)
		rm -f "$WORK/del"
		# Its own end time: this loop may be slow itself.
		(
			timeout 60 rdma link delete "$DEV"
			echo "$? $(date +%s.%N)" > "$WORK/del.tmp"
			mv "$WORK/del.tmp" "$WORK/del"
		) &
		del=$!
		# A slow delete shows where it and every blocked task wait.
		until [ -e "$WORK/del" ] || [ "$(date +%s)" -ge \
			"$(( ${t0%.*} + 5 ))" ]; do
			sleep 0.1
		done
		[ -e "$WORK/del" ] ||
			blocked_stacks "delete after 5 s" \
				"$(pgrep -f "^rdma link delete $DEV")"
		# A delete stuck in the kernel ignores timeout's signals:
		# waited for a bounded time, it fails the case, not the suite.
		until [ -e "$WORK/del" ] || [ "$(date +%s)" -ge \
			"$(( ${t0%.*} + 70 ))" ]; do
			sleep 0.5
		done
		st=hung t1=
		[ -e "$WORK/del" ] && wait "$del" && read -r st t1 < "$WORK/del"
		if [ "$st" = 0 ]; then
			awk -v a="$t0" -v b="$t1" \
				'BEGIN { printf "ok %.1f\n", b - a }'
		else
			echo "failed or hung: rdma link delete $DEV"
			break
		fi
		t0=$(date +%s.%N)
		if timeout 120 "$TOP/scripts/rxe-up" > /dev/null 2>&1; then
			awk -v a="$t0" -v b="$(date +%s.%N)" \
				'BEGIN { printf "back after %.1f s\n", b - a }'
		else
			echo "rxe-up: $DEV not back in 120 s"
		fi
	done > "$WORK/remove"
}

remove_pid=
if [ "$REMOVE" = 1 ]; then
	if [ "$(id -u)" != 0 ] || [ -z "$DEV" ] ||
		[ -z "${KDAT_TEST_NETDEV:-}" ] || ! command -v rdma > /dev/null ||
		! rdma link show "$DEV/1" > /dev/null 2>&1; then
		remove_skip="needs root, rdma and the testbed's rxe device"
	elif [ "$SECS" -lt 20 ]; then
		remove_skip="a run of ${SECS} s leaves no time to remove the device"
	else
		remover &
		remove_pid=$!
	fi
fi

nfail=0 nskip=0

# report N TAG PID: the fuzzer's result as case N, its output as comments.
report() {
	local n=$1 tag=$2 pid=$3 rc=0 line who=$2
	wait "$pid" || rc=$?
	[ "$tag" = nobody ] && [ ${#as_nobody[@]} = 0 ] && who="$(id -un) (2nd)"
	sed -e 's/^/#   /' "$WORK/$tag.out"
	line=$(grep -m1 -E '^(not )?ok 1 fuzz' "$WORK/$tag.out")
	line=${line#not }
	line=${line#ok 1 }
	case $rc in
	0) echo "ok $n $line (as $who)" ;;
	4)
		echo "ok $n fuzz as $who # SKIP $(grep -m1 SKIP "$WORK/$tag.out")"
		nskip=$((nskip + 1))
		;;
	*)
		[ "$rc" = 124 ] && diag "the $tag fuzzer timed out after ${limit}s"
		echo "not ok $n fuzz as $who: exit $rc${line:+; $line}"
		nfail=$((nfail + 1))
		;;
	esac
}

report 1 root "$root_pid"
report 2 nobody "$nobody_pid"

if [ -n "$remove_pid" ]; then
	rc=0
	wait "$remove_pid"
	# Back for what follows, however the last cycle ended.
	timeout 120 "$TOP/scripts/rxe-up" > /dev/null 2>&1 || rc=1
	n=$(grep -c '^ok ' "$WORK/remove")
	worst=$(awk '$1 == "ok" && $2 > m { m = $2 } END { print m + 0 }' \
		"$WORK/remove")
	grep -v '^ok ' "$WORK/remove" | sed -e 's/^/# /' | cut -c1-2000
	grep -qE '^(failed|rxe-up)' "$WORK/remove" && rc=1
	[ "$n" -gt 0 ] || rc=1
	if [ "$rc" = 0 ]; then
		echo "ok 5 $DEV removed under the fuzzers $n times, each delete done in ${worst} s at most, back at the end"
	else
		echo "not ok 5 $DEV removed under the fuzzers: $n deletes done"
		nfail=$((nfail + 1))
	fi
elif [ "$REMOVE" = 1 ]; then
	echo "ok 5 device removal under the fuzzers # SKIP $remove_skip"
	nskip=$((nskip + 1))
fi

# Coverage: on a kernel with KCOV, the root instance must have seen
# kdat.ko's PCs (its corpus grows from them); the line figure that
# follows is not a verdict.
if [ -z "${KDAT_FUZZ_PCS:-}" ]; then
	echo "ok 4 kcov: the root fuzzer saw kdat.ko's PCs # SKIP no /sys/kernel/debug/kcov (a kernel without CONFIG_KCOV), or not root"
	nskip=$((nskip + 1))
elif [ -s "$pcs" ]; then
	echo "ok 4 kcov: the root fuzzer saw $(wc -l < "$pcs") of kdat.ko's PCs"
else
	grep '^# kcov' "$WORK/root.out"
	echo "not ok 4 kcov: the root fuzzer saw none of kdat.ko's PCs"
	nfail=$((nfail + 1))
fi
if [ -s "$pcs" ] && [ -r "$KO" ]; then
	text=$(cat /sys/module/kdat/sections/.text)
	"$TOP/tests/fuzz/lines.sh" "$KO" "$text" "$pcs" 2>&1 |
		sed -e 's/^/# kcov /'
fi

if [ ! -r "$OBJS" ]; then
	echo "ok 3 kdat objects back to zero # SKIP $OBJS not readable"
	nskip=$((nskip + 1))
else
	# Files close and connections tear down asynchronously: 30 s.
	left=
	for _ in $(seq 300); do
		left=$(objects_left)
		[ -z "$left" ] && break
		sleep 0.1
	done
	if [ -z "$left" ]; then
		echo "ok 3 kdat objects back to zero"
	else
		diag "live kdat objects 30 s after the fuzzers ended: $left"
		sed -e 's/^/#   /' "$OBJS"
		echo "not ok 3 kdat objects back to zero"
		nfail=$((nfail + 1))
	fi
fi

diag "Totals: pass:$((ncase - nfail - nskip)) fail:$nfail skip:$nskip"
[ "$nfail" = 0 ] || exit 1
[ "$nskip" = "$ncase" ] && exit 4
exit 0
