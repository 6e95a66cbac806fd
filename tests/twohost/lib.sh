# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the two-host suites (scripts/vm-run --hosts 2): the same
# script runs in both guests, KDAT_HOST 0 and 1, which meet at barriers
# in KDAT_SHARED_DIR, a directory both see. twohost_init TOOL skips
# (exit 4) outside such a run, or without TOOL, /dev/kdat or the
# testbed's variables (tests/dat/providers.sh: it sets $work, $KDAT and
# $OFA and writes the dat.conf with both providers).

# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"	# skip_all, result, totals
# shellcheck source=tests/lib/objects.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/objects.sh"	# $OBJS, objects_left, pinned_pages
# shellcheck source=tests/dat/providers.sh
. "$(dirname "${BASH_SOURCE[0]}")/../dat/providers.sh"

twohost_init() {
	[ -n "${KDAT_HOST:-}" ] && [ -n "${KDAT_PEER_IP:-}" ] &&
		[ -d "${KDAT_SHARED_DIR:-}" ] ||
		skip_all "not one of two testbed guests (scripts/vm-run --hosts 2)"
	PEER=$((1 - KDAT_HOST))
	# A suite's barrier files are its own: NAME-BOOT-suite.
	SUITE_TAG=$(basename "$0" .sh)
	providers_setup "$1"
}

# barrier NAME [SECONDS]: wait (120 s at most) until the other guest has
# reached NAME too; 1 when it did not (it timed out, or it has ended).
barrier() {
	local name=$SUITE_TAG.$1 limit=${2:-120} i d=$KDAT_SHARED_DIR
	: > "$d/b.$name.h$KDAT_HOST"
	for ((i = 0; i < limit * 10; i++)); do
		[ -e "$d/b.$name.h$PEER" ] && return 0
		[ -e "$d/done.h$PEER" ] && break
		sleep 0.1
	done
	echo "# barrier $1: h$PEER did not come"
	return 1
}

# put NAME VALUE / get NAME [SECONDS]: hand a value to the other guest.
put() { printf '%s\n' "$2" > "$KDAT_SHARED_DIR/v.$SUITE_TAG.$1.tmp" &&
	mv "$KDAT_SHARED_DIR/v.$SUITE_TAG.$1.tmp" "$KDAT_SHARED_DIR/v.$SUITE_TAG.$1"; }
# power H cycle|off: ask the host to cut guest H's power. Written whole
# and renamed in: the host must never see the file before its word is
# in it (it would read nothing and remove the file under our create).
power() { printf '%s\n' "$2" > "$KDAT_SHARED_DIR/.power.h$1" &&
	mv "$KDAT_SHARED_DIR/.power.h$1" "$KDAT_SHARED_DIR/power.h$1"; }
get() {
	local f=$KDAT_SHARED_DIR/v.$SUITE_TAG.$1 i
	for ((i = 0; i < ${2:-120} * 10; i++)); do
		[ -e "$f" ] && { cat "$f"; return 0; }
		sleep 0.1
	done
	return 1
}

# result's and totals' counts (tests/lib/tap.sh)
n=0 fail=0 skip=0

# pins_back PINS SECONDS: the pinned pages back at PINS, or say what is
# pinned still (and what the RDMA core holds).
pins_back() {
	local now i
	for ((i = 0; i < $2 * 10; i++)); do
		now=$(pinned_pages)
		if [ "$now" = "$1" ]; then
			[ $i = 0 ] || echo "# pinned pages back at $1 after $i x 0.1 s"
			return 0
		fi
		sleep 0.1
	done
	echo "# pinned pages $1 before, $now after ${2}s"
	rdma res show mr 2>&1 | sed 's/^/#   /'
	rdma res show qp 2>&1 | sed 's/^/#   /'
	return 1
}
# until_clean SECONDS: nothing left, or say what is.
until_clean() {
	local left
	for _ in $(seq $(($1 * 10))); do
		left=$(objects_left)
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	echo "# left after ${1}s: $left"
	return 1
}

# xfer_init ACK_TIMEOUT [netem]: what a suite of checked transfers needs
# (kdat's object counters; tests/twohost/dat_xfer, as $XFER; with netem,
# tc and sch_netem), and kdat's RC ACK timeout at ACK_TIMEOUT and its
# keepalive_ms at 2000 until the suite exits: its EXIT trap puts both
# back, takes netem off the wire and removes $work.
xfer_init() {
	if [ "${2:-}" = netem ]; then
		command -v tc > /dev/null || skip_all "no tc (iproute2)"
		modprobe sch_netem 2> /dev/null ||
			skip_all "no sch_netem in this kernel (the debug kernel has no NET_SCHED)"
	fi
	[ -r "$OBJS" ] || skip_all "no $OBJS (debugfs)"
	XFER=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/dat_xfer
	[ -x "$XFER" ] || skip_all "tests/twohost/dat_xfer not built (make)"
	P=/sys/module/kdat/parameters
	ack0=$(cat $P/ack_timeout) ka0=$(cat $P/keepalive_ms)
	echo "$1" > $P/ack_timeout
	echo 2000 > $P/keepalive_ms
	trap 'netem none; echo "$ack0" > $P/ack_timeout; echo "$ka0" > $P/keepalive_ms; rm -rf "$work"' EXIT
}

# all_back PINS: nothing of kdat left, the pinned pages back at PINS,
# and the module unloads (and is loaded again for the next suite).
all_back() {
	until_clean 30 || return 1
	pins_back "$1" 10 || return 1
	rmmod kdat || return 1
	insmod "$KDAT_KO"
}

# twohost_end LIMIT [PINS]: the last case, nothing of kdat's left on this
# host (with PINS, all_back PINS too: the pinned pages back, the module
# reloaded); both hosts at the end (LIMIT seconds at most); the totals.
twohost_end() {
	local r=0 what="no kdat object left"

	if [ $# -gt 1 ]; then
		all_back "$2" || r=1
		what="$what, pinned pages back to $2, rmmod clean"
	else
		until_clean 30 || r=1
	fi
	result $r "h$KDAT_HOST: $what"
	barrier end "$1" || true
	totals
}

# netem ARGS...: this guest's egress on the wire (tc netem); none: clear.
netem() {
	if [ "$1" = none ]; then
		tc qdisc del dev "$KDAT_TEST_NETDEV" root 2> /dev/null
		return 0
	fi
	tc qdisc replace dev "$KDAT_TEST_NETDEV" root netem "$@"
}

# wait_line FILE PATTERN SECONDS: FILE has a line matching PATTERN.
wait_line() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -q "$2" "$1" 2> /dev/null && return 0
		sleep 0.1
	done
	return 1
}
