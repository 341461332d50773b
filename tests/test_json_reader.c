/* The Chrome JSON reader (tools/readers/json_reader.h). */
#include "support/test_support.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/readers/json_reader.h"

static int read_json(const char *text, tl_json_trace *t, tl_read_error *err)
{
	return tl_json_read(text, strlen(text), t, err);
}

static void test_json_object_form_reads_events(void **state)
{
	(void)state;
	tl_json_trace t;
	assert_int_equal(read_json("{\"traceEvents\":[{\"ph\":\"B\",\"name\":\"a\",\"cat\":\"c\","
	                           "\"pid\":1,\"tid\":2,\"ts\":1.5}],\"other\":{\"x\":[1]}}",
	                           &t, NULL),
	                 0);
	assert_int_equal(t.nevents, 1);
	assert_int_equal(t.events[0].ph, 'B');
	assert_string_equal(t.events[0].name, "a");
	assert_string_equal(t.events[0].cat, "c");
	assert_int_equal(t.events[0].pid, 1);
	assert_int_equal(t.events[0].tid, 2);
	assert_int_equal(t.events[0].ts, 1500);
	tl_json_trace_free(&t);
}

static void test_json_truncated_bare_array_keeps_complete_events(void **state)
{
	(void)state;
	tl_json_trace t;
	assert_int_equal(
	    read_json("[{\"ph\":\"X\",\"ts\":1,\"dur\":2},\n{\"ph\":\"X\",\"ts\":", &t, NULL), 0);
	assert_int_equal(t.nevents, 1);
	assert_true(t.truncated);
	tl_json_trace_free(&t);
}

static void test_json_truncated_object_is_an_error(void **state)
{
	(void)state;
	tl_json_trace t;
	tl_read_error err = {0};
	assert_int_equal(read_json("{\"traceEvents\":[{\"ph\":\"X\"}", &t, &err), -EINVAL);
	assert_non_null(strstr(err.message, "incomplete"));
}

static void test_json_trailing_commas_and_empty_events(void **state)
{
	(void)state;
	tl_json_trace t;
	assert_int_equal(read_json("[{},{\"ph\":\"i\",\"args\":{\"a\":1,},},]", &t, NULL), 0);
	assert_int_equal(t.nevents, 1);
	assert_int_equal(t.empty_events, 1);
	assert_int_equal(t.events[0].nargs, 1);
	tl_json_trace_free(&t);
}

static void test_json_surrogate_escape_is_an_error_with_position(void **state)
{
	(void)state;
	tl_json_trace t;
	tl_read_error err = {0};
	assert_int_equal(read_json("[\n {\"name\":\"\\ud83d\\ude00\"}]", &t, &err), -EINVAL);
	assert_int_equal(err.line, 2);
	assert_int_equal(err.column, 11);
}

static void test_json_raw_control_character_is_an_error(void **state)
{
	(void)state;
	tl_json_trace t;
	tl_read_error err = {0};
	assert_int_equal(read_json("[{\"name\":\"a\x01\"}]", &t, &err), -EINVAL);
	assert_int_equal(err.line, 1);
}

/* Events in a large input: event k starts on line 2 + 2k, after an event
 * that spans two lines (a raw line feed inside a string, as Perfetto
 * accepts). *text is malloc'd; returns its length. */
#define DEEP_EVENTS 100000
static size_t deep_events_text(char **text, const char *tail)
{
	static const char event[] = "{\"ph\":\"i\",\"name\":\"a\nb\",\"ts\":1},\n";
	size_t cap = 2 + DEEP_EVENTS * (sizeof event - 1) + strlen(tail) + 1;
	char *s = malloc(cap);
	assert_non_null(s);
	size_t n = 0;
	memcpy(s, "[\n", 2);
	n += 2;
	for (size_t k = 0; k < DEEP_EVENTS; k++) {
		memcpy(s + n, event, sizeof event - 1);
		n += sizeof event - 1;
	}
	memcpy(s + n, tail, strlen(tail) + 1);
	*text = s;
	return n + strlen(tail);
}

static void test_json_event_lines_stay_exact_deep_in_a_large_input(void **state)
{
	(void)state;
	char *text;
	size_t len = deep_events_text(&text, "  {\"ph\":\"i\",\"ts\":2}]");
	tl_json_trace t;
	assert_int_equal(tl_json_read(text, len, &t, NULL), 0);
	assert_int_equal(t.nevents, DEEP_EVENTS + 1);
	for (size_t k = 0; k < DEEP_EVENTS; k++)
		assert_int_equal(t.events[k].line, 2 + 2 * k);
	assert_int_equal(t.events[DEEP_EVENTS].line, 2 + 2 * DEEP_EVENTS);
	tl_json_trace_free(&t);
	free(text);
}

static void test_json_error_deep_in_a_large_input_keeps_line_and_column(void **state)
{
	(void)state;
	char *text;
	size_t len = deep_events_text(&text, "  {\"name\":\"\\ud800\"}]");
	tl_json_trace t;
	tl_read_error err = {0};
	assert_int_equal(tl_json_read(text, len, &t, &err), -EINVAL);
	assert_int_equal(err.line, 2 + 2 * DEEP_EVENTS);
	assert_int_equal(err.column, 12);
	assert_non_null(strstr(err.message, "surrogate"));
	free(text);
}

static void test_json_timestamps_coerce_like_perfetto(void **state)
{
	(void)state;
	tl_json_value v = {.type = TL_JSON_DOUBLE, .d = 3764289.708};
	int64_t ns;
	assert_true(tl_json_coerce_ts(&v, &ns));
	assert_int_equal(ns, 3764289708);
	v = (tl_json_value){.type = TL_JSON_DOUBLE, .d = 1850244461563845.0};
	assert_true(tl_json_coerce_ts(&v, &ns));
	assert_int_equal(ns, 1850244461563845000);
	v = (tl_json_value){.type = TL_JSON_STRING, .s = "12.5"};
	assert_true(tl_json_coerce_ts(&v, &ns));
	assert_int_equal(ns, 12500);
	v = (tl_json_value){.type = TL_JSON_STRING, .s = "12x"};
	assert_false(tl_json_coerce_ts(&v, &ns));
}

static void test_json_pid_out_of_range_becomes_zero(void **state)
{
	(void)state;
	tl_json_trace t;
	assert_int_equal(read_json("[{\"ph\":\"i\",\"pid\":-1,\"tid\":4294967296},"
	                           "{\"ph\":\"i\",\"pid\":\"foo\"}]",
	                           &t, NULL),
	                 0);
	assert_int_equal(t.events[0].pid, 0);
	assert_int_equal(t.events[0].tid, 0);
	assert_string_equal(t.events[1].pid_name, "foo");
	tl_json_trace_free(&t);
}

static void test_json_args_are_flattened(void **state)
{
	(void)state;
	tl_json_trace t;
	assert_int_equal(
	    read_json("[{\"ph\":\"i\",\"args\":{\"a\":{\"b\":1,\"c\":[true,null]}}}]", &t, NULL),
	    0);
	assert_int_equal(t.events[0].nargs, 4);
	assert_int_equal(t.args[0].value.type, TL_JSON_OBJECT);
	assert_true(t.args[0].top_level);
	assert_string_equal(t.args[1].key, "a.b");
	assert_string_equal(t.args[2].key, "a.c[0]");
	assert_int_equal(t.args[3].value.type, TL_JSON_NULL);
	tl_json_trace_free(&t);
}

static void test_json_id2_and_only_first_phase_char(void **state)
{
	(void)state;
	tl_json_trace t;
	assert_int_equal(read_json("[{\"ph\":\"bXX\",\"id2\":{\"local\":\"0x1\"}}]", &t, NULL), 0);
	assert_int_equal(t.events[0].ph, 'b');
	assert_int_equal(t.events[0].id_scope, TL_JSON_ID_LOCAL);
	assert_string_equal(t.events[0].id.s, "0x1");
	tl_json_trace_free(&t);
}

static void test_json_system_trace_events_bad_line_fails(void **state)
{
	(void)state;
	tl_json_trace t;
	tl_read_error err = {0};
	assert_int_equal(read_json("{\"traceEvents\":[],\"systemTraceEvents\":"
	                           "\"  a-1 (1) [0] 1.0: print: B|1|x\\nbad\\n\"}",
	                           &t, &err),
	                 -EINVAL);
	assert_non_null(strstr(err.message, "systemTraceEvents"));
	assert_int_equal(
	    read_json("{\"systemTraceEvents\":\"  a-1 (1) [0] 1.0: print: B|1|x\\n\"}", &t, NULL),
	    0);
	assert_int_equal(t.system.nlines, 1);
	tl_json_trace_free(&t);
}

static void test_json_sniff(void **state)
{
	(void)state;
	assert_true(tl_json_sniff(" \n[ {\"a\"", 8));
	assert_true(tl_json_sniff("{\"traceEvents\"", 14));
	assert_false(tl_json_sniff("[]", 2));
	assert_false(tl_json_sniff("# tracer", 8));
}

static void test_json_arena_stores_a_repeated_short_string_once(void **state)
{
	(void)state;
	tl_str_arena arena = {0};
	const char *a = tl_str_arena_copy(&arena, "draw", 4);
	const char *b = tl_str_arena_copy(&arena, "drawX", 4);
	const char *other = tl_str_arena_copy(&arena, "layout", 6);
	assert_non_null(a);
	assert_ptr_equal(a, b);
	assert_string_equal(a, "draw");
	assert_string_equal(other, "layout");
	char long_text[100];
	memset(long_text, 'x', sizeof long_text);
	const char *l1 = tl_str_arena_copy(&arena, long_text, sizeof long_text);
	const char *l2 = tl_str_arena_copy(&arena, long_text, sizeof long_text);
	assert_ptr_not_equal(l1, l2); /* long strings are copied each time */
	assert_int_equal(strlen(l2), sizeof long_text);
	tl_str_arena_free(&arena);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_json_object_form_reads_events),
	    cmocka_unit_test(test_json_arena_stores_a_repeated_short_string_once),
	    cmocka_unit_test(test_json_truncated_bare_array_keeps_complete_events),
	    cmocka_unit_test(test_json_truncated_object_is_an_error),
	    cmocka_unit_test(test_json_trailing_commas_and_empty_events),
	    cmocka_unit_test(test_json_surrogate_escape_is_an_error_with_position),
	    cmocka_unit_test(test_json_raw_control_character_is_an_error),
	    cmocka_unit_test(test_json_event_lines_stay_exact_deep_in_a_large_input),
	    cmocka_unit_test(test_json_error_deep_in_a_large_input_keeps_line_and_column),
	    cmocka_unit_test(test_json_timestamps_coerce_like_perfetto),
	    cmocka_unit_test(test_json_pid_out_of_range_becomes_zero),
	    cmocka_unit_test(test_json_args_are_flattened),
	    cmocka_unit_test(test_json_id2_and_only_first_phase_char),
	    cmocka_unit_test(test_json_system_trace_events_bad_line_fails),
	    cmocka_unit_test(test_json_sniff),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
