#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The data path's system calls, counted (TAP): kdat-bench's measured loop
# (between the two getppid() calls that bracket it) is traced with the
# syscalls events, which cost the process nothing (strace stops it at
# each call, and a slowed process lets the poller fall asleep).
#
#  - rings with a spinning poller (KDAT_POLLER=spin): the loop makes no
#    system call but kdat's doorbell and wait ioctls, and fewer than one
#    of those per 20 DTOs (the steady state makes none; a poller that
#    slept and was rung awake costs a few);
#  - rings with the adaptive poller (the default): the same calls, at
#    most one per DTO (it backs off when its spinning does not pay, and
#    the process then rings the doorbell);
#  - rings with no poller (KDAT_POLLER=none): no call but the doorbell,
#    and at most one per post;
#  - the ioctl path (KDAT_RINGS=0): POST and EVD_WAIT ioctls (one per
#    DTO, one per dequeue), nothing else.
#
# Each case also prints the poller's sleeps during the loop, by reason
# (the kdat_poller_sleep tracepoint), and a case over its limit the
# guest's busiest tasks: what a poller backed off for.
#
# "Nothing else" is what catches a library that reads the clock, yields
# or asks the kernel anything in dat_ep_post_* or dat_evd_dequeue: the
# testbed's guest keeps time with the HPET, which has no vDSO, so even a
# clock_gettime() is a system call there.
#
# Needs kdat.ko, an rxe device (KDAT_TEST_DEV, KDAT_TEST_PORT) with an
# address (KDAT_TEST_IP), user/kdat-bench, root and tracefs.
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bench=$TOP/user/kdat-bench
T=/sys/kernel/tracing
work=$(mktemp -d)

skip_all() {
	echo "1..0 # SKIP $*"
	exit 4
}
[ -c /dev/kdat ] || skip_all "no /dev/kdat (kdat.ko not loaded)"
[ -n "${KDAT_TEST_DEV:-}" ] || skip_all "no RDMA device (KDAT_TEST_DEV)"
[ -n "${KDAT_TEST_IP:-}" ] || skip_all "no address (KDAT_TEST_IP)"
[ -x "$bench" ] || skip_all "$bench not built (make tools)"
if [ ! -d $T/events ]; then
	mount -t tracefs nodev $T 2>/dev/null || skip_all "no tracefs"
fi
[ -w $T/events/syscalls/enable ] ||
	skip_all "no syscalls trace events (root? CONFIG_FTRACE_SYSCALLS?)"
ia=$KDAT_TEST_DEV:${KDAT_TEST_PORT:-1}

trace_off() {
	echo 0 > $T/tracing_on
	echo 0 > $T/events/enable
}
trap 'trace_off; rm -rf "$work"' EXIT

# The ioctl numbers of kdat's calls: KDAT_CMD_BASE (0x80) + the place in
# the uapi header's enum.
cmd_nr() {
	awk -v want="$1" '/^enum \{/ { f = 1; next }
		f && /KDAT_CMD_/ { sub(/,.*/, "", $1);
			if ($1 == want) { printf "%x\n", 128 + n; exit } n++ }
		f && /^\};/ { exit }' "$TOP/include/uapi/linux/kdat.h"
}
wake=$(cmd_nr KDAT_CMD_RING_WAKE)
wait_=$(cmd_nr KDAT_CMD_EVD_WAIT)
post=$(cmd_nr KDAT_CMD_POST)
if [ -z "$wake" ] || [ -z "$wait_" ] || [ -z "$post" ]; then
	echo "Bail out! kdat's ioctl numbers not found in the uapi header"
	exit 1
fi

# traced ENV ARGS...: run kdat-bench with its system calls traced; prints
# its output line, then "calls NAME COUNT" for each kind of call in the
# loop (ioctl_wake, ioctl_wait, ioctl_post, ioctl_other, and the others
# by name).
traced() {
	local envv=$1 out

	shift
	trace_off
	echo > $T/trace
	echo 8192 > $T/buffer_size_kb
	for e in "$T"/events/syscalls/sys_enter_*/enable; do
		echo 1 > "$e"
	done
	# The poller's sleeps, to say why a loop rang doorbells.
	[ -w $T/events/kdat/kdat_poller_sleep/enable ] &&
		echo 1 > $T/events/kdat/kdat_poller_sleep/enable
	echo 1 > $T/tracing_on
	out=$(env "$envv" timeout 300 "$bench" "$ia" "$KDAT_TEST_IP" "$@" 2>&1)
	echo 0 > $T/tracing_on
	echo "$out"
	awk -v wake="$wake" -v wt="$wait_" -v post="$post" '
	/^#/ { next }
	/kdat_poller_sleep:/ {
		if (marks == 1 && match($0, /why=[a-z]+/))
			sleeps[substr($0, RSTART + 4, RLENGTH - 4)]++
		next
	}
	{
		who = $1
		sub(/-[0-9]+$/, "", who)
		if (who != "kdat-bench")
			next
		ev = ""
		for (i = 1; i < NF; i++)
			if ($i ~ /^[0-9]+\.[0-9]+:$/) { ev = $(i + 1); break }
		if (ev !~ /^sys_/)
			next
		name = ev
		sub(/^sys_/, "", name)
		sub(/\(.*/, "", name)
		if (name == "getppid") { marks++; next }
		if (marks != 1)
			next
		if (name == "ioctl") {
			c = $0
			sub(/.*cmd: /, "", c)
			sub(/[,)].*/, "", c)
			c = substr(c, length(c) - 1)
			if (c == wake)
				name = "ioctl_wake"
			else if (c == wt)
				name = "ioctl_wait"
			else if (c == post)
				name = "ioctl_post"
			else
				name = "ioctl_other"
		}
		n[name]++
	}
	END {
		if (marks < 2)
			print "calls no_loop_traced 1"
		for (k in n)
			print "calls", k, n[k]
		for (k in sleeps)
			print "sleeps", k, sleeps[k]
		print "traced"
	}' $T/trace
}

n=0 fail=0
result() {	# STATUS NAME
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2"
		fail=$((fail + 1))
	fi
}

# check LABEL ENV ALLOWED MAX_PER_DTO ARGS...: one traced run. ALLOWED:
# the kinds of call the loop may make (space-separated); MAX_PER_DTO:
# how many of them per DTO posted at most.
check() {
	local label=$1 envv=$2 allowed=$3 max=$4 out line r=0
	local posted others="" mine=0

	shift 4
	out=$(traced "$envv" "$@")
	line=$(head -1 <<< "$out")
	echo "# $label: kdat-bench $*: $line"
	read -r _ _ _ _ _ posted _ _ <<< "$line"
	[[ $posted =~ ^[0-9]+$ ]] && [ "$posted" -gt 0 ] || r=1
	grep -qx traced <<< "$out" || { echo "# the trace was not read"; r=1; }
	while read -r _ kind count; do
		echo "#   $kind: $count"
		if [[ " $allowed " == *" $kind "* ]]; then
			mine=$((mine + count))
		else
			others="$others $kind"
		fi
	done < <(grep '^calls ' <<< "$out")
	[ -z "$others" ] || { echo "# other calls in the loop:$others"; r=1; }
	grep '^sleeps ' <<< "$out" | sed 's/^sleeps /#   poller sleeps in the loop, /'
	if [ "$r" = 0 ] && ! awk -v m="$mine" -v p="$posted" -v x="$max" \
		'BEGIN { exit !(m <= x * p) }'; then
		echo "# $mine calls for $posted DTOs: over $max per DTO"
		# What else wanted the CPUs (a poller backs off for it).
		ps -eo pid,comm,pcpu,stat --sort=-pcpu | head -6 | sed 's/^/#   /'
		r=1
	fi
	result "$r" "$label, $*: only ${allowed// /, } in the loop, <= $max per DTO ($mine for ${posted:-?})"
}

echo "TAP version 13"
echo "1..8"
check "rings, spinning poller" KDAT_POLLER=spin "ioctl_wake ioctl_wait" \
	0.05 rate 64 64 20000
check "rings, spinning poller" KDAT_POLLER=spin "ioctl_wake ioctl_wait" \
	0.05 rate 64 1 5000
check "rings, spinning poller" KDAT_POLLER=spin "ioctl_wake ioctl_wait" \
	0.05 lat 64 2000
check "rings, adaptive poller" KDAT_POLLER=adaptive "ioctl_wake ioctl_wait" \
	1 rate 64 1 5000
check "rings, no poller" KDAT_POLLER=none "ioctl_wake" 1 \
	rate 64 64 20000
check "rings, no poller" KDAT_POLLER=none "ioctl_wake" 1 \
	lat 64 2000
# The ioctl path: a POST per DTO, an EVD_WAIT per dequeue (one that
# finds nothing too).
check "ioctls" KDAT_RINGS=0 "ioctl_post ioctl_wait" 4 rate 64 64 20000
check "ioctls" KDAT_RINGS=0 "ioctl_post ioctl_wait" 4 lat 64 2000
echo "# Totals: pass:$((n - fail)) fail:$fail skip:0"
[ "$fail" = 0 ]
