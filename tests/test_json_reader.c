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

static void test_json_pid_or_tid_out_of_range_is_an_error_with_position(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "[{\"ph\":\"i\",\"pid\":-1}]",
	    "[{\"ph\":\"i\",\"tid\":4294967296}]",
	    "[{\"ph\":\"i\",\"tid\":18446744073709551617}]",
	    "[{\"ph\":\"i\",\"pid\":1e30}]",
	    "[{\"ph\":\"i\",\"pid\":1.5}]",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		tl_json_trace t;
		tl_read_error err = {0};
		assert_int_equal(read_json(bad[i], &t, &err), -EINVAL);
		assert_int_equal(err.line, 1);
		assert_int_equal(err.column, strchr(bad[i] + 10, ':') - bad[i] + 2);
		assert_non_null(strstr(err.message, "is not an integer from 0 to 4294967295"));
	}
}

static void test_json_pid_as_a_string_or_an_integral_float(void **state)
{
	(void)state;
	tl_json_trace t;
	assert_int_equal(read_json("[{\"ph\":\"i\",\"pid\":4294967295,\"tid\":7.0},"
	                           "{\"ph\":\"i\",\"pid\":\"foo\"}]",
	                           &t, NULL),
	                 0);
	assert_int_equal(t.events[0].pid, 4294967295u);
	assert_int_equal(t.events[0].tid, 7); /* as Perfetto truncates a float */
	assert_string_equal(t.events[1].pid_name, "foo");
	tl_json_trace_free(&t);
}

/* Reads text, which must fail with an error at line 1 whose message
 * contains want, at the column of the first byte of `at` in text. */
static void assert_error_at(const char *text, const char *at, const char *want)
{
	tl_json_trace t;
	tl_read_error err = {0};
	assert_int_equal(read_json(text, &t, &err), -EINVAL);
	if (!strstr(err.message, want))
		fail_msg("'%s' not in '%s'", want, err.message);
	assert_int_equal(err.line, 1);
	assert_int_equal(err.column, (size_t)(strstr(text, at) - text) + 1);
}

static void test_json_number_beyond_a_double_is_an_error_with_position(void **state)
{
	(void)state;
	/* as Perfetto's parser refuses it, wherever it is */
	assert_error_at("[{\"ph\":\"X\",\"ts\":1e400}]", "1e400", "number out of range '1e400'");
	assert_error_at("[{\"ph\":\"C\",\"ts\":1,\"args\":{\"v\":-1e999}}]", "-1e999",
	                "number out of range");
	assert_error_at("[{\"ph\":\"X\",\"other\":[2e308]}]", "2e308", "number out of range");
	/* too small for a double is 0, as there */
	tl_json_trace t;
	assert_int_equal(read_json("[{\"ph\":\"X\",\"ts\":1e-400}]", &t, NULL), 0);
	assert_true(t.events[0].has & TL_JSON_HAS_TS);
	assert_int_equal(t.events[0].ts, 0);
	tl_json_trace_free(&t);
}

static void test_json_time_beyond_64_bit_nanoseconds_is_an_error_with_position(void **state)
{
	(void)state;
	assert_error_at("[{\"ph\":\"X\",\"ts\":1e300}]", "1e300", "ts 1e300 is out of range");
	assert_error_at("[{\"ph\":\"X\",\"ts\":1,\"dur\":9223372036854776}]", "9223",
	                "dur 9223372036854776 is out of range");
	assert_error_at("[{\"ph\":\"B\",\"ts\":1,\"tts\":-1e17}]", "-1e17",
	                "tts -1e17 is out of range");
	assert_error_at("[{\"ph\":\"X\",\"ts\":1,\"tdur\":18446744073709551617}]", "1844",
	                "tdur 18446744073709551617 is out of range");
	/* the largest that fits */
	tl_json_trace t;
	assert_int_equal(read_json("[{\"ph\":\"X\",\"ts\":9223372036854775}]", &t, NULL), 0);
	assert_int_equal(t.events[0].ts, 9223372036854775000);
	tl_json_trace_free(&t);
}

/* A string is no number: one that gives no time leaves the event without
 * it (the importer counts it, as Perfetto skips the event). */
static void test_json_time_string_that_is_no_time_is_not_valid(void **state)
{
	(void)state;
	tl_json_trace t;
	assert_int_equal(read_json("[{\"ph\":\"X\",\"ts\":\"1e400\",\"dur\":\"soon\"}]", &t, NULL),
	                 0);
	assert_true(t.events[0].has & TL_JSON_BAD_TS);
	assert_false(t.events[0].has & (TL_JSON_HAS_TS | TL_JSON_HAS_DUR));
	tl_json_trace_free(&t);
}

static void test_json_metadata_clock_value_not_an_integer_is_an_error(void **state)
{
	(void)state;
	assert_error_at("{\"traceEvents\":[],\"metadata\":{\"boottime_ns\":1e30}}", "1e30",
	                "metadata boottime_ns 1e30 is not an integer of nanoseconds");
}

/* An integer beyond 64 bits in args is kept as the double it is, as
 * Perfetto keeps it. */
static void test_json_arg_integer_beyond_64_bits_is_a_double(void **state)
{
	(void)state;
	tl_json_trace t;
	assert_int_equal(
	    read_json("[{\"ph\":\"X\",\"args\":{\"n\":18446744073709551617}}]", &t, NULL), 0);
	assert_int_equal(t.args[0].value.type, TL_JSON_DOUBLE);
	assert_true(t.args[0].value.d == 18446744073709551616.0);
	tl_json_trace_free(&t);
}

/* [{"ph":"X","KEY":"<n bytes of 'a'>"}], malloc'd; *len its length. */
static char *event_with_name_of(size_t n, const char *key, size_t *len)
{
	size_t head = strlen("[{\"ph\":\"X\",\"\":\"") + strlen(key);
	char *text = malloc(head + n + 4);
	assert_non_null(text);
	int w = sprintf(text, "[{\"ph\":\"X\",\"%s\":\"", key);
	memset(text + w, 'a', n);
	memcpy(text + w + n, "\"}]", 4);
	*len = (size_t)w + n + 3;
	return text;
}

/* The reading stops at the limit: a string is not read, nor copied, past
 * it (the raw control character after the limit is never reached). */
static void test_json_event_larger_than_the_limit_is_an_error_at_its_line(void **state)
{
	(void)state;
	size_t len;
	char *text = event_with_name_of(TL_JSON_EVENT_MAX + 16, "name", &len);
	text[len - 4] = '\x01';
	tl_json_trace t;
	tl_read_error err = {0};
	assert_int_equal(tl_json_read(text, len, &t, &err), -EINVAL);
	assert_int_equal(err.line, 1);
	assert_int_equal(err.column, 2); /* the event's '{' */
	assert_non_null(strstr(err.message, "event larger than 64 MiB"));
	free(text);
	/* just under it, it is read */
	text = event_with_name_of(TL_JSON_EVENT_MAX - 64, "name", &len);
	assert_int_equal(tl_json_read(text, len, &t, NULL), 0);
	assert_int_equal(strlen(t.events[0].name), TL_JSON_EVENT_MAX - 64);
	tl_json_trace_free(&t);
	free(text);
}

/* Blanks count: an event is its bytes, whatever they hold. */
static void test_json_event_padded_past_the_limit_is_an_error(void **state)
{
	(void)state;
	size_t n = TL_JSON_EVENT_MAX;
	char *text = malloc(n + 64);
	assert_non_null(text);
	int w = sprintf(text, "[{\"ph\":\"X\",\"ts\":1");
	memset(text + w, ' ', n);
	int end = sprintf(text + w + n, "}]");
	tl_json_trace t;
	tl_read_error err = {0};
	assert_int_equal(tl_json_read(text, (size_t)w + n + (size_t)end, &t, &err), -EINVAL);
	assert_non_null(strstr(err.message, "event larger than 64 MiB"));
	assert_int_equal(err.column, 2);
	free(text);
}

/* {"traceEvents":[],"metadata":{"clock":"# <n bytes of 'a'>\n"}} with KEY
 * for "metadata":{"clock" (the string's quote at *at), malloc'd; *len its
 * length. */
static char *string_outside_the_events(size_t n, const char *key, size_t *len, size_t *at)
{
	char *text = malloc(n + 128);
	assert_non_null(text);
	int w = sprintf(text, "{\"traceEvents\":[],%s:\"# ", key);
	*at = (size_t)w - 3;
	memset(text + w, 'a', n);
	int end = sprintf(text + w + n, "\\n\"%s}", strchr(key, '{') ? "}" : "");
	*len = (size_t)w + n + (size_t)end;
	return text;
}

/* A string read outside the events (a key, the clock's name) stops at the
 * limit, but for systemTraceEvents, the text of a whole trace. */
static void test_json_string_outside_the_events_past_the_limit_is_an_error(void **state)
{
	(void)state;
	size_t len, at;
	char *text =
	    string_outside_the_events(TL_JSON_EVENT_MAX, "\"metadata\":{\"clock\"", &len, &at);
	tl_json_trace t;
	tl_read_error err = {0};
	assert_int_equal(tl_json_read(text, len, &t, &err), -EINVAL);
	assert_string_equal(err.message, "string longer than 64 MiB");
	assert_int_equal(err.column, at + 1);
	free(text);
	text = string_outside_the_events(TL_JSON_EVENT_MAX, "\"systemTraceEvents\"", &len, &at);
	assert_int_equal(tl_json_read(text, len, &t, &err), 0);
	assert_true(t.has_system_text);
	tl_json_trace_free(&t);
	free(text);
}

/* Outside the events, the value of a key no field reads is passed over,
 * whatever its size. */
static void test_json_value_no_field_reads_may_be_larger_than_the_limit(void **state)
{
	(void)state;
	size_t n = TL_JSON_EVENT_MAX + 1024;
	char *text = malloc(n + 64);
	assert_non_null(text);
	int w = sprintf(text, "{\"traceEvents\":[{\"ph\":\"X\"}],\"junk\":\"");
	memset(text + w, 'a', n);
	memcpy(text + w + n, "\"}", 3);
	tl_json_trace t;
	assert_int_equal(tl_json_read(text, (size_t)w + n + 2, &t, NULL), 0);
	assert_int_equal(t.nevents, 1);
	tl_json_trace_free(&t);
	free(text);
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
	    cmocka_unit_test(test_json_pid_or_tid_out_of_range_is_an_error_with_position),
	    cmocka_unit_test(test_json_pid_as_a_string_or_an_integral_float),
	    cmocka_unit_test(test_json_number_beyond_a_double_is_an_error_with_position),
	    cmocka_unit_test(test_json_time_beyond_64_bit_nanoseconds_is_an_error_with_position),
	    cmocka_unit_test(test_json_time_string_that_is_no_time_is_not_valid),
	    cmocka_unit_test(test_json_metadata_clock_value_not_an_integer_is_an_error),
	    cmocka_unit_test(test_json_arg_integer_beyond_64_bits_is_a_double),
	    cmocka_unit_test(test_json_event_larger_than_the_limit_is_an_error_at_its_line),
	    cmocka_unit_test(test_json_event_padded_past_the_limit_is_an_error),
	    cmocka_unit_test(test_json_value_no_field_reads_may_be_larger_than_the_limit),
	    cmocka_unit_test(test_json_string_outside_the_events_past_the_limit_is_an_error),
	    cmocka_unit_test(test_json_args_are_flattened),
	    cmocka_unit_test(test_json_id2_and_only_first_phase_char),
	    cmocka_unit_test(test_json_system_trace_events_bad_line_fails),
	    cmocka_unit_test(test_json_sniff),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
