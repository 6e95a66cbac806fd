#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The manual (man/): every function libdat exports (DAT 2.0, the dynamic
# symbol table of user/libdat.so.2) has its 3DAT page, every tool its
# section 1 page, and every page of
# man/ renders with man -l without a warning, its header line whole at 80
# columns (its title at both ends: a centre title that is too long
# overwrites them). kdat(7) must not drift from what it describes: every
# module parameter of kdat.ko (modinfo) is named in it and in kdat(4), and
# every page of sections 1, 4 and 8 is in its SEE ALSO. Runs on the host
# (make check's first part); needs user/libdat.so.2 and kdat.ko built.
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lib=$top/user/libdat.so.2
[ -r "$lib" ] || { echo "no $lib (make lib)"; exit 1; }
r=0
n=0
for f in $(nm -D --defined-only "$lib" | awk '$3 ~ /@@DAT_2.0$/ { sub(/@.*/, "", $3); print $3 }'); do
	n=$((n + 1))
	[ -f "$top/man/man3/$f.3dat" ] ||
		{ echo "no page for $f: man/man3/$f.3dat"; r=1; }
done
[ "$n" -gt 0 ] || { echo "no DAT_2.0 symbol in $lib"; r=1; }
# Every tool (user/kdat-*.c) has its page in section 1.
for t in "$top"/user/kdat-*.c; do
	t=$(basename "$t" .c)
	[ -f "$top/man/man1/$t.1" ] || { echo "no page for $t: man/man1/$t.1"; r=1; }
done
pages=0
for p in "$top"/man/man*/*.*; do
	[ -f "$p" ] || continue
	pages=$((pages + 1))
	# man-db hands groff's warnings to stderr; .so pages are followed
	# from the page's own directory's parent.
	out=$(cd "$top/man" && LC_ALL=C.UTF-8 MANWIDTH=80 \
		man --warnings=w -E UTF-8 -l -Tutf8 "$p" 2>&1 > /dev/null)
	[ -z "$out" ] || { echo "${p#"$top"/}: $out"; r=1; }
	# .TH TITLE SECTION ...: "TITLE(SECTION)" begins and ends line 1.
	read -r _ title sec _ < <(grep -m1 '^\.TH ' "$p")
	[ -n "${title:-}" ] || continue
	head=$(printf '%s(%s)' "${title//\\/}" "$sec")
	line=$(cd "$top/man" && LC_ALL=C.UTF-8 MANWIDTH=80 \
		man -E UTF-8 -l -Tutf8 "$p" 2>/dev/null | sed -n '/./{p;q}' |
		sed 's/\x1b\[[0-9;]*m//g; s/.\x08//g; s/[[:space:]]*$//')
	[[ $line == "$head "*" $head" ]] ||
		{ echo "${p#"$top"/}: header at 80 columns: '$line'"; r=1; }
done
ko=$top/kdat.ko
[ -r "$ko" ] || { echo "no $ko (make module)"; exit 1; }
params=$(modinfo -p "$ko" | cut -d: -f1)
[ -n "$params" ] || { echo "no module parameters in $ko"; r=1; }
for p in $params; do
	for page in man7/kdat.7 man4/kdat.4; do
		grep -qw "$p" "$top/man/$page" ||
			{ echo "man/$page: module parameter $p not named"; r=1; }
	done
done
# SEE ALSO of kdat(7): ".BR name (section)" for every page of 1, 4, 8.
seealso=$(sed -n '/^\.SH SEE ALSO/,/^\.SH /p' "$top/man/man7/kdat.7")
for p in "$top"/man/man1/*.1 "$top"/man/man4/*.4 "$top"/man/man8/*.8; do
	name=$(basename "$p")
	sec=${name##*.}
	name=${name%.*}
	grep -q "^\.BR ${name//-/\\\\-} ($sec)" <<< "$seealso" ||
		{ echo "man/man7/kdat.7: SEE ALSO lacks $name($sec)"; r=1; }
done
echo "$n exported functions, $pages pages, $(wc -w <<< "$params") module parameters"
exit $r
