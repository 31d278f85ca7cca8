#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rseq-slice (tools/rseq-slice) end to end, in the Debian guest of the
# programs lane (scripts/test --programs: scripts/vm --rootfs debian with
# python3 and gnuplot-nox), as root, from /work, the module loaded, with
# rseq-slice, librseq_slice_preload.so and ablock (a program linked with
# librseq-slice) beside it:
#   - rseq-slice ab --rounds 5 on a real program (RocksDB's cache_bench,
#     its ops/s as --metric) and on ablock: exit 0, the JSON parses, the
#     table has both arms, the PNG is a PNG, the on arm's grants > 0 and
#     the off arm's 0; ablock's off arm ran with the backend none
#     (RSEQ_SLICE_BACKEND=none), its on arm with one;
#   - rseq-slice run and status;
#   - every bad input of issue 26 item 4, its message and exit status:
#     no backend (module unloaded), CMD not found, CMD failing in a round
#     (the round's output kept; --keep-going), a metric that does not
#     match, --rounds 1, Ctrl-C (SIGINT) in the middle.
# TAP lines without numbers; ends "# rseq-slice ab: N checks done, F failed".
set -u
cd /work || exit 1
RS=./rseq-slice
PRE=/work/librseq_slice_preload.so
BB=/rs/busybox
MOD=/rs/rseq_slice.ko
RS_PARAMS=
# shellcheck disable=SC1091 # the guest's run.conf (scripts/vm)
[ -f /rs/run.conf ] && . /rs/run.conf
export RSEQ_SLICE_PRELOAD_LIB=$PRE
n=0
fails=0
ok() { n=$((n + 1)); echo "ok - rseq-slice: $*"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok - rseq-slice: $*"; }
# show FILE...: the files, as TAP comments.
show() { for f in "$@"; do [ -f "$f" ] && sed "s|^|# $f: |" "$f" | tail -n 30; done; }
# expect DESC STATUS MESSAGE CMD...: CMD exits STATUS, its stderr holds
# MESSAGE (fixed string; or its stdout), and no traceback.
expect() {
	desc=$1 want=$2 msg=$3
	shift 3
	rc=0
	"$@" >/tmp/x.out 2>/tmp/x.err </dev/null || rc=$?
	if [ "$rc" = "$want" ] && cat /tmp/x.err /tmp/x.out | grep -qF -- "$msg" &&
		! grep -q Traceback /tmp/x.err; then
		ok "$desc: exit $rc, '$(cat /tmp/x.err /tmp/x.out | grep -F -- "$msg" | head -n 1)'"
	else
		nok "$desc: exit $rc (want $want and '$msg')"
		show /tmp/x.out /tmp/x.err
	fi
}
# json FILE EXPR: the Python expression EXPR on the JSON object d of FILE
# is true.
json() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null
}
loaded() { grep -q '^rseq_slice ' /proc/modules; }
# programs.sh -t, before it in the lane's boot, ends with the module out.
# shellcheck disable=SC2086 # RS_PARAMS: NAME=VALUE words
loaded || $BB insmod $MOD $RS_PARAMS

# ---- status ------------------------------------------------------------
rc=0
$RS status >/tmp/status.out 2>&1 || rc=$?
if [ $rc = 0 ] && grep -q '^backends:  kernel, module (for root)' /tmp/status.out &&
	grep -q '^counters:  sgrant=' /tmp/status.out && grep -q '^hooks: ' /tmp/status.out; then
	ok "status as root: exit 0, both backends, counters, hooks"
else
	nok "status as root: exit $rc"
fi
sed 's/^/# /' /tmp/status.out

# ---- ab: A/B DESC NAME ARGS... -- CMD: the common checks -----------------
# Leaves the table in /tmp/NAME.table.
ab_check() {
	desc=$1 name=$2
	shift 2
	rm -rf "/tmp/$name".*
	rc=0
	# A bound for a hung run, not a slow one: SIGINT, so that what ran is
	# printed.
	timeout -s INT 900 $RS ab --rounds 5 --json "/tmp/$name.json" --markdown "/tmp/$name.md" \
		--plot "/tmp/$name.png" --output-dir "/tmp/$name.runs" "$@" \
		>"/tmp/$name.table" 2>"/tmp/$name.err" || rc=$?
	echo "# rseq-slice ab --rounds 5 ... $*"
	sed 's/^/# /' "/tmp/$name.table"
	if [ $rc = 0 ]; then
		ok "$desc: exit 0"
	else
		nok "$desc: exit $rc"
		show "/tmp/$name.err" "$(ls "/tmp/$name.runs/"*.out 2>/dev/null | tail -n 1)"
	fi
	if json "/tmp/$name.json" 'd["arms"]["off"]["n"] == 5 and d["arms"]["on"]["n"] == 5 and d["ci"][0] <= d["ratio"] <= d["ci"][1]'; then
		ok "$desc: the JSON parses, 5 rounds per arm, the ratio inside its interval"
	else
		nok "$desc: the JSON"
		show "/tmp/$name.json"
	fi
	if grep -q '^off  *5 ' "/tmp/$name.table" && grep -q '^on  *5 ' "/tmp/$name.table" &&
		grep -q '^verdict: ' "/tmp/$name.table" && grep -q '^| on | 5 |' "/tmp/$name.md"; then
		ok "$desc: the table and the Markdown have both arms and a verdict"
	else
		nok "$desc: the table"
	fi
	if [ "$(head -c 8 "/tmp/$name.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
		ok "$desc: the plot is a PNG ($(wc -c <"/tmp/$name.png") bytes)"
	else
		nok "$desc: the plot is not a PNG"
		show "/tmp/$name.err"
	fi
	if json "/tmp/$name.json" 'd["arms"]["on"]["counters"]["sgrant"] > 0 and d["arms"]["off"]["counters"]["sgrant"] == 0'; then
		ok "$desc: grants in the on arm, none in the off arm ($(grep -E '^(on|off) ' "/tmp/$name.table" | awk '{ printf "%s %s; ", $1, $6 }'))"
	else
		nok "$desc: grants: the on arm needs some, the off arm none"
	fi
	if grep -q '^rseq-slice: round 5 of 5, elapsed [0-9]* s, ETA [0-9]* s$' "/tmp/$name.err"; then
		ok "$desc: the progress lines on stderr"
	else
		nok "$desc: no progress line 'round 5 of 5, elapsed, ETA'"
		show "/tmp/$name.err"
	fi
}

ab_check "ab on cache_bench (ops/s)" cb --warmup 0 --higher-is-better \
	--metric 'Rough parallel ops/sec = *([0-9.]+)' -- \
	cache_bench -threads=8 -num_shard_bits=0 -cache_size=8388608 -value_bytes=1024 \
	-ops_per_thread=10000
if json /tmp/cb.json 'd["arms"]["on"]["interposer"]["sections"] > 0 and d["metric"].startswith("Rough")'; then
	ok "ab on cache_bench: the interposer counted sections in the on arm"
else
	nok "ab on cache_bench: no interposer sections in the on arm"
fi
cp /tmp/cb.table /tmp/cb.md /tmp/cb.png /tmp/cb.json /work/ 2>/dev/null

ab_check "ab on ablock (linked with librseq-slice)" ablock --warmup 1 -- ./ablock -n 300
if grep -q 'backend=none ' /tmp/ablock.runs/round-1-off.out &&
	grep -q 'backend=kernel ' /tmp/ablock.runs/round-1-on.out; then
	ok "ab on ablock: RSEQ_SLICE_BACKEND=none gave the library none in the off arm, kernel in the on arm"
else
	nok "ab on ablock: the library's backends: off '$(head -n 1 /tmp/ablock.runs/round-1-off.out)', on '$(head -n 1 /tmp/ablock.runs/round-1-on.out)'"
fi

# ---- run ---------------------------------------------------------------
rc=0
$RS run -- ./ablock -n 300 >/tmp/run.out 2>/tmp/run.err || rc=$?
if [ $rc = 0 ] && grep -q '^module:     grants=[0-9]' /tmp/run.err && grep -q '^ops/s: ' /tmp/run.out; then
	ok "run: exit 0, the program's output through, the module's counter deltas ($(grep '^module:' /tmp/run.err))"
else
	nok "run: exit $rc"
	show /tmp/run.out /tmp/run.err
fi
rc=0
$RS run -- sh -c 'exit 7' >/dev/null 2>/tmp/run.err || rc=$?
if [ $rc = 7 ]; then ok "run: CMD's exit status (7)"; else nok "run: exit $rc, not CMD's 7"; show /tmp/run.err; fi

# ---- bad input (issue 26, item 4) ----------------------------------------
expect "--rounds 1" 2 "--rounds 1: at least 2 rounds" $RS ab --rounds 1 -- true
expect "a CMD that is not found" 4 "no-such-program: command not found" \
	$RS ab -- no-such-program
printf 'echo hi\n' >/tmp/notexec
chmod 0644 /tmp/notexec
expect "a CMD that is not executable" 4 "/tmp/notexec: not executable" $RS ab -- /tmp/notexec
expect "a metric that does not match" 6 "does not match the output of warm-up 1, arm off" \
	$RS ab --rounds 2 --metric 'x=([0-9]+)' -- echo y=1
expect "a metric that captures no number" 6 "captured 'abc', not a number" \
	$RS ab --rounds 2 --metric 'x=(\S+)' -- echo x=abc
# A CMD that fails in round 2 only (its third run: round 1 off and on, then
# round 2 on, the order alternating), printing what it is.
rm -f /tmp/cnt
# shellcheck disable=SC2016 # sh -c's script
FAIL2='n=$(cat /tmp/cnt 2>/dev/null || echo 0); echo $((n + 1)) >/tmp/cnt; echo "this is run $n"; [ $n != 2 ] || exit 7'
expect "a CMD that exits non-zero in a round" 5 "exited 7 in round 2, arm on (output kept: " \
	$RS ab --rounds 4 --warmup 0 -- sh -c "$FAIL2"
kept=$(sed -n 's/.*(output kept: \([^;]*\);.*/\1/p' /tmp/x.err)
if [ -f "$kept" ] && grep -qx 'this is run 2' "$kept"; then
	ok "the failed round's output is kept ($kept)"
else
	nok "the failed round's output is not kept: '$kept'"
fi
rm -f /tmp/cnt
expect "--keep-going: the failed round is left out, the rounds go on" 5 "going on" \
	$RS ab --rounds 4 --warmup 0 --keep-going -- sh -c "$FAIL2"
if grep -q '^off  *4 ' /tmp/x.out && grep -q '^on  *3 ' /tmp/x.out &&
	grep -q '^failed runs: 1 (round 2 on: exited 7)' /tmp/x.out; then
	ok "--keep-going: the table has 4 off and 3 on rounds and names the failed run"
else
	nok "--keep-going: the table"
	show /tmp/x.out
fi
# Ctrl-C in round 3: the program's group (a sleep it started) ended,
# the partial results printed, exit 130.
rm -f /tmp/cnt /tmp/sleeper
# shellcheck disable=SC2016 # sh -c's script
HANG='n=$(cat /tmp/cnt 2>/dev/null || echo 0); echo $((n + 1)) >/tmp/cnt; if [ $n -ge 4 ]; then sleep 600 & echo $! >/tmp/sleeper; wait; fi'
$RS ab --rounds 5 --warmup 0 -- sh -c "$HANG" >/tmp/int.out 2>/tmp/int.err &
pid=$!
i=0
while [ ! -s /tmp/sleeper ] && [ $i -lt 600 ]; do i=$((i + 1)); sleep 0.1; done
kill -INT $pid
rc=0
wait $pid || rc=$?
sleeper=$(cat /tmp/sleeper 2>/dev/null)
i=0
while [ -n "$sleeper" ] && kill -0 "$sleeper" 2>/dev/null && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
if [ $rc = 130 ] && [ -n "$sleeper" ] && ! kill -0 "$sleeper" 2>/dev/null &&
	grep -q '^interrupted after 2 of 5 rounds: partial results' /tmp/int.out &&
	grep -q '^off  *2 ' /tmp/int.out && grep -q 'interrupted in round 3' /tmp/int.err &&
	! grep -q Traceback /tmp/int.err; then
	ok "Ctrl-C in round 3: exit 130, the program's group ended, 2 rounds' results printed"
else
	nok "Ctrl-C: exit $rc, sleeper '$sleeper'"
	show /tmp/int.out /tmp/int.err
fi
# No backend: the module unloaded (and this kernel has none of its own).
i=0
while loaded && [ $i -lt 50 ]; do $BB rmmod rseq_slice 2>/dev/null || sleep 0.1; i=$((i + 1)); done
expect "no backend (module not loaded): ab" 3 "no backend for this user: sudo modprobe rseq_slice" \
	$RS ab -- true
expect "no backend (module not loaded): status" 1 "usable:    no" $RS status
if grep -q '^to fix:    sudo modprobe rseq_slice' /tmp/x.out && grep -q '^usable:    no' /tmp/x.out; then
	ok "status without the module says how to load it"
else
	nok "status without the module"
	show /tmp/x.out
fi
# shellcheck disable=SC2086 # RS_PARAMS: NAME=VALUE words
loaded || $BB insmod $MOD $RS_PARAMS

echo "# rseq-slice ab: $n checks done, $fails failed"
[ $fails = 0 ]
