#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# libdat as the DAT registry, in the testbed (TAP):
# - Debian's dtest and dapltest, unmodified (built for OFA's libdat2), run
#   with libdat in libdat2's place (LD_LIBRARY_PATH: a directory whose
#   libdat2.so.2 is user/libdat.so.2), over kdat (a kdat-datconf line:
#   libdat sees itself and opens kdat directly) and over OFA's provider
#   (libdat's registry loads libdaplofa from the dat.conf line);
# - tests/dat/registry_two, a -ldat program with a kdat IA and an OFA IA
#   open in one process, moving data between them both ways (its cases
#   are this suite's last ones).
# The runs over OFA's provider alone run no kdat code but libdat's
# registry: KDAT_T_REFERENCE=0 (the debug kernel's pass) skips them.
#
# Needs root's testbed: KDAT_TEST_IP, KDAT_TEST_DEV, KDAT_TEST_NETDEV,
# dtest and dapltest, kdat.ko loaded.
set -uo pipefail

# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"	# skip_all, result, totals
# shellcheck source=tests/dat/providers.sh
. "$(dirname "${BASH_SOURCE[0]}")/providers.sh"
providers_setup dtest
command -v dapltest > /dev/null || skip_all "no dapltest (dapl2-utils)"
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# libdat in libdat2's place, for this suite's processes only.
mkdir "$work/lib"
ln -s "$top/user/libdat.so.2" "$work/lib/libdat2.so.2"
as_libdat2() { LD_LIBRARY_PATH=$work/lib "$@"; }

two_cases=5	# tests/dat/registry_two's
n=0
fail=0
skip=0
echo "TAP version 13"
echo "1..$((1 + 2 * 2 + two_cases))"

# The binaries resolve libdat2.so.2 to libdat.
r=0
for bin in dtest dapltest; do
	linked=$(as_libdat2 ldd "$(command -v "$bin")")
	grep -q "libdat2.so.2 => $work/lib/libdat2.so.2" <<< "$linked" || {
		r=1
		grep libdat2 <<< "$linked" | sed "s/^/# $bin: /"
	}
done
result $r "dtest and dapltest load libdat as libdat2"

limit=$((120 * ${KDAT_T_SLOW:-1}))

# dtest_run IA: server and client on libdat; 0 when both said PASSED.
dtest_run() {
	local ia=$1 rc=0
	dtest_pair "$work/dtest" as_libdat2 timeout "$limit" \
		dtest -s -P "$ia" -b 65536 -B 10 -- \
		as_libdat2 timeout "$limit" dtest -P "$ia" -b 65536 -B 10 \
		-h "$KDAT_TEST_IP" || rc=1
	grep -q 'DAPL Test Complete. PASSED' "$work/dtest.cli" || rc=1
	grep -q 'DAPL Test Complete. PASSED' "$work/dtest.srv" || rc=1
	if [ $rc != 0 ]; then
		tail -5 "$work/dtest.srv" | sed 's/^/# srv: /'
		tail -5 "$work/dtest.cli" | sed 's/^/# cli: /'
	fi
	return $rc
}

# dapltest_run IA: server, a transaction test mixing send/recv and RDMA
# over 2 threads x 2 EPs, quit; 0 when clean.
dapltest_run() {
	local ia=$1 spid before rc=0
	before=$(rdma_listeners)
	as_libdat2 timeout "$((300 * ${KDAT_T_SLOW:-1}))" \
		dapltest -T S -D "$ia" > "$work/srv" 2>&1 &
	spid=$!
	wait_rdma_listen "$before" 60
	as_libdat2 timeout "$((240 * ${KDAT_T_SLOW:-1}))" \
		dapltest -T T -s "$KDAT_TEST_IP" -D "$ia" -i 10 -t 2 -w 2 \
		client SR 1024 server SR 1024 client RW 4096 client RR 4096 \
		> "$work/cli" 2>&1 || rc=1
	as_libdat2 timeout 60 dapltest -T Q -s "$KDAT_TEST_IP" -D "$ia" \
		> /dev/null 2>&1 || rc=1
	wait "$spid" || rc=1
	grep -qi 'error\|fail' "$work/cli" "$work/srv" && rc=1
	[ $rc = 0 ] || grep -hi 'error\|fail' "$work/cli" "$work/srv" |
		head -5 | sed 's/^/# /'
	return $rc
}

for ia in "$KDAT" "$OFA"; do
	for tool in dtest dapltest; do
		what="unmodified $tool over $ia, on libdat's registry"
		if [ "$ia" = "$OFA" ] && ! reference_wanted; then
			result skip "$what" "$NO_REFERENCE"
			continue
		fi
		"${tool}_run" "$ia"
		result $? "$what"
	done
done

# The -ldat program, its cases renumbered as ours.
KDAT_IA=$KDAT OFA_IA=$OFA timeout "$((300 * ${KDAT_T_SLOW:-1}))" \
	"$top/tests/dat/registry_two" > "$work/two" 2>&1
echo "# registry_two exited $?"
seen=0
while IFS= read -r line; do
	if [[ $line =~ ^(not\ )?ok\ [0-9]+\ (.*)$ ]]; then
		seen=$((seen + 1))
		name="registry_two: ${BASH_REMATCH[2]}"
		if [ -n "${BASH_REMATCH[1]}" ]; then
			result 1 "$name"
		elif [[ $name =~ ^(.*)\ \#\ SKIP\ ?(.*)$ ]]; then
			result skip "${BASH_REMATCH[1]}" \
				"${BASH_REMATCH[2]:-its reason above}"
		else
			result 0 "$name"
		fi
	elif [[ ! $line =~ ^(TAP\ version|1\.\.) ]]; then
		echo "# ${line#\# }"
	fi
done < "$work/two"
for ((; seen < two_cases; seen++)); do
	result 1 "registry_two: a case that never reported"
done

totals
