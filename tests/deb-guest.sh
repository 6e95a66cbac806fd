#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The installed packages at work, in a testbed guest (tests/deb.sh runs
# it with KDAT_VM_NO_LOAD=1 and the packages installed on the host, whose
# root the guest sees): modprobe loads the kdat.ko DKMS built, the tools
# of /usr/bin run on the installed libdat, Debian's dtest runs over kdat
# through a dat.conf written by the installed kdat-datconf, kdat-stat
# reads the module's netlink family, and the module unloads.
set -uo pipefail
# shellcheck source=tests/dat/providers.sh
. "$(dirname "${BASH_SOURCE[0]}")/dat/providers.sh"	# dtest_pair; tap.sh
[ "$(id -u)" = 0 ] || skip_all "needs root"
[ -n "${KDAT_TEST_DEV:-}" ] && [ -n "${KDAT_TEST_IP:-}" ] ||
	skip_all "not in the testbed (KDAT_TEST_DEV, KDAT_TEST_IP)"
[ -x /usr/bin/kdat-info ] || skip_all "the packages are not installed"
command -v dtest > /dev/null || skip_all "no dtest (dapl2-utils)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
port=${KDAT_TEST_PORT:-1}
n=0 fail=0
echo "TAP version 13"
echo "1..6"

r=0
grep -q '^kdat ' /proc/modules && { echo "# kdat is loaded already"; r=1; }
modprobe kdat || r=1
f=$(modinfo -n kdat)
echo "# modprobe kdat: $f"
case $f in
"/lib/modules/$(uname -r)/updates/dkms/kdat.ko"*) ;;
*) r=1 ;;
esac
[ "$(cat /sys/module/kdat/srcversion 2> /dev/null)" = "$(modinfo -F srcversion kdat)" ] || r=1
[ -c /dev/kdat ] || r=1
result $r "modprobe kdat loads the module DKMS built for $(uname -r); /dev/kdat is there"

/usr/bin/kdat-info > "$work/info" 2>&1
r=$?
sed 's/^/# /' "$work/info"
grep -q "$KDAT_TEST_DEV" "$work/info" || r=1
result $r "/usr/bin/kdat-info lists $KDAT_TEST_DEV"

# Written as the package's udev rule writes /etc/kdat/dat.conf (-o),
# here where an RDMA port is present.
r=0
/usr/bin/kdat-datconf -o "$work/dat.conf" || r=1
grep -q "^kdat-$KDAT_TEST_DEV-$port u2.0 .* /usr/lib/.*/libdat.so.2 " "$work/dat.conf" || r=1
[ "$(stat -c %a "$work/dat.conf")" = 644 ] || { echo "# dat.conf mode $(stat -c %a "$work/dat.conf")"; r=1; }
ls "$work"/dat.conf.* > /dev/null 2>&1 && { echo "# kdat-datconf -o left a temporary file"; r=1; }
export DAT_OVERRIDE=$work/dat.conf
p=kdat-$KDAT_TEST_DEV-$port
dtest_pair "$work/dtest" timeout 120 dtest -s -P "$p" -b 65536 -B 10 -- \
	timeout 120 dtest -P "$p" -b 65536 -B 10 -h "$KDAT_TEST_IP" || r=1
grep -q 'DAPL Test Complete. PASSED' "$work/dtest.cli" || r=1
grep -q 'DAPL Test Complete. PASSED' "$work/dtest.srv" || r=1
tail -n 3 "$work/dtest.cli" | sed 's/^/# dtest: /'
[ $r = 0 ] || { sed 's/^/# client: /' "$work/dtest.cli"; sed 's/^/# server: /' "$work/dtest.srv"; }
result $r "Debian's dtest -b 65536 -B 10 over kdat, through the dat.conf the installed kdat-datconf -o wrote, and libdat"

/usr/bin/kdat-bench --loopback -d "$KDAT_TEST_DEV" -i "$port" --lat -s 64 -n 500 \
	"$KDAT_TEST_IP" > "$work/bench" 2>&1
r=$?
sed 's/^/# /' "$work/bench"
linked=$(ldd /usr/bin/kdat-bench)
grep -q 'libdat\.so\.2 => /\(usr/\)\?lib/' <<< "$linked" ||
	{ sed 's/^/# ldd: /' <<< "$linked"; r=1; }
result $r "/usr/bin/kdat-bench on the installed libdat"

r=0
/usr/bin/kdat-stat > "$work/stat" 2>&1 || r=1
sed 's/^/# /' "$work/stat"
result $r "/usr/bin/kdat-stat reads the module's netlink family"

rmmod kdat
result $? "rmmod kdat"
totals
