/* The ftrace / systrace text reader (tools/readers/ftrace_text.h). */
#include "support/test_support.h"

#include <errno.h>
#include <string.h>

#include "tools/readers/ftrace_text.h"

static int tokenize(const char *line, tl_ftrace_line *out)
{
	memset(out, 0, sizeof *out);
	return tl_ftrace_line_tokenize(line, strlen(line), out);
}

static int view_is(tl_str_view v, const char *s)
{
	return v.len == strlen(s) && memcmp(v.ptr, s, v.len) == 0;
}

static void test_ftrace_line_with_tgid_and_flags(void **state)
{
	(void)state;
	tl_ftrace_line l;
	assert_int_equal(tokenize("           myapp-1000  ( 1000) [002] d..2   100.000001: "
	                          "tracing_mark_write: B|1000|main:outer  ",
	                          &l),
	                 0);
	assert_int_equal(l.tid, 1000);
	assert_int_equal(l.tgid, 1000);
	assert_int_equal(l.cpu, 2);
	assert_int_equal(l.ts_ns, 100000001000);
	assert_true(view_is(l.task, "myapp"));
	assert_true(view_is(l.event, "tracing_mark_write"));
	assert_true(view_is(l.text, "B|1000|main:outer"));
	assert_int_equal(l.kind, TL_FTRACE_LINE_MARKER);
}

static void test_ftrace_task_name_with_dash_digits(void **state)
{
	(void)state;
	tl_ftrace_line l;
	assert_int_equal(tokenize("task-1234-567    ( 567) [000] ....   1.0: print: x", &l), 0);
	assert_int_equal(l.tid, 567);
	assert_true(view_is(l.task, "task-1234"));
}

static void test_ftrace_flags_glued_to_timestamp_eat_a_digit(void **state)
{
	(void)state;
	tl_ftrace_line l;
	assert_int_equal(
	    tokenize("k-77 (   77) [004] ....316.196720: tracing_mark_write: B|77|x", &l), 0);
	assert_int_equal(l.ts_ns, 16196720000);
}

static void test_ftrace_two_spaces_before_cpu_fail(void **state)
{
	(void)state;
	tl_ftrace_line l;
	assert_int_equal(tokenize("a-1 (  1)  [000] .... 1.0: print: x", &l), -EINVAL);
}

static void test_ftrace_timestamp_needs_a_dot(void **state)
{
	(void)state;
	tl_ftrace_line l;
	assert_int_equal(tokenize("a-1 (  1) [000] .... 12345: print: x", &l), -EINVAL);
}

static void test_ftrace_timestamp_truncates(void **state)
{
	(void)state;
	tl_ftrace_line l;
	assert_int_equal(tokenize("a-1 [000] 4213.033672: tracing_mark_write: E|1", &l), 0);
	assert_int_equal(l.ts_ns, 4213033671999);
	assert_int_equal(l.tgid, 0);
}

static void test_ftrace_other_events_are_kept_apart(void **state)
{
	(void)state;
	tl_ftrace_line l;
	assert_int_equal(tokenize("a-1 [000] 1.5: sched_switch: prev_comm=a", &l), 0);
	assert_int_equal(l.kind, TL_FTRACE_LINE_OTHER);
	assert_true(view_is(l.text, "prev_comm=a"));
}

static void test_ftrace_print_event_drops_the_tracing_mark_write_prefix(void **state)
{
	(void)state;
	tl_ftrace_line l;
	assert_int_equal(tokenize("a-1 [000] 1.5: print:   tracing_mark_write: B|1|x", &l), 0);
	assert_int_equal(l.kind, TL_FTRACE_LINE_MARKER);
	assert_true(view_is(l.text, "B|1|x"));
	assert_int_equal(tokenize("a-1 [000] 1.5: print: B|1|y", &l), 0);
	assert_true(view_is(l.text, "B|1|y"));
	/* only the print event's: the kernel's own line keeps its text */
	assert_int_equal(tokenize("a-1 [000] 1.5: tracing_mark_write: tracing_mark_write: x", &l),
	                 0);
	assert_true(view_is(l.text, "tracing_mark_write: x"));
}

static int tokenize_trace_cmd(const char *line, tl_ftrace_line *out)
{
	memset(out, 0, sizeof *out);
	return tl_ftrace_line_tokenize_trace_cmd(line, strlen(line), out);
}

static void test_trace_cmd_default_layout(void **state)
{
	(void)state;
	tl_ftrace_line l;
	assert_int_equal(
	    tokenize_trace_cmd("        tcm-main-24439 [001]  9445.708925: print:      "
	                       "          tracing_mark_write: B|24439|frame",
	                       &l),
	    0);
	assert_int_equal(l.tid, 24439);
	assert_int_equal(l.tgid, 0);
	assert_int_equal(l.cpu, 1);
	assert_int_equal(l.ts_ns, 9445708925000);
	assert_true(view_is(l.task, "tcm-main"));
	assert_true(view_is(l.event, "print"));
	assert_true(view_is(l.text, "B|24439|frame"));
	assert_int_equal(l.kind, TL_FTRACE_LINE_MARKER);
}

static void test_trace_cmd_raw_clock_value_is_nanoseconds(void **state)
{
	(void)state;
	tl_ftrace_line l;
	assert_int_equal(tokenize_trace_cmd("        tcm-main-5676  [001]9617778041067: print:     "
	                                    "           tracing_mark_write: B|5676|frame",
	                                    &l),
	                 0);
	assert_int_equal(l.cpu, 1);
	assert_int_equal(l.ts_ns, 9617778041067);
	assert_true(view_is(l.text, "B|5676|frame"));
	/* outside trace-cmd's output a timestamp still needs its dot */
	assert_int_equal(tokenize("        tcm-main-5676  [001]9617778041067: print: B|5676|x", &l),
	                 -EINVAL);
}

static void test_trace_cmd_latency_layout(void **state)
{
	(void)state;
	tl_ftrace_line l;
	assert_int_equal(
	    tokenize_trace_cmd("tcm-main-24439   0...1.  9445.708925: print:           "
	                       "     tracing_mark_write: C|24439|queue|3",
	                       &l),
	    0);
	assert_int_equal(l.tid, 24439);
	assert_int_equal(l.cpu, 0);
	assert_int_equal(l.ts_ns, 9445708925000);
	assert_true(view_is(l.task, "tcm-main"));
	assert_true(view_is(l.text, "C|24439|queue|3"));
	assert_int_equal(
	    tokenize_trace_cmd("   ctest-15473  12d..2.9617777304341: sched_switch: x", &l), 0);
	assert_int_equal(l.tid, 15473);
	assert_int_equal(l.cpu, 12);
	assert_int_equal(l.ts_ns, 9617777304341);
	assert_int_equal(l.kind, TL_FTRACE_LINE_OTHER);
}

static void test_trace_cmd_instance_name_is_not_the_task(void **state)
{
	(void)state;
	tl_ftrace_line l;
	assert_int_equal(tokenize_trace_cmd("tcm:      kworker/u8:3-8293  [001]  9445.712510: "
	                                    "sched_switch: x",
	                                    &l),
	                 0);
	assert_true(view_is(l.task, "kworker/u8:3"));
	assert_int_equal(tokenize_trace_cmd("tcm: tcm-main-5676    1...1.9617778041067: print: "
	                                    "tracing_mark_write: B|5676|frame",
	                                    &l),
	                 0);
	assert_true(view_is(l.task, "tcm-main"));
	assert_int_equal(l.ts_ns, 9617778041067);
}

static void test_ftrace_sniff(void **state)
{
	(void)state;
	static const char *const yes[] = {"# tracer: nop\n", "  a-1 [0] 1.0: print: x\n",
	                                  "cpus=4\n", "junk\nTRACE:\nx", "<html>"};
	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
		assert_true(tl_ftrace_text_sniff(yes[i], strlen(yes[i])));
	const char *no = "a-1 [0] 1.0: print: x\n";
	assert_false(tl_ftrace_text_sniff(no, strlen(no)));
}

static void test_ftrace_file_skips_headers_and_counts_failures(void **state)
{
	(void)state;
	const char text[] = "garbage before\nTRACE:\ncpus=2\n# comment\n\n"
	                    "  a-1 (1) [0] 1.0: print: B|1|x\n"
	                    "not a line\n"
	                    "  a-1 (1) [0] 2.0: print: E|1\n"
	                    "  a-1 (1) [0] 3.0: print: B|1|unterminated";
	tl_ftrace_text t;
	assert_int_equal(tl_ftrace_text_read(text, sizeof text - 1, 0, &t, NULL), 0);
	assert_int_equal(t.nlines, 2);
	assert_int_equal(t.lines[0].line_no, 6);
	assert_int_equal(t.parse_failures, 1);
	assert_int_equal(t.first_failure_line, 7);
	assert_int_equal(t.unterminated, 1);
	tl_ftrace_text_free(&t);
}

/* The last line, without '\n', is not read (as Perfetto does not): counted
 * with its number, for the warning. */
static void test_ftrace_unterminated_last_line_is_counted_with_its_number(void **state)
{
	(void)state;
	const char text[] = "# tracer: nop\n"
	                    "  a-1 (1) [0] 1.0: print: B|1|x\n"
	                    "\n"
	                    "  a-1 (1) [0] 2.0: print: E|1";
	tl_ftrace_text t;
	assert_int_equal(tl_ftrace_text_read(text, sizeof text - 1, 0, &t, NULL), 0);
	assert_int_equal(t.nlines, 1);
	assert_int_equal(t.unterminated, 1);
	assert_int_equal(t.unterminated_line, 4);
	tl_ftrace_text_free(&t);
}

/* Blanks, a comment, or the HTML after the trace data, left without '\n',
 * are nothing any reading would keep: not counted. */
static void test_ftrace_unterminated_blanks_comment_or_html_are_not_counted(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		size_t nlines;
	} cases[] = {
	    {"# tracer: nop\n  a-1 (1) [0] 1.0: print: B|1|x\n  \t ", 1},
	    {"# tracer: nop\n  a-1 (1) [0] 1.0: print: B|1|x\n# the end", 1},
	    {"<!doctype html>\n<html>\n<script class=\"trace-data\" type=\"application/text\">\n"
	     "{}\n</script>\n</html>",
	     0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tl_ftrace_text t;
		const char *text = cases[i].text;
		assert_int_equal(tl_ftrace_text_read(text, strlen(text), 0, &t, NULL), 0);
		assert_int_equal(t.nlines, cases[i].nlines);
		assert_int_equal(t.unterminated, 0);
		assert_int_equal(t.unterminated_line, 0);
		tl_ftrace_text_free(&t);
	}
}

static void test_ftrace_file_keeps_the_first_failing_line(void **state)
{
	(void)state;
	const char text[] = "# tracer: nop\n"
	                    "  a-1 (1) [0] 1.0: print: B|1|x\n"
	                    "first bad line\n"
	                    "second bad line\n";
	tl_ftrace_text t;
	assert_int_equal(tl_ftrace_text_read(text, sizeof text - 1, 0, &t, NULL), 0);
	assert_int_equal(t.parse_failures, 2);
	assert_int_equal(t.first_failure_line, 3);
	assert_string_equal(t.first_failure_text, "first bad line");
	tl_ftrace_text_free(&t);
}

static void test_trace_cmd_report_after_its_cpus_line(void **state)
{
	(void)state;
	const char text[] = "cpus=2\n"
	                    "CPU 0 is empty\n"
	                    "    a-7     [001]123456789: print:   tracing_mark_write: B|7|x\n"
	                    "a-7     1...1.  0.500000: print:   tracing_mark_write: E|7\n";
	tl_ftrace_text t;
	assert_int_equal(tl_ftrace_text_read(text, sizeof text - 1, 0, &t, NULL), 0);
	assert_true(t.trace_cmd);
	assert_int_equal(t.parse_failures, 0);
	assert_int_equal(t.nlines, 2);
	assert_int_equal(t.lines[0].ts_ns, 123456789);
	assert_int_equal(t.lines[1].ts_ns, 500000000);
	tl_ftrace_text_free(&t);

	/* without it, the same lines are not read (Perfetto's rules) */
	assert_int_equal(tl_ftrace_text_read(text + 7, sizeof text - 1 - 7, 0, &t, NULL), 0);
	assert_false(t.trace_cmd);
	assert_int_equal(t.parse_failures, 3);
	tl_ftrace_text_free(&t);
}

static void test_ftrace_clock_from_the_timeline_comment(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		tl_trace_clock clock;
	} cases[] = {
	    {"# tracer: nop\n# timeline: recorder=tracefs clock=boot instance=x\n",
	     TL_TRACE_CLOCK_BOOT},
	    {"# tracer: nop\n# timeline: recorder=ring clock=mono snapshot_ns=1\n",
	     TL_TRACE_CLOCK_MONO},
	    {"# tracer: nop\n# timeline: recorder=import clock=unknown\n", TL_TRACE_CLOCK_UNKNOWN},
	    {"# tracer: nop\n# clock=boot\n", TL_TRACE_CLOCK_UNKNOWN},
	    {"cpus=2\n", TL_TRACE_CLOCK_UNKNOWN},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tl_ftrace_text t;
		assert_int_equal(
		    tl_ftrace_text_read(cases[i].text, strlen(cases[i].text), 0, &t, NULL), 0);
		assert_int_equal(t.clock, cases[i].clock);
		tl_ftrace_text_free(&t);
	}
}

/* The ftrace exporter's "# timeline:" line gives the three clocks at one
 * instant; all three or none. */
static void test_ftrace_clock_values_from_the_timeline_comment(void **state)
{
	(void)state;
	const char text[] = "# tracer: nop\n"
	                    "# timeline: recorder=ring clock=boot snapshot_ns=9 boottime_ns=2000 "
	                    "monotonic_ns=1500 realtime_ns=1700000000000000000 complete=1\n";
	tl_ftrace_text t;
	assert_int_equal(tl_ftrace_text_read(text, sizeof text - 1, 0, &t, NULL), 0);
	assert_true(t.clock_values.known);
	assert_int_equal(t.clock_values.boottime_ns, 2000);
	assert_int_equal(t.clock_values.monotonic_ns, 1500);
	assert_int_equal(t.clock_values.realtime_ns, 1700000000000000000);
	tl_ftrace_text_free(&t);

	const char zeros[] =
	    "# tracer: nop\n"
	    "# timeline: recorder=import clock=unknown snapshot_ns=9 boottime_ns=0 "
	    "monotonic_ns=0 realtime_ns=0 complete=1\n";
	assert_int_equal(tl_ftrace_text_read(zeros, sizeof zeros - 1, 0, &t, NULL), 0);
	assert_false(t.clock_values.known);
	assert_int_equal(t.clock_values.boottime_ns, 0);
	tl_ftrace_text_free(&t);
}

static void test_ftrace_strict_mode_reports_the_line(void **state)
{
	(void)state;
	const char text[] = "  a-1 (1) [0] 1.0: print: B|1|x\nbad\n";
	tl_ftrace_text t;
	tl_read_error err = {0};
	assert_int_equal(tl_ftrace_text_read(text, sizeof text - 1, TL_FTRACE_STRICT, &t, &err),
	                 -EINVAL);
	assert_int_equal(err.line, 2);
}

static void test_ftrace_html_trace_data_block(void **state)
{
	(void)state;
	const char text[] = "<!DOCTYPE html>\n<html>\n"
	                    "<script class=\"trace-data\" type=\"application/text\">\n"
	                    "# tracer: nop\n#           TASK-PID    TGID   CPU#\n"
	                    "  a-1 (1) [0] 1.0: print: B|1|x\n"
	                    "</script>\n  a-1 (1) [0] 2.0: print: E|1\n";
	tl_ftrace_text t;
	assert_int_equal(tl_ftrace_text_read(text, sizeof text - 1, 0, &t, NULL), 0);
	assert_int_equal(t.nlines, 1);
	assert_true(t.html);
	tl_ftrace_text_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ftrace_line_with_tgid_and_flags),
	    cmocka_unit_test(test_ftrace_task_name_with_dash_digits),
	    cmocka_unit_test(test_ftrace_flags_glued_to_timestamp_eat_a_digit),
	    cmocka_unit_test(test_ftrace_two_spaces_before_cpu_fail),
	    cmocka_unit_test(test_ftrace_timestamp_needs_a_dot),
	    cmocka_unit_test(test_ftrace_timestamp_truncates),
	    cmocka_unit_test(test_ftrace_other_events_are_kept_apart),
	    cmocka_unit_test(test_ftrace_print_event_drops_the_tracing_mark_write_prefix),
	    cmocka_unit_test(test_trace_cmd_default_layout),
	    cmocka_unit_test(test_trace_cmd_raw_clock_value_is_nanoseconds),
	    cmocka_unit_test(test_trace_cmd_latency_layout),
	    cmocka_unit_test(test_trace_cmd_instance_name_is_not_the_task),
	    cmocka_unit_test(test_ftrace_sniff),
	    cmocka_unit_test(test_ftrace_file_skips_headers_and_counts_failures),
	    cmocka_unit_test(test_ftrace_unterminated_last_line_is_counted_with_its_number),
	    cmocka_unit_test(test_ftrace_unterminated_blanks_comment_or_html_are_not_counted),
	    cmocka_unit_test(test_ftrace_file_keeps_the_first_failing_line),
	    cmocka_unit_test(test_trace_cmd_report_after_its_cpus_line),
	    cmocka_unit_test(test_ftrace_clock_from_the_timeline_comment),
	    cmocka_unit_test(test_ftrace_clock_values_from_the_timeline_comment),
	    cmocka_unit_test(test_ftrace_strict_mode_reports_the_line),
	    cmocka_unit_test(test_ftrace_html_trace_data_block),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
