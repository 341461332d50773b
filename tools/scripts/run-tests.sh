#!/usr/bin/env bash
# Every test: install what is missing, then build and run the suites four
# times: a plain build (warnings are errors), a plain build without
# libtracefs (TIMELINE_WITH_TRACEFS=OFF, checked not to reach its headers or
# link it) and without elfutils (TIMELINE_WITH_ELFUTILS=OFF, checked not to
# link libelf), AddressSanitizer + UndefinedBehaviorSanitizer, the suites with
# threads under ThreadSanitizer, and an aarch64 cross build (warnings are
# errors) whose suites run under qemu-user; then every libFuzzer target for a
# bounded time (FUZZ_SECONDS, default 20). Ends with the benchmark figures
# (informational).
set -uo pipefail
cd "$(dirname "$0")/../.."

tools/scripts/install-deps.sh || exit 1
echo "=== install: $SECONDS s"

jobs=$(nproc)
status=0
summary=()

# Each stage says how long it took, in its own line and in the summary.
stage_start=$SECONDS
stage_time() { # name: prints and returns (in $stage_took) the time since the last stage
	stage_took="$((SECONDS - stage_start)) s"
	stage_start=$SECONDS
	echo "=== $1: $stage_took"
}

run_suite() { # name, build dir, cmake options...; TL_CTEST_EXCLUDE: a regex of suites not run
	local name=$1 dir=$2
	shift 2
	stage_start=$SECONDS
	echo "=== $name"
	rm -f "$dir.ctest.log" # a stage that fails to build must not count an older run's tests
	if ! cmake -S . -B "$dir" -DTIMELINE_WERROR=ON "$@" >"$dir.configure.log" 2>&1; then
		cat "$dir.configure.log"
		summary+=("$name: configure failed")
		status=1
		return
	fi
	if ! cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1; then
		tail -n 60 "$dir.build.log"
		summary+=("$name: build failed")
		status=1
		return
	fi
	local runner=()
	# ThreadSanitizer cannot map its shadow memory with the kernel's
	# widest address randomisation; run its suites without it.
	if [ "$name" = tsan ] && command -v setarch >/dev/null; then
		runner=(setarch "$(uname -m)" -R)
	fi
	local exclude=()
	[ -z "${TL_CTEST_EXCLUDE:-}" ] || exclude=(-E "$TL_CTEST_EXCLUDE")
	local built="$((SECONDS - stage_start)) s"
	local result
	if "${runner[@]}" ctest --test-dir "$dir" --output-on-failure -j"$jobs" "${exclude[@]}" \
		>"$dir.ctest.log" 2>&1; then
		result=$(grep -E 'tests passed' "$dir.ctest.log")
	else
		status=1
		result=$(grep -E 'tests passed|tests failed' "$dir.ctest.log" | tail -1)
	fi
	cat "$dir.ctest.log"
	stage_time "$name"
	summary+=("$name: $result ($stage_took: built in $built)")
}

# The build without libtracefs must not use it behind the option's back: no
# include path of libtracefs or libtraceevent in its compile commands, none
# of their headers in the compiler's dependency files, neither library
# needed by libtimeline or the CLI; nor libelf (built without elfutils).
check_without_tracefs() { # name, build dir
	local name=$1 dir=$2 found=() d
	[ -f "$dir/libtimeline.so" ] || return # the build failed: already counted
	[ -f "$dir/compile_commands.json" ] || found+=("no compile_commands.json to check")
	for d in $(pkg-config --cflags-only-I libtracefs libtraceevent | sed 's/-I//g'); do
		grep -q -- "$d" "$dir/compile_commands.json" && found+=("include path $d")
		find "$dir" -name '*.o.d' -exec grep -l -- "$d/" {} + | grep -q . &&
			found+=("a header in $d")
	done
	readelf -d "$dir/libtimeline.so" "$dir/tools/timeline" | grep -qE 'NEEDED.*(tracefs|traceevent)' &&
		found+=("linked against them")
	readelf -d "$dir/libtimeline.so" "$dir/tools/timeline" | grep -qE 'NEEDED.*libelf' &&
		found+=("libelf linked")
	if [ ${#found[@]} -gt 0 ]; then
		local what
		printf -v what '%s, ' "${found[@]}"
		echo "$name: optional library used: ${what%, }"
		summary+=("$name: optional library used: ${what%, }")
		status=1
	fi
}

run_suite plain build -DCMAKE_BUILD_TYPE=RelWithDebInfo
run_suite notracefs build-notracefs -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTIMELINE_WITH_TRACEFS=OFF \
	-DTIMELINE_WITH_ELFUTILS=OFF \
	-DTIMELINE_BUILD_BENCH=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
check_without_tracefs notracefs build-notracefs
run_suite asan build-asan -DCMAKE_BUILD_TYPE=Debug "-DTIMELINE_SANITIZE=address;undefined" \
	-DTIMELINE_BUILD_BENCH=OFF
run_suite tsan build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTIMELINE_SANITIZE=thread \
	-DTIMELINE_BUILD_BENCH=OFF -DTIMELINE_BUILD_TOOLS=ON
# The aarch64 gate (Android's machine): nothing may be x86-only but the TSC
# fast path. cmake/toolchain-aarch64-linux-gnu.cmake runs the suites under
# qemu-user; the CLI's suites run it through tests/support/emulated_cli.sh.
# Not run there:
# - test_cli_record, test_cli_record_instrumented: `timeline record` starts
#   the traced program (tests' traced_child, an aarch64 program) itself, and
#   the kernel cannot run it without binfmt_misc; the native runs cover them;
# - test_install: it builds its consumers with the host's compiler.
TL_CTEST_EXCLUDE='^test_cli_record|^test_install$' run_suite arm64 build-arm64 \
	-DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTIMELINE_BUILD_BENCH=OFF
CC=clang CXX=clang++ run_suite fuzz build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DTIMELINE_BUILD_FUZZ=ON -DTIMELINE_BUILD_TESTS=OFF -DTIMELINE_BUILD_BENCH=OFF -DTIMELINE_WERROR=OFF \
	"-DTIMELINE_SANITIZE=address;undefined" "-DTIMELINE_FUZZ_SECONDS=${FUZZ_SECONDS:-20}"

stage_start=$SECONDS
if [ -x build/tests/bench/timeline-bench ]; then
	echo "=== benchmarks (informational)"
	build/tests/bench/timeline-bench --quick || true
	[ -x build/tests/bench/timeline-bench-file ] && { build/tests/bench/timeline-bench-file --quick || true; }
fi
if [ -x build/tests/bench/timeline-bench-export ]; then
	# 1 M events only: the 50 M-event rows take minutes (docs/bench.md)
	build/tests/bench/timeline-bench-export --quick || true
fi
if [ -x build/tests/bench/timeline-bench-readers ]; then
	# MB/s and peak memory of the readers beside python3's json.load on the
	# same JSON (docs/bench.md); ctest's bench_readers_memory checks the memory
	build/tests/bench/timeline-bench-readers --json-mb 10 --ftrace-mb 100 || true
fi

stage_time benchmarks
summary+=("benchmarks: $stage_took")
echo "=== summary"
printf '%s\n' "${summary[@]}"
echo "all stages: $SECONDS s"
# One closing line over the five runs: "tests: N passed, N failed".
passed=0
failed=0
for log in build.ctest.log build-notracefs.ctest.log build-asan.ctest.log build-tsan.ctest.log \
	build-arm64.ctest.log \
	build-fuzz.ctest.log; do
	line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" 2>/dev/null | tail -1)
	[ -n "$line" ] || continue
	f=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
	t=$(sed -E 's/.* failed out of ([0-9]+).*/\1/' <<<"$line")
	passed=$((passed + t - f))
	failed=$((failed + f))
done
[ $status -eq 0 ] || [ $failed -gt 0 ] || failed=1 # a build that failed counts
echo "tests: $passed passed, $failed failed"
exit $status
