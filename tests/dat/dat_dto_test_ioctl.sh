#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/dat/dat_dto_test over libdat's ioctl path (KDAT_RINGS=0): every
# post and dequeue a system call. The suite without it runs the rings.
KDAT_RINGS=0 exec "$(dirname "${BASH_SOURCE[0]}")/dat_dto_test" "$@"
