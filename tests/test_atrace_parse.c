/* The trace_marker payload parser (tools/readers/atrace_parse.h). */
#include "support/test_support.h"

#include <string.h>

#include "recorder/atrace_format.h"
#include "tools/readers/atrace_parse.h"

static tl_atrace_result parse(const char *payload, tl_atrace_point *p)
{
	return tl_atrace_parse(payload, strlen(payload), p);
}

static int view_is(tl_str_view v, const char *s)
{
	return v.len == strlen(s) && memcmp(v.ptr, s, v.len) == 0;
}

static void test_atrace_begin_name_keeps_pipes(void **state)
{
	(void)state;
	tl_atrace_point p;
	assert_int_equal(parse("B|42|a|b|c", &p), TL_ATRACE_OK);
	assert_int_equal(p.phase, 'B');
	assert_int_equal(p.tgid, 42);
	assert_true(view_is(p.name, "a|b|c"));
}

static void test_atrace_begin_empty_name_gets_placeholder(void **state)
{
	(void)state;
	tl_atrace_point p;
	assert_int_equal(parse("B|42|\n", &p), TL_ATRACE_OK);
	assert_true(view_is(p.name, TL_ATRACE_EMPTY_SLICE_NAME));
}

static void test_atrace_begin_needs_tgid(void **state)
{
	(void)state;
	tl_atrace_point p;
	assert_int_equal(parse("B||x", &p), TL_ATRACE_FAIL);
	assert_int_equal(parse("B|4x|x", &p), TL_ATRACE_FAIL);
}

static void test_atrace_phase_is_first_character(void **state)
{
	(void)state;
	tl_atrace_point p;
	assert_int_equal(parse("Begin|1|x", &p), TL_ATRACE_OK);
	assert_int_equal(p.phase, 'B');
	assert_int_equal(parse(" B|1|x", &p), TL_ATRACE_FAIL);
}

static void test_atrace_end_without_tgid_is_ok(void **state)
{
	(void)state;
	tl_atrace_point p;
	assert_int_equal(parse("E", &p), TL_ATRACE_OK);
	assert_int_equal(p.tgid, 0);
	assert_int_equal(parse("E|garbage", &p), TL_ATRACE_OK);
	assert_int_equal(parse("E|42\n", &p), TL_ATRACE_OK);
	assert_int_equal(p.tgid, 42);
}

static void test_atrace_only_newlines_and_nuls_are_stripped(void **state)
{
	(void)state;
	tl_atrace_point p;
	assert_int_equal(tl_atrace_parse("C|1|x|12\n\0\n", 11, &p), TL_ATRACE_OK);
	assert_int_equal(p.value, 12);
	assert_int_equal(parse("C|1|x|12 ", &p), TL_ATRACE_FAIL);
	assert_int_equal(parse("C|1|x|12\r", &p), TL_ATRACE_FAIL);
}

static void test_atrace_counter_needs_whole_int64(void **state)
{
	(void)state;
	tl_atrace_point p;
	assert_int_equal(parse("C|1|x|1.5", &p), TL_ATRACE_FAIL);
	assert_int_equal(parse("C|1|x|0x10", &p), TL_ATRACE_FAIL);
	assert_int_equal(parse("C|1|x|", &p), TL_ATRACE_FAIL);
	assert_int_equal(parse("C|1|x| -7|cat", &p), TL_ATRACE_OK);
	assert_int_equal(p.value, -7);
	assert_int_equal(parse("C|1|x|99999999999999999999", &p), TL_ATRACE_OK);
	assert_int_equal(p.value, INT64_MAX);
}

static void test_atrace_tgid_wraps_like_strtoul(void **state)
{
	(void)state;
	tl_atrace_point p;
	assert_int_equal(parse("B|-1|x", &p), TL_ATRACE_OK);
	assert_int_equal(p.tgid, 4294967295u);
}

static void test_atrace_async_needs_cookie(void **state)
{
	(void)state;
	tl_atrace_point p;
	assert_int_equal(parse("S|1|a|b|5", &p), TL_ATRACE_FAIL);
	assert_int_equal(parse("F|1|a|5|extra", &p), TL_ATRACE_OK);
	assert_int_equal(p.cookie, 5);
}

static void test_atrace_instant_reads_one_field(void **state)
{
	(void)state;
	tl_atrace_point p;
	assert_int_equal(parse("I|1|a|b", &p), TL_ATRACE_OK);
	assert_true(view_is(p.name, "a"));
}

static void test_atrace_track_end_uses_fourth_field_when_present(void **state)
{
	(void)state;
	tl_atrace_point p;
	assert_int_equal(parse("H|1|t|9", &p), TL_ATRACE_OK);
	assert_int_equal(p.cookie, 9);
	assert_int_equal(parse("H|1|t|name|8", &p), TL_ATRACE_OK);
	assert_int_equal(p.cookie, 8);
	assert_int_equal(parse("H|1|t|name|", &p), TL_ATRACE_FAIL);
}

static void test_atrace_interim_letters_fail(void **state)
{
	(void)state;
	tl_atrace_point p;
	assert_int_equal(parse("T|1|t|n|1", &p), TL_ATRACE_FAIL);
	assert_int_equal(parse("U|1|t|1", &p), TL_ATRACE_FAIL);
}

static void test_atrace_clock_sync_is_unsupported(void **state)
{
	(void)state;
	tl_atrace_point p;
	assert_int_equal(parse("trace_event_clock_sync: parent_ts=1.0", &p), TL_ATRACE_UNSUPPORTED);
}

static tl_clock_sync_kind clock_sync(const char *payload, int64_t *ns)
{
	return tl_atrace_parse_clock_sync(payload, strlen(payload), ns);
}

static void test_clock_sync_parent_ts_is_read_to_the_nanosecond(void **state)
{
	(void)state;
	int64_t ns = 0;
	assert_int_equal(clock_sync("trace_event_clock_sync: parent_ts=4492.069824\n", &ns),
	                 TL_CLOCK_SYNC_PARENT_TS);
	assert_int_equal(ns, 4492069824000);
	assert_int_equal(clock_sync("trace_event_clock_sync: parent_ts=1.1234567891", &ns),
	                 TL_CLOCK_SYNC_PARENT_TS);
	assert_int_equal(ns, 1123456789); /* past the ninth decimal: dropped */
	/* catapult's (\d+\.?\d*): no decimals, or a bare dot */
	assert_int_equal(clock_sync("trace_event_clock_sync: parent_ts=19581", &ns),
	                 TL_CLOCK_SYNC_PARENT_TS);
	assert_int_equal(ns, 19581000000000);
	assert_int_equal(clock_sync("trace_event_clock_sync: parent_ts=7.", &ns),
	                 TL_CLOCK_SYNC_PARENT_TS);
	assert_int_equal(ns, 7000000000);
	/* what follows the number is ignored, as catapult ignores it */
	assert_int_equal(clock_sync("trace_event_clock_sync:  parent_ts=0.5 more", &ns),
	                 TL_CLOCK_SYNC_PARENT_TS);
	assert_int_equal(ns, 500000000);
}

static void test_clock_sync_realtime_ts_is_read_as_milliseconds(void **state)
{
	(void)state;
	int64_t ns = 0;
	assert_int_equal(clock_sync("trace_event_clock_sync: realtime_ts=1491850748338", &ns),
	                 TL_CLOCK_SYNC_REALTIME_TS);
	assert_int_equal(ns, 1491850748338000000);
}

static void test_clock_sync_other_payloads_are_not_read(void **state)
{
	(void)state;
	static const char *const payloads[] = {
	    "trace_event_clock_sync: name=battor regulator=8d",
	    "trace_event_clock_sync: parent_ts=",
	    "trace_event_clock_sync: parent_ts=.5",
	    "trace_event_clock_sync: parent_ts=-1.0",
	    "trace_event_clock_sync: parent_ts=9223372037.0", /* past int64 ns */
	    "trace_event_clock_sync: realtime_ts=9223372036855",
	    "trace_event_clock_sync: realtime_ts=x",
	    "parent_ts=1.0",
	    "B|1|trace_event_clock_sync: parent_ts=1.0",
	};
	for (size_t i = 0; i < sizeof payloads / sizeof payloads[0]; i++) {
		int64_t ns = -7;
		assert_int_equal(clock_sync(payloads[i], &ns), TL_CLOCK_SYNC_NONE);
		assert_int_equal(ns, -7);
	}
}

/* What the systrace recorder writes (recorder/atrace_format.h) reads back
 * to the unit it was written in, and is no parse failure. */
static void test_clock_sync_payloads_written_read_back(void **state)
{
	(void)state;
	char buf[TL_ATRACE_CLOCK_SYNC_MAX + 1];
	size_t len = tl_atrace_format_clock_sync(buf, TL_ATRACE_PARENT_TS, 12345678901234);
	buf[len] = '\0';
	assert_string_equal(buf, "trace_event_clock_sync: parent_ts=12345.678901");
	int64_t ns = 0;
	assert_int_equal(tl_atrace_parse_clock_sync(buf, len, &ns), TL_CLOCK_SYNC_PARENT_TS);
	assert_int_equal(ns, 12345678901000);
	tl_atrace_point p;
	assert_int_equal(tl_atrace_parse(buf, len, &p), TL_ATRACE_UNSUPPORTED);

	len = tl_atrace_format_clock_sync(buf, TL_ATRACE_PARENT_TS, 5000);
	buf[len] = '\0';
	assert_string_equal(buf, "trace_event_clock_sync: parent_ts=0.000005");

	len = tl_atrace_format_clock_sync(buf, TL_ATRACE_REALTIME_TS, 1700000000123456789);
	buf[len] = '\0';
	assert_string_equal(buf, "trace_event_clock_sync: realtime_ts=1700000000123");
	assert_int_equal(tl_atrace_parse_clock_sync(buf, len, &ns), TL_CLOCK_SYNC_REALTIME_TS);
	assert_int_equal(ns, 1700000000123000000);
	assert_int_equal(tl_atrace_parse(buf, len, &p), TL_ATRACE_UNSUPPORTED);
}

/* Views stay inside the payload (or are the static placeholder). */
static void test_atrace_parse_survives_any_bytes(void **state)
{
	(void)state;
	static const char alphabet[] = "BECSFINGH|0123456789-+ \n\0x";
	unsigned char buf[64];
	unsigned seed = 1;
	for (int round = 0; round < 20000; round++) {
		seed = seed * 1103515245u + 12345u;
		size_t len = (size_t)((seed >> 16) % sizeof buf);
		for (size_t i = 0; i < len; i++) {
			seed = seed * 1103515245u + 12345u;
			buf[i] = (unsigned char)alphabet[(seed >> 16) % (sizeof alphabet - 1)];
		}
		tl_atrace_point p;
		tl_atrace_result r = tl_atrace_parse((const char *)buf, len, &p);
		if (r != TL_ATRACE_OK)
			continue;
		const char *lo = (const char *)buf, *hi = lo + len;
		int inside = p.name.ptr >= lo && p.name.ptr + p.name.len <= hi;
		if (p.name.ptr && !inside)
			assert_true(view_is(p.name, TL_ATRACE_EMPTY_SLICE_NAME));
		if (p.track.ptr)
			assert_true(p.track.ptr >= lo && p.track.ptr + p.track.len <= hi);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_atrace_begin_name_keeps_pipes),
	    cmocka_unit_test(test_atrace_begin_empty_name_gets_placeholder),
	    cmocka_unit_test(test_atrace_begin_needs_tgid),
	    cmocka_unit_test(test_atrace_phase_is_first_character),
	    cmocka_unit_test(test_atrace_end_without_tgid_is_ok),
	    cmocka_unit_test(test_atrace_only_newlines_and_nuls_are_stripped),
	    cmocka_unit_test(test_atrace_counter_needs_whole_int64),
	    cmocka_unit_test(test_atrace_tgid_wraps_like_strtoul),
	    cmocka_unit_test(test_atrace_async_needs_cookie),
	    cmocka_unit_test(test_atrace_instant_reads_one_field),
	    cmocka_unit_test(test_atrace_track_end_uses_fourth_field_when_present),
	    cmocka_unit_test(test_atrace_interim_letters_fail),
	    cmocka_unit_test(test_atrace_clock_sync_is_unsupported),
	    cmocka_unit_test(test_clock_sync_parent_ts_is_read_to_the_nanosecond),
	    cmocka_unit_test(test_clock_sync_realtime_ts_is_read_as_milliseconds),
	    cmocka_unit_test(test_clock_sync_other_payloads_are_not_read),
	    cmocka_unit_test(test_clock_sync_payloads_written_read_back),
	    cmocka_unit_test(test_atrace_parse_survives_any_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
