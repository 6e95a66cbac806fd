# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the suites that run OFA's DAT tools over both providers:
# providers_setup TOOL skips (exit 4) without TOOL, /dev/kdat or the
# testbed's variables; otherwise it writes a dat.conf with kdat's lines
# (scripts/kdat-datconf) and OFA's provider on the same device, exports
# DAT_OVERRIDE, and sets $work (removed at exit), $KDAT and $OFA (the
# two IA names).

# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"	# skip_all, result, totals

providers_setup() {
	local top dev=${KDAT_TEST_DEV:-} port=${KDAT_TEST_PORT:-1}

	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	command -v "$1" >/dev/null || skip_all "no $1 (dapl2-utils)"
	[ -c /dev/kdat ] || skip_all "no /dev/kdat"
	[ -n "$dev" ] && [ -n "${KDAT_TEST_IP:-}" ] &&
		[ -n "${KDAT_TEST_NETDEV:-}" ] ||
		skip_all "needs KDAT_TEST_DEV, KDAT_TEST_IP and KDAT_TEST_NETDEV"

	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	"$top/scripts/kdat-datconf" > "$work/dat.conf"
	# OFA's provider names the network device behind the RDMA device.
	printf 'ofa-%s u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "%s 0" ""\n' \
		"$dev" "$KDAT_TEST_NETDEV" >> "$work/dat.conf"
	export DAT_OVERRIDE=$work/dat.conf
	KDAT=kdat-$dev-$port
	OFA=ofa-$dev
}

# OFA's provider is the reference, run beside kdat's. KDAT_T_REFERENCE=0
# (make check's debug-kernel pass: the stock pass runs the reference and
# the comparisons; OFA's runs exercise no kdat code) leaves it out: its
# cases and the comparisons that need it are skips that say so.
reference_wanted() { [ "${KDAT_T_REFERENCE:-1}" != 0 ]; }
NO_REFERENCE="KDAT_T_REFERENCE=0: OFA's provider runs in the stock kernel's pass"

# provider_result P STATUS NAME: NAME's verdict over P. kdat's failures
# fail; a failure of OFA's provider, the reference and not what is
# tested, is a skip that says so (on rxe its runs fail at times: its
# dapltest -T Q client has died of a segmentation fault). kdat's
# verdicts are kept in kdat_r, in order, for the reference to look up.
declare -a kdat_r=()
provider_result() {
	[ "$1" = "$KDAT" ] && kdat_r+=("$2")
	if [ "$2" != 0 ] && [ "$1" = "$OFA" ]; then
		result skip "$3 over $1" "the reference provider fails it on this device"
	else
		result "$2" "$3 over $1"
	fi
}

# The servers are ready when they listen; a fixed sleep is not enough on
# the debug kernel. Each waits SECONDS at most and says so when it gives up
# (the client then fails, visibly).

# descendants PID: PID and every process below it, as "p1|p2|...".
descendants() {
	local all=$1 next=$1 kids

	while kids=$(pgrep -d '|' -P "${next//|/,}") && [ -n "$kids" ]; do
		all+="|$kids"
		next=$kids
	done
	echo "$all"
}

# dtest_pair OUT SERVER... -- CLIENT...: a dtest server (SERVER: a command
# and its arguments, in the background) and its client, their outputs in
# OUT.srv and OUT.cli; their exit statuses in dtest_src and dtest_crc, 0
# when both are 0. dtest's server hands its parameters out over TCP
# before it creates its PSP (dtest.c's connect_ep(): send_server_params(),
# then dat_psp_create()), so with a server slow enough to get there (a
# stalled guest) the client connects before anything listens and the CM
# rejects it: NON_PEER_REJECTED, what DAT says of a request no listener
# takes. When the client failed so, while its server still runs and has
# said no error (it then waits for a request that came and went), the
# server is killed, the first outputs kept as OUT.srv.1 and OUT.cli.1,
# and the pair run once more, said on a comment line. Once only: a
# provider that rejects every time fails; one that rejects rarely, by the
# same signature, can pass on the second run.
dtest_pair() {
	local out=$1 srv=() cli=() try spid pids p i

	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		srv+=("$1")
		shift
	done
	[ $# -gt 0 ] || { echo "dtest_pair: no -- before the client" >&2; return 2; }
	shift
	cli=("$@")
	for try in 1 2; do
		dtest_src=0 dtest_crc=0
		"${srv[@]}" > "$out.srv" 2>&1 &
		spid=$!
		wait_tcp_listen "$spid" 60
		"${cli[@]}" > "$out.cli" 2>&1 || dtest_crc=$?
		if [ $try = 1 ] && [ $dtest_crc != 0 ] &&
			grep -q 'unexpected conn event.*NON_PEER_REJECTED' \
				"$out.cli"; then
			sleep 1
			pids=$(descendants "$spid")
			if [ "$(awk '{print $3}' "/proc/$spid/stat" 2>/dev/null)" = S ] &&
				! grep -qi error "$out.srv"; then
				# shellcheck disable=SC2046 # a list of pids
				kill $(tr '|' ' ' <<< "$pids") 2> /dev/null
				wait "$spid"
				# Every one of them gone (a zombie is gone too).
				for ((i = 0; i < 100; i++)); do
					for p in ${pids//|/ }; do
						[ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" ] &&
							[ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ] &&
							break
						p=
					done
					[ -z "$p" ] && break
					sleep 0.1
				done
				mv "$out.srv" "$out.srv.1"
				mv "$out.cli" "$out.cli.1"
				echo "# $(basename "$out"): $(grep -m1 'unexpected conn event' "$out.cli.1"), its server still waiting for a request (dtest's own race: the server sends its parameters, then creates its PSP); once more"
				continue
			fi
		fi
		wait "$spid" || dtest_src=$?
		break
	done
	[ $dtest_src = 0 ] && [ $dtest_crc = 0 ]
}

# wait_tcp_listen PID SECONDS: PID or a process below it (PID may be a
# subshell or timeout(1) running the server) listens on a TCP port
# (dtest's server hands its parameters out over TCP).
wait_tcp_listen() {
	local pid=$1 i pids socks
	for ((i = 0; i < $2 * 10; i++)); do
		# A server that has died (or is a zombie) will not listen.
		if ! [ -d "/proc/$pid" ] ||
			[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ]
		then
			echo "# pid $pid exited before it listened on TCP"
			return 1
		fi
		pids=$(descendants "$pid")
		socks=$(ss -ltnpH 2>/dev/null)
		[[ $socks =~ pid=($pids), ]] && return 0
		sleep 0.1
	done
	echo "# no TCP listener from pid $pid after $2 s"
	return 1
}

# dapltest_lost_sync_ack CLIENT_OUTPUT: the -T P client failed only
# because its last message, the sync send, was flushed. dapltest's server
# tears its connection down (abrupt disconnect) as soon as it has received
# that message; a responder that completes a receive before it sends the
# ACK (6.12's rxe does both in a kworker that can be preempted between
# them, rxe_resp.c's "finish:") then never acknowledges it, and the
# client's send completes flushed (rxe's counters: one more rdma_recvs
# than rdma_sends). DAT leaves a failed DTO's length undefined: over kdat
# (length 0) the client also prints a length mismatch, over OFA's
# provider it has printed the sync line alone. Every data operation was
# reaped before the sync: the sync line must be there, and no error line
# but those two.
dapltest_lost_sync_ack() {
	local sync='Client_Sync_Send-reaping DTO problem, status = FAILURE'

	grep -q "$sync" "$1" &&
		! grep -i 'error\|fail\|cannot\|mismatch' "$1" |
			grep -vF "$sync" |
			grep -qv '^[[:space:]]*Length mismatch (xfer 0x0 wanted 0xc)$'
}

# dapltest_client OUT SECONDS ARGS...: one dapltest client, `dapltest
# ARGS` (ARGS from -T on), for SECONDS at most, its output in OUT. Its
# rates (WQE/Sec, Bandwidth) are printed as TAP comments. It fails when
# dapltest fails or prints an error line, and prints the first five of
# them. A -T P run that failed only because its sync send's ACK was lost
# (dapltest_lost_sync_ack; the server saw every message, so it has no
# error to print) runs once more, and says so. The server's verdict is
# the caller's.
dapltest_client() {
	local out=$1 secs=$2 r try
	shift 2
	for try in 1 2; do
		r=0
		timeout "$secs" dapltest "$@" > "$out" 2>&1 || r=1
		[ $try = 1 ] && [ "$2" = P ] && dapltest_lost_sync_ack "$out" ||
			break
		echo "# dapltest $*: the sync send's ACK was lost to the server's teardown; once more"
	done
	grep -qi 'error\|fail\|cannot' "$out" && r=1
	grep -h 'WQE/Sec\|Bandwidth' "$out" | sed 's/^/# /'
	[ $r = 0 ] ||
		grep -hi 'error\|fail\|cannot\|mismatch' "$out" | head -5 |
			sed 's/^/# /'
	return $r
}

# dapltest_p_wqes ITERATIONS: the WQEs a dapltest -T P client posts for
# -i ITERATIONS: ITERATIONS pipelined (its phase 1, at the -p depth), then
# ITERATIONS one at a time, each polled for before the next (phase 2, the
# latency), as dapltest's performance client does; each one signalled.
dapltest_p_wqes() { echo $((2 * $1)); }

# rdma_listeners: how many RDMA CM ids listen now, user's and kernel's.
rdma_listeners() {
	local ids

	ids=$(rdma resource show cm_id 2>/dev/null)
	grep -c 'state LISTEN' <<< "$ids"
}

# dapltest's server runs one -T P test at a time (it holds a lock from a
# performance test's start to its end, as its source says, so that two
# tests never share a service point): N clients against one server run one
# after another. The benchmarks that run N at once give each client a
# server of its own, on its own port: dapl_port I is the Ith's (dapltest
# -n; its default is 42768, and each test a server runs takes the next
# port numbers above its own).
dapl_port() { echo $((42768 + 100 * $1)); }

# dapl_quit PROVIDER I PID: stop the Ith server (dapltest -T Q on its
# port), PID its process (or a shell running it); if the quit fails (a
# server whose client failed may be waiting for it still), PID and every
# process below it are killed.
dapl_quit() {
	timeout 30 dapltest -T Q -D "$1" -n "$(dapl_port "$2")" \
		-s "$KDAT_TEST_IP" > /dev/null 2>&1 ||
		kill -9 $(descendants "$3" | tr '|' ' ') 2> /dev/null
	wait "$3" 2> /dev/null || true
}

# wait_rdma_listen BEFORE SECONDS: more RDMA CM listeners than BEFORE
# (dapltest's server listens on its service point).
wait_rdma_listen() {
	local i

	for ((i = 0; i < $2 * 10; i++)); do
		[ "$(rdma_listeners)" -gt "$1" ] && return 0
		sleep 0.1
	done
	echo "# no new RDMA CM listener after $2 s"
	return 1
}
