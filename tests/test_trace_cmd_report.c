/*
 * `timeline slices` and `timeline convert` on real `trace-cmd report`
 * output (tests/fixtures/trace-cmd/README.md says how it was made): every
 * slice, instant, async slice and counter the program wrote, with its
 * thread and name, and nothing else.
 */
#include "support/test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXTURES TL_SOURCE_DIR "/tests/fixtures/trace-cmd/"

static const char *cli;

static int setup(void **state)
{
	(void)state;
	cli = tl_test_cli();
	if (!cli) {
		print_message("TIMELINE_CLI is not set; run this suite through ctest\n");
		return -1;
	}
	return 0;
}

/* The program's events, as `timeline slices` prints them (up to the depth,
 * the cookie or the pid), given its pid, its worker's tid and the capture's
 * timestamps (ns) of the 15 payloads in the order the program wrote them. */
typedef struct capture {
	unsigned pid, worker;
	long long ts[15];
} capture;

enum {
	FRAME,
	QUEUE_3,
	DOWNLOAD_S,
	TICK,
	DRAW,
	DECODE,
	PARSE,
	PARSE_E,
	QUEUE_5,
	DOWNLOAD_F,
	DONE,
	DECODE_E,
	DRAW_E,
	FRAME_E,
	QUEUE_0
};

/* Read by hand from the "print:" lines of local.report.txt. */
static const capture local_capture = {
    24439,
    24440,
    {9445708925000, 9445709257000, 9445709540000, 9445709816000, 9445710091000, 9445710488000,
     9445710767000, 9445711041000, 9445711860000, 9445712137000, 9445712417000, 9445712692000,
     9445713021000, 9445713295000, 9445713567000},
};

/* The same from boot-instance.report.txt. */
static const capture boot_capture = {
    5676,
    5677,
    {9617778041067, 9617778327751, 9617778601967, 9617778872698, 9617779143269, 9617779511840,
     9617779786377, 9617780209864, 9617780481326, 9617780751346, 9617781031270, 9617781309032,
     9617781624213, 9617781894904, 9617782168218},
};

#define NEXPECTED 10

/* Read straight from the report, or after a JSON conversion: the counter
 * is then "queue value", and the async slice has no cookie. */
enum reading { FROM_REPORT, FROM_JSON };

static void expected_items(const capture *c, enum reading reading, char out[][160])
{
	const char *counter_name = reading == FROM_REPORT ? "queue" : "queue value";
	const char *cookie = reading == FROM_REPORT ? "cookie=42 " : "cookie=null ";
	const long long *t = c->ts;
	unsigned p = c->pid, w = c->worker;
	int n = 0;
	snprintf(out[n++], 160, "slice ts=%lld dur=%lld name=\"frame\" tid=%u pid=%u depth=0 ",
	         t[FRAME], t[FRAME_E] - t[FRAME], p, p);
	snprintf(out[n++], 160, "slice ts=%lld dur=%lld name=\"draw: list\" tid=%u pid=%u depth=1 ",
	         t[DRAW], t[DRAW_E] - t[DRAW], p, p);
	snprintf(out[n++], 160, "slice ts=%lld dur=%lld name=\"decode\" tid=%u pid=%u depth=0 ",
	         t[DECODE], t[DECODE_E] - t[DECODE], w, p);
	snprintf(out[n++], 160, "slice ts=%lld dur=%lld name=\"parse\" tid=%u pid=%u depth=1 ",
	         t[PARSE], t[PARSE_E] - t[PARSE], w, p);
	snprintf(out[n++], 160, "instant ts=%lld name=\"tick\" tid=%u pid=%u depth=1 ", t[TICK], p,
	         p);
	snprintf(out[n++], 160, "instant ts=%lld name=\"done\" tid=%u pid=%u depth=1 ", t[DONE], w,
	         p);
	snprintf(out[n++], 160,
	         "async ts=%lld dur=%lld name=\"download\" pid=%u track=\"download\" %s",
	         t[DOWNLOAD_S], t[DOWNLOAD_F] - t[DOWNLOAD_S], p, cookie);
	snprintf(out[n++], 160, "counter ts=%lld name=\"%s\" value=3 pid=%u", t[QUEUE_3],
	         counter_name, p);
	snprintf(out[n++], 160, "counter ts=%lld name=\"%s\" value=5 pid=%u", t[QUEUE_5],
	         counter_name, p);
	snprintf(out[n++], 160, "counter ts=%lld name=\"%s\" value=0 pid=%u", t[QUEUE_0],
	         counter_name, p);
	assert_int_equal(n, NEXPECTED);
}

/*
 * Every line of listing starts with one of the expected items, each item
 * starts exactly one line, and a counter line is the whole item.
 */
static void assert_exactly(const char *listing, char expected[][160])
{
	int used[NEXPECTED] = {0};
	size_t lines = 0;
	for (const char *line = listing; *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		int found = -1;
		for (int i = 0; i < NEXPECTED && found < 0; i++) {
			size_t n = strlen(expected[i]);
			int whole = strncmp(expected[i], "counter", 7) == 0;
			if (!used[i] && (whole ? len == n : len >= n) &&
			    strncmp(line, expected[i], n) == 0)
				found = i;
		}
		if (found < 0)
			fail_msg("unexpected item: %.*s", (int)len, line);
		used[found] = 1;
		lines++;
		line = end ? end + 1 : line + len;
	}
	for (int i = 0; i < NEXPECTED; i++) {
		if (!used[i])
			fail_msg("missing item: %s", expected[i]);
	}
	assert_int_equal(lines, NEXPECTED);
}

/* `timeline slices FILE` (its events), asserting it exits 0 and warns of nothing. */
static char *slices_of(const char *file)
{
	const char *out = tl_test_path("trace-cmd-slices", ".txt");
	const char *err = tl_test_path("trace-cmd-slices", ".err");
	assert_int_equal(tl_test_run("'%s' slices '%s' --kind slice,instant,async,counter > '%s' "
	                             "2> '%s'",
	                             cli, file, out, err),
	                 0);
	char *errors = tl_test_read_file(err, NULL);
	assert_non_null(errors);
	assert_string_equal(errors, "");
	free(errors);
	char *text = tl_test_read_file(out, NULL);
	assert_non_null(text);
	return text;
}

static void assert_slices_find_the_program(const char *file, const capture *c)
{
	char expected[NEXPECTED][160];
	expected_items(c, FROM_REPORT, expected);
	char *text = slices_of(file);
	assert_exactly(text, expected);
	free(text);
}

static void test_slices_reads_trace_cmd_report(void **state)
{
	(void)state;
	assert_slices_find_the_program(FIXTURES "local.report.txt", &local_capture);
}

static void test_slices_reads_trace_cmd_report_with_latency_columns(void **state)
{
	(void)state;
	assert_slices_find_the_program(FIXTURES "local.report-l.txt", &local_capture);
}

static void test_slices_reads_trace_cmd_report_of_a_boot_clock_buffer(void **state)
{
	(void)state;
	assert_slices_find_the_program(FIXTURES "boot-instance.report.txt", &boot_capture);
}

static void
test_slices_reads_trace_cmd_report_of_a_boot_clock_buffer_with_latency_columns(void **state)
{
	(void)state;
	assert_slices_find_the_program(FIXTURES "boot-instance.report-l.txt", &boot_capture);
}

static void test_slices_counts_the_kernel_events_of_trace_cmd_report_and_no_failure(void **state)
{
	(void)state;
	const char *out = tl_test_path("trace-cmd-stats", ".txt");
	assert_int_equal(tl_test_run("'%s' slices '%s' --kind stat > '%s'", cli,
	                             FIXTURES "boot-instance.report.txt", out),
	                 0);
	char *text = tl_test_read_file(out, NULL);
	assert_non_null(text);
	/* 54 lines: "cpus=2", 15 markers and 38 sched_switch */
	assert_string_equal(text, "stat name=\"systrace_kernel_event_skipped\" value=38\n");
	free(text);
}

static void test_slices_names_threads_after_trace_cmd_tasks(void **state)
{
	(void)state;
	const char *out = tl_test_path("trace-cmd-threads", ".txt");
	assert_int_equal(tl_test_run("'%s' slices '%s' --kind thread > '%s'", cli,
	                             FIXTURES "boot-instance.report.txt", out),
	                 0);
	char *text = tl_test_read_file(out, NULL);
	assert_non_null(text);
	assert_string_equal(text, "thread tid=5676 pid=5676 name=\"tcm-main\" sort_index=null\n"
	                          "thread tid=5677 pid=5676 name=\"tcm-worker\" sort_index=null\n");
	free(text);
}

/* `timeline convert FILE -o OUT.json`, then `timeline slices OUT.json`. */
static char *convert_then_slices(const char *file, const char *json)
{
	assert_int_equal(tl_test_run("'%s' convert '%s' -o '%s' 2>/dev/null", cli, file, json), 0);
	return slices_of(json);
}

static void test_convert_of_trace_cmd_report_keeps_every_event(void **state)
{
	(void)state;
	static const struct {
		const char *file;
		const capture *capture;
	} cases[] = {
	    {FIXTURES "local.report.txt", &local_capture},
	    {FIXTURES "boot-instance.report-l.txt", &boot_capture},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char expected[NEXPECTED][160];
		expected_items(cases[i].capture, FROM_JSON, expected);
		char *text = convert_then_slices(cases[i].file, tl_test_path("trace-cmd", ".json"));
		assert_exactly(text, expected);
		free(text);
	}
}

static void test_convert_of_trace_cmd_report_says_its_clock_is_unknown(void **state)
{
	(void)state;
	/* trace-cmd report does not print the clock (trace-cmd dump --clock
	 * does): this one was recorded on boot, which it prints as raw
	 * nanoseconds, as it prints x86-tsc ticks and counter values */
	const char *json = tl_test_path("trace-cmd-clock", ".json");
	assert_int_equal(tl_test_run("'%s' convert '%s' -o '%s' 2>/dev/null", cli,
	                             FIXTURES "boot-instance.report.txt", json),
	                 0);
	char *text = tl_test_read_file(json, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"clock\":\"unknown\",\"clock_id\":-1,"));
	free(text);
}

static void test_convert_of_trace_cmd_report_takes_the_clock_assume_clock_names(void **state)
{
	(void)state;
	/* recorded with -C boot, which the report does not print */
	const char *json = tl_test_path("trace-cmd-assumed-clock", ".json");
	assert_int_equal(tl_test_run("'%s' convert '%s' --assume-clock boot -o '%s' 2>/dev/null",
	                             cli, FIXTURES "boot-instance.report.txt", json),
	                 0);
	char *text = tl_test_read_file(json, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"clock\":\"boot\",\"clock_id\":7,"));
	free(text);
	/* the option is taken at its word: local.* was on trace-cmd's local clock */
	const char *ftrace = tl_test_path("trace-cmd-assumed-clock", ".txt");
	assert_int_equal(tl_test_run("'%s' convert '%s' --assume-clock mono -o '%s' 2>/dev/null",
	                             cli, FIXTURES "local.report.txt", ftrace),
	                 0);
	text = tl_test_read_file(ftrace, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, "clock=mono"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_slices_reads_trace_cmd_report),
	    cmocka_unit_test(test_slices_reads_trace_cmd_report_with_latency_columns),
	    cmocka_unit_test(test_slices_reads_trace_cmd_report_of_a_boot_clock_buffer),
	    cmocka_unit_test(
	        test_slices_reads_trace_cmd_report_of_a_boot_clock_buffer_with_latency_columns),
	    cmocka_unit_test(
	        test_slices_counts_the_kernel_events_of_trace_cmd_report_and_no_failure),
	    cmocka_unit_test(test_slices_names_threads_after_trace_cmd_tasks),
	    cmocka_unit_test(test_convert_of_trace_cmd_report_keeps_every_event),
	    cmocka_unit_test(test_convert_of_trace_cmd_report_says_its_clock_is_unknown),
	    cmocka_unit_test(test_convert_of_trace_cmd_report_takes_the_clock_assume_clock_names),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
