#!/bin/sh
# The trace-cmd capture of docs/systrace.md, end to end: a program on the
# systrace recorder recorded by `trace-cmd record` into a private instance,
# `trace-cmd report`, then `timeline slices` and `timeline convert` of the
# report, which must hold every event the program wrote. Skips (exit 77),
# saying why, without trace-cmd, root or tracefs.
#
# The documented command for the top-level buffer is the same but for -B;
# it is not run here, since it takes over a buffer other programs may be
# using while the suites run.
#
# usage: check_trace_cmd_capture.sh [--skip REASON] TIMELINE_CLI TRACED_CHILD WORK_DIR
set -u
if [ "$1" = --skip ]; then
	echo "skipped: $2"
	exit 77
fi
cli=$1 child=$2 work=$3
tracefs=/sys/kernel/tracing

if ! command -v trace-cmd >/dev/null 2>&1; then
	echo "skipped: trace-cmd is not installed (tools/scripts/install-deps.sh installs it)"
	exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "skipped: trace-cmd record needs root"
	exit 77
fi
if [ ! -d "$tracefs/instances" ]; then
	echo "skipped: no tracefs at $tracefs"
	exit 77
fi

instance=timeline-trace-cmd-$$
rm -rf "$work" && mkdir -p "$work" || exit 1
cd "$work" || exit 1
# trace-cmd removes its instance, unless it stops half way
trap 'rmdir "$tracefs/instances/$instance" 2>/dev/null' EXIT

fail() {
	echo "FAILED: $*"
	for f in record.out record.err slices.txt slices.err convert.err; do
		[ -s "$f" ] && { echo "--- $f"; cat "$f"; }
	done
	exit 1
}

# As docs/systrace.md writes it, with this program and this instance.
record() {
	rm -f trace.dat
	TIMELINE_RECORDER=systrace TIMELINE_TRACEFS_INSTANCE=$instance \
		trace-cmd record "$@" -B "$instance" -C boot -e sched:sched_switch "$child" events \
		>record.out 2>record.err
}

trace-cmd --version 2>/dev/null | grep -m 1 "^trace-cmd version"
if ! record; then
	# docs/systrace.md: a kernel that refuses the function tracer's files
	grep -q "Operation not permitted" record.err || fail "trace-cmd record failed"
	echo "trace-cmd record: $(tr '\n' ' ' <record.err)"
	echo "the function tracer's files are refused: again with -d --no-filter, as docs/systrace.md says"
	rmdir "$tracefs/instances/$instance" 2>/dev/null
	if ! record -d --no-filter; then
		# it then fails only at the end, resetting set_ftrace_filter
		if ! grep -q "set_ftrace_filter" record.err || [ ! -s trace.dat ]; then
			fail "trace-cmd record -d --no-filter failed"
		fi
		echo "trace-cmd record exited with 1 after writing trace.dat: $(tail -n 1 record.err)"
	fi
fi
parent=$(sed -n 's/^pids \([0-9]*\) [0-9]*$/\1/p' record.out)
forked=$(sed -n 's/^pids [0-9]* \([0-9]*\)$/\1/p' record.out)
if [ -z "$parent" ] || [ -z "$forked" ]; then
	fail "the program did not run under trace-cmd"
fi

trace-cmd report >trace.txt 2>report.err || fail "trace-cmd report failed: $(cat report.err)"
"$cli" slices trace.txt >slices.txt 2>slices.err || fail "timeline slices trace.txt failed"
[ -s slices.err ] && fail "timeline slices trace.txt warned"

# Every event traced_child writes (tests/support/traced_child.c), on its
# thread and process: one line each, matched on its first fields.
expect() { # count, extended regex
	n=$(grep -cE "$2" slices.txt)
	[ "$n" -eq "$1" ] || fail "$n lines (not $1) match: $2"
}
p=$parent
expect 1 "^slice ts=[0-9]+ dur=[0-9]+ name=\"outer\" tid=$p pid=$p depth=0 "
expect 1 "^slice ts=[0-9]+ dur=[0-9]+ name=\"inner\" tid=$p pid=$p depth=1 "
expect 1 "^counter ts=[0-9]+ name=\"depth\" value=2 pid=$p$"
expect 1 "^counter ts=[0-9]+ name=\"depth\" value=0 pid=$p$"
expect 1 "^instant ts=[0-9]+ name=\"tick\" tid=$p pid=$p depth=0 "
expect 1 "^instant ts=[0-9]+ name=\"proc\" pid=$p track=\"it\" "
expect 1 "^async ts=[0-9]+ dur=[0-9]+ name=\"load\" pid=$p track=\"load\" cookie=7 "
expect 1 "^slice ts=[0-9]+ dur=[0-9]+ name=\"a b c\" tid=$p pid=$p depth=0 "
expect 1 "^slice ts=[0-9]+ dur=[0-9]+ name=\"x{1000,}\" tid=$p pid=$p depth=0 "
expect 1 "^slice ts=[0-9]+ dur=[0-9]+ name=\"child work\" tid=$forked pid=$forked depth=0 "
expect 1 "^slice ts=[0-9]+ dur=-1 name=\"unfinished\" tid=$p pid=$p depth=0 "
expect 11 "^(slice|instant|async|counter) "
total=$(wc -l <slices.txt)
[ "$total" -eq 11 ] || fail "$total items, not 11"

"$cli" convert trace.txt -o trace.json 2>convert.err || fail "timeline convert trace.txt failed"
grep -q '"clock":"unknown","clock_id":-1,' trace.json ||
	fail "trace.json does not say its clock is unknown"
"$cli" slices trace.json >slices.txt 2>slices.err || fail "timeline slices trace.json failed"
expect 1 "^slice ts=[0-9]+ dur=[0-9]+ name=\"outer\" tid=$p pid=$p depth=0 "
expect 1 "^slice ts=[0-9]+ dur=[0-9]+ name=\"child work\" tid=$forked pid=$forked depth=0 "
expect 1 "^async ts=[0-9]+ dur=[0-9]+ name=\"load\" pid=$p "
expect 2 "^counter ts=[0-9]+ name=\"depth value\" value=[02] pid=$p$"
echo "trace-cmd record -B, trace-cmd report, timeline slices and convert: every event found"
