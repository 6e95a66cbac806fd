#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/fuzz/lines.sh KO TEXT PCS: the source lines of kdat.ko that the
# fuzzer reached, out of those KCOV can see.
#
# KO is the kdat.ko the guest ran (built with -g and KCOV, as
# scripts/debug-modules builds it), TEXT the address its .text was loaded
# at (/sys/module/kdat/sections/.text), PCS the file KDAT_FUZZ_PCS wrote.
# A line is instrumented when one of its instructions calls
# __sanitizer_cov_trace_pc (the relocations of .text name those calls);
# KCOV reports the return address of such a call, so both sides are mapped
# to lines from the call instruction (return address - 5). Prints one line
# per source file and a total:
#
#   kdat_ep.c: 612/890 lines (68%)
#   lines: 3120/4470 (69%)
#
# Exit 4 when it cannot tell (no objdump/addr2line, or no instrumented
# site: a KO built without KCOV).
set -euo pipefail

[ $# = 3 ] || { echo "usage: $0 KO TEXT PCS" >&2; exit 2; }
ko=$1 text=$2 pcs=$3
if ! command -v objdump >/dev/null || ! command -v addr2line >/dev/null; then
	echo "lines: no objdump/addr2line" >&2
	exit 4
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Every call site: the relocation sits on the call's 4-byte operand, one
# byte into the 5-byte call instruction.
objdump -r -j .text "$ko" |
	awk '$3 ~ /^__sanitizer_cov_trace_pc/ { print $1 }' |
	while read -r off; do printf '0x%x\n' $((16#$off - 1)); done \
	> "$work/sites"
[ -s "$work/sites" ] || { echo "lines: $ko has no KCOV sites" >&2; exit 4; }

# The PCs the fuzzer saw, as call addresses relative to .text.
while read -r pc; do printf '0x%x\n' $((pc - text - 5)); done \
	< "$pcs" > "$work/pcs"

# file:line of each address; "??" (no line info) is dropped.
to_lines() {
	addr2line -e "$ko" -j .text < "$1" |
		sed -e 's/ (discriminator [0-9]*)//' -e 's|.*/||' |
		grep -v '^??' | sort -u
}
to_lines "$work/sites" > "$work/all"
to_lines "$work/pcs" | comm -12 - "$work/all" > "$work/hit"

awk -F: 'NR == FNR { all[$1]++; next } { hit[$1]++ }
	END {
		for (f in all)
			printf "%s: %d/%d lines (%d%%)\n", f, hit[f], all[f],
				100 * hit[f] / all[f]
	}' "$work/all" "$work/hit" | sort
a=$(wc -l < "$work/all")
h=$(wc -l < "$work/hit")
echo "lines: $h/$a ($((100 * h / a))%)"
