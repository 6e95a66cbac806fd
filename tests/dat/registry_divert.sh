#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make install-libdat2 / uninstall-libdat2 (scripts/libdat2-divert) on a
# scratch root filesystem (dpkg-divert --root), never the host's: libdat
# takes libdat2's file name, the package's file is kept aside, an
# unmodified DAT binary then runs on libdat; uninstall brings the
# package's file back and leaves the tree as it was. Host test (TAP);
# skips without dpkg-divert or Debian's libdat2.
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"	# skip_cases, result
NCASES=6
n=0
fail=0
echo "TAP version 13"
echo "1..$NCASES"

command -v dpkg-divert > /dev/null || skip_cases "$NCASES" "no dpkg-divert"
real=$(ldconfig -p | awk '$1 == "libdat2.so.2" { print $NF; exit }')
[ -n "$real" ] || skip_cases "$NCASES" "no libdat2.so.2 (libdapl2)"
real=$(readlink -f "$real")
ma=$(basename "$(dirname "$real")")
[ -f "$TOP/user/libdat2.so.2" ] || { echo "# user/libdat2.so.2: not built"; exit 1; }

root=$(mktemp -d /var/tmp/kdat-divert.XXXXXX)
trap 'rm -rf "$root"' EXIT
libdir=$root/usr/lib/$ma
mkdir -p "$libdir" "$root/var/lib/dpkg"
cp "$real" "$libdir/$(basename "$real")"
ln -s "$(basename "$real")" "$libdir/libdat2.so.2"
KDAT_DIVERT_ROOT=$root
LIBDAT2_FILE=/usr/lib/$ma/$(basename "$real")
export KDAT_DIVERT_ROOT LIBDAT2_FILE
tree() { (cd "$root/usr" && find . -printf '%p %y %l %s\n' | sort); }
before=$(tree)

# install: libdat under the package file's name, libdat2 aside.
"$TOP/scripts/libdat2-divert" install > "$root/out" 2>&1
r=$?
cmp -s "$TOP/user/libdat2.so.2" "$root$LIBDAT2_FILE" || r=1
cmp -s "$real" "$libdir/kdat-libdat2/$(basename "$real")" || r=1
grep -q "kdat-libdat2" <<< "$(dpkg-divert --root "$root" --list)" || r=1
sed 's/^/# /' "$root/out"
result $r "install: libdat in libdat2's place, libdat2 kept aside"

# Again: the copy replaced, still one diversion.
"$TOP/scripts/libdat2-divert" install > "$root/out" 2>&1
r=$?
cmp -s "$TOP/user/libdat2.so.2" "$root$LIBDAT2_FILE" || r=1
[ "$(dpkg-divert --root "$root" --list | grep -c kdat-libdat2)" = 1 ] || r=1
result $r "install again: the same"

# An unmodified libdat2 binary runs on it: libdat's registry speaks
# (KDAT_DEBUG) about the dat.conf it was pointed at.
r=1
bin=$(command -v dtest || command -v dapltest || true)
if [ -n "$bin" ]; then
	out=$(LD_LIBRARY_PATH=$libdir KDAT_DEBUG=1 \
		DAT_OVERRIDE=$root/no-such-dat.conf timeout 20 \
		"$bin" -P no-such-ia 2>&1)
	grep -q "libdat: $root/no-such-dat.conf: .*no static registry" \
		<<< "$out" && r=0
	[ $r = 0 ] || sed 's/^/# dtest: /' <<< "$out" | head -5
	result $r "an unmodified $(basename "$bin") runs on libdat"
else
	n=$((n + 1))
	echo "ok $n an unmodified DAT binary runs on libdat # SKIP no dtest (dapl2-utils)"
fi

grep -q "is libdat" <<< "$("$TOP/scripts/libdat2-divert" status)" &&
	result 0 "status: libdat" || result 1 "status: libdat"

# uninstall: the package's file back, nothing of ours left.
"$TOP/scripts/libdat2-divert" uninstall > "$root/out" 2>&1
r=$?
cmp -s "$real" "$root$LIBDAT2_FILE" || r=1
[ "$(tree)" = "$before" ] || { r=1; diff <(echo "$before") <(tree) | sed 's/^/# /'; }
[ -z "$(dpkg-divert --root "$root" --list)" ] || r=1
sed 's/^/# /' "$root/out"
result $r "uninstall: libdat2 back, the tree as before"

"$TOP/scripts/libdat2-divert" uninstall > "$root/out" 2>&1
r=$?
grep -q "nothing to do" "$root/out" || r=1
[ "$(tree)" = "$before" ] || r=1
result $r "uninstall again: nothing to do"

echo "# Totals: pass:$((n - fail)) fail:$fail"
[ "$fail" = 0 ]
