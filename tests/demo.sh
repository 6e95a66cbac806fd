#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The demo, as a test (TAP): scripts/demo runs to the end and prints its
# table, a line for each measurement. (The numbers are not judged here:
# under TCG they mean little; the benchmark scripts compare.) Then the
# README's DAT program (tests/dat/readme_hello, built from README.md's C
# block) opens and queries the test port's IA, and names the error when
# the IA does not exist.
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/tap.sh"	# skip_all
[ -c /dev/kdat ] || skip_all "no /dev/kdat"
[ -n "${KDAT_TEST_DEV:-}" ] || skip_all "no KDAT_TEST_DEV"

out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "TAP version 13"
echo "1..4"
fail=0
if timeout 300 "$TOP/scripts/demo" > "$out" 2>&1; then
	echo "ok 1 make demo's script runs"
else
	sed 's/^/# /' "$out" | tail -20
	echo "not ok 1 make demo's script runs"
	fail=1
fi
n=$(grep -cE '^(ping-pong|send|RDMA write).* (us|MB/s|/s)$' "$out")
sed -n '/^test /,$p' "$out" | sed 's/^/# /'
if [ "$n" = 5 ]; then
	echo "ok 2 the demo table has its 5 measurements"
else
	echo "not ok 2 the demo table has its 5 measurements (found $n)"
	fail=1
fi
ia=$KDAT_TEST_DEV:${KDAT_TEST_PORT:-1}
if hello=$("$TOP/tests/dat/readme_hello" "$ia" 2>&1) &&
	[[ $hello =~ ^"$ia":\ .+,\ [1-9][0-9]*\ endpoints$ ]]; then
	echo "ok 3 the README's DAT program on $ia: $hello"
else
	echo "not ok 3 the README's DAT program on $ia: $hello"
	fail=1
fi
if hello=$("$TOP/tests/dat/readme_hello" nosuchdev:1 2>&1); then
	echo "not ok 4 the README's DAT program fails on nosuchdev:1 ($hello)"
	fail=1
elif [[ $hello == "nosuchdev:1: DAT_PROVIDER_NOT_FOUND"* ]]; then
	echo "ok 4 the README's DAT program fails on nosuchdev:1: $hello"
else
	echo "not ok 4 the README's DAT program's error on nosuchdev:1: $hello"
	fail=1
fi
exit $fail

