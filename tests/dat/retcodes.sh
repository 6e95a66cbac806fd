#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# DAT return codes as OFA gives them (TAP): the same calls, made the same
# way by tests/dat/retcodes.c built against libdat (tests/dat/retcodes)
# and against OFA's registry (tests/dat/retcodes_ofa), must return the
# same code, class bit and subtype included. On the host (make check's
# first part, no RDMA device) the calls that need no IA; in the testbed
# also those on an IA: kdat's (kdat-DEV-PORT) against OFA's provider on
# the same device (ofa-DEV, through tests/dat/providers.sh's dat.conf).
# A call OFA's side answers with a crash is reported and skipped: there
# is nothing to compare with. Where kdat answers otherwise on purpose
# (the table below), its own code is required and the reason printed.
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
kd=$top/tests/dat/retcodes
ofa=$top/tests/dat/retcodes_ofa
if [ ! -x "$kd" ] || [ ! -x "$ofa" ]; then
	echo "no $kd or $ofa (make tests)"
	exit 1
fi

kd_args=() ofa_args=()
if [ -c /dev/kdat ] && [ -n "${KDAT_TEST_DEV:-}" ]; then
	# shellcheck source=tests/dat/providers.sh
	. "$top/tests/dat/providers.sh"
	providers_setup dtest
	kd_args=("$KDAT") ofa_args=("$OFA")
	where="kdat's IA $KDAT against OFA's $OFA"
else
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	where="no IA (no /dev/kdat or no KDAT_TEST_DEV): the calls that need none"
fi

"$kd" "${kd_args[@]}" > "$work/kd" 2>"$work/kd.err" ||
	{ cat "$work/kd.err"; echo "retcodes (libdat) failed"; exit 1; }
"$ofa" "${ofa_args[@]}" > "$work/ofa" 2>"$work/ofa.err" ||
	{ cat "$work/ofa.err"; echo "retcodes_ofa (libdat2) failed"; exit 1; }

# Where kdat differs on purpose: CASE -> "CODE REASON".
declare -A differs=(
	["dat_evd_create(no stream flags)"]="0x80060000 an EVD that takes no stream never holds an event: kdat refuses it (DAT_INVALID_PARAMETER), OFA makes one"
	["dat_lmr_create(NULL region, length 0)"]="0x80060000 OFA answers DAT_INSUFFICIENT_RESOURCES without the class bit; kdat DAT_INVALID_PARAMETER, an error with it"
)

# "CASE CODE": the code is the last word, the case the rest.
n=$(wc -l < "$work/ofa")
[ "$n" -gt 0 ] || { echo "retcodes_ofa printed nothing"; exit 1; }
echo "TAP version 13"
echo "# $where"
echo "1..$n"
i=0 fail=0
while IFS= read -r line; do
	i=$((i + 1))
	case $line in
	*" crash (signal "*)
		name=${line% crash (signal *}
		got=$(grep -F -m1 "$name " "$work/kd")
		echo "ok $i $name # SKIP OFA's side crashes; libdat: ${got##"$name" }"
		continue ;;
	*" fixture failed" | *" exit "[0-9]*)
		echo "not ok $i $line (OFA's side)"
		fail=1
		continue ;;
	esac
	name=${line% *}
	want=${line##* }
	got=$(grep -F -m1 "$name " "$work/kd")
	got=${got##"$name" }
	if [ -n "${differs[$name]:-}" ]; then
		if [ "$got" = "${differs[$name]%% *}" ]; then
			echo "ok $i $name: $got where OFA answers $want, on purpose: ${differs[$name]#* }"
		else
			echo "not ok $i $name: libdat ${got:-nothing}, want ${differs[$name]%% *} (OFA $want)"
			fail=1
		fi
	elif [ "$got" = "$want" ]; then
		echo "ok $i $name: $got, as OFA's"
	else
		echo "not ok $i $name: libdat ${got:-nothing}, OFA $want"
		fail=1
	fi
done < "$work/ofa"
exit $fail
