#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time over a fresh corpus seeded
# from tests/fuzz/seeds/<target>/ and, for the text and JSON readers, from
# the conformance inputs (and the text reader from the trace-cmd fixtures); the
# snapshot and Perfetto readers get the demo's trace; the streamed import
# all of the text and JSON ones, and every other target's seeds, the file
# recorder's streams (.tl) and the damaged inputs among them, since it reads
# every format. Exits non-zero when the fuzzer finds a crash.
# Usage: run-fuzzer.sh FUZZER SECONDS WORKDIR
set -euo pipefail
fuzzer=$1 seconds=$2 work=$3
name=$(basename "$fuzzer")
src=${TL_SOURCE_DIR:?}
rm -rf "$work"
mkdir -p "$work/corpus" "$work/seeds"

if [ -d "$src/tests/fuzz/seeds/$name" ]; then
	cp "$src/tests/fuzz/seeds/$name"/* "$work/seeds/" 2>/dev/null || true
fi
conformance=$src/../shared/conformance
case $name in
fuzz_ftrace_text | fuzz_atrace_payload)
	[ -d "$conformance" ] && cp "$conformance"/systrace_*.input "$conformance"/marker_*.input "$work/seeds/"
	[ "$name" = fuzz_atrace_payload ] || cp "$src"/tests/fixtures/trace-cmd/*.txt "$work/seeds/" ;;
fuzz_json_reader)
	[ -d "$conformance" ] && cp "$conformance"/json_*.input "$work/seeds/" ;;
fuzz_import_stream)
	[ -d "$conformance" ] && cp "$conformance"/json_*.input "$conformance"/systrace_*.input "$work/seeds/"
	cp "$src"/tests/fixtures/trace-cmd/*.txt "$work/seeds/"
	for target in fuzz_json_reader fuzz_ftrace_text fuzz_perfetto_reader fuzz_binary_snapshot; do
		cp "$src/tests/fuzz/seeds/$target"/* "$work/seeds/"
	done
	"${TIMELINE_CLI:?}" demo --seconds 0.05 --recorder ring -o "$work/seeds/demo.json" >/dev/null ;;
fuzz_binary_snapshot)
	"${TIMELINE_CLI:?}" demo --seconds 0.05 --recorder ring -o "$work/seeds/demo.tlsnap" >/dev/null ;;
fuzz_perfetto_reader)
	"${TIMELINE_CLI:?}" demo --seconds 0.05 --recorder ring -o "$work/demo.tlsnap" >/dev/null
	"${TIMELINE_CLI:?}" convert "$work/demo.tlsnap" -o "$work/seeds/demo.perfetto-trace" 2>/dev/null ;;
esac
# an empty seed directory is fine: libFuzzer starts from nothing
cd "$work"
exec "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 \
	-artifact_prefix="$work/" corpus seeds
