#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/kernel-splat-check on sample console lines: each kernel problem
# it must report fails a log, a user process's fault (dapl2-utils' OFA
# runs have segfaulted in librdmacm) does not, and one splat among user
# faults still fails it.
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0

# check WANT LINE: WANT 1 = reported, 0 = clean.
check() {
	local got=0

	printf '%s\n' "$2" > "$dir/log"
	"$top/scripts/kernel-splat-check" "$dir/log" > /dev/null || got=1
	if [ "$got" != "$1" ]; then
		echo "# want $1, got $got: $2"
		fail=1
	fi
}

user='[  81.1] traps: dtestsrq[812] general protection fault ip:7f2c sp:7ffd error:0 in librdmacm.so.1.3.43.0[7f2c+6000]'
check 0 "$user"
check 0 '[  81.2] traps: dtestx[90] trap invalid opcode ip:55f0 sp:7ffc error:0 in dtestx[55f0+3000]'
check 0 '[  81.3] rdma_rxe: loaded'
check 1 '[  82.0] general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#1] PREEMPT SMP'
check 1 '[  82.0] WARNING: CPU: 1 PID: 77 at kernel/kdat_ep.c:100 kdat_ep_x+0x1/0x2 [kdat]'
check 1 '[  82.0] BUG: KASAN: slab-use-after-free in kdat_evd_push+0x10/0x90 [kdat]'
check 1 '[  82.0] kdat: EP 12: receive queue did not drain'
check 1 "$user
[  82.1] BUG: unable to handle page fault for address: ffff888000000000
$user"
# A fault-injection sweep's window: its allocation-failure stacks are no
# splat, anything else in it and a stack after it still are.
alloc='[  83.0] kdat_hostile_te: vmalloc error: size 16768, vm_struct allocation failed
[  83.0] Call Trace:'
check 0 "[  82.9] kdat-test: fault injection on
$alloc
[  83.1] kdat-test: fault injection off"
check 1 "[  82.9] kdat-test: fault injection on
[  83.0] WARNING: CPU: 0 PID: 7 at kernel/kdat_srq.c:1 kdat_srq_x+0x1/0x2 [kdat]
[  83.1] kdat-test: fault injection off"
check 1 "[  82.9] kdat-test: fault injection on
[  83.1] kdat-test: fault injection off
$alloc"
[ "$fail" = 0 ] && echo "# kernel-splat-check: 11 samples as expected"
exit "$fail"
