#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs in the guest (as root, from /work): every arm of the benchmarks in
# this one boot, printing one JSON object per run. scripts/bench collects
# them. On a kernel with the module (the lane loaded it) the arms are
# unloaded / loaded without REQUEST / loaded with extension; on the
# reference kernel (upstream's implementation in-kernel, no module) they
# are without REQUEST / with upstream's extension.
#   bench.sh [-q]      -q: the short version (one lock, one length)
set -u
quick=0
[ "${1:-}" = -q ] && quick=1
secs=3
css="1000 5000 20000"
locks="tas ticket"
reps=5
if [ $quick = 1 ]; then
	secs=2
	css=5000
	locks=tas
	reps=2
fi
threads=4
noise=1
# Upstream's slice_test registers rseq itself: glibc's registration off.
export GLIBC_TUNABLES=glibc.pthread.rseq=0
upstream=0
[ -e /sys/kernel/debug/rseq/slice_ext_nsec ] && upstream=1
echo "# kernel $(uname -r), preemption: $(cat /sys/kernel/debug/sched/preempt 2>/dev/null)"

loaded() { grep -q '^rseq_slice ' /proc/modules; }
unload() { loaded && rmmod rseq_slice; }
load() { loaded || insmod /lib/rseq_slice.ko; }

lock_arms() {
	for cs in $css; do
		for l in $locks; do
			for arm in "$@"; do
				case $arm in
				unloaded) unload; m=none ;;
				no-request) m=none ;;
				extension) load; m=module ;;
				upstream) m=upstream ;;
				esac
				./lockbench -a "$arm" -m $m -l "$l" -t $threads -n $noise \
					-c "$cs" -d $secs || echo "# lockbench $arm failed"
			done
		done
	done
}

if [ $upstream = 1 ]; then
	# Same grant length as the module's default, so the arms compare.
	echo 30000 >/sys/kernel/debug/rseq/slice_ext_nsec
	lock_arms no-request upstream
	for b in yield expiry; do
		./costbench $b -m upstream || echo "# costbench $b failed"
	done
	for b in syscall pipe fork; do
		./costbench $b
	done
	cat /sys/kernel/debug/rseq/stats
	exit 0
fi

lock_arms no-request extension unloaded
load
for b in yield expiry; do
	./costbench $b -m module || echo "# costbench $b failed"
done
# Cost for everyone else, interleaved so that drift hits every arm alike.
r=0
while [ $r -lt $reps ]; do
	for b in syscall pipe fork; do
		unload
		echo "{\"arm\":\"unloaded\",\"run\":$(./costbench $b)}"
		load
		echo "{\"arm\":\"loaded-idle\",\"run\":$(./costbench $b)}"
		echo "{\"arm\":\"loaded-busy\",\"run\":$(./costbench $b -e)}"
	done
	r=$((r + 1))
done
cat /sys/kernel/debug/rseq_slice/stats
