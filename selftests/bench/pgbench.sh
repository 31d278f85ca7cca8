#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs in the Debian guest (scripts/vm --rootfs debian, as root, from
# /work): PostgreSQL 15 built with postgresql/rseq-slice.patch (its
# spinlocks ask for time slice extension; /work/postgresql-patched.tar.xz
# from scripts/build-postgresql) and, for the benchmark, the release as it
# is (/work/postgresql-stock.tar.xz), under pgbench. The server runs as
# uid 1000, its data and socket in /tmp (the guest's RAM), fsync off.
#   pgbench.sh -t
#       the selftest (scripts/test's programs lane; TAP): the patched
#       server starts with the module loaded, its processes enable the
#       extension (the module's `threads`), pgbench's TPC-B-like script
#       runs (8 clients, 100 transactions each) round after round until the
#       kernel has granted an extension (sgrant moved; at most 40 rounds),
#       the bank's balances still add up and every transaction is in the
#       history, no backend was killed or crashed, and the server stops.
#   pgbench.sh [-r ROUNDS] [-d SECS] [-c CLIENTS] [-s SCALE] [-b SCRIPT]...
#       the benchmark (scripts/bench --postgresql): a database of scale
#       SCALE (default 10), then per SCRIPT (pgbench's built-in
#       simple-update and select-only by default) ROUNDS rounds (default
#       3) of three arms, their order rotating: stock (no patch), off
#       (patched, rseq_slice_extension=off), on (patched). Each run starts
#       the server afresh, so that its backends touch the shared buffers'
#       pages for the first time during the run (no huge pages), and runs
#       pgbench for SECS seconds (default 5) with CLIENTS clients
#       (default 16, more than the guest's vCPUs). Prints each run between
#       "### run script=S arm=A round=R" and "### end rc=RC", with
#       pgbench's report, "### latency n=N p50=US p99=US" (from its
#       per-transaction log), the kernel's grant counters before and after
#       ("### stats before|after ..."), the grants' ends and hold times
#       ("### held {...}", the module's trace events) and the backends'
#       spin delays ("### spindelays N"); scripts/pgbench-report reads
#       them.
set -u
BB=/rs/busybox
T=/sys/kernel/debug/tracing
# The module's counters (skill, threads, ...) where it is loaded, else
# upstream's own (7.2-upstream): sgrant, sexpir, srevok, syield, sabort.
STATS=/sys/kernel/debug/rseq_slice/stats
[ -r $STATS ] || STATS=/sys/kernel/debug/rseq/stats
PGDATA=/tmp/pgdata
SOCK=/tmp
LOG=/tmp/pg.log
AS="/rs/runas 1000"
MOD=/rs/rseq_slice.ko
RS_PARAMS=
# shellcheck disable=SC1091 # the guest's run.conf (scripts/vm)
[ -f /rs/run.conf ] && . /rs/run.conf

test=0
rounds=3
secs=5
clients=16
scale=10
scripts=
while [ $# -gt 0 ]; do
	case "$1" in
	-t) test=1; shift ;;
	-r) rounds=$2; shift 2 ;;
	-d) secs=$2; shift 2 ;;
	-c) clients=$2; shift 2 ;;
	-s) scale=$2; shift 2 ;;
	-b) scripts="$scripts $2"; shift 2 ;;
	*) echo "usage: pgbench.sh [-t] [-r ROUNDS] [-d SECS] [-c CLIENTS] [-s SCALE] [-b SCRIPT]..." >&2; exit 2 ;;
	esac
done
[ -n "$scripts" ] || scripts="simple-update select-only"

# extract VARIANT: /opt/postgresql-VARIANT from its tarball; false if none.
extract() {
	[ -f "/work/postgresql-$1.tar.xz" ] || return 1
	[ -x "/opt/postgresql-$1/bin/postgres" ] && return 0
	$BB xz -dc "/work/postgresql-$1.tar.xz" | tar -x -C /
}
stat_of() { awk -v k="$1:" '$1 == k { print $2 }' $STATS 2>/dev/null; }
stats_line() { echo "### stats $1 $(tr '\n' ' ' <$STATS 2>/dev/null)"; }

# The server of variant $1 (patched or stock), with extra settings $2.
start() {
	bin=/opt/postgresql-$1/bin
	: >$LOG
	chown 1000:1000 $LOG
	# pg_ctl -w waits for the server to accept connections (-t: a bound
	# generous enough for an emulated start).
	$AS "$bin"/pg_ctl -D $PGDATA -l $LOG -w -t 600 -o "$2" start >/tmp/pg_ctl.out 2>&1
}
stop() { $AS "$bin"/pg_ctl -D $PGDATA -w -t 600 -m fast stop >>/tmp/pg_ctl.out 2>&1; }
psql1() { $AS "$bin"/psql -h $SOCK -U postgres -X -A -t -q -c "$1" postgres; }

# A new cluster and a pgbench database of scale $1 (patched binaries;
# both builds are 15.N, one catalog version).
setup() {
	extract patched || { echo "# no /work/postgresql-patched.tar.xz"; return 1; }
	rm -rf $PGDATA
	mkdir -p $PGDATA
	chown 1000:1000 $PGDATA
	bin=/opt/postgresql-patched/bin
	$AS "$bin"/initdb -D $PGDATA -U postgres -A trust --locale=C -E UTF8 >/tmp/initdb.out 2>&1 ||
		{ sed 's/^/# /' /tmp/initdb.out; return 1; }
	cat >>$PGDATA/postgresql.conf <<-EOF
	listen_addresses = ''
	unix_socket_directories = '$SOCK'
	max_connections = 100
	shared_buffers = 256MB
	huge_pages = off
	fsync = off
	full_page_writes = off
	autovacuum = off
	EOF
	start patched "" || { sed 's/^/# /' /tmp/pg_ctl.out $LOG; return 1; }
	$AS "$bin"/pgbench -h $SOCK -U postgres -i -q -s "$1" postgres >/tmp/init.out 2>&1 ||
		{ sed 's/^/# /' /tmp/init.out; stop; return 1; }
	stop
}

# pgbench's per-transaction log (-l) in /tmp/pgb.*: latency percentiles.
latency() {
	cat /tmp/pgb.* 2>/dev/null | awk '{ print $3 }' | sort -n | awk '
		{ v[NR] = $1 }
		END {
			if (NR == 0) { print "### latency n=0"; exit }
			printf "### latency n=%d p50=%d p99=%d\n", NR, v[int(NR * 0.50) + 1], v[int(NR * 0.99) + 1]
		}'
	rm -f /tmp/pgb.*
}

# The grants' ends and hold times, from the module's trace events, and
# the spin delays: s_lock()'s pg_usleep() is a select() of no file
# descriptors, which nothing else a backend does during the run makes.
SEL=$T/events/syscalls/sys_enter_select
trace_on() {
	[ -d $T/events/rseq_slice ] || [ -d $SEL ] || return 0
	echo 8192 >$T/buffer_size_kb
	: >$T/trace
	[ -d $T/events/rseq_slice ] && echo 1 >$T/events/rseq_slice/enable
	[ -d $SEL ] && { echo 'n == 0' >$SEL/filter; echo 1 >$SEL/enable; }
}
trace_off_report() {
	[ -d $T/events/rseq_slice ] || [ -d $SEL ] || return 0
	[ -d $T/events/rseq_slice ] && echo 0 >$T/events/rseq_slice/enable
	[ -d $SEL ] && echo 0 >$SEL/enable
	awk -v sel="$([ -d $SEL ] && echo 1)" '
	/held_ns=/ { split($0, a, "held_ns="); v = a[2] + 0; n++; s += v; if (v > max) max = v }
	/rseq_slice_(yield|revoke|abort|kill|expire):/ {
		match($0, /rseq_slice_[a-z]+:/); kind[substr($0, RSTART + 11, RLENGTH - 12)]++
	}
	/ sys_select\(/ { spins++ }
	END {
		printf "### held {\"n\": %d, \"mean_ns\": %d, \"max_ns\": %d", n, n ? s / n : 0, max
		for (k in kind) printf ", \"%s\": %d", k, kind[k]
		print "}"
		if (sel) printf "### spindelays %d\n", spins
	}' $T/trace
}

if [ $test = 0 ]; then
	echo "# kernel $(uname -r), preemption: $(cat /sys/kernel/debug/sched/preempt 2>/dev/null)," \
		"cmdline: $(cat /proc/cmdline)"
	echo "# params rounds=$rounds secs=$secs clients=$clients scale=$scale scripts=$scripts"
	arms="stock off on"
	extract stock || { echo "# no stock build: arms off and on only"; arms="off on"; }
	t0=$(date +%s)
	setup "$scale" || exit 1
	echo "# setup: $(($(date +%s) - t0)) s"
	for s in $scripts; do
		# The rows an earlier script updated get their hint bits set by
		# the next scan, which would charge that script's first run: a
		# VACUUM first (pgbench -i ends with one too).
		if ! { start patched "-c rseq_slice_extension=off" && psql1 "vacuum" && stop; }; then
			sed 's/^/# /' /tmp/pg_ctl.out $LOG
			exit 1
		fi
		r=1
		while [ $r -le "$rounds" ]; do
			# The arms' order rotates: no arm always runs first.
			case $((r % 3)) in
			1) order="stock off on" ;;
			2) order="off on stock" ;;
			0) order="on stock off" ;;
			esac
			for arm in $order; do
				case " $arms " in *" $arm "*) ;; *) continue ;; esac
				case $arm in
				stock) start stock "" ;;
				off) start patched "-c rseq_slice_extension=off" ;;
				on) start patched "-c rseq_slice_extension=on" ;;
				esac || { sed 's/^/# /' /tmp/pg_ctl.out $LOG; exit 1; }
				echo "### run script=$s arm=$arm round=$r"
				stats_line before
				trace_on
				(cd /tmp && $AS "$bin"/pgbench -h $SOCK -U postgres -n -b "$s" -c "$clients" \
					-j 1 -T "$secs" -l --log-prefix=pgb postgres) 2>&1
				rc=$?
				trace_off_report
				stats_line after
				latency
				stop
				grep -E 'terminated by signal|PANIC|stuck spinlock' $LOG | sed 's/^/# server: /'
				echo "### end rc=$rc"
			done
			r=$((r + 1))
		done
	done
	exit 0
fi

# The selftest.
echo "1..6"
fails=0
n=0
ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - postgresql: $2"
	else
		echo "not ok $n - postgresql: $2"
		fails=$((fails + 1))
	fi
}
# The module, as scripts/vm loaded it (an earlier test of the boot may
# have unloaded it).
if [ -f $MOD ] && ! grep -q '^rseq_slice ' /proc/modules; then
	# shellcheck disable=SC2086 # RS_PARAMS: NAME=VALUE words
	$BB insmod $MOD $RS_PARAMS
	STATS=/sys/kernel/debug/rseq_slice/stats
fi
skill0=$(stat_of skill)
if ! setup 1 || ! start patched ""; then
	sed 's/^/# /' /tmp/pg_ctl.out $LOG 2>/dev/null | tail -n 40
	ok 1 "the patched server starts with the module loaded, pgbench -i"
	echo "# postgresql: 1 checks done, 1 failed"
	exit 1
fi
ok 0 "the patched server starts with the module loaded, pgbench -i -s 1"

# Its processes enable the extension as they start (checkpointer,
# background writer, WAL writer, ...: postmaster children all), each a
# thread the module counts; the last ones start after pg_ctl returns.
i=0
while [ "$(stat_of threads)" -lt 3 ] && [ $i -lt 600 ]; do
	sleep 0.1
	i=$((i + 1))
done
th=$(stat_of threads)
[ "$th" -ge 3 ]
ok $? "the server's processes enable the extension ($th threads enabled)"

# Round after round until a grant is seen.
g0=$(stat_of sgrant)
y0=$(stat_of syield)
r=0
txns=0
pgfail=0
while [ $r -lt 40 ]; do
	r=$((r + 1))
	$AS "$bin"/pgbench -h $SOCK -U postgres -n -b tpcb-like -c 8 -j 2 -t 100 postgres >/tmp/run.out 2>&1 ||
		{ pgfail=1; sed 's/^/# /' /tmp/run.out; break; }
	done_=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' /tmp/run.out)
	txns=$((txns + ${done_:-0}))
	[ "$(stat_of sgrant)" -gt "$g0" ] && break
done
g=$(($(stat_of sgrant) - g0))
y=$(($(stat_of syield) - y0))
[ $pgfail = 0 ] && [ $g -gt 0 ]
ok $? "grants to the backends: $g granted, $y ended by the release's yield, in $r rounds of 800 transactions"

# The bank adds up: the sums of accounts, tellers and branches are the
# history's, and every transaction pgbench counted is in the history.
sums=$(psql1 "select (select sum(abalance) from pgbench_accounts) || ' ' ||
	(select sum(tbalance) from pgbench_tellers) || ' ' ||
	(select sum(bbalance) from pgbench_branches) || ' ' ||
	(select coalesce(sum(delta), 0) || ' ' || count(*) from pgbench_history)")
echo "# accounts, tellers, branches, history sums and rows: $sums; transactions: $txns"
echo "$sums" | awk -v t="$txns" '{ exit !($1 == $2 && $2 == $3 && $3 == $4 && $5 == t && t > 0) }'
ok $? "consistency: the balances add up and the history has all $txns transactions"

# No backend was killed (the module's skill), none crashed (the server
# would log it and restart every backend).
k=$(($(stat_of skill) - skill0))
bad=$(grep -cE 'terminated by signal|was terminated|PANIC|stuck spinlock' $LOG)
[ "$k" = 0 ] && [ "$bad" = 0 ]
ok $? "no backend killed or crashed (skill +$k, $bad such lines in the server's log)"
[ "$bad" = 0 ] || sed 's/^/# server: /' $LOG | tail -n 20

stop
ok $? "the server stops (pg_ctl stop -m fast)"
echo "# postgresql: $n checks done, $fails failed"
[ $fails = 0 ]
