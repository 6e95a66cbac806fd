# SPDX-License-Identifier: GPL-2.0
#
# Sourced by tests/dat/zero_syscall.sh and scripts/bench: a program's
# system calls counted with the syscalls trace events, which cost the
# program nothing (strace stops it at each call, and a process slowed so
# lets kdat's poller fall asleep between its posts).
#
# calls_setup TOP: tracefs mounted, the syscalls events writable, and the
# last two hex digits of kdat's doorbell, wait and post ioctls (from
# TOP's uapi header) in $calls_wake, $calls_wait and $calls_post; returns
# 1 with the reason in $calls_why when one is missing.
# calls_start / calls_stop: trace every task's system calls (and kdat's
# poller sleeps) from now / no more (tracing left on, no event enabled).
# calls_count WHO MARKED: "calls KIND COUNT" for each kind of call that
# WHO made (a command name, or a process id: its threads too), "sleeps
# WHY COUNT" for the poller's sleeps, then "traced". KIND is the call's
# name, or ioctl_wake, ioctl_wait, ioctl_post, ioctl_other for ioctls.
# With MARKED 1 only the calls between WHO's first two getppid() calls
# count (kdat-bench brackets its measured loop so), and "calls
# no_loop_traced 1" says the markers were not seen.

CALLS_T=/sys/kernel/tracing

calls_setup() {
	local hdr=$1/include/uapi/linux/kdat.h nr

	if [ ! -d $CALLS_T/events ]; then
		mount -t tracefs nodev $CALLS_T 2>/dev/null ||
			{ calls_why="no tracefs"; return 1; }
	fi
	[ -w $CALLS_T/events/syscalls/enable ] ||
		{ calls_why="no syscalls trace events (root? CONFIG_FTRACE_SYSCALLS?)"
		  return 1; }
	# KDAT_CMD_BASE (0x80) + the place in the uapi header's enum.
	nr() {
		awk -v want="$1" '/^enum \{/ { f = 1; next }
			f && /KDAT_CMD_/ { sub(/,.*/, "", $1);
				if ($1 == want) { printf "%x\n", 128 + n; exit }
				n++ }
			f && /^\};/ { exit }' "$hdr"
	}
	calls_wake=$(nr KDAT_CMD_RING_WAKE)
	calls_wait=$(nr KDAT_CMD_EVD_WAIT)
	calls_post=$(nr KDAT_CMD_POST)
	[ -n "$calls_wake" ] && [ -n "$calls_wait" ] && [ -n "$calls_post" ] ||
		{ calls_why="kdat's ioctl numbers not found in $hdr"; return 1; }
}

# shellcheck source=tests/lib/quiesce.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/quiesce.sh"	# quiesced

# calls_arm, calls_disarm: from a suite's start to its end, an event that
# never fires (a machine check's) is on. The first event enabled makes
# the kernel record task names (and tgids), which hooks sched_switch and
# sched_wakeup, and the last one disabled unhooks them, each time
# patching the scheduler (tests/lib/quiesce.sh). Armed, a suite patches
# it twice, not twice per case; outside the suites that trace, nothing
# is hooked (a hook at every context switch slowed the DAT programs by
# 20 to 40 % under TCG). Every turn of an event here is quiesced.
calls_arm() {
	[ -w $CALLS_T/events/mce/mce_record/enable ] &&
		echo 1 | quiesced tee $CALLS_T/events/mce/mce_record/enable > /dev/null
}

calls_disarm() {
	[ -w $CALLS_T/events/mce/mce_record/enable ] &&
		echo 0 | quiesced tee $CALLS_T/events/mce/mce_record/enable > /dev/null
}

# calls_events 1|0: the events calls_start traces on, or off.
calls_events() {
	local e

	if [ "$1" = 1 ]; then
		for e in "$CALLS_T"/events/syscalls/sys_enter_*/enable; do
			echo 1 > "$e"
		done
	else
		echo 0 > $CALLS_T/events/syscalls/enable
	fi
	# The poller's sleeps, to say why a program rang doorbells.
	[ -w $CALLS_T/events/kdat/kdat_poller_sleep/enable ] &&
		echo "$1" > $CALLS_T/events/kdat/kdat_poller_sleep/enable
	return 0
}

# The trace stays for calls_count; tracing is on again for whoever
# traces next (with none of these events enabled, nothing of them is
# written). Only the events calls_start turns on are turned off (the
# suite's armed one stays).
calls_stop() {
	echo 0 > $CALLS_T/tracing_on
	quiesced calls_events 0
	echo 1 > $CALLS_T/tracing_on
}

calls_start() {
	calls_stop
	echo > $CALLS_T/trace
	echo 8192 > $CALLS_T/buffer_size_kb
	echo 1 > $CALLS_T/options/record-tgid
	quiesced calls_events 1
	echo 1 > $CALLS_T/tracing_on
}

calls_count() {
	awk -v who="$1" -v marked="$2" -v wake="$calls_wake" \
	    -v wt="$calls_wait" -v post="$calls_post" '
	BEGIN { counting = !marked }
	/^#/ { next }
	/kdat_poller_sleep:/ {
		if (counting && match($0, /why=[a-z]+/))
			sleeps[substr($0, RSTART + 4, RLENGTH - 4)]++
		next
	}
	{
		if (who ~ /^[0-9]+$/) {
			if (!match($0, /\( *[0-9]+\)/))
				next
			tgid = substr($0, RSTART + 1, RLENGTH - 2)
			if (tgid + 0 != who + 0)
				next
		} else {
			comm = $1
			sub(/-[0-9]+$/, "", comm)
			if (comm != who)
				next
		}
		ev = ""
		for (i = 1; i < NF; i++)
			if ($i ~ /^[0-9]+\.[0-9]+:$/) { ev = $(i + 1); break }
		if (ev !~ /^sys_/)
			next
		name = ev
		sub(/^sys_/, "", name)
		sub(/\(.*/, "", name)
		if (marked && name == "getppid") {
			counting = ++marks == 1
			next
		}
		if (!counting)
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
		if (marked && marks < 2)
			print "calls no_loop_traced 1"
		for (k in n)
			print "calls", k, n[k]
		for (k in sleeps)
			print "sleeps", k, sleeps[k]
		print "traced"
	}' $CALLS_T/trace
	echo 0 > $CALLS_T/options/record-tgid
}
