#!/bin/sh
# Instructions per event under callgrind: deterministic where timings are not.
#
# usage: callgrind_counts.sh [TIMELINE_BENCH] [EVENTS]
#
# Runs `timeline-bench --callgrind-kernel KERNEL N` under
# valgrind --tool=callgrind for each kernel, collecting only what runs inside
# bench_callgrind_measure() (start-up, warm-up and shutdown excluded), once
# with N = EVENTS and once with N = 2 * EVENTS. The difference, Ir(KERNEL),
# is the cost of EVENTS events without any fixed cost (call, loop set-up).
# It prints the instructions (Ir) per event:
#   events:   (Ir(kernel) - Ir(clock)) / EVENTS  -- the clock read excluded,
#             "clock" being the same loop with only the library's clock read
#   disabled: (Ir(disabled) - Ir(empty)) / EVENTS -- the macro alone
#   drain:    Ir(drain) / EVENTS -- the file recorder's drain, counted
#             inside tl_stream_block (its thread) rather than the kernel
# then "path: tsc" or "path: vdso", and one "result: NAME VALUE" line per
# figure for scripts and tests.
#
# The kernels run on the clock path the library picks: the TSC where it is
# usable, the vDSO clock_gettime otherwise or with TIMELINE_NO_TSC=1 in the
# environment. The clock read's own cost differs per path, hence "clock" is
# measured on the same path and subtracted; the script fails if the kernels
# did not all take one path.
# Exits 0 when every kernel was measured (whatever the counts), 77 when
# valgrind is not installed, 1 on any other failure, 2 on bad usage.
set -eu

bench=${1:-./timeline-bench}
events=${2:-100000}

# Limits (instructions per event) printed next to the counts.
limit_event=40
limit_disabled=6
limit_drain=40

case $events in
'' | *[!0-9]*)
	echo "callgrind_counts: EVENTS must be a number, not '$events'" >&2
	exit 2
	;;
esac
if [ $((events % 8)) -ne 0 ] || [ "$events" -eq 0 ]; then
	echo "callgrind_counts: EVENTS must be a positive multiple of 8" >&2
	exit 2
fi
if ! command -v valgrind >/dev/null 2>&1; then
	echo "callgrind_counts: valgrind is not installed"
	exit 77
fi
if [ ! -x "$bench" ]; then
	echo "callgrind_counts: $bench is not an executable (build timeline-bench first)" >&2
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/callgrind_counts.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Prints the Ir collected for one kernel run for $2 events: inside
# bench_callgrind_measure, or, for the drain, inside tl_stream_block.
collected_ir() {
	kernel=$1
	out=$tmp/$kernel-$2.out
	collect='bench_callgrind_measure*'
	if [ "$kernel" = drain ]; then
		collect='tl_stream_block'
	fi
	if ! valgrind --tool=callgrind --callgrind-out-file="$out" --collect-atstart=no \
		--toggle-collect="$collect" \
		"$bench" --callgrind-kernel "$kernel" "$2" >"$tmp/$kernel.log" 2>&1; then
		echo "callgrind_counts: valgrind failed for kernel '$kernel':" >&2
		cat "$tmp/$kernel.log" >&2
		exit 1
	fi
	# "totals:" when present (the collected cost), else "summary:".
	ir=$(awk '/^totals:/ { t = $2 } /^summary:/ { s = $2 }
		END { if (t != "") print t; else if (s != "") print s }' "$out")
	if [ -z "$ir" ] || [ "$ir" -eq 0 ]; then
		echo "callgrind_counts: no instructions collected for kernel '$kernel'" \
			"(is bench_callgrind_measure in the binary?)" >&2
		exit 1
	fi
	# the path the session took, from timeline-bench's "clock tsc|vdso"
	sed -n 's/^kernel .* clock \([a-z]*\)$/\1/p' "$tmp/$kernel.log" >>"$tmp/paths"
	echo "$ir"
}

# Prints the Ir of $events events of one kernel, fixed costs cancelled.
events_ir() {
	small=$(collected_ir "$1" "$events")
	large=$(collected_ir "$1" $((2 * events)))
	echo $((large - small))
}

ir_empty=$(events_ir empty)
ir_clock=$(events_ir clock)
ir_disabled=$(events_ir disabled)
ir_begin=$(events_ir begin)
ir_end=$(events_ir end)
ir_pair=$(events_ir pair)
ir_counter=$(events_ir counter)
ir_copy=$(events_ir copy)
ir_frame=$(events_ir frame)
ir_call=$(events_ir call)
ir_filtered=$(events_ir filtered)
ir_drain=$(events_ir drain)

path=$(sort -u "$tmp/paths")
case $path in
tsc | vdso) ;;
*)
	echo "callgrind_counts: the kernels did not all report one clock path:" \
		"'$(printf '%s' "$path" | tr '\n' ' ')'" >&2
	exit 1
	;;
esac

awk -v n="$events" -v empty="$ir_empty" -v clock="$ir_clock" -v disabled="$ir_disabled" \
	-v begin="$ir_begin" -v end="$ir_end" -v pair="$ir_pair" -v counter="$ir_counter" \
	-v copy="$ir_copy" -v frame="$ir_frame" -v call="$ir_call" -v filtered="$ir_filtered" \
	-v drain="$ir_drain" -v le="$limit_event" -v ld="$limit_disabled" -v ldr="$limit_drain" \
	-v path="$path" '
function verdict(value, limit) { return value <= limit ? "PASS" : "MISS" }
function line(name, value, what, limit) {
	if (limit == "")
		printf "%-9s %9.2f   %-28s\n", name, value, what
	else
		printf "%-9s %9.2f   %-28s <= %-4d %s\n", name, value, what, limit, verdict(value, limit)
}
BEGIN {
	per_clock = (clock - empty) / n
	per_disabled = (disabled - empty) / n
	per_begin = (begin - clock) / n
	per_end = (end - clock) / n
	per_pair_event = (pair - clock) / n
	per_counter = (counter - clock) / n
	per_copy_event = (copy - clock) / n
	per_frame = 2 * (frame - clock) / n
	per_call = 2 * (call - clock) / n
	per_filtered = 2 * (filtered - clock) / n
	per_drain = drain / n

	printf "instructions per event under callgrind: %d events per kernel, ring recorder" \
		" (1 MiB, wrapping)\n", n
	printf "clock path: %s; \"besides the clock read\" subtracts the clock kernel," \
		" measured on this path\n", path == "tsc" ? "TSC (rdtsc)" : "vDSO (clock_gettime)"
	printf "%-9s %9s   %-28s %-7s %s\n", "kernel", "Ir/event", "", "limit", "result"
	line("disabled", per_disabled, "macro alone (minus empty)", ld)
	line("begin", per_begin, "besides the clock read", le)
	line("end", per_end, "besides the clock read", le)
	line("pair", per_pair_event, "per event, besides the clock", le)
	line("pair", 2 * per_pair_event, "per begin+end pair", "")
	line("counter", per_counter, "besides the clock read", "")
	line("copy", per_copy_event, "per event of copy begin2+end", "")
	line("frame", per_frame, "per frame (begin+end), tracer", "")
	line("call", per_call, "per instrumented call", "")
	line("call", per_call / (2 * per_pair_event), "x a begin+end pair", "")
	line("filtered", per_filtered, "per call taken back", "")
	line("filtered", per_filtered / per_call, "x a recorded call", "")
	line("drain", per_drain, "file drain, per event written", ldr)
	line("clock", per_clock, "the clock read (minus empty)", "")
	line("empty", empty / n, "loop overhead", "")

	printf "path: %s\n", path
	printf "result: disabled %.2f\n", per_disabled
	printf "result: begin %.2f\n", per_begin
	printf "result: end %.2f\n", per_end
	printf "result: pair %.2f\n", per_pair_event
	printf "result: counter %.2f\n", per_counter
	printf "result: copy %.2f\n", per_copy_event
	printf "result: frame %.2f\n", per_frame
	printf "result: call %.2f\n", per_call
	printf "result: filtered %.2f\n", per_filtered
	printf "result: drain %.2f\n", per_drain
	printf "result: clock %.2f\n", per_clock
}'
