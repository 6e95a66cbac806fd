#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# libdat can stand in for OFA's libdat2 (make install-libdat2) only if it
# exports every symbol libdat2 does, with its version: an unmodified
# binary (dtest, dapltest) asks for them by name and version (DAT_2.0).
# Host test (TAP): skips without Debian's libdat2.
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ofa=$(ldconfig -p | awk '$1 == "libdat2.so.2" { print $NF; exit }')
echo "TAP version 13"
echo "1..1"
if [ -z "$ofa" ]; then
	echo "ok 1 libdat exports libdat2's symbols # SKIP no libdat2.so.2 (libdat2)"
	exit 4
fi

# NAME@VERSION of every defined dynamic symbol but the version nodes.
exports() {
	nm -D --defined-only "$1" | awk '$2 != "A" { sub(/@@/, "@", $3); print $3 }' |
		sort -u
}

missing=$(comm -23 <(exports "$ofa") <(exports "$TOP/user/libdat.so.2"))
if [ -z "$missing" ]; then
	echo "ok 1 libdat exports libdat2's symbols ($(exports "$ofa" | wc -l) from $ofa)"
else
	sed 's/^/# missing: /' <<< "$missing"
	echo "not ok 1 libdat exports libdat2's symbols"
	exit 1
fi
