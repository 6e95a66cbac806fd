#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The sample kernel consumer (tests/kernel/kdat_consumer.ko) as TAP: it is
# loaded next to kdat.ko, runs its cases in module_init against kdat's
# exported API over the RDMA device, and reports KTAP on the kernel log,
# which this script turns into TAP; then it is unloaded.
#
#   tests/kernel_consumer.sh [MODULE PARAMETERS...]
#
# Needs root, kdat.ko loaded, the consumer built for the running kernel
# ($KDAT_TEST_CONSUMER_KO, default tests/kernel/kdat_consumer.ko) and an
# RDMA device with an IPv4 address ($KDAT_TEST_DEV, $KDAT_TEST_IP); exits 4
# (skip) with the reason otherwise.
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KO=${KDAT_TEST_CONSUMER_KO:-$TOP/tests/kernel/kdat_consumer.ko}
DEV=${KDAT_TEST_DEV:-}
IP=${KDAT_TEST_IP:-}

# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/tap.sh"	# skip_all

[ "$(id -u)" = 0 ] || skip_all "needs root (insmod/rmmod)"
[ -f "$KO" ] || skip_all "$KO not built"
[ -n "$DEV" ] && [ -n "$IP" ] || skip_all "no RDMA device with an address (KDAT_TEST_DEV, KDAT_TEST_IP)"
grep -q '^kdat ' /proc/modules || skip_all "kdat.ko is not loaded"
[ "$(modinfo -F vermagic "$KO" | cut -d' ' -f1)" = "$(uname -r)" ] ||
	skip_all "$KO is not built for $(uname -r)"

mark="kdat-consumer-run-$$-$RANDOM"
echo "$mark" > /dev/kmsg
if ! insmod "$KO" dev="$DEV" addr="$IP" "$@"; then
	echo "not ok 1 insmod $KO"
	exit 1
fi
rmmod kdat_consumer || echo "# rmmod kdat_consumer failed"
log=$(dmesg | sed -n "/$mark/,\$p" | sed -E 's/^\[[ 0-9.]+\] ?//' |
	sed -n 's/^kdat_consumer: //p')
echo "$log"
done_line=$(grep -E '^done pass=' <<< "$log")
if [ -z "$done_line" ]; then
	echo "not ok - the consumer did not finish its run"
	exit 1
fi
grep -qE '^not ok ' <<< "$log" && exit 1
grep -qE '^ok ' <<< "$log" || exit 1
exit 0
