#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Debian packages of make deb (build/deb/, or $KDAT_DEB_DIR) on this
# host: installed with dpkg, DKMS builds kdat.ko (never loaded here) for
# the running kernel, or, when it has no headers (a VM or container
# host), for every kernel in /lib/modules that has them, as DKMS itself
# then does; modinfo reads it, the udev rule and modprobe.d/kdat.conf
# are in place, the tools run from /usr/bin, a DAT program builds with
# pkg-config; in a testbed guest, modprobe loads that module and the
# installed tools and Debian's dtest run over it (tests/deb-guest.sh);
# then purged, and nothing of them is left (their files, DKMS's tree,
# the modules). Host test (TAP); root's. Skips (exit 4)
# when the packages are not built, dpkg or dkms is missing, no kernel
# has headers, or the packages are installed already (it would purge
# them). DKMS builds with a job per CPU (parallel_jobs, which dkms reads).
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/tap.sh"	# skip_cases, result, diag
DEBS=${KDAT_DEB_DIR:-$TOP/build/deb}
PKGS=(kdat-dkms libdat-kdat libdat-kdat-dev kdat-utils)
# 17 on the host; 6 in the guest, and its status and kernel log
NCASES=24
export parallel_jobs=${parallel_jobs:-$(nproc)}
n=0
fail=0
echo "TAP version 13"
echo "1..$NCASES"

[ "$(id -u)" = 0 ] || skip_cases "$NCASES" "needs root (dpkg -i, dpkg --purge)"
command -v dpkg > /dev/null || skip_cases "$NCASES" "no dpkg: not a Debian system"
command -v dkms > /dev/null || skip_cases "$NCASES" "no dkms (scripts/setup)"
debs=()
for p in "${PKGS[@]}"; do
	f=$(ls "$DEBS/${p}"_*.deb 2> /dev/null | sort -V | tail -n1)
	[ -n "$f" ] || skip_cases "$NCASES" "$DEBS/${p}_*.deb: not built (make deb)"
	debs+=("$f")
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2> /dev/null)
	[ "$st" = not-installed ] || [ -z "$st" ] ||
		skip_cases "$NCASES" "$p is installed already ($st): the test would purge it"
done

# The kernels DKMS builds for: the running one if it has headers, else
# (its postinst's fallback) every kernel with headers.
kernels=()
if [ -e "/lib/modules/$(uname -r)/build/include" ]; then
	kernels=("$(uname -r)")
else
	for d in /lib/modules/*; do
		[ -e "$d/build/include" ] && kernels+=("${d##*/}")
	done
fi
[ ${#kernels[@]} -gt 0 ] || skip_cases "$NCASES" "no kernel headers in /lib/modules/*/build"
echo "# kernels: ${kernels[*]}"

work=$(mktemp -d /var/tmp/kdat-deb.XXXXXX)
installed=0
purge() {
	dpkg --purge "${PKGS[@]}" > "$work/purge" 2>&1
}
cleanup() {
	[ "$installed" = 1 ] && purge
	rm -rf "$work"
}
trap cleanup EXIT

# 0: lintian, errors and warnings, on the packages (their overrides
# apply; the .changes of a local build names the placeholder maintainer).
r=0
if command -v lintian > /dev/null; then
	lintian --fail-on error,warning "${debs[@]}" > "$work/lintian" 2>&1 || r=1
	grep -v 'running with root privileges' "$work/lintian" | diag
	result $r "lintian: the four packages, no error or warning"
else
	n=$((n + 1))
	echo "ok $n lintian # SKIP no lintian (scripts/setup)"
fi

# 1: install.
installed=1
dpkg -i "${debs[@]}" > "$work/install" 2>&1
r=$?
[ $r = 0 ] || tail -n 30 "$work/install" | diag
result $r "dpkg -i the four packages"
dpkg -L "${PKGS[@]}" > "$work/files" 2> /dev/null
ver=$(dpkg-query -W -f='${Version}' kdat-dkms)
ver=${ver%%-*}

# 2: DKMS built and installed kdat.ko for each kernel.
r=0
for k in "${kernels[@]}"; do
	st=$(dkms status -m kdat -v "$ver" -k "$k" 2> /dev/null)
	grep -q ': installed' <<< "$st" ||
		{ echo "# $k: dkms status: ${st:-none}"; r=1; }
done
result $r "DKMS built and installed kdat/$ver for ${kernels[*]}"

# 3: modinfo finds it among the kernel's modules, the DKMS copy.
r=0
for k in "${kernels[@]}"; do
	f=$(modinfo -k "$k" -F filename kdat 2> "$work/modinfo")
	case $f in
	"/lib/modules/$k/updates/dkms/kdat.ko"*) ;;
	*) { echo "# $k: modinfo: ${f:-nothing}"; diag < "$work/modinfo"; }
		r=1 ;;
	esac
	grep -q "^$k " <<< "$(modinfo -k "$k" -F vermagic kdat)" ||
		{ echo "# $k: vermagic is not $k's"; r=1; }
done
result $r "modinfo -k KERNEL kdat: the DKMS module, that kernel's vermagic"

# 3b: a kernel installed after kdat: its package's postinst runs the
# hooks of /etc/kernel/postinst.d (run-parts --exit-on-error: a failing
# hook leaves the kernel unconfigured, its initramfs unmade); DKMS's and
# kdat-dkms's are run here as it runs them, in that order. kdat is built
# for the kernel and both succeed. The newest kernel here plays the new
# one (its module removed first); scripts/setup installs 6.1 and 6.12.
hooks=(/etc/kernel/postinst.d/dkms /etc/kernel/postinst.d/kdat-dkms)
run_hooks() {
	local h rc=0
	for h in "${hooks[@]}"; do
		[ -x "$h" ] || { echo "# no $h"; rc=1; continue; }
		"$h" "$1" > "$work/hook" 2>&1 ||
			{ echo "# $h $1 failed:"; diag < "$work/hook"; rc=1; }
	done
	return $rc
}
newk=${kernels[${#kernels[@]}-1]}
r=0
dkms remove -m kdat -v "$ver" -k "$newk" > "$work/dkms-rm" 2>&1 ||
	{ diag < "$work/dkms-rm"; r=1; }
run_hooks "$newk" || r=1
grep -q ': installed' <<< "$(dkms status -m kdat -v "$ver" -k "$newk" 2>&1)" ||
	{ echo "# $newk: not built by the hooks"; r=1; }
result $r "a new kernel's hooks ($newk): kdat built for it, each hook succeeds"

# 3c: a kernel kdat does not support (a release outside dkms.conf's
# BUILD_EXCLUSIVE_KERNEL, here 9.9.9 with 6.1's headers) is declined, not
# failed: dkms build says "excluded" (77), the kernel's hooks succeed.
fake=9.9.9-kdat-test
r=0
if [ -e "/lib/modules/$fake" ]; then
	echo "# /lib/modules/$fake exists: not ours to use"
	r=1
else
	mkdir -p "/lib/modules/$fake"
	ln -s "$(KDAT_KVER=6.1 "$TOP/scripts/kdir")" "/lib/modules/$fake/build"
	dkms build -m kdat -v "$ver" -k "$fake" > "$work/excl" 2>&1
	st=$?
	[ $st = 77 ] || { echo "# dkms build for $fake: status $st"; diag < "$work/excl"; r=1; }
	run_hooks "$fake" || r=1
	grep -q "$fake" <<< "$(dkms status -m kdat -v "$ver" 2>&1)" &&
		{ echo "# dkms built for $fake"; r=1; }
	rm -rf "/lib/modules/$fake" "/var/lib/dkms/kdat/$ver/$fake"
fi
result $r "a kernel outside 6.1 and 6.12 is declined (dkms status 77), the kernel's hooks succeed"

# 4: the modprobe.d file lists every parameter of the module.
conf=/etc/modprobe.d/kdat.conf
r=0
[ -f "$conf" ] || { echo "# no $conf"; r=1; }
grep -q " $conf " <<< "$(dpkg-query -W -f='${Conffiles}\n' kdat-dkms)" ||
	{ echo "# $conf is no conffile of kdat-dkms"; r=1; }
params=$(modinfo -k "${kernels[0]}" -F parm kdat | cut -d: -f1)
[ -n "$params" ] || { echo "# modinfo lists no parameter"; r=1; }
for p in $params; do
	grep -q "^#options kdat $p=" "$conf" 2> /dev/null ||
		{ echo "# $conf: no $p"; r=1; }
done
result $r "$conf, a conffile, documents each of the $(wc -w <<< "$params") parameters"

# 5: the udev rule, and its group.
rule=/lib/udev/rules.d/60-kdat.rules
r=0
grep -q '^KERNEL=="kdat", SUBSYSTEM=="misc", GROUP="rdma", MODE="0660"' \
	"$rule" 2> /dev/null || { echo "# $rule: no rule for /dev/kdat"; r=1; }
getent group rdma > /dev/null || { echo "# no group rdma"; r=1; }
result $r "$rule gives /dev/kdat to group rdma, mode 0660"

# 5b: /etc/kdat/dat.conf for the ports present, and the udev rule that
# writes it again.
r=0
dc=/etc/kdat/dat.conf
if [ -f "$dc" ]; then
	diff <(grep -v '^#' "$dc") <(/usr/bin/kdat-datconf) > "$work/dcdiff" ||
		{ echo "# $dc is not kdat-datconf's output:"; diag < "$work/dcdiff"; r=1; }
else
	echo "# no $dc"
	r=1
fi
grep -q 'SUBSYSTEM=="infiniband", RUN+="/usr/bin/kdat-datconf -o /etc/kdat/dat.conf"' \
	/lib/udev/rules.d/*kdat-utils.rules 2> /dev/null ||
	{ echo "# no udev rule that rewrites $dc"; r=1; }
result $r "$dc: kdat's IAs for the ports present ($(grep -vc '^#' "$dc" 2> /dev/null) lines), rewritten by udev when a device comes or goes"

# 6: the tools, from /usr/bin, on the installed library.
r=0
out=$(/usr/bin/kdat-info -h 2>&1) || r=1
grep -q '^usage: .*kdat-info' <<< "$out" || { echo "# kdat-info -h: $out"; r=1; }
linked=$(ldd /usr/bin/kdat-info)
grep -q 'libdat\.so\.2 => /.*lib.*/libdat\.so\.2' <<< "$linked" ||
	{ diag <<< "$linked"; r=1; }
# Every tool, as installed, says the packages' version.
pkgver=$(dpkg-query -W -f '${Version}' kdat-utils)
for t in /usr/bin/kdat-info /usr/bin/kdat-stat /usr/bin/kdat-bench \
	/usr/bin/kdat-demo /usr/bin/kdat-datconf /usr/sbin/kdat-libdat2; do
	v=$("$t" --version 2>&1) || { echo "# $t --version: $v"; r=1; }
	[ "$v" = "${t##*/} (kdat) ${pkgver%%-*}" ] ||
		{ echo "# $t --version: '$v', want ${t##*/} (kdat) ${pkgver%%-*}"; r=1; }
done
/usr/bin/kdat-datconf > "$work/datconf" 2>&1 || { diag < "$work/datconf"; r=1; }
result $r "kdat-info -h, kdat-datconf run from /usr/bin on the installed libdat; every tool's --version the packages'"

# 7: a DAT program builds with pkg-config against the installed libdat.
r=0
if command -v cc > /dev/null && command -v pkg-config > /dev/null; then
	# shellcheck disable=SC2046 # pkg-config's words
	cc -o "$work/prog" "$TOP/tests/dat/dat_life_helper.c" \
		"$TOP/tests/lib/dat_pair.c" \
		$(pkg-config --cflags --libs libdat) > "$work/cc" 2>&1 ||
		{ diag < "$work/cc"; r=1; }
	if [ $r = 0 ]; then
		linked=$(ldd "$work/prog")
		grep -q 'libdat\.so\.2 => /' <<< "$linked" ||
			{ diag <<< "$linked"; r=1; }
	fi
	result $r "a DAT program builds with pkg-config libdat, links to it"
else
	n=$((n + 1))
	echo "ok $n a DAT program builds with pkg-config libdat # SKIP no cc or pkg-config"
fi

# 8: the manual.
r=0
for page in kdat-info kdat-datconf dat_ep_post_send kdat; do
	[ -n "$(MANPATH=/usr/share/man man -w "$page" 2> /dev/null)" ] ||
		{ echo "# man finds no $page"; r=1; }
done
result $r "man finds kdat-info(1), kdat-datconf(1), dat_ep_post_send(3DAT), kdat(4)"

# 9-15: in a testbed guest (the host's root is the guest's): modprobe
# loads the DKMS module, the tools and Debian's dtest run over kdat
# through the installed dat.conf, the module unloads (tests/deb-guest.sh),
# and the guest's kernel log is clean. On the stock kernel of the
# testbed, which must be one DKMS built for.
GUEST_CASES=7
guest_skip() {
	for ((i = 0; i < GUEST_CASES; i++)); do
		n=$((n + 1))
		echo "ok $n in a guest # SKIP $*"
	done
}
# The default kernel (scripts/kdir's) if DKMS built for it, else the last.
gk=
defk=$(basename "$(readlink -f "$("$TOP/scripts/kdir")")")
defk=${defk#linux-headers-}
for k in "${kernels[@]}"; do
	[ -e "/boot/vmlinuz-$k" ] || continue
	gk=$k
	[ "$k" = "$defk" ] && break
done
if [ "${KDAT_DEB_GUEST:-1}" = 0 ]; then
	guest_skip "KDAT_DEB_GUEST=0"
elif [ -z "$gk" ] || [ ! -x "$TOP/scripts/vm-run" ]; then
	guest_skip "no testbed kernel (/boot/vmlinuz-*) among ${kernels[*]}"
else
	KDAT_VM_NO_LOAD=1 KDAT_KO=/lib/modules/$gk/updates/dkms/kdat.ko \
		"$TOP/scripts/vm-run" "$TOP/tests/deb-guest.sh" > "$work/guest" 2>&1
	grc=$?
	diag < "$work/guest"
	got=0
	while read -r line; do
		case $line in
		"ok "[0-9]*" "*) st=0 ;;
		"not ok "[0-9]*" "*) st=1 ;;
		*) continue ;;
		esac
		got=$((got + 1))
		[ $got -lt $GUEST_CASES ] || break
		result $st "guest ($gk): $(sed -E 's/^(not )?ok [0-9]+ //' <<< "$line")"
	done < <(grep -E '^(not )?ok [0-9]+ ' "$work/guest")
	while [ $got -lt $((GUEST_CASES - 1)) ]; do
		got=$((got + 1))
		result 1 "guest ($gk): case $got did not run (vm-run status $grc)"
	done
	grep -q '^kdat-vm: kernel log: clean' "$work/guest" && [ $grc = 0 ]
	result $? "guest ($gk): vm-run status 0, kernel log clean"
fi

# 15b: kdat-libdat2 puts libdat in the place of Debian's libdat2 (after
# the guest, which sees the host's libraries); the purge undoes it.
libdat2=$(dpkg -S 'libdat2.so.2.*' 2> /dev/null | sed -n 's/^libdapl2[^:]*: //p' | head -n1)
divert=0
if [ -z "$libdat2" ]; then
	n=$((n + 1))
	echo "ok $n kdat-libdat2 install # SKIP Debian's libdapl2 is not installed"
else
	r=0
	/usr/sbin/kdat-libdat2 install > "$work/divert" 2>&1 || { diag < "$work/divert"; r=1; }
	divert=1
	grep -q ' is libdat;' <<< "$(/usr/sbin/kdat-libdat2 status)" || r=1
	cmp -s "$libdat2" /usr/lib/*/kdat/libdat2.so.2 || { echo "# $libdat2 is not libdat's copy"; r=1; }
	grep -q 'local diversion' <<< "$(dpkg-divert --list "$libdat2")" || r=1
	result $r "kdat-libdat2 install: $libdat2 is libdat (a local diversion)"
fi

# 16: purge.
purge
r=$?
[ $r = 0 ] && installed=0
[ $r = 0 ] || tail -n 30 "$work/purge" | diag
result $r "dpkg --purge the four packages"

# 17: none of their files is left.
r=0
[ -s "$work/files" ] || { echo "# dpkg -L listed nothing"; r=1; }
while read -r f; do
	# Directories (/lib, a link to one, too) are shared.
	[ -d "$f" ] && continue
	if [ -e "$f" ] || [ -L "$f" ]; then
		echo "# left: $f"
		r=1
	fi
done < "$work/files"
result $r "none of their $(wc -l < "$work/files") files is left"

# 17b: the purge undid kdat-libdat2 and took /etc/kdat with it.
r=0
if [ "$divert" = 1 ]; then
	[ -n "$(dpkg-divert --list "$libdat2")" ] && { echo "# still diverted: $(dpkg-divert --list "$libdat2")"; r=1; }
	dpkg -V libdapl2 > "$work/verify" 2>&1 || { diag < "$work/verify"; r=1; }
fi
[ ! -e /etc/kdat ] || { echo "# left: /etc/kdat"; r=1; }
result $r "the purge undid kdat-libdat2 (Debian's libdat2 back, dpkg -V libdapl2 clean) and removed /etc/kdat"

# 18: nor anything of DKMS's for kdat.
r=0
st=$(dkms status -m kdat 2> /dev/null)
[ -z "$st" ] || { echo "# dkms status: $st"; r=1; }
for d in /var/lib/dkms/kdat /usr/src/kdat-"$ver"; do
	[ ! -e "$d" ] || { echo "# left: $d"; r=1; }
done
for k in "${kernels[@]}"; do
	for f in /lib/modules/"$k"/updates/dkms/kdat.ko*; do
		[ ! -e "$f" ] || { echo "# left: $f"; r=1; }
	done
	! grep -q '^updates/dkms/kdat\.ko' "/lib/modules/$k/modules.dep" ||
		{ echo "# $k: modules.dep still names kdat.ko"; r=1; }
done
result $r "DKMS: no kdat in dkms status, /var/lib/dkms, /usr/src, the kernels' modules"

echo "# Totals: pass:$((n - fail)) fail:$fail"
[ "$fail" = 0 ]
