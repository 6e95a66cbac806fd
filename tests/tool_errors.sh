#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Errors that name their cause (TAP), in the testbed: a user who may not
# open /dev/kdat is told to join group rdma, by kdat-info and by libdat
# (KDAT_DEBUG=1: the README's DAT program, whose dat_ia_open then answers
# DAT_PROVIDER_NOT_FOUND); a device that is not here, and a port the
# device lacks, are named as such. (kdat.ko not loaded: tests/tools.sh,
# on the host.)
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/tap.sh"	# skip_all
[ -c /dev/kdat ] || skip_all "no /dev/kdat"
[ -n "${KDAT_TEST_DEV:-}" ] || skip_all "no KDAT_TEST_DEV"
[ "$(id -u)" = 0 ] || skip_all "needs root (runs a command as nobody)"
command -v setpriv > /dev/null || skip_all "no setpriv (util-linux)"
info=$TOP/user/kdat-info
hello=$TOP/tests/dat/readme_hello
dev=$KDAT_TEST_DEV
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
work=$(mktemp -d)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT

i=0 fail=0
# expect NAME STATUS PATTERN COMMAND...: COMMAND exits STATUS and its
# stderr matches PATTERN (grep -E).
expect() {
	local name=$1 want=$2 pat=$3 st
	shift 3
	"$@" > "$work/out" 2> "$work/err"
	st=$?
	i=$((i + 1))
	if [ "$st" = "$want" ] && grep -qE "$pat" "$work/err"; then
		echo "ok $i $name: $(head -1 "$work/err")"
	else
		echo "not ok $i $name (exit $st, want $want)"
		sed 's/^/# /' "$work/err" | head -5
		fail=1
	fi
}

echo "TAP version 13"
if "${nobody[@]}" test -r /dev/kdat -a -w /dev/kdat; then
	echo "1..2"
	echo "# /dev/kdat is open to nobody here: the permission cases skip"
	i=0
else
	echo "1..4"
	expect "kdat-info as nobody: join group rdma" 1 \
		"no permission to open /dev/kdat: .*group rdma" \
		"${nobody[@]}" "$info"
	expect "dat_ia_open as nobody, KDAT_DEBUG=1: join group rdma" 1 \
		"libdat: dat_ia_open\(.*\): no permission .*group rdma" \
		env KDAT_DEBUG=1 "${nobody[@]}" "$hello" "$dev:1"
fi
expect "kdat-info -o on a device that is not here" 1 \
	"no RDMA device nosuchdev here" "$info" -o nosuchdev:1
expect "dat_ia_open of a port the device lacks, KDAT_DEBUG=1" 1 \
	"libdat: dat_ia_open\($dev:9\): $dev has no port 9 \(its ports?: " \
	env KDAT_DEBUG=1 "$hello" "$dev:9"
exit $fail
