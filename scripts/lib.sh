# SPDX-License-Identifier: GPL-2.0
# Shared by scripts/vm, scripts/test and scripts/bench: where things are
# cached, how a kernel name becomes an image plus a kbuild tree, and how the
# module and the selftests are built for it. Sourced, not run.
#
# The cache lives outside the clone so that fresh clones on one machine
# share it: ${RSEQ_SLICE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/rseq-slice}.
#   kernels/VERSION/vmlinuz   images unpacked from Debian's packages
#   kernels/VERSION/extra/    modules the tests need that the kernel has
#                             as modules (fuse.ko on 6.1)
#   build/VERSION/TREE/       the module, built against that kernel, per
#                             source tree (TREE: a hash of its path), so
#                             that two clones never build into one folder
#   build/selftests-TREE/     static test binaries (kernel independent)
#   kbuild/SUITE/ABI/         Debian 12's kbuild trees (bookworm,
#                             bookworm-arm64), unpacked, per ABI: the
#                             headers of each of its flavours, their
#                             -common trees and linux-kbuild (rs_kbuild)
#   build/abi/KVER/           scripts/abi-matrix's build per ABI, and the
#                             fingerprint of the sources last built green
#   fresh/                    scripts/fresh-check: the pristine minimal
#                             Debian 12 root, and each run's copy
#   apt-bookworm/, apt-bookworm-arm64/
#                             private apt configurations for Debian 12
#                             itself: kernel names resolve from these
#                             (refreshed hourly), never the host's lists
#   ksft/                     kselftest_harness.h from linux-source-6.1
#   apt-sid/, apt-trixie/     private apt configurations for Debian sid
#                             and trixie (their lists and caches; the
#                             host's stay alone)
#   chroot-trixie/, chroot-sid/
#                             build chroots for those suites' kernels
#                             (rs_chroot); the module builds in their
#                             rs-build/VERSION/TREE/
#   upstream/                 linux-source-7.2's .deb from sid, and the part
#                             of its source upstream's rseq selftests need
#   debug-6.1/                the debug kernel (scripts/build-debug-kernel)
#   7.2-twins/                the 7.2 twins, 7.2-base and 7.2-upstream
#                             (scripts/build-kernel): one source, two trees

RS_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RS_CACHE=${RSEQ_SLICE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rseq-slice}
RS_TREE=$(printf '%s' "$RS_TOP" | sha256sum | cut -c1-12)

rs_log() { printf '%s\n' "$*" >&2; }
# A command that fails under set -e says so: a silent exit hides what
# went wrong (ERR is not raised for tested commands: if, ||, &&).
set -E
trap 'echo "${0##*/}: line $LINENO: \"$BASH_COMMAND\" failed" >&2' ERR
rs_die() { printf '%s: %s\n' "${0##*/}" "$*" >&2; exit 2; }

# rs_klog_errors FILE...: the kernel's error lines in the guest logs FILE...
# (BUG, WARNING, Oops, lockdep, KASAN, kmemleak, ...), each once; false
# when there are none.
rs_klog_errors() {
	local pat
	pat='BUG:|WARNING:|Oops|general protection fault|scheduling while atomic'
	pat+='|sleeping function called from invalid context|RCU stall|rcu_sched detected stall'
	pat+='|rcu: INFO:|list_add corruption|list_del corruption|\] BUG |^BUG '
	pat+='|Object padding overwritten|Redzone overwritten|Poison overwritten|Freepointer corrupt'
	pat+='|UBSAN:|possible recursive locking|possible circular locking|inconsistent lock state'
	pat+='|suspicious RCU usage|DEBUG_LOCKS_WARN_ON|INFO: lockdep|held lock freed'
	pat+='|ODEBUG:|unreferenced object|soft lockup|hard LOCKUP'
	pat+='|blocked for more than|Kernel panic|kernel BUG'
	cat "$@" | tr -d '\r' | grep -aE "$pat" | sort -u
}

# Install missing Debian packages (root only). apt-get update only runs when
# a package is unknown, so a warm machine does no network access.
rs_need_pkgs() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$(id -u)" -eq 0 ] || rs_die "missing packages (install as root): ${missing[*]}"
	# Lanes are prepared and run side by side and may install at the same
	# moment. One apt at a time from these scripts: a second apt-get
	# update does not wait for the lists' lock, it fails on it (seen on a
	# machine without lists: every install after it found no package).
	# dpkg's lock is waited for too (bounded), for apt runs of others.
	local fd lock=(-o DPkg::Lock::Timeout=900)
	mkdir -p "$RS_CACHE"
	exec {fd}>"$RS_CACHE/.host-apt.lock"
	flock "$fd"
	# Whoever held the lock may have installed some of them.
	missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
			missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		rs_log "installing: ${missing[*]}"
		if ! DEBIAN_FRONTEND=noninteractive apt-get "${lock[@]}" install -y -qq "${missing[@]}" >/dev/null 2>&1; then
			apt-get "${lock[@]}" update -qq >/dev/null ||
				rs_die "apt-get update failed (the host's package lists)"
			DEBIAN_FRONTEND=noninteractive apt-get "${lock[@]}" install -y -qq "${missing[@]}" >/dev/null ||
				rs_die "apt-get install ${missing[*]} failed"
		fi
	fi
	exec {fd}>&-
}

# rs_fix_hint LOG: the command that fixes what LOG says is missing, when
# it names a command or header of a known package ("pahole: not found":
# apt-get install dwarves); else nothing.
rs_fix_hint() {
	local c p pkgs=
	# "X: not found", "X: command not found", "execvp: X: No such file".
	for c in $(sed -nE -e 's/.*[: ]([A-Za-z0-9_.+-]+): (command )?not found.*/\1/p' \
		-e 's/.*execvp: ([A-Za-z0-9_.+-]+): No such file.*/\1/p' "$1" 2>/dev/null | sort -u); do
		case "$c" in
		pahole) p=dwarves ;;
		qemu-system-x86_64) p=qemu-system-x86 ;;
		qemu-system-aarch64) p=qemu-system-arm ;;
		qemu-img) p=qemu-utils ;;
		mkfs.ext4|mke2fs) p=e2fsprogs ;;
		dpkg-buildpackage|dpkg-architecture) p=dpkg-dev ;;
		xz) p=xz-utils ;;
		gnuplot) p=gnuplot-nox ;;
		busybox) p=busybox-static ;;
		insmod|modinfo|depmod) p=kmod ;;
		bc|flex|bison|cpio|rsync|zstd|make|gcc|gcc-12|debootstrap|lintian|fakeroot|file|python3|git|sparse|perl)
			p=$c ;;
		*) continue ;;
		esac
		pkgs="$pkgs $p"
	done
	grep -qE 'fatal error: (gelf|libelf)\.h' "$1" 2>/dev/null && pkgs="$pkgs libelf-dev"
	grep -qE 'fatal error: openssl/' "$1" 2>/dev/null && pkgs="$pkgs libssl-dev"
	grep -qE 'fatal error: (bits/libc-header-start|gnu/stubs-32)\.h' "$1" 2>/dev/null &&
		pkgs="$pkgs gcc-multilib"
	[ -z "$pkgs" ] || echo "apt-get install$pkgs"
}

rs_host_pkgs() {
	rs_need_pkgs qemu-system-x86 busybox-static cpio kmod gcc gcc-multilib make libc6-dev \
		linux-source-6.1 rsync xz-utils file bc flex bison libelf-dev libssl-dev dwarves
}

# The version a Debian meta package (linux-image-amd64, ...) points at
# today, read from apt's lists (the host's, or with a SUITE those of its
# private configuration): nothing is hard-coded, and no network access
# happens unless the lists do not know the package yet.
rs_meta_version() {
	local meta=$1 suite=${2:-} v
	[ -z "$suite" ] || rs_lists_fresh "$suite"
	# Unknown to the lists yet is an answer, not an error (pipefail).
	rs_meta_depends() {
		{
			if [ -n "$suite" ]; then
				rs_apt_cache "$suite" depends "$meta" 2>/dev/null
			else
				apt-cache depends "$meta" 2>/dev/null
			fi || true
		} | sed -n 's/^ *Depends: linux-image-\(.*\)$/\1/p' | head -n1
	}
	v=$(rs_meta_depends)
	if [ -z "$v" ]; then
		if [ -n "$suite" ]; then
			rs_log "fetching Debian $suite's package lists (private apt configuration: $RS_CACHE/apt-$suite)"
			rs_apt "$suite" update >"$RS_CACHE/apt-$suite.update.log" 2>&1 ||
				{ cat "$RS_CACHE/apt-$suite.update.log" >&2; rs_die "apt-get update of Debian $suite failed"; }
		elif [ "$(id -u)" -eq 0 ]; then
			apt-get update -qq >/dev/null
		fi
		v=$(rs_meta_depends)
	fi
	[ -n "$v" ] || rs_die "apt does not know $meta${suite:+ in Debian $suite}"
	echo "$v"
}

# Modules of a Debian kernel the guests load before the test, when the
# kernel has them as modules rather than built in (paths in the package,
# below lib/modules/VERSION/; compressed ones are unpacked).
RS_EXTRA_MODULES="kernel/fs/fuse/fuse.ko"

# Unpack a Debian kernel image (and RS_EXTRA_MODULES, where the package
# has them) into the cache. Headers come from the host's apt, or with a
# SUITE they are installed in that suite's build chroot (rs_chroot).
# Returns 1 if the image cannot be downloaded (rs_kernel then refreshes
# apt's lists). Since 7.x the image package is a meta package: the image
# (usr/lib/modules/VERSION/vmlinuz) is in linux-binary-VERSION, the modules
# in linux-modules-VERSION.
rs_debian_kernel() {
	local kver=$1 suite=${2:-} dir=$RS_CACHE/kernels/$1 tmp deb m f d pkgs
	if [ -z "$suite" ] && [ ! -d "/lib/modules/$kver/build" ]; then
		rs_need_pkgs "linux-headers-$kver"
	fi
	if [ ! -s "$dir/vmlinuz" ] || [ ! -f "$dir/extra.done" ]; then
		pkgs=("linux-image-$kver")
		if [ -n "$suite" ] && rs_apt_cache "$suite" depends "linux-image-$kver" 2>/dev/null |
			grep -q "Depends: linux-binary-$kver\$"; then
			pkgs=("linux-binary-$kver" "linux-modules-$kver")
		fi
		rs_log "fetching ${pkgs[*]}${suite:+ from Debian $suite}"
		tmp=$(mktemp -d "$RS_CACHE/dl.XXXXXX")
		if [ -n "$suite" ]; then
			(cd "$tmp" && rs_apt "$suite" download "${pkgs[@]}" >/dev/null)
		else
			(cd "$tmp" && apt-get -o APT::Sandbox::User=root download -q "${pkgs[@]}" >/dev/null)
		fi || { rm -rf "$tmp"; rs_log "apt-get download ${pkgs[*]} failed"; return 1; }
		mkdir -p "$tmp/x" "$dir/extra"
		for deb in "$tmp"/*.deb; do
			dpkg-deb -x "$deb" "$tmp/x"
		done
		f=
		for m in "boot/vmlinuz-$kver" "usr/lib/modules/$kver/vmlinuz" "lib/modules/$kver/vmlinuz"; do
			[ -s "$tmp/x/$m" ] && { f=$tmp/x/$m; break; }
		done
		[ -n "$f" ] || { rm -rf "$tmp"; rs_log "no vmlinuz in ${pkgs[*]}"; return 1; }
		for m in $RS_EXTRA_MODULES; do
			# Absent where the option is built in: nothing to load.
			for d in lib usr/lib; do
				if [ -f "$tmp/x/$d/modules/$kver/$m" ]; then
					cp "$tmp/x/$d/modules/$kver/$m" "$dir/extra/"
				elif [ -f "$tmp/x/$d/modules/$kver/$m.xz" ]; then
					xz -dc "$tmp/x/$d/modules/$kver/$m.xz" >"$dir/extra/${m##*/}"
				elif [ -f "$tmp/x/$d/modules/$kver/$m.zst" ]; then
					rs_need_pkgs zstd
					zstd -qdc "$tmp/x/$d/modules/$kver/$m.zst" >"$dir/extra/${m##*/}"
				fi
			done
		done
		cp "$f" "$dir/vmlinuz.tmp" && mv "$dir/vmlinuz.tmp" "$dir/vmlinuz"
		touch "$dir/extra.done"
		rm -rf "$tmp"
	fi
}

# rs_lists_fresh SUITE: SUITE's private lists, refreshed (apt-get update)
# when they are older than RSEQ_SLICE_LISTS_MAX_AGE seconds (default 3600,
# 0: always) or not there yet. A kernel name then means the same ABI on a
# newcomer's machine as in CI: what the archive names today, never what a
# machine's lists said when they were last updated. A refresh that fails
# with lists at hand warns and goes on with them (a warm machine off the
# network still runs); with none it fails.
rs_lists_fresh() {
	local suite=$1 d=$RS_CACHE/apt-$1 age max=${RSEQ_SLICE_LISTS_MAX_AGE:-3600} lock
	mkdir -p "$d"
	exec {lock}>"$d/.fresh.lock"
	flock "$lock"
	age=$(( $(date +%s) - $(stat -c %Y "$d/.fresh" 2>/dev/null || echo 0) ))
	if [ "$age" -ge "$max" ]; then
		if rs_apt "$suite" update >"$d/update.log" 2>&1; then
			touch "$d/.fresh"
		elif ls "$d/state/lists/"*_Packages* >/dev/null 2>&1; then
			rs_log "warning: refreshing Debian $suite's lists failed (log: $d/update.log); going on with those of $(rs_lists_date "$suite")"
		else
			cat "$d/update.log" >&2
			exec {lock}>&-
			rs_die "apt-get update of Debian $suite failed"
		fi
	fi
	exec {lock}>&-
}

# When apt's package lists (the host's, or SUITE's private ones) were last
# refreshed (the newest list file).
rs_lists_date() {
	local f d=/var/lib/apt/lists
	[ -n "${1:-}" ] && d=$RS_CACHE/apt-$1/state/lists
	# No lists yet is an answer, not an error (set -e, pipefail).
	f=$({ ls -t "$d"/*_Packages* 2>/dev/null || true; } | head -n1)
	[ -n "$f" ] && date -u -r "$f" '+%Y-%m-%d %H:%M UTC' || echo "unknown"
}

# The Debian kernel a meta package names (in the host's apt, or in SUITE's
# private one): RS_KVER, fetched and unpacked, headers installed on the
# host (without SUITE). Stale lists name a version the archive may have
# dropped since: then refresh them (apt-get update; root for the host's)
# and resolve again. Says which version it took and why.
rs_debian_meta() {
	local meta=$1 name=$2 suite=${3:-} why lists
	lists="apt's lists"
	[ -n "$suite" ] && lists="Debian $suite's lists (private apt)"
	RS_KVER=$(rs_meta_version "$meta" "$suite")
	why="what $lists of $(rs_lists_date "$suite") name for $meta"
	# A subshell: rs_need_pkgs dies on a failed install.
	if ! (rs_debian_kernel "$RS_KVER" "$suite"); then
		[ -n "$suite" ] || [ "$(id -u)" -eq 0 ] ||
			rs_die "cannot fetch linux-image-$RS_KVER (apt-get update as root may help)"
		rs_log "kernel $name: $RS_KVER cannot be fetched (the archive may have dropped it): refreshing $lists"
		if [ -n "$suite" ]; then
			rs_apt "$suite" update >/dev/null 2>&1 || rs_die "apt-get update of Debian $suite failed"
		else
			apt-get update -qq >/dev/null || rs_die "apt-get update failed"
		fi
		RS_KVER=$(rs_meta_version "$meta" "$suite")
		why="what $meta names after apt-get update (the lists named a version the archive no longer has)"
		(rs_debian_kernel "$RS_KVER" "$suite") || rs_die "linux-image-$RS_KVER cannot be fetched either"
	fi
	rs_log "kernel $name: $RS_KVER, $why"
}

# rs_debootstrap SUITE DIR LOG: a minbase Debian SUITE in DIR, its
# sources.list read from stdin (a redirection, not a pipe: rs_die must end
# the caller). Made aside (DIR.tmp) and moved into place when complete, so
# that a debootstrap that stopped half way never passes for a tree;
# DIR/.rs-debootstrap.done marks one. With the archive's
# keyring, and the host's apt settings that make its archive reachable
# (validity checks of a mirror's frozen Release files, proxies), as the
# private apt configurations have them. Needs root; callers serialise.
rs_debootstrap() {
	local suite=$1 dir=$2 log=$3 t=$SECONDS
	rs_need_pkgs debootstrap
	[ -f "$RS_KEYRING" ] || rs_need_pkgs debian-archive-keyring
	mkdir -p "$(dirname "$dir")"
	rm -rf --one-file-system "$dir.tmp"
	if ! debootstrap --variant=minbase --keyring="$RS_KEYRING" "$suite" "$dir.tmp" "$RS_MIRROR" \
		>"$log" 2>&1; then
		tail -n 30 "$log" >&2
		rm -rf --one-file-system "$dir.tmp"
		rs_die "debootstrap $suite failed (log: $log)"
	fi
	mkdir -p "$dir.tmp/usr/share/keyrings"
	cp "$RS_KEYRING" "$dir.tmp$RS_KEYRING"
	cat >"$dir.tmp/etc/apt/sources.list"
	apt-config dump | grep -E '^Acquire::(Check-Valid-Until|Check-Date|(https?|ftp)::Proxy)[ :]' \
		>"$dir.tmp/etc/apt/apt.conf.d/00rseq-slice-host" || true
	touch "$dir.tmp/.rs-debootstrap.done"
	rm -rf --one-file-system "$dir"
	mv -T "$dir.tmp" "$dir"
	rs_log "debootstrap $suite into $dir: $((SECONDS - t)) s"
}

# rs_chroot SUITE KVER COMPILER: the build chroot of Debian SUITE,
# $RS_CACHE/chroot-SUITE (debootstrap --variant=minbase, then COMPILER,
# make and linux-headers-KVER), for kernels built by a compiler this host
# does not have. Sets RS_CHROOT and RS_KDIR (the kbuild tree, a path inside
# the chroot). Made once and shared by every clone; later kernel versions
# only add their headers. No bind mounts: the module's sources are copied in
# (rs_build_module), so nothing of the host is reachable from it; its /proc
# is mounted only in a private namespace for each command (rs_in_chroot).
rs_chroot() {
	local suite=$1 kver=$2 cc=$3 root=$RS_CACHE/chroot-$1 lock t
	exec {lock}>"$RS_CACHE/chroot-$suite.lock"
	flock "$lock"
	rs_chroot_root "$suite"
	# shellcheck disable=SC2016 # dpkg-query's format, not the shell's
	if ! rs_in_chroot "$root" dpkg-query -W -f='${Status}\n' "$cc" make "linux-headers-$kver" \
		2>/dev/null | grep -c 'ok installed' | grep -qx 3; then
		[ "$(id -u)" -eq 0 ] || rs_die "the Debian $suite build chroot lacks linux-headers-$kver; installing them needs root"
		rs_log "installing $cc, make and linux-headers-$kver in the $suite build chroot"
		t=$SECONDS
		# The host's apt settings that make its archive reachable apply
		# inside too, as they do to the private configurations: validity
		# checks (a mirror's frozen Release files) and proxies.
		apt-config dump | grep -E '^Acquire::(Check-Valid-Until|Check-Date|(https?|ftp)::Proxy)[ :]' \
			>"$root/etc/apt/apt.conf.d/00rseq-slice-host" || true
		{
			rs_in_chroot "$root" apt-get -q update &&
				rs_in_chroot "$root" apt-get -q -y --no-install-recommends install \
					"$cc" make "linux-headers-$kver"
		} >>"$RS_CACHE/chroot-$suite.log" 2>&1 ||
			{ tail -n 30 "$RS_CACHE/chroot-$suite.log" >&2; rs_die "installing linux-headers-$kver in the $suite chroot failed (log: $RS_CACHE/chroot-$suite.log)"; }
		# The image the headers pull in is not needed: only its files.
		rs_in_chroot "$root" apt-get -q clean >/dev/null 2>&1 || true
		rs_log "$suite chroot packages: $((SECONDS - t)) s"
	fi
	exec {lock}>&-
	RS_CHROOT=$root
	RS_KDIR=/usr/src/linux-headers-$kver
}

# rs_chroot_root SUITE: debootstraps $RS_CACHE/chroot-SUITE if it is not
# there yet. The caller holds $RS_CACHE/chroot-SUITE.lock.
rs_chroot_root() {
	local suite=$1 root=$RS_CACHE/chroot-$1
	[ -f "$root/.rs-debootstrap.done" ] && return 0
	[ "$(id -u)" -eq 0 ] || rs_die "the Debian $suite build chroot does not exist yet; making it needs root (debootstrap)"
	rs_log "making the Debian $suite build chroot $root (debootstrap --variant=minbase)"
	rs_debootstrap "$suite" "$root" "$RS_CACHE/chroot-$suite.log" < <(rs_apt_sources "$suite")
}

# rs_chroot_arm64: the build chroot of RS_CHROOT_SUITE (trixie, sid) made
# ready to cross-build for the arm64 kernel RS_KVER of RS_ARM64_SUITE: the
# arm64 linux-headers-VERSION and -common packages (from the suite's arm64
# private apt) unpacked into it, at the paths they are made for
# (/usr/src/...), and, installed by its own apt, the suite's cross compiler
# that built the kernel (the gcc-N the headers' .kernelvariables name, as
# gcc-N-aarch64-linux-gnu), the amd64 linux-kbuild-VERSION (fixdep,
# modpost: they run here), make, and dwarves (pahole: BTF for modules).
# Sets RS_CHROOT; RS_KDIR is rs_kernel's.
rs_chroot_arm64() {
	local suite=$RS_CHROOT_SUITE root=$RS_CACHE/chroot-$RS_CHROOT_SUITE lock t tmp d
	local hdr=/usr/src/linux-headers-$RS_KVER common kbuild cc
	exec {lock}>"$RS_CACHE/chroot-$suite.lock"
	flock "$lock"
	rs_chroot_root "$suite"
	if [ ! -f "$root$hdr/.rs-arm64.done" ]; then
		[ "$(id -u)" -eq 0 ] || rs_die "the Debian $suite build chroot lacks the arm64 headers of $RS_KVER; installing them needs root"
		t=$SECONDS
		common=$(rs_apt_cache "$RS_ARM64_SUITE" depends "linux-headers-$RS_KVER" |
			sed -n 's/^ *Depends: \(linux-headers-.*-common\)$/\1/p')
		kbuild=$(rs_apt_cache "$RS_ARM64_SUITE" depends "linux-headers-$RS_KVER" |
			sed -n 's/^ *Depends: \(linux-kbuild-[^: ]*\).*$/\1/p' | head -n1)
		if [ -z "$common" ] || [ -z "$kbuild" ]; then
			rs_die "no -common or linux-kbuild dependency of linux-headers-$RS_KVER in $RS_ARM64_SUITE"
		fi
		rs_log "unpacking linux-headers-$RS_KVER and $common (arm64) into the $suite build chroot"
		tmp=$(mktemp -d "$RS_CACHE/dl.XXXXXX")
		(cd "$tmp" && rs_apt "$RS_ARM64_SUITE" download "linux-headers-$RS_KVER" "$common" >/dev/null) ||
			{ rm -rf "$tmp"; rs_die "cannot download the arm64 headers of $RS_KVER"; }
		for d in "$tmp"/*.deb; do
			dpkg-deb -x "$d" "$root"
		done
		rm -rf "$tmp"
		cc=$(sed -n 's/^CC = .*(CROSS_COMPILE)\(gcc-[0-9]*\)$/\1/p' "$root$hdr/.kernelvariables")
		[ -n "$cc" ] || rs_die "no compiler named in $root$hdr/.kernelvariables"
		rs_log "installing $cc-aarch64-linux-gnu, $kbuild (amd64), make and dwarves in the $suite build chroot"
		apt-config dump | grep -E '^Acquire::(Check-Valid-Until|Check-Date|(https?|ftp)::Proxy)[ :]' \
			>"$root/etc/apt/apt.conf.d/00rseq-slice-host" || true
		{
			rs_in_chroot "$root" apt-get -q update &&
				rs_in_chroot "$root" apt-get -q -y --no-install-recommends install \
					"$cc-aarch64-linux-gnu" "$kbuild" make dwarves
		} >>"$RS_CACHE/chroot-$suite.log" 2>&1 ||
			{ tail -n 30 "$RS_CACHE/chroot-$suite.log" >&2; rs_die "installing the arm64 cross tools in the $suite chroot failed (log: $RS_CACHE/chroot-$suite.log)"; }
		rs_in_chroot "$root" apt-get -q clean >/dev/null 2>&1 || true
		touch "$root$hdr/.rs-arm64.done"
		rs_log "$suite chroot, arm64 cross build of $RS_KVER: $((SECONDS - t)) s"
	fi
	exec {lock}>&-
	RS_CHROOT=$root
}

# rs_in_chroot ROOT CMD...: CMD inside ROOT with a clean environment and
# its own /proc (objtool reads /proc/self/limits), mounted in a mount
# namespace of its own: it goes away with CMD, even if CMD is killed, and
# the host's mounts never change.
rs_in_chroot() {
	local root=$1 prop=private
	shift
	# Inside a chroot (scripts/fresh-check's root: its / is no mount
	# point) unshare cannot make / private ("cannot change root filesystem
	# propagation"); there the mounts are already those of a private
	# namespace (the outer rs_in_chroot's), so they stay as they are.
	mountpoint -q / || prop=unchanged
	unshare --mount --propagation "$prop" --pid --fork --mount-proc="$root/proc" chroot "$root" /usr/bin/env -i \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}

# rs_abi_list SUITE SERIES FLAVOUR: every ABI of Debian 12's SERIES (6.1,
# 6.12) in flavour FLAVOUR (amd64, cloud-amd64, rt-amd64, arm64,
# cloud-arm64, rt-arm64, arm64-16k) whose image and headers SUITE's
# (refreshed) lists name, oldest first: 6.1.0-47-amd64, ...
rs_abi_list() {
	local suite=$1 series=$2 flav=$3 re
	case "$series" in
	6.1) re='6\.1\.0-[0-9]+' ;;
	6.12) re='6\.12\.[0-9]+\+deb12' ;;
	*) rs_die "no Debian 12 kernel series $series" ;;
	esac
	rs_lists_fresh "$suite"
	# Both packages, by name (never -dbg or -unsigned): an ABI whose
	# headers are gone cannot be built against.
	{ rs_apt_cache "$suite" pkgnames linux- || true; } |
		sed -nE -e "s/^linux-image-($re-$flav)\$/\1 image/p" \
			-e "s/^linux-headers-($re-$flav)\$/\1 headers/p" |
		sort -u | awk '{ n[$1]++ } END { for (k in n) if (n[k] == 2) print k }' | sort -V
}

# rs_kernel_abi RELEASE NAME: rs_kernel's work for one Debian 12 ABI by
# its release (6.1.0-50 means 6.1.0-50-amd64): image and kbuild tree from
# bookworm's private apt (bookworm-arm64 for an -arm64 one).
rs_kernel_abi() {
	local k=$1 name=$2 suite=bookworm
	[ -n "$k" ] || rs_die "kernel $name: no such ABI in Debian 12's lists"
	case "$k" in
	*-amd64|*-arm64|*-arm64-16k) ;;
	*) k=$k-amd64 ;;
	esac
	case "$k" in *-arm64|*-arm64-16k) suite=bookworm-arm64 RS_ARCH=arm64 RS_ARM64_SUITE=bookworm-arm64 ;; esac
	rs_lists_fresh "$suite"
	if ! rs_apt_cache "$suite" show "linux-image-$k" >/dev/null 2>&1; then
		rs_die "kernel $name: Debian 12's lists (of $(rs_lists_date "$suite")) have no linux-image-$k; scripts/abi-matrix --list names those they have"
	fi
	RS_KVER=$k
	rs_debian_kernel "$k" "$suite" || rs_die "linux-image-$k cannot be fetched"
	rs_log "kernel $name: $k, by name, from Debian 12's lists of $(rs_lists_date "$suite")"
	[ "$RS_ARCH" = arm64 ] || RS_KBUILD_SUITE=bookworm
	RS_BZIMAGE=$RS_CACHE/kernels/$k/vmlinuz
	RS_EXTRA=$RS_CACHE/kernels/$k/extra
	RS_KDIR=$(rs_kbuild_dir "$suite" "$k")/root/usr/src/linux-headers-$k
}

# rs_kernel NAME: sets RS_KVER (uname -r), RS_BZIMAGE, RS_KDIR (kbuild tree
# for the module, empty if there is none), RS_CHROOT_SUITE (the suite whose
# build chroot RS_KDIR is in, or empty for the host's), RS_EXTRA (a
# folder of modules to load first, or empty) and RS_ARCH (the guest's
# architecture: amd64, or arm64 for the NAME-arm64 kernels).
rs_kernel() {
	RS_EXTRA=
	RS_CHROOT=
	RS_CHROOT_SUITE=
	RS_ARCH=amd64
	RS_ARM64_SUITE=
	RS_KBUILD_SUITE=
	mkdir -p "$RS_CACHE"
	case "$1" in
	6.1-arm64|6.12-arm64|6.1-arm64-cloud|6.1-arm64-rt|6.12-arm64-cloud|6.12-arm64-rt|6.12-arm64-16k)
		# Debian 12's arm64 kernels and their flavours (cloud,
		# PREEMPT_RT, 16 KB pages), from bookworm-arm64's private apt;
		# the module is cross-built against their headers
		# (rs_kbuild_arm64, when rs_build_module needs them).
		local meta
		case "$1" in
		6.1-arm64) meta=linux-image-arm64 ;;
		6.1-arm64-*) meta=linux-image-${1#6.1-arm64-}-arm64 ;;
		6.12-arm64) meta=linux-image-6.12-arm64 ;;
		6.12-arm64-16k) meta=linux-image-6.12-arm64-16k ;;
		6.12-arm64-*) meta=linux-image-6.12-${1#6.12-arm64-}-arm64 ;;
		esac
		RS_ARCH=arm64
		RS_ARM64_SUITE=bookworm-arm64
		rs_debian_meta "$meta" "$1" "$RS_ARM64_SUITE"
		RS_BZIMAGE=$RS_CACHE/kernels/$RS_KVER/vmlinuz
		RS_EXTRA=$RS_CACHE/kernels/$RS_KVER/extra
		RS_KDIR=$(rs_kbuild_dir "$RS_ARM64_SUITE" "$RS_KVER")/root/usr/src/linux-headers-$RS_KVER
		return 0 ;;
	6.1-oldest|6.12-oldest|6.1-arm64-oldest|6.12-arm64-oldest)
		# The oldest ABI of the series Debian 12's archive still has
		# (the point release's, which a machine installed from current
		# media and never updated runs): the generic flavour.
		local series=${1%%-*} suite=bookworm flav=amd64
		case "$1" in *-arm64-*) suite=bookworm-arm64 flav=arm64 ;; esac
		rs_kernel_abi "$(rs_abi_list "$suite" "$series" "$flav" | head -n1)" "$1"
		return 0 ;;
	6.1.0-[0-9]*|6.12.[0-9]*+deb12*)
		# One ABI by name: 6.1.0-50 (generic amd64), 6.1.0-50-rt-amd64,
		# 6.12.107+deb12-arm64, ... (scripts/abi-matrix --list).
		rs_kernel_abi "$1" "$1"
		return 0 ;;
	trixie-arm64|sid-arm64)
		# Debian 13's arm64 6.12 (gcc-14) and sid's arm64 7.2, from
		# the suite's arm64 private apt. Cross-built by the suite's
		# own cross compiler, in the amd64 build chroot of the suite
		# that the trixie and sid lanes use (rs_chroot_arm64, when
		# rs_build_module needs it), against the arm64 headers
		# unpacked into it.
		RS_ARCH=arm64
		RS_ARM64_SUITE=$1
		rs_debian_meta linux-image-arm64 "$1" "$RS_ARM64_SUITE"
		RS_CHROOT_SUITE=${1%-arm64}
		RS_BZIMAGE=$RS_CACHE/kernels/$RS_KVER/vmlinuz
		RS_EXTRA=$RS_CACHE/kernels/$RS_KVER/extra
		RS_KDIR=/usr/src/linux-headers-$RS_KVER
		return 0 ;;
	6.1|6.12|6.1-cloud|6.1-rt|6.12-cloud|6.12-rt)
		# Debian 12's amd64 kernels, the newest ABI bookworm's
		# private lists name (refreshed: rs_lists_fresh), and its other
		# flavours: the cloud images' kernel and PREEMPT_RT, same
		# source and compiler as the generic one. The kbuild tree is
		# unpacked into the cache (rs_kbuild), not installed.
		local meta
		case "$1" in
		6.1) meta=linux-image-amd64 ;;
		6.12) meta=linux-image-6.12-amd64 ;;
		6.1-*) meta=linux-image-${1#6.1-}-amd64 ;;
		6.12-*) meta=linux-image-6.12-${1#6.12-}-amd64 ;;
		esac
		RS_KBUILD_SUITE=bookworm
		rs_debian_meta "$meta" "$1" bookworm
		RS_BZIMAGE=$RS_CACHE/kernels/$RS_KVER/vmlinuz
		RS_EXTRA=$RS_CACHE/kernels/$RS_KVER/extra
		RS_KDIR=$(rs_kbuild_dir bookworm "$RS_KVER")/root/usr/src/linux-headers-$RS_KVER
		return 0 ;;
	trixie|sid)
		# Built by compilers this host lacks (gcc-14, gcc-16): their
		# headers and the module's build live in a chroot of the suite.
		# The chroot is made when the module is built (rs_build_module):
		# a guest without the module does not need it.
		rs_debian_meta linux-image-amd64 "$1" "$1"
		RS_CHROOT_SUITE=$1
		RS_KDIR=/usr/src/linux-headers-$RS_KVER
		RS_BZIMAGE=$RS_CACHE/kernels/$RS_KVER/vmlinuz
		RS_EXTRA=$RS_CACHE/kernels/$RS_KVER/extra
		return 0 ;;
	6.1-debug|7.2-base|7.2-upstream)
		# Built here (scripts/build-kernel), cached; the object tree
		# is the kbuild tree. 7.2-upstream has upstream's extension
		# built in, and the module refuses such a kernel (EBUSY):
		# it boots without the module, as a bare bzImage does.
		RS_KDIR=$("$RS_TOP/scripts/build-kernel" "$1" | tail -n1) ||
			rs_die "the $1 kernel did not build"
		RS_BZIMAGE=$RS_KDIR/arch/x86/boot/bzImage
		RS_KVER=$(cat "$RS_KDIR/include/config/kernel.release")
		[ "$1" = 7.2-upstream ] && RS_KDIR=
		return 0 ;;
	*)
		[ -f "$1" ] || rs_die "--kernel: no such kernel or file: $1"
		RS_BZIMAGE=$(readlink -f "$1")
		# "Linux kernel x86 boot executable bzImage, version 7.2.13 (...)"
		RS_KVER=$(file -bL "$RS_BZIMAGE" | sed -n 's/.*version \([^ ]*\) .*/\1/p')
		RS_KDIR=
		if [ -n "$RS_KVER" ] && [ -d "/lib/modules/$RS_KVER/build" ]; then
			RS_KDIR=/lib/modules/$RS_KVER/build
		fi
		return 0 ;;
	esac
	RS_BZIMAGE=$RS_CACHE/kernels/$RS_KVER/vmlinuz
	RS_EXTRA=$RS_CACHE/kernels/$RS_KVER/extra
	RS_KDIR=/lib/modules/$RS_KVER/build
}

# rs_cross_arm64: sets RS_CROSS, the prefix of an arm64 cross toolchain
# (${RS_CROSS}gcc, ...ld, ...ar; RS_CROSS_CC: the C compiler), Debian 12's
# gcc-12-aarch64-linux-gnu and binutils-aarch64-linux-gnu, unpacked into
# the cache rather than installed:
# gcc-12-aarch64-linux-gnu conflicts with the gcc-multilib meta package
# the -m32 builds need, and on a machine other clones use too, installing
# it would take gcc-multilib away from them (and their rs_host_pkgs would
# take the cross compiler away again). The unpacked gcc finds its cc1, as,
# ld, headers and libraries relative to itself; the wrappers in
# cross-arm64/bin give it and binutils their shared libraries (libbfd,
# libopcodes, libctf of the arm64 binutils). The host's gcc-12 provides
# the rest (libisl, libmpc, ...: the cross compiler is the same gcc).
# The C library is not libc6-dev-arm64-cross (glibc 2.36-8, as bookworm
# was released, without the AT_RSEQ_* the host's 2.36-9+deb12u* has) but
# the arm64 libc6, libc6-dev and linux-libc-dev of the host's own glibc
# and uapi versions (bookworm-arm64's private apt), laid out as the cross
# packages are (usr/aarch64-linux-gnu/{include,lib}): the arm64 tests are
# built against the same headers as the amd64 ones.
rs_cross_arm64() {
	rs_cross_unpack arm64
	RS_CROSS_BIN=$RS_CACHE/cross-arm64/bin
	RS_CROSS=$RS_CROSS_BIN/aarch64-linux-gnu-
	RS_CROSS_CC=${RS_CROSS}gcc
}

# rs_cross_armhf: the same for AArch32 (compat) programs on the arm64
# guests, gcc-12-arm-linux-gnueabihf and armhf's C library; sets
# RS_CROSS32_CC.
rs_cross_armhf() {
	rs_cross_unpack armhf
	RS_CROSS32_CC=$RS_CACHE/cross-armhf/bin/arm-linux-gnueabihf-gcc
}

# rs_cross_unpack ARCH (arm64, armhf): the work of rs_cross_arm64 and
# rs_cross_armhf, into $RS_CACHE/cross-ARCH.
rs_cross_unpack() {
	local a=$1 tr d=$RS_CACHE/cross-$1 tmp deb t lock stamp pkgs libc
	case "$a" in
	arm64) tr=aarch64-linux-gnu ;;
	armhf) tr=arm-linux-gnueabihf ;;
	*) rs_die "no cross toolchain known for $a" ;;
	esac
	pkgs="gcc-12-$tr cpp-12-$tr gcc-12-$tr-base binutils-$tr libgcc-12-dev-$a-cross libgcc-s1-$a-cross"
	libc="libc6:$a libc6-dev:$a linux-libc-dev:$a"
	# shellcheck disable=SC2086 # a list of package names
	stamp=$(printf '%s\n' 5 $pkgs $libc | sha256sum | cut -c1-12)
	mkdir -p "$d"
	exec {lock}>"$d/.lock"
	flock "$lock"
	if [ "$(cat "$d/.done" 2>/dev/null)" != "$stamp" ]; then
		rs_need_pkgs gcc-12
		rs_log "unpacking the $a cross toolchain into $d"
		tmp=$(mktemp -d "$RS_CACHE/dl.XXXXXX")
		# shellcheck disable=SC2086 # a list of package names
		(cd "$tmp" && apt-get -o APT::Sandbox::User=root download -q $pkgs >/dev/null) ||
			{ rm -rf "$tmp"; rs_die "apt-get download of the $a cross toolchain failed"; }
		mkdir -p "$tmp/libc"
		# shellcheck disable=SC2086 # a list of package names
		(cd "$tmp/libc" && rs_apt bookworm-arm64 download $libc >/dev/null 2>&1) ||
			{ rs_apt bookworm-arm64 update >/dev/null 2>&1 &&
				(cd "$tmp/libc" && rs_apt bookworm-arm64 download $libc >/dev/null); } ||
			{ rm -rf "$tmp"; rs_die "apt-get download of the $a C library failed"; }
		rm -rf "${d:?}/root" "${d:?}/bin"
		mkdir -p "$d/root/usr/$tr/lib" "$d/root/usr/$tr/include" "$d/bin"
		for deb in "$tmp"/*.deb; do
			dpkg-deb -x "$deb" "$d/root"
		done
		for deb in "$tmp"/libc/*.deb; do
			dpkg-deb -x "$deb" "$tmp/libc/x"
		done
		t=$tmp/libc/x
		cp -a "$t"/usr/include/. "$d/root/usr/$tr/include/"
		cp -a "$t/usr/include/$tr/." "$d/root/usr/$tr/include/"
		rm -rf "${d:?}/root/usr/$tr/include/$tr"
		for t in "$t/lib/$tr" "$t/usr/lib/$tr"; do
			[ -d "$t" ] && cp -a "$t"/. "$d/root/usr/$tr/lib/"
		done
		rm -rf "$tmp"
		# Absolute symbolic links (libm.so -> /lib/TRIPLET/...) point at
		# their files here.
		for t in "$d/root/usr/$tr/lib"/*; do
			[ -L "$t" ] && case $(readlink "$t") in /*)
				ln -sf "$(basename "$(readlink "$t")")" "$t" ;;
			esac
		done
		# The C library's linker scripts (libc.so, libm.so) name their
		# parts by absolute paths (/lib/TRIPLET/libc.so.6,
		# /usr/lib/TRIPLET/libc_nonshared.a, /lib/ld-...): here.
		for t in "$d/root/usr/$tr/lib"/*.so; do
			grep -q 'GNU ld script' "$t" 2>/dev/null || continue
			sed -i -e "s|/usr/lib/$tr/|$d/root/usr/$tr/lib/|g" \
				-e "s|/lib/$tr/|$d/root/usr/$tr/lib/|g" \
				-e "s| /lib/ld-linux-| $d/root/usr/$tr/lib/ld-linux-|g" "$t"
		done
		for t in "$d/root/usr/bin/$tr"-*; do
			# shellcheck disable=SC2016 # $LD_LIBRARY_PATH: the wrapper's
			printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' \
				"$d" "$t" >"$d/bin/${t##*/}"
			chmod 0755 "$d/bin/${t##*/}"
		done
		# Kbuild's $(CROSS_COMPILE)gcc, and the usual names.
		for t in gcc cpp gcc-ar gcc-nm gcc-ranlib; do
			ln -sf "$tr-$t-12" "$d/bin/$tr-$t"
		done
		echo "$stamp" >"$d/.done"
	fi
	exec {lock}>&-
	# The static C library's headers and objects are found by the
	# compiler itself (root/usr/TRIPLET), as in an installed one.
	"$d/bin/$tr-gcc" -print-file-name=libc.a | grep -q / ||
		rs_die "the $a cross compiler in $d does not work"
}

# rs_kbuild SUITE KVER: the kbuild tree of Debian kernel KVER (amd64 or
# arm64, from SUITE's private apt: bookworm, bookworm-arm64), unpacked into
# the cache, never installed: its linux-headers-KVER and -common packages
# and the amd64 linux-kbuild (fixdep, modpost and the rest run here), the
# headers' Makefile pointed at the unpacked common tree (it includes
# /usr/src/linux-headers-...-common/Makefile). Sets RS_KDIR. The host's apt
# and its lists play no part: every ABI the archive has can be built
# against, whatever the host last updated to (scripts/abi-matrix).
# The flavours of one ABI share one tree, $RS_CACHE/kbuild/SUITE/ABI/
# (6.1.0-47-amd64 and -cloud-amd64 one -common; -rt-amd64 its own
# -common-rt), each package unpacked there once (a stamp per package).
# rs_kbuild_dir SUITE KVER: where rs_kbuild puts KVER's tree (the ABI's).
rs_kbuild_dir() {
	echo "$RS_CACHE/kbuild/$1/$(printf '%s\n' "$2" |
		sed -E 's/^(6\.1\.0-[0-9]+|6\.12\.[0-9]+\+deb[0-9]+|[0-9.]+[-+][^-]*)-.*$/\1/')"
}
rs_kbuild() {
	local suite=$1 kver=$2 dir tmp deps d lock kb= p want=()
	dir=$(rs_kbuild_dir "$suite" "$kver")
	mkdir -p "$dir"
	exec {lock}>"$dir/.lock"
	flock "$lock"
	if [ ! -f "$dir/.done-$kver" ]; then
		rs_lists_fresh "$suite"
		# An arm64 configuration has amd64 as a foreign architecture.
		case "$suite" in *-arm64) kb=:amd64 ;; esac
		deps=$(rs_apt_cache "$suite" depends "linux-headers-$kver" |
			sed -n -e 's/^ *Depends: \(linux-headers-.*-common[-a-z0-9]*\)$/\1/p' \
				-e "s/^ *Depends: \\(linux-kbuild-[^: ]*\\).*\$/\\1$kb/p" | sort -u)
		[ -n "$deps" ] || rs_die "no -common or linux-kbuild dependency of linux-headers-$kver in Debian $suite's lists"
		for p in "linux-headers-$kver" $deps; do
			[ -f "$dir/.pkg-${p%:*}" ] || want+=("$p")
		done
		if [ ${#want[@]} -gt 0 ]; then
			rs_log "fetching ${want[*]} (the kbuild tree of $kver, unpacked into the cache)"
			tmp=$(mktemp -d "$RS_CACHE/dl.XXXXXX")
			(cd "$tmp" && rs_apt "$suite" download "${want[@]}" >/dev/null) ||
				{ rm -rf "$tmp"; rs_die "cannot download the headers of $kver from Debian $suite"; }
			for d in "$tmp"/*.deb; do
				dpkg-deb -x "$d" "$dir/root"
			done
			rm -rf "$tmp"
			for p in "${want[@]}"; do
				touch "$dir/.pkg-${p%:*}"
			done
		fi
		sed -i "s|^include /usr/src/|include $dir/root/usr/src/|" \
			"$dir/root/usr/src/linux-headers-$kver/Makefile"
		touch "$dir/.done-$kver"
	fi
	exec {lock}>&-
	RS_KDIR=$dir/root/usr/src/linux-headers-$kver
}

# rs_kbuild_arm64: rs_kbuild for rs_kernel's arm64 kernel (RS_KVER of
# RS_ARM64_SUITE).
rs_kbuild_arm64() {
	rs_kbuild "$RS_ARM64_SUITE" "$RS_KVER"
}

# rs_busybox_arm64: sets RS_BUSYBOX_ARM64, the static busybox of the
# arm64 guests: busybox-static:arm64 of RS_ARM64_SUITE (bookworm-arm64 by
# default), unpacked into the cache (its applets are those of the host's
# /bin/busybox, the same Debian version).
rs_busybox_arm64() {
	local d=$RS_CACHE/arm64-busybox tmp lock
	mkdir -p "$d"
	exec {lock}>"$d/.lock"
	flock "$lock"
	if [ ! -s "$d/busybox" ]; then
		rs_log "fetching busybox-static:arm64 from Debian ${RS_ARM64_SUITE:-bookworm-arm64}"
		tmp=$(mktemp -d "$RS_CACHE/dl.XXXXXX")
		(cd "$tmp" && rs_apt "${RS_ARM64_SUITE:-bookworm-arm64}" download busybox-static >/dev/null) ||
			{ rm -rf "$tmp"; rs_die "cannot download busybox-static:arm64"; }
		dpkg-deb -x "$tmp"/busybox-static_*.deb "$tmp/x"
		cp "$tmp/x/bin/busybox" "$d/busybox.tmp" && mv "$d/busybox.tmp" "$d/busybox"
		rm -rf "$tmp"
	fi
	exec {lock}>&-
	RS_BUSYBOX_ARM64=$d/busybox
}

# Build rseq_slice.ko against RS_KDIR, and the test module the selftests
# load (selftests/kmod); sets RS_MODULE and RS_TEST_MODULES. The sources
# are mirrored with their times, so kbuild rebuilds only what changed.
# For RS_CHROOT_SUITE's kernels (trixie: gcc-14, sid: gcc-16) the build
# runs in that suite's chroot (rs_chroot, made or completed first), in its
# /rs-build/VERSION/TREE, the same layout as the host's.
rs_build_module() {
	local out=$RS_CACHE/build/$RS_KVER/$RS_TREE in d lock cc=gcc-14 kargs=()
	if [ "${RS_ARCH:-amd64}" = arm64 ] && [ -n "${RS_CHROOT_SUITE:-}" ]; then
		# trixie-arm64, sid-arm64: the suite's cross compiler, in its
		# chroot, against the arm64 headers unpacked there.
		rs_chroot_arm64
		kargs=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)
	elif [ "${RS_ARCH:-amd64}" = arm64 ]; then
		# Cross-built: the kbuild tree and the compiler are the cache's.
		rs_cross_arm64
		rs_kbuild_arm64
		# By name, on PATH: 6.12's headers (a cross-built kernel) set
		# "override CROSS_COMPILE = aarch64-linux-gnu-" themselves.
		kargs=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- PATH="$RS_CROSS_BIN:$PATH")
	elif [ -n "${RS_CHROOT_SUITE:-}" ]; then
		[ "$RS_CHROOT_SUITE" = sid ] && cc=gcc-16
		rs_chroot "$RS_CHROOT_SUITE" "$RS_KVER" "$cc"
	elif [ -n "${RS_KBUILD_SUITE:-}" ]; then
		# Debian 12's amd64 kernels: the cache's kbuild tree.
		rs_kbuild "$RS_KBUILD_SUITE" "$RS_KVER"
	fi
	# A build on the host: kbuild, and pahole (dwarves) for the BTF of
	# modules that kernels with CONFIG_DEBUG_INFO_BTF_MODULES generate
	# when their headers carry vmlinux's BTF (6.12-arm64: "pahole: not
	# found" ended a fresh machine's first run).
	[ -n "${RS_CHROOT:-}" ] || rs_need_pkgs make gcc libc6-dev libelf-dev bc dwarves rsync
	[ -n "${RS_CHROOT:-}" ] && out=$RS_CHROOT/rs-build/$RS_KVER/$RS_TREE
	in=${out#"${RS_CHROOT:-}"}
	mkdir -p "$out"
	# Build products are excluded, hence kept by --delete.
	for d in src "fi"; do
		rsync -a --delete --exclude '*.o' --exclude '*.ko' --exclude '.*.cmd' \
			--exclude '*.mod*' --exclude 'Module.symvers' --exclude 'modules.order' \
			"$RS_TOP/Kbuild" "$RS_TOP/module" "$RS_TOP/uapi" "$out/$d/"
	done
	rsync -a --delete --exclude '*.o' --exclude '*.ko' --exclude '.*.cmd' \
		--exclude '*.mod*' --exclude 'Module.symvers' --exclude 'modules.order' \
		"$RS_TOP/selftests/kmod/" "$out/kmod/"
	rs_kmake() {
		if [ -n "${RS_CHROOT:-}" ]; then
			rs_in_chroot "$RS_CHROOT" make -C "$RS_KDIR" "${kargs[@]}" "$@"
		else
			make -C "$RS_KDIR" "${kargs[@]}" "$@"
		fi
	}
	# Two guests of one kernel may start at once: one build at a time.
	exec {lock}>"$out/.lock"
	flock "$lock"
	# fi/: the fault injection build, which only the selftests load.
	if ! rs_kmake M="$in/src" modules >"$out/build.log" 2>&1 ||
		! rs_kmake M="$in/fi" RSEQ_SLICE_FAULT_INJECT=y modules >>"$out/build.log" 2>&1 ||
		! rs_kmake M="$in/kmod" modules >>"$out/build.log" 2>&1; then
		cat "$out/build.log" >&2
		rs_die "module build against $RS_KVER${RS_CHROOT:+ (in $RS_CHROOT)} failed"
	fi
	# Loaded under its own file name; the module's name stays rseq_slice.
	cp "$out/fi/rseq_slice.ko" "$out/fi/rseq_slice_fi.ko"
	exec {lock}>&-
	RS_MODULE=$out/src/rseq_slice.ko
	RS_TEST_MODULES="$out/kmod/ipmodify_hog.ko $out/fi/rseq_slice_fi.ko"
}

# Packages of other Debian suites (sid's linux-source-7.2 for upstream's
# rseq selftests, the trixie and sid kernels) come through apt-get with a
# private configuration per suite under the cache, $RS_CACHE/apt-SUITE: its
# own sources.list (signed by the host's debian-archive-keyring), lists,
# cache and an empty dpkg status, so the host's sources and state are never
# touched. Only the host's apt.conf.d settings (proxies, validity checks)
# still apply.
RS_UPSTREAM_PKG=linux-source-7.2
RS_KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
RS_MIRROR=http://deb.debian.org/debian

# The sources.list lines of a suite (also written into its build chroot).
# SUITE-arm64 (bookworm-arm64, trixie-arm64, sid-arm64): the same archive
# for the arm64 lanes' kernels, headers and guest packages; its private
# configuration (rs_apt_conf) has arm64 as its architecture, amd64 as a
# foreign one (the kbuild tools that run on this host).
RS_SECURITY=http://security.debian.org/debian-security
rs_apt_sources() {
	case "$1" in
	sid|sid-arm64) echo "deb [signed-by=$RS_KEYRING] $RS_MIRROR sid main" ;;
	trixie|trixie-arm64)
		echo "deb [signed-by=$RS_KEYRING] $RS_MIRROR trixie main"
		echo "deb [signed-by=$RS_KEYRING] $RS_SECURITY trixie-security main" ;;
	bookworm|bookworm-arm64)
		echo "deb [signed-by=$RS_KEYRING] $RS_MIRROR bookworm main"
		echo "deb [signed-by=$RS_KEYRING] $RS_MIRROR bookworm-updates main"
		echo "deb [signed-by=$RS_KEYRING] $RS_SECURITY bookworm-security main" ;;
	*) rs_die "no apt sources known for Debian $1" ;;
	esac
}

# rs_apt_conf SUITE: sets up $RS_CACHE/apt-SUITE, prints its apt.conf.
rs_apt_conf() {
	local arch=amd64
	case "$1" in *-arm64) arch=arm64 ;; esac
	rs_apt_conf_dir "$RS_CACHE/apt-$1" "$(rs_apt_sources "$1")" "$arch"
}

# rs_apt_conf_dir DIR SOURCES [ARCH]: a private configuration in DIR with
# the sources.list lines SOURCES, for ARCH (default amd64; another one
# also has amd64 as a foreign architecture); prints its apt.conf.
rs_apt_conf_dir() {
	local d=$1 arch=${3:-amd64} archs='"amd64";'
	# arm64: amd64 for the kbuild tools, armhf for AArch32 (compat) programs.
	[ "$arch" = amd64 ] || archs="\"$arch\"; \"amd64\"; \"armhf\";"
	mkdir -p "$d/etc/sources.list.d" "$d/etc/preferences.d" "$d/etc/trusted.gpg.d" \
		"$d/state/lists/partial" "$d/cache/archives/partial"
	[ -f "$RS_KEYRING" ] || rs_need_pkgs debian-archive-keyring
	# Both files are written aside and renamed into place: another apt of
	# the same DIR may be reading them right now (two guests starting at
	# once), and an apt.conf read half written is an empty configuration,
	# under which apt silently takes the host's own lists instead (a sid
	# guest once resolved linux-image-amd64 to bookworm's 6.1 that way).
	# (The names are set first: an external command's redirection is
	# expanded in its own process, where $BASHPID is another number.)
	local srcs=$d/etc/sources.list.$BASHPID conf=$d/apt.conf.$BASHPID
	printf '%s\n' "$2" >"$srcs"
	mv -f "$srcs" "$d/etc/sources.list"
	: >>"$d/status"
	cat >"$conf" <<EOF
Dir::Etc::sourcelist "$d/etc/sources.list";
Dir::Etc::sourceparts "$d/etc/sources.list.d";
Dir::Etc::preferences "$d/etc/preferences";
Dir::Etc::preferencesparts "$d/etc/preferences.d";
Dir::Etc::trusted "$d/etc/trusted.gpg";
Dir::Etc::trustedparts "$d/etc/trusted.gpg.d";
Dir::State "$d/state";
Dir::State::status "$d/status";
Dir::Cache "$d/cache";
APT::Architecture "$arch";
APT::Architectures { $archs };
APT::Sandbox::User "$(id -un)";
Acquire::Languages "none";
EOF
	mv -f "$conf" "$d/apt.conf"
	echo "$d/apt.conf"
}

# rs_apt SUITE ARGS...: apt-get with SUITE's private configuration;
# rs_apt_cache SUITE ARGS...: apt-cache with it.
# An "update" is tried three times: a mirror in mid-sync serves an index
# of the wrong size ("File has unexpected size ... Mirror sync in
# progress?"), which failed a cold CI run (bookworm-security's armhf
# Packages, for hours). apt then drops every new index of that Release,
# and with no old ones (a cold cache) even linux-image-6.12-arm64 was
# unknown. So if the last try failed only on indexes of some
# architectures, the update runs once without those (every Release
# whole), then once more with them (what can be had of theirs; apt keeps
# the rest), and goes on with a warning: a package then missing fails
# where it is installed, by name.
rs_apt_run() {
	local conf=$1 try log bad a keep=
	shift
	if [ "$1" != update ]; then
		APT_CONFIG=$conf apt-get -q "$@"
		return
	fi
	log=$(mktemp)
	for try in 1 2 3; do
		if APT_CONFIG=$conf apt-get -q -o Acquire::Retries=3 "$@" >"$log" 2>&1; then
			cat "$log"
			rm -f "$log"
			return 0
		fi
		[ "$try" = 3 ] || { rs_log "apt-get update failed (try $try of 3), again in $((try * 10)) s"; sleep $((try * 10)); }
	done
	cat "$log"
	bad=$(sed -n 's,^E: Failed to fetch .*/dists/.*/binary-\([a-z0-9]*\)/.*,\1,p' "$log" | sort -u)
	if [ -z "$bad" ] ||
	   grep '^E: ' "$log" | grep -qvE '^E: (Failed to fetch .*/dists/.*/binary-[a-z0-9]+/.*|Some index files failed to download.*)$'; then
		rm -f "$log"
		return 1
	fi
	for a in $(sed -n 's/^APT::Architectures { \(.*\) };$/\1/p' "$conf" | tr -d '";'); do
		echo "$bad" | grep -qx "$a" || keep="$keep \"$a\";"
	done
	rs_log "apt-get update: the indexes of $(echo $bad) failed (above): updating without them, then with what there is of them"
	printf '%s\n' "#include \"$conf\";" '#clear APT::Architectures;' \
		"APT::Architectures {$keep };" >"$log.conf"
	APT_CONFIG=$log.conf apt-get -q -o Acquire::Retries=3 "$@" || { rm -f "$log" "$log.conf"; return 1; }
	APT_CONFIG=$conf apt-get -q -o Acquire::Retries=3 "$@" || true
	rm -f "$log" "$log.conf"
}
rs_apt() {
	local conf
	conf=$(rs_apt_conf "$1") || return
	shift
	rs_apt_run "$conf" "$@"
}
rs_apt_cache() {
	local conf
	conf=$(rs_apt_conf "$1") || return
	shift
	APT_CONFIG=$conf apt-cache "$@"
}
rs_sid_apt() { rs_apt sid "$@"; }

# rs_private_apt DIR SOURCES ARGS...: apt-get with a private configuration
# in DIR whose sources.list is SOURCES (QEMU's deb-src lines, say).
rs_private_apt() {
	local conf
	conf=$(rs_apt_conf_dir "$1" "$2") || return
	shift 2
	rs_apt_run "$conf" "$@"
}

# rs_upstream_src: sets RS_UPSTREAM_SRC, the top of an extracted
# linux-source-7.2 holding what upstream's rseq selftests need (their
# folder, the selftest harness, tools/include), RS_UPSTREAM_VERSION, and
# RS_UPSTREAM_DEB, the .deb (whose whole tarball scripts/build-kernel
# builds the 7.2 twins from).
# The .deb and the extracted part are cached: a warm machine does no
# network access, and fresh clones share them. sid's lists are fetched
# (private apt-get update) only when no .deb is cached yet and the lists
# do not have it (not fetched yet, or naming a version sid dropped).
rs_upstream_src() {
	local base=$RS_CACHE/upstream deb v d top=$RS_UPSTREAM_PKG lock
	mkdir -p "$base/dl"
	# Two guests may start at once: one fetch at a time.
	exec {lock}>"$base/.lock"
	flock "$lock"
	# None cached yet (a cold cache) is no error under set -e and pipefail.
	deb=$({ ls "$base/${RS_UPSTREAM_PKG}_"*.deb 2>/dev/null || true; } | sort -V | tail -n1)
	if [ -z "$deb" ]; then
		rs_log "fetching $RS_UPSTREAM_PKG from Debian sid (private apt configuration: $RS_CACHE/apt-sid)"
		rm -f "$base/dl/"*.deb
		if ! (cd "$base/dl" && rs_sid_apt download "$RS_UPSTREAM_PKG" >/dev/null 2>&1); then
			rs_sid_apt update >"$base/update.log" 2>&1 ||
				{ cat "$base/update.log" >&2; rs_die "apt-get update of Debian sid failed"; }
			(cd "$base/dl" && rs_sid_apt download "$RS_UPSTREAM_PKG" >&2) ||
				rs_die "cannot download $RS_UPSTREAM_PKG from Debian sid (gone from sid?)"
		fi
		deb=$(ls "$base/dl/"*.deb)
		mv "$deb" "$base/" && deb=$base/${deb##*/}
	fi
	v=$(dpkg-deb -f "$deb" Version) || rs_die "not a .deb: $deb"
	d=$base/${RS_UPSTREAM_PKG}_$v
	if [ ! -f "$d/.done" ]; then
		rs_log "extracting upstream's rseq selftests from $RS_UPSTREAM_PKG $v"
		rm -rf "$d"
		mkdir -p "$d"
		dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$top.tar.xz" | xz -dc |
			tar -x -C "$d" "$top/tools/testing/selftests/rseq" \
				"$top/tools/testing/selftests/kselftest_harness.h" \
				"$top/tools/testing/selftests/kselftest.h" \
				"$top/tools/include" "$top/tools/arch/x86/include" "$top/COPYING" ||
			rs_die "could not extract upstream's selftests from $deb"
		touch "$d/.done"
	fi
	# The arm64 build of upstream's selftests also needs tools/arch/arm64
	# (added beside an extraction made before the arm64 lanes).
	if [ ! -f "$d/.done-arm64" ]; then
		dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$top.tar.xz" | xz -dc |
			tar -x -C "$d" "$top/tools/arch/arm64/include" ||
			rs_die "could not extract tools/arch/arm64 from $deb"
		touch "$d/.done-arm64"
	fi
	exec {lock}>&-
	RS_UPSTREAM_SRC=$d/$top
	RS_UPSTREAM_VERSION=$v
	RS_UPSTREAM_DEB=$deb
}

# The prebuilt upstream binaries (../shared/reference), where there are.
RS_REFERENCE=$RS_TOP/../shared/reference

# The static selftest binaries for RS_ARCH (amd64 unless rs_kernel named
# an arm64 kernel); sets RS_SELFTESTS (their folder). Besides the
# project's own tests: upstream's slice_test and check_optimized, built
# here, unmodified, from $RS_UPSTREAM_PKG (upstream_*), and copies of the
# prebuilt ones (ref_*, x86-64 only), for selftests/run_upstream.sh.
# arm64: cross-built (rs_cross_arm64) into selftests-arm64-TREE.
rs_build_selftests() {
	local ref= cross=()
	RS_SELFTESTS=$RS_CACHE/build/selftests-$RS_TREE
	rs_upstream_src
	if [ "${RS_ARCH:-amd64}" = arm64 ]; then
		rs_cross_arm64
		rs_cross_armhf
		RS_SELFTESTS=$RS_CACHE/build/selftests-arm64-$RS_TREE
		cross=(CC="$RS_CROSS_CC" AR="${RS_CROSS}ar" CC32="$RS_CROSS32_CC")
	elif [ -f "$RS_REFERENCE/slice_test" ]; then
		ref=$(cd "$RS_REFERENCE" && pwd)
	fi
	make -s -C "$RS_TOP/selftests" OUT="$RS_SELFTESTS" KSFT="$RS_CACHE/ksft" \
		UPSTREAM="$RS_UPSTREAM_SRC" REFERENCE="$ref" "${cross[@]}" >&2 ||
		rs_die "selftests did not build${RS_ARCH:+ for $RS_ARCH}"
}

# rs_qemu_plugin_header: sets RS_QEMU_INC, a folder with the qemu-plugin.h
# of the installed QEMU. Debian ships QEMU's plugin support but not this
# header: it comes from the source package of the installed version
# (apt-get source --download-only, a private apt configuration with the
# host release's deb-src lines), cached with the download, so a warm
# machine does no network access.
rs_qemu_plugin_header() {
	local ver up base dir lock src codename dsc orig
	ver=$(dpkg-query -W -f='${source:Version}' qemu-system-x86) ||
		rs_die "qemu-system-x86 is not installed"
	# 1:7.2+dfsg-7+deb12u18: the upstream release is 7.2+dfsg.
	up=${ver#*:}
	up=${up%-*}
	base=$RS_CACHE/qemu
	dir=$base/${ver#*:}
	RS_QEMU_INC=$dir
	[ -s "$dir/qemu-plugin.h" ] && return 0
	mkdir -p "$base/dl"
	exec {lock}>"$base/.lock"
	flock "$lock"
	# shellcheck disable=SC1091 # the host's release file
	codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
	src="deb-src [signed-by=$RS_KEYRING] http://deb.debian.org/debian $codename main
deb-src [signed-by=$RS_KEYRING] http://deb.debian.org/debian $codename-updates main
deb-src [signed-by=$RS_KEYRING] http://deb.debian.org/debian-security $codename-security main"
	dsc=$base/dl/qemu_${ver#*:}.dsc
	if [ ! -f "$dsc" ]; then
		rs_log "fetching the source of qemu $ver (for qemu-plugin.h; private apt configuration: $RS_CACHE/apt-src)"
		if ! (cd "$base/dl" && rs_private_apt "$RS_CACHE/apt-src" "$src" \
			source --download-only "qemu=$ver" >/dev/null 2>&1); then
			rs_private_apt "$RS_CACHE/apt-src" "$src" update >"$base/update.log" 2>&1 ||
				{ cat "$base/update.log" >&2; rs_die "apt-get update of the deb-src lines failed"; }
			if ! (cd "$base/dl" && rs_private_apt "$RS_CACHE/apt-src" "$src" \
				source --download-only "qemu=$ver" >/dev/null 2>&1); then
				# Gone from the archive (a newer revision replaced it):
				# Debian does not patch the header, so any revision of
				# the same upstream release has the same API.
				rs_log "the source of qemu $ver is gone: taking $codename's newest of ${up}"
				(cd "$base/dl" && rs_private_apt "$RS_CACHE/apt-src" "$src" \
					source --download-only qemu >&2) ||
					rs_die "cannot download the source of qemu from $codename"
				dsc=$({ ls -t "$base/dl/qemu_${up}-"*.dsc 2>/dev/null || true; } | head -n1)
				[ -n "$dsc" ] || rs_die "$codename's qemu source is not upstream ${up} any more"
			fi
		fi
	fi
	orig=$(sed -n 's/^ [0-9a-f]\{64\} [0-9]* \(qemu_.*\.orig\.tar\.xz\)$/\1/p' "$dsc" | head -n1)
	if [ -z "$orig" ] || [ ! -f "$base/dl/$orig" ]; then
		rs_die "no orig tarball for qemu $ver in $base/dl"
	fi
	mkdir -p "$dir"
	tar -xJf "$base/dl/$orig" -O --wildcards '*/include/qemu/qemu-plugin.h' >"$dir/qemu-plugin.h.tmp" ||
		rs_die "no qemu-plugin.h in $orig"
	mv "$dir/qemu-plugin.h.tmp" "$dir/qemu-plugin.h"
	exec {lock}>&-
}

# rs_build_insn_plugin: builds the instruction counting plugin
# (scripts/insn-plugin) against the installed QEMU's header; sets
# RS_INSN_PLUGIN.
rs_build_insn_plugin() {
	local out=$RS_CACHE/build/insn-plugin-$RS_TREE
	rs_qemu_plugin_header
	make -s -C "$RS_TOP/scripts/insn-plugin" QEMU_INC="$RS_QEMU_INC" OUT="$out" >&2 ||
		rs_die "the instruction counting plugin did not build"
	RS_INSN_PLUGIN=$out/insn_count.so
}

# ---- Debian root file systems for the guests (scripts/vm --rootfs) ----
#
# rs_rootfs PKG...: a Debian 12 (bookworm, the host's release) user space
# for the guests, as an uncompressed cpio archive whose files all sit under
# rootfs/ (scripts/vm appends it to the initramfs; guest-init chroots into
# /rootfs). Sets RS_ROOTFS_CPIO. Cached in $RS_CACHE/rootfs/:
#   bookworm-base/        debootstrap --variant=minbase, made once
#   bookworm-KEY.cpio     the base plus PKG... (apt-get inside, no
#                         recommends), KEY a hash of the package set and
#                         of RS_ROOTFS_RECIPE: a warm run does no network
#                         access and copies nothing but the archive
# An archive rather than a disk image: Debian's kernels have virtio,
# the block layer's drivers and ext4 as modules, which an initramfs would
# have to carry per kernel; an archive boots on any of them, the debug
# and the reference kernel included. The tree lives in the guest's RAM
# (writable, gone at power-off). The host's /etc/apt is only read (its
# proxy and validity-check settings apply inside, as for rs_chroot).
RS_ROOTFS_SUITE=bookworm
# The real programs of scripts/bench --programs and scripts/test --programs
# (selftests/bench/programs.sh): sysbench, RocksDB's cache_bench,
# memcached and memaslap (memcaslap, with memcping), git (git grep).
RS_PROGRAMS_PKGS="sysbench rocksdb-tools memcached libmemcached-tools git"
# The command rseq-slice (tools/rseq-slice) in that guest, and its plot
# (selftests/bench/ab_test.sh, in scripts/test's programs lane).
RS_AB_PKGS="python3 gnuplot-nox"
# Bump when what goes into a tree changes: every cached archive is then
# made again.
RS_ROOTFS_RECIPE=1

rs_rootfs_sources() {
	echo "deb [signed-by=$RS_KEYRING] $RS_MIRROR $RS_ROOTFS_SUITE main"
	echo "deb [signed-by=$RS_KEYRING] $RS_MIRROR $RS_ROOTFS_SUITE-updates main"
	echo "deb [signed-by=$RS_KEYRING] http://security.debian.org/debian-security $RS_ROOTFS_SUITE-security main"
}

# rs_rootfs_base: RS_ROOTFS_BASE, the debootstrap --variant=minbase tree of
# RS_ROOTFS_SUITE that rs_rootfs and the DKMS lane's disk image start from,
# made once (root) and never changed: users copy it. The caller holds
# $RS_CACHE/rootfs/.lock.
rs_rootfs_base() {
	local suite=$RS_ROOTFS_SUITE base=$RS_CACHE/rootfs/$RS_ROOTFS_SUITE-base
	RS_ROOTFS_BASE=$base
	[ -f "$base/.rs-debootstrap.done" ] && return 0
	[ "$(id -u)" -eq 0 ] || rs_die "the Debian $suite base tree is not cached yet; making it needs root (debootstrap)"
	rs_log "rootfs: debootstrap --variant=minbase $suite into $base"
	rs_debootstrap "$suite" "$base" "$base.log" < <(rs_rootfs_sources)
}

rs_rootfs() {
	local suite=$RS_ROOTFS_SUITE dir=$RS_CACHE/rootfs key base lock tmp t pkgs
	pkgs=$(printf '%s\n' "$@" | sed '/^$/d' | sort -u | tr '\n' ' ')
	key=$(printf '%s\n' "$RS_ROOTFS_RECIPE" "$suite" "$pkgs" | sha256sum | cut -c1-16)
	RS_ROOTFS_CPIO=$dir/$suite-$key.cpio
	[ -s "$RS_ROOTFS_CPIO" ] && return 0
	mkdir -p "$dir"
	exec {lock}>"$dir/.lock"
	flock "$lock"
	if [ -s "$RS_ROOTFS_CPIO" ]; then
		exec {lock}>&-
		return 0
	fi
	[ "$(id -u)" -eq 0 ] || rs_die "the Debian root file system ($pkgs) is not cached yet; making it needs root (debootstrap)"
	rs_need_pkgs cpio
	rs_rootfs_base
	base=$RS_ROOTFS_BASE
	t=$SECONDS
	tmp=$(mktemp -d "$dir/$suite-$key.tmp.XXXXXX")
	cp -a "$base" "$tmp/rootfs"
	rm -f "$tmp/rootfs/.rs-debootstrap.done"
	# No service starts inside the build (memcached's postinst would).
	printf '#!/bin/sh\nexit 101\n' >"$tmp/rootfs/usr/sbin/policy-rc.d"
	chmod 0755 "$tmp/rootfs/usr/sbin/policy-rc.d"
	if [ -n "$pkgs" ]; then
		rs_log "rootfs: installing ${pkgs% }"
		# shellcheck disable=SC2086 # pkgs is a list of package names
		if ! { rs_in_chroot "$tmp/rootfs" apt-get -q update &&
			rs_in_chroot "$tmp/rootfs" apt-get -q -y --no-install-recommends install $pkgs; } \
			>"$dir/$suite-$key.log" 2>&1; then
			tail -n 30 "$dir/$suite-$key.log" >&2
			rm -rf --one-file-system "$tmp"
			rs_die "apt-get install $pkgs in the $suite root file system failed (log: $dir/$suite-$key.log)"
		fi
	fi
	rm -f "$tmp/rootfs/usr/sbin/policy-rc.d"
	# The guest's user (scripts/vm --user), its loopback name, and none
	# of what only apt and people need: lists, caches, documentation.
	rs_in_chroot "$tmp/rootfs" useradd -u 1000 -U -d /work -M -s /bin/sh user >/dev/null
	printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$tmp/rootfs/etc/hosts"
	rm -rf "$tmp/rootfs/var/lib/apt/lists/"* "$tmp/rootfs/var/cache/apt/"*.bin \
		"$tmp/rootfs/var/cache/apt/archives/"*.deb "$tmp/rootfs/usr/share/doc/"* \
		"$tmp/rootfs/usr/share/man/"* "$tmp/rootfs/usr/share/info/"* "$tmp/rootfs/usr/share/locale/"*
	mkdir -p "$tmp/rootfs/work" "$tmp/rootfs/rs"
	(cd "$tmp" && find rootfs | cpio -o -H newc --quiet) >"$RS_ROOTFS_CPIO.tmp"
	mv "$RS_ROOTFS_CPIO.tmp" "$RS_ROOTFS_CPIO"
	printf '%s\n' "$pkgs" >"${RS_ROOTFS_CPIO%.cpio}.pkgs"
	rm -rf --one-file-system "$tmp"
	rs_log "rootfs: $suite with ${pkgs% }: $((SECONDS - t)) s, $(du -m "$RS_ROOTFS_CPIO" | cut -f1) MB"
	exec {lock}>&-
}
# ---- end of Debian root file systems ----

# ---- PostgreSQL, patched for time slice extension (issue 37) ----
#
# rs_postgresql patched|stock: PostgreSQL 15 (Debian 12's), built from
# Debian's source (the upstream release, apt-get source --download-only
# with a private apt configuration of bookworm's deb-src lines; Debian's
# packaging patches are not applied: they place files for the packages),
# patched with postgresql/rseq-slice.patch (patched: spinlocks ask for time
# slice extension, librseq-slice linked in) or not (stock), configured
# without readline, zlib, ICU and NLS (nothing the guest does needs them),
# and installed under /opt/postgresql-VARIANT (relocatable, as PostgreSQL
# is). Sets RS_PG_TAR, that tree as a .tar.xz for the guest (scripts/vm
# --add; extract it at /), and RS_PG_VERSION. Cached in
# $RS_CACHE/postgresql/: dl/ the source, VERSION-VARIANT-KEY/ the build's
# log and tarball, KEY a hash of the patch, librseq-slice's sources and
# this recipe: a warm run builds and downloads nothing.
# RSEQ_SLICE_PG_PATCH=FILE: another patch than postgresql/rseq-slice.patch
# (scripts/build-postgresql --patch: a deliberately broken one, say).
# PostgreSQL 17 (the report's version) is trixie's; its source is not
# reachable from this project's mirror (404), and 15 is what a Debian 12
# operator runs.
RS_PG_SOURCE=postgresql-15
RS_PG_RECIPE=1
rs_pg_fetch() {
	local base=$1 src ver v
	src="deb-src [signed-by=$RS_KEYRING] $RS_MIRROR bookworm main
deb-src [signed-by=$RS_KEYRING] $RS_MIRROR bookworm-updates main
deb-src [signed-by=$RS_KEYRING] http://deb.debian.org/debian-security bookworm-security main"
	ls "$base/dl/${RS_PG_SOURCE}_"*.orig.tar.bz2 >/dev/null 2>&1 && return 0
	rs_log "fetching the source of $RS_PG_SOURCE (private apt configuration: $RS_CACHE/apt-src)"
	rs_private_apt "$RS_CACHE/apt-src" "$src" update >"$base/update.log" 2>&1 ||
		{ cat "$base/update.log" >&2; rs_die "apt-get update of the deb-src lines failed"; }
	# The newest first; a mirror may lack one version's files (404).
	for ver in $(APT_CONFIG=$(rs_apt_conf_dir "$RS_CACHE/apt-src" "$src") \
		apt-cache showsrc "$RS_PG_SOURCE" | sed -n 's/^Version: //p' | sort -rV | uniq); do
		if (cd "$base/dl" && rs_private_apt "$RS_CACHE/apt-src" "$src" \
			source --download-only "$RS_PG_SOURCE=$ver" >"$base/fetch.log" 2>&1); then
			v=$ver
			break
		fi
		rs_log "the source of $RS_PG_SOURCE $ver cannot be downloaded: trying an older one"
	done
	[ -n "${v:-}" ] || { cat "$base/fetch.log" >&2; rs_die "cannot download the source of $RS_PG_SOURCE"; }
	rs_log "fetched $RS_PG_SOURCE $v"
}
rs_postgresql() {
	local variant=$1 base=$RS_CACHE/postgresql orig ver key dir tmp lock t
	local patch=${RSEQ_SLICE_PG_PATCH:-$RS_TOP/postgresql/rseq-slice.patch}
	local conf=(--without-readline --without-zlib --without-icu --disable-nls)
	case "$variant" in
	patched|stock) ;;
	*) rs_die "rs_postgresql: patched or stock, not '$variant'" ;;
	esac
	rs_need_pkgs gcc make libc6-dev perl bzip2 xz-utils patch
	mkdir -p "$base/dl"
	exec {lock}>"$base/.lock"
	flock "$lock"
	rs_pg_fetch "$base"
	orig=$(ls "$base/dl/${RS_PG_SOURCE}_"*.orig.tar.bz2 | sort -V | tail -n1)
	ver=${orig##*_}
	ver=${ver%.orig.tar.bz2}
	key=$( {
		echo "$RS_PG_RECIPE $variant ${conf[*]} ${orig##*/}"
		if [ "$variant" = patched ]; then
			cat "$patch" "$RS_TOP/lib/rseq_slice.c" \
				"$RS_TOP/lib/rseq_slice.h" "$RS_TOP/lib/rseq_slice/"*.h \
				"$RS_TOP/uapi/linux/rseq_slice.h"
		fi
	} | sha256sum | cut -c1-12)
	dir=$base/$ver-$variant-$key
	RS_PG_TAR=$dir/postgresql-$variant.tar.xz
	RS_PG_VERSION=$ver
	if [ -f "$dir/.done" ]; then
		exec {lock}>&-
		return 0
	fi
	t=$SECONDS
	tmp=$dir.tmp
	rm -rf "$tmp"
	mkdir -p "$tmp/src" "$tmp/root"
	rs_log "postgresql: building $ver ($variant) in $tmp (log: $tmp/build.log; a few minutes)"
	tar -xjf "$orig" -C "$tmp/src" --strip-components=1 --no-same-owner
	if [ "$variant" = patched ]; then
		patch -s -d "$tmp/src" -p1 <"$patch" || rs_die "$patch does not apply to $ver"
		make -s -C "$RS_TOP/lib" OUT="$tmp/lib" "$tmp/lib/librseq-slice.a" >"$tmp/build.log" 2>&1 ||
			{ cat "$tmp/build.log" >&2; rs_die "librseq-slice.a did not build"; }
		conf+=(CPPFLAGS="-DUSE_RSEQ_SLICE -I$RS_TOP/lib -I$RS_TOP/uapi"
			LDFLAGS="-L$tmp/lib" LIBS="-lrseq-slice")
	fi
	if ! (cd "$tmp/src" && ./configure --prefix="/opt/postgresql-$variant" "${conf[@]}" &&
		make -j"${RSEQ_SLICE_JOBS:-$(nproc)}" &&
		make install DESTDIR="$tmp/root") >>"$tmp/build.log" 2>&1; then
		tail -n 30 "$tmp/build.log" >&2
		rs_die "postgresql $ver ($variant) did not build (log: $tmp/build.log)"
	fi
	tar -C "$tmp/root" -cf - opt | xz -T0 -3 >"$tmp/postgresql-$variant.tar.xz"
	rm -rf "$tmp/src" "$tmp/root" "$tmp/lib"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	touch "$dir/.done"
	exec {lock}>&-
	rs_log "postgresql: $ver ($variant) built in $((SECONDS - t)) s: $RS_PG_TAR"
}
