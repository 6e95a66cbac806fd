#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kdat's tracepoints (kernel/kdat_trace.h) through the perf recipe of
# doc/data-path.md: `perf record -e 'kdat:*' -a` around a DAT program, `perf script`.
# A 64 B ping-pong of kdat-bench (rings, poller) must show a post and a
# completion per DTO of its own (tgid), the connection events of both
# EPs, and the poller going to sleep and being woken; a DTO the kernel
# refuses (dat_dto_test's invalid LMR over the ioctl path) a refusal with
# its errno.
#
# Needs root, perf (linux-perf), kdat.ko loaded, the testbed's device.
set -uo pipefail
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/tap.sh"	# skip_all, result, totals
[ "$(id -u)" = 0 ] || skip_all "needs root"
command -v perf > /dev/null || skip_all "no perf (linux-perf)"
[ -c /dev/kdat ] || skip_all "no /dev/kdat"
[ -n "${KDAT_TEST_DEV:-}" ] && [ -n "${KDAT_TEST_IP:-}" ] ||
	skip_all "no RDMA device with an address (KDAT_TEST_DEV, KDAT_TEST_IP)"
# perf finds the events in tracefs (the testbed's guest mounts none).
[ -d /sys/kernel/tracing/events ] ||
	mount -t tracefs nodev /sys/kernel/tracing 2> /dev/null
[ -d /sys/kernel/tracing/events/kdat ] ||
	skip_all "no events/kdat in tracefs (kdat.ko without tracepoints?)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ia=$KDAT_TEST_DEV:${KDAT_TEST_PORT:-1}
N=200
n=0 fail=0
echo "TAP version 13"
echo "1..5"

# The recipe (doc/data-path.md, "Tracing kdat"): record every kdat event
# system wide around the program, then print them.
perf record -q -e 'kdat:*' -a -o "$work/bench.data" -- \
	"$TOP/user/kdat-bench" --loopback -d "$ia" --lat -s 64 -n "$N" \
	"$KDAT_TEST_IP" > "$work/bench.out" 2>&1
rc=$?
perf script -i "$work/bench.data" > "$work/bench.txt" 2> /dev/null
sed 's/^/# /' "$work/bench.out"
tgid=$(awk '/kdat:kdat_post/ { for (i = 1; i <= NF; i++) if ($i ~ /^tgid=/) { sub("tgid=", "", $i); print $i; exit } }' "$work/bench.txt")
posts=$(grep -c 'kdat:kdat_post:' "$work/bench.txt")
comps=$(grep -c 'kdat:kdat_complete:.* status=0 ' "$work/bench.txt")
echo "# $posts posts, $comps successful completions (tgid ${tgid:-?})"
# Warm-up and measured loop: N/10 + 1 + N ping-pongs, 4 DTOs each (the
# two sends, the two receives), and the receives posted before.
want=$((4 * (N + N / 10 + 1)))
[ $rc = 0 ] && [ "$posts" -ge "$want" ] && [ "$comps" -ge "$want" ]
result $? "kdat_post and kdat_complete: $want DTOs of a ping-pong at least, each seen"
r=0
[ -n "$tgid" ] && [ "$(grep 'kdat:kdat_post:' "$work/bench.txt" | grep -cv "tgid=$tgid ")" = 0 ] || r=1
result $r "every post names the program's process (tgid), also from the poller's context"
[ "$(grep -c 'kdat:kdat_conn_event:.* event=0x4001 ' "$work/bench.txt")" -ge 2 ]
result $? "kdat_conn_event: ESTABLISHED on both EPs"
grep -q 'kdat:kdat_poller_sleep:' "$work/bench.txt" &&
	grep -q 'kdat:kdat_poller_wake:' "$work/bench.txt"
result $? "kdat_poller_sleep and kdat_poller_wake"

perf record -q -e 'kdat:kdat_refuse' -a -o "$work/ref.data" -- \
	env KDAT_RINGS=0 "$TOP/tests/dat/dat_dto_test" test_err_invalid_lmr \
	> "$work/ref.out" 2>&1
perf script -i "$work/ref.data" > "$work/ref.txt" 2> /dev/null
grep -m3 'kdat:kdat_refuse:' "$work/ref.txt" | sed 's/^/# /'
grep -q 'kdat:kdat_refuse:.* err=-13' "$work/ref.txt"
result $? "kdat_refuse: a DTO with an invalid LMR, refused with EACCES"
totals
