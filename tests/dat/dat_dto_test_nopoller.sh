#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/dat/dat_dto_test over rings without a poller thread
# (KDAT_POLLER=none): every post a doorbell that takes it in the caller's
# context, every completion read from the ring. The other two modes:
# dat_dto_test (rings with a poller), dat_dto_test_ioctl.sh (ioctls).
KDAT_POLLER=none exec "$(dirname "${BASH_SOURCE[0]}")/dat_dto_test" "$@"
