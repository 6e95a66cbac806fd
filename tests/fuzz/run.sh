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
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SRC=$TOP/tests/fuzz/kdat_fuzz.c
FUZZ=${KDAT_FUZZ_BIN:-$TOP/tests/fuzz/kdat_fuzz}
SECS=${1:-${FUZZ_S:-${KDAT_T_FUZZ_S:-60}}}
SEED=${FUZZ_SEED:-${KDAT_T_FUZZ_SEED:-}}
PROCS=${FUZZ_PROCS:-4}
THREADS=${FUZZ_THREADS:-4}
read -r -a EXTRA <<< "${FUZZ_ARGS:-${KDAT_T_FUZZ_ARGS:-}}"
OBJS=/sys/kernel/debug/kdat/objects
NOBODY=65534

skip_all() {
	echo "1..0 # SKIP $*"
	exit 4
}

diag() { printf '# %s\n' "$@"; }

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

echo "TAP version 13"
echo "1..4"

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

# objects_nonzero: the counters of $OBJS other than "devices" that are not 0.
objects_nonzero() {
	awk '$1 != "devices" && $2 != 0 { printf "%s %s ", $1, $2 }' "$OBJS"
}

if [ ! -r "$OBJS" ]; then
	echo "ok 3 kdat objects back to zero # SKIP $OBJS not readable"
	nskip=$((nskip + 1))
else
	# Files close and connections tear down asynchronously: 30 s.
	left=
	for _ in $(seq 300); do
		left=$(objects_nonzero)
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

diag "Totals: pass:$((4 - nfail - nskip)) fail:$nfail skip:$nskip"
[ "$nfail" = 0 ] || exit 1
[ "$nskip" = 4 ] && exit 4
exit 0
