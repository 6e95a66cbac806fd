#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two hosts, one wire (scripts/vm-run --hosts 2; the same script in both
# guests): Debian's dtest and dapltest between h1 (server) and h0
# (client), over kdat, over OFA's cma provider for comparison, and with
# the server on one provider and the client on the other. Each guest
# reports its own side: the client's and the server's verdicts are both
# cases.
#
# dtest runs with KDAT_DEBUG=1: a DTO that fails says its status.
#
# tests/twohost/across.sh [full|check]: full (the default; make
# twohost-long) runs every tool in the four pairings, 336 s; check (make
# check) runs them all kdat to kdat, and with the server on one provider
# and the client on the other dtest's 4 KiB mode and dapltest -T T, the
# mix of every operation both ways (OFA to OFA, the reference, is full's).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/twohost/lib.sh
. "$here/lib.sh"
twohost_init dtest
command -v dapltest > /dev/null || skip_all "no dapltest (dapl2-utils)"
level=${1:-full}
case $level in full|check) ;; *) echo "usage: $0 [full|check]" >&2; exit 2 ;; esac
limit=$((180 * ${KDAT_T_SLOW:-1}))
server=$((KDAT_HOST == 1))
# Both guests write the same dat.conf: the IA names are the same on both.
pairs=("$KDAT $KDAT" "$OFA $OFA" "$KDAT $OFA" "$OFA $KDAT")
[ "$level" = check ] && pairs=("$KDAT $KDAT" "$KDAT $OFA" "$OFA $KDAT")
DTEST_MODES=("-b 4096 -B 10" "-b 1048576 -B 4")
T_TEST="-i 20 -t 2 -w 2 client SR 1024 4 server SR 1024 4 client RW 8192 4 server RW 4096 2 client RR 4096 4 server RR 8192 2"
P_TESTS=("-i 500 -p 16 RW 64 1" "-i 200 -p 16 RR 4096 2")
# modes PAIR / ptests PAIR: the dtest modes and dapltest -T P tests a
# pairing runs at this level.
modes() {
	if [ "$level" = full ] || [ "$1" = "$KDAT $KDAT" ]; then
		echo "${#DTEST_MODES[@]}"
	else
		echo 1
	fi
}
ptests() {
	if [ "$level" = full ] || [ "$1" = "$KDAT $KDAT" ]; then
		echo "${#P_TESTS[@]}"
	else
		echo 0
	fi
}
# Cases per pair: each dtest mode on both sides; the dapltest server's
# verdict on h1; on h0, -T T, each -T P and -T Q.
plan=1
for pair in "${pairs[@]}"; do
	plan=$((plan + $(modes "$pair") + 1))
	[ $server = 1 ] || plan=$((plan + 1 + $(ptests "$pair")))
done
echo "TAP version 13"
echo "1..$plan"

# 1: the wire carries IP both ways.
r=0
busybox ping -c 3 -W 5 "$KDAT_PEER_IP" > "$work/ping" 2>&1 || r=1
[ $r = 0 ] || sed 's/^/# /' "$work/ping"
result $r "h$KDAT_HOST reaches h$PEER ($KDAT_PEER_IP) over the wire"
barrier ping 300 || true

# role_of SERVER_IA CLIENT_IA: the IA this guest uses.
ia() { if [ $server = 1 ]; then echo "${1% *}"; else echo "${1#* }"; fi; }
what() { echo "server ${1% *} on h1, client ${1#* } on h0"; }

# dtest_case PAIR MODE TAG
dtest_case() {
	local pair=$1 mode=$2 tag=$3 out=$work/dtest-$3 r=0 spid
	if [ $server = 1 ]; then
		# shellcheck disable=SC2086 # the mode is a list of options
		KDAT_DEBUG=1 timeout "$limit" dtest -s -P "$(ia "$pair")" $mode \
			> "$out" 2>&1 &
		spid=$!
		wait_tcp_listen "$spid" 60
		barrier "dtest-$tag-up" || r=1
		wait "$spid" || { echo "# dtest server exited $?"; r=1; }
	else
		barrier "dtest-$tag-up" || r=1
		# shellcheck disable=SC2086
		KDAT_DEBUG=1 timeout "$limit" dtest -P "$(ia "$pair")" $mode \
			-h "$KDAT_PEER_IP" > "$out" 2>&1 || r=1
	fi
	grep -q 'DAPL Test Complete. PASSED' "$out" || r=1
	# The errors last: the lines just above a failed case are what a
	# CI report's summary shows (scripts/tap-failures).
	if [ $r != 0 ]; then
		tail -15 "$out" | sed 's/^/# /'
		# rxe's counters: retries, RNR and sequence errors seen.
		rdma statistic show 2> /dev/null | sed 's/^/# /'
		grep -hi 'error\|fail\|^libdat:' "$out" | head -5 |
			sed 's/^/# said: /'
	fi
	barrier "dtest-$tag-done" "$limit" || true
	result $r "dtest $mode, $(what "$pair"): the $([ $server = 1 ] &&
		echo server || echo client) passes"
}

# dapltest_case PAIR TAG: a server, -T T and each -T P, -T Q.
dapltest_case() {
	local pair=$1 tag=$2 r spid before t
	if [ $server = 1 ]; then
		before=$(rdma_listeners)
		timeout $((4 * limit)) dapltest -T S -D "$(ia "$pair")" \
			> "$work/dt-srv" 2>&1 &
		spid=$!
		wait_rdma_listen "$before" 60
		barrier "dapltest-$tag-up" || true
		barrier "dapltest-$tag-done" $((4 * limit)) || true
		r=0
		wait "$spid" || { echo "# dapltest server exited $?"; r=1; }
		grep -qi 'error\|fail' "$work/dt-srv" && r=1
		if [ $r != 0 ]; then
			tail -10 "$work/dt-srv" | sed 's/^/# server: /'
			grep -hi 'error\|fail' "$work/dt-srv" | head -5 |
				sed 's/^/# server said: /'
		fi
		result $r "dapltest server, $(what "$pair"): ends at -T Q, no failure reported"
		return
	fi
	barrier "dapltest-$tag-up" || true
	local tests=("T $T_TEST")
	[ "$(ptests "$pair")" = 0 ] || tests+=("${P_TESTS[@]/#/P }")
	for t in "${tests[@]}"; do
		r=0
		# shellcheck disable=SC2086 # a list of words
		dapltest_client "$work/dt-cli" "$limit" -T ${t%% *} \
			-s "$KDAT_PEER_IP" -D "$(ia "$pair")" ${t#* } || r=1
		result $r "dapltest -T ${t%% *} ${t#* }, $(what "$pair")"
	done
	r=0
	timeout 60 dapltest -T Q -s "$KDAT_PEER_IP" -D "$(ia "$pair")" \
		> /dev/null 2>&1 || r=1
	barrier "dapltest-$tag-done" || true
	result $r "dapltest -T Q, $(what "$pair")"
}

k=0
for pair in "${pairs[@]}"; do
	k=$((k + 1))
	j=0
	for mode in "${DTEST_MODES[@]:0:$(modes "$pair")}"; do
		j=$((j + 1))
		dtest_case "$pair" "$mode" "$k.$j"
	done
	dapltest_case "$pair" "$k"
done
barrier end 600 || true
totals
