/*
 * What reading a trace costs per thread, counted in instructions by
 * callgrind where timings would be noise: the CLI reads a wide trace
 * (support/wide_traces.h: each thread in a process of its own, with names,
 * categories, async ids, counters and flows of its own) of SMALL and of
 * LARGE threads, and the instructions per thread, those of a one-thread
 * read taken off (the CLI's start), must grow by less than GROWTH_MAX.
 *
 * A read in linear time costs the same per thread at both sizes (x0.95 to
 * x1.02 measured, gcc 12 -O2, x86-64); a lookup that scans the threads,
 * processes, names, tracks or flows read so far costs LARGE / SMALL times
 * more per thread at the larger size, for its part of the cost. Before the
 * lookups were hashed: x2.16 for a snapshot converted to JSON, x2.05 to
 * Perfetto, x1.45 for ftrace text through `slices`, x1.33 converted to
 * ftrace, x1.88 for JSON converted, x1.59 for Perfetto through `slices`,
 * x2.76 for the merge; each lookup made a scan again alone fails at least
 * one of them (the one by process of the clock alignment, x1.01 alone,
 * excepted: a scan of a few words per process).
 *
 * Skipped, saying why, without valgrind, in sanitizer builds (valgrind
 * does not run them) and under an emulator (valgrind would count the
 * emulator).
 */
#include "support/test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/wide_traces.h"

#define SMALL 1000u
#define LARGE 8000u
#define GROWTH_MAX 1.15

/* Skips the running test, printing why, where instructions are not counted. */
static void skip_unless_countable(void)
{
	const char *why = NULL;
	if (TL_TEST_SANITIZED)
		why = "built with a sanitizer, which valgrind does not run";
	else if (tl_test_emulator())
		why = "the suites run under an emulator, whose instructions valgrind would count";
	else if (!tl_test_cli())
		why = "TIMELINE_CLI is not set (the CLI is not built)";
	else if (system("command -v valgrind >/dev/null 2>&1") != 0)
		why = "valgrind is not installed";
	if (why) {
		print_message("skipped: %s\n", why);
		skip();
	}
}

/* A wide trace of threads threads written by write, in a fresh file. */
static const char *wide_trace(int (*write)(FILE *, unsigned), const char *ext, unsigned threads)
{
	const char *path = tl_test_path("wide", ext);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(write(f, threads), 0);
	assert_int_equal(fclose(f), 0);
	return path;
}

/* The instructions callgrind counts for `timeline ARGS PATH`, its output
 * thrown away. */
static double instructions(const char *args, const char *path)
{
	const char *counts = tl_test_path("callgrind", ".out");
	int status = tl_test_run("valgrind --tool=callgrind --callgrind-out-file='%s' '%s' %s '%s' "
	                         ">/dev/null 2>&1",
	                         counts, tl_test_cli(), args, path);
	if (status != 0)
		fail_msg("valgrind --tool=callgrind timeline %s %s: exit status %d", args, path,
		         status);
	char *text = tl_test_read_file(counts, NULL);
	assert_non_null(text);
	/* "totals:" when present (the collected cost), else "summary:" */
	double ir = 0;
	const char *at = strstr(text, "\ntotals:");
	if (!at)
		at = strstr(text, "\nsummary:");
	if (at)
		ir = strtod(strchr(at, ':') + 1, NULL);
	free(text);
	remove(counts);
	if (!(ir > 0))
		fail_msg("no instruction count in callgrind's output for timeline %s", args);
	return ir;
}

/* A read to count: `timeline ARGS` on a wide trace (and a second one). */
typedef struct reading {
	const char *what;
	const char *args;
	int (*write)(FILE *, unsigned);
	const char *ext;
	int via_perfetto;                   /* the trace converted to Perfetto first */
	int (*write_too)(FILE *, unsigned); /* NULL: one input */
	const char *ext_too;
} reading;

/* The input of r at threads threads: written, and converted when asked. */
static const char *input_of(int (*write)(FILE *, unsigned), const char *ext, int via_perfetto,
                            unsigned threads)
{
	const char *path = wide_trace(write, ext, threads);
	if (!via_perfetto)
		return path;
	const char *pb = tl_test_path("wide", ".pftrace");
	assert_int_equal(tl_test_run_cli(NULL, NULL, "convert '%s' -o '%s'", path, pb), 0);
	remove(path);
	return pb;
}

/*
 * The instructions per thread of read r at SMALL and LARGE threads, a
 * one-thread read's taken off; fails when they grow by GROWTH_MAX or more.
 */
static void check_cost_per_thread(const reading *r)
{
	skip_unless_countable();
	static const unsigned sizes[] = {1, SMALL, LARGE};
	double ir[3];
	for (int i = 0; i < 3; i++) {
		char args[4096];
		const char *path = input_of(r->write, r->ext, r->via_perfetto, sizes[i]);
		const char *too =
		    r->write_too ? input_of(r->write_too, r->ext_too, 0, sizes[i]) : NULL;
		snprintf(args, sizeof args, "%s%s%s%s", r->args, too ? " '" : "", too ? too : "",
		         too ? "'" : "");
		ir[i] = instructions(args, path);
		remove(path);
		if (too)
			remove(too);
	}
	double small = (ir[1] - ir[0]) / (SMALL - 1), large = (ir[2] - ir[0]) / (LARGE - 1);
	printf("%s: %.0f instructions per thread at %u threads, %.0f at %u: x%.3f (limit "
	       "x%.2f)\n",
	       r->what, small, SMALL, large, LARGE, large / small, GROWTH_MAX);
	if (!(large / small < GROWTH_MAX))
		fail_msg("%s: %.0f instructions per thread at %u threads, %.0f at %u: x%.2f, "
		         "not under x%.2f",
		         r->what, small, SMALL, large, LARGE, large / small, GROWTH_MAX);
}

static void test_snapshot_convert_costs_the_same_per_thread_at_1k_and_8k_threads(void **state)
{
	(void)state;
	check_cost_per_thread(
	    &(reading){"snapshot, convert to JSON", "convert -o -", tl_wide_snapshot, ".tl"});
}

static void test_snapshot_convert_to_perfetto_costs_the_same_per_thread(void **state)
{
	(void)state;
	check_cost_per_thread(&(reading){"snapshot, convert to Perfetto",
	                                 "convert -f perfetto -o -", tl_wide_snapshot, ".tl"});
}

static void test_ftrace_slices_costs_the_same_per_thread_at_1k_and_8k_threads(void **state)
{
	(void)state;
	check_cost_per_thread(&(reading){"ftrace text, slices", "slices", tl_wide_ftrace, ".txt"});
}

static void test_ftrace_convert_to_ftrace_costs_the_same_per_thread(void **state)
{
	(void)state;
	check_cost_per_thread(&(reading){"ftrace text, convert to ftrace", "convert -f ftrace -o -",
	                                 tl_wide_ftrace, ".txt"});
}

static void test_json_convert_costs_the_same_per_thread_at_1k_and_8k_threads(void **state)
{
	(void)state;
	check_cost_per_thread(
	    &(reading){"JSON, convert to JSON", "convert -o -", tl_wide_json, ".json"});
}

static void test_perfetto_slices_costs_the_same_per_thread_at_1k_and_8k_threads(void **state)
{
	(void)state;
	check_cost_per_thread(
	    &(reading){"Perfetto, slices", "slices", tl_wide_json, ".json", .via_perfetto = 1});
}

/* Two in-process traces aligned through their processes (clock_align.h),
 * their names merged. */
static void test_merge_costs_the_same_per_thread_at_1k_and_8k_threads(void **state)
{
	(void)state;
	check_cost_per_thread(&(reading){"merge, JSON and snapshot", "merge -o -", tl_wide_json,
	                                 ".json", .write_too = tl_wide_snapshot, .ext_too = ".tl"});
}

int main(void)
{
	tl_test_clear_environment();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_snapshot_convert_costs_the_same_per_thread_at_1k_and_8k_threads),
	    cmocka_unit_test(test_snapshot_convert_to_perfetto_costs_the_same_per_thread),
	    cmocka_unit_test(test_ftrace_slices_costs_the_same_per_thread_at_1k_and_8k_threads),
	    cmocka_unit_test(test_ftrace_convert_to_ftrace_costs_the_same_per_thread),
	    cmocka_unit_test(test_json_convert_costs_the_same_per_thread_at_1k_and_8k_threads),
	    cmocka_unit_test(test_perfetto_slices_costs_the_same_per_thread_at_1k_and_8k_threads),
	    cmocka_unit_test(test_merge_costs_the_same_per_thread_at_1k_and_8k_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
