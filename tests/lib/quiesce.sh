# SPDX-License-Identifier: GPL-2.0
#
# Sourced by what turns trace events or tracers on and off in the
# testbed (tests/dat/calls.sh, scripts/bench-spread, scripts/trace-dto).
#
# quiesced CMD [ARG...]: CMD run with every CPU but the first offline in
# the testbed's guests (KDAT_IN_VM), then those CPUs back; CMD's status.
# Turning an event or a tracer on or off patches kernel text with int3
# breakpoints (text_poke_bp()) while the other CPUs may be running it,
# and QEMU's TCG does not keep that safe: 6.12 guests died of "Oops:
# int3" at the patched site (__schedule(), try_to_wake_up(),
# ttwu_do_activate()). A 6.12 guest that turns an event on and off in a
# loop beside a wake-up load dies within seconds; with the other CPU
# offline at each turn it lived through 2,000. With one CPU online,
# nothing runs the text being patched. Outside the testbed CMD just
# runs. A task pinned to a CPU taken offline loses its pinning: quiesce
# before pinned tasks start.
quiesced() {
	local c down=() r

	if [ -n "${KDAT_IN_VM:-}" ]; then
		for c in /sys/devices/system/cpu/cpu[1-9]*/online; do
			[ "$(cat "$c" 2> /dev/null)" = 1 ] || continue
			if echo 0 > "$c" 2> /dev/null; then
				down+=("$c")
			else
				echo "# quiesced: ${c%/online} stays online" >&2
			fi
		done
	fi
	"$@"
	r=$?
	for c in "${down[@]}"; do
		echo 1 > "$c" ||
			echo "# quiesced: ${c%/online} did not come back" >&2
	done
	return $r
}
