#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs in the guest, as root, from the folder holding the test binaries:
# every test as root and again as uid 1000 (tests that need root skip
# there), and the module load/unload tests last (they reload the module).
# Prints TAP; a binary that dies before reporting all its tests gets a
# "not ok" line for it, so a crash can never read as a pass.
#   run_suite [-f]   -f: the full lengths (5 s per slice_test, 100000
#                    grants, 100 module load cycles); default: the CI set
set -u
if [ "${1:-}" != -f ]; then
	export RSEQ_SLICE_TEST_SECS=${RSEQ_SLICE_TEST_SECS:-2}
	export RSEQ_SLICE_OVERRUN_GRANTS=${RSEQ_SLICE_OVERRUN_GRANTS:-20000}
	export RSEQ_SLICE_CHURN_CYCLES=${RSEQ_SLICE_CHURN_CYCLES:-20}
fi
echo "# kernel: $(uname -r) ($(cat /sys/kernel/debug/sched/preempt 2>/dev/null))"
echo "# cmdline: $(cat /proc/cmdline)"

run() {
	who=$1
	shift
	echo "# === $* (as $who)"
	if [ "$who" = root ]; then
		"$@" >/tmp/tap 2>&1
	else
		runas 1000 "$@" >/tmp/tap 2>&1
	fi
	rc=$?
	cat /tmp/tap
	plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' /tmp/tap | head -n1)
	got=$(grep -cE '^(not )?ok ' /tmp/tap)
	bad=$(grep -c '^not ok ' /tmp/tap)
	if [ -z "$plan" ] || [ "$got" -lt "$plan" ] || { [ $rc -ne 0 ] && [ "$bad" -eq 0 ]; }; then
		echo "not ok - $* as $who exited $rc after $got of ${plan:-?} results"
	fi
}

run root ./abi_test
run user ./abi_test
run root ./semantics_test
run user ./semantics_test
run root ./slice_test
run user ./slice_test
run root ./fuzz_test
run user ./fuzz_test
run root ./churn_test
run user ./churn_test
run root ./hardening_test
run user ./hardening_test
run root ./fault_test
run user ./fault_test
run root ./compat32_test
run user ./compat32_test
run user ./device_test
run root ./device_test
run root ./stress_test
exit 0
