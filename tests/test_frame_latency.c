/*
 * The `dumpsys SurfaceFlinger --latency` reader and the statistics over
 * presented frames, on the fixtures in tests/fixtures/sf_latency/ (steady,
 * janky, pending rows, overlapping polls, malformed rows, fatal inputs)
 * and on garbage.
 */
#include "support/test_support.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracers/frame_stats.h"

#define P 16666666LL

static char *fixture(const char *name, size_t *len)
{
	char path[512];
	snprintf(path, sizeof path, "%s/tests/fixtures/sf_latency/%s", TL_SOURCE_DIR, name);
	char *data = tl_test_read_file(path, len);
	assert_non_null(data);
	return data;
}

/* Parses a fixture that must parse, and computes its statistics. */
static void load(const char *name, tl_sf_latency *lat, tl_present_stats *st)
{
	size_t len;
	char *data = fixture(name, &len);
	tl_sf_issue fatal;
	assert_int_equal(tl_sf_latency_parse(data, len, lat, &fatal), 0);
	assert_int_equal(tl_present_stats_compute(lat->frames, lat->nframes, st), 0);
	free(data);
}

static void test_latency_steady_60hz(void **state)
{
	(void)state;
	tl_sf_latency lat;
	tl_present_stats st;
	load("steady_60hz.txt", &lat, &st);
	assert_int_equal(lat.dumps, 1);
	assert_int_equal(lat.period_ns, P);
	assert_int_equal(lat.rows, 127);
	assert_int_equal(lat.rows_empty, 7);
	assert_int_equal(lat.rows_rejected, 0);
	assert_int_equal(st.frames, 120);
	assert_true(st.fps == 119 * 1e9 / (double)(119 * P));
	assert_int_equal(st.jank_count, 0);
	assert_int_equal(st.max_frame_delay, 1);
	assert_int_equal(st.intervals, 119);
	assert_int_equal(st.histogram[1], 119);
	assert_int_equal(st.p50_ns, P);
	assert_int_equal(st.p99_ns, P);
	tl_sf_latency_free(&lat);
}

static void test_latency_janky(void **state)
{
	(void)state;
	tl_sf_latency lat;
	tl_present_stats st;
	load("janky.txt", &lat, &st);
	/* intervals in periods: 1 1 1 2 1 1 3 1 1 1 25 1 1 */
	assert_int_equal(st.frames, 14);
	assert_true(st.fps == 13 * 1e9 / (double)(40 * P));
	assert_int_equal(st.jank_count, 2); /* +1 and +2; +24 is a pause */
	assert_int_equal(st.pauses, 1);
	assert_int_equal(st.max_frame_delay, 25);
	assert_int_equal(st.histogram[1], 10);
	assert_int_equal(st.histogram[2], 1);
	assert_int_equal(st.histogram[3], 1);
	assert_int_equal(st.histogram[TL_PRESENT_HIST - 1], 1);
	assert_int_equal(st.p50_ns, P);
	assert_int_equal(st.p90_ns, 3 * P);
	assert_int_equal(st.p99_ns, 25 * P);
	assert_int_equal(st.max_ns, 25 * P);
	tl_sf_latency_free(&lat);
}

static void test_latency_pending_rows_are_counted_not_used(void **state)
{
	(void)state;
	tl_sf_latency lat;
	tl_present_stats st;
	load("pending.txt", &lat, &st);
	assert_int_equal(lat.rows_pending, 3);
	assert_int_equal(st.frames, 100);
	assert_int_equal(st.max_frame_delay, 1);
	tl_sf_latency_free(&lat);
}

static void test_latency_overlapping_polls_are_deduplicated(void **state)
{
	(void)state;
	tl_sf_latency lat;
	tl_present_stats st;
	load("overlapping_polls.txt", &lat, &st);
	assert_int_equal(lat.dumps, 2);
	assert_int_equal(lat.rows, 160);
	assert_int_equal(st.frames, 120);
	assert_int_equal(st.duplicates, 40);
	assert_int_equal(st.jank_count, 0);
	assert_true(st.fps == 119 * 1e9 / (double)(119 * P));
	tl_sf_latency_free(&lat);
}

static void test_latency_malformed_rows_are_counted_with_their_line(void **state)
{
	(void)state;
	tl_sf_latency lat;
	tl_present_stats st;
	load("malformed.txt", &lat, &st);
	assert_int_equal(lat.rows_rejected, 5);
	assert_int_equal(lat.nissues, 5);
	static const size_t lines[] = {4, 6, 8, 10, 12};
	static const char *const words[] = {"truncated", "not a number", "fields", "negative",
	                                    "INT64_MAX"};
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(lat.issues[i].line, lines[i]);
		assert_non_null(strstr(lat.issues[i].message, words[i]));
	}
	assert_int_equal(st.frames, 10);
	tl_sf_latency_free(&lat);
}

static void expect_fatal(const char *name, size_t line, const char *words)
{
	size_t len;
	char *data = fixture(name, &len);
	tl_sf_latency lat;
	tl_sf_issue fatal = {0};
	assert_int_equal(tl_sf_latency_parse(data, len, &lat, &fatal), -EINVAL);
	assert_int_equal(fatal.line, line);
	assert_non_null(strstr(fatal.message, words));
	assert_null(lat.frames);
	free(data);
}

static void test_latency_fatal_inputs_name_the_line(void **state)
{
	(void)state;
	expect_fatal("empty.txt", 1, "empty");
	expect_fatal("zero_period.txt", 1, "zero");
	expect_fatal("bad_period.txt", 1, "not a number");
	tl_sf_latency lat;
	tl_sf_issue fatal;
	const char rows_first[] = "\n1\t2\t3\n";
	assert_int_equal(tl_sf_latency_parse(rows_first, strlen(rows_first), &lat, &fatal),
	                 -EINVAL);
	assert_int_equal(fatal.line, 2);
}

static void test_latency_sniff(void **state)
{
	(void)state;
	assert_true(tl_sf_latency_sniff("\n 16666666\r\n1 2 3\n", 18));
	assert_false(tl_sf_latency_sniff("{\"traceEvents\":[]}", 18));
	assert_false(tl_sf_latency_sniff("# tracer: nop\n", 14));
	assert_false(tl_sf_latency_sniff("", 0));
}

/* Random bytes, digits and separators, long lines: no crash, no leak, and
 * every frame accepted has a positive period and present time. */
static void test_latency_garbage_never_breaks_the_reader(void **state)
{
	(void)state;
	static const char alphabet[] = "0123456789\t \n\n-+x9223372036854775807\r";
	uint64_t seed = 0x9e3779b97f4a7c15u;
	char buf[4096];
	for (int round = 0; round < 3000; round++) {
		size_t len = (size_t)(seed % sizeof buf);
		for (size_t i = 0; i < len; i++) {
			seed = seed * 6364136223846793005u + 1442695040888963407u;
			unsigned r = (unsigned)(seed >> 33);
			buf[i] = round % 3 == 0 ? (char)r : alphabet[r % (sizeof alphabet - 1)];
		}
		if (round % 2 && len > 9)
			memcpy(buf, "16666666\n", 9);
		tl_sf_latency lat;
		tl_sf_issue fatal;
		if (tl_sf_latency_parse(buf, len, &lat, &fatal) != 0)
			continue;
		for (size_t i = 0; i < lat.nframes; i++)
			assert_true(lat.frames[i].present_ns > 0 && lat.frames[i].period_ns > 0);
		tl_present_stats st;
		assert_int_equal(tl_present_stats_compute(lat.frames, lat.nframes, &st), 0);
		assert_true(st.frames <= lat.nframes);
		tl_sf_latency_free(&lat);
	}
}

static void test_present_stats_measure_intervals_in_their_own_period(void **state)
{
	(void)state;
	const int64_t p60 = 16666667, p120 = 8333333;
	/* 60 Hz frames, then 120 Hz; one 120 Hz interval of 2 periods; a
	 * repeat and an interval under half a period */
	tl_present_frame f[] = {
	    {1000, p60},
	    {1000 + p60, p60},
	    {1000 + 2 * p60, p60},
	    {1000 + 2 * p60 + p120, p120},
	    {1000 + 2 * p60 + 3 * p120, p120},
	    {1000 + 2 * p60 + 3 * p120, p120},
	    {1000 + 2 * p60 + 3 * p120 + 1000, p120},
	};
	tl_present_stats st;
	assert_int_equal(tl_present_stats_compute(f, 7, &st), 0);
	assert_int_equal(st.frames, 6);
	assert_int_equal(st.duplicates, 1);
	assert_int_equal(st.intervals, 4);
	assert_int_equal(st.intervals_short, 1);
	assert_int_equal(st.periods_distinct, 2);
	assert_int_equal(st.histogram[1], 3);
	assert_int_equal(st.histogram[2], 1);
	/* changes: 0, p120 - p60 (-1 in 120 Hz periods), +p120 (+1): one jank */
	assert_int_equal(st.jank_count, 1);
	assert_int_equal(st.max_frame_delay, 2);

	tl_present_frame bad = {5, 0};
	assert_int_equal(tl_present_stats_compute(&bad, 1, &st), -EINVAL);
	assert_int_equal(tl_present_stats_compute(NULL, 0, &st), 0);
	assert_int_equal(st.frames, 0);
}

static void test_rounding_and_percentiles(void **state)
{
	(void)state;
	assert_int_equal(tl_frame_round(0.5), 1);
	assert_int_equal(tl_frame_round(1.5), 2);
	assert_int_equal(tl_frame_round(2.5), 3);
	assert_int_equal(tl_frame_round(-0.5), -1);
	assert_int_equal(tl_frame_round(0.49), 0);
	int64_t v[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	assert_int_equal(tl_frame_percentile(v, 10, 50), 5);
	assert_int_equal(tl_frame_percentile(v, 10, 90), 9);
	assert_int_equal(tl_frame_percentile(v, 10, 99), 10);
	assert_int_equal(tl_frame_percentile(v, 1, 99), 1);
	assert_int_equal(tl_frame_percentile(v, 0, 50), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_latency_steady_60hz),
	    cmocka_unit_test(test_latency_janky),
	    cmocka_unit_test(test_latency_pending_rows_are_counted_not_used),
	    cmocka_unit_test(test_latency_overlapping_polls_are_deduplicated),
	    cmocka_unit_test(test_latency_malformed_rows_are_counted_with_their_line),
	    cmocka_unit_test(test_latency_fatal_inputs_name_the_line),
	    cmocka_unit_test(test_latency_sniff),
	    cmocka_unit_test(test_latency_garbage_never_breaks_the_reader),
	    cmocka_unit_test(test_present_stats_measure_intervals_in_their_own_period),
	    cmocka_unit_test(test_rounding_and_percentiles),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
