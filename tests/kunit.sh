#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kdat's KUnit suites (kernel/kdat_kunit.c), as TAP: kdat.ko is (re)loaded,
# KUnit runs its suites at load time and prints KTAP to the kernel log;
# every leaf case is one TAP case here (each parameter of a parameterised
# test counts), named suite/test/parameter.
#
# Needs root and a kernel with CONFIG_KUNIT (the debug kernel,
# scripts/debug-kernel); exits 4 (skip) with the reason otherwise.
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KO=${KDAT_KO:-$TOP/kdat.ko}

# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/tap.sh"	# skip_all

[ "$(id -u)" = 0 ] || skip_all "needs root (insmod/rmmod)"
[ -f "$KO" ] || skip_all "$KO not built"
[ -d /sys/kernel/debug/kunit ] || grep -q ' kunit_run_tests$' /proc/kallsyms ||
	skip_all "this kernel has no CONFIG_KUNIT (Debian's stock kernel); make check-debug runs these on the debug kernel"
# Its suites live in this section (no pipe: grep -q would cut it short).
grep -qa '\.kunit_test_suites' "$KO" ||
	skip_all "$KO was built without CONFIG_KUNIT"

if grep -q '^kdat ' /proc/modules; then
	rmmod kdat || { echo "not ok 1 unload kdat.ko to rerun its KUnit suites"; exit 1; }
fi
mark="kdat-kunit-run-$$-$RANDOM"
echo "$mark" > /dev/kmsg
modprobe ib_core 2>/dev/null
insmod "$KO" || { echo "not ok 1 insmod $KO"; exit 1; }

# The kernel log since the mark, without its time stamps.
log=$(dmesg | sed -n "/$mark/,\$p" | sed -E 's/^\[[ 0-9.]+\] ?//')

# Leaves are result lines that close no "# Subtest:" opened one level in.
echo "$log" | awk '
function indent(s) { match(s, /^ */); return RLENGTH }
/^ *# Subtest: / {
	i = indent($0); name = $0; sub(/^ *# Subtest: /, "", name)
	sub_at[i] = name; path[i] = name; next
}
/^ *(not )?ok [0-9]+ / {
	i = indent($0); line = $0; sub(/^ */, "", line)
	res = (line ~ /^not ok/) ? "not ok" : "ok"
	name = line; sub(/^(not )?ok [0-9]+ /, "", name)
	directive = ""
	if (match(name, / # .*/)) { directive = substr(name, RSTART); name = substr(name, 1, RSTART - 1) }
	if ((i + 4) in sub_at && sub_at[i + 4] == name) { delete sub_at[i + 4]; next }
	full = name
	for (j = i - 4; j >= 4; j -= 4) if (j in path) full = path[j] "/" full
	n++
	print res " " n " " full directive
	if (res == "not ok") bad++
	if (directive ~ /SKIP/) skip++
}
END {
	print "1.." n
	print "# kunit: " n " cases, " bad + 0 " failed, " skip + 0 " skipped"
	exit (n == 0 || bad > 0)
}'
rc=$?
if ! grep -q '# Subtest: kdat-' <<< "$log"; then
	echo "not ok - no kdat KUnit suite ran at load"
	rc=1
fi
exit $rc
