#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs in the guest under scripts/vm --count-insns --dynamic (scripts/bench
# --interposer): ipbench's uncontended mutex pair, bare, with the
# interposer switched off, and on for each backend this kernel has, then
# librseq-slice's own rseq_slice_cs_begin()/end() per backend. Region
# names: ARM (bare, off), BACKEND/on, BACKEND/on+stats, lib/BACKEND.
#   ipbench.sh [-p PAIRS]
set -u
pairs=200
while getopts p: o; do
	case $o in
	p) pairs=$OPTARG ;;
	*) echo "usage: ipbench.sh [-p PAIRS]" >&2; exit 2 ;;
	esac
done
so=$PWD/librseq_slice_preload.so
# Same addresses in every run.
echo 0 >/proc/sys/kernel/randomize_va_space
echo "# kernel $(uname -r)"
module=0
grep -q '^rseq_slice ' /proc/modules && module=1
if [ $module = 0 ]; then
	# The kernel's own extension (7.2): its prctl wants a larger rseq
	# area than glibc's, which the library registers itself.
	export GLIBC_TUNABLES=glibc.pthread.rseq=0
fi

arm() {
	name=$1
	shift
	echo "# arm $name: $*"
	env "$@" ./ipbench insns "$name" "$pairs" || echo "# arm $name failed"
}

arm bare
arm off LD_PRELOAD="$so" RSEQ_SLICE_PRELOAD=0
arm none/on LD_PRELOAD="$so" RSEQ_SLICE_BACKEND=none
if [ $module = 1 ]; then
	arm merged/on LD_PRELOAD="$so"
	arm merged/on+stats LD_PRELOAD="$so" RSEQ_SLICE_PRELOAD_STATS=1
	arm module/on LD_PRELOAD="$so" RSEQ_SLICE_PRELOAD=module
else
	arm kernel/on LD_PRELOAD="$so"
	arm kernel/on+stats LD_PRELOAD="$so" RSEQ_SLICE_PRELOAD_STATS=1
fi
echo "# arm lib/none"
RSEQ_SLICE_BACKEND=none ./ipbench lib-insns lib/none "$pairs"
if [ $module = 1 ]; then
	echo "# arm lib/merged"
	RSEQ_SLICE_BACKEND=kernel ./ipbench lib-insns lib/merged "$pairs"
	echo "# arm lib/module"
	RSEQ_SLICE_BACKEND=module ./ipbench lib-insns lib/module "$pairs"
else
	echo "# arm lib/kernel"
	RSEQ_SLICE_BACKEND=kernel ./ipbench lib-insns lib/kernel "$pairs"
fi
echo "# done"
