# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the shell suites: the TAP helpers they share. tests/run-all
# counts a suite's "ok N", "not ok N" and "ok N ... # SKIP" lines and
# takes its exit status: 0 passed, 4 skipped (with the reason printed),
# anything else failed.
#
# skip_all REASON...: the suite cannot run here: a plan of no case, with
#   the reason, and exit 4. Before any plan is printed; a suite with
#   something to undo first does so, then calls it.
# skip_cases N REASON...: the same once the plan 1..N is printed: each
#   of the N cases skipped with the reason, and exit 4.
# result STATUS NAME [REASON]: the next case, numbered in $n: "ok" for
#   STATUS 0; "ok ... # SKIP REASON" for STATUS skip, counted in $skip;
#   "not ok" for any other STATUS, counted in $fail.
# totals: "# Totals: pass:N fail:N skip:N" of $n, $fail and $skip (0
#   when unset); true when nothing failed, so as a suite's last command
#   it is the suite's status.
# diag [LINE...]: each LINE as a TAP comment ("# LINE"); with no LINE,
#   standard input, line by line.

skip_all() {
	echo "1..0 # SKIP $*"
	exit 4
}

skip_cases() {
	local i last=$1

	shift
	for ((i = 1; i <= last; i++)); do
		echo "ok $i # SKIP $*"
	done
	exit 4
}

result() {
	n=$((n + 1))
	case $1 in
	0) echo "ok $n $2" ;;
	skip)
		echo "ok $n $2 # SKIP ${3:-}"
		skip=$((${skip:-0} + 1))
		;;
	*)
		echo "not ok $n $2"
		fail=$((fail + 1))
		;;
	esac
}

totals() {
	echo "# Totals: pass:$((n - fail - ${skip:-0})) fail:$fail skip:${skip:-0}"
	[ "$fail" = 0 ]
}

# shellcheck disable=SC2120 # called with no LINE, it reads stdin
diag() {
	if [ $# -gt 0 ]; then
		printf '# %s\n' "$@"
	else
		sed 's/^/# /'
	fi
}
