#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kdat-bench across two hosts (scripts/vm-run --hosts 2; the same script
# in both guests): its server on h1 (kdat-bench -d IA -p QUAL), its
# client on h0, 64 B sends at depths 1 and 64, 64 KiB sends at depth 8,
# a 64 B ping-pong; perftest's ib_send_bw and ib_send_lat between the
# same two rxe devices in the same run, for comparison. A case passes when
# both sides did all they were asked (the client's operations, the
# server's result line) and, at the end, nothing is left on either
# guest. The rates are printed, and the ratios to perftest; no verdict
# rests on them (one run on emulated CPUs: scripts/bench is the
# measurement).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/twohost/lib.sh
. "$here/lib.sh"
twohost_init dtest
[ -r "$OBJS" ] || skip_all "no $OBJS (debugfs)"
B=$KDAT_REPO/user/kdat-bench
[ -x "$B" ] || skip_all "user/kdat-bench not built (make)"
command -v ib_send_bw > /dev/null || skip_all "no ib_send_bw (perftest)"
server=$((KDAT_HOST == 1))
limit=$((300 * ${KDAT_T_SLOW:-1}))
# perftest runs a few seconds; a run that hangs (rxe) must not take the
# suite's time with it.
plimit=$((120 * ${KDAT_T_SLOW:-1}))
qual=25000
dev=$KDAT_TEST_DEV port=${KDAT_TEST_PORT:-1}

# name|kdat-bench client options|perftest: bw DEPTH, lat, or none
cases=(
	"64 B sends, depth 64|-s 64 -t 64 -n 10000|bw 64"
	"64 B sends, depth 1|-s 64 -t 1 -n 2000|bw 1"
	"64 KiB sends, depth 8|-s 65536 -t 8 -n 200|none"
	"64 B ping-pong|--lat -s 64 -n 1000|lat"
)
echo "TAP version 13"
echo "1..$((${#cases[@]} + 1))"

# perftest NAME TAG ARGS...: its server on h1, its client on h0; prints
# the client's output on h0. The server is listening on its own port
# (ss) before the client is let go: a client that found no one there
# would exit, and leave the server waiting for it. A server its client
# did not come to is killed after the client's end, and said.
perftest() {
	local tool=$1 tag=$2 port_tcp=$((18515 + $2)) ppid
	shift 2
	if [ $server = 1 ]; then
		timeout "$plimit" "$tool" -d "$dev" -i "$port" -F -p "$port_tcp" "$@" \
			> "$work/ps" 2>&1 &
		ppid=$!
		for _ in $(seq 600); do
			[ -n "$(ss -Htln "sport = :$port_tcp")" ] && break
			kill -0 "$ppid" 2> /dev/null || break
			sleep 0.1
		done
		barrier "$tag-perf-up" || true
		barrier "$tag-perf-done" "$plimit" || true
		for _ in $(seq 300); do
			kill -0 "$ppid" 2> /dev/null || break
			sleep 0.1
		done
		if kill -0 "$ppid" 2> /dev/null; then
			echo "# $tool server: still running 30 s after its client ended; killed"
			sed 's/^/#   /' "$work/ps"
			kill "$ppid"
		fi
		wait "$ppid"
	else
		barrier "$tag-perf-up" || true
		timeout "$plimit" "$tool" -d "$dev" -i "$port" -F -p "$port_tcp" "$@" \
			"$KDAT_PEER_IP" > "$work/pc" 2>&1
		cat "$work/pc"
		barrier "$tag-perf-done" "$plimit" || true
	fi
}

# iters FILE: the #iterations of kdat-bench's result line in FILE, the
# line that begins with a number (kdat-bench(1)).
iters() { awk '$1 ~ /^[0-9]+$/ { print $2; exit }' "$1"; }

# figure FILE: the client's result: msgs/s (MsgRate[Mpps], the 4th
# column) for sends, t_avg (the 6th, us) for a ping-pong.
figure() {
	awk '/^ *#bytes/ { lat = /t_avg/ }
		$1 ~ /^[0-9]+$/ { if (lat) print $6; else printf "%.0f\n", $4 * 1e6
			exit }' "$1" 2> /dev/null
}

i=0
for c in "${cases[@]}"; do
	IFS='|' read -r name args perf <<< "$c"
	i=$((i + 1))
	qual=$((qual + 1))
	r=0
	# The measured operations: -n's (the warm-up is not counted).
	ops=$(awk '{ for (k = 1; k < NF; k++) if ($k == "-n") print $(k + 1) }' <<< "$args")
	if [ $server = 1 ]; then
		timeout "$limit" "$B" -d "$KDAT" -p "$qual" > "$work/srv" 2>&1 &
		spid=$!
		wait_line "$work/srv" listening 60 || r=1
		barrier "$i-up" || r=1
		wait "$spid" || r=1
		sed 's/^/# /' "$work/srv"
		[ "$(iters "$work/srv")" = "$ops" ] || r=1
		barrier "$i-done" "$limit" || r=1
	else
		barrier "$i-up" || r=1
		# shellcheck disable=SC2086 # the options are a list
		timeout "$limit" "$B" -d "$KDAT" -p "$qual" $args \
			"$KDAT_PEER_IP" > "$work/cli" 2>&1 || r=1
		sed 's/^/# /' "$work/cli"
		[ "$(iters "$work/cli")" = "$ops" ] || r=1
		barrier "$i-done" "$limit" || r=1
	fi
	kdat=$(figure "$work/cli")
	# perftest does as many operations as kdat-bench's measured loop.
	case $perf in
	bw*)
		out=$(perftest ib_send_bw "$i" -s 64 -n "$ops" -t "${perf#bw }")
		# bytes iterations BW-peak BW-avg MsgRate[Mpps]
		p=$(awk '$1 == 64 && NF >= 5 { printf "%.0f\n", $5 * 1e6 }' <<< "$out" | tail -1)
		[ $server = 1 ] || echo "# perftest ib_send_bw 64 B depth ${perf#bw }: ${p:-?} msgs/s; kdat-bench: ${kdat:-?} msgs/s$(
			[ -n "$p" ] && [ -n "$kdat" ] && awk -v k="$kdat" -v p="$p" 'BEGIN { printf ", ratio %.2f", k / p }')"
		;;
	lat)
		out=$(perftest ib_send_lat "$i" -s 64 -n "$ops")
		# bytes iterations t_min t_max t_typical t_avg ...
		p=$(awk '$1 == 64 && NF >= 6 { print $6 }' <<< "$out" | tail -1)
		[ $server = 1 ] || echo "# perftest ib_send_lat 64 B: ${p:-?} us; kdat-bench: ${kdat:-?} us$(
			[ -n "$p" ] && [ -n "$kdat" ] && awk -v k="$kdat" -v p="$p" 'BEGIN { if (p > 0) printf ", ratio %.2f", k / p }')"
		;;
	esac
	result $r "kdat-bench $args across hosts ($name): the $([ $server = 1 ] &&
		echo "server served" || echo "client did") every operation"
done

twohost_end "$limit"
