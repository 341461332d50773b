/*
 * The hot path's cost in instructions, counted by callgrind, where timings
 * would be noise: tests/bench/callgrind_counts.sh runs timeline-bench's
 * kernels under valgrind and reports instructions per event with the clock
 * read excluded (events) or the empty loop excluded (disabled macro).
 *
 * Skipped (exit 77, with the reason) without valgrind, in sanitizer builds
 * and in unoptimised builds, where the counts say nothing about the library.
 */
#include "support/test_support.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BENCH_PATH TL_BINARY_DIR "/tests/bench/timeline-bench"
#define SCRIPT_PATH TL_SOURCE_DIR "/tests/bench/callgrind_counts.sh"
#define EVENTS "100000" /* per kernel run; a multiple of 8 */

#define LIMIT_EVENT 40.0   /* begin or end, besides the clock read */
#define LIMIT_DISABLED 6.0 /* the macro on a disabled category */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BUILT_WITH_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define BUILT_WITH_SANITIZER 1
#endif
#endif
#ifndef BUILT_WITH_SANITIZER
#define BUILT_WITH_SANITIZER 0
#endif

static struct {
	double begin;
	double end;
	double disabled;
} counts = {NAN, NAN, NAN};

/* Runs the script once for every test; its output goes to ours. */
static int measure_counts(void **state)
{
	(void)state;
	char line[512];
	fflush(stdout);
	FILE *script = popen("sh '" SCRIPT_PATH "' '" BENCH_PATH "' " EVENTS, "r");
	if (!script) {
		print_error("cannot run %s\n", SCRIPT_PATH);
		return -1;
	}
	while (fgets(line, sizeof line, script)) {
		char name[32];
		double value;
		fputs(line, stdout);
		if (sscanf(line, "result: %31s %lf", name, &value) != 2)
			continue;
		if (strcmp(name, "begin") == 0)
			counts.begin = value;
		else if (strcmp(name, "end") == 0)
			counts.end = value;
		else if (strcmp(name, "disabled") == 0)
			counts.disabled = value;
	}
	int status = pclose(script);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		print_error("%s failed (status %d)\n", SCRIPT_PATH, status);
		return -1;
	}
	return 0;
}

static void assert_at_most(const char *what, double measured, double limit)
{
	if (isnan(measured))
		fail_msg("%s: no count in the script's output", what);
	if (!(measured <= limit))
		fail_msg("%s: %.2f instructions per event, limit %.0f", what, measured, limit);
}

static void test_begin_costs_at_most_40_instructions_besides_the_clock(void **state)
{
	(void)state;
	assert_at_most("TL_TRACE_EVENT_BEGIN0", counts.begin, LIMIT_EVENT);
}

static void test_end_costs_at_most_40_instructions_besides_the_clock(void **state)
{
	(void)state;
	assert_at_most("TL_TRACE_EVENT_END0", counts.end, LIMIT_EVENT);
}

static void test_disabled_macro_costs_at_most_6_instructions(void **state)
{
	(void)state;
	assert_at_most("TL_TRACE_EVENT_BEGIN0 on a disabled category", counts.disabled,
	               LIMIT_DISABLED);
}

static int skip_test(const char *reason)
{
	printf("skipped: %s\n", reason);
	return TL_TEST_SKIP_EXIT;
}

int main(void)
{
	if (BUILT_WITH_SANITIZER)
		return skip_test(
		    "built with a sanitizer: instruction counts are not the library's");
#ifndef __OPTIMIZE__
	return skip_test("unoptimised build: instruction counts are not the library's");
#endif
	if (system("command -v valgrind >/dev/null 2>&1") != 0)
		return skip_test("valgrind is not installed");
	if (access(BENCH_PATH, X_OK) != 0)
		return skip_test(BENCH_PATH " is not built (TIMELINE_BUILD_BENCH=OFF)");

	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_begin_costs_at_most_40_instructions_besides_the_clock),
	    cmocka_unit_test(test_end_costs_at_most_40_instructions_besides_the_clock),
	    cmocka_unit_test(test_disabled_macro_costs_at_most_6_instructions),
	};
	return cmocka_run_group_tests(tests, measure_counts, NULL);
}
