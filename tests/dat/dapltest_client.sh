#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# providers.sh's dapltest_client, against a stand-in dapltest that plays
# the outputs of recorded runs: a -T P run that failed only because its
# sync send's ACK was lost runs once more; every other failure fails at
# once, a second lost ACK fails, and a -T T run is never run again.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/dat/providers.sh
. "$here/providers.sh"	# dapltest_client, result, totals

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/bin"
# The stand-in prints the next of the scripted outputs and exits with its
# status; $dir/calls counts its runs.
cat > "$dir/bin/dapltest" << 'EOF'
#!/bin/bash
n=$(($(cat "$DIR/calls") + 1))
echo "$n" > "$DIR/calls"
cat "$DIR/out.$n"
exit "$(cat "$DIR/rc.$n")"
EOF
chmod +x "$dir/bin/dapltest"
export PATH=$dir/bin:$PATH DIR=$dir

# The client's lines (as a 6.12 guest's over rxe printed them) when only
# the sync send's ACK was lost, and when a data operation failed.
lost='Test Error: Client_Sync_Send-reaping DTO problem, status = FAILURE
	Length mismatch (xfer 0x0 wanted 0xc)'
other='Test Error: Client_Sync_Send-reaping DTO problem, status = FAILURE
Test Error: RDMA read reaping DTO problem, status = FAILURE
	Length mismatch (xfer 0x0 wanted 0xc)'
good='Total WQE        :    2222.22 WQE/Sec'

# case WANT_STATUS WANT_RUNS NAME TEST OUT1 RC1 [OUT2 RC2]: the helper's
# status and the stand-in's runs for a run of -T TEST.
case_() {
	local want=$1 runs=$2 name=$3 t=$4 got=0 i=1
	shift 4
	echo 0 > "$dir/calls"
	while [ $# -ge 2 ]; do
		printf '%s\n' "$1" > "$dir/out.$i"
		echo "$2" > "$dir/rc.$i"
		i=$((i + 1))
		shift 2
	done
	dapltest_client "$dir/cli" 10 -T "$t" -s 192.0.2.1 -D x -i 1 RR 8 \
		> "$dir/said" || got=1
	sed 's/^/#   /' "$dir/said"
	[ "$got" = "$want" ] && [ "$(cat "$dir/calls")" = "$runs" ] &&
		{ [ "$runs" = 1 ] || grep -q 'once more' "$dir/said"; }
	result $? "$name (status $got, $(cat "$dir/calls") runs; want $want, $runs)"
}

n=0 fail=0 skip=0
echo "TAP version 13"
echo "1..9"
case_ 0 1 "a clean -T P run passes, once" P "$good" 0
case_ 0 2 "a -T P run that lost only its sync ACK runs once more and passes" \
	P "$lost" 1 "$good" 0
case_ 0 2 "the same, as over OFA's provider (no length line)" \
	P "${lost%%$'\n'*}" 0 "$good" 0
case_ 1 1 "another length mismatch beside the sync line fails at once" \
	P "$lost
	Length mismatch (xfer 0x10 wanted 0x40)" 1 "$good" 0
case_ 1 2 "a lost sync ACK twice fails" P "$lost" 1 "$lost" 1
case_ 1 1 "a data operation's failure fails at once" P "$other" 1 "$good" 0
case_ 1 1 "an error line with status 0 fails" P "$lost
Error: cannot connect" 0 "$good" 0
case_ 1 1 "a -T T run is never run again" T "$lost" 1 "$good" 0
case_ 1 1 "a client that exits 1 without a line fails" P "" 1 "$good" 0
totals
