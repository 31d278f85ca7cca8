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
#   ksft/                     kselftest_harness.h from linux-source-6.1
#   apt-sid/                  a private apt configuration for Debian sid
#                             (its lists and cache; the host's stay alone)
#   upstream/                 linux-source-7.2's .deb from sid, and the part
#                             of its source upstream's rseq selftests need
#   debug-6.1/                the debug kernel (scripts/build-debug-kernel)

RS_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RS_CACHE=${RSEQ_SLICE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rseq-slice}
RS_TREE=$(printf '%s' "$RS_TOP" | sha256sum | cut -c1-12)

rs_log() { printf '%s\n' "$*" >&2; }
# A command that fails under set -e says so: a silent exit hides what
# went wrong (ERR is not raised for tested commands: if, ||, &&).
set -E
trap 'echo "${0##*/}: line $LINENO: \"$BASH_COMMAND\" failed" >&2' ERR
rs_die() { printf '%s: %s\n' "${0##*/}" "$*" >&2; exit 2; }

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
	rs_log "installing: ${missing[*]}"
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1; then
		apt-get update -qq >/dev/null
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
			rs_die "apt-get install ${missing[*]} failed"
	fi
}

rs_host_pkgs() {
	rs_need_pkgs qemu-system-x86 busybox-static cpio kmod gcc gcc-multilib make libc6-dev \
		linux-source-6.1 rsync xz-utils file bc flex bison libelf-dev libssl-dev
}

# The version a Debian meta package (linux-image-amd64, ...) points at
# today, read from apt's lists: nothing is hard-coded, and no network
# access happens unless the lists do not know the package yet.
rs_meta_version() {
	local meta=$1 v
	v=$(apt-cache depends "$meta" 2>/dev/null |
		sed -n 's/^ *Depends: linux-image-\(.*\)$/\1/p' | head -n1)
	if [ -z "$v" ]; then
		[ "$(id -u)" -eq 0 ] && apt-get update -qq >/dev/null
		v=$(apt-cache depends "$meta" 2>/dev/null |
			sed -n 's/^ *Depends: linux-image-\(.*\)$/\1/p' | head -n1)
	fi
	[ -n "$v" ] || rs_die "apt does not know $meta"
	echo "$v"
}

# Modules of a Debian kernel the guests load before the test, when the
# kernel has them as modules rather than built in (paths in the package).
RS_EXTRA_MODULES="kernel/fs/fuse/fuse.ko"

# Unpack a Debian kernel image (and RS_EXTRA_MODULES, where the package
# has them) into the cache; headers come from apt. Returns 1 if the image
# cannot be downloaded (rs_kernel then refreshes apt's lists).
rs_debian_kernel() {
	local kver=$1 dir=$RS_CACHE/kernels/$1 tmp deb m
	if [ ! -d "/lib/modules/$kver/build" ]; then
		rs_need_pkgs "linux-headers-$kver"
	fi
	if [ ! -s "$dir/vmlinuz" ] || [ ! -f "$dir/extra.done" ]; then
		rs_log "fetching linux-image-$kver"
		tmp=$(mktemp -d "$RS_CACHE/dl.XXXXXX")
		(cd "$tmp" && apt-get -o APT::Sandbox::User=root download -q "linux-image-$kver" >/dev/null) ||
			{ rm -rf "$tmp"; rs_log "apt-get download linux-image-$kver failed"; return 1; }
		deb=$(ls "$tmp"/*.deb)
		dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" "./boot/vmlinuz-$kver"
		mkdir -p "$dir/extra"
		for m in $RS_EXTRA_MODULES; do
			# Absent where the option is built in: nothing to load.
			if dpkg-deb --fsys-tarfile "$deb" |
				tar -x -C "$tmp" "./lib/modules/$kver/$m" 2>/dev/null; then
				mv "$tmp/lib/modules/$kver/$m" "$dir/extra/"
			fi
		done
		mv "$tmp/boot/vmlinuz-$kver" "$dir/vmlinuz.tmp" && mv "$dir/vmlinuz.tmp" "$dir/vmlinuz"
		touch "$dir/extra.done"
		rm -rf "$tmp"
	fi
}

# When apt's package lists were last refreshed (the newest list file).
rs_lists_date() {
	local f
	# No lists yet is an answer, not an error (set -e, pipefail).
	f=$({ ls -t /var/lib/apt/lists/*_Packages* 2>/dev/null || true; } | head -n1)
	[ -n "$f" ] && date -u -r "$f" '+%Y-%m-%d %H:%M UTC' || echo "unknown"
}

# The Debian kernel a meta package names: RS_KVER, fetched and unpacked,
# headers installed. Stale lists name a version the archive may have
# dropped since: then refresh them (apt-get update, root) and resolve
# again. Says which version it took and why.
rs_debian_meta() {
	local meta=$1 name=$2 why
	RS_KVER=$(rs_meta_version "$meta")
	why="what apt's lists of $(rs_lists_date) name for $meta"
	# A subshell: rs_need_pkgs dies on a failed install.
	if ! (rs_debian_kernel "$RS_KVER"); then
		[ "$(id -u)" -eq 0 ] || rs_die "cannot fetch linux-image-$RS_KVER (apt-get update as root may help)"
		rs_log "kernel $name: $RS_KVER cannot be fetched (the archive may have dropped it): refreshing apt's lists"
		apt-get update -qq >/dev/null || rs_die "apt-get update failed"
		RS_KVER=$(rs_meta_version "$meta")
		why="what $meta names after apt-get update (the lists named a version the archive no longer has)"
		(rs_debian_kernel "$RS_KVER") || rs_die "linux-image-$RS_KVER cannot be fetched either"
	fi
	rs_log "kernel $name: $RS_KVER, $why"
}

# rs_kernel NAME: sets RS_KVER (uname -r), RS_BZIMAGE, RS_KDIR (kbuild tree
# for the module, empty if there is none) and RS_EXTRA (a folder of
# modules to load first, or empty).
rs_kernel() {
	RS_EXTRA=
	mkdir -p "$RS_CACHE"
	case "$1" in
	6.1)
		rs_debian_meta linux-image-amd64 "$1" ;;
	6.12)
		rs_debian_meta linux-image-6.12-amd64 "$1" ;;
	6.1-debug)
		RS_KDIR=$("$RS_TOP/scripts/build-debug-kernel" | tail -n1) ||
			rs_die "the debug kernel did not build"
		RS_BZIMAGE=$RS_KDIR/arch/x86/boot/bzImage
		RS_KVER=$(cat "$RS_KDIR/include/config/kernel.release")
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

# Build rseq_slice.ko against RS_KDIR, and the test module the selftests
# load (selftests/kmod); sets RS_MODULE and RS_TEST_MODULES. The sources
# are mirrored with their times, so kbuild rebuilds only what changed.
rs_build_module() {
	local out=$RS_CACHE/build/$RS_KVER/$RS_TREE
	mkdir -p "$out"
	# Build products are excluded, hence kept by --delete.
	rsync -a --delete --exclude '*.o' --exclude '*.ko' --exclude '.*.cmd' \
		--exclude '*.mod*' --exclude 'Module.symvers' --exclude 'modules.order' \
		"$RS_TOP/Kbuild" "$RS_TOP/module" "$RS_TOP/uapi" "$out/src/"
	rsync -a --delete --exclude '*.o' --exclude '*.ko' --exclude '.*.cmd' \
		--exclude '*.mod*' --exclude 'Module.symvers' --exclude 'modules.order' \
		"$RS_TOP/Kbuild" "$RS_TOP/module" "$RS_TOP/uapi" "$out/fi/"
	rsync -a --delete --exclude '*.o' --exclude '*.ko' --exclude '.*.cmd' \
		--exclude '*.mod*' --exclude 'Module.symvers' --exclude 'modules.order' \
		"$RS_TOP/selftests/kmod/" "$out/kmod/"
	# Two guests of one kernel may start at once: one build at a time.
	exec {lock}>"$out/.lock"
	flock "$lock"
	# fi/: the fault injection build, which only the selftests load.
	if ! make -C "$RS_KDIR" M="$out/src" modules >"$out/build.log" 2>&1 ||
		! make -C "$RS_KDIR" M="$out/fi" RSEQ_SLICE_FAULT_INJECT=y modules \
			>>"$out/build.log" 2>&1 ||
		! make -C "$RS_KDIR" M="$out/kmod" modules >>"$out/build.log" 2>&1; then
		cat "$out/build.log" >&2
		rs_die "module build against $RS_KVER failed"
	fi
	# Loaded under its own file name; the module's name stays rseq_slice.
	cp "$out/fi/rseq_slice.ko" "$out/fi/rseq_slice_fi.ko"
	exec {lock}>&-
	RS_MODULE=$out/src/rseq_slice.ko
	RS_TEST_MODULES="$out/kmod/ipmodify_hog.ko $out/fi/rseq_slice_fi.ko"
}

# A private apt configuration in DIR (under the cache), with SOURCES as its
# sources.list: its own lists, cache and an empty dpkg status, so the
# host's sources and state are never touched. Only the host's apt.conf.d
# settings (proxies, validity checks) still apply.
#   rs_private_apt DIR SOURCES APT-GET-ARGS...
RS_KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
rs_private_apt() {
	local d=$1 sources=$2
	shift 2
	mkdir -p "$d/etc/sources.list.d" "$d/etc/preferences.d" "$d/etc/trusted.gpg.d" \
		"$d/state/lists/partial" "$d/cache/archives/partial"
	[ -f "$RS_KEYRING" ] || rs_need_pkgs debian-archive-keyring
	printf '%s\n' "$sources" >"$d/etc/sources.list"
	: >>"$d/status"
	cat >"$d/apt.conf" <<EOF
Dir::Etc::sourcelist "$d/etc/sources.list";
Dir::Etc::sourceparts "$d/etc/sources.list.d";
Dir::Etc::preferences "$d/etc/preferences";
Dir::Etc::preferencesparts "$d/etc/preferences.d";
Dir::Etc::trusted "$d/etc/trusted.gpg";
Dir::Etc::trustedparts "$d/etc/trusted.gpg.d";
Dir::State "$d/state";
Dir::State::status "$d/status";
Dir::Cache "$d/cache";
APT::Architecture "amd64";
APT::Architectures { "amd64"; };
APT::Sandbox::User "$(id -un)";
Acquire::Languages "none";
EOF
	APT_CONFIG=$d/apt.conf apt-get -q "$@"
}

# Upstream's own rseq selftests (slice_test, check_optimized) come from
# Debian's linux-source-7.2, which only Debian sid has: a private apt
# configuration for sid (signed by the host's debian-archive-keyring).
RS_UPSTREAM_PKG=linux-source-7.2
rs_sid_apt() {
	rs_private_apt "$RS_CACHE/apt-sid" \
		"deb [signed-by=$RS_KEYRING] http://deb.debian.org/debian sid main" "$@"
}

# rs_upstream_src: sets RS_UPSTREAM_SRC, the top of an extracted
# linux-source-7.2 holding what upstream's rseq selftests need (their
# folder, the selftest harness, tools/include), and RS_UPSTREAM_VERSION.
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
	exec {lock}>&-
	RS_UPSTREAM_SRC=$d/$top
	RS_UPSTREAM_VERSION=$v
}

# The prebuilt upstream binaries (../shared/reference), where there are.
RS_REFERENCE=$RS_TOP/../shared/reference

# The static selftest binaries; sets RS_SELFTESTS (their folder). Besides
# the project's own tests: upstream's slice_test and check_optimized,
# built here, unmodified, from $RS_UPSTREAM_PKG (upstream_*), and copies
# of the prebuilt ones (ref_*), for selftests/run_upstream.sh.
rs_build_selftests() {
	local ref=
	RS_SELFTESTS=$RS_CACHE/build/selftests-$RS_TREE
	rs_upstream_src
	[ -f "$RS_REFERENCE/slice_test" ] && ref=$(cd "$RS_REFERENCE" && pwd)
	make -s -C "$RS_TOP/selftests" OUT="$RS_SELFTESTS" KSFT="$RS_CACHE/ksft" \
		UPSTREAM="$RS_UPSTREAM_SRC" REFERENCE="$ref" >&2 ||
		rs_die "selftests did not build"
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
