#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs in the guest: upstream's own time slice selftest, unchanged, the way
# upstream's run_timeslice_test.sh (Linux 7.2) runs it: glibc's rseq
# registration off (GLIBC_TUNABLES=glibc.pthread.rseq=0), check_optimized
# first (the "optimized", v2, rseq registration must work), then
# slice_test, whose three variants (n2_2_50, n50_2_50, n2_2_50_no_yield)
# each run 5 s. For each SET (default: "upstream ref") it runs
# ./SET_check_optimized and ./SET_slice_test: upstream_* are built by the
# project from Debian's linux-source-7.2, ref_* are the prebuilt ones of
# ../shared/reference.
#
# Prints TAP. Unlike run_timeslice_test.sh, a check_optimized that fails
# (where upstream's script skips) and a variant that skips are FAILURES.
# Besides upstream's verdict, each variant must have exercised the
# mechanism (upstream's test passes without a single grant): Yielded > 0
# where it yields, Aborted > 0 and Yielded = 0 where it does not.
# Prints each variant's counts, and rseq/stats (debugfs) before and after
# each binary where it can be read.
#
# slice_test reads the clock with clock_gettime() inside its critical
# sections. That is a system call unless the clocksource has a vDSO mode
# (tsc): on hpet or acpi_pm every grant ends at the next clock read, and
# no variant ever sees one, with upstream's own implementation too
# (measured on the reference kernel with clocksource=hpet: Yielded 0,
# Aborted 0). Under emulation the kernel may mark the TSC unstable and
# switch at any time (6.1 does at boot); tsc=reliable on the command line,
# which scripts/vm gives every guest, keeps it. The clocksource is printed
# with each binary's results.
# Where the module says it cannot grant (info_probe: RSEQ_SLICE_INFO_NO_GRANTS,
# 6.12-arm64-rt) the binary runs once, upstream's verdict must hold, and
# the checks that want grants skip with that reason.
#   run_upstream [SET]...
set -u
GLIBC_TUNABLES="${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.pthread.rseq=0"
export GLIBC_TUNABLES
STATS=/sys/kernel/debug/rseq/stats
VARIANTS="n2_2_50 n50_2_50 n2_2_50_no_yield"
CLOCK=/sys/devices/system/clocksource/clocksource0/current_clocksource
SETS=${*:-upstream ref}
OUT=${TMPDIR:-/tmp}/run_upstream.$$

nogrants=0
if [ -x ./info_probe ]; then
	./info_probe
	[ $? = 1 ] && nogrants=1
fi
n=0
fails=0
for s in $SETS; do n=$((n + 7)); done
echo "1..$n"
n=0
ok() {
	n=$((n + 1))
	echo "ok $n - $*"
}
notok() {
	n=$((n + 1))
	fails=$((fails + 1))
	echo "not ok $n - $*"
}
stats() {
	if [ -r "$STATS" ]; then
		echo "# rseq/stats $1:"
		sed 's/^/#   /' "$STATS"
	else
		echo "# rseq/stats $1: $STATS not readable here"
	fi
}
# count VARIANT NAME: the count slice_test printed for VARIANT ("# Yielded N").
count() {
	awk -v v="slice_ext.$1.slice_test" -v k="$2" '
		$1 == "#" && $2 == "RUN" && $3 == v { on = 1; next }
		on && /^(not )?ok / { exit }
		on && $1 == "#" && $2 == k { print $3; exit }' "$OUT"
}

echo "# kernel: $(uname -r); GLIBC_TUNABLES=$GLIBC_TUNABLES"
for s in $SETS; do
	co=./${s}_check_optimized
	st=./${s}_slice_test
	echo "# === $s: $co, then $st"
	if [ ! -x "$co" ] || [ ! -x "$st" ]; then
		notok "$s: $co or $st is missing"
		for v in $VARIANTS; do
			notok "$s slice_test $v: not run"
			notok "$s slice_test $v: not run"
		done
		continue
	fi
	"$co"
	rc=$?
	if [ $rc = 0 ]; then
		ok "$s check_optimized: the optimized (v2) rseq registration works"
	else
		notok "$s check_optimized exited $rc (run_timeslice_test.sh would skip the test: a failure here)"
	fi
	# Upstream's variants run a fixed 5 s each: on a loaded host one may
	# see no grant in it. Run the binary again (up to 8 times) until each
	# variant has been exercised once; upstream's verdict must hold in
	# every run.
	need=$VARIANTS
	bad=
	runs=0
	while [ -n "$need" ] && [ $runs -lt 8 ] && { [ $nogrants = 0 ] || [ $runs = 0 ]; }; do
		runs=$((runs + 1))
		stats "before $s slice_test (run $runs)"
		cs0=$(cat $CLOCK 2>/dev/null)
		"$st" >"$OUT" 2>&1
		rc=$?
		cs1=$(cat $CLOCK 2>/dev/null)
		sed 's/^/# | /' "$OUT"
		stats "after $s slice_test (run $runs)"
		echo "# clocksource: $cs0 before $s slice_test, $cs1 after"
		left=
		for v in $VARIANTS; do
			line=$(grep -E "^(not )?ok [0-9]+ slice_ext\.$v\.slice_test" "$OUT" | head -n1)
			case "$line" in
			"") bad="$bad $v:no-result(rc=$rc)" ;;
			ok*"# SKIP"*) bad="$bad $v:skipped(${line#*# SKIP})" ;;
			ok*) ;;
			*) bad="$bad $v:failed" ;;
			esac
			y=$(count "$v" Yielded)
			a=$(count "$v" Aborted)
			echo "# counts $s $v run $runs: Success $(count "$v" Success) Yielded ${y:-?} Aborted ${a:-?} Scheduled $(count "$v" Scheduled) Raced $(count "$v" Raced)"
			case " $need " in *" $v "*) ;; *) continue ;; esac
			case "$v" in
			*_no_yield) [ "${a:-0}" -gt 0 ] && [ "${y:-1}" = 0 ] && continue ;;
			*) [ "${y:-0}" -gt 0 ] && continue ;;
			esac
			left="$left $v"
		done
		need=${left# }
	done
	hint=
	case "$cs0 $cs1" in
	tsc*" "tsc*) ;;
	*) hint=" (clocksource $cs0/$cs1: clock_gettime() may be a system call here, which ends each grant inside slice_test's critical section; boot with tsc=reliable)" ;;
	esac
	for v in $VARIANTS; do
		case "$bad " in
		*" $v:"*) notok "$s slice_test $v: upstream's verdict in $runs runs:$bad" ;;
		*) ok "$s slice_test $v: passed in each of $runs runs" ;;
		esac
	done
	for v in $VARIANTS; do
		if [ $nogrants = 1 ]; then
			ok "$s slice_test $v: exercised # SKIP this kernel cannot grant (RSEQ_SLICE_INFO_NO_GRANTS)"
			continue
		fi
		case " $need " in
		*" $v "*) notok "$s slice_test $v: not exercised in $runs runs (yield variants want Yielded > 0, no_yield Aborted > 0 with Yielded 0)$hint" ;;
		*) ok "$s slice_test $v: exercised" ;;
		esac
	done
done
rm -f "$OUT"
echo "# run_upstream: $fails of $n failed"
[ $fails = 0 ]
