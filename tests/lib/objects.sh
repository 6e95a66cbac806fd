# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the suites that check what kdat and the kernel still hold
# after a run (tests/storm.sh, tests/module_life.sh, tests/fuzz/run.sh,
# tests/twohost/lib.sh).
#
# $OBJS: kdat's live object counters in debugfs, a "NAME COUNT" line
#   each (tests/selftests/kdat_objects.h reads them in C).
# objects_left: the counters that are not 0, but devices, as "NAME COUNT "
#   on one line; nothing when none is.
# pinned_pages: the pages pinned with FOLL_PIN, system wide.

OBJS=/sys/kernel/debug/kdat/objects

objects_left() {
	awk '$1 != "devices" && $2 != 0 { printf "%s %s ", $1, $2 }' "$OBJS"
}

pinned_pages() {
	awk '$1 == "nr_foll_pin_acquired" { a = $2 }
	     $1 == "nr_foll_pin_released" { r = $2 }
	     END { print a - r }' /proc/vmstat
}
