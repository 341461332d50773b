/* The Chrome JSON exporter, fed hand-built trace models. */
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

#include "support/model_builder.h"

static output export_json(builder *b)
{
	output out = {0};
	out.path = tl_test_path("export", ".json");
	int fd = open(out.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(tl_export_json(finish(b), fd, &out.counts), 0);
	assert_int_equal(close(fd), 0);
	out.text = tl_test_read_file(out.path, NULL);
	assert_non_null(out.text);
	return out;
}

static void check_json(const output *out, const char *options)
{
	static int python = -1;
	if (python < 0)
		python = tl_test_run("python3 -c '' >/dev/null 2>&1") == 0;
	if (!python) {
		print_message("python3 not found: structural check skipped\n");
		skip();
	}
	int rc = tl_test_run("python3 %s/tests/scripts/check_json.py '%s' %s", TL_SOURCE_DIR,
	                     out->path, options);
	assert_int_equal(rc, 0);
}

static void assert_contains(const char *text, const char *needle)
{
	if (!strstr(text, needle))
		fail_msg("output lacks %s\n--- output ---\n%s", needle, text);
}

/* Asserts that the needles appear, each after the previous one. */
static void assert_in_order(const char *text, const char *const *needles, size_t n)
{
	const char *from = text;
	for (size_t i = 0; i < n; i++) {
		const char *at = strstr(from, needles[i]);
		if (!at)
			fail_msg("output lacks %s after the previous line\n--- output ---\n%s",
			         needles[i], text);
		from = at + strlen(needles[i]);
	}
}

/* Same formula as the exporter documents for process-scoped flow ids. */
static uint64_t process_bind_id(uint64_t id, uint32_t pid)
{
	uint64_t x = id + 0x9e3779b97f4a7c15ull * ((uint64_t)pid + 1);
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x ? x : 1;
}

/* ---------------------------------------------------------------------------
 * Tests
 * ------------------------------------------------------------------------- */

static void test_json_empty_model_is_an_object_with_metadata(void **state)
{
	(void)state;
	builder *b = builder_new();
	output out = export_json(b);

	assert_true(strncmp(out.text, "{\"traceEvents\":[", 16) == 0);
	assert_contains(out.text, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1000,"
	                          "\"tid\":1000,\"ts\":0,\"args\":{\"name\":\"app\"}}");
	assert_contains(out.text, "\"displayTimeUnit\":\"ns\"");
	assert_contains(out.text, "\"metadata\":{");
	check_json(&out, "--count M=1");
	free(out.text);
	builder_free(b);
}

static void test_json_nested_slices_written_as_begin_end_in_order(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 1000000, "outer");
	begin(b, MAIN, 2000000, "inner");
	end(b, MAIN, 3000000);
	end(b, MAIN, 4000000);
	output out = export_json(b);

	static const char *const lines[] = {
	    "{\"ph\":\"B\",\"name\":\"outer\",\"cat\":\"app\",\"pid\":1000,\"tid\":1001,"
	    "\"ts\":1000.000}",
	    "{\"ph\":\"B\",\"name\":\"inner\",\"cat\":\"app\",\"pid\":1000,\"tid\":1001,"
	    "\"ts\":2000.000}",
	    "{\"ph\":\"E\",\"name\":\"inner\",\"cat\":\"app\",\"pid\":1000,\"tid\":1001,"
	    "\"ts\":3000.000}",
	    "{\"ph\":\"E\",\"name\":\"outer\",\"cat\":\"app\",\"pid\":1000,\"tid\":1001,"
	    "\"ts\":4000.000}",
	};
	assert_in_order(out.text, lines, 4);
	assert_int_equal(out.counts.unmatched_begin, 0);
	assert_int_equal(out.counts.unmatched_end, 0);
	check_json(&out, "--count B=2 --count E=2 --count X=0");
	free(out.text);
	builder_free(b);
}

static void test_json_end_repeats_begin_name_and_cat(void **state)
{
	(void)state;
	builder *b = builder_new();
	add(b, MAIN, TL_PHASE_BEGIN, 1000, "fetch")->cat = "net";
	add(b, MAIN, TL_PHASE_END, 2000, NULL)->cat = "other";
	output out = export_json(b);

	assert_contains(out.text, "{\"ph\":\"E\",\"name\":\"fetch\",\"cat\":\"net\",\"pid\":1000,"
	                          "\"tid\":1001,\"ts\":2.000}");
	check_json(&out, "--count E=1");
	free(out.text);
	builder_free(b);
}

static void test_json_unmatched_end_dropped_and_counted(void **state)
{
	(void)state;
	builder *b = builder_new();
	end(b, MAIN, 1000);
	begin(b, MAIN, 2000, "kept");
	end(b, MAIN, 3000);
	output out = export_json(b);

	assert_int_equal(out.counts.unmatched_end, 1);
	assert_int_equal(out.counts.unmatched_begin, 0);
	assert_int_equal(tl_test_count(out.text, "\"ph\":\"E\""), 1);
	check_json(&out, "--count B=1 --count E=1 --meta export_unmatched_end=1");
	free(out.text);
	builder_free(b);
}

static void test_json_open_begin_closed_at_snapshot_and_flagged(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 1000, "outer");
	begin(b, MAIN, 2000, "inner");
	end(b, MAIN, 3000);
	output out = export_json(b);

	assert_contains(out.text, "{\"ph\":\"B\",\"name\":\"outer\",\"cat\":\"app\",\"pid\":1000,"
	                          "\"tid\":1001,\"ts\":1.000,\"args\":{\"tl_closed_at_snapshot\":"
	                          "true}}");
	assert_contains(out.text, "{\"ph\":\"E\",\"name\":\"outer\",\"cat\":\"app\",\"pid\":1000,"
	                          "\"tid\":1001,\"ts\":10000.000}");
	assert_int_equal(tl_test_count(out.text, "tl_closed_at_snapshot"), 1);
	assert_int_equal(out.counts.unmatched_begin, 1);
	check_json(&out, "--count B=2 --count E=2 --meta export_unmatched_begin=1");
	free(out.text);
	builder_free(b);
}

static void test_json_open_begin_outlives_events_later_than_snapshot(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 1000, "open");
	add(b, MAIN, TL_PHASE_INSTANT, SNAPSHOT_NS + 5000, "late");
	output out = export_json(b);

	assert_contains(out.text, "{\"ph\":\"E\",\"name\":\"open\",\"cat\":\"app\",\"pid\":1000,"
	                          "\"tid\":1001,\"ts\":10005.000}");
	assert_int_equal(out.counts.unmatched_begin, 1);
	check_json(&out, "--count B=1 --count E=1");
	free(out.text);
	builder_free(b);
}

static void test_json_ts_is_microseconds_with_three_decimals(void **state)
{
	(void)state;
	builder *b = builder_new();
	static const int64_t ts[] = {-1500, -1, 0, 1, 999, 1234567, INT64_MAX};
	for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
		add(b, MAIN, TL_PHASE_INSTANT, ts[i], "tick");
	output out = export_json(b);

	static const char *const lines[] = {
	    "\"ts\":-1.500,\"s\":\"t\"}",
	    "\"ts\":-0.001,\"s\":\"t\"}",
	    "\"ts\":0.000,\"s\":\"t\"}",
	    "\"ts\":0.001,\"s\":\"t\"}",
	    "\"ts\":0.999,\"s\":\"t\"}",
	    "\"ts\":1234.567,\"s\":\"t\"}",
	    "\"ts\":9223372036854775.807,\"s\":\"t\"}",
	};
	assert_in_order(out.text, lines, sizeof lines / sizeof lines[0]);
	check_json(&out, "--count I=7");
	free(out.text);
	builder_free(b);
}

static void test_json_escapes_quotes_backslash_and_control_chars(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 1000, "a\"b\\c\nd\te\rf\x01g\x1fh\x7f");
	end(b, MAIN, 2000);
	name_thread(b, MAIN, "th\"read");
	output out = export_json(b);

	assert_contains(out.text, "\"name\":\"a\\\"b\\\\c\\nd\\te\\rf\\u0001g\\u001fh\\u007f\"");
	assert_contains(out.text, "\"args\":{\"name\":\"th\\\"read\"}");
	check_json(&out, "--count B=1 --count E=1");
	free(out.text);
	builder_free(b);
}

static void test_json_keeps_valid_utf8_raw(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 1000, "h\xc3\xa9llo \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80");
	end(b, MAIN, 2000);
	output out = export_json(b);

	assert_contains(out.text,
	                "\"name\":\"h\xc3\xa9llo \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80\"");
	assert_null(strstr(out.text, "\\u"));
	check_json(&out, "");
	free(out.text);
	builder_free(b);
}

static void test_json_replaces_invalid_utf8_with_replacement_char(void **state)
{
	(void)state;
	builder *b = builder_new();
	/* A stray byte, an overlong NUL, an encoded surrogate, a cut sequence. */
	begin(b, MAIN, 1000, "bad\xff|\xc0\x80|\xed\xa0\x80|\xe2\x82");
	end(b, MAIN, 2000);
	output out = export_json(b);

#define FFFD "\xef\xbf\xbd"
	assert_contains(out.text,
	                "\"name\":\"bad" FFFD "|" FFFD FFFD "|" FFFD FFFD FFFD "|" FFFD FFFD "\"");
#undef FFFD
	check_json(&out, "");
	free(out.text);
	builder_free(b);
}

static void test_json_instants_written_as_capital_i_with_scope_and_tid(void **state)
{
	(void)state;
	builder *b = builder_new();
	add(b, MAIN, TL_PHASE_INSTANT, 1000, "t")->scope = TL_EVENT_SCOPE_THREAD;
	add(b, MAIN, TL_PHASE_INSTANT, 2000, "p")->scope = TL_EVENT_SCOPE_PROCESS;
	add(b, MAIN, TL_PHASE_INSTANT, 3000, "g")->scope = TL_EVENT_SCOPE_GLOBAL;
	output out = export_json(b);

	assert_contains(out.text, "{\"ph\":\"I\",\"name\":\"t\",\"cat\":\"app\",\"pid\":1000,"
	                          "\"tid\":1001,\"ts\":1.000,\"s\":\"t\"}");
	assert_contains(out.text, "{\"ph\":\"I\",\"name\":\"p\",\"cat\":\"app\",\"pid\":1000,"
	                          "\"tid\":1001,\"ts\":2.000,\"s\":\"p\"}");
	assert_contains(out.text, "{\"ph\":\"I\",\"name\":\"g\",\"cat\":\"app\",\"pid\":1000,"
	                          "\"tid\":1001,\"ts\":3.000,\"s\":\"g\"}");
	check_json(&out, "--count I=3 --count i=0");
	free(out.text);
	builder_free(b);
}

static void test_json_async_events_use_local_id2(void **state)
{
	(void)state;
	builder *b = builder_new();
	add(b, MAIN, TL_PHASE_ASYNC_BEGIN, 1000, "download")->id = 0xabc;
	add(b, MAIN, TL_PHASE_ASYNC_INSTANT, 1500, "progress")->id = 0xabc;
	add(b, WORKER, TL_PHASE_ASYNC_END, 2000, "download")->id = 0xabc;
	add(b, WORKER, TL_PHASE_ASYNC_BEGIN, 2500, "big")->id = UINT64_MAX;
	output out = export_json(b);

	assert_contains(out.text,
	                "{\"ph\":\"b\",\"name\":\"download\",\"cat\":\"app\",\"pid\":1000,"
	                "\"tid\":1001,\"ts\":1.000,\"id2\":{\"local\":\"0xabc\"}}");
	assert_contains(out.text, "{\"ph\":\"n\",\"name\":\"progress\",\"cat\":\"app\","
	                          "\"pid\":1000,\"tid\":1001,\"ts\":1.500,\"id2\":{\"local\":"
	                          "\"0xabc\"}}");
	assert_contains(out.text,
	                "{\"ph\":\"e\",\"name\":\"download\",\"cat\":\"app\",\"pid\":1000,"
	                "\"tid\":1002,\"ts\":2.000,\"id2\":{\"local\":\"0xabc\"}}");
	assert_contains(out.text, "\"id2\":{\"local\":\"0xffffffffffffffff\"}");
	check_json(&out, "--count b=2 --count e=1 --count n=1");
	free(out.text);
	builder_free(b);
}

static void test_json_counters_have_one_numeric_value(void **state)
{
	(void)state;
	builder *b = builder_new();
	add(b, MAIN, TL_PHASE_COUNTER, 1000, "queue")->counter_i = -5;
	add(b, MAIN, TL_PHASE_COUNTER, 2000, "min")->counter_i = INT64_MIN;
	tl_model_event *e = add(b, MAIN, TL_PHASE_COUNTER, 3000, "ratio");
	e->counter_is_double = 1;
	e->counter_d = 0.1;
	e = add(b, MAIN, TL_PHASE_COUNTER, 4000, "huge");
	e->counter_is_double = 1;
	e->counter_d = 1e300;
	e = add(b, MAIN, TL_PHASE_COUNTER, 5000, "whole");
	e->counter_is_double = 1;
	e->counter_d = -2.0;
	output out = export_json(b);

	assert_contains(out.text, "{\"ph\":\"C\",\"name\":\"queue\",\"cat\":\"app\",\"pid\":1000,"
	                          "\"tid\":1001,\"ts\":1.000,\"args\":{\"value\":-5}}");
	assert_contains(out.text, "\"args\":{\"value\":-9223372036854775808}}");
	assert_contains(out.text, "\"args\":{\"value\":0.1}}");
	assert_contains(out.text, "\"args\":{\"value\":1e+300}}");
	assert_contains(out.text, "\"args\":{\"value\":-2}}");
	check_json(&out, "--count C=5");
	free(out.text);
	builder_free(b);
}

static void test_json_non_finite_counter_dropped_or_clamped_and_counted(void **state)
{
	(void)state;
	builder *b = builder_new();
	static const double values[] = {NAN, INFINITY, -INFINITY, 1.5};
	for (size_t i = 0; i < 4; i++) {
		tl_model_event *e = add(b, MAIN, TL_PHASE_COUNTER, 1000 * (int64_t)(i + 1), "v");
		e->counter_is_double = 1;
		e->counter_d = values[i];
	}
	output out = export_json(b);

	assert_contains(out.text, "\"ts\":2.000,\"args\":{\"value\":1.7976931348623157e+308}}");
	assert_contains(out.text, "\"ts\":3.000,\"args\":{\"value\":-1.7976931348623157e+308}}");
	assert_contains(out.text, "\"ts\":4.000,\"args\":{\"value\":1.5}}");
	assert_null(strstr(out.text, "\"ts\":1.000"));
	check_json(&out, "--count C=3 --meta export_counter_values_non_finite=3");
	free(out.text);
	builder_free(b);
}

static void test_json_flow_binds_enclosing_slice_written_as_complete(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 1000, "send");
	flow(b, MAIN, TL_PHASE_FLOW_BEGIN, 1500, "msg", 7, TL_EVENT_SCOPE_THREAD);
	end(b, MAIN, 2000);
	begin(b, WORKER, 3000, "recv");
	flow(b, WORKER, TL_PHASE_FLOW_END, 3500, "msg", 7, TL_EVENT_SCOPE_THREAD);
	end(b, WORKER, 4000);
	output out = export_json(b);

	char send[256], recv[256];
	unsigned long long id = (unsigned long long)process_bind_id(7, PID);
	snprintf(send, sizeof send,
	         "{\"ph\":\"s\",\"name\":\"msg\",\"cat\":\"app\",\"pid\":1000,\"tid\":1001,"
	         "\"ts\":1.000,\"id\":\"0x%llx\",\"bp\":\"e\"}",
	         id);
	snprintf(recv, sizeof recv,
	         "{\"ph\":\"f\",\"name\":\"msg\",\"cat\":\"app\",\"pid\":1000,\"tid\":1002,"
	         "\"ts\":3.000,\"id\":\"0x%llx\",\"bp\":\"e\"}",
	         id);
	const char *const lines[] = {
	    "{\"ph\":\"X\",\"name\":\"send\",\"cat\":\"app\",\"pid\":1000,\"tid\":1001,"
	    "\"ts\":1.000,\"dur\":1.000}",
	    "{\"ph\":\"X\",\"name\":\"recv\",\"cat\":\"app\",\"pid\":1000,\"tid\":1002,"
	    "\"ts\":3.000,\"dur\":1.000}",
	    send,
	    recv,
	};
	assert_in_order(out.text, lines, sizeof lines / sizeof lines[0]);
	check_json(&out, "--flows-paired --count X=2 --count B=0 --count E=0 --count s=1 "
	                 "--count f=1");
	free(out.text);
	builder_free(b);
}

static void test_json_flow_step_written_as_t_event(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 1000, "a");
	flow(b, MAIN, TL_PHASE_FLOW_BEGIN, 1100, "f", 9, TL_EVENT_SCOPE_GLOBAL);
	end(b, MAIN, 1200);
	begin(b, MAIN, 2000, "b");
	flow(b, MAIN, TL_PHASE_FLOW_STEP, 2100, "f", 9, TL_EVENT_SCOPE_GLOBAL);
	end(b, MAIN, 2200);
	begin(b, MAIN, 3000, "c");
	flow(b, MAIN, TL_PHASE_FLOW_END, 3100, "f", 9, TL_EVENT_SCOPE_GLOBAL);
	end(b, MAIN, 3200);
	output out = export_json(b);

	assert_contains(out.text, "{\"ph\":\"t\",\"name\":\"f\",\"cat\":\"app\",\"pid\":1000,"
	                          "\"tid\":1001,\"ts\":2.000,\"id\":\"0x9\",\"bp\":\"e\"}");
	check_json(&out, "--flows-paired --count X=3 --count t=1");
	free(out.text);
	builder_free(b);
}

static void test_json_flow_binds_enclosing_complete_event(void **state)
{
	(void)state;
	builder *b = builder_new();
	flow(b, MAIN, TL_PHASE_FLOW_BEGIN, 2000, "f", 5, TL_EVENT_SCOPE_GLOBAL);
	complete(b, MAIN, 1000, 3000, "scope"); /* recorded after the flow */
	flow(b, WORKER, TL_PHASE_FLOW_END, 4000, "f", 5, TL_EVENT_SCOPE_GLOBAL);
	output out = export_json(b);

	assert_contains(out.text, "{\"ph\":\"X\",\"name\":\"scope\",\"cat\":\"app\",\"pid\":1000,"
	                          "\"tid\":1001,\"ts\":1.000,\"dur\":2.000}");
	assert_contains(out.text, "{\"ph\":\"s\",\"name\":\"f\",\"cat\":\"app\",\"pid\":1000,"
	                          "\"tid\":1001,\"ts\":1.000,\"id\":\"0x5\",\"bp\":\"e\"}");
	check_json(&out, "--flows-paired --count X=2 --meta export_flow_markers=1");
	free(out.text);
	builder_free(b);
}

static void test_json_ancestor_starting_with_flow_slice_becomes_complete(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 500, "top");
	begin(b, MAIN, 1000, "outer");
	begin(b, MAIN, 1000, "inner");
	flow(b, MAIN, TL_PHASE_FLOW_BEGIN, 1500, "f", 1, TL_EVENT_SCOPE_GLOBAL);
	end(b, MAIN, 2000);
	begin(b, MAIN, 2500, "sibling");
	end(b, MAIN, 2600);
	end(b, MAIN, 3000);
	end(b, MAIN, 4000);
	flow(b, WORKER, TL_PHASE_FLOW_END, 5000, "f", 1, TL_EVENT_SCOPE_GLOBAL);
	output out = export_json(b);

	static const char *const lines[] = {
	    "{\"ph\":\"B\",\"name\":\"top\"",
	    "{\"ph\":\"X\",\"name\":\"outer\",\"cat\":\"app\",\"pid\":1000,\"tid\":1001,"
	    "\"ts\":1.000,\"dur\":2.000}",
	    "{\"ph\":\"X\",\"name\":\"inner\",\"cat\":\"app\",\"pid\":1000,\"tid\":1001,"
	    "\"ts\":1.000,\"dur\":1.000}",
	    "{\"ph\":\"B\",\"name\":\"sibling\"",
	    "{\"ph\":\"E\",\"name\":\"sibling\"",
	    "{\"ph\":\"E\",\"name\":\"top\"",
	    "{\"ph\":\"s\",\"name\":\"f\",\"cat\":\"app\",\"pid\":1000,\"tid\":1001,"
	    "\"ts\":1.000,\"id\":\"0x1\",\"bp\":\"e\"}",
	};
	assert_in_order(out.text, lines, sizeof lines / sizeof lines[0]);
	check_json(&out, "--flows-paired --count X=3 --count B=2 --count E=2");
	free(out.text);
	builder_free(b);
}

static void test_json_flow_without_enclosing_slice_gets_zero_length_slice(void **state)
{
	(void)state;
	builder *b = builder_new();
	flow(b, MAIN, TL_PHASE_FLOW_BEGIN, 1000, "hop", 3, TL_EVENT_SCOPE_GLOBAL);
	begin(b, WORKER, 2000, "land");
	flow(b, WORKER, TL_PHASE_FLOW_END, 2500, "hop", 3, TL_EVENT_SCOPE_GLOBAL);
	end(b, WORKER, 3000);
	output out = export_json(b);

	assert_contains(out.text, "{\"ph\":\"X\",\"name\":\"hop\",\"cat\":\"app\",\"pid\":1000,"
	                          "\"tid\":1001,\"ts\":1.000,\"dur\":0.000}");
	assert_contains(out.text, "{\"ph\":\"s\",\"name\":\"hop\",\"cat\":\"app\",\"pid\":1000,"
	                          "\"tid\":1001,\"ts\":1.000,\"id\":\"0x3\",\"bp\":\"e\"}");
	assert_contains(out.text, "{\"ph\":\"f\",\"name\":\"hop\",\"cat\":\"app\",\"pid\":1000,"
	                          "\"tid\":1002,\"ts\":2.000,\"id\":\"0x3\",\"bp\":\"e\"}");
	check_json(&out, "--flows-paired --count X=2 --meta export_flow_markers=1");
	free(out.text);
	builder_free(b);
}

static void test_json_second_flow_in_slice_gets_zero_length_slice(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 1000, "work");
	flow(b, MAIN, TL_PHASE_FLOW_BEGIN, 1100, "first", 1, TL_EVENT_SCOPE_GLOBAL);
	tl_model_event *e = add(b, MAIN, TL_PHASE_FLOW_END, 1200, "second");
	e->id = 2;
	e->scope = TL_EVENT_SCOPE_GLOBAL;
	e->nargs = 1;
	e->args[0].key = "hop";
	e->args[0].type = TL_ARG_INT;
	e->args[0].v.i = 4;
	end(b, MAIN, 2000);
	flow(b, WORKER, TL_PHASE_FLOW_END, 3000, "first", 1, TL_EVENT_SCOPE_GLOBAL);
	flow(b, WORKER, TL_PHASE_FLOW_BEGIN, 500, "second", 2, TL_EVENT_SCOPE_GLOBAL);
	output out = export_json(b);

	assert_contains(out.text, "{\"ph\":\"s\",\"name\":\"first\",\"cat\":\"app\",\"pid\":1000,"
	                          "\"tid\":1001,\"ts\":1.000,\"id\":\"0x1\",\"bp\":\"e\"}");
	assert_contains(out.text, "{\"ph\":\"X\",\"name\":\"second\",\"cat\":\"app\",\"pid\":1000,"
	                          "\"tid\":1001,\"ts\":1.200,\"dur\":0.000,\"args\":{\"hop\":4}}");
	assert_contains(out.text, "{\"ph\":\"f\",\"name\":\"second\",\"cat\":\"app\",\"pid\":1000,"
	                          "\"tid\":1001,\"ts\":1.200,\"id\":\"0x2\",\"bp\":\"e\"}");
	check_json(&out, "--flows-paired --count X=4 --meta export_flow_markers=3");
	free(out.text);
	builder_free(b);
}

static void test_json_flow_events_follow_threads_in_time_order(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 3000, "reply");
	flow(b, MAIN, TL_PHASE_FLOW_END, 3100, "answer", 4, TL_EVENT_SCOPE_GLOBAL);
	end(b, MAIN, 4000);
	begin(b, WORKER, 1000, "ask");
	flow(b, WORKER, TL_PHASE_FLOW_BEGIN, 1100, "answer", 4, TL_EVENT_SCOPE_GLOBAL);
	end(b, WORKER, 2000);
	output out = export_json(b);

	static const char *const lines[] = {
	    "{\"ph\":\"X\",\"name\":\"reply\"",
	    "{\"ph\":\"X\",\"name\":\"ask\"",
	    "{\"ph\":\"s\",\"name\":\"answer\",\"cat\":\"app\",\"pid\":1000,\"tid\":1002,"
	    "\"ts\":1.000,",
	    "{\"ph\":\"f\",\"name\":\"answer\",\"cat\":\"app\",\"pid\":1000,\"tid\":1001,"
	    "\"ts\":3.000,",
	};
	assert_in_order(out.text, lines, sizeof lines / sizeof lines[0]);
	check_json(&out, "--flows-paired --count s=1 --count f=1");
	free(out.text);
	builder_free(b);
}

static void test_json_flow_in_slice_begun_before_its_start_keeps_own_ts(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 1000, "loop");
	flow(b, MAIN, TL_PHASE_FLOW_END, 3000, "job", 6, TL_EVENT_SCOPE_GLOBAL);
	end(b, MAIN, 4000);
	begin(b, WORKER, 2000, "submit");
	flow(b, WORKER, TL_PHASE_FLOW_BEGIN, 2100, "job", 6, TL_EVENT_SCOPE_GLOBAL);
	end(b, WORKER, 2200);
	output out = export_json(b);

	static const char *const lines[] = {
	    "{\"ph\":\"s\",\"name\":\"job\",\"cat\":\"app\",\"pid\":1000,\"tid\":1002,"
	    "\"ts\":2.000,\"id\":\"0x6\",\"bp\":\"e\"}",
	    "{\"ph\":\"f\",\"name\":\"job\",\"cat\":\"app\",\"pid\":1000,\"tid\":1001,"
	    "\"ts\":3.000,\"id\":\"0x6\",\"bp\":\"e\"}",
	};
	assert_in_order(out.text, lines, sizeof lines / sizeof lines[0]);
	check_json(&out, "--flows-paired --count X=2 --meta export_flow_markers=0");
	free(out.text);
	builder_free(b);
}

static void test_json_process_scoped_flow_id_mixes_pid(void **state)
{
	(void)state;
	char id[2][64];
	for (int i = 0; i < 2; i++) {
		builder *b = builder_new();
		b->model.pid = i ? 2000 : 1000;
		begin(b, MAIN, 1000, "local");
		flow(b, MAIN, TL_PHASE_FLOW_BEGIN, 1100, "f", 42, TL_EVENT_SCOPE_PROCESS);
		end(b, MAIN, 2000);
		begin(b, MAIN, 3000, "global");
		flow(b, MAIN, TL_PHASE_FLOW_BEGIN, 3100, "g", 42, TL_EVENT_SCOPE_GLOBAL);
		end(b, MAIN, 4000);
		output out = export_json(b);

		snprintf(id[i], sizeof id[i], "\"id\":\"0x%llx\"",
		         (unsigned long long)process_bind_id(42, b->model.pid));
		assert_contains(out.text, id[i]);
		assert_contains(out.text, "\"name\":\"g\",\"cat\":\"app\",\"pid\":");
		assert_contains(out.text, "\"ts\":3.000,\"id\":\"0x2a\",\"bp\":\"e\"}");
		check_json(&out, "--count X=2 --count s=2");
		free(out.text);
		builder_free(b);
	}
	assert_string_not_equal(id[0], id[1]);
	assert_string_not_equal(id[0], "\"id\":\"0x2a\"");
}

static void test_json_global_flow_with_id_zero_dropped_and_counted(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 1000, "work");
	flow(b, MAIN, TL_PHASE_FLOW_BEGIN, 1100, "f", 0, TL_EVENT_SCOPE_GLOBAL);
	end(b, MAIN, 2000);
	output out = export_json(b);

	assert_null(strstr(out.text, "\"ph\":\"s\""));
	check_json(&out, "--count B=1 --count X=0 --meta export_flows_dropped=1");
	free(out.text);
	builder_free(b);
}

static void test_json_complete_event_written_as_x_before_its_children(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 2000, "child");
	end(b, MAIN, 3000);
	complete(b, MAIN, 1000, 5000, "load"); /* recorded when it ended */
	output out = export_json(b);

	static const char *const lines[] = {
	    ("{\"ph\":\"X\",\"name\":\"load\",\"cat\":\"app\",\"pid\":1000,\"tid\":1001,"
	     "\"ts\":1.000,\"dur\":4.000}"),
	    "{\"ph\":\"B\",\"name\":\"child\"",
	    "{\"ph\":\"E\",\"name\":\"child\"",
	};
	assert_in_order(out.text, lines, 3);
	check_json(&out, "--count X=1 --count B=1 --count E=1");
	free(out.text);
	builder_free(b);
}

static void test_json_parent_starting_with_complete_child_becomes_complete(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 1000, "parent");
	complete(b, MAIN, 1000, 2000, "child");
	end(b, MAIN, 3000);
	output out = export_json(b);

	static const char *const lines[] = {
	    "{\"ph\":\"X\",\"name\":\"parent\",\"cat\":\"app\",\"pid\":1000,\"tid\":1001,"
	    "\"ts\":1.000,\"dur\":2.000}",
	    "{\"ph\":\"X\",\"name\":\"child\",\"cat\":\"app\",\"pid\":1000,\"tid\":1001,"
	    "\"ts\":1.000,\"dur\":1.000}",
	};
	assert_in_order(out.text, lines, 2);
	check_json(&out, "--count X=2 --count B=0");
	free(out.text);
	builder_free(b);
}

static void test_json_zero_length_slice_written_as_complete(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 1000, "blink");
	end(b, MAIN, 1000);
	output out = export_json(b);

	assert_contains(out.text, "{\"ph\":\"X\",\"name\":\"blink\",\"cat\":\"app\",\"pid\":1000,"
	                          "\"tid\":1001,\"ts\":1.000,\"dur\":0.000}");
	check_json(&out, "--count X=1 --count B=0 --count E=0");
	free(out.text);
	builder_free(b);
}

static void test_json_thread_name_for_every_thread(void **state)
{
	(void)state;
	builder *b = builder_new();
	name_thread(b, MAIN, "main");
	name_thread(b, 1004, "");
	name_thread(b, WORKER, "idle");
	begin(b, MAIN, 1000, "a");
	end(b, MAIN, 2000);
	begin(b, 1003, 1000, "b");
	end(b, 1003, 2000);
	output out = export_json(b);

	check_json(&out, "--count M=5 --thread-name 1001=main --thread-name 1002=idle "
	                 "--thread-name 1003='thread 1003' --thread-name 1004='thread 1004'");
	free(out.text);
	builder_free(b);
}

static void test_json_many_threads_written_thread_by_thread(void **state)
{
	(void)state;
	builder *b = builder_new();
	enum { THREADS = 40 };
	/* Interleaved in time; the model holds them by (tid, seq). */
	for (int round = 0; round < 3; round++) {
		for (uint32_t t = 0; t < THREADS; t++) {
			int64_t ts = 1000 * (round * THREADS + (int64_t)t);
			begin(b, 2000 + t, ts, "step");
			end(b, 2000 + t, ts + 500);
		}
	}
	output out = export_json(b);

	const char *previous = out.text;
	for (uint32_t t = 0; t < THREADS; t++) {
		char needle[64];
		snprintf(needle, sizeof needle,
		         "\"name\":\"step\",\"cat\":\"app\",\"pid\":1000,"
		         "\"tid\":%u,",
		         2000 + t);
		const char *at = strstr(out.text, needle);
		assert_non_null(at);
		assert_true(at > previous);
		previous = at;
	}
	check_json(&out, "--count B=120 --count E=120 --count M=41");
	free(out.text);
	builder_free(b);
}

static void set_arg(tl_model_event *e, unsigned i, const char *key, tl_arg_type type)
{
	e->args[i].key = key;
	e->args[i].type = type;
	if (e->nargs <= i)
		e->nargs = i + 1;
}

static void test_json_args_are_typed(void **state)
{
	(void)state;
	builder *b = builder_new();
	tl_model_event *e = add(b, MAIN, TL_PHASE_INSTANT, 1000, "numbers");
	set_arg(e, 0, "i", TL_ARG_INT);
	e->args[0].v.i = -3;
	set_arg(e, 1, "u", TL_ARG_UINT);
	e->args[1].v.u = UINT64_MAX;
	set_arg(e, 2, "d", TL_ARG_DOUBLE);
	e->args[2].v.d = 0.25;
	set_arg(e, 3, "b", TL_ARG_BOOL);
	e->args[3].v.b = 1;
	e = add(b, MAIN, TL_PHASE_INSTANT, 2000, "others");
	set_arg(e, 0, "p", TL_ARG_POINTER);
	e->args[0].v.p = 0xdeadbeef;
	set_arg(e, 1, "s", TL_ARG_STRING);
	e->args[1].v.s = "q\"uote";
	set_arg(e, 2, "nan", TL_ARG_DOUBLE);
	e->args[2].v.d = NAN;
	set_arg(e, 3, "f", TL_ARG_BOOL);
	e->args[3].v.b = 0;
	output out = export_json(b);

	assert_contains(out.text, "\"s\":\"t\",\"args\":{\"i\":-3,\"u\":18446744073709551615,"
	                          "\"d\":0.25,\"b\":true}}");
	assert_contains(out.text, "\"s\":\"t\",\"args\":{\"p\":\"0xdeadbeef\",\"s\":\"q\\\"uote\","
	                          "\"nan\":\"NaN\",\"f\":false}}");
	check_json(&out, "--count I=2");
	free(out.text);
	builder_free(b);
}

static void test_json_integers_of_every_length_written_in_decimal(void **state)
{
	(void)state;
	builder *b = builder_new();
	/* 10^k - 1, 10^k and 10^k + 1 for every k, then the extremes */
	uint64_t power = 1;
	for (int k = 0; k < 20; k++, power *= 10) {
		tl_model_event *e = add(b, MAIN, TL_PHASE_INSTANT, 1000 + k, "n");
		for (int d = 0; d < 3; d++) {
			set_arg(e, (unsigned)d, d == 0 ? "below" : d == 1 ? "at" : "above", TL_ARG_UINT);
			e->args[d].v.u = power + (uint64_t)d - 1;
		}
	}
	tl_model_event *e = add(b, MAIN, TL_PHASE_INSTANT, 2000, "extremes");
	set_arg(e, 0, "max", TL_ARG_UINT);
	e->args[0].v.u = UINT64_MAX;
	set_arg(e, 1, "min", TL_ARG_INT);
	e->args[1].v.i = INT64_MIN;
	output out = export_json(b);

	power = 1;
	for (int k = 0; k < 20; k++, power *= 10) {
		char expected[128];
		snprintf(expected, sizeof expected, "{\"below\":%llu,\"at\":%llu,\"above\":%llu}",
		         (unsigned long long)(power - 1), (unsigned long long)power,
		         (unsigned long long)(power + 1));
		assert_contains(out.text, expected);
	}
	assert_contains(out.text, "{\"max\":18446744073709551615,\"min\":-9223372036854775808}");
	free(out.text);
	builder_free(b);
}

static void test_json_slice_args_from_begin_and_end(void **state)
{
	(void)state;
	builder *b = builder_new();
	tl_model_event *e = add(b, MAIN, TL_PHASE_BEGIN, 1000, "query");
	set_arg(e, 0, "rows", TL_ARG_INT);
	e->args[0].v.i = 5;
	e = add(b, MAIN, TL_PHASE_END, 2000, NULL);
	set_arg(e, 0, "status", TL_ARG_STRING);
	e->args[0].v.s = "ok";
	output out = export_json(b);

	assert_contains(out.text, "\"ts\":1.000,\"args\":{\"rows\":5}}");
	assert_contains(out.text, "\"ts\":2.000,\"args\":{\"status\":\"ok\"}}");
	check_json(&out, "--count B=1 --count E=1");
	free(out.text);
	builder_free(b);
}

static void test_json_metadata_has_clock_snapshot_and_stats(void **state)
{
	(void)state;
	builder *b = builder_new();
	output out = export_json(b);

	assert_contains(out.text,
	                "\"metadata\":{\"recorder\":\"ring\",\"clock\":\"boot\","
	                "\"clock_id\":7,\"snapshot_ns\":10000000,\"boottime_ns\":10000000,"
	                "\"monotonic_ns\":9999995,\"realtime_ns\":1700000000000000000,"
	                "\"snapshot_complete\":true,\"events_written\":42,"
	                "\"events_overwritten\":7,");
	assert_contains(out.text, "\"buffer_bytes\":1048576,");
	assert_contains(out.text, "\"export_unmatched_begin\":0,\"export_unmatched_end\":0,");
	check_json(&out, "--meta threads=3 --meta categories=2");
	free(out.text);

	b->model.clock_id = 1;
	b->model.complete = 0;
	out = export_json(b);
	assert_contains(out.text, "\"clock\":\"mono\",\"clock_id\":1,");
	assert_contains(out.text, "\"snapshot_complete\":false,");
	check_json(&out, "");
	free(out.text);
	builder_free(b);
}

static void test_json_depth_capped_at_512(void **state)
{
	(void)state;
	builder *b = builder_new();
	for (int i = 0; i < 600; i++)
		begin(b, MAIN, 1000 + i, "deep");
	complete(b, MAIN, 1700, 1800, "too deep as well");
	for (int i = 0; i < 600; i++)
		end(b, MAIN, 5000 + i);
	output out = export_json(b);

	assert_int_equal(out.counts.unmatched_begin, 0);
	assert_int_equal(out.counts.unmatched_end, 0);
	check_json(&out, "--count B=512 --count E=512 --count X=0 "
	                 "--meta export_slices_too_deep=89");
	free(out.text);
	builder_free(b);
}

static void test_json_zero_tid_written_as_pid(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, 0, 1000, "unknown thread");
	end(b, 0, 2000);
	output out = export_json(b);

	assert_contains(out.text, "{\"ph\":\"B\",\"name\":\"unknown thread\",\"cat\":\"app\","
	                          "\"pid\":1000,\"tid\":1000,");
	check_json(&out, "--thread-name '1000=thread 1000'");
	free(out.text);
	builder_free(b);
}

static void test_json_empty_name_and_cat_get_fallbacks(void **state)
{
	(void)state;
	builder *b = builder_new();
	tl_model_event *e = add(b, MAIN, TL_PHASE_INSTANT, 1000, "");
	e->cat = NULL;
	output out = export_json(b);

	assert_contains(out.text, "{\"ph\":\"I\",\"name\":\"unnamed\",\"cat\":\"default\",");
	check_json(&out, "--count I=1");
	free(out.text);
	builder_free(b);
}

static void test_json_write_error_returns_negative_errno(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 1000, "x");
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(tl_export_json(finish(b), fd, NULL), -EBADF);
	close(fd);
	builder_free(b);
}

static void test_json_counts_may_be_null(void **state)
{
	(void)state;
	builder *b = builder_new();
	end(b, MAIN, 1000);
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(tl_export_json(finish(b), fd, NULL), 0);
	close(fd);
	builder_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_json_empty_model_is_an_object_with_metadata),
	    cmocka_unit_test(test_json_nested_slices_written_as_begin_end_in_order),
	    cmocka_unit_test(test_json_end_repeats_begin_name_and_cat),
	    cmocka_unit_test(test_json_unmatched_end_dropped_and_counted),
	    cmocka_unit_test(test_json_open_begin_closed_at_snapshot_and_flagged),
	    cmocka_unit_test(test_json_open_begin_outlives_events_later_than_snapshot),
	    cmocka_unit_test(test_json_ts_is_microseconds_with_three_decimals),
	    cmocka_unit_test(test_json_escapes_quotes_backslash_and_control_chars),
	    cmocka_unit_test(test_json_keeps_valid_utf8_raw),
	    cmocka_unit_test(test_json_replaces_invalid_utf8_with_replacement_char),
	    cmocka_unit_test(test_json_instants_written_as_capital_i_with_scope_and_tid),
	    cmocka_unit_test(test_json_async_events_use_local_id2),
	    cmocka_unit_test(test_json_counters_have_one_numeric_value),
	    cmocka_unit_test(test_json_non_finite_counter_dropped_or_clamped_and_counted),
	    cmocka_unit_test(test_json_flow_binds_enclosing_slice_written_as_complete),
	    cmocka_unit_test(test_json_flow_step_written_as_t_event),
	    cmocka_unit_test(test_json_flow_binds_enclosing_complete_event),
	    cmocka_unit_test(test_json_ancestor_starting_with_flow_slice_becomes_complete),
	    cmocka_unit_test(test_json_flow_without_enclosing_slice_gets_zero_length_slice),
	    cmocka_unit_test(test_json_second_flow_in_slice_gets_zero_length_slice),
	    cmocka_unit_test(test_json_flow_events_follow_threads_in_time_order),
	    cmocka_unit_test(test_json_flow_in_slice_begun_before_its_start_keeps_own_ts),
	    cmocka_unit_test(test_json_process_scoped_flow_id_mixes_pid),
	    cmocka_unit_test(test_json_global_flow_with_id_zero_dropped_and_counted),
	    cmocka_unit_test(test_json_complete_event_written_as_x_before_its_children),
	    cmocka_unit_test(test_json_parent_starting_with_complete_child_becomes_complete),
	    cmocka_unit_test(test_json_zero_length_slice_written_as_complete),
	    cmocka_unit_test(test_json_thread_name_for_every_thread),
	    cmocka_unit_test(test_json_many_threads_written_thread_by_thread),
	    cmocka_unit_test(test_json_args_are_typed),
	    cmocka_unit_test(test_json_integers_of_every_length_written_in_decimal),
	    cmocka_unit_test(test_json_slice_args_from_begin_and_end),
	    cmocka_unit_test(test_json_metadata_has_clock_snapshot_and_stats),
	    cmocka_unit_test(test_json_depth_capped_at_512),
	    cmocka_unit_test(test_json_zero_tid_written_as_pid),
	    cmocka_unit_test(test_json_empty_name_and_cat_get_fallbacks),
	    cmocka_unit_test(test_json_write_error_returns_negative_errno),
	    cmocka_unit_test(test_json_counts_may_be_null),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
