#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/cache_dir.sh: the build caches that make check executes and boots
# from (checkpatch.pl, the testbed's initramfs, debug kernels, modules),
# often as root, are only ever taken from a directory nobody else can
# write to or could have made first (issue 44, finding 6: the scripts ran
# whatever /var/tmp/kdat-*/ held). scripts/cache-dir is the one way to
# them; it must refuse a cache root that is a symlink, is not 0700, is
# not the caller's, or sits below a directory another user can write to
# (unless sticky, as /tmp); and no root-run script may name a fixed path
# under /tmp or /var/tmp. Host-side, TAP; needs no device.
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CD=$TOP/scripts/cache-dir
# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/tap.sh"	# result, totals
n=0 fail=0 skip=0

# refused ROOT: cache-dir refuses ROOT (exit 1, no path printed).
refused() {
	local out
	out=$(KDAT_CACHE=$1 "$CD" t 2>/dev/null) && return 1
	[ -z "$out" ]
}

work=$(mktemp -d /tmp/kdat-cachedir.XXXXXX) || exit 1
trap 'rm -rf "$work"' EXIT
chmod 0700 "$work"
echo "TAP version 13"
echo "1..7"

out=$(KDAT_CACHE=$work/ok "$CD" t 2>&1)
r=$?
[ "$r" = 0 ] && [ "$out" = "$work/ok/t" ] &&
	[ "$(stat -c %a "$work/ok")" = 700 ] &&
	[ "$(stat -c %a "$work/ok/t")" = 700 ] || r=1
result $r "a new cache is made 0700, its root too, and its path printed"

mkdir -m 0700 "$work/real"
ln -s "$work/real" "$work/link"
refused "$work/link"
result $? "a cache root that is a symlink is refused"

mkdir -m 0755 "$work/wide"
refused "$work/wide"
result $? "a cache root that is not 0700 is refused"

if [ "$(id -u)" = 0 ]; then
	mkdir -m 0700 "$work/theirs"
	chown 65534:65534 "$work/theirs"
	refused "$work/theirs"
	result $? "a cache root another user owns (made first) is refused"
else
	result skip "a cache root another user owns is refused" \
		"needs root to make a directory of another user's"
fi

mkdir -m 0777 "$work/open"
chmod 0777 "$work/open"
refused "$work/open/kdat"
r=$?
[ -e "$work/open/kdat" ] && r=1	# nothing made there either
result $r "a cache below a directory others can write to is refused"

mkdir -m 1777 "$work/sticky"
chmod 1777 "$work/sticky"
out=$(KDAT_CACHE=$work/sticky/kdat "$CD" t 2>&1)
[ "$out" = "$work/sticky/kdat/t" ]
result $? "below a sticky directory (as /tmp) it is made"

# The scripts make check runs name no fixed path in /tmp or /var/tmp:
# each goes through cache-dir or mktemp.
r=0
for f in "$TOP"/scripts/* "$TOP"/Makefile; do
	[ -f "$f" ] || continue
	if grep -nE '/(var/)?tmp/[A-Za-z0-9_.-]' "$f" |
		grep -vE 'mktemp|^[0-9]+:[[:space:]]*#'; then
		echo "# $f names a fixed path in a world-writable directory"
		r=1
	fi
done
result $r "no script names a fixed path in /tmp or /var/tmp"

totals
