#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs in the guest (as root, from /work): every arm of the benchmarks in
# this one boot, printing one JSON object per run. scripts/bench collects
# them. On a kernel with the module (the lane loaded it) the arms are
# unloaded / loaded without REQUEST / loaded with extension; on the
# reference kernel (upstream's implementation in-kernel, no module) they
# are without REQUEST / with upstream's extension.
#   bench.sh [-q] [-g NS] [-m]
#                      -q: the short version (one lock, one length)
#                      -g NS: the grant length of every extension arm, the
#                      module's grant_ns or upstream's slice_ext_nsec
#                      (default 30000, the module's default)
#                      -m: with the module, also the merged (7.2) ABI's
#                      arms (prctl, slice_ctrl, rseq_slice_yield()), the
#                      ABI upstream's arms use (scripts/bench --twins)
#                      -r N: N rounds of every lock arm, interleaved, each
#                      started at another point of the tick (scripts/bench
#                      on guest time: see docs/benchmarks.md, "Which clock")
#                      -d SECS: each lock arm's length per round (default
#                      3, 2 with -q)
#   bench.sh -i        instruction counts instead (under scripts/vm
#                      --count-insns): costbench's -I arms only, see insns()
#   bench.sh -f [-g NS] the mechanism only (scripts/bench --flavours): the
#                      yield's cost and the expiry's, 1000 grants each,
#                      with costbench's noise for the kernel (a timer; on
#                      PREEMPT_RT the tick), and how long the kernel says
#                      each expiry arm's grant was held (held_ns of its
#                      rseq_slice_revoke events, one JSON list)
set -u
quick=0
insns=0
flavours=0
grant=30000
merged=0
rounds=1
dsecs=
while getopts qig:mfr:d: o; do
	case $o in
	r) rounds=$OPTARG ;;
	d) dsecs=$OPTARG ;;
	f) flavours=1 ;;
	q) quick=1 ;;
	i) insns=1 ;;
	g) grant=$OPTARG ;;
	m) merged=1 ;;
	*) echo "usage: bench.sh [-q] [-g NS] [-m] [-r N] [-d SECS] | -i | -f [-g NS]" >&2; exit 2 ;;
	esac
done
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
[ -n "$dsecs" ] && secs=$dsecs
threads=4
noise=1
# Upstream's slice_test registers rseq itself: glibc's registration off.
export GLIBC_TUNABLES=glibc.pthread.rseq=0
upstream=0
# The module offers upstream's debugfs names too: only a kernel without it
# is the in-kernel implementation.
[ -e /sys/kernel/debug/rseq/slice_ext_nsec ] && [ ! -e /sys/module/rseq_slice ] && upstream=1
echo "# kernel $(uname -r), preemption: $(cat /sys/kernel/debug/sched/preempt 2>/dev/null)"

T=/sys/kernel/debug/tracing
# Same addresses in every boot: with scripts/bench's guest clock (and
# nokaslr, a fixed seed) the work an arm does is the same from boot to boot.
echo 0 >/proc/sys/kernel/randomize_va_space
loaded() { grep -q '^rseq_slice ' /proc/modules; }

# How long grants were held, from the module's end events (yield, revoke,
# abort, kill all carry held_ns): a log2 histogram as one JSON object.
trace_on() {
	echo 8192 >$T/buffer_size_kb
	: >$T/trace
	echo 1 >$T/events/rseq_slice/enable
}
trace_off_report() {
	echo 0 >$T/events/rseq_slice/enable
	awk -v what="$1" '
	/held_ns=/ {
		split($0, a, "held_ns="); v = a[2] + 0; n++
		# busybox awk has no math: powers of two by doubling.
		b = 0; p = 1; while (p * 2 <= v) { p *= 2; b++ }; h[b]++; lo[b] = p
		if (v > max) max = v
	}
	/rseq_slice_(yield|revoke|abort|kill):/ {
		match($0, /rseq_slice_[a-z]+:/); kind[substr($0, RSTART + 11, RLENGTH - 12)]++
	}
	END {
		printf "{\"bench\":\"held\",\"run\":\"%s\",\"n\":%d,\"max_ns\":%d,\"ends\":{", what, n, max
		sep = ""; for (k in kind) { printf "%s\"%s\":%d", sep, k, kind[k]; sep = "," }
		printf "},\"hist\":["
		sep = ""; for (b = 0; b < 40; b++) if (h[b]) { printf "%s[%d,%d]", sep, lo[b], h[b]; sep = "," }
		printf "]}\n"
	}' $T/trace
}
unload() { loaded && rmmod rseq_slice; }
load() { loaded || insmod /lib/rseq_slice.ko grant_ns=$grant; }
# The module the guest loaded at boot has the default length.
loaded && echo $grant >/sys/module/rseq_slice/parameters/grant_ns

# Rounds: on guest time, runs started the same way in one boot repeat to
# 0.1%, but runs started at other points of the 4 ms tick spread by about
# 3% (so do boots): each round starts its arms at another offset into the
# tick, and the report takes the rounds' mean.
lock_arms() {
	held_runs "$@"
	r=1
	while [ $r -le $rounds ]; do
		lock_round "$@"
		r=$((r + 1))
	done
}
# The arms' own counters (the module's, or upstream's RSEQ_STATS: the
# same names) around a timed run: how its grants ended, at the cost of a
# per-CPU increment, which every implementation pays alike.
stats_of() {
	case $1 in
	upstream) cat /sys/kernel/debug/rseq/stats ;;
	*) cat /sys/kernel/debug/rseq_slice/stats ;;
	esac
}
ends_report() {
	awk -v what="$1" -v r="$2" '
	FNR == NR { b[$1] = $2; next }
	{ a[$1] = $2 }
	END {
		printf "{\"bench\":\"ends\",\"run\":\"%s\",\"round\":%d", what, r
		n = split("sgrant: syield: srevok: sexpir: sabort: skill: sdeny:", k, " ")
		for (i = 1; i <= n; i++)
			if (k[i] in a)
				printf ",\"%s\":%d", substr(k[i], 1, length(k[i]) - 1), a[k[i]] - b[k[i]]
		printf "}\n"
	}' /tmp/stats.before /tmp/stats.after
}
lock_round() {
	for cs in $css; do
		for l in $locks; do
			for arm in "$@"; do
				[ $rounds -gt 1 ] && sleep "$(printf '0.%06d' $(((r * 1370) % 4000)))"
				case $arm in
				unloaded) unload; m=none ;;
				no-request) m=none ;;
				extension) load; m=module ;;
				merged) load; m=upstream ;;
				upstream) m=upstream ;;
				esac
				case $arm in extension | merged | upstream) stats_of $arm >/tmp/stats.before ;; esac
				if ./lockbench -a "$arm" -m $m -l "$l" -t $threads -n $noise \
					-c "$cs" -d $secs >/tmp/lockbench.out; then
					sed "s/^{/{\"round\":$r,/" /tmp/lockbench.out
				else
					echo "# lockbench $arm failed"
				fi
				case $arm in
				extension | merged | upstream)
					stats_of $arm >/tmp/stats.after
					ends_report "$l-$cs-$arm" $r ;;
				esac
			done
		done
	done
}
# How long the module's grants were held, from its trace events: one
# more run of each module arm before the timed rounds, its figures not
# kept. Not in the timed runs: an event costs hundreds of instructions
# inside the held section (the grant's own event comes in the interrupt
# that grants), which upstream's arms, without events, do not pay.
# Before them, because the first use of an ABI in a boot arms its hooks
# (the merged ABI's first prctl() halved that arm's first round).
held_runs() {
	for cs in $css; do
		for l in $locks; do
			for arm in "$@"; do
				case $arm in
				extension) load; m=module ;;
				merged) load; m=upstream ;;
				*) continue ;;
				esac
				trace_on
				./lockbench -a "$arm" -m $m -l "$l" -t $threads -n $noise \
					-c "$cs" -d $secs >/dev/null || echo "# lockbench $arm (traced) failed"
				trace_off_report "$l-$cs-$arm"
			done
		done
	done
}

# Instruction counts, one region per operation (costbench -I), named
# OP/ARM/rREP; repetitions interleaved as for the timed arms. Arms: the
# module unloaded, loaded with nobody enabled (idle), loaded with the
# busy thread enabled (busy), and busy again with every other module in
# /work (ALT.ko: e.g. an older build of the module) in its place. Then
# the mechanism: preempt (no REQUEST), yield and expiry; with the module
# through both of its ABIs, the device's (module) and merged upstream's
# (merged).
insns() {
	# Same addresses in every run: page-table shapes (fork) do not vary.
	echo 0 >/proc/sys/kernel/randomize_va_space
	./costbench selfcheck -I check || echo "# costbench selfcheck failed"
	# fork/exit/wait is not counted on arm64: a fork took 1.2-1.3M
	# instructions on the forking vCPU there (4x x86-64's 300k), and a
	# boot on a loaded host was still in the first arm's 300 samples
	# after 25 minutes, the other operations of the rep having taken 5.
	# Why a fork costs that much on arm64 is not known yet.
	ops="syscall pipe fork switch"
	[ "$(uname -m)" = aarch64 ] && ops="syscall pipe switch"
	r=1
	while [ $r -le 3 ]; do
		if [ $upstream = 0 ]; then
			for b in $ops; do
				case $b in
				syscall) i=2000 ;; fork) i=300 ;; *) i=1000 ;;
				esac
				unload
				./costbench "$b" -i $i -I unloaded/r$r
				load
				./costbench "$b" -i $i -I idle/r$r
				./costbench "$b" -i $i -e -I busy/r$r
				for alt in ./*.ko; do
					[ -f "$alt" ] || continue
					a=${alt##*/}
					unload
					insmod "$alt" || { echo "# insmod $alt failed"; continue; }
					./costbench "$b" -i $i -e -I "busy-${a%.ko}/r$r"
					rmmod "${a%.ko}" 2>/dev/null || rmmod rseq_slice
				done
				load
			done
		fi
		# Upstream's kernel (no module): what everyone pays there, the
		# in-kernel implementation built in and nobody enabled; on the
		# 7.2 twins, against 7.2-base's unloaded arm.
		if [ $upstream = 1 ]; then
			for b in $ops; do
				case $b in
				syscall) i=2000 ;; fork) i=300 ;; *) i=1000 ;;
				esac
				./costbench "$b" -i $i -I none/r$r
			done
		fi
		for b in preempt yield expiry; do
			./costbench $b -m $abi -i 500 -I $abi/r$r || echo "# costbench $b failed"
			# The module again through merged upstream's ABI (prctl,
			# slice_ctrl, rseq_slice_yield()): the same calls as
			# upstream's arms, so the two compare like for like.
			[ $upstream = 1 ] ||
				./costbench $b -m upstream -i 500 -I merged/r$r ||
				echo "# costbench $b -m upstream failed"
		done
		r=$((r + 1))
	done
}

abi=module
[ $upstream = 1 ] && abi=upstream
if [ $insns = 1 ]; then
	[ $upstream = 1 ] && echo "$grant" >/sys/kernel/debug/rseq/slice_ext_nsec
	insns
	exit 0
fi

# The flavours. costbench's expiry time ends when the thread runs again,
# after the noise has had the CPU; the kernel's held_ns ends where the
# grant does (in the timer's interrupt, or a switch away before it): the
# grant's own tail.
if [ $flavours = 1 ]; then
	[ $upstream = 0 ] || { echo "# bench.sh -f: the module's kernels only" >&2; exit 2; }
	./costbench yield -m module -i 1000 || echo "# costbench yield failed"
	trace_on
	./costbench expiry -m module -i 1000 || echo "# costbench expiry failed"
	echo 0 >$T/events/rseq_slice/enable
	awk 'BEGIN { printf "{\"bench\":\"held_expiry\",\"held_ns\":[" }
	/rseq_slice_revoke:.*held_ns=/ { split($0, a, "held_ns="); printf "%s%.0f", sep, a[2] + 0; sep = "," }
	END { printf "]}\n" }' $T/trace
	cat /sys/kernel/debug/rseq_slice/stats
	exit 0
fi

if [ $upstream = 1 ]; then
	# The module's grant length (default 30000), so the arms compare.
	echo "$grant" >/sys/kernel/debug/rseq/slice_ext_nsec
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

if [ $merged = 1 ]; then
	lock_arms no-request extension merged unloaded
else
	lock_arms no-request extension unloaded
fi
load
for b in yield expiry; do
	./costbench $b -m module || echo "# costbench $b failed"
	[ $merged = 1 ] && { ./costbench $b -m upstream || echo "# costbench $b -m upstream failed"; }
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
