#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Debian's dapltest over kdat as a matrix (TAP), and over OFA's cma
# provider on the same rxe device for comparison:
#
#   -T T   every operation both ways in one run (client and server SR,
#          RW and RR), over segment counts 1 to 4 (the IOV segments an EP
#          created with no attributes has on both providers), segment
#          sizes from 1 B to 1 MiB, threads x EPs per thread;
#   -T P   RW and RR at pipeline depths 1, 16 and 64;
#   -T L   the limit tests.
#
# Every case over kdat must pass. OFA's runs are the reference: one that
# fails on this device is a skip saying so (what OFA cannot do on rxe is
# no verdict on kdat). KDAT_T_REFERENCE=0 leaves them out.
#
# tests/dat/dapltest_matrix.sh [subset]: each operation, segment count
# and depth, 1 B and 1 MiB (make check-debug, where OFA's half skips and
# kdat's runs 4 to 6 times slower).
# tests/dat/dapltest_matrix.sh check (make check's stock pass): every
# value of every dimension, each segment count and each threads x EPs
# with small and large sizes, every depth with both sizes; OFA's
# reference runs only the cases kdat failed (the others are skips that
# say so: there is no verdict for it to make), 140 s.
# tests/dat/dapltest_matrix.sh full (make compat): the whole product,
# 4 segment counts x 6 sizes x 3 threads x EPs (750 s in the testbed).
# KDAT_T_MATRIX=subset turns the level given into the subset.
set -uo pipefail

# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"	# result, totals
# shellcheck source=tests/dat/providers.sh
. "$(dirname "${BASH_SOURCE[0]}")/providers.sh"
providers_setup dapltest

level=${1:-subset}
[ "${KDAT_T_MATRIX:-}" = subset ] && level=subset
case $level in
subset | check | full) ;;
*) echo "usage: $0 [subset|check|full]" >&2; exit 2 ;;
esac
ip=$KDAT_TEST_IP
limit=$((240 * ${KDAT_T_SLOW:-1}))

# iters SIZE: iterations for a segment size, fewer for large ones.
iters() {
	if [ "$1" -ge 262144 ]; then echo 2
	elif [ "$1" -ge 4096 ]; then echo 10
	else echo 20
	fi
}

# T cases: "SEGS SIZE THREADS EPS". Every operation, both ways.
tcases=()
if [ "$level" = full ]; then
	for segs in 1 2 3 4; do
		for size in 1 64 4096 65536 262144 1048576; do
			for tw in "1 1" "2 2" "4 2"; do
				# 4 threads x 2 EPs of 6 x 4 MiB buffers
				# each side would pin too much of the guest.
				[ "$size" -ge 262144 ] && [ "$tw" = "4 2" ] &&
					continue
				tcases+=("$segs $size $tw")
			done
		done
	done
elif [ "$level" = check ]; then
	# Every segment count with a small and a large size, every size,
	# every threads x EPs with a small and a large size.
	tcases=("1 1 1 1" "2 64 2 2" "3 4096 4 2" "4 65536 4 2"
		"1 262144 2 2" "4 1048576 1 1" "2 1048576 2 2" "4 1 2 2"
		"3 65536 1 1")
else
	for segs in 1 2 3 4; do
		tcases+=("$segs 4096 1 1")
	done
	# 1 B and 1 MiB (4 x 256 KiB) per operation, over 2 x 2 EPs.
	tcases+=("4 1 2 2" "4 262144 2 2")
fi
pcases=()
for op in RW RR; do
	for depth in 1 16 64; do
		if [ "$level" != subset ]; then
			pcases+=("$op $depth 4096 1" "$op $depth 65536 4")
		else
			pcases+=("$op $depth 4096 2")
		fi
	done
done
limits="limit_ia limit_pz limit_evd limit_ep limit_psp limit_lmr limit_rpost"
[ "$level" != subset ] && limits="limit_ia limit_pz limit_cno limit_evd limit_rsp limit_psp limit_ep limit_lmr limit_rpost"

tline() { # SEGS SIZE THREADS EPS
	local op who ops=""
	for op in SR RW RR; do
		for who in client server; do
			ops+=" $who $op $2 $1"
		done
	done
	echo "-i $(iters "$2") -t $3 -w $4$ops"
}
pline() { # OP DEPTH SIZE SEGS
	echo "-i $(($3 >= 65536 ? 50 : 200)) -p $2 $1 $3 $4"
}

n=0 fail=0 skip=0
echo "TAP version 13"
echo "1..$((2 * (${#tcases[@]} + ${#pcases[@]} + 2)))"

# One server per provider; the clients in turn; a quit at the end. A
# server that died (a client's failure can take it) is started again.
spid=
server_up() {
	local before
	[ -n "$spid" ] && kill -0 "$spid" 2> /dev/null && return 0
	before=$(rdma_listeners)
	timeout $((20 * limit)) dapltest -T S -D "$1" >> "$work/srv" 2>&1 &
	spid=$!
	wait_rdma_listen "$before" 60
}
server_down() {
	[ -n "$spid" ] || return 0
	timeout 60 dapltest -T Q -s "$ip" -D "$1" > /dev/null 2>&1
	wait "$spid"
	spid=
}

for p in "$KDAT" "$OFA"; do
	if [ "$p" = "$OFA" ] && ! reference_wanted; then
		for ((i = 0; i < ${#tcases[@]} + ${#pcases[@]} + 2; i++)); do
			result skip "dapltest over $p" "$NO_REFERENCE"
		done
		continue
	fi
	: > "$work/srv"
	t0=$SECONDS
	for kind in T P; do
		if [ $kind = T ]; then
			cases=("${tcases[@]}")
		else
			cases=("${pcases[@]}")
		fi
		for c in "${cases[@]}"; do
			# shellcheck disable=SC2086 # the case is a list of words
			if [ $kind = T ]; then
				args=$(tline $c)
				name="-T T segs $(cut -d' ' -f1 <<< "$c") size $(cut -d' ' -f2 <<< "$c") threads x EPs $(cut -d' ' -f3,4 <<< "$c" | tr ' ' x)"
			else
				args=$(pline $c)
				name="-T P $args"
			fi
			# make check's level: the reference only where kdat
			# failed, to tell a kdat bug from what rxe cannot do.
			if [ "$p" = "$OFA" ] && [ "$level" = check ] &&
				[ "${kdat_r[$((n - ${#kdat_r[@]}))]}" = 0 ]; then
				result skip "dapltest $name over $p" \
					"kdat passed it; make check runs the reference only where kdat fails (make compat runs every case)"
				continue
			fi
			server_up "$p"
			lines=$(wc -l < "$work/srv")
			r=0
			# shellcheck disable=SC2086 # a list of words
			dapltest_client "$work/cli" "$limit" -T $kind -s "$ip" \
				-D "$p" $args || r=1
			if tail -n +"$((lines + 1))" "$work/srv" |
				grep -i 'error\|fail\|cannot' > "$work/srv-err"; then
				head -5 "$work/srv-err" | sed 's/^/# server: /'
				r=1
			fi
			provider_result "$p" $r "dapltest $name"
		done
	done
	r=0
	server_up "$p"
	server_down "$p" || r=1
	grep -qi 'error\|fail' "$work/srv" && r=1
	provider_result "$p" $r "dapltest -T Q: the server ends, no failure on its side"
	r=0
	# shellcheck disable=SC2086 # a list of words
	timeout $((2 * limit)) dapltest -T L -D "$p" -w 2 -m 16 $limits \
		> "$work/lim" 2>&1 || r=1
	grep -qi 'error\|fail' "$work/lim" && r=1
	grep 'LimitTest: .* created\|opened\|posted per' "$work/lim" |
		sed "s/^/# $p: /"
	[ $r = 0 ] || grep -hi 'error\|fail' "$work/lim" | head -5 |
		sed 's/^/# /'
	provider_result "$p" $r "dapltest -T L -w 2 -m 16 $limits"
	echo "# $p: $((SECONDS - t0)) s"
done
totals
