/*
 * The hot path's cost in instructions, counted by callgrind, where timings
 * would be noise: tests/bench/callgrind_counts.sh runs timeline-bench's
 * kernels under valgrind and reports instructions per event with the clock
 * read excluded (events) or the empty loop excluded (disabled macro).
 *
 * Each clock path is measured on its own, since each has its own route
 * through the emit code and its own clock read: the vDSO path on every
 * machine (TIMELINE_NO_TSC=1), the TSC path wherever the CPU's TSC is
 * invariant (TIMELINE_FORCE_TSC=1, so also where the kernel runs another
 * clocksource; otherwise its tests are skipped with the reason). On each path the clock read's own
 * instructions, measured by the `clock` kernel on that path, are subtracted
 * before the limit is applied.
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

#include "recorder/clock.h"

#define BENCH_PATH TL_BINARY_DIR "/tests/bench/timeline-bench"
#define SCRIPT_PATH TL_SOURCE_DIR "/tests/bench/callgrind_counts.sh"
#define EVENTS "100000" /* per kernel run; a multiple of 8 */

#define LIMIT_EVENT 40.0   /* begin or end, besides the clock read */
#define LIMIT_DISABLED 6.0 /* the macro on a disabled category */
/* An instrumented call (entry and exit hooks, an empty function), besides
 * its two clock reads: the hooks write their records inline, on the TSC
 * path in the hooks themselves (92 with gcc 12 -O2), on the vDSO path in
 * the functions they jump to, which call clock_gettime (138). A call taken
 * back by the minimum duration costs at most 1.2 times a recorded one on
 * either path. */
#define LIMIT_CALL_TSC 96.0
#define LIMIT_CALL_VDSO 145.0
#define LIMIT_FILTERED_OVER_CALL 1.2
/* The file recorder's drain, per begin or end event it writes to the file
 * (packed: 35 with gcc 12 -O2; 53 before the packing loop kept its state
 * in registers). */
#define LIMIT_DRAIN 40.0

/* The script's figures for one clock path. */
struct path_counts {
	const char *name;  /* "vdso" or "tsc": the path asked for */
	const char *label; /* for messages */
	bool measured;
	char path[16]; /* the path the script reports it measured */
	double begin;  /* besides the clock read */
	double end;    /* besides the clock read */
	double clock;  /* the clock read alone */
	double disabled;
	double call;     /* an instrumented call, besides its clock reads */
	double filtered; /* the same, taken back by the minimum duration */
	double drain;    /* the file recorder's drain, per event written */
};

/* Every figure NAN until the script gives it. */
#define NOT_MEASURED                                                                               \
	.begin = NAN, .end = NAN, .clock = NAN, .disabled = NAN, .call = NAN, .filtered = NAN,     \
	.drain = NAN
static struct path_counts vdso = {.name = "vdso", .label = "vDSO path", NOT_MEASURED};
static struct path_counts tsc = {.name = "tsc", .label = "TSC path", NOT_MEASURED};

/* Runs the script with the environment as it is; its output goes to ours. */
static int run_script(struct path_counts *c)
{
	char line[512];
	printf("--- %s\n", c->label);
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
		if (sscanf(line, "path: %15s", c->path) == 1)
			continue;
		if (sscanf(line, "result: %31s %lf", name, &value) != 2)
			continue;
		if (strcmp(name, "begin") == 0)
			c->begin = value;
		else if (strcmp(name, "end") == 0)
			c->end = value;
		else if (strcmp(name, "clock") == 0)
			c->clock = value;
		else if (strcmp(name, "disabled") == 0)
			c->disabled = value;
		else if (strcmp(name, "call") == 0)
			c->call = value;
		else if (strcmp(name, "filtered") == 0)
			c->filtered = value;
		else if (strcmp(name, "drain") == 0)
			c->drain = value;
	}
	int status = pclose(script);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		print_error("%s failed (status %d)\n", SCRIPT_PATH, status);
		return -1;
	}
	c->measured = true;
	return 0;
}

static void print_summary(const struct path_counts *c)
{
	if (!c->measured) {
		printf("%-9s not measured: the CPU has no invariant TSC\n", c->label);
		return;
	}
	printf("%-9s (measured: %s) begin %.2f = clock read %.2f + %.2f besides it; "
	       "end %.2f = %.2f + %.2f; limit %.0f besides the clock read\n",
	       c->label, c->path, c->begin + c->clock, c->clock, c->begin, c->end + c->clock,
	       c->clock, c->end, LIMIT_EVENT);
}

/* Sets name to value, or unsets it when value is NULL. */
static void env_put(const char *name, const char *value)
{
	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
}

/* Measures the vDSO path (forced with TIMELINE_NO_TSC=1) and, wherever the
 * CPU's TSC is invariant, the TSC path (forced with TIMELINE_FORCE_TSC=1, so
 * a VM whose kernel does not trust the TSC measures it too). */
static int measure_counts(void **state)
{
	(void)state;
	static const char *const names[] = {"TIMELINE_NO_TSC", "TIMELINE_FORCE_TSC"};
	char saved[2][16];
	bool was_set[2];
	for (int i = 0; i < 2; i++) {
		const char *v = getenv(names[i]);
		was_set[i] = v != NULL;
		snprintf(saved[i], sizeof saved[i], "%s", v ? v : "");
	}

	env_put("TIMELINE_FORCE_TSC", NULL);
	env_put("TIMELINE_NO_TSC", "1");
	int rc = run_script(&vdso);
	if (rc == 0 && tl_clock_tsc_invariant()) {
		env_put("TIMELINE_NO_TSC", NULL);
		env_put("TIMELINE_FORCE_TSC", "1");
		rc = run_script(&tsc);
	}
	for (int i = 0; i < 2; i++)
		env_put(names[i], was_set[i] ? saved[i] : NULL);

	printf("--- instructions per event, the clock read measured by the clock kernel on "
	       "the same path and subtracted\n");
	print_summary(&vdso);
	print_summary(&tsc);
	return rc;
}

/* The TSC path's tests skip, saying why, where the CPU has no invariant TSC. */
static void skip_unless_measured(const struct path_counts *c)
{
	if (c->measured)
		return;
	print_message("skipped: the %s was not measured: %s\n", c->label,
	              TL_HAVE_TSC ? "the CPU does not report constant_tsc and nonstop_tsc"
	                          : "no TSC on this architecture");
	skip();
}

static void assert_at_most(const struct path_counts *c, const char *what, double measured,
                           double limit)
{
	if (strcmp(c->path, c->name) != 0)
		fail_msg("%s: the script measured the '%s' path, not the %s", what, c->path,
		         c->label);
	if (isnan(measured))
		fail_msg("%s on the %s: no count in the script's output", what, c->label);
	if (!(measured <= limit))
		fail_msg("%s on the %s: %.2f, limit %.2f (instructions, or their ratio)", what,
		         c->label, measured, limit);
}

static void test_vdso_path_begin_costs_at_most_40_instructions_besides_the_clock(void **state)
{
	(void)state;
	assert_at_most(&vdso, "TL_TRACE_EVENT_BEGIN0", vdso.begin, LIMIT_EVENT);
}

static void test_vdso_path_end_costs_at_most_40_instructions_besides_the_clock(void **state)
{
	(void)state;
	assert_at_most(&vdso, "TL_TRACE_EVENT_END0", vdso.end, LIMIT_EVENT);
}

static void test_tsc_path_begin_costs_at_most_40_instructions_besides_the_clock(void **state)
{
	(void)state;
	skip_unless_measured(&tsc);
	assert_at_most(&tsc, "TL_TRACE_EVENT_BEGIN0", tsc.begin, LIMIT_EVENT);
}

static void test_tsc_path_end_costs_at_most_40_instructions_besides_the_clock(void **state)
{
	(void)state;
	skip_unless_measured(&tsc);
	assert_at_most(&tsc, "TL_TRACE_EVENT_END0", tsc.end, LIMIT_EVENT);
}

static void test_tsc_path_instrumented_call_costs_at_most_96_instructions(void **state)
{
	(void)state;
	skip_unless_measured(&tsc);
	assert_at_most(&tsc, "an instrumented call", tsc.call, LIMIT_CALL_TSC);
}

static void test_vdso_path_instrumented_call_costs_at_most_145_instructions(void **state)
{
	(void)state;
	assert_at_most(&vdso, "an instrumented call", vdso.call, LIMIT_CALL_VDSO);
}

static void test_tsc_path_filtered_call_costs_at_most_1_2_recorded_calls(void **state)
{
	(void)state;
	skip_unless_measured(&tsc);
	assert_at_most(&tsc, "a filtered call over a recorded one", tsc.filtered / tsc.call,
	               LIMIT_FILTERED_OVER_CALL);
}

static void test_vdso_path_filtered_call_costs_at_most_1_2_recorded_calls(void **state)
{
	(void)state;
	assert_at_most(&vdso, "a filtered call over a recorded one", vdso.filtered / vdso.call,
	               LIMIT_FILTERED_OVER_CALL);
}

/* The disabled macro reads no clock: one path, the one every machine has. */
static void test_disabled_macro_costs_at_most_6_instructions(void **state)
{
	(void)state;
	assert_at_most(&vdso, "TL_TRACE_EVENT_BEGIN0 on a disabled category", vdso.disabled,
	               LIMIT_DISABLED);
}

/* The drain reads no clock for the events it writes: one path, the one
 * every machine has. */
static void test_drain_writes_an_event_in_at_most_40_instructions(void **state)
{
	(void)state;
	assert_at_most(&vdso, "the file recorder's drain, per event written", vdso.drain,
	               LIMIT_DRAIN);
}

static int skip_test(const char *reason)
{
	printf("skipped: %s\n", reason);
	return TL_TEST_SKIP_EXIT;
}

int main(void)
{
	if (TL_TEST_SANITIZED)
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
	    cmocka_unit_test(test_vdso_path_begin_costs_at_most_40_instructions_besides_the_clock),
	    cmocka_unit_test(test_vdso_path_end_costs_at_most_40_instructions_besides_the_clock),
	    cmocka_unit_test(test_tsc_path_begin_costs_at_most_40_instructions_besides_the_clock),
	    cmocka_unit_test(test_tsc_path_end_costs_at_most_40_instructions_besides_the_clock),
	    cmocka_unit_test(test_disabled_macro_costs_at_most_6_instructions),
	    cmocka_unit_test(test_drain_writes_an_event_in_at_most_40_instructions),
	    cmocka_unit_test(test_tsc_path_instrumented_call_costs_at_most_96_instructions),
	    cmocka_unit_test(test_vdso_path_instrumented_call_costs_at_most_145_instructions),
	    cmocka_unit_test(test_tsc_path_filtered_call_costs_at_most_1_2_recorded_calls),
	    cmocka_unit_test(test_vdso_path_filtered_call_costs_at_most_1_2_recorded_calls),
	};
	return cmocka_run_group_tests(tests, measure_counts, NULL);
}
