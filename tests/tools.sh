#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Every kdat tool has the habits of rdma-core's and iproute2's (TAP), as
# built in the tree: --help prints a usage on stdout and exits 0;
# --version prints "NAME (kdat) VERSION", VERSION being debian/changelog's;
# an unknown option exits 2 with a message on stderr and nothing on
# stdout; so does a bad argument of each tool's own. Runs on the host
# (make check's first part): none of this needs /dev/kdat. Where there
# is none (the host: kdat.ko is never loaded there), kdat-info, kdat-stat
# and libdat (KDAT_DEBUG=1) must say that kdat.ko is not loaded; the
# other causes are tests/tool_errors.sh's, in the testbed.
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=$(awk 'NR == 1 { gsub(/[()]/, "", $2); print $2 }' "$top/debian/changelog")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# NAME PATH BAD-ARGUMENTS...: a usage error of the tool's own.
tools=(
	"kdat-info $top/user/kdat-info -i 0"
	"kdat-stat $top/user/kdat-stat nosuchfilter"
	"kdat-bench $top/user/kdat-bench -t 0"
	"kdat-demo $top/user/kdat-demo rxe0:1 not-an-address"
	"kdat-datconf $top/scripts/kdat-datconf -o"
	"libdat2-divert $top/scripts/libdat2-divert frobnicate"
)
echo "TAP version 13"
echo "1..$((${#tools[@]} * 4 + 3))"
i=0 fail=0
result() {
	i=$((i + 1))
	if [ "$1" = 0 ]; then
		echo "ok $i $2"
	else
		echo "not ok $i $2"
		sed 's/^/# /' "$work/out" "$work/err" | head -8
		fail=1
	fi
}
for t in "${tools[@]}"; do
	read -r name path bad <<< "$t"
	# shellcheck disable=SC2206 # the bad arguments are words
	bad=($bad)
	r=0
	"$path" --help > "$work/out" 2> "$work/err" || r=1
	grep -q "^usage: $name" "$work/out" || r=1
	[ -s "$work/err" ] && r=1
	result $r "$name --help: usage on stdout, exit 0"
	r=0
	"$path" --version > "$work/out" 2> "$work/err" || r=1
	[ "$(cat "$work/out")" = "$name (kdat) $version" ] || r=1
	result $r "$name --version: '$name (kdat) $version'"
	"$path" --no-such-option > "$work/out" 2> "$work/err"
	r=$?
	[ "$r" = 2 ] && [ ! -s "$work/out" ] && grep -q . "$work/err" && r=0 || r=1
	result $r "$name --no-such-option: a message on stderr, exit 2"
	"$path" "${bad[@]}" > "$work/out" 2> "$work/err"
	r=$?
	[ "$r" = 2 ] && [ ! -s "$work/out" ] && grep -q "^$name: " "$work/err" && r=0 || r=1
	result $r "$name ${bad[*]}: '$name: ...' on stderr, exit 2"
done
# notloaded NAME COMMAND...: exit 1, "kdat.ko is not loaded" on stderr.
notloaded() {
	local name=$1 r=0 st

	shift
	if [ -e /dev/kdat ]; then
		i=$((i + 1))
		echo "ok $i $name # SKIP /dev/kdat exists here"
		return
	fi
	"$@" > "$work/out" 2> "$work/err"
	st=$?
	[ "$st" = 1 ] && grep -q "kdat.ko is not loaded" "$work/err" || r=1
	result $r "$name: $(head -1 "$work/err")"
}
notloaded "kdat-info without /dev/kdat" "$top/user/kdat-info"
notloaded "kdat-stat without kdat's netlink family" "$top/user/kdat-stat"
notloaded "dat_ia_open without /dev/kdat, KDAT_DEBUG=1" \
	env KDAT_DEBUG=1 "$top/tests/dat/readme_hello" rxe0:1
exit $fail
