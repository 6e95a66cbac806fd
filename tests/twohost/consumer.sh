#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The sample kernel consumer across two hosts (scripts/vm-run --hosts 2;
# the same script in both guests): kdat_consumer.ko mode=bw role=server
# on h1 (B: it listens, keeps its receives posted, counts what arrives),
# role=client on h1's peer h0 (A: it connects over the wire and sends),
# for each size; kdat's exported API on both ends, no user space in the
# data path. Each guest's KTAP from the kernel log is its cases; then
# nothing may be left and the consumer unloads.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/twohost/lib.sh
. "$here/lib.sh"
twohost_init dtest
KO=${KDAT_TEST_CONSUMER_KO:-$KDAT_REPO/tests/kernel/kdat_consumer.ko}
[ -f "$KO" ] || skip_all "$KO not built"
[ "$(modinfo -F vermagic "$KO" | cut -d' ' -f1)" = "$(uname -r)" ] ||
	skip_all "$KO is not built for $(uname -r)"
[ -r "$OBJS" ] || skip_all "no $OBJS (debugfs)"
server=$((KDAT_HOST == 1))
limit=$((300 * ${KDAT_T_SLOW:-1}))
qual=7480
# size|count|depth
runs=("64|5000|64" "4096|2000|16" "65536|200|8")
echo "TAP version 13"
echo "1..$((${#runs[@]} + 1))"

# consumer_log MARK: the consumer's kernel log lines since MARK.
consumer_log() {
	dmesg | sed -n "/$1/,\$p" | sed -E 's/^\[[ 0-9.]+\] ?//' |
		sed -n 's/^kdat_consumer: //p'
}

i=0
for run in "${runs[@]}"; do
	IFS='|' read -r size count depth <<< "$run"
	i=$((i + 1))
	qual=$((qual + 1))
	r=0
	mark="kdat-consumer-twohost-$$-$i"
	echo "$mark" > /dev/kmsg
	args=(mode=bw dev="$KDAT_TEST_DEV" conn_qual="$qual" size="$size"
	      count="$count" depth="$depth")
	if [ $server = 1 ]; then
		timeout "$limit" insmod "$KO" "${args[@]}" role=server \
			addr="$KDAT_TEST_IP" &
		ipid=$!
		for _ in $(seq 600); do
			grep -q 'server: listening' <<< "$(consumer_log "$mark")" && break
			sleep 0.1
		done
		barrier "$i-up" || r=1
		wait "$ipid" || r=1
	else
		barrier "$i-up" || r=1
		timeout "$limit" insmod "$KO" "${args[@]}" role=client \
			addr="$KDAT_PEER_IP" || r=1
	fi
	rmmod kdat_consumer 2> /dev/null || { echo "# rmmod kdat_consumer failed"; r=1; }
	log=$(consumer_log "$mark")
	sed 's/^/# /' <<< "$log"
	grep -qE '^done pass=[0-9]+ fail=0 ' <<< "$log" || r=1
	grep -qE '^not ok ' <<< "$log" && r=1
	[ $server = 1 ] || grep -q "^bw role=client size=$size .* count=$count " <<< "$log" || r=1
	barrier "$i-done" "$limit" || r=1
	result $r "kernel consumer across hosts, $size B x $count, depth $depth: the $([ $server = 1 ] &&
		echo "server received" || echo "client sent") every message"
done

twohost_end "$limit"
