#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs in the Debian guest (scripts/vm --rootfs debian, as root, from
# /work, with librseq_slice_preload.so there): real programs nobody here
# wrote, under the lock interposer. The programs come from Debian
# (RS_PROGRAMS_PKGS in scripts/lib.sh): sysbench's mutex and threads
# tests, RocksDB's cache_bench (one LRU shard) and db_bench (fillrandom:
# every write through the DB's mutex and its write group), memcached under
# memaslap (memcaslap) on loopback, git grep over a revision (8 threads
# that take git's object-reading mutex for every object they read). Every
# program runs 8 threads, more than the guest has vCPUs.
#   programs.sh [-r REPS] [-s SECS] [PROG...]
#       the A/B of scripts/bench --programs: per program, REPS rounds
#       (default 3) of three arms in one boot, the arms' order rotating
#       from round to round: unloaded (module out, no interposer), off
#       (module in, interposer with RSEQ_SLICE_PRELOAD=0), on (module in,
#       interposer on as a user gets it: the fast path, counting nothing;
#       the module's stats and trace events on). Prints each run's whole output between
#       "### run prog=P arm=A rep=R" and "### end rc=RC secs=S" lines,
#       with the module's stats before and after ("### modstats ...") and
#       the grants' hold times ("### held {...}") in the on arm;
#       scripts/programs-report reads them.
#   programs.sh -t [PROG...]
#       the selftest (scripts/test --programs): short runs of each program
#       under the interposer, module loaded and unloaded; TAP. A run fails
#       when the program exits non-zero (a crash included), prints no
#       result, or the interposer's summary is missing or names another
#       backend or no section.
set -u
PRELOAD=/work/librseq_slice_preload.so
BB=/rs/busybox
MOD=/rs/rseq_slice.ko
RS_PARAMS=
# shellcheck disable=SC1091 # the guest's run.conf (scripts/vm)
[ -f /rs/run.conf ] && . /rs/run.conf
T=/sys/kernel/debug/tracing
STATS=/sys/kernel/debug/rseq_slice/stats
ALL="sysbench-mutex sysbench-threads cache-bench db-bench memcached git-grep"

test=0
reps=3
secs=5
while [ $# -gt 0 ]; do
	case "$1" in
	-t) test=1; shift ;;
	-r) reps=$2; shift 2 ;;
	-s) secs=$2; shift 2 ;;
	*) break ;;
	esac
done
progs=${*:-$ALL}
threads=8
# Work per run: a few seconds each under emulation (the selftest: well
# under one).
if [ $test = 1 ]; then
	secs=1
	mutex_locks=20000
	cache_ops=5000
	db_keys=2000
else
	mutex_locks=400000
	cache_ops=60000
	db_keys=1000000
fi

loaded() { grep -q '^rseq_slice ' /proc/modules; }
load() {
	loaded && return 0
	# shellcheck disable=SC2086 # RS_PARAMS: NAME=VALUE words
	$BB insmod $MOD $RS_PARAMS
}
# The exits of the last run's threads may still hold it for a moment.
unload() {
	i=0
	while loaded; do
		$BB rmmod rseq_slice 2>/dev/null && return 0
		i=$((i + 1))
		[ $i -ge 50 ] && { echo "# rmmod rseq_slice failed"; return 1; }
		sleep 0.1
	done
}

# memcached (4 worker threads, the default) under memaslap on loopback:
# 2 load threads, 16 connections, a 90/10 get/set mix. ENV is the
# server's environment only.
memcached_run() {
	# shellcheck disable=SC2086 # ENV: NAME=VALUE words
	env $ENV memcached -u root -t 4 -l 127.0.0.1 -p 11211 -m 64 2>/tmp/memcached.err &
	mpid=$!
	i=0
	until memcping --servers=127.0.0.1:11211 >/dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -ge 200 ] || ! kill -0 $mpid 2>/dev/null; then
			echo "# memcached did not come up"
			cat /tmp/memcached.err
			kill -9 $mpid 2>/dev/null
			wait $mpid
			return 1
		fi
		sleep 0.1
	done
	memcaslap -s 127.0.0.1:11211 -T 2 -c 16 -t "${secs}s" -S "${secs}s" >/tmp/memaslap.out 2>&1
	lrc=$?
	# Less its clear-screen sequences.
	tr -d '\033' </tmp/memaslap.out
	kill -0 $mpid 2>/dev/null || { echo "# memcached died under load"; lrc=1; }
	kill -TERM $mpid 2>/dev/null
	wait $mpid
	src=$?
	cat /tmp/memcached.err
	# SIGTERM is memcached's normal stop: it exits 0, or dies of it.
	if [ $src != 0 ] && [ $src != 143 ]; then
		echo "# memcached exited $src"
		return $src
	fi
	return $lrc
}

# git grep with 8 threads over a commit of Perl's library (perl-modules,
# which git depends on: 1195 files, real text): each thread takes git's
# object-reading mutex (obj_read_lock()) for every blob it reads and
# lets go of it only to inflate, so the threads queue on that mutex. Runs
# the grep again and again for SECS; prints each run's time and the
# count. The repository is made once per boot, outside the timing.
GIT_REPO=/tmp/rs-git
git_setup() {
	[ -d $GIT_REPO/.git ] && return 0
	rm -rf $GIT_REPO
	mkdir -p $GIT_REPO || return 1
	cp -r /usr/share/perl/5.36/. $GIT_REPO/ || return 1
	(cd $GIT_REPO && git init -q && git add -A &&
		git -c user.email=rs@localhost -c user.name=rs commit -qm perl &&
		git gc -q) >/tmp/git-setup.out 2>&1 || { cat /tmp/git-setup.out; return 1; }
}
git_grep_run() {
	git_setup || { echo "# git repository setup failed"; return 1; }
	t_end=$(($(date +%s) + secs))
	runs=0
	while :; do
		g0=$(date +%s%N)
		# shellcheck disable=SC2086 # ENV: NAME=VALUE words
		env $ENV git -C $GIT_REPO grep --threads=$threads -c -e sub HEAD >/tmp/git-grep.out 2>&1
		grc=$?
		g1=$(date +%s%N)
		if [ $grc != 0 ]; then
			cat /tmp/git-grep.out
			echo "# git grep exited $grc"
			return $grc
		fi
		runs=$((runs + 1))
		echo "git-grep run $runs: $(((g1 - g0) / 1000)) us, $(grep -c "^HEAD:" /tmp/git-grep.out) files"
		[ "$(date +%s)" -ge $t_end ] && break
	done
	# The interposer's summary, from the last run.
	grep '^rseq_slice_preload: ' /tmp/git-grep.out
	echo "git-grep: $runs runs"
}

# prog NAME: runs program NAME with ENV (NAME=VALUE words) in its
# environment.
prog() {
	case $1 in
	sysbench-mutex)
		# shellcheck disable=SC2086
		env $ENV sysbench mutex --threads=$threads --mutex-num=1 \
			--mutex-locks=$mutex_locks --mutex-loops=100 run ;;
	sysbench-threads)
		# shellcheck disable=SC2086
		env $ENV sysbench threads --threads=$threads --thread-locks=1 \
			--thread-yields=50 --time="$secs" --percentile=99 run ;;
	cache-bench)
		# shellcheck disable=SC2086
		env $ENV cache_bench -threads=$threads -num_shard_bits=0 -cache_size=8388608 \
			-value_bytes=1024 -ops_per_thread=$cache_ops ;;
	db-bench)
		# A new database each run, in the guest's memory: 8 writers of
		# 100-byte values for SECS, no compression; its own latency
		# histogram (--histogram), not its running count of operations.
		rm -rf /tmp/rs-db
		# shellcheck disable=SC2086
		env $ENV db_bench --benchmarks=fillrandom --threads=$threads --duration="$secs" \
			--num=$db_keys --value_size=100 --compression_type=none --histogram=1 \
			--progress_reports=false --db=/tmp/rs-db
		dbrc=$?
		rm -rf /tmp/rs-db
		return $dbrc ;;
	memcached) memcached_run ;;
	git-grep) git_grep_run ;;
	*) echo "# no program $1"; return 2 ;;
	esac
}

now() { date +%s.%N; }

# The grants' hold times, from the module's end events (as bench.sh).
trace_on() {
	[ -d $T/events/rseq_slice ] || return 0
	echo 8192 >$T/buffer_size_kb
	: >$T/trace
	echo 1 >$T/events/rseq_slice/enable
}
trace_off_report() {
	[ -d $T/events/rseq_slice ] || return 0
	echo 0 >$T/events/rseq_slice/enable
	awk '
	/held_ns=/ {
		split($0, a, "held_ns="); v = a[2] + 0; n++
		b = 0; p = 1; while (p * 2 <= v) { p *= 2; b++ }; h[b]++; lo[b] = p
		if (v > max) max = v
	}
	/rseq_slice_(yield|revoke|abort|kill|expire):/ {
		match($0, /rseq_slice_[a-z]+:/); kind[substr($0, RSTART + 11, RLENGTH - 12)]++
	}
	END {
		printf "### held {\"n\":%d,\"max_ns\":%d,\"ends\":{", n, max
		sep = ""; for (k in kind) { printf "%s\"%s\":%d", sep, k, kind[k]; sep = "," }
		printf "},\"hist\":["
		sep = ""; for (b = 0; b < 40; b++) if (h[b]) { printf "%s[%d,%d]", sep, lo[b], h[b]; sep = "," }
		printf "]}\n"
	}' $T/trace
}
modstats() { [ -r $STATS ] && echo "### modstats $1 $(tr '\n' ' ' <$STATS)"; }

if [ $test = 0 ]; then
	echo "# kernel $(uname -r), preemption: $(cat /sys/kernel/debug/sched/preempt 2>/dev/null)"
	echo "# params threads=$threads mutex_locks=$mutex_locks cache_ops=$cache_ops db_keys=$db_keys secs=$secs reps=$reps"
	for p in $progs; do
		r=1
		while [ $r -le "$reps" ]; do
			# The arms' order rotates: no arm always runs first.
			case $((r % 3)) in
			1) arms="unloaded off on" ;;
			2) arms="off on unloaded" ;;
			0) arms="on unloaded off" ;;
			esac
			for arm in $arms; do
				case $arm in
				unloaded) unload; ENV= ;;
				off) load; ENV="LD_PRELOAD=$PRELOAD RSEQ_SLICE_PRELOAD=0" ;;
				on) load; ENV="LD_PRELOAD=$PRELOAD" ;;
				esac
				echo "### run prog=$p arm=$arm rep=$r"
				[ "$arm" = on ] && { modstats before; trace_on; }
				t0=$(now)
				prog "$p" 2>&1
				rc=$?
				t1=$(now)
				[ "$arm" = on ] && { trace_off_report; modstats after; }
				echo "### end rc=$rc secs=$(echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }')"
			done
			r=$((r + 1))
		done
	done
	load
	exit 0
fi

# The selftest.
n=0
fails=0
# shellcheck disable=SC2086 # a list of names
set -- $progs
echo "1..$(($# * 2))"
for p in $progs; do
	for arm in module no-module; do
		n=$((n + 1))
		if [ $arm = module ]; then load; want=kernel; else unload; want=none; fi
		ENV="LD_PRELOAD=$PRELOAD RSEQ_SLICE_PRELOAD_STATS=1"
		prog "$p" >/tmp/prog.out 2>&1
		rc=$?
		why=
		case $p in
		sysbench-*) res='total number of events:' ;;
		cache-bench) res='Rough parallel ops/sec' ;;
		db-bench) res='^fillrandom .* ops/sec' ;;
		memcached) res='^Run time: .* TPS: ' ;;
		git-grep) res='^git-grep: [1-9][0-9]* runs' ;;
		esac
		sum=$(grep '^rseq_slice_preload: ' /tmp/prog.out | grep -v 'sections=0 ' | head -n1)
		if [ $rc != 0 ]; then
			why="exited $rc"
		elif ! grep -q "$res" /tmp/prog.out; then
			why="no result line ($res)"
		elif [ -z "$sum" ]; then
			why="no interposer summary with sections"
		elif ! echo "$sum" | grep -q " backend=$want "; then
			why="interposer backend is not $want"
		fi
		sed 's/^/# /' /tmp/prog.out | grep -E '^# (rseq_slice_preload:|    total number|Complete in|Run time:|git-grep:|#)'
		if [ -z "$why" ]; then
			echo "ok $n - $p under the interposer, $arm ($(echo "$sum" | sed 's/^rseq_slice_preload: //'))"
		else
			sed 's/^/# /' /tmp/prog.out | tail -n 40
			echo "not ok $n - $p under the interposer, $arm: $why"
			fails=$((fails + 1))
		fi
	done
done
echo "# programs: $n runs done, $fails failed"
[ $fails = 0 ]
