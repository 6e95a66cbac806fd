#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kdat-stat and the netlink dump under it (kernel/kdat_nl.c). A ping-pong
# (kdat-bench lat, two connected EPs in one process, rings and poller)
# runs in the background:
#  - its IA, EPs, LMRs and EVDs are listed under its pid and name; the
#    IAs on their link (DEV/PORT), the EPs CONNECTED between the test
#    address and itself, their QP numbers (lqpn) those rdma res show qp
#    lists, their counters growing between two dumps, the LMRs' pinned
#    bytes counted;
#  - -j prints JSON that parses, with the same objects and rdma's keys
#    (ifname, port, lqpn); -j -p pretty JSON that parses too, the same
#    objects; -d adds the EVDs' flags by name;
#  - the filters (a type, state, pid, link DEV and DEV/PORT, lqpn) select
#    what they say;
#  - --help prints the usage and exits 0; a bad filter, a bad value or an
#    unknown option exits 2 with a message naming it;
#  - another user sees none of root's objects and their own; root sees
#    theirs;
#  - a PID namespace sees its own processes' objects under the PIDs it
#    gives them, and none of the processes it does not see;
#  - dumps in a loop beside programs that make and destroy objects, and
#    beside a kill, all succeed (the debug kernel checks the rest);
#  - once the program is killed, nothing of its pid is listed.
#
# Needs root, kdat.ko loaded, the testbed's device (KDAT_TEST_DEV,
# KDAT_TEST_IP).
set -uo pipefail
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/tap.sh"	# skip_all, result, totals
[ "$(id -u)" = 0 ] || skip_all "needs root"
[ -c /dev/kdat ] || skip_all "no /dev/kdat"
[ -n "${KDAT_TEST_DEV:-}" ] && [ -n "${KDAT_TEST_IP:-}" ] ||
	skip_all "no RDMA device with an address (KDAT_TEST_DEV, KDAT_TEST_IP)"
STAT=$TOP/user/kdat-stat BENCH=$TOP/user/kdat-bench
[ -x "$STAT" ] && [ -x "$BENCH" ] || skip_all "kdat-stat or kdat-bench not built (make)"
command -v python3 > /dev/null || skip_all "no python3 (to parse the JSON)"
command -v setpriv > /dev/null || skip_all "no setpriv (util-linux)"
work=$(mktemp -d)
mode0=$(stat -c %a /dev/kdat)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2> /dev/null; done
	wait 2> /dev/null
	chmod "$mode0" /dev/kdat
	rm -rf "$work"
}
trap cleanup EXIT
ia=$KDAT_TEST_DEV:${KDAT_TEST_PORT:-1}
n=0 fail=0
echo "TAP version 13"
echo "1..13"

# pingpong: a ping-pong in one process (two EPs), in the background; its
# pid in $pp.
pingpong() {
	"$BENCH" --loopback -d "$ia" --lat -s 64 -n 100000000 "$KDAT_TEST_IP" > "$work/bench.out" 2>&1 &
	pp=$!
	pids+=("$pp")
}

# pair USER QUAL COUNT: a kdat-bench server and a client doing COUNT
# ping-pongs, two processes of USER, in the background; the server's pid
# in $srv, the client's in $cli.
pair() {
	local as=(setpriv --reuid="$1" --regid="$1" --clear-groups)
	"${as[@]}" "$BENCH" -d "$ia" -p "$2" > "$work/srv.$2" 2>&1 &
	srv=$!
	sleep 1
	"${as[@]}" "$BENCH" -d "$ia" -p "$2" --lat -s 64 -n "$3" "$KDAT_TEST_IP" \
		> "$work/cli.$2" 2>&1 &
	cli=$!
	pids+=("$srv" "$cli")
}

# connected PID [N]: wait (30 s) until PID's N EPs (2) are CONNECTED and
# have sent something.
connected() {
	local i
	for ((i = 0; i < 300; i++)); do
		[ "$("$STAT" ep state CONNECTED pid "$1" | grep -c ' sent [1-9]')" = "${2:-2}" ] &&
			return 0
		sleep 0.1
	done
	return 1
}

pingpong
bench=$pp
connected "$bench"
r=$?
"$STAT" pid "$bench" > "$work/s1"
sleep 1
"$STAT" pid "$bench" > "$work/s2"
sed 's/^/# /' "$work/s2"
grep -q "^pid $bench kdat-bench: ia 2 ep 2 " "$work/s1" || r=1
[ "$(grep -c "^  ia [0-9]* link $KDAT_TEST_DEV/${KDAT_TEST_PORT:-1} poller adaptive running\( users [0-9]*\)\?$" "$work/s1")" = 2 ] || r=1
[ "$(grep -c " CONNECTED lqpn [0-9]* $KDAT_TEST_IP:[0-9]* -> $KDAT_TEST_IP:[0-9]* sq [0-9]*/[0-9]* rq [0-9]*/[0-9]* .* rings" "$work/s1")" = 2 ] || r=1
grep -q "^  lmr .* pinned [1-9]" "$work/s1" || r=1
result $r "the ping-pong's IAs (link, poller), EPs (CONNECTED, lqpn, addresses, queues) and LMRs (pinned bytes) under its pid"

# The counters grow: the sum of sent over the EPs, one dump to the next.
sent() { awk '/^  ep / { for (i = 1; i < NF; i++) if ($i == "sent") s += $(i + 1) } END { print s + 0 }' "$1"; }
a=$(sent "$work/s1") b=$(sent "$work/s2")
echo "# sent: $a, then $b a second later"
[ "$b" -gt "$a" ] && grep -q ' errors 0' "$work/s2"
result $? "an EP's counters grow while it runs (sent $a, then $b), no errors"

# The QP numbers are those of kdat's kernel QPs in rdma res show qp.
r=0
qpns=$(awk '/^  ep / { for (i = 1; i < NF; i++) if ($i == "lqpn") print $(i + 1) }' "$work/s1")
rdma res show qp link "$KDAT_TEST_DEV/${KDAT_TEST_PORT:-1}" > "$work/res" 2>&1 || r=1
for q in $qpns; do
	grep -q "lqpn $q .*state RTS.* comm \[kdat\]" "$work/res" ||
		{ echo "# lqpn $q: no RTS QP of [kdat] in rdma res show qp"; r=1; }
done
[ -n "$qpns" ] || r=1
grep "lqpn" "$work/res" | sed 's/^/# rdma: /'
result $r "each EP's lqpn is an RTS QP of [kdat] in rdma res show qp ($(echo $qpns))"

# JSON: parses, the same objects, rdma's keys where rdma has them; on one
# line, as rdma -j.
r=0
"$STAT" -j pid "$bench" > "$work/j" || r=1
[ "$(wc -l < "$work/j")" = 1 ] || { echo "# -j: not one line"; r=1; }
python3 - "$work/j" "$bench" "$KDAT_TEST_DEV" "${KDAT_TEST_PORT:-1}" \
	"$KDAT_TEST_IP" <<'EOF' || r=1
import json, sys
objs = json.load(open(sys.argv[1]))
pid, dev, port, ip = int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
eps = [o for o in objs if o["type"] == "ep"]
assert all(o["pid"] == pid for o in objs), "another pid"
assert all(o["comm"] == "kdat-bench" for o in objs), "another comm"
assert all(o["ifname"] == dev and o["port"] == port for o in objs), \
    "not all on %s/%d: %s" % (dev, port, objs)
assert len(eps) == 2 and all(e["state"] == "CONNECTED" for e in eps), eps
assert all(e["lqpn"] > 0 and e["sq_depth"] > 0 for e in eps), eps
assert all(e["src-addr"] == ip and e["dst-addr"] == ip for e in eps), eps
assert all(e["src-port"] > 0 and e["dst-port"] > 0 for e in eps), eps
assert not any(k in o for o in objs for k in ("qpn", "dev", "src", "dst")), \
    "an old key"
assert sum(o.get("pinned", 0) for o in objs) > 0, "no pinned bytes"
assert all(o["mrlen"] > 0 for o in objs if o["type"] == "lmr"), "mrlen"
print("# json: %d objects, %d EPs" % (len(objs), len(eps)))
EOF
result $r "-j: JSON on one line that parses, the same EPs (state, lqpn, ifname, port, addresses, depths) and pinned bytes"

# -j -p: pretty JSON, a member a line; the objects of -j; with -d the
# EVDs' flags by name.
r=0
"$STAT" -j -p -d pid "$bench" > "$work/jp" || r=1
python3 -m json.tool "$work/jp" > /dev/null || r=1
lines=$(wc -l < "$work/jp")
if [ "$lines" -lt 20 ] || ! grep -q '^        "lqpn": [1-9]' "$work/jp"; then
	echo "# -j -p: not indented, a member a line ($lines lines):"
	head -n 5 "$work/jp" | sed 's/^/#   /'
	r=1
fi
python3 - "$work/j" "$work/jp" <<'EOF' || r=1
import json, sys
one = json.load(open(sys.argv[1]))
pretty = json.load(open(sys.argv[2]))
def key(o):
    return (o["type"], o["handle"])
assert sorted(map(key, one)) == sorted(map(key, pretty)), "other objects"
evds = [o for o in pretty if o["type"] == "evd"]
assert evds and all(isinstance(e["flag_names"], list) for e in evds), evds
assert any("DTO" in e["flag_names"] for e in evds), evds
assert not any("flag_names" in o for o in one), "flag_names without -d"
print("# -j -p -d: %d objects, %d EVDs with flag names" % (len(pretty), len(evds)))
EOF
result $r "-j -p: pretty JSON that python3 -m json.tool parses, the objects of -j; -d: the EVDs' flag names"

# Filters: a type, a state, a pid.
r=0
[ "$(grep -v '^pid ' <<< "$("$STAT" pid "$bench" lmr)" | grep -cv '^  lmr ')" != 0 ] && r=1
grep -q '^  lmr ' <<< "$("$STAT" pid "$bench" lmr)" || r=1
grep -q '^  ep ' <<< "$("$STAT" pid "$bench" ep state UNCONNECTED)" && r=1
[ "$("$STAT" ep state connected pid "$bench" | grep -c '^  ep ')" = 2 ] || r=1
# pid: that process's objects only, by a number, a range, a list.
for sel in "$bench" "$bench-$bench" "1,$bench"; do
	out=$("$STAT" pid "$sel")
	grep -q "^pid $bench kdat-bench:" <<< "$out" ||
		{ echo "# pid $sel: not $bench"; r=1; }
	[ "$(grep '^pid ' <<< "$out" | grep -cv "^pid \($bench\|1\) ")" = 0 ] ||
		{ echo "# pid $sel: another process"; r=1; }
done
[ -n "$("$STAT" pid 999999999)" ] && r=1
[ "$("$STAT" -j pid 999999999)" = "[]" ] || r=1
result $r "filters: a type, a state, a pid (a number, a range, a list) select only what they name"

# Filters: link DEV and DEV/PORT (as rdma res show qp link), lqpn; -d
# shows every object's link.
r=0
port=${KDAT_TEST_PORT:-1}
link=$KDAT_TEST_DEV/$port
[ -n "$("$STAT" link no-such-device)" ] && r=1
[ "$("$STAT" pid "$bench" ep link "$KDAT_TEST_DEV" | grep -c '^  ep ')" = 2 ] || r=1
[ "$("$STAT" pid "$bench" ep link "$link" | grep -c '^  ep ')" = 2 ] || r=1
[ "$("$STAT" pid "$bench" ia link "$link" | grep -c "^  ia [0-9]* link $link ")" = 2 ] || r=1
grep -q '^  ' <<< "$("$STAT" pid "$bench" link "$KDAT_TEST_DEV/$((port + 1))")" &&
	{ echo "# link $KDAT_TEST_DEV/$((port + 1)): the ping-pong's objects"; r=1; }
[ "$("$STAT" -d pid "$bench" | grep '^  ' | grep -cvE " link $link( |\$)")" = 0 ] || r=1
read -r q1 q2 _ <<< "${qpns//$'\n'/ }"
if [ -n "${q2:-}" ]; then
	out=$("$STAT" pid "$bench" ep lqpn "$q1")
	if [ "$(grep -c '^  ep ' <<< "$out")" != 1 ] || ! grep -q " lqpn $q1 " <<< "$out"; then
		echo "# lqpn $q1: not that one EP"
		r=1
	fi
	lo=$((q1 < q2 ? q1 : q2)) hi=$((q1 < q2 ? q2 : q1))
	[ "$("$STAT" pid "$bench" lqpn "$lo-$hi" | grep -c '^  ep ')" = 2 ] || r=1
	[ "$("$STAT" pid "$bench" lqpn "$q1,$q2" | grep -c '^  ep ')" = 2 ] || r=1
else
	echo "# no two lqpn to filter on: '$qpns'"
	r=1
fi
result $r "filters: link DEV, link DEV/PORT, lqpn (a number, a range, a list) select only what they name; -d: each object's link"

# The command line, as rdma's and every kdat tool's: --help on stdout,
# exit 0; a bad filter or value, or an unknown option: a message naming
# it on stderr, exit 2, nothing on stdout.
r=0
"$STAT" --help > "$work/out" 2> "$work/err" || r=1
if ! grep -q '^usage: kdat-stat' "$work/out" || [ -s "$work/err" ]; then
	echo "# --help: no usage on stdout, or something on stderr"
	r=1
fi
# BAD ARGUMENTS|WHAT THE MESSAGE NAMES
while IFS='|' read -r bad word; do
	read -ra args <<< "$bad"
	"$STAT" "${args[@]}" < /dev/null > "$work/out" 2> "$work/err"
	rc=$?
	if [ "$rc" != 2 ] || [ -s "$work/out" ] ||
		! grep -qF -- "kdat-stat: " "$work/err" ||
		! grep -qF -- "$word" "$work/err"; then
		echo "# kdat-stat $bad: exit $rc, stderr:"
		sed 's/^/#   /' "$work/err" | head -n 2
		r=1
	fi
done <<EOF
bogusfilter|'bogusfilter'
pid|'pid'
pid x|'x'
link $KDAT_TEST_DEV/0|'$KDAT_TEST_DEV/0'
state NOSUCHSTATE|'NOSUCHSTATE'
lqpn 5-1|'5-1'
dev $KDAT_TEST_DEV|'dev'
-p $bench|'$bench'
pid 1 pid 2|'pid'
-x|'-x'
--no-such-option|'--no-such-option'
EOF
result $r "--help: usage on stdout, exit 0; a bad filter, value or option: a message naming it, exit 2"

# Another user: a ping-pong of nobody's (a server and a client) beside
# root's.
chmod 666 /dev/kdat
pair 65534 7601 100000000
other=$srv
r=0
connected "$srv" 1 && connected "$cli" 1 || {
	echo "# nobody's ping-pong did not connect:"
	sed 's/^/#   /' "$work/srv.7601" "$work/cli.7601"
	r=1
}
as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
"${as_nobody[@]}" "$STAT" > "$work/nobody" || r=1
sed 's/^/# nobody sees: /' "$work/nobody" | grep -v '^# nobody sees:   [a-z]'
grep -q "^pid $srv kdat-bench:" "$work/nobody" &&
	grep -q "^pid $cli kdat-bench:" "$work/nobody" ||
	{ echo "# nobody does not see $srv and $cli; root sees:"; "$STAT" | sed 's/^/#   /'; r=1; }
grep -q "^pid $bench " "$work/nobody" && r=1
grep -q "^pid $srv kdat-bench:" <<< "$("$STAT")" || r=1
result $r "another user sees their own objects and none of root's; root sees theirs"
kill -9 "$cli" 2> /dev/null
wait "$cli" 2> /dev/null

# PID namespaces: a holder of an IA started in a new one is listed there
# under its PID there, and outside under its PID outside; the ping-pong,
# which that namespace does not see, is not listed in it (before issue
# 44 every process was listed with its PID in the initial namespace).
r=0
if ! command -v unshare > /dev/null; then
	echo "# no unshare (util-linux)"
	r=1
else
	HOLD=$TOP/tests/selftests/kdat_hold_ia
	# shellcheck disable=SC2016 # expanded by the inner shell
	unshare --pid --fork --mount-proc bash -c '
		mkfifo "$1/in"
		"$2" "$3" "$4" < "$1/in" > "$1/hold" &
		echo $! > "$1/inner"
		exec 3> "$1/in"
		for ((i = 0; i < 100; i++)); do
			grep -q ready "$1/hold" && break
			sleep 0.1
		done
		"$5" -j > "$1/jns"
		# Held until the outer dump is made.
		for ((i = 0; i < 300; i++)); do
			[ -e "$1/outer-done" ] && break
			sleep 0.1
		done
		echo exit >&3
	' ns "$work" "$HOLD" "$KDAT_TEST_DEV" "${KDAT_TEST_PORT:-1}" \
		"$STAT" &
	nsjob=$!
	for ((i = 0; i < 100; i++)); do
		[ -s "$work/jns" ] && break
		sleep 0.1
	done
	hold=$(pgrep -f "^$HOLD $KDAT_TEST_DEV" | head -n1)
	"$STAT" -j > "$work/jout"
	touch "$work/outer-done"
	wait "$nsjob"
	python3 - "$work/jns" "$work/jout" "$(cat "$work/inner" 2> /dev/null)" \
		"${hold:-0}" "$bench" <<'EOF' || r=1
import json, sys
inside = json.load(open(sys.argv[1]))
outside = json.load(open(sys.argv[2]))
inner, outer, bench = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
pids_in = sorted({o["pid"] for o in inside})
print("# inside the namespace: pids %s (the holder is %d there)" % (pids_in, inner))
print("# outside: the holder is %d" % outer)
assert pids_in == [inner], "inside sees %s, want only %d" % (pids_in, inner)
assert any(o["pid"] == outer and o["type"] == "ia" for o in outside), \
    "outside: no IA under %d" % outer
assert any(o["pid"] == bench for o in outside), "outside: no ping-pong"
EOF
fi
result $r "a PID namespace lists its own processes' objects under its PIDs, and no others"

# An IA whose opener exited, its file held by the opener's child: listed
# under PID 0, not under the opener's PID, which a new process may take
# (before issue 44 the dead opener's PID was shown).
r=0
HOLD=$TOP/tests/selftests/kdat_hold_ia
mkfifo "$work/fin"
"$HOLD" "$KDAT_TEST_DEV" "${KDAT_TEST_PORT:-1}" < "$work/fin" \
	> "$work/fhold" &
opener=$!
exec 7> "$work/fin"
for ((i = 0; i < 100; i++)); do
	grep -q '^ready' "$work/fhold" && break
	sleep 0.1
done
echo fork >&7
wait "$opener"
for ((i = 0; i < 100; i++)); do
	grep -q '^forked' "$work/fhold" && break
	sleep 0.1
done
holder=$(awk '/^forked/ { print $2 }' "$work/fhold")
"$STAT" -j > "$work/jorph" || r=1
echo exit >&7
exec 7>&-
python3 - "$work/jorph" "$opener" "${holder:-0}" <<'EOF' || r=1
import json, sys
objs = json.load(open(sys.argv[1]))
opener, holder = int(sys.argv[2]), int(sys.argv[3])
mine = [o for o in objs if o["comm"] == "kdat_hold_ia" and o["type"] == "ia"]
print("# opener %d exited, child %d holds: listed under %s" %
      (opener, holder, sorted({o["pid"] for o in mine})))
assert holder > 0, "no child"
assert not any(o["pid"] == opener for o in objs), "the dead opener's PID"
assert [o["pid"] for o in mine] == [0], "want one IA under PID 0"
EOF
result $r "an IA whose opener exited is listed under PID 0, not the opener's"

# Dumps beside objects made and destroyed: short ping-pongs (a server and
# a client), and ping-pongs killed mid-way, while kdat-stat runs in a
# loop; 6 rounds, 3 on a slow kernel (KDAT_T_SLOW: the debug kernel), and
# more (up to 20) until the loop has made 5 dumps: on the debug kernel a
# dump and the JSON check can take as long as a round.
r=0
rounds=$(( ${KDAT_T_SLOW:-1} > 1 ? 3 : 6 ))
(
	for ((i = 0; i < 20; i++)); do
		[ $i -ge $rounds ] && [ -e "$work/dumped" ] && break
		pair 0 $((7700 + i)) 50
		wait "$cli" "$srv"
		pair 0 $((7800 + i)) 100000000
		sleep 0.5
		kill -9 "$cli" "$srv" 2> /dev/null
		wait "$cli" "$srv" 2> /dev/null
	done
) &
churn=$!
dumps=0
while kill -0 "$churn" 2> /dev/null; do
	"$STAT" > /dev/null || { echo "# kdat-stat failed"; r=1; }
	"$STAT" -j > "$work/jj" || r=1
	python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$work/jj" || r=1
	dumps=$((dumps + 1))
	[ $dumps = 5 ] && touch "$work/dumped"
done
wait "$churn"
[ $dumps -ge 5 ] || r=1
result $r "$dumps dumps, text and JSON, beside programs making, destroying and killed with their objects"

# Killed: nothing of its pid is left.
kill -9 "$bench" "$other" 2> /dev/null
wait "$bench" "$other" 2> /dev/null
r=0
for ((i = 0; i < 100; i++)); do
	grep -q "^pid \($bench\|$other\) " <<< "$("$STAT")" || break
	sleep 0.1
done
grep -q "^pid \($bench\|$other\) " <<< "$("$STAT")" && r=1
left=$("$STAT" | grep -c '^pid ')
[ "$left" = 0 ] || { "$STAT" | sed 's/^/# left: /'; r=1; }
result $r "the killed programs' objects are gone; nothing is listed"
totals
