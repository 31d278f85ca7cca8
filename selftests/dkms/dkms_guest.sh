#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The DKMS lane's guest side (scripts/dkms-lane): run by systemd at each
# boot of the Debian 12 guest, from the lane's second disk (/run/rs), as
# root. Boot 1 (6.1): install, use, a kernel update; boot 2 (the 6.12 it
# installed, or the same kernel with rs_update=none): loaded at boot,
# remove, purge. The stage is the kernel command line's rs_stage=N. Prints TAP
# lines without numbers, and "# stage N done" at the end; then systemd
# powers the guest off.
set -u
RS=/run/rs
LOG=/var/log/rs-lane
STATE=/var/lib/rs-lane
mkdir -p "$LOG" "$STATE"
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
stage=$(sed -n 's/.*rs_stage=\([0-9]*\).*/\1/p' /proc/cmdline)
# The kernel update of stage 1 (its packages, comma-separated), or none:
# stage 2 boots the same kernel again (the cloud and arm64 lanes).
update=$(sed -n 's/.*rs_update=\([^ ]*\).*/\1/p' /proc/cmdline)
update=$(echo "${update:-linux-image-6.12-amd64,linux-headers-6.12-amd64}" | tr ',' ' ')

ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; }
now() { cut -d. -f1 /proc/uptime; }
# check DESCRIPTION CMD...: ok if CMD succeeds; else its output, last
# lines. Says how long CMD took when that was more than 10 s.
check() {
	desc=$1
	shift
	t0=$(now)
	if "$@" >"$LOG/last" 2>&1; then
		ok "$desc"
	else
		nok "$desc (exit $?)"
		tail -n 25 "$LOG/last" | sed 's/^/# /'
	fi
	t1=$(now)
	[ $((t1 - t0)) -le 10 ] || echo "# $((t1 - t0)) s"
}
# The example of librseq-slice-dev as user U with backend B: its exit status.
demo_as() {
	runuser -u "$1" -- /usr/local/bin/rseq-slice-demo "$2" >"$LOG/demo-$1-$2" 2>&1
}
demo_ok() {
	if demo_as "$1" "$2"; then
		ok "$3: $(tail -n 1 "$LOG/demo-$1-$2")"
	else
		nok "$3 (exit $?)"
		sed 's/^/# /' "$LOG/demo-$1-$2"
	fi
}
# demo_refused U B WHY: the example fails with exit 1 and says WHY.
demo_refused() {
	rc=0
	demo_as "$1" "$2" || rc=$?
	if [ "$rc" = 1 ] && grep -q "$3" "$LOG/demo-$1-$2"; then
		ok "$4: $(head -n 1 "$LOG/demo-$1-$2")"
	else
		nok "$4 (exit $rc)"
		sed 's/^/# /' "$LOG/demo-$1-$2"
	fi
}
loaded() { grep -q '^rseq_slice ' /proc/modules; }
# status_as U STATUS LINE DESCRIPTION: rseq-slice status as user U exits
# STATUS and prints LINE.
status_as() {
	rc=0
	runuser -u "$1" -- rseq-slice status >"$LOG/status-$1" 2>&1 || rc=$?
	if [ "$rc" = "$2" ] && grep -qF "$3" "$LOG/status-$1"; then
		ok "$4"
	else
		nok "$4 (exit $rc, want $2 and '$3')"
		sed 's/^/# /' "$LOG/status-$1"
	fi
}
# The udev rule's owner and mode; the group's member may use the device,
# another user may not.
perms() {
	m=$(stat -c '%U:%G %a' /dev/rseq_slice 2>&1)
	if [ "$m" = "root:rseq-slice 660" ]; then ok "/dev/rseq_slice is $m"; else nok "/dev/rseq_slice is $m, not root:rseq-slice 660"; fi
	demo_ok alice module "alice (in the group) runs the example through the device"
	demo_refused bob module "Permission denied" "bob (not in the group) is refused the device"
}
kfile() { modinfo -k "$1" -n rseq_slice 2>/dev/null; }
# DKMS built and installed the module for kernel $1: its status, and the
# file under updates/dkms. Sets f to that file.
built_for() {
	check "dkms status: rseq-slice/1.0 installed for $1" \
		sh -c "dkms status rseq-slice/1.0 -k $1 | tee /dev/stderr | grep -q ': installed'"
	f=$(kfile "$1")
	case "$f" in
	*/updates/dkms/rseq_slice.ko*) ok "the module for $1 is $f" ;;
	*) nok "no module for $1 under updates/dkms: '$f'" ;;
	esac
}

# unsuitable CONFIG_X: a kernel whose .config is this one's without X
# (its headers otherwise): DKMS skips it (exit 77, BUILD_EXCLUSIVE).
unsuitable() {
	u=0.0.0-rs-unsuitable
	mkdir -p "/lib/modules/$u/build"
	ln -s "/lib/modules/$kver/build/include" "/lib/modules/$u/build/include"
	grep -v "^$1=" "/lib/modules/$kver/build/.config" >"/lib/modules/$u/build/.config"
	rc=0
	dkms install rseq-slice/1.0 -k "$u" >"$LOG/unsuitable.log" 2>&1 || rc=$?
	if [ "$rc" = 77 ] && grep -q BUILD_EXCLUSIVE "$LOG/unsuitable.log" && [ -z "$(kfile "$u")" ]; then
		ok "a kernel without $1 is skipped: $(grep -m1 BUILD_EXCLUSIVE "$LOG/unsuitable.log")"
	else
		nok "a kernel without $1: dkms exited $rc"
		sed 's/^/# /' "$LOG/unsuitable.log"
	fi
	rm -rf "/lib/modules/$u"
}

echo "# stage $stage on $(uname -r), PID 1 is $(cat /proc/1/comm)"
[ "$(cat /proc/1/comm)" = systemd ] && ok "booted with systemd" || nok "PID 1 is not systemd"

case "$stage" in
1)
	kver=$(uname -r)
	# The arm64 image's apt cache holds what the packages depend on, not
	# what they recommend (scripts/dkms-lane): Debian 12's dkms
	# recommends linux-headers-amd64 | linux-headers, on arm64
	# linux-headers-arm64, 6.1's, for a kernel this machine does not
	# boot, and python3 ca-certificates. With a network apt would fetch
	# them (and DKMS build for 6.1 too); the guest has none, so on arm64
	# apt installs leave recommends out (dkms's others, fakeroot and
	# sudo, are in the image).
	norec=
	[ "$(uname -m)" = aarch64 ] && norec=--no-install-recommends
	check "apt install ./rseq-slice-dkms_*.deb (dkms from apt's cache)" \
		sh -c "apt-get -q -y $norec install $RS/debs/rseq-slice-dkms_*_all.deb >$LOG/install.log 2>&1 || { cat $LOG/install.log; exit 1; }"
	grep -iE 'building module|sign|installing /lib|rseq_slice.ko' "$LOG/install.log" | head -n 8 | sed 's/^/# /'
	built_for "$kver"
	check "modinfo: version 1.0, vermagic $kver" \
		sh -c "[ \"\$(modinfo -F version $f)\" = 1.0 ] && modinfo -F vermagic $f | grep -q '^$kver '"
	if loaded; then nok "installing loaded the module (it should wait for modprobe or a boot)"; else ok "installing did not load the module"; fi
	check "the group rseq-slice exists" getent group rseq-slice
	check "the udev rule is installed" test -f /lib/udev/rules.d/60-rseq-slice.rules
	dpkg -L rseq-slice-dkms | while read -r p; do [ -d "$p" ] || echo "$p"; done >"$STATE/files"
	echo "# $(wc -l <"$STATE/files") files of rseq-slice-dkms"
	# A kernel without what the module needs: DKMS skips it, with a
	# message. KPROBES everywhere; on arm64 also the ftrace option its
	# hooks need, which dkms.conf picks from the kernel's .config.
	unsuitable CONFIG_KPROBES
	if [ "$(uname -m)" = aarch64 ]; then
		for o in CONFIG_DYNAMIC_FTRACE_WITH_ARGS CONFIG_DYNAMIC_FTRACE_WITH_REGS; do
			grep -q "^$o=y" "/lib/modules/$kver/build/.config" && unsuitable "$o"
		done
	fi
	check "apt install the library packages" \
		sh -c "apt-get -q -y $norec install $RS/debs/librseq-slice1_*.deb $RS/debs/librseq-slice-dev_*.deb >$LOG/lib.log 2>&1 || { cat $LOG/lib.log; exit 1; }"
	check "the example builds with pkg-config (shared)" \
		sh -c 'cc -O2 -o /usr/local/bin/rseq-slice-demo /usr/share/doc/librseq-slice-dev/examples/demo.c $(pkg-config --cflags --libs rseq-slice) -pthread && ldd /usr/local/bin/rseq-slice-demo | grep -q "librseq-slice.so.1 => /"'
	check "the example builds with pkg-config --static" \
		sh -c 'cc -O2 -static -o /tmp/demo-static /usr/share/doc/librseq-slice-dev/examples/demo.c $(pkg-config --static --cflags --libs rseq-slice) -pthread'
	# The group's member, then the module loaded by hand: udev applies
	# the rule to the new device.
	check "alice joins the group rseq-slice" adduser --quiet alice rseq-slice
	check "modprobe rseq_slice" sh -c 'modprobe rseq_slice && udevadm settle'
	perms
	demo_ok bob kernel "bob uses merged upstream's prctl (open to all, as on 7.x)"
	# The command rseq-slice (rseq-slice-tools: python3 from apt's cache).
	check "apt install ./rseq-slice-tools_*.deb" \
		sh -c "apt-get -q -y $norec install $RS/debs/rseq-slice-tools_*_all.deb man-db >$LOG/tools.log 2>&1 || { cat $LOG/tools.log; exit 1; }"
	# shellcheck disable=SC2016 # the inner shell's
	check "rseq-slice is /usr/bin/rseq-slice, --help exits 0" \
		sh -c '[ "$(command -v rseq-slice)" = /usr/bin/rseq-slice ] && rseq-slice --help | grep -q "Exit status"'
	# shellcheck disable=SC2016 # the inner shell's
	check "man -l rseq-slice.1.gz renders without warnings" \
		sh -c 'w=$(MANWIDTH=80 man --warnings -l /usr/share/man/man1/rseq-slice.1.gz 2>&1 >/tmp/man.txt) && [ -z "$w" ] && grep -q "^EXIT STATUS" /tmp/man.txt || { echo "$w"; exit 1; }'
	# Every man page the four packages install (rseq_slice(4) comes with
	# the module, librseq-slice(3) with -dev, librseq_slice_preload(3)
	# with the tools), rendered as a user reads them, and found by name.
	# shellcheck disable=SC2016 # the inner shell's
	check "every installed man page renders without warnings, and man finds each by name" \
		sh -c 'n=0; for p in $(dpkg -L rseq-slice-dkms librseq-slice1 librseq-slice-dev rseq-slice-tools | grep "^/usr/share/man/man[1-8]/"); do
			[ -f "$p" ] && [ ! -L "$p" ] || continue
			w=$(MANWIDTH=80 man --warnings -l "$p" 2>&1 >/tmp/man.txt) && [ -z "$w" ] && grep -q "^SEE ALSO" /tmp/man.txt || { echo "$p: $w"; exit 1; }
			n=$((n + 1))
		done
		for s in 1:rseq-slice 4:rseq_slice 3:librseq-slice 3:librseq_slice_preload 3:rseq_slice_init; do
			man -w "${s%%:*}" "${s#*:}" >/dev/null || { echo "man -w ${s%%:*} ${s#*:}: not found"; exit 1; }
		done
		[ "$n" -ge 4 ] || { echo "only $n man pages"; exit 1; }
		echo "$n pages"'
	status_as alice 0 "usable:    yes" "rseq-slice status as alice (in the group): usable"
	status_as alice 0 "backends:  kernel, module" "rseq-slice status as alice: both backends"
	status_as alice 0 "counters:  not readable by this user" "rseq-slice status as alice: counters not readable, not zeros"
	status_as bob 0 "to fix:    sudo adduser bob rseq-slice" "rseq-slice status as bob (not in the group): the prctl only, and how to join"
	status_as root 0 "counters:  sgrant=" "rseq-slice status as root: the counters"
	# The modprobe.d example: merged_abi=0 leaves only the device.
	sed -i 's/^#options rseq_slice merged_abi=0$/options rseq_slice merged_abi=0/' /etc/modprobe.d/rseq-slice.conf
	check "reload with /etc/modprobe.d's merged_abi=0" \
		sh -c 'rmmod rseq_slice && modprobe rseq_slice && udevadm settle && grep -qx N /sys/module/rseq_slice/parameters/merged_abi'
	demo_refused bob kernel "Invalid argument" "with merged_abi=0 bob is refused the prctl too"
	status_as bob 1 "usable:    no" "with merged_abi=0 rseq-slice status as bob: not usable, exit 1"
	status_as bob 1 "to fix:    sudo adduser bob rseq-slice" "with merged_abi=0 rseq-slice status as bob: how to join"
	status_as alice 0 "backends:  module (for alice)" "with merged_abi=0 rseq-slice status as alice: the device"
	demo_ok alice module "with merged_abi=0 alice still runs the example through the device"
	sed -i 's/^options rseq_slice merged_abi=0$/#options rseq_slice merged_abi=0/' /etc/modprobe.d/rseq-slice.conf
	# Where signatures are enforced: DKMS's own key is not one the
	# kernel trusts (that takes MOK, shim and UEFI), so it is refused.
	signer=$(modinfo -F signer rseq_slice)
	case "$signer" in
	*DKMS*) ok "DKMS signed the module with its own key ($signer)" ;;
	*) nok "the module is not signed by DKMS's key: '$signer'" ;;
	esac
	rc=0
	{ rmmod rseq_slice && echo 1 >/sys/module/module/parameters/sig_enforce &&
		modprobe rseq_slice; } >"$LOG/sig.log" 2>&1 || rc=$?
	if [ "$rc" != 0 ] && ! loaded && grep -q 'Key was rejected by service' "$LOG/sig.log"; then
		ok "module.sig_enforce=1: refused ($(tail -n 1 "$LOG/sig.log"))"
	else
		nok "module.sig_enforce=1: exit $rc"
		sed 's/^/# /' "$LOG/sig.log"
	fi
	# Opt in to loading at boot: checked at the next boot, 6.12's.
	sed -i 's/^#rseq_slice$/rseq_slice/' /etc/modules-load.d/rseq-slice.conf
	if [ "$update" = none ]; then
		echo "$kver" >"$STATE/kver-next"
	else
		# A kernel update: its hooks have DKMS build the module for it.
		check "apt install $update" \
			sh -c "apt-get -q -y install $update >$LOG/kupdate.log 2>&1 || { cat $LOG/kupdate.log; exit 1; }"
		knext=$(ls /boot | sed -n 's/^vmlinuz-//p' | grep -vxF "$kver" | tail -n 1)
		echo "$knext" >"$STATE/kver-next"
		grep -E 'dkms|rseq' "$LOG/kupdate.log" | head -n 4 | sed 's/^/# /'
		built_for "$knext"
		check "the guest's $knext kernel goes to the host (third disk)" \
			tar -C /boot -cf /dev/vdc "vmlinuz-$knext" "initrd.img-$knext"
	fi
	;;
2)
	knext=$(cat "$STATE/kver-next")
	[ "$(uname -r)" = "$knext" ] && ok "booted $knext" || nok "booted $(uname -r), not $knext"
	if loaded; then ok "loaded at boot: $(kfile "$(uname -r)")"; else nok "not loaded at boot"; fi
	check "systemd-modules-load inserted it" \
		sh -c "journalctl -b -o cat | grep \"Inserted module 'rseq_slice'\""
	perms
	# rseq-slice-tools (stage 1) recommends rseq-slice-dkms: it goes
	# first, so that what follows is about the DKMS package alone.
	check "apt purge rseq-slice-tools" \
		sh -c "apt-get -q -y purge rseq-slice-tools >$LOG/tools-purge.log 2>&1 || { cat $LOG/tools-purge.log; exit 1; }"
	check "apt remove rseq-slice-dkms" \
		sh -c "apt-get -q -y remove rseq-slice-dkms >$LOG/remove.log 2>&1 || { cat $LOG/remove.log; exit 1; }"
	if loaded; then nok "still loaded after apt remove"; else ok "apt remove unloaded it"; fi
	left=$(ls /lib/modules/*/updates/dkms/rseq_slice.ko* 2>/dev/null)
	[ -z "$left" ] && ok "no rseq_slice.ko left under /lib/modules ($(ls /lib/modules | tr '\n' ' '| sed 's/ $//'))" || nok "left: $left"
	check "dkms knows it no more" sh -c '! dkms status rseq-slice | grep -q .'
	check "its configuration stays until purge" test -f /etc/modprobe.d/rseq-slice.conf
	check "apt purge rseq-slice-dkms" \
		sh -c "apt-get -q -y purge rseq-slice-dkms >$LOG/purge.log 2>&1 || { cat $LOG/purge.log; exit 1; }"
	left=$(while read -r p; do [ -e "$p" ] && echo "$p"; done <"$STATE/files")
	[ -z "$left" ] && ok "apt purge left none of its $(wc -l <"$STATE/files") files" ||
		{ nok "apt purge left files:"; echo "$left" | sed 's/^/# /'; }
	left=$(ls -d /var/lib/dkms/rseq-slice /usr/src/rseq-slice-* 2>/dev/null)
	[ -z "$left" ] && ok "nothing left of it in /var/lib/dkms or /usr/src" || nok "left: $left"
	check "dpkg knows it no more" sh -c '! dpkg-query -W -f="\${Status}" rseq-slice-dkms 2>/dev/null | grep -q .'
	;;
*)
	nok "no rs_stage on the kernel command line"
	;;
esac
echo "# stage $stage done, $(now) s after boot"
