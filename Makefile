# SPDX-License-Identifier: GPL-2.0
#
# kdat top-level Makefile.
#
#   make            kdat.ko, libdat.so, the tests and tools, the sample
#                   kernel consumer (tests/kernel/kdat_consumer.ko)
#   make check      every test suite on Debian's kernels 6.1 and 6.12
#                   (doc/testing.md: what 6.12's pass leaves to 6.1's),
#                   the DAT suites over Soft-iWARP and the packages, in
#                   the VM testbed (scripts/vm-run)
#   make check-debug  tests/suites.debug on the debug kernel (built from
#                   linux-source-6.12; CI runs it after make check)
#   make check-twohost  the two-host suites (CI runs them after make check)
#   make check-faults  the fault-injection sweeps and the fuzzer on the
#                   debug kernel (CI runs them after make check)
#   make check-hog  make check with a busy loop per host CPU beside it
#   make check-debug-all  every suite on the debug kernel
#   make check-debug-6.1  tests/suites.debug on a debug kernel built
#                   from linux-source-6.1
#   make check-6.12 every suite on Debian's 6.12 kernel
#   make check-siw  the DAT suite over Soft-iWARP (siw.ko built out of tree)
#   make check-siw-6.12  the same on Debian's 6.12 kernel
#   make demo       the demo, in the VM testbed
#   make lint       checkpatch + sparse on the kernel code
#   make fuzz       the fuzzer on the debug kernel for FUZZ_S seconds
#                   (default 600; FUZZ_SEED=N replays a run)
#   make storm      1000 processes killed mid-transfer, 50 device removals
#                   under traffic, on the debug kernel
#   make compat     the whole dapltest matrix, the interop suite and
#                   dtestcm/dtestsrq with OFA DAPL (also under load), in
#                   the VM testbed
#   make bench      kdat beside OFA DAPL and perftest, in one testbed run:
#                   doc/performance.md and doc/bench.png (on 6.1; with
#                   KVER=6.12 on 6.12: doc/performance-6.12.md)
#   make deb        the Debian packages, in build/deb/ (scripts/deb)
#   make install-libdat2 / uninstall-libdat2
#                   libdat in the place of OFA's libdat2 (dpkg-divert), and
#                   back
#
# KDIR: the kernel build directory. Default: the running kernel's, if it has
# one, otherwise the newest Debian linux-headers-*-amd64 installed.

SHELL := /bin/bash
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))

KDIR ?= $(shell $(TOP)/scripts/kdir)
CC ?= gcc
CFLAGS ?= -O2 -g
# The version the tools print (--version): debian/changelog's first entry.
KDAT_VERSION := $(shell awk 'NR == 1 { gsub(/[()]/, "", $$2); print $$2 }' \
		  $(TOP)/debian/changelog)
TOOL_CFLAGS := -DKDAT_VERSION='"$(KDAT_VERSION)"'
KDAT_CFLAGS := -Wall -Wextra -Werror=implicit-function-declaration \
	-I$(TOP)/include/uapi -I$(TOP)/user -D_GNU_SOURCE -DDAT_EXTENSIONS

SETUP_STAMP := setup

LIB := user/libdat.so
LIB_SONAME := libdat.so.2
LIB_OBJS := user/kdat_lowlevel.o user/dat_core.o user/dat_ring.o \
	    user/dat_ia.o user/dat_mem.o user/dat_evd.o user/dat_cno.o \
	    user/dat_ep.o user/dat_cm.o user/dat_srq.o user/dat_dto.o \
	    user/dat_ext.o user/dat_ud.o \
	    user/dat_provider.o user/dat_registry.o user/dat_api.o
LIB_HDRS := include/uapi/linux/kdat.h user/kdat_lowlevel.h \
	    user/dat_internal.h user/dat_ring.h kernel/kdat_rules.h
TOOLS := user/kdat-info user/kdat-demo user/kdat-bench user/kdat-stat
SELFTESTS := tests/selftests/kdat_dev_test tests/selftests/kdat_hostile_test
DAT_TESTS := tests/dat/dat_dto_test tests/dat/dat_life_helper \
	     tests/dat/ring_test tests/dat/interop_cm tests/dat/registry_unit \
	     tests/dat/libregfake.so tests/dat/registry_two \
	     tests/twohost/dat_xfer tests/dat/readme_hello \
	     tests/dat/retcodes tests/dat/retcodes_ofa \
	     tests/dat/kdat-bench-dat2
TEST_HELPERS := tests/selftests/kdat_hold_ia
# The two-sided DAT fixture of the DAT test programs (DAT 2.0 API only).
DAT_PAIR := tests/lib/dat_pair.c
FUZZER := tests/fuzz/kdat_fuzz

.PHONY: all module kmod lib tools tests setup check check-debug check-debug-all check-debug-6.1 check-6.12 check-siw check-siw-6.12 check-twohost check-faults twohost-long twohost-bulk check-hog demo lint checkpatch sparse shellcheck bench bench-hwlike \
	clean install install-libdat2 uninstall-libdat2 deb fuzz storm compat FORCE

all: module kmod lib tools tests

# scripts/setup is run whenever a package is missing.
setup:
	@$(TOP)/scripts/setup --check >/dev/null || $(TOP)/scripts/setup

module: $(SETUP_STAMP)
	$(MAKE) -C $(KDIR) M=$(TOP) W=1 modules

# The sample kernel consumer links against kdat.ko's exports. Kbuild does
# not notice when their CRCs change (KBUILD_EXTRA_SYMBOLS is no
# prerequisite): dropping the consumer's symbol dump makes modpost run.
kmod: module
	rm -f $(TOP)/tests/kernel/Module.symvers
	$(MAKE) -C $(KDIR) M=$(TOP)/tests/kernel W=1 \
		KBUILD_EXTRA_SYMBOLS=$(TOP)/Module.symvers modules

lib: $(LIB) user/libdat2.so.2
tools: $(TOOLS)
tests: $(SELFTESTS) $(TEST_HELPERS) $(DAT_TESTS) $(FUZZER)

user/%.o: user/%.c $(LIB_HDRS) | $(SETUP_STAMP)
	$(CC) $(CFLAGS) $(KDAT_CFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<

$(LIB): $(LIB_OBJS) user/libdat.map
	$(CC) $(CFLAGS) -shared -Wl,-soname,$(LIB_SONAME) \
		-Wl,--version-script=user/libdat.map -Wl,-Bsymbolic-functions \
		-Wl,-z,defs -o $@.2 $(LIB_OBJS) -lpthread
	ln -sf libdat.so.2 $@

# libdat under libdat2's soname: what make install-libdat2 puts in the
# place of OFA's libdat2.
user/libdat2.so.2: $(LIB_OBJS) user/libdat.map
	$(CC) $(CFLAGS) -shared -Wl,-soname,libdat2.so.2 \
		-Wl,--version-script=user/libdat.map -Wl,-Bsymbolic-functions \
		-Wl,-z,defs -o $@ $(LIB_OBJS) -lpthread

# DAT 2.0 programs: the DAT headers and -ldat only.
user/kdat-bench: user/kdat-bench.c user/kdat_tool.h $(LIB)
	$(CC) $(CFLAGS) $(TOOL_CFLAGS) -Wall -Wextra -D_GNU_SOURCE -o $@ $< \
		-Luser -ldat \
		-Wl,-rpath,$(TOP)/user

user/kdat-demo: user/kdat-demo.c user/kdat_tool.h $(LIB)
	$(CC) $(CFLAGS) $(TOOL_CFLAGS) -Wall -Wextra -D_GNU_SOURCE -o $@ $< \
		-Luser -ldat \
		-Wl,-rpath,$(TOP)/user

user/kdat-info: user/kdat-info.c user/kdat_tool.h $(LIB)
	$(CC) $(CFLAGS) $(KDAT_CFLAGS) $(TOOL_CFLAGS) -o $@ $< -Luser -ldat \
		-Wl,-rpath,$(TOP)/user

# kdat-stat: netlink only, no libdat.
user/kdat-stat: user/kdat-stat.c user/kdat_tool.h include/uapi/linux/kdat.h \
		include/uapi/linux/kdat_netlink.h
	$(CC) $(CFLAGS) $(KDAT_CFLAGS) $(TOOL_CFLAGS) -o $@ $<

# The selftests run on the kernel's kselftest_harness.h, which scripts/setup
# takes out of Debian's linux-source-6.12 into a private cache
# (scripts/cache-dir ksft): its directory, looked up once, when a selftest
# is built. -isystem: the harness's own code is not held to our warnings.
KSFT_SRC := linux-source-6.12/tools/testing/selftests
KSFT_INC = $(eval KSFT_INC := $(shell $(TOP)/scripts/cache-dir ksft)/$(KSFT_SRC))$(KSFT_INC)

tests/selftests/%: tests/selftests/%.c tests/lib/kdat_harness.h \
		tests/selftests/kdat_util.h tests/selftests/kdat_objects.h \
		tests/lib/slow_fuse.h tests/lib/fail_nth.h tests/lib/rdma_dev.h \
		include/uapi/linux/kdat.h | $(SETUP_STAMP)
	$(CC) $(CFLAGS) $(KDAT_CFLAGS) -isystem $(KSFT_INC) -o $@ $< -lpthread

# The ring test also drives the uapi rings itself.
tests/dat/ring_test: tests/dat/ring_test.c tests/lib/kdat_harness.h $(LIB) \
		tests/selftests/kdat_objects.h tests/lib/fail_nth.h \
		$(DAT_PAIR) tests/lib/dat_pair.h include/uapi/linux/kdat.h \
		| $(SETUP_STAMP)
	$(CC) $(CFLAGS) $(KDAT_CFLAGS) -Wall -Wextra -D_GNU_SOURCE \
		-isystem $(KSFT_INC) -o $@ $< $(DAT_PAIR) -Luser -ldat \
		-Wl,-rpath,$(TOP)/user -lpthread

# The README's DAT program, built from the README's own text (its one C
# block), as a user would copy it; tests/demo.sh runs it.
tests/dat/readme_hello: README.md $(LIB)
	mkdir -p build
	sed -n '/^```c$$/,/^```$$/{/^```/d;p}' README.md > build/readme_hello.c
	$(CC) $(CFLAGS) -Wall -Wextra -Werror -o $@ build/readme_hello.c \
		-Luser -ldat -Wl,-rpath,$(TOP)/user

# The two-host transfer: a DAT program, -ldat (dat.conf picks the provider).
tests/twohost/dat_xfer: tests/twohost/dat_xfer.c $(LIB)
	$(CC) $(CFLAGS) -Wall -Wextra -D_GNU_SOURCE -o $@ $< -Luser -ldat \
		-Wl,-rpath,$(TOP)/user

# The fuzzer: the uapi header and the slow FUSE file, no libdat.
$(FUZZER): tests/fuzz/kdat_fuzz.c include/uapi/linux/kdat.h \
		tests/lib/slow_fuse.h | $(SETUP_STAMP)
	$(CC) $(CFLAGS) $(KDAT_CFLAGS) -o $@ $< -lpthread

# Both providers in one process: through OFA's registry, as Debian's DAT
# tools are built (the DAT headers only, -ldat2).
tests/dat/interop_cm: tests/dat/interop_cm.c $(DAT_PAIR) tests/lib/dat_pair.h \
		| $(SETUP_STAMP)
	$(CC) $(CFLAGS) -Wall -Wextra -D_GNU_SOURCE -o $@ $< $(DAT_PAIR) -ldat2

# The same calls against OFA's registry (-ldat2), for tests/dat/retcodes.sh
# to compare with tests/dat/retcodes (-ldat).
tests/dat/retcodes_ofa: tests/dat/retcodes.c $(DAT_PAIR) tests/lib/dat_pair.h \
		| $(SETUP_STAMP)
	$(CC) $(CFLAGS) -Wall -Wextra -D_GNU_SOURCE -o $@ $< $(DAT_PAIR) -ldat2

# kdat-bench against OFA's registry (-ldat2): scripts/bench's threads
# rows run it over OFA's provider and over kdat's, beside kdat-bench.
tests/dat/kdat-bench-dat2: user/kdat-bench.c user/kdat_tool.h | $(SETUP_STAMP)
	$(CC) $(CFLAGS) $(TOOL_CFLAGS) -Wall -Wextra -D_GNU_SOURCE -o $@ $< \
		-ldat2

# The registry's host test, and the DAT provider it loads through dat.conf
# (not linked to libdat: it finds the registry's functions at load, as
# OFA's providers do).
tests/dat/libregfake.so: tests/dat/registry_fake_provider.c
	$(CC) $(CFLAGS) -Wall -Wextra -DDAT_EXTENSIONS -fPIC -shared -o $@ $<

tests/dat/registry_unit: tests/dat/registry_unit.c tests/lib/kdat_harness.h \
		tests/lib/dat_expect.h \
		tests/dat/libregfake.so $(LIB) | $(SETUP_STAMP)
	$(CC) $(CFLAGS) -Wall -Wextra -D_GNU_SOURCE -DDAT_EXTENSIONS \
		-isystem $(KSFT_INC) -o $@ $< -Luser -ldat \
		-Wl,-rpath,$(TOP)/user

# dat_dto_test: one program, its cases in files by area (tests/dat/dto.h),
# which dat_dto_test.c includes: kselftest_harness.h's lists of cases are
# a translation unit's.
DTO_SRCS := tests/dat/dto_common.c \
	    tests/dat/dto_connect.c tests/dat/dto_post.c tests/dat/dto_rdma.c \
	    tests/dat/dto_srq.c tests/dat/dto_evd.c tests/dat/dto_ia.c \
	    tests/dat/dto_ext.c tests/dat/dto_ud.c
tests/dat/dat_dto_test: tests/dat/dat_dto_test.c $(DTO_SRCS) tests/dat/dto.h \
		tests/lib/kdat_harness.h tests/lib/dat_expect.h \
		tests/lib/rdma_dev.h tests/selftests/kdat_objects.h \
		$(DAT_PAIR) tests/lib/dat_pair.h $(LIB) | $(SETUP_STAMP)
	$(CC) $(CFLAGS) -Wall -Wextra -D_GNU_SOURCE -isystem $(KSFT_INC) \
		-o $@ $< $(DAT_PAIR) -Luser -ldat -Wl,-rpath,$(TOP)/user

# registry_two: a DAT program whose cases run on kselftest_harness.h.
tests/dat/registry_two: tests/dat/registry_two.c tests/lib/kdat_harness.h \
		tests/lib/dat_expect.h $(DAT_PAIR) tests/lib/dat_pair.h \
		$(LIB) | $(SETUP_STAMP)
	$(CC) $(CFLAGS) -Wall -Wextra -D_GNU_SOURCE -isystem $(KSFT_INC) \
		-o $@ $< $(DAT_PAIR) -Luser -ldat -Wl,-rpath,$(TOP)/user

# DAT programs: the DAT 2.0 headers from Debian's libdapl-dev, -ldat.
tests/dat/%: tests/dat/%.c tests/lib/rdma_dev.h \
		tests/selftests/kdat_objects.h $(DAT_PAIR) tests/lib/dat_pair.h \
		$(LIB)
	$(CC) $(CFLAGS) -Wall -Wextra -D_GNU_SOURCE -o $@ $< $(DAT_PAIR) \
		-Luser -ldat \
		-Wl,-rpath,$(TOP)/user

check: all
	$(TOP)/scripts/check

# Every suite on Debian's 6.12 kernel (kdat.ko built for it in build/6.12).
check-6.12: all
	KDAT_CHECK_KERNELS=6.12 $(TOP)/scripts/check

# The DAT suite over Soft-iWARP (tests/suites.siw; siw.ko from scripts/siw).
check-siw: all
	KDAT_CHECK_KERNELS=siw $(TOP)/scripts/check

# The same on Debian's 6.12 kernel (siw.ko and kdat.ko built for it).
check-siw-6.12: all
	KDAT_CHECK_KERNELS=siw-6.12 $(TOP)/scripts/check

# The two-host suites (tests/suites.twohost: two guests on one wire).
check-twohost: all
	KDAT_CHECK_KERNELS=twohost $(TOP)/scripts/check

# tests/suites.faults on the debug kernel: the fail_nth sweeps, the fuzzer.
check-faults: all
	KDAT_CHECK_KERNELS=faults $(TOP)/scripts/check

# Their long versions: every tool in every pairing of providers, 1 GiB
# through each lossy wire, 100 link flaps, 20 power cuts of the peer,
# kdat-bench and the kernel consumer across the wire.
TWOHOST_BYTES ?= 1073741824
TWOHOST_FLAPS ?= 100
TWOHOST_CUTS ?= 20
twohost-long: all
	KDAT_T_SUITE_TIMEOUT=14400 KDAT_VM_TIMEOUT=28800 \
		$(TOP)/scripts/vm-run --hosts 2 $(TOP)/tests/run-all \
		"tests/twohost/across.sh full" \
		"tests/twohost/wire.sh $(TWOHOST_BYTES) $(TWOHOST_BYTES) $(TWOHOST_FLAPS)" \
		"tests/twohost/powercut.sh $(TWOHOST_CUTS)" \
		tests/twohost/bench.sh tests/twohost/consumer.sh

# Issue 16's figure: 1 GiB through 1% and through 5% loss, every byte
# checked at the receiver (about 8 and 26 minutes in the testbed).
twohost-bulk: all
	KDAT_T_SUITE_TIMEOUT=14400 KDAT_VM_TIMEOUT=14400 \
		$(TOP)/scripts/vm-run --hosts 2 $(TOP)/tests/run-all \
		"tests/twohost/bulk.sh $(TWOHOST_BYTES) 1%" \
		"tests/twohost/bulk.sh $(TWOHOST_BYTES) 5%"

# tests/suites.debug on the debug kernel (KASAN, lockdep, kmemleak, KUnit;
# built from linux-source-6.12 when its cache is cold).
check-debug: all
	KDAT_CHECK_KERNELS=debug $(TOP)/scripts/check

# Every suite of tests/suites on the debug kernel, not only those of
# tests/suites.debug (more than an hour in the 2-CPU testbed).
check-debug-all: all
	KDAT_CHECK_KERNELS=debug KDAT_CHECK_DEBUG_SUITES=all \
		KDAT_VM_TIMEOUT=$${KDAT_VM_TIMEOUT:-10800} $(TOP)/scripts/check

# make check-debug on a debug kernel built from Debian's linux-source-6.1
# (make check-debug's is 6.12's).
check-debug-6.1: all
	KDAT_CHECK_KERNELS=debug KDAT_DEBUG_KVER=6.1 $(TOP)/scripts/check

# make check with a busy loop per host CPU beside the guest. Each guest
# gets two hours (KDAT_CHECK_ALSO=debug adds the debug pass, which alone
# takes more than one under the hog).
check-hog: all
	KDAT_VM_TIMEOUT=$${KDAT_VM_TIMEOUT:-7200} \
		$(TOP)/scripts/with-cpu-hog $(TOP)/scripts/check

# make demo HOSTS=2: across two guests on one wire.
HOSTS ?= 1
demo: all
	$(TOP)/scripts/vm-run --hosts $(HOSTS) $(TOP)/scripts/demo

# The tables on stdout and in vm-logs/bench.log; the ratios drawn in
# doc/bench.png; the run written up in doc/performance.md (its commit read
# before the plot rewrites doc/bench.png). On the stock testbed kernel
# (Debian 12's 6.1); make bench KVER=6.12 on Debian's 6.12, kdat.ko and
# the consumer built for it: vm-logs/bench-6.12.log, doc/bench-6.12.png,
# doc/performance-6.12.md.
bench: all
	mkdir -p $(TOP)/vm-logs
	set -e -o pipefail; sfx=; \
	if [ -n "$(KVER)" ]; then \
		k=$$(KDAT_KVER=$(KVER) $(TOP)/scripts/kdir); \
		m=$$($(TOP)/scripts/modules-for "$$k" $(TOP)/build/$(KVER)); \
		export KDAT_KO=$$m/kdat.ko; \
		export KDAT_TEST_CONSUMER_KO=$$m/tests/kernel/kdat_consumer.ko; \
		sfx=-$(KVER); \
	fi; \
	KDAT_VM_TIMEOUT=$${KDAT_VM_TIMEOUT:-10800} \
		$(TOP)/scripts/vm-run $(TOP)/scripts/bench | \
		tee $(TOP)/vm-logs/bench$$sfx.log; \
	$(TOP)/scripts/bench-report $(TOP)/vm-logs/bench$$sfx.log \
		bench$$sfx.png > $(TOP)/doc/performance$$sfx.md.new; \
	$(TOP)/scripts/bench-plot $(TOP)/vm-logs/bench$$sfx.log \
		$(TOP)/doc/bench$$sfx.png; \
	mv $(TOP)/doc/performance$$sfx.md.new $(TOP)/doc/performance$$sfx.md

# make bench's one-test rows on Debian's rxe and on the rxe of
# scripts/rxe-hwlike.patch, in one testbed run: vm-logs/bench-hwlike.log.
bench-hwlike: all
	mkdir -p $(TOP)/vm-logs
	ko=$$($(TOP)/scripts/rxe-hwlike) && set -o pipefail && \
		$(TOP)/scripts/vm-run $(TOP)/scripts/bench-hwlike "$$ko" | \
		tee $(TOP)/vm-logs/bench-hwlike.log

# The long runs, on the debug kernel; make check runs short versions of
# both (tests/suites). kmemleak is cleared before and scanned after.
FUZZ_S ?= 600
fuzz: all
	KDAT_T_FUZZ_SEED=$(FUZZ_SEED) KDAT_T_FUZZ_ARGS="$(FUZZ_ARGS)" \
		KDAT_T_SUITE_TIMEOUT=$$(( $(FUZZ_S) + 900 )) \
		$(TOP)/scripts/debug-vm-run \
		$(TOP)/tests/run-all "tests/kmemleak.sh clear" \
		"tests/fuzz/run.sh $(FUZZ_S)" "tests/kmemleak.sh scan"

STORM_KILLS ?= 1000
STORM_ROUNDS ?= 50
storm: all
	KDAT_T_STORM_SEED=$(STORM_SEED) $(TOP)/scripts/debug-vm-run \
		$(TOP)/tests/run-all "tests/kmemleak.sh clear" \
		"tests/storm.sh $(STORM_KILLS) $(STORM_ROUNDS)" \
		"tests/kmemleak.sh scan"

# Against OFA DAPL's cma provider on the stock kernel: the whole dapltest
# matrix (750 s in the testbed) and the interop suite with all its dtest
# sizes, quiet and loaded (330 s), and OFA's dtestsrq too (it hangs on rxe);
# make check runs bounded levels of the three.
compat: all
	KDAT_T_SUITE_TIMEOUT=10800 KDAT_VM_TIMEOUT=25200 \
		$(TOP)/scripts/vm-run $(TOP)/tests/run-all \
		"tests/dat/dapltest_matrix.sh full" "tests/dat/interop.sh full" \
		"tests/dat/dtestcm_srq_providers.sh full"

lint: checkpatch sparse shellcheck

checkpatch: $(SETUP_STAMP)
	$(TOP)/scripts/checkpatch

sparse: $(SETUP_STAMP)
	KDIR=$(KDIR) $(TOP)/scripts/sparse

shellcheck: $(SETUP_STAMP)
	$(TOP)/scripts/shellcheck

# make install [PREFIX=/usr/local] [DESTDIR=]: libdat (versioned, with
# its pkg-config file), kdat-info, kdat-bench, kdat-demo, kdat-stat,
# kdat-datconf,
# the uapi header, the manual, the udev rule that gives /dev/kdat to
# group rdma (UDEVDIR) and the commented list of the module's parameters
# (MODPROBEDIR/kdat.conf). kdat.ko goes with the kernel's own
# modules_install (make -C $(KDIR) M=$(TOP) modules_install), or DKMS
# (make deb: kdat-dkms).
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
# /etc with PREFIX /usr or /usr/local, else PREFIX/etc (udev and modprobe
# read only /etc and /lib: there, UDEVDIR and MODPROBEDIR say where).
SYSCONFDIR ?= $(if $(filter /usr /usr/local,$(PREFIX)),/etc,$(PREFIX)/etc)
UDEVDIR ?= $(SYSCONFDIR)/udev/rules.d
MODPROBEDIR ?= $(SYSCONFDIR)/modprobe.d
install: lib tools
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(BINDIR) \
		$(DESTDIR)$(INCDIR)/linux $(DESTDIR)$(UDEVDIR) \
		$(DESTDIR)$(MODPROBEDIR)
	for d in man1 man3 man4 man7; do \
		install -d $(DESTDIR)$(MANDIR)/$$d && \
		install -m 644 man/$$d/* $(DESTDIR)$(MANDIR)/$$d/ || exit 1; \
	done
	install -m 755 user/libdat.so.2 $(DESTDIR)$(LIBDIR)/libdat.so.2
	ln -sf libdat.so.2 $(DESTDIR)$(LIBDIR)/libdat.so
	install -m 644 include/uapi/linux/kdat.h \
		include/uapi/linux/kdat_netlink.h $(DESTDIR)$(INCDIR)/linux/
	install -m 755 user/kdat-stat $(DESTDIR)$(BINDIR)/kdat-stat
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCDIR@|$(INCDIR)|' user/libdat.pc.in \
		> $(DESTDIR)$(LIBDIR)/pkgconfig/libdat.pc
	$(CC) $(CFLAGS) $(KDAT_CFLAGS) $(TOOL_CFLAGS) \
		-o $(DESTDIR)$(BINDIR)/kdat-info user/kdat-info.c -Luser -ldat
	for t in kdat-bench kdat-demo; do \
		$(CC) $(CFLAGS) $(TOOL_CFLAGS) -Wall -Wextra -D_GNU_SOURCE \
			-o $(DESTDIR)$(BINDIR)/$$t user/$$t.c -Luser -ldat || \
			exit 1; \
	done
	install -m 644 scripts/udev/60-kdat.rules $(DESTDIR)$(UDEVDIR)/
	install -m 644 scripts/modprobe.d/kdat.conf $(DESTDIR)$(MODPROBEDIR)/
	sed -e 's|$$TOP/user/libdat.so.2|$(LIBDIR)/libdat.so.2|' \
		-e 's|@KDAT_VERSION@|$(KDAT_VERSION)|' \
		scripts/kdat-datconf > $(DESTDIR)$(BINDIR)/kdat-datconf
	chmod 755 $(DESTDIR)$(BINDIR)/kdat-datconf

# make deb: the Debian packages (debian/: kdat-dkms, libdat-kdat,
# libdat-kdat-dev, kdat-utils), binary only and unsigned, built with
# dpkg-buildpackage in a copy of the tree (build/deb/src), offline; the
# .deb files land in build/deb/ (scripts/deb).
deb: $(SETUP_STAMP)
	$(TOP)/scripts/deb

# make install-libdat2: libdat in the place of OFA's libdat2 (Debian's
# libdapl2) through a local dpkg diversion, so that unmodified DAT
# binaries run on libdat's registry; make uninstall-libdat2 undoes it
# and leaves nothing behind (scripts/libdat2-divert). Root's.
install-libdat2: user/libdat2.so.2
	$(TOP)/scripts/libdat2-divert install

uninstall-libdat2:
	$(TOP)/scripts/libdat2-divert uninstall

clean:
	-$(MAKE) -C $(KDIR) M=$(TOP) clean
	-$(MAKE) -C $(KDIR) M=$(TOP)/tests/kernel clean
	rm -f user/*.o user/*.so user/*.so.* $(TOOLS) $(SELFTESTS) \
		$(TEST_HELPERS) $(DAT_TESTS) $(FUZZER)
