#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Debian's dtestx, unmodified (built for OFA's libdat2), over kdat as a
# dat.conf provider and over OFA's own provider on the same rxe device
# (TAP): the DAT IB extensions (RDMA write with immediate data,
# compare-and-swap, fetch-and-add, their attributes and events).
#
#   dtestx       both must pass, and kdat's run must do the same
#                extension tests with the same results as OFA's
#   dtestx -p    the same, and kdat's counters (which dtestx prints; the
#                OFA provider of Debian is built without them) must be
#                exactly what the run did
#   dtestx -q    dat_ib_open_query/close_query: both list the extension
#                attributes, with the same values (but DAT_IB_UD, which
#                kdat has and OFA's cma provider has not)
#   dtestx -u    UD Endpoints, 4 of them a side: over kdat it must pass,
#                every AH resolved both ways and every datagram received;
#                OFA's cma provider has no UD (a skip that says so)
#
# Like dtest, dtestx's client takes the server's parameters over TCP
# (port 15828): it starts once the server listens there. A UD client is
# -c (-h alone makes a client only without -u).
#
# Needs root's testbed: KDAT_TEST_IP, KDAT_TEST_DEV, KDAT_TEST_NETDEV
# (OFA's provider names the netdev), dtestx, kdat.ko loaded.
set -uo pipefail

# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"	# result, totals
# shellcheck source=tests/dat/providers.sh
. "$(dirname "${BASH_SOURCE[0]}")/providers.sh"
providers_setup dtestx

n=0
fail=0
skip=0
echo "TAP version 13"
echo "1..12"

# Each side's wall-clock limit: dtestx sleeps about 6 s by itself.
limit=$((90 * ${KDAT_T_SLOW:-1}))

# run PROVIDER MODE OUT: server and client; 0 when both passed.
run() {
	local p=$1 mode=$2 out=$3 spid rc=0 crc=0 src=0 t0=$SECONDS side
	# shellcheck disable=SC2086 # the mode is a list of options
	timeout "$limit" dtestx -s -P "$p" $mode > "$out.srv" 2>&1 &
	spid=$!
	wait_tcp_listen "$spid" 60
	# shellcheck disable=SC2086
	timeout "$limit" dtestx -P "$p" -h "$KDAT_TEST_IP" $mode \
		> "$out.cli" 2>&1 || crc=$?
	wait "$spid" || src=$?
	for side in server:$src client:$crc; do
		[ "${side#*:}" = 124 ] &&
			echo "# $p dtestx $mode: the ${side%:*} was killed at its limit of $limit s"
	done
	[ $crc = 0 ] && [ $src = 0 ] || rc=1
	grep -q 'IB extension test - immed/atomic test PASSED' "$out.cli" ||
		rc=1
	grep -q 'IB extension test - immed/atomic test PASSED' "$out.srv" ||
		rc=1
	echo "# $p dtestx $mode: $((SECONDS - t0)) s"
	if [ $rc != 0 ]; then
		tail -8 "$out.srv" | sed "s/^/# $p server: /"
		tail -8 "$out.cli" | sed "s/^/# $p client: /"
	fi
	return $rc
}

# The extension tests a side ran and what each found (no pids, no
# addresses): the same over both providers.
shape() {
	grep -oE '(RDMA_WRITE_WITH_IMMEDIATE_DATA|CMP_SWAP|FETCH_ADD) test - [A-Z]+|Skipping [A-Za-z ]+|(Server|Client) received immed_data=0x[0-9a-f]+|(Server|Client|Server side) [a-z ()A-Z]+ += [0-9a-fx]+, expected 0x[0-9a-f]+|endpoint\(s\) v[0-9]+|IB extension test - [a-z/]+ test [A-Z]+' "$1"
}

# A line of numbers dtestx -p printed after LABEL (" EP[0] Cntrs:").
cntrs() {
	grep -m1 -F " $2 Cntrs:" "$1" | sed 's/.*Cntrs: *//'
}

# The counters a kdat side of the run must have printed (dat_ext.c says
# what each counts): $1 server or client, $2 1 when atomics ran.
want_cntrs() {
	local side=$1 a=$2 ia ep
	local -a v
	# IA, before the frees: a PZ, 10 + 1 LMRs, 4 EVDs (the async one
	# too), an EP; the server's PSP and its one request, accepted.
	for ((i = 0; i < 85; i++)); do v[i]=0; done
	v[0]=1 v[2]=11 v[11]=4 v[13]=1
	[ "$side" = server ] && v[6]=1 v[17]=1 v[18]=1
	ia="${v[*]}"
	# EP, after the disconnect both sides ask: a connect (the client's),
	# the send of the RMR triplet (16 bytes), 7 receives of 256 bytes, a
	# write with immediate data of 256, a compare-and-swap and two
	# fetch-and-adds; the peer's triplet and its write with immediate
	# data reaped.
	ep="$([ "$side" = client ] && echo 1 || echo 0) 1 1 16 0 0 7 1792 0 0"
	ep="$ep 1 256 0 0 $a $((2 * a)) 1 16 0 0 0 0 1 256"
	echo "IA Cntrs: $ia"
	echo "EP[0] Cntrs: $ep"
	# One wait for the triplet, two for the immediate data's events,
	# three for the atomics; the connection's two; the server's request.
	echo "DTO_EVD Cntrs: $((3 + 3 * a)) 0 0 0 0 0 0 0 0 0"
	echo "CONN_EVD Cntrs: 2 0 0 0 0 0 0 0 0 0"
	echo "CR_EVD Cntrs: $([ "$side" = server ] && echo 1 || echo 0) 0 0 0 0 0 0 0 0 0"
}

# What kdat printed. An EVD's second counter, the waits that slept in the
# kernel (DCNT_EVD_WAIT_BLOCKED), depends on timing: shown as 0 when it is
# at most the waits, the first, as it must be.
got_cntrs() {
	local l
	for l in IA "EP[0]"; do
		echo "$l Cntrs: $(cntrs "$1" "$l")"
	done
	for l in DTO_EVD CONN_EVD CR_EVD; do
		echo "$l Cntrs: $(cntrs "$1" "$l" |
			awk '$2 + 0 <= $1 + 0 { $2 = 0 } { print }')"
	done
}

for mode in "" "-p"; do
	tag=plain${mode#-}
	ref=skip
	reference_wanted && { run "$OFA" "$mode" "$work/ofa-$tag"; ref=$?; }
	if [ $ref = skip ]; then
		result skip "dtestx $mode over OFA's provider" "$NO_REFERENCE"
	else
		result $ref "dtestx $mode over OFA's provider"
	fi
	run "$KDAT" "$mode" "$work/kdat-$tag"
	result $? "dtestx $mode over kdat"
	shape "$work/kdat-$tag.cli" | sed 's/^/# kdat: /'
	why=
	if [ $ref = skip ]; then
		r=skip
		why=$NO_REFERENCE
	elif [ $ref != 0 ]; then
		r=skip
		why="the reference provider itself failed (above)"
	elif diff <(shape "$work/ofa-$tag.cli"; shape "$work/ofa-$tag.srv") \
		<(shape "$work/kdat-$tag.cli"; shape "$work/kdat-$tag.srv") \
		> "$work/diff"; then
		r=0
	else
		r=1
		sed 's/^/# /' "$work/diff" | head -20
	fi
	result $r "dtestx $mode: kdat runs OFA's extension tests with its results" "$why"
	[ "$mode" = -p ] || continue
	[ $ref = 0 ] && grep -h 'counters' "$work/ofa-$tag.cli" |
		sed 's/^/# ofa: /'
	a=0
	grep -q 'CMP_SWAP test - PASSED' "$work/kdat-$tag.cli" && a=1
	r=0
	for side in server:srv client:cli; do
		f=$work/kdat-$tag.${side#*:}
		side=${side%:*}
		if ! diff <(want_cntrs "$side" $a) <(got_cntrs "$f") \
			> "$work/diff"; then
			r=1
			echo "# kdat $side's counters, want < > got:"
			sed 's/^/# /' "$work/diff"
		fi
	done
	grep -h -m3 ': DCNT_EP_POST_WRITE_IMM\|: DCNT_EP_RECV_RDMA_IMM' \
		"$work/kdat-$tag.cli" | sed 's/^/# kdat: /'
	result $r "dtestx -p over kdat: the counters are what the run did"
done

# -q: the provider is opened for its attributes alone.
query() {
	timeout "$limit" dtestx -q -P "$1" > "$2" 2>&1
}

# The extension attributes a query listed, sorted.
ext_attrs() {
	grep -oE 'Attribute\[[0-9]+\] (DAT_EXTENSION_INTERFACE|DAT_IB_FETCH_AND_ADD|DAT_IB_CMP_AND_SWAP|DAT_IB_IMMED_DATA|DAT_IB_UD)=[A-Z]+' "$1" |
		sed 's/.*\] //' | sort
}

ref=skip
if reference_wanted; then
	query "$OFA" "$work/ofa-q"
	ref=$?
	[ $ref = 0 ] || sed 's/^/# ofa: /' "$work/ofa-q" | tail -5
	result $ref "dtestx -q over OFA's provider"
else
	result skip "dtestx -q over OFA's provider" "$NO_REFERENCE"
fi
query "$KDAT" "$work/kdat-q"
r=$?
sed 's/^/# kdat: /' "$work/kdat-q"
grep -qF "Local Address AF_INET - $KDAT_TEST_IP " "$work/kdat-q" || r=1
for a in DAT_EXTENSION_INTERFACE=TRUE DAT_IB_IMMED_DATA=TRUE DAT_COUNTERS=TRUE \
	DAT_IB_UD=TRUE; do
	grep -q "Attribute\[[0-9]*\] $a\$" "$work/kdat-q" || {
		echo "# kdat's query lists no $a"
		r=1
	}
done
result $r "dtestx -q over kdat: the extension attributes and the IA's address"
why=
if [ $ref = skip ]; then
	r=skip
	why=$NO_REFERENCE
elif [ $ref != 0 ]; then
	r=skip
	why="the reference provider itself failed (above)"
elif grep -q '^DAT_IB_UD=' <(ext_attrs "$work/ofa-q"); then
	r=1
	echo "# OFA's cma provider now says it has UD: compare it again"
elif diff <(ext_attrs "$work/ofa-q") \
	<(ext_attrs "$work/kdat-q" | grep -v '^DAT_IB_UD=') > "$work/diff"; then
	r=0
else
	r=1
	sed 's/^/# /' "$work/diff"
fi
result $r "dtestx -q: kdat's extension attributes are OFA's (and DAT_IB_UD)" "$why"

# -u: UD, 4 EPs a side, each side both connecting and accepting.
run_ud() {
	local p=$1 out=$2 spid rc=0 crc=0 src=0 t0=$SECONDS f n
	timeout "$limit" dtestx -s -u -P "$p" > "$out.srv" 2>&1 &
	spid=$!
	wait_tcp_listen "$spid" 60
	timeout "$limit" dtestx -c -u -P "$p" -h "$KDAT_TEST_IP" \
		> "$out.cli" 2>&1 || crc=$?
	wait "$spid" || src=$?
	[ $crc = 0 ] && [ $src = 0 ] || rc=1
	for f in "$out.srv" "$out.cli"; do
		grep -q 'IB extension test - UD test PASSED' "$f" || rc=1
		grep -q 'UD test 4 endpoint(s) v209' "$f" || rc=1
		# Each side: 4 requests accepted, 4 AHs of its connects, the
		# peer's 4 datagrams (its RMR triplets) received.
		for n in 'accepted CR on EP' 'CONNECT EP_L' 'Recv RMR message'; do
			[ "$(grep -c "$n" "$f")" = 4 ] || {
				echo "# $p ${f##*.}: not 4 lines of \"$n\""
				rc=1
			}
		done
	done
	echo "# $p dtestx -u: $((SECONDS - t0)) s, client $crc, server $src"
	if [ $rc != 0 ]; then
		tail -8 "$out.srv" | sed "s/^/# $p server: /"
		tail -8 "$out.cli" | sed "s/^/# $p client: /"
	fi
	return $rc
}

result skip "dtestx -u over OFA's provider" \
	"OFA's cma provider has no UD (no DAT_IB_UD attribute; its UD is the ucm and scm providers'), and on rxe its UD EP's create_qp fails with EINVAL (issue 15)"
run_ud "$KDAT" "$work/kdat-u"
result $? "dtestx -u over kdat"

totals
