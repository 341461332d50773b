/* The ftrace text exporter, fed hand-built trace models. */
#include "support/test_support.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recorder/export/trace_model.h"

#ifndef TL_SOURCE_DIR
#define TL_SOURCE_DIR "."
#endif

#define PID 1000
#define MAIN 1001
#define WORKER 1002
#define SNAPSHOT_NS 10000000LL /* 10 ms */

/* Line prefixes as the exporter writes them for the named test threads. */
#define MAIN_AT "            main-1001  ( 1000) [000] .... "
#define WORKER_AT "          worker-1002  ( 1000) [000] .... "
#define MARK ": tracing_mark_write: "

#include "support/model_builder.h"

static output export_ftrace(builder *b)
{
	output out = {0};
	out.path = tl_test_path("export", ".txt");
	int fd = open(out.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(tl_export_ftrace(finish(b), fd, &out.counts), 0);
	assert_int_equal(close(fd), 0);
	out.text = tl_test_read_file(out.path, NULL);
	assert_non_null(out.text);
	return out;
}

static void check_ftrace(const output *out, const char *options)
{
	static int python = -1;
	if (python < 0)
		python = tl_test_run("python3 -c '' >/dev/null 2>&1") == 0;
	if (!python) {
		print_message("python3 not found: pattern check skipped\n");
		skip();
	}
	int rc = tl_test_run("python3 %s/tests/scripts/check_ftrace.py '%s' %s", TL_SOURCE_DIR,
	                     out->path, options);
	assert_int_equal(rc, 0);
}

/* The event lines: what follows the '#' header. */
static const char *body(const char *text)
{
	while (*text == '#') {
		const char *nl = strchr(text, '\n');
		if (!nl)
			return text + strlen(text);
		text = nl + 1;
	}
	return text;
}

static void assert_body(const output *out, const char *expected)
{
	const char *got = body(out->text);
	if (strcmp(got, expected) != 0)
		fail_msg("event lines differ\n--- expected ---\n%s--- got ---\n%s", expected, got);
}

/* Length of the payload that starts with start (up to the end of line). */
static size_t payload_len(const char *text, const char *start)
{
	char needle[64];
	snprintf(needle, sizeof needle, "%s%s", MARK, start);
	const char *payload = strstr(text, needle);
	assert_non_null(payload);
	payload += strlen(MARK);
	return (size_t)(strchr(payload, '\n') - payload);
}

static void set_int_arg(tl_model_event *e, const char *key, int64_t v)
{
	e->args[e->nargs].key = key;
	e->args[e->nargs].type = TL_ARG_INT;
	e->args[e->nargs].v.i = v;
	e->nargs++;
}

/* ---------------------------------------------------------------------------
 * Tests
 * ------------------------------------------------------------------------- */

static const char empty_trace[] =
    "# tracer: nop\n"
    "#\n"
    "# entries-in-buffer/entries-written: 0/0   #P:1\n"
    "#\n"
    "#                                      _-----=> irqs-off\n"
    "#                                     / _----=> need-resched\n"
    "#                                    | / _---=> hardirq/softirq\n"
    "#                                    || / _--=> preempt-depth\n"
    "#                                    ||| /     delay\n"
    "#           TASK-PID    TGID   CPU#  ||||   TIMESTAMP  FUNCTION\n"
    "#              | |        |      |   ||||      |         |\n"
    "# timeline: recorder=ring clock=boot snapshot_ns=%lld boottime_ns=%lld monotonic_ns=%lld "
    "realtime_ns=1700000000000000000 complete=1\n"
    "# timeline: events_written=42 events_overwritten=7 events_dropped=0 strings_truncated=0 "
    "args_dropped=0 blocks_torn=0 unmatched_begin=0 unmatched_end=0\n";

static void test_ftrace_empty_model_has_only_the_header(void **state)
{
	(void)state;
	builder *b = builder_new();
	output out = export_ftrace(b);

	char expected[sizeof empty_trace + 64];
	snprintf(expected, sizeof expected, empty_trace, (long long)SNAPSHOT_NS,
		 (long long)SNAPSHOT_NS, (long long)SNAPSHOT_NS - 5);
	assert_string_equal(out.text, expected);
	check_ftrace(&out, "--lines 0");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_header_carries_clock_and_stats(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 1000, "a"); /* never ended: closed at the snapshot */
	output out = export_ftrace(b);

	assert_non_null(strstr(out.text, "\n# timeline: recorder=ring clock=boot "));
	assert_non_null(strstr(out.text, " events_overwritten=7 "));
	assert_non_null(strstr(out.text, " unmatched_begin=1 unmatched_end=0\n"));
	check_ftrace(&out, "--lines 2");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_header_counts_entries(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 1000, "a");
	end(b, MAIN, 2000);
	add(b, MAIN, TL_PHASE_INSTANT, 3000, "i");
	output out = export_ftrace(b);

	assert_non_null(strstr(out.text, "\n# entries-in-buffer/entries-written: 3/3   #P:1\n"));
	check_ftrace(&out, "--lines 3");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_nested_slices_written_as_exact_lines(void **state)
{
	(void)state;
	builder *b = builder_new();
	name_thread(b, MAIN, "main");
	begin(b, MAIN, 1000000000, "outer");
	begin(b, MAIN, 1500000000, "inner");
	end(b, MAIN, 2000000000);
	end(b, MAIN, 2500000001);
	output out = export_ftrace(b);

	assert_body(&out, MAIN_AT "    1.000000" MARK "B|1000|outer\n" MAIN_AT "    1.500000" MARK
	                          "B|1000|inner\n" MAIN_AT "    2.000000" MARK "E|1000\n" MAIN_AT
	                          "    2.500000" MARK "E|1000\n");
	assert_int_equal(out.counts.unmatched_begin, 0);
	assert_int_equal(out.counts.unmatched_end, 0);
	check_ftrace(&out, "--count B=2 --count E=2");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_lines_match_perfetto_and_catapult_patterns(void **state)
{
	(void)state;
	builder *b = builder_new();
	name_thread(b, MAIN, "main");
	name_thread(b, WORKER, "pool worker-3");
	name_thread(b, 123456, "x");
	begin(b, MAIN, 1000, "outer");
	add(b, MAIN, TL_PHASE_COUNTER, 1500, "queue")->counter_i = 3;
	begin(b, MAIN, 2000, "inner");
	add(b, MAIN, TL_PHASE_INSTANT, 2500, "mark");
	add(b, MAIN, TL_PHASE_INSTANT, 2600, "all")->scope = TL_EVENT_SCOPE_GLOBAL;
	end(b, MAIN, 3000);
	add(b, MAIN, TL_PHASE_ASYNC_BEGIN, 3500, "load")->id = 5;
	end(b, MAIN, 4000);
	add(b, WORKER, TL_PHASE_ASYNC_INSTANT, 4200, "load step")->id = 5;
	add(b, WORKER, TL_PHASE_ASYNC_END, 4500, "load")->id = 5;
	complete(b, WORKER, 4600, 4900, "done");
	begin(b, 123456, 5000, "wide tid");
	begin(b, 1003, 5100, "unnamed thread, open at the snapshot");
	end(b, 123456, 6000);
	output out = export_ftrace(b);

	check_ftrace(&out, "--lines 16 --count B=5 --count E=5 --count C=1 --count I=1 "
	                   "--count N=2 --count S=1 --count F=1");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_wide_pid_still_matches_patterns(void **state)
{
	(void)state;
	builder *b = builder_new();
	b->model.pid = 4194304;
	begin(b, 4194305, 1000, "a");
	end(b, 4194305, 2000);
	output out = export_ftrace(b);

	assert_non_null(strstr(out.text, "           <...>-4194305 (4194304) [000] .... "));
	check_ftrace(&out, "--lines 2");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_unmatched_end_dropped_and_counted(void **state)
{
	(void)state;
	builder *b = builder_new();
	name_thread(b, MAIN, "main");
	end(b, MAIN, 1000);
	begin(b, MAIN, 2000, "kept");
	end(b, MAIN, 3000);
	output out = export_ftrace(b);

	assert_body(&out, MAIN_AT "    0.000002" MARK "B|1000|kept\n" MAIN_AT "    0.000003" MARK
	                          "E|1000\n");
	assert_int_equal(out.counts.unmatched_end, 1);
	assert_int_equal(out.counts.unmatched_begin, 0);
	check_ftrace(&out, "--lines 2");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_open_begin_closed_at_snapshot_and_counted(void **state)
{
	(void)state;
	builder *b = builder_new();
	name_thread(b, MAIN, "main");
	begin(b, MAIN, 1000000, "open");
	output out = export_ftrace(b);

	assert_body(&out, MAIN_AT "    0.001000" MARK "B|1000|open\n" MAIN_AT "    0.010000" MARK
	                          "E|1000\n");
	assert_int_equal(out.counts.unmatched_begin, 1);
	check_ftrace(&out, "--lines 2");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_complete_event_written_as_begin_and_end(void **state)
{
	(void)state;
	builder *b = builder_new();
	name_thread(b, MAIN, "main");
	begin(b, MAIN, 2000000, "child");
	end(b, MAIN, 3000000);
	complete(b, MAIN, 1000000, 5000000, "load"); /* recorded when it ended */
	output out = export_ftrace(b);

	assert_body(&out, MAIN_AT "    0.001000" MARK "B|1000|load\n" MAIN_AT "    0.002000" MARK
	                          "B|1000|child\n" MAIN_AT "    0.003000" MARK "E|1000\n" MAIN_AT
	                          "    0.005000" MARK "E|1000\n");
	check_ftrace(&out, "--lines 4");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_lines_sorted_by_timestamp_across_threads(void **state)
{
	(void)state;
	builder *b = builder_new();
	name_thread(b, MAIN, "main");
	name_thread(b, WORKER, "worker");
	begin(b, MAIN, 2000, "a");
	add(b, MAIN, TL_PHASE_INSTANT, 3000, "tick");
	end(b, MAIN, 4000);
	begin(b, WORKER, 1000, "b");
	end(b, WORKER, 3000);
	output out = export_ftrace(b);

	assert_body(&out, WORKER_AT "    0.000001" MARK "B|1000|b\n" MAIN_AT "    0.000002" MARK
	                            "B|1000|a\n" MAIN_AT "    0.000003" MARK
	                            "I|1000|tick\n" WORKER_AT "    0.000003" MARK "E|1000\n" MAIN_AT
	                            "    0.000004" MARK "E|1000\n");
	check_ftrace(&out, "--lines 5");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_many_threads_stay_balanced_and_sorted(void **state)
{
	(void)state;
	builder *b = builder_new();
	enum { THREADS = 30 };
	for (int round = 0; round < 4; round++) {
		for (uint32_t t = 0; t < THREADS; t++) {
			int64_t ts = 1000 * (round * THREADS + (int64_t)t);
			begin(b, 2000 + t, ts, "step");
			begin(b, 2000 + t, ts + 100, "sub");
			end(b, 2000 + t, ts + 200);
			end(b, 2000 + t, ts + 1500); /* overlaps the next thread's step */
		}
	}
	output out = export_ftrace(b);

	check_ftrace(&out, "--lines 480 --count B=240 --count E=240");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_counters_int_and_double_rounded(void **state)
{
	(void)state;
	builder *b = builder_new();
	name_thread(b, MAIN, "main");
	add(b, MAIN, TL_PHASE_COUNTER, 1000, "q")->counter_i = -7;
	static const double values[] = {2.5, -2.5, 0.49999999999999994, 1e30, -1e30, NAN};
	for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
		tl_model_event *e = add(b, MAIN, TL_PHASE_COUNTER, 2000 + (int64_t)i, "d");
		e->counter_is_double = 1;
		e->counter_d = values[i];
	}
	output out = export_ftrace(b);

	assert_body(&out, MAIN_AT "    0.000001" MARK "C|1000|q|-7\n" MAIN_AT "    0.000002" MARK
	                          "C|1000|d|3\n" MAIN_AT "    0.000002" MARK "C|1000|d|-3\n" MAIN_AT
	                          "    0.000002" MARK "C|1000|d|0\n" MAIN_AT "    0.000002" MARK
	                          "C|1000|d|9223372036854775807\n" MAIN_AT "    0.000002" MARK
	                          "C|1000|d|-9223372036854775808\n");
	check_ftrace(&out, "--count C=6");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_async_cookie_is_decimal_int64(void **state)
{
	(void)state;
	builder *b = builder_new();
	name_thread(b, MAIN, "main");
	add(b, MAIN, TL_PHASE_ASYNC_BEGIN, 1000, "dl")->id = 42;
	add(b, MAIN, TL_PHASE_ASYNC_END, 2000, "dl")->id = 42;
	add(b, MAIN, TL_PHASE_ASYNC_BEGIN, 3000, "big")->id = UINT64_MAX;
	output out = export_ftrace(b);

	assert_body(&out, MAIN_AT "    0.000001" MARK "S|1000|dl|42\n" MAIN_AT "    0.000002" MARK
	                          "F|1000|dl|42\n" MAIN_AT "    0.000003" MARK "S|1000|big|-1\n");
	check_ftrace(&out, "--count S=2 --count F=1");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_thread_instant_is_i_others_go_on_category_track(void **state)
{
	(void)state;
	builder *b = builder_new();
	name_thread(b, MAIN, "main");
	add(b, MAIN, TL_PHASE_INSTANT, 1000, "mark");
	add(b, MAIN, TL_PHASE_INSTANT, 2000, "proc")->scope = TL_EVENT_SCOPE_PROCESS;
	add(b, MAIN, TL_PHASE_INSTANT, 3000, "glob")->scope = TL_EVENT_SCOPE_GLOBAL;
	tl_model_event *e = add(b, MAIN, TL_PHASE_ASYNC_INSTANT, 4000, "step");
	e->cat = "net|io";
	e->id = 9;
	output out = export_ftrace(b);

	assert_body(&out,
	            MAIN_AT "    0.000001" MARK "I|1000|mark\n" MAIN_AT "    0.000002" MARK
	                    "N|1000|app|proc\n" MAIN_AT "    0.000003" MARK
	                    "N|1000|app|glob\n" MAIN_AT "    0.000004" MARK "N|1000|net io|step\n");
	check_ftrace(&out, "--count I=1 --count N=3");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_names_sanitised(void **state)
{
	(void)state;
	builder *b = builder_new();
	name_thread(b, MAIN, "main");
	begin(b, MAIN, 1000, "a|b\nc\r  ");
	begin(b, MAIN, 2000, "\t  ");
	begin(b, MAIN, 3000, "x\xff");
	begin(b, MAIN, 4000, "");
	output out = export_ftrace(b);

	assert_non_null(strstr(out.text, MARK "B|1000|a b c\n"));
	assert_non_null(strstr(out.text, "0.000002" MARK "B|1000|unnamed\n"));
	assert_non_null(strstr(out.text, MARK "B|1000|x\xef\xbf\xbd\n"));
	assert_non_null(strstr(out.text, "0.000004" MARK "B|1000|unnamed\n"));
	check_ftrace(&out, "--count B=4 --count E=4");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_payload_capped_at_1023_bytes_by_cutting_the_name(void **state)
{
	(void)state;
	builder *b = builder_new();
	char *longname = malloc(2001);
	char *euros = malloc(3 * 400 + 1);
	assert_non_null(longname);
	assert_non_null(euros);
	memset(longname, 'x', 2000);
	longname[2000] = '\0';
	for (int i = 0; i < 400; i++)
		memcpy(euros + 3 * i, "\xe2\x82\xac", 3);
	euros[3 * 400] = '\0';
	name_thread(b, MAIN, "main");
	begin(b, MAIN, 1000, longname);
	add(b, MAIN, TL_PHASE_COUNTER, 2000, longname)->counter_i = 123456;
	begin(b, MAIN, 3000, euros);
	output out = export_ftrace(b);

	assert_int_equal(payload_len(out.text, "B|1000|xxx"), 1023);
	assert_int_equal(payload_len(out.text, "C|1000|xxx"), 1023);
	assert_non_null(strstr(out.text, "xxx|123456\n"));
	/* 338 euro signs (1014 bytes) fit in 1016; a 339th would not. */
	assert_int_equal(payload_len(out.text, "B|1000|\xe2\x82\xac"), 7 + 3 * 338);
	check_ftrace(&out, "");
	free(out.text);
	free(longname);
	free(euros);
	builder_free(b);
}

static void test_ftrace_task_names_sanitised(void **state)
{
	(void)state;
	builder *b = builder_new();
	name_thread(b, 1001, "my thread");
	name_thread(b, 1002, "worker-12");
	name_thread(b, 1004, "a-b");
	name_thread(b, 1005, "averyveryverylongname");
	for (uint32_t tid = 1001; tid <= 1005; tid++)
		add(b, tid, TL_PHASE_INSTANT, 1000, "i");
	output out = export_ftrace(b);

	assert_non_null(strstr(out.text, "\n       my_thread-1001  ( 1000) [000] .... "));
	assert_non_null(strstr(out.text, "\n       worker_12-1002  ( 1000) [000] .... "));
	assert_non_null(strstr(out.text, "\n           <...>-1003  ( 1000) [000] .... "));
	assert_non_null(strstr(out.text, "\n             a-b-1004  ( 1000) [000] .... "));
	assert_non_null(strstr(out.text, "\naveryveryverylongname-1005  ( 1000) [000] .... "));
	check_ftrace(&out, "--lines 5");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_flows_and_args_left_out(void **state)
{
	(void)state;
	builder *b = builder_new();
	name_thread(b, MAIN, "main");
	tl_model_event *e = add(b, MAIN, TL_PHASE_BEGIN, 1000, "work");
	set_int_arg(e, "rows", 5);
	flow(b, MAIN, TL_PHASE_FLOW_BEGIN, 1500, "hop", 1, TL_EVENT_SCOPE_GLOBAL);
	end(b, MAIN, 2000);
	flow(b, WORKER, TL_PHASE_FLOW_END, 3000, "hop", 1, TL_EVENT_SCOPE_GLOBAL);
	output out = export_ftrace(b);

	assert_body(&out, MAIN_AT "    0.000001" MARK "B|1000|work\n" MAIN_AT "    0.000002" MARK
	                          "E|1000\n");
	check_ftrace(&out, "--lines 2");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_timestamp_is_seconds_and_truncated_microseconds(void **state)
{
	(void)state;
	builder *b = builder_new();
	name_thread(b, MAIN, "main");
	add(b, MAIN, TL_PHASE_INSTANT, 999, "a");
	add(b, MAIN, TL_PHASE_INSTANT, 1999, "b");
	add(b, MAIN, TL_PHASE_INSTANT, 123456789999LL, "c");
	add(b, MAIN, TL_PHASE_INSTANT, 100000000000000LL, "d");
	output out = export_ftrace(b);

	assert_body(&out, MAIN_AT "    0.000000" MARK "I|1000|a\n" MAIN_AT "    0.000001" MARK
	                          "I|1000|b\n" MAIN_AT "  123.456789" MARK "I|1000|c\n" MAIN_AT
	                          "100000.000000" MARK "I|1000|d\n");
	check_ftrace(&out, "--lines 4");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_negative_timestamp_written_as_zero(void **state)
{
	(void)state;
	builder *b = builder_new();
	name_thread(b, MAIN, "main");
	add(b, MAIN, TL_PHASE_INSTANT, -5, "early");
	output out = export_ftrace(b);

	assert_body(&out, MAIN_AT "    0.000000" MARK "I|1000|early\n");
	check_ftrace(&out, "--lines 1");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_zero_tid_written_as_pid(void **state)
{
	(void)state;
	builder *b = builder_new();
	add(b, 0, TL_PHASE_INSTANT, 1000, "who");
	output out = export_ftrace(b);

	assert_body(&out,
	            "           <...>-1000  ( 1000) [000] ....     0.000001" MARK "I|1000|who\n");
	check_ftrace(&out, "--lines 1");
	free(out.text);
	builder_free(b);
}

static void test_ftrace_write_error_returns_negative_errno(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 1000, "x");
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(tl_export_ftrace(finish(b), fd, NULL), -EBADF);
	close(fd);
	builder_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ftrace_empty_model_has_only_the_header),
	    cmocka_unit_test(test_ftrace_header_counts_entries),
	    cmocka_unit_test(test_ftrace_header_carries_clock_and_stats),
	    cmocka_unit_test(test_ftrace_nested_slices_written_as_exact_lines),
	    cmocka_unit_test(test_ftrace_lines_match_perfetto_and_catapult_patterns),
	    cmocka_unit_test(test_ftrace_wide_pid_still_matches_patterns),
	    cmocka_unit_test(test_ftrace_unmatched_end_dropped_and_counted),
	    cmocka_unit_test(test_ftrace_open_begin_closed_at_snapshot_and_counted),
	    cmocka_unit_test(test_ftrace_complete_event_written_as_begin_and_end),
	    cmocka_unit_test(test_ftrace_lines_sorted_by_timestamp_across_threads),
	    cmocka_unit_test(test_ftrace_many_threads_stay_balanced_and_sorted),
	    cmocka_unit_test(test_ftrace_counters_int_and_double_rounded),
	    cmocka_unit_test(test_ftrace_async_cookie_is_decimal_int64),
	    cmocka_unit_test(test_ftrace_thread_instant_is_i_others_go_on_category_track),
	    cmocka_unit_test(test_ftrace_names_sanitised),
	    cmocka_unit_test(test_ftrace_payload_capped_at_1023_bytes_by_cutting_the_name),
	    cmocka_unit_test(test_ftrace_task_names_sanitised),
	    cmocka_unit_test(test_ftrace_flows_and_args_left_out),
	    cmocka_unit_test(test_ftrace_timestamp_is_seconds_and_truncated_microseconds),
	    cmocka_unit_test(test_ftrace_negative_timestamp_written_as_zero),
	    cmocka_unit_test(test_ftrace_zero_tid_written_as_pid),
	    cmocka_unit_test(test_ftrace_write_error_returns_negative_errno),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
