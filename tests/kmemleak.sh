#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kmemleak around the suites (TAP):
#   tests/kmemleak.sh clear   before them: forget what boot left behind
#                             (reports that are not kdat's doing)
#   tests/kmemleak.sh scan    after them: scan twice (an object must look
#                             unreferenced in two scans to be reported);
#                             any report fails, and is printed
#
# Needs root and a kernel with CONFIG_DEBUG_KMEMLEAK (the debug kernel);
# exits 4 (skip) with the reason otherwise.
set -uo pipefail

K=/sys/kernel/debug/kmemleak
# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/tap.sh"	# skip_all

[ "$(id -u)" = 0 ] || skip_all "needs root"
[ -e $K ] || skip_all "this kernel has no kmemleak (Debian's stock kernel); make check-debug runs it on the debug kernel"

echo "1..1"
case ${1:-scan} in
clear)
	before=$(grep -c '^unreferenced object' $K)
	if echo clear > $K; then
		echo "ok 1 kmemleak cleared before the suites ($before boot-time reports)"
	else
		echo "not ok 1 kmemleak clear"
		exit 1
	fi
	;;
scan)
	echo scan > $K && sleep 1 && echo scan > $K
	reports=$(cat $K)
	if [ -z "$reports" ]; then
		echo "ok 1 kmemleak: nothing leaked"
	else
		echo "not ok 1 kmemleak: $(grep -c '^unreferenced object' <<< "$reports") leaks"
		sed 's/^/# /' <<< "$reports" | head -80
		exit 1
	fi
	;;
*)
	echo "not ok 1 usage: kmemleak.sh clear|scan"
	exit 1
	;;
esac
