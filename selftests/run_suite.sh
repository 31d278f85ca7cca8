#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs in the guest, as root, from the folder holding the test binaries
# and tests.list (made from selftests/Makefile's TEST_GEN_PROGS): every
# test as root and again as uid 1000 (tests that need root skip there),
# and the module load/unload tests last (they reload the module).
# Prints TAP; a binary that dies before reporting all its tests gets a
# "not ok" line for it, so a crash can never read as a pass.
#   run_suite [-f] [-p]
#                    -f: the full lengths (5 s per slice_test, 100000
#                    grants, 100 module load cycles); default: the CI set
#                    -p: a kernel booted with another preemption model
#                    (scripts/test's preempt= lanes): only the tests whose
#                    paths the model changes (grants, yields, revokes,
#                    expiry, churn, the library), as root only; not
#                    the argument checks, permissions and faults the
#                    default lanes run, nor each test's uid-1000 run
set -u
full=0
subset=0
for a in "$@"; do
	case $a in
	-f) full=1 ;;
	-p) subset=1 ;;
	esac
done
if [ $full = 0 ]; then
	export RSEQ_SLICE_TEST_SECS=${RSEQ_SLICE_TEST_SECS:-2}
	export RSEQ_SLICE_OVERRUN_GRANTS=${RSEQ_SLICE_OVERRUN_GRANTS:-20000}
	export RSEQ_SLICE_CHURN_CYCLES=${RSEQ_SLICE_CHURN_CYCLES:-6}
fi
echo "# kernel: $(uname -r) ($(cat /sys/kernel/debug/sched/preempt 2>/dev/null))"
echo "# cmdline: $(cat /proc/cmdline)"

# Tests that skip by design, as WHO:NAME shell patterns. Any other skip
# is a failure: a test that starts skipping (as root, say) must not read
# as a pass.
EXPECTED_SKIPS="
user:abi.params_ranges
root:global.params_not_writable_by_users
user:abi.eopnotsupp_when_disabled
user:abi.memlock_not_charged_to_root
user:sem.*.yield_cancels_timer
user:sem.*.trace_events_match_stats
user:sem.*.expiry_ends_grant
user:params.debug_checks_syscall_entry
user:sem.*.disabled_gives_no_grants
user:params.foreign_syscall_abort
user:params.debug_checks_the_word
user:traced.*
user:global.stats_count_threads
user:global.unload_refused_while_open
user:modload.load_unload_20_rounds
user:modload.merged_abi_off
user:hard.seccomp_filter_sees_the_call
user:hard.seccomp_filter_sees_the_yield
user:hard.seccomp_allowed_yield_reports_grant
user:hard.ptrace_sees_the_yield
user:hard.yield_number_on_another_file_is_foreign
user:hard.ipmodify_conflict_keeps_registrations
user:switchout.blocking_page_fault_ends_grant
user:fault.*
user:c32.foreign_abort
user:merged.enotsupp_when_off
user:merged.no_yield_counts_sabort
user:merged.yield_seen_by_seccomp
user:merged.yield_under_seccomp_reports_grant
user:rule1.grant_on_exception_return
"
# A KASAN kernel under emulation is too slow for a few cases: they may skip
# there, and only there.
if grep -q ' kasan_report$' /proc/kallsyms 2>/dev/null; then
	export RSEQ_SLICE_SLOW_KERNEL=1
	EXPECTED_SKIPS="$EXPECTED_SKIPS root:sem.*.signal_ends_grant user:sem.*.signal_ends_grant"
	EXPECTED_SKIPS="$EXPECTED_SKIPS root:overrun.median_follows_grant_ns"
	EXPECTED_SKIPS="$EXPECTED_SKIPS root:switchout.blocking_page_fault_ends_grant"
fi
# On PREEMPT_RT under emulation the timer's interrupt can come later than
# the longest grant (6.1-rt), as on the KASAN kernel, and a blocking fault
# rarely sleeps while its grant is live (6.1-arm64-rt: once in 16795
# rounds).
if uname -v | grep -q PREEMPT_RT; then
	export RSEQ_SLICE_SLOW_FAULTS=1
	EXPECTED_SKIPS="$EXPECTED_SKIPS root:overrun.median_follows_grant_ns"
	EXPECTED_SKIPS="$EXPECTED_SKIPS root:switchout.blocking_page_fault_ends_grant"
fi
# On PREEMPT_RT the signal that must land inside a grant comes from a thread
# on the other CPU (a timer's would preempt the holder first); under arm64's
# emulation its IPI arrives after the grant has ended every time
# (6.1-arm64-rt: 0 of 14220 signals in 300 s, 2 to 5 on amd64's 6.1-rt).
if uname -v | grep -q PREEMPT_RT && [ "$(uname -m)" = aarch64 ]; then
	export RSEQ_SLICE_SLOW_SIGNALS=1
	EXPECTED_SKIPS="$EXPECTED_SKIPS root:sem.*.signal_ends_grant"
fi
# In-kernel preemption reschedules inside a page fault before its return:
# preempt=full, and 6.1-rt's lazy preemption (the RT patch set's; it has
# no sched/preempt), as semantics_test's preempt_full() says.
preempt=$(cat /sys/kernel/debug/sched/preempt 2>/dev/null)
case "$preempt" in
*'(full)'*) EXPECTED_SKIPS="$EXPECTED_SKIPS root:rule1.grant_on_exception_return" ;;
'')
	uname -v | grep -q PREEMPT_RT &&
		EXPECTED_SKIPS="$EXPECTED_SKIPS root:rule1.grant_on_exception_return"
	;;
esac
# The kernel's own extension (7.2-upstream): no module, and the kernel
# answers the merged ABI's prctl. Only what speaks that ABI runs, as the
# reference for the module's lanes: merged_test (its module-only cases
# skip), lib_test and preload_test (the library and the interposer on the
# kernel's own backend) and upstream's selftests.
inkernel=0
if [ ! -e /sys/module/rseq_slice ] && ./merged_probe >/dev/null; then
	inkernel=1
	EXPECTED_SKIPS="$EXPECTED_SKIPS root:merged.enotsupp_when_off root:merged.both_ways_ebusy"
	EXPECTED_SKIPS="$EXPECTED_SKIPS user:merged.both_ways_ebusy"
	# lib_test's and preload_test's backend there, with grants.
	export RSEQ_SLICE_EXPECT_BACKEND=kernel
	echo "# the kernel's own extension, no module: merged_test, lib_test, preload_test and upstream's selftests only"
fi
# A kernel where the module cannot grant (RSEQ_SLICE_INFO_NO_GRANTS:
# PREEMPT_RT without a lazy reschedule bit, 6.12-arm64-rt): each test
# that needs a grant skips with that reason (SLICE_NEEDS_GRANTS()), which
# only here is not a failure. abi_test and rt_test check the flag.
nogrants=0
if [ $inkernel = 0 ]; then
	./info_probe
	[ $? = 1 ] && nogrants=1
fi
binaries=0

# run WHO RESULTS PROG: PROG must report RESULTS results (its plan), and
# skip only what EXPECTED_SKIPS allows.
run() {
	who=$1
	want=$2
	shift 2
	binaries=$((binaries + 1))
	echo "# === $* (as $who)"
	t0=$(cut -d. -f1 /proc/uptime)
	if [ "$who" = root ]; then
		"$@" >/tmp/tap 2>&1
	else
		runas 1000 "$@" >/tmp/tap 2>&1
	fi
	rc=$?
	cat /tmp/tap
	echo "# took $(($(cut -d. -f1 /proc/uptime) - t0)) s: $* (as $who)"
	plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' /tmp/tap | head -n1)
	got=$(grep -cE '^(not )?ok ' /tmp/tap)
	bad=$(grep -c '^not ok ' /tmp/tap)
	if [ -z "$plan" ] || [ "$got" -lt "$plan" ] || { [ $rc -ne 0 ] && [ "$bad" -eq 0 ]; }; then
		echo "not ok - $* as $who exited $rc after $got of ${plan:-?} results"
	fi
	if [ "${plan:-0}" != "$want" ]; then
		echo "not ok - $* as $who planned ${plan:-no} results, the suite expects $want"
	fi
	# The 6.1 harness prints "ok N # SKIP reason" without the name: take
	# it from the test's RUN line before it.
	# Where the module cannot grant, the skips for that reason are known:
	# named on one line.
	awk -v nogrants=$nogrants '/^#  RUN /{ name = $3 }
		/^ok [0-9]+ # SKIP/ && nogrants && /RSEQ_SLICE_INFO_NO_GRANTS/ { print name >"/tmp/ngskips"; next }
		/^ok [0-9]+ # SKIP/ { print name }' /tmp/tap >/tmp/skips
	if [ -s /tmp/ngskips ]; then
		echo "# skipped, needing a grant this kernel cannot give: $(tr '\n' ' ' </tmp/ngskips)"
		rm -f /tmp/ngskips
	fi
	while read -r name; do
		known=0
		for p in $EXPECTED_SKIPS; do
			# shellcheck disable=SC2254 # the entries are patterns
			case "$who:$name" in $p) known=1 ;; esac
		done
		[ $known = 1 ] || echo "not ok - $name skipped as $who, which the suite does not expect"
	done </tmp/skips
}

# Linux 7.2's merged ABI (upstream's, and the module's on 7.2) takes only
# a "v2" rseq registration, larger than the 32 bytes glibc registers: with
# glibc's registration off the library (and merged_test) register their
# own, as upstream's run_timeslice_test.sh runs its slice_test.
case "$(uname -r)" in
[7-9].* | [1-9][0-9].*) export GLIBC_TUNABLES=glibc.pthread.rseq=0 ;;
esac

# tests.list, made from selftests/Makefile's TEST_GEN_PROGS: one line
# per binary, "NAME RESULTS WHO...", in the order to run them.
list=$(dirname "$0")/tests.list
if [ ! -s "$list" ]; then
	echo "not ok - run_suite: no $list"
	exit 1
fi
# The list on fd 3: the tests' stdin stays the suite's.
# (run() has variables of its own: "name" is one.)
while read -r prog want whos <&3; do
	if [ $inkernel = 1 ]; then
		case $prog in
		merged_test | lib_test | preload_test) ;;
		*)
			echo "# $prog: the module's test, not run on the kernel's own extension"
			continue
			;;
		esac
	fi
	if [ $subset = 1 ]; then
		case $prog in
		abi_test | fuzz_test | fault_test | compat32_test | device_test)
			echo "# $prog: not run on the preempt= lanes (run_suite -p)"
			continue
			;;
		esac
		whos=root
	fi
	for who in $whos; do
		if [ -x "./$prog" ]; then
			run "$who" "$want" "./$prog"
		else
			binaries=$((binaries + 1))
			echo "not ok - $prog as $who: ./$prog is missing"
		fi
	done
done 3<"$list"
# Upstream's own slice_test, built here from linux-source-7.2 and, where
# ../shared/reference has them (a clone may lack it), prebuilt: not a
# kselftest binary, so not in tests.list. merged_probe only says in the log
# what this kernel answers to the merged ABI's prctl.
./merged_probe
if [ -x ./ref_slice_test ]; then
	run root 14 ./run_upstream upstream ref
else
	echo "# no prebuilt reference binaries here: run_upstream runs the project-built ones"
	run root 7 ./run_upstream upstream
fi
# scripts/test fails a lane without this line: the suite ran to its end.
echo "# run_suite: $binaries runs done"
exit 0
