#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kdat and OFA DAPL's cma provider as each other's peers on the wire (TAP),
# over the same rxe device: a server on one provider and a client on the
# other, both ways, with tests/dat/interop_cm (both providers in one
# process through OFA's registry: private data both ways, rejects,
# send/receive, RDMA write and read, every byte checked), Debian's dtest
# and dapltest (-T T, -T P RW and RR). First, kdat's dat.conf instance
# data (device, network device, IP address, a VLAN device on the RoCE
# one, whose GIDs are not the port's first) and interop_cm kdat to kdat,
# which need OFA's registry but not its provider.
#
# dtest's client takes its provider's name from the server (over TCP):
# one IA name, dtx-<dev>, in two dat.conf files, kdat's in one and OFA's
# in the other, each side with its own DAT_OVERRIDE.
#
# tests/dat/interop.sh: quiet, two dtest sizes.
# tests/dat/interop.sh loaded: the same cases with a busy loop per CPU
# beside, and not quiet (the loaded pass runs every case the quiet one
# does, on a busier machine).
# tests/dat/interop.sh check (make check): loaded, the instance data and
# interop_cm; dtest and dapltest between the providers run in make
# check's two-host pass (tests/twohost/across.sh), over a wire.
# tests/dat/interop.sh full (make compat): quiet and loaded, with dtest
# at 1 B, 4 KiB, 64 KiB polling and 1 MiB (330 s in the testbed).
#
# Needs root's testbed: KDAT_TEST_IP, KDAT_TEST_DEV, KDAT_TEST_NETDEV,
# dtest, dapltest, kdat.ko loaded. KDAT_T_REFERENCE=0 (the debug kernel's
# pass) leaves OFA's provider out: its cases are skips that say so.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"	# skip_all, result, totals
# shellcheck source=tests/dat/providers.sh
. "$here/providers.sh"
providers_setup dtest
command -v dapltest > /dev/null || skip_all "no dapltest (dapl2-utils)"
[ -x "$here/interop_cm" ] || skip_all "tests/dat/interop_cm not built (make)"

full=0 loaded=0 tools=1
case ${1:-} in
'') ;;
full) full=1 loaded=1 ;;
loaded) loaded=1 ;;
check) loaded=1 tools=0 ;;
*) echo "usage: $0 [loaded|check|full]" >&2; exit 2 ;;
esac
dev=$KDAT_TEST_DEV
port=${KDAT_TEST_PORT:-1}
ip=$KDAT_TEST_IP
limit=$((120 * ${KDAT_T_SLOW:-1}))

# kdat_lines NAME INSTANCE: kdat's dat.conf lines (both thread safeties)
# for IA NAME with instance data INSTANCE.
kdat_lines() {
	sed -n "s|^$KDAT \(.*\) kdat\.2\.0 \"[^\"]*\" \"\"\$|$1 \1 kdat.2.0 \"$2\" \"\"|p" \
		"$work/dat.conf"
}
ofa_line() {
	printf '%s u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "%s 0" ""\n' \
		"$1" "$KDAT_TEST_NETDEV"
}
dtx=dtx-$dev
kdat_lines "$dtx" "$dev $port" > "$work/dtx-kdat.conf"
ofa_line "$dtx" > "$work/dtx-ofa.conf"
{
	kdat_lines "kdat2-$dev" "$dev $port"
	kdat_lines "kdatdev-$dev" "$dev $port"
	kdat_lines "kdatnd-$dev" "$KDAT_TEST_NETDEV 0"
	kdat_lines "kdatip-$dev" "$ip 0"
	kdat_lines "kdatvlan-$dev" "$KDAT_TEST_NETDEV.7 0"
	ofa_line "ofa2-$dev"
} > "$work/more.conf"
cat "$work/more.conf" >> "$work/dat.conf"

n=0 fail=0 skip=0

# The cases that need OFA's provider; their count for the plan.
dtest_modes=("-b 65536 -B 10" "-b 1048576 -B 2")
[ $full = 1 ] && dtest_modes=("-b 1 -B 10" "-b 4096 -B 10" "-p -b 65536 -B 10"
	"-b 1048576 -B 4")
T_TEST="-i 20 -t 2 -w 2 client SR 1024 4 server SR 1024 4 client RW 8192 4 server RW 4096 2 client RR 4096 4 server RR 8192 2"
P_TESTS=("-i 200 -p 16 RW 4096 2" "-i 200 -p 16 RR 4096 2")
[ $tools = 1 ] || dtest_modes=()
per_load=$((1 + 3 + 2 * ${#dtest_modes[@]}))
[ $tools = 1 ] && per_load=$((per_load + 2 * (2 + ${#P_TESTS[@]})))
loads=(quiet)
[ $loaded = 1 ] && loads=(loaded)
[ $full = 1 ] && loads=(quiet loaded)

echo "TAP version 13"
echo "1..$((5 + per_load * ${#loads[@]}))"

# 1-4: the port a kdat line's instance data names, in its three forms,
# and a VLAN device on the RoCE one (its GIDs come after the port's
# default ones: libdat looks at every GID for it); the IA names say
# nothing kdat could parse.
vlan=$KDAT_TEST_NETDEV.7
vlan_ok=0
if ip link add link "$KDAT_TEST_NETDEV" name "$vlan" type vlan id 7 \
	2> /dev/null; then
	ip addr add 198.51.100.1/24 dev "$vlan" && ip link set "$vlan" up
	# ib_core adds the VLAN's GIDs from a work item.
	for ((i = 0; i < 100 * ${KDAT_T_SLOW:-1}; i++)); do
		grep -qx "$vlan" /sys/class/infiniband/"$dev"/ports/"$port"/gid_attrs/ndevs/* 2> /dev/null &&
			{ vlan_ok=1; break; }
		sleep 0.1
	done
fi
for form in dev nd ip vlan; do
	case $form in
	dev) what="\"$dev $port\"" ;;
	nd) what="\"$KDAT_TEST_NETDEV 0\"" ;;
	ip) what="\"$ip 0\"" ;;
	vlan) what="\"$vlan 0\" (a VLAN device)" ;;
	esac
	if [ $form = vlan ] && [ $vlan_ok = 0 ]; then
		result skip "dat.conf instance data $what opens kdat on $dev port $port, by dat_ia_open and dat_ib_open_query" \
			"no VLAN device with GIDs on $dev (8021q module?)"
		continue
	fi
	out=$("$here/interop_cm" -q "kdat$form-$dev" 2>&1)
	r=0
	grep -qx "DAT_IB_PROVIDER_NAME=kdat" <<< "$out" || r=1
	grep -qx "DAT_IB_DEVICE_NAME=$dev" <<< "$out" || r=1
	grep -qx "DAT_IB_PORT_NUMBER=$port" <<< "$out" || r=1
	# dat_ib_open_query reads the same line.
	grep -qx "oq.DAT_IB_DEVICE_NAME=$dev" <<< "$out" || r=1
	grep -qx "oq.DAT_IB_PORT_NUMBER=$port" <<< "$out" || r=1
	[ $r = 0 ] || sed 's/^/# /' <<< "$out"
	result $r "dat.conf instance data $what opens kdat on $dev port $port, by dat_ia_open and dat_ib_open_query"
done
ip link del "$vlan" 2> /dev/null

# interop_cm CLIENT SERVER [ref]: one case; "ref": both are OFA's, the
# reference, whose failure is a skip that says so.
cm() {
	local out r=0

	out=$(timeout "$limit" "$here/interop_cm" "$1" "$2" "$ip" 2>&1) || r=1
	if [ $r = 0 ]; then
		grep '^# ' <<< "$out"
	else
		grep -v '^ok \|^TAP\|^1\.\.' <<< "$out" | sed 's/^\([^#]\)/# \1/'
	fi
	[ $r != 0 ] && [ "${3:-}" = ref ] &&
		r=skip why="the reference provider fails it with itself"
	result $r "interop_cm: $1 client, $2 server, one process" "${why:-}"
}

# 4: kdat with itself, through OFA's registry.
cm "$KDAT" "kdat2-$dev"

# dtest_x SERVER_CONF CLIENT_CONF MODE TAG: 0 when both said PASSED.
dtest_x() {
	local sconf=$1 cconf=$2 mode=$3 out=$work/dtest-$4 rc=0 side
	# shellcheck disable=SC2086 # the mode is a list of options
	dtest_pair "$out" env DAT_OVERRIDE="$sconf" timeout "$limit" \
		dtest -s -P "$dtx" $mode -- \
		env DAT_OVERRIDE="$cconf" timeout "$limit" \
		dtest -P "$dtx" $mode -h "$ip" || rc=1
	grep -q 'DAPL Test Complete. PASSED' "$out.cli" || rc=1
	grep -q 'DAPL Test Complete. PASSED' "$out.srv" || rc=1
	if [ $rc != 0 ]; then
		echo "# server exited $dtest_src, client $dtest_crc:"
		for side in srv cli; do
			grep -iE 'error|fail|timed out' "$out.$side" | head -5 |
				sed "s/^/#   $side: /"
			tail -3 "$out.$side" | sed "s/^/#   $side: /"
		done
	fi
	return $rc
}

# dapltest_x SERVER_IA CLIENT_IA: a server, -T T and each -T P, a quit.
dapltest_x() {
	local s=$1 c=$2 before spid r t
	before=$(rdma_listeners)
	timeout $((3 * limit)) dapltest -T S -D "$s" > "$work/dt-srv" 2>&1 &
	spid=$!
	wait_rdma_listen "$before" 60
	for t in "T $T_TEST" "${P_TESTS[@]/#/P }"; do
		r=0
		# shellcheck disable=SC2086 # a list of words
		dapltest_client "$work/dt-cli" "$limit" -T ${t%% *} -s "$ip" \
			-D "$c" ${t#* } || r=1
		result $r "dapltest -T ${t%% *} ${t#* }: $s server, $c client"
	done
	r=0
	timeout 60 dapltest -T Q -s "$ip" -D "$c" > /dev/null 2>&1 || r=1
	wait "$spid" || r=1
	if grep -qi 'error\|fail' "$work/dt-srv"; then
		grep -hi 'error\|fail' "$work/dt-srv" | head -5 |
			sed 's/^/# server: /'
		r=1
	fi
	result $r "dapltest -T Q from $c: the server on $s ends, no failure reported"
}

hogs=()
hog_stop() {
	[ ${#hogs[@]} -gt 0 ] && kill "${hogs[@]}" 2> /dev/null
	wait "${hogs[@]}" 2> /dev/null
	hogs=()
}
trap 'hog_stop; rm -rf "$work"' EXIT

for load in "${loads[@]}"; do
	if ! reference_wanted; then
		for ((i = 0; i < per_load; i++)); do
			result skip "kdat against OFA's provider ($load)" \
				"$NO_REFERENCE"
		done
		continue
	fi
	if [ "$load" = loaded ]; then
		for _ in $(seq "$(nproc)"); do
			bash -c 'while :; do :; done' &
			hogs+=($!)
		done
		echo "# ---- again, with ${#hogs[@]} busy loops beside"
	fi
	# The two dat.conf files give dtx-<dev> to one provider each.
	r=0
	k=$(DAT_OVERRIDE=$work/dtx-kdat.conf "$here/interop_cm" -q "$dtx") || r=1
	o=$(DAT_OVERRIDE=$work/dtx-ofa.conf "$here/interop_cm" -q "$dtx") || r=1
	grep -qx 'DAT_IB_PROVIDER_NAME=kdat' <<< "$k" || r=1
	grep -qx "DAT_IB_DEVICE_NAME=$dev" <<< "$o" || r=1
	grep -qx 'DAT_IB_PROVIDER_NAME=kdat' <<< "$o" && r=1
	[ $r = 0 ] || sed 's/^/# /' <<< "kdat's: $k
OFA's: $o"
	result $r "$dtx is kdat in one dat.conf, OFA's cma in the other ($load)"
	cm "ofa2-$dev" "$OFA" ref
	cm "$KDAT" "$OFA"
	cm "$OFA" "$KDAT"
	for mode in "${dtest_modes[@]}"; do
		dtest_x "$work/dtx-kdat.conf" "$work/dtx-ofa.conf" "$mode" k-o
		result $? "dtest $mode: kdat server, OFA client ($load)"
		dtest_x "$work/dtx-ofa.conf" "$work/dtx-kdat.conf" "$mode" o-k
		result $? "dtest $mode: OFA server, kdat client ($load)"
	done
	if [ $tools = 1 ]; then
		dapltest_x "$KDAT" "$OFA"
		dapltest_x "$OFA" "$KDAT"
	fi
	hog_stop
done
totals
